"""``eval`` and ``eval-risk``: the evaluation of :mod:`presidio_delink.eval` on a data folder."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from presidio_delink.cli.common import (
    choice_opt,
    clean_errors,
    files_opt,
    main,
    number_opt,
    path_opt,
    switch_opt,
)
from presidio_delink.datasets import LAYOUT
from presidio_delink.errors import DelinkError
from presidio_delink.eval.data import DATASETS

_LAYOUT_HELP = (
    "Data folder layout ('presidio-delink data convert' writes it from the official TAB "
    "release and the Wikipedia biography annotations):\n\n\b\n" + LAYOUT
)

#: ``--data``, shared by ``eval`` and ``eval-risk``.
_DATA_OPTION = path_opt(
    "--data",
    "data_root",
    folder=True,
    help="The evaluation data folder (layout below) [default: $PRESIDIO_DELINK_DATA; one "
    "of the two is needed].",
)


@dataclass(frozen=True)
class EvalOptions:
    """The options of ``eval`` (see its ``--help``)."""

    data_root: Path | None
    datasets: tuple[str, ...]
    ks: tuple[int, ...]
    arities: tuple[int, ...]
    llms: tuple[str, ...]
    passes: int
    limit: int | None
    protect: str | None
    llm_limit: int | None
    work_dir: Path | None
    out_dir: Path
    semantic: bool
    fluency_docs: int
    fluency_tokens: int
    html: bool
    risk_logprobs: tuple[Path, ...] = ()


def _data_root(given: Path | None) -> Path:
    """``--data``, else ``$PRESIDIO_DELINK_DATA``; neither is a usage error (exit 2)."""
    if given is not None:
        return given
    env = os.environ.get("PRESIDIO_DELINK_DATA")
    if not env:
        click.echo(
            "error: give the evaluation data folder with --data DIR (or set "
            "PRESIDIO_DELINK_DATA); 'presidio-delink data convert' makes one",
            err=True,
        )
        sys.exit(2)
    return Path(env)


@main.command("eval", epilog=_LAYOUT_HELP, context_settings={"max_content_width": 100})
@_DATA_OPTION
@choice_opt("--dataset", "datasets", choices=sorted(DATASETS), default=("wiki-manual",),
            multiple=True, help="Test set and collection (repeatable).")
@number_opt("-k", "ks", default=(2, 5), low=2, multiple=True,
            help="Minimum document frequency (repeatable).")
@number_opt("--arity", "arities", default=(1, 3), low=1, high=3, multiple=True,
            help="Largest combination checked (repeatable).")
@click.option(
    "--llm",
    "llms",
    multiple=True,
    default=("none",),
    show_default=True,
    help="LLM backend: none, embedded, ollama:MODEL, ... (repeatable).",
)
@number_opt("--passes", default=2, low=0, help="LLM rewrite passes before redaction.")
@click.option(
    "--limit", type=click.IntRange(1), default=None, help="Only the first N test documents."
)
@click.option(
    "--protect",
    default=None,
    help="Also evaluate each setting with this protection: containment, ranked, "
    "containment,ranked or all (the frontier plot shows both).",
)
@click.option(
    "--llm-limit",
    type=click.IntRange(1),
    default=None,
    help="Only the first N documents for settings with an LLM (default: --limit).",
)
@path_opt("--work-dir", help="Index and embedding cache [default: ~/.cache/presidio-delink/eval].")
@path_opt("--out", "out_dir", default=Path("eval-out"), show_default=True,
          help="Folder for JSON, Markdown, PNG and HTML.")
@switch_opt("--semantic/--no-semantic",
            help="Embedding cosine and semantic linkage monitor (needs the MiniLM model).")
@number_opt("--fluency-docs", default=3, low=0,
            help="Perplexity of input and output for the first N documents (0: off).")
@number_opt("--fluency-tokens", default=128, low=1, help="Tokens scored per text.")
# -- risk indicators (issue 14) --
@files_opt("--risk-logprobs", "risk_logprobs",
           "Deprecated: use 'presidio-delink eval-risk FILE...'.", hidden=True)
# -- end risk indicators --
@switch_opt("--html/--no-html", help="HTML before/after report of the first setting.")
@clean_errors
def eval_command(**opts: Any) -> None:
    """Delink a de-identified test set under each setting (k x arity x LLM) and report
    linkage risk, semantic integrity, edit cost, fluency and speed."""
    o = EvalOptions(**opts)
    data_root = _data_root(o.data_root)
    if o.risk_logprobs:
        ctx = click.get_current_context()
        ignored = [
            max(p.opts, key=len)
            for p in ctx.command.params
            if p.name not in ("data_root", "risk_logprobs", "work_dir", "out_dir")
            and p.name is not None
            and ctx.get_parameter_source(p.name) is not click.core.ParameterSource.DEFAULT
        ]
        if ignored:
            click.echo(
                f"error: --risk-logprobs runs the risk-indicator evaluation only, which "
                f"takes --data, --work-dir and --out; {', '.join(ignored)} do not apply "
                "(it is now its own command: presidio-delink eval-risk FILE...)",
                err=True,
            )
            sys.exit(2)
        click.echo("note: 'eval --risk-logprobs' is now 'presidio-delink eval-risk FILE...'",
                   err=True)
        _run_risk(data_root, o.risk_logprobs, o.work_dir, o.out_dir)
        return
    if not (data_root / "tab").is_dir() and not (data_root / "wikibio").is_dir():
        raise DelinkError(
            f"{data_root} holds neither tab/ nor wikibio/; see --help for the layout "
            "('presidio-delink data convert' makes it)"
        )
    _run(replace(o, data_root=data_root))


@main.command("eval-risk", epilog=_LAYOUT_HELP, context_settings={"max_content_width": 100})
@click.argument(
    "logprobs", nargs=-1, required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
)
@_DATA_OPTION
@path_opt("--work-dir", folder=True,
          help="Cache folder for the indexes [default: ~/.cache/presidio-delink/eval].")
@path_opt("--out", "out_dir", folder=True, default=Path("eval-out"), show_default=True,
          help="Folder for risk.json.")
@clean_errors
def eval_risk_command(
    logprobs: tuple[Path, ...], data_root: Path | None, work_dir: Path | None, out_dir: Path
) -> None:
    """Evaluate the privacy risk indicators from our model's log-probabilities of the span
    tables (LOGPROBS: benchmarks/risk/extract_logprobs.py output, one or more files): per
    indicator and combined, MASK precision/recall/F1, DIRECT/QUASI entity recall, words
    masked and linkage, on the Wikipedia and TAB test sets, cross-validated and across
    datasets.  Writes risk.json to --out."""
    data_root = _data_root(data_root)
    _run_risk(data_root, logprobs, work_dir, out_dir)


def _run_risk(
    data_root: Path | None, logprobs: tuple[Path, ...], work_dir: Path | None, out_dir: Path
) -> None:
    """``eval-risk``: the risk-indicator evaluation (presidio_delink.eval.risk)."""
    import json

    from presidio_delink.datasets import data_dir
    from presidio_delink.eval.risk import evaluate
    from presidio_delink.io import atomic_output

    work = work_dir or Path.home() / ".cache" / "presidio-delink" / "eval"
    try:
        root = data_root or data_dir()
        figures = evaluate(root, logprobs, work / "risk-index", say=click.echo)
        out_dir.mkdir(parents=True, exist_ok=True)
        with atomic_output(out_dir / "risk.json") as fh:
            fh.write(json.dumps(figures, indent=1))
    except ImportError as exc:
        click.echo(f"error: the risk evaluation needs the eval extra ({exc.name})", err=True)
        sys.exit(2)


def _run(o: EvalOptions) -> None:
    """``eval``: every setting on every dataset; the files, and a summary a dataset."""
    from presidio_delink.eval.output import at_a_glance, plot_tradeoff, write_all, write_json
    from presidio_delink.llm import make_rewriter
    from presidio_delink.settings import parse_modes

    for spec in o.llms:  # fail fast on a bad backend spec (models load only when used)
        make_rewriter(spec)
    # ConfigError on an unknown name
    protect = ",".join(parse_modes(o.protect)) if o.protect is not None else None
    t0 = time.perf_counter()

    def say(msg: str) -> None:
        click.echo(f"[{time.perf_counter() - t0:6.0f} s] {msg}", err=True)

    all_results = []
    for name in dict.fromkeys(o.datasets):
        merged = _run_dataset(o, name, protect, say)
        for p in write_all(merged, o.out_dir):
            say(f"wrote {p}")
        click.echo(at_a_glance(merged))
        all_results.append(merged)
    if len(all_results) > 1:
        write_json({"datasets": all_results}, o.out_dir / "all.json")
        plot_tradeoff(all_results, o.out_dir / "all-tradeoff.png")
        say(f"wrote {o.out_dir / 'all.json'} and {o.out_dir / 'all-tradeoff.png'}")


def _run_dataset(
    o: EvalOptions, name: str, protect: str | None, say: Callable[[str], None]
) -> dict[str, Any]:
    """Every setting on the dataset ``name``, the runs of each LLM merged into one result
    (and, with --html, the report of the first setting)."""
    from presidio_delink.eval.runner import Setting, run_eval
    from presidio_delink.pipeline import DelinkResult

    html_written = False

    def keep_html(setting: Setting, results: list[DelinkResult]) -> None:
        nonlocal html_written
        if o.html and not html_written:
            from presidio_delink.io import atomic_output
            from presidio_delink.report import render

            o.out_dir.mkdir(parents=True, exist_ok=True)
            with atomic_output(o.out_dir / f"{name}-report.html") as f:
                f.write(render(results, title=f"presidio-delink eval: {name}, {setting.label}"))
            html_written = True

    merged: dict[str, Any] | None = None
    for spec in dict.fromkeys(o.llms):
        n = o.limit if spec.strip().lower() == "none" else (o.llm_limit or o.limit)
        settings = [
            Setting(k, a, spec, o.passes, protect=p)
            for k in dict.fromkeys(o.ks)
            for a in dict.fromkeys(o.arities)
            for p in ([None, protect] if protect else [None])
        ]
        res = run_eval(
            name, settings, limit=n, work_dir=o.work_dir, semantic=o.semantic,
            fluency_docs=o.fluency_docs, fluency_tokens=o.fluency_tokens, progress=say,
            on_results=keep_html, bars=None, data_root=o.data_root,
        )
        if merged is None:
            merged = res
        else:
            merged["settings"] += res["settings"]
            merged["meta"]["seconds"] += res["meta"]["seconds"]
            merged["meta"].setdefault("runs", []).append(res["meta"])
    assert merged is not None
    return merged

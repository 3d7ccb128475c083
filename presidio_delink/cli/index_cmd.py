"""``index build``, ``index add``, ``index compact``, ``index readings``, ``index stats``,
``index query``."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import click

from presidio_delink.cli.common import (
    clean_errors,
    dask_client,
    key_opt,
    load_index,
    main,
    number_opt,
    output_opt,
    progress_opt,
    spread_opts,
    switch_opt,
)
from presidio_delink.errors import ConfigError


@main.group()
def index() -> None:
    """Build and inspect the N-gram index of a reference collection."""


@index.command("build")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@output_opt("Index directory to create (must be absent or empty).")
@number_opt("--max-n", default=8, low=1, high=16, help="Longest N-gram, in words.")
@number_opt("--shard-words", default=8_000_000, low=1000, help="Words per shard (bounds memory).")
@click.option(
    "--view",
    "extra_views",
    multiple=True,
    metavar="NAME",
    help="Also build this view (repeatable): case, case-cross. The defaults (folded, "
    "folded-cross, fine, accent-cross) are always built unless --no-default-views.",
)
@switch_opt("--default-views/--no-default-views",
            help="Build the default views (turn off only with --view).")
@click.option(
    "--group-regex",
    default=None,
    metavar="REGEX",
    help="Derive each document's group (person, case) from its id: the first capturing "
    "group of the first match. A JSONL 'group' field takes precedence.",
)
@spread_opts("the build [default: one a core]",
             "the input files and OUTPUT (they write into it)")
@switch_opt("--readings/--no-readings",
            help="Also store the ranked readings the audit and --protect read (without "
            "them every run builds them: minutes on a large collection).")
@key_opt
@progress_opt
@clean_errors
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
    readings: bool,
    key_file: Path | None,
    progress: bool,
) -> None:
    """Index INPUT... (JSONL, a JSON object {id: text}, or a folder of .txt files).

    JSONL (and JSON-list) records may carry a "group" (the person or case the document
    is about): k then counts distinct groups.
    """
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
    common: dict[str, Any] = dict(
        max_n=max_n, views=views, shard_words=shard_words, group_regex=group_regex,
        key=read_key(key_file),
    )
    if dask_scheduler is not None:
        client = dask_client(dask_scheduler)
        try:
            idx = NgramIndex.build_files(list(inputs), output, dask_client=client, **common)
        finally:
            client.close()
    else:
        idx = NgramIndex.build(read_many_grouped(inputs), output, progress=progress,
                               workers=workers or os.cpu_count() or 1, **common)
    if readings:
        from presidio_delink.attacks.readings import store_readings

        store_readings(idx, workers=workers or os.cpu_count() or 1)
    st = idx.stats()
    click.echo(
        f"indexed {st['n_docs']} documents ({st['n_groups']} groups), {st['n_words']} words, "
        f"{st['n_keys']} N-grams in {len(idx.views)} views into {output} "
        f"({st['bytes_on_disk']} bytes)",
        err=True,
    )


@index.command("add")
@click.argument("directory", type=click.Path(path_type=Path))
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@number_opt("--shard-words", default=8_000_000, low=1000, help="Words per shard (bounds memory).")
@click.option(
    "--group-regex",
    default=None,
    metavar="REGEX",
    help="As for build (the index does not store it): derive each new document's group "
    "from its id. A JSONL 'group' field takes precedence.",
)
@spread_opts("building the segment [default: one a core]",
             "the input files and DIRECTORY (they write into it)")
@click.option(
    "--reaudit",
    "released",
    default=None,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="delink outputs (JSONL) released against the index before: print, as JSONL, "
    "those whose audit or phrase check got worse with the added documents.",
)
@number_opt("--reaudit-k", default=2, low=2, help="The k the --reaudit outputs were released with.")
@key_opt
@progress_opt
@clean_errors
def index_add(
    directory: Path,
    inputs: tuple[Path, ...],
    shard_words: int,
    group_regex: str | None,
    workers: int | None,
    dask_scheduler: str | None,
    released: Path | None,
    reaudit_k: int,
    key_file: Path | None,
    progress: bool,
) -> None:
    """Add the documents of INPUT... (formats as for build) to the index at DIRECTORY as
    a new segment, visible whole once written.

    An id the index or the input has already is refused, and nothing is written. A JSONL
    "group" the index has already joins that group. The segment stores its counts for
    the ranked readings, which runs combine over all segments (exactly a fresh build's
    scores); an index whose base stores no such counts (an older version) builds them
    in each run until `index compact`.

    With --reaudit, each released output is audited and checked against the index before
    and after the add, and those that got worse are printed (one JSON object a line:
    the attacks that now rank their source higher, and phrases that link now).
    """
    from presidio_delink.attacks.readings import store_segment_counts
    from presidio_delink.index.format import read_key
    from presidio_delink.index.segments import add_documents
    from presidio_delink.io import read_many_grouped

    real = directory.resolve()
    for inp in inputs:
        if inp.resolve() == real or real in inp.resolve().parents:
            raise ConfigError(f"the input {inp} is (inside) the index directory {directory}")
    records = _released(released) if released is not None else None
    before = load_index(directory, key_file) if released is not None else None
    t0 = time.perf_counter()
    client = dask_client(dask_scheduler) if dask_scheduler is not None else None
    try:
        seg = add_documents(
            directory, read_many_grouped(inputs), key=read_key(key_file),
            group_regex=group_regex, shard_words=shard_words,
            workers=workers or os.cpu_count() or 1, progress=progress, dask_client=client,
            after_build=store_segment_counts,
        )
    finally:
        if client is not None:
            client.close()
    # The summary opens the grown index without checking every file's checksum: that
    # reads the whole index (its pages stay resident), so the add's time and peak memory
    # would grow with the index rather than with the batch.  The metadata is still read
    # and authenticated with the key; --reaudit opens it verified (below).
    from presidio_delink.index import NgramIndex

    idx = NgramIndex.load(directory, key=read_key(key_file), verify=False)
    n_segs = len(getattr(idx, "segments", [idx]))
    click.echo(
        f"added segment {seg.name} in {time.perf_counter() - t0:.1f} s: the index holds "
        f"{idx.n_docs} documents ({idx.n_groups} groups) in {n_segs} segments",
        err=True,
    )
    if records is not None:
        from presidio_delink.attacks.reaudit import reaudit

        idx = load_index(directory, key_file)

        worse = 0
        for got in reaudit(before, idx, records, reaudit_k):
            click.echo(json.dumps(got))
            worse += 1
        click.echo(f"reaudit: {worse} of {len(records)} released outputs got worse", err=True)


def _released(path: Path) -> list[dict[str, Any]]:
    """The records of ``index add --reaudit``'s file, read before anything is added."""
    from presidio_delink.errors import InputError

    records = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{path}:{n}: not a JSON line ({e.msg}): give --reaudit "
                                 "a delink output; nothing was added") from None
            if not isinstance(rec, dict) or not isinstance(rec.get("id"), str):
                raise InputError(f"{path}:{n}: not a delink record (a JSON object with an "
                                 "'id'): nothing was added")
            records.append(rec)
    return records


@index.command("compact")
@click.argument("directory", type=click.Path(path_type=Path))
@number_opt("--shard-words", default=8_000_000, low=1000,
            help="Words per shard, as given to build (it shapes the files, not the answers).")
@click.option("--workers", type=click.IntRange(1), default=None,
              help="Processes for the build and the readings [default: one a core].")
@switch_opt("--readings/--no-readings",
            help="Also store the ranked readings (as build does).")
@key_opt
@clean_errors
def index_compact(
    directory: Path, shard_words: int, workers: int | None, readings: bool,
    key_file: Path | None,
) -> None:
    """Merge the segments of the index at DIRECTORY into one index, swapped in whole:
    it answers every query and gives every audit rank as a fresh build over all the
    documents would. Built again from the words the index stores (no input needed)."""
    _compact(directory, shard_words, workers or os.cpu_count() or 1, readings, key_file)


def _compact(
    directory: Path, shard_words: int, workers: int, readings: bool, key_file: Path | None
) -> None:
    from presidio_delink.index.format import read_key
    from presidio_delink.index.segments import compact

    def store(idx: Any) -> None:
        if readings:
            from presidio_delink.attacks.readings import store_readings

            store_readings(idx, workers=workers)

    t0 = time.perf_counter()
    out = compact(directory, key=read_key(key_file), shard_words=shard_words,
                  workers=workers, after_build=store)
    if out is None:
        click.echo(f"{directory} has one segment: nothing to compact", err=True)
        return
    click.echo(f"compacted {directory} into {out.name} in {time.perf_counter() - t0:.1f} s"
               + (" (readings stored)" if readings else ""), err=True)


@index.command("readings")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--workers", type=click.IntRange(1), default=None,
              help="Processes building readings at once [default: one a core].")
@key_opt
@clean_errors
def index_readings(directory: Path, workers: int | None, key_file: Path | None) -> None:
    """Store the ranked readings (BM25 and TF-IDF postings) with the index at DIRECTORY,
    replacing any stored before: what an index built without them needs so that runs
    stop building them.  An index with added segments is compacted first (readings hold
    whole-collection statistics)."""
    from presidio_delink.attacks.readings import store_readings

    idx = load_index(directory, key_file)
    if getattr(idx, "segments", None):
        click.echo(f"{directory} has added segments: compacting it", err=True)
        _compact(directory, 8_000_000, workers or os.cpu_count() or 1, True, key_file)
        return
    out = store_readings(idx, workers=workers or os.cpu_count() or 1)
    assert idx.readings is not None
    click.echo(f"stored {len(idx.readings.names)} ranked readings in {out}", err=True)


@index.command("stats")
@click.argument("directory", type=click.Path(path_type=Path))
@key_opt
@clean_errors
def index_stats(directory: Path, key_file: Path | None) -> None:
    """Print the index statistics as JSON (views, groups, counts, sizes)."""
    click.echo(json.dumps(load_index(directory, key_file).stats(), indent=2))


@index.command("query")
@click.argument("directory", type=click.Path(path_type=Path))
@click.argument("phrases", nargs=-1, required=True)
@click.option("--view", default=None, help="The view to query (default: folded).")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True,
              help="Document ids printed per phrase (0: all); df and groups count them all.")
@key_opt
@clean_errors
def index_query(
    directory: Path, phrases: tuple[str, ...], view: str | None, limit: int,
    key_file: Path | None,
) -> None:
    """Print {"ngram", "view", "df", "groups", "doc_ids"} for each PHRASE (one N-gram
    each); df counts documents, groups distinct groups; "doc_ids" lists the first
    --limit documents ("more" says how many were left out)."""

    idx = load_index(directory, key_file)
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

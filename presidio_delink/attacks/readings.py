"""The ranked readings an index stores: built once by ``index build`` (or ``index readings``
for an index made without them), memory-mapped by every run.

What is stored: the postings of every member the audit, the fused reading and the
protection read (:data:`STORED_MEMBERS`), each with its specification
(:func:`~presidio_delink.attacks.fts5.stored_spec`).  An engine
(:class:`~presidio_delink.attacks.fts5.Engine`) maps a stored member whose specification
matches and builds the others as before, so the scores are the same either way, to the
bit: the stored weights are the built ones.  The format: :mod:`presidio_delink.index.
readings`.

And one count table per tokenisation (:func:`count_tables`: raw term frequencies, no
whole-collection statistic), which ``index add`` stores for each segment
(:func:`store_segment_counts`), so that runs over a grown index combine them instead of
building (:mod:`~presidio_delink.attacks.segment_scores`).

Cost.  Storing builds each member once (what a run without stored readings pays on its
first audit) and writes its terms (a marisa trie), offsets, units and weights; opening
maps them.  Figures on TAB: ``benchmarks/results/bench_living_index.md``.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.attacks.fts5 import ALL_MEMBERS, READINGS_CODE, Engine, stored_spec
from presidio_delink.attacks.ranked import AUDIT_MEMBERS, FUSED_MEMBERS, PROTECT_MEMBERS
from presidio_delink.attacks.segment_scores import table_name, table_spec
from presidio_delink.errors import ConfigError
from presidio_delink.index import NgramIndex
from presidio_delink.index.readings import (
    ReadingsWriter,
    StoredCounts,
    open_readings,
    term_hashes,
    write_counts,
    write_reading,
)

__all__ = ["STORED_MEMBERS", "count_tables", "store_readings", "store_segment_counts"]

log = logging.getLogger(__name__)

#: Every member a run reads: the audit's, the fused reading's and the protection's.
STORED_MEMBERS: tuple[str, ...] = tuple(
    dict.fromkeys((*AUDIT_MEMBERS, *FUSED_MEMBERS, *PROTECT_MEMBERS)))


def count_tables(members: Sequence[str] = STORED_MEMBERS) -> dict[str, tuple[str, bool]]:
    """The count tables that let ``members`` be read over segments: table name ->
    (a member of that tokenisation, whether a TF-IDF cosine member reads it, so that
    its terms' code-point order is stored too).  A group reading reads the table of its
    tokenisation too (its documents' counts, summed per group when a query is scored)."""
    out: dict[str, tuple[str, bool]] = {}
    for m in members:
        spec = ALL_MEMBERS[m]
        name = table_name(spec)
        first, lex = out.get(name, (m, False))
        out[name] = (first, lex or spec.model == "cosine")
    return out


def store_readings(
    index: NgramIndex, members: Sequence[str] = STORED_MEMBERS, workers: int = 1
) -> Path:
    """Build ``members``' postings over ``index`` and store them with it (replacing any
    stored before: the new folder is swapped in whole), signed with the key the index
    was opened with.  The index then reads them (``index.readings``).

    Args:
        index: an index opened from its directory.
        members: the readings to store (default: every one a run reads).
        workers: processes building readings at once (forked: each builds whole
            readings from the collection's words, read once here).

    Returns:
        The readings folder.

    Raises:
        ConfigError: an unknown member, or another process storing readings there.
    """
    from presidio_delink.attacks.fts5 import ALL_MEMBERS

    unknown = [m for m in members if m not in ALL_MEMBERS]
    if unknown:
        raise ConfigError(f"unknown readings {unknown}")
    members = list(dict.fromkeys(members))
    jobs = [*members, *count_tables(members)]
    t0 = time.perf_counter()
    eng = Engine(index)
    writer = ReadingsWriter(index.directory, index.key, {
        "code": READINGS_CODE, "n_docs": index.n_docs, "n_groups": eng.n_groups})
    try:
        if workers > 1 and len(jobs) > 1 and "fork" in mp.get_all_start_methods():
            eng.collection()  # read once, shared with the forked workers
            global _JOB
            _JOB = (eng, writer.tmp)
            try:
                with mp.get_context("fork").Pool(min(workers, len(jobs))) as pool:
                    for name, rec in pool.imap_unordered(_build_one, jobs):
                        writer.record(name, rec)
            finally:
                _JOB = None
        else:
            for m in jobs:
                writer.record(*_build(eng, writer.tmp, m))
        out = writer.commit()
    except BaseException:
        writer.abort()
        raise
    index.readings = open_readings(index.directory, index.key, verify=False)
    log.info("stored %d ranked readings with the index in %.1f s", len(members),
             time.perf_counter() - t0)
    return out


_JOB: tuple[Engine, Path] | None = None


def _counts(eng: Engine, member: str) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray,
                                               np.ndarray]:
    """The collection's counts under ``member``'s tokenisation: terms by id, offsets,
    documents and frequencies per term, and each document's length."""
    eng.prepare(member)
    term_ids, terms, tdoc = eng.occurrences(member)
    n = max(eng.n_docs, 1)
    keys, tf = np.unique(terms * n + tdoc, return_counts=True)
    t_of, d_of = keys // n, keys % n
    ptr = np.searchsorted(t_of, np.arange(len(term_ids) + 1))
    lens = np.bincount(tdoc, minlength=eng.n_docs).astype(np.float64)
    return list(term_ids), ptr, d_of, tf, lens


def _build(eng: Engine, folder: Path, member: str) -> tuple[str, dict[str, Any]]:
    tables = count_tables()
    if member in tables:  # a count table (for reads over segments)
        first, lex = tables[member]
        rec = write_counts(folder, member, table_spec(ALL_MEMBERS[first], READINGS_CODE),
                           *_counts(eng, first), lex=lex)
        return member, rec
    eng.prepare(member)
    mem = eng.build(member)
    rec = write_reading(folder, member, stored_spec(member), list(mem.term_ids), mem.ptr,
                        mem.docs, mem.weights)
    log.debug("stored reading %s (%d terms)", member, rec["n_terms"])
    return member, rec


def _build_one(member: str) -> tuple[str, dict[str, Any]]:
    """A forked worker: its own engine (an SQLite connection is not carried across a
    fork) over the collection's words the parent read."""
    assert _JOB is not None
    parent, folder = _JOB
    eng = Engine(parent.index)
    eng._collection = parent.collection()
    return _build(eng, folder, member)


def store_segment_counts(segment: NgramIndex, before: NgramIndex) -> bool:
    """Store the count tables of ``segment`` (an index over one added batch, not yet
    listed, whose folder its writer fsyncs whole before listing it) in its folder, each
    term linked to its id over ``before`` (the index it is added to) and the segment:
    what lets runs read the grown index's readings without building them.  Signed with
    the segment's key.  Returns False, storing nothing, when a part of ``before`` has no
    count tables (run ``index compact`` to store them)."""
    parts = list(getattr(before, "segments", None) or [before])
    stores = [p.readings for p in parts]
    tables = count_tables()
    got: dict[str, list[StoredCounts]] = {}
    for name in tables:
        have = [s.counts(name) if s is not None else None for s in stores]
        if any(h is None for h in have):
            log.info("the index the segment is added to stores no counts per segment: "
                     "runs build their readings until `presidio-delink index compact`")
            return False
        got[name] = [h for h in have if h is not None]
    eng = Engine(segment)
    writer = ReadingsWriter(segment.directory, segment.key, {
        "code": READINGS_CODE, "n_docs": segment.n_docs, "n_groups": eng.n_groups},
        durable=False)  # the segment's folder is fsync'ed whole before it is listed
    try:
        for name, (first, lex) in tables.items():
            writer.add_counts(name, table_spec(ALL_MEMBERS[first], READINGS_CODE),
                              *_counts(eng, first), lex=lex, link=_linker(got[name]))
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    return True


def _linker(parts: list[StoredCounts]) -> Any:
    """Ids over the whole index for a new part's terms: an earlier part's id for a term
    it holds (the first such part), else the new part's range (after every earlier
    part's) plus the term's local id.  An earlier segment's trie is asked only for the
    terms whose hash it holds."""
    start = sum(len(p.ptr) - 1 for p in parts)

    def link(terms: list[str]) -> np.ndarray:
        out = np.arange(start, start + len(terms), dtype=np.int64)
        todo = np.arange(len(terms))
        hashes = term_hashes(terms) if len(parts) > 1 else None
        for p in parts:
            if not len(todo):
                break
            ask = todo
            if p.hashes is not None and hashes is not None:
                h = hashes[todo]
                at = np.minimum(np.searchsorted(p.hashes, h), len(p.hashes) - 1)
                ask = todo[p.hashes[at] == h]
            get = p.terms.get
            ids = [get(terms[i]) for i in ask.tolist()]
            hit = np.fromiter((j is not None for j in ids), dtype=bool, count=len(ids))
            local = np.fromiter((j for j in ids if j is not None), dtype=np.int64)
            out[ask[hit]] = local if p.gid is None else p.gid[local]
            todo = np.setdiff1d(todo, ask[hit], assume_unique=True)
        return out

    return link

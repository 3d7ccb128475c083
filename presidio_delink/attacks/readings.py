"""The ranked readings an index stores: built once by ``index build`` (or ``index readings``
for an index made without them), memory-mapped by every run.

What is stored: the postings of every member the audit, the fused reading and the
protection read (:data:`STORED_MEMBERS`), each with its specification
(:func:`~presidio_delink.attacks.fts5.stored_spec`).  An engine
(:class:`~presidio_delink.attacks.fts5.Engine`) maps a stored member whose specification
matches and builds the others as before, so the scores are the same either way, to the
bit: the stored weights are the built ones.  The format: :mod:`presidio_delink.index.
readings`.

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

from presidio_delink.attacks.fts5 import READINGS_CODE, Engine, stored_spec
from presidio_delink.attacks.ranked import AUDIT_MEMBERS, FUSED_MEMBERS, PROTECT_MEMBERS
from presidio_delink.errors import ConfigError
from presidio_delink.index import NgramIndex
from presidio_delink.index.readings import ReadingsWriter, open_readings, write_reading

__all__ = ["STORED_MEMBERS", "store_readings"]

log = logging.getLogger(__name__)

#: Every member a run reads: the audit's, the fused reading's and the protection's.
STORED_MEMBERS: tuple[str, ...] = tuple(
    dict.fromkeys((*AUDIT_MEMBERS, *FUSED_MEMBERS, *PROTECT_MEMBERS)))


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
    t0 = time.perf_counter()
    eng = Engine(index)
    writer = ReadingsWriter(index.directory, index.key, {
        "code": READINGS_CODE, "n_docs": index.n_docs, "n_groups": eng.n_groups})
    try:
        if workers > 1 and len(members) > 1 and "fork" in mp.get_all_start_methods():
            eng.collection()  # read once, shared with the forked workers
            global _JOB
            _JOB = (eng, writer.tmp)
            try:
                with mp.get_context("fork").Pool(min(workers, len(members))) as pool:
                    for name, rec in pool.imap_unordered(_build_one, members):
                        writer.record(name, rec)
            finally:
                _JOB = None
        else:
            for m in members:
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


def _build(eng: Engine, folder: Path, member: str) -> tuple[str, dict[str, Any]]:
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

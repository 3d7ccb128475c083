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
import time
from collections.abc import Sequence
from pathlib import Path

from presidio_delink.attacks.fts5 import READINGS_CODE, Engine, stored_spec
from presidio_delink.attacks.ranked import AUDIT_MEMBERS, FUSED_MEMBERS, PROTECT_MEMBERS
from presidio_delink.errors import ConfigError
from presidio_delink.index import NgramIndex
from presidio_delink.index.readings import ReadingsWriter, open_readings

__all__ = ["STORED_MEMBERS", "store_readings"]

log = logging.getLogger(__name__)

#: Every member a run reads: the audit's, the fused reading's and the protection's.
STORED_MEMBERS: tuple[str, ...] = tuple(
    dict.fromkeys((*AUDIT_MEMBERS, *FUSED_MEMBERS, *PROTECT_MEMBERS)))


def store_readings(index: NgramIndex, members: Sequence[str] = STORED_MEMBERS) -> Path:
    """Build ``members``' postings over ``index`` and store them with it (replacing any
    stored before: the new folder is swapped in whole), signed with the key the index
    was opened with.  The index then reads them (``index.readings``).

    Returns:
        The readings folder.

    Raises:
        ConfigError: an unknown member.
    """
    from presidio_delink.attacks.fts5 import ALL_MEMBERS

    unknown = [m for m in members if m not in ALL_MEMBERS]
    if unknown:
        raise ConfigError(f"unknown readings {unknown}")
    t0 = time.perf_counter()
    eng = Engine(index)
    writer = ReadingsWriter(index.directory, index.key, {
        "code": READINGS_CODE, "n_docs": index.n_docs, "n_groups": eng.n_groups})
    try:
        for m in members:
            eng.prepare(m)
            mem = eng.build(m)
            writer.add(m, stored_spec(m), list(mem.term_ids), mem.ptr, mem.docs, mem.weights)
            log.debug("stored reading %s (%d terms)", m, len(mem.term_ids))
        out = writer.commit()
    except BaseException:
        writer.abort()
        raise
    index.readings = open_readings(index.directory, index.key, verify=False)
    log.info("stored %d ranked readings with the index in %.1f s", len(members),
             time.perf_counter() - t0)
    return out

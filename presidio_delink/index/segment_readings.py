"""Stored readings over an index's segments: each segment's raw counts, read together.

The ranked readings stored with one index (:mod:`~presidio_delink.index.readings`) hold
whole-collection statistics (BM25's idf and mean length), which change when documents
are added.  So each part of a grown index (the base and every added segment) also
stores *count tables*, one per tokenisation (:class:`~presidio_delink.index.readings.
StoredCounts`): per term, the part's documents holding it and how often, each
document's length, each term's id over the whole index, and the code-point order of
each document's terms.  This module only finds them and checks that every part has
them; :mod:`presidio_delink.attacks.segment_scores` combines them (document frequencies
summed over the parts, lengths over all documents) into scores equal to a fresh build's.

An index whose parts do not all store count tables (the base stored readings of an
older version, or a segment was added by a caller that stored none) is read without:
runs build their readings in the process, and a warning says to run ``index compact``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from presidio_delink.index.readings import ReadingsStore, StoredCounts

__all__ = ["COUNTS_PREFIX", "SegmentReadings", "combine"]

#: The names of count tables in a readings folder start with this.
COUNTS_PREFIX = "counts-"


class SegmentReadings:
    """The count tables of every part of a grown index (:func:`combine`).

    Attributes:
        stores: each part's readings, in document order.
        offsets: each part's first document ordinal over the whole index.
        n_docs: the documents of all parts.
        names: the count tables every part stores.
    """

    def __init__(self, stores: Sequence[ReadingsStore], offsets: Sequence[int], n_docs: int,
                 names: Sequence[str]) -> None:
        self.stores = list(stores)
        self.offsets = list(offsets)
        self.n_docs = n_docs
        self.names = list(names)
        self.directory = self.stores[0].directory
        #: what a scorer keeps per table (shared statistics), keyed by its users
        self.cache: dict[Any, Any] = {}

    def spec(self, name: str) -> list[Any] | None:
        """A count table's specification (None unless every part stores it alike)."""
        if name not in self.names:
            return None
        specs = [s.spec(name) for s in self.stores]
        return specs[0] if all(x == specs[0] for x in specs) else None

    def get(self, name: str) -> None:
        """No ranked reading is stored whole over segments (see :meth:`tables`)."""
        return None

    def check(self, names: Sequence[str]) -> None:
        """Check the named count tables of every part (with ``verify``: their checksums,
        on a few threads, as hashing releases the interpreter lock)."""
        todo = [(s, n) for s in self.stores if s.verify for n in names if n in self.names]
        if not todo:
            return
        workers = max(1, min(len(todo), os.cpu_count() or 1, 4))
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(lambda sn: sn[0].counts(sn[1]), todo))

    def tables(self, name: str) -> list[tuple[StoredCounts, int]] | None:
        """Count table ``name`` of each part with the part's first document (None when a
        part lacks it)."""
        out = []
        for s, off in zip(self.stores, self.offsets, strict=True):
            got = s.counts(name)
            if got is None:
                return None
            out.append((got, off))
        return out


def combine(stores: Sequence[ReadingsStore | None], sizes: Sequence[int]
            ) -> tuple[SegmentReadings | None, str]:
    """The parts' count tables read together, or None and why not (a sentence)."""
    if any(s is None for s in stores):
        missing = [i for i, s in enumerate(stores) if s is None]
        what = ("its base stores" if missing[0] == 0
                else f"{len(missing)} of them store")
        return None, f"{what} no readings"
    have = [set(s.tables) for s in stores if s]
    common = set.intersection(*have)
    if not common:
        return None, "its stored readings hold no counts per segment (an older version)"
    offsets = [0]
    for n in sizes[:-1]:
        offsets.append(offsets[-1] + n)
    ok = [s for s in stores if s is not None]
    return SegmentReadings(ok, offsets, sum(sizes), sorted(common)), ""

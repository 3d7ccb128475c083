"""Ranked readings over a grown index, scored from each segment's stored counts.

Definitions.  A reading reads the count table of its tokenisation (:func:`table_name`)
in every part of the index (:class:`~presidio_delink.index.segment_readings.
SegmentReadings`: the base, then each added segment, documents in order).  Over all
parts:

* ``N`` is the documents of all parts; a document's length is its part's;
  ``avgdl`` is their mean (an exact sum of integers, so the fresh build's float);
* a term's ``df`` is the sum of its document counts in the parts (parts hold disjoint
  documents); its postings are each part's, shifted to the part's first document, in
  part order (so ascending, as a fresh build's);
* a *group* reading (BM25 over a group as one document) sums its documents' counts and
  lengths per group when a query is scored, and a term's ``df`` is its number of groups,
  so a group with documents in several segments counts once;
* a TF-IDF cosine document's norm is summed over its terms in their code-point order
  (the part stores that order), with every term's ``df`` over all parts (each part's
  terms carry their id over the whole index, so the sum needs no look-up).

Each weight is then :mod:`~presidio_delink.attacks.scoring`'s formula on the same
numbers as a fresh build's, so scores, ranks and audit records are those of a fresh build
over all the documents, to the bit (``tests/test_segment_readings.py``).

Cost.  Opening a reading concatenates the parts' document lengths (BM25), or computes
every document's norm in one pass over the parts' postings (cosine: milliseconds per
million postings).  A query looks each of its terms up in every part's trie and computes
the weights of its postings (remembered per term, so a text's sentences, which reuse the
whole text's terms, cost little): Lucene's way, statistics per segment, combined when a
query is scored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from presidio_delink.attacks import scoring
from presidio_delink.index.readings import StoredCounts, term_hashes
from presidio_delink.index.segment_readings import COUNTS_PREFIX, SegmentReadings

__all__ = ["SegmentMember", "segment_member", "table_name", "table_spec"]

#: Postings a reading (and, apart, each tokenisation) remembers for the terms it has
#: read: past it, all are dropped at once before the next read (about 12 bytes each).
CACHE_POSTINGS = 2_000_000


def table_name(spec: Any) -> str:
    """The count table a reading of ``spec`` (a ``fts5.Member``) reads."""
    return f"{COUNTS_PREFIX}{spec.tokenizer}{'-stop' if spec.stop else ''}"


def table_spec(spec: Any, code: int) -> list[Any]:
    """What a count table for ``spec``'s tokenisation is stored with (``code``: the code
    version of the readings, ``fts5.READINGS_CODE``)."""
    return ["counts", code, spec.tokenizer, bool(spec.stop)]


class _Table:
    """One tokenisation's counts over all parts, and what every reading of it shares."""

    def __init__(self, parts: list[tuple[StoredCounts, int]], n_docs: int) -> None:
        self.parts = parts
        self.n = n_docs
        dl = np.concatenate([p.lens for p, _ in parts]) if parts else np.zeros(0)
        self.dl = np.ascontiguousarray(dl, dtype=np.float64)
        self.avgdl = self.dl.sum() / self.n if self.n else 0.0
        self._norms: dict[tuple[str, str], np.ndarray] = {}
        self._df: np.ndarray | None = None
        self._found: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}
        self._held = 0  # postings in _found
        self._groups: tuple[np.ndarray, float, int] | None = None

    def gather(self, terms: Sequence[str]) -> tuple[list[bool], np.ndarray, np.ndarray,
                                                     np.ndarray]:
        """The terms' postings over every part: whether each term is held, and for the
        held ones (in order) their documents over the whole index and frequencies,
        concatenated (each term's from every part holding it, in part order), with each
        one's number of postings.  A term's postings are read once and remembered, as
        every reading of this tokenisation asks for the same terms."""
        cache = self._found
        if self._held > CACHE_POSTINGS:
            cache.clear()
            self._held = 0
        new = [t for t in dict.fromkeys(terms) if t not in cache]
        if new:
            self._read(new)
        held = [cache[t] for t in terms]
        got = [h for h in held if h is not None]
        if not got:
            return [False] * len(terms), np.empty(0, np.int64), np.empty(0), np.empty(0, np.int64)
        return ([h is not None for h in held], np.concatenate([g[0] for g in got]),
                np.concatenate([g[1] for g in got]),
                np.fromiter((len(g[0]) for g in got), np.int64, count=len(got)))

    def _read(self, terms: list[str]) -> None:
        """Read ``terms``' postings from every part (one concatenation of slices)."""
        found = []  # per part: (term indices, starts, stops)
        hashes = None
        for p, _ in self.parts:
            ask = np.arange(len(terms))
            if p.hashes is not None:  # a segment: only the terms whose hash it holds
                if hashes is None:
                    hashes = term_hashes(terms)
                at = np.minimum(np.searchsorted(p.hashes, hashes), len(p.hashes) - 1)
                ask = np.flatnonzero(p.hashes[at] == hashes)
            get = p.terms.get
            ids = [get(terms[i]) for i in ask.tolist()]
            held = np.fromiter((i is not None for i in ids), dtype=bool, count=len(ids))
            tid = np.fromiter((i for i in ids if i is not None), dtype=np.int64)
            found.append((ask[held], p.ptr[tid], p.ptr[tid + 1]))
        ti = np.concatenate([f[0] for f in found])
        pi = np.repeat(np.arange(len(found)), [len(f[0]) for f in found])
        order = np.lexsort((pi, ti))  # by term, then part
        ti, pi = ti[order], pi[order]
        starts = np.concatenate([f[1] for f in found])[order].tolist()
        stops = np.concatenate([f[2] for f in found])[order].tolist()
        cache = self._found
        if not len(ti):
            cache.update(dict.fromkeys(terms))
            return
        parts = self.parts
        spans = list(zip(pi.tolist(), starts, stops, strict=True))
        docs = np.concatenate([parts[q][0].docs[a:b] for q, a, b in spans])
        tf = np.concatenate([parts[q][0].tf[a:b] for q, a, b in spans])
        lens = np.asarray(stops, dtype=np.int64) - np.asarray(starts, dtype=np.int64)
        offs = np.asarray([parts[q][1] for q in range(len(parts))], dtype=np.int64)[pi]
        if offs.any():  # a segment's documents follow those of the parts before it
            docs = docs + np.repeat(offs, lens).astype(docs.dtype)
        f = tf.astype(np.float64)
        self._held += len(f)
        per = np.bincount(ti, weights=lens, minlength=len(terms)).astype(np.int64)
        ends = np.cumsum(per).tolist()
        start = 0
        for term, end in zip(terms, ends, strict=True):
            cache[term] = (docs[start:end], f[start:end]) if end > start else None
            start = end

    def group_lengths(self, group_of: np.ndarray) -> tuple[np.ndarray, float, int]:
        """Each group's length (its documents' summed), their mean and the groups."""
        got = self._groups
        if got is None:
            n = int(group_of.max()) + 1 if len(group_of) else 0
            dl = np.bincount(group_of, weights=self.dl, minlength=n).astype(np.float64)
            got = self._groups = (dl, dl.sum() / n if n else 0.0, n)
        return got

    def df(self) -> np.ndarray:
        """Every term's document frequency over all parts, by id over the whole index."""
        if self._df is None:
            size = sum(len(p.ptr) - 1 for p, _ in self.parts)
            df = np.zeros(size, dtype=np.float64)
            for p, _ in self.parts:
                own = np.diff(p.ptr).astype(np.float64)
                gid = p.gid if p.gid is not None else np.arange(len(own))
                df += np.bincount(gid, weights=own, minlength=size)
            self._df = df
        return self._df

    def norms(self, spec: Any) -> np.ndarray:
        """Every document's TF-IDF norm under ``spec``'s idf (see the module docstring)."""
        key = (spec.model, spec.idf)
        got = self._norms.get(key)
        if got is None:
            idf_g = scoring.idf(spec, self.df(), self.n)
            pieces = []
            for p, _ in self.parts:
                if p.lex is None:
                    raise ValueError("count table stored without its code-point order")
                docs, gid, lf = p.lex
                pieces.append(scoring.sorted_norms(lf, idf_g[gid], docs, len(p.lens)))
            got = self._norms[key] = np.concatenate(pieces)
        return got


class SegmentMember:
    """A reading's postings over every part, weighted when a query asks for a term; the
    engine queries it as it queries a stored or built reading (``postings``)."""

    def __init__(self, table: _Table, spec: Any, group_of: np.ndarray | None = None) -> None:
        self.table = table
        self.spec = spec
        self.norm = table.norms(spec) if spec.model == "cosine" else None
        #: a group reading's unit of each document (the engine scores units, and gives
        #: each document its unit's score); None: a document is its own unit
        self.unit_of = group_of if spec.unit == "group" else None
        self._cache: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}
        self._held = 0  # postings in _cache

    def _fill(self, terms: Sequence[str]) -> None:
        tab = self.table
        held, docs, f_all, counts = tab.gather(terms)
        if self._held > CACHE_POSTINGS:
            self._cache.clear()
            self._held = 0
        self._held += len(docs)
        if self.unit_of is not None:  # postings per group, as a fresh build counts them
            held, docs, f_all, counts = self._by_group(held, docs, f_all, counts)
            dl, avgdl, n = tab.group_lengths(self.unit_of)
        else:
            dl, avgdl, n = tab.dl, tab.avgdl, tab.n
        idf_p = np.repeat(scoring.idf(self.spec, counts.astype(np.float64), n), counts)
        if self.norm is not None:
            w = scoring.cosine(idf_p, f_all, self.norm[docs])
        else:
            w = scoring.bm25(self.spec, idf_p, f_all, dl[docs], avgdl)
        ends = np.cumsum(counts).tolist()
        j = start = 0
        for t, h in zip(terms, held, strict=True):
            if not h:
                self._cache[t] = None
                continue
            end = ends[j]
            self._cache[t] = (docs[start:end], w[start:end])
            start, j = end, j + 1

    def _by_group(self, held: list[bool], docs: np.ndarray, f: np.ndarray, counts: np.ndarray
                  ) -> tuple[list[bool], np.ndarray, np.ndarray, np.ndarray]:
        """Documents' postings summed per group: each term's groups ascending, with
        their frequencies summed and each term's number of groups (its df)."""
        assert self.unit_of is not None
        n_groups = int(self.unit_of.max()) + 1 if len(self.unit_of) else 1
        term = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
        keys, inv = np.unique(term * n_groups + self.unit_of[docs], return_inverse=True)
        tf = np.bincount(inv.ravel(), weights=f, minlength=len(keys))
        per = np.bincount(keys // n_groups, minlength=len(counts)).astype(np.int64)
        return held, (keys % n_groups).astype(np.int64), tf, per

    def postings(
        self, terms: Sequence[str], counts: Sequence[int] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Documents and summands of ``terms`` (concatenated; unknown terms have none),
        each summand times its term's ``counts`` entry when given."""
        miss = [t for t in dict.fromkeys(terms) if t not in self._cache]
        if miss:
            self._fill(miss)
        keep = []
        for j, t in enumerate(terms):
            got = self._cache.get(t)
            if got is None and t not in self._cache:  # dropped by a clear: fill again
                self._fill([t])
                got = self._cache.get(t)
            if got is not None:
                keep.append((got, 1 if counts is None else counts[j]))
        if not keep:
            return np.empty(0, dtype=np.int32), np.empty(0)
        w = np.concatenate([g[1] for g, _ in keep])
        if counts is not None:
            w = w * np.repeat([float(c) for _, c in keep], [len(g[0]) for g, _ in keep])
        return np.concatenate([g[0] for g, _ in keep]), w


def segment_member(store: SegmentReadings, spec: Any, code: int,
                   group_of: np.ndarray | None = None) -> SegmentMember | None:
    """The reading of ``spec`` over the parts of ``store`` (None when it cannot be read
    from their counts: a table a part lacks or stored by other code, or a group
    reading that is not BM25 or without ``group_of``, each document's group ordinal)."""
    if spec.unit == "group" and (spec.model != "bm25" or group_of is None):
        return None
    name = table_name(spec)
    if store.spec(name) != table_spec(spec, code):
        return None
    key = ("table", name)
    tab = store.cache.get(key)
    if tab is None:
        if "checked" not in store.cache:  # every table at once: what a panel reads
            store.check(store.names)
            store.cache["checked"] = True
        parts = store.tables(name)
        if parts is None:
            return None
        if spec.model == "cosine" and any(p.lex is None for p, _ in parts):
            return None
        tab = store.cache[key] = _Table(parts, store.n_docs)
    elif spec.model == "cosine" and any(p.lex is None for p, _ in tab.parts):
        return None
    return SegmentMember(tab, spec, group_of)

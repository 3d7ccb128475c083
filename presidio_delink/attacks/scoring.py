"""The ranked readings' term weights from raw counts: one definition, used where an engine
builds a reading from the collection (:mod:`~presidio_delink.attacks.fts5`) and where a
reader scores over an index's segments (:mod:`~presidio_delink.attacks.segment_scores`).

Both call these functions with the same numbers (term frequency ``f``, the unit's length
``dl``, the term's document frequency ``df``, the ``n`` units and their mean length), so
a weight is the same float to the bit wherever it is computed: numpy's element-wise
operations do not depend on the array they run over.

The TF-IDF cosine's document norm is a sum over the document's terms; a float sum
depends on its order, so it is taken in one canonical order, the terms' code-point
order within each document (:func:`lex_order`).  That order is the same for a document
in any collection holding it, so a segment can store it (a permutation of its postings)
and a reader over segments sums each document's terms exactly as a fresh build does.
"""

from __future__ import annotations

import threading
import weakref
from typing import Protocol

import numpy as np

from presidio_delink.index import NgramIndex
from presidio_delink.index.readings import lex_order

__all__ = ["GroupTable", "bm25", "cosine", "cosine_norms", "group_table", "idf", "lex_order",
           "ranks_in_rows", "relative_maxima", "rows_max", "sorted_norms"]


class Spec(Protocol):
    """What a reading's definition gives the formulas (a ``fts5.Member``)."""

    @property
    def k1(self) -> float: ...
    @property
    def b(self) -> float: ...
    @property
    def idf(self) -> str: ...
    @property
    def model(self) -> str: ...


def idf(spec: Spec, df: np.ndarray, n: int) -> np.ndarray:
    """Each term's idf under the reading's model (``df`` float64, one per term)."""
    df = np.ascontiguousarray(df, dtype=np.float64)
    if spec.model == "cosine":
        if spec.idf == "smooth":
            return np.log((1.0 + n) / (1.0 + df)) + 1.0
        return np.log(n / np.maximum(df, 1.0))
    if spec.idf == "lucene":
        return np.log1p((n - df + 0.5) / (df + 0.5))
    out = np.log((n - df + 0.5) / (df + 0.5))
    out[out <= 0] = 1e-6
    return out


def bm25(spec: Spec, idf_p: np.ndarray, f: np.ndarray, dl_p: np.ndarray,
         avgdl: float) -> np.ndarray:
    """BM25 summands of postings: their term's idf, frequency and unit length."""
    k1, b = spec.k1, spec.b
    return idf_p * (f * (k1 + 1.0)) / (f + k1 * (1 - b + b * dl_p / max(avgdl, 1e-12)))


def cosine(idf_p: np.ndarray, f: np.ndarray, norm_p: np.ndarray) -> np.ndarray:
    """TF-IDF cosine summands of postings: ``idf * (1 + ln f) idf / |d|``."""
    dw = (1.0 + np.log(f)) * idf_p
    return idf_p * dw / np.maximum(norm_p, 1e-12)


def cosine_norms(
    idf_p: np.ndarray, f: np.ndarray, d_of: np.ndarray, order: np.ndarray, n: int
) -> np.ndarray:
    """Each unit's TF-IDF vector length, its terms summed in ``order`` (a permutation of
    the postings: :func:`lex_order`)."""
    return sorted_norms((1.0 + np.log(f))[order], idf_p[order], d_of[order], n)


def sorted_norms(lf: np.ndarray, idf_p: np.ndarray, d_of: np.ndarray, n: int) -> np.ndarray:
    """:func:`cosine_norms` of postings already in summing order, given ``1 + ln f``."""
    dw = lf * idf_p
    return np.sqrt(np.bincount(d_of, weights=dw * dw, minlength=n))


def kth_largest(g: np.ndarray, k: int) -> np.ndarray:
    """The ``k``-th largest value of each row of ``g`` (``k <= g.shape[1]``), exactly
    ``np.partition(g, -k, axis=1)[:, -k]``.  A row of group scores is mostly zeros, on
    which numpy's partition is about 30 times slower than on spread values (1.3 s against
    0.04 s on 40 rows of 1e5 groups): where no score is negative, each row's positive
    scores alone are partitioned, and a row with fewer than ``k`` of them has 0 there
    (for ``k = 2`` and no NaN, each row's largest is left out and the rest's maximum
    taken instead: the same value, without a copy of the row)."""
    low = g.min() if g.size else 0
    if g.size == 0 or low < 0:
        return np.partition(g, -k, axis=1)[:, -k]
    out = np.zeros(len(g), dtype=g.dtype)
    if k == 2 and np.issubdtype(g.dtype, np.floating) and not np.isnan(low):
        # the second largest: the largest once one of the largest is left out (two
        # passes over each row, no copy); 0 where fewer than two scores are positive
        for i, row in enumerate(g):
            j = int(np.argmax(row))
            if row[j] > 0:
                second = max(row[:j].max(initial=-np.inf), row[j + 1:].max(initial=-np.inf))
                if second > 0:
                    out[i] = second
        return out
    for i, row in enumerate(g):
        v = row[row > 0]
        if len(v) >= k:
            out[i] = np.partition(v, len(v) - k)[len(v) - k]
    return out


def ranks_in_rows(g: np.ndarray, gi: int) -> np.ndarray:
    """Column ``gi``'s 1-based rank in each row of ``g`` (1 + the values above it; 0
    where its value is not positive), read-only."""
    s = g[:, gi]
    out = np.where(s > 0, 1 + np.count_nonzero(g > s[:, None], axis=1), 0)
    out.setflags(write=False)
    return out


def relative_maxima(g: np.ndarray, s1: np.ndarray, text_rows: list[int]
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Each column's largest ``g / s1`` (``s1``: each row's maximum; 0 in a row whose
    maximum is not positive) over every row, and over ``text_rows`` (zeros when there are
    none).  Taken a row at a time: a maximum does not depend on the order it is taken
    in, and no matrix of the ratios is held."""
    best = np.full(g.shape[1], -np.inf)
    best_text = np.full(g.shape[1], -np.inf) if text_rows else np.zeros(g.shape[1])
    is_text = set(text_rows)
    rel = np.empty(g.shape[1])
    for i in range(len(g)):
        if s1[i] > 0:
            np.divide(g[i], s1[i], out=rel)
        else:
            rel.fill(0.0)
        np.maximum(best, rel, out=best)
        if i in is_text:
            np.maximum(best_text, rel, out=best_text)
    return best, best_text


def rows_max(ds: np.ndarray, rows: list[int]) -> np.ndarray:
    """Each column's maximum over ``rows`` of ``ds`` (every row when ``rows`` is empty;
    ``ds`` has at least one row)."""
    rows = rows or list(range(len(ds)))
    out = ds[rows[0]].copy()
    for i in rows[1:]:
        np.maximum(out, ds[i], out=out)
    return out


#: :meth:`GroupTable.find` searches for this many names before it makes a table of all.
FIND_BEFORE_TABLE = 8


class GroupTable:
    """The collection's groups as the ranked readings number them: ordinal ``i`` is the
    ``i``-th distinct group in document order (``dict.fromkeys(index.doc_groups)``), each
    document's own id standing for its group where the index has none.

    Made once per index and process (:func:`group_table`), from the index's group numbers
    with numpy where it can: the numbering above is the same for any numbering of the
    groups that gives distinct names distinct numbers, so it is read off the first
    document of each stored number; names that are not distinct (never so in a built
    index) are numbered from the names themselves, as the definition says.

    Attributes:
        names: group names by ordinal.
        of: each document's group ordinal (int64, read-only).
        n_groups: ``len(names)``.
        own: each document is its own group, in document order (``of`` is ``0..n-1``).
        in_order: documents come group by group (``of`` never decreases).
    """

    def __init__(self, index: NgramIndex) -> None:
        names, of = _number_groups(index)
        of.setflags(write=False)
        self.names: list[str] = names
        self.of = of
        self.n_groups = len(names)
        self.own = self.n_groups == len(of)  # distinct ordinals in first-seen order: 0..n-1
        self.in_order = self.own or bool(np.all(of[1:] >= of[:-1]))
        self._lock = threading.Lock()
        self._ordinal: dict[str, int] | None = None
        self._found: dict[str, int | None] = {}
        self._name_rank: np.ndarray | None = None
        self._by_group: tuple[np.ndarray, np.ndarray] | None = None

    def find(self, name: str) -> int | None:
        """The ordinal of group ``name`` (None when there is none).  The first few names
        asked are searched for (a run asks about one source at a time); after
        :data:`FIND_BEFORE_TABLE` of them, a table of every name is made."""
        got = self._ordinal
        if got is not None:
            return got.get(name)
        with self._lock:
            if name in self._found:
                return self._found[name]
            if len(self._found) < FIND_BEFORE_TABLE:
                try:
                    at: int | None = self.names.index(name)
                except ValueError:
                    at = None
                self._found[name] = at
                return at
            self._ordinal = {g: i for i, g in enumerate(self.names)}
        return self._ordinal.get(name)

    @property
    def name_rank(self) -> np.ndarray:
        """Each ordinal's place among the names in code-point order (what ties between
        equal scores are broken by; made on first use)."""
        got = self._name_rank
        if got is None:
            order = sorted(range(self.n_groups), key=self.names.__getitem__)
            got = np.empty(self.n_groups, dtype=np.int64)
            got[np.asarray(order, dtype=np.int64)] = np.arange(self.n_groups, dtype=np.int64)
            got.setflags(write=False)
            self._name_rank = got
        return got

    def by_group(self) -> tuple[np.ndarray, np.ndarray]:
        """``(docs, starts)``: the documents sorted by group (ascending within one), and
        where each group's run starts (``n_groups + 1`` entries, the last ``n_docs``)."""
        with self._lock:
            got = self._by_group
            if got is None:
                n = len(self.of)
                docs = (np.arange(n, dtype=np.int64) if self.in_order
                        else np.argsort(self.of, kind="stable"))
                starts = np.searchsorted(self.of[docs], np.arange(self.n_groups + 1))
                for a in (docs, starts):
                    a.setflags(write=False)
                got = self._by_group = (docs, starts)
        return got

    def docs_of(self, gi: int) -> list[int]:
        """Group ``gi``'s document ordinals, ascending."""
        docs, starts = self.by_group()
        return docs[starts[gi]:starts[gi + 1]].tolist()

    def group_max(self, doc_scores: np.ndarray) -> np.ndarray:
        """``(rows, n_groups)``: each group's best document score, per row of
        ``doc_scores`` (``(rows, n_docs)``).  Where each document is its own group this is
        ``doc_scores`` itself, read-only; where documents come group by group, no copy
        sorts them first."""
        if not len(doc_scores):
            return np.zeros((0, self.n_groups))
        if self.own:
            out = doc_scores.view()
            out.setflags(write=False)
            return out
        docs, starts = self.by_group()
        src = doc_scores if self.in_order else doc_scores[:, docs]
        return np.maximum.reduceat(src, starts[:-1], axis=1)


def _number_groups(index: NgramIndex) -> tuple[list[str], np.ndarray]:
    """:class:`GroupTable`'s names and each document's ordinal."""
    n = index.n_docs
    stored = index.group_of
    names = index.group_ids if stored is not None else None
    if stored is not None and names is not None:
        gof = np.asarray(stored, dtype=np.int64)
        if n:
            nums, first = np.unique(gof, return_index=True)
            seq = nums[np.argsort(first, kind="stable")]  # stored numbers by first document
        else:
            seq = np.empty(0, dtype=np.int64)
        got = [names[g] for g in seq.tolist()]
        if len(set(got)) == len(got):
            if np.array_equal(seq, np.arange(len(seq))):
                return got, gof.copy()
            remap = np.zeros(int(seq.max()) + 1 if len(seq) else 0, dtype=np.int64)
            remap[seq] = np.arange(len(seq), dtype=np.int64)
            return got, remap[gof]
    elif stored is None:
        ids = index.doc_ids
        if len(set(ids)) == len(ids):
            return list(ids), np.arange(n, dtype=np.int64)
    groups = index.doc_groups
    ordinal: dict[str, int] = {}
    of = np.fromiter((ordinal.setdefault(g, len(ordinal)) for g in groups), dtype=np.int64,
                     count=len(groups))
    return list(ordinal), of


_TABLES: weakref.WeakKeyDictionary[NgramIndex, GroupTable] = weakref.WeakKeyDictionary()
_TABLES_LOCK = threading.Lock()


def group_table(index: NgramIndex) -> GroupTable:
    """The :class:`GroupTable` of ``index``, made on first use in this process."""
    with _TABLES_LOCK:
        got = _TABLES.get(index)
        if got is None:
            got = _TABLES[index] = GroupTable(index)
    return got

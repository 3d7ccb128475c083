"""What :mod:`~presidio_delink.index.segment_reader` reads of the segments past their
stored keys: the small segments' table of N-grams, the differences of two views' tables, a
document's words matched in place, a walk's rows, and the segments' groups merged.

**The small segments' table.**  A segment of few words is read as one dictionary of all
its N-grams (1..``max_n`` words) and their posting lists, made on first use: a look-up
is one dictionary read instead of a trie walk per segment (:func:`small_table`).

**Differences of two views' tables** (:func:`table_differences`).  The keys whose posting
lists differ between the tables of a view and of the view it is stored over: a query
none of whose word-prefixes is one of them reads the same lists from both tables, which
is what lets a view over segments reuse the other view's answers (see
:meth:`~presidio_delink.index.segment_reader.SegmentedView.differing`).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from itertools import chain

import numpy as np

from presidio_delink.index.ngram_index import NgramIndex
from presidio_delink.index.view_index import ViewIndex, _Hits


def small_table(
    views: Sequence[ViewIndex], bases: Sequence[int], counted: Sequence[bool]
) -> dict[str, list[int]]:
    """Every N-gram (1..max_n words) of the segments ``views[s]`` with ``counted[s]``,
    with its posting list over them (global ordinals: segment ``s`` starts at
    ``bases[s]``; ascending)."""
    got: dict[str, list[int]] = {}
    for s, v in enumerate(views):
        if not counted[s]:
            continue
        base = int(bases[s])
        for d, words in enumerate(_all_doc_words(v)):
            for key in _ngrams(words, v.max_n):
                lst = got.get(key)
                if lst is None:
                    got[key] = [base + d]
                else:
                    lst.append(base + d)
    return got


def patched_table(
    views: Sequence[ViewIndex], bases: Sequence[int], counted: Sequence[bool],
    others: Sequence[ViewIndex], other_table: dict[str, list[int]],
) -> tuple[dict[str, list[int]], set[str]]:
    """:func:`small_table` of ``views``, made from ``other_table``, the table of the same
    segments' views ``others``: only the documents whose words differ between the two
    views are read again (views of one collection mostly agree).  Also returns the keys
    whose lists differ between the two tables (:func:`table_differences`' keys).

    A key's list differs exactly where some document holds the key in one view and not
    in the other: each such document is taken out of, or put into, the key's list (a copy:
    the other table's lists are shared, never changed)."""
    got = dict(other_table)
    copied: set[str] = set()
    changed: set[str] = set()
    for s, (v, o) in enumerate(zip(views, others, strict=True)):
        if not counted[s]:
            continue
        base = int(bases[s])
        for d, (words, theirs) in enumerate(zip(_all_doc_words(v), _all_doc_words(o),
                                                strict=True)):
            if words == theirs:
                continue
            mine, old = _ngrams(words, v.max_n), _ngrams(theirs, o.max_n)
            doc = base + d
            for key in old - mine:
                lst = got[key]
                if len(lst) == 1:
                    del got[key]
                    continue
                if key not in copied:
                    lst = got[key] = list(lst)
                    copied.add(key)
                lst.remove(doc)
            for key in mine - old:
                lst_new = got.get(key)
                if lst_new is None:
                    got[key] = [doc]
                    copied.add(key)
                    continue
                if key not in copied:
                    lst_new = got[key] = list(lst_new)
                    copied.add(key)
                bisect.insort(lst_new, doc)
            changed |= mine ^ old
    return got, changed


def table_differences(
    mine: dict[str, list[int]], other: dict[str, list[int]]
) -> tuple[set[str], set[str]]:
    """The keys whose lists differ between two tables (a key absent from one differs when
    the other holds it), and the first words of those keys."""
    keys = {k for k, lst in mine.items() if other.get(k) != lst}
    keys.update(k for k in other if k not in mine)
    return keys, {k.split(" ", 1)[0] for k in keys}


def prefix_in(
    key: str, upto: int, diff_keys: set[str], diff_first: set[str],
    tables: tuple[dict[str, list[int]], dict[str, list[int]]],
) -> bool:
    """Whether a word-prefix of ``key`` of at most ``upto`` words is in ``diff_keys``
    (``diff_first``: their first words).  ``tables``: the two tables compared (a
    differing key is in one of them, and no longer prefix is in either once a prefix is
    not)."""
    cut = key.find(" ")
    if (key if cut < 0 else key[:cut]) not in diff_first:
        return False
    mine, theirs = tables
    prefix = ""
    for m, w in enumerate(key.split(" ", upto)[:upto]):
        prefix = w if m == 0 else prefix + " " + w
        if prefix in diff_keys:
            return True
        if prefix not in mine and prefix not in theirs:
            return False
    return False


def tail_in(key: str, good: int, diff_keys: set[str]) -> bool:
    """Whether the tail ``w[1:m]`` of the key's prefix of ``m = good + 1`` words is in
    ``diff_keys``."""
    return bool(diff_keys) and " ".join(key.split(" ", good + 1)[1 : good + 1]) in diff_keys


def rows_of(h: _Hits, lengths: Sequence[int]) -> tuple[list[list[int]], list[bool]]:
    """:meth:`ViewIndex.walk_keys`'s rows at threshold 1 from its walk's hits ``h``, and
    per row whether it ends at a tombstone (there, its entry is not None)."""
    dfs: list[int] = h.dfs.tolist()
    rows: list[list[int]] = []
    tombs: list[bool] = []
    for n_words, a, c, f in zip(
        lengths, h.start.tolist(), h.count.tolist(), h.first_low.tolist(), strict=True
    ):
        if f >= 0:
            rows.append(dfs[a : f + 1])
            tombs.append(True)
        else:
            row = dfs[a : a + c]
            if c < n_words:
                row.append(0)  # not stored
            rows.append(row)
            tombs.append(False)
    return rows, tombs


def values_between(
    rows: list[list[int]], below: int, settled: int, h: _Hits
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The values of ``rows`` (a walk's, from the hits ``h`` of its one walked segment)
    in ``below..settled - 1``, found over all rows at once: each one's row, index in its
    row, hit, and whether that hit is the segment's stored key there (df above 0)."""
    sizes = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    flat = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=int(sizes.sum()))
    at = np.flatnonzero((flat >= below) & (flat < settled))
    row_at = np.cumsum(sizes) - sizes
    qs = np.searchsorted(row_at, at, side="right") - 1
    ns = at - row_at[qs]
    js = h.start[qs] + ns
    stored = ns < h.count[qs]
    stored[stored] = h.dfs[js[stored]] > 0
    return qs, ns, js, stored


def _n_docs(view: ViewIndex) -> int:
    return int(view.docs.starts[-1] + len(view.docs.doc_starts[-1]) - 1)


def _all_doc_words(view: ViewIndex) -> Iterator[list[str | None]]:
    """Each document's words of one segment's view, as ``ViewIndex._doc_words`` gives
    them (None where the view breaks), each distinct word id restored once."""
    docs = view.docs
    v = docs.n_vocab
    cross = not view.tokenizer.break_on_punctuation
    n = _n_docs(view)
    ids = [docs.doc_ids(d).tolist() for d in range(n)]
    known: dict[int, str] = {}
    for t in {t for doc in ids for t in doc if t < v}:
        known[t] = docs.word(t)
    for doc in ids:
        out: list[str | None] = []
        for t in doc:
            if t < v:
                out.append(known[t])
            elif (t == v or not cross) and out and out[-1] is not None:
                out.append(None)
        yield out


def _ngrams(words: list[str | None], mx: int) -> set[str]:
    """Every N-gram key (1..``mx`` words) of one document's words (None: a break)."""
    got: set[str] = set()
    seg: list[str] = []
    for w in [*words, None]:
        if w is not None:
            seg.append(w)
            continue
        for i in range(len(seg)):
            key = ""
            for j in range(i, min(i + mx, len(seg))):
                key = seg[j] if j == i else key + " " + seg[j]
                got.add(key)
        seg = []
    return got


def merge_groups(segs: Sequence[NgramIndex]) -> tuple[np.ndarray, list[str]] | None:
    """Each document's group over all segments, groups matched by name and numbered by
    their first document; None when no segment has groups."""
    if all(s.group_of is None for s in segs):
        return None
    number: dict[str, int] = {}
    parts = []
    for s in segs:
        names = s.doc_groups
        parts.append(np.fromiter((number.setdefault(g, len(number)) for g in names),
                                 dtype=np.int64, count=len(names)))
    return np.concatenate(parts), list(number)

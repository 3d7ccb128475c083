"""One index over several segments: what a reader of a grown index sees.

``index add`` writes each batch of documents as a *segment*: a complete index directory
over those documents alone, with the settings of the first (see
:mod:`~presidio_delink.index.segments`).  :class:`SegmentedIndex` presents the segments
as one :class:`~presidio_delink.index.ngram_index.NgramIndex`: documents are numbered
segment after segment, and every answer is the answer of one index built over all the
documents in that order.

**Counts.**  Segments hold disjoint documents, so an N-gram's document frequency is the
sum of its segments' frequencies, and its posting list their concatenation (each offset
by the documents before its segment).  Groups are matched by name: a group present in
several segments is one group, numbered where its first document is (as a build numbers
groups), so group counts and the combination checks count it once.

**Walks.**  The detector's prefix walk (:meth:`SegmentedView.walk_keys`) reports, like a
single index, each prefix's document frequency up to the first one below the threshold, and
0 for a prefix that a single index over all documents would not store (the storage rule
of :mod:`~presidio_delink.index.shard`).  While a walk goes on, every earlier prefix has
a frequency of at least the threshold (>= 2), so the prefix ``w[:m]`` is stored in the
whole collection exactly when ``w[1:m]`` occurs in at least two documents; the walk
reports 1 only then.  A segment reports its stored prefixes; past them its frequency is
0 or 1, which is looked up exactly where the sum needs it.  The small segments (at most
:data:`COUNTED_WORDS` words each) are read as one table (:func:`~.segment_table.small_table`).

**Walks in groups, and entries.**  When the first segment is the only one walked (the
others are small), a walk keeps that segment's hits.  A prefix it stores that no small
segment holds has its documents there alone: its group count is that segment's, counted
for all such prefixes of a walk at once from their stored entries, as one index counts
its own (:meth:`ViewIndex._group_counts`); any other prefix is looked up by its words.  A
flagged N-gram of that kind keeps its stored entry: its documents are read from there.

**Walking only what differs.**  A check's view ``V`` stored over ``P`` in the first segment
takes ``P``'s answer to a query ``P`` was asked (:class:`~presidio_delink.linkage_queries.Shared`)
unless :meth:`~SegmentedView.differing` or :meth:`~SegmentedView.walk_again` names it.
A row's value at ``w[:m]`` is the first segment's stored frequency plus the length of the
small segments' list; its group count reads the same stored entry and list.  Where ``V``'s
first segment has no own entry that is a word-prefix of the key
(:meth:`ViewIndex.differing`: the stored hits are ``P``'s) and the two views'
small-segment lists of every word-prefix the answer read agree
(:func:`~.segment_table.table_differences`), an answer that read nothing else is ``V``'s
too (``READ_PREFIXES``).  An answer that also read whether the small segments hold
``w[1:m]``, the storage rule cutting the row at ``w[:m]`` (``READ_TAIL``), is ``V``'s where
the two lists of ``w[1:m]`` agree.  Any other answer (a look-up by words, a sub-N-gram's
frequency) is walked again.

**Word ids.**  :meth:`SegmentedView.doc_word_ids` numbers words over all segments: the
first segment's ids as they are, then each word the first segment lacks after them, so
that one word has one id (what the ranked readings count by).

Cost: a walk reads every segment; one compacted index (``index compact``) checks faster.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import ConfigError, IndexFormatError
from presidio_delink.index.format import SEGMENTS_FILE, write_private
from presidio_delink.index.ngram_index import NgramIndex
from presidio_delink.index.segment_table import (
    merge_groups,
    patched_table,
    prefix_in,
    rows_of,
    small_table,
    table_differences,
    tail_in,
    values_between,
)
from presidio_delink.index.view_index import (
    GroupCut,
    KeyWalk,
    Lows,
    ViewIndex,
    _Hits,
    _reads_hits,
    cut_by_lookup,
)

#: ``Lows.by_prefix`` codes (see the module docstring): the answer read more; its key's
#: word-prefixes only; those and the small segments' ``w[1:m]`` (a row cut at ``w[:m]``).
READ_MORE, READ_PREFIXES, READ_TAIL = 0, 1, 2
COUNTED_WORDS = 30_000
"""A segment of at most this many words is read as a table of its N-grams' postings."""
_EMPTY = np.empty(0, dtype=np.int64)


class SegmentedView(ViewIndex):
    """One view over several segments' views of the same name (see the module docstring)."""

    CUTS_GROUPS = True  # its walk takes ``groups`` (see view_index._reads_hits)

    def __init__(
        self, views: Sequence[ViewIndex], bases: Sequence[int], counted: Sequence[bool]
    ) -> None:
        first = views[0]
        super().__init__(
            first.name, first.tokenizer, first.parts, first.docs, sum(v.n_keys for v in views)
        )
        self.segs = list(views)
        self.bases = np.asarray(bases, dtype=np.int64)  # first ordinal of each segment
        self._base_list: list[int] = self.bases.tolist()
        self._counted = list(counted)
        self._walked = [s for s, c in enumerate(counted) if not c]
        # the walked segments' documents all come before the small ones': no sort needed
        self._ordered = all(not c for c in counted[: len(self._walked)])
        self._postings: dict[str, list[int]] | None = None
        self._memo: dict[str, np.ndarray] = {}  # flagged N-grams of recent walks
        self._wid_map: dict[int, np.ndarray] = {}
        self._extra: dict[str, int] = {}  # words the first segment lacks -> global id
        self._extra_words: list[str] = []
        # per other view's name: keys whose small-segment lists differ, and their first words
        self._diffs: dict[str, tuple[set[str], set[str]]] = {}
        self.parent: SegmentedView | None = None  # the view :meth:`over` which this one is

    def stored_over(self, other: ViewIndex) -> bool:
        """Whether the first segment's view is stored over ``other``'s, the first
        segment the only one walked in both: its layers then memoise that walk (each
        other segment's layers are its own, and memoise nothing across views)."""
        return (isinstance(other, SegmentedView) and self._walked == [0] == other._walked
                and self.segs[0].stored_over(other.segs[0]))

    def over(self, other: ViewIndex) -> bool:
        """Whether both are views of one index over segments, only its first walked, this
        view stored directly over ``other`` there (see :meth:`differing`)."""
        return (
            isinstance(other, SegmentedView)
            and self._walked == [0]
            and other._walked == [0]
            and self._base_list == other._base_list
            and self._counted == other._counted
            and self.segs[0].over(other.segs[0])
        )

    def differing(self, other: ViewIndex, keys: Sequence[str]) -> list[int] | None:
        """The positions of ``keys`` where the first segment's stored hits differ from
        ``other``'s, or None unless :meth:`over`; the caller also walks
        :meth:`walk_again`'s (see the module docstring)."""
        if not (isinstance(other, SegmentedView) and self.over(other)):
            return None
        return self.segs[0].differing(other.segs[0], keys)

    def walk_again(
        self, other: SegmentedView, keys: Sequence[str], read: np.ndarray, good: np.ndarray
    ) -> list[int]:
        """The positions of ``keys`` (none :meth:`differing`) whose answers in ``other``
        read what they may not share: more than their word-prefixes, or a small-segment
        list that differs between the two views.  ``read`` and ``good`` are those
        answers' ``Lows.by_prefix`` codes and ``Lows.good`` (see the module docstring)."""
        diff_keys, diff_first = self._differences(other)
        tables = self._table(), other._table()
        return [
            i for i, (key, code, g) in enumerate(zip(keys, read.tolist(), good.tolist(),
                                                     strict=True))
            if code == READ_MORE or diff_keys and (
                key.partition(" ")[0] in diff_first  # (a differing prefix's first word)
                and prefix_in(key, g + 1, diff_keys, diff_first, tables)
                or code == READ_TAIL and tail_in(key, g, diff_keys))
        ]

    def _differences(self, other: SegmentedView) -> tuple[set[str], set[str]]:
        """:func:`table_differences` of the two views' small-segment tables, remembered
        (the parent's are found as this view's table is made from it)."""
        table = self._table()
        if other.name not in self._diffs:
            self._diffs[other.name] = table_differences(table, other._table())
        return self._diffs[other.name]

    def _seg_of(self, ordinal: int) -> tuple[int, int]:
        s = int(np.searchsorted(self.bases, ordinal, side="right")) - 1
        if s < 0 or ordinal < 0:
            raise IndexError(f"document ordinal {ordinal} out of range")
        return s, ordinal - int(self.bases[s])

    # -- the small segments ----------------------------------------------------------------
    def _table(self) -> dict[str, list[int]]:
        """Every N-gram (1..max_n words) of the small segments, with its posting list
        over them (global ordinals, ascending); made from the parent's where there is one."""
        got, p = self._postings, self.parent
        if got is not None:
            return got
        if p is None:
            got = self._postings = small_table(self.segs, self._base_list, self._counted)
            return got
        got, diff = patched_table(self.segs, self._base_list, self._counted, p.segs, p._table())
        self._postings, self._diffs[p.name] = got, (diff, {k.split(" ", 1)[0] for k in diff})
        return got

    # -- look-ups ---------------------------------------------------------------------
    def _seg_lookup(self, s: int, words: Sequence[str], key: str | None = None) -> np.ndarray:
        """Segment ``s``'s documents (its own ordinals) holding the N-gram ``words``
        (``key``: the words joined by one space, when known).

        As the segment's own look-up, but an N-gram the segment does not store (df 0 or 1
        there) is verified in the one candidate document by matching its word ids (a walk
        over several segments asks this for most prefixes it reaches, each in another
        document, so the segment's cache of whole documents' N-grams would not hold)."""
        v = self.segs[s]
        part = v.part(words[0])
        h = part.get(" ".join(words) if key is None else key)
        if h is not None:
            return part.postings_of(h)
        if len(words) > v.max_n:
            return v.lookup(words)
        wit = v._witness(tuple(words))
        if wit is None:
            return _EMPTY
        ids = [v.docs.word_id(w) for w in words]
        seq = [x for x in ids if x is not None]
        if len(seq) < len(ids):
            return _EMPTY
        d = int(v.parts[wit[0]].postings_of(wit[1])[0])
        return np.array([d], np.int64) if v.holds(d, seq) else _EMPTY

    def _seg_df(self, s: int, words: Sequence[str]) -> int:
        v = self.segs[s]
        part = v.part(words[0])
        h = part.get(" ".join(words))
        return part.df_of(h) if h is not None else len(self._seg_lookup(s, words))

    def lookup(self, words: Sequence[str]) -> np.ndarray:
        if not words:
            return _EMPTY
        key = " ".join(words)
        if self._memo:
            got_memo = self._memo.get(key)
            if got_memo is not None:
                return got_memo
        bases = self._base_list
        got = []
        for s in self._walked:
            x = self._seg_lookup(s, words, key)
            if len(x):
                got.append(x + bases[s] if bases[s] else x)
        if len(self._walked) < len(self.segs):
            if len(words) <= self.max_n:
                small = self._table().get(key)
                if small:
                    got.append(np.asarray(small, dtype=np.int64))
            else:
                for s, c in enumerate(self._counted):
                    x = self._seg_lookup(s, words, key) if c else _EMPTY
                    if len(x):
                        got.append(x + bases[s])
        if len(got) < 2:  # a copy: a segment's postings may be its mapped file
            return np.array(got[0], dtype=np.int64) if got else _EMPTY
        out = np.concatenate(got).astype(np.int64, copy=False)
        return out if self._ordered else np.sort(out)

    def group_count(self, words: Sequence[str], group_of: list[int]) -> int:
        """:meth:`lookup`'s documents' distinct groups, counted without building its
        array: a walked segment's stored key read as its remembered tuple of documents
        (:meth:`~presidio_delink.index.shard.Layered.docs_of`)."""
        if not words or len(words) > self.max_n:
            return super().group_count(words, group_of)
        key = " ".join(words)
        found: set[int] = set()
        for s in self._walked:
            part = self.segs[s].part(words[0])
            h = part.get(key)
            base = self._base_list[s]
            docs = (part.docs_of(h) if h is not None
                    else self._seg_lookup(s, words, key).tolist())
            found.update(group_of[base + d] for d in docs)
        if len(self._walked) < len(self.segs):
            found.update(group_of[d] for d in self._table().get(key, ()))
        return len(found)

    def df_words(self, words: Sequence[str]) -> int:
        if not words:
            return 0
        n = sum(self._seg_df(s, words) for s in self._walked)
        if len(self._walked) < len(self.segs):
            if len(words) <= self.max_n:
                n += len(self._table().get(" ".join(words), ()))
            else:
                n += sum(len(self._seg_lookup(s, words))
                         for s, c in enumerate(self._counted) if c)
        return n

    def walk_keys(
        self,
        keys: Sequence[str],
        lengths: Sequence[int],
        below: int,
        extends: Sequence[str] | None = None,
        groups: GroupCut | None = None,
    ) -> tuple[list[list[int]], list[tuple[int, int] | None]]:
        """:meth:`ViewIndex.walk_keys` over every segment (see the module docstring).
        Entries are None: a flagged N-gram's documents are looked up again.  ``groups``:
        each row is then cut where a value in ``below..settled - 1`` is below ``below``
        in groups (:meth:`_cut_in_groups`)."""
        rows, entries, _ = self._walk(keys, lengths, below, groups, extends)
        return rows, entries

    def _walk(
        self, keys: Sequence[str], lengths: Sequence[int], below: int, groups: GroupCut | None,
        extends: Sequence[str] | None = None,
    ) -> tuple[list[list[int]], list[tuple[int, int] | None], list[int]]:
        """:meth:`walk_keys`, and per query what its answer read (``READ_*``: see the
        module docstring; ``READ_MORE`` wherever more than the first segment is walked).
        ``extends`` (see :meth:`stored_over`) serves the first segment's walk alone."""
        walked = self._walked
        table = self._table() if len(walked) < len(self.segs) else {}
        hits = None
        seg_rows: dict[int, tuple[list[list[int]], Sequence[object]]]
        if walked == [0] and _reads_hits(self.segs[0]):
            # the one walked segment's hits are kept: the group cut reads their handles
            hits = self.segs[0]._walk_hits(keys, 1, extends)
            seg_rows = {walked[0]: rows_of(hits, lengths)}
        else:
            seg_rows = {s: self.segs[s].walk_keys(keys, lengths, 1) for s in walked}
        n_walked = len(walked)
        if len(self._memo) > 100_000:
            self._memo.clear()
        out: list[list[int]] = []
        entries: list[tuple[int, int] | None] = []
        clean: list[int] = []
        rows0, last0 = seg_rows[walked[0]] if n_walked == 1 else ([], [])
        if hits is not None:
            hl, start, part = hits.handles, hits.start.tolist(), hits.part.tolist()
        for q, key in enumerate(keys):
            n = lengths[q]
            if n_walked == 1:
                row1, own, by_prefix = self._row_one(
                    key, n, rows0[q], bool(last0[q]), below, table)
                out.append(row1)
                clean.append(by_prefix)
                # flagged where the walked segment alone stores it: its stored entry
                entries.append((part[q], hl[start[q] + len(row1) - 1])
                               if own and hits is not None else None)
                continue
            words = key.split(" ")
            # per walked segment: its stored prefixes' values, and from where it is 0
            stored: list[list[int]] = []
            zero_from: list[int] = []
            for s in walked:
                rows, last = seg_rows[s]
                r = rows[q]
                if last[q] is not None:  # a tombstone: 0 from there on
                    stored.append(r[:-1])
                    zero_from.append(len(r))
                elif r and r[-1] == 0:  # not stored from there on: 0 or 1 each
                    stored.append(r[:-1])
                    zero_from.append(n + 1 if len(r) > 1 else 1)
                else:
                    stored.append(r)
                    zero_from.append(n + 1)
            row: list[int] = []
            prefix = ""
            for m in range(1, n + 1):
                prefix = words[0] if m == 1 else prefix + " " + words[m - 1]
                small = table.get(prefix)
                g = len(small) if small else 0
                found: dict[int, np.ndarray] = {}
                unknown = [i for i in range(n_walked)
                           if len(stored[i]) < m < zero_from[i]]
                for i in range(n_walked):
                    if m <= len(stored[i]):
                        g += stored[i][m - 1]
                if unknown:
                    if (
                        n_walked == 1 and g == 0 and m >= 2 and len(stored[0]) == m - 1
                        and stored[0][-1] >= 2 and not table.get(prefix[len(words[0]) + 1:])
                    ):
                        # The one walked segment does not store w[:m] though it stores
                        # w[:m-1] in >= 2 documents: w[1:m] is in <= 1 of its documents
                        # and in none elsewhere, so a single index does not store w[:m].
                        row.append(0)
                        break
                    for i in unknown:
                        found[i] = got = self._seg_lookup(walked[i], words[:m])
                        g += len(got)
                        if len(got) == 0:
                            zero_from[i] = m  # a longer prefix cannot occur either
                if m >= 2 and g == 1 and self.df_words(words[1:m]) < 2:
                    g = 0  # a single index over all documents does not store it
                row.append(g)
                if g < below:
                    if g:  # flagged: keep its documents for the look-up that follows
                        parts = [
                            (found[i] if i in found else self._seg_lookup(s, words[:m]))
                            + int(self.bases[s])
                            for i, s in enumerate(walked) if i in found or m <= len(stored[i])
                        ]
                        if small:
                            parts.append(np.asarray(small, dtype=np.int64))
                        out_m = np.concatenate(parts).astype(np.int64)
                        self._memo[prefix] = np.sort(out_m) if len(parts) > 1 else out_m
                    break
            out.append(row)
            entries.append(None)
            clean.append(READ_MORE)
        if groups is not None:
            # a cut reads the group counts of a row's prefixes: their stored entries and
            # small-segment lists, so a row read by its prefixes alone stays so
            self._cut_in_groups(keys, lengths, below, out, entries, groups, hits)
        return out, entries, clean

    def _cut_in_groups(
        self, keys: Sequence[str], lengths: Sequence[int], below: int,
        rows: list[list[int]], last: list[tuple[int, int] | None], groups: GroupCut,
        hits: _Hits | None,
    ) -> None:
        """Cut ``rows`` in place where a value in ``below..settled - 1`` is below ``below``
        in groups, as :func:`~presidio_delink.index.view_index.cut_by_lookup` does.

        With one walked segment (``hits``: its walk), a prefix that segment stores and the
        small segments lack has that segment's documents only, so its group count is the
        segment's own: those are counted together from the stored entries' handles
        (:meth:`ViewIndex._group_counts`, one pass per stored layer).  Any other prefix
        is looked up by its words (:meth:`group_count`), only where its row reaches it."""
        if hits is None:
            cut_by_lookup(self, KeyWalk(keys, lengths, below), rows, last, groups)
            return
        settled = groups.settled
        table = self._table() if len(self._walked) < len(self.segs) else {}
        v0 = self.segs[self._walked[0]]
        part = hits.part.tolist()
        qs, ns, js, stored = values_between(rows, below, settled, hits)
        cands: list[tuple[int, int, str, int]] = []  # (query, index in row, key, hit or -1)
        split: tuple[int, list[str]] = (-1, [])
        for q, n, j, st in zip(qs.tolist(), ns.tolist(), js.tolist(), stored.tolist(),
                               strict=True):
            if split[0] != q:
                split = q, keys[q].split(" ")
            key = " ".join(split[1][: n + 1])
            cands.append((q, n, key, j if st and key not in table else -1))
        fast_at = [i for i, c in enumerate(cands) if c[3] >= 0]
        counted: dict[int, int] = {}
        if fast_at:
            hl = hits.handles
            # the walked segment is the first: its ordinals are global, its stored
            # layers its own (their counts are kept in `known` with the other views')
            base_cut = GroupCut(groups.group_of, settled, groups.known)
            got = v0._group_counts(
                np.fromiter((part[cands[i][0]] for i in fast_at), np.int64, len(fast_at)),
                np.fromiter((hl[cands[i][3]] for i in fast_at), np.int64, len(fast_at)),
                base_cut,
            )
            counted = dict(zip(fast_at, got.tolist(), strict=True))
        group_list = groups.group_list()
        done = -1  # the query last cut: its later candidates are past its end
        for i, (q, n, key, _) in enumerate(cands):
            if q == done:
                continue
            g = counted.get(i)
            if g is None:
                g = self.group_count(key.split(" "), group_list)
            if g < below:
                row = rows[q]
                row[n] = g
                del row[n + 1 :]
                last[q] = None
                done = q

    def _row_one(
        self, key: str, n: int, r: list[int], tomb: bool, below: int,
        table: dict[str, list[int]],
    ) -> tuple[list[int], bool, int]:
        """:meth:`walk_keys`'s row of one query with one walked segment, from that
        segment's row ``r`` (its walk to the end; ``tomb``: ending at a tombstone);
        whether its last value is flagged (below ``below``, not 0) with all its documents
        in a key the walked segment stores (none in the small segments); and what the row
        read (``READ_*``): ``READ_PREFIXES`` when nothing but the walked segment's stored
        entries of the key's word-prefixes (``r``, no tombstone) and the small segments'
        lists of those prefixes (no look-up by words, no sub-N-gram's frequency)."""
        exact = len(r) if tomb or r[-1] != 0 else len(r) - 1  # values r[:exact] are exact
        zero_from = len(r) if tomb else (n + 1 if exact else 1)
        words = key.split(" ")
        row: list[int] = []
        by_prefix = not tomb  # (a tombstone's prefix is looked up by words in a group cut)
        in_table = True  # no longer prefix is in the small segments once one is not
        prefix = ""
        for m in range(1, n + 1):
            small = None
            if in_table:
                prefix = words[0] if m == 1 else prefix + " " + words[m - 1]
                small = table.get(prefix)
                in_table = small is not None
            g = len(small) if small else 0
            found = None
            if m <= exact:
                g += r[m - 1]
                if g >= below:
                    row.append(g)
                    continue
            elif m < zero_from:  # not stored in the segment: in 0 or 1 of its documents
                if (
                    g == 0 and m >= 2 and exact == m - 1 and r[m - 2] >= 2
                    and " ".join(words[1:m]) not in table
                ):
                    # It stores w[:m-1] in >= 2 documents but not w[:m]: w[1:m] is in <= 1
                    # of its documents and in none of the small segments, so a single
                    # index does not store w[:m].
                    row.append(0)
                    return row, False, READ_TAIL if by_prefix else READ_MORE
                found = self._seg_lookup(self._walked[0], words[:m])
                g += len(found)
                if not len(found):
                    zero_from = m
            # (A key the walked segment stores with df >= 1 has every proper sub-N-gram
            # in >= 2 of its documents: so has one index over all of them.)
            if m >= 2 and g == 1 and not (m <= exact and r[m - 1]):
                by_prefix = False  # w[1:m]'s frequency decides
                if self._under_two(words[1:m], table):
                    g = 0  # a single index over all documents does not store it
            row.append(g)
            if g < below:
                if g and found is not None:
                    # flagged, and found by matching words: keep its documents for the
                    # look-up that follows (one the segment stores is read from there
                    # as cheaply as here, and most flagged ones are never looked up)
                    parts = [found + int(self.bases[self._walked[0]])]
                    if small:
                        parts.append(np.asarray(small, dtype=np.int64))
                    got = np.concatenate(parts).astype(np.int64, copy=False)
                    self._memo[" ".join(words[:m])] = got if self._ordered else np.sort(got)
                return (row, bool(g) and m <= exact and not small,
                        READ_PREFIXES if by_prefix and m <= exact else READ_MORE)
        return row, False, READ_PREFIXES if by_prefix and n <= exact else READ_MORE

    def _under_two(self, words: list[str], table: dict[str, list[int]]) -> bool:
        """Whether ``df_words(words) < 2`` with one walked segment (``table``: the small
        segments'), reading no more than that needs: a key the walked segment does not
        store is in at most one of its documents, looked up only where it decides."""
        if len(words) > self.max_n:
            return self.df_words(words) < 2
        key = " ".join(words)
        small = table.get(key)
        t = len(small) if small else 0
        if t >= 2:
            return False
        s = self._walked[0]
        part = self.segs[s].part(words[0])
        h = part.get(key)
        if h is not None:
            return part.df_of(h) + t < 2
        return t == 0 or not len(self._seg_lookup(s, words, key))

    def walk_lows(
        self,
        keys: Sequence[str],
        lengths: Sequence[int],
        below: int,
        extends: Sequence[str] | None = None,
        groups: GroupCut | None = None,
    ) -> Lows:
        rows, entries, clean = self._walk(keys, lengths, below, groups, extends)
        lows = Lows.of_rows(rows, entries, below)
        lows.by_prefix = np.fromiter(clean, dtype=np.int8, count=len(clean))
        return lows

    def docs_at(self, entry: tuple[int, int]) -> tuple[int, ...]:
        """Documents of a walk's entry: one names a key the first segment stores, whose
        ordinals are global (a walk gives one only where no other segment holds it)."""
        if self._walked != [0]:
            raise IndexFormatError(
                "a walk over several large segments returns no stored entries; look the "
                "N-gram up")
        return self.segs[0].docs_at(entry)

    def iter_keys(self) -> Iterator[tuple[str, int]]:
        """Keys stored in any segment, each once, with its document frequency over all."""
        seen: set[str] = set()
        for v in self.segs:
            for key, _ in v.iter_keys():
                if key not in seen:
                    seen.add(key)
                    yield key, self.df_words(key.split(" "))

    # -- documents --------------------------------------------------------------------
    def doc_words(self, ordinal: int) -> list[str]:
        s, o = self._seg_of(ordinal)
        return self.segs[s].doc_words(o)

    def _doc_words(self, d: int) -> list[str | None]:
        s, o = self._seg_of(d)
        return self.segs[s]._doc_words(o)

    def doc_word_ids(self, ordinal: int) -> np.ndarray:
        s, o = self._seg_of(ordinal)
        ids = self.segs[s].doc_word_ids(o)
        return ids if s == 0 else self._global_ids(s)[ids]

    def word_of(self, wid: int) -> str:
        n0 = self.segs[0].docs.n_vocab
        return self.segs[0].word_of(wid) if wid < n0 else self._extra_words[int(wid) - n0]

    def _global_ids(self, s: int) -> np.ndarray:
        got = self._wid_map.get(s)
        if got is None:
            first, docs = self.segs[0].docs, self.segs[s].docs
            n0 = first.n_vocab
            got = np.empty(docs.n_vocab, dtype=np.int64)
            for w in range(docs.n_vocab):
                word = docs.word(w)
                g = first.word_id(word)
                if g is None:
                    g = self._extra.get(word)
                    if g is None:
                        g = self._extra[word] = n0 + len(self._extra_words)
                        self._extra_words.append(word)
                got[w] = g
            self._wid_map[s] = got
        return got


class SegmentedIndex(NgramIndex):
    """Several segments (index directories over disjoint documents, with the same
    settings) read as one index; see the module docstring.  Its ``readings`` are set by
    :func:`~presidio_delink.index.segments.open_index` from the count tables each part
    stores (:mod:`~presidio_delink.index.segment_readings`), or left None where a part
    lacks them: runs then build them in the process until ``index compact``."""

    def __init__(self, directory: Path, segments: Sequence[NgramIndex], key: bytes | None):
        segs = list(segments)
        first = segs[0]
        sizes = [s.n_docs for s in segs]
        bases = np.cumsum([0, *sizes[:-1]]).tolist()
        counted = [i > 0 and int(s.meta["n_words"]) <= COUNTED_WORDS
                   for i, s in enumerate(segs)]
        seg_views = [SegmentedView([s.views[name] for s in segs], bases, counted)
                     for name in first.views]
        for v in seg_views:
            v.parent = next((p for p in seg_views if p is not v and v.over(p)), None)
        views: dict[str, ViewIndex] = {v.name: v for v in seg_views}
        doc_ids = [x for s in segs for x in s.doc_ids]
        groups = merge_groups(segs)
        meta: dict[str, Any] = dict(first.meta)
        meta["n_docs"] = sum(sizes)
        meta["n_words"] = sum(int(s.meta["n_words"]) for s in segs)
        if groups is not None:
            sizes_g = np.bincount(groups[0], minlength=1)
            meta["groups"] = {"n_groups": len(groups[1]),
                              "max_group_size": int(sizes_g.max()), "dtype": "<u8",
                              "files": {}}
        else:
            meta["groups"] = None
        super().__init__(directory, meta, views, doc_ids, groups)
        self.segments = segs
        self.key = key
        self.readings = None

    @property
    def identity_file(self) -> Path:
        return self.directory / SEGMENTS_FILE

    def save(self, directory: str | Path) -> Path:
        """Copy the index, every segment listed, to ``directory`` (created; must be absent
        or empty); the list of segments is written last, so only a whole copy opens."""
        out = Path(directory)
        if out.exists() and any(out.iterdir()):
            raise ConfigError(f"index directory {out} is not empty")
        out.mkdir(parents=True, exist_ok=True, mode=0o700)
        listed = [s.directory for s in self.segments]
        for src in sorted(self.directory.rglob("*")):
            rel = src.relative_to(self.directory)
            top = self.directory / rel.parts[0]
            if rel.parts[0].startswith(".") or rel == Path(SEGMENTS_FILE) or (
                top.is_dir() and top not in listed and top.name.startswith(("seg-", "base-"))
            ):
                continue
            if src.is_dir():
                (out / rel).mkdir(mode=0o700, exist_ok=True)
            else:
                write_private(out / rel, src.read_bytes())
        write_private(out / SEGMENTS_FILE, (self.directory / SEGMENTS_FILE).read_bytes())
        return out

    def stats(self) -> dict[str, object]:
        per = [s.stats() for s in self.segments]
        # the first segment's directory is usually the index's own: its files are all
        size = (per[0]["bytes_on_disk"] if self.segments[0].directory == self.directory
                else sum(p.stat().st_size for p in self.directory.rglob("*") if p.is_file()))
        return {
            "n_docs": self.n_docs,
            "n_groups": self.n_groups,
            "max_group_size": self.max_group_size,
            "n_words": self.meta["n_words"],
            "max_n": self.max_n,
            "n_keys": sum(v.n_keys for v in self.views.values()),
            "segments": [
                {"directory": str(s.directory), "n_docs": p["n_docs"],
                 "n_words": p["n_words"], "bytes_on_disk": p["bytes_on_disk"]}
                for s, p in zip(self.segments, per, strict=True)
            ],
            "bytes_on_disk": size,
            # combined from each part's count tables (None: a part lacks them)
            "readings": None if self.readings is None else {
                "n_tables": len(self.readings.names), "combined_over_segments": True,
            },
        }

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
:data:`COUNTED_WORDS` words each) are instead read as one table of all their N-grams and
posting lists, made on first use, so that their look-ups cost one dictionary read (memory:
some hundred bytes per distinct N-gram of theirs).

**Walks in groups, and entries.**  When the first segment is the only one walked (the
others are small), a walk keeps that segment's hits.  A prefix it stores that no small
segment holds has its documents there alone: its group count is that segment's, counted
for all such prefixes of a walk at once from their stored entries, as one index counts
its own (:meth:`ViewIndex._group_counts`); any other prefix is looked up by its words.  A
flagged N-gram of that kind keeps its stored entry: its documents are read from there.

**Word ids.**  :meth:`SegmentedView.doc_word_ids` numbers words over all segments: the
first segment's ids as they are, then each word the first segment lacks after them, so
that one word has one id (what the ranked readings count by).

Cost: a walk reads every segment, so a collection of many segments is slower to check
than one compacted index (``index compact``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import ConfigError, IndexFormatError
from presidio_delink.index.format import SEGMENTS_FILE, write_private
from presidio_delink.index.ngram_index import NgramIndex
from presidio_delink.index.view_index import (
    GroupCut,
    KeyWalk,
    Lows,
    ViewIndex,
    _Hits,
    _reads_hits,
    cut_by_lookup,
)

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

    def stored_over(self, other: ViewIndex) -> bool:
        return False  # each segment's layers are its own: no walk is memoised across views

    def _seg_of(self, ordinal: int) -> tuple[int, int]:
        s = int(np.searchsorted(self.bases, ordinal, side="right")) - 1
        if s < 0 or ordinal < 0:
            raise IndexError(f"document ordinal {ordinal} out of range")
        return s, ordinal - int(self.bases[s])

    # -- the small segments ----------------------------------------------------------------
    def _table(self) -> dict[str, list[int]]:
        """Every N-gram (1..max_n words) of the small segments, with its posting list
        over them (global ordinals, ascending)."""
        if self._postings is None:
            got: dict[str, list[int]] = {}
            for s, v in enumerate(self.segs):
                if not self._counted[s]:
                    continue
                base = int(self.bases[s])
                for d, words in enumerate(_all_doc_words(v)):
                    for key in _ngrams(words, v.max_n):
                        lst = got.get(key)
                        if lst is None:
                            got[key] = [base + d]
                        else:
                            lst.append(base + d)
            self._postings = got
        return self._postings

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
        return np.array([d], np.int64) if _holds(v, d, seq) else _EMPTY

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
        walked = self._walked
        table = self._table() if len(walked) < len(self.segs) else {}
        hits = None
        seg_rows: dict[int, tuple[list[list[int]], Sequence[object]]]
        if walked == [0] and _reads_hits(self.segs[0]):
            # the one walked segment's hits are kept: the group cut reads their handles
            hits = self.segs[walked[0]]._walk_hits(keys, 1, None)
            seg_rows = {walked[0]: _rows_of(hits, lengths)}
        else:
            seg_rows = {s: self.segs[s].walk_keys(keys, lengths, 1) for s in walked}
        n_walked = len(walked)
        if len(self._memo) > 100_000:
            self._memo.clear()
        out: list[list[int]] = []
        entries: list[tuple[int, int] | None] = []
        rows0, last0 = seg_rows[walked[0]] if n_walked == 1 else ([], [])
        if hits is not None:
            hl, start, part = hits.handles, hits.start.tolist(), hits.part.tolist()
        for q, key in enumerate(keys):
            n = lengths[q]
            if n_walked == 1:
                row1, own = self._row_one(key, n, rows0[q], bool(last0[q]), below, table)
                out.append(row1)
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
        if groups is not None:
            self._cut_in_groups(keys, lengths, below, out, entries, groups, hits)
        return out, entries

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
        start, count, part = hits.start.tolist(), hits.count.tolist(), hits.part.tolist()
        dfs = hits.dfs
        cands: list[tuple[int, int, str, int]] = []  # (query, index in row, key, hit or -1)
        for q, row in enumerate(rows):
            words: list[str] | None = None
            for n, d in enumerate(row):
                if below <= d < settled:
                    if words is None:
                        words = keys[q].split(" ")
                    key = " ".join(words[: n + 1])
                    j = start[q] + n
                    fast = n < count[q] and dfs[j] > 0 and key not in table
                    cands.append((q, n, key, j if fast else -1))
        if not cands:
            return
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
    ) -> tuple[list[int], bool]:
        """:meth:`walk_keys`'s row of one query with one walked segment, from that
        segment's row ``r`` (its walk to the end; ``tomb``: ending at a tombstone), and
        whether its last value is flagged (below ``below``, not 0) with all its documents
        in a key the walked segment stores (none in the small segments)."""
        exact = len(r) if tomb or r[-1] != 0 else len(r) - 1  # values r[:exact] are exact
        zero_from = len(r) if tomb else (n + 1 if exact else 1)
        words = key.split(" ")
        row: list[int] = []
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
                    return row, False
                found = self._seg_lookup(self._walked[0], words[:m])
                g += len(found)
                if not len(found):
                    zero_from = m
            # (A key the walked segment stores with df >= 1 has every proper sub-N-gram
            # in >= 2 of its documents: so has one index over all of them.)
            if (m >= 2 and g == 1 and not (m <= exact and r[m - 1])
                    and self._under_two(words[1:m], table)):
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
                return row, bool(g) and m <= exact and not small
        return row, False

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
        return Lows.of_rows(*self.walk_keys(keys, lengths, below, groups=groups), below)

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


def _rows_of(h: _Hits, lengths: Sequence[int]) -> tuple[list[list[int]], list[bool]]:
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


def _holds(view: ViewIndex, d: int, seq: list[int]) -> bool:
    """Whether document ``d`` of ``view`` holds the word ids ``seq`` in a row (as the
    view reads it: across punctuation in a view that crosses it)."""
    toks = view.docs.doc_ids(d)
    if not view.tokenizer.break_on_punctuation:
        toks = toks[toks != view.docs.n_vocab + 1]
    n = len(seq)
    if n > len(toks):
        return False
    starts = np.flatnonzero(toks[: len(toks) - n + 1] == seq[0]).tolist()
    tail = toks.tolist() if len(starts) > 1 else None
    for i in starts:
        if (tail[i : i + n] if tail is not None else toks[i : i + n].tolist()) == seq:
            return True
    return False


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
        views: dict[str, ViewIndex] = {
            name: SegmentedView([s.views[name] for s in segs], bases, counted)
            for name in first.views
        }
        doc_ids = [x for s in segs for x in s.doc_ids]
        groups = _merge_groups(segs)
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
        size = sum(p.stat().st_size for p in self.directory.rglob("*") if p.is_file())
        per = [s.stats() for s in self.segments]
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


def _merge_groups(segs: Sequence[NgramIndex]) -> tuple[np.ndarray, list[str]] | None:
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

"""`ViewIndex`: the N-gram key space of one view (text model) of the collection.

Document frequency and posting lists (global document ordinals) of every N-gram, exact
for N-grams of any length (see :mod:`presidio_delink.index.shard` for the storage rule).
A key lives in the partition of its first word, so every look-up, including a prefix
walk, reads one partition.  Built and opened by :class:`~presidio_delink.index.NgramIndex`,
which holds one per view.  A view may be stored as differences from another view
(:class:`~presidio_delink.index.shard.Layered`); the answers are the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat
from operator import itemgetter

import numpy as np

from presidio_delink.errors import IndexFormatError
from presidio_delink.index.postings import decode_many
from presidio_delink.index.shard import (
    KID_MASK,
    LAYER_SHIFT,
    MAX_LAYERS,
    FoldDocs,
    Layered,
    Partition,
    partition_of,
)
from presidio_delink.text import Tokenizer

_EMPTY = np.empty(0, dtype=np.int64)
_second = itemgetter(1)


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of an integer array, sorted (``np.unique`` by a sort: its
    hashing path costs several times more on the few hundred values of a check)."""
    x = np.sort(values)
    if len(x) < 2:
        return x
    keep = np.empty(len(x), dtype=bool)
    keep[0] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


@dataclass
class _Hits:
    """The prefix walks of many queries (see :meth:`ViewIndex.walk_keys`): the handles of
    every stored prefix found, flat, query after query within each partition, their
    document frequencies, and per query its partition, first hit, number of hits and the
    index of its first hit below the threshold (-1: none)."""

    handles: list[int]
    dfs: np.ndarray
    part: np.ndarray
    start: np.ndarray
    count: np.ndarray
    first_low: np.ndarray

    def entry(self, q: int) -> tuple[int, int] | None:
        """The stored entry ``(partition, handle)`` of query ``q``'s first value below the
        threshold, or None."""
        f = int(self.first_low[q])
        return (int(self.part[q]), self.handles[f]) if f >= 0 else None


@dataclass(frozen=True)
class KeyWalk:
    """One walk of a view's trie (:meth:`~.ngram_index.NgramIndex.link_dfs`): the query
    keys (space-joined words), how many words of each to walk, the frequency ``below``
    which an N-gram links, and the keys another view of the same words already walked
    (``extends``; None: none)."""

    keys: Sequence[str]
    lengths: Sequence[int]
    below: int
    extends: Sequence[str] | None = None


@dataclass(frozen=True)
class GroupCut:
    """How a walk counts *groups* (see :meth:`~.ngram_index.NgramIndex.link_dfs`): each
    document's group ordinal, and ``settled``, the document frequency from which a value
    at or above the threshold is so in groups too (``(below - 1) * max_group_size + 1``):
    only values in ``below..settled - 1`` are mapped to groups.

    ``known``: the group counts found so far, per stored layer and trie id.  One cut serves
    the walks of one check: views stored over one another meet the same stored entries
    (most of a child view's hits are its parent's), so each is counted once."""

    group_of: np.ndarray
    settled: int
    known: dict[Partition, dict[int, int]] = field(default_factory=dict, compare=False)
    _list: list[int] | None = field(default=None, compare=False, repr=False)

    def group_list(self) -> list[int]:
        """``group_of`` as a list (a few documents' groups are read faster from it)."""
        got = self._list
        if got is None:
            got = self.group_of.tolist()
            object.__setattr__(self, "_list", got)  # a cache: the cut itself is unchanged
        return got


@dataclass
class Lows:
    """:meth:`ViewIndex.walk_lows`: per query, ``good`` (prefixes at or above the
    threshold before the first below it) and ``df`` (that first one's document
    frequency); ``entry(q)``, the stored entry ``(partition, handle)`` of query ``q``'s
    value below the threshold, or None.  ``by_prefix`` (a view over segments): per query,
    what its answer read (the ``READ_*`` codes of :mod:`~.segment_reader`, which say
    whether another view may share it); None: not recorded."""

    good: np.ndarray
    df: np.ndarray
    entry: Callable[[int], tuple[int, int] | None]
    by_prefix: np.ndarray | None = None

    @classmethod
    def of_rows(
        cls, rows: Sequence[Sequence[int]], last: Sequence[tuple[int, int] | None], below: int
    ) -> Lows:
        """The same from :meth:`ViewIndex.walk_keys`'s rows."""
        good = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        df = np.fromiter((r[-1] if r else below for r in rows), dtype=np.int64, count=len(rows))
        low = df < below
        good[low] -= 1
        df[~low] = below
        return cls(good, df, last.__getitem__)


class ViewIndex:
    """One view's key space: its partitions, its tokenizer and its word model's documents."""

    def __init__(
        self,
        name: str,
        tokenizer: Tokenizer,
        parts: list[Layered],
        docs: FoldDocs,
        n_keys: int,
    ) -> None:
        self.name = name
        self.tokenizer = tokenizer
        self.parts = parts
        self.docs = docs
        self._n_parts = len(parts)
        self._part_of: dict[str, int] = {}  # first word -> partition (memo)
        self._witness_memo: dict[tuple[str, ...], tuple[int, int] | None] = {}
        self._ngram_cache: dict[int, set[str]] = {}
        self._n_keys = n_keys

    @property
    def max_n(self) -> int:
        return self.tokenizer.max_n

    @property
    def n_keys(self) -> int:
        """Keys this view stores (over all partitions)."""
        return self._n_keys

    def stored_over(self, other: ViewIndex) -> bool:
        """Whether this view is stored as differences over ``other`` (directly or through
        views between them): then ``other``'s layers memoise the walks this view makes."""
        layer = self.parts[0].parent if self.parts else None
        while layer is not None:
            if layer is other.parts[0]:
                return True
            layer = layer.parent
        return False

    def over(self, other: ViewIndex) -> bool:
        """Whether this view is stored directly over ``other`` in every partition, both
        plain views (a view over several segments walks otherwise)."""
        return (
            type(self) is ViewIndex
            and type(other) is ViewIndex
            and len(self.parts) == len(other.parts)
            and all(a.parent is b for a, b in zip(self.parts, other.parts, strict=True))
        )

    def differing(self, other: ViewIndex, keys: Sequence[str]) -> list[int] | None:
        """The positions of ``keys`` (queries, none empty) whose prefix walk in this view
        can differ from ``other``'s: where this view's own entries hold a word-prefix of
        the key.  Every other position has the same stored hits (same handles, hence
        the same document frequencies and groups) in both views.  None when this view is
        not stored directly over ``other`` in every partition, or either is not a plain
        view (a view over several segments walks otherwise)."""
        if not self.over(other):
            return None
        parts = self.parts
        if len(parts) == 1:
            return [q for q, key in enumerate(keys) if parts[0].differs(key)]
        return [q for q, key in enumerate(keys) if self.part(key.split(" ", 1)[0]).differs(key)]

    def part_no(self, first_word: str) -> int:
        if self._n_parts == 1:
            return 0
        got = self._part_of.get(first_word)
        if got is None:
            if len(self._part_of) > 1_000_000:
                self._part_of.clear()
            got = self._part_of[first_word] = partition_of(first_word, self._n_parts)
        return got

    def part(self, first_word: str) -> Layered:
        return self.parts[self.part_no(first_word)]

    # -- look-ups -------------------------------------------------------------------------
    def lookup(self, words: Sequence[str]) -> np.ndarray:
        """Document ordinals (sorted) of any N-gram given as normalised words."""
        if not words:
            return _EMPTY
        key = " ".join(words)
        part = self.part(words[0])
        h = part.get(key)
        if h is not None:
            return part.postings_of(h).astype(np.int64)
        if len(words) <= self.max_n:
            # Not stored, so df <= 1; if it occurs, a stored sub-N-gram has df 1 and the
            # N-gram is among that one document's N-grams.
            wit = self._witness(tuple(words))
            if wit is None:
                return _EMPTY
            p, wh = wit
            d = int(self.parts[p].postings_of(wh)[0])
            return np.array([d], dtype=np.int64) if key in self._doc_ngrams(d) else _EMPTY
        # Longer than the stored levels: candidates from the rarest stored piece.
        cands = self._rarest_piece(words)
        if len(cands) == 0:
            return _EMPTY
        seq = [x for x in map(self.docs.word_id, words) if x is not None]
        if len(seq) < len(words):
            return _EMPTY
        return np.asarray([d for d in cands.tolist() if self.holds(d, seq)], np.int64)

    def df_words(self, words: Sequence[str]) -> int:
        """Document frequency of an N-gram given as normalised words."""
        if not words:
            return 0
        part = self.part(words[0])
        h = part.get(" ".join(words))
        if h is not None:
            return part.df_of(h)
        return len(self.lookup(words))

    def group_count(self, words: Sequence[str], group_of: list[int]) -> int:
        """In how many distinct groups (``group_of``: each document's) the N-gram
        ``words`` occurs; meant for N-grams in a few documents."""
        return len({group_of[d] for d in self.lookup(words).tolist()})

    def df_keys(self, keys: Sequence[str]) -> np.ndarray:
        """Bulk document frequency of normalised keys (words joined by one space); repeated
        keys are looked up once."""
        distinct = list(dict.fromkeys(keys))
        found = np.zeros(len(distinct), dtype=np.int64)
        for i, key in enumerate(distinct):
            found[i] = self.df_words(key.split(" ")) if key else 0
        if len(distinct) == len(keys):
            return found
        where = {k: i for i, k in enumerate(distinct)}
        return found[np.fromiter((where[k] for k in keys), dtype=np.int64, count=len(keys))]

    def postings_keys(self, keys: Sequence[str]) -> list[np.ndarray]:
        """Bulk posting lists of normalised keys."""
        return [self.lookup(k.split(" ")) for k in keys]

    def prefix_dfs(self, words: Sequence[str], below: int) -> list[int]:
        """Document frequencies of ``words[:1]``, ``words[:2]``, ... (detector's hot path).

        Stops after the first prefix whose df is below ``below``.  A prefix that is not
        stored is reported as 0 when ``below >= 2``: it contains a sub-N-gram found in at
        most one document, so it is either absent or not minimal (never a *minimal*
        N-gram with ``1 <= df < below``).
        """
        return self.prefix_dfs_many([words], below)[0]

    def prefix_dfs_many(self, queries: Sequence[Sequence[str]], below: int) -> list[list[int]]:
        """:meth:`prefix_dfs` for many word lists (the whole text at once)."""
        return self.prefix_walk(queries, below)[0]

    def prefix_walk(
        self, queries: Sequence[Sequence[str]], below: int
    ) -> tuple[list[list[int]], list[tuple[int, int] | None]]:
        """:meth:`prefix_dfs` for many word lists, and for each row the stored entry
        ``(partition, handle)`` of its last value when that value is below ``below`` (the
        detector reads a flagged N-gram's postings through it, without a second look-up);
        None otherwise."""
        if below < 2:
            out_exact: list[list[int]] = []
            for words in queries:
                row: list[int] = []
                for n in range(1, len(words) + 1):
                    df = len(self.lookup(words[:n]))
                    row.append(df)
                    if df < below:
                        break
                out_exact.append(row)
            return out_exact, [None] * len(out_exact)
        full = [q for q, words in enumerate(queries) if words]
        rows, last = self.walk_keys(
            [" ".join(queries[q]) for q in full], [len(queries[q]) for q in full], below
        )
        out: list[list[int]] = [[] for _ in queries]
        ends: list[tuple[int, int] | None] = [None] * len(queries)
        for q, row, entry in zip(full, rows, last, strict=True):
            out[q], ends[q] = row, entry
        return out, ends

    def _walk_hits(
        self, keys: Sequence[str], below: int, extends: Sequence[str] | None
    ) -> _Hits:
        """The trie walks of :meth:`walk_keys`, then the document frequencies of every hit,
        read in one vectorised step per partition."""
        parts = self.parts
        n = len(keys)
        if len(parts) == 1:  # one partition: map
            # without `extends`, a walk is the layer's prefix_hits (one call a key less)
            hits = (list(map(parts[0].walk, keys, extends)) if extends
                    else list(map(parts[0].prefix_hits, keys)))
            count = np.fromiter(map(len, hits), dtype=np.int64, count=n)
            start = np.cumsum(count) - count
            handles = list(map(_second, chain.from_iterable(hits)))
            part = np.zeros(n, dtype=np.int64)
            dfs = parts[0].dfs(handles)
        else:
            part_no = self.part_no
            by_part: list[list[int]] = [[] for _ in parts]
            where: list[int] = []  # per query: partition, first hit there, hits
            for q, key in enumerate(keys):
                cut = key.find(" ")
                p = part_no(key if cut < 0 else key[:cut])
                kids = by_part[p]
                at = len(kids)
                kids.extend(h for _, h in parts[p].walk(key, extends[q] if extends else None))
                where += (p, at, len(kids) - at)
            wh = np.asarray(where, dtype=np.int64).reshape(n, 3)
            part, count = wh[:, 0], wh[:, 2]
            # The hits of all partitions in one flat list, partition after partition.
            base = np.cumsum([0] + [len(kids) for kids in by_part])
            start = base[part] + wh[:, 1]
            handles = [h for kids in by_part for h in kids]
            dfs = np.concatenate(
                [parts[p].dfs(kids) for p, kids in enumerate(by_part)]
            )
        # Where each row stops: at its first value below `below`, if any.
        stop = start + count
        low = np.flatnonzero(dfs < below)
        if len(low):
            i = np.searchsorted(low, start)
            first = low[np.minimum(i, len(low) - 1)]
            is_low = (i < len(low)) & (first < stop)
        else:
            first = stop
            is_low = np.zeros(n, dtype=bool)
        return _Hits(handles, dfs, part, start, count, np.where(is_low, first, -1))

    def walk_keys(
        self,
        keys: Sequence[str],
        lengths: Sequence[int],
        below: int,
        extends: Sequence[str] | None = None,
        groups: GroupCut | None = None,
    ) -> tuple[list[list[int]], list[tuple[int, int] | None]]:
        """:meth:`prefix_walk` (``below >= 2``) of queries given as keys (words joined by one
        space, none empty) and their word counts: the detector's hot path.  ``extends``:
        for each query, a key it is a word-prefix of, just walked in a view stored over this
        one (see :meth:`~presidio_delink.index.shard.Layered.walk`).  ``groups``: count
        groups where a value is in ``below..groups.settled - 1``; a row whose value there is
        below ``below`` in groups stops at it, with that group count and no entry."""
        h = self._walk_hits(keys, below, extends)
        cut, cut_groups = self._group_cut(h, below, groups)
        dfs: list[int] = h.dfs.tolist()
        out: list[list[int]] = []
        last: list[tuple[int, int] | None] = []
        for n_words, p, a, c, f, g, gv in zip(
            lengths, h.part.tolist(), h.start.tolist(), h.count.tolist(), h.first_low.tolist(),
            cut.tolist(), cut_groups.tolist(), strict=True,
        ):
            if g >= 0:
                row = dfs[a:g]
                row.append(gv)
                out.append(row)
                last.append(None)
            elif f >= 0:
                out.append(dfs[a : f + 1])
                last.append((p, h.handles[f]))
            else:
                row = dfs[a : a + c]
                if c < n_words:
                    row.append(0)  # not stored: see prefix_dfs
                out.append(row)
                last.append(None)
        return out, last

    def walk_lows(
        self,
        keys: Sequence[str],
        lengths: Sequence[int],
        below: int,
        extends: Sequence[str] | None = None,
        groups: GroupCut | None = None,
    ) -> Lows:
        """What an arity-1 check needs of :meth:`walk_keys`, as arrays (no rows): per
        query, how many of its prefixes reach ``below`` before the first that does not,
        and that one's df (0 when it is not stored; ``below`` when every prefix of the
        query reaches it; its groups when ``groups`` cut the row there).  A row cut by
        groups has the entry where it is cut (:meth:`walk_keys` gives none, as the caller
        of a row looks it up again: the same stored key, hence the same list)."""
        h = self._walk_hits(keys, below, extends)
        cut, cut_groups = self._group_cut(h, below, groups)
        is_cut = cut >= 0
        is_low = h.first_low >= 0
        good = np.where(is_low, h.first_low - h.start, h.count)
        n_words = np.asarray(lengths, dtype=np.int64)
        df = np.where(is_low, h.dfs[np.maximum(h.first_low, 0)] if len(h.dfs) else 0,
                      np.where(h.count < n_words, 0, below))
        if is_cut.any():
            good = np.where(is_cut, cut - h.start, good)
            df = np.where(is_cut, cut_groups, df)
            h.first_low = np.where(is_cut, cut, h.first_low)
        return Lows(good, df, h.entry)

    def _group_cut(
        self, h: _Hits, below: int, groups: GroupCut | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per query: the hit where its row falls below ``below`` in groups before it does
        in documents (-1: nowhere), and that hit's group count.

        Only hits before the row's first value below ``below``, with a value in
        ``below..settled - 1``, are mapped; groups can only fall as an N-gram grows, so the
        first of them below ``below`` is where the row stops.  The posting lists of all
        those hits are read at once (:meth:`_group_counts`)."""
        n = len(h.start)
        cut = np.full(n, -1, dtype=np.int64)
        cut_groups = np.zeros(n, dtype=np.int64)
        total = len(h.dfs)
        if groups is None or not total:
            return cut, cut_groups
        queries = np.arange(n, dtype=np.int64)
        row = np.empty(total, dtype=np.int64)  # hit -> its query
        row[np.repeat(h.start - (np.cumsum(h.count) - h.count), h.count)
            + np.arange(total, dtype=np.int64)] = np.repeat(queries, h.count)
        stop = np.where(h.first_low >= 0, h.first_low, h.start + h.count)
        cand = np.flatnonzero(
            (h.dfs >= below) & (h.dfs < groups.settled)
            & (np.arange(total, dtype=np.int64) < stop[row])
        )
        if not len(cand):
            return cut, cut_groups
        hl = h.handles
        handles = np.fromiter([hl[i] for i in cand.tolist()], dtype=np.int64, count=len(cand))
        g = self._group_counts(h.part[row[cand]], handles, groups)
        low = g < below
        hit, g_low = cand[low], g[low]
        # `hit` ascends, and a query's hits ascend within it: a query's first is its cut
        q, first = np.unique(row[hit], return_index=True)
        cut[q] = hit[first]
        cut_groups[q] = g_low[first]
        return cut, cut_groups

    #: Keys of one stored layer below which their lists are read one by one (a batch's
    #: fixed cost is some tens of numpy calls).
    BATCH_MIN = 16

    def _group_counts(
        self, parts: np.ndarray, handles: np.ndarray, groups: GroupCut
    ) -> np.ndarray:
        """The number of distinct groups of each stored entry ``(parts[i], handles[i])``:
        each distinct entry once, those not in ``groups.known`` read by stored layer, the
        posting lists of a layer decoded in one pass
        (:func:`~presidio_delink.index.postings.decode_many`)."""
        group_of = groups.group_of
        out = np.empty(len(handles), dtype=np.int64)
        layer = handles >> LAYER_SHIFT
        kids = handles & KID_MASK
        where = parts * MAX_LAYERS + layer  # one code per stored layer
        n_docs = len(group_of)
        for code in distinct(where).tolist():
            sel = np.flatnonzero(where == code)
            store = self.parts[int(parts[sel[0]])].layers[int(layer[sel[0]])]
            known = groups.known.setdefault(store, {})
            uniq, inv = np.unique(kids[sel], return_inverse=True)
            counts = np.fromiter(map(known.get, uniq.tolist(), repeat(-1)), dtype=np.int64,
                                 count=len(uniq))
            todo = np.flatnonzero(counts < 0)
            new = np.empty(len(todo), dtype=np.int64)
            done = np.zeros(len(todo), dtype=bool)
            if len(todo) >= self.BATCH_MIN:
                try:
                    ords, offs, done = decode_many(
                        uniq[todo], store.dfs_kids, len(store.df8), store.blocks, store.data,
                        store.n_docs,
                    )
                except ValueError as exc:
                    raise IndexFormatError(f"{store.directory}: {exc}") from exc
                m = int(done.sum())
                seg = np.repeat(np.arange(m, dtype=np.int64), np.diff(offs))
                pairs = distinct(seg * n_docs + group_of[ords])
                new[done] = np.bincount(pairs // n_docs, minlength=m)
            for i in np.flatnonzero(~done).tolist():
                new[i] = len(np.unique(group_of[store.postings_of(int(uniq[todo[i]]))]))
            counts[todo] = new
            known.update(zip(uniq[todo].tolist(), new.tolist(), strict=True))
            out[sel] = counts[inv]
        return out

    def docs_at(self, entry: tuple[int, int]) -> tuple[int, ...]:
        """Document ordinals of a stored entry ``(partition, handle)``, remembered."""
        return self.parts[entry[0]].docs_of(entry[1])

    def iter_keys(self) -> Iterator[tuple[str, int]]:
        """Stored keys with their document frequency (for tests and tools)."""
        for part in self.parts:
            for key, h in part.iteritems():
                yield key, part.df_of(h)

    def doc_words(self, ordinal: int) -> list[str]:
        """The normalised words of document ``ordinal`` in order, ``""`` closing each
        segment of this view (what an aligner needs to compare a text with its source)."""
        return [w if w is not None else "" for w in self._doc_words(ordinal)]

    def doc_word_ids(self, ordinal: int) -> np.ndarray:
        """Document ``ordinal``'s word ids in order, segment marks dropped (decode with
        :meth:`word_of`): :meth:`doc_words` without a string per word, for bulk readers."""
        if not 0 <= ordinal < self.docs.starts[-1] + len(self.docs.doc_starts[-1]) - 1:
            raise IndexError(f"document ordinal {ordinal} out of range")
        ids = self.docs.doc_ids(ordinal)
        return ids[ids < self.docs.n_vocab]

    def word_of(self, wid: int) -> str:
        """The word of a word id of :meth:`doc_word_ids`."""
        return self.docs.word(int(wid))

    # -- exact path for N-grams that are not stored -------------------------------------
    def _doc_words(self, d: int) -> list[str | None]:
        if not 0 <= d < self.docs.starts[-1] + len(self.docs.doc_starts[-1]) - 1:
            raise IndexError(f"document ordinal {d} out of range")
        v = self.docs.n_vocab
        cross = not self.tokenizer.break_on_punctuation
        out: list[str | None] = []
        for t in self.docs.doc_ids(d).tolist():
            if t < v:
                out.append(self.docs.word(t))
            elif (t == v or not cross) and out and out[-1] is not None:
                out.append(None)
        return out

    def _doc_ngrams(self, d: int) -> set[str]:
        """Every N-gram key (1..max_n words) of document ``d``; the last few are cached
        (a bulk look-up of one text's N-grams keeps verifying against the same documents)."""
        got = self._ngram_cache.get(d)
        if got is None:
            if len(self._ngram_cache) >= 16:
                self._ngram_cache.pop(next(iter(self._ngram_cache)))
            got = set()
            seg: list[str] = []
            for w in [*self._doc_words(d), None]:
                if w is not None:
                    seg.append(w)
                    continue
                for i in range(len(seg)):
                    for n in range(1, min(self.max_n, len(seg) - i) + 1):
                        got.add(" ".join(seg[i : i + n]))
                seg = []
            self._ngram_cache[d] = got
        return got

    def _key(self, words: Sequence[str]) -> tuple[int, int] | None:
        p = self.part_no(words[0])
        h = self.parts[p].get(" ".join(words))
        return None if h is None else (p, h)

    def _witness(self, words: tuple[str, ...]) -> tuple[int, int] | None:
        """For an N-gram that is not stored (``n <= max_n``): a stored sub-N-gram with
        df 1 (its only document is the only candidate), or None when the N-gram occurs
        nowhere.

        Not stored means a proper sub-N-gram has df <= 1 or the N-gram does not occur.
        If its prefix and suffix are both stored with df >= 2, every proper sub-N-gram
        has df >= 2, so it does not occur.  Otherwise take a piece with df 1, or recurse
        into a piece that is not stored.  Results are memoised.
        """
        memo = self._witness_memo
        if words in memo:
            return memo[words]
        found: tuple[int, int] | None = None
        if len(words) > 1:
            parts = (words[:-1], words[1:])
            ids = [self._key(p) for p in parts]
            for pid in ids:
                if pid is not None and self.parts[pid[0]].df_of(pid[1]) <= 1:
                    found = pid
                    break
            else:
                for part, pid in zip(parts, ids, strict=True):
                    if pid is None:
                        found = self._witness(part)
                        break  # None: that piece occurs nowhere, so neither does this
        if len(memo) > 20_000:
            memo.clear()
        memo[words] = found
        return found

    def _rarest_piece(self, words: Sequence[str]) -> np.ndarray:
        best: tuple[int, int] | None = None
        for i in range(len(words)):
            p = self.part_no(words[i])
            part = self.parts[p]
            found = False
            for _, h in part.prefix_hits(" ".join(words[i:])):
                found = True
                if best is None or part.df_of(h) < self.parts[best[0]].df_of(best[1]):
                    best = (p, h)
            if not found:  # words[i] occurs nowhere
                return _EMPTY
        assert best is not None
        return self.parts[best[0]].postings_of(best[1]).astype(np.int64)

    def holds(self, d: int, seq: Sequence[int]) -> bool:
        """Whether document ``d`` holds the word ids ``seq`` (non-empty) in a row."""
        toks = self.docs.doc_ids(d)
        if not self.tokenizer.break_on_punctuation:
            toks = toks[toks != self.docs.n_vocab + 1]
        want, n = list(seq), len(seq)
        if n > len(toks):
            return False
        starts = np.flatnonzero(toks[: len(toks) - n + 1] == want[0]).tolist()
        rows = toks.tolist() if len(starts) > 1 else None  # one list for several places
        return any((rows[i : i + n] if rows is not None else toks[i : i + n].tolist()) == want
                   for i in starts)


# -- walks in group frequencies: what NgramIndex.link_dfs / link_lows give -----------------
def group_cut(group_of: np.ndarray | None, max_group_size: int, below: int) -> GroupCut | None:
    """How a walk below ``below`` counts groups, for a collection whose documents are in
    groups ``group_of`` of at most ``max_group_size`` (None: the collection has none)."""
    if group_of is None:
        return None
    return GroupCut(group_of, (below - 1) * max_group_size + 1)


def _reads_hits(view: ViewIndex) -> bool:
    """Whether ``view``'s walk takes ``groups``: it walks its own stored layers (maps groups
    from the handles of its hits), or its class says it cuts rows in groups itself
    (``CUTS_GROUPS``); any other view's rows are mapped by :func:`cut_by_lookup`."""
    cls = type(view)
    return getattr(cls, "CUTS_GROUPS", False) or (
        cls.walk_keys is ViewIndex.walk_keys and cls.walk_lows is ViewIndex.walk_lows)


def cut_by_lookup(
    view: ViewIndex,
    walk: KeyWalk,
    rows: list[list[int]],
    last: list[tuple[int, int] | None],
    groups: GroupCut,
) -> tuple[list[list[int]], list[tuple[int, int] | None]]:
    """Rows of a walk in documents, cut where a value in ``below..settled - 1`` is below
    ``below`` in groups: each such prefix looked up again by its words (a cut row has no
    entry).  What :meth:`ViewIndex._group_cut` computes from a walk's handles."""
    below = walk.below
    group_of = groups.group_list()  # the documents looked up are fewer than `settled`
    for q, row in enumerate(rows):
        for n, d in enumerate(row):
            if below <= d < groups.settled:
                g = view.group_count(walk.keys[q].split(" ")[: n + 1], group_of)
                if g < below:
                    row[n] = g
                    del row[n + 1 :]
                    last[q] = None
                    break
    return rows, last


def rows_in_groups(
    view: ViewIndex, walk: KeyWalk, groups: GroupCut | None
) -> tuple[list[list[int]], list[tuple[int, int] | None]]:
    """:meth:`ViewIndex.walk_keys` of ``walk`` (``below >= 2``), in group frequencies
    where ``groups`` says (None: the collection has no groups)."""
    if groups is None:
        return view.walk_keys(walk.keys, walk.lengths, walk.below, walk.extends)
    if _reads_hits(view):
        return view.walk_keys(walk.keys, walk.lengths, walk.below, walk.extends, groups)
    rows, last = view.walk_keys(walk.keys, walk.lengths, walk.below, walk.extends)
    return cut_by_lookup(view, walk, rows, last, groups)


def lows_in_groups(view: ViewIndex, walk: KeyWalk, groups: GroupCut | None) -> Lows:
    """:meth:`ViewIndex.walk_lows` of ``walk`` (``below >= 2``), in group frequencies
    where ``groups`` says."""
    if groups is None:
        return view.walk_lows(walk.keys, walk.lengths, walk.below, walk.extends)
    if _reads_hits(view):
        return view.walk_lows(walk.keys, walk.lengths, walk.below, walk.extends, groups)
    return Lows.of_rows(*rows_in_groups(view, walk, groups), walk.below)

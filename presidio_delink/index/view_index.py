"""`ViewIndex`: the N-gram key space of one view (text model) of the collection.

Document frequency and posting lists (global document ordinals) of every N-gram, exact
for N-grams of any length (see :mod:`presidio_delink.index.shard` for the storage rule).
A key lives in the partition of its first word, so every look-up, including a prefix
walk, reads one partition.  Built and opened by :class:`~presidio_delink.index.NgramIndex`,
which holds one per view.  A view may be stored as differences from another view
(:class:`~presidio_delink.index.shard.Layered`); the answers are the same.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import accumulate

import numpy as np

from presidio_delink.index.shard import FoldDocs, Layered, partition_of
from presidio_delink.text import Tokenizer

_EMPTY = np.empty(0, dtype=np.int64)


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
        seq = [self.docs.word_id(w) for w in words]
        if any(x is None for x in seq):
            return _EMPTY
        needle = np.asarray(seq, dtype=np.int64)
        return np.asarray([d for d in cands.tolist() if self._contains(d, needle)], np.int64)

    def df_words(self, words: Sequence[str]) -> int:
        """Document frequency of an N-gram given as normalised words."""
        if not words:
            return 0
        part = self.part(words[0])
        h = part.get(" ".join(words))
        if h is not None:
            return part.df_of(h)
        return len(self.lookup(words))

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

    def walk_keys(
        self,
        keys: Sequence[str],
        lengths: Sequence[int],
        below: int,
        extends: Sequence[str] | None = None,
    ) -> tuple[list[list[int]], list[tuple[int, int] | None]]:
        """:meth:`prefix_walk` (``below >= 2``) of queries given as keys (words joined by one
        space, none empty) and their word counts: the detector's hot path.  The trie walks
        come first, then the document frequencies, read in one vectorised step per
        partition.  ``extends``: for each query, a key it is a word-prefix of, just walked
        in a view stored over this one (see
        :meth:`~presidio_delink.index.shard.Layered.prefix_handles`)."""
        parts = self.parts
        by_part: list[list[int]] = [[] for _ in parts]
        where: list[tuple[int, int, int]] = []  # (partition, first kid slot, count)
        if len(parts) == 1:  # one partition: map
            walk = parts[0].prefix_handles
            hits = list(map(walk, keys, extends)) if extends else list(map(walk, keys))
            counts = [len(h) for h in hits]
            starts = accumulate(counts, initial=0)
            where = [(0, a, c) for a, c in zip(starts, counts, strict=False)]
            by_part[0] = [h for hs in hits for h in hs]
        else:
            part_no = self.part_no
            for q, key in enumerate(keys):
                cut = key.find(" ")
                p = part_no(key if cut < 0 else key[:cut])
                kids = by_part[p]
                start = len(kids)
                kids.extend(parts[p].prefix_handles(key, extends[q] if extends else None))
                where.append((p, start, len(kids) - start))
        dfs = [parts[p].dfs(kids) if kids else [] for p, kids in enumerate(by_part)]
        # Where each row stops: just after its first value below `below` (vectorised).
        wh = np.fromiter(
            (x for row in where for x in row), dtype=np.int64, count=3 * len(where)
        ).reshape(-1, 3)
        stop = wh[:, 1] + wh[:, 2]
        low_at = np.zeros(len(wh), dtype=bool)
        for p, d in enumerate(dfs):
            sel = np.flatnonzero(wh[:, 0] == p)
            if not len(d) or not len(sel):
                continue
            low = np.flatnonzero(np.fromiter(d, dtype=np.int64, count=len(d)) < below)
            if not len(low):
                continue
            i = np.searchsorted(low, wh[sel, 1])
            first = low[np.minimum(i, len(low) - 1)]
            hit = (i < len(low)) & (first < stop[sel])
            stop[sel[hit]] = first[hit] + 1
            low_at[sel[hit]] = True
        out: list[list[int]] = []
        last: list[tuple[int, int] | None] = []
        for n_words, (p, start, c), end, is_low in zip(
            lengths, where, stop.tolist(), low_at.tolist(), strict=True
        ):
            row = dfs[p][start:end]
            if is_low:
                last.append((p, by_part[p][end - 1]))
            else:
                last.append(None)
                if c < n_words:
                    row.append(0)  # not stored: see prefix_dfs
            out.append(row)
        return out, last

    def postings_at(self, entry: tuple[int, int]) -> np.ndarray:
        """Document ordinals of a stored entry ``(partition, handle)``."""
        return self.parts[entry[0]].postings_of(entry[1]).astype(np.int64)

    def iter_keys(self) -> Iterator[tuple[str, int]]:
        """Stored keys with their document frequency (for tests and tools)."""
        for part in self.parts:
            for key, h in part.iteritems():
                yield key, part.df_of(h)

    def doc_words(self, ordinal: int) -> list[str]:
        """The normalised words of document ``ordinal`` in order, ``""`` closing each
        segment of this view (what an aligner needs to compare a text with its source)."""
        return [w if w is not None else "" for w in self._doc_words(ordinal)]

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

    def _contains(self, d: int, seq: np.ndarray) -> bool:
        toks = self.docs.doc_ids(d)
        if not self.tokenizer.break_on_punctuation:
            toks = toks[toks != self.docs.n_vocab + 1]
        n = len(seq)
        if n > len(toks):
            return False
        windows = np.lib.stride_tricks.sliding_window_view(toks, n)
        return bool((windows == seq).all(axis=1).any())

"""The queries of a check: one word model's reading of the text, and the keys it walks.

:func:`~presidio_delink.linkage.analyze` reads the text once per word model
(:class:`_Reading`), and builds at each text position the query of each view
(:func:`_queries`): the position's next (up to) ``max_n`` words in its segment.  A view
stored over another whose queries are the same walks only where its own entries change
the other's answers (:class:`Shared`).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate

import numpy as np

from presidio_delink.index import ViewIndex
from presidio_delink.index.segment_reader import SegmentedView
from presidio_delink.index.view_index import Lows
from presidio_delink.text import Token, Tokenizer

#: Text positions whose queries an arity-1 check builds and walks at once (fewer than the
#: index's memo of walked keys, ``Layered.MEMO_KEYS``, so that a view walked over another
#: finds its keys there).  A query costs about 90 bytes a view, so a long text's queries
#: never exist all at once.
WINDOW = 16_384


@dataclass
class _Reading:
    """One word model's tokens of the text in order, flat, with their words.

    ``ends[p]``: where piece ``p`` (a segment cut at every break, see
    :meth:`~presidio_delink.text.Tokenizer.pieces`) ends in ``tokens``; ``hard[p]``:
    whether a placeholder or the end of the text closes it.
    """

    tokens: list[Token]
    words: list[str]
    ends: list[int]
    hard: list[bool]

    @classmethod
    def of(cls, tok: Tokenizer, text: str) -> _Reading:
        return cls.of_pieces(tok.pieces(text))

    @classmethod
    def of_pieces(cls, pieces: list[tuple[list[Token], bool]]) -> _Reading:
        tokens: list[Token] = []
        ends: list[int] = []
        hard: list[bool] = []
        for seg, closed in pieces:
            tokens += seg
            ends.append(len(tokens))
            hard.append(closed)
        return cls(tokens, [t.word for t in tokens], ends, hard)

    def seg_ends(self, crosses: bool) -> list[int]:
        """Where the segments of a view end in ``tokens``: at every piece's end, or, for
        a view that crosses punctuation, at the hard ones' (as
        :func:`~presidio_delink.text.join_soft` joins pieces)."""
        if not crosses:
            return self.ends
        out = [e for e, closed in zip(self.ends, self.hard, strict=True) if closed]
        if self.ends and not self.hard[-1]:
            out.append(self.ends[-1])
        return out


def _queries(
    words: list[str], ends: list[int], lo: int, hi: int, mx: int
) -> tuple[list[str], list[int]]:
    """The query at each position ``lo..hi-1`` of ``words`` (segments ending at ``ends``):
    its next (up to) ``mx`` words in its segment, joined by one space, and their number."""
    keys: list[str] = []
    lengths: list[int] = []
    s = bisect.bisect_right(ends, lo)
    a = lo
    while a < hi:
        e = ends[s]
        b = min(e, hi)
        ws = words[a : min(e, b + mx - 1)]  # every word a query of a..b-1 reads
        size = len(ws)
        joined = " ".join(ws)
        # cut[j]: where word j ends in `joined` (cut[-1] == -1): word i begins at
        # cut[i - 1] + 2, and the query at i ends where word min(i + mx, size) - 1 does.
        cut = list(accumulate(map((1).__add__, map(len, ws)), initial=-1))
        last = cut[mx : mx + b - a]
        last += [cut[size]] * (b - a - len(last))
        keys += [joined[x + 1 : y] for x, y in zip(cut, last, strict=False)]
        full = max(0, min(b, e - mx + 1) - a)  # queries of mx words
        lengths += [mx] * full + list(range(e - a - full, e - b, -1))
        a = b
        s += 1
    return keys, lengths


def _extended(
    views: Sequence[ViewIndex], view: ViewIndex, walked: dict[str, list[str]]
) -> list[str] | None:
    """For a view that breaks at punctuation, the queries just walked at the same
    positions in a view of its word model that does not and is stored over it: the walk
    that one left in this view's memo answers this view's (see ``Layered.walk``)."""
    if not view.tokenizer.break_on_punctuation:
        return None
    for other in views:
        if other.name in walked and other.stored_over(view) and (
            other.tokenizer.fold == view.tokenizer.fold
        ):
            return walked[other.name]
    return None


def _by_model(views: Sequence[ViewIndex]) -> dict[str, list[ViewIndex]]:
    """The views grouped by word model, each group's views that cross punctuation first."""
    groups: dict[str, list[ViewIndex]] = {}
    for view in sorted(views, key=lambda v: v.tokenizer.break_on_punctuation):
        groups.setdefault(view.tokenizer.fold, []).append(view)
    return groups




class Shared:
    """The walks of one check's views (one window of the text each), kept so that a view
    stored over one of them walks only the queries where it can differ.

    The answers to a query depend on its key and the view's stored hits alone.  A view
    ``V`` stored directly over ``P`` (``fine`` over ``folded``, ``surface`` over
    ``fine``, ``folded-dash`` over ``folded``, ``accent-cross`` over ``folded-cross``) has
    ``P``'s stored hits for every key where none of ``V``'s own entries is a word-prefix
    of it (:meth:`~presidio_delink.index.ViewIndex.differing`).  So ``V``'s answer to a
    key that ``P`` was asked is ``P``'s answer there, and only the other keys are walked
    (on most texts the views of one word family read the same words, and most keys
    recur).

    Over segments (:class:`~presidio_delink.index.segment_reader.SegmentedView`), an
    answer can also read a small segment's list of a word-prefix, a look-up by words or
    a sub-N-gram's frequency.  There ``V`` takes ``P``'s answer only where the small
    segments' lists of the key's word-prefixes agree too, and where ``P``'s answer read
    nothing else that can differ (``Lows.by_prefix``,
    :meth:`~presidio_delink.index.segment_reader.SegmentedView.walk_again`).  Each of these
    conditions holds for ``P`` as for ``V`` (at such a key ``V``'s stored hits are ``P``'s),
    so over segments ``P`` also takes ``V``'s answers when ``V`` was walked first (the view
    that crosses punctuation is walked before the one it is stored over)."""

    def __init__(self) -> None:
        self.walked: list[tuple[ViewIndex, list[str], dict[str, int], Lows]] = []
        self.made: list[tuple[list[str], list[int], int, int, list[str], list[int]]] = []
        self.read: list[tuple[list[tuple[list[Token], bool]], _Reading]] = []

    def reading(self, tok: Tokenizer, text: str) -> _Reading:
        """:meth:`_Reading.of`, the same reading again for the same pieces (word models
        that read a text alike share them: see :meth:`~presidio_delink.text.Tokenizer.pieces`);
        a reading of more than ``WINDOW`` words is not kept."""
        pieces = tok.pieces(text)
        for p, got in self.read:
            if p is pieces:
                return got
        got = _Reading.of_pieces(pieces)
        if len(got.words) <= WINDOW:
            self.read.append((pieces, got))
        return got

    def queries(
        self, words: list[str], ends: list[int], lo: int, hi: int, mx: int
    ) -> tuple[list[str], list[int]]:
        """:func:`_queries`, the same lists again for the same words and segments (the
        readings of ``folded`` and ``folded-dash``, or of ``accent`` and ``folded``, are
        mostly one)."""
        for w, e, a, b, keys, lengths in self.made:
            if a == lo and b == hi and e == ends and w == words:
                return keys, lengths
        keys, lengths = _queries(words, ends, lo, hi, mx)
        self.made.append((words, ends, lo, hi, keys, lengths))
        return keys, lengths

    def lows(
        self,
        view: ViewIndex,
        keys: list[str],
        lengths: list[int],
        walk: Callable[[list[str], list[int], list[int] | None], Lows],
    ) -> Lows:
        """``view``'s answers to the queries ``keys`` (of ``lengths`` words), taken from
        a view walked before where they agree; ``walk(keys, lengths, at)`` walks the
        others (``at``: their positions among the queries, None for all of them, so that
        the walk may use ``extends``)."""
        got = None
        for other, o_list, o_keys, o_lows in self.walked:
            child, parent = view, other
            if not view.over(other):
                if not (isinstance(view, SegmentedView) and other.over(view)):
                    continue
                child, parent = other, view  # (over segments, either way: see below)
            src = (list(range(len(keys))) if o_list is keys
                   else [o_keys.get(key, -1) for key in keys])
            same = [q for q, i in enumerate(src) if i >= 0]
            diff = child.differing(parent, [keys[q] for q in same])
            if diff is None:
                continue
            for d in diff:
                src[same[d]] = -1
            if isinstance(child, SegmentedView) and isinstance(parent, SegmentedView):
                # over segments, an answer that read more than its key's word-prefixes
                # (a look-up by words, a sub-N-gram's frequency) or a small-segment list
                # that differs is walked again
                if o_lows.by_prefix is None:
                    continue
                rest = [q for q in same if src[q] >= 0]
                at = np.fromiter((src[q] for q in rest), dtype=np.int64, count=len(rest))
                for i in child.walk_again(parent, [keys[q] for q in rest],
                                          o_lows.by_prefix[at], o_lows.good[at]):
                    src[rest[i]] = -1
            todo = [q for q, i in enumerate(src) if i < 0]
            if len(todo) == len(keys):
                break
            if not todo and o_list is keys:
                got = o_lows  # the same queries, the same answers
                break
            sub = walk([keys[q] for q in todo], [lengths[q] for q in todo], todo)
            got = _merged(o_lows, src, sub, todo)
            break
        if got is None:
            got = walk(keys, lengths, None)
        self.walked.append((view, keys, dict(zip(keys, range(len(keys)), strict=True)), got))
        return got


def _merged(lows: Lows, src: list[int], sub: Lows, todo: list[int]) -> Lows:
    """Answers taken from ``lows`` (query ``q``'s at ``src[q]``) and, for the queries
    ``todo``, from ``sub`` (in order)."""
    at = np.asarray(src, dtype=np.int64)
    from_sub = at < 0
    at[from_sub] = 0
    good = lows.good[at] if len(lows.good) else np.zeros(len(src), dtype=np.int64)
    df = lows.df[at] if len(lows.df) else np.zeros(len(src), dtype=np.int64)
    if todo:
        good[todo] = sub.good
        df[todo] = sub.df
    by_prefix = None
    if lows.by_prefix is not None and sub.by_prefix is not None:
        by_prefix = (lows.by_prefix[at] if len(lows.by_prefix)
                     else np.zeros(len(src), dtype=np.int8))
        if todo:
            by_prefix[todo] = sub.by_prefix
    pos = dict(zip(todo, range(len(todo)), strict=True))
    o_entry, s_entry = lows.entry, sub.entry

    def entry(q: int) -> tuple[int, int] | None:
        i = pos.get(q)
        return o_entry(src[q]) if i is None else s_entry(i)

    return Lows(good, df, entry, by_prefix)

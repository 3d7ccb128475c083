"""Pieces of a text (tokens between breaks) read once and shared by several word models.

:meth:`~presidio_delink.text.Tokenizer.pieces` cuts a text into *pieces*: runs of
tokens between two breaks, each with whether a hard break (a placeholder or the end of
the text) closes it.  Two word models differ from another only in where they break:

* ``folded-dash`` reads the words of ``folded`` and also breaks at a free-standing dash
  (one that is not between two word characters, see ``text.DASHES``);
* ``surface`` reads the words of ``fine`` and also breaks at every character other than
  white space between two words.

So, for a text where nothing invisible was removed (the token offsets are those of the
text as scanned), their pieces are the other model's pieces cut further
(:func:`cut_at_dashes`, :func:`cut_at_marks`), one pass over the tokens instead of a
second reading of the text.  Why the tokens are the same:

* ``folded-dash`` scans the same chunks, cuts them at the same marks and normalises the
  same words as ``folded``; a dash only adds a break where the scanner meets it alone.
  The scanner keeps a mark inside a chunk exactly when word characters stand on both
  of its sides (a chunk is a word, then any number of one mark and a word), and a
  break that falls between two pieces, or after a piece's last token, changes no
  piece: no token follows it before the next break.
* ``surface`` takes every ``fine`` word of a chunk as its own unit, with a break before
  each but the first; ``fine`` finds the same words, since the marks it cuts a chunk
  at (breaking punctuation other than the period) never join two parts of a word.  With
  nothing removed, no combining mark is left in a word, so each word is one token in
  both.

A piece cut in two closes its first part with a soft break; the last part keeps the
piece's own break (a hard break right after a soft one makes the piece before it hard in
either reading).

The module also holds the helpers over pieces and segments that other modules import
from :mod:`presidio_delink.text` (:func:`join_soft`, :func:`apply_breaks`,
:func:`iter_ngrams`).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol, TypeVar

__all__ = ["apply_breaks", "cut_at_dashes", "cut_at_marks", "iter_ngrams", "join_soft"]


class _Span(Protocol):
    """What a token offers here (``text.Token``): its word and its offsets."""

    @property
    def word(self) -> str: ...

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


_T = TypeVar("_T")
_S = TypeVar("_S", bound=_Span)

Pieces = list[tuple[list[_S], bool]]


def free_dashes(text: str, dashes: Iterable[str]) -> list[int]:
    """Where ``text`` holds a dash that the scanner reads alone: not between two word
    characters (``[^\\W_]``) on both sides."""
    cls = "".join(sorted(re.escape(d) for d in dashes))
    rx = _DASH_RES.get(cls)
    if rx is None:
        rx = _DASH_RES[cls] = re.compile(rf"(?<![^\W_])[{cls}]|[{cls}](?![^\W_])")
    return [m.start() for m in rx.finditer(text)]


_DASH_RES: dict[str, re.Pattern[str]] = {}


def cut_at_dashes(text: str, pieces: Pieces[_S], dashes: Iterable[str]) -> Pieces[_S]:
    """``pieces`` (of a word model that reads dashes as words do) cut where a dash stands
    alone between two tokens of a piece (see the module's docstring)."""
    cuts = free_dashes(text, dashes)
    if not cuts:
        return pieces
    out: Pieces[_S] = []
    for toks, hard in pieces:
        lo = bisect_left(cuts, toks[0].end)
        if lo == len(cuts) or cuts[lo] >= toks[-1].start:
            out.append((toks, hard))
            continue
        cur: list[_S] = [toks[0]]
        for prev, tok in zip(toks, toks[1:], strict=False):
            # a dash between the two: the next cut at or after `prev.end` lies before `tok`
            while lo < len(cuts) and cuts[lo] < prev.end:
                lo += 1
            if lo < len(cuts) and cuts[lo] < tok.start:
                out.append((cur, False))
                cur = []
            cur.append(tok)
        out.append((cur, hard))
    return out


def cut_at_marks(text: str, pieces: Pieces[_S]) -> Pieces[_S]:
    """``pieces`` cut wherever something other than white space stands between two tokens
    of a piece (see the module's docstring)."""
    out: Pieces[_S] = []
    for toks, hard in pieces:
        cur: list[_S] = [toks[0]]
        for prev, tok in zip(toks, toks[1:], strict=False):
            a, b = prev.end, tok.start
            if a < b and not (b - a == 1 and text[a] == " ") and not text[a:b].isspace():
                out.append((cur, False))
                cur = []
            cur.append(tok)
        out.append((cur, hard))
    return out


def join_soft(pieces: Iterable[tuple[list[_T], bool]]) -> list[list[_T]]:
    """Pieces (see :meth:`~presidio_delink.text.Tokenizer.pieces`: each with whether a
    hard break closes it) joined across soft breaks: the segments of a view that crosses
    punctuation."""
    segs: list[list[_T]] = []
    cur: list[_T] = []
    for seg, hard in pieces:
        cur += seg
        if hard:
            segs.append(cur)
            cur = []
    if cur:
        segs.append(cur)
    return segs


def apply_breaks(marked: list[int], break_on_punctuation: bool) -> list[int]:
    """Word ids with both kinds of break (see
    :meth:`~presidio_delink.text.Tokenizer.encode_marked`) as one break mode's ids, ``-1``
    closing each segment."""
    if break_on_punctuation:
        return [-1 if i == -2 else i for i in marked]
    return [i for i in marked if i != -2]


def iter_ngrams(seg: Sequence[_S], max_n: int) -> Iterator[tuple[str, int, int]]:
    """Yield ``(key, start, end)`` of every N-gram of one segment."""
    words = [t.word for t in seg]
    for i in range(len(seg)):
        for n in range(1, min(max_n, len(seg) - i) + 1):
            yield " ".join(words[i : i + n]), seg[i].start, seg[i + n - 1].end

"""The part of a sentence the sentence step asks about: its clauses that hold the named runs.

A long sentence holds many words the rewrite must keep (placeholders, names, numbers,
terms), and a small model restating all of it changes or drops some of them, which the
fact check then refuses.  :func:`piece` cuts a sentence at its clause marks (a comma,
semicolon, colon or dash before a space, outside brackets and quotes) and keeps the
clauses from the one holding the first named run to the one holding the last, widened by
whole clauses to at least :data:`MIN_WORDS` words.  The model then restates a clause, which
is still grammatical on its own, in fewer tokens; the words around it stay as written.
``O(len(sentence))``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["MIN_WORDS", "piece"]

#: Fewest words a piece holds where the sentence has them: a shorter one gives the model
#: nothing to restate but the named words themselves.
MIN_WORDS = 8

#: A piece this close to the whole sentence (share of its characters) is the sentence.
WHOLE = 0.8

_MARK = re.compile(r"[,;:]\s+|\s+[\u2013\u2014-]{1,2}\s+")
_WORD = re.compile(r"\w+")
_OPEN, _CLOSE = "([{\u201c", ")]}\u201d"


def _cuts(text: str, a: int, b: int, runs: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``(stop, start)`` of each clause mark in ``text[a:b]``: the clause before it ends at
    ``stop`` (the mark left out), the next starts at ``start``; only marks outside
    brackets, curly quotes and straight double quotes, and outside every run."""
    out = []
    depth, straight, pos = 0, 0, a
    for m in _MARK.finditer(text, a, b):
        for c in text[pos : m.start()]:
            if c in _OPEN:
                depth += 1
            elif c in _CLOSE:
                depth = max(0, depth - 1)
            elif c == '"':
                straight ^= 1
        pos = m.start()
        if depth or straight or m.end() >= b:
            continue
        if any(x < m.end() and m.start() < y for x, y in runs):
            continue
        out.append((m.start(), m.end()))
    return out


def piece(
    text: str,
    a: int,
    b: int,
    named: Sequence[tuple[int, int]],
    runs: Sequence[tuple[int, int]] = (),
) -> tuple[int, int]:
    """Bounds in ``text`` of the part of the sentence ``text[a:b]`` to restate: the clauses
    from the one holding the first of the ``named`` spans to the one holding the last,
    widened clause by clause (after it first, then before it) to :data:`MIN_WORDS` words;
    ``(a, b)`` when that is the whole sentence or nearly (:data:`WHOLE`), or when nothing
    is named.  No bound falls inside one of ``runs`` (every span the pass edits)."""
    if not named:
        return a, b
    cuts = _cuts(text, a, b, [*runs, *named])
    first, last = min(x for x, _ in named), max(y for _, y in named)
    starts = [a] + [s for _e, s in cuts]
    stops = [e for e, _s in cuts] + [b]
    i = max(k for k, s in enumerate(starts) if s <= first)
    j = min(k for k, e in enumerate(stops) if e >= last)
    while len(_WORD.findall(text, starts[i], stops[j])) < MIN_WORDS and (
        j < len(stops) - 1 or i > 0
    ):
        if j < len(stops) - 1:
            j += 1
        else:
            i -= 1
    ps, pe = starts[i], stops[j]
    if (pe - ps) >= WHOLE * (b - a):
        return a, b
    return ps, pe

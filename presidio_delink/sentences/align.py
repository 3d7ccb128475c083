"""Word alignment of a sentence and its rewrite, for the edit and the audit.

Both sentences are cut into words and punctuation marks (offsets kept) and aligned by
:class:`difflib.SequenceMatcher` (longest matching blocks, no junk heuristic): the blocks
that differ are the changes the audit records, each with its place in the old sentence.
The edit written into the text is one span, from the first changed word to the last
(:func:`changed_span`): the words around it stay as they were, so marks and offsets
outside it are kept.  ``O(words²)`` at worst, a sentence at a time.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

__all__ = ["Change", "changed_span", "changes"]

_TOKEN = re.compile(r"\[[A-Z][A-Z_ ]*\]|<[A-Z][A-Z_]*>|\w+(?:['\u2019-]\w+)*|[^\w\s]")


@dataclass(frozen=True)
class Change:
    """One changed block: ``old[start:end]`` (empty for an insertion at ``start``) became
    ``new``; ``n_words`` words of the old sentence changed (punctuation not counted)."""

    start: int
    end: int
    original: str
    new: str
    n_words: int


def _tokens(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text)]


def _is_word(tok: str) -> bool:
    return any(c.isalnum() for c in tok)


def changes(old: str, new: str) -> list[Change]:
    """The changed blocks from ``old`` to ``new``, in order (nothing when equal)."""
    a, b = _tokens(old), _tokens(new)
    sm = difflib.SequenceMatcher(None, [t[2] for t in a], [t[2] for t in b], autojunk=False)
    out = []
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            continue
        start = a[i1][0] if i1 < len(a) else len(old)
        end = a[i2 - 1][1] if i2 > i1 else start
        ns = b[j1][0] if j1 < len(b) else len(new)
        ne = b[j2 - 1][1] if j2 > j1 else ns
        out.append(Change(start, end, old[start:end], new[ns:ne],
                          sum(_is_word(t[2]) for t in a[i1:i2])))
    return out


def changed_span(old: str, new: str) -> tuple[int, int, str] | None:
    """``(start, end, replacement)``: the one edit of ``old`` that gives ``new`` with the
    equal words before the first change and after the last one left in place; None when
    the two hold the same words."""
    a, b = _tokens(old), _tokens(new)
    if [t[2] for t in a] == [t[2] for t in b]:
        return None
    p = 0
    while p < min(len(a), len(b)) and a[p][2] == b[p][2]:
        p += 1
    s = 0
    while s < min(len(a), len(b)) - p and a[-1 - s][2] == b[-1 - s][2]:
        s += 1
    if len(a) - s == p or len(b) - s == p:
        # a pure insertion or deletion: one equal word more, so both sides hold words
        # and the spaces around the edit are the new sentence's
        if p > 0:
            p -= 1
        else:
            s -= 1
    start, end = a[p][0], a[len(a) - 1 - s][1]
    ns, ne = b[p][0], b[len(b) - 1 - s][1]
    return start, end, new[ns:ne]

"""Word alignment of a sentence and its rewrite, for the edit and the audit.

Both sentences are cut into words and punctuation marks (offsets kept) and aligned by
:class:`difflib.SequenceMatcher` (longest matching blocks, no junk heuristic): the blocks
that differ are the changes the audit records, each with its place in the old sentence.
The edit written into the text is one span, from the first changed word to the last
(:func:`changed_span`): the words around it stay as they were, so marks and offsets
outside it are kept.  ``O(words²)`` at worst, a sentence at a time.

:func:`splice` uses the same alignment to take from an answer only its changes of the named
phrases, the rest of the sentence restored to the input's words.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from presidio_delink.edits import FUNCTION_WORDS

__all__ = ["Change", "Splice", "changed_span", "changes", "restore_deleted", "splice"]

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


@dataclass(frozen=True)
class Splice:
    """An answer cut down to its changes of the named phrases (:func:`splice`).

    Attributes:
        sentence: the input sentence with only the kept blocks written as the answer has
            them (None: nothing to keep, or the splice is refused, ``reason`` says why).
        deleted: the named phrases a kept block deleted outright (the caller redacts them:
            a deletion is a redaction, not a rewrite); they stand in ``sentence`` as in
            the input.
        reason: why nothing is spliced (None when ``sentence`` is set).
    """

    sentence: str | None
    deleted: tuple[str, ...] = ()
    reason: str | None = None


def _content(tok: str) -> bool:
    return _is_word(tok) and tok.casefold() not in FUNCTION_WORDS


def splice(old: str, new: str, spans: Sequence[tuple[int, int]]) -> Splice:
    """``old`` with only the changed blocks of ``new`` (the word alignment of
    :func:`changes`) that overlap a named span of ``spans`` (offsets in ``old``); every
    other block is restored to ``old``'s words, a pure insertion left out.

    A kept block may reach over words of ``old`` outside the spans only where those are
    function words or punctuation (``the court's ruling`` -> ``the decision``); one that
    also changes a content word outside them is restored whole.  The splice is refused
    (``reason`` set) when a content word of a restored block also stands in a kept block
    (the answer moved it: ``subsequently detained`` -> ``held ... subsequently``, restored,
    would say it twice).  A kept block that deletes a named phrase holding a content word is
    restored, its phrases listed in ``deleted``.  ``O(words²)`` at worst."""
    a, b = _tokens(old), _tokens(new)
    sm = difflib.SequenceMatcher(None, [t[2] for t in a], [t[2] for t in b], autojunk=False)

    def named(i: int) -> bool:
        return any(a[i][0] < y and x < a[i][1] for x, y in spans)

    kept: list[tuple[int, int, str]] = []  # (start, end, replacement) in old
    restored: list[str] = []
    kept_words: list[str] = []
    deleted: list[str] = []
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            continue
        inside = [i for i in range(i1, i2) if named(i)]
        outside_content = any(_content(a[i][2]) for i in range(i1, i2) if not named(i))
        if not inside or outside_content:
            restored += [a[i][2].casefold() for i in range(i1, i2) if _content(a[i][2])]
            continue
        if not any(_is_word(t[2]) for t in b[j1:j2]):
            phrases = [old[x:y] for x, y in spans
                       if any(a[i][0] < y and x < a[i][1] for i in inside)]
            if any(_content(t[2]) for p in phrases for t in _tokens(p)):
                deleted += phrases
                continue
        kept.append((a[i1][0], a[i2 - 1][1], new[b[j1][0] : b[j2 - 1][1]] if j2 > j1 else ""))
        kept_words += [t[2].casefold() for t in b[j1:j2] if _content(t[2])]
    twice = sorted(set(restored) & set(kept_words))
    if twice:
        return Splice(None, reason="repeats a word: " + ", ".join(twice))
    if not kept:
        return Splice(None, tuple(dict.fromkeys(deleted)), "changes no named phrase")
    out, pos = [], 0
    for s, e, rep in kept:
        head = old[pos:s]
        if not rep and head.endswith(" "):  # a block left out takes one space with it
            head = head[:-1]
        out += [head, rep]
        pos = e
    out.append(old[pos:])
    return Splice("".join(out), tuple(dict.fromkeys(deleted)))


def restore_deleted(
    old: str, new: str, spans: Sequence[tuple[int, int]]
) -> tuple[str, tuple[str, ...]]:
    """``new`` with each named phrase of ``old`` it deleted outright put back in its place,
    and those phrases (the caller redacts them: a deletion is a redaction, not a rewrite).
    Only a changed block of :func:`changes`' alignment that overlaps a named span of
    ``spans``, holds a content word of one, and has no word in ``new`` counts; ``new``
    unchanged and no phrase when there is none."""
    a, b = _tokens(old), _tokens(new)
    sm = difflib.SequenceMatcher(None, [t[2] for t in a], [t[2] for t in b], autojunk=False)
    out, pos, phrases = [], 0, []
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal" or i2 == i1 or any(_is_word(t[2]) for t in b[j1:j2]):
            continue
        hit = [old[x:y] for x, y in spans
               if any(a[i][0] < y and x < a[i][1] for i in range(i1, i2))]
        if not any(_content(t[2]) for p in hit for t in _tokens(p)):
            continue
        phrases += hit
        words = old[a[i1][0] : a[i2 - 1][1]]
        at = b[j1][0] if j1 < len(b) else len(new)
        if at < len(new):
            out += [new[pos:at], words, " "]
        else:
            out += [new[pos:at].rstrip(), " ", words]
        pos = at
    out.append(new[pos:])
    return "".join(out), tuple(dict.fromkeys(phrases))

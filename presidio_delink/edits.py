"""Minimal edits: which words to change, where to ask for their rewrite, and how an edit
applies.

Pure functions (no index, no LLM).  A linkable N-gram is broken by changing any one of
its words, so the fewest words to change is a minimum *stabbing set* of the flagged
intervals, found optimally by the greedy pass by right end (:func:`stabbing_tokens`;
:func:`choose_tokens` prefers, among the sets of fewest words, content words and words
away from the document's structure).  The chosen words form :class:`Run` s; they are asked
about by sentence or passage (:func:`passage_groups`) and applied with their marks carried
over (:func:`apply`).

Whether a proposed replacement is acceptable is :mod:`presidio_delink.acceptance`'s, and
the shared word lists are :mod:`presidio_delink.wordlists`'; both are re-exported here, so
``from presidio_delink.edits import rejection`` keeps working.
"""

from __future__ import annotations

import bisect
import collections
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from presidio_delink.acceptance import (
    NEAR_WORDS,
    ROUND_COUNTS,
    candidate_list,
    fold_word,
    fold_words,
    lower_words,
    neighbours,
    pick,
    rejection,
    trigrams,
)
from presidio_delink.text import Token
from presidio_delink.wordlists import COMMON_WORDS, FUNCTION_WORDS, REDACTED

__all__ = [
    "BOUNDARY_COST",
    "COMMON_WORDS",
    "FUNCTION_WORDS",
    "HEADING_COST",
    "NEAR_WORDS",
    "REDACTED",
    "ROUND_COUNTS",
    "Run",
    "apply",
    "candidate_list",
    "carry",
    "choose_tokens",
    "dropped",
    "fit",
    "fold_word",
    "fold_words",
    "lower_words",
    "merged_redactions",
    "neighbours",
    "passage_groups",
    "pick",
    "rejection",
    "runs",
    "sentence_bounds",
    "sentence_groups",
    "stabbing_tokens",
    "structure_costs",
    "tokens_within",
    "trigrams",
    "whole_words",
    "word_cost",
]

_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\n\s*\n|\n(?=\s*[\-\u2022\d(])")


@dataclass(frozen=True)
class Run:
    """Contiguous chosen words of one segment: what gets rewritten or redacted as one."""

    start: int
    end: int
    n_words: int


def stabbing_tokens(intervals: Iterable[tuple[int, int]], tokens: Sequence[Token]) -> list[int]:
    """Indices (into ``tokens``) of a minimum set of tokens hitting every interval.

    Args:
        intervals: character spans ``[start, end)`` of flagged N-gram occurrences (of any
            view); each holds at least one whole token.
        tokens: the text's tokens, in order.

    Greedy by right end: take the last token of the first interval (by end) not yet hit.
    Optimal for intervals on a line (an exchange argument: any solution must hit that
    interval, and its last token hits every later-ending interval the others would).
    """
    ends = [t.end for t in tokens]
    chosen: list[int] = []
    last_start = -1  # start of the most recently chosen token
    for start, end in sorted(set(intervals), key=lambda x: (x[1], x[0])):
        if last_start >= start:
            continue  # the last chosen token lies inside [start, end)
        # The last token inside the interval (intervals of every view end at a token end
        # of this finest tokenisation; the search also copes with one that does not).
        i = bisect.bisect_right(ends, end) - 1
        if i < 0 or tokens[i].start < start:
            raise ValueError(f"no token inside the flagged interval [{start}, {end})")
        chosen.append(i)
        last_start = tokens[i].start
    return sorted(set(chosen))


def word_cost(word: str) -> int:
    """How badly a rewriter does with ``word`` (a normalised token): 0 for a content word,
    1 for a number or code, 3 for a function word."""
    w = word.casefold()
    if w in FUNCTION_WORDS or len(w) == 1:
        return 3
    if any(c.isdigit() for c in w):
        return 1
    return 0


BOUNDARY_COST = 4
"""Extra cost of the first or last word of a paragraph (see :func:`structure_costs`): more
than any word's own cost, so that among the sets of the fewest words one that leaves the
document's structure alone is chosen."""
HEADING_COST = 8
"""Extra cost of a word of a heading: the most visible structure, dearer than any other
word (a function word at a paragraph edge costs 3 + 4)."""

_HEADING_LINE = re.compile(r"(?m)^[ \t]*([^\n]{1,80}?)[ \t]*$")


def tokens_within(starts: Sequence[int], a: int, b: int) -> range:
    """Indices of the tokens (their sorted ``starts``) that start in ``[a, b)``."""
    return range(bisect.bisect_left(starts, a), bisect.bisect_left(starts, b))


def structure_costs(text: str, tokens: Sequence[Token]) -> list[int]:
    """Per token, :data:`HEADING_COST` for a word of a heading (a line of at most 80
    characters with no lower-case letter and at least one letter, or one that ends
    without sentence punctuation between two paragraph breaks), else :data:`BOUNDARY_COST`
    for the first and last word of a paragraph, else 0."""
    marked = [0] * len(tokens)
    if not tokens:
        return marked
    starts = [t.start for t in tokens]
    spans: list[tuple[int, int]] = []
    for m in _HEADING_LINE.finditer(text):
        line = m.group(1)
        if not any(c.isalpha() for c in line):
            continue
        before = text[: m.start()].rstrip(" \t")
        after = text[m.end() :].lstrip(" \t")
        alone = (not before or before.endswith("\n\n")) and (
            not after or after.startswith("\n\n")
        )
        if not any(c.islower() for c in line) or (alone and line[-1] not in ".!?;:,"):
            spans.append((m.start(1), m.end(1)))
    for a, b in spans:
        for i in tokens_within(starts, a, b):
            marked[i] = HEADING_COST
    for i, t in enumerate(tokens):
        gap_before = text[tokens[i - 1].end : t.start] if i else text[: t.start]
        gap_after = text[t.end : tokens[i + 1].start] if i + 1 < len(tokens) else text[t.end :]
        if "\n\n" in gap_before.replace(" ", "") or "\n\n" in gap_after.replace(" ", ""):
            marked[i] = max(marked[i], BOUNDARY_COST)
    return marked


def choose_tokens(
    intervals: Iterable[tuple[int, int]],
    tokens: Sequence[Token],
    extra: Sequence[int] | None = None,
    *,
    unit: int | None = None,
) -> list[int]:
    """A minimum stabbing set (as :func:`stabbing_tokens`) of least :func:`word_cost`:
    among all sets of the fewest tokens hitting every interval, one that prefers content
    words, which a rewriter can generalise, to function words.

    Dynamic programme over tokens, with ``(count, cost)`` compared lexicographically:
    ``best[j]`` is the best set whose last token is ``j`` hitting every interval that ends
    before ``j``.  The previous chosen token ``i`` must hit every interval ending before
    ``j``, i.e. ``i >= L(j)``, the largest start of those intervals; so ``best[j] =
    (1, cost(j)) + min best[i] over L(j) <= i < j`` (or ``(1, cost(j))`` when no interval
    ends before ``j``).  ``L`` never decreases, so a monotone deque gives the window
    minimum: O(tokens + intervals).  The answer is the best ``j`` at or after the largest
    start of all intervals.  Same count as the greedy (both optimal).  ``extra`` (per
    token) is added to each word's cost (:func:`structure_costs`); it never changes the
    count.  With ``unit`` (the cost of one more token), costs are summed instead: a set
    of more tokens wins where its ``extra`` costs are lower by more than ``unit`` per
    token, so a word dear enough is worth two cheap ones.
    """
    ivs = sorted(set(intervals), key=lambda x: (x[1], x[0]))
    if not ivs:
        return []
    starts = [t.start for t in tokens]
    ends = [t.end for t in tokens]
    # Intervals as inclusive token index ranges.
    tok_ivs = []
    for a, b in ivs:
        lo = bisect.bisect_left(starts, a)
        hi = bisect.bisect_right(ends, b) - 1
        if lo > hi or lo >= len(tokens):
            raise ValueError(f"no token inside the flagged interval [{a}, {b})")
        tok_ivs.append((lo, hi))
    lo_all = min(lo for lo, _ in tok_ivs)
    hi_all = max(hi for _, hi in tok_ivs)
    # need[j]: largest interval start among intervals ending strictly before j.
    by_end = sorted(tok_ivs, key=lambda x: x[1])
    per_token = 1 << 20 if unit is None else unit  # 1 << 20: the count comes first
    best: dict[int, int] = {}
    prev: dict[int, int] = {}
    window: collections.deque[int] = collections.deque()  # candidate i, best[i] increasing
    need = -1
    e_ptr = 0
    last_start = max(lo for lo, _ in tok_ivs)
    nxt = lo_all  # next i to push into the window
    for j in range(lo_all, hi_all + 1):
        while e_ptr < len(by_end) and by_end[e_ptr][1] < j:
            need = max(need, by_end[e_ptr][0])
            e_ptr += 1
        while nxt < j:
            if nxt in best:
                while window and best[window[-1]] >= best[nxt]:
                    window.pop()
                window.append(nxt)
            nxt += 1
        while window and window[0] < need:
            window.popleft()
        own = per_token + word_cost(tokens[j].word) + (extra[j] if extra is not None else 0)
        if need < 0:
            best[j] = own
            prev[j] = -1
        elif window:
            best[j] = own + best[window[0]]
            prev[j] = window[0]
    finals = [j for j in best if j >= last_start]
    j = min(finals, key=lambda x: (best[x], -x))
    out = []
    while j >= 0:
        out.append(j)
        j = prev[j]
    return sorted(out)


def runs(chosen: Sequence[int], segments: Sequence[Sequence[Token]]) -> list[Run]:
    """Group chosen token indices (into the flattened segments) into contiguous runs."""
    flat: list[tuple[int, Token]] = [(s, t) for s, seg in enumerate(segments) for t in seg]
    out: list[Run] = []
    prev = -2
    for i in sorted(set(chosen)):
        s, t = flat[i]
        if out and i == prev + 1 and flat[prev][0] == s:
            last = out[-1]
            out[-1] = Run(last.start, t.end, last.n_words + 1)
        else:
            out.append(Run(t.start, t.end, 1))
        prev = i
    return out


def whole_words(
    chosen: Sequence[int], tokens: Sequence[Token], words: Sequence[Token]
) -> list[int]:
    """Widen chosen tokens to whole written words: every token of a word that holds a
    chosen one (``non-attendance``, ``applicant’s``).

    Changing one part of a compound leaves the other part as a new word for text models
    that keep inner hyphens and apostrophes (``[REDACTED]-attendance``): a new, possibly
    rare word.  ``words`` are those models' tokens (same offsets as the text).
    """
    if not chosen:
        return []
    starts = [w.start for w in words]
    out = set(chosen)
    for i in chosen:
        j = bisect.bisect_right(starts, tokens[i].start) - 1
        if j < 0 or words[j].end < tokens[i].end:
            continue
        a, b = words[j].start, words[j].end
        k = i
        while k > 0 and tokens[k - 1].start >= a:
            k -= 1
            out.add(k)
        k = i
        while k + 1 < len(tokens) and tokens[k + 1].end <= b:
            k += 1
            out.add(k)
    return sorted(out)


def sentence_bounds(text: str) -> list[tuple[int, int]]:
    """Rough sentence spans (enough to give an LLM local context)."""
    out, pos = [], 0
    for m in _SENTENCE_END.finditer(text):
        if m.start() > pos:
            out.append((pos, m.start()))
        pos = m.end()
    if pos < len(text):
        out.append((pos, len(text)))
    return out


def sentence_groups(
    text: str, spans: Iterable[tuple[int, int]]
) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """Spans grouped by the sentence holding them (one LLM request per group).

    Returns ``{(sentence start, end): [spans, in order]}``; a span across the rough
    sentence bounds gets its own context (200 characters either side).
    """
    bounds = sentence_bounds(text)
    out: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for a, b in spans:
        sb = next(((x, y) for x, y in bounds if x <= a and b <= y), None)
        if sb is None:
            sb = (max(0, a - 200), min(len(text), b + 200))
        out.setdefault(sb, []).append((a, b))
    return out


def passage_groups(
    text: str,
    spans: Iterable[tuple[int, int]],
    max_chars: int = 700,
    max_spans: int = 8,
) -> list[tuple[tuple[int, int], list[tuple[int, int]]]]:
    """Spans grouped into passages of consecutive sentences (one LLM request each).

    A passage starts at a sentence holding a span and takes the following sentences while
    it stays within ``max_chars`` characters and ``max_spans`` spans (a paragraph or
    several short ones: fewer calls than one per sentence, with more context); it ends at
    its last sentence holding a span.  A sentence longer than ``max_chars`` is a passage
    of its own, and a sentence with more than ``max_spans`` spans is asked about in
    several requests (same passage, ``max_spans`` spans each); a span across the rough
    sentence bounds belongs to the sentence of its start, whose passage is widened to hold
    it.

    Returns:
        ``[((passage start, end), [spans, in order])]``, in text order.
    """
    bounds = sentence_bounds(text) or [(0, len(text))]
    starts = [a for a, _ in bounds]
    per: dict[int, list[tuple[int, int]]] = {}
    for a, b in sorted(set(spans)):
        i = max(0, bisect.bisect_right(starts, a) - 1)
        per.setdefault(i, []).append((a, b))
    out: list[tuple[tuple[int, int], list[tuple[int, int]]]] = []
    order = sorted(per)
    k = 0
    while k < len(order):
        i = order[k]
        group = list(per[i])
        a = min(bounds[i][0], group[0][0])
        end = max(bounds[i][1], max(b for _, b in group))
        k += 1
        while k < len(order):
            j = order[k]
            nxt = per[j]
            new_end = max(bounds[j][1], max(b for _, b in nxt))
            if new_end - a > max_chars or len(group) + len(nxt) > max_spans:
                break
            group += nxt
            end = new_end
            k += 1
        for x in range(0, len(group), max_spans):
            out.append(((a, end), group[x : x + max_spans]))
    return out


def fit(new: str, text: str, start: int, end: int) -> str:
    """Keep word boundaries: a replacement of ``text[start:end]`` glued to a neighbouring
    letter gets a space."""
    if new == REDACTED:
        return new
    if start > 0 and text[start - 1].isalnum() and new[:1].isalnum():
        new = " " + new
    if end < len(text) and text[end].isalnum() and new[-1:].isalnum():
        new = new + " "
    return new


def apply(
    text: str,
    edits: Sequence[tuple[int, int, str]],
    marks: Sequence[tuple[int, int, str]] = (),
) -> tuple[str, list[tuple[int, int, str]]]:
    """Replace non-overlapping ``(start, end, new)`` spans.

    ``marks`` are labelled spans of ``text`` (earlier edits) carried over to the new text:
    shifted, or merged into an edit they overlap.  Returns ``(new_text, marks)``, the
    marks including one per edit, labelled with the edit's replacement kind ("llm" or
    "redacted", from ``new``).
    """
    parts: list[str] = []
    pos = 0
    new_marks: list[tuple[int, int, str]] = []
    delta = 0
    for a, b, new in sorted(edits, key=lambda e: e[0]):
        if a < pos:
            raise ValueError("overlapping edits")
        parts.append(text[pos:a])
        parts.append(new)
        label = "redacted" if new == REDACTED else "llm"
        if new:  # a word left out leaves nothing to mark
            new_marks.append((a + delta, a + delta + len(new), label))
        delta += len(new) - (b - a)
        pos = b
    parts.append(text[pos:])
    return "".join(parts), sorted(new_marks + carry(marks, edits))


def merged_redactions(
    text: str, marks: Sequence[tuple[int, int, str]]
) -> tuple[str, list[tuple[int, int, str]]]:
    """``text`` with every run of adjacent :data:`REDACTED` placeholders (apart by spaces
    only) that holds one of this tool's redactions (a mark labelled ``"redacted"``)
    written as one placeholder; runs of the input's own placeholders alone stay as they
    are.  Returns ``(text, marks)``.

    Why: one placeholder a word tells a reader how many words stood there, and so where
    each kept word stood in the source.  An attacker who pairs the words on either side
    of a placeholder at that distance (BM25 over the pairs at most three positions apart)
    found the source of 81 of 127 TAB test outputs of ``--protect all`` first when each
    word had its own placeholder (``benchmarks/results/ranked_crowd.md``)."""
    own = {(a, b) for a, b, label in marks if label == "redacted"}
    found = [(m.start(), m.end()) for m in re.finditer(re.escape(REDACTED), text)]
    edits: list[tuple[int, int, str]] = []
    i = 0
    while i < len(found):
        j = i
        while j + 1 < len(found) and not text[found[j][1] : found[j + 1][0]].strip(" "):
            j += 1
        if j > i and any(found[x] in own for x in range(i, j + 1)):
            edits.append((found[i][0], found[j][1], REDACTED))
        i = j + 1
    if not edits:
        return text, list(marks)
    return apply(text, edits, marks)


def dropped(text: str, start: int, end: int) -> tuple[int, int, str]:
    """The edit that leaves ``text[start:end]`` out (a modifier dropped:
    :mod:`presidio_delink.candidates.drop`): its words and the space after them, or
    before them where none follows."""
    if text[end : end + 1] == " ":
        return start, end + 1, ""
    if start > 0 and text[start - 1] == " ":
        return start - 1, end, ""
    return start, end, ""


def carry(
    marks: Sequence[tuple[int, int, str]], edits: Sequence[tuple[int, int, str]]
) -> list[tuple[int, int, str]]:
    """``marks`` (labelled spans of a text) as they stand once the non-overlapping
    ``edits`` are applied to it: shifted by the edits before them; a mark an edit overlaps
    is dropped (absorbed by the edit)."""
    spans = sorted(edits, key=lambda e: e[0])
    shift: list[tuple[int, int]] = []  # (old end of edit, delta after it)
    delta = 0
    for a, b, new in spans:
        delta += len(new) - (b - a)
        shift.append((b, delta))
    out = []
    for ma, mb, label in marks:
        if any(a < mb and ma < b for a, b, _ in spans):
            continue  # absorbed by an edit
        d = 0
        for end, dl in shift:
            if end <= ma:
                d = dl
        out.append((ma + d, mb + d, label))
    return out


"""The fact check of a sentence written again: what it must keep, and what it may not add.

A sentence rewrite may change the named spans (the words that link), the small words and
the order; anything else it changes is a changed fact.  Definitions, for the input
sentence ``S`` with named spans ``P`` and the answer ``A`` (words: letter runs with inner
apostrophes, casefolded; a hyphen of any kind splits, so ``non‑pecuniary`` reads alike
however its hyphen is written; placeholders ``[REDACTED]``, ``<PERSON>`` as one word;
numbers as written):

* every *content word* of ``S`` outside ``P`` (a word not in
  :data:`~presidio_delink.edits.FUNCTION_WORDS`) occurs in ``A`` at least as often, in the
  same form: the same written word is the same lemma in the same number and tense
  (``applicants`` -> ``applicant`` and ``ordered`` -> ``orders`` are losses);
* every placeholder and every number of ``S`` outside ``P`` is in ``A``; ``A`` has no
  placeholder, number or number word (``two``, ``fifty``) that ``S`` lacks;
* the negations (``not``, ``no``, ``never``, ``without``, ``n't``, ...) of ``S`` outside
  ``P`` are in ``A``, and ``A`` has no more than ``S`` has in all (none added);
* likewise the connectives of time, cause, condition, contrast and restriction
  (:data:`CONNECTIVES`: ``before``, ``after``, ``because``, ``if``, ``but``, ``only``, ...):
  small words, but ``before`` -> ``after`` or ``and`` -> ``but`` changes what the sentence
  says;
* a capitalised word of ``A`` is a word of ``S``, a generic word
  (:data:`~presidio_delink.edits.COMMON_WORDS`), or, first in ``A``, a word the document
  writes in lower case;
* no named span comes back whole (a one-word span: unless ``S`` also has it outside ``P``).

The check is exact on words, so it refuses some good rewrites (``the judge's order`` ->
``the order of the judge`` keeps ``judge`` but not ``judge's``); it never passes a lost or
new content word, number, placeholder or negation.  ``O(words)``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from presidio_delink.edits import COMMON_WORDS, FUNCTION_WORDS

__all__ = [
    "CONNECTIVES", "KEPT", "NEGATIONS", "NUMBER_WORDS", "PLACEHOLDER", "Verdict", "check_facts",
    "words",
]

_WORD = re.compile(
    r"\[[A-Z][A-Z_ ]*\]|<[A-Z][A-Z_]*>|\d+(?:[.,:/]\d+)*|[^\W\d_]+(?:['\u2019][^\W\d_]+)*"
)
KEPT = "keeps a phrase to replace"
"""The fact check's reason for an answer that kept a named phrase."""
#: A placeholder as the checks read it (``[REDACTED]``, ``<PERSON>``).
PLACEHOLDER = re.compile(r"\[[A-Z][A-Z_ ]*\]|<[A-Z][A-Z_]*>")
_NEGATIONS = "not no never without nor neither none nothing nobody nowhere cannot"
NEGATIONS = frozenset(_NEGATIONS.split())
"""Words that negate: each of the input's must stay (a rewrite may not drop one)."""
_CONNECTIVES = """before after until since because although though unless if whether but
    or nor while whereas during against despite except only"""
CONNECTIVES = frozenset(_CONNECTIVES.split())
"""Function words that carry a fact (time, cause, condition, contrast, restriction): each
of the input's must stay, and a rewrite may not add one."""
_NUMBERS = """two three four five six seven eight nine ten eleven twelve thirteen fourteen
    fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty
    ninety hundred thousand million billion dozen"""
NUMBER_WORDS = frozenset(_NUMBERS.split())
"""Number words a rewrite may not bring in (``one`` is left out: ``no one``, ``one of``)."""


@dataclass(frozen=True)
class Verdict:
    """The fact check's answer: ``reason`` None when the rewrite keeps the facts; else
    what it lost or added (``words``: those words, for the request that asks again)."""

    reason: str | None
    words: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.reason is None

    def note(self) -> str:
        """``reason`` with its words, as the model is told it."""
        if self.reason is None:
            return ""
        return f"{self.reason}: {', '.join(self.words)}" if self.words else self.reason


def words(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, word)`` of ``text`` as the check reads it (written form)."""
    return [(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]


def _fold(w: str) -> str:
    return w if PLACEHOLDER.fullmatch(w) else w.casefold().replace("\u2019", "'")


def _negations(ws: Sequence[str]) -> int:
    return sum(1 for w in ws if w in NEGATIONS or w.endswith("n't"))


def _number(w: str) -> bool:
    return w[:1].isdigit() or w in NUMBER_WORDS


def check_facts(
    sentence: str,
    answer: str,
    spans: Sequence[tuple[int, int]],
    vocabulary: Collection[str] = (),
) -> Verdict:
    """Whether ``answer`` keeps the facts of ``sentence`` outside ``spans`` (character
    offsets in ``sentence``); see the module's definitions.  ``vocabulary``: words the
    document writes in lower case, which ``answer`` may open with capitalised."""
    old = words(sentence)

    def inside(a: int, b: int) -> bool:
        return any(a < y and x < b for x, y in spans)

    kept = [_fold(w) for a, b, w in old if not inside(a, b)]
    all_old = [_fold(w) for _a, _b, w in old]
    new_raw = [w for _a, _b, w in words(answer)]
    new = [_fold(w) for w in new_raw]
    have = Counter(new)
    need = Counter(
        w for w in kept
        if PLACEHOLDER.fullmatch(w) or _number(w) or w not in FUNCTION_WORDS
    )
    lost = [w for w, n in need.items() if have[w] < n and w not in NEGATIONS]
    if lost:
        what = "drops a placeholder" if all(PLACEHOLDER.fullmatch(w) for w in lost) else (
            "drops a number" if all(_number(w) for w in lost) else "drops or changes words")
        return Verdict(what, tuple(lost))
    if _negations(new) < _negations(kept):
        return Verdict("drops a negation")
    if _negations(new) > _negations(all_old):
        return Verdict("adds a negation")
    links = Counter(w for w in new if w in CONNECTIVES)
    lost = [w for w, n in Counter(w for w in kept if w in CONNECTIVES).items() if links[w] < n]
    if lost:
        return Verdict("drops a connective", tuple(lost))
    known_links = Counter(w for w in all_old if w in CONNECTIVES)
    added = [w for w, n in links.items() if n > known_links[w]]
    if added:
        return Verdict("adds a connective", tuple(added))
    known = set(all_old)
    added = [w for w in dict.fromkeys(new)
             if (PLACEHOLDER.fullmatch(w) or _number(w)) and w not in known]
    if added:
        return Verdict("adds a number or placeholder", tuple(added))
    names = [
        w for i, w in enumerate(new_raw)
        if w[:1].isupper() and not PLACEHOLDER.fullmatch(w)
        and _fold(w) not in known and _fold(w) not in COMMON_WORDS
        and not (i == 0 and _fold(w) in vocabulary)
    ]
    if names:
        return Verdict("adds a name", tuple(dict.fromkeys(names)))
    kept_phrases = []
    for x, y in spans:
        span = [_fold(w) for _a, _b, w in words(sentence[x:y])]
        if not span:
            continue
        if len(span) == 1:
            back = span[0] in have and span[0] not in kept and span[0] not in FUNCTION_WORDS
        else:
            back = any(new[i : i + len(span)] == span for i in range(len(new)))
        if back:
            kept_phrases.append(sentence[x:y])
    if kept_phrases:
        return Verdict(KEPT, tuple(dict.fromkeys(kept_phrases)))
    return Verdict(None)

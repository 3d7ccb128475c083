"""Cheap grammar checks of a replacement in its place, and the repairs they allow.

Definitions. A *determiner* is a word of :data:`DETERMINERS` (articles, demonstratives,
possessives, ``some``/``any``/``no``). A *modifier slot* is the position right after a
determiner, an adjective-looking word (the suffixes of ``_ADJ_SUFFIX``: ``illegal``,
``constitutional``, ``Criminal``) or a capitalised word inside a sentence (part of a name:
``Erzincan``, ``Martial``): there a noun, or another modifier, follows, never a new
determiner.

Checks, each a string reason or None:

* :func:`determiner_clash`: a replacement that starts with a determiner in a modifier slot
  (``the Criminal Code`` -> ``the Criminal the law``; ``an illegal the group``; ``the a
  city``). The repair, :func:`strip_determiner`, drops that determiner (``Criminal law``)
  and the result is checked again like any other candidate.
* :func:`unknown_word`: a content word of the replacement found neither in the document
  nor anywhere in the reference collection (``applicants`` -> ``testees``): the collection
  is the register the text is written in, so a word it never uses is at best odd there.
* :func:`sentence_case`: a replacement of a sentence's capitalised first word starts with
  a capital too (``In <DATE_TIME>`` -> ``At <DATE_TIME>``, not ``at``).

Why these are safe for the guarantee: they only refuse or repair candidates; every
replacement still goes through :func:`~presidio_delink.edits.rejection` and the index
check of the next pass. What they cannot catch: wrong meaning (``acquitted`` ->
``convicted``), agreement (``individuals actions``), a verb where a noun belongs; the
optional log-probability check (:mod:`presidio_delink.llm.fluency`) sees some of those.

Cost: a regular expression and a few set look-ups per candidate; :func:`unknown_word` one
index look-up per content word (the caller's ``known`` function).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from presidio_delink.edits import FUNCTION_WORDS

__all__ = [
    "DETERMINERS",
    "determiner_clash",
    "modifier_slot",
    "sentence_case",
    "strip_determiner",
    "unknown_word",
]


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


DETERMINERS = _set(
    "a an the this that these those his her its their our my your some any no another "
    "each every such"
)
_ADJ_SUFFIX = (
    "al", "ial", "ic", "ical", "ive", "ous", "ful", "less", "able", "ible", "ary", "ory",
    "ian", "ese", "ish",
)  # fmt: skip
_NOT_ADJ = _set(
    "trial appeal approval arrival denial proposal refusal removal renewal survival "
    "withdrawal dismissal disposal referral rental recital basis analysis thesis crisis "
    "diagnosis emphasis hypothesis unless regardless nevertheless"
)
"""Words with an adjective's ending that are verbs, nouns ending a phrase, or adverbs
(``to appeal the decision``, ``after the trial the court ...``)."""
_PREFIXES = _set("non anti pre post pro sub self co ex re semi multi")
_WORD = re.compile(r"[^\W\d_][\w’'-]*")
_BEFORE = re.compile(r"([^\W\d_][\w’'-]*)[ \t]+$")
_PLACEHOLDER_BEFORE = re.compile(r"(?:\[[^\[\]\n]{1,40}\]|<[^<>\n]{1,40}>)[ \t]+$")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*|[“\"(]\s*)$")


def _first_word(s: str) -> str:
    m = _WORD.match(s.strip())
    return m.group(0) if m else ""


def modifier_slot(text: str, start: int) -> bool:
    """Whether ``start`` follows a determiner, an adjective-looking word, a capitalised
    word inside its sentence, or a placeholder that itself follows a determiner (``the
    [REDACTED] ...``)."""
    left = text[max(0, start - 80) : start]
    if _PLACEHOLDER_BEFORE.search(left):
        stripped = _PLACEHOLDER_BEFORE.sub("", left)
        m = _BEFORE.search(stripped + " ")
        return m is not None and m.group(1).casefold() in DETERMINERS
    m = _BEFORE.search(left)
    if not m:
        return False
    word = m.group(1)
    low = word.casefold()
    if low in DETERMINERS:
        return True
    if low in FUNCTION_WORDS:
        return False
    before = left[: m.start(1)]
    if word[:1].isupper() and not _SENTENCE_START.search(before):
        return True  # inside a name or a capitalised title: "the Criminal ..."
    return low not in _NOT_ADJ and len(low) > 4 and low.endswith(_ADJ_SUFFIX)


def determiner_clash(text: str, start: int, replacement: str) -> str | None:
    """A replacement that opens with a determiner where one cannot stand (see
    :func:`modifier_slot`)."""
    if _first_word(replacement).casefold() in DETERMINERS and modifier_slot(text, start):
        return "a determiner after a modifier"
    return None


def strip_determiner(replacement: str) -> str:
    """``replacement`` without its opening determiner ('' when nothing else is left)."""
    rep = replacement.strip()
    first = _first_word(rep)
    if not first or first.casefold() not in DETERMINERS:
        return rep
    return rep[len(first) :].strip()


def unknown_word(replacement: str, document: str, known: Callable[[str], bool]) -> str | None:
    """A content word (3+ letters, not a function word) of ``replacement`` that neither
    ``document`` nor the collection (``known(word)``) uses; a hyphenated word is known
    when each of its parts is (``non-monetary``)."""
    doc = {w.casefold() for w in _WORD.findall(document)}
    for w in _WORD.findall(replacement):
        low = w.casefold()
        if len(low) < 3 or low in FUNCTION_WORDS or low in doc:
            continue
        pieces = re.split(r"[-‐‑’']", low)
        parts = [x for x in pieces if len(x) >= 3 and x not in _PREFIXES]
        if not known(low) and not (len(pieces) > 1 and parts and all(map(known, parts))):
            return "a word the collection never uses"
    return None


_CAPS_WORD = re.compile(r"[^\W\d_]{2,}")


def _in_heading(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a word of a line written in capitals: it is, and
    so is the word next to it on the same line (``THE CIRCUMSTANCES OF THE CASE``; an
    acronym alone, ``the PKK``, is not)."""
    span = text[start:end]
    if not (_CAPS_WORD.fullmatch(span) and span.isupper()):
        return False
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    before = _CAPS_WORD.findall(text[line_start:start])
    after = _CAPS_WORD.findall(text[end : len(text) if line_end < 0 else line_end])
    near = ([before[-1]] if before else []) + ([after[0]] if after else [])
    return any(w.isupper() for w in near)


def sentence_case(replacement: str, text: str, start: int, end: int) -> str:
    """``replacement`` with a capital first letter where the span opens its sentence with
    one (and the replacement is not a placeholder); in capitals where the span is a word
    of a line written in capitals (:func:`_in_heading`)."""
    span = text[start:end]
    rep = replacement
    if _in_heading(text, start, end) and any(c.islower() for c in rep):
        return rep.upper()
    if not span[:1].isupper() or not rep[:1].islower():
        return rep
    if not _SENTENCE_START.search(text[max(0, start - 4) : start]):
        return rep
    return rep[:1].upper() + rep[1:]

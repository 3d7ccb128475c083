"""Where a run stands in its text, and what that allows: inside a fixed expression, inside
a name, or a word of a name or gloss the run widens to.

Why a module of its own: these are read from the text alone (no lexicon, no index, no
tagger), and both the chooser (:class:`~.chooser.CandidateChooser`) and the loop and
protection that widen runs (:func:`widened_span`) ask them.  A word of a fixed expression
or of a name is not used in its own sense there, so a synonym of that sense breaks the
phrase; the chooser proposes no lexicon word for it.
"""

from __future__ import annotations

import re

from presidio_delink.candidates.drop import gloss_span
from presidio_delink.generalise import name_span

__all__ = [
    "FIXED_EXPRESSIONS",
    "NAME_WORD",
    "PRONOUN",
    "cased",
    "fixed_expression",
    "head_stands_for",
    "in_name",
    "name_word_in",
    "next_word",
    "pronoun_in",
    "unrestatable",
    "widened_span",
]

_WORD_RE = re.compile(r"\w+")
NAME_WORD = "a word of a name"
"""The audit's reason for a run redacted because a word of it is capitalised inside its
sentence (:func:`name_word_in`)."""
PRONOUN = "a personal pronoun"
"""The audit's reason for a run redacted because a word of it is a personal pronoun
(:func:`pronoun_in`)."""
#: Personal and possessive pronouns: each stands for a party of the text.
_PRONOUNS = ("i me my mine we us our ours you your yours he him his she her hers it its they "
             "them their theirs himself herself itself themselves")
PERSONAL_PRONOUNS = frozenset(_PRONOUNS.split())
#: Phrases whose words are not used in their own sense: none of their words gets a
#: lexicon candidate (:func:`fixed_expression`).  Read in the benchmark's outputs, and
#: the like of them in judgments.
FIXED_EXPRESSIONS = (
    "as regards", "in the event", "as follows", "in the meantime", "in respect of",
    "with regard to", "in regard to", "with respect to", "on the ground", "on the grounds",
    "in the light of", "by virtue of", "in accordance with", "on behalf of", "in view of",
    "in the course of", "in so far as", "insofar as", "as a result", "in particular",
    "in any event", "at the time", "for the purposes of", "on the basis of", "by way of",
    "in support of", "in support to", "with a view to", "in person", "by a majority",
    "on appeal", "right of appeal", "right to appeal",
)
_FIXED_RE = re.compile(
    r"\b(?:" + "|".join(re.escape(e).replace(r"\ ", r"\s+") for e in FIXED_EXPRESSIONS) + r")\b",
    re.IGNORECASE,
)


def fixed_expression(text: str, start: int, end: int) -> str | None:
    """The fixed expression of :data:`FIXED_EXPRESSIONS` that ``text[start:end]`` lies
    inside (whole words, any case), else None: a word of one is not used in its own sense
    there, and a synonym of that sense breaks it ("as regards sentencing" became "as
    details sentencing"; "in the event" became "in the issue")."""
    for m in _FIXED_RE.finditer(text, max(0, start - 40), min(len(text), end + 40)):
        if m.start() <= start and end <= m.end():
            return m.group(0)
    return None


def in_name(text: str, start: int) -> bool:
    """Whether the word at ``start`` is capitalised inside its sentence: a word of a name
    or a title the tagger may read as a common noun (``Section 5``, ``Rule 39``, ``the
    Regional Centre``, ``Fundamental Freedoms``), which a common noun's synonym breaks
    (read: ``Section`` -> ``part``, ``Freedoms`` -> ``states``).  A sentence's first word
    is not so judged."""
    if not text[start : start + 1].isupper():
        return False
    before = text[max(0, start - 80) : start].rstrip(" \t")
    return bool(before) and before[-1] not in ".!?:;\n\"'“‘"


def name_word_in(text: str, start: int, end: int) -> bool:
    """Whether a word of ``text[start:end]`` is capitalised inside its sentence
    (:func:`in_name`): a word of a name or title.  The sentence rewriter is not asked for
    such a run: a restated sentence changes it the way a common noun's synonym would
    (read: ``Minister of Defense`` -> ``Minister of military``, ``Economic and Financial
    Crimes Commission`` -> ``law and Financial Crimes Commission``), and a name with one
    word changed names someone else."""
    return any(in_name(text, m.start()) for m in _WORD_RE.finditer(text, start, end))


def pronoun_in(text: str, start: int, end: int) -> bool:
    """Whether a word of ``text[start:end]`` is a personal or possessive pronoun
    (:data:`PERSONAL_PRONOUNS`).  The sentence rewriter is not asked for such a run: any
    other word there names another party (read: ``He complained that he was`` -> ``They
    complained that he was``)."""
    return any(m.group(0).casefold() in PERSONAL_PRONOUNS
               for m in _WORD_RE.finditer(text, start, end))


def unrestatable(text: str, start: int, end: int) -> str | None:
    """Why the sentence rewriter is not asked to restate ``text[start:end]``
    (:data:`NAME_WORD`, :data:`PRONOUN`), else None: the run is redacted instead."""
    if name_word_in(text, start, end):
        return NAME_WORD
    return PRONOUN if pronoun_in(text, start, end) else None


def widened_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The name whose head noun may stand for it
    (:func:`~presidio_delink.generalise.name_span`), else the gloss in brackets
    (:func:`~.drop.gloss_span`), that holds ``text[start:end]``: the span a run there
    widens to, the loop's and the protection's alike; None where there is none."""
    name = name_span(text, start, end)
    return (name[0], name[1]) if name is not None else gloss_span(text, start, end)


def head_stands_for(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a word of a name whose head may stand for it
    (:func:`~presidio_delink.generalise.name_span`), not the head itself: the head
    writes the head again (``the Izmir Court`` -> ``the court`` keeps ``court``)."""
    name = name_span(text, start, end)
    return name is not None and text[start:end].casefold() != name[2]


def next_word(text: str, end: int) -> str:
    """The word right after ``end``, one space between (``""`` where punctuation or
    nothing follows)."""
    m = _WORD_RE.match(text, end + 1) if text[end : end + 1] == " " else None
    return m.group(0) if m is not None else ""


def cased(word: str, like: str) -> str:
    """``word`` with its first letter upper case where ``like``'s is."""
    return word[:1].upper() + word[1:] if like[:1].isupper() else word

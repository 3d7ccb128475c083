"""How the collection uses a word, and whether a candidate keeps that use.

Why: WordNet's senses and words are general English; the collection tells which of them a
judgment means.  These checks read the collection's index and the company of words
(:class:`~.propose.Neighbours`):

- the sense the collection uses a word in (:func:`domain_sense`), and the lexicon words
  of that sense (:func:`by_sense`);
- a candidate the collection uses for something else (:func:`used_otherwise`);
- a candidate that breaks a pairing the collection says often (:func:`unpaired`:
  ``legal aid`` is said in many documents, ``legal help`` in none);
- candidates the collection says in the run's slot (:func:`mark_slot`).

:class:`~.chooser.CandidateChooser` calls them with its index, its company and its
tagging of the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from presidio_delink.candidates.propose import (
    LEXICAL,
    OTHER_SENSE,
    SAME_USE,
    SLOT_BONUS,
    Candidate,
    Neighbours,
    collection_fillers,
)
from presidio_delink.candidates.register import RELATION
from presidio_delink.edits import FUNCTION_WORDS, Run

__all__ = [
    "PAIRED",
    "PAIRING",
    "by_sense",
    "domain_sense",
    "mark_slot",
    "norm",
    "slot_words",
    "unpaired",
    "used_otherwise",
]

#: A word and its neighbour said together in at least this many documents are a pairing a
#: lexicon word must keep (:func:`unpaired`).
PAIRED = 2
#: ... and where the pair is in at least this share of the documents of the rarer of its two
#: words: ``legal aid`` is, ``applicant subsequently`` (10 of some 600) is not.
PAIRING = 0.1
_WORD_RE = re.compile(r"\w+")
_LEFT_WORD = re.compile(r"(\w+)[ \t]+$")
_RIGHT_WORD = re.compile(r"[ \t]+(\w+)")


def used_otherwise(neighbours: Neighbours, word: str, c: Candidate) -> bool:
    """A WordNet word (found in the run's slot or not) whose company in the collection
    is too unlike the run's word's (:class:`~.propose.Neighbours`): below
    :data:`~.propose.SAME_USE`, or :data:`~.propose.OTHER_SENSE` for a word of another
    sense than the collection's (:func:`domain_sense`); where the company cannot be
    told, any but a word of WordNet's most frequent sense.  A determiner filler, a
    generalisation or a function word's stand-in is never so judged."""
    if c.relation not in LEXICAL or " " in c.text:
        return False
    sim = neighbours.similarity(word, c.text)
    if sim is None:  # nothing to tell by: WordNet's most frequent sense only
        return c.rank != 0
    return sim < (SAME_USE if c.rank == c.sense else OTHER_SENSE)


def unpaired(
    text: str,
    start: int,
    end: int,
    c: Candidate,
    df: Callable[[str], int],
    tag_at: Callable[[str, int], str],
) -> bool:
    """A WordNet word that breaks a pairing: ``text[start:end]`` and the word just
    before or after it (only spaces between) are said together in at least :data:`PAIRED`
    documents of the collection (``df``: in how many documents a phrase occurs), and in
    at least :data:`PAIRING` of those of the rarer of the two, and the candidate is never
    said with that word (``legal aid`` -> ``legal help``, ``reasonable time`` -> ``fair
    time``, ``oral hearing`` -> ``oral proceeding``).  The legal register's words too
    (:mod:`.register`).  A function word is no partner (``the applicants`` -> ``the
    individuals`` tells only whether a small collection happens to say the candidate),
    nor is a subject and its verb a pairing (``tag_at``: the Penn tag of the word of
    ``text`` at an offset; ``the applicant lodged`` -> ``the individual lodged``: any
    subject may lodge, and the collection says ``applicant lodged`` in hundreds of
    documents only because it is about applicants)."""
    if (c.relation not in LEXICAL and c.relation != RELATION) or " " in c.text:
        return False
    word = text[start:end]
    left = _LEFT_WORD.search(text, max(0, start - 40), start)
    right = _RIGHT_WORD.match(text, end, end + 40)
    tag = tag_at(text, start)
    sides = []
    if left and not (tag.startswith("VB") and _nominal(tag_at(text, left.start(1)))):
        n = left.group(1)
        sides.append((n, f"{n} {word}", f"{n} {c.text}"))
    if right and not (_nominal(tag) and tag_at(text, right.start(1)).startswith("VB")):
        n = right.group(1)
        sides.append((n, f"{word} {n}", f"{c.text} {n}"))
    for other, said, instead in sides:
        if other.lower() in FUNCTION_WORDS:
            continue
        together = df(said)
        if together < PAIRED or df(instead) != 0:
            continue
        if together >= PAIRING * min(df(word), df(other)):
            return True
    return False


def by_sense(neighbours: Neighbours | None, word: str, lex: list[Candidate]) -> list[Candidate]:
    """The words of ``lex`` of the sense the collection uses ``word`` in
    (:func:`domain_sense`), with those of other senses found in the run's slot; the
    rest (function words' stand-ins) as they are."""
    sense = domain_sense(neighbours, word, lex)
    out = []
    for c in lex:
        c.sense = sense
        if c.relation not in LEXICAL or c.rank == sense or c.source == "collection":
            out.append(c)
    return out


def domain_sense(neighbours: Neighbours | None, word: str, lex: list[Candidate]) -> int:
    """The WordNet sense the collection uses ``word`` in: the one whose words keep
    the company most like ``word``'s (:class:`~.propose.Neighbours`); WordNet's most
    frequent sense (0) where none can be told.  WordNet's order is general English:
    ``trial`` is first a test, ``conviction`` a belief; a judgment's are the others."""
    if neighbours is None:
        return 0
    best, best_sim = 0, 0.0
    for c in lex:
        if c.relation in LEXICAL and " " not in c.text:
            sim = neighbours.similarity(word, c.text)
            if sim is not None and sim > best_sim:
                best, best_sim = c.rank, sim
    return best


def slot_words(index: Any, text: str, r: Run) -> tuple[str, str]:
    """The index's words just before and after the run ("" where none)."""
    before = _WORD_RE.findall(text[max(0, r.start - 60) : r.start])
    after = _WORD_RE.findall(text[r.end : r.end + 60])
    if not before or not after:
        return "", ""
    return norm(index, before[-1]), norm(index, after[0])


def mark_slot(index: Any, k: int, text: str, r: Run, cands: list[Candidate]) -> None:
    """Candidates found in the run's slot in at least ``k`` groups of ``index`` become
    ``collection`` candidates, with :data:`~.propose.SLOT_BONUS`."""
    if index is None or not cands:
        return
    left, right = slot_words(index, text, r)
    if not left or not right:
        return
    widths = sorted({len(_WORD_RE.findall(c.text)) for c in cands} & {1, 2})
    fills: set[str] = set()
    for w in widths:
        fills |= collection_fillers(index, left, right, w, k)
    for c in cands:
        if " ".join(norm(index, x) for x in _WORD_RE.findall(c.text)) in fills:
            c.source, c.meaning = "collection", c.meaning + SLOT_BONUS


def norm(index: Any, word: str) -> str:
    """``word`` as the index writes it, where the index reads it as one word ("" where
    its view splits or drops it)."""
    try:
        ws = index.words_of(word)
    except Exception:  # a word the view splits or drops: no slot
        return ""
    return ws[0] if len(ws) == 1 else ""


def _nominal(tag: str) -> bool:
    """A noun's or a personal pronoun's Penn tag: a verb's subject."""
    return tag.startswith("NN") or tag == "PRP"

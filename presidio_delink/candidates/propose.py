"""Propose: a small set of replacements for a run of words, from cheap sources.

Definitions. A *run* is a span of consecutive words that must change (the loop's plan).
Its words carry Penn tags read in context (:class:`~.verify.Tagger`).  Candidates, most
specific first:

* ``lexicon``: for a one-word run, WordNet's one-word synonyms and hypernyms of the word,
  inflected to its tag (:class:`~.lexicon.WordNet`).  A run of several words gets none:
  its words' synonyms combined, each of the most frequent sense without a slot to confirm
  it, were wrong in 14 of 21 read ("trial judge" -> "test official", "great deal" ->
  "large trade", "judge found" -> "justice happened"); such a run is the LLM's to write,
  or redacted;
* ``collection``: a lexicon candidate that also fills the run's slot between the same
  neighbour words in at least ``k`` groups of the index (:func:`collection_fillers`): it is
  known to read in that place, and that phrase cannot single a document out.  A slot
  says little of the sense (``was _ by`` takes any verb), so the company test below judges
  these words too.  Other content words found in the slot are *not* proposed: what fills
  ``was _ on`` in other documents is as often another fact (``arrested`` / ``born``) as
  the same one told otherwise; only a demonstrative may take another of its slot
  (``this`` -> ``that``; never an article, which says whether the thing is known);
* ``lexicon`` too, first, for a word of :mod:`.register`'s legal thesaurus: the words
  a judgment may say either way (``dismissed`` -> ``rejected``, ``quashed`` ->
  ``annulled``), which WordNet's general senses miss;
* ``lexicon`` too, for a function word WordNet leaves out: its stand-in of the same
  grammar and meaning from :data:`SWAPS` (``their`` -> ``the``, ``until`` -> ``till``,
  ``before`` -> ``prior to``).  The rest (``and``, ``of``, ``with``, pronouns) have none:
  any other word says something else.

Each candidate carries a *meaning* prior in [0, 1]: a synonym of the word's most frequent
sense 1, a hypernym :data:`HYPERNYM` of that, each further sense :data:`SENSE_DECAY`
times less; a collection candidate gains :data:`SLOT_BONUS`.  Of the lexicon's words, the
chooser keeps those of the sense the collection uses the word in
(:meth:`~.chooser.CandidateChooser._domain_sense`: WordNet's order is general English,
``trial`` is first a test), and those of the other senses that fill the run's slot.  The
prior stays WordNet's: measured, giving the collection's sense the prior of the most
frequent one let in about two wrong rewrites for each right one (``occupation`` ->
``acquiring``, ``family name`` -> ``home name``).  The deterministic generalisations
(numbers, dates, typed entities) are proposed by the loop itself
(:func:`presidio_delink.generalise.generalise`) before these.

A lexicon word is also compared with the run's word by the company they keep in the
collection (:class:`Neighbours`): the words within two places of each, over at most
:data:`MAX_DOCS` documents, weighted by their rarity.  A candidate whose company is too
unlike the word's (cosine below :data:`SAME_USE`; below :data:`OTHER_SENSE` for a word of
another sense than the collection's) is used for something else in these documents and
refused: ``revoked`` -> ``played``, ``applications`` -> ``uses``, ``born`` ->
``delivered``, ``judgment`` -> ``opinion``, ``found`` -> ``discovered``.  Where either word
has too few documents to tell, only a word of WordNet's most frequent sense is kept.

A spelling variant of the word is never proposed (``recognised`` -> ``recognized``,
``judgement`` -> ``judgment``, ``supervision`` -> ``supervising``): it says the same word,
and any search that forgives spelling finds the phrase again (:func:`spelling_variant`).

Cost: WordNet look-ups per word; for the collection, two posting lists and the word ids
of at most :data:`MAX_DOCS` documents per run and per word compared (cached).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from presidio_delink.candidates.lexicon import WordNet
from presidio_delink.candidates.register import RELATION, register_candidates

__all__ = [
    "HYPERNYM",
    "LEXICAL",
    "MAX_DOCS",
    "OTHER_SENSE",
    "SAME_USE",
    "PREPOSITIONAL",
    "SENSE_DECAY",
    "SLOT_BONUS",
    "SWAPS",
    "TITLES",
    "Candidate",
    "Neighbours",
    "Word",
    "collection_fillers",
    "lexicon_candidates",
    "register",
    "relative_swap",
    "spelling_variant",
    "swaps",
    "temporal_before",
]

HYPERNYM = 0.6
SENSE_DECAY = 0.5
SLOT_BONUS = 0.15
MAX_DOCS = 150
#: Below this cosine of company, a lexicon word is used for something else (module
#: docstring).  Chosen on the held-in TAB train/dev texts (12 texts, 311 one-word rewrites read,
#: ``benchmarks/results/rewrite_candidates.md``, run of 2026-12-03 at 2c6333d): below 0.045 about
#: two in three rewrites were wrong (``born`` -> ``delivered``, ``family`` -> ``house``), from 0.045
#: to 0.06 one in two (``ordered`` -> ``told``, ``tribunal`` -> ``assembly``). Read again by band
#: (the 12 texts' 169 rewrites at 0.06, run of 2026-12-04 at 857bd33): from 0.06 to 0.08, 12 of 25
#: word pairs wrong (``allowance`` -> ``share``, ``man`` -> ``person`` where his sex was the point,
#: ``interest`` -> ``benefit``); from 0.08 to 0.10, 10 of 29; above 0.10, about one in four.  A
#: wrong fact misleads where a redaction does not.
SAME_USE = 0.08
#: A word of another WordNet sense than the one the collection uses the run's word in needs
#: this much (held-in, above 0.1 about one rewrite in four was wrong).
OTHER_SENSE = 0.1
#: Titles the tagger's NER reads as names (``Dr`` as an organisation): never typed
#: (:class:`~.chooser.CandidateChooser`), never left out (:mod:`.drop`, with ``Lord``
#: and ``Lady``).
TITLES = frozenset({"Dr", "Mr", "Mrs", "Ms", "Miss", "Prof", "Sir", "Judge", "QC", "KC"})
SWAPS: dict[str, dict[str, tuple[str, ...]]] = {
    "PRP$": {"their": ("the",), "his": ("the",), "her": ("the",), "its": ("the",)},
    # a restrictive relative right after its noun only (:func:`relative_swap`)
    "WDT": {"which": ("that",)},
    "IN": {
        "until": ("till",),  # "postponed up to [a date]" reads wrong
        "till": ("until",),
        "because": ("since", "as"),
        "while": ("whilst",),
        "whilst": ("while",),
        "although": ("though",),
        "though": ("although",),
        "whereas": ("while",),
        "upon": ("on",),
        "during": ("in the course of", "throughout"),
        "before": ("prior to",),
        "after": ("following",),
        "following": ("after",),
        "among": ("amongst",),
        "amongst": ("among",),
        "about": ("concerning", "regarding"),
        "concerning": ("regarding", "about"),
        "regarding": ("concerning", "about"),
        "despite": ("in spite of", "notwithstanding"),
        "via": ("through",),
        "towards": ("toward",),
        "toward": ("towards",),
    },
}
"""Function words and their stand-ins of the same grammar and meaning, by Penn tag: a
possessive becomes the article (it generalises: ``their house`` -> ``the house``); a
preposition or conjunction becomes one that says the same; a relative ``which`` right
after its noun becomes ``that`` (``the decision which was taken``; never ``, which``,
``in which`` or ``decide which``: :func:`relative_swap`)."""


@dataclass(frozen=True)
class Word:
    """A word of a run: its text, offsets in the text and Penn tag in context."""

    text: str
    start: int
    end: int
    tag: str


@dataclass
class Candidate:
    """A proposed replacement of a run, and why it was proposed."""

    text: str
    source: str  # "generalisation", "lexicon", "collection" or "llm"
    meaning: float = 1.0
    relation: str = ""
    score: float | None = None
    rank: int = 0  # the WordNet sense it comes from (0: the most frequent)
    #: the sense the collection uses the run's word in (:data:`OTHER_SENSE`)
    sense: int = 0


#: The relations of WordNet's words to the run's word (function words' stand-ins, typed
#: generalisations and determiner fillers are none of these).
LEXICAL = frozenset({"synonym", "hypernym", "similar"})


def _prior(relation: str, rank: int) -> float:
    return (HYPERNYM if relation in ("hypernym", "similar") else 1.0) * SENSE_DECAY**rank


def lexicon_candidates(wordnet: WordNet, words: Sequence[Word]) -> list[Candidate]:
    """Lexicon candidates of a run made of ``words`` (module docstring), best prior first."""
    if len(words) != 1:  # a run of several words: no combination (module docstring)
        return []
    w = words[0]
    if (w.text[:1].isupper() and w.tag.startswith("NNP")) or w.text.lower() in PREPOSITIONAL:
        return []
    found = wordnet.candidates(w.text, w.tag)
    # one word for one word: WordNet's phrases for a word are idioms and phrasal
    # verbs of another register ("married" -> "hooked up with", "issue" -> "put out")
    out = [
        Candidate(c.text, "lexicon", _prior(c.relation, c.rank), c.relation, rank=c.rank)
        for c in found
        if " " not in c.text and "-" not in c.text and not spelling_variant(w.text, c.text)
    ]
    return sorted(out, key=lambda c: -c.meaning)


def register(word: Word, next_word: str = "") -> list[Candidate]:
    """The legal register's stand-ins of a one-word run's word before ``next_word``
    (:mod:`.register`; none for a name, whose tag has no WordNet part of speech), prior
    1, relation :data:`~.register.RELATION`."""
    found = register_candidates(word.text, word.tag, next_word)
    return [Candidate(t, "lexicon", 1.0, RELATION) for t in found]


def spelling_variant(a: str, b: str) -> bool:
    """Whether ``b`` is ``a`` spelt otherwise or another form of its stem: one contains the
    other (``unification``), they share all but three letters of the shorter from the start
    (at least five: ``recognized``, ``exercising``, ``reunion``), or, for words of five
    letters or more, one letter is added, left out or changed (``judgment``), or two
    next to each other swap places (``litres`` / ``liters``, ``centre`` / ``center``)."""
    a, b = a.lower(), b.lower()
    if a in b or b in a:
        return True
    short = min(len(a), len(b))
    common = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), short)
    if common >= max(5, short - 3):
        return True
    if short < 5:
        return False
    # one letter changed, added or left out where they first differ, the rest the same
    i = common
    swapped = a[i : i + 2] == b[i : i + 2][::-1] and a[i + 2 :] == b[i + 2 :]
    return a[i + 1 :] == b[i + 1 :] or a[i + 1 :] == b[i:] or a[i:] == b[i + 1 :] or swapped


#: Participles used as prepositions (``the dispute concerning the fees``): the tagger
#: reads them as verbs, and a verb's synonym breaks the phrase ("referring the
#: duration"), so they take a preposition's :data:`SWAPS` and no lexicon word.
PREPOSITIONAL = frozenset({"concerning", "regarding"})


def swaps(word: Word) -> list[Candidate]:
    """The :data:`SWAPS` of a function word (or of a :data:`PREPOSITIONAL` participle),
    cased like it."""
    prep = word.text.lower() in PREPOSITIONAL
    table = SWAPS["IN"] if prep else SWAPS.get(word.tag, {})
    out = table.get(word.text.lower(), ())
    cased = [w[:1].upper() + w[1:] if word.text[:1].isupper() else w for w in out]
    return [Candidate(w, "lexicon", 1.0, "function word") for w in cased]


def relative_swap(text: str, start: int, tag_at: Callable[[int], str]) -> bool:
    """Whether the relative ``which`` at ``start`` may become ``that``: the word before it,
    one space between, is a noun (``tag_at``: offset -> Penn tag), so ``which`` opens a
    restrictive clause (``the decision which was taken``).  After a comma, a preposition
    (``in which``) or a verb (``decide which court``) it may not."""
    m = re.search(r"(\w+) $", text[max(0, start - 60) : start])
    if m is None:
        return False
    return tag_at(start - 1 - len(m.group(1))).startswith("NN")


def temporal_before(text: str, end: int) -> bool:
    """Whether ``before`` ending at ``end`` tells time, so that ``prior to`` says the same:
    a date, a placeholder, a number or an ``-ing`` word follows (``before 1 May``, ``before
    [REDACTED]``, ``before leaving``), not a determiner, a pronoun or a name, after which
    it is as often the forum (``before the District Court``: read in the rewrite
    benchmark's outputs, ``sued ... prior to the District Court``)."""
    m = re.match(r"\s+(\S+)", text[end : end + 40])
    if m is None:
        return False
    nxt = m.group(1)
    if nxt[:1] in "<[" or nxt[:1].isdigit():
        return True
    return nxt[:1].islower() and nxt.rstrip(".,;:").endswith("ing")


def collection_fillers(
    index: Any, left: str, right: str, width: int, k: int, max_docs: int = MAX_DOCS
) -> set[str]:
    """Word sequences of ``width`` words found between the words ``left`` and ``right``
    (the index's normalised words) in documents of at least ``k`` groups, as normalised
    words joined by one space; empty when a neighbour is missing or unknown."""
    if not left or not right or width < 1:
        return set()
    docs = np.intersect1d(index.lookup([left]), index.lookup([right]))
    if len(docs) == 0:
        return set()
    docs = docs[:max_docs]
    ids = _word_ids(index, int(docs[0]), {left, right})
    if left not in ids or right not in ids:
        return set()
    il, ir = ids[left], ids[right]
    where: dict[tuple[int, ...], list[int]] = {}
    for d in docs.tolist():
        arr = index.doc_word_ids(d)
        if len(arr) <= width + 1:
            continue
        pos = np.flatnonzero(arr[: len(arr) - width - 1] == il)
        pos = pos[arr[pos + width + 1] == ir]
        for p in pos.tolist():
            where.setdefault(tuple(arr[p + 1 : p + 1 + width].tolist()), []).append(d)
    out = set()
    for filler, ds in where.items():
        if len(index.groups_of(np.asarray(sorted(set(ds))))) >= k:
            out.add(" ".join(index.word_of(w) for w in filler))
    return out


def _word_ids(index: Any, ordinal: int, words: set[str]) -> dict[str, int]:
    """The word ids of ``words`` among those of document ``ordinal``."""
    out: dict[str, int] = {}
    for wid in np.unique(index.doc_word_ids(ordinal)).tolist():
        w = index.word_of(wid)
        if w in words:
            out[w] = wid
            if len(out) == len(words):
                break
    return out


class Neighbours:
    """The company words keep in the collection (module docstring), cached per word.

    Args:
        index: the collection's index.
        max_docs: documents read per word, spread over its posting list.
        min_docs: fewer documents than this tell nothing: no similarity.
        cache: words kept.
    """

    def __init__(
        self, index: Any, max_docs: int = MAX_DOCS, min_docs: int = 3, cache: int = 4096
    ) -> None:
        self.index = index
        self.max_docs = max_docs
        self.min_docs = min_docs
        self._cache: dict[str, dict[int, float] | None] = {}
        self._df: dict[int, int] = {}
        self._size = cache

    def similarity(self, a: str, b: str) -> float | None:
        """Cosine of the weighted company of words ``a`` and ``b``; None when either is
        not one word of the index or is in fewer than ``min_docs`` documents."""
        va, vb = self._vector(a), self._vector(b)
        if va is None or vb is None:
            return None
        dot = sum(x * vb.get(w, 0.0) for w, x in va.items())
        na = float(np.sqrt(sum(x * x for x in va.values())))
        nb = float(np.sqrt(sum(x * x for x in vb.values())))
        return dot / (na * nb) if na and nb else None

    def _vector(self, word: str) -> dict[int, float] | None:
        try:
            ws = self.index.words_of(word)
        except Exception:  # a phrase the view splits: not one word
            return None
        if len(ws) != 1:
            return None
        w = ws[0]
        if w in self._cache:
            return self._cache[w]
        docs = self.index.lookup([w])
        vec = None
        if len(docs) >= self.min_docs:
            pick = np.linspace(0, len(docs) - 1, min(self.max_docs, len(docs))).astype(int)
            sel = docs[pick]
            wid = _word_ids(self.index, int(sel[0]), {w}).get(w)
            if wid is not None:
                vec = self._company(sel, wid)
        if len(self._cache) >= self._size:
            self._cache.clear()
        self._cache[w] = vec
        return vec

    def _company(self, docs: np.ndarray, wid: int) -> dict[int, float]:
        parts = []
        for d in docs.tolist():
            arr = self.index.doc_word_ids(d)
            pos = np.flatnonzero(arr == wid)
            for off in (-2, -1, 1, 2):
                p = pos + off
                parts.append(arr[p[(p >= 0) & (p < len(arr))]])
        ids, counts = np.unique(np.concatenate(parts), return_counts=True)
        n = self.index.n_docs
        return {
            i: float(np.log1p(c) * np.log(n / max(1, self._doc_freq(i))))
            for i, c in zip(ids.tolist(), counts.tolist(), strict=True)
        }

    def _doc_freq(self, wid: int) -> int:
        if wid not in self._df:
            if len(self._df) >= 16 * self._size:
                self._df.clear()
            self._df[wid] = len(self.index.lookup([self.index.word_of(wid)]))
        return self._df[wid]

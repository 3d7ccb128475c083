"""Propose: a small set of replacements for a run of words, from cheap sources.

Definitions. A *run* is a span of consecutive words that must change (the loop's plan).
Its words carry Penn tags read in context (:class:`~.verify.Tagger`).  Candidates, most
specific first:

* ``lexicon``: for a one-word run, WordNet synonyms and hypernyms of the word, inflected
  to its tag (:class:`~.lexicon.WordNet`); for a run of several words, each word that
  has lexicon candidates is replaced by one of its best (:data:`PER_WORD`), the others
  kept, in at most :data:`MAX_COMBINATIONS` combinations;
* ``collection``: a lexicon candidate that also fills the run's slot between the same
  neighbour words in at least ``k`` groups of the index (:func:`collection_fillers`): it is
  known to read in that place, and that phrase cannot single a document out.  A word of a
  less frequent WordNet sense is kept only so confirmed (``trial`` -> ``test`` is the
  wrong sense in a judgment; the slot says which sense the collection uses).  Other
  content words found in the slot are *not* proposed: what fills ``was _ on`` in other
  documents is as often another fact (``arrested`` / ``born``) as the same one told
  otherwise; only a determiner may take another determiner of its slot (``the`` ->
  ``a``).

Each candidate carries a *meaning* prior in [0, 1]: a synonym of the word's most frequent
sense 1, a hypernym :data:`HYPERNYM` of that, each further sense :data:`SENSE_DECAY`
times less; a collection candidate gains :data:`SLOT_BONUS`.  The deterministic
generalisations (numbers, dates, typed entities) are proposed by the loop itself
(:func:`presidio_delink.generalise.generalise`) before these.

Cost: WordNet look-ups per word; for the collection, two posting lists and the word ids
of at most :data:`MAX_DOCS` documents per run.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from presidio_delink.candidates.lexicon import WordNet

__all__ = [
    "HYPERNYM",
    "MAX_COMBINATIONS",
    "MAX_DOCS",
    "PER_WORD",
    "SENSE_DECAY",
    "SLOT_BONUS",
    "Candidate",
    "Word",
    "collection_fillers",
    "lexicon_candidates",
]

HYPERNYM = 0.6
SENSE_DECAY = 0.5
SLOT_BONUS = 0.15
PER_WORD = 3
MAX_COMBINATIONS = 12
MAX_DOCS = 150


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


def _prior(relation: str, rank: int) -> float:
    return (HYPERNYM if relation == "hypernym" else 1.0) * SENSE_DECAY**rank


def lexicon_candidates(wordnet: WordNet, words: Sequence[Word]) -> list[Candidate]:
    """Lexicon candidates of a run made of ``words`` (module docstring), best prior first."""
    if not words:
        return []
    if len(words) == 1:
        w = words[0]
        if w.text[:1].isupper() and w.tag.startswith("NNP"):
            return []
        found = wordnet.candidates(w.text, w.tag)
        out = [
            Candidate(c.text, "lexicon", _prior(c.relation, c.rank), c.relation, rank=c.rank)
            for c in found
        ]
        return sorted(out, key=lambda c: -c.meaning)
    options: list[list[tuple[str, float]]] = []
    for w in words:
        found = wordnet.candidates(w.text, w.tag) if not w.tag.startswith("NNP") else []
        # only the most frequent sense: a combination has no slot to confirm another one
        best = sorted((c for c in found if c.rank == 0),
                      key=lambda c: -_prior(c.relation, c.rank))[:PER_WORD]
        options.append([(w.text, 1.0)] + [(c.text, _prior(c.relation, c.rank)) for c in best])
    out = []
    for combo in itertools.islice(itertools.product(*options), 1, None):  # not all kept
        changed = [m for (t, m), w in zip(combo, words, strict=True) if t != w.text]
        if len(changed) < len(words):  # every chosen word must change: each stabs a phrase
            continue
        text = " ".join(t for t, _m in combo)
        out.append(Candidate(text, "lexicon", float(np.mean(changed)), "synonym"))
    out.sort(key=lambda c: -c.meaning)
    return out[:MAX_COMBINATIONS]


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

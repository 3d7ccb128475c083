"""Attacks: how an adversary who holds the collection would single a text's source out.

``ngram`` (search for rare phrases and their combinations: the method's threat model),
``containment`` (near-verbatim alignment, as text-reuse detectors do), ``ranked`` (BM25
search for the whole text and each sentence, on SQLite FTS5) and ``semantic``
(nearest neighbour by embedding), behind one interface (:mod:`.base`).  Used by
``attack``, by ``delink``'s audit and ``--protect``, and by ``eval``.
"""

from presidio_delink.attacks.base import Attack, Ranked, Verdict, rank_of
from presidio_delink.attacks.containment import ContainmentAttack
from presidio_delink.attacks.ranked import RankedAttack, TermContribution

__all__ = [
    "Attack",
    "ContainmentAttack",
    "Ranked",
    "RankedAttack",
    "TermContribution",
    "Verdict",
    "rank_of",
]

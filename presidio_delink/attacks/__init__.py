"""Attacks: how an adversary who holds the collection would single a text's source out.

``ngram`` (search for rare phrases and their combinations: the method's threat model),
``containment`` (near-verbatim alignment, as text-reuse detectors do) and ``semantic``
(nearest neighbour by embedding), behind one interface (:mod:`.base`).  Used by
``attack``, by ``delink``'s audit and ``--protect``, and by ``eval``.
"""

from presidio_delink.attacks.base import Attack, Ranked, Verdict, rank_of
from presidio_delink.attacks.containment import ContainmentAttack

__all__ = ["Attack", "ContainmentAttack", "Ranked", "Verdict", "rank_of"]

"""The attack interface: rank the groups of the collection for a text, and decide.

An *attack* takes a released text and returns the collection's groups (a person or a case;
each document is its own group when the index has none) ordered by the adversary's
evidence, best first, plus a yes/no decision: does the top group stand out enough for the
adversary to claim it as the source?  Every attack here answers the same two questions,
so ``attack``, ``delink``'s audit and ``eval`` treat them alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["Attack", "Ranked", "Verdict", "rank_of"]


@dataclass(frozen=True)
class Ranked:
    """One group in an attack's ranking.

    Attributes:
        group: the group id (see ``NgramIndex.doc_groups``).
        score: the attack's evidence for it (higher is stronger; scale is the attack's).
        doc_id: the group's best-matching document (the one that carries the evidence).
    """

    group: str
    score: float
    doc_id: str

    def to_json(self) -> dict[str, object]:
        return {"doc_id": self.doc_id, "group": self.group, "score": round(self.score, 4)}


@dataclass(frozen=True)
class Verdict:
    """An attack's answer for one text: the ranking (best first) and the decision."""

    method: str
    ranking: tuple[Ranked, ...]
    linked: bool

    def to_json(self, doc_id: str, top: int = 10) -> dict[str, object]:
        return {
            "id": doc_id,
            "method": self.method,
            "ranking": [r.to_json() for r in self.ranking[:top]],
            "linked": self.linked,
        }


@runtime_checkable
class Attack(Protocol):
    """What every attack offers."""

    name: str

    def rank(self, text: str, top: int = 10) -> list[Ranked]:
        """The ``top`` best groups for ``text``, best first (groups with no evidence omitted)."""
        ...

    def verdict(self, text: str, top: int = 10) -> Verdict:
        """:meth:`rank` plus the decision ``linked``."""
        ...


def rank_of(ranking: Sequence[Ranked], group: str) -> int | None:
    """1-based rank of ``group`` in ``ranking``; ties with a better-placed group count as
    found (the cautious reading); None when the group is not in the ranking."""
    for r in ranking:
        if r.group == group:
            return 1 + sum(1 for o in ranking if o.score > r.score)
    return None

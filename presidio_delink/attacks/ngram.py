"""N-gram attack: the method's adversary, who searches rare phrases and their combinations.

Definitions and method are those of :mod:`presidio_delink.linkage` (``analyze`` with
``exhaustive=True``, every linkable combination enumerated): an N-gram found in
``1..k-1`` documents, or a combination of up to ``arity`` N-grams whose posting lists
intersect in ``1..k-1`` documents, singles those documents out.  A group's score is the
number of pieces of such evidence pointing at its documents; the decision ``linked`` is
exactly ``analyze``'s ``linkable`` (no calibration: one piece of evidence is proof).

Complexity: that of ``analyze`` (see :mod:`presidio_delink.linkage`).
"""

from __future__ import annotations

from presidio_delink.attacks.base import Ranked, Verdict
from presidio_delink.index import NgramIndex
from presidio_delink.linkage import LinkageReport, analyze

__all__ = ["NgramAttack"]


class NgramAttack:
    """Search-based linkage (the method's threat model) as an attack.

    Args:
        index: the collection's index.
        k: a phrase or combination found in fewer than ``k`` documents links.
        arity: largest combination the adversary intersects (1..3).
        max_n: longest N-gram (default: the index's).
    """

    name = "ngram"

    def __init__(
        self, index: NgramIndex, *, k: int = 2, arity: int = 1, max_n: int | None = None
    ) -> None:
        analyze(index, "", k=k, arity=arity, max_n=max_n)  # validates the arguments
        self.index, self.k, self.arity, self.max_n = index, k, arity, max_n

    def report(self, text: str) -> LinkageReport:
        """The full linkage report (every combination enumerated)."""
        return analyze(
            self.index, text, k=self.k, arity=self.arity, max_n=self.max_n, exhaustive=True
        )

    def rank(self, text: str, top: int = 10) -> list[Ranked]:
        """Groups the text links to, by the number of pieces of evidence, best first."""
        return self._rank(self.report(text))[:top]

    def verdict(self, text: str, top: int = 10) -> Verdict:
        rep = self.report(text)
        return Verdict(self.name, tuple(self._rank(rep)[:top]), rep.linkable)

    def _rank(self, rep: LinkageReport) -> list[Ranked]:
        groups, ids = self.index.doc_groups, self.index.doc_ids
        score: dict[str, int] = {}
        best: dict[str, tuple[int, int]] = {}
        for d, ev in rep.linked_ordinals().items():
            g = groups[d]
            score[g] = score.get(g, 0) + len(ev)
            if g not in best or len(ev) > best[g][0]:
                best[g] = (len(ev), d)
        out = [Ranked(g, float(s), ids[best[g][1]]) for g, s in score.items()]
        out.sort(key=lambda r: (-r.score, r.group))
        return out

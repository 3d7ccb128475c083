"""Where each attack ranks a text's known source: the figures ``delink`` and ``eval`` report.

``source_ranks`` runs the given attacks on one text and, for each, reports the 1-based rank
of the source's group (ties with a better-placed group count as found, the cautious
reading; None when the attack finds no evidence for it), its score, the top group and the
attack's decision.  Cost: one run of each attack.
"""

from __future__ import annotations

from typing import Any

from presidio_delink.attacks.base import rank_of
from presidio_delink.attacks.containment import ContainmentAttack

__all__ = ["source_ranks"]


def source_ranks(
    text: str,
    group: str,
    containment: ContainmentAttack | None = None,
    semantic: Any = None,
) -> dict[str, dict[str, Any]]:
    """``{"containment": {...}, "semantic": {...}}`` for the attacks given.

    Args:
        text: the released text.
        group: its source's group id.
        containment: a :class:`ContainmentAttack`, or None to skip.
        semantic: a ``SemanticMonitor`` (or None to skip).
    """
    out: dict[str, dict[str, Any]] = {}
    if containment is not None:
        ranking = containment.scores(text)
        src = next((r for r in ranking if r.group == group), None)
        out["containment"] = {
            "source_rank": rank_of(ranking, group),
            "source_score": round(src.score, 4) if src else 0.0,
            "top_group": ranking[0].group if ranking else None,
            "top_score": round(ranking[0].score, 4) if ranking else 0.0,
            "linked": containment.decide(ranking),
        }
    if semantic is not None:
        vec = semantic.embedder.encode([text])[0]
        ranking = semantic.rank_vector(vec, top=max(10, semantic.k))
        out["semantic"] = {
            "source_rank": semantic.group_rank_vector(vec, group),
            "top_group": ranking[0].group if ranking else None,
            "top_score": round(ranking[0].score, 4) if ranking else 0.0,
            "linked": semantic.decide(ranking),
        }
    return out

"""Where each attack ranks a text's known source: the figures ``delink`` and ``eval`` report.

``source_ranks`` runs the given attacks on one text and, for each, reports the 1-based rank
of the source's group (ties with a better-placed group count as found, the cautious
reading; None when the attack finds no evidence for it), its score, the top group and the
attack's decision.  For the ranked attack the rank is the searcher's reading
(:meth:`~presidio_delink.attacks.ranked.PanelScores.attacker_rank`: each member's
whole-text answer and its best sentence's); the oracle over every sentence is reported
beside it as ``any_sentence_rank``.  :func:`linked_by` says which attacks of a record
rank its source first.
Cost: one run of each attack.
"""

from __future__ import annotations

from typing import Any

from presidio_delink.attacks.base import rank_of
from presidio_delink.attacks.containment import ContainmentAttack
from presidio_delink.attacks.ranked import RankedAttack

__all__ = ["linked_by", "source_ranks"]


def source_ranks(
    text: str,
    group: str,
    containment: ContainmentAttack | None = None,
    semantic: Any = None,
    ranked: RankedAttack | None = None,
) -> dict[str, dict[str, Any]]:
    """``{"containment": {...}, "ranked": {...}, "semantic": {...}}`` for the attacks given.

    Args:
        text: the released text.
        group: its source's group id.
        containment: a :class:`ContainmentAttack`, or None to skip.
        semantic: a ``SemanticMonitor`` (or None to skip).
        ranked: a :class:`RankedAttack`, or None to skip.  Its record: ``source_rank``
            (the searcher's reading), ``source_first``, ``any_sentence_rank`` (the best
            rank over every sentence: an oracle), ``top_group`` (of the combined
            ranking), ``margin`` (the largest whole-text lead ``(s_1 - s_k) / s_1`` over
            the members), ``claimed`` (the group the calibrated margin decision claims,
            or None), ``linked`` (it claims the source), and per member the whole-text
            rank of the source and the number of sentences ranking it first.
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
    if ranked is not None:
        out["ranked"] = _ranked(text, group, ranked)
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


def _ranked(text: str, group: str, attack: RankedAttack) -> dict[str, Any]:
    ps = attack.scores(text)
    rank = ps.attacker_rank(group) if attack.has_group(group) else None
    oracle = ps.source_rank(group) if attack.has_group(group) else None
    combined = ps.combined(depth=1)
    leads = ps.leads()
    text_rows = [i for i, (_m, q) in enumerate(ps.keys) if q == "text"]
    claim = ps.claim()
    members: dict[str, dict[str, Any]] = {}
    for m in attack.members:
        row = ps.row(m)
        members[m] = {
            "text_rank": ps.rank_of(row, group) if row is not None and rank is not None else None,
            "sentences_first": sum(
                1
                for i, (mm, q) in enumerate(ps.keys)
                if mm == m and q != "text" and oracle is not None and ps.rank_of(i, group) == 1
            ),
        }
    return {
        "source_rank": rank,
        "source_first": rank == 1,
        "any_sentence_rank": oracle,
        "top_group": combined[0].group if combined else None,
        "margin": round(float(max(leads[text_rows])), 4) if text_rows else 0.0,
        "claimed": claim[0] if claim else None,
        "linked": claim is not None and claim[0] == group,
        "sentences": len({q for _m, q in ps.keys if q != "text"}),
        "members": members,
    }


def linked_by(ranks: dict[str, dict[str, Any]]) -> list[str]:
    """The attacks of a ``source_ranks`` record that rank the source first (the cautious
    reading: what the user is told, whatever the margins decide)."""
    return [name for name, r in ranks.items() if r.get("source_rank") == 1]

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

from collections.abc import Mapping
from typing import Any

from presidio_delink.attacks.base import rank_of
from presidio_delink.attacks.containment import ContainmentAttack
from presidio_delink.attacks.ranked import RankedAttack

__all__ = ["Auditor", "linked_by", "source_ranks"]


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


class Auditor:
    """The audit of a batch run: each output whose source is known is attacked
    (:func:`source_ranks`), and the tallies become one risk line per attack.

    ``delink`` (the CLI and :mod:`presidio_delink.batch`) uses it for every document, the
    ones reused from an earlier run included (:meth:`add` their stored records).

    Args:
        index: the collection's :class:`~presidio_delink.index.ngram_index.NgramIndex`.
        k: the run's ``k`` (the attacks' decision threshold).
        monitor: a ``SemanticMonitor`` to also report, or None.
    """

    ATTACKS = ("containment", "ranked")

    def __init__(self, index: Any, k: int, monitor: Any = None) -> None:
        self.index = index
        self.k = k
        self.monitor = monitor
        self.containment = ContainmentAttack(index, k=k)
        self._ranked: RankedAttack | None = None  # built on first use (seconds, once)
        self.ranks: dict[str, dict[str, Any]] = {}
        self.first = dict.fromkeys(self.ATTACKS, 0)
        self.claimed = dict.fromkeys(self.ATTACKS, 0)
        self.oracle = 0  # documents some sentence ranks first (an oracle reading)
        self.flagged = 0  # documents some attack ranks first

    @property
    def ranked(self) -> RankedAttack:
        if self._ranked is None:
            self._ranked = RankedAttack(self.index, k=self.k)
        return self._ranked

    @property
    def known(self) -> int:
        """Documents audited (their source known)."""
        return len(self.ranks)

    def audit(self, doc_id: str, text: str, group: str) -> dict[str, dict[str, Any]]:
        """Attack ``text`` (from source ``group``), count it, return its record."""
        ranks = source_ranks(text, group, self.containment, self.monitor, self.ranked)
        self.add(doc_id, group, ranks)
        return ranks

    def add(self, doc_id: str, group: str, ranks: Mapping[str, Any]) -> None:
        """Count one audited document (a stored ``source_ranks`` record)."""
        ranks = dict(ranks)
        self.oracle += (ranks.get("ranked") or {}).get("any_sentence_rank") == 1
        for name in self.ATTACKS:
            r = ranks.get(name)
            if r is None:
                continue
            self.first[name] += r.get("source_rank") == 1
            # the margin decision claims the source itself
            self.claimed[name] += bool(r.get("linked")) and r.get(
                "claimed", r.get("top_group")
            ) == group
        self.flagged += bool(linked_by(ranks))
        self.ranks[doc_id] = ranks

    def lines(self) -> list[str]:
        """One risk line per attack (none when no document had a known source)."""
        if not self.known:
            return []
        from presidio_delink.attacks.fts5 import MEMBERS

        n = self.known
        members = len(self._ranked.members) if self._ranked else len(MEMBERS)
        return [
            f"risk, ranked search (BM25, {members} tokenisers, whole text or the best "
            f"sentence): source ranked first for {self.first['ranked']} of {n} documents "
            f"with a known source; the calibrated margin claims it for "
            f"{self.claimed['ranked']}; some sentence ranks it first for {self.oracle} (a "
            "reader who knows the source can pick that sentence; a searcher cannot)",
            "risk, containment search (near-verbatim alignment): source ranked first for "
            f"{self.first['containment']} of {n} documents; the calibrated margin claims it "
            f"for {self.claimed['containment']}",
        ]

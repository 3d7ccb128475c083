"""Where each attack ranks a text's known source: the figures ``delink`` and ``eval`` report.

``source_ranks`` runs the given attacks on one text and, for each, reports the 1-based rank
of the source's group (ties with a better-placed group count as found, the cautious
reading; None when the attack finds no evidence for it), its score, the top group, the
*crowd* around the source and whether the attack's calibrated margin decision claims the
source (``margin_claims``).  For the ranked attack the rank is the searcher's reading
(:meth:`~presidio_delink.attacks.ranked.PanelScores.attacker_rank`: each member's
whole-text answer and its best sentence's); the oracle over every sentence is reported
beside it as ``any_sentence_rank``.

Definitions.

* **Crowd.**  For one ranking, the number of *other* groups whose score is at least
  ``(1 - CROWD_MARGIN)`` times the source's: the groups an attacker cannot tell from the
  source by score (those above it, and those within the margin below it).  For the ranked
  attack it is the smallest over the searcher's rows (each member's whole text and best
  sentence).  None when the attack does not rank the source at all.
* **The crowd rule.**  A source is *exposed* when some attack ranks it within the first
  ``crowd`` places (:data:`~presidio_delink.settings.DEFAULT_CROWD` unless the run sets
  ``crowd``): fewer than ``crowd`` other groups score strictly above it, so an attacker
  who reads that many results finds it.  The exit code of ``delink``, the report's
  verdict and the review app's sign-off follow this rule, not first place alone; first
  place and the top 5 are counted and reported beside it.
* **margin_claims.**  The calibrated margin decision of the attack names the source:
  an adversary could be *sure*.  It is never a safety statement (a source ranked first is
  found by whoever reads the first answer), so the record holds no ``linked`` field.

:func:`exposed_by` and :func:`first_by` say which attacks of a record expose the source or
rank it first.  Cost: one run of each attack.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from presidio_delink.attacks.base import Ranked, rank_of
from presidio_delink.attacks.containment import ContainmentAttack
from presidio_delink.attacks.fused import FusedReading
from presidio_delink.attacks.ranked import (
    AUDIT_MEMBERS,
    FUSED_MEMBERS,
    PanelScores,
    RankedAttack,
)
from presidio_delink.errors import ConfigError
from presidio_delink.settings import DEFAULT_CROWD

__all__ = [
    "CROWD_MARGIN", "NOT_AUDITED", "TOP", "Auditor", "crowd_of", "exposed_by", "first_by",
    "source_ranks",
]

#: Another group within this share of the source's score counts in its crowd (an
#: attacker cannot tell them apart by score).
CROWD_MARGIN = 0.05
#: The depth of the "top 5" reading reported beside first place.
TOP = 5
#: What the audit does not read, said with its counts.  The audit reads one learned
#: combination of its readings (``"fused"``: :mod:`~presidio_delink.attacks.fused`); other
#: combinations may find more (``benchmarks/bench_learned_ranker.py --windows 3,8,16``:
#: on the TAB test outputs of ``--protect all`` (``results/ranked_crowd.md``), boosted trees
#: over fifteen independent readers and six window-pair readers, fitted on texts the tool
#: protected, found the source first for 16.6 and in the top 5 for 37.5 of 127, the mean
#: of ten fits; the audit's attacks together 15 and 35, its fused reading 13 and 27; each
#: independent reader alone at most 2 and 13).
NOT_AUDITED = (
    "not audited: rankers that combine many readings in other ways than the fused reading "
    "(for instance boosted trees trained on texts this tool protected) find sources that "
    "no reading here ranks first; read these counts as a lower bound (README: what the "
    "guarantee covers)"
)


def crowd_of(scores: Any, source: float) -> int:
    """Other groups scoring at least ``(1 - CROWD_MARGIN) * source`` in ``scores`` (the
    other groups' scores: a sequence or an array, the source's own excluded)."""
    arr = np.asarray(scores, dtype=float)
    return int(np.count_nonzero(arr >= (1.0 - CROWD_MARGIN) * source))


def _ranking_crowd(ranking: list[Ranked], group: str) -> int | None:
    src = next((r for r in ranking if r.group == group), None)
    if src is None:
        return None
    return crowd_of([r.score for r in ranking if r.group != group], src.score)


def source_ranks(
    text: str,
    group: str,
    containment: ContainmentAttack | None = None,
    semantic: Any = None,
    ranked: RankedAttack | None = None,
    fused: FusedReading | None = None,
) -> dict[str, dict[str, Any]]:
    """``{"containment": {...}, "ranked": {...}, "fused": {...}, "semantic": {...}}`` for
    the attacks given.

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
            or None), ``margin_claims`` (it claims the source), ``crowd`` (see the
            module docstring), and per member the whole-text rank and crowd of the
            source and the number of sentences ranking it first.
        fused: a :class:`~presidio_delink.attacks.fused.FusedReading` over ``ranked``'s
            whole-text scores (read only with ``ranked``), or None to skip.  Its record:
            ``source_rank``, the crowd, ``top_group``; it has no calibrated margin
            (``margin_claims`` is always False).

    Every attack's record has ``source_rank``, ``source_first``, ``source_top5`` (rank
    at most :data:`TOP`), ``crowd`` and ``margin_claims``.
    """
    out: dict[str, dict[str, Any]] = {}
    if containment is not None:
        ranking = containment.scores(text)
        src = next((r for r in ranking if r.group == group), None)
        rank = rank_of(ranking, group)
        out["containment"] = {
            "source_rank": rank,
            **_reading(rank),
            "source_score": round(src.score, 4) if src else 0.0,
            "top_group": ranking[0].group if ranking else None,
            "top_score": round(ranking[0].score, 4) if ranking else 0.0,
            "crowd": _ranking_crowd(ranking, group),
            "margin_claims": bool(ranking)
            and ranking[0].group == group
            and containment.decide(ranking),
        }
    if ranked is not None:
        ps = ranked.scores(text)
        out["ranked"] = _ranked(ps, group, ranked)
        if fused is not None:
            out["fused"] = _fused(ps, group, ranked, fused)
    if semantic is not None:
        vec = semantic.embedder.encode([text])[0]
        ranking = semantic.rank_vector(vec, top=max(10, semantic.k))
        rank = semantic.group_rank_vector(vec, group)
        out["semantic"] = {
            "source_rank": rank,
            **_reading(rank),
            "top_group": ranking[0].group if ranking else None,
            "top_score": round(ranking[0].score, 4) if ranking else 0.0,
            "crowd": _ranking_crowd(list(ranking), group),
            "margin_claims": bool(ranking)
            and ranking[0].group == group
            and semantic.decide(ranking),
        }
    return out


def _reading(rank: int | None) -> dict[str, bool]:
    return {"source_first": rank == 1, "source_top5": rank is not None and rank <= TOP}


def _row_crowd(ps: Any, row: int, gi: int) -> int | None:
    s = ps.group_scores[row]
    if s[gi] <= 0:
        return None
    return crowd_of(np.delete(s, gi), float(s[gi]))


def _fused(
    ps: PanelScores, group: str, attack: RankedAttack, fused: FusedReading
) -> dict[str, Any]:
    gi = attack.group_ordinal(group) if attack.has_group(group) else -1
    rank, cands, p = fused.locate(ps, gi)
    crowd = None
    if rank is not None:
        i = int(np.flatnonzero(cands == gi)[0])
        crowd = crowd_of(np.delete(p, i), float(p[i]))
    top = attack.group_names[int(cands[int(np.argmax(p))])] if len(cands) else None
    return {
        "source_rank": rank,
        **_reading(rank),
        "top_group": top,
        "crowd": crowd,
        "margin_claims": False,
    }


def _ranked(ps: PanelScores, group: str, attack: RankedAttack) -> dict[str, Any]:
    rank = ps.attacker_rank(group) if attack.has_group(group) else None
    oracle = ps.source_rank(group) if attack.has_group(group) else None
    combined = ps.combined(depth=1)
    leads = ps.leads()
    text_rows = [i for i, (_m, q) in enumerate(ps.keys) if q == "text"]
    claim = ps.claim()
    gi = attack.group_ordinal(group) if attack.has_group(group) else -1
    crowds = (
        [c for i in ps.attacker_rows() if (c := _row_crowd(ps, i, gi)) is not None]
        if gi >= 0
        else []
    )
    members: dict[str, dict[str, Any]] = {}
    for m in attack.members:
        row = ps.row(m)
        members[m] = {
            "text_rank": ps.rank_of(row, group) if row is not None and rank is not None else None,
            "text_crowd": _row_crowd(ps, row, gi) if row is not None and gi >= 0 else None,
            "sentences_first": sum(
                1
                for i, (mm, q) in enumerate(ps.keys)
                if mm == m and q != "text" and oracle is not None and ps.rank_of(i, group) == 1
            ),
        }
    return {
        "source_rank": rank,
        **_reading(rank),
        "any_sentence_rank": oracle,
        "top_group": combined[0].group if combined else None,
        "margin": round(float(max(leads[text_rows])), 4) if text_rows else 0.0,
        "crowd": min(crowds) if crowds else None,
        "claimed": claim[0] if claim else None,
        "margin_claims": claim is not None and claim[0] == group,
        "sentences": len({q for _m, q in ps.keys if q != "text"}),
        "members": members,
    }


def first_by(ranks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The attacks of a ``source_ranks`` record that rank the source first."""
    return [name for name, r in ranks.items() if r.get("source_rank") == 1]


def exposed_by(ranks: Mapping[str, Mapping[str, Any]], crowd: int = DEFAULT_CROWD) -> list[str]:
    """The attacks of a ``source_ranks`` record under which the source is exposed by the
    crowd rule: ranked within the first ``crowd`` places (first place always counts)."""
    crowd = max(1, crowd)
    return [
        name
        for name, r in ranks.items()
        if (rank := r.get("source_rank")) is not None and rank <= crowd
    ]


class Auditor:
    """The audit of a batch run: each output whose source is known is attacked
    (:func:`source_ranks`), and the tallies become one risk line per attack.

    ``delink`` (the CLI and :mod:`presidio_delink.batch`) uses it for every document, the
    ones reused from an earlier run included (:meth:`add` their stored records).  A
    document is *flagged* (``delink`` exits 3) when some attack exposes its source under
    the crowd rule (:func:`exposed_by`: ranked within the first ``crowd`` places).

    Args:
        index: the collection's :class:`~presidio_delink.index.ngram_index.NgramIndex`.
        k: the run's ``k`` (the attacks' decision threshold).
        monitor: a ``SemanticMonitor`` to also report, or None.
        crowd: the crowd rule's size (default
            :data:`~presidio_delink.settings.DEFAULT_CROWD`).
    """

    ATTACKS = ("containment", "ranked", "fused")

    def __init__(self, index: Any, k: int, monitor: Any = None, crowd: int | None = None) -> None:
        self.index = index
        self.k = k
        self.monitor = monitor
        self.crowd = DEFAULT_CROWD if crowd is None else crowd
        if isinstance(self.crowd, bool) or not isinstance(self.crowd, int) or self.crowd < 1:
            raise ConfigError(f"crowd must be an integer >= 1, got {crowd!r}")
        self.containment = ContainmentAttack(index, k=k)
        self._ranked: RankedAttack | None = None  # built on first use (seconds, once)
        self._fused: FusedReading | None = None
        self.ranks: dict[str, dict[str, Any]] = {}
        self.first = dict.fromkeys(self.ATTACKS, 0)
        self.top5 = dict.fromkeys(self.ATTACKS, 0)
        self.exposed = dict.fromkeys(self.ATTACKS, 0)
        self.claimed = dict.fromkeys(self.ATTACKS, 0)
        self.oracle = 0  # documents some sentence ranks first (an oracle reading)
        self.flagged = 0  # documents some attack exposes (the crowd rule)
        self.any_first = 0  # documents some attack ranks first
        self.any_top5 = 0  # documents some attack puts in its top TOP

    @property
    def ranked(self) -> RankedAttack:
        if self._ranked is None:
            self._ranked = RankedAttack(self.index, k=self.k, members=AUDIT_MEMBERS)
        return self._ranked

    @property
    def fused(self) -> FusedReading:
        if self._fused is None:
            fused = FusedReading.shipped()
            fused.check_panel(self.ranked.members)
            self._fused = fused
        return self._fused

    @property
    def known(self) -> int:
        """Documents audited (their source known)."""
        return len(self.ranks)

    def read(self, text: str, group: str) -> dict[str, dict[str, Any]]:
        """Attack ``text`` (from source ``group``) and return its record, counting
        nothing (the review app reads each edit so: :class:`~presidio_delink.review.
        verify.Verifier`)."""
        return source_ranks(text, group, self.containment, self.monitor, self.ranked, self.fused)

    def audit(self, doc_id: str, text: str, group: str) -> dict[str, dict[str, Any]]:
        """Attack ``text`` (from source ``group``), count it, return its record."""
        ranks = self.read(text, group)
        self.add(doc_id, group, ranks)
        return ranks

    def reuse(self, doc_id: str, group: str, ranks: Any, text: Any) -> dict[str, Any] | None:
        """Count a stored record's audit and return it; a record that lacks one of
        :data:`ATTACKS` (written before the audit read it) is audited again from its
        ``text``, so that no count stops at what an older audit read.  None (nothing
        counted) when there is neither a stored audit nor a text to audit."""
        if isinstance(ranks, dict) and all(a in ranks for a in self.ATTACKS):
            self.add(doc_id, group, ranks)
            return dict(ranks)
        if isinstance(text, str):
            return self.audit(doc_id, text, group)
        if isinstance(ranks, dict):
            self.add(doc_id, group, ranks)
            return dict(ranks)
        return None

    def add(self, doc_id: str, group: str, ranks: Mapping[str, Any]) -> None:
        """Count one audited document (a stored ``source_ranks`` record; records written
        before ``margin_claims`` replaced ``linked`` are read too)."""
        ranks = dict(ranks)
        self.oracle += (ranks.get("ranked") or {}).get("any_sentence_rank") == 1
        for name in self.ATTACKS:
            r = ranks.get(name)
            if r is None:
                continue
            rank = r.get("source_rank")
            self.first[name] += rank == 1
            self.top5[name] += rank is not None and rank <= TOP
            self.exposed[name] += rank is not None and rank <= self.crowd
            claims = r.get("margin_claims", r.get("linked"))
            self.claimed[name] += bool(claims) and r.get(
                "claimed", r.get("top_group")
            ) == group
        self.flagged += bool(exposed_by(ranks, self.crowd))
        self.any_first += bool(first_by(ranks))
        self.any_top5 += bool(exposed_by(ranks, TOP))
        self.ranks[doc_id] = ranks

    def verdict(self, doc_id: str) -> str:
        """``"exposed"`` (the crowd rule), ``"crowded"`` (audited, not exposed) or
        ``"unknown"`` (no audit: the source is unknown)."""
        ranks = self.ranks.get(doc_id)
        if ranks is None:
            return "unknown"
        return "exposed" if exposed_by(ranks, self.crowd) else "crowded"

    def lines(self) -> list[str]:
        """One risk line per attack, the crowd rule's line and :data:`NOT_AUDITED` (none
        when no document had a known source).  Counts only, never text."""
        if not self.known:
            return []
        n = self.known
        members = len(self._ranked.members) if self._ranked else len(AUDIT_MEMBERS)
        rule = (
            f"crowd rule (the source ranked below at least {self.crowd} other groups by "
            f"every attack): broken for {self.flagged} of {n} documents with a known source"
        )
        return [
            f"risk, ranked search (BM25 and TF-IDF, {members} readings, whole text or the best "
            f"sentence): source first for {self.first['ranked']}, in the top {TOP} for "
            f"{self.top5['ranked']} of {n} documents with a known source; the calibrated "
            f"margin claims it for {self.claimed['ranked']}; some sentence ranks it first "
            f"for {self.oracle} (a reader who knows the source can pick that sentence; a "
            "searcher cannot)",
            "risk, containment search (near-verbatim alignment): source first for "
            f"{self.first['containment']}, in the top {TOP} for {self.top5['containment']} "
            f"of {n} documents; the calibrated margin claims it for "
            f"{self.claimed['containment']}",
            f"risk, fused ranked reading (the {len(FUSED_MEMBERS)} readings combined by a "
            "model fitted on held-in texts this tool protected; the protection's guard aims "
            "at another fit, made on unguarded outputs): "
            f"source first for {self.first['fused']}, in the top {TOP} for "
            f"{self.top5['fused']} of {n} documents with a known source",
            f"risk, any attack above (an attacker who reads them all): source first for "
            f"{self.any_first}, in the top {TOP} for {self.any_top5} of {n} documents with a "
            "known source",
            rule,
            NOT_AUDITED,
        ]

"""The fused reading: the audit's ranked readings combined by a model fitted on held-in texts.

Why.  The protection pushes the source below a crowd under each reading of its panel, one
reading at a time.  An attacker who has the tool can protect texts of their own and learn
how several readings combine; such a ranker finds sources that no single reading ranks
first (``benchmarks/bench_learned_ranker.py``).  The audit reads the same way, so that its
counts do not stop at what the protection edited away: this module is an attack the
protection does not target.

Definitions.  For one text and the audit's :class:`~presidio_delink.attacks.ranked.
PanelScores`, each member's whole-text row scores every group.

* **Candidates**: the union over members of each one's first :data:`CANDIDATES` groups
  with a positive score.  A source outside it is not ranked (None).
* **Features** of a candidate group, per member (in the model's member order): its score
  as a share of the member's best, the log of its rank (ties with a better group count as
  found; :data:`UNRANKED` where it scores 0), whether it is first, whether it is in the
  top :data:`TOP`; then how many members put it in their top :data:`TOP`.
* **Score**: a model over the features, fitted by ``benchmarks/ranked/fit_fusion.py``
  on the 113 held-in TAB train/dev texts delinked under four settings (never the TAB test
  documents): a logistic regression (:attr:`FusedReading.coef`) or boosted regression
  trees (:class:`Trees`, exported from scikit-learn's ``HistGradientBoostingClassifier``
  and evaluated here with numpy; scikit-learn is needed only to fit).  The fused rank of
  the source is 1 + the candidates scoring strictly above it; its crowd
  (:mod:`~presidio_delink.attacks.audit`), the other candidates whose probability is
  close to the source's.

The weights belong to one member list: a panel that differs from the file's members is
a :class:`~presidio_delink.errors.ConfigError` (refit the model).  Cost: a sort of each
member's positive scores and a product of ``(candidates, 4 * members + 1)`` features, beside the
panel's scoring that the audit runs anyway (milliseconds).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from presidio_delink.attacks.base import Ranked, Verdict
from presidio_delink.errors import ConfigError

__all__ = [
    "CANDIDATES", "GUARD_FILE", "MODEL_FILE", "TOP", "UNRANKED", "FusedAttack", "FusedReading",
    "Trees", "features", "member_rows",
]

#: Each member's first groups that become candidates.
CANDIDATES = 30
#: The rank taken by a group a member does not score.
UNRANKED = 1000
#: The depth of the "top" features (and of the audit's top-5 reading).
TOP = 5
#: The audit's model file, shipped with the package (fitted on outputs of the guarded
#: protection; over the 18 readings without the window pairs, fitted on such outputs, its
#: trees found nothing out of fold, and over all twenty 18 of 113: ``benchmarks/results/
#: ranked_crowd.md``).
MODEL_FILE = "ranked_fusion.json"
#: The protection's guard's model file (fitted on outputs of the shipped protection
#: without the guard: :class:`~presidio_delink.protect.Protector`).
GUARD_FILE = "ranked_fusion_guard.json"


def features(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidate group ordinals and their feature rows (module docstring).

    Args:
        rows: ``(members, groups)`` whole-text scores, one row per model member (zeros for
            a member whose query had no term).

    Returns:
        ``(candidates, X)``: ordinals sorted ascending, ``X`` of shape
        ``(len(candidates), 4 * members + 1)``.
    """
    n_members = rows.shape[0]
    # Every score above a positive one is positive, so each row's ranks and candidates
    # come from its positive scores alone, negated and sorted once (a few hundred of
    # them, not the whole row).
    picked: list[np.ndarray] = []
    neg_sorted: list[np.ndarray] = []
    for s in rows:
        pos = np.flatnonzero(s > 0)
        neg = -s[pos]
        ordered = np.sort(neg)
        neg_sorted.append(ordered)
        if len(pos) > CANDIDATES:
            # the first CANDIDATES by score, ties in index order (a stable sort's order):
            # all strictly above the cut-off score, then its ties by ascending index
            cut = ordered[CANDIDATES - 1]
            above = pos[neg < cut]
            ties = pos[neg == cut][: CANDIDATES - len(above)]
            picked.extend((above, ties))
        else:
            picked.append(pos)
    cands = np.unique(np.concatenate(picked)).astype(np.int64) if picked else (
        np.zeros(0, dtype=np.int64))
    if not len(cands):
        return cands, np.zeros((0, 4 * n_members + 1), dtype=np.float64)
    sub = rows[:, cands]
    best = rows.max(axis=1, keepdims=True)
    rel = np.divide(sub, best, out=np.zeros_like(sub, dtype=np.float64), where=best > 0)
    rank = np.empty(sub.shape, dtype=np.float64)
    for i, ordered in enumerate(neg_sorted):
        # groups strictly above each candidate: its place among the negated positive
        # scores, sorted (only a positive candidate's place is read)
        above = np.searchsorted(ordered, -sub[i], side="left")
        rank[i] = np.where(sub[i] > 0, 1 + above, UNRANKED)
    in_top = rank <= TOP
    x = np.concatenate(
        [rel.T, np.log(rank).T, (rank == 1).T, in_top.T, in_top.sum(axis=0)[:, None]], axis=1
    )
    return cands, x


def member_rows(ps: Any, members: Sequence[str]) -> np.ndarray:
    """The whole-text rows of a :class:`~presidio_delink.attacks.ranked.PanelScores`, one
    per member of ``members`` in that order (zeros for a member with no row)."""
    out = np.zeros((len(members), ps.group_scores.shape[1]), dtype=np.float64)
    for i, m in enumerate(members):
        row = ps.row(m)
        if row is not None:
            out[i] = ps.group_scores[row]
    return out


@dataclass(frozen=True)
class Trees:
    """Boosted regression trees, each a node table padded to the longest (row ``t`` is
    tree ``t``; a node goes left when its feature is at most its threshold).

    The raw score of a row of features is the sum over trees of the leaf it reaches
    (:meth:`raw`), as scikit-learn's ``HistGradientBoostingClassifier`` computes it
    without its baseline.
    """

    feature: np.ndarray  # (trees, nodes) int
    threshold: np.ndarray  # (trees, nodes) float
    left: np.ndarray  # (trees, nodes) int
    right: np.ndarray  # (trees, nodes) int
    leaf: np.ndarray  # (trees, nodes) bool
    value: np.ndarray  # (trees, nodes) float
    depth: int

    @staticmethod
    def export(model: Any) -> list[dict[str, list[Any]]]:
        """The trees of a fitted two-class ``HistGradientBoostingClassifier`` in the JSON
        form :meth:`from_list` reads (its baseline is ``model._baseline_prediction``)."""
        out = []
        for (pred,) in model._predictors:  # one tree a round (two classes)
            nodes = pred.nodes
            out.append({
                "feature": nodes["feature_idx"].tolist(),
                "threshold": [float(v) for v in nodes["num_threshold"]],
                "left": nodes["left"].tolist(), "right": nodes["right"].tolist(),
                "leaf": [bool(v) for v in nodes["is_leaf"]],
                "value": [float(v) for v in nodes["value"]], "depth": nodes["depth"].tolist(),
            })
        return out

    @classmethod
    def from_list(cls, trees: list[dict[str, list[Any]]]) -> Trees:
        width = max(len(t["leaf"]) for t in trees)

        def table(key: str, dtype: Any, fill: Any) -> np.ndarray:
            out = np.full((len(trees), width), fill, dtype=dtype)
            for i, t in enumerate(trees):
                out[i, : len(t[key])] = t[key]
            return out

        return cls(
            table("feature", np.int64, 0), table("threshold", np.float64, 0.0),
            table("left", np.int64, 0), table("right", np.int64, 0),
            table("leaf", bool, True), table("value", np.float64, 0.0),
            max(int(d) for t in trees for d in t["depth"]),
        )

    def raw(self, x: np.ndarray) -> np.ndarray:
        """The trees' summed leaf values for each row of ``x``."""
        n_trees = self.leaf.shape[0]
        t = np.arange(n_trees)[:, None]
        rows = np.arange(len(x))[None, :]
        node = np.zeros((n_trees, len(x)), dtype=np.int64)
        for _ in range(self.depth):
            go_left = x[rows, self.feature[t, node]] <= self.threshold[t, node]
            nxt = np.where(go_left, self.left[t, node], self.right[t, node])
            node = np.where(self.leaf[t, node], node, nxt)
        return np.asarray(self.value[t, node].sum(axis=0), dtype=np.float64)


@dataclass(frozen=True)
class FusedReading:
    """A fitted fusion of the ranked members' whole-text readings.

    Attributes:
        members: the member names, in the order of the features.
        coef: ``4 * len(members) + 1`` weights of a logistic regression (module
            docstring); empty when ``trees`` score.
        intercept: the logistic regression's intercept, or the trees' baseline.
        meta: what the file says of its fit (data, held-in figures), for reports.
        trees: boosted trees that score in place of ``coef``, or None.
    """

    members: tuple[str, ...]
    coef: np.ndarray
    intercept: float
    meta: dict[str, Any]
    trees: Trees | None = None

    def __post_init__(self) -> None:
        n_features = 4 * len(self.members) + 1
        if self.trees is not None:
            if int(self.trees.feature.max(initial=0)) >= n_features:
                raise ConfigError(
                    f"fusion model: a tree reads feature {int(self.trees.feature.max())} of "
                    f"{n_features}; refit it with benchmarks/ranked/fit_fusion.py"
                )
        elif self.coef.shape != (n_features,):
            raise ConfigError(
                f"fusion model: {len(self.coef)} weights for {len(self.members)} members "
                f"(expected {n_features}); refit it with benchmarks/ranked/fit_fusion.py"
            )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FusedReading:
        try:
            members = tuple(str(m) for m in data["members"])
            intercept = float(data["intercept"])
            trees = None
            if data.get("model", "logistic") == "trees":
                trees = Trees.from_list(data["trees"])
                coef = np.zeros(0)
            else:
                coef = np.asarray(data["coef"], dtype=np.float64)
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"fusion model: malformed ({exc!r}); refit it") from exc
        skip = ("members", "coef", "intercept", "trees")
        meta = {k: v for k, v in data.items() if k not in skip}
        return cls(members, coef, intercept, meta, trees)

    @classmethod
    def shipped(cls, guard: bool = False) -> FusedReading:
        """The audit's model shipped with the package (:data:`MODEL_FILE`), or with
        ``guard`` the protection's (:data:`GUARD_FILE`)."""
        name = GUARD_FILE if guard else MODEL_FILE
        text = resources.files("presidio_delink.attacks").joinpath(name).read_text("utf-8")
        return cls.from_dict(json.loads(text))

    def check_panel(self, members: tuple[str, ...]) -> None:
        """Raise :class:`ConfigError` unless the panel holds every member of the model."""
        missing = [m for m in self.members if m not in members]
        if missing:
            raise ConfigError(
                f"fusion model reads members the panel lacks: {', '.join(missing)}; refit it "
                "with benchmarks/ranked/fit_fusion.py for this panel"
            )

    def logits(self, x: np.ndarray) -> np.ndarray:
        """The model's log-odds for each row of features (:func:`features`)."""
        return (self.trees.raw(x) if self.trees is not None else x @ self.coef) + self.intercept

    def score(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(candidates, probabilities)`` of the fused reading over ``rows``."""
        cands, x = features(rows)
        z = self.logits(x)
        return cands, np.exp(-np.logaddexp(0.0, -z))  # the logistic function, no overflow

    def read(self, ps: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(candidates, probabilities)`` of the fused reading of a
        :class:`~presidio_delink.attacks.ranked.PanelScores`."""
        return self.score(member_rows(ps, self.members))

    def locate(self, ps: Any, group_ordinal: int) -> tuple[int | None, np.ndarray, np.ndarray]:
        """``(rank, candidates, probabilities)``: the source's fused rank (ties with a
        better candidate count as found; None when it is not a candidate) and the reading
        it comes from."""
        cands, p = self.read(ps)
        hit = np.flatnonzero(cands == group_ordinal)
        rank = 1 + int(np.count_nonzero(p > p[hit[0]])) if len(hit) else None
        return rank, cands, p

    def rank(self, ps: Any, group_ordinal: int) -> int | None:
        """The source's fused rank (:meth:`locate`)."""
        return self.locate(ps, group_ordinal)[0]


class FusedAttack:
    """The audit's fused reading as an :class:`~presidio_delink.attacks.base.Attack`, for
    the callers that take attacks one text at a time (the review app's verification).

    It scores the model's members (a :class:`~presidio_delink.attacks.ranked.RankedAttack`
    built on the index, seconds once) for the whole text and ranks the candidates by the
    model's probability; it never claims a source (no calibrated margin).

    Args:
        index: the collection's N-gram index.
        k: the run's ``k``.
        model: the fused reading (default: the audit's, :meth:`FusedReading.shipped`).
    """

    name = "fused"

    def __init__(self, index: Any, k: int = 2, model: FusedReading | None = None) -> None:
        from presidio_delink.attacks.ranked import RankedAttack

        self.model = model or FusedReading.shipped()
        self.ranked = RankedAttack(index, k=k, members=self.model.members)

    def rank(self, text: str, top: int = 10) -> list[Ranked]:
        ps = self.ranked.scores(text, sentences=False)
        cands, p = self.model.read(ps)
        order = np.argsort(-p, kind="stable")[:top]
        doc_best = ps.doc_scores.max(axis=0) if len(ps.doc_scores) else ps.doc_scores
        att = self.ranked
        return [
            Ranked(att.group_names[int(cands[i])], float(p[i]),
                   att.best_doc(int(cands[i]), doc_best))
            for i in order.tolist()
        ]

    def verdict(self, text: str, top: int = 10) -> Verdict:
        return Verdict(self.name, tuple(self.rank(text, top)), False)

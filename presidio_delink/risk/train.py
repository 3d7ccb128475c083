"""Offline training of the risk indicators' classifiers (scikit-learn; never at run time).

    python -m presidio_delink.risk.train --data ../shared/data \
        --logprobs benchmarks/risk/logprobs_wiki.jsonl benchmarks/risk/logprobs_tab.jsonl \
        --out presidio_delink/risk/models

trains every indicator on the span tables of Papadopoulou et al. that have texts (Wikipedia
test, TAB test) with our own model's log-probabilities (``benchmarks/risk/
extract_logprobs.py``) and the search frequencies in a reference index built here (each
test text plus the public background documents of the same person or case, one group per
person or case), and writes one JSON model per indicator (:mod:`presidio_delink.risk.model`).
Needs the ``eval`` extra (scikit-learn).
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import ConfigError, InputError
from presidio_delink.risk import features as F
from presidio_delink.risk.data import SpanRow, load_span_table, load_texts
from presidio_delink.risk.indicators import FEATURES, INDICATORS, NEEDS, feature_row
from presidio_delink.risk.model import RiskModel
from presidio_delink.risk.search import measure

logger = logging.getLogger(__name__)

BACKGROUND = {
    "wiki": ["wikibio/wiki553_public_background.json"],
    "tab": ["tab/tab_test_hudoc_public_full.json", "tab/tab_all_hudoc_public_10pct.json"],
}
LOGISTIC = frozenset({"span_classification"})
"""Indicators whose classifier is a logistic regression (a wide, sparse text vector);
the others are gradient-boosted trees."""


@dataclass
class Examples:
    """Spans of one dataset with their measurements, labels and documents."""

    dataset: str
    rows: list[SpanRow]
    spans: list[F.Span]
    measurements: list[dict[str, Any]]
    _matrices: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    @property
    def y(self) -> np.ndarray:
        return np.array([r.mask for r in self.rows], dtype=np.int64)

    @property
    def groups(self) -> list[str]:
        return [r.doc_id for r in self.rows]

    def matrix(self, indicator: str) -> np.ndarray:
        """Feature rows of every span for ``indicator`` (computed once)."""
        if indicator not in self._matrices:
            self._matrices[indicator] = np.array(
                [feature_row(indicator, s, m)
                 for s, m in zip(self.spans, self.measurements, strict=True)],
                dtype=np.float64,
            )
        return self._matrices[indicator]

    def subset(self, keep: Sequence[bool]) -> Examples:
        idx = [i for i, k in enumerate(keep) if k]
        return Examples(
            self.dataset,
            [self.rows[i] for i in idx],
            [self.spans[i] for i in idx],
            [self.measurements[i] for i in idx],
            {name: m[idx] for name, m in self._matrices.items()},
        )


def reference_index(data_root: Path, dataset: str, directory: Path) -> Any:
    """The search indicator's reference collection for ``dataset`` (built once, then
    loaded): each test text and the public background documents, grouped by person/case."""
    from presidio_delink.index.ngram_index import NgramIndex

    if (directory / "meta.json").exists():
        return NgramIndex.load(directory)
    docs: list[tuple[str, str, str]] = [
        (doc_id, text, doc_id) for doc_id, text in sorted(load_texts(data_root, dataset).items())
    ]
    for n, rel in enumerate(BACKGROUND[dataset]):
        data = json.loads((data_root / rel).read_text(encoding="utf-8"))
        docs += [(f"bg{n}:{k}", v, k) for k, v in sorted(data.items()) if isinstance(v, str)]
    return NgramIndex.build(docs, directory)


def load_own_logprobs(paths: Sequence[Path]) -> dict[tuple[str, str], dict[tuple[int, int], Any]]:
    """``{(dataset, doc_id): {(start, end): span record}}`` from extract_logprobs output."""
    out: dict[tuple[str, str], dict[tuple[int, int], Any]] = {}
    for path in paths:
        with Path(path).open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                try:
                    rec = json.loads(line)
                    out[(rec["dataset"], rec["doc_id"])] = {
                        (s["start"], s["end"]): s for s in rec["spans"]
                    }
                except (ValueError, KeyError, TypeError) as exc:
                    raise InputError(
                        f"{path}, line {n}: not a log-probability record of "
                        "benchmarks/risk/extract_logprobs.py (needs dataset, doc_id and spans "
                        f"with start and end): {type(exc).__name__}"
                    ) from None
    return out


def examples(
    data_root: Path,
    dataset: str,
    lm_source: str,
    own: dict[tuple[str, str], dict[tuple[int, int], Any]] | None = None,
    index: Any = None,
    split: str = "test",
) -> Examples:
    """The spans of one span table with the measurements of every indicator available.

    ``lm_source``: ``"own"`` (our model's log-probabilities; documents not scored are left
    out) or ``"bert"`` (the paper's BERT log-probabilities; no perturbation then).
    """
    table = load_span_table(data_root, dataset, split)
    rows: list[SpanRow] = []
    spans: list[F.Span] = []
    ms: list[dict[str, Any]] = []
    for doc_id in sorted(table):
        doc_rows = table[doc_id]
        scored: dict[tuple[int, int], Any] = {}
        if lm_source == "own":
            if (dataset, doc_id) not in (own or {}):
                continue
            scored = (own or {})[(dataset, doc_id)]
        search: list[Any] = [None] * len(doc_rows)
        if index is not None:
            search = measure(index, [r.text for r in doc_rows])
        for r, sm in zip(doc_rows, search, strict=True):
            m: dict[str, Any] = {}
            if lm_source == "own":
                rec = scored[(r.start, r.end)]
                m["logprobs"] = rec["logprobs"]
                m["masked_logprobs"] = rec["masked_logprobs"]
            elif lm_source == "bert":
                m["logprobs"] = list(r.bert_logprobs)
            else:
                raise ConfigError(f"unknown log-probability source {lm_source!r}")
            if sm is not None:
                m["search"] = sm
            if not m["logprobs"]:
                continue
            rows.append(r)
            spans.append(F.Span(r.start, r.end, F.PRESIDIO_TYPES[r.label_type], r.text))
            ms.append(m)
    if not rows:
        raise InputError(f"no scored spans for {dataset} ({lm_source})")
    return Examples(dataset, rows, spans, ms)


def concat(parts: Sequence[Examples]) -> Examples:
    return Examples(
        "+".join(p.dataset for p in parts),
        [r for p in parts for r in p.rows],
        [s for p in parts for s in p.spans],
        [m for p in parts for m in p.measurements],
    )


# -- scikit-learn -> JSON ------------------------------------------------------------------


def fit_sklearn(indicator: str, x: np.ndarray, y: np.ndarray, seed: int = 0) -> Any:
    """The scikit-learn classifier of ``indicator`` fitted on ``x``, ``y``."""
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if indicator in LOGISTIC:
        clf = make_pipeline(StandardScaler(), LogisticRegression(C=0.05, max_iter=3000))
    else:
        clf = GradientBoostingClassifier(
            n_estimators=100, max_depth=3, learning_rate=0.1, subsample=0.8, random_state=seed
        )
    return clf.fit(x, y)


def export(indicator: str, clf: Any, threshold: float, meta: dict[str, Any]) -> RiskModel:
    """A :class:`RiskModel` holding the parameters of a fitted scikit-learn classifier."""
    names = FEATURES[indicator]
    if indicator in LOGISTIC:
        scaler, lr = clf[0], clf[-1]
        params: dict[str, Any] = {
            "mean": scaler.mean_.tolist(),
            "scale": scaler.scale_.tolist(),
            "coef": lr.coef_[0].tolist(),
            "intercept": float(lr.intercept_[0]),
        }
        return RiskModel(indicator, "logistic", names, params, threshold, meta)
    rate = float(clf.learning_rate)
    trees = []
    probe = np.zeros((1, len(names)))
    tree_sum = 0.0
    for est in clf.estimators_[:, 0]:
        t = est.tree_
        trees.append(
            {
                "feature": t.feature.tolist(),
                "threshold": t.threshold.tolist(),
                "left": t.children_left.tolist(),
                "right": t.children_right.tolist(),
                "value": t.value[:, 0, 0].tolist(),
                "depth": int(t.max_depth),
            }
        )
        tree_sum += float(est.predict(probe)[0])
    init = float(clf.decision_function(probe)[0]) - rate * tree_sum
    params = {"init": init, "learning_rate": rate, "trees": trees}
    return RiskModel(indicator, "gbm", names, params, threshold, meta)


def oof_proba(indicator: str, ex: Examples, folds: int = 5, seed: int = 0) -> np.ndarray:
    """Out-of-fold P(MASK) of every span (folds by document)."""
    from sklearn.model_selection import GroupKFold

    x, y = ex.matrix(indicator), ex.y
    out = np.zeros(len(y))
    folds = min(folds, len(set(ex.groups)))
    for tr, te in GroupKFold(n_splits=folds).split(x, y, ex.groups):
        out[te] = fit_sklearn(indicator, x[tr], y[tr], seed).predict_proba(x[te])[:, 1]
    return out


def pick_threshold(p: np.ndarray, y: np.ndarray, min_recall: float | None = None) -> float:
    """The threshold with the best MASK F1, or (``min_recall``) the highest one whose
    MASK recall is at least ``min_recall``."""
    best_t, best_f = 0.5, -1.0
    pos = max(1, int(y.sum()))
    for t in np.unique(np.round(p, 4)):
        pred = p >= t
        tp = int((pred & (y == 1)).sum())
        rec = tp / pos
        if min_recall is not None:
            if rec >= min_recall:
                best_t = float(t)
            continue
        prec = tp / max(1, int(pred.sum()))
        f = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        if f > best_f:
            best_t, best_f = float(t), f
    return best_t


def train_all(
    parts: Sequence[Examples], out_dir: Path, min_recall: float | None = None
) -> dict[str, RiskModel]:
    """Fit and save every indicator's model on ``parts``; thresholds from out-of-fold
    predictions."""
    ex = concat(parts)
    out_dir.mkdir(parents=True, exist_ok=True)
    models = {}
    for name in INDICATORS:
        if "masked" in NEEDS[name] and "masked_logprobs" not in ex.measurements[0]:
            continue
        if "search" in NEEDS[name] and "search" not in ex.measurements[0]:
            continue
        thr = pick_threshold(oof_proba(name, ex), ex.y, min_recall)
        clf = fit_sklearn(name, ex.matrix(name), ex.y)
        meta = {
            "trained_on": ex.dataset,
            "n_spans": len(ex.rows),
            "n_docs": len(set(ex.groups)),
            "threshold_rule": f"MASK recall >= {min_recall}" if min_recall else "best F1",
            "lm": "SmolLM2-135M-Instruct Q4_1 (numpy engine, float32), left context",
        }
        model = export(name, clf, thr, meta)
        model.save(out_dir / f"{name}.json")
        models[name] = model
        logger.warning("trained %s on %d spans: threshold %.3f", name, len(ex.rows), thr)
    return models


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--logprobs", type=Path, nargs="+", required=True)
    ap.add_argument("--index-dir", type=Path, default=Path("benchmarks/risk/index"))
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "models")
    ap.add_argument("--min-recall", type=float, default=0.95)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    own = load_own_logprobs(args.logprobs)
    parts = []
    for ds in ("wiki", "tab"):
        if not any(k[0] == ds for k in own):
            continue
        idx = reference_index(args.data, ds, args.index_dir / ds)
        parts.append(examples(args.data, ds, "own", own, idx))
    train_all(parts, args.out, args.min_recall)


if __name__ == "__main__":
    main()

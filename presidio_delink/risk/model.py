"""Classifier files of the risk indicators: JSON parameters, read without scikit-learn.

A model is trained offline (:mod:`presidio_delink.risk.train`, scikit-learn) and saved as
its *parameters* in JSON: a logistic regression (standardisation, coefficients, intercept)
or a gradient-boosted tree ensemble (each tree's split features, thresholds, children and
leaf values). Why JSON and not pickle/joblib: loading a pickle runs code from the file,
a JSON file can only hold numbers; it is also diffable and needs no scikit-learn at run
time (the prediction below is a few lines of numpy, checked against scikit-learn in the
tests). Each file carries :data:`FORMAT_VERSION` and the feature names it was trained on;
a file of another version or with other features is refused with :class:`ModelFormatError`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import ModelFormatError

FORMAT_NAME = "presidio-delink-risk-model"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class RiskModel:
    """One indicator's classifier: ``predict_proba(rows)`` -> P(MASK) per row."""

    indicator: str
    kind: str
    features: tuple[str, ...]
    params: dict[str, Any]
    threshold: float
    meta: dict[str, Any]

    def predict_proba(self, rows: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
        x = np.asarray(rows, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != len(self.features):
            raise ModelFormatError(
                f"{self.indicator} model expects {len(self.features)} features per row, "
                f"got shape {x.shape}"
            )
        if self.kind == "logistic":
            p = self.params
            z = ((x - np.asarray(p["mean"])) / np.asarray(p["scale"])) @ np.asarray(
                p["coef"]
            ) + float(p["intercept"])
        else:
            z = np.full(len(x), float(self.params["init"]))
            rate = float(self.params["learning_rate"])
            rows_idx = np.arange(len(x))
            for tree in self.params["trees"]:
                feat = np.asarray(tree["feature"], dtype=np.int64)
                thr = np.asarray(tree["threshold"])
                left = np.asarray(tree["left"], dtype=np.int64)
                right = np.asarray(tree["right"], dtype=np.int64)
                value = np.asarray(tree["value"])
                node = np.zeros(len(x), dtype=np.int64)
                for _ in range(int(tree["depth"])):
                    inner = left[node] >= 0
                    if not inner.any():
                        break
                    go_left = x[rows_idx, np.maximum(feat[node], 0)] <= thr[node]
                    nxt = np.where(go_left, left[node], right[node])
                    node = np.where(inner, nxt, node)
                z = z + rate * value[node]
        return 1.0 / (1.0 + np.exp(-np.clip(z, -700.0, 700.0)))

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "indicator": self.indicator,
            "kind": self.kind,
            "features": list(self.features),
            "threshold": self.threshold,
            "meta": self.meta,
            "params": self.params,
        }

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), separators=(",", ":")) + "\n")


def parse_model(data: Any, source: str, features: Sequence[str] | None = None) -> RiskModel:
    """A :class:`RiskModel` from a decoded JSON object.

    Raises:
        ModelFormatError: not a risk model, another format version, other features than
            ``features``, or malformed parameters.
    """
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise ModelFormatError(f"{source} is not a presidio-delink risk model file")
    if data.get("version") != FORMAT_VERSION:
        raise ModelFormatError(
            f"{source} is a risk model of format version {data.get('version')!r}; this "
            f"presidio-delink reads version {FORMAT_VERSION}: retrain it with "
            "`python -m presidio_delink.risk.train` or install the matching presidio-delink"
        )
    try:
        model = RiskModel(
            indicator=str(data["indicator"]),
            kind=str(data["kind"]),
            features=tuple(str(f) for f in data["features"]),
            params=dict(data["params"]),
            threshold=float(data["threshold"]),
            meta=dict(data.get("meta") or {}),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFormatError(f"{source}: malformed risk model ({exc})") from None
    if model.kind not in ("logistic", "gbm") or not 0.0 <= model.threshold <= 1.0:
        raise ModelFormatError(f"{source}: unknown model kind or threshold out of [0, 1]")
    if features is not None and tuple(features) != model.features:
        raise ModelFormatError(
            f"{source} was trained on other features than this presidio-delink computes "
            f"for {model.indicator!r}: retrain it"
        )
    n = len(model.features)
    p = model.params
    try:
        if model.kind == "logistic":
            ok = all(len(p[k]) == n for k in ("mean", "scale", "coef")) and math.isfinite(
                float(p["intercept"])
            )
        else:
            float(p["init"]), float(p["learning_rate"])
            ok = all(
                len(t["feature"]) == len(t["threshold"]) == len(t["left"]) == len(t["right"])
                == len(t["value"])
                and max(t["feature"]) < n
                for t in p["trees"]
            )
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFormatError(f"{source}: malformed risk model parameters ({exc})") from None
    if not ok:
        raise ModelFormatError(f"{source}: risk model parameters do not match its features")
    return model


def load_model(
    path: str | Path | None, indicator: str, features: Sequence[str] | None = None
) -> RiskModel:
    """Load a model file; ``None`` loads the one shipped for ``indicator``.

    Raises:
        ModelFormatError: see :func:`parse_model`; also an unreadable file or a model of
            another indicator.
    """
    if path is None:
        res = resources.files("presidio_delink.risk") / "models" / f"{indicator}.json"
        source = f"shipped model {indicator}.json"
        try:
            raw = res.read_text(encoding="utf-8")
        except OSError as exc:
            raise ModelFormatError(f"{source} is missing from the package: {exc}") from None
    else:
        source = str(path)
        try:
            raw = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelFormatError(f"cannot read risk model {source}: {exc}") from None
    try:
        data = json.loads(raw)
    except ValueError:
        raise ModelFormatError(f"{source} is not JSON") from None
    model = parse_model(data, source, features)
    if model.indicator != indicator:
        raise ModelFormatError(
            f"{source} is a model of the {model.indicator!r} indicator, not {indicator!r}"
        )
    return model

"""The four privacy risk indicators of Papadopoulou et al. (arXiv 2310.14312), and their
combination.

Each indicator reads Presidio ``RecognizerResult``s of one text and returns, per span, the
probability that it needs masking (a classifier trained offline on human MASK / NO_MASK
decisions, shipped as JSON in ``risk/models/``) and an explanation (its features; the
documents found, for the search indicator). What each reads from the text:

- ``llm_probability``: the log-probabilities our local language model gives the span's
  tokens after its left context (min, max, mean, sum, words, extra subword tokens), and the
  entity type.
- ``span_classification``: the same, plus a vector of the span's own text (hashed words and
  character 3-grams) and its shape (length, digits, capitals).
- ``perturbation``: the span's log-probability with the text as it is and with every other
  PII span before it masked (``<TYPE>``): how much the other spans reveal about it. (The
  paper masks one entity at a time, one model pass per entity; masking all of them at once
  costs one pass. A causal model only sees spans to the left.)
- ``search``: in how many groups of the reference collection (our N-gram index) the span
  occurs alone and together with each other span of the text.
- ``combined``: one classifier over the features of all four (without the text vector).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from presidio_delink.errors import ConfigError
from presidio_delink.risk import features as F
from presidio_delink.risk.model import RiskModel, load_model

logger = logging.getLogger(__name__)


def _prefixed(prefix: str, names: Sequence[str]) -> tuple[str, ...]:
    return tuple(prefix + n for n in names)


FEATURES: dict[str, tuple[str, ...]] = {
    "llm_probability": F.LM_FEATURES + F.TYPE_FEATURES,
    "span_classification": F.LM_FEATURES + F.TYPE_FEATURES + F.SHAPE_FEATURES
    + F.hash_features(),
    "perturbation": F.PERTURBATION_FEATURES + F.TYPE_FEATURES,
    "search": F.SEARCH_FEATURES + F.TYPE_FEATURES,
    "combined": F.LM_FEATURES
    + _prefixed("p_", F.PERTURBATION_FEATURES)
    + _prefixed("s_", F.SEARCH_FEATURES)
    + F.SHAPE_FEATURES
    + F.TYPE_FEATURES,
}
"""Feature names of each indicator's classifier, in row order."""

NEEDS: dict[str, frozenset[str]] = {
    "llm_probability": frozenset({"lm"}),
    "span_classification": frozenset({"lm"}),
    "perturbation": frozenset({"lm", "masked"}),
    "search": frozenset({"search"}),
    "combined": frozenset({"lm", "masked", "search"}),
}
INDICATORS = tuple(FEATURES)


def feature_row(indicator: str, span: F.Span, m: Mapping[str, Any]) -> list[float]:
    """The classifier row of ``span`` for ``indicator`` from its measurements ``m``
    (``logprobs``, ``masked_logprobs``, ``search``: as :class:`Measurer` returns them)."""
    t = F.type_row(span.entity_type)
    if indicator == "llm_probability":
        return F.lm_row(m["logprobs"], span.text) + t
    if indicator == "span_classification":
        return F.lm_row(m["logprobs"], span.text) + t + F.shape_row(span.text) + F.hash_row(
            span.text
        )
    if indicator == "perturbation":
        return F.perturbation_row(m["logprobs"], m["masked_logprobs"]) + t
    if indicator == "search":
        return F.search_row(m["search"]) + t
    if indicator == "combined":
        return (
            F.lm_row(m["logprobs"], span.text)
            + F.perturbation_row(m["logprobs"], m["masked_logprobs"])
            + F.search_row(m["search"])
            + F.shape_row(span.text)
            + t
        )
    raise ConfigError(f"unknown risk indicator {indicator!r}: one of {', '.join(INDICATORS)}")


@dataclass(frozen=True)
class SpanRisk:
    """The verdict on one span: P(needs masking), the decision, and why."""

    start: int
    end: int
    entity_type: str
    probability: float
    mask: bool
    explanation: dict[str, Any] = field(default_factory=dict)


class Measurer:
    """Takes the measurements the indicators read: log-probabilities from a
    :class:`~presidio_delink.risk.lm.SpanScorer` (``make_scorer``: the numpy engine, or
    llama.cpp forced decoding), frequencies from an
    :class:`~presidio_delink.index.NgramIndex`."""

    def __init__(self, scorer: Any = None, index: Any = None) -> None:
        self.scorer = scorer
        self.index = index

    def measure(
        self, text: str, spans: Sequence[F.Span], needs: frozenset[str]
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{} for _ in spans]
        offsets = [(s.start, s.end) for s in spans]
        if "lm" in needs or "masked" in needs:
            if self.scorer is None:
                raise ConfigError("this risk indicator needs a language model (scorer=...)")
            for m, sc in zip(out, self.scorer.score_spans(text, offsets), strict=True):
                m["logprobs"], m["tokens"] = list(sc.logprobs), list(sc.tokens)
        if "masked" in needs:
            masks = [(s.start, s.end, f"<{s.entity_type}>") for s in spans]
            scored = self.scorer.score_spans(text, offsets, masked=masks)
            for m, sc in zip(out, scored, strict=True):
                m["masked_logprobs"] = list(sc.logprobs)
        if "search" in needs:
            if self.index is None:
                raise ConfigError("the search risk indicator needs an N-gram index (index=...)")
            from presidio_delink.risk.search import measure

            for m, sm in zip(out, measure(self.index, [s.text for s in spans]), strict=True):
                m["search"] = sm
        return out


class RiskIndicator:
    """One indicator: ``assess(text, results)`` -> a :class:`SpanRisk` per result.

    Args:
        name: one of :data:`INDICATORS`.
        measurer: supplies the measurements (language model and/or index).
        model_path: a model file; ``None`` uses the one shipped in the package.
        threshold: P(MASK) at or above which a span is to be masked; ``None`` uses the
            model's (chosen at training).
        entity_map: extra ``{presidio type: classifier type}`` entries.

    Raises:
        ConfigError: unknown indicator or threshold outside [0, 1].
        ModelFormatError: the model file is of another version or malformed.
    """

    def __init__(
        self,
        name: str,
        measurer: Measurer,
        model_path: str | None = None,
        threshold: float | None = None,
        entity_map: Mapping[str, str] | None = None,
    ) -> None:
        if name not in FEATURES:
            raise ConfigError(f"unknown risk indicator {name!r}: one of {', '.join(INDICATORS)}")
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"threshold must be in [0, 1] (got {threshold!r})")
        self.name = name
        self.measurer = measurer
        self.model: RiskModel = load_model(model_path, name, FEATURES[name])
        self.threshold = self.model.threshold if threshold is None else threshold
        self.entity_map = dict(entity_map or {})

    def assess(self, text: str, results: Sequence[F.ResultLike]) -> list[SpanRisk]:
        """Need-to-mask probability of each result, in the order given.

        Raises:
            InputError: a span outside the text, or an unknown entity type.
        """
        spans = F.spans_of(text, results, self.entity_map)
        if not spans:
            return []
        ms = self.measurer.measure(text, spans, NEEDS[self.name])
        rows = [feature_row(self.name, s, m) for s, m in zip(spans, ms, strict=True)]
        probs = self.model.predict_proba(rows)
        out = []
        names = self.model.features
        for s, m, row, p in zip(spans, ms, rows, probs, strict=True):
            expl: dict[str, Any] = {
                "indicator": self.name,
                "threshold": self.threshold,
                "features": {
                    n: round(v, 4) for n, v in zip(names, row, strict=True)
                    if not n.startswith("hash_")
                },
            }
            if "search" in m:
                sm = m["search"]
                expl["documents"] = sm["docs"]
                if sm["partner"] is not None:
                    other = spans[sm["partner"]]
                    expl["partner_span"] = [other.start, other.end]
            out.append(
                SpanRisk(s.start, s.end, s.entity_type, float(p), bool(p >= self.threshold), expl)
            )
        logger.debug("%s: %d of %d spans at risk", self.name, sum(r.mask for r in out), len(out))
        return out

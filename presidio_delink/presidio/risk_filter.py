"""``RiskFilter``: between Presidio's ``AnalyzerEngine`` and ``AnonymizerEngine``, keep only
the PII spans a privacy risk indicator says need masking (:mod:`presidio_delink.risk`).

Presidio masks every span its recognizers find. ::

    results = analyzer.analyze(text, language="en")
    kept = RiskFilter(indicator).filter(text, results)       # the risky ones
    anonymizer.anonymize(text, kept, operators=...)

Each result the filter sees gets ``recognition_metadata["risk"]`` (probability, decision,
indicator, features; the documents found for the search indicator); the kept ones are
returned in their input order.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from presidio_analyzer import RecognizerResult

from presidio_delink.errors import ConfigError
from presidio_delink.risk.features import propagate, spans_of
from presidio_delink.risk.indicators import Measurer, RiskIndicator

logger = logging.getLogger(__name__)

MASK_POLICIES = ("all", "risk")
PASSTHROUGH = ("LINKABLE_NGRAM",)
"""Entity types kept without assessment (they are not PII: delinking handles them)."""


class RiskFilter:
    """Keeps the results whose need-to-mask probability reaches the indicator's threshold.

    Args:
        indicator: a :class:`~presidio_delink.risk.indicators.RiskIndicator`
            (``combined`` reads all four indicators' features).
        passthrough: entity types kept as they are, never assessed.
        propagate: a span is also kept when a kept span of the same type shares a word
            with it (:func:`presidio_delink.risk.features.propagate`): one entity's
            mentions share one decision.
    """

    def __init__(
        self,
        indicator: RiskIndicator,
        passthrough: Iterable[str] = PASSTHROUGH,
        propagate: bool = True,
    ) -> None:
        self.indicator = indicator
        self.passthrough = frozenset(passthrough)
        self.propagate = propagate

    def filter(self, text: str, results: Sequence[RecognizerResult]) -> list[RecognizerResult]:
        """The results of ``text`` to mask.

        Raises:
            InputError: a span outside the text, or an entity type the indicator does not
                know (see ``entity_map`` of :class:`RiskIndicator`).
        """
        assess = [r for r in results if r.entity_type not in self.passthrough]
        risks = self.indicator.assess(text, assess)
        spans = spans_of(text, assess, self.indicator.entity_map)
        decided = [k.mask for k in risks]
        final = propagate([""] * len(spans), spans, decided) if self.propagate else decided
        keep_ids = set()
        for r, k, m in zip(assess, risks, final, strict=True):
            if m:
                keep_ids.add(id(r))
            meta = r.recognition_metadata if r.recognition_metadata is not None else {}
            meta["risk"] = {
                "probability": round(k.probability, 4),
                "mask": m,
                "propagated": m and not k.mask,
                **k.explanation,
            }
            r.recognition_metadata = meta
        kept = [r for r in results if r.entity_type in self.passthrough or id(r) in keep_ids]
        logger.info("risk filter kept %d of %d PII spans", len(kept), len(results))
        return kept


def make_risk_filter(
    policy: str,
    llm_spec: str,
    index: Any,
    threshold: float | None = None,
    indicator: str = "combined",
    allow_remote: bool = False,
    timeout: float | None = None,
) -> RiskFilter | None:
    """The filter of ``--mask-policy``: ``None`` for ``all`` (mask every span).

    Raises:
        ConfigError: unknown policy, or an LLM that cannot score text (``ollama:``,
            ``none``).
        ModelFormatError: a shipped model of another format version.
    """
    if policy not in MASK_POLICIES:
        raise ConfigError(f"unknown mask policy {policy!r}: one of {', '.join(MASK_POLICIES)}")
    if policy == "all":
        return None
    from presidio_delink.risk.lm import make_scorer

    scorer = make_scorer(llm_spec, allow_remote=allow_remote, timeout=timeout)
    return RiskFilter(RiskIndicator(indicator, Measurer(scorer, index), threshold=threshold))

"""Standard Presidio PII redaction, run before delinking."""

from __future__ import annotations

from typing import Any

from presidio_analyzer import AnalyzerEngine
from presidio_anonymizer import AnonymizerEngine
from presidio_anonymizer.entities import OperatorConfig

_ANONYMIZER: AnonymizerEngine | None = None


def redact_pii(
    analyzer: AnalyzerEngine, text: str, language: str = "en", risk_filter: Any = None
) -> tuple[str, list[str]]:
    """Replace PII found by ``analyzer`` with ``<ENTITY_TYPE>`` placeholders.

    ``risk_filter`` (a :class:`~presidio_delink.presidio.risk_filter.RiskFilter`) keeps only
    the spans whose privacy risk passes its threshold; ``None`` masks every span found.

    Returns:
        ``(redacted_text, removed)``: ``removed`` lists the PII strings taken out, so that
        a rewrite can be refused when it puts one back.
    """
    global _ANONYMIZER
    if _ANONYMIZER is None:
        _ANONYMIZER = AnonymizerEngine()
    found = analyzer.analyze(text, language=language)
    if risk_filter is not None:
        found = risk_filter.filter(text, found)
    removed = sorted({text[r.start : r.end] for r in found if r.end > r.start})
    out = _ANONYMIZER.anonymize(
        text,
        found,  # type: ignore[arg-type]  # analyzer results, as Presidio documents
        operators={"DEFAULT": OperatorConfig("replace")},
    )
    return out.text, removed

"""Standard Presidio PII redaction, run before delinking: one step for ``Delinker`` and
``DelinkEngine`` alike (so their outputs agree)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from presidio_analyzer import AnalyzerEngine, RecognizerResult
from presidio_anonymizer import AnonymizerEngine
from presidio_anonymizer.entities import EngineResult, OperatorConfig

from presidio_delink.presidio.overlaps import resolve_overlaps
from presidio_delink.presidio.recognizer import ENTITY

_ANONYMIZER: AnonymizerEngine | None = None
DEFAULT_OPERATORS = {"DEFAULT": OperatorConfig("replace")}


def pii_entities(analyzer: AnalyzerEngine, language: str = "en") -> list[str]:
    """The analyzer's entities for ``language``, linkage excluded (delinking handles it)."""
    return [e for e in analyzer.get_supported_entities(language) if e != ENTITY]


def anonymize_pii(
    anonymizer: AnonymizerEngine,
    text: str,
    found: Sequence[RecognizerResult],
    operators: Mapping[str, OperatorConfig] | None = None,
) -> tuple[EngineResult | None, list[str]]:
    """Anonymize the PII results ``found`` in ``text`` (``LINKABLE_NGRAM`` ones ignored;
    overlaps resolved first, :func:`resolve_overlaps`: PII never cut mid-word).

    Returns:
        ``(Presidio's result or None when there was nothing to anonymize, the removed
        strings)``: a rewrite that puts one of them back is refused.
    """
    found = [r for r in found if r.entity_type != ENTITY and r.end > r.start]
    pii = resolve_overlaps(found, text)
    # Both the strings found and the whole words they were widened to.
    removed = sorted(
        {text[r.start : r.end] for r in [*found, *pii] if text[r.start : r.end].strip()}
    )
    if not pii:
        return None, removed
    out = anonymizer.anonymize(
        text,
        pii,  # type: ignore[arg-type]  # analyzer results, as Presidio documents
        operators=dict(operators or DEFAULT_OPERATORS),
    )
    return out, removed


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
    found = analyzer.analyze(text, language=language, entities=pii_entities(analyzer, language))
    if risk_filter is not None:
        found = risk_filter.filter(text, found)
    out, removed = anonymize_pii(_ANONYMIZER, text, found)
    return (out.text if out is not None else text), removed

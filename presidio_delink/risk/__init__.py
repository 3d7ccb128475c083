"""Privacy risk indicators for PII spans (Papadopoulou et al., arXiv 2310.14312).

Which detected PII spans actually need masking: four indicators (LLM probability, span
classification, perturbation, search in our N-gram index) and their combination, each a
classifier trained offline on human MASK / NO_MASK decisions and shipped as JSON. See
:mod:`presidio_delink.risk.indicators`; the Presidio step is
:class:`presidio_delink.presidio.risk_filter.RiskFilter`.
"""

from presidio_delink.risk.features import PRESIDIO_TYPES, TYPES, Span, spans_of
from presidio_delink.risk.indicators import (
    FEATURES,
    INDICATORS,
    Measurer,
    RiskIndicator,
    SpanRisk,
    feature_row,
)
from presidio_delink.risk.lm import (
    LogprobScorer,
    NumpyScorer,
    SpanScorer,
    TokenScores,
    make_scorer,
)
from presidio_delink.risk.model import FORMAT_VERSION, RiskModel, load_model

__all__ = [
    "FEATURES",
    "FORMAT_VERSION",
    "INDICATORS",
    "PRESIDIO_TYPES",
    "TYPES",
    "LogprobScorer",
    "Measurer",
    "NumpyScorer",
    "RiskIndicator",
    "RiskModel",
    "Span",
    "SpanRisk",
    "SpanScorer",
    "TokenScores",
    "feature_row",
    "load_model",
    "make_scorer",
    "spans_of",
]

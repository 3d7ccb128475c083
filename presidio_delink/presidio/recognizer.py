"""`LinkageRiskRecognizer`: flags the N-grams of a text that link it to the collection."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from presidio_analyzer import AnalysisExplanation, EntityRecognizer, RecognizerResult
from presidio_analyzer.input_validation import yaml_recognizer_models as _yaml_models
from presidio_analyzer.nlp_engine import NlpArtifacts
from pydantic import ConfigDict, Field

from presidio_delink.errors import ConfigError
from presidio_delink.index import NgramIndex
from presidio_delink.linkage import Flagged, LinkageReport, analyze

log = logging.getLogger(__name__)

ENTITY = "LINKABLE_NGRAM"


class LinkageResult(RecognizerResult):
    """A `RecognizerResult` whose explanation survives the analyzer.

    ``AnalyzerEngine.analyze`` clears every result's ``analysis_explanation`` unless
    ``return_decision_process=True``.  For a linkage finding the explanation *is* the
    finding (which phrase, in how many documents, with which partners), so it is kept:
    setting it to None is ignored.  Everything in it is also in ``recognition_metadata``.
    """

    @property  # type: ignore[override]
    def analysis_explanation(self) -> AnalysisExplanation | None:
        return self.__dict__.get("analysis_explanation")

    @analysis_explanation.setter
    def analysis_explanation(self, value: AnalysisExplanation | None) -> None:
        if value is not None or "analysis_explanation" not in self.__dict__:
            self.__dict__["analysis_explanation"] = value


class LinkageRiskRecognizer(EntityRecognizer):
    """Presidio recognizer of linkage risk: N-grams found in fewer than ``k`` documents.

    Works in a registry (``registry.add_recognizer``), ad hoc
    (``analyze(..., ad_hoc_recognizers=[...])``) and in Presidio's YAML recognizer
    configuration as ``type: predefined`` with ``index_path``, ``k``, ``arity`` and
    ``max_n`` (import ``presidio_delink.presidio`` first so Presidio can find the class).

    Each result (a :class:`LinkageResult`) carries, in ``recognition_metadata`` and in
    its explanation, always (no ``return_decision_process`` needed): ``ngram``, ``df``,
    ``groups``, ``n`` (words), ``arity``, ``views``, ``partners``, ``k``, and with
    ``explain_docs=True`` ``linked_docs`` (ids of the collection documents it links to:
    off by default, since the ids may themselves be sensitive).  Scores rise as df falls: arity 1
    scores 0.85 (df = k - 1) to 1.0 (df = 1); a member of a linkable combination scores
    0.6 (arity 3) or 0.7 (arity 2).

    Args:
        index: a loaded :class:`NgramIndex` (or give ``index_path``).
        index_path: directory of a saved index.
        k: flag what occurs in fewer than ``k`` documents (>= 2).
        arity: largest combination of N-grams considered, 1..3.
        max_n: longest N-gram (default: the index's).
        explain_docs: put the ids of the linked collection documents in each result.
    """

    ENTITY = ENTITY

    def __init__(
        self,
        index: NgramIndex | None = None,
        index_path: str | Path | None = None,
        k: int = 2,
        arity: int = 1,
        max_n: int | None = None,
        supported_language: str = "en",
        name: str | None = None,
        context: list[str] | None = None,
        explain_docs: bool = False,
    ) -> None:
        if (index is None) == (index_path is None):
            raise ConfigError("give exactly one of index and index_path")
        self.index = index if index is not None else NgramIndex.load(index_path)  # type: ignore[arg-type]
        self.k = k
        self.arity = arity
        self.max_n = max_n
        self.explain_docs = explain_docs
        # Validate now, naming the bad value, rather than at the first analyze().
        analyze(self.index, "", k=k, arity=arity, max_n=max_n)
        self.last_report: LinkageReport | None = None
        self.name: str
        super().__init__(
            supported_entities=[ENTITY],
            supported_language=supported_language,
            name=name or "LinkageRiskRecognizer",
            version="0.1.0",
            context=context,
        )

    def load(self) -> None:
        """Nothing to load: the index is memory-mapped."""

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        # `entities` is not checked: with ad hoc recognizers and no entities requested,
        # Presidio passes only the registry's entities, which do not include ours.
        report = analyze(self.index, text, k=self.k, arity=self.arity, max_n=self.max_n)
        self.last_report = report
        log.debug("%d linkable N-grams flagged", len(report.flagged))
        # One result per span: a span flagged in several views is one finding.
        by_span: dict[tuple[int, int], list[Flagged]] = {}
        for a, b, f in report.spans():
            by_span.setdefault((a, b), []).append(f)
        return [
            self._result(a, b, min(fs, key=lambda f: (f.arity, f.groups)), [f.view for f in fs])
            for (a, b), fs in by_span.items()
        ]

    def score(self, f: Flagged) -> float:
        if f.arity == 1:
            return 1.0 - 0.15 * ((f.groups or f.df) - 1) / max(self.k - 2, 1)
        return 0.7 if f.arity == 2 else 0.6

    def _result(
        self, start: int, end: int, f: Flagged, views: list[str] | None = None
    ) -> RecognizerResult:
        score = round(min(1.0, self.score(f)), 4)
        views = views or [f.view]
        why = f"N-gram of {f.n} word(s) found in {f.df} document(s)"
        if f.groups != f.df:
            why += f" of {f.groups} group(s)"
        why += f", in the {'/'.join(views)} view{'s' if len(views) > 1 else ''}"
        if f.arity > 1:
            why += f"; with {', '.join(repr(p) for p in f.partners[:3])} it links (arity {f.arity})"
        else:
            why += f" (< k={self.k})"
        linked: list[str] | None = None
        if self.explain_docs:
            ids = self.index.doc_ids
            linked = [ids[d] for d in f.docs]
            why += f"; links to {', '.join(linked[:5])}"
        expl = AnalysisExplanation(
            recognizer=self.name, original_score=score, textual_explanation=why
        )
        meta: dict[str, Any] = {
            RecognizerResult.RECOGNIZER_NAME_KEY: self.name,
            RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: self.id,
            "ngram": f.key,
            "df": f.df,
            "groups": f.groups,
            "views": views,
            "n": f.n,
            "arity": f.arity,
            "partners": list(f.partners),
            "k": self.k,
            "explanation": why,
        }
        if linked is not None:
            meta["linked_docs"] = linked
        return LinkageResult(
            ENTITY, start, end, score, analysis_explanation=expl, recognition_metadata=meta
        )


class LinkageRiskRecognizerConfig(_yaml_models.PredefinedRecognizerConfig):
    """YAML schema of the recognizer's parameters.

    Presidio validates ``type: predefined`` entries with a model that drops unknown
    fields; registering this model (as Presidio does for its own configurable
    recognizers) lets ``index_path``, ``k``, ``arity`` and ``max_n`` reach the constructor.
    """

    model_config = ConfigDict(extra="forbid")

    index_path: str = Field(..., description="Directory of a presidio-delink index")
    k: int = Field(2, ge=2, description="Flag what occurs in fewer than k documents")
    arity: int = Field(1, ge=1, le=3, description="Largest combination of N-grams")
    max_n: int | None = Field(None, ge=1, description="Longest N-gram (default: the index's)")
    explain_docs: bool = Field(False, description="Name the linked documents in results")

    def model_dump(self, *args: object, **kwargs: object) -> dict[str, object]:
        kwargs.setdefault("exclude_none", True)
        return super().model_dump(*args, **kwargs)  # type: ignore[arg-type]


_yaml_models.CONFIG_MODEL_MAP.setdefault("LinkageRiskRecognizer", LinkageRiskRecognizerConfig)

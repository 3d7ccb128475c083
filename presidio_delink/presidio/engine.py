"""`DelinkEngine`: the whole job with Presidio's own objects, verified until nothing links.

Presidio's `AnonymizerEngine` makes one pass over the results it is given; linkage needs
a loop, since a rewrite can leave (or, rarely, create) a linkable N-gram.  The engine is
an adapter over :class:`~presidio_delink.core.DelinkLoop`, the loop ``Delinker`` runs too
(so for the same analyzer and rewriter both give the same text):

1. standard PII analysis (the analyzer's recognizers, ``LINKABLE_NGRAM`` excluded) and
   anonymization (``<ENTITY_TYPE>`` placeholders by default; overlaps resolved so no
   PII is cut mid-word);
2. the delink loop: the fewest words to change, rewritten (one LLM request per passage)
   or redacted, verified, repeated until nothing links below k (a text that still links
   is never returned: :class:`DelinkError`); with ``protect``, containment protection.

The result is Presidio's `EngineResult`: the final text and every item, PII ones
included, with offsets into that text (each delink edit is one ``LINKABLE_NGRAM`` item
with operator ``delink``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from presidio_analyzer import AnalyzerEngine, BatchAnalyzerEngine, RecognizerResult
from presidio_anonymizer import AnonymizerEngine
from presidio_anonymizer.entities import EngineResult, OperatorConfig, OperatorResult

from presidio_delink.core import DelinkLoop
from presidio_delink.errors import DelinkError
from presidio_delink.index import NgramIndex
from presidio_delink.presidio.operator import DelinkOperator
from presidio_delink.presidio.pii import anonymize_pii, pii_entities
from presidio_delink.presidio.recognizer import ENTITY, LinkageRiskRecognizer
from presidio_delink.progress import doc_bar
from presidio_delink.protect import ProtectStep
from presidio_delink.settings import DelinkSettings

log = logging.getLogger(__name__)

_PII = "pii:"  # label prefix of a PII item's mark while the loop carries it


class DelinkEngine:
    """PII anonymization, then delinking until nothing links below ``k``.

    Args:
        analyzer: a Presidio ``AnalyzerEngine`` (e.g. :func:`make_analyzer`); its
            recognizers give the PII.
        anonymizer: a Presidio ``AnonymizerEngine``; the ``delink`` operator is added when
            missing.
        index: the reference collection's index.
        settings: what the run is (:class:`~presidio_delink.settings.DelinkSettings`);
            keyword ``overrides`` replace some of them by name (``k=5``).  ``protect``
            acts on the texts whose source ``group`` is given to :meth:`anonymize`.
        rewriter: the LLM backend (:func:`presidio_delink.llm.make_rewriter`); None means
            redaction only.  It gets a circuit breaker when it has none.
        language: the analysis language.
        pii_operators: Presidio operators for the PII (default ``replace``:
            ``<ENTITY_TYPE>``).
    """

    def __init__(
        self,
        analyzer: AnalyzerEngine,
        anonymizer: AnonymizerEngine,
        index: NgramIndex,
        settings: DelinkSettings | None = None,
        *,
        language: str = "en",
        pii_operators: dict[str, OperatorConfig] | None = None,
        **loop: Any,
    ) -> None:
        # rewriter and the overrides are the loop's keywords
        self.loop = DelinkLoop(index, settings, **loop)
        self.settings = st = self.loop.settings
        self.protection = ProtectStep(self.loop)
        # For users who analyse with it; the loop checks with linkage.analyze itself.
        self.recognizer = LinkageRiskRecognizer(
            index, k=st.k, arity=st.arity, max_n=st.max_n, supported_language=language
        )
        self.analyzer = analyzer
        self.anonymizer = anonymizer
        if "delink" not in anonymizer.get_anonymizers():
            anonymizer.add_anonymizer(DelinkOperator)
        self.index = index
        self.rewriter = self.loop.rewriter
        self.language = language
        self.pii_operators = pii_operators or {"DEFAULT": OperatorConfig("replace")}
        self.tokenizer = index.tokenizer

    # -- public -----------------------------------------------------------------------
    def analyze_pii(self, text: str) -> list[RecognizerResult]:
        """The analyzer's results for ``text``, linkage results excluded."""
        return self._pii_only(
            self.analyzer.analyze(text, language=self.language, entities=self._pii_entities())
        )

    def anonymize(self, text: str, *, group: str | None = None) -> EngineResult:
        """PII anonymization, then delinking, verified.

        Args:
            text: the document.
            group: its source's group in the index (for ``protect``).

        Raises:
            DelinkError: the text could not be made linkage-free (it is not returned).
            LLMError: only with ``strict``, when the LLM fails.
        """
        if not isinstance(text, str):
            raise DelinkError("text must be a string")
        return self._delink(text, self.analyze_pii(text), group)

    def anonymize_iterator(
        self, texts: Iterable[str], *, batch_size: int = 8, progress: bool = False
    ) -> Iterator[EngineResult]:
        """Like Presidio's batch engines: PII analysis in batches (``nlp.pipe``), then
        each document delinked; results in input order."""
        texts = list(texts)
        batch = BatchAnalyzerEngine(self.analyzer)
        with doc_bar(progress, len(texts)) as tick:
            for i in range(0, len(texts), batch_size):
                chunk = texts[i : i + batch_size]
                found = batch.analyze_iterator(
                    chunk, self.language, batch_size=batch_size, entities=self._pii_entities()
                )
                for text, pii in zip(chunk, found, strict=True):
                    yield self._delink(text, self._pii_only(pii))
                    tick()

    def anonymize_list(
        self, texts: Iterable[str], *, batch_size: int = 8, progress: bool = False
    ) -> list[EngineResult]:
        """:meth:`anonymize_iterator` as a list."""
        return list(self.anonymize_iterator(texts, batch_size=batch_size, progress=progress))

    # -- internals ----------------------------------------------------------------------
    def _pii_entities(self) -> list[str]:
        return pii_entities(self.analyzer, self.language)

    @staticmethod
    def _pii_only(results: Iterable[RecognizerResult]) -> list[RecognizerResult]:
        return [r for r in results if r.entity_type != ENTITY]

    def _delink(
        self, text: str, pii: Sequence[RecognizerResult], group: str | None = None
    ) -> EngineResult:
        if not isinstance(text, str):
            raise DelinkError("text must be a string")
        out, forbidden = anonymize_pii(self.anonymizer, text, pii, self.pii_operators)
        current = out.text if out is not None else text
        items = [(i.start, i.end, i.entity_type, i.operator) for i in (out.items if out else [])]
        marks = [(a, b, f"{_PII}{n}") for n, (a, b, _t, _o) in enumerate(items)]
        res = self.loop.run(current, forbidden=forbidden, marks=marks)
        res = self.protection(res, group, forbidden)
        if res.text is None:
            raise DelinkError("the text still links after every fallback; it is withheld")
        final = res.text
        results = []
        for a, b, label in res.marks:
            if label.startswith(_PII):
                _s, _e, etype, op = items[int(label[len(_PII) :])]
                results.append(OperatorResult(a, b, etype, final[a:b], op))
            else:  # an edit (earlier PII items it touched are absorbed into it)
                results.append(OperatorResult(a, b, ENTITY, final[a:b], "delink"))
        log.debug("delinked in %d pass(es), %d items", res.passes, len(results))
        return EngineResult(text=final, items=sorted(results, key=lambda r: (r.start, r.end)))

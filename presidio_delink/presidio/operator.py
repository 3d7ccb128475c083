"""The ``delink`` anonymizer operator for Presidio's `AnonymizerEngine`.

Presidio shows an operator only the span text and its ``OperatorConfig`` params, one
span at a time.  Context and batching come in through params:

* ``rewrites`` (dict ``{span text: replacement}``): replacements precomputed elsewhere,
  for example by :class:`~presidio_delink.pipeline.Delinker` (one LLM call per sentence);
* ``rewriter`` (a :class:`~presidio_delink.llm.Rewriter`) with ``document`` (the full
  text): the operator finds the sentence holding the span and asks the LLM for that
  span alone;
* neither, or an answer that fails validation: the span becomes ``[REDACTED]``.

Usage::

    engine = AnonymizerEngine()
    engine.add_anonymizer(DelinkOperator)
    engine.anonymize(text, results, operators={
        "LINKABLE_NGRAM": OperatorConfig("delink", {"rewriter": rw, "document": text})})

The operator only proposes; re-check the output (or use the ``Delinker``, which verifies
every pass and redacts what still links).
"""

from __future__ import annotations

import logging
from typing import Any

from presidio_anonymizer.operators import Operator, OperatorType

from presidio_delink.edits import REDACTED, rejection, sentence_bounds
from presidio_delink.errors import LLMError, LLMUnavailable
from presidio_delink.text import Tokenizer

log = logging.getLogger(__name__)


class DelinkOperator(Operator):
    """Rewrite a linkable span (LLM or precomputed), else redact it."""

    REWRITES = "rewrites"
    REWRITER = "rewriter"
    DOCUMENT = "document"
    FORBIDDEN = "forbidden"
    FALLBACK = "fallback"

    _tokenizer = Tokenizer()

    def operate(self, text: str, params: dict[str, Any] | None = None) -> str:
        params = params or {}
        fallback = params.get(self.FALLBACK, REDACTED)
        forbidden = params.get(self.FORBIDDEN, ())
        proposal = (params.get(self.REWRITES) or {}).get(text)
        rewriter = params.get(self.REWRITER)
        if proposal is None and rewriter is not None:
            doc = params.get(self.DOCUMENT) or text
            context = _sentence_of(doc, text)
            try:
                proposal = rewriter.rewrite(context, [text]).get(text)
            except LLMUnavailable:
                proposal = None  # the circuit breaker has already said so, once
            except LLMError as exc:
                log.warning("LLM failed (%s); span redacted", type(exc).__name__)
                proposal = None
        if proposal is None or rejection(text, proposal, self._tokenizer, forbidden):
            return str(fallback)
        return str(proposal).strip()

    def validate(self, params: dict[str, Any] | None = None) -> None:
        params = params or {}
        rewrites = params.get(self.REWRITES)
        if rewrites is not None and not isinstance(rewrites, dict):
            raise ValueError("delink: 'rewrites' must be a dict {span: replacement}")
        rewriter = params.get(self.REWRITER)
        if rewriter is not None and not callable(getattr(rewriter, "rewrite", None)):
            raise ValueError("delink: 'rewriter' must have a rewrite(context, spans) method")
        doc = params.get(self.DOCUMENT)
        if doc is not None and not isinstance(doc, str):
            raise ValueError("delink: 'document' must be the text (a string)")

    def operator_name(self) -> str:
        return "delink"

    def operator_type(self) -> OperatorType:
        return OperatorType.Anonymize


def _sentence_of(doc: str, span: str) -> str:
    at = doc.find(span)
    if at < 0:
        return span
    for a, b in sentence_bounds(doc):
        if a <= at < b:
            return doc[a : max(b, at + len(span))]
    return span

"""The ``delink`` anonymizer operator for Presidio's `AnonymizerEngine`.

Presidio shows an operator only the span text and its ``OperatorConfig`` params, one
span at a time.  Context and batching come in through params:

* ``rewrites`` (dict ``{span text: replacement}``): replacements precomputed elsewhere;
* ``rewriter`` (a :class:`~presidio_delink.llm.Rewriter`) with ``document`` (the full
  text) and ``results`` (the analyzer results passed to ``anonymize``): the first call
  for a document *plans* the rewrites of all its ``LINKABLE_NGRAM`` spans, one LLM
  request per passage (all its spans at once, marked, validated as the pipeline
  validates them); later calls are served from that plan.  Without ``results`` the
  operator cannot see the other spans and asks for each span alone;
* neither, or an answer that fails validation: the span becomes ``[REDACTED]``.

Usage::

    engine = AnonymizerEngine()
    engine.add_anonymizer(DelinkOperator)
    results = resolve_overlaps(results, text)   # PII wins; no glued placeholders
    engine.anonymize(text, results, operators={
        "LINKABLE_NGRAM": OperatorConfig("delink", {"rewriter": rw, "document": text,
                                                    "results": results})})

The operator only proposes; re-check the output (or use
:class:`~presidio_delink.presidio.engine.DelinkEngine`, which verifies and repeats).
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

from presidio_anonymizer.operators import Operator, OperatorType

from presidio_delink.edits import (
    REDACTED,
    fit,
    lower_words,
    neighbours,
    passage_groups,
    pick,
    rejection,
    sentence_bounds,
    trigrams,
)
from presidio_delink.errors import LLMError, LLMUnavailable
from presidio_delink.llm.prompt import example_texts, mark
from presidio_delink.text import Tokenizer

log = logging.getLogger(__name__)

ENTITY = "LINKABLE_NGRAM"
_PLANS_KEPT = 16


class DelinkOperator(Operator):
    """Rewrite a linkable span (LLM or precomputed), else redact it."""

    REWRITES = "rewrites"
    REWRITER = "rewriter"
    DOCUMENT = "document"
    RESULTS = "results"
    FORBIDDEN = "forbidden"
    FALLBACK = "fallback"

    _tokenizer = Tokenizer()
    # Plans of the last few documents: (rewriter, document digest, spans) -> {span: new}.
    _plans: OrderedDict[tuple[Any, ...], dict[str, str | None]] = OrderedDict()

    def operate(self, text: str, params: dict[str, Any] | None = None) -> str:
        params = params or {}
        fallback = params.get(self.FALLBACK, REDACTED)
        forbidden = params.get(self.FORBIDDEN, ())
        proposal = (params.get(self.REWRITES) or {}).get(text)
        rewriter = params.get(self.REWRITER)
        doc = params.get(self.DOCUMENT)
        if proposal is None and rewriter is not None:
            spans = _spans_of(params.get(self.RESULTS), doc)
            plan = self._plan(rewriter, doc, spans, forbidden) if doc and spans else {}
            if text in plan:
                if plan[text] is not None:
                    return str(plan[text])  # validated and fitted by the plan
            else:  # not planned (no results, or spans Presidio merged): ask for it alone
                proposal = self._ask_one(rewriter, doc or text, text)
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
        results = params.get(self.RESULTS)
        if results is not None and not isinstance(results, (list, tuple)):
            raise ValueError("delink: 'results' must be the list of analyzer results")

    def operator_name(self) -> str:
        return "delink"

    def operator_type(self) -> OperatorType:
        return OperatorType.Anonymize

    # -- internals ----------------------------------------------------------------------
    def _ask_one(self, rewriter: Any, doc: str, span: str) -> str | None:
        context = _sentence_of(doc, span)
        try:
            answer = rewriter.rewrite(context, [span])
        except LLMUnavailable:
            return None  # the circuit breaker has already said so, once
        except LLMError as exc:
            log.warning("LLM failed (%s); span redacted", type(exc).__name__)
            return None
        if not isinstance(answer, dict):
            return None
        new, _why = pick(span, answer.get(span), self._tokenizer, context=context)
        return new

    def _plan(
        self,
        rewriter: Any,
        doc: str,
        spans: list[tuple[int, int]],
        forbidden: Iterable[str],
    ) -> dict[str, str | None]:
        """Validated replacements of every span of ``doc``: one request per passage."""
        digest = hashlib.sha256(doc.encode("utf-8", "surrogatepass")).hexdigest()
        key = (rewriter, digest, tuple(spans), tuple(forbidden))
        plan = self._plans.get(key)
        if plan is not None:
            self._plans.move_to_end(key)
            return plan
        plan = {}
        failed = False
        copy_grams = trigrams([doc, *example_texts()], self._tokenizer)
        known_lower = lower_words(doc)
        for (a, b), group in passage_groups(doc, spans):
            context = doc[a:b]
            texts = list(dict.fromkeys(doc[s:e] for s, e in group))
            answer: Any = {}
            if not failed:
                try:
                    answer = rewriter.rewrite(
                        mark(context, [(s - a, e - a) for s, e in group]), texts
                    )
                except LLMUnavailable:
                    failed = True  # the circuit breaker has already said so, once
                except LLMError as exc:
                    log.warning(
                        "LLM failed (%s); that sentence's spans redacted", type(exc).__name__
                    )
            if not isinstance(answer, dict):
                answer = {}
            for s, e in group:
                span = doc[s:e]
                if span in plan:
                    continue
                new, why = pick(
                    span,
                    answer.get(span),
                    self._tokenizer,
                    forbidden,
                    [x for x in texts if x != span],
                    context,
                    copy_grams=copy_grams,
                    around=neighbours(doc, s, e),
                    known_lower=known_lower,
                )
                if new is not None:
                    plan[span] = fit(new, doc, s, e)
                else:
                    log.debug("replacement rejected: %s", why)
                    plan[span] = None
        self._plans[key] = plan
        while len(self._plans) > _PLANS_KEPT:
            self._plans.popitem(last=False)
        return plan


def _spans_of(results: Sequence[Any] | None, doc: str | None) -> list[tuple[int, int]]:
    """The ``LINKABLE_NGRAM`` spans among analyzer results (sorted, inside ``doc``)."""
    if not results or not doc:
        return []
    out = set()
    for r in results:
        if getattr(r, "entity_type", None) == ENTITY:
            a, b = int(r.start), int(r.end)
            if 0 <= a < b <= len(doc):
                out.add((a, b))
    return sorted(out)


def _sentence_of(doc: str, span: str) -> str:
    at = doc.find(span)
    if at < 0:
        return span
    for a, b in sentence_bounds(doc):
        if a <= at < b:
            return doc[a : max(b, at + len(span))]
    return span

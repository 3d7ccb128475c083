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
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

from presidio_anonymizer.operators import Operator, OperatorType

from presidio_delink.edits import REDACTED, Run, rejection
from presidio_delink.results import DelinkResult
from presidio_delink.rewriting import Rewriting
from presidio_delink.text import Tokenizer

log = logging.getLogger(__name__)

ENTITY = "LINKABLE_NGRAM"
_PLANS_KEPT = 16
Plan = dict[str, "str | None"]


class _PlanStore:
    """The last few plans of each rewriter, thread-safe, never keeping a rewriter alive.

    Presidio makes a new operator object for every span it anonymizes, so the plan of a
    document (made at its first span) cannot live on the operator object alone: it is
    kept with the rewriter that made it (a weak reference: the plans go with the
    rewriter), under a lock; a plan being made is made once, by the first thread asking.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_rewriter: weakref.WeakKeyDictionary[Any, OrderedDict[tuple[Any, ...], Plan]]
        self._by_rewriter = weakref.WeakKeyDictionary()
        self._making: dict[tuple[int, tuple[Any, ...]], threading.Lock] = {}

    def get(self, rewriter: Any, key: tuple[Any, ...], make: Any) -> Plan:
        try:
            weakref.ref(rewriter)
        except TypeError:  # not weakly referable: plan without keeping it
            return dict(make())
        making = (id(rewriter), key)
        while True:
            with self._lock:
                plans = self._by_rewriter.setdefault(rewriter, OrderedDict())
                plan = plans.get(key)
                if plan is not None:
                    plans.move_to_end(key)
                    return plan
                mine = self._making.get(making)
                if mine is None:
                    mine = self._making[making] = threading.Lock()
                    mine.acquire()
                    break
            with mine:  # another thread is making it: wait, then look again
                pass
        try:
            plan = dict(make())
            with self._lock:
                plans = self._by_rewriter.setdefault(rewriter, OrderedDict())
                plans[key] = plan
                while len(plans) > _PLANS_KEPT:
                    plans.popitem(last=False)
            return plan
        finally:
            with self._lock:
                del self._making[making]
            mine.release()


class DelinkOperator(Operator):
    """Rewrite a linkable span (LLM or precomputed), else redact it.

    The operator keeps no state of its own between calls; a document's plan is kept per
    rewriter (see :class:`_PlanStore`), so operators in several threads, engines and
    rewriters never see each other's plans.
    """

    REWRITES = "rewrites"
    REWRITER = "rewriter"
    DOCUMENT = "document"
    RESULTS = "results"
    FORBIDDEN = "forbidden"
    FALLBACK = "fallback"

    _tokenizer = Tokenizer()  # immutable settings, safe to share
    _store = _PlanStore()

    def operate(self, text: str, params: dict[str, Any] | None = None) -> str:
        params = params or {}
        fallback = params.get(self.FALLBACK, REDACTED)
        forbidden = list(params.get(self.FORBIDDEN, ()))
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
                proposal = self._ask_one(rewriter, doc or text, text, forbidden)
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
    def _ask_one(self, rewriter: Any, doc: str, span: str, forbidden: list[str]) -> str | None:
        """The span alone, at its first occurrence in ``doc``, in its passage (the loop's
        own rewriting step: the same prompt and validation)."""
        at = doc.find(span)
        if at < 0:
            doc, at = span, 0
        answers = self._rewrite(rewriter, doc, [(at, at + len(span))], forbidden)
        new, _why = answers.get((at, at + len(span)), (None, None))
        return new.strip() if new is not None else None

    def _plan(
        self,
        rewriter: Any,
        doc: str,
        spans: list[tuple[int, int]],
        forbidden: Iterable[str],
    ) -> Plan:
        """Validated replacements of every span of ``doc`` (one request per passage, by the
        loop's rewriting step), by span text: the first occurrence's answer."""
        forbidden = list(forbidden)
        digest = hashlib.sha256(doc.encode("utf-8", "surrogatepass")).hexdigest()
        key = (digest, tuple(spans), tuple(forbidden))

        def make() -> Plan:
            plan: Plan = {}
            answers = self._rewrite(rewriter, doc, spans, forbidden)
            for s, e in spans:
                plan.setdefault(doc[s:e], answers.get((s, e), (None, None))[0])
            return plan

        return self._store.get(rewriter, key, make)

    def _rewrite(
        self, rewriter: Any, doc: str, spans: Sequence[tuple[int, int]], forbidden: list[str]
    ) -> dict[tuple[int, int], tuple[str | None, str | None]]:
        words = Tokenizer(fold="fine", placeholders=self._tokenizer.placeholders)
        rs = [Run(s, e, max(1, len(words.tokens(doc[s:e])))) for s, e in spans]
        scratch = DelinkResult(id="", text=None, input_text=doc, passes=0, linkable_after=True)
        step = Rewriting(rewriter, self._tokenizer, llm_concurrency=1)
        out = step.rewrite_runs(doc, rs, forbidden, scratch)
        for w in scratch.warnings:
            log.warning("%s", w)
        return out


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


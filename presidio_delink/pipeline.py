"""`Delinker`: PII redaction, then detect -> rewrite -> verify until nothing links below k.

The guarantee does not depend on the LLM: whatever it answers, only validated
replacements of the chosen words are applied, every pass is verified against the index,
and whatever still links after the LLM passes is redacted (a placeholder breaks every
N-gram through it and creates none) until a final check finds nothing.  A document that
cannot be made linkage-free is reported as failed and its text withheld.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from presidio_delink.core import DelinkLoop
from presidio_delink.errors import DelinkError, InputError, LLMError
from presidio_delink.index import NgramIndex
from presidio_delink.progress import doc_bar
from presidio_delink.protect import ProtectStep
from presidio_delink.results import AuditEntry, DelinkResult
from presidio_delink.settings import DEFAULT_MAX_CHARS, DelinkSettings, Setting

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_MAX_CHARS", "AuditEntry", "DelinkResult", "DelinkSettings", "Delinker"]


class Delinker(DelinkLoop):
    """Removes search-based linkage from de-identified documents.

    An adapter over :class:`~presidio_delink.core.DelinkLoop` (which does all of the
    delinking) that adds the optional Presidio PII step first and a stream interface.

    Args:
        index: the reference collection's index.
        settings: what the run is (:class:`~presidio_delink.settings.DelinkSettings`:
            ``k``, ``arity``, ``passes``, ``protect``, ``max_chars``, ...); keyword
            ``overrides`` replace some of them by name (``Delinker(idx, k=5)``).
        rewriter: (keyword of :class:`~presidio_delink.core.DelinkLoop`, as are
            ``monitor``, ``fluency`` and ``ner``) the LLM backend (see
            :func:`presidio_delink.llm.make_rewriter`); None means redaction only.  One without a
            :class:`~presidio_delink.llm.base.CircuitBreaker` gets one: after 3 failed
            calls in a row the backend counts as down for this Delinker's lifetime and
            the remaining spans are redacted without further calls.
        analyzer: a Presidio ``AnalyzerEngine`` for PII redaction first; None skips it.
        risk_filter: with ``analyzer``, a ``RiskFilter`` (``presidio_delink.presidio.
            risk_filter``): only the PII spans at risk are redacted; None redacts all.
        monitor: a semantic linkage monitor (``presidio_delink.eval.SemanticMonitor``, or
            anything with ``assess(text) -> dict``): each result then carries a
            ``semantic`` risk figure for its output (nearest collection document by
            embedding cosine, the cosine, and its margin over the second nearest), the
            method's known limit made visible.
        fluency: a fluency check of accepted rewrites (:class:`~presidio_delink.llm.
            fluency.FluencyCheck`, or anything with ``reason(text, start, end,
            replacement) -> str | None``); None skips it.
        ner: named entities of a text, ``text -> [(start, end, label)]`` with spaCy's
            labels (e.g. ``lambda t: [(e.start_char, e.end_char, e.label_) for e in
            nlp(t).ents]``): a span that is a whole entity gets its type's generalisation
            (:func:`~presidio_delink.generalise.generalise`); None gives no labels.

    With ``settings.protect``, a document whose source group is given to :meth:`delink`
    is also edited until those attacks no longer rank that group first
    (:class:`~presidio_delink.protect.ProtectStep`, run after the loop).
    """

    def __init__(
        self,
        index: NgramIndex,
        settings: DelinkSettings | None = None,
        *,
        analyzer: Any = None,
        risk_filter: Any = None,
        **loop: Any,
    ) -> None:
        # rewriter, monitor, fluency, ner and the overrides are the loop's keywords
        super().__init__(index, settings, **loop)
        self.analyzer = analyzer
        self.risk_filter = risk_filter
        self.protection = ProtectStep(self)

    max_chars = Setting[int]()

    # -- public -----------------------------------------------------------------------
    def delink(
        self,
        text: str,
        doc_id: str = "",
        forbidden: Iterable[str] = (),
        *,
        group: str | None = None,
    ) -> DelinkResult:
        """Delink one document.

        Args:
            text: the (de-identified) document.
            doc_id: its id, for the result.
            forbidden: strings an earlier PII redaction removed (a rewrite that puts one
                back is refused); the built-in PII step adds its own.
            group: the source's group in the index (for ``protect``).

        Raises:
            InputError: ``text`` is not a string or is too long.
            LLMError: only in strict mode, when the LLM fails.
        """
        if not isinstance(text, str):
            raise InputError(f"document {doc_id!r}: text must be a string")
        if len(text) > self.max_chars:
            raise InputError(
                f"document {doc_id!r} has {len(text)} characters, more than max_chars="
                f"{self.max_chars}; split it or raise the limit (max_chars, delink --max-chars)"
            )
        t0 = time.perf_counter()
        res = DelinkResult(id=doc_id, text=None, input_text=text, passes=0, linkable_after=True)
        forbidden = [f for f in forbidden if isinstance(f, str) and f.strip()]
        current = text
        if self.analyzer is not None:
            from presidio_delink.presidio.pii import redact_pii

            current, removed = redact_pii(self.analyzer, text, risk_filter=self.risk_filter)
            res.pii_redacted = len(removed)
            forbidden += removed
        res.input_text = current
        res.seconds = time.perf_counter() - t0
        res = self.run(current, forbidden, res=res)
        return self.protection(res, group, forbidden)

    def delink_one(self, doc_id: str, text: str, group: str | None = None) -> DelinkResult:
        """:meth:`delink`, except that a document that cannot be delinked (too long, bad
        text, ...) gives a failed result saying why instead of raising; an LLM error
        under ``strict`` still raises."""
        try:
            return self.delink(text, doc_id, group=group)
        except LLMError:
            raise  # strict mode asked for it
        except DelinkError as exc:
            return DelinkResult(
                id=doc_id,
                text=None,
                input_text="",
                passes=0,
                linkable_after=True,
                failed=True,
                error=str(exc),
            )

    def delink_many(
        self,
        docs: Iterable[tuple[str, str]],
        *,
        progress: bool = False,
        group_of: Callable[[str], str | None] | None = None,
    ) -> Iterator[DelinkResult]:
        """Delink a stream; every input document gets a result (failed ones say why).

        Args:
            docs: ``(id, text)`` pairs.
            progress: show a progress bar.
            group_of: a document id's source group (or None), for ``protect``.
        """
        with doc_bar(progress) as tick:
            for doc_id, text in docs:
                yield self.delink_one(
                    doc_id, text, group_of(doc_id) if group_of is not None else None
                )
                tick()

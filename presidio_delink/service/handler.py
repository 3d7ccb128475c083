"""What each route asks of the library, in the words of Presidio's two services.

:class:`Handler` holds what a ``delink`` run holds (the index, the
:class:`~presidio_delink.pipeline.Delinker` of :func:`~presidio_delink.batch.make_delinker`,
an :class:`~presidio_delink.attacks.audit.Auditor`) and turns a request into the calls the
CLI makes and their answer into JSON-ready dicts:

* ``check``: :func:`~presidio_delink.linkage.analyze` and the records of ``presidio-delink
  check`` (:meth:`~presidio_delink.linkage.LinkageReport.places`), shaped as
  presidio-analyzer's ``/analyze`` results;
* ``delink``: :meth:`~presidio_delink.pipeline.Delinker.delink_one` and
  :func:`~presidio_delink.batch.record_of`, the record ``delink`` writes for the same
  document (same text, edits and ``source_ranks``), shaped as presidio-anonymizer's
  ``/anonymize`` response.

It runs in the worker processes (:mod:`.workers`); nothing here knows about HTTP.
"""

from __future__ import annotations

import hashlib
import logging
import time
from pathlib import Path
from typing import Any

from presidio_delink.attacks.audit import Auditor, exposed_by, first_by
from presidio_delink.batch import LLMOptions, PIIOptions, input_digest, make_delinker, record_of
from presidio_delink.index.format import META_FILE
from presidio_delink.linkage import analyze
from presidio_delink.llm.base import find_breaker
from presidio_delink.settings import DelinkSettings

log = logging.getLogger(__name__)

__all__ = ["ENTITY", "Handler", "check_score"]

#: The entity type of a linkable N-gram: the one
#: :class:`~presidio_delink.presidio.recognizer.LinkageRiskRecognizer` reports (not imported
#: from there: that module loads presidio-analyzer and spaCy, seconds and 400 MB a process).
ENTITY = "LINKABLE_NGRAM"
#: The operator name of a delink edit in ``items``, as the Presidio engine names it.
OPERATOR = "delink"
#: Seconds an open circuit breaker (the LLM counted as down after 3 failed calls in a row)
#: stays open before a request tries the LLM again.
LLM_RETRY_S = 30.0
#: A short text that links in any collection (its words occur nowhere): the warm-up that
#: makes the parent load what the first request would (shared by every forked worker).
_WARM_TEXT = "Zqxv wlorbt jemmisk ordered the applicant Qarvenno to pay."


def check_score(arity: int, groups: int, df: int, k: int) -> float:
    """The score :class:`~presidio_delink.presidio.recognizer.LinkageRiskRecognizer` gives a
    flagged place: 0.85 (df = k - 1) to 1.0 (df = 1) at arity 1; 0.7 / 0.6 for a member of
    a combination of 2 / 3 N-grams."""
    if arity == 1:
        score = 1.0 - 0.15 * ((groups or df) - 1) / max(k - 2, 1)
    else:
        score = 0.7 if arity == 2 else 0.6
    return round(min(1.0, score), 4)


class _Reading:
    """An :class:`Auditor` whose ``audit`` counts nothing: the record of
    :func:`~presidio_delink.batch.record_of` is the CLI's, and a server that runs for
    months keeps no tally per document."""

    def __init__(self, auditor: Auditor) -> None:
        self.auditor = auditor

    def audit(self, doc_id: str, text: str, group: str) -> dict[str, dict[str, Any]]:
        return self.auditor.read(text, group)


class Handler:
    """The library calls behind the routes, built once in the parent (before the workers
    are forked, so they share its pages).

    Args:
        index: the loaded :class:`~presidio_delink.index.NgramIndex`.
        settings: the run's :class:`~presidio_delink.settings.DelinkSettings`, built as
            ``delink`` builds them.
        llm: how to reach the LLM (``delink``'s ``--llm``, ``--cache``, ...).
        pii: the PII step (``delink``'s ``--redact-pii``, ...).

    Raises:
        ConfigError: what :func:`~presidio_delink.batch.make_delinker` refuses (``k``
            above the index's groups, a bad LLM spec, ...).
    """

    def __init__(
        self, index: Any, settings: DelinkSettings, llm: LLMOptions, pii: PIIOptions
    ) -> None:
        self.index = index
        self.llm = llm
        self.delinker, self.made_by = make_delinker(index, settings, llm, pii)
        self.settings: DelinkSettings = self.delinker.settings
        self.auditor = Auditor(index, settings.k, crowd=settings.crowd)
        self._reading = _Reading(self.auditor)
        self.group_of = dict(zip(index.doc_ids, index.doc_groups, strict=True))
        meta = Path(index.directory) / META_FILE
        self.digest = hashlib.sha256(meta.read_bytes()).hexdigest()
        self._breaker = find_breaker(self.delinker.rewriter)
        self._down_since: float | None = None

    # -- identity ---------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """The index's identity and what a request runs with (no document text)."""
        st = self.settings
        return {
            "status": "ok",
            "index": {
                "digest": self.digest,
                "documents": self.index.n_docs,
                "groups": self.index.n_groups,
                "views": sorted(self.index.views),
                "max_n": self.index.max_n,
            },
            "k": st.k,
            "arity": st.arity,
            "max_chars": st.max_chars,
            "llm": self.llm.spec,
            "strict": st.strict,
            "protect": st.protect,
            "made_by": self.made_by,
        }

    def warm(self, *, delink: bool) -> None:
        """Load now what the first request would load: the audit's ranked readings (the
        slow part: seconds to minutes, by the collection's size), and with ``delink`` one
        document delinked (the rewriting's tables).  Called in the parent before the
        workers are forked, so that they share it all."""
        analyze(self.index, _WARM_TEXT, k=self.settings.k, arity=self.settings.arity,
                max_n=self.settings.max_n)
        group = self.index.doc_groups[0] if self.index.n_docs else None
        if group is not None:
            self.auditor.read(_WARM_TEXT, group)
        if delink:
            self.delinker.delink_one("warm-up", _WARM_TEXT, group)

    def _llm_retry(self) -> None:
        """Close the LLM's circuit breaker again once it has been open for
        :data:`LLM_RETRY_S`: in a ``delink`` run it stays open to the end of the run, but
        a server runs for months and the LLM server may come back."""
        if self._breaker is None or not self._breaker.down:
            self._down_since = None
            return
        now = time.monotonic()
        if self._down_since is None:
            self._down_since = now
        elif now - self._down_since >= LLM_RETRY_S:
            log.info("retrying the LLM backend after %.0f s", now - self._down_since)
            self._breaker.reset()
            self._down_since = None

    # -- routes -----------------------------------------------------------------------
    def check(self, text: str, k: int | None = None) -> dict[str, Any]:
        """The linkable N-grams of ``text`` (``presidio-delink check``'s records), as
        presidio-analyzer results: ``entity_type``, ``start``, ``end``, ``score``, and
        ``df``, ``groups``, ``view`` (the view where it occurs in the fewest groups),
        ``views``, ``ngram``, ``arity``, ``partners``."""
        st = self.settings
        k = st.k if k is None else k
        rep = analyze(self.index, text, k=k, arity=st.arity, max_n=st.max_n)
        results = []
        for p in rep.places(text):
            p.pop("text", None)  # the client's own words: it has them
            results.append({
                "entity_type": ENTITY, "start": p.pop("start"), "end": p.pop("end"),
                "score": check_score(p["arity"], p["groups"], p["df"], k), **p,
            })
        return {"linkable": rep.linkable, "k": k, "results": results}

    def delink(
        self,
        text: str,
        doc_id: str = "",
        source_id: str | None = None,
        return_audit: bool = False,
    ) -> dict[str, Any]:
        """Delink ``text`` as ``delink`` does the document ``doc_id`` whose source is
        ``source_id`` (default: ``doc_id`` itself, as ``delink`` without
        ``--source-field``); the response of presidio-anonymizer's ``/anonymize`` with the
        record's figures.

        ``text`` and the edits are those of the record ``delink`` writes; ``audit`` (the
        removed phrases) only with ``return_audit``.

        Raises:
            LLMError: under ``strict``, when the LLM fails (as ``delink`` fails).
        """
        src = doc_id if source_id is None else source_id
        group = self.group_of.get(src) if src else None
        self._llm_retry()
        try:
            res = self.delinker.delink_one(doc_id, text, group)
        finally:
            self._llm_retry()
        rec = record_of(res, self._reading, group, self.made_by,
                        input_digest(doc_id, text, group))
        out_text = rec["text"]
        items = [] if out_text is None else [
            {"start": a, "end": b, "entity_type": ENTITY, "text": out_text[a:b],
             "operator": OPERATOR, "method": label}
            for a, b, label in sorted(res.marks)
        ]
        risk = None
        ranks = rec.get("source_ranks")
        if ranks is not None:
            crowd = self.settings.crowd
            exposed = exposed_by(ranks, crowd)
            risk = {
                "verdict": "exposed" if exposed else "crowded",
                "crowd": crowd,
                "exposed_by": exposed,
                "first_by": first_by(ranks),
                "source_ranks": ranks,
            }
        out: dict[str, Any] = {
            "id": rec["id"],
            "text": out_text,
            "items": items,
            "linkable_after": rec["linkable_after"],
            "failed": rec["failed"],
            "error": rec["error"],
            "source_known": group is not None,
            "risk": risk,
            "passes": rec["passes"],
            "words": rec["words"],
            "optimum_words": rec["optimum_words"],
            "words_rewritten": rec["words_rewritten"],
            "words_redacted": rec["words_redacted"],
            "pii_redacted": rec["pii_redacted"],
            "llm_calls": rec["llm_calls"],
            "warnings": rec["warnings"],
            "made_by": rec["made_by"],
            "input_sha256": rec["input_sha256"],
            "timings": {"delink_seconds": rec["seconds"], "llm_seconds": rec["llm_seconds"]},
        }
        if return_audit:
            out["audit"] = rec["audit"]
        return out

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
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from presidio_delink.edits import (
    REDACTED,
    Run,
    apply,
    fit,
    rejection,
    runs,
    sentence_groups,
    stabbing_tokens,
    whole_words,
)
from presidio_delink.errors import ConfigError, DelinkError, InputError, LLMError
from presidio_delink.index import NgramIndex
from presidio_delink.linkage import LinkageReport, analyze
from presidio_delink.llm.base import CircuitBreaker, LLMUnavailable, Rewriter, find_breaker
from presidio_delink.text import Tokenizer

log = logging.getLogger(__name__)

DEFAULT_MAX_CHARS = 5_000_000


@dataclass
class AuditEntry:
    """One edit: what was there, why, what replaced it, when and how."""

    original: str
    df: int
    arity: int
    ngram: str
    replacement: str
    pass_no: int
    method: str  # "llm" or "redacted"
    n_words: int
    reason: str | None = None  # why the LLM's answer was not used


@dataclass
class DelinkResult:
    """The outcome for one document."""

    id: str
    text: str | None  # None when failed: a linkable text is never returned
    input_text: str
    passes: int
    linkable_after: bool
    failed: bool = False
    error: str | None = None
    audit: list[AuditEntry] = field(default_factory=list)
    marks: list[tuple[int, int, str]] = field(default_factory=list)
    first_report: LinkageReport | None = None
    llm_calls: int = 0
    llm_seconds: float = 0.0
    seconds: float = 0.0
    n_words: int = 0
    optimum_words: int = 0
    words_rewritten: int = 0
    words_redacted: int = 0
    pii_redacted: int = 0
    warnings: list[str] = field(default_factory=list)
    semantic: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSONL record (``text``, ``linkable_after``, ``audit``, figures)."""
        return {
            "id": self.id,
            "text": self.text,
            "linkable_after": self.linkable_after,
            "failed": self.failed,
            "error": self.error,
            "passes": self.passes,
            "audit": [asdict(a) for a in self.audit],
            "llm_calls": self.llm_calls,
            "llm_seconds": round(self.llm_seconds, 3),
            "seconds": round(self.seconds, 3),
            "words": self.n_words,
            "optimum_words": self.optimum_words,
            "words_rewritten": self.words_rewritten,
            "words_redacted": self.words_redacted,
            "pii_redacted": self.pii_redacted,
            "warnings": self.warnings,
            "semantic": self.semantic,
        }


class Delinker:
    """Removes search-based linkage from de-identified documents.

    Args:
        index: the reference collection's index.
        k: nothing may occur in fewer than ``k`` documents (>= 2).
        arity: combinations of up to ``arity`` N-grams are checked too (1..3).
        max_n: longest N-gram (default: the index's).
        rewriter: the LLM backend (see :func:`presidio_delink.llm.make_rewriter`); None
            means redaction only.  One without a
            :class:`~presidio_delink.llm.base.CircuitBreaker` gets one: after 3 failed
            calls in a row the backend counts as down for this Delinker's lifetime and
            the remaining spans are redacted without further calls.
        passes: LLM rewrite passes before the redaction fallback.
        analyzer: a Presidio ``AnalyzerEngine`` for PII redaction first; None skips it.
        risk_filter: with ``analyzer``, a ``RiskFilter`` (``presidio_delink.presidio.
            risk_filter``): only the PII spans at risk are redacted; None redacts all.
        strict: raise :class:`LLMError` (naming the document) instead of falling back to
            redaction when the LLM fails.
        max_chars: longer documents are refused (an :class:`InputError`).
        monitor: a semantic linkage monitor (``presidio_delink.eval.SemanticMonitor``, or
            anything with ``assess(text) -> dict``): each result then carries a
            ``semantic`` risk figure for its output (nearest collection document by
            embedding cosine, the cosine, and its margin over the second nearest), the
            method's known limit made visible.
    """

    def __init__(
        self,
        index: NgramIndex,
        *,
        k: int = 2,
        arity: int = 1,
        max_n: int | None = None,
        rewriter: Rewriter | None = None,
        passes: int = 2,
        analyzer: Any = None,
        risk_filter: Any = None,
        strict: bool = False,
        max_chars: int = DEFAULT_MAX_CHARS,
        monitor: Any = None,
    ) -> None:
        analyze(index, "", k=k, arity=arity, max_n=max_n)  # validates k, arity, max_n
        if passes < 0:
            raise ConfigError(f"passes must be >= 0, got {passes}")
        self.index = index
        self.k, self.arity, self.max_n = k, arity, max_n
        if rewriter is not None and find_breaker(rewriter) is None:
            rewriter = CircuitBreaker(rewriter)
        self.rewriter = rewriter
        self.passes = passes
        self.analyzer = analyzer
        self.risk_filter = risk_filter
        self.strict = strict
        self.max_chars = max_chars
        self.monitor = monitor
        self.tokenizer = index.tokenizer
        # Written words (inner hyphens and apostrophes kept): edits never split one.
        self._words = Tokenizer(fold="fine", placeholders=index.tokenizer.placeholders)

    # -- public -----------------------------------------------------------------------
    def check(self, text: str) -> LinkageReport:
        return analyze(self.index, text, k=self.k, arity=self.arity, max_n=self.max_n)

    def delink(self, text: str, doc_id: str = "", forbidden: Iterable[str] = ()) -> DelinkResult:
        """Delink one document.

        Args:
            text: the (de-identified) document.
            doc_id: its id, for the result.
            forbidden: strings an earlier PII redaction removed (a rewrite that puts one
                back is refused); the built-in PII step adds its own.

        Raises:
            InputError: ``text`` is not a string or is too long.
            LLMError: only in strict mode, when the LLM fails.
        """
        if not isinstance(text, str):
            raise InputError(f"document {doc_id!r}: text must be a string")
        if len(text) > self.max_chars:
            raise InputError(
                f"document {doc_id!r} has {len(text)} characters, more than max_chars="
                f"{self.max_chars}; split it or raise the limit"
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
        res.n_words = sum(len(s) for s in self.tokenizer.segments(current))
        marks: list[tuple[int, int, str]] = []
        rep = self.check(current)
        res.first_report = rep
        limit = res.n_words + 2
        pass_no = 0
        while rep.linkable:
            pass_no += 1
            if pass_no > limit:  # cannot happen: each round removes at least one word
                break
            segs = self.tokenizer.segments(current)
            tokens = [t for s in segs for t in s]
            chosen = stabbing_tokens([(a, b) for a, b, _ in rep.spans()], tokens)
            if pass_no == 1:
                res.optimum_words = len(chosen)
            chosen = whole_words(chosen, tokens, self._words.tokens(current))
            use_llm = self.rewriter is not None and pass_no <= self.passes
            edits = self._edits(current, runs(chosen, segs), rep, pass_no, use_llm, forbidden, res)
            current, marks = apply(current, edits, marks)
            rep = self.check(current)
        res.passes = pass_no
        res.linkable_after = rep.linkable
        res.marks = marks
        if rep.linkable:
            res.failed = True
            res.error = "still linkable after every fallback"
        else:
            res.text = current
            if self.monitor is not None:
                res.semantic = dict(self.monitor.assess(current))
        res.seconds = time.perf_counter() - t0
        log.info(
            "document %s: %d passes, %d words rewritten, %d redacted, %d LLM calls",
            doc_id,
            res.passes,
            res.words_rewritten,
            res.words_redacted,
            res.llm_calls,
        )
        return res

    def delink_many(
        self, docs: Iterable[tuple[str, str]], *, progress: bool = False
    ) -> Iterator[DelinkResult]:
        """Delink a stream; every input document gets a result (failed ones say why)."""
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(unit="doc", desc="delinking")
        try:
            for doc_id, text in docs:
                try:
                    yield self.delink(text, doc_id)
                except LLMError:
                    raise  # strict mode asked for it
                except DelinkError as exc:
                    yield DelinkResult(
                        id=doc_id,
                        text=None,
                        input_text="",
                        passes=0,
                        linkable_after=True,
                        failed=True,
                        error=str(exc),
                    )
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()

    # -- internals ----------------------------------------------------------------------
    def _edits(
        self,
        text: str,
        rs: list[Run],
        rep: LinkageReport,
        pass_no: int,
        use_llm: bool,
        forbidden: list[str],
        res: DelinkResult,
    ) -> list[tuple[int, int, str]]:
        """Replacement of each run: the LLM's (validated) or the placeholder."""
        why = {(a, b): f for a, b, f in rep.spans()}
        info = {}
        for r in rs:
            # The flagged N-gram this run breaks (any one covering it).
            f = next((f for (a, b), f in why.items() if a <= r.start and r.end <= b), None)
            info[(r.start, r.end)] = f
        answers: dict[tuple[int, int], tuple[str | None, str | None]] = {}
        if use_llm:
            answers = self._ask_llm(text, rs, forbidden, res)
        edits = []
        for r in rs:
            original = text[r.start : r.end]
            new, reason = answers.get((r.start, r.end), (None, None))
            method = "llm" if new is not None and new != REDACTED else "redacted"
            replacement = new if new is not None else REDACTED
            if method == "llm":
                res.words_rewritten += r.n_words
            else:
                res.words_redacted += r.n_words
            f = info[(r.start, r.end)]
            res.audit.append(
                AuditEntry(
                    original=original,
                    df=f.df if f else 0,
                    arity=f.arity if f else 1,
                    ngram=f.key if f else "",
                    replacement=replacement,
                    pass_no=pass_no,
                    method=method,
                    n_words=r.n_words,
                    reason=reason if use_llm and method == "redacted" else None,
                )
            )
            edits.append((r.start, r.end, replacement))
        return edits

    def _ask_llm(
        self, text: str, rs: list[Run], forbidden: list[str], res: DelinkResult
    ) -> dict[tuple[int, int], tuple[str | None, str | None]]:
        """One LLM call per sentence, covering all its runs; answers validated."""
        assert self.rewriter is not None
        out: dict[tuple[int, int], tuple[str | None, str | None]] = {}
        run_at = {(r.start, r.end): r for r in rs}
        by_sentence = {
            sb: [run_at[s] for s in group]
            for sb, group in sentence_groups(text, [(r.start, r.end) for r in rs]).items()
        }
        for (a, b), group in by_sentence.items():
            context = text[a:b]
            spans = list(dict.fromkeys(text[r.start : r.end] for r in group))
            t0 = time.perf_counter()
            res.llm_calls += 1
            try:
                answer = self.rewriter.rewrite(context, spans)
            except LLMError as exc:
                res.llm_seconds += time.perf_counter() - t0
                if self.strict:
                    raise LLMError(f"document {res.id!r}: {exc}") from exc
                if isinstance(exc, LLMUnavailable):
                    res.llm_calls -= 1  # no call was made
                    msg = "LLM backend down (failed calls in a row); redacted instead"
                else:
                    msg = f"LLM failed ({type(exc).__name__}); redacted instead"
                    log.info("document %s: %s; redacting that sentence's spans", res.id, exc)
                if msg not in res.warnings:
                    res.warnings.append(msg)
                for r in group:
                    out[(r.start, r.end)] = (None, "llm error")
                continue
            res.llm_seconds += time.perf_counter() - t0
            if not isinstance(answer, dict):
                answer = {}
            for r in group:
                span = text[r.start : r.end]
                new = answer.get(span)
                others = [x for x in spans if x != span]
                reason = (
                    "no answer"
                    if new is None
                    else rejection(span, new, self.tokenizer, forbidden, others, context)
                )
                if reason is None:
                    assert isinstance(new, str)
                    out[(r.start, r.end)] = (fit(new.strip(), text, r.start, r.end), None)
                else:
                    log.debug("replacement rejected: %s", reason)
                    out[(r.start, r.end)] = (None, reason)
        return out

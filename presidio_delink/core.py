"""The delink loop, once: every entry point (``Delinker``, ``DelinkEngine``, the
``delink`` operator) is an adapter over it.

Definitions.  For a text ``T`` and the index, ``check(T)`` is the linkage report at
``k``/``arity``/``max_n``: the N-grams (and combinations) found in fewer than ``k``
groups.  One *pass*:

1. *plan*: the fewest tokens hitting every flagged span (a minimum stabbing set of least
   word cost, :func:`~presidio_delink.edits.choose_tokens`; words of headings and at
   paragraph boundaries cost more, :func:`~presidio_delink.edits.structure_costs`),
   widened to whole written words (:func:`~presidio_delink.edits.whole_words`) and
   grouped into contiguous *runs*;
2. *rewrite*: while the LLM passes last, the runs are grouped into passages
   (:func:`~presidio_delink.edits.passage_groups`, at most ``passage_chars`` characters
   and ``passage_spans`` spans per request), one request per passage, up to
   ``llm_concurrency`` in flight, answers used in document order;
3. *validate*: each answer passes :func:`~presidio_delink.edits.pick` (no PII back, no
   copied trigram, no new name, ...) or the run becomes ``[REDACTED]``;
4. *apply* all runs at once, then *verify* (``check`` again).

A run of a later pass that is exactly an earlier pass's rewrite is asked about as the
*input's* words, with the earlier answer named as refused (``commenced`` was rewritten
``began``, which still links: the model is shown ``commenced`` again, not ``began``).
Asked about its own answer, a model drifts into another word class (``began`` ->
``initial``: "which initial in ...") because it no longer sees what the sentence meant.
The answer still replaces the current text and passes the same checks, the input's
words refused like any other span's.

Before the first pass, look-alike letters of other scripts inside the words of a mostly
Latin text are written as the Latin letters they imitate
(:func:`~presidio_delink.confusables.latin_text`; one character for one): a search that
folds look-alikes *and* keeps inner apostrophes or hyphens then reads what the views read.

Passes repeat until nothing links; after ``passes`` LLM passes only placeholders are
written.  Why it ends and is correct: a placeholder breaks every N-gram through it and
creates none, and every pass changes at least one flagged token, so at most
``words + 2`` passes run; the result is released only when the final ``check`` finds
nothing (otherwise it is marked failed and its text withheld).  With ``protect`` and a
known source group, the adapters then run :class:`presidio_delink.protect.ProtectStep`,
which edits the linkage-free text further and keeps it linkage-free.

Cost per pass: one linkage check (``O(words)`` index look-ups), the dynamic programme
(``O(tokens + spans)``) and one LLM request per passage.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from presidio_delink.confusables import latin_text
from presidio_delink.edits import (
    REDACTED,
    Run,
    apply,
    candidate_list,
    carry,
    choose_tokens,
    fit,
    fold_words,
    lower_words,
    neighbours,
    passage_groups,
    pick,
    runs,
    sentence_bounds,
    structure_costs,
    trigrams,
    whole_words,
)
from presidio_delink.errors import LLMError
from presidio_delink.generalise import generalise
from presidio_delink.grammar import (
    determiner_clash,
    sentence_case,
    strip_determiner,
    unknown_word,
)
from presidio_delink.index import NgramIndex
from presidio_delink.linkage import LinkageReport, analyze
from presidio_delink.llm.base import (
    CircuitBreaker,
    LLMUnavailable,
    Rewriter,
    default_concurrency,
    find_breaker,
    find_usage,
)
from presidio_delink.llm.prompt import example_texts, mark, with_refused
from presidio_delink.results import AuditEntry, DelinkResult
from presidio_delink.settings import DEFAULT_MAX_CHARS, DelinkSettings

__all__ = [
    "DEFAULT_MAX_CHARS",
    "GENERALISED",
    "AuditEntry",
    "DelinkLoop",
    "DelinkResult",
    "DelinkSettings",
    "Rewriting",
]
from presidio_delink.text import Tokenizer

log = logging.getLogger(__name__)


Answers = dict[tuple[int, int], tuple[str | None, str | None]]
GENERALISED = "generalised"
"""Marks an answer of :mod:`presidio_delink.generalise` (not the LLM's) in
:meth:`Rewriting.rewrite_runs`."""
CANDIDATE = "candidate"
"""Marks a candidate chosen by :class:`~presidio_delink.candidates.CandidateChooser` in
:meth:`Rewriting.rewrite_runs` (its source, score and refusals are in ``res.choices``)."""


class Rewriting:
    """Steps 2-3 of a pass (passages, LLM requests, validation), without an index: what
    the ``delink`` operator needs on its own and the loop uses for every pass.

    Args:
        rewriter: the LLM backend; one without a circuit breaker gets one.
        tokenizer: the word model answers are validated with (the index's).
        settings: the run's settings (``strict``, ``llm_concurrency``, ``passage_chars``,
            ``passage_spans`` are read here); ``overrides`` replace some of them by name.
        fluency: a check of accepted rewrites (anything with ``reason(text, start, end,
            replacement) -> str | None``: :class:`~presidio_delink.llm.fluency.
            FluencyCheck`, :class:`~presidio_delink.presidio.pos.PosCheck`), or a list
            of them, run in order; None skips it.
        ner: ``text -> [(start, end, label)]`` with spaCy's entity labels, for typed
            generalisations of whole entities; None gives no labels.
        known_word: ``word -> bool``, whether the reference collection uses a word: a
            rewrite holding a content word that neither it nor the document uses is
            refused (:func:`~presidio_delink.grammar.unknown_word`); None skips that check.
        chooser: the :class:`~presidio_delink.candidates.CandidateChooser` of
            ``settings.rewrite == "candidates"`` (default: one built on first use).
    """

    def __init__(
        self,
        rewriter: Rewriter | None,
        tokenizer: Tokenizer,
        settings: DelinkSettings | None = None,
        *,
        fluency: Any = None,
        ner: Any = None,
        known_word: Any = None,
        chooser: Any = None,
        **overrides: Any,
    ) -> None:
        settings = (settings or DelinkSettings()).replace(**overrides)
        if rewriter is not None and find_breaker(rewriter) is None:
            rewriter = CircuitBreaker(rewriter)
        self.settings = settings
        self.rewriter = rewriter
        self.tokenizer = tokenizer
        self.llm_concurrency = (
            settings.llm_concurrency
            if settings.llm_concurrency is not None
            else default_concurrency(rewriter)
        )
        self.fluency = fluency
        self._checks: list[Any] = (
            [] if fluency is None else list(fluency) if isinstance(fluency, (list, tuple))
            else [fluency]
        )
        self.ner = ner
        self.known_word = known_word
        self._chooser = chooser
        self._chooser_lock = threading.Lock()

    @property
    def chooser(self) -> Any:
        """The candidate chooser (built on first use), or None under ``"generate"``."""
        if self.settings.rewrite != "candidates":
            return None
        with self._chooser_lock:
            if self._chooser is None:
                from presidio_delink.candidates import CandidateChooser

                self._chooser = CandidateChooser(
                    index=getattr(self, "index", None), k=self.settings.k
                )
        return self._chooser

    def _form_checks(self) -> list[Any]:
        """Under ``"candidates"``, every answer (the LLM's too) keeps the span's word form."""
        ch = self.chooser
        return [ch.form_check] if ch is not None else []

    def window_links(self, text: str, start: int, end: int) -> bool:
        """Whether the words at ``text[start:end]`` are in a phrase of their window that
        links (False here: without an index the loop's next check decides)."""
        return False

    @property
    def strict(self) -> bool:
        """Raise instead of redacting when the LLM fails (``settings.strict``)."""
        return self.settings.strict

    @property
    def passage_chars(self) -> int:
        return self.settings.passage_chars

    @property
    def passage_spans(self) -> int:
        return self.settings.passage_spans

    def rewrite_runs(
        self,
        text: str,
        rs: list[Run],
        forbidden: list[str],
        res: DelinkResult,
        origins: Sequence[tuple[int, int, str]] = (),
    ) -> Answers:
        """Replacements of the runs ``rs``: a deterministic generalisation
        (:func:`~presidio_delink.generalise.generalise`) where one passes the checks, else
        one LLM call per passage (:func:`passage_groups`, up to ``llm_concurrency`` in
        flight), then one more for the spans whose answer was refused; every candidate is
        validated by :func:`pick`, in document order.  Without a rewriter only the
        generalisations are tried (the protection's edits use that).

        ``origins``: ``(start, end, input words)`` of earlier passes' rewrites in
        ``text``; a run that is exactly one is shown to the LLM as those words."""
        out: dict[tuple[int, int], tuple[str | None, str | None]] = {}
        copy_grams = trigrams([text, *example_texts()], self.tokenizer)
        known_lower = lower_words(text)
        bounds = sentence_bounds(text) or [(0, len(text))]
        taken: dict[int, list[str]] = {}  # words of rewrites accepted in each sentence

        def check(
            r: Run,
            value: object,
            siblings: list[str],
            context: str,
            commit: bool = True,
            form: bool = True,
        ) -> tuple[str | None, str]:
            si = next((i for i, (a, b) in enumerate(bounds) if a <= r.start < b), 0)
            a, b = bounds[si]
            around = [
                *fold_words(text[min(a, r.start) : r.start], self.tokenizer),
                "",  # no pair spans the cut
                *fold_words(text[r.end : max(b, r.end)], self.tokenizer),
                *taken.get(si, []),
            ]
            new, why = None, "no answer"
            for cand in self._repaired(text, r, value, res):
                new, why = pick(
                    text[r.start : r.end],
                    cand,
                    self.tokenizer,
                    forbidden,
                    siblings,
                    context,
                    copy_grams=copy_grams,
                    around=neighbours(text, r.start, r.end),
                    known_lower=known_lower,
                    sentence_words=around,
                    taken_words=frozenset(taken.get(si, ())),
                )
                if new is not None and new != REDACTED and self.known_word is not None:
                    bad = unknown_word(new, text, self.known_word)
                    if bad is not None:
                        new, why = None, bad
                if new is not None:
                    break
            # a generalisation changes the word class on purpose ("four" -> "several")
            for test in self._checks + (self._form_checks() if form else []):
                if new is None or new == REDACTED:
                    break
                bad = test.reason(text, r.start, r.end, new)
                if bad is not None:
                    new, why = None, bad
            if not commit:
                return new, why
            if new is not None and new != REDACTED:
                taken.setdefault(si, []).extend(["", *fold_words(new, self.tokenizer)])
            elif new is None:
                res.refusals[why] = res.refusals.get(why, 0) + 1
            return new, why

        ents = list(self.ner(text)) if self.ner is not None else []
        pending = []
        for r in rs:
            # a type stands in only for a whole entity ("Criminal Code" is a law; its
            # "Code" alone is not)
            label = next((lab for a, b, lab in ents if (a, b) == (r.start, r.end)), None)
            cands = generalise(text, r.start, r.end, label)
            if cands:
                si = next((i for i, (a, b) in enumerate(bounds) if a <= r.start < b), 0)
                new, _why = check(
                    r, cands, [], text[bounds[si][0] : bounds[si][1]], form=False
                )
                if new is not None:
                    out[(r.start, r.end)] = (self._placed(new, text, r), GENERALISED)
                    continue
            pending.append(r)
        if self.chooser is not None and pending:
            pending = self._chosen(text, pending, bounds, check, out, res)
        if self.rewriter is None or not pending:
            return out
        usage = find_usage(self.rewriter)
        before = usage.snapshot() if usage is not None else None
        asked_with: dict[Run, list[str]] = {}  # each run's first request's other spans
        at = {(a, b): o for a, b, o in origins}
        shown = {
            r: at[(r.start, r.end)]
            for r in pending
            if (r.start, r.end) in at and at[(r.start, r.end)] != text[r.start : r.end]
        }
        # the earlier answer, named as refused in the first request: it still links
        before_now = {r: (text[r.start : r.end], "still links") for r in shown}
        refused = self._llm_round(
            text, pending, before_now, out, res, check, asked_with, shown, True
        )
        if refused:
            self._llm_round(
                text, list(refused), refused, out, res, check, asked_with, shown, False
            )
        if usage is not None and before is not None:
            after = usage.snapshot()
            res.prompt_tokens += after[0] - before[0]
            res.cached_tokens += after[1] - before[1]
            res.generated_tokens += after[2] - before[2]
        return out

    def _chosen(
        self,
        text: str,
        rs: list[Run],
        bounds: list[tuple[int, int]],
        check: Any,
        out: Answers,
        res: DelinkResult,
    ) -> list[Run]:
        """Runs of ``rs`` given a verified candidate (:mod:`presidio_delink.candidates`)
        fill ``out``; returns the others.  Every choice goes to ``res.choices``."""

        def sentence(r: Run) -> str:
            si = next((i for i, (a, b) in enumerate(bounds) if a <= r.start < b), 0)
            return text[bounds[si][0] : bounds[si][1]]

        def accept(r: Run, cand: str) -> str | None:
            new, why = check(r, [cand], [], sentence(r), commit=False, form=False)
            return None if new == cand else why or "repaired"

        choices = self.chooser.choose(text, rs, accept, self.window_links)
        left = []
        for r in rs:
            ch = choices.get((r.start, r.end))
            new = None
            if ch is not None and ch.text is not None:
                new, _why = check(r, [ch.text], [], sentence(r), form=False)
            if ch is not None:
                for why, n in ch.refused.items():
                    key = f"candidates: {why}"
                    res.refusals[key] = res.refusals.get(key, 0) + n
                res.choices[(r.start, r.end)] = ch
            if new is not None and new != REDACTED:
                out[(r.start, r.end)] = (self._placed(new, text, r), CANDIDATE)
            elif self.chooser.needs_writer(text, r):
                left.append(r)
            else:
                out[(r.start, r.end)] = (None, "no candidate survived")
        return left

    @staticmethod
    def _repaired(text: str, r: Run, value: object, res: DelinkResult) -> list[str]:
        """The candidates of ``value``, each opening determiner dropped where it cannot
        stand (:func:`~presidio_delink.grammar.determiner_clash`; counted in
        ``res.refusals`` under "repaired: ..."), in order."""
        out: list[str] = []
        span = text[r.start : r.end].casefold()
        for cand in candidate_list(value):
            if cand != REDACTED and determiner_clash(text, r.start, cand) is not None:
                rest = strip_determiner(cand)
                # what is left of an echo of the span is no rewrite: refused as it is
                if rest and rest.casefold() not in span:
                    key = "repaired: a determiner after a modifier"
                    res.refusals[key] = res.refusals.get(key, 0) + 1
                    cand = rest
            if cand and cand not in out:
                out.append(cand)
        return out

    @staticmethod
    def _placed(new: str, text: str, r: Run) -> str:
        """An accepted replacement as written into ``text``: sentence case, spacing."""
        return fit(sentence_case(new, text, r.start, r.end), text, r.start, r.end)

    def _llm_round(
        self,
        text: str,
        rs: list[Run],
        refused: dict[Run, tuple[str, str]],
        out: Answers,
        res: DelinkResult,
        check: Any,
        asked_with: dict[Run, list[str]],
        shown: dict[Run, str],
        first: bool,
    ) -> dict[Run, tuple[str, str]]:
        """One request per passage of ``rs`` (``refused``: the answer refused before for
        each run, named in its request; ``shown``: the words a run is asked about as, where
        they are not its text); fills ``out``, returns the runs whose answer was refused now
        with that answer and why (``first``: only for the first request of a run).

        ``asked_with`` keeps, per run, the other spans of its first request: a second
        request holds only the refused spans, and its answer must not copy a span of the
        first one either (asked again, a small model answers "before the" with the
        neighbouring span "institutions" that the first request accepted a rewrite for)."""
        run_at = {(r.start, r.end): r for r in rs}
        groups = [
            (a, b, [run_at[s] for s in group])
            for (a, b), group in passage_groups(
                text,
                [(r.start, r.end) for r in rs],
                max_chars=self.passage_chars,
                max_spans=self.passage_spans,
            )
        ]
        def asked(r: Run) -> str:
            return shown.get(r, text[r.start : r.end])

        requests = []
        for a, b, group in groups:
            context = _marked(text, a, b, group, shown)
            if refused:
                context = with_refused(
                    context, {asked(r): refused[r] for r in group if r in refused}
                )
            spans = list(dict.fromkeys(asked(r) for r in group))
            requests.append((context, spans))
        answers = self._call_all(requests) if requests else []
        again: dict[Run, tuple[str, str]] = {}
        for (a, b, group), (_ctx, spans), (answer, exc, seconds) in zip(
            groups, requests, answers, strict=True
        ):
            res.llm_seconds += seconds
            if exc is not None:
                if self.strict:
                    raise LLMError(f"document {res.id!r}: {exc}") from exc
                if isinstance(exc, LLMUnavailable):
                    msg = "LLM backend down (failed calls in a row); redacted instead"
                else:
                    res.llm_calls += 1
                    msg = f"LLM failed ({type(exc).__name__}); redacted instead"
                    log.info("document %s: %s; redacting that passage's spans", res.id, exc)
                if msg not in res.warnings:
                    res.warnings.append(msg)
                for r in group:
                    out[(r.start, r.end)] = (None, "llm error")
                continue
            res.llm_calls += 1
            if not isinstance(answer, dict):
                answer = {}
            context = text[a:b]
            for r in group:
                span = asked(r)
                value = answer.get(span)
                others = asked_with.setdefault(r, [x for x in spans if x != span])
                others = list(dict.fromkeys([*others, *(x for x in spans if x != span)]))
                if r in shown:  # the input's words linked: they may not come back either
                    others = [*others, shown[r]]
                new, why = check(r, value, others, context)
                if new is None:
                    log.debug("replacement rejected: %s", why)
                    out[(r.start, r.end)] = (None, why)
                    given = candidate_list(value)
                    if given and first:
                        again[r] = (given[0], why)
                else:
                    out[(r.start, r.end)] = (self._placed(new, text, r), None)
        return again

    def _call_all(
        self, requests: list[tuple[str, list[str]]]
    ) -> list[tuple[Any, LLMError | None, float]]:
        """``rewrite`` of every request, up to ``llm_concurrency`` at once (a bounded pool);
        results in request order as ``(answer, error, seconds)``.

        In strict mode a failure stops the requests not yet started (they report
        :class:`_Skipped`); the caller raises the first real error in request order.
        """
        assert self.rewriter is not None
        rewriter = self.rewriter
        stop = threading.Event()

        def one(req: tuple[str, list[str]]) -> tuple[Any, LLMError | None, float]:
            if stop.is_set():
                return None, _Skipped("not sent: an earlier request failed (strict)"), 0.0
            t0 = time.perf_counter()
            try:
                answer = rewriter.rewrite(*req)
            except LLMError as exc:
                if self.strict:
                    stop.set()
                return None, exc, time.perf_counter() - t0
            return answer, None, time.perf_counter() - t0

        if self.llm_concurrency <= 1 or len(requests) <= 1:
            out = [one(r) for r in requests]
        else:
            workers = min(self.llm_concurrency, len(requests))
            with ThreadPoolExecutor(workers, thread_name_prefix="delink-llm") as pool:
                out = list(pool.map(one, requests))
        if self.strict:
            real = [e for _a, e, _s in out if e is not None and not isinstance(e, _Skipped)]
            first = real[0] if real else None
            if first is not None:
                return [(a, first if e is not None else None, s) for a, e, s in out]
        return out


class DelinkLoop(Rewriting):
    """The whole loop (plan, rewrite, validate, apply, verify, repeat, redact).

    The protection (``settings.protect``) is not part of the loop: the adapters
    (:class:`~presidio_delink.pipeline.Delinker`, the Presidio engine) run
    :class:`presidio_delink.protect.ProtectStep` on its result, through this class's
    public interface (``index``, ``settings``, ``monitor``, :meth:`rewrite_runs`).

    Args:
        index: the reference collection's index.
        settings: the run's settings (:class:`~presidio_delink.settings.DelinkSettings`);
            ``overrides`` replace some of them by name (``k=5``).
        rewriter: the LLM backend; None means redaction only.  One without a
            :class:`~presidio_delink.llm.base.CircuitBreaker` gets one.
        monitor: anything with ``assess(text) -> dict``: each released text's semantic
            risk figure.
        fluency, ner: see :class:`Rewriting`.
    """

    def __init__(
        self,
        index: NgramIndex,
        settings: DelinkSettings | None = None,
        *,
        rewriter: Rewriter | None = None,
        monitor: Any = None,
        fluency: Any = None,
        ner: Any = None,
        **overrides: Any,
    ) -> None:
        settings = (settings or DelinkSettings()).replace(**overrides)
        # validates max_n against the index (and k, arity again)
        analyze(index, "", k=settings.k, arity=settings.arity, max_n=settings.max_n)
        super().__init__(
            rewriter,
            index.tokenizer,
            settings,
            fluency=fluency,
            ner=ner,
            known_word=lambda w: index.df(w) > 0,
        )
        self.index = index
        self.monitor = monitor
        # Written words (inner hyphens and apostrophes kept): edits never split one.
        self._words = Tokenizer(fold="fine", placeholders=index.tokenizer.placeholders)

    @property
    def k(self) -> int:
        return self.settings.k

    @property
    def arity(self) -> int:
        return self.settings.arity

    @property
    def max_n(self) -> int | None:
        return self.settings.max_n

    @property
    def passes(self) -> int:
        return self.settings.passes

    @property
    def protect(self) -> str | None:
        return self.settings.protect

    def check(self, text: str) -> LinkageReport:
        """The linkage report of ``text`` at this loop's ``k``, arity and ``max_n``."""
        return analyze(self.index, text, k=self.k, arity=self.arity, max_n=self.max_n)

    def window_links(self, text: str, start: int, end: int) -> bool:
        """Whether a phrase of the sentence window around ``text[start:end]`` that
        overlaps it links at arity 1 (combinations are the next pass's check)."""
        from presidio_delink.candidates.verify import window

        a, b = window(text, start, end)
        rep = analyze(self.index, text[a:b], k=self.k, arity=1, max_n=self.max_n)
        return any(s < end - a and e > start - a for s, e, _f in rep.spans())

    def plan(self, text: str, rep: LinkageReport) -> tuple[list[Run], int]:
        """Step 1: the runs to change, and the size of the minimum stabbing set before it
        was widened to whole words."""
        segs = self.tokenizer.segments(text)
        tokens = [t for s in segs for t in s]
        starts = [t.start for t in tokens]
        ivs: list[tuple[int, int]] = []
        bare: list[tuple[int, int]] = []
        for a, b, _f in rep.spans():
            i = bisect.bisect_left(starts, a)
            # A span of a fine view made of dash tokens only holds no word of the
            # index's own model: it is replaced as it stands.
            (ivs if i < len(tokens) and tokens[i].end <= b else bare).append((a, b))
        chosen = choose_tokens(ivs, tokens, structure_costs(text, tokens))
        optimum = len(chosen) + len(_union(bare))
        chosen = whole_words(chosen, tokens, self._words.tokens(text))
        rs = runs(chosen, segs) + [Run(a, b, 1) for a, b in _union(bare)]
        return sorted(rs, key=lambda r: r.start), optimum

    def run(
        self,
        text: str,
        doc_id: str = "",
        forbidden: Sequence[str] = (),
        *,
        res: DelinkResult | None = None,
        marks: Iterable[tuple[int, int, str]] = (),
    ) -> DelinkResult:
        """Delink ``text`` (PII already removed) until nothing links.

        Args:
            text: the text.
            doc_id: its id, for the result and the log.
            forbidden: strings a rewrite may not put back (removed PII).
            res: a result to fill (its figures are added to); a new one by default.
            marks: labelled spans of ``text`` carried to the output (``res.marks``).

        Raises:
            LLMError: only in strict mode, when the LLM fails.
        """
        t0 = time.perf_counter()
        if res is None:
            res = DelinkResult(id=doc_id, text=None, input_text=text, passes=0, linkable_after=True)
        forbidden = [f for f in forbidden if isinstance(f, str) and f.strip()]
        # Look-alike letters written as the Latin letters they imitate (one for one, so
        # every offset and mark stays): what every view and a folding search read alike.
        current, n_latin = latin_text(text)
        if n_latin:
            res.warnings.append(
                f"{n_latin} look-alike letter(s) of other scripts written as the Latin "
                "letters they imitate"
            )
        res.n_words = sum(len(s) for s in self.tokenizer.segments(current))
        cur_marks = list(marks)
        origins: list[tuple[int, int, str]] = []  # earlier passes' rewrites: input words
        rep = self.check(current)
        res.first_report = rep
        limit = res.n_words + 2
        pass_no = 0
        while rep.linkable:
            pass_no += 1
            if pass_no > limit:  # cannot happen: each round removes at least one word
                break
            rs, optimum = self.plan(current, rep)
            if pass_no == 1:
                res.optimum_words = optimum
            use_llm = self.rewriter is not None and pass_no <= self.passes
            edits = self._edits(current, rs, rep, pass_no, use_llm, forbidden, res, origins)
            origins = _carried(origins, edits, current)
            current, cur_marks = apply(current, edits, cur_marks)
            rep = self.check(current)
        res.passes = pass_no
        res.linkable_after = rep.linkable
        res.marks = cur_marks
        if rep.linkable:
            res.failed = True
            res.error = "still linkable after every fallback"
        else:
            res.text = current
            if self.monitor is not None:
                res.semantic = dict(self.monitor.assess(current))
        res.seconds += time.perf_counter() - t0
        log.info(
            "document %s: %d passes, %d words rewritten, %d redacted, %d LLM calls",
            doc_id,
            res.passes,
            res.words_rewritten,
            res.words_redacted,
            res.llm_calls,
        )
        return res

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
        origins: Sequence[tuple[int, int, str]] = (),
    ) -> list[tuple[int, int, str]]:
        """Replacement of each run: the LLM's (validated) or the placeholder."""
        spans = rep.spans()
        starts = [a for a, _, _ in spans]
        longest = max((b - a for a, b, _ in spans), default=0)
        info = {}
        for r in rs:
            # The flagged N-gram this run breaks: every chosen word stabs one, so some
            # flagged span overlaps the run (a run can be wider than one span: words
            # widened to whole written words, neighbouring choices joined).
            lo = bisect.bisect_left(starts, r.start - longest)
            near = [
                (not (a <= r.start and r.end <= b), f.groups, f.df, -(b - a), f)
                for a, b, f in spans[lo : bisect.bisect_left(starts, r.end)]
                if a < r.end and r.start < b
            ]
            info[(r.start, r.end)] = min(near, key=lambda x: x[:4])[4] if near else None
        answers: Answers = {}
        if use_llm:
            answers = self.rewrite_runs(text, rs, forbidden, res, origins)
        edits = []
        for r in rs:
            original = text[r.start : r.end]
            new, reason = answers.get((r.start, r.end), (None, None))
            method = "llm" if new is not None and new != REDACTED else "redacted"
            if method == "llm" and reason == GENERALISED:
                method, reason = "generalised", None
            elif method == "llm" and reason == CANDIDATE:
                method, reason = "candidate", None
            ch = res.choices.pop((r.start, r.end), None)
            replacement = new if new is not None else REDACTED
            if method != "redacted":
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
                    start=r.start,
                    end=r.end,
                    view=f.view if f else "",
                    groups=f.groups if f else 0,
                    source=_source(method, ch),
                    score=ch.score if ch is not None and method == "candidate" else None,
                    candidates=ch.proposed if ch is not None else 0,
                    refused=dict(ch.refused) if ch is not None else {},
                )
            )
            edits.append((r.start, r.end, replacement))
        res.choices.clear()
        return edits


def _source(method: str, ch: Any) -> str | None:
    """The audit's ``source`` of an edit's replacement (None: redacted)."""
    if method == "candidate":
        return str(ch.source) if ch is not None else "lexicon"
    return {"generalised": "generalisation", "llm": "llm"}.get(method)


def _marked(text: str, a: int, b: int, group: Sequence[Run], shown: dict[Run, str]) -> str:
    """The passage ``text[a:b]`` with each run of ``group`` between the span marks, a run
    of ``shown`` written as its shown words."""
    parts: list[str] = []
    pos = a
    for r in sorted(group, key=lambda r: r.start):
        words = shown.get(r, text[r.start : r.end])
        parts += [text[pos : r.start], mark(words, [(0, len(words))])]
        pos = r.end
    parts.append(text[pos:b])
    return "".join(parts)


def _carried(
    origins: Sequence[tuple[int, int, str]], edits: Sequence[tuple[int, int, str]], text: str
) -> list[tuple[int, int, str]]:
    """``origins`` (``(start, end, input words)`` of rewrites in ``text``) after ``edits``
    are applied to ``text``: each rewrite of the edits added (an edit of a whole earlier
    rewrite keeps the input's words), the rest carried as :func:`apply` carries marks."""
    at = {(a, b): o for a, b, o in origins}
    out: list[tuple[int, int, str]] = []
    delta = 0
    for a, b, new in sorted(edits):
        if new != REDACTED:
            out.append((a + delta, a + delta + len(new), at.get((a, b), text[a:b])))
        delta += len(new) - (b - a)
    return sorted(out + carry(origins, edits))


def _union(ivs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(ivs):
        if out and a < out[-1][1]:
            out[-1] = (out[-1][0], max(b, out[-1][1]))
        else:
            out.append((a, b))
    return out


class _Skipped(LLMUnavailable):
    """A request not sent because strict mode already failed."""

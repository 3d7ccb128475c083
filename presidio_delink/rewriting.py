"""`Rewriting`: steps 2-3 of a pass of the delink loop without an index: passages, the
candidates or the LLM's requests, and the validation of every answer.  The loop
(:class:`~presidio_delink.core.DelinkLoop`) and the ``delink`` operator use it."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace as dc_replace
from typing import Any

from presidio_delink.edits import (
    REDACTED,
    Run,
    candidate_list,
    fit,
    fold_words,
    lower_words,
    neighbours,
    passage_groups,
    pick,
    rejection,
    sentence_bounds,
    trigrams,
)
from presidio_delink.errors import LLMError
from presidio_delink.generalise import generalise
from presidio_delink.grammar import (
    determiner_clash,
    sentence_case,
    strip_determiner,
    unknown_word,
)
from presidio_delink.llm.base import (
    CircuitBreaker,
    LLMUnavailable,
    Rewriter,
    default_concurrency,
    fill_call,
    find_breaker,
    find_usage,
    writes_sentences,
)
from presidio_delink.llm.prompt import example_texts, mark, with_options, with_refused
from presidio_delink.results import DelinkResult
from presidio_delink.settings import CANDIDATE_MODES, DelinkSettings, Setting
from presidio_delink.text import Tokenizer

__all__ = [
    "AGAIN", "CANDIDATE", "GENERALISED", "SENTENCE", "Answers", "Rewriting", "audit_method",
    "audit_source",
]

log = logging.getLogger(__name__)


Answers = dict[tuple[int, int], tuple[str | None, str | None]]
GENERALISED = "generalised"
"""Marks an answer of :mod:`presidio_delink.generalise` (not the LLM's) in
:meth:`Rewriting.rewrite_runs`."""
CANDIDATE = "candidate"
"""Marks a candidate chosen by :class:`~presidio_delink.candidates.CandidateChooser` in
:meth:`Rewriting.rewrite_runs` (its source, score and refusals are in ``res.choices``)."""
AGAIN = "an earlier rewrite: no candidate for a candidate"
"""Why a run that is an earlier pass's rewrite is redacted under the candidate modes
without an LLM, or with one for a single word (:meth:`Rewriting.rewrite_runs`)."""


SENTENCE = "sentence"
"""The audit's ``method`` of a block of a sentence written again
(:meth:`Rewriting.rewrite_sentences`)."""


def audit_method(reason: str | None) -> str:
    """The audit's ``method`` of an accepted answer of :meth:`Rewriting.rewrite_runs`, by
    the reason it came with: ``"generalised"``, ``"candidate"`` or ``"llm"``."""
    return {GENERALISED: "generalised", CANDIDATE: "candidate"}.get(reason or "", "llm")


def audit_source(method: str, choice: Any) -> str | None:
    """The audit's ``source`` of an edit's replacement (None: redacted): for a candidate,
    its chooser's ``choice`` says whose."""
    if method == "candidate":
        return str(choice.source) if choice is not None else "lexicon"
    return {"generalised": "generalisation", "llm": "llm", SENTENCE: "llm"}.get(method)


MAX_SENTENCE_CHARS = 600
"""Longest sentence written again (``rewrite="sentences"``): a longer one is a list or a
run-on passage, which a small model shortens; its runs take the fallback."""

MAX_OPTIONS = 4
"""Under ``rewrite="choose"``, the most verified candidates of a run the LLM chooses among
(the scorer's best first): each costs a few prompt tokens, and the scorer's order past the
first few is mostly other senses."""


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
        if self.settings.rewrite not in CANDIDATE_MODES:
            return None
        with self._chooser_lock:
            if self._chooser is None:
                from presidio_delink.candidates import CandidateChooser

                self._chooser = CandidateChooser(
                    index=getattr(self, "index", None), k=self.settings.k
                )
        return self._chooser

    def proposable(self, text: str, spans: Sequence[tuple[int, int]]) -> list[bool] | None:
        """Whether each one-word span may get a candidate under the candidate modes
        (:meth:`CandidateChooser.proposable <presidio_delink.candidates.CandidateChooser.
        proposable>`: the protections' cover prefers such words); None under
        ``"generate"``, where no such estimate is made (every word costs the same)."""
        ch = self.chooser
        return None if ch is None else ch.proposable(text, spans, self.known_word)

    def _form_checks(self) -> list[Any]:
        """Under ``"candidates"``, every answer (the LLM's too) keeps the span's word form."""
        ch = self.chooser
        return [ch.form_check] if ch is not None else []

    def window_links(self, text: str, start: int, end: int) -> bool:
        """Whether the words at ``text[start:end]`` are in a phrase of their window that
        links (False here: without an index the loop's next check decides)."""
        return False

    def sentence_links(
        self, text: str, start: int, end: int, ignore: Sequence[tuple[int, int]] = ()
    ) -> list[str]:
        """The linkable phrases of ``text`` that overlap the sentence ``text[start:end]``
        and no ``ignore`` span (none here: without an index the loop's next check
        decides)."""
        return []

    def writes_sentences(self) -> bool:
        """Whether this rewrite mode and backend write sentences again
        (``rewrite="sentences"`` and a :class:`~presidio_delink.llm.base.SentenceWriter`)."""
        return (
            self.settings.rewrite == "sentences"
            and self.rewriter is not None
            and writes_sentences(self.rewriter)
        )

    def rewrite_sentences(
        self,
        text: str,
        rs: list[Run],
        answers: Answers,
        forbidden: list[str],
        res: DelinkResult,
        skip: Sequence[tuple[int, int]] = (),
    ) -> dict[tuple[int, int], str]:
        """The sentences written again (:mod:`presidio_delink.sentences`), by their bounds
        in ``text``: each sentence holding a run of ``rs`` that ``answers`` (the cheap
        steps') left without a replacement, shown with the cheap replacements in it and
        those runs named; a verified answer replaces the whole sentence.  A sentence that
        overlaps ``skip`` (sentences already written again), holds a run across its
        bounds or is longer than :data:`MAX_SENTENCE_CHARS` is not asked."""
        from presidio_delink.candidates.context import unrestatable
        from presidio_delink.sentences import rewrite as sr

        if not self.writes_sentences():
            return {}
        for r in rs:  # a word of a name, or a pronoun, is redacted, not restated
            why = unrestatable(text, r.start, r.end)
            if why is not None and answers.get((r.start, r.end), (None, None))[0] is None:
                answers[(r.start, r.end)] = (REDACTED, why)
        todo = sr.jobs(text, rs, answers, skip, MAX_SENTENCE_CHARS)
        if not todo:
            return {}
        check, bounds = self.vetter(text, forbidden, res)

        def vet(a: int, b: int, new: str, siblings: Sequence[str]) -> tuple[str | None, str]:
            r = Run(a, b, 0)
            si = next((i for i, (x, y) in enumerate(bounds) if x <= a < y), 0)
            got, why = check(r, [new], list(siblings), text[bounds[si][0] : bounds[si][1]],
                             commit=False)
            if got is None or got == REDACTED:
                return None, why or "redacted"
            if self.chooser is None or not self.chooser.vouches(text, a, b, got):
                return None, "a word no lexicon offers for it"  # CandidateChooser.vouches
            return self._placed(got, text, r), ""

        step = sr.SentenceStep(
            self.rewriter, self.tokenizer, self.sentence_links,
            concurrency=self.llm_concurrency, strict=self.strict, vet=vet,
            changed=[(r.start, r.end) for r in rs], sense=sr.wordnet_sense(self.chooser, res),
            fill=fill_call(self.rewriter) if sr.FILL_IN_PLACE else None,
        )
        return step.write(text, todo, forbidden, res, lower_words(text))

    strict = Setting[bool]()
    """Raise instead of redacting when the LLM fails (``settings.strict``)."""
    passage_chars = Setting[int]()
    passage_spans = Setting[int]()

    def vetter(self, text: str, forbidden: Sequence[str], res: DelinkResult) -> tuple[
        Any, list[tuple[int, int]]
    ]:
        """The answer check of one pass over ``text`` and its sentence bounds.

        The check, ``check(r, value, siblings, context, commit=True, form=True,
        lexical=False) -> (new, why)``, takes the first candidate of ``value`` for the run
        ``r`` that :func:`rejection` (with the sentence's words, the document's trigrams
        and the rewrites already accepted in that sentence), :func:`unknown_word` and the
        fluency and form checks accept; ``(None, why)`` when none is.  With ``commit`` an
        accepted answer's words join its sentence's (a later answer may not repeat them)
        and a refusal is counted in ``res.refusals``.  The phrase answers of
        :meth:`rewrite_runs` and the replacements a sentence answer names
        (:meth:`rewrite_sentences`) go through the same check."""
        copy_grams = trigrams(
            [text, *example_texts(choices=self.settings.rewrite == "choose")], self.tokenizer
        )
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
            lexical: bool = False,
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
            span, taken_words = text[r.start : r.end], frozenset(taken.get(si, ()))
            next_to = neighbours(text, r.start, r.end)

            def reject(cand: str) -> str | None:
                # a candidate of the lexicons is no name: capitalised, it opens a sentence
                # ("Subsequently" -> "Later")
                known = known_lower | lower_words(cand.lower()) if lexical else known_lower
                return rejection(
                    span, cand, self.tokenizer, forbidden, siblings, context,
                    copy_grams=copy_grams, around=next_to,
                    known_lower=known, sentence_words=around, taken_words=taken_words,
                )

            for cand in self._repaired(text, r, value, res):
                new, why = pick(cand, reject)
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

        return check, bounds

    def rewrite_runs(
        self,
        text: str,
        rs: list[Run],
        forbidden: list[str],
        res: DelinkResult,
        origins: Sequence[tuple[int, int, str]] = (),
        *,
        llm: bool = True,
    ) -> Answers:
        """Replacements of the runs ``rs``: a deterministic generalisation
        (:func:`~presidio_delink.generalise.generalise`) where one passes the checks, else
        one LLM call per passage (:func:`passage_groups`, up to ``llm_concurrency`` in
        flight), then one more for the spans whose answer was refused; every candidate is
        validated by :func:`rejection`, in document order.  Without a rewriter only the
        generalisations are tried (the protection's edits use that).

        ``origins``: ``(start, end, input words)`` of earlier passes' rewrites in
        ``text``; a run that is exactly one is shown to the LLM as those words.
        ``llm=False`` stops before the LLM: the runs it would be asked about get no
        answer (what the loop's planner asks, :meth:`~presidio_delink.core.DelinkLoop.plan`)."""
        out: dict[tuple[int, int], tuple[str | None, str | None]] = {}
        check, bounds = self.vetter(text, forbidden, res)
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
        options: dict[Run, list[str]] = {}
        at = {(a, b): o for a, b, o in origins}
        # the runs that are an earlier pass's rewrite, by the input's words they replaced
        earlier = {
            r: at[(r.start, r.end)]
            for r in pending
            if (r.start, r.end) in at and at[(r.start, r.end)] != text[r.start : r.end]
        }
        if self.chooser is not None and pending:
            # an earlier pass's rewrite gets no candidate: a stand-in for a stand-in
            # drifts ("four" -> "several" -> "individual"); the LLM, shown the input's
            # words, may write it, else it is redacted.  So does a run inside one, or
            # across its edge: "two" -> "a few", then "few" left out, read "a civilian
            # authorities"
            inside = [
                r for r in pending
                if r not in earlier and any(a < r.end and r.start < b for a, b, _o in origins)
            ]
            fresh = [r for r in pending if r not in earlier and r not in inside]
            pending, options = self._chosen(text, fresh, bounds, check, out, res, llm)
            for r in [*earlier, *inside]:
                # the LLM writes phrases only (``CandidateChooser.needs_writer``)
                if self.rewriter is not None and self.chooser.needs_writer(
                    text[r.start : r.end], []
                ):
                    pending.append(r)
                else:
                    out[(r.start, r.end)] = (None, AGAIN)
            pending.sort(key=lambda r: r.start)
        if self.rewriter is None or not pending or not llm:
            return out
        usage = find_usage(self.rewriter)
        before = usage.snapshot() if usage is not None else None
        asked_with: dict[Run, list[str]] = {}  # each run's first request's other spans
        shown = {r: words for r, words in earlier.items() if r in pending}
        # the earlier answer, named as refused in the first request: it still links
        before_now = {r: (text[r.start : r.end], "still links") for r in shown}
        refused = self._llm_round(
            text, pending, before_now, out, res, check, asked_with, shown, True, options
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
        llm: bool = True,
    ) -> tuple[list[Run], dict[Run, list[str]]]:
        """Runs of ``rs`` given a verified candidate (:mod:`presidio_delink.candidates`)
        fill ``out``; returns the others, for the LLM, and under ``rewrite="choose"`` (an
        LLM given, ``llm``) the candidates it is to choose among for some of them
        (:data:`MAX_OPTIONS`; their ``out`` is left to the LLM's round).  Every choice goes
        to ``res.choices``."""
        ask = self.settings.rewrite == "choose" and self.rewriter is not None

        def sentence(r: Run) -> str:
            si = next((i for i, (a, b) in enumerate(bounds) if a <= r.start < b), 0)
            return text[bounds[si][0] : bounds[si][1]]

        def accept(r: Run, cand: str) -> str | None:
            new, why = check(r, [cand], [], sentence(r), commit=False, form=False,
                             lexical=True)
            return None if new == cand else why or "repaired"

        # the same number of options with or without ``llm``: the loop's planner asks
        # first, and the chooser keeps its choices by it
        choices = self.chooser.choose(
            text, rs, accept, self.window_links, options=MAX_OPTIONS if ask else 1
        )
        left, options = [], {}
        for r in rs:
            ch = choices.get((r.start, r.end))
            new = None
            if ch is not None:
                for why, n in ch.refused.items():
                    key = f"candidates: {why}"
                    res.refusals[key] = res.refusals.get(key, 0) + n
                res.choices[(r.start, r.end)] = ch
            if ch is not None and ch.text == "":
                # a modifier left out (:mod:`presidio_delink.candidates.drop`): no words
                # for the answer checks to read; the chooser checked its neighbours
                out[(r.start, r.end)] = ("", CANDIDATE)
                continue
            if ask and llm and ch is not None and ch.options:
                left.append(r)
                options[r] = [o[0] for o in ch.options]
                continue
            if ch is not None and ch.text is not None:
                new, _why = check(r, [ch.text], [], sentence(r), form=False, lexical=True)
            if new is not None and new != REDACTED:
                out[(r.start, r.end)] = (self._placed(new, text, r), CANDIDATE)
            elif ch is not None and ch.writer:
                left.append(r)
            else:
                out[(r.start, r.end)] = (None, "no candidate survived")
        return left, options

    def _settle_choice(
        self,
        text: str,
        r: Run,
        value: object,
        res: DelinkResult,
        check: Any,
        others: list[str],
        context: str,
    ) -> tuple[str | None, str | None]:
        """The answer to a run the LLM was to choose for: its choice (``value``) among the
        run's candidates, :data:`REDACTED` where it found none fits, or, where it gave
        none it was allowed (no answer, a failed call), the scorer's first.  The audit's
        choice (``res.choices``) says what the LLM passed over."""
        key = (r.start, r.end)
        ch = res.choices[key]
        texts = [o[0] for o in ch.options]
        if value == REDACTED:
            res.choices[key] = dc_replace(
                ch, text=None, source=None, score=None,
                refused={**ch.refused, "the LLM found none fits": len(texts)},
            )
            return None, "the LLM found no candidate fits"
        by = "passed over by the LLM"
        if not isinstance(value, str) or value not in texts:
            value, by = texts[0], "passed over by the scorer (no choice from the LLM)"
        new, why = check(r, [value], others, context)
        if new is None or new == REDACTED:
            return None, why
        text_, source, score = ch.options[texts.index(value)]
        refused = dict(ch.refused)
        if len(texts) > 1:
            refused[by] = len(texts) - 1
        res.choices[key] = dc_replace(ch, text=text_, source=source, score=score,
                                      refused=refused)
        return self._placed(new, text, r), CANDIDATE

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
        options: dict[Run, list[str]] | None = None,
    ) -> dict[Run, tuple[str, str]]:
        """One request per passage of ``rs`` (``refused``: the answer refused before for
        each run, named in its request; ``shown``: the words a run is asked about as, where
        they are not its text); fills ``out``, returns the runs whose answer was refused now
        with that answer and why (``first``: only for the first request of a run).
        ``options``: the candidates the LLM is to choose among for some runs
        (:meth:`_settle_choice`); never asked again.

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
            if options:
                context = with_options(
                    context, {asked(r): options[r] for r in group if r in options}
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
                    if options and r in options:  # the scorer's choice stands
                        out[(r.start, r.end)] = self._settle_choice(
                            text, r, None, res, check, [], text[a:b]
                        )
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
                if options and r in options:
                    out[(r.start, r.end)] = self._settle_choice(
                        text, r, value, res, check, others, context
                    )
                    continue
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


class _Skipped(LLMUnavailable):
    """A request not sent because strict mode already failed."""

"""The sentence step of the ``sentences`` rewrite mode: a sentence that still holds runs
the cheap steps could not replace is written again by the LLM, and kept only if verified.

For each sentence (a :class:`Job`: the sentence with the cheap steps' replacements in it,
the runs still to replace named, the sentence before it as context) one request
(:func:`~presidio_delink.sentences.prompt.render_messages`), then the checks, in order:

1. the fact check (:func:`~presidio_delink.sentences.facts.check_facts`): every content
   word, placeholder, number and negation outside the named spans kept, nothing added;
2. the answer checks of the phrase rewrites where they apply
   (:func:`~presidio_delink.edits.rejection` on each changed block: no removed PII back);
3. the sense check, where the step has one (:func:`unvouched`): each new content word
   written for a named phrase names what a word it replaces names, or a class above it
   (WordNet: ``barrister`` -> ``lawyer``, not ``interest`` -> ``fee``);
4. the index: the text with the new sentence in its place has no linkable phrase that
   overlaps it (``links``: the loop's own check, every view, its arity).

With ``attempts`` of 2 (:data:`ATTEMPTS` is 1), a refused answer is asked for again once,
the answer and what it lost or added named.  An
answer refused only for keeping some named phrases is taken with those phrases redacted,
if it then passes every check (:func:`_kept_redacted`); one refused by the sense check is
taken with the phrases of its unvouched words redacted (:func:`_found_redacted`), likewise.
An answer refused for what it changed outside the named phrases is spliced
(:func:`_spliced`): only its changes of the named phrases are kept, the rest restored to
the input's words, and the checks run again.  Otherwise the sentence's runs go to the
loop's fallback (a redaction).  In an accepted sentence, a named phrase the answer deleted
outright is put back and redacted
(:func:`~presidio_delink.sentences.align.restore_deleted`): a deletion is a redaction,
not a rewrite.  Jobs run up to ``concurrency`` at once (one engine serialises them; a
server pool spreads them).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from typing import Any

from presidio_delink.edits import REDACTED, rejection, sentence_bounds
from presidio_delink.errors import LLMError
from presidio_delink.llm.base import LLMUnavailable, find_usage, sentence_call
from presidio_delink.results import DelinkResult
from presidio_delink.sentences.align import changes, restore_deleted, splice
from presidio_delink.sentences.clauses import piece as clauses_of
from presidio_delink.sentences.facts import KEPT, Verdict, check_facts
from presidio_delink.sentences.fill import Continue, Filled, blame, compose, content_words, refill
from presidio_delink.sentences.fill import fill as fill_in
from presidio_delink.sentences.prompt import (
    max_tokens,
    parse_answer,
    parse_replacements,
    render_messages,
)
from presidio_delink.sentences.sense import unvouched, wordnet_sense
from presidio_delink.text import Tokenizer

__all__ = ["ABBREVIATIONS", "FILL_IN_PLACE", "Job", "SentenceStep", "jobs", "sentence_spans",
           "unvouched", "wordnet_sense"]

log = logging.getLogger(__name__)

#: Why :meth:`SentenceStep.verify` refuses an answer the index still links.
FOUND = "can still be found"

#: Why :meth:`SentenceStep.verify` refuses an answer whose new words for a named phrase
#: nothing vouches for as naming the same thing (:func:`unvouched`).
SENSE = "names another thing"

#: Most rounds of redacting the named phrases a spliced answer keeps, or that the index
#: still finds it by, before it is refused (:meth:`SentenceStep._spliced`): a phrase's
#: redaction can leave the next phrase as what links.
SPLICE_ROUNDS = 4

#: Whether a backend that continues a started answer (the embedded engine) fills the
#: named phrases in place (:mod:`presidio_delink.sentences.fill`) rather than writing the
#: sentence whole; False restores the whole-sentence request for every backend.
FILL_IN_PLACE = True

#: Words a named phrase filled in place may be asked for (:meth:`SentenceStep._filled`):
#: a phrase whose new words a check refuses is asked again, the words the check named (or
#: the first content word of the refused ones) banned, until this many were refused; then
#: it is redacted.
FILL_TRIES = 3

#: Sentence ends a rewrite keeps: an answer without its input's end gets it back.
_ENDS = ".!?;:"

#: Requests a sentence gets.  A second one names what the refused answer lost or added;
#: on 5 TAB documents (embedded 1.5B, load 2) it raised the rewritten share from 36.0 %
#: to 36.9 % and the median wall time from 63 to 114 s a document, so one is the default
#: (2 asks again).
ATTEMPTS = 1

Pairs = list[tuple[str, str]]
"""The ``(phrase, new words)`` pairs of an answer's ``Replacements:`` line."""

Links = Callable[[str, int, int, Sequence[tuple[int, int]]], Sequence[str]]
"""``(text, start, end, ignore) -> phrases``: the linkable phrases of ``text`` overlapping
``text[start:end]`` (empty: none), leaving out those that overlap an ``ignore`` span (words
other edits of the pass change: a phrase they break is no answer's fault)."""

Vet = Callable[[int, int, str, Sequence[str]], tuple[str | None, str]]
"""``(start, end, new, siblings) -> (placed, why)``: the phrase check of the pass (the
one the phrase answers go through) on ``new`` as the words of ``text[start:end]``: the
words as they would be written there, or None and why not."""


@dataclass(frozen=True)
class Job:
    """One sentence to write again.

    Attributes:
        start, end: the sentence's bounds in the pass's text.
        shown: the sentence as the LLM sees it (the cheap steps' replacements in it).
        spans: the phrases to replace, as offsets in ``shown``.
        context: the text before the sentence (its neighbour), for the model only.
        runs: where each of ``spans`` lies in the pass's text (same order).
    """

    start: int
    end: int
    shown: str
    spans: tuple[tuple[int, int], ...]
    context: str = ""
    runs: tuple[tuple[int, int], ...] = ()


class SentenceStep:
    """Writes :class:`Job` sentences again through ``rewriter.complete_sentence``.

    Args:
        rewriter: a :class:`~presidio_delink.llm.base.SentenceWriter` (a circuit breaker
            around it counts its failures).
        tokenizer: the index's word model (for :func:`~presidio_delink.edits.rejection`).
        links: the index check (:data:`Links`); None checks nothing (no index: the loop's
            next pass decides).
        concurrency: requests in flight.
        strict: raise on an LLM failure instead of leaving the runs to the fallback.
        splice: try a refused answer's changes of the named phrases alone (:func:`_spliced`).
        vet: the pass's phrase check (:data:`Vet`); with it, a refused sentence falls back
            on the replacements its answer named (:meth:`_from_replacements`).
        changed: the spans of the pass's text that its other edits change (every run it
            plans): a phrase over one of them, outside the sentence, does not refuse it.
        sense: ``(old, new) -> bool``, whether the words ``new`` name what ``old`` names
            or a class above it (:meth:`~presidio_delink.candidates.lexicon.WordNet.stands_for`);
            None checks no sense.  The fact check guards the words outside the named
            phrases; this guards the words the model writes for them.
        attempts: requests a sentence gets (default :data:`ATTEMPTS`).
    """

    def __init__(
        self,
        rewriter: Any,
        tokenizer: Tokenizer,
        links: Links | None = None,
        *,
        concurrency: int = 1,
        strict: bool = False,
        splice: bool = True,
        vet: Vet | None = None,
        changed: Sequence[tuple[int, int]] = (),
        sense: Callable[[str, str], bool] | None = None,
        attempts: int | None = None,
        fill: Continue | None = None,
    ) -> None:
        self.rewriter = rewriter
        self.tokenizer = tokenizer
        self.links = links
        self.concurrency = max(1, concurrency)
        self.strict = strict
        self.splice = splice
        self.vet = vet
        self.changed = sorted(changed)
        self.sense = sense
        self.attempts = max(1, ATTEMPTS if attempts is None else attempts)
        self.fill = fill
        self._lock = threading.Lock()

    def verify(
        self,
        text: str,
        job: Job,
        answer: str,
        forbidden: Sequence[str] = (),
        vocabulary: Collection[str] = (),
    ) -> Verdict:
        """Whether ``answer`` may replace ``job``'s sentence in ``text`` (the checks 1-4)."""
        verdict = check_facts(job.shown, answer, job.spans, vocabulary)
        if not verdict.ok:
            return verdict
        for ch in changes(job.shown, answer):
            if not ch.new.strip():
                continue
            why = rejection(ch.original or ch.new, ch.new, self.tokenizer, forbidden)
            if why is not None and why.startswith("reintroduces"):
                return Verdict(why, (ch.new,))
        if self.sense is not None:
            odd = unvouched(job.shown, answer, job.spans, self.sense)
            if odd:
                return Verdict(SENSE, odd)
        if self.links is not None:
            new_text = text[: job.start] + answer + text[job.end :]
            shift = len(answer) - (job.end - job.start)
            ignore = [(a, b) if b <= job.start else (a + shift, b + shift)
                      for a, b in self.changed if b <= job.start or a >= job.end]
            found = self.links(new_text, job.start, job.start + len(answer), ignore)
            if found:
                return Verdict(FOUND, tuple(dict.fromkeys(found))[:4])
        return Verdict(None)

    def write(
        self,
        text: str,
        jobs: Sequence[Job],
        forbidden: Sequence[str],
        res: DelinkResult,
        vocabulary: Collection[str] = (),
    ) -> dict[tuple[int, int], str]:
        """The accepted new sentence of each job, by its bounds (refused ones absent);
        ``res`` gets the calls, seconds, tokens and refusals (``"sentence: ..."``).

        Raises:
            LLMError: only in strict mode, when the LLM fails.
        """
        if not jobs:
            return {}
        usage = find_usage(self.rewriter)
        before = usage.snapshot() if usage is not None else None
        drafts = usage.drafts() if usage is not None else None
        call = sentence_call(self.rewriter)

        def ask(job: Job, refused: str = "", why: str = "") -> tuple[str | None, Pairs]:
            messages = render_messages(job.context, job.shown, job.spans, refused, why)
            t0 = time.perf_counter()
            try:
                raw = call(messages, max_tokens(job.shown, job.spans))
            except LLMError as exc:
                self._failed(res, exc, t0)
                return None, []
            with self._lock:
                res.llm_seconds += time.perf_counter() - t0
                res.llm_calls += 1
            return _finished(parse_answer(raw), job.shown), parse_replacements(raw)

        def one(job: Job) -> str | None:
            if self.fill is not None:
                return self._filled(text, job, res, forbidden, vocabulary)
            got = tried_all(job)
            if got is None:
                return None
            # a named phrase an accepted answer deleted outright is redacted, not rewritten
            back, deleted = restore_deleted(got[0].shown, got[1], got[0].spans)
            if not deleted:
                return got[1]
            part = _kept_redacted(got[0], back, deleted)
            if part is not None and self.verify(text, *part, forbidden, vocabulary).ok:
                self._count(res, "accepted with deleted phrases redacted")
                return part[1]
            self._count(res, "refused: deletes a phrase, and redacted fails a check")
            return None

        def tried_all(job: Job) -> tuple[Job, str] | None:
            """The accepted answer and the job it answers (the kept-redacted one)."""
            tried: list[tuple[str, Verdict]] = []
            verdict = Verdict("no answer")
            for attempt in range(self.attempts):
                if attempt == 0:
                    answer, pairs = ask(job)
                elif tried:
                    answer, pairs = ask(job, tried[-1][0], tried[-1][1].note())
                else:
                    break
                if answer is None:
                    verdict = Verdict("no answer")
                    continue
                verdict = self.verify(text, job, answer, forbidden, vocabulary)
                log.debug("sentence %r -> %r: %s", job.shown, answer, verdict.note() or "ok")
                if verdict.ok:
                    return job, answer
                self._refused(res, verdict)
                tried.append((answer, verdict))
                # what the refused answer still gives, before another request
                if verdict.reason in (KEPT, SENSE):
                    part = (_kept_redacted(job, answer, verdict.words) if verdict.reason == KEPT
                            else _found_redacted(job, answer, verdict.words))
                    if part is not None and self.verify(
                        text, part[0], part[1], forbidden, vocabulary
                    ).ok:
                        self._count(res, "accepted with the kept phrases redacted"
                                    if verdict.reason == KEPT else
                                    "accepted with unvouched words redacted")
                        return part
                got = self._from_replacements(text, job, pairs, forbidden, vocabulary)
                if got is not None:
                    self._count(res, "accepted from its replacements")
                    return got
            if self.splice:
                for answer, _verdict in reversed(tried):
                    cut, why = self._spliced(text, job, answer, forbidden, vocabulary)
                    if cut is not None:
                        self._count(res, "accepted spliced")
                        return job, cut
                    self._count(res, f"splice refused: {why}")
            return None

        if self.concurrency <= 1 or len(jobs) <= 1:
            answers = [one(j) for j in jobs]
        else:
            with ThreadPoolExecutor(min(self.concurrency, len(jobs)),
                                    thread_name_prefix="delink-sentence") as pool:
                answers = list(pool.map(one, jobs))
        if usage is not None and before is not None and drafts is not None:
            after, drafts_after = usage.snapshot(), usage.drafts()
            res.prompt_tokens += after[0] - before[0]
            res.cached_tokens += after[1] - before[1]
            res.generated_tokens += after[2] - before[2]
            res.drafted_tokens += drafts_after[0] - drafts[0]
            res.accepted_tokens += drafts_after[1] - drafts[1]
        return {(j.start, j.end): a for j, a in zip(jobs, answers, strict=True) if a is not None}

    def _failed(self, res: DelinkResult, exc: LLMError, t0: float) -> None:
        """Count a failed call and warn in ``res`` (raise in strict mode)."""
        with self._lock:
            res.llm_seconds += time.perf_counter() - t0
            if not isinstance(exc, LLMUnavailable):
                res.llm_calls += 1
        if self.strict:
            raise LLMError(f"document {res.id!r}: {exc}") from exc
        msg = ("LLM backend down (failed calls in a row); redacted instead"
               if isinstance(exc, LLMUnavailable)
               else f"LLM failed ({type(exc).__name__}); redacted instead")
        with self._lock:
            if msg not in res.warnings:
                res.warnings.append(msg)

    def _filled(
        self,
        text: str,
        job: Job,
        res: DelinkResult,
        forbidden: Sequence[str],
        vocabulary: Collection[str],
    ) -> str | None:
        """``job``'s sentence with its named phrases filled in place (:attr:`fill`,
        :func:`~presidio_delink.sentences.fill.fill`), each phrase the checks refuse
        redacted: the checks run on the sentence, the phrases whose new words they name
        are redacted (:func:`~presidio_delink.sentences.fill.blame`), and they run again,
        until they pass or no phrase is left rewritten (None)."""
        assert self.fill is not None
        inner = self.fill

        def cont(*args: Any) -> tuple[str, bool]:
            got = inner(*args)
            with self._lock:
                res.llm_calls += 1
            return got

        def timed(call: Callable[[], Filled]) -> Filled | None:
            t0 = time.perf_counter()
            try:
                got = call()
            except LLMError as exc:
                self._failed(res, exc, t0)  # counts the failed call and its time
                return None
            with self._lock:
                res.llm_seconds += time.perf_counter() - t0
            return got

        filled = timed(lambda: fill_in(cont, job.context, job.shown, job.spans))
        if filled is None:
            return None
        take = {i for i, new in enumerate(filled.new) if new is not None}
        refused: dict[int, list[str]] = {}  # each part's refused words, to ban
        tries = dict.fromkeys(take, 1)
        while take:
            shown, spans, answer, placed = compose(filled, take)
            verdict = self.verify(text, Job(job.start, job.end, shown, tuple(spans), job.context),
                                  answer, forbidden, vocabulary)
            log.debug("sentence %r -> %r: %s", job.shown, answer, verdict.note() or "ok")
            if verdict.ok:
                self._count(res, "accepted, filled in place" if len(take) == len(filled.new)
                            else "accepted, filled in place, some phrases redacted")
                return answer
            self._refused(res, verdict)
            bad = blame(sorted(take), placed, answer, verdict.words)
            if not bad:
                break
            for i in sorted(bad):  # ask for other words, up to FILL_TRIES in all
                words = refused.setdefault(i, [])
                said = filled.new[i] or ""
                words += [w for w in verdict.words if w in said.split()] or content_words(said)[:1]
                if tries[i] >= FILL_TRIES or not words:
                    take.discard(i)
                    continue
                tries[i] += 1
                again = timed(partial(refill, cont, filled, i, list(words)))
                if again is None:
                    return None
                filled = again
                if filled.new[i] is None:
                    take.discard(i)
        return None

    def _from_replacements(
        self,
        text: str,
        job: Job,
        pairs: Pairs,
        forbidden: Sequence[str],
        vocabulary: Collection[str],
    ) -> tuple[Job, str] | None:
        """``job``'s sentence with each named phrase written as the answer's
        ``Replacements:`` line says, where the pass's phrase check (:attr:`vet`) accepts
        those words there, and redacted where not; the pair to accept if it then passes
        every check (:meth:`verify`), else None.  A phrase whose new words the index still
        finds is redacted too (one more try).  None as well when no phrase is rewritten:
        the fallback redacts them all anyway.

        A model that restates a sentence often changes or drops a word it was to keep,
        while the words it chose for the named phrases, seen in the whole sentence, fit;
        this keeps those words and only them."""
        if self.vet is None or not pairs or len(job.runs) != len(job.spans):
            return None
        said: dict[str, str] = {}
        for old, words in pairs:
            said.setdefault(old.casefold(), words)
        phrases = [job.shown[a:b] for a, b in job.spans]
        placed: dict[int, str] = {}
        for i, ((ra, rb), phrase) in enumerate(zip(job.runs, phrases, strict=True)):
            said_new = said.get(phrase.casefold())
            if said_new is None:
                continue
            got, why = self.vet(ra, rb, said_new, [p for p in phrases if p != phrase])
            if got is None:
                log.debug("replacement %r -> %r refused: %s", phrase, said_new, why)
                continue
            placed[i] = got
        for _try in range(2):
            if not placed:
                return None
            sentence = job.shown
            for i in sorted(placed, reverse=True):
                a, b = job.spans[i]
                sentence = sentence[:a] + placed[i] + sentence[b:]
            left = [phrases[i] for i in range(len(phrases)) if i not in placed]
            pair = _kept_redacted(job, sentence, left) if left else (job, sentence)
            if pair is None:
                return None
            verdict = self.verify(text, pair[0], pair[1], forbidden, vocabulary)
            if verdict.ok:
                log.debug("from replacements %r -> %r", job.shown, pair[1])
                return pair
            if verdict.reason != FOUND:
                return None
            # the rewrites inside a phrase still found are redacted, the others kept
            found = [f.casefold() for f in verdict.words]
            placed = {i: w for i, w in placed.items()
                      if not any(w.casefold() in f for f in found)}
        return None

    def _spliced(
        self,
        text: str,
        job: Job,
        answer: str,
        forbidden: Sequence[str],
        vocabulary: Collection[str],
    ) -> tuple[str | None, str]:
        """``answer`` cut down to its changes of ``job``'s named phrases
        (:func:`~presidio_delink.sentences.align.splice`), with the named phrases it
        deleted, or still keeps, redacted (:func:`_kept_redacted`), if that passes every
        check (:meth:`verify`); else None and why."""
        cut = splice(job.shown, answer, job.spans)
        if cut.sentence is None:
            return None, cut.reason or "nothing to keep"
        pair = (job, cut.sentence)
        if cut.deleted:
            part = _kept_redacted(job, cut.sentence, cut.deleted)
            if part is None:
                return None, "a deleted phrase not found"
            pair = part
        verdict = self.verify(text, pair[0], pair[1], forbidden, vocabulary)
        for _round in range(SPLICE_ROUNDS):  # each round redacts at least one named phrase
            if verdict.reason == KEPT:
                part = _kept_redacted(pair[0], pair[1], verdict.words)
                if part is None:
                    return None, KEPT
            elif verdict.reason in (FOUND, SENSE):
                part = _found_redacted(pair[0], pair[1], verdict.words)
                if part is None:
                    break
                log.debug("splice %r: found %s, those phrases redacted", pair[1], verdict.words)
            else:
                break
            pair = part
            verdict = self.verify(text, pair[0], pair[1], forbidden, vocabulary)
        if not verdict.ok:
            log.debug("splice %r refused: %s", pair[1], verdict.note())
            return None, verdict.reason or ""
        log.debug("spliced %r -> %r", job.shown, pair[1])
        return pair[1], ""

    def _count(self, res: DelinkResult, what: str) -> None:
        key = f"sentence: {what}"
        with self._lock:
            res.refusals[key] = res.refusals.get(key, 0) + 1

    def _refused(self, res: DelinkResult, verdict: Verdict) -> None:
        key = f"sentence: {verdict.reason}"
        with self._lock:
            res.refusals[key] = res.refusals.get(key, 0) + 1


#: Abbreviations whose full stop ends no sentence (``application no. 36110/97``).
_ABBREVIATIONS = ("no nos mr mrs ms dr prof st v vs pp p para paras art arts cf e.g i.e etc "
                  "ltd inc co jr sr seq op cit ibid")
ABBREVIATIONS = frozenset(_ABBREVIATIONS.split())
_LAST_WORD = re.compile(r"([\w.]+)\.\s*$")


def sentence_spans(bounds: Sequence[tuple[int, int]], text: str) -> list[tuple[int, int]]:
    """``bounds`` (:func:`~presidio_delink.edits.sentence_bounds`, which cuts at every
    full stop, colon and semicolon) joined where a cut is no sentence end: after an
    abbreviation (:data:`ABBREVIATIONS`), or before a lower-case letter, a digit or a
    bracket on the same line.  A sentence written again is then a sentence, not the tail
    of one that the model completes from its context."""
    out: list[tuple[int, int]] = []
    for a, b in bounds:
        if out:
            pa, pb = out[-1]
            m = _LAST_WORD.search(text, pa, pb)
            gap = text[pb:a]
            first = text[a : a + 1]
            if "\n" not in gap and (
                (m is not None and m.group(1).casefold() in ABBREVIATIONS)
                or first.islower() or first.isdigit() or first in "(["
            ):
                out[-1] = (pa, b)
                continue
        out.append((a, b))
    return out


def jobs(
    text: str,
    rs: Sequence[Any],
    answers: Mapping[tuple[int, int], tuple[str | None, str | None]],
    skip: Sequence[tuple[int, int]] = (),
    max_chars: int = 600,
    clauses: bool = True,
) -> list[Job]:
    """The sentences to write again: each (:func:`sentence_spans`) holding a run of ``rs``
    (``start``, ``end``) that ``answers`` (the cheap steps') left without a replacement,
    shown with the cheap replacements in it (``""``: a word left out) and those runs named,
    the text before it (the sentence before, and the sentence's own words before the
    part asked about) as context.  With ``clauses`` (the default) only the
    sentence's clauses that hold those runs are asked about
    (:func:`~presidio_delink.sentences.clauses.piece`), and the job's bounds are theirs.
    A sentence that overlaps ``skip`` or holds a run across its bounds, or a part asked
    about longer than ``max_chars``, is left out."""
    bounds = sentence_spans(sentence_bounds(text), text) or [(0, len(text))]
    left = {
        i for r in rs if answers.get((r.start, r.end), (None, None))[0] is None
        for i, (a, b) in enumerate(bounds) if a <= r.start < b
    }
    out = []
    for i in sorted(left):
        sa, sb = bounds[i]
        inner = sorted((r for r in rs if sa <= r.start < sb), key=lambda r: r.start)
        if any(r.end > sb for r in inner) or any(x < sb and sa < y for x, y in skip):
            continue
        a, b = sa, sb
        if clauses:
            named = [(r.start, r.end) for r in inner
                     if answers.get((r.start, r.end), (None, None))[0] is None]
            a, b = clauses_of(text, sa, sb, named, [(r.start, r.end) for r in inner])
            inner = [r for r in inner if a <= r.start < b]
        if b - a > max_chars:
            continue
        shown: list[str] = []
        spans, runs = [], []
        pos, at = a, 0
        for r in inner:
            new = answers.get((r.start, r.end), (None, None))[0]
            shown.append(text[pos : r.start])
            at += r.start - pos
            if new is None:
                spans.append((at, at + r.end - r.start))
                runs.append((r.start, r.end))
                piece = text[r.start : r.end]
            elif new == "":
                piece = ""
                if shown[-1].endswith(" "):  # a word left out takes one space with it
                    shown[-1] = shown[-1][:-1]
                    at -= 1
            else:
                piece = new
            shown.append(piece)
            at += len(piece)
            pos = r.end
        shown.append(text[pos:b])
        context = text[bounds[i - 1][0] if i > 0 else sa : a]
        out.append(Job(a, b, "".join(shown), tuple(spans), context[-400:], tuple(runs)))
    return out


def _kept_redacted(job: Job, answer: str, phrases: Sequence[str]) -> tuple[Job, str] | None:
    """``job`` and ``answer`` with each named phrase the answer kept (``phrases``) written
    as the placeholder in both: a sentence that replaced all its phrases but a few keeps
    its rewrites, and only those few are redacted (the checks then run again on the pair).
    None when a phrase is not found as whole words in both."""
    shown, new = job.shown, answer
    named = list(zip(job.spans, job.runs or [None] * len(job.spans), strict=True))
    for phrase in phrases:
        at = next((i for i, ((a, b), _r) in enumerate(named) if shown[a:b] == phrase), None)
        m = re.search(rf"(?<!\w){re.escape(phrase)}(?!\w)", new)
        if at is None or m is None:
            return None
        new = new[: m.start()] + REDACTED + new[m.end() :]
        (a, b), _r = named.pop(at)
        shift = len(REDACTED) - (b - a)
        shown = shown[:a] + REDACTED + shown[b:]
        named = [((x, y), r) if y <= a else ((x + shift, y + shift), r) for (x, y), r in named]
    spans = tuple(sp for sp, _r in named)
    runs = tuple(r for _sp, r in named if r is not None)
    return Job(job.start, job.end, shown, spans, job.context, runs), new


def _found_redacted(job: Job, sentence: str, found: Sequence[str]) -> tuple[Job, str] | None:
    """``job`` and the spliced ``sentence`` with each changed block that shares a word with
    a phrase the index still ``found`` (or with the words the sense check did not vouch
    for: :func:`unvouched`) given back its input words, and the named phrases
    in those blocks redacted (:func:`_kept_redacted`), as is each named phrase the answer
    left unchanged whose words all lie in a found phrase: a spliced sentence whose new
    words for one phrase, or whose kept one, still link keeps its other rewrites (the
    checks then run again).  None
    when no such block holds a named phrase, when every named phrase would be redacted
    (nothing rewritten left), or when the blocks do not rebuild
    ``sentence`` exactly (an insertion the input's spacing cannot hold)."""
    hit = {w for f in found for w in re.findall(r"\w+", f.casefold())}
    shown = job.shown
    blocks = changes(shown, sentence)
    # a named phrase the answer left as it was, every word of it in a found phrase: its
    # words are what still links ("in which they were", the named "they" kept)
    stayed = [shown[a:b] for a, b in job.spans
              if not any(a < max(c.end, c.start + 1) and c.start < b for c in blocks)
              and set(re.findall(r"\w+", shown[a:b].casefold())) <= hit]
    kept_all: list[str] = []
    out: list[str] = []
    back: list[str] = []
    pos = 0
    for ch in blocks:
        named = [shown[a:b] for a, b in job.spans if a < max(ch.end, ch.start + 1) and ch.start < b]
        kept_all += [shown[pos : ch.start], ch.new]
        out.append(shown[pos : ch.start])
        if named and set(re.findall(r"\w+", ch.new.casefold())) & hit:
            out.append(ch.original)
            back += named
        else:
            out.append(ch.new)
        pos = ch.end
    back += stayed
    if not back or "".join(kept_all) + shown[pos:] != sentence:
        return None
    if len(set(back)) >= len(set(shown[a:b] for a, b in job.spans)):
        return None  # nothing rewritten would be left: the fallback redacts them anyway
    return _kept_redacted(job, "".join(out) + shown[pos:], list(dict.fromkeys(back)))


_WORDS = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*")


def _finished(answer: str | None, shown: str) -> str | None:
    """``answer`` with its input's sentence end and opening capital where it lost them,
    and, for a part of a sentence (:func:`~presidio_delink.sentences.clauses.piece`),
    without the full stop or opening capital the model gave it: the words after it and
    before it are the sentence's."""
    if not answer:
        return None
    end = shown.rstrip()[-1:]
    if end and end in _ENDS and answer[-1] not in _ENDS:
        answer += end
    elif end not in _ENDS and answer[-1] == ".":
        answer = answer[:-1].rstrip()
        if not answer:
            return None
    if shown[:1].isupper() and answer[:1].islower():
        answer = answer[0].upper() + answer[1:]
    elif shown[:1].islower() and answer[:1].isupper():
        head = _WORDS.match(answer)
        if head is not None and not re.search(rf"(?<!\w){re.escape(head.group())}(?!\w)", shown):
            answer = answer[0].lower() + answer[1:]
    return answer

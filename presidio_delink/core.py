"""The delink loop, once: every entry point (``Delinker``, ``DelinkEngine``, the
``delink`` operator) is an adapter over it.

Definitions.  For a text ``T`` and the index, ``check(T)`` is the linkage report at
``k``/``arity``/``max_n``: the N-grams (and combinations) found in fewer than ``k``
groups.  One *pass*:

1. *plan*: the fewest tokens hitting every flagged span (a minimum stabbing set of least
   word cost, :func:`~presidio_delink.edits.choose_tokens`; words of headings and at
   paragraph boundaries cost more, :func:`~presidio_delink.edits.structure_costs`),
   widened to whole written words (:func:`~presidio_delink.edits.whole_words`) and
   grouped into contiguous *runs*; under the candidate modes, steered among the plans of
   the fewest tokens to words a verified candidate can replace (:meth:`DelinkLoop.settled_plan`);
2. *rewrite*: while the LLM passes last, the runs are grouped into passages
   (:func:`~presidio_delink.edits.passage_groups`, at most ``passage_chars`` characters
   and ``passage_spans`` spans per request), one request per passage, up to
   ``llm_concurrency`` in flight, answers used in document order;
   under ``rewrite="sentences"`` the LLM gets no phrases: each sentence still holding a
   run the candidates left is written again whole (:mod:`presidio_delink.sentences`),
   kept only if its fact check and the index pass, and becomes one edit;
3. *validate*: each answer passes :func:`~presidio_delink.edits.rejection` (no PII back, no
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
import re
import time
from collections.abc import Iterable, Sequence
from typing import Any

from presidio_delink.confusables import latin_text
from presidio_delink.edits import (
    FUNCTION_WORDS,
    REDACTED,
    Run,
    apply,
    carry,
    choose_tokens,
    dropped,
    runs,
    sentence_bounds,
    structure_costs,
    tokens_within,
    whole_words,
)
from presidio_delink.index import NgramIndex
from presidio_delink.linkage import LinkageReport, analyze
from presidio_delink.llm.base import Rewriter
from presidio_delink.results import AuditEntry, DelinkResult
from presidio_delink.rewriting import SENTENCE, Answers, Rewriting, audit_method, audit_source
from presidio_delink.settings import CANDIDATE_MODES, DelinkSettings, Setting, rewrite_for

__all__ = ["DelinkLoop"]
from presidio_delink.text import Tokenizer

log = logging.getLogger(__name__)

#: Extra cost of a token that only a redaction or the LLM would replace
#: (:meth:`DelinkLoop.plan`): above a function word's and a paragraph edge's own cost,
#: below a heading word's.
AVOID_COST = 6
#: Plans tried per pass by :meth:`DelinkLoop.settled_plan`: on 12 held-in TAB texts, 6
#: rewrote 21.7 % of the changed words against 20.5 % for 3, for 3 % more CPU; 10 found
#: no plan 6 did not (on 7 test documents, read only to check).
PLAN_ROUNDS = 6
#: A trading plan (:meth:`DelinkLoop.settled_plan`) weighs a token at ``TRADE_UNIT``
#: plus its own cost, and an avoided one :data:`TRADE_AVOID_COST` more: it changes more
#: words where that spares a redaction.
TRADE_UNIT = 10
TRADE_AVOID_COST = 25
#: How many rewritten words one redacted word is worth when plans of different sizes
#: are compared (:meth:`DelinkLoop.settled_plan`).
REDACTION_WORTH = 3


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
        settings = settings.replace(rewrite=rewrite_for(settings.rewrite, rewriter is not None))
        # validates max_n against the index (and k, arity again)
        analyze(index, "", k=settings.k, arity=settings.arity, max_n=settings.max_n)
        super().__init__(
            rewriter,
            index.tokenizer,
            settings,
            fluency=fluency,
            ner=ner,
            known_word=self._known_word,
        )
        self.index = index
        self.monitor = monitor
        # Written words (inner hyphens and apostrophes kept): edits never split one.
        self._words = Tokenizer(fold="fine", placeholders=index.tokenizer.placeholders)

    k = Setting[int]()
    arity = Setting[int]()
    max_n = Setting[int | None]()
    passes = Setting[int]()
    protect = Setting[str | None]()

    def _known_word(self, word: str) -> bool:
        """Whether a rewrite may use ``word``: the collection uses it, or, under the
        candidate modes, it is a form of one of the legal register's stand-ins
        (:func:`~presidio_delink.candidates.register.is_stand_in`: ``rejected``,
        ``rulings``).  A word the collection never uses cannot link a phrase either way;
        the check keeps out invented and archaic words (``appliers``, ``connexion``), but
        a small collection's vocabulary is no measure of the register's common words."""
        if self.index.df(word) > 0:
            return True
        if self.settings.rewrite not in CANDIDATE_MODES:
            return False
        from presidio_delink.candidates.register import is_stand_in

        return is_stand_in(word)

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

    def sentence_links(
        self, text: str, start: int, end: int, ignore: Sequence[tuple[int, int]] = ()
    ) -> list[str]:
        """The linkable phrases of ``text`` that overlap ``text[start:end]`` (a sentence
        written again), by this loop's check (every view, ``k``, arity, ``max_n``) of the
        sentence with its neighbours on either side: a phrase across its edges counts, and
        a combination whose parts lie in that window.  A combination with a part further
        away is the next pass's check (the loop's final check still finds everything).
        A phrase that overlaps an ``ignore`` span (words the pass's other edits change,
        in the neighbours) is left out: those edits break it, and if what they write makes
        it link again, the next pass's check finds that."""
        bounds = sentence_bounds(text)
        starts = [a for a, _ in bounds]
        i = max(0, bisect.bisect_right(starts, start) - 1)
        j = bisect.bisect_left(starts, end)
        a = bounds[i - 1][0] if i > 0 else 0
        b = bounds[j][1] if j < len(bounds) else len(text)
        a, b = min(a, start), max(b, end)
        rep = self.check(text[a:b])
        return [text[a + x : a + y] for x, y, _f in rep.spans()
                if x < end - a and start - a < y
                and not any(p < a + y and a + x < q for p, q in ignore)]

    def plan(
        self,
        text: str,
        rep: LinkageReport,
        avoid: Iterable[tuple[int, int]] = (),
        *,
        trade: bool = False,
    ) -> tuple[list[Run], int]:
        """Step 1: the runs to change, and the size of the minimum stabbing set before it
        was widened to whole words.  Tokens inside an ``avoid`` span (runs nothing but a
        redaction would replace) cost :data:`AVOID_COST` more: among the sets of the
        fewest tokens, one that leaves them alone is preferred (:meth:`settled_plan`)."""
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
        costs = structure_costs(text, tokens)
        for a, b in avoid:
            for i in tokens_within(starts, a, b):
                costs[i] += TRADE_AVOID_COST if trade else AVOID_COST
        chosen = choose_tokens(ivs, tokens, costs, unit=TRADE_UNIT if trade else None)
        optimum = len(chosen) + len(_union(bare))
        chosen = whole_words(chosen, tokens, self._words.tokens(text))
        rs = runs(chosen, segs) + [Run(a, b, 1) for a, b in _union(bare)]
        return sorted(rs, key=lambda r: r.start), optimum

    def run(
        self,
        text: str,
        forbidden: Sequence[str] = (),
        *,
        res: DelinkResult | None = None,
        marks: Iterable[tuple[int, int, str]] = (),
    ) -> DelinkResult:
        """Delink ``text`` (PII already removed) until nothing links.

        Args:
            text: the text.
            forbidden: strings a rewrite may not put back (removed PII).
            res: a result to fill (its figures are added to; its ``id`` names the
                document in the log); a new one, without an id, by default.
            marks: labelled spans of ``text`` carried to the output (``res.marks``).

        Raises:
            LLMError: only in strict mode, when the LLM fails.
        """
        t0 = time.perf_counter()
        if res is None:
            res = DelinkResult(id="", text=None, input_text=text, passes=0, linkable_after=True)
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
        sentenced: list[tuple[int, int, str]] = []  # sentences written again so far
        use_sentences = self.writes_sentences()
        rep = self.check(current)
        res.first_report = rep
        limit = res.n_words + 2
        pass_no = 0
        while rep.linkable:
            pass_no += 1
            if pass_no > limit:  # cannot happen: each round removes at least one word
                break
            # the candidates need no LLM: without one they choose where a candidate survives
            use_llm = (
                self.rewriter is not None or self.settings.rewrite in CANDIDATE_MODES
            ) and pass_no <= self.passes
            if use_llm and self.chooser is not None:
                rs, optimum = self.settled_plan(current, rep, forbidden, origins)
            else:
                rs, optimum = self.plan(current, rep)
            if pass_no == 1:
                res.optimum_words = optimum
            fresh: list[tuple[int, int, str]] = []
            edits = self._edits(current, rs, rep, pass_no, use_llm, forbidden, res, origins,
                                sentenced if use_sentences else None, fresh)
            origins = _carried(origins, edits, current)
            sentenced = sorted(carry(sentenced, edits) + _placed(fresh, edits))
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
            res.id,
            res.passes,
            res.words_rewritten,
            res.words_redacted,
            res.llm_calls,
        )
        return res

    def settled_plan(
        self,
        text: str,
        rep: LinkageReport,
        forbidden: list[str],
        origins: Sequence[tuple[int, int, str]] = (),
    ) -> tuple[list[Run], int]:
        """:meth:`plan`, steered to words that can be rewritten without the LLM.

        A flagged N-gram is broken by changing any one of its words, so the fewest
        tokens can usually be chosen in several ways.  Each plan's runs are asked what
        the generalisations and the candidates give them (:meth:`rewrite_runs` without
        the LLM; the chooser keeps its choices for the pass); the runs left with nothing
        are avoided by the next plan, which keeps the same number of tokens
        (:meth:`plan`'s ``avoid``).  Where every such plan leaves words to the LLM or a
        redaction, up to :data:`PLAN_ROUNDS` trading plans follow: they may change more
        words to spare one that only a redaction would replace (``police arrested
        thieves``: ``police`` and ``thieves`` rewritten rather than ``arrested``
        redacted).  The plan returned has the fewest words changed, each word left to the
        LLM or a redaction counting :data:`REDACTION_WORTH` (a plan of the fewest words
        that leaves none is always kept).  The rewrite itself
        (:meth:`run`) then validates every answer again, so this changes only which words
        change, never what is checked."""
        avoid = set(self._hopeless(text))
        best: tuple[int, int, list[Run]] | None = None  # (cost, words left, runs)
        optimum: int | None = None  # the fewest tokens: every plan without trading has it
        seen: set[tuple[tuple[int, int], ...]] = set()
        for trade in (False, True):
            if best is not None and best[1] == 0:
                break  # a plan of the fewest words leaves nothing to a redaction
            for _ in range(PLAN_ROUNDS):
                rs, opt = self.plan(text, rep, avoid, trade=trade)
                optimum = opt if optimum is None else optimum
                key = tuple((r.start, r.end) for r in rs)
                if key in seen:
                    break
                seen.add(key)
                scratch = DelinkResult(id="", text=None, input_text=text, passes=0,
                                       linkable_after=True)
                answers = self.rewrite_runs(text, rs, forbidden, scratch, origins, llm=False)
                rs = self._widened(text, rs, answers, forbidden, origins)
                left = [r for r in rs
                        if answers.get((r.start, r.end), (None, None))[0] is None]
                words_left = sum(r.n_words for r in left)
                cost = sum(r.n_words for r in rs) + (REDACTION_WORTH - 1) * words_left
                if best is None or cost < best[0]:
                    best = (cost, words_left, rs)
                if not left:
                    break
                avoid.update((r.start, r.end) for r in left)
        assert best is not None and optimum is not None
        return best[2], optimum

    def _widened(
        self,
        text: str,
        rs: list[Run],
        answers: Answers,
        forbidden: list[str],
        origins: Sequence[tuple[int, int, str]],
    ) -> list[Run]:
        """``rs`` where each run left without an answer (``answers``, filled in place)
        that lies in a name whose head noun may stand for it
        (:func:`~presidio_delink.generalise.name_span`) or in a gloss in brackets
        (:func:`~presidio_delink.candidates.drop.gloss_span`) is widened to the whole
        name or gloss, with the runs inside it, if the candidates then answer it: ``the
        Federal [REDACTED] Court`` becomes ``the court``, ``the Constitutional Court
        ([REDACTED])`` loses the bracket.  Where the answer still links (``the court
        under Article 132``) the runs stay as they were: a wider redaction would take
        more words for nothing.  A possessive left so (``the [REDACTED] lawyer`` for
        ``the applicant's lawyer``) is asked again without its ``'s``: the noun's
        candidates then stand in for the noun (``the person's lawyer``)."""
        from presidio_delink.candidates.chooser import widened_span

        wide: dict[tuple[int, int], list[Run]] = {}
        for r in rs:
            if answers.get((r.start, r.end), (None, None))[0] is not None:
                continue
            span = widened_span(text, r.start, r.end)
            if span is None and _POSSESSIVE.fullmatch(text, r.start, r.end):
                span = (r.start, r.end - 2)  # the noun of "applicant's"
            if span is not None and span != (r.start, r.end):
                wide.setdefault(span, [])
        if not wide:
            return rs
        for r in rs:
            for a, b in wide:
                if r.start < b and a < r.end:
                    wide[(a, b)].append(r)
        starts = [t.start for t in self.tokenizer.tokens(text)]
        tried = [
            (Run(a, b, len(tokens_within(starts, a, b))), inner)
            for (a, b), inner in wide.items()
            if all(a <= r.start and r.end <= b for r in inner)
            or (len(inner) == 1 and inner[0].start == a and b < inner[0].end)  # possessive
        ]
        if not tried:
            return rs
        scratch = DelinkResult(id="", text=None, input_text=text, passes=0, linkable_after=True)
        got = self.rewrite_runs(text, [w for w, _ in tried], forbidden, scratch, origins,
                                llm=False)
        out = list(rs)
        for w, inner in tried:
            new = got.get((w.start, w.end), (None, None))
            if new[0] is None:
                continue
            answers[(w.start, w.end)] = new
            out = [r for r in out if r not in inner] + [w]
        return sorted(out, key=lambda r: r.start)

    def _hopeless(self, text: str) -> list[tuple[int, int]]:
        """Spans of the tokens no candidate can replace, avoided from the first plan on:
        function words that are not a demonstrative (the collection's words of that kind
        in its slot stand in for one,
        :data:`~presidio_delink.candidates.chooser.DETERMINER_KINDS`) nor one of the fixed
        stand-ins' words
        (:data:`~presidio_delink.candidates.propose.SWAPS`); and the words of a name of
        several capitalised words after its first (a name's word gets no lexicon word,
        its type stands in only for the whole name, and only its first word may be left
        out): ``Article 169 of the Criminal Code`` loses its number, not ``Code``."""
        from presidio_delink.candidates.chooser import DETERMINER_KINDS, in_name
        from presidio_delink.candidates.propose import SWAPS

        swappable = {w for table in SWAPS.values() for w in table}
        out = []
        for s in self.tokenizer.segments(text):
            for i, t in enumerate(s):
                w = text[t.start : t.end].casefold()
                if (
                    w in FUNCTION_WORDS
                    and w not in swappable
                    and not any(w in kind for kind in DETERMINER_KINDS)
                ) or (in_name(text, t.start) and _after_a_name_word(text, s, i)):
                    out.append((t.start, t.end))
        return out

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
        sentenced: Sequence[tuple[int, int, str]] | None = None,
        fresh: list[tuple[int, int, str]] | None = None,
    ) -> list[tuple[int, int, str]]:
        """Replacement of each run: the LLM's (validated) or the placeholder.

        ``sentenced``: under ``rewrite="sentences"`` (None otherwise), the sentences written
        again by earlier passes, not asked again; the runs the cheap steps leave get the
        sentence step (:meth:`~presidio_delink.rewriting.Rewriting.rewrite_sentences`)
        instead of the phrase LLM, and each sentence it writes becomes one edit, added to
        ``fresh`` as ``(start, end, new)``, its changed blocks audited as ``"sentence"``."""
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
        written: dict[tuple[int, int], str] = {}
        if use_llm and sentenced is not None:
            answers = self.rewrite_runs(text, rs, forbidden, res, origins, llm=False)
            written = self.rewrite_sentences(
                text, rs, answers, forbidden, res, [(a, b) for a, b, _ in sentenced]
            )
        elif use_llm:
            answers = self.rewrite_runs(text, rs, forbidden, res, origins)
        edits = []
        for (sa, sb), new_sentence in sorted(written.items()):
            inner = [r for r in rs if sa <= r.start < sb]
            edits.append(self._sentence_edit(text, sa, sb, new_sentence, inner, info,
                                             pass_no, res, answers))
            if fresh is not None:
                fresh.append(edits[-1])
            for r in inner:
                res.choices.pop((r.start, r.end), None)
        in_written = {(r.start, r.end) for r in rs
                      for sa, sb in written if sa <= r.start < sb}
        for r in rs:
            if (r.start, r.end) in in_written:
                continue
            original = text[r.start : r.end]
            new, reason = answers.get((r.start, r.end), (None, None))
            method = audit_method(reason) if new is not None and new != REDACTED else "redacted"
            if method in ("generalised", "candidate"):
                reason = None
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
                    source=audit_source(method, ch),
                    score=ch.score if ch is not None and method == "candidate" else None,
                    candidates=ch.proposed if ch is not None else 0,
                    refused=dict(ch.refused) if ch is not None else {},
                )
            )
            edits.append(dropped(text, r.start, r.end) if replacement == "" else
                         (r.start, r.end, replacement))
        res.choices.clear()
        return edits

    def _sentence_edit(
        self,
        text: str,
        sa: int,
        sb: int,
        new: str,
        inner: Sequence[Run],
        info: dict[tuple[int, int], Any],
        pass_no: int,
        res: DelinkResult,
        cheap: Answers | None = None,
    ) -> tuple[int, int, str]:
        """The edit writing ``text[sa:sb]`` as ``new``: the span from its first changed
        word to its last (:func:`~presidio_delink.sentences.align.changed_span`); each
        changed block of the word alignment is one audit entry (method ``"sentence"``, or
        ``"redacted"`` for a named phrase the answer kept and the step redacted), its
        flagged N-gram the first one of a run it overlaps (else of the sentence's first
        run), and its old words count as rewritten (or redacted).  A block that is a run
        of ``inner`` given the answer the cheap steps gave it (``cheap``: shown so in the
        request, and kept) is audited as theirs (``"candidate"``, ``"generalised"``)."""
        from presidio_delink.sentences.align import changed_span, changes

        old = text[sa:sb]
        span = changed_span(old, new)
        if span is None:  # cannot happen: a verified answer replaced the named spans
            return sa, sb, new
        first = info.get((inner[0].start, inner[0].end)) if inner else None
        for ch in changes(old, new):
            a, b = sa + ch.start, sa + ch.end
            f = next((info[(r.start, r.end)] for r in inner
                      if r.start < max(b, a + 1) and a < r.end), first)
            # a named phrase the answer kept, redacted in it (SentenceStep): a redaction,
            # also where the block holds other changes ("Mrs Price" -> "Mrs. [REDACTED]")
            method = "redacted" if REDACTED in ch.new else SENTENCE
            given, why = (cheap or {}).get((a, b), (None, None))
            if method == SENTENCE and given == ch.new:
                method = audit_method(why)
            if method != "redacted":
                res.words_rewritten += ch.n_words
            else:
                res.words_redacted += ch.n_words
            res.audit.append(
                AuditEntry(
                    original=ch.original,
                    df=f.df if f else 0,
                    arity=f.arity if f else 1,
                    ngram=f.key if f else "",
                    replacement=ch.new,
                    pass_no=pass_no,
                    method=method,
                    n_words=ch.n_words,
                    start=a,
                    end=b,
                    view=f.view if f else "",
                    groups=f.groups if f else 0,
                    source=audit_source(method, res.choices.get((a, b))),
                )
            )
        return sa + span[0], sa + span[1], span[2]


def _placed(
    fresh: Sequence[tuple[int, int, str]], edits: Sequence[tuple[int, int, str]]
) -> list[tuple[int, int, str]]:
    """Where the edits of ``fresh`` (some of ``edits``) lie once ``edits`` are applied, as
    marks labelled ``"sentence"``."""
    mine = set(fresh)
    out = []
    delta = 0
    for a, b, new in sorted(edits):
        if (a, b, new) in mine:
            out.append((a + delta, a + delta + len(new), SENTENCE))
        delta += len(new) - (b - a)
    return out


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
        if new != REDACTED and new:
            out.append((a + delta, a + delta + len(new), at.get((a, b), text[a:b])))
        delta += len(new) - (b - a)
    return sorted(out + carry(origins, edits))


#: One written word, a noun's possessive: ``applicant's``, ``authority’s``.
_POSSESSIVE = re.compile(r"[^\W\d_][\w-]*['’]s")


def _union(ivs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(ivs):
        if out and a < out[-1][1]:
            out[-1] = (out[-1][0], max(b, out[-1][1]))
        else:
            out.append((a, b))
    return out


def _after_a_name_word(text: str, seg: Sequence[Any], i: int) -> bool:
    """Whether token ``i`` of ``seg`` follows a capitalised word, only spaces between: a
    name's word after its first (the first, a modifier such as ``Erzincan`` in ``the
    Erzincan Martial Law Court``, may be left out)."""
    if i == 0:
        return False
    prev = seg[i - 1]
    joined = not text[prev.end : seg[i].start].strip(" \t")
    return joined and text[prev.start : prev.start + 1].isupper()

"""Choose among candidates: propose, verify, score, then the best one or none.

For each run (the loop's words that must change), :class:`CandidateChooser`:

1. *proposes* a typed generalisation of a whole named entity (spaCy's NER), lexicon
   candidates (those the collection uses in the same slot marked ``collection``), and for
   a determiner the determiners of its slot (:mod:`.propose`);
2. *verifies* each with the checks every answer passes (the caller's ``accept``: no PII
   back, no copied trigram, no doubled word, no unknown word...), then keeps only those
   whose head keeps the run's form, tagged in context (:mod:`.verify`), that the
   collection does not use for something else (:class:`~.propose.Neighbours`), and that
   keeps the run's word's pairings with its neighbours (``legal aid`` is said in many
   documents, ``legal help`` in none: :func:`.company.unpaired`);
3. *scores* the survivors in one pass of the log-probability engine (:mod:`.score`),
   refusing those that read far worse than the run;
4. *checks linkage* of the best ones in order (the caller's ``links``: the candidate's
   window against the index), taking the first that links nowhere below ``k``.

A one-word run where nothing survives may be left out, if it is a modifier the sentence
reads as well without (:mod:`.drop`: the choice's text is ``""``, its source
``generalisation``).  A run still without a choice gets none: the caller asks the LLM to
write one only for a run of several words or a name (:attr:`Choice.writer`), and
redacts the rest.  Every choice says its source, its score, how many candidates were
proposed and how many each check refused (:class:`Choice`), for the audit record.  The
loop verifies the whole text again afterwards, so the guarantee never rests on these
checks.

This module holds the chooser and its steps; :mod:`.choice` holds :class:`Choice` and the
choices that leave words out, :mod:`.company` the checks against the collection's use of
a word, and :mod:`.context` what a run's place in its text allows (a fixed expression, a
name).  Their names that callers import from here are re-exported.
"""

from __future__ import annotations

import bisect
import logging
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

from presidio_delink.candidates.choice import (
    Accept,
    Choice,
    Links,
    drop_ask,
    drop_choice,
    gloss_choice,
    refuse,
)
from presidio_delink.candidates.company import (
    PAIRED,
    PAIRING,
    by_sense,
    domain_sense,
    mark_slot,
    slot_words,
    unpaired,
    used_otherwise,
)
from presidio_delink.candidates.context import (
    FIXED_EXPRESSIONS,
    cased,
    fixed_expression,
    head_stands_for,
    in_name,
    next_word,
    widened_span,
)
from presidio_delink.candidates.drop import droppable, gloss_span
from presidio_delink.candidates.lexicon import WordNet
from presidio_delink.candidates.propose import (
    TITLES,
    Candidate,
    Neighbours,
    Word,
    collection_fillers,
    lexicon_candidates,
    register,
    relative_swap,
    swaps,
    temporal_before,
)
from presidio_delink.candidates.register import listed
from presidio_delink.candidates.score import (
    FLOOR,
    MARGIN,
    MEANING_WEIGHT,
    Ask,
    LMScorer,
    contexts,
)
from presidio_delink.candidates.verify import FormCheck, Tagger, article_reason
from presidio_delink.edits import Run
from presidio_delink.generalise import generalise, name_span, place_label
from presidio_delink.grammar import unknown_word

__all__ = [
    "CLOSED",
    "DETERMINER_KINDS",
    "FILLER",
    "FIXED_EXPRESSIONS",
    "MAX_CANDIDATES",
    "MAX_SCORED",
    "PAIRED",
    "PAIRING",
    "TITLES",
    "CandidateChooser",
    "Choice",
    "fixed_expression",
    "in_name",
    "widened_span",
]

log = logging.getLogger(__name__)

MAX_CANDIDATES = 12
#: At most this many verified candidates are scored (best prior first).
MAX_SCORED = 6
#: Penn tags of determiners: such a run may take another determiner of its own kind
#: (:data:`DETERMINER_KINDS`) that fills the same slot in ``k`` groups (``this`` -> ``that``).
#: Prepositions, conjunctions and adverbs never: measured, ``that`` -> ``by`` and ``and``
#: -> ``or`` change what the sentence says.
CLOSED = frozenset({"DT", "PDT", "WDT"})
#: The determiners that may stand in for each other: the demonstratives of one number.  A
#: quantifier or a negation never (read in a run: "no interest should be paid" became "the
#: interest should be paid"), nor an article: ``the`` and ``a`` say whether the thing is
#: known, and of 16 read in the rewrite benchmark's outputs 4 were wrong and 6 doubtful
#: (``the separate incident``, ``as the new application``, ``appealed against a
#: decision``).
DETERMINER_KINDS = (
    frozenset({"this", "that"}),
    frozenset({"these", "those"}),
)
#: The meaning prior of such a filler: below any lexicon word.
FILLER = 0.2
_WORD_RE = re.compile(r"\w+")


class CandidateChooser:
    """Propose, verify and score replacements of runs (module docstring).

    Args:
        wordnet: the lexicon (default: WordNet from its usual place, if installed).
        scorer: the log-probability scorer (default: the packaged SmolLM2).
        tagger: the spaCy tagger (default: the project's spaCy model).
        index: the collection's index, for slot fillers; None skips that source.
        k: the run's ``k``.
    """

    def __init__(
        self,
        *,
        wordnet: WordNet | None = None,
        scorer: LMScorer | None = None,
        tagger: Tagger | None = None,
        index: Any = None,
        k: int = 2,
    ) -> None:
        self.wordnet = wordnet if wordnet is not None else WordNet()
        if not self.wordnet.available:
            log.warning("WordNet not found (apt-get install wordnet-base, or set "
                        "$WORDNET_DIR): the lexicon proposes nothing")
        self.scorer = scorer if scorer is not None else LMScorer()
        self.tagger = tagger if tagger is not None else Tagger()
        self.index = index
        self.k = k
        self.form_check = FormCheck(self.tagger)
        self.neighbours = Neighbours(index) if index is not None else None
        self._dfs: dict[str, int] = {}
        # per thread: the text last chosen in and its choices, for the planner's
        # repeated questions about one pass (:meth:`choose`)
        self._memo = threading.local()

    @staticmethod
    def needs_writer(span: str, tags: Sequence[str]) -> bool:
        """Whether a run no candidate fits is worth asking the LLM to write: a run of
        several words (an idiom: ``feel unwell``, ``last date``).  One word is left out or
        redacted instead.  A common word's best stand-ins were the lexicon's, and a free
        answer for it is the likeliest to change its form or fact.  A one-word name inside
        a longer name got a category that broke the name or a wrong fact in 10 of 14
        answers read (``in the city Lubelskie Prison``, ``a Note of motion``,
        ``Advocate attorney``: ``benchmarks/results/rewrite_candidates.md``), at most of
        the LLM's cost; a whole name has its typed generalisation."""
        return len(span.split()) > 1 or len(tags) > 1

    def choose(
        self,
        text: str,
        rs: Sequence[Run],
        accept: Accept,
        links: Links | None = None,
        options: int = 1,
    ) -> dict[tuple[int, int], Choice]:
        """A :class:`Choice` per run of ``rs`` (module docstring).

        Args:
            text: the text the runs are offsets of.
            rs: the runs.
            accept: ``(run, candidate) -> None`` when the candidate passes the loop's
                checks, else why not (it must not record anything).
            links: ``(new text, start, end) -> bool``: whether the replacement at
                ``new_text[start:end]`` still links; None skips that check.
            options: how many survivors that link nowhere to keep (:attr:`Choice.options`).

        A run asked about again in the same text (the same ``str`` object, in this
        thread) gets its first choice back: the loop's planner asks about several plans
        of one pass before it rewrites one (:meth:`~presidio_delink.core.DelinkLoop.plan`),
        and the loop checks the chosen text again whatever ``accept`` said then.
        """
        if not rs:
            return {}
        _text, (toks, _ents), seen = self._memo_of(text)
        # three steps over all the runs, so that the scorer's passes hold many runs
        # (LMScorer.score_many): the cheap checks, the scoring of the survivors and the
        # linkage of the ranked, then for the runs left without one, leaving the word out
        todo: list[tuple[Run, list[Word], Choice, list[Candidate]]] = []
        asked: set[tuple[int, int]] = set()
        for r in rs:
            key = (r.start, r.end)
            if (*key, options) in seen or key in asked:
                continue
            asked.add(key)
            if gloss_span(text, r.start, r.end) == key:
                seen[(*key, options)] = gloss_choice(text, r, links)
                continue
            words, label = self._run_words(text, r)
            ch, live, words = self._proposals(text, r, words, label, accept)
            if live is None:
                seen[(*key, options)] = ch
            else:
                todo.append((r, words, ch, live))
        kept = iter(self.tagger.form_kept_many(text, [
            (r.start, r.end, [w.tag for w in words], [c.text for c in live])
            for r, words, _ch, live in todo if live
        ]))
        for i, (r, words, ch, live) in enumerate(todo):
            if live:
                ok = next(kept)
                refuse(ch, "changes the word form", sum(not k for k in ok))
                live = [c for c, k in zip(live, ok, strict=True) if k]
                fits = [c for c in live if article_reason(text, r.start, c.text) is None]
                refuse(ch, "its article would not fit the next word", len(live) - len(fits))
                live = fits
            todo[i] = (r, words, ch, self._in_company(text, r, words, ch, live))
        asks = [self._ask(text, r, live) for r, _n, _ch, live in todo if live]
        scored = iter(self.scorer.score_many(asks))
        drops = []
        for r, words, ch, live in todo:
            ranked = self._ranked(live, next(scored), ch) if live else []
            self._linked(text, r, ranked, ch, links, options)
            if not ch.options and len(words) == 1:
                drops.append((r, ch))
        asks_drop = [drop_ask(text, r, toks, ch) for r, ch in drops]
        scored_drop = iter(self.scorer.score_many([a for a in asks_drop if a is not None]))
        for (r, ch), ask in zip(drops, asks_drop, strict=True):
            if ask is not None:
                drop_choice(text, r, next(scored_drop), links, ch)
        for r, _n, ch, _live in todo:
            if ch.options:
                ch.text, ch.source, ch.score = ch.options[0]
            seen[(r.start, r.end, options)] = ch
        return {(r.start, r.end): seen[(r.start, r.end, options)] for r in rs}

    def _memo_of(self, text: str) -> tuple[str, Any, dict[tuple[int, int, int], Choice]]:
        """This thread's ``(text, its tagging, choices made in it)``, started afresh when
        ``text`` is not the text last asked about."""
        memo = getattr(self._memo, "of", None)
        if memo is None or memo[0] is not text:
            memo = (text, self.tagger.tagged(text), {})
            self._memo.of = memo
        return memo

    def proposable(
        self,
        text: str,
        spans: Sequence[tuple[int, int]],
        known: Callable[[str], bool] | None = None,
    ) -> list[bool]:
        """Whether each one-word span of ``text`` gets any proposal that the cheap checks
        keep: a generalisation, a function word's stand-in, a lexicon word of the sense
        the collection uses that the collection also uses in the same company, that keeps
        the word's pairings with its neighbours (:meth:`_unpaired`) and (with ``known``,
        the loop's ``known_word``) that it uses at all, or leaving it out
        (:func:`~.drop.droppable`'s rules, or a gloss in brackets that holds it:
        :func:`~.drop.gloss_span`), or a name's head standing for the name that holds
        it (:func:`~presidio_delink.generalise.name_span`).

        Why: the protections choose which words to change among many that would do
        (:mod:`presidio_delink.protect`); a word with a proposal may be rewritten, one
        without is redacted.  This is the first steps of :meth:`choose` only (no tagging
        of the candidate in context, no scoring, no linkage check), so a word it passes
        may still be redacted; one it refuses gets no lexicon candidate.  Cost: one
        tagging of ``text`` (shared with :meth:`choose`), a WordNet lookup per span and
        the collection company of its candidates (cached per word)."""
        toks, ents = self._memo_of(text)[1]
        at = {(a, b): i for i, (a, b, _t) in enumerate(toks)}
        label_of = {(a, b): lab for a, b, lab in ents}
        out = []
        for a, b in spans:
            i = at.get((a, b))
            if i is None or fixed_expression(text, a, b):
                out.append(False)
                continue
            w = Word(text[a:b], a, b, toks[i][2])
            label = label_of.get((a, b))
            ok = (
                (bool(swaps(w)) and self._swappable(text, w))
                or droppable(text, toks, i) is None
                or gloss_span(text, a, b) is not None
                or head_stands_for(text, a, b)
                or (w.text not in TITLES and bool(self._typed(text, a, b, label)))
                or self._lexicon_keeps(text, w, known)
            )
            out.append(ok)
        return out

    def vouches(self, text: str, start: int, end: int, new: str) -> bool:
        """Whether ``new`` is one of the words :meth:`choose` would propose for
        ``text[start:end]`` (a typed generalisation, a lexicon word of the sense the
        collection uses, a register word, a swap, a collection filler), before its checks
        and scoring.

        Why: a model asked to restate a sentence also names the words it chose for each
        phrase, and a small model's word there changes the sense about one time in five
        (``adjudicated`` -> ``found guilty``, ``interest`` -> ``fee``).  Such a word is kept
        only where a lexicon offers it for that word: the model then only picks among
        related words, as the scorer does, and nothing vouches for a word no lexicon
        offers.  A phrase the chooser does not propose for (not whole words, a fixed
        expression) is vouched for by nothing."""
        if gloss_span(text, start, end) == (start, end) or fixed_expression(text, start, end):
            return False
        r = Run(start, end, 0)
        words, label = self._run_words(text, r)
        if not _whole_words(words, text[start:end]):
            return False
        want = " ".join(new.split()).casefold()
        return any(
            " ".join(c.text.split()).casefold() == want
            for c in self._proposed(text, r, words, label)
        )

    def _run_words(self, text: str, r: Run) -> tuple[list[Word], str | None]:
        """The tagged words of a run (one word where the tagger splits one written word,
        ``cross-examined``: its last piece's tag), and the entity label of exactly that
        span; what :meth:`choose` and :meth:`vouches` propose from."""
        toks, ents = self._memo_of(text)[1]
        words = [Word(text[a:b], a, b, t) for a, b, t in toks if a < r.end and b > r.start]
        span = text[r.start : r.end]
        if words and not any(c.isspace() for c in span) and len(words) > 1:
            words = [Word(span, r.start, r.end, words[-1].tag)]
        label = next((lab for a, b, lab in ents if (a, b) == (r.start, r.end)), None)
        return words, label

    def _typed(self, text: str, start: int, end: int, label: str | None) -> list[str]:
        """:func:`~presidio_delink.generalise.generalise` of a span, told the tag of the
        word after it and, for a one-word name WordNet holds as a place, the kind of
        place (``Turkey`` -> ``a country``, not spaCy's ``a place``; ``Famagusta``, typed
        an organisation by spaCy and unknown to WordNet, keeps spaCy's type)."""
        toks = self._memo_of(text)[1][0]
        i = bisect.bisect_left(toks, (end,))
        next_tag = toks[i][2] if i < len(toks) else None
        name = text[start:end]
        kind_of = getattr(self.wordnet, "place_kind", None)  # a test's lexicon may have none
        if label is not None and kind_of is not None and _WORD_RE.fullmatch(name):
            label = place_label(label, kind_of(name))
        return generalise(text, start, end, label, next_tag=next_tag)

    def _lexicon_keeps(self, text: str, w: Word, known: Callable[[str], bool] | None) -> bool:
        """Whether a lexicon candidate of ``w`` passes the cheap checks of
        :meth:`proposable`."""
        if in_name(text, w.start):
            return False
        nxt = next_word(text, w.end)
        if listed(w.text, w.tag, nxt):
            lex = register(w, nxt)
        else:
            lex = lexicon_candidates(self.wordnet, [w])[: 2 * MAX_CANDIDATES]
        for c in self._by_sense(w.text, lex)[:MAX_CANDIDATES]:
            if known is not None and unknown_word(c.text, text, known) is not None:
                continue
            if self.neighbours is not None and self._used_otherwise(w.text, c):
                continue
            if self.index is not None and self._unpaired(text, w.start, w.end, c):
                continue
            return True
        return False

    def _proposals(
        self,
        text: str,
        r: Run,
        words: list[Word],
        label: str | None,
        accept: Accept,
    ) -> tuple[Choice, list[Candidate] | None, list[Word]]:
        """The run's choice so far, its candidates that pass the loop's checks, and its
        words (:meth:`_run_words`); no candidates (None) when the run is settled already
        (not whole words, a fixed expression)."""
        span = text[r.start : r.end]
        if not _whole_words(words, span):
            return Choice(None, None, None, 0, {"not whole words": 1},
                          writer=self.needs_writer(span, [])), None, words
        if fixed_expression(text, r.start, r.end):
            return Choice(None, None, None, 0, {"part of a fixed expression": 1},
                          writer=self.needs_writer(span, [w.tag for w in words])), None, words
        cands = self._proposed(text, r, words, label)
        ch = Choice(None, None, None, len(cands),
                    writer=self.needs_writer(span, [w.tag for w in words]))
        live = []
        for c in cands:
            why = accept(r, c.text)
            if why is None:
                live.append(c)
            else:
                ch.refused[why] = ch.refused.get(why, 0) + 1
        return ch, live, words

    def _in_company(
        self, text: str, r: Run, words: list[Word], ch: Choice, live: list[Candidate]
    ) -> list[Candidate]:
        """Of ``live`` (the word form kept), those the collection's company and pairings
        keep: at most :data:`MAX_SCORED`, best meaning first."""
        if self.neighbours is not None and len(words) == 1:
            before = len(live)
            live = [c for c in live if not self._used_otherwise(words[0].text, c)]
            refuse(ch, "the collection uses it for something else", before - len(live))
        if self.index is not None and len(words) == 1:
            before = len(live)
            live = [c for c in live if not self._unpaired(text, r.start, r.end, c)]
            refuse(ch, "the collection never says it beside its neighbour", before - len(live))
        live.sort(key=lambda c: -c.meaning)
        return live[:MAX_SCORED]

    def _linked(
        self,
        text: str,
        r: Run,
        ranked: list[Candidate],
        ch: Choice,
        links: Links | None,
        options: int,
    ) -> None:
        """``ch.options``: the first ``options`` of ``ranked`` whose replacement links
        nowhere."""
        for c in ranked:
            if links is not None:
                new = text[: r.start] + c.text + text[r.end :]
                if links(new, r.start, r.start + len(c.text)):
                    refuse(ch, "links below k", 1)
                    continue
            ch.options.append((c.text, c.source, c.score))
            if len(ch.options) >= options:
                break

    def _used_otherwise(self, word: str, c: Candidate) -> bool:
        """:func:`~.company.used_otherwise` in this chooser's collection."""
        assert self.neighbours is not None
        return used_otherwise(self.neighbours, word, c)

    def _unpaired(self, text: str, start: int, end: int, c: Candidate) -> bool:
        """:func:`~.company.unpaired` in this chooser's collection and tagging of ``text``."""
        return unpaired(text, start, end, c, self._df, self._tag_at)

    def _swappable(self, text: str, w: Word) -> bool:
        """Whether the function word ``w`` may take its :data:`~.propose.SWAPS` here: a
        relative ``which`` only after its noun (:func:`~.propose.relative_swap`), ``before``
        only where it tells time (:func:`~.propose.temporal_before`)."""
        if w.text.lower() == "before":
            return temporal_before(text, w.end)
        if w.tag == "PRP$" and next_word(text, w.end).lower() == "own":
            return False  # "of its own" is no "of the own"
        if w.tag != "WDT":
            return True
        return relative_swap(text, w.start, lambda at: self._tag_at(text, at))

    def _tag_at(self, text: str, start: int) -> str:
        """The Penn tag of the word of ``text`` that starts at ``start`` ("" if none)."""
        toks = self._memo_of(text)[1][0]
        i = bisect.bisect_left(toks, (start,))
        return toks[i][2] if i < len(toks) and toks[i][0] == start else ""

    def _df(self, phrase: str) -> int:
        """In how many documents of the index ``phrase`` occurs (cached; -1 where the
        index cannot say)."""
        n = self._dfs.get(phrase)
        if n is None:
            try:
                n = int(self.index.df(phrase))
            except Exception:  # a phrase the index's view cannot look up
                n = -1
            if len(self._dfs) >= 65536:  # threads share the cache: never read it back after
                self._dfs.clear()
            self._dfs[phrase] = n
        return n

    def _by_sense(self, word: str, lex: list[Candidate]) -> list[Candidate]:
        """:func:`~.company.by_sense` in this chooser's collection."""
        return by_sense(self.neighbours, word, lex)

    def _domain_sense(self, word: str, lex: list[Candidate]) -> int:
        """:func:`~.company.domain_sense` in this chooser's collection."""
        return domain_sense(self.neighbours, word, lex)

    def _proposed(
        self, text: str, r: Run, words: list[Word], label: str | None
    ) -> list[Candidate]:
        """Candidates, most specific first: a typed generalisation of a whole named
        entity, lexicon words (those of the slot marked), and for a closed-class word
        the words of its class that fill its slot in ``k`` groups."""
        typed = label and text[r.start : r.end].rstrip(".") not in TITLES
        cands = [
            Candidate(g, "generalisation", 1.0, "type")
            for g in (self._typed(text, r.start, r.end, label) if typed else [])
        ]
        name = name_span(text, r.start, r.end) if len(words) > 1 else None
        if name is not None and name[:2] == (r.start, r.end):
            # the whole name, its head noun standing for it ("the court")
            cands.append(Candidate(name[2], "generalisation", 1.0, "type"))
        named = [w for w in words if in_name(text, w.start)]
        nxt = next_word(text, r.end)
        if named:
            lex = []
        elif len(words) == 1 and listed(words[0].text, words[0].tag, nxt):
            lex = register(words[0], nxt)  # the register's word: WordNet's are not proposed
        else:
            lex = lexicon_candidates(self.wordnet, words)[: 2 * MAX_CANDIDATES]
        if len(words) == 1 and self._swappable(text, words[0]):
            lex = swaps(words[0]) + lex
        mark_slot(self.index, self.k, text, r, lex)
        cands += (self._by_sense(words[0].text, lex) if len(words) == 1 else lex)[:MAX_CANDIDATES]
        if len(words) == 1 and words[0].tag in CLOSED and self.index is not None:
            left, right = slot_words(self.index, text, r)
            own = words[0].text.lower()
            kind = next((k for k in DETERMINER_KINDS if own in k), frozenset())
            for f in sorted(collection_fillers(self.index, left, right, 1, self.k) & kind):
                if f != own:
                    cands.append(Candidate(cased(f, words[0].text), "collection", FILLER))
        return cands[:MAX_CANDIDATES]

    def _ask(self, text: str, r: Run, live: list[Candidate]) -> Ask:
        """What to score for the run's candidates ``live``: the run's own words, then each
        candidate, in the run's context."""
        left, right = contexts(text, r.start, r.end)
        spaced = r.start > 0 and text[r.start - 1].isspace()
        return left, [text[r.start : r.end], *[c.text for c in live]], right, spaced

    def _ranked(
        self, live: list[Candidate], scores: Sequence[float], ch: Choice
    ) -> list[Candidate]:
        """``live`` ranked by ``scores`` (those of :meth:`_ask`), best first; far worse
        readings refused."""
        base, out = scores[0], []
        for c, s in zip(live, scores[1:], strict=True):
            if s < base - MARGIN:
                refuse(ch, "reads far worse than the sentence as written", 1)
                continue
            c.score = round(s - base + MEANING_WEIGHT * c.meaning, 3)
            if c.score < FLOOR:
                refuse(ch, "reads worse than its meaning makes up for", 1)
                continue
            out.append(c)
        return sorted(out, key=lambda c: -(c.score or 0.0))


def _whole_words(words: Sequence[Word], span: str) -> bool:
    """Whether the tagged ``words`` are the whole written words of ``span``."""
    return bool(words) and "".join(w.text for w in words) == "".join(span.split())

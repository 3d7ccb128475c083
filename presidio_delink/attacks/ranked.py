"""Ranked-retrieval attack: paste the text (or one sentence) into a BM25 search engine.

Every search engine people use ranks its results by BM25 (or a close relative), so the
adversary of the threat model ("copy, paste and search") needs no rare phrase: the whole
released text as one OR query, or a single sentence of it, often brings its source to the
top.  This attack runs those searches with SQLite FTS5's BM25 (:mod:`.fts5`) against the
collection of the N-gram index, and ranks its groups.

Definitions.

* **Panel.**  The members of :data:`~presidio_delink.attacks.fts5.MEMBERS`, as the views
  are for phrases: ``fts5-unicode61`` (no stemming), ``fts5-porter`` (Porter stemmer) and
  their ``-stop`` variants (English stop words dropped).  The protection's panel,
  :data:`PROTECT_MEMBERS`, adds the corners of the ranking functions those four do not
  reach (k1 = 2, b = 1, Lucene's idf; a group scored as one concatenated document):
  :data:`~presidio_delink.attacks.fts5.EXTRA_MEMBERS`.
* **Queries.**  The text's words are the index tokenizer's tokens with their character
  offsets; redaction placeholders (``[REDACTED]``, ``<PERSON>``, ...) are no tokens, so
  they are dropped.  Words that give the same engine term (``applicant`` /
  ``applicants`` under Porter) are one query term, whose occurrences are all their
  spans.  The ``"text"`` query ORs every distinct term of the text; ``"sentence:<i>"``
  those of sentence ``i`` (:func:`presidio_delink.edits.sentence_bounds`).
* **Ranking.**  A group's score is its best document's BM25 score (for a member whose
  unit is the group, the score of the group as one document); groups with no
  matching document are not ranked; ties are ordered by group id.
* **Contributions.**  A document's score is a sum over the query's terms, each summand
  depending on its term only; :meth:`RankedAttack.contributions` gives each summand with
  the spans of the term in the text.  They add up to the score, and removing every
  occurrence of a term removes exactly its summand (the collection's statistics do not
  depend on the query).
* **Decision.**  The *lead* of a ranking is ``(s_1 - s_k) / s_1`` (``s_k = 0`` with fewer
  than ``k`` groups).  ``linked`` when some member's whole-text ranking leads by at least
  ``margin``, or some member's ranking for a sentence of at least
  :data:`MIN_SENTENCE_TERMS` terms by at least ``sentence_margin``.  The defaults are
  calibrated on held-in data only (TAB train/dev documents and Wikipedia biographies
  queried with their source removed from the collection): :data:`CALIBRATION`, written
  by ``benchmarks/ranked/calibrate.py``, holds the margins and their false-claim rates.
* **The searcher's reading.**  :meth:`PanelScores.attacker_rank` is the best rank of a
  group over each member's whole-text query and each member's best sentence (the one
  whose answer leads most): 1 when one of the answers a searcher acts on, without
  knowing the source, is the source.  That is what the audit reports as "ranked first",
  whatever the margin says; the margin decision is reported beside it.  The *oracle*
  :meth:`PanelScores.source_rank` (the best over every sentence) is reported too: with
  a query per sentence and per member, some short sentence puts almost any source first
  by chance, and a searcher cannot tell which one (on TAB's gold-masked inputs the oracle
  names the source more often than any independent engine ranks it first:
  ``benchmarks/results/bench_ranked.md``).

Cost.  The engine maps the readings the index stores, or builds them once per index and
process (:mod:`.fts5`).
:meth:`RankedAttack.scores` maps the text's words to terms once per member, then runs
``(1 + sentences) x members`` queries, each one weighted ``bincount`` over its terms'
postings, and one group maximum for all.  Both times on TAB:
``benchmarks/results/ranked_audit.md``.
"""

from __future__ import annotations

import bisect
import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from presidio_delink.attacks import scoring
from presidio_delink.attacks.base import Ranked, Verdict
from presidio_delink.attacks.fts5 import (
    ALL_MEMBERS,
    GAPPED_NGRAMS,
    MEMBERS,
    PROTECT_MEMBERS,
    STOP_WORDS,
    engine,
)
from presidio_delink.edits import sentence_bounds
from presidio_delink.errors import ConfigError
from presidio_delink.index import NgramIndex
from presidio_delink.text import Token

#: Memory for the sentence queries' scores a :class:`RankedAttack` remembers (a row of the
#: collection's size each): a review action or a protection round changes a few sentences
#: of a text that was read before, and only those are scored again.
SENTENCE_CACHE_BYTES = 64 * 2**20
#: The audit's panel (``delink``'s :class:`~presidio_delink.attacks.audit.Auditor`): the
#: four calibrated members, which alone take the margin decision, and readings that count
#: for the source's rank only.  Query-tf (a query parser keeps every pasted word) at
#: FTS5's and at Anserini's parameters; character 4-grams within and across words (a
#: fuzzy or n-gram engine); word pairs by BM25 and TF-IDF cosine (an engine that indexes
#: bigrams: pairs a text keeps in its source's order are evidence even where each pair
#: passes the phrase check); word triples by BM25, with every occurrence counted too, and
#: TF-IDF cosine over words and triples (phrase and shingle engines: held-out readers of
#: triples found sources the pairs missed); and the *kept* pairs, those no placeholder
#: separates (``bm25-word2k``, ``cosine-word2k``): the other pair readings join the words
#: on either side of a placeholder, pairs the source never held.  The audit reads more
#: than the protection decides on, because what the protection edits away its own panel
#: no longer sees.  Counts behind each choice: ``benchmarks/results/ranked_crowd.md``.
_WORD_READINGS: tuple[str, ...] = (
    *MEMBERS, "fts5-unicode61-qtf", "fts5-porter-stop-qtf", "bm25-unicode61-k09b04-qtf",
    "bm25-porter-stop-k09b04-qtf", "bm25-char4-qtf", "bm25-char4x-qtf", "bm25-word2",
    "cosine-word2", "bm25-word3", "bm25-word3-qtf", "cosine-word1", "cosine-word3",
    "bm25-word2k", "cosine-word2k",
)
#: And the *window* pairs, the words on either side of a placeholder at their distance in
#: the source (:data:`~presidio_delink.attacks.fts5.WINDOW_NGRAMS`), up to three positions
#: apart (``bm25-pair3w-qtf``, which the protection reads too: :data:`PROTECT_MEMBERS`)
#: and up to eight (``bm25-pair8w-qtf``, whole text only): every pair of words kept around
#: a redaction is one its source holds, and held-out readers of such pairs find sources
#: that every reading above misses (``benchmarks/results/ranked_crowd.md``).
AUDIT_MEMBERS: tuple[str, ...] = (*_WORD_READINGS, "bm25-pair3w-qtf", "bm25-pair8w-qtf")
#: What the fused readings combine (:mod:`~presidio_delink.attacks.fused`: the audit's,
#: and the protection's guard, :class:`~presidio_delink.protect.Protector`): every reading
#: of the audit, window pairs included (a learned ranker over window readers and others
#: finds sources that no reader alone ranks first: ``benchmarks/results/ranked_crowd.md``);
#: a model is fitted for its members.
FUSED_MEMBERS: tuple[str, ...] = AUDIT_MEMBERS

__all__ = [
    "AUDIT_MEMBERS",
    "FUSED_MEMBERS",
    "CALIBRATION",
    "DEFAULT_MARGIN",
    "DEFAULT_SENTENCE_MARGIN",
    "MEMBERS",
    "MIN_SENTENCE_TERMS",
    "PROTECT_MEMBERS",
    "PanelScores",
    "RankedAttack",
    "TermContribution",
    "lead",
]

#: Sentences with fewer distinct terms do not take part in the margin decision (their
#: rankings are still computed and count for the cautious reading).
MIN_SENTENCE_TERMS = 5

_CALIBRATION_FILE = Path(__file__).with_name("ranked_calibration.json")


def _load_calibration() -> dict[str, object]:
    with open(_CALIBRATION_FILE, encoding="utf-8") as f:
        data: dict[str, object] = json.load(f)
    return data


#: The shipped calibration (written by ``benchmarks/ranked/calibrate.py``).
CALIBRATION: dict[str, object] = _load_calibration()
#: Whole-text margin (relative lead of the best group over the k-th).
DEFAULT_MARGIN = float(CALIBRATION["margin"])  # type: ignore[arg-type]
#: Sentence margin.
DEFAULT_SENTENCE_MARGIN = float(CALIBRATION["sentence_margin"])  # type: ignore[arg-type]


@dataclass(frozen=True)
class TermContribution:
    """One query term's part of a document's BM25 score.

    Attributes:
        term: the engine's term.
        words: the text's normalised words that give it.
        spans: character spans of its occurrences in the text (within the query).
        score: its summand of the document's score (> 0).
    """

    term: str
    words: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]
    score: float


@dataclass
class _Query:
    """Distinct engine terms of a query, each with an FTS5 phrase that gives exactly that
    term, its words and the spans of its occurrences."""

    terms: dict[str, tuple[str, list[str], list[tuple[int, int]]]] = field(default_factory=dict)

    def match(self) -> str:
        """The FTS5 OR query."""
        return " OR ".join(p for p, _, _ in self.terms.values())

    def counts(self) -> list[int]:
        """Each term's occurrences in the query (what a ``qtf`` member weighs)."""
        return [len(spans) for _, _, spans in self.terms.values()]


def lead(ranking: Sequence[Ranked], k: int) -> float:
    """``(s_1 - s_k) / s_1`` for a ranking best first (0 when empty)."""
    if not ranking or ranking[0].score <= 0:
        return 0.0
    kth = ranking[k - 1].score if len(ranking) >= k else 0.0
    return (ranking[0].score - kth) / ranking[0].score


class PanelScores:
    """Every member's and query's scores for one text, by group: what rankings, the
    cautious reading and the decision are read from.

    Attributes:
        keys: ``(member, query)`` of each row, whole-text queries first.
        n_terms: distinct terms of each query.
        group_scores: ``(len(keys), n_groups)`` best-document score of each group.
        doc_scores: ``(len(keys), n_docs)`` score of each document.
    """

    def __init__(
        self,
        attack: RankedAttack,
        keys: list[tuple[str, str]],
        n_terms: list[int],
        doc_scores: np.ndarray,
    ) -> None:
        self.attack = attack
        self.keys = keys
        self.n_terms = n_terms
        self.doc_scores = doc_scores
        self.group_scores = attack.group_max(doc_scores)
        self._leads: np.ndarray | None = None
        self._rank_rows: dict[str, np.ndarray] = {}

    def row(self, member: str, query: str = "text") -> int | None:
        """Row of ``(member, query)`` (None when that query has no term)."""
        try:
            return self.keys.index((member, query))
        except ValueError:
            return None

    def ranking(self, row: int, depth: int | None = None) -> list[Ranked]:
        """Row ``row``'s matching groups, best first (the first ``depth``)."""
        return self.attack.materialise(self.group_scores[row], self.doc_scores[row], depth)

    def rankings(self, depth: int | None = None) -> dict[tuple[str, str], list[Ranked]]:
        """Every row's ranking."""
        return {key: self.ranking(i, depth) for i, key in enumerate(self.keys)}

    def rank_of(self, row: int, group: str) -> int | None:
        """1-based rank of ``group`` in row ``row`` (ties with a better-placed group count
        as found; None when no document of it matches)."""
        if group not in self._rank_rows:  # its rank in every row, in one pass, once
            self._rank_rows[group] = scoring.ranks_in_rows(
                self.group_scores, self.attack.group_ordinal(group))
        r = int(self._rank_rows[group][row])
        return r if r else None

    def source_rank(self, group: str) -> int | None:
        """The oracle rank: the best over every member and query (every sentence).  Only
        a reader who knows the source can pick the sentence that ranks it first; see
        :meth:`attacker_rank` for what a searcher reads."""
        ranks = [r for i in range(len(self.keys)) if (r := self.rank_of(i, group)) is not None]
        return min(ranks) if ranks else None

    def attacker_rows(self) -> list[int]:
        """The rows a searcher who does not know the source acts on: each member's
        whole-text query, and each member's *best sentence* (of those with at least
        :data:`MIN_SENTENCE_TERMS` terms, the one whose top group leads the ``k``-th by
        the largest share of its score: the sentence whose answer stands out)."""
        leads = self.leads()
        rows: list[int] = []
        best: dict[str, tuple[float, int]] = {}
        for i, (m, q) in enumerate(self.keys):
            if q == "text":
                rows.append(i)
            elif self.n_terms[i] >= MIN_SENTENCE_TERMS and (
                m not in best or float(leads[i]) > best[m][0]
            ):
                best[m] = (float(leads[i]), i)
        return rows + [i for _, i in best.values()]

    def attacker_rank(self, group: str) -> int | None:
        """The source's best rank over :meth:`attacker_rows` (ties count as found): 1
        when some member's whole-text answer or best-sentence answer is the source."""
        ranks = [r for i in self.attacker_rows() if (r := self.rank_of(i, group)) is not None]
        return min(ranks) if ranks else None

    def first_by(self, group: str) -> list[tuple[str, str]]:
        """The ``(member, query)`` pairs that rank ``group`` first."""
        return [key for i, key in enumerate(self.keys) if self.rank_of(i, group) == 1]

    @cached_property
    def _row_max(self) -> np.ndarray:
        """Each row's best group score (0 without groups)."""
        g = self.group_scores
        return g.max(axis=1) if g.shape[1] else np.zeros(len(g))

    def leads(self) -> np.ndarray:
        """:func:`lead` of every row (computed once: the scores do not change)."""
        if self._leads is not None:
            return self._leads
        k = self.attack.k
        g = self.group_scores
        s1 = self._row_max
        sk = scoring.kth_largest(g, k) if g.shape[1] >= k else np.zeros(len(g))
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(s1 > 0, (s1 - sk) / np.where(s1 > 0, s1, 1.0), 0.0)
        out.setflags(write=False)
        self._leads = out
        return out

    def claim(self) -> tuple[str, tuple[str, str], float] | None:
        """The margin decision: ``(group, (member, query), lead)`` of the largest lead
        over its margin (whole text first on ties), or None.  Only the members the margins
        are calibrated on (:data:`MEMBERS`) decide, when the panel holds any of them."""
        att = self.attack
        deciding = {m for m in att.members if m in MEMBERS} or set(att.members)
        best: tuple[float, int, int] | None = None
        for i, ((m, q), ld) in enumerate(zip(self.keys, self.leads().tolist(), strict=True)):
            if m not in deciding:
                continue
            if q == "text":
                ok = ld >= att.margin
            else:
                ok = ld >= att.sentence_margin and self.n_terms[i] >= MIN_SENTENCE_TERMS
            if ok and (best is None or (ld, q == "text") > (best[0], best[1] == 1)):
                best = (ld, int(q == "text"), i)
        if best is None:
            return None
        i = best[2]
        top = int(np.argmax(self.group_scores[i]))
        return att.group_names[top], self.keys[i], best[0]

    def combined(self, depth: int | None = None) -> list[Ranked]:
        """The cautious combined ranking: each group scored by its best relative score
        ``s / s_1`` over every row (1.0: some member ranks it first for the whole text or
        a sentence); ties broken by the best relative whole-text score, then group id.
        The document is the group's best whole-text hit."""
        g = self.group_scores
        if not len(g):
            return []
        text_rows = [i for i, (_m, q) in enumerate(self.keys) if q == "text"]
        best, best_text = scoring.relative_maxima(g, self._row_max, text_rows)
        att = self.attack
        hit = np.flatnonzero(best > 0)
        order = hit[np.lexsort((att.name_rank[hit], -best_text[hit], -best[hit]))]
        if depth is not None:
            order = order[:depth]
        # a group's best document: no maxima needed where each document is its own group
        doc_best = (self.doc_scores[0] if att.own_groups or not len(order)
                    else scoring.rows_max(self.doc_scores, text_rows))
        return [
            Ranked(att.group_names[gi], float(best[gi]), att.best_doc(gi, doc_best))
            for gi in order.tolist()
        ]


class RankedAttack:
    """Rank the collection's groups by BM25 for the text and each of its sentences, under
    every member of a panel (see the module docstring).

    Args:
        index: the collection's N-gram index (its documents are the engine's; its
            tokenizer gives the query words and their offsets).
        k: the decision compares the best group with the ``k``-th (>= 2).
        members: panel member names, of
            :data:`~presidio_delink.attacks.fts5.ALL_MEMBERS` (default: the audit's four,
            :data:`MEMBERS`, on which the margins are calibrated; the protection uses
            :data:`PROTECT_MEMBERS`).
        margin: whole-text decision margin in (0, 1] (default: calibrated).
        sentence_margin: sentence decision margin in (0, 1] (default: calibrated).
    """

    name = "ranked"

    def __init__(
        self,
        index: NgramIndex,
        k: int = 2,
        members: Sequence[str] | None = None,
        margin: float | None = None,
        *,
        sentence_margin: float | None = None,
    ) -> None:
        if not isinstance(k, int) or k < 2:
            raise ConfigError(f"k must be an integer >= 2, got {k!r}")
        chosen = tuple(dict.fromkeys(members)) if members is not None else tuple(MEMBERS)
        bad = [m for m in chosen if m not in ALL_MEMBERS]
        if bad or not chosen:
            raise ConfigError(
                f"unknown ranked-search members {bad}; choose from {list(ALL_MEMBERS)}"
            )
        self.margin = DEFAULT_MARGIN if margin is None else float(margin)
        self.sentence_margin = (
            DEFAULT_SENTENCE_MARGIN if sentence_margin is None else float(sentence_margin)
        )
        if not 0 < self.margin <= 1 or not 0 < self.sentence_margin <= 1:
            raise ConfigError("margin and sentence_margin must lie in (0, 1]")
        self.index = index
        self.k = k
        self.members: tuple[str, ...] = chosen
        self._groups = groups = scoring.group_table(index)  # one per index and process
        self.group_names: list[str] = groups.names
        self.n_groups = groups.n_groups
        self.group_index = groups.of
        self.own_groups = groups.own  # each document its own group
        self._ids = index.doc_ids
        self._engine = engine(index, chosen)
        # a sentence query's scores, by member, terms and counts (read-only arrays): a
        # text read again with a few sentences changed (a review action, a protection
        # round) scores only those again
        self._sentences: OrderedDict[tuple[object, ...], np.ndarray] = OrderedDict()
        self._sentences_cap = SENTENCE_CACHE_BYTES // (8 * max(1, index.n_docs))

    # -- helpers for PanelScores ------------------------------------------------------
    @property
    def name_rank(self) -> np.ndarray:
        """Each group ordinal's place among the names in code-point order (breaks ties)."""
        return self._groups.name_rank

    def has_group(self, group: str) -> bool:
        """Whether the index has this group."""
        return self._groups.find(group) is not None

    def group_ordinal(self, group: str) -> int:
        """Ordinal of a group id (ConfigError when the index has no such group)."""
        got = self._groups.find(group)
        if got is None:
            raise ConfigError(f"group {group!r} is not in the index")
        return got

    def best_doc(self, gi: int, doc_scores: np.ndarray) -> str:
        """Id of group ``gi``'s best-scoring document (the first on ties)."""
        if self._groups.own:
            return self._ids[gi]
        docs = self._groups.docs_of(gi)
        return self._ids[max(docs, key=lambda d: (doc_scores[d], -d))]

    def group_max(self, doc_scores: np.ndarray) -> np.ndarray:
        """``(rows, n_groups)``: each group's best document score, per row (not written to)."""
        return self._groups.group_max(doc_scores)

    def materialise(
        self, group_scores: np.ndarray, doc_scores: np.ndarray, depth: int | None
    ) -> list[Ranked]:
        """Matching groups best first (ties: group id) as :class:`Ranked`."""
        hit = np.flatnonzero(group_scores > 0)
        order = hit[np.lexsort((self.name_rank[hit], -group_scores[hit]))]
        if depth is not None:
            order = order[:depth]
        return [
            Ranked(self.group_names[gi], float(group_scores[gi]), self.best_doc(gi, doc_scores))
            for gi in order.tolist()
        ]

    # -- queries --------------------------------------------------------------------
    def queries(self, text: str) -> dict[str, tuple[int, int]]:
        """Query names and their character spans: ``"text"`` and ``"sentence:<i>"``."""
        out = {"text": (0, len(text))}
        for i, b in enumerate(sentence_bounds(text)):
            out[f"sentence:{i}"] = b
        return out

    def _query(self, member: str, text: str, query: str) -> _Query:
        tok, stop = ALL_MEMBERS[member].tokenizer, ALL_MEMBERS[member].stop
        tokens = self._tokens(text, "text")
        if stop:
            tokens = [t for t in tokens if t.word not in STOP_WORDS]
        # the whole text's terms, then the query's tokens (a word's grams across words
        # run on into the next sentence, as in :meth:`scores`)
        mapped = self._engine.token_terms(
            tok, [t.word for t in tokens], self._gaps(text, tokens, tok))
        if query != "text":
            a, b = self._bounds(text, query)
            keep = [i for i, t in enumerate(tokens) if a <= t.start and t.end <= b]
            tokens, mapped = [tokens[i] for i in keep], [mapped[i] for i in keep]
        q = _Query()
        for t, key in zip(tokens, mapped, strict=True):
            for term in key:
                got = q.terms.get(term)
                if got is None:
                    # the word itself when it gives just this term (FTS5 stems the query
                    # again; a stem is not always its own stem), else the term
                    word = t.word if len(key) == 1 else term
                    q.terms[term] = ('"' + word.replace('"', '""') + '"', [t.word], [])
                    got = q.terms[term]
                if t.word not in got[1]:
                    got[1].append(t.word)
                got[2].append((t.start, t.end))
        return q

    def _gaps(self, text: str, toks: Sequence[Token], tok: str) -> list[bool] | None:
        """Per token of ``toks`` (a text's, in order), whether a redaction placeholder
        stands between it and the token before it: what the tokenizer ``tok`` reads when
        it is one of :data:`~presidio_delink.attacks.fts5.GAPPED_NGRAMS` (None for the
        others, and where the text holds no placeholder)."""
        if tok not in GAPPED_NGRAMS:
            return None
        spans = self.index.tokenizer.placeholder_spans(text)
        if not spans:
            return None
        starts = [a for a, _ in spans]
        out = []
        prev_end = 0
        for t in toks:
            j = bisect.bisect_left(starts, prev_end)
            out.append(j < len(spans) and spans[j][1] <= t.start)
            prev_end = t.end
        return out

    def _bounds(self, text: str, query: str) -> tuple[int, int]:
        bounds = self.queries(text).get(query)
        if bounds is None:
            raise ConfigError(f"unknown query {query!r}: 'text' or 'sentence:<i>'")
        return bounds

    def _tokens(self, text: str, query: str) -> list[Token]:
        toks = self.index.tokenizer.tokens(text)
        if query == "text":
            return toks
        a, b = self._bounds(text, query)
        return [t for t in toks if a <= t.start and t.end <= b]

    def _check(self, member: str) -> None:
        if member not in self.members:
            raise ConfigError(f"{member!r} is not a member of this panel {list(self.members)}")

    # -- public ---------------------------------------------------------------------
    def _sentence_scores(self, member: str, terms: list[str], counts: list[int]) -> np.ndarray:
        """The engine's scores of one sentence query, remembered (at most
        :data:`SENTENCE_CACHE_BYTES` of them, the least recently read dropped first).
        Called with the engine's lock held."""
        key = (member, *terms, None, *counts)
        got = self._sentences.get(key)
        if got is not None:
            self._sentences.move_to_end(key)
            return got
        got = self._engine.scores(member, terms, counts)
        if self._sentences_cap:
            got.setflags(write=False)
            self._sentences[key] = got
            while len(self._sentences) > self._sentences_cap:
                self._sentences.popitem(last=False)
        return got

    def scores(self, text: str, sentences: bool = True) -> PanelScores:
        """Every member's scores for the whole text and (unless ``sentences`` is False)
        each sentence; queries without a term are left out.

        Per member the text's words are mapped to terms once; each query is then one
        weighted ``bincount`` of its terms' postings."""
        toks = self.index.tokenizer.tokens(text)
        bounds = sentence_bounds(text) if sentences else []
        starts = np.asarray([a for a, _ in bounds], dtype=np.int64)
        ends = np.asarray([b for _, b in bounds], dtype=np.int64)
        sent_of: list[int] = []
        for t in toks:  # the sentence holding the token, or -1 (across two bounds)
            j = int(np.searchsorted(starts, t.start, side="right")) - 1 if len(starts) else -1
            sent_of.append(j if j >= 0 and t.end <= ends[j] else -1)
        per: dict[str, tuple[np.ndarray, dict[int, np.ndarray], np.ndarray, int]] = {}
        with self._engine.lock:
            for m in self.members:
                tok, stop = ALL_MEMBERS[m].tokenizer, ALL_MEMBERS[m].stop
                sel = [i for i, t in enumerate(toks) if not (stop and t.word in STOP_WORDS)]
                words = [toks[i] for i in sel]
                mapped = self._engine.token_terms(
                    tok, [t.word for t in words], self._gaps(text, words, tok))
                term_ix: dict[str, int] = {}
                pairs = [
                    (sent_of[i], term_ix.setdefault(term, len(term_ix)))
                    for i, key in zip(sel, mapped, strict=True)
                    for term in key
                ]
                if not term_ix:
                    continue
                terms = list(term_ix)
                in_sent: list[dict[int, int]] = [{} for _ in bounds]
                occ = [0] * len(terms)  # occurrences (a qtf member weighs them)
                for j, ti in pairs:
                    occ[ti] += 1
                    if j >= 0:
                        in_sent[j][ti] = in_sent[j].get(ti, 0) + 1
                counts = np.asarray([len(x) for x in in_sent], dtype=np.int64)
                # the whole text first: its terms hold every sentence's, so a reading
                # that weighs postings when first asked (over segments) reads them once
                text_scores = self._engine.scores(m, terms, occ)
                sent_scores = {
                    j: self._sentence_scores(m, [terms[ti] for ti in tis], list(tis.values()))
                    for j, tis in enumerate(in_sent) if tis
                }
                per[m] = (text_scores, sent_scores, counts, len(term_ix))
        keys: list[tuple[str, str]] = []
        n_terms: list[int] = []
        rows: list[np.ndarray] = []
        for m, (text_scores, _s, _c, n) in per.items():
            keys.append((m, "text"))
            n_terms.append(n)
            rows.append(text_scores)
        for j in range(len(bounds)):
            for m, (_t, sent_scores, counts, _n) in per.items():
                if counts[j] > 0:
                    keys.append((m, f"sentence:{j}"))
                    n_terms.append(int(counts[j]))
                    rows.append(sent_scores[j])
        mat = np.vstack(rows) if rows else np.zeros((0, self.index.n_docs))
        return PanelScores(self, keys, n_terms, mat)

    def rankings(self, text: str, depth: int | None = 100) -> dict[tuple[str, str], list[Ranked]]:
        """``{(member, query): ranking}`` for the whole text (``query == "text"``) and
        every sentence (``"sentence:<i>"``), each the first ``depth`` groups."""
        return self.scores(text).rankings(depth)

    def ranking(self, text: str, member: str, query: str = "text") -> list[Ranked]:
        """Every matching group for one member and one query, best first."""
        self._check(member)
        q = self._query(member, text, query)
        if not q.terms:
            return []
        with self._engine.lock:
            ds = self._engine.scores(member, list(q.terms), q.counts())
        return self.materialise(self.group_max(ds[None, :])[0], ds, None)

    def n_terms(self, text: str, member: str, query: str = "text") -> int:
        """Distinct terms of one member's query."""
        self._check(member)
        return len(self._query(member, text, query).terms)

    def rank(self, text: str, top: int = 10) -> list[Ranked]:
        """The panel's cautious combined ranking (:meth:`PanelScores.combined`)."""
        return self.scores(text).combined(top)

    def verdict(self, text: str, top: int = 10) -> Verdict:
        """Combined ranking plus the margin decision; a claimed group comes first."""
        ps = self.scores(text)
        ranking = ps.combined()
        claim = ps.claim()
        if claim is not None:
            ranking = [r for r in ranking if r.group == claim[0]] + [
                r for r in ranking if r.group != claim[0]
            ]
        return Verdict(self.name, tuple(ranking[:top]), claim is not None)

    def contributions(
        self,
        text: str,
        member: str,
        group: str | None = None,
        *,
        query: str = "text",
        doc: int | None = None,
    ) -> list[TermContribution]:
        """Each query term's BM25 summand for one document, largest first.

        Args:
            text: the released text.
            member: the panel member.
            group: explain this group's best document for the member and query.
            query: ``"text"`` or ``"sentence:<i>"``.
            doc: explain this document ordinal instead.

        Returns:
            One :class:`TermContribution` per query term the document holds; the scores
            add up to :meth:`doc_score`.  Empty when the document does not match.
        """
        self._check(member)
        q = self._query(member, text, query)
        if not q.terms:
            return []
        terms = list(q.terms)
        counts = q.counts()
        with self._engine.lock:
            if doc is None:
                if group is None:
                    raise ConfigError("give a group or a document ordinal")
                ds = self._engine.scores(member, terms, counts)
                mine = [d for d in self._groups.docs_of(self.group_ordinal(group)) if ds[d] > 0]
                if not mine:
                    return []
                doc = max(mine, key=lambda d: (ds[d], -d))
            parts = self._engine.summands(member, terms, doc, counts)
        out = [
            TermContribution(t, tuple(q.terms[t][1]), tuple(q.terms[t][2]), s)
            for t, s in zip(terms, parts, strict=True)
            if s > 0
        ]
        out.sort(key=lambda c: (-c.score, c.term))
        return out

    def doc_score(self, text: str, member: str, doc: int, query: str = "text") -> float:
        """Document ordinal ``doc``'s score for one member's query."""
        self._check(member)
        q = self._query(member, text, query)
        if not q.terms:
            return 0.0
        with self._engine.lock:
            return float(self._engine.scores(member, list(q.terms), q.counts())[doc])

    def fts5_scores(self, text: str, member: str, query: str = "text") -> dict[int, float]:
        """``{document ordinal: score}`` computed by FTS5's own ``bm25()`` over the
        member's FTS5 table of the collection (built on first call): the check that the
        postings reproduce the engine.  Tens of ms per whole-text query."""
        self._check(member)
        q = self._query(member, text, query)
        if not q.terms:
            return {}
        with self._engine.lock:
            return dict(self._engine.fts5_search(member, q.match()))

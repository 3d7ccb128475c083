"""`--protect ranked`: remove the terms that give the source's group its BM25 lead.

A linkage-free output still shares most of its vocabulary with its source, and BM25 (every
search engine's ranking) adds up one contribution per query term: pasting the whole text,
or one sentence of it, as an OR query puts the source's case first.  This module edits the
text until no member of the ranked attack's panel (:mod:`presidio_delink.attacks.ranked`:
tokenisers with and without stemming and stop words; in the protection's panel also
BM25 at k1 = 2 / b = 1 with Lucene's idf, and a group scored as one concatenated
document) ranks the source's group first, for the whole text and for each sentence.

Definitions.  For a query ``Q`` (the whole text, or one sentence) and a panel member ``m``,
``s(Q)`` is the score of the source group (its best document), ``c(Q)`` that of the ``k``-th
group (the best other one when ``k = 2``).  BM25 is a sum over the query's terms ``t`` of a
per-document weight ``w_d(t)``, so ``s(Q) = sum_t w_src(t)`` and ``c(Q) = sum_t w_comp(t)``
(:meth:`RankedAttack.contributions`).  Every occurrence of a term in ``Q`` is the term: a
term leaves the query only when all its occurrences in ``Q`` are edited, at ``n_t`` words.

Goal per (member, query): ``s(Q) <= (1 - safety) * c(Q)`` and ``s(Q) < c(Q)``, or the source
is not ranked at all.  The safety margin is there for the ranking functions the defence was
not tuned to (other engines, ``k1``/``b``, tokenisers, idf variants, group models): their
scores differ from the panel's by a few per cent to tens of per cent, so a source left just
below its competitor under the panel comes back first under some of them.  The panel
holds the corners of that space (``PROTECT_MEMBERS``: both group models, FTS5's and a
strong-tf, full-length-normalisation parameterisation), so the margin covers only what
lies between and beyond them.

Method.  Each round collects the failing (member, query) pairs.  The whole text's goals
are covered by :data:`DEFAULT_COVER`: the joint cover (:func:`_joint_cover`) takes, for
every failing member at once, the words that cover the most of the members' deficits per
word, half the estimated deficit a round; the ``"worst"`` cover fixes the worst
:data:`DEFAULT_WHOLE_PER_ROUND` members' goals (largest ratio ``s / c`` first), each by
the per-pair cover below.  Once the whole text holds under every member, each failing
sentence is fixed (its worst member).  Then the panel runs again.  Fixing part of the
deficit per round and scoring again,
rather than every failing member at once, is what keeps the edits few: members share
most of their evidence, so the words one member's cover takes lower the others' scores
too, and a cover chosen for each member alone takes the union of what each needs (far
more words on held-in TAB train/dev texts: ``benchmarks/results/ranked_crowd.md``).  For
a pair, the terms
are taken in decreasing order of net lead per word, ``(w_src(t) - (1 - safety) w_comp(t)) /
n_t``, until the estimated deficit ``s - (1 - safety) c`` is gone (a greedy knapsack cover:
optimal in the fractional relaxation; whole terms, since an occurrence left behind keeps the
term's weight).  The chosen terms' occurrences in the query (the whole text, or the sentence)
are edited by :func:`edit_spans` (redaction; a pluggable editor may rewrite them, verified
like any edit); whatever an edit made linkable is redacted by the pipeline's rule; then the
panel runs again (the competitor and the source's best document can change).

Cost: one round is one run of the panel over the text and its sentences plus one linkage
check; a TAB document takes a handful of rounds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from presidio_delink.attacks.fts5 import ALL_MEMBERS, CHAR_NGRAMS, SPANNING_NGRAMS
from presidio_delink.errors import ConfigError
from presidio_delink.index import NgramIndex
from presidio_delink.protect.common import (
    DEFAULT_REWRITE_ROUNDS,
    Editor,
    ProtectJob,
    ProtectOutcome,
    edit_spans,
)

log = logging.getLogger(__name__)

__all__ = [
    "COVERS", "DEFAULT_COVER", "DEFAULT_JOINT_STEP", "DEFAULT_RANKED_SAFETY",
    "DEFAULT_REWRITE_ROUNDS", "DEFAULT_SENTENCE_CROWD", "DEFAULT_SENTENCE_SAFETY",
    "DEFAULT_WHOLE_PER_ROUND", "Editor", "ProtectJob",
    "edit_spans", "protect_ranked",
]

#: Relative margin below the competitor for the whole text (see the module docstring):
#: the source at most 85 % of the ``crowd``-th best other group's score, under every
#: member of the protection's panel (``PROTECT_MEMBERS``).  Chosen on held-in data only,
#: with the panel, the crowd and the cover (``benchmarks/ranked/calibrate_crowd.py``, runs
#: in ``benchmarks/results/ranked/calibrate_panel.json`` and ``calibrate_joint.json``: 40 TAB
#: train/dev texts, a held-in family of 48 BM25 variants of its own, word and character
#: n-gram, distinct and repeated query terms): the cheapest setting at which no family
#: member ranks the source first for more than 5 % of the texts nor in its top 5 for more
#: than 20 % (the joint cover at crowd 5; the rows: ``benchmarks/results/ranked_crowd.md``).
DEFAULT_RANKED_SAFETY = 0.15
#: For sentences: strictly below the best other group (the same calibration: at the
#: whole-text margin above, no member's best sentence finds more than 1 of 60).
DEFAULT_SENTENCE_SAFETY = 0.0
#: The crowd rule for sentence queries: the ``sentence_crowd``-th best other group is
#: the competitor (sentences are short: most hold few rare terms, and demanding a crowd
#: for each costs words the whole text does not need; chosen on held-in data with
#: ``benchmarks/ranked/calibrate_crowd.py``).
DEFAULT_SENTENCE_CROWD = 1
#: Whole-text goals fixed per round (the worst members first; see the module docstring).
#: Chosen on held-in data (12 TAB train/dev texts, the shipped panel at crowd 2 and margin
#: 0.05: one per round 56.6 % of words, two 55.9 %, every failing member at once 71.6 %;
#: the goal held for every text in each).  The cover of every member at once overshoots
#: the goal, and that overshoot bought robustness a margin buys for fewer words: at the
#: shipped margin and crowd the held-in family's worst top 5 is 5 of 40 at 59.2 % of words,
#: against 8 of 40 at 71.3 % for every member at once at crowd 2.
DEFAULT_WHOLE_PER_ROUND = 2
#: The whole-text covers (see :func:`protect_ranked`).
COVERS = ("joint", "worst")
#: The default cover: chosen on held-in data with the crowd and margin (above).  At the
#: same crowd and margin the joint cover takes fewer words than the worst-first one and
#: leaves its panel less slack, so it needs the larger crowd for the same held-in finds.
DEFAULT_COVER = "joint"
#: The share of each member's estimated deficit one round of the joint cover covers (on
#: a held-in text, 1.0 took 444 of its 568 words where 0.5 took 262 and worst-first 258:
#: the estimate holds the competitor fixed and errs high).
DEFAULT_JOINT_STEP = 0.5


#: ``spans -> {span: cost}`` (None: every word costs one): :meth:`ProtectJob.costs`
#: of the round.
CostOf = Callable[[Sequence[tuple[int, int]]], "dict[tuple[int, int], float] | None"]


def _costs(
    cost_of: CostOf | None, spans: Sequence[tuple[int, int]]
) -> dict[tuple[int, int], float]:
    got = cost_of(spans) if cost_of is not None and spans else None
    return got or {}


@dataclass(frozen=True)
class _Failure:
    member: str
    query: str
    span: tuple[int, int]  # the query's characters in the text
    source: float
    competitor: str
    score: float  # the competitor's score


def _table(
    attack: Any, text: str, group: str, crowd: int = 1, sentence_crowd: int = 1
) -> list[tuple[str, str, float, str, float, int]]:
    """``(member, query, source score, competitor, its score, terms)`` per query, from one
    :meth:`RankedAttack.scores` pass (group maxima as one matrix).  The competitor is
    the ``crowd``-th best other group for the whole text (``sentence_crowd``-th for a
    sentence): the crowd rule needs that many other groups above the source."""
    ps = attack.scores(text)
    g = ps.group_scores
    if not len(ps.keys):
        return []
    gi = attack.group_ordinal(group) if attack.has_group(group) else -1
    src = g[:, gi] if gi >= 0 else np.zeros(len(ps.keys))
    other = g.copy()
    if gi >= 0:
        other[:, gi] = -1.0
    depth = np.asarray(
        [crowd if q == "text" else sentence_crowd for _m, q in ps.keys], dtype=np.int64
    )
    depth = np.minimum(depth, other.shape[1])
    if int(depth.max()) == 1:
        comp = np.argmax(other, axis=1)
    else:  # the depth-th largest of each row (stable: ties by ordinal)
        order = np.argsort(-other, axis=1, kind="stable")
        comp = order[np.arange(len(depth)), depth - 1]
    best = other[np.arange(len(comp)), comp]
    return [
        (m, q, float(src[r]), attack.group_names[comp[r]] if best[r] > 0 else "",
         max(0.0, float(best[r])), ps.n_terms[r])
        for r, (m, q) in enumerate(ps.keys)
    ]


def _failures(
    attack: Any, text: str, group: str, safety: float, sentence_safety: float, min_terms: int,
    crowd: int = 1, sentence_crowd: int = 1,
) -> list[_Failure]:
    """The (member, query) pairs whose goal fails, worst first; the whole text before the
    sentences (an edit for the whole text also lowers the sentences' scores)."""
    spans = attack.queries(text)
    out: list[tuple[int, float, _Failure]] = []
    for member, query, src, comp, c, n_terms in _table(
        attack, text, group, crowd, sentence_crowd
    ):
        if src <= 0:
            continue
        whole = query == "text"
        m = safety if whole else sentence_safety
        if src <= (1.0 - m) * c and src < c:
            continue
        if not whole and n_terms < min_terms:
            continue
        f = _Failure(member, query, spans[query], src, comp, c)
        out.append((0 if whole else 1, -src / max(c, 1e-12), f))
    out.sort(key=lambda x: (x[0], x[1]))
    return [f for _, _, f in out]


def _choose(
    attack: Any, text: str, group: str, f: _Failure, margin: float, taken: set[tuple[int, int]],
    cost_of: CostOf | None = None,
) -> list[tuple[int, int]]:
    """Spans (word occurrences) to edit so that the source falls ``margin`` below the
    competitor for one (member, query): whole terms by net lead per unit of cost
    (``cost_of``: the words' costs, :meth:`ProtectJob.costs`; None: one a word),
    greedily."""
    mine = attack.contributions(text, f.member, group, query=f.query)
    theirs_all = (
        attack.contributions(text, f.member, f.competitor, query=f.query) if f.competitor
        else []
    )
    theirs = {c.term: c.score for c in theirs_all}
    deficit = f.source - (1.0 - margin) * f.score
    cost = _costs(cost_of, [sp for c in mine for sp in c.spans])
    if ALL_MEMBERS[f.member].qtf:
        return _choose_occurrences(mine, theirs_all, deficit, margin, taken, cost)
    cands = []
    for c in mine:
        net = c.score - (1.0 - margin) * theirs.get(c.term, 0.0)
        left = [s for s in c.spans if s not in taken]
        if not left:  # already edited in this round: its summand is gone
            deficit -= net
        elif net > 0:
            cands.append((net / sum(cost.get(s, 1.0) for s in left), net, left))
    cands.sort(key=lambda x: -x[0])
    chosen: list[tuple[int, int]] = []
    for _, net, left in cands:
        if deficit < 0:
            break
        chosen += left
        deficit -= net
    return chosen


def _choose_occurrences(
    mine: Sequence[Any], theirs: Sequence[Any], deficit: float, margin: float,
    taken: set[tuple[int, int]], cost: dict[tuple[int, int], float] | None = None,
) -> list[tuple[int, int]]:
    """The same for a member that counts every occurrence of a term in the query
    (``qtf``): its score is linear in the occurrences, so each word occurrence has its
    own net lead, the sum over the terms it gives of ``(w_src - (1 - margin) w_comp)``
    per occurrence, and the cover takes single occurrences (a term's occurrences beyond
    what the deficit needs stay), most net lead per unit of ``cost`` first."""
    cost = cost or {}
    net: dict[tuple[int, int], float] = {}
    for cs, factor in ((mine, 1.0), (theirs, -(1.0 - margin))):
        for c in cs:
            share = factor * c.score / len(c.spans)
            for sp in c.spans:
                net[sp] = net.get(sp, 0.0) + share
    for sp in taken:  # edited in this round already: its part is gone
        deficit -= net.pop(sp, 0.0)
    chosen: list[tuple[int, int]] = []
    for sp, v in sorted(net.items(), key=lambda x: (-x[1] / cost.get(x[0], 1.0), x[0])):
        if deficit < 0 or v <= 0:  # cost > 0: no gain comes after the first v <= 0
            break
        chosen.append(sp)
        deficit -= v
    return chosen


def _joint_cover(
    attack: Any, text: str, group: str, fails: Sequence[_Failure], margin: float,
    step: float = 1.0, cost_of: CostOf | None = None,
) -> list[tuple[int, int]]:
    """Word occurrences that bring every failing member's whole-text goal nearer at once.

    Why: fixing the worst members one at a time takes, for each, the words that lead
    most under it; a word that leads under every member is worth more than one that
    leads under one, and a cover of all of them at once can weigh that.

    The text's occurrences fall into *units*: the occurrences that share a term under
    some member that counts a term once (``applicant`` and ``applicants`` under Porter,
    every occurrence of a word under ``unicode61``) form one unit, since such a term
    leaves the query only with all of them.  Each unit has, per member, its estimated
    gain: for a distinct-term member the net leads ``w_src - (1 - margin) w_comp`` of
    the terms it holds; for a ``qtf`` member the per-occurrence shares of its
    occurrences (:func:`_choose_occurrences`; so too a character n-gram member's, whose
    gram occurs in many different words).  Greedy: take the unit with the most
    deficit covered per word, the deficit covered summed over members as a share of each
    member's own deficit (a unit's gain beyond what a member still lacks counts nothing;
    a negative gain counts where it opens a deficit), until every member's estimated
    deficit is down to ``1 - step`` of what it was, or no unit helps.  The estimate
    holds the competitor fixed, while edits lower the other groups too and another
    group can take its place: it errs on the side of taking too much, so a round
    covers a ``step`` of the deficit and the panel scores the text again.  A unit's
    words are counted at their cost (``cost_of``, :meth:`ProtectJob.costs`: a word the
    editor may rewrite costs less than one it would redact; None: one a word)."""
    if not fails:
        return []
    parent: dict[tuple[int, int], tuple[int, int]] = {}

    def find(x: tuple[int, int]) -> tuple[int, int]:
        root = x
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[x] != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    parts: list[tuple[list[tuple[tuple[tuple[int, int], ...], float]], bool]] = []
    deficits = []
    for f in fails:
        mine = attack.contributions(text, f.member, group, query=f.query)
        theirs = (
            attack.contributions(text, f.member, f.competitor, query=f.query)
            if f.competitor else []
        )
        spec = ALL_MEMBERS[f.member]
        # a distinct-term member over words ties its term's occurrences into one unit;
        # a character n-gram's occurrences run through many different words (ties
        # would join most of the text), so its terms count per occurrence, as qtf's do
        qtf = spec.qtf or spec.tokenizer in CHAR_NGRAMS or spec.tokenizer in SPANNING_NGRAMS
        net: dict[str, tuple[tuple[tuple[int, int], ...], float]] = {}
        for cs, factor in ((mine, 1.0), (theirs, -(1.0 - margin))):
            for c in cs:
                spans, v = net.get(c.term, (c.spans, 0.0))
                net[c.term] = (spans, v + factor * c.score)
        for spans, _v in net.values():
            for sp in spans:
                find(sp)
            if not qtf:
                for sp in spans[1:]:
                    ra, rb = find(spans[0]), find(sp)
                    if ra != rb:
                        parent[rb] = ra
        parts.append((list(net.values()), qtf))
        # the goal: s <= (1 - margin) c and s < c
        deficits.append(max(f.source - (1.0 - margin) * f.score, f.source - f.score + 1e-9))
    units: dict[tuple[int, int], int] = {}
    unit_spans: list[list[tuple[int, int]]] = []
    for sp in sorted(parent):
        r = find(sp)
        if r not in units:
            units[r] = len(unit_spans)
            unit_spans.append([])
        unit_spans[units[r]].append(sp)
    gain = np.zeros((len(unit_spans), len(fails)))
    for j, (terms, qtf) in enumerate(parts):
        for spans, v in terms:
            if qtf:
                for sp in spans:
                    gain[units[find(sp)], j] += v / len(spans)
            else:
                gain[units[find(spans[0])], j] += v
    d0 = np.asarray(deficits)
    d = d0.copy()
    w = _costs(cost_of, sorted(parent))
    cost = np.asarray(
        [sum(w.get(sp, 1.0) for sp in x) for x in unit_spans], dtype=np.float64
    )
    left = np.ones(len(unit_spans), dtype=bool)
    chosen: list[tuple[int, int]] = []
    target = np.where(d0 > 0, d0 * (1.0 - step), 0.0)
    while (d > target).any() and left.any():
        covered = (np.maximum(d, 0.0)[None, :] - np.maximum(d[None, :] - gain, 0.0)) / d0
        value = np.where(left, covered.sum(axis=1) / cost, -np.inf)
        u = int(np.argmax(value))
        if value[u] <= 0:
            break
        left[u] = False
        d -= gain[u]
        chosen += unit_spans[u]
    return chosen


def protect_ranked(
    job: ProtectJob,
    attack: Any,
    *,
    safety: float = DEFAULT_RANKED_SAFETY,
    sentence_safety: float | None = None,
    min_terms: int | None = None,
    max_rounds: int = 80,
    crowd: int = 1,
    sentence_crowd: int | None = None,
    whole_per_round: int = DEFAULT_WHOLE_PER_ROUND,
    cover: str = DEFAULT_COVER,
    joint_step: float = DEFAULT_JOINT_STEP,
) -> ProtectOutcome:
    """Edit the linkage-free ``job.text`` until every member of ``attack`` (a
    :class:`~presidio_delink.attacks.ranked.RankedAttack` over the delinker's index) puts
    at least ``crowd`` other groups above ``job.group``, by ``safety``, for the whole text
    (``sentence_crowd`` for any sentence; 1: the source off first place).

    Args:
        job: the text, its source, the guarantee to keep and the editor.
        attack: the ranked attack (its index is the one checked).
        safety: whole-text margin: the source's score at most ``1 - safety`` times the
            best other group's (0 <= safety < 1).
        sentence_safety: the same for sentence queries (default
            :data:`DEFAULT_SENTENCE_SAFETY`).
        min_terms: sentences with fewer terms (for a member) are left as they are
            (default 1: every sentence, as the audit's cautious reading counts them).
        max_rounds: bound on panel rounds.
        crowd: the crowd rule for the whole text (>= 1): the source at most
            ``1 - safety`` times the ``crowd``-th best other group's score.
        sentence_crowd: the same for sentences (default :data:`DEFAULT_SENTENCE_CROWD`,
            at most ``crowd``).
        whole_per_round: members whose whole-text goal one round fixes (>= 1) with the
            ``"worst"`` cover; the sentences are fixed once the whole text holds.
        cover: ``"joint"``: each round one cover of every failing member's whole-text
            goal at once (:func:`_joint_cover`); ``"worst"``: each of the worst
            ``whole_per_round`` members' own greedy cover.
        joint_step: the share of each member's estimated deficit one round of the
            joint cover takes (0 < joint_step <= 1).

    Returns:
        The protected text and what was changed; the text is linkage-free.
    """
    ss = DEFAULT_SENTENCE_SAFETY if sentence_safety is None else sentence_safety
    if not 0 <= safety < 1 or not 0 <= ss < 1:
        raise ConfigError(f"safety must lie in [0, 1), got {safety!r} / {ss!r}")
    if min_terms is None:
        min_terms = 1
    sc = min(crowd, DEFAULT_SENTENCE_CROWD) if sentence_crowd is None else sentence_crowd
    if crowd < 1 or sc < 1:
        raise ConfigError(f"crowd must be >= 1, got {crowd!r} / {sc!r}")
    if whole_per_round < 1:
        raise ConfigError(f"whole_per_round must be >= 1, got {whole_per_round!r}")
    if cover not in COVERS:
        raise ConfigError(f"cover must be one of {COVERS}, got {cover!r}")
    if not 0 < joint_step <= 1:
        raise ConfigError(f"joint_step must lie in (0, 1], got {joint_step!r}")
    index: NgramIndex = attack.index
    group = job.group
    out = job.outcome()

    def cost_of(spans: Sequence[tuple[int, int]]) -> dict[tuple[int, int], float] | None:
        return job.costs(out, spans)  # of the round ``out`` is in

    for _ in range(max_rounds):
        fails = _failures(attack, out.text, group, safety, ss, min_terms, crowd, sc)
        if not fails:
            break
        whole = [f for f in fails if f.query == "text"]
        if whole:  # the worst members' whole-text goals first, then score again
            fails = whole[:whole_per_round] if cover == "worst" else []
        out.rounds += 1
        taken: set[tuple[int, int]] = set()
        done_queries: set[str] = set()
        if whole and cover == "joint":
            taken.update(
                _joint_cover(attack, out.text, group, whole, safety, joint_step, cost_of)
            )
        for f in fails:
            if f.query in done_queries and f.query != "text":
                continue  # one member per sentence and round: the others follow next round
            margin = safety if f.query == "text" else ss
            got = _choose(attack, out.text, group, f, margin, taken, cost_of)
            taken.update(got)
            done_queries.add(f.query)
        if not taken:  # nothing left that leads (cannot happen while the source leads)
            break
        job.edit(out, index, sorted(taken), "ranked term")
    else:
        log.warning("ranked protection stopped after %d rounds", max_rounds)
    return out

"""`--protect containment`: cut the chains that let an aligner find the source, fewest words first.

Search-based delinking (the pipeline) removes every rare phrase, but one changed word per
rare phrase leaves the text in its source's order: a containment attack
(:mod:`presidio_delink.attacks.containment`) still ranks the source first.  This module
takes a linkage-free output whose source group is known and edits it further until the
containment attack no longer ranks that group first.

Definitions (``q`` = the attack's seed length, the shortest fingerprint an adversary uses;
a longer fingerprint only matches where ``q``-grams do).  For the current text ``T``:

* ``S`` = text positions covered by the kept chains of the source group's documents;
  ``C`` = those covered by the best *other* group (the *competitor*);
* scores of a group under three chain rules (:func:`rule_scores`): ``cover`` = ``|S| / L``
  (the attack's own score), ``longest`` = words of its longest chain, ``sumsq`` = sum of
  its chains' squared lengths;
* goal, under every rule: the source scores 0, or ``s <= (1 - safety) * c`` and ``s < c``
  where ``c`` is the best other group's score under that rule: the source is not the
  argmax, with a relative safety factor.  A text-reuse detector answers with its argmax,
  whatever margin a decision rule would ask for, so the stop rule is the argmax too;
* the goal must hold for every variant of the attack (:func:`variants`): seeds of 3, 4 and
  5 words, each with the attack's chaining and a *sensitive* one (chains jumping three
  times as far, two overlapping seeds enough), and one that keeps single seeds (a bag of
  shared 3-grams).  Detectors with other fingerprint lengths, sparse winnowed
  fingerprints, wider chaining or no chaining then do not put the source first either:
  with the one attack alone, scattered matches left between the cuts still added up for
  a 3-word winnowing detector.

Method.  Each round takes the first variant and rule whose goal fails.  A word changed inside a
run of ``S \\ C`` (positions only the source explains) lowers ``s`` without lowering
``c``.  Every ``q``-gram of a run is broken by changing every ``q``-th word of it
(positions ``start + q - 1, start + 2q - 1, ...``), and no fewer changes break them all
(a minimum stabbing set of the run's ``q``-grams, as for the flagged N-grams of the
pipeline).  Runs are cut longest first (most score per changed word), just enough to
reach the goal by the estimate ``|S| - cut``; then the attacks run again (the chains
re-form around the cuts only where the estimate was optimistic).  When ``S \\ C`` is
exhausted, ``S`` itself is cut; the next round has a new competitor.  A cut is a
redaction placeholder: it creates no N-gram, but it can shorten an N-gram (and a shorter
N-gram can combine with others), so after each round the text is checked again against
the index and whatever links is redacted by the pipeline's own rule (minimum stabbing
set).  The guarantee (linkage-free at the delinker's ``k`` and arity) therefore holds.

Escalation order.  Raising the delinker's arity changes about twice as many words of a
TAB document as the cuts do (``benchmarks/results/bench_containment.md``), so ``arities``
(tried first, when given) is empty by default.  Complexity: a round runs the variants
until one fails (``O(L + C |D|)`` each, see the attack; seven when all hold) plus one
linkage check; rounds are few (each cuts at least one run); the times on TAB are in the
same file.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from presidio_delink.attacks.base import Ranked, rank_of
from presidio_delink.attacks.containment import ContainmentAttack
from presidio_delink.errors import ConfigError
from presidio_delink.protect.common import ProtectJob, ProtectOutcome

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_SAFETY", "ProtectOutcome", "protect_containment"]

#: Relative safety factor (see the module docstring).  Chosen on held-in data only
#: (``benchmarks/ranked/calibrate_protect.py``: 40 TAB train/dev and 20 Wikipedia texts,
#: a q-gram family of its own, q = 3..6, argmax by shared q-grams or longest run): no
#: margin of the grid 0-0.4 brought it to 5 % (6, 4, 4 and 5 of 60 found at 0, 0.1, 0.25
#: and 0.4), so the smallest with the fewest finds.  The margin matters little here; what
#: is left is found by detectors the variants do not cover.
DEFAULT_SAFETY = 0.1


#: The chain scoring rules the stop condition checks (see :func:`rule_scores`).
RULES = ("cover", "longest", "sumsq")


def rule_scores(
    attack: ContainmentAttack, text: str
) -> tuple[dict[str, dict[str, float]], dict[str, set[int]]]:
    """Per rule ``{group: score}``, and the text positions each group's chains cover.

    Rules: ``cover`` (share of the text's words covered by the group's kept chains, the
    attack's own score), ``longest`` (words of the group's longest chain) and ``sumsq``
    (sum of squared chain lengths: a few long runs outweigh many short ones).
    """
    q = attack.seed
    cover: dict[str, set[int]] = {}
    longest: dict[str, float] = {}
    sumsq: dict[str, float] = {}
    n_words = max(1, len(attack.prepare(text).words))
    groups = attack.index.doc_groups
    for ch in attack.chains(text):
        g = groups[ch.doc]
        pos = cover.setdefault(g, set())
        for p in ch.positions:
            pos.update(range(p, p + q))
        longest[g] = max(longest.get(g, 0.0), float(ch.covered))
        sumsq[g] = sumsq.get(g, 0.0) + float(ch.covered) ** 2
    scores = {
        "cover": {g: len(p) / n_words for g, p in cover.items()},
        "longest": longest,
        "sumsq": sumsq,
    }
    return scores, cover


def _failing(
    attack: ContainmentAttack, text: str, group: str, safety: float, crowd: int = 1
) -> tuple[str | None, dict[str, set[int]]]:
    """The competitor group under the first rule whose goal fails (None: all hold).

    Goal under a rule: the source scores 0, or at most ``(1 - safety)`` times the
    ``crowd``-th best other group and strictly less (``crowd`` = 1: the source is not
    the argmax, with a margin)."""
    scores, cover = rule_scores(attack, text)
    for rule in RULES:
        sc = scores[rule]
        src = sc.get(group, 0.0)
        if src <= 0:
            continue
        others = sorted(((v, g) for g, v in sc.items() if g != group), reverse=True)
        best, comp = others[crowd - 1] if len(others) >= crowd else (0.0, None)
        if not (src <= (1.0 - safety) * best and src < best):
            return comp or "", cover
    return None, cover


def _goal(
    attack: ContainmentAttack, text: str, group: str, safety: float
) -> tuple[bool, list[Ranked]]:
    comp, _ = _failing(attack, text, group, safety)
    return comp is None, attack.scores(text)


def variants(attack: ContainmentAttack) -> list[ContainmentAttack]:
    """The defence's own detectors: seeds of ``attack.seed`` to 5 words (as the index's
    ``max_n`` allows), each with the attack's chaining and the :func:`sensitive` one; and
    one that keeps single seeds (``min_chain = seed``: a bag of shared ``q``-grams, as a
    fingerprint detector that does not chain counts them)."""
    cached = attack.__dict__.get("_protect_variants")
    if cached is not None:  # kept on the attack: their document caches serve every text
        return list(cached)
    out: list[ContainmentAttack] = []
    for q in range(attack.seed, max(attack.seed, min(5, attack.index.max_n)) + 1):
        base = attack
        if q != attack.seed:
            base = _like(
                attack, seed=q, gap=max(attack.gap, q + 1), min_chain=max(attack.min_chain, q + 1)
            )
        out += [base, sensitive(base)]
    out.append(_like(attack, gap=3 * attack.gap, min_chain=attack.seed))
    for v in out[1:]:
        v.share_words(attack)
    attack.__dict__["_protect_variants"] = tuple(out)
    return out


def _like(attack: ContainmentAttack, **kw: int) -> ContainmentAttack:
    args = {
        "k": attack.k, "seed": attack.seed, "gap": attack.gap, "drift": attack.drift,
        "min_chain": attack.min_chain, "candidates": attack.candidates, "max_df": attack.max_df,
    }
    args.update(kw)
    return ContainmentAttack(attack.index, **args)


def protect_containment(
    job: ProtectJob,
    attack: ContainmentAttack,
    *,
    safety: float = DEFAULT_SAFETY,
    max_rounds: int = 200,
    also: Sequence[ContainmentAttack] | None = None,
    crowd: int = 1,
) -> ProtectOutcome:
    """Edit ``job.text`` until ``attack`` no longer ranks ``job.group`` first.

    Args:
        job: the text, its source, the guarantee to keep and the editor.
        attack: the containment attack (its index is the one checked).
        safety: relative margin below the competitor to reach (0 <= safety < 1).
        max_rounds: bound on attack rounds.
        also: further attacks (same index) that must not rank the source first either;
            default: the other :func:`variants` of ``attack``.
        crowd: the crowd rule (>= 1): the source below the ``crowd``-th best other
            group under every rule and variant (1: not the argmax).

    Returns:
        The protected text and what was changed; the text is linkage-free.
    """
    if not 0 <= safety < 1:
        raise ConfigError(f"safety must lie in [0, 1), got {safety!r}")
    if crowd < 1:
        raise ConfigError(f"crowd must be >= 1, got {crowd!r}")
    index, group = attack.index, job.group
    out = job.outcome()
    attacks = [attack, *(also if also is not None else variants(attack)[1:])]
    for _ in range(max_rounds):
        for att in attacks:
            comp, cover = _failing(att, out.text, group, safety, crowd)
            if comp is not None:
                break
        else:
            break
        out.rounds += 1
        segs = index.tokenizer.segments(out.text)
        tokens = [t for s in segs for t in s]
        s_pos = cover.get(group, set())
        c_pos = cover.get(comp, set()) if comp else set()
        need = len(s_pos) - int((1.0 - safety) * len(c_pos))
        where = sorted(i for i in s_pos if i < len(tokens))
        costs = job.costs(out, [(tokens[i].start, tokens[i].end) for i in where])
        cheap = None if costs is None else {
            i for i in where if costs[(tokens[i].start, tokens[i].end)] <= 1.0
        }
        chosen = (_cuts(s_pos - c_pos, att.seed, need, cheap)
                  or _cuts(s_pos, att.seed, need, cheap))
        if not chosen:  # nothing left to cut (cannot happen while the source scores)
            break
        chosen = [i for i in chosen if i < len(tokens)]
        job.edit(out, index, [(tokens[i].start, tokens[i].end) for i in chosen],
                 "containment chain")
    ranking = attack.scores(out.text)
    out.source_rank = rank_of(ranking, group)
    return out


def sensitive(attack: ContainmentAttack) -> ContainmentAttack:
    """A more sensitive variant of ``attack``: chains may jump three times as far and
    need only two overlapping seeds, as a winnowing detector whose fingerprints are
    sparse must allow.  Protection checks both, so that scattered matches left between
    the cuts do not add up for a detector with other settings."""
    return ContainmentAttack(
        attack.index,
        k=attack.k,
        seed=attack.seed,
        gap=3 * attack.gap,
        drift=attack.drift,
        min_chain=attack.seed + 1,
        candidates=attack.candidates,
        max_df=attack.max_df,
    )


def _cuts(positions: set[int], q: int, need: int, cheap: set[int] | None = None) -> list[int]:
    """Positions that break every ``q``-gram of the longest runs of ``positions``, until
    ``need`` positions are covered by the runs cut.

    Without ``cheap``: every ``q``-th position of a run (the fewest cuts).  With it (the
    positions the editor may rewrite rather than redact, :meth:`ProtectJob.costs`): left
    to right, the first ``q``-gram not yet broken is cut at its last cheap position, or
    at its last position where none is cheap; a run shorter than ``q`` at its cheap
    position nearest the middle.  That may take a few more cuts; each is more often a
    rewrite."""
    if not positions:
        return []
    ps = sorted(positions)
    rs: list[tuple[int, int]] = []
    a = prev = ps[0]
    for p in ps[1:]:
        if p != prev + 1:
            rs.append((a, prev + 1))
            a = p
        prev = p
    rs.append((a, prev + 1))
    rs.sort(key=lambda r: (-(r[1] - r[0]), r[0]))
    chosen: list[int] = []
    got = 0
    for a, b in rs:
        if got >= max(1, need):
            break
        chosen.extend(_run_cuts(a, b, q, cheap))
        got += b - a
    return sorted(set(chosen))


def _run_cuts(a: int, b: int, q: int, cheap: set[int] | None) -> list[int]:
    """The cuts of one run ``[a, b)`` (see :func:`_cuts`)."""
    if b - a < q:
        mid = a + (b - a) // 2
        if cheap:
            near = sorted((p for p in range(a, b) if p in cheap), key=lambda p: abs(p - mid))
            if near:
                return [near[0]]
        return [mid]
    if not cheap:
        return list(range(a + q - 1, b, q))
    out = []
    s = a  # the first q-gram not yet broken starts here
    while s + q <= b:
        window = range(s + q - 1, s - 1, -1)
        p = next((i for i in window if i in cheap), s + q - 1)
        out.append(p)
        s = p + 1
    return out

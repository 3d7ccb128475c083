"""Containment attack: how much of a text does each group of the collection contain, in order?

This is the near-verbatim copy detection of text-reuse tools (winnowing / MOSS, Schleimer,
Wilkerson and Aiken 2003; "seed, then extend" aligners), run against the N-gram index the
package already has.  It needs no rare phrase: a text whose every rare word was redacted
still shares long runs of ordinary words with its source, in the source's order.

Definitions.  The text's words ``t_0 .. t_{L-1}`` are its normalised words (the index's
tokenizer), numbered across segment breaks and placeholders; a collection document's
words ``d_0 ..`` likewise (``NgramIndex.doc_words`` without the segment marks).

* A **seed** is a ``q``-gram (``q = seed`` words, default 3) of these numbered words; it
  may cross punctuation (text-reuse tools ignore it) and placeholders (a seed across a
  placeholder matches nothing: the source has the masked words there).  A seed match is
  a pair ``(i, j)`` with ``t_i..t_{i+q-1} = d_j..d_{j+q-1}``; its *diagonal* is ``j - i``.
* A **chain** is a sequence of seed matches ``(i_1, j_1), (i_2, j_2), ...`` with
  ``0 < i_{m+1} - i_m <= gap``, ``j_{m+1} > j_m`` and diagonals differing by at most
  ``drift`` between neighbours: the same passage, in the same order, at consistent
  offsets.  A single edited word breaks the ``q`` seeds through it but not the chain (the
  next seed is at most ``q + 1 <= gap`` words on, on the same diagonal); an inserted or
  deleted word, or a placeholder standing for several words, shifts the diagonal by a
  few words (``<= drift``).
* A chain **covers** the text words of its seeds.  Chains covering fewer than
  ``min_chain`` words are dropped (stray common phrases).  The **score** of a group is
  the share of the text's words covered by the kept chains of its documents (union over
  the group's documents, so a group whose texts hold different parts of the text gets
  credit for all of them), in ``[0, 1]``.

Decision.  ``linked`` when the best group's score exceeds the ``k``-th best's by at least
``margin`` (and is at least ``min_score``): the adversary can claim the top group when
fewer than ``k`` groups explain the text about as well.  The default ``margin`` was
calibrated on held-in data: TAB ECHR cases whose text is NOT in the collection
(the annotated train/dev documents of ``tab_sample144`` queried against an index of the
TAB collection without them) give the null distribution of ``s_1 - s_k``; the margin is
set just above its 99th percentile, so that a text with no source in the collection is
claimed about once in a hundred.  The calibration's figures (that distribution, and how
many texts whose source is in the collection are claimed) are in ``docs/design.md``
("Attacks"); ``benchmarks/bench_containment.py --calibrate`` reruns it.

Method and complexity (``L`` text words, ``C`` candidates, ``|D|`` words of a candidate):

1. Candidates: every seed of the text that lies inside one segment (what the index
   stores) is looked up (``df_keys``, then the posting lists of the seeds with
   ``df <= max_df``; the commonest seeds say nothing about which document): ``O(L)``
   look-ups.  Documents are ranked by the number of text positions
   whose seed they hold, weighted by ``1/df``; the best ``C`` are aligned.
2. Alignment of a candidate: its ``q``-grams as sorted integer keys (``O(|D| log |D|)``,
   cached for the next texts), the matches of the text's seeds by binary search (each
   seed's occurrences capped at ``max_occ``), then one sweep in text order that extends,
   for each match, the open chain ending within ``gap`` words with the closest diagonal:
   ``O(M * a)`` for ``M`` matches and ``a`` open chains.
3. Scores per group: union of covered positions.  Total ``O(L log |D| + C (|D| + M a))``;
   its time on TAB: ``benchmarks/results/bench_containment.md``.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from presidio_delink.attacks.base import Ranked, Verdict
from presidio_delink.errors import ConfigError
from presidio_delink.index import NgramIndex

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_MARGIN", "Chain", "ContainmentAttack", "Prepared"]

_VOCAB_RESET = 1 << 20  # word ids stay below 2**21 (a text adds far fewer than 2**20)


class _Shared:
    """Word ids and encoded documents, shared by attacks over one index
    (:meth:`ContainmentAttack.share_words`); ``epoch`` counts vocabulary resets."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.ids: OrderedDict[int, np.ndarray] = OrderedDict()
        self.epoch = 0

#: Calibrated margin between the best and the k-th group (see the module docstring).
DEFAULT_MARGIN = 0.25


@dataclass(frozen=True)
class Chain:
    """A chain of seed matches between the text and one collection document.

    Attributes:
        doc: the document's ordinal.
        positions: text word positions of the chain's seeds (ascending).
        covered: number of text words its seeds cover.
    """

    doc: int
    positions: tuple[int, ...]
    covered: int


class ContainmentAttack:
    """Rank the collection's groups by how much of a text they contain, in order.

    Args:
        index: the collection's N-gram index (its tokenizer normalises the text).
        k: the decision compares the best group with the ``k``-th (>= 2).
        seed: seed length ``q`` in words (2..8; at most the index's ``max_n``).
        gap: largest step between consecutive seeds of a chain, in text words
            (>= ``seed + 1`` so that one edited word does not break a chain).
        drift: largest change of diagonal between consecutive seeds (insertions,
            deletions, placeholders standing for several words).
        min_chain: chains covering fewer words are dropped.
        candidates: documents aligned per text.
        max_df: seeds found in more documents are not used to pick candidates
            (default: ``max(20, n_docs // 2)``).
        max_occ: occurrences of one seed in one document considered.
        margin: decision margin between the best and the ``k``-th score.
        min_score: the best score must be at least this to decide ``linked``.
        cache_docs: aligned documents whose seed keys are kept for the next texts.
    """

    name = "containment"

    def __init__(
        self,
        index: NgramIndex,
        *,
        k: int = 2,
        seed: int = 3,
        gap: int = 8,
        drift: int = 5,
        min_chain: int = 6,
        candidates: int = 40,
        max_df: int | None = None,
        max_occ: int = 8,
        margin: float = DEFAULT_MARGIN,
        min_score: float = 0.05,
        cache_docs: int = 512,
    ) -> None:
        if not isinstance(k, int) or k < 2:
            raise ConfigError(f"k must be an integer >= 2, got {k!r}")
        if not 2 <= seed <= min(8, index.max_n):
            raise ConfigError(f"seed must be in 2..{min(8, index.max_n)}, got {seed!r}")
        if gap < seed + 1:
            raise ConfigError(f"gap must be >= seed + 1 = {seed + 1}, got {gap!r}")
        if drift < 0 or min_chain < 1 or candidates < 1 or max_occ < 1:
            raise ConfigError("drift must be >= 0; min_chain, candidates, max_occ >= 1")
        if not 0 <= margin <= 1 or not 0 <= min_score <= 1:
            raise ConfigError("margin and min_score must lie in [0, 1]")
        self.index = index
        self.k, self.seed, self.gap, self.drift = k, seed, gap, drift
        self.min_chain, self.candidates, self.max_occ = min_chain, candidates, max_occ
        self.max_df = max_df if max_df is not None else max(20, index.n_docs // 2)
        self.margin, self.min_score = margin, min_score
        self.cache_docs = cache_docs
        self._groups = index.doc_groups
        self._ids = index.doc_ids
        self._shared = _Shared()
        self._epoch = 0
        self._doc_cache: OrderedDict[int, tuple[np.ndarray, np.ndarray]] = OrderedDict()

    def share_words(self, other: ContainmentAttack) -> None:
        """Use ``other``'s word ids and encoded documents (same index): attacks with
        other settings then decode and encode each candidate document once between them
        (the protection runs seven variants over the same candidates)."""
        if other.index is not self.index:
            raise ConfigError("attacks of different indexes share no words")
        self._shared = other._shared
        self._epoch = -1  # this attack's own keys were made with other ids
        self._doc_cache.clear()

    @property
    def _vocab(self) -> dict[str, int]:
        return self._shared.vocab

    # -- public ---------------------------------------------------------------------
    def rank(self, text: str, top: int = 10) -> list[Ranked]:
        """The ``top`` groups with the highest containment score, best first."""
        return self.scores(text)[:top]

    def verdict(self, text: str, top: int = 10) -> Verdict:
        """Ranking plus decision (see the module docstring)."""
        ranking = self.scores(text)
        return Verdict(self.name, tuple(ranking[:top]), self.decide(ranking))

    def decide(self, ranking: Sequence[Ranked]) -> bool:
        """``linked``: the best score exceeds the ``k``-th by ``margin``."""
        if not ranking or ranking[0].score < self.min_score:
            return False
        kth = ranking[self.k - 1].score if len(ranking) >= self.k else 0.0
        return ranking[0].score - kth >= self.margin

    def scores(self, text: str) -> list[Ranked]:
        """Every group with kept chains, best first (ties: group id)."""
        prep = self.prepare(text)
        if len(prep.keys) == 0:
            return []
        return self._rank(self.coverage(prep, self._candidates(text)), len(prep.words))

    def chains(self, text: str, docs: Sequence[int] | None = None) -> list[Chain]:
        """Kept chains of ``text`` against ``docs`` (default: the candidates)."""
        prep = self.prepare(text)
        if len(prep.keys) == 0:
            return []
        cands = list(docs) if docs is not None else self._candidates(text)
        return [c for d in cands for c in self._align(prep, d)]

    def group_docs(self, group: str) -> list[int]:
        """Ordinals of the documents of ``group``."""
        return [i for i, g in enumerate(self._groups) if g == group]

    def prepare(self, text: str) -> Prepared:
        """The text's words (numbered across punctuation) and the keys of its seeds."""
        words = [t.word for seg in self.index.tokenizer.segments(text) for t in seg]
        sh = self._shared
        if len(sh.vocab) > _VOCAB_RESET:  # keeps the keys exact; ids are per vocabulary
            sh.vocab.clear()
            sh.ids.clear()
            sh.epoch += 1
        if self._epoch != sh.epoch:  # the ids changed (here or in a sharing attack)
            self._doc_cache.clear()
            self._epoch = sh.epoch
        return Prepared(words, self._keys(self._encode(words)))

    def coverage(self, prep: Prepared, docs: Sequence[int]) -> dict[int, set[int]]:
        """Text positions covered by the kept chains of each document."""
        q = self.seed
        out: dict[int, set[int]] = {}
        for d in docs:
            cov: set[int] = set()
            for ch in self._align(prep, d):
                for p in ch.positions:
                    cov.update(range(p, p + q))
            if cov:
                out[d] = cov
        return out

    # -- internals ------------------------------------------------------------------
    def _encode(self, words: Sequence[str]) -> np.ndarray:
        vocab = self._vocab
        return np.fromiter(
            (vocab.setdefault(w, len(vocab)) for w in words), dtype=np.int64, count=len(words)
        )

    def _keys(self, ids: np.ndarray) -> np.ndarray:
        """One integer per ``q``-gram of ``ids``: exact (base ``2**21``; the vocabulary is
        reset before it can outgrow it) for ``q <= 3``, else a 64-bit mix (a collision
        only adds a stray match, which the chain rules filter)."""
        q = self.seed
        if len(ids) < q:
            return np.empty(0, dtype=np.int64)
        win = np.lib.stride_tricks.sliding_window_view(ids, q)
        if q * 21 <= 63:
            keys = np.zeros(len(win), dtype=np.int64)
            for c in range(q):
                keys = (keys << 21) | win[:, c]
            return keys
        h = np.full(len(win), 1469598103934665603, dtype=np.uint64)
        with np.errstate(over="ignore"):
            for c in range(q):
                h = (h ^ win[:, c].astype(np.uint64)) * np.uint64(1099511628211)
        return h.view(np.int64)

    def _doc_keys(self, doc: int) -> tuple[np.ndarray, np.ndarray]:
        """A document's seed keys, sorted, with their positions (cached: the same
        candidates come back across texts and protection rounds)."""
        got = self._doc_cache.get(doc)
        if got is not None:
            self._doc_cache.move_to_end(doc)
            return got
        sh = self._shared
        ids = sh.ids.get(doc)
        if ids is None:
            ids = self._encode([w for w in self.index.doc_words(doc) if w])
            sh.ids[doc] = ids
            if len(sh.ids) > self.cache_docs:
                sh.ids.popitem(last=False)
        else:
            sh.ids.move_to_end(doc)
        keys = self._keys(ids)
        order = np.argsort(keys, kind="stable")
        got = (keys[order], order)
        self._doc_cache[doc] = got
        if len(self._doc_cache) > self.cache_docs:
            self._doc_cache.popitem(last=False)
        return got

    def _candidates(self, text: str) -> list[int]:
        q = self.seed
        keys = list(
            dict.fromkeys(
                " ".join(t.word for t in seg[i : i + q])
                for seg in self.index.tokenizer.segments(text)
                for i in range(len(seg) - q + 1)
            )
        )
        if not keys:
            return []
        dfs = self.index.df_keys(keys)
        rare = [k for k, df in zip(keys, dfs.tolist(), strict=True) if 1 <= df <= self.max_df]
        if not rare:
            return []
        weight = np.zeros(self.index.n_docs, dtype=np.float64)
        for post in self.index.postings_keys(rare):
            weight[post] += 1.0 / len(post)
        n = min(self.candidates, int(np.count_nonzero(weight)))
        best = np.argpartition(-weight, n - 1)[:n] if n < len(weight) else np.arange(len(weight))
        return sorted(int(d) for d in best if weight[d] > 0)

    def _align(self, prep: Prepared, doc: int) -> list[Chain]:
        """Kept chains between the text and document ``doc``."""
        q = self.seed
        dkeys, dpos = self._doc_keys(doc)
        lo = np.searchsorted(dkeys, prep.keys, side="left")
        hi = np.minimum(np.searchsorted(dkeys, prep.keys, side="right"), lo + self.max_occ)
        hit = np.flatnonzero(hi > lo)
        open_: list[_Open] = []  # chains that may still be extended
        done: list[list[int]] = []
        gap, drift = self.gap, self.drift
        for i, a, b in zip(hit.tolist(), lo[hit].tolist(), hi[hit].tolist(), strict=True):
            done.extend(c.positions for c in open_ if i - c.i > gap)
            open_ = [c for c in open_ if i - c.i <= gap]
            extended: set[int] = set()
            for j in sorted(dpos[a:b].tolist()):
                best, best_d = -1, drift + 1
                for ci, c in enumerate(open_):
                    if ci in extended or c.i >= i or j <= c.j:
                        continue
                    d = abs((j - i) - (c.j - c.i))
                    if d < best_d:
                        best, best_d = ci, d
                if best < 0:
                    open_.append(_Open(i, j, [i]))
                    extended.add(len(open_) - 1)
                else:
                    c = open_[best]
                    c.i, c.j = i, j
                    c.positions.append(i)
                    extended.add(best)
        done.extend(c.positions for c in open_)
        out = []
        for ps in done:
            cov = _covered(ps, q)
            if cov >= self.min_chain:
                out.append(Chain(doc, tuple(ps), cov))
        return out

    def _rank(self, covered: dict[int, set[int]], n_words: int) -> list[Ranked]:
        by_group: dict[str, set[int]] = {}
        best_doc: dict[str, tuple[int, int]] = {}
        for d, cov in covered.items():
            g = self._groups[d]
            by_group.setdefault(g, set()).update(cov)
            if g not in best_doc or len(cov) > best_doc[g][0]:
                best_doc[g] = (len(cov), d)
        ranking = [
            Ranked(g, len(cov) / max(1, n_words), self._ids[best_doc[g][1]])
            for g, cov in by_group.items()
        ]
        ranking.sort(key=lambda r: (-r.score, r.group))
        return ranking


@dataclass(frozen=True)
class Prepared:
    """A text ready for alignment: its normalised words and one key per seed
    (``keys[i]`` is the seed starting at word ``i``)."""

    words: list[str]
    keys: np.ndarray


@dataclass
class _Open:
    """A chain being built: its last match ``(i, j)`` and its seeds' text positions."""

    i: int
    j: int
    positions: list[int]


def _covered(positions: Sequence[int], q: int) -> int:
    """Words covered by seeds of length ``q`` starting at sorted ``positions``."""
    total = 0
    for a, b in zip(positions, positions[1:], strict=False):
        total += min(q, b - a)
    return total + q if positions else 0

"""A held-in family of readers that do not rank by BM25, for choosing the protection's
panel on held-in data (never the TAB test documents).

The benchmark's held-out readers that score otherwise (TF-IDF cosine, LSA, word pairs and
triples: ``tests/semantic_adversaries.py``) and the learned ranker over them
(``benchmarks/bench_learned_ranker.py``) find sources the defence's BM25 panel buries
(``benchmarks/results/ranked_crowd.md``, run of 2026-12-05 at f760d28).  A panel chosen against
them would be tuned to its check, so this family is written here, for the calibration
only: it shares no code with the defence's attacks (``presidio_delink.attacks``) nor with
the benchmark's readers.

* **Vector members** (6): the vector space model over word n-grams, n = 1, 2, 3 (n-grams
  never run across a placeholder); a document's vector ``(1 + ln tf) * idf`` with the
  smoothed idf ``ln((1 + N) / (1 + df)) + 1``, scaled to unit length; the query's the
  same.  A group scores as its best document (``doc``) or as one document, its texts'
  counts summed (``group``).
* **BM25 members** (2): BM25 (k1 1.2, b 0.75, Lucene's idf, each
  distinct n-gram once) over the same word pairs and triples, a group scored by its best
  document (named ``vec2:bm25`` and ``vec3:bm25``).
* **Fused reader** (1): reciprocal-rank fusion (``sum 1 / (60 + rank)``) of the whole-text
  rankings of the eight members above and the 24 BM25 members of
  :class:`calibrate_protect.Family`: an attacker who pools many readers without fitting
  anything, what the learned ranker exploits (the source is a case that many readers rank
  high, none of them first).

:meth:`VectorFamily.ranks` gives each member's whole-text rank of the source (1-based,
ties counted against it; None: not matched).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import scipy.sparse as sp
from calibrate_protect import Family

from presidio_delink.index import NgramIndex

NS = (1, 2, 3)
RRF_K = 60
_Mat = tuple[str, sp.csr_matrix]


def _grams(words: list[str], n: int) -> list[str]:
    """Word ``n``-grams of ``words``, none across an empty word (a placeholder)."""
    out = []
    for i in range(len(words) - n + 1):
        g = words[i : i + n]
        if all(g):
            out.append(" ".join(g))
    return out


def _weigh(tf: sp.csr_matrix, idf: np.ndarray) -> sp.csr_matrix:
    m = tf.tocsr(copy=True)
    m.data = (1.0 + np.log(m.data)) * idf[m.indices]
    norm = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    norm[norm == 0] = 1.0
    return sp.diags(1.0 / norm) @ m


class VectorFamily:
    """The held-in vector readers and the fused reader over one index (module docstring)."""

    def __init__(self, index: NgramIndex, bm25: object | None = None) -> None:
        self.index = index
        self.bm25 = bm25  # a calibrate_protect.Family, for the fused reader
        groups = index.doc_groups
        self.gnames = list(dict.fromkeys(groups))
        gi = {g: i for i, g in enumerate(self.gnames)}
        self.gof = np.asarray([gi[g] for g in groups])
        docs = [index.doc_words(d) for d in range(index.n_docs)]
        g1 = sp.csr_matrix((np.ones(index.n_docs), (self.gof, np.arange(index.n_docs))),
                           shape=(len(self.gnames), index.n_docs))
        self.views: list[tuple[int, dict[str, int], np.ndarray, list[_Mat]]] = []
        for n in NS:
            vocab: dict[str, int] = {}
            rows: list[int] = []
            cols: list[int] = []
            for d, ws in enumerate(docs):
                gs = _grams(ws, n)
                rows.extend([d] * len(gs))
                cols.extend(vocab.setdefault(g, len(vocab)) for g in gs)
            tf = sp.csr_matrix((np.ones(len(rows)), (rows, cols)),
                               shape=(index.n_docs, len(vocab)))
            tf.sum_duplicates()
            df = np.bincount(tf.indices, minlength=len(vocab))
            idf = np.log((1.0 + index.n_docs) / (1.0 + df)) + 1.0
            gtf = (g1 @ tf).tocsr()
            mats = [("doc", _weigh(tf, idf)), ("group", _weigh(gtf, idf))]
            if n > 1:  # BM25 over the same n-grams (k1 1.2, b 0.75, Lucene's idf)
                mats.append(("bm25", Family._bm25(tf, 1.2, 0.75)))
            self.views.append((n, vocab, idf, mats))

    def _query_words(self, text: str) -> list[str]:
        """The text's index words, an empty word where a placeholder stands between two."""
        out: list[str] = []
        prev = 0
        for t in self.index.tokenizer.tokens(text):
            gap = text[prev : t.start]
            if out and ("[" in gap or "<" in gap):
                out.append("")
            out.append(t.word)
            prev = t.end
        return out

    def group_scores(self, text: str) -> dict[str, np.ndarray]:
        """Per vector member, its whole-text score of every group."""
        words = self._query_words(text)
        out: dict[str, np.ndarray] = {}
        for n, vocab, idf, mats in self.views:
            counts: dict[int, int] = defaultdict(int)
            for g in _grams(words, n):
                j = vocab.get(g)
                if j is not None:
                    counts[j] += 1
            if not counts:
                continue
            cols = np.fromiter(counts, dtype=np.int64)
            q = sp.csr_matrix(((1.0 + np.log(np.fromiter(counts.values(), dtype=float)))
                               * idf[cols], (np.zeros(len(cols), dtype=np.int64), cols)),
                              shape=(1, len(vocab)))
            ones = sp.csr_matrix((np.ones(len(cols)), (np.zeros(len(cols), dtype=np.int64),
                                                       cols)), shape=(1, len(vocab)))
            for model, m in mats:
                s = np.asarray((m @ (ones if model == "bm25" else q).T).todense()).ravel()
                if model in ("doc", "bm25"):
                    g = np.zeros(len(self.gnames))
                    np.maximum.at(g, self.gof, s)
                else:
                    g = s
                out[f"vec{n}:{model}"] = g
        return out

    def ranks(self, text: str, group: str) -> dict[str, int | None]:
        """Per member (the eight members above and ``fused``): the source's whole-text
        rank (module docstring)."""
        gi = self.gnames.index(group)
        scores = self.group_scores(text)
        if self.bm25 is not None:
            for member, g in self.bm25.group_scores(text):  # type: ignore[attr-defined]
                scores[f"bm25:{member}"] = g[0]
        out: dict[str, int | None] = {}
        fused = np.zeros(len(self.gnames))
        for member, g in scores.items():
            src = g[gi]
            rank = None if src <= 0 else 1 + int(np.count_nonzero(g > src))
            if not member.startswith("bm25:"):
                out[member] = rank
            order = np.argsort(-g, kind="stable")
            r = np.empty(len(g))
            r[order] = np.arange(1, len(g) + 1)
            fused += np.where(g > 0, 1.0 / (RRF_K + r), 0.0)
        if scores:
            src = fused[gi]
            out["fused"] = None if src <= 0 else 1 + int(np.count_nonzero(fused > src))
        return out

"""A lower bound on the words a redaction must change before a reader stops ranking the source.

Issue 32 asks for both: at most 50 % of words changed with ``--llm none`` (redaction only),
and the source's case in the top 5 for at most 25 of the 127 TAB test documents under every
BM25 member of the benchmark's independent panel (first for at most 6). This script asks
whether any redaction at all could do both, whatever chose its words.

For a reader whose score is linear in what a redaction leaves of the query, the answer has
a bound. Each of the panel's own-BM25 readers (``tests/ranked_adversaries.py``: nothing of
the defence) scores a unit ``u`` (a document, or a whole case) as ``s_u(Q) = sum_t q_t
w_u(t)``: ``q_t`` is 1 for a term of the query (distinct terms) or its count (repeated
terms kept), and ``w_u(t)`` does not depend on the query. Redacting words only takes terms
(or occurrences) out of ``Q``. So for the source's document ``j`` to fall below a unit
``u``, the redacted items must carry ``sum (w_j(t) - w_u(t)) >= s_j(Q) - s_u(Q)``. The least
number of words that can do so is at least the optimum of that knapsack's fractional
relaxation (items by net lead per word, the last one in part), which is exact to compute.

* an item: for a distinct-term reader, a term, at the cost of every word that gives it
  (it leaves the query only with all of them); for a reader that keeps repeated terms,
  one word occurrence, worth the sum of its terms (a word's character 4-grams; its stem,
  nothing for a stop word);
* the source's case falls below another case only if every source document falls below
  one of that case's units: the bound for the case is the least over its units of the
  largest over the source's documents;
* out of the top 5 needs five other cases above: at least the fifth smallest of those
  bounds; out of first place, the smallest.

Then over the 127 documents: the documents allowed to stay in the top 5 (25) or first (6)
are the ones whose bound is largest, and the words changed are at least the phrase step's
(``--arity 1``, measured) plus the bounds of the others, per reader. A protection has to
satisfy every reader at once, so the largest of these per-reader figures is a bound for
all of them together; it is loose (each reader is bounded alone, fractionally).

Usage::

    python benchmarks/ranked/words_bound.py [--limit N] [--arity1 CACHE.json] [--json OUT]

``--arity1``: a cache of ``bench_ranked.py``'s ``arity1`` outputs (``{id, text, n_words,
redacted}`` per document; its ``--work``), else the phrase step runs here (k = 2,
``--llm none``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))

import ranked_adversaries as ra  # noqa: E402
from bench_ranked import commit, uptime  # noqa: E402

from presidio_delink.datasets import tab_collection, tab_test  # noqa: E402
from presidio_delink.io import atomic_output  # noqa: E402

#: The panel's own-BM25 readers, by name, and how each analyses one word (whether it keeps
#: repeated terms and whether a unit is a case, the reader itself says).
READERS = (
    ("bm25-regex", "word"),
    ("bm25-case-doc", "word"),
    ("bm25-qtf-k09b04", "word"),
    ("bm25-snowball-stop", "stem"),
    ("bm25-char4-qtf", "char4"),
)
#: Documents the targets let a reader still find (of 127): in the top 5, first.
ALLOWED = {5: 25, 1: 6}


def analyse_word(kind: str, w: str) -> list[str]:
    if kind == "word":
        return [w]
    if kind == "stem":
        return ra.snowball_stop([w])
    return ra.char_grams([w])


def items(m: ra.OwnBM25, kind: str, qtf: bool, text: str) -> tuple[np.ndarray, np.ndarray]:
    """``(value matrix items x units, cost per item)``: what taking an item out of the
    query takes from each unit's score, and the words it costs."""
    ws = ra.words(text)
    if not qtf:  # distinct terms: an item is a term, all its words
        per_term: Counter[str] = Counter()
        for w in ws:
            for t in analyse_word(kind, w):
                per_term[t] += 1  # (identity analysis here: one term a word)
        ids = [(m.vocab[t], n) for t, n in per_term.items() if t in m.vocab]
        if not ids:
            return np.zeros((0, m.w.shape[1])), np.zeros(0)
        rows = [i for i, _ in ids]
        return m.w[rows].toarray(), np.array([n for _, n in ids], dtype=float)
    per_word = Counter(ws)  # repeated terms: an item is one word occurrence
    vals, costs = [], []
    for w, n in per_word.items():
        rows = [m.vocab[t] for t in analyse_word(kind, w) if t in m.vocab]
        if not rows:
            continue
        v = np.asarray(m.w[rows].sum(axis=0)).ravel()
        vals.append(v * n)  # all n occurrences as one item of cost n, same ratio
        costs.append(n)
    if not vals:
        return np.zeros((0, m.w.shape[1])), np.zeros(0)
    return np.vstack(vals), np.array(costs, dtype=float)


def knapsack(value: np.ndarray, cost: np.ndarray, j: int) -> np.ndarray:
    """Per unit ``u``: the fractional least words whose removal puts ``s_j <= s_u``."""
    delta = value[:, j : j + 1] - value  # items x units: net lead of j over u per item
    need = delta.sum(axis=0)  # s_j - s_u
    gain = np.maximum(delta, 0.0)
    ratio = gain / cost[:, None]
    order = np.argsort(-ratio, axis=0, kind="stable")
    g = np.take_along_axis(gain, order, axis=0)
    c = cost[order]
    cg, cc = np.cumsum(g, axis=0), np.cumsum(c, axis=0)
    out = np.zeros(value.shape[1])
    pos = need > 0
    if not pos.any():
        return out
    # first item at which the cumulative gain reaches the need
    k = np.argmax(cg >= need[None, :] - 1e-12, axis=0)
    cols = np.arange(value.shape[1])
    before_g = np.where(k > 0, cg[np.maximum(k - 1, 0), cols], 0.0)
    before_c = np.where(k > 0, cc[np.maximum(k - 1, 0), cols], 0.0)
    gk, ck = g[k, cols], c[k, cols]
    part = np.where(gk > 0, (need - before_g) / np.where(gk > 0, gk, 1.0), 0.0) * ck
    out[pos] = (before_c + part)[pos]
    return out


def doc_bounds(m: ra.OwnBM25, kind: str, qtf: bool, text: str, group: str) -> dict[int, float]:
    """``{5: words to leave the top 5, 1: words to leave first place}`` for one text."""
    value, cost = items(m, kind, qtf, text)
    units = np.asarray(m.unit_group)
    src = np.flatnonzero(units == group)
    if not len(value) or not len(src) or value[:, src].sum() <= 0:
        return {5: 0.0, 1: 0.0}
    worst = np.max([knapsack(value, cost, int(j)) for j in src], axis=0)
    per_case: dict[str, float] = {}
    for u in np.flatnonzero(units != group):
        g = units[u]
        per_case[g] = min(per_case.get(g, np.inf), float(worst[u]))
    b = sorted(per_case.values())
    return {5: b[4] if len(b) >= 5 else float("inf"), 1: b[0] if b else float("inf")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--arity1", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    print("load:", uptime(), "commit:", commit(), flush=True)
    coll = list(tab_collection())
    groups = [ra.case_of(d) for d, _ in coll]
    tests = list(tab_test())[: a.limit]
    if a.arity1 is not None:
        cache = {r["id"]: r for r in json.loads(a.arity1.read_text())}
        phrase = [cache[t] for t, _o, _d in tests]
    else:
        from presidio_delink.index import NgramIndex
        from presidio_delink.pipeline import Delinker

        idx = NgramIndex.build(coll, None, max_n=8, group_regex=ra.GROUP_RE.pattern)
        d = Delinker(idx, k=2, arity=1, rewriter=None)
        phrase = []
        for tid, _o, deid in tests:
            r = d.delink(deid, tid)
            phrase.append({"id": tid, "text": r.text, "n_words": r.n_words,
                           "redacted": r.words_redacted})
    n_words = sum(r["n_words"] for r in phrase)
    step = sum(r["redacted"] for r in phrase)
    print(f"{len(tests)} documents, {n_words} words; the phrase step changed "
          f"{step} ({100 * step / n_words:.1f} %)", flush=True)
    report: dict[str, object] = {"documents": len(tests), "words": n_words,
                                 "phrase_step": step, "readers": {}}
    panel = {getattr(m, "name", ""): m for m in ra.ranked_panel(coll, groups)}
    for name, kind in READERS:
        t0 = time.perf_counter()
        m = panel[name]
        assert isinstance(m, ra.OwnBM25), name
        qtf = m.query_tf
        per_doc = [doc_bounds(m, kind, qtf, r["text"], ra.case_of(r["id"])) for r in phrase]
        row: dict[str, object] = {}
        for depth, allowed in ALLOWED.items():
            allowed = min(allowed, len(per_doc))
            bs = sorted(x[depth] for x in per_doc)
            kept = bs[: len(bs) - allowed]
            extra = float(sum(kept))
            row[f"top{depth}"] = {
                "extra_words": extra,
                "words_changed_pct": 100 * (step + extra) / n_words,
                "median_doc_words": float(np.median(bs)),
                "median_doc_share_pct": float(np.median(
                    [100 * x[depth] / max(1, r["n_words"]) for x, r in zip(
                        per_doc, phrase, strict=True)])),
            }
        row["per_document"] = [{"id": r["id"], "top5": x[5], "top1": x[1]}
                               for x, r in zip(per_doc, phrase, strict=True)]
        row["seconds"] = time.perf_counter() - t0
        report["readers"][name] = row  # type: ignore[index]
        print(f"{name:20s} out of the top 5 (all but {ALLOWED[5]}): at least "
              f"{row['top5']['words_changed_pct']:.1f} % of words; out of first place (all "
              f"but {ALLOWED[1]}): {row['top1']['words_changed_pct']:.1f} %; a document's "
              f"median {row['top5']['median_doc_share_pct']:.1f} / "
              f"{row['top1']['median_doc_share_pct']:.1f} %  [{row['seconds']:.0f} s]", flush=True)
    # every document protected (the tool cannot know which ones a target would let be):
    # each document needs at least the most any one reader needs
    for depth in ALLOWED:
        most = [max(r["per_document"][i][f"top{depth}"]  # type: ignore[index]
                    for r in report["readers"].values())  # type: ignore[union-attr]
                for i in range(len(phrase))]
        pct = 100 * (step + sum(most)) / n_words
        report[f"every_document_top{depth}_pct"] = pct
        print(f"every document out of {'the top 5' if depth == 5 else 'first place'} under "
              f"each reader: at least {pct:.1f} % of words", flush=True)
    if a.json:
        with atomic_output(a.json) as f:  # a temporary file, then renamed; 0600
            f.write(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()

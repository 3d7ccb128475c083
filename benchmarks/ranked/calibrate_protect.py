"""Choose the protections' safety margins on held-in data (never the TAB test documents).

The protections stop when the tool's own attacks no longer rank the source first, with a
relative safety margin for the ranking functions and detectors they were not tuned to
(``presidio_delink.protect.ranked``: whole text ``safety``, sentences
``sentence_safety``; ``presidio_delink.protect.containment``: ``safety``).  Here each
margin is the smallest value of a grid at which a *held-in family* of attackers ranks the
source first for at most ``--rate`` of the held-in texts.

Held-in texts: the TAB train/dev documents (gold-masked, DIRECT and QUASI mentions
replaced; their source is in the TAB collection, grouped by case) and the Wikipedia
biographies (manual masks; the collection grouped by person).  The TAB test documents are
not read.

The held-in family is written here, for the calibration only: it shares no code with the
defence's attacks nor with the benchmark's adversaries (``tests/ranked_adversaries.py``),
so the margins are chosen neither on the test documents nor against the checking attack.

* ranked: BM25 over the index's normalised words, with a crude suffix-stripping stemmer or
  none, with or without the stop words of :data:`STOP`, ``(k1, b)`` in
  ``(0.9, 0.4), (1.2, 0.75), (2.0, 1.0)``, Lucene's idf ``log(1 + (N - n + .5) / (n + .5))``
  (always positive, unlike FTS5's), a group scored by its best document or as one document
  (its texts concatenated): 24 members.  Whole text as one OR query, and the attacker's
  best sentence (the sentence of at least 5 terms whose top group leads the second by the
  largest share).  A text counts as found when some member's whole-text or best-sentence
  answer is its source.
* containment: every q-gram (q = 3..6) of the text's words against the documents', no
  chaining; per group the share of the text's q-grams it holds and its longest run of
  consecutive shared q-grams; the argmax group is the answer under either score.

Usage::

    python benchmarks/ranked/calibrate_protect.py [--tab 40] [--wiki 20] [--rate 0.03]
        [--whole-grid 0,0.05,...] [--containment-grid 0,0.1,...] [--json OUT]

Rule: the smallest whole-text margin (grid) at which no member of the family finds more
than ``--rate`` of the held-in texts by the whole text, then the smallest sentence
margin at which none finds more by its best sentence, then the smallest containment
margin at which the containment family finds at most that share (when none does, the
smallest margin with the fewest finds).  The default rate, 5 %,
is the issue's target (6 of 127).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibrate import GROUP, tab_held_in  # noqa: E402

from presidio_delink.datasets import tab_collection, wikibio_collection, wikibio_test  # noqa: E402
from presidio_delink.edits import sentence_bounds  # noqa: E402
from presidio_delink.index import NgramIndex  # noqa: E402
from presidio_delink.io import atomic_output  # noqa: E402
from presidio_delink.pipeline import Delinker  # noqa: E402
from presidio_delink.protect import Protector  # noqa: E402

_STOP = """a an and are as at be by for from has have he her his in is it its of on or she
    that the their them they this to was were which who will with not been had but"""
STOP = frozenset(_STOP.split())
_SUFFIX = re.compile(r"(ations?|ingly|ings?|edly|ed|es|s|ly|ment|ments)$")
PARAMS = ((0.9, 0.4), (1.2, 0.75), (2.0, 1.0))
MIN_TERMS = 5


def stem(w: str) -> str:
    return _SUFFIX.sub("", w) if len(w) > 5 else w


class Family:
    """The held-in ranked family over one index."""

    def __init__(self, index: NgramIndex) -> None:
        self.index = index
        groups = index.doc_groups
        self.gnames = list(dict.fromkeys(groups))
        gi = {g: i for i, g in enumerate(self.gnames)}
        self.gof = np.asarray([gi[g] for g in groups])
        docs = [index.doc_words(d) for d in range(index.n_docs)]
        self.views: list[tuple[str, dict[str, int], list[tuple[str, sp.csr_matrix]]]] = []
        for stemmed in (False, True):
            for stop in (False, True):
                vocab: dict[str, int] = {}
                rows, cols = [], []
                for d, ws in enumerate(docs):
                    for w in ws:
                        if not w or (stop and w in STOP):
                            continue
                        t = stem(w) if stemmed else w
                        rows.append(d)
                        cols.append(vocab.setdefault(t, len(vocab)))
                tf = sp.csr_matrix(
                    (np.ones(len(rows)), (rows, cols)), shape=(index.n_docs, len(vocab))
                )
                tf.sum_duplicates()
                g1 = sp.csr_matrix(
                    (np.ones(index.n_docs), (self.gof, np.arange(index.n_docs))),
                    shape=(len(self.gnames), index.n_docs),
                )
                gtf = (g1 @ tf).tocsr()
                mats = []
                for model, m in (("doc", tf), ("group", gtf)):
                    for k1, b in PARAMS:
                        mats.append((f"{model}-k{k1}-b{b}", self._bm25(m, k1, b)))
                name = f"{'stem' if stemmed else 'word'}{'-stop' if stop else ''}"
                self.views.append((name, vocab, mats))
        self.stemmed = [False, False, True, True]
        self.stop = [False, True, False, True]

    @staticmethod
    def _bm25(tf: sp.csr_matrix, k1: float, b: float) -> sp.csr_matrix:
        n = tf.shape[0]
        dl = np.asarray(tf.sum(axis=1)).ravel()
        avg = dl.mean() if n else 1.0
        df = np.bincount(tf.indices, minlength=tf.shape[1])
        idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
        coo = tf.tocoo()
        f = coo.data
        w = idf[coo.col] * f * (k1 + 1) / (f + k1 * (1 - b + b * dl[coo.row] / avg))
        return sp.csr_matrix((w, (coo.row, coo.col)), shape=tf.shape)

    def group_scores(self, text: str) -> Iterator[tuple[str, np.ndarray]]:
        """Per member (``view:model``), its score of every group for each query: row 0 the
        whole text, then each sentence of at least ``MIN_TERMS`` terms."""
        toks = self.index.tokenizer.tokens(text)
        bounds = sentence_bounds(text)
        sent = [next((i for i, (a, b) in enumerate(bounds) if a <= t.start < b), -1)
                for t in toks]
        for v, (vname, vocab, mats) in enumerate(self.views):
            terms: list[int] = []
            per_s: dict[int, set[int]] = defaultdict(set)
            for t, j in zip(toks, sent, strict=True):
                w = t.word
                if self.stop[v] and w in STOP:
                    continue
                tid = vocab.get(stem(w) if self.stemmed[v] else w)
                if tid is None:
                    continue
                terms.append(tid)
                if j >= 0:
                    per_s[j].add(tid)
            uniq = sorted(set(terms))
            if not uniq:
                continue
            qs = [uniq] + [sorted(s) for s in per_s.values() if len(s) >= MIN_TERMS]
            q = sp.csr_matrix(
                (np.ones(sum(len(x) for x in qs)),
                 (np.concatenate([np.full(len(x), i) for i, x in enumerate(qs)]),
                  np.concatenate(qs))),
                shape=(len(qs), len(vocab)),
            )
            for model, m in mats:
                s = np.asarray((m @ q.T).todense()).T  # queries x (docs or groups)
                if model.startswith("doc"):
                    g = np.full((len(qs), len(self.gnames)), 0.0)
                    for i in range(len(qs)):
                        np.maximum.at(g[i], self.gof, s[i])
                else:
                    g = s
                yield f"{vname}:{model}", g

    def found(self, text: str, group: str) -> dict[str, set[str]]:
        """The members whose whole-text / best-sentence answer is ``group``."""
        out: dict[str, set[str]] = {"whole": set(), "sentence": set()}
        for member, g in self.group_scores(text):
            top = np.argmax(g, axis=1)
            srt = np.sort(g, axis=1)
            lead = (srt[:, -1] - srt[:, -2]) / np.maximum(srt[:, -1], 1e-12)
            if self.gnames[top[0]] == group and g[0, top[0]] > 0:
                out["whole"].add(member)
            if len(g) > 1:
                best = 1 + int(np.argmax(lead[1:]))
                if self.gnames[top[best]] == group and g[best, top[best]] > 0:
                    out["sentence"].add(member)
        return out


#: Character n-gram lengths of the wide family (over the text's words joined by one space,
#: so grams run across word boundaries).
CHAR_NS = (3, 5)


def _char_terms(words: list[str], n: int) -> tuple[list[str], list[int]]:
    """The character ``n``-grams of ``" ".join(words)`` and the word each starts in (a
    gram starting on a space belongs to the word before it)."""
    s = " ".join(words)
    owner: list[int] = []
    for i, w in enumerate(words):
        owner.extend([i] * (len(w) + 1))
    return [s[i : i + n] for i in range(len(s) - n + 1)], owner[: max(0, len(s) - n + 1)]


class WideFamily(Family):
    """The held-in family widened to what query parsers and fuzzy engines read.

    Beyond :class:`Family`'s 24 members (distinct query terms): the same four word views
    with every occurrence of a query term counted (``-qtf``: a query parser over pasted
    text; per-document BM25, the three ``(k1, b)``), and BM25 over character 3- and
    5-grams of the text's words joined by spaces (grams run across word boundaries),
    with distinct grams and with every occurrence counted, per document, the three
    ``(k1, b)``: 24 more, 48 in all.  Written for the calibration only, like
    :class:`Family`: nothing of it comes from the defence or from the benchmark's panel.
    """

    def __init__(self, index: NgramIndex) -> None:
        super().__init__(index)
        self.char: list[tuple[int, dict[str, int], list[tuple[str, sp.csr_matrix]]]] = []
        docs = [[w for w in index.doc_words(d) if w] for d in range(index.n_docs)]
        for n in CHAR_NS:
            vocab: dict[str, int] = {}
            rows: list[int] = []
            cols: list[int] = []
            for d, ws in enumerate(docs):
                grams, _ = _char_terms(ws, n)
                rows.extend([d] * len(grams))
                cols.extend(vocab.setdefault(g, len(vocab)) for g in grams)
            tf = sp.csr_matrix(
                (np.ones(len(rows)), (rows, cols)), shape=(index.n_docs, len(vocab))
            )
            tf.sum_duplicates()
            mats = [(f"doc-k{k1}-b{b}", self._bm25(tf, k1, b)) for k1, b in PARAMS]
            self.char.append((n, vocab, mats))

    def _read(
        self, qs: list[dict[int, int]], nvocab: int, mats: list[tuple[str, sp.csr_matrix]],
        gi: int, qtf_too: bool, only_qtf: bool, prefix: str,
        out: dict[str, tuple[int | None, bool]],
    ) -> None:
        """Score the queries ``qs`` (whole text first, then sentences; term -> count)
        under ``mats`` and record each member's whole-text rank and best-sentence hit."""
        for qtf in ((False, True) if qtf_too else (True,) if only_qtf else (False,)):
            data = [float(c) if qtf else 1.0 for q in qs for c in q.values()]
            rr = [i for i, q in enumerate(qs) for _ in q]
            cc = [t for q in qs for t in q]
            qm = sp.csr_matrix((data, (rr, cc)), shape=(len(qs), nvocab))
            for model, m in mats:
                if only_qtf and model.startswith("group"):
                    continue
                sc = np.asarray((m @ qm.T).todense()).T
                if model.startswith("doc"):
                    g = np.zeros((len(qs), len(self.gnames)))
                    for i in range(len(qs)):
                        np.maximum.at(g[i], self.gof, sc[i])
                else:
                    g = sc
                src = g[0, gi]
                rank = None if src <= 0 else 1 + int(np.count_nonzero(g[0] > src))
                first_s = False
                if len(qs) > 1:
                    srt = np.sort(g[1:], axis=1)
                    lead = (srt[:, -1] - srt[:, -2]) / np.maximum(srt[:, -1], 1e-12)
                    best = 1 + int(np.argmax(lead))
                    top = int(np.argmax(g[best]))
                    first_s = bool(top == gi and g[best, top] > 0)
                out[f"{prefix}:{model}{'-qtf' if qtf else ''}"] = (rank, first_s)

    def ranks(self, text: str, group: str) -> dict[str, tuple[int | None, bool]]:
        """Per member: the source's whole-text rank (ties count as found; None: not
        matched) and whether its best sentence (of at least ``MIN_TERMS`` distinct
        terms) puts the source first."""
        toks = self.index.tokenizer.tokens(text)
        bounds = sentence_bounds(text)
        sent = [next((i for i, (a, b) in enumerate(bounds) if a <= t.start < b), -1)
                for t in toks]
        gi = self.gnames.index(group)
        out: dict[str, tuple[int | None, bool]] = {}

        def queries(pairs: list[tuple[int, int]]) -> list[dict[int, int]]:
            whole: dict[int, int] = defaultdict(int)
            per: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
            for tid, j in pairs:
                whole[tid] += 1
                if j >= 0:
                    per[j][tid] += 1
            return [whole] + [q for _, q in sorted(per.items()) if len(q) >= MIN_TERMS]

        for v, (vname, vocab, mats) in enumerate(self.views):
            pairs = []
            for t, j in zip(toks, sent, strict=True):
                if self.stop[v] and t.word in STOP:
                    continue
                tid = vocab.get(stem(t.word) if self.stemmed[v] else t.word)
                if tid is not None:
                    pairs.append((tid, j))
            qs = queries(pairs)
            if not qs[0]:
                continue
            self._read(qs, len(vocab), mats, gi, False, False, vname, out)
            self._read(qs, len(vocab), mats, gi, False, True, vname, out)
        words = [t.word for t in toks if t.word]
        wsent = [j for t, j in zip(toks, sent, strict=True) if t.word]
        for n, vocab, mats in self.char:
            grams, owner = _char_terms(words, n)
            pairs = [(vocab[g], wsent[o]) for g, o in zip(grams, owner, strict=True)
                     if g in vocab]
            qs = queries(pairs)
            if qs[0]:
                self._read(qs, len(vocab), mats, gi, True, False, f"char{n}", out)
        return out


def qgram_found(index: NgramIndex, grams: dict[int, dict[tuple[str, ...], set[str]]],
                text: str, group: str) -> bool:
    """The held-in containment family: argmax group by shared q-grams or longest run."""
    words = [t.word for t in index.tokenizer.tokens(text)]
    for q, table in grams.items():
        share: dict[str, int] = defaultdict(int)
        run: dict[str, int] = defaultdict(int)
        best_run: dict[str, int] = defaultdict(int)
        prev: set[str] = set()
        for i in range(len(words) - q + 1):
            gs = table.get(tuple(words[i : i + q]), set())
            for g in gs:
                share[g] += 1
                run[g] = run[g] + 1 if g in prev else 1
                best_run[g] = max(best_run[g], run[g])
            prev = gs
        for score in (share, best_run):
            if score and max(score, key=lambda g: (score[g], g)) == group:
                return True
    return False


def build_grams(index: NgramIndex, texts: list[str]) -> dict[int, dict[tuple[str, ...], set[str]]]:
    """q-gram -> groups, for the q-grams of the held-in texts only (what is looked up)."""
    want: dict[int, set[tuple[str, ...]]] = {q: set() for q in (3, 4, 5, 6)}
    for text in texts:
        ws = [t.word for t in index.tokenizer.tokens(text)]
        for q in want:
            want[q].update(tuple(ws[i : i + q]) for i in range(len(ws) - q + 1))
    out: dict[int, dict[tuple[str, ...], set[str]]] = {q: {} for q in want}
    for d in range(index.n_docs):
        ws = [w for w in index.doc_words(d) if w]
        g = index.doc_groups[d]
        for q, need in want.items():
            for i in range(len(ws) - q + 1):
                k = tuple(ws[i : i + q])
                if k in need:
                    out[q].setdefault(k, set()).add(g)
    return out


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tab", type=int, default=40, help="TAB train/dev texts (first N)")
    ap.add_argument("--wiki", type=int, default=20, help="Wikipedia texts (first N)")
    ap.add_argument("--rate", type=float, default=0.05,
                    help="most held-in texts (share) one family member may find")
    ap.add_argument("--whole-grid", type=lambda x: [float(v) for v in x.split(",")],
                    default=[0.0, 0.05, 0.1, 0.15, 0.2, 0.3])
    ap.add_argument("--containment-grid", type=lambda x: [float(v) for v in x.split(",")],
                    default=[0.0, 0.1, 0.25, 0.4])
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    print("load:", _uptime(), flush=True)
    sets = []
    held = list(tab_held_in().items())[: a.tab]
    tab_idx = NgramIndex.build(list(tab_collection()), None, max_n=8, group_regex=GROUP)
    sets.append(("tab-train-dev", tab_idx, held))
    if a.wiki:
        wiki = [(tid.split(":", 1)[1], deid) for tid, _o, deid in wikibio_test()][: a.wiki]
        wiki_idx = NgramIndex.build(list(wikibio_collection()), None, max_n=8, group_regex=GROUP)
        sets.append(("wikipedia", wiki_idx, wiki))
    fams = {name: Family(idx) for name, idx, _ in sets}
    grams = {name: build_grams(idx, [t for _, t in texts]) for name, idx, texts in sets}
    base: dict[str, list] = {}
    for name, idx, texts in sets:
        d = Delinker(idx, k=2, arity=1)
        base[name] = [(g, d.delink(t, g)) for g, t in texts]
    n_total = sum(len(t) for _, _, t in sets)
    limit = a.rate * n_total
    log: list[dict[str, object]] = []

    def run(mode: str, **kw: float) -> dict[str, object]:
        t0 = time.process_time()
        found_w = found_s = found_c = changed = words = 0
        per: dict[str, int] = defaultdict(int)
        for name, idx, _texts in sets:
            d = Delinker(idx, k=2, arity=1)
            prot = Protector(d, mode, **kw)  # type: ignore[arg-type]
            for g, r0 in base[name]:
                import copy

                res = copy.deepcopy(r0)
                prot.protect(res, g)
                assert res.text is not None
                words += res.n_words
                changed += res.words_redacted + res.words_rewritten
                if mode == "ranked":
                    f = fams[name].found(res.text, g)
                    found_w += bool(f["whole"])
                    found_s += bool(f["sentence"])
                    per[f"{name}:whole"] += bool(f["whole"])
                    per[f"{name}:sentence"] += bool(f["sentence"])
                    for q in ("whole", "sentence"):
                        for m in f[q]:
                            per[f"{q}:{m}"] += 1
                else:
                    hit = qgram_found(idx, grams[name], res.text, g)
                    found_c += hit
                    per[f"{name}:containment"] += hit
        row = {"mode": mode, **kw, "found_whole": found_w, "found_sentence": found_s,
               "found_containment": found_c, "changed_pct": round(100 * changed / words, 1),
               "cpu_s": round(time.process_time() - t0, 1), "texts": n_total,
               "per": dict(sorted(per.items()))}
        print(json.dumps(row), flush=True)
        log.append(row)
        return row

    def worst(row: dict[str, object], q: str) -> int:
        """The most texts one family member finds (whole text or best sentence)."""
        per = row["per"]
        assert isinstance(per, dict)
        return max((v for k, v in per.items() if k.startswith(q + ":")), default=0)

    chosen: dict[str, float] = {}
    for s in a.whole_grid:
        r = run("ranked", ranked_safety=s, sentence_safety=0.0)
        if worst(r, "whole") <= limit:
            chosen["ranked_safety"] = s
            break
    else:
        chosen["ranked_safety"] = a.whole_grid[-1]
    for ss in (0.0, 0.05, 0.1):
        r = r if ss == 0.0 else run(
            "ranked", ranked_safety=chosen["ranked_safety"], sentence_safety=ss)
        if worst(r, "sentence") <= limit:
            chosen["sentence_safety"] = ss
            break
    else:
        chosen["sentence_safety"] = 0.1
    tried: list[tuple[int, float]] = []
    for cs in a.containment_grid:
        r = run("containment", containment_safety=cs)
        tried.append((int(r["found_containment"]), cs))  # type: ignore[call-overload]
        if r["found_containment"] <= limit:  # type: ignore[operator]
            chosen["containment_safety"] = cs
            break
    else:  # none reaches the rate: the smallest margin with the fewest finds
        chosen["containment_safety"] = min(tried)[1]
    out = {"chosen": chosen, "rate": a.rate, "texts": {n: len(t) for n, _, t in sets},
           "runs": log, "load": _uptime()}
    print(json.dumps(out, indent=2))
    if a.json:
        with atomic_output(a.json) as f:
            f.write(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Containment attack and `--protect containment` against an independent winnowing detector.

The reference detector is written here from the published method, sharing no code with
the package (its own tokenizer, not ``presidio_delink/text.py``):

* words: ``[^\\W_]+`` runs of the casefolded text, redaction placeholders dropped
  (``[LABEL]``, ``<LABEL>``);
* fingerprints: hashes of every ``k``-word gram, winnowed with a window of ``w`` grams
  (the minimum hash of each window, rightmost on ties: Schleimer, Wilkerson and Aiken,
  "Winnowing: local algorithms for document fingerprinting", SIGMOD 2003), each with its
  word position;
* matching: fingerprints shared with a collection document give pairs (query position,
  document position); per document the pairs are clustered into chains in query order
  (next pair within ``gap`` words, diagonal within ``drift`` words); chains of at least 2
  fingerprints are kept and a document scores the query words its chains cover
  (from the first word of the first fingerprint to the last word of the last, capped per
  chain by the matched grams).  Documents are ranked by score: the source is found when
  it is first.

Parts (each prints figures and ratios):

1. **agreement**: on the arity-1 redaction-only TAB outputs, the share of documents whose
   source the winnowing detector ranks first (k = 4, w = 4) that ``ContainmentAttack``
   also ranks first (target >= 95 %);
2. **speed**: seconds per document of the containment attack (target <= 1 s);
3. **frontier**: words changed vs top-1 rate of our attack and of winnowing detectors with
   fingerprint lengths 3, 4 and 5, for the gold-masked input, ``--arity`` 1..3 and
   ``--protect containment`` (target <= 5 % for every length, fewer words than arity 3);
4. ``--calibrate``: the decision margin's null distribution (TAB documents NOT in the
   collection against an index without them).

Usage::

    python benchmarks/bench_containment.py [--limit N] [--arities 1,2,3] [--calibrate]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from presidio_delink.attacks import ContainmentAttack, rank_of
from presidio_delink.datasets import tab_collection, tab_test, wikibio_collection, wikibio_test
from presidio_delink.index import NgramIndex
from presidio_delink.linkage import analyze
from presidio_delink.pipeline import Delinker
from presidio_delink.protect import Protector

# -- the reference winnowing detector (independent of the package) -----------------------
_PLACEHOLDER = re.compile(r"\[[A-Z][A-Z_ ]*\]|<[A-Z][A-Z_]*>")
_WORD = re.compile(r"[^\W_]+")


def words_of(text: str) -> list[str]:
    return _WORD.findall(_PLACEHOLDER.sub(" ", text).casefold())


def _h(gram: tuple[str, ...]) -> int:
    return int.from_bytes(
        hashlib.blake2b(" ".join(gram).encode(), digest_size=8).digest(), "little"
    )


def fingerprints(words: list[str], k: int, w: int) -> list[tuple[int, int]]:
    """Winnowed ``(hash, position)`` pairs of ``k``-grams, window ``w``."""
    hs = [_h(tuple(words[i : i + k])) for i in range(len(words) - k + 1)]
    if not hs:
        return []
    if len(hs) < w:
        j = min(range(len(hs)), key=lambda i: (hs[i], -i))
        return [(hs[j], j)]
    out: list[tuple[int, int]] = []
    last = -1
    for s in range(len(hs) - w + 1):
        win = hs[s : s + w]
        m = min(win)
        j = s + max(i for i, v in enumerate(win) if v == m)
        if j != last:
            out.append((hs[j], j))
            last = j
    return out


class Winnowing:
    """Winnowing fingerprint index of a collection, with chain scoring."""

    def __init__(
        self,
        docs: list[tuple[str, str]],
        k: int = 4,
        w: int = 4,
        gap: int | None = None,
        drift: int = 5,
    ) -> None:
        self.k, self.w, self.drift = k, w, drift
        self.gap = gap if gap is not None else 3 * (k + w)
        self.ids = [d for d, _ in docs]
        self.table: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for n, (_, text) in enumerate(docs):
            for h, p in fingerprints(words_of(text), k, w):
                self.table[h].append((n, p))

    def scores(self, text: str) -> dict[str, float]:
        qw = words_of(text)
        pairs: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for h, qp in fingerprints(qw, self.k, self.w):
            for d, dp in self.table.get(h, ()):
                pairs[d].append((qp, dp))
        out: dict[str, float] = {}
        for d, ps in pairs.items():
            ps.sort()
            chains: list[list[tuple[int, int]]] = []
            for qp, dp in ps:
                best = None
                for c in chains:
                    lq, ld = c[-1]
                    if (
                        0 < qp - lq <= self.gap
                        and dp > ld
                        and abs((dp - qp) - (ld - lq)) <= self.drift
                    ) and (best is None or c[-1][0] > best[-1][0]):
                        best = c
                if best is None:
                    chains.append([(qp, dp)])
                else:
                    best.append((qp, dp))
            covered: set[int] = set()
            for c in chains:
                if len(c) >= 2:
                    for qp, _ in c:
                        covered.update(range(qp, qp + self.k))
            if covered:
                out[self.ids[d]] = len(covered) / max(1, len(qw))
        return out

    def top1(self, text: str, source: str) -> bool:
        sc = self.scores(text)
        if source not in sc:
            return False
        s = sc[source]
        return all(v < s for d, v in sc.items() if d != source)


# -- helpers ------------------------------------------------------------------------------
def _uptime() -> str:
    try:
        return subprocess.run(
            ["uptime"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        return "?"


def _delink(idx: NgramIndex, tests, arity: int, protect: bool, attack: ContainmentAttack):
    d = Delinker(idx, k=2, arity=arity, rewriter=None)
    protector = Protector(d, "containment", containment=attack, rewrite=False)
    outs = []
    for tid, _orig, deid in tests:
        res = d.delink(deid, tid)
        if protect:
            protector.protect(res, tid)
        assert res.text is not None and not analyze(idx, res.text, k=2, arity=arity).linkable
        outs.append((tid, res.text, res.n_words, res.words_redacted + res.words_rewritten))
    return outs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", choices=["tab", "wiki"], default="tab")
    ap.add_argument("--limit", type=int, default=None, help="first N test documents")
    ap.add_argument("--arities", default="1,2,3")
    ap.add_argument("--lengths", default="3,4,5")
    ap.add_argument("--window", type=int, default=4)
    ap.add_argument("--calibrate", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    print("load:", _uptime())
    if a.dataset == "tab":
        coll, tests = list(tab_collection()), list(tab_test())[: a.limit]
    else:
        coll, tests = list(wikibio_collection()), list(wikibio_test())[: a.limit]
    work = Path(tempfile.mkdtemp(prefix="bench-containment-"))
    t0 = time.perf_counter()
    idx = NgramIndex.build(coll, work / "tab", max_n=8)
    print(
        f"{a.dataset} index: {len(coll)} docs, {time.perf_counter() - t0:.1f} s; "
        f"{len(tests)} test docs"
    )
    attack = ContainmentAttack(idx)
    lengths = [int(x) for x in a.lengths.split(",")]
    dets = {}
    for k in lengths:
        t0 = time.perf_counter()
        dets[k] = Winnowing(coll, k=k, w=a.window)
        print(f"winnowing k={k} w={a.window}: built in {time.perf_counter() - t0:.1f} s")
    figures: dict[str, object] = {"load": _uptime(), "docs": len(tests)}

    settings = [("input", 0, False)] + [
        (f"arity {r}", r, False) for r in [int(x) for x in a.arities.split(",")]
    ]
    settings.append(("arity 1 + protect containment", 1, True))
    rows = []
    for label, arity, protect in settings:
        t0 = time.perf_counter()
        if arity == 0:
            outs = [(tid, deid, 0, 0) for tid, _o, deid in tests]
        else:
            outs = _delink(idx, tests, arity, protect, attack)
        t_del = (time.perf_counter() - t0) / len(tests)
        t0 = time.perf_counter()
        verdicts = [(tid, attack.verdict(t)) for tid, t, _, _ in outs]
        t_att = (time.perf_counter() - t0) / len(tests)
        ours = [rank_of(v.ranking, tid) == 1 for tid, v in verdicts]
        linked = sum(1 for tid, v in verdicts if v.linked and v.ranking[0].group == tid)
        win = {k: [dets[k].top1(t, tid) for tid, t, _, _ in outs] for k in lengths}
        words = sum(n for _, _, n, _ in outs)
        changed = sum(c for _, _, _, c in outs)
        row = {
            "setting": label,
            "words_changed_pct": round(100 * changed / words, 1) if words else 0.0,
            "ours_top1": sum(ours),
            "ours_linked_to_source": linked,
            **{f"winnow{k}_top1": sum(win[k]) for k in lengths},
            "attack_s_per_doc": round(t_att, 3),
            "delink_s_per_doc": round(t_del, 3),
        }
        if label == "arity 1":
            ref = win[4] if 4 in win else win[lengths[0]]
            both = sum(1 for x, y in zip(ours, ref, strict=True) if x and y)
            row["agreement"] = f"{both}/{sum(ref)} = {100 * both / max(1, sum(ref)):.1f} %"
        rows.append(row)
        print(json.dumps(row))
    figures["frontier"] = rows
    n = len(tests)
    print(
        "\n| setting | words changed | ours top-1 | "
        + " | ".join(f"winnow k={k} top-1" for k in lengths)
        + " | attack s/doc |"
    )
    print("|---|---|---|" + "---|" * len(lengths) + "---|")
    for r in rows:
        print(
            f"| {r['setting']} | {r['words_changed_pct']} % | {r['ours_top1']}/{n} | "
            + " | ".join(f"{r[f'winnow{k}_top1']}/{n}" for k in lengths)
            + f" | {r['attack_s_per_doc']} |"
        )

    if a.calibrate and a.dataset == "tab":
        figures["calibration"] = calibrate(coll)
    if a.json:
        a.json.write_text(json.dumps(figures, indent=2))
    print("load:", _uptime())


def calibrate(coll: list[tuple[str, str]]) -> dict[str, object]:
    """Null distribution of s1 - s2: the annotated train/dev TAB documents (not test) are
    removed from the collection and queried against it, gold-masked where masks exist."""
    data = Path(
        os.environ.get(
            "PRESIDIO_DELINK_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"
        )
    )
    held = {}
    with open(data / "tab" / "tab_sample144_one_annotator.jsonl", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if rec["metadata"]["provenance"].get("dataset_type") != "test":
                spans = [
                    (e["start_offset"], e["end_offset"])
                    for e in rec["entities"]
                    if e.get("identifier_type") in ("DIRECT", "QUASI")
                ]
                text = rec["text"]
                for s, e in sorted(spans, reverse=True):
                    text = text[:s] + "[REDACTED]" + text[e:]
                held["tab:" + rec["metadata"]["provenance"]["doc_id"]] = text
    rest = [(d, t) for d, t in coll if d not in held]
    work = Path(tempfile.mkdtemp(prefix="bench-calib-"))
    idx = NgramIndex.build(rest, work / "tab", max_n=8)
    att = ContainmentAttack(idx)
    gaps = []
    for text in held.values():
        r = att.scores(text)
        s1 = r[0].score if r else 0.0
        s2 = r[1].score if len(r) > 1 else 0.0
        gaps.append(s1 - s2)
    g = np.asarray(gaps)
    out = {
        "null_docs": len(g),
        "p50": float(np.percentile(g, 50)),
        "p95": float(np.percentile(g, 95)),
        "p99": float(np.percentile(g, 99)),
        "max": float(g.max()),
        "false_claims_at_default_margin": int(np.sum(g >= att.margin)),
    }
    print("calibration (s1 - s2, source absent):", json.dumps(out))
    return out


if __name__ == "__main__":
    sys.exit(main())

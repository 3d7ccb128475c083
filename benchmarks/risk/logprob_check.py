"""Do two versions of the scorer give the same log-probabilities? (issue 14: the shipped
classifiers were trained on these numbers, so an engine change must keep them.)

Dump the plain and masked log-probabilities of the three median-length TAB test documents
(the ones ``bench_risk.py --timing`` times) and the first Wikipedia test documents with the
code on ``PYTHONPATH``, once per version, then compare:

    PYTHONPATH=OLD_TREE python benchmarks/risk/logprob_check.py dump /tmp/old.json --wiki 2
    PYTHONPATH=NEW_TREE python benchmarks/risk/logprob_check.py dump /tmp/new.json --wiki 2
    python benchmarks/risk/logprob_check.py compare /tmp/old.json /tmp/new.json

``dump`` also prints each document's seconds per pass (wall and process CPU time) and the
load average.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def dump(out: Path, data: Path, n_wiki: int) -> None:
    import presidio_delink
    from presidio_delink.risk import make_scorer
    from presidio_delink.risk.data import load_span_table, load_texts

    texts, table = load_texts(data, "tab"), load_span_table(data, "tab", "test")
    order = sorted(table, key=lambda d: len(texts[d]))
    docs = [("tab", d, texts[d], table[d]) for d in order[len(order) // 2:len(order) // 2 + 3]]
    if n_wiki:
        wt, wtab = load_texts(data, "wiki"), load_span_table(data, "wiki", "test")
        docs += [("wiki", d, wt[d], wtab[d]) for d in sorted(wtab)[:n_wiki]]
    scorer = make_scorer("embedded")
    scorer.score("Text", " warm-up")  # loads the model
    print(f"code: {presidio_delink.__file__}; OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}", flush=True)
    res = {}
    for ds, d, text, rows in docs:
        spans = [(r.start, r.end) for r in rows]
        masks = [(r.start, r.end, f"<{r.label_type}>") for r in rows]
        c0, t0 = time.process_time(), time.perf_counter()
        plain = scorer.score_spans(text, spans)
        t1 = time.perf_counter()
        masked = scorer.score_spans(text, spans, masked=masks)
        t2, c2 = time.perf_counter(), time.process_time()
        print(f"{ds} {d} {len(text)} chars {len(spans)} spans: plain {t1 - t0:.2f} s, masked "
              f"{t2 - t1:.2f} s, total {t2 - t0:.2f} s (CPU {c2 - c0:.2f} s; load "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})", flush=True)
        res[f"{ds}/{d}"] = {"tokens": [list(p.tokens) for p in plain],
                            "plain": [list(p.logprobs) for p in plain],
                            "masked": [list(m.logprobs) for m in masked]}
    from presidio_delink.io import atomic_output

    with atomic_output(out) as fh:
        fh.write(json.dumps(res))


def compare(a_path: Path, b_path: Path) -> float:
    a = json.loads(a_path.read_text(encoding="utf-8"))
    b = json.loads(b_path.read_text(encoding="utf-8"))
    if sorted(a) != sorted(b):
        sys.exit("the two dumps cover different documents")
    worst, n = 0.0, 0
    for key in a:
        if a[key]["tokens"] != b[key]["tokens"]:
            sys.exit(f"{key}: the spans' tokens differ")
        for kind in ("plain", "masked"):
            for x, y in zip(a[key][kind], b[key][kind], strict=True):
                n += len(x)
                worst = max([worst, *(abs(u - v) for u, v in zip(x, y, strict=True))])
    print(f"{len(a)} documents, {n} log-probabilities (plain and masked): max |difference| "
          f"{worst:.3g} nats")
    return worst


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("--data", type=Path, default=Path("../shared/data"))
    d.add_argument("--wiki", type=int, default=2, help="also the first N Wikipedia documents")
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = ap.parse_args()
    if args.cmd == "dump":
        dump(args.out, args.data, args.wiki)
    else:
        compare(args.a, args.b)


if __name__ == "__main__":
    main()

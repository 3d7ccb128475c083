"""The shipped risk classifiers on log-probabilities of two engines: how many decisions move.

The shipped models (presidio_delink/risk/models/) were trained on the numpy engine's float32
log-probabilities; the torch engine multiplies in bfloat16 (presidio_delink/llm/torch_lm.py).
For every span of the Wikipedia and TAB test tables scored in both files, this prints how
far the log-probabilities lie apart, and per indicator how many MASK decisions differ and
the P / R / F1 of the MASK decision with either (gold labels of the tables; the shipped
models were trained on these spans, so the figures are in-sample: the point is the
difference).

    PYTHONPATH=. python benchmarks/risk/engine_agreement.py --data ../shared/data \
        --a benchmarks/risk/logprobs_wiki.jsonl benchmarks/risk/logprobs_tab.jsonl \
        --b benchmarks/risk/logprobs_wiki_bf16.jsonl benchmarks/risk/logprobs_tab_bf16.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from presidio_delink.io import atomic_output
from presidio_delink.risk.indicators import FEATURES, INDICATORS
from presidio_delink.risk.model import load_model
from presidio_delink.risk.train import examples, load_own_logprobs, reference_index


def prf(pred: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    tp = int((pred & (y == 1)).sum())
    p = tp / max(1, int(pred.sum()))
    r = tp / max(1, int(y.sum()))
    return p, r, 2 * p * r / (p + r) if p + r else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--a", type=Path, nargs="+", required=True, help="float32 log-probabilities")
    ap.add_argument("--b", type=Path, nargs="+", required=True, help="bfloat16 log-probabilities")
    ap.add_argument("--index-dir", type=Path, default=Path("benchmarks/risk/index"))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    own_a, own_b = load_own_logprobs(args.a), load_own_logprobs(args.b)
    both = set(own_a) & set(own_b)
    own_a = {k: v for k, v in own_a.items() if k in both}
    own_b = {k: v for k, v in own_b.items() if k in both}
    out: dict[str, object] = {}
    for ds in ("wiki", "tab"):
        if not any(k[0] == ds for k in both):
            continue
        idx = reference_index(args.data, ds, args.index_dir / ds)
        ea = examples(args.data, ds, "own", own_a, idx)
        eb = examples(args.data, ds, "own", own_b, idx)
        assert [(r.doc_id, r.start, r.end) for r in ea.rows] == \
            [(r.doc_id, r.start, r.end) for r in eb.rows]
        diffs = []
        for ma, mb in zip(ea.measurements, eb.measurements, strict=True):
            for key in ("logprobs", "masked_logprobs"):
                diffs += [abs(x - y) for x, y in zip(ma[key], mb[key], strict=True)]
        d = np.asarray(diffs)
        docs = len({r.doc_id for r in ea.rows})
        print(f"{ds}: {docs} documents, {len(ea.rows)} spans, {len(d)} token log-probabilities "
              f"(plain and masked): |a - b| mean {d.mean():.4f}, median {np.median(d):.4f}, "
              f"p99 {np.quantile(d, 0.99):.3f}, max {d.max():.3f}")
        res: dict[str, object] = {"docs": docs, "spans": len(ea.rows),
                                  "lp_diff": {"mean": float(d.mean()), "max": float(d.max())}}
        for name in INDICATORS:
            model = load_model(None, name, FEATURES[name])
            pa = model.predict_proba(ea.matrix(name))
            pb = model.predict_proba(eb.matrix(name))
            da, db = pa >= model.threshold, pb >= model.threshold
            moved = int((da != db).sum())
            fa, fb = prf(da, ea.y), prf(db, eb.y)
            print(f"  {name:20s} decisions moved {moved:4d} of {len(da)} "
                  f"({moved / len(da):.2%}); |dP| mean {np.abs(pa - pb).mean():.4f}; P/R/F1 "
                  f"a {'/'.join(f'{v:.3f}' for v in fa)}, b {'/'.join(f'{v:.3f}' for v in fb)}")
            res[name] = {"moved": moved, "n": len(da), "prf_a": fa, "prf_b": fb}
        out[ds] = res
    if args.json:
        with atomic_output(args.json) as fh:
            fh.write(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()

"""Benchmark of the privacy risk indicators (issue 14): prints the figures of the
"Risk indicators" section of benchmarks/README.md.

    PYTHONPATH=. python benchmarks/bench_risk.py --data ../shared/data \
        --logprobs benchmarks/risk/logprobs_wiki.jsonl benchmarks/risk/logprobs_tab.jsonl

Needs our model's log-probabilities of the span tables (benchmarks/risk/extract_logprobs.py,
slow: it runs the LLM) and scikit-learn (eval extra). Classifiers are trained here per fold;
the shipped models are trained by ``python -m presidio_delink.risk.train``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from presidio_delink.eval import risk as R
from presidio_delink.risk import train as T
from presidio_delink.risk.data import load_texts
from presidio_delink.risk.indicators import INDICATORS

RULES = {"bestF1": None, "rec95": 0.95, "rec99": 0.99}


def predict(name: str, tr: T.Examples, te: T.Examples, rule: float | None) -> np.ndarray:
    thr = T.pick_threshold(T.oof_proba(name, tr, folds=3), tr.y, rule)
    clf = T.fit_sklearn(name, tr.matrix(name), tr.y)
    return clf.predict_proba(te.matrix(name))[:, 1] >= thr


def cv_predict(name: str, ex: T.Examples, rule: float | None, folds: int = 5) -> np.ndarray:
    from sklearn.model_selection import GroupKFold

    out = np.zeros(len(ex.rows), dtype=bool)
    for tr, te in GroupKFold(n_splits=folds).split(ex.rows, ex.y, ex.groups):
        keep_tr = np.zeros(len(ex.rows), dtype=bool)
        keep_tr[tr] = True
        out[te] = predict(name, ex.subset(keep_tr), ex.subset(~keep_tr), rule)
    return out


def report(label: str, ex: T.Examples, pred: np.ndarray, gold, texts) -> dict:
    pred = R.propagate(ex.groups, [s.text for s in ex.spans], pred)
    p, r, f = R.prf(pred, ex.y)
    masked: dict[str, list[tuple[int, int]]] = {d: [] for d in set(ex.groups)}
    for s, d, m in zip(ex.spans, ex.groups, pred, strict=True):
        if m:
            masked[d].append((s.start, s.end))
    gm = {d: v for d, v in masked.items() if d in gold}
    er = {}
    for key, direct in (("D", True), ("Q", False), ("DQ", None)):
        hit, tot = R.entity_recall(gold, texts, gm, direct)
        er[key] = hit / tot if tot else float("nan")
    words = sum(R.words_in(texts[d], v) for d, v in masked.items())
    print(f"  {label:22s} P {p:.3f} R {r:.3f} F1 {f:.3f} | ER direct {er['D']:.3f} "
          f"quasi {er['Q']:.3f} D+Q {er['DQ']:.3f} | words masked {words}", flush=True)
    return {"p": p, "r": r, "f1": f, "er": er, "words": words, "masked": masked}


def downstream(label: str, ex: T.Examples, masked: dict, index, texts) -> None:
    types = {(d, s.start, s.end): s.entity_type
             for d, s in zip(ex.groups, ex.spans, strict=True)}
    out = {d: R.masked_text(texts[d], [(s, e, types[(d, s, e)]) for s, e in spans])
           for d, spans in masked.items()}
    t0 = time.perf_counter()
    linked, flagged = R.linkage(index, out, k=2)
    print(f"  linkage {label:14s} {linked}/{len(out)} documents link at k=2, "
          f"{flagged} flagged N-grams ({time.perf_counter() - t0:.1f} s)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--logprobs", type=Path, nargs="+", required=True)
    ap.add_argument("--index-dir", type=Path, default=Path("benchmarks/risk/index"))
    ap.add_argument("--rules", nargs="+", default=list(RULES))
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    own = T.load_own_logprobs(args.logprobs)
    idx = {ds: T.reference_index(args.data, ds, args.index_dir / ds) for ds in ("wiki", "tab")}
    ex = {ds: T.examples(args.data, ds, "own", own, idx[ds]) for ds in ("wiki", "tab")}
    texts = {ds: load_texts(args.data, ds) for ds in ("wiki", "tab")}
    gold = {ds: R.load_gold(args.data, ds) for ds in ("wiki", "tab")}
    for ds in ("wiki", "tab"):
        print(f"{ds}: {len(ex[ds].rows)} spans of {len(set(ex[ds].groups))} documents scored "
              f"by our model; {len(gold[ds])} documents with gold entities")

    # -- target 1: our model's log-probabilities vs the paper's BERT ones ---------------
    print("\nLLM-probability indicator, MASK F1 on Wikipedia test (5-fold CV by document, "
          "same folds, threshold best F1 on the training folds):")
    bert = T.examples(args.data, "wiki", "bert")
    keep = [g in set(ex["wiki"].groups) for g in bert.groups]
    bert = bert.subset(keep)
    for label, e in (("our SmolLM2-135M", ex["wiki"]), ("paper's BERT", bert)):
        pred = cv_predict("llm_probability", e, None)
        p, r, f = R.prf(pred, e.y)
        print(f"  {label:18s} P {p:.3f} R {r:.3f} F1 {f:.3f}")
    bert_train = T.examples(args.data, "wiki", "bert", split="train")
    pred = predict("llm_probability", bert_train, bert, None)
    p, r, f = R.prf(pred, bert.y)
    print(f"  BERT, trained on Wikipedia train (paper setting): P {p:.3f} R {r:.3f} F1 {f:.3f}")

    # -- per indicator and combined -----------------------------------------------------
    settings = [
        ("Wikipedia test, 5-fold CV", "wiki", None),
        ("TAB test, 5-fold CV", "tab", None),
        ("TAB test, trained on Wikipedia", "tab", "wiki"),
        ("Wikipedia test, trained on TAB", "wiki", "tab"),
    ]
    for rule in args.rules:
        print(f"\n=== threshold rule {rule} (chosen on training predictions) ===")
        for title, ds, train_ds in settings:
            e = ex[ds]
            print(f"{title} ({len(e.rows)} spans):")
            base = report("mask every span", e, np.ones(len(e.rows), dtype=bool),
                          gold[ds], texts[ds])
            results = {}
            for name in INDICATORS:
                t0 = time.perf_counter()
                if train_ds is None:
                    pred = cv_predict(name, e, RULES[rule])
                else:
                    pred = predict(name, ex[train_ds], e, RULES[rule])
                results[name] = report(f"{name} ({time.perf_counter() - t0:.0f}s)", e, pred,
                                       gold[ds], texts[ds])
            c = results["combined"]
            print(f"  combined vs mask-all: precision {c['p']:.3f} vs {base['p']:.3f}, "
                  f"D+Q entity recall {c['er']['DQ']:.3f} vs {base['er']['DQ']:.3f}, "
                  f"words masked {c['words']} vs {base['words']}")
            if rule == args.rules[0] and train_ds is None:
                downstream("mask-all", e, base["masked"], idx[ds], texts[ds])
                downstream("combined", e, c["masked"], idx[ds], texts[ds])


if __name__ == "__main__":
    main()

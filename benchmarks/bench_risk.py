"""Benchmark of the privacy risk indicators (issue 14): prints the figures of the
"Risk indicators" section of benchmarks/README.md.

    PYTHONPATH=. python benchmarks/bench_risk.py --data ../shared/data \
        --logprobs benchmarks/risk/logprobs_wiki.jsonl benchmarks/risk/logprobs_tab.jsonl

Needs our model's log-probabilities of the span tables (benchmarks/risk/extract_logprobs.py;
slow: it runs the LLM) and scikit-learn (eval extra): classifiers are trained here per fold.
The shipped models are trained by ``python -m presidio_delink.risk.train``. ``--timing``
also times scoring TAB documents with the embedded model (``--timing-only``: only that;
``--engines torch numpy``: both log-probability engines, in turn on each document).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from presidio_delink.eval.risk import RULES, evaluate
from presidio_delink.io import atomic_output


def timing(data_root: Path, n_docs: int, engines: list[str]) -> None:
    """Seconds per TAB document (the ``n_docs`` median-length ones), each engine of
    ``engines`` in turn on each document (``$PRESIDIO_DELINK_LM_ENGINE``), so that the
    machine's drift hits them alike."""
    from presidio_delink.llm.torch_lm import ENGINE_ENV
    from presidio_delink.risk import Measurer, RiskIndicator, make_scorer
    from presidio_delink.risk.data import load_span_table, load_texts
    from presidio_delink.risk.train import reference_index

    texts = load_texts(data_root, "tab")
    table = load_span_table(data_root, "tab", "test")
    index = reference_index(data_root, "tab", Path("benchmarks/risk/index/tab"))
    scorers = {}
    for engine in engines:
        os.environ[ENGINE_ENV] = engine
        scorer = make_scorer("embedded")
        t0 = time.perf_counter()
        scorer.score("Text", " warm-up")  # loads the model (not in the per-document times)
        scorers[engine] = scorer
        print(f"  {engine}: {type(scorer.lm).__name__} loaded in "
              f"{time.perf_counter() - t0:.1f} s; OPENBLAS_NUM_THREADS="
              f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}", flush=True)

    class Res:
        def __init__(self, r) -> None:  # type: ignore[no-untyped-def]
            self.start, self.end, self.entity_type = r.start, r.end, r.label_type

    docs = sorted(table, key=lambda d: len(texts[d]))
    picks = [docs[len(docs) // 2 + i] for i in range(n_docs)]  # median-length documents
    for name in ("llm_probability", "combined"):
        indicators = {e: RiskIndicator(name, Measurer(sc, index)) for e, sc in scorers.items()}
        for d in picks:
            for engine, ind in indicators.items():
                t0 = time.perf_counter()
                ind.assess(texts[d], [Res(r) for r in table[d]])
                print(f"  {name}, {engine}: TAB {d}, {len(texts[d])} chars, {len(table[d])} "
                      f"spans: {time.perf_counter() - t0:.1f} s (load averages "
                      f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--logprobs", type=Path, nargs="+", default=[])
    ap.add_argument("--test-logprobs", type=Path, nargs="+", default=[],
                    help="the same spans scored by another engine, read on the test side "
                         "only (classifiers trained on --logprobs decide on them)")
    ap.add_argument("--index-dir", type=Path, default=Path("benchmarks/risk/index"))
    ap.add_argument("--rules", nargs="+", default=list(RULES), choices=list(RULES))
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    ap.add_argument("--timing", type=int, default=0, help="time N TAB documents")
    ap.add_argument("--timing-only", action="store_true", help="skip the evaluation")
    ap.add_argument("--engines", nargs="+", default=["auto"], choices=["auto", "torch", "numpy"],
                    help="log-probability engines to time, each in turn per document")
    args = ap.parse_args()
    if not args.logprobs and not args.timing_only:
        ap.error("--logprobs is required unless --timing-only")
    if args.timing_only:
        timing(args.data, args.timing or 1, args.engines)
        return
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    t0 = time.perf_counter()
    figures = evaluate(args.data, args.logprobs, args.index_dir, args.rules,
                       say=lambda m: print(m, flush=True), test_logprobs=args.test_logprobs)
    print(f"evaluation took {time.perf_counter() - t0:.0f} s; load average "
          f"{os.getloadavg()[0]:.2f}")
    if args.json:
        with atomic_output(args.json) as fh:
            fh.write(json.dumps(figures, indent=1))
    if args.timing:
        print("\nScoring the spans of one TAB document with the embedded model:")
        timing(args.data, args.timing, args.engines)


if __name__ == "__main__":
    main()

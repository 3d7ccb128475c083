"""Score every span of the shared span tables with our own model (offline, resumable).

Writes one JSON line per document to OUT: {"dataset", "doc_id", "spans": [{"start", "end",
"tokens", "logprobs", "masked_logprobs"}]}: ``logprobs`` with the text as it is,
``masked_logprobs`` with every other span of the table before it replaced by ``<TYPE>``
(the perturbation indicator). Documents already in OUT are skipped. With the default
``--llm embedded`` the numpy engine scores (NumpyScorer: one pass per document and pass);
``openai:URL`` or a GGUF it does not run use llama.cpp forced decoding (much slower).

    python benchmarks/risk/extract_logprobs.py --dataset wiki \
        --out benchmarks/risk/logprobs_wiki.jsonl
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from presidio_delink.risk.data import load_span_table, load_texts
from presidio_delink.risk.lm import make_scorer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", choices=["wiki", "tab"], required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--llm", default="embedded")
    ap.add_argument("--docs", default="", help="file with one doc id per line (order)")
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    table = load_span_table(args.data, args.dataset, "test")
    texts = load_texts(args.data, args.dataset)
    done = set()
    if args.out.exists():
        done = {json.loads(line)["doc_id"] for line in args.out.open()}
    order = sorted(table)
    if args.docs:
        wanted = [x.strip() for x in Path(args.docs).read_text().split() if x.strip()]
        order = [d for d in wanted if d in table] + [d for d in order if d not in wanted]
    scorer = make_scorer(args.llm, timeout=600)
    if hasattr(scorer, "lm"):
        print(f"engine: {type(scorer.lm).__name__}", file=sys.stderr, flush=True)
    with args.out.open("a") as fh:
        for doc_id in order:
            if doc_id in done:
                continue
            text = texts[doc_id]
            rows = table[doc_id]
            spans = [(r.start, r.end) for r in rows]
            t0 = time.perf_counter()
            base = scorer.score_spans(text, spans)
            t1 = time.perf_counter()
            masks = [(r.start, r.end, f"<{r.label_type}>") for r in rows]
            pert = scorer.score_spans(text, spans, masked=masks)
            t2 = time.perf_counter()
            rec = {"dataset": args.dataset, "doc_id": doc_id, "seconds": [t1 - t0, t2 - t1],
                   "spans": [{"start": s, "end": e, "tokens": list(b.tokens),
                              "logprobs": list(b.logprobs), "masked_logprobs": list(p.logprobs)}
                             for (s, e), b, p in zip(spans, base, pert, strict=True)]}
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
            print(doc_id, len(spans), f"{t1 - t0:.1f}s {t2 - t1:.1f}s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()

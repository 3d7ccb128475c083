"""DelinkEngine (the Presidio-native path) against Delinker (the pipeline) on TAB.

The first ``--docs`` (default 5) TAB test documents, de-identified with the gold masks
(``tab_test("gold")``: ``[REDACTED]`` placeholders), are delinked against the index of the
TAB collection (built once into ``--work-dir``/tab_index, reused after) with ``k=2``,
``arity=1`` and the same Presidio analyzer (``make_analyzer()``), two ways:

* ``Delinker(index, analyzer=analyzer, rewriter=...)``: ``delink(text)`` per document;
* ``DelinkEngine(analyzer, AnonymizerEngine(), index, rewriter=...)``: ``anonymize(text)``
  per document, and (``--llm none`` only) ``anonymize_list(texts)`` (PII analysis batched).

Each gets its own rewriter (``make_rewriter`` keeps an in-memory answer cache; a shared
one would let the second engine replay the first one's answers).  With an LLM, use
``--rounds 1``: later rounds would be served from each rewriter's cache.

Both warm up on one document first; then ``--rounds`` rounds, each timing the documents
one engine after the other, alternating which goes first.  Reported: total seconds per
round (median), the ratio engine/pipeline (target <= 1.2), and checks of every output:
linkage-free (``analyze`` again), PII placeholders intact (every ``<TYPE>`` item's text is
the placeholder), and, with ``--llm none``, the same text as the pipeline's.

Usage::

    python benchmarks/bench_presidio.py [--docs 5] [--llm none|embedded] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")

from presidio_anonymizer import AnonymizerEngine  # noqa: E402

from presidio_delink import NgramIndex  # noqa: E402
from presidio_delink.datasets import tab_collection, tab_test  # noqa: E402
from presidio_delink.errors import DelinkError  # noqa: E402
from presidio_delink.linkage import analyze  # noqa: E402
from presidio_delink.llm import make_rewriter  # noqa: E402
from presidio_delink.llm.base import find_breaker  # noqa: E402
from presidio_delink.pipeline import Delinker  # noqa: E402
from presidio_delink.presidio import ENTITY, DelinkEngine  # noqa: E402
from presidio_delink.presidio.engines import make_analyzer  # noqa: E402


def load_index(work: Path) -> NgramIndex:
    d = work / "tab_index"
    if (d / "meta.json").is_file():
        try:
            return NgramIndex.load(d)
        except DelinkError as exc:
            print(f"rebuilding {d}: {exc}", file=sys.stderr)
            import shutil

            shutil.rmtree(d)
    t0 = time.perf_counter()
    idx = NgramIndex.build(tab_collection(), d, progress=True)
    print(f"built {d} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return idx


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=5)
    ap.add_argument("--llm", default="none")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--arity", type=int, default=1)
    ap.add_argument("--work-dir", type=Path, default=Path("benchmarks/_work"))
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    idx = load_index(args.work_dir)
    docs = [(i, deid) for i, _, deid in list(tab_test("gold"))[: args.docs]]
    texts = [t for _, t in docs]
    analyzer = make_analyzer()
    # One rewriter each: make_rewriter's in-memory answer cache must not let one engine
    # serve the other's prompts.  Both warm up (model loaded) on the first document.
    llm = args.llm.strip().lower() != "none"
    delinker = Delinker(
        idx, k=args.k, arity=args.arity, analyzer=analyzer, rewriter=make_rewriter(args.llm)
    )
    engine = DelinkEngine(
        analyzer,
        AnonymizerEngine(),
        idx,
        k=args.k,
        arity=args.arity,
        rewriter=make_rewriter(args.llm),
    )
    delinker.delink(texts[0], "warm-up")
    engine.anonymize(texts[0])

    t_pipe: list[float] = []
    t_eng: list[float] = []
    t_batch: list[float] = []
    batch = []
    outs_pipe: list[str | None] = []
    outs_eng = []
    for r in range(args.rounds):
        order = ["pipe", "eng"] if r % 2 == 0 else ["eng", "pipe"]
        for which in order:
            t0 = time.perf_counter()
            if which == "pipe":
                outs_pipe = [delinker.delink(t, i).text for i, t in docs]
                t_pipe.append(time.perf_counter() - t0)
            else:
                outs_eng = [engine.anonymize(t) for t in texts]
                t_eng.append(time.perf_counter() - t0)
        if not llm:  # with an LLM the answers are cached by now: no fair batch timing
            t0 = time.perf_counter()
            batch = engine.anonymize_list(texts)
            t_batch.append(time.perf_counter() - t0)

    linkable = sum(analyze(idx, o.text, k=args.k, arity=args.arity).linkable for o in outs_eng)
    linkable += sum(analyze(idx, o.text, k=args.k, arity=args.arity).linkable for o in batch)
    pii_items = sum(1 for o in outs_eng for i in o.items if i.entity_type != ENTITY)
    pii_ok = all(
        o.text[i.start : i.end] == i.text == f"<{i.entity_type}>"
        for o in outs_eng
        for i in o.items
        if i.entity_type != ENTITY
    )
    same = [o.text == p for o, p in zip(outs_eng, outs_pipe, strict=True)]
    calls = {}
    for name, rw in (("pipeline", delinker.rewriter), ("engine", engine.rewriter)):
        breaker = find_breaker(rw) if rw is not None else None
        calls[name] = breaker.calls if breaker is not None else 0
    med_p, med_e = statistics.median(t_pipe), statistics.median(t_eng)
    med_b = statistics.median(t_batch) if t_batch else float("nan")
    res = {
        "docs": len(docs),
        "words": sum(len(t.split()) for t in texts),
        "llm": args.llm,
        "k": args.k,
        "arity": args.arity,
        "rounds": args.rounds,
        "pipeline_s": [round(x, 3) for x in t_pipe],
        "engine_s": [round(x, 3) for x in t_eng],
        "engine_batch_s": [round(x, 3) for x in t_batch],
        "ratio_engine_over_pipeline": round(med_e / med_p, 3),
        "ratio_batch_over_pipeline": round(med_b / med_p, 3),
        "engine_outputs_linkable": linkable,
        "pii_items": pii_items,
        "pii_placeholders_intact": pii_ok,
        "same_text_as_pipeline": sum(same),
        "llm_calls_incl_warm_up": calls,
        "load_average": list(os.getloadavg()),
    }
    print(json.dumps(res, indent=1))
    if args.json:
        args.json.write_text(json.dumps(res, indent=1) + "\n")
    return 0 if linkable == 0 and pii_ok else 1


if __name__ == "__main__":
    sys.exit(main())

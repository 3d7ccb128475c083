"""The candidate rewriter outside the legal register: Wikipedia biographies.

The register (:mod:`presidio_delink.candidates.register`) and most of the rules read on
outputs were chosen on court judgments (TAB).  This benchmark runs the same default path on
another kind of text, the 100 Wikipedia test summaries with Presidio's masks, against an
index of the Wiki553 collection (the 100 summaries and the public background text of the
553 people, grouped by person), k = 2, arity 1, offline (``rewriter=None,
rewrite="candidates"``).  The baseline, run on the same documents in the same run, is
redaction only (``rewriter=None``).  It prints:

* the share of the changed words that are rewritten or generalised, by source;
* words changed against the baseline's, and CPU seconds per document of each;
* residual linkage of every output (``analyze`` at k, arity 1) [0];
* the form kept by one-word replacements (``bench_rewrite.form_kept``);
* ``--samples`` rewrites drawn with ``--seed``, each in its context, to be read (the
  notes record what was judged wrong; a figure by reading, not by a check).

Usage::

    python benchmarks/bench_rewrite_wiki.py --docs 100 --samples 60 --seed 15 \\
        --json OUT.json --records OUT.jsonl
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_pipeline import _cpu, _git, _uptime, _versions  # noqa: E402
from bench_rewrite import form_kept  # noqa: E402

from presidio_delink.datasets import wikibio_collection, wikibio_test  # noqa: E402
from presidio_delink.index import NgramIndex  # noqa: E402
from presidio_delink.io import atomic_output  # noqa: E402
from presidio_delink.linkage import analyze  # noqa: E402
from presidio_delink.pipeline import Delinker  # noqa: E402


def _index(directory: Path) -> tuple[NgramIndex, str]:
    """The Wiki553 index, grouped by person (``wiki:ID`` and ``wikibg:ID`` share ``ID``),
    loaded from ``directory`` or built there."""
    if (directory / "meta.json").is_file():
        return NgramIndex.load(directory), "loaded"
    docs = [(i, t, i.split(":", 1)[1]) for i, t in wikibio_collection()]
    return NgramIndex.build(docs, directory), "built"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--docs", type=int, default=100)
    ap.add_argument("--masks", choices=("presidio", "manual", "spacy"), default="presidio")
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--samples", type=int, default=60, help="rewrites drawn to be read")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--index-dir", type=Path, default=ROOT / "benchmarks" / "_work" / "wikiidx")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--records", type=Path, help="JSON lines: each output and its audit")
    ap.add_argument("--sentences", default=None, metavar="LLM",
                    help="also run --rewrite sentences with this LLM (e.g. embedded): the "
                         "rewritten share and the sentences written again, to be read")
    args = ap.parse_args(argv)

    started = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    up0 = _uptime()
    t0 = time.perf_counter()
    idx, how = _index(args.index_dir)
    index_s = time.perf_counter() - t0
    loops = {
        "none": Delinker(idx, k=args.k, arity=1, rewriter=None),
        "candidates": Delinker(idx, k=args.k, arity=1, rewriter=None, rewrite="candidates"),
    }
    if args.sentences:
        from presidio_delink.llm import make_rewriter

        loops["sentences"] = Delinker(idx, k=args.k, arity=1,
                                      rewriter=make_rewriter(args.sentences),
                                      rewrite="sentences")
    tests = list(wikibio_test(args.masks))[: args.docs]
    cpu: dict[str, list[float]] = {name: [] for name in loops}
    results: dict[str, list[Any]] = {name: [] for name in loops}
    residual = 0
    records: list[str] = []
    for n, (cid, _orig, text) in enumerate(tests, 1):
        for name, loop in loops.items():  # interleaved: the same load for both
            c0 = time.process_time()
            r = loop.delink(text, cid)
            cpu[name].append(time.process_time() - c0)
            results[name].append(r)
            if r.text is not None and analyze(idx, r.text, k=args.k, arity=1).linkable:
                residual += 1
        r = results["candidates"][-1]
        audit = [dict(original=a.original, replacement=a.replacement, method=a.method,
                      source=a.source, start=a.start, end=a.end, refused=a.refused)
                 for a in r.audit]
        records.append(json.dumps(dict(id=cid, input=text, text=r.text, audit=audit),
                                  ensure_ascii=False))
        if n % 20 == 0:
            print(f"[{n}/{len(tests)}] {_uptime()}", file=sys.stderr)
    if args.records:
        with atomic_output(args.records) as fh:  # a 0600 temporary file, renamed into place
            fh.write("".join(line + "\n" for line in records))

    def summary(name: str) -> dict[str, Any]:
        rs = results[name]
        rw = sum(r.words_rewritten for r in rs)
        rd = sum(r.words_redacted for r in rs)
        sources = Counter(a.source or a.method for r in rs for a in r.audit)
        return {"words_rewritten": rw, "words_redacted": rd, "words_changed": rw + rd,
                "share_rewritten": rw / (rw + rd) if rw + rd else None,
                "cpu_seconds_per_doc": sum(cpu[name]) / len(rs) if rs else None,
                "sources": dict(sources)}

    out: dict[str, Any] = {
        "benchmark": "bench_rewrite_wiki", "started": started,
        "command": " ".join(["benchmarks/bench_rewrite_wiki.py", *(argv or sys.argv[1:])]),
        "uptime_start": up0, "cpu": _cpu(), "versions": _versions(), "git": _git(),
        "index": {"how": how, "seconds": round(index_s, 1), "groups": idx.n_groups},
        "documents": len(tests), "masks": args.masks, "k": args.k,
        "runs": {name: summary(name) for name in loops},
        "residual_docs": residual,
        "form_kept": form_kept(results["candidates"]),
    }
    base, cand = out["runs"]["none"], out["runs"]["candidates"]
    out["changed_ratio_candidates_over_none"] = (
        cand["words_changed"] / base["words_changed"] if base["words_changed"] else None
    )
    if args.sentences:
        from sentence_facts import rewritten_pairs, sentence_report

        out["sentences"] = sentence_report(results["sentences"])
        pairs = [p for r in results["sentences"] for p in rewritten_pairs(r)]
        out["sentence_samples"] = random.Random(args.seed).sample(pairs, min(20, len(pairs)))
    rows = []
    for r in results["candidates"]:
        for a in r.audit:
            if a.method != "redacted" and a.pass_no == 1:
                t = r.input_text
                rows.append((a.original, a.replacement, a.method,
                             t[max(0, a.start - 60) : a.start] + "«" + a.original + "»"
                             + t[a.end : a.end + 40]))
    random.Random(args.seed).shuffle(rows)
    out["samples"] = rows[: args.samples]
    out["uptime_end"] = _uptime()
    print(json.dumps({k: v for k, v in out.items() if k != "samples"}, indent=1))
    print(f"\n{len(out['samples'])} rewrites drawn (seed {args.seed}), to be read:")
    for i, (o, rep, method, ctx) in enumerate(out["samples"]):
        print(f"{i:3d} {method[:4]} {o!r} -> {rep!r} | {ctx}".replace("\n", " "))
    if args.json:
        with atomic_output(args.json) as fh:
            fh.write(json.dumps(out, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

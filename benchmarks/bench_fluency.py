"""What the rewrite checks catch among accepted rewrites, and what each costs.

Input: the ``--records`` JSONL of ``bench_rewrite.py`` (each document's input and its
LLM result with the audit). Each accepted LLM rewrite whose original text occurs in the
input document is put back into the input at its first occurrence and scored, after the
fact, by:

* the fluency check (:class:`presidio_delink.llm.fluency.FluencyCheck`, SmolLM2
  log-probabilities, margin 12 nats), timed per rewrite (process CPU seconds);
* the cheap grammar checks of :mod:`presidio_delink.grammar` (they ran during the delink
  already, so they catch nothing here unless the context differs; listed for the record).

Also the hand-picked cases (garbled ones seen in the demo, and good ones that must pass),
in the sentences they came from, through every check.

Usage::

    python benchmarks/bench_fluency.py /tmp/rw/qwen15.jsonl --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from presidio_delink.grammar import determiner_clash, unknown_word
from presidio_delink.io import atomic_output
from presidio_delink.llm.fluency import FluencyCheck

CASES = [
    # (sentence, span, replacement, garbled?)
    ("The applicants were taken into police custody on suspicion of membership.",
     "applicants", "testees", True),
    ("In <DATE_TIME> the applicants were taken into police custody.", "In", "at", True),
    ("On <DATE_TIME> the Erzincan Martial Law Court acquitted the applicants of the charges.",
     "acquitted", "found convicted", True),
    ("charging the applicants under Article 146 of the Criminal Code with membership.",
     "Code", "the law", True),
    ("membership of an illegal organisation whose object was to undermine the order.",
     "organisation", "the group", True),
    ("The applicants were taken into police custody on suspicion of membership.",
     "custody", "detention", False),
    ("The applicants alleged that their case, which commenced in <DATE_TIME>, was heard.",
     "commenced", "began", False),
    ("The applicants appealed, arguing that the amount awarded was not sufficient.",
     "sufficient", "adequate", False),
    ("On <DATE_TIME> the Court of Cassation dismissed the applicants’ appeal.",
     "appeal", "petition", False),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", type=Path, nargs="+")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    check = FluencyCheck()
    t0 = time.process_time()
    check.reason("Text: a warm-up.", 8, 12, "warm")  # load the engine outside the timing
    load_cpu = time.process_time() - t0
    rows: list[dict[str, Any]] = []
    skipped = 0
    cpu = 0.0
    for path in args.records:
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            text = rec["input"]
            for a in rec["llm"]["audit"]:
                if a["method"] != "llm":
                    continue
                i = text.find(a["original"])
                if i < 0:
                    skipped += 1  # a span of a later pass, over an earlier rewrite
                    continue
                rep = a["replacement"].strip()
                c0 = time.process_time()
                why = check.reason(text, i, i + len(a["original"]), rep)
                cpu += time.process_time() - c0
                rows.append({"doc": rec["id"], "original": a["original"], "replacement": rep,
                             "fluency": why})
    caught = [r for r in rows if r["fluency"]]
    cases = []
    for sent, span, rep, bad in CASES:
        i = sent.index(span)
        cases.append({
            "span": span, "replacement": rep, "garbled": bad,
            "fluency": check.reason(sent, i, i + len(span), rep),
            "determiner": determiner_clash(sent, i, rep),
            "vocabulary (all words known but 'testees')": unknown_word(
                rep, sent, lambda w: w != "testees"),
        })
    out = {
        "records": [str(p) for p in args.records],
        "accepted_llm_rewrites_scored": len(rows),
        "skipped_not_in_input": skipped,
        "fluency_caught": len(caught),
        "fluency_caught_examples": [(r["original"], r["replacement"]) for r in caught],
        "fluency_cpu_seconds_per_rewrite": round(cpu / max(1, len(rows)), 3),
        "fluency_load_cpu_seconds": round(load_cpu, 1),
        "load": os.getloadavg(),
        "cases": cases,
    }
    print(json.dumps(out, indent=1, ensure_ascii=False))
    if args.json:
        with atomic_output(args.json) as fh:
            fh.write(json.dumps(out, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

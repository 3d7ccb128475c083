"""What the rewrite checks catch among accepted rewrites, and what each costs.

Input: the ``--records`` JSONL of ``bench_rewrite.py`` (each document's input and its
LLM result with the audit). Each accepted LLM rewrite is found in the output text (first
whole-word occurrence of its replacement; rewrites not found are skipped), the original
is put back in its place, and the pair is scored after the fact, each check timed per
rewrite (process CPU seconds), by:

* the fluency check (:class:`presidio_delink.llm.fluency.FluencyCheck`, SmolLM2
  log-probabilities, margin 12 nats);
* the part-of-speech check (:class:`presidio_delink.presidio.pos.PosCheck`);
* the determiner check of :mod:`presidio_delink.grammar` (it ran during the delink, so
  it catches nothing here unless the context differs; listed for the record).

The context is the final output, not the text of the pass that made the rewrite: other
rewrites nearby are already in place.

Also the hand-picked cases (garbled ones seen in the demo, and good ones that must pass),
in the sentences they came from, through every check.

Usage::

    python benchmarks/bench_fluency.py /tmp/rw/qwen15.jsonl --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from presidio_delink.grammar import determiner_clash, unknown_word
from presidio_delink.io import atomic_output
from presidio_delink.llm.fluency import FluencyCheck
from presidio_delink.presidio.pos import PosCheck

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
    pos = PosCheck()
    t0 = time.process_time()
    check.reason("Text: a warm-up.", 8, 12, "warm")  # load the engines outside the timing
    pos.load()
    load_cpu = time.process_time() - t0
    rows: list[dict[str, Any]] = []
    skipped = 0
    cpu = {"fluency": 0.0, "pos": 0.0}
    for path in args.records:
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            out_text = rec["llm"]["text"] or ""
            for a in rec["llm"]["audit"]:
                if a["method"] != "llm":
                    continue
                rep = a["replacement"].strip()
                m = re.search(rf"(?<!\w){re.escape(rep)}(?!\w)", out_text)
                if m is None:
                    skipped += 1  # rewritten again by a later pass
                    continue
                text = out_text[: m.start()] + a["original"] + out_text[m.end() :]
                i, j = m.start(), m.start() + len(a["original"])
                row = {"doc": rec["id"], "pass": a["pass_no"], "original": a["original"],
                       "replacement": rep}
                for name, c in (("fluency", check), ("pos", pos)):
                    c0 = time.process_time()
                    row[name] = c.reason(text, i, j, rep)
                    cpu[name] += time.process_time() - c0
                row["determiner"] = determiner_clash(text, i, rep)
                rows.append(row)
    cases = []
    for sent, span, rep, bad in CASES:
        i = sent.index(span)
        cases.append({
            "span": span, "replacement": rep, "garbled": bad,
            "fluency": check.reason(sent, i, i + len(span), rep),
            "pos": pos.reason(sent, i, i + len(span), rep),
            "determiner": determiner_clash(sent, i, rep),
            "vocabulary (all words known but 'testees')": unknown_word(
                rep, sent, lambda w: w != "testees"),
        })
    n = max(1, len(rows))
    out = {
        "records": [str(p) for p in args.records],
        "accepted_llm_rewrites_scored": len(rows),
        "skipped_not_in_output": skipped,
        "caught": {k: sum(bool(r[k]) for r in rows) for k in ("fluency", "pos", "determiner")},
        "caught_by_both_fluency_and_pos": sum(bool(r["fluency"] and r["pos"]) for r in rows),
        "caught_examples": {
            k: [(r["original"], r["replacement"]) for r in rows if r[k]]
            for k in ("fluency", "pos", "determiner")
        },
        "cpu_seconds_per_rewrite": {k: round(v / n, 4) for k, v in cpu.items()},
        "engines_load_cpu_seconds": round(load_cpu, 1),
        "load": os.getloadavg(),
        "cases": cases,
        "rows": rows,
    }
    print(json.dumps({k: v for k, v in out.items() if k != "rows"}, indent=1,
                     ensure_ascii=False))
    if args.json:
        with atomic_output(args.json) as fh:
            fh.write(json.dumps(out, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A redaction-aware reader against the cached outputs of `bench_ranked.py`.

The benchmark's pair readers either join the words on either side of a mask (pairs the
source never held) or drop every pair a mask separates (``bm25-kept-pairs-qtf``). An
attacker who knows that a mask stands for at least one word pairs the words around it
at their distance in the source: ``bm25-window3-pairs-qtf`` (``tests/semantic_adversaries.py``,
:func:`window_panel`; nothing shared with the defence) scores BM25 over every ordered pair
of words at most three positions apart, a mask holding a position. Against a protection
that redacts every other word, the words left stood two apart in the source.

Read beside ``bm25-kept-pairs-qtf`` (the strongest reader of the benchmark's panel against the
protection at 54ce3b1, 2026-12-05) in the same run: for each setting's cached outputs, how many of
the documents' cases each ranks first (whole text or best sentence) and in its top 5.

Usage::

    python benchmarks/ranked/bench_gapped.py --work benchmarks/_work/fusion-tguard \\
        [--settings arity1,containment,ranked,all] [--windows 3] [--variants 3:4:1,2:3:0]
        [--json OUT]

``--variants`` (held-out variants for a protection that reads the pairs at window 3, a mask
one position): triples in a window, and a mask that takes no position.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO / "tests"), str(REPO / "benchmarks")]

import ranked_adversaries as ra  # noqa: E402
import semantic_adversaries as sa  # noqa: E402
from bench_ranked import commit, uptime  # noqa: E402

from presidio_delink.datasets import tab_collection  # noqa: E402
from presidio_delink.io import atomic_output  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, required=True,
                    help="bench_ranked.py's --work: test-SETTING.json outputs")
    ap.add_argument("--settings", default="arity1,containment,ranked,all")
    ap.add_argument("--windows", default="3", help="pair windows, comma-separated")
    ap.add_argument("--variants", default="",
                    help="held-out variants besides the pairs at each window: comma-separated "
                         "SIZE:WINDOW:MASK_WIDTH (SIZE 2 pairs or 3 triples; MASK_WIDTH 0: a "
                         "mask takes no position), e.g. 2:3:0,3:4:1")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    print("load:", uptime(), "commit:", commit(), flush=True)
    coll = list(tab_collection())
    groups = [ra.case_of(d) for d, _ in coll]
    t0 = time.perf_counter()
    readers = [sa.PairBM25(coll, groups, kept=True),
               *sa.window_panel(coll, groups, [int(w) for w in a.windows.split(",")])]
    for v in [x for x in a.variants.split(",") if x.strip()]:
        size, window, width = (int(x) for x in v.split(":"))
        readers += sa.window_panel(coll, groups, [window], size=size, mask_width=width)
    names = [r.name for r in readers]
    if len(set(names)) != len(names):
        ap.error(f"a reader is asked for twice: {sorted(n for n in names if names.count(n) > 1)}")
    print(f"readers built in {time.perf_counter() - t0:.0f} s", flush=True)
    report: dict[str, dict[str, dict[str, int]]] = {}
    for setting in [s.strip() for s in a.settings.split(",") if s.strip()]:
        path = a.work / f"test-{setting}.json"
        if not path.is_file():
            print(f"{setting}: no {path}", flush=True)
            continue
        outs = json.loads(path.read_text())
        words = sum(o["n_words"] for o in outs) or 1
        changed = sum(o["redacted"] + o["rewritten"] for o in outs)
        report[setting] = {}
        for r in readers:
            res = [ra.ranked_outcome(r, o["text"], ra.case_of(o["id"])) for o in outs]
            c = {
                "first": sum(x["whole"] or x["sentence"] for x in res),
                "first_whole": sum(x["whole"] for x in res),
                "top5": sum(x["whole_top5"] or x["sentence_top5"] for x in res),
                "top5_whole": sum(x["whole_top5"] for x in res),
            }
            report[setting][r.name] = c
            print(f"{setting} ({len(outs)} documents, {100 * changed / words:.1f} % of words "
                  f"changed) {r.name}: first {c['first']} (whole text {c['first_whole']}), "
                  f"top 5 {c['top5']} (whole text {c['top5_whole']})", flush=True)
    print("load:", uptime(), flush=True)
    if a.json:
        with atomic_output(a.json) as f:  # a temporary file, then renamed; 0600
            f.write(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()

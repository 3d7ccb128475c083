"""Choose the crowd size (``DelinkSettings.crowd``) on held-in data (never the TAB test documents).

``--protect`` edits until every member of its panel puts at least ``crowd`` other groups
above the source by its margin (whole text; sentences and containment as set).  Here each
crowd size of a grid runs ``--protect all`` on held-in texts, and the held-in family of
``calibrate_protect.py`` (24 BM25 variants and q-gram detectors that share no code with the
defence nor with the benchmark's adversaries) reads where the source lands:

* ``top1_whole`` / ``top1_sentence``: the most texts one family member ranks first by the
  whole text / by its best sentence;
* ``top5_whole``: the most texts one family member ranks in its top 5 by the whole text;
* ``containment``: texts the q-gram family finds;
* ``changed_pct``: words changed; ``cpu_s``: CPU seconds per text for the protection.

Held-in texts: TAB train/dev documents (gold-masked; the collection grouped by case), as
``calibrate_protect.py`` reads them.

Rule: the smallest crowd whose family top-5 (whole text) is at most ``--top5-rate`` of the
texts and whose words changed are at most ``--max-changed`` %; when every crowd misses
the words budget, the smallest crowd that meets the top-5 rate; when none does, the one with
the fewest top-5 finds (every row is printed: the frontier).

Usage::

    python benchmarks/ranked/calibrate_crowd.py [--tab 30] [--grid 1,2,3,5]
        [--sentence-crowd 1] [--json OUT]
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibrate import GROUP, tab_held_in  # noqa: E402
from calibrate_protect import (  # noqa: E402
    Family,
    _uptime,
    build_grams,
    qgram_found,
)

from presidio_delink.datasets import tab_collection  # noqa: E402
from presidio_delink.index import NgramIndex  # noqa: E402
from presidio_delink.io import atomic_output  # noqa: E402
from presidio_delink.pipeline import Delinker  # noqa: E402
from presidio_delink.protect import Protector  # noqa: E402


def family_ranks(fam: Family, text: str, group: str) -> dict[str, tuple[int | None, bool]]:
    """Per family member: the source's whole-text rank (ties count as found; None: not
    matched) and whether its best sentence puts the source first."""
    gi = fam.gnames.index(group)
    out: dict[str, tuple[int | None, bool]] = {}
    for member, g in fam.group_scores(text):
        src = g[0, gi]
        rank = None if src <= 0 else 1 + int(np.count_nonzero(g[0] > src))
        first_s = False
        if len(g) > 1:
            srt = np.sort(g[1:], axis=1)
            lead = (srt[:, -1] - srt[:, -2]) / np.maximum(srt[:, -1], 1e-12)
            best = 1 + int(np.argmax(lead))
            top = int(np.argmax(g[best]))
            first_s = bool(top == gi and g[best, top] > 0)
        out[member] = (rank, first_s)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tab", type=int, default=30, help="TAB train/dev texts (first N)")
    ap.add_argument("--grid", default="1,2,3,5")
    ap.add_argument("--sentence-crowd", type=int, default=None)
    ap.add_argument("--containment-crowd", type=int, default=None)
    ap.add_argument("--top5-rate", type=float, default=0.2)
    ap.add_argument("--max-changed", type=float, default=50.0)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    print("load:", _uptime(), flush=True)
    held = list(tab_held_in().items())[: a.tab]
    idx = NgramIndex.build(list(tab_collection()), None, max_n=8, group_regex=GROUP)
    fam = Family(idx)
    grams = build_grams(idx, [t for _, t in held])
    d = Delinker(idx, k=2, arity=1)
    base = [(g, d.delink(t, g)) for g, t in held]
    n = len(base)
    rows = []
    for m in [int(x) for x in a.grid.split(",")]:
        prot = Protector(d, "all", crowd=m, sentence_crowd=a.sentence_crowd,
                         containment_crowd=a.containment_crowd)
        t0 = time.process_time()
        words = changed = cont = 0
        top1_w: dict[str, int] = defaultdict(int)
        top1_s: dict[str, int] = defaultdict(int)
        top5_w: dict[str, int] = defaultdict(int)
        for g, r0 in base:
            res = copy.deepcopy(r0)
            prot.protect(res, g)
            assert res.text is not None
            words += res.n_words
            changed += res.words_redacted + res.words_rewritten
            for member, (rank, first_s) in family_ranks(fam, res.text, g).items():
                top1_w[member] += rank == 1
                top5_w[member] += rank is not None and rank <= 5
                top1_s[member] += first_s
            cont += qgram_found(idx, grams, res.text, g)
        row = {
            "crowd": m, "sentence_crowd": prot.sentence_crowd,
            "containment_crowd": prot.containment_crowd, "texts": n,
            "changed_pct": round(100 * changed / max(1, words), 1),
            "top1_whole": int(max(top1_w.values(), default=0)),
            "top1_sentence": int(max(top1_s.values(), default=0)),
            "top5_whole": int(max(top5_w.values(), default=0)),
            "containment": int(cont),
            "cpu_s": round((time.process_time() - t0) / n, 2),
            "load": _uptime(),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    good = [r for r in rows if r["top5_whole"] <= a.top5_rate * n]
    cheap = [r for r in good if r["changed_pct"] <= a.max_changed]
    if cheap:
        chosen = min(cheap, key=lambda r: r["crowd"])
    elif good:  # the words budget is missed at every crowd: the smallest that holds
        chosen = min(good, key=lambda r: r["crowd"])
    else:
        chosen = min(rows, key=lambda r: (r["top5_whole"], r["crowd"]))
    out = {"chosen": chosen["crowd"], "rule": {"top5_rate": a.top5_rate,
           "max_changed": a.max_changed}, "rows": rows, "load": _uptime()}
    print(json.dumps(out, indent=2))
    if a.json:
        with atomic_output(a.json) as f:
            f.write(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Seeded before/after sentence samples from bench_ranked's cached outputs.

Usage: python benchmarks/ranked_samples.py WORK_DIR [--setting all] [--n 6] [--seed 21]
(WORK_DIR is bench_ranked's ``--work``; the input is its ``input`` setting).
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

_END = re.compile(r"(?<=[.!?;:])\s+|\n+")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("work", type=Path)
    ap.add_argument("--setting", default="all")
    ap.add_argument("--n", type=int, default=6)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--docs", type=int, default=127)
    a = ap.parse_args()
    load = lambda s: {o["id"]: o["text"] for o in json.loads(  # noqa: E731
        (a.work / f"{s}-none-{a.docs}.json").read_text())}
    before, after = load("input"), load(a.setting)
    rng = random.Random(a.seed)
    pairs = []
    for doc in sorted(after):
        b = [s for s in _END.split(before[doc]) if len(s.split()) >= 8]
        c = [s for s in _END.split(after[doc]) if len(s.split()) >= 8]
        if len(b) == len(c):
            pairs += [(doc, x, y) for x, y in zip(b, c, strict=True)]
    for doc, x, y in rng.sample(pairs, min(a.n, len(pairs))):
        print(f"- `{doc}`\n  - before: {x}\n  - after: {y}")


if __name__ == "__main__":
    main()

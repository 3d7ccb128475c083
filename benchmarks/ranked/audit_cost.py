"""CPU and wall seconds of delink's audit (ranked + containment) on cached outputs.

Usage: ``python benchmarks/ranked/audit_cost.py OUTPUTS.json N`` (a ``bench_ranked.py``
cache file, e.g. ``arity1-none-127.json``; its first N documents).  The same documents'
arity-1 delink is timed beside it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from presidio_delink.attacks.audit import source_ranks
from presidio_delink.attacks.containment import ContainmentAttack
from presidio_delink.attacks.ranked import RankedAttack
from presidio_delink.datasets import tab_collection, tab_test
from presidio_delink.index import NgramIndex
from presidio_delink.pipeline import Delinker


def main() -> None:
    n = int(sys.argv[2])
    with open(sys.argv[1], encoding="utf-8") as f:
        outs = json.load(f)[:n]
    idx = NgramIndex.build(list(tab_collection()), None, max_n=8, group_regex=r"^[a-z0-9]+:(.+)$")
    group = dict(zip(idx.doc_ids, idx.doc_groups, strict=True))
    c0, t0 = time.process_time(), time.perf_counter()
    ranked, cont = RankedAttack(idx), ContainmentAttack(idx)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    print("build: cpu", round(cpu, 2), "wall", round(wall, 2))
    tests = {t: d for t, _o, d in tab_test()}
    d = Delinker(idx, k=2, arity=1)
    c0, t0 = time.process_time(), time.perf_counter()
    for o in outs:
        d.delink(tests[o["id"]], o["id"])
    dc, dw = time.process_time() - c0, time.perf_counter() - t0
    c0, t0 = time.process_time(), time.perf_counter()
    for o in outs:
        source_ranks(o["text"], group[o["id"]], cont, None, ranked)
    ac, aw = time.process_time() - c0, time.perf_counter() - t0
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(json.dumps({
        "docs": n, "delink_cpu_s_per_doc": round(dc / n, 3), "delink_wall": round(dw / n, 3),
        "audit_cpu_s_per_doc": round(ac / n, 3), "audit_wall": round(aw / n, 3), "load": load,
    }))


if __name__ == "__main__":
    main()

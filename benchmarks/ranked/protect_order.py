"""``--protect all``: ranked first vs containment first, on TAB train/dev (held-in) texts.

Usage: ``python benchmarks/ranked/protect_order.py N`` (the first N train/dev texts).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibrate import GROUP, tab_held_in  # noqa: E402

from presidio_delink.datasets import tab_collection  # noqa: E402
from presidio_delink.index import NgramIndex  # noqa: E402
from presidio_delink.pipeline import Delinker  # noqa: E402
from presidio_delink.protect import Protector  # noqa: E402


def main() -> None:
    idx = NgramIndex.build(list(tab_collection()), None, max_n=8, group_regex=GROUP)
    held = list(tab_held_in().items())[: int(sys.argv[1])]
    d = Delinker(idx, k=2, arity=1)
    base = [(g, d.delink(t, g)) for g, t in held]
    out: dict[str, object] = {"docs": len(base)}
    for order in (("ranked", "containment"), ("containment", "ranked")):
        p = Protector(d, "all")
        p.modes = order
        words = changed = 0
        c0 = time.process_time()
        for g, r0 in base:
            r = copy.deepcopy(r0)
            p.protect(r, g)
            words += r.n_words
            changed += r.words_redacted + r.words_rewritten
        out[",".join(order)] = {
            "changed_pct": round(100 * changed / words, 1),
            "cpu_s_per_doc": round((time.process_time() - c0) / len(base), 2),
        }
        print(order, out[",".join(order)], flush=True)
    out["load"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(json.dumps(out))


if __name__ == "__main__":
    main()

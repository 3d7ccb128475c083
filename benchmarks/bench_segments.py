"""A growing index on TAB: `index add` in 1, 3 and 10 batches, then `index compact`.

Set-up: the TAB collection grouped by case (1,635 documents, about 1.07 M words, max_n 8,
``benchmarks/bench_living_index.py``'s index), in its own order; the first 90 % of its
documents form the base, the other 10 % are added.  The 127 gold-masked TAB test texts
are checked.

1. ``build``: a fresh build over all documents and one over the base (seconds).
2. For 1, 3 and 10 batches: the base copied, the batches added (``add_documents``, the
   library call under ``index add``; seconds each) [target: adding 1 % takes at most 5 %
   of a full build].
3. ``check`` through the CLI (k = 2; k = 5 with arity 2) on the 127 texts over the grown
   index, then after ``compact``: byte-identical to the fresh build's output [target].
   The seconds of each ``check`` run (a fresh process: start, open, 127 texts) over the
   base plus 10 segments against the compacted index [target: at most 1.3x].
4. Disk of each compacted index against the fresh build [target: at most 1.05x], and
   the seconds of compaction (a build from the words the index stores).

Every step's wall time and the load before it (``/proc/loadavg``) are recorded: the
machine is shared, so read the ratios of runs made close together.

Usage::

    python benchmarks/bench_segments.py [--work benchmarks/_work/segments] \\
        [--batches 10 1 3] [--workers 1] [--json OUT]

Indexes and outputs are kept in ``--work``; a rerun reuses what is there.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def timed(rec: dict[str, Any], name: str, fn: Any, *args: Any, **kw: Any) -> Any:
    rec[f"{name}_load"] = load()
    t = time.perf_counter()
    out = fn(*args, **kw)
    rec[f"{name}_s"] = round(time.perf_counter() - t, 2)
    print(f"{name}: {rec[f'{name}_s']} s (load {rec[f'{name}_load']})", flush=True)
    return out


def cli_check(idx: Path, inp: Path, out: Path, args: list[str]) -> float:
    env = dict(os.environ, TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS="")
    t = time.perf_counter()
    got = subprocess.run([sys.executable, "-m", "presidio_delink", "check", "--index", str(idx),
                          *args, str(inp), "-o", str(out)], cwd=REPO, env=env,
                         capture_output=True, text=True)
    if got.returncode not in (0, 1):
        raise SystemExit(f"check failed ({got.returncode}): {got.stderr[-2000:]}")
    return round(time.perf_counter() - t, 2)


CHECKS = {"k2": ["-k", "2"], "k5a2": ["-k", "5", "--arity", "2"]}


def checks(idx: Path, inp: Path, work: Path, tag: str, rec: dict[str, Any]) -> None:
    for name, args in CHECKS.items():
        out = work / f"check-{tag}-{name}.jsonl"
        rec[f"check_{name}_{tag}_load"] = load()
        rec[f"check_{name}_{tag}_cli_s"] = cli_check(idx, inp, out, args)
        if tag != "fresh":
            rec[f"check_{name}_{tag}_identical"] = (
                out.read_bytes() == (work / f"check-fresh-{name}.jsonl").read_bytes())
        print(tag, name, {k: v for k, v in rec.items() if f"_{name}_{tag}" in k}, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, default=REPO / "benchmarks" / "_work" / "segments")
    ap.add_argument("--batches", type=int, nargs="+", default=[10, 1, 3])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    os.environ["TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS"] = ""
    import ranked_adversaries as ra

    from presidio_delink.datasets import tab_collection, tab_test
    from presidio_delink.index import NgramIndex, add_documents, compact

    work = a.work
    work.mkdir(parents=True, exist_ok=True)
    rec_file = work / "results.json"
    rec: dict[str, Any] = json.loads(rec_file.read_text()) if rec_file.exists() else {}

    def save() -> None:
        rec_file.write_text(json.dumps(rec, indent=1))

    docs = list(tab_collection())
    gold = list(tab_test())
    inp = work / "tab_gold.jsonl"
    inp.write_text("".join(json.dumps({"id": cid, "text": deid}) + "\n"
                           for cid, _o, deid in gold))
    cut = len(docs) * 9 // 10
    settings = dict(max_n=8, group_regex=ra.GROUP_RE.pattern)
    rec.update(n_docs=len(docs), n_base=cut, n_added=len(docs) - cut)
    fresh, base = work / "fresh", work / "base"
    if not (fresh / "meta.json").exists():
        shutil.rmtree(fresh, ignore_errors=True)
        timed(rec, "build_fresh", NgramIndex.build, docs, fresh, workers=a.workers, **settings)
        rec["bytes_fresh"] = du(fresh)
        save()
    if not (base / "meta.json").exists():
        shutil.rmtree(base, ignore_errors=True)
        timed(rec, "build_base", NgramIndex.build, docs[:cut], base, workers=a.workers,
              **settings)
        save()
    if "check_k2_fresh_cli_s" not in rec:
        checks(fresh, inp, work, "fresh", rec)
        save()
    for n in a.batches:
        tag = f"seg{n}"
        idx = work / tag
        if f"bytes_compact_{tag}" in rec:
            continue
        shutil.rmtree(idx, ignore_errors=True)
        shutil.copytree(base, idx)
        bounds = [cut + (len(docs) - cut) * i // n for i in range(n + 1)]
        for i in range(n):
            batch = docs[bounds[i]:bounds[i + 1]]
            timed(rec, f"add_{tag}_{i}", add_documents, idx, batch,
                  group_regex=ra.GROUP_RE.pattern, workers=a.workers)
            rec[f"add_{tag}_{i}_docs"] = len(batch)
            rec[f"add_{tag}_{i}_words"] = sum(len(t.split()) for _d, t in batch)
        save()
        checks(idx, inp, work, tag, rec)
        save()
        timed(rec, f"compact_{tag}", compact, idx, workers=a.workers)
        rec[f"bytes_compact_{tag}"] = du(idx)
        checks(idx, inp, work, f"{tag}c", rec)
        save()
        shutil.rmtree(idx)  # keep the work folder small
    rec["words_total"] = sum(len(t.split()) for _d, t in docs)
    save()
    if a.json:
        a.json.write_text(json.dumps(rec, indent=1))
    print(json.dumps(rec, indent=1))


if __name__ == "__main__":
    main()

"""`delink` at scale: worker processes and a Dask cluster against one process.

Three parts, each run through the CLI (``python -m presidio_delink delink``) as a user
would, each figure beside its one-process baseline measured in the same run:

1. ``identical``: the 127 gold-masked TAB test documents against the TAB collection
   grouped by case (k = 2), with ``--llm none``, ``--llm none --protect all`` and a
   deterministic fake LLM (an OpenAI-compatible test server answering "a <span>"), each in
   one process, with ``--workers 2`` and on a local Dask cluster of 2 worker processes
   (127.0.0.1).  The records must be equal but for the run's own cost figures (seconds,
   tokens).  Throughput of ``--workers 2`` against one process under ``--protect all``
   [target: at least 1.6 times].
2. ``flat``: synthetic inputs of ``--small`` (1,000) and ``--large`` (100,000) short
   documents (sentences of ``samples/collection.jsonl``, about 60 words each, ids not in
   the collection) against the samples index, ``--llm none --workers 2``: the driver's
   peak resident memory (``VmHWM`` of the CLI process, polled) [at most 0.3 GiB, and at
   most 1.2 times the small run's] and the seconds per document [within 1.2 times].

Usage::

    python benchmarks/bench_delink_scale.py --parts identical,flat [--large 100000] \\
        [--work benchmarks/_work/scale] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

COST = ("seconds", "llm_seconds", "prompt_tokens", "cached_tokens", "generated_tokens")


def uptime() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()


def delink(args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run the CLI's delink; wall seconds, exit code and the CLI process's peak RSS."""
    cmd = [sys.executable, "-m", "presidio_delink", "delink", "--no-progress", *args]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})}, cwd=REPO)
    peak = 0
    status = Path(f"/proc/{proc.pid}/status")
    while proc.poll() is None:
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) * 1024)
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    err = proc.stderr.read() if proc.stderr else ""
    return {"seconds": time.perf_counter() - t0, "code": proc.returncode,
            "peak_bytes": peak, "stderr_tail": err[-400:]}


def records(path: Path) -> list[dict[str, Any]]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            for key in COST:
                rec.pop(key, None)
            out.append(rec)
    return out


def tab_setup(work: Path) -> tuple[Path, Path]:
    import ranked_adversaries as ra

    from presidio_delink.datasets import tab_collection, tab_test
    from presidio_delink.index import NgramIndex

    idx = work / "tab_index"
    if not (idx / "meta.json").exists():
        NgramIndex.build(list(tab_collection()), idx, max_n=8,
                         group_regex=ra.GROUP_RE.pattern)
    inp = work / "tab_gold.jsonl"
    if not inp.exists():
        inp.write_text("".join(json.dumps({"id": cid, "text": deid}) + "\n"
                               for cid, _orig, deid in tab_test()))
    return idx, inp


def part_identical(work: Path, only: list[str], modes: list[str]) -> dict[str, Any]:
    import distributed
    from ollama_compat_server import OllamaCompatServer
    from test_llm_http import FakeEngine

    idx, inp = tab_setup(work)
    out: dict[str, Any] = {"load_before": uptime()}
    with OllamaCompatServer(FakeEngine(), model="fake") as srv, \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=None, host="127.0.0.1") as cluster:
        settings = {
            "none": ["--llm", "none"],
            "protect_all": ["--llm", "none", "--protect", "all"],
            "fake_llm": ["--llm", f"openai:{srv.url}#fake"],
        }
        for name, args in settings.items():
            if only and name not in only:
                continue
            row: dict[str, Any] = {}
            ref = None
            for how, extra in (("one", []), ("workers2", ["--workers", "2"]),
                               ("dask2", ["--dask-scheduler", cluster.scheduler_address])):
                if how not in modes:
                    continue
                dest = work / f"{name}-{how}.jsonl"
                dest.unlink(missing_ok=True)
                got = delink(["--index", str(idx), "-k", "2", *args, *extra, "--fresh", str(inp),
                              "-o", str(dest)])
                recs = records(dest) if dest.exists() else None
                if how == "one":
                    ref = recs
                row[how] = {"seconds": round(got["seconds"], 1), "code": got["code"],
                            "docs": len(recs or []),
                            "identical": None if how == "one" else recs == ref}
                print(name, how, row[how], "load", uptime(), flush=True)
            if "workers2" in row:
                row["speedup_workers2"] = round(
                    row["one"]["seconds"] / row["workers2"]["seconds"], 2)
            out[name] = row
    out["load_after"] = uptime()
    return out


def synthetic(path: Path, n: int, seed: int = 7) -> None:
    sents: list[str] = []
    for line in (REPO / "samples" / "collection.jsonl").read_text().splitlines():
        text = json.loads(line)["text"]
        sents += [s.strip() + "." for s in text.split(".") if len(s.split()) >= 6]
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"syn-{i:07d}",
                                "text": " ".join(rng.sample(sents, 3))}) + "\n")


def part_flat(work: Path, small: int, large: int) -> dict[str, Any]:
    idx = work / "samples_index"
    if not (idx / "meta.json").exists():
        from presidio_delink.index import NgramIndex
        from presidio_delink.io import read_many

        NgramIndex.build(read_many([REPO / "samples" / "collection.jsonl"]), idx)
    out: dict[str, Any] = {}
    for n in (small, large):
        inp = work / f"syn-{n}.jsonl"
        if not inp.exists():
            synthetic(inp, n)
        dest = work / f"syn-{n}-out.jsonl"
        dest.unlink(missing_ok=True)
        load = uptime()
        got = delink(["--index", str(idx), "-k", "2", "--llm", "none", "--workers", "2",
                      "--fresh", str(inp), "-o", str(dest)])
        out[str(n)] = {"docs": n, "code": got["code"], "seconds": round(got["seconds"], 1),
                       "ms_per_doc": round(1000 * got["seconds"] / n, 2),
                       "driver_peak_mib": round(got["peak_bytes"] / 2**20, 1),
                       "load_before": load, "load_after": uptime()}
        print("flat", out[str(n)], flush=True)
        if got["code"] not in (0, 3):
            print(got["stderr_tail"], flush=True)
    s, l_ = out[str(small)], out[str(large)]
    out["memory_ratio"] = round(l_["driver_peak_mib"] / max(s["driver_peak_mib"], 1e-9), 2)
    out["time_ratio"] = round(l_["ms_per_doc"] / max(s["ms_per_doc"], 1e-9), 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", default="identical,flat")
    ap.add_argument("--settings", default="", help="identical: these settings only "
                    "(none, protect_all, fake_llm; default all)")
    ap.add_argument("--modes", default="one,workers2,dask2")
    ap.add_argument("--small", type=int, default=1_000)
    ap.add_argument("--large", type=int, default=100_000)
    ap.add_argument("--work", type=Path, default=REPO / "benchmarks" / "_work" / "scale")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    print("load:", uptime(), "cores:", os.cpu_count(), flush=True)
    res: dict[str, Any] = {}
    if "identical" in a.parts:
        res["identical"] = part_identical(
            a.work, [x for x in a.settings.split(",") if x], a.modes.split(","))
    if "flat" in a.parts:
        res["flat"] = part_flat(a.work, a.small, a.large)
    print(json.dumps(res, indent=1))
    if a.json:
        a.json.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()

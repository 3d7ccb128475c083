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
3. ``long``: one long document a run (the sample de-identified documents repeated to
   ``--lengths`` characters, 200,000 to 5,000,000 by default) against the samples index,
   ``--llm none`` and ``--max-chars`` raised: the CLI process's peak RSS (``ru_maxrss``)
   [5,000,000 characters in at most 1 GiB], and its growth over a one-document run in
   bytes a character [far below 700], with the slope between the shortest and longest
   length; with ``--baseline TREE`` (e.g. ``git archive`` of an earlier commit) the same
   runs with that tree's package beside each figure, up to ``--baseline-max`` characters.

Usage::

    python benchmarks/bench_delink_scale.py --parts identical,flat,long [--large 100000] \\
        [--lengths 200000,800000,2000000,5000000] [--baseline TREE] \\
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


def delink(args: list[str], env: dict[str, str] | None = None,
           cwd: Path = REPO) -> dict[str, Any]:
    """Run the CLI's delink; wall seconds, exit code, the CLI process's peak RSS
    (``VmHWM``, polled every 50 ms) and its ``ru_maxrss`` when it ended (exact; with
    worker processes, the largest of the CLI's and its children's)."""
    cmd = [sys.executable, "-m", "presidio_delink", "delink", "--no-progress", *args]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})}, cwd=cwd)
    peak = 0
    status = Path(f"/proc/{proc.pid}/status")
    while True:
        pid, code, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(code)
            break
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) * 1024)
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    err = proc.stderr.read() if proc.stderr else ""
    return {"seconds": time.perf_counter() - t0, "code": proc.returncode,
            "peak_bytes": peak, "maxrss_bytes": usage.ru_maxrss * 1024,
            "stderr_tail": err[-400:]}


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
    idx = samples_index(work)
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


def long_doc(path: Path, chars: int) -> int:
    """One document: the sample de-identified documents repeated (a blank line between)
    until it holds at least ``chars`` characters; its length."""
    docs = [json.loads(line)["text"]
            for line in (REPO / "samples" / "deidentified.jsonl").read_text().splitlines()]
    parts: list[str] = []
    size = i = 0
    while size < chars:
        parts.append(docs[i % len(docs)] + "\n\n")
        size += len(parts[-1])
        i += 1
    path.write_text(json.dumps({"id": f"long-{chars}", "text": "".join(parts)}) + "\n")
    return size


def part_long(work: Path, lengths: list[int], baseline: Path | None,
              baseline_max: int) -> dict[str, Any]:
    """One long document a run, ``--llm none --max-chars`` raised, against the samples
    index: the CLI process's peak RSS (``ru_maxrss``) over that of a one-document run
    (start-up, imports, the index), in bytes a character, and the slope between lengths.
    With ``baseline`` (a source tree, e.g. ``git archive`` of an earlier commit), the same
    runs with that tree's package, up to ``baseline_max`` characters."""
    idx = samples_index(work)
    trees = {"this": None, **({"baseline": baseline} if baseline else {})}
    out: dict[str, Any] = {"load_before": uptime()}
    for name, tree in trees.items():
        # `python -m` reads the package of its working directory first
        env, cwd = ({"PYTHONPATH": str(tree)}, tree) if tree else ({}, REPO)
        small = work / "long-small.jsonl"
        long_doc(small, 1)
        base = delink(["--index", str(idx), "-k", "2", "--llm", "none", "--fresh", str(small),
                       "-o", str(work / "long-small-out.jsonl")], env, cwd)
        rows: dict[str, Any] = {"start_mib": round(base["maxrss_bytes"] / 2**20, 1)}
        print("long", name, "one short document:", rows, flush=True)
        for n in lengths:
            if tree and n > baseline_max:
                continue
            inp = work / f"long-{n}.jsonl"
            chars = long_doc(inp, n)
            dest = work / f"long-{n}-{name}-out.jsonl"
            dest.unlink(missing_ok=True)
            load = uptime()
            got = delink(["--index", str(idx), "-k", "2", "--llm", "none", "--max-chars",
                          str(2 * chars), "--fresh", str(inp), "-o", str(dest)], env, cwd)
            grown = got["maxrss_bytes"] - base["maxrss_bytes"]
            rows[str(n)] = {"chars": chars, "code": got["code"],
                            "seconds": round(got["seconds"], 1),
                            "peak_mib": round(got["maxrss_bytes"] / 2**20, 1),
                            "bytes_per_char": round(grown / chars),
                            "load_before": load, "load_after": uptime()}
            print("long", name, rows[str(n)], flush=True)
            if got["code"] not in (0, 3):
                print(got["stderr_tail"], flush=True)
        done = [rows[str(n)] for n in lengths if str(n) in rows]
        if len(done) >= 2:
            a, b = done[0], done[-1]
            rows["slope_bytes_per_char"] = round(
                (b["peak_mib"] - a["peak_mib"]) * 2**20 / (b["chars"] - a["chars"]))
        out[name] = rows
    if baseline:
        out["peak_ratio"] = {
            str(n): round(out["this"][str(n)]["peak_mib"] / out["baseline"][str(n)]["peak_mib"], 2)
            for n in lengths if str(n) in out["baseline"]
        }
    return out


def samples_index(work: Path) -> Path:
    idx = work / "samples_index"
    if not (idx / "meta.json").exists():
        from presidio_delink.index import NgramIndex
        from presidio_delink.io import read_many

        NgramIndex.build(read_many([REPO / "samples" / "collection.jsonl"]), idx)
    return idx


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", default="identical,flat")
    ap.add_argument("--settings", default="", help="identical: these settings only "
                    "(none, protect_all, fake_llm; default all)")
    ap.add_argument("--modes", default="one,workers2,dask2")
    ap.add_argument("--small", type=int, default=1_000)
    ap.add_argument("--large", type=int, default=100_000)
    ap.add_argument("--work", type=Path, default=REPO / "benchmarks" / "_work" / "scale")
    ap.add_argument("--lengths", default="200000,800000,2000000,5000000",
                    help="long: document lengths, in characters")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="long: a source tree to measure beside this one")
    ap.add_argument("--baseline-max", type=int, default=2_000_000,
                    help="long: the longest document run with --baseline")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    a.work = a.work.resolve()
    if a.baseline:
        a.baseline = a.baseline.resolve()
    a.work.mkdir(parents=True, exist_ok=True)
    print("load:", uptime(), "cores:", os.cpu_count(), flush=True)
    res: dict[str, Any] = {}
    if "identical" in a.parts:
        res["identical"] = part_identical(
            a.work, [x for x in a.settings.split(",") if x], a.modes.split(","))
    if "flat" in a.parts:
        res["flat"] = part_flat(a.work, a.small, a.large)
    if "long" in a.parts:
        res["long"] = part_long(a.work, [int(x) for x in a.lengths.split(",")], a.baseline,
                                a.baseline_max)
    print(json.dumps(res, indent=1))
    if a.json:
        a.json.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()

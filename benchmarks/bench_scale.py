"""Scale (issue 9): one global key space, parallel and Dask builds.

Parts (each figure and its baseline measured in the same run):

* ``tab``: the TAB collection built with one shard and with ``shard_words=100_000``
  (11 shards, 11 partitions per view); ``presidio-delink check`` of the 127 gold-masked
  test documents (all default views, k = 2, arity 1) on both, timed (best of 2), and
  the two JSONL outputs compared byte for byte.
* ``dask``: the TAB collection split into 4 input files, built by ``index build
  --dask-scheduler`` on a 2-worker ``LocalCluster`` (workers read their files), and the
  ``check`` output compared byte for byte with the single-process build's.
* ``synth``: synthetic collections (``benchmarks/synthetic.py``) of 1e6 / 1e7 (and 1e8
  with ``--big``) words, one view (``folded``), default shard size, 2 worker processes:
  build time and CPU time per word, peak RSS of the driver (the main process) and of the
  worker processes, disk per text byte, look-ups per second on held-out N-grams; with
  ``--compare-workers`` also 1e7 built with ``workers=1``.

* ``tasks`` (not in the default parts): a synthetic build (``--task-words``, default 1e7,
  shards of ``--task-shard-words``, as many partitions as shards) whose tasks run one by
  one in this process, each measured alone: wall and CPU time, peak of traced
  allocations; per kind of task (count, merge, rank per shard or partition, write) and
  for the largest partition's merge.  The per-partition figures behind the estimate for
  larger collections.

Run: ``python benchmarks/bench_scale.py [--parts tab,dask,synth,tasks] [--big] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import bench_index  # noqa: E402

EXE = [str(Path(sys.executable).parent / "presidio-delink")]


def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": ""}
    return subprocess.run(
        [*EXE, *args], capture_output=True, check=False, cwd=REPO, env=env
    )


def timed_check(index: Path, docs: Path, out: Path) -> float:
    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        res = cli("check", "--index", str(index), "-k", "2", "-o", str(out), str(docs))
        best = min(best, time.perf_counter() - t0)
        if res.returncode not in (0, 1):
            raise SystemExit(res.stderr.decode()[-2000:])
    return best


def part_tab(work: Path, report: dict[str, object]) -> None:
    from presidio_delink.datasets import tab_collection, tab_test

    coll = work / "tab.jsonl"
    with open(coll, "w", encoding="utf-8") as f:
        for d, t in tab_collection():
            f.write(json.dumps({"id": d, "text": t}) + "\n")
    docs = work / "gold.jsonl"
    with open(docs, "w", encoding="utf-8") as f:
        for d, _, deid in tab_test("gold"):
            f.write(json.dumps({"id": d, "text": deid}) + "\n")
    times = {}
    for name, extra in (("one", []), ("sharded", ["--shard-words", "100000"])):
        t0 = time.perf_counter()
        res = cli("index", "build", str(coll), "-o", str(work / name), "--no-progress",
                  "--workers", "1", *extra)
        if res.returncode:
            raise SystemExit(res.stderr.decode()[-2000:])
        times[f"build_{name}_s"] = round(time.perf_counter() - t0, 1)
    stats = json.loads(cli("index", "stats", str(work / "sharded")).stdout)
    t_one = timed_check(work / "one", docs, work / "one.out")
    t_many = timed_check(work / "sharded", docs, work / "sharded.out")
    same = (work / "one.out").read_bytes() == (work / "sharded.out").read_bytes()
    report["tab"] = {
        **times,
        "doc_shards": stats["n_doc_shards"],
        "partitions_per_view": stats["views"]["folded"]["n_partitions"],
        "check_one_shard_s": round(t_one, 2),
        "check_sharded_s": round(t_many, 2),
        "ratio": round(t_many / t_one, 2),
        "byte_identical": same,
    }
    print("tab", report["tab"], flush=True)


def part_dask(work: Path, report: dict[str, object]) -> None:
    from distributed import LocalCluster

    coll = [json.loads(x) for x in (work / "tab.jsonl").read_text().splitlines()]
    files = []
    for i in range(4):
        p = work / f"tab-part{i}.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in coll[i::4]), encoding="utf-8")
        files.append(p)
    ordered = work / "tab-ordered.jsonl"
    ordered.write_text(
        "".join(json.dumps(r) + "\n" for i in range(4) for r in coll[i::4]), encoding="utf-8"
    )
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        t0 = time.perf_counter()
        res = cli("index", "build", *map(str, files), "-o", str(work / "dask"),
                  "--dask-scheduler", cluster.scheduler_address)
        t_dask = time.perf_counter() - t0
        if res.returncode:
            raise SystemExit(res.stderr.decode()[-2000:])
    t0 = time.perf_counter()
    res = cli("index", "build", str(ordered), "-o", str(work / "ordered"), "--no-progress",
              "--workers", "1")
    t_one = time.perf_counter() - t0
    docs = work / "gold.jsonl"
    timed_check(work / "dask", docs, work / "dask.out")
    timed_check(work / "ordered", docs, work / "ordered.out")
    report["dask"] = {
        "build_dask_2_workers_s": round(t_dask, 1),
        "build_single_process_s": round(t_one, 1),
        "byte_identical": (work / "dask.out").read_bytes() == (work / "ordered.out").read_bytes(),
    }
    print("dask", report["dask"], flush=True)


def part_synth(work: Path, report: dict[str, object], big: bool, compare: bool) -> None:
    rows = {}
    scales = [1_000_000, 10_000_000] + ([100_000_000] if big else [])
    runs = [(w, 2) for w in scales] + ([(10_000_000, 1)] if compare else [])
    for words, workers in runs:
        load0 = os.getloadavg()[0]
        d = work / f"synth-{words}-{workers}"
        res = bench_index.run_worker(
            "synth",
            {
                "words": words, "seed": 0, "dir": str(d), "max_n": 8,
                "shard_words": 8_000_000, "query_words": 20_000, "lookup_budget_s": 30.0,
                "views": ["folded"], "workers": workers,
            },
            timeout=4 * 3600,
        )
        shutil.rmtree(d, ignore_errors=True)
        if "error" in res:
            raise SystemExit(f"synth {words}: {res}")
        row = {
            "build_us_per_word": round(1e6 * res["build_s"] / res["target_words"], 2),
            "build_s": round(res["build_s"], 1),
            # CPU of the build (this process and its worker processes), less the generator
            "build_cpu_s": round(res["cpu_s"] - res["gen_s"], 1),
            "cpu_us_per_word": round(1e6 * (res["cpu_s"] - res["gen_s"]) / res["target_words"], 2),
            "load_1min": [round(load0, 2), round(os.getloadavg()[0], 2)],
            "peak_rss_gib": round(res["peak_rss"] / 2**30, 2),
            "peak_rss_worker_gib": round(res["peak_rss_worker_processes"] / 2**30, 2),
            "lookups_per_s": round(res["lookups_per_s"] or 0, 1),
            "doc_shards": res["stats"]["n_doc_shards"],
            "disk_x": round(res["stats"]["bytes_on_disk"] / res["raw_bytes"], 2),
        }
        rows[f"{words:.0e} w{workers}"] = row
        print("synth", words, workers, row, flush=True)
    one = rows["1e+06 w2"]
    ten = rows["1e+07 w2"]
    last = rows.get("1e+08 w2", ten)
    rows["lookups_largest_over_1e6"] = round(last["lookups_per_s"] / one["lookups_per_s"], 2)
    rows["build_per_word_largest_over_1e6"] = round(
        last["build_us_per_word"] / one["build_us_per_word"], 2)
    rows["cpu_per_word_largest_over_1e6"] = round(
        last["cpu_us_per_word"] / one["cpu_us_per_word"], 2)
    rows["driver_rss_largest_over_1e7"] = round(last["peak_rss_gib"] / ten["peak_rss_gib"], 2)
    if compare:
        rows["workers_2_speedup_1e7"] = round(rows["1e+07 w1"]["build_s"] / ten["build_s"], 2)
    report["synth"] = rows
    print("synth", json.dumps(rows, indent=1), flush=True)


class RecordingClient:
    """A stand-in Dask client that runs each task here, one after another, and records
    its wall time, CPU time and peak of traced (numpy and Python) allocations (tracing
    slows the tasks that build strings: their times are upper bounds)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, object]] = []

    def map(self, fn, *iterables, pure=False):  # type: ignore[no-untyped-def]
        import tracemalloc

        if not tracemalloc.is_tracing():
            tracemalloc.start()  # from the first task on: tokenising runs untraced
        out = []
        for a in zip(*iterables, strict=True):
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            t0, c0 = time.perf_counter(), time.process_time()
            got = fn(*a)
            self.rows.append({
                "task": fn.__name__, "wall_s": time.perf_counter() - t0,
                "cpu_s": time.process_time() - c0,
                "peak_mib": (tracemalloc.get_traced_memory()[1] - before) / 2**20,
                "result": got if isinstance(got, tuple | int) else None,
            })
            out.append(got)
        return out

    def gather(self, results):  # type: ignore[no-untyped-def]
        return results


def part_tasks(work: Path, report: dict[str, object], words: int, shard_words: int) -> None:
    """Per-task figures (each task run alone here: wall, CPU, traced peak memory) of a
    synthetic build, folded view: what one shard's and one partition's work costs."""
    import tracemalloc

    from synthetic import SyntheticCollection

    from presidio_delink import NgramIndex

    coll = SyntheticCollection(words, seed=0)
    n_parts = max(1, round(words / shard_words))
    client = RecordingClient()
    t0 = time.perf_counter()
    idx = NgramIndex.build(coll.docs(), work / "tasks", max_n=8, shard_words=shard_words,
                           views=("folded",), n_parts=n_parts, dask_client=client,
                           progress=False)
    wall = time.perf_counter() - t0
    tracemalloc.stop()
    parts = idx.meta["views"][0]["partitions"]
    rows: dict[str, object] = {
        "words": words, "shard_words": shard_words, "doc_shards": len(
            idx.meta["folds"][0]["doc_shards"]), "partitions": n_parts,
        "build_wall_s": round(wall, 1),
        "keys_per_partition_max": max(p["n_keys"] for p in parts),
        "postings_per_partition_max": max(p["n_postings"] for p in parts),
    }
    for task in sorted({str(r["task"]) for r in client.rows}):
        mine = [r for r in client.rows if r["task"] == task]
        rows[task] = {
            "tasks": len(mine),
            "wall_s_max": round(max(float(r["wall_s"]) for r in mine), 2),  # type: ignore[arg-type]
            "cpu_s_sum": round(sum(float(r["cpu_s"]) for r in mine), 1),  # type: ignore[arg-type]
            "peak_mib_max": round(max(float(r["peak_mib"]) for r in mine), 1),  # type: ignore[arg-type]
        }
    merges = [r for r in client.rows if r["task"] == "merge_partition"]
    big = max(merges, key=lambda r: r["result"][0])  # type: ignore[index]
    rows["largest_merge"] = {
        "keys": big["result"][0],  # type: ignore[index]
        "cpu_s": round(float(big["cpu_s"]), 3),  # type: ignore[arg-type]
        "peak_mib": round(float(big["peak_mib"]), 1),  # type: ignore[arg-type]
        "bytes_per_key": round(float(big["peak_mib"]) * 2**20 / big["result"][0], 1),  # type: ignore[arg-type, index]
    }
    report["tasks"] = rows
    shutil.rmtree(work / "tasks", ignore_errors=True)
    print("tasks", json.dumps(rows, indent=1), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--parts", default="tab,dask,synth")
    ap.add_argument("--big", action="store_true", help="also 1e8 words")
    ap.add_argument("--compare-workers", action="store_true",
                    help="also 1e7 words on one process (the speed-up of 2 workers)")
    ap.add_argument("--task-words", type=float, default=1e7)
    ap.add_argument("--task-shard-words", type=float, default=2.5e6)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    base = REPO / "benchmarks" / "_work"
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=base, prefix="scale-"))
    report: dict[str, object] = {"load_before": os.getloadavg(), "cores": os.cpu_count()}
    try:
        parts = args.parts.split(",")
        if "tab" in parts or "dask" in parts:
            part_tab(work, report)
        if "dask" in parts:
            part_dask(work, report)
        if "tasks" in parts:
            part_tasks(work, report, int(args.task_words), int(args.task_shard_words))
        if "synth" in parts:
            part_synth(work, report, args.big, args.compare_workers)
    finally:
        report["load_after"] = os.getloadavg()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()

"""Benchmark of the N-gram index build, size, memory and bulk df look-ups.

Measures, each part in a fresh subprocess (clean peak RSS, no shared caches):

* ``tab-build``  build of the TAB collection (``tab_collection()``): time, words/s, bytes on
  disk against the raw UTF-8 text, peak RSS (``ru_maxrss``); best of ``--repeat`` runs.
* ``tab-load``   RSS increase after ``NgramIndex.load`` plus the look-up path, and bulk
  ``df_keys`` look-ups/s on all 1..8-grams of the 127 de-identified TAB test documents
  (with the share of keys not stored in the trie, which take the slower exact path).
* ``dict``       baseline: ``dict[key] -> set(doc ordinals)`` of every 1..8-gram, built
  with the same tokenizer (``Tokenizer.word_segments``): build time, RSS increase,
  look-ups/s on the same keys; its df values also cross-check the index's.
* ``synth``      synthetic collections (``--scale``, default 1e6,1e7,1e8 words; see
  ``synthetic.py``), generated lazily: build time net of generation, time per word, peak
  RSS, bytes on disk, and sampled df look-ups/s on held-out synthetic documents.

Usage::

    python benchmarks/bench_index.py --json benchmarks/_work/index.json
    python benchmarks/bench_index.py --scale 1e6 --skip-baseline     # quick

Prints a table of figures and ratios, with PASS/FAIL against the targets.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import hashlib
import importlib.metadata
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_WORK = HERE / "_work"
RESULT_TAG = "BENCH-RESULT "

# Targets (from the issue).
T_BUILD_S = 8.0
T_DISK_RATIO = 2.5
T_MEM_RATIO = 10.0
T_LOOKUPS = 200_000.0
T_PEAK_100M = 8 * 1024**3
T_FLAT = 1.5  # time per word at the largest scale / at the smallest, "roughly flat"


# --------------------------------------------------------------------------- helpers
def proc_status() -> dict[str, int]:
    """VmRSS, RssAnon, RssFile, VmHWM of this process, in bytes."""
    out: dict[str, int] = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM"):
                out[key] = int(rest.split()[0]) * 1024
    return out


def peak_rss() -> int:
    """Peak RSS of this process in bytes (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def emit(result: dict[str, Any]) -> None:
    print(RESULT_TAG + json.dumps(result), flush=True)


def test_keys(max_n: int = 8) -> tuple[list[str], int]:
    """All 1..max_n-gram keys (with repeats) of the 127 de-identified TAB test documents.

    Uses a default ``Tokenizer(max_n)``, the one ``NgramIndex.build`` uses (checked against
    the loaded index's tokenizer).
    """
    from presidio_delink.datasets import tab_test
    from presidio_delink.text import Tokenizer

    tok = Tokenizer(max_n=max_n)
    keys: list[str] = []
    n_docs = 0
    for _, _, deid in tab_test():
        keys.extend(k for k, _, _ in tok.ngrams(deid))
        n_docs += 1
    return keys, n_docs


CODE_UNDER_TEST = (
    "presidio_delink/index",
    "presidio_delink/text.py",
    "presidio_delink/datasets.py",
)


def code_fingerprint() -> str:
    """Hash of the sources under test (others edit the package concurrently).

    Each worker imports them once at its start, so a change mid-run affects later workers.
    """
    h = hashlib.sha256()
    paths = [REPO / c for c in CODE_UNDER_TEST]
    files = [f for p in paths for f in (sorted(p.rglob("*.py")) if p.is_dir() else [p])]
    for p in files:
        h.update(str(p.relative_to(REPO)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------- workers
def worker_tab_build(p: dict[str, Any]) -> dict[str, Any]:
    from presidio_delink import NgramIndex
    from presidio_delink.datasets import tab_collection

    t0 = time.perf_counter()
    docs = list(tab_collection())
    load_s = time.perf_counter() - t0
    raw = sum(len(t.encode("utf-8")) for _, t in docs)
    gc.collect()
    rss0 = proc_status()["VmRSS"]
    out = Path(p["dir"])
    t0 = time.perf_counter()
    idx = NgramIndex.build(
        iter(docs), out, max_n=p["max_n"], shard_words=p["shard_words"], progress=False
    )
    build_s = time.perf_counter() - t0
    st = idx.stats()
    st.pop("tokenizer", None)
    return {
        "n_docs": len(docs),
        "raw_bytes": raw,
        "dataset_load_s": load_s,
        "build_s": build_s,
        "rss_before_build": rss0,
        "peak_rss": peak_rss(),
        "stats": st,
    }


def worker_tab_load(p: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    from presidio_delink import NgramIndex
    from presidio_delink.text import Tokenizer

    keys, n_test = test_keys(p["max_n"])
    n_unique = len(set(keys))
    gc.collect()
    s0 = proc_status()
    t0 = time.perf_counter()
    idx = NgramIndex.load(p["dir"])  # verify=True: hashes every file once
    load_s = time.perf_counter() - t0
    s_loaded = proc_status()
    assert idx.tokenizer == Tokenizer(max_n=p["max_n"])
    t0 = time.perf_counter()
    NgramIndex.load(p["dir"], verify=False)
    load_noverify_s = time.perf_counter() - t0
    prim = idx.primary
    in_trie = np.fromiter(
        (k in prim.part(k.split(" ")[0]).trie for k in keys), dtype=bool, count=len(keys)
    )
    # Full workload, once (the slow exact path makes it long); then hits and misses apart.
    t0 = time.perf_counter()
    df = idx.df_keys(keys)
    full_s = time.perf_counter() - t0
    s1 = proc_status()
    np.save(p["df_out"], df)
    hits = [k for k, t in zip(keys, in_trie.tolist(), strict=True) if t]
    misses = [k for k, t in zip(keys, in_trie.tolist(), strict=True) if not t]
    hit_s = min(_timed(idx.df_keys, hits) for _ in range(3))
    sample = misses[: p["miss_sample"]]
    miss_s = _timed(idx.df_keys, sample) if sample else 0.0
    df_m = df[~in_trie]
    return {
        "n_test_docs": n_test,
        "n_keys": len(keys),
        "n_unique_keys": n_unique,
        "n_keys_not_in_trie": int((~in_trie).sum()),
        "df_of_keys_not_in_trie": {
            str(v): int(c) for v, c in zip(*np.unique(df_m, return_counts=True), strict=True)
        },
        "load_s": load_s,
        "load_noverify_s": load_noverify_s,
        "rss_before": s0,
        "rss_after_load": s_loaded,
        "rss_after_lookups": s1,
        "rss_increase": s1["VmRSS"] - s0["VmRSS"],
        "rss_increase_anon": s1["RssAnon"] - s0["RssAnon"],
        "rss_increase_file": s1["RssFile"] - s0["RssFile"],
        "rss_increase_at_load": s_loaded["VmRSS"] - s0["VmRSS"],
        "lookup_full_s": full_s,
        "lookups_per_s": len(keys) / full_s,
        "hit_lookups_per_s": len(hits) / hit_s if hit_s else None,
        "miss_sample": len(sample),
        "miss_lookups_per_s": len(sample) / miss_s if miss_s else None,
        "peak_rss": peak_rss(),
    }


def _timed(fn: Any, arg: Any) -> float:
    t0 = time.perf_counter()
    fn(arg)
    return time.perf_counter() - t0


def worker_dict(p: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    from presidio_delink.datasets import tab_collection
    from presidio_delink.text import Tokenizer

    docs = list(tab_collection())
    tok = Tokenizer(max_n=p["max_n"])
    max_n = tok.max_n
    gc.collect()
    s0 = proc_status()
    t0 = time.perf_counter()
    index: dict[str, set[int]] = {}
    get = index.get
    for d, (_, text) in enumerate(docs):
        for seg in tok.word_segments(text):
            n_seg = len(seg)
            for i in range(n_seg):
                for j in range(i + 1, min(i + max_n, n_seg) + 1):
                    key = " ".join(seg[i:j])
                    s = get(key)
                    if s is None:
                        index[key] = {d}
                    else:
                        s.add(d)
    build_s = time.perf_counter() - t0
    s1 = proc_status()
    n_keys = len(index)
    keys, _ = test_keys(max_n)

    def lookup(ks: list[str]) -> np.ndarray:
        empty: set[int] = set()
        return np.fromiter((len(get(k, empty)) for k in ks), dtype=np.int64, count=len(ks))

    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        df = lookup(keys)
        times.append(time.perf_counter() - t0)
    np.save(p["df_out"], df)
    return {
        "build_s": build_s,
        "n_keys": n_keys,
        "rss_before": s0,
        "rss_after_build": s1,
        "rss_increase": s1["VmRSS"] - s0["VmRSS"],
        "n_lookup_keys": len(keys),
        "lookups_per_s": len(keys) / min(times),
        "peak_rss": peak_rss(),
    }


def worker_synth(p: dict[str, Any]) -> dict[str, Any]:

    sys.path.insert(0, str(HERE))
    from synthetic import SyntheticCollection

    from presidio_delink import NgramIndex

    coll = SyntheticCollection(int(p["words"]), seed=p["seed"])
    gen = {"s": 0.0, "bytes": 0, "docs": 0}

    def timed_docs() -> Any:
        it = coll.docs()
        clock = time.perf_counter
        while True:
            t = clock()
            try:
                doc_id, text = next(it)
            except StopIteration:
                gen["s"] += clock() - t
                return
            gen["bytes"] += len(text) if text.isascii() else len(text.encode("utf-8"))
            gen["docs"] += 1
            gen["s"] += clock() - t
            yield doc_id, text

    out = Path(p["dir"])
    gc.collect()
    rss0 = proc_status()["VmRSS"]

    def cpu() -> float:
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    cpu0 = cpu()
    t0 = time.perf_counter()
    idx = NgramIndex.build(
        timed_docs(),
        out,
        max_n=p["max_n"],
        shard_words=p["shard_words"],
        progress=False,
        views=tuple(p.get("views") or ("folded", "folded-cross", "fine", "accent-cross")),
        workers=int(p.get("workers", 1)),
    )
    wall_s = time.perf_counter() - t0
    cpu_s = cpu() - cpu0  # worker processes count once they have exited (the build's end)
    peak_build = peak_rss()
    peak_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    st = idx.stats()
    st.pop("tokenizer", None)
    build_s = wall_s - gen["s"]
    del idx
    gc.collect()
    t0 = time.perf_counter()
    idx = NgramIndex.load(out)
    load_s = time.perf_counter() - t0
    # Sampled bulk df on held-out documents from the same model (another random stream).
    held = SyntheticCollection(p["query_words"], seed=p["seed"])
    keys = [
        k for _, text in held.docs(stream=99, prefix="q") for k, _, _ in idx.tokenizer.ngrams(text)
    ]
    done, spent = 0, 0.0
    chunk = 200
    while done < len(keys) and spent < p["lookup_budget_s"]:
        part = keys[done : done + chunk]
        t0 = time.perf_counter()
        idx.df_keys(part)
        spent += time.perf_counter() - t0
        done += len(part)
    del idx
    return {
        "target_words": int(p["words"]),
        "n_docs": gen["docs"],
        "raw_bytes": gen["bytes"],
        "gen_s": gen["s"],
        "wall_s": wall_s,
        "build_s": build_s,
        "cpu_s": cpu_s,
        "rss_before_build": rss0,
        "peak_rss": peak_build,
        "peak_rss_worker_processes": peak_children,
        "load_s": load_s,
        "stats": st,
        "lookup_keys_total": len(keys),
        "lookup_keys_timed": done,
        "lookups_per_s": done / spent if spent else None,
    }


WORKERS = {
    "tab-build": worker_tab_build,
    "tab-load": worker_tab_load,
    "dict": worker_dict,
    "synth": worker_synth,
}


# --------------------------------------------------------------------------- driver
def run_worker(name: str, params: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        name,
        "--params",
        json.dumps(params),
    ]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, stdout=subprocess.PIPE, text=True, timeout=timeout, check=False, cwd=REPO
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s", "elapsed_s": time.perf_counter() - t0}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            res = json.loads(line[len(RESULT_TAG) :])
            res["elapsed_s"] = time.perf_counter() - t0
            return res
    return {
        "error": f"worker {name} exited with {proc.returncode}",
        "stdout_tail": proc.stdout[-2000:],
    }


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit, f in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(n) >= f:
            return f"{n / f:.2f} {unit}"
    return f"{n:.0f} B"


def verdict(ok: bool | None) -> str:
    return "-" if ok is None else ("PASS" if ok else "FAIL")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--scale",
        default="1e6,1e7,1e8",
        help="synthetic sizes in words, comma-separated ('' for none)",
    )
    ap.add_argument("--skip-baseline", action="store_true", help="skip the dict-of-sets baseline")
    ap.add_argument("--skip-tab", action="store_true", help="skip the TAB build/load measurements")
    ap.add_argument("--repeat", type=int, default=3, help="TAB builds (best time is reported)")
    ap.add_argument("--max-n", type=int, default=8)
    ap.add_argument("--shard-words", type=int, default=8_000_000)
    ap.add_argument(
        "--miss-sample", type=int, default=20_000, help="keys not in the trie timed on their own"
    )
    ap.add_argument(
        "--query-words",
        type=int,
        default=20_000,
        help="held-out synthetic words for scale look-ups",
    )
    ap.add_argument(
        "--lookup-budget", type=float, default=60.0, help="seconds of look-ups per scale"
    )
    ap.add_argument("--scale-timeout", type=float, default=1800.0, help="seconds allowed per scale")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work-dir", type=Path, default=DEFAULT_WORK)
    ap.add_argument("--json", type=Path, help="write all figures here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--params", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        emit(WORKERS[args.worker](json.loads(args.params)))
        return 0

    scales = [int(float(s)) for s in args.scale.split(",") if s.strip()]
    work = args.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    run_dir = work / f"bench-index-{os.getpid()}"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir()
    import numpy as np

    report: dict[str, Any] = {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {
            "cpus": os.cpu_count(),
            "mem_total": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "marisa_trie": importlib.metadata.version("marisa-trie"),
            "loadavg_start": os.getloadavg(),
        },
        "git_head": _git("rev-parse", "--short", "HEAD"),
        "dirty_files_under_test": _git("status", "--porcelain", *CODE_UNDER_TEST).splitlines(),
        "code_fingerprint_start": code_fingerprint(),
        "params": {
            k: (str(v) if isinstance(v, Path) else v)
            for k, v in vars(args).items()
            if k not in ("worker", "params")
        },
    }
    t_all = time.perf_counter()
    common = {"max_n": args.max_n, "shard_words": args.shard_words}
    tab_dir = run_dir / "tab"
    try:
        if not args.skip_tab:
            builds = []
            for r in range(args.repeat):
                shutil.rmtree(tab_dir, ignore_errors=True)
                print(f"[tab] build {r + 1}/{args.repeat} ...", file=sys.stderr, flush=True)
                builds.append(run_worker("tab-build", {**common, "dir": str(tab_dir)}))
                _check(builds[-1])
            report["tab_build_runs"] = builds
            print("[tab] load + look-ups ...", file=sys.stderr, flush=True)
            report["tab_load"] = run_worker(
                "tab-load",
                {
                    "dir": str(tab_dir),
                    "df_out": str(run_dir / "df_index.npy"),
                    "miss_sample": args.miss_sample,
                    "max_n": args.max_n,
                },
            )
            _check(report["tab_load"])
            shutil.rmtree(tab_dir, ignore_errors=True)
        if not args.skip_baseline:
            print("[dict] baseline ...", file=sys.stderr, flush=True)
            report["dict_baseline"] = run_worker(
                "dict", {**common, "df_out": str(run_dir / "df_dict.npy")}
            )
            _check(report["dict_baseline"])
            fi, fd = run_dir / "df_index.npy", run_dir / "df_dict.npy"
            if fi.exists() and fd.exists():
                a, b = np.load(fi), np.load(fd)
                report["df_cross_check"] = {
                    "keys": len(a),
                    "mismatches": int((a != b).sum()) if len(a) == len(b) else None,
                    "examples": []
                    if len(a) != len(b)
                    else [
                        [int(x), int(y)] for x, y in zip(a[a != b][:5], b[a != b][:5], strict=True)
                    ],
                }
        report["scales"] = []
        for n in scales:
            sdir = run_dir / f"synth-{n}"
            print(f"[synth] {n:,} words ...", file=sys.stderr, flush=True)
            res = run_worker(
                "synth",
                {
                    **common,
                    "words": n,
                    "seed": args.seed,
                    "dir": str(sdir),
                    "query_words": args.query_words,
                    "lookup_budget_s": args.lookup_budget,
                },
                timeout=args.scale_timeout,
            )
            shutil.rmtree(sdir, ignore_errors=True)
            report["scales"].append(res)
            print(
                f"[synth] {n:,} words: "
                + json.dumps({k: v for k, v in res.items() if k != "stats"}),
                file=sys.stderr,
                flush=True,
            )
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    report["total_s"] = time.perf_counter() - t_all
    report["machine"]["loadavg_end"] = os.getloadavg()
    report["code_fingerprint_end"] = code_fingerprint()
    report["summary"] = summarise(report)
    print_table(report)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        print(f"\nJSON written to {args.json}")
    return 0


def _check(res: dict[str, Any]) -> None:
    if "error" in res:
        raise SystemExit(f"benchmark worker failed: {res}")


def _git(*a: str) -> str:
    try:
        return subprocess.run(
            ["git", *a], cwd=REPO, capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        return "?"


def summarise(r: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of (figure, value, target, verdict)."""
    rows: list[dict[str, Any]] = []

    def row(name: str, value: str, target: str = "", ok: bool | None = None) -> None:
        rows.append({"figure": name, "value": value, "target": target, "verdict": verdict(ok)})

    builds = r.get("tab_build_runs")
    best = None
    if builds:
        best = min(builds, key=lambda b: b["build_s"])
        st = best["stats"]
        words = st["n_words"]
        times = ", ".join(f"{b['build_s']:.2f}" for b in builds)
        row(
            "TAB collection",
            f"{best['n_docs']:,} docs, {words:,} words, {fmt_bytes(best['raw_bytes'])} UTF-8",
        )
        row(
            "TAB index build time (best of runs)",
            f"{best['build_s']:.2f} s  (runs: {times})",
            f"<= {T_BUILD_S:.0f} s",
            best["build_s"] <= T_BUILD_S,
        )
        row("TAB build words/s", f"{words / best['build_s']:,.0f}")
        disk_ratio = st["bytes_on_disk"] / best["raw_bytes"]
        row(
            "TAB index on disk / raw text",
            f"{fmt_bytes(st['bytes_on_disk'])} / {fmt_bytes(best['raw_bytes'])}"
            f" = {disk_ratio:.2f}x",
            f"<= {T_DISK_RATIO}x",
            disk_ratio <= T_DISK_RATIO,
        )
        row(
            "TAB keys stored",
            f"{st['n_keys']:,} ({st['n_keys'] / words:.2f} per word),"
            f" {st['n_postings']:,} postings",
        )
        peak = max(b["peak_rss"] for b in builds)
        row(
            "TAB build peak RSS (max of runs)",
            f"{fmt_bytes(peak)} (process before build: {fmt_bytes(best['rss_before_build'])})",
        )
    ld = r.get("tab_load")
    base = r.get("dict_baseline")
    if ld:
        row(
            "TAB load time (verify / no verify)",
            f"{ld['load_s'] * 1000:.0f} ms / {ld['load_noverify_s'] * 1000:.0f} ms",
        )
        row(
            "Index RSS increase: load + look-ups",
            f"{fmt_bytes(ld['rss_increase'])} (anon {fmt_bytes(ld['rss_increase_anon'])},"
            f" file-backed mmap {fmt_bytes(ld['rss_increase_file'])};"
            f" at load alone {fmt_bytes(ld['rss_increase_at_load'])})",
        )
        share = ld["n_keys_not_in_trie"] / ld["n_keys"]
        row(
            "Look-up keys (127 de-identified test docs)",
            f"{ld['n_keys']:,} 1..8-grams ({ld['n_unique_keys']:,} distinct);"
            f" not in trie {ld['n_keys_not_in_trie']:,} = {share:.1%}",
        )
        row(
            "Index bulk df_keys look-ups/s (all keys)",
            f"{ld['lookups_per_s']:,.0f}/s ({ld['lookup_full_s']:.1f} s)",
            f">= {T_LOOKUPS:,.0f}/s",
            ld["lookups_per_s"] >= T_LOOKUPS,
        )
        row("  of which keys stored in the trie", f"{ld['hit_lookups_per_s']:,.0f}/s")
        if ld.get("miss_lookups_per_s"):
            row(
                "  of which keys not stored (exact path)",
                f"{ld['miss_lookups_per_s']:,.0f}/s ({1e6 / ld['miss_lookups_per_s']:.0f} us"
                f" each; sample of {ld['miss_sample']:,})",
            )
    if base:
        row("dict baseline build time", f"{base['build_s']:.2f} s ({base['n_keys']:,} keys)")
        if best:
            row("  index build / dict build", f"{best['build_s'] / base['build_s']:.2f}x")
        row("dict baseline RSS increase once built", fmt_bytes(base["rss_increase"]))
        row("dict baseline look-ups/s", f"{base['lookups_per_s']:,.0f}/s")
        if ld:
            ratio = base["rss_increase"] / max(ld["rss_increase"], 1)
            row(
                "Memory: dict RSS / index RSS",
                f"{ratio:.1f}x",
                f">= {T_MEM_RATIO:.0f}x",
                ratio >= T_MEM_RATIO,
            )
            row("Look-ups: index / dict", f"{ld['lookups_per_s'] / base['lookups_per_s']:.3f}x")
    cc = r.get("df_cross_check")
    if cc:
        row(
            "df cross-check index vs dict",
            f"{cc['mismatches']} mismatches in {cc['keys']:,} keys",
            "0",
            cc["mismatches"] == 0,
        )
    scales = [s for s in r.get("scales", []) if "error" not in s]
    for s in r.get("scales", []):
        if "error" in s:
            row("synthetic scale", s["error"], "", False)
    first = scales[0] if scales else None
    for s in scales:
        st = s["stats"]
        w = st["n_words"]
        us = s["build_s"] / w * 1e6
        label = f"synthetic {s['target_words']:.0e} words"
        row(
            label,
            f"{s['n_docs']:,} docs, {w:,} words, {st['n_doc_shards']} shard(s),"
            f" {st['n_keys']:,} keys, {fmt_bytes(s['raw_bytes'])} text",
        )
        flat_ok = None
        if first is not None and s is not first and s is scales[-1]:
            ratio = us / (first["build_s"] / first["stats"]["n_words"] * 1e6)
            flat_ok = ratio <= T_FLAT
            extra = f"; {ratio:.2f}x the {first['target_words']:.0e} figure"
        else:
            extra = ""
        row(
            "  build time (net of generation)",
            f"{s['build_s']:.1f} s = {us:.2f} us/word{extra} (generation {s['gen_s']:.1f} s)",
            f"per word <= {T_FLAT}x smallest" if flat_ok is not None else "",
            flat_ok,
        )
        big = s["target_words"] >= 100_000_000
        row(
            "  peak RSS",
            fmt_bytes(s["peak_rss"]),
            "< 8 GiB" if big else "",
            (s["peak_rss"] < T_PEAK_100M) if big else None,
        )
        row(
            "  on disk / raw text",
            f"{fmt_bytes(st['bytes_on_disk'])} = {st['bytes_on_disk'] / s['raw_bytes']:.2f}x",
        )
        lk = s.get("lookups_per_s")
        stored = s["lookup_keys_in_every_shard"] / max(s["lookup_keys_total"], 1)
        row(
            "  load time / sampled df_keys look-ups/s",
            f"{s['load_s']:.2f} s / {lk:,.0f}/s over {s['lookup_keys_timed']:,} of"
            f" {s['lookup_keys_total']:,} held-out keys ({stored:.0%} stored in every shard)"
            if lk
            else "-",
        )
    return rows


def print_table(r: dict[str, Any]) -> None:
    rows = r["summary"]
    w1 = max(len(x["figure"]) for x in rows) if rows else 10
    w2 = min(max(len(x["value"]) for x in rows), 110) if rows else 10
    w3 = max([len(x["target"]) for x in rows] + [6])
    m = r["machine"]
    print(
        f"\nIndex benchmark  {r['date']}  (HEAD {r['git_head']}, {m['cpus']} CPUs,"
        f" load avg {m['loadavg_start'][0]:.1f} -> {m['loadavg_end'][0]:.1f})"
    )
    print(f"{'figure':<{w1}}  {'value':<{w2}}  {'target':<{w3}}  verdict")
    print("-" * (w1 + w2 + w3 + 13))
    for x in rows:
        print(f"{x['figure']:<{w1}}  {x['value']:<{w2}}  {x['target']:<{w3}}  {x['verdict']}")
    if r["code_fingerprint_start"] != r["code_fingerprint_end"]:
        print(
            "WARNING: the sources under test changed during the run: " + ", ".join(CODE_UNDER_TEST)
        )
    print(f"total {r['total_s']:.0f} s")


if __name__ == "__main__":
    sys.exit(main())

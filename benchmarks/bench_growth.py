"""A growing index at scale: start-up against collection size, `index add` at 1e7 words,
and `index add --dask-scheduler` (issue 58's targets on synthetic collections).

Every index is built and grown through the CLI (``presidio-delink``) in a fresh process.
Collections come from ``benchmarks/synthetic.py`` (seed 0, streamed to JSONL).

1. ``startup``: two collections of ``--startup-docs`` documents (default 1,000 and
   100,000) with a short mean length (``--startup-mean`` words, default 10: the
   generator clips each document to at least 10 words), built with their readings
   stored (``index build --readings``).  Then ``delink --llm none`` of one short document
   whose source is in both collections (``syn:0``, the same text: the audit runs), in a
   fresh process, ``--rounds`` times, alternating the two indexes.  The start-up is the
   process's wall time minus the record's own ``seconds`` (its rewriting: the audit is
   not in it) [target: the two at most 1.5x apart]; the whole wall time is printed too.
   Beside each run, the library's side in a fresh process (:data:`STEPS`): opening the
   index, and a first and a second audit of the text; the set-up done once a process is
   the opening plus what the first audit costs over the second.
2. ``add``: collections of ``--add-base-words`` (default 1e6 and 1e7 words, the
   generator's default mean of 700 words a document; the smaller one is the larger's
   first documents), built without readings (``--no-readings``: at 1e7 words the
   readings alone take tens of minutes on 2 shared cores).  A copy of each gets
   ``index add`` of ``--add-words`` new words (default 1e5, another random stream).
   Printed: the build's and the add's seconds and their ratio [target at 1e7 words:
   at most 2 %], and the peak RSS of the add's process (the driver: ``os.wait4``'s
   ``ru_maxrss``) against the index's size [target: flat].  The same is done on the
   larger start-up index, whose readings are stored, so that its add stores its count
   tables too: the add against the build plus readings.
3. ``dask``: two copies of the smaller start-up index (readings stored) each get the
   same ``--dask-words`` new words: one by a plain ``index add``, one by ``index add
   --dask-scheduler`` on a ``distributed.LocalCluster`` (127.0.0.1, 2 worker processes
   of 1 thread).  ``check`` (k = 2, and k = 5 with arity 2) of a few texts, added and
   old documents, over both: byte-identical outputs [target].

The command line, date, commit and ``uptime`` load are printed first; each step's load
(``/proc/loadavg``) is recorded with it.  ``--json OUT`` writes every figure.

Usage::

    python benchmarks/bench_growth.py [--work /tmp/bench_growth] [--parts startup add dask]
        [--startup-docs 1000 100000] [--startup-mean 10] [--rounds 3]
        [--add-base-words 1e6 1e7] [--add-words 1e5] [--dask-words 1e4] [--json OUT]

Indexes are kept in ``--work`` (a rerun reuses the builds and their recorded seconds);
delete it when done: the 1e7-word index takes about 0.4 GB, the start-up indexes with
their readings about 1 GB.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import SyntheticCollection  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "presidio_delink.cli"]
ENV = dict(os.environ, TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS="")


def load() -> float:
    """The machine's 1-minute load average."""
    return float(Path("/proc/loadavg").read_text().split()[0])


def run(args: list[str], *, check: bool = True) -> dict[str, Any]:
    """Run ``args`` in a fresh process: its wall seconds, its own peak RSS (MiB, not its
    children's), exit code and stdout."""
    before = load()
    t0 = time.perf_counter()
    p = _Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV,
                         cwd=ROOT)
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    rss = _rss_of(p)
    if check and p.returncode not in (0, 1, 3):
        raise RuntimeError(f"{' '.join(args)} failed ({p.returncode}): {err.decode()[-2000:]}")
    return {"seconds": wall, "rss_mib": rss, "rc": p.returncode, "stdout": out,
            "stderr": err.decode(errors="replace"), "load": before}


_RUSAGE: dict[int, float] = {}


def _rss_of(p: subprocess.Popen[bytes]) -> float:
    return _RUSAGE.pop(p.pid, float("nan"))


class _Popen(subprocess.Popen):
    """A Popen that reaps its child with ``os.wait4`` to keep the child's own rusage."""

    def _try_wait(self, wait_flags: int) -> tuple[int, int]:
        try:
            pid, sts, ru = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return self.pid, 0
        if pid == self.pid:
            _RUSAGE[pid] = ru.ru_maxrss / 1024
        return pid, sts


def write_docs(path: Path, coll: SyntheticCollection, *, stream: int = 1,
               prefix: str = "syn", max_docs: int | None = None) -> int:
    """Stream a collection's documents to JSONL; returns the number written."""
    n = 0
    with open(path, "w", encoding="utf-8") as f:
        for doc_id, text in coll.docs(stream=stream, prefix=prefix):
            f.write(json.dumps({"id": doc_id, "text": text}) + "\n")
            n += 1
            if max_docs is not None and n >= max_docs:
                break
    return n


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def build(work: Path, name: str, src: Path, readings: bool) -> dict[str, Any]:
    """``index build`` of ``src`` into ``work/name`` (reused with its recorded figures
    when there); its seconds, the driver's peak RSS and the index's bytes."""
    out = work / name
    rec_path = work / f"{name}.build.json"
    if out.exists() and rec_path.exists():
        return dict(json.loads(rec_path.read_text()), reused=True)
    shutil.rmtree(out, ignore_errors=True)
    args = [*CLI, "index", "build", str(src), "-o", str(out), "--workers", "2",
            "--readings" if readings else "--no-readings"]
    r = run(args)
    rec = {"seconds": r["seconds"], "rss_mib": r["rss_mib"], "load": r["load"],
           "bytes": du(out), "readings": readings,
           "command": " ".join(args[2:]), "summary": r["stderr"].strip().splitlines()[-1]}
    rec_path.write_text(json.dumps(rec))
    print(f"  built {name}: {rec['seconds']:.1f} s (load {rec['load']:.2f}), "
          f"{rec['bytes'] / 1e6:.1f} MB, driver {rec['rss_mib']:.0f} MiB", flush=True)
    return rec


def fresh_copy(src: Path, dst: Path) -> Path:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, symlinks=True)
    return dst


def add(index: Path, src: Path, extra: list[str] | None = None) -> dict[str, Any]:
    args = [*CLI, "index", "add", str(index), str(src), "--workers", "2", *(extra or [])]
    r = run(args)
    if r["rc"] != 0:
        raise RuntimeError(r["stderr"][-2000:])
    return {"seconds": r["seconds"], "rss_mib": r["rss_mib"], "load": r["load"],
            "summary": r["stderr"].strip().splitlines()[-1]}


# -- 1. start-up ---------------------------------------------------------------------------
# The library's side of a one-document run, in a fresh process: the seconds to import, to
# open the index, and of the first and a second audit of the same text (its source known).
# What the first audit costs over the second is set-up done once a process (the readings
# opened, their tables read): with the opening, the time before the first document starts.
STEPS = r"""
import json, sys, time
t0 = time.perf_counter()
from presidio_delink import NgramIndex
from presidio_delink.attacks.audit import Auditor
t1 = time.perf_counter()
idx = NgramIndex.load(sys.argv[1])
t2 = time.perf_counter()
rec = json.loads(open(sys.argv[2], encoding="utf-8").readline())
group = idx.doc_groups[idx.doc_ids.index(rec["id"])]
auditor = Auditor(idx, 2)
auditor.read(rec["text"], group)
t3 = time.perf_counter()
auditor.read(rec["text"], group)
t4 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "open": t2 - t1, "first_audit": t3 - t2,
                  "second_audit": t4 - t3}))
"""


def steps(idx: Path, query: Path) -> dict[str, float]:
    r = run([sys.executable, "-c", STEPS, str(idx), str(query)])
    out: dict[str, float] = json.loads(r["stdout"].decode().strip().splitlines()[-1])
    out["set_up"] = out["open"] + out["first_audit"] - out["second_audit"]
    out["rss_mib"] = r["rss_mib"]
    out["load"] = r["load"]
    return out


def startup(work: Path, ns: argparse.Namespace, res: dict[str, Any]) -> None:
    coll = SyntheticCollection(n_words=10**9, mean_doc_words=ns.startup_mean)
    idxs: dict[int, Path] = {}
    res["startup"] = {"builds": {}, "runs": []}
    for n in ns.startup_docs:
        src = work / f"start{n}.jsonl"
        if not src.exists():
            write_docs(src, coll, max_docs=n)
        b = build(work, f"start{n}", src, readings=True)
        b["n_docs"] = n
        res["startup"]["builds"][str(n)] = b
        idxs[n] = work / f"start{n}"
    query = work / "query.jsonl"
    first = next(coll.docs())
    query.write_text(json.dumps({"id": first[0], "text": first[1]}) + "\n")
    print(f"  query {first[0]}: {len(first[1].split())} words", flush=True)
    walls: dict[int, list[float]] = {n: [] for n in idxs}
    starts: dict[int, list[float]] = {n: [] for n in idxs}
    sets: dict[int, list[float]] = {n: [] for n in idxs}
    for rnd in range(ns.rounds + 1):
        for n, idx in idxs.items():
            out = work / f"delink{n}.jsonl"
            out.unlink(missing_ok=True)
            r = run([*CLI, "delink", "--index", str(idx), "--llm", "none", "-o", str(out),
                     str(query)])
            recs = [json.loads(x) for x in out.read_text().splitlines() if x.strip()]
            if not recs or "source_ranks" not in recs[0]:
                raise RuntimeError(f"no audited record over {idx}: {r['stderr'][-1500:]}")
            doc_s = float(recs[0].get("seconds", 0.0))
            row = {"round": rnd, "n_docs": n, "wall": r["seconds"], "doc_seconds": doc_s,
                   "startup": r["seconds"] - doc_s, "rss_mib": r["rss_mib"],
                   "load": r["load"], "warm_up": rnd == 0}
            res["startup"]["runs"].append(row)
            print(f"  round {rnd} {n:>7} docs: wall {r['seconds']:.2f} s, document "
                  f"{doc_s:.2f} s, start-up {row['startup']:.2f} s, {r['rss_mib']:.0f} MiB "
                  f"(load {r['load']:.2f})", flush=True)
            st = steps(idx, query)
            row["steps"] = st
            print(f"      library: import {st['import']:.2f} s, open {st['open']:.2f} s, "
                  f"first audit {st['first_audit']:.2f} s, second {st['second_audit']:.2f} s"
                  f": set-up {st['set_up']:.2f} s, {st['rss_mib']:.0f} MiB", flush=True)
            if rnd:  # round 0 warms the page cache
                walls[n].append(r["seconds"])
                starts[n].append(row["startup"])
                sets[n].append(st["set_up"])
    small, large = min(idxs), max(idxs)
    s_ratio = sum(starts[large]) / sum(starts[small])
    w_ratio = sum(walls[large]) / sum(walls[small])
    u_ratio = sum(sets[large]) / sum(sets[small])
    res["startup"]["ratio_startup"] = s_ratio
    res["startup"]["ratio_wall"] = w_ratio
    res["startup"]["ratio_set_up"] = u_ratio
    print(f"startup: {large} against {small} documents: delink wall less the record's "
          f"seconds {s_ratio:.2f}x, whole run {w_ratio:.2f}x; library set-up (open + first "
          f"audit - second) {u_ratio:.2f}x (summed over {ns.rounds} rounds) "
          "[target <= 1.5x]", flush=True)


# -- 2. adds at scale --------------------------------------------------------------------
def adds(work: Path, ns: argparse.Namespace, res: dict[str, Any]) -> None:
    coll = SyntheticCollection(n_words=int(max(ns.add_base_words)))
    new = work / "new.jsonl"
    if not new.exists():
        write_docs(new, SyntheticCollection(n_words=int(ns.add_words)), stream=2, prefix="new")
    res["add"] = []
    big_src = work / "big.jsonl"
    if not big_src.exists():
        write_docs(big_src, coll)
    for words in sorted(ns.add_base_words):
        src = big_src
        if words < max(ns.add_base_words):
            src = work / f"base{int(words)}.jsonl"
            if not src.exists():
                write_docs(src, SyntheticCollection(n_words=int(words)))
        name = f"base{int(words):.0e}".replace("+", "")
        b = build(work, name, src, readings=False)
        grown = fresh_copy(work / name, work / f"{name}-grown")
        a = add(grown, new)
        row = {"base_words": words, "build": b, "add": a,
               "ratio": a["seconds"] / b["seconds"], "grown_bytes": du(grown)}
        res["add"].append(row)
        print(f"add: {words:.0e} words ({b['bytes'] / 1e6:.0f} MB): build {b['seconds']:.1f} s "
              f"(load {b['load']:.2f}), add {ns.add_words:.0e} words {a['seconds']:.2f} s "
              f"(load {a['load']:.2f}) = {100 * row['ratio']:.2f} % of the build; add "
              f"driver peak {a['rss_mib']:.0f} MiB, build driver {b['rss_mib']:.0f} MiB",
              flush=True)
        shutil.rmtree(grown)
    if "startup" in ns.parts:
        n = max(ns.startup_docs)
        b = json.loads((work / f"start{n}.build.json").read_text())
        grown = fresh_copy(work / f"start{n}", work / f"start{n}-grown")
        small_new = work / "new-short.jsonl"
        write_docs(small_new, SyntheticCollection(
            n_words=int(ns.add_words), mean_doc_words=ns.startup_mean), stream=2, prefix="new")
        a = add(grown, small_new)
        row = {"base_docs": n, "build": b, "add": a, "ratio": a["seconds"] / b["seconds"],
               "with_counts": True}
        res["add"].append(row)
        print(f"add with count tables: {n} documents ({b['bytes'] / 1e6:.0f} MB, readings "
              f"stored): build + readings {b['seconds']:.1f} s, add {ns.add_words:.0e} words "
              f"{a['seconds']:.2f} s = {100 * row['ratio']:.2f} %; add driver peak "
              f"{a['rss_mib']:.0f} MiB", flush=True)
        shutil.rmtree(grown)


# -- 3. index add --dask-scheduler -------------------------------------------------------
def dask_add(work: Path, ns: argparse.Namespace, res: dict[str, Any]) -> None:
    import distributed

    n = min(ns.startup_docs)
    base = work / f"start{n}"
    if not base.exists():
        raise SystemExit("run the startup part first (the dask part grows its smaller index)")
    new = work / "new-dask.jsonl"
    write_docs(new, SyntheticCollection(n_words=int(ns.dask_words),
                                        mean_doc_words=ns.startup_mean), stream=3, prefix="dk")
    plain = fresh_copy(base, work / "dask-plain")
    viadask = fresh_copy(base, work / "dask-dask")
    a = add(plain, new)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        d = add(viadask, new, ["--dask-scheduler", cluster.scheduler_address])
    texts = work / "dask-texts.jsonl"
    lines = new.read_text().splitlines()[:3] + (work / f"start{n}.jsonl").read_text(
    ).splitlines()[:3]
    texts.write_text("\n".join(lines) + "\n")
    same = []
    for opts in (["-k", "2"], ["-k", "5", "--arity", "2"]):
        outs = [run([*CLI, "check", "--index", str(i), *opts, str(texts)])["stdout"]
                for i in (plain, viadask)]
        same.append({"opts": " ".join(opts), "bytes": len(outs[0]),
                     "identical": outs[0] == outs[1]})
    res["dask"] = {"plain": a, "dask": d, "checks": same}
    print(f"dask: plain add {a['seconds']:.2f} s, --dask-scheduler add {d['seconds']:.2f} s; "
          + "; ".join(f"check {s['opts']}: {s['bytes']} bytes, "
                      f"{'identical' if s['identical'] else 'DIFFERENT'}" for s in same),
          flush=True)
    shutil.rmtree(plain)
    shutil.rmtree(viadask)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench_growth"))
    ap.add_argument("--parts", nargs="+", default=["startup", "add", "dask"],
                    choices=["startup", "add", "dask"])
    ap.add_argument("--startup-docs", type=int, nargs=2, default=[1000, 100_000])
    ap.add_argument("--startup-mean", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--add-base-words", type=float, nargs="+", default=[1e6, 1e7])
    ap.add_argument("--add-words", type=float, default=1e5)
    ap.add_argument("--dask-words", type=float, default=1e4)
    ap.add_argument("--json", type=Path, default=None)
    ns = ap.parse_args()
    ns.work.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    up = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    res: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": commit, "uptime_before": up,
    }
    print(f"{res['command']}\n{res['date']} commit {commit}\nuptime: {up}", flush=True)
    if "startup" in ns.parts:
        startup(ns.work, ns, res)
    if "add" in ns.parts:
        adds(ns.work, ns, res)
    if "dask" in ns.parts:
        dask_add(ns.work, ns, res)
    res["uptime_after"] = subprocess.run(["uptime"], capture_output=True,
                                         text=True).stdout.strip()
    print(f"uptime after: {res['uptime_after']}", flush=True)
    if ns.json is not None:
        ns.json.write_text(json.dumps(res, indent=1, default=str))


if __name__ == "__main__":
    main()

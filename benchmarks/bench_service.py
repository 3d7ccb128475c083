"""Load test of ``presidio-delink serve`` (issue 59): a real server on 127.0.0.1, started
here, ``--llm none``, and CLIENTS concurrent clients for DURATION seconds per route.

1. The CLI's answers first, on the same documents and cores: ``check`` once, and
   ``delink --workers W`` twice (on one document and on all of them), so that its batch
   rate leaves its start-up out: ``(N - 1) / (T_N - T_1)``.
2. The server (``--workers W``): its start-up, each process's memory
   (``/proc/PID/smaps_rollup``: RSS, PSS and private pages) idle and after the load.
3. ``/check`` for DURATION s: latency median and p99 (each answer's places compared with
   ``check``'s for that document); then one client alone for a third of it (the latency
   without queueing); the server's CPU milliseconds a check in both.
4. ``/delink`` for DURATION s: its rate against the CLI's batch rate, in words a second
   (a timed run serves the first documents most, and their lengths differ), each answer's
   text compared byte for byte with ``delink``'s; and CPU milliseconds per 1000 words (the
   server's processes against the CLI's): on a shared machine the wall-clock rates of two
   runs minutes apart move with the load, the CPU a word much less.
5. SIGTERM: the exit code and the seconds to exit.

Documents: the 127 gold-masked TAB test documents against the TAB collection (built into
``benchmarks/_work/service`` when missing; ``--samples``: the 5 samples against the
samples index).  Their ids are not the collection's, so nothing is audited (the audit's
cost is the issue on a living index); ``--known`` keeps the collection's ids (audited,
each answer's ``source_ranks`` compared too).

Usage::

    python benchmarks/bench_service.py [--duration 60] [--clients 16] [--workers 2]
        [--samples] [--known] [--check-only | --in-process] [--json OUT]

``--in-process`` measures only the CPU of ``analyze`` in the benchmark's own process (no
CLI, no server): 10 warm-up checks, then every document twice, ``time.process_time``.
``--check-only`` runs steps 1 to 3 for ``check`` alone. Run by another build's interpreter
(``/other/.venv/bin/python benchmarks/bench_service.py --check-only``), it measures that
build's library (``library`` in the output), for an A/B in turn on the same machine.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from service_process import ServiceProcess  # noqa: E402

ENV = {**os.environ, "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": ""}
CLI = [sys.executable, "-m", "presidio_delink"]


def setup(work: Path, samples: bool, known: bool) -> tuple[Path, list[dict[str, str]]]:
    """The index and the documents (``{"id", "text"}``)."""
    if samples:
        idx = work / "samples_index"
        if not (idx / "meta.json").exists():
            subprocess.run([*CLI, "index", "build", str(REPO / "samples" / "collection.jsonl"),
                            "-o", str(idx), "--no-progress"], check=True, env=ENV)
        lines = (REPO / "samples" / "deidentified.jsonl").read_text().splitlines()
        docs = [json.loads(x) for x in lines if x.strip()]
    else:
        import ranked_adversaries as ra

        from presidio_delink.datasets import tab_collection, tab_test
        from presidio_delink.index import NgramIndex

        idx = work / "tab_index"
        if not (idx / "meta.json").exists():
            NgramIndex.build(list(tab_collection()), idx, max_n=8,
                             group_regex=ra.GROUP_RE.pattern)
        docs = [{"id": cid, "text": deid} for cid, _orig, deid in tab_test()]
    if not known:
        docs = [{"id": f"q:{d['id']}", "text": d["text"]} for d in docs]
    return idx, docs


def write_jsonl(path: Path, docs: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))
    return path


def cli_runs(idx: Path, docs: list[dict[str, str]], work: Path, workers: int,
             tag: str = "", check_only: bool = False) -> dict[str, Any]:
    """``check`` and ``delink`` of the CLI: their records by id and the batch rate
    (``check_only``: ``check``'s records alone)."""
    all_docs = write_jsonl(work / f"docs{tag}.jsonl", docs)
    one = write_jsonl(work / f"one{tag}.jsonl", docs[:1])
    check = subprocess.run([*CLI, "check", "--index", str(idx), str(all_docs)],
                           capture_output=True, env=ENV)
    checks = {r["id"]: r for r in map(json.loads, check.stdout.decode().splitlines())}
    if check_only:
        return {"checks": checks}
    times, cpu = {}, {}
    for name, path in (("one", one), ("all", all_docs)):
        out = work / f"cli{tag}_{name}.jsonl"
        out.unlink(missing_ok=True)
        t0 = time.perf_counter()
        c0 = _children_cpu()
        res = subprocess.run([*CLI, "delink", "--index", str(idx), "--llm", "none",
                              "--no-progress", "--workers", str(workers), str(path),
                              "-o", str(out)], capture_output=True, env=ENV)
        times[name] = time.perf_counter() - t0
        cpu[name] = _children_cpu() - c0
        if res.returncode not in (0, 3):
            raise SystemExit(f"delink failed ({res.returncode}): {res.stderr.decode()[-2000:]}")
    records = {r["id"]: r for r in map(json.loads, (work / f"cli{tag}_all.jsonl").read_text()
                                       .splitlines())}
    n = len(docs)
    words_one = sum(r["words"] for r in map(json.loads, (work / f"cli{tag}_one.jsonl")
                                            .read_text().splitlines()))
    words_all = sum(r["words"] for r in records.values())
    return {
        "checks": checks, "records": records, "seconds_one": round(times["one"], 2),
        "seconds_all": round(times["all"], 2),
        "docs_per_s": round((n - 1) / max(times["all"] - times["one"], 1e-9), 3),
        "docs_per_s_with_startup": round(n / times["all"], 3),
        "cpu_s_per_doc": round((cpu["all"] - cpu["one"]) / max(n - 1, 1), 3),
        "words_per_s": round((words_all - words_one) / max(times["all"] - times["one"], 1e-9)),
        "cpu_ms_per_1000_words": round(
            1e6 * (cpu["all"] - cpu["one"]) / max(words_all - words_one, 1), 1),
    }


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (theirs included)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_seconds(pids: list[int]) -> float:
    """CPU seconds (user and system) the processes have used."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


def memory(pids: list[int]) -> list[dict[str, int]]:
    """RSS, PSS and private pages (MB) of each process."""
    out = []
    for pid in pids:
        fields: dict[str, int] = {}
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
            name, value = line.split(":", 1)
            fields[name] = int(value.split()[0])
        out.append({"pid": pid, "rss_mb": fields["Rss"] // 1024, "pss_mb": fields["Pss"] // 1024,
                    "private_mb": (fields["Private_Clean"] + fields["Private_Dirty"]) // 1024})
    return out


def load(port: int, route: str, docs: list[dict[str, str]], clients: int, duration: float,
         verify: Any) -> dict[str, Any]:
    """``clients`` threads posting ``route`` for ``duration`` s, each on one keep-alive
    connection, cycling through ``docs``; every answer verified."""
    lat: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop = time.monotonic() + duration

    def client(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        j = i
        while time.monotonic() < stop:
            doc = docs[j % len(docs)]
            j += clients
            body = {"text": doc["text"]} if route == "/check" else doc
            t0 = time.perf_counter()
            try:
                conn.request("POST", route, json.dumps(body).encode(),
                             {"Content-Type": "application/json"})
                resp = conn.getresponse()
                data = json.loads(resp.read())
                took = time.perf_counter() - t0
                why = None if resp.status == 200 else f"status {resp.status}: {data}"
                why = why or verify(doc, data)
            except Exception as exc:  # counted, and the connection opened again
                took, why = time.perf_counter() - t0, f"{type(exc).__name__}: {exc}"
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            with lock:
                lat.append(took)
                if why:
                    errors.append(why[:300])
        conn.close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    lat.sort()
    return {
        "requests": len(lat), "errors": len(errors), "first_errors": errors[:3],
        "seconds": round(elapsed, 1), "per_s": round(len(lat) / elapsed, 3),
        "median_ms": round(statistics.median(lat) * 1000, 1) if lat else None,
        "p99_ms": round(lat[min(len(lat) - 1, int(0.99 * len(lat)))] * 1000, 1) if lat else None,
    }


def places(spans: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((s["start"], s["end"], s["ngram"], s["view"], s["df"], s["arity"])
                  for s in spans)


def in_process(idx: Path, docs: list[dict[str, str]], k: int = 2, warm: int = 10
               ) -> dict[str, Any]:
    """The CPU of a check in this process, without the server: the index loaded once,
    ``warm`` checks first, then every document checked twice in turn (the first pass is
    the one to compare: the second finds the walks of the first in the index's memos),
    ``time.process_time`` around each pass."""
    from presidio_delink.index import NgramIndex
    from presidio_delink.linkage import analyze

    index = NgramIndex.load(idx)
    for d in docs[:warm]:
        analyze(index, d["text"], k=k)
    out: dict[str, Any] = {"k": k, "warm_up_checks": warm, "documents": len(docs)}
    for name in ("first_pass", "second_pass"):
        c0 = time.process_time()
        for d in docs:
            analyze(index, d["text"], k=k)
        out[f"{name}_cpu_ms_per_check"] = round(1000 * (time.process_time() - c0) / len(docs), 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=60.0, help="seconds per route")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2, help="server and CLI processes")
    ap.add_argument("--samples", action="store_true", help="the samples, not TAB")
    ap.add_argument("--known", action="store_true", help="collection ids: audited")
    ap.add_argument("--docs", type=int, default=None, help="only the first N documents")
    ap.add_argument("--work", type=Path, default=REPO / "benchmarks" / "_work" / "service")
    ap.add_argument("--tag", default="", help="a name for this run's files in --work")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--check-only", action="store_true",
                    help="only /check (and the CLI's check): an A/B of two builds, run in turn")
    ap.add_argument("--in-process", action="store_true",
                    help="only the CPU of analyze() in this process (no CLI, no server)")
    a = ap.parse_args()
    a.work = a.work.resolve()  # the run changes into it (below)
    a.json = a.json.resolve() if a.json else None
    a.work.mkdir(parents=True, exist_ok=True)
    row: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                                 capture_output=True, text=True).stdout.strip(),
        "uptime_before": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        "cores": os.cpu_count(), "duration_s": a.duration, "clients": a.clients,
        "workers": a.workers, "data": "samples" if a.samples else "TAB test (127, gold masks)",
        "known_sources": a.known,
    }
    # The CLI and the server run as `python -m presidio_delink`, which imports from the
    # working directory first: run them from the work folder, so that what is measured is
    # the library this interpreter has installed (another build's, in an A/B), and say which.
    os.chdir(a.work)
    row["library"] = subprocess.run(
        [sys.executable, "-c", "import presidio_delink as p; print(p.__file__)"],
        capture_output=True, text=True, env=ENV).stdout.strip()
    idx, docs = setup(a.work, a.samples, a.known)
    docs = docs[: a.docs] if a.docs else docs
    row["documents"] = len(docs)
    if a.in_process:
        row["in_process"] = in_process(idx, docs)
        row["uptime_after"] = subprocess.run(["uptime"], capture_output=True,
                                             text=True).stdout.strip()
        print(json.dumps(row, indent=1))
        if a.json:
            a.json.write_text(json.dumps(row, indent=1) + "\n")
        return
    print(f"{len(docs)} documents; CLI runs ...", file=sys.stderr)
    cli = cli_runs(idx, docs, a.work, a.workers, a.tag, a.check_only)
    row["cli"] = {k: v for k, v in cli.items() if k not in ("checks", "records")}
    print(f"CLI: {row['cli']}", file=sys.stderr)

    t0 = time.perf_counter()
    srv = ServiceProcess(["--index", idx, "--llm", "none", "--workers", a.workers],
                         verbose=False, start_timeout=1800).start()
    row["server_start_s"] = round(time.perf_counter() - t0, 1)
    try:
        procs = [srv.pid, *srv.workers()]
        row["memory_idle"] = memory(procs)
        print(f"server up in {row['server_start_s']} s; memory {row['memory_idle']}",
              file=sys.stderr)

        def check_ok(doc: dict[str, str], data: dict[str, Any]) -> str | None:
            want = cli["checks"][doc["id"]]
            if data["linkable"] != want["linkable"] or places(data["results"]) != places(
                    want["spans"]):
                return f"{doc['id']}: /check differs from check"
            return None

        served_words = [0]

        def delink_ok(doc: dict[str, str], data: dict[str, Any]) -> str | None:
            rec = cli["records"][doc["id"]]
            served_words[0] += rec["words"]
            if data["text"] is None or data["text"].encode() != rec["text"].encode():
                return f"{doc['id']}: /delink text differs from delink's"
            if a.known and (data["risk"] or {}).get("source_ranks") != rec.get("source_ranks"):
                return f"{doc['id']}: source_ranks differ from delink's"
            return None

        for key, clients, seconds in (("check", a.clients, a.duration),
                                      ("check_one_client", 1, a.duration / 3)):
            c0 = cpu_seconds(procs)
            got = row[key] = load(srv.port, "/check", docs, clients, seconds, check_ok)
            # the CPU a check takes (parent and workers): with C clients on K cores the
            # median latency is about C x this / K once the cores are saturated
            got["cpu_ms_per_request"] = round(
                1000 * (cpu_seconds(procs) - c0) / max(got["requests"], 1), 1)
            print(f"/check, {clients} client(s): {got}", file=sys.stderr)
        if not a.check_only:
            c0 = cpu_seconds(procs)
            row["delink"] = load(srv.port, "/delink", docs, a.clients, a.duration, delink_ok)
            served = row["delink"]["requests"]
            used = cpu_seconds(procs) - c0
            d = row["delink"]
            d["cpu_s_per_doc"] = round(used / max(served, 1), 3)
            d["words_per_s"] = round(served_words[0] / d["seconds"])
            d["cpu_ms_per_1000_words"] = round(1e6 * used / max(served_words[0], 1), 1)
            print(f"/delink: {d}", file=sys.stderr)
            # documents differ in length and a timed run serves the first ones most: compare
            # by words
            row["delink_vs_cli_words_per_s"] = round(d["words_per_s"] / cli["words_per_s"], 3)
            row["delink_vs_cli_cpu"] = round(
                cli["cpu_ms_per_1000_words"] / d["cpu_ms_per_1000_words"], 3)
        row["memory_loaded"] = memory([srv.pid, *srv.workers()])
    finally:
        t0 = time.perf_counter()
        row["exit_code"] = srv.stop()
        row["stop_s"] = round(time.perf_counter() - t0, 1)
    for key in ("memory_idle", "memory_loaded"):
        ws = row.get(key, [])[1:]
        if len(ws) > 1:
            row[f"{key}_extra_worker_ratio"] = [
                round(w["private_mb"] / ws[0]["rss_mb"], 3) for w in ws[1:]]
    row["uptime_after"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    text = json.dumps(row, indent=1)
    print(text)
    if a.json:
        a.json.write_text(text + "\n")


if __name__ == "__main__":
    main()

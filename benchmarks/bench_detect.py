"""Benchmark of linkage detection (``presidio_delink.linkage.analyze``) on TAB.

The 127 TAB test documents, de-identified with the gold entity masks
(``tab_test("gold")``), are checked against the N-gram index of the TAB collection
(``tab_collection()``, 1,635 documents; built once into ``--work-dir``, reused after).

Per document and per setting ``(k, arity)``, ``k`` in ``--ks`` (default 2,5) and
``arity`` in ``--arities`` (default 1,2,3), it times ``analyze(index, text, k, arity)``
(wall clock, ``perf_counter``; tokenisation included) and records what was found:
linkable or not, minimal arity-1 N-grams, all flagged N-grams, linkable combinations
and the share of the text's words covered by flagged spans.

Baseline (arity 1, each ``k``), interleaved with the index checks document by document
so that both see the same machine load: SQLite FTS5 (stdlib ``sqlite3``).

* Table: ``CREATE VIRTUAL TABLE docs USING fts5(body, tokenize="unicode61
  remove_diacritics 2")``, one row per collection document (the same
  ``tab_collection()`` texts, same order), ``optimize``d once after loading, then copied
  into an in-memory database (no disk I/O while timing; the index is memory-mapped).
* Check of one document: the N-grams come from ``index.tokenizer.ngrams(text)`` (same
  segmentation and normalisation, 1..8 words, grouped by start position).  For each start
  position the N-grams are queried in order of length with
  ``SELECT count(*) FROM docs WHERE docs MATCH '"w1 w2 ..."'`` (a phrase query), and the
  walk stops at the first one with ``df < k`` (longer N-grams from that start are not
  needed), exactly like the index's prefix walk.  Repeated N-grams of the same document
  are queried once (a per-document cache: favours the baseline).  A start whose walk
  ends at ``1 <= df < k`` gives a candidate; the minimal candidates (containing no other
  candidate) are kept with the same sweep as ``analyze``.  Timed: tokenisation, queries,
  minimality.
* Agreement: for every document checked by both, the set of ``(key, start, end)``
  occurrences of minimal linkable N-grams from FTS5 is compared with ``analyze``'s
  arity-1 flagged N-grams; differences are listed with both document frequencies.
  FTS5 phrases cross punctuation (the index's segments do not) and its Unicode folding
  differs slightly (NFKC/casefold vs unicode61), so small disagreements are expected;
  they are reported, never dropped.

Usage::

    python benchmarks/bench_detect.py --json benchmarks/_work/bench_detect.json
    python benchmarks/bench_detect.py --limit 5                # quick
    python benchmarks/bench_detect.py --skip-fts               # index only

Targets (from the issue): arity 1 at most 20 ms per document (mean) and at least 100x
faster than FTS5 (same documents, same k, total time); arity 3 at most 1 s per document
(mean).  The table also shows median, p95 and max per document.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import importlib.metadata
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink import NgramIndex
from presidio_delink.datasets import tab_collection, tab_test
from presidio_delink.linkage import LinkageReport, analyze

HERE = Path(__file__).resolve().parent
DEFAULT_WORK = HERE / "_work"

T_ARITY1_MS = 20.0
T_SPEEDUP = 100.0
T_ARITY3_MS = 1000.0

FTS_SQL = "SELECT count(*) FROM docs WHERE docs MATCH ?"


# --------------------------------------------------------------------------- helpers
def machine_load() -> dict[str, Any]:
    """Load averages and the other busy processes (to judge the figures' noise)."""
    la = os.getloadavg()
    busy: list[str] = []
    try:
        out = subprocess.run(
            ["ps", "-eo", "pid,pcpu,etime,args", "--sort=-pcpu"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.splitlines()[1:]
        for line in out:
            parts = line.split(None, 3)
            if len(parts) < 4 or int(parts[0]) == os.getpid():
                continue
            if float(parts[1]) >= 10.0:
                busy.append(f"{parts[0]} {parts[1]}% {parts[3][:110]}")
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    return {"loadavg": [round(x, 2) for x in la], "cpus": os.cpu_count(), "busy": busy[:6]}


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs, dtype=float), q)) if xs else float("nan")


def summary(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {}
    return {
        "mean": float(statistics.fmean(xs)),
        "median": float(statistics.median(xs)),
        "p95": pct(xs, 95),
        "max": float(max(xs)),
        "total": float(sum(xs)),
    }


def load_index(work: Path) -> tuple[NgramIndex, dict[str, Any]]:
    """Open the TAB index in ``work/tab-index``; build it first if absent."""
    path = work / "tab-index"
    info: dict[str, Any] = {"path": str(path)}
    if (path / "meta.json").is_file():
        idx = NgramIndex.load(path)
        info["built"] = False
    else:
        if path.exists():  # a leftover of an interrupted build
            import shutil

            shutil.rmtree(path)
        t0 = time.perf_counter()
        idx = NgramIndex.build(tab_collection(), path)
        info["built"] = True
        info["build_s"] = time.perf_counter() - t0
    info["n_docs"] = idx.n_docs
    info["n_words"] = idx.meta.get("n_words")
    info["max_n"] = idx.max_n
    return idx, info


def load_fts(work: Path, expect_docs: int) -> tuple[sqlite3.Connection, dict[str, Any]]:
    """The FTS5 table of the TAB collection (built once on disk), copied into memory."""
    path = work / "tab-fts5.sqlite"
    info: dict[str, Any] = {"path": str(path), "sqlite": sqlite3.sqlite_version}
    ok = False
    if path.is_file():
        try:
            with sqlite3.connect(path) as con:
                n = con.execute("SELECT count(*) FROM docs").fetchone()[0]
                ok = n == expect_docs
        except sqlite3.Error:
            ok = False
    if not ok:
        if path.exists():
            path.unlink()
        t0 = time.perf_counter()
        con = sqlite3.connect(path)
        con.execute(
            'CREATE VIRTUAL TABLE docs USING fts5(body, tokenize="unicode61 remove_diacritics 2")'
        )
        con.executemany(
            "INSERT INTO docs(rowid, body) VALUES (?, ?)",
            ((i + 1, text) for i, (_, text) in enumerate(tab_collection())),
        )
        con.execute("INSERT INTO docs(docs) VALUES('optimize')")
        con.commit()
        con.close()
        info["build_s"] = time.perf_counter() - t0
        info["built"] = True
    else:
        info["built"] = False
    info["bytes_on_disk"] = path.stat().st_size
    disk = sqlite3.connect(path)
    mem = sqlite3.connect(":memory:", check_same_thread=False)
    disk.backup(mem)
    disk.close()
    mem.execute("PRAGMA cache_size = -1000000")  # 1 GB of page cache: all of it
    info["n_docs"] = mem.execute("SELECT count(*) FROM docs").fetchone()[0]
    return mem, info


# --------------------------------------------------------------------------- FTS5 check
def fts_check(
    con: sqlite3.Connection, index: NgramIndex, text: str, k: int
) -> tuple[set[tuple[str, int, int]], dict[str, int], dict[str, int]]:
    """Minimal N-grams with ``1 <= df < k`` by FTS5 phrase queries (see module doc).

    Returns the ``(key, start, end)`` occurrences, the df cache (key -> FTS5 df) and
    counters (queries, errors, N-grams walked).
    """
    cur = con.cursor()
    cache: dict[str, int] = {}
    stats = {"queries": 0, "walked": 0, "errors": 0}
    cands: list[tuple[int, int, int, str, int, int]] = []  # (pos, n, df, key, start, end)
    pos = -1
    skip = False
    for key, start, end in index.tokenizer.ngrams(text):
        n = key.count(" ") + 1
        if n == 1:
            pos += 1
            skip = False
        elif skip:
            continue
        stats["walked"] += 1
        df = cache.get(key)
        if df is None:
            stats["queries"] += 1
            try:
                df = cur.execute(FTS_SQL, ('"' + key + '"',)).fetchone()[0]
            except sqlite3.Error:
                stats["errors"] += 1
                df = 0
            cache[key] = df
        if df < k:
            skip = True
            if df >= 1:
                cands.append((pos, n, df, key, start, end))
    out: set[tuple[str, int, int]] = set()
    min_end = 1 << 60
    for p, n, _df, key, start, end in sorted(cands, reverse=True):
        if min_end > p + n:
            out.add((key, start, end))
        min_end = min(min_end, p + n)
    return out, cache, stats


def fts_df(con: sqlite3.Connection, key: str) -> int:
    try:
        return int(con.execute(FTS_SQL, ('"' + key + '"',)).fetchone()[0])
    except sqlite3.Error:
        return -1


def fts_example_doc(con: sqlite3.Connection, key: str, not_in: Iterable[int]) -> str | None:
    """A snippet of a collection document FTS5 matches for ``key`` but the index does not."""
    skip = {d + 1 for d in not_in}  # rowid = ordinal + 1
    try:
        rows = con.execute(
            "SELECT rowid, snippet(docs, 0, '>>', '<<', '...', 12) FROM docs WHERE docs MATCH ?",
            ('"' + key + '"',),
        ).fetchall()
    except sqlite3.Error as exc:
        return f"(FTS5 error: {exc})"
    for rowid, snip in rows:
        if rowid not in skip:
            return f"row {rowid - 1}: {' '.join(snip.split())}"
    return None


# --------------------------------------------------------------------------- index check
def covered_share(tokens: list[tuple[int, int]], rep: LinkageReport, n_chars: int) -> float:
    """Share of the text's words inside some flagged span."""
    if not tokens:
        return 0.0
    diff = np.zeros(n_chars + 1, dtype=np.int32)
    for a, b, _ in rep.spans():
        diff[a] += 1
        diff[b] -= 1
    inside = np.cumsum(diff) > 0
    return float(sum(1 for a, _ in tokens if inside[a]) / len(tokens))


def per_setting_record(rep: LinkageReport, tokens: list[tuple[int, int]], n_chars: int) -> dict:
    a1 = [f for f in rep.flagged if f.arity == 1]
    return {
        "linkable": rep.linkable,
        "n_min_a1": len(a1),  # distinct minimal linkable N-grams (keys)
        "n_min_a1_occ": sum(len(f.spans) for f in a1),
        "n_flagged": len(rep.flagged),
        "n_flagged_a2": sum(1 for f in rep.flagged if f.arity == 2),
        "n_flagged_a3": sum(1 for f in rep.flagged if f.arity == 3),
        "n_combinations": rep.n_combinations,
        "n_combination_docs": len(rep.combination_docs),
        "covered": covered_share(tokens, rep, n_chars),
    }


# --------------------------------------------------------------------------- main
def fmt_ms(x: float | None) -> str:
    if x is None or x != x:
        return "-"
    return f"{x:,.1f}" if x < 10_000 else f"{x:,.0f}"


def verdict(ok: bool | None) -> str:
    return "-" if ok is None else ("PASS" if ok else "FAIL")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--limit", type=int, default=None, help="first N test documents (default all 127)"
    )
    ap.add_argument("--skip-fts", action="store_true", help="skip the SQLite FTS5 baseline")
    ap.add_argument("--ks", default="2,5", help="values of k, comma-separated")
    ap.add_argument("--arities", default="1,2,3", help="arities, comma-separated")
    ap.add_argument("--fts-ks", default=None, help="k values for the FTS5 baseline (default: --ks)")
    ap.add_argument("--masks", default="gold", help="tab_test masks: gold or presidio")
    ap.add_argument("--examples", type=int, default=8, help="disagreements shown with evidence")
    ap.add_argument("--work-dir", type=Path, default=DEFAULT_WORK)
    ap.add_argument("--json", type=Path, help="write all figures here")
    args = ap.parse_args(argv)

    ks = [int(x) for x in args.ks.split(",") if x]
    arities = [int(x) for x in args.arities.split(",") if x]
    fts_ks = [] if args.skip_fts else [int(x) for x in (args.fts_ks or args.ks).split(",") if x]
    settings = [(k, a) for k in ks for a in arities]
    args.work_dir.mkdir(parents=True, exist_ok=True)

    started = _dt.datetime.now().astimezone()
    load_before = machine_load()
    print(
        f"# bench_detect {started.isoformat(timespec='seconds')}  load {load_before['loadavg']}"
        f" on {load_before['cpus']} CPUs",
        flush=True,
    )
    for b in load_before["busy"]:
        print(f"#   busy: {b}", flush=True)

    idx, idx_info = load_index(args.work_dir)
    print(f"# index {idx_info}", flush=True)
    con = None
    fts_info: dict[str, Any] = {}
    if fts_ks:
        con, fts_info = load_fts(args.work_dir, idx.n_docs)
        print(f"# fts5 {fts_info}", flush=True)
        if fts_info["n_docs"] != idx.n_docs:
            print(
                "error: FTS5 table and index disagree on the number of documents", file=sys.stderr
            )
            return 2

    docs = list(tab_test(args.masks))
    if args.limit is not None:
        docs = docs[: args.limit]

    # Warm-up (not timed): touch the index pages every check uses.
    t0 = time.perf_counter()
    for _, _, text in docs:
        analyze(idx, text, k=max(ks), arity=1)
    warm_s = time.perf_counter() - t0

    times: dict[tuple[int, int], list[float]] = {s: [] for s in settings}
    cpu: dict[tuple[int, int], list[float]] = {s: [] for s in settings}
    recs: dict[tuple[int, int], list[dict]] = {s: [] for s in settings}
    fts_times: dict[int, list[float]] = {k: [] for k in fts_ks}
    fts_stats: dict[int, list[dict]] = {k: [] for k in fts_ks}
    walk_steps: list[int] = []
    agree: dict[int, dict[str, Any]] = {
        k: {"docs": 0, "docs_equal": 0, "both": 0, "index_only": [], "fts_only": []} for k in fts_ks
    }
    per_doc: list[dict[str, Any]] = []
    t_run = time.perf_counter()
    for d, (doc_id, _orig, text) in enumerate(docs):
        segs = idx.tokenizer.segments(text)
        tokens = [(t.start, t.end) for s in segs for t in s]
        row: dict[str, Any] = {"doc": doc_id, "words": len(tokens), "ms": {}}
        walk_steps.append(
            sum(
                len(idx.prefix_dfs([t.word for t in s[i : i + idx.max_n]], 2))
                for s in segs
                for i in range(len(s))
            )
        )
        a1_reports: dict[int, LinkageReport] = {}
        for k, a in settings:
            gc.collect()
            c0 = time.process_time()
            t0 = time.perf_counter()
            rep = analyze(idx, text, k=k, arity=a)
            dt = time.perf_counter() - t0
            dc = time.process_time() - c0
            times[(k, a)].append(dt * 1000)
            cpu[(k, a)].append(dc * 1000)
            rec = per_setting_record(rep, tokens, len(text))
            recs[(k, a)].append(rec)
            row["ms"][f"k{k}a{a}"] = round(dt * 1000, 3)
            if a == 1:
                a1_reports[k] = rep
        for k in fts_ks:
            assert con is not None
            gc.collect()
            t0 = time.perf_counter()
            fset, cache, st = fts_check(con, idx, text, k)
            dt = time.perf_counter() - t0
            fts_times[k].append(dt * 1000)
            fts_stats[k].append(st)
            row["ms"][f"fts_k{k}"] = round(dt * 1000, 3)
            rep = a1_reports.get(k) or analyze(idx, text, k=k, arity=1)
            iset = {(f.key, a, b) for f in rep.flagged if f.arity == 1 for a, b in f.spans}
            ag = agree[k]
            ag["docs"] += 1
            ag["docs_equal"] += iset == fset
            ag["both"] += len(iset & fset)
            for key, a, b in sorted(iset - fset):
                ag["index_only"].append(
                    {
                        "doc": doc_id,
                        "key": key,
                        "span": [a, b],
                        "df_index": idx.df_words(key.split(" ")),
                        "df_fts": cache.get(key, fts_df(con, key)),
                    }
                )
            for key, a, b in sorted(fset - iset):
                ag["fts_only"].append(
                    {
                        "doc": doc_id,
                        "key": key,
                        "span": [a, b],
                        "df_index": idx.df_words(key.split(" ")),
                        "df_fts": cache[key],
                    }
                )
        per_doc.append(row)
        if (d + 1) % 10 == 0 or d + 1 == len(docs):
            el = time.perf_counter() - t_run
            print(f"#   {d + 1}/{len(docs)} documents, {el:.0f} s", flush=True)
    run_s = time.perf_counter() - t_run
    load_after = machine_load()

    # ---------------------------------------------------------------- results
    n_words = [r["words"] for r in per_doc]
    res: dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "command": "python "
        + " ".join([os.path.relpath(__file__, Path.cwd()), *(argv or sys.argv[1:])]),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "sqlite": sqlite3.sqlite_version,
            "package": importlib.metadata.version("presidio-delink"),
        },
        "load_before": load_before,
        "load_after": load_after,
        "index": idx_info,
        "fts5": fts_info,
        "n_docs": len(docs),
        "words_per_doc": summary([float(x) for x in n_words]),
        "index_prefix_walk_k2_per_doc": summary([float(x) for x in walk_steps]),
        "warmup_s": warm_s,
        "run_s": run_s,
        "settings": {},
        "fts": {},
        "targets": {},
    }
    for k, a in settings:
        rs = recs[(k, a)]
        res["settings"][f"k={k},arity={a}"] = {
            "k": k,
            "arity": a,
            "ms": summary(times[(k, a)]),
            "cpu_ms": summary(cpu[(k, a)]),
            "docs_linkable": sum(r["linkable"] for r in rs),
            "min_a1_per_doc": summary([float(r["n_min_a1"]) for r in rs]),
            "min_a1_occ_per_doc": summary([float(r["n_min_a1_occ"]) for r in rs]),
            "flagged_per_doc": summary([float(r["n_flagged"]) for r in rs]),
            "flagged_a2_per_doc": summary([float(r["n_flagged_a2"]) for r in rs]),
            "flagged_a3_per_doc": summary([float(r["n_flagged_a3"]) for r in rs]),
            "combinations_per_doc": summary([float(r["n_combinations"]) for r in rs]),
            "covered_share": summary([r["covered"] for r in rs]),
            "covered_share_words": (
                sum(r["covered"] * w for r, w in zip(rs, n_words, strict=True))
                / max(1, sum(n_words))
            ),
        }
    for k in fts_ks:
        fst = fts_stats[k]
        ag = agree[k]
        res["fts"][f"k={k}"] = {
            "ms": summary(fts_times[k]),
            "queries_per_doc": summary([float(s["queries"]) for s in fst]),
            "walked_per_doc": summary([float(s["walked"]) for s in fst]),
            "query_errors": sum(s["errors"] for s in fst),
            "queries_per_s": sum(s["queries"] for s in fst) / max(1e-9, sum(fts_times[k]) / 1000),
            "speedup_total": sum(fts_times[k]) / max(1e-9, sum(times[(k, 1)]))
            if (k, 1) in times
            else None,
            "speedup_median": (
                statistics.median(
                    f / max(1e-9, i) for f, i in zip(fts_times[k], times[(k, 1)], strict=True)
                )
                if (k, 1) in times
                else None
            ),
            "agreement": {
                "docs": ag["docs"],
                "docs_equal": ag["docs_equal"],
                "both": ag["both"],
                "index_only": len(ag["index_only"]),
                "fts_only": len(ag["fts_only"]),
                "index_only_list": ag["index_only"],
                "fts_only_list": ag["fts_only"],
            },
        }

    # Why do they disagree?  Compare the two dfs of each disagreeing occurrence; one with
    # equal dfs overlapping a disagreement of the other side is a knock-on effect (the
    # other side flagged a shorter or longer N-gram there).
    whys: dict[int, dict[tuple[str, str], int]] = {}
    for k in fts_ks:
        ag = res["fts"][f"k={k}"]["agreement"]
        why: dict[tuple[str, str], int] = {}
        sides = (
            ("index-only", ag["index_only_list"], ag["fts_only_list"]),
            ("FTS5-only", ag["fts_only_list"], ag["index_only_list"]),
        )
        for kind, lst, other in sides:
            for e in lst:
                if e["df_fts"] > e["df_index"]:
                    cat = "FTS5 df higher"
                elif e["df_fts"] < e["df_index"]:
                    cat = "FTS5 df lower"
                elif any(
                    o["doc"] == e["doc"]
                    and o["span"][0] < e["span"][1]
                    and e["span"][0] < o["span"][1]
                    for o in other
                ):
                    cat = "same df, knock-on"
                else:
                    cat = "same df, other"
                e["why"] = cat
                why[(kind, cat)] = why.get((kind, cat), 0) + 1
        whys[k] = why
        ag["why"] = {f"{a}: {b}": n for (a, b), n in sorted(why.items())}

    # Targets.
    tg = res["targets"]
    for k in ks:
        if (k, 1) in times:
            m = statistics.fmean(times[(k, 1)])
            tg[f"arity1_ms_k{k}"] = {"value": m, "target": T_ARITY1_MS, "ok": m <= T_ARITY1_MS}
            if k in fts_ks:
                sp = res["fts"][f"k={k}"]["speedup_total"]
                tg[f"speedup_vs_fts5_k{k}"] = {
                    "value": sp,
                    "target": T_SPEEDUP,
                    "ok": sp >= T_SPEEDUP,
                }
        if (k, 3) in times:
            m = statistics.fmean(times[(k, 3)])
            tg[f"arity3_ms_k{k}"] = {"value": m, "target": T_ARITY3_MS, "ok": m <= T_ARITY3_MS}

    # ---------------------------------------------------------------- printing
    w = res["words_per_doc"]
    print()
    print(
        f"Linkage detection, TAB test ({args.masks} masks), {len(docs)} documents "
        f"(words/doc mean {w['mean']:.0f}, median {w['median']:.0f}, max {w['max']:.0f}); "
        f"index {idx.n_docs} docs, {idx_info['n_words']:,} words"
    )
    print(
        f"load avg before {load_before['loadavg']}, after {load_after['loadavg']} "
        f"on {load_before['cpus']} CPUs; run {run_s:.0f} s"
    )
    print()
    hdr = (
        f"{'setting':<16}{'mean ms':>10}{'median':>9}{'p95':>9}{'max':>10}{'cpu ms':>9}"
        f"{'linkable':>10}{'min a1/doc':>12}{'flagged/doc':>13}{'combos/doc':>12}{'words cov.':>11}"
    )
    print(hdr)
    print("-" * len(hdr))
    for k, a in settings:
        s = res["settings"][f"k={k},arity={a}"]
        ms, mn, fl = s["ms"], s["min_a1_per_doc"], s["flagged_per_doc"]
        print(
            f"{f'k={k} arity={a}':<16}{fmt_ms(ms['mean']):>10}{fmt_ms(ms['median']):>9}"
            f"{fmt_ms(ms['p95']):>9}{fmt_ms(ms['max']):>10}{fmt_ms(s['cpu_ms']['mean']):>9}"
            f"{s['docs_linkable']:>6}/{len(docs):<3}"
            f"{mn['mean']:>6.1f}/{mn['median']:<5.0f}{fl['mean']:>7.1f}/{fl['median']:<5.0f}"
            f"{s['combinations_per_doc']['mean']:>12.0f}{100 * s['covered_share_words']:>10.1f}%"
        )
    for k in fts_ks:
        f = res["fts"][f"k={k}"]
        ms = f["ms"]
        print(
            f"{f'FTS5 k={k} a=1':<16}{fmt_ms(ms['mean']):>10}{fmt_ms(ms['median']):>9}"
            f"{fmt_ms(ms['p95']):>9}{fmt_ms(ms['max']):>10}{'':>9}"
            f"  {f['queries_per_doc']['mean']:,.0f} queries/doc, "
            f"{f['queries_per_s']:,.0f} queries/s"
        )
    print(
        "(min a1/doc, flagged/doc: mean/median; "
        "words cov.: share of all words inside a flagged span)"
    )
    print()
    for k in fts_ks:
        f = res["fts"][f"k={k}"]
        ag = f["agreement"]
        print(
            f"FTS5 vs index, k={k}: speed-up {f['speedup_total']:.0f}x (total time), "
            f"{f['speedup_median']:.0f}x (median per document); agreement on minimal "
            f"N-gram occurrences: {ag['docs_equal']}/{ag['docs']} documents identical, "
            f"{ag['both']} shared, {ag['index_only']} index-only, {ag['fts_only']} FTS5-only; "
            f"query errors {f['query_errors']}"
        )
        print(
            "  why (df by FTS5 vs index at the disagreeing occurrence): "
            + "; ".join(f"{kind} {cat}: {n}" for (kind, cat), n in sorted(whys[k].items()))
        )
        for kind, lst in (
            ("index-only", ag["index_only_list"]),
            ("FTS5-only", ag["fts_only_list"]),
        ):
            for e in lst[: max(1, args.examples // 2)]:
                ev = ""
                if e["df_fts"] > e["df_index"] and con is not None:
                    ex = fts_example_doc(con, e["key"], idx.lookup(e["key"].split(" ")).tolist())
                    e["fts_extra_doc"] = ex
                    ev = f"\n      FTS5 also matches {ex}"
                print(
                    f"  {kind} ({e['why']}): {e['doc']} {e['key']!r} @{e['span']} "
                    f"df index {e['df_index']}, FTS5 {e['df_fts']}{ev}"
                )
    print()
    print(f"{'target':<26}{'value':>12}{'target':>12}  verdict")
    for name, t in tg.items():
        unit = "x" if name.startswith("speedup") else " ms"
        op = ">=" if name.startswith("speedup") else "<="
        print(
            f"{name:<26}{t['value']:>10.1f}{unit:<2}{op:>4}{t['target']:>6.0f}{unit:<2}  "
            f"{verdict(t['ok'])}"
        )

    if args.json:
        res["per_doc"] = per_doc
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(res, indent=1), encoding="utf-8")
        print(f"\nwrote {args.json}")
    return 0 if all(t["ok"] for t in tg.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

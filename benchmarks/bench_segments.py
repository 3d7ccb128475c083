"""A growing index on TAB: `index add` in 1, 3 and 10 batches, then `index compact`.

Set-up: the TAB collection grouped by case (1,635 documents, about 1.07 M words, max_n 8,
``benchmarks/bench_living_index.py``'s index), in its own order; the first 90 % of its
documents form the base, the other 10 % are added.  The 127 gold-masked TAB test texts
are checked.

1. ``build``: a fresh build over all documents and one over the base (seconds).
2. For 1, 3 and 10 batches: the base copied, the batches added (``add_documents``, the
   library call under ``index add``; seconds each) [target: adding 1 % takes at most 5 %
   of a full build].
3. ``check`` through the CLI (k = 2 on the 127 texts; k = 5 with arity 2 on the first
   ``--k5-texts``, as it costs some seconds a text) over the grown index, then after
   ``compact``: byte-identical to the fresh build's output [target].
   The seconds of each ``check`` run (a fresh process: start, open, 127 texts) over the
   base plus 10 segments against the compacted index [target: at most 1.3x].
4. Disk of each compacted index against the fresh build [target: at most 1.05x], and
   the seconds of compaction (a build from the words the index stores); whether its files
   are the fresh build's (SHA-256 of each file but ``meta.json``, whose build time
   differs, and ``meta.sig``).
5. ``delink --llm none`` (audit on: the sources are in the collection) of the first
   ``--delink-docs`` gold texts over the fresh build (readings stored), over the grown
   index (the base stores its readings and counts, each added segment its counts, as
   ``index add`` does: the reader combines them, nothing is built in the process),
   and, for the last batch count, after ``compact`` with its readings stored: records
   identical apart from ``seconds`` [target], and the seconds [target: the audit over
   base + segments at most 1.3x the compacted index].  Then start-up: one text with its
   source known against the same text under an unknown id, over the grown index and
   over the compacted one [target: at most 2x].  ``--rounds`` more runs of all three,
   grown and compacted in turn (a copy of the grown index is kept for them), each
   followed by the audit alone of the same texts, and by the ranked and fused readings
   alone (:func:`audits`: fresh processes, the seconds after the index is open) [the
   audit target, without what a grown index costs the rest of ``delink``].

``--no-checks`` skips the ``check`` runs (steps 3 and 4's check timings).

``--speed GROWN COMPACTED`` only times two existing indexes against each other (a base
plus segments, and the same documents in one index: a fresh build, whose files a
``compact`` reproduces), in ``--rounds`` alternating rounds: ``check`` k = 2 on the 127
texts and k = 5 arity 2 on ``--k5-texts`` (outputs compared byte for byte), the audit
and the readings alone (:func:`audits`), and, in the first round, ``delink --llm none``
of the ``--delink-docs`` texts (records compared but for ``seconds`` and ``made_by``).

Every step's wall time and the load before it (``/proc/loadavg``) are recorded: the
machine is shared, so read the ratios of runs made close together.

Usage::

    python benchmarks/bench_segments.py [--work benchmarks/_work/segments] \\
        [--batches 1 3 10] [--k5-texts 20] [--delink-docs 3] [--workers 1] [--json OUT]
        [--no-checks] [--rounds 2]

Indexes and outputs are kept in ``--work``; a rerun reuses what is there.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
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


LAST_CPU = [0.0]  # the CPU seconds (user + system) of the last cli() run


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def cli(cmd: str, idx: Path, inp: Path, out: Path, args: list[str], ok: tuple[int, ...]) -> float:
    """One CLI run in a fresh process: its wall seconds (its CPU seconds in LAST_CPU)."""
    env = dict(os.environ, TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS="")
    cpu = _children_cpu()
    t = time.perf_counter()
    got = subprocess.run([sys.executable, "-m", "presidio_delink", cmd, "--index", str(idx),
                          *args, str(inp), "-o", str(out)], cwd=REPO, env=env,
                         capture_output=True, text=True)
    if got.returncode not in ok:
        raise SystemExit(f"{cmd} failed ({got.returncode}): {got.stderr[-2000:]}")
    LAST_CPU[0] = round(_children_cpu() - cpu, 2)
    return round(time.perf_counter() - t, 2)


def records(path: Path) -> list[Any]:
    """A delink output's records without their ``seconds`` and ``made_by`` (the run's
    fingerprint names the index's files: a grown index's differ)."""

    def strip(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in ("seconds", "made_by")}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    return [strip(json.loads(x)) for x in path.read_text().splitlines()]


def file_hashes(idx: Path) -> dict[str, str]:
    """SHA-256 of each index file but its metadata (the build time differs), its stored
    readings and its lock files."""
    skip = {"meta.json", "meta.sig", "segments.json"}
    return {str(p.relative_to(idx)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(idx.rglob("*"))
            if p.is_file() and p.name not in skip and not p.name.startswith(".")
            and "readings" not in p.parts}


CHECKS = {"k2": ["-k", "2"], "k5a2": ["-k", "5", "--arity", "2"]}
DELINK = ["-k", "2", "--llm", "none", "--fresh"]


def checks(idx: Path, inputs: dict[str, Path], work: Path, tag: str, rec: dict[str, Any]) -> None:
    for name, args in CHECKS.items():
        out = work / f"check-{tag}-{name}.jsonl"
        rec[f"check_{name}_{tag}_load"] = load()
        rec[f"check_{name}_{tag}_cli_s"] = cli("check", idx, inputs[name], out, args, (0, 1))
        if tag != "fresh":
            rec[f"check_{name}_{tag}_identical"] = (
                out.read_bytes() == (work / f"check-fresh-{name}.jsonl").read_bytes())
        print(tag, name, {k: v for k, v in rec.items() if f"_{name}_{tag}" in k}, flush=True)


def delinks(idx: Path, inputs: dict[str, Path], work: Path, tag: str,
            rec: dict[str, Any], startup: bool) -> None:
    """``delink --llm none`` of the first texts (audit on), and one known / unknown pair."""
    runs = [("docs", "delink")] + ([("known", "known"), ("unknown", "unknown")]
                                   if startup else [])
    for name, inp in runs:
        out = work / f"delink-{tag}-{name}.jsonl"
        rec[f"delink_{name}_{tag}_load"] = load()
        rec[f"delink_{name}_{tag}_s"] = cli("delink", idx, inputs[inp], out, DELINK, (0, 3))
        if tag != "fresh" and name == "docs":
            rec[f"delink_{name}_{tag}_identical"] = (
                records(out) == records(work / f"delink-fresh-{name}.jsonl"))
        print(tag, name, {k: v for k, v in rec.items() if f"_{name}_{tag}" in k}, flush=True)
    if startup:
        rec[f"startup_ratio_{tag}"] = round(
            rec[f"delink_known_{tag}_s"] / rec[f"delink_unknown_{tag}_s"], 2)


AUDIT = r"""
import json, sys, time
t0 = time.perf_counter()
from presidio_delink import NgramIndex
from presidio_delink.attacks.audit import Auditor
from presidio_delink.attacks.fused import FusedReading
from presidio_delink.attacks.ranked import AUDIT_MEMBERS, RankedAttack
idx = NgramIndex.load(sys.argv[1])
t1 = time.perf_counter()
c1 = time.process_time()
recs = [json.loads(x) for x in open(sys.argv[2], encoding="utf-8")]
group = dict(zip(idx.doc_ids, idx.doc_groups))
if sys.argv[3] == "audit":
    auditor = Auditor(idx, 2)
    for r in recs:
        auditor.read(r["text"], group[r["id"]])
    ranked = auditor.ranked
else:  # the ranked readings and the fused reading alone
    ranked = RankedAttack(idx, k=2, members=AUDIT_MEMBERS)
    fused = FusedReading.shipped()
    for r in recs:
        fused.rank(ranked.scores(r["text"]), ranked.group_ordinal(group[r["id"]]))
t2 = time.perf_counter()
print(json.dumps({"open_s": round(t1 - t0, 3), "s": round(t2 - t1, 3),
                  "cpu_s": round(time.process_time() - c1, 3),
                  "built": list(ranked._engine.built)}))
"""


def audits(idx: Path, inp: Path, tag: str, rec: dict[str, Any]) -> None:
    """The audit alone of the delink texts with their sources known, each in a fresh
    process, timed from the opened index to the last record: ``audit`` (containment,
    the 20 ranked readings and the fused reading: ``Auditor.read``) and ``readings``
    (the ranked and fused readings alone, opening them included); and the readings
    built in the process (none where they are stored or combined)."""
    env = dict(os.environ, TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS="")
    for mode in ("audit", "readings"):
        rec[f"{mode}_{tag}_load"] = load()
        got = subprocess.run([sys.executable, "-c", AUDIT, str(idx), str(inp), mode],
                             cwd=REPO, env=env, capture_output=True, text=True, check=True)
        out = json.loads(got.stdout.strip().splitlines()[-1])
        rec[f"{mode}_{tag}_s"] = out["s"]
        rec[f"{mode}_{tag}_cpu_s"] = out["cpu_s"]
        rec[f"{mode}_{tag}_open_s"] = out["open_s"]
        rec[f"{mode}_{tag}_built"] = len(out["built"])
        print(tag, mode, out["s"], "s, open", out["open_s"], "s, built", len(out["built"]),
              flush=True)


def speed(grown: Path, compacted: Path, inputs: dict[str, Path], work: Path,
          rec: dict[str, Any], rounds: int) -> None:
    """``--speed``: alternating rounds over ``grown`` and ``compacted`` (see the module
    docstring); the summed seconds of each and their ratio."""
    for r in range(rounds):
        for tag, idx in ((f"grown{r}", grown), (f"compacted{r}", compacted)):
            for name, args in CHECKS.items():
                out = work / f"speed-{tag}-{name}.jsonl"
                rec[f"check_{name}_{tag}_load"] = load()
                rec[f"check_{name}_{tag}_s"] = cli("check", idx, inputs[name], out, args, (0, 1))
                rec[f"check_{name}_{tag}_cpu_s"] = LAST_CPU[0]
                print(tag, name, rec[f"check_{name}_{tag}_s"], "s, cpu", LAST_CPU[0], "s, load",
                      rec[f"check_{name}_{tag}_load"], flush=True)
            audits(idx, inputs["delink"], tag, rec)
            if r == 0:
                out = work / f"speed-{tag}-delink.jsonl"
                rec[f"delink_{tag}_s"] = cli("delink", idx, inputs["delink"], out, DELINK, (0, 3))
        for name in CHECKS:
            rec[f"check_{name}_identical_{r}"] = (
                (work / f"speed-grown{r}-{name}.jsonl").read_bytes()
                == (work / f"speed-compacted{r}-{name}.jsonl").read_bytes())
    rec["delink_identical"] = (records(work / "speed-grown0-delink.jsonl")
                               == records(work / "speed-compacted0-delink.jsonl"))
    for what in [f"check_{n}" for n in CHECKS] + ["audit", "readings"]:
        for unit in ("s", "cpu_s"):
            g = sum(rec[f"{what}_grown{r}_{unit}"] for r in range(rounds))
            c = sum(rec[f"{what}_compacted{r}_{unit}"] for r in range(rounds))
            rec[f"{what}_ratio_{unit}"] = round(g / c, 2)
            print(what, unit, "grown", round(g, 2), "compacted", round(c, 2), ":",
                  rec[f"{what}_ratio_{unit}"], "x", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, default=REPO / "benchmarks" / "_work" / "segments")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 3, 10])
    ap.add_argument("--k5-texts", type=int, default=20)
    ap.add_argument("--delink-docs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--no-checks", action="store_true",
                    help="skip the check runs (steps 3 and the check timings of 4)")
    ap.add_argument("--rounds", type=int, default=2,
                    help="alternating delink timings, grown against compacted (last batch)")
    ap.add_argument("--speed", type=Path, nargs=2, metavar=("GROWN", "COMPACTED"),
                    help="only time check and the audit over two existing indexes")
    a = ap.parse_args()
    os.environ["TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS"] = ""
    import ranked_adversaries as ra

    from presidio_delink.attacks.readings import store_readings, store_segment_counts
    from presidio_delink.datasets import tab_collection, tab_test
    from presidio_delink.index import NgramIndex, add_documents, compact

    work = a.work
    work.mkdir(parents=True, exist_ok=True)
    rec_file = work / "results.json"
    rec: dict[str, Any] = json.loads(rec_file.read_text()) if rec_file.exists() else {}

    def save() -> None:
        rec_file.write_text(json.dumps(rec, indent=1))

    docs = list(tab_collection())
    gold = [{"id": cid, "text": deid} for cid, _o, deid in tab_test()]

    def write(name: str, recs: list[dict[str, str]]) -> Path:
        path = work / name
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))
        return path

    inputs = {"k2": write("tab_gold.jsonl", gold),
              "k5a2": write(f"tab_gold_{a.k5_texts}.jsonl", gold[: a.k5_texts]),
              "delink": write(f"tab_gold_{a.delink_docs}.jsonl", gold[: a.delink_docs]),
              "known": write("tab_gold_1.jsonl", gold[:1]),
              "unknown": write("tab_gold_1_unknown.jsonl",
                               [dict(gold[0], id="new:" + gold[0]["id"])])}
    if a.speed:
        speed(a.speed[0], a.speed[1], inputs, work, rec, a.rounds)
        save()
        print(json.dumps(rec, indent=1))
        return
    cut = len(docs) * 9 // 10
    settings = dict(max_n=8, group_regex=ra.GROUP_RE.pattern)
    rec.update(n_docs=len(docs), n_base=cut, n_added=len(docs) - cut, k5_texts=a.k5_texts,
               delink_docs=a.delink_docs)
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
    if "check_k2_fresh_cli_s" not in rec and not a.no_checks:
        checks(fresh, inputs, work, "fresh", rec)
        save()
    if not (fresh / "readings").exists():
        timed(rec, "store_readings_fresh", store_readings, NgramIndex.load(fresh))
        save()
    if not (base / "readings").exists():  # with its counts: segments are linked to them
        timed(rec, "store_readings_base", store_readings, NgramIndex.load(base))
        save()
    if "delink_docs_fresh_s" not in rec:
        delinks(fresh, inputs, work, "fresh", rec, startup=False)
        save()
    fresh_files = file_hashes(fresh)
    for n in a.batches:
        tag = f"seg{n}"
        idx = work / tag
        if f"bytes_compact_{tag}" in rec:
            continue
        last = n == a.batches[-1]
        shutil.rmtree(idx, ignore_errors=True)
        shutil.copytree(base, idx)
        bounds = [cut + (len(docs) - cut) * i // n for i in range(n + 1)]
        for i in range(n):
            batch = docs[bounds[i]:bounds[i + 1]]
            timed(rec, f"add_{tag}_{i}", add_documents, idx, batch,
                  group_regex=ra.GROUP_RE.pattern, workers=a.workers,
                  after_build=store_segment_counts)
            rec[f"add_{tag}_{i}_docs"] = len(batch)
            rec[f"add_{tag}_{i}_words"] = sum(len(t.split()) for _d, t in batch)
        save()
        if not a.no_checks:
            checks(idx, inputs, work, tag, rec)
        delinks(idx, inputs, work, tag, rec, startup=last)
        save()
        grown = work / f"{tag}-grown"  # kept for the alternating rounds
        if last and a.rounds:
            shutil.rmtree(grown, ignore_errors=True)
            shutil.copytree(idx, grown)
        timed(rec, f"compact_{tag}", compact, idx, workers=a.workers,
              after_build=store_readings if last else None)
        got = NgramIndex.load(idx).directory
        rec[f"bytes_compact_{tag}"] = du(got) - (du(got / "readings")
                                                 if (got / "readings").exists() else 0)
        rec[f"files_compact_{tag}_as_fresh"] = file_hashes(got) == fresh_files
        if not a.no_checks:
            checks(idx, inputs, work, f"{tag}c", rec)
        if last:
            delinks(idx, inputs, work, f"{tag}c", rec, startup=True)
            for r in range(a.rounds):  # grown and compacted in turn: the load changes
                delinks(grown, inputs, work, f"{tag}r{r}", rec, startup=True)
                delinks(idx, inputs, work, f"{tag}cr{r}", rec, startup=True)
                audits(grown, inputs["delink"], f"{tag}r{r}", rec)
                audits(idx, inputs["delink"], f"{tag}cr{r}", rec)
            shutil.rmtree(grown, ignore_errors=True)
        save()
        shutil.rmtree(idx)  # keep the work folder small
    rec["words_total"] = sum(len(t.split()) for _d, t in docs)
    for out in work.glob("delink-*-docs.jsonl"):  # compared again (a rerun reads them)
        tag = out.name[len("delink-"):-len("-docs.jsonl")]
        if tag != "fresh":
            rec[f"delink_docs_{tag}_identical"] = (
                records(out) == records(work / "delink-fresh-docs.jsonl"))
    save()
    if a.json:
        a.json.write_text(json.dumps(rec, indent=1))
    print(json.dumps(rec, indent=1))


if __name__ == "__main__":
    main()

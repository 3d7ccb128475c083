"""Views and groups on TAB: the guarantee against independent adversaries, and its price.

For the 127 gold-masked TAB test documents, k = 2, arity 1, redaction only (``--llm none``):

1. builds the TAB collection's index three ways: the folded view alone (the single text
   model of format 1: the baseline, built in the same run), the default views, and the
   default views with groups (``--group-regex '^(?:[a-z0-9]+:)?(.+)$'``: a case's TAB text,
   its HUDOC text and its 10 % sample entry are one group): build time and size on disk;
2. the arity-1 check time per document on the default views;
3. delinks the 127 documents with each index and runs the adversary panel of
   ``tests/adversaries.py`` (fine surface words, SQLite FTS5 ``unicode61`` with
   ``remove_diacritics`` 0 and 2, confusable folding, case-sensitive) over the outputs:
   minimal linkable phrases left and documents with any, per adversary, counted in
   documents (k counts documents) or in groups;
4. words changed against the minimum stabbing set of the union of views (first pass),
   and that union optimum against the single-view optimum.

Run: ``python benchmarks/bench_views.py [--limit N] [--json PATH] [--cost-only] [--holes]``
(``--cost-only``: steps 1 and 2 only; ``--holes``: step 3 only, default views with and
without groups and the 8 look-alike documents, every panel member).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from adversaries import measured, panel  # noqa: E402

from presidio_delink import NgramIndex  # noqa: E402
from presidio_delink.datasets import tab_collection, tab_test  # noqa: E402
from presidio_delink.linkage import analyze  # noqa: E402
from presidio_delink.pipeline import Delinker  # noqa: E402
from presidio_delink.views import DEFAULT_VIEWS  # noqa: E402

GROUP_RE = re.compile(r"^(?:[a-z0-9]+:)?(.+)$")


def build(docs, views, groups: bool, work: Path, workers: int = 1):  # type: ignore[no-untyped-def]
    out = Path(tempfile.mkdtemp(dir=work)) / "i"
    t0 = time.perf_counter()
    idx = NgramIndex.build(
        docs, out, views=views, group_regex=GROUP_RE.pattern if groups else None,
        workers=workers,
    )
    dt = time.perf_counter() - t0
    return idx, dt, int(idx.stats()["bytes_on_disk"])  # type: ignore[call-overload]


# The index code before views (format 1, one text model): "today's time" of issue 8.
BASELINE_REV = "23b2260^"
BASELINE_SCRIPT = """
import json, os, sys, tempfile, time
from pathlib import Path
from presidio_delink import NgramIndex
from presidio_delink.datasets import tab_collection, tab_test
from presidio_delink.linkage import analyze
docs = list(tab_collection())
test = [deid for _, _, deid in tab_test("gold")][: int(sys.argv[2])]
best = None
for _ in range(2):
    out = Path(tempfile.mkdtemp(dir=sys.argv[1])) / "i"
    t0 = time.perf_counter()
    idx = NgramIndex.build(docs, out)
    dt = time.perf_counter() - t0
    best = dt if best is None else min(best, dt)
size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
check = None
for _ in range(2):  # best of two passes, as for the views
    t0 = time.perf_counter()
    for text in test:
        analyze(idx, text, k=2, arity=1)
    dt = (time.perf_counter() - t0) / len(test)
    check = dt if check is None else min(check, dt)
print(json.dumps({"build_s": best, "bytes": size, "check_ms": 1000 * check}))
"""


def baseline(work: Path, limit: int) -> dict[str, float]:
    """Build and check with the format-1 code (a detached git worktree of BASELINE_REV),
    in a subprocess of this run."""
    work = work.resolve()
    wt = work / "baseline-format1"
    if not wt.exists():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(wt),
                        BASELINE_REV], check=True, capture_output=True)
    data = REPO.parent / "shared" / "data"
    env = {**os.environ, "PYTHONPATH": str(wt), "PRESIDIO_DELINK_DATA": str(data)}
    got = subprocess.run([sys.executable, "-c", BASELINE_SCRIPT, str(work), str(limit)],
                         env=env, check=True, capture_output=True, text=True, cwd=str(wt))
    out: dict[str, float] = json.loads(got.stdout.strip().splitlines()[-1])
    return out


def delink(idx: NgramIndex, texts: list[tuple[str, str]]) -> tuple[list[str], dict[str, float]]:
    d = Delinker(idx, k=2, arity=1)
    outs, words, opt, changed = [], 0, 0, 0
    for doc_id, text in texts:
        res = d.delink(text, doc_id)
        assert not res.failed and res.text is not None
        outs.append(res.text)
        words += res.n_words
        opt += res.optimum_words
        changed += res.words_redacted + res.words_rewritten
    return outs, {"words": words, "optimum": opt, "changed": changed}


def run_panel(outs, collection, groups):  # type: ignore[no-untyped-def]
    rows = {}
    for adv in [*panel(), *measured()]:
        t0 = time.perf_counter()
        found = adv.linkable(outs, collection, 2, groups)
        rows[adv.name] = {
            "phrases": sum(len(f) for f in found),
            "documents": sum(1 for f in found if f),
            "seconds": round(time.perf_counter() - t0, 1),
            "examples": [p for f in found for p, _ in f][:5],
        }
        print(f"    {adv.name:11s} {rows[adv.name]}", flush=True)
    return rows


CYRILLIC = {"a": "\u0430", "o": "\u043e", "e": "\u0435", "c": "\u0441", "p": "\u0440"}


def disguise(text: str) -> str:
    """Every third Latin a, o, e, c, p swapped for its Cyrillic look-alike."""
    out, n = [], 0
    for ch in text:
        if ch in CYRILLIC:
            n += 1
            if n % 3 == 0:
                out.append(CYRILLIC[ch])
                continue
        out.append(ch)
    return "".join(out)


def lookalikes(collection, test, work: Path) -> None:  # type: ignore[no-untyped-def]
    """8 documents with look-alike letters, delinked with the single folded view and with
    the default views; the confusable-folding adversary (and the rest of the panel)."""
    texts = [(d, disguise(t)) for d, t in test[:8]]
    for views in (("folded",), DEFAULT_VIEWS):
        idx, _, _ = build(collection, views, False, work)
        outs, cost = delink(idx, texts)
        print(f"look-alikes, views {views}: {cost}", flush=True)
        run_panel(outs, collection, None)
        shutil.rmtree(idx.directory.parent, ignore_errors=True)


def holes(collection, groups, test, work: Path, report, out):  # type: ignore[no-untyped-def]
    """Step 3 for the default views only (with and without groups), and the look-alike
    documents: what every panel member still finds."""
    for name, grouped in (("default views", False), ("default views + groups", True)):
        idx, t_build, _ = build(collection, DEFAULT_VIEWS, grouped, work)
        print(f"{name}: built in {t_build:.0f} s", flush=True)
        t0 = time.perf_counter()
        outs, cost = delink(idx, test)
        cost["seconds_per_doc"] = round((time.perf_counter() - t0) / len(test), 3)
        print(f"{name}: {cost}", flush=True)
        report[name] = {"cost": cost, "panel": run_panel(outs, collection,
                                                         groups if grouped else None)}
        if not grouped:
            texts = [(d, disguise(t)) for d, t in test[:8]]
            looks, lcost = delink(idx, texts)
            print(f"8 look-alike documents: {lcost}", flush=True)
            report["look-alikes, default views"] = {
                "cost": lcost, "panel": run_panel(looks, collection, None)}
        shutil.rmtree(idx.directory.parent, ignore_errors=True)
    report["load_after"] = os.getloadavg()
    print(json.dumps(report, indent=1))
    if out:
        out.write_text(json.dumps(report, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=127)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--lookalikes", action="store_true", help="only the look-alike run")
    ap.add_argument("--holes", action="store_true",
                    help="only the panel on the default views (with and without groups) and "
                    "on the 8 look-alike documents")
    ap.add_argument("--cost-only", action="store_true",
                    help="build and check times and sizes only (no delinking, no panel)")
    args = ap.parse_args()
    work = REPO / "benchmarks" / "_work"
    work.mkdir(parents=True, exist_ok=True)
    collection = list(tab_collection())
    raw = sum(len(t.encode("utf-8")) for _, t in collection)
    groups = [GROUP_RE.match(d).group(1) for d, _ in collection]  # type: ignore[union-attr]
    test = [(d, deid) for d, _, deid in tab_test("gold")][: args.limit]
    print(f"load: {os.getloadavg()}; {len(collection)} docs, {raw / 2**20:.2f} MiB; "
          f"{len(test)} test docs", flush=True)
    report: dict[str, object] = {"load_before": os.getloadavg()}
    if args.lookalikes:
        lookalikes(collection, test, work)
        return
    if args.holes:
        holes(collection, groups, test, work, report, args.json)
        return

    f1 = baseline(work, args.limit)
    print("format 1 (before views):", f1, flush=True)
    base, t_base, b_base = build(collection, ("folded",), False, work)
    full, t_full, b_full = build(collection, DEFAULT_VIEWS, False, work)
    t_full = min(t_full, build(collection, DEFAULT_VIEWS, False, work)[1])
    full2, t_w2, _ = build(collection, DEFAULT_VIEWS, False, work, workers=2)
    shutil.rmtree(full2.directory.parent, ignore_errors=True)
    grp, t_grp, b_grp = build(collection, DEFAULT_VIEWS, True, work)
    report["build"] = {
        "format1_s": round(f1["build_s"], 1),
        "single_view_s": round(t_base, 1),
        "default_views_s": round(t_full, 1),
        "default_views_workers2_s": round(t_w2, 1),
        "ratio_to_format1": round(t_full / f1["build_s"], 2),
        "ratio_workers2_to_format1": round(t_w2 / f1["build_s"], 2),
        "ratio_to_single_view": round(t_full / t_base, 2),
        "with_groups_s": round(t_grp, 1),
        "format1_disk_x": round(f1["bytes"] / raw, 2),
        "single_view_disk_x": round(b_base / raw, 2),
        "default_views_disk_x": round(b_full / raw, 2),
        "with_groups_disk_x": round(b_grp / raw, 2),
    }
    print("build", report["build"], flush=True)

    def check_ms(idx: NgramIndex) -> float:
        best = None
        for _ in range(2):  # best of two passes (the first also maps the index in)
            t0 = time.perf_counter()
            for _, text in test:
                analyze(idx, text, k=2, arity=1)
            dt = (time.perf_counter() - t0) / len(test)
            best = dt if best is None else min(best, dt)
        assert best is not None
        return round(1000 * best, 1)

    report["check_ms"] = {
        "default_views_mean": check_ms(full),
        "single_view_mean": check_ms(base),
        "format1_mean": round(f1["check_ms"], 1),
        "default_views_with_groups_mean": check_ms(grp),
    }
    print("check", report["check_ms"], flush=True)
    if args.cost_only:
        finish(report, (base, full, grp), args.json)
        return

    for name, idx, grp_list in (
        ("single view (format 1 model)", base, None),
        ("default views", full, None),
        ("default views + groups", grp, groups),
    ):
        t0 = time.perf_counter()
        outs, cost = delink(idx, test)
        cost["seconds_per_doc"] = round((time.perf_counter() - t0) / len(test), 3)
        print(f"{name}: {cost}", flush=True)
        rows = run_panel(outs, collection, grp_list)
        report[name] = {"cost": cost, "panel": rows}
        if name == "default views":  # the same outputs, counted in groups
            print("  same outputs, adversaries counting groups:", flush=True)
            report[name + ", counted in groups"] = run_panel(outs, collection, groups)
    finish(report, (base, full, grp), args.json)


def finish(report: dict[str, object], indexes: tuple[NgramIndex, ...], out: Path | None) -> None:
    """Remove the indexes; print the report (and write it to ``out``)."""
    report["load_after"] = os.getloadavg()
    for idx in indexes:
        shutil.rmtree(idx.directory.parent, ignore_errors=True)
    print(json.dumps(report, indent=1))
    if out:
        out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()

"""Start-up of `delink` with the ranked readings stored in the index, against building them.

Set-up: the TAB collection grouped by case (1,635 documents, about 1.07 M words; built as
``benchmarks/bench_delink_scale.py`` builds it) and its 127 gold-masked test documents,
k = 2, ``--llm none``, each run through the CLI (``python -m presidio_delink delink``) in
a fresh process, as a user would.

1. ``store``: the seconds of storing the readings (``index readings``: what ``index
   build`` now adds to a build) and their size on disk beside the index's.
2. ``startup``: one document whose source is in the collection (its id is) and the same
   text under an id that is not (no audit), with the readings stored [target: known at
   most 2x unknown]; and the known one against a copy of the index without the readings
   (the current code building them in the process, as every run did before).
3. ``identical``: the first ``--docs`` documents with ``--llm none`` and the first
   ``--protect-docs`` with ``--protect all``: the records with stored readings against
   those built in the process, or with ``--before TREE`` against another tree's package
   (e.g. ``git archive`` of the commit before the readings were stored): equal apart
   from the run's own seconds.

Every run's wall time and the machine's load (``/proc/loadavg``) before it are recorded:
the machine is shared, so read the ratios of runs made close together.

Usage::

    python benchmarks/bench_living_index.py [--work benchmarks/_work/living] \\
        [--docs 5] [--protect-docs 3] [--before TREE] [--json OUT]

Outputs and their timings are kept in ``--work`` (a rerun reuses them; delete to redo).
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


def load() -> list[str]:
    return Path("/proc/loadavg").read_text().split()[:3]


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def setup(work: Path) -> tuple[Path, Path]:
    """The TAB index without readings, and the gold-masked inputs."""
    import ranked_adversaries as ra

    from presidio_delink.datasets import tab_collection, tab_test
    from presidio_delink.index import NgramIndex

    idx = work / "tab_index_plain"
    if not (idx / "meta.json").exists():
        NgramIndex.build(list(tab_collection()), idx, max_n=8, group_regex=ra.GROUP_RE.pattern)
    inp = work / "tab_gold.jsonl"
    if not inp.exists():
        inp.write_text("".join(json.dumps({"id": cid, "text": deid}) + "\n"
                               for cid, _orig, deid in tab_test()))
    return idx, inp


def stored_copy(plain: Path, work: Path) -> tuple[Path, dict[str, Any]]:
    """A copy of the index with its readings stored (timed once, kept)."""
    out = work / "tab_index"
    rec_file = work / "store.json"
    if rec_file.exists() and (out / "readings" / "readings.json").exists():
        return out, json.loads(rec_file.read_text())
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(plain, out)
    rec: dict[str, Any] = {"load_before": load()}
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "presidio_delink", "index", "readings", str(out)],
                   check=True, cwd=REPO)
    rec["seconds"] = round(time.perf_counter() - t, 1)
    rec["readings_bytes"] = du(out / "readings")
    rec["index_bytes"] = du(out) - rec["readings_bytes"]
    rec_file.write_text(json.dumps(rec))
    return out, rec


def run(work: Path, name: str, idx: Path, inp: Path, extra: list[str],
        tree: Path | None = None) -> dict[str, Any]:
    """One CLI delink run, cached by name: wall seconds, exit code, load before."""
    out = work / f"{name}.jsonl"
    meta = work / f"{name}.run.json"
    if out.exists() and meta.exists():
        return json.loads(meta.read_text())
    env = dict(os.environ, TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS="")
    cwd = REPO
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
        cwd = tree
    rec: dict[str, Any] = {"load_before": load()}
    t = time.perf_counter()
    got = subprocess.run(
        [sys.executable, "-m", "presidio_delink", "delink", "--index", str(idx), "-k", "2",
         "--llm", "none", *extra, str(inp), "-o", str(out), "--fresh"],
        cwd=cwd, env=env, capture_output=True, text=True)
    rec["seconds"] = round(time.perf_counter() - t, 2)
    rec["rc"] = got.returncode
    rec["warned"] = "no stored readings" in got.stderr
    if got.returncode not in (0, 3):
        raise SystemExit(f"{name}: delink failed ({got.returncode}): {got.stderr[-2000:]}")
    meta.write_text(json.dumps(rec))
    return rec


def records(path: Path) -> list[Any]:
    def strip(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k != "seconds"}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    with open(path, encoding="utf-8") as f:
        return [strip(json.loads(line)) for line in f]


def first(inp: Path, n: int, dest: Path, rename: bool = False) -> Path:
    if not dest.exists():
        lines = inp.read_text().splitlines()[:n]
        if rename:
            recs = [json.loads(x) for x in lines]
            lines = [json.dumps({**r, "id": "new:" + r["id"]}) for r in recs]
        dest.write_text("".join(x + "\n" for x in lines))
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--work", type=Path, default=REPO / "benchmarks" / "_work" / "living")
    ap.add_argument("--docs", type=int, default=5)
    ap.add_argument("--protect-docs", type=int, default=3)
    ap.add_argument("--before", type=Path, default=None,
                    help="a tree whose package gives the reference outputs")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    work = a.work.resolve()
    if a.before is not None:
        a.before = a.before.resolve()
    work.mkdir(parents=True, exist_ok=True)
    plain, inp = setup(work)
    idx, store = stored_copy(plain, work)
    one = first(inp, 1, work / "one_known.jsonl")
    unknown = first(inp, 1, work / "one_unknown.jsonl", rename=True)
    out: dict[str, Any] = {"store": store, "startup": {}, "identical": {}}
    st = out["startup"]
    st["known"] = run(work, "known", idx, one, [])
    st["unknown"] = run(work, "unknown", idx, unknown, [])
    st["known_built_here"] = run(work, "known_built_here", plain, one, [])
    st["ratio_known_unknown"] = round(st["known"]["seconds"] / st["unknown"]["seconds"], 2)
    ref_name = "before" if a.before else "built_here"
    for name, n, extra in (("none", a.docs, []),
                           ("protect_all", a.protect_docs, ["--protect", "all"])):
        docs = first(inp, n, work / f"first{n}.jsonl")
        mine = run(work, f"{name}_stored", idx, docs, extra)
        ref = run(work, f"{name}_{ref_name}", idx if a.before else plain, docs, extra,
                  tree=a.before)
        same = records(work / f"{name}_stored.jsonl") == records(work / f"{name}_{ref_name}.jsonl")
        out["identical"][name] = {"docs": n, "reference": ref_name, "identical": same,
                                  "stored": mine, "reference_run": ref}
    out["load_after"] = load()
    text = json.dumps(out, indent=1)
    print(text)
    if a.json:
        a.json.write_text(text + "\n")


if __name__ == "__main__":
    main()

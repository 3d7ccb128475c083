"""A learned ranker against `delink --protect`: the independent readers combined.

Each reader of the benchmark's independent panel (``tests/ranked_adversaries.py`` and the
sparse readers of ``tests/semantic_adversaries.py``: BM25 engines and tokenisers, a query
parser, repeated query terms, character 4-grams, TF-IDF cosine, LSA, word pairs and
triples; nothing shared with the defence) ranks the source's case for itself.  An
attacker who runs the open-source tool on texts of their own can learn how the readers'
rankings combine: this script is that attacker.

Set-up (as ``bench_ranked.py``): the TAB collection (1,635 documents) grouped by case,
k = 2, ``--llm none``, one protection setting (``--setting``, default ``all``).  Training:
the 113 gold-masked held-in TAB train/dev texts, protected by the tool with the same
setting (the held-in texts the protection's defaults were chosen on; never the test
documents).  Test: the 127 gold-masked TAB test documents, protected likewise.

Features of a (query, case) pair, for each reader: its score as a share of its best
score, the log of the case's rank, and whether it ranks the case first and in its top 5;
and how many readers put the case in their top 5.  Candidates: the union of each
reader's first :data:`CANDIDATES` cases (a source outside it counts as not found).
Models, fixed beforehand and fitted once on the held-in texts: a logistic regression and
gradient-boosted trees (scikit-learn), each ranking a query's candidates by the
probability it gives them.  Also reported, to choose a setting on held-in data: each
model fitted on one half of the held-in texts and read on the other (out of fold).  The
figures: for how many test documents the source's case is first and in the top 5, next
to each reader alone (whole text).

The trees are fitted once per random seed (``--seeds``, default 10: scikit-learn holds
out a random tenth of the rows to stop early). One fit is a draw: on the same outputs
(`--protect all` at 54ce3b1, 2026-12-05), seeds 0-9 found the source first for 4 to 13
of the 127 test documents; the figure that counts is the mean over the seeds, with the
range beside it (``trees``; seed 0 alone is ``trees_seed0``).

Usage::

    python benchmarks/bench_learned_ranker.py [--setting all] [--panel NAME]
        [--work DIR] [--seeds N] [--windows 3,8,16] [--json OUT]

``--windows``: the held-out window-pair readers (``tests/semantic_adversaries.py``,
``window_panel``) join the fifteen as features, at each window and both parameterisations
(each alone found up to 8 first against a protection that reads window 3).

``--panel``: the protection's panel, one of ``benchmarks/ranked/calibrate_crowd.py``'s
``PANELS`` (a panel to compare; the attacker is the same).  The protected outputs are
cached in ``--work`` (``held-SETTING[+PANEL].json``, ``test-SETTING[+PANEL].json``);
reruns only re-attack.  About 12 CPU minutes for the outputs
(``--setting all``), 2 for the readers and the features, 2 for ten seeds of trees.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests"), str(REPO / "benchmarks"), str(REPO / "benchmarks" / "ranked")]

import bench_ranked as br  # noqa: E402
import calibrate  # noqa: E402
import ranked_adversaries as ra  # noqa: E402
import semantic_adversaries as sa  # noqa: E402

from presidio_delink.datasets import tab_collection, tab_test  # noqa: E402
from presidio_delink.index import NgramIndex  # noqa: E402
from presidio_delink.io import atomic_output  # noqa: E402

#: Each reader's first cases that become candidates.
CANDIDATES = 30
#: A case a reader does not rank at all takes this rank.
UNRANKED = 1000

Row = tuple[str, str, list[str], np.ndarray]  # (document id, source case, candidates, X)


def features(readers: Sequence[object], text: str) -> tuple[list[str], np.ndarray]:
    """The candidate cases of ``text`` and their feature rows (module docstring)."""
    per = [r.scores(text) for r in readers]  # type: ignore[attr-defined]
    cands: set[str] = set()
    for s in per:
        cands.update(sorted(s, key=lambda g: -s[g])[:CANDIDATES])
    ordered = sorted(cands)
    rows = []
    for g in ordered:
        row: list[float] = []
        top5 = 0
        for s in per:
            best = max(s.values()) if s else 0.0
            rank = ra.rank_in(s, g) or UNRANKED
            top5 += rank <= 5
            row += [s.get(g, 0.0) / best if best > 0 else 0.0, float(np.log(rank)),
                    float(rank == 1), float(rank <= 5)]
        rows.append(row + [float(top5)])
    return ordered, np.asarray(rows, dtype=float).reshape(len(ordered), 4 * len(per) + 1)


def ranks(model: object, rows: Sequence[Row]) -> list[int | None]:
    """The source's rank among each query's candidates by ``model``'s probability (ties
    count as found); None where the source is not a candidate."""
    out: list[int | None] = []
    for _id, src, cands, x in rows:
        if src not in cands:
            out.append(None)
            continue
        p = model.predict_proba(x)[:, 1]  # type: ignore[attr-defined]
        out.append(1 + int((p > p[cands.index(src)]).sum()))
    return out


def over_fits(per_fit: Sequence[dict[str, dict[str, int]]]) -> dict[str, dict[str, object]]:
    """The fits' counts per part: the mean (one decimal) and, over several fits, the range
    and every fit's count."""
    out: dict[str, dict[str, object]] = {}
    for part in per_fit[0]:
        c: dict[str, object] = {}
        for key in ("first", "top5"):
            vals = [f[part][key] for f in per_fit]
            c[key] = round(float(np.mean(vals)), 1) if len(vals) > 1 else vals[0]
            if len(vals) > 1:
                c[f"{key}_range"] = [min(vals), max(vals)]
                c[f"{key}_fits"] = vals
        out[part] = c
    return out


def counts(rs: Sequence[int | None]) -> dict[str, int]:
    return {"first": sum(r == 1 for r in rs), "top5": sum(r is not None and r <= 5 for r in rs)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--setting", default="all", help="a setting of bench_ranked.py")
    ap.add_argument("--panel", default="",
                    help="the protection's panel: a name of benchmarks/ranked/"
                         "calibrate_crowd.py's PANELS (default: the shipped one)")
    ap.add_argument("--work", type=Path, default=None, help="cache of the protected outputs")
    ap.add_argument("--seeds", type=int, default=10,
                    help="fits of the trees, one per random seed (the module docstring)")
    ap.add_argument("--windows", default="",
                    help="also the held-out window-pair readers at these windows (comma-"
                         "separated; semantic_adversaries.window_panel, both parameterisations)")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    if a.seeds < 1:
        ap.error("--seeds must be >= 1")
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression

    print("load:", br.uptime(), "commit:", br.commit(), flush=True)
    work = a.work or Path(tempfile.mkdtemp(prefix="bench-learned-"))
    work.mkdir(parents=True, exist_ok=True)
    coll = list(tab_collection())
    groups = [ra.case_of(d) for d, _ in coll]
    idx = NgramIndex.build(coll, None, max_n=8, group_regex=ra.GROUP_RE.pattern)
    ids = set(idx.doc_ids)
    held = [(f"tab:{k}", None, v) for k, v in calibrate.tab_held_in().items()
            if f"tab:{k}" in ids]
    t0 = time.process_time()
    outs = {}
    members = None
    if a.panel:
        from calibrate_crowd import PANELS

        members = PANELS[a.panel]
    tag = a.setting + (f"+{a.panel}" if a.panel else "")
    for name, docs in (("held", held), ("test", list(tab_test()))):
        cache = work / f"{name}-{tag}.json"
        if cache.is_file():
            outs[name] = json.loads(cache.read_text())
            continue
        outs[name] = br.run_setting(idx, docs, a.setting, "none",
                                    work / f"{name}-{tag}.partial.jsonl", members=members)
        with atomic_output(cache) as f:
            f.write(json.dumps(outs[name]))
    print(f"outputs: {len(outs['held'])} held-in, {len(outs['test'])} test, "
          f"{time.process_time() - t0:.0f} CPU s", flush=True)
    t0 = time.process_time()
    readers = ra.ranked_panel(coll, groups) + sa.semantic_panel(coll, groups, dense=False)
    if a.windows:
        readers += sa.window_panel(coll, groups, [int(w) for w in a.windows.split(",")])
    names = [r.name for r in readers]  # type: ignore[attr-defined]
    table: dict[str, list[Row]] = {}
    for name, docs in outs.items():
        table[name] = []
        for o in docs:
            cands, x = features(readers, o["text"])
            table[name].append((o["id"], ra.case_of(o["id"]), cands, x))
    print(f"readers and features: {time.process_time() - t0:.0f} CPU s", flush=True)
    train = [r for r in table["held"] if r[2]]
    x = np.vstack([r[3] for r in train])
    y = np.concatenate([[g == r[1] for g in r[2]] for r in train])
    models: dict[str, list[object]] = {
        "logistic": [LogisticRegression(max_iter=2000, class_weight="balanced")],
        "trees": [
            HistGradientBoostingClassifier(
                max_iter=200, learning_rate=0.05, max_leaf_nodes=15, class_weight="balanced",
                random_state=seed)
            for seed in range(a.seeds)
        ],
    }
    result: dict[str, object] = {
        "setting": a.setting, "panel": a.panel or "shipped", "commit": br.commit(),
        "readers": names,
        "training_rows": int(len(y)), "training_sources_among_candidates": int(y.sum()),
        "test_sources_among_candidates": sum(r[1] in r[2] for r in table["test"]),
    }
    print(f"training: {len(train)} held-in texts, {len(y)} candidate rows, the source "
          f"among them for {int(y.sum())}", flush=True)
    for name, fits in models.items():
        per_fit = []
        for model in fits:
            # held-in, out of fold: fitted on one half, read on the other (a setting is
            # chosen by these, never by the test documents')
            oof: list[int | None] = []
            for fold in (0, 1):
                fit = [r for i, r in enumerate(train) if i % 2 != fold]
                model.fit(np.vstack([r[3] for r in fit]),  # type: ignore[attr-defined]
                          np.concatenate([[g == r[1] for g in r[2]] for r in fit]))
                oof += ranks(model, [r for i, r in enumerate(train) if i % 2 == fold])
            model.fit(x, y)  # type: ignore[attr-defined]
            per_fit.append({"test": counts(ranks(model, table["test"])),
                            "held_in_fit": counts(ranks(model, train)),
                            "held_in_out_of_fold": counts(oof)})
        result[name] = over_fits(per_fit)
        if len(per_fit) > 1:
            result[f"{name}_seed0"] = per_fit[0]
        for part, n in (("held_in_out_of_fold", len(train)), ("test", len(table["test"]))):
            c = result[name][part]  # type: ignore[index]
            spread = (f" (fits {c['first_range'][0]}-{c['first_range'][1]} / "
                      f"{c['top5_range'][0]}-{c['top5_range'][1]})" if len(per_fit) > 1 else "")
            print(f"{name}: {part.replace('_', ' ')} first {c['first']}, top 5 {c['top5']} of "
                  f"{n}{spread}", flush=True)
    alone = {}
    for j, n in enumerate(names):
        rs: list[int | None] = []
        for _id, src, cands, xs in table["test"]:
            rs.append(round(float(np.exp(xs[cands.index(src), 4 * j + 1])))
                      if src in cands else None)
        alone[n] = counts([r if r is not None and r < UNRANKED else None for r in rs])
    result["readers_alone"] = alone
    print("each reader alone (first / top 5):",
          ", ".join(f"{n} {c['first']}/{c['top5']}" for n, c in alone.items()))
    words = sum(o["n_words"] for o in outs["test"]) or 1
    changed = sum(o["redacted"] + o["rewritten"] for o in outs["test"])
    result["test_words_changed_pct"] = round(100 * changed / words, 1)
    result["load"] = br.uptime()
    print(f"test words changed: {result['test_words_changed_pct']} % | load {result['load']}")
    if a.json:
        with atomic_output(a.json) as f:
            f.write(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()

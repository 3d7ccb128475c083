"""Fit the audit's fused reading (``presidio_delink/attacks/fused.py``) on held-in texts.

Data: the 113 gold-masked held-in TAB train/dev texts (``calibrate.tab_held_in``; never
the test documents), delinked by the tool with ``--llm none`` at k = 2 against the TAB
collection grouped by case, once for each setting of ``--settings`` (``bench_ranked.py``'s
settings: phrases only, ``--protect containment``, ``ranked``, ``all``), as
``bench_learned_ranker.py`` protects them (cached in ``--work DIR/held-SETTING.json``,
written when absent).  The audit reads every setting's outputs, so the model is fitted on
all of them together: fitted on ``all`` alone it learned the protection's mark (the source
just behind the groups a reading puts first) and ranked the source of an unprotected
output, first under every reading, last (out of fold: 0 of 113 found).

Models over :func:`presidio_delink.attacks.fused.features` of every candidate group, the
source's group the positive class (``--model``): a logistic regression (scikit-learn, C =
1, classes balanced) or boosted trees (``HistGradientBoostingClassifier``, 200 rounds,
learning rate 0.05, 15 leaves, classes unweighted; exported for
:class:`presidio_delink.attacks.fused.Trees`).  Chosen on held-in texts only, by the
sources found out of fold (three random halvings): C in {0.01, 0.1, 1, 10}, balanced or
not (on ``all``), then the settings trained on (``all`` alone, or the four) and weights
free or bound to one sign per feature (a higher rank never lowering the fused score: that
model found no more than the readings alone, 0 first and 1-3 in the top 5 after
``all``).  On the guarded outputs, trees (200 rounds, rate 0.05, 15 leaves; or 100, 0.1,
7; classes balanced or not) against the logistic regression: the trees above found the
most out of fold (``ranked`` 5.7 first / 8.7 top 5, ``all`` 3.7 / 6.7, against 1.7 / 6.3
and 3.3 / 5.3), and read the audit.  The guard's model was the logistic regression at
first; trees as the guard's model (fitted on the unguarded outputs) left less for trees
fitted again on the guarded outputs (out of fold, ``all``: 3.0 / 5.3 against 5.0 / 9.7, at
71.5 % of words against 71.2 %), and are the guard's model now.  The script prints the
out-of-fold reading of each setting, writes the weights (``--out``, default the package's
``attacks/ranked_fusion.json``) and, with ``--test``, reads the TAB test documents'
outputs too: a report, never a fit.

Two models are fitted this way, both trees.  The protection's guard (``--unguarded --out
presidio_delink/attacks/ranked_fusion_guard.json``) reads outputs of the protection
without the guard; the audit's (the default) reads outputs of the shipped, guarded
protection, so that the audit is not the reading the protection aimed at.

Usage::

    python benchmarks/ranked/fit_fusion.py [--settings arity1,containment,ranked,all]
        [--model trees|logistic] [--work DIR] [--out FILE] [--unguarded] [--test]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO / "tests"), str(REPO / "benchmarks"), str(HERE)]

import bench_ranked as br  # noqa: E402
import calibrate  # noqa: E402
import ranked_adversaries as ra  # noqa: E402

from presidio_delink.attacks.fused import (  # noqa: E402
    CANDIDATES,
    TOP,
    UNRANKED,
    FusedReading,
    Trees,
    features,
    member_rows,
)
from presidio_delink.attacks.ranked import FUSED_MEMBERS, RankedAttack  # noqa: E402
from presidio_delink.datasets import tab_collection, tab_test  # noqa: E402
from presidio_delink.index import NgramIndex  # noqa: E402
from presidio_delink.io import atomic_output  # noqa: E402

Row = tuple[int, np.ndarray, np.ndarray]  # (source ordinal, candidates, X)
C = 1.0


def table(att: RankedAttack, group_of: dict[str, str], outputs: list[dict]) -> list[Row]:
    """Feature rows of each output whose source the index groups."""
    rows = []
    for o in outputs:
        g = group_of.get(o["id"])
        if g is None or not att.has_group(g):
            continue
        cands, x = features(member_rows(att.scores(o["text"], sentences=False), FUSED_MEMBERS))
        rows.append((att.group_ordinal(g), cands, x))
    return rows


#: The trees' parameters (module docstring).
TREES = {"max_iter": 200, "learning_rate": 0.05, "max_leaf_nodes": 15}


def fit(rows: list[Row], model: str = "logistic") -> dict[str, Any]:
    """The fitted model as :meth:`FusedReading.from_dict` reads it (less the members)."""
    x = np.vstack([r[2] for r in rows if len(r[1])])
    y = np.concatenate([r[1] == r[0] for r in rows if len(r[1])]).astype(int)
    if model == "logistic":
        from sklearn.linear_model import LogisticRegression

        m = LogisticRegression(C=C, max_iter=5000, class_weight="balanced").fit(x, y)
        return {"model": "logistic", "coef": [round(float(c), 6) for c in m.coef_[0]],
                "intercept": round(float(m.intercept_[0]), 6)}
    from sklearn.ensemble import HistGradientBoostingClassifier

    t = HistGradientBoostingClassifier(**TREES, random_state=0).fit(x, y)  # type: ignore[arg-type]
    trees = Trees.export(t)
    return {"model": "trees", "trees": trees, "trees_params": TREES,
            "intercept": float(np.ravel(t._baseline_prediction)[0])}


def reading(fitted: dict[str, Any]) -> FusedReading:
    return FusedReading.from_dict({"members": list(FUSED_MEMBERS), **fitted})


def counts(model: FusedReading, rows: list[Row]) -> dict[str, int]:
    """Sources first and in the top 5 under the fused reading."""
    first = top = 0
    for src, cands, x in rows:
        hit = np.flatnonzero(cands == src)
        if not len(hit):
            continue
        z = model.logits(x)
        rank = 1 + int(np.count_nonzero(z > z[hit[0]]))
        first += rank == 1
        top += rank <= TOP
    return {"first": first, "top5": top, "texts": len(rows)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--settings", default="arity1,containment,ranked,all",
                    help="settings of bench_ranked.py, comma-separated")
    ap.add_argument("--work", type=Path, default=REPO / "benchmarks" / "_work" / "fusion")
    ap.add_argument("--out", type=Path,
                    default=REPO / "presidio_delink" / "attacks" / "ranked_fusion.json")
    ap.add_argument("--test", action="store_true", help="also read the TAB test outputs")
    ap.add_argument("--model", choices=("trees", "logistic"), default="trees")
    ap.add_argument("--unguarded", action="store_true",
                    help="outputs of the protection without its guard (the guard's model)")
    a = ap.parse_args()
    print("load:", br.uptime(), "commit:", br.commit(), flush=True)
    a.work.mkdir(parents=True, exist_ok=True)
    coll = list(tab_collection())
    idx = NgramIndex.build(coll, None, max_n=8, group_regex=ra.GROUP_RE.pattern)
    group_of = dict(zip(idx.doc_ids, idx.doc_groups, strict=True))
    settings = [x.strip() for x in a.settings.split(",") if x.strip()]
    held_docs = [(f"tab:{k}", None, v) for k, v in calibrate.tab_held_in().items()
                 if f"tab:{k}" in group_of]
    sets = {("held", s): held_docs for s in settings}
    if a.test:
        test_docs = list(tab_test())
        sets.update({("test", s): test_docs for s in settings})
    att = RankedAttack(idx, k=2, members=FUSED_MEMBERS)
    rows: dict[tuple[str, str], list[Row]] = {}
    for (name, setting), docs in sets.items():
        stem = f"{name}-{setting}" + ("-unguarded" if a.unguarded else "")
        cache = a.work / f"{stem}.json"
        if cache.is_file():
            outs = json.loads(cache.read_text())
        else:
            outs = br.run_setting(idx, docs, setting, "none", a.work / f"{stem}.partial.jsonl",
                                  guard=not a.unguarded)
            with atomic_output(cache) as f:
                f.write(json.dumps(outs))
        t0 = time.process_time()
        rows[name, setting] = table(att, group_of, outs)
        print(f"{name} {setting}: {len(rows[name, setting])} outputs, features "
              f"{time.process_time() - t0:.1f} CPU s", flush=True)
    n = len(held_docs)
    oof = {s: {"first": 0.0, "top5": 0.0} for s in settings}
    for seed in range(3):
        perm = np.random.default_rng(seed).permutation(n)
        halves = [set(perm[::2].tolist()), set(perm[1::2].tolist())]
        for i in (0, 1):
            half = reading(fit([r for s in settings for j, r in enumerate(rows["held", s])
                                if j in halves[i]], a.model))
            for s in settings:
                got = counts(half, [r for j, r in enumerate(rows["held", s])
                                    if j in halves[1 - i]])
                for key in ("first", "top5"):
                    oof[s][key] += got[key] / 3
    oof = {s: {k: round(v, 1) for k, v in c.items()} for s, c in oof.items()}
    fitted = fit([r for s in settings for r in rows["held", s]], a.model)
    model = reading(fitted)
    result = {
        "members": list(FUSED_MEMBERS), **fitted,
        "candidates": CANDIDATES, "top": TOP, "unranked": UNRANKED,
        **({"C": C, "class_weight": "balanced"} if a.model == "logistic" else {}),
        "data": f"{n} gold-masked TAB train/dev texts delinked with --llm none, k = 2, the "
                f"TAB collection grouped by case, under each of: {', '.join(settings)}",
        "protection": "without the guard" if a.unguarded else "with the guard",
        "held_in_out_of_fold": oof,
        "script": "benchmarks/ranked/fit_fusion.py", "commit": br.commit(), "load": br.uptime(),
    }
    print(f"held-in out of fold (mean of three halvings, {n} texts a setting): {oof}")
    for s in settings:
        if ("test", s) in rows:
            print(f"TAB test, {s} (a report, not fitted on): {counts(model, rows['test', s])}")
    with atomic_output(a.out) as f:  # the trees on one line each: the file stays small
        f.write(json.dumps(result, separators=(",", ":")) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()

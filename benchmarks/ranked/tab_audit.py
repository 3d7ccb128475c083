"""What ``delink``'s audit reports on TAB, and what it costs.

The 127 gold-masked TAB test documents against the TAB collection (index grouped by
case, ``group_regex=":(.+)$"``), k = 2, ``--llm none``:

* for the gold-masked input and the ``delink`` output (arity 1): how many documents each
  member of the ranked attack ranks the source's case first for, for the whole text and
  for its best sentence; the cautious count (any member, whole text or any sentence: what
  ``delink`` reports) and the count claimed at the calibrated margin;
* time: ``delink`` per document without the audit, and the audit's two attacks per
  document (ranked, containment), measured in the same run; the ranked engine's build.

Nothing here is calibrated or tuned: the margins are the shipped ones (calibrated on TAB
train/dev and Wikipedia by ``calibrate.py``).

Usage::

    python benchmarks/ranked/tab_audit.py [--limit N] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from presidio_delink.attacks.audit import source_ranks
from presidio_delink.attacks.containment import ContainmentAttack
from presidio_delink.attacks.ranked import RankedAttack
from presidio_delink.datasets import tab_collection, tab_test
from presidio_delink.index import NgramIndex
from presidio_delink.io import atomic_output
from presidio_delink.pipeline import Delinker

GROUP = r":(.+)$"


def _uptime() -> str:
    try:
        return subprocess.run(
            ["uptime"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        return "?"


def figures(att: RankedAttack, outs: list[tuple[str, str]]) -> dict[str, object]:
    """Top-1 counts per member (whole text, best sentence), cautious and claimed counts."""
    text1 = dict.fromkeys(att.members, 0)
    sent1 = dict.fromkeys(att.members, 0)
    any1 = claimed = claimed_src = 0
    for group, text in outs:
        ps = att.scores(text)
        for m in att.members:
            row = ps.row(m)
            text1[m] += row is not None and ps.rank_of(row, group) == 1
            sent1[m] += any(
                ps.rank_of(i, group) == 1
                for i, (mm, q) in enumerate(ps.keys)
                if mm == m and q != "text"
            )
        any1 += ps.source_rank(group) == 1
        c = ps.claim()
        claimed += c is not None
        claimed_src += c is not None and c[0] == group
    return {
        "docs": len(outs),
        "top1_text": text1,
        "top1_best_sentence": sent1,
        "top1_any_member_any_query": any1,
        "claimed": claimed,
        "claimed_source": claimed_src,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    out: dict[str, object] = {"load_start": _uptime()}
    print("load:", out["load_start"])
    work = Path(tempfile.mkdtemp(prefix="ranked-audit-"))
    t0 = time.perf_counter()
    idx = NgramIndex.build(list(tab_collection()), work / "tab", max_n=8, group_regex=GROUP)
    print(f"index: {idx.n_docs} docs, {idx.n_groups} groups, {time.perf_counter() - t0:.1f} s")
    tests = list(tab_test())[: a.limit]
    group_of = dict(zip(idx.doc_ids, idx.doc_groups, strict=True))
    t0 = time.perf_counter()
    ranked = RankedAttack(idx, k=2)
    out["ranked_engine_build_s"] = round(time.perf_counter() - t0, 2)
    containment = ContainmentAttack(idx, k=2)
    print("ranked engine built in", out["ranked_engine_build_s"], "s")
    out["gold_masked"] = figures(ranked, [(group_of[tid], deid) for tid, _o, deid in tests])
    print("gold-masked:", json.dumps(out["gold_masked"]))
    delinker = Delinker(idx, k=2, arity=1, rewriter=None)
    t_del = t_rank = t_cont = 0.0
    outs = []
    changed = words = 0
    for tid, _o, deid in tests:
        t0 = time.perf_counter()
        res = delinker.delink(deid, tid)
        t_del += time.perf_counter() - t0
        assert res.text is not None
        t0 = time.perf_counter()
        source_ranks(res.text, group_of[tid], ranked=ranked)
        t_rank += time.perf_counter() - t0
        t0 = time.perf_counter()
        source_ranks(res.text, group_of[tid], containment=containment)
        t_cont += time.perf_counter() - t0
        outs.append((group_of[tid], res.text))
        words += res.n_words
        changed += res.words_redacted + res.words_rewritten
    n = len(tests)
    out["delink_arity1"] = figures(ranked, outs)
    out["delink_arity1"]["words_changed_pct"] = round(100 * changed / max(1, words), 1)  # type: ignore[index]
    print("delink -k 2 --llm none:", json.dumps(out["delink_arity1"]))
    out["time_per_doc_s"] = {
        "delink_without_audit": round(t_del / n, 3),
        "audit_ranked": round(t_rank / n, 3),
        "audit_containment": round(t_cont / n, 3),
        "audit_total": round((t_rank + t_cont) / n, 3),
        "audit_over_delink": round((t_rank + t_cont) / max(t_del, 1e-9), 2),
    }
    print("time per document:", json.dumps(out["time_per_doc_s"]))
    out["load_end"] = _uptime()
    print("load:", out["load_end"])
    if a.json:
        with atomic_output(a.json) as f:
            f.write(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

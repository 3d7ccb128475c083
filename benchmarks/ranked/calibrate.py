"""Calibrate the ranked attack's margins on held-in data, and measure their false claims.

Held-in data only (never the TAB test documents):

* **TAB train/dev**: the 113 annotated train/dev documents of
  ``tab_sample144_one_annotator.jsonl``, gold-masked (DIRECT and QUASI mentions replaced by
  ``[REDACTED]``);
* **Wikipedia**: the 100 annotated biographies, manually masked.

Null distribution (leave-source-out): each held-in text is queried against an index of
its collection *without its source's group* (every document of the case or person: an
index grouped by case, ``group_regex=":(.+)$"``).  Whatever the attack claims there is a
false claim.  For each text the statistic is the largest whole-text lead over the panel,
and the largest sentence lead (sentences of at least ``MIN_SENTENCE_TERMS`` terms).

Margins: the smallest value (on a 0.01 grid) at which at most ``--rate`` (default 1 %)
of the pooled null texts would be claimed, separately for the whole text and for the
sentences; the decision is their OR, so its false-claim rate is at most the sum.

Power (held-in, source present): the same TAB texts against the full TAB index, where a
claim is correct when the claimed group is the source's.

Usage::

    python benchmarks/ranked/calibrate.py [--rate 0.01] [--write] [--json OUT]

``--write`` replaces ``presidio_delink/attacks/ranked_calibration.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from presidio_delink.attacks.ranked import MIN_SENTENCE_TERMS, RankedAttack
from presidio_delink.datasets import (
    apply_masks,
    data_dir,
    tab_collection,
    wikibio_collection,
    wikibio_test,
)
from presidio_delink.index import NgramIndex
from presidio_delink.io import atomic_output

GROUP = r":(.+)$"  # tab:ID, hudoc:ID, hudoc10:ID -> ID; wiki:ID, wikibg:ID -> ID
OUT = (
    Path(__file__).resolve().parents[2] / "presidio_delink" / "attacks" / "ranked_calibration.json"
)


def _uptime() -> str:
    try:
        return subprocess.run(
            ["uptime"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        return "?"


def tab_held_in() -> dict[str, str]:
    """The gold-masked TAB train/dev texts: ``{case id: text}``."""
    out = {}
    with open(data_dir() / "tab" / "tab_sample144_one_annotator.jsonl", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            prov = rec["metadata"]["provenance"]
            if prov.get("dataset_type") == "test":
                continue
            spans = [
                [e["start_offset"], e["end_offset"]]
                for e in rec["entities"]
                if e.get("identifier_type") in ("DIRECT", "QUASI")
            ]
            out[prov["doc_id"]] = apply_masks(rec["text"], spans)
    return out


def statistics(attack: RankedAttack, text: str) -> tuple[float, float, str | None, str | None]:
    """(largest whole-text lead, largest eligible sentence lead, their top groups)."""
    ps = attack.scores(text)
    leads = ps.leads()
    best_t, best_s, g_t, g_s = 0.0, 0.0, None, None
    for i, (_m, q) in enumerate(ps.keys):
        ld = float(leads[i])
        top = attack.group_names[int(np.argmax(ps.group_scores[i]))]
        if q == "text":
            if ld > best_t:
                best_t, g_t = ld, top
        elif ps.n_terms[i] >= MIN_SENTENCE_TERMS and ld > best_s:
            best_s, g_s = ld, top
    return best_t, best_s, g_t, g_s


def margin_for(null: np.ndarray, rate: float) -> float:
    """Smallest margin on a 0.01 grid claiming at most ``rate`` of the null texts."""
    for m in np.round(np.arange(0.01, 1.0001, 0.01), 2):
        if np.mean(null >= m) <= rate:
            return float(m)
    return 1.0


def _index(docs: list[tuple[str, str]], work: Path, name: str) -> NgramIndex:
    t0 = time.perf_counter()
    idx = NgramIndex.build(docs, work / name, max_n=8, group_regex=GROUP)
    print(f"{name}: {idx.n_docs} docs, {idx.n_groups} groups, {time.perf_counter() - t0:.1f} s")
    return idx


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=0.01)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    print("load:", _uptime())
    work = Path(tempfile.mkdtemp(prefix="ranked-calib-"))
    tab_coll = list(tab_collection())
    held = tab_held_in()
    wiki_coll = list(wikibio_collection())
    wiki = {tid.split(":", 1)[1]: deid for tid, _o, deid in wikibio_test()}

    def case(doc_id: str) -> str:
        return doc_id.split(":", 1)[1]

    tab_rest = _index([d for d in tab_coll if case(d[0]) not in held], work, "tab-minus-held")
    wiki_rest = _index([d for d in wiki_coll if case(d[0]) not in wiki], work, "wiki-minus-test")
    null: dict[str, list[tuple[float, float]]] = {"tab": [], "wiki": []}
    t0 = time.perf_counter()
    for name, idx, texts in (("tab", tab_rest, held), ("wiki", wiki_rest, wiki)):
        att = RankedAttack(idx)
        for text in texts.values():
            t, s, _, _ = statistics(att, text)
            null[name].append((t, s))
    print(f"null statistics: {time.perf_counter() - t0:.1f} s for {len(held) + len(wiki)} texts")
    pooled = np.asarray(null["tab"] + null["wiki"])
    margin = margin_for(pooled[:, 0], a.rate)
    s_margin = margin_for(pooled[:, 1], a.rate)

    def rates(arr: np.ndarray) -> dict[str, object]:
        claim_t = arr[:, 0] >= margin
        claim_s = arr[:, 1] >= s_margin
        return {
            "texts": len(arr),
            "text_lead_p50_p95_p99_max": [
                round(float(np.percentile(arr[:, 0], p)), 3) for p in (50, 95, 99, 100)
            ],
            "sentence_lead_p50_p95_p99_max": [
                round(float(np.percentile(arr[:, 1], p)), 3) for p in (50, 95, 99, 100)
            ],
            "false_claims_text": int(claim_t.sum()),
            "false_claims_sentence": int(claim_s.sum()),
            "false_claims": int((claim_t | claim_s).sum()),
            "false_claim_rate": round(float((claim_t | claim_s).mean()), 4),
        }

    # power on held-in texts whose source is in the collection (the full TAB index)
    full = _index(tab_coll, work, "tab-full")
    att = RankedAttack(full, margin=margin, sentence_margin=s_margin)
    claimed = correct = first = 0
    for cid, text in held.items():
        ps = att.scores(text)
        c = ps.claim()
        claimed += c is not None
        correct += c is not None and c[0] == cid
        first += ps.source_rank(cid) == 1
    cal = {
        "margin": margin,
        "sentence_margin": s_margin,
        "min_sentence_terms": MIN_SENTENCE_TERMS,
        "target_rate": a.rate,
        "members": list(att.members),
        "null": {name: rates(np.asarray(v)) for name, v in null.items()},
        "null_pooled": rates(pooled),
        "power_tab_held_in": {
            "texts": len(held),
            "source_ranked_first_any": first,
            "claimed": claimed,
            "claimed_correct": correct,
        },
        "data": "TAB train/dev (113, gold-masked) and Wikipedia (100, manual masks)",
        "script": "benchmarks/ranked/calibrate.py",
        "load": _uptime(),
    }
    print(json.dumps(cal, indent=2))
    if a.write:
        with atomic_output(OUT) as f:
            f.write(json.dumps(cal, indent=2) + "\n")
        print("wrote", OUT)
    if a.json:
        with atomic_output(a.json) as f:
            f.write(json.dumps(cal, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Choose the protection's panel and crowd size on held-in data (never the TAB test documents).

``--protect`` edits until every member of its panel puts at least ``crowd`` other groups
above the source by its margin (whole text; sentences and containment as set).  Here each
candidate panel (:data:`PANELS`: the shipped one, and ones with query-tf and character
n-gram readings) and each crowd size of a grid run ``--protect all`` on held-in texts, and
the wide held-in family of ``calibrate_protect.py`` (:class:`WideFamily`: 48 BM25
variants, distinct and repeated query terms, words and character 3-/5-grams across word
boundaries; and q-gram detectors; its own code, shared neither with the defence nor with
the benchmark's adversaries) reads where the source lands:

* ``top1_whole`` / ``top1_sentence``: the most texts one family member ranks first by the
  whole text / by its best sentence;
* ``top5_whole``: the most texts one family member ranks in its top 5 by the whole text;
* ``words:*``, ``qtf:*``, ``char:*``: the same (top 1 by either reading, top 5) for the
  worst member of each part of the family;
* ``containment``: texts the q-gram family finds;
* ``audit_top1`` / ``audit_top5``: what ``delink``'s audit (its ranked panel,
  ``AUDIT_MEMBERS``, the searcher's reading) says for the same texts, to set beside the
  family's worst member;
* ``changed_pct``: words changed; ``cpu_s``: CPU seconds per text for the protection;
* ``vec:top1`` / ``vec:top5``: the worst member of a held-in family that does not rank by
  BM25 (``vector_family.py``: TF-IDF cosine over word 1-, 2- and 3-grams, per document
  and per group), by the whole text; ``fused:*``: a reader fusing the ranks of both
  families.  With ``--vector`` the rule reads them too (the learned ranker of
  ``bench_learned_ranker.py`` draws on such readers).

Held-in texts: TAB train/dev documents (gold-masked; the collection grouped by case), as
``calibrate_protect.py`` reads them (``--offset`` skips the first ones: a second slice).

Rule (:func:`choose`): the cheapest row (words changed) at which no family member ranks the
source first for more than ``--top1-rate`` of the texts nor in its top 5 for more than
``--top5-rate``; when none holds, the fewest top-5 finds (every row is printed: the
frontier).

Usage::

    python benchmarks/ranked/calibrate_crowd.py [--tab 30] [--grid 1,2,3,5]
        [--panels base,qtf,...] [--safety 0.1,0.15] [--cover joint,worst]
        [--sentence-crowd 1] [--vector] [--json OUT]
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from calibrate import GROUP, tab_held_in  # noqa: E402
from calibrate_protect import (  # noqa: E402
    WideFamily,
    _uptime,
    build_grams,
    qgram_found,
)
from vector_family import VectorFamily  # noqa: E402

from presidio_delink.attacks.fts5 import (  # noqa: E402
    PROTECT_MEMBERS,
    PROTECT_MEMBERS_BASE,
    PROTECT_MEMBERS_COSINE,
    PROTECT_MEMBERS_KEPT,
    PROTECT_MEMBERS_PAIRS,
    PROTECT_MEMBERS_QTF,
)
from presidio_delink.attacks.ranked import AUDIT_MEMBERS, RankedAttack  # noqa: E402
from presidio_delink.datasets import tab_collection  # noqa: E402
from presidio_delink.index import NgramIndex  # noqa: E402
from presidio_delink.io import atomic_output  # noqa: E402
from presidio_delink.pipeline import Delinker  # noqa: E402
from presidio_delink.protect import Protector  # noqa: E402


def family_ranks(fam: WideFamily, text: str, group: str) -> dict[str, tuple[int | None, bool]]:
    """Per family member: the source's whole-text rank (ties count as found; None: not
    matched) and whether its best sentence puts the source first."""
    return fam.ranks(text, group)


def _kind(member: str) -> str:
    """The family's part a member belongs to: ``words`` (the 24 distinct-term members),
    ``qtf`` (word views, every occurrence counted) or ``char`` (character n-grams)."""
    if member.startswith("char"):
        return "char"
    return "qtf" if member.endswith("-qtf") else "words"


#: Candidate panels of the protection (members of ``presidio_delink.attacks.fts5``).
PANELS: dict[str, tuple[str, ...]] = {
    "base": PROTECT_MEMBERS_BASE,
    "qtf": PROTECT_MEMBERS_QTF,
    "qtf-char": (*PROTECT_MEMBERS_QTF, "bm25-char4-qtf"),
    "qtf-k09-char": (*PROTECT_MEMBERS_BASE, "fts5-unicode61-qtf", "bm25-porter-stop-k09b04-qtf",
                     "bm25-char4-k09b04-qtf"),
    "qtf-char4x": (*PROTECT_MEMBERS_QTF, "bm25-char4x-qtf", "bm25-char4x-k2b1"),
    "qtf-char4xq": (*PROTECT_MEMBERS_QTF, "bm25-char4x-qtf"),
    "qtf-char-char4x": (*PROTECT_MEMBERS_QTF, "bm25-char4-qtf", "bm25-char4x-qtf",
                        "bm25-char4x-k2b1"),
    # the panel with word pairs by BM25, and with readings that do not saturate term
    # frequency nor rank single words only: TF-IDF cosine over words, pairs and triples,
    # BM25 over triples ("pairs-cos23" and "kept" were chosen in turn on held-in texts;
    # ranked_crowd.md, run of 2026-12-05 at 421fd9a).
    "pairs": PROTECT_MEMBERS_PAIRS,
    "pairs-cos1": (*PROTECT_MEMBERS_PAIRS, "cosine-word1"),
    "pairs-w3": (*PROTECT_MEMBERS_PAIRS, "bm25-word3"),
    "pairs-cos3": (*PROTECT_MEMBERS_PAIRS, "cosine-word3"),
    "pairs-w3-cos2": (*PROTECT_MEMBERS_PAIRS, "bm25-word3", "cosine-word2"),
    "pairs-cos23": PROTECT_MEMBERS_COSINE,
    "pairs-cos3-w3": (*PROTECT_MEMBERS_PAIRS, "cosine-word3", "bm25-word3"),
    "pairs-cos1-w3": (*PROTECT_MEMBERS_PAIRS, "cosine-word1", "bm25-word3"),
    "pairs-cos123": (*PROTECT_MEMBERS_PAIRS, "cosine-word1", "cosine-word2", "cosine-word3"),
    "pairs-cos23c": (*PROTECT_MEMBERS_PAIRS, "cosine-word2-case", "cosine-word3-case"),
    "pairs-cos23-23c": (*PROTECT_MEMBERS_PAIRS, "cosine-word2", "cosine-word3",
                        "cosine-word2-case", "cosine-word3-case"),
    "pairs-cos23s": (*PROTECT_MEMBERS_PAIRS, "cosine-word2-smooth", "cosine-word3-smooth"),
    "pairs-cos23-2s": (*PROTECT_MEMBERS_COSINE, "cosine-word2-smooth"),
    # kept pairs: none across a placeholder
    "pairs-cos23-2k": (*PROTECT_MEMBERS_COSINE, "cosine-word2k"),
    "pairs-cos3-2k": (*PROTECT_MEMBERS_PAIRS, "cosine-word3", "cosine-word2k"),
    # the first choice with BM25 over kept pairs; and kept pairs in place of the joined
    "pairs-cos23-k": (*PROTECT_MEMBERS_COSINE, "bm25-word2k"),
    "kept": PROTECT_MEMBERS_KEPT,
    # and the window pairs around each placeholder (the shipped panel)
    "window": PROTECT_MEMBERS,
    "window5": (*PROTECT_MEMBERS_KEPT, "bm25-pair5w-qtf"),
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tab", type=int, default=30, help="TAB train/dev texts (first N)")
    ap.add_argument("--offset", type=int, default=0, help="skip the first N held-in texts")
    ap.add_argument("--grid", default="1,2,3,5")
    ap.add_argument("--panels", default="base", help=f"of {', '.join(PANELS)}")
    ap.add_argument("--per-round", default="",
                    help="whole-text goals fixed per round (comma list; default: shipped)")
    ap.add_argument("--safety", default="",
                    help="whole-text margins (comma list; default: shipped)")
    ap.add_argument("--cover", default="",
                    help="whole-text covers, joint / worst (comma list; default: shipped)")
    ap.add_argument("--sentence-crowd", type=int, default=None)
    ap.add_argument("--containment-crowd", type=int, default=None)
    ap.add_argument("--top1-rate", type=float, default=0.05)
    ap.add_argument("--top5-rate", type=float, default=0.2)
    ap.add_argument("--max-changed", type=float, default=50.0)
    ap.add_argument("--vector", action="store_true",
                    help="the rule also reads the vector family and the fused reader "
                         "(vector_family.py)")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    print("load:", _uptime(), flush=True)
    held = list(tab_held_in().items())[a.offset : a.offset + a.tab]
    idx = NgramIndex.build(list(tab_collection()), None, max_n=8, group_regex=GROUP)
    fam = WideFamily(idx)
    vec = VectorFamily(idx, bm25=fam)
    grams = build_grams(idx, [t for _, t in held])
    d = Delinker(idx, k=2, arity=1)
    base = [(g, d.delink(t, g)) for g, t in held]
    n = len(base)
    auditor = RankedAttack(idx, k=2, members=AUDIT_MEMBERS)
    rows = []
    for panel in a.panels.split(","):
        ranked = RankedAttack(idx, k=2, members=PANELS[panel])
        for m, per, safety, cover in [
            (int(x), int(y) if y else None, float(z) if z else None, c or None)
            for x in a.grid.split(",") for y in a.per_round.split(",")
            for z in a.safety.split(",") for c in a.cover.split(",")
        ]:
            prot = Protector(d, "all", ranked=ranked, crowd=m, sentence_crowd=a.sentence_crowd,
                             containment_crowd=a.containment_crowd, whole_per_round=per,
                             ranked_safety=safety, cover=cover)
            t0 = time.process_time()
            words = changed = cont = 0
            top1_w: dict[str, int] = defaultdict(int)
            top1_s: dict[str, int] = defaultdict(int)
            top5_w: dict[str, int] = defaultdict(int)
            audit1 = audit5 = 0
            vtop1: dict[str, int] = defaultdict(int)
            vtop5: dict[str, int] = defaultdict(int)
            for g, r0 in base:
                res = copy.deepcopy(r0)
                prot.protect(res, g)
                assert res.text is not None
                words += res.n_words
                changed += res.words_redacted + res.words_rewritten
                for member, (rank, first_s) in family_ranks(fam, res.text, g).items():
                    top1_w[member] += rank == 1
                    top5_w[member] += rank is not None and rank <= 5
                    top1_s[member] += first_s
                cont += qgram_found(idx, grams, res.text, g)
                for member, rank in vec.ranks(res.text, g).items():
                    vtop1[member] += rank == 1
                    vtop5[member] += rank is not None and rank <= 5
                ar = auditor.scores(res.text).attacker_rank(g)  # what delink's audit says
                audit1 += ar == 1
                audit5 += ar is not None and ar <= 5
            row: dict[str, object] = {
                "panel": panel, "crowd": m, "per_round": prot.whole_per_round,
                "cover": prot.cover,
                "safety": prot.ranked_safety, "sentence_crowd": prot.sentence_crowd,
                "containment_crowd": prot.containment_crowd, "texts": n,
                "changed_pct": round(100 * changed / max(1, words), 1),
                "top1_whole": int(max(top1_w.values(), default=0)),
                "top1_sentence": int(max(top1_s.values(), default=0)),
                "top5_whole": int(max(top5_w.values(), default=0)),
                "containment": int(cont),
                "audit_top1": audit1, "audit_top5": audit5,
                "cpu_s": round((time.process_time() - t0) / n, 2),
                "load": _uptime(),
            }
            for kind in ("words", "qtf", "char"):  # the worst member of each part
                row[f"{kind}:top1"] = max(
                    (max(top1_w[x], top1_s[x]) for x in top1_w if _kind(x) == kind), default=0)
                row[f"{kind}:top5"] = max(
                    (v for x, v in top5_w.items() if _kind(x) == kind), default=0)
            row["worst_top5"] = max(top5_w, key=lambda x: (top5_w[x], x), default="")
            for kind in ("vec", "fused"):  # the vector family's worst member; the fused
                row[f"{kind}:top1"] = max(
                    (v for x, v in vtop1.items() if x.startswith(kind)), default=0)
                row[f"{kind}:top5"] = max(
                    (v for x, v in vtop5.items() if x.startswith(kind)), default=0)
            row["vec_worst_top5"] = max(
                (x for x in vtop5 if x != "fused"), key=lambda x: (vtop5[x], x), default="")
            rows.append(row)
            print(json.dumps(row), flush=True)
    chosen, why = choose(rows, n, a.top1_rate, a.top5_rate, a.max_changed, a.vector)
    out = {"chosen": {k: chosen[k] for k in ("panel", "crowd", "safety", "cover", "per_round")},
           "why": why,
           "rule": {"top1_rate": a.top1_rate, "top5_rate": a.top5_rate,
                    "max_changed": a.max_changed},
           "rows": rows, "load": _uptime()}
    print(json.dumps(out, indent=2))
    if a.json:
        with atomic_output(a.json) as f:
            f.write(json.dumps(out, indent=2) + "\n")
    return 0


def choose(
    rows: list[dict[str, object]], n: int, top1_rate: float, top5_rate: float,
    max_changed: float, vector: bool = False,
) -> tuple[dict[str, object], str]:
    """The held-in rule.  *Holds*: no family member (all 48) ranks the source first, by
    the whole text or its best sentence, for more than ``top1_rate`` of the texts, nor in
    its whole-text top 5 for more than ``top5_rate`` (with ``vector``, nor any member of
    the vector family or the fused reader, by the whole text).  Among the rows that hold, the
    fewest words changed (the cheapest within ``max_changed`` % when any is); when none
    holds, the fewest top-5 finds of the worst member, then the fewest top-1 finds, then
    the fewest words.  Ties: the panel with fewer members, then the smaller crowd."""

    kinds = ("words", "qtf", "char", *(("vec", "fused") if vector else ()))

    def worst1(r: dict[str, object]) -> int:
        return max(int(r[f"{k}:top1"]) for k in kinds)  # type: ignore[call-overload]

    def worst5(r: dict[str, object]) -> int:
        return max([int(r["top5_whole"])]  # type: ignore[call-overload]
                   + [int(r[f"{k}:top5"]) for k in kinds[3:]])  # type: ignore[call-overload]

    good = [r for r in rows if worst1(r) <= top1_rate * n and worst5(r) <= top5_rate * n]
    if good:
        cheap = [r for r in good if float(r["changed_pct"]) <= max_changed]  # type: ignore[arg-type]
        pick = min(cheap or good, key=lambda r: (  # ties: the smaller panel, the smaller crowd
            float(r["changed_pct"]), len(PANELS[str(r["panel"])]), r["crowd"]))  # type: ignore[arg-type]
        return pick, "holds" + ("" if cheap else ", words over budget")
    pick = min(rows, key=lambda r: (worst5(r), worst1(r), float(r["changed_pct"])))  # type: ignore[arg-type]
    return pick, "none holds: fewest top-5 finds"


if __name__ == "__main__":
    sys.exit(main())

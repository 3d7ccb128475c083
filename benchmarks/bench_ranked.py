"""Ranked search and near-verbatim search against the outputs of `delink`: the frontier.

The adversaries are independent of the package (``tests/ranked_adversaries.py``: Tantivy's
BM25 with two tokenizers, a from-scratch BM25 with a regex tokeniser, one with Snowball stems
and stop words, one over cases as single documents; winnowing detectors with 3-, 4- and
5-word fingerprints and three chain scoring rules, argmax case as the answer).  Nothing they
use comes from ``presidio_delink``; the tool's own ranked attack uses SQLite FTS5.

Set-up: the TAB collection (TAB texts + public HUDOC text; 1,635 documents) grouped by case
(``tab:ID``, ``hudoc:ID`` and ``hudoc10:ID`` of one case are one group), the 127 gold-masked
TAB test documents as input, k = 2.  Settings: the input, ``--arity 1``, ``--arity 3``,
``--protect containment``, ``--protect ranked`` and ``--protect all`` (arity 1 first).

Held-out members (``tests/ranked_adversaries.py``; nothing shared with the defence, and
the defence is never tuned to them): a query parser over the pasted text (Tantivy's
``parse_query``, every occurrence a clause), BM25 with the query's repeated terms kept
(k1 = 0.9, b = 0.4), BM25 over character 4-grams, and FindMyText-style text reuse by every
3-word shingle (``shingles 3``: shared, rarity-weighted and longest-run rules).  Settings
``all-cM`` / ``ranked-cM`` run the protection with crowd size M (``-cM-mX``: and the ranked
protection's whole-text margin X; a ``-worst`` or ``-joint`` suffix: its whole-text cover).
With ``--semantic``, members that rank otherwise than the panel's BM25 over words
(``tests/semantic_adversaries.py``: TF-IDF cosine over words and word pairs, LSA, TF-IDF
cosine and BM25 over word pairs alone, BM25 over word triples, and with ``all`` a dense
passage encoder with late interaction), reported beside the panel (``semantic_*`` in
the JSON), not in its worst.

Columns: words changed (redacted, rewritten) as a share of the input's words; cosine of the
output's embedding to the input's (all-MiniLM-L6-v2); per ranked member the number of
documents whose case it ranks first for the whole text (``W``) and for the best sentence
(``S``, the sentence whose top case leads most); per fingerprint length the number ranked
first under the worst of the three chain rules (and per rule in the JSON).

Usage::

    python benchmarks/bench_ranked.py [--limit N] [--settings input,arity1,...] \\
        [--llm none|embedded] [--work DIR] [--json OUT]

Outputs of each setting are cached in ``--work`` (reruns only re-attack).
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

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import ranked_adversaries as ra  # noqa: E402

from presidio_delink.datasets import tab_collection, tab_test  # noqa: E402
from presidio_delink.index import NgramIndex  # noqa: E402
from presidio_delink.io import atomic_output  # noqa: E402
from presidio_delink.linkage import analyze  # noqa: E402
from presidio_delink.pipeline import Delinker  # noqa: E402

SETTINGS = {  # name -> (arity, protect modes)
    "input": (0, ()),
    "arity1": (1, ()),
    "arity3": (3, ()),
    "containment": (1, ("containment",)),
    "ranked": (1, ("ranked",)),
    "all": (1, ("containment", "ranked")),
}


def setting(name: str) -> tuple[int, tuple[str, ...], int | None]:
    """``(arity, protect modes, crowd)`` of a setting name: one of :data:`SETTINGS`, or a
    protection with ``-cM`` (crowd size M, e.g. ``all-c3``; without it the default),
    optionally ``-mX`` (the ranked protection's whole-text margin, e.g. ``all-c3-m0.05``;
    see :func:`margin`) and ``-worst`` / ``-joint`` (its whole-text cover, :func:`cover`)."""
    name = name.removesuffix("-worst").removesuffix("-joint")
    base, _, c = name.partition("-c")
    arity, modes = SETTINGS[base]
    c = c.partition("-m")[0]
    return arity, modes, int(c) if c else None


def margin(name: str) -> float | None:
    """The ``-mX`` part of a setting name (None: the shipped margin)."""
    _, _, m = name.removesuffix("-worst").removesuffix("-joint").partition("-m")
    return float(m) if m else None


def cover(name: str) -> str | None:
    """The ranked protection's whole-text cover of a setting name ending in ``-worst``
    or ``-joint`` (None: the shipped cover)."""
    for c in ("worst", "joint"):
        if name.endswith(f"-{c}"):
            return c
    return None


def uptime() -> str:
    try:
        out = subprocess.run(["uptime"], capture_output=True, text=True, check=False)
        return out.stdout.strip()
    except OSError:
        return "?"


def commit() -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()


def run_setting(idx, tests, name: str, llm: str, partial=None, rewrite=None, members=None,  # type: ignore[no-untyped-def]
                guard=True):
    """``[{id, text, n_words, redacted, rewritten, seconds}]`` of one setting.

    ``partial``: a JSON-lines file of the documents done so far (a long LLM run resumes there
    after an interruption; rewritten through ``atomic_output`` after each document).
    ``members``: the ranked protection's panel (None: the shipped ``PROTECT_MEMBERS``).
    ``guard``: the protection's guard (``presidio_delink.protect.Protector``).
    """
    arity, modes, crowd = setting(name)
    if arity == 0:
        return [
            {"id": tid, "text": deid, "n_words": len(deid.split()), "redacted": 0,
             "rewritten": 0, "seconds": 0.0}
            for tid, _o, deid in tests
        ]
    from presidio_delink.llm import make_rewriter
    from presidio_delink.protect import Protector

    d = Delinker(idx, k=2, arity=arity, rewriter=make_rewriter(llm), rewrite=rewrite)
    ranked = None
    if members is not None and "ranked" in modes:
        from presidio_delink.attacks.ranked import RankedAttack

        ranked = RankedAttack(idx, k=2, members=tuple(members))
    prot = Protector(d, modes, crowd=crowd, ranked_safety=margin(name),
                     cover=cover(name), ranked=ranked, guard=guard) if modes else None
    group_of = dict(zip(idx.doc_ids, idx.doc_groups, strict=True))
    out = []
    done = {}
    if partial is not None and partial.is_file():
        done = {r["id"]: r for r in map(json.loads, partial.read_text().splitlines())}
    for i, (tid, _o, deid) in enumerate(tests, 1):
        if tid in done:
            out.append(done[tid])
            continue
        t0, c0 = time.perf_counter(), time.process_time()
        res = d.delink(deid, tid)
        if prot is not None:
            prot.protect(res, group_of[tid])
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        assert res.text is not None and not analyze(idx, res.text, k=2, arity=arity).linkable
        prot_red = sum(a.n_words for a in res.audit if a.reason in PROTECT_REASONS
                       and a.method == "redacted")
        prot_rew = sum(a.n_words for a in res.audit if a.reason in PROTECT_REASONS
                       and a.method != "redacted")
        out.append({
            "id": tid, "text": res.text, "n_words": res.n_words,
            "redacted": res.words_redacted, "rewritten": res.words_rewritten, "seconds": dt,
            "cpu_seconds": dc, "protect_redacted": prot_red, "protect_rewritten": prot_rew,
            "relinked": res.words_redacted - sum(
                a.n_words for a in res.audit if a.method == "redacted"),
        })
        if partial is not None:
            with atomic_output(partial) as f:
                f.write("".join(json.dumps(o) + "\n" for o in out))
        if llm != "none":
            o = out[-1]
            print(f"  [{i}/{len(tests)}] {name}: {o['n_words']} words, protection "
                  f"{o['protect_rewritten']} rewritten / {o['protect_redacted']} redacted, "
                  f"{o['cpu_seconds']:.0f} CPU s | {uptime()}", flush=True)
    return out


#: The audit reasons of the protections' own edits (``presidio_delink.protect``).
PROTECT_REASONS = ("ranked term", "containment chain")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=None, help="first N test documents")
    ap.add_argument("--shortest", type=int, default=None,
                    help="the N shortest test documents instead (a long LLM run)")
    ap.add_argument("--settings", default=",".join(SETTINGS))
    ap.add_argument("--llm", default="none")
    ap.add_argument("--rewrite", choices=("candidates", "choose", "generate"), default=None,
                    help="the loop's rewrite mode (default: its choice by --llm)")
    ap.add_argument("--work", type=Path, default=None, help="cache of the settings' outputs")
    ap.add_argument("--panel", default="",
                    help="the ranked protection's panel: a name of benchmarks/ranked/"
                         "calibrate_crowd.py's PANELS (default: the shipped one)")
    ap.add_argument("--no-cosine", action="store_true")
    ap.add_argument("--semantic", choices=("none", "sparse", "all"), default="none",
                    help="held-out members that rank otherwise than the panel's BM25 over "
                    "words (tests/semantic_adversaries.py): TF-IDF cosine, LSA, TF-IDF and "
                    "BM25 over word pairs and BM25 over word triples (sparse), and a dense "
                    "passage encoder (all; about 10 CPU minutes to encode the collection)")
    ap.add_argument("--limit-slow", type=int, default=None,
                    help="first N documents only for the slow settings (arity3)")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    print("load:", uptime(), "commit:", commit(), flush=True)
    coll = list(tab_collection())
    tests = list(tab_test())[: a.limit]
    if a.shortest:
        tests = sorted(tests, key=lambda t: (len(t[2].split()), t[0]))[: a.shortest]
    groups = [ra.case_of(d) for d, _ in coll]
    work = a.work or Path(tempfile.mkdtemp(prefix="bench-ranked-"))
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    idx = NgramIndex.build(coll, None, max_n=8, group_regex=ra.GROUP_RE.pattern)
    print(f"index: {len(coll)} docs, {time.perf_counter() - t0:.1f} s", flush=True)
    t0 = time.perf_counter()
    ranked = ra.ranked_panel(coll, groups)
    winnow = ra.containment_panel(coll, groups)
    shingles = ra.Shingles(coll, groups, k=3)  # FindMyText-style: every 3-word shingle
    semantic: list[object] = []
    if a.semantic != "none":
        import semantic_adversaries as sa

        semantic = sa.semantic_panel(coll, groups, dense=a.semantic == "all", cache=work)
    print(f"adversaries built in {time.perf_counter() - t0:.1f} s", flush=True)
    embed = None
    if not a.no_cosine:
        from presidio_delink.eval.embeddings import Embedder

        embed = Embedder()
    inputs = None
    from presidio_delink.attacks.audit import source_ranks
    from presidio_delink.attacks.containment import ContainmentAttack
    from presidio_delink.attacks.fused import FusedReading
    from presidio_delink.attacks.ranked import AUDIT_MEMBERS, RankedAttack

    tool_ranked = RankedAttack(idx, k=2, members=AUDIT_MEMBERS)  # the Auditor's panel
    tool_fused = FusedReading.shipped()
    tool_cont = ContainmentAttack(idx, k=2)
    group_of = dict(zip(idx.doc_ids, idx.doc_groups, strict=True))
    rows = []
    for name in a.settings.split(","):
        n = min(len(tests), a.limit_slow) if name in SLOW and a.limit_slow else len(tests)
        # the documents chosen name the cache: the first n, or the n shortest
        stem = f"{name}-{a.llm.replace(':', '_')}-{'shortest' if a.shortest else ''}{n}"
        if a.rewrite:
            stem += f"-{a.rewrite}"
        stem += f"+{a.panel}" if a.panel else ""
        cache = work / f"{stem}.json"
        if cache.is_file():
            outs = json.loads(cache.read_text())
        else:
            members = None
            if a.panel:
                sys.path.insert(0, str(REPO / "benchmarks" / "ranked"))
                from calibrate_crowd import PANELS

                members = PANELS[a.panel]
            outs = run_setting(idx, tests[:n], name, a.llm, work / f"{stem}.partial.jsonl",
                               a.rewrite, members)
            with atomic_output(cache) as f:
                f.write(json.dumps(outs))
        words = sum(o["n_words"] for o in outs) or 1
        red = sum(o["redacted"] for o in outs)
        rew = sum(o["rewritten"] for o in outs)
        row: dict[str, object] = {
            "setting": name, "llm": a.llm, "docs": n, "panel": a.panel or "shipped",
            "changed_pct": round(100 * (red + rew) / words, 1),
            "redacted_pct": round(100 * red / words, 1),
            "rewritten_pct": round(100 * rew / words, 1),
            "protect_redacted_pct": round(
                100 * sum(o.get("protect_redacted", 0) for o in outs) / words, 1),
            "protect_rewritten_pct": round(
                100 * sum(o.get("protect_rewritten", 0) for o in outs) / words, 1),
            "s_per_doc": round(sum(o["seconds"] for o in outs) / n, 2),
            "cpu_s_per_doc": round(sum(o.get("cpu_seconds", 0.0) for o in outs) / n, 2),
            "load": uptime(),
        }
        # what delink's audit reports for these outputs (the tool's own attacks)
        t0 = time.perf_counter()
        audit = [source_ranks(o["text"], group_of[o["id"]], tool_cont, None, tool_ranked,
                              tool_fused) for o in outs]
        row["audit_s_per_doc"] = round((time.perf_counter() - t0) / n, 3)
        row["tool_ranked_first"] = sum(r["ranked"]["source_rank"] == 1 for r in audit)
        row["tool_ranked_any_sentence"] = sum(
            r["ranked"]["any_sentence_rank"] == 1 for r in audit)
        row["tool_ranked_claimed"] = sum(bool(r["ranked"]["margin_claims"]) for r in audit)
        row["tool_ranked_top5"] = sum(bool(r["ranked"]["source_top5"]) for r in audit)
        row["tool_ranked_top5_whole"] = sum(
            any(v["text_rank"] is not None and v["text_rank"] <= 5
                for v in r["ranked"]["members"].values()) for r in audit)
        row["tool_containment_first"] = sum(
            r["containment"]["source_rank"] == 1 for r in audit)
        row["tool_containment_top5"] = sum(
            bool(r["containment"]["source_top5"]) for r in audit)
        row["tool_fused_first"] = sum(r["fused"]["source_rank"] == 1 for r in audit)
        row["tool_fused_top5"] = sum(bool(r["fused"]["source_top5"]) for r in audit)
        # the audit as a whole: some attack of it ranks the source first / in the top 5
        row["tool_any_first"] = sum(any(v["source_rank"] == 1 for v in r.values())
                                    for r in audit)
        row["tool_any_top5"] = sum(any(v["source_top5"] for v in r.values()) for r in audit)
        from presidio_delink.settings import DEFAULT_CROWD

        crowd = setting(name)[2] or DEFAULT_CROWD
        row["tool_exposed"] = sum(
            any(v["source_rank"] is not None and v["source_rank"] <= crowd
                for v in r.values()) for r in audit)
        if embed is not None:
            vec = embed.encode([o["text"] for o in outs])
            inputs = {t: v for t, v in zip(
                [t for t, _, _ in tests], embed.encode([d for _, _, d in tests]), strict=True)
            } if inputs is None else inputs
            cos = [float(inputs[o["id"]] @ v) for o, v in zip(outs, vec, strict=True)]
            row["cosine"] = round(float(np.mean(cos)), 3)
        union_first, union_top5 = [False] * n, [False] * n  # any panel member
        every_first, every_top5 = [False] * n, [False] * n  # any reader, semantic too
        for m in ranked + semantic:
            res = [ra.ranked_outcome(m, o["text"], ra.case_of(o["id"])) for o in outs]
            for q in ("whole", "sentence", "any_sentence"):
                row[f"{m.name}:{q}"] = sum(r[q] for r in res)  # type: ignore[attr-defined]
            # the searcher's reading, as the tool's audit counts it: whole or best sentence
            row[f"{m.name}:either"] = sum(  # type: ignore[attr-defined]
                r["whole"] or r["sentence"] for r in res)
            row[f"{m.name}:whole_top5"] = sum(r["whole_top5"] for r in res)  # type: ignore[attr-defined]
            row[f"{m.name}:either_top5"] = sum(  # type: ignore[attr-defined]
                r["whole_top5"] or r["sentence_top5"] for r in res)
            for i, r in enumerate(res):
                if m in ranked:
                    union_first[i] |= r["whole"] or r["sentence"]
                    union_top5[i] |= r["whole_top5"] or r["sentence_top5"]
                every_first[i] |= r["whole"] or r["sentence"]
                every_top5[i] |= r["whole_top5"] or r["sentence_top5"]
        for k, w in winnow.items():
            res = [w.first(o["text"], ra.case_of(o["id"])) for o in outs]
            for rule in ra.RULES:
                row[f"winnow{k}:{rule}"] = sum(r[rule] for r in res)
        res = [shingles.first(o["text"], ra.case_of(o["id"])) for o in outs]
        for rule in ra.Shingles.RULES:
            row[f"shingles3:{rule}"] = sum(r[rule] for r in res)
        # the independent panel's worst member, as the tool's audit reads it
        row["panel_first_either"] = max(row[f"{m.name}:either"] for m in ranked)  # type: ignore[attr-defined]
        row["panel_top5_whole"] = max(row[f"{m.name}:whole_top5"] for m in ranked)  # type: ignore[attr-defined]
        row["panel_top5_either"] = max(row[f"{m.name}:either_top5"] for m in ranked)  # type: ignore[attr-defined]
        # the panel read as the audit reads its own members: the source found by any of
        # them (the audit's source_rank is the best over its members and queries)
        row["panel_union_first"] = sum(union_first)
        row["panel_union_top5"] = sum(union_top5)
        if semantic:
            row["every_reader_union_first"] = sum(every_first)
            row["every_reader_union_top5"] = sum(every_top5)
        if semantic:  # held out from the panel's figures: reported beside them
            row["semantic_first_either"] = max(row[f"{m.name}:either"] for m in semantic)  # type: ignore[attr-defined]
            row["semantic_top5_whole"] = max(row[f"{m.name}:whole_top5"] for m in semantic)  # type: ignore[attr-defined]
            row["semantic_top5_either"] = max(row[f"{m.name}:either_top5"] for m in semantic)  # type: ignore[attr-defined]
        row["panel_containment_first"] = max(
            [row[f"winnow{k}:{rule}"] for k in winnow for rule in ra.RULES]
            + [row[f"shingles3:{rule}"] for rule in ra.Shingles.RULES])
        rows.append(row)
        print(json.dumps(row), flush=True)
    print_table(rows, [m.name for m in ranked + semantic], list(winnow), n)  # type: ignore[attr-defined]
    print("load:", uptime(), flush=True)
    if a.json:
        with atomic_output(a.json) as f:
            f.write(json.dumps({"load": uptime(), "commit": commit(), "rows": rows}, indent=2))


SLOW = ("arity3",)


def print_table(rows, members, lengths, n) -> None:  # type: ignore[no-untyped-def]
    head = ["setting", "docs", "changed (red./rew.)", "protection red./rew.", "cosine",
            "s/doc (CPU)", "audit: ranked first (any sentence)", "audit: ranked top 5 "
            "(whole text)", "audit: containment first / top 5", "audit: fused first / top 5",
            "audit, any attack: first / top 5", "audit: exposed (crowd)"]
    head += ["panel, any member: first / top 5 (whole or best sentence)"]
    head += [f"{m} W/S (either) top5-W (either)" for m in members]
    head += [f"winnow {k} (max rule)" for k in lengths] + ["shingles 3 (max rule)"]
    print("\n| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [
            str(r["setting"]),
            str(r["docs"]),
            f"{r['changed_pct']} % ({r['redacted_pct']} / {r['rewritten_pct']})",
            f"{r['protect_redacted_pct']} / {r['protect_rewritten_pct']} %",
            str(r.get("cosine", "")),
            f"{r['s_per_doc']} ({r['cpu_s_per_doc']})",
            f"{r['tool_ranked_first']} ({r['tool_ranked_any_sentence']})",
            f"{r['tool_ranked_top5']} ({r['tool_ranked_top5_whole']})",
            f"{r['tool_containment_first']} / {r['tool_containment_top5']}",
            f"{r['tool_fused_first']} / {r['tool_fused_top5']}",
            f"{r['tool_any_first']} / {r['tool_any_top5']}",
            str(r["tool_exposed"]),
        ]
        cells.append(f"{r['panel_union_first']} / {r['panel_union_top5']}")
        cells += [f"{r[f'{m}:whole']} / {r[f'{m}:sentence']} ({r[f'{m}:either']}) "
                  f"{r[f'{m}:whole_top5']} ({r[f'{m}:either_top5']})" for m in members]
        cells += [str(max(r[f"winnow{k}:{rule}"] for rule in ra.RULES)) for k in lengths]
        cells.append(str(max(r[f"shingles3:{rule}"] for rule in ra.Shingles.RULES)))
        print("| " + " | ".join(cells) + " |")
    print(f"(counts of {n} documents whose case is ranked first; top5-W: in the top 5 "
          "for the whole text, and in brackets for the whole text or the best sentence)")


if __name__ == "__main__":
    main()

"""Review app: how long one verified action takes on TAB-sized documents.

Builds the TAB index as the other benchmarks do (``NgramIndex.build(tab_collection(),
max_n=8)``), delinks the first ``--docs`` gold-masked TAB test documents (redaction only,
``llm=none``: the edits' kinds do not change the verification's cost), opens each in a
:class:`ReviewSession` and times ``--actions`` review actions per document, cycling through
revert (mostly refused: the original links), free-text edit, redact a word, accept.  Each
is timed end to end (``ReviewSession.act``: verification, SQLite commit with fsync, the
page's document rebuilt) and by its verification alone; the same run times the parts of a
verification on each final text (``analyze``, each attack) as the baseline: ``analyze`` is
the delinker's own check.  Target: at most 300 ms per verification.

    python benchmarks/bench_review.py --docs 20 --actions 8 [--json OUT]

``--demo-flow DIR`` instead times the whole review in a headless Chromium (the system's,
through Playwright) on the demo's outputs (``DIR/index``, ``DIR/delinked.jsonl`` from
``samples/demo.sh`` or its ``delink`` step, inputs ``samples/deidentified.jsonl``): accept
an LLM rewrite, edit it back to its input (refused; the screenshot ``DIR/review.png`` is
taken then), accept the rest, sign off every document, export.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from presidio_delink.attacks.audit import source_ranks  # noqa: E402
from presidio_delink.datasets import tab_collection, tab_test  # noqa: E402
from presidio_delink.index import NgramIndex  # noqa: E402
from presidio_delink.io import atomic_output  # noqa: E402
from presidio_delink.linkage import analyze  # noqa: E402
from presidio_delink.pipeline import Delinker  # noqa: E402
from presidio_delink.review import ReviewSession, Verifier  # noqa: E402


def _uptime() -> str:
    try:
        return subprocess.run(
            ["uptime"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        return "?"


def _ms(xs: list[float]) -> str:
    if not xs:
        return "-"
    xs = sorted(xs)
    p90 = xs[min(len(xs) - 1, int(0.9 * len(xs)))]
    return (
        f"median {1000 * statistics.median(xs):.0f} ms, p90 {1000 * p90:.0f} ms, "
        f"max {1000 * xs[-1]:.0f} ms (n={len(xs)})"
    )


def demo_flow(folder: Path) -> None:
    """The browser flow on the demo outputs (see the module docstring)."""
    import os

    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    from playwright.sync_api import sync_playwright

    from presidio_delink.review.server import ReviewServer

    print("load:", _uptime())
    out = folder / "reviewed.jsonl"
    for old in folder.glob("reviewed.jsonl*"):
        old.unlink()
    t0, c0 = time.perf_counter(), time.process_time()
    session = ReviewSession(
        folder / "delinked.jsonl",
        Verifier(NgramIndex.load(folder / "index"), k=2),
        out,
        input_path=ROOT / "samples" / "deidentified.jsonl",
        reviewer="A. Officer",
    )
    srv = ReviewServer(session)
    srv.start()

    def msg(page, cls: str, *parts: str) -> None:  # type: ignore[no-untyped-def]
        page.wait_for_function(
            "([c, p]) => { const m = document.getElementById('msg');"
            " return m.className === c && p.every(x => m.textContent.includes(x)); }",
            arg=[cls, list(parts)],
            timeout=30000,
        )

    kinds: dict[str, int] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=os.environ.get("PRESIDIO_DELINK_CHROMIUM", "/usr/bin/chromium"),
            headless=True,
            args=["--no-sandbox"],
        )
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(srv.url)
        page.wait_for_selector("#queue-list li")
        shot = False
        for rec in session.records:
            d = rec["id"]
            page.click(f'#queue-list li[data-id="{d}"]')
            page.wait_for_function(
                "id => document.getElementById('doc-title').textContent.startsWith(id)", arg=d
            )
            doc = session.document(d)
            for c in doc["chunks"]:
                kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
            llm = [c for c in doc["chunks"] if "llm" in c["method"] and c["df"] == 1]
            if llm and not shot:
                c = llm[0]
                page.click(f'#output .edit[data-i="{c["i"]}"]')
                page.keyboard.press("a")
                msg(page, "ok", "accept: verified")
                page.keyboard.press("e")
                page.fill("#edit-text", c["before"])
                page.keyboard.press("Control+Enter")
                msg(page, "err", "edit refused")
                page.screenshot(path=str(folder / "review.png"))
                shot = True
                page.keyboard.press("Escape")
            page.keyboard.press("Shift+A")
            msg(page, "ok", "accept_all")
            page.keyboard.press("s")
            msg(page, "ok", "signed off")
        page.keyboard.press("x")
        n = len(session.records)
        msg(page, "ok", f"exported {n} documents ({n} signed off)")
        browser.close()
    srv.stop()
    session.close()
    print(f"edits by kind over the {n} outputs: {kinds}")
    print(
        f"whole flow: {time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s "
        "CPU in this process (Chromium's own not counted)"
    )
    print("screenshot:", folder / "review.png" if shot else "none (no LLM rewrite)")
    print("load after:", _uptime())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=20)
    ap.add_argument("--actions", type=int, default=8, help="actions timed per document")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--demo-flow", type=Path, default=None, metavar="DIR")
    a = ap.parse_args()
    if a.demo_flow:
        demo_flow(a.demo_flow)
        return
    load0 = _uptime()
    print("load:", load0)
    work = Path(tempfile.mkdtemp(prefix="bench-review-"))
    coll = list(tab_collection())
    tests = list(tab_test())[: a.docs]
    t0 = time.perf_counter()
    idx = NgramIndex.build(coll, work / "tab", max_n=8)
    print(f"TAB index: {len(coll)} docs in {time.perf_counter() - t0:.1f} s")
    verifier = Verifier(idx, k=2)
    panel = verifier.panel
    assert panel is not None
    print("attack panel:", ", ".join(panel.ATTACKS + tuple(verifier.attacks)))
    # the baseline, timed on the same texts: the panel before it read as the audit does
    # (ranked search over the four calibrated members, the fused reading apart)
    from presidio_delink.attacks.fused import FusedAttack
    from presidio_delink.attacks.ranked import RankedAttack

    before = {"ranked (4 members)": RankedAttack(idx, 2), "fused (apart)": FusedAttack(idx, 2)}
    delinker = Delinker(idx, k=2, rewriter=None)
    group_of = dict(zip(idx.doc_ids, idx.doc_groups, strict=True))
    with open(work / "delinked.jsonl", "w") as out, open(work / "input.jsonl", "w") as inp:
        for tid, _orig, deid in tests:
            res = delinker.delink(deid, tid)
            rec = res.to_json()
            rec["source_ranks"] = panel.read(res.text or "", group_of[tid])  # delink's audit
            out.write(json.dumps(rec) + "\n")
            inp.write(json.dumps({"id": tid, "text": deid}) + "\n")
    session = ReviewSession(
        work / "delinked.jsonl",
        verifier,
        work / "reviewed.jsonl",
        input_path=work / "input.jsonl",
        reviewer="bench",
    )
    opened, acted, verified, refused = [], [], [], 0
    per_doc: list[dict[str, object]] = []
    parts: dict[str, list[float]] = {"analyze": []}
    words = []
    for rec in session.records:
        t0 = time.perf_counter()
        doc = session.document(rec["id"])
        opened.append(time.perf_counter() - t0)
        words.append(rec.get("words", 0))
        mine: list[float] = []
        for n in range(a.actions):
            edits = [c for c in doc["chunks"] if c["kind"] != "same"]
            same = [c for c in doc["chunks"] if c["kind"] == "same" and " " in c["text"][1:-1]]
            kind = ("revert", "edit", "redact", "accept")[n % 4]
            kw: dict[str, object] = {}
            if kind == "redact" and same:
                c = same[n % len(same)]
                a0 = c["start"] + c["text"].index(" ", 1) + 1
                b0 = c["text"].find(" ", a0 - c["start"])
                if b0 < 0:
                    continue
                kw = {"start": a0, "end": c["start"] + b0}
            elif edits:
                c = edits[(n * 7) % len(edits)]
                kw = {"chunk": c["i"]}
                if kind == "edit":
                    kw["text"] = "some matter"
            else:
                continue
            t0 = time.perf_counter()
            r = session.act(rec["id"], doc["version"], kind, **kw)  # type: ignore[arg-type]
            acted.append(time.perf_counter() - t0)
            verified.append(r["verification"]["seconds"])
            mine.append(r["verification"]["seconds"])
            refused += not r["ok"]
            doc = r["document"]
        text = "".join(c["text"] for c in doc["chunks"])
        group = group_of[rec["id"]]
        for _ in range(2):  # the parts, on the final text (second run: warm caches)
            t0 = time.perf_counter()
            analyze(idx, text, k=2)
            t_an = time.perf_counter() - t0
            t_at = {}
            t0 = time.perf_counter()
            panel.containment.scores(text)
            t_at["containment"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            source_ranks(text, group, None, None, panel.ranked, panel.fused)
            t_at["ranked + fused (the audit's readings)"] = time.perf_counter() - t0
            for name, attack in {**verifier.attacks, **before}.items():
                t0 = time.perf_counter()
                attack.verdict(text, top=50)
                t_at[name] = time.perf_counter() - t0
        parts["analyze"].append(t_an)
        for name, t in t_at.items():
            parts.setdefault(name, []).append(t)
        del group
        per_doc.append(
            {"id": rec["id"], "words": words[-1], "open_s": opened[-1], "verify_s": mine}
        )
    session.close()
    load1 = _uptime()
    med_an = statistics.median(parts["analyze"])
    med_v = statistics.median(verified)
    print(
        f"documents: {len(session.records)}, words per document: median "
        f"{statistics.median(words):.0f}, max {max(words)}"
    )
    print(f"open a document (first verification, baseline): {_ms(opened)}")
    print(f"verification after an action: {_ms(verified)}")
    print(f"whole action (verify + SQLite commit + page data): {_ms(acted)}; {refused} refused")
    for name, xs in parts.items():
        print(f"  part {name}: {_ms(xs)}")
    print(f"verification / analyze alone: {med_v / med_an:.2f}x")
    now = statistics.median(parts["ranked + fused (the audit's readings)"])
    was = statistics.median(
        [a + b for a, b in zip(parts["ranked (4 members)"], parts["fused (apart)"], strict=True)]
    )
    print(f"ranked + fused as the audit reads them / as the panel read them before: "
          f"{now / was:.2f}x (medians, the same texts)")
    within = sum(1 for x in verified if x <= 0.3)
    print(f"verifications within 300 ms: {within} of {len(verified)}")
    big = [x for d in per_doc if int(d["words"]) >= 1000 for x in d["verify_s"]]  # type: ignore[call-overload, attr-defined]
    print(f"verification, documents of 1,000 words or more: {_ms(big)}")
    print("load after:", load1)
    if a.json:
        with atomic_output(a.json) as f:
            json.dump(
                {
                    "load_before": load0,
                    "load_after": load1,
                    "docs": len(session.records),
                    "words": words,
                    "open_s": opened,
                    "verify_s": verified,
                    "act_s": acted,
                    "refused": refused,
                    "parts_s": parts,
                },
                f,
            )


if __name__ == "__main__":
    main()

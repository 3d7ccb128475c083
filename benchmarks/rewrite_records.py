"""Figures of a ``bench_rewrite.py --records`` file: for a run stopped before its summary.

Per record: words rewritten / redacted (the LLM result's own counts), tokens, CPU seconds;
over the records: the share rewritten, the mean embedding cosine (all-MiniLM-L6-v2 as in
``bench_rewrite.py``) of the LLM output and of the ``--llm none`` output to the input,
residual linkages (``analyze`` at k=2, arity 1, against ``--work-dir``/tab_index), and
``--samples`` seeded before/after sentences that differ and hold a word outside
placeholders that the input sentence does not (a rewrite, not only redactions); garbling
as ``bench_rewrite.py`` counts it (copies of 3 input words, digits, word pairs repeated in
a changed sentence), except doubled words: any in the output that the input lacks (the
records hold no marks to tell which touch a rewrite).

Usage::

    python benchmarks/rewrite_records.py /tmp/rw/qwen15.jsonl --work-dir /tmp/rw
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_pipeline import load_index  # noqa: E402
from bench_rewrite import _FUNCTION, _SENT, _embed_cosines, _pairs, _words  # noqa: E402

from presidio_delink.linkage import analyze  # noqa: E402

_PH = re.compile(r"\[REDACTED\]|<[A-Z_]+>")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", type=Path)
    ap.add_argument("--work-dir", type=Path, default=ROOT / "benchmarks" / "_work")
    ap.add_argument("--samples", type=int, default=15)
    ap.add_argument("--seed", type=int, default=22)
    args = ap.parse_args(argv)
    recs = [json.loads(x) for x in args.records.read_text(encoding="utf-8").splitlines()]
    idx, _how, _s = load_index(args.work_dir)
    rw = sum(r["llm"]["words_rewritten"] for r in recs)
    rd = sum(r["llm"]["words_redacted"] for r in recs)
    cos_llm = _embed_cosines([(r["input"], r["llm"]["text"]) for r in recs])
    cos_none = _embed_cosines([(r["input"], r["none_text"]) for r in recs])
    pairs = []
    for r in recs:
        for p_in, p_out in zip(r["input"].split("\n"), r["llm"]["text"].split("\n"),
                               strict=False):
            s_in, s_out = _SENT.split(p_in), _SENT.split(p_out)
            if len(s_in) != len(s_out):
                continue
            for x, y in zip(s_in, s_out, strict=True):
                if x != y and set(_words(_PH.sub(" ", y))) - set(_words(x)):
                    pairs.append((x, y))
    copies, doubles, digits, repeats = [], [], [], []
    for r in recs:
        w = _words(r["input"])
        grams = {tuple(w[i : i + 3]) for i in range(len(w) - 2)}
        for a in r["llm"]["audit"]:
            if a["method"] == "redacted":
                continue
            rep = _words(a["replacement"])
            if any(tuple(rep[i : i + 3]) in grams for i in range(len(rep) - 2)):
                copies.append((a["original"], a["replacement"]))
            if any(c.isdigit() for c in a["replacement"]):
                digits.append((a["original"], a["replacement"]))
        dbl = re.compile(r"\b(\w+)\s+\1\b", re.I)
        before = {m.group(0).lower() for m in dbl.finditer(r["input"])}
        doubles += [m.group(0) for m in dbl.finditer(r["llm"]["text"])
                    if m.group(0).lower() not in before]
    for x, y in pairs:
        seen: dict[tuple[str, str], int] = {}
        for pair in _pairs(y):
            seen[pair] = seen.get(pair, 0) + 1
        repeats += [" ".join(p) for p, n in seen.items()
                    if n > 1 and p not in set(_pairs(x)) and not set(p) <= _FUNCTION]
    out = {
        "documents": [r["id"] for r in recs],
        "garbling_copies_doubles_digits_repeats": [copies, doubles, digits, repeats],
        "words_rewritten": rw,
        "words_redacted": rd,
        "share_rewritten": rw / max(1, rw + rd),
        "per_doc": [(r["id"], r["llm"]["words_rewritten"], r["llm"]["words_redacted"],
                     r["cpu_seconds"], r["llm"]["prompt_tokens"], r["llm"]["cached_tokens"],
                     r["llm"]["generated_tokens"], r["llm"]["llm_calls"], r["load"])
                    for r in recs],
        "cpu_seconds_median": statistics.median(r["cpu_seconds"] for r in recs),
        "cosine_llm": statistics.fmean(cos_llm),
        "cosine_none": statistics.fmean(cos_none),
        "residual_llm": sum(analyze(idx, r["llm"]["text"], k=2, arity=1).linkable for r in recs),
        "residual_none": sum(analyze(idx, r["none_text"], k=2, arity=1).linkable for r in recs),
        "refusals": {},
        "samples": random.Random(args.seed).sample(pairs, min(args.samples, len(pairs))),
    }
    for r in recs:
        for k, v in r["llm"]["refusals"].items():
            out["refusals"][k] = out["refusals"].get(k, 0) + v
    print(json.dumps(out, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

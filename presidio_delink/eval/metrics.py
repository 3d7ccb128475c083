"""Pure functions from pipeline results to evaluation figures (no model, no index I/O)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from presidio_delink.linkage import LinkageReport
from presidio_delink.pipeline import DelinkResult


def n_minimal_ngrams(report: LinkageReport | None) -> int | None:
    """Distinct minimal linkable N-grams of a report (None without a report)."""
    return None if report is None else len(report.flagged)


def source_linked(
    report: LinkageReport | None, doc_ids: Sequence[str], source_id: str
) -> bool | None:
    """Whether the report's evidence singles out ``source_id`` among ``< k`` documents."""
    if report is None:
        return None
    wanted = {i for i, d in enumerate(doc_ids) if d == source_id}
    return bool(wanted & set(report.linked_ordinals()))


def doc_record(
    result: DelinkResult, doc_ids: Sequence[str] | None = None, source_id: str | None = None
) -> dict[str, Any]:
    """The figures of one delinked document.

    After delinking, a document that did not fail has no linkable N-gram (the pipeline's
    final check); a failed one is counted as still linkable and its N-grams are unknown.
    """
    rep = result.first_report
    words = result.n_words
    before = n_minimal_ngrams(rep)
    rec: dict[str, Any] = {
        "id": result.id,
        "failed": result.failed,
        "error": result.error,
        "words": words,
        "linkable_before": None if rep is None else rep.linkable,
        "linkable_after": result.linkable_after,
        "ngrams_before": before,
        "ngrams_after": 0 if not result.linkable_after else None,
        "combinations_before": None if rep is None else rep.n_combinations,
        "linked_docs_before": None if rep is None else len(rep.linked_ordinals()),
        "words_rewritten": result.words_rewritten,
        "words_redacted": result.words_redacted,
        "optimum_words": result.optimum_words,
        "share_rewritten": result.words_rewritten / words if words else 0.0,
        "share_redacted": result.words_redacted / words if words else 0.0,
        "passes": result.passes,
        "llm_calls": result.llm_calls,
        "llm_seconds": result.llm_seconds,
        "seconds": result.seconds,
    }
    if doc_ids is not None and source_id is not None:
        rec["source_linked_before"] = source_linked(rep, doc_ids, source_id)
    return rec


def _mean(xs: Sequence[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


def _share(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate :func:`doc_record` rows (plus optional ``cosine``, ``semantic_before``,
    ``semantic_after`` and ``fluency`` fields added by the runner) into one setting's
    figures.  Word shares are pooled over all words (long documents weigh more)."""
    n = len(records)
    ok = [r for r in records if not r["failed"]]
    words = sum(r["words"] for r in records)
    rewritten = sum(r["words_rewritten"] for r in records)
    redacted = sum(r["words_redacted"] for r in records)
    with_before = [r for r in records if r["ngrams_before"] is not None]
    ng_before = sum(r["ngrams_before"] for r in with_before)
    ng_after_known = [r for r in with_before if r["ngrams_after"] is not None]
    ng_after = sum(r["ngrams_after"] for r in ng_after_known)
    out: dict[str, Any] = {
        "docs": n,
        "failed": n - len(ok),
        "words": words,
        "linkage": {
            "linkable_docs_before": sum(bool(r["linkable_before"]) for r in records),
            "linkable_docs_after": sum(bool(r["linkable_after"]) for r in records),
            "share_linkable_before": _share([bool(r["linkable_before"]) for r in records]),
            "share_linkable_after": _share([bool(r["linkable_after"]) for r in records]),
            "ngrams_per_doc_before": ng_before / len(with_before) if with_before else None,
            "ngrams_per_doc_after": (
                ng_after / len(ng_after_known) if len(ng_after_known) == len(with_before) else None
            ),
            "share_ngrams_removed": (
                1 - ng_after / ng_before
                if ng_before and len(ng_after_known) == len(with_before)
                else None
            ),
            "source_linked_before": _share(
                [bool(r["source_linked_before"]) for r in records if "source_linked_before" in r]
            ),
        },
        "edit_cost": {
            "share_rewritten": rewritten / words if words else None,
            "share_redacted": redacted / words if words else None,
            "share_changed": (rewritten + redacted) / words if words else None,
            "share_optimum": sum(r["optimum_words"] for r in records) / words if words else None,
        },
        "speed": {
            "seconds_per_doc": _mean([r["seconds"] for r in records]),
            "llm_calls_per_doc": _mean([r["llm_calls"] for r in records]),
            "llm_seconds_per_doc": _mean([r["llm_seconds"] for r in records]),
        },
    }
    cos = [r["cosine"] for r in ok if r.get("cosine") is not None]
    out["semantic_integrity"] = {
        "mean_cosine": _mean(cos),
        "min_cosine": min(cos) if cos else None,
        "docs": len(cos),
    }
    sem: dict[str, Any] = {}
    for when in ("before", "after"):
        rows = [r[f"semantic_{when}"] for r in ok if r.get(f"semantic_{when}")]
        ranks = [s["source_rank"] for s in rows if s.get("source_rank") is not None]
        sem[f"share_source_first_{when}"] = _share([x == 1 for x in ranks])
        sem[f"median_source_rank_{when}"] = statistics.median(ranks) if ranks else None
        sem[f"mean_margin_{when}"] = _mean([s["margin"] for s in rows])
    sem["docs"] = len([r for r in ok if r.get("semantic_after")])
    out["semantic_linkage"] = sem
    cont: dict[str, Any] = {}
    for when in ("before", "after"):
        rows = [r[f"containment_{when}"] for r in ok if r.get(f"containment_{when}")]
        ranks = [s["source_rank"] for s in rows]
        cont[f"share_source_first_{when}"] = _share([x == 1 for x in ranks])
        found = [x for x in ranks if x is not None]
        cont[f"median_source_rank_{when}"] = statistics.median(found) if found else None
        cont[f"share_top5_{when}"] = _share([x is not None and x <= 5 for x in ranks])
        cont[f"share_margin_claims_{when}"] = _share(
            [bool(s.get("margin_claims", s.get("linked"))) for s in rows]
        )
    cont["docs"] = len([r for r in ok if r.get("containment_after")])
    out["containment_linkage"] = cont
    out["fluency"] = summarize_fluency(records)
    return out


def summarize_fluency(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Token-pooled perplexity of inputs and outputs over the scored documents."""
    rows = [r["fluency"] for r in records if isinstance(r.get("fluency"), dict)]
    out: dict[str, Any] = {"docs": len(rows)}
    for side in ("input", "output"):
        scored = [x[side] for x in rows if x.get(side) and x[side].get("tokens")]
        tokens = sum(x["tokens"] for x in scored)
        out[f"perplexity_{side}"] = (
            math.exp(sum(x["nll"] for x in scored) / tokens) if tokens else None
        )
        out[f"tokens_{side}"] = tokens
    return out

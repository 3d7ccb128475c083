"""Writers of evaluation results: JSON, a Markdown table, PNG plots, the HTML report."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from presidio_delink.errors import InputError
from presidio_delink.io import atomic_output

COLUMNS = (
    "setting",
    "docs",
    "failed",
    "linkable before",
    "linkable after",
    "N-grams/doc before",
    "N-grams/doc after",
    "N-grams removed",
    "cosine in/out",
    "rewritten",
    "redacted",
    "semantic top-1 before",
    "semantic top-1 after",
    "containment top-1 before",
    "containment top-1 after",
    "ppl in",
    "ppl out",
    "s/doc",
    "LLM calls/doc",
)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


def _num(x: float | None, digits: int = 2) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def table_rows(results: dict[str, Any]) -> list[list[str]]:
    """One row of :data:`COLUMNS` per setting."""
    rows = []
    for s in results["settings"]:
        m = s["summary"]
        lk, ec, sem, fl = m["linkage"], m["edit_cost"], m["semantic_linkage"], m["fluency"]
        n = m["docs"]
        rows.append(
            [
                s["label"],
                str(n),
                str(m["failed"]),
                f"{lk['linkable_docs_before']}/{n}",
                f"{lk['linkable_docs_after']}/{n}",
                _num(lk["ngrams_per_doc_before"], 1),
                _num(lk["ngrams_per_doc_after"], 1),
                _pct(lk["share_ngrams_removed"]),
                _num(m["semantic_integrity"]["mean_cosine"], 3),
                _pct(ec["share_rewritten"]),
                _pct(ec["share_redacted"]),
                _pct(sem.get("share_source_first_before")),
                _pct(sem.get("share_source_first_after")),
                _pct(m.get("containment_linkage", {}).get("share_source_first_before")),
                _pct(m.get("containment_linkage", {}).get("share_source_first_after")),
                _num(fl.get("perplexity_input"), 1),
                _num(fl.get("perplexity_output"), 1),
                _num(m["speed"]["seconds_per_doc"], 2),
                _num(m["speed"]["llm_calls_per_doc"], 1),
            ]
        )
    return rows


def markdown(results: dict[str, Any]) -> str:
    """A Markdown table of every setting, with the data set and fluency notes."""
    meta = results["meta"]
    lines = [
        f"**{meta['dataset']}**: {meta['description']}; {meta['test_docs']} test documents, "
        f"collection of {meta['collection_docs']}.",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(r) + " |" for r in table_rows(results)]
    notes = sorted(
        {
            s["summary"]["fluency"].get("reason") or ""
            for s in results["settings"]
            if s["summary"]["fluency"].get("perplexity_output") is None
        }
        - {""}
    )
    scored = [s for s in results["settings"] if s["summary"]["fluency"]["docs"]]
    if scored:
        fl = scored[0]["summary"]["fluency"]
        lines += [
            "",
            f"Perplexity: {fl.get('method')}; first {fl.get('tokens_per_text')} "
            f"tokens of the first {fl['docs']} documents.",
        ]
    for n in notes:
        lines.append(f"Perplexity n/a: {n}.")
    return "\n".join(lines) + "\n"


def write_json(results: dict[str, Any], path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(p) as f:
        f.write(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    return p


def load_json(path: str | Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read eval results {path}: {exc}") from exc
    if not isinstance(data, dict) or "settings" not in data:
        raise InputError(f"{path} holds no eval results")
    return data


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_tradeoff(results: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Privacy against utility, one point per setting (and per data set): share of words
    changed against residual linkable documents (left), N-grams per document (middle) and
    documents whose source is still the semantic nearest neighbour (right).  Hollow markers
    are the inputs (nothing changed)."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    panels = (
        ("share_linkable", "linkage", "documents linkable (share)"),
        ("ngrams_per_doc", "linkage", "minimal linkable N-grams per document"),
        ("share_source_first", "semantic_linkage", "source ranked first by cosine (share)"),
    )
    markers = "osD^vP*X"
    for d_no, res in enumerate(results):
        ds = res["meta"]["dataset"]
        for s_no, s in enumerate(res["settings"]):
            m = s["summary"]
            x = m["edit_cost"]["share_changed"] or 0.0
            color = f"C{s_no % 10}"
            for ax, (key, group, _) in zip(axes, panels, strict=True):
                before = m[group].get(f"{key}_before")
                after = m[group].get(f"{key}_after")
                if after is not None:
                    ax.scatter(
                        [x],
                        [after],
                        color=color,
                        marker=markers[d_no % len(markers)],
                        label=f"{ds} {s['label']}",
                    )
                if before is not None and s_no == 0:
                    ax.scatter(
                        [0],
                        [before],
                        facecolors="none",
                        edgecolors="k",
                        marker=markers[d_no % len(markers)],
                        label=f"{ds} input",
                    )
    for ax, (_, _, title) in zip(axes, panels, strict=True):
        ax.set_xlabel("share of words changed (rewritten + redacted)")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.05 + 0.03 * math.ceil(len(labels) / 3), 1, 1))
    return _save_png(plt, fig, path)


def _save_png(plt: Any, fig: Any, path: str | Path) -> Path:
    """Write ``fig`` to ``path`` as a PNG (atomically, folders made) and close it."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(p, "wb") as f:
        fig.savefig(f, format="png", dpi=110)
    plt.close(fig)
    return p


def plot_bars(results: dict[str, Any], path: str | Path) -> Path:
    """Bars per setting (k, arity, backend): words changed, semantic integrity, documents
    linkable before, and source still ranked first after."""
    plt = _pyplot()
    labels = [s["label"].replace(" llm=", "\n") for s in results["settings"]]
    sm = [s["summary"] for s in results["settings"]]
    panels = (
        ("words rewritten / redacted (share)", None),
        ("mean cosine input/output", [x["semantic_integrity"]["mean_cosine"] for x in sm]),
        (
            "minimal linkable N-grams per doc (before)",
            [x["linkage"]["ngrams_per_doc_before"] for x in sm],
        ),
        (
            "source ranked first by cosine, after (share)",
            [x["semantic_linkage"].get("share_source_first_after") for x in sm],
        ),
    )
    fig, axes = plt.subplots(2, 2, figsize=(12, 7.5))
    xs = list(range(len(labels)))
    for ax, (title, values) in zip(axes.flat, panels, strict=True):
        if values is None:
            rw = [x["edit_cost"]["share_rewritten"] or 0 for x in sm]
            rd = [x["edit_cost"]["share_redacted"] or 0 for x in sm]
            ax.bar(xs, rw, color="C2", label="rewritten (LLM)")
            ax.bar(xs, rd, bottom=rw, color="C7", label="redacted")
            ax.legend(fontsize=8)
        else:
            ax.bar(xs, [v if v is not None else 0 for v in values], color="C0")
        ax.set_title(title, fontsize=10)
        ax.set_xticks(xs, labels, fontsize=7)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"{results['meta']['dataset']}: per k, arity and backend", fontsize=11)
    fig.tight_layout()
    return _save_png(plt, fig, path)


def plot_frontier(results: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """The containment frontier: share of words changed (x) against the share of documents
    whose source the containment attack still ranks first (y), one point per setting (arity
    1..3, ``protect=containment``) and data set; hollow markers are the inputs."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 5))
    markers = "osD^vP*X"
    for d_no, res in enumerate(results):
        ds = res["meta"]["dataset"]
        mk = markers[d_no % len(markers)]
        for s_no, s in enumerate(res["settings"]):
            m = s["summary"]
            cont = m.get("containment_linkage") or {}
            after = cont.get("share_source_first_after")
            if after is not None:
                ax.scatter(
                    [m["edit_cost"]["share_changed"] or 0.0],
                    [after],
                    color=f"C{s_no % 10}",
                    marker=mk,
                    label=f"{ds} {s['label']}",
                )
            before = cont.get("share_source_first_before")
            if before is not None and s_no == 0:
                ax.scatter(
                    [0], [before], facecolors="none", edgecolors="k", marker=mk, label=f"{ds} input"
                )
    ax.set_xlabel("share of words changed (rewritten + redacted)")
    ax.set_ylabel("source ranked first by the containment attack (share)")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p


def write_all(results: dict[str, Any], out_dir: str | Path, stem: str | None = None) -> list[Path]:
    """``<stem>.json``, ``<stem>.md``, ``<stem>-tradeoff.png``, ``<stem>-bars.png`` and
    ``<stem>-frontier.png``."""
    out = Path(out_dir)
    stem = stem or results["meta"]["dataset"]
    md = out / f"{stem}.md"
    out.mkdir(parents=True, exist_ok=True)
    with atomic_output(md) as f:
        f.write(markdown(results))
    return [
        write_json(results, out / f"{stem}.json"),
        md,
        plot_tradeoff([results], out / f"{stem}-tradeoff.png"),
        plot_bars(results, out / f"{stem}-bars.png"),
        plot_frontier([results], out / f"{stem}-frontier.png"),
    ]


def at_a_glance(results: dict[str, Any]) -> str:
    """A few lines for the terminal."""
    meta = results["meta"]
    lines = [f"{meta['dataset']}: {meta['test_docs']} docs in {meta['seconds']} s"]
    for s in results["settings"]:
        m = s["summary"]
        lk, ec = m["linkage"], m["edit_cost"]
        sem = m["semantic_linkage"]
        lines.append(
            f"  {s['label']}: linkable {lk['linkable_docs_before']} -> "
            f"{lk['linkable_docs_after']}/{m['docs']}, changed {_pct(ec['share_changed'])} "
            f"(rewritten {_pct(ec['share_rewritten'])}), cosine "
            f"{_num(m['semantic_integrity']['mean_cosine'], 3)}, semantic top-1 "
            f"{_pct(sem.get('share_source_first_before'))} -> "
            f"{_pct(sem.get('share_source_first_after'))}, containment top-1 "
            f"{_pct(m.get('containment_linkage', {}).get('share_source_first_before'))} -> "
            f"{_pct(m.get('containment_linkage', {}).get('share_source_first_after'))}, "
            f"{_num(m['speed']['seconds_per_doc'])} s/doc"
        )
    return "\n".join(lines)

"""The HTML report: each document before and after, flagged spans and their replacements."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any

from presidio_delink.pipeline import DelinkResult

_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;max-width:80rem;color:#222}
h1{font-size:1.4rem} h2{font-size:1.1rem;margin-top:2rem;border-top:1px solid #ccc;padding-top:1rem}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:1.5rem}
.text{white-space:pre-wrap;font-size:.85rem;line-height:1.45;background:#fafafa;padding:.8rem;
border:1px solid #ddd;border-radius:4px}
mark.flag{background:#ffd3d3} sup.df{font-size:.7rem;color:#900;font-weight:bold;margin-left:1px}
mark.llm{background:#d4f5d4} mark.redacted{background:#ddd;color:#555}
.meta{font-size:.85rem;color:#555} table{border-collapse:collapse;font-size:.85rem}
td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left} .fail{color:#b00;font-weight:bold}
"""


def _highlight(
    text: str,
    spans: Iterable[tuple[int, int, str, str]],
    dfs: dict[tuple[int, int], tuple[int, int]] | None = None,
) -> str:
    """``spans``: (start, end, css class, tooltip); overlapping spans are merged.  With
    ``dfs`` (span -> (groups, document frequency)), each mark shows the lowest of the
    spans it merges, as a visible label (no hovering needed): ``df=D``, or
    ``groups=G (df=D)`` where the groups decide (fewer groups than documents)."""
    merged: list[tuple[int, int, str, str, tuple[int, int] | None]] = []
    dfs = dfs or {}
    for a, b, cls, tip in sorted(spans):
        df = dfs.get((a, b))
        if merged and a < merged[-1][1]:
            pa, pb, pc, pt, pdf = merged[-1]
            low = df if pdf is None else pdf if df is None else min(df, pdf)
            merged[-1] = (pa, max(pb, b), pc, f"{pt}; {tip}", low)
        else:
            merged.append((a, b, cls, tip, df))
    out: list[str] = []
    pos = 0
    for a, b, cls, tip, df in merged:
        out.append(html.escape(text[pos:a]))
        label = "" if df is None else f'<sup class="df">{_count(*df)}</sup>'
        out.append(
            f'<mark class="{cls}" title="{html.escape(tip)}">{html.escape(text[a:b])}</mark>'
            + label
        )
        pos = b
    out.append(html.escape(text[pos:]))
    return "".join(out)


def _count(groups: int, df: int) -> str:
    """A flagged span's label: its document frequency, and its groups where they decide."""
    return f"df={df}" if groups in (0, df) else f"groups={groups} (df={df})"


def _status(r: DelinkResult, ranks: Mapping[str, Any] | None, crowd: int) -> str:
    """The document's label, by the crowd rule: never "linkage-free" alone while an audit
    attack ranks its source within the first ``crowd`` places (the guarantee covers phrase
    search only)."""
    from presidio_delink.attacks.audit import exposed_by, first_by

    if r.failed:
        return "<span class='fail'>FAILED: " + html.escape(r.error or "") + "</span>"
    if ranks is None:
        return "linkage-free under phrase search (source unknown: not audited)"
    exposed = exposed_by(ranks, crowd)
    if exposed:
        first = first_by(ranks)
        how = (
            "source ranked first by " + ", ".join(first)
            if first
            else f"source ranked within the first {crowd} by " + ", ".join(exposed)
        )
        return (
            "<span class='fail'>exposed: "
            + html.escape(how)
            + " search</span> (no linkable phrase)"
        )
    return (
        "linkage-free under phrase search; every audit attack ranks at least "
        f"{crowd} other groups above the source"
    )


def _cell(value: Any) -> str:
    """A table cell: None as a dash (the attack did not rank the source), never 'None'."""
    return "&ndash;" if value is None else html.escape(str(value))


def _ranks_table(ranks: Mapping[str, Any]) -> str:
    rows = [
        "<table><tr><th>attack</th><th>source rank</th><th>crowd (groups within 5 % of the "
        "source or above)</th><th>top group</th><th>margin</th>"
        "<th>the calibrated margin claims the source</th></tr>"
    ]
    for name, v in ranks.items():
        margin = v.get("margin", v.get("top_score"))
        claims = v.get("margin_claims", v.get("linked"))
        rows.append(
            f"<tr><td>{html.escape(name)}</td><td>{_cell(v.get('source_rank'))}</td>"
            f"<td>{_cell(v.get('crowd'))}</td>"
            f"<td>{_cell(v.get('top_group'))}</td><td>{_cell(margin)}</td>"
            f"<td>{'yes' if claims else 'no'}</td></tr>"
        )
    rows.append("</table>")
    return "".join(rows)


def render(
    results: Iterable[DelinkResult],
    title: str = "presidio-delink report",
    source_ranks: Mapping[str, Mapping[str, Any]] | None = None,
    crowd: int | None = None,
) -> str:
    """A self-contained HTML page.

    Args:
        results: the documents.
        title: the page title.
        source_ranks: ``{document id: source_ranks record}`` of the audit (documents with
            a known source); shown per document, and a document whose source an attack
            ranks within the first ``crowd`` places is labelled exposed.
        crowd: the crowd rule's size (default
            :data:`~presidio_delink.settings.DEFAULT_CROWD`).
    """
    from presidio_delink.settings import DEFAULT_CROWD

    crowd = DEFAULT_CROWD if crowd is None else crowd
    source_ranks = source_ranks or {}
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
        f"</title><style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>",
        "<p class='meta'>Left: the input (after PII redaction), linkable N-grams in red, each "
        "followed by the number of collection documents it occurs in (df=1: found in one "
        "document); where the collection is grouped (all documents of one case or person) "
        "and the groups decide, by the number of groups, which k counts (groups=1 (df=3): "
        "three documents, all of one group). "
        "Right: the output, rewrites (candidates, generalisations, the LLM's) in green, "
        "redactions in grey.</p>",
        "<p class='fail'>Sensitive: this page shows the input and the phrases removed from "
        "it, which link to the source. Do not publish it; `presidio-delink release` writes "
        "the texts that may be shared.</p>",
    ]
    for r in results:
        parts.append(f"<h2>{html.escape(r.id)}</h2>")
        ranks = source_ranks.get(r.id)
        status = _status(r, ranks, crowd)
        parts.append(
            f"<p class='meta'>{status} &middot; {r.passes} pass(es) &middot; {r.n_words} words, "
            f"{r.words_rewritten} rewritten, {r.words_redacted} redacted (optimum "
            f"{r.optimum_words}) &middot; {r.llm_calls} LLM calls, {r.seconds:.2f} s</p>"
        )
        if ranks:
            parts.append(_ranks_table(ranks))
        before = []
        dfs: dict[tuple[int, int], tuple[int, int]] = {}
        if r.first_report is not None:
            for a, b, f in r.first_report.spans():
                before.append(
                    (a, b, "flag", f"{_count(f.groups, f.df)}, arity={f.arity}, {f.view}")
                )
                got = (f.groups or f.df, f.df)
                dfs[(a, b)] = min(dfs.get((a, b), got), got)
        after = [(a, b, label, label) for a, b, label in r.marks]
        parts.append("<div class='cols'>")
        parts.append(f"<div class='text'>{_highlight(r.input_text, before, dfs)}</div>")
        parts.append(f"<div class='text'>{_highlight(r.text or '', after)}</div></div>")
        if r.audit:
            parts.append(
                "<details><summary>audit</summary><table><tr><th>pass</th>"
                "<th>original</th><th>documents (groups)</th><th>arity</th><th>replacement</th>"
                "<th>method</th><th>note</th></tr>"
            )
            for e in r.audit:
                parts.append(
                    f"<tr><td>{e.pass_no}</td><td>{html.escape(e.original)}</td>"
                    f"<td>{_count(e.groups, e.df)}</td>"
                    f"<td>{e.arity}</td><td>{_replacement(e.replacement)}</td><td>{e.method}</td>"
                    f"<td>{html.escape(e.reason or '')}</td></tr>"
                )
            parts.append("</table></details>")
    parts.append("</body></html>")
    return "".join(parts)


def _replacement(new: str) -> str:
    """An audit entry's replacement as shown; a modifier left out has none."""
    return html.escape(new) if new else "<i>(left out)</i>"

"""``check`` and ``attack``: what is linkable in each document, and what it links to."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from presidio_delink.cli.common import (
    clean_errors,
    detection,
    detection_options,
    main,
    monitor_opt,
    open_out,
    semantic_monitor,
)
from presidio_delink.errors import ConfigError


@main.command("check")
@detection_options
@clean_errors
def check(**opts: Any) -> None:
    """Report the linkable N-grams of each document of INPUT... as JSONL: one record per
    flagged place of the text, with the views it links in ("ngram", "df" and "groups"
    are those of the view where it occurs in the fewest groups).  A summary goes to stderr.

    Exit code 0 when nothing is linkable, 1 when something is, 2 on error.
    """
    from presidio_delink.io import read_many
    from presidio_delink.linkage import analyze

    d, idx = detection(opts)
    k, arity = d.k, d.arity
    n_docs = n_linkable = n_spans = 0
    with open_out(d.output) as out:
        for doc_id, text in read_many(d.inputs):
            rep = analyze(idx, text, k=k, arity=arity, max_n=d.max_n)
            spans = rep.places(text)
            n_docs += 1
            n_linkable += rep.linkable
            n_spans += len(spans)
            rec = {"id": doc_id, "linkable": rep.linkable, "spans": spans}
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    click.echo(
        f"checked {n_docs} document(s) against {idx.n_docs} ({idx.stats()['n_groups']} groups), "
        f"k={k}, arity {arity}: {n_linkable} linkable, {n_spans} flagged place(s)"
        + (f" (mean {n_spans / n_docs:.1f} a document)" if n_docs else "")
        + ("; no input documents" if not n_docs else ""),
        err=True,
    )
    sys.exit(1 if n_linkable else 0)


@main.command("attack")
@detection_options
@click.option(
    "--method",
    type=click.Choice(["ngram", "containment", "ranked", "semantic", "all"]),
    default="ngram",
    show_default=True,
    help="ngram: rare phrases and combinations; containment: near-verbatim alignment; "
    "ranked: BM25 search for the whole text and each sentence (SQLite FTS5, four "
    "tokenisers); semantic: nearest by embedding (needs --semantic-monitor); all: each in "
    "turn.",
)
@monitor_opt("for --method semantic/all.")
@clean_errors
def attack(method: str, monitor_inputs: tuple[Path, ...], **opts: Any) -> None:
    """The adversary's view: which collection documents each document of INPUT... links to.

    ngram (default): through which N-grams (all combinations enumerated).  containment,
    ranked and semantic: {"id", "method", "ranking": top 10 groups, best first, "linked"}.
    ranked adds "claim" (the group, member, query and lead of the calibrated margin
    decision, or null) and "members": each member's top 3 groups for the whole text; its
    "ranking" scores each group by its best score relative to the leader's over the whole
    text and every sentence, so 1.0 means some member ranks it first for some query (the
    members' whole-text rankings tell them apart).  A summary line goes to stderr.

    Exit code 0 when no document links, 1 when some does, 2 on error.
    """
    from presidio_delink.io import read_many

    d, idx = detection(opts)
    k, arity, max_n, output, inputs = d.k, d.arity, d.max_n, d.output, d.inputs
    methods = ["ngram", "containment", "ranked", "semantic"] if method == "all" else [method]
    if method == "all" and not monitor_inputs:
        methods.remove("semantic")
        click.echo(
            "attack --method all: the semantic attack is skipped (it needs the collection's "
            "texts: --semantic-monitor INPUT)",
            err=True,
        )
    attacks = _make_attacks(idx, k, methods, monitor_inputs, output)
    linked = dict.fromkeys(methods, 0)
    n_docs = 0
    with open_out(output) as out:
        for doc_id, text in read_many(inputs):
            n_docs += 1
            for m in methods:
                rec = _attack_record(m, attacks.get(m), idx, doc_id, text, k, arity, max_n)
                if method == "all" and m == "ngram":
                    rec = {"id": doc_id, "method": "ngram", **rec}
                linked[m] += bool(rec.get("linkable", rec.get("linked")))
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    click.echo(
        f"attacked {n_docs} document(s), k={k}: "
        + "; ".join(f"{m} links {n}" for m, n in linked.items()),
        err=True,
    )
    sys.exit(1 if any(linked.values()) else 0)


def _attack_record(
    m: str, attack: Any, idx: Any, doc_id: str, text: str, k: int, arity: int,
    max_n: int | None,
) -> dict[str, Any]:
    """One attack's record of one document."""
    if m == "ngram":
        from presidio_delink.linkage import analyze

        rep = analyze(idx, text, k=k, arity=arity, max_n=max_n, exhaustive=True)
        links = rep.links()
        return {"id": doc_id, "linkable": bool(links), "n_combinations": rep.n_combinations,
                "links_to": links}
    if m == "ranked":
        return _ranked_record(attack, doc_id, text)
    return attack.verdict(text, top=10).to_json(doc_id)


def _ranked_record(attack: Any, doc_id: str, text: str) -> dict[str, Any]:
    """The ranked attack's JSONL record: its verdict, the claim and each member's top 3."""
    ps = attack.scores(text)
    claim = ps.claim()
    ranking = ps.combined()
    if claim is not None:  # the claimed group first, as Verdict has it
        ranking = [r for r in ranking if r.group == claim[0]] + [
            r for r in ranking if r.group != claim[0]
        ]
    rec: dict[str, Any] = {
        "id": doc_id,
        "method": "ranked",
        "ranking": [r.to_json() for r in ranking[:10]],
        "linked": claim is not None,
        "claim": None
        if claim is None
        else {
            "group": claim[0],
            "member": claim[1][0],
            "query": claim[1][1],
            "lead": round(claim[2], 4),
        },
        "members": {},
    }
    for m in attack.members:
        row = ps.row(m)
        top = ps.ranking(row, 3) if row is not None else []
        rec["members"][m] = [r.to_json() for r in top]
    return rec


def _make_attacks(
    idx: Any, k: int, methods: list[str], monitor_inputs: tuple[Path, ...], near: Path | None
) -> dict[str, Any]:
    """The containment / ranked / semantic attacks that ``methods`` need."""

    out: dict[str, Any] = {}
    if "containment" in methods:
        from presidio_delink.attacks.containment import ContainmentAttack

        out["containment"] = ContainmentAttack(idx, k=k)
    if "ranked" in methods:
        from presidio_delink.attacks.ranked import RankedAttack

        out["ranked"] = RankedAttack(idx, k=k)
    if "semantic" in methods:
        if not monitor_inputs:
            raise ConfigError("--method semantic needs the collection: --semantic-monitor INPUT")
        out["semantic"] = semantic_monitor(idx, k, monitor_inputs, near)
    return out

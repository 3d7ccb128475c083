"""``data convert`` and ``review``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from presidio_delink.cli.common import (
    clean_errors,
    files_opt,
    index_args,
    load_index,
    main,
    monitor_opt,
    output_opt,
    progress_opt,
    semantic_monitor,
    spacy_model_opt,
    switch_opt,
)


@main.group()
def data() -> None:
    """Evaluation data: convert the official releases into the layout `eval --data` reads."""


@data.command("convert")
@files_opt("--tab", "tab_files",
           "A TAB release file: echr_train.json, echr_dev.json, echr_test.json (repeatable).")
@files_opt("--wiki", "wiki_files",
           "Wikipedia biography annotations in the TAB schema, e.g. wiki_test.json (repeatable).")
@click.option(
    "--wiki-background",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Optional JSON {doc_id: text}: the rest of each biography (joins the collection).",
)
@switch_opt("--presidio-masks/--no-presidio-masks",
            help="Also write Presidio's masks of the test texts (tab-presidio, wiki-presidio).")
@spacy_model_opt
@progress_opt
@output_opt("The data folder to write (then: presidio-delink eval --data FOLDER).")
@clean_errors
def data_convert(
    tab_files: tuple[Path, ...],
    wiki_files: tuple[Path, ...],
    wiki_background: Path | None,
    presidio_masks: bool,
    spacy_model: str,
    progress: bool,
    output: Path,
) -> None:
    """Convert the official TAB release and the Wikipedia biography annotations into the
    folder layout of `presidio-delink eval --data`.

    TAB: the echr_*.json files of github.com/NorskRegnesentral/text-anonymization-benchmark
    (a JSON list of documents: doc_id, text, dataset_type, annotations {annotator:
    {entity_mentions: [{start_offset, end_offset, entity_type, identifier_type}]}}). The
    test documents become the test set (masks: every DIRECT or QUASI mention of any
    annotator); all documents form the collection.
    """
    from presidio_delink.datasets import convert

    if not tab_files and not wiki_files:
        raise click.UsageError("give --tab and/or --wiki files")
    masks = None
    if presidio_masks:
        from presidio_delink.presidio.engines import make_analyzer

        analyzer = make_analyzer(spacy_model)

        def masks(text: str) -> list[list[object]]:
            found = analyzer.analyze(text, language="en")
            return [[r.start, r.end, r.entity_type] for r in sorted(found, key=lambda r: r.start)]

    written = convert(output, tab_files, wiki_files, wiki_background, masks, progress)
    for p in written:
        click.echo(f"wrote {p}", err=True)


@main.command("review")
@index_args
@click.argument("delinked", type=click.Path(path_type=Path))
@click.option("--input", "input_path", type=click.Path(path_type=Path), default=None,
              help="The documents delink was given: shown beside each output, every edit marked.")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="Reviewed JSONL [default: DELINKED with .reviewed.jsonl]; the review state "
              "lies beside it (OUTPUT.review.sqlite) and is resumed when it exists.")
@click.option("--reviewer", default=None,
              help="Name recorded with every action [default: $USER].")
@click.option("--explain-docs", is_flag=True,
              help="Name the collection documents a refused phrase links to (their ids may "
              "be sensitive).")
@monitor_opt("add the semantic attack to the panel ('eval' extra).")
@click.option("--port", default=0, type=click.IntRange(0, 65535), help="[default: a free one]")
@clean_errors
def review(index_dir: Path, key_file: Path | None, k: int, arity: int, max_n: int | None,
           delinked: Path, input_path: Path | None, output: Path | None, reviewer: str | None,
           explain_docs: bool, monitor_inputs: tuple[Path, ...], port: int) -> None:
    """Review DELINKED (a delink output) in a local web page: check, edit, sign off.

    Serves on 127.0.0.1 and prints the page's address with its access token. Every change
    is verified against the index and the attack panel before it is saved.
    """
    from presidio_delink.review import ReviewSession, Verifier
    from presidio_delink.review.session import check_paths

    output = output or delinked.with_name(delinked.stem + ".reviewed.jsonl")
    check_paths(output, delinked, input_path, index_dir)
    idx = load_index(index_dir, key_file)
    attacks: dict[str, Any] = {}
    if monitor_inputs:
        attacks["semantic"] = semantic_monitor(idx, k, monitor_inputs, output)
    verifier = Verifier(idx, k=k, arity=arity, max_n=max_n, attacks=attacks,
                        explain_docs=explain_docs)
    who = reviewer or os.environ.get("USER") or "reviewer"
    session = ReviewSession(delinked, verifier, output, input_path=input_path, reviewer=who)
    from presidio_delink.review.server import ReviewServer

    server = ReviewServer(session, port=port)
    click.echo(f"review {len(session.records)} documents at {server.url}", err=True)
    click.echo("Ctrl-C stops the server; every answered action is already saved.", err=True)
    try:
        server.serve_forever()
    finally:
        session.close()

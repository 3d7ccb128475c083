"""``serve``: the HTTP JSON service (:mod:`presidio_delink.service`).

Its run options are ``delink``'s own: the options of the ``delink`` command that make
its settings, its LLM and its PII step are copied here (:data:`FROM_DELINK`), and the
settings, LLM and PII options are built from them as ``delink`` builds them, so a server
delinks a document exactly as ``delink`` would with the same options.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import click

from presidio_delink.cli.common import clean_errors, load_index, main
from presidio_delink.cli.delink_cmd import delink as delink_command

#: ``delink`` options a server has no use for: where documents come from and go to, and
#: how a batch is spread (``--workers`` is the server's own).
NOT_FROM_DELINK = frozenset({
    "inputs", "output", "report_path", "resume", "fresh", "workers", "dask_scheduler",
    "progress", "source_field", "monitor_inputs",
})
#: The options of ``delink`` that ``serve`` takes, as ``delink`` declares them.
FROM_DELINK = tuple(
    copy.copy(p) for p in delink_command.params if p.name not in NOT_FROM_DELINK
)


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Interface to listen on; any but this machine's needs --token-file.")
@click.option("--port", default=5003, show_default=True, type=click.IntRange(0, 65535),
              help="Port (0: a free one, printed at start).")
@click.option("--workers", "n_workers", default=1, show_default=True,
              type=click.IntRange(1, 256),
              help="Worker processes, forked after the index is loaded (they share its "
              "pages): each delinks one document at a time.")
@click.option("--token-file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None,
              help="File holding the bearer token that /check and /delink must send "
              "('Authorization: Bearer TOKEN').")
@clean_errors
def serve(host: str, port: int, n_workers: int, token_file: Path | None, **opts: Any) -> None:
    """Serve /check and /delink over HTTP (JSON) beside Presidio's analyzer and anonymizer.

    The index is loaded once and every request is delinked as `delink` would with the
    same options (same text, same edits, same audit).  GET /health gives the index's
    identity, GET /openapi.json the API.  Binds 127.0.0.1 unless --host and --token-file
    say otherwise; no TLS (put a proxy in front).  SIGTERM answers the requests in flight,
    then exits.  See docs/service.md.
    """
    from presidio_delink.batch import LLMOptions, PIIOptions
    from presidio_delink.service.handler import Handler
    from presidio_delink.service.server import ServiceConfig, check_host, serve
    from presidio_delink.settings import DelinkSettings

    check_host(host, token_file)  # before the index loads
    settings = DelinkSettings.from_mapping(
        {name: opts[name] for name in DelinkSettings.names() if name in opts}
    )
    llm = LLMOptions(opts["llm_spec"], opts["cache_path"], opts["allow_remote"],
                     opts["llm_timeout"])
    pii = PIIOptions(opts["redact_pii"], opts["spacy_model"], opts["risk_llm"],
                     opts["risk_threshold"], opts["pos_check"])
    idx = load_index(opts["index_dir"], opts["key_file"])
    click.echo(f"loading: index of {idx.n_docs} documents, the audit's readings", err=True)
    handler = Handler(idx, settings, llm, pii)
    handler.warm(delink=llm.spec.strip().lower() == "none")

    def ready(url: str) -> None:
        click.echo(f"serving {url} ({n_workers} worker{'s' * (n_workers > 1)}; "
                   f"GET {url}/openapi.json describes the API)", err=True)

    serve(handler, ServiceConfig(host, port, n_workers, token_file), ready=ready)
    click.echo("stopped", err=True)


serve.params.extend(FROM_DELINK)
main.add_command(serve)

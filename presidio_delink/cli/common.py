"""What every command shares: the ``main`` group, error handling (the only place that maps
errors to exit codes and configures logging), and the common options."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from presidio_delink import __version__
from presidio_delink.errors import ConfigError, DelinkError
from presidio_delink.settings import DEFAULT_SPACY_MODEL

log = logging.getLogger("presidio_delink")
F = TypeVar("F", bound=Callable[..., Any])


def clean_errors(func: F) -> F:
    """Turn library errors (and unexpected ones) into a one-line message and exit code 2."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except DelinkError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except BrokenPipeError:  # output piped into `head`
            sys.stderr.close()
            sys.exit(0)
        except KeyboardInterrupt as exc:
            from presidio_delink.batch import Terminated

            if isinstance(exc, Terminated):
                click.echo("terminated (SIGTERM)", err=True)
                sys.exit(143)
            click.echo("interrupted", err=True)
            sys.exit(2)
        except OSError as exc:  # names a file, never its content
            log.debug("OS error", exc_info=True)
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except Exception as exc:  # the CLI never dies with a traceback
            # Not the message: an unexpected error may quote document text (-vv shows it).
            log.debug("unexpected error", exc_info=True)
            click.echo(
                f"error: unexpected {type(exc).__name__}; run with -vv for details", err=True
            )
            sys.exit(2)

    return wrapper  # type: ignore[return-value]


@click.group()
@click.version_option(__version__, prog_name="presidio-delink")
@click.option("-v", "--verbose", count=True, help="-v for INFO, -vv for DEBUG (may show text).")
def main(verbose: int) -> None:
    """Find and remove search-based linkage from de-identified documents."""
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")


key_opt = click.option(
    "--key-file",
    type=click.Path(path_type=Path),
    default=None,
    help="Sign (build) or authenticate (load) the index metadata with the key in this file.",
)


def load_index(directory: Path, key_file: Path | None) -> Any:
    from presidio_delink.index import NgramIndex
    from presidio_delink.index.format import read_key

    return NgramIndex.load(directory, key=read_key(key_file))


def open_out(path: Path | None) -> Any:
    """``path`` written all or nothing (see :func:`~presidio_delink.io.atomic_output`), or
    stdout."""
    from presidio_delink.io import atomic_output

    return atomic_output(path) if path else contextlib.nullcontext(sys.stdout)


index_opt = click.option(
    "--index",
    "index_dir",
    required=True,
    type=click.Path(path_type=Path),
    help="Index directory of the reference collection.",
)
k_opt = click.option(
    "-k",
    "k",
    default=2,
    show_default=True,
    type=click.IntRange(2),
    help="A phrase found in fewer than K documents links.",
)
arity_opt = click.option(
    "--arity",
    default=1,
    show_default=True,
    type=click.IntRange(1, 3),
    help="Largest combination of N-grams the adversary intersects.",
)
maxn_opt = click.option(
    "--max-n",
    default=None,
    type=click.IntRange(1, 16),
    help="Longest N-gram (default: the index's).",
)


def number_opt(*decls: str, default: Any, low: int, high: int | None = None, help: str,
               **more: Any) -> Callable[[F], F]:
    """A whole-number option (``low`` to ``high``) whose default ``--help`` shows."""
    return click.option(*decls, default=default, show_default=True,
                        type=click.IntRange(low, high), help=help, **more)


def switch_opt(decl: str, *, default: bool = True, help: str | None = None) -> Callable[[F], F]:
    """An on/off pair (``--x/--no-x``) whose default ``--help`` shows."""
    return click.option(decl, default=default, show_default=True, help=help)


def choice_opt(*decls: str, choices: Sequence[str], default: Any, help: str,
               **more: Any) -> Callable[[F], F]:
    """An option taking one of ``choices``, whose default ``--help`` shows."""
    return click.option(*decls, type=click.Choice(choices), default=default, show_default=True,
                        help=help, **more)


def path_opt(*decls: str, help: str, folder: bool = False, **more: Any) -> Callable[[F], F]:
    """An optional path (a folder only, with ``folder``); default None unless ``more`` says."""
    more.setdefault("default", None)
    kind = click.Path(file_okay=False, path_type=Path) if folder else click.Path(path_type=Path)
    return click.option(*decls, type=kind, help=help, **more)


def output_opt(help: str | None = None) -> Callable[[F], F]:
    """``-o``/``--output``: the path a command must write."""
    return click.option("-o", "--output", required=True, type=click.Path(path_type=Path),
                        help=help)


def files_opt(decl: str, dest: str, help: str, **more: Any) -> Callable[[F], F]:
    """A repeatable option naming an existing file."""
    return click.option(decl, dest, multiple=True, help=help,
                        type=click.Path(exists=True, dir_okay=False, path_type=Path), **more)


progress_opt = switch_opt("--progress/--no-progress")
spacy_model_opt = click.option("--spacy-model", default=DEFAULT_SPACY_MODEL, show_default=True)


def stack(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """The decorators applied as if written one above the other, first on top."""

    def apply(func: F) -> F:
        for deco in reversed(decorators):
            func = deco(func)
        return func

    return apply


#: The index and the detection settings (``delink``, ``review``, ``check``, ``attack``).
index_args = stack(index_opt, key_opt, k_opt, arity_opt, maxn_opt)

#: The options and arguments that ``check`` and ``attack`` share.
detection_options = stack(
    index_args,
    click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
                 help="Write JSONL here instead of stdout."),
    click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path)),
)


@dataclass(frozen=True)
class Detection:
    """What ``check`` and ``attack`` are asked (:data:`detection_options`)."""

    index_dir: Path
    key_file: Path | None
    k: int
    arity: int
    max_n: int | None
    output: Path | None
    inputs: tuple[Path, ...]


def detection(opts: dict[str, Any]) -> tuple[Detection, Any]:
    """The options of :data:`detection_options`, their paths checked, and the index."""
    from presidio_delink.io import check_output_paths

    d = Detection(**opts)
    check_output_paths(
        {"--output": d.output}, d.inputs, {"index": d.index_dir, "key file": d.key_file}
    )
    return d, load_index(d.index_dir, d.key_file)


def monitor_opt(why: str) -> Callable[[F], F]:
    """``--semantic-monitor``: the collection's texts, for ``why``."""
    return click.option("--semantic-monitor", "monitor_inputs", multiple=True,
                        type=click.Path(path_type=Path),
                        help=f"The collection's texts (INPUT formats): {why}")


def spread_opts(what: str, shared: str) -> Callable[[F], F]:
    """``--workers`` and ``--dask-scheduler``: ``what`` runs in processes or on a cluster
    whose workers must share ``shared``."""
    return stack(
        click.option("--workers", type=click.IntRange(1), default=None,
                     help=f"Processes for {what}."),
        click.option("--dask-scheduler", default=None, metavar="ADDRESS",
                     help="Run on this Dask cluster (tcp://HOST:PORT; needs the "
                     f"'distributed' extra): its workers must share {shared}."),
    )


def semantic_monitor(idx: Any, k: int, monitor_inputs: tuple[Path, ...], near: Path | None) -> Any:
    from presidio_delink.attacks.semantic import SemanticMonitor
    from presidio_delink.eval.embeddings import Embedder
    from presidio_delink.io import read_many

    docs = list(read_many(monitor_inputs))
    group_of = dict(zip(idx.doc_ids, idx.doc_groups, strict=True))
    groups = [group_of.get(d, d) for d, _ in docs]
    cache = (near.parent if near else Path.cwd()) / ".delink-embeddings"
    click.echo(
        f"semantic attack: embedding the collection's {len(docs)} texts once, cached in "
        f"{cache} (a rerun on the same texts reads the cache)",
        err=True,
    )
    # progress=None: a bar on a terminal, counted in chunks, so it moves within a long text
    return SemanticMonitor.from_collection(
        docs, Embedder(), cache, progress=None, groups=groups, k=k
    )


def dask_client(address: str) -> Any:
    try:
        from distributed import Client
    except ImportError as exc:
        raise ConfigError(
            "--dask-scheduler needs Dask: pip install 'presidio-delink[distributed]'"
        ) from exc
    try:
        return Client(address, timeout=30)
    except (OSError, TimeoutError) as exc:
        raise ConfigError(f"cannot reach the Dask scheduler {address}") from exc

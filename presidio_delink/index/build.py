"""Building an index directory: the driver behind ``NgramIndex.build`` and
``NgramIndex.build_files``.

It validates the settings, owns the directory for the build (:class:`BuildLock`), streams
the documents into raw shards (phase 1: here, on a process pool, or read by Dask workers),
then runs the phases' tasks (:mod:`~presidio_delink.index.builder`, which describes the
three phases) in order and writes ``meta.json`` last.  The query side
(:mod:`~presidio_delink.index.ngram_index`) opens what this module writes.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
import os
import re
import shutil
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import BuildError, ConfigError, InputError
from presidio_delink.index.builder import (
    STORED_OVER,
    DaskRunner,
    PoolRunner,
    RawShard,
    Runner,
    ShardRef,
    build_view,
    build_views_side_by_side,
    check_doc_id,
    finish_shard,
)
from presidio_delink.index.doctable import build_doc_table
from presidio_delink.index.format import (
    BUILD_DIR,
    DOCS_DIR,
    FOLDS_DIR,
    FORMAT_NAME,
    FORMAT_VERSION,
    LOCK_FILE,
    META_FILE,
    SIG_FILE,
    VIEWS_DIR,
    write_meta,
)
from presidio_delink.index.vocab import VocabRef, merge_words, split_words, vocab_file
from presidio_delink.text import DEFAULT_MAX_N, DEFAULT_PLACEHOLDERS, Tokenizer
from presidio_delink.views import DEFAULT_VIEWS, VIEWS, resolve_views

log = logging.getLogger(__name__)

DEFAULT_SHARD_WORDS = 8_000_000
_SERIAL_FIRST = 200  # documents tokenised in this process before a pool is used


@dataclass(frozen=True)
class BuildSettings:
    """What shapes an index: the keywords :meth:`NgramIndex.build
    <presidio_delink.index.ngram_index.NgramIndex.build>` and ``build_files`` take besides
    how to run.  :meth:`plan` checks them.

    Attributes:
        max_n: longest N-gram in words.
        views: names of the views to build (see :mod:`presidio_delink.views`).
        placeholders: redaction placeholder patterns (segment boundaries).
        shard_words: words per shard; bounds peak memory.
        group_regex: derive a document's group from its id when it has none: the
            first capturing group of the first match (or the whole match).
        key: sign ``meta.json`` with HMAC-SHA256 under this key.
        n_parts: key-space partitions per view (default: one per build shard).
    """

    max_n: int = DEFAULT_MAX_N
    views: Sequence[str] = DEFAULT_VIEWS
    placeholders: tuple[str, ...] = DEFAULT_PLACEHOLDERS
    shard_words: int = DEFAULT_SHARD_WORDS
    group_regex: str | None = None
    key: bytes | None = None
    n_parts: int | None = None

    def plan(self) -> tuple[list[Any], dict[str, Tokenizer], re.Pattern[str] | None]:
        """The settings checked: the views, a tokenizer per word model, the regex."""
        specs = [VIEWS[n] for n in resolve_views(self.views, defaults=False)]
        toks = {
            v.fold: Tokenizer(max_n=self.max_n, placeholders=self.placeholders, fold=v.fold)
            for v in specs
        }
        if self.shard_words < 1:
            raise ConfigError(f"shard_words must be positive, got {self.shard_words}")
        if self.n_parts is not None and self.n_parts < 1:
            raise ConfigError(f"n_parts must be positive, got {self.n_parts}")
        return specs, toks, _compile_group_regex(self.group_regex)


def build_index(
    docs: Iterable[tuple[Any, ...]],
    directory: str | Path | None,
    settings: BuildSettings,
    *,
    progress: bool = False,
    workers: int = 1,
    dask_client: Any = None,
) -> Path:
    """Write an index of ``docs`` into ``directory`` (a new temporary directory when
    None) and return the directory.  Arguments and errors: :meth:`NgramIndex.build
    <presidio_delink.index.ngram_index.NgramIndex.build>`."""
    specs, toks, grx = settings.plan()
    if workers < 1:
        raise ConfigError(f"workers must be positive, got {workers}")
    out = (
        Path(tempfile.mkdtemp(prefix="delink-index-")) if directory is None else Path(directory)
    )
    with BuildLock(out):
        runner = DaskRunner(dask_client) if dask_client is not None else None
        _build_into(out, docs, settings, specs, toks, grx, progress, workers, runner)
    return out


def build_index_files(
    paths: Sequence[str | Path], directory: str | Path, settings: BuildSettings, *,
    dask_client: Any,
) -> Path:
    """Write an index of the input files into ``directory`` on a Dask cluster whose
    workers read the files themselves; return the directory.  See
    :meth:`NgramIndex.build_files <presidio_delink.index.ngram_index.NgramIndex.build_files>`."""
    specs, toks, grx = settings.plan()
    folds = list(toks)
    out = Path(directory)
    runner = DaskRunner(dask_client)
    with BuildLock(out):
        try:
            (out / BUILD_DIR).mkdir(mode=0o700)
            results = runner.map(
                _read_part,
                [
                    (str(p), i, folds, settings.max_n, settings.placeholders,
                     settings.shard_words,
                     str(out / BUILD_DIR / f"in-{i:05d}"), grx)
                    for i, p in enumerate(paths)
                ],
            )
            col = _Collector(out, folds, settings.shard_words, grx)
            for res in results:
                col.raws.extend(res["raws"])
                col.n_words += res["n_words"]
            if not col.n_docs:
                raise InputError("the collection has no documents")
            _finish(out, col, settings, specs, toks, runner, False)
        finally:
            shutil.rmtree(out / BUILD_DIR, ignore_errors=True)
    return out


def build_index_raw(
    directory: str | Path,
    settings: BuildSettings,
    write_raws: Callable[[Path, list[str]], tuple[list[dict[str, Any]], int]],
    *,
    workers: int = 1,
) -> Path:
    """Write an index into ``directory`` from raw shards that ``write_raws(folder,
    folds)`` writes into ``folder`` (as :class:`~.builder.RawShard` does) and describes
    (the shards' records and the number of words): phase 1 without tokenising, for
    ``index compact``, which reads the words back from the segments."""
    specs, toks, _ = settings.plan()
    out = Path(directory)
    with BuildLock(out):
        runner: Runner = PoolRunner(workers) if workers > 1 else Runner()
        try:
            (out / BUILD_DIR).mkdir(mode=0o700)
            col = _Collector(out, list(toks), settings.shard_words, None)
            col.raws, col.n_words = write_raws(out / BUILD_DIR, list(toks))
            if not col.n_docs:
                raise InputError("the collection has no documents")
            _finish(out, col, settings, specs, toks, runner, False)
        finally:
            runner.close()
            shutil.rmtree(out / BUILD_DIR, ignore_errors=True)
    return out


class BuildLock:
    """Exclusive ownership of a build directory.  A build that raises inside it (any
    exception, an interrupt too) is cleaned up on the way out: :meth:`clean` removes only
    what the build created, and the directory itself only if the build created it."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.created_dir = False
        self.held = False

    def __enter__(self) -> BuildLock:
        out = self.out
        if out.exists() and not out.is_dir():
            raise ConfigError(f"{out} exists and is not a directory")
        if not out.exists():
            try:
                out.mkdir(parents=True, mode=0o700)
                self.created_dir = True
            except FileExistsError:
                pass
            except OSError as exc:
                raise ConfigError(f"cannot create {out}: {exc.strerror}") from exc
        try:
            fd = os.open(out / LOCK_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError as exc:
            raise ConfigError(
                f"another index build is writing into {out} (or one was interrupted: "
                f"then remove {out / LOCK_FILE} and the partial files)"
            ) from exc
        except OSError as exc:
            raise ConfigError(f"cannot write into {out}: {exc.strerror}") from exc
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        self.held = True
        if any(p.name != LOCK_FILE for p in out.iterdir()):
            self._release()
            raise ConfigError(f"index directory {out} is not empty")
        return self

    def clean(self) -> None:
        for name in (META_FILE, SIG_FILE):
            (self.out / name).unlink(missing_ok=True)
        for name in (DOCS_DIR, VIEWS_DIR, FOLDS_DIR, BUILD_DIR):
            shutil.rmtree(self.out / name, ignore_errors=True)

    def _release(self) -> None:
        if self.held:
            (self.out / LOCK_FILE).unlink(missing_ok=True)
            self.held = False

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None and self.held:
            self.clean()
        self._release()
        if exc[0] is not None and self.created_dir:
            with contextlib.suppress(OSError):
                self.out.rmdir()  # only if empty: never what someone else put there


def _compile_group_regex(pattern: str | None) -> re.Pattern[str] | None:
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"invalid group regex {pattern!r}: {exc}") from exc


def _group_of(
    sid: str, item: tuple[Any, ...], grx: re.Pattern[str] | None
) -> str | None:
    group = item[2] if len(item) > 2 else None
    if group is not None:
        if not isinstance(group, str) or not group:
            raise InputError(f"document {sid!r}: 'group' must be a non-empty string")
        return group
    if grx is None:
        return None
    m = grx.search(sid)
    if m is None:
        raise InputError(f"document id {sid!r} does not match the group regex")
    got = m.group(1) if grx.groups else m.group(0)
    if not got:
        raise InputError(f"the group regex gives an empty group for document id {sid!r}")
    return got


def _tokenize_batch(
    texts: list[str], folds: list[str], max_n: int, placeholders: tuple[str, ...]
) -> list[tuple[list[str], np.ndarray, np.ndarray]]:
    """Task (``workers``): tokenise a batch of texts; per word model, the batch vocabulary,
    the texts' marked ids in it (concatenated) and the offset of each text."""
    toks = [Tokenizer(max_n=max_n, placeholders=placeholders, fold=f) for f in folds]
    vocabs: list[dict[str, int]] = [{} for _ in folds]
    caches: list[dict[str, Any]] = [{} for _ in folds]
    per_fold: list[list[list[int]]] = [[] for _ in folds]
    for t in texts:  # text by text: the word models share its scan
        for j, tok in enumerate(toks):
            per_fold[j].append(tok.encode_marked(t, vocabs[j], caches[j]))
    out = []
    for vocab, ids in zip(vocabs, per_fold, strict=True):
        offs = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum([len(x) for x in ids], out=offs[1:])
        flat = np.fromiter((i for x in ids for i in x), dtype=np.int32, count=int(offs[-1]))
        out.append((list(vocab), flat, offs))
    return out


def _read_part(
    path: str,
    number: int,
    folds: list[str],
    max_n: int,
    placeholders: tuple[str, ...],
    shard_words: int,
    out: str,
    grx: re.Pattern[str] | None,
) -> dict[str, Any]:
    """Task (Dask): read one input file and write its raw shards (with its documents'
    ids and groups); returns the shards written."""
    from presidio_delink.io import read_documents

    toks = {f: Tokenizer(max_n=max_n, placeholders=placeholders, fold=f) for f in folds}
    base = Path(out)
    base.mkdir(parents=True, mode=0o700)
    raws: list[dict[str, Any]] = []
    cur = RawShard(folds)
    n_words = 0
    for rec in read_documents(path, groups=True):
        doc_id, text, group = rec
        if not isinstance(text, str):
            raise InputError(f"{path}: document {doc_id!r}: text must be a string")
        sid, _, given = _admit(rec, grx)
        before = cur.n_words
        cur.add(cur.encode(text, toks), sid, given)
        n_words += cur.n_words - before
        if cur.n_words >= shard_words:
            raws.append(cur.write(base / f"raw-{len(raws):05d}"))
            cur = RawShard(folds)
    if cur.n_docs:
        raws.append(cur.write(base / f"raw-{len(raws):05d}"))
    return {"raws": raws, "n_words": n_words}


def _admit(item: Any, grx: re.Pattern[str] | None) -> tuple[str, str, str | None]:
    """A document item's id, text and group (given or from ``grx``), checked."""
    if not isinstance(item, tuple | list) or len(item) not in (2, 3):
        raise InputError("documents must be (doc_id, text) or (doc_id, text, group)")
    sid = check_doc_id(item[0])
    text = item[1]
    if not isinstance(text, str):
        raise InputError(f"document {sid!r}: text must be a string, got {type(text).__name__}")
    return sid, text, _group_of(sid, tuple(item), grx)


class _Collector:
    """Phase 1 bookkeeping: raw shards, each with its documents' ids and groups (this
    process keeps only the documents admitted and not yet tokenised)."""

    def __init__(self, out: Path, folds: list[str], shard_words: int, grx: Any) -> None:
        self.out = out
        self.folds = folds
        self.shard_words = shard_words
        self.grx = grx
        self.waiting: deque[tuple[str, str | None]] = deque()
        self.raws: list[dict[str, Any]] = []
        self.current = RawShard(folds)
        self.n_words = 0

    @property
    def n_docs(self) -> int:
        return sum(r["n_docs"] for r in self.raws) + self.current.n_docs

    def admit(self, item: Any) -> str:
        sid, text, group = _admit(item, self.grx)
        self.waiting.append((sid, group))
        return text

    def add_text(self, text: str, toks: dict[str, Tokenizer]) -> None:
        """Tokenise one document here and append it to the current shard."""
        self.add_marked(self.current.encode(text, toks))

    def add_marked(self, marked: dict[str, Any]) -> None:
        """Append one document's marked ids (in the current shard's vocabularies)."""
        before = self.current.n_words
        sid, group = self.waiting.popleft()  # documents are added in the order admitted
        self.current.add(marked, sid, group)
        self.n_words += self.current.n_words - before
        if self.current.n_words >= self.shard_words:
            self.flush()

    def flush(self) -> None:
        if self.current.n_docs:
            d = self.out / BUILD_DIR / f"raw-{len(self.raws):05d}"
            self.raws.append(self.current.write(d))
            self.current = RawShard(self.folds)


def _phase1_serial(
    col: _Collector, docs: Iterable[Any], toks: dict[str, Tokenizer], bar: Any
) -> None:
    for item in docs:
        col.add_text(col.admit(item), toks)
        if bar is not None:
            bar.update(1)


def _phase1_pool(
    col: _Collector,
    docs: Iterable[Any],
    toks: dict[str, Tokenizer],
    runner: PoolRunner,
    workers: int,
    bar: Any,
) -> None:
    folds = list(toks)
    t0 = next(iter(toks.values()))
    pending: deque[Any] = deque()

    def drain(limit: int) -> None:
        from concurrent.futures.process import BrokenProcessPool

        while len(pending) > limit:
            try:
                result = pending.popleft().result()
            except BrokenProcessPool as exc:
                raise BuildError("a build worker process died while tokenising") from exc
            n = len(result[0][2]) - 1
            remaps: dict[str, tuple[Any, np.ndarray]] = {}
            for i in range(n):
                cur = col.current
                marked = {}
                for f, (words, flat, offs) in zip(folds, result, strict=True):
                    got = remaps.get(f)
                    if got is None or got[0] is not cur:  # a new shard: its own vocabulary
                        local = cur.vocab[f]
                        remap = np.fromiter(
                            (local.setdefault(w, len(local)) for w in words),
                            dtype=np.int32,
                            count=len(words),
                        )
                        got = remaps[f] = (cur, remap)
                    seg = flat[offs[i] : offs[i + 1]]
                    # (a batch without words has an empty remap and only break marks)
                    marked[f] = (
                        np.where(seg >= 0, got[1][np.maximum(seg, 0)], seg) if len(got[1]) else seg
                    )
                col.add_marked(marked)
                if bar is not None:
                    bar.update(1)

    batch: list[str] = []
    serial = 0
    for item in docs:
        text = col.admit(item)
        if serial < _SERIAL_FIRST:  # a small collection never waits for a pool to start
            serial += 1
            col.add_text(text, toks)
            if bar is not None:
                bar.update(1)
            continue
        batch.append(text)
        if len(batch) >= 64:
            pending.append(
                runner.pool.submit(_tokenize_batch, batch, folds, t0.max_n, t0.placeholders)
            )
            batch = []
            drain(2 * workers)
    if batch:
        pending.append(
            runner.pool.submit(_tokenize_batch, batch, folds, t0.max_n, t0.placeholders)
        )
    drain(0)


def _build_into(
    out: Path,
    docs: Iterable[Any],
    settings: BuildSettings,
    specs: list[Any],
    toks: dict[str, Tokenizer],
    grx: re.Pattern[str] | None,
    progress: bool,
    workers: int,
    runner: Runner | None = None,
) -> None:
    folds = list(toks)
    col = _Collector(out, folds, settings.shard_words, grx)
    (out / BUILD_DIR).mkdir(mode=0o700)
    own_runner = runner is None
    if runner is None:
        runner = PoolRunner(workers) if workers > 1 else Runner()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(unit="doc", desc="indexing", leave=False)
    try:
        if isinstance(runner, PoolRunner):
            _phase1_pool(col, docs, toks, runner, workers, bar)
        else:
            _phase1_serial(col, docs, toks, bar)
        col.flush()
        if not col.n_docs:
            raise InputError("the collection has no documents")
        _finish(out, col, settings, specs, toks, runner, progress)
    finally:
        if bar is not None:
            bar.close()
        if own_runner:
            runner.close()
        shutil.rmtree(out / BUILD_DIR, ignore_errors=True)


def _finish(
    out: Path,
    col: _Collector,
    settings: BuildSettings,
    specs: list[Any],
    toks: dict[str, Tokenizer],
    runner: Runner,
    progress: bool,
) -> None:
    """Phase 1's end (document table, vocabularies, document ranges), phases 2 and 3,
    metadata.  Every step is a set of tasks on the runner; this process holds a few
    numbers per shard and per partition."""
    n_docs = col.n_docs
    max_n = settings.max_n
    parts = settings.n_parts or max(1, len(col.raws))
    bases = np.cumsum([0] + [r["n_docs"] for r in col.raws]).tolist()
    raw_dirs = [r["dir"] for r in col.raws]
    docs_meta, groups_meta = build_doc_table(
        col.raws, parts, any(r["any_group"] for r in col.raws), out / DOCS_DIR,
        out / BUILD_DIR / "doctable", runner,
    )
    folds_meta = []
    fold_refs: dict[str, tuple[list[Any], VocabRef, Path]] = {}
    for f in toks:
        fd = out / FOLDS_DIR / f
        (out / FOLDS_DIR).mkdir(mode=0o700, exist_ok=True)
        fd.mkdir(mode=0o700)
        vwork = out / BUILD_DIR / "vocab" / f
        vwork.mkdir(parents=True, mode=0o700)
        runner.map(split_words, [(r, f, parts) for r in raw_dirs])
        merged = runner.map(
            merge_words, [(p, f, raw_dirs, str(fd), str(vwork)) for p in range(parts)]
        )
        vocab = VocabRef(str(fd), tuple(n for n, _ in merged))
        shards = runner.map(
            finish_shard,
            [(r, f, i, vocab, str(vwork), fd / f"docs-{i:05d}") for i, r in enumerate(col.raws)],
        )
        shutil.rmtree(vwork, ignore_errors=True)
        folds_meta.append(
            {
                "name": f,
                "n_words": vocab.n_words,
                "vocab_parts": list(vocab.sizes),
                "files": {vocab_file(p): rec for p, (_, rec) in enumerate(merged)},
                "doc_shards": shards,
            }
        )
        fold_refs[f] = (shards, vocab, fd)
    views_meta = []
    (out / VIEWS_DIR).mkdir(mode=0o700)
    # What each view stored over another needs of it (see `shard.Layered`).
    ordered = sorted(specs, key=lambda v: list(VIEWS).index(v.name))
    parents: dict[str, str | None] = {}
    for v in ordered:
        parents[v.name] = next((o for o in STORED_OVER.get(v.name, ()) if o in parents), None)
    jobs: dict[str, dict[str, Any]] = {}
    for v in ordered:
        shards, vocab, fd = fold_refs[v.fold]
        refs = [
            ShardRef(
                directory=str(fd / f"docs-{i:05d}"),
                dtypes=sm["dtypes"],
                doc_base=bases[i],
                n_vocab=vocab.n_words,
                cross=v.cross,
                work=str(out / BUILD_DIR / "work" / v.name / f"s{i:05d}"),
                index=i,
            )
            for i, sm in enumerate(shards)
        ]
        jobs[v.name] = {
            "refs": refs,
            "vocab": vocab,
            "max_n": max_n,
            "n_docs": n_docs,
            "n_parts": parts,
            "out": out / VIEWS_DIR / v.name,
            "work": out / BUILD_DIR / "work" / v.name / "levels",
            "keep_levels": v.name in parents.values(),
        }
    if (
        isinstance(runner, PoolRunner)
        and len(jobs) > 1
        and max(len(col.raws), parts) < runner.workers
    ):
        # Too few shards and partitions to keep the workers busy within a view.
        if progress:
            log.info("building views %s side by side", ", ".join(jobs))
        results = build_views_side_by_side(jobs, parents, runner)
    else:
        results = {}
        for name, job in jobs.items():
            if progress:
                log.info("counting view %s", name)
            over = parents[name]
            results[name] = build_view(
                **job, runner=runner, parent=results[over][1] if over is not None else None
            )
    for v in ordered:
        views_meta.append(
            {
                "name": v.name,
                "stored_over": parents[v.name],
                "tokenizer": v.tokenizer(max_n, toks[v.fold].placeholders).settings(),
                "partitions": results[v.name][0],
            }
        )
    meta: dict[str, Any] = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "max_n": max_n,
        "n_docs": n_docs,
        "n_words": col.n_words,
        "folds": folds_meta,
        "views": views_meta,
        "docs": docs_meta,
        "groups": groups_meta,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    write_meta(out, meta, settings.key)

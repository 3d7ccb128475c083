"""`NgramIndex`: the N-gram key spaces (views) of a collection, its documents and groups.

One pass over the collection builds every view (:mod:`presidio_delink.views`): each word
model tokenises a document once, and its punctuation-breaking and punctuation-crossing
views take the same word ids with different segment breaks.

**Groups.**  ``k`` should count people (or cases), not documents: a collection often
holds several documents about one person.  Each document may carry a group; a phrase's
*group frequency* (distinct groups among its documents) is what ``k`` is compared with.
Without groups each document is its own group.  Group frequency is read from the posting
list only where it can matter: with groups of at most ``G`` documents, a phrase in ``df``
documents spans at least ``ceil(df / G)`` groups, so ``df >= (k - 1) * G + 1`` settles
``>= k`` without reading postings, and ``df < k`` settles ``< k``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import logging
import os
import re
import shutil
import tempfile
import weakref
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import BuildError, ConfigError, IndexFormatError, InputError
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
    FORMAT_NAME,
    FORMAT_VERSION,
    LOCK_FILE,
    META_FILE,
    SIG_FILE,
    read_meta,
    write_meta,
    write_private,
)
from presidio_delink.index.shard import FoldDocs, Layered, Partition
from presidio_delink.index.view_index import Lows, ViewIndex
from presidio_delink.index.vocab import (
    VocabRef,
    Vocabulary,
    merge_words,
    split_words,
    vocab_file,
)
from presidio_delink.text import DEFAULT_MAX_N, DEFAULT_PLACEHOLDERS, Tokenizer
from presidio_delink.views import DEFAULT_VIEWS, VIEWS, resolve_views

log = logging.getLogger(__name__)

DEFAULT_SHARD_WORDS = 8_000_000
_DOCS, _VIEWS, _FOLDS, _BUILD = "docs", "views", "folds", ".build"
_SERIAL_FIRST = 200  # documents tokenised in this process before a pool is used


class NgramIndex:
    """Inverted index of word N-grams (1..max_n words) of a reference collection, in
    several views, with optional document groups.

    Immutable once built.  Build with :meth:`build`, open with :meth:`load`.  Every
    query is exact for N-grams of any length.  The single-view query methods
    (:meth:`df`, :meth:`lookup`, ...) answer in the primary view (``folded``).
    """

    def __init__(
        self,
        directory: Path,
        meta: dict[str, Any],
        views: dict[str, ViewIndex],
        doc_ids: list[str] | None,
        groups: tuple[np.ndarray, list[str]] | None,
    ) -> None:
        self.directory = directory
        self.meta = meta
        self.views = views
        self.primary = views.get("folded") or next(iter(views.values()))
        # The document table: read on first use when not given (a build's own index, so
        # that the building process never holds it; see `doctable`).
        self._doc_ids = doc_ids
        self._groups = groups
        gm = meta["groups"]
        self.max_group_size = int(gm["max_group_size"]) if gm else 1
        self.n_groups = int(gm["n_groups"]) if gm else int(meta["n_docs"])
        # The primary view's words split at every punctuation mark: the finest offsets.
        p = self.primary.tokenizer
        self.tokenizer = Tokenizer(max_n=p.max_n, placeholders=p.placeholders)

    # -- building -------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        docs: Iterable[tuple[Any, ...]],
        directory: str | Path | None = None,
        *,
        max_n: int = DEFAULT_MAX_N,
        views: Sequence[str] = DEFAULT_VIEWS,
        placeholders: tuple[str, ...] = DEFAULT_PLACEHOLDERS,
        shard_words: int = DEFAULT_SHARD_WORDS,
        group_regex: str | None = None,
        key: bytes | None = None,
        progress: bool = False,
        workers: int = 1,
        n_parts: int | None = None,
        dask_client: Any = None,
    ) -> NgramIndex:
        """Build an index from ``(doc_id, text)`` or ``(doc_id, text, group)`` items.

        Args:
            docs: any iterable of such items; ids must be unique; a group is a string
                or None (the document is then its own group, unless ``group_regex``).
            directory: where to write the index (created; must be empty or absent).
                ``None`` builds into a temporary directory removed with the object.
            max_n: longest N-gram in words.
            views: names of the views to build (see :mod:`presidio_delink.views`).
            placeholders: redaction placeholder patterns (segment boundaries).
            shard_words: words per shard; bounds peak memory.
            group_regex: derive a document's group from its id when it has none: the
                first capturing group of the first match (or the whole match).
            key: sign ``meta.json`` with HMAC-SHA256 under this key.
            progress: show a progress bar on stderr.
            workers: processes for tokenising, counting and writing (1: this one).
            n_parts: key-space partitions per view (default: one per build shard).
            dask_client: run the counting and writing tasks on this
                ``dask.distributed.Client`` (the directory must be shared with its
                workers); see :meth:`build_files` for workers that read the input too.

        Raises:
            InputError: no documents, a duplicate or invalid id, a non-string text or
                group, an id that ``group_regex`` does not match.
            ConfigError: a bad setting, a non-empty directory, or another build
                writing into it.
        """
        specs, toks, grx = _plan(views, max_n, placeholders, shard_words, n_parts, group_regex)
        if workers < 1:
            raise ConfigError(f"workers must be positive, got {workers}")
        temp = directory is None
        out = (
            Path(tempfile.mkdtemp(prefix="delink-index-")) if directory is None else Path(directory)
        )
        with _BuildLock(out) as lock:
            try:
                runner = DaskRunner(dask_client) if dask_client is not None else None
                _build_into(
                    out, docs, specs, toks, max_n, shard_words, grx, key, progress,
                    workers, n_parts, runner,
                )
            except BaseException:
                lock.clean()
                raise
        index = cls._open(out, key, lazy=True)
        if temp:
            weakref.finalize(index, shutil.rmtree, out, True)
        return index

    @classmethod
    def build_files(
        cls,
        paths: Sequence[str | Path],
        directory: str | Path,
        *,
        dask_client: Any,
        max_n: int = DEFAULT_MAX_N,
        views: Sequence[str] = DEFAULT_VIEWS,
        placeholders: tuple[str, ...] = DEFAULT_PLACEHOLDERS,
        shard_words: int = DEFAULT_SHARD_WORDS,
        group_regex: str | None = None,
        key: bytes | None = None,
        n_parts: int | None = None,
    ) -> NgramIndex:
        """Build on a Dask cluster whose workers read the input files themselves: one
        task per input file tokenises it into raw shards in ``directory`` (which the
        workers and this process must share), then counting and writing run as tasks too.

        Documents are ordered by input file, then within each file, as :meth:`build`
        orders them, so the index answers exactly as a single-process build.
        """
        specs, toks, grx = _plan(views, max_n, placeholders, shard_words, n_parts, group_regex)
        folds = list(toks)
        out = Path(directory)
        runner = DaskRunner(dask_client)
        with _BuildLock(out) as lock:
            try:
                (out / _BUILD).mkdir(mode=0o700)
                results = runner.map(
                    _read_part,
                    [
                        (str(p), i, folds, max_n, placeholders, shard_words,
                         str(out / _BUILD / f"in-{i:05d}"), grx)
                        for i, p in enumerate(paths)
                    ],
                )
                col = _Collector(out, folds, shard_words, grx)
                for res in results:
                    col.raws.extend(res["raws"])
                    col.n_words += res["n_words"]
                if not col.n_docs:
                    raise InputError("the collection has no documents")
                _finish(out, col, specs, toks, max_n, key, n_parts, runner, False)
            except BaseException:
                lock.clean()
                raise
            finally:
                shutil.rmtree(out / _BUILD, ignore_errors=True)
        return cls._open(out, key, lazy=True)

    # -- loading --------------------------------------------------------------------
    @classmethod
    def load(
        cls, directory: str | Path, *, verify: bool = True, key: bytes | None = None
    ) -> NgramIndex:
        """Open a saved index (arrays are memory-mapped).

        Args:
            directory: the index directory.
            verify: also check every file's SHA-256 (reads the files once).
            key: the MAC key the index was signed with, if any.

        Raises:
            IndexFormatError: missing, truncated, corrupt, changed metadata, or another
                format version.
        """
        return cls._open(Path(directory), key, verify=verify)

    @classmethod
    def _open(
        cls, d: Path, key: bytes | None, verify: bool = False, lazy: bool = False
    ) -> NgramIndex:
        """:meth:`load`; ``lazy`` (a build's own index): the document table and the
        partitions' tries are read on first use, so that the building process holds
        nothing in proportion to the collection."""
        meta = read_meta(d, key)
        _check_files(d / _DOCS, meta["docs"]["files"], verify)
        n_docs = meta["n_docs"]
        gm = meta["groups"]
        if gm is not None:
            _check_files(d / _DOCS, gm["files"], verify)
        doc_ids = None
        groups = None
        if not lazy:
            doc_ids = _load_doc_ids(d, n_docs)
            groups = _load_groups(d / _DOCS, gm, n_docs) if gm is not None else None
        folds: dict[str, FoldDocs] = {}
        for fm in meta["folds"]:
            fd = d / _FOLDS / fm["name"]
            _check_files(fd, fm["files"], verify)
            for i, sm in enumerate(fm["doc_shards"]):
                _check_files(fd / f"docs-{i:05d}", sm["files"], verify)
            folds[fm["name"]] = FoldDocs(
                fd, Vocabulary(fd, fm["vocab_parts"]),
                [(sm["n_docs"], sm["dtypes"]) for sm in fm["doc_shards"]], n_docs, verify,
            )
            if folds[fm["name"]].n_vocab != fm["n_words"]:
                raise IndexFormatError(f"{fd}: the vocabulary does not match the metadata")
        views: dict[str, ViewIndex] = {}
        for vm in meta["views"]:
            vd = d / _VIEWS / vm["name"]
            for i, pm in enumerate(vm["partitions"]):
                _check_files(vd / f"part-{i:05d}", pm["files"], verify)
            try:
                tok = Tokenizer.from_settings(vm["tokenizer"])
                over = vm["stored_over"]
                parts = [
                    Layered(
                        Partition(vd / f"part-{i:05d}", pm["dtypes"], n_docs, verify, lazy),
                        views[over].parts[i] if over is not None else None,
                    )
                    for i, pm in enumerate(vm["partitions"])
                ]
                views[vm["name"]] = ViewIndex(
                    vm["name"], tok, parts, folds[tok.fold],
                    sum(pm["n_keys"] for pm in vm["partitions"]),
                )
            except (KeyError, TypeError, ValueError, ConfigError) as exc:
                raise IndexFormatError(f"{d}: view {vm.get('name')!r}: {exc}") from exc
        return cls(d, meta, views, doc_ids, groups)

    def save(self, directory: str | Path) -> Path:
        """Copy the index to ``directory`` (created; must not exist or be empty)."""
        out = Path(directory)
        if out.resolve() == self.directory.resolve():
            return out
        with _BuildLock(out) as lock:
            try:
                for src in sorted(self.directory.rglob("*")):
                    rel = src.relative_to(self.directory)
                    if rel.name == LOCK_FILE:
                        continue
                    dst = out / rel
                    if src.is_dir():
                        dst.mkdir(mode=0o700, exist_ok=True)
                    elif rel.name not in (META_FILE, SIG_FILE):
                        write_private(dst, src.read_bytes())
                for name in (META_FILE, SIG_FILE):  # last: only a complete copy loads
                    write_private(out / name, (self.directory / name).read_bytes())
            except BaseException:
                lock.clean()
                raise
        return out

    # -- properties -----------------------------------------------------------------
    @property
    def max_n(self) -> int:
        return self.primary.max_n

    @property
    def n_docs(self) -> int:
        return int(self.meta["n_docs"])

    @property
    def doc_ids(self) -> list[str]:
        """Document ids by ordinal."""
        if self._doc_ids is None:
            self._doc_ids = _load_doc_ids(self.directory, self.n_docs)
        return self._doc_ids

    @property
    def group_of(self) -> np.ndarray | None:
        """Each document's group number, or None without groups."""
        gm = self.meta["groups"]
        if gm is None:
            return None
        if self._groups is None:
            self._groups = _load_groups(self.directory / _DOCS, gm, self.n_docs)
        return self._groups[0]

    @property
    def group_ids(self) -> list[str] | None:
        """Group names by number, or None without groups."""
        return None if self.group_of is None or self._groups is None else self._groups[1]

    @property
    def has_groups(self) -> bool:
        return self.group_of is not None

    @property
    def doc_groups(self) -> list[str]:
        """Group of each document, by ordinal (its own id when it has no group)."""
        if self.group_of is None or self.group_ids is None:
            return self.doc_ids
        names = self.group_ids
        return [names[g] for g in self.group_of.tolist()]

    def stats(self) -> dict[str, object]:
        """Counts and sizes."""
        size = sum(p.stat().st_size for p in self.directory.rglob("*") if p.is_file())
        return {
            "format_version": FORMAT_VERSION,
            "n_docs": self.n_docs,
            "n_groups": self.n_groups,
            "max_group_size": self.max_group_size,
            "n_words": self.meta["n_words"],
            "max_n": self.max_n,
            "n_keys": sum(v.n_keys for v in self.views.values()),
            "views": {
                vm["name"]: {
                    "adversary": VIEWS[vm["name"]].adversary,
                    "stored_over": vm["stored_over"],
                    "n_partitions": len(vm["partitions"]),
                    "n_keys": sum(p["n_keys"] for p in vm["partitions"]),
                    "n_postings": sum(p["n_postings"] for p in vm["partitions"]),
                    "keys_per_n": {
                        n: sum(int(p.get(f"n_keys_{n}", 0)) for p in vm["partitions"])
                        for n in range(1, self.max_n + 1)
                    },
                    "tokenizer": vm["tokenizer"],
                }
                for vm in self.meta["views"]
            },
            "n_doc_shards": len(self.meta["folds"][0]["doc_shards"]),
            "bytes_on_disk": size,
        }

    # -- groups ---------------------------------------------------------------------
    def groups_of(self, ordinals: np.ndarray) -> np.ndarray:
        """Distinct group ordinals (sorted) of document ordinals."""
        if self.group_of is None:
            return np.asarray(ordinals, dtype=np.int64)
        return np.unique(self.group_of[np.asarray(ordinals, dtype=np.int64)])

    def docs_of_groups(self, groups: Iterable[int]) -> list[int]:
        """Document ordinals of the given group ordinals."""
        if self.group_of is None:
            return sorted(int(g) for g in groups)
        want = np.asarray(sorted(set(groups)), dtype=np.int64)
        return np.flatnonzero(np.isin(self.group_of, want)).tolist()

    def link_dfs(
        self,
        view: ViewIndex,
        keys: Sequence[str],
        lengths: Sequence[int],
        below: int,
        extends: Sequence[str] | None = None,
    ) -> tuple[list[list[int]], list[tuple[int, int] | None]]:
        """:meth:`ViewIndex.walk_keys` in *group* frequencies where it matters: every
        value below ``below`` is below it in groups, every value at or above it is (the row
        stops at the first value below ``below``).  A row cut short by groups has no entry
        (the caller looks it up again)."""
        if below < 2:
            return view.prefix_walk([k.split(" ") for k in keys], below)
        rows, last = view.walk_keys(keys, lengths, below, extends)
        if self.group_of is None:
            return rows, last
        settled = (below - 1) * self.max_group_size + 1
        for q, row in enumerate(rows):
            for n, d in enumerate(row):
                if below <= d < settled:
                    g = len(self.groups_of(view.lookup(keys[q].split(" ")[: n + 1])))
                    if g < below:
                        row[n] = g
                        del row[n + 1 :]
                        last[q] = None
                        break
        return rows, last

    def link_lows(
        self,
        view: ViewIndex,
        keys: Sequence[str],
        lengths: Sequence[int],
        below: int,
        extends: Sequence[str] | None = None,
    ) -> Lows:
        """What an arity-1 check needs of :meth:`link_dfs` (see
        :meth:`ViewIndex.walk_lows`)."""
        if below >= 2 and self.group_of is None:
            return view.walk_lows(keys, lengths, below, extends)
        rows, last = self.link_dfs(view, keys, lengths, below, extends)
        return Lows.of_rows(rows, last, below)

    # -- primary-view queries (one N-gram, raw text or normalised words) --------------
    def words_of(self, phrase: str, view: str | None = None) -> list[str]:
        """Normalised words of a phrase that must be a single segment."""
        v = self.views[view] if view else self.primary
        segs = v.tokenizer.word_segments(phrase)
        if len(segs) > 1:
            raise InputError(
                "the phrase crosses punctuation or a placeholder, so it is not one N-gram"
            )
        return segs[0] if segs else []

    def lookup(self, words: Sequence[str]) -> np.ndarray:
        """Document ordinals (sorted) of an N-gram given as normalised words."""
        return self.primary.lookup(words)

    def df_words(self, words: Sequence[str]) -> int:
        return self.primary.df_words(words)

    def df(self, phrase: str) -> int:
        """In how many documents does ``phrase`` (one N-gram, raw text) occur?"""
        return self.df_words(self.words_of(phrase))

    def postings(self, phrase: str) -> list[str]:
        """Ids of the documents that contain ``phrase`` (one N-gram, raw text)."""
        ids = self.doc_ids
        return [ids[i] for i in self.lookup(self.words_of(phrase)).tolist()]

    def df_keys(self, keys: Sequence[str]) -> np.ndarray:
        """Bulk document frequency of normalised keys (words joined by one space)."""
        return self.primary.df_keys(keys)

    def postings_keys(self, keys: Sequence[str]) -> list[np.ndarray]:
        return self.primary.postings_keys(keys)

    def prefix_dfs(self, words: Sequence[str], below: int) -> list[int]:
        return self.primary.prefix_dfs(words, below)

    def prefix_dfs_many(self, queries: Sequence[Sequence[str]], below: int) -> list[list[int]]:
        return self.primary.prefix_dfs_many(queries, below)

    def iter_keys(self) -> Iterator[tuple[str, int]]:
        return self.primary.iter_keys()

    def doc_words(self, ordinal: int) -> list[str]:
        """The primary view's normalised words of document ``ordinal``, ``""`` closing
        each segment (what an aligner needs to compare a text with its source)."""
        return self.primary.doc_words(ordinal)

    def doc_word_ids(self, ordinal: int) -> np.ndarray:
        """The primary view's word ids of document ``ordinal``, in order, segment marks
        dropped (:meth:`doc_words` as ids; decode with :meth:`word_of`)."""
        return self.primary.doc_word_ids(ordinal)

    def word_of(self, wid: int) -> str:
        """The primary view's word of a word id."""
        return self.primary.word_of(wid)


# -- building ---------------------------------------------------------------------------
class _BuildLock:
    """Exclusive ownership of a build directory; :meth:`clean` removes only what the
    build created (the directory itself only if the build created it)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.created_dir = False
        self.held = False

    def __enter__(self) -> _BuildLock:
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
        for name in (_DOCS, _VIEWS, _FOLDS, _BUILD):
            shutil.rmtree(self.out / name, ignore_errors=True)

    def _release(self) -> None:
        if self.held:
            (self.out / LOCK_FILE).unlink(missing_ok=True)
            self.held = False

    def __exit__(self, *exc: object) -> None:
        self._release()
        if exc[0] is not None and self.created_dir:
            with contextlib.suppress(OSError):
                self.out.rmdir()  # only if empty: never what someone else put there


def _plan(
    views: Sequence[str],
    max_n: int,
    placeholders: tuple[str, ...],
    shard_words: int,
    n_parts: int | None,
    group_regex: str | None,
) -> tuple[list[Any], dict[str, Tokenizer], re.Pattern[str] | None]:
    """Validate the build settings: the views, a tokenizer per word model, the regex."""
    specs = [VIEWS[n] for n in resolve_views(views, defaults=False)]
    toks = {v.fold: Tokenizer(max_n=max_n, placeholders=placeholders, fold=v.fold) for v in specs}
    if shard_words < 1:
        raise ConfigError(f"shard_words must be positive, got {shard_words}")
    if n_parts is not None and n_parts < 1:
        raise ConfigError(f"n_parts must be positive, got {n_parts}")
    return specs, toks, _compile_group_regex(group_regex)


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
            d = self.out / _BUILD / f"raw-{len(self.raws):05d}"
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
    from collections import deque

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
    specs: list[Any],
    toks: dict[str, Tokenizer],
    max_n: int,
    shard_words: int,
    grx: re.Pattern[str] | None,
    key: bytes | None,
    progress: bool,
    workers: int,
    n_parts: int | None,
    runner: Runner | None = None,
) -> None:
    folds = list(toks)
    col = _Collector(out, folds, shard_words, grx)
    (out / _BUILD).mkdir(mode=0o700)
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
        _finish(out, col, specs, toks, max_n, key, n_parts, runner, progress)
    finally:
        if bar is not None:
            bar.close()
        if own_runner:
            runner.close()
        shutil.rmtree(out / _BUILD, ignore_errors=True)


def _finish(
    out: Path,
    col: _Collector,
    specs: list[Any],
    toks: dict[str, Tokenizer],
    max_n: int,
    key: bytes | None,
    n_parts: int | None,
    runner: Runner,
    progress: bool,
) -> None:
    """Phase 1's end (document table, vocabularies, document ranges), phases 2 and 3,
    metadata.  Every step is a set of tasks on the runner; this process holds a few
    numbers per shard and per partition."""
    n_docs = col.n_docs
    parts = n_parts or max(1, len(col.raws))
    bases = np.cumsum([0] + [r["n_docs"] for r in col.raws]).tolist()
    raw_dirs = [r["dir"] for r in col.raws]
    docs_meta, groups_meta = build_doc_table(
        col.raws, parts, any(r["any_group"] for r in col.raws), out / _DOCS,
        out / _BUILD / "doctable", runner,
    )
    folds_meta = []
    fold_refs: dict[str, tuple[list[Any], VocabRef, Path]] = {}
    for f in toks:
        fd = out / _FOLDS / f
        (out / _FOLDS).mkdir(mode=0o700, exist_ok=True)
        fd.mkdir(mode=0o700)
        vwork = out / _BUILD / "vocab" / f
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
    (out / _VIEWS).mkdir(mode=0o700)
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
                work=str(out / _BUILD / "work" / v.name / f"s{i:05d}"),
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
            "out": out / _VIEWS / v.name,
            "work": out / _BUILD / "work" / v.name / "levels",
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
    write_meta(out, meta, key)


def _check_files(directory: Path, files: dict[str, Any], verify: bool) -> None:
    from presidio_delink.io import sha256_file

    for name, info in files.items():
        path = directory / name
        if not path.is_file():
            raise IndexFormatError(f"{path} is missing")
        if path.stat().st_size != info["size"]:
            raise IndexFormatError(f"{path} is truncated or corrupt (size differs)")
        if verify and sha256_file(path) != info["sha256"]:
            raise IndexFormatError(f"{path} is corrupt (checksum mismatch)")


def _load_doc_ids(d: Path, n_docs: int) -> list[str]:
    try:
        doc_ids = json.loads((d / _DOCS / "doc_ids.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IndexFormatError(f"cannot read {d / _DOCS / 'doc_ids.json'}") from exc
    if (
        not isinstance(doc_ids, list)
        or len(doc_ids) != n_docs
        or not all(isinstance(x, str) for x in doc_ids)
    ):
        raise IndexFormatError(f"{d}: the document table does not match the metadata")
    return doc_ids


def _load_groups(d: Path, gm: dict[str, Any], n_docs: int) -> tuple[np.ndarray, list[str]]:
    raw = (d / "groups.bin").read_bytes()
    dt = np.dtype(gm["dtype"])
    if len(raw) != n_docs * dt.itemsize:
        raise IndexFormatError(f"{d / 'groups.bin'} does not match the document count")
    group_of = np.frombuffer(raw, dtype=dt).astype(np.int64)
    try:
        names = json.loads((d / "group_ids.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IndexFormatError(f"cannot read {d / 'group_ids.json'}") from exc
    if (
        not isinstance(names, list)
        or len(names) != gm["n_groups"]
        or not all(isinstance(x, str) for x in names)
        or (len(group_of) and int(group_of.max()) >= len(names))
        or int(np.bincount(group_of, minlength=1).max()) != gm["max_group_size"]
    ):
        raise IndexFormatError(f"{d}: the group table does not match the metadata")
    return group_of, names

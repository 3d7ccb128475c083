"""`NgramIndex`: the N-gram key spaces (views) of a collection, its documents and groups.

This module is the query side: opening an index and looking N-grams up.  Building is in
:mod:`~presidio_delink.index.build` (the driver) and :mod:`~presidio_delink.index.builder`
(the phases' tasks): one pass over the collection builds every view
(:mod:`presidio_delink.views`), each word model tokenising a document once, and its
punctuation-breaking and punctuation-crossing views take the same word ids with different
segment breaks.

**Groups.**  ``k`` should count people (or cases), not documents: a collection often
holds several documents about one person.  Each document may carry a group; a phrase's
*group frequency* (distinct groups among its documents) is what ``k`` is compared with.
Without groups each document is its own group.  Group frequency is read from the posting
list only where it can matter: with groups of at most ``G`` documents, a phrase in ``df``
documents spans at least ``ceil(df / G)`` groups, so ``df >= (k - 1) * G + 1`` settles
``>= k`` without reading postings, and ``df < k`` settles ``< k``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import ConfigError, IndexFormatError, InputError
from presidio_delink.index.build import (
    BuildLock,
    BuildSettings,
    build_index,
    build_index_files,
)
from presidio_delink.index.format import (
    DOCS_DIR,
    FOLDS_DIR,
    FORMAT_VERSION,
    LOCK_FILE,
    META_FILE,
    SEGMENTS_FILE,
    SIG_FILE,
    VIEWS_DIR,
    read_meta,
    write_private,
)
from presidio_delink.index.readings import ReadingsStore, open_readings
from presidio_delink.index.shard import FoldDocs, Layered, Partition
from presidio_delink.index.verified import FileCheck
from presidio_delink.index.view_index import KeyWalk, Lows, ViewIndex
from presidio_delink.index.vocab import Vocabulary
from presidio_delink.text import Tokenizer
from presidio_delink.views import VIEWS

#: Opens a directory that lists segments (``segments.json``, written by ``index add`` and
#: ``index compact``): set by :mod:`~presidio_delink.index.segments`, which builds on this
#: module and is imported with the package.
SEGMENTS_OPENER: list[Callable[[Path, bytes | None, bool], NgramIndex]] = []


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
        #: The MAC key the index was opened with (signs what is stored with it later).
        self.key: bytes | None = None
        #: The ranked readings stored with the index (:mod:`~presidio_delink.index.
        #: readings`), or None for an index without them.
        self.readings: ReadingsStore | None = None

    # -- building -------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        docs: Iterable[tuple[Any, ...]],
        directory: str | Path | None = None,
        *,
        progress: bool = False,
        workers: int = 1,
        dask_client: Any = None,
        **settings: Any,
    ) -> NgramIndex:
        """Build an index from ``(doc_id, text)`` or ``(doc_id, text, group)`` items.

        Args:
            docs: any iterable of such items; ids must be unique; a group is a string
                or None (the document is then its own group, unless ``group_regex``).
            directory: where to write the index (created; must be empty or absent).
                ``None`` builds into a temporary directory removed with the object.
            progress: show a progress bar on stderr.
            workers: processes for tokenising, counting and writing (1: this one).
            dask_client: run the counting and writing tasks on this
                ``dask.distributed.Client`` (the directory must be shared with its
                workers); see :meth:`build_files` for workers that read the input too.
            settings: what shapes the index, by the names of
                :class:`~presidio_delink.index.build.BuildSettings` (``max_n``, ``views``,
                ``placeholders``, ``shard_words``, ``group_regex``, ``key``, ``n_parts``),
                each defaulting as it does there.

        Raises:
            InputError: no documents, a duplicate or invalid id, a non-string text or
                group, an id that ``group_regex`` does not match.
            ConfigError: a bad setting, a non-empty directory, or another build
                writing into it.
            TypeError: a setting :class:`~presidio_delink.index.build.BuildSettings`
                does not have.
        """
        temp = directory is None
        s = BuildSettings(**settings)
        out = build_index(
            docs, directory, s, progress=progress, workers=workers, dask_client=dask_client
        )
        index = cls._open(out, s.key, lazy=True)
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
        **settings: Any,
    ) -> NgramIndex:
        """Build on a Dask cluster whose workers read the input files themselves: one
        task per input file tokenises it into raw shards in ``directory`` (which the
        workers and this process must share), then counting and writing run as tasks too.

        Documents are ordered by input file, then within each file, as :meth:`build`
        orders them, so the index answers exactly as a single-process build.  ``settings``
        and the errors: as for :meth:`build`.
        """
        s = BuildSettings(**settings)
        out = build_index_files(paths, directory, s, dask_client=dask_client)
        return cls._open(out, s.key, lazy=True)

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
                format version; a segment that fails these checks, named.
        """
        d = Path(directory)
        if (d / SEGMENTS_FILE).exists():
            if not SEGMENTS_OPENER:
                raise IndexFormatError(f"{d} has segments: import presidio_delink.index")
            return SEGMENTS_OPENER[0](d, key, verify)
        return cls._open(d, key, verify=verify)

    @classmethod
    def _open(
        cls, d: Path, key: bytes | None, verify: bool = False, lazy: bool = False
    ) -> NgramIndex:
        """:meth:`load`; ``lazy`` (a build's own index): the document table and the
        partitions' tries are read on first use, so that the building process holds
        nothing in proportion to the collection."""
        meta = read_meta(d, key)
        # the files' checksums, each skipped where this user's verified record holds it
        check = FileCheck(d, verify, _meta_digest(meta) if verify else "", key)
        check(d / DOCS_DIR, meta["docs"]["files"])
        n_docs = meta["n_docs"]
        gm = meta["groups"]
        if gm is not None:
            check(d / DOCS_DIR, gm["files"])
        doc_ids = None
        groups = None
        if not lazy:
            doc_ids = _load_doc_ids(d, n_docs)
            groups = _load_groups(d / DOCS_DIR, gm, n_docs) if gm is not None else None
        folds: dict[str, FoldDocs] = {}
        for fm in meta["folds"]:
            fd = d / FOLDS_DIR / fm["name"]
            check(fd, fm["files"])
            for i, sm in enumerate(fm["doc_shards"]):
                check(fd / f"docs-{i:05d}", sm["files"])
            folds[fm["name"]] = FoldDocs(
                fd, Vocabulary(fd, fm["vocab_parts"]),
                [(sm["n_docs"], sm["dtypes"]) for sm in fm["doc_shards"]], n_docs, verify,
            )
            if folds[fm["name"]].n_vocab != fm["n_words"]:
                raise IndexFormatError(f"{fd}: the vocabulary does not match the metadata")
        views: dict[str, ViewIndex] = {}
        for vm in meta["views"]:
            vd = d / VIEWS_DIR / vm["name"]
            for i, pm in enumerate(vm["partitions"]):
                check(vd / f"part-{i:05d}", pm["files"])
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
        check.done()
        index = cls(d, meta, views, doc_ids, groups)
        index.key = key
        index.readings = open_readings(d, key, verify)
        return index

    def save(self, directory: str | Path) -> Path:
        """Copy the index to ``directory`` (created; must not exist or be empty)."""
        out = Path(directory)
        if out.resolve() == self.directory.resolve():
            return out
        with BuildLock(out):  # a failed copy is cleaned up as a failed build is
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
        return out

    # -- properties -----------------------------------------------------------------
    @property
    def max_n(self) -> int:
        return self.primary.max_n

    @property
    def n_docs(self) -> int:
        return int(self.meta["n_docs"])

    @property
    def identity_file(self) -> Path:
        """The signed file whose SHA-256 identifies what this index answers (``meta.json``;
        an index with segments: its ``segments.json``)."""
        return self.directory / META_FILE

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
            self._groups = _load_groups(self.directory / DOCS_DIR, gm, self.n_docs)
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
            # the stored ranked readings (None: runs build them; see index/readings.py)
            "readings": None if self.readings is None else {
                "n_readings": len(self.readings.names),
                "bytes_on_disk": sum(p.stat().st_size for p in
                                     self.readings.directory.rglob("*") if p.is_file()),
            },
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
        self, view: ViewIndex, walk: KeyWalk
    ) -> tuple[list[list[int]], list[tuple[int, int] | None]]:
        """:meth:`ViewIndex.walk_keys` in *group* frequencies where it matters: every
        value below ``walk.below`` is below it in groups, every value at or above it is
        (the row stops at the first value below).  A row cut short by groups has no entry
        (the caller looks it up again)."""
        keys, below = walk.keys, walk.below
        if below < 2:
            return view.prefix_walk([k.split(" ") for k in keys], below)
        rows, last = view.walk_keys(keys, walk.lengths, below, walk.extends)
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

    def link_lows(self, view: ViewIndex, walk: KeyWalk) -> Lows:
        """What an arity-1 check needs of :meth:`link_dfs` (see
        :meth:`ViewIndex.walk_lows`)."""
        if walk.below >= 2 and self.group_of is None:
            return view.walk_lows(walk.keys, walk.lengths, walk.below, walk.extends)
        rows, last = self.link_dfs(view, walk)
        return Lows.of_rows(rows, last, walk.below)

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


def _meta_digest(meta: dict[str, Any]) -> str:
    """A SHA-256 of authenticated metadata (its canonical JSON): what the verified record
    of the index's files is made under."""
    return hashlib.sha256(
        json.dumps(meta, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def _load_doc_ids(d: Path, n_docs: int) -> list[str]:
    try:
        doc_ids = json.loads((d / DOCS_DIR / "doc_ids.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IndexFormatError(f"cannot read {d / DOCS_DIR / 'doc_ids.json'}") from exc
    if (
        not isinstance(doc_ids, list)
        or len(doc_ids) != n_docs
        or not set(map(type, doc_ids)) <= {str}  # json.loads makes no subclass of str
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
        or not set(map(type, names)) <= {str}
        or (len(group_of) and int(group_of.max()) >= len(names))
        or int(np.bincount(group_of, minlength=1).max()) != gm["max_group_size"]
    ):
        raise IndexFormatError(f"{d}: the group table does not match the metadata")
    return group_of, names

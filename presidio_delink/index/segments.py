"""A growing index: ``index add`` writes segments, ``index compact`` merges them.

Layout of an index that has grown::

    IDX/segments.json    the segments, signed: the base (``"."``: the index at IDX itself,
                         or ``base-NNNNN/`` written by compact), then each added segment
                         (``seg-NNNNN/``), each with the SHA-256 of its ``meta.json``
    IDX/seg-NNNNN/       an index directory over one added batch (same settings as the base)

**Visibility.**  A segment is built in a temporary folder (``.seg-tmp-PID``), fsync'ed and
renamed; then a new ``segments.json`` is written to a temporary file, fsync'ed and renamed
over the old one.  A reader opens the manifest once and the segments it lists, so it sees
the index before or after an ``add`` or a ``compact``, never between.  What a killed
writer leaves (temporary folders, a segment no manifest lists, the files of a base that a
compact replaced) is ignored by readers and removed by the next writer.  One writer at a
time holds ``.segments-lock``.

**Authenticity.**  ``segments.json`` is signed like ``meta.json`` (SHA-256, or
HMAC-SHA256 with ``--key-file``), and each segment is an index whose own ``meta.json`` is
signed and lists its files' SHA-256.  A segment whose metadata is not the one listed, or
whose files or signature fail, is refused by name.

**Readings.**  The stored ranked readings hold whole-collection statistics (BM25's idf
and average length), so they are not read whole while an index has added segments.
Each part also stores its raw counts (``index add`` writes a segment's with it, in its
folder, signed like the rest), and the reader combines them into the readings a fresh
build would store (:mod:`~presidio_delink.index.segment_readings`).  Where a part lacks
them (an older index, or a segment added without them), runs build the readings in the
process, with a warning, until ``index compact`` writes one index again with its
readings.

**Compaction** reads every segment's documents back as word ids (the index keeps each
word model's words of every document) and builds one index over them, in segment order,
exactly as ``index build`` over all the documents would: the same documents, groups,
words and shards, so the same files but for the build time in ``meta.json``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import shutil
import signal
import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import ConfigError, IndexFormatError, InputError
from presidio_delink.index.build import (
    DEFAULT_SHARD_WORDS,
    BuildSettings,
    build_index,
    build_index_raw,
)
from presidio_delink.index.builder import RawShard
from presidio_delink.index.format import (
    DOCS_DIR,
    FOLDS_DIR,
    META_FILE,
    SEGMENTS_FILE,
    SIG_FILE,
    VIEWS_DIR,
    sign,
)
from presidio_delink.index.ngram_index import SEGMENTS_OPENER, NgramIndex
from presidio_delink.index.segment_reader import SegmentedIndex
from presidio_delink.index.segment_readings import combine
from presidio_delink.index.shard import FoldDocs
from presidio_delink.io import fsync_dir, sha256_file

log = logging.getLogger(__name__)

MANIFEST_FORMAT = "presidio-delink-segments"
WRITER_LOCK = ".segments-lock"
KILL_ENV = "PRESIDIO_DELINK_KILL_AT"
"""Test hook: a writer kills itself (SIGKILL) at the named point (``add:built``, ...)."""

_NAME = re.compile(r"(seg|base)-(\d{5})")
_TEMP_PREFIXES = (".seg-tmp-", ".compact-tmp-", ".segments.json.tmp-")
_OPENED: weakref.WeakKeyDictionary[NgramIndex, tuple[Path, str | None, bool]] = (
    weakref.WeakKeyDictionary()
)


def _kill_point(name: str) -> None:
    if os.environ.get(KILL_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)


# -- the manifest ------------------------------------------------------------------------
def _body_bytes(body: dict[str, Any]) -> bytes:
    return json.dumps(body, indent=1, sort_keys=True).encode("utf-8")


def manifest_digest(root: Path) -> str | None:
    """SHA-256 of ``segments.json``, or None when the index has none."""
    try:
        return hashlib.sha256((root / SEGMENTS_FILE).read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def read_manifest(root: Path, key: bytes | None) -> dict[str, Any] | None:
    """The authenticated manifest, or None for an index without segments.

    Raises:
        IndexFormatError: a manifest that is corrupt, outside its schema, or does not
            match its signature (or the key).
    """
    p = root / SEGMENTS_FILE
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise IndexFormatError(f"cannot read {p}: {exc.strerror}") from exc
    try:
        doc = json.loads(raw)
        sig = doc.pop("sig")
        alg, digest = sig["alg"], sig["digest"]
        if set(sig) != {"alg", "digest"} or not isinstance(digest, str):
            raise ValueError
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise IndexFormatError(f"{p} is corrupt") from exc
    if alg == "hmac-sha256" and key is None:
        raise IndexFormatError(f"{root} is signed with a key: pass its --key-file")
    if alg == "sha256" and key is not None:
        raise IndexFormatError(f"{root} is not signed with a key, but a key file was given")
    if not hmac.compare_digest(sign(_body_bytes(doc), key)["digest"], digest):
        raise IndexFormatError(
            f"{p} does not match its signature: the list of segments was changed or is "
            "corrupt" + (" (or the key is not the one it was written with)" if key else "")
        )
    _validate(doc, p)
    return dict(doc)


def _validate(doc: Any, p: Path) -> None:
    bad = IndexFormatError(f"{p}: malformed list of segments")
    if not isinstance(doc, dict) or set(doc) != {
        "format", "version", "base", "base_meta", "segments"
    }:
        raise bad
    if doc["format"] != MANIFEST_FORMAT or doc["version"] != 1:
        raise bad
    if doc["base"] != "." and not (
        isinstance(doc["base"], str) and _NAME.fullmatch(doc["base"])
        and doc["base"].startswith("base-")
    ):
        raise bad
    if not isinstance(doc["base_meta"], str) or not isinstance(doc["segments"], list):
        raise bad
    for rec in doc["segments"]:
        if (
            not isinstance(rec, dict) or set(rec) != {"dir", "meta", "n_docs"}
            or not isinstance(rec["dir"], str) or not rec["dir"].startswith("seg-")
            or not _NAME.fullmatch(rec["dir"]) or not isinstance(rec["meta"], str)
            or not isinstance(rec["n_docs"], int)
        ):
            raise bad


def _write_manifest(root: Path, body: dict[str, Any], key: bytes | None, op: str) -> None:
    """Swap in a new ``segments.json`` (temporary file, fsync, rename, fsync the folder)."""
    _validate(body, root / SEGMENTS_FILE)
    data = _body_bytes(body)
    doc = dict(body, sig=sign(data, key))
    tmp = root / f".segments.json.tmp-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, json.dumps(doc, indent=1, sort_keys=True).encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    _kill_point(f"{op}:manifest-written")
    os.replace(tmp, root / SEGMENTS_FILE)
    fsync_dir(root)


# -- opening -----------------------------------------------------------------------------
def open_index(root: Path, key: bytes | None, verify: bool) -> NgramIndex:
    """Open an index that may have segments (what :meth:`NgramIndex.load` calls when
    ``segments.json`` exists): the base alone when no segment was added, else a
    :class:`~presidio_delink.index.segment_reader.SegmentedIndex`.  A writer that swaps
    the manifest while this opens makes it open again once."""
    for attempt in (0, 1):
        before = manifest_digest(root)
        try:
            index = _open_once(root, key, verify)
        except IndexFormatError:
            if attempt == 0 and manifest_digest(root) != before:
                continue
            raise
        _OPENED[index] = (root, before, verify)
        return index
    raise AssertionError("unreachable")


def _open_once(root: Path, key: bytes | None, verify: bool) -> NgramIndex:
    m = read_manifest(root, key)
    if m is None:
        return NgramIndex._open(root, key, verify=verify)
    base_dir = root if m["base"] == "." else root / m["base"]
    _check_listed(base_dir, m["base_meta"], "its base" if m["base"] == "." else m["base"])
    base = NgramIndex._open(base_dir, key, verify=verify)
    segs = [base]
    for rec in m["segments"]:
        name = rec["dir"]
        sd = root / name
        _check_listed(sd, rec["meta"], f"segment {name}")
        try:
            seg = NgramIndex._open(sd, key, verify=verify)
        except IndexFormatError as exc:
            raise IndexFormatError(f"{root}: segment {name} is refused: {exc}") from exc
        if _settings(seg) != _settings(base):
            raise IndexFormatError(f"{root}: segment {name} was built with other settings")
        segs.append(seg)
    if len(segs) == 1:
        return base
    index = SegmentedIndex(root, segs, key)
    counts, why = combine([s.readings for s in segs], [s.n_docs for s in segs])
    if counts is not None:
        index.readings = counts  # type: ignore[assignment]
    elif base.readings is not None:
        log.warning(
            "the index at %s has %d added segments and %s: runs build the ranked readings "
            "in the process (slow on a large collection). Run `presidio-delink index "
            "compact %s` to store them again", root, len(segs) - 1, why, root,
        )
    return index


def _check_listed(d: Path, digest: str, what: str) -> None:
    p = d / META_FILE
    if not p.is_file():
        raise IndexFormatError(f"{d.parent if what != 'its base' else d}: {what} is missing")
    if not hmac.compare_digest(sha256_file(p), digest):
        raise IndexFormatError(
            f"{what} of the index is refused: its {META_FILE} is not the one the list of "
            f"segments names (changed or replaced): {p}"
        )


def _settings(index: NgramIndex) -> tuple[Any, ...]:
    return (index.meta["max_n"],
            tuple((v["name"], json.dumps(v["tokenizer"], sort_keys=True))
                  for v in index.meta["views"]))


def refresh(index: NgramIndex) -> NgramIndex:
    """The index as it is now: ``index`` itself when its segments did not change since it
    was opened, else the index opened again (what a long-lived process calls between
    documents or requests; the old object stays usable for work in progress)."""
    root, digest, verify = _OPENED.get(index, (index.directory, None, False))
    if manifest_digest(root) == digest:
        return index
    return NgramIndex.load(root, key=index.key, verify=verify)


# -- writing -----------------------------------------------------------------------------
class _WriterLock:
    """One ``add`` or ``compact`` at a time (a lock left by a killed writer is taken over)."""

    def __init__(self, root: Path) -> None:
        self.path = root / WRITER_LOCK

    def __enter__(self) -> _WriterLock:
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                try:
                    pid = int(self.path.read_text() or "0")
                except (OSError, ValueError):
                    pid = 0
                if pid > 0 and _alive(pid):
                    raise ConfigError(
                        f"another index add or compact (process {pid}) is writing to "
                        f"{self.path.parent}"
                    ) from None
                self.path.unlink(missing_ok=True)
                continue
            except OSError as exc:
                raise ConfigError(f"cannot write into {self.path.parent}: {exc.strerror}") from exc
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            return self
        raise ConfigError(f"cannot take {self.path}: remove it if no writer runs")

    def __exit__(self, *exc: object) -> None:
        self.path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _fsync_tree(d: Path) -> None:
    for dirpath, _dirs, files in os.walk(d):
        for f in files:
            fd = os.open(os.path.join(dirpath, f), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(Path(dirpath))


def _clean(root: Path, m: dict[str, Any] | None) -> None:
    """Remove what killed writers left: temporary folders and files, segments and bases
    the manifest does not list, the files of a base a compaction replaced."""
    listed = set() if m is None else {r["dir"] for r in m["segments"]} | {m["base"]}
    for p in root.iterdir():
        if p.name.startswith(_TEMP_PREFIXES) or (_NAME.fullmatch(p.name) and p.name not in listed):
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
    if m is not None and m["base"] != ".":
        _remove_base_files(root)


def _remove_base_files(root: Path) -> None:
    for name in ("readings", DOCS_DIR, FOLDS_DIR, VIEWS_DIR):
        shutil.rmtree(root / name, ignore_errors=True)
    for name in (META_FILE, SIG_FILE):
        (root / name).unlink(missing_ok=True)


def _next_name(root: Path, kind: str) -> str:
    used = [int(mt.group(2)) for p in root.iterdir() if (mt := _NAME.fullmatch(p.name))]
    return f"{kind}-{max(used, default=0) + 1:05d}"


def _base_settings(index: NgramIndex, key: bytes | None, **extra: Any) -> BuildSettings:
    views = [v["name"] for v in index.meta["views"]]
    return BuildSettings(
        max_n=index.max_n, views=views,
        placeholders=tuple(index.primary.tokenizer.placeholders), key=key, **extra,
    )


def _start(root: Path, key: bytes | None) -> dict[str, Any]:
    m = read_manifest(root, key)
    _clean(root, m)
    if m is None:
        if not (root / META_FILE).is_file():
            raise IndexFormatError(f"{root} is not a presidio-delink index (no {META_FILE})")
        m = {"format": MANIFEST_FORMAT, "version": 1, "base": ".",
             "base_meta": sha256_file(root / META_FILE), "segments": []}
    return m


def add_documents(
    directory: str | Path,
    docs: Iterable[tuple[Any, ...]],
    *,
    key: bytes | None = None,
    group_regex: str | None = None,
    shard_words: int = DEFAULT_SHARD_WORDS,
    workers: int = 1,
    progress: bool = False,
    dask_client: Any = None,
    after_build: Callable[[NgramIndex, NgramIndex], Any] | None = None,
) -> Path:
    """Add ``docs`` (as :meth:`NgramIndex.build` takes them) to the index at ``directory``
    as a new segment, visible at once and whole; return the segment's folder.

    A group that the index has already is joined (groups are matched by name).
    ``group_regex``: as the index was built with (it is not stored).  ``dask_client``:
    build the segment on that cluster (its workers must share ``directory``).
    ``after_build(segment, current)`` gets the new segment before it is listed, and the
    index it is added to (the CLI stores the segment's count tables there, so that runs
    read the grown index's ranked readings without building them).

    Raises:
        InputError: no documents, or an id that the index or the input has already
            (nothing is written then), or what :meth:`NgramIndex.build` refuses.
        IndexFormatError: the index does not open (a segment fails its checks: named).
        ConfigError: another writer holds the index.
    """
    root = Path(directory)
    with _WriterLock(root):
        m = _start(root, key)
        current = NgramIndex.load(root, key=key, verify=False)
        items = list(docs)
        have = set(current.doc_ids)
        seen: set[str] = set()
        dups: list[str] = []
        for it in items:
            sid = it[0] if isinstance(it, tuple | list) and it else None
            if isinstance(sid, str):
                if sid in have or sid in seen:
                    dups.append(sid)
                seen.add(sid)
        if dups:
            shown = ", ".join(repr(x) for x in dups[:5])
            raise InputError(
                f"{len(dups)} document id(s) are in the index already or repeated in the "
                f"input ({shown}{', ...' if len(dups) > 5 else ''}): nothing was added; "
                "give new documents new ids"
            )
        settings = _base_settings(current, key, group_regex=group_regex,
                                  shard_words=shard_words)
        tmp = root / f".seg-tmp-{os.getpid()}"
        build_index(items, tmp, settings, progress=progress, workers=workers,
                    dask_client=dask_client)
        if after_build is not None:
            after_build(NgramIndex._open(tmp, key), current)
        _kill_point("add:built")
        _fsync_tree(tmp)
        name = _next_name(root, "seg")
        os.rename(tmp, root / name)
        fsync_dir(root)
        _kill_point("add:renamed")
        rec = {"dir": name, "meta": sha256_file(root / name / META_FILE),
               "n_docs": len(items)}
        _write_manifest(root, dict(m, segments=[*m["segments"], rec]), key, "add")
        _kill_point("add:done")
        return root / name


def compact(
    directory: str | Path,
    *,
    key: bytes | None = None,
    shard_words: int = DEFAULT_SHARD_WORDS,
    workers: int = 1,
    after_build: Callable[[NgramIndex], Any] | None = None,
) -> Path | None:
    """Merge the segments of the index at ``directory`` into one index (written as
    ``base-NNNNN/`` and swapped in whole); return its folder, or None when the index
    has one segment already.  ``after_build`` gets the new index before it is swapped
    in (the CLI stores its readings there).  ``shard_words``: as given to
    ``index build`` (it decides the document ranges, not the answers).

    Raises:
        IndexFormatError: a segment fails its checks (named).
        ConfigError: another writer holds the index.
    """
    root = Path(directory)
    with _WriterLock(root):
        m = _start(root, key)
        if not m["segments"]:
            return None
        current = NgramIndex.load(root, key=key, verify=True)
        assert isinstance(current, SegmentedIndex)
        settings = _base_settings(current, key, shard_words=shard_words)
        tmp = root / f".compact-tmp-{os.getpid()}"
        build_index_raw(tmp, settings, _raw_writer(current.segments, current.has_groups,
                                                   shard_words), workers=workers)
        _kill_point("compact:built")
        if after_build is not None:
            after_build(NgramIndex._open(tmp, key))
        _fsync_tree(tmp)
        name = _next_name(root, "base")
        os.rename(tmp, root / name)
        fsync_dir(root)
        _kill_point("compact:renamed")
        body = {"format": MANIFEST_FORMAT, "version": 1, "base": name,
                "base_meta": sha256_file(root / name / META_FILE), "segments": []}
        _write_manifest(root, body, key, "compact")
        _kill_point("compact:swapped")
        _clean(root, body)
        return root / name


def _raw_writer(
    segs: Sequence[NgramIndex], grouped: bool, shard_words: int
) -> Callable[[Path, list[str]], tuple[list[dict[str, Any]], int]]:
    """Phase 1 of a build over the segments' documents, in order: each document's words
    per word model, read back from the segment (shards cut as a build cuts them)."""

    def write(folder: Path, folds: list[str]) -> tuple[list[dict[str, Any]], int]:
        raws: list[dict[str, Any]] = []
        n_words = 0
        cur = RawShard(folds)
        remaps: dict[tuple[str, int], np.ndarray] = {}
        for si, seg in enumerate(segs):
            by_fold: dict[str, FoldDocs] = {v.tokenizer.fold: v.docs for v in seg.views.values()}
            ids = seg.doc_ids
            names = seg.group_ids
            gof = seg.group_of
            for o, sid in enumerate(ids):
                marked: dict[str, np.ndarray] = {}
                for f in folds:
                    marked[f] = _marked(by_fold[f], o, cur.vocab[f], remaps, (f, si))
                group = None
                if grouped and gof is not None and names is not None:
                    g = names[int(gof[o])]
                    group = None if g == sid else g
                before = cur.n_words
                cur.add(marked, sid, group)
                n_words += cur.n_words - before
                if cur.n_words >= shard_words:
                    raws.append(cur.write(folder / f"raw-{len(raws):05d}"))
                    cur = RawShard(folds)
                    remaps.clear()
        if cur.n_docs:
            raws.append(cur.write(folder / f"raw-{len(raws):05d}"))
        return raws, n_words

    return write


def _marked(
    docs: FoldDocs, o: int, vocab: dict[str, int], remaps: dict[tuple[str, int], np.ndarray],
    where: tuple[str, int],
) -> np.ndarray:
    """Document ``o`` of a segment as a raw shard holds it: ids of the shard's vocabulary,
    -1 closing a segment of text, -2 at punctuation."""
    v = docs.n_vocab
    ids = docs.doc_ids(o)
    remap = remaps.get(where)
    if remap is None:
        remap = remaps[where] = np.full(max(v, 1), -1, dtype=np.int64)
    w = ids[ids < v]
    for x in np.unique(w[remap[w] < 0]).tolist():
        remap[x] = vocab.setdefault(docs.word(x), len(vocab))
    out = np.where(ids < v, remap[np.minimum(ids, max(v - 1, 0))], np.where(ids == v, -1, -2))
    return out.astype(np.int32)


SEGMENTS_OPENER.append(open_index)

"""Stored readings: the ranked attacks' postings, written once with the index and
memory-mapped by every process that reads them.

The ranked readings of the audit and of the protection (:mod:`presidio_delink.attacks.
fts5`: BM25 and TF-IDF over words, pairs, windows and character n-grams) each reduce the
collection to postings: per term, the units (documents, or groups) holding it and the
term's summand of the unit's score.  Built in every process they cost minutes on a large
collection; stored, a process maps them in milliseconds.  This module only stores and
maps named postings; what they hold is decided above it (``attacks``), which also builds
them (``presidio-delink index build`` and ``index readings``).

Layout (inside the index directory)::

    readings/readings.json   format, the index it belongs to (SHA-256 of its meta.json),
                             each reading's specification, counts and the size and
                             SHA-256 of each of its files
    readings/readings.sig    SHA-256 of readings.json, or HMAC-SHA256 with the index's key
    readings/NAME/terms.marisa   the reading's terms; a term's id is its trie id
    readings/NAME/ptr.bin    int64, n_terms + 1: term ``t``'s postings are ``ptr[t]:ptr[t+1]``
    readings/NAME/docs.bin   int32 units, ascending within a term
    readings/NAME/weights.bin    float64 summands (stored as computed: scores read from
                             them are bit-identical to scores from freshly built postings)
    readings/counts-TOK/     a count table (:class:`StoredCounts`): terms.marisa, ptr.bin
                             and docs.bin as above, tf.bin (int32 frequencies), lens.bin
                             (float64 document lengths), gid.bin (int64 ids over the
                             whole index; empty in a base), hash.bin (uint32 sorted
                             CRC-32 of the terms; empty in a base), and the postings in
                             code-point order (lexdocs.bin int32, lexgid.bin int64,
                             lexlf.bin float64 ``1 + ln tf``; empty where no cosine
                             reading needs them)

The count tables hold no statistic of the whole collection, so each part of a grown
index (its base and every segment ``index add`` writes) stores its own, and a reader over
the parts combines them (:mod:`~presidio_delink.index.segment_readings`).

Readings that belong to another index (its ``meta.json`` changed), whose signature fails,
or whose files are missing, truncated or (with ``verify``) differ from their checksums are
refused by name (:class:`~presidio_delink.errors.IndexFormatError`).  A file this user
already hashed, and that has not changed since by its size, times and inode, is trusted
without hashing it again (:mod:`~presidio_delink.index.verified`).  The folder is
written as a temporary folder, fsync'ed, and renamed into place: a reader sees the old
readings or the new ones, never a mix.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import shutil
import time
import zlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import ConfigError, IndexFormatError
from presidio_delink.index.format import META_FILE, file_record, write_private
from presidio_delink.index.shard import load_trie, map_array, save_trie, trie_ids
from presidio_delink.index.verified import RACY_NS, Stamp, VerifiedRecord, stamp
from presidio_delink.io import fsync_dir, sha256_file

__all__ = [
    "READINGS_DIR", "READINGS_FORMAT", "READINGS_VERSION", "ReadingsStore", "ReadingsWriter",
    "StoredCounts", "StoredPostings", "lex_order", "open_readings", "term_hashes",
    "write_counts",
    "write_reading",
]

READINGS_DIR = "readings"
READINGS_FILE = "readings.json"
READINGS_SIG = "readings.sig"
LOCK_NAME = ".readings.lock"
READINGS_FORMAT = "presidio-delink-readings"
READINGS_VERSION = 1
_FILES = {"terms.marisa": None, "ptr.bin": "<i8", "docs.bin": "<i4", "weights.bin": "<f8"}
#: A count table's files (see :class:`StoredCounts`).
_COUNT_FILES = {"terms.marisa": None, "ptr.bin": "<i8", "docs.bin": "<i4", "tf.bin": "<i4",
                "lens.bin": "<f8", "gid.bin": "<i8", "hash.bin": "<u4", "lexdocs.bin": "<i4",
                "lexgid.bin": "<i8", "lexlf.bin": "<f8"}


@dataclass(frozen=True)
class StoredPostings:
    """One reading's postings, memory-mapped.

    Attributes:
        terms: term -> id (a marisa trie: ``in``, ``[term]`` and ``get`` as a dict).
        ptr: ``(n_terms + 1,)`` offsets into ``docs`` and ``weights``.
        docs: units holding each term, ascending within a term.
        weights: the term's summand of each unit's score.
    """

    terms: Any
    ptr: np.ndarray
    docs: np.ndarray
    weights: np.ndarray


@dataclass(frozen=True)
class StoredCounts:
    """One tokenisation's raw counts over the documents of one index (a segment, or a
    base), memory-mapped: what a reader over several segments scores from, with the
    statistics of all of them (:mod:`~presidio_delink.index.segment_readings`).

    Attributes:
        terms: term -> local id (a marisa trie).
        ptr: ``(n_terms + 1,)`` offsets into ``docs`` and ``tf``.
        docs: the index's documents holding each term, ascending within a term.
        tf: the term's occurrences in each of them.
        lens: ``(n_docs,)`` each document's number of terms (float64, as BM25 reads it).
        gid: each local term's id over the whole index (the base's ids, then each
            segment's range in order; a term an earlier part holds has that part's id),
            or None where it is the local id (a base).
        lex: the postings by document, then by the term's code points (the order a
            TF-IDF norm is summed in): their documents, their terms' ids over the whole
            index and ``1 + ln tf``; None when not stored.
        hashes: the terms' :func:`term_hashes`, sorted (a segment's: a query asks
            its trie only for the terms whose hash it holds), or None (a base).
    """

    terms: Any
    ptr: np.ndarray
    docs: np.ndarray
    tf: np.ndarray
    lens: np.ndarray
    gid: np.ndarray | None
    lex: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    hashes: np.ndarray | None = None


def term_hashes(terms: Sequence[str]) -> np.ndarray:
    """CRC-32 of each term's UTF-8 (uint32): a filter in front of a segment's trie."""
    return np.fromiter((zlib.crc32(t.encode("utf-8")) for t in terms), dtype=np.uint32,
                       count=len(terms))


def lex_order(terms: Sequence[str], t_of: np.ndarray, d_of: np.ndarray) -> np.ndarray:
    """The postings ordered by document, then by their term's code points (``t_of``
    indexes ``terms``): an order that is the same for a document in any collection."""
    rank = np.empty(len(terms), dtype=np.int64)
    rank[sorted(range(len(terms)), key=terms.__getitem__)] = np.arange(len(terms))
    return np.lexsort((rank[t_of], d_of))


def _signature(data: bytes, key: bytes | None) -> dict[str, str]:
    if key is None:
        return {"alg": "sha256", "digest": hashlib.sha256(data).hexdigest()}
    return {"alg": "hmac-sha256", "digest": hmac.new(key, data, hashlib.sha256).hexdigest()}


def index_digest(index_dir: Path) -> str:
    """SHA-256 of the index's ``meta.json``: what binds readings to one index."""
    return sha256_file(index_dir / META_FILE)


class ReadingsWriter:
    """Write an index's readings one at a time, then :meth:`commit` them all at once.

    Args:
        index_dir: the index directory (its ``meta.json`` is the readings' binding).
        key: the index's MAC key (signs ``readings.json``), or None.
        extra: what the readings' builder records of itself (its code version, counts),
            stored in ``readings.json`` and given back by :attr:`ReadingsStore.extra`.
    """

    def __init__(self, index_dir: Path, key: bytes | None, extra: dict[str, Any],
                 durable: bool = True) -> None:
        self.index_dir = Path(index_dir)
        self.key = key
        self.extra = extra
        #: False: count tables' arrays are written without an fsync each (for a folder
        #: its writer fsyncs whole before it is listed: a segment's)
        self.durable = durable
        # one writer at a time (the lock goes with the process, killed or not); what a
        # killed writer left is removed
        # created 0600 like every file of the index (it holds nothing, but says who writes)
        fd = os.open(self.index_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        self._lock = os.fdopen(fd, "a+b")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            self._lock.close()
            raise ConfigError(
                f"another process is storing the readings of {self.index_dir}") from exc
        for stale in self.index_dir.glob(f".{READINGS_DIR}.*-*"):
            shutil.rmtree(stale, ignore_errors=True)
        self.tmp = self.index_dir / f".{READINGS_DIR}.tmp-{os.getpid()}"
        self.tmp.mkdir(mode=0o700)
        self.members: dict[str, dict[str, Any]] = {}

    def add(
        self, name: str, spec: list[Any], terms: list[str], ptr: np.ndarray,
        docs: np.ndarray, weights: np.ndarray,
    ) -> None:
        """Store one reading (see :func:`write_reading`)."""
        self.record(name, write_reading(self.tmp, name, spec, terms, ptr, docs, weights))

    def add_counts(self, name: str, spec: list[Any], terms: list[str], ptr: np.ndarray,
                   docs: np.ndarray, tf: np.ndarray, lens: np.ndarray, *, lex: bool,
                   link: Any = None) -> None:
        """Store one count table (see :func:`write_counts`)."""
        self.record(name, write_counts(self.tmp, name, spec, terms, ptr, docs, tf, lens,
                                       lex=lex, link=link, durable=self.durable))

    def record(self, name: str, rec: dict[str, Any]) -> None:
        """Count a reading :func:`write_reading` wrote into :attr:`tmp` (another process
        may have written it)."""
        if name in self.members:
            raise ValueError(f"repeated reading name {name!r}")
        self.members[name] = rec

    def commit(self) -> Path:
        """Sign ``readings.json`` and swap the folder into place (an older one removed)."""
        meta = {
            "format": READINGS_FORMAT,
            "version": READINGS_VERSION,
            "index": index_digest(self.index_dir),
            "extra": self.extra,
            "members": self.members,
        }
        data = json.dumps(meta, indent=1, sort_keys=True).encode("utf-8")
        write_private(self.tmp / READINGS_FILE, data)
        write_private(self.tmp / READINGS_SIG, json.dumps(_signature(data, self.key)).encode())
        fsync_dir(self.tmp)
        final = self.index_dir / READINGS_DIR
        old = self.index_dir / f".{READINGS_DIR}.old-{os.getpid()}"
        if final.exists():
            os.rename(final, old)
        os.rename(self.tmp, final)
        fsync_dir(self.index_dir)
        if old.exists():
            shutil.rmtree(old)  # a reader that opened it keeps its mapped files
        self._lock.close()
        return final

    def abort(self) -> None:
        """Remove what was written (nothing becomes visible)."""
        shutil.rmtree(self.tmp, ignore_errors=True)
        self._lock.close()


def write_reading(
    folder: Path, name: str, spec: list[Any], terms: list[str], ptr: np.ndarray,
    docs: np.ndarray, weights: np.ndarray,
) -> dict[str, Any]:
    """Write one reading into ``folder/name`` and return its record: ``terms[i]``'s
    postings are ``ptr[i]:ptr[i+1]`` of ``docs`` and ``weights``.  Re-ordered by trie id;
    each term's postings keep their order."""
    if "/" in name or name.startswith(".") or not name:
        raise ValueError(f"bad reading name {name!r}")
    d = folder / name
    d.mkdir(mode=0o700)
    _trie, new_ptr, src = _by_trie(d, terms, ptr)
    arrays = {"ptr.bin": new_ptr, "docs.bin": np.asarray(docs)[src],
              "weights.bin": np.asarray(weights)[src]}
    for fname, arr in arrays.items():
        write_private(d / fname, np.ascontiguousarray(arr, dtype=_FILES[fname]).tobytes())
    return {
        "spec": spec,
        "n_terms": len(terms),
        "n_postings": int(new_ptr[-1]),
        "files": {f: file_record(d / f) for f in _FILES},
    }


def _by_trie(d: Path, terms: list[str], ptr: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray]:
    """Save ``terms``' trie in ``d``; the postings' offsets in trie-id order and, for each
    posting in that order, its position in the given order."""
    trie = save_trie(terms, d / "terms.marisa")
    new_id = trie_ids(trie, terms)
    order = np.argsort(new_id, kind="stable")  # trie id -> old id
    lens: np.ndarray = np.diff(np.asarray(ptr, dtype=np.int64))[order].astype(np.int64)
    new_ptr = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    src = np.repeat(np.asarray(ptr[:-1], dtype=np.int64)[order] - new_ptr[:-1], lens)
    src += np.arange(int(new_ptr[-1]), dtype=np.int64)
    return trie, new_ptr, src


def write_counts(
    folder: Path, name: str, spec: list[Any], terms: list[str], ptr: np.ndarray,
    docs: np.ndarray, tf: np.ndarray, lens: np.ndarray, *, lex: bool, link: Any = None,
    durable: bool = True,
) -> dict[str, Any]:
    """Write one count table (:class:`StoredCounts`) into ``folder/name`` and return its
    record: ``terms[i]``'s postings are ``ptr[i]:ptr[i+1]`` of ``docs`` and ``tf``;
    ``lens`` per document.  ``lex``: store the code-point order (:func:`lex_order`).
    ``link``: given the terms in trie-id order, their ids over the whole index (None:
    the local ids, as for a base).  ``durable``: fsync each array file (else the caller
    fsyncs the folder)."""
    if "/" in name or name.startswith(".") or not name:
        raise ValueError(f"bad reading name {name!r}")
    d = folder / name
    d.mkdir(mode=0o700)
    trie, new_ptr, src = _by_trie(d, terms, ptr)
    new_docs = np.asarray(docs)[src]
    by_id = [""] * len(terms)
    for t, i in zip(terms, trie_ids(trie, terms).tolist(), strict=True):
        by_id[i] = t
    gid = link(by_id) if link is not None else None
    new_tf = np.asarray(tf)[src]
    empty = np.empty(0)
    arrays = {"ptr.bin": new_ptr, "docs.bin": new_docs, "tf.bin": new_tf,
              "lens.bin": lens, "gid.bin": empty if gid is None else gid,
              "hash.bin": empty if gid is None else np.sort(term_hashes(by_id)),
              "lexdocs.bin": empty, "lexgid.bin": empty, "lexlf.bin": empty}
    if lex:
        t_of = np.repeat(np.arange(len(terms), dtype=np.int64), np.diff(new_ptr))
        perm = lex_order(by_id, t_of, new_docs)
        arrays["lexdocs.bin"] = new_docs[perm]
        arrays["lexgid.bin"] = (t_of if gid is None else gid[t_of])[perm]
        arrays["lexlf.bin"] = (1.0 + np.log(new_tf.astype(np.float64)))[perm]
    for fname, arr in arrays.items():
        data = np.ascontiguousarray(arr, dtype=_COUNT_FILES[fname]).tobytes()
        if durable:
            write_private(d / fname, data)
        else:  # created 0600 like every file of the index; its folder is fsync'ed whole
            fd = os.open(d / fname, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
    return {
        "spec": spec,
        "n_terms": len(terms),
        "n_postings": int(new_ptr[-1]),
        "files": {f: file_record(d / f) for f in _COUNT_FILES},
    }


class ReadingsStore:
    """The readings stored with one index (see the module docstring).

    Every file is mapped when the store opens (cheap: nothing is read), so a process
    that opened the readings keeps them whole even when ``index readings`` swaps in
    new ones; with ``verify`` each reading's files are checked against their SHA-256
    when it is first read, unless the verified record (``manifest``: the SHA-256 of the
    authenticated ``readings.json``; ``key``: the index's) says this user hashed them
    already and they have not changed since (:mod:`~presidio_delink.index.verified`)."""

    def __init__(self, directory: Path, meta: dict[str, Any], verify: bool,
                 key: bytes | None = None, manifest: str | None = None) -> None:
        self.directory = directory
        self.meta = meta
        self.verify = verify
        self.extra: dict[str, Any] = meta["extra"]
        self._record = (VerifiedRecord.open(directory, manifest, key)
                        if verify and manifest is not None else None)
        self._opened_ns = time.time_ns()  # before any file is stamped
        self._mapped = {name: self._map(name, rec) for name, rec in meta["members"].items()}
        self._checked: set[str] = set()

    @property
    def names(self) -> list[str]:
        """The stored readings (postings with their weights)."""
        return [n for n, r in self.meta["members"].items() if "weights.bin" in r["files"]]

    @property
    def tables(self) -> list[str]:
        """The stored count tables (:class:`StoredCounts`)."""
        return [n for n, r in self.meta["members"].items() if "tf.bin" in r["files"]]

    def spec(self, name: str) -> list[Any] | None:
        rec = self.meta["members"].get(name)
        return None if rec is None else list(rec["spec"])

    def _map(self, name: str, rec: dict[str, Any]
             ) -> tuple[Any, dict[str, Any], dict[str, Stamp | None]]:
        d = self.directory / name
        stamps: dict[str, Stamp | None] = {}
        for fname, want in rec["files"].items():
            p = d / fname
            try:
                st = os.stat(p)
            except OSError as exc:
                raise IndexFormatError(
                    f"{p}: stored reading file missing: {exc.strerror}; store the readings "
                    "again (presidio-delink index readings)") from exc
            size = st.st_size
            stamps[fname] = (st.st_dev, st.st_ino, size, st.st_mtime_ns, st.st_ctime_ns)
            if size != want["size"]:
                raise IndexFormatError(
                    f"{p} does not match readings.json (changed or truncated); store the "
                    "readings again (presidio-delink index readings)")
        kinds = _COUNT_FILES if "tf.bin" in rec["files"] else _FILES
        arr = {f: map_array(d / f, t) for f, t in kinds.items() if t is not None}
        terms = load_trie(d / "terms.marisa")
        n_post = len(arr["docs.bin"])
        ok = (len(arr["ptr.bin"]) == rec["n_terms"] + 1 and len(terms) == rec["n_terms"]
              and n_post == rec["n_postings"])
        got: StoredPostings | StoredCounts
        if kinds is _FILES:
            got = StoredPostings(terms, arr["ptr.bin"], arr["docs.bin"], arr["weights.bin"])
            ok = ok and len(got.weights) == n_post
        else:
            gid, hashes = arr["gid.bin"], arr["hash.bin"]
            lex = (arr["lexdocs.bin"], arr["lexgid.bin"], arr["lexlf.bin"])
            got = StoredCounts(terms, arr["ptr.bin"], arr["docs.bin"], arr["tf.bin"],
                               arr["lens.bin"], gid if len(gid) else None,
                               lex if len(lex[0]) else None, hashes if len(hashes) else None)
            ok = (ok and len(got.tf) == n_post and len(gid) in (0, rec["n_terms"])
                  and {len(x) for x in lex} in ({0}, {n_post}) and len(hashes) == len(gid))
        if not ok:
            raise IndexFormatError(f"{d}: stored reading does not match readings.json")
        if self._record is not None:  # a file that moved while it was mapped: no stamp
            stamps = {f: s if s == stamp(d / f) else None for f, s in stamps.items()}
        return got, rec, stamps

    def check(self, names: Sequence[str]) -> None:
        """With ``verify``, check the stored ``names`` not checked yet, on a few threads
        (hashing releases the interpreter lock): what an engine asks before its first
        query, so that its readings' checksums cost the wall time of the largest."""
        todo = [n for n in dict.fromkeys(names) if n in self._mapped and n not in self._checked]
        if not self.verify or not todo:
            return
        workers = max(1, min(len(todo), os.cpu_count() or 1, 4))
        with ThreadPoolExecutor(workers) as pool:
            fresh = list(pool.map(self._verify_item, todo))
        self._note(fresh)

    def get(self, name: str) -> StoredPostings | None:
        """Reading ``name``'s postings (None when not stored)."""
        got = self._checked_item(name)
        return got if isinstance(got, StoredPostings) else None

    def counts(self, name: str) -> StoredCounts | None:
        """Count table ``name`` (None when not stored)."""
        got = self._checked_item(name)
        return got if isinstance(got, StoredCounts) else None

    def _checked_item(self, name: str) -> StoredPostings | StoredCounts | None:
        got = self._mapped.get(name)
        if got is None:
            return None
        if self.verify and name not in self._checked:
            self._note([self._verify_item(name)])
        return got[0]

    def _verify_item(self, name: str) -> dict[str, tuple[Stamp, str]]:
        """Check reading ``name``'s files against their SHA-256 (those the verified
        record trusts are skipped); what may be recorded as verified now."""
        item, rec, stamps = self._mapped[name]
        d = self.directory / name
        record = self._record
        fresh: dict[str, tuple[Stamp, str]] = {}
        for fname, want in rec["files"].items():
            st = stamps[fname]
            rel = f"{name}/{fname}"
            if (record is not None and st is not None and stamp(d / fname) == st
                    and record.trusted(rel, st, want["sha256"])):
                continue
            digest = _file_digest(d, fname, item)
            if digest != want["sha256"]:
                raise IndexFormatError(
                    f"{d / fname} does not match readings.json (changed or corrupt); "
                    "store the readings again (presidio-delink index readings)")
            # recorded only if unchanged since its mapping and changed long before it
            if (record is not None and st is not None and stamp(d / fname) == st
                    and st[4] < self._opened_ns - RACY_NS):
                fresh[rel] = (st, digest)
        self._checked.add(name)
        return fresh

    def _note(self, fresh: Sequence[dict[str, tuple[Stamp, str]]]) -> None:
        """Add what was verified now to the record (one write)."""
        if self._record is not None:
            self._record.add({k: v for f in fresh for k, v in f.items()})


def _file_digest(d: Path, fname: str, item: StoredPostings | StoredCounts) -> str:
    """SHA-256 of one stored file: an array's from its mapped pages (what is read is
    checked), the trie's from the file."""
    if fname == "terms.marisa":
        return sha256_file(d / fname)
    arr = _field(item, fname)
    return hashlib.sha256(np.ascontiguousarray(arr).data.cast("B")).hexdigest()


_FIELD = {f: f.split(".")[0] for f in (*_FILES, *_COUNT_FILES)} | {"hash.bin": "hashes"}
_LEX = ("lexdocs.bin", "lexgid.bin", "lexlf.bin")


def _field(item: StoredPostings | StoredCounts, fname: str) -> np.ndarray:
    """The mapped array of file ``fname`` (an empty one where not stored)."""
    if fname in _LEX:
        lex = getattr(item, "lex", None)
        return np.empty(0) if lex is None else lex[_LEX.index(fname)]
    got = getattr(item, _FIELD[fname])
    return np.empty(0) if got is None else got


def open_readings(index_dir: Path, key: bytes | None, verify: bool) -> ReadingsStore | None:
    """The readings stored with the index at ``index_dir`` (None when it has none).

    Raises:
        IndexFormatError: readings that fail their signature, belong to another index,
            or are outside the format.
    """
    d = Path(index_dir) / READINGS_DIR
    if not (d / READINGS_FILE).is_file():
        return None
    redo = f"; remove {d} or store the readings again (presidio-delink index readings)"
    try:
        data = (d / READINGS_FILE).read_bytes()
        sig = json.loads((d / READINGS_SIG).read_bytes())
        alg, digest = sig["alg"], sig["digest"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise IndexFormatError(f"{d}: stored readings unreadable or unsigned{redo}") from exc
    if alg not in ("sha256", "hmac-sha256") or not isinstance(digest, str):
        raise IndexFormatError(f"{d / READINGS_SIG} is corrupt{redo}")
    if alg == "hmac-sha256" and key is None:
        raise IndexFormatError(f"{d}: stored readings are signed with a key: pass its --key-file")
    if alg == "sha256" and key is not None:
        raise IndexFormatError(
            f"{d}: stored readings are not signed with a key, but a key file was given{redo}")
    if not hmac.compare_digest(_signature(data, key)["digest"], digest):
        raise IndexFormatError(
            f"{d / READINGS_FILE} does not match its signature (changed or corrupt){redo}")
    try:
        meta = json.loads(data)
        ok = (
            isinstance(meta, dict)
            and set(meta) == {"format", "version", "index", "extra", "members"}
            and meta["format"] == READINGS_FORMAT
            and isinstance(meta["members"], dict)
            and isinstance(meta["extra"], dict)
        )
    except ValueError:
        ok = False
    if not ok:
        raise IndexFormatError(f"{d / READINGS_FILE}: not stored readings{redo}")
    if meta["version"] != READINGS_VERSION:
        raise IndexFormatError(
            f"{d}: stored readings of version {meta['version']!r}; this version reads "
            f"{READINGS_VERSION}{redo}")
    for name, rec in meta["members"].items():
        if (not isinstance(name, str) or "/" in name or name.startswith(".")
                or not isinstance(rec, dict)
                or set(rec) != {"spec", "n_terms", "n_postings", "files"}
                or not isinstance(rec["files"], dict)
                or set(rec["files"]) not in (set(_FILES), set(_COUNT_FILES))):
            raise IndexFormatError(f"{d / READINGS_FILE}: malformed reading {name!r}{redo}")
    if meta["index"] != index_digest(Path(index_dir)):
        raise IndexFormatError(f"{d}: stored readings belong to another index{redo}")
    return ReadingsStore(d, meta, verify, key, hashlib.sha256(data).hexdigest())

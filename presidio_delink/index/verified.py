"""The verified record: which files of an index a process hashed and found equal to the
checksums its authenticated metadata lists, so that a later process trusts them without
reading them again (git's stat cache, applied to checksums).

Two kinds of files are covered, each folder with a record of its own: the stored
readings (the checksums of the folder's signed ``readings.json``; checked when a reading
is first read, :mod:`~presidio_delink.index.readings`), and the index folder's own
files, its document table, folds and views (the checksums of its signed ``meta.json``;
checked when the index opens, :class:`FileCheck`).  A segment of a grown index is an
index folder of its own.

Hashing every file costs a process that opens an index with ``verify`` a read of all
of them, before its first document.  The record spares that read on every run but the
first over the same files.

**What is recorded.** After a file is hashed and found equal to the SHA-256 that
``readings.json`` or ``meta.json`` (signed, or HMAC-signed with the index's key)
expects, the record keeps, under the file's path in the folder: its device, inode, size,
modification time and change time (nanoseconds), and that SHA-256.

**What is trusted.** A later process skips hashing a file only when all five of those
are the same for the file it maps, both when it mapped it and when it checks it (an
index folder's own files: when the index opens, just before they are mapped, as the
checksums were always checked), and the SHA-256 its metadata expects now is the
recorded one.  Anything else hashes
the file as before.  Writing a file changes its change time, and the change time cannot
be set back from user space (``os.utime`` sets the modification time and moves the
change time to now), so a rewrite in place, with the same size and a restored
modification time, is seen; a file replaced by another has another inode.  What is not
seen is a change the file system does not report: bits that rot on the medium, a disk
written around the kernel, or a clock set back by root.  The first process that hashes
after such a change refuses the file; one that trusts the record does not.  Turning the
record off (:data:`RECORD_ENV`) makes every process hash every file in full.

**A change in the same tick.** A file whose change time is less than :data:`RACY_NS`
older than the moment it was mapped (the moment the index began to open, for its own
files) is hashed but not recorded: a write just after the
mapping could land in the same tick of the file system's clock and leave the change
time as it was (git's "racily clean" entries).  The file's stamp is also taken again
after hashing; a file that moved meanwhile is not recorded.

**Where it lives.** One file per folder, in this user's cache
(:func:`~presidio_delink.io.user_cache_dir` ``/verified/`` for readings folders,
``/verified/index/`` for index folders), named by the SHA-256 of the folder's real path,
and holding that path and the SHA-256 of the metadata it was made under (the bytes of
``readings.json``; the canonical JSON of ``meta.json``'s content), so that other
metadata starts a new record.  Not in the index
folder: that may be read-only (a shared mount), a record there would be shared by every
user who reads the index, and every reader would write into a folder whose writers
hold a lock.  Written through :func:`~presidio_delink.io.atomic_output` (mode 0600, in a
0700 folder): a reader sees the old record or the new one.  With the index's key the
record carries an HMAC-SHA256 under a key derived from it, and a record that fails it
(made without the key, or with another) is not trusted; without a key it carries a
SHA-256 (against a damaged record: whoever can write a keyless index's files can also
write its ``readings.json`` and signature, so a MAC would add nothing).

A record that cannot be read, is malformed, or fails its check is ignored (the files
are hashed; one DEBUG line); one that cannot be written is left as it was (one DEBUG
line).  Neither is an error.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

from presidio_delink.errors import ConfigError, IndexFormatError
from presidio_delink.io import atomic_output, sha256_file, user_cache_dir

__all__ = ["INDEX_SPACE", "RACY_NS", "RECORD_ENV", "FileCheck", "Stamp", "VerifiedRecord",
           "record_enabled", "stamp"]

log = logging.getLogger(__name__)

#: ``off`` (or ``0``, ``no``, ``false``): no record is read or written, and every
#: process that opens an index with ``verify`` hashes every stored reading it reads.
RECORD_ENV = "PRESIDIO_DELINK_VERIFIED_RECORD"
#: A file whose change time is less than this before its mapping is not recorded.
RACY_NS = 2_000_000_000
RECORD_FORMAT = "presidio-delink-verified"
RECORD_VERSION = 1
_MAC_LABEL = b"presidio-delink verified record v1"

#: The subfolder of the records of index folders' own files (:class:`FileCheck`); the
#: records of readings folders lie directly in ``verified/``.
INDEX_SPACE = "index"

#: ``(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)``
Stamp = tuple[int, int, int, int, int]


def stamp(path: Path) -> Stamp | None:
    """The file's stamp, or None when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def record_enabled() -> bool:
    """False when :data:`RECORD_ENV` turns the record off."""
    return os.environ.get(RECORD_ENV, "").strip().lower() not in ("off", "0", "no", "false")


def _canonical(body: Any) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")


class VerifiedRecord:
    """The record of one readings folder (see the module docstring).

    Args:
        folder: the readings folder (its real path names the record).
        manifest: SHA-256 of the folder's ``readings.json`` as authenticated.
        key: the index's MAC key, or None.
    """

    def __init__(self, folder: Path, manifest: str, key: bytes | None, space: str = "") -> None:
        self.folder = os.path.realpath(folder)
        self.manifest = manifest
        self._mac_key = None if key is None else hmac.new(
            key, _MAC_LABEL, hashlib.sha256).digest()
        name = hashlib.sha256(os.fsencode(self.folder)).hexdigest()[:32]
        self.path = user_cache_dir() / "verified" / space / f"{name}.json"
        self._files: dict[str, tuple[Stamp, str]] | None = None
        self._lock = threading.Lock()

    @classmethod
    def open(cls, folder: Path, manifest: str, key: bytes | None, space: str = ""
             ) -> VerifiedRecord | None:
        """The folder's record, or None where :data:`RECORD_ENV` turns it off."""
        return cls(folder, manifest, key, space) if record_enabled() else None

    def _seal(self, data: bytes) -> dict[str, str]:
        if self._mac_key is None:
            return {"alg": "sha256", "digest": hashlib.sha256(data).hexdigest()}
        return {"alg": "hmac-sha256",
                "digest": hmac.new(self._mac_key, data, hashlib.sha256).hexdigest()}

    def trusted(self, rel: str, st: Stamp, sha256: str) -> bool:
        """Whether file ``rel`` of the folder, stamped ``st`` and expected to hash to
        ``sha256``, was recorded as verified with that stamp and that checksum."""
        with self._lock:
            if self._files is None:
                self._files = self._read()
            got = self._files.get(rel)
        return got is not None and got == (st, sha256)

    def add(self, fresh: dict[str, tuple[Stamp, str]]) -> None:
        """Record files verified now (``rel -> (stamp, sha256)``), with what the record
        on disk holds, in one atomic write."""
        if not fresh:
            return
        with self._lock:
            files = self._read() | fresh
            body = {
                "format": RECORD_FORMAT,
                "version": RECORD_VERSION,
                "readings": self.folder,
                "manifest": self.manifest,
                "files": {rel: [*st, digest] for rel, (st, digest) in sorted(files.items())},
            }
            doc = {"record": body, **self._seal(_canonical(body))}
            try:
                top = user_cache_dir() / "verified"
                top.mkdir(mode=0o700, parents=True, exist_ok=True)
                self.path.parent.mkdir(mode=0o700, exist_ok=True)
                with atomic_output(self.path, "wb") as f:
                    f.write(json.dumps(doc).encode("utf-8"))
            except (OSError, ConfigError) as exc:
                log.debug("verified record %s not written: %s", self.path, exc)
                return
            self._files = files
        log.debug("verified record %s: %d files recorded", self.path, len(fresh))

    def _read(self) -> dict[str, tuple[Stamp, str]]:
        """The record's files, or none where it is missing, unreadable, malformed, made
        for another folder or manifest, or fails its seal."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            log.debug("verified record %s unreadable (%s): hashing", self.path, exc)
            return {}
        try:
            doc = json.loads(raw)
            body = doc["record"]
            want = self._seal(_canonical(body))
            if doc["alg"] != want["alg"] or not hmac.compare_digest(
                    str(doc["digest"]), want["digest"]):
                log.debug("verified record %s fails its %s: not trusted", self.path,
                          want["alg"])
                return {}
            if (body["format"] != RECORD_FORMAT or body["version"] != RECORD_VERSION
                    or body["readings"] != self.folder or body["manifest"] != self.manifest):
                return {}
            files: dict[str, tuple[Stamp, str]] = {}
            for rel, v in body["files"].items():
                if not (isinstance(v, list) and len(v) == 6 and isinstance(v[5], str)
                        and all(type(x) is int for x in v[:5])):
                    raise ValueError(f"bad entry {rel!r}")
                files[rel] = ((v[0], v[1], v[2], v[3], v[4]), v[5])
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            log.debug("verified record %s malformed (%s): hashing", self.path, exc)
            return {}
        return files


class FileCheck:
    """The checks of an index folder's own files (its documents, folds and views) against
    the sizes and SHA-256 its authenticated ``meta.json`` lists, with the record of the
    module docstring over that folder (``manifest``: a SHA-256 of the authenticated
    metadata) where ``verify`` is asked for and the record is on.

    Call it with each listed folder and its files, then :meth:`done` once every check
    passed (one write of the record).  A file is hashed unless the record holds its
    stamp, taken when it is checked, with the SHA-256 the metadata expects; it is
    recorded when its stamp is the same after hashing and its change time is
    :data:`RACY_NS` older than the check's start.
    """

    def __init__(self, root: Path, verify: bool, manifest: str, key: bytes | None) -> None:
        self.root = root
        self.verify = verify
        self.record = VerifiedRecord.open(root, manifest, key, INDEX_SPACE) if verify else None
        self._started_ns = time.time_ns()  # before any file is stamped
        self._fresh: dict[str, tuple[Stamp, str]] = {}

    def __call__(self, directory: Path, files: dict[str, Any]) -> None:
        """Check ``files`` (name -> ``{"size", "sha256"}``) of ``directory``.

        Raises:
            IndexFormatError: a file missing, of another size, or (with ``verify``)
                another checksum.
        """
        for name, info in files.items():
            path = directory / name
            try:
                st = os.stat(path)
            except OSError:
                st = None
            if st is None or not stat.S_ISREG(st.st_mode):
                raise IndexFormatError(f"{path} is missing")
            if st.st_size != info["size"]:
                raise IndexFormatError(f"{path} is truncated or corrupt (size differs)")
            if not self.verify:
                continue
            want = info["sha256"]
            got: Stamp = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            rel = path.relative_to(self.root).as_posix()
            record = self.record
            if record is not None and record.trusted(rel, got, want):
                continue
            if sha256_file(path) != want:
                raise IndexFormatError(f"{path} is corrupt (checksum mismatch)")
            if (record is not None and stamp(path) == got
                    and got[4] < self._started_ns - RACY_NS):
                self._fresh[rel] = (got, want)

    def done(self) -> None:
        """Record the files hashed and found equal (one write; none when nothing new)."""
        if self.record is not None:
            self.record.add(self._fresh)
        self._fresh = {}

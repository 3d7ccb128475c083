"""The review's state on disk: one SQLite file beside the reviewed output.

Every action is one transaction (``BEGIN IMMEDIATE``, WAL journal, ``synchronous=FULL``):
either the document's new state and its audit row are both on disk when the server answers,
or neither is, so a crash of the server (or of the machine) loses nothing that was answered
and leaves nothing half-written.  Each document carries a version number: an action names
the version it was made on and is refused as a conflict when another (a second tab, another
reviewer) got there first, so no edit is silently overwritten.  The file is created with
mode 0600 (it holds document text) and is bound to the delinked file it reviews by a
SHA-256 of that file, so a review is never resumed over different records.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from presidio_delink.errors import ConfigError

__all__ = ["Conflict", "ReviewStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (
    doc_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    state TEXT NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    action TEXT NOT NULL,
    chunk INTEGER,
    reviewer TEXT NOT NULL,
    at TEXT NOT NULL,
    before TEXT,
    after TEXT,
    ok INTEGER NOT NULL,
    verification TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_doc ON audit (doc_id, seq);
"""


class Conflict(Exception):
    """The document changed since the version the action was made on."""

    def __init__(self, doc_id: str, expected: int, current: int) -> None:
        super().__init__(f"document {doc_id!r} is at version {current}, not {expected}")
        self.doc_id, self.expected, self.current = doc_id, expected, current


class ReviewStore:
    """The state file (see the module docstring).

    Args:
        path: the SQLite file (created with mode 0600 when missing).
        source_digest: SHA-256 of the delinked file under review; a state file made for
            another file is refused.
    """

    def __init__(self, path: str | os.PathLike[str], source_digest: str) -> None:
        self.path = Path(path)
        if not self.path.exists():
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass
            except OSError as exc:
                raise ConfigError(
                    f"cannot create the review state {str(path)!r}: {exc.strerror}"
                ) from exc
            else:
                os.close(fd)
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise ConfigError(
                f"{str(path)!r} is not a review state file ({exc}); move it away or pick "
                "another output"
            ) from exc
        with self.transaction() as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'source'").fetchone()
            if row is None:
                db.execute("INSERT INTO meta VALUES ('source', ?)", (source_digest,))
            elif row[0] != source_digest:
                raise ConfigError(
                    f"the review state {str(path)!r} belongs to another delinked file (its "
                    "content changed); move the state away to start a new review"
                )

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (serialised across threads and processes)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def load(self, doc_id: str) -> tuple[int, dict[str, Any]] | None:
        """``(version, state)`` of a document, None when it was never saved."""
        with self._lock:
            row = self._db.execute(
                "SELECT version, state FROM docs WHERE doc_id = ?", (doc_id,)
            ).fetchone()
        return None if row is None else (int(row[0]), json.loads(row[1]))

    def all_states(self) -> dict[str, tuple[int, dict[str, Any]]]:
        """Every saved document: ``{doc_id: (version, state)}``."""
        with self._lock:
            rows = self._db.execute("SELECT doc_id, version, state FROM docs").fetchall()
        return {r[0]: (int(r[1]), json.loads(r[2])) for r in rows}

    def save(
        self,
        doc_id: str,
        expected: int,
        state: dict[str, Any] | None,
        audit: dict[str, Any],
    ) -> int:
        """Record an action: its audit row always, the new ``state`` (None: unchanged, a
        refused action) only at ``expected`` version.  Returns the document's version.

        Raises:
            Conflict: the document is not at version ``expected``.
        """
        with self.transaction() as db:
            row = db.execute("SELECT version FROM docs WHERE doc_id = ?", (doc_id,)).fetchone()
            current = int(row[0]) if row else 0
            if current != expected:
                raise Conflict(doc_id, expected, current)
            version = current
            if state is not None:
                version = current + 1
                db.execute(
                    "INSERT INTO docs VALUES (?, ?, ?, ?) ON CONFLICT (doc_id) DO UPDATE SET "
                    "version = excluded.version, state = excluded.state, "
                    "updated = excluded.updated",
                    (doc_id, version, json.dumps(state, ensure_ascii=False), time.time()),
                )
            db.execute(
                "INSERT INTO audit (doc_id, version, action, chunk, reviewer, at, before, "
                "after, ok, verification) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    doc_id,
                    version,
                    audit["action"],
                    audit.get("chunk"),
                    audit["reviewer"],
                    audit["at"],
                    audit.get("before"),
                    audit.get("after"),
                    1 if audit["ok"] else 0,
                    json.dumps(audit["verification"], ensure_ascii=False),
                ),
            )
        return version

    def trail(self, doc_id: str) -> list[dict[str, Any]]:
        """The audit rows of a document, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, version, action, chunk, reviewer, at, before, after, ok, "
                "verification FROM audit WHERE doc_id = ? ORDER BY seq",
                (doc_id,),
            ).fetchall()
        keys = ("seq", "version", "action", "chunk", "reviewer", "at", "before", "after")
        out = []
        for r in rows:
            d = dict(zip(keys, r[:8], strict=True))
            d["ok"] = bool(r[8])
            d["verification"] = json.loads(r[9])
            out.append(d)
        return out

    def close(self) -> None:
        with self._lock:
            self._db.close()

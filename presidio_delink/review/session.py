"""A review session: the delinked records, their state, the verifier; every action a call.

The web app (:mod:`.server`) is a thin layer over this class; tests and scripts can drive a
review without it.  Every change goes through :meth:`ReviewSession.act`: it is applied to a
copy of the document, the copy is verified (:class:`~.verify.Verifier`), and only a copy
that verifies is saved (refusals are recorded in the audit trail too).  The current text of
a document therefore always verifies, and "signed off" records that a person looked at it
after the last change.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from presidio_delink.edits import REDACTED
from presidio_delink.errors import ConfigError, InputError
from presidio_delink.io import atomic_output, read_many
from presidio_delink.review.document import (
    Chunk,
    build_chunks,
    copy_chunks,
    joined,
    replace_range,
    sentences_of,
)
from presidio_delink.review.store import Conflict, ReviewStore
from presidio_delink.review.verify import PiiGuard, Verifier

__all__ = ["ACTIONS", "FILTERS", "Conflict", "ReviewSession", "check_paths", "state_path_for"]

ACTIONS = ("accept", "accept_all", "edit", "revert", "redact", "signoff")
FILTERS = ("all", "unreviewed", "risky", "failed", "signed_off")


def state_path_for(output: str | os.PathLike[str]) -> Path:
    """The state file beside the reviewed output."""
    out = Path(output)
    return out.with_name(out.name + ".review.sqlite")


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a ``delink`` output (JSONL), failed ones included."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except OSError as exc:
        raise InputError(f"cannot read {str(path)!r}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not valid UTF-8 at byte {exc.start}") from exc
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{n}: invalid JSON ({exc.msg})") from exc
        if not isinstance(rec, dict) or "id" not in rec or "text" not in rec:
            raise InputError(f"{path}:{n}: not a delink record (needs 'id' and 'text')")
        if rec["text"] is not None and not isinstance(rec["text"], str):
            raise InputError(f"{path}:{n}: 'text' must be a string or null")
        rec["id"] = str(rec["id"])
        if rec["id"] in seen:
            raise InputError(f"{path}:{n}: duplicate id {rec['id'][:60]!r}")
        seen.add(rec["id"])
        if not isinstance(rec.get("audit", []), list):
            raise InputError(f"{path}:{n}: 'audit' must be a list")
        out.append(rec)
    if not out:
        raise InputError(f"{path}: no records")
    return out


class ReviewSession:
    """One review of a ``delink`` output.

    Args:
        records_path: the delinked JSONL.
        verifier: verifies every change (index, k, arity, attack panel).
        output: where :meth:`export` writes the reviewed JSONL; the state file lies beside
            it (:func:`state_path_for`).
        input_path: the documents ``delink`` was given (INPUT formats), to show each input
            beside its output and to mark every edit; None: the outputs alone.
        reviewer: the name recorded with every action.
        source_of: document id -> its source's id in the collection (default: its own id).
    """

    def __init__(
        self,
        records_path: str | os.PathLike[str],
        verifier: Verifier,
        output: str | os.PathLike[str],
        *,
        input_path: str | os.PathLike[str] | None = None,
        reviewer: str = "reviewer",
        source_of: dict[str, str] | None = None,
    ) -> None:
        self.records_path = Path(records_path)
        self.records = read_records(self.records_path)
        self.by_id = {r["id"]: r for r in self.records}
        self.verifier = verifier
        self.output = Path(output)
        self.reviewer = reviewer
        self.inputs: dict[str, str] | None = None
        if input_path is not None:
            self.inputs = dict(read_many([Path(input_path)]))
        digest = _digest(self.records_path)
        self.store = ReviewStore(state_path_for(self.output), digest)
        self._source_of = source_of or {}
        self._lock = threading.RLock()
        self._initial: dict[str, dict[str, Any]] = {}
        self._guards: dict[str, PiiGuard] = {}

    # -- reading ------------------------------------------------------------------------
    def _group(self, doc_id: str) -> str | None:
        return self.verifier.group_of(self._source_of.get(doc_id, doc_id))

    def _fresh(self, doc_id: str) -> dict[str, Any]:
        """The state of a document before any action (its baseline verified once)."""
        if doc_id not in self._initial:
            rec = self.by_id[doc_id]
            text = rec["text"]
            if text is None:
                self._initial[doc_id] = {
                    "chunks": [],
                    "status": "failed",
                    "verification": None,
                    "baseline": {},
                }
            else:
                src = None if self.inputs is None else self.inputs.get(doc_id)
                chunks = build_chunks(text, rec.get("audit", []), src)
                state: dict[str, Any] = {
                    "chunks": [c.to_json() for c in chunks],
                    "status": "unreviewed",
                    "verification": None,
                    "baseline": {},
                }
                v = self._verify(doc_id, state, text, baseline=None)
                state["verification"] = v
                state["baseline"] = v["attacks"]
                self._initial[doc_id] = state
        return self._initial[doc_id]

    def _guard(self, doc_id: str, chunks: list[Chunk]) -> PiiGuard:
        if doc_id not in self._guards:
            removed = [c.before for c in chunks if c.kind == "pii" and c.before.strip()]
            self._guards[doc_id] = PiiGuard(
                removed, self.by_id[doc_id]["text"] or "", self.verifier.index.tokenizer
            )
        return self._guards[doc_id]

    def _verify(
        self, doc_id: str, state: dict[str, Any], text: str, baseline: Any
    ) -> dict[str, Any]:
        chunks = [Chunk.from_json(c) for c in state["chunks"]]
        v = self.verifier.verify(
            text, group=self._group(doc_id), pii=self._guard(doc_id, chunks), baseline=baseline
        )
        return v.to_json()

    def _current(self, doc_id: str) -> tuple[int, dict[str, Any]]:
        if doc_id not in self.by_id:
            raise KeyError(doc_id)
        saved = self.store.load(doc_id)
        return saved if saved is not None else (0, self._fresh(doc_id))

    def document(self, doc_id: str) -> dict[str, Any]:
        """Everything the page shows for one document (a ``sentence`` edit also carries
        ``sentence``: its whole sentence as input, as delinked and now,
        :func:`~.document.sentence_of`).

        Raises:
            KeyError: no such document.
        """
        with self._lock:
            version, state = self._current(doc_id)
            rec = self.by_id[doc_id]
            chunks, pos = [], 0
            for i, c in enumerate(state["chunks"]):
                chunks.append({**c, "i": i, "start": pos, "end": pos + len(c["text"])})
                pos += len(c["text"])
            # a sentence edit carries its whole sentence: as input, as delinked, now
            which = [c["i"] for c in chunks if c["kind"] == "sentence"]
            if which:
                objs = [Chunk.from_json(c) for c in state["chunks"]]
                for i, whole in sentences_of(objs, which).items():
                    chunks[i]["sentence"] = whole
            return {
                "id": doc_id,
                "version": version,
                "status": state["status"],
                "failed": rec["text"] is None,
                "error": rec.get("error"),
                "has_input": self.inputs is not None and doc_id in self.inputs,
                "source_known": self._group(doc_id) is not None,
                "chunks": chunks,
                "verification": state["verification"],
                "baseline": state["baseline"],
                "delink_ranks": rec.get("source_ranks") or {},
                "pending": sum(1 for c in state["chunks"] if c["status"] == "pending"),
                "trail": [
                    {k: t[k] for k in ("seq", "action", "reviewer", "at", "before", "after", "ok")}
                    | {"reasons": t["verification"].get("reasons", [])}
                    for t in self.store.trail(doc_id)[-30:]
                ],
            }

    def _risk(self, doc_id: str, state: dict[str, Any] | None) -> float:
        """Residual risk: 2 for a failed or linkable document, else the best 1/rank that an
        attack gives the source (containment, ranked, semantic): 1.00 when some attack
        ranks it first, 0.50 second, 0 when none finds it.  A document whose source is
        unknown also gets 0 (it cannot be audited); the queue row's ``source_known``
        tells the two apart, and the app shows "source unknown" for it."""
        rec = self.by_id[doc_id]
        if rec["text"] is None:
            return 2.0
        ranks: dict[str, Any] = rec.get("source_ranks") or {}
        if state is not None and state.get("verification"):
            v = state["verification"]
            if not v["ok"]:
                return 2.0
            ranks = {**ranks, **v["attacks"]}
        best = 0.0
        for r in ranks.values():
            rank = r.get("source_rank") if isinstance(r, dict) else None
            if isinstance(rank, int) and rank >= 1:
                best = max(best, 1.0 / rank)
        return best

    def queue(self, which: str = "all") -> dict[str, Any]:
        """The documents ordered by residual risk (highest first), filtered, with progress.

        Args:
            which: one of :data:`FILTERS` (``risky``: some attack ranks the source first,
                or the document failed; ``failed``: ``delink`` could not clean it).
        """
        if which not in FILTERS:
            raise ValueError(f"filter must be one of {', '.join(FILTERS)}")
        with self._lock:
            saved = self.store.all_states()
            rows = []
            for n, rec in enumerate(self.records):
                d = rec["id"]
                st = saved.get(d, (0, None))[1]
                if st is None:
                    st = self._initial.get(d)
                status = "failed" if rec["text"] is None else (st or {}).get("status", "unreviewed")
                pending = sum(1 for c in st["chunks"] if c["status"] == "pending") if st else None
                risk = self._risk(d, st)
                rows.append(
                    {"id": d, "n": n, "status": status, "risk": round(risk, 3),
                     "source_known": rec["text"] is None or self._group(d) is not None,
                     "pending": pending}
                )
            counts = {
                s: sum(1 for r in rows if r["status"] == s)
                for s in ("unreviewed", "in_review", "signed_off", "failed")
            }
            keep = {
                "all": lambda r: True,
                "unreviewed": lambda r: r["status"] == "unreviewed",
                "risky": lambda r: r["risk"] >= 1.0,
                "failed": lambda r: r["status"] == "failed",
                "signed_off": lambda r: r["status"] == "signed_off",
            }[which]
            shown = sorted((r for r in rows if keep(r)), key=lambda r: (-r["risk"], r["n"]))
            return {
                "documents": shown, "counts": counts, "total": len(rows),
                "crowd": self.verifier.settings.crowd,
            }

    # -- acting -------------------------------------------------------------------------
    def act(
        self,
        doc_id: str,
        version: int,
        action: str,
        *,
        chunk: int | None = None,
        text: str | None = None,
        start: int | None = None,
        end: int | None = None,
    ) -> dict[str, Any]:
        """Apply one review action, verified; returns ``{"ok", "chunk", "reasons",
        "verification", "document"}`` (``chunk``: the edit acted on, None for the document).

        Actions: ``accept`` / ``revert`` / ``edit`` (with ``text``) one edit ``chunk``;
        ``accept_all`` pending edits; ``redact`` the range ``[start, end)`` of the current
        text (inside unchanged text); ``signoff`` (the document must verify).

        Raises:
            KeyError: no such document.
            Conflict: the document is no longer at ``version`` (another tab changed it).
            ValueError: a malformed action (unknown name, bad chunk or range, no text).
        """
        if action not in ACTIONS:
            raise ValueError(f"action must be one of {', '.join(ACTIONS)}")
        with self._lock:
            current, state = self._current(doc_id)
            if current != version:
                raise Conflict(doc_id, version, current)
            if self.by_id[doc_id]["text"] is None:
                raise ValueError("this document failed in delink: there is no text to review")
            chunks = copy_chunks([Chunk.from_json(c) for c in state["chunks"]])
            before = after = None
            at: int | None = chunk
            if action in ("accept", "revert", "edit"):
                if not isinstance(chunk, int) or not 0 <= chunk < len(chunks):
                    raise ValueError("no such edit")
                c = chunks[chunk]
                if c.kind == "same":
                    raise ValueError("that part is unchanged text, not an edit")
                before = c.text
                if action == "accept":
                    c.status = "accepted"
                elif action == "revert":
                    c.text, c.status = c.before, "reverted"
                else:
                    if not isinstance(text, str) or "\x00" in text:
                        raise ValueError("edit needs the new text")
                    c.text, c.status = text, "edited"
                after = c.text
            elif action == "accept_all":
                for c in chunks:
                    if c.status == "pending":
                        c.status = "accepted"
            elif action == "redact":
                if not isinstance(start, int) or not isinstance(end, int):
                    raise ValueError("redact needs start and end")
                chunks, at = replace_range(chunks, start, end, REDACTED)
                before, after = chunks[at].before, REDACTED
            new_text = joined(chunks)
            new_state = {
                "chunks": [c.to_json() for c in chunks],
                "status": "in_review",
                "verification": None,
                "baseline": state["baseline"],
            }
            v = self._verify(doc_id, new_state, new_text, state["baseline"])
            new_state["verification"] = v
            ok = bool(v["ok"])
            if action == "signoff":
                if ok and any(c.status == "pending" for c in chunks):
                    ok = False
                    v = {
                        **v,
                        "ok": False,
                        "reasons": ["accept, edit or revert every pending edit first"],
                    }
                if ok:
                    new_state["status"] = "signed_off"
            row = {
                "action": action,
                "chunk": at,
                "reviewer": self.reviewer,
                "at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                "before": before,
                "after": after,
                "ok": ok,
                "verification": {k: v[k] for k in ("ok", "reasons", "attacks", "seconds")},
            }
            self.store.save(doc_id, version, new_state if ok else None, row)
            return {
                "ok": ok,
                "chunk": at if ok else chunk,
                "reasons": v["reasons"],
                "verification": v,
                "document": self.document(doc_id),
            }

    # -- export -------------------------------------------------------------------------
    def export(self) -> dict[str, Any]:
        """Write the reviewed JSONL to ``output`` (all or nothing, 0600): each record's
        text as reviewed, and ``review``: signed off or not, the reviewer(s), the last
        verification and the audit trail of every action."""
        with self._lock:
            saved = self.store.all_states()
            signed = 0
            with atomic_output(self.output) as out:
                for rec in self.records:
                    d = rec["id"]
                    st = saved.get(d, (0, None))[1]
                    new = dict(rec)
                    trail = self.store.trail(d)
                    review: dict[str, Any] = {"signed_off": False, "status": "unreviewed"}
                    if rec["text"] is None:
                        review["status"] = "failed"
                    elif st is not None:
                        new["text"] = joined([Chunk.from_json(c) for c in st["chunks"]])
                        v = st["verification"]
                        new["linkable_after"] = bool(v["linkable"])
                        review.update(
                            status=st["status"],
                            signed_off=st["status"] == "signed_off",
                            verification={k: v[k] for k in ("ok", "reasons", "attacks")},
                        )
                    review["reviewers"] = sorted({t["reviewer"] for t in trail})
                    review["trail"] = [
                        {k: t[k] for k in ("action", "reviewer", "at", "before", "after", "ok")}
                        | {"verification": t["verification"]}
                        for t in trail
                    ]
                    signed += review["signed_off"]
                    new["review"] = review
                    out.write(json.dumps(new, ensure_ascii=False) + "\n")
            return {"path": str(self.output), "documents": len(self.records), "signed_off": signed}

    def close(self) -> None:
        self.store.close()


def check_paths(output: Path, records: Path, input_path: Path | None, index_dir: Path) -> None:
    """Refuse an output (or its state file) that is one of the inputs or inside the index."""
    from presidio_delink.io import check_output_paths

    ins = [records] + ([input_path] if input_path else [])
    check_output_paths({"-o": output, "state": state_path_for(output)}, ins, {"index": index_dir})
    if output.resolve() == records.resolve():
        raise ConfigError("-o must not be the delinked file under review")

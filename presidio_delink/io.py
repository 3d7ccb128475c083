"""Reading document collections: JSONL, a JSON object ``{id: text}``, or a folder of .txt.

Every reader yields ``(doc_id, text)`` and fails with :class:`InputError` naming the file
(and line) on anything it cannot read: non-UTF-8 bytes, binary content (NUL bytes),
malformed JSON, a record without id or text.  Nothing is skipped silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from presidio_delink.errors import InputError

__all__ = ["read_documents", "read_many", "read_many_grouped", "decode_text"]


def decode_text(data: bytes, where: str) -> str:
    """Decode UTF-8 (BOM allowed), refusing binary data with a clear error."""
    if b"\x00" in data:
        raise InputError(f"{where}: looks binary (contains NUL bytes), not UTF-8 text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where}: not valid UTF-8 at byte {exc.start}; convert it to UTF-8 first"
        ) from exc


def _record(obj: object, where: str, groups: bool = False) -> tuple[Any, ...]:
    if not isinstance(obj, dict):
        raise InputError(f"{where}: expected an object with 'id' and 'text'")
    if "id" not in obj or "text" not in obj:
        raise InputError(f"{where}: record needs both 'id' and 'text'")
    doc_id, text = obj["id"], obj["text"]
    if isinstance(doc_id, bool) or not isinstance(doc_id, str | int):
        raise InputError(f"{where}: 'id' must be a string or an integer")
    if not isinstance(text, str):
        raise InputError(f"{where}: 'text' must be a string")
    if groups:
        group = obj.get("group")
        if group is not None and (not isinstance(group, str) or not group):
            raise InputError(f"{where}: 'group' must be a non-empty string")
        return str(doc_id), text, group
    return str(doc_id), text


def _read_jsonl(path: Path, groups: bool = False) -> Iterator[tuple[Any, ...]]:
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            where = f"{path}:{lineno}"
            line = decode_text(raw, where).strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{where}: invalid JSON ({exc.msg})") from exc
            yield _record(obj, where, groups)


def _read_json(path: Path, groups: bool = False) -> Iterator[tuple[Any, ...]]:
    text = decode_text(path.read_bytes(), str(path))
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: invalid JSON at line {exc.lineno} ({exc.msg})") from exc
    if isinstance(obj, dict):
        for doc_id, doc in obj.items():
            if doc is None:
                continue  # documented: null texts (missing documents) are skipped
            if not isinstance(doc, str):
                raise InputError(f"{path}: value of {doc_id!r} is not a string")
            yield (str(doc_id), doc, None) if groups else (str(doc_id), doc)
    elif isinstance(obj, list):
        for i, rec in enumerate(obj):
            yield _record(rec, f"{path}[{i}]", groups)
    else:
        raise InputError(f"{path}: expected a JSON object {{id: text}} or a list of records")


def _read_folder(path: Path, groups: bool = False) -> Iterator[tuple[Any, ...]]:
    files = sorted(p for p in path.rglob("*.txt") if p.is_file())
    if not files:
        raise InputError(f"{path}: folder has no .txt files")
    for p in files:
        doc_id = p.relative_to(path).with_suffix("").as_posix()
        text = decode_text(p.read_bytes(), str(p))
        yield (doc_id, text, None) if groups else (doc_id, text)


def read_documents(path: str | Path, *, groups: bool = False) -> Iterator[tuple[Any, ...]]:
    """Yield ``(doc_id, text)`` from one input (``(doc_id, text, group)`` with ``groups``:
    the optional ``"group"`` field of JSONL and JSON-list records, else None).

    ``*.jsonl``/``*.ndjson``: one ``{"id": ..., "text": ...}`` per line.  ``*.json``: an
    object ``{id: text}`` (null values skipped) or a list of records.  Another file is
    read as JSON if it parses whole, else as JSONL.  A folder: every ``*.txt`` below it,
    the id being the relative path without ``.txt``.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file or folder")
    if p.is_dir():
        return _read_folder(p, groups)
    suffix = p.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return _read_jsonl(p, groups)
    if suffix == ".json":
        return _read_json(p, groups)
    with open(p, "rb") as f:
        head = f.read(1 << 16).decode("utf-8", "ignore").lstrip()
    if head.startswith("[") or (head.startswith("{") and "\n{" not in head):
        return _read_json(p, groups)
    return _read_jsonl(p, groups)


def read_many(paths: Iterable[str | Path]) -> Iterator[tuple[str, str]]:
    """Chain :func:`read_documents` over several inputs."""
    for p in paths:
        for rec in read_documents(p):
            yield rec[0], rec[1]


def read_many_grouped(paths: Iterable[str | Path]) -> Iterator[tuple[str, str, str | None]]:
    """Chain :func:`read_documents` over several inputs, with each record's group."""
    for p in paths:
        for rec in read_documents(p, groups=True):
            yield rec[0], rec[1], rec[2]

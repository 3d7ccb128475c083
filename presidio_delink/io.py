"""Reading document collections and writing outputs safely.

Every reader yields ``(doc_id, text)`` and fails with :class:`InputError` naming the file
(and line) on anything it cannot read: non-UTF-8 bytes, binary content (NUL bytes),
malformed JSON, duplicate keys in a JSON object, a lone surrogate escape (``"\\ud800"``,
which no UTF-8 file can hold), a record without id or text.  Nothing is skipped silently.

Every file the package writes from document text goes through :func:`atomic_output`: a
temporary file beside the target (mode 0600), fsync'ed and renamed into place only when
the writer finishes without an exception, so a failed run never leaves a partial output
and never destroys the previous one.  :func:`check_output_paths` refuses, before anything
is opened for writing, an output that is one of the inputs or lies inside an input folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Literal, overload

from presidio_delink.errors import ConfigError, InputError

__all__ = [
    "atomic_output",
    "check_output_paths",
    "decode_text",
    "fsync_dir",
    "sha256_file",
    "read_documents",
    "read_many",
    "read_many_grouped",
    "user_cache_dir",
]

_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def sha256_file(path: str | os.PathLike[str]) -> str:
    """SHA-256 (hex) of a file's bytes, read in 4 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def user_cache_dir() -> Path:
    """This user's cache folder for the package: ``$PRESIDIO_DELINK_CACHE``, else
    ``$XDG_CACHE_HOME/presidio-delink``, else ``~/.cache/presidio-delink`` (not created)."""
    env = os.environ.get("PRESIDIO_DELINK_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "presidio-delink"


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


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` refusing a key seen twice (``json`` would keep the last)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _loads(text: str, where: str, *, one_line: bool = False) -> Any:
    """``json.loads`` refusing duplicate keys, with errors naming ``where``."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except _DuplicateKey as exc:
        raise InputError(
            f"{where}: duplicate key {_show(exc.key)} in a JSON object (only one value "
            "would be kept); make the keys unique"
        ) from None
    except json.JSONDecodeError as exc:
        at = "" if one_line else f" at line {exc.lineno}"
        raise InputError(f"{where}: invalid JSON{at} ({exc.msg})") from exc
    except RecursionError:
        raise InputError(f"{where}: JSON nested too deeply") from None


def _show(value: str, limit: int = 60) -> str:
    """A key or id for an error message: repr, surrogates escaped, long ones shortened."""
    shown = value if len(value) <= limit else value[:limit] + "..."
    return ascii(shown) if _SURROGATE_RE.search(shown) else repr(shown)


def _check_surrogates(doc_id: str, text: str, where: str) -> None:
    """Refuse a lone surrogate (JSON ``"\\ud800"``): it cannot be written as UTF-8."""
    for what, value in (("id", doc_id), ("text", text)):
        m = _SURROGATE_RE.search(value)
        if m is not None:
            raise InputError(
                f"{where}: {what} of record {_show(doc_id)} holds a lone surrogate "
                f"(U+{ord(m.group()):04X} at character {m.start()}), which is not text; "
                "fix the escape in the input"
            )


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
    _check_surrogates(str(doc_id), text, where)
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
            yield _record(_loads(line, where, one_line=True), where, groups)


def _read_json(
    path: Path, groups: bool = False, on_null: Callable[[str], None] | None = None
) -> Iterator[tuple[Any, ...]]:
    text = decode_text(path.read_bytes(), str(path))
    obj = _loads(text, str(path))
    if isinstance(obj, dict):
        for doc_id, doc in obj.items():
            if doc is None:  # documented: null texts (missing documents) are skipped
                if on_null is not None:
                    on_null(str(doc_id))
                continue
            if not isinstance(doc, str):
                raise InputError(f"{path}: value of {_show(doc_id)} is not a string")
            _check_surrogates(doc_id, doc, f"{path}: key {_show(doc_id)}")
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


def _read_text(path: Path, groups: bool = False) -> Iterator[tuple[Any, ...]]:
    text = decode_text(path.read_bytes(), str(path))
    yield (path.stem, text, None) if groups else (path.stem, text)


def read_documents(
    path: str | Path, *, groups: bool = False, on_null: Callable[[str], None] | None = None
) -> Iterator[tuple[Any, ...]]:
    """Yield ``(doc_id, text)`` from one input (``(doc_id, text, group)`` with ``groups``:
    the optional ``"group"`` field of JSONL and JSON-list records, else None).

    ``*.jsonl``/``*.ndjson``: one ``{"id": ..., "text": ...}`` per line.  ``*.json``: an
    object ``{id: text}`` (null values skipped, each id given to ``on_null``) or a list
    of records.  ``*.txt``: one document, the file name without ``.txt`` its id.  Another
    file is read as JSON if it parses whole, else as JSONL.  A folder: every ``*.txt``
    below it, the id being the relative path without ``.txt``.
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
        return _read_json(p, groups, on_null)
    if suffix == ".txt":
        return _read_text(p, groups)
    with open(p, "rb") as f:
        head = f.read(1 << 16).decode("utf-8", "ignore").lstrip()
    if head.startswith("[") or (head.startswith("{") and "\n{" not in head):
        return _read_json(p, groups, on_null)
    return _read_jsonl(p, groups)


def read_many(paths: Iterable[str | Path]) -> Iterator[tuple[str, str]]:
    """Chain :func:`read_documents` over several inputs."""
    for p in paths:
        for rec in read_documents(p):
            yield rec[0], rec[1]


def read_checked(
    paths: Iterable[str | Path], nulls: list[str] | None = None
) -> Iterator[tuple[str, str]]:
    """:func:`read_many` with the checks of an index build: a duplicate id is an error,
    null texts are listed in ``nulls`` (not dropped unseen), and no document at all is
    an error.

    Raises:
        InputError: a duplicate id, or no document in any input.
    """
    seen: set[str] = set()
    for p in paths:
        for rec in read_documents(p, on_null=nulls.append if nulls is not None else None):
            doc_id = rec[0]
            if doc_id in seen:
                raise InputError(f"{p}: duplicate document id {_show(doc_id)}")
            seen.add(doc_id)
            yield doc_id, rec[1]
    if not seen:
        extra = f" ({len(nulls)} null texts)" if nulls else ""
        raise InputError(f"no documents in the input{extra}")


def read_many_grouped(paths: Iterable[str | Path]) -> Iterator[tuple[str, str, str | None]]:
    """Chain :func:`read_documents` over several inputs, with each record's group.

    Raises:
        InputError: a duplicate id (naming the file it is repeated in, and its first).
    """
    first: dict[str, str] = {}
    for p in paths:
        for rec in read_documents(p, groups=True):
            if rec[0] in first:
                raise InputError(
                    f"{p}: duplicate document id {_show(rec[0])} (first in {first[rec[0]]})"
                )
            first[rec[0]] = str(p)
            yield rec[0], rec[1], rec[2]


# -- writing --------------------------------------------------------------------------------


def _real(path: str | os.PathLike[str]) -> Path:
    """Absolute path with every symlink resolved (the target need not exist)."""
    return Path(os.path.realpath(os.path.expanduser(os.fspath(path))))


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)  # also catches hard links
    except OSError:
        return False


def check_output_paths(
    outputs: dict[str, str | os.PathLike[str] | None],
    inputs: Iterable[str | os.PathLike[str]] = (),
    protected: dict[str, str | os.PathLike[str] | None] | None = None,
) -> None:
    """Refuse outputs that would overwrite an input, before anything is opened for writing.

    Args:
        outputs: ``{option name: path}`` of every file the command will write (``None``
            entries are skipped), e.g. ``{"--output": ..., "--report": ...}``.
        inputs: Input files or folders: an output may be none of them, nor lie inside one
            of the folders (it would be read back in as a document).
        protected: Other paths (``{what: path}``, e.g. the index folder) that no output
            may be or lie inside.

    Raises:
        ConfigError: Two outputs are one file, an output is an input or inside an input
            folder or a protected path, or an output is an existing folder.
    """
    guarded: list[tuple[str, Path, Path]] = []
    for raw in inputs:
        guarded.append(("input", Path(raw), _real(raw)))
    for what, raw_p in (protected or {}).items():
        if raw_p is not None:
            guarded.append((what, Path(raw_p), _real(raw_p)))
    seen: dict[Path, str] = {}
    for name, raw_out in outputs.items():
        if raw_out is None:
            continue
        out = _real(raw_out)
        if out.is_dir():
            raise ConfigError(f"{name} {str(raw_out)!r} is a folder; give a file name")
        if out in seen:
            raise ConfigError(
                f"{name} and {seen[out]} are the same file {str(raw_out)!r}; give two names"
            )
        for other, other_name in seen.items():
            if _same_file(out, other):
                raise ConfigError(f"{name} and {other_name} are the same file; give two names")
        seen[out] = name
        for what, shown, target in guarded:
            if out == target or _same_file(out, target):
                raise ConfigError(
                    f"{name} {str(raw_out)!r} is the {what} {str(shown)!r}: it would be "
                    "overwritten; write somewhere else"
                )
            if target.is_dir() and out.is_relative_to(target):
                raise ConfigError(
                    f"{name} {str(raw_out)!r} is inside the {what} folder {str(shown)!r}; "
                    "write somewhere else"
                )


@overload
def atomic_output(
    path: str | os.PathLike[str], mode: Literal["w"] = "w"
) -> contextlib.AbstractContextManager[IO[str]]: ...


@overload
def atomic_output(
    path: str | os.PathLike[str], mode: Literal["wb"]
) -> contextlib.AbstractContextManager[IO[bytes]]: ...


def atomic_output(
    path: str | os.PathLike[str], mode: Literal["w", "wb"] = "w"
) -> contextlib.AbstractContextManager[IO[Any]]:
    """Write ``path`` all or nothing: ``with atomic_output(p) as f: f.write(...)``.

    The data goes to a temporary file in the target's folder (mode 0600: outputs are derived
    from sensitive text), which is flushed, fsync'ed and renamed over ``path`` when the block
    ends without an exception; on an exception (or Ctrl-C) it is removed and an existing
    ``path`` is left as it was.  A symlink is followed (its target is replaced).  A target
    that exists and is not a regular file (``/dev/stdout``, a FIFO) is written directly.

    Args:
        path: The file to create or replace.
        mode: ``"w"`` (UTF-8 text) or ``"wb"``.

    Raises:
        ConfigError: The folder cannot be written to or the target is a folder.
    """
    return _atomic_output(path, mode)


@contextlib.contextmanager
def _atomic_output(path: str | os.PathLike[str], mode: str) -> Iterator[IO[Any]]:
    target = _real(path)
    encoding = None if "b" in mode else "utf-8"
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise ConfigError(f"cannot write {str(path)!r}: {exc.strerror}") from exc
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"cannot write {str(path)!r}: it is a folder")
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(target, mode, encoding=encoding) as direct:  # a device or pipe
            yield direct
        return
    try:
        fd, tmp_name = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
        )
    except OSError as exc:
        raise ConfigError(
            f"cannot write {str(path)!r}: {exc.strerror} (folder {str(target.parent)!r})"
        ) from exc
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, mode, encoding=encoding) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)  # mkstemp's mode already; explicit against odd umasks/ACLs
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(target.parent)


def fsync_dir(folder: Path) -> None:
    """Flush ``folder``'s entries to disk, so that a rename in it survives a crash.

    Raises:
        OSError: the folder cannot be opened or flushed.
    """
    dfd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable (best effort: not every platform can open a folder)."""
    with contextlib.suppress(OSError):
        fsync_dir(folder)

"""The on-disk format of an index, read and written in this module only.

Layout (format version 5)::

    meta.json            what the index holds: format, views, documents, groups, and the
                         size and SHA-256 of every other file
    meta.sig             SHA-256 of meta.json (or HMAC-SHA256 with the user's key), kept
                         apart from it: any change to meta.json is refused
    docs/doc_ids.json    document ids by ordinal
    docs/groups.bin      group ordinal of each document (only when groups were given)
    docs/group_ids.json  group names by ordinal (only with groups)
    folds/F/vocab-NNNNN.marisa, folds/F/docs-NNNNN/   the collection as word ids, per word
                         model; its vocabulary in the key space's partitions
    views/NAME/part-NNNNN/   one key space per view, in partitions (see ``index/shard.py``);
                         a view whose ``stored_over`` names another view holds only its
                         differences from that view (``shard.Layered``)

Version 3 added ``stored_over`` (delta storage of views) and the fine word models'
order of normalisation (format characters removed before NFC).  Version 4 stores posting
lists delta- and variable-byte-coded, complemented when a key is in most documents, with
one byte of document frequency per key (``index/postings.py``).  Version 5 splits each
word model's vocabulary into the key space's partitions (``index/vocab.py``), so that no
process of a build holds it whole.  An index of an older version is refused with
"rebuild the index".

``meta.json`` is validated against a strict schema (no unknown or missing fields, every
value of the right type and range) after its signature is checked.  ``meta.json`` and
``meta.sig`` are written last, so a build that stopped half-way leaves nothing that
loads; a build holds ``.build-lock`` (created exclusively) while it writes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

from presidio_delink.errors import ConfigError, IndexFormatError
from presidio_delink.io import atomic_output, sha256_file

FORMAT_NAME = "presidio-delink-ngram-index"
FORMAT_VERSION = 5
META_FILE = "meta.json"
SIG_FILE = "meta.sig"
LOCK_FILE = ".build-lock"
DOCS_DIR, VIEWS_DIR, FOLDS_DIR = "docs", "views", "folds"
SEGMENTS_FILE = "segments.json"
"""The signed list of an index's segments (``index add``; see ``index/segments.py``)."""
BUILD_DIR = ".build"
"""A build's scratch folder inside the index directory (removed when the build ends)."""

PART_FILES = ("ngrams.marisa", "df.bin", "dfbig.bin", "blocks.bin", "postings.bin")
"""The files of a key-space partition (``views/V/part-NNNNN/``; see ``index/shard.py``)."""
PART_ARRAYS = ("dfbig",)
DOC_FILES = ("tokens.bin", "doc_starts.bin")
"""The files of a range of documents (``folds/F/docs-NNNNN/``)."""
DOC_ARRAYS = ("tokens", "doc_starts")

_DTYPES = {"<u2", "<u4", "<u8"}


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through :func:`~presidio_delink.io.atomic_output`
    (temporary file, renamed; mode 0600: index files reproduce the text)."""
    with atomic_output(path, "wb") as f:
        f.write(data)


def file_record(path: Path) -> dict[str, Any]:
    return {"size": path.stat().st_size, "sha256": sha256_file(path)}


def read_key(path: str | Path | None) -> bytes | None:
    """The MAC key of ``--key-file`` (its bytes; at least 16)."""
    if path is None:
        return None
    try:
        key = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the key file {path}: {exc.strerror}") from exc
    if len(key) < 16:
        raise ConfigError(f"the key file {path} holds {len(key)} bytes; use at least 16")
    return key


def _signature(data: bytes, key: bytes | None) -> dict[str, str]:
    if key is None:
        return {"alg": "sha256", "digest": hashlib.sha256(data).hexdigest()}
    return {"alg": "hmac-sha256", "digest": hmac.new(key, data, hashlib.sha256).hexdigest()}


def sign(data: bytes, key: bytes | None) -> dict[str, str]:
    """The signature of ``data`` as ``meta.sig`` holds it (SHA-256, or HMAC-SHA256)."""
    return _signature(data, key)


def write_meta(directory: Path, meta: dict[str, Any], key: bytes | None) -> None:
    """Write ``meta.json`` and its signature (validated first: never write what we
    would refuse to read)."""
    validate_meta(meta, directory)
    data = json.dumps(meta, indent=1, sort_keys=True).encode("utf-8")
    write_private(directory / META_FILE, data)
    write_private(directory / SIG_FILE, json.dumps(_signature(data, key)).encode("utf-8"))


def read_meta(directory: Path, key: bytes | None) -> dict[str, Any]:
    """Read, authenticate and validate ``meta.json``.

    Raises:
        IndexFormatError: not an index, a build in progress or interrupted, a signature
            mismatch, another format version, or metadata outside the schema.
    """
    d = directory
    if not (d / META_FILE).exists():
        if d.is_dir() and (d / LOCK_FILE).exists():
            raise IndexFormatError(f"{d}: an index build is in progress there, or was interrupted")
        raise IndexFormatError(f"{d} is not a presidio-delink index (no {META_FILE})")
    try:
        data = (d / META_FILE).read_bytes()
        sig_raw = (d / SIG_FILE).read_bytes()
    except FileNotFoundError as exc:
        raise IndexFormatError(
            f"{d} has no {SIG_FILE}: an index of an older format, or an incomplete one; "
            "rebuild the index"
        ) from exc
    except OSError as exc:
        raise IndexFormatError(f"cannot read the metadata of {d}: {exc.strerror}") from exc
    try:
        sig = json.loads(sig_raw)
        alg, digest = sig["alg"], sig["digest"]
        if set(sig) != {"alg", "digest"} or not isinstance(digest, str):
            raise ValueError
    except (ValueError, KeyError, TypeError) as exc:
        raise IndexFormatError(f"{d / SIG_FILE} is corrupt") from exc
    if alg == "hmac-sha256" and key is None:
        raise IndexFormatError(f"{d} is signed with a key: pass its --key-file")
    if alg == "sha256" and key is not None:
        raise IndexFormatError(f"{d} is not signed with a key, but a key file was given")
    if alg not in ("sha256", "hmac-sha256"):
        raise IndexFormatError(f"{d / SIG_FILE} is corrupt")
    want = _signature(data, key)["digest"]
    if not hmac.compare_digest(want, digest):
        raise IndexFormatError(
            f"{d / META_FILE} does not match its signature: the index metadata was changed "
            "or is corrupt"
            + (" (or the key is not the one it was built with)" if key else "")
        )
    try:
        meta = json.loads(data)
    except ValueError as exc:
        raise IndexFormatError(f"{d / META_FILE} is not valid JSON") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise IndexFormatError(f"{d} is not a presidio-delink index")
    if meta.get("format_version") != FORMAT_VERSION:
        raise IndexFormatError(
            f"{d} has index format version {meta.get('format_version')!r}; this version of "
            f"presidio-delink reads version {FORMAT_VERSION}: rebuild the index"
        )
    validate_meta(meta, d)
    return meta


# -- schema ------------------------------------------------------------------------------
def _fail(where: Path, what: str) -> IndexFormatError:
    return IndexFormatError(f"{where}: malformed index metadata ({what})")


def _obj(x: object, keys: set[str], where: Path, what: str) -> dict[str, Any]:
    if not isinstance(x, dict) or set(x) != keys:
        raise _fail(where, what)
    return x


def _int(x: object, where: Path, what: str, lo: int = 0, hi: int | None = None) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or x < lo or (hi is not None and x > hi):
        raise _fail(where, what)
    return x


def _files(x: object, names: set[str] | None, where: Path, what: str) -> None:
    if not isinstance(x, dict) or (names is not None and set(x) != names):
        raise _fail(where, what)
    for name, rec in x.items():
        if not isinstance(name, str) or "/" in name or name.startswith("."):
            raise _fail(where, what)
        r = _obj(rec, {"size", "sha256"}, where, what)
        _int(r["size"], where, what)
        if not isinstance(r["sha256"], str) or len(r["sha256"]) != 64:
            raise _fail(where, what)


def validate_meta(meta: dict[str, Any], where: Path) -> None:
    """Refuse any ``meta.json`` outside the schema of this format version."""
    from presidio_delink.text import FOLDS, MAX_SUPPORTED_N, Tokenizer
    from presidio_delink.views import VIEWS

    m = _obj(
        meta,
        {
            "format",
            "format_version",
            "max_n",
            "n_docs",
            "n_words",
            "folds",
            "views",
            "docs",
            "groups",
            "created",
        },
        where,
        "top-level fields",
    )
    max_n = _int(m["max_n"], where, "max_n", 1, MAX_SUPPORTED_N)
    n_docs = _int(m["n_docs"], where, "n_docs", 1)
    _int(m["n_words"], where, "n_words")
    if not isinstance(m["created"], str):
        raise _fail(where, "created")
    docs = _obj(m["docs"], {"files"}, where, "docs")
    g = m["groups"]
    _files(docs["files"], {"doc_ids.json"}, where, "document files")
    if g is not None:
        gm = _obj(g, {"n_groups", "max_group_size", "dtype", "files"}, where, "groups")
        _int(gm["n_groups"], where, "n_groups", 1, n_docs)
        _int(gm["max_group_size"], where, "max_group_size", 1, n_docs)
        if gm["dtype"] not in _DTYPES:
            raise _fail(where, "groups dtype")
        _files(gm["files"], {"groups.bin", "group_ids.json"}, where, "group files")
    folds = m["folds"]
    if not isinstance(folds, list) or not folds:
        raise _fail(where, "folds")
    fold_names: set[str] = set()
    vocab_parts: dict[str, int] = {}
    n_shards = None
    for f in folds:
        fm = _obj(
            f, {"name", "n_words", "vocab_parts", "files", "doc_shards"}, where, "a word model"
        )
        if fm["name"] not in FOLDS or fm["name"] in fold_names:
            raise _fail(where, f"word model {fm['name']!r}")
        fold_names.add(fm["name"])
        vp = fm["vocab_parts"]
        if not isinstance(vp, list) or not vp:
            raise _fail(where, "vocabulary partitions")
        sizes = [_int(x, where, "vocabulary partition size") for x in vp]
        if _int(fm["n_words"], where, "vocabulary size") != sum(sizes):
            raise _fail(where, "vocabulary size")
        vocab_parts[fm["name"]] = len(sizes)
        names_v = {f"vocab-{i:05d}.marisa" for i in range(len(sizes))}
        _files(fm["files"], names_v, where, "vocabulary files")
        shards = fm["doc_shards"]
        if not isinstance(shards, list) or not shards:
            raise _fail(where, "document ranges")
        if n_shards is not None and len(shards) != n_shards:
            raise _fail(where, "document ranges differ between word models")
        n_shards = len(shards)
        total = 0
        for sm in shards:
            s = _obj(sm, {"n_docs", "dtypes", "files"}, where, "a document range")
            total += _int(s["n_docs"], where, "document range size")
            dt = _obj(s["dtypes"], set(DOC_ARRAYS), where, "document range dtypes")
            if not set(dt.values()) <= _DTYPES:
                raise _fail(where, "document range dtypes")
            _files(s["files"], set(DOC_FILES), where, "document range files")
        if total != n_docs:
            raise _fail(where, f"document count of word model {fm['name']!r}")
    views = m["views"]
    if not isinstance(views, list) or not views:
        raise _fail(where, "views")
    names = set()
    n_parts: dict[str, int] = {}
    for v in views:
        vm = _obj(v, {"name", "stored_over", "tokenizer", "partitions"}, where, "a view")
        name = vm["name"]
        if name not in VIEWS or name in names:
            raise _fail(where, f"view {name!r}")
        over = vm["stored_over"]
        if over is not None and over not in names:
            # A view is stored over one listed before it: no cycle, no dangling parent.
            raise _fail(where, f"view {name!r} is stored over an unknown view")
        names.add(name)
        try:
            tok = Tokenizer.from_settings(vm["tokenizer"])
        except (ConfigError, TypeError, AttributeError) as exc:
            raise _fail(where, f"tokenizer of view {name!r}: {exc}") from exc
        if set(vm["tokenizer"]) != set(tok.settings()):
            raise _fail(where, f"tokenizer fields of view {name!r}")
        view = VIEWS[name]
        if tok.max_n != max_n or tok.fold != view.fold or tok.break_on_punctuation == view.cross:
            raise _fail(where, f"tokenizer of view {name!r} does not match the view")
        if tok.fold not in fold_names:
            raise _fail(where, f"view {name!r} has no word model")
        parts = vm["partitions"]
        if not isinstance(parts, list) or not parts:
            raise _fail(where, f"partitions of view {name!r}")
        n_parts[name] = len(parts)
        if vocab_parts[tok.fold] != len(parts):
            raise _fail(where, f"partitions of view {name!r} and of its vocabulary differ")
        if over is not None and n_parts[over] != len(parts):
            raise _fail(where, f"partitions of view {name!r} and of {over!r} differ")
        for i, pm in enumerate(parts):
            per_level = {f"n_keys_{n}" for n in range(1, max_n + 1) if f"n_keys_{n}" in pm}
            keys = {"dir", "dtypes", "n_keys", "n_postings", "files"} | per_level
            s = _obj(pm, keys, where, f"partition {i} of view {name!r}")
            if s["dir"] != f"part-{i:05d}":
                raise _fail(where, f"partition {i} of view {name!r}: directory")
            dt = _obj(s["dtypes"], set(PART_ARRAYS), where, "partition dtypes")
            if not set(dt.values()) <= _DTYPES:
                raise _fail(where, "partition dtypes")
            for k in keys - {"dir", "dtypes", "files"}:
                _int(s[k], where, f"partition {i} of view {name!r}: {k}")
            _files(s["files"], set(PART_FILES), where, f"files of partition {i} of {name!r}")

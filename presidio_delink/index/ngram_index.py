"""`NgramIndex`: document frequency and posting lists of word N-grams of a collection."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import ConfigError, IndexFormatError, InputError
from presidio_delink.index.builder import ShardBuilder, check_doc_id, encode_doc
from presidio_delink.index.shard import SHARD_FILES, Shard, write_private
from presidio_delink.text import DEFAULT_MAX_N, Tokenizer

log = logging.getLogger(__name__)

FORMAT_NAME = "presidio-delink-ngram-index"
FORMAT_VERSION = 1
META_FILE = "meta.json"
DEFAULT_SHARD_WORDS = 8_000_000


class NgramIndex:
    """Inverted index of word N-grams (1..max_n words) over a reference collection.

    Immutable once built.  Build with :meth:`build`, open with :meth:`load`.  Every
    query is exact for N-grams of any length (see :mod:`presidio_delink.index.shard`).
    """

    def __init__(self, directory: Path, meta: dict[str, Any], shards: list[Shard]) -> None:
        self.directory = directory
        self.meta = meta
        self.shards = shards
        tok = meta["tokenizer"]
        assert isinstance(tok, dict)
        self.tokenizer = Tokenizer.from_settings(tok)
        self._doc_ids: list[str] | None = None

    # -- construction -------------------------------------------------------------
    @classmethod
    def build(
        cls,
        docs: Iterable[tuple[str, str]],
        directory: str | Path | None = None,
        *,
        max_n: int = DEFAULT_MAX_N,
        tokenizer: Tokenizer | None = None,
        shard_words: int = DEFAULT_SHARD_WORDS,
        progress: bool = False,
    ) -> NgramIndex:
        """Build an index from ``(doc_id, text)`` pairs, streaming.

        Args:
            docs: any iterable of ``(doc_id, text)``; ids must be unique.
            directory: where to write the index (created; must be empty or absent).
                ``None`` builds into a temporary directory removed with the object.
            max_n: longest N-gram in words (ignored when ``tokenizer`` is given).
            tokenizer: text model; default ``Tokenizer(max_n=max_n)``.
            shard_words: words per shard; bounds peak memory (about 180 bytes a word,
                measured: 1.4 GB at the default).
            progress: show a progress bar on stderr.

        Raises:
            InputError: no documents, a duplicate or invalid id, a non-string text.
        """
        tokenizer = tokenizer or Tokenizer(max_n=max_n)
        if shard_words < 1:
            raise ConfigError(f"shard_words must be positive, got {shard_words}")
        temp = directory is None
        out = (
            Path(tempfile.mkdtemp(prefix="delink-index-")) if directory is None else Path(directory)
        )
        if out.exists() and any(out.iterdir()):
            raise ConfigError(f"index directory {out} is not empty")
        out.mkdir(parents=True, exist_ok=True, mode=0o700)
        seen: set[str] = set()
        vocab: dict[str, int] = {}
        cache: dict[str, tuple[int, ...]] = {}
        shards_meta: list[dict[str, Any]] = []
        current = ShardBuilder()
        n_words = 0
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(unit="doc", desc="indexing", leave=False)
        try:
            for item in docs:
                try:
                    doc_id, text = item
                except (TypeError, ValueError) as exc:
                    raise InputError("documents must be (doc_id, text) pairs") from exc
                sid = check_doc_id(doc_id, seen)
                n_words += current.add(sid, encode_doc(tokenizer, text, vocab, cache))
                if bar is not None:
                    bar.update(1)
                if current.n_words >= shard_words:
                    shards_meta.append(
                        _flush(current, out, len(shards_meta), tokenizer.max_n, vocab)
                    )
                    current = ShardBuilder()
            if not seen:
                raise InputError("the collection has no documents")
            if current.doc_ids:
                shards_meta.append(_flush(current, out, len(shards_meta), tokenizer.max_n, vocab))
        except BaseException:
            shutil.rmtree(out, ignore_errors=True)
            raise
        finally:
            if bar is not None:
                bar.close()
        meta: dict[str, Any] = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "tokenizer": tokenizer.settings(),
            "max_n": tokenizer.max_n,
            "n_docs": len(seen),
            "n_words": n_words,
            "shards": shards_meta,
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        }
        write_private(out / META_FILE, json.dumps(meta, indent=1).encode("utf-8"))
        index = cls.load(out, verify=False)
        if temp:
            weakref.finalize(index, shutil.rmtree, out, True)
        return index

    @classmethod
    def load(cls, directory: str | Path, *, verify: bool = True) -> NgramIndex:
        """Open a saved index (arrays are memory-mapped).

        Args:
            directory: the index directory.
            verify: also check every file's SHA-256 (reads the files once).

        Raises:
            IndexFormatError: missing, truncated, corrupt, or another format version.
        """
        d = Path(directory)
        try:
            with open(d / META_FILE, encoding="utf-8") as f:
                meta = json.load(f)
        except FileNotFoundError as exc:
            raise IndexFormatError(f"{d} is not a presidio-delink index (no {META_FILE})") from exc
        except (OSError, ValueError) as exc:
            raise IndexFormatError(f"cannot read {d / META_FILE}: {exc}") from exc
        if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
            raise IndexFormatError(f"{d} is not a presidio-delink index")
        if meta.get("format_version") != FORMAT_VERSION:
            raise IndexFormatError(
                f"{d} has index format version {meta.get('format_version')!r}; this version "
                f"of presidio-delink reads version {FORMAT_VERSION}: rebuild the index"
            )
        try:
            Tokenizer.from_settings(meta["tokenizer"])
            shard_list = list(meta["shards"])
        except (KeyError, TypeError, ConfigError) as exc:
            raise IndexFormatError(f"{d}: malformed or incompatible metadata: {exc}") from exc
        shards: list[Shard] = []
        base = 0
        for sm in shard_list:
            sd = d / str(sm["dir"])
            for name, info in dict(sm["files"]).items():
                path = sd / name
                if not path.exists():
                    raise IndexFormatError(f"{path} is missing")
                if path.stat().st_size != info["size"]:
                    raise IndexFormatError(
                        f"{path} has {path.stat().st_size} bytes, expected {info['size']}: "
                        "the index is truncated or corrupt"
                    )
                if verify and _sha256(path) != info["sha256"]:
                    raise IndexFormatError(f"{path} is corrupt (checksum mismatch)")
            try:
                shard = Shard(sd, base, dict(sm["dtypes"]), int(meta["max_n"]), verify)
            except (KeyError, TypeError, ValueError) as exc:
                raise IndexFormatError(f"{sd}: malformed shard metadata: {exc}") from exc
            if shard.n_docs != sm["n_docs"]:
                raise IndexFormatError(f"{sd}: document count does not match metadata")
            base += shard.n_docs
            shards.append(shard)
        if base != meta.get("n_docs"):
            raise IndexFormatError(f"{d}: document count does not match metadata")
        return cls(d, meta, shards)

    def save(self, directory: str | Path) -> Path:
        """Copy the index to ``directory`` (created; must not exist or be empty)."""
        out = Path(directory)
        if out.resolve() == self.directory.resolve():
            return out
        if out.exists() and any(out.iterdir()):
            raise ConfigError(f"index directory {out} is not empty")
        out.mkdir(parents=True, exist_ok=True, mode=0o700)
        for sm in self.meta["shards"]:
            src, dst = self.directory / sm["dir"], out / sm["dir"]
            dst.mkdir(mode=0o700, exist_ok=True)
            for name in SHARD_FILES:
                write_private(dst / name, (src / name).read_bytes())
        write_private(out / META_FILE, (self.directory / META_FILE).read_bytes())
        return out

    # -- properties -----------------------------------------------------------------
    @property
    def max_n(self) -> int:
        return self.tokenizer.max_n

    @property
    def n_docs(self) -> int:
        return int(self.meta["n_docs"])

    @property
    def doc_ids(self) -> list[str]:
        """Document ids by ordinal."""
        if self._doc_ids is None:
            self._doc_ids = [i for s in self.shards for i in s.doc_ids]
        return self._doc_ids

    @property
    def doc_groups(self) -> list[str]:
        """Group of each document, by ordinal (a person or case; each document is its own
        group when the collection has no groups)."""
        return self.doc_ids

    def doc_words(self, ordinal: int) -> list[str]:
        """The normalised words of document ``ordinal`` in order, ``""`` closing each
        segment (what an aligner needs to compare a text with its source)."""
        if not 0 <= ordinal < self.n_docs:
            raise IndexError(f"document ordinal {ordinal} out of range")
        for s in self.shards:
            if ordinal < s.doc_base + s.n_docs:
                restore = s.trie.restore_key
                return [
                    restore(int(t)) if t >= 0 else ""
                    for t in s.doc_tokens(ordinal - s.doc_base).tolist()
                ]
        raise AssertionError("unreachable")

    def stats(self) -> dict[str, object]:
        """Counts and sizes."""
        size = sum(p.stat().st_size for p in self.directory.rglob("*") if p.is_file())
        return {
            "format_version": FORMAT_VERSION,
            "n_docs": self.n_docs,
            "n_words": self.meta["n_words"],
            "max_n": self.max_n,
            "n_shards": len(self.shards),
            "n_keys": sum(s.n_keys for s in self.shards),
            "n_postings": sum(len(s.postings) for s in self.shards),
            "keys_per_n": {
                n: sum(int(sm.get(f"n_keys_{n}", 0)) for sm in self.meta["shards"])
                for n in range(1, self.max_n + 1)
            },
            "bytes_on_disk": size,
            "tokenizer": self.meta["tokenizer"],
        }

    # -- queries ---------------------------------------------------------------------
    def words_of(self, phrase: str) -> list[str]:
        """Normalised words of a phrase that must be a single segment."""
        segs = self.tokenizer.word_segments(phrase)
        if len(segs) > 1:
            raise InputError(
                "the phrase crosses punctuation or a placeholder, so it is not one N-gram"
            )
        return segs[0] if segs else []

    def lookup(self, words: Sequence[str]) -> np.ndarray:
        """Global document ordinals (sorted) of an N-gram given as normalised words."""
        if not words:
            return np.empty(0, dtype=np.int64)
        parts = [s.lookup(words).astype(np.int64) + s.doc_base for s in self.shards]
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def df_words(self, words: Sequence[str]) -> int:
        """Document frequency of an N-gram given as normalised words."""
        if not words:
            return 0
        if len(self.shards) == 1:
            shard = self.shards[0]
            kid = shard.key_id(" ".join(words))
            if kid is not None:
                return shard.df_of(kid)
        return len(self.lookup(words))

    def df(self, phrase: str) -> int:
        """In how many documents does ``phrase`` (one N-gram, raw text) occur?"""
        return self.df_words(self.words_of(phrase))

    def postings(self, phrase: str) -> list[str]:
        """Ids of the documents that contain ``phrase`` (one N-gram, raw text)."""
        ids = self.doc_ids
        return [ids[i] for i in self.lookup(self.words_of(phrase)).tolist()]

    def df_keys(self, keys: Sequence[str]) -> np.ndarray:
        """Bulk document frequency of normalised keys (words joined by one space).

        Repeated keys are looked up once; shards are summed (their documents differ).
        """
        distinct = list(dict.fromkeys(keys))
        found = np.zeros(len(distinct), dtype=np.int64)
        for shard in self.shards:
            get = shard.trie.get
            offs = shard.offsets
            kids = np.fromiter((get(k, -1) for k in distinct), dtype=np.int64, count=len(distinct))
            hit = kids >= 0
            found[hit] += (offs[kids[hit] + 1] - offs[kids[hit]]).astype(np.int64)
            for i in np.flatnonzero(~hit).tolist():
                found[i] += len(shard.lookup(distinct[i].split(" "), stored=False))
        if len(distinct) == len(keys):
            return found
        where = {k: i for i, k in enumerate(distinct)}
        return found[np.fromiter((where[k] for k in keys), dtype=np.int64, count=len(keys))]

    def postings_keys(self, keys: Sequence[str]) -> list[np.ndarray]:
        """Bulk global posting lists of normalised keys."""
        return [self.lookup(k.split(" ")) for k in keys]

    def prefix_dfs(self, words: Sequence[str], below: int) -> list[int]:
        """Document frequencies of ``words[:1]``, ``words[:2]``, ... (detector's hot path).

        Stops after the first prefix whose df is below ``below``.  A prefix stored in no
        shard of a single-shard index is reported as 0: it contains a sub-N-gram found
        in at most one document, so it is either absent or not minimal (never a
        *minimal* N-gram with ``1 <= df < below`` for ``below >= 2``).
        """
        out: list[int] = []
        if len(self.shards) == 1 and below >= 2:
            shard = self.shards[0]
            expect = 1
            for p, kid in shard.prefixes(" ".join(words)):
                n = p.count(" ") + 1
                if n != expect:
                    break
                df = shard.df_of(kid)
                out.append(df)
                if df < below:
                    return out
                expect += 1
            if len(out) < len(words):
                out.append(0)
            return out
        for n in range(1, len(words) + 1):
            df = len(self.lookup(words[:n]))
            out.append(df)
            if df < below:
                break
        return out

    def prefix_dfs_many(self, queries: Sequence[Sequence[str]], below: int) -> list[list[int]]:
        """:meth:`prefix_dfs` for many word lists (the whole text at once).

        On a single shard the trie walks are done first and the document frequencies
        read in one vectorised step: reading array scalars one by one dominated the cost.
        """
        if not (len(self.shards) == 1 and below >= 2):
            return [self.prefix_dfs(q, below) for q in queries]
        shard = self.shards[0]
        kids: list[int] = []
        counts: list[int] = []
        for words in queries:
            c = 0
            key = " ".join(words)
            for p, kid in shard.trie.iter_prefixes_with_ids(key):
                lp = len(p)
                if lp != len(key) and key[lp] != " ":
                    continue  # a prefix ending inside a word
                kids.append(kid)
                c += 1
            counts.append(c)
        ids = np.asarray(kids, dtype=np.int64)
        dfs = (shard.offsets[ids + 1] - shard.offsets[ids]).astype(np.int64).tolist()
        out: list[list[int]] = []
        pos = 0
        for words, c in zip(queries, counts, strict=True):
            row: list[int] = []
            for df in dfs[pos : pos + c]:
                row.append(df)
                if df < below:
                    break
            else:
                if len(row) < len(words):
                    row.append(0)  # not stored: see prefix_dfs
            out.append(row)
            pos += c
        return out

    def iter_keys(self) -> Iterator[tuple[str, int]]:
        """Stored keys with their df (a shard-merged view; for tests and tools)."""
        seen: set[str] = set()
        for s in self.shards:
            for key, _ in s.iter_keys():
                if key not in seen:
                    seen.add(key)
                    yield key, self.df_words(key.split(" "))


def _flush(
    builder: ShardBuilder, out: Path, number: int, max_n: int, vocab: dict[str, int]
) -> dict[str, Any]:
    name = f"shard-{number:05d}"
    log.debug("writing %s (%d documents)", name, len(builder.doc_ids))
    counts = builder.write(out / name, max_n, vocab)
    files = {
        f: {"size": (out / name / f).stat().st_size, "sha256": _sha256(out / name / f)}
        for f in SHARD_FILES
    }
    return {"dir": name, **counts, "files": files}


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()

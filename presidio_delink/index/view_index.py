"""`ViewIndex`: the N-gram key space of one view (text model) of the collection.

Document frequency and posting lists (global document ordinals) of every N-gram, exact
for N-grams of any length (see :mod:`presidio_delink.index.shard` for the storage rule).
Built and opened by :class:`~presidio_delink.index.NgramIndex`, which holds one per view.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import IndexFormatError
from presidio_delink.index.format import sha256_file
from presidio_delink.index.shard import Shard
from presidio_delink.text import Tokenizer


class ViewIndex:
    """One view's key space: its shards (queried together) and its tokenizer."""

    def __init__(self, name: str, tokenizer: Tokenizer, shards: list[Shard]) -> None:
        self.name = name
        self.tokenizer = tokenizer
        self.shards = shards

    @classmethod
    def load(
        cls, directory: Path, vm: dict[str, Any], n_docs: int, *, verify: bool
    ) -> ViewIndex:
        """Open the view described by ``vm`` (its entry of ``meta.json``, validated)."""
        tok = Tokenizer.from_settings(vm["tokenizer"])
        shards: list[Shard] = []
        base = 0
        for sm in vm["shards"]:
            sd = directory / sm["dir"]
            for name, info in sm["files"].items():
                path = sd / name
                if not path.is_file():
                    raise IndexFormatError(f"{path} is missing")
                if path.stat().st_size != info["size"]:
                    raise IndexFormatError(
                        f"{path} has {path.stat().st_size} bytes, expected {info['size']}: "
                        "the index is truncated or corrupt"
                    )
                if verify and sha256_file(path) != info["sha256"]:
                    raise IndexFormatError(f"{path} is corrupt (checksum mismatch)")
            shard = Shard(sd, base, dict(sm["dtypes"]), tok.max_n, verify)
            if shard.n_docs != sm["n_docs"]:
                raise IndexFormatError(f"{sd}: document count does not match metadata")
            base += shard.n_docs
            shards.append(shard)
        if base != n_docs:
            raise IndexFormatError(f"{directory}: document count does not match metadata")
        return cls(vm["name"], tok, shards)

    @property
    def max_n(self) -> int:
        return self.tokenizer.max_n

    @property
    def n_keys(self) -> int:
        return sum(s.n_keys for s in self.shards)

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

    def doc_words(self, ordinal: int) -> list[str]:
        """The normalised words of document ``ordinal`` in order, ``""`` closing each
        segment (what an aligner needs to compare a text with its source)."""
        if not 0 <= ordinal < self.shards[-1].doc_base + self.shards[-1].n_docs:
            raise IndexError(f"document ordinal {ordinal} out of range")
        for s in self.shards:
            if ordinal < s.doc_base + s.n_docs:
                restore = s.trie.restore_key
                return [
                    restore(int(t)) if t >= 0 else ""
                    for t in s.doc_tokens(ordinal - s.doc_base).tolist()
                ]
        raise AssertionError("unreachable")


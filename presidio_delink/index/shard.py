"""One shard of the N-gram index: a marisa-trie of keys plus memory-mapped arrays.

This is the only module that imports ``marisa_trie``.

A shard stores an N-gram ``g`` (its key, document frequency and posting list) exactly
when every proper sub-N-gram of ``g`` occurs in at least two documents of the shard
("apriori" pruning).  Every unigram is stored.  Any other N-gram has a stored sub-N-gram
that occurs in at most one document, so its own document frequency is 0 or 1 and is
found exactly by scanning that single document in the shard's token array
(:meth:`Shard.verify`).  Consequences used by the detector:

* a *minimal* N-gram with ``1 <= df < k`` (k >= 2) is always stored, because all its
  proper sub-N-grams have ``df >= k >= 2``;
* every N-gram with ``df >= 2`` whose sub-N-grams all have ``df >= 2`` is stored.

Files of a shard directory (little-endian; integer widths are the smallest that fit and
are recorded in the index metadata):

``ngrams.marisa``  marisa-trie of keys (normalised words joined by one space)
``offsets.bin``    ``K + 1`` offsets into postings, indexed by trie key id
``postings.bin``   document ordinals (local to the shard), sorted within each key
``tokens.bin``     the shard's text as shard vocabulary ids; ``V`` closes a segment
``vocab.bin``      trie key id of each of the ``V`` vocabulary words (their unigrams)
``doc_starts.bin`` ``D + 1`` offsets into ``tokens.bin``
``doc_ids.json``   the ``D`` document ids
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import marisa_trie
import numpy as np

from presidio_delink.errors import IndexFormatError
from presidio_delink.index.format import write_private

SHARD_FILES = (
    "ngrams.marisa",
    "offsets.bin",
    "postings.bin",
    "tokens.bin",
    "vocab.bin",
    "doc_starts.bin",
    "doc_ids.json",
)
ARRAYS = ("offsets", "postings", "tokens", "vocab", "doc_starts")


def smallest_uint(max_value: int) -> str:
    """The narrowest little-endian unsigned dtype holding ``max_value``."""
    for code, limit in (("<u2", 0xFFFF), ("<u4", 0xFFFFFFFF)):
        if max_value <= limit:
            return code
    return "<u8"


def write_shard(
    directory: Path,
    keys: list[str],
    offsets: np.ndarray,
    postings: np.ndarray,
    tokens: np.ndarray,
    doc_starts: np.ndarray,
    doc_ids: list[str],
) -> dict[str, str]:
    """Write a shard; returns the dtype of each array file.

    ``keys[j]`` owns ``postings[offsets[j]:offsets[j+1]]``; the first ``V`` keys are the
    unigrams, in vocabulary-id order; ``tokens`` holds vocabulary ids, ``-1`` closing
    each segment.
    """
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    n_vocab = int(tokens.max()) + 1 if len(tokens) else 0
    trie = marisa_trie.Trie(keys)
    # Reorder the posting lists by trie key id.
    tid = np.array([trie[k] for k in keys], dtype=np.int64)
    order = np.empty(len(keys), dtype=np.int64)
    order[tid] = np.arange(len(keys), dtype=np.int64)
    lengths = np.diff(offsets)[order]
    new_offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    starts = offsets[:-1][order]
    idx = np.repeat(starts - new_offsets[:-1], lengths) + np.arange(
        int(new_offsets[-1]), dtype=np.int64
    )
    dtypes = {
        "offsets": smallest_uint(int(new_offsets[-1])),
        "postings": smallest_uint(max(len(doc_ids) - 1, 0)),
        "tokens": smallest_uint(n_vocab),
        "vocab": smallest_uint(max(len(keys) - 1, 0)),
        "doc_starts": smallest_uint(len(tokens)),
    }
    arrays = {
        "offsets": new_offsets,
        "postings": postings[idx],
        "tokens": np.where(tokens >= 0, tokens, n_vocab),
        "vocab": tid[:n_vocab],
        "doc_starts": doc_starts,
    }
    tmp = directory / "ngrams.marisa.tmp"
    trie.save(str(tmp))
    os.chmod(tmp, 0o600)
    os.replace(tmp, directory / "ngrams.marisa")
    for name, arr in arrays.items():
        write_private(directory / f"{name}.bin", np.asarray(arr).astype(dtypes[name]).tobytes())
    write_private(directory / "doc_ids.json", json.dumps(doc_ids).encode("utf-8"))
    return dtypes


class Shard:
    """A loaded shard (read-only; arrays are memory-mapped)."""

    def __init__(
        self,
        directory: Path,
        doc_base: int,
        dtypes: dict[str, str],
        max_n: int,
        check_values: bool = True,
    ) -> None:
        self.directory = directory
        self.doc_base = doc_base
        self.max_n = max_n
        try:
            self.trie = marisa_trie.Trie()
            self.trie.mmap(str(directory / "ngrams.marisa"))
            if set(dtypes) != set(ARRAYS) or not set(dtypes.values()) <= {"<u2", "<u4", "<u8"}:
                raise IndexFormatError(f"{directory}: bad array types {dtypes!r}")
            self.offsets = _map(directory / "offsets.bin", dtypes["offsets"])
            self.postings = _map(directory / "postings.bin", dtypes["postings"])
            self.tokens = _map(directory / "tokens.bin", dtypes["tokens"])
            self.vocab = _map(directory / "vocab.bin", dtypes["vocab"])
            self.doc_starts = _map(directory / "doc_starts.bin", dtypes["doc_starts"])
            self._witness_memo: dict[tuple[str, ...], int | None] = {}
            self._ngram_cache: dict[int, set[str]] = {}
            # vocabulary id -> trie id, with the segment mark (V) mapped to -1
            self._tok_tid = np.append(np.asarray(self.vocab, dtype=np.int64), -1)
            with open(directory / "doc_ids.json", encoding="utf-8") as f:
                self.doc_ids: list[str] = json.load(f)
        except IndexFormatError:
            raise
        except (OSError, ValueError, RuntimeError) as exc:
            raise IndexFormatError(f"cannot read index shard {directory}: {exc}") from exc
        self._check(check_values)

    def _check(self, check_values: bool) -> None:
        n_keys = len(self.trie)
        d = len(self.doc_ids)
        where = self.directory
        if len(self.offsets) != n_keys + 1 or (n_keys and int(self.offsets[0]) != 0):
            raise IndexFormatError(f"{where}: offsets do not match the {n_keys} keys")
        if int(self.offsets[-1]) != len(self.postings):
            raise IndexFormatError(f"{where}: postings file is truncated or too long")
        if len(self.doc_starts) != d + 1 or int(self.doc_starts[-1]) != len(self.tokens):
            raise IndexFormatError(f"{where}: document table does not match the token file")
        if not check_values:
            return  # the value scans below read every array once
        if len(self.postings) and int(self.postings.max()) >= max(d, 1):
            raise IndexFormatError(f"{where}: a posting points past the document table")
        if len(self.tokens) and int(self.tokens.max()) > len(self.vocab):
            raise IndexFormatError(f"{where}: a token points past the vocabulary")
        if len(self.vocab) and int(self.vocab.max()) >= max(n_keys, 1):
            raise IndexFormatError(f"{where}: the vocabulary points past the keys")
        if not all(isinstance(x, str) for x in self.doc_ids):
            raise IndexFormatError(f"{where}: document ids are not strings")

    @property
    def n_docs(self) -> int:
        return len(self.doc_ids)

    @property
    def n_keys(self) -> int:
        return len(self.trie)

    def key_id(self, key: str) -> int | None:
        """Trie id of a stored key, or None."""
        got: int | None = self.trie.get(key)
        return got

    def df_of(self, kid: int) -> int:
        return int(self.offsets[kid + 1] - self.offsets[kid])

    def postings_of(self, kid: int) -> np.ndarray:
        """Local document ordinals of a stored key."""
        return np.asarray(self.postings[int(self.offsets[kid]) : int(self.offsets[kid + 1])])

    def prefixes(self, key: str) -> Iterator[tuple[str, int]]:
        """Stored keys that are word-prefixes of ``key`` (shortest first), with ids."""
        n = len(key)
        for p, kid in self.trie.iter_prefixes_with_ids(key):
            if len(p) == n or key[len(p)] == " ":
                yield p, kid

    def iter_keys(self) -> Iterator[tuple[str, int]]:
        yield from self.trie.iteritems()

    def doc_tokens(self, d: int) -> np.ndarray:
        """Document ``d`` as trie ids of its words, ``-1`` closing each segment."""
        toks = self.tokens[int(self.doc_starts[d]) : int(self.doc_starts[d + 1])]
        return self._tok_tid[np.asarray(toks, dtype=np.int64)]

    def lookup(self, words: Sequence[str], stored: bool = True) -> np.ndarray:
        """Exact local posting list of any N-gram, stored or not (any length).

        ``stored=False`` skips the trie look-up of the whole key (known to be absent).
        """
        if stored:
            kid = self.key_id(" ".join(words))
            if kid is not None:
                return self.postings_of(kid)
        if len(words) <= self.max_n:
            # Not stored, so df <= 1; if it occurs, a stored sub-N-gram has df 1 and the
            # N-gram is among that one document's N-grams.
            wit = self._witness(tuple(words))
            if wit is None:
                return _EMPTY
            d = int(self.postings[int(self.offsets[wit])])
            if " ".join(words) in self._doc_ngrams(d):
                return np.array([d], dtype=np.uint32)
            return _EMPTY
        # Longer than the stored levels: candidates from the rarest stored piece.
        cands = self._rarest_piece(words)
        if len(cands) == 0:
            return _EMPTY
        seq = [self.key_id(w) for w in words]
        if any(x is None for x in seq):
            return _EMPTY
        needle = np.asarray(seq, dtype=np.int64)
        return np.asarray([d for d in cands if self._contains(int(d), needle)], dtype=np.uint32)

    def _doc_ngrams(self, d: int) -> set[str]:
        """Every N-gram key (1..max_n words) of document ``d``; the last few are cached
        (a bulk look-up of one text's N-grams keeps verifying against the same documents)."""
        got = self._ngram_cache.get(d)
        if got is None:
            if len(self._ngram_cache) >= 16:
                self._ngram_cache.pop(next(iter(self._ngram_cache)))
            restore = self.trie.restore_key
            words = [restore(int(t)) if t >= 0 else "" for t in self.doc_tokens(d).tolist()]
            got = set()
            seg: list[str] = []
            for w in [*words, ""]:
                if w:
                    seg.append(w)
                    continue
                for i in range(len(seg)):
                    for n in range(1, min(self.max_n, len(seg) - i) + 1):
                        got.add(" ".join(seg[i : i + n]))
                seg = []
            self._ngram_cache[d] = got
        return got

    def _witness(self, words: tuple[str, ...]) -> int | None:
        """For an N-gram that is not stored (``n <= max_n``): a stored sub-N-gram with
        df 1 (its only document is the only candidate), or None when the N-gram occurs
        nowhere.

        Not stored means a proper sub-N-gram has df <= 1 or the N-gram does not occur.
        If its prefix and suffix are both stored with df >= 2, every proper sub-N-gram
        has df >= 2, so it does not occur.  Otherwise take a piece with df 1, or recurse
        into a piece that is not stored.  Results are memoised (bulk look-ups of one
        text ask for overlapping N-grams).
        """
        memo = self._witness_memo
        if words in memo:
            return memo[words]
        found: int | None = None
        if len(words) > 1:
            parts = (words[:-1], words[1:])
            ids = [self.key_id(" ".join(p)) for p in parts]
            for pid in ids:
                if pid is not None and self.df_of(pid) <= 1:
                    found = pid
                    break
            else:
                for part, pid in zip(parts, ids, strict=True):
                    if pid is None:
                        found = self._witness(part)
                        break  # None: that piece occurs nowhere, so neither does this
        if len(memo) > 20_000:
            memo.clear()
        memo[words] = found
        return found

    def _rarest_piece(self, words: Sequence[str]) -> np.ndarray:
        best: int | None = None
        for i in range(len(words)):
            found = False
            for _, pid in self.prefixes(" ".join(words[i:])):
                found = True
                if best is None or self.df_of(pid) < self.df_of(best):
                    best = pid
            if not found:  # words[i] occurs nowhere
                return np.empty(0, dtype=np.uint32)
        assert best is not None
        return self.postings_of(best)

    def _contains(self, d: int, seq: np.ndarray) -> bool:
        hay = self.doc_tokens(d).tobytes()  # only for N-grams longer than the stored levels
        needle = seq.tobytes()
        at = hay.find(needle)
        while at >= 0:
            if at % 8 == 0:
                return True
            at = hay.find(needle, at + 1)
        return False


_EMPTY = np.empty(0, dtype=np.uint32)


def _map(path: Path, dtype: str) -> np.ndarray:
    size = path.stat().st_size
    itemsize = np.dtype(dtype).itemsize
    if size % itemsize:
        raise IndexFormatError(f"{path} is truncated ({size} bytes)")
    if size == 0:
        return np.empty(0, dtype=dtype)
    # A plain ndarray view of the map: indexing a np.memmap object is several times slower.
    return np.memmap(path, dtype=dtype, mode="r").view(np.ndarray)

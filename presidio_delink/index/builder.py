"""Streaming, out-of-core construction of the N-gram index.

Documents are tokenised one by one and appended to the current shard as vocabulary
ids; when a shard reaches ``shard_words`` words it is built in memory with numpy
(sort-based counting, level by level) and written to disk, so peak memory depends on
the shard size, not on the collection size.  Shards are queried together.

Per shard, level ``n`` (N-grams of ``n`` words) is computed only at positions where
both ``(n-1)``-grams (prefix and suffix) are stored and occur in at least two
documents; see :mod:`presidio_delink.index.shard` for why this keeps queries exact.
"""

from __future__ import annotations

import logging
from array import array
from pathlib import Path

import numpy as np

from presidio_delink.errors import InputError
from presidio_delink.index.shard import write_shard

log = logging.getLogger(__name__)


class ShardBuilder:
    """Accumulates the documents of one shard as word ids of a build-wide vocabulary."""

    def __init__(self) -> None:
        self.tokens = array("i")
        self.doc_starts = array("q", [0])
        self.doc_ids: list[str] = []
        self.n_words = 0

    def add(self, doc_id: str, ids: list[int]) -> int:
        """Append a document (word ids, -1 closing each segment); returns its word count."""
        n = len(ids) - ids.count(-1)
        self.n_words += n
        self.tokens.extend(ids)
        self.doc_starts.append(len(self.tokens))
        self.doc_ids.append(doc_id)
        return n

    def write(self, directory: Path, max_n: int, vocab: dict[str, int]) -> dict[str, object]:
        """Build the shard's arrays and write them; returns counts."""
        toks = (
            np.frombuffer(self.tokens, dtype=np.int32)
            if len(self.tokens)
            else np.empty(0, dtype=np.int32)
        )
        doc_starts = np.frombuffer(self.doc_starts, dtype=np.int64)
        # Re-number the build-wide word ids compactly for this shard.
        valid = toks >= 0
        used, local = sorted_unique(toks[valid].astype(np.int64))
        shard_toks = np.full(len(toks), -1, dtype=np.int32)
        shard_toks[valid] = local
        all_words = list(vocab)
        words = [all_words[i] for i in used.tolist()]
        keys, offsets, postings, per_level = build_arrays(shard_toks, doc_starts, words, max_n)
        dtypes = write_shard(
            directory, keys, offsets, postings, shard_toks, doc_starts, self.doc_ids
        )
        return {
            "dtypes": dtypes,
            "n_docs": len(self.doc_ids),
            "n_words": int(valid.sum()),
            "n_keys": len(keys),
            "n_postings": len(postings),
            **{f"n_keys_{n}": c for n, c in per_level.items()},
        }


def build_arrays(
    toks: np.ndarray, doc_starts: np.ndarray, vocab: list[str], max_n: int
) -> tuple[list[str], np.ndarray, np.ndarray, dict[int, int]]:
    """Count N-grams of a shard.

    Args:
        toks: vocabulary ids, ``-1`` after every segment.
        doc_starts: ``D + 1`` offsets of documents in ``toks``.
        vocab: words by vocabulary id.
        max_n: longest N-gram.

    Returns:
        ``(keys, offsets, postings, keys_per_level)``; unigram ``v`` is ``keys[v]``.
    """
    n_docs = len(doc_starts) - 1
    length = len(toks)
    n_vocab = len(vocab)
    doc_of = np.repeat(np.arange(n_docs, dtype=np.int64), np.diff(doc_starts))
    # rem[i]: number of words from i to the end of its segment.
    seps = np.flatnonzero(toks < 0)
    if length:
        nxt = seps[np.searchsorted(seps, np.arange(length), side="left")]
        rem = (nxt - np.arange(length)).astype(np.int32)
    else:
        rem = np.empty(0, dtype=np.int32)

    keys: list[str] = []
    offsets_parts: list[np.ndarray] = []
    postings_parts: list[np.ndarray] = []
    per_level: dict[int, int] = {}
    n_post = 0

    # Level 1.
    pos = np.flatnonzero(toks >= 0)
    ids = toks[pos].astype(np.int64)
    level_keys = vocab
    rank = np.full(length, -1, dtype=np.int64)
    rank[pos] = ids
    n_level = n_vocab
    df_prev = np.zeros(0, dtype=np.int64)
    for n in range(1, max_n + 1):
        if n > 1:
            if length == 0:
                break
            good = np.zeros(length + 1, dtype=bool)
            okpos = np.flatnonzero(rank >= 0)
            good[okpos] = df_prev[rank[okpos]] >= 2
            cand = np.flatnonzero(good[:-1] & good[1:] & (rem[:length] >= n))
            if len(cand) == 0:
                break
            pair = rank[cand] * n_vocab + toks[cand + n - 1].astype(np.int64)
            uniq, inv = sorted_unique(pair)
            prev_keys = level_keys
            level_keys = [
                f"{prev_keys[p]} {vocab[w]}"
                for p, w in zip((uniq // n_vocab).tolist(), (uniq % n_vocab).tolist(), strict=True)
            ]
            rank = np.full(length, -1, dtype=np.int64)
            rank[cand] = inv
            pos, ids, n_level = cand, inv.astype(np.int64), len(uniq)
        # Document frequency and postings of this level.
        dpair, _ = sorted_unique(ids * max(n_docs, 1) + doc_of[pos])
        kid = dpair // max(n_docs, 1)
        df = np.bincount(kid, minlength=n_level)
        offs = np.zeros(n_level, dtype=np.int64)
        np.cumsum(df[:-1], out=offs[1:])
        offsets_parts.append(offs + n_post)
        postings_parts.append((dpair % max(n_docs, 1)).astype(np.uint32))
        n_post += len(dpair)
        keys.extend(level_keys)
        per_level[n] = n_level
        df_prev = df

    offsets = np.concatenate([*offsets_parts, np.array([n_post], dtype=np.int64)])
    postings = np.concatenate(postings_parts) if postings_parts else np.empty(0, dtype=np.uint32)
    return keys, offsets, postings, per_level


def sorted_unique(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` for int64, by one stable argsort."""
    if len(values) == 0:
        return values, np.empty(0, dtype=np.int64)
    order = np.argsort(values, kind="stable")
    sv = values[order]
    first = np.empty(len(sv), dtype=bool)
    first[0] = True
    np.not_equal(sv[1:], sv[:-1], out=first[1:])
    inverse = np.empty(len(sv), dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return sv[first], inverse


def check_doc_id(doc_id: object, seen: set[str]) -> str:
    """Validate a document id; duplicates are an error (their postings would merge)."""
    if isinstance(doc_id, bool) or not isinstance(doc_id, str | int):
        raise InputError(f"document id must be a string or integer, got {type(doc_id).__name__}")
    sid = str(doc_id)
    if not sid:
        raise InputError("empty document id")
    if sid in seen:
        raise InputError(f"duplicate document id {sid!r}")
    seen.add(sid)
    return sid

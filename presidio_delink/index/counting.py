"""Phase 2 of the build: global level-wise counting, merged range by range on the workers.

**Definitions.**  The key space of a view is split into ``P`` partitions by the first word
of a key (:func:`~presidio_delink.index.shard.partition_of`, the split look-ups use).
Every prefix of a key starts with the same word, so the level-``(n-1)`` prefix of a
level-``n`` key lies in the same partition.  Within partition ``p``, level ``n``'s keys
get *local ids* ``0 .. K(p, n) - 1`` in the order of their *codes*: a word's code is its
word id; a longer key's code is ``prefix local id * V + last word id`` (``V``: the
vocabulary size).  A key is thus named by ``(p, n, local id)``, and no global numbering
of a level (which only a single process could hand out) is needed.

**Per level** (three sets of independent tasks, files in between):

1. :func:`count_shard`, one task per document range (shard): the level's candidate
   positions (level 1: every word; level ``n``: positions whose prefix and suffix
   ``(n-1)``-grams are stored and occur in at least two documents of the whole
   collection), their partition and code, sorted by (partition, code, document): the
   shard's distinct codes per partition with their document counts there, and its
   distinct (code, document) pairs.
2. :func:`merge_partition`, one task per partition: every shard's distinct codes of that
   partition (a slice of each shard's file, memory-mapped), merged into the partition's
   sorted keys and global document frequencies (a document lies in one shard, so a code's
   df is the sum of its shard counts); for each shard, the local id of each of its codes
   and whether that key occurs in two or more documents.  It returns two integers.
3. :func:`rank_shard`, one task per shard: each candidate position's local id and flag
   (what level ``n + 1`` reads), and the postings ``(local id, document)`` grouped by
   partition for phase 3.

**Why it is exact.**  The candidates and their (code, document) pairs are those of a
single-process count, only split by partition; a partition's merge sees every shard's
codes of that partition and nothing else is needed to count them.  The stored keys and
document frequencies therefore do not depend on the number of shards, partitions or
workers.

**Cost.**  Each task holds one shard's arrays or one partition's keys of one level (about
16 bytes per distinct candidate of that partition and level); this process (the driver)
holds the vocabulary's partition bounds and a few integers per partition and level,
whatever the size of the collection.  Files per level: a handful per shard and
per partition, never one per (shard, partition) pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

_I64 = np.iinfo(np.int64).max


def _fresh(v: np.ndarray) -> np.ndarray:
    """For a sorted array: True where a value differs from the one before (the first of
    each run)."""
    keep = np.ones(len(v), dtype=bool)
    np.not_equal(v[1:], v[:-1], out=keep[1:])
    return keep


def _unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values of an int64 array (a sort and a diff: numpy's hash-based
    ``unique`` is several times slower on these arrays)."""
    if len(values) == 0:
        return values.astype(np.int64)
    v = np.sort(values)
    return v[_fresh(v)]


@dataclass(frozen=True)
class ShardRef:
    """What a counting task needs to read one document range of a word model."""

    directory: str
    dtypes: dict[str, str]
    doc_base: int
    n_vocab: int
    cross: bool
    work: str  # this shard's scratch folder for the view
    index: int = 0  # its position among the view's shards


_LOADED: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def _load(ref: ShardRef) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Word ids (``-1`` closing a segment, in the view's break mode), each position's
    local document ordinal, and the words left in its segment.  The last shard loaded
    is kept: a task of the next level (in this process) usually reads the same one."""
    key = (ref.directory, ref.cross)
    got = _LOADED.get(key)
    if got is None:
        got = _read(ref)
        _LOADED.clear()
        _LOADED[key] = got
    return got


def _read(ref: ShardRef) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    d = Path(ref.directory)
    toks = np.fromfile(d / "tokens.bin", dtype=ref.dtypes["tokens"]).astype(np.int64)
    starts = np.fromfile(d / "doc_starts.bin", dtype=ref.dtypes["doc_starts"]).astype(np.int64)
    v = ref.n_vocab
    doc_local = np.repeat(np.arange(len(starts) - 1, dtype=np.int64), np.diff(starts))
    if ref.cross:
        keep = toks != v + 1
        toks, doc_local = toks[keep], doc_local[keep]
    toks = np.where(toks >= v, -1, toks)
    length = len(toks)
    seps = np.flatnonzero(toks < 0)
    if length and len(seps) and seps[-1] == length - 1:
        nxt = seps[np.searchsorted(seps, np.arange(length), side="left")]
        rem = nxt - np.arange(length)
    else:
        rem = np.zeros(length, dtype=np.int64)
    return toks, doc_local, rem


def shard_path(ref: ShardRef, n: int, what: str) -> Path:
    return Path(ref.work) / f"l{n}.{what}.npy"


def part_path(work: str | Path, n: int, p: int, what: str) -> Path:
    """A file of partition ``p``, level ``n`` in a view's levels folder (``keys``: its
    sorted codes, ``df``: their document frequencies; ``at``/``atb``: for the shards)."""
    return Path(work) / f"level{n}.p{p}.{what}.npy"


def _sorted_triples(
    part: np.ndarray, code: np.ndarray, doc: np.ndarray, n_parts: int, n_docs: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The permutation sorting positions by (partition, code, document), and the sorted
    partitions, codes and documents.  One int64 sort key where it fits (several times
    faster than a lexicographic sort), else ``np.lexsort``."""
    top = int(code.max()) + 1 if len(code) else 1
    n_docs = max(n_docs, 1)
    if n_parts * top * n_docs < _I64 // 2:
        keyed = (part * top + code) * n_docs + doc
        order = np.argsort(keyed)
        keyed = keyed[order]
        sd = keyed % n_docs
        keyed //= n_docs
        return order, keyed // top, keyed % top, sd
    order = np.lexsort((doc, code, part))
    return order, part[order], code[order], doc[order]


def count_shard(
    ref: ShardRef, n: int, n_docs_here: int, bounds_path: str, n_parts: int
) -> int:
    """Task, level ``n``: the shard's candidates, sorted by (partition, code, document);
    writes its distinct codes (``uniq``, with ``ubounds`` per partition and ``cnt``, their
    document counts here), each candidate's distinct code (``inv``) and the distinct
    pairs' documents (``pdoc``).  Returns the number of candidates."""
    toks, doc_of, rem = _load(ref)
    v = ref.n_vocab
    if n == 1:
        cand = np.flatnonzero(toks >= 0)
        codes = toks[cand]
    else:
        rank = np.load(shard_path(ref, n - 1, "rank"))
        good = np.load(shard_path(ref, n - 1, "good"))
        if len(toks):
            cand = np.flatnonzero(good[:-1] & good[1:] & (rem >= n))
        else:
            cand = np.empty(0, dtype=np.int64)
        codes = rank[cand] * v + toks[cand + n - 1]
        del rank, good
    # A word's id names its partition (ids are contiguous per partition: `vocab`).
    part = np.searchsorted(np.load(bounds_path), toks[cand], side="right") - 1
    order, sp, sc, sd = _sorted_triples(part, codes, doc_of[cand], n_parts, n_docs_here)
    del codes, part
    new_code = _fresh(sc)
    if len(sc):
        new_code[1:] |= sp[1:] != sp[:-1]
    new_pair = new_code.copy()
    if len(sd):
        new_pair[1:] |= sd[1:] != sd[:-1]
    inv = np.empty(len(order), dtype=np.int64)
    inv[order] = np.cumsum(new_code) - 1
    del order
    first = np.flatnonzero(new_code)
    uniq, upart = sc[first], sp[first]
    pair_code = np.cumsum(new_code)[new_pair] - 1  # distinct code of each distinct pair
    cnt = np.bincount(pair_code, minlength=len(uniq))
    pdoc = sd[new_pair] + ref.doc_base
    ubounds = np.searchsorted(upart, np.arange(n_parts + 1))
    for what, arr in (
        ("len", np.array([len(toks)])), ("cand", cand), ("inv", inv), ("uniq", uniq),
        ("cnt", cnt), ("ubounds", ubounds), ("pdoc", pdoc),
    ):
        np.save(shard_path(ref, n, what), arr)
    return len(cand)


def merge_partition(p: int, n: int, refs: list[ShardRef], work: str) -> tuple[int, int]:
    """Task, level ``n``: partition ``p``'s keys and document frequencies from every
    shard's codes of ``p``; for the shards, each of their codes' local id and whether it
    occurs in two or more documents (``at = 2 * id + flag``, shard ``s``'s slice at
    ``atb[s]:atb[s + 1]``).  Returns (keys, keys in two or more documents)."""
    us: list[np.ndarray] = []
    cs: list[np.ndarray] = []
    for r in refs:
        b = np.load(shard_path(r, n, "ubounds"))
        lo, hi = int(b[p]), int(b[p + 1])
        us.append(np.asarray(np.load(shard_path(r, n, "uniq"), mmap_mode="r")[lo:hi]))
        cs.append(np.asarray(np.load(shard_path(r, n, "cnt"), mmap_mode="r")[lo:hi]))
    if len(us) == 1:
        keys, df = us[0], cs[0].astype(np.int64)
    else:
        keys = _unique(np.concatenate(us))
        df = np.zeros(len(keys), dtype=np.int64)
    ats = []
    for u, c in zip(us, cs, strict=True):  # codes are distinct within a shard
        at = np.searchsorted(keys, u)
        if len(us) > 1:
            df[at] += c
        ats.append(at)
    del cs
    np.save(part_path(work, n, p, "keys"), keys)
    np.save(part_path(work, n, p, "df"), df)
    flagged = [2 * a + (df[a] >= 2) for a in ats]
    np.save(part_path(work, n, p, "at"), np.concatenate(flagged) if flagged else keys[:0])
    np.save(part_path(work, n, p, "atb"), np.cumsum([0] + [len(a) for a in ats]))
    return len(keys), int(np.count_nonzero(df >= 2))


def rank_shard(ref: ShardRef, n: int, work: str, n_parts: int) -> None:
    """Task, level ``n``: each candidate position's local id (``rank``) and whether its
    key occurs in two or more documents (``good``) for level ``n + 1``, and the postings
    ``(local id, document)`` in partition order (``post.kid``, ``post.doc``; partition
    ``p``'s at ``post.bounds[p]:post.bounds[p + 1]``)."""
    ub = np.load(shard_path(ref, n, "ubounds"))
    at = np.empty(int(ub[-1]), dtype=np.int64)
    s = ref.index
    for p in range(n_parts):
        lo, hi = int(ub[p]), int(ub[p + 1])
        if hi > lo:
            atb = np.load(part_path(work, n, p, "atb"))
            got = np.load(part_path(work, n, p, "at"), mmap_mode="r")
            at[lo:hi] = got[int(atb[s]) : int(atb[s + 1])]
    length = int(np.load(shard_path(ref, n, "len"))[0])
    cand = np.load(shard_path(ref, n, "cand"))
    val = at[np.load(shard_path(ref, n, "inv"))]
    rank = np.full(length, -1, dtype=np.int64)
    rank[cand] = val >> 1
    good = np.zeros(length + 1, dtype=bool)  # one past the end: never good
    good[cand] = (val & 1).astype(bool)
    del val, cand
    np.save(shard_path(ref, n, "rank"), rank)
    np.save(shard_path(ref, n, "good"), good)
    del rank, good
    if n > 1:
        for what in ("rank", "good"):
            shard_path(ref, n - 1, what).unlink(missing_ok=True)
    cnt = np.load(shard_path(ref, n, "cnt"))
    np.save(shard_path(ref, n, "post.kid"), np.repeat(at >> 1, cnt))
    pair_bounds = np.concatenate([[0], np.cumsum(cnt)])[ub]
    np.save(shard_path(ref, n, "post.bounds"), pair_bounds)
    shard_path(ref, n, "pdoc").rename(shard_path(ref, n, "post.doc"))
    for what in ("cand", "inv", "uniq", "cnt", "ubounds", "len"):
        shard_path(ref, n, what).unlink(missing_ok=True)


def shard_postings(ref: ShardRef, n: int, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Partition ``p``'s postings of level ``n`` from one shard: (local ids, documents),
    sorted by local id then document."""
    b = np.load(shard_path(ref, n, "post.bounds"))
    lo, hi = int(b[p]), int(b[p + 1])
    kid = np.load(shard_path(ref, n, "post.kid"), mmap_mode="r")[lo:hi]
    doc = np.load(shard_path(ref, n, "post.doc"), mmap_mode="r")[lo:hi]
    return np.asarray(kid), np.asarray(doc)


def count_view(
    refs: list[ShardRef],
    bounds: list[int],
    max_n: int,
    n_docs: int,
    n_parts: int,
    work: Path,
    runner: Any,
) -> int:
    """Phase 2 for one view; writes per-partition level arrays into ``work``; returns the
    number of levels with keys (``bounds``: the vocabulary's partition bounds)."""
    del n_docs  # documents are numbered per shard while counting
    work.mkdir(parents=True, mode=0o700, exist_ok=True)
    for r in refs:
        Path(r.work).mkdir(parents=True, mode=0o700, exist_ok=True)
    wp_path = work / "vbounds.npy"
    np.save(wp_path, np.asarray(bounds, dtype=np.int64))
    n_here = [_n_docs(r) for r in refs]
    levels = 0
    for n in range(1, max_n + 1):
        runner.map(count_shard, [(r, n, n_here[i], str(wp_path), n_parts)
                                 for i, r in enumerate(refs)])
        merged = runner.map(merge_partition, [(p, n, refs, str(work)) for p in range(n_parts)])
        if sum(k for k, _ in merged) == 0:
            for r in refs:
                for what in ("cand", "inv", "uniq", "cnt", "ubounds", "len", "pdoc"):
                    shard_path(r, n, what).unlink(missing_ok=True)
            for p in range(n_parts):
                for what in ("keys", "df", "at", "atb"):
                    part_path(work, n, p, what).unlink(missing_ok=True)
            break
        runner.map(rank_shard, [(r, n, str(work), n_parts) for r in refs])
        for p in range(n_parts):
            for what in ("at", "atb"):
                part_path(work, n, p, what).unlink(missing_ok=True)
        levels = n
    for r in refs:
        for n in range(1, levels + 1):
            for what in ("rank", "good"):
                shard_path(r, n, what).unlink(missing_ok=True)
    _LOADED.clear()
    return levels


def _n_docs(ref: ShardRef) -> int:
    """Documents of a shard (its document table holds one more offset)."""
    size = (Path(ref.directory) / "doc_starts.bin").stat().st_size
    return size // np.dtype(ref.dtypes["doc_starts"]).itemsize - 1

"""Compact posting lists: delta plus variable-byte coding, complemented when dense.

**Definitions.**  A partition holds ``K`` keys (by trie id); key ``i`` occurs in ``df[i]``
of the collection's ``N`` documents, at the sorted document ordinals ``P(i)``.  Its
*stored list* ``S(i)`` is ``P(i)`` when ``df[i] <= N // 2``, else the complement
``{0..N-1} minus P(i)`` (``N - df[i]`` ordinals): a key found in most documents costs what
a rare one does.  ``S(i)`` is written as its first ordinal, then each gap less one, every
value in LEB128 (7 bits a byte, the high bit set on all bytes but a value's last), the
keys' lists one after another in trie-id order (``postings.bin``).

* ``df.bin``: ``df[i]`` in one byte, ``255`` meaning "at least 255: see ``dfbig.bin``",
  which holds ``(i, df[i])`` of those keys, sorted by ``i``.  ``df[i] == 0`` is a
  tombstone (:class:`~presidio_delink.index.shard.Layered`).
* ``blocks.bin``: the byte offset in ``postings.bin`` of every ``BLOCK``-th key's list
  (and the total length at the end).

**Why it is exact.**  Every key stored keeps its whole posting list (as itself or its
complement, both determine it given ``N``); nothing is dropped, so every command answers
as before.  A list is located from its block's offset and the number of values before it
in the block (the sum of the counts ``min(df, N - df)`` derived from ``df``): the position
of that many value ends (bytes below 128) into the block.

**Cost.**  One byte per key for ``df`` and 8 bytes per ``BLOCK`` keys, against 2-8 bytes
of offsets per key before; a posting takes one byte when the gap to the one before is
below 128 documents, 3 at most below 2**21 documents.  Reading the df of keys (the
detector's hot path) is one memory-mapped byte each; decoding a list reads its block.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

BLOCK = 32
DF_ESCAPE = 255


def stored_counts(df: np.ndarray, n_docs: int) -> np.ndarray:
    """Values stored per key: ``df``, or ``N - df`` for a complemented (dense) list."""
    df = df.astype(np.int64)
    return np.where(df > n_docs // 2, n_docs - df, df)


def _varint(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LEB128 bytes of non-negative int64 ``values``, and each value's byte count."""
    v = values.astype(np.uint64)
    nb = np.ones(len(v), dtype=np.int64)
    for j in range(1, 10):
        nb += v >= np.uint64(1 << (7 * j))
    pos = np.zeros(len(v), dtype=np.int64)
    if len(v):
        np.cumsum(nb[:-1], out=pos[1:])
    out = np.empty(int(nb.sum()), dtype=np.uint8)
    for j in range(int(nb.max()) if len(v) else 0):
        sel = np.flatnonzero(nb > j)
        byte = (v[sel] >> np.uint64(7 * j)) & np.uint64(0x7F)
        more = (nb[sel] > j + 1).astype(np.uint64) << np.uint64(7)
        out[pos[sel] + j] = (byte | more).astype(np.uint8)
    return out, nb


def decode_values(data: np.ndarray) -> np.ndarray:
    """The int64 values of a LEB128 byte string (whole values only)."""
    b = np.asarray(data, dtype=np.uint8)
    if len(b) == 0:
        return np.empty(0, dtype=np.int64)
    ends = np.flatnonzero(b < 0x80)
    starts = np.empty(len(ends), dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    if len(ends) == len(b):  # every value one byte: the common case
        return b.astype(np.int64)
    group = np.repeat(np.arange(len(ends)), ends - starts + 1)
    shift = (np.arange(len(b), dtype=np.int64) - starts[group]) * 7
    part = (b.astype(np.int64) & 0x7F) << shift
    return np.add.reduceat(part, starts)


CHUNK = 1 << 22  # postings coded at a time: bounds the coder's memory (a few copies)


def encode(
    offsets: np.ndarray, postings: np.ndarray, n_docs: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(df8, dfbig, blocks, data)`` of posting lists given as ``offsets`` (``K + 1``)
    into sorted, per-key-ascending ``postings``; ``dfbig`` is a ``(2, m)`` array.  Keys
    are coded in runs of about :data:`CHUNK` postings."""
    off = np.asarray(offsets, dtype=np.int64)
    df = np.diff(off)
    n_keys = len(df)
    key_bytes = np.zeros(n_keys + 1, dtype=np.int64)
    pieces: list[np.ndarray] = []
    lo = 0
    while lo < n_keys:
        hi = int(np.searchsorted(off, off[lo] + CHUNK, side="right")) - 1
        hi = min(max(hi, lo + 1), n_keys)
        o = off[lo : hi + 1]
        data, per_key = _encode_run(o - o[0], postings[int(o[0]) : int(o[-1])], n_docs)
        pieces.append(data)
        key_bytes[lo + 1 : hi + 1] = per_key
        lo = hi
    np.cumsum(key_bytes, out=key_bytes)
    blocks = np.append(key_bytes[:-1][::BLOCK], key_bytes[-1]).astype(np.uint64)
    big = np.flatnonzero(df >= DF_ESCAPE)
    df8 = np.minimum(df, DF_ESCAPE).astype(np.uint8)
    data = np.concatenate(pieces) if pieces else np.empty(0, dtype=np.uint8)
    return df8, np.stack([big, df[big]]), blocks, data


def _encode_run(
    off: np.ndarray, postings: np.ndarray, n_docs: int
) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of a run of keys' lists and each key's byte count."""
    df = np.diff(off)
    n_keys = len(df)
    post = postings.astype(np.int64)
    dense = df > n_docs // 2
    if dense.any():
        # Each dense list replaced by its complement (few keys: a loop over them); the
        # others keep their order, so they move as one block.
        cnt = np.where(dense, n_docs - df, df)
        new_off = np.zeros(n_keys + 1, dtype=np.int64)
        np.cumsum(cnt, out=new_off[1:])
        out = np.empty(int(new_off[-1]), dtype=np.int64)
        out[np.repeat(~dense, cnt)] = post[np.repeat(~dense, df)]
        for i in np.flatnonzero(dense).tolist():
            mask = np.ones(n_docs, dtype=bool)
            mask[post[off[i] : off[i + 1]]] = False
            out[new_off[i] : new_off[i + 1]] = np.flatnonzero(mask)
        post, off = out, new_off
    cnt = np.diff(off)
    vals = post.copy()
    if len(vals):
        # first ordinal of each list as is, then gaps less one
        vals[1:] -= post[:-1] + 1
        firsts = off[:-1][cnt > 0]
        vals[firsts] = post[firsts]
    del post
    data, nb = _varint(vals)
    per_key = np.zeros(n_keys, dtype=np.int64)
    if len(nb):
        owner = np.repeat(np.arange(n_keys), cnt)
        per_key = np.bincount(owner, weights=nb, minlength=n_keys).astype(np.int64)
    return data, per_key


def locate(kid: int, counts_before: int, blocks: np.ndarray, data: np.ndarray) -> int:
    """Byte offset of key ``kid``'s list, ``counts_before`` values after its block's
    start (see :func:`stored_counts`)."""
    b = kid // BLOCK
    lo = int(blocks[b])
    if counts_before == 0:
        return lo
    hi = int(blocks[b + 1])
    ends = np.flatnonzero(np.asarray(data[lo:hi]) < 0x80)
    return lo + int(ends[counts_before - 1]) + 1


def decode_list(data: np.ndarray, start: int, count: int) -> np.ndarray:
    """``count`` values from byte ``start``, as sorted ordinals (delta-decoded)."""
    if count == 0:
        return np.empty(0, dtype=np.int64)
    # A value takes at most 10 bytes; read only as far as the count-th value end.
    probe = np.asarray(data[start : start + 10 * count])
    ends = np.flatnonzero(probe < 0x80)
    vals = decode_values(probe[: int(ends[count - 1]) + 1])
    return np.cumsum(vals + 1) - 1


def decode_many(
    kids: np.ndarray,
    dfs_of: Callable[[np.ndarray], np.ndarray],
    n_keys: int,
    blocks: np.ndarray,
    data: np.ndarray,
    n_docs: int,
    max_block_bytes: int = 1 << 16,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The posting lists of many keys of one partition, decoded in one vectorised pass.

    ``dfs_of`` gives the document frequencies of trie ids (the partition's ``df.bin``
    read through its large counts).  Each key's list is found as :func:`locate` finds it:
    its block's bytes, then the values of the keys before it in the block.  A key whose
    list is stored as its complement, or whose block is over ``max_block_bytes`` bytes,
    is left to the caller (``done`` is False for it): a block with a very frequent key
    costs more to scan than that one list to decode.

    Returns:
        ``(ordinals, offsets, done)``: the sorted ordinals of the keys decoded, one list
        after another, in the order of ``kids`` (``offsets``: ``done.sum() + 1`` into
        ``ordinals``); ``done``: which keys were decoded.

    Raises:
        ValueError: the bytes do not hold the values the document counts say.
    """
    kids = np.asarray(kids, dtype=np.int64)
    ub, inv = np.unique(kids // BLOCK, return_inverse=True)
    lo = np.asarray(blocks[ub], dtype=np.int64)
    size = np.asarray(blocks[ub + 1], dtype=np.int64) - lo
    grid = ub[:, None] * BLOCK + np.arange(BLOCK, dtype=np.int64)
    real = grid < n_keys
    df = np.zeros(grid.shape, dtype=np.int64)
    df[real] = dfs_of(grid[real])
    cnt = stored_counts(df, n_docs)
    col = kids % BLOCK
    df_k = df[inv, col]
    done = (df_k <= n_docs // 2) & (size <= max_block_bytes)[inv]
    ok = np.flatnonzero(done)
    # The bytes of every block that holds a key to decode, one block after another.
    used = np.zeros(len(ub), dtype=bool)
    used[inv[ok]] = True
    sel = np.flatnonzero(used)
    lens = size[sel]
    first = np.cumsum(lens) - lens  # where each used block starts in `raw`
    total = int(lens.sum())
    pos = np.repeat(lo[sel] - first, lens) + np.arange(total, dtype=np.int64)
    raw = np.asarray(data[pos] if total else np.empty(0, np.uint8), dtype=np.uint8)
    ends = np.flatnonzero(raw < 0x80)
    if len(ends) != int(cnt[sel].sum()) or (total and raw[-1] >= 0x80):
        raise ValueError("posting blocks do not hold the values their counts say")
    block_value0 = np.searchsorted(ends, first)  # values before each used block
    slot = np.cumsum(used) - 1  # block -> its place among the used ones
    before = np.cumsum(cnt, axis=1) - cnt
    inv_ok, col_ok = inv[ok], col[ok]
    start = block_value0[slot[inv_ok]] + before[inv_ok, col_ok]  # first value, in `raw`
    count = cnt[inv_ok, col_ok]
    offsets = np.zeros(len(ok) + 1, dtype=np.int64)
    np.cumsum(count, out=offsets[1:])
    n_vals = int(offsets[-1])
    # Only the bytes of the wanted lists are decoded: from the end of the value before
    # each list's first to its last value's end.
    has = count > 0
    s_h, c_h = start[has], count[has]
    b0 = np.where(s_h > 0, ends[np.maximum(s_h - 1, 0)] + 1, 0)
    nb = ends[s_h + c_h - 1] + 1 - b0
    pick = np.repeat(b0 - (np.cumsum(nb) - nb), nb) + np.arange(int(nb.sum()), dtype=np.int64)
    gaps = decode_values(raw[pick])
    run = np.cumsum(gaps + 1)
    # Each list's running sum restarts: the first ordinal as is, then gaps less one.
    base = np.zeros(len(ok), dtype=np.int64)
    nonempty = count > 0
    at = offsets[:-1][nonempty]
    base[nonempty] = np.where(at > 0, run[np.maximum(at - 1, 0)], 0)
    ordinals = run - np.repeat(base, count) - 1
    if n_vals and int(ordinals.max()) >= n_docs:
        raise ValueError("a posting points past the document table")
    return ordinals, offsets, done

"""Storage of a view: key-space partitions, and the collection's word ids per word model.

This is the only module that imports ``marisa_trie``.

**One global key space per view.**  The N-grams of a view are split into ``P`` partitions
by their *first word* (``crc32(word) mod P``), each a marisa-trie with its own posting
lists of *global* document ordinals.  Every prefix of a key starts with the same word, so
a look-up, including the detector's prefix walk, touches exactly one partition, however
many documents or build shards there are.

**What is stored.**  An N-gram ``g`` is stored (key, document frequency, posting list)
exactly when every proper sub-N-gram of ``g`` occurs in at least two documents of the
whole collection ("apriori" pruning, with global counts).  Every word is stored.  Any
other N-gram has a stored sub-N-gram that occurs in at most one document, so its own
document frequency is 0 or 1 and is found exactly by scanning that single document's
word ids (:class:`~presidio_delink.index.view_index.ViewIndex`).  Consequences used by
the detector:

* a *minimal* N-gram with ``1 <= df < k`` (k >= 2) is always stored, because all its
  proper sub-N-grams have ``df >= k >= 2``;
* every N-gram with ``df >= 2`` whose sub-N-grams all have ``df >= 2`` is stored.

**Which postings exist.**  Every stored key keeps its whole posting list (format 4 codes
it compactly, as its complement when the key is in more than half the documents; see
:mod:`~presidio_delink.index.postings`).  No list is replaced by a bare count, however
frequent the key: a combination of two or three frequent N-grams can still be held by
fewer than ``k`` documents (two N-grams each in half the collection may share one
document), so the arity-2 and arity-3 checks, the group mapping, the containment attack
and ``index lookup`` need the lists of frequent keys too.  Only a key in all ``N``
documents could do without (its complement is empty), and its list costs no byte.

Files (little-endian; integer widths are the smallest that fit, recorded in meta.json):

``views/V/part-NNNNN/``  ``ngrams.marisa`` keys (words joined by one space) whose first
                         word falls in this partition; by trie key id, ``df.bin`` (one
                         byte each, 255: see ``dfbig.bin``), ``blocks.bin`` and
                         ``postings.bin`` (global document ordinals, delta and
                         variable-byte coded; see ``index/postings.py``)
                         A view stored over another (:class:`Layered`) holds only
                         its differences, and tombstones (keys with df 0)
``folds/F/vocab-NNNNN.marisa``  the words of word model F, by partition (a word's id:
                         its trie id plus the sizes of the partitions before; see
                         ``index/vocab.py``)
``folds/F/docs-NNNNN/``  ``tokens.bin``: a range of documents as word ids, ``V`` closing
                         a segment at a placeholder or the end, ``V + 1`` at punctuation
                         (a view that crosses punctuation ignores those);
                         ``doc_starts.bin``: ``D + 1`` offsets into ``tokens.bin``
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import marisa_trie
import numpy as np

from presidio_delink.errors import IndexFormatError
from presidio_delink.index.format import write_private
from presidio_delink.index.postings import (
    BLOCK,
    DF_ESCAPE,
    decode_list,
    encode,
    locate,
    stored_counts,
)
from presidio_delink.io import atomic_output


def smallest_uint(max_value: int) -> str:
    """The narrowest little-endian unsigned dtype holding ``max_value``."""
    for code, limit in (("<u2", 0xFFFF), ("<u4", 0xFFFFFFFF)):
        if max_value <= limit:
            return code
    return "<u8"


def partition_of(word: str, n_parts: int) -> int:
    """The partition of every key whose first word is ``word`` (stable across runs)."""
    return zlib.crc32(word.encode("utf-8")) % n_parts if n_parts > 1 else 0


def save_trie(keys: list[str], path: Path) -> marisa_trie.Trie:
    trie = marisa_trie.Trie(keys)
    with atomic_output(path, "wb") as f:  # temporary file, renamed; mode 0600
        f.write(trie.tobytes())
    return trie


def load_trie(path: Path) -> marisa_trie.Trie:
    trie = marisa_trie.Trie()
    try:
        trie.mmap(str(path))
    except (OSError, ValueError, RuntimeError) as exc:
        raise IndexFormatError(f"cannot read {path}: {exc}") from exc
    return trie


def trie_ids(trie: marisa_trie.Trie, keys: list[str]) -> np.ndarray:
    """The trie id of each key (all stored), in the order of ``keys`` (no copy of the
    trie in a dictionary: a partition can hold millions of keys)."""
    return np.fromiter(map(trie.__getitem__, keys), dtype=np.int64, count=len(keys))


def id_words(trie: marisa_trie.Trie) -> list[str]:
    """The keys of a trie by id (a vocabulary's words by word id)."""
    out = [""] * len(trie)
    for k, i in trie.items():
        out[i] = k
    return out


def write_array(path: Path, arr: np.ndarray, dtype: str) -> None:
    write_private(path, np.ascontiguousarray(arr).astype(dtype).tobytes())


def map_array(path: Path, dtype: str) -> np.ndarray:
    size = path.stat().st_size
    itemsize = np.dtype(dtype).itemsize
    if size % itemsize:
        raise IndexFormatError(f"{path} is truncated ({size} bytes)")
    if size == 0:
        return np.empty(0, dtype=dtype)
    # A plain ndarray view of the map: indexing a np.memmap object is several times slower.
    return np.memmap(path, dtype=dtype, mode="r").view(np.ndarray)


_HIGH = bytes(range(0x80, 0x100))  # the bytes that do not end a value


class Partition:
    """One partition of a view's key space (read-only; arrays memory-mapped, posting
    lists decoded when read: :mod:`~presidio_delink.index.postings`)."""

    def __init__(
        self, directory: Path, dtypes: dict[str, str], n_docs: int, verify: bool,
        lazy: bool = False,
    ) -> None:
        self.directory = directory
        self.n_docs = n_docs
        self._trie: marisa_trie.Trie | None = None
        try:
            self.df8 = map_array(directory / "df.bin", "<u1")
            big = map_array(directory / "dfbig.bin", dtypes["dfbig"])
            self.blocks = map_array(directory / "blocks.bin", "<u8")
            self.data = map_array(directory / "postings.bin", "<u1")
        except OSError as exc:
            raise IndexFormatError(f"cannot read index partition {directory}: {exc}") from exc
        if len(big) % 2:
            raise IndexFormatError(f"{directory}: the large document counts are truncated")
        m = len(big) // 2
        self._big_kid = np.asarray(big[:m], dtype=np.int64)
        self._big_df = np.asarray(big[m:], dtype=np.int64)
        n_keys = len(self.df8)
        n_blocks = -(-n_keys // BLOCK)
        if len(self.blocks) != n_blocks + 1 or (n_keys and int(self.blocks[0]) != 0):
            raise IndexFormatError(f"{directory}: posting blocks do not match the {n_keys} keys")
        if int(self.blocks[-1]) != len(self.data):
            raise IndexFormatError(f"{directory}: postings file is truncated or too long")
        if not lazy:
            _ = self.trie
        if verify:
            self._verify()
        self._docs: dict[int, tuple[int, ...]] = {}

    @property
    def trie(self) -> marisa_trie.Trie:
        """The keys (opened at once unless ``lazy``: a map of the trie touches all of its
        pages, and a build's own index opens none until it is queried)."""
        got = self._trie
        if got is None:
            got = load_trie(self.directory / "ngrams.marisa")
            if len(got) != len(self.df8):
                raise IndexFormatError(
                    f"{self.directory}: document counts do not match the {len(got)} keys"
                )
            self._trie = got
        return got

    def _verify(self) -> None:
        """The lists hold as many values as the document counts say (one pass over the
        bytes; each list's ordinals are checked against the document table when read)."""
        where = self.directory
        esc = np.flatnonzero(np.asarray(self.df8) == DF_ESCAPE)
        if not np.array_equal(esc, self._big_kid) or (self._big_df < DF_ESCAPE).any():
            raise IndexFormatError(f"{where}: the large document counts do not match")
        if (self._big_df > self.n_docs).any():
            raise IndexFormatError(f"{where}: a document count exceeds the document table")
        data = np.asarray(self.data)
        if len(data) and data[-1] >= 0x80:
            raise IndexFormatError(f"{where}: postings file is truncated")
        cnt = stored_counts(self.dfs_kids(np.arange(self.n_keys)), self.n_docs)
        if int(cnt.sum()) != int(np.count_nonzero(data < 0x80)):
            raise IndexFormatError(f"{where}: postings do not match the document counts")

    def _past(self) -> IndexFormatError:
        return IndexFormatError(f"{self.directory}: a posting points past the document table")

    @property
    def n_keys(self) -> int:
        """Entries in this partition's trie (tombstones included)."""
        return len(self.trie)

    def df_of(self, kid: int) -> int:
        d = int(self.df8[kid])
        if d == DF_ESCAPE:
            d = int(self._big_df[np.searchsorted(self._big_kid, kid)])
        return d

    def dfs_kids(self, kids: np.ndarray) -> np.ndarray:
        """Document frequencies of many trie ids (int64)."""
        d = self.df8[kids].astype(np.int64)
        esc = np.flatnonzero(d == DF_ESCAPE)
        if len(esc):
            d[esc] = self._big_df[np.searchsorted(self._big_kid, kids[esc])]
        return d

    SMALL = 256  # values to skip and read below which Python beats numpy's call overhead

    def _list(self, kid: int) -> list[int] | np.ndarray:
        """The ordinals of a stored key: a list for a short one (most keys: read in
        Python, a few microseconds), else an int64 array."""
        df = self.df_of(kid)
        if df == 0:
            return []
        n = self.n_docs
        b0 = kid - kid % BLOCK
        before = 0
        if kid > b0:
            head = self.df8[b0:kid].tobytes()
            if n >= 2 * DF_ESCAPE and DF_ESCAPE not in head:
                before = sum(head)  # no escape, no complement: the bytes are the counts
            else:
                before = int(stored_counts(self.dfs_kids(np.arange(b0, kid)), n).sum())
        dense = df > n // 2
        cnt = n - df if dense else df
        if before + cnt <= self.SMALL and not dense:
            lo = int(self.blocks[kid // BLOCK])
            raw = self.data[lo : lo + 10 * (before + cnt)].tobytes()
            # Skip ``before`` values: grow a prefix by its shortfall of value ends
            # (counted in C by deleting the other bytes) until it holds them all, then
            # step back to just after the last one.
            i = before
            while before:
                c = len(raw[:i].translate(None, _HIGH))
                if c == before:
                    while raw[i - 1] >= 0x80:
                        i -= 1
                    break
                if i > len(raw):
                    raise self._past()
                i += before - c
            out: list[int] = []
            v = shift = 0
            doc = -1
            for byte in raw[i:]:
                v |= (byte & 0x7F) << shift
                if byte < 0x80:
                    doc += v + 1
                    out.append(doc)
                    if len(out) == cnt:
                        break
                    v = shift = 0
                else:
                    shift += 7
            if doc >= n or len(out) != cnt:
                raise self._past()
            return out
        start = locate(kid, before, self.blocks, self.data)
        got = decode_list(self.data, start, cnt)
        if len(got) != cnt or (cnt and int(got[-1]) >= n):
            raise self._past()
        if not dense:
            return got
        mask = np.ones(n, dtype=bool)
        mask[got] = False
        return np.flatnonzero(mask)

    def postings_of(self, kid: int) -> np.ndarray:
        """Global document ordinals of a stored key (int64, ascending)."""
        got = self._list(kid)
        return np.array(got, dtype=np.int64) if isinstance(got, list) else got

    DOCS_MEMO = 50_000

    def docs_of(self, kid: int) -> tuple[int, ...]:
        """:meth:`postings_of` as a tuple of ints, remembered (a bounded, recent set)."""
        memo = self._docs
        got = memo.get(kid)
        if got is None:
            if len(memo) >= self.DOCS_MEMO:
                memo.clear()
            lst = self._list(kid)
            got = memo[kid] = tuple(lst if isinstance(lst, list) else lst.tolist())
        return got


def write_postings(
    directory: Path, offsets: np.ndarray, postings: np.ndarray, n_docs: int
) -> dict[str, str]:
    """A partition's posting files (``offsets``: ``K + 1`` into ``postings``, by trie
    id); returns their dtypes for meta.json."""
    df8, big, blocks, data = encode(offsets, postings, n_docs)
    dtypes = {"dfbig": smallest_uint(int(big.max()) if big.size else 0)}
    write_array(directory / "df.bin", df8, "<u1")
    write_array(directory / "dfbig.bin", big.reshape(-1), dtypes["dfbig"])
    write_array(directory / "blocks.bin", blocks, "<u8")
    write_array(directory / "postings.bin", data, "<u1")
    return dtypes


MAX_LAYERS = 4
Hits = tuple[tuple[int, int], ...]  # (length, handle) of stored word-prefixes of a key
LAYER_SHIFT = 40  # a handle is ``depth << LAYER_SHIFT | kid``
KID_MASK = (1 << LAYER_SHIFT) - 1


class Layered:
    """A partition of a view as the detector reads it: the view's own entries over its
    parent view's (same partition), down to a view stored in full.

    **Delta storage.**  Views of one collection mostly agree: a key of ``fine`` usually
    has the same posting list in ``folded``, a key of ``accent-cross`` the same as in
    ``folded-cross``.  A view stored over a parent keeps only its *differences*: keys
    whose posting list differs from the parent's (or that the parent does not store), and
    *tombstones*, entries with no postings, for keys the parent stores and this view does
    not.  A look-up takes the most specific layer that holds the key; a tombstone there
    means "not stored in this view" (so the exact path of
    :class:`~presidio_delink.index.view_index.ViewIndex` applies, in this view's words).
    The resolved key space is exactly the view's own, as if stored in full.

    A *handle* names a stored entry: ``depth << LAYER_SHIFT | kid`` (depth 0 is the view
    stored in full, whose handles are its trie ids).  A layer that other views are stored
    over memoises its prefix walks (a bounded, recent set of keys), so a child view walking
    the same key as its parent, as it mostly does on one text, reads only its own trie.
    """

    MEMO_KEYS = 20_000  # about one long document's positions

    def __init__(self, own: Partition, parent: Layered | None) -> None:
        self.own = own
        self.parent = parent
        self.depth: int = 0 if parent is None else parent.depth + 1
        if self.depth >= MAX_LAYERS:
            raise IndexFormatError(f"{own.directory}: views stored more than {MAX_LAYERS} deep")
        self.tag = self.depth << LAYER_SHIFT
        self.layers: tuple[Partition, ...] = (*(parent.layers if parent else ()), own)
        self._memo: dict[str, Hits] | None = None  # set when a child comes
        self._tomb: bytes | None = None
        if parent is not None and parent._memo is None:
            parent._memo = {}

    def _tombstones(self) -> bytes:
        """One byte per own entry, 1 for a tombstone (built on first use)."""
        got = self._tomb
        if got is None:
            got = self._tomb = (np.asarray(self.own.df8) == 0).tobytes()
        return got

    def get(self, key: str) -> int | None:
        """The handle of a stored key, or None when this view does not store it."""
        kid = self.own.trie.get(key)
        if kid is not None:
            return None if self.own.df_of(kid) == 0 else self.tag | kid
        return self.parent.get(key) if self.parent is not None else None

    def _own_hits(self, key: str) -> list[tuple[int, int]]:
        """``(length, trie id)`` of this layer's own keys (tombstones included) that are
        word-prefixes of ``key``, shortest first."""
        n = len(key)
        return [
            (lp, kid)
            for p, kid in self.own.trie.iter_prefixes_with_ids(key)
            if (lp := len(p)) == n or key[lp] == " "
        ]

    def differs(self, key: str) -> bool:
        """Whether this layer's own entries change the parent's prefix hits of ``key``
        (an own key or tombstone is a word-prefix of it); when not, :meth:`prefix_hits`
        of ``key`` is the parent's, entry for entry."""
        if self.parent is None:
            return True
        n = len(key)
        for p in self.own.trie.prefixes(key):  # no id, no tuple: only whether one is there
            lp = len(p)
            if lp == n or key[lp] == " ":
                return True
        return False

    def prefix_hits(self, key: str) -> Hits:
        """``(length, handle)`` of the stored keys that are word-prefixes of ``key``,
        shortest first (a tuple of tuples of ints: once the collector has seen it, it no
        longer tracks it, so that the memo costs its full collections nothing)."""
        memo = self._memo
        if memo is not None:
            got = memo.get(key)
            if got is not None:
                return got
        own = self._own_hits(key)
        if self.parent is None:
            got = tuple(own)
        else:
            got = self.parent.prefix_hits(key)
            if own:
                # Both are sorted by length: the own entry of a length replaces the
                # parent's, a tombstone removes it.
                tomb = self._tombstones()
                tag = self.tag
                merged: list[tuple[int, int]] = []
                i, m = 0, len(got)
                for lp, kid in own:
                    while i < m and got[i][0] < lp:
                        merged.append(got[i])
                        i += 1
                    if i < m and got[i][0] == lp:
                        i += 1
                    if not tomb[kid]:
                        merged.append((lp, tag | kid))
                merged.extend(got[i:])
                got = tuple(merged)
        if memo is not None:
            if len(memo) >= self.MEMO_KEYS:
                memo.clear()
            memo[key] = got
        return got

    def walk(self, key: str, extends: str | None = None) -> Hits:
        """:meth:`prefix_hits`, the detector's hot path.

        ``extends``: a key of which ``key`` is a word-prefix, walked just before (the same
        text position in a view that crosses punctuation): its memoised hits, cut at
        ``len(key)``, are the answer, without a walk.
        """
        memo = self._memo
        if extends is not None and memo is not None:
            got = memo.get(extends)
            if got is not None:
                if key != extends:
                    n = len(key)
                    if got and got[-1][0] > n:
                        got = tuple([e for e in got if e[0] <= n])
                    # Kept for a view stored over this one that walks the same key next
                    # (``fine`` over ``folded``: mostly the same words on one text).
                    if len(memo) >= self.MEMO_KEYS:
                        memo.clear()
                    memo[key] = got
                return got
        return self.prefix_hits(key)

    def df_of(self, handle: int) -> int:
        return self.layers[handle >> LAYER_SHIFT].df_of(handle & KID_MASK)

    def dfs(self, handles: list[int]) -> np.ndarray:
        """Document frequencies of many handles, read in one vectorised step per layer."""
        h = np.fromiter(handles, dtype=np.int64, count=len(handles))
        if len(self.layers) == 1:
            return self.own.dfs_kids(h)
        res = np.empty(len(h), dtype=np.int64)
        layer = h >> LAYER_SHIFT
        for i, part in enumerate(self.layers):
            sel = np.flatnonzero(layer == i)
            if len(sel):
                res[sel] = part.dfs_kids(h[sel] & KID_MASK)
        return res

    def docs_of(self, handle: int) -> tuple[int, ...]:
        """:meth:`postings_of` as a tuple, remembered (views stored over one another
        report the same entries, text after text)."""
        return self.layers[handle >> LAYER_SHIFT].docs_of(handle & KID_MASK)

    def postings_of(self, handle: int) -> np.ndarray:
        return self.layers[handle >> LAYER_SHIFT].postings_of(handle & KID_MASK)

    def iteritems(self) -> Iterator[tuple[str, int]]:
        """Every key this view stores, with its handle (no order promised)."""
        if self.parent is None:
            for key, kid in self.own.trie.iteritems():
                yield key, kid
            return
        for key, kid in self.own.trie.iteritems():
            if self.own.df_of(kid):
                yield key, self.tag | kid
        own = self.own.trie
        for key, h in self.parent.iteritems():
            if key not in own:
                yield key, h


class FoldDocs:
    """The collection as word ids of one word model: a vocabulary and document ranges."""

    def __init__(
        self, directory: Path, vocab: Any, shards: list[tuple[int, dict[str, str]]],
        n_docs: int, verify: bool,
    ) -> None:
        self.vocab = vocab  # an `index.vocab.Vocabulary`: get(word), restore_key(id)
        self.n_vocab = len(self.vocab)
        self.starts: list[int] = []  # first global ordinal of each range
        self.tokens: list[np.ndarray] = []
        self.doc_starts: list[np.ndarray] = []
        base = 0
        for i, (n, dtypes) in enumerate(shards):
            sd = directory / f"docs-{i:05d}"
            toks = map_array(sd / "tokens.bin", dtypes["tokens"])
            starts = map_array(sd / "doc_starts.bin", dtypes["doc_starts"])
            if len(starts) != n + 1 or (len(starts) and int(starts[-1]) != len(toks)):
                raise IndexFormatError(f"{sd}: document table does not match the token file")
            if verify and len(toks) and int(toks.max()) > self.n_vocab + 1:
                raise IndexFormatError(f"{sd}: a token points past the vocabulary")
            self.starts.append(base)
            self.tokens.append(toks)
            self.doc_starts.append(starts)
            base += n
        if base != n_docs:
            raise IndexFormatError(f"{directory}: document count does not match metadata")
        # word id -> word, built on first use (a witness scan needs a few documents only)
        self._words: list[str] | None = None

    def doc_ids(self, d: int) -> np.ndarray:
        """Document ``d`` as word ids; ``V`` and ``V + 1`` close segments."""
        i = int(np.searchsorted(self.starts, d, side="right")) - 1
        local = d - self.starts[i]
        st = self.doc_starts[i]
        return np.asarray(self.tokens[i][int(st[local]) : int(st[local + 1])], dtype=np.int64)

    def word(self, wid: int) -> str:
        restored: str = self.vocab.restore_key(wid)
        return restored

    def word_id(self, word: str) -> int | None:
        got: int | None = self.vocab.get(word)
        return got

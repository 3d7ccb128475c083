"""A word model's vocabulary in partitions, built and read by the workers (format 5).

**Definitions.**  The words of a word model are split into the ``P`` partitions of the
key space (:func:`~presidio_delink.index.shard.partition_of` of the word, the split that
keys use by their first word).  Partition ``p``'s words form one marisa-trie,
``folds/F/vocab-NNNNN.marisa``; a word's *id* is ``bounds[p] + its trie id`` there, with
``bounds`` the running sum of the partitions' sizes.  So the ids of one partition are
contiguous, and a word id names its partition (a binary search in ``bounds``): the
counting tasks need no table from word to partition.

**Build** (two sets of independent tasks, files in between, as in
:mod:`~presidio_delink.index.counting`):

1. :func:`split_words`, one task per raw shard: the shard's local words grouped by
   partition (a string table, :func:`write_strings`, sliceable without parsing the rest).
2. :func:`merge_words`, one task per partition: the union of every shard's words of that
   partition, saved as its trie; for each shard, the trie id of each of its words there.
   It returns one integer, the partition's size.

A shard's rewrite in final ids (``builder.finish_shard``) then reads its slice of each
partition's ids.  **Cost:** a task holds one shard's words or one partition's; the driver
holds the ``P + 1`` bounds.  The stored words, and so every answer, do not depend on the
number of shards or workers; ids differ from a single trie's, which nothing outside the
index sees.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import IndexFormatError
from presidio_delink.index.format import file_record, write_private
from presidio_delink.index.shard import id_words, load_trie, partition_of, save_trie, trie_ids


def vocab_file(p: int) -> str:
    return f"vocab-{p:05d}.marisa"


# -- string tables: UTF-8 bytes and offsets, a slice read without the rest ---------------
def write_strings(prefix: Path, strings: list[str]) -> None:
    """``prefix.blob`` (the strings' UTF-8 bytes, concatenated) and ``prefix.offs.npy``."""
    enc = [s.encode("utf-8") for s in strings]
    offs = np.zeros(len(enc) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in enc], out=offs[1:])
    write_private(prefix.with_name(prefix.name + ".blob"), b"".join(enc))
    np.save(prefix.with_name(prefix.name + ".offs.npy"), offs)


def read_strings(prefix: Path, lo: int, hi: int) -> list[str]:
    """Strings ``lo .. hi - 1`` of a table written by :func:`write_strings`."""
    if hi <= lo:
        return []
    offs = np.load(prefix.with_name(prefix.name + ".offs.npy"), mmap_mode="r")
    o = np.asarray(offs[lo : hi + 1]).tolist()
    with open(prefix.with_name(prefix.name + ".blob"), "rb") as f:
        f.seek(o[0])
        data = f.read(o[-1] - o[0])
    base = o[0]
    return [data[a - base : b - base].decode("utf-8") for a, b in zip(o, o[1:], strict=False)]


def split_by_part(keys: list[str], n_parts: int) -> tuple[np.ndarray, np.ndarray]:
    """A stable order grouping ``keys`` by partition, and the ``P + 1`` bounds of each
    partition's run in that order."""
    part = np.fromiter((partition_of(k, n_parts) for k in keys), np.int64, count=len(keys))
    order = np.argsort(part, kind="stable")
    return order, np.searchsorted(part[order], np.arange(n_parts + 1))


# -- build tasks ----------------------------------------------------------------------------
def split_words(raw_dir: str, fold: str, n_parts: int) -> None:
    """Task, per raw shard: its local words of word model ``fold`` grouped by partition
    (``F.wsplit``: the words, ``F.worder.npy``: their local ids, ``F.wbounds.npy``)."""
    d = Path(raw_dir)
    words: list[str] = json.loads((d / f"{fold}.words.json").read_bytes())
    order, bounds = split_by_part(words, n_parts)
    write_strings(d / f"{fold}.wsplit", [words[i] for i in order.tolist()])
    np.save(d / f"{fold}.worder.npy", order)
    np.save(d / f"{fold}.wbounds.npy", bounds)


def merge_words(
    p: int, fold: str, raw_dirs: list[str], fold_dir: str, work: str
) -> tuple[int, dict[str, Any]]:
    """Task, per partition: the trie of partition ``p``'s words (``fold_dir``), and for
    each shard the trie id of each of its words of ``p`` (``vmap.pP.npy``, shard ``s``'s
    slice at ``vmapb.pP.npy[s]:[s + 1]``).  Returns the partition's number of words and
    its trie's file record."""
    per_shard: list[list[str]] = []
    seen: dict[str, None] = {}
    for r in raw_dirs:
        b = np.load(Path(r) / f"{fold}.wbounds.npy")
        got = read_strings(Path(r) / f"{fold}.wsplit", int(b[p]), int(b[p + 1]))
        seen.update(dict.fromkeys(got))
        per_shard.append(got)
    path = Path(fold_dir) / vocab_file(p)
    trie = save_trie(list(seen), path)
    del seen
    ids = [trie_ids(trie, ws) for ws in per_shard]
    w = Path(work)
    np.save(w / f"vmap.p{p}.npy", np.concatenate(ids) if ids else np.empty(0, np.int64))
    np.save(w / f"vmapb.p{p}.npy", np.cumsum([0] + [len(x) for x in ids]))
    return len(trie), file_record(path)


def shard_remap(raw_dir: str, fold: str, s: int, bounds: list[int], work: str) -> np.ndarray:
    """Shard ``s``'s local word id -> final word id (from every partition's slice)."""
    d = Path(raw_dir)
    order = np.load(d / f"{fold}.worder.npy")
    wb = np.load(d / f"{fold}.wbounds.npy")
    remap = np.empty(len(order), dtype=np.int64)
    for p in range(len(bounds) - 1):
        lo, hi = int(wb[p]), int(wb[p + 1])
        if hi > lo:
            vb = np.load(Path(work) / f"vmapb.p{p}.npy")
            got = np.load(Path(work) / f"vmap.p{p}.npy", mmap_mode="r")
            remap[order[lo:hi]] = bounds[p] + np.asarray(got[int(vb[s]) : int(vb[s + 1])])
    return remap


def map_words(
    p: int, fold_dir: str, sizes: list[int], parent_dir: str, parent_sizes: list[int],
    work: str,
) -> None:
    """Task, per partition: each word of partition ``p`` of one word model -> the id of
    the same word in another (``wordmap.pP.npy``, -1 where it has none); the same word
    falls in the same partition of both."""
    mine = Vocabulary(Path(fold_dir), sizes).part_words(p)
    theirs = load_trie(Path(parent_dir) / vocab_file(p))
    base = int(np.cumsum([0] + parent_sizes)[p])
    got = np.fromiter((theirs.get(w, -1) for w in mine), np.int64, count=len(mine))
    np.save(Path(work) / f"wordmap.p{p}.npy", np.where(got >= 0, got + base, -1))


def load_word_map(work: Path, n_parts: int) -> np.ndarray:
    """The whole word map of :func:`map_words` (ids of one partition are contiguous)."""
    return np.concatenate([np.load(work / f"wordmap.p{p}.npy") for p in range(n_parts)])


# -- reading ------------------------------------------------------------------------------
@dataclass(frozen=True)
class VocabRef:
    """What a task needs to open a word model's vocabulary: its folder and the sizes of
    its partitions (``P`` integers)."""

    directory: str
    sizes: tuple[int, ...]

    @property
    def bounds(self) -> tuple[int, ...]:
        return tuple(np.cumsum((0, *self.sizes)).tolist())

    @property
    def n_words(self) -> int:
        return sum(self.sizes)

    def open(self) -> Vocabulary:
        return Vocabulary(Path(self.directory), list(self.sizes))


class Vocabulary:
    """A word model's words by id, from its partition tries (memory-mapped)."""

    def __init__(self, directory: Path, sizes: list[int]) -> None:
        self.tries = [load_trie(directory / vocab_file(p)) for p in range(len(sizes))]
        for p, (t, n) in enumerate(zip(self.tries, sizes, strict=True)):
            if len(t) != n:
                raise IndexFormatError(f"{directory / vocab_file(p)}: size does not match")
        self.bounds: list[int] = np.cumsum([0] + list(sizes)).tolist()
        self.n_parts = len(sizes)

    def __len__(self) -> int:
        return self.bounds[-1]

    def get(self, word: str) -> int | None:
        p = partition_of(word, self.n_parts)
        got: int | None = self.tries[p].get(word)
        return None if got is None else self.bounds[p] + got

    def restore_key(self, wid: int) -> str:
        p = bisect.bisect_right(self.bounds, wid) - 1
        word: str = self.tries[p].restore_key(wid - self.bounds[p])
        return word

    def part_words(self, p: int) -> list[str]:
        """Partition ``p``'s words by trie id."""
        return id_words(self.tries[p])

    def words(self) -> list[str]:
        """Every word by id (a write task's table: its keys end in any word)."""
        out: list[str] = []
        for p in range(self.n_parts):
            out.extend(self.part_words(p))
        return out

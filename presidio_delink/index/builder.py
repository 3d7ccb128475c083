"""Out-of-core construction of the index: one global key space per view.

Three phases, each a set of independent tasks over files in the build directory, so the
same code runs in this process, on a process pool (``workers``) or on a Dask cluster:

1. **Tokenise** (streaming).  Documents are tokenised once per word model and appended
   to the current *raw shard* as ids of a shard-local vocabulary, ``-1`` closing a segment
   at a placeholder or the end and ``-2`` at punctuation; every ``shard_words`` words the
   shard is written out.  Then the vocabularies are merged (a marisa-trie per word model;
   word id = trie id) and each raw shard is rewritten in those ids: the document ranges
   kept in the index (``folds/F/docs-NNNNN``).
2. **Count** (per view, level by level, with *global* counts).  Level 1 counts words.
   Level ``n`` looks only at positions where both ``(n-1)``-grams (prefix and suffix) are
   stored and occur in at least two documents *of the whole collection*.  Per shard a task
   computes the candidate codes ``(prefix key id, last word)`` and their (code, document)
   pairs; the driver merges the sorted code sets into the level's global key ids and
   document frequencies; a second task per shard gives each position its key id and
   writes the postings bucketed by partition.  Memory: one shard's arrays per task, plus
   the driver's per-level arrays (codes and counts of the distinct candidates).
3. **Write** (per partition): the keys whose first word falls in it, their postings
   (global document ordinals) and offsets, ordered by trie id.  A view stored over
   another (:data:`STORED_OVER`) keeps only its differences from that view's same
   partition, written before it (see :class:`~presidio_delink.index.shard.Layered`).

Stored keys and document frequencies do not depend on the shard size, the number of
partitions or of workers: the index answers identically however it was built.
"""

from __future__ import annotations

import logging
import shutil
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import BuildError, DelinkError, InputError
from presidio_delink.index.format import file_record
from presidio_delink.index.shard import (
    DOC_FILES,
    KID_MASK,
    LAYER_SHIFT,
    PART_FILES,
    Layered,
    Partition,
    partition_of,
    save_trie,
    smallest_uint,
    trie_ids,
    write_array,
)

log = logging.getLogger(__name__)


# -- runners: where tasks run ---------------------------------------------------------------
class Runner:
    """Runs independent tasks (module-level functions of picklable arguments)."""

    def map(self, fn: Callable[..., Any], args: Sequence[tuple[Any, ...]]) -> list[Any]:
        return [fn(*a) for a in args]

    def close(self) -> None:
        pass


class PoolRunner(Runner):
    """A process pool (``--workers N``): processes, not threads (the work holds the GIL)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool: Any = None

    @property
    def pool(self) -> Any:
        """The process pool, started on first use (a small build never starts one)."""
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            ctx = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(self.workers, mp_context=ctx)
        return self._pool

    def map(self, fn: Callable[..., Any], args: Sequence[tuple[Any, ...]]) -> list[Any]:
        from concurrent.futures.process import BrokenProcessPool

        if len(args) <= 1:
            return super().map(fn, args)
        try:
            return list(self.pool.map(fn, *zip(*args, strict=True)))
        except BrokenProcessPool as exc:
            raise BuildError(f"a build worker process died during {fn.__name__}") from exc

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()


class DaskRunner(Runner):
    """Tasks on a Dask cluster (``dask.distributed.Client``); the build directory must be
    shared by the workers and this process."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def map(self, fn: Callable[..., Any], args: Sequence[tuple[Any, ...]]) -> list[Any]:
        if not args:
            return []
        try:
            futures = self.client.map(fn, *zip(*args, strict=True), pure=False)
            return list(self.client.gather(futures))
        except DelinkError:
            raise
        except Exception as exc:  # a worker died, lost its data, or the task failed
            raise BuildError(
                f"a Dask build task ({fn.__name__}) failed: {type(exc).__name__}: {exc}"
            ) from exc


# -- phase 1: raw shards --------------------------------------------------------------------
class RawShard:
    """Documents of one shard, per word model, as ids of a shard-local vocabulary."""

    def __init__(self, folds: Sequence[str]) -> None:
        self.folds = list(folds)
        self.tokens = {f: array("i") for f in folds}
        self.doc_starts = {f: array("q", [0]) for f in folds}
        self.vocab: dict[str, dict[str, int]] = {f: {} for f in folds}
        self.cache: dict[str, dict[str, tuple[int, ...]]] = {f: {} for f in folds}
        self.n_docs = 0
        self.n_words = 0  # in the first word model

    def add(self, marked: dict[str, Any]) -> None:
        """Append one document: per word model, its marked ids (a list or an array)."""
        for j, f in enumerate(self.folds):
            ids = np.asarray(marked[f], dtype=np.int32)
            if j == 0:
                self.n_words += int(np.count_nonzero(ids >= 0))
            self.tokens[f].frombytes(ids.tobytes())
            self.doc_starts[f].append(len(self.tokens[f]))
        self.n_docs += 1

    def encode(self, text: str, toks: dict[str, Any]) -> dict[str, list[int]]:
        """One document's marked ids in this shard's vocabularies, per word model
        (``toks``: fold -> ``Tokenizer``)."""
        return {f: t.encode_marked(text, self.vocab[f], self.cache[f]) for f, t in toks.items()}

    def write(self, directory: Path) -> dict[str, Any]:
        directory.mkdir(parents=True, mode=0o700)
        words = {}
        for f in self.folds:
            np.save(directory / f"{f}.tokens.npy", np.frombuffer(self.tokens[f], dtype=np.int32))
            np.save(directory / f"{f}.starts.npy", np.frombuffer(self.doc_starts[f], np.int64))
            words[f] = list(self.vocab[f])
        return {"dir": str(directory), "n_docs": self.n_docs, "words": words}


def finish_shard(
    raw: dict[str, Any], fold: str, remap: np.ndarray, n_vocab: int, out: Path
) -> dict[str, Any]:
    """Task: a raw shard of one word model in the final vocabulary ids (phase 1 end)."""
    d = Path(raw["dir"])
    toks = np.load(d / f"{fold}.tokens.npy").astype(np.int64)
    starts = np.load(d / f"{fold}.starts.npy")
    marks = np.where(toks == -1, n_vocab, n_vocab + 1)
    final = np.where(toks >= 0, remap[np.maximum(toks, 0)], marks) if len(remap) else marks
    out.mkdir(parents=True, mode=0o700)
    dtypes = {"tokens": smallest_uint(n_vocab + 1), "doc_starts": smallest_uint(len(final))}
    write_array(out / "tokens.bin", final, dtypes["tokens"])
    write_array(out / "doc_starts.bin", starts, dtypes["doc_starts"])
    return {
        "n_docs": raw["n_docs"],
        "dtypes": dtypes,
        "files": {f: file_record(out / f) for f in DOC_FILES},
    }


# -- phase 2: global level-wise counting ------------------------------------------------------
def _unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values of an int64 array (a sort and a diff: numpy's hash-based
    ``unique`` is several times slower on these arrays)."""
    if len(values) == 0:
        return values.astype(np.int64)
    v = np.sort(values)
    keep = np.empty(len(v), dtype=bool)
    keep[0] = True
    np.not_equal(v[1:], v[:-1], out=keep[1:])
    return v[keep]


@dataclass(frozen=True)
class ShardRef:
    """What a counting task needs to read one document range of a word model."""

    directory: str
    dtypes: dict[str, str]
    doc_base: int
    n_vocab: int
    cross: bool
    work: str  # this shard's scratch folder for the view


_LOADED: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def _load(ref: ShardRef) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Word ids (``-1`` closing a segment, in the view's break mode), each position's
    global document ordinal, and the words left in its segment.  The last shard loaded
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
    return toks, doc_local + ref.doc_base, rem


def _level_path(ref: ShardRef, n: int, what: str) -> Path:
    return Path(ref.work) / f"l{n}.{what}.npy"


def count_shard(ref: ShardRef, n: int, df_path: str | None, n_docs: int) -> str:
    """Task, level ``n``: the shard's candidate codes and their distinct (code, document)
    pairs; returns the path of its sorted distinct codes."""
    toks, doc_of, rem = _load(ref)
    v = ref.n_vocab
    if n == 1:
        cand = np.flatnonzero(toks >= 0)
        codes = toks[cand]
    else:
        rank = np.load(_level_path(ref, n - 1, "rank"))
        df_prev = np.load(str(df_path), mmap_mode="r")
        good = np.zeros(len(toks) + 1, dtype=bool)
        ok = np.flatnonzero(rank >= 0)
        good[ok] = np.asarray(df_prev[rank[ok]]) >= 2
        cand = np.flatnonzero(good[:-1] & good[1:] & (rem >= n)) if len(toks) else ok[:0]
        codes = rank[cand] * v + toks[cand + n - 1]
    pairs = _unique(codes * n_docs + doc_of[cand])
    np.save(_level_path(ref, n, "len"), np.array([len(toks)]))
    np.save(_level_path(ref, n, "cand"), cand)
    np.save(_level_path(ref, n, "codes"), codes)
    np.save(_level_path(ref, n, "pairs"), pairs)
    # pairs are sorted and distinct: a code's run length is its document count here.
    code = pairs // n_docs
    starts = np.flatnonzero(np.diff(code, prepend=-1)) if len(code) else code
    np.save(_level_path(ref, n, "cnt"), np.diff(np.append(starts, len(code))))
    path = _level_path(ref, n, "uniq")
    np.save(path, code[starts])
    return str(path)


def rank_shard(
    ref: ShardRef, n: int, keys_path: str, part_path: str, n_docs: int, n_parts: int
) -> None:
    """Task, level ``n``: each candidate position's global key id (for level ``n + 1``),
    and the postings ``(key id, document)`` bucketed by partition."""
    keys = np.load(keys_path, mmap_mode="r")
    part = np.load(part_path, mmap_mode="r")
    toks_len = int(np.load(_level_path(ref, n, "len"))[0])
    cand = np.load(_level_path(ref, n, "cand"))
    codes = np.load(_level_path(ref, n, "codes"))
    # The shard's distinct codes (sorted) are searched in the level's keys once; positions
    # and pairs then map through them (pairs are sorted by code: a repeat, no search).
    uniq = np.load(_level_path(ref, n, "uniq"))
    at = np.searchsorted(keys, uniq)
    rank = np.full(toks_len, -1, dtype=np.int64)
    rank[cand] = at[np.searchsorted(uniq, codes)]
    np.save(_level_path(ref, n, "rank"), rank)
    if n > 1:
        _level_path(ref, n - 1, "rank").unlink(missing_ok=True)
    pairs = np.load(_level_path(ref, n, "pairs"))
    kid = np.repeat(at, np.load(_level_path(ref, n, "cnt")))
    docs = pairs % n_docs
    where = np.asarray(part[kid])
    for p in range(n_parts):
        sel = where == p
        np.save(_level_path(ref, n, f"post{p}"), np.stack([kid[sel], docs[sel]]))
    for what in ("cand", "codes", "pairs", "uniq", "cnt", "len"):
        _level_path(ref, n, what).unlink(missing_ok=True)


def count_view(
    refs: list[ShardRef],
    words: list[str],
    max_n: int,
    n_docs: int,
    n_parts: int,
    work: Path,
    runner: Runner,
) -> int:
    """Phase 2 for one view; writes per-level arrays into ``work``; returns the number of
    levels with keys."""
    v = len(words)
    word_part = np.fromiter(
        (partition_of(w, n_parts) for w in words), dtype=np.int64, count=v
    )
    first: np.ndarray | None = None
    df_path: str | None = None
    levels = 0
    for n in range(1, max_n + 1):
        uniq_paths = runner.map(count_shard, [(r, n, df_path, n_docs) for r in refs])
        # Each shard's distinct codes with their document counts there; a code's global
        # df is the sum (a document lies in one shard).
        parts = [np.load(p) for p in uniq_paths]
        if len(parts) == 1:
            keys = parts[0]
            df = np.load(_level_path(refs[0], n, "cnt")).astype(np.int64)
        else:
            keys = _unique(np.concatenate(parts)) if parts else np.empty(0, np.int64)
            df = np.zeros(len(keys), dtype=np.int64)
            for r, u in zip(refs, parts, strict=True):  # codes are distinct within a shard
                df[np.searchsorted(keys, u)] += np.load(_level_path(r, n, "cnt"))
        del parts
        if len(keys) == 0:
            for r in refs:
                for what in ("cand", "codes", "pairs", "uniq", "cnt"):
                    _level_path(r, n, what).unlink(missing_ok=True)
            break
        if n == 1:
            first = keys
            prefix = np.full(len(keys), -1, dtype=np.int64)
        else:
            assert first is not None
            prefix = keys // v
            first = first[prefix]
        last = keys % v if n > 1 else keys
        part = word_part[first]
        for name, arr in (
            ("keys", keys), ("df", df), ("prefix", prefix), ("last", last), ("part", part),
            ("first", first),
        ):
            np.save(work / f"level{n}.{name}.npy", arr)
        df_path = str(work / f"level{n}.df.npy")
        runner.map(
            rank_shard,
            [
                (r, n, str(work / f"level{n}.keys.npy"), str(work / f"level{n}.part.npy"),
                 n_docs, n_parts)
                for r in refs
            ],
        )
        levels = n
    for r in refs:
        for n in range(1, levels + 1):
            _level_path(r, n, "rank").unlink(missing_ok=True)
    _LOADED.clear()
    return levels


# -- phase 3: partitions ----------------------------------------------------------------------
# Which view a view is stored over (the first of these built before it): its closest
# text model, so that the differences kept are few (see `shard.Layered`).
STORED_OVER: dict[str, tuple[str, ...]] = {
    "folded-cross": ("folded",),
    "fine": ("folded",),
    "accent-cross": ("folded-cross", "fine", "folded"),
    "case": ("fine", "folded"),
    "case-cross": ("case", "accent-cross", "folded-cross"),
}

# A partition of a view already written: its directory and its dtypes.
PartSpec = tuple[str, dict[str, str]]


def open_layers(chain: Sequence[PartSpec], n_docs: int) -> Layered | None:
    """The resolved partition of a view written earlier (``chain``: from the view stored
    in full to that view), or None for an empty chain."""
    layered: Layered | None = None
    for d, dtypes in chain:
        layered = Layered(Partition(Path(d), dtypes, n_docs, verify=False), layered)
    return layered


class _Missing(dict[str, int]):
    """A dict answering -1 for a missing key (so a C-level ``map`` can read it)."""

    def __missing__(self, key: str) -> int:
        return -1


def _delta(
    keys: list[str], off: np.ndarray, post: np.ndarray, parent: Layered
) -> tuple[np.ndarray, list[str]]:
    """Which keys a view stored over ``parent`` keeps (posting list absent from or
    different in the parent), and the tombstones (keys the parent stores, this view not).

    ``off``/``post``: the view's posting lists in the order of ``keys``.
    """
    n = len(keys)
    theirs_keys = _Missing(parent.resolved())
    ph = np.fromiter(map(theirs_keys.__getitem__, keys), np.int64, count=n)
    cnt = np.diff(off)
    present = np.flatnonzero(ph >= 0)
    pdf = np.zeros(n, dtype=np.int64)
    if len(present):
        pdf[present] = parent.dfs(ph[present].tolist())
    cand = np.flatnonzero((ph >= 0) & (pdf == cnt))
    lens = cnt[cand]
    total = int(lens.sum())
    owner = np.repeat(np.arange(len(cand)), lens)  # candidate of each compared posting
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
    mine = post[np.repeat(off[cand], lens) + within]
    theirs = np.empty(total, dtype=np.int64)
    hs: np.ndarray = ph[cand]
    layer = hs >> LAYER_SHIFT
    for i, part in enumerate(parent.layers):
        sel: np.ndarray = layer == i
        if sel.any():
            at = sel[owner]
            starts = part.offsets[hs[sel] & KID_MASK].astype(np.int64)
            theirs[at] = part.postings[np.repeat(starts, lens[sel]) + within[at]]
    differs = np.zeros(len(cand), dtype=bool)
    differs[owner[mine != theirs]] = True
    keep = np.ones(n, dtype=bool)
    keep[cand[~differs]] = False
    tombs = sorted(theirs_keys.keys() - set(keys))
    return keep, tombs


def write_partition(
    p: int,
    levels: int,
    work: str,
    vocab_path: str,
    refs: list[ShardRef],
    out: str,
    over: Sequence[PartSpec] = (),
    n_docs: int = 0,
) -> dict[str, Any]:
    """Task: partition ``p`` of a view (keys, offsets, postings), from phase 2's files;
    stored as differences from ``over`` (the same partition of the views it is stored
    over, from the one stored in full) when given."""
    from presidio_delink.index.shard import id_words, load_trie

    w = Path(work)
    vocab = id_words(load_trie(Path(vocab_path)))
    keys: list[str] = []
    kid_parts: list[np.ndarray] = []
    doc_parts: list[np.ndarray] = []
    per_level: dict[str, int] = {}
    prev_ids = np.empty(0, dtype=np.int64)
    prev_strs: list[str] = []
    for n in range(1, levels + 1):
        part = np.load(w / f"level{n}.part.npy", mmap_mode="r")
        ids = np.flatnonzero(np.asarray(part) == p)
        last = np.load(w / f"level{n}.last.npy", mmap_mode="r")[ids]
        if n == 1:
            strs = [vocab[x] for x in last.tolist()]
        else:
            prefix = np.load(w / f"level{n}.prefix.npy", mmap_mode="r")[ids]
            pos = np.searchsorted(prev_ids, prefix).tolist()
            strs = [
                f"{prev_strs[i]} {vocab[x]}" for i, x in zip(pos, last.tolist(), strict=True)
            ]
        base = len(keys)
        keys.extend(strs)
        per_level[f"n_keys_{n}"] = len(strs)
        for r in refs:
            got = np.load(_level_path(r, n, f"post{p}"))
            kid_parts.append(base + np.searchsorted(ids, got[0]))
            doc_parts.append(got[1])
        prev_ids, prev_strs = ids, strs
    d = Path(out)
    d.mkdir(parents=True, mode=0o700)
    kidx = np.concatenate(kid_parts) if kid_parts else np.empty(0, np.int64)
    docs = np.concatenate(doc_parts) if doc_parts else np.empty(0, np.int64)
    del kid_parts, doc_parts  # peak memory: one copy of the postings at a time
    n_postings = len(docs)
    parent = open_layers(over, n_docs)
    own = keys
    if parent is not None:
        # The view's posting lists in key order, compared with the parent's.
        order = np.lexsort((docs, kidx))
        kidx, docs = kidx[order], docs[order]
        off = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum(np.bincount(kidx, minlength=len(keys)), out=off[1:])
        keep, tombs = _delta(keys, off, docs, parent)
        sel = np.flatnonzero(keep)
        own = [keys[i] for i in sel.tolist()] + tombs
        at = keep[kidx]
        kidx, docs = np.searchsorted(sel, kidx[at]), docs[at]
    trie = save_trie(own, d / "ngrams.marisa")
    kid = trie_ids(trie, own)[kidx]
    del kidx
    order = np.lexsort((docs, kid))
    postings = docs[order]
    del docs, order
    offsets = np.zeros(len(own) + 1, dtype=np.int64)
    np.cumsum(np.bincount(kid, minlength=len(own)), out=offsets[1:])
    n_docs_max = int(postings.max()) if len(postings) else 0
    dtypes = {"offsets": smallest_uint(int(offsets[-1])), "postings": smallest_uint(n_docs_max)}
    write_array(d / "offsets.bin", offsets, dtypes["offsets"])
    write_array(d / "postings.bin", postings, dtypes["postings"])
    return {
        "dtypes": dtypes,
        "n_keys": len(keys),
        "n_postings": n_postings,
        **per_level,
        "files": {f: file_record(d / f) for f in PART_FILES},
    }


def build_view(
    refs: list[ShardRef],
    words: list[str],
    vocab_path: Path,
    max_n: int,
    n_docs: int,
    n_parts: int,
    out: Path,
    work: Path,
    runner: Runner,
    over: Sequence[Sequence[PartSpec]] = (),
) -> list[dict[str, Any]]:
    """Phases 2 and 3 of one view; returns its partitions' metadata.  ``over``: per
    partition, the chain of partitions the view is stored over (see `write_partition`)."""
    work.mkdir(parents=True, mode=0o700, exist_ok=True)
    for r in refs:
        Path(r.work).mkdir(parents=True, mode=0o700, exist_ok=True)
    levels = count_view(refs, words, max_n, n_docs, n_parts, work, runner)
    out.mkdir(mode=0o700)
    metas = runner.map(
        write_partition,
        [
            (
                p, levels, str(work), str(vocab_path), refs, str(out / f"part-{p:05d}"),
                over[p] if over else (), n_docs,
            )
            for p in range(n_parts)
        ],
    )
    shutil.rmtree(work, ignore_errors=True)
    for r in refs:
        shutil.rmtree(r.work, ignore_errors=True)
    return [{"dir": f"part-{p:05d}", **m} for p, m in enumerate(metas)]


def merge_vocab(raw_words: Iterable[list[str]]) -> list[str]:
    """The union of shard vocabularies, in first-seen order."""
    seen: dict[str, None] = {}
    for ws in raw_words:
        seen.update(dict.fromkeys(ws))
    return list(seen)


def remap_for(words: list[str], trie: Any) -> np.ndarray:
    """Local word id -> final (trie) word id."""
    return trie_ids(trie, words) if words else np.empty(0, dtype=np.int64)


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

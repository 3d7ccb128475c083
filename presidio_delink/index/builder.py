"""Out-of-core construction of the index: one global key space per view.

Three phases, each a set of independent tasks over files in the build directory, so the
same code runs in this process, on a process pool (``workers``) or on a Dask cluster:

1. **Tokenise** (streaming).  Documents are tokenised once per word model and appended
   to the current *raw shard* as ids of a shard-local vocabulary, ``-1`` closing a segment
   at a placeholder or the end and ``-2`` at punctuation; every ``shard_words`` words the
   shard is written out, with its documents' ids and groups.  Then the document table is
   built (:mod:`~presidio_delink.index.doctable`), the vocabularies are merged per
   partition (a marisa-trie per partition and word model: :mod:`~presidio_delink.index.vocab`)
   and each raw shard is rewritten in those ids: the document ranges kept in the index
   (``folds/F/docs-NNNNN``).
2. **Count** (per view, level by level, with *global* counts): tasks per shard and per
   partition of the key space, the merge of each partition on a worker
   (:mod:`~presidio_delink.index.counting`).  Memory: one shard's or one partition's
   arrays per task; this process holds a few integers per shard and per partition (no
   word, no document id).
3. **Write** (per partition): the keys whose first word falls in it, their postings
   (global document ordinals) and offsets, ordered by trie id.  A view stored over
   another (:data:`STORED_OVER`) keeps only its differences from that view's same
   partition, written before it (see :class:`~presidio_delink.index.shard.Layered`).
   The two are compared as integers: a key's id in the other view follows level by
   level from its words' ids there (:func:`_match_parent`; a key is the same string
   exactly when its words are), and the other view leaves its whole posting lists in its levels
   folder; only the keys kept and the tombstones are ever spelled out as strings.

Stored keys and document frequencies do not depend on the shard size, the number of
partitions or of workers: the index answers identically however it was built.
"""

from __future__ import annotations

import json
import logging
import shutil
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.errors import BuildError, DelinkError, InputError
from presidio_delink.index.counting import (
    ShardRef,
    count_view,
    part_path,
    shard_postings,
)
from presidio_delink.index.format import DOC_FILES, PART_FILES, file_record, write_private
from presidio_delink.index.shard import (
    save_trie,
    smallest_uint,
    trie_ids,
    write_array,
    write_postings,
)
from presidio_delink.index.vocab import VocabRef, load_word_map, map_words, shard_remap

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
        self.cache: dict[str, dict[str, Any]] = {f: {} for f in folds}
        self.ids: list[str] = []
        self.groups: list[str | None] = []
        self.n_docs = 0
        self.n_words = 0  # in the first word model

    def add(self, marked: dict[str, Any], sid: str, group: str | None) -> None:
        """Append one document: per word model, its marked ids (a list or an array), its
        id and given group."""
        self.ids.append(sid)
        self.groups.append(group)
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
        for f in self.folds:
            np.save(directory / f"{f}.tokens.npy", np.frombuffer(self.tokens[f], dtype=np.int32))
            np.save(directory / f"{f}.starts.npy", np.frombuffer(self.doc_starts[f], np.int64))
            # The shard's words go to a file, not back to the driver: across shards they
            # would grow with the collection there.
            write_private(
                directory / f"{f}.words.json",
                json.dumps(list(self.vocab[f]), ensure_ascii=False).encode("utf-8"),
            )
        # So do its documents' ids and groups (`doctable`).
        write_private(directory / "ids.json", json.dumps(self.ids).encode("utf-8"))
        write_private(directory / "groups.json", json.dumps(self.groups).encode("utf-8"))
        return {
            "dir": str(directory),
            "n_docs": self.n_docs,
            "any_group": any(g is not None for g in self.groups),
        }


def finish_shard(
    raw: dict[str, Any], fold: str, s: int, vocab: VocabRef, work: str, out: Path
) -> dict[str, Any]:
    """Task: raw shard ``s`` of one word model in the final vocabulary ids (phase 1 end;
    ``work``: the vocabulary's merge files, `vocab.merge_words`)."""
    d = Path(raw["dir"])
    n_vocab = vocab.n_words
    remap = shard_remap(raw["dir"], fold, s, list(vocab.bounds), work)
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


# -- phase 3: partitions ----------------------------------------------------------------------
# Which view a view is stored over (the first of these built before it): its closest
# text model, so that the differences kept are few (see `shard.Layered`).
STORED_OVER: dict[str, tuple[str, ...]] = {
    "folded-cross": ("folded",),
    "folded-dash": ("folded",),
    "fine": ("folded",),
    "surface": ("fine", "folded"),
    "accent-cross": ("folded-cross", "fine", "folded"),
    "case": ("fine", "folded"),
    "case-cross": ("case", "accent-cross", "folded-cross"),
}


@dataclass(frozen=True)
class ParentLevels:
    """A view that others are stored over, as they read it while they are written: its
    phase-2 level arrays and, per partition, the posting lists of its whole key space
    (``full{p}.*.npy``), all in its levels folder, and its word model's vocabulary."""

    work: str
    vocab: VocabRef
    levels: int


def _level_keys(work: Path, levels: int, p: int) -> list[np.ndarray]:
    """Per level, the sorted codes of partition ``p`` (local id = index)."""
    return [np.load(part_path(work, n, p, "keys")) for n in range(1, levels + 1)]


def _key_strings(
    words: list[str], codes: list[np.ndarray], want: np.ndarray
) -> list[str]:
    """The keys (words joined by one space) at local indices ``want`` of a partition whose
    level-``n`` codes are ``codes[n - 1]``, built for the keys wanted and their prefixes
    only."""
    v = len(words)
    bounds = np.cumsum([0] + [len(x) for x in codes]).tolist()
    if len(want) == bounds[-1]:  # every key: level by level, no dictionaries
        keys: list[str] = []
        prev: list[str] = []
        for n, c in enumerate(codes, 1):
            if n == 1:
                level = [words[x] for x in c.tolist()]
            else:
                level = [
                    f"{prev[q]} {words[w]}"
                    for q, w in zip((c // v).tolist(), (c % v).tolist(), strict=True)
                ]
            keys.extend(level)
            prev = level
        return keys
    need: list[np.ndarray] = [np.empty(0, np.int64) for _ in codes]
    carry = np.empty(0, dtype=np.int64)  # local ids needed as prefixes by the level above
    for n in range(len(codes), 0, -1):
        mine = want[(want >= bounds[n - 1]) & (want < bounds[n])] - bounds[n - 1]
        need[n - 1] = np.union1d(mine, carry)
        carry = codes[n - 1][need[n - 1]] // v if n > 1 else carry[:0]
    out: dict[int, str] = {}  # local index -> key
    strs: dict[int, str] = {}  # local id -> key, current level
    for n in range(1, len(codes) + 1):
        g = need[n - 1]
        c = codes[n - 1][g]
        if n == 1:
            strs = {x: words[w] for x, w in zip(g.tolist(), c.tolist(), strict=True)}
        else:
            strs = {
                x: f"{strs[q]} {words[w]}"
                for x, q, w in zip(g.tolist(), (c // v).tolist(), (c % v).tolist(), strict=True)
            }
        loc = want[(want >= bounds[n - 1]) & (want < bounds[n])]
        for i in loc.tolist():
            out[i] = strs[i - bounds[n - 1]]
    return [out[i] for i in want.tolist()]


def _match_parent(
    codes: list[np.ndarray], v: int, wmap: np.ndarray, pcodes: list[np.ndarray], vp: int
) -> np.ndarray:
    """Per key of a partition (local index), the local index of the same key (the same
    string) in the same partition of the view it is stored over, or -1.  A key is the same
    string exactly when its words are, one by one (words hold no space), and the same
    first word puts it in the same partition.  Matched level by level from its words'
    ids: the strings are never built."""
    bounds = np.cumsum([0] + [len(x) for x in codes]).tolist()
    pbounds = np.cumsum([0] + [len(x) for x in pcodes]).tolist()
    match = np.full(bounds[-1], -1, dtype=np.int64)
    prev = np.empty(0, dtype=np.int64)
    for n in range(1, min(len(codes), len(pcodes)) + 1):
        c, pk = codes[n - 1], pcodes[n - 1]
        if n == 1:
            code = wmap[c]
            ok = code >= 0
        else:
            pre, last = prev[c // v], wmap[c % v]
            ok = (pre >= 0) & (last >= 0)
            code = np.where(ok, pre * vp + last, 0)
        at = np.searchsorted(pk, code)
        ok &= at < len(pk)
        ok[ok] = pk[at[ok]] == code[ok]
        m = np.where(ok, at, -1)
        found = np.flatnonzero(ok)
        match[bounds[n - 1] + found] = pbounds[n - 1] + m[found]
        prev = m
    return match


def _differs(
    off: np.ndarray, post: np.ndarray, match: np.ndarray, poff: np.ndarray, ppost: np.ndarray
) -> np.ndarray:
    """Per key, whether its posting list (``off``/``post``) differs from the one of the
    matching key of the other view (``match``: its index there, -1 for none)."""
    n = len(off) - 1
    cnt = np.diff(off)
    out = np.ones(n, dtype=bool)
    has = np.flatnonzero(match >= 0)
    pm = match[has]
    same_len = cnt[has] == (poff[pm + 1] - poff[pm])
    cand, pm = has[same_len], pm[same_len]
    lens = cnt[cand]
    total = int(lens.sum())
    owner = np.repeat(np.arange(len(cand)), lens)
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
    mine = post[np.repeat(off[cand], lens) + within]
    theirs = ppost[np.repeat(poff[pm], lens) + within]
    bad = np.zeros(len(cand), dtype=bool)
    bad[owner[mine != theirs]] = True
    out[cand[~bad]] = False
    return out


def write_partition(
    p: int,
    levels: int,
    work: str,
    vocab: VocabRef,
    refs: list[ShardRef],
    out: str,
    n_docs: int,
    parent: ParentLevels | None = None,
    keep_full: bool = False,
) -> dict[str, Any]:
    """Task: partition ``p`` of a view (keys, offsets, postings), from phase 2's files.

    ``parent``: the view this one is stored over; only the keys whose posting list differs
    from (or is absent in) the same partition of that view are stored, and a tombstone
    for each key of that view this one does not have.  Keys are matched by the level maps
    (:func:`level_maps`), so the strings of the keys left out are never built.
    ``keep_full``: save this partition's whole posting lists for the views stored over it.
    """
    w = Path(work)
    words = vocab.open().words()
    codes = _level_keys(w, levels, p)
    per_level = {f"n_keys_{n}": len(x) for n, x in enumerate(codes, 1)}
    n_keys = sum(len(x) for x in codes)
    bounds = np.cumsum([0] + [len(x) for x in codes]).tolist()
    kid_parts: list[np.ndarray] = []
    doc_parts: list[np.ndarray] = []
    for n in range(1, levels + 1):
        for r in refs:
            kid, doc = shard_postings(r, n, p)
            kid_parts.append(bounds[n - 1] + kid)
            doc_parts.append(doc)
    d = Path(out)
    d.mkdir(parents=True, mode=0o700)
    kidx = np.concatenate(kid_parts) if kid_parts else np.empty(0, np.int64)
    docs = np.concatenate(doc_parts) if doc_parts else np.empty(0, np.int64)
    del kid_parts, doc_parts  # peak memory: one copy of the postings at a time
    n_postings = len(docs)
    # Postings grouped by key (local index).  Each shard wrote a level's pairs sorted by
    # key then document, shards hold ascending document ranges, so a stable sort by key
    # (a merge of those sorted runs) leaves each key's documents ascending.
    order = np.argsort(kidx, kind="stable")
    docs = docs[order]
    del order
    off = np.zeros(n_keys + 1, dtype=np.int64)
    np.cumsum(np.bincount(kidx, minlength=n_keys), out=off[1:])
    del kidx
    if keep_full:
        np.save(w / f"full{p}.off.npy", off)
        top = int(docs.max()) if len(docs) else 0
        np.save(w / f"full{p}.docs.npy", docs.astype(smallest_uint(top)))
    if parent is None:
        sel = np.arange(n_keys, dtype=np.int64)
        own = _key_strings(words, codes, sel)
    else:
        pw = Path(parent.work)
        pcodes = _level_keys(pw, parent.levels, p)
        if parent.vocab.directory == vocab.directory:  # the same word model
            words_p = words
            wmap = np.arange(len(words), dtype=np.int64)
        else:
            words_p = parent.vocab.open().words()
            wmap = load_word_map(w, len(vocab.sizes))
        match = _match_parent(codes, len(words), wmap, pcodes, len(words_p))
        poff = np.load(pw / f"full{p}.off.npy")
        ppost = np.load(pw / f"full{p}.docs.npy")
        keep = _differs(off, docs, match, poff, ppost)
        del poff, ppost
        theirs = np.ones(sum(len(x) for x in pcodes), dtype=bool)
        theirs[match[match >= 0]] = False  # keys of the parent this view has
        sel = np.flatnonzero(keep)
        own = _key_strings(words, codes, sel) + _key_strings(
            words_p, pcodes, np.flatnonzero(theirs)
        )
    trie = save_trie(own, d / "ngrams.marisa")
    # Own key j < len(sel) (local key sel[j]) goes to its trie id with its postings as one
    # block; the tombstones after them have none (no look-up needed).
    tid = trie_ids(trie, own[: len(sel)])
    lens = np.zeros(len(own), dtype=np.int64)
    lens[tid] = off[sel + 1] - off[sel]
    start = np.zeros(len(own), dtype=np.int64)
    start[tid] = off[sel]
    offsets = np.zeros(len(own) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    at = np.repeat(start - offsets[:-1], lens)  # peak memory: two index arrays at most
    at += np.arange(len(at), dtype=np.int64)
    postings = docs[at]
    del docs
    del at
    dtypes = write_postings(d, offsets, postings, n_docs)
    return {
        "dtypes": dtypes,
        "n_keys": n_keys,
        "n_postings": n_postings,
        **per_level,
        "files": {f: file_record(d / f) for f in PART_FILES},
    }


def build_view(
    refs: list[ShardRef],
    vocab: VocabRef,
    max_n: int,
    n_docs: int,
    n_parts: int,
    out: Path,
    work: Path,
    runner: Runner,
    parent: ParentLevels | None = None,
    keep_levels: bool = False,
) -> tuple[list[dict[str, Any]], ParentLevels | None]:
    """Phases 2 and 3 of one view; returns its partitions' metadata and, when
    ``keep_levels`` (other views are stored over it), what they need of it (its levels
    folder is then left for the caller to remove).  ``parent``: the view it is stored
    over (see `write_partition`)."""
    levels = count_view(refs, list(vocab.bounds), max_n, n_docs, n_parts, work, runner)
    return write_phase(
        refs, vocab, n_docs, n_parts, out, work, runner, levels, parent, keep_levels
    )


def write_phase(
    refs: list[ShardRef],
    vocab: VocabRef,
    n_docs: int,
    n_parts: int,
    out: Path,
    work: Path,
    runner: Runner,
    levels: int,
    parent: ParentLevels | None,
    keep_levels: bool,
) -> tuple[list[dict[str, Any]], ParentLevels | None]:
    """Phase 3 of one view, once it is counted (and the view it is stored over written)."""
    if parent is not None and parent.vocab.directory != vocab.directory:
        runner.map(
            map_words,
            [(p, vocab.directory, list(vocab.sizes), parent.vocab.directory,
              list(parent.vocab.sizes), str(work)) for p in range(n_parts)],
        )
    out.mkdir(mode=0o700)
    metas = runner.map(
        write_partition,
        [
            (p, levels, str(work), vocab, refs, str(out / f"part-{p:05d}"), n_docs,
             parent, keep_levels)
            for p in range(n_parts)
        ],
    )
    for r in refs:
        shutil.rmtree(r.work, ignore_errors=True)
    kept = None
    if keep_levels:
        kept = ParentLevels(str(work), vocab, levels)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return [{"dir": f"part-{p:05d}", **m} for p, m in enumerate(metas)], kept


def _count_alone(job: dict[str, Any]) -> int:
    """Task: :func:`count_view` of one view (``job``: :func:`build_view`'s arguments but
    the runner and the parent), its own tasks run here."""
    return count_view(
        job["refs"], list(job["vocab"].bounds), job["max_n"], job["n_docs"], job["n_parts"],
        job["work"], Runner(),
    )


def _write_alone(
    job: dict[str, Any], levels: int, parent: ParentLevels | None
) -> tuple[list[dict[str, Any]], ParentLevels | None]:
    """Task: :func:`write_phase` of one view, its own tasks run here."""
    return write_phase(
        job["refs"], job["vocab"], job["n_docs"], job["n_parts"], job["out"], job["work"],
        Runner(), levels, parent, job["keep_levels"],
    )


def build_views_side_by_side(
    jobs: dict[str, dict[str, Any]], parents: dict[str, str | None], runner: PoolRunner
) -> dict[str, tuple[list[dict[str, Any]], ParentLevels | None]]:
    """Views built side by side in the worker processes (``jobs``: view ->
    :func:`build_view`'s arguments but the runner and the parent): every view's counting
    (phase 2) is a task of its own, and its writing (phase 3) a task that waits for its
    counting and for the writing of the view it is stored over.  Writing goes first when
    it can (it unblocks the views stored over it), then counting in the views' order.  For
    a collection too small to split one view's work among the workers (fewer shards and
    partitions than workers); the results are those of building the views in turn."""
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    counted: dict[str, int] = {}
    done: dict[str, tuple[list[dict[str, Any]], ParentLevels | None]] = {}
    to_count = list(jobs)
    to_write = list(jobs)
    running: dict[Any, tuple[str, str]] = {}

    def next_task() -> tuple[str, str] | None:
        for name in to_write:
            over = parents[name]
            if name in counted and (over is None or over in done):
                return ("write", name)
        return ("count", to_count[0]) if to_count else None

    try:
        while to_write or running:
            while len(running) < runner.workers:
                task = next_task()
                if task is None:
                    break
                kind, name = task
                if kind == "write":
                    to_write.remove(name)
                    over = parents[name]
                    fut = runner.pool.submit(
                        _write_alone, jobs[name], counted[name],
                        done[over][1] if over is not None else None,
                    )
                else:
                    to_count.remove(name)
                    fut = runner.pool.submit(_count_alone, jobs[name])
                running[fut] = task
            if not running:
                raise BuildError(f"views {to_write} are stored over views not being built")
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                kind, name = running.pop(fut)
                if kind == "count":
                    counted[name] = fut.result()
                else:
                    done[name] = fut.result()
    except BrokenProcessPool as exc:
        raise BuildError("a build worker process died while building a view") from exc
    return done


def check_doc_id(doc_id: object) -> str:
    """Validate a document id (a repeated one is found by `doctable.check_part`: their
    postings would merge)."""
    if isinstance(doc_id, bool) or not isinstance(doc_id, str | int):
        raise InputError(f"document id must be a string or integer, got {type(doc_id).__name__}")
    sid = str(doc_id)
    if not sid:
        raise InputError("empty document id")
    return sid

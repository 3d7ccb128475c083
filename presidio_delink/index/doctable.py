"""The document table (ids, groups) built by the workers, range by range.

**Definitions.**  Phase 1 leaves, per raw shard (a range of document ordinals from
``base``), its documents' ids and given groups (``ids.json``, ``groups.json``).  A
document's *group key* is its group, or its own id when it has none (then it is a group of
one, named by the id; the two kinds never merge).  Groups are numbered in the order of
their first document, as one pass over the collection would number them; every file
written is the one a single process holding the whole table writes.

**Tasks** (the ``P`` partitions hash an id or a group key, as words are hashed):

1. :func:`split_docs`, per shard: its ids and group keys grouped by partition (string
   tables), and its part of ``doc_ids.json``.
2. :func:`check_part`, per partition: a repeated id (the first repeat in document order,
   so the error names the document a serial build names), and the partition's groups: the
   first document and size of each, and each document's group there.
3. With groups: :func:`rank_firsts`, per shard: the order of the first documents of all
   groups that start in the shard; :func:`number_groups`, per partition: each group's
   number (the groups starting in earlier shards, counted by the driver, plus that rank);
   :func:`shard_groups`, per shard: its part of ``groups.bin`` and of ``group_ids.json``.
4. :func:`concat`: each file from its parts, streamed.

**Cost.**  A task holds one shard's or one partition's ids (``N / P`` strings); the driver
holds a few integers per shard and per partition, whatever the number of documents.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from presidio_delink.index.format import file_record
from presidio_delink.index.vocab import read_strings, split_by_part, write_strings
from presidio_delink.io import atomic_output


def _key(sid: str, group: str | None) -> str:
    return "d\0" + sid if group is None else "g\0" + group


def _parts(d: Path, what: str) -> np.ndarray:
    return np.load(d / f"{what}.bounds.npy")


def split_docs(raw_dir: str, base: int, n_parts: int, groups: bool) -> None:
    """Task, per shard: ids (``id.*``) and, with ``groups``, group keys (``gkey.*``) by
    partition, each with its documents' ordinals; ``ids.chunk``: the shard's ids as they
    stand inside ``doc_ids.json``."""
    d = Path(raw_dir)
    ids: list[str] = json.loads((d / "ids.json").read_bytes())
    (d / "ids.chunk").write_bytes(json.dumps(ids)[1:-1].encode("utf-8"))
    tables = [("id", ids)]
    if groups:
        given: list[str | None] = json.loads((d / "groups.json").read_bytes())
        tables.append(("gkey", [_key(s, g) for s, g in zip(ids, given, strict=True)]))
    for what, keys in tables:
        order, bounds = split_by_part(keys, n_parts)
        write_strings(d / what, [keys[i] for i in order.tolist()])
        np.save(d / f"{what}.ord.npy", base + order)
        np.save(d / f"{what}.bounds.npy", bounds)


def check_part(
    p: int, raw_dirs: list[str], work: str, groups: bool
) -> tuple[int, str | None, int, int]:
    """Task, per partition: ``(ordinal, id)`` of the first document whose id an earlier
    one holds (``(-1, None)`` for none) and, with ``groups``, the number of groups of the
    partition and the largest one's size.  Writes per group its first document
    (``gfirst.pP.npy``, ascending) and name (``gname.pP``), per document its ordinal and
    group there (``gdoc.pP.npy``, ``gdocj.pP.npy``, ascending ordinals)."""
    seen: set[str] = set()
    dup: tuple[int, str | None] = (-1, None)
    for r in raw_dirs:
        b = _parts(Path(r), "id")
        lo, hi = int(b[p]), int(b[p + 1])
        got = read_strings(Path(r) / "id", lo, hi)
        ords = np.load(Path(r) / "id.ord.npy", mmap_mode="r")[lo:hi].tolist()
        for sid, o in zip(got, ords, strict=True):
            if sid in seen:  # ordinals ascend: the first repeat found is the earliest
                dup = (o, sid)
                break
            seen.add(sid)
        if dup[1] is not None:
            break
    del seen
    if not groups or dup[1] is not None:
        return dup[0], dup[1], 0, 0
    index: dict[str, int] = {}
    firsts: list[int] = []
    doc_ords: list[np.ndarray] = []
    doc_j: list[int] = []
    for r in raw_dirs:
        b = _parts(Path(r), "gkey")
        lo, hi = int(b[p]), int(b[p + 1])
        ords = np.asarray(np.load(Path(r) / "gkey.ord.npy", mmap_mode="r")[lo:hi])
        for k, o in zip(read_strings(Path(r) / "gkey", lo, hi), ords.tolist(), strict=True):
            j = index.setdefault(k, len(index))
            if j == len(firsts):
                firsts.append(o)
            doc_j.append(j)
        doc_ords.append(ords)
    w = Path(work)
    write_strings(w / f"gname.p{p}", [k[2:] for k in index])  # insertion order: by first
    del index
    jj = np.asarray(doc_j, dtype=np.int64)
    np.save(w / f"gfirst.p{p}.npy", np.asarray(firsts, dtype=np.int64))
    np.save(w / f"gdoc.p{p}.npy", np.concatenate(doc_ords) if doc_ords else jj)
    np.save(w / f"gdocj.p{p}.npy", jj)
    sizes = np.bincount(jj, minlength=1)
    return -1, None, len(firsts), int(sizes.max())


def rank_firsts(s: int, lo: int, hi: int, work: str, n_parts: int) -> int:
    """Task, per shard (ordinals ``lo .. hi - 1``): the rank within the shard of each
    group's first document there, per partition (``grank.sS.npy``, partition ``p``'s slice
    at ``grankb.sS.npy[p]:[p + 1]``).  Returns the number of groups starting here."""
    w = Path(work)
    got = []
    for p in range(n_parts):
        f = np.load(w / f"gfirst.p{p}.npy", mmap_mode="r")
        a, b = np.searchsorted(f, [lo, hi])
        got.append(np.asarray(f[a:b]))
    allf = np.concatenate(got)
    rank = np.empty(len(allf), dtype=np.int64)
    rank[np.argsort(allf, kind="stable")] = np.arange(len(allf))
    np.save(w / f"grank.s{s}.npy", rank)
    np.save(w / f"grankb.s{s}.npy", np.cumsum([0] + [len(x) for x in got]))
    return len(allf)


def number_groups(p: int, work: str, bases: list[int], gbase: list[int]) -> None:
    """Task, per partition: each of its groups' number (``gnum.pP.npy``, ascending) and
    each of its documents' (``gdnum.pP.npy``)."""
    w = Path(work)
    f = np.load(w / f"gfirst.p{p}.npy")
    num = np.empty(len(f), dtype=np.int64)
    cut = np.searchsorted(f, bases)
    for s in range(len(bases) - 1):
        a, b = int(cut[s]), int(cut[s + 1])
        if b > a:
            rb = np.load(w / f"grankb.s{s}.npy")
            r = np.load(w / f"grank.s{s}.npy", mmap_mode="r")[int(rb[p]) : int(rb[p + 1])]
            num[a:b] = gbase[s] + np.asarray(r)
    np.save(w / f"gnum.p{p}.npy", num)
    np.save(w / f"gdnum.p{p}.npy", num[np.load(w / f"gdocj.p{p}.npy")])


def shard_groups(
    s: int, lo: int, hi: int, glo: int, ghi: int, work: str, n_parts: int, dtype: str
) -> None:
    """Task, per shard: the group number of its documents ``lo .. hi - 1``
    (``groups.sS.chunk``) and the names of groups ``glo .. ghi - 1``, those that start in
    it (``gnames.sS.chunk``, as they stand inside ``group_ids.json``)."""
    w = Path(work)
    g = np.zeros(hi - lo, dtype=np.int64)
    names: list[str] = [""] * (ghi - glo)
    for p in range(n_parts):
        o = np.load(w / f"gdoc.p{p}.npy", mmap_mode="r")
        a, b = np.searchsorted(o, [lo, hi])
        if b > a:
            dn = np.load(w / f"gdnum.p{p}.npy", mmap_mode="r")
            g[np.asarray(o[a:b]) - lo] = dn[a:b]
        num = np.load(w / f"gnum.p{p}.npy", mmap_mode="r")
        a, b = np.searchsorted(num, [glo, ghi])
        for n, name in zip(
            np.asarray(num[a:b]).tolist(), read_strings(w / f"gname.p{p}", int(a), int(b)),
            strict=True,
        ):
            names[n - glo] = name
    (w / f"groups.s{s}.chunk").write_bytes(g.astype(dtype).tobytes())
    (w / f"gnames.s{s}.chunk").write_bytes(json.dumps(names)[1:-1].encode("utf-8"))


def concat(out: str, chunks: list[str], json_list: bool) -> dict[str, Any]:
    """Task: ``out`` from its parts, streamed (``json_list``: a JSON list, whose parts
    are its items joined by ``", "``); returns its file record."""
    with atomic_output(out, "wb") as f:
        if json_list:
            f.write(b"[")
        first = True
        for c in chunks:
            data = Path(c).read_bytes()
            if json_list and data:
                if not first:
                    f.write(b", ")
                first = False
            f.write(data)
        if json_list:
            f.write(b"]")
    return file_record(Path(out))


def build_doc_table(
    raws: list[dict[str, Any]], n_parts: int, groups: bool, docs_dir: Path, work: Path,
    runner: Any,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The document table of the raw shards ``raws`` (``docs_dir``: the index's ``docs``
    folder, created); returns the ``docs`` and ``groups`` entries of meta.json.

    Raises:
        InputError: a document id repeats (the first repeat in document order).
    """
    from presidio_delink.errors import InputError
    from presidio_delink.index.shard import smallest_uint

    work.mkdir(parents=True, mode=0o700, exist_ok=True)
    dirs = [r["dir"] for r in raws]
    bases: list[int] = np.cumsum([0] + [r["n_docs"] for r in raws]).tolist()
    runner.map(split_docs, [(r, bases[i], n_parts, groups) for i, r in enumerate(dirs)])
    checked = runner.map(check_part, [(p, dirs, str(work), groups) for p in range(n_parts)])
    dups = [(o, sid) for o, sid, _, _ in checked if sid is not None]
    if dups:
        raise InputError(f"duplicate document id {min(dups)[1]!r}")
    docs_dir.mkdir(mode=0o700)
    jobs: list[tuple[Any, ...]] = [
        (str(docs_dir / "doc_ids.json"), [str(Path(r) / "ids.chunk") for r in dirs], True)
    ]
    groups_meta = None
    if groups:
        starts = runner.map(
            rank_firsts,
            [(s, bases[s], bases[s + 1], str(work), n_parts) for s in range(len(dirs))],
        )
        gbase: list[int] = np.cumsum([0] + starts).tolist()
        runner.map(number_groups, [(p, str(work), bases, gbase) for p in range(n_parts)])
        dtype = smallest_uint(max(gbase[-1] - 1, 0))
        runner.map(
            shard_groups,
            [
                (s, bases[s], bases[s + 1], gbase[s], gbase[s + 1], str(work), n_parts, dtype)
                for s in range(len(dirs))
            ],
        )
        for name, what, js in (("groups.bin", "groups", False), ("group_ids.json", "gnames", True)):
            chunks = [str(work / f"{what}.s{s}.chunk") for s in range(len(dirs))]
            jobs.append((str(docs_dir / name), chunks, js))
        groups_meta = {
            "n_groups": gbase[-1],
            "max_group_size": max(c[3] for c in checked),
            "dtype": dtype,
        }
    records = runner.map(concat, jobs)
    docs_meta = {"files": {"doc_ids.json": records[0]}}
    if groups_meta is not None:
        groups_meta["files"] = {"groups.bin": records[1], "group_ids.json": records[2]}
    return docs_meta, groups_meta

"""Linkable combinations of 2 or 3 N-grams (arity 2 and 3) and the flagged N-grams being
collected: steps 2-3 of :mod:`presidio_delink.linkage` (whose docstring holds the
definitions, the argument that nothing is missed, and the complexity)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from presidio_delink.index import NgramIndex, ViewIndex
from presidio_delink.text import Token

__all__ = ["Acc", "Combination", "Combos", "add_flagged", "combinations"]


@dataclass(frozen=True)
class Combination:
    """A linkable combination of 2 or 3 N-grams, none linkable alone."""

    keys: tuple[str, ...]
    docs: tuple[int, ...]
    flagged: str
    view: str = "folded"


@dataclass(slots=True)
class Acc:
    """A flagged N-gram while it is being collected."""

    n: int
    df: int
    arity: int
    spans: set[tuple[int, int]] = field(default_factory=set)
    partners: set[str] = field(default_factory=set)
    docs: tuple[int, ...] = ()
    groups: int = 0


@dataclass
class Combos:
    listed: list[Combination] = field(default_factory=list)
    count: int = 0
    docs: set[int] = field(default_factory=set)
    complete: bool = True


def add_flagged(
    flagged: dict[str, Acc],
    seg: Sequence[Token],
    ws: Sequence[str],
    i: int,
    n: int,
    df: int,
    arity: int,
) -> str:
    key = " ".join(ws[i : i + n])
    acc = flagged.get(key)
    if acc is None:
        acc = flagged[key] = Acc(n, df, arity)
    elif arity < acc.arity:
        acc.arity = arity
    acc.spans.add((seg[i].start, seg[i + n - 1].end))
    return key


def combinations(
    index: NgramIndex,
    view: ViewIndex,
    segs: list[list[Token]],
    words: list[list[str]],
    m: list[list[int]],
    df_at: dict[tuple[int, int, int], int],
    k: int,
    arity: int,
    mx: int,
    flagged: dict[str, Acc],
    combos: Combos,
    max_combinations: int,
    max_partners: int,
    exhaustive: bool,
) -> None:
    # Distinct members of A with their occurrences and one-word extensions in A.
    keys: dict[str, int] = {}
    occ: list[list[tuple[int, int, int]]] = []
    for s, i, n in df_at:
        key = " ".join(words[s][i : i + n])
        j = keys.setdefault(key, len(keys))
        if j == len(occ):
            occ.append([])
        occ[j].append((s, i, n))
    key_list = list(keys)
    # Posting lists as group sets ("documents" below are groups when there are groups).
    doc_post = [view.lookup(key.split(" ")) for key in key_list]
    post = [index.groups_of(p) for p in doc_post]
    q: list[np.ndarray] = []
    for j in range(len(key_list)):
        ext: set[str] = set()
        for s, i, n in occ[j]:
            if n + 1 <= mx:
                if i > 0 and m[s][i - 1] >= n + 1:
                    ext.add(" ".join(words[s][i - 1 : i + n]))
                if m[s][i] >= n + 1:
                    ext.add(" ".join(words[s][i : i + n + 1]))
        if ext:
            covered = np.unique(np.concatenate([post[keys[e]] for e in ext]))
            q.append(np.setdiff1d(post[j], covered, assume_unique=True))
        else:
            q.append(post[j])
    items = [j for j in range(len(key_list)) if len(q[j])]
    if len(items) < 2:
        return
    # Incidence matrix of U over the documents that any member of U occurs in.
    cols = np.unique(np.concatenate([post[j] for j in items]))
    inc = np.zeros((len(items), len(cols)), dtype=np.float32)
    for r, j in enumerate(items):
        inc[r, np.searchsorted(cols, post[j])] = 1.0
    co = inc @ inc.T  # exact integer counts (below 2**24)
    bits = np.packbits(inc.astype(bool), axis=1)
    bits = np.pad(bits, ((0, 0), (0, (-bits.shape[1]) % 8)))
    w64 = np.ascontiguousarray(bits).view(np.uint64)
    # The method flags the shortest member; ties go to the more frequent one, then by key.
    ranked = sorted(
        range(len(items)),
        key=lambda r: (key_list[items[r]].count(" "), -len(post[items[r]]), key_list[items[r]]),
    )
    score = np.empty(len(items), dtype=np.int64)
    score[ranked] = np.arange(len(items))
    found: list[np.ndarray] = []
    rare = np.triu((co >= 1) & (co < k), 1)
    ia, ib = np.nonzero(rare)
    if len(ia):
        found.append(np.stack([ia, ib, np.full_like(ia, -1)], axis=1))
    if arity >= 3:
        if exhaustive:
            found.extend(_triples(inc, co >= k, k))
        else:
            combos.complete = False
            if len(ia):
                done = np.zeros(len(items), dtype=bool)
                done[np.where(score[ia] < score[ib], ia, ib)] = True
                found.extend(_triples_to_flag(inc, co >= k, k, score, done, max_partners))
            else:
                found.extend(_triples_in_documents(items, q, cols, inc, co >= k, k))
    if not found:
        return
    rows = np.concatenate(found)
    combos.count += len(rows)
    pairs = rows[:, 2] < 0
    r3 = np.where(pairs, rows[:, 0], rows[:, 2])
    members = np.stack([rows[:, 0], rows[:, 1], r3], axis=1)
    both = w64[members[:, 0]] & w64[members[:, 1]] & w64[members[:, 2]]
    hit = np.unpackbits(np.bitwise_or.reduce(both, axis=0).view(np.uint8))[: len(cols)]
    combos.docs.update(index.docs_of_groups(cols[np.flatnonzero(hit)].tolist()))
    pick = np.argmin(score[members], axis=1)
    short = members[np.arange(len(rows)), pick]
    order = np.argsort(short, kind="stable")
    bounds = np.flatnonzero(np.diff(short[order])) + 1
    for group in np.split(order, bounds):
        r = int(short[group[0]])
        j = items[r]
        key = key_list[j]
        arity_min = 2 if pairs[group].any() else 3
        for s, i, n in occ[j]:
            add_flagged(flagged, segs[s], words[s], i, n, len(doc_post[j]), arity_min)
        acc = flagged[key]
        acc.groups = acc.groups or len(post[j])
        for x in group[:max_partners].tolist():
            acc.partners.update(key_list[items[int(c)]] for c in set(members[x].tolist()) if c != r)
        docs = np.unpackbits(np.bitwise_or.reduce(both[group], axis=0).view(np.uint8))
        acc.docs = tuple(index.docs_of_groups(cols[np.flatnonzero(docs[: len(cols)])].tolist()))
    for x in range(min(len(rows), max(0, max_combinations - len(combos.listed)))):
        mem = sorted({key_list[items[int(c)]] for c in members[x].tolist()})
        d = np.unpackbits(both[x].view(np.uint8))[: len(cols)]
        combos.listed.append(
            Combination(
                tuple(mem),
                tuple(index.docs_of_groups(cols[np.flatnonzero(d)].tolist())),
                key_list[items[int(short[x])]],
                view.name,
            )
        )


def _triples(inc: np.ndarray, frequent: np.ndarray, k: int) -> list[np.ndarray]:
    """Linkable triples of rows of ``inc`` (sorted row triples) whose three pairs are all
    frequent (``>= k``; otherwise a pair already links, or the triple's intersection is
    empty).

    Work per *anchor*: the member with the fewest documents.  A triple's intersection lies
    inside its anchor's posting list, so the other two members are compared only on the
    anchor's documents, as bitsets of ``ceil(df(anchor) / 64)`` words.
    """
    u = inc.shape[0]
    dfs = inc.sum(axis=1)
    order = np.lexsort((np.arange(u), dfs))
    rank = np.empty(u, dtype=np.int64)
    rank[order] = np.arange(u)
    present = inc.astype(bool)
    out: list[np.ndarray] = []
    for a in order.tolist():
        nb = np.flatnonzero(frequent[a] & (rank > rank[a]))
        if len(nb) < 2:
            continue
        sub = frequent[np.ix_(nb, nb)]
        bi, bj = np.nonzero(np.triu(sub, 1))
        if len(bi) == 0:
            continue
        cols = np.flatnonzero(present[a])
        bits = np.packbits(present[np.ix_(nb, cols)], axis=1)
        bits = np.pad(bits, ((0, 0), (0, (-bits.shape[1]) % 8)))
        x = np.ascontiguousarray(bits).view(np.uint64)
        step = max(1, 4_000_000 // x.shape[1])
        for lo in range(0, len(bi), step):
            ci, cj = bi[lo : lo + step], bj[lo : lo + step]
            counts = np.bitwise_count(x[ci] & x[cj]).sum(axis=1)
            sel = (counts >= 1) & (counts < k)
            if sel.any():
                tri = np.stack([np.full(int(sel.sum()), a), nb[ci[sel]], nb[cj[sel]]], axis=1)
                out.append(np.sort(tri, axis=1))
    return [np.concatenate(out)] if out else []


def _triples_to_flag(
    inc: np.ndarray,
    frequent: np.ndarray,
    k: int,
    score: np.ndarray,
    done: np.ndarray,
    per_anchor: int,
) -> list[np.ndarray]:
    """Linkable triples whose shortest member (lowest ``score``) is not ``done`` yet.

    For each such candidate member ``x``: triples ``(x, b, c)`` with ``b`` and ``c``
    ranked after ``x`` and all three pairs frequent.  Their intersections lie inside
    ``x``'s documents, so one matrix product of the candidates' incidence on those
    documents counts every ``(b, c)`` at once.  At most ``per_anchor`` triples per ``x``.
    """
    out: list[np.ndarray] = []
    for x in np.argsort(score).tolist():
        if done[x]:
            continue
        nb = np.flatnonzero(frequent[x] & (score > score[x]))
        if len(nb) < 2:
            continue
        y = inc[np.ix_(nb, np.flatnonzero(inc[x]))]
        co = y @ y.T  # documents of x holding both b and c
        rare = (co >= 1) & (co < k) & frequent[np.ix_(nb, nb)]
        bi, bj = np.nonzero(np.triu(rare, 1))
        if len(bi):
            bi, bj = bi[:per_anchor], bj[:per_anchor]
            tri = np.stack([np.full(len(bi), x), nb[bi], nb[bj]], axis=1)
            out.append(np.sort(tri, axis=1))
    return [np.concatenate(out)] if out else []


def _triples_in_documents(
    items: list[int],
    q: list[np.ndarray],
    cols: np.ndarray,
    inc: np.ndarray,
    frequent: np.ndarray,
    k: int,
) -> list[np.ndarray]:
    """Linkable triples when no pair links: searched per collection document ``D`` among
    its maximal items ``M_D`` (enough for the decision, see the module docstring).

    A document whose whole ``M_D`` is held by ``k`` or more documents is skipped: every
    subset of ``M_D`` is held by them too.  (A near-duplicate of the text in the
    collection makes this the common case.)  Within ``M_D``, work per anchor as in
    :func:`_triples_to_flag`.  Returns the triples found (not necessarily all of them).
    """
    present = inc.astype(bool)
    members: dict[int, list[int]] = {}
    for r, j in enumerate(items):
        for d in np.searchsorted(cols, q[j]).tolist():
            members.setdefault(d, []).append(r)
    out: list[np.ndarray] = []
    for rows_list in members.values():
        if len(rows_list) < 3:
            continue
        rows = np.asarray(rows_list)
        if np.logical_and.reduce(present[rows], axis=0).sum() >= k:
            continue
        f = frequent[np.ix_(rows, rows)]
        dfs = present[rows].sum(axis=1)
        order = np.lexsort((rows, dfs))
        rank = np.empty(len(rows), dtype=np.int64)
        rank[order] = np.arange(len(rows))
        for a in order.tolist():
            nb = np.flatnonzero(f[a] & (rank > rank[a]))
            if len(nb) < 2:
                continue
            y = inc[np.ix_(rows[nb], np.flatnonzero(present[rows[a]]))]
            co = y @ y.T
            rare = (co >= 1) & (co < k) & f[np.ix_(nb, nb)]
            bi, bj = np.nonzero(np.triu(rare, 1))
            if len(bi):
                tri = np.stack([np.full(len(bi), rows[a]), rows[nb[bi]], rows[nb[bj]]], axis=1)
                out.append(np.sort(tri, axis=1))
                break  # one witness per document is enough for the decision
    return [np.unique(np.concatenate(out), axis=0)] if out else []

"""Finding linkable N-grams and combinations: a pure function of an index and a text.

Definitions (``k >= 2``; an N-gram is 1..max_n words inside one segment of the text):

* **Arity 1.** An N-gram ``s`` with ``1 <= df(s) < k`` is *flagged*.  Only the minimal ones
  are reported: a flagged N-gram containing a shorter flagged one adds nothing.  An N-gram
  found in no document links nothing.
* **Arity 2 and 3.** Let ``A`` be the N-grams of the text with ``df >= k`` (not flagged
  alone; since df can only fall as an N-gram grows, none of them contains a flagged one).
  A combination ``G`` of 2 or 3 members of ``A`` is *linkable* when its posting lists
  intersect in 1..k-1 documents: the adversary searching for all of them at once gets
  fewer than ``k`` documents.  The method flags the shortest N-gram of ``G``.

Which N-grams are combined, and why nothing is missed.  For a collection document ``D``
let ``S_D`` be the members of ``A`` that occur in ``D``, and ``M_D`` the *maximal* ones:
those of ``S_D`` not contained in a longer member of ``S_D``.  If a combination ``G`` is
linkable, pick ``D`` in its intersection and replace each member by a member of ``M_D``
containing it: ``D`` stays in the intersection, which can only shrink (a longer N-gram's
posting list is a subset of the shorter one's), so the new combination is linkable too
(its members cannot all coincide, since one N-gram of ``A`` alone has ``df >= k``).
Hence the text is linkable at arity <= a exactly when some ``D`` has a linkable
combination of <= a members of ``M_D``.  A member ``g`` of ``A`` is in ``M_D`` exactly
when ``D`` contains ``g`` but none of its one-word extensions in the text that are in
``A``; so ``Q(g) = P(g) minus the union of P(e) over those extensions e`` lists the
documents where ``g`` is maximal, and ``U`` (members with non-empty ``Q``) is the item set.

Algorithm and complexity (``u = |U|``, ``N`` documents, ``w = N/64`` words of a bitset):

1. One prefix walk per text position gives the df of every N-gram up to the first one
   below ``k``: ``O(L * max_n)`` trie steps for ``L`` words.  This yields the minimal
   arity-1 N-grams and ``A``.
2. Pairs: the co-occurrence counts of all pairs of ``U`` are one matrix product of the
   ``u x N`` incidence matrix with its transpose, ``O(u^2 N)`` in BLAS; a pair is linkable
   when its count is in ``1..k-1``.  Exact over ``U``, hence exact (see above).
3. Triples: *per co-occurring document* ``D``, only over ``M_D``, and only triples whose
   three pairs all have counts ``>= k`` (otherwise a pair is already linkable, or the
   triple's intersection is empty).  Counts are ANDs of packed bitsets and a popcount,
   ``O(t * w)`` for ``t`` such triples, instead of ``C(|A|, 3)`` intersections.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from presidio_delink.errors import ConfigError
from presidio_delink.index import NgramIndex
from presidio_delink.text import Token

__all__ = ["Combination", "Flagged", "LinkageReport", "analyze"]

MAX_ARITY = 3


@dataclass(frozen=True)
class Flagged:
    """A flagged N-gram of the text, with all its occurrences.

    Attributes:
        key: the normalised N-gram (words joined by one space).
        n: its length in words.
        df: in how many collection documents it occurs.
        arity: 1 when it links alone, else the size of the smallest linkable combination
            whose shortest member it is.
        spans: character offsets ``(start, end)`` of each occurrence in the text.
        partners: the other N-grams of its linkable combinations (arity 2-3).
        docs: collection document ordinals it links to (with its partners).
    """

    key: str
    n: int
    df: int
    arity: int
    spans: tuple[tuple[int, int], ...]
    partners: tuple[str, ...] = ()
    docs: tuple[int, ...] = ()


@dataclass(frozen=True)
class Combination:
    """A linkable combination of 2 or 3 N-grams, none linkable alone."""

    keys: tuple[str, ...]
    docs: tuple[int, ...]
    flagged: str


@dataclass
class LinkageReport:
    """What the adversary can do with one text."""

    k: int
    arity: int
    n_words: int
    flagged: list[Flagged]
    combinations: list[Combination] = field(default_factory=list)

    @property
    def linkable(self) -> bool:
        return bool(self.flagged)

    def linked_docs(self) -> dict[int, list[tuple[str, ...]]]:
        """Collection document ordinal -> the evidence (N-gram tuples) singling it out."""
        out: dict[int, list[tuple[str, ...]]] = defaultdict(list)
        for f in self.flagged:
            if f.arity == 1:
                for d in f.docs:
                    out[d].append((f.key,))
        for c in self.combinations:
            for d in c.docs:
                out[d].append(c.keys)
        return dict(out)

    def spans(self) -> list[tuple[int, int, Flagged]]:
        """Every flagged occurrence ``(start, end, flagged)``, sorted by position."""
        return sorted((a, b, f) for f in self.flagged for a, b in f.spans)


def _check_args(index: NgramIndex, k: int, arity: int, max_n: int | None) -> int:
    if not isinstance(k, int) or k < 2:
        raise ConfigError(f"k must be an integer >= 2 (k=1 flags nothing), got {k!r}")
    if arity not in (1, 2, 3):
        raise ConfigError(f"arity must be 1, 2 or 3, got {arity!r}")
    mx = index.max_n if max_n is None else max_n
    if not 1 <= mx <= index.max_n:
        raise ConfigError(f"max_n must be in 1..{index.max_n} (the index's max_n), got {max_n!r}")
    return mx


def analyze(
    index: NgramIndex, text: str, k: int = 2, arity: int = 1, max_n: int | None = None
) -> LinkageReport:
    """Find the linkable N-grams (and combinations, for arity 2-3) of ``text``.

    Args:
        index: the reference collection's index.
        text: a (de-identified) text.
        k: a phrase (or combination) found in fewer than ``k`` documents links.
        arity: largest combination size, 1..3.
        max_n: longest N-gram considered (at most the index's).
    """
    mx = _check_args(index, k, arity, max_n)
    segs = index.tokenizer.segments(text)
    words = [[t.word for t in s] for s in segs]
    # m[s][i]: length of the longest N-gram at (s, i) with df >= k; df_at[(s, i, n)] for n<=m.
    m: list[list[int]] = []
    df_at: dict[tuple[int, int, int], int] = {}
    cands: list[list[tuple[int, int, int]]] = []  # per segment: (i, n, df) flagged at i
    for s, ws in enumerate(words):
        ms: list[int] = []
        cs: list[tuple[int, int, int]] = []
        for i in range(len(ws)):
            dfs = index.prefix_dfs(ws[i : i + mx], k)
            good = 0
            for n, d in enumerate(dfs, 1):
                if d >= k:
                    good = n
                    df_at[(s, i, n)] = d
                else:
                    if d >= 1:
                        cs.append((i, n, d))
                    break
            ms.append(good)
        m.append(ms)
        cands.append(cs)

    flagged: dict[str, dict[str, object]] = {}
    for s, cs in enumerate(cands):
        min_end = 1 << 30
        for i, n, d in sorted(cs, reverse=True):
            if min_end > i + n:  # contains no other candidate: minimal
                _add(flagged, segs[s], words[s], i, n, d, 1)
            min_end = min(min_end, i + n)
    for key, info in flagged.items():
        info["docs"] = tuple(index.lookup(key.split(" ")).tolist())

    combos: list[Combination] = []
    if arity >= 2 and df_at:
        combos = _combinations(index, segs, words, m, df_at, k, arity, mx, flagged)

    out = [
        Flagged(
            key=key,
            n=int(info["n"]),  # type: ignore[call-overload]
            df=int(info["df"]),  # type: ignore[call-overload]
            arity=int(info["arity"]),  # type: ignore[call-overload]
            spans=tuple(sorted(info["spans"])),  # type: ignore[call-overload]
            partners=tuple(sorted(info.get("partners", set()))),  # type: ignore[call-overload]
            docs=tuple(info.get("docs", ())),  # type: ignore[call-overload]
        )
        for key, info in flagged.items()
    ]
    out.sort(key=lambda f: f.spans[0])
    return LinkageReport(
        k=k, arity=arity, n_words=sum(len(w) for w in words), flagged=out, combinations=combos
    )


def _add(
    flagged: dict[str, dict[str, object]],
    seg: Sequence[Token],
    ws: Sequence[str],
    i: int,
    n: int,
    df: int,
    arity: int,
) -> str:
    key = " ".join(ws[i : i + n])
    info = flagged.setdefault(key, {"n": n, "df": df, "arity": arity, "spans": set()})
    info["arity"] = min(int(info["arity"]), arity)  # type: ignore[call-overload]
    info["spans"].add((seg[i].start, seg[i + n - 1].end))  # type: ignore[attr-defined]
    return key


def _combinations(
    index: NgramIndex,
    segs: list[list[Token]],
    words: list[list[str]],
    m: list[list[int]],
    df_at: dict[tuple[int, int, int], int],
    k: int,
    arity: int,
    mx: int,
    flagged: dict[str, dict[str, object]],
) -> list[Combination]:
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
    post = [index.lookup(key.split(" ")) for key in key_list]
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
        return []
    # Incidence matrix of U over the documents that any member of U occurs in.
    cols = np.unique(np.concatenate([post[j] for j in items]))
    inc = np.zeros((len(items), len(cols)), dtype=np.float32)
    for r, j in enumerate(items):
        inc[r, np.searchsorted(cols, post[j])] = 1.0
    co = inc @ inc.T  # exact integer counts (below 2**24)
    found: dict[tuple[int, ...], np.ndarray] = {}
    iu, ju = np.nonzero(np.triu((co >= 1) & (co < k), 1))
    for a, b in zip(iu.tolist(), ju.tolist(), strict=True):
        found[(a, b)] = np.intersect1d(post[items[a]], post[items[b]], assume_unique=True)
    if arity >= 3:
        _triples(items, q, cols, inc, co, k, post, found)

    combos = []
    for rows, docs in found.items():
        members = sorted(key_list[items[r]] for r in rows)
        # The method flags the shortest N-gram of the combination (ties: the most frequent).
        short = min(members, key=lambda x: (x.count(" "), -len(post[keys[x]]), x))
        combos.append(Combination(tuple(members), tuple(docs.tolist()), short))
        j = keys[short]
        for s, i, n in occ[j]:
            _add(flagged, segs[s], words[s], i, n, len(post[j]), len(rows))
        info = flagged[short]
        info.setdefault("partners", set()).update(x for x in members if x != short)  # type: ignore[attr-defined]
        info["docs"] = tuple(sorted(set(info.get("docs", ())) | set(docs.tolist())))  # type: ignore[call-overload]
    combos.sort(key=lambda c: (len(c.keys), c.keys))
    return combos


def _triples(
    items: list[int],
    q: list[np.ndarray],
    cols: np.ndarray,
    inc: np.ndarray,
    co: np.ndarray,
    k: int,
    post: list[np.ndarray],
    found: dict[tuple[int, ...], np.ndarray],
) -> None:
    """Linkable triples, per co-occurring document, over that document's maximal items."""
    bits = np.packbits(inc.astype(bool), axis=1)
    pad = (-bits.shape[1]) % 8
    if pad:
        bits = np.pad(bits, ((0, 0), (0, pad)))
    words64 = bits.view(np.uint64)
    frequent = co >= k
    # Rows (of U) that are maximal in each document.
    by_doc: dict[int, list[int]] = defaultdict(list)
    for r, j in enumerate(items):
        for d in np.searchsorted(cols, q[j]).tolist():
            by_doc[d].append(r)
    seen: set[tuple[int, int, int]] = set()
    for rows_list in by_doc.values():
        if len(rows_list) < 3:
            continue
        rows = np.asarray(rows_list)
        f = frequent[np.ix_(rows, rows)]
        for a in range(len(rows) - 2):
            nb = np.flatnonzero(f[a, a + 1 :]) + a + 1
            if len(nb) < 2:
                continue
            sub = f[np.ix_(nb, nb)]
            bj, bl = np.nonzero(np.triu(sub, 1))
            if len(bj) == 0:
                continue
            ra, rj, rl = rows[a], rows[nb[bj]], rows[nb[bl]]
            both = words64[ra] & words64[rj] & words64[rl]
            counts = np.bitwise_count(both).sum(axis=1)
            for x in np.flatnonzero((counts >= 1) & (counts < k)).tolist():
                t = tuple(sorted((int(ra), int(rj[x]), int(rl[x]))))
                if t in seen:
                    continue
                seen.add(t)
                p = np.intersect1d(post[items[t[0]]], post[items[t[1]]], assume_unique=True)
                found[t] = np.intersect1d(p, post[items[t[2]]], assume_unique=True)

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

Views and groups.  The index holds several *views* (text models, see
:mod:`presidio_delink.views`); everything above runs in each view on that view's words and
key space, and a text is linkable when it is linkable in any view.  Flagged N-grams of all
views are character intervals of the same text.  When the collection has *groups*
(several documents about one person or case), "documents" above reads "groups": df is the
number of distinct groups, and posting lists are mapped to group sets before they are
intersected (a group is the union of its documents, so the argument is unchanged).

Algorithm and complexity (``u = |U|``, ``N`` documents, ``w = N/64`` words of a bitset):

1. One prefix walk per text position gives the df of every N-gram up to the first one
   below ``k``: ``O(L * max_n)`` trie steps for ``L`` words.  This yields the minimal
   arity-1 N-grams and ``A``.
2. Pairs: the co-occurrence counts of all pairs of ``U`` are one matrix product of the
   ``u x N`` incidence matrix with its transpose, ``O(u^2 N)`` in BLAS; a pair is linkable
   when its count is in ``1..k-1``.  Exact over ``U``, hence exact (see above).
3. Triples, only those whose three pairs all have counts ``>= k`` (otherwise a pair
   already links, or the intersection is empty).  When some pair links, most N-grams are
   flagged already: each remaining one ``x`` is tried as the triple's shortest member,
   counting all ``(b, c)`` on ``x``'s documents with one matrix product.  When no pair
   links, the search goes *per co-occurring document* ``D`` over ``M_D`` (enough for the
   decision, by the argument above), skipping every ``D`` whose whole ``M_D`` is held by
   ``k`` or more documents; per anchor (fewest documents) one matrix product on the
   anchor's documents.  Either way no ``C(|A|, 3)`` enumeration of intersections.
   ``exhaustive=True`` enumerates every linkable triple over ``U`` (the adversary's view).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, NamedTuple

import numpy as np

from presidio_delink.combinations import Acc, Combination, Combos, add_flagged, combinations
from presidio_delink.errors import ConfigError
from presidio_delink.index import NgramIndex, ViewIndex
from presidio_delink.index.view_index import Lows
from presidio_delink.text import Token, join_soft

__all__ = ["Combination", "Evidence", "Flagged", "LinkageReport", "analyze"]

MAX_ARITY = 3


@dataclass(frozen=True)
class Flagged:
    """A flagged N-gram of the text, with all its occurrences.

    Attributes:
        key: the normalised N-gram (words joined by one space) in its view.
        n: its length in words.
        df: in how many collection documents it occurs.
        arity: 1 when it links alone, else the size of the smallest linkable combination
            whose shortest member it is.
        spans: character offsets ``(start, end)`` of each occurrence in the text.
        partners: the other N-grams of its linkable combinations (arity 2-3).
        docs: collection document ordinals it links to (with its partners).
        view: the view (text model) in which it links.
        groups: in how many distinct groups it occurs (what ``k`` is compared with;
            equal to ``df`` when the collection has no groups).
    """

    key: str
    n: int
    df: int
    arity: int
    spans: tuple[tuple[int, int], ...]
    partners: tuple[str, ...] = ()
    docs: tuple[int, ...] = ()
    view: str = "folded"
    groups: int = 0


def _flagged(**fields: Any) -> Flagged:
    """A :class:`Flagged` with every field given, made without the frozen dataclass's
    ``__init__`` (one ``object.__setattr__`` per field, several microseconds; a check
    makes hundreds per text)."""
    f: Flagged = object.__new__(Flagged)
    f.__dict__.update(fields)
    return f


class Evidence(NamedTuple):
    """One piece of evidence singling a document out (:meth:`LinkageReport.linked_docs`):
    the N-gram (or the combination's N-grams) and the views it links in."""

    ngrams: tuple[str, ...]
    views: tuple[str, ...]


@dataclass
class LinkageReport:
    """What the adversary can do with one text.

    Attributes:
        flagged: the flagged N-grams (arity 1 and shortest members of combinations).
        combinations: linkable combinations found, at most ``max_combinations`` of them
            (pairs first); ``n_combinations`` counts them all.
        combination_docs: every collection document (ordinal) that some linkable
            combination singles out (even when the list above is truncated).
        complete: False when triples were searched only as far as needed to flag
            (``exhaustive=False``): ``n_combinations`` and ``combination_docs`` then cover
            all pairs but only the triples found.
        doc_ids: the index's document ids (ordinal -> id), for :meth:`linked_docs`.
    """

    k: int
    arity: int
    n_words: int
    flagged: list[Flagged]
    combinations: list[Combination] = field(default_factory=list)
    n_combinations: int = 0
    combination_docs: tuple[int, ...] = ()
    complete: bool = True
    doc_ids: Sequence[str] = field(default=(), repr=False)

    @property
    def linkable(self) -> bool:
        return bool(self.flagged)

    def linked_ordinals(self) -> dict[int, list[tuple[str, ...]]]:
        """Collection document ordinal -> evidence (N-gram tuples) singling it out.

        Every linked document is a key; its evidence lists the arity-1 N-grams and the
        listed combinations (an empty list: only combinations beyond the listed ones).
        """
        out: dict[int, list[tuple[str, ...]]] = {d: [] for d in self.combination_docs}
        for f in self.flagged:
            if f.arity == 1:
                for d in f.docs:
                    out.setdefault(d, []).append((f.key,))
        for c in self.combinations:
            for d in c.docs:
                out.setdefault(d, []).append(c.keys)
        return dict(sorted(out.items()))

    def linked_docs(self) -> dict[str, list[Evidence]]:
        """Collection document id -> the evidence singling it out, in collection order:
        each piece once, with the views it links in (a phrase that links in several
        views, at the same place of the text, is one piece of evidence; its N-grams are
        given in the first of those views).

        Raises:
            ValueError: the report was not made by :func:`analyze` (it has no ids).
        """
        pieces: dict[int, dict[object, tuple[tuple[str, ...], list[str]]]] = {
            d: {} for d in self.combination_docs
        }

        def add(d: int, where: object, keys: tuple[str, ...], view: str) -> None:
            got = pieces.setdefault(d, {}).setdefault(where, (keys, []))
            if view not in got[1]:
                got[1].append(view)

        for f in self.flagged:
            if f.arity == 1:
                for d in f.docs:
                    add(d, f.spans[0] if f.spans else f.key, (f.key,), f.view)
        for c in self.combinations:
            for d in c.docs:
                add(d, c.keys, c.keys, c.view)
        if pieces and len(self.doc_ids) <= max(pieces):
            raise ValueError("this report has no document ids (build it with analyze())")
        return {
            self.doc_ids[d]: [Evidence(keys, tuple(views)) for keys, views in ev.values()]
            for d, ev in sorted(pieces.items())
        }

    def spans(self) -> list[tuple[int, int, Flagged]]:
        """Every flagged occurrence ``(start, end, flagged)``, sorted by position."""
        return sorted(((a, b, f) for f in self.flagged for a, b in f.spans), key=lambda x: x[:2])

    def places(self, text: str) -> list[dict[str, Any]]:
        """``check``'s record of each flagged place of ``text`` (the analysed text): one
        per place and arity, with every view it links in; ``ngram``, ``view``, ``df``
        and ``groups`` are those of the view where it occurs in the fewest groups."""
        places: dict[tuple[Any, ...], dict[str, Any]] = {}
        for a, b, f in self.spans():
            where = (a, b, f.arity, f.partners)
            rec = places.get(where)
            if rec is None or (f.groups, f.df) < (rec["groups"], rec["df"]):
                views = rec["views"] if rec is not None else []
                rec = places[where] = {
                    "start": a, "end": b, "text": text[a:b], "ngram": f.key, "view": f.view,
                    "views": views, "df": f.df, "groups": f.groups, "arity": f.arity,
                    "partners": list(f.partners),
                }
            if f.view not in rec["views"]:
                rec["views"].append(f.view)
        return list(places.values())

    def links(self, evidence: int = 20) -> list[dict[str, Any]]:
        """``attack``'s record of each collection document the text singles out: its id,
        the first ``evidence`` pieces (N-grams and views) and their number."""
        return [
            {
                "doc_id": d,
                "evidence": [{"ngrams": list(e.ngrams), "views": list(e.views)}
                             for e in ev[:evidence]],
                "n_evidence": len(ev),
            }
            for d, ev in self.linked_docs().items()
        ]


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
    index: NgramIndex,
    text: str,
    k: int = 2,
    arity: int = 1,
    max_n: int | None = None,
    *,
    max_combinations: int = 1000,
    max_partners: int = 10,
    exhaustive: bool = False,
    views: Sequence[str] | None = None,
) -> LinkageReport:
    """Find the linkable N-grams (and combinations, for arity 2-3) of ``text``.

    Args:
        index: the reference collection's index.
        text: a (de-identified) text.
        k: a phrase (or combination) found in fewer than ``k`` documents links.
        arity: largest combination size, 1..3.
        max_n: longest N-gram considered (at most the index's).
        max_combinations: how many linkable combinations to list (all are counted, and
            all of them flag their shortest member).
        max_partners: how many partner N-grams to list per flagged N-gram.
        exhaustive: enumerate *every* linkable triple (arity 3), so that
            ``n_combinations`` and ``combination_docs`` are complete; the adversary's view.
        views: the views to check (default: every view of the index).
            Otherwise triples are searched only until each N-gram that could be the
            shortest member of one is flagged: the flagged set and the linkable/not
            decision are the same, at a fraction of the cost.
    """
    mx = _check_args(index, k, arity, max_n)
    names = list(index.views) if views is None else list(views)
    for name in names:
        if name not in index.views:
            raise ConfigError(f"the index has no view {name!r} (it has {', '.join(index.views)})")
    walks = _walk_views(index, [index.views[name] for name in names], text, k, mx, arity >= 2)
    out: list[Flagged] = []
    combos = Combos()
    for name in names:
        out.extend(
            _analyze_view(
                index,
                index.views[name],
                walks[name],
                k,
                arity,
                mx,
                combos,
                max_combinations,
                max_partners,
                exhaustive,
            )
        )
    out.sort(key=lambda f: (f.spans[0], f.view))
    return LinkageReport(
        k=k,
        arity=arity,
        n_words=_n_words(index, walks, text),
        flagged=out,
        combinations=combos.listed,
        n_combinations=combos.count,
        combination_docs=tuple(sorted(combos.docs)),
        complete=combos.complete,
        doc_ids=index.doc_ids,
    )


def _n_words(index: NgramIndex, walks: dict[str, _Walk], text: str) -> int:
    """Words of ``text`` in the index's own text model (a walked view's, when one has it)."""
    for name, walk in walks.items():
        if index.views[name].tokenizer == index.tokenizer:
            return sum(map(len, walk.words))
    return sum(len(s) for s in index.tokenizer.segments(text))


@dataclass
class _Walk:
    """One view's tokens of the text and its prefix walks (see ``ViewIndex.walk_keys``)."""

    segs: list[list[Token]]
    words: list[list[str]]
    keys: list[str]
    starts: list[int]  # the query of each segment's first word
    rows: list[list[int]]  # combinations only (arity >= 2)
    entries: list[tuple[int, int] | None]
    lows: Lows | None  # arity 1


def _walk_views(
    index: NgramIndex, views: Sequence[ViewIndex], text: str, k: int, mx: int, rows: bool
) -> dict[str, _Walk]:
    """The prefix walks of every view.  A view that crosses punctuation is walked first:
    at each text position, its query extends the query of the view of its word model
    that does not cross (same tokens, a segment cut at punctuation), and when it is stored
    over that view, the walk it leaves in that view's memo answers that view's walk.
    ``rows``: every prefix's document frequency, for combinations (arity 2, 3); without,
    only what an arity-1 check reads (:meth:`ViewIndex.walk_lows`)."""
    walks: dict[str, _Walk] = {}
    # Per word model: its pieces (segments cut at every break) and their words, which the
    # views of that model that cross punctuation and that do not both read.
    read: dict[str, tuple[list[tuple[list[Token], bool]], list[list[str]]]] = {}
    for view in sorted(views, key=lambda v: v.tokenizer.break_on_punctuation):
        tok = view.tokenizer
        extends = None
        if tok.break_on_punctuation:
            for other in views:
                if other.name in walks and other.stored_over(view) and (
                    other.tokenizer.fold == tok.fold
                ):
                    extends = walks[other.name].keys
                    break
        got = read.get(tok.fold)
        if got is None:
            pieces = tok.pieces(text)
            got = read[tok.fold] = (pieces, [[t.word for t in seg] for seg, _ in pieces])
        pieces, words = got
        if tok.break_on_punctuation:
            segs = [seg for seg, _ in pieces]
        else:
            segs = join_soft(pieces)
            words = join_soft(zip(words, (hard for _, hard in pieces), strict=True))
        walks[view.name] = _walk(index, view, segs, words, k, mx, extends, rows)
    return walks


def _walk(
    index: NgramIndex,
    view: ViewIndex,
    segs: list[list[Token]],
    words: list[list[str]],
    k: int,
    mx: int,
    extends: list[str] | None,
    rows: bool,
) -> _Walk:
    # The query at each position: its next (up to) mx words, as a slice of its segment
    # joined once.
    keys: list[str] = []
    lengths: list[int] = []
    starts: list[int] = []
    for ws in words:
        starts.append(len(keys))
        size = len(ws)
        joined = " ".join(ws)
        # cut[j]: where word j ends in `joined` (cut[-1] == -1): word i begins at
        # cut[i - 1] + 2, and the query at i ends where word min(i + mx, size) - 1 does.
        cut = list(accumulate(map((1).__add__, map(len, ws)), initial=-1))
        last = cut[mx:]
        last += [cut[size]] * (size - len(last))
        keys += [joined[a + 1 : b] for a, b in zip(cut, last, strict=False)]
        lengths += [mx] * max(size - mx + 1, 0) + list(range(min(mx - 1, size), 0, -1))
    if extends is not None and len(extends) != len(keys):
        extends = None
    if not rows:
        lows = index.link_lows(view, keys, lengths, k, extends)
        return _Walk(segs, words, keys, starts, [], [], lows)
    dfs, entries = index.link_dfs(view, keys, lengths, k, extends)
    return _Walk(segs, words, keys, starts, dfs, entries, None)


def _analyze_view(
    index: NgramIndex,
    view: ViewIndex,
    walk: _Walk,
    k: int,
    arity: int,
    mx: int,
    combos: Combos,
    max_combinations: int,
    max_partners: int,
    exhaustive: bool,
) -> list[Flagged]:
    segs, words, rows, entries = walk.segs, walk.words, walk.rows, walk.entries
    # m[s][i]: length of the longest N-gram at (s, i) with df >= k; df_at[(s, i, n)] for n<=m
    # (combinations only).
    m: list[list[int]] = []
    df_at: dict[tuple[int, int, int], int] = {}
    # per segment: (i, n, df, stored entry or None) flagged at i
    cands: list[list[tuple[int, int, int, tuple[int, int] | None]]] = []
    if walk.lows is not None:  # arity 1: only the flagged positions are visited
        lows = walk.lows
        at = np.flatnonzero((lows.df >= 1) & (lows.df < k))
        seg_of = np.searchsorted(np.asarray(walk.starts, dtype=np.int64), at, side="right") - 1
        cands = [[] for _ in words]
        for q, s, good, d in zip(
            at.tolist(), seg_of.tolist(), lows.good[at].tolist(), lows.df[at].tolist(),
            strict=True,
        ):
            cands[s].append((q - walk.starts[s], good + 1, d, lows.entry(q)))
    else:  # combinations: every position's row
        q = 0
        for s, ws in enumerate(words):
            ms: list[int] = []
            cs: list[tuple[int, int, int, tuple[int, int] | None]] = []
            for i in range(len(ws)):
                dfs = rows[q]
                good = len(dfs)
                d = dfs[-1] if dfs else k
                if d < k:
                    good -= 1
                    if d >= 1:
                        cs.append((i, good + 1, d, entries[q]))
                for n in range(1, good + 1):
                    df_at[(s, i, n)] = dfs[n - 1]
                ms.append(good)
                q += 1
            m.append(ms)
            cands.append(cs)

    flagged: dict[str, Acc] = {}
    where: dict[str, tuple[int, int] | None] = {}
    for s, cs in enumerate(cands):
        min_end = 1 << 30
        for i, n, d, entry in sorted(cs, reverse=True, key=lambda c: (c[0], c[1])):
            if min_end > i + n:  # contains no other candidate: minimal
                key = add_flagged(flagged, segs[s], words[s], i, n, d, 1)
                if where.get(key) is None:
                    where[key] = entry
            min_end = min(min_end, i + n)
    grouped = index.group_of is not None
    for key, acc in flagged.items():
        entry = where.get(key)
        if entry is not None:
            acc.docs = view.docs_at(entry)
        else:
            acc.docs = tuple(view.lookup(key.split(" ")).tolist())
        acc.df = len(acc.docs)
        acc.groups = len(index.groups_of(np.asarray(acc.docs, np.int64))) if grouped else acc.df

    if arity >= 2 and df_at:
        combinations(
            index,
            view,
            segs,
            words,
            m,
            df_at,
            k,
            arity,
            mx,
            flagged,
            combos,
            max_combinations,
            max_partners,
            exhaustive,
        )

    return [
        _flagged(
            key=key,
            n=acc.n,
            df=acc.df,
            arity=acc.arity,
            spans=tuple(sorted(acc.spans)),
            partners=tuple(sorted(acc.partners)),
            docs=acc.docs,
            view=view.name,
            groups=acc.groups or acc.df,
        )
        for key, acc in flagged.items()
    ]

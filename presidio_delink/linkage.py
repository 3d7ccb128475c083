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
   arity-1 N-grams and ``A``.  An arity-1 check walks one word model at a time and
   ``WINDOW`` text positions at a time (a query reads only its own segment's words, so
   the answers are those of one walk): what it holds grows with the text's tokens, not
   with its queries of up to ``max_n`` words in every view.
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

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain
from typing import Any, NamedTuple

import numpy as np

from presidio_delink.combinations import Acc, Combination, Combos, add_flagged, combinations
from presidio_delink.errors import ConfigError
from presidio_delink.index import NgramIndex, ViewIndex
from presidio_delink.index.view_index import (
    GroupCut,
    KeyWalk,
    Lows,
    distinct,
    group_cut,
    lows_in_groups,
    rows_in_groups,
)
from presidio_delink.text import Token, Tokenizer

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
    chosen = [index.views[name] for name in names]
    combos = Combos()
    if arity == 1:
        found, n_words = _flag_views(index, chosen, text, k, mx)
    else:
        walks, n_words = _walk_views(index, chosen, text, k, mx)
        found = {
            name: _analyze_view(
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
            for name in names
        }
    out = [f for name in names for f in found[name]]
    out.sort(key=lambda f: (f.spans[0], f.view))
    if n_words is None:  # no view reads the text as the index's own text model does
        n_words = sum(len(s) for s in index.tokenizer.segments(text))
    return LinkageReport(
        k=k,
        arity=arity,
        n_words=n_words,
        flagged=out,
        combinations=combos.listed,
        n_combinations=combos.count,
        combination_docs=tuple(sorted(combos.docs)),
        complete=combos.complete,
        doc_ids=index.doc_ids,
    )


#: Text positions whose queries an arity-1 check builds and walks at once (fewer than the
#: index's memo of walked keys, ``Layered.MEMO_KEYS``, so that a view walked over another
#: finds its keys there).  A query costs about 90 bytes a view, so a long text's queries
#: never exist all at once.
WINDOW = 16_384


@dataclass
class _Reading:
    """One word model's tokens of the text in order, flat, with their words.

    ``ends[p]``: where piece ``p`` (a segment cut at every break, see
    :meth:`~presidio_delink.text.Tokenizer.pieces`) ends in ``tokens``; ``hard[p]``:
    whether a placeholder or the end of the text closes it.
    """

    tokens: list[Token]
    words: list[str]
    ends: list[int]
    hard: list[bool]

    @classmethod
    def of(cls, tok: Tokenizer, text: str) -> _Reading:
        tokens: list[Token] = []
        ends: list[int] = []
        hard: list[bool] = []
        for seg, closed in tok.pieces(text):
            tokens += seg
            ends.append(len(tokens))
            hard.append(closed)
        return cls(tokens, [t.word for t in tokens], ends, hard)

    def seg_ends(self, crosses: bool) -> list[int]:
        """Where the segments of a view end in ``tokens``: at every piece's end, or, for
        a view that crosses punctuation, at the hard ones' (as
        :func:`~presidio_delink.text.join_soft` joins pieces)."""
        if not crosses:
            return self.ends
        out = [e for e, closed in zip(self.ends, self.hard, strict=True) if closed]
        if self.ends and not self.hard[-1]:
            out.append(self.ends[-1])
        return out


def _queries(
    words: list[str], ends: list[int], lo: int, hi: int, mx: int
) -> tuple[list[str], list[int]]:
    """The query at each position ``lo..hi-1`` of ``words`` (segments ending at ``ends``):
    its next (up to) ``mx`` words in its segment, joined by one space, and their number."""
    keys: list[str] = []
    lengths: list[int] = []
    s = bisect.bisect_right(ends, lo)
    a = lo
    while a < hi:
        e = ends[s]
        b = min(e, hi)
        ws = words[a : min(e, b + mx - 1)]  # every word a query of a..b-1 reads
        size = len(ws)
        joined = " ".join(ws)
        # cut[j]: where word j ends in `joined` (cut[-1] == -1): word i begins at
        # cut[i - 1] + 2, and the query at i ends where word min(i + mx, size) - 1 does.
        cut = list(accumulate(map((1).__add__, map(len, ws)), initial=-1))
        last = cut[mx : mx + b - a]
        last += [cut[size]] * (b - a - len(last))
        keys += [joined[x + 1 : y] for x, y in zip(cut, last, strict=False)]
        full = max(0, min(b, e - mx + 1) - a)  # queries of mx words
        lengths += [mx] * full + list(range(e - a - full, e - b, -1))
        a = b
        s += 1
    return keys, lengths


def _extended(
    views: Sequence[ViewIndex], view: ViewIndex, walked: dict[str, list[str]]
) -> list[str] | None:
    """For a view that breaks at punctuation, the queries just walked at the same
    positions in a view of its word model that does not and is stored over it: the walk
    that one left in this view's memo answers this view's (see ``Layered.walk``)."""
    if not view.tokenizer.break_on_punctuation:
        return None
    for other in views:
        if other.name in walked and other.stored_over(view) and (
            other.tokenizer.fold == view.tokenizer.fold
        ):
            return walked[other.name]
    return None


def _by_model(views: Sequence[ViewIndex]) -> dict[str, list[ViewIndex]]:
    """The views grouped by word model, each group's views that cross punctuation first."""
    groups: dict[str, list[ViewIndex]] = {}
    for view in sorted(views, key=lambda v: v.tokenizer.break_on_punctuation):
        groups.setdefault(view.tokenizer.fold, []).append(view)
    return groups


def _flag_views(
    index: NgramIndex, views: Sequence[ViewIndex], text: str, k: int, mx: int
) -> tuple[dict[str, list[Flagged]], int | None]:
    """Arity 1: each view's flagged N-grams, and the text's words in the index's own text
    model (None when no view reads it so).

    One word model at a time, ``WINDOW`` positions at a time: the queries of a window are
    built, walked (:func:`_link_lows`) and dropped, keeping only the positions
    whose shortest query below ``k`` is found in some document; a word model's tokens are
    dropped once its views are done.  The answers are those of one walk of the whole text
    (a query reads only its own segment's words)."""
    found: dict[str, list[Flagged]] = {}
    cut = _group_cut(index, k)
    n_words = None
    for group in _by_model(views).values():
        # one reading for the word model (the first view's tokenizer, as ever)
        reading = _Reading.of(group[0].tokenizer, text)
        if n_words is None and any(v.tokenizer == index.tokenizer for v in group):
            n_words = len(reading.tokens)
        ends = {v.name: reading.seg_ends(not v.tokenizer.break_on_punctuation) for v in group}
        # per view: (position, length, df, stored entry or None) of each candidate
        cands: dict[str, list[tuple[int, int, int, tuple[int, int] | None]]] = {
            v.name: [] for v in group
        }
        n = len(reading.words)
        for lo in range(0, n, WINDOW):
            hi = min(n, lo + WINDOW)
            walked: dict[str, list[str]] = {}
            for view in group:
                keys, lengths = _queries(reading.words, ends[view.name], lo, hi, mx)
                walk = KeyWalk(keys, lengths, k, _extended(views, view, walked))
                lows = _link_lows(index, view, walk, cut)
                walked[view.name] = keys
                at = np.flatnonzero((lows.df >= 1) & (lows.df < k))
                cands[view.name] += [
                    (lo + q, good + 1, d, lows.entry(q))
                    for q, good, d in zip(
                        at.tolist(), lows.good[at].tolist(), lows.df[at].tolist(), strict=True
                    )
                ]
        for view in group:
            cs = cands.pop(view.name)
            seg_of = np.searchsorted(
                np.asarray(ends[view.name], dtype=np.int64),
                np.asarray([c[0] for c in cs], dtype=np.int64),
                side="right",
            ).tolist()
            flagged: dict[str, Acc] = {}
            where: dict[str, tuple[int, int] | None] = {}
            i = 0
            while i < len(cs):  # one segment's candidates at a time
                j = i + 1
                while j < len(cs) and seg_of[j] == seg_of[i]:
                    j += 1
                _add_minimal(flagged, where, reading.tokens, reading.words, cs[i:j])
                i = j
            _set_docs(index, view, flagged, where)
            found[view.name] = _results(view, flagged)
        del reading
    return found, n_words


def _group_cut(index: NgramIndex, k: int) -> GroupCut | None:
    """How one check's walks below ``k`` count groups (None: the collection has none);
    one for all its views, which meet the same stored entries."""
    return group_cut(index.group_of, index.max_group_size, k)


def _link_dfs(
    index: NgramIndex, view: ViewIndex, walk: KeyWalk, cut: GroupCut | None
) -> tuple[list[list[int]], list[tuple[int, int] | None]]:
    """:meth:`NgramIndex.link_dfs`: the walk in group frequencies where it matters, the
    groups counted from the walk's own stored entries
    (:func:`~presidio_delink.index.view_index.rows_in_groups`); ``cut``:
    :func:`_group_cut` of ``walk.below``."""
    if walk.below < 2:
        return index.link_dfs(view, walk)
    return rows_in_groups(view, walk, cut)


def _link_lows(
    index: NgramIndex, view: ViewIndex, walk: KeyWalk, cut: GroupCut | None
) -> Lows:
    """:meth:`NgramIndex.link_lows`, as :func:`_link_dfs` reads groups."""
    if walk.below < 2:
        return index.link_lows(view, walk)
    return lows_in_groups(view, walk, cut)


def _add_minimal(
    flagged: dict[str, Acc],
    where: dict[str, tuple[int, int] | None],
    seg: Sequence[Token],
    ws: Sequence[str],
    cs: Sequence[tuple[int, int, int, tuple[int, int] | None]],
) -> None:
    """Flag the minimal candidates ``(i, n, df, entry)`` of one segment (``seg`` and its
    words ``ws``; ascending ``i``, one a position): those containing no other."""
    min_end = 1 << 62
    for i, n, d, entry in reversed(cs):
        if min_end > i + n:  # contains no other candidate: minimal
            key = add_flagged(flagged, seg, ws, i, n, d, 1)
            if where.get(key) is None:
                where[key] = entry
        min_end = min(min_end, i + n)


def _set_docs(
    index: NgramIndex,
    view: ViewIndex,
    flagged: dict[str, Acc],
    where: dict[str, tuple[int, int] | None],
) -> None:
    """Each flagged N-gram's documents, df and groups (the groups of all of them counted
    in one vectorised step)."""
    for key, acc in flagged.items():
        entry = where.get(key)
        if entry is not None:
            acc.docs = view.docs_at(entry)
        else:
            acc.docs = tuple(view.lookup(key.split(" ")).tolist())
        acc.df = len(acc.docs)
    group_of = index.group_of
    if group_of is None or not flagged:
        for acc in flagged.values():
            acc.groups = acc.df
        return
    accs = list(flagged.values())
    sizes = np.fromiter((a.df for a in accs), dtype=np.int64, count=len(accs))
    docs = np.fromiter(chain.from_iterable(a.docs for a in accs), dtype=np.int64,
                       count=int(sizes.sum()))
    n = len(group_of)
    seg = np.repeat(np.arange(len(accs), dtype=np.int64), sizes)
    pairs = distinct(seg * n + group_of[docs])  # (N-gram, group) pairs
    for acc, g in zip(accs, np.bincount(pairs // n, minlength=len(accs)).tolist(),
                      strict=True):
        acc.groups = g


def _results(view: ViewIndex, flagged: dict[str, Acc]) -> list[Flagged]:
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


@dataclass
class _Walk:
    """One view's segments of the text and its prefix walks (combinations)."""

    segs: list[list[Token]]
    words: list[list[str]]
    keys: list[str]
    rows: list[list[int]]
    entries: list[tuple[int, int] | None]


def _walk_views(
    index: NgramIndex, views: Sequence[ViewIndex], text: str, k: int, mx: int
) -> tuple[dict[str, _Walk], int | None]:
    """Arity 2, 3: the prefix walks of every view over the whole text, every prefix's
    document frequency kept for the combinations (:func:`_link_dfs`), and the
    text's words in the index's own text model (None when no view reads it so)."""
    walks: dict[str, _Walk] = {}
    cut = _group_cut(index, k)
    n_words = None
    for group in _by_model(views).values():
        reading = _Reading.of(group[0].tokenizer, text)
        if n_words is None and any(v.tokenizer == index.tokenizer for v in group):
            n_words = len(reading.tokens)
        for view in group:
            ends = reading.seg_ends(not view.tokenizer.break_on_punctuation)
            keys, lengths = _queries(reading.words, ends, 0, len(reading.words), mx)
            extends = _extended(views, view, {n: w.keys for n, w in walks.items()})
            dfs, entries = _link_dfs(index, view, KeyWalk(keys, lengths, k, extends), cut)
            bounds = list(zip([0, *ends], ends, strict=False))  # each segment's tokens
            walks[view.name] = _Walk(
                [reading.tokens[a:b] for a, b in bounds],
                [reading.words[a:b] for a, b in bounds],
                keys,
                dfs,
                entries,
            )
    return walks, n_words


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
    """Arity 2, 3: one view's flagged N-grams, alone and as shortest members of linkable
    combinations (added to ``combos``)."""
    segs, words, rows, entries = walk.segs, walk.words, walk.rows, walk.entries
    # m[s][i]: length of the longest N-gram at (s, i) with df >= k; df_at[(s, i, n)] for n<=m
    m: list[list[int]] = []
    df_at: dict[tuple[int, int, int], int] = {}
    flagged: dict[str, Acc] = {}
    where: dict[str, tuple[int, int] | None] = {}
    q = 0
    for s, ws in enumerate(words):
        ms: list[int] = []
        cs: list[tuple[int, int, int, tuple[int, int] | None]] = []  # flagged at i
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
        _add_minimal(flagged, where, segs[s], ws, cs)
    _set_docs(index, view, flagged, where)
    if df_at:
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
    return _results(view, flagged)

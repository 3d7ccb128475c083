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

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter
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
from presidio_delink.linkage_queries import (
    WINDOW,
    Shared,
    _by_model,
    _extended,
    _queries,
    _Reading,
)
from presidio_delink.text import Token

__all__ = ["Combination", "Evidence", "Flagged", "LinkageReport", "analyze"]

MAX_ARITY = 3
_span_of = itemgetter(0, 1)  # (start, end) of a (start, end, flagged) triple


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
        return sorted(((a, b, f) for f in self.flagged for a, b in f.spans), key=_span_of)

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


def _flag_views(
    index: NgramIndex, views: Sequence[ViewIndex], text: str, k: int, mx: int
) -> tuple[dict[str, list[Flagged]], int | None]:
    """Arity 1: each view's flagged N-grams, and the text's words in the index's own text
    model (None when no view reads it so).

    One word model at a time, ``WINDOW`` positions at a time: the queries of a window are
    built, walked (:func:`_link_lows`) and dropped, keeping only the positions
    whose shortest query below ``k`` is found in some document; a longer text's tokens of
    a word model are dropped once its views are done.  The answers are those of one walk of
    the whole text (a query reads only its own segment's words).  A text of one window
    keeps, for the check, what its views have in common
    (:class:`~presidio_delink.linkage_queries.Shared`): one reading of the same pieces, one
    list of the same queries, and a view stored over another walks only the queries where
    its own entries can change the other's answers."""
    found: dict[str, list[Flagged]] = {}
    cut = _group_cut(index, k)
    n_words = None
    shared = Shared()  # the walks of the views, for views stored over them (one window)
    for group in _by_model(views).values():
        # one reading for the word model (the first view's tokenizer, as ever)
        reading = shared.reading(group[0].tokenizer, text)
        if n_words is None and any(v.tokenizer == index.tokenizer for v in group):
            n_words = len(reading.tokens)
        ends = {v.name: reading.seg_ends(not v.tokenizer.break_on_punctuation) for v in group}
        # per view and window: the window's answers, and its candidates' positions
        cands: dict[str, list[tuple[int, Lows, np.ndarray]]] = {v.name: [] for v in group}
        n = len(reading.words)
        for lo in range(0, n, WINDOW):
            hi = min(n, lo + WINDOW)
            walked: dict[str, list[str]] = {}
            for view in group:
                keys, lengths = (shared.queries if n <= WINDOW else _queries)(
                    reading.words, ends[view.name], lo, hi, mx)

                def walk(ks: list[str], ls: list[int], at: list[int] | None,
                         view: ViewIndex = view, walked: dict[str, list[str]] = walked,
                         ) -> Lows:
                    ext = _extended(views, view, walked)
                    if ext is not None and at is not None:
                        ext = [ext[q] for q in at]  # (the queries at `at` alone)
                    return _link_lows(index, view, KeyWalk(ks, ls, k, ext), cut)

                lows = (shared.lows(view, keys, lengths, walk) if n <= WINDOW
                        else walk(keys, lengths, None))
                walked[view.name] = keys
                at = np.flatnonzero((lows.df >= 1) & (lows.df < k))
                cands[view.name].append((lo, lows, at))
        for view in group:
            found[view.name] = _flag_minimal(index, view, reading, cands.pop(view.name))
        del reading
    return found, n_words


def _flag_minimal(
    index: NgramIndex, view: ViewIndex, reading: _Reading,
    windows: list[tuple[int, Lows, np.ndarray]],
) -> list[Flagged]:
    """Arity 1: one view's flagged N-grams from the answers of its windows (``(first
    position, answers, positions of its candidates)``): the minimal candidates, those
    containing no other (:func:`_add_minimal`), grouped by key.

    A candidate at ``i`` of ``n`` words contains another exactly when a later candidate
    ends at or before ``i + n``: one that starts later and lies in the same segment (a
    candidate of a later segment ends past this segment's end), so one running minimum of
    the later candidates' ends over the whole text decides it."""
    if not windows:
        return []
    pos = np.concatenate([lo + at for lo, _, at in windows])
    length = np.concatenate([lows.good[at] + 1 for _, lows, at in windows])
    ends = pos + length
    later = np.empty_like(ends)
    if len(ends):
        later[:-1] = np.minimum.accumulate(ends[::-1])[::-1][1:]
        later[-1] = ends[-1] + 1
    keep = ends < later
    tokens, words = reading.tokens, reading.words
    by_key: dict[str, list[Any]] = {}  # key -> [n, spans, entry]
    start = 0
    for _lo, lows, at in windows:
        sel = np.flatnonzero(keep[start : start + len(at)])
        entry = lows.entry
        for q, i, n in zip(at[sel].tolist(), pos[start + sel].tolist(),
                           length[start + sel].tolist(), strict=True):
            key = " ".join(words[i : i + n])
            span = (tokens[i].start, tokens[i + n - 1].end)
            got = by_key.get(key)
            if got is None:
                by_key[key] = [n, [span], entry(q)]
            else:
                got[1].append(span)
                if got[2] is None:
                    got[2] = entry(q)
        start += len(at)
    docs = [
        view.docs_at(e) if e is not None else tuple(view.lookup(key.split(" ")).tolist())
        for key, (_, _, e) in by_key.items()
    ]
    groups = _groups(index, docs)
    name = view.name
    return [
        _flagged(
            key=key, n=n, df=len(d), arity=1,
            spans=(spans[0],) if len(spans) == 1 else tuple(sorted(set(spans))),
            partners=(), docs=d, view=name, groups=g or len(d),
        )
        for (key, (n, spans, _)), d, g in zip(by_key.items(), docs, groups, strict=True)
    ]


def _groups(index: NgramIndex, docs: list[tuple[int, ...]]) -> list[int]:
    """The number of distinct groups of each document list (its length when the
    collection has no groups), all counted in one vectorised step."""
    group_of = index.group_of
    if group_of is None or not docs:
        return [len(d) for d in docs]
    sizes = np.fromiter(map(len, docs), dtype=np.int64, count=len(docs))
    flat = np.fromiter(chain.from_iterable(docs), dtype=np.int64, count=int(sizes.sum()))
    n = len(group_of)
    seg = np.repeat(np.arange(len(docs), dtype=np.int64), sizes)
    pairs = distinct(seg * n + group_of[flat])  # (list, group) pairs
    out: list[int] = np.bincount(pairs // n, minlength=len(docs)).tolist()
    return out


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

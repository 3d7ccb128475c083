"""A check over a base plus small segments, its views taking each other's answers where
they may (presidio_delink.index.segment_reader: "Walking only what differs"), equals the
check over one index of the same documents."""

from __future__ import annotations

import random

import pytest

from presidio_delink import NgramIndex
from presidio_delink.index import add_documents
from presidio_delink.index.segment_reader import (
    READ_MORE,
    READ_PREFIXES,
    READ_TAIL,
    SegmentedIndex,
    SegmentedView,
)
from presidio_delink.index.segment_table import (
    patched_table,
    prefix_in,
    small_table,
    table_differences,
    tail_in,
)
from presidio_delink.index.view_index import KeyWalk, group_cut, lows_in_groups
from presidio_delink.linkage import analyze

# words whose views differ: case (fine, surface), dashes (folded-dash), accents
# (accent-cross), and punctuation between them (the views that cross it)
WORDS = ["the", "The", "court", "Court", "oslo", "Oslo", "re-entry", "re", "entry", "café",
         "cafe", "judge", "sat", "in", "a", "b", "x"]


#: only the added documents write these with a capital: the first segment's views then
#: agree on them, the small segments' lists do not
ADDED = ["Judge", "Sat", "Cafe"]
CUT = 52  # documents in the first segment


def _collection(seed: int) -> tuple[list[tuple[str, str, str]], list[str]]:
    rnd = random.Random(seed)

    def text(words: list[str]) -> str:
        return " ".join(rnd.choice(words) + rnd.choice(["", "", "", "", ".", ",", ";"])
                        for _ in range(rnd.randint(4, 40)))

    docs = [(f"d{i}", text(WORDS if i < CUT else WORDS + ADDED), f"g{rnd.randrange(15)}")
            for i in range(70)]
    texts = [text(WORDS) for _ in range(5)]
    # texts that copy documents (of the base and of the added segments): long rows
    texts += [docs[i][1] for i in (3, 40, 55, 62, 68)]
    return docs, texts


#: the default views, and a view that crosses punctuation stored over one that breaks at it
#: (its lists of a key are then not a part of the other's: the tails and sub-N-grams that
#: decide a row are compared too)
VIEW_SETS: list[dict[str, tuple[str, ...]]] = [{}, {"views": ("folded", "accent-cross")}]


@pytest.fixture(scope="module", params=[(0, 0), (1, 0), (2, 0), (0, 1), (1, 1)])
def indexes(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    seed, views = request.param
    tmp = tmp_path_factory.mktemp(f"speedups{seed}")
    docs, texts = _collection(seed)
    cut = CUT
    settings = VIEW_SETS[views]
    fresh = NgramIndex.build(docs, tmp / "fresh", max_n=4, **settings)
    NgramIndex.build(docs[:cut], tmp / "grow", max_n=4, **settings)
    for a, b in ((cut, 58), (58, 64), (64, len(docs))):
        add_documents(tmp / "grow", docs[a:b])
    grown = NgramIndex.load(tmp / "grow")
    assert isinstance(grown, SegmentedIndex)
    return fresh, grown, texts, views


def test_grown_check_equals_one_index_and_views_share_answers(
    indexes, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh, grown, texts, views = indexes
    seen = {"kept": 0, "again": 0, "tail": 0, "more": 0}
    walk_again = SegmentedView.walk_again

    def spy(self, other, keys, read, good):
        out = walk_again(self, other, keys, read, good)
        seen["again"] += len(out)
        seen["kept"] += len(keys) - len(out)
        seen["tail"] += int((read == READ_TAIL).sum())
        seen["more"] += int((read == READ_MORE).sum())
        return out

    monkeypatch.setattr(SegmentedView, "walk_again", spy)
    for k in (2, 3):
        for text in texts:
            assert repr(analyze(grown, text, k=k)) == repr(analyze(fresh, text, k=k))
    if views == 0:  # (the other set's crossing view is walked before the other)
        assert seen["kept"]  # views took answers from the view they are stored over
        assert seen["tail"]  # some read the tail w[1:m] of a row the storage rule cut
        assert seen["again"] and seen["more"]  # and some were walked again


def test_walk_codes_say_what_a_row_read(indexes) -> None:
    _, grown, texts, _ = indexes
    view = grown.views["folded"]
    assert isinstance(view, SegmentedView) and view._walked == [0]
    codes = set()
    for text in texts:
        words = [t.word for seg in view.tokenizer.segments(text) for t in seg]
        keys = [" ".join(words[i : i + 4]) for i in range(len(words))]
        lows = view.walk_lows(keys, [len(k.split(" ")) for k in keys], 2)
        assert lows.by_prefix is not None and len(lows.by_prefix) == len(keys)
        codes.update(lows.by_prefix.tolist())
    assert codes <= {READ_MORE, READ_PREFIXES, READ_TAIL}
    assert READ_PREFIXES in codes and READ_TAIL in codes


def test_table_differences_are_the_keys_whose_lists_differ(indexes) -> None:
    _, grown, _, views = indexes
    if views:
        pytest.skip("the default views only")
    fine, folded = grown.views["fine"], grown.views["folded"]
    assert isinstance(fine, SegmentedView) and isinstance(folded, SegmentedView)
    a = small_table(fine.segs, fine._base_list, fine._counted)
    b = small_table(folded.segs, folded._base_list, folded._counted)
    keys, first = table_differences(a, b)
    want = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
    assert keys == want and want  # case makes the two views' lists differ
    assert first == {k.split(" ")[0] for k in want}
    # the table made from the other's, reading again only the documents that differ
    for view, other in ((fine, folded), (grown.views["folded-dash"], folded)):
        assert isinstance(view, SegmentedView)
        plain = small_table(view.segs, view._base_list, view._counted)
        theirs = small_table(other.segs, other._base_list, other._counted)
        got, diff = patched_table(view.segs, view._base_list, view._counted, other.segs,
                                  theirs)
        assert got == plain and diff == table_differences(plain, theirs)[0]
        assert theirs == small_table(other.segs, other._base_list, other._counted)
        assert view.parent is other and view._table() == plain


def test_prefix_in_and_tail_in() -> None:
    diff = {"b c", "x"}
    first = {"b", "x"}
    tables = {"a": [1], "b": [1], "b c": [1], "x": [2]}, {"b": [1], "c": [3], "b d": [2]}
    assert not prefix_in("a b c", 3, diff, first, tables)  # "a b c" is not a prefix
    assert prefix_in("b c d", 3, diff, first, tables)
    assert not prefix_in("b c d", 1, diff, first, tables)  # "b" alone read
    assert not prefix_in("b d", 2, diff, first, tables)
    assert prefix_in("x y", 1, diff, first, tables)
    assert tail_in("a b c d", 2, diff)  # w[1:3] of "a b c" is "b c"
    assert not tail_in("a b c d", 3, diff)  # w[1:4] is "b c d"
    assert not tail_in("a b c", 2, set())


@pytest.mark.parametrize("below", [2, 3])
def test_an_answer_not_walked_again_is_the_views_own(indexes, below: int) -> None:
    # every key any view reads, walked in every pair of views stored one over the other
    fresh, grown, texts, _ = indexes
    keys: set[str] = set()
    for view in grown.views.values():
        for text in texts:
            for seg in view.tokenizer.segments(text):
                words = [t.word for t in seg]
                keys.update(" ".join(words[i : i + fresh.max_n]) for i in range(len(words)))
    ks = sorted(keys)
    lengths = [len(k.split(" ")) for k in ks]
    pairs = kept = 0
    for view in grown.views.values():
        for other in grown.views.values():
            if not (isinstance(view, SegmentedView) and view.over(other)):
                continue
            assert isinstance(other, SegmentedView)
            pairs += 1
            cut = group_cut(grown.group_of, grown.max_group_size, below)
            mine = lows_in_groups(view, KeyWalk(ks, lengths, below), cut)
            theirs = lows_in_groups(other, KeyWalk(ks, lengths, below), cut)
            assert theirs.by_prefix is not None
            again = set(view.differing(other, ks) or [])  # then the tables' lists
            rest = [q for q in range(len(ks)) if q not in again]
            rest_keys = [ks[q] for q in rest]
            at = [rest[i] for i in view.walk_again(
                other, rest_keys, theirs.by_prefix[rest], theirs.good[rest])]
            again.update(at)
            for q in range(len(ks)):
                if q in again:
                    continue
                kept += 1
                assert (mine.good[q], mine.df[q]) == (theirs.good[q], theirs.df[q]), ks[q]
                e = theirs.entry(q)
                assert mine.entry(q) == e
    assert pairs >= 1 and kept

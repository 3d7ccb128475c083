"""The batched check path against the one-key-at-a-time reading it replaces.

``decode_many`` against ``postings_of`` on every stored key (plain, complemented and
large-count lists), and the check's group-aware walks (``linkage._link_dfs`` /
``_link_lows``, what ``NgramIndex.link_dfs`` / ``link_lows`` give) against a reference
that looks every prefix up again and counts its groups, with the batch path forced on
(``BATCH_MIN = 1``) and left at its default.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presidio_delink import NgramIndex
from presidio_delink.index.postings import decode_many
from presidio_delink.index.shard import Partition
from presidio_delink.index.view_index import KeyWalk, Lows, ViewIndex, distinct
from presidio_delink.linkage import _group_cut, _link_dfs, _link_lows, _queries, _Reading

WORDS = [f"w{i}" for i in range(40)]
COMMON = ["the", "of", "and", "court"]


def _collection(n_docs: int, seed: int) -> list[tuple[str, str, str | None]]:
    """Documents of common words (in most documents: complemented lists; in more than 255:
    large counts) and rarer ones, grouped by threes, some alone."""
    rng = random.Random(seed)
    docs = []
    for d in range(n_docs):
        words = [rng.choice(COMMON if rng.random() < 0.4 else WORDS) for _ in range(30)]
        if d % 5 == 0:
            words[3:7] = ["shared", "phrase", "of", "group"]
        text = " ".join(words[:15]) + ". " + " ".join(words[15:])
        docs.append((f"d{d}", text, None if d % 7 == 0 else f"g{d // 3}"))
    return docs


@pytest.fixture(scope="module")
def big_index(tmp_path_factory: pytest.TempPathFactory) -> NgramIndex:
    return NgramIndex.build(_collection(600, 1), tmp_path_factory.mktemp("cs") / "i", max_n=4)


def _stores(index: NgramIndex) -> Iterator[Partition]:
    for view in index.views.values():
        for part in view.parts:
            yield from part.layers


def test_decode_many_equals_postings_of(big_index: NgramIndex) -> None:
    dense = 0
    for store in _stores(big_index):
        n_keys = len(store.df8)
        kids = np.arange(n_keys, dtype=np.int64)
        rng = np.random.default_rng(0)
        for order in (kids, rng.permutation(kids), rng.choice(kids, size=min(50, n_keys))):
            ords, offs, done = decode_many(order, store.dfs_kids, n_keys, store.blocks,
                                           store.data, store.n_docs)
            assert len(offs) == int(done.sum()) + 1
            j = 0
            for kid, ok in zip(order.tolist(), done.tolist(), strict=True):
                want = store.postings_of(kid)
                if ok:
                    assert ords[offs[j]:offs[j + 1]].tolist() == want.tolist()
                    j += 1
                else:  # left to the caller: complemented
                    assert len(want) > store.n_docs // 2
                    dense += 1
    assert dense  # the collection has keys in most documents
    assert any(len(s._big_kid) for s in _stores(big_index))  # and counts of 255 and more


def test_decode_many_leaves_big_blocks(big_index: NgramIndex) -> None:
    store = next(iter(_stores(big_index)))
    kids = np.arange(len(store.df8), dtype=np.int64)
    _, offs, done = decode_many(kids, store.dfs_kids, len(kids), store.blocks, store.data,
                                store.n_docs, max_block_bytes=0)
    sizes = np.diff(np.asarray(store.blocks, dtype=np.int64))
    assert done.tolist() == (sizes[kids // 32] == 0).tolist()
    assert len(offs) == int(done.sum()) + 1


def test_decode_many_refuses_short_bytes(big_index: NgramIndex) -> None:
    store = next(iter(_stores(big_index)))
    kids = np.arange(min(64, len(store.df8)), dtype=np.int64)
    cut = np.asarray(store.data).copy()
    cut[: int(store.blocks[1])] |= 0x80  # no value ends in the first block
    with pytest.raises(ValueError, match="values"):
        decode_many(kids, store.dfs_kids, len(store.df8), store.blocks, cut, store.n_docs)


def test_distinct() -> None:
    rng = np.random.default_rng(3)
    for size in (0, 1, 2, 50):
        a = rng.integers(0, 7, size)
        assert distinct(a).tolist() == np.unique(a).tolist()


def _reference_link_dfs(
    index: NgramIndex, view: ViewIndex, walk: KeyWalk
) -> tuple[list[list[int]], list[tuple[int, int] | None]]:
    """``link_dfs`` as one look-up per prefix: each value in ``below..settled - 1`` looked
    up again by its words and mapped to groups, the row stopped at the first below."""
    keys, below = walk.keys, walk.below
    rows, last = view.walk_keys(keys, walk.lengths, below, walk.extends)
    if index.group_of is None:
        return rows, last
    settled = (below - 1) * index.max_group_size + 1
    for q, row in enumerate(rows):
        for n, d in enumerate(row):
            if below <= d < settled:
                g = len(index.groups_of(view.lookup(keys[q].split(" ")[: n + 1])))
                if g < below:
                    row[n] = g
                    del row[n + 1 :]
                    last[q] = None
                    break
    return rows, last


def _texts(seed: int, count: int) -> list[str]:
    docs = _collection(count, seed)
    return [t for _, t, _ in docs]


@pytest.mark.parametrize("batch_min", [1, ViewIndex.BATCH_MIN])
@pytest.mark.parametrize("k", [2, 3, 5])
def test_group_walks_equal_reference(
    big_index: NgramIndex, monkeypatch: pytest.MonkeyPatch, batch_min: int, k: int
) -> None:
    monkeypatch.setattr(ViewIndex, "BATCH_MIN", batch_min)
    assert big_index.group_of is not None and big_index.max_group_size == 3
    cut = 0
    for text in _texts(7, 12):
        # one cut for every view of a text, as a check has: the counts of one view's
        # entries are reused by the views stored over it
        shared = _group_cut(big_index, k)
        for view in big_index.views.values():
            reading = _Reading.of(view.tokenizer, text)
            ends = reading.seg_ends(not view.tokenizer.break_on_punctuation)
            keys, lengths = _queries(reading.words, ends, 0, len(reading.words), view.max_n)
            walk = KeyWalk(keys, lengths, k)
            want_rows, want_last = _reference_link_dfs(big_index, view, walk)
            rows, last = _link_dfs(big_index, view, walk, _group_cut(big_index, k))
            assert (rows, last) == (want_rows, want_last)
            assert _link_dfs(big_index, view, walk, shared) == (want_rows, want_last)
            lows = _link_lows(big_index, view, walk, shared)
            ref = Lows.of_rows(want_rows, want_last, k)
            assert lows.good.tolist() == ref.good.tolist()
            assert lows.df.tolist() == ref.df.tolist()
            for q in range(len(keys)):
                got, exp = lows.entry(q), ref.entry(q)
                if exp is None and got is not None:
                    # cut by groups: the entry of the same stored key as its words
                    n = int(lows.good[q]) + 1
                    assert view.docs_at(got) == tuple(
                        view.lookup(keys[q].split(" ")[:n]).tolist())
                    cut += 1
                else:
                    assert got == exp
    if k == 2:
        assert cut  # some rows are cut by groups
        assert shared is not None and any(shared.known.values())  # kept for the next view


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n_docs=st.integers(3, 40), k=st.integers(2, 4))
def test_group_walks_small_collections(
    tmp_path_factory: pytest.TempPathFactory, seed: int, n_docs: int, k: int
) -> None:
    """Small collections (every layer read in one batch), against the reference."""
    idx = NgramIndex.build(_collection(n_docs, seed), Path(tmp_path_factory.mktemp("s")) / "i",
                           max_n=3)
    old = ViewIndex.BATCH_MIN
    ViewIndex.BATCH_MIN = 1
    try:
        for text in _texts(seed + 1, 2):
            for view in idx.views.values():
                reading = _Reading.of(view.tokenizer, text)
                ends = reading.seg_ends(not view.tokenizer.break_on_punctuation)
                keys, lengths = _queries(reading.words, ends, 0, len(reading.words), 3)
                walk = KeyWalk(keys, lengths, k)
                want = _reference_link_dfs(idx, view, walk)
                assert _link_dfs(idx, view, walk, _group_cut(idx, k)) == want
                assert idx.link_dfs(view, walk) == want
    finally:
        ViewIndex.BATCH_MIN = old


class _OwnWalk(ViewIndex):
    """A view whose walks are its own (as a view over several segments has): no handles
    to count groups from, so its rows are cut by looking each prefix up again."""

    def walk_keys(  # type: ignore[override]
        self, keys: Sequence[str], lengths: Sequence[int], below: int,
        extends: Sequence[str] | None = None,
    ) -> tuple[list[list[int]], list[tuple[int, int] | None]]:
        return ViewIndex.walk_keys(self, keys, lengths, below, extends)

    def walk_lows(  # type: ignore[override]
        self, keys: Sequence[str], lengths: Sequence[int], below: int,
        extends: Sequence[str] | None = None,
    ) -> Lows:
        return Lows.of_rows(*self.walk_keys(keys, lengths, below, extends), below)


@pytest.mark.parametrize("k", [2, 4])
def test_overridden_walks_are_cut_by_lookup(big_index: NgramIndex, k: int) -> None:
    for text in _texts(11, 4):
        for view in big_index.views.values():
            other = object.__new__(_OwnWalk)
            other.__dict__.update(view.__dict__)
            reading = _Reading.of(view.tokenizer, text)
            ends = reading.seg_ends(not view.tokenizer.break_on_punctuation)
            keys, lengths = _queries(reading.words, ends, 0, len(reading.words), view.max_n)
            walk = KeyWalk(keys, lengths, k)
            assert _link_dfs(big_index, other, walk, _group_cut(big_index, k)) == _reference_link_dfs(big_index, view, walk)
            got = _link_lows(big_index, other, walk, _group_cut(big_index, k))
            want = _link_lows(big_index, view, walk, _group_cut(big_index, k))
            assert (got.good.tolist(), got.df.tolist()) == (want.good.tolist(), want.df.tolist())

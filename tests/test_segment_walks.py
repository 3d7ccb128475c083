"""The prefix walk of a view over segments, groups and stored entries included, equals one
index's over the same documents (presidio_delink.index.segment_reader.SegmentedView)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from presidio_delink import NgramIndex
from presidio_delink.index import add_documents, segment_reader
from presidio_delink.index.segment_reader import SegmentedIndex
from presidio_delink.index.view_index import KeyWalk, group_cut, rows_in_groups
from presidio_delink.text import Tokenizer

WORDS = ["a", "b", "c", "d", "e", "the", "court", "oslo", "sat", "in", "judge", "x", "y"]


def _collection(seed: int) -> tuple[list[tuple[str, str, str]], list[str]]:
    rnd = random.Random(seed)

    def text() -> str:
        return " ".join(rnd.choice(WORDS) + rnd.choice(["", "", "", ".", ","])
                        for _ in range(rnd.randint(3, 40)))

    # few groups: most rows reach values that must be counted in groups
    docs = [(f"d{i}", text(), f"g{rnd.randrange(12)}") for i in range(60)]
    return docs, [text() for _ in range(6)]


def _queries(view_tok: Tokenizer, text: str, max_n: int) -> tuple[list[str], list[int]]:
    keys, lengths = [], []
    for seg in view_tok.segments(text):
        words = [t.word for t in seg]
        for i in range(len(words)):
            n = min(max_n, len(words) - i)
            keys.append(" ".join(words[i : i + n]))
            lengths.append(n)
    return keys, lengths


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("counted_words", [segment_reader.COUNTED_WORDS, 0])
def test_walks_in_groups_and_entries_match_one_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, counted_words: int
) -> None:
    # counted_words 0: every segment is walked (no table of the small ones)
    monkeypatch.setattr(segment_reader, "COUNTED_WORDS", counted_words)
    docs, texts = _collection(seed)
    cut = len(docs) * 3 // 4
    fresh = NgramIndex.build(docs, tmp_path / "fresh", max_n=4)
    NgramIndex.build(docs[:cut], tmp_path / "grow", max_n=4)
    for a, b in ((cut, cut + 5), (cut + 5, len(docs))):
        add_documents(tmp_path / "grow", docs[a:b])
    grown = NgramIndex.load(tmp_path / "grow")
    assert isinstance(grown, SegmentedIndex)
    reached = entries = cuts = 0
    for below in (2, 3, 5):
        for name, view in fresh.views.items():
            seg_view = grown.views[name]
            for text in texts:
                keys, lengths = _queries(view.tokenizer, text, fresh.max_n)
                walk = KeyWalk(keys, lengths, below)
                want_rows, _ = rows_in_groups(
                    view, walk, group_cut(fresh.group_of, fresh.max_group_size, below))
                got_rows, got_last = rows_in_groups(
                    seg_view, walk, group_cut(grown.group_of, grown.max_group_size, below))
                assert got_rows == want_rows
                reached += sum(1 for r in want_rows if len(r) > 1)
                plain, _ = rows_in_groups(view, walk, None)
                cuts += sum(a != b for a, b in zip(plain, want_rows, strict=True))
                for key, row, entry in zip(keys, got_rows, got_last, strict=True):
                    if entry is not None:  # a flagged N-gram held by the first segment alone
                        entries += 1
                        assert 0 < row[-1] < below
                        n = len(row)
                        want = tuple(view.lookup(key.split(" ")[:n]).tolist())
                        assert seg_view.docs_at(entry) == want
    assert reached  # the walks went past their first word
    assert cuts  # and groups cut some rows
    if counted_words:
        assert entries  # and some flagged N-grams kept their stored entry

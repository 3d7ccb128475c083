"""Compact posting lists (format 4): every list decodes to itself, dense ones included."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presidio_delink.errors import IndexFormatError
from presidio_delink.index.postings import BLOCK, decode_values, encode
from presidio_delink.index.shard import Partition, save_trie, write_postings


def _write(tmp: Path, lists: list[list[int]], n_docs: int) -> Partition:
    tmp.mkdir(parents=True, exist_ok=True)
    save_trie([f"k{i}" for i in range(len(lists))], tmp / "ngrams.marisa")
    off = np.cumsum([0] + [len(x) for x in lists])
    post = np.array([d for x in lists for d in x], dtype=np.int64)
    dtypes = write_postings(tmp, off, post, n_docs)
    return Partition(tmp, dtypes, n_docs, verify=True)


@st.composite
def collections(draw: st.DrawFn) -> tuple[int, list[list[int]]]:
    n_docs = draw(st.sampled_from([1, 2, 3, 7, 300, 70_000]))
    n_keys = draw(st.integers(0, 2 * BLOCK + 3))
    lists = []
    for _ in range(n_keys):
        kind = draw(st.sampled_from(["empty", "few", "many", "dense"]))
        if kind == "empty":
            lists.append([])
        elif kind == "few":
            lists.append(sorted(set(draw(st.lists(st.integers(0, n_docs - 1), max_size=5)))))
        else:
            size = min(n_docs, 600) if kind == "many" else n_docs
            rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
            p = 0.97 if kind == "dense" else 0.5
            lists.append(np.flatnonzero(rng.random(size) < p).tolist())
    return n_docs, lists


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(c=collections())
def test_every_list_decodes_to_itself(tmp_path_factory, c) -> None:  # type: ignore[no-untyped-def]
    n_docs, lists = c
    part = _write(tmp_path_factory.mktemp("p"), lists, n_docs)
    assert part.dfs_kids(np.arange(len(lists))).tolist() == [len(x) for x in lists]
    for i, x in enumerate(lists):
        assert part.df_of(i) == len(x)
        assert part.postings_of(i).tolist() == x


def test_varint_boundaries() -> None:
    vals = np.array([0, 1, 127, 128, 16383, 16384, 2**21, 2**35 + 5, 2**62], dtype=np.int64)
    off = np.array([0, len(vals)])
    _, _, _, data = encode(off, np.cumsum(vals + 1) - 1, 2**63 - 1)
    assert decode_values(data).tolist() == vals.tolist()


def test_dense_lists_are_stored_as_complements(tmp_path: Path) -> None:
    dense = [d for d in range(10_000) if d != 4321]
    part = _write(tmp_path, [dense, [5]], 10_000)
    assert len(part.data) <= 4  # two one-value lists (the complement {4321} and {5})
    assert part.postings_of(0).tolist() == dense


def test_a_corrupt_posting_is_refused(tmp_path: Path) -> None:
    part = _write(tmp_path / "a", [[1, 2, 3], [0, 9]], 10)
    data = bytearray((part.directory / "postings.bin").read_bytes())
    data[-1] = 0x7F  # the last list's gap now points past the 10 documents
    (part.directory / "postings.bin").write_bytes(bytes(data))
    again = Partition(part.directory, {"dfbig": "<u2"}, 10, verify=True)
    assert again.postings_of(0).tolist() == [1, 2, 3]
    with pytest.raises(IndexFormatError, match="past the document table"):
        again.postings_of(1)
    data[-1] = 0x80  # a value cut short
    (part.directory / "postings.bin").write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="truncated"):
        Partition(part.directory, {"dfbig": "<u2"}, 10, verify=True)


def test_lists_coded_in_runs_decode_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import presidio_delink.index.postings as codec

    rng = np.random.default_rng(3)
    n_docs = 1000
    lists = [np.flatnonzero(rng.random(n_docs) < p).tolist()
             for p in rng.choice([0.0, 0.002, 0.05, 0.6, 0.99], size=3 * BLOCK)]
    whole = _write(tmp_path / "whole", lists, n_docs)
    monkeypatch.setattr(codec, "CHUNK", 7)  # runs of about 7 postings (a long list alone)
    runs = _write(tmp_path / "runs", lists, n_docs)
    for f in ("df.bin", "dfbig.bin", "blocks.bin", "postings.bin"):
        assert (runs.directory / f).read_bytes() == (whole.directory / f).read_bytes()
    assert [runs.postings_of(i).tolist() for i in range(len(lists))] == lists

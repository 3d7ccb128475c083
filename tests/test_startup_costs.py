"""What a run reads before its first document, made cheap without changing an answer.

* The group table (:class:`~presidio_delink.attacks.scoring.GroupTable`) against its
  definition, ``dict.fromkeys(index.doc_groups)``, on any grouping: groups in document
  order or interleaved, stored numbers in any order, repeated names, documents without
  groups; its name order, documents per group, group maxima and look-ups.
* A ranked attack over an index whose groups are interleaved ranks as the definitions
  say (the group maxima then gather the documents of each group).
* The verified record over an index folder's own files
  (:class:`~presidio_delink.index.verified.FileCheck`): hashed on the first open,
  trusted on the next, hashed again and refused by name after a change in place, every
  file hashed with the record off, nothing hashed without ``verify``.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from presidio_delink import NgramIndex
from presidio_delink.attacks import scoring
from presidio_delink.attacks.ranked import RankedAttack
from presidio_delink.errors import ConfigError, IndexFormatError
from presidio_delink.index import verified


class _Fake:
    """What the group table reads of an index."""

    def __init__(self, doc_ids: list[str], group_of: list[int] | None,
                 group_ids: list[str] | None) -> None:
        self.doc_ids = doc_ids
        self.n_docs = len(doc_ids)
        self.group_of = None if group_of is None else np.asarray(group_of, dtype=np.int64)
        self.group_ids = group_ids

    @property
    def doc_groups(self) -> list[str]:
        if self.group_of is None or self.group_ids is None:
            return self.doc_ids
        return [self.group_ids[g] for g in self.group_of.tolist()]


@st.composite
def _indexes(draw: st.DrawFn) -> _Fake:
    n = draw(st.integers(0, 30))
    names = st.text("abcXY\u00e9\u4e2d", min_size=0, max_size=3)
    if draw(st.booleans()):  # no groups: each document its own (ids may repeat)
        ids = draw(st.lists(names, min_size=n, max_size=n))
        return _Fake(ids, None, None)
    ids = [f"d{i}" for i in range(n)]
    n_groups = draw(st.integers(1, max(1, n)))
    group_ids = draw(st.lists(names, min_size=n_groups, max_size=n_groups))
    group_of = draw(st.lists(st.integers(0, n_groups - 1), min_size=n, max_size=n))
    return _Fake(ids, group_of, group_ids)


def _reference(fake: _Fake) -> tuple[list[str], list[int]]:
    groups = fake.doc_groups
    ordinal = {g: i for i, g in enumerate(dict.fromkeys(groups))}
    return list(ordinal), [ordinal[g] for g in groups]


@settings(max_examples=300, deadline=None)
@given(_indexes(), st.data())
def test_group_table_is_its_definition(fake: _Fake, data: st.DataObject) -> None:
    table = scoring.GroupTable(fake)  # type: ignore[arg-type]
    names, of = _reference(fake)
    assert table.names == names and table.of.tolist() == of and table.n_groups == len(names)
    assert table.own == (of == list(range(len(of))))
    want_rank: list[int] = (np.argsort(np.argsort(np.asarray(names, dtype=object))).tolist()
                            if names else [])
    assert table.name_rank.tolist() == want_rank
    for gi in range(len(names)):
        assert table.docs_of(gi) == [d for d, g in enumerate(of) if g == gi]
    # group maxima: the stable sort and gather they were defined by, ties and signs included
    rows = data.draw(st.integers(0, 3))
    vals = st.sampled_from([0.0, -0.0, 1.0, 2.5, -1.0, 1e-300, 7.0])
    flat = data.draw(st.lists(vals, min_size=rows * len(of), max_size=rows * len(of)))
    scores = np.asarray(flat, dtype=np.float64).reshape(rows, len(of))
    if rows and len(of):
        by = np.argsort(np.asarray(of, dtype=np.int64), kind="stable")
        starts = np.searchsorted(np.asarray(of)[by], np.arange(len(names)))
        want = np.maximum.reduceat(scores[:, by], starts, axis=1)
        got = table.group_max(scores)
        assert got.shape == want.shape and got.tobytes() == want.tobytes()
    elif not rows:
        assert table.group_max(scores).shape == (0, len(names))
    # look-ups, past the point where every name is tabled
    asked = [*names, "missing", *reversed(names), "", "zz"] * 2
    for name in asked:
        assert table.find(name) == (names.index(name) if name in names else None)


def _interleaved(n_docs: int = 18) -> list[tuple[str, str, str]]:
    rng = random.Random(5)
    vocab = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(2, 5)))
             for _ in range(60)]
    docs = []
    for d in range(n_docs):
        ws = [rng.choice(vocab) for _ in range(rng.randint(15, 40))]
        text = " ".join(" ".join(ws[i:i + 8]).capitalize() + "." for i in range(0, len(ws), 8))
        docs.append((f"d{d}", text, f"g{(d * 7) % 5}"))  # groups interleaved, named out of order
    return docs


def test_ranking_over_interleaved_groups_is_by_definition(tmp_path: Path) -> None:
    docs = _interleaved()
    index = NgramIndex.build(docs, tmp_path / "idx")
    attack = RankedAttack(index)
    assert not scoring.group_table(index).in_order
    names = list(dict.fromkeys(g for _d, _t, g in docs))
    assert attack.group_names == names
    text = docs[4][1] + " " + docs[11][1]
    ps = attack.scores(text)
    ds = ps.doc_scores
    for i in range(len(ps.keys)):
        want = np.asarray([max(ds[i, d] for d, (_x, _t, g) in enumerate(docs) if g == name)
                           for name in names])
        assert ps.group_scores[i].tobytes() == want.tobytes()
        ranking = ps.ranking(i)
        order = sorted((gi for gi in range(len(names)) if want[gi] > 0),
                       key=lambda gi: (-want[gi], names[gi]))
        assert [r.group for r in ranking] == [names[gi] for gi in order]
        for r in ranking:
            mine = [d for d, (_x, _t, g) in enumerate(docs) if g == r.group]
            assert r.doc_id == docs[max(mine, key=lambda d: (ds[i, d], -d))][0]
        for gi, name in enumerate(names):
            rank = 1 + int(np.count_nonzero(want > want[gi])) if want[gi] > 0 else None
            assert ps.rank_of(i, name) == rank
    assert attack.has_group("g3") and not attack.has_group("g9")
    with pytest.raises(ConfigError, match="g9"):
        attack.group_ordinal("g9")


# -- the verified record over an index folder's own files ---------------------------------
@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of the test's own, the record on, and no wait for the clock."""
    c = tmp_path / "cache"
    monkeypatch.setenv("PRESIDIO_DELINK_CACHE", str(c))
    monkeypatch.delenv(verified.RECORD_ENV, raising=False)
    monkeypatch.setattr(verified, "RACY_NS", 0)
    return c


@pytest.fixture()
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The index files hashed, as paths."""
    calls: list[str] = []
    real = verified.sha256_file

    def counting(path: str | os.PathLike[str]) -> str:
        calls.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(verified, "sha256_file", counting)
    return calls


def _index_files(d: Path) -> set[str]:
    return {os.fspath(p) for sub in ("docs", "folds", "views")
            for p in (d / sub).rglob("*") if p.is_file()}


KEY = b"s" * 32


@pytest.mark.parametrize("key", [None, KEY])
def test_index_files_hashed_once_then_trusted(tmp_path: Path, cache: Path, hashed: list[str],
                                              key: bytes | None) -> None:
    d = NgramIndex.build(_interleaved(), tmp_path / "idx", key=key).directory
    files = _index_files(d)
    NgramIndex.load(d, key=key)
    assert set(hashed) == files and len(hashed) == len(files)
    assert len(list((cache / "verified" / verified.INDEX_SPACE).glob("*.json"))) == 1
    hashed.clear()
    again = NgramIndex.load(d, key=key)
    assert hashed == []
    assert again.doc_ids == [x for x, _t, _g in _interleaved()]
    hashed.clear()
    NgramIndex.load(d, key=key, verify=False)
    assert hashed == []


def test_index_file_changed_in_place_is_hashed_and_refused(
        tmp_path: Path, cache: Path, hashed: list[str]) -> None:
    d = NgramIndex.build(_interleaved(), tmp_path / "idx").directory
    NgramIndex.load(d)
    target = d / "docs" / "doc_ids.json"
    before = os.stat(target)
    data = bytearray(target.read_bytes())
    data[3] = ord("x") if data[3] != ord("x") else ord("y")
    with open(target, "r+b") as f:
        f.write(data)
    for _ in range(500):  # restore the modification time; wait for the change time to move
        os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
        if os.stat(target).st_ctime_ns != before.st_ctime_ns:
            break
        time.sleep(0.01)
    hashed.clear()
    with pytest.raises(IndexFormatError, match="doc_ids.json"):
        NgramIndex.load(d)
    assert hashed == [os.fspath(target)]


def test_index_record_off_hashes_every_file(tmp_path: Path, cache: Path, hashed: list[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    d = NgramIndex.build(_interleaved(), tmp_path / "idx").directory
    NgramIndex.load(d)
    monkeypatch.setenv(verified.RECORD_ENV, "off")
    hashed.clear()
    NgramIndex.load(d)
    assert set(hashed) == _index_files(d)


def test_index_record_of_another_key_is_not_trusted(tmp_path: Path, cache: Path,
                                                    hashed: list[str]) -> None:
    """A record sealed under one key is not trusted by a process holding another (the
    record is made by hand here: an index opens only with its own key)."""
    d = NgramIndex.build(_interleaved(), tmp_path / "idx", key=KEY).directory
    NgramIndex.load(d, key=KEY)
    rec_file = next((cache / "verified" / verified.INDEX_SPACE).glob("*.json"))
    other = verified.VerifiedRecord(d, "m", b"o" * 32, verified.INDEX_SPACE)
    mine = verified.VerifiedRecord(d, "m", KEY, verified.INDEX_SPACE)
    assert other.path == mine.path == rec_file
    st_ = verified.stamp(d / "docs" / "doc_ids.json")
    assert st_ is not None
    other.add({"docs/doc_ids.json": (st_, "0" * 64)})
    assert not mine.trusted("docs/doc_ids.json", st_, "0" * 64)
    assert verified.VerifiedRecord(d, "m", b"o" * 32, verified.INDEX_SPACE).trusted(
        "docs/doc_ids.json", st_, "0" * 64)

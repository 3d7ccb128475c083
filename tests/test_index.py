"""The N-gram index against a brute-force model, persistence, and bad input."""

from __future__ import annotations

import itertools
import json
import os
import re
import stat
from pathlib import Path

import numpy as np
import pytest
from brute import doc_ngram_sets, postings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presidio_delink import IndexFormatError, InputError, NgramIndex
from presidio_delink.errors import ConfigError
from presidio_delink.index import FORMAT_VERSION

FRAGMENTS = ["a", "b", "c", "d", "A", "B", "x\u200by", "\u00e9", "e\u0301", ",", ".", "'",
             "-", "[REDACTED]", "<PERSON>", "\n"]
SEPS = [" ", " ", " ", "", "\u00a0"]

doc_text = st.lists(
    st.tuples(st.sampled_from(FRAGMENTS), st.sampled_from(SEPS)), max_size=30
).map(lambda parts: "".join(f + s for f, s in parts))
corpus = st.lists(doc_text, min_size=1, max_size=8).map(
    lambda texts: [(f"d{i}", t) for i, t in enumerate(texts)]
)


def check_against_brute(idx: NgramIndex, docs: list[tuple[str, str]], max_n: int) -> None:
    """Every view of ``idx`` against brute force with that view's tokenizer."""
    for view in idx.views.values():
        tok = view.tokenizer
        sets = doc_ngram_sets(docs, tok, max_n + 2)
        all_keys = set().union(*sets)
        for key in all_keys:
            words = key.split(" ")
            want = postings(sets, key)
            assert view.lookup(words).tolist() == want, (view.name, key)
            assert view.df_words(words) == len(want), (view.name, key)
        # N-grams that occur nowhere.
        vocab = sorted({w for k in all_keys for w in k.split(" ")} | {"zz"})
        for n in (1, 2, 3):
            for combo in itertools.islice(itertools.product(vocab, repeat=n), 100):
                key = " ".join(combo)
                assert view.df_words(list(combo)) == len(postings(sets, key)), (view.name, key)
        keys = sorted(all_keys)[:300]
        assert view.df_keys(keys).tolist() == [len(postings(sets, k)) for k in keys]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=corpus, max_n=st.integers(1, 4))
def test_df_and_postings_equal_brute_force(tmp_path_factory, docs, max_n) -> None:  # type: ignore[no-untyped-def]
    idx = NgramIndex.build(docs, tmp_path_factory.mktemp("h") / "i", max_n=max_n)
    check_against_brute(idx, docs, max_n)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=corpus, max_n=st.integers(1, 4), shard_words=st.integers(1, 20))
def test_sharded_index_equals_brute_force(tmp_path_factory, docs, max_n, shard_words) -> None:  # type: ignore[no-untyped-def]
    idx = NgramIndex.build(
        docs, tmp_path_factory.mktemp("h") / "i", max_n=max_n, shard_words=shard_words
    )
    check_against_brute(idx, docs, max_n)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=corpus, below=st.integers(2, 4), shard_words=st.sampled_from([3, 10_000]))
def test_prefix_dfs_contract(tmp_path_factory, docs, below, shard_words) -> None:  # type: ignore[no-untyped-def]
    idx = NgramIndex.build(docs, tmp_path_factory.mktemp("h") / "i", max_n=4,
                           shard_words=shard_words)
    sets = doc_ngram_sets(docs, idx.tokenizer, 6)
    for _, text in docs:
        for seg in idx.tokenizer.word_segments(text):
            for i in range(len(seg)):
                words = seg[i : i + 4]
                got = idx.prefix_dfs(words, below)
                for n, v in enumerate(got, 1):
                    true = len(postings(sets, " ".join(words[:n])))
                    if v != true:
                        # allowed only for an N-gram that cannot be minimal with df >= 1
                        assert v == 0 and true <= 1
                        subs = [words[a:b] for a in range(n) for b in range(a + 1, n + 1)
                                if (a, b) != (0, n)]
                        assert any(len(postings(sets, " ".join(s))) <= 1 for s in subs)
                assert all(v >= below for v in got[:-1])
                assert len(got) == len(words) or got[-1] < below


def test_real_sample_spot_checks(sample_index: NgramIndex, sample_docs) -> None:  # type: ignore[no-untyped-def]
    idx = sample_index
    assert idx.n_docs == 40
    ids = idx.postings("36110/97")
    assert ids == ["tab:001-61807"]
    text = dict(sample_docs)["tab:001-61807"]
    tok = idx.tokenizer
    seg = tok.word_segments(text)[5]
    want = [d for d, t in sample_docs if " ".join(seg[:3]) in
            {" ".join(s[i:i + 3]) for s in tok.word_segments(t) for i in range(len(s))}]
    assert idx.postings(" ".join(seg[:3])) == want
    phrase = re.compile(r"european\s+commission\s+of\s+human\s+rights", re.I)
    assert idx.df("European Commission of Human Rights") == sum(
        1 for _, t in sample_docs if phrase.search(t)
    )
    with pytest.raises(InputError):
        idx.df("crosses, punctuation")


def test_save_load_roundtrip_and_modes(sample_index: NgramIndex, tmp_path: Path) -> None:
    out = sample_index.save(tmp_path / "copy")
    again = NgramIndex.load(out)
    assert again.stats()["n_keys"] == sample_index.stats()["n_keys"]
    for phrase in ["the applicant", "36110/97", "the Court", "nothing like this"]:
        assert again.df(phrase) == sample_index.df(phrase)
        assert again.postings(phrase) == sample_index.postings(phrase)
    for p in out.rglob("*"):
        if p.is_file():
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    assert again.tokenizer == sample_index.tokenizer


def _copy(idx: NgramIndex, tmp_path: Path) -> Path:
    return idx.save(tmp_path / "c")


def test_truncated_file_is_refused(sample_index: NgramIndex, tmp_path: Path) -> None:
    out = _copy(sample_index, tmp_path)
    f = out / "views" / "folded" / "part-00000" / "postings.bin"
    f.write_bytes(f.read_bytes()[:-10])
    with pytest.raises(IndexFormatError, match="truncated"):
        NgramIndex.load(out)


def test_flipped_byte_is_refused(sample_index: NgramIndex, tmp_path: Path) -> None:
    out = _copy(sample_index, tmp_path)
    f = out / "views" / "fine" / "part-00000" / "df.bin"
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0xFF
    f.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="corrupt"):
        NgramIndex.load(out)


def test_garbage_trie_is_refused_without_checksums(sample_index: NgramIndex, tmp_path: Path) -> None:
    out = _copy(sample_index, tmp_path)
    meta = json.loads((out / "meta.json").read_text())
    f = out / "views" / "folded" / "part-00000" / "ngrams.marisa"
    f.write_bytes(b"\x00" * 64)
    meta["views"][0]["partitions"][0]["files"]["ngrams.marisa"]["size"] = 64
    resign(out, meta)  # a consistent forgery of the metadata: the trie is still checked
    with pytest.raises(IndexFormatError):
        NgramIndex.load(out, verify=False)


def resign(out: Path, meta: dict) -> None:  # type: ignore[type-arg]
    """Write ``meta`` with a matching plain SHA-256 signature (as a forger would)."""
    import hashlib

    data = json.dumps(meta).encode()
    (out / "meta.json").write_bytes(data)
    sig = {"alg": "sha256", "digest": hashlib.sha256(data).hexdigest()}
    (out / "meta.sig").write_text(json.dumps(sig))


def test_version_and_settings_mismatch(sample_index: NgramIndex, tmp_path: Path) -> None:
    out = _copy(sample_index, tmp_path)
    meta = json.loads((out / "meta.json").read_text())
    meta["format_version"] = 999
    (out / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(IndexFormatError, match="signature"):
        NgramIndex.load(out)  # any change to meta.json is refused
    resign(out, meta)
    with pytest.raises(IndexFormatError, match="version 999.*rebuild"):
        NgramIndex.load(out)
    meta["format_version"] = FORMAT_VERSION
    meta["views"][0]["tokenizer"]["version"] = "other-tokenizer"
    resign(out, meta)
    with pytest.raises(IndexFormatError, match="tokenizer"):
        NgramIndex.load(out)
    meta["views"][0]["tokenizer"]["version"] = sample_index.meta["views"][0]["tokenizer"]["version"]
    meta["views"][0]["tokenizer"]["max_n"] = 3  # changes what is detected
    resign(out, meta)
    with pytest.raises(IndexFormatError, match="malformed"):
        NgramIndex.load(out)
    resign(out, {**sample_index.meta, "extra": 1})
    with pytest.raises(IndexFormatError, match="malformed"):
        NgramIndex.load(out)
    # A view stored over a view listed after it (or not at all) is refused: no cycles.
    views = [dict(v) for v in sample_index.meta["views"]]
    assert views[1]["stored_over"] == views[0]["name"]
    views[0]["stored_over"] = views[1]["name"]
    resign(out, {**sample_index.meta, "views": views})
    with pytest.raises(IndexFormatError, match="stored over an unknown view"):
        NgramIndex.load(out)
    (out / "meta.json").write_text("{not json")
    with pytest.raises(IndexFormatError):
        NgramIndex.load(out)
    (out / "meta.sig").unlink()
    with pytest.raises(IndexFormatError, match="rebuild"):
        NgramIndex.load(out)
    with pytest.raises(IndexFormatError, match="not a presidio-delink index"):
        NgramIndex.load(tmp_path / "nowhere")


def test_bad_collections(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no documents"):
        NgramIndex.build([], tmp_path / "a")
    assert not (tmp_path / "a").exists()
    with pytest.raises(InputError, match="duplicate"):
        NgramIndex.build([("x", "a b"), ("x", "c")], tmp_path / "b")
    with pytest.raises(InputError, match="string"):
        NgramIndex.build([("x", b"bytes")], tmp_path / "c")  # type: ignore[list-item]
    with pytest.raises(InputError):
        NgramIndex.build([("x",)], tmp_path / "d")  # type: ignore[list-item]
    (tmp_path / "e").mkdir()
    (tmp_path / "e" / "f").write_text("x")
    with pytest.raises(ConfigError, match="not empty"):
        NgramIndex.build([("x", "a")], tmp_path / "e")


def test_empty_documents_count_but_hold_nothing(tmp_path: Path) -> None:
    idx = NgramIndex.build([("e1", ""), ("a", "x y"), ("e2", "..."), ("b", "x")], tmp_path / "i")
    assert idx.n_docs == 4
    assert idx.postings("x") == ["a", "b"]
    assert idx.postings("x y") == ["a"]


def test_temporary_index_and_integer_ids() -> None:
    idx = NgramIndex.build([(1, "alpha beta"), (2, "beta gamma")])
    assert idx.postings("beta") == ["1", "2"]
    path = idx.directory
    assert path.exists()
    del idx
    import gc

    gc.collect()
    assert not path.exists()


def test_stats(sample_index: NgramIndex) -> None:
    st_ = sample_index.stats()
    assert st_["n_docs"] == 40 and st_["max_n"] == 8 and st_["n_groups"] == 40
    views = st_["views"]
    assert list(views) == ["folded", "folded-cross", "folded-dash", "fine", "surface",  # type: ignore[call-overload]
                           "accent-cross"]
    for v in views.values():  # type: ignore[attr-defined]
        assert v["n_partitions"] == 1 and sum(v["keys_per_n"].values()) == v["n_keys"]
    assert st_["bytes_on_disk"] > 0


def test_files_are_private(tmp_path: Path) -> None:
    idx = NgramIndex.build([("a", "x")], tmp_path / "i")
    modes = {stat.S_IMODE(p.stat().st_mode) for p in idx.directory.rglob("*") if p.is_file()}
    assert modes == {0o600}
    assert os.stat(idx.directory).st_mode & 0o077 == 0


def test_bulk_lookups_match_single(sample_index: NgramIndex, sample_deid) -> None:  # type: ignore[no-untyped-def]
    keys = [k for k, _, _ in sample_index.tokenizer.ngrams(sample_deid[0][1])][:2000]
    bulk = sample_index.df_keys(keys)
    single = np.array([sample_index.df_words(k.split(" ")) for k in keys])
    assert (bulk == single).all()
    posts = sample_index.postings_keys(keys[:50])
    assert [len(p) for p in posts] == bulk[:50].tolist()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=corpus, max_n=st.integers(1, 4), shard_words=st.sampled_from([3, 10_000]))
def test_views_stored_over_others_equal_views_stored_alone(tmp_path_factory, docs, max_n, shard_words) -> None:  # type: ignore[no-untyped-def]
    """Delta storage (a view kept as its differences from another) changes nothing: stored
    keys, their df and the detector's prefix walks equal those of the view built alone."""
    root = tmp_path_factory.mktemp("layers")
    views = ["folded", "folded-cross", "folded-dash", "fine", "surface", "accent-cross", "case",
             "case-cross"]
    both = NgramIndex.build(docs, root / "all", max_n=max_n, views=views, shard_words=shard_words)
    assert [both.meta["views"][i]["stored_over"] for i in range(len(views))] == [
        None, "folded", "folded", "folded", "fine", "folded-cross", "fine", "case"]
    for name in views[1:]:
        alone = NgramIndex.build(docs, root / name, max_n=max_n, views=[name], shard_words=shard_words)
        a, b = both.views[name], alone.views[name]
        assert sorted(a.iter_keys()) == sorted(b.iter_keys()), name
        assert a.n_keys == b.n_keys
        queries = [
            [t.word for t in seg][i : i + max_n]
            for _, text in docs
            for seg in a.tokenizer.segments(text)
            for i in range(len(seg))
        ]
        for below in (2, 3):
            assert a.prefix_dfs_many(queries, below) == b.prefix_dfs_many(queries, below), name


@pytest.mark.parametrize("old", [3, 4])
def test_an_index_of_an_older_format_asks_for_a_rebuild(
    sample_index: NgramIndex, tmp_path: Path, old: int
) -> None:
    # Format 4 changed the posting files (delta + variable-byte coded), format 5 the
    # vocabulary (one trie per partition): an older index is refused before any file is read.
    out = _copy(sample_index, tmp_path)
    meta = json.loads((out / "meta.json").read_text())
    meta["format_version"] = old
    resign(out, meta)
    with pytest.raises(
        IndexFormatError, match=f"version {old}; .*reads version 5: rebuild the index"
    ):
        NgramIndex.load(out)


def test_every_index_file_is_written_through_atomic_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Index files (arrays, tries, metadata, document table) go through io.atomic_output:
    a temporary file renamed, never a file written in place under its final name."""
    import presidio_delink.index.doctable as doctable
    import presidio_delink.index.format as fmt
    import presidio_delink.index.shard as shard
    from presidio_delink import io

    written: set[Path] = set()

    def recording(path, mode="w"):  # type: ignore[no-untyped-def]
        written.add(Path(path).resolve())
        return io.atomic_output(path, mode)

    monkeypatch.setattr(fmt, "atomic_output", recording)
    monkeypatch.setattr(shard, "atomic_output", recording)
    monkeypatch.setattr(doctable, "atomic_output", recording)
    docs = [(f"d{i}", f"The applicant {i} was heard by the court in case {i % 3}.") for i in range(6)]
    out = NgramIndex.build(docs, tmp_path / "i", views=("folded", "fine", "surface")).directory
    copy = NgramIndex.load(out).save(tmp_path / "copy")
    files = {p.resolve() for d in (out, copy) for p in d.rglob("*") if p.is_file()}
    assert files and files <= written, sorted(map(str, files - written))


def test_build_settings_are_checked_before_anything_is_written(tmp_path: Path) -> None:
    docs = [("a", "one two three"), ("b", "two three four")]
    with pytest.raises(TypeError, match="maxn"):
        NgramIndex.build(docs, tmp_path / "typo", maxn=3)
    with pytest.raises(ConfigError, match="shard_words must be positive, got 0"):
        NgramIndex.build(docs, tmp_path / "zero", shard_words=0)
    with pytest.raises(ConfigError, match="n_parts must be positive"):
        NgramIndex.build_files([tmp_path / "x.jsonl"], tmp_path / "f", dask_client=None,
                               n_parts=0)
    assert not (tmp_path / "typo").exists() and not (tmp_path / "zero").exists()
    idx = NgramIndex.build(docs, tmp_path / "ok", max_n=2, views=["folded"])
    assert idx.stats()["n_docs"] == 2 and list(idx.views) == ["folded"]
    assert NgramIndex.load(tmp_path / "ok").primary.tokenizer.max_n == 2

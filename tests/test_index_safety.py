"""Index integrity and build safety: signed metadata, corruption, locks, cleanup, groups."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presidio_delink import IndexFormatError, NgramIndex
from presidio_delink.cli import main
from presidio_delink.errors import ConfigError, InputError

DOCS = [
    ("a", "The applicant lodged an application, the court dismissed it."),
    ("b", "The applicant's lawyer appealed; the court of appeal agreed."),
    ("c", "Non-pecuniary damage was awarded in \u0130zmir."),
    ("d", "The court awarded damage."),
]
PHRASES = ["the applicant", "the court", "court of appeal", "awarded", "izmir", "lawyer appealed"]


def answers(idx: NgramIndex) -> list[list[int]]:
    out = []
    for view in idx.views.values():
        for p in PHRASES:
            for seg in view.tokenizer.word_segments(p):
                out.append(view.lookup(seg).tolist())
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[list[int]]]:
    d = tmp_path_factory.mktemp("safe") / "i"
    idx = NgramIndex.build(DOCS, d, max_n=3)
    return d, answers(idx)


def _copy(src: Path, dst: Path) -> Path:
    for p in sorted(src.rglob("*")):
        q = dst / p.relative_to(src)
        if p.is_dir():
            q.mkdir(parents=True, exist_ok=True)
        else:
            q.parent.mkdir(parents=True, exist_ok=True)
            q.write_bytes(p.read_bytes())
    return dst


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n_flips=st.integers(1, 3))
def test_random_corruption_is_refused_or_harmless(built, tmp_path_factory, seed, n_flips) -> None:  # type: ignore[no-untyped-def]
    """Random byte-level corruption of any file, meta.json included: refused, or the
    answers are exactly the uncorrupted ones."""
    src, want = built
    d = _copy(src, tmp_path_factory.mktemp("c") / "i")
    rng = random.Random(seed)
    files = sorted(p for p in d.rglob("*") if p.is_file())
    for _ in range(n_flips):
        f = rng.choice(files)
        data = bytearray(f.read_bytes())
        if not data:
            continue
        i = rng.randrange(len(data))
        if rng.random() < 0.5:
            data[i] ^= 1 << rng.randrange(8)
        else:
            data[i] = rng.randrange(256)
        f.write_bytes(bytes(data))
    try:
        idx = NgramIndex.load(d)
    except IndexFormatError:
        return
    assert answers(idx) == want


def test_every_bit_of_meta_json_is_protected(built, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src, _ = built
    d = _copy(src, tmp_path / "i")
    meta = (d / "meta.json").read_bytes()
    rng = random.Random(7)
    for pos in rng.sample(range(len(meta) * 8), 400):
        data = bytearray(meta)
        data[pos // 8] ^= 1 << (pos % 8)
        (d / "meta.json").write_bytes(bytes(data))
        with pytest.raises(IndexFormatError):
            NgramIndex.load(d)


def test_key_file_signs_the_metadata(tmp_path: Path) -> None:
    key = b"k" * 32
    idx = NgramIndex.build(DOCS, tmp_path / "i", key=key)
    assert NgramIndex.load(tmp_path / "i", key=key).n_docs == 4
    with pytest.raises(IndexFormatError, match="signed with a key"):
        NgramIndex.load(tmp_path / "i")
    with pytest.raises(IndexFormatError, match="signature"):
        NgramIndex.load(tmp_path / "i", key=b"x" * 32)
    # A forger who rewrites meta.json and a plain checksum is refused too.
    meta = json.loads((tmp_path / "i" / "meta.json").read_text())
    meta["max_n"] = 3
    data = json.dumps(meta).encode()
    import hashlib

    (tmp_path / "i" / "meta.json").write_bytes(data)
    (tmp_path / "i" / "meta.sig").write_text(
        json.dumps({"alg": "sha256", "digest": hashlib.sha256(data).hexdigest()}))
    with pytest.raises(IndexFormatError, match="not signed with a key"):
        NgramIndex.load(tmp_path / "i", key=key)
    del idx


def test_failed_build_keeps_the_users_directory(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()

    def docs():  # type: ignore[no-untyped-def]
        yield ("a", "one two")
        raise InputError("bad line 2")

    with pytest.raises(InputError):
        NgramIndex.build(docs(), mine, shard_words=1)
    assert mine.is_dir() and list(mine.iterdir()) == []
    with pytest.raises(InputError):
        NgramIndex.build(docs(), tmp_path / "new", shard_words=1)
    assert not (tmp_path / "new").exists()  # created by the build: removed


def test_concurrent_build_into_one_directory_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "i"
    errors: list[Exception] = []

    def docs():  # type: ignore[no-untyped-def]
        yield ("a", "one two")
        try:  # a second build starts while the first is writing
            NgramIndex.build([("x", "y")], out)
        except ConfigError as exc:
            errors.append(exc)
        yield ("b", "three")

    idx = NgramIndex.build(docs(), out)
    assert errors and "another index build" in str(errors[0])
    assert idx.doc_ids == ["a", "b"] and NgramIndex.load(out).doc_ids == ["a", "b"]
    with pytest.raises(ConfigError, match="not empty"):
        NgramIndex.build([("x", "y")], out)


def test_interrupted_build_never_loads(tmp_path: Path) -> None:
    out = tmp_path / "i"
    out.mkdir()
    (out / ".build-lock").write_text("123")
    with pytest.raises(IndexFormatError, match="in progress"):
        NgramIndex.load(out)


def run(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_cli_bad_views_groups_and_paths(tmp_path: Path) -> None:
    src = tmp_path / "c.jsonl"
    src.write_text("\n".join(json.dumps({"id": d, "text": t}) for d, t in DOCS) + "\n")
    res = run("index", "build", str(src), "-o", str(tmp_path / "x"), "--view", "nope")
    assert res.exit_code == 2 and "unknown view 'nope'" in res.output
    res = run("index", "build", str(src), "-o", str(tmp_path / "x"), "--group-regex", "^(zz)")
    assert res.exit_code == 2 and "does not match the group regex" in res.output
    assert not (tmp_path / "x").exists()
    bad = tmp_path / "g.jsonl"
    bad.write_text(json.dumps({"id": "a", "text": "x", "group": 3}) + "\n")
    res = run("index", "build", str(bad), "-o", str(tmp_path / "y"))
    assert res.exit_code == 2 and "'group' must be a non-empty string" in res.output
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("hello")
    res = run("index", "build", str(folder), "-o", str(folder / "idx"))
    assert res.exit_code == 2 and "inside" in res.output and not (folder / "idx").exists()


def test_cli_groups_from_jsonl_and_regex(tmp_path: Path) -> None:
    src = tmp_path / "c.jsonl"
    recs = [{"id": "case1-judgment", "text": "detained in Sirnak prison", "group": "case1"},
            {"id": "case1-hudoc", "text": "detained in Sirnak prison", "group": "case1"},
            {"id": "case2-judgment", "text": "detained in a prison"}]
    src.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    assert run("index", "build", str(src), "-o", str(tmp_path / "i"), "--no-progress").exit_code == 0
    res = run("index", "query", str(tmp_path / "i"), "Sirnak prison")
    assert json.loads(res.output) == {"ngram": "sirnak prison", "view": "folded", "df": 2,
                                      "groups": 1, "doc_ids": ["case1-judgment", "case1-hudoc"]}
    res = run("index", "build", str(src), "-o", str(tmp_path / "j"), "--no-progress",
              "--group-regex", r"^(case\d+)-")
    assert res.exit_code == 0
    st_ = json.loads(run("index", "stats", str(tmp_path / "j")).output)
    assert st_["n_groups"] == 2 and st_["max_group_size"] == 2

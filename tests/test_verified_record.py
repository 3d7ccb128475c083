"""The verified record (:mod:`presidio_delink.index.verified`): a stored reading file
hashed once is trusted by later opens while its stamp (device, inode, size, times) and
its expected checksum stay the same; anything else is hashed again, a wrong checksum is
still refused by name, a damaged record or one sealed with another key is not trusted,
and turning the record off hashes every file."""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from presidio_delink import NgramIndex
from presidio_delink.attacks.readings import store_readings
from presidio_delink.errors import IndexFormatError
from presidio_delink.index import readings as readings_mod
from presidio_delink.index import verified
from presidio_delink.index.readings import READINGS_DIR, ReadingsStore

KEY = b"k" * 32


def _corpus(n_docs: int = 12) -> list[tuple[str, str, str]]:
    rng = random.Random(11)
    vocab = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 6)))
             for _ in range(100)]
    docs = []
    for d in range(n_docs):
        ws = [rng.choice(vocab) for _ in range(rng.randint(20, 50))]
        text = " ".join(" ".join(ws[i:i + 8]).capitalize() + "." for i in range(0, len(ws), 8))
        docs.append((f"d{d}", text, f"g{d // 2}"))
    return docs


CORPUS = _corpus()


def _build(d: Path, key: bytes | None) -> Path:
    store_readings(NgramIndex.build(CORPUS, d, key=key), members=("fts5-porter",
                                                                  "fts5-unicode61"))
    return d


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("vplain") / "idx", None)


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("vkeyed") / "idx", KEY)


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of the test's own, the record on, and no wait for the clock: a copied
    file's change time is the copy's, and the tests do not sleep 2 s."""
    c = tmp_path / "cache"
    monkeypatch.setenv("PRESIDIO_DELINK_CACHE", str(c))
    monkeypatch.delenv(verified.RECORD_ENV, raising=False)
    monkeypatch.setattr(readings_mod, "RACY_NS", 0)
    return c


@pytest.fixture()
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The stored files hashed (``NAME/FILE``), in the order they were."""
    calls: list[str] = []
    real = readings_mod._file_digest

    def counting(d: Path, fname: str, item: object) -> str:
        calls.append(f"{d.name}/{fname}")
        return real(d, fname, item)  # type: ignore[arg-type]

    monkeypatch.setattr(readings_mod, "_file_digest", counting)
    return calls


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _store(d: Path, key: bytes | None = None) -> ReadingsStore:
    store = NgramIndex.load(d, key=key).readings
    assert store is not None
    return store


def _check_all(d: Path, key: bytes | None = None) -> ReadingsStore:
    store = _store(d, key)
    store.check([*store.names, *store.tables])
    return store


def _all_files(d: Path) -> list[str]:
    root = d / READINGS_DIR
    return sorted(f"{p.parent.name}/{p.name}" for p in root.glob("*/*") if p.is_file())


def _record_file(cache: Path) -> Path:
    files = list((cache / "verified").glob("*.json"))
    assert len(files) == 1
    return files[0]


def _touch_in_place(path: Path, change: Callable[[bytearray], None]) -> None:
    """Rewrite ``path`` in place (same inode, same size) and restore its modification
    time; wait until its change time moved (a coarse clock may need a few ms)."""
    before = os.stat(path)
    data = bytearray(path.read_bytes())
    change(data)
    with open(path, "r+b") as f:
        f.write(data)
    for _ in range(500):
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = os.stat(path)
        if after.st_ctime_ns != before.st_ctime_ns:
            break
        time.sleep(0.01)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino, before.st_size, before.st_mtime_ns)
    assert after.st_ctime_ns != before.st_ctime_ns


def test_first_open_hashes_and_records_then_trusts(
    plain: Path, tmp_path: Path, hashed: list[str], cache: Path
) -> None:
    d = _copy(plain, tmp_path / "idx")
    every = _all_files(d)
    _check_all(d)
    assert sorted(hashed) == every
    rec = json.loads(_record_file(cache).read_text())
    assert sorted(rec["record"]["files"]) == every
    assert rec["record"]["readings"] == os.path.realpath(d / READINGS_DIR)
    hashed.clear()
    store = _check_all(d)
    assert hashed == []
    # what is trusted is still read from the files
    got = store.get("fts5-porter")
    assert got is not None and len(got.docs) == store.meta["members"]["fts5-porter"][
        "n_postings"]


def test_rewrite_in_place_with_restored_mtime_is_hashed_again(
    plain: Path, tmp_path: Path, hashed: list[str]
) -> None:
    """Same inode, same size, same modification time: the change time moved, so the file
    is hashed again (and only that one)."""
    d = _copy(plain, tmp_path / "idx")
    _check_all(d)
    f = d / READINGS_DIR / "fts5-porter" / "weights.bin"
    _touch_in_place(f, lambda b: None)  # the same bytes
    hashed.clear()
    _check_all(d)
    assert hashed == ["fts5-porter/weights.bin"]
    hashed.clear()
    _check_all(d)  # recorded again under its new stamp
    assert hashed == []


def test_wrong_checksum_still_refused_by_name(
    plain: Path, tmp_path: Path, hashed: list[str]
) -> None:
    d = _copy(plain, tmp_path / "idx")
    _check_all(d)
    f = d / READINGS_DIR / "fts5-unicode61" / "docs.bin"

    def flip(b: bytearray) -> None:
        b[5] ^= 1

    _touch_in_place(f, flip)
    hashed.clear()
    store = _store(d)
    with pytest.raises(IndexFormatError, match="fts5-unicode61/docs.bin does not match"):
        store.check([*store.names, *store.tables])
    assert hashed == ["fts5-unicode61/docs.bin"]  # the others trusted
    with pytest.raises(IndexFormatError, match="fts5-unicode61/docs.bin"):
        _store(d).get("fts5-unicode61")


def test_replaced_file_is_hashed_again(
    plain: Path, tmp_path: Path, hashed: list[str]
) -> None:
    """A file replaced by a copy of itself (another inode, the same times kept by
    ``copy2``) is hashed again."""
    d = _copy(plain, tmp_path / "idx")
    _check_all(d)
    f = d / READINGS_DIR / "fts5-porter" / "terms.marisa"
    tmp = f.with_name("x.tmp")
    shutil.copy2(f, tmp)
    os.replace(tmp, f)
    hashed.clear()
    _check_all(d)
    assert hashed == ["fts5-porter/terms.marisa"]


def test_damaged_record_falls_back_to_hashing(
    plain: Path, tmp_path: Path, hashed: list[str], cache: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    d = _copy(plain, tmp_path / "idx")
    every = _all_files(d)
    _check_all(d)
    path = _record_file(cache)
    for damage in (b"{not json", b'{"record": {}, "alg": "sha256", "digest": "00"}',
                   path.read_bytes()[:-40]):
        path.write_bytes(damage)
        hashed.clear()
        with caplog.at_level(logging.DEBUG, logger="presidio_delink.index.verified"):
            _check_all(d)
        assert sorted(hashed) == every
        assert any("verified record" in r.getMessage() and r.levelno == logging.DEBUG
                   for r in caplog.records)
        caplog.clear()
        hashed.clear()
        _check_all(d)  # written again, whole
        assert hashed == []


def test_recorded_checksum_must_be_the_expected_one(
    plain: Path, tmp_path: Path, hashed: list[str], cache: Path
) -> None:
    """An entry whose stamp matches but whose checksum is not the one readings.json
    expects (the record sealed correctly) is hashed."""
    d = _copy(plain, tmp_path / "idx")
    _check_all(d)
    path = _record_file(cache)
    doc = json.loads(path.read_text())
    body = doc["record"]
    body["files"]["fts5-porter/ptr.bin"][5] = "0" * 64
    seal = verified.VerifiedRecord(d / READINGS_DIR, body["manifest"], None)._seal(
        verified._canonical(body))
    path.write_text(json.dumps({"record": body, **seal}))
    hashed.clear()
    _check_all(d)
    assert hashed == ["fts5-porter/ptr.bin"]


def test_unreadable_record_and_unwritable_cache_are_not_errors(
    plain: Path, tmp_path: Path, hashed: list[str], cache: Path,
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    d = _copy(plain, tmp_path / "idx")
    every = _all_files(d)
    _check_all(d)
    path = _record_file(cache)
    path.unlink()
    path.mkdir()  # read: IsADirectoryError; write: "it is a folder"
    hashed.clear()
    with caplog.at_level(logging.DEBUG, logger="presidio_delink.index.verified"):
        _check_all(d)
        _check_all(d)
    assert sorted(hashed) == sorted(every * 2)
    msgs = [r.getMessage() for r in caplog.records]
    assert any("unreadable" in m for m in msgs) and any("not written" in m for m in msgs)
    # a cache that is a file: nothing can be created under it
    blocker = tmp_path / "blocker"
    blocker.write_bytes(b"")
    monkeypatch.setenv("PRESIDIO_DELINK_CACHE", str(blocker))
    hashed.clear()
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="presidio_delink.index.verified"):
        _check_all(d)
    assert sorted(hashed) == every
    assert any("not written" in r.getMessage() for r in caplog.records)


def test_with_a_key_only_a_record_sealed_with_it_is_trusted(
    keyed: Path, tmp_path: Path, hashed: list[str], cache: Path
) -> None:
    d = _copy(keyed, tmp_path / "idx")
    every = _all_files(d)
    _check_all(d, KEY)
    path = _record_file(cache)
    doc = json.loads(path.read_text())
    assert doc["alg"] == "hmac-sha256"
    hashed.clear()
    _check_all(d, KEY)
    assert hashed == []
    body = doc["record"]
    for other in (None, b"o" * 32):  # sealed without the key, or with another
        rec = verified.VerifiedRecord(d / READINGS_DIR, body["manifest"], other)
        path.write_text(json.dumps({"record": body, **rec._seal(verified._canonical(body))}))
        hashed.clear()
        _check_all(d, KEY)
        assert sorted(hashed) == every
        hashed.clear()
        _check_all(d, KEY)  # sealed again with the key
        assert hashed == []


def test_a_file_changed_just_before_it_was_mapped_is_not_recorded(
    plain: Path, tmp_path: Path, hashed: list[str], cache: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Within RACY_NS of its last change a file is hashed but not recorded (a write in
    the same tick of the clock would leave its stamp as it was)."""
    d = _copy(plain, tmp_path / "idx")  # every file's change time is now
    every = _all_files(d)
    monkeypatch.setattr(readings_mod, "RACY_NS", 3600 * 10**9)
    _check_all(d)
    _check_all(d)
    assert sorted(hashed) == sorted(every * 2)
    assert not (cache / "verified").exists()
    monkeypatch.setattr(readings_mod, "RACY_NS", 0)  # as if an hour went by
    hashed.clear()
    _check_all(d)
    _check_all(d)
    assert sorted(hashed) == every


def test_turned_off_every_file_is_hashed(
    plain: Path, tmp_path: Path, hashed: list[str], cache: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    d = _copy(plain, tmp_path / "idx")
    every = _all_files(d)
    _check_all(d)
    hashed.clear()
    _check_all(d)
    assert hashed == []
    before = _record_file(cache).read_bytes()
    monkeypatch.setenv(verified.RECORD_ENV, "off")
    _check_all(d)
    assert sorted(hashed) == every
    assert _record_file(cache).read_bytes() == before  # neither read nor written
    hashed.clear()
    unverified = NgramIndex.load(d, verify=False).readings
    assert unverified is not None
    unverified.check([*unverified.names, *unverified.tables])
    assert hashed == []  # without verify nothing is hashed, record or not

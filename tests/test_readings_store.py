"""Stored readings: what ``index build`` / ``index readings`` store is what an engine would
build (scores equal to the bit, audit records equal), an index without them still works
and says how to upgrade, and stored readings that were changed, belong to another index
or are signed otherwise are refused by name."""

from __future__ import annotations

import json
import logging
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presidio_delink import NgramIndex
from presidio_delink.attacks import fts5
from presidio_delink.attacks.audit import source_ranks
from presidio_delink.attacks.containment import ContainmentAttack
from presidio_delink.attacks.fused import FusedReading
from presidio_delink.attacks.ranked import AUDIT_MEMBERS, PROTECT_MEMBERS, RankedAttack
from presidio_delink.attacks.readings import STORED_MEMBERS, count_tables, store_readings
from presidio_delink.cli import main
from presidio_delink.errors import IndexFormatError
from presidio_delink.index.readings import READINGS_DIR


def _corpus(seed: int, n_docs: int = 14) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 6)))
             for _ in range(120)]
    common = ["the", "of", "and", "applicant", "applicants", "court"]
    docs = []
    for d in range(n_docs):
        ws = [rng.choice(common) if rng.random() < 0.3 else rng.choice(vocab)
              for _ in range(rng.randint(20, 70))]
        text = " ".join(" ".join(ws[i:i + 9]).capitalize() + "." for i in range(0, len(ws), 9))
        docs.append((f"d{d}", text, f"g{d // 3}"))
    return docs


CORPUS = _corpus(5)
QUERY = (
    CORPUS[4][1][:180] + " [REDACTED] " + CORPUS[9][1][40:160] + " <PERSON> the applicant."
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index without readings (the directory; each test opens its own copy)."""
    d = tmp_path_factory.mktemp("readings") / "idx"
    NgramIndex.build(CORPUS, d)
    return d


@pytest.fixture(scope="module")
def stored(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("stored") / "idx"
    shutil.copytree(built, d)
    store_readings(NgramIndex.load(d))
    return d


def test_stored_members_cover_every_panel() -> None:
    assert set(AUDIT_MEMBERS) | set(PROTECT_MEMBERS) == set(STORED_MEMBERS)


def test_scores_bit_identical(built: Path, stored: Path) -> None:
    plain, kept = NgramIndex.load(built), NgramIndex.load(stored)
    assert plain.readings is None and kept.readings is not None
    a = RankedAttack(plain, members=STORED_MEMBERS)
    b = RankedAttack(kept, members=STORED_MEMBERS)
    assert b._engine.built == [] and a._engine.built == list(STORED_MEMBERS)
    pa, pb = a.scores(QUERY), b.scores(QUERY)
    assert pa.keys == pb.keys and len(pa.keys) > len(STORED_MEMBERS)
    assert pa.doc_scores.tobytes() == pb.doc_scores.tobytes()
    for m in STORED_MEMBERS:
        assert a.contributions(QUERY, m, doc=4) == b.contributions(QUERY, m, doc=4)


def test_audit_record_identical(built: Path, stored: Path) -> None:
    recs = []
    for d in (built, stored):
        idx = NgramIndex.load(d)
        ranked = RankedAttack(idx, members=AUDIT_MEMBERS)
        recs.append(source_ranks(QUERY, "g1", ContainmentAttack(idx), None, ranked,
                                 FusedReading.shipped()))
    assert json.dumps(recs[0], sort_keys=True) == json.dumps(recs[1], sort_keys=True)
    assert recs[0]["ranked"]["source_rank"] is not None


def test_without_readings_says_how_to_upgrade_once(
    built: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    idx = NgramIndex.load(built)
    with caplog.at_level(logging.INFO, logger="presidio_delink"):
        RankedAttack(idx, members=AUDIT_MEMBERS)
        RankedAttack(idx, members=PROTECT_MEMBERS)  # the same engine: no second message
    got = [r for r in caplog.records if "no stored readings" in r.getMessage()]
    assert len(got) == 1 and got[0].levelno == logging.INFO  # a small collection
    assert f"presidio-delink index readings {built}" in got[0].getMessage()
    caplog.clear()
    monkeypatch.setattr(fts5, "WARN_WORDS", 1)
    with caplog.at_level(logging.INFO, logger="presidio_delink"):
        RankedAttack(NgramIndex.load(built), members=AUDIT_MEMBERS)
    got = [r for r in caplog.records if "no stored readings" in r.getMessage()]
    assert [r.levelno for r in got] == [logging.WARNING]


def test_other_code_version_is_built_again(
    stored: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fts5, "READINGS_CODE", fts5.READINGS_CODE + 1)
    with caplog.at_level(logging.INFO, logger="presidio_delink"):
        r = RankedAttack(NgramIndex.load(stored), members=("fts5-porter",))
    assert r._engine.built == ["fts5-porter"]
    assert any(rec.levelno == logging.WARNING and "another version" in rec.getMessage()
               for rec in caplog.records)


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_changed_weights_refused_by_name(stored: Path, tmp_path: Path) -> None:
    d = _copy(stored, tmp_path / "idx")
    f = d / READINGS_DIR / "fts5-porter" / "weights.bin"
    data = bytearray(f.read_bytes())
    data[3] ^= 1
    f.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="fts5-porter/weights.bin"):
        RankedAttack(NgramIndex.load(d), members=("fts5-porter",))
    # without the checksums, a file of the wrong size is still refused
    with open(f, "ab") as fh:
        fh.write(b"\0" * 8)
    with pytest.raises(IndexFormatError, match="weights.bin"):
        RankedAttack(NgramIndex.load(d, verify=False), members=("fts5-porter",))


def test_changed_manifest_refused(stored: Path, tmp_path: Path) -> None:
    d = _copy(stored, tmp_path / "idx")
    f = d / READINGS_DIR / "readings.json"
    f.write_text(f.read_text().replace('"n_docs": 14', '"n_docs": 15'))
    with pytest.raises(IndexFormatError, match="does not match its signature"):
        NgramIndex.load(d)


def test_readings_of_another_index_refused(stored: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    NgramIndex.build(CORPUS[:-1], other)
    shutil.copytree(stored / READINGS_DIR, other / READINGS_DIR)
    with pytest.raises(IndexFormatError, match="belong to another index"):
        NgramIndex.load(other)


def test_signed_readings(tmp_path: Path) -> None:
    key = b"k" * 32
    d = tmp_path / "idx"
    idx = NgramIndex.build(CORPUS, d, key=key)
    store_readings(idx)
    sig = json.loads((d / READINGS_DIR / "readings.sig").read_text())
    assert sig["alg"] == "hmac-sha256"
    again = NgramIndex.load(d, key=key)
    assert again.readings is not None
    r = RankedAttack(again, members=("fts5-unicode61",))
    assert r._engine.built == []
    # readings re-signed with another key (their manifest unchanged) are refused
    forged = json.loads((d / READINGS_DIR / "readings.sig").read_text())
    forged["digest"] = "0" * 64
    (d / READINGS_DIR / "readings.sig").write_text(json.dumps(forged))
    with pytest.raises(IndexFormatError, match="signature"):
        NgramIndex.load(d, key=key)


def test_store_replaces_whole(stored: Path, tmp_path: Path) -> None:
    d = _copy(stored, tmp_path / "idx")
    idx = NgramIndex.load(d)
    store_readings(idx, members=("fts5-porter",))
    assert NgramIndex.load(d).readings.names == ["fts5-porter"]  # type: ignore[union-attr]
    assert [p.name for p in d.iterdir() if p.is_dir() and p.name.startswith(".")] == []
    r = RankedAttack(NgramIndex.load(d), members=("fts5-porter", "fts5-unicode61"))
    assert r._engine.built == ["fts5-unicode61"]


def test_cli_build_stores_and_readings_upgrades(tmp_path: Path) -> None:
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps({"id": i, "text": t, "group": g}) + "\n"
                           for i, t, g in CORPUS))
    run = CliRunner().invoke
    res = run(main, ["index", "build", str(src), "-o", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    assert NgramIndex.load(tmp_path / "a").readings is not None
    res = run(main, ["index", "build", "--no-readings", str(src), "-o", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    assert NgramIndex.load(tmp_path / "b").readings is None
    res = run(main, ["index", "stats", str(tmp_path / "b")])
    assert json.loads(res.output)["readings"] is None
    res = run(main, ["index", "readings", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    res = run(main, ["index", "stats", str(tmp_path / "b")])
    assert json.loads(res.output)["readings"]["n_readings"] == len(STORED_MEMBERS)
    got = NgramIndex.load(tmp_path / "b").readings
    assert got is not None and sorted(got.names) == sorted(STORED_MEMBERS)
    a = RankedAttack(NgramIndex.load(tmp_path / "a"), members=AUDIT_MEMBERS).scores(QUERY)
    b = RankedAttack(NgramIndex.load(tmp_path / "b"), members=AUDIT_MEMBERS).scores(QUERY)
    assert np.array_equal(a.doc_scores, b.doc_scores)


@pytest.mark.parametrize("delay", [0.5, 1.5, 3.0, 5.0])
def test_sigkill_while_storing_leaves_before_or_after(
    stored: Path, tmp_path: Path, delay: float
) -> None:
    """``index readings`` killed at some point: the index then reads the readings it had
    (one stored reading) or the new ones (all of them), never a mix, with the same scores;
    the next store succeeds."""
    d = _copy(stored, tmp_path / "idx")
    store_readings(NgramIndex.load(d), members=("fts5-porter",))
    proc = subprocess.Popen([sys.executable, "-m", "presidio_delink", "index", "readings",
                             str(d)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    idx = NgramIndex.load(d)
    names = sorted(idx.readings.names) if idx.readings is not None else []
    assert names in (["fts5-porter"], sorted(STORED_MEMBERS), [])
    want = RankedAttack(NgramIndex.load(stored), members=AUDIT_MEMBERS).scores(QUERY)
    got = RankedAttack(idx, members=AUDIT_MEMBERS).scores(QUERY)
    assert got.doc_scores.tobytes() == want.doc_scores.tobytes()
    store_readings(NgramIndex.load(d))
    assert sorted(NgramIndex.load(d).readings.names) == sorted(STORED_MEMBERS)  # type: ignore[union-attr]
    assert [p.name for p in d.iterdir() if p.is_dir() and p.name.startswith(".")] == []


def test_workers_store_the_same_files(stored: Path, tmp_path: Path) -> None:
    d = _copy(stored, tmp_path / "idx")
    store_readings(NgramIndex.load(d), workers=2)
    one = json.loads((stored / READINGS_DIR / "readings.json").read_text())
    two = json.loads((d / READINGS_DIR / "readings.json").read_text())
    assert one["members"] == two["members"]
    assert len(two["members"]) == len(STORED_MEMBERS) + len(count_tables())


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n_flips=st.integers(1, 3))
def test_random_corruption_of_readings_refused_or_harmless(  # type: ignore[no-untyped-def]
    stored, tmp_path_factory, seed, n_flips
) -> None:
    """Random byte changes in any stored reading file (readings.json and its signature
    included): refused by name, or the scores are exactly the uncorrupted ones."""
    d = _copy(stored, tmp_path_factory.mktemp("c") / "idx")
    rng = random.Random(seed)
    files = sorted(p for p in (d / READINGS_DIR).rglob("*") if p.is_file())
    for _ in range(n_flips):
        f = rng.choice(files)
        data = bytearray(f.read_bytes())
        if data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
            f.write_bytes(bytes(data))
    want = RankedAttack(NgramIndex.load(stored), members=AUDIT_MEMBERS).scores(QUERY)
    try:
        got = RankedAttack(NgramIndex.load(d), members=AUDIT_MEMBERS).scores(QUERY)
    except IndexFormatError:
        return
    assert got.doc_scores.tobytes() == want.doc_scores.tobytes()

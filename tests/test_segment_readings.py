"""Ranked readings over a grown index (index/segment_readings.py, attacks/segment_scores.py):
each segment stores its raw counts, and a reader over the base and the added segments
gives every score, rank and audit record of a fresh build over all the documents, to the
bit, without building a reading; parts without counts still work and say to compact."""

from __future__ import annotations

import json
import logging
import random
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presidio_delink import NgramIndex
from presidio_delink.attacks.audit import source_ranks
from presidio_delink.attacks.containment import ContainmentAttack
from presidio_delink.attacks.fts5 import ALL_MEMBERS
from presidio_delink.attacks.fused import FusedReading
from presidio_delink.attacks.ranked import AUDIT_MEMBERS, RankedAttack
from presidio_delink.attacks.readings import (
    STORED_MEMBERS,
    count_tables,
    store_readings,
    store_segment_counts,
)
from presidio_delink.cli import main
from presidio_delink.errors import IndexFormatError
from presidio_delink.index import add_documents, compact
from presidio_delink.index.readings import READINGS_DIR
from presidio_delink.index.segment_readings import SegmentReadings

Doc = tuple[str, str, str | None]
DOC_MEMBERS = tuple(m for m in STORED_MEMBERS if ALL_MEMBERS[m].unit == "doc")
GROUP_MEMBERS = tuple(m for m in STORED_MEMBERS if ALL_MEMBERS[m].unit == "group")


def _corpus(seed: int, n_docs: int) -> list[Doc]:
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(2, 5)))
             for _ in range(60)]
    common = ["the", "of", "and", "applicant", "applicants", "court"]
    docs: list[Doc] = []
    for d in range(n_docs):
        ws = [rng.choice(common) if rng.random() < 0.3 else rng.choice(vocab)
              for _ in range(rng.randint(3, 40))]
        text = " ".join(" ".join(ws[i:i + 7]).capitalize() + "." for i in range(0, len(ws), 7))
        docs.append((f"d{d}", text, rng.choice([f"g{d % 4}", None])))
    return docs


def _queries(docs: Sequence[Doc]) -> list[str]:
    return [docs[-1][1][:150] + " [REDACTED] " + docs[0][1][:120] + " <PERSON> the court.",
            docs[len(docs) // 2][1], "the applicant of the court and the applicants"]


def _grow(root: Path, docs: Sequence[Doc], cuts: Sequence[int], key: bytes | None = None,
          counts: bool = True) -> Path:
    """A base over ``docs[:cuts[0]]`` with its readings stored, then one segment per
    cut (the last up to the end)."""
    d = root / "grow"
    store_readings(NgramIndex.build(docs[: cuts[0]], d, max_n=3, key=key))
    for a, b in zip(cuts, [*cuts[1:], len(docs)], strict=True):
        add_documents(d, docs[a:b], key=key,
                      after_build=store_segment_counts if counts else None)
    return d


def _fresh(root: Path, docs: Sequence[Doc]) -> NgramIndex:
    idx = NgramIndex.build(docs, root / "fresh", max_n=3)
    store_readings(idx)
    return NgramIndex.load(root / "fresh")


def _same_scores(a: NgramIndex, b: NgramIndex, texts: Sequence[str],
                 members: Sequence[str] = STORED_MEMBERS) -> None:
    ra, rb = RankedAttack(a, members=members), RankedAttack(b, members=members)
    for t in texts:
        pa, pb = ra.scores(t), rb.scores(t)
        assert pa.keys == pb.keys
        assert pa.doc_scores.tobytes() == pb.doc_scores.tobytes()  # to the bit
        for g in ra.group_names:
            assert pa.source_rank(g) == pb.source_rank(g)
            assert pa.attacker_rank(g) == pb.attacker_rank(g)


@pytest.mark.parametrize("cuts", [[10], [8, 12, 13], [5, 6, 7, 8, 9, 10, 11, 12, 13, 14]])
def test_grown_readings_score_as_a_fresh_build(tmp_path: Path, cuts: list[int]) -> None:
    docs = _corpus(len(cuts), 18)
    grown = NgramIndex.load(_grow(tmp_path, docs, cuts), verify=True)
    assert isinstance(grown.readings, SegmentReadings)
    assert sorted(grown.readings.names) == sorted(count_tables())
    fresh = _fresh(tmp_path, docs)
    _same_scores(fresh, grown, _queries(docs))
    # every reading of the audit, the fused reading and the protection is read, none
    # built (group readings included: a group's documents may be in several segments)
    ranked = RankedAttack(grown, members=AUDIT_MEMBERS)
    assert ranked._engine.built == [] and GROUP_MEMBERS and DOC_MEMBERS
    q = _queries(docs)[0]
    for m in ("cosine-word2", "bm25-pair3w-qtf", "fts5-porter-stop-qtf"):
        want = RankedAttack(fresh, members=(m,)).contributions(q, m, doc=len(docs) - 1)
        assert ranked.contributions(q, m, doc=len(docs) - 1) == want
    recs = [source_ranks(q, docs[-1][2] or docs[-1][0], ContainmentAttack(idx), None,
                         RankedAttack(idx, members=AUDIT_MEMBERS), FusedReading.shipped())
            for idx in (fresh, grown)]
    assert json.dumps(recs[0], sort_keys=True) == json.dumps(recs[1], sort_keys=True)


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(3, 12),
       cuts=st.lists(st.integers(1, 11), min_size=1, max_size=4, unique=True))
def test_any_batches_score_as_one(tmp_path_factory: pytest.TempPathFactory, seed: int,
                                  n: int, cuts: list[int]) -> None:
    cuts = sorted(c for c in cuts if c < n)
    if not cuts:
        cuts = [n - 1]
    docs = _corpus(seed, n)
    root = tmp_path_factory.mktemp("any")
    grown = NgramIndex.load(_grow(root, docs, cuts))
    assert isinstance(grown.readings, SegmentReadings)
    _same_scores(_fresh(root, docs), grown, _queries(docs))


def test_compact_stores_whole_readings_again(tmp_path: Path) -> None:
    docs = _corpus(3, 14)
    d = _grow(tmp_path, docs, [9, 12])

    def after(idx: NgramIndex) -> None:
        store_readings(idx)

    compact(d, after_build=after)
    merged = NgramIndex.load(d)
    assert merged.readings is not None and not isinstance(merged.readings, SegmentReadings)
    assert sorted(merged.readings.names) == sorted(STORED_MEMBERS)
    fresh = _fresh(tmp_path, docs)
    _same_scores(fresh, merged, _queries(docs)[:1])
    grown = NgramIndex.load(_grow(tmp_path / "again", docs, [9, 12]))
    _same_scores(merged, grown, _queries(docs)[:1])


def test_a_segment_without_counts_is_built_in_process_and_says_compact(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    docs = _corpus(4, 12)
    d = _grow(tmp_path, docs, [8, 10], counts=False)
    with caplog.at_level(logging.WARNING, logger="presidio_delink"):
        grown = NgramIndex.load(d)
    assert grown.readings is None
    assert f"presidio-delink index compact {d}" in caplog.text
    assert "2 of them store no readings" in caplog.text
    _same_scores(_fresh(tmp_path, docs), grown, _queries(docs)[:1], AUDIT_MEMBERS)


def test_a_base_without_counts_stores_none_in_its_segments(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    docs = _corpus(6, 12)
    d = tmp_path / "old"
    idx = NgramIndex.build(docs[:8], d, max_n=3)
    store_readings(idx)
    for name in count_tables():  # an index stored by a version without count tables
        shutil.rmtree(d / READINGS_DIR / name)
    meta = json.loads((d / READINGS_DIR / "readings.json").read_text())
    meta["members"] = {k: v for k, v in meta["members"].items() if k not in count_tables()}
    data = json.dumps(meta, indent=1, sort_keys=True).encode()
    (d / READINGS_DIR / "readings.json").write_bytes(data)
    import hashlib

    sig = {"alg": "sha256", "digest": hashlib.sha256(data).hexdigest()}
    (d / READINGS_DIR / "readings.sig").write_text(json.dumps(sig))
    add_documents(d, docs[8:], after_build=store_segment_counts)
    assert not (d / "seg-00001" / READINGS_DIR).exists()
    with caplog.at_level(logging.WARNING, logger="presidio_delink"):
        grown = NgramIndex.load(d)
    assert grown.readings is None and "index compact" in caplog.text


def test_signed_segments_and_a_changed_count_file_refused_by_name(tmp_path: Path) -> None:
    docs = _corpus(8, 12)
    key = b"k" * 32
    d = _grow(tmp_path, docs, [8, 10], key=key)
    grown = NgramIndex.load(d, key=key, verify=True)
    assert isinstance(grown.readings, SegmentReadings)
    sig = json.loads((d / "seg-00002" / READINGS_DIR / "readings.sig").read_text())
    assert sig["alg"] == "hmac-sha256"
    with pytest.raises(IndexFormatError, match="pass its --key-file"):
        NgramIndex.load(d)
    f = d / "seg-00002" / READINGS_DIR / "counts-unicode61" / "tf.bin"
    data = bytearray(f.read_bytes())
    data[0] ^= 1
    f.write_bytes(bytes(data))
    grown = NgramIndex.load(d, key=key, verify=True)
    with pytest.raises(IndexFormatError, match="seg-00002/readings/counts-unicode61/tf.bin"):
        RankedAttack(grown, members=("fts5-unicode61",))


def test_cli_add_stores_the_segment_counts(tmp_path: Path) -> None:
    docs = _corpus(9, 12)

    def write(name: str, part: Sequence[Doc]) -> Path:
        p = tmp_path / name
        p.write_text("".join(json.dumps({"id": i, "text": t, "group": g}) + "\n"
                             for i, t, g in part))
        return p

    run = CliRunner().invoke
    res = run(main, ["index", "build", str(write("a.jsonl", docs[:8])), "-o",
                     str(tmp_path / "idx")])
    assert res.exit_code == 0, res.output
    res = run(main, ["index", "add", str(tmp_path / "idx"), str(write("b.jsonl", docs[8:]))])
    assert res.exit_code == 0, res.output
    grown = NgramIndex.load(tmp_path / "idx")
    assert isinstance(grown.readings, SegmentReadings)
    res = run(main, ["index", "build", str(write("all.jsonl", docs)), "-o",
                     str(tmp_path / "fresh")])
    assert res.exit_code == 0, res.output
    _same_scores(NgramIndex.load(tmp_path / "fresh"), grown, _queries(docs)[:1],
                 AUDIT_MEMBERS)


def test_fresh_cosine_weights_match_brute_force(tmp_path: Path) -> None:
    """The TF-IDF cosine summed in code-point order is still the cosine (to rounding)."""
    docs = _corpus(11, 10)
    idx = _fresh(tmp_path, docs)
    words = [[w for w in idx.doc_words(d) if w] for d in range(idx.n_docs)]
    r = RankedAttack(idx, members=("cosine-word1",))
    q = "the court of the applicant"
    qterms = set(q.split())
    got = r._engine.scores("cosine-word1", sorted(qterms))
    n = idx.n_docs
    df = {t: sum(t in ws for ws in words) for ws in words for t in ws}
    for d, ws in enumerate(words):
        tf = {t: ws.count(t) for t in set(ws)}
        vec = {t: (1 + np.log(f)) * np.log(n / df[t]) for t, f in tf.items()}
        norm = np.sqrt(sum(v * v for v in vec.values()))
        want = sum(np.log(n / df[t]) * vec[t] / norm for t in qterms if t in vec)
        assert got[d] == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_a_small_cache_gives_the_same_scores(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Postings dropped from the memory of a reading over segments are read again."""
    from presidio_delink.attacks import segment_scores

    monkeypatch.setattr(segment_scores, "CACHE_POSTINGS", 5)
    docs = _corpus(12, 12)
    grown = NgramIndex.load(_grow(tmp_path, docs, [7, 9]))
    assert isinstance(grown.readings, SegmentReadings)
    _same_scores(_fresh(tmp_path, docs), grown, _queries(docs), AUDIT_MEMBERS)

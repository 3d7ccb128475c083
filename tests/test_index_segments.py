"""A growing index (docs/index.md): ``index add`` writes segments, one reader answers over
all of them exactly as a fresh build over all the documents would, ``index compact``
merges them into that fresh build's files, and a killed writer leaves the index as it
was before or as it is after."""

from __future__ import annotations

import filecmp
import json
import os
import random
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pytest
from brute import doc_ngram_sets, postings
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presidio_delink import NgramIndex
from presidio_delink.cli import main
from presidio_delink.errors import IndexFormatError, InputError
from presidio_delink.index import add_documents, compact, refresh
from presidio_delink.index.segment_reader import SegmentedIndex
from presidio_delink.linkage import analyze

WORDS = ["a", "b", "c", "d", "e", "the", "court", "oslo", "sat", "in", "judge"]
CHECKS = ((2, 1), (2, 2), (3, 2), (3, 3))
VIEWS = ["folded", "folded-cross"]  # two views (one crossing punctuation) keep builds short


def _collection(seed: int, n: int = 36) -> tuple[list[tuple[str, str, str | None]], list[str]]:
    rnd = random.Random(seed)

    def text() -> str:
        return " ".join(rnd.choice(WORDS) + rnd.choice(["", "", ".", ","])
                        for _ in range(rnd.randint(3, 30)))

    docs = [(f"d{i}", text(), rnd.choice(["g0", "g1", "g2", "g3", None])) for i in range(n)]
    return docs, [text() for _ in range(8)]


def _answers(index: NgramIndex, texts: list[str]) -> list[object]:
    """Every check's flagged N-grams (all fields) and combinations, over ``texts``."""
    out: list[object] = []
    for t in texts:
        for k, arity in CHECKS:
            r = analyze(index, t, k=k, arity=arity)
            out.append((r.flagged, r.combinations))
    return out


def _batches(docs: list[tuple[str, str, str | None]], n: int) -> list[list[tuple[str, str, str | None]]]:
    cut = np.linspace(0, len(docs), n + 1).astype(int).tolist()
    return [docs[a:b] for a, b in zip(cut, cut[1:], strict=False)]


def _same_files(a: Path, b: Path) -> list[str]:
    """Files of index ``a`` that differ in ``b`` (``meta.json``: all but the build time)."""
    diff = []
    for p in sorted(a.rglob("*")):
        rel = p.relative_to(a)
        if not p.is_file() or rel.name.startswith(".") or rel.parts[0] == "readings":
            continue
        if rel.name == "meta.sig":
            continue
        if rel.name == "meta.json":
            m1, m2 = (json.loads(x.read_text()) for x in (p, b / rel))
            m1.pop("created")
            m2.pop("created")
            if m1 != m2:
                diff.append(str(rel))
        elif not filecmp.cmp(p, b / rel, shallow=False):
            diff.append(str(rel))
    return diff


@pytest.mark.parametrize("n_batches", [1, 3])
def test_added_segments_answer_as_a_fresh_build_before_and_after_compact(
    tmp_path: Path, n_batches: int
) -> None:
    docs, texts = _collection(n_batches)
    cut = len(docs) * 2 // 3
    fresh = NgramIndex.build(docs, tmp_path / "fresh", max_n=4)
    NgramIndex.build(docs[:cut], tmp_path / "grow", max_n=4)
    for batch in _batches(docs[cut:], n_batches):
        add_documents(tmp_path / "grow", batch)
    grown = NgramIndex.load(tmp_path / "grow")
    assert isinstance(grown, SegmentedIndex) and len(grown.segments) == n_batches + 1
    assert grown.doc_ids == fresh.doc_ids and grown.doc_groups == fresh.doc_groups
    assert (grown.n_groups, grown.max_group_size) == (fresh.n_groups, fresh.max_group_size)
    want = _answers(fresh, texts)
    assert _answers(grown, texts) == want
    for name, view in fresh.views.items():
        for d in (0, cut, len(docs) - 1):
            assert grown.views[name].doc_words(d) == view.doc_words(d)
            got = [grown.views[name].word_of(w) for w in grown.views[name].doc_word_ids(d)]
            assert got == [view.word_of(w) for w in view.doc_word_ids(d)]
    out = compact(tmp_path / "grow")
    assert out is not None
    merged = NgramIndex.load(tmp_path / "grow")
    assert not isinstance(merged, SegmentedIndex)
    assert _answers(merged, texts) == want
    assert _same_files(tmp_path / "fresh", out) == []  # the fresh build's files
    assert sorted(p.name for p in (tmp_path / "grow").iterdir()) == [out.name, "segments.json"]


def test_cli_check_and_delink_are_identical_over_segments_and_after_compact(
    tmp_path: Path,
) -> None:
    docs, texts = _collection(7, n=30)
    rows = [{"id": i, "text": t, **({"group": g} if g else {})} for i, t, g in docs]

    def jsonl(name: str, recs: Sequence[Mapping[str, object]]) -> Path:
        p = tmp_path / name
        p.write_text("".join(json.dumps(r) + "\n" for r in recs))
        return p

    inp = jsonl("texts.jsonl", [{"id": f"t{i}", "text": t} for i, t in enumerate(texts)])
    src = jsonl("src.jsonl", rows[:2] + rows[-2:])  # sources in the base and in a segment
    run = CliRunner().invoke
    common = ["--max-n", "4", "--workers", "1"]
    assert run(main, ["index", "build", str(jsonl("all.jsonl", rows)), "-o",
                      str(tmp_path / "fresh"), *common]).exit_code == 0
    assert run(main, ["index", "build", str(jsonl("a.jsonl", rows[:20])), "-o",
                      str(tmp_path / "grow"), *common]).exit_code == 0
    res = run(main, ["index", "add", str(tmp_path / "grow"), str(jsonl("b.jsonl", rows[20:])),
                     "--workers", "1"])
    assert res.exit_code == 0, res.output

    def outputs(idx: str) -> list[str]:
        got = []
        for args in (["-k", "2"], ["-k", "5", "--arity", "2"]):
            r = run(main, ["check", "--index", str(tmp_path / idx), *args, str(inp)])
            assert r.exit_code in (0, 1), r.output
            got.append(r.stdout)
        out = tmp_path / f"delink-{idx}.jsonl"
        r = run(main, ["delink", "--index", str(tmp_path / idx), "--llm", "none", str(src),
                       "-o", str(out)])
        assert r.exit_code in (0, 3), r.output
        recs = [json.loads(x) for x in out.read_text().splitlines()]
        for rec in recs:
            rec.pop("seconds")
            rec.pop("made_by")
        out.unlink()
        return [*got, json.dumps(recs, sort_keys=True)]

    want = outputs("fresh")
    assert '"source_ranks"' in want[2] or "source" in want[2]
    assert outputs("grow") == want  # readings built in the process, over all segments
    res = run(main, ["index", "compact", str(tmp_path / "grow"), "--workers", "1"])
    assert res.exit_code == 0, res.output
    assert NgramIndex.load(tmp_path / "grow").readings is not None
    assert outputs("grow") == want  # stored readings of the compacted index


def test_duplicate_ids_are_refused_and_nothing_is_written(tmp_path: Path) -> None:
    docs, _ = _collection(3, n=12)
    d = tmp_path / "idx"
    NgramIndex.build(docs[:8], d, max_n=3)
    add_documents(d, docs[8:10])
    before = sorted(p.name for p in d.iterdir()), (d / "segments.json").read_bytes()
    with pytest.raises(InputError, match=r"'d3'.*nothing was added"):
        add_documents(d, [("new1", "a b c", None), ("d3", "x y", None)])
    with pytest.raises(InputError, match=r"'d9'"):  # in an added segment
        add_documents(d, [("d9", "x y", None)])
    with pytest.raises(InputError, match=r"'n1'"):  # twice in the input
        add_documents(d, [("n1", "a b", None), ("n1", "c d", None)])
    assert (sorted(p.name for p in d.iterdir()), (d / "segments.json").read_bytes()) == before
    res = CliRunner().invoke(main, ["index", "add", str(d), str(_write(tmp_path, docs[:1]))])
    assert res.exit_code == 2 and "nothing was added" in res.output


def _write(tmp_path: Path, docs: list[tuple[str, str, str | None]]) -> Path:
    p = tmp_path / "in.jsonl"
    p.write_text("".join(json.dumps({"id": i, "text": t, "group": g}) + "\n"
                         for i, t, g in docs))
    return p


def test_a_group_in_several_segments_counts_once(tmp_path: Path) -> None:
    d = tmp_path / "idx"
    NgramIndex.build([("a1", "the judge sat in oslo", "anna"),
                      ("b1", "the judge sat in bergen", "bert")], d, max_n=3)
    add_documents(d, [("a2", "anna met the judge in oslo", "anna"),
                      ("c1", "a judge in oslo", None)])
    add_documents(d, [("a3", "the judge in oslo again", "anna")])
    idx = NgramIndex.load(d)
    assert idx.n_groups == 3 and idx.max_group_size == 3
    assert idx.doc_groups == ["anna", "bert", "anna", "c1", "anna"]
    ords = idx.lookup(["in", "oslo"])
    assert ords.tolist() == [0, 2, 3, 4] and len(idx.groups_of(ords)) == 2
    # "oslo" is in 4 documents but 2 groups: it links at k = 3
    f = {x.key: x for x in analyze(idx, "he was in oslo", k=3).flagged}
    assert f["oslo"].df == 4 and f["oslo"].groups == 2
    copy = NgramIndex.load(idx.save(tmp_path / "copy"))  # a copy opens as the original
    assert copy.doc_groups == idx.doc_groups and copy.lookup(["oslo"]).tolist() == [0, 2, 3, 4]


corpus = st.lists(
    st.tuples(
        st.lists(st.tuples(st.sampled_from(WORDS[:6]), st.sampled_from([" ", " ", ". "])),
                 max_size=14).map(lambda ps: "".join(w + s for w, s in ps)),
        st.sampled_from(["g0", "g1", "g2", None]),
    ),
    min_size=2, max_size=9,
)


@settings(max_examples=16, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=corpus, cuts=st.lists(st.integers(1, 8), min_size=1, max_size=3),
       below=st.integers(2, 4), counted=st.sampled_from([None, 0, 10, 25]))
def test_counts_over_segments_match_brute_force(
    tmp_path_factory, texts, cuts, below, counted
) -> None:
    """``counted``: the most words of an added segment read as a table (None: as
    shipped, so every one here; 0: none, all walked; 10 and 25: some of each)."""
    from presidio_delink.index import segment_reader

    was = segment_reader.COUNTED_WORDS
    segment_reader.COUNTED_WORDS = was if counted is None else counted
    try:
        _check_counts(tmp_path_factory, texts, cuts, below)
    finally:
        segment_reader.COUNTED_WORDS = was


def _check_counts(tmp_path_factory, texts, cuts, below) -> None:
    docs = [(f"d{i}", t, g) for i, (t, g) in enumerate(texts)]
    bounds = sorted({c for c in cuts if c < len(docs)} | {len(docs)})
    d = tmp_path_factory.mktemp("seg")
    NgramIndex.build(docs[: bounds[0]], d / "idx", max_n=3, views=VIEWS)
    for a, b in zip(bounds, bounds[1:], strict=False):
        add_documents(d / "idx", docs[a:b])
    idx = NgramIndex.load(d / "idx")
    fresh = NgramIndex.build(docs, d / "fresh", max_n=3, views=VIEWS)
    groups = [g if g is not None else i for i, _, g in docs]
    for name, view in idx.views.items():
        sets = doc_ngram_sets([(i, t) for i, t, _ in docs], view.tokenizer, 3)
        keys = sorted(set().union(*sets))
        for key in keys:
            want = postings(sets, key)
            got = view.lookup(key.split(" "))
            assert got.tolist() == want
            assert view.df_words(key.split(" ")) == len(want)
            assert len(idx.groups_of(got)) == len({groups[x] for x in want})
        # the detector's walks, rows and "not stored" zeros alike
        qs = [k for k in keys if k.count(" ") >= 1] + ["zz a", "a zz"]
        lengths = [k.count(" ") + 1 for k in qs]
        assert view.walk_keys(qs, lengths, below)[0] == \
            fresh.views[name].walk_keys(qs, lengths, below)[0]
        assert idx.link_dfs(view, _walk(qs, lengths, below))[0] == \
            fresh.link_dfs(fresh.views[name], _walk(qs, lengths, below))[0]
        # look-ups after walks (which keep the flagged N-grams' documents) stay exact
        for key in keys:
            assert view.lookup(key.split(" ")).tolist() == postings(sets, key)


def _walk(keys: list[str], lengths: list[int], below: int):
    from presidio_delink.index.view_index import KeyWalk

    return KeyWalk(keys, lengths, below)


def test_df_never_falls_when_documents_are_added(tmp_path: Path) -> None:
    """docs/guarantees.md: after ``index add`` no N-gram's df or group count is lower, so
    an output that was linkage-free links again only through N-grams or combinations that
    the documents before held in no group at all (df 0: the new documents alone hold
    them)."""
    docs, _ = _collection(12, n=30)
    rnd = random.Random(5)
    outputs = [" ".join(rnd.choice(WORDS) for _ in range(rnd.randint(2, 6))) for _ in range(60)]
    d = tmp_path / "idx"
    old = NgramIndex.build(docs[:20], d, max_n=3, views=VIEWS)
    free = {(t, arity) for t in outputs for arity in (1, 2)
            if not analyze(old, t, k=2, arity=arity).flagged}
    assert free  # some outputs are linkage-free against the old collection
    add_documents(d, docs[20:25])
    add_documents(d, docs[25:])
    new = NgramIndex.load(d)
    n_old = old.n_docs
    for name, view in old.views.items():
        sets = doc_ngram_sets([(i, t) for i, t, _ in docs[:20]], view.tokenizer, 3)
        for key in set().union(*sets, *(doc_ngram_sets([("o", t) for t in outputs],
                                                        view.tokenizer, 3))):
            words = key.split(" ")
            a, b = view.lookup(words), new.views[name].lookup(words)
            assert set(a.tolist()) <= set(b.tolist())
            assert len(old.groups_of(a)) <= len(new.groups_of(b))
    for t, arity in free:
        after = analyze(new, t, k=2, arity=arity, exhaustive=True)
        for f in after.flagged:
            if f.arity == 1:
                holders = new.views[f.view].lookup(f.key.split(" ")).tolist()
                assert holders and min(holders) >= n_old, (t, f.key)
        for c in after.combinations:
            held = [set(old.groups_of(old.views[c.view].lookup(key.split(" "))).tolist())
                    for key in c.keys]
            assert set.intersection(*held) == set(), (t, c)


def test_reaudit_lists_the_released_outputs_that_got_worse(tmp_path: Path) -> None:
    """``index add --reaudit``: an output whose source is added (published later) is
    audited for the first time and its phrases found nowhere before now link; an output
    whose words no added document holds, its source unknown, is not listed; a file that
    is not a delink output is refused before anything is added."""
    docs, _ = _collection(4, n=20)
    late = ("late", "the judge sat in zermatt near quillon bay. zermatt again", None)
    d = tmp_path / "idx"
    NgramIndex.build(docs, d, max_n=3, views=VIEWS)
    released = tmp_path / "released.jsonl"
    released.write_text(
        json.dumps({"id": "late", "text": "the judge sat in zermatt near quillon"}) + "\n"
        + json.dumps({"id": "other", "text": "court oslo, a b c court"}) + "\n")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"id": late[0], "text": late[1]}) + "\n")
    run = CliRunner().invoke
    res = run(main, ["index", "add", str(d), str(new), "--reaudit", str(bad), "--workers", "1"])
    assert res.exit_code != 0 and "nothing was added" in res.output
    assert NgramIndex.load(d).n_docs == 20
    res = run(main, ["index", "add", str(d), str(new), "--reaudit", str(released),
                     "--workers", "1"])
    assert res.exit_code == 0, res.output
    got = [json.loads(x) for x in res.stdout.splitlines()]
    assert [g["id"] for g in got] == ["late"]
    assert got[0]["source"] == "late" and got[0]["attacks"]
    assert all(a["before"] is None and a["after"] >= 1 for a in got[0]["attacks"].values())
    assert {x["key"] for x in got[0]["links"]} >= {"zermatt", "quillon"}
    assert "1 of 2 released outputs got worse" in res.stderr


def test_a_changed_segment_is_refused_by_name(tmp_path: Path) -> None:
    docs, _ = _collection(5, n=12)
    d = tmp_path / "idx"
    NgramIndex.build(docs[:6], d, max_n=3, views=VIEWS)
    add_documents(d, docs[6:9])
    add_documents(d, docs[9:])
    NgramIndex.load(d)
    target = max((d / "seg-00002" / "views").rglob("*.bin"), key=lambda p: p.stat().st_size)
    raw = bytearray(target.read_bytes())
    raw[0] ^= 1
    target.write_bytes(bytes(raw))
    with pytest.raises(IndexFormatError, match="segment seg-00002"):
        NgramIndex.load(d)
    target.write_bytes(bytes(raw[:-1]))  # truncated: found without reading checksums
    with pytest.raises(IndexFormatError, match="segment seg-00002"):
        NgramIndex.load(d, verify=False)
    meta = d / "seg-00001" / "meta.json"
    meta.write_text(meta.read_text().replace('"n_words"', '"n_words" ', 1))
    with pytest.raises(IndexFormatError, match="seg-00001"):
        NgramIndex.load(d, verify=False)
    manifest = d / "segments.json"
    manifest.write_text(manifest.read_text().replace("seg-00002", "seg-00003"))
    with pytest.raises(IndexFormatError, match="signature"):
        NgramIndex.load(d, verify=False)


def test_a_keyed_index_signs_its_segments(tmp_path: Path) -> None:
    key = b"k" * 32
    docs, texts = _collection(6, n=10)
    d = tmp_path / "idx"
    NgramIndex.build(docs[:6], d, max_n=3, key=key, views=VIEWS)
    add_documents(d, docs[6:], key=key)
    with pytest.raises(IndexFormatError, match="key"):
        NgramIndex.load(d)
    with pytest.raises(IndexFormatError, match="key"):
        NgramIndex.load(d, key=b"x" * 32)
    assert NgramIndex.load(d, key=key).n_docs == 10
    compact(d, key=key)
    assert NgramIndex.load(d, key=key).n_docs == 10


def test_refresh_sees_new_segments_and_an_open_index_keeps_its_own(tmp_path: Path) -> None:
    docs, texts = _collection(8, n=12)
    d = tmp_path / "idx"
    NgramIndex.build(docs[:8], d, max_n=3, views=VIEWS)
    old = NgramIndex.load(d)
    assert refresh(old) is old
    want_old = _answers(old, texts[:2])
    add_documents(d, docs[8:])
    assert old.n_docs == 8 and _answers(old, texts[:2]) == want_old
    new = refresh(old)
    assert new.n_docs == 12 and refresh(new) is new
    compact(d)
    assert _answers(new, texts[:2]) == _answers(refresh(new), texts[:2])


def test_stored_readings_are_not_used_over_segments(tmp_path: Path, caplog) -> None:
    from presidio_delink.attacks.readings import store_readings

    docs, _ = _collection(9, n=12)
    d = tmp_path / "idx"
    store_readings(NgramIndex.build(docs[:8], d, max_n=3))
    assert NgramIndex.load(d).readings is not None
    add_documents(d, docs[8:])
    with caplog.at_level("WARNING"):
        grown = NgramIndex.load(d)
    assert grown.readings is None and "index compact" in caplog.text


KILL_POINTS = {
    "add": ["add:built", "add:renamed", "add:manifest-written", "add:done"],
    "compact": ["compact:built", "compact:renamed", "compact:manifest-written",
                "compact:swapped"],
}


def _run(code: str, env: dict[str, str]) -> int:
    return subprocess.run([sys.executable, "-c", code], env={**os.environ, **env},
                          capture_output=True, timeout=120).returncode


@pytest.mark.parametrize("op,point", [(op, p) for op, ps in KILL_POINTS.items() for p in ps])
def test_a_killed_writer_leaves_the_index_as_before_or_after(
    tmp_path: Path, op: str, point: str
) -> None:
    docs, texts = _collection(11, n=16)
    d = tmp_path / "idx"
    NgramIndex.build(docs[:10], d, max_n=3, views=VIEWS)
    if op == "compact":
        add_documents(d, docs[10:13])
        add_documents(d, docs[13:])
    before = _answers(NgramIndex.load(d), texts[:3])
    n_before = NgramIndex.load(d).n_docs
    batch = _write(tmp_path, docs[10:])
    code = (
        "import json, sys; from presidio_delink.index import add_documents, compact\n"
        + (f"docs = [tuple(json.loads(x).values()) for x in open({str(batch)!r})]\n"
           f"add_documents({str(d)!r}, docs)" if op == "add" else f"compact({str(d)!r})")
    )
    rc = _run(code, {"PRESIDIO_DELINK_KILL_AT": point})
    assert rc == -9  # killed at that point
    idx = NgramIndex.load(d)
    got = _answers(idx, texts[:3])
    after = NgramIndex.build(docs, tmp_path / "after", max_n=3, views=VIEWS)
    assert got in (before, _answers(after, texts[:3]))
    assert idx.n_docs in (n_before, len(docs))
    # the next writer clears what the killed one left, and completes
    if op == "add" and idx.n_docs == n_before:
        add_documents(d, [tuple(json.loads(x).values()) for x in batch.read_text().splitlines()])
    compact(d)
    final = NgramIndex.load(d)
    assert _answers(final, texts[:3]) == _answers(after, texts[:3])
    names = sorted(p.name for p in d.iterdir() if not p.name.startswith(".readings"))
    assert len(names) == 2 and names[1] == "segments.json"

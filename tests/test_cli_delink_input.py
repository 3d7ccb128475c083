"""`delink` input checks (those `index build` has) and batch runs that keep finished work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from presidio_delink.cli import main

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    idx = tmp_path_factory.mktemp("cli") / "idx"
    res = CliRunner().invoke(main, ["index", "build", str(SAMPLES / "collection.jsonl"), "-o",
                                    str(idx), "--no-progress"])
    assert res.exit_code == 0, res.output
    return idx


def deid() -> list[dict[str, str]]:
    lines = (SAMPLES / "deidentified.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(x) for x in lines]


def run(index_dir: Path, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, ["delink", "--index", str(index_dir), "--llm", "none",
                                     "--no-progress", *args])


def test_duplicate_ids_empty_input_and_nulls(index_dir: Path, tmp_path: Path) -> None:
    docs = deid()
    dup = tmp_path / "dup.jsonl"
    dup.write_text("\n".join(json.dumps(d) for d in [docs[0], docs[1], docs[0]]) + "\n")
    res = run(index_dir, str(dup), "-o", str(tmp_path / "o.jsonl"))
    assert res.exit_code == 2 and "duplicate document id" in res.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    res = run(index_dir, str(empty), "-o", str(tmp_path / "e.jsonl"))
    assert res.exit_code == 2 and "no documents" in res.output
    assert not (tmp_path / "e.jsonl").exists()
    nulls = tmp_path / "n.json"
    nulls.write_text(json.dumps({docs[0]["id"]: docs[0]["text"], "missing-1": None}))
    res = run(index_dir, str(nulls), "-o", str(tmp_path / "n.jsonl"))
    # 3: written and phrase-clean, but the audit ranks the known source first
    assert res.exit_code == 3, res.output
    assert "1 null texts" in res.output and "'missing-1'" in res.output
    assert len((tmp_path / "n.jsonl").read_text().splitlines()) == 1


def test_a_txt_file_is_one_document_and_k_is_bounded(index_dir: Path, tmp_path: Path) -> None:
    txt = tmp_path / "letter.txt"
    txt.write_text(deid()[0]["text"], encoding="utf-8")
    out = tmp_path / "t.jsonl"
    res = run(index_dir, str(txt), "-o", str(out))
    assert res.exit_code == 0, res.output
    (rec,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert rec["id"] == "letter" and rec["linkable_after"] is False
    res = run(index_dir, "-k", "41", str(txt), "-o", str(tmp_path / "k.jsonl"))
    assert res.exit_code == 2 and "larger than the 40 groups" in res.output


def test_a_malformed_record_fails_the_run_before_any_document(
    index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from presidio_delink.pipeline import Delinker

    docs = deid()
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps(docs[0]) + "\n" + json.dumps(docs[1]) + "\n{not json\n")
    calls = {"n": 0}
    real = Delinker.delink

    def counted(self, *a, **kw):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        return real(self, *a, **kw)

    monkeypatch.setattr(Delinker, "delink", counted)
    out = tmp_path / "out.jsonl"
    res = run(index_dir, str(inp), "-o", str(out))
    assert res.exit_code == 2 and f"{inp}:3" in res.output, res.output
    assert calls["n"] == 0  # checked whole before the first document
    assert not out.exists() and not (tmp_path / "out.jsonl.partial").exists()


def stop_at(n: int, monkeypatch: pytest.MonkeyPatch, how: str = "interrupt") -> None:
    """Make the ``n``-th document's delinking stop the run (Ctrl-C or SIGTERM)."""
    import os
    import signal

    from presidio_delink.pipeline import Delinker

    real = Delinker.delink
    calls = {"n": 0}

    def stopping(self, text, doc_id="", forbidden=(), **kw):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == n:
            if how == "sigterm":
                os.kill(os.getpid(), signal.SIGTERM)
            raise KeyboardInterrupt
        return real(self, text, doc_id, forbidden, **kw)

    monkeypatch.setattr(Delinker, "delink", stopping)


def test_an_interrupt_keeps_the_finished_documents_and_a_rerun_must_choose(
    index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = deid()
    out = tmp_path / "out.jsonl"
    partial = tmp_path / "out.jsonl.partial"
    with monkeypatch.context() as m:
        stop_at(2, m)
        res = run(index_dir, str(SAMPLES / "deidentified.jsonl"), "-o", str(out))
    assert res.exit_code == 2 and "interrupted" in res.output
    assert "kept the 1 finished documents" in res.output
    assert not out.exists()
    kept = [json.loads(x) for x in partial.read_text().splitlines()]
    assert [r["id"] for r in kept] == [docs[0]["id"]]
    assert partial.stat().st_mode & 0o777 == 0o600
    assert kept[0]["made_by"] and kept[0]["input_sha256"]
    # an earlier partial is never discarded unasked
    res = run(index_dir, str(SAMPLES / "deidentified.jsonl"), "-o", str(out))
    assert res.exit_code == 2 and "--resume" in res.output and "--fresh" in res.output
    assert partial.read_text().splitlines() == [json.dumps(kept[0], ensure_ascii=False)]
    report = tmp_path / "r.html"
    res = run(index_dir, str(SAMPLES / "deidentified.jsonl"), "-o", str(out), "--resume",
              "--report", str(report))
    assert res.exit_code == 3, res.output  # written; the audit ranks known sources first
    assert "1 documents reused" in res.output and f"({len(docs)} documents)" in res.output
    assert f"source first for {len(docs)}, in the top 5 for {len(docs)} of {len(docs)}" in res.output
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in got] == [d["id"] for d in docs]
    assert got[0] == kept[0]
    page = report.read_text()
    assert all(d["id"] in page for d in docs)  # the report covers every document
    assert not partial.exists()


def test_resume_reuses_only_what_the_same_settings_and_input_made(
    index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = deid()
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps(d) + "\n" for d in docs))
    out = tmp_path / "out.jsonl"
    with monkeypatch.context() as m:
        stop_at(2, m)
        assert run(index_dir, str(inp), "-o", str(out), "-k", "2").exit_code == 2
    # another k: the kept document was made otherwise, delinked again
    res = run(index_dir, str(inp), "-o", str(out), "-k", "5", "--resume")
    assert res.exit_code in (0, 3), res.output
    assert "0 documents reused" in res.output and "1 made there with other" in res.output
    check = CliRunner().invoke(main, ["check", "--index", str(index_dir), "-k", "5", str(out)])
    assert check.exit_code == 0, check.output
    # the same settings, another input text for the kept document: delinked again too
    out2 = tmp_path / "out2.jsonl"
    with monkeypatch.context() as m:
        stop_at(2, m)
        assert run(index_dir, str(inp), "-o", str(out2)).exit_code == 2
    changed = [dict(docs[0], text=docs[0]["text"] + " Added."), *docs[1:]]
    inp.write_text("".join(json.dumps(d) + "\n" for d in changed))
    res = run(index_dir, str(inp), "-o", str(out2), "--resume")
    assert "1 made there with other" in res.output, res.output
    assert json.loads(out2.read_text().splitlines()[0])["input_sha256"] != ""


def test_sigterm_keeps_the_finished_documents_and_fresh_discards_them(
    index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out.jsonl"
    partial = tmp_path / "out.jsonl.partial"
    with monkeypatch.context() as m:
        stop_at(3, m, "sigterm")
        res = run(index_dir, str(SAMPLES / "deidentified.jsonl"), "-o", str(out))
    assert res.exit_code == 143 and "terminated" in res.output, res.output
    assert len(partial.read_text().splitlines()) == 2
    res = run(index_dir, str(SAMPLES / "deidentified.jsonl"), "-o", str(out), "--fresh")
    assert res.exit_code in (0, 3) and "reused" not in res.output
    assert not partial.exists() and out.exists()


def test_release_writes_only_ids_and_texts_of_linkage_free_documents(
    index_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    assert run(index_dir, str(SAMPLES / "deidentified.jsonl"), "-o", str(out)).exit_code == 3
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    recs[1].update(failed=True, text=None)
    recs.append(dict(recs[0], id="still-linkable", linkable_after=True))
    out.write_text("".join(json.dumps(r) + "\n" for r in recs))
    public = tmp_path / "public.jsonl"
    res = CliRunner().invoke(main, ["release", str(out), "-o", str(public)])
    assert res.exit_code == 0, res.output
    assert "held back 1 failed, 1 still linkable" in res.output
    got = [json.loads(x) for x in public.read_text().splitlines()]
    assert [r["id"] for r in got] == [recs[0]["id"], *(r["id"] for r in recs[2:-1])]
    assert all(set(r) == {"id", "text"} for r in got)
    # a review export: only the signed-off documents
    reviewed = tmp_path / "reviewed.jsonl"
    rows = [dict(r, review={"signed_off": i == 0, "trail": []}) for i, r in enumerate(recs)]
    reviewed.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = CliRunner().invoke(main, ["release", str(reviewed), "-o", str(public)])
    assert res.exit_code == 0 and "not signed off" in res.output, res.output
    assert [json.loads(x)["id"] for x in public.read_text().splitlines()] == [recs[0]["id"]]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    res = CliRunner().invoke(main, ["release", str(bad), "-o", str(tmp_path / "p2.jsonl")])
    assert res.exit_code == 2 and f"{bad}:1" in res.output


def test_max_chars_fails_a_longer_document(index_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    res = run(index_dir, str(SAMPLES / "deidentified.jsonl"), "-o", str(out),
              "--max-chars", "50")
    assert res.exit_code == 1, res.output
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert all(r["failed"] and r["text"] is None for r in recs)
    assert "--max-chars" in recs[0]["error"] or "longer" in recs[0]["error"]


def test_index_build_names_the_file_of_a_duplicate_id(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"id": "x", "text": "one two"}\n')
    b.write_text('{"id": "y", "text": "three"}\n{"id": "x", "text": "four"}\n')
    res = CliRunner().invoke(main, ["index", "build", str(a), str(b), "-o",
                                    str(tmp_path / "idx"), "--no-progress", "--workers", "1"])
    assert res.exit_code == 2
    assert f"{b}: duplicate document id 'x' (first in {a})" in res.output


def test_a_run_stopped_before_any_document_leaves_no_partial_file(
    index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out.jsonl"
    with monkeypatch.context() as m:
        stop_at(1, m)
        res = run(index_dir, str(SAMPLES / "deidentified.jsonl"), "-o", str(out))
    assert res.exit_code == 2 and "kept the" not in res.output
    assert not (tmp_path / "out.jsonl.partial").exists()  # nothing to resume: no refusal next
    res = run(index_dir, str(SAMPLES / "deidentified.jsonl"), "-o", str(out))
    assert res.exit_code == 3 and out.exists(), res.output


@pytest.mark.parametrize("change", ["protect", "index"])
def test_resume_redoes_what_another_protection_or_index_made(
    index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps(d) + "\n" for d in deid()))
    out = tmp_path / "out.jsonl"
    with monkeypatch.context() as m:
        stop_at(2, m)
        assert run(index_dir, str(inp), "-o", str(out)).exit_code == 2
    if change == "protect":
        again, extra = index_dir, ["--protect", "containment"]
    else:  # the same collection less one document: another index
        rows = (SAMPLES / "collection.jsonl").read_text(encoding="utf-8").splitlines()
        coll = tmp_path / "coll.jsonl"
        coll.write_text("\n".join(rows[:-1]) + "\n", encoding="utf-8")
        again, extra = tmp_path / "idx2", []
        built = CliRunner().invoke(main, ["index", "build", str(coll), "-o", str(again),
                                          "--no-progress"])
        assert built.exit_code == 0, built.output
    res = run(again, str(inp), "-o", str(out), "--resume", *extra)
    assert res.exit_code in (0, 3), res.output
    assert "0 documents reused" in res.output and "1 made there with other" in res.output


def test_the_fingerprint_names_the_llm_and_the_pii_step(index_dir: Path) -> None:
    from presidio_delink import NgramIndex
    from presidio_delink.batch import LLMOptions, PIIOptions, batch_fingerprint
    from presidio_delink.settings import DelinkSettings

    idx, st = NgramIndex.load(index_dir), DelinkSettings()
    base = batch_fingerprint(idx, st, LLMOptions("none"), PIIOptions())
    assert base == batch_fingerprint(idx, st, LLMOptions("none", timeout=5), PIIOptions())
    others = {
        batch_fingerprint(idx, st, LLMOptions("embedded:qwen0.5b"), PIIOptions()),
        batch_fingerprint(idx, st, LLMOptions("ollama:qwen2.5"), PIIOptions()),
        batch_fingerprint(idx, st, LLMOptions("none"), PIIOptions(redact=True)),
        batch_fingerprint(idx, DelinkSettings(protect="ranked"), LLMOptions("none"),
                          PIIOptions()),
        batch_fingerprint(idx, st.replace(rewrite="candidates"), LLMOptions("none"),
                          PIIOptions()),
    }
    assert base not in others and len(others) == 5

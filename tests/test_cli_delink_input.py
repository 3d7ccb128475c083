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


def test_a_malformed_record_keeps_the_finished_ones_for_resume(
    index_dir: Path, tmp_path: Path
) -> None:
    docs = deid()
    inp = tmp_path / "in.jsonl"
    inp.write_text(json.dumps(docs[0]) + "\n{not json\n" + json.dumps(docs[1]) + "\n")
    out = tmp_path / "out.jsonl"
    partial = tmp_path / "out.jsonl.partial"
    res = run(index_dir, str(inp), "-o", str(out))  # without --resume: nothing kept
    assert res.exit_code == 2 and f"{inp}:2" in res.output
    assert not out.exists() and not partial.exists()
    res = run(index_dir, str(inp), "-o", str(out), "--resume")
    assert res.exit_code == 2 and f"{inp}:2" in res.output
    assert not out.exists()  # never a partial file under the final name
    kept = [json.loads(x) for x in partial.read_text().splitlines()]
    assert [r["id"] for r in kept] == [docs[0]["id"]] and kept[0]["linkable_after"] is False
    assert partial.stat().st_mode & 0o777 == 0o600
    assert "--resume" in res.output
    # fixed input, resumed: the first document is reused, not delinked again
    inp.write_text(json.dumps(docs[0]) + "\n" + json.dumps(docs[1]) + "\n")
    res = run(index_dir, str(inp), "-o", str(out), "--resume")
    # 3: the known sources are ranked first, the reused document's counted as well
    assert res.exit_code == 3, res.output
    assert "1 documents reused" in res.output
    assert "source ranked first for 2 of 2 documents with a known source" in res.output
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in got] == [docs[0]["id"], docs[1]["id"]]
    assert got[0] == kept[0]
    assert not partial.exists()


def test_an_interrupt_keeps_the_finished_documents(
    index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from presidio_delink.pipeline import Delinker

    docs = deid()
    real = Delinker.delink
    calls = {"n": 0}

    def stop_at_second(self, text, doc_id="", forbidden=(), **kw):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(self, text, doc_id, forbidden, **kw)

    monkeypatch.setattr(Delinker, "delink", stop_at_second)
    out = tmp_path / "out.jsonl"
    res = run(index_dir, str(SAMPLES / "deidentified.jsonl"), "-o", str(out))
    assert res.exit_code == 2 and "interrupted" in res.output
    assert not out.exists()
    kept = (tmp_path / "out.jsonl.partial").read_text().splitlines()
    assert [json.loads(x)["id"] for x in kept] == [docs[0]["id"]]

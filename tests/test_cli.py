"""The command line: help, exit codes, clean errors on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from presidio_delink.cli import main

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def run(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def all_commands():  # type: ignore[no-untyped-def]
    out = []

    def walk(cmd, path):  # type: ignore[no-untyped-def]
        out.append(path)
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, [*path, name])

    walk(main, [])
    return out


@pytest.mark.parametrize("path", all_commands(), ids=lambda p: " ".join(p) or "main")
def test_every_command_has_help(path: list[str]) -> None:
    res = run(*path, "--help")
    assert res.exit_code == 0 and "Usage:" in res.output
    assert len(res.output.splitlines()) > 3


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "idx"
    res = run("index", "build", str(SAMPLES / "collection.jsonl"), "-o", str(out), "--no-progress")
    assert res.exit_code == 0, res.output
    return out


def test_index_stats_and_query(built: Path) -> None:
    res = run("index", "stats", str(built))
    assert res.exit_code == 0 and json.loads(res.output)["n_docs"] == 40
    res = run("index", "query", str(built), "36110/97", "no such phrase here")
    lines = [json.loads(x) for x in res.output.splitlines()]
    assert lines[0] == {"ngram": "36110 97", "view": "folded", "df": 1, "groups": 1,
                        "doc_ids": ["tab:001-61807"]}
    assert lines[1]["df"] == 0 and lines[1]["doc_ids"] == []
    res = run("index", "query", str(built), "--view", "fine", "36110/97")
    assert json.loads(res.output)["ngram"] == "36110 97"
    res = run("index", "query", str(built), "--view", "nope", "x")
    assert res.exit_code == 2 and "no view 'nope'" in res.output
    # --limit: ids printed (default 20), df and groups count every document
    every = json.loads(run("index", "query", str(built), "--limit", "0", "the applicant").output)
    assert every["df"] == len(every["doc_ids"]) > 20 and "more" not in every
    some = json.loads(run("index", "query", str(built), "--limit", "3", "the applicant").output)
    assert some["doc_ids"] == every["doc_ids"][:3] and some["more"] == every["df"] - 3
    assert some["df"] == every["df"] and some["groups"] == every["groups"]
    default = json.loads(run("index", "query", str(built), "the applicant").output)
    assert len(default["doc_ids"]) == 20 and default["more"] == every["df"] - 20


def test_check_exit_codes_and_offsets(built: Path, tmp_path: Path) -> None:
    res = run("check", "--index", str(built), "-k", "2", str(SAMPLES / "deidentified.jsonl"))
    assert res.exit_code == 1
    texts = {json.loads(x)["id"]: json.loads(x)["text"] for x in
             (SAMPLES / "deidentified.jsonl").read_text().splitlines()}
    for line in res.stdout.splitlines():
        rec = json.loads(line)
        assert rec["linkable"] is True
        places = [(s["start"], s["end"]) for s in rec["spans"]]
        assert len(places) == len(set(places))  # one record per place, not per view
        for s in rec["spans"]:
            assert texts[rec["id"]][s["start"] : s["end"]] == s["text"]
            assert s["df"] == 1 and s["arity"] == 1
            assert s["view"] in s["views"] and len(set(s["views"])) == len(s["views"])
    assert "checked 5 document(s) against 40" in res.stderr and "5 linkable" in res.stderr
    clean = tmp_path / "clean.jsonl"
    clean.write_text(json.dumps({"id": "c", "text": "zzqx wubble, [REDACTED]"}) + "\n")
    res = run("check", "--index", str(built), str(clean))
    assert res.exit_code == 0 and json.loads(res.stdout)["linkable"] is False


def test_attack(built: Path, tmp_path: Path) -> None:
    out = tmp_path / "attack.jsonl"
    res = run("attack", "--index", str(built), "-k", "2", "--arity", "2",
              str(SAMPLES / "deidentified.jsonl"), "-o", str(out))
    assert res.exit_code == 1
    for line in out.read_text().splitlines():
        rec = json.loads(line)
        assert rec["id"] in [x["doc_id"] for x in rec["links_to"]]  # source singled out
        for x in rec["links_to"]:  # each piece once, naming the views it links in
            for e in x["evidence"]:
                assert e["ngrams"] and e["views"] and len(set(e["views"])) == len(e["views"])


def test_attack_all_says_it_skips_the_semantic_attack(built: Path, tmp_path: Path) -> None:
    one = tmp_path / "one.jsonl"
    one.write_text((SAMPLES / "deidentified.jsonl").read_text().splitlines()[0] + "\n")
    res = run("attack", "--index", str(built), "--method", "all", str(one), "-o",
              str(tmp_path / "a.jsonl"))
    assert res.exit_code == 1
    assert "semantic attack is skipped" in res.stderr and "--semantic-monitor" in res.stderr
    methods = [json.loads(x)["method"] for x in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert "semantic" not in methods and "ngram" in methods
    # it ends with one summary line: per attack, how many documents link
    assert res.stderr.splitlines()[-1] == (
        "attacked 1 document(s), k=2: ngram links 1; containment links 1; ranked links 1"
    )


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("latin1.txt", "caf\xe9 au lait".encode("latin-1"), "not valid UTF-8"),
        ("bin.txt", b"\x00\x01\x02binary", "binary"),
        ("bad.jsonl", b'{"id": "a", "text": "x"}\n{oops\n', "invalid JSON"),
        ("noid.jsonl", b'{"text": "x"}\n', "needs both"),
        ("dup.jsonl", b'{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', "duplicate"),
        ("list.json", b'[1, 2]', "expected an object"),
        ("empty.jsonl", b"", "no documents"),
    ],
)
def test_bad_input_gives_one_clean_line(tmp_path: Path, name: str, content: bytes,
                                        message: str) -> None:
    if name.endswith(".txt"):
        (tmp_path / "in").mkdir()
        src = tmp_path / "in" / name
    else:
        src = tmp_path / name
    src.write_bytes(content)
    inp = src.parent if name.endswith(".txt") else src
    res = CliRunner().invoke(main, ["index", "build", str(inp), "-o", str(tmp_path / "o"),
                                    "--no-progress"])
    assert res.exit_code == 2
    assert message in res.output and "Traceback" not in res.output
    assert not (tmp_path / "o").exists()


def test_missing_and_corrupt_index(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["check", "--index", str(tmp_path), str(SAMPLES / "deidentified.jsonl")])
    assert res.exit_code == 2 and "not a presidio-delink index" in res.output


def test_folder_of_txt(tmp_path: Path) -> None:
    (tmp_path / "c" / "sub").mkdir(parents=True)
    (tmp_path / "c" / "a.txt").write_text("alpha beta")
    (tmp_path / "c" / "sub" / "b.txt").write_text("beta gamma")
    res = run("index", "build", str(tmp_path / "c"), "-o", str(tmp_path / "i"), "--no-progress")
    assert res.exit_code == 0
    res = run("index", "query", str(tmp_path / "i"), "beta")
    assert json.loads(res.output)["doc_ids"] == ["a", "sub/b"]


def test_cross_punctuation_index(tmp_path: Path) -> None:
    src = tmp_path / "c.jsonl"
    src.write_text(json.dumps({"id": "a", "text": "He was arrested. The gendarmes left."}) + "\n"
                   + json.dumps({"id": "b", "text": "He was arrested and the gendarmes left."})
                   + "\n")
    for flag, want in ((["--no-default-views", "--view", "folded"], 0), ([], 1)):
        out = tmp_path / f"i{len(flag)}"
        assert run("index", "build", str(src), "-o", str(out), "--no-progress", *flag).exit_code == 0
        doc = tmp_path / "d.jsonl"
        doc.write_text(json.dumps({"id": "q", "text": "arrested. The gendarmes"}) + "\n")
        res = run("check", "--index", str(out), "-k", "2", str(doc))
        spans = json.loads(res.stdout)["spans"]
        # the folded-cross and accent-cross views flag the phrase across the period
        assert len({(s["start"], s["end"]) for s in spans if "." in s["text"]}) == want
        assert all(s["view"].endswith("-cross") for s in spans if "." in s["text"])


@pytest.mark.parametrize("module", ["presidio_delink", "presidio_delink.cli"])
def test_runs_as_a_module(module: str) -> None:
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    assert "Usage:" in res.stdout and "delink" in res.stdout


def test_semantic_attack_caches_the_collection_and_shows_progress(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The collection is embedded through the cache next to the output (a rerun reads it)
    with a progress bar on a terminal, and the command says so."""
    import numpy as np

    import presidio_delink.eval.embeddings as emb

    calls: list[tuple[object, object]] = []

    class Fake:
        fingerprint = "fake"

        def encode(self, texts, progress=False):  # type: ignore[no-untyped-def]
            return np.ones((len(texts), 4), dtype=np.float32) / 2

        def encode_cached(self, ids, texts, cache_dir, progress=False):  # type: ignore[no-untyped-def]
            calls.append((cache_dir, progress))
            return self.encode(texts)

    monkeypatch.setattr(emb, "Embedder", Fake)
    out = tmp_path / "a.jsonl"
    res = run("attack", "--index", str(built), "--method", "semantic", "--semantic-monitor",
              str(SAMPLES / "collection.jsonl"), str(SAMPLES / "deidentified.jsonl"), "-o", str(out))
    assert res.exit_code in (0, 1), res.output
    assert calls == [(tmp_path / ".delink-embeddings", None)]
    assert "embedding the collection's 40 texts once, cached in" in res.stderr

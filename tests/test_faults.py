"""Faults against the command line: every case ends in a correct result, or one clear
``error:`` line with exit code 2; no file that existed before a run is lost; no document
text or server response body is printed.

LLM faults use the servers of ``fault_servers.py`` on 127.0.0.1. Assertions are about
behaviour (calls made, warnings emitted once, bytes on disk), never wall-clock time.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fault_servers import FaultServer

from presidio_delink import NgramIndex
from presidio_delink.cli import main
from presidio_delink.errors import LLMError
from presidio_delink.linkage import analyze
from presidio_delink.llm.base import CircuitBreaker, LLMUnavailable
from presidio_delink.llm.cache import CachedRewriter

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
TRIP_WARNING = "treating it as down"


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def assert_one_error(res: Result, *needles: str) -> str:
    """Exit code 2 and exactly one line on stderr, ``error: ...`` (returned)."""
    assert res.exit_code == 2, res.output
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    assert "Traceback" not in res.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def assert_no_temp_files(folder: Path) -> None:
    assert not [p for p in folder.rglob("*.tmp")], list(folder.rglob("*.tmp"))


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("faults") / "idx"
    res = run("index", "build", SAMPLES / "collection.jsonl", "-o", out, "--no-progress")
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def index(index_dir: Path) -> NgramIndex:
    return NgramIndex.load(index_dir)


@pytest.fixture()
def docs(tmp_path: Path) -> Path:
    """Three de-identified sample documents (linkable as they are)."""
    lines = (SAMPLES / "deidentified.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def texts_of(path: Path) -> dict[str, str]:
    return {
        r["id"]: r["text"]
        for r in (json.loads(x) for x in path.read_text(encoding="utf-8").splitlines())
    }


# -- files: outputs never overwrite inputs, never half-written, never lost ----------------


@pytest.mark.parametrize("command", ["check", "attack", "delink"])
def test_output_equal_to_input_is_refused(index_dir: Path, docs: Path, command: str) -> None:
    before = docs.read_bytes()
    extra = ["--llm", "none", "--no-progress"] if command == "delink" else []
    res = run(command, "--index", index_dir, *extra, docs, "-o", docs)
    assert_one_error(res, "--output", "input")
    assert docs.read_bytes() == before


def test_output_through_a_symlink_or_hard_link_to_an_input_is_refused(
    index_dir: Path, docs: Path, tmp_path: Path
) -> None:
    before = docs.read_bytes()
    (tmp_path / "link.jsonl").symlink_to(docs)
    os.link(docs, tmp_path / "hard.jsonl")
    for out in ("link.jsonl", "hard.jsonl"):
        res = run("check", "--index", index_dir, docs, "-o", tmp_path / out)
        assert_one_error(res, "input")
    # and the other way round: the input given through the link
    res = run("check", "--index", index_dir, tmp_path / "link.jsonl", "-o", docs)
    assert_one_error(res, "input")
    assert docs.read_bytes() == before


def test_output_inside_an_input_folder_is_refused(index_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "texts"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("alpha beta", encoding="utf-8")
    before = snapshot(tmp_path)
    for out in (folder / "out.txt", folder / "sub" / "out.jsonl"):
        res = run("delink", "--index", index_dir, "--llm", "none", "--no-progress", folder,
                  "-o", out)
        assert_one_error(res, "inside the input folder")
        res = run("check", "--index", index_dir, folder, "-o", out)
        assert_one_error(res, "inside the input folder")
    assert snapshot(tmp_path) == before


def test_output_into_the_index_or_over_the_report_is_refused(
    index_dir: Path, docs: Path, tmp_path: Path
) -> None:
    before = snapshot(index_dir)
    res = run("check", "--index", index_dir, docs, "-o", index_dir / "meta.json")
    assert_one_error(res, "index")
    assert snapshot(index_dir) == before
    out = tmp_path / "out.jsonl"
    res = run("delink", "--index", index_dir, "--llm", "none", "--no-progress", docs, "-o", out,
              "--report", out)
    assert_one_error(res, "--output", "--report", "same file")
    assert not out.exists()
    res = run("delink", "--index", index_dir, "--llm", "none", "--no-progress", docs, "-o",
              tmp_path, "--report", tmp_path / "r.html")
    assert_one_error(res, "folder")


def test_delink_llm_cache_cannot_be_an_input(index_dir: Path, docs: Path, tmp_path: Path) -> None:
    before = docs.read_bytes()
    res = run("delink", "--index", index_dir, "--llm", "none", "--no-progress", "--cache", docs,
              docs, "-o", tmp_path / "o.jsonl")
    assert_one_error(res, "--cache")
    assert docs.read_bytes() == before


@pytest.mark.parametrize(
    ("second_line", "message"),
    [
        (b"{oops\n", "invalid JSON"),
        (b'{"id": "z", "text": "caf\xe9"}\n', "not valid UTF-8"),
        (b'{"id": "z", "text": "\\ud800 lone"}\n', "lone surrogate"),
        (b'{"id": "z"}\n', "needs both"),
        (b"\x00\x01binary\n", "binary"),
    ],
    ids=["bad-json", "non-utf8", "surrogate", "missing-field", "binary"],
)
@pytest.mark.parametrize("command", ["check", "attack", "delink"])
def test_failed_run_keeps_the_previous_output(
    index_dir: Path, tmp_path: Path, command: str, second_line: bytes, message: str
) -> None:
    first = (SAMPLES / "deidentified.jsonl").read_bytes().splitlines(keepends=True)[0]
    src = tmp_path / "in.jsonl"
    src.write_bytes(first + second_line)
    out, report = tmp_path / "out.jsonl", tmp_path / "report.html"
    out.write_bytes(b"previous output\n")
    report.write_bytes(b"<p>previous report</p>")
    before = snapshot(tmp_path)
    extra: list[str | Path] = []
    if command == "delink":
        extra = ["--llm", "none", "--no-progress", "--report", report]
    res = run(command, "--index", index_dir, *extra, src, "-o", out)
    assert_one_error(res, f"{src}:2", message)
    assert snapshot(tmp_path) == before  # nothing lost, nothing half-written
    assert_no_temp_files(tmp_path)


def test_crash_mid_run_keeps_the_previous_output(
    index_dir: Path, docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import presidio_delink.linkage as linkage

    calls = {"n": 0}
    real = linkage.analyze

    def flaky(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("boom: the secret text of a document")
        return real(*args, **kwargs)

    monkeypatch.setattr(linkage, "analyze", flaky)
    out = tmp_path / "out.jsonl"
    out.write_bytes(b"previous output\n")
    line = assert_one_error(run("check", "--index", index_dir, docs, "-o", out), "RuntimeError")
    assert "secret" not in line  # an unexpected message may quote text: not printed
    assert out.read_bytes() == b"previous output\n"
    assert_no_temp_files(tmp_path)


def test_outputs_are_private_and_complete(index_dir: Path, docs: Path, tmp_path: Path) -> None:
    out, report, cache = tmp_path / "o.jsonl", tmp_path / "r.html", tmp_path / "c.sqlite"
    out.write_bytes(b"old\n")
    os.chmod(out, 0o644)
    res = run("delink", "--index", index_dir, "--llm", "none", "--no-progress", docs, "-o", out,
              "--report", report)
    assert res.exit_code == 3, res.output  # written; ranked search finds the sources
    assert mode_of(out) == 0o600 and mode_of(report) == 0o600
    assert len(texts_of(out)) == 3 and "<html" in report.read_text(encoding="utf-8")
    check_out = tmp_path / "check.jsonl"
    res = run("check", "--index", index_dir, docs, "-o", check_out)
    assert res.exit_code == 1 and mode_of(check_out) == 0o600
    assert len(check_out.read_text(encoding="utf-8").splitlines()) == 3
    CachedRewriter(_Fixed(), cache).close()
    assert mode_of(cache) == 0o600
    assert_no_temp_files(tmp_path)


def test_output_through_a_symlink_replaces_its_target(
    index_dir: Path, docs: Path, tmp_path: Path
) -> None:
    target = tmp_path / "real.jsonl"
    target.write_bytes(b"old\n")
    (tmp_path / "link.jsonl").symlink_to(target)
    res = run("check", "--index", index_dir, docs, "-o", tmp_path / "link.jsonl")
    assert res.exit_code == 1
    assert (tmp_path / "link.jsonl").is_symlink()
    assert len(target.read_text(encoding="utf-8").splitlines()) == 3


def test_output_into_a_missing_folder(index_dir: Path, docs: Path, tmp_path: Path) -> None:
    assert_one_error(
        run("check", "--index", index_dir, docs, "-o", tmp_path / "no" / "such" / "o.jsonl"),
        "cannot write",
    )


# -- input ------------------------------------------------------------------------------


def test_duplicate_keys_in_a_json_object_are_refused(index_dir: Path, tmp_path: Path) -> None:
    src = tmp_path / "docs.json"
    src.write_text('{"a": "one text", "b": "two", "a": "another text"}', encoding="utf-8")
    for args in (["check", "--index", index_dir, src],
                 ["index", "build", src, "-o", tmp_path / "i", "--no-progress"]):
        assert_one_error(run(*args), "duplicate key 'a'")
    assert not (tmp_path / "i").exists()
    rec = tmp_path / "rec.jsonl"
    rec.write_text('{"id": "a", "text": "x", "text": "y"}\n', encoding="utf-8")
    assert_one_error(run("check", "--index", index_dir, rec), f"{rec}:1", "duplicate key")


def test_lone_surrogate_names_the_record(index_dir: Path, tmp_path: Path) -> None:
    src = tmp_path / "docs.json"
    src.write_text('{"fine": "text", "bad one": "x \\udc80 y"}', encoding="utf-8")
    out = tmp_path / "o.jsonl"
    line = assert_one_error(
        run("delink", "--index", index_dir, "--llm", "none", "--no-progress", src, "-o", out),
        "'bad one'",
        "lone surrogate",
    )
    assert "UnicodeEncodeError" not in line
    assert not out.exists()
    src2 = tmp_path / "ids.jsonl"
    src2.write_text('{"id": "\\ud800", "text": "x"}\n', encoding="utf-8")
    assert_one_error(run("check", "--index", index_dir, src2), f"{src2}:1", "lone surrogate")


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.jsonl", b"", None),
        ("blank.jsonl", b"\n\n  \n", None),
        ("bin.jsonl", b"\x00\x01\x02", "binary"),
        ("latin1.jsonl", '{"id": "a", "text": "café"}'.encode("latin-1"), "not valid UTF-8"),
        ("bad.json", b'{"a": "x",}', "invalid JSON"),
        ("deep.json", b"[" * 100_000 + b"]" * 100_000, "JSON"),
        ("list.json", b"[1, 2]", "expected an object"),
        ("noid.jsonl", b'{"text": "x"}\n', "needs both"),
        ("badid.jsonl", b'{"id": [1], "text": "x"}\n', "'id' must be"),
        ("badtext.jsonl", b'{"id": "a", "text": 5}\n', "'text' must be"),
        ("scalar.json", b'"just a string"', "expected a JSON object"),
        ("nonstr.json", b'{"a": 5}', "not a string"),
    ],
)
def test_bad_input_to_check(
    index_dir: Path, tmp_path: Path, name: str, content: bytes, message: str | None
) -> None:
    src = tmp_path / name
    src.write_bytes(content)
    res = run("check", "--index", index_dir, src)
    if message is None:  # nothing to check: a correct, empty result
        assert res.exit_code == 0 and res.stdout == ""
    else:
        assert_one_error(res, message)


def test_missing_input_and_symlink_loops(index_dir: Path, tmp_path: Path) -> None:
    assert_one_error(run("check", "--index", index_dir, tmp_path / "nope.jsonl"), "no such")
    (tmp_path / "self.jsonl").symlink_to(tmp_path / "self.jsonl")
    assert_one_error(run("check", "--index", index_dir, tmp_path / "self.jsonl"), "no such")
    folder = tmp_path / "c"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("alpha beta", encoding="utf-8")
    (folder / "sub" / "loop").symlink_to(folder, target_is_directory=True)
    (folder / "dangling.txt").symlink_to(tmp_path / "gone.txt")
    res = run("check", "--index", index_dir, folder)
    assert res.exit_code == 0, res.output  # the loop is not followed, the dangling link skipped
    assert [json.loads(x)["id"] for x in res.stdout.splitlines()] == ["a"]


def test_huge_documents(index_dir: Path, tmp_path: Path) -> None:
    words = (SAMPLES / "deidentified.jsonl").read_text(encoding="utf-8").split()[:400]
    big = " ".join(words * 100)  # ~40 k words
    src = tmp_path / "big.json"
    src.write_text(json.dumps({"big": big}), encoding="utf-8")
    res = run("check", "--index", index_dir, src)
    assert res.exit_code == 1 and json.loads(res.stdout)["linkable"] is True
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps({"huge": "x " * 2_600_000}), encoding="utf-8")
    out = tmp_path / "o.jsonl"
    res = run("delink", "--index", index_dir, "--llm", "none", "--no-progress", huge, "-o", out)
    assert res.exit_code == 1  # documented: that document failed, and says why
    rec = json.loads(out.read_text(encoding="utf-8"))
    assert rec["failed"] and rec["text"] is None and "max_chars" in rec["error"]


# -- LLM servers: remote, hanging, garbage, echoing -------------------------------------


@pytest.mark.parametrize(
    ("llm", "env"),
    [
        ("ollama:m", {"OLLAMA_HOST": "http://evil.localhost:11434"}),
        ("ollama:m", {"OLLAMA_HOST": "http://10.1.2.3:11434"}),
        ("openai:http://192.0.2.1:8080#m", {}),
        ("openai:http://evil.localhost:8080#m", {}),
    ],
)
def test_remote_llm_hosts_are_refused(
    index_dir: Path, docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    llm: str, env: dict[str, str],
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "o.jsonl"
    res = run("delink", "--index", index_dir, "--llm", llm, "--no-progress", docs, "-o", out)
    assert_one_error(res, "loopback", "--allow-remote")
    assert not out.exists()


def _llm_args(kind: str, url: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    if kind == "ollama":
        monkeypatch.setenv("OLLAMA_HOST", url)
        return ["--llm", "ollama:m", "--rewrite", "generate"]
    return ["--llm", f"openai:{url}#m", "--rewrite", "generate"]


def _assert_linkage_free(index: NgramIndex, out: Path, docs: Path) -> list[dict]:  # type: ignore[type-arg]
    recs = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in recs] == list(texts_of(docs))  # every document has its line
    for r in recs:
        assert not r["failed"] and r["linkable_after"] is False
        assert not analyze(index, r["text"], k=2).linkable
    return recs


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("kind", ["ollama", "openai"])
def test_hanging_server_trips_the_breaker(
    index: NgramIndex, index_dir: Path, docs: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, kind: str,
) -> None:
    out = tmp_path / "o.jsonl"
    with FaultServer("hang") as srv:
        args = _llm_args(kind, srv.url, monkeypatch)
        with caplog.at_level(logging.INFO, logger="presidio_delink"):
            res = run("delink", "--index", index_dir, *args, "--llm-timeout", "0.5",
                      "--llm-concurrency", "1", "--no-progress", docs, "-o", out)
        posts = srv.posts
    assert res.exit_code == 3, res.output  # written; ranked search finds the sources
    assert posts == 3  # one request per call (no retry after a timeout), then down
    recs = _assert_linkage_free(index, out, docs)
    assert sum(r["llm_calls"] for r in recs) == 3
    assert all(r["warnings"] for r in recs)
    assert [w for w in _warnings(caplog) if TRIP_WARNING in w] == _warnings(caplog)
    assert len(_warnings(caplog)) == 1  # ONE warning for the whole run
    assert "3 calls in a row" in _warnings(caplog)[0]
    assert "did not answer within 0.5 s" in _warnings(caplog)[0]


@pytest.mark.parametrize("kind", ["ollama", "openai"])
def test_hanging_server_with_concurrency_trips_the_breaker_once(
    index: NgramIndex, index_dir: Path, docs: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, kind: str,
) -> None:
    """With 4 requests in flight (the default for servers), the calls already sent when the
    breaker trips fail too, but nothing is sent after, and the run warns once."""
    out = tmp_path / "o.jsonl"
    strict_out = tmp_path / "s.jsonl"
    with FaultServer("hang") as srv:
        args = _llm_args(kind, srv.url, monkeypatch)
        with caplog.at_level(logging.WARNING, logger="presidio_delink"):
            res = run("delink", "--index", index_dir, *args, "--llm-timeout", "0.5",
                      "--no-progress", docs, "-o", out)
        posts = srv.posts
        warnings = _warnings(caplog)
        strict = run("delink", "--index", index_dir, *args, "--llm-timeout", "0.5", "--strict",
                     "--no-progress", docs, "-o", strict_out)
        strict_posts = srv.posts - posts
    assert res.exit_code == 3, res.output  # written; ranked search finds the sources
    assert 3 <= posts <= 3 + 4 - 1
    _assert_linkage_free(index, out, docs)
    assert len(warnings) == 1 and TRIP_WARNING in warnings[0]
    assert_one_error(strict, "did not answer within 0.5 s")
    assert 1 <= strict_posts <= 4  # the requests in flight; none started after the failure
    assert not strict_out.exists()


@pytest.mark.parametrize("kind", ["ollama", "openai"])
def test_hanging_server_with_strict_fails_at_once(
    index_dir: Path, docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    out = tmp_path / "o.jsonl"
    out.write_bytes(b"previous output\n")
    with FaultServer("hang") as srv:
        args = _llm_args(kind, srv.url, monkeypatch)
        res = run("delink", "--index", index_dir, *args, "--llm-timeout", "0.5", "--strict",
                  "--llm-concurrency", "1", "--no-progress", docs, "-o", out)
        posts = srv.posts
    first_id = next(iter(texts_of(docs)))
    assert_one_error(res, repr(first_id), "did not answer within 0.5 s")
    assert posts == 1
    assert out.read_bytes() == b"previous output\n"
    assert_no_temp_files(tmp_path)


@pytest.mark.parametrize("kind", ["ollama", "openai"])
def test_http_200_with_a_non_json_body_is_a_failed_call(
    index: NgramIndex, index_dir: Path, docs: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, kind: str,
) -> None:
    out = tmp_path / "o.jsonl"
    with FaultServer("garbage") as srv:
        args = _llm_args(kind, srv.url, monkeypatch)
        with caplog.at_level(logging.WARNING, logger="presidio_delink"):
            res = run("delink", "--index", index_dir, *args, "--llm-concurrency", "1",
                      "--no-progress", docs, "-o", out)
        posts = srv.posts
    assert res.exit_code == 3, res.output  # written; ranked search finds the sources
    assert posts == 3  # a malformed answer is not retried: 3 failed calls, then down
    _assert_linkage_free(index, out, docs)
    assert len(_warnings(caplog)) == 1 and "malformed" in _warnings(caplog)[0]
    assert "Bad Gateway" not in res.output + " ".join(_warnings(caplog))


@pytest.mark.parametrize("kind", ["ollama", "openai"])
@pytest.mark.parametrize("status", [400, 500])
def test_error_body_echoing_the_prompt_is_never_printed(
    index: NgramIndex, index_dir: Path, docs: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, kind: str, status: int,
) -> None:
    out = tmp_path / "o.jsonl"
    out.write_bytes(b"previous output\n")
    with FaultServer("echo", status=status) as srv:
        args = _llm_args(kind, srv.url, monkeypatch)
        with caplog.at_level(logging.INFO, logger="presidio_delink"):
            strict = run("delink", "--index", index_dir, *args, "--strict", "--no-progress",
                         "--llm-concurrency", "1", docs, "-o", out)
            assert out.read_bytes() == b"previous output\n"
            lenient = run("delink", "--index", index_dir, *args, "--no-progress", docs,
                          "--llm-concurrency", "1", "-o", out)
        contexts = srv.contexts()
        posts = srv.posts
    first_id = next(iter(texts_of(docs)))
    assert_one_error(strict, f"HTTP {status}", repr(first_id))
    assert lenient.exit_code == 3  # written; ranked search finds the sources
    _assert_linkage_free(index, out, docs)
    attempts = 3 if status == 500 else 1  # 5xx is retried twice within one call
    assert posts == attempts + 3 * attempts  # strict: one call; lenient: three, then down
    shown = strict.output + lenient.output + "\n".join(
        r.getMessage() for r in caplog.records if r.levelno >= logging.INFO
    )
    assert contexts and all(c not in shown for c in contexts)
    assert "bad request" not in shown


def test_llm_timeout_must_be_positive(index_dir: Path, docs: Path, tmp_path: Path) -> None:
    for bad in ("0", "-1", "soon"):
        res = run("delink", "--index", index_dir, "--llm", "none", "--llm-timeout", bad, docs,
                  "-o", tmp_path / "o.jsonl")
        assert res.exit_code == 2 and "--llm-timeout" in res.output
    assert not (tmp_path / "o.jsonl").exists()


# -- the circuit breaker and the embedded backend's timeout, as units --------------------


class _Fixed:
    name = "fixed"

    def rewrite(self, context: str, spans: list[str]) -> dict[str, str]:
        return {s: "something" for s in spans}


class _Scripted:
    """Fails or answers as scripted: True = answer, an exception = raise it."""

    name = "scripted"

    def __init__(self, script: list[object]) -> None:
        self.script = list(script)
        self.calls = 0

    def rewrite(self, context: str, spans: list[str]) -> dict[str, str]:
        self.calls += 1
        step = self.script.pop(0) if self.script else True
        if isinstance(step, BaseException):
            raise step
        return {s: "x" for s in spans}


def test_breaker_counts_consecutive_failures_only(caplog: pytest.LogCaptureFixture) -> None:
    err = LLMError("down")
    inner = _Scripted([err, err, True, err, err, ValueError("bad answer"), True])
    breaker = CircuitBreaker(inner)
    outcomes = []
    with caplog.at_level(logging.WARNING):
        for _ in range(8):
            try:
                breaker.rewrite("c", ["s"])
                outcomes.append("ok")
            except LLMUnavailable:
                outcomes.append("down")
            except LLMError:
                outcomes.append("fail")
    # a success resets the streak; a non-LLMError is a failed call too
    assert outcomes == ["fail", "fail", "ok", "fail", "fail", "fail", "down", "down"]
    assert inner.calls == 6 and breaker.calls == 6 and breaker.failures == 5
    assert len(_warnings(caplog)) == 1 and "bad answer" not in _warnings(caplog)[0]
    breaker.reset()
    assert breaker.rewrite("c", ["s"]) == {"s": "x"}


def test_cached_answers_survive_a_down_backend() -> None:
    inner = _Scripted([True] + [LLMError("down")] * 3)
    cached = CachedRewriter(CircuitBreaker(inner))
    assert cached.rewrite("c", ["s"]) == {"s": "x"}
    for i in range(3):
        with pytest.raises(LLMError):
            cached.rewrite(f"c{i}", ["s"])
    with pytest.raises(LLMUnavailable):
        cached.rewrite("new", ["s"])
    assert cached.rewrite("c", ["s"]) == {"s": "x"}  # from the cache
    assert inner.calls == 4


class _SlowEngine:
    def __init__(self, seconds: float) -> None:
        import threading

        self.seconds = seconds
        self.started = 0
        self.done = threading.Event()

    def handle_chat_completions(self, request: dict) -> dict:  # type: ignore[type-arg]
        import time

        self.started += 1
        if self.started == 1:
            time.sleep(self.seconds)
            self.done.set()
        return {"choices": [{"message": {"content": '{"s": "x"}'}}]}


def test_embedded_call_is_bounded_by_its_timeout(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    from presidio_delink.llm.embedded import EmbeddedRewriter

    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF")
    rw = EmbeddedRewriter(gguf, timeout=0.2)
    engine = _SlowEngine(seconds=1.0)
    rw._server = engine  # a loaded engine that takes 1 s on its first call
    with pytest.raises(LLMError, match="did not finish within 0.2 s"):
        rw.rewrite("c s", ["s"])
    assert not engine.done.is_set()  # we did not wait for it
    engine.done.wait(5)
    assert rw.rewrite("c s", ["s"]) == {"s": "x"}  # the engine is usable again


class _RecordingEngine:
    def __init__(self) -> None:
        self.requests: list[dict] = []  # type: ignore[type-arg]

    def handle_chat_completions(self, request: dict) -> dict:  # type: ignore[type-arg]
        self.requests.append(request)
        return {
            "choices": [{"message": {"content": '{"1":"x"}'}}],
            "timings": {"prompt_n": 40, "cache_n": 500, "predicted_n": 4},
        }


def test_embedded_sends_a_compact_json_grammar(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    from presidio_delink.llm.embedded import EmbeddedRewriter

    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF")
    rw = EmbeddedRewriter(gguf)
    engine = _RecordingEngine()
    rw._server = engine
    assert rw.rewrite("c ⟦s⟧", ["s"]) == {"s": "x"}
    assert rw.usage.snapshot() == (540, 500, 4, 1)  # llama.cpp's timings, the cache counted
    (request,) = engine.requests
    # a grammar, not a json_schema: llama.cpp's chat endpoint drops the x-guidance key
    assert "json_schema" not in request
    grammar = request["grammar"]
    assert "whitespace_flexible" in grammar and '"required":["s"]' in grammar
    assert rw.options["json"] == "compact"  # part of cache keys


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(key, raising=False)
    yield


# -- a rewrite may not bring back part of removed PII (end to end) ----------------------


class _PiiEngine:
    """An Ollama-compatible engine answering every span with ``reply``."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.calls = 0

    def chat_completion(self, request: dict) -> dict:  # type: ignore[type-arg]
        self.calls += 1
        props = (request.get("json_schema") or {}).get("properties") or {}
        content = json.dumps({n: self.reply for n in props}, ensure_ascii=False)
        return {"choices": [{"finish_reason": "stop", "message": {"content": content}}]}

    def completion(self, request: dict) -> dict:  # type: ignore[type-arg]
        return {"choices": [{"finish_reason": "stop", "text": ""}]}


@pytest.mark.parametrize("reply", ["smith", "j\u043ehn sm\u0456th", "the SM\u0130TH family"])
def test_part_of_removed_pii_does_not_come_back(
    index: NgramIndex, index_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    reply: str,
) -> None:
    from ollama_compat_server import OllamaCompatServer

    first = json.loads((SAMPLES / "deidentified.jsonl").read_text(encoding="utf-8")
                       .splitlines()[0])
    text = "Mr John Smith was detained by gendarmes. " + first["text"][:1200]
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "d", "text": text}) + "\n", encoding="utf-8")
    out = tmp_path / "o.jsonl"
    engine = _PiiEngine(reply)
    with OllamaCompatServer(engine, model="m") as srv:
        monkeypatch.setenv("OLLAMA_HOST", srv.url)
        res = run("delink", "--index", index_dir, "--llm", "ollama:m", "--rewrite", "generate", "--redact-pii",
                  "--no-progress", src, "-o", out)
    assert res.exit_code == 0, res.output
    rec = json.loads(out.read_text(encoding="utf-8"))
    assert rec["pii_redacted"] >= 1 and engine.calls > 0
    assert not analyze(index, rec["text"], k=2).linkable
    from presidio_delink.edits import fold_words
    from presidio_delink.text import Tokenizer

    words = fold_words(rec["text"], Tokenizer())
    assert not {"smith", "john"} & set(words) and "srnith" not in words  # (folded "smith")
    llm = [a for a in rec["audit"] if a["pass_no"] == 1 and a["method"] != "generalised"]
    assert llm and all(a["method"] == "redacted" for a in llm)
    reasons = {a["reason"] for a in llm}
    pii_reasons = {"reintroduces part of redacted PII", "reintroduces redacted PII"}
    # a reply that also holds the span's own words is refused for that first
    assert reasons & pii_reasons and reasons <= pii_reasons | {"repeats the span"}

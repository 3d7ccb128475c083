"""``presidio-delink serve``: a real server on 127.0.0.1 (a free port) in a subprocess,
sent each bad input and fault of issue 59; its ``/delink`` output compared with the
``delink`` CLI's on the samples.

Worker states are set with signals, not waits: a worker stopped with SIGSTOP holds the
request dispatched to it until SIGCONT or SIGKILL, and ``/health``'s ``busy`` says when
the requests have arrived.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fault_servers import FaultServer
from service_process import ServiceProcess

from presidio_delink.cli import main
from presidio_delink.cli.delink_cmd import delink as delink_command
from presidio_delink.cli.serve_cmd import NOT_FROM_DELINK
from presidio_delink.service.errors import ApiError, status_of
from presidio_delink.service.openapi import openapi

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
MARKER = "Quixotrelleborgian"  # a word of no collection document: never logged
TOKEN = "s3cret-token-of-the-tests-0123456789"
MAX_CHARS = 30_000


def _deid() -> list[dict[str, str]]:
    lines = (SAMPLES / "deidentified.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(x) for x in lines if x.strip()]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("svc") / "index"
    res = CliRunner().invoke(main, ["index", "build", str(SAMPLES / "collection.jsonl"),
                                    "-o", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture(scope="module")
def token_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tok") / "token"
    path.write_text(TOKEN + "\n")
    return path


@pytest.fixture(scope="module")
def server(index_dir: Path, token_file: Path) -> Iterator[ServiceProcess]:
    """Two workers, --llm none, a token, --max-chars; INFO logs."""
    with ServiceProcess(["--index", index_dir, "--llm", "none", "--workers", "2",
                         "--token-file", token_file, "--max-chars", MAX_CHARS]) as srv:
        yield srv


AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _post(srv: ServiceProcess, path: str, body: Any, **kw: Any) -> tuple[int, Any]:
    return srv.request("POST", path, body, {**AUTH, **kw.pop("headers", {})}, **kw)


def _wait_busy(srv: ServiceProcess, n: int) -> None:
    """Until ``n`` jobs are running or queued (the requests have reached the pool)."""
    for _ in range(2000):
        if srv.request("GET", "/health")[1]["busy"] >= n:
            return
        time.sleep(0.01)
    raise AssertionError(f"{n} requests never reached the workers")


def _in_thread(func: Any, *args: Any, **kw: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(func(*args, **kw)), daemon=True)
    t.start()
    return t, out


# -- identity and answers ------------------------------------------------------------
def test_health_names_the_index(server: ServiceProcess) -> None:
    status, body = server.request("GET", "/health")
    assert status == 200 and body["status"] == "ok"
    idx = body["index"]
    assert idx["documents"] == 40 and idx["groups"] == 40
    assert len(idx["digest"]) == 64 and "surface" in idx["views"]
    assert body["k"] == 2 and body["workers"] == 2 and body["max_chars"] == MAX_CHARS


def test_openapi_describes_the_routes(server: ServiceProcess) -> None:
    status, spec = server.request("GET", "/openapi.json")
    assert status == 200 and spec["openapi"].startswith("3.")
    assert set(spec["paths"]) == {"/health", "/check", "/delink"}
    assert spec["paths"]["/delink"]["post"]["security"] == [{"bearer": []}]
    delink = spec["components"]["schemas"]["DelinkRequest"]["properties"]
    assert set(delink) == {"text", "id", "source_id", "return_audit"}
    assert spec == openapi({"k": 2, "max_chars": MAX_CHARS}, auth=True)


def test_check_gives_analyzer_results(server: ServiceProcess) -> None:
    text = _deid()[0]["text"]
    status, body = _post(server, "/check", {"text": text})
    assert status == 200 and body["linkable"] is True and body["k"] == 2
    for r in body["results"]:
        assert r["entity_type"] == "LINKABLE_NGRAM"
        assert 0 <= r["start"] < r["end"] <= len(text)
        assert 0.6 <= r["score"] <= 1.0 and r["df"] >= 1 and r["view"] in r["views"]
    status, clean = _post(server, "/check", {"text": "the court", "k": 2})
    assert status == 200 and clean == {**clean, "linkable": False, "results": []}


def test_delink_is_the_cli_output(server: ServiceProcess, index_dir: Path,
                                  tmp_path: Path) -> None:
    """Each sample's text, edits, audit, fingerprint and source ranks equal the record
    ``delink`` writes for it with the same options."""
    out = tmp_path / "cli.jsonl"
    res = CliRunner().invoke(main, ["delink", "--index", str(index_dir), "--llm", "none",
                                    "--max-chars", str(MAX_CHARS), "--no-progress",
                                    str(SAMPLES / "deidentified.jsonl"), "-o", str(out)])
    assert res.exit_code in (0, 3), res.output
    records = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 5
    for rec, doc in zip(records, _deid(), strict=True):
        status, body = _post(server, "/delink", {"text": doc["text"], "id": doc["id"],
                                                 "return_audit": True})
        assert status == 200
        assert body["text"].encode() == rec["text"].encode()  # byte-identical
        assert body["audit"] == rec["audit"]
        assert body["made_by"] == rec["made_by"] and body["input_sha256"] == rec["input_sha256"]
        assert body["risk"]["source_ranks"] == rec["source_ranks"]
        assert body["source_known"] is True and body["linkable_after"] is False
        for item in body["items"]:
            assert body["text"][item["start"]:item["end"]] == item["text"]
            assert item["operator"] == "delink" and item["entity_type"] == "LINKABLE_NGRAM"
        # without return_audit the removed phrases stay out of the answer
        status, plain = _post(server, "/delink", {"text": doc["text"], "id": doc["id"]})
        assert status == 200 and "audit" not in plain and plain["text"] == body["text"]


def test_delink_without_a_known_source(server: ServiceProcess) -> None:
    doc = _deid()[1]
    status, body = _post(server, "/delink", {"text": doc["text"], "id": "mine-1",
                                             "source_id": "not-in-the-collection"})
    assert status == 200 and body["source_known"] is False and body["risk"] is None
    _status, known = _post(server, "/delink", {"text": doc["text"], "id": "mine-1",
                                               "source_id": doc["id"]})
    assert known["risk"]["verdict"] in ("exposed", "crowded")


# -- bad input: a JSON error with one line, and the server stays up -------------------
BAD_400 = [
    (b"{not json", "not valid JSON"),
    (b'{"text": "caf\xc3', "not valid UTF-8"),
    (b'{"text": "\xff\xfe"}', "not valid UTF-8"),
    (b'["text"]', "JSON object"),
    (b'{"id": "a"}', "missing field 'text'"),
    (b'{"text": 12}', "'text' must be a string"),
    (b'{"text": null}', "'text' must be a string"),
    (b'{"text": "a", "id": 5}', "'id' must be a string"),
    (b'{"text": "a", "return_audit": "yes"}', "'return_audit' must be true or false"),
    (b'{"text": "a", "source": "x"}', "unknown field"),
    (b'{"text": "\\ud800 x"}', "unpaired surrogate"),
    (b"", "not valid JSON"),
]


@pytest.mark.parametrize(("body", "why"), BAD_400)
def test_bad_input_is_400(server: ServiceProcess, body: bytes, why: str) -> None:
    status, answer = _post(server, "/delink", body)
    assert status == 400 and set(answer) == {"error"}
    assert why in answer["error"] and "\n" not in answer["error"]


@pytest.mark.parametrize(("body", "why"), [
    ({"text": "a", "k": "3"}, "'k' must be an integer"),
    ({"text": "a", "k": True}, "'k' must be an integer"),
    ({"text": "a", "k": 1}, "'k' must be in 2..40"),
    ({"text": "a", "k": 41}, "'k' must be in 2..40"),
])
def test_bad_k_is_400(server: ServiceProcess, body: dict[str, Any], why: str) -> None:
    status, answer = _post(server, "/check", body)
    assert status == 400 and why in answer["error"]


def test_over_max_chars_is_413(server: ServiceProcess) -> None:
    status, answer = _post(server, "/delink", {"text": "word " * (MAX_CHARS // 5 + 1)})
    assert status == 413 and f"--max-chars {MAX_CHARS}" in answer["error"]
    huge = b'{"text": "' + b"x" * (MAX_CHARS * 7 + 100_000) + b'"}'
    status, answer = _post(server, "/check", huge)
    assert status == 413 and "limit" in answer["error"]
    assert server.request("GET", "/health")[0] == 200


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"},
                                     {"Authorization": TOKEN},
                                     {"Authorization": f"Bearer {TOKEN}x"}])
def test_token_is_required(server: ServiceProcess, headers: dict[str, str]) -> None:
    for path in ("/check", "/delink"):
        status, answer = server.request("POST", path, {"text": "the court"}, headers)
        assert status == 401 and "token" in answer["error"]
    assert server.request("GET", "/health")[0] == 200  # probes need no token


def test_unknown_route_and_method(server: ServiceProcess) -> None:
    assert server.request("GET", "/anonymize")[0] == 404
    status, answer = server.request("GET", "/delink", headers=AUTH)
    assert status == 405 and "error" in answer


def test_client_disconnecting_mid_request(server: ServiceProcess) -> None:
    text = _deid()[0]["text"]
    body = json.dumps({"text": text}).encode()
    head = (f"POST /delink HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    for cut in (head[:20], head + body[:100], head + body):  # in the headers, the body, after
        with socket.create_connection(("127.0.0.1", server.port)) as s:
            s.sendall(cut)
    status, answer = _post(server, "/delink", {"text": text})
    assert status == 200 and answer["linkable_after"] is False
    assert server.proc is not None and server.proc.poll() is None


def test_no_document_text_in_logs(server: ServiceProcess) -> None:
    text = f"The applicant {MARKER} lodged a complaint in Zqxville. " + _deid()[1]["text"]
    assert _post(server, "/check", {"text": text})[0] == 200
    status, body = _post(server, "/delink", {"text": text, "id": "m", "return_audit": True})
    assert status == 200 and body["audit"]
    removed = {a["original"] for a in body["audit"] if len(a["original"]) >= 12}
    assert removed  # phrases of the collection, returned but never logged
    assert _post(server, "/delink", {"text": text, "k": 2})[0] == 400
    assert _post(server, "/delink", {"text": text * 2000})[0] == 413
    assert _post(server, "/delink", ('{"text": "' + text).encode())[0] == 400
    log = server.log()
    assert "POST /delink 200" in log  # INFO is on
    assert MARKER not in log and "Zqxville" not in log
    assert not [p for p in removed if p in log]


def test_a_killed_worker_is_replaced_and_its_request_answered(
    server: ServiceProcess,
) -> None:
    before = server.workers()
    assert len(before) == 2
    for pid in before:  # hold both, so the request waits in one of them
        os.kill(pid, signal.SIGSTOP)
    t, out = _in_thread(_post, server, "/delink", {"text": _deid()[2]["text"]})
    try:
        _wait_busy(server, 1)
    finally:
        for pid in before:
            os.kill(pid, signal.SIGKILL)
    t.join(60)
    assert not t.is_alive()
    status, answer = out[0]
    assert status == 500 and "died" in answer["error"]
    health = server.request("GET", "/health")[1]
    assert health["workers"] == 2 and health["replaced"] >= 2
    assert not set(server.workers()) & set(before)
    assert _post(server, "/delink", {"text": _deid()[2]["text"]})[0] == 200


# -- faults ---------------------------------------------------------------------------
def test_hanging_llm_is_bounded_by_llm_timeout(index_dir: Path) -> None:
    """A hanging LLM server: the spans are redacted as in the CLI; with --strict, 503."""
    doc = _deid()[3]
    with FaultServer("hang") as llm:
        base = ["--index", index_dir, "--llm", f"openai:{llm.url}#m", "--rewrite",
                "generate", "--llm-timeout", "0.5", "--llm-concurrency", "1"]
        with ServiceProcess(base) as srv:
            status, body = srv.request("POST", "/delink", {"text": doc["text"]})
            assert status == 200 and body["linkable_after"] is False
            assert body["llm_calls"] >= 1 and body["warnings"]
            assert body["words_redacted"] > 0
        with ServiceProcess([*base, "--strict"]) as srv:
            status, body = srv.request("POST", "/delink", {"text": doc["text"]})
            assert status == 503 and "0.5 s" in body["error"]
            assert srv.request("GET", "/health")[0] == 200


def test_sigterm_drains_in_flight_requests(server: ServiceProcess) -> None:
    """Last of the module: it stops the shared server."""
    workers = server.workers()
    for pid in workers:
        os.kill(pid, signal.SIGSTOP)
    docs = _deid()
    threads = [_in_thread(_post, server, "/delink", {"text": d["text"]}) for d in docs[:3]]
    _wait_busy(server, 3)
    t0 = time.monotonic()
    assert server.proc is not None
    server.proc.send_signal(signal.SIGTERM)
    for _ in range(500):  # until the signal is handled: then /health says 503 to probes
        status, answer = server.request("GET", "/health")
        if status == 503:
            break
        time.sleep(0.01)
    assert status == 503 and "shutting down" in answer["error"]
    status, answer = _post(server, "/delink", {"text": docs[4]["text"]})
    assert status == 503 and "shutting down" in answer["error"]
    for pid in workers:
        os.kill(pid, signal.SIGCONT)
    for t, out in threads:
        t.join(60)
        assert out and out[0][0] == 200 and out[0][1]["linkable_after"] is False
    assert server.proc.wait(30) == 0
    assert time.monotonic() - t0 < 30


# -- start-up rules (no server) ---------------------------------------------------------
def test_other_hosts_need_a_token(index_dir: Path, token_file: Path) -> None:
    res = CliRunner().invoke(main, ["serve", "--index", str(index_dir), "--llm", "none",
                                    "--host", "0.0.0.0"])
    assert res.exit_code == 2 and "--token-file" in res.output
    from presidio_delink.service.server import check_host

    check_host("0.0.0.0", token_file)  # allowed with a token
    check_host("127.0.0.1", None)


def test_serve_takes_delink_options() -> None:
    delink_names = {p.name for p in delink_command.params}
    assert delink_names >= NOT_FROM_DELINK  # the exclusions name real options
    from presidio_delink.cli.serve_cmd import serve

    serve_names = {p.name for p in serve.params}
    assert delink_names - NOT_FROM_DELINK <= serve_names
    assert {"llm_spec", "strict", "llm_timeout", "max_chars", "protect", "k"} <= serve_names


def test_errors_map_once() -> None:
    from presidio_delink.errors import ConfigError, InputError, LLMError

    assert status_of(LLMError("down")).status == 503
    assert status_of(InputError("bad")).status == 400
    assert status_of(ConfigError("bad")).status == 400
    secret = status_of(ValueError(f"{MARKER} in a message"))
    assert secret.status == 500 and MARKER not in secret.message
    assert ApiError(400, "two\nlines").message == "two lines"


def test_an_open_breaker_is_retried_after_a_while(index_dir: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A server runs for months: the LLM counted as down is tried again after
    LLM_RETRY_S, not at the next request."""
    from presidio_delink.batch import LLMOptions, PIIOptions
    from presidio_delink.index import NgramIndex
    from presidio_delink.llm.base import CircuitBreaker
    from presidio_delink.service import handler as handler_mod
    from presidio_delink.settings import DelinkSettings

    class Down:
        name = "down"

        def rewrite(self, context: str, spans: list[str]) -> dict[str, Any]:
            from presidio_delink.errors import LLMError

            raise LLMError("no answer")

    h = handler_mod.Handler(NgramIndex.load(index_dir), DelinkSettings(), LLMOptions("none"),
                            PIIOptions())
    breaker = CircuitBreaker(Down(), threshold=1)
    h._breaker = breaker
    with pytest.raises(Exception):  # noqa: B017 - the breaker's own error
        breaker.rewrite("c", ["s"])
    assert breaker.down
    now = [1000.0]
    monkeypatch.setattr(handler_mod.time, "monotonic", lambda: now[0])
    h._llm_retry()  # noted as down now
    now[0] += handler_mod.LLM_RETRY_S - 1
    h._llm_retry()
    assert breaker.down
    now[0] += 2
    h._llm_retry()
    assert not breaker.down

"""`RewriterPool` (``openai:URL1,URL2#MODEL``): requests spread over servers, a server
going down loses nothing."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from presidio_delink.cli import main
from presidio_delink.errors import LLMError
from presidio_delink.llm import make_rewriter
from presidio_delink.llm.pool import RewriterPool

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


class Member:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls = 0
        self.lock = threading.Lock()

    def rewrite(self, context: str, spans: list[str]) -> dict[str, Any]:
        with self.lock:
            self.calls += 1
        if self.fail:
            raise LLMError("down")
        return {s: "x" for s in spans}


def test_requests_spread_and_a_failed_server_is_passed_over() -> None:
    a, b = Member(), Member()
    pool = RewriterPool([a, b], per_server=2)
    for _ in range(10):
        assert pool.rewrite("c", ["s"]) == {"s": "x"}
    assert a.calls == 5 and b.calls == 5  # least busy, then fewest calls
    b.fail = True
    for _ in range(6):
        assert pool.rewrite("c", ["s"]) == {"s": "x"}
    assert b.calls == 6  # tried once, then passed over while down
    assert pool.failures == [0, 1] and a.calls == 11


def test_a_request_fails_only_when_every_server_failed_it() -> None:
    pool = RewriterPool([Member(fail=True), Member(fail=True)])
    with pytest.raises(LLMError, match="all 2 LLM servers failed"):
        pool.rewrite("c", ["s"])


def test_per_server_concurrency_is_a_bound() -> None:
    gate = threading.Event()
    inflight = {"now": 0, "max": 0}
    lock = threading.Lock()

    class Slow(Member):
        def rewrite(self, context: str, spans: list[str]) -> dict[str, Any]:
            with lock:
                inflight["now"] += 1
                inflight["max"] = max(inflight["max"], inflight["now"])
            gate.wait(5)
            with lock:
                inflight["now"] -= 1
            return super().rewrite(context, spans)

    pool = RewriterPool([Slow()], per_server=2)
    threads = [threading.Thread(target=pool.rewrite, args=("c", ["s"])) for _ in range(5)]
    for t in threads:
        t.start()
    threading.Event().wait(0.3)
    gate.set()
    for t in threads:
        t.join()
    assert inflight["max"] == 2


def test_the_spec_builds_a_pool_and_the_cli_spreads_over_two_servers(
    tmp_path: Path,
) -> None:
    from ollama_compat_server import OllamaCompatServer
    from test_llm_http import FakeEngine

    rw = make_rewriter("openai:http://127.0.0.1:1,http://127.0.0.1:2#m", per_server=3)
    assert isinstance(rw.inner.inner, RewriterPool)  # type: ignore[union-attr]
    idx = tmp_path / "idx"
    assert CliRunner().invoke(main, ["index", "build", str(SAMPLES / "collection.jsonl"),
                                     "-o", str(idx), "--no-progress"]).exit_code == 0
    e1, e2 = FakeEngine(), FakeEngine()
    with OllamaCompatServer(e1, model="m") as s1, OllamaCompatServer(e2, model="m") as s2:
        res = CliRunner().invoke(main, [
            "delink", "--index", str(idx), "--no-progress", "--llm",
            f"openai:{s1.url},{s2.url}#m", "--llm-concurrency", "2", "--rewrite", "generate",
            str(SAMPLES / "deidentified.jsonl"), "-o", str(tmp_path / "o.jsonl")])
    assert res.exit_code in (0, 3), res.output
    assert e1.requests and e2.requests


def test_two_real_llama_cpp_servers_one_going_down_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xllamacpp")
    from llama_server import LlamaServer

    from presidio_delink.index import NgramIndex
    from presidio_delink.io import read_many
    from presidio_delink.llm.embedded import gguf_for
    from presidio_delink.pipeline import Delinker

    monkeypatch.setenv("OPENAI_API_KEY", "test-key-0123456789")
    gguf = str(gguf_for("smollm2"))
    idx = NgramIndex.build(read_many([SAMPLES / "collection.jsonl"]), tmp_path / "idx")
    # the first sentences of documents: two passages (two calls at once) in the first
    docs = [(i, t[: t.index(".", n) + 1]) for (i, t), n in
            zip(read_many([SAMPLES / "deidentified.jsonl"]), (1400, 300), strict=False)]
    with LlamaServer(gguf, "test-key-0123456789") as s1, \
            LlamaServer(gguf, "test-key-0123456789") as s2:
        rw = make_rewriter(f"openai:{s1.url},{s2.url}#smollm2", per_server=1, timeout=300)
        pool = rw.inner.inner  # type: ignore[union-attr]
        d = Delinker(idx, k=2, rewrite="generate", rewriter=rw, llm_concurrency=2, passes=1)
        first = d.delink(docs[0][1], docs[0][0])
        assert all(n > 0 for n in pool.calls), pool.calls  # both served
        s2.kill()  # a server goes down mid-run
        rest = [d.delink(t, i) for i, t in docs[1:]]
    results = [first, *rest]
    for r in results:
        assert not r.failed and not r.linkable_after
        assert not any("LLM" in w for w in r.warnings), r.warnings
        assert "llm error" not in json.dumps([a.reason for a in r.audit])
    assert pool.calls[0] > 0 and sum(r.llm_calls for r in rest) > 0

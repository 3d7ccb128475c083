"""HTTP backends against the Ollama-compatible test server with a fake engine (fast)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from ollama_compat_server import OllamaCompatServer

from presidio_delink.errors import LLMError
from presidio_delink.llm.ollama_backend import OllamaRewriter
from presidio_delink.llm.openai_compat import OpenAICompatRewriter

MODEL = "smollm2:135m"


class FakeEngine:
    """Answers each span with ``"a <span>"`` (or ``reply``); can fail the first calls."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail_first = 0
        self.reply: str | None = None
        self.lock = threading.Lock()

    def _answer(self, request: dict[str, Any]) -> str:
        with self.lock:
            self.requests.append(request)
            if self.fail_first > 0:
                self.fail_first -= 1
                raise RuntimeError("engine hiccup")
        if self.reply is not None:
            return self.reply
        schema = request.get("json_schema")
        if schema is None:
            rf = request.get("response_format") or {}
            schema = (rf.get("json_schema") or {}).get("schema")
        props = (schema or {}).get("properties") or {}
        return json.dumps({k: f"a {k.lower()}" for k in props})

    def chat_completion(self, request: dict[str, Any]) -> dict[str, Any]:
        content = self._answer(request)
        return {
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content},
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }

    def completion(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"choices": [{"index": 0, "finish_reason": "length", "text": "raw text"}]}


@pytest.fixture()
def engine() -> FakeEngine:
    return FakeEngine()


@pytest.fixture()
def server(engine: FakeEngine) -> Iterator[OllamaCompatServer]:
    with OllamaCompatServer(engine, model=MODEL) as srv:
        yield srv


@pytest.fixture()
def closed_port_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"


CONTEXT = "The appellant worked at the Dunmore cannery until 2016."
SPANS = ["Dunmore cannery", "until 2016"]


def test_ollama_rewriter_via_compat_server(server: OllamaCompatServer, engine: FakeEngine) -> None:
    rewriter = OllamaRewriter(MODEL, host=server.url)
    result = rewriter.rewrite(CONTEXT, SPANS)
    assert result == {"Dunmore cannery": "a dunmore cannery", "until 2016": "a until 2016"}
    request = engine.requests[-1]
    # the schema reached the engine, with greedy decoding and the fixed seed
    assert request["json_schema"]["required"] == SPANS
    assert request["temperature"] == 0 and request["seed"] == 42
    assert request["messages"][0]["role"] == "system"
    assert "\u27e6Dunmore cannery\u27e7" in request["messages"][-1]["content"]
    rewriter.close()


def test_ollama_client_endpoints(server: OllamaCompatServer) -> None:
    import ollama

    client = ollama.Client(host=server.url)
    assert [m.model for m in client.list().models] == [MODEL]
    streamed = list(
        client.chat(
            model=MODEL, messages=[{"role": "user", "content": "hi"}], format="json", stream=True
        )
    )
    assert streamed[-1].done is True
    assert streamed[-1].done_reason == "stop"
    assert "".join(part.message.content or "" for part in streamed) == "{}"
    generated = client.generate(model=MODEL, prompt="hello", raw=True, options={"num_predict": 3})
    assert generated.response == "raw text"
    assert generated.done_reason == "length"
    generated = client.generate(model=MODEL, prompt="hello", system="be brief")
    assert generated.response == "{}"
    assert httpx.get(server.url + "/api/version").json()["version"]


def test_ollama_unknown_model_fails_without_retry(
    server: OllamaCompatServer, engine: FakeEngine
) -> None:
    rewriter = OllamaRewriter("no-such-model", host=server.url, retries=2)
    with pytest.raises(LLMError, match="404"):
        rewriter.rewrite(CONTEXT, SPANS)
    assert engine.requests == []


def test_ollama_retries_server_errors(server: OllamaCompatServer, engine: FakeEngine) -> None:
    engine.fail_first = 2
    rewriter = OllamaRewriter(MODEL, host=server.url, retries=2)
    assert set(rewriter.rewrite(CONTEXT, SPANS)) == set(SPANS)
    assert len(engine.requests) == 3
    engine.fail_first = 5
    with pytest.raises(LLMError, match="500"):
        rewriter.rewrite(CONTEXT, SPANS)


def test_ollama_garbage_answer_is_llm_error(server: OllamaCompatServer, engine: FakeEngine) -> None:
    engine.reply = "I cannot help with that."
    with pytest.raises(LLMError, match="no JSON object"):
        OllamaRewriter(MODEL, host=server.url).rewrite(CONTEXT, SPANS)


def test_ollama_partial_answer(server: OllamaCompatServer, engine: FakeEngine) -> None:
    engine.reply = '{"Dunmore cannery": "a factory", "other": "x", "until 2016": 7}'
    assert OllamaRewriter(MODEL, host=server.url).rewrite(CONTEXT, SPANS) == {
        "Dunmore cannery": "a factory"
    }


def test_ollama_down_server_fails_fast(closed_port_url: str) -> None:
    rewriter = OllamaRewriter(MODEL, host=closed_port_url, retries=2, timeout=5)
    start = time.monotonic()
    with pytest.raises(LLMError, match="cannot reach Ollama"):
        rewriter.rewrite(CONTEXT, SPANS)
    assert time.monotonic() - start < 5


def test_ollama_timeout_is_llm_error(server: OllamaCompatServer, engine: FakeEngine) -> None:
    original = engine.chat_completion

    def slow(request: dict[str, Any]) -> dict[str, Any]:
        time.sleep(1.0)
        return original(request)

    engine.chat_completion = slow  # type: ignore[method-assign]
    rewriter = OllamaRewriter(MODEL, host=server.url, retries=0, timeout=0.2)
    with pytest.raises(LLMError):
        rewriter.rewrite(CONTEXT, SPANS)


def test_openai_compat_via_compat_server(server: OllamaCompatServer, engine: FakeEngine) -> None:
    rewriter = OpenAICompatRewriter(server.url, "some-model", api_key="k")
    assert rewriter.rewrite(CONTEXT, SPANS) == {
        "Dunmore cannery": "a dunmore cannery",
        "until 2016": "a until 2016",
    }
    request = engine.requests[-1]
    fmt = request["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["required"] == SPANS
    assert request["temperature"] == 0 and request["seed"] == 42
    # the answer's token counts are summed (what a server's cost is projected from)
    assert rewriter.usage.snapshot() == (10, 0, 5, 1)
    rewriter.close()


def test_openai_compat_retries_and_errors(server: OllamaCompatServer, engine: FakeEngine) -> None:
    engine.fail_first = 1
    rewriter = OpenAICompatRewriter(server.url + "/v1", "m", retries=1)
    assert set(rewriter.rewrite(CONTEXT, SPANS)) == set(SPANS)
    engine.fail_first = 2
    with pytest.raises(LLMError, match="HTTP 500"):
        rewriter.rewrite(CONTEXT, SPANS)
    engine.reply = "not json"
    with pytest.raises(LLMError):
        rewriter.rewrite(CONTEXT, SPANS)


def test_openai_compat_down_server_fails_fast(closed_port_url: str) -> None:
    rewriter = OpenAICompatRewriter(closed_port_url, "m", retries=2, timeout=5)
    start = time.monotonic()
    with pytest.raises(LLMError, match="cannot reach"):
        rewriter.rewrite(CONTEXT, SPANS)
    assert time.monotonic() - start < 5


def test_no_spans_means_no_call(server: OllamaCompatServer, engine: FakeEngine) -> None:
    assert OllamaRewriter(MODEL, host=server.url).rewrite(CONTEXT, []) == {}
    assert engine.requests == []

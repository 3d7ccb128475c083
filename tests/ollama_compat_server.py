"""A small Ollama-API-compatible HTTP server for tests, in front of an in-process engine.

The engine is anything with ``chat_completion(request) -> dict`` and ``completion(request)
-> dict`` taking and returning OpenAI-style bodies, e.g.
:class:`presidio_delink.llm.embedded.EmbeddedRewriter`. Served endpoints:

- ``GET /api/version``, ``GET /api/tags`` (one model);
- ``POST /api/chat`` and ``POST /api/generate`` (``format`` = ``"json"`` or a JSON schema,
  ``stream`` true as NDJSON or false);
- ``POST /v1/chat/completions`` (OpenAI-compatible, passed to the engine as is).

Bound to 127.0.0.1 on a random port by default. Standard library only.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "smollm2:135m"


class Engine(Protocol):
    """What the server needs from the model runner."""

    def chat_completion(self, request: dict[str, Any]) -> dict[str, Any]: ...

    def completion(self, request: dict[str, Any]) -> dict[str, Any]: ...


class HTTPError(Exception):
    """An error answer: HTTP status and Ollama-style ``{"error": message}`` body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _format_schema(fmt: Any) -> dict[str, Any] | None:
    if fmt in (None, ""):
        return None
    if fmt == "json":
        return {"type": "object"}
    if isinstance(fmt, dict):
        return fmt
    raise HTTPError(400, f"invalid format: {fmt!r}")


def _sampling(body: dict[str, Any]) -> dict[str, Any]:
    """Map Ollama ``options`` to OpenAI-style sampling fields."""
    options = body.get("options") or {}
    if not isinstance(options, dict):
        raise HTTPError(400, "options must be an object")
    out: dict[str, Any] = {"temperature": options.get("temperature", 0.8)}
    for ollama_key, openai_key in (
        ("seed", "seed"),
        ("top_p", "top_p"),
        ("top_k", "top_k"),
        ("stop", "stop"),
    ):
        if ollama_key in options:
            out[openai_key] = options[ollama_key]
    num_predict = options.get("num_predict")
    out["max_tokens"] = num_predict if isinstance(num_predict, int) and num_predict > 0 else 256
    schema = _format_schema(body.get("format"))
    if schema is not None:
        out["json_schema"] = schema
    return out


def _stats(result: dict[str, Any], elapsed_ns: int) -> dict[str, Any]:
    usage = result.get("usage") or {}
    timings = result.get("timings") or {}
    return {
        "total_duration": elapsed_ns,
        "load_duration": 0,
        "prompt_eval_count": int(usage.get("prompt_tokens", 0)),
        "prompt_eval_duration": int(float(timings.get("prompt_ms", 0)) * 1e6),
        "eval_count": int(usage.get("completion_tokens", 0)),
        "eval_duration": int(float(timings.get("predicted_ms", 0)) * 1e6),
    }


def _done_reason(choice: dict[str, Any]) -> str:
    return "length" if choice.get("finish_reason") == "length" else "stop"


class OllamaCompatServer:
    """Threaded Ollama-compatible server; use as a context manager or start()/stop().

    Args:
        engine: Model runner (see :class:`Engine`).
        model: The one model name listed and accepted.
        host: Bind address.
        port: Bind port; 0 picks a free one.
    """

    def __init__(
        self, engine: Engine, model: str = DEFAULT_MODEL, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.engine = engine
        self.model = model
        self.requests: list[tuple[str, str]] = []
        handler = type("Handler", (_Handler,), {"app": self})
        self._httpd = ThreadingHTTPServer((host, port), handler)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:54321``."""
        host, port = self._httpd.server_address[:2]
        if isinstance(host, bytes):
            host = host.decode()
        return f"http://{host}:{port}"

    def start(self) -> OllamaCompatServer:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="ollama-compat",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=10)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> OllamaCompatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- endpoints ----------------------------------------------------------------------

    def _check_model(self, body: dict[str, Any]) -> str:
        name = body.get("model")
        names = {self.model} if ":" in self.model else {self.model, f"{self.model}:latest"}
        if name not in names:
            raise HTTPError(404, f"model '{name}' not found")
        return str(name)

    def tags(self) -> dict[str, Any]:
        return {
            "models": [
                {
                    "name": self.model,
                    "model": self.model,
                    "modified_at": _now(),
                    "size": 0,
                    "digest": "0" * 64,
                    "details": {"format": "gguf", "family": "llama", "families": ["llama"]},
                }
            ]
        }

    def chat(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """Answer ``/api/chat``; returns the NDJSON parts (one when not streaming)."""
        model = self._check_model(body)
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise HTTPError(400, "messages is required")
        request = {
            "messages": [
                {"role": str(m.get("role", "user")), "content": str(m.get("content") or "")}
                for m in messages
            ],
            **_sampling(body),
        }
        start = time.monotonic_ns()
        result = self._run(self.engine.chat_completion, request)
        choice = result["choices"][0]
        content = choice.get("message", {}).get("content") or ""
        final = {
            "model": model,
            "created_at": _now(),
            "message": {"role": "assistant", "content": content},
            "done": True,
            "done_reason": _done_reason(choice),
            **_stats(result, time.monotonic_ns() - start),
        }
        if not body.get("stream", True):
            return [final]
        part = {
            "model": model,
            "created_at": final["created_at"],
            "message": {"role": "assistant", "content": content},
            "done": False,
        }
        final["message"] = {"role": "assistant", "content": ""}
        return [part, final]

    def generate(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """Answer ``/api/generate``; returns the NDJSON parts (one when not streaming)."""
        model = self._check_model(body)
        prompt = body.get("prompt")
        if not isinstance(prompt, str):
            raise HTTPError(400, "prompt is required")
        start = time.monotonic_ns()
        if body.get("raw"):
            result = self._run(self.engine.completion, {"prompt": prompt, **_sampling(body)})
            choice = result["choices"][0]
            text = choice.get("text") or ""
        else:
            messages = []
            if body.get("system"):
                messages.append({"role": "system", "content": str(body["system"])})
            messages.append({"role": "user", "content": prompt})
            request = {"messages": messages, **_sampling(body)}
            result = self._run(self.engine.chat_completion, request)
            choice = result["choices"][0]
            text = choice.get("message", {}).get("content") or ""
        final = {
            "model": model,
            "created_at": _now(),
            "response": text,
            "done": True,
            "done_reason": _done_reason(choice),
            "context": [],
            **_stats(result, time.monotonic_ns() - start),
        }
        if not body.get("stream", True):
            return [final]
        part = {"model": model, "created_at": final["created_at"], "response": text, "done": False}
        final["response"] = ""
        return [part, final]

    def openai_chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """Answer ``/v1/chat/completions`` (no streaming)."""
        if body.get("stream"):
            raise HTTPError(400, "streaming is not supported by this test server")
        request = {k: v for k, v in body.items() if k != "model"}
        result = self._run(self.engine.chat_completion, request)
        return {**result, "model": body.get("model", self.model)}

    @staticmethod
    def _run(fn: Any, request: dict[str, Any]) -> dict[str, Any]:
        try:
            result = fn(request)
        except HTTPError:
            raise
        except Exception as exc:  # engine failure -> HTTP 500
            raise HTTPError(500, f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(result, dict) or not result.get("choices"):
            raise HTTPError(500, "engine returned no choices")
        return result


class _Handler(BaseHTTPRequestHandler):
    app: OllamaCompatServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        logger.debug("compat server: " + format, *args)

    def _send(self, status: int, payload: Any, ndjson: bool = False) -> None:
        if ndjson:
            data = b"".join(json.dumps(p).encode() + b"\n" for p in payload)
            ctype = "application/x-ndjson"
        else:
            data = json.dumps(payload).encode()
            ctype = "application/json; charset=utf-8"
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError as exc:
            raise HTTPError(400, f"invalid JSON body: {exc}") from exc
        if not isinstance(body, dict):
            raise HTTPError(400, "the body must be a JSON object")
        return body

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self.app.requests.append(("GET", self.path))
        if self.path == "/api/version":
            self._send(200, {"version": "0.0.0-compat"})
        elif self.path == "/api/tags":
            self._send(200, self.app.tags())
        elif self.path in ("/", "/api"):
            self._send(200, "Ollama is running")
        else:
            self._send(404, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        self.app.requests.append(("POST", self.path))
        try:
            body = self._body()
            if self.path == "/api/chat":
                parts = self.app.chat(body)
                self._send(200, parts[0] if len(parts) == 1 else parts, ndjson=len(parts) > 1)
            elif self.path == "/api/generate":
                parts = self.app.generate(body)
                self._send(200, parts[0] if len(parts) == 1 else parts, ndjson=len(parts) > 1)
            elif self.path in ("/v1/chat/completions", "/chat/completions"):
                self._send(200, self.app.openai_chat(body))
            else:
                raise HTTPError(404, "not found")
        except HTTPError as exc:
            self._send(exc.status, {"error": exc.message})

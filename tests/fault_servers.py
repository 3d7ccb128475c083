"""Fault-injecting LLM servers on 127.0.0.1 (random free port), for the fault tests and
``benchmarks/bench_faults.py``. Standard library only.

Each server answers every POST (Ollama ``/api/chat`` or OpenAI ``/v1/chat/completions``
alike) with one fault:

- ``hang``: accepts the connection, reads the request, never answers (until stopped);
- ``garbage``: HTTP 200 with a body that is not JSON;
- ``echo``: an error status whose body echoes the request (hence the prompt, hence
  document text), as some servers do in their error messages.

``posts`` counts the requests received; ``bodies`` keeps them (decoded JSON).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODES = ("hang", "garbage", "echo")


class FaultServer:
    """Threaded HTTP server with one fault; a context manager.

    Args:
        mode: ``hang``, ``garbage`` or ``echo``.
        status: HTTP status of ``echo`` answers.
    """

    def __init__(self, mode: str, status: int = 500) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.mode = mode
        self.status = status
        self.posts = 0
        self.bodies: list[Any] = []
        self.release = threading.Event()
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"app": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def contexts(self) -> list[str]:
        """The document text of each request (between <document> tags)."""
        out = []
        for body in self.bodies:
            for msg in (body or {}).get("messages", [])[-1:]:
                content = str(msg.get("content", ""))
                if "<document>" in content:
                    out.append(content.split("<document>\n", 1)[1].split("\n</document>")[0])
        return out

    def start(self) -> FaultServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()  # lets hanging handlers finish
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=10)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    app: FaultServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def _send(self, status: int, data: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._send(200, b'{"version": "0.0.0-fault"}')

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        with self.app._lock:
            self.app.posts += 1
            self.app.bodies.append(body)
        mode = self.app.mode
        if mode == "hang":
            self.app.release.wait()
            self.close_connection = True
            return
        if mode == "garbage":
            self._send(200, b"<html><body>502 Bad Gateway (proxy)</body></html>\n")
            return
        # echo: the whole request, prompt included, in an error message
        echoed = raw.decode("utf-8", "replace")
        self._send(self.app.status, json.dumps({"error": f"bad request: {echoed}"}).encode())

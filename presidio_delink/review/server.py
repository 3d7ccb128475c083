"""The review web app: a thin Starlette layer over :class:`~.session.ReviewSession`.

Serving rules.  It listens on 127.0.0.1 only, on a free port.  Every request must carry the
session's random token (``?token=`` on pages and assets, the ``X-Review-Token`` header on
the API, so a page of another site cannot post to it) and a loopback ``Host`` header with
this port (a DNS-rebinding page names its own host); anything else gets 403 and no
content.  Pages are rendered by Jinja2 with autoescaping and a Content-Security-Policy
that allows only this app's own script and style (no inline script, no other origin), and
the script writes document text with ``textContent`` only, so HTML in a document is shown,
never run.  Assets are served from a fixed list, never from a path the client names.  The
access log is off (URLs carry the token; document text is never logged above DEBUG).
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
import socket
import threading
from importlib import resources
from typing import Any

from presidio_delink.errors import ConfigError

try:
    import jinja2
    import uvicorn
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse, Response
    from starlette.routing import Route
    from starlette.types import ASGIApp, Receive, Scope, Send
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ConfigError(
        "the review app needs the 'review' extra: pip install 'presidio-delink[review]' "
        f"(missing: {exc.name})"
    ) from exc

from presidio_delink.review.session import FILTERS, Conflict, ReviewSession

log = logging.getLogger(__name__)

__all__ = ["ReviewServer", "make_app"]

_ASSETS = {"app.js": "text/javascript", "app.css": "text/css"}
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Security-Policy": _CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
MAX_BODY = 1 << 20


class _Guard:
    """ASGI middleware: loopback Host with our port, then the token; 403 otherwise."""

    def __init__(self, app: ASGIApp, token: str, port: list[int]) -> None:
        self.app, self.token, self.port = app, token, port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if not self._host_ok(headers.get("host", "")):
            await PlainTextResponse("forbidden host", 403, headers=_HEADERS)(scope, receive, send)
            return
        given = headers.get("x-review-token", "")
        if scope["method"] == "GET" and not given:
            given = Request(scope).query_params.get("token", "")
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            await PlainTextResponse("forbidden", 403, headers=_HEADERS)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _host_ok(self, host: str) -> bool:
        name, _, port = host.rpartition(":")
        if not name:
            return False
        return name.lower() in _LOOPBACK and port == str(self.port[0])


def _asset(name: str) -> str:
    return resources.files("presidio_delink.review").joinpath("static", name).read_text("utf-8")


def make_app(session: ReviewSession, token: str, port: list[int]) -> ASGIApp:
    """The ASGI app (``port`` is a one-item list, set once the socket is bound)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("presidio_delink.review", "templates"),
        autoescape=True,
    )
    page = env.get_template("review.html")

    def ok(data: Any, status: int = 200) -> JSONResponse:
        return JSONResponse(data, status, headers=_HEADERS)

    async def index(request: Request) -> Response:
        html = page.render(
            token=token, reviewer=session.reviewer, filters=FILTERS, title=session.records_path.name
        )
        return Response(html, media_type="text/html; charset=utf-8", headers=_HEADERS)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _ASSETS:  # a fixed list: no path from the client reaches the disk
            return PlainTextResponse("not found", 404, headers=_HEADERS)
        return Response(_asset(name), media_type=_ASSETS[name], headers=_HEADERS)

    async def queue(request: Request) -> Response:
        which = request.query_params.get("filter", "all")
        if which not in FILTERS:
            return ok({"error": f"filter must be one of {', '.join(FILTERS)}"}, 400)
        return ok(await run_in_threadpool(session.queue, which))

    async def document(request: Request) -> Response:
        doc_id = request.query_params.get("id", "")
        try:
            return ok(await run_in_threadpool(session.document, doc_id))
        except KeyError:
            return ok({"error": "no such document"}, 404)

    async def act(request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_BODY:
            return ok({"error": "request too large"}, 413)
        try:
            data = json.loads(body)
            if not isinstance(data, dict):
                raise ValueError
            doc_id, version, action = str(data["id"]), data["version"], str(data["action"])
            if not isinstance(version, int):
                raise ValueError
        except (ValueError, KeyError, TypeError):
            return ok({"error": "expected JSON {id, version, action, ...}"}, 400)
        kw = {k: data.get(k) for k in ("chunk", "text", "start", "end")}
        try:
            res = await run_in_threadpool(lambda: session.act(doc_id, version, action, **kw))
        except KeyError:
            return ok({"error": "no such document"}, 404)
        except Conflict as exc:
            log.info("conflict on a document: version %d, now %d", exc.expected, exc.current)
            doc = await run_in_threadpool(session.document, doc_id)
            return ok(
                {
                    "error": "conflict: this document was changed elsewhere (another tab?); "
                    "it has been reloaded, your change was not applied",
                    "conflict": True,
                    "document": doc,
                },
                409,
            )
        except ValueError as exc:
            return ok({"error": str(exc)}, 400)
        return ok(res)

    async def export(request: Request) -> Response:
        return ok(await run_in_threadpool(session.export))

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/static/{name}", static),
            Route("/api/queue", queue),
            Route("/api/doc", document),
            Route("/api/act", act, methods=["POST"]),
            Route("/api/export", export, methods=["POST"]),
        ]
    )
    return _Guard(app, token, port)


class ReviewServer:
    """The app served on 127.0.0.1 on a free port, in this thread or a background one.

    Args:
        session: the review session.
        port: 0 for a free one.
        token: the access token (default: 32 random bytes, URL-safe).
    """

    def __init__(self, session: ReviewSession, port: int = 0, token: str | None = None) -> None:
        self.session = session
        self.token = token or secrets.token_urlsafe(32)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", port))
        self.port = self._sock.getsockname()[1]
        app = make_app(session, self.token, [self.port])
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The page's address, token included."""
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def serve_forever(self) -> None:
        """Serve until interrupted (Ctrl-C)."""
        self._server.run(sockets=[self._sock])

    def start(self) -> str:
        """Serve in a background thread; returns :attr:`url` once it answers."""
        self._thread = threading.Thread(
            target=self.serve_forever, daemon=True, name="review-server"
        )
        self._thread.start()
        for _ in range(500):
            if self._server.started:
                break
            threading.Event().wait(0.01)
        return self.url

    def stop(self) -> None:
        """Stop serving (background thread only)."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self._sock.close()

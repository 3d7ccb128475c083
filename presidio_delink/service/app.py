"""The routes: read JSON, check it, hand it to a worker, write JSON (as presidio-anonymizer's
``app.py`` does over its engine).  No delinking here: :mod:`.handler` calls the library.

* ``GET /health``: the index's identity and the settings (no token needed, for probes);
* ``POST /check``: the linkable N-grams, as presidio-analyzer's ``/analyze`` results;
* ``POST /delink``: the delinked text, as presidio-anonymizer's ``/anonymize`` response;
* ``GET /openapi.json``: the OpenAPI description (:mod:`.openapi`).

Every error is ``{"error": "<one line>"}`` (:mod:`.errors`).  The body is read up to a byte
limit (413 beyond it, before it is parsed); a ``--token-file`` token is compared in
constant time; while the server drains (SIGTERM) new requests get 503.  Logs name the
route, the status, the time and the text's length, never the text.
"""

from __future__ import annotations

import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from presidio_delink.errors import ConfigError
from presidio_delink.service.errors import ApiError
from presidio_delink.service.openapi import openapi

try:
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import Response
    from starlette.routing import Route
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ConfigError(
        "the service needs Starlette and uvicorn: pip install 'presidio-delink[service]' "
        f"(missing: {exc.name})"
    ) from exc

log = logging.getLogger(__name__)

__all__ = ["ServiceState", "make_app"]

#: Fields each route reads; any other is refused (a misspelt ``source_id`` would otherwise
#: silently drop the audit).
CHECK_FIELDS = ("text", "k")
DELINK_FIELDS = ("text", "id", "source_id", "return_audit")
#: Bytes a JSON string may take per character (``\\uXXXX``), the limit of a body being
#: ``max_chars`` times this plus room for the other fields.
_BYTES_PER_CHAR = 6
_BODY_SLACK = 64 * 1024
_JSON = "application/json"
_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}


@dataclass
class ServiceState:
    """What the routes share.

    Attributes:
        pool: the :class:`~.workers.WorkerPool` (its handler answers the jobs).
        health: the handler's :meth:`~.handler.Handler.health` (computed once).
        max_chars: the longest text (``--max-chars``, the run's ``max_chars``).
        token: the bearer token of ``--token-file``, or None (no token asked).
        draining: SIGTERM came: new requests get 503.
        inflight: requests being answered.
    """

    pool: Any
    health: dict[str, Any]
    max_chars: int
    token: str | None = None
    draining: bool = False
    inflight: int = 0

    @property
    def max_bytes(self) -> int:
        return self.max_chars * _BYTES_PER_CHAR + _BODY_SLACK


def _json(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    body = json.dumps(obj, ensure_ascii=False).encode("utf-8")
    return Response(body, status, {**_HEADERS, **(headers or {})}, media_type=_JSON)


def _error(err: ApiError) -> Response:
    return _json(err.body(), err.status, err.headers)


Handler = Callable[[Request, ServiceState], Awaitable[Response]]


def _route(state: ServiceState, func: Handler, *, auth: bool) -> Callable[[Request], Any]:
    """``func`` behind the drain check, the token and the error mapping, counted in
    flight and logged (route, status, milliseconds: no text)."""

    async def endpoint(request: Request) -> Response:
        t0 = time.perf_counter()
        if state.draining:
            resp = _error(ApiError(503, "the server is shutting down; retry on another",
                                   {"Connection": "close", "Retry-After": "5"}))
            _log(request, resp.status_code, t0)
            return resp
        state.inflight += 1
        try:
            if auth and state.token is not None:
                _authorize(request, state.token)
            resp = await func(request, state)
        except ApiError as err:
            resp = _error(err)
        except ClientDisconnect:
            resp = _error(ApiError(400, "the client disconnected before the body was read"))
        except Exception as exc:  # answered, never a traceback to the client
            log.debug("unexpected error", exc_info=True)
            resp = _error(ApiError(500, f"internal error ({type(exc).__name__})"))
        finally:
            state.inflight -= 1
        _log(request, resp.status_code, t0)
        return resp

    return endpoint


def _log(request: Request, status: int, t0: float) -> None:
    log.info("%s %s %d in %.1f ms", request.method, request.url.path, status,
             (time.perf_counter() - t0) * 1000)


def _authorize(request: Request, token: str) -> None:
    given = request.headers.get("authorization", "")
    scheme, _, value = given.partition(" ")
    ok = scheme.lower() == "bearer" and hmac.compare_digest(
        value.strip().encode("utf-8", "surrogateescape"), token.encode("utf-8")
    )
    if not ok:
        why = "missing" if not given else "wrong"
        raise ApiError(401, f"{why} token: send 'Authorization: Bearer <token of --token-file>'",
                       {"WWW-Authenticate": "Bearer"})


async def _body(request: Request, state: ServiceState, fields: tuple[str, ...]) -> dict[str, Any]:
    """The JSON object of the body, its fields checked against ``fields`` and ``text``
    against ``max_chars`` (400 or 413, saying why)."""
    limit = state.max_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"the body has {declared} bytes, more than this server's limit "
                       f"of {limit} (--max-chars {state.max_chars})")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise ApiError(413, f"the body is over this server's limit of {limit} bytes "
                           f"(--max-chars {state.max_chars})")
        chunks.append(chunk)
    raw = b"".join(chunks)
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, f"the body is not valid UTF-8 (byte {exc.start})") from None
    try:
        data = json.loads(decoded)
    except json.JSONDecodeError as exc:  # its message gives a position, never content
        raise ApiError(400, f"the body is not valid JSON: {exc.msg} at line {exc.lineno} "
                       f"column {exc.colno}") from None
    if not isinstance(data, dict):
        raise ApiError(400, "the body must be a JSON object, e.g. {\"text\": \"...\"}")
    unknown = sorted(set(data) - set(fields))
    if unknown:
        names = ", ".join(repr(n[:40]) for n in unknown[:5])
        raise ApiError(400, f"unknown field(s) {names}; this route reads "
                       + ", ".join(fields))
    if "text" not in data:
        raise ApiError(400, "missing field 'text'")
    text = data["text"]
    if not isinstance(text, str):
        raise ApiError(400, f"'text' must be a string, not {_kind(text)}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ApiError(400, f"'text' holds an unpaired surrogate escape at character "
                       f"{exc.start}: not valid Unicode") from None
    if len(text) > state.max_chars:
        raise ApiError(413, f"'text' has {len(text)} characters, more than this server's "
                       f"--max-chars {state.max_chars}")
    return data


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), "a string")


def _optional(data: dict[str, Any], name: str, kind: type, what: str) -> Any:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ApiError(400, f"'{name}' must be {what}, not {_kind(value)}")
    return value


# -- routes -------------------------------------------------------------------------
async def _health(request: Request, state: ServiceState) -> Response:
    pool = state.pool
    return _json({**state.health, "workers": len(pool.workers), "busy": pool.busy,
                  "replaced": pool.replaced, "draining": state.draining})


async def _openapi(request: Request, state: ServiceState) -> Response:
    return _json(openapi(state.health, auth=state.token is not None))


async def _check(request: Request, state: ServiceState) -> Response:
    data = await _body(request, state, CHECK_FIELDS)
    k = _optional(data, "k", int, "an integer")
    groups = state.health["index"]["groups"]
    if k is not None and not 2 <= k <= groups:
        raise ApiError(400, f"'k' must be in 2..{groups} (the index's groups), got {k}")
    t0 = time.perf_counter()
    out, waited = await state.pool.submit("check", text=data["text"], k=k)
    out["timings"] = {"queue_seconds": round(waited, 4),
                      "total_seconds": round(time.perf_counter() - t0, 4)}
    return _json(out)


async def _delink(request: Request, state: ServiceState) -> Response:
    data = await _body(request, state, DELINK_FIELDS)
    doc_id = _optional(data, "id", str, "a string") or ""
    source_id = _optional(data, "source_id", str, "a string")
    audit = _optional(data, "return_audit", bool, "true or false") or False
    t0 = time.perf_counter()
    out, waited = await state.pool.submit(
        "delink", text=data["text"], doc_id=doc_id, source_id=source_id, return_audit=audit
    )
    out["timings"] = {**out["timings"], "queue_seconds": round(waited, 4),
                      "total_seconds": round(time.perf_counter() - t0, 4)}
    return _json(out)


def make_app(state: ServiceState) -> Starlette:
    """The Starlette app over ``state``."""

    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 500)
        detail = "no such route: see GET /openapi.json" if status == 404 else str(
            getattr(exc, "detail", "error"))
        return _error(ApiError(status, detail))

    routes = [
        Route("/health", _route(state, _health, auth=False), methods=["GET"]),
        Route("/openapi.json", _route(state, _openapi, auth=False), methods=["GET"]),
        Route("/check", _route(state, _check, auth=True), methods=["POST"]),
        Route("/delink", _route(state, _delink, auth=True), methods=["POST"]),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: not_found})

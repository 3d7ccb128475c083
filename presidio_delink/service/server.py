"""Serving: bind, fork the workers, run uvicorn, drain on SIGTERM.

Binding rules.  127.0.0.1 by default; any other host (another interface, ``0.0.0.0``)
only with a token file, since the service takes documents and returns what links them.
There is no TLS: put a proxy in front of a server that others reach.

Draining.  The first SIGTERM (or Ctrl-C) stops taking work: requests already in flight
are answered, new ones get 503, and the server exits once none is left, or after
:data:`DRAIN_S` seconds (those still waiting then get 503).  A second signal exits at once.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from presidio_delink.errors import ConfigError
from presidio_delink.service.app import ServiceState, make_app
from presidio_delink.service.errors import ApiError
from presidio_delink.service.workers import WorkerPool

try:
    import uvicorn
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ConfigError(
        "the service needs uvicorn: pip install 'presidio-delink[service]'"
    ) from exc

log = logging.getLogger(__name__)

__all__ = ["DRAIN_S", "LOCAL_HOSTS", "ServiceConfig", "check_host", "read_token", "serve"]

#: Hosts that reach this machine only.
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
#: Seconds a drain waits for the requests in flight: with uvicorn's 5 s to close the
#: connections and 3 s for the workers to stop, SIGTERM to exit stays under 30 s.
DRAIN_S = 18.0
#: Seconds uvicorn then waits for connections to close.
_CLOSE_S = 5


@dataclass(frozen=True)
class ServiceConfig:
    """How the service listens (the run's settings are the handler's).

    Attributes:
        host: the interface (127.0.0.1 unless a token file is given).
        port: the port (0: a free one).
        workers: worker processes.
        token_file: a file holding the bearer token every ``/check`` and ``/delink``
            request must send, or None.
    """

    host: str = "127.0.0.1"
    port: int = 5003
    workers: int = 1
    token_file: Path | None = None


def check_host(host: str, token_file: Path | None) -> None:
    """Refuse (:class:`ConfigError`) a host other than this machine without a token."""
    if host not in LOCAL_HOSTS and token_file is None:
        raise ConfigError(
            f"--host {host} lets other machines send documents: give --token-file too "
            "(and put a TLS proxy in front), or serve on 127.0.0.1"
        )


def read_token(path: Path) -> str:
    """The token in ``path`` (its first line, stripped); ConfigError when unreadable or
    empty.  Never logged."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the token file {str(path)!r}: {exc}") from exc
    lines = raw.strip().splitlines()
    token = lines[0].strip() if lines else ""
    if not token:
        raise ConfigError(f"the token file {str(path)!r} is empty")
    return token


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (ConfigError naming them when it fails)."""
    try:
        family, kind, proto, _c, addr = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(2048)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    return sock


class _DrainingServer(uvicorn.Server):
    """uvicorn's server, whose first signal drains instead of stopping."""

    def __init__(self, config: uvicorn.Config, state: ServiceState) -> None:
        super().__init__(config)
        self.state = state
        self.deadline = 0.0

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self.state.pool.attach(asyncio.get_running_loop())
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.state.draining:  # a second signal: stop now
            self.should_exit = self.force_exit = True
            return
        log.warning("signal %d: draining (%d requests in flight), new requests get 503",
                    sig, self.state.inflight)
        self.state.draining = True
        self.deadline = time.monotonic() + DRAIN_S

    async def on_tick(self, counter: int) -> bool:
        st = self.state
        if st.draining and not self.should_exit:
            if st.inflight == 0 and st.pool.busy == 0:
                self.should_exit = True
            elif time.monotonic() > self.deadline:
                log.warning("drain: %d requests still waiting after %.0f s; answered 503",
                            st.inflight, DRAIN_S)
                st.pool.fail_all(ApiError(503, "the server shut down before answering"))
                self.should_exit = True
        return await super().on_tick(counter)


def serve(
    handler: Any, config: ServiceConfig, *, ready: Callable[[str], None] | None = None
) -> None:
    """Serve ``handler`` (a :class:`~.handler.Handler`) until a signal drains it.

    Args:
        handler: built and warmed in this process; the workers are forked from it.
        config: where to listen, how many workers, the token file.
        ready: called with the server's address once it listens.

    Raises:
        ConfigError: a non-local host without a token, an unreadable token file, a port
            that cannot be bound.
    """
    check_host(config.host, config.token_file)
    token = read_token(config.token_file) if config.token_file else None
    sock = bind(config.host, config.port)
    pool = WorkerPool(handler, config.workers, close_in_child=[sock])
    state = ServiceState(pool, handler.health(), handler.settings.max_chars, token)
    uv = uvicorn.Config(
        make_app(state), log_config=None, log_level="warning", access_log=False,
        lifespan="off", loop="asyncio", timeout_graceful_shutdown=_CLOSE_S,
    )
    server = _DrainingServer(uv, state)
    host, port = sock.getsockname()[:2]
    try:
        pool.start()
        if ready is not None:
            shown = f"[{host}]" if ":" in str(host) else host
            ready(f"http://{shown}:{port}")
        server.run(sockets=[sock])
    finally:
        pool.close(timeout=3.0)  # a worker still in a document then is killed
        sock.close()

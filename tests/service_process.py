"""A real ``presidio-delink serve`` in a subprocess on 127.0.0.1 (a free port), and a small
HTTP client over ``http.client``: for ``tests/test_service.py`` and
``benchmarks/bench_service.py``.  Standard library only."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_READY = re.compile(r"serving (http://127\.0\.0\.1:(\d+))")


class ServiceProcess:
    """``presidio-delink -v serve --port 0 ARGS...``; a context manager.

    Args:
        args: the options after ``serve`` (``--index`` included).
        verbose: ``-v`` (INFO logs: the tests check that no text reaches them).
        start_timeout: seconds to wait for the "serving" line.
    """

    def __init__(self, args: list[Any], *, verbose: bool = True,
                 start_timeout: float = 300.0) -> None:
        self.args = [str(a) for a in args]
        self.verbose = verbose
        self.start_timeout = start_timeout
        self.log_file = tempfile.NamedTemporaryFile(  # noqa: SIM115 - kept open while it runs
            "w+b", prefix="serve-", suffix=".log", delete=False
        )
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.port = 0

    def start(self) -> ServiceProcess:
        env = {**os.environ, "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": ""}
        cmd = [sys.executable, "-m", "presidio_delink", *(["-v"] if self.verbose else []),
               "serve", "--port", "0", *self.args]
        self.proc = subprocess.Popen(cmd, stdout=self.log_file, stderr=subprocess.STDOUT,
                                     env=env)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            m = _READY.search(self.log())
            if m:
                self.url, self.port = m.group(1), int(m.group(2))
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve exited with {self.proc.returncode}:\n{self.log()}")
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"serve did not start within {self.start_timeout} s:\n{self.log()}")

    def log(self) -> str:
        return Path(self.log_file.name).read_text(encoding="utf-8", errors="replace")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def workers(self) -> list[int]:
        """The worker processes' ids (the server's children but multiprocessing's
        resource tracker, which a fork start does not make)."""
        path = Path(f"/proc/{self.pid}/task/{self.pid}/children")
        return [int(p) for p in path.read_text().split()]

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM, then wait (SIGKILL after ``timeout``); the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log_file.close()
        return self.proc.returncode

    def __enter__(self) -> ServiceProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        Path(self.log_file.name).unlink(missing_ok=True)

    # -- client -------------------------------------------------------------------------
    def request(self, method: str, path: str, body: bytes | dict[str, Any] | None = None,
                headers: dict[str, str] | None = None,
                timeout: float = 120.0) -> tuple[int, Any]:
        """``(status, decoded JSON body)`` of one request on a new connection."""
        return request(self.port, method, path, body, headers, timeout)


def request(port: int, method: str, path: str, body: bytes | dict[str, Any] | None = None,
            headers: dict[str, str] | None = None, timeout: float = 120.0,
            conn: http.client.HTTPConnection | None = None) -> tuple[int, Any]:
    """One request to 127.0.0.1:``port`` (on ``conn`` when given, kept open)."""
    raw = json.dumps(body).encode() if isinstance(body, dict) else body
    own = conn is None
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        hdrs = {"Content-Type": "application/json", **(headers or {})}
        c.request(method, path, body=raw, headers=hdrs)
        resp = c.getresponse()
        data = resp.read()
        return resp.status, json.loads(data) if data else None
    finally:
        if own:
            c.close()

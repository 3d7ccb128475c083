"""Worker processes forked from a parent that has loaded everything once.

The parent builds the :class:`~.handler.Handler` (index, delinker, the audit's readings),
then forks the workers: they share its pages (the memory-mapped index, the arrays of the
readings; :func:`gc.freeze` keeps the collector from writing to the objects it holds), and
each adds only what its own requests allocate.  The HTTP server stays in the parent; a
worker receives one job at a time over a pipe, calls the handler and sends back the answer.

Why not uvicorn's own workers: a worker killed mid-request would take its client's
connection with it (a reset, not an answer).  Here the parent holds every connection, so a
worker that dies gets its job answered with a 500, and a new worker is forked in its
place.  Workers ignore SIGTERM and SIGINT (the parent drains, then closes their pipes), and
leave when their pipe closes or their parent is gone.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import gc
import logging
import multiprocessing
import os
import signal
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from presidio_delink.service.errors import ApiError, status_of

log = logging.getLogger(__name__)

__all__ = ["WorkerPool"]

_FORK = multiprocessing.get_context("fork")
#: Seconds between a worker's checks that its parent still runs.
_PARENT_POLL_S = 1.0


@dataclass
class _Job:
    op: str
    args: dict[str, Any]
    future: asyncio.Future[Any]
    queued: float = field(default_factory=time.perf_counter)


@dataclass
class _Worker:
    proc: Any
    conn: Connection
    job: _Job | None = None


def _worker_main(handler: Any, conn: Connection, close: list[Any]) -> None:
    """A worker: answer jobs from ``conn`` until it closes or the parent is gone."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the parent drains, then closes the pipe
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(ValueError, OSError):
        signal.set_wakeup_fd(-1)  # the parent's event loop's, inherited
    for obj in close:  # the listening socket and the other workers' pipes
        with contextlib.suppress(OSError):
            obj.close()
    parent = os.getppid()
    while True:
        try:
            if not conn.poll(_PARENT_POLL_S):
                if os.getppid() != parent:
                    return
                continue
            op, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            answer: tuple[int, Any] = (200, getattr(handler, op)(**args))
        except Exception as exc:
            log.debug("request failed", exc_info=True)
            err = status_of(exc)
            answer = (err.status, (err.message, err.headers))
        try:
            conn.send(answer)
        except (OSError, ValueError):
            return


class WorkerPool:
    """``n`` worker processes over one handler, fed from the parent's event loop.

    Jobs wait in two queues, ``check`` before ``delink`` (a check takes milliseconds; it
    should not wait behind documents).  Start with :meth:`start` before the event loop runs
    (the first workers are forked from a parent with no threads), then :meth:`attach` from
    within it.

    Args:
        handler: the :class:`~.handler.Handler` (built, warmed).
        n: worker processes.
        close_in_child: objects with ``close()`` a worker must not hold (the listening
            socket).
    """

    def __init__(self, handler: Any, n: int, close_in_child: list[Any] | None = None) -> None:
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        self.handler = handler
        self.n = n
        self.close_in_child = list(close_in_child or [])
        self.workers: list[_Worker] = []
        self.queues: dict[str, collections.deque[_Job]] = {
            "check": collections.deque(), "delink": collections.deque(),
        }
        self.closing = False
        self.replaced = 0
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- life -------------------------------------------------------------------------
    def start(self) -> None:
        """Fork the workers (the parent's objects frozen first, so the collector leaves
        their pages shared)."""
        gc.collect()
        gc.freeze()
        for _ in range(self.n):
            self.workers.append(self._fork())

    def _fork(self) -> _Worker:
        mine, theirs = _FORK.Pipe(duplex=True)
        close = [*self.close_in_child, mine, *(w.conn for w in self.workers)]
        proc = _FORK.Process(target=_worker_main, args=(self.handler, theirs, close),
                             name="delink-worker", daemon=True)
        proc.start()
        theirs.close()
        w = _Worker(proc, mine)
        if self._loop is not None:
            self._loop.add_reader(mine.fileno(), self._readable, w)
        log.info("worker %d started", proc.pid)
        return w

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Listen to the workers from ``loop`` (the server's)."""
        self._loop = loop
        for w in self.workers:
            loop.add_reader(w.conn.fileno(), self._readable, w)

    def close(self, timeout: float = 5.0) -> None:
        """Stop the workers: close their pipes (they leave), kill whoever stays."""
        self.closing = True
        for w in self.workers:
            if self._loop is not None:
                with contextlib.suppress(Exception):
                    self._loop.remove_reader(w.conn.fileno())
            w.conn.close()
        deadline = time.monotonic() + timeout
        for w in self.workers:
            w.proc.join(max(0.0, deadline - time.monotonic()))
            if w.proc.is_alive():
                w.proc.kill()
                w.proc.join(1)
        for q in self.queues.values():
            while q:
                self._answer(q.popleft(), ApiError(503, "the server is shutting down"))

    def fail_all(self, err: ApiError) -> None:
        """Answer every job, running or waiting, with ``err`` (a drain that ran out of
        time); the workers' late answers are dropped."""
        for q in self.queues.values():
            while q:
                self._answer(q.popleft(), err)
        for w in self.workers:
            if w.job is not None:
                self._answer(w.job, err)

    @property
    def pids(self) -> list[int]:
        return [w.proc.pid for w in self.workers]

    @property
    def busy(self) -> int:
        """Jobs running or waiting."""
        return sum(w.job is not None for w in self.workers) + sum(
            len(q) for q in self.queues.values()
        )

    # -- jobs -------------------------------------------------------------------------
    async def submit(self, op: str, **args: Any) -> tuple[Any, float]:
        """Run ``handler.<op>(**args)`` in a worker: its answer and the seconds it waited
        for one.

        Raises:
            ApiError: the handler's error (:func:`~.errors.status_of`), 500 when the worker
                died meanwhile, 503 when the server is closing.
        """
        if self.closing or self._loop is None:
            raise ApiError(503, "the server is shutting down")
        job = _Job(op, args, self._loop.create_future())
        self.queues["check" if op == "check" else "delink"].append(job)
        self._dispatch()
        return await job.future

    def _dispatch(self) -> None:
        for w in self.workers:
            if w.job is not None:
                continue
            job = self._next()
            if job is None:
                return
            try:
                w.conn.send((job.op, job.args))
            except (OSError, ValueError):  # dead: _readable replaces it
                self._answer(job, ApiError(500, "the worker died; retry the request"))
                continue
            w.job = job

    def _next(self) -> _Job | None:
        for q in self.queues.values():
            while q:
                job = q.popleft()
                if not job.future.done():
                    return job
        return None

    def _readable(self, w: _Worker) -> None:
        try:
            status, payload = w.conn.recv()
        except (EOFError, OSError):
            self._died(w)
            return
        job, w.job = w.job, None
        if job is not None:
            waited = 0.0
            if status == 200:
                waited = time.perf_counter() - job.queued
                if not job.future.done():
                    job.future.set_result((payload, waited))
            else:
                message, headers = payload
                self._answer(job, ApiError(status, message, headers))
        self._dispatch()

    def _died(self, w: _Worker) -> None:
        assert self._loop is not None
        with contextlib.suppress(Exception):
            self._loop.remove_reader(w.conn.fileno())
        w.conn.close()
        w.proc.join(1)
        code = w.proc.exitcode
        if w.job is not None:
            log.warning("worker %d died (exit code %s) during a request; answered 500",
                        w.proc.pid, code)
            self._answer(w.job, ApiError(
                500, "the worker handling this request died (it is being replaced); retry"))
        if self.closing:
            return
        i = self.workers.index(w)
        self.workers[i] = self._fork()
        self.replaced += 1
        self._dispatch()

    @staticmethod
    def _answer(job: _Job, err: ApiError) -> None:
        if not job.future.done():
            job.future.set_exception(err)


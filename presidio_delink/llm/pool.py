"""`RewriterPool`: one model served by several servers (``openai:URL1,URL2#MODEL``).

Each request goes to the least busy server that is up, at most ``per_server`` at a time on
each.  A server whose call fails is marked down for ``down_for`` seconds and the request
is sent to another one; a request fails only when every server failed it, so a run loses
nothing while one server is left.  The servers must serve the same model with the same
options: which one answers a request does not change its answer's meaning, and the answer
cache is shared (its key names the pool's model, not a server).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from presidio_delink.errors import ConfigError, LLMError
from presidio_delink.llm.base import TokenUsage

__all__ = ["RewriterPool"]


class RewriterPool:
    """Spreads :meth:`rewrite` calls over ``members`` (rewriters of one model).

    Args:
        members: the servers' rewriters (each with ``rewrite`` and ``close``).
        per_server: requests in flight on one server at most.
        down_for: seconds a failed server is passed over (then tried again).
    """

    def __init__(
        self, members: Sequence[Any], per_server: int = 4, down_for: float = 30.0
    ) -> None:
        if not members:
            raise ConfigError("an LLM pool needs at least one server")
        if per_server < 1:
            raise ConfigError(f"requests per server must be >= 1, got {per_server}")
        self.members = list(members)
        self.per_server = per_server
        self.down_for = down_for
        self.usage = TokenUsage()
        for m in self.members:  # one tally for the pool
            if hasattr(m, "usage"):
                m.usage = self.usage
        self.calls = [0] * len(self.members)  # answered calls per server
        self.failures = [0] * len(self.members)
        self._busy = [0] * len(self.members)
        self._down_until = [0.0] * len(self.members)
        self._cv = threading.Condition()
        first = self.members[0]
        self.model = getattr(first, "model", "")
        self.options = getattr(first, "options", None)
        self.name = f"pool:{self.model}" if self.model else "pool:" + "|".join(
            str(getattr(m, "name", m)) for m in self.members
        )
        self.default_concurrency = per_server * len(self.members)

    def _acquire(self, tried: set[int]) -> int | None:
        """A server to send to (busy count taken), waiting while every candidate is
        full; None when every server has been tried."""
        with self._cv:
            while True:
                left = [i for i in range(len(self.members)) if i not in tried]
                if not left:
                    return None
                now = time.monotonic()
                up = [i for i in left if self._down_until[i] <= now] or left
                free = [i for i in up if self._busy[i] < self.per_server]
                if free:
                    i = min(free, key=lambda j: (self._busy[j], self.calls[j]))
                    self._busy[i] += 1
                    return i
                self._cv.wait(timeout=1.0)

    def _release(self, i: int, ok: bool) -> None:
        with self._cv:
            self._busy[i] -= 1
            if ok:
                self.calls[i] += 1
                self._down_until[i] = 0.0
            else:
                self.failures[i] += 1
                self._down_until[i] = time.monotonic() + self.down_for
            self._cv.notify_all()

    def rewrite(self, context: str, spans: list[str]) -> dict[str, str | list[str]]:
        """The first server's answer that does not fail.

        Raises:
            LLMError: every server failed this request (the last error's message).
        """
        return self._spread(lambda m: m.rewrite(context, spans))

    def complete_sentence(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        """A sentence written by the first server that does not fail (as :meth:`rewrite`)."""
        return self._spread(lambda m: m.complete_sentence(messages, max_tokens))

    def _spread(self, call: Any) -> Any:
        """``call(server)`` on the least busy server that is up, then the others."""
        tried: set[int] = set()
        last: LLMError | None = None
        while True:
            i = self._acquire(tried)
            if i is None:
                raise LLMError(
                    f"all {len(self.members)} LLM servers failed this request; last: {last}"
                )
            ok = False
            try:
                answer = call(self.members[i])
                ok = True
                return answer
            except LLMError as exc:
                last = exc
                tried.add(i)
            finally:
                self._release(i, ok)

    def close(self) -> None:
        for m in self.members:
            close = getattr(m, "close", None)
            if callable(close):
                close()

    def __repr__(self) -> str:
        return f"RewriterPool({len(self.members)} servers, {self.per_server} each)"

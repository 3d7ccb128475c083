"""What the HTTP backends (Ollama, OpenAI-compatible) share: one retry loop, exponential
backoff within one deadline for the whole call, and :class:`HttpBackend`, the limits,
connection errors and :meth:`~HttpBackend.rewrite` of both."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import httpx

from presidio_delink.errors import ConfigError, LLMError
from presidio_delink.llm.base import TokenUsage, complete_json

BACKOFF_S = 0.25
"""Wait before the first retry; doubled before each further one."""

_T = TypeVar("_T")


class Retryable(Exception):
    """Raised by an attempt that may be repeated (connection error, HTTP 5xx)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def with_retries(
    attempt: Callable[[bool, float], _T],
    *,
    retries: int,
    timeout: float,
    what: str,
    logger: logging.Logger,
    log_what: str,
) -> _T:
    """Run ``attempt(last, seconds_left)`` up to ``retries + 1`` times.

    An attempt returns its result, raises :class:`LLMError` (final), or raises
    :class:`Retryable` (it is repeated after the backoff, unless it was the last or no
    time is left before the deadline, ``timeout`` seconds from now; on its last attempt
    it should raise its own final error instead).

    Raises:
        LLMError: the attempt's own, or "no time is left" naming ``what``.
    """
    attempts = retries + 1
    deadline = time.monotonic() + timeout
    for n in range(1, attempts + 1):
        try:
            return attempt(n == attempts, deadline - time.monotonic())
        except Retryable as exc:
            if n == attempts:
                raise LLMError(f"{what} failed ({exc.reason})") from None
            reason = exc.reason
        delay = BACKOFF_S * 2 ** (n - 1)
        if time.monotonic() + delay >= deadline:
            raise LLMError(
                f"{what} failed ({reason}) and no time is left for a retry within {timeout:g} s"
            )
        logger.info("%s failed (%s), retry %d/%d in %.2f s", log_what, reason, n, retries, delay)
        time.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


class HttpBackend:
    """The part of a rewriter over an HTTP server that does not depend on its API.

    A subclass calls :meth:`_set_limits` in its constructor, sets ``_where`` (the server,
    for messages: ``"Ollama at http://..."``) and implements ``chat``.
    """

    default_concurrency = 4
    """Requests in flight by default (``--llm-concurrency``)."""

    timeout: float
    retries: int
    usage: TokenUsage
    _where: str

    def _set_limits(self, timeout: float, retries: int) -> None:
        """Check and keep the call's limits; start counting tokens."""
        if timeout <= 0 or retries < 0:
            raise ConfigError(f"timeout must be > 0 and retries >= 0 (got {timeout}, {retries})")
        self.timeout = timeout
        self.retries = retries
        self.usage = TokenUsage()

    def _with_retries(
        self, attempt: Callable[[bool, float], str], logger: logging.Logger, log_what: str
    ) -> str:
        """:func:`with_retries` within this backend's limits."""
        return with_retries(
            attempt,
            retries=self.retries,
            timeout=self.timeout,
            what=self._where,
            logger=logger,
            log_what=log_what,
        )

    def _connection_failed(self, exc: Exception, last: bool) -> NoReturn:
        """Raise what an attempt raises for ``exc``, a failed connection: a timeout is
        final (a server that does not answer in time is not asked again); another error is
        :class:`Retryable` unless it was the ``last`` attempt."""
        name = type(exc).__name__
        if isinstance(exc, httpx.TimeoutException):
            raise LLMError(
                f"{self._where} did not answer within {self.timeout:g} s ({name})"
            ) from exc
        if last:
            raise LLMError(
                f"cannot reach {self._where} after {self.retries + 1} attempt(s): {name}"
            ) from exc
        raise Retryable(name) from None

    def chat(
        self, messages: list[dict[str, str]], schema: Any, max_tokens: int | None = None
    ) -> str:
        raise NotImplementedError

    def complete_sentence(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        """Free text (no schema), at most ``max_tokens``: a sentence written again
        (:class:`~presidio_delink.llm.base.SentenceWriter`)."""
        return self.chat(messages, None, max_tokens)

    def rewrite(self, context: str, spans: list[str]) -> dict[str, str | list[str]]:
        """Ask the server for replacements of ``spans`` (see :class:`Rewriter`)."""
        return complete_json(self.chat, context, spans)

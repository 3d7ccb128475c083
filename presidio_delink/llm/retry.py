"""One retry loop for the HTTP backends (Ollama, OpenAI-compatible): exponential backoff
within one deadline for the whole call."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from presidio_delink.errors import LLMError

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

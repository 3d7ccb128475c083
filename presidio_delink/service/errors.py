"""The service's errors and their status codes, mapped once (as presidio-anonymizer's
``app.py`` maps its exceptions): every error answer is ``{"error": "<one line>"}``.

A message says what was wrong with the request, never what the document holds: no text,
no phrase, no part of a body is ever quoted.
"""

from __future__ import annotations

from presidio_delink.errors import ConfigError, DelinkError, InputError, LLMError

__all__ = ["ApiError", "status_of"]


class ApiError(Exception):
    """An answer other than 200: ``status`` and a one-line ``message``.

    Args:
        status: the HTTP status.
        message: why, in one line (no document text).
        headers: extra response headers (``Retry-After``, ``WWW-Authenticate``).
    """

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = " ".join(message.split())  # one line
        self.headers = headers or {}

    def body(self) -> dict[str, str]:
        return {"error": self.message}


def status_of(exc: BaseException) -> ApiError:
    """The answer to a library error raised while serving a request.

    * :class:`~presidio_delink.errors.LLMError` (only under ``--strict``: otherwise the
      spans are redacted): 503, try again later;
    * :class:`~presidio_delink.errors.InputError` and
      :class:`~presidio_delink.errors.ConfigError`: 400, the request asked something the
      settings refuse;
    * anything else: 500, its type only (an unexpected error may quote document text).
    """
    if isinstance(exc, LLMError):
        return ApiError(503, f"the LLM failed and the server runs with --strict: {exc}",
                        {"Retry-After": "30"})
    if isinstance(exc, InputError | ConfigError):
        return ApiError(400, str(exc))
    if isinstance(exc, DelinkError):
        return ApiError(500, f"{type(exc).__name__}: {exc}")
    return ApiError(500, f"internal error ({type(exc).__name__}); the server log at DEBUG "
                    "(-vv) has the details")

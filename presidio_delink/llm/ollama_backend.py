"""Ollama backend: a local Ollama server via the official ``ollama`` client.

This is the only module that imports ``ollama``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from typing import Any, Literal

import httpx

from presidio_delink.errors import ConfigError, LLMError
from presidio_delink.llm.base import DEFAULT_SEED, DEFAULT_TIMEOUT_S, check_loopback
from presidio_delink.llm.retry import HttpBackend, Retryable

logger = logging.getLogger(__name__)
_COUNTS = ("prompt_eval_count", "eval_count")
"""Ollama's prompt tokens read (those its cache served are not counted) and generated."""

DEFAULT_OLLAMA_HOST = "http://127.0.0.1:11434"


class OllamaRewriter(HttpBackend):
    """Rewriter calling ``/api/chat`` of an Ollama server with a JSON-schema ``format``.

    Args:
        model: Ollama model name, e.g. ``"smollm2:135m"``.
        host: Server address; ``None`` means ``$OLLAMA_HOST``, else ``http://127.0.0.1:11434``.
        allow_remote: Allow a server that is not on this machine (document text is sent).
        timeout: Seconds one :meth:`chat` call may take, retries included.
        retries: Extra attempts after a connection error or 5xx answer (not after a
            timeout: a server that does not answer in time is not asked again).
        options: Ollama model options overriding
            ``{"temperature": 0, "seed": 42, "num_predict": 512}``.
        keep_alive: How long Ollama keeps the model loaded (Ollama syntax, e.g. ``"5m"``).

    Raises:
        ConfigError: Bad argument, remote host refused, or ``ollama`` not installed.
    """

    def __init__(
        self,
        model: str,
        host: str | None = None,
        allow_remote: bool = False,
        timeout: float = DEFAULT_TIMEOUT_S,
        retries: int = 2,
        options: Mapping[str, Any] | None = None,
        keep_alive: str | float | None = None,
    ) -> None:
        if not model or not model.strip():
            raise ConfigError("the Ollama backend needs a model name, e.g. 'ollama:smollm2:135m'")
        self._set_limits(timeout, retries)
        resolved = host or os.environ.get("OLLAMA_HOST") or DEFAULT_OLLAMA_HOST
        check_loopback(resolved, allow_remote, "Ollama")
        try:
            import ollama
        except ImportError as exc:  # pragma: no cover - ollama is a hard dependency
            raise ConfigError("the Ollama backend needs `pip install ollama`") from exc
        self._ollama = ollama
        self.model = model.strip()
        self.host = resolved
        self._where = f"Ollama at {resolved}"
        self.keep_alive = keep_alive
        self.name = f"ollama:{self.model}"
        # self.usage: tokens of every answered call (``prompt_eval_count``, ``eval_count``)
        self.options: dict[str, Any] = {
            "temperature": 0,
            "seed": DEFAULT_SEED,
            "num_predict": 512,
            **(options or {}),
        }
        self._local = threading.local()
        self._clients: list[Any] = []
        self._clients_lock = threading.Lock()

    # default_concurrency 4 (HttpBackend's): Ollama serves several requests at once with
    # ``OLLAMA_NUM_PARALLEL``.

    @property
    def _client(self) -> Any:
        """This thread's ``ollama.Client``: the timeout of the next request is set on the
        client's httpx client (:meth:`_set_timeout`), so threads must not share one."""
        client = getattr(self._local, "client", None)
        if client is None:
            client = self._ollama.Client(host=self.host, timeout=self.timeout)
            self._local.client = client
            with self._clients_lock:
                self._clients.append(client)
        return client

    def chat(
        self,
        messages: list[dict[str, str]],
        schema: dict[str, Any] | Literal["json"] | None,
        max_tokens: int | None = None,
    ) -> str:
        """One ``/api/chat`` call (with retries); the assistant text.

        Args:
            messages: Chat messages.
            schema: JSON schema, ``"json"`` or ``None`` for free text.
            max_tokens: Most tokens generated (``num_predict``); None: the options'.

        Raises:
            LLMError: Server down, timeout, HTTP error or empty answer.
        """
        ollama = self._ollama
        fmt: dict[str, Any] | Literal["", "json"] = "" if schema is None else schema
        options = self.options if max_tokens is None else {**self.options,
                                                          "num_predict": max_tokens}

        def attempt(last: bool, left: float) -> str:
            self._set_timeout(left)
            try:
                response = self._client.chat(
                    model=self.model,
                    messages=messages,
                    format=fmt,
                    options=options,
                    keep_alive=self.keep_alive,
                    stream=False,
                )
            except ollama.ResponseError as exc:
                # exc.error is the server's body, which may echo the prompt: DEBUG only.
                logger.debug("Ollama HTTP %d body: %r", exc.status_code, str(exc.error)[:2000])
                if exc.status_code < 500 or last:
                    hint = (
                        f" (is it pulled? `ollama pull {self.model}`)"
                        if exc.status_code == 404
                        else " (run with -vv to log the body)"
                    )
                    raise LLMError(
                        f"Ollama at {self.host} answered HTTP {exc.status_code} for model "
                        f"{self.model!r}{hint}"
                    ) from None
                raise Retryable(f"HTTP {exc.status_code}") from None
            except (ConnectionError, httpx.TransportError) as exc:  # timeouts too
                self._connection_failed(exc, last)
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                # HTTP 200 with a body that is not an Ollama answer (not JSON, wrong shape:
                # json.JSONDecodeError and pydantic's ValidationError are ValueErrors).
                logger.debug("malformed Ollama answer", exc_info=True)
                raise LLMError(
                    f"Ollama at {self.host} sent a malformed answer for model {self.model!r} "
                    f"({type(exc).__name__})"
                ) from None
            content = getattr(getattr(response, "message", None), "content", None)
            if not isinstance(content, str):
                raise LLMError(f"Ollama model {self.model!r} answered without content")
            prompt_n, made = (getattr(response, k, None) for k in _COUNTS)
            self.usage.add(
                prompt_n if isinstance(prompt_n, int) else 0,
                made if isinstance(made, int) else 0,
            )
            return content

        return self._with_retries(attempt, logger, "Ollama call")

    def _set_timeout(self, seconds: float) -> None:
        """Give the next request what is left of the call's time.

        The ``ollama`` client takes one timeout at construction; its httpx client (a private
        attribute, hence the guard) takes a new one per request. Without it the client's
        timeout (``self.timeout``) applies to each attempt.
        """
        http = getattr(self._client, "_client", None)
        if isinstance(http, httpx.Client):
            http.timeout = httpx.Timeout(max(seconds, 0.001))

    def close(self) -> None:
        """Close the HTTP connections (of every thread's client)."""
        with self._clients_lock:
            clients, self._clients = self._clients, []
        for client in clients:
            client.close()
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"OllamaRewriter({self.model!r}, host={self.host!r})"

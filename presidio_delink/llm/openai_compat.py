"""OpenAI-compatible backend (llama.cpp server, vLLM, LM Studio, ...) over plain httpx."""

from __future__ import annotations

import logging
from typing import Any

import httpx

from presidio_delink.errors import ConfigError, LLMError
from presidio_delink.llm.base import DEFAULT_SEED, DEFAULT_TIMEOUT_S, check_loopback
from presidio_delink.llm.retry import HttpBackend, Retryable

logger = logging.getLogger(__name__)



def chat_completions_url(base_url: str) -> str:
    """``{base_url}/v1/chat/completions``, whether or not ``base_url`` ends with ``/v1``."""
    base = base_url.strip().rstrip("/")
    if "://" not in base:
        base = "http://" + base
    if base.endswith("/chat/completions"):
        return base
    if not base.endswith("/v1"):
        base += "/v1"
    return base + "/chat/completions"


class OpenAICompatRewriter(HttpBackend):
    """Rewriter calling ``POST /v1/chat/completions`` with a strict ``json_schema`` format.

    Args:
        base_url: Server root, with or without ``/v1`` (e.g. ``http://127.0.0.1:8080``).
        model: Model name sent in the request.
        api_key: Bearer token, if the server wants one.
        allow_remote: Allow a server that is not on this machine (document text is sent).
        timeout: Seconds one :meth:`chat` call may take, retries included.
        retries: Extra attempts after a connection error or 5xx answer (not after a
            timeout: a server that does not answer in time is not asked again).

    Raises:
        ConfigError: Bad argument or remote host refused.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        allow_remote: bool = False,
        timeout: float = DEFAULT_TIMEOUT_S,
        retries: int = 2,
    ) -> None:
        if not base_url or not base_url.strip():
            raise ConfigError("the OpenAI-compatible backend needs a server URL")
        if not model or not model.strip():
            raise ConfigError("the OpenAI-compatible backend needs a model name")
        self._set_limits(timeout, retries)
        self.url = chat_completions_url(base_url)
        check_loopback(self.url, allow_remote, "OpenAI-compatible")
        self._where = self.url
        self.model = model.strip()
        self.name = f"openai:{self.url}#{self.model}"
        self.options: dict[str, Any] = {"temperature": 0, "seed": DEFAULT_SEED}
        # self.usage: tokens of every answered call (the answer's ``usage``; cached prompt
        # tokens from ``prompt_tokens_details.cached_tokens`` where the server reports them)
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(timeout=timeout, headers=headers)

    # default_concurrency 4 (HttpBackend's): the httpx client is shared by the threads
    # (it is thread-safe and pools connections).

    def chat(
        self,
        messages: list[dict[str, str]],
        schema: dict[str, Any] | None,
        max_tokens: int | None = None,
    ) -> str:
        """One chat completion (with retries); the assistant text (``max_tokens``: at most
        that many generated).

        Raises:
            LLMError: Server down, timeout, HTTP error or malformed answer.
        """
        body: dict[str, Any] = {"model": self.model, "messages": messages, **self.options}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "delink", "schema": schema, "strict": True},
            }

        def attempt(last: bool, left: float) -> str:
            try:
                response = self._client.post(self.url, json=body, timeout=max(left, 0.001))
            except httpx.TransportError as exc:  # timeouts too
                self._connection_failed(exc, last)
            if response.status_code < 400:
                return self._content(response)
            # The body may echo the prompt (document text): DEBUG only.
            logger.debug("HTTP %d body: %r", response.status_code, response.text[:2000])
            if response.status_code < 500 or last:
                raise LLMError(
                    f"{self.url} answered HTTP {response.status_code} for model "
                    f"{self.model!r} (run with -vv to log the body)"
                )
            raise Retryable(f"HTTP {response.status_code}")

        return self._with_retries(attempt, logger, "chat completion")

    def _content(self, response: httpx.Response) -> str:
        try:
            data = response.json()
            content = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            logger.debug("malformed answer: %r", response.text[:2000])
            raise LLMError(
                f"{self.url} answered HTTP {response.status_code} without a chat completion "
                "message (malformed answer)"
            ) from exc
        if not isinstance(content, str):
            raise LLMError(f"{self.url} answered a message without text content")
        usage = data.get("usage") if isinstance(data, dict) else None
        if isinstance(usage, dict):
            prompt, made = (usage.get(k) for k in ("prompt_tokens", "completion_tokens"))
            details = usage.get("prompt_tokens_details")
            cached = details.get("cached_tokens") if isinstance(details, dict) else None
            self.usage.add(
                prompt if isinstance(prompt, int) else 0,
                made if isinstance(made, int) else 0,
                cached if isinstance(cached, int) else 0,
            )
        return content

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    def __repr__(self) -> str:
        return f"OpenAICompatRewriter({self.url!r}, {self.model!r})"

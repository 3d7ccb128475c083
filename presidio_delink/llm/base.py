"""The :class:`Rewriter` protocol and helpers shared by the LLM backends."""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from presidio_delink.errors import ConfigError
from presidio_delink.llm.prompt import parse_response, render_messages, response_schema

logger = logging.getLogger(__name__)

DEFAULT_SEED = 42


@runtime_checkable
class Rewriter(Protocol):
    """Something that asks an LLM to rephrase spans of a sentence.

    Attributes:
        name: Identifies backend and model (e.g. ``"ollama:smollm2:135m"``); part of cache keys.
    """

    name: str

    def rewrite(self, context: str, spans: list[str]) -> dict[str, str]:
        """Ask for replacements of ``spans`` (substrings of ``context``) in one call.

        Returns:
            ``{span: replacement}`` for the spans the model answered; possibly partial.

        Raises:
            LLMError: Transport failure, timeout or an answer without a JSON object.
        """
        ...


ChatFn = Callable[[list[dict[str, str]], dict[str, Any]], str]


def complete_json(
    chat: ChatFn, context: str, spans: list[str], *, max_length: int | None = None
) -> dict[str, str]:
    """Render the prompt, call ``chat(messages, schema)`` and parse its answer.

    Args:
        chat: Backend call returning the raw text of the assistant message.
        context: Sentence containing the spans (document text: logged at DEBUG only).
        spans: Spans to rephrase.
        max_length: Optional ``maxLength`` of each replacement in the schema.
    """
    if not spans:
        return {}
    messages = render_messages(context, spans)
    schema = response_schema(spans, max_length=max_length)
    raw = chat(messages, schema)
    logger.debug("raw LLM answer: %r", raw)
    return parse_response(raw, spans)


def is_loopback_host(host: str | None) -> bool:
    """Whether ``host`` (a hostname or IP literal, brackets allowed) is this machine.

    ``localhost`` (and its subdomains), 127.0.0.0/8, ``::1`` and the unspecified addresses
    ``0.0.0.0`` / ``::`` (which connect to the local machine) count as loopback.
    """
    if not host:
        return False
    host = host.strip().strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        addr = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback or addr.is_unspecified


def url_host(url: str, default_host: str = "127.0.0.1") -> str:
    """Host part of ``url``; a missing scheme is taken as ``http://``."""
    if "://" not in url:
        url = "http://" + url
    try:
        host = urlsplit(url).hostname
    except ValueError as exc:
        raise ConfigError(f"invalid server address {url!r}: {exc}") from None
    return host or default_host


def check_loopback(url: str, allow_remote: bool, what: str) -> None:
    """Refuse a non-loopback server unless ``allow_remote``, since document text goes there.

    Raises:
        ConfigError: ``url`` is not on this machine and ``allow_remote`` is false.
    """
    host = url_host(url)
    if allow_remote or is_loopback_host(host):
        return
    raise ConfigError(
        f"{what} server {url!r} is not on this machine (loopback); document text would be "
        "sent to it. Pass allow_remote=True to allow it."
    )

"""The :class:`Rewriter` protocol and helpers shared by the LLM backends."""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from presidio_delink.errors import ConfigError, LLMError, LLMUnavailable
from presidio_delink.llm.prompt import (
    options_of,
    parse_response,
    render_messages,
    response_schema,
)

logger = logging.getLogger(__name__)

__all__ = [
    "BREAKER_THRESHOLD",
    "DEFAULT_SEED",
    "DEFAULT_TIMEOUT_S",
    "ChatFn",
    "CircuitBreaker",
    "LLMUnavailable",
    "Rewriter",
    "SentenceWriter",
    "TokenUsage",
    "check_loopback",
    "complete_json",
    "default_concurrency",
    "find_breaker",
    "find_attr",
    "find_usage",
    "is_loopback_host",
    "resolve_host",
    "sentence_call",
    "url_host",
    "writes_sentences",
]

DEFAULT_SEED = 42
DEFAULT_TIMEOUT_S = 60.0
"""Seconds one LLM call may take, retries included (``--llm-timeout``)."""
BREAKER_THRESHOLD = 3
"""Consecutive failed calls after which a backend counts as down for the rest of the run."""


@runtime_checkable
class Rewriter(Protocol):
    """Something that asks an LLM to rephrase spans of a sentence.

    Attributes:
        name: Identifies backend and model (e.g. ``"ollama:smollm2:135m"``); part of cache keys.
    """

    name: str

    def rewrite(self, context: str, spans: list[str]) -> dict[str, Any]:
        """Ask for replacements of ``spans`` (substrings of ``context``) in one call.

        Returns:
            ``{span: replacement}`` or ``{span: [candidates, best first]}`` for the spans
            the model answered; possibly partial.

        Raises:
            LLMError: Transport failure, timeout or an answer without a JSON object.
        """
        ...


ChatFn = Callable[[list[dict[str, str]], dict[str, Any]], str]


@runtime_checkable
class SentenceWriter(Protocol):
    """A backend that also writes free text: the ``sentences`` rewrite mode asks it to
    write a sentence again (:mod:`presidio_delink.sentences`)."""

    def complete_sentence(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        """The assistant's plain-text answer to chat ``messages`` (no JSON schema), at most
        ``max_tokens`` generated, greedy.

        Raises:
            LLMError: Transport failure, timeout or an empty answer.
        """
        ...


def writes_sentences(rewriter: object) -> bool:
    """Whether ``rewriter`` (and every wrapper below it in its ``.inner`` chain) can
    :meth:`SentenceWriter.complete_sentence`."""
    seen = 0
    while rewriter is not None and seen < 8:
        if not callable(getattr(rewriter, "complete_sentence", None)):
            return False
        members = getattr(rewriter, "members", None)
        if isinstance(members, list):  # a pool: its servers are one model
            return all(writes_sentences(m) for m in members)
        rewriter = getattr(rewriter, "inner", None)
        seen += 1
    return True


def sentence_call(rewriter: object) -> Callable[[list[dict[str, str]], int], str]:
    """``rewriter.complete_sentence``.

    Raises:
        LLMError: it writes no sentences (:func:`writes_sentences`).
    """
    if not writes_sentences(rewriter):
        raise LLMError(f"the LLM backend {getattr(rewriter, 'name', rewriter)} writes no "
                       "sentences (no complete_sentence)")
    fn: Callable[[list[dict[str, str]], int], str] = rewriter.complete_sentence  # type: ignore[attr-defined]
    return fn


def fill_call(rewriter: object) -> Callable[..., tuple[str, bool]] | None:
    """``rewriter.continue_sentence`` where it and every wrapper below it in its
    ``.inner`` chain can continue a started assistant answer (the embedded engine: a
    named phrase filled in place, :mod:`presidio_delink.sentences.fill`); None otherwise.
    ``continue_sentence(messages, started, stops, max_tokens, avoid) -> (words,
    stopped)``."""
    seen, layer = 0, rewriter
    while layer is not None and seen < 8:
        if not callable(getattr(layer, "continue_sentence", None)):
            return None
        if isinstance(getattr(layer, "members", None), list):
            return None  # a pool of servers: none continues an answer
        layer = getattr(layer, "inner", None)
        seen += 1
    fn: Callable[..., tuple[str, bool]] = rewriter.continue_sentence  # type: ignore[attr-defined]
    return fn


def find_attr(rewriter: object, name: str) -> Any:
    """The attribute ``name`` of the first rewriter in a chain of wrappers (``.inner``)
    that has it; None when none does."""
    seen = 0
    while rewriter is not None and seen < 8:
        value = getattr(rewriter, name, None)
        if value is not None:
            return value
        rewriter = getattr(rewriter, "inner", None)
        seen += 1
    return None


class TokenUsage:
    """Tokens a backend's calls cost, summed (thread-safe): what a GPU server's bill or a
    CPU's time is proportional to.

    Attributes:
        prompt: Prompt tokens sent, cached ones included.
        cached: Of those, how many the engine's prompt cache served (not read again).
        generated: Tokens generated.
        calls: Calls counted.
        drafted: Tokens drafted by speculative decoding (the embedded engine's n-gram
            lookup over the prompt: a sentence rewrite mostly copies its input).
        accepted: Of those, how many the model accepted (each saves a decoding step).
    """

    def __init__(self) -> None:
        self.prompt = self.cached = self.generated = self.calls = 0
        self.drafted = self.accepted = 0
        self._lock = threading.Lock()

    def add(
        self, prompt: int, generated: int, cached: int = 0, drafted: int = 0, accepted: int = 0
    ) -> None:
        """Count one call."""
        with self._lock:
            self.prompt += max(0, prompt)
            self.cached += max(0, min(cached, prompt))
            self.generated += max(0, generated)
            self.drafted += max(0, drafted)
            self.accepted += max(0, min(accepted, drafted))
            self.calls += 1

    def drafts(self) -> tuple[int, int]:
        """``(drafted, accepted)`` tokens so far."""
        with self._lock:
            return self.drafted, self.accepted

    def snapshot(self) -> tuple[int, int, int, int]:
        """``(prompt, cached, generated, calls)`` so far."""
        with self._lock:
            return self.prompt, self.cached, self.generated, self.calls


def find_usage(rewriter: object) -> TokenUsage | None:
    """The :class:`TokenUsage` (attribute ``usage``) of the first rewriter in a chain of
    wrappers (``.inner``) that counts its tokens; None when none does."""
    seen = 0
    while rewriter is not None and seen < 8:
        usage = getattr(rewriter, "usage", None)
        if isinstance(usage, TokenUsage):
            return usage
        rewriter = getattr(rewriter, "inner", None)
        seen += 1
    return None


def complete_json(
    chat: ChatFn, context: str, spans: list[str], *, max_length: int | None = None
) -> dict[str, str | list[str]]:
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
    schema = response_schema(spans, max_length=max_length, options=options_of(context, spans))
    raw = chat(messages, schema)
    logger.debug("raw LLM answer: %r", raw)
    return parse_response(raw, spans)


def _loopback_address(text: str) -> bool | None:
    """Whether an IP literal is this machine; None when ``text`` is not an IP literal."""
    try:
        addr = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback or addr.is_unspecified


def resolve_host(host: str) -> list[str]:
    """The addresses ``host`` resolves to (empty when it does not resolve)."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return []
    return sorted({str(info[4][0]) for info in infos})


def is_loopback_host(host: str | None) -> bool:
    """Whether ``host`` (a hostname or IP literal, brackets allowed) is this machine.

    An IP literal counts when it is in 127.0.0.0/8, ``::1`` (also IPv4-mapped) or an
    unspecified address (``0.0.0.0`` / ``::`` connect to the local machine).  A name counts
    only when it resolves, and every address it resolves to counts: ``evil.localhost`` is
    not trusted for its suffix.  (The check runs once, when the backend is built; a name
    whose DNS answer changes later is not re-checked: prefer an address.)
    """
    if not host:
        return False
    host = host.strip().strip("[]").rstrip(".").lower()
    if not host:
        return False
    literal = _loopback_address(host)
    if literal is not None:
        return literal
    addresses = resolve_host(host)
    return bool(addresses) and all(_loopback_address(a) for a in addresses)


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
    why = "is not on this machine (loopback)"
    if _loopback_address(host.strip("[]")) is None and not resolve_host(host):
        why = "does not resolve to a loopback address (it does not resolve at all)"
    raise ConfigError(
        f"{what} server {url!r} {why}; document text would be sent to it. Pass "
        "allow_remote=True (--allow-remote) to allow it."
    )


class CircuitBreaker:
    """Wraps a :class:`Rewriter`: after ``threshold`` consecutive failed calls, the backend
    counts as down and every later call fails at once with :class:`LLMUnavailable`.

    Without it, a server that accepts connections and never answers costs a full timeout
    per sentence.  A failed call is an :class:`LLMError` of the inner rewriter (down,
    timeout, HTTP error, malformed answer) or any other exception it raises (a backend
    bug or an answer it could not read), which is turned into an :class:`LLMError` whose
    message names the exception type only.  A successful call resets the count.  Tripping
    logs ONE warning; single failures are not logged above INFO (the pipeline records
    them in each result's ``warnings``).

    Args:
        inner: The rewriter to guard.
        threshold: Consecutive failures that trip the breaker (>= 1).

    Attributes:
        calls: Calls passed to ``inner``.
        failures: Of those, how many failed.
        down: Whether the breaker has tripped.
    """

    def __init__(self, inner: Rewriter, threshold: int = BREAKER_THRESHOLD) -> None:
        if threshold < 1:
            raise ConfigError(f"threshold must be >= 1, got {threshold}")
        self.inner = inner
        self.name: str = inner.name
        self.threshold = threshold
        self.calls = 0
        self.failures = 0
        self.down = False
        self._streak = 0
        self._lock = threading.Lock()  # calls may come from several threads

    @property
    def options(self) -> Any:
        """The inner rewriter's options (part of cache keys)."""
        return getattr(self.inner, "options", None)

    def rewrite(self, context: str, spans: list[str]) -> dict[str, Any]:
        """:meth:`Rewriter.rewrite` of the inner rewriter, unless the backend is down.

        Raises:
            LLMUnavailable: The breaker has tripped (no call is made).
            LLMError: This call failed.
        """
        return self._guarded(lambda: self.inner.rewrite(context, spans))

    def complete_sentence(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        """:meth:`SentenceWriter.complete_sentence` of the inner rewriter, unless the backend
        is down; failures count as :meth:`rewrite`'s do.

        Raises:
            LLMUnavailable: The breaker has tripped (no call is made).
            LLMError: This call failed, or the inner rewriter writes no sentences.
        """
        answer: str = self._guarded(lambda: sentence_call(self.inner)(messages, max_tokens))
        return answer

    def continue_sentence(self, messages: list[dict[str, str]], started: str, stops: list[str],
                          max_tokens: int, avoid: list[str]) -> tuple[str, bool]:
        """The inner rewriter's ``continue_sentence`` (:func:`fill_call`), unless the
        backend is down; failures count as :meth:`rewrite`'s do.

        Raises:
            LLMUnavailable: The breaker has tripped (no call is made).
            LLMError: This call failed, or the inner rewriter continues no answers.
        """
        inner = fill_call(self.inner)
        if inner is None:
            raise LLMError(f"the LLM backend {self.name} continues no answers")
        got: tuple[str, bool] = self._guarded(
            lambda: inner(messages, started, stops, max_tokens, avoid))
        return got

    def _guarded(self, call: Callable[[], Any]) -> Any:
        """``call()`` unless the backend is down; a failure counts towards tripping the
        breaker, a success resets the streak, and any other exception becomes an
        :class:`LLMError` (a backend bug must not abort the run either)."""
        with self._lock:
            if self.down:
                raise LLMUnavailable(f"LLM backend {self.name} is down (circuit breaker open)")
            self.calls += 1
        try:
            answer = call()
        except LLMError as exc:
            self._failed(exc)
            raise
        except Exception as exc:
            logger.debug("LLM backend %s raised", self.name, exc_info=True)
            err = LLMError(f"LLM backend {self.name} failed ({type(exc).__name__})")
            self._failed(err)
            raise err from exc
        with self._lock:
            self._streak = 0
        return answer

    def _failed(self, exc: LLMError) -> None:
        with self._lock:
            self._count_failure(exc)

    def _count_failure(self, exc: LLMError) -> None:
        self.failures += 1
        self._streak += 1
        logger.debug("LLM call %d failed: %s", self.calls, exc)
        if self._streak >= self.threshold and not self.down:
            self.down = True
            logger.warning(
                "LLM backend %s failed %d calls in a row (last: %s); treating it as down "
                "for the rest of the run: the remaining spans are redacted",
                self.name,
                self._streak,
                exc,
            )

    def reset(self) -> None:
        """Close the breaker again (e.g. after the server was restarted)."""
        self.down = False
        self._streak = 0

    def close(self) -> None:
        """Close the inner rewriter (if it has ``close``)."""
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


def default_concurrency(rewriter: object) -> int:
    """Requests in flight a rewriter (or the first wrapper in its ``.inner`` chain that
    says so, through ``default_concurrency``) wants by default; 1 when none says."""
    seen = 0
    while rewriter is not None and seen < 8:
        value = getattr(rewriter, "default_concurrency", None)
        if isinstance(value, int) and value >= 1:
            return value
        rewriter = getattr(rewriter, "inner", None)
        seen += 1
    return 1


def find_breaker(rewriter: object) -> CircuitBreaker | None:
    """The :class:`CircuitBreaker` in a chain of wrappers (``.inner``), if any."""
    seen = 0
    while rewriter is not None and seen < 8:
        if isinstance(rewriter, CircuitBreaker):
            return rewriter
        rewriter = getattr(rewriter, "inner", None)
        seen += 1
    return None

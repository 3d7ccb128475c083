"""Log-probabilities of given text under a local causal language model.

llama.cpp's server (embedded ``xllamacpp``, or a ``llama-server`` reached over HTTP) has no
"echo" of prompt log-probabilities. It does report, for every *generated* token, the
log-probability the model gave it before sampling (``n_probs``), and it accepts a GBNF
grammar. A grammar that is one literal string forces the generation to be exactly the span,
so the reported log-probabilities are ``log p(token | left context)`` of the span's tokens:
scoring by forced decoding. The prompt cache (``cache_prompt``) keeps the shared left context
of consecutive spans, so one document costs about one pass over its text plus one decoding
step per span token. Ollama accepts no grammar and returns no prompt log-probabilities, so it
cannot score given text.

A causal model sees only the left context of a span (BERT, in the paper, sees both sides).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from presidio_delink.errors import ConfigError, LLMError

logger = logging.getLogger(__name__)

SCORING_MODEL = "smollm2"
"""The packaged model whose log-probabilities the shipped classifiers were trained on."""

Completion = Callable[[dict[str, Any]], dict[str, Any]]
"""An OpenAI-style ``/v1/completions`` call: request body in, response body out."""

PREAMBLE = "Text:\n"
"""Fixed start of every prompt, so that a span at offset 0 still has a (shared) context."""


@dataclass(frozen=True)
class TokenScores:
    """The tokens the model used to spell one span and their log-probabilities."""

    tokens: tuple[str, ...]
    logprobs: tuple[float, ...]


def gbnf_literal(text: str) -> str:
    """A GBNF grammar whose only sentence is ``text``."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02X}")
        else:
            out.append(ch)
    return 'root ::= "' + "".join(out) + '"'


def _token_entries(response: dict[str, Any]) -> list[tuple[str, bytes, float]]:
    """``(token, bytes, logprob)`` of each generated token, from either logprobs layout."""
    try:
        choice = response["choices"][0]
        lp = choice["logprobs"]
    except (KeyError, IndexError, TypeError) as exc:
        raise LLMError("the completion answer has no log-probabilities (n_probs)") from exc
    out: list[tuple[str, bytes, float]] = []
    if isinstance(lp, dict) and isinstance(lp.get("content"), list):  # llama.cpp / chat layout
        for item in lp["content"]:
            tok = str(item.get("token", ""))
            raw = item.get("bytes")
            data = bytes(raw) if isinstance(raw, list) else tok.encode("utf-8")
            out.append((tok, data, float(item["logprob"])))
    elif isinstance(lp, dict) and isinstance(lp.get("tokens"), list):  # legacy OpenAI layout
        for tok, value in zip(lp["tokens"], lp.get("token_logprobs") or [], strict=False):
            out.append((str(tok), str(tok).encode("utf-8"), float(value)))
    else:
        raise LLMError("the completion answer has log-probabilities in an unknown layout")
    return out


class LogprobScorer:
    """Scores spans of a text with a completion endpoint that takes a grammar.

    Args:
        completion: ``EmbeddedRewriter.completion``, or :class:`HTTPCompletion` for an
            OpenAI-compatible llama.cpp server.
        max_context_chars: Left context given to the model; longer texts are cut at
            ``step_chars``-aligned offsets so that consecutive spans share a prefix.
        step_chars: Alignment of the context start in long texts.
    """

    def __init__(
        self, completion: Completion, max_context_chars: int = 6000, step_chars: int = 2000
    ) -> None:
        if max_context_chars < 100 or step_chars < 1:
            raise ConfigError(
                f"max_context_chars must be >= 100 and step_chars >= 1 "
                f"(got {max_context_chars}, {step_chars})"
            )
        self._completion = completion
        self.max_context_chars = max_context_chars
        self.step_chars = step_chars

    def _context_start(self, text: str, at: int) -> int:
        if at <= self.max_context_chars:
            return 0
        start = ((at - self.max_context_chars) // self.step_chars + 1) * self.step_chars
        # start on a word boundary
        while start < at and not text[start - 1].isspace():
            start += 1
        return start

    def score(self, prefix: str, literal: str) -> TokenScores:
        """Log-probabilities of ``literal`` right after ``prefix`` (context in front)."""
        target = literal.encode("utf-8")
        request = {
            "prompt": PREAMBLE + prefix,
            "max_tokens": len(target) + 2,
            "temperature": 0.0,
            "n_probs": 1,
            "logprobs": 1,
            "grammar": gbnf_literal(literal),
            "cache_prompt": True,
        }
        entries = _token_entries(self._completion(request))
        tokens: list[str] = []
        values: list[float] = []
        got = b""
        for tok, data, value in entries:
            if len(got) >= len(target):
                break  # the end-of-generation token after the literal
            got += data
            tokens.append(tok)
            values.append(value)
        if got != target or not values:
            raise LLMError(
                "the model did not follow the literal grammar (does the server support "
                "'grammar' and 'n_probs'? llama.cpp does; Ollama does not)"
            )
        return TokenScores(tuple(tokens), tuple(values))

    def score_spans(
        self,
        text: str,
        spans: Sequence[tuple[int, int]],
        masked: Sequence[tuple[int, int, str]] = (),
    ) -> list[TokenScores]:
        """Scores of each ``(start, end)`` span of ``text`` given its left context.

        ``masked``: ``(start, end, replacement)`` ranges replaced in the context (those that
        end at or before the scored span begins; a range overlapping it is left as it is).
        Spans are scored in text order, so the prompt cache is reused.
        """
        order = sorted(range(len(spans)), key=lambda i: (spans[i][0], spans[i][1]))
        masks = sorted(masked)
        out: list[TokenScores | None] = [None] * len(spans)
        for i in order:
            start, end = spans[i]
            ws = start
            while ws > 0 and text[ws - 1] in " \t":
                ws -= 1
            ctx = self._context_start(text, ws)
            parts: list[str] = []
            pos = ctx
            for m_start, m_end, repl in masks:
                if m_end > ws or m_start < pos:
                    continue
                parts.append(text[pos:m_start])
                parts.append(repl)
                pos = m_end
            parts.append(text[pos:ws])
            out[i] = self.score("".join(parts), text[ws:end])
        return [s for s in out if s is not None]


class HTTPCompletion:
    """``POST {base}/v1/completions`` of an OpenAI-compatible llama.cpp server (loopback
    only unless ``allow_remote``): the document text is sent to it."""

    def __init__(
        self, base_url: str, model: str = "default", allow_remote: bool = False,
        timeout: float = 60.0,
    ) -> None:
        import httpx

        from presidio_delink.llm.base import check_loopback

        base = base_url.strip().rstrip("/")
        if "://" not in base:
            base = "http://" + base
        if not base.endswith("/v1"):
            base += "/v1"
        self.url = base + "/completions"
        check_loopback(self.url, allow_remote, "OpenAI-compatible")
        self.model = model
        self._client = httpx.Client(timeout=timeout)

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        import httpx

        try:
            resp = self._client.post(self.url, json={"model": self.model, **request})
        except httpx.HTTPError as exc:
            raise LLMError(f"completion request to {self.url} failed: {exc}") from exc
        if resp.status_code != 200:
            raise LLMError(f"completion request to {self.url}: HTTP {resp.status_code}")
        try:
            body = resp.json()
        except ValueError as exc:
            raise LLMError(f"completion answer of {self.url} is not JSON") from exc
        if not isinstance(body, dict):
            raise LLMError(f"completion answer of {self.url} is not a JSON object")
        return body


def make_scorer(
    spec: str, allow_remote: bool = False, timeout: float | None = None
) -> LogprobScorer:
    """A scorer for ``embedded[:PATH.gguf]`` or ``openai:URL[#MODEL]`` (llama.cpp server).

    Raises:
        ConfigError: ``ollama:`` or ``none`` (they cannot score given text), or a bad spec.
    """
    from presidio_delink.llm import DEFAULT_TIMEOUT_S, EMBEDDED_TIMEOUT_S

    kind, _, rest = spec.partition(":")
    if kind == "embedded":
        from presidio_delink.llm.embedded import EmbeddedRewriter, gguf_for

        # The shipped classifiers read SmolLM2's log-probabilities: a plain `embedded`
        # scores with it, whatever model rewrites.
        name = rest or SCORING_MODEL
        if name.lower() != SCORING_MODEL:
            logger.warning(
                "risk scores from %s: the shipped classifiers were trained on %s "
                "log-probabilities, so their decisions may be off", name, SCORING_MODEL,
            )
        rewriter = EmbeddedRewriter(
            gguf_for(name), n_ctx=4096, timeout=timeout or EMBEDDED_TIMEOUT_S
        )
        return LogprobScorer(rewriter.completion)
    if kind == "openai" and rest:
        url, _, model = rest.partition("#")
        return LogprobScorer(
            HTTPCompletion(url, model or "default", allow_remote, timeout or DEFAULT_TIMEOUT_S)
        )
    raise ConfigError(
        f"cannot score text log-probabilities with {spec!r}: use 'embedded[:PATH.gguf]' or "
        "'openai:URL#MODEL' (a llama.cpp server: it takes a grammar and n_probs; Ollama "
        "does not)"
    )

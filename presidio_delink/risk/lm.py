"""Log-probabilities of given text under a local causal language model.

Two scorers with one contract (``score_spans(text, spans, masked=...)`` -> one
:class:`TokenScores` per span): :class:`NumpyScorer`, the default for ``embedded`` models the
numpy engine runs (:mod:`presidio_delink.llm.numpy_lm`: Llama-architecture GGUFs such as the
packaged SmolLM2), and :class:`LogprobScorer`, llama.cpp forced decoding, for ``openai:URL``
(a llama.cpp server) and for embedded models the numpy engine refuses.

**llama.cpp forced decoding.** llama.cpp's server (embedded ``xllamacpp``, or a
``llama-server`` reached over HTTP) has no "echo" of prompt log-probabilities. It does report, for
every *generated* token, the log-probability the model gave it before sampling
(``n_probs``), and it accepts a GBNF grammar. A grammar that is one literal string forces
the generation to be exactly the span, so the reported log-probabilities are ``log p(token |
left context)`` of the span's tokens: scoring by forced decoding. The prompt cache
(``cache_prompt``) keeps the shared left context of consecutive spans, so one document costs
about one pass over its text plus one decoding step per span token. Ollama accepts no
grammar and returns no prompt log-probabilities, so it cannot score given text.

**numpy, one pass.** :class:`NumpyScorer` runs the text once and reads
``log p(token | left context)`` of every token it needs (the numpy engine's pass, computed
by the torch engine where torch is installed and the CPU multiplies bfloat16 in hardware:
:mod:`presidio_delink.llm.torch_lm`, about twice as fast). A span's tokens are the text's own
tokens that share at least one character with ``text[ws:end]``, where ``ws`` is the span's
start moved back over spaces and tabs: the literal the llama.cpp scorer forces. So the
space before a word counts with it (inside the word's token, ``" Istanbul"``, or as a token
of its own, before digits, which the tokenizer splits off one by one); a token that
straddles a span boundary (a span starting or ending inside a word) counts whole, for each
span it touches. Unlike forced decoding, the tokens are the text's canonical ones: llama.cpp
under a literal grammar decodes greedily and often spells a rare word in odd pieces
(``" G", "ali", "p"`` for "Galip"), whose log-probabilities say more about the spelling than
about the word. With ``masked``, each span's tokens follow *its own*
masked left context: the masked text is run once, and all spans' tokens are appended as
branches of it in the same pass (each sees the masked text before its span, and its own
earlier tokens; :meth:`~presidio_delink.llm.numpy_lm.NumpyLM.forward`); a span whose masked
context is not a token-aligned prefix of that text (overlapping spans) is run as a branch of
its own. Both scorers bound the left context alike (``max_context_chars``): spans are
grouped by where their context starts, one pass per group.

A causal model sees only the left context of a span (BERT, in the paper, sees both sides).
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from presidio_delink.errors import ConfigError, InputError, LLMError

if TYPE_CHECKING:
    from presidio_delink.llm.numpy_lm import NumpyLM
    from presidio_delink.llm.torch_lm import TorchLM

logger = logging.getLogger(__name__)

SCORING_MODEL = "smollm2"
"""The packaged model whose log-probabilities the shipped classifiers were trained on."""

Completion = Callable[[dict[str, Any]], dict[str, Any]]
"""An OpenAI-style ``/v1/completions`` call: request body in, response body out."""

PREAMBLE = "Text:\n"
"""Fixed start of every prompt, so that a span at offset 0 still has a (shared) context."""


Spans = Sequence[tuple[int, int]]
"""``(start, end)`` character ranges of a text."""
Masks = Sequence[tuple[int, int, str]]
"""``(start, end, replacement)`` ranges replaced in a text."""


@dataclass(frozen=True)
class TokenScores:
    """The tokens the model used to spell one span and their log-probabilities."""

    tokens: tuple[str, ...]
    logprobs: tuple[float, ...]


class SpanScorer(Protocol):
    """What :class:`~presidio_delink.risk.indicators.Measurer` reads of a scorer."""

    def score(self, prefix: str, literal: str) -> TokenScores: ...

    def score_spans(
        self,
        text: str,
        spans: Sequence[tuple[int, int]],
        masked: Sequence[tuple[int, int, str]] = (),
    ) -> list[TokenScores]: ...


def _check_context(max_context_chars: int, step_chars: int) -> None:
    if max_context_chars < 100 or step_chars < 1:
        raise ConfigError(
            f"max_context_chars must be >= 100 and step_chars >= 1 "
            f"(got {max_context_chars}, {step_chars})"
        )


def context_start(text: str, at: int, max_context_chars: int, step_chars: int) -> int:
    """Where the left context of a span starting at ``at`` begins: 0, or for long texts a
    ``step_chars``-aligned offset (moved to a word start) at most ``max_context_chars``
    before it, so that consecutive spans share a context."""
    if at <= max_context_chars:
        return 0
    start = ((at - max_context_chars) // step_chars + 1) * step_chars
    while start < at and not text[start - 1].isspace():
        start += 1
    return start


def _leading_space_start(text: str, start: int) -> int:
    ws = start
    while ws > 0 and text[ws - 1] in " \t":
        ws -= 1
    return ws


def _masked_prefix(
    text: str, lo: int, hi: int, masks: Sequence[tuple[int, int, str]]
) -> str:
    """``text[lo:hi]`` with the (sorted) mask ranges inside it replaced, greedily in
    order of start; a range overlapping one already replaced is left as it is."""
    parts: list[str] = []
    pos = lo
    for m_start, m_end, repl in masks:
        if m_end > hi or m_start < pos:
            continue
        parts.append(text[pos:m_start])
        parts.append(repl)
        pos = m_end
    parts.append(text[pos:hi])
    return "".join(parts)


def _check_spans(
    text: str, spans: Sequence[tuple[int, int]], masked: Sequence[tuple[int, int, str]]
) -> None:
    for start, end in spans:
        if not (isinstance(start, int) and isinstance(end, int)) or not (
            0 <= start < end <= len(text)
        ):
            raise InputError(
                f"span ({start!r}, {end!r}) lies outside the text (0..{len(text)}) or is empty"
            )
    for m_start, m_end, _ in masked:
        if not (isinstance(m_start, int) and isinstance(m_end, int)) or not (
            0 <= m_start <= m_end <= len(text)
        ):
            raise InputError(f"masked range ({m_start!r}, {m_end!r}) lies outside the text")


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


class ContextScorer:
    """What both scorers share: the left context's window, and :meth:`score_spans` over
    the engine's ``_scores`` (scores of some spans, in the order the engine computes them).

    Args:
        max_context_chars, step_chars: see :func:`context_start`.
    """

    def __init__(self, max_context_chars: int, step_chars: int) -> None:
        _check_context(max_context_chars, step_chars)
        self.max_context_chars = max_context_chars
        self.step_chars = step_chars

    def _context_start(self, text: str, at: int) -> int:
        return context_start(text, at, self.max_context_chars, self.step_chars)

    def score_spans(
        self,
        text: str,
        spans: Sequence[tuple[int, int]],
        masked: Sequence[tuple[int, int, str]] = (),
    ) -> list[TokenScores]:
        """Scores of each ``(start, end)`` span of ``text`` given its left context.

        ``masked``: ``(start, end, replacement)`` ranges replaced in a span's context (those
        that end at or before the span's first token begins; ranges are applied in order of
        start, and one overlapping a range already replaced is left as it is).

        Raises:
            InputError: a span outside the text or empty, or a masked range outside it.
        """
        _check_spans(text, spans, masked)
        out: list[TokenScores | None] = [None] * len(spans)
        for i, sc in self._scores(text, spans, sorted(masked)):
            out[i] = sc
        return [s for s in out if s is not None]

    def _scores(self, text: str, spans: Spans, masks: Masks) -> Iterator[tuple[int, TokenScores]]:
        """``(span number, its scores)`` of every span (``masks``: sorted)."""
        raise NotImplementedError


class LogprobScorer(ContextScorer):
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
        super().__init__(max_context_chars, step_chars)
        self._completion = completion

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

    def _scores(self, text: str, spans: Spans, masks: Masks) -> Iterator[tuple[int, TokenScores]]:
        """One forced decoding per span, in text order, so the prompt cache is reused."""
        for i in sorted(range(len(spans)), key=lambda i: (spans[i][0], spans[i][1])):
            start, end = spans[i]
            ws = _leading_space_start(text, start)
            ctx = self._context_start(text, ws)
            yield i, self.score(_masked_prefix(text, ctx, ws, masks), text[ws:end])


class NumpyScorer(ContextScorer):
    """Scores spans in one forward pass per text with the numpy engine (see the module
    docstring); the model is loaded on first use, once per process and file.

    Args:
        gguf_path: a GGUF the numpy engine runs (:func:`~presidio_delink.llm.numpy_lm.
            unsupported_reason` is None for it).
        max_context_chars, step_chars: as :class:`LogprobScorer`: each pass reads at most
            ``max_context_chars + step_chars`` characters plus the spans it scores, so memory
            stays bounded on long texts.
    """

    def __init__(
        self, gguf_path: str | Path, max_context_chars: int = 6000, step_chars: int = 2000
    ) -> None:
        super().__init__(max_context_chars, step_chars)
        self.gguf_path = gguf_path
        self._lm: NumpyLM | TorchLM | None = None

    @property
    def lm(self) -> NumpyLM | TorchLM:
        """The engine (:func:`~presidio_delink.llm.torch_lm.load_engine`: torch, with
        bfloat16 products, where the CPU has bfloat16, else numpy; the same pass, the
        log-probabilities a little apart: ``benchmarks/results/bench_risk.md``)."""
        if self._lm is None:
            from presidio_delink.llm.torch_lm import load_engine

            self._lm = load_engine(self.gguf_path)
        return self._lm

    def load(self) -> None:
        """Load the model now (dequantising it takes a few seconds)."""
        _ = self.lm

    def _ids(self, text: str) -> list[int]:
        ids = [t.id for t in self.lm.tokenizer.encode(text)]
        return ([self.lm.bos] if self.lm.bos is not None else []) + ids

    def score(self, prefix: str, literal: str) -> TokenScores:
        """Log-probabilities of ``literal``'s tokens right after ``prefix`` (each tokenised
        on its own, as the llama.cpp scorer's prompt and forced literal are)."""
        lm = self.lm
        ctx = self._ids(PREAMBLE + prefix)
        lit = lm.tokenizer.encode(literal)
        if not lit:
            raise InputError("nothing to score: the literal is empty")
        ids = [t.id for t in lit]
        values = lm.forward(ctx + ids[:-1], targets=[(len(ctx) - 1 + j, tid)
                                                   for j, tid in enumerate(ids)])
        return TokenScores(tuple(t.piece for t in lit), tuple(float(v) for v in values))

    def _scores(self, text: str, spans: Spans, masks: Masks) -> Iterator[tuple[int, TokenScores]]:
        """One forward pass per context start (:meth:`_score_group`)."""
        groups: dict[int, list[int]] = {}
        for i, (start, _) in enumerate(spans):
            groups.setdefault(self._context_start(text, _leading_space_start(text, start)),
                              []).append(i)
        for ctx, members in groups.items():
            yield from self._score_group(text, spans, ctx, members, masks).items()

    def _score_group(
        self,
        text: str,
        spans: Sequence[tuple[int, int]],
        ctx: int,
        members: Sequence[int],
        masks: Sequence[tuple[int, int, str]],
    ) -> dict[int, TokenScores]:
        """One forward pass for the spans whose context starts at ``ctx``."""
        lm = self.lm
        bos = [lm.bos] if lm.bos is not None else []
        end = max(spans[i][1] for i in members)
        while end < len(text) and not text[end].isspace():  # whole last word
            end += 1
        shift = len(PREAMBLE) - ctx  # text offset -> offset in the prompt
        toks = lm.tokenizer.encode(PREAMBLE + text[ctx:end])
        starts = [t.start for t in toks]
        ends = [t.end for t in toks]
        own: dict[int, tuple[int, int]] = {}  # span -> its token range in `toks`
        for i in members:  # the tokens sharing a character with text[ws:end]
            ws = _leading_space_start(text, spans[i][0])
            a = bisect.bisect_right(ends, ws + shift)
            b = bisect.bisect_left(starts, spans[i][1] + shift)
            if a >= b:  # only bytes the vocabulary lacks (llama.cpp drops them too)
                raise InputError(f"span {spans[i]} has no token to score")
            own[i] = (a, b)
        ids = bos + [t.id for t in toks]
        k0 = len(bos)
        targets: list[tuple[int, int]] = []
        where: dict[int, list[int]] = {}  # span -> indices of its targets
        if not masks:
            for i, (a, b) in own.items():
                where[i] = list(range(len(targets), len(targets) + b - a))
                targets += [(k0 + j - 1, ids[k0 + j]) for j in range(a, b)]
            shared = ids[:k0 + max(b for _, b in own.values())]
            values = lm.forward(shared, targets=targets)
        else:
            values = self._masked_pass(text, ctx, end, masks, toks, own, bos, targets, where)
        return {
            i: TokenScores(tuple(t.piece for t in toks[a:b]),
                           tuple(float(values[x]) for x in where[i]))
            for i, (a, b) in own.items()
        }

    def _masked_pass(
        self,
        text: str,
        ctx: int,
        end: int,
        masks: Sequence[tuple[int, int, str]],
        toks: Sequence[Any],
        own: dict[int, tuple[int, int]],
        bos: list[int],
        targets: list[tuple[int, int]],
        where: dict[int, list[int]],
    ) -> Any:
        """The masked text once; each span's tokens as a branch after its masked context.

        A span's masked context shares its first ``c`` characters with the masked text (all
        of them, unless masks overlap). The masked text's pre-tokenizer pieces that end at
        ``q <= c - 2`` are also the context's own pieces (a piece's end depends on at most
        one character after it), so the branch starts after the masked text's tokens
        before ``q`` and spells the rest of the context, ``prefix[q:]`` (usually the word
        before the span), with its own tokens: the context is tokenised exactly as on its
        own, as the llama.cpp scorer's prompt is. When the masked text spells the rest with
        the same tokens (usually), the branch starts after those instead.
        """
        from presidio_delink.llm.numpy_lm import Branch

        lm = self.lm
        shift = len(PREAMBLE) - ctx
        full = PREAMBLE + _masked_prefix(text, ctx, end, masks)
        mtoks = lm.tokenizer.encode(full)
        mstarts = [t.start for t in mtoks]
        pieces = [0, *lm.tokenizer.pre_split(full)]
        k0 = len(bos)
        plans: list[tuple[int, int, list[int]]] = []  # span, base, ids of the context's rest
        for i, (a, _) in own.items():
            cut = toks[a].start - shift  # the span's first token, in text offsets
            prefix = PREAMBLE + _masked_prefix(text, ctx, max(ctx, cut), masks)
            c = len(prefix)
            if not full.startswith(prefix):  # or the masked text ends first (overlaps)
                c = next((j for j, (x, y) in enumerate(zip(prefix, full, strict=False))
                          if x != y), len(full))
            q = pieces[max(0, bisect.bisect_right(pieces, c - 2) - 1)]
            rest = [t.id for t in lm.tokenizer.encode(prefix[q:])]
            base = bisect.bisect_left(mstarts, q)
            n = len(rest)
            if n and [t.id for t in mtoks[base:base + n]] == rest:
                # the masked text spells the rest alike (usually): its rows serve
                plans.append((i, k0 + base + n, []))
            elif base == 0:  # nothing shared: the branch spells the whole context
                plans.append((i, 0, bos + rest))
            else:
                plans.append((i, k0 + base, rest))
        need = max([base for _, base, _ in plans] + [1])
        shared = (bos + [t.id for t in mtoks])[:need]
        branches: list[Branch] = []
        row = len(shared)
        for i, base, rest in plans:
            a, b = own[i]
            span_ids = [t.id for t in toks[a:b]]
            # the row that predicts the span's first token: the context's last one
            first = row + len(rest) - 1 if rest else base - 1
            where[i] = list(range(len(targets), len(targets) + len(span_ids)))
            targets.append((first, span_ids[0]))
            targets += [(row + len(rest) + j, span_ids[j + 1]) for j in range(len(span_ids) - 1)]
            branch_ids = rest + span_ids[:-1]
            if branch_ids:
                branches.append(Branch(base, branch_ids))
                row += len(branch_ids)
        return lm.forward(shared, branches, targets)


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
) -> SpanScorer:
    """A scorer for ``embedded[:NAME|PATH.gguf]`` or ``openai:URL[#MODEL]`` (llama.cpp server).

    ``embedded``: :class:`NumpyScorer` when the numpy engine runs the model (Llama
    architecture, byte-level BPE: the packaged SmolLM2), else llama.cpp forced decoding in
    process (:class:`LogprobScorer`, much slower; a warning says why). ``openai``: forced
    decoding on the server.

    Raises:
        ConfigError: ``ollama:`` or ``none`` (they cannot score given text), or a bad spec.
    """
    from presidio_delink.llm import DEFAULT_TIMEOUT_S, EMBEDDED_TIMEOUT_S, parse_spec

    try:
        got = parse_spec(spec)
    except ConfigError as exc:
        raise ConfigError(f"cannot score text log-probabilities with {spec!r}: {exc}") from exc
    if got.kind == "embedded":
        from presidio_delink.llm import numpy_lm
        from presidio_delink.llm.embedded import EmbeddedRewriter, gguf_for

        # The shipped classifiers read SmolLM2's log-probabilities: a plain `embedded`
        # scores with it, whatever model rewrites.
        name = got.name or SCORING_MODEL
        if name.lower() != SCORING_MODEL:
            logger.warning(
                "risk scores from %s: the shipped classifiers were trained on %s "
                "log-probabilities, so their decisions may be off", name, SCORING_MODEL,
            )
        path = gguf_for(name)
        reason = numpy_lm.unsupported_reason(path)
        if reason is None:
            return NumpyScorer(path)
        logger.warning(
            "the numpy engine does not run %s (%s): scoring by llama.cpp forced decoding, "
            "one decoding step per span token (slow)", name, reason,
        )
        rewriter = EmbeddedRewriter(path, n_ctx=4096, timeout=timeout or EMBEDDED_TIMEOUT_S)
        return LogprobScorer(rewriter.completion)
    if got.kind == "openai":
        return LogprobScorer(
            HTTPCompletion(
                got.name, got.model or "default", allow_remote, timeout or DEFAULT_TIMEOUT_S
            )
        )
    raise ConfigError(
        f"cannot score text log-probabilities with {spec!r}: use 'embedded[:PATH.gguf]' or "
        "'openai:URL#MODEL' (a llama.cpp server: it takes a grammar and n_probs; Ollama "
        "does not)"
    )

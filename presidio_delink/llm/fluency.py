"""Fluency check of a replacement: refuse one that makes its sentence far less likely.

Definitions. For a replacement ``r`` of the span ``text[start:end]``, let ``L`` be the left
context (up to :data:`LEFT_CHARS` characters before the span, from a sentence start where
one is near) and ``C`` the continuation (the next :data:`RIGHT_WORDS` words after the
span). Its score is ``s(r) = log p(r + C | L)`` under the packaged SmolLM2-135M (the numpy
or torch log-probability engine of :mod:`presidio_delink.llm.numpy_lm` / ``torch_lm``: one
forward pass per candidate). The reference score is the best of ``s(span)`` (the sentence
as written) and ``s(g)`` over a few neutral generalisations (:data:`NEUTRAL`:
``something``, ``this``, ``some``). The replacement is refused when ``s(r) < reference -
margin`` (default :data:`MARGIN` nats): the sentence reads far worse with it than as written
(``was`` -> ``document``, ``Court`` -> ``regional``, ``arrested`` -> ``the code`` are
refused; ``was`` -> ``had been`` passes). The neutral words alone are no reference: they
read about as badly as those garbled answers (``something`` in place of ``was`` against
``document``), so the span's own reading is taken too; a rare span reads badly itself,
which leaves room for its commoner generalisation. Measured scores:
``benchmarks/results/bench_rewrite.md``.

Why it is sound as a filter: it only ever refuses (the span is then asked about again or
redacted), so the guarantee does not depend on it; the continuation is scored too, so a
replacement that breaks the grammar of what follows costs its log-probability there.
Cost: one short pass (``L``, ``r`` and ``C``) per candidate scored, and 1 + len(NEUTRAL)
per span for the reference (cached).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

__all__ = ["LEFT_CHARS", "MARGIN", "NEUTRAL", "RIGHT_WORDS", "FluencyCheck"]

LEFT_CHARS = 200
RIGHT_WORDS = 4
MARGIN = 12.0
NEUTRAL = ("something", "this", "some")
_RIGHT_RE = re.compile(r"\W*(?:\w+\W*){0,%d}" % RIGHT_WORDS)  # noqa: UP031


class FluencyCheck:
    """Refuses replacements that make their sentence far less likely (module docstring).

    Args:
        gguf_path: A GGUF the numpy engine runs; None means the packaged SmolLM2.
        margin: Nats below the neutral score at which a replacement is refused.

    Attributes:
        scored: Candidates scored.
        refused: Of those, how many were refused.
    """

    def __init__(self, gguf_path: str | Path | None = None, margin: float = MARGIN) -> None:
        if gguf_path is None:
            from presidio_delink.llm.embedded import smollm2_gguf_path

            gguf_path = smollm2_gguf_path()
        self.gguf_path = gguf_path
        self.margin = margin
        self.scored = 0
        self.refused = 0
        self._lm: Any = None
        self._neutral: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def _engine(self) -> Any:
        if self._lm is None:
            from presidio_delink.llm.torch_lm import load_engine

            self._lm = load_engine(self.gguf_path)
        return self._lm

    def _score(self, left: str, literal: str) -> float:
        lm = self._engine()
        ctx = ([lm.bos] if lm.bos is not None else []) + [
            t.id for t in lm.tokenizer.encode(left)
        ]
        ids = [t.id for t in lm.tokenizer.encode(literal)]
        if not ids:
            return 0.0
        targets = [(len(ctx) - 1 + j, tid) for j, tid in enumerate(ids)]
        return float(sum(lm.forward(ctx + ids[:-1], targets=targets)))

    def reason(self, text: str, start: int, end: int, replacement: str) -> str | None:
        """``"reads far worse than the sentence as written"`` when ``replacement`` of
        ``text[start:end]`` is refused, else None."""
        a = max(0, start - LEFT_CHARS)
        left = text[a:start]
        cut = max(left.rfind(". "), left.rfind("\n"))
        if cut > 0:
            left = left[cut + 1 :]
        left = "Text:\n" + left.lstrip()
        m = _RIGHT_RE.match(text, end)
        right = m.group(0).rstrip() if m else ""
        with self._lock:
            key = (left + "\0" + text[start:end], right)
            neutral = self._neutral.get(key)
            if neutral is None:
                refs = (text[start:end], *NEUTRAL)
                neutral = max(self._score(left, g + right) for g in refs)
                self._neutral[key] = neutral
            score = self._score(left, replacement + right)
            self.scored += 1
            if score < neutral - self.margin:
                self.refused += 1
                return "reads far worse than the sentence as written"
        return None

"""Score: how well the sentence reads with each candidate, plus how close its meaning stays.

Definitions. For a run ``text[start:end]`` with left context ``L`` (up to :data:`LEFT_CHARS`
characters, from a sentence start where one is near) and continuation ``C`` (the next
:data:`RIGHT_WORDS` words), a candidate ``c`` reads ``f(c) = log p(c + C | L)`` under the
packaged SmolLM2-135M, through the project's one-pass log-probability engine
(:mod:`presidio_delink.llm.numpy_lm`).  All candidates of a run and the
run's own words are scored in **one** forward pass: ``L`` is the shared prefix and each
candidate a branch that sees it (``Branch``).  A candidate is *refused* when it reads more
than :data:`MARGIN` nats worse than the words it replaces (``f(c) < f(run) - MARGIN``);
the rest are ranked by ``f(c) - f(run) + MEANING_WEIGHT * meaning(c)``, ``meaning`` being
the proposal's prior (:mod:`.propose`), and refused below :data:`FLOOR`: a word of another
sense reads worse than its prior makes up for (``statements`` -> ``contents``,
``convictions`` -> ``beliefs``), and a redaction is better than a changed fact.

Why the run's own reading is the reference: it is what the sentence meant, and a rare
word (the reason it links) reads badly itself, which leaves room for a commoner synonym;
the continuation is scored too, so a candidate that breaks what follows pays there.

Cost: about ``|L| + sum(|c| + |C|)`` tokens per run (30-80); the runs of one round share
passes of up to :data:`BATCH_ROWS` tokens (:meth:`LMScorer.score_many`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "BATCH_ROWS", "FLOOR", "LEFT_CHARS", "MARGIN", "MEANING_WEIGHT", "RIGHT_WORDS", "Ask",
    "LMScorer", "contexts",
]

LEFT_CHARS = 80
RIGHT_WORDS = 3
MARGIN = 10.0
FLOOR = -2.0
MEANING_WEIGHT = 6.0
BATCH_ROWS = 384
"""Tokens per pass of :meth:`LMScorer.score_many` (a context longer than this has a pass
of its own)."""
Ask = tuple[str, Sequence[str], str, bool]
"""``(left, options, right, spaced)``: one context's options to score (:meth:`LMScorer.
score`)."""
_RIGHT_RE = re.compile(r"\W*(?:\w+\W*){0,%d}" % RIGHT_WORDS)  # noqa: UP031


def contexts(text: str, start: int, end: int) -> tuple[str, str]:
    """``(L, C)``: the left context (ending without white space) and the continuation."""
    a = max(0, start - LEFT_CHARS)
    left = text[a:start]
    cut = max(left.rfind(". "), left.rfind("\n"))
    if cut > 0:
        left = left[cut + 1 :]
    m = _RIGHT_RE.match(text, end)
    right = m.group(0).rstrip() if m else ""
    return "Text:\n" + left.lstrip().rstrip(" "), right


class LMScorer:
    """Log-probability of candidates in context, many runs per pass (module docstring).

    Args:
        gguf_path: a GGUF the engine runs; None means the packaged SmolLM2.

    Attributes:
        passes: forward passes run.
        tokens: tokens in them.
    """

    def __init__(self, gguf_path: str | Path | None = None) -> None:
        self.gguf_path = gguf_path
        self.passes = 0
        self.tokens = 0
        self._lm: Any = None
        self._lock = threading.Lock()

    def _engine(self) -> Any:
        if self._lm is None:
            path = self.gguf_path
            if path is None:
                from presidio_delink.llm.embedded import smollm2_gguf_path

                path = smollm2_gguf_path()
            from presidio_delink.llm.numpy_lm import load

            # numpy, not torch: on a CPU without bfloat16 speed these short passes run
            # about twice as fast in one thread
            self._lm = load(path)
        return self._lm

    def score(self, left: str, options: Sequence[str], right: str, spaced: bool) -> list[float]:
        """``log p(option + right | left)`` of each option, in one pass; ``spaced``: a
        space separates ``left`` and the option in the text."""
        return self.score_many([(left, options, right, spaced)])[0]

    def score_many(self, asks: Sequence[Ask]) -> list[list[float]]:
        """:meth:`score` of each ``(left, options, right, spaced)``, in as few passes as
        hold :data:`BATCH_ROWS` tokens each (one context's tokens are never split): the
        engine's products run about twice as fast per token over a few hundred rows as
        over one context's few dozen (:meth:`~presidio_delink.llm.numpy_lm.LayoutEngine.
        forward_groups`); each context sees only its own tokens, as in its own pass."""
        from presidio_delink.llm.numpy_lm import Branch

        out: list[list[float]] = []
        with self._lock:
            lm = self._engine()
            bos = [lm.bos] if lm.bos is not None else []
            groups: list[Any] = []
            rows = 0

            def flush() -> None:
                nonlocal rows
                if not groups:
                    return
                values = lm.forward_groups([(sh, brs, [t for tg in tgs for t in tg])
                                            for sh, brs, tgs in groups])
                self.passes += 1
                self.tokens += rows
                for (_sh, _brs, tgs), logp in zip(groups, values, strict=True):
                    sums, i = [], 0
                    for tg in tgs:
                        sums.append(float(sum(logp[i : i + len(tg)])))
                        i += len(tg)
                    out.append(sums)
                groups.clear()
                rows = 0

            for left, options, right, spaced in asks:
                shared = bos + [t.id for t in lm.tokenizer.encode(left)]
                branches, targets = [], []
                row = len(shared)
                for opt in options:
                    ids = [t.id for t in lm.tokenizer.encode((" " if spaced else "") + opt + right)]
                    branches.append(Branch(len(shared), ids))
                    prev, tg = len(shared) - 1, []
                    for j, tid in enumerate(ids):
                        tg.append((prev, tid))
                        prev = row + j
                    targets.append(tg)
                    row += len(ids)
                if groups and rows + row > BATCH_ROWS:
                    flush()
                groups.append((shared, branches, targets))
                rows += row
            flush()
        return out

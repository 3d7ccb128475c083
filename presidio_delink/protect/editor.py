"""The protections' editor: generalise or rewrite the chosen words before redacting them.

The protections (:mod:`.ranked`, :mod:`.containment`) choose word occurrences to change.
:class:`LoopEditor` hands them to the delink loop's own rewriting step
(:meth:`presidio_delink.rewriting.Rewriting.rewrite_runs`, through :class:`.common.LoopAPI`):
a deterministic generalisation
(:mod:`presidio_delink.generalise`) where one applies and passes the checks, a verified
candidate under the candidate modes (a modifier may be left out: the answer ``""``), else the
configured LLM (one request per passage), each answer validated by the loop's checks
(:func:`presidio_delink.edits.rejection`: no removed PII put back, no copy of the span, ...).
Without an LLM only the generalisations are tried.

Definitions.  Chosen words separated by nothing but spaces, within one segment, form one
*run* (``life imprisonment`` is rewritten as a whole, as the pipeline does).  An answer
for a run is refused here (the run is redacted) when it writes one of the run's words
again, or a word sharing its first five letters (``applicant`` / ``applicants``: one
term for a stemming engine), since the protection needs the term out of the query.

Why the result is still safe: the caller applies the answers, runs its panel again on
the new text (an answer that brings new evidence for the source is chosen again, and
redacted once the protection's rewrite rounds are spent) and redacts whatever an answer
made linkable by the pipeline's rule.  Cost: what the generalisations and LLM requests
of the runs cost; nothing without an LLM beyond a few regular expressions per run.
"""

from __future__ import annotations

from collections.abc import Sequence

from presidio_delink.edits import REDACTED, Run
from presidio_delink.protect.common import LoopAPI
from presidio_delink.results import DelinkResult
from presidio_delink.rewriting import audit_method, audit_source

__all__ = ["LoopEditor", "runs_of", "shares_term"]

_PREFIX = 5


def runs_of(text: str, spans: Sequence[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """``(start, end, words)`` runs of ``spans`` (sorted, distinct) joined across spaces."""
    out: list[list[int]] = []
    for a, b in sorted(set(spans)):
        if out and text[out[-1][1] : a].strip(" ") == "" and "\n" not in text[out[-1][1] : a]:
            out[-1][1] = b
            out[-1][2] += 1
        else:
            out.append([a, b, 1])
    return [(a, b, n) for a, b, n in out]


def _words(s: str) -> list[str]:
    return [w for w in "".join(c if c.isalnum() else " " for c in s.casefold()).split() if w]


def shares_term(old: str, new: str) -> bool:
    """Whether ``new`` writes a word of ``old`` again (or one with its first five letters)."""
    olds = _words(old)
    for w in _words(new):
        for o in olds:
            if w == o or (len(w) >= _PREFIX and len(o) >= _PREFIX and w[:_PREFIX] == o[:_PREFIX]):
                return True
    return False


def _widened_runs(text: str, rs: list[Run]) -> list[Run]:
    """``rs`` with the runs inside a name whose head noun may stand for it, or inside a
    gloss in brackets, replaced by the whole name or gloss
    (:func:`~presidio_delink.candidates.chooser.widened_span`, as the loop widens them):
    ``the Federal Labour Court`` -> ``the court``; ``(Verfassungsgerichtshof)`` left
    out, every word of it."""
    from presidio_delink.candidates.chooser import widened_span

    out: dict[tuple[int, int], Run] = {}
    for r in rs:
        g = widened_span(text, r.start, r.end)
        if g is None:
            out[(r.start, r.end)] = r
            continue
        had = out.get(g)
        out[g] = Run(g[0], g[1], r.n_words + (had.n_words if had is not None else 0))
    return sorted(out.values(), key=lambda r: r.start)


class LoopEditor:
    """Proposes generalisations and LLM rewrites for the protection's chosen words.

    Args:
        loop: the delink loop (its rewriter, checks and tokenizer).
        res: the document's result: LLM calls, seconds, tokens and refusals are added to it.
        forbidden: strings an answer may not put back (the removed PII).
    """

    def __init__(self, loop: LoopAPI, res: DelinkResult, forbidden: Sequence[str] = ()) -> None:
        self.loop = loop
        self.res = res
        self.forbidden = [f for f in forbidden if isinstance(f, str) and f.strip()]

    def proposable(self, text: str, spans: Sequence[tuple[int, int]]) -> list[bool] | None:
        """Whether each span may get a candidate (the loop's estimate,
        :meth:`~presidio_delink.rewriting.Rewriting.proposable`); None: no estimate."""
        return self.loop.proposable(text, spans)

    def propose(
        self, text: str, spans: Sequence[tuple[int, int]]
    ) -> dict[tuple[int, int], tuple[str, str, str | None]]:
        """``{(start, end) of a run: (replacement, method, source)}`` for the runs it
        rewrote; ``method`` is ``"generalised"`` (deterministic), ``"candidate"`` (a
        verified candidate, :mod:`presidio_delink.candidates`; ``source`` says whose) or
        ``"llm"``."""
        rs = [Run(a, b, n) for a, b, n in runs_of(text, spans)]
        if not rs:
            return {}
        chosen = {(r.start, r.end): text[r.start : r.end] for r in rs}
        if getattr(self.loop, "chooser", None) is not None:
            rs = _widened_runs(text, rs)
        answers = self.loop.rewrite_runs(text, rs, self.forbidden, self.res)
        out: dict[tuple[int, int], tuple[str, str, str | None]] = {}
        for r in rs:
            new, reason = answers.get((r.start, r.end), (None, None))
            choice = self.res.choices.pop((r.start, r.end), None)
            if new is None or new == REDACTED or (not new.strip() and new != ""):
                continue  # "": a modifier left out
            # the words the protection chose must go; a widened name keeps its head
            old = " ".join(w for (a, b), w in chosen.items() if r.start <= a and b <= r.end)
            if shares_term(old, new):
                self.res.refusals["keeps the term"] = self.res.refusals.get("keeps the term", 0) + 1
                continue
            method = audit_method(reason)
            out[(r.start, r.end)] = (new, method, audit_source(method, choice))
        return out

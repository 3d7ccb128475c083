"""What a delink run gives back: :class:`DelinkResult` per document and its
:class:`AuditEntry` edits.  Imports nothing of ours, so every layer (the loop, the
protections, the adapters, the audit) shares these types without importing each other."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from presidio_delink.linkage import LinkageReport

__all__ = ["AuditEntry", "DelinkResult"]


@dataclass
class AuditEntry:
    """One edit: what was there, why, what replaced it, when and how.

    ``ngram``, ``df``, ``groups``, ``view`` and ``arity`` describe the flagged N-gram the
    edit breaks (of those it overlaps, one it lies within if any, else the one found in
    the fewest groups); ``start`` and ``end`` are the edit's character offsets in the text
    of its pass (pass 1: the input text).  Edits of ``protect`` (``pass_no`` 0, made after
    nothing links) break no flagged N-gram: ``ngram`` is ``""``, ``df`` and ``arity`` 0,
    and ``reason`` says which search they answer.
    """

    original: str
    df: int
    arity: int
    ngram: str
    replacement: str
    pass_no: int
    # "llm", "generalised" (a deterministic generalisation), "candidate" (chosen among
    # verified candidates, :mod:`presidio_delink.candidates`), "sentence" (a block of a
    # sentence written again, :mod:`presidio_delink.sentences`) or "redacted"
    method: str
    n_words: int
    reason: str | None = None  # why the LLM's answer was not used
    start: int = 0
    end: int = 0
    view: str = ""
    groups: int = 0
    # where the replacement came from: "generalisation", "lexicon", "collection", "llm"
    source: str | None = None
    score: float | None = None  # the chosen candidate's score in context
    candidates: int = 0  # candidates proposed for this run
    refused: dict[str, int] = field(default_factory=dict)  # of those, refused per check


@dataclass
class DelinkResult:
    """The outcome for one document."""

    id: str
    text: str | None  # None when failed: a linkable text is never returned
    input_text: str
    passes: int
    linkable_after: bool
    failed: bool = False
    error: str | None = None
    audit: list[AuditEntry] = field(default_factory=list)
    marks: list[tuple[int, int, str]] = field(default_factory=list)
    first_report: LinkageReport | None = None
    llm_calls: int = 0
    llm_seconds: float = 0.0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    generated_tokens: int = 0
    drafted_tokens: int = 0  # drafted by prompt-lookup decoding (sentence rewrites)
    accepted_tokens: int = 0  # of those, accepted by the model
    refusals: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    n_words: int = 0
    optimum_words: int = 0
    words_rewritten: int = 0
    words_redacted: int = 0
    pii_redacted: int = 0
    warnings: list[str] = field(default_factory=list)
    semantic: dict[str, Any] | None = None
    # the candidate choices of the current pass, by run (start, end): read into the audit
    choices: dict[tuple[int, int], Any] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The JSONL record (``text``, ``linkable_after``, ``audit``, figures)."""
        out = {
            "id": self.id,
            "text": self.text,
            "linkable_after": self.linkable_after,
            "failed": self.failed,
            "error": self.error,
            "passes": self.passes,
            "audit": [asdict(a) for a in self.audit],
            "llm_calls": self.llm_calls,
            "llm_seconds": round(self.llm_seconds, 3),
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "generated_tokens": self.generated_tokens,
            "refusals": self.refusals,
            "seconds": round(self.seconds, 3),
            "words": self.n_words,
            "optimum_words": self.optimum_words,
            "words_rewritten": self.words_rewritten,
            "words_redacted": self.words_redacted,
            "pii_redacted": self.pii_redacted,
            "warnings": self.warnings,
            "semantic": self.semantic,
        }
        if self.drafted_tokens:
            # only where prompt-lookup drafting ran: the records of every other run keep
            # the fields they had
            out["drafted_tokens"] = self.drafted_tokens
            out["accepted_tokens"] = self.accepted_tokens
        return out

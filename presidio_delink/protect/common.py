"""What both protections share: the outcome record, the one edit step, the relink rule,
and the interface of the delink loop they use.

The protections choose word occurrences; :func:`edit_spans` is the one place where they
change text (an :class:`Editor` may rewrite a run, else it is redacted), and
:func:`relink` redacts, by the pipeline's rule, whatever an edit made linkable, so that
what they release stays linkage-free at the loop's ``k`` and arity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from presidio_delink.edits import REDACTED, Run, apply, runs, stabbing_tokens
from presidio_delink.index import NgramIndex
from presidio_delink.linkage import analyze
from presidio_delink.results import AuditEntry, DelinkResult
from presidio_delink.settings import DelinkSettings

__all__ = ["Editor", "LoopAPI", "ProtectOutcome", "edit_spans", "relink"]


class LoopAPI(Protocol):
    """What the protections use of the delink loop
    (:class:`~presidio_delink.core.DelinkLoop` implements it)."""

    index: NgramIndex
    settings: DelinkSettings
    monitor: Any

    def rewrite_runs(
        self,
        text: str,
        rs: list[Run],
        forbidden: list[str],
        res: DelinkResult,
        origins: Sequence[tuple[int, int, str]] = (),
    ) -> dict[tuple[int, int], tuple[str | None, str | None]]:
        """Validated replacements of the runs (a generalisation, a candidate or the
        LLM's answer), ``{(start, end): (replacement or None, reason)}``."""
        ...


class Editor(Protocol):
    """Proposes replacements for spans of a text (a generaliser, an LLM):
    :class:`~presidio_delink.protect.editor.LoopEditor`."""

    def propose(
        self, text: str, spans: Sequence[tuple[int, int]]
    ) -> Mapping[tuple[int, int], str | tuple[str, str]]:
        """``{(start, end): replacement}`` or ``{(start, end): (replacement, method)}``
        for what it can rewrite; a key may cover several adjacent spans (a run); the
        spans it does not cover are redacted."""
        ...


@dataclass
class ProtectOutcome:
    """What protection did to one text."""

    text: str
    rounds: int = 0
    words_cut: int = 0
    words_relinked: int = 0  # redacted because a cut made an N-gram linkable
    words_rewritten: int = 0  # rewritten by an editor instead of cut
    source_rank: int | None = None
    audit: list[AuditEntry] = field(default_factory=list)
    marks: list[tuple[int, int, str]] = field(default_factory=list)


def edit_spans(
    text: str,
    spans: Sequence[tuple[int, int]],
    marks: Sequence[tuple[int, int, str]],
    editor: Editor | None = None,
    reason: str = "ranked term",
) -> tuple[str, list[tuple[int, int, str]], list[AuditEntry], int, int]:
    """Apply one round of edits: every span (a word occurrence) is replaced.

    The one place where the protections change text: ``editor`` (a generaliser or an LLM)
    may propose a replacement for a span or a run of adjacent spans; a proposal that
    writes one of the replaced words again (casefolded) is refused and its spans redacted.
    Whatever comes out is verified by the caller (the attacks run again; the index is
    checked and what links is redacted).

    Returns:
        ``(text, marks, audit entries, words redacted, words rewritten)``.
    """
    todo = sorted(set(spans))
    proposals = editor.propose(text, todo) if editor is not None and todo else {}
    edits: list[tuple[int, int, str]] = []
    audit: list[AuditEntry] = []
    red = rew = 0
    done: set[tuple[int, int]] = set()
    for (a, b), value in sorted(proposals.items()):
        new, method = (value, "generalised") if isinstance(value, str) else value
        inside = [s for s in todo if a <= s[0] and s[1] <= b and s not in done]
        old = text[a:b]
        if not inside or not new.strip() or any(
            w in new.casefold().split() for w in old.casefold().split()
        ):
            continue
        if edits and edits[-1][1] > a:  # overlaps an accepted proposal
            continue
        done.update(inside)
        rew += len(inside)
        edits.append((a, b, new))
        audit.append(
            AuditEntry(
                original=old, df=0, arity=0, ngram="", replacement=new, pass_no=0,
                method=method, n_words=len(inside), reason=reason, start=a, end=b,
            )
        )
    for a, b in todo:
        if (a, b) in done or any(x <= a and b <= y for x, y, _ in edits):
            continue
        red += 1
        edits.append((a, b, REDACTED))
        audit.append(
            AuditEntry(
                original=text[a:b], df=0, arity=0, ngram="", replacement=REDACTED, pass_no=0,
                method="redacted", n_words=1, reason=reason, start=a, end=b,
            )
        )
    order = sorted(range(len(edits)), key=lambda i: edits[i][0])  # audit in text order
    text, marks2 = apply(text, sorted(edits), marks)
    return text, marks2, [audit[i] for i in order], red, rew


def relink(out: ProtectOutcome, index: NgramIndex, k: int, arity: int, max_n: int | None) -> None:
    """Redact what a cut made linkable (the pipeline's rule), until nothing links."""
    for _ in range(1000):
        rep = analyze(index, out.text, k=k, arity=arity, max_n=max_n)
        if not rep.linkable:
            return
        segs = index.tokenizer.segments(out.text)
        tokens = [t for s in segs for t in s]
        chosen = stabbing_tokens([(a, b) for a, b, _ in rep.spans()], tokens)
        edits = [(r.start, r.end, REDACTED) for r in runs(chosen, segs)]
        out.words_relinked += len(chosen)
        out.text, out.marks = apply(out.text, edits, out.marks)
    raise AssertionError("a redaction loop did not terminate")  # pragma: no cover

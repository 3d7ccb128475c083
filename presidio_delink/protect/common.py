"""What both protections share: the job (:class:`ProtectJob`: the text, its source, the
guarantee to keep, the editor), the outcome record, the one edit step, the relink rule,
and the interface of the delink loop they use.

The protections choose word occurrences; :func:`edit_spans` is the one place where they
change text (an :class:`Editor` may rewrite a run, else it is redacted), and
:func:`relink` redacts, by the pipeline's rule, whatever an edit made linkable, so that
what they release stays linkage-free at the loop's ``k`` and arity.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from presidio_delink.edits import REDACTED, Run, apply, dropped, runs, stabbing_tokens
from presidio_delink.index import NgramIndex
from presidio_delink.linkage import analyze
from presidio_delink.results import AuditEntry, DelinkResult
from presidio_delink.settings import DelinkSettings

__all__ = [
    "DEFAULT_REDACTION_COST", "DEFAULT_REWRITE_ROUNDS", "Editor", "Guarantee", "LoopAPI",
    "ProtectJob", "ProtectOutcome", "edit_spans", "relink", "rewritten_before",
]

#: Rounds in which the protections ask their editor before they only redact.
DEFAULT_REWRITE_ROUNDS = 3
#: What a word the editor cannot rewrite costs a protection's cover, against 1 for a
#: word it may rewrite (:meth:`ProtectJob.costs`): among words that lower the source's
#: score alike, the cover takes the rewritable ones, and one that would be redacted
#: only where it does this much more per word.  Chosen on held-in TAB train/dev texts
#: (``benchmarks/results/rewrite_candidates.md``, run of 2026-12-03 at 327d8f6).
DEFAULT_REDACTION_COST = 3.0


#: What the protections ask of the loop's rewriter: ``(text, runs, forbidden, result)``
#: to validated replacements of the runs (a generalisation, a candidate or the LLM's
#: answer), ``{(start, end): (replacement or None, reason)}``.
RewriteRuns = Callable[
    [str, list[Run], list[str], DelinkResult],
    dict[tuple[int, int], tuple[str | None, str | None]],
]


class LoopAPI(Protocol):
    """What the protections use of the delink loop
    (:class:`~presidio_delink.core.DelinkLoop` implements it)."""

    index: NgramIndex
    settings: DelinkSettings
    monitor: Any

    @property
    def rewrite_runs(self) -> RewriteRuns:
        """The loop's :meth:`~presidio_delink.rewriting.Rewriting.rewrite_runs`."""
        ...

    def proposable(self, text: str, spans: Sequence[tuple[int, int]]) -> list[bool] | None:
        """The loop's :meth:`~presidio_delink.rewriting.Rewriting.proposable`."""
        ...


class Editor(Protocol):
    """Proposes replacements for spans of a text (a generaliser, an LLM):
    :class:`~presidio_delink.protect.editor.LoopEditor`."""

    def propose(
        self, text: str, spans: Sequence[tuple[int, int]]
    ) -> Mapping[tuple[int, int], str | tuple[str, str, str | None]]:
        """``{(start, end): replacement}`` or ``{(start, end): (replacement, method,
        source)}`` (the audit's) for what it can rewrite; a key may cover several
        adjacent spans (a run); the spans it does not cover are redacted."""
        ...

    def proposable(self, text: str, spans: Sequence[tuple[int, int]]) -> list[bool] | None:
        """Whether each span may be rewritten rather than redacted (an estimate made
        before asking; None: no estimate, every span alike)."""
        ...


@dataclass(frozen=True)
class Guarantee:
    """The phrase guarantee a protection keeps: the text stays linkage-free at ``k`` and
    ``arity``, for N-grams up to ``max_n`` (None: the index's longest)."""

    k: int
    arity: int = 1
    max_n: int | None = None

    @classmethod
    def of(cls, settings: DelinkSettings) -> Guarantee:
        """The delink loop's own guarantee."""
        return cls(settings.k, settings.arity, settings.max_n)


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
    may propose a replacement for a span or a run of adjacent spans, or for a wider span
    holding them (a whole name or gloss); a proposal that writes one of the chosen words
    again (casefolded) is refused and its spans redacted.
    A span inside or across an earlier rewrite (a mark labelled ``llm``: the loop's or an
    earlier round's) is not offered to the editor and is redacted: a synonym of a
    synonym drifts from what the text said (read: ``possession`` -> ``relation`` ->
    ``individual``), as the loop gives such a run no candidate either.
    Whatever comes out is verified by the caller (the attacks run again; the index is
    checked and what links is redacted).

    Returns:
        ``(text, marks, audit entries, words redacted, words rewritten)``.
    """
    todo = sorted(set(spans))
    before = _rewrites(marks)
    ask = [s for s in todo if not _overlaps(s, before)]
    proposals = editor.propose(text, ask) if editor is not None and ask else {}
    edits: list[tuple[int, int, str]] = []
    audit: list[AuditEntry] = []
    red = rew = 0
    done: set[tuple[int, int]] = set()
    for (a, b), value in sorted(proposals.items()):
        new, method, source = (
            (value, "generalised", "generalisation") if isinstance(value, str) else value
        )
        inside = [s for s in todo if a <= s[0] and s[1] <= b and s not in done]
        old = text[a:b]
        chosen = " ".join(text[x:y] for x, y in inside)  # a widened name keeps its head
        if not inside or (not new.strip() and new != "") or any(
            w in new.casefold().split() for w in chosen.casefold().split()
        ):
            continue
        if edits and edits[-1][1] > a:  # overlaps an accepted proposal
            continue
        done.update(inside)
        rew += len(inside)
        edits.append(dropped(text, a, b) if new == "" else (a, b, new))
        audit.append(
            AuditEntry(
                original=old, df=0, arity=0, ngram="", replacement=new, pass_no=0,
                method=method, n_words=len(inside), reason=reason, start=a, end=b,
                source=source,
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


def rewritten_before(span: tuple[int, int], marks: Sequence[tuple[int, int, str]]) -> bool:
    """Whether ``span`` overlaps a mark of an earlier rewrite (label ``llm``)."""
    return _overlaps(span, _rewrites(marks))


def _rewrites(marks: Sequence[tuple[int, int, str]]) -> list[tuple[int, int]]:
    """The spans of the marks of earlier rewrites (label ``llm``), sorted."""
    return sorted((a, b) for a, b, label in marks if label == "llm")


def _overlaps(span: tuple[int, int], sorted_spans: Sequence[tuple[int, int]]) -> bool:
    """Whether ``span`` overlaps one of ``sorted_spans`` (sorted, non-overlapping)."""
    a, b = span
    i = bisect.bisect_left(sorted_spans, (b, b))  # the spans starting before b
    return i > 0 and sorted_spans[i - 1][1] > a


def relink(out: ProtectOutcome, index: NgramIndex, keep: Guarantee) -> None:
    """Redact what a cut made linkable (the pipeline's rule), until nothing links."""
    for _ in range(1000):
        rep = analyze(index, out.text, k=keep.k, arity=keep.arity, max_n=keep.max_n)
        if not rep.linkable:
            return
        segs = index.tokenizer.segments(out.text)
        tokens = [t for s in segs for t in s]
        chosen = stabbing_tokens([(a, b) for a, b, _ in rep.spans()], tokens)
        edits = [(r.start, r.end, REDACTED) for r in runs(chosen, segs)]
        out.words_relinked += len(chosen)
        out.text, out.marks = apply(out.text, edits, out.marks)
    raise AssertionError("a redaction loop did not terminate")  # pragma: no cover


@dataclass(frozen=True)
class ProtectJob:
    """One text for a protection to edit, and what every protection keeps while it does.

    Args:
        text: the pipeline's output (linkage-free under ``keep``).
        group: the source's group id (``NgramIndex.doc_groups``).
        keep: the phrase guarantee every edit keeps (:func:`relink`).
        marks: the pipeline's edit marks, carried along.
        editor: proposes rewrites of the chosen words (:class:`.editor.LoopEditor`;
            default: redaction), asked in the first ``rewrite_rounds`` rounds; later
            rounds redact (a rewrite that brought new evidence for the source is
            redacted then, so the loop ends).
    """

    text: str
    group: str
    keep: Guarantee
    marks: Sequence[tuple[int, int, str]] = ()
    editor: Editor | None = None
    rewrite_rounds: int = DEFAULT_REWRITE_ROUNDS
    redaction_cost: float = DEFAULT_REDACTION_COST

    def outcome(self) -> ProtectOutcome:
        """The outcome before any round: the text and marks as given."""
        return ProtectOutcome(text=self.text, marks=list(self.marks))

    def costs(
        self, out: ProtectOutcome, spans: Sequence[tuple[int, int]]
    ) -> dict[tuple[int, int], float] | None:
        """What changing each span of ``out.text`` costs the round ``out`` is in: 1 for a
        word the editor may rewrite (:meth:`Editor.proposable`), ``redaction_cost`` for
        one it would redact; None where every word costs the same (no editor, its
        rounds spent, or no estimate from it)."""
        if self.editor is None or out.rounds > self.rewrite_rounds or not spans:
            return None
        estimate = getattr(self.editor, "proposable", None)
        todo = sorted(set(spans))
        ok = estimate(out.text, todo) if estimate is not None else None
        if ok is None:
            return None
        llm = _rewrites(out.marks)
        return {
            sp: 1.0 if o and not _overlaps(sp, llm) else self.redaction_cost
            for sp, o in zip(todo, ok, strict=True)
        }

    def edit(
        self, out: ProtectOutcome, index: NgramIndex, spans: Sequence[tuple[int, int]],
        reason: str,
    ) -> None:
        """One round of ``out``: :func:`edit_spans` of ``spans`` (the editor asked in the
        first ``rewrite_rounds`` rounds), then :func:`relink`."""
        editor = self.editor if out.rounds <= self.rewrite_rounds else None
        out.text, out.marks, audit, red, rew = edit_spans(
            out.text, spans, out.marks, editor, reason=reason
        )
        out.audit.extend(audit)
        out.words_cut += red
        out.words_rewritten += rew
        relink(out, index, self.keep)

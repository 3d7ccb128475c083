"""`resolve_overlaps`: PII and linkage results of one analysis, made safe to anonymize
in a single `AnonymizerEngine` call.

Presidio resolves a partial overlap of two results of different types by cutting one of
them at the other's edge, which glues placeholders together or leaves half a word
(``newly [REDACTED]<ORGANIZATION> 52``).  Here:

* overlapping PII results become one (the type of the highest score), and one that
  starts or ends inside a word is widened to the whole word: PII is never cut;
* PII wins over linkage: each ``LINKABLE_NGRAM`` span loses what PII covers (a PII
  placeholder already breaks every N-gram through it), linkage spans that overlap or
  are separated by spaces only (never a line break) are merged, and each remaining
  piece is trimmed to the whole written words it holds (a piece with no whole word is dropped).

Result: disjoint spans, each starting and ending on word boundaries or at the original
PII boundaries, so no placeholder sits inside a word or against another.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from presidio_analyzer import RecognizerResult

from presidio_delink.presidio.recognizer import ENTITY, LinkageResult
from presidio_delink.text import Tokenizer

_WORDS = Tokenizer(fold="fine")
_SPACES = re.compile(r" *")


def _merge(
    spans: list[tuple[int, int, int]], text: str | None = None
) -> list[tuple[int, int, list[int]]]:
    """Union of overlapping ``(start, end, i)`` spans, with the indices merged; with
    ``text``, also of spans separated only by spaces (as Presidio's anonymizer merges them
    anyway).  A line or paragraph break between two spans keeps them apart: one
    placeholder must not swallow the document's structure."""
    out: list[tuple[int, int, list[int]]] = []
    for a, b, i in sorted(spans):
        spaces = text is not None and _SPACES.fullmatch(text[out[-1][1] : a]) if out else False
        if out and (a < out[-1][1] or spaces):
            pa, pb, idx = out[-1]
            out[-1] = (pa, max(pb, b), idx + [i])
        else:
            out.append((a, b, [i]))
    return out


def resolve_overlaps(results: Sequence[RecognizerResult], text: str) -> list[RecognizerResult]:
    """Disjoint results for one anonymization of ``text``: PII wins, linkage spans are
    trimmed around it to whole words (see the module docstring).

    Args:
        results: analyzer results (PII and ``LINKABLE_NGRAM``) for ``text``.
        text: the analysed text.

    Returns:
        New results sorted by start; the inputs are not modified.
    """
    pii = [r for r in results if r.entity_type != ENTITY and r.end > r.start]
    link = [r for r in results if r.entity_type == ENTITY and r.end > r.start]
    out: list[RecognizerResult] = []
    for a, b, idx in _merge([(*_widen(text, r.start, r.end), i) for i, r in enumerate(pii)]):
        best = max((pii[i] for i in idx), key=lambda r: (r.score, r.end - r.start))
        out.append(
            RecognizerResult(
                best.entity_type,
                a,
                b,
                best.score,
                analysis_explanation=best.analysis_explanation,
                recognition_metadata=best.recognition_metadata,
            )
        )
    blocked = sorted((r.start, r.end) for r in out)
    words = _WORDS.tokens(text)
    starts = [w.start for w in words]
    ends = [w.end for w in words]
    pieces: list[tuple[int, int, int]] = []
    for i, r in enumerate(link):
        for a, b in _subtract(r.start, r.end, blocked):
            first = bisect.bisect_left(starts, a)  # first word starting at or after a
            last = bisect.bisect_right(ends, b) - 1  # last word ending at or before b
            if first <= last:
                pieces.append((starts[first], ends[last], i))
    for a, b, idx in _merge(pieces, text):
        best = max((link[i] for i in idx), key=lambda r: r.score)
        out.append(
            LinkageResult(
                ENTITY,
                a,
                b,
                best.score,
                analysis_explanation=best.analysis_explanation,
                recognition_metadata=best.recognition_metadata,
            )
        )
    return sorted(out, key=lambda r: (r.start, r.end))


def _widen(text: str, a: int, b: int) -> tuple[int, int]:
    """A span that starts or ends inside a run of letters and digits, widened to it (a
    PII placeholder never sits inside a word)."""
    while 0 < a < len(text) and text[a - 1].isalnum() and text[a].isalnum():
        a -= 1
    while 0 < b < len(text) and text[b - 1].isalnum() and text[b].isalnum():
        b += 1
    return a, b


def _subtract(a: int, b: int, blocked: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, pos = [], a
    for x, y in blocked:
        if y <= pos or x >= b:
            continue
        if x > pos:
            out.append((pos, x))
        pos = max(pos, y)
    if pos < b:
        out.append((pos, b))
    return out

"""A delinked document as the reviewer sees it: unchanged text and edits, in order.

Definitions.  A document is a list of *chunks* whose current texts, joined, are the
reviewed text.  A chunk of kind ``same`` is text the delinker left as it was; every other
chunk is one *edit*: ``before`` (the delinker's input there), ``proposed`` (its output
there) and ``text`` (what the reviewer keeps).  Kinds: ``rewrite`` (an LLM answer),
``generalisation`` (a deterministic generaliser's answer), ``sentence`` (a sentence the
LLM wrote again, :mod:`presidio_delink.sentences`), ``redaction`` (a ``[REDACTED]``-style
placeholder), ``pii`` (a Presidio ``<ENTITY_TYPE>`` placeholder) and ``reviewer`` (text
the reviewer redacted or replaced).

How edits are found.  The output record holds the text and the audit entries (original,
replacement, the N-gram and df that forced it) but no offsets, so the input and the output
are aligned word by word (``difflib.SequenceMatcher`` over words, spaces and punctuation,
each placeholder one token); every stretch that differs is an edit, and the audit entries
whose original lies inside its ``before`` (later passes: inside an earlier entry's
replacement) explain it.  Alignment is exact on the texts (joining the chunks gives the
output back, tested); only the explanations are matched heuristically.  The entries of
one pass are matched in the order of their offsets (``start``): the loop records a pass's
sentence rewrites before its other edits.

Sentence rewrites.  The delinker writes a rewritten sentence as one edit, from its first
changed word to its last, and audits each changed block of the word alignment
(``method="sentence"``).  The review keeps that unit: the edits of one input sentence
(:func:`~presidio_delink.sentences.rewrite.sentence_spans`) from its first sentence block
to its last, with the unchanged words between them, become one ``sentence`` edit, so a
revert gives the sentence its original words back, not a mix of two sentences.  A ``pii``
edit is never joined into one (its revert stays refused on its own).
:func:`sentence_of` gives the whole sentence around an edit: as input, as delinked, now.  Cost: the
matcher's, near-linear on documents that share most of their words.  Without the input
the whole output is one ``same`` chunk: the reviewer can still redact or replace any part.
"""

from __future__ import annotations

import bisect
import difflib
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from presidio_delink.edits import sentence_bounds
from presidio_delink.sentences.rewrite import sentence_spans

__all__ = [
    "Chunk",
    "KINDS",
    "build_chunks",
    "joined",
    "replace_range",
    "sentence_of",
    "sentences_of",
]

KINDS = ("same", "rewrite", "generalisation", "sentence", "redaction", "pii", "reviewer")
SENTENCE = "sentence"  # the audit method of a block of a sentence written again

# One token: a bracketed upper-case label or a Presidio <ENTITY>, a word, a run of spaces,
# one other character.
_TOKEN_RE = re.compile(r"\[[A-Z][A-Z0-9_ ]*\]|<[A-Z][A-Z0-9_]*>|\w+|\s+|[^\w\s]")
# Sentence pieces: split after sentence punctuation and line breaks (kept in the piece).
_SENTENCE_RE = re.compile(r"(?<=[.!?;:\n])")
_PII_RE = re.compile(r"<[A-Z][A-Z0-9_]*>")
_PLACEHOLDER_RE = re.compile(r"\[[A-Z][A-Z0-9_ ]*\]|\*{3,}|█+")


@dataclass
class Chunk:
    """One stretch of the document (see the module docstring).

    Attributes:
        kind: one of :data:`KINDS`.
        before: the delinker's input here ("" for unchanged text: equal to ``text``).
        proposed: the delinker's output here.
        text: the current (reviewed) text.
        status: ``pending``, ``accepted``, ``edited`` or ``reverted`` ("" for ``same``).
        ngram: the N-gram that forced the edit ("" when unknown).
        df: its document frequency (0 when unknown).
        arity: the size of its linkable combination.
        method: the audit's methods, in order (``llm``, ``redacted``...), "" when unknown.
        passes: the delinker's passes that touched it.
    """

    kind: str
    text: str
    before: str = ""
    proposed: str = ""
    status: str = ""
    ngram: str = ""
    df: int = 0
    arity: int = 1
    method: str = ""
    passes: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Chunk:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def joined(chunks: list[Chunk]) -> str:
    """The current text of the document."""
    return "".join(c.text for c in chunks)


def _tokens(text: str) -> list[str]:
    return _TOKEN_RE.findall(text)


def build_chunks(output: str, audit: list[dict[str, Any]], input_text: str | None) -> list[Chunk]:
    """The chunks of one delinked record (see the module docstring)."""
    if input_text is None or input_text == output:
        return [Chunk("same", output)] if output else []
    # Sentences first (the edits are local), then words inside the sentences that differ:
    # word-level matching of a whole document is quadratic in its common words.
    pieces: list[list[Any]] = []  # [tag, before, after], tag "equal" or "change"
    for tag, before, after in _ops(input_text, output):
        if pieces and pieces[-1][0] == tag:
            pieces[-1][1] += before
            pieces[-1][2] += after
        else:
            pieces.append([tag, before, after])
    # Edits separated only by spaces are one edit: "Sinop" -> "the county".
    merged: list[list[Any]] = []
    for i, p in enumerate(pieces):
        between = p[0] == "equal" and p[1].isspace() and i < len(pieces) - 1
        if merged and merged[-1][0] == "change" and (p[0] == "change" or between):
            merged[-1][1] += p[1]
            merged[-1][2] += p[2]
        else:
            merged.append(list(p))
    chunks: list[Chunk] = []
    for tag, before, after in merged:
        if tag == "equal":
            chunks.append(Chunk("same", after))
        else:
            chunks.append(Chunk("rewrite", after, before, after, "pending"))
    _explain([c for c in chunks if c.kind != "same"], audit)
    return _join_sentences(chunks, input_text)


def _ops(a_text: str, b_text: str) -> list[tuple[str, str, str]]:
    """``(tag, before, after)`` pieces covering both texts in order, word-level."""
    sa, sb = _SENTENCE_RE.split(a_text), _SENTENCE_RE.split(b_text)
    out: list[tuple[str, str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, sa, sb, autojunk=False).get_opcodes():
        x, y = "".join(sa[i1:i2]), "".join(sb[j1:j2])
        if tag == "equal":
            out.append(("equal", x, y))
            continue
        a, b = _tokens(x), _tokens(y)
        if "".join(a) != x or "".join(b) != y:  # cannot happen: every char is a token
            raise ValueError("tokenisation lost characters")
        for t, k1, k2, m1, m2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            out.append(
                ("equal" if t == "equal" else "change", "".join(a[k1:k2]), "".join(b[m1:m2]))
            )
    return [o for o in out if o[1] or o[2]]


def _explain(edits: list[Chunk], audit: list[dict[str, Any]]) -> None:
    """Attach the audit entries to the edits and set each edit's kind."""
    first_pass = min((int(e.get("pass_no", 1)) for e in audit), default=1)
    attached: list[list[dict[str, Any]]] = [[] for _ in edits]
    at: dict[int, int] = {}  # per pass: entries of one pass, sorted, are in document order
    # passes in order (a later pass is matched inside an earlier one's replacements); in a
    # pass, by offset (the loop audits sentence rewrites before the pass's other edits);
    # a stable sort keeps the order of records without offsets
    ordered = sorted(audit, key=lambda e: (int(e.get("pass_no", 1)), _offset(e.get("start"))))
    for e in ordered:
        orig, repl = str(e.get("original", "")), str(e.get("replacement", ""))
        if not orig:
            continue
        p = int(e.get("pass_no", 1))
        pat = _word_re(orig)
        for j in range(at.get(p, 0), len(edits)):
            if p == first_pass:
                hit = bool(pat.search(edits[j].before))
            else:  # a later pass edits an earlier replacement, and its own answer stays
                hit = any(pat.search(str(x.get("replacement", ""))) for x in attached[j]) and (
                    _word_re(repl).search(edits[j].proposed) is not None
                )
            if hit:
                attached[j].append(e)
                at[p] = j
                break
    for c, es in zip(edits, attached, strict=True):
        if es:
            c.ngram = str(es[0].get("ngram", ""))
            c.df = int(es[0].get("df", 0))
            c.arity = int(es[0].get("arity", 1))
            c.method = ", ".join(dict.fromkeys(str(x.get("method", "")) for x in es))
            c.passes = sorted({int(x.get("pass_no", 1)) for x in es})
        c.kind = _kind(c)


def _offset(x: Any) -> int:
    """An entry's ``start`` (0 where a record has none, or not a number)."""
    return x if isinstance(x, int) and not isinstance(x, bool) else 0


def _word_re(s: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(s) + r"(?!\w)")


def _methods(c: Chunk) -> list[str]:
    return [m for m in c.method.split(", ") if m]


def _kind(c: Chunk) -> str:
    if SENTENCE in _methods(c):
        return "sentence"
    words = _TOKEN_RE.findall(c.proposed)
    content = [w for w in words if not w.isspace() and w not in ".,;:"]
    if content and all(_PII_RE.fullmatch(w) for w in content) and not c.method:
        return "pii"
    if content and all(_PLACEHOLDER_RE.fullmatch(w) or _PII_RE.fullmatch(w) for w in content):
        return "pii" if _PII_RE.search(c.proposed) and not c.method else "redaction"
    if "general" in c.method:
        return "generalisation"
    return "rewrite"


def _sentences(text: str) -> list[int]:
    """Where the sentences of ``text`` start, as the sentence rewriter cuts them
    (:func:`~presidio_delink.sentences.rewrite.sentence_spans`), gaps included: each
    sentence runs to the next one's start, so every offset lies in one."""
    spans = sentence_spans(sentence_bounds(text), text)
    return [0] + [a for a, _ in spans[1:]]


def _sentence_no(starts: list[int], pos: int) -> int:
    return max(0, bisect.bisect_right(starts, pos) - 1)


def _input_layout(chunks: list[Chunk]) -> tuple[list[str], list[int]]:
    """Each chunk's input text (``before``; unchanged text as it is) and its offset there."""
    parts = [c.text if c.kind == "same" else c.before for c in chunks]
    starts, pos = [], 0
    for p in parts:
        starts.append(pos)
        pos += len(p)
    return parts, starts


def _join_sentences(chunks: list[Chunk], input_text: str) -> list[Chunk]:
    """The edits of each rewritten sentence as one ``sentence`` edit (module docstring):
    from its first block audited as ``sentence`` to its last, through unchanged text and
    unexplained or redacted blocks (a block the audit names no original for, a named
    phrase the answer kept and the loop redacted), never through a ``pii`` edit or an
    edit of another method."""
    bounds = _sentences(input_text)
    _, starts = _input_layout(chunks)
    out: list[Chunk] = []
    i = 0
    while i < len(chunks):
        c = chunks[i]
        if c.kind != "sentence":
            out.append(c)
            i += 1
            continue
        no = _sentence_no(bounds, starts[i])
        last, j = i, i + 1
        while j < len(chunks) and _sentence_no(bounds, starts[j]) == no:
            d = chunks[j]
            if d.kind == "sentence":
                last = j
            elif d.kind == "pii" or (d.kind != "same" and set(_methods(d)) - {"redacted"}):
                break
            j += 1
        out.append(_merged(chunks[i : last + 1]) if last > i else c)
        i = last + 1
    return out


def _merged(group: list[Chunk]) -> Chunk:
    """One ``sentence`` edit over consecutive chunks (unchanged ones count on both sides)."""
    edits = [c for c in group if c.kind != "same"]
    why = next((c for c in edits if c.ngram), edits[0])
    return Chunk(
        "sentence",
        "".join(c.text for c in group),
        "".join(c.text if c.kind == "same" else c.before for c in group),
        "".join(c.text if c.kind == "same" else c.proposed for c in group),
        "pending",
        why.ngram,
        why.df,
        why.arity,
        ", ".join(dict.fromkeys(m for c in edits for m in _methods(c))),
        sorted({p for c in edits for p in c.passes}),
    )


def sentence_of(chunks: list[Chunk], i: int) -> dict[str, str]:
    """The whole sentence(s) of the input that edit ``chunks[i]`` lies in, three ways:
    ``before`` (the input), ``proposed`` (the delinker's output) and ``text`` (now, as
    reviewed).  Sentences are cut in the input (the texts of the unchanged chunks and the
    edits' ``before``); an edit that overlaps the sentence is taken whole."""
    return sentences_of(chunks, [i])[i]


def sentences_of(chunks: list[Chunk], which: list[int]) -> dict[int, dict[str, str]]:
    """:func:`sentence_of` for each edit of ``which``, the input cut into sentences once."""
    parts, starts = _input_layout(chunks)
    bounds = _sentences("".join(parts))
    ends = bounds[1:] + [starts[-1] + len(parts[-1]) if parts else 0]
    out: dict[int, dict[str, str]] = {}
    for i in which:
        a = bounds[_sentence_no(bounds, starts[i])]
        b = ends[_sentence_no(bounds, max(starts[i], starts[i] + len(parts[i]) - 1))]
        lo, hi = i, i  # the chunks overlapping [a, b): a run around i
        while lo > 0 and starts[lo - 1] + len(parts[lo - 1]) > a:
            lo -= 1
        while hi + 1 < len(chunks) and starts[hi + 1] < b:
            hi += 1
        views = {"before": "", "proposed": "", "text": ""}
        for j in range(lo, hi + 1):
            c, s = chunks[j], starts[j]
            if c.kind == "same":
                piece = c.text[max(a, s) - s : min(b, s + len(c.text)) - s]
                for k in views:
                    views[k] += piece
            else:
                views["before"] += c.before
                views["proposed"] += c.proposed
                views["text"] += c.text
        out[i] = {k: v.strip() for k, v in views.items()}
    return out


def replace_range(chunks: list[Chunk], start: int, end: int, new: str) -> tuple[list[Chunk], int]:
    """Replace ``[start, end)`` of the current text, which must lie inside one unchanged
    chunk, by a ``reviewer`` edit; returns the new chunks and the index of the edit.

    Raises:
        ValueError: the range is empty, out of bounds or not inside one unchanged chunk.
    """
    pos = 0
    for i, c in enumerate(chunks):
        a, b = pos, pos + len(c.text)
        pos = b
        if not a <= start < b:
            continue
        if end > b or end <= start:
            break
        if c.kind != "same":
            raise ValueError("the selection is an edit: edit or revert that edit instead")
        old = c.text[start - a : end - a]
        parts = [
            Chunk("same", c.text[: start - a]),
            Chunk("reviewer", new, old, old, "edited"),
            Chunk("same", c.text[end - a :]),
        ]
        at = i + (1 if parts[0].text else 0)
        out = chunks[:i] + [p for p in parts if p.text or p.kind != "same"] + chunks[i + 1 :]
        return out, at
    raise ValueError("select text inside one stretch of unchanged text")


def copy_chunks(chunks: list[Chunk]) -> list[Chunk]:
    """A deep enough copy to edit without touching ``chunks``."""
    return [replace(c, passes=list(c.passes)) for c in chunks]

"""A delinked document as the reviewer sees it: unchanged text and edits, in order.

Definitions.  A document is a list of *chunks* whose current texts, joined, are the
reviewed text.  A chunk of kind ``same`` is text the delinker left as it was; every other
chunk is one *edit*: ``before`` (the delinker's input there), ``proposed`` (its output
there) and ``text`` (what the reviewer keeps).  Kinds: ``rewrite`` (an LLM answer),
``generalisation`` (a deterministic generaliser's answer), ``redaction`` (a
``[REDACTED]``-style placeholder), ``pii`` (a Presidio ``<ENTITY_TYPE>`` placeholder) and
``reviewer`` (text the reviewer redacted or replaced).

How edits are found.  The output record holds the text and the audit entries (original,
replacement, the N-gram and df that forced it) but no offsets, so the input and the output
are aligned word by word (``difflib.SequenceMatcher`` over words, spaces and punctuation,
each placeholder one token); every stretch that differs is an edit, and the audit entries
whose original lies inside its ``before`` (later passes: inside an earlier entry's
replacement) explain it.  Alignment is exact on the texts (joining the chunks gives the
output back, tested); only the explanations are matched heuristically.  Cost: the
matcher's, near-linear on documents that share most of their words.  Without the input
the whole output is one ``same`` chunk: the reviewer can still redact or replace any part.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any

__all__ = ["Chunk", "KINDS", "build_chunks", "joined", "replace_range"]

KINDS = ("same", "rewrite", "generalisation", "redaction", "pii", "reviewer")

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
    return chunks


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
    at: dict[int, int] = {}  # per pass: entries of one pass are in document order
    for e in audit:
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


def _word_re(s: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(s) + r"(?!\w)")


def _kind(c: Chunk) -> str:
    words = _TOKEN_RE.findall(c.proposed)
    content = [w for w in words if not w.isspace() and w not in ".,;:"]
    if content and all(_PII_RE.fullmatch(w) for w in content) and not c.method:
        return "pii"
    if content and all(_PLACEHOLDER_RE.fullmatch(w) or _PII_RE.fullmatch(w) for w in content):
        return "pii" if _PII_RE.search(c.proposed) and not c.method else "redaction"
    if "general" in c.method:
        return "generalisation"
    return "rewrite"


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

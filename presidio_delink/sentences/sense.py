"""The sense check of a sentence written again: the words the model writes for a named
phrase must name what the phrase names, or a class above it.

The fact check (:mod:`presidio_delink.sentences.facts`) guards the words outside the named
phrases; :func:`unvouched` guards the words written for them, through WordNet
(:meth:`~presidio_delink.candidates.lexicon.WordNet.stands_for`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from presidio_delink.edits import FUNCTION_WORDS
from presidio_delink.results import DelinkResult
from presidio_delink.sentences.align import changes
from presidio_delink.sentences.facts import PLACEHOLDER

__all__ = ["unvouched", "wordnet_sense"]


def wordnet_sense(chooser: Any, res: DelinkResult) -> Callable[[str, str], bool] | None:
    """The sense check of the candidates ``chooser``'s WordNet
    (:meth:`~presidio_delink.candidates.lexicon.WordNet.stands_for`); None, with a warning
    in ``res``, when there is no chooser or no WordNet files."""
    wordnet = getattr(chooser, "wordnet", None)
    if wordnet is not None and wordnet.available:
        return wordnet.stands_for
    warn = "the LLM's words for named phrases were not checked for sense (no WordNet)"
    if warn not in res.warnings:
        res.warnings.append(warn)
    return None


def unvouched(
    shown: str,
    answer: str,
    spans: Sequence[tuple[int, int]],
    sense: Callable[[str, str], bool],
) -> tuple[str, ...]:
    """The new content words ``answer`` writes for the named ``spans`` of ``shown`` that
    ``sense`` does not vouch for, in order.  In each changed block over a named phrase, a
    new word is a content word (no function word, no placeholder) that the answer says
    more often than ``shown`` does: a word of the input moved is not new, but ``was
    sentenced ... to be convicted`` -> ``to be sentenced`` says a new thing.  It is
    vouched for when the block's old words as a whole, or one of its old content words,
    stand for it (``sense(old, new)``), or the old words stand for the new ones as a
    whole (``criminal convictions`` -> ``criminal offences``).  A small model's words for
    a named phrase read well in place and may name something else (``no interest should
    be paid`` -> ``no fee``); the fact check never sees them."""
    own = Counter(w.casefold() for w in _WORDS.findall(shown))
    said = Counter(w.casefold() for w in _WORDS.findall(answer))
    out: list[str] = []
    for ch in changes(shown, answer):
        if not any(a < max(ch.end, ch.start + 1) and ch.start < b for a, b in spans):
            continue
        # a word of the input moved, not one said more often than the input says it
        new = [w for w in _content(ch.new) if said[w.casefold()] > own[w.casefold()]]
        if not new or sense(ch.original, ch.new):
            continue
        olds = [ch.original, *_content(ch.original)]
        out += [w for w in new if not any(sense(o, w) for o in olds)]
    return tuple(dict.fromkeys(out))


_WORDS = re.compile(r"[^\W\d_]+(?:['\u2019-][^\W\d_]+)*")


def _content(text: str) -> list[str]:
    """The content words of ``text``: words of letters that are no function word (a
    placeholder's letters are no word)."""
    return [w for w in _WORDS.findall(PLACEHOLDER.sub(" ", text))
            if w.casefold() not in FUNCTION_WORDS]

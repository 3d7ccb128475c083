"""What each ranked reading's tokeniser makes of a sequence of words: stop words, character
n-grams within and across words, word n-grams, kept pairs and window pairs (the terms of
the members of :mod:`~presidio_delink.attacks.fts5` that are not FTS5 tokenizers).

Pure functions of the words, used alike for the collection's documents (when a reading is
built) and for a released text's words (when it is queried): an empty word stands for a
placeholder of the text.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "CHAR_NGRAMS", "CROSS_NGRAMS", "GAPPED_NGRAMS", "KEPT_NGRAMS", "SPANNING_NGRAMS",
    "STOP_WORDS", "WINDOW_NGRAMS", "WORD_NGRAMS", "char_grams", "cross_grams", "kept_grams",
    "spanning_grams", "window_grams", "word_grams",
]

_STOP = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves
"""
#: English stop words of the ``-stop`` members (a classic IR list: articles, pronouns,
#: auxiliaries, prepositions and conjunctions).
STOP_WORDS = frozenset(_STOP.split())

#: Character n-gram readings (not FTS5 tokenizers): a word's terms are the ``n``-grams of
#: the word padded with one space each side (``" word "`` gives ``" wor"``, ``"word"``,
#: ``"ord "`` for n = 4; a padded word shorter than ``n`` is its own term).  What a fuzzy
#: or n-gram search engine matches: a changed ending or a plural keeps most of a word's
#: grams, and a rare word's grams stay rare.
CHAR_NGRAMS = {"char4": 4}
#: Character n-grams across word boundaries: of the words joined by one space (padded
#: with one each end), a word gives the grams that start on the space before it or on
#: one of its letters, so a gram such as ``"d th"`` carries two words in their order.
#: Editing the word a gram starts in removes the gram.
CROSS_NGRAMS = {"char4x": 4}
#: Word n-gram tokenisers: each word starts the gram of it and the next ``n - 1`` words.
WORD_NGRAMS = {"word2": 2, "word3": 3}
#: The same where no placeholder of the text stands inside the gram (*kept* grams: the
#: words stand side by side in the text, as in its source): a word before a placeholder
#: starts none.  The collection's documents are read as by every member, their words
#: without segment marks (a source document holds no placeholders).
#: The grams of :data:`WORD_NGRAMS` join the words on either side of a placeholder, a
#: pair the source never held; a reader of the kept pairs alone found far more sources
#: (``benchmarks/results/ranked_crowd.md``).
KEPT_NGRAMS = {"word2k": 2}
#: Ordered word pairs at most ``n`` positions apart, a placeholder of the text holding one
#: position and pairing with nothing (*window* pairs): each word starts the pairs of it
#: and each of the next ``n`` positions' words.  The words left on either side of a
#: redaction stood that far apart in the source, so every such pair of an output is one
#: its source holds; a held-out reader of them (BM25 over pairs up to three positions
#: apart) found the source of most TAB test outputs of a protection that did not read
#: them (``benchmarks/results/ranked_crowd.md``).  Collection documents hold no
#: placeholders.  ``pair5w`` and ``pair8w``: the same up to five and eight positions
#: apart (held-out readers of wider windows find more against a protection that reads
#: three).
WINDOW_NGRAMS = {"pair3w": 3, "pair5w": 5, "pair8w": 8}
#: The tokenisers that read where a text's placeholders stand.
GAPPED_NGRAMS = frozenset(KEPT_NGRAMS) | frozenset(WINDOW_NGRAMS)
#: The tokenisers whose grams run across words: a word's grams depend on the next words.
SPANNING_NGRAMS = (
    frozenset(CROSS_NGRAMS) | frozenset(WORD_NGRAMS) | frozenset(KEPT_NGRAMS)
    | frozenset(WINDOW_NGRAMS)
)


def spanning_grams(tok: str, words: Sequence[str]) -> list[tuple[str, ...]]:
    """Each word's grams under a tokenizer of :data:`SPANNING_NGRAMS`: the grams it
    starts (an empty word stands for a placeholder)."""
    if tok in WORD_NGRAMS:
        return word_grams(words, WORD_NGRAMS[tok])
    if tok in KEPT_NGRAMS:
        return kept_grams(words, KEPT_NGRAMS[tok])
    if tok in WINDOW_NGRAMS:
        return window_grams(words, WINDOW_NGRAMS[tok])
    return cross_grams(words, CROSS_NGRAMS[tok])


def window_grams(words: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """Each word's window pairs (:data:`WINDOW_NGRAMS`): it and each of the next ``n``
    words, an empty word (a placeholder) holding a position and pairing with nothing."""
    out: list[tuple[str, ...]] = [()] * len(words)
    for i, w in enumerate(words):
        if w:
            out[i] = tuple(f"{w} {v}" for v in words[i + 1 : i + 1 + n] if v)
    return out


def kept_grams(words: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """Each word's kept word ``n``-gram (:data:`KEPT_NGRAMS`): it and the next ``n - 1``
    words where none of them is empty (a placeholder), else none."""
    out: list[tuple[str, ...]] = [()] * len(words)
    for i in range(len(words) - n + 1):
        if all(words[i : i + n]):
            out[i] = (" ".join(words[i : i + n]),)
    return out


def word_grams(words: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """Each word's word ``n``-gram: it and the next ``n - 1`` words (none for an empty
    word, which is skipped, nor where fewer words follow)."""
    live = [i for i, w in enumerate(words) if w]
    out: list[tuple[str, ...]] = [()] * len(words)
    for j in range(len(live) - n + 1):
        out[live[j]] = (" ".join(words[i] for i in live[j : j + n]),)
    return out


def cross_grams(words: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """Each word's grams under :data:`CROSS_NGRAMS` (none for an empty word; the empty
    words are skipped when joining)."""
    s = " " + " ".join(w for w in words if w) + " "
    out: list[tuple[str, ...]] = []
    pos = 0  # the space before the current word
    for w in words:
        if not w:
            out.append(())
            continue
        last = min(pos + len(w), len(s) - n)
        grams = tuple(s[q : q + n] for q in range(pos, last + 1))
        out.append(grams or ((s,) if pos == 0 else ()))  # a text shorter than n
        pos += len(w) + 1
    return out


def char_grams(word: str, n: int) -> tuple[str, ...]:
    """The ``n``-grams of ``" word "`` (see :data:`CHAR_NGRAMS`); none for an empty word."""
    if not word:
        return ()
    padded = f" {word} "
    if len(padded) <= n:
        return (padded,)
    return tuple(padded[i : i + n] for i in range(len(padded) - n + 1))

"""The one text model of presidio-delink: normalisation, words, segments and N-grams.

The index is built and queried with this module only, so that a phrase of a
de-identified text and the same phrase in the collection always give the same keys.

Design (see docs/design.md, "Text models (views) and groups"):

* Words are found in the *original* text, so every word keeps its character offsets.
  A word is a run of letters/digits, together with the invisible characters that can
  hide inside a word (zero-width spaces and joiners, soft hyphens, BOMs, other Unicode
  format characters, combining marks).  Each word is then normalised: NFKC, casefold,
  invisible characters removed, diacritics folded ("Biçer" == "bicer").  A normalised
  word that NFKC splits ("½" -> "1⁄2") yields several words with the same offsets.
* Segments break at punctuation and at redaction placeholders; no N-gram crosses a
  segment boundary.  To stay conservative against other tokenisers, punctuation
  *directly between two word characters* ("36110/97", "well-known", "3.5", "U.S")
  separates words but does not break the segment, and apostrophes never break
  ("applicants' lawyer" stays one segment).  Whitespace of any kind only separates words.
* N-gram keys are the normalised words joined by a single space.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from presidio_delink.confusables import latin, table_version
from presidio_delink.errors import ConfigError
from presidio_delink.text_pieces import (
    apply_breaks,
    cut_at_dashes,
    cut_at_marks,
    iter_ngrams,
    join_soft,
)

__all__ = ["DEFAULT_MAX_N", "DEFAULT_PLACEHOLDERS", "FOLDS", "Token", "Tokenizer", "fold_word",
           "normalize_word"]

DEFAULT_MAX_N = 8
MAX_SUPPORTED_N = 16

#: Redaction placeholders that act as segment boundaries: ``[REDACTED]`` and other
#: bracketed upper-case labels, Presidio's ``<ENTITY_TYPE>``, and runs of ``*``/``█``.
DEFAULT_PLACEHOLDERS: tuple[str, ...] = (
    r"\[[A-Z][A-Z0-9_ \-]*\]",
    r"<[A-Z][A-Z0-9_]*>",
    r"\*{2,}",
    r"█+",
)

_MARK_CATEGORIES = frozenset(("Mn", "Mc", "Me"))
_INVISIBLE_CATEGORIES = _MARK_CATEGORIES | {"Cf"}
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_APOSTROPHES = "'\u2019\u2018\u02bc\u02b9\u0060\u00b4\u2032"
_WORD = r"[^\W_]+"
_WORD_RE = re.compile(_WORD)
# A word of the fine text models: words joined by inner hyphens, apostrophes (each
# variant kept as written) and periods stay one word (``non-pecuniary``, ``applicant’s``).
_FINE_WORD_RE = re.compile(rf"{_WORD}(?:[\-\u2010\u2011.{_APOSTROPHES}]{_WORD})*")

#: Word models: ``folded`` (NFKC, casefold, diacritics and look-alike letters folded),
#: ``accent`` (casefold only, code points as written, words split at every punctuation
#: mark, as SQLite FTS5's ``unicode61`` tokenizer with ``remove_diacritics 0``; no Unicode
#: normalisation, so a decomposed ``c`` + cedilla is not ``ç``), ``fine`` (NFC and
#: casefold only; inner hyphens, apostrophes and periods kept in the word), ``case``
#: (``fine`` without casefolding), ``folded-dash`` (``folded``, and a free-standing dash
#: breaks the segment as punctuation does: see :data:`DASHES`), ``surface`` (``fine``
#: words, and every character between two words other than white space breaks the
#: segment: exact substring search).
#:
#: ``fine`` and ``surface`` also write look-alike letters of other scripts as the ASCII
#: letters they imitate (as ``folded`` does): an adversary who folds look-alikes *and*
#: keeps inner apostrophes reads ``аpplicant’s`` (Cyrillic ``а``) as ``applicant’s``.
#: Over a collection without look-alike spellings (the promise) this merges nothing
#: that an adversary who does not fold them could tell apart: the look-alike word is
#: found nowhere by that adversary.  A combining mark that NFC cannot compose
#: (``casé`` + U+0301, ``t`` + U+0301) is not a letter of the word for these word models,
#: as for every ``\w``-based tokeniser: it separates words (``casé``, and for ``surface``
#: it also ends the phrase, not being white space).
FOLDS = ("folded", "accent", "fine", "case", "folded-dash", "surface")
_FOLDED = ("folded", "folded-dash")  # the word models of fold_word
_FINE_WORDS = ("fine", "case", "surface")  # words keep inner hyphens, apostrophes, periods
_LOOKALIKES = ("fine", "surface")  # fine words with look-alike letters folded
# Either a *chunk* (group 1: words joined by single in-word punctuation characters, e.g.
# ``36110/97``, ``well-known``, ``applicant's``) or one punctuation mark or symbol
# between chunks (group 2; it breaks the segment only if :func:`breaks` says so).
_SCANNER = re.compile(rf"({_WORD}(?:(?:[^\w\s]|_){_WORD})*)|([^\w\s]|_)")

# Dashes.  Standing alone (not inside a word: a list bullet, a parenthetical dash), a dash
# ends a phrase for the ``folded-dash`` word model only: an adversary who reads it as
# punctuation counts ``and the seriousness`` only where no dash runs through it
# (``and\n- the seriousness`` elsewhere), fewer documents than the other views count.
DASHES = frozenset("-\u2010\u2011\u2012\u2013\u2014\u2015\u2212")

# Punctuation that does not end a phrase: search engines skip these, so N-grams run
# through them (more N-grams are checked, never fewer).
_NON_BREAKING = frozenset(_APOSTROPHES + "§¶%‰‱#&@*†‡•·/\\′″‴※")
_BREAKING_CATEGORIES = frozenset(("Po", "Ps", "Pe", "Pi", "Pf"))


@lru_cache(maxsize=4096)
def breaks(mark: str) -> bool:
    """Does this punctuation mark or symbol (between words) break a segment?

    Sentence and clause punctuation, brackets and quotes do (Unicode categories Po, Ps,
    Pe, Pi, Pf), except apostrophes and word-like marks such as ``§``, ``%``, ``/``,
    ``&``.  Dashes, symbols (``+``, ``=``, ``$``, ``°``...) and connectors do not.
    """
    return mark not in _NON_BREAKING and unicodedata.category(mark) in _BREAKING_CATEGORIES


# ASCII marks that break a segment even between two word characters ("7(1)", "3.5" in the
# models that split words at every mark): a phrase never runs through them.
_ASCII_BREAKS = "".join(c for c in map(chr, range(33, 127)) if not c.isalnum() and breaks(c))
_SPLIT = re.compile("[" + re.escape(_ASCII_BREAKS) + "]")
_SPLIT_KEEP_PERIOD = re.compile("[" + re.escape(_ASCII_BREAKS.replace(".", "")) + "]")


def split_chunk(chunk: str, keep_period: bool, every: bool = False) -> list[tuple[int, str]]:
    """A chunk (words joined by single marks) cut at the marks that break a segment:
    ``(offset, sub-chunk)`` pairs; a break lies between consecutive ones.  A period inside
    a word (``U.S``, ``3.5``) is part of the word when ``keep_period`` (the fine models);
    with ``every`` (the ``surface`` model) every mark between two fine words breaks."""
    if every:
        return [(m.start(), m.group()) for m in _FINE_WORD_RE.finditer(chunk)]
    if chunk.isascii():
        rx = _SPLIT_KEEP_PERIOD if keep_period else _SPLIT
        if rx.search(chunk) is None:
            return [(0, chunk)]
        cuts = [m.start() for m in rx.finditer(chunk)]
    else:
        cuts = [
            i
            for i, c in enumerate(chunk)
            if not c.isalnum() and breaks(c) and not (keep_period and c == ".")
        ]
        if not cuts:
            return [(0, chunk)]
    out = []
    pos = 0
    for i in cuts:
        out.append((pos, chunk[pos:i]))
        pos = i + 1
    out.append((pos, chunk[pos:]))
    return out


def strip_invisible(text: str, *, offsets: bool = True) -> tuple[str, list[int] | None]:
    """Remove characters that can hide inside a word, keeping an offset map.

    Removes Unicode categories Mn/Mc/Me (combining marks, so diacritics fold) and Cf
    (zero-width space/joiners, soft hyphen, word joiner, BOM, bidi controls, tags).

    Returns:
        ``(stripped, omap)`` where ``omap[i]`` is the offset in ``text`` of character ``i``
        of ``stripped`` (plus one final entry ``len(text)``), or ``None`` when nothing
        was removed or ``offsets`` is False.
    """
    if text.isascii():
        return text, None
    drop = [
        m.start()
        for m in _NON_ASCII.finditer(text)
        if unicodedata.category(m.group()) in _INVISIBLE_CATEGORIES
    ]
    if not drop:
        return text, None
    stripped = text
    for ch in {text[i] for i in drop}:
        stripped = stripped.replace(ch, "")
    if not offsets:
        return stripped, None
    keep = np.ones(len(text) + 1, dtype=bool)
    keep[drop] = False
    return stripped, np.flatnonzero(keep).tolist()


def _has_marks(text: str) -> bool:
    """Whether ``text`` holds a combining mark (Unicode categories Mn, Mc, Me)."""
    return any(
        unicodedata.category(c) in _MARK_CATEGORIES for c in _NON_ASCII.findall(text)
    )


@lru_cache(maxsize=1 << 18)
def _normalize_slow(surface: str) -> tuple[str, ...]:
    s = unicodedata.normalize("NFKC", surface).casefold()
    s = unicodedata.normalize("NFKD", s)
    s = "".join(c for c in s if unicodedata.category(c) not in _INVISIBLE_CATEGORIES)
    s = unicodedata.normalize("NFKC", s)
    return tuple(_WORD_RE.findall(s))


def normalize_word(surface: str) -> tuple[str, ...]:
    """Normalise one surface word; returns 0, 1 or more normalised words.

    NFKC, casefold, diacritics and invisible characters removed; a word that NFKC splits
    ("\u00bd" -> "1\u20442") gives several words.

    >>> normalize_word("Bi\u00e7er")
    ('bicer',)
    >>> normalize_word("hid\u200bden")
    ('hidden',)
    """
    if surface.isascii():
        return (surface.lower(),)
    return _normalize_slow(surface)


@lru_cache(maxsize=1 << 18)
def fine_words(
    surface: str, casefold: bool = True, nfc: bool = True, lookalikes: bool = False
) -> tuple[str, ...]:
    """The word model of the ``fine``, ``surface``, ``case`` and ``accent`` views: NFC
    (unless ``nfc`` is False), format characters (zero-width and the like) removed,
    look-alike letters of other scripts written as ASCII when ``lookalikes``, casefolded
    unless ``casefold`` is False; diacritics and inner punctuation kept as written.

    Usually one word; none when nothing is left, and several when NFC leaves a combining
    mark it cannot compose (``t`` + U+0301): a mark is not a word character, so it
    separates words, as for any tokeniser of regular-expression word characters.

    >>> fine_words("Bi\u00e7er")
    ('bi\u00e7er',)
    >>> fine_words("cas\u00e9\u0301")
    ('cas\u00e9',)
    """
    s = surface
    if not s.isascii():
        # Format characters go first, so that NFC sees the letters an adversary sees.
        s = "".join(c for c in s if unicodedata.category(c) != "Cf")
        if nfc:
            s = unicodedata.normalize("NFC", s)
            if lookalikes:
                s = latin(s)
            if _has_marks(s):
                parts = _FINE_WORD_RE.findall(s)
                return tuple(p.casefold() if casefold else p for p in parts)
    if not s:
        return ()
    return (s.casefold() if casefold else s,)


def fold_word(surface: str) -> tuple[str, ...]:
    """The word model of the ``folded`` views: :func:`normalize_word`, then look-alike
    letters of other scripts folded to the ASCII letter they imitate (``аpplicant`` with a
    Cyrillic ``а``, Turkish dotless ``ı``: see :func:`presidio_delink.confusables.latin`).

    >>> fold_word("\u0430pplicant")
    ('applicant',)
    """
    words = normalize_word(surface)
    if surface.isascii():
        return words
    return tuple(latin(w) for w in words)


class Token(NamedTuple):
    """A normalised word with its offsets into the original text."""

    word: str
    start: int
    end: int


_new = tuple.__new__


@dataclass(frozen=True)
class Tokenizer:
    """Normaliser, word and segment splitter. Its settings are saved with each index.

    Args:
        max_n: longest N-gram, in words (1..16).
        placeholders: regular expressions of redaction placeholders (segment boundaries).
        break_on_punctuation: when False, only placeholders split segments
            (N-grams run across punctuation, as SQLite FTS5 phrase queries do).
        fold: the word model, one of :data:`FOLDS`.
    """

    max_n: int = DEFAULT_MAX_N
    placeholders: tuple[str, ...] = DEFAULT_PLACEHOLDERS
    break_on_punctuation: bool = True
    fold: str = "folded"
    _ph_res: tuple[re.Pattern[str], ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.max_n, int) or not 1 <= self.max_n <= MAX_SUPPORTED_N:
            raise ConfigError(
                f"max_n must be an integer in 1..{MAX_SUPPORTED_N}, got {self.max_n!r}"
            )
        pats = tuple(self.placeholders)
        for p in pats:
            try:
                re.compile(p)
            except re.error as exc:
                raise ConfigError(f"invalid placeholder pattern {p!r}: {exc}") from exc
        if self.fold not in FOLDS:
            raise ConfigError(f"fold must be one of {', '.join(FOLDS)}, got {self.fold!r}")
        object.__setattr__(self, "placeholders", pats)
        # One pattern at a time: a literal first character lets `re` scan fast.
        object.__setattr__(self, "_ph_res", tuple(re.compile(p) for p in pats))

    # -- settings ---------------------------------------------------------------
    def settings(self) -> dict[str, object]:
        """JSON-serialisable settings; an index records them and refuses a mismatch."""
        return {
            "version": TOKENIZER_VERSION,
            "max_n": self.max_n,
            "placeholders": list(self.placeholders),
            "break_on_punctuation": self.break_on_punctuation,
            "fold": self.fold,
            "unicode": unicodedata.unidata_version,
            "confusables": table_version() if self.fold in _FOLDED + _LOOKALIKES else None,
        }

    @classmethod
    def from_settings(cls, settings: dict[str, object]) -> Tokenizer:
        if settings.get("version") != TOKENIZER_VERSION:
            raise ConfigError(
                f"the index was built with tokenizer version {settings.get('version')!r}, "
                f"this version reads {TOKENIZER_VERSION!r}: rebuild the index "
                "(presidio-delink index build)"
            )
        ph = settings.get("placeholders")
        mx = settings.get("max_n")
        brk = settings.get("break_on_punctuation")
        fold = settings.get("fold")
        if (
            not isinstance(ph, list)
            or not all(isinstance(p, str) for p in ph)
            or not isinstance(mx, int)
            or not isinstance(brk, bool)
            or not isinstance(fold, str)
        ):
            raise ConfigError("malformed tokenizer settings")
        tok = cls(max_n=mx, placeholders=tuple(ph), break_on_punctuation=brk, fold=fold)
        if fold in _FOLDED + _LOOKALIKES and settings.get("confusables") != table_version():
            raise ConfigError(
                "the index was built with another look-alike table (another version of "
                "confusable-homoglyphs): rebuild the index"
            )
        return tok

    # -- segmentation -----------------------------------------------------------
    def placeholder_spans(self, text: str) -> list[tuple[int, int]]:
        """Character spans of redaction placeholders in ``text``, sorted, not overlapping."""
        found = sorted(
            (m.start(), m.end())
            for p in self._ph_res
            for m in p.finditer(text)
            if m.end() > m.start()
        )
        merged: list[tuple[int, int]] = []
        for a, b in found:
            if merged and a < merged[-1][1]:
                merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
            else:
                merged.append((a, b))
        return merged

    def _chunks(self, text: str, fold: str) -> Iterator[tuple[int, str | None]]:
        """Chunks of ``text`` (already stripped) with their offsets, in order, as word
        model ``fold`` cuts them.

        A chunk of ``""`` marks breaking punctuation; ``None`` marks a placeholder or the
        end of the text (always a boundary).  Generated, not listed: a list of them costs
        many bytes a character of text (``benchmarks/results/bench_delink_scale.md``).
        """
        pos = 0
        keep = fold in _FINE_WORDS
        dash = fold == "folded-dash"
        every = fold == "surface"
        for a, b in [*self.placeholder_spans(text), (len(text), len(text))]:
            if a > pos:
                for m in _SCANNER.finditer(text, pos, a):
                    chunk = m.group(1)
                    if chunk:
                        if chunk.isalnum():  # one word, no mark to cut at (most chunks)
                            yield m.start(), chunk
                            continue
                        for off, sub in split_chunk(chunk, keep, every):
                            if off:
                                yield m.start() + off - 1, ""
                            yield m.start() + off, sub
                    elif every or breaks(m.group(2)) or (dash and m.group(2) in DASHES):
                        yield m.start(), ""
            yield a, None
            pos = b

    @staticmethod
    def _strip(text: str) -> tuple[str, list[int] | None]:
        """``strip_invisible(text)``, cached: the word models of one text read it in turn."""
        if text.isascii():
            return text, None
        key = (text,)
        got = _STRIPS.get(key)
        if got is None:
            got = strip_invisible(text)
            _remember(_STRIPS, key, got)
        return got

    def pieces(self, text: str) -> list[tuple[list[Token], bool]]:
        """Segments at every break, each with whether a placeholder or the end of the text
        (a *hard* break) closes it; a punctuation break is *soft*.

        Views that share a word model share this (cached) result: a punctuation-breaking
        view takes every piece as a segment, a crossing view joins pieces across soft
        breaks.
        """
        fold = self.fold
        if fold == "accent" and _reads_as_folded(text):
            fold = "folded"  # the same tokens, read once for both word models
        elif fold in _CUT_FROM and self._strip(text)[1] is None:
            key = (fold, self.placeholders, text)
            got = _PIECES.get(key)
            if got is None:  # another model's pieces cut further (see text_pieces)
                base = self._pieces(text, _CUT_FROM[fold])
                got = (cut_at_dashes(text, base, DASHES) if fold == "folded-dash"
                       else cut_at_marks(text, base))
                _remember(_PIECES, key, got)
            return got
        return self._pieces(text, fold)

    def _pieces(self, text: str, fold: str) -> list[tuple[list[Token], bool]]:
        key = (fold, self.placeholders, text)
        got = _PIECES.get(key)
        if got is not None:
            return got
        stripped, omap = self._strip(text)
        chunks = self._chunks(stripped, fold)
        fine = fold not in _FOLDED
        casefold = fold != "case"
        nfc = fold != "accent"
        look = fold in _LOOKALIKES
        every = fold == "surface"
        word_re = _FINE_WORD_RE if fold in _FINE_WORDS else _WORD_RE
        out: list[tuple[list[Token], bool]] = []
        cur: list[Token] = []
        cache = _PARTS.setdefault(fold, {})  # chunk -> its words, across texts
        if len(cache) > _PARTS_MAX:
            cache.clear()
        for start, chunk in chunks:
            if not chunk:
                if cur:
                    out.append((cur, chunk is None))
                    cur = []
                elif chunk is None and out and not out[-1][1]:
                    out[-1] = (out[-1][0], True)
                continue
            if fine and omap is not None:  # the words as written, marks included
                for w in word_re.finditer(chunk):
                    a, b = start + w.start(), start + w.end()
                    if omap is not None:
                        # up to the next character kept: the word's trailing combining
                        # marks are part of it ("the" + U+0301 is not "the")
                        a, b = omap[a], omap[b]
                    for j, word in enumerate(fine_words(text[a:b], casefold, nfc, look)):
                        if j and every and cur:  # an uncomposed mark is not white space
                            out.append((cur, False))
                            cur = []
                        cur.append(Token(word, a, b))
                continue
            parts = cache.get(chunk)
            if parts is None:
                if fine:  # nothing was stripped: the chunk is the text as written
                    parts = [
                        (n, w.start(), w.end())
                        for w in word_re.finditer(chunk)
                        for n in fine_words(w.group(), casefold, nfc, look)
                    ]
                else:
                    parts = [
                        (n, w.start(), w.end())
                        for w in _WORD_RE.finditer(chunk)
                        for n in fold_word(w.group())
                    ]
                cache[chunk] = parts = tuple(parts)  # of tuples: untracked once seen
            # tuple.__new__: Token's own __new__ is a Python function (one frame a word)
            if omap is None:
                cur += [_new(Token, (n, start + a, start + b)) for n, a, b in parts]
            else:
                cur += [
                    _new(Token, (n, omap[start + a], omap[start + b - 1] + 1))
                    for n, a, b in parts
                ]
        _remember(_PIECES, key, out)
        return out

    def segments(self, text: str) -> list[list[Token]]:
        """Split ``text`` into segments of tokens; N-grams never cross a segment."""
        pieces = self.pieces(text)
        if self.break_on_punctuation:
            return [list(seg) for seg, _ in pieces]
        return join_soft(pieces)

    def word_segments(self, text: str) -> list[list[str]]:
        """Segments as lists of normalised words: ``segments`` without offsets."""
        vocab: dict[str, int] = {}
        ids = self.encode(text, vocab, {})
        words = list(vocab)
        segs: list[list[str]] = []
        cur: list[str] = []
        for i in ids:
            if i < 0:
                segs.append(cur)
                cur = []
            else:
                cur.append(words[i])
        return segs

    def encode(self, text: str, vocab: dict[str, int], cache: dict[str, Any]) -> list[int]:
        """Word ids of ``text``, with ``-1`` closing every segment (index builder's path).

        New words are added to ``vocab`` (word -> id).  ``cache`` (chunk of words joined
        by in-word marks -> the ids of its pieces) speeds up repeated chunks; share it
        across calls only together with the same ``vocab`` and word model.
        """
        return apply_breaks(self.encode_marked(text, vocab, cache), self.break_on_punctuation)

    def encode_marked(
        self, text: str, vocab: dict[str, int], cache: dict[str, Any]
    ) -> list[int]:
        """:meth:`encode` for both break modes at once: ``-2`` closes a segment at
        punctuation, ``-1`` at a placeholder or the end (see :func:`apply_breaks`)."""
        fold = self.fold
        stripped = _stripped(text)
        if fold not in _FOLDED and _marked(text):
            # Combining marks were removed: the fine word models read the words as written
            # (with their marks), through the offsets of `pieces`.  When only format
            # characters were removed, the stripped words are the words `fine_words` makes.
            out: list[int] = []
            for seg, hard in self.pieces(text):
                out.extend([vocab.setdefault(t.word, len(vocab)) for t in seg])
                out.append(-1 if hard else -2)
            return out
        casefold, nfc = fold != "case", fold != "accent"
        keep = fold in _FINE_WORDS
        dash = fold == "folded-dash"
        every = fold == "surface"
        look = fold in _LOOKALIKES
        word_re = _FINE_WORD_RE if keep else _WORD_RE

        def norm(w: str) -> tuple[str, ...]:
            if fold in _FOLDED:
                return fold_word(w)
            return fine_words(w, casefold, nfc, look)

        out = []
        add, extend = out.append, out.extend
        open_seg = False  # words since the last break of either kind
        open_hard = False  # words since the last hard break
        for regions in _regions(self, stripped):
            # findall gives (chunk, "") or ("", mark).
            for whole, mark in regions:
                if not whole:
                    if open_seg and (every or breaks(mark) or (dash and mark in DASHES)):
                        add(-2)
                        open_seg = False
                    continue
                subs: Any = cache.get(whole)
                if subs is None:
                    # The ids of a chunk that no breaking mark cuts (most chunks); else
                    # a list of (starts after a breaking mark, ids) per piece.
                    pieces = [
                        (
                            off > 0,
                            tuple(
                                vocab.setdefault(n, len(vocab))
                                for w in word_re.findall(chunk)
                                for n in norm(w)
                            ),
                        )
                        for off, chunk in split_chunk(whole, keep, every)
                    ]
                    subs = pieces[0][1] if len(pieces) == 1 else pieces
                    if len(cache) < 4_000_000:
                        cache[whole] = subs
                if type(subs) is tuple:
                    if subs:
                        extend(subs)
                        open_seg = open_hard = True
                    continue
                pairs: list[tuple[bool, tuple[int, ...]]] = subs
                for inner, got in pairs:
                    if inner and open_seg:
                        add(-2)
                        open_seg = False
                    if got:
                        extend(got)
                        open_seg = open_hard = True
            if open_hard:
                if open_seg:
                    add(-1)
                else:
                    out[-1] = -1  # the soft break just before is hard
                open_seg = open_hard = False
        return out

    def tokens(self, text: str) -> list[Token]:
        """All tokens of ``text``, in order (segment boundaries dropped)."""
        return [t for seg in self.segments(text) for t in seg]

    # -- N-grams ----------------------------------------------------------------
    def ngrams(self, text: str) -> Iterator[tuple[str, int, int]]:
        """Yield ``(key, start, end)`` for every N-gram of ``text`` (1..max_n words)."""
        for seg in self.segments(text):
            yield from iter_ngrams(seg, self.max_n)


# 5: the folded-dash word model; 6: the surface word model, look-alikes folded in fine words,
# an uncomposed combining mark separates fine words
TOKENIZER_VERSION = "delink-text-6"

_PIECES: dict[tuple[str, tuple[str, ...], str], list[tuple[list[Token], bool]]] = {}
_REGIONS: dict[tuple[tuple[str, ...], str], list[list[tuple[str, str]]]] = {}
_STRIPS: dict[tuple[str], tuple[str, list[int] | None]] = {}
# Each word model's chunks read before, with their words and offsets (about 100 bytes
# each; cleared when full)
_PARTS: dict[str, dict[str, Any]] = {}
_PARTS_MAX = 50_000
# The word models whose pieces are another's cut further (``presidio_delink.text_pieces``)
_CUT_FROM = {"folded-dash": "folded", "surface": "fine"}


# The tokenisation caches: the last 8 results, of about 1 M characters of distinct text in all
_CACHE_ENTRIES, _CACHE_CHARS, _CACHE_LOCK = 8, 1_000_000, threading.Lock()


def _remember(cache: dict[Any, Any], key: tuple[Any, ...], value: Any) -> None:
    """``cache[key] = value`` (``key[-1]``: the text), oldest out first; thread-safe."""
    with _CACHE_LOCK:
        while cache and (
            len(cache) >= _CACHE_ENTRIES
            or sum(map(len, {k[-1] for k in cache} | {key[-1]})) > _CACHE_CHARS
        ):
            cache.pop(next(iter(cache)))
        cache[key] = value


@lru_cache(maxsize=4)
def _stripped(text: str) -> str:
    """``strip_invisible(text)[0]``, remembered (the word models of one text are encoded
    in turn)."""
    return strip_invisible(text, offsets=False)[0]


@lru_cache(maxsize=4)
def _reads_as_folded(text: str) -> bool:
    """Whether the ``accent`` word model reads ``text`` as ``folded`` does: every character
    outside ASCII is punctuation, a symbol or a space (no letter, mark, digit or format
    character), so that both models cut the same chunks (see ``Tokenizer._chunks``) and
    read only ASCII words, which both merely lower-case."""
    return all(
        unicodedata.category(c)[0] in "PSZ" for c in set(_NON_ASCII.findall(text))
    )


@lru_cache(maxsize=4)
def _marked(text: str) -> bool:
    """:func:`_has_marks`, remembered like :func:`_stripped`."""
    return _has_marks(text)


def _regions(tok: Tokenizer, stripped: str) -> list[list[tuple[str, str]]]:
    """The text between placeholders (and after the last), each as ``_SCANNER.findall``
    pairs; the word models of one text share it (the builder encodes each in turn)."""
    key = (tok.placeholders, stripped)
    got = _REGIONS.get(key)
    if got is None:
        got = []
        pos = 0
        for a, b in [*tok.placeholder_spans(stripped), (len(stripped), len(stripped))]:
            got.append(_SCANNER.findall(stripped, pos, a) if a > pos else [])
            pos = b
        _REGIONS.clear()
        _REGIONS[key] = got
    return got

"""A panel of independent adversaries: text models that share no code with
``presidio_delink.text`` (nor its confusables table).

Each adversary holds the original collection and searches it for the phrases of a
de-identified text, the way an outside tool would.  ``linkable(texts, k)`` returns, per
text, the phrases (1..max_n tokens, as the adversary tokenises them) found in at least
one and fewer than ``k`` groups of the collection: what singles a source out.

Members:

* ``fine``: NFC, casefold, words keep inner hyphens, apostrophes (as written) and
  periods, no diacritic folding; phrases stop at sentence and clause punctuation.
* ``fts5-rd0`` / ``fts5-rd2``: real SQLite FTS5 (``unicode61``, ``remove_diacritics 0``
  or ``2``) phrase queries, which run across punctuation.
* ``confusable``: look-alike letters folded to Latin through the ``confusable-homoglyphs``
  package's own API, then casefold and diacritics folded; phrases stop at punctuation.
* ``case``: case-sensitive surface words (grep without ``-i``): measured, not promised by
  the default views (the opt-in ``case`` view closes it).
* ``dash``: case and diacritics folded, words split at every mark, phrases stop at
  sentence and clause punctuation *and at a dash standing between spaces or at the start
  of a line* (a list bullet, a parenthetical dash): reads a dash as punctuation.
* ``confusable-fine``: look-alike letters folded (``confusable-homoglyphs``), then the
  ``fine`` words (inner hyphens, including U+2011, and apostrophes kept): both axes at once.
* ``surface``: exact substring search (grep -i, Ctrl-F): words as written (apostrophe
  variants kept), casefolded, separated by white space only (any other character between
  two words, a trailing apostrophe among them, ends the phrase).
* ``fts5-rd2-porter``: FTS5 with the Porter stemmer (``porter unicode61``): inflections
  merged ("complained" = "complains").  Measured, not promised: see docs/design.md, "Who the
  guarantee covers".

Masks (``[REDACTED]``, ``<PERSON>``, ``***``) split phrases for every member: an adversary
knows a mask is not text of the source.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Sequence
from functools import cache

MASK = re.compile(r"\[[A-Z][A-Z0-9_ \-]*\]|<[A-Z][A-Z0-9_]*>|\*{2,}|\u2588+")
BREAKS = set(".,;:!?()[]{}\"\u201c\u201d\u00ab\u00bb\u2018\u2019\u201e") - {"\u2019", "\u2018"}


def minimal(hits: dict[tuple[str, ...], int]) -> list[tuple[str, int]]:
    """The hits that contain no shorter hit."""
    def inner(p: tuple[str, ...]) -> bool:
        return any(
            p[i : i + n] in hits for n in range(1, len(p)) for i in range(len(p) - n + 1)
        )

    return sorted((" ".join(p), g) for p, g in hits.items() if not inner(p))


class NgramAdversary:
    """Tokenises into segments of words; counts groups per phrase by scanning."""

    name = "ngram"
    word_re = re.compile(r"[^\W_]+")

    def __init__(self, max_n: int = 8) -> None:
        self.max_n = max_n

    def word(self, w: str) -> str:
        return w

    def segments(self, text: str) -> list[list[str]]:
        out: list[list[str]] = []
        for part in MASK.split(text):
            cur: list[str] = []
            last = 0
            for m in self.word_re.finditer(part):
                gap = part[last : m.start()]
                if cur and any(c in BREAKS for c in gap):
                    out.append(cur)
                    cur = []
                w = self.word(m.group())
                if w:
                    cur.append(w)
                last = m.end()
            if cur:
                out.append(cur)
        return out

    def phrases(self, text: str) -> set[tuple[str, ...]]:
        got: set[tuple[str, ...]] = set()
        for seg in self.segments(text):
            for i in range(len(seg)):
                for n in range(1, min(self.max_n, len(seg) - i) + 1):
                    got.add(tuple(seg[i : i + n]))
        return got

    def linkable(
        self,
        texts: Sequence[str],
        collection: Sequence[tuple[str, str]],
        k: int,
        groups: Sequence[str] | None = None,
    ) -> list[list[tuple[str, int]]]:
        wanted = [self.phrases(t) for t in texts]
        union = set().union(*wanted) if wanted else set()
        found: dict[tuple[str, ...], set[str]] = {}
        for d, (doc_id, text) in enumerate(collection):
            g = groups[d] if groups is not None else doc_id
            for p in self.phrases(text) & union:
                found.setdefault(p, set()).add(g)
        out = []
        for want in wanted:
            hits = {p: len(found[p]) for p in want if 1 <= len(found.get(p, ())) < k}
            out.append(minimal(hits))
        return out


class FineAdversary(NgramAdversary):
    name = "fine"
    word_re = re.compile(r"[^\W_]+(?:[-\u2010\u2011.'\u2019\u2018\u02bc][^\W_]+)*")

    def word(self, w: str) -> str:
        return unicodedata.normalize("NFC", w).casefold()

    def segments(self, text: str) -> list[list[str]]:
        # Combining marks are letters of the word for this adversary (NFC first).
        return super().segments(unicodedata.normalize("NFC", text))


class CaseAdversary(FineAdversary):
    name = "case"

    def word(self, w: str) -> str:
        return unicodedata.normalize("NFC", w)


@cache
def _latin(ch: str) -> str:
    """The Latin letter or digit ``ch`` imitates, by the confusable-homoglyphs API."""
    from confusable_homoglyphs import confusables

    found = confusables.is_confusable(ch, greedy=True, preferred_aliases=["latin", "common"])
    for item in found or []:
        for h in item["homoglyphs"]:
            c = h["c"]
            if len(c) == 1 and c.isascii() and c.isalnum():
                return c
    return ch


class ConfusableAdversary(NgramAdversary):
    name = "confusable"

    def segments(self, text: str) -> list[list[str]]:
        # As TR39's skeleton: decompose first, then map what is left of each letter.
        text = unicodedata.normalize("NFD", text)
        mapped = "".join(
            c if c.isascii() else _latin(c) for c in text if not unicodedata.combining(c)
        )
        return super().segments(mapped)

    def word(self, w: str) -> str:
        s = unicodedata.normalize("NFKD", w.casefold())
        return "".join(c for c in s if not unicodedata.combining(c))


class FTS5Adversary:
    """Phrase queries against a real SQLite FTS5 table of the collection."""

    token_re = re.compile(r"(?:[^\W_]|[\u0300-\u036f])+")

    def __init__(self, remove_diacritics: int, max_n: int = 8, porter: bool = False) -> None:
        self.rd = remove_diacritics
        self.porter = porter
        self.name = f"fts5-rd{remove_diacritics}" + ("-porter" if porter else "")
        self.max_n = max_n

    def linkable(
        self,
        texts: Sequence[str],
        collection: Sequence[tuple[str, str]],
        k: int,
        groups: Sequence[str] | None = None,
    ) -> list[list[tuple[str, int]]]:
        db = sqlite3.connect(":memory:")
        db.execute(
            "CREATE VIRTUAL TABLE t USING fts5(body, grp UNINDEXED, "
            f"tokenize = '{'porter ' if self.porter else ''}unicode61 remove_diacritics {self.rd}')"
        )
        db.executemany(
            "INSERT INTO t VALUES (?, ?)",
            [(text, groups[d] if groups else doc_id) for d, (doc_id, text) in enumerate(collection)],
        )
        cache: dict[tuple[str, ...], int] = {}

        def groups_of(words: tuple[str, ...]) -> int:
            got = cache.get(words)
            if got is None:
                q = '"' + " ".join(words) + '"'
                got = db.execute(
                    "SELECT count(DISTINCT grp) FROM t WHERE t MATCH ?", (q,)
                ).fetchone()[0]
                cache[words] = got
            return got

        out = []
        for text in texts:
            hits: set[tuple[str, int]] = set()
            for part in MASK.split(text):
                words = self.token_re.findall(part)
                for i in range(len(words)):
                    # Extend while the phrase is frequent; the first rarer one is minimal
                    # at this start (its prefixes are all frequent).
                    for n in range(1, min(self.max_n, len(words) - i) + 1):
                        g = groups_of(tuple(words[i : i + n]))
                        if g < k:
                            if g >= 1:
                                hits.add((" ".join(words[i : i + n]), g))
                            break
            out.append(minimal({tuple(p.split(" ")): g for p, g in hits}))
        db.close()
        return out


_DASHES = "-\u2010\u2011\u2012\u2013\u2014\u2015\u2212"


class DashAdversary(NgramAdversary):
    """Reads a dash between spaces (or opening a line) as punctuation."""

    name = "dash"

    def segments(self, text: str) -> list[list[str]]:
        # A free-standing dash becomes a semicolon, which every member breaks at; diacritics
        # (combining marks too) go before words are found, so a mark never splits a word.
        text = re.sub(rf"(?:(?<=\s)|^)[{_DASHES}]+(?=\s)", ";", text, flags=re.M)
        text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
        return super().segments(text)

    def word(self, w: str) -> str:
        s = unicodedata.normalize("NFKD", w.casefold())
        return "".join(c for c in s if not unicodedata.combining(c))


class ConfusableFineAdversary(FineAdversary):
    """Look-alike letters folded, then fine words (inner hyphens and apostrophes kept)."""

    name = "confusable-fine"
    word_re = re.compile(
        r"[^\W_]+(?:[-\u2010\u2011.'\u2019\u2018\u02bc][^\W_]+)*"
    )

    def segments(self, text: str) -> list[list[str]]:
        text = unicodedata.normalize("NFC", text)
        return super().segments("".join(c if c.isascii() else _latin(c) for c in text))


class SurfaceAdversary(FineAdversary):
    """Exact substring search, case-insensitive (grep -i, Ctrl-F): a phrase is words
    separated by white space only, each word as written (apostrophe variants, inner
    hyphens and periods kept); any other character between two words ends the phrase."""

    name = "surface"

    def segments(self, text: str) -> list[list[str]]:
        out: list[list[str]] = []
        for part in MASK.split(unicodedata.normalize("NFC", text)):
            cur: list[str] = []
            last = 0
            for m in self.word_re.finditer(part):
                if cur and part[last : m.start()].strip():
                    out.append(cur)
                    cur = []
                cur.append(m.group().casefold())
                last = m.end()
            if cur:
                out.append(cur)
        return out


def panel(max_n: int = 8) -> list[object]:
    """The members whose finding nothing the default views promise."""
    return [
        FineAdversary(max_n),
        FTS5Adversary(0, max_n),
        FTS5Adversary(2, max_n),
        ConfusableAdversary(max_n),
        DashAdversary(max_n),
        ConfusableFineAdversary(max_n),
        SurfaceAdversary(max_n),
    ]


def measured(max_n: int = 8) -> list[object]:
    """Members measured but not promised by the default views: ``case`` (upper and lower
    case kept, grep without ``-i``; the opt-in ``case`` view closes it)."""
    return [CaseAdversary(max_n)]

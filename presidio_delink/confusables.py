"""Look-alike letters folded to the letter they imitate (Unicode TR39 confusables).

``аpplicant`` with a Cyrillic ``а`` is a different word for an exact index, so a check
that does not fold look-alikes finds it nowhere ("links nothing") while any search that
folds them finds ``applicant``.  :func:`latin` maps letters of other scripts to the ASCII
letter they imitate (the folded views' word model); :func:`skeleton_word` gives a word's
TR39 skeleton (the PII check compares removed PII with proposals this way).

Data: the ``confusable-homoglyphs`` package ships Unicode's ``confusables.txt`` as a JSON
table of homoglyph pairs (in both directions, so the TR39 direction is recovered here):
each single character's class is closed under the pairs (union-find), and its prototype
is the member that lists the most homoglyphs (TR39's target lists every source), ties
going to ASCII, then to the lowest code point.  A source whose only homoglyph is a
multi-character prototype (``m`` -> ``rn``) maps to that string.  The tables are built
once per process and applied with ``str.translate``.

Skeletons merge Latin spellings too (``0``/``O``, ``1``/``l``, ``m``/``rn``): a coarser
text model, which raises document frequencies (the unsafe direction).  So the index folds
only letters of other scripts (:func:`latin`), and keeps views without any folding (see
:mod:`presidio_delink.views`).
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from importlib import resources

__all__ = ["latin", "latin_text", "skeleton_word", "table_version"]

_WORDLIKE = re.compile(r"[^\W_]+")


def _clean(s: str) -> str:
    # The data wraps right-to-left characters in LRM marks; drop every format character.
    return "".join(c for c in s if unicodedata.category(c) != "Cf")


@lru_cache(maxsize=1)
def _table() -> dict[int, str]:
    try:
        raw = resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text(
            encoding="utf-8"
        )
    except (ModuleNotFoundError, FileNotFoundError) as exc:  # pragma: no cover - packaging
        raise RuntimeError(
            "the confusable-homoglyphs package (a dependency) is missing: reinstall "
            "presidio-delink"
        ) from exc
    data: dict[str, list[dict[str, str]]] = json.loads(raw)
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    fanout: dict[str, int] = {}
    multi: dict[str, str] = {}
    for key, entries in data.items():
        k = _clean(key)
        if len(k) != 1:
            continue
        homs = [h for h in (_clean(e["c"]) for e in entries) if h]
        fanout[k] = len(homs)
        for h in homs:
            if len(h) == 1:
                parent[find(k)] = find(h)
            elif len(homs) == 1:
                multi[k] = h
    classes: dict[str, list[str]] = {}
    for ch in list(parent):
        classes.setdefault(find(ch), []).append(ch)
    out: dict[int, str] = {}
    for members in classes.values():
        proto = min(members, key=lambda c: (-fanout.get(c, 0), not c.isascii(), ord(c)))
        for ch in members:
            if ch != proto:
                out[ord(ch)] = proto
    for ch, target in multi.items():
        if ord(ch) not in out:
            out[ord(ch)] = target.translate(out)
    return out


@lru_cache(maxsize=1)
def _word_table() -> dict[int, str]:
    # Letters and digits that imitate letters and digits only: a letter folded to a
    # punctuation mark (``ǃ`` -> ``!``) would split or empty the word instead.
    return {
        k: v
        for k, v in _table().items()
        if _WORDLIKE.fullmatch(chr(k)) and _WORDLIKE.fullmatch(v)
    }


def skeleton_word(word: str) -> str:
    """The TR39 skeleton of a word, restricted to characters that imitate word characters
    (a word stays one word; the PII check compares removed PII with proposals this way).

    >>> skeleton_word("j\u043ehn")
    'john'
    """
    return word.translate(_word_table())


@lru_cache(maxsize=1)
def _latin_table() -> dict[int, str]:
    # Each non-ASCII character of a confusable class that holds an ASCII letter or digit
    # goes to an ASCII member.
    classes: dict[str, list[str]] = {}
    table = _table()
    for k, v in table.items():
        classes.setdefault(v, [v]).append(chr(k))
    out: dict[int, str] = {}
    for proto, members in classes.items():
        ascii_ = [c for c in members if c.isascii() and c.isalnum()]
        if not ascii_:
            continue
        # The class prototype when it is ASCII, else a lower-case letter, else a digit,
        # else an upper-case letter (lower-cased).
        if proto in ascii_:
            best = proto.lower()
        else:
            best = min(ascii_, key=lambda c: (not c.islower(), not c.isdigit(), c)).lower()
        for c in members:
            # Letters of other scripts only: a Latin letter (Turkish dotless ``ı``, ``æ``)
            # is a spelling of its own, as search engines (FTS5 among them) keep it.
            if (
                not c.isascii()
                and _WORDLIKE.fullmatch(c)
                and not unicodedata.name(c, "").startswith("LATIN")
            ):
                out[ord(c)] = best
    return out


def latin(word: str) -> str:
    """Look-alike letters of other scripts (Cyrillic, Greek, ...) in ``word`` replaced by
    the ASCII letter or digit they imitate; Latin letters are left alone (the folded views
    fold words this way, so that ``аpplicant`` with a Cyrillic ``а`` is ``applicant``).

    >>> latin("\u0430ppl\u0456cant")
    'applicant'
    """
    return word if word.isascii() else word.translate(_latin_table())


@lru_cache(maxsize=1)
def _latin_cased_table() -> dict[int, str]:
    # Each letter of another script that imitates an ASCII letter or digit, written as
    # the ASCII member of its class of the same case (Cyrillic ``І`` -> ``I``, ``і`` ->
    # ``i``): what a reader sees.  (The folded views' table folds case as well.)
    classes: dict[str, list[str]] = {}
    for k, v in _table().items():
        classes.setdefault(v, [v]).append(chr(k))
    out: dict[int, str] = {}
    for members in classes.values():
        ascii_ = sorted(c for c in members if c.isascii() and c.isalnum())
        if not ascii_:
            continue
        for c in members:
            if c.isascii() or not _WORDLIKE.fullmatch(c) or _is_latin(c):
                continue
            same = [a for a in ascii_ if a.isalpha() and (a.isupper() == c.isupper())]
            digits = [a for a in ascii_ if a.isdigit()]
            pick = same or (digits if not c.isalpha() else [])
            if pick:
                out[ord(c)] = pick[0]
    return out


def _is_latin(c: str) -> bool:
    return c.isascii() or unicodedata.name(c, "").startswith("LATIN")


def latin_text(text: str) -> tuple[str, int]:
    """A mostly Latin text with the look-alike letters of other scripts inside its words
    written as the Latin letters they imitate (case kept; one character for one, so every
    offset stays).

    Why: a search that folds look-alikes reads ``јury`` (Cyrillic ``ј``) as ``jury``, and
    one that also keeps inner apostrophes reads ``јury's`` as ``jury's``; a view that folds
    look-alikes splits at the apostrophe and a view that keeps it does not fold.  Written
    back, the text is what every view and every such search read alike.

    Only when Latin letters are the majority of the text's letters, and only in words all
    of whose other-script letters have a Latin look-alike (a word of another alphabet
    with one letter that does not stays as it is).

    Returns:
        ``(text, number of characters changed)``.
    """
    if text.isascii():
        return text, 0
    table = _latin_cased_table()
    latin_n = other_n = 0
    for c in text:
        if c.isalpha():
            if _is_latin(c):
                latin_n += 1
            else:
                other_n += 1
    if other_n == 0 or latin_n <= other_n:
        return text, 0
    changed = 0

    def fix(m: re.Match[str]) -> str:
        nonlocal changed
        word = m.group()
        if word.isascii() or not any(ord(c) in table for c in word):
            return word
        if any(c.isalpha() and not _is_latin(c) and ord(c) not in table for c in word):
            return word
        new = word.translate(table)
        changed += sum(a != b for a, b in zip(word, new, strict=True))
        return new

    out = _WORDLIKE.sub(fix, text)
    return out, changed


@lru_cache(maxsize=1)
def table_version() -> str:
    """A short fingerprint of the confusables table (recorded with each index)."""
    import hashlib

    items = sorted(_latin_table().items())
    return hashlib.sha256(json.dumps(items).encode("utf-8")).hexdigest()[:16]

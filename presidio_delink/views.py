"""Views: the text models an adversary may search with, checked together.

A phrase of a de-identified text *links* when it links in **any** view.  Each view is a
:class:`~presidio_delink.text.Tokenizer` configuration with its own N-gram key space in the
index; flagged spans of every view are character intervals of the same text, so the
minimal-edit choice works on their union.

Why several.  Merging spellings (``22/2`` = ``22.2``, ``İzmir`` = ``Izmir``,
``non-pecuniary`` containing ``pecuniary``) raises a phrase's document frequency: an
adversary with a *finer* text model counts fewer documents.  A *coarser* adversary makes
phrases a single model never checks: search boxes and SQLite FTS5 phrases run across
punctuation, and look-alike letters (``аpplicant`` with a Cyrillic ``а``) hide a word from
an exact check (document frequency 0, "links nothing") while any folding search finds it.
No single model is both finest and coarsest, so the index keeps views of each kind,
chosen after the search tools an adversary is likely to use:

=================  ===========================================================  =======
view               models an adversary who                                      default
=================  ===========================================================  =======
``folded``         folds case, diacritics (``Biçer`` = ``bicer``) and look-      yes
                   alike letters (``аpplicant`` with a Cyrillic ``а`` =
                   ``applicant``), splits words at every
                   punctuation mark, and stops phrases at sentence and clause
                   punctuation
``folded-cross``   the same, with phrases across punctuation (FTS5 with         yes
                   ``remove_diacritics 2``, most search boxes)
``folded-dash``    ``folded``, and a dash standing alone (a list bullet, a       yes
                   parenthetical dash) ends a phrase: the other views run
                   phrases through it, so they count ``and the seriousness``
                   also where ``and\n- the seriousness`` is written
``fine``           keeps diacritics, inner hyphens, apostrophes (each variant   yes
                   as written) and periods inside words (``non-pecuniary``,
                   ``applicant’s``, ``3.5``), folds case and look-alike
                   letters only; phrases stop at punctuation
``surface``        ``fine`` words, and any character between two words other   yes
                   than white space ends a phrase: exact substring search
                   (grep -i, Ctrl-F), which counts ``the applicant's
                   representatives`` only where nothing but spaces separates
                   the words (not in ``the applicant's' representatives``)
``accent-cross``   keeps diacritics and code points as written (no Unicode       yes
                   normalisation), folds case, splits words at every
                   punctuation mark and runs phrases across punctuation
                   (SQLite FTS5 ``unicode61`` with ``remove_diacritics 0``)
``case``           ``fine`` without case folding (grep without ``-i``)          opt-in
``case-cross``     ``case`` with phrases across punctuation                     opt-in
=================  ===========================================================  =======

Look-alike letters of other scripts (Cyrillic, Greek, ...) are folded to the ASCII letter
they imitate (TR39 confusables, see :mod:`presidio_delink.confusables`) in the folded
views, ``fine`` and ``surface``, on both sides: an adversary who folds look-alikes and
keeps inner apostrophes at once reads ``аpplicant’s`` as ``applicant’s``, and over a
collection without look-alike spellings the folding merges nothing an adversary who does
not fold could tell apart (for that adversary the look-alike word is found nowhere).
Latin letters are never folded (``ı`` stays ``ı`` as in FTS5, ``l995`` stays apart from
``1995``): merging spellings raises document frequencies, the unsafe direction, and the
other views see the exact spelling.

A combining mark that NFC cannot compose with the letter before it (``casé`` + U+0301)
is not a letter of the word for ``fine``, ``surface`` and ``case`` (as for any
tokeniser of regular-expression word characters); ``accent-cross`` keeps it in the word
(as FTS5 does).

Why ``surface`` as well as ``fine``: phrases of ``fine`` run through marks that do not
end a clause (a trailing apostrophe, ``/``, ``§``, a dash), so ``fine`` counts
``the applicant's representatives`` also where ``the applicant's' representatives`` is
written; exact substring search does not, and counts fewer documents.

Not covered: look-alike spellings
inside the collection itself, found by an adversary who folds both sides.

Not covered: an adversary whose text model is finer than ``fine`` in one respect and
coarser than ``folded`` in another at once (``surface`` covers the phrases written with
white space only between words), semantic (paraphrase, embedding) search, and
near-verbatim containment search (see :mod:`presidio_delink.attacks`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from presidio_delink.errors import ConfigError
from presidio_delink.text import DEFAULT_MAX_N, DEFAULT_PLACEHOLDERS, Tokenizer

__all__ = ["DEFAULT_VIEWS", "OPTIONAL_VIEWS", "VIEWS", "View", "resolve_views"]


@dataclass(frozen=True)
class View:
    """A named text model: a word model (``fold``) and whether phrases cross punctuation."""

    name: str
    fold: str
    cross: bool
    adversary: str

    def tokenizer(
        self, max_n: int = DEFAULT_MAX_N, placeholders: tuple[str, ...] = DEFAULT_PLACEHOLDERS
    ) -> Tokenizer:
        return Tokenizer(
            max_n=max_n,
            placeholders=placeholders,
            break_on_punctuation=not self.cross,
            fold=self.fold,
        )


VIEWS: dict[str, View] = {
    v.name: v
    for v in (
        View("folded", "folded", False, "folds case, diacritics and look-alike letters"),
        View("folded-cross", "folded", True, "the same, phrases across punctuation"),
        View("folded-dash", "folded-dash", False, "the same, a free-standing dash ends a phrase"),
        View("fine", "fine", False, "keeps diacritics and inner punctuation, folds case"),
        View("surface", "surface", False, "fine words, any mark between words ends a phrase"),
        View("accent-cross", "accent", True, "keeps diacritics, folds case, across punctuation"),
        View("case", "case", False, "case-sensitive, diacritics and inner punctuation kept"),
        View("case-cross", "case", True, "the same, phrases across punctuation"),
    )
}
DEFAULT_VIEWS: tuple[str, ...] = (
    "folded", "folded-cross", "folded-dash", "fine", "surface", "accent-cross",
)
OPTIONAL_VIEWS: tuple[str, ...] = ("case", "case-cross")


def resolve_views(extra: Iterable[str] = (), *, defaults: bool = True) -> tuple[str, ...]:
    """The views to build: the defaults (unless ``defaults`` is False) plus ``extra``.

    Raises:
        ConfigError: an unknown view name, or no view at all.
    """
    names = list(DEFAULT_VIEWS) if defaults else []
    for name in extra:
        if name not in VIEWS:
            raise ConfigError(f"unknown view {name!r}; known views: {', '.join(VIEWS)}")
        if name not in names:
            names.append(name)
    if not names:
        raise ConfigError("at least one view is needed")
    return tuple(names)

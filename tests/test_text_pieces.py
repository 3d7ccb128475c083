"""The pieces of ``folded-dash`` and ``surface``, cut from ``folded``'s and ``fine``'s
(:mod:`presidio_delink.text_pieces`), are those of the word model read in full."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from presidio_delink.text import _PIECES, Tokenizer
from presidio_delink.text_pieces import cut_at_dashes, cut_at_marks, free_dashes

# Words, marks that join or split them, dashes alone and inside words, placeholders,
# white space other than the space, and characters outside ASCII (no invisible ones:
# with one, each model reads the text in full, and test_text.py covers that path).
PARTS = st.lists(st.sampled_from(
    ["court", "Bi\u00e7er", "non-pecuniary", "applicant\u2019s", "3.5", ", ", ". ", " ", "  ",
     "[REDACTED]", "<PERSON>", "\u0430pplicant", "\u00bd", "36110/97", " - ", "-", "--", "a-",
     "-b", " \u2013 ", "\u2014", "x\u2010y", "_", " _ ", "U.S.", "(", ")", "7(1)", "\n", "\t",
     "\u00a0", "\u3000", "\u00a7 ", "a/b", "'", "it's", "\u201cquoted\u201d", "\u2212", "\u00ff",
     "\uff34", "1\u20442"]),
    max_size=25).map("".join)


def _read_in_full(tok: Tokenizer, text: str) -> list[tuple[list[object], bool]]:
    _PIECES.clear()
    return tok._pieces(text, tok.fold)  # type: ignore[return-value]


@settings(max_examples=400, deadline=None)
@given(st.one_of(PARTS, st.text(max_size=60)),
       st.sampled_from(["folded-dash", "surface"]), st.booleans())
def test_cut_pieces_are_the_model_read_in_full(text: str, fold: str, cross: bool) -> None:
    tok = Tokenizer(fold=fold, break_on_punctuation=not cross)
    base = Tokenizer(fold="folded" if fold == "folded-dash" else "fine")
    full = _read_in_full(tok, text)
    base_full = _read_in_full(base, text)
    _PIECES.clear()
    assert tok.pieces(text) == full
    assert tok.pieces(text) == full  # from the cache
    assert base.pieces(text) == base_full  # the pieces it was cut from, as the base reads them


@pytest.mark.parametrize(("text", "expected"), [
    ("non-pecuniary", []),  # between two word characters: inside a chunk
    ("a - b", [2]),
    ("a-", [1]),
    ("-b", [0]),
    ("a--b", [1, 2]),
    ("a_-b", [2]),  # the underscore is a mark, not a word character
    ("x\u2013y and x \u2013 y", [10]),
])
def test_free_dashes(text: str, expected: list[int]) -> None:
    assert free_dashes(text, "-\u2013") == expected


def test_cuts_keep_the_closing_break() -> None:
    dash = Tokenizer(fold="folded-dash")
    text = "one - two three [REDACTED] four"
    base = Tokenizer(fold="folded").pieces(text)
    assert [(len(t), hard) for t, hard in base] == [(3, True), (1, True)]
    got = cut_at_dashes(text, base, "-")
    assert [([x.word for x in t], hard) for t, hard in got] == [
        (["one"], False), (["two", "three"], True), (["four"], True)]
    assert got == dash.pieces(text)
    fine = Tokenizer(fold="fine").pieces("a/b c")
    assert [[x.word for x in t] for t, _ in cut_at_marks("a/b c", fine)] == [["a"], ["b", "c"]]

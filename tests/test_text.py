"""The text model: normalisation, offsets, segment boundaries."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from presidio_delink.confusables import latin
from presidio_delink.errors import ConfigError
from presidio_delink.text import Tokenizer, fold_word, normalize_word

TOK = Tokenizer()
FINE = Tokenizer(fold="fine")
CASE = Tokenizer(fold="case")


def words(text: str, tok: Tokenizer = TOK) -> list[list[str]]:
    return [[t.word for t in seg] for seg in tok.segments(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Applicant lodged", [["the", "applicant", "lodged"]]),
        ("one, two. three; four", [["one"], ["two"], ["three"], ["four"]]),
        ("before [REDACTED] after", [["before"], ["after"]]),
        ("before <PERSON> after", [["before"], ["after"]]),
        ("before *** after", [["before"], ["after"]]),
        ("before [LOCATION] after", [["before"], ["after"]]),
        ("no. 36110/97 lodged", [["no"], ["36110", "97", "lodged"]]),
        ("a well-known fact", [["a", "well", "known", "fact"]]),
        ("the applicant\u2019s lawyer", [["the", "applicant", "s", "lawyer"]]),
        ("the applicants' lawyer", [["the", "applicants", "lawyer"]]),
        ("(a) item", [["a"], ["item"]]),
        ("Article 7(1)(a) and 3.5", [["article", "7"], ["1"], ["a"], ["and", "3"], ["5"]]),
        ("\u0430ppl\u0456cant \u015e\u0131rnak", [["applicant", "s\u0131rnak"]]),  # look-alikes
        ("Article 5 § 5 of", [["article", "5", "5", "of"]]),
        ("40% of the increase", [["40", "of", "the", "increase"]]),
        ("grounds \u2013 in particular", [["grounds", "in", "particular"]]),
        ("and / or + more $ 5", [["and", "or", "more", "5"]]),
        ("wait: then", [["wait"], ["then"]]),
        ("\u201cquoted\u201d text", [["quoted"], ["text"]]),
        ("hid\u200bden text", [["hidden", "text"]]),
        ("soft\u00adhyphen", [["softhyphen"]]),
        ("Bi\u00e7er", [["bicer"]]),
        ("Bic\u0327er", [["bicer"]]),
        ("\uff34\uff25\uff33\uff34 case", [["test", "case"]]),
        ("STRASSE stra\u00dfe", [["strasse", "strasse"]]),
        ("non\u00a0breaking\u2003space\u3000here", [["non", "breaking", "space", "here"]]),
        ("\ufeffBOM start", [["bom", "start"]]),
        ("", []),
        ("   \n\t ", []),
        ("...!!!", []),
    ],
)
def test_segments_table(text: str, expected: list[list[str]]) -> None:
    assert words(text) == expected
    assert TOK.word_segments(text) == expected


def test_offsets_point_into_original() -> None:
    text = "Mr X\u200by lodged no. 36110/97 in Bi\u00e7er [REDACTED] town"
    for seg in TOK.segments(text):
        for t in seg:
            assert t.word in fold_word(text[t.start : t.end])


@pytest.mark.parametrize(
    ("text", "fine", "case"),
    [
        ("The applicant\u2019s non-pecuniary damage", [["the", "applicant\u2019s",
         "non-pecuniary", "damage"]], [["The", "applicant\u2019s", "non-pecuniary", "damage"]]),
        ("applicant's case", [["applicant's", "case"]], [["applicant's", "case"]]),
        ("22/2 and 22.2", [["22", "2", "and", "22.2"]], [["22", "2", "and", "22.2"]]),
        ("\u0130zmir Izmir", [["i\u0307zmir", "izmir"]], [["\u0130zmir", "Izmir"]]),
        ("Bic\u0327er Bi\u00e7er", [["bi\u00e7er", "bi\u00e7er"]], [["Bi\u00e7er", "Bi\u00e7er"]]),
        ("hid\u200bden, U.S. law", [["hidden"], ["u.s"], ["law"]], [["hidden"], ["U.S"], ["law"]]),
        # fine folds look-alike letters of other scripts; case keeps them
        ("\u0430pplicant", [["applicant"]], [["\u0430pplicant"]]),
    ],
)
def test_fine_and_case_word_models(text: str, fine: list[list[str]], case: list[list[str]]) -> None:
    assert FINE.word_segments(text) == fine
    assert CASE.word_segments(text) == case
    for seg in FINE.segments(text):  # offsets cover the word as written
        for t in seg:
            assert latin(unicodedata.normalize("NFC", text[t.start : t.end]).replace(
                "\u200b", "")).casefold() == t.word


def test_accent_word_model_splits_like_fts5_and_keeps_diacritics() -> None:
    acc = Tokenizer(fold="accent")
    assert acc.word_segments("Non-pecuniary \u0130zmir, applicant\u2019s Bic\u0327er") == [
        ["non", "pecuniary", "i\u0307zmir"], ["applicant", "s", "bic\u0327er"]]


def test_crossing_views_join_pieces_at_punctuation_only() -> None:
    cross = Tokenizer(break_on_punctuation=False)
    text = "one, two. three [REDACTED] four"
    assert cross.word_segments(text) == [["one", "two", "three"], ["four"]]
    vocab: dict[str, int] = {}
    marked = TOK.encode_marked(text, vocab, {})
    assert marked == [0, -2, 1, -2, 2, -1, 3, -1]
    assert TOK.encode(text, dict(vocab), {}) == [0, -1, 1, -1, 2, -1, 3, -1]
    assert cross.encode(text, dict(vocab), {}) == [0, 1, 2, -1, 3, -1]


def test_placeholder_is_never_a_word() -> None:
    text = "x <PERSON> y [REDACTED] z <DATE_TIME>"
    assert "person" not in {w for seg in words(text) for w in seg}
    assert "redacted" not in {w for seg in words(text) for w in seg}


def test_custom_placeholders_and_no_punctuation_breaks() -> None:
    tok = Tokenizer(placeholders=(r"\{\{[a-z]+\}\}",), break_on_punctuation=False)
    assert words("a, b {{name}} c. d", tok) == [["a", "b"], ["c", "d"]]


def test_settings_roundtrip_and_validation() -> None:
    tok = Tokenizer(max_n=5, placeholders=("XX+",))
    assert Tokenizer.from_settings(tok.settings()) == tok
    with pytest.raises(ConfigError):
        Tokenizer(max_n=0)
    with pytest.raises(ConfigError):
        Tokenizer(placeholders=("(",))
    with pytest.raises(ConfigError):
        Tokenizer.from_settings({"version": "other"})


def test_ngrams_stay_inside_segments() -> None:
    tok = Tokenizer(max_n=3)
    got = [k for k, _, _ in tok.ngrams("a b, c d e")]
    assert "b c" not in got and "a b" in got and "c d e" in got and "d e" in got


INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\u00ad", "\ufeff", "\u200e"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["court", "Applicant", "36110", "Bi\u00e7er", "x"]), min_size=1),
    st.data(),
)
def test_invisible_characters_do_not_hide_a_match(ws: list[str], data: st.DataObject) -> None:
    plain = " ".join(ws)
    chars = list(plain)
    for _ in range(data.draw(st.integers(0, 5))):
        pos = data.draw(st.integers(0, len(chars)))
        chars.insert(pos, data.draw(st.sampled_from(INVISIBLE)))
    assert words("".join(chars)) == words(plain)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_fast_and_offset_paths_agree(text: str) -> None:
    segs = TOK.segments(text)
    assert TOK.word_segments(text) == [[t.word for t in s] for s in segs]
    for s in segs:
        for t in s:
            assert 0 <= t.start < t.end <= len(text)
            assert t.word and " " not in t.word


MIXED = st.lists(st.sampled_from(
    ["court", "Bi\u00e7er", "Bic\u0327er", "non-pecuniary", "applicant\u2019s", "3.5", ", ",
     ". ", " ", "[REDACTED]", "x\u200by", "\u0430pplicant", "\u0130zmir", "\u00bd", "\u00ad",
     "\ufeff", "\u1100\u200b\u1161", "e\u0301", "\u212b", "cas\u00e9\u0301", "t\u0301he", " _ ",
     "s' ", "36110/97", " - "]),
    max_size=20).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=60), MIXED),
       st.sampled_from(["folded", "accent", "fine", "case", "folded-dash", "surface"]),
       st.booleans())
def test_build_and_query_paths_agree(text: str, fold: str, cross: bool) -> None:
    """The index builder's ids (encode) and the detector's tokens (segments) are one model."""
    tok = Tokenizer(fold=fold, break_on_punctuation=not cross)
    vocab: dict[str, int] = {}
    ids = tok.encode(text, vocab, {})
    words_ = list(vocab)
    segs: list[list[str]] = [[]]
    for i in ids:
        if i < 0:
            segs.append([])
        else:
            segs[-1].append(words_[i])
    # segments() is the detector's path (pieces, with offsets); encode() the builder's.
    assert [s for s in segs if s] == [[t.word for t in seg] for seg in tok.segments(text)]


ACCENT = Tokenizer(fold="accent")
# ASCII words among punctuation, symbols and spaces from outside ASCII (where the accent
# model reuses the folded model's tokens), and now and then a letter, mark, digit or
# format character from outside ASCII (where it must not).
NEAR_ASCII = st.lists(
    st.one_of(
        st.sampled_from(["Court", "APPLICANT", "36110", "x", "_", "a-b", "it's"]),
        st.sampled_from(["\u2019", "\u00a7", "\u2013", "\u00a0", "\u201c", "\u20ac", "\u3000",
                         "\u2028", "\u00b7", "\u2122", ".", ",", " ", "/"]),
        st.sampled_from(["\u00e7", "\u0327", "\u200b", "\u0430", "\u00bd", "\u0131", "\uff34"]),
    ),
    max_size=25,
).map("".join)


@given(st.one_of(NEAR_ASCII, st.text(max_size=40)))
def test_accent_model_reuses_folded_tokens_only_where_they_agree(text: str) -> None:
    # `pieces` reads text whose only non-ASCII characters are punctuation, symbols or
    # spaces once, for both the accent and the folded model: the accent model read in
    # full must give the same tokens, on every text.
    assert ACCENT.pieces(text) == ACCENT._pieces(text, "accent")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_normalisation_is_idempotent(text: str) -> None:
    once = [" ".join(s) for s in TOK.word_segments(text)]
    again = [" ".join(TOK.word_segments(s)[0]) if TOK.word_segments(s) else "" for s in once]
    assert again == once


def test_nfkc_casefold() -> None:
    assert normalize_word("\ufb01ne") == ("fine",)
    assert normalize_word("\u00bd") == ("1", "2")
    assert normalize_word(unicodedata.normalize("NFD", "\u00c9t\u00e9")) == ("ete",)


SURFACE = Tokenizer(fold="surface")


@pytest.mark.parametrize(
    ("text", "segs"),
    [
        # only white space between two words keeps them in one phrase (exact substring)
        ("the applicant's' representatives were", [["the", "applicant's"], ["representatives", "were"]]),
        ("the applicant\u2019s representatives", [["the", "applicant\u2019s", "representatives"]]),
        ("a 36110/97 b _ c well-known", [["a", "36110"], ["97", "b"], ["c", "well-known"]]),
        ("and\n- the seriousness", [["and"], ["the", "seriousness"]]),
        ("U.S. law", [["u.s"], ["law"]]),
        # look-alikes folded; an uncomposed mark separates words and, not being space, ends
        # the phrase
        ("\u0430pplicant\u2019s lawyer", [["applicant\u2019s", "lawyer"]]),
        ("the cas\u00e9\u0301 t\u0301he jury", [["the", "cas\u00e9", "t"], ["he", "jury"]]),
    ],
)
def test_surface_word_model(text: str, segs: list[list[str]]) -> None:
    assert SURFACE.word_segments(text) == segs
    assert [[t.word for t in s] for s in SURFACE.segments(text)] == segs


def test_fine_words_drop_uncomposed_marks() -> None:
    """NFC composes what it can; a mark left over is not a letter of the word (as for
    a regular-expression word tokeniser), so ``casé`` + U+0301 reads ``casé``."""
    assert FINE.word_segments("the cas\u00e9\u0301 the\u0301 t\u0301he") == [
        ["the", "cas\u00e9", "th\u00e9", "t", "he"]]

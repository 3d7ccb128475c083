"""Cheap grammar checks of replacements (presidio_delink.grammar)."""

from __future__ import annotations

import pytest

from presidio_delink.grammar import (
    determiner_clash,
    modifier_slot,
    sentence_case,
    strip_determiner,
    unknown_word,
)

TEXT = (
    "In 1999 the Erzincan Martial Law Court acquitted the applicants of the charges. "
    "The prosecutor charged them under Article 146 of the Criminal Code with membership "
    "of an illegal organisation whose object was to undermine the constitutional order. "
    "The applicants were taken into police custody and brought before the [REDACTED] court."
)


def _at(span: str, nth: int = 0) -> int:
    i = -1
    for _ in range(nth + 1):
        i = TEXT.index(span, i + 1)
    return i


@pytest.mark.parametrize(
    "span, replacement",
    [
        ("Code", "the law"),  # "the Criminal the law"
        ("organisation", "the group"),  # "an illegal the group"
        ("order", "a system"),  # "the constitutional a system"
        ("applicants", "the accused"),  # "the the accused"
        ("Court", "a tribunal"),  # inside a name: "Martial Law a tribunal"
        ("court.", "a tribunal"),  # after a redaction that follows "the"
    ],
)
def test_determiner_after_a_modifier_is_caught(span: str, replacement: str) -> None:
    assert determiner_clash(TEXT, _at(span), replacement) is not None
    assert strip_determiner(replacement) == replacement.split(" ", 1)[1]


@pytest.mark.parametrize(
    "span, replacement",
    [
        ("Article", "a provision"),  # after a preposition
        ("the applicants", "the accused"),  # the span holds its own determiner
        ("them", "the accused"),  # after a verb
        ("custody", "detention"),  # no determiner at all
        ("In", "at"),
    ],
)
def test_good_placements_pass(span: str, replacement: str) -> None:
    assert determiner_clash(TEXT, _at(span), replacement) is None


def test_modifier_slot_reads_sentence_starts_and_function_words() -> None:
    assert not modifier_slot(TEXT, _at("1999"))  # after "In" (a preposition)
    assert not modifier_slot(TEXT, _at("prosecutor") - 4)  # sentence start: "The"
    assert modifier_slot(TEXT, _at("prosecutor"))  # after "The"
    assert strip_determiner("the") == "" and strip_determiner("law") == "law"


def test_unknown_word_uses_the_collection_and_the_document() -> None:
    vocab = {"claimants", "detention", "monetary", "pecuniary"}
    known = vocab.__contains__
    assert unknown_word("testees", TEXT, known) == "a word the collection never uses"
    assert unknown_word("the claimants", TEXT, known) is None
    assert unknown_word("detention", TEXT, known) is None
    assert unknown_word("the prosecutor", TEXT, known) is None  # in the document
    assert unknown_word("non-monetary", TEXT, known) is None  # each part known
    assert unknown_word("of it", TEXT, known) is None  # function words only


def test_sentence_case() -> None:
    start = _at("In")
    assert sentence_case("at", TEXT, start, start + 2) == "At"
    mid = _at("acquitted")
    assert sentence_case("cleared", TEXT, mid, mid + 9) == "cleared"
    the = _at("The applicants")
    assert sentence_case("these", TEXT, the, the + 3) == "These"
    assert sentence_case("[REDACTED]", TEXT, start, start + 2) == "[REDACTED]"


def test_a_word_of_a_heading_in_capitals_is_replaced_in_capitals() -> None:
    text = "I. THE CIRCUMSTANCES OF THE CASE\n\nMembers of the PKK met."
    at = text.index("CIRCUMSTANCES")
    assert sentence_case("conditions", text, at, at + 13) == "CONDITIONS"
    pkk = text.index("PKK")  # an acronym in running text is no heading
    assert sentence_case("organisation", text, pkk, pkk + 3) == "organisation"

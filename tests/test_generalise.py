"""The deterministic generalisations and the refusal of misleading or garbled rewrites."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from presidio_delink.edits import fold_words, rejection
from presidio_delink.generalise import (
    NAME_HEADS,
    PHRASES,
    generalise,
    magnitude,
    name_span,
    place_label,
)
from presidio_delink.text import Tokenizer

TOK = Tokenizer()
_NUMBER_WORD = re.compile(
    r"\b(zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
    r"first|second|third|fourth|fifth)\b"
)


def gen(text: str, span: str, label: str | None = None) -> list[str]:
    i = text.index(span)
    return generalise(text, i, i + len(span), label)


@pytest.mark.parametrize(
    ("text", "span", "label", "want"),
    [
        # counts and amounts: their order of magnitude
        ("detained for 36 days", "36", None, ["dozens of"]),
        ("36 of the applicants", "36", None, ["several dozen"]),
        ("paid 5,000 euros", "5,000", None, ["thousands of"]),
        ("awarded EUR 5,000 in respect", "5,000", None, ["several thousand"]),
        ("for 12 months", "12", None, ["many"]),
        ("a fine of 250,000 lira", "250,000", None, ["hundreds of thousands of"]),
        ("four years", "four", None, ["several"]),
        ("2 witnesses", "2", None, ["a few"]),
        # never more than the count: from a round number to twice it, "over" it
        ("paid 108 euros", "108", None, ["over a hundred"]),
        ("It cost 108.", "108", None, ["over a hundred"]),
        ("received 1,200 euros", "1,200", None, ["over a thousand"]),
        ("in 15,000 cases", "15,000", None, ["over ten thousand"]),
        ("paid 100 euros", "100", None, []),  # the round number itself
        ("for 20 days", "20", None, ["many"]),  # no "dozens of" below two dozen
        ("twenty people", "twenty", None, ["many"]),
        ("the 108 applicants", "108", None, []),  # no "the over a hundred applicants"
        ("awarded EUR 150 in respect", "150", None, []),
        # a count qualified already, or an age
        ("more than 2500 people", "2500", None, []),  # no "more than thousands of"
        ("over 150 people", "150", None, []),
        ("about 40 people", "40", None, []),
        ("up to 150 people", "150", None, []),
        ("at least 12 people", "12", None, []),
        ("more than twenty people", "twenty", None, []),
        ("aged 35", "35", None, []),  # no "aged several dozen"
        ("at the age of 35 he", "35", None, []),
        ("He was 35 years old", "35", None, []),
        ("aged twenty", "twenty", None, []),
        ("her State pension at age 60. He", "60", None, []),
        # read on held-in TAB texts: a quoted paragraph's number, a subsection
        ("it found as follows: “[76]. ... The point", "76", None, []),
        ("pursuant to section 24(8) of the Act", "8", None, []),
        # dates
        ("On 12 March 1996 the court", "12", None, ["a day in"]),
        ("On 12 March 1996 the court", "1996", None, ["that year"]),
        ("was born in 1957.", "1957", None, ["that year"]),
        ("on 3rd May", "3rd", None, ["a day in"]),
        # ordinals
        ("the second applicant", "second", None, ["other"]),  # one of two
        # a rank among many, or no noun after it: "the other" would say another thing
        # (read on Wikipedia biographies)
        ("the third applicant", "third", None, []),
        ("the 40th vice president of", "40th", None, []),
        ("his second wife", "second", None, []),
        ("the second time", "second", None, []),
        ("the court of second instance", "second", None, []),
        ("where they placed 15th.", "15th", None, []),
        ("the Second Division of the court", "Second", None, []),  # part of a name
        ("800 litres per second.", "second", None, []),  # a unit of time
        ("stopped within a second.", "second", None, []),  # the same unit
        ("a second later he left", "second", None, []),
        ("a second hearing was held", "second", None, ["further"]),
        ("a 3rd hearing", "3rd", None, ["further"]),
        # a list of references whose other numbers a masking tool replaced
        ("plots nos. 19, <DATE_TIME> and 29, sheet", "29", None, []),
        ("Articles 6, <DATE_TIME> and 18 of", "18", None, []),
        ("third, the court", "third", None, []),
        # a compound's first part (the protection wrote "another-party")
        ("a third-party intervener", "third", None, []),
        ("a two-year sentence", "two", None, []),
        # typed entities (spaCy NER labels)
        ("was held in Istanbul on 5 May", "Istanbul", "GPE", ["a place"]),
        ("was held in Istanbul on 5 May", "Istanbul", "CITY", ["a city"]),
        ("the Istanbul court", "Istanbul", "GPE", ["local"]),
        ("employed by Acme Holdings.", "Acme Holdings", "ORG", ["an organisation"]),
        ("a member of PKK.", "PKK", "ORG", ["an organisation"]),  # an acronym
        # one word the small tagger typed an organisation: often a town or a statute
        ("forced to leave Lapithos.", "Lapithos", "ORG", []),
        ("and, inter alia, the", "inter alia", "ORG", []),
        ("told Smith that", "Smith", "PERSON", ["a person"]),
        # nothing sure fits in place of the value alone: no candidate
        ("application no. 36110/97", "36110", None, []),
        # ... also once its other part is a placeholder (the protection wrote "no.
        # [REDACTED]/a few")
        ("application (no. [REDACTED]/97)", "97", None, []),
        ("plots nos. 60/[REDACTED]", "60", None, []),
        ("paid [REDACTED],018 euros", "018", None, []),  # the rest of "1,018"
        # read on Wikipedia biographies
        ("she posted a .983 fielding average", "983", None, []),  # a decimal fraction
        ("He played 67' before", "67", None, []),  # minutes
        ("at #182 on the Forbes 400 list", "400", None, []),  # part of a name
        ("governor from [REDACTED], 1596 to 1601", "1596", None, []),  # a year
        ("In 44 cases the court", "44", None, ["dozens of"]),  # a sentence's first word
        ("It peaked at number two on the", "two", None, []),  # a rank
        ("tied at #182 on the list", "182", None, []),
        ("Standing at 5 ft 11 in (1.80 m)", "11", None, []),  # a measure
        ("Standing at 5 ft 11 in (1.80 m)", "5", None, []),
        ("between 251 and 258.", "251", None, []),  # a range's ends
        ("between 251 and 258.", "258", None, []),
        ("the second largest city", "second", None, []),  # a rank
        ("won 12 seats out of 120.", "120", None, []),  # a share's whole
        ("as regent in 255. Although", "255", None, []),  # a year before 1000
        ("in 12 March 1996", "12", None, ["a day in"]),
        ("a fine of 500.", "500", None, ["several hundred"]),
        ("sold for $145 million.", "145", None, []),  # the scale word carries the value
        ("born 25 [REDACTED]) is", "25", None, []),  # a day of a masked date
        ("on [REDACTED] 25, he", "25", None, []),
        ("under Article 146 of the Criminal Code", "146", None, []),
        ("Rule 39 of the Rules of Court", "39", None, []),
        ("section 3 of the Act", "3", None, []),
        # a reference further along a list of them, or one a paragraph sign follows
        ("under sections 103 § 2 and 134 § 1 of the Act", "134", None, []),
        ("Articles 5, 6 and 13 of the Convention", "13", None, []),
        ("Articles 5, 6 and 13 of the Convention", "6", None, []),
        ("in breach of 12 § 3", "12", None, []),
        ("sections 3 and 4 witnesses", "4", None, []),
        ("heard 3 witnesses and 40 experts", "40", None, ["dozens of"]),
        ("15 % of the votes", "15", None, []),
        ("by 3 votes to 2, it quashed", "3", None, []),  # a tally
        ("by 3 votes to 2, it quashed", "2", None, []),
        ("Articles 6, [REDACTED] and 18 of", "18", None, []),  # a masked list number
        ("the 1996 Act", "1996", None, []),
        ("March 12 was", "12", None, []),
        ("36 Rue Lepic", "36", None, []),
        ("case 4:19-cv-02217", "4:19-cv-02217", None, []),
        ("one day", "one", None, []),
        ("employed by Acme Ltd.", "Acme", "ORG", []),
        ("the Smith case", "Smith", "PERSON", []),
        ("a word", "word", None, []),
        ("in Istanbul", "Istanbul", None, []),  # no NER label: no typed guess
    ],
)
def test_generalise_table(text: str, span: str, label: str | None, want: list[str]) -> None:
    assert gen(text, span, label) == want


_CONTEXT = "in on of the a article no. section for paid EUR euros days March 1996 years , . ( ) /"
_CONTEXT_WORDS = st.sampled_from(_CONTEXT.split())
_SPAN_WORDS = "two three seven twelve twenty thousand second fifth Istanbul"


@given(
    st.lists(_CONTEXT_WORDS, max_size=4),
    st.one_of(
        st.integers(0, 10**13).map(str),
        st.integers(1000, 10**9).map(lambda n: f"{n:,}"),
        st.integers(1, 40).map(lambda n: f"{n}th"),
        st.from_regex(r"[0-9]{1,6}(/[0-9]{2})?", fullmatch=True),
        st.from_regex(r"[A-Z]{0,3}-?[0-9]{1,5}[a-z]?", fullmatch=True),
        st.sampled_from(_SPAN_WORDS.split()),
    ),
    st.lists(_CONTEXT_WORDS, max_size=4),
    st.sampled_from([None, "GPE", "ORG", "PERSON", "CARDINAL", "DATE", "LOC", "NORP"]),
)
def test_generalise_never_yields_a_specific_value(
    before: list[str], span: str, after: list[str], label: str | None
) -> None:
    left = " ".join(before) + " " if before else ""
    text = left + span + (" " + " ".join(after) if after else "")
    for cand in generalise(text, len(left), len(left) + len(span), label):
        assert cand in PHRASES
        assert not any(c.isdigit() for c in cand)
        if _NUMBER_WORD.search(cand):  # only a bound the count exceeds, which the loop takes
            assert cand.startswith("over ") and rejection(span, cand, TOK) is None
        assert span.casefold() not in cand.casefold().split()


def test_phrases_hold_no_number() -> None:
    for phrase in PHRASES:
        assert not any(c.isdigit() for c in phrase)
        assert not _NUMBER_WORD.search(phrase) or phrase.startswith("over ")


@pytest.mark.parametrize(
    ("value", "noun", "want"),
    [(1, True, None), (2, True, "a few"), (9, True, "several"), (99, False, "several dozen"),
     (10**12, True, "billions of"), (10**16, True, None)],
)
def test_magnitude(value: float, noun: bool, want: str | None) -> None:
    assert magnitude(value, noun) == want


# -- refusals (edits.rejection, the validation every candidate goes through) -----------------


@pytest.mark.parametrize(
    ("span", "replacement", "reason"),
    [
        # a number or code becomes a generalisation, never another specific value
        ("36110", "4", "a specific number"),  # gave "(no. 4/97)"
        ("36110", "application 4", "a specific number"),
        ("three", "two", "a specific number"),
        ("1996", "a hundred", "a specific number"),
        ("applicants", "more than 10000000000000000000000000000000000000", "introduces a number"),
        ("released", "2000", "introduces a number"),
        # "over" a round number only where the count exceeds it by less than itself
        ("5000", "over a hundred", "a specific number"),
        ("100", "over a hundred", "a specific number"),
        ("1996", "over a thousand", "a specific number"),  # a year is no count
        ("108", "a hundred", "a specific number"),
        ("applicants", "over a hundred", "introduces a number"),
    ],
)
def test_numbers_become_no_other_number(span: str, replacement: str, reason: str) -> None:
    assert rejection(span, replacement, TOK) == reason


@pytest.mark.parametrize(
    "replacement", ["several", "dozens of", "several thousand", "hundreds of thousands of",
                    "that year", "a day in", "an application"],
)
def test_vague_counts_pass(replacement: str) -> None:
    assert rejection("36110", replacement, TOK) is None


@pytest.mark.parametrize(
    ("span", "replacement"),
    [("108", "over a hundred"), ("1,200", "more than a thousand"),
     ("15,000", "over ten thousand"), ("150,000", "over a hundred thousand")],
)
def test_lower_bounds_pass(span: str, replacement: str) -> None:
    assert rejection(span, replacement, TOK) is None


def _sentence_words(sentence: str, span: str) -> list[str]:
    """The span's sentence as the loop hands it over: folded words, ``""`` in the span's
    place."""
    a = sentence.index(span)
    return [*fold_words(sentence[:a], TOK), "", *fold_words(sentence[a + len(span) :], TOK)]


@pytest.mark.parametrize(
    ("sentence", "span", "replacement", "reason"),
    [
        # "... organisation the code was to the code the [REDACTED] order": the second span's
        # answer repeats a phrase of its own sentence
        ("organisation the code was to undermine the order", "undermine", "the code",
         "repeats a phrase of its sentence"),
        ("the applicant was charged", "charged", "the applicant",
         "repeats a phrase of its sentence"),
        # a word a few places off (read on Wikipedia biographies)
        ("He is an American singer, musician and songwriter", "singer", "musician",
         "repeats a word beside it"),
    ],
)
def test_repeats_of_its_own_sentence_are_refused(
    sentence: str, span: str, replacement: str, reason: str
) -> None:
    words = _sentence_words(sentence, span)
    assert rejection(span, replacement, TOK, sentence_words=words) == reason
    assert rejection(span, replacement, TOK) is None  # only the sentence tells


def test_a_word_of_another_rewrite_of_the_sentence_is_refused() -> None:
    # "charging the date under Article 146 of the Criminal date": "applicants" and "Code"
    # both answered "date"; a word the sentence itself repeats is no garbling
    words = _sentence_words("charging the date under Article 146 of the Criminal Code", "Code")
    got = rejection("Code", "date", TOK, sentence_words=words, taken_words={"date"})
    assert got == "repeats another rewrite of its sentence"
    assert rejection("Code", "charging", TOK, sentence_words=words) is None


def test_sentence_check_passes_fresh_words_and_function_words() -> None:
    words = _sentence_words("charging the applicants under Article 146 of the Code", "applicants")
    assert rejection("applicants", "the claimants", TOK, sentence_words=words) is None
    assert rejection("applicants", "them", TOK, sentence_words=words) is None
    # the word again further off is no doubling
    words = _sentence_words("He is a singer and writes songs a musician would envy", "singer")
    assert rejection("singer", "musician", TOK, sentence_words=words) is None


@pytest.mark.parametrize(
    ("span", "replacement", "around", "reason"),
    [
        ("Sinop", "court", ("the", "court"), "doubles a word"),
        ("object", "the the aim", ("", ""), "doubles a word"),
        # the demo's LLM answers (an organisation whose object was ...; ... in which they
        # repeated ...)
        ("whose object", "its purpose", ("organisation", "was"), "drops the clause's relative word"),
        ("They repeated", "repeated", ("", "the"), "drops the clause's subject"),
    ],
)
def test_doubled_words_are_refused(
    span: str, replacement: str, around: tuple[str, str], reason: str
) -> None:
    assert rejection(span, replacement, TOK, around=around) == reason


def test_clause_words_kept() -> None:
    assert rejection("whose object", "whose purpose", TOK) is None
    assert rejection("which stated", "that said", TOK) is None
    assert rejection("where", "in which", TOK) is None
    assert rejection("whose object", "the aim of which", TOK) is None
    assert rejection("they repeated", "they restated", TOK) is None
    assert rejection("they repeated", "the applicants restated", TOK) is None


# -- the fluency check (a fake scorer: log-probabilities by the literal's first word) ------


class _FakeFluency:
    """FluencyCheck with a scorer that reads a table: the real engine is tested in
    test_torch_lm / test_numpy_lm; here only the decision rule."""

    def __new__(cls, table: dict[str, float], margin: float = 12.0):  # type: ignore[no-untyped-def]
        from presidio_delink.llm.fluency import FluencyCheck

        check = FluencyCheck(gguf_path="unused.gguf", margin=margin)

        def score(left: str, literal: str) -> float:
            return table.get(literal.split()[0] if literal.split() else "", -40.0)

        check._score = score  # type: ignore[method-assign]
        return check


@pytest.mark.parametrize(
    ("replacement", "refused"),
    [("document", True), ("regional", True), ("had", False), ("detained", False)],
)
def test_fluency_refuses_what_reads_far_worse(replacement: str, refused: bool) -> None:
    text = "On 3 May the applicant was arrested by police officers."
    table = {"was": -21.0, "document": -39.2, "regional": -42.0, "had": -28.9,
             "detained": -25.9, "something": -40.4, "this": -39.0, "some": -37.1}
    check = _FakeFluency(table)
    i = text.index("was")
    reason = check.reason(text, i, i + 3, replacement)
    assert (reason is not None) is refused
    assert check.scored == 1 and check.refused == int(refused)


def test_fluency_reference_is_the_best_of_span_and_neutral_words() -> None:
    # a rare span reads badly itself: a neutral word then sets the bar
    text = "They met in Kilkenny yesterday."
    check = _FakeFluency({"Kilkenny": -60.0, "something": -30.0, "this": -35.0, "some": -33.0,
                          "the": -40.0, "zzz": -45.0})
    i = text.index("Kilkenny")
    assert check.reason(text, i, i + 8, "the county") is None  # -40 >= -30 - 12
    assert check.reason(text, i, i + 8, "zzz") is not None  # -45 < -42


def test_a_number_glued_to_a_code_gets_nothing() -> None:
    text = "applications (nos. 43185/98 and 43186/98) and case no. 2-113 of 12.5 units"
    for piece in ("98", "43186", "113"):
        i = text.index(piece, text.index("and"))
        assert generalise(text, i, i + len(piece)) == [], piece
    # seen in a TAB document: "SEK several [REDACTED],000 (approximately many,800 euros"
    # and "sheet/plan 11/15W.[REDACTED].a few" from pieces of a number and of a code
    text = "SEK 147,000 (approximately 15,800 euros), plan 11/15W.2.E (no. 3, 4 and 5)"
    for piece, at in (("147", 0), ("15", 0), ("2", text.index("W.")), ("800", 0)):
        i = text.index(piece, at)
        assert generalise(text, i, i + len(piece)) == [], piece
    text = "was born in 1957, and lived"  # a comma and a space: no piece of a number
    assert generalise(text, 12, 16) == ["that year"]


@pytest.mark.parametrize(
    ("text", "span", "label", "next_tag", "want"),
    [
        # after "the" with no noun following, the name heads its phrase: its type's noun
        ("the rights in the GDR were", "GDR", "GPE", "VBD", ["country"]),
        ("the rights in the GDR were", "GDR", "GPE", None, ["country"]),
        # ... and before a noun, an adjective, as before
        ("the Istanbul court", "Istanbul", "GPE", "NN", ["local"]),
        ("the Istanbul court", "Istanbul", "GPE", None, ["local"]),
        # a place WordNet names keeps its kind (place_label)
        ("was held in Turkey on 5 May", "Turkey", "COUNTRY", "IN", ["a country"]),
        ("the Turkey office", "Turkey", "COUNTRY", "NN", ["national"]),
        ("in Anatolia.", "Anatolia", "REGION", None, ["a region"]),
        # "a GDR" is no phrase to fill: nothing
        ("a GDR were", "GDR", "GPE", "VBD", []),
        # an organisation after "the" gets no noun: "the Court" is not "the organisation"
        ("the case before the Court.", "Court", "ORG", ".", []),
        # the tagger says what follows is no noun: not a modifier
        ("in Istanbul remained", "Istanbul", "GPE", "VBD", ["a place"]),
    ],
)
def test_generalise_reads_the_next_tag(
    text: str, span: str, label: str, next_tag: str | None, want: list[str]
) -> None:
    i = text.index(span)
    assert generalise(text, i, i + len(span), label, next_tag=next_tag) == want


def test_place_label() -> None:
    assert place_label("GPE", "country") == "COUNTRY"
    assert place_label("ORG", "city") == "CITY"  # spaCy typed a city an organisation
    assert place_label("PERSON", "city") == "PERSON"  # a person's name, not the place
    assert place_label("GPE", None) == "GPE"
    assert place_label(None, "country") is None


@pytest.mark.parametrize(
    ("text", "word", "want"),
    [
        ("appealed to the Federal Labour Court on Monday.", "Labour",
         ("Federal Labour Court", "court")),
        ("section 103 of the Motor Vehicles Act to pay", "Motor", ("Motor Vehicles Act", "act")),
        ("The Ministry of Defence took over.", "Defence", ("Ministry of Defence", "ministry")),
        ("the Ankara State Security Court’s judgment", "State", ("Ankara State Security Court", "court")),
        ("the Ministry for European and International Affairs said", "International",
         ("Ministry for European and International Affairs", "ministry")),
        # no sure end: a list inside the name
        ("the Ministry of Education, Science and Culture", "Education", None),
        ("before the Court.", "Court", None),  # one word: its head is itself
        ("Federal Labour Court decided", "Labour", None),  # no determiner before it
        ("the Federal Republic of Germany", "Federal", None),  # no head that says its kind
        ("the Regional Court and Supreme Court held", "Regional", None),  # two names
        ("the First Section of the Court", "First", ("First Section", "section")),
    ],
)
def test_name_span(text: str, word: str, want: tuple[str, str] | None) -> None:
    at = text.index(word)
    got = name_span(text, at, at + len(word))
    if want is None:
        assert got is None
    else:
        assert got is not None and (text[got[0] : got[1]], got[2]) == want
        assert got[2] in NAME_HEADS


@pytest.mark.parametrize("code", ["SEK", "EUR", "euros"])
def test_a_currency_is_never_typed_a_name(code: str) -> None:
    text = f"he was paid {code} in damages"
    at = text.index(code)
    assert generalise(text, at, at + len(code), "ORG") == []

"""The sentence step's sense check: the words a model writes for a named phrase must name
what the phrase names, or a class above it (WordNet), else they are redacted."""

from __future__ import annotations

import pytest

from presidio_delink.candidates.lexicon import WordNet
from presidio_delink.results import DelinkResult
from presidio_delink.sentences.rewrite import SENSE, Job, SentenceStep, unvouched
from presidio_delink.text import Tokenizer

WN = WordNet()
needs_wordnet = pytest.mark.skipif(not WN.available, reason="no WordNet files")


@needs_wordnet
@pytest.mark.parametrize(("old", "new"), [
    ("barrister", "lawyer"),            # a hypernym
    ("mesothelioma", "cancer"),         # two levels up
    ("lawyers", "attorneys"),           # a synonym, inflected
    ("revoked", "canceled"),            # a verb
    ("live", "reside"),                 # a verb's troponym: a manner of the same act
    ("High Court", "court"),
    ("criminal convictions", "criminal judgments"),  # a shared first word, the last vouched
    ("non-pecuniary", "non-monetary"),  # a compound WordNet lacks, by its last part
])
def test_stands_for_a_synonym_or_a_class_above(old: str, new: str) -> None:
    assert WN.stands_for(old, new)


@needs_wordnet
@pytest.mark.parametrize(("old", "new"), [
    ("hearing", "trial"),      # sister terms: both proceedings, not the same one
    ("convictions", "crimes"),
    ("half-sister", "brother"),
    ("release", "arrest"),
    ("lawyer", "barrister"),   # a narrower noun says more than the input did
    ("interest", "fee"),       # WordNet's fee is an interest in land: a noun's hyponym
    ("non-pecuniary", "pre-monetary"),  # compounds whose first parts differ
    ("holding", "refusing to hold"),    # the last word's lemma, and a new word that flips it
    ("interest", "xqzt"),      # a word WordNet does not hold: nothing vouches for it
])
def test_does_not_stand_for_another_thing(old: str, new: str) -> None:
    assert not WN.stands_for(old, new)


def test_without_wordnet_nothing_is_vouched_for(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert not WordNet(tmp_path).stands_for("barrister", "lawyer")


@needs_wordnet
def test_unvouched_names_the_new_words_of_named_phrases_only() -> None:
    shown = "The Government said that no interest should be paid to the applicant."
    spans = ((shown.index("interest"), shown.index("interest") + len("interest")),)
    assert unvouched(shown, shown.replace("interest", "fee"), spans, WN.stands_for) == ("fee",)
    assert unvouched(shown, shown.replace("interest", "charge"), spans, WN.stands_for) == ()
    # a word outside the named phrases is the fact check's, and a moved word is no new one
    moved = "The Government said that no payment should be made to the applicant."
    assert "made" not in unvouched(shown, moved, spans, WN.stands_for)
    assert unvouched(shown, shown.replace("interest", "[REDACTED]"), spans, WN.stands_for) == ()
    # a word the input has elsewhere, said once more for a named phrase, is a new word
    shown = "He was sentenced to prison and was convicted in the case."
    spans = ((shown.index("convicted"), shown.index("convicted") + len("convicted")),)
    answer = shown.replace("convicted", "sentenced")
    assert unvouched(shown, answer, spans, WN.stands_for) == ("sentenced",)


class _Writer:
    name = "fake-writer"

    def __init__(self, answer: str) -> None:
        self.answer = answer

    def rewrite(self, context: str, spans: list[str]) -> dict[str, str]:
        return {}

    def complete_sentence(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        return f"Sentence: {self.answer}"


@needs_wordnet
@pytest.mark.parametrize(("sense", "want"), [
    (WN.stands_for, "No [REDACTED] should be paid on the award."),
    (None, "No fee should be paid on the award."),  # the check off: the other thing stays
])
def test_an_answer_naming_another_thing_is_taken_with_those_words_redacted(
    sense, want: str  # type: ignore[no-untyped-def]
) -> None:
    shown = "No interest should be paid on the sum awarded."
    spans = ((3, 11), (shown.index("sum awarded"), len(shown) - 1))
    answer = "No fee should be paid on the award."
    step = SentenceStep(_Writer(answer), Tokenizer(), sense=sense)
    res = DelinkResult(id="x", text="", input_text=shown, passes=0, linkable_after=False)
    verdict = step.verify(shown, Job(0, len(shown), shown, spans), answer)
    assert (verdict.reason, verdict.words) == ((SENSE, ("fee",)) if sense else (None, ()))
    got = step.write(shown, [Job(0, len(shown), shown, spans)], [], res)
    assert got == {(0, len(shown)): want}
    if sense is not None:
        assert res.refusals["sentence: accepted with unvouched words redacted"] == 1

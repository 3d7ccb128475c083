"""The sentence step's fallbacks that need no second request: a refused sentence answer's
``Replacements:`` line, each pair through the pass's phrase check, and the index check
that leaves out phrases over words the pass's other edits change."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from presidio_delink import NgramIndex
from presidio_delink.core import DelinkLoop
from presidio_delink.edits import REDACTED, sentence_bounds
from presidio_delink.results import DelinkResult
from presidio_delink.sentences.prompt import parse_replacements
from presidio_delink.sentences.rewrite import Job, SentenceStep

SHOWN = "He was subsequently detained at the Ankara police station on <DATE_TIME>."


class _Answer:
    """A fake sentence writer: every request gets ``raw``; the requests are counted."""

    name = "fake-answer"

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self.calls = 0

    def rewrite(self, context: str, spans: list[str]) -> dict[str, Any]:
        return {}

    def complete_sentence(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        self.calls += 1
        return self.raw


def _job(shown: str, *phrases: str, offset: int = 0) -> Job:
    spans = tuple((shown.index(p), shown.index(p) + len(p)) for p in phrases)
    return Job(offset, offset + len(shown), shown, spans,
               runs=tuple((offset + a, offset + b) for a, b in spans))


def _vet(refuse: Sequence[str] = ()) -> Any:
    def vet(a: int, b: int, new: str, siblings: Sequence[str]) -> tuple[str | None, str]:
        return (None, "refused by the test") if new in refuse else (new, "")
    return vet


def _res(text: str) -> DelinkResult:
    return DelinkResult(id="x", text="", input_text=text, passes=0, linkable_after=False)


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("Replacements: placed in detention = held in custody; \"absconding\" = flight\n"
         "Sentence: x", [("placed in detention", "held in custody"), ("absconding", "flight")]),
        ("Replacements: \u27e6police\u27e7 -> law enforcement; = x; a=b", [("police", "law enforcement"),
                                                                  ("a", "b")]),
        ("Sentence: no replacements line", []),
        (None, []),
    ],
)
def test_parse_replacements(raw: object, want: list[tuple[str, str]]) -> None:
    assert parse_replacements(raw) == want


def test_a_refused_sentence_keeps_its_named_replacements(sample_index: NgramIndex) -> None:
    # the sentence drops "subsequently" (an unnamed word): refused by the fact check; its
    # Replacements line is used instead, without asking again
    w = _Answer("Replacements: Ankara police station = the local station\n"
                "Sentence: He was detained at the local station on <DATE_TIME>.")
    step = SentenceStep(w, sample_index.tokenizer, vet=_vet())
    res = _res(SHOWN)
    got = step.write(SHOWN, [_job(SHOWN, "Ankara police station")], [], res)
    assert got == {(0, len(SHOWN)): SHOWN.replace("Ankara police station", "the local station")}
    assert w.calls == 1
    assert res.refusals["sentence: accepted from its replacements"] == 1
    assert res.refusals["sentence: drops or changes words"] == 1


def test_a_replacement_the_phrase_check_refuses_is_redacted(sample_index: NgramIndex) -> None:
    shown = "The Ankara police station sent the fax to the Izmir prosecutor on <DATE_TIME>."
    w = _Answer("Replacements: Ankara police station = the station; Izmir = the city\n"
                "Sentence: The station faxed it to the city prosecutor on <DATE_TIME>.")
    step = SentenceStep(w, sample_index.tokenizer, vet=_vet(refuse=("the city",)))
    got = step.write(shown, [_job(shown, "Ankara police station", "Izmir")], [], _res(shown))
    assert got == {(0, len(shown)): f"The the station sent the fax to the {REDACTED} "
                                    "prosecutor on <DATE_TIME>."}


def test_without_a_phrase_check_there_is_no_fallback(sample_index: NgramIndex) -> None:
    w = _Answer("Replacements: Ankara police station = the local station\n"
                "Sentence: He was detained at the local station on <DATE_TIME>.")
    step = SentenceStep(w, sample_index.tokenizer, splice=False, attempts=2)
    res = _res(SHOWN)
    assert step.write(SHOWN, [_job(SHOWN, "Ankara police station")], [], res) == {}
    assert w.calls == 2  # asked again
    once = SentenceStep(w, sample_index.tokenizer, splice=False)  # ATTEMPTS: one request
    assert once.write(SHOWN, [_job(SHOWN, "Ankara police station")], [], _res(SHOWN)) == {}
    assert w.calls == 3
    assert "sentence: accepted from its replacements" not in res.refusals


def test_new_words_the_index_finds_are_redacted(sample_index: NgramIndex) -> None:
    shown = "The Ankara police station sent the fax to the Izmir prosecutor on <DATE_TIME>."
    w = _Answer("Replacements: Ankara police station = the station; Izmir = the city\n"
                "Sentence: The station faxed it to the city prosecutor on <DATE_TIME>.")

    def links(text: str, a: int, b: int, ignore: object = ()) -> list[str]:
        return ["the city prosecutor"] if "the city prosecutor" in text[a:b] else []

    step = SentenceStep(w, sample_index.tokenizer, links, vet=_vet(), splice=False)
    res = _res(shown)
    got = step.write(shown, [_job(shown, "Ankara police station", "Izmir")], [], res)
    assert got == {(0, len(shown)): f"The the station sent the fax to the {REDACTED} "
                                    "prosecutor on <DATE_TIME>."}
    # every rewrite found: nothing is left to keep, so the sentence falls back
    w2 = _Answer("Replacements: Izmir = the city\nSentence: The city.")
    step2 = SentenceStep(w2, sample_index.tokenizer, links, vet=_vet(), splice=False)
    assert step2.write(shown, [_job(shown, "Izmir")], [], _res(shown)) == {}


def test_the_index_check_leaves_out_words_other_edits_change(sample_index: NgramIndex) -> None:
    # a fake index check that records what it is told to leave out: the other runs of
    # the pass, shifted past the new sentence
    before, after = "First words here. ", " Then the next sentence."
    text = before + SHOWN + after
    seen: list[list[tuple[int, int]]] = []

    def links(t: str, a: int, b: int, ignore: Sequence[tuple[int, int]] = ()) -> list[str]:
        seen.append(list(ignore))
        return []

    new = "He was subsequently detained at the local lockup on <DATE_TIME>."
    w = _Answer(f"Replacements: Ankara police station = the local lockup\nSentence: {new}")
    job = _job(SHOWN, "Ankara police station", offset=len(before))
    outside = [(0, 5), (len(before) + len(SHOWN) + 6, len(before) + len(SHOWN) + 10)]
    inside = job.runs[0]
    step = SentenceStep(w, sample_index.tokenizer, links, changed=[*outside, inside])
    assert step.write(text, [job], [], _res(text))
    shift = len(new) - len(SHOWN)
    assert seen == [[outside[0], (outside[1][0] + shift, outside[1][1] + shift)]]


def test_sentence_links_leaves_out_a_phrase_over_an_ignored_span(
    sample_index: NgramIndex, sample_deid: list[tuple[str, str]]
) -> None:
    text = sample_deid[0][1]
    loop = DelinkLoop(sample_index, k=2)
    rep = loop.check(text)
    a, b, _f = rep.spans()[0]
    sa, sb = next((x, y) for x, y in sentence_bounds(text) if x <= a < y)
    found = loop.sentence_links(text, sa, sb)
    assert found
    # every phrase found lies over one of these: none is left
    spans = [(x, y) for x, y, _f in rep.spans()]
    assert loop.sentence_links(text, sa, sb, spans) == []
    # a span over no found phrase changes nothing
    assert loop.sentence_links(text, sa, sb, [(len(text), len(text))]) == found


class _Lexicon:
    """A lexicon that proposes the given words for every word."""

    available = True

    def __init__(self, words: list[str]) -> None:
        self.words = words

    def candidates(self, word: str, tag: str) -> list[Any]:
        from presidio_delink.candidates.lexicon import LexCandidate

        return [LexCandidate(w, "synonym", 0) for w in self.words]


def test_a_named_replacement_counts_only_where_a_lexicon_offers_it() -> None:
    spacy = pytest.importorskip("spacy")
    from presidio_delink.candidates import CandidateChooser
    from presidio_delink.candidates.verify import Tagger
    from presidio_delink.settings import DEFAULT_SPACY_MODEL

    if not spacy.util.is_package(DEFAULT_SPACY_MODEL):
        pytest.skip("spaCy model not installed")
    text = "The plaintiff was adjudicated bankrupt and no interest was paid on it."
    chooser = CandidateChooser(
        wordnet=_Lexicon(["declared", "judged"]),  # type: ignore[arg-type]
        scorer=object(),  # type: ignore[arg-type]  # vouches scores nothing
        tagger=Tagger(),
    )
    a = text.index("adjudicated")
    b = a + len("adjudicated")
    assert chooser.vouches(text, a, b, "declared")
    assert chooser.vouches(text, a, b, " Judged ")  # case and spacing do not matter
    assert not chooser.vouches(text, a, b, "found guilty")  # no lexicon offers it
    assert not chooser.vouches(text, a, b - 2, "declared")  # not a whole word


def test_a_splice_still_found_keeps_its_other_rewrites(sample_index: NgramIndex) -> None:
    # the answer drops "subsequently" (refused, then spliced back); the index still finds
    # the new words of one phrase: those are redacted, the other phrase's rewrite is kept
    shown = "He was subsequently detained at the Ankara police station by the gendarmerie."
    new = "He was detained at the city lockup by the military police."
    w = _Answer("Replacements: Ankara police station = city lockup; gendarmerie = military "
                f"police\nSentence: {new}")

    def links(t: str, a: int, b: int, ignore: object = ()) -> list[str]:
        return ["the city lockup by"] if "city lockup" in t[a:b] else []

    res = _res(shown)
    step = SentenceStep(w, sample_index.tokenizer, links)
    got = step.write(shown, [_job(shown, "Ankara police station", "gendarmerie")], [], res)
    assert got == {(0, len(shown)): "He was subsequently detained at the [REDACTED] by the "
                                    "military police."}
    assert res.refusals["sentence: accepted spliced"] == 1
    # a found phrase over no rewritten word changes nothing: still refused
    res2 = _res(shown)
    step2 = SentenceStep(w, sample_index.tokenizer,
                         lambda t, a, b, ignore=(): ["He was subsequently"])
    assert step2.write(shown, [_job(shown, "Ankara police station", "gendarmerie")], [],
                       res2) == {}


def test_a_splice_found_by_a_kept_named_word_redacts_that_word() -> None:
    # the answer changes words outside the named phrases (refused, then spliced back) and
    # keeps the named function word "they", which the fact check allows (a function word
    # may come back elsewhere); the index still finds the sentence by it: it is redacted,
    # and the rewrite of the other phrase is kept
    from presidio_delink.text import Tokenizer

    shown = "The applicants said that they were sued in respect of the property."
    new = "The applicants stated that they were taken to court in respect of the property."
    w = _Answer(f"Replacements: they = they; sued = taken to court\nSentence: {new}")

    def links(t: str, a: int, b: int, ignore: object = ()) -> list[str]:
        return ["that they were"] if "that they were" in t[a:b] else []

    res = _res(shown)
    step = SentenceStep(w, Tokenizer(), links)
    got = step.write(shown, [_job(shown, "they", "sued")], [], res)
    assert got == {(0, len(shown)): "The applicants said that [REDACTED] were taken to court "
                                    "in respect of the property."}
    assert res.refusals["sentence: accepted spliced"] == 1
    # a kept named word that is in no found phrase is left: still refused
    res2 = _res(shown)
    step2 = SentenceStep(w, Tokenizer(),
                         lambda t, a, b, ignore=(): ["applicants said that"])
    assert step2.write(shown, [_job(shown, "they", "sued")], [], res2) == {}


def test_a_splice_is_redacted_phrase_by_phrase_until_nothing_links() -> None:
    # each redaction leaves another phrase as what links: "they" (kept), then the new words
    # of "sued"; the rewrite of "property" is kept once nothing links
    from presidio_delink.text import Tokenizer

    shown = "The applicants said that they were sued in respect of the property."
    new = "The applicants stated that they were taken to court in respect of the land."
    w = _Answer(f"Sentence: {new}")

    def links(t: str, a: int, b: int, ignore: object = ()) -> list[str]:
        return [f for f in ("that they were", "taken to court in") if f in t[a:b]][:1]

    res = _res(shown)
    got = SentenceStep(w, Tokenizer(), links).write(
        shown, [_job(shown, "they", "sued", "property")], [], res
    )
    assert got == {(0, len(shown)): "The applicants said that [REDACTED] were [REDACTED] in "
                                    "respect of the land."}
    assert res.refusals["sentence: accepted spliced"] == 1

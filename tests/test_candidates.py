"""Rewrites by construction (presidio_delink.candidates): the lexicon keeps the original's
inflection, the tagger refuses a changed form, a candidate that still links is refused,
the audit names each choice's source, and a run is redacted only when nothing survives.

Uses WordNet's database files (Debian ``wordnet-base``), lemminflect, the spaCy model and
the packaged SmolLM2 where a test needs them, and skips saying which is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from presidio_delink import NgramIndex
from presidio_delink.candidates import CandidateChooser, WordNet
from presidio_delink.candidates.chooser import fixed_expression
from presidio_delink.candidates.lexicon import LexCandidate, inflect
from presidio_delink.candidates.propose import Word
from presidio_delink.candidates.verify import FormCheck, Tagger, head_index, same_form
from presidio_delink.edits import REDACTED, Run
from presidio_delink.errors import ConfigError, LLMError
from presidio_delink.llm.prompt import (
    MARK_CLOSE,
    MARK_OPEN,
    OPTIONS_SEP,
    example_texts,
    options_of,
    render_messages,
    response_schema,
    with_options,
    with_refused,
)
from presidio_delink.pipeline import Delinker
from presidio_delink.settings import DEFAULT_SPACY_MODEL, DelinkSettings

lemminflect = pytest.importorskip("lemminflect")
spacy = pytest.importorskip("spacy")

needs_wordnet = pytest.mark.skipif(
    not WordNet().available, reason="WordNet not found (apt-get install wordnet-base)"
)
needs_spacy_model = pytest.mark.skipif(
    not spacy.util.is_package(DEFAULT_SPACY_MODEL), reason="spaCy model not installed"
)

COLLECTION = [
    ("d1", "The police arrested the man near the old harbour gate."),
    ("d2", "Later the officers apprehended the man at the station."),
    ("d3", "The officers apprehended the man at the station."),
    ("d4", "The police held the woman in the city."),
    ("d5", "Then the police held the woman in the city."),
]
TEXT = "The police arrested the woman in the city."


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> NgramIndex:
    return NgramIndex.build(COLLECTION, tmp_path_factory.mktemp("cand") / "idx", max_n=4)


@pytest.fixture(scope="module")
def tagger() -> Tagger:
    return Tagger()


class Recorder:
    """A fake LLM that records what it is asked and answers nothing."""

    name = "recorder"

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def rewrite(self, context: str, spans: list[str]) -> dict[str, str]:
        self.asked.append(list(spans))
        return {}


class FlatScorer:
    """Scores every option alike (the order of proposal decides)."""

    passes = 0

    def score_many(self, asks: list[tuple[str, list[str], str, bool]]) -> list[list[float]]:
        return [self.score(*a) for a in asks]

    def score(self, left: str, options: list[str], right: str, spaced: bool) -> list[float]:
        self.passes += 1
        return [0.0] * len(options)


class FixedLexicon:
    """A lexicon that proposes fixed words, as given."""

    available = True

    def __init__(self, words: list[str]) -> None:
        self.words = words

    def candidates(self, word: str, tag: str) -> list[LexCandidate]:
        return [LexCandidate(w, "synonym", 0) for w in self.words]


# -- lexicon and inflection -----------------------------------------------------------------
@pytest.mark.parametrize(
    ("lemma", "tag", "form"),
    [
        ("detain", "VBD", "detained"),
        ("begin", "VBD", "began"),
        ("begin", "VBN", "begun"),
        ("tribunal", "NNS", "tribunals"),
        ("let go", "VBD", "let go"),
        ("pick up", "VBZ", "picks up"),
        ("court", "NN", "court"),
        # a verb's lemma that is another verb's past form ("established" -> "found" was
        # read on Wikipedia biographies)
        ("found", "VBD", "founded"),
        ("lay", "VBN", "laid"),
    ],
)
def test_inflect_to_the_original_form(lemma: str, tag: str, form: str) -> None:
    assert inflect(lemma, tag) == form


@needs_wordnet
@pytest.mark.parametrize(("word", "tag"), [("arrested", "VBD"), ("courts", "NNS"),
                                           ("commenced", "VBD"), ("holding", "VBG")])
def test_lexicon_candidates_keep_the_inflection(word: str, tag: str) -> None:
    from lemminflect import getInflection, getLemma

    cands = WordNet().candidates(word, tag)
    assert cands, word
    upos = "VERB" if tag.startswith("VB") else "NOUN"
    for c in cands:
        pieces = c.text.split()
        head = pieces[0] if upos == "VERB" else pieces[-1]
        lemmas = getLemma(head, upos=upos)
        assert any(head in getInflection(lem, tag=tag) for lem in lemmas), (word, c.text)
        assert c.text.lower() != word


@needs_wordnet
def test_lexicon_proposes_no_pronoun_for_a_person() -> None:
    # "the only person to have served" -> "the only someone" (a biography)
    words = {c.text for c in WordNet().candidates("person", "NN")}
    assert "individual" in words and not words & {"someone", "somebody"}


@needs_wordnet
def test_lexicon_never_proposes_names_or_the_word_itself() -> None:
    for c in WordNet().candidates("lawyer", "NN"):
        assert c.text.islower() and "lawyer" not in c.text
    assert WordNet().candidates("Sinop", "NNP") == []


@needs_wordnet
def test_wordnet_says_what_kind_of_place_a_name_is() -> None:
    wn = WordNet()
    kinds = {n: wn.place_kind(n) for n in ("Turkey", "Istanbul", "Anatolia", "Texas", "Famagusta")}
    assert kinds == {
        "Turkey": "country",  # the country, not the bird (turkey)
        "Istanbul": "city",
        "Anatolia": "region",
        "Texas": "region",  # an American state: not a country
        "Famagusta": None,  # not in WordNet: spaCy's type stands
    }
    assert wn.place_kind("turkey") is None  # the bird
    assert wn.place_kind("Court") is None


def test_same_form_table() -> None:
    assert same_form("VBD", "VBD") and not same_form("VBD", "VBN")
    assert same_form("NNP", "NN") and not same_form("NNS", "NN")
    assert head_index(["VBD", "RP"]) == 0 and head_index(["JJ", "NNS"]) == 1


# -- verification ---------------------------------------------------------------------------
@needs_spacy_model
def test_tagger_refuses_a_changed_form(tagger: Tagger) -> None:
    text = "Yesterday the police arrested him near the station."
    a = text.index("arrested")
    kept = tagger.form_kept(
        text, a, a + len("arrested"), ["VBD"], ["detained", "detention", "detains", "picked up"]
    )
    assert kept == [True, False, False, True]


@needs_spacy_model
@pytest.mark.parametrize(
    ("text", "span", "answer", "why"),
    [
        # read in the benchmark's LLM answers (2026-12-04): each broke its sentence
        ("One tank with a bore hole was found.", "with a", "a", "drops the run's preposition"),
        ("He sold them to cultivators whom he knew.", "to cultivators", "farmers",
         "drops the run's preposition"),
        ("He appealed, maintaining his claims in full.", "maintaining his", "preserving",
         "drops the determiner its next word needs"),
        ("The transactions had in reality never taken place.", "reality never", "never",
         "leaves its preposition without a noun"),
        ("Each bag held 0.5 grams of powder.", "5 grams", "grams", "cuts a word or number in two"),
        ("It was on sheet/plan 11.23E.1 of the map.", "plan 11", "map",
         "cuts a word or number in two"),
        # the same edges kept, or a clause word dropped: passed
        ("One tank with a bore hole was found.", "with a", "with the", None),
        ("He appealed, maintaining his claims in full.", "maintaining his", "keeping his", None),
        ("Counsel said that inquiries had revealed no fault.", "that inquiries",
         "investigations", None),
        ("Each bag held 0.5 grams of powder.", "5 grams", "7 grams", None),
        ("Yesterday the police arrested him.", "arrested", "detention", "changes the word form"),
        # the article before the run takes the replacement
        ("He lodged an application with the Court.", "application", "request",
         "its article would not fit the next word"),
        ("He lodged an application with the Court.", "application", "appeal", None),
        ("He lodged a request with the Court.", "request", "application",
         "its article would not fit the next word"),
    ],
)
def test_form_check_keeps_the_words_that_join_a_run_to_its_sentence(
    tagger: Tagger, text: str, span: str, answer: str, why: str | None
) -> None:
    a = text.index(span)
    assert FormCheck(tagger).reason(text, a, a + len(span), answer) == why


@needs_spacy_model
def test_a_candidate_that_still_links_is_refused(tagger: Tagger) -> None:
    text = "Yesterday the police apprehended him near the station."
    a = text.index("apprehended")
    r = Run(a, a + len("apprehended"), 1)
    chooser = CandidateChooser(
        wordnet=FixedLexicon(["seized", "detained"]),  # type: ignore[arg-type]
        scorer=FlatScorer(),  # type: ignore[arg-type]
        tagger=tagger,
    )

    def links(new: str, start: int, end: int) -> bool:
        return new[start:end] == "seized"  # as if "police seized him" were in one group

    ch = chooser.choose(text, [r], lambda _r, _c: None, links)[(r.start, r.end)]
    assert ch.text == "detained" and ch.source == "lexicon"
    assert ch.refused == {"links below k": 1}
    assert ch.proposed == 2


@needs_spacy_model
def test_the_loop_checks_refuse_before_scoring(tagger: Tagger) -> None:
    text = "Yesterday the police apprehended him near the station."
    a = text.index("apprehended")
    r = Run(a, a + len("apprehended"), 1)
    scorer = FlatScorer()
    chooser = CandidateChooser(
        wordnet=FixedLexicon(["nabbed", "held"]),  # type: ignore[arg-type]
        scorer=scorer,  # type: ignore[arg-type]
        tagger=tagger,
    )
    ch = chooser.choose(text, [r], lambda _r, c: "unknown" if c == "nabbed" else "echo")[
        (r.start, r.end)
    ]
    assert ch.text is None and ch.refused == {"unknown": 1, "echo": 1}
    assert scorer.passes == 0  # nothing survived to be scored


def test_needs_writer_only_for_phrases() -> None:
    assert not CandidateChooser.needs_writer("Sinop", ["NNP"])  # a name: redacted
    assert CandidateChooser.needs_writer("acquitted them", ["VBD", "PRP"])  # two words
    assert not CandidateChooser.needs_writer("acquitted", ["VBD"])  # one common word
    assert not CandidateChooser.needs_writer("Sinop", [])  # untagged: one word
    assert CandidateChooser.needs_writer("feel unwell", [])


# -- the loop -------------------------------------------------------------------------------
@needs_wordnet
@needs_spacy_model
def test_loop_chooses_a_candidate_and_audits_its_source(
    index: NgramIndex, smollm2: Path
) -> None:
    llm = Recorder()
    d = Delinker(index, k=2, rewriter=llm, rewrite="candidates")
    res = d.delink(TEXT, "t")
    assert not res.linkable_after and res.text is not None
    entry = next(a for a in res.audit if a.original == "arrested")
    assert entry.method == "candidate"
    assert entry.source in ("lexicon", "collection")
    assert entry.replacement == "apprehended"  # the one synonym the collection uses
    assert entry.score is not None and entry.candidates >= 2
    assert entry.refused.get("a word the collection never uses", 0) >= 1
    assert "apprehended" in res.text
    assert llm.asked == []  # nothing left for the LLM to write
    assert res.to_json()["audit"][0]["source"] == entry.source


@needs_spacy_model
def test_loop_redacts_only_when_nothing_survives(
    index: NgramIndex, tmp_path: Path, smollm2: Path
) -> None:
    empty = CandidateChooser(wordnet=WordNet(tmp_path))  # no WordNet files: no candidate
    assert not empty.wordnet.available
    llm = Recorder()
    d = Delinker(index, k=2, rewriter=llm, rewrite="candidates")
    d._chooser = empty  # noqa: SLF001 - the test's lexicon
    res = d.delink(TEXT, "t")
    entry = next(a for a in res.audit if a.original == "arrested")
    assert entry.method == "redacted" and entry.replacement == REDACTED
    assert entry.reason == "no candidate survived"
    assert llm.asked == []  # one common word: redacted, not written freely

    generate = Delinker(index, k=2, rewriter=Recorder(), rewrite="generate")
    assert generate.chooser is None


def test_rewrite_setting_is_validated() -> None:
    assert DelinkSettings(rewrite="candidates").rewrite == "candidates"
    with pytest.raises(ConfigError, match="rewrite"):
        DelinkSettings(rewrite="freely")


def test_the_default_is_candidates_with_an_llm_and_plain_without(index: NgramIndex) -> None:
    """With an LLM the loop chooses among candidates (the LLM writes phrases);
    without one it keeps to generalisations and redaction (no model to load); a mode
    named is kept either way, and the run's fingerprint names the mode run."""
    from presidio_delink.batch import LLMOptions, PIIOptions, batch_fingerprint

    assert DelinkSettings().rewrite is None
    assert Delinker(index, k=2).settings.rewrite == "generate"
    assert Delinker(index, k=2, rewriter=Recorder()).settings.rewrite == "candidates"
    for mode in ("candidates", "choose", "generate"):
        assert Delinker(index, k=2, rewrite=mode).settings.rewrite == mode
        assert Delinker(index, k=2, rewriter=Recorder(), rewrite=mode).settings.rewrite == mode

    def fp(llm: str, rewrite: str | None) -> str:
        return batch_fingerprint(index, DelinkSettings(rewrite=rewrite), LLMOptions(llm),
                                 PIIOptions())

    assert fp("embedded", None) == fp("embedded", "candidates") != fp("embedded", "generate")
    assert fp("none", None) == fp("none", "generate") != fp("none", "candidates")


def test_an_earlier_rewrite_gets_no_candidate_of_its_own() -> None:
    """A stand-in for a stand-in drifts ("four" -> "several" -> "individual"): a run that
    is an earlier pass's rewrite is not given to the chooser; without an LLM, or with one
    for a single word, it is redacted, saying why; the LLM is asked about a phrase, shown
    the input's words."""
    from presidio_delink.candidates.chooser import Choice
    from presidio_delink.results import DelinkResult
    from presidio_delink.rewriting import AGAIN, CANDIDATE, Rewriting
    from presidio_delink.text import Tokenizer

    class Passes:
        def reason(self, *args: Any) -> None:
            return None

    class Chooser:
        form_check = Passes()
        needs_writer = staticmethod(CandidateChooser.needs_writer)

        def __init__(self) -> None:
            self.asked: list[str] = []

        def choose(self, text, rs, accept, links, options=1):  # type: ignore[no-untyped-def]
            self.asked += [text[r.start : r.end] for r in rs]
            return {(r.start, r.end): Choice("various", "lexicon", 0.0, 1) for r in rs}

    text = "The applicants were detained for several days."
    a = text.index("several")
    run = Run(a, a + len("several"), 1)

    def rewrite(rewriter: Any, origins: list[tuple[int, int, str]]) -> tuple[Any, Chooser]:
        ch = Chooser()
        step = Rewriting(rewriter, Tokenizer(), DelinkSettings(rewrite="candidates"), chooser=ch)
        res = DelinkResult(id="", text=None, input_text=text, passes=0, linkable_after=True)
        return step.rewrite_runs(text, [run], [], res, origins), ch

    out, ch = rewrite(None, [])
    assert out[(run.start, run.end)] == ("various", CANDIDATE) and ch.asked == ["several"]
    out, ch = rewrite(None, [(run.start, run.end, "four")])
    assert out[(run.start, run.end)] == (None, AGAIN) and ch.asked == []
    llm = Recorder()
    out, ch = rewrite(llm, [(run.start, run.end, "four")])
    assert out[(run.start, run.end)] == (None, AGAIN) and llm.asked == []  # one word
    b = text.index("for several")
    run = Run(b, b + len("for several"), 2)
    out, ch = rewrite(llm, [(run.start, run.end, "during four")])
    assert ch.asked == [] and llm.asked == [["during four"]]
    # a run inside an earlier rewrite ("few" of "a few") gets no candidate either: left
    # out, it had read "a civilian authorities"
    run = Run(a, a + len("several"), 1)
    out, ch = rewrite(None, [(b, b + len("for several"), "during four")])
    assert out[(run.start, run.end)] == (None, AGAIN) and ch.asked == []


def test_cli_has_the_rewrite_option() -> None:
    from click.testing import CliRunner

    from presidio_delink.cli import main

    out = CliRunner().invoke(main, ["delink", "--help"])
    assert out.exit_code == 0
    assert "--rewrite" in out.output and "candidates" in out.output


# -- what this round of the chooser added ---------------------------------------------------
@needs_wordnet
def test_no_verb_hypernyms_and_no_phrases_for_one_word() -> None:
    from presidio_delink.candidates.propose import Word, lexicon_candidates

    wn = WordNet()
    # a verb's hypernym changes what was done ("accepted" / "rejected" -> "evaluated")
    assert all(c.relation != "hypernym" for c in wn.candidates("rejected", "VBD"))
    assert any(c.relation == "hypernym" for c in wn.candidates("detention", "NN"))
    # WordNet's phrases for one word are idioms of another register
    got = lexicon_candidates(wn, [Word("married", 0, 7, "VBD")])
    assert got and all(" " not in c.text for c in got)


@needs_wordnet
def test_adjectives_get_the_words_they_are_similar_to() -> None:
    got = {c.text: c.relation for c in WordNet().candidates("sufficient", "JJ")}
    assert got.get("adequate") == "similar"


def test_function_words_have_fixed_stand_ins() -> None:
    from presidio_delink.candidates.propose import Word, swaps
    from presidio_delink.candidates.verify import same_form as kept

    assert [c.text for c in swaps(Word("their", 0, 5, "PRP$"))] == ["the"]
    assert [c.text for c in swaps(Word("Until", 0, 5, "IN"))] == ["Till"]  # not "up to"
    assert swaps(Word("and", 0, 3, "CC")) == []  # no stand-in says the same
    assert swaps(Word("their", 0, 5, "DT")) == []  # the tag decides, not the spelling
    assert kept("PRP$", "DT") and kept("IN", "TO") and not kept("IN", "DT")


def test_a_relative_which_becomes_that_only_after_its_noun() -> None:
    from presidio_delink.candidates.propose import Word, relative_swap, swaps

    assert [c.text for c in swaps(Word("which", 0, 5, "WDT"))] == ["that"]

    def tags(text: str, of: dict[str, str]) -> dict[int, str]:
        return {text.index(w): t for w, t in of.items()}

    cases = [
        ("the decision which was taken", {"decision": "NN"}, True),
        ("the decision, which was taken", {"decision": "NN"}, False),  # not restrictive
        ("the extent to which it held", {"to": "IN"}, False),
        ("to decide which court held", {"decide": "VB"}, False),  # not a relative
    ]
    for text, of, ok in cases:
        at = tags(text, of)
        assert relative_swap(text, text.index("which"), lambda i, at=at: at.get(i, "")) is ok


def test_before_becomes_prior_to_only_where_it_tells_time() -> None:
    from presidio_delink.candidates.propose import temporal_before

    def ok(text: str) -> bool:
        at = text.index("before") + len("before")
        return temporal_before(text, at)

    assert ok("lodged before [REDACTED] the applicant")
    assert ok("lodged before 1 May")
    assert ok("questioned before leaving the country")
    assert not ok("sued the State before the District Court")  # the forum
    assert not ok("brought before him")
    assert not ok("appeared before Judge Smith")


def test_neighbours_compare_the_company_words_keep(tmp_path: Path) -> None:
    from presidio_delink.candidates.propose import Neighbours

    docs = [
        ("a", "Yesterday police arrested him quickly."),
        ("b", "Yesterday officers arrested him quickly."),
        ("c", "Today police questioned her."),
        ("d", "Today officers questioned her."),
        ("e", "The old city hall opened."),
        ("f", "A new city hall closed."),
        ("g", "Nothing happened here."),
    ]
    index = NgramIndex.build(docs, tmp_path / "idx", max_n=3)
    nb = Neighbours(index, min_docs=2)
    assert nb.similarity("police", "police") == pytest.approx(1.0)
    near, far = nb.similarity("police", "officers"), nb.similarity("police", "city")
    assert near is not None and far is not None and near > 0.5 > far
    assert nb.similarity("police", "nothing") is None  # in one document: cannot tell
    assert nb.similarity("police", "zebra") is None  # not in the collection
    assert Neighbours(index).similarity("police", "officers") is None  # 2 < 3 documents


class FixedNeighbours:
    def __init__(self, sims: dict[str, float | None]) -> None:
        self.sims = sims

    def similarity(self, a: str, b: str) -> float | None:
        return self.sims.get(b)


def test_the_sense_is_the_one_the_collection_uses(tmp_path: Path) -> None:
    from presidio_delink.candidates.propose import Candidate

    ch = CandidateChooser(wordnet=WordNet(tmp_path), scorer=FlatScorer())  # type: ignore[arg-type]
    lex = [
        Candidate("belief", "lexicon", 1.0, "synonym", rank=0),
        Candidate("sentence", "lexicon", 0.5, "synonym", rank=1),
    ]
    ch.neighbours = FixedNeighbours({"belief": 0.01, "sentence": 0.2})  # type: ignore[assignment]
    assert ch._domain_sense("conviction", lex) == 1  # noqa: SLF001
    assert ch._used_otherwise("conviction", lex[0])  # noqa: SLF001 - below SAME_USE
    assert not ch._used_otherwise("conviction", lex[1])  # noqa: SLF001
    ch.neighbours = FixedNeighbours({})  # type: ignore[assignment]
    assert ch._domain_sense("conviction", lex) == 0  # noqa: SLF001 - nothing to tell by
    assert not ch._used_otherwise("conviction", lex[0])  # noqa: SLF001 - not judged


@needs_wordnet
@needs_spacy_model
def test_candidates_rewrite_without_an_llm(index: NgramIndex, smollm2: Path) -> None:
    d = Delinker(index, k=2, rewriter=None, rewrite="candidates")
    res = d.delink(TEXT, "t")
    assert not res.linkable_after and res.llm_calls == 0
    entry = next(a for a in res.audit if a.original == "arrested")
    assert entry.method == "candidate" and entry.replacement == "apprehended"
    # the default (free generation) without an LLM still only redacts
    plain = Delinker(index, k=2, rewriter=None).delink(TEXT, "t")
    assert plain.words_rewritten == 0 and plain.words_redacted > 0


# -- the planner steers to words a candidate can replace -------------------------------------
# Every word and every pair of TIE_TEXT is in two documents or more but "police arrested",
# in one: changing either of its two words breaks it, so two plans of one word tie.
TIE = [
    ("d0", "the police arrested a thief"),
    ("d1", "the police held the man"),
    ("d2", "the police held the man today"),
    ("d3", "the officers arrested the man"),
    ("d4", "the officers arrested the man today"),
]
TIE_TEXT = "the police arrested the man"


class OneWordLexicon:
    """A lexicon with stand-ins for one word only."""

    available = True

    def __init__(self, word: str, stand_ins: list[str]) -> None:
        self.word, self.stand_ins = word, stand_ins

    def candidates(self, word: str, tag: str) -> list[LexCandidate]:
        if word.casefold() != self.word:
            return []
        return [LexCandidate(w, "synonym", 0) for w in self.stand_ins]


def test_plan_leaves_avoided_words_alone_at_the_same_count(tmp_path: Path) -> None:
    idx = NgramIndex.build(TIE, tmp_path / "idx", max_n=2)
    d = Delinker(idx, k=2, rewriter=None)
    rep = d.check(TIE_TEXT)
    rs, optimum = d.plan(TIE_TEXT, rep)
    assert optimum == 1 and [TIE_TEXT[r.start : r.end] for r in rs] in (["police"], ["arrested"])
    rs2, optimum2 = d.plan(TIE_TEXT, rep, avoid=[(rs[0].start, rs[0].end)])
    assert optimum2 == 1 and len(rs2) == 1
    assert {TIE_TEXT[r.start : r.end] for r in rs + rs2} == {"police", "arrested"}
    # nothing else breaks a unigram that links: avoiding it changes nothing
    lone = "the police arrested the thief"
    rep3 = d.check(lone)
    rs3, _ = d.plan(lone, rep3)
    thief = lone.index("thief")
    rs4, _ = d.plan(lone, rep3, avoid=[(thief, thief + 5)])
    assert "thief" in [lone[r.start : r.end] for r in rs3]
    assert "thief" in [lone[r.start : r.end] for r in rs4]


@needs_spacy_model
@pytest.mark.parametrize("first", [True, False])
def test_the_plan_moves_to_the_word_a_candidate_can_replace(
    tmp_path: Path, first: bool
) -> None:
    idx = NgramIndex.build(TIE, tmp_path / "idx", max_n=2)
    plain = Delinker(idx, k=2, rewriter=None)
    (r,) = plain.plan(TIE_TEXT, plain.check(TIE_TEXT))[0]
    word = TIE_TEXT[r.start : r.end]
    # a stand-in for the word the plain plan takes (first) or for the other one
    target = word if first else ({"police", "arrested"} - {word}).pop()
    stand_in = {"police": "officers", "arrested": "held"}[target]
    d = Delinker(idx, k=2, rewriter=None, rewrite="candidates")
    d._chooser = CandidateChooser(  # noqa: SLF001 - the test's lexicon
        wordnet=OneWordLexicon(target, [stand_in]), scorer=FlatScorer(), index=None, k=2
    )
    res = d.delink(TIE_TEXT, "t")
    assert not res.linkable_after and res.words_redacted == 0
    (entry,) = res.audit
    assert entry.original == target and entry.replacement == stand_in
    assert entry.method == "candidate"
    assert res.optimum_words == 1


class MapLexicon(OneWordLexicon):
    """A lexicon with stand-ins for some words."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table

    def candidates(self, word: str, tag: str) -> list[LexCandidate]:
        return [LexCandidate(w, "synonym", 0) for w in self.table.get(word.casefold(), [])]


TRADE = [
    ("d0", "police arrested thieves"),
    ("d1", "police came"), ("d2", "police left"),
    ("d3", "arrested men"), ("d4", "they arrested men"),
    ("d5", "thieves ran"), ("d6", "thieves hid"),
    ("d7", "officers came"), ("d8", "officers left"),
    ("d9", "robbers ran"), ("d10", "robbers hid"),
]


@needs_spacy_model
def test_the_plan_trades_a_redaction_for_two_rewrites(tmp_path: Path) -> None:
    """``arrested`` alone breaks both phrases that link, but nothing replaces it; its
    two neighbours both have a stand-in: two rewrites are better than one redaction."""
    idx = NgramIndex.build(TRADE, tmp_path / "idx", max_n=2)
    text = "police arrested thieves"
    d = Delinker(idx, k=2, rewriter=None, rewrite="candidates")
    d._chooser = CandidateChooser(  # noqa: SLF001 - the test's lexicon
        wordnet=MapLexicon({"police": ["officers"], "thieves": ["robbers"]}),
        scorer=FlatScorer(), index=None, k=2,
    )
    res = d.delink(text, "t")
    assert not res.linkable_after and res.words_redacted == 0
    assert res.text == "officers arrested robbers"
    assert res.optimum_words == 1 and res.words_rewritten == 2
    # with a stand-in for only one neighbour, the trade would still redact a word: the
    # plan of the fewest words is kept
    d._chooser = CandidateChooser(  # noqa: SLF001
        wordnet=MapLexicon({"police": ["officers"]}), scorer=FlatScorer(), index=None, k=2
    )
    res = d.delink(text, "t")
    assert res.text == "police [REDACTED] thieves"


def _candidates_run(tmp_path: Path, docs: list[tuple[str, str]], table: dict[str, list[str]]) -> Any:
    """The loop (``rewrite="candidates"``, no LLM) on the first of ``docs``, an index of
    them all (word pairs), and a lexicon of ``table``'s stand-ins."""
    idx = NgramIndex.build(docs, tmp_path / "idx", max_n=2)
    d = Delinker(idx, k=2, rewriter=None, rewrite="candidates")
    d._chooser = CandidateChooser(  # noqa: SLF001 - the test's lexicon
        wordnet=MapLexicon(table), scorer=FlatScorer(), index=None, k=2
    )
    return d.delink(docs[0][1], "t")


NAMES = [
    ("d0", "the Federal Labour Court ruled"),
    ("d1", "a court ruled"), ("d2", "a court ruled"),
    ("d3", "the federal budget"), ("d4", "the federal budget"),
]


@needs_spacy_model
@pytest.mark.parametrize(
    ("extra", "want"),
    [
        ([], "the court ruled"),
        # "the court" found in one group only: the head would link, so the name keeps all
        # but the redacted word rather than losing two more words for nothing
        ([("d5", "in the court")], "the Federal [REDACTED] Court ruled"),
    ],
)
def test_a_name_word_left_to_a_redaction_widens_to_the_name_head(
    tmp_path: Path, extra: list[tuple[str, str]], want: str
) -> None:
    """``Labour`` breaks both phrases that link and nothing replaces a word of a name;
    the whole name's head noun stands for it where that links nowhere."""
    res = _candidates_run(tmp_path, NAMES + extra, {})
    assert not res.linkable_after and res.text == want
    (entry,) = res.audit
    if want == "the court ruled":
        assert entry.original == "Federal Labour Court" and entry.replacement == "court"
        assert entry.method == "candidate" and entry.source == "generalisation"
        assert res.words_redacted == 0 and res.words_rewritten == 3
    else:
        assert entry.original == "Labour" and entry.method == "redacted"


POSSESSIVE = [
    ("d0", "the applicant's lawyer came"),
    ("d1", "the person's lawyer came"), ("d2", "the person's lawyer came"),
    ("d3", "the applicant left"), ("d4", "the applicant left"),
]


@needs_spacy_model
def test_a_possessive_takes_its_nouns_stand_in(tmp_path: Path) -> None:
    """``applicant's`` is one written word: no candidate for it whole, but its noun's
    stand-in keeps the ``'s`` (``the person's lawyer``), not a redaction."""
    res = _candidates_run(tmp_path, POSSESSIVE, {"applicant": ["person"]})
    assert not res.linkable_after and res.text == "the person's lawyer came"
    (entry,) = res.audit
    assert (entry.original, entry.replacement, entry.method) == ("applicant", "person", "candidate")


GLOSS = [
    ("d0", "the Court (Verfassungsgerichtshof) ruled"),
    ("d1", "the court ruled"), ("d2", "the court ruled"),
    ("d3", "the Verfassungsgerichtshof"), ("d4", "the Verfassungsgerichtshof"),
]


@needs_spacy_model
def test_a_gloss_in_brackets_is_left_out_whole(tmp_path: Path) -> None:
    """``verfassungsgerichtshof ruled`` links; nothing replaces the German name, but the
    sentence has named the court already: the bracket goes, not a word inside it."""
    res = _candidates_run(tmp_path, GLOSS, {})
    assert not res.linkable_after and res.text == "the Court ruled"
    (entry,) = res.audit
    assert entry.original == "(Verfassungsgerichtshof)" and entry.replacement == ""
    assert entry.method == "candidate" and entry.source == "generalisation"


OPENER = [
    ("d0", "Subsequently the police left"),
    ("d1", "the police left"), ("d2", "the police left"),
]


@needs_spacy_model
def test_a_stand_in_opening_a_sentence_is_no_new_name(tmp_path: Path) -> None:
    """``Later``, capitalised because it opens the sentence, is the register's word for
    ``Subsequently``, not a name from nowhere (the document never writes ``later``)."""
    res = _candidates_run(tmp_path, OPENER, {})
    assert not res.linkable_after
    assert res.text in ("Later the police left", "Afterwards the police left")


# -- rewrite="choose": the LLM chooses among the verified candidates --------------------------
class Choosing:
    """A fake LLM that answers each span with choices to ``pick(options)``; records what it
    was offered."""

    name = "choosing"

    def __init__(self, pick: Any) -> None:
        self.pick = pick
        self.offered: list[dict[str, list[str]]] = []

    def rewrite(self, context: str, spans: list[str]) -> dict[str, Any]:
        opts = options_of(context, spans)
        self.offered.append(opts)
        if self.pick is None:
            raise LLMError("down")
        return {s: self.pick(o) for s, o in opts.items() if self.pick(o) is not None}


def _choose_run(index: NgramIndex, llm: Any) -> Any:
    d = Delinker(index, k=2, rewriter=llm, rewrite="choose")
    d._chooser = CandidateChooser(  # noqa: SLF001 - the test's lexicon
        wordnet=FixedLexicon(["held", "apprehended"]), scorer=FlatScorer(), index=None, k=2
    )
    res = d.delink(TEXT, "t")
    return res, next(a for a in res.audit if a.original == "arrested")


@needs_spacy_model
def test_the_llm_chooses_among_the_verified_candidates(index: NgramIndex) -> None:
    llm = Choosing(lambda o: o[-1])
    res, entry = _choose_run(index, llm)
    assert [set(o["arrested"]) for o in llm.offered] == [{"held", "apprehended"}]
    last = llm.offered[0]["arrested"][-1]
    assert entry.method == "candidate" and entry.replacement == last
    assert entry.refused.get("passed over by the LLM") == 1
    assert not res.linkable_after and last in (res.text or "")


@needs_spacy_model
@pytest.mark.parametrize(
    ("pick", "method", "passed_over"),
    [
        (lambda o: REDACTED, "redacted", "the LLM found none fits"),
        (lambda o: "seized", "candidate", "passed over by the scorer (no choice from the LLM)"),
        (lambda o: None, "candidate", "passed over by the scorer (no choice from the LLM)"),
        (None, "candidate", "passed over by the scorer (no choice from the LLM)"),
    ],
    ids=["none-fits", "not-offered", "no-answer", "llm-down"],
)
def test_a_choice_outside_the_list_is_never_used(
    index: NgramIndex, pick: Any, method: str, passed_over: str
) -> None:
    res, entry = _choose_run(index, Choosing(pick))
    assert entry.method == method
    assert passed_over in entry.refused
    if method == "candidate":  # the scorer's first stands
        assert entry.replacement in ("held", "apprehended")
    else:
        assert entry.replacement == REDACTED and entry.reason == "the LLM found no candidate fits"
    assert "seized" not in (res.text or "") and not res.linkable_after


def test_choices_go_into_the_request_and_the_schema() -> None:
    ctx = with_options(f"The court {MARK_OPEN}awarded{MARK_CLOSE} costs.", {"awarded": ["granted"]})
    assert options_of(ctx, ["awarded"]) == {"awarded": ["granted"]}
    assert options_of(ctx, ["costs"]) == {}
    user = render_messages(ctx, ["awarded"])[-1]["content"]
    assert 'Choices: {"awarded":["granted"]}' in user and "choices" not in user.split("\n")[1]
    schema = response_schema(["awarded", "costs"], max_length=40, options={"awarded": ["granted"]})
    assert schema["properties"]["awarded"] == {"type": "string", "enum": ["granted", REDACTED]}
    assert schema["properties"]["costs"] == {"type": "string", "maxLength": 40}
    # a second request's refused note and the choices are both read back
    both = with_refused(ctx, {"awarded": ("gave", "still links")})
    assert options_of(both, ["awarded"]) == {"awarded": ["granted"]}


def test_function_words_without_stand_ins_are_avoided_from_the_first_plan(
    tmp_path: Path,
) -> None:
    idx = NgramIndex.build(TIE, tmp_path / "idx", max_n=2)
    d = Delinker(idx, k=2, rewriter=None, rewrite="candidates")
    text = "the police of the town arrested him because of it"
    hopeless = {text[a:b] for a, b in d._hopeless(text)}  # noqa: SLF001
    assert {"of", "him", "it", "the"} <= hopeless  # an article has no stand-in either
    # words with fixed stand-ins stay open
    assert not hopeless & {"because", "police", "town", "arrested"}
    # the words of a name of several words are avoided too: its number goes first
    text = "He was charged under Article 169 of the Criminal Code. Court fees were paid."
    hopeless = {text[a:b] for a, b in d._hopeless(text)}  # noqa: SLF001
    assert "Code" in hopeless
    # a sentence's first word, a capitalised word alone, and a name's first word (it may
    # be left out: "the Erzincan Martial Law Court") are not avoided
    assert not hopeless & {"Article", "169", "Court", "fees", "Criminal"}


def test_a_negation_quantifier_or_article_never_gets_another_determiner(
    tmp_path: Path,
) -> None:
    docs = [
        ("d1", "he said so the interest should be paid"),
        ("d2", "she said so the interest should be paid later"),
        ("d3", "it said so a interest should be paid"),
        ("d4", "they said so a interest should be paid now"),
        ("d5", "we said so no interest should be paid"),
        ("d6", "he said so this interest should be paid"),
        ("d7", "she said so this interest should be paid later"),
        ("d8", "it said so that interest should be paid"),
        ("d9", "they said so that interest should be paid now"),
    ]
    idx = NgramIndex.build(docs, tmp_path / "idx", max_n=3)
    ch = CandidateChooser(wordnet=FixedLexicon([]), scorer=FlatScorer(), index=idx, k=2)
    # an article says whether the thing is known: "the" and "a" are no stand-ins
    cases = (("no", set()), ("the", set()), ("a", set()), ("this", {"that"}), ("that", {"this"}))
    for own, expected in cases:
        text = f"I said so {own} interest should be paid"
        a = text.index(f" {own} ") + 1
        run = Run(a, a + len(own), 1)
        got = ch._proposed(text, run, [Word(own, a, a + len(own), "DT")], None)  # noqa: SLF001
        assert {c.text for c in got if c.source == "collection"} == expected, own


def test_a_word_of_a_fixed_expression_gets_no_lexicon_candidate(index: NgramIndex) -> None:
    text = "As regards sentencing, the court held, in the event of an appeal, a new event."
    for word, inside in (("regards", True), ("event", True), ("court", False)):
        a = text.index(word)
        assert (fixed_expression(text, a, a + len(word)) is not None) is inside, word
    last = text.rindex("event")
    assert fixed_expression(text, last, last + 5) is None  # "a new event": its own sense
    upheld = "The judgment was upheld on appeal, and the appeal was dismissed."
    assert fixed_expression(upheld, upheld.index("appeal"), upheld.index("appeal") + 6)
    assert fixed_expression(upheld, upheld.rindex("appeal"), upheld.rindex("appeal") + 6) is None
    ch = CandidateChooser(wordnet=FixedLexicon(["details"]), scorer=FlatScorer(), index=None)
    a = text.index("regards")
    got, live, _w = ch._proposals(  # noqa: SLF001
        text, Run(a, a + 7, 1), [Word("regards", a, a + 7, "NNS")], None, lambda r, c: None,
    )
    assert live is None and got.text is None
    assert got.refused == {"part of a fixed expression": 1}


def test_the_choices_example_counts_as_an_example_only_where_it_is_shown() -> None:
    plain, with_choices = example_texts(), example_texts(choices=True)
    passage = "The applicants said that the trial had been unfair because of the delay."
    assert passage not in plain and passage in with_choices
    assert not any(OPTIONS_SEP in t for t in with_choices)


@needs_wordnet
@needs_spacy_model
def test_proposable_is_the_first_step_of_choosing(tagger: Tagger) -> None:
    """The protections' cheap estimate: a content word with a lexicon word and a number
    with a generalisation are proposable, and so is a name's word that its head may stand
    for; function words, a name's head, a word
    inside a fixed expression and one the legal register lists without a stand-in
    (``action``) are not; a span that is not one tagged word is not."""
    ch = CandidateChooser(scorer=FlatScorer(), tagger=tagger)  # type: ignore[arg-type]
    text = ("The applicant lodged an action with the Izmir Court on 12 May 1999, but it was "
            "dismissed in the light of the facts.")
    words = ["applicant", "action", "12", "dismissed", "The", "with", "Court", "light",
             "Izmir"]
    spans = [(text.index(w), text.index(w) + len(w)) for w in words]
    spans.append((text.index("lodged"), text.index("lodged") + 9))  # "lodged an"
    got = dict(zip(words + ["two words"], ch.proposable(text, spans), strict=True))
    # a name's head is not proposable, its other words are: the head stands for the name
    assert got == {"applicant": True, "action": False, "12": True, "dismissed": True,
                   "The": False, "with": False, "Court": False, "light": False,
                   "Izmir": True, "two words": False}
    # what it passes, choose() gets candidates for; what it refuses gets none
    r = Run(spans[3][0], spans[3][1], 1)
    assert ch.choose(text, [r], lambda _r, _c: None)[(r.start, r.end)].proposed > 0
    for i in (1, 5):
        r = Run(spans[i][0], spans[i][1], 1)
        assert ch.choose(text, [r], lambda _r, _c: None)[(r.start, r.end)].proposed == 0


def test_prepositional_participles_take_prepositions_and_too_is_never_proposed() -> None:
    """``concerning`` tagged as a verb takes a preposition's stand-ins, never a verb's
    synonym ("referring the duration"); ``too`` never stands in for ``also``."""
    from presidio_delink.candidates.lexicon import TOO_GENERAL
    from presidio_delink.candidates.propose import Word, lexicon_candidates, swaps

    w = Word("concerning", 0, 10, "VBG")
    assert [c.text for c in swaps(w)] == ["regarding", "about"]
    assert lexicon_candidates(FixedLexicon(["referring"]), [w]) == []  # type: ignore[arg-type]
    assert "too" in TOO_GENERAL
    if WordNet().available:
        assert "too" not in [c.text for c in WordNet().candidates("also", "RB")]


def test_a_capitalised_word_inside_a_sentence_is_part_of_a_name() -> None:
    """``Section 5`` or ``Fundamental Freedoms`` get no common noun's synonym; the first
    word of a sentence does."""
    from presidio_delink.candidates.chooser import in_name

    text = 'Under Section 5 of the Rule, the Court ruled. Decisions followed: "Appeals" too.'
    assert in_name(text, text.index("Section")) and in_name(text, text.index("Rule"))
    assert in_name(text, text.index("Court"))
    assert not in_name(text, text.index("Under"))  # opens the text
    assert not in_name(text, text.index("Decisions"))  # opens a sentence
    assert not in_name(text, text.index("Appeals"))  # opens a quotation
    assert not in_name(text, text.index("followed"))  # lower case


def test_a_run_of_several_words_gets_no_lexicon_combination() -> None:
    """Words' synonyms combined were wrong in 14 of 21 read ("trial judge" -> "test
    official"): a run of several words gets no lexicon candidate (the LLM writes it, or
    it is redacted); one word still does."""
    from presidio_delink.candidates.propose import Word, lexicon_candidates

    lex = FixedLexicon(["test"])
    two = [Word("trial", 0, 5, "NN"), Word("judge", 6, 11, "NN")]
    assert lexicon_candidates(lex, two) == []  # type: ignore[arg-type]
    assert [c.text for c in lexicon_candidates(lex, two[:1])] == ["test"]  # type: ignore[arg-type]


def test_a_spelling_variant_is_no_candidate() -> None:
    from presidio_delink.candidates.propose import spelling_variant

    assert spelling_variant("recognised", "recognized")
    assert spelling_variant("judgement", "judgment")
    assert spelling_variant("supervision", "supervising")
    assert spelling_variant("reunification", "unification")
    assert spelling_variant("exercise", "exercising")
    assert spelling_variant("reunification", "reunion")
    assert spelling_variant("litres", "liters")  # two letters swapped
    assert spelling_variant("centre", "center")
    assert not spelling_variant("contended", "contested")
    assert not spelling_variant("relating", "pertaining")
    assert not spelling_variant("arrested", "detained")
    assert not spelling_variant("sued", "used")  # short words: too many real pairs
    assert not spelling_variant("lodged", "filed")


def test_a_slot_candidate_is_judged_by_its_company_too(tmp_path: Path) -> None:
    from presidio_delink.candidates.propose import Candidate

    ch = CandidateChooser(wordnet=WordNet(tmp_path), scorer=FlatScorer())  # type: ignore[arg-type]
    ch.neighbours = FixedNeighbours({"opinion": 0.002, "a": 0.0})  # type: ignore[assignment]
    slot = Candidate("opinion", "collection", 1.15, "synonym")
    assert ch._used_otherwise("judgement", slot)  # noqa: SLF001 - "the _ of" confirms no sense
    filler = Candidate("a", "collection", 0.2)
    assert not ch._used_otherwise("the", filler)  # noqa: SLF001 - a determiner filler




def test_another_sense_needs_more_company(tmp_path: Path) -> None:
    from presidio_delink.candidates.propose import OTHER_SENSE, SAME_USE, Candidate

    ch = CandidateChooser(wordnet=WordNet(tmp_path), scorer=FlatScorer())  # type: ignore[arg-type]
    between = (SAME_USE + OTHER_SENSE) / 2
    ch.neighbours = FixedNeighbours(  # type: ignore[assignment]
        {"examination": 0.3, "hearing": between, "test": between, "run": None, "essay": None}
    )
    lex = [
        Candidate("test", "collection", 1.15, "synonym", rank=0),  # in the slot
        Candidate("run", "lexicon", 1.0, "synonym", rank=0),  # not in the slot: dropped
        Candidate("hearing", "lexicon", 0.5, "synonym", rank=1),  # the same
        Candidate("essay", "lexicon", 0.25, "synonym", rank=2),
        Candidate("examination", "lexicon", 0.25, "synonym", rank=2),
    ]
    kept = ch._by_sense("trial", lex)  # noqa: SLF001
    assert [c.text for c in kept] == ["test", "essay", "examination"]
    used = {c.text: ch._used_otherwise("trial", c) for c in kept}  # noqa: SLF001
    # another sense (0, in the slot) needs more company than between the bars; of the
    # collection's sense (2), a word with nothing to tell by is refused (not WordNet's first)
    assert used == {"test": True, "essay": True, "examination": False}
    ch.neighbours = None
    assert [c.text for c in ch._by_sense("trial", lex)] == ["test", "run"]  # noqa: SLF001


@needs_spacy_model
def test_a_candidate_keeps_the_words_pairings(tmp_path: Path, tagger: Tagger) -> None:
    docs = [(f"d{i}", f"He was granted legal aid in case {i}. The help came late.") for i in range(4)]
    docs += [("e", "They asked for legal advice."), ("f", "Some legal advice was given.")]
    index = NgramIndex.build(docs, tmp_path / "idx", max_n=3)
    text = "The applicant received legal aid for the appeal."
    a = text.index("aid")
    r = Run(a, a + 3, 1)
    chooser = CandidateChooser(
        wordnet=FixedLexicon(["help", "advice"]),  # type: ignore[arg-type]
        scorer=FlatScorer(),  # type: ignore[arg-type]
        tagger=tagger,
        index=index,
    )
    chooser.neighbours = None  # the company is another check's
    ch = chooser.choose(text, [r], lambda _r, _c: None)[(r.start, r.end)]
    # "legal aid" is said in 4 documents, "legal help" in none, "legal advice" in 2
    assert ch.text == "advice"
    assert ch.refused == {"the collection never says it beside its neighbour": 1}
    # The protections' estimate keeps the same pairings: with only "help" to propose, "aid"
    # has nothing the chooser would keep, so a protection counts it at the redaction cost.
    assert chooser.proposable(text, [(r.start, r.end)]) == [True]
    chooser.wordnet = FixedLexicon(["help"])  # type: ignore[assignment]
    assert chooser.proposable(text, [(r.start, r.end)]) == [False]


# -- the legal register ---------------------------------------------------------------------
def _one_word(
    tagger: Tagger, text: str, word: str, lexicon: list[str], index: NgramIndex | None = None
) -> tuple[CandidateChooser, Run]:
    """A chooser proposing ``lexicon`` (and the register's words), scoring all alike,
    with no company check, and the run of ``word`` in ``text``."""
    chooser = CandidateChooser(
        wordnet=FixedLexicon(lexicon),  # type: ignore[arg-type]
        scorer=FlatScorer(),  # type: ignore[arg-type]
        tagger=tagger,
        index=index,
    )
    chooser.neighbours = None
    a = text.index(word)
    return chooser, Run(a, a + len(word), 1)


@pytest.mark.parametrize(
    ("word", "tag", "stand_ins"),
    [
        ("dismissed", "VBD", ["rejected"]),  # WordNet's senses of "dismiss" have no "reject"
        ("Quashed", "VBN", ["Annulled", "Overturned"]),  # inflected and cased
        ("judgments", "NNS", ["rulings", "decisions"]),
        ("offences", "NNS", ["crimes"]),
        ("pension", "NN", ["benefit"]),
        ("alleged", "VBD", ["claimed"]),
        ("alleged", "JJ", []),  # "the alleged violation": another word before a noun
        ("alleged", "VBN", []),
        ("cases", "NNS", []),  # "in some cases" is not "in some matters"
        ("held", "VBD", []),  # "held that" / "held in custody": not listed
        ("applicant", "NN", []),
        ("earlier", "JJ", ["previous"]),
        ("earlier", "JJR", []),  # no "previouser"
        ("wives", "NNS", ["spouses"]),  # the kin generalised
        ("lawyers", "NNS", ["legal representatives"]),  # a phrase's last word inflected
        ("upheld", "VBN", ["confirmed"]),
        ("registered", "VBD", ["recorded"]),
        ("registered", "VBN", []),  # "a registered letter": only in a frame (below)
        ("plots", "NNS", []),  # a plot to kill is no parcel: only in a frame
        ("invoked", "VBD", ["relied on"]),  # a phrasal verb's first word inflected
        ("regulations", "NNS", []),  # "regulation works on a river" is no "rule"
        ("residing", "VBG", ["living"]),  # register entries read on held-in texts
        ("renewed", "VBN", []),  # "renewed his request" is no "extended": not listed
        ("contracts", "NNS", ["agreements"]),
        ("time-limit", "NN", ["deadline"]),
        ("passages", "NNS", ["extracts"]),  # of an article
        ("passage", "NN", []),  # "the passage of time" is no "extract"
        ("ambiguous", "JJ", ["unclear"]),
        ("Specifically", "RB", ["In particular"]),  # an adverb's phrase, cased
        ("namely", "RB", ["that is to say"]),
        ("explicitly", "RB", ["expressly"]),
        ("However", "RB", ["Nevertheless"]),
    ],
)
def test_the_legal_register_proposes_its_stand_ins_in_the_words_form(
    word: str, tag: str, stand_ins: list[str]
) -> None:
    from presidio_delink.candidates.register import register_candidates

    assert register_candidates(word, tag) == stand_ins


@pytest.mark.parametrize(
    ("word", "tag"),
    # read in the protection's outputs: WordNet's words changed what
    # these say ("could not be" -> "could non be", "had" -> "received", "damages" ->
    # "costs", "the time to finish" -> "instance")
    [("not", "RB"), ("still", "RB"), ("had", "VBD"), ("prevented", "VBD"),
     ("maintaining", "VBG"), ("designate", "VB"), ("damages", "NNS"), ("memorial", "NN"),
     ("questions", "NNS"), ("time", "NN"), ("return", "NN"), ("judge", "NN"),
     ("circumstances", "NNS"), ("rest", "NN"), ("got", "VBD"), ("rides", "VBZ"),
     ("described", "VBN"), ("grounds", "NNS")],
)
def test_the_legal_register_lists_some_words_with_no_stand_in(word: str, tag: str) -> None:
    from presidio_delink.candidates.register import listed, register_candidates

    assert listed(word, tag) and register_candidates(word, tag) == []


@pytest.mark.parametrize(
    ("word", "tag", "next_word", "stand_ins"),
    [
        ("held", "VBD", "that", ["found"]),
        ("held", "VBD", "in", []),  # "held in custody": listed with no stand-in
        ("claiming", "VBG", "compensation", ["seeking"]),
        ("claimed", "VBD", "that", ["maintained"]),
        ("Considered", "VBD", "That", ["Found"]),
        ("submitted", "VBD", "that", ["argued", "maintained"]),
        ("submitted", "VBN", "to", []),  # no frame: not listed, WordNet's words
        ("requested", "VBN", "to", ["asked"]),
        ("requested", "VBD", "an", []),  # "requested an oral hearing" is not "asked"
        ("costs", "NNS", "and", []),  # "costs and expenses" keeps its words
        ("costs", "NNS", "of", ["expenses"]),
        ("plots", "NNS", "of", ["parcels"]),
        ("registered", "VBN", "in", ["recorded"]),
        ("further", "RB", "held", ["also"]),
        ("further", "RB", "to", []),  # "further to": no frame
        ("under", "IN", "section", ["pursuant to"]),  # a preposition by its frame
        ("under", "IN", "arrest", []),
        ("hearing", "NN", "of", []),  # "the hearing of witnesses"
        ("hearings", "NNS", "were", ["sessions"]),
        ("entertain", "VB", "the", ["examine"]),  # "refused to entertain the complaint"
        ("entertained", "VBD", "doubts", []),
        ("refusal", "NN", "of", ["denial"]),  # "the refusal of legal aid"
        ("refusal", "NN", "to", []),  # "a refusal to testify"
        ("already", "RB", "been", ["previously"]),  # "had already been carried out"
        ("already", "RB", "pending", []),  # "is already pending": not listed
        ("further", "RB", "rejected", ["also"]),
        ("maintained", "VBD", "that", ["argued"]),  # listed with none elsewhere (above)
        ("national", "JJ", "legislation", ["domestic"]),
        ("national", "JJ", "power", []),  # "came to national power" (a biography)
        # read on held-in texts
        ("appeal", "NN", "was", ["challenge"]),  # "the applicant's appeal was dismissed"
        ("appeals", "NNS", "on", ["challenges"]),  # "their appeals on points of law"
        ("appeal", "NN", "court", []),  # a noun's modifier: no "challenge court"
        ("appeal", "NN", "proceedings", []),
        ("application", "NN", "for", ["request"]),  # "an application for leave"
        ("application", "NN", "of", []),  # "in application of the Law"
        ("application", "NN", "was", []),  # an application to the Court
        ("grounds", "NNS", "for", ["reasons"]),
        ("question", "NN", "whether", ["issue"]),
    ],
)
def test_a_frame_of_the_register_holds_before_its_next_word(
    word: str, tag: str, next_word: str, stand_ins: list[str]
) -> None:
    from presidio_delink.candidates.register import listed, register_candidates

    assert register_candidates(word, tag, next_word) == stand_ins
    assert listed(word, tag, next_word) == (
        bool(stand_ins) or word in ("held", "hearing", "national", "appeal", "application")
        or (word, next_word) == ("costs", "and")
    )


def test_the_legal_register_gives_no_stand_in_for_a_name() -> None:
    from presidio_delink.candidates.propose import register
    from presidio_delink.candidates.register import RELATION

    assert register(Word("Verdict", 0, 7, "NNP")) == []
    (c,) = register(Word("verdict", 0, 7, "NN"))
    assert (c.text, c.source, c.relation, c.meaning) == ("ruling", "lexicon", RELATION, 1.0)


@needs_spacy_model
def test_a_register_word_replaces_wordnets_and_is_not_judged_by_company(tagger: Tagger) -> None:
    text = "Yesterday the court dismissed the appeal of the company."
    chooser, r = _one_word(tagger, text, "dismissed", ["discharged", "rejected"])
    # the collection's company would refuse every word, WordNet's and the register's alike
    chooser.neighbours = FixedNeighbours({"discharged": 0.0, "rejected": 0.0})  # type: ignore[assignment]
    ch = chooser.choose(text, [r], lambda _r, _c: None)[(r.start, r.end)]
    assert ch.text == "rejected" and ch.source == "lexicon"
    # the register lists "dismiss": its word only, WordNet's ("discharged") not proposed
    assert ch.proposed == 1 and ch.refused == {}
    chooser.wordnet = FixedLexicon([])  # type: ignore[assignment]
    assert chooser.proposable(text, [(r.start, r.end)]) == [True]  # the register's word


@needs_spacy_model
def test_a_word_the_register_lists_without_a_stand_in_gets_no_lexicon_word(
    tagger: Tagger,
) -> None:
    text = "Yesterday the trial of the company began in the town."
    chooser, r = _one_word(tagger, text, "trial", ["test", "run"])
    ch = chooser.choose(text, [r], lambda _r, _c: None)[(r.start, r.end)]
    assert ch.text is None and ch.proposed == 0  # "trial" -> "test" reads another sense
    assert chooser.proposable(text, [(r.start, r.end)]) == [False]
    # a word listed for one tag only gets none in another, not WordNet's ("case" is listed
    # for NN: "dismissed the cases" -> "the facts" was read)
    text = "Yesterday the court dismissed the cases of the company."
    chooser, r = _one_word(tagger, text, "cases", ["facts", "instances"])
    ch = chooser.choose(text, [r], lambda _r, _c: None)[(r.start, r.end)]
    assert ch.text is None and ch.proposed == 0


@needs_spacy_model
def test_a_lexicon_word_takes_the_article_before_it(tagger: Tagger) -> None:
    text = "He said that it was not a clock on the wall."
    chooser, r = _one_word(tagger, text, "clock", ["instrument", "timepiece"])
    ch = chooser.choose(text, [r], lambda _r, _c: None)[(r.start, r.end)]
    assert ch.text == "timepiece"  # "a instrument" is refused
    assert ch.refused == {"its article would not fit the next word": 1}


def _paired(
    tmp_path: Path, tagger: Tagger, line: str, text: str, word: str
) -> tuple[CandidateChooser, Run]:
    """The chooser of ``word`` in ``text`` over four documents that each say ``line``
    (``{}``: the document's number)."""
    docs = [(f"d{i}", line.format(i)) for i in range(4)]
    return _one_word(tagger, text, word, [], NgramIndex.build(docs, tmp_path / "idx", max_n=3))


@needs_spacy_model
def test_a_register_word_keeps_the_words_pairings(tmp_path: Path, tagger: Tagger) -> None:
    text = "The applicant was charged with a criminal offence in the town."
    chooser, r = _paired(tmp_path, tagger, "It was a criminal offence in case {}. Crime fell.",
                         text, "offence")
    ch = chooser.choose(text, [r], lambda _r, _c: None)[(r.start, r.end)]
    # "criminal offence" is said in 4 documents, "criminal crime" in none
    assert ch.text is None
    assert ch.refused == {"the collection never says it beside its neighbour": 1}


@needs_spacy_model
def test_a_function_word_is_no_partner(tmp_path: Path, tagger: Tagger) -> None:
    from presidio_delink.candidates.propose import Candidate

    text = "Later the applicants sold the house."
    chooser, r = _paired(tmp_path, tagger, "The applicants left in case {}.", text, "applicants")
    c = Candidate("persons", "lexicon", 1.0, "synonym")
    # "the applicants" is said in 4 documents, "the persons" in none: "the" pairs with anything
    assert not chooser._unpaired(text, r.start, r.end, c)  # noqa: SLF001


@needs_spacy_model
def test_a_subject_and_its_verb_are_no_pairing(tmp_path: Path, tagger: Tagger) -> None:
    from presidio_delink.candidates.propose import Candidate

    text = "Later the applicant lodged a complaint and claimed compensation."
    chooser, r = _paired(tmp_path, tagger, "The applicant lodged claimed compensation in case {}.",
                         text, "applicant")
    # "applicant lodged" is said in 4 documents, "person lodged" in none: any subject may
    # lodge; nor does the verb pair with its subject ("applicant filed")
    assert not chooser._unpaired(text, r.start, r.end, Candidate("person", "lexicon", 1.0, "synonym"))  # noqa: SLF001
    v = text.index("lodged")
    assert not chooser._unpaired(text, v, v + 6, Candidate("filed", "lexicon", 1.0, "synonym"))  # noqa: SLF001
    # a verb and its object still are ("claimed compensation", never "asked compensation")
    v = text.index("claimed")
    assert chooser._unpaired(text, v, v + 7, Candidate("asked", "lexicon", 1.0, "synonym"))  # noqa: SLF001


def test_a_register_word_is_known_whatever_the_collection(index: NgramIndex) -> None:
    d = Delinker(index, k=2, arity=1, rewriter=None, rewrite="candidates")
    assert d._known_word("police")  # noqa: SLF001 - the collection's
    assert d._known_word("rejected") and d._known_word("Rulings")  # noqa: SLF001 - the register's
    assert not d._known_word("prayer")  # noqa: SLF001 - WordNet's alone is not enough
    plain = Delinker(index, k=2, arity=1, rewriter=None, rewrite="generate")
    assert not plain._known_word("rejected")  # noqa: SLF001 - no candidates, no register

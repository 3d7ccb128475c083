"""Rewrites by construction (presidio_delink.candidates): the lexicon keeps the original's
inflection, the tagger refuses a changed form, a candidate that still links is refused,
the audit names each choice's source, and a run is redacted only when nothing survives.

Uses WordNet's database files (Debian ``wordnet-base``), lemminflect, the spaCy model and
the packaged SmolLM2 where a test needs them, and skips saying which is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from presidio_delink import NgramIndex
from presidio_delink.candidates import CandidateChooser, WordNet
from presidio_delink.candidates.lexicon import LexCandidate, inflect
from presidio_delink.candidates.verify import Tagger, head_index, same_form
from presidio_delink.edits import REDACTED, Run
from presidio_delink.errors import ConfigError
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
def test_lexicon_never_proposes_names_or_the_word_itself() -> None:
    for c in WordNet().candidates("lawyer", "NN"):
        assert c.text.islower() and "lawyer" not in c.text
    assert WordNet().candidates("Sinop", "NNP") == []


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
def test_a_candidate_that_still_links_is_refused(tagger: Tagger) -> None:
    text = "Yesterday the police arrested him near the station."
    a = text.index("arrested")
    r = Run(a, a + len("arrested"), 1)
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
    text = "Yesterday the police arrested him near the station."
    a = text.index("arrested")
    r = Run(a, a + len("arrested"), 1)
    scorer = FlatScorer()
    chooser = CandidateChooser(
        wordnet=FixedLexicon(["nabbed", "arrested"]),  # type: ignore[arg-type]
        scorer=scorer,  # type: ignore[arg-type]
        tagger=tagger,
    )
    ch = chooser.choose(text, [r], lambda _r, c: "unknown" if c == "nabbed" else "echo")[
        (r.start, r.end)
    ]
    assert ch.text is None and ch.refused == {"unknown": 1, "echo": 1}
    assert scorer.passes == 0  # nothing survived to be scored


def test_needs_writer_only_for_phrases_and_names() -> None:
    text = "the Sinop court acquitted them of all charges"
    assert CandidateChooser.needs_writer(text, Run(4, 9, 1))  # a name
    assert CandidateChooser.needs_writer(text, Run(16, 30, 2))  # two words
    assert not CandidateChooser.needs_writer(text, Run(16, 25, 1))  # one common word


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


def test_cli_has_the_rewrite_option() -> None:
    from click.testing import CliRunner

    from presidio_delink.cli import main

    out = CliRunner().invoke(main, ["delink", "--help"])
    assert out.exit_code == 0
    assert "--rewrite" in out.output and "candidates" in out.output

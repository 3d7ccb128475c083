"""A modifier left out (presidio_delink.candidates.drop): which words may go, the
log-probability check that what follows still reads, and the loop's edit that removes the
word with one space and counts it as a generalisation, not a redaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from presidio_delink import NgramIndex
from presidio_delink.candidates import CandidateChooser
from presidio_delink.candidates.drop import droppable, gloss_span
from presidio_delink.candidates.lexicon import LexCandidate
from presidio_delink.edits import REDACTED, Run
from presidio_delink.linkage import analyze
from presidio_delink.pipeline import Delinker
from presidio_delink.report import render
from presidio_delink.review.document import build_chunks, joined
from presidio_delink.settings import DEFAULT_SPACY_MODEL

spacy = pytest.importorskip("spacy")
needs_spacy_model = pytest.mark.skipif(
    not spacy.util.is_package(DEFAULT_SPACY_MODEL), reason="spaCy model not installed"
)


def tokens(text: str, tags: str) -> list[tuple[int, int, str]]:
    """``(start, end, tag)`` of the space-separated words of ``text``, tagged as given."""
    out, pos = [], 0
    for word, tag in zip(text.split(), tags.split(), strict=True):
        a = text.index(word, pos)
        out.append((a, a + len(word), tag))
        pos = a + len(word)
    return out


@pytest.mark.parametrize(
    ("text", "tags", "i", "ok"),
    [
        ("the written complaint was lodged", "DT JJ NN VBD VBN", 1, True),
        # what the complaint is: the case's own terms
        ("the constitutional complaint was lodged", "DT JJ NN VBD VBN", 1, False),
        ("exceeded a reasonable time", "VBD DT JJ NN", 2, False),
        ("the alleged offence was committed", "DT JJ NN VBD VBN", 1, False),  # a hedge
        ("the second applicant was arrested", "DT JJ NN VBD VBN", 1, False),  # which one
        ("an armed gang attacked", "DT JJ NN VBD", 1, False),  # "an gang"
        ("a serious criminal offence", "DT JJ JJ NN", 1, True),  # "a criminal offence"
        ("into police custody today", "IN NN NN NN", 1, True),
        ("to frame grounds of appeal", "TO NN NNS IN NN", 1, False),  # a verb read as noun
        ("the contractor effecting removal", "DT NN NN NN", 1, False),  # the same
        ("the contractor effecting removal would", "DT NN NN NN MD", 2, False),  # its verb
        ("the contractor effecting removal would", "DT NN JJ NN MD", 2, False),
        ("a flat without parking space", "DT NN IN NN NN", 3, True),
        ("mental health facilities were", "JJ NN NNS VBD", 1, False),  # "mental facilities"
        ("for open conditions there", "IN JJ NNS RB", 1, False),  # a term of art
        ("a sentence of life imprisonment", "DT NN IN NN NN", 3, False),
        ("for the applicant Mr Smith", "IN DT NN NNP NNP", 2, False),  # a name follows
        ("the Directorate General refused", "DT NNP NNP VBD", 1, False),  # "the General"
        ("the Tax Authority wrote", "DT NNP NNP VBD", 1, False),  # one word left
        ("the High Court Registry wrote", "DT NNP NNP NNP VBD", 1, False),  # a rank
        ("the Warsaw District Court wrote", "DT NNP NNP NNP VBD", 1, True),
        ("a “gross sexual intrusion” here", "DT JJ JJ NN RB", 2, False),  # quoted
        ("the Asylum and Immigration Tribunal", "DT NNP CC NNP NNP", 3, False),
        ("the Erzincan Martial Law Court", "DT NNP NNP NNP NNP", 1, True),
        ("the Erzincan Martial Law Court", "DT NNP NNP NNP NNP", 2, False),  # inside a name
        # only before a public body each place has its own of: without its first word the
        # name names another body (read on Wikipedia biographies)
        ("the Canadian Football League team", "DT NNP NNP NNP NN", 1, False),
        ("banned as child pornography by", "VBN IN NN NN IN", 2, False),
        ("in the illegal armed organisation .", "IN DT JJ JJ NN .", 3, False),  # the charge
        ("the Ottawa District Hockey Association and", "DT NNP NNP NNP NNP CC", 1, False),
        ("and Mrs Price said", "CC NNP NNP VBD", 1, False),  # a title
        ("the applicants again appealed", "DT NNS RB VBD", 2, True),
        ("the applicants never appealed", "DT NNS RB VBD", 2, False),  # a negation
        ("the detention was unlawful today", "DT NN VBD JJ NN", 3, False),  # predicative
        ("the detention was unlawful", "DT NN VBD JJ", 3, False),  # last word
        ("his unlawful detention ended", "PRP$ JJ NN VBD", 1, False),  # the claim itself
        ("membership of an illegal organisation", "NN IN DT JJ NN", 3, False),
        ("his lengthy detention ended", "PRP$ JJ NN VBD", 1, True),
        ("he was arrested", "PRP VBD VBN", 2, False),
        # the second of two coordinated adjectives: "military or service"
        ("military or civilian service raised", "JJ CC JJ NN VBD", 2, False),
        # the past perfect's auxiliary where the participle is also the past tense
        ("the court had dismissed the appeal", "DT NN VBD VBN DT NN", 2, True),
        ("the court had taken a decision", "DT NN VBD VBN DT NN", 2, False),  # "took"
        ("the court had been informed", "DT NN VBD VBN VBN", 2, False),  # "was"
        ("the court had not dismissed it", "DT NN VBD RB VBN PRP", 2, False),
        ("the applicant had a lawyer", "DT NN VBD DT NN", 2, False),  # the verb itself
    ],
)
def test_which_modifiers_may_be_left_out(text: str, tags: str, i: int, ok: bool) -> None:
    assert (droppable(text, tokens(text, tags), i) is None) is ok


def test_a_word_beside_punctuation_stays() -> None:
    text = "Subsequently, serious charges were brought"
    toks = [(0, 12, "RB"), (14, 21, "JJ"), (22, 29, "NNS"), (30, 34, "VBD"), (35, 42, "VBN")]
    assert droppable(text, toks, 1) == "not between two words"  # the comma before it
    assert droppable(text, toks, 0) == "not between two words"  # opens the sentence


class Scorer:
    """Returns fixed log-probabilities: (with the word and what follows, what follows
    alone, the word alone)."""

    passes = 0

    def __init__(self, with_it: float, without: float, alone: float) -> None:
        self.values = [with_it, without, alone]

    def score_many(self, asks: list[tuple[str, list[str], str, bool]]) -> list[list[float]]:
        return [self.score(*a) for a in asks]

    def score(self, left: str, options: list[str], right: str, spaced: bool) -> list[float]:
        self.passes += 1
        assert len(options) == 3 and options[1].startswith(" man")
        return list(self.values)


class NoLexicon:
    available = True

    def candidates(self, word: str, tag: str) -> list[LexCandidate]:
        return []


TEXT = "the judge sent the young man to prison"
COLLECTION = [
    ("d1", "the judge sent the man to prison"),
    ("d2", "the judge sent the man to prison again"),
    ("d3", "a young woman"),
]


@needs_spacy_model
@pytest.mark.parametrize(
    ("scores", "dropped"),
    [
        ((-12.0, -4.0, -9.0), True),  # what follows: -4 without, -3 with: 1 nat worse
        ((-12.0, -10.0, -9.0), False),  # 7 nats worse: a phrase the gap breaks
    ],
)
def test_the_chooser_leaves_a_modifier_out_only_where_what_follows_reads(
    scores: tuple[float, float, float], dropped: bool
) -> None:
    a = TEXT.index("young")
    r = Run(a, a + len("young"), 1)
    ch = CandidateChooser(wordnet=NoLexicon(), scorer=Scorer(*scores))  # type: ignore[arg-type]
    got = ch.choose(TEXT, [r], lambda _r, _c: None)[(r.start, r.end)]
    if dropped:
        assert (got.text, got.source) == ("", "generalisation")
        assert got.proposed == 1
    else:
        assert got.text is None
        assert got.refused == {"the next words read worse without it": 1}


@needs_spacy_model
def test_a_drop_that_still_links_is_refused() -> None:
    a = TEXT.index("young")
    r = Run(a, a + len("young"), 1)
    ch = CandidateChooser(wordnet=NoLexicon(), scorer=Scorer(-12.0, -4.0, -9.0))  # type: ignore[arg-type]
    seen = []

    def links(new: str, start: int, end: int) -> bool:
        seen.append((new, start, end))
        return True

    got = ch.choose(TEXT, [r], lambda _r, _c: None, links)[(r.start, r.end)]
    assert got.text is None and got.refused == {"links below k": 1}
    assert seen == [("the judge sent the man to prison", a, a)]


@needs_spacy_model
def test_the_loop_removes_the_word_and_one_space(tmp_path: Path) -> None:
    idx = NgramIndex.build(COLLECTION, tmp_path / "idx", max_n=3)
    assert analyze(idx, TEXT, k=2).linkable
    d = Delinker(idx, k=2, rewriter=None, rewrite="candidates")
    d._chooser = CandidateChooser(  # noqa: SLF001 - the test's lexicon and scorer
        wordnet=NoLexicon(), scorer=Scorer(-12.0, -4.0, -9.0), index=idx, k=2  # type: ignore[arg-type]
    )
    res = d.delink(TEXT, "t")
    assert res.text == "the judge sent the man to prison"
    assert not res.linkable_after
    (entry,) = res.audit
    assert (entry.original, entry.replacement) == ("young", "")
    assert entry.method == "candidate" and entry.source == "generalisation"
    assert res.words_rewritten == 1 and res.words_redacted == 0
    assert REDACTED not in res.text
    assert all(b > a for a, b, _label in res.marks)  # nothing left to mark
    assert "<td>young</td>" in render([res]) and "(left out)" in render([res])
    # the review app aligns it as an edit that removed the word, explained by the audit
    rec = res.to_json()
    chunks = build_chunks(rec["text"], rec["audit"], TEXT)
    assert joined(chunks) == res.text
    (edit,) = [c for c in chunks if c.kind != "same"]
    assert edit.before.strip() == "young" and edit.proposed == ""
    assert edit.method == "candidate"


@pytest.mark.parametrize(
    ("text", "word", "want"),
    [
        ("the Constitutional Court (Verfassungsgerichtshof). She", "Verfassungsgerichtshof",
         "(Verfassungsgerichtshof)"),
        ("the Panel (Unabhängiger Verwaltungssenat) dismissed", "Verwaltungssenat",
         "(Unabhängiger Verwaltungssenat)"),
        ("a deacon (Diakon, Dienstamtgehilfe). In", "Diakon", "(Diakon, Dienstamtgehilfe)"),
        ("the Ministry of Culture (“the Ministry”). The", "the", "(“the Ministry”)"),
        ("the whole gloss (Strafverfügung) itself", "(Strafverfügung)", "(Strafverfügung)"),
        # asides, references and redactions are no glosses
        ("a decision (of about 30 pages) upon", "pages", None),
        ("Civil Procedure (Rule 3.4.2.). On", "Rule", None),
        ("at the [REDACTED] (Germany). The", "Germany", None),
        ("(b) Professor Smith withdraws", "b", None),
        ("the Court (Verfassungsgerichtshof) ruled", "Court", None),  # outside it
        ("Mr X (Mr [REDACTED]) came", "Mr", None),
    ],
)
def test_gloss_span(text: str, word: str, want: str | None) -> None:
    at = text.rindex(word) if word != "Mr" else text.index("(Mr") + 1
    got = gloss_span(text, at, at + len(word))
    assert (text[got[0] : got[1]] if got else None) == want

"""Part-of-speech check of replacements (presidio_delink.presidio.pos), with the real
spaCy tagger (slow: loading it takes seconds)."""

from __future__ import annotations

import pytest

spacy = pytest.importorskip("spacy")

from presidio_delink.presidio.engines import DEFAULT_SPACY_MODEL  # noqa: E402
from presidio_delink.presidio.pos import PosCheck  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not spacy.util.is_package(DEFAULT_SPACY_MODEL), reason="spaCy model not installed"
    ),
]

TEXT = (
    "The applicants alleged that their case, which commenced in <DATE_TIME> and ended in "
    "<DATE_TIME>, was not heard within a reasonable time as required by the Convention. "
    "Their object was to undermine the constitutional order. On <DATE_TIME> the "
    "applicants again appealed. They were taken into police custody. The court acquitted "
    "them."
)


@pytest.fixture(scope="module")
def check() -> PosCheck:
    c = PosCheck()
    c.load()
    return c


@pytest.mark.parametrize(
    "span, replacement, refused",
    [
        ("commenced", "initial", True),  # VERB -> ADJ
        ("as", "reason", True),  # ADP -> NOUN
        ("constitutional", "system", True),  # ADJ -> NOUN
        ("again", "subsequent", True),  # ADV -> NOUN/ADJ in place
        ("commenced", "began", False),
        ("custody", "detention", False),
        ("acquitted", "found guilty", False),
        ("again", "later", False),
        ("Convention", "treaty", False),
        ("reasonable time", "fair period", False),  # several tokens: not checked
    ],
)
def test_word_class(check: PosCheck, span: str, replacement: str, refused: bool) -> None:
    i = TEXT.index(f" {span}") + 1
    why = check.reason(TEXT, i, i + len(span), replacement)
    assert (why == "changes the word class") is refused, (span, replacement, why)
    assert check.reason(TEXT, i, i + len(span), "[REDACTED]") is None


def test_the_check_and_the_candidates_share_one_pipeline(check: PosCheck) -> None:
    from presidio_delink.candidates.verify import Tagger, pipeline

    tagger = Tagger()
    tagger.tags(["The court acquitted them."])
    assert check._shared() is tagger._shared()  # noqa: SLF001 - one load a process
    with pytest.raises(Exception, match="the part-of-speech check needs the spaCy model"):
        pipeline("no_such_model_xyz", "the part-of-speech check")

"""The ``sentences`` rewrite mode with a real model (the embedded SmolLM2): structure, not
wording. Slow (a model call per sentence)."""

from __future__ import annotations

import pytest

from presidio_delink import NgramIndex
from presidio_delink.linkage import analyze
from presidio_delink.llm.embedded import EmbeddedRewriter
from presidio_delink.pipeline import Delinker

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def engine(smollm2_engine: EmbeddedRewriter) -> EmbeddedRewriter:
    return smollm2_engine


def test_sentences_mode_with_smollm2(
    engine: EmbeddedRewriter, sample_index: NgramIndex, sample_deid: list[tuple[str, str]]
) -> None:
    text = sample_deid[0][1]
    start = text.index("THE FACTS")  # runs of common words: the procedure's are names
    text = text[start : text.index(".", start + 600) + 1]
    calls = engine.usage.calls
    res = Delinker(sample_index, k=2, rewriter=engine, rewrite="sentences", passes=1).delink(text)
    assert res.text is not None and not res.failed
    assert not analyze(sample_index, res.text, k=2).linkable
    assert engine.usage.calls > calls and res.llm_calls >= 1
    assert any(k.startswith("sentence") for k in res.refusals) or any(
        a.method == "sentence" for a in res.audit
    )
    for a in res.audit:
        assert a.method in ("sentence", "candidate", "generalised", "redacted")
        if a.method == "sentence":
            assert a.source == "llm" and a.replacement != "[REDACTED]"


def test_engine_continues_a_started_answer_up_to_a_stop(engine: EmbeddedRewriter) -> None:
    messages = [
        {"role": "system", "content": "Copy the sentence."},
        {"role": "user", "content": "The judge ordered that they be placed in custody."},
    ]
    started = "The judge ordered that they be"
    words, stopped = engine.continue_sentence(messages, started, [" custody"], 24, [])
    assert not words.startswith(started)  # the continuation only
    assert " custody" not in words and len(words.split()) <= 20
    # a banned word is never written first
    again, _ = engine.continue_sentence(messages, started, [" custody"], 24, ["placed"])
    assert not again.strip().casefold().startswith("placed")
    # with no stop string met, it says so
    _, met = engine.continue_sentence(messages, started, ["zzzq"], 4, [])
    assert met is False
    assert isinstance(stopped, bool)

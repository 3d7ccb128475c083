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

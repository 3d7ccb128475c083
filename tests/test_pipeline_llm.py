"""The whole pipeline with the real embedded SmolLM2, directly and through the `ollama`
client against an Ollama-compatible server on 127.0.0.1.  Structure, not wording."""

from __future__ import annotations

import json

import pytest
from ollama_compat_server import OllamaCompatServer

from presidio_delink import NgramIndex
from presidio_delink.linkage import analyze
from presidio_delink.llm import make_rewriter
from presidio_delink.llm.embedded import EmbeddedRewriter
from presidio_delink.pipeline import Delinker

pytestmark = pytest.mark.slow
MODEL = "smollm2:135m"


@pytest.fixture(scope="module")
def engine(smollm2_engine: EmbeddedRewriter) -> EmbeddedRewriter:
    return smollm2_engine


def short_doc(sample_deid) -> str:  # type: ignore[no-untyped-def]
    text = sample_deid[0][1]
    # long enough that some span is left to the LLM after the deterministic generalisations
    return text[: text.index(".", 1200) + 1]


def check_result(index: NgramIndex, res) -> None:  # type: ignore[no-untyped-def]
    rec = json.loads(json.dumps(res.to_json()))
    assert rec["linkable_after"] is False and rec["failed"] is False
    assert isinstance(rec["text"], str) and rec["text"]
    assert not analyze(index, rec["text"], k=2).linkable
    first = res.first_report
    assert first is not None and first.linkable
    for a in rec["audit"]:
        assert a["method"] in ("llm", "generalised", "redacted")
        assert a["replacement"] and a["original"]
    assert rec["llm_calls"] >= 1


def test_embedded_pipeline(engine: EmbeddedRewriter, sample_index: NgramIndex, sample_deid) -> None:  # type: ignore[no-untyped-def]
    res = Delinker(sample_index, k=2, rewrite="generate", rewriter=engine, passes=1).delink(short_doc(sample_deid))
    check_result(sample_index, res)


def test_ollama_client_pipeline(engine: EmbeddedRewriter, sample_index: NgramIndex,
                                sample_deid, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    with OllamaCompatServer(engine, model=MODEL) as server:
        assert server.url.startswith("http://127.0.0.1:")
        monkeypatch.setenv("OLLAMA_HOST", server.url)
        rw = make_rewriter(f"ollama:{MODEL}")
        res = Delinker(sample_index, k=2, rewrite="generate", rewriter=rw, passes=1).delink(short_doc(sample_deid))
        check_result(sample_index, res)
        paths = {r["path"] if isinstance(r, dict) else r for r in server.requests}
        assert any("/api/chat" in str(p) for p in paths)

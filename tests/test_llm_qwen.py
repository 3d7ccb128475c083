"""The default embedded model, Qwen2.5-Coder-1.5B-Instruct, assembled from its packages.

Marked ``slow`` (about a minute on 2 cores: assembly once, loading, one request). Structure,
not wording: keys among the spans, each value a list of 1..2 candidate strings.
"""

from __future__ import annotations

import os

import pytest

from presidio_delink.errors import ConfigError
from presidio_delink.llm.embedded import (
    QWEN_FILE,
    QWEN_SHA256,
    QWEN_SIZE,
    EmbeddedRewriter,
    packaged_gguf_path,
)
from presidio_delink.llm.prompt import CANDIDATES, mark

pytest.importorskip("xllamacpp")
pytestmark = pytest.mark.slow


def test_qwen_default_model_rewrites() -> None:
    try:
        path = packaged_gguf_path("qwen")
    except ConfigError as exc:
        if os.environ.get("CI"):
            raise  # CI installs the embedded extra: its absence is a failure there
        pytest.skip(f"Qwen packages unavailable: {exc}")
    assert path.name == QWEN_FILE and path.stat().st_size == QWEN_SIZE
    assert (path.parent / (QWEN_FILE + ".verified")).read_text().startswith(QWEN_SHA256)
    rw = EmbeddedRewriter(path, timeout=600)
    try:
        text = "The applicants were deported to Kilkenny after the hearing."
        spans = ["deported", "Kilkenny"]
        marked = mark(text, [(text.index(s), text.index(s) + len(s)) for s in spans])
        answer = rw.rewrite(marked, spans)
        assert answer and set(answer) <= set(spans)
        for value in answer.values():
            assert isinstance(value, list) and 1 <= len(value) <= CANDIDATES
            assert all(isinstance(v, str) and v.strip() for v in value)
    finally:
        rw.close()

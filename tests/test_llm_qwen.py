"""The packaged Qwen2.5-Coder models (1.5B, the default, and 0.5B), assembled from their
packages.

Marked ``slow`` (about a minute each on 2 cores: assembly once, loading, one request).
Structure, not wording: keys among the spans, each value one replacement string, the
tokens counted.
"""

from __future__ import annotations

import os

import pytest

from presidio_delink.errors import ConfigError
from presidio_delink.io import sha256_file
from presidio_delink.llm.embedded import CHUNKED, EmbeddedRewriter, packaged_gguf_path
from presidio_delink.llm.prompt import mark

pytest.importorskip("xllamacpp")
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", ["qwen", "qwen0.5b"])
def test_qwen_packaged_model_rewrites(name: str) -> None:
    model = CHUNKED[name]
    try:
        path = packaged_gguf_path(name)
    except ConfigError as exc:
        if os.environ.get("CI"):
            raise  # CI installs the embedded extra: its absence is a failure there
        pytest.skip(f"{name} packages unavailable: {exc}")
    assert path.name == model.file and path.stat().st_size == model.size
    assert (path.parent / (model.file + ".verified")).read_text().startswith(model.sha256)
    if name == "qwen0.5b":
        assert sha256_file(path) == model.sha256  # 491 MB: cheap enough to hash here
    rw = EmbeddedRewriter(path, timeout=600)
    try:
        text = "The applicants were deported to Kilkenny after the hearing."
        spans = ["deported", "Kilkenny"]
        marked = mark(text, [(text.index(s), text.index(s) + len(s)) for s in spans])
        answer = rw.rewrite(marked, spans)
        assert answer and set(answer) <= set(spans)
        for value in answer.values():
            assert isinstance(value, str) and value.strip()
        prompt, cached, generated, calls = rw.usage.snapshot()
        assert calls == 1 and prompt > 100 and 0 < generated < 60 and cached <= prompt
    finally:
        rw.close()

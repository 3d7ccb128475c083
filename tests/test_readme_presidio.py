"""The Presidio snippets of docs/presidio.md, run verbatim (analyzer, YAML, anonymizer) with the real
spaCy model; the anonymizer outputs pass the linkage check and no placeholder is glued to
another or sits inside a word."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from presidio_delink import NgramIndex
from presidio_delink.linkage import analyze

DOCS = Path(__file__).resolve().parent.parent / "docs"
PRESIDIO = DOCS / "presidio.md"
LIBRARY = DOCS / "library.md"
PLACEHOLDER = re.compile(r"\[REDACTED\]|<[A-Z_]+>")


def section(title: str, path: Path = PRESIDIO) -> str:
    text = path.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def blocks(title: str, lang: str, path: Path = PRESIDIO) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", section(title, path), flags=re.S)


def glued(text: str) -> list[str]:
    """Placeholders touching a word character or another placeholder."""
    bad = []
    for m in PLACEHOLDER.finditer(text):
        before = text[m.start() - 1 : m.start()]
        after = text[m.end() : m.end() + 1]
        if before.isalnum() or after.isalnum() or before in "]>" and before or after in "[<" and after:
            bad.append(text[max(0, m.start() - 20) : m.end() + 20])
    return bad


@pytest.fixture
def readme_dir(tmp_path: Path, sample_index: NgramIndex, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "my-index").symlink_to(sample_index.directory, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def short(text: str, chars: int = 1500) -> str:
    """The text up to the first paragraph end after ``chars`` (fewer LLM calls)."""
    cut = text.find("\n", chars)
    return text if cut < 0 else text[:cut]


def test_readme_has_the_snippets() -> None:
    assert len(blocks("In Presidio's analyzer", "python")) == 1
    assert len(blocks("In Presidio's analyzer", "yaml")) == 1
    assert len(blocks("In Presidio's anonymizer", "python")) == 2


def test_analyzer_and_yaml_snippets(readme_dir: Path, sample_deid, sample_index) -> None:  # type: ignore[no-untyped-def]
    from presidio_analyzer.recognizer_registry import RecognizerRegistryProvider

    import presidio_delink.presidio  # noqa: F401  (docs/presidio.md says: import it first)

    text = sample_deid[0][1]
    ns: dict[str, object] = {"text": text}
    exec(blocks("In Presidio's analyzer", "python")[0], ns)
    results = ns["results"]
    linkage = [r for r in results if r.entity_type == "LINKABLE_NGRAM"]  # type: ignore[attr-defined]
    assert linkage and any(r.entity_type != "LINKABLE_NGRAM" for r in results)  # type: ignore[attr-defined]
    for r in linkage:  # explanations without return_decision_process=True
        assert r.analysis_explanation is not None
        assert "document" in r.analysis_explanation.textual_explanation
        meta = r.recognition_metadata
        assert {"df", "groups", "n", "arity", "views", "partners", "explanation"} <= set(meta)
        assert 1 <= meta["df"] < 2
    yaml_text = blocks("In Presidio's analyzer", "yaml")[0]
    conf = readme_dir / "recognizers.yaml"
    conf.write_text(yaml_text.replace("/path/to/my-index", str(readme_dir / "my-index")))
    registry = RecognizerRegistryProvider(conf_file=str(conf)).create_recognizer_registry()
    (rec,) = [r for r in registry.recognizers if r.name == "LinkageRiskRecognizer"]
    assert (rec.k, rec.arity) == (2, 1)
    assert rec.analyze(text, ["LINKABLE_NGRAM"])


def _rewriter_or_skip() -> None:
    from presidio_delink.llm import make_rewriter

    try:
        make_rewriter("embedded")
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"embedded model unavailable: {exc}")


@pytest.mark.slow
def test_anonymizer_snippets(readme_dir: Path, sample_deid, sample_index) -> None:  # type: ignore[no-untyped-def]
    _rewriter_or_skip()
    text = short(sample_deid[0][1])
    texts = [text, short(sample_deid[1][1], 800)]
    ns: dict[str, object] = {"text": text, "texts": texts}
    exec(blocks("In Presidio's analyzer", "python")[0], ns)
    engine_snippet, own_snippet = blocks("In Presidio's anonymizer", "python")

    exec(engine_snippet, ns)
    out, outs = ns["out"], ns["outs"]
    for o in [out, *outs]:  # type: ignore[list-item]
        assert not analyze(sample_index, o.text, k=2).linkable
        assert not glued(o.text), glued(o.text)
        for item in o.items:
            assert o.text[item.start : item.end] == item.text
        pii = [i for i in o.items if i.entity_type != "LINKABLE_NGRAM"]
        assert pii and all(o.text[i.start : i.end] == f"<{i.entity_type}>" for i in pii)

    exec(own_snippet, ns)
    out = ns["out"]
    # One call is one pass (as docs/presidio.md says): every N-gram flagged in its input is broken;
    # a rewrite may create a new rare one, which the next pass (DelinkEngine, Delinker) fixes.
    before = {f.key for f in analyze(sample_index, str(ns["text"]), k=2).flagged}
    after = {f.key for f in analyze(sample_index, out.text, k=2).flagged}  # type: ignore[attr-defined]
    assert before and not (before & after)
    assert not glued(out.text), glued(out.text)  # type: ignore[attr-defined]


def test_make_analyzer_logs_no_warnings(caplog: pytest.LogCaptureFixture, recwarn) -> None:  # type: ignore[no-untyped-def]
    from presidio_delink.presidio.engines import make_analyzer

    with caplog.at_level(logging.WARNING):
        analyzer = make_analyzer()
        analyzer.analyze("Mr John Smith went to the Hilton in Paris on 3 May 2001.", language="en")
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert [str(w.message) for w in recwarn] == []


def test_library_snippet_runs(tmp_path: Path, sample_docs, sample_deid,  # type: ignore[no-untyped-def]
                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The first snippet of docs/library.md as written, given its two inputs (``docs``, a text)."""
    monkeypatch.chdir(tmp_path)
    text = LIBRARY.read_text(encoding="utf-8")
    code = re.findall(r"```python\n(.*?)```", text, flags=re.S)[0]
    ns: dict[str, object] = {"docs": sample_docs, "deidentified_text": short(sample_deid[0][1])}
    exec(code, ns)
    assert ns["report"].linkable  # type: ignore[attr-defined]


@pytest.mark.slow
def test_pipeline_snippet_runs(readme_dir: Path, sample_deid, sample_index) -> None:  # type: ignore[no-untyped-def]
    """The pipeline snippet as written (``embedded`` is SmolLM2 in the tests: seconds)."""
    _rewriter_or_skip()
    ns: dict[str, object] = {"text": short(sample_deid[0][1], 400)}
    exec(blocks("The pipeline", "python", LIBRARY)[0], ns)
    res = ns["result"]
    assert res.text is not None and not analyze(sample_index, res.text, k=2).linkable  # type: ignore[attr-defined]

"""The Presidio recognizer: registry, ad hoc, YAML, beside the standard recognizers."""

from __future__ import annotations

from pathlib import Path

import pytest
from presidio_analyzer import AnalyzerEngine, EntityRecognizer, RecognizerRegistry
from presidio_analyzer.recognizer_registry import RecognizerRegistryProvider
from presidio_anonymizer import AnonymizerEngine
from presidio_anonymizer.entities import OperatorConfig

from presidio_delink import NgramIndex
from presidio_delink.errors import ConfigError
from presidio_delink.linkage import analyze
from presidio_delink.presidio import ENTITY, LinkageRiskRecognizer


def spans(results) -> set[tuple[int, int]]:  # type: ignore[no-untyped-def]
    return {(r.start, r.end) for r in results if r.entity_type == ENTITY}


def expected(index: NgramIndex, text: str, k: int = 2, arity: int = 1) -> set[tuple[int, int]]:
    return {(a, b) for a, b, _ in analyze(index, text, k=k, arity=arity).spans()}


def test_registry(analyzer: AnalyzerEngine, sample_index: NgramIndex, sample_deid) -> None:  # type: ignore[no-untyped-def]
    text = sample_deid[1][1]
    registry = RecognizerRegistry()
    registry.add_recognizer(LinkageRiskRecognizer(sample_index, k=2))
    engine = AnalyzerEngine(nlp_engine=analyzer.nlp_engine, registry=registry,
                            supported_languages=["en"])
    res = engine.analyze(text, language="en", return_decision_process=True)
    # Presidio drops a result contained in another of the same type (a phrase across
    # punctuation of a crossing view contains shorter flagged ones).
    direct = EntityRecognizer.remove_duplicates(
        LinkageRiskRecognizer(sample_index, k=2).analyze(text, [ENTITY]))
    assert spans(res) == spans(direct) != set()
    assert spans(res) <= expected(sample_index, text)
    r = next(r for r in res if r.entity_type == ENTITY)
    meta = r.recognition_metadata
    assert meta["df"] == 1 and meta["arity"] == 1 and meta["n"] >= 1 and meta["partners"] == []
    assert meta["groups"] == 1 and meta["views"]
    view = meta["views"][0]
    if view in ("folded", "fine"):
        assert meta["ngram"] == " ".join(sample_index.words_of(text[r.start : r.end], view))
    assert r.score == 1.0
    assert "document" in r.analysis_explanation.textual_explanation


def test_ad_hoc_beside_standard_recognizers(analyzer: AnalyzerEngine, sample_index: NgramIndex,
                                            sample_docs) -> None:  # type: ignore[no-untyped-def]
    text = sample_docs[2][1][:3000]
    rec = LinkageRiskRecognizer(sample_index, k=3, arity=2)
    res = analyzer.analyze(text, language="en", ad_hoc_recognizers=[rec])
    types = {r.entity_type for r in res}
    assert ENTITY in types and types & {"PERSON", "DATE_TIME", "LOCATION", "NRP"}
    # Presidio drops same-type results contained in another one.
    direct = EntityRecognizer.remove_duplicates(rec.analyze(text, [ENTITY]))
    assert spans(res) == spans(direct) and spans(direct) <= expected(sample_index, text, 3, 2)
    # only our entity when asked for it
    only = analyzer.analyze(text, language="en", entities=[ENTITY], ad_hoc_recognizers=[rec])
    assert {r.entity_type for r in only} == {ENTITY}


def test_yaml_predefined_with_parameters(analyzer: AnalyzerEngine, sample_index: NgramIndex,
                                         sample_deid, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    conf = tmp_path / "recognizers.yaml"
    conf.write_text(
        "supported_languages: [en]\n"
        "global_regex_flags: 26\n"
        "recognizers:\n"
        "  - name: LinkageRiskRecognizer\n"
        "    type: predefined\n"
        f"    index_path: {sample_index.directory}\n"
        "    k: 4\n"
        "    arity: 2\n"
        "    max_n: 5\n"
        "  - name: EmailRecognizer\n"
        "    type: predefined\n"
    )
    registry = RecognizerRegistryProvider(conf_file=str(conf)).create_recognizer_registry()
    ours = [r for r in registry.recognizers if isinstance(r, LinkageRiskRecognizer)]
    assert len(ours) == 1 and (ours[0].k, ours[0].arity, ours[0].max_n) == (4, 2, 5)
    engine = AnalyzerEngine(nlp_engine=analyzer.nlp_engine, registry=registry,
                            supported_languages=["en"])
    text = sample_deid[0][1]
    res = engine.analyze(text, language="en")
    direct = EntityRecognizer.remove_duplicates(ours[0].analyze(text, [ENTITY]))
    want = {(a, b) for a, b, _ in analyze(sample_index, text, k=4, arity=2, max_n=5).spans()}
    assert spans(res) == spans(direct) != set() and spans(direct) <= want


def test_on_presidio_redacted_text(analyzer: AnalyzerEngine, sample_index: NgramIndex,
                                   sample_docs) -> None:  # type: ignore[no-untyped-def]
    text = sample_docs[3][1][:2500]
    pii = analyzer.analyze(text, language="en")
    redacted = AnonymizerEngine().anonymize(
        text, pii, operators={"DEFAULT": OperatorConfig("replace")}
    ).text
    assert "<PERSON>" in redacted or "<DATE_TIME>" in redacted
    rec = LinkageRiskRecognizer(sample_index, k=2)
    res = analyzer.analyze(redacted, language="en", entities=[ENTITY], ad_hoc_recognizers=[rec])
    assert res
    for r in res:
        piece = redacted[r.start : r.end]
        assert "<" not in piece and ">" not in piece, piece


def test_bad_arguments(sample_index: NgramIndex) -> None:
    with pytest.raises(ConfigError):
        LinkageRiskRecognizer()
    with pytest.raises(ConfigError):
        LinkageRiskRecognizer(sample_index, k=1)
    with pytest.raises(ConfigError):
        LinkageRiskRecognizer(sample_index, arity=5)


def test_scores_rise_as_df_falls(sample_index: NgramIndex, sample_deid) -> None:  # type: ignore[no-untyped-def]
    rec = LinkageRiskRecognizer(sample_index, k=5)
    res = rec.analyze(sample_deid[0][1], [ENTITY])
    by_df: dict[int, set[float]] = {}
    for r in res:
        by_df.setdefault(r.recognition_metadata["df"], set()).add(r.score)
    dfs = sorted(by_df)
    assert len(dfs) >= 2
    for a, b in zip(dfs, dfs[1:], strict=False):
        assert min(by_df[a]) > max(by_df[b])

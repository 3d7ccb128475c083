"""DelinkEngine, resolve_overlaps and the batching delink operator."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from presidio_analyzer import AnalyzerEngine, RecognizerResult
from presidio_anonymizer import AnonymizerEngine
from presidio_anonymizer.entities import OperatorConfig

from presidio_delink import NgramIndex
from presidio_delink.cli import main
from presidio_delink.edits import passage_groups
from presidio_delink.linkage import analyze
from presidio_delink.pipeline import Delinker
from presidio_delink.presidio import (
    ENTITY,
    DelinkEngine,
    DelinkOperator,
    LinkageRiskRecognizer,
    resolve_overlaps,
)

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
PII_PLACEHOLDER = re.compile(r"<[A-Z_]+>")


def _kept_relative(span: str, answer: str) -> str:
    """``answer``, after the span's relative word where the span opens a relative clause
    (the loop refuses an answer that drops it: "which zoba", not "zoba")."""
    first = span.split()[0] if span.split() else ""
    keep = first.lower() in {"whose", "which", "who", "whom", "where"}
    return f"{first} {answer}" if keep else answer


class Counting:
    """Rewrites every span to an innocuous phrase; counts requests."""

    name = "counting"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def rewrite(self, context: str, spans: list[str]) -> dict[str, str]:
        self.calls.append(list(spans))
        return {s: _kept_relative(s, "some matter") for s in spans}


class Varied(Counting):
    """Rewrites each span to a word of its own (the loop refuses a word that another
    rewrite of the same sentence already used); counts requests."""


    # made-up words, all distinct: no span's answer repeats another's
    WORDS = tuple(f"zo{x}{y}" for x in "bcdfghjklmnpqrstvwxz" for y in "aeiou")

    def __init__(self) -> None:
        super().__init__()
        self.given: list[str] = []

    def rewrite(self, context: str, spans: list[str]) -> dict[str, str]:
        self.calls.append(list(spans))
        out = {}
        for s in spans:
            word = self.WORDS[len(self.given) % len(self.WORDS)]
            self.given.append(word)
            out[s] = _kept_relative(s, word)
        return out


def assert_engine_output(index: NgramIndex, out, k: int = 2, arity: int = 1) -> None:  # type: ignore[no-untyped-def]
    assert not analyze(index, out.text, k=k, arity=arity).linkable
    for item in out.items:
        assert out.text[item.start : item.end] == item.text
    pii = [i for i in out.items if i.entity_type != ENTITY]
    # PII placeholders intact: every one in the text is an item, and vice versa
    assert sorted((m.start(), m.end()) for m in PII_PLACEHOLDER.finditer(out.text)) == sorted(
        (i.start, i.end) for i in pii
    )
    assert all(i.text == f"<{i.entity_type}>" for i in pii)


@pytest.mark.parametrize("llm", [False, True])
def test_engine_on_the_samples(analyzer: AnalyzerEngine, sample_index: NgramIndex, sample_deid,
                               llm: bool) -> None:  # type: ignore[no-untyped-def]
    rw = Counting() if llm else None
    engine = DelinkEngine(analyzer, AnonymizerEngine(), sample_index, k=2, arity=1, rewrite="generate", rewriter=rw)
    outs = engine.anonymize_list([t for _, t in sample_deid], batch_size=2)
    assert len(outs) == len(sample_deid)
    for out in outs:
        assert_engine_output(sample_index, out)
        assert any(i.entity_type == ENTITY for i in out.items)
        assert any(i.entity_type != ENTITY for i in out.items)
    if rw is not None:
        assert rw.calls and any("some matter" in o.text for o in outs)
    else:  # redaction only: the same text as the pipeline's
        d = Delinker(sample_index, k=2, arity=1, analyzer=analyzer)
        assert [o.text for o in outs] == [d.delink(t, i).text for i, t in sample_deid]


def test_engine_arity_2(analyzer: AnalyzerEngine, sample_index: NgramIndex, sample_deid) -> None:  # type: ignore[no-untyped-def]
    engine = DelinkEngine(analyzer, AnonymizerEngine(), sample_index, k=3, arity=2,
                          rewrite="generate", rewriter=Counting())
    out = engine.anonymize(sample_deid[2][1][:4000])
    assert_engine_output(sample_index, out, k=3, arity=2)


def test_operator_plans_one_request_per_sentence(sample_index: NgramIndex, sample_deid) -> None:  # type: ignore[no-untyped-def]
    text = sample_deid[1][1][:5000]
    results = resolve_overlaps(LinkageRiskRecognizer(sample_index, k=2).analyze(text, [ENTITY]),
                               text)
    spans = [(r.start, r.end) for r in results]
    assert len(spans) > 3
    anonymizer = AnonymizerEngine()
    anonymizer.add_anonymizer(DelinkOperator)
    rw = Varied()
    out = anonymizer.anonymize(text, results, operators={  # type: ignore[arg-type]
        ENTITY: OperatorConfig("delink", {"rewriter": rw, "document": text, "results": results})})
    # one request per passage; a second one only for the spans refused in the first (the
    # same span text twice in a sentence gets one answer, refused the second time)
    n = len(passage_groups(text, spans))
    assert n <= len(rw.calls) < len(spans)
    first = sum(len(c) for c in rw.calls[:n])
    assert len(rw.given) - first == sum(len(c) for c in rw.calls[n:]) <= len(spans) - n
    # (case-blind: a rewrite of a sentence's first word is written with a capital)
    low, text_low = out.text.lower(), text.lower()
    assert sum(low.count(w) - text_low.count(w) for w in set(rw.given)) == len(spans)
    # without results: one request per span
    rw2 = Counting()
    anonymizer.anonymize(text, results, operators={  # type: ignore[arg-type]
        ENTITY: OperatorConfig("delink", {"rewriter": rw2, "document": text})})
    assert len(rw2.calls) == len(spans)


def test_resolve_overlaps_pii_wins() -> None:
    text = "He was newly appointed at Acme Corp 52 § 1) in Smithsonville today."
    def at(s: str) -> tuple[int, int]:
        a = text.index(s)
        return a, a + len(s)
    org, town = at("Acme Corp"), at("Smith")  # a PII span inside a word
    link1, link2, link3 = at("newly appointed at Acme"), at("Corp 52 § 1"), at("in Smithsonville")
    results = [
        RecognizerResult("ORGANIZATION", *org, 0.85),
        RecognizerResult("PERSON", *town, 0.6),
        RecognizerResult(ENTITY, *link1, 1.0),
        RecognizerResult(ENTITY, *link2, 1.0),
        RecognizerResult(ENTITY, *at("appointed at"), 0.9),
        RecognizerResult(ENTITY, *link3, 1.0),
    ]
    out = resolve_overlaps(results, text)
    got = [(r.entity_type, text[r.start : r.end]) for r in out]
    assert got == [
        (ENTITY, "newly appointed at"),
        ("ORGANIZATION", "Acme Corp"),
        (ENTITY, "52 § 1"),
        (ENTITY, "in"),
        ("PERSON", "Smithsonville"),  # PII inside a word: widened to the word
    ]
    for a, b in zip(out, out[1:], strict=False):
        assert a.end <= b.start
    anonymizer = AnonymizerEngine()
    anonymizer.add_anonymizer(DelinkOperator)
    red = anonymizer.anonymize(text, out, operators={ENTITY: OperatorConfig("delink")})  # type: ignore[arg-type]
    assert red.text == (
        "He was [REDACTED] <ORGANIZATION> [REDACTED]) [REDACTED] <PERSON> today."
    )


def test_cli_check_and_redact_pii_log_no_warnings(tmp_path: Path,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    runner = CliRunner()
    idx = tmp_path / "idx"
    assert runner.invoke(main, ["index", "build", str(SAMPLES / "collection.jsonl"), "-o",
                                str(idx), "--no-progress"]).exit_code == 0
    with caplog.at_level(logging.WARNING), _no_warnings():
        r1 = runner.invoke(main, ["check", "--index", str(idx), "-k", "2",
                                  str(SAMPLES / "deidentified.jsonl")])
        r2 = runner.invoke(main, ["delink", "--index", str(idx), "-k", "2", "--llm", "none",
                                  "--redact-pii", "--no-progress", "-o", str(tmp_path / "o.jsonl"),
                                  str(SAMPLES / "deidentified.jsonl")])
    assert r1.exit_code == 1 and r2.exit_code == 3, (r1.output, r2.output)  # 3: audit
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


class _no_warnings:
    def __enter__(self) -> None:
        import warnings

        self._cm = warnings.catch_warnings(record=True)
        self.caught = self._cm.__enter__()
        warnings.simplefilter("always")

    def __exit__(self, *exc: object) -> None:
        self._cm.__exit__(*exc)
        assert [str(w.message) for w in self.caught] == []


def test_explanations_and_linked_documents(analyzer: AnalyzerEngine, sample_index: NgramIndex,
                                           sample_deid) -> None:  # type: ignore[no-untyped-def]
    doc_id, text = sample_deid[0]
    rec = LinkageRiskRecognizer(sample_index, k=2, explain_docs=True)
    res = [r for r in analyzer.analyze(text, language="en", ad_hoc_recognizers=[rec])
           if r.entity_type == ENTITY]
    assert res
    for r in res:  # kept although return_decision_process is False
        assert r.analysis_explanation is not None
        assert r.recognition_metadata["linked_docs"]
        assert "links to" in r.analysis_explanation.textual_explanation
    assert any(doc_id in r.recognition_metadata["linked_docs"] for r in res)
    plain = LinkageRiskRecognizer(sample_index, k=2).analyze(text, [ENTITY])
    assert all("linked_docs" not in r.recognition_metadata for r in plain)


def test_report_shows_df_next_to_each_span(sample_index: NgramIndex, sample_deid) -> None:  # type: ignore[no-untyped-def]
    from presidio_delink.report import render

    res = Delinker(sample_index, k=2).delink(sample_deid[0][1], sample_deid[0][0])
    page = render([res])
    assert page.count('<sup class="df">df=1</sup>') >= 1
    assert page.count("<mark class=\"flag\"") == page.count('<sup class="df">')

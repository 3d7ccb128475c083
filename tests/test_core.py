"""One delink loop behind `Delinker`, `DelinkEngine` and the `delink` operator: the same
texts from each entry point, the operator's plans kept per rewriter and thread-safe."""

from __future__ import annotations

import gc
import hashlib
import threading
import weakref

import pytest
from presidio_analyzer import AnalyzerEngine
from presidio_anonymizer import AnonymizerEngine
from presidio_anonymizer.entities import OperatorConfig

from presidio_delink import NgramIndex
from presidio_delink.edits import passage_groups
from presidio_delink.errors import ConfigError
from presidio_delink.linkage import analyze
from presidio_delink.pipeline import Delinker
from presidio_delink.presidio import (
    ENTITY,
    DelinkEngine,
    DelinkOperator,
    LinkageRiskRecognizer,
    resolve_overlaps,
)

WORDS = ["matter", "point", "issue", "question", "aspect", "detail", "element"]


class Varied:
    """A deterministic rewriter whose answers depend on the request (context and spans),
    some of them unusable (an echo, an empty answer): what a real LLM does, repeatably."""

    def __init__(self, name: str = "varied") -> None:
        self.name = name
        self.calls: list[tuple[str, list[str]]] = []
        self._lock = threading.Lock()

    def rewrite(self, context: str, spans: list[str]) -> dict[str, str]:
        with self._lock:
            self.calls.append((context, list(spans)))
        out = {}
        for s in spans:
            h = int(hashlib.sha256((context + "\x00" + s).encode()).hexdigest(), 16)
            if h % 7 == 0:
                out[s] = s  # an echo: refused
            elif h % 7 == 1:
                continue  # no answer
            else:
                out[s] = f"some {WORDS[h % len(WORDS)]}"
        return out


def group_of(index: NgramIndex, doc_id: str) -> str:
    return dict(zip(index.doc_ids, index.doc_groups, strict=True))[doc_id]


@pytest.mark.parametrize("llm", [False, True])
def test_engine_and_pipeline_give_the_same_text(
    analyzer: AnalyzerEngine, sample_index: NgramIndex, sample_deid, llm: bool  # type: ignore[no-untyped-def]
) -> None:
    d = Delinker(sample_index, k=2, analyzer=analyzer, rewrite="generate", rewriter=Varied() if llm else None)
    e = DelinkEngine(analyzer, AnonymizerEngine(), sample_index, k=2,
                     rewrite="generate", rewriter=Varied() if llm else None)
    for doc_id, text in sample_deid:
        res = d.delink(text, doc_id)
        out = e.anonymize(text)
        assert res.text is not None and out.text == res.text
        assert not analyze(sample_index, out.text, k=2).linkable
        for item in out.items:
            assert out.text[item.start : item.end] == item.text
        # one item per edit mark, the PII ones with their placeholder
        delink_items = [(i.start, i.end) for i in out.items if i.entity_type == ENTITY]
        assert delink_items == [(a, b) for a, b, _ in res.marks]
        assert all(i.text == f"<{i.entity_type}>" for i in out.items if i.entity_type != ENTITY)
    if llm:
        assert d.rewriter is not None and e.rewriter is not None
        assert [c for c in d.rewriter.inner.calls] == [c for c in e.rewriter.inner.calls]  # type: ignore[attr-defined]


def test_engine_and_pipeline_agree_under_protect(
    analyzer: AnalyzerEngine, sample_index: NgramIndex, sample_deid  # type: ignore[no-untyped-def]
) -> None:
    d = Delinker(sample_index, k=2, analyzer=analyzer, rewrite="generate", rewriter=Varied(), protect="containment")
    e = DelinkEngine(analyzer, AnonymizerEngine(), sample_index, k=2, rewrite="generate", rewriter=Varied(),
                     protect="containment")
    plain = Delinker(sample_index, k=2, analyzer=analyzer, rewrite="generate", rewriter=Varied())
    cut = 0
    for doc_id, text in sample_deid[:3]:
        g = group_of(sample_index, doc_id)
        res = d.delink(text, doc_id, group=g)
        assert res.text is not None and e.anonymize(text, group=g).text == res.text
        assert not analyze(sample_index, res.text, k=2).linkable
        cut += sum(a.reason == "containment chain" for a in res.audit)
        # without a group nothing is protected: the plain loop's text
        assert d.delink(text, doc_id).text == plain.delink(text, doc_id).text
    assert cut > 0  # protection did act
    with pytest.raises(ConfigError, match="protect"):
        Delinker(sample_index, protect="semantic")


def test_engine_does_not_read_the_recognizer(
    analyzer: AnalyzerEngine, sample_index: NgramIndex, sample_deid, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    e = DelinkEngine(analyzer, AnonymizerEngine(), sample_index, k=2)

    def boom(*_a: object, **_k: object) -> None:
        raise AssertionError("the engine must check with the index, not the recognizer")

    monkeypatch.setattr(e.recognizer, "analyze", boom)
    out = e.anonymize(sample_deid[0][1])
    assert not analyze(sample_index, out.text, k=2).linkable


def _results(index: NgramIndex, text: str) -> list:  # type: ignore[type-arg]
    return resolve_overlaps(LinkageRiskRecognizer(index, k=2).analyze(text, [ENTITY]), text)


def test_operator_plans_are_per_rewriter_and_thread_safe(
    sample_index: NgramIndex, sample_deid  # type: ignore[no-untyped-def]
) -> None:
    texts = [t[:3000] for _, t in sample_deid]
    results = [_results(sample_index, t) for t in texts]
    per_doc = [len(passage_groups(t, [(r.start, r.end) for r in rs]))
               for t, rs in zip(texts, results, strict=True)]

    class Tagged:
        def __init__(self, tag: str) -> None:
            self.name, self.tag, self.calls = tag, tag, 0
            self._lock = threading.Lock()

        def rewrite(self, context: str, spans: list[str]) -> dict[str, str]:
            with self._lock:
                self.calls += 1
            return {s: f"the {self.tag} matter" for s in spans}

    rewriters = [Tagged(t) for t in ("alpha", "beta", "gamma", "delta")]
    errors: list[BaseException] = []
    outs: dict[str, list[str]] = {r.tag: [] for r in rewriters}
    rounds = 6  # more documents x rewriters than plans kept: eviction under contention

    def work(rw: Tagged) -> None:
        anonymizer = AnonymizerEngine()
        anonymizer.add_anonymizer(DelinkOperator)
        try:
            for _ in range(rounds):
                for text, rs in zip(texts, results, strict=True):
                    out = anonymizer.anonymize(text, rs, operators={  # type: ignore[arg-type]
                        ENTITY: OperatorConfig("delink", {"rewriter": rw, "document": text,
                                                          "results": rs})})
                    outs[rw.tag].append(out.text)
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(rw,)) for rw in rewriters]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for rw in rewriters:
        others = [r.tag for r in rewriters if r is not rw]
        assert all(f"the {rw.tag} matter" in o for o in outs[rw.tag])
        assert not any(f"the {t} matter" in o for o in outs[rw.tag] for t in others)
        # planned once per document per round at most: no request per span
        assert sum(per_doc) <= rw.calls <= rounds * sum(per_doc)

    # Plans never keep a rewriter alive.
    ref = weakref.ref(rewriters[0])
    del rewriters, threads, work
    gc.collect()
    assert ref() is None
    assert not hasattr(DelinkOperator, "_plans")


@pytest.mark.slow
def test_engine_equals_pipeline_with_the_embedded_smollm2(
    analyzer: AnalyzerEngine, sample_index: NgramIndex, sample_deid, smollm2  # type: ignore[no-untyped-def]
) -> None:
    """The real model, one instance per entry point (no shared answers): the same texts,
    with and without containment protection, on the first 2 sample TAB documents (their
    first paragraphs: the fake-model test above covers three whole ones; this one checks that a
    real model's answers reach both entry points alike).

    Every request and answer is recorded: both entry points must send the same requests
    and get the same answers.  The call timeout is generous: a call that times out (a
    machine at load 12 made one document differ, measured on the first one-loop commit)
    is the machine's timing, not the loop, and is reported as such."""
    from presidio_delink.llm.embedded import EmbeddedRewriter

    def head(text: str, n: int = 900) -> str:
        cut = text.find(".", n)
        return text if cut < 0 else text[: cut + 1]

    class Recorded:
        def __init__(self, inner: EmbeddedRewriter) -> None:
            self.inner, self.name, self.log = inner, inner.name, []  # type: ignore[var-annotated]

        def rewrite(self, context: str, spans: list[str]) -> dict[str, object]:
            try:
                out = self.inner.rewrite(context, spans)
            except Exception as exc:
                self.log.append((context, tuple(spans), f"{type(exc).__name__}: {exc}"))
                raise
            self.log.append((context, tuple(spans), repr(sorted(out.items()))))
            return out  # type: ignore[return-value]

    # one thread each: the default follows the machine's load when each loads, and the
    # thread count can change a near-tied answer
    rws = [Recorded(EmbeddedRewriter(smollm2, timeout=1800, n_threads=1)) for _ in range(2)]
    try:
        for protect in (None, "containment"):
            d = Delinker(sample_index, k=2, analyzer=analyzer, rewrite="generate", rewriter=rws[0], protect=protect)
            e = DelinkEngine(analyzer, AnonymizerEngine(), sample_index, k=2, rewrite="generate", rewriter=rws[1],
                             protect=protect)
            llm = 0
            for doc_id, text in sample_deid[:2]:
                g = group_of(sample_index, doc_id)
                res = d.delink(head(text), doc_id, group=g)
                assert res.text is not None
                out = e.anonymize(head(text), group=g).text
                errors = [x[2] for rw in rws for x in rw.log if "Error" in x[2].split(":")[0]]
                if errors:
                    pytest.fail(f"{doc_id}: an LLM call failed (timing, not the loop): {errors}")
                assert rws[0].log == rws[1].log, doc_id  # the same requests, the same answers
                assert out == res.text, doc_id
                llm += res.words_rewritten
            assert llm > 0  # the model's answers were used, not only redactions
    finally:
        for rw in rws:
            rw.inner.close()


def test_resolve_overlaps_keeps_paragraphs_apart() -> None:
    from presidio_analyzer import RecognizerResult

    text = "by the institutions.\n\nThe applicants said so and so."

    def at(s: str) -> tuple[int, int]:
        a = text.index(s)
        return a, a + len(s)

    res = [RecognizerResult(ENTITY, *at("institutions"), 1.0),
           RecognizerResult(ENTITY, *at("The applicants"), 1.0),
           RecognizerResult(ENTITY, *at("said"), 1.0), RecognizerResult(ENTITY, *at("so and"), 1.0)]
    got = [text[r.start : r.end] for r in resolve_overlaps(res, text)]
    # a paragraph break is never swallowed; spans apart by spaces merge, as Presidio would
    assert got == ["institutions", "The applicants said so and"]


def test_headings_and_paragraph_edges_cost_more() -> None:
    from presidio_delink.edits import choose_tokens, structure_costs
    from presidio_delink.text import Tokenizer

    text = "under Article 5 § 1).\n\nTHE FACTS\n\nIn the present case the court held."
    tokens = Tokenizer(break_on_punctuation=False).tokens(text)
    words = [t.word for t in tokens]
    a = tokens[words.index("1")].start
    b = tokens[words.index("in")].end
    plain = choose_tokens([(a, b)], tokens)
    assert [words[i] for i in plain] == ["facts"]  # by word cost alone: the heading word
    costs = structure_costs(text, tokens)
    assert costs[words.index("facts")] > costs[words.index("1")] > costs[words.index("present")]
    chosen = choose_tokens([(a, b)], tokens, costs)
    assert [words[i] for i in chosen] in (["1"], ["in"]) and len(chosen) == len(plain)


def test_look_alikes_are_written_back_in_the_documents_script() -> None:
    from presidio_delink.confusables import latin_text

    text = "PR\u0406SON by the \u0458ury\u2019s verdict, \u0430 lawyer-\u0441lient; \u041c\u043e\u0441\u043a\u0432\u0430"
    out, n = latin_text(text)
    assert out == "PRISON by the jury\u2019s verdict, a lawyer-client; \u041c\u043e\u0441\u043a\u0432\u0430"
    assert n == 4 and len(out) == len(text)  # one character for one; a Cyrillic word stays
    assert latin_text("\u041c\u043e\u0441\u043a\u0432\u0430 \u0438 \u043a\u043e\u0442 x") == (
        "\u041c\u043e\u0441\u043a\u0432\u0430 \u0438 \u043a\u043e\u0442 x", 0)  # not a Latin text


def test_audit_entries_name_the_flagged_ngram_and_their_offsets(
    sample_index: NgramIndex, sample_deid  # type: ignore[no-untyped-def]
) -> None:
    """Every edit's entry names a flagged N-gram it breaks (never "" with df 0), its view
    and groups, and its offsets in the text of its pass."""
    from presidio_delink.edits import REDACTED

    class Half:  # answers half the spans, refuses the rest: both kinds of edit
        name = "half"

        def rewrite(self, context: str, spans: list[str]) -> dict[str, str]:
            return {s: "some matter" for s in spans[::2]}

    d = Delinker(sample_index, k=2, rewrite="generate", rewriter=Half())  # type: ignore[arg-type]
    seen = 0
    for doc_id, text in sample_deid[:3]:
        res = d.delink(text, doc_id)
        assert res.text is not None
        passes: dict[int, str] = {1: res.input_text}
        for a in res.audit:
            seen += 1
            assert a.ngram and a.df >= 1 and a.groups >= 1 and a.view in sample_index.views, a
            assert a.end > a.start
            if a.pass_no == 1:
                assert passes[1][a.start : a.end] == a.original
            assert a.replacement == REDACTED or a.method != "redacted"
    assert seen > 10


def test_report_says_groups_where_groups_decide(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from presidio_delink.report import render

    docs = [
        ("judgment", "The applicant was detained in Sirnak prison for nine days.", "case-1"),
        ("hudoc", "The applicant was detained in Sirnak prison for nine days.", "case-1"),
        ("other", "The applicant was detained in a prison.", "case-2"),
        ("third", "An applicant was released.", "case-3"),
    ]
    grouped = NgramIndex.build(docs, tmp_path / "g")
    res = Delinker(grouped, k=2).delink("He was detained in Sirnak prison for nine days.", "q")
    page = render([res])
    assert '<sup class="df">groups=1 (df=2)</sup>' in page  # two documents, one case
    assert "groups=1 (df=2)</td>" in page  # the audit table too
    assert "the number of groups, which k counts" in page
    plain = NgramIndex.build([(d, t) for d, t, _ in docs[1:]], tmp_path / "p")
    page = render([Delinker(plain, k=2).delink("He was detained in Sirnak prison.", "q")])
    assert '<sup class="df">df=1</sup>' in page and "groups=1 (" not in page.split("</p>", 1)[1]

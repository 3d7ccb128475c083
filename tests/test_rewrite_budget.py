"""The token budget of the pipeline's LLM calls, with fake rewriters: one answer per span,
a second request only for the spans whose answer was refused, tokens per document."""

from __future__ import annotations

from typing import Any

import pytest

from presidio_delink import NgramIndex
from presidio_delink.linkage import analyze
from presidio_delink.llm.base import TokenUsage
from presidio_delink.llm.prompt import MARK_CLOSE, MARK_OPEN, REFUSED_SEP, render_messages
from presidio_delink.pipeline import Delinker


def _delinker(index: NgramIndex, **kw: Any) -> Delinker:
    """A delinker whose vocabulary check is off: the fakes answer with synthetic words
    the collection never uses (that check has tests of its own)."""
    d = Delinker(index, **kw)
    d.known_word = None
    return d


def _word(request: int, i: int) -> str:
    """A fresh lower-case word per request and span (no digit: digits are refused)."""
    return "zq" + "".join(chr(97 + int(d)) for d in f"{request}{i:02d}")


class Budgeted:
    """Answers each span with one replacement: the span itself (refused) for every third
    span of a first request, else a fresh word; counts 100 prompt tokens (60 cached) and 2
    generated tokens per span, as an engine would report them."""

    name = "budgeted"

    def __init__(self) -> None:
        self.usage = TokenUsage()
        self.requests: list[tuple[str, list[str]]] = []

    def rewrite(self, context: str, spans: list[str]) -> dict[str, str]:
        self.requests.append((context, list(spans)))
        self.usage.add(100, 2 * len(spans), 60)
        retry = REFUSED_SEP in context
        out = {}
        for i, span in enumerate(spans):
            bad = not retry and i % 3 == 0
            out[span] = span if bad else _word(len(self.requests), i)
        return out


def test_second_request_only_for_refused_spans(sample_index: NgramIndex, sample_deid) -> None:  # type: ignore[no-untyped-def]
    rw = Budgeted()
    res = _delinker(sample_index, k=2, rewrite="generate", rewriter=rw, passes=1).delink(sample_deid[0][1])
    assert not res.failed and not analyze(sample_index, res.text or "", k=2).linkable
    first = [(c, s) for c, s in rw.requests if REFUSED_SEP not in c]
    again = [(c, s) for c, s in rw.requests if REFUSED_SEP in c]
    refused = {s for _c, spans in first for i, s in enumerate(spans) if i % 3 == 0}
    asked_again = [s for _c, spans in again for s in spans]
    # the refused spans are asked about again, once each, with the refused answer; a span
    # is asked again only after a refusal (a fresh word can still be refused: it may make
    # a word pair the sentence has)
    assert refused <= set(asked_again)
    assert len(asked_again) <= sum(res.refusals.values()) and len(again) <= len(first)
    for context, spans in again:
        note = context.split(REFUSED_SEP, 1)[1]
        assert all(f'"{s}"' in note for s in spans)
        request = render_messages(context, spans)[-1]["content"]
        assert "Already refused" in request and REFUSED_SEP not in request
    # the second answers pass: no span of the first round stays refused for repeating itself
    assert not [a for a in res.audit if a.reason == "repeats the span"]
    assert res.refusals.get("repeats the span", 0) >= len(refused)
    # tokens of every call of this document, as the engine counted them
    n_calls = len(rw.requests)
    n_spans = sum(len(s) for _c, s in rw.requests)
    assert res.llm_calls == n_calls
    assert (res.prompt_tokens, res.cached_tokens, res.generated_tokens) == (
        100 * n_calls,
        60 * n_calls,
        2 * n_spans,
    )
    record = res.to_json()
    assert record["prompt_tokens"] == res.prompt_tokens and record["refusals"] == res.refusals


def test_no_second_request_when_every_answer_passes(
    sample_index: NgramIndex, sample_deid  # type: ignore[no-untyped-def]
) -> None:
    class Good(Budgeted):
        def rewrite(self, context: str, spans: list[str]) -> dict[str, str]:
            self.requests.append((context, list(spans)))
            self.usage.add(50, len(spans))
            # a relative clause's run keeps its relative word ("whose object" -> "whose zq..")
            keep = {"whose", "which", "who", "whom", "where"}
            return {
                s: (s.split()[0] + " " if s.split()[0].lower() in keep else "")
                + _word(len(self.requests), i)
                for i, s in enumerate(spans)
            }

    rw = Good()
    res = _delinker(sample_index, k=2, rewrite="generate", rewriter=rw, passes=1).delink(sample_deid[0][1])
    assert rw.requests and all(REFUSED_SEP not in c for c, _s in rw.requests)
    # each span is asked about once, in one request per passage
    spans = [s for _c, s in rw.requests for s in s]
    assert len(rw.requests) < len(spans)
    assert res.generated_tokens == len(spans) and res.cached_tokens == 0


@pytest.mark.parametrize("answer", ["4", "more than 100000000000", "two"])
def test_a_number_for_a_number_is_never_applied(
    sample_index: NgramIndex, sample_deid, answer: str  # type: ignore[no-untyped-def]
) -> None:
    class Numbers(Budgeted):
        def rewrite(self, context: str, spans: list[str]) -> dict[str, str]:
            return {s: answer for s in spans}

    res = _delinker(sample_index, k=2, rewrite="generate", rewriter=Numbers(), passes=1).delink(sample_deid[0][1])
    assert not [a for a in res.audit if a.method == "llm"]
    assert answer not in (res.text or "").split()


def test_ner_labels_give_typed_generalisations(sample_index: NgramIndex, sample_deid) -> None:  # type: ignore[no-untyped-def]
    text = sample_deid[0][1]
    span = "Convention institutions"  # flagged in the first sample, after "the"
    i = text.index(span)

    def run(entity: tuple[int, int]) -> dict[str, str]:
        d = _delinker(sample_index, k=2, rewrite="generate", rewriter=Budgeted(), passes=1,
                     ner=lambda t: [(*entity, "GPE")] if t == text else [])
        res = d.delink(text)
        assert not res.failed
        return {a.original: a.replacement for a in res.audit if a.method == "generalised"}

    # a span that is a whole entity gets its type: after "the", with no noun following,
    # the type's noun (before a noun it would be the adjective, "local")
    assert run((i, i + len(span))).get(span) == "country"
    # a span inside a longer entity does not
    assert span not in run((i - 4, i + len(span)))


def test_a_second_answer_may_not_copy_a_span_of_the_first_request(
    sample_index: NgramIndex, sample_deid  # type: ignore[no-untyped-def]
) -> None:
    """The second request holds only the refused spans; its answers are still checked
    against every span of the first request (seen with SmolLM2: "before the" answered
    "institutions", the neighbouring span, in both requests)."""

    class Copier(Budgeted):
        def rewrite(self, context: str, spans: list[str]) -> dict[str, str]:
            self.requests.append((context, list(spans)))
            first = REFUSED_SEP not in context
            out = {s: _word(len(self.requests), i) for i, s in enumerate(spans)}
            one = [s for s in spans if s.isalpha() and len(s) > 4]  # one uncommon word
            if first and not hasattr(self, "copier") and one and len(spans) > 1:
                self.neighbour = one[0]
                self.copier = next(s for s in spans if s != one[0])
                out[self.copier] = self.neighbour  # copies another span: refused
            elif not first and getattr(self, "copier", None) in spans:
                out[self.copier] = self.neighbour  # the same copy, asked again
            return out

    rw = Copier()
    res = _delinker(sample_index, k=2, rewrite="generate", rewriter=rw, passes=1).delink(sample_deid[0][1])
    assert hasattr(rw, "copier") and any(REFUSED_SEP in c for c, _s in rw.requests)
    copied = [a for a in res.audit if a.original == rw.copier and a.replacement == rw.neighbour]
    assert not copied, copied
    assert res.refusals.get("copies another span", 0) >= 2


def test_a_later_pass_asks_about_the_inputs_words_not_its_own_answer(
    sample_index: NgramIndex, sample_deid  # type: ignore[no-untyped-def]
) -> None:
    """A pass-1 rewrite that still links is asked about again as the input's words, with
    that rewrite named as refused: asked about its own answer, a model drifted into another
    word class ("commenced" -> "began" -> "initial")."""
    rare = "psychiatrist"  # one document of the sample collection uses it
    text = sample_deid[0][1]
    assert rare not in text

    class Linking(Budgeted):
        def rewrite(self, context: str, spans: list[str]) -> dict[str, str]:
            self.requests.append((context, list(spans)))
            out = {s: _word(len(self.requests), i) for i, s in enumerate(spans)}
            word = next((s for s in spans if s.isalpha() and s.islower()), None)
            if not hasattr(self, "first") and word is not None:
                self.first = word
                out[word] = rare  # accepted, but found in one document only: pass 2
            return out

    rw = Linking()
    res = _delinker(sample_index, k=2, rewrite="generate", rewriter=rw, passes=2).delink(text)
    assert not res.failed and rare not in (res.text or "")
    again = [a for a in res.audit if a.pass_no == 2 and a.original == rare]
    assert len(again) == 1 and again[0].method == "llm", again
    # the request of pass 2 names the input's word, marked in its passage, and the
    # earlier answer as refused; never the earlier answer as the span
    later = [(c, s) for c, s in rw.requests if rw.first in s and rare in c]
    assert later, rw.requests
    context, spans = later[0]
    passage, note = context.split(REFUSED_SEP, 1)
    assert rare not in passage and rare in note and rare not in spans
    assert MARK_OPEN + rw.first + MARK_CLOSE in passage
    request = render_messages(context, spans)[-1]["content"]
    assert "Already refused" in request and rare in request

"""The ``sentences`` rewrite mode: the fact check, the word alignment, the prompt, and the
loop with fake sentence writers (a good rewrite, a changed fact, an echo)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from presidio_delink import NgramIndex
from presidio_delink.core import DelinkLoop
from presidio_delink.errors import ConfigError
from presidio_delink.linkage import analyze
from presidio_delink.llm.base import CircuitBreaker, writes_sentences
from presidio_delink.llm.cache import CachedRewriter
from presidio_delink.llm.pool import RewriterPool
from presidio_delink.llm.prompt import MARK_OPEN, unmark
from presidio_delink.pipeline import Delinker
from presidio_delink.results import DelinkResult
from presidio_delink.sentences import changed_span, changes, check_facts
from presidio_delink.sentences.prompt import parse_answer, render_messages
from presidio_delink.settings import REWRITE_MODES, DelinkSettings, rewrite_for

S = "The applicants did not receive the 3 letters sent by [REDACTED] under Article 5 § 3."


def span_of(sentence: str, words: str) -> tuple[int, int]:
    at = sentence.index(words)
    return at, at + len(words)


# -- the fact check ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("The applicants did not get the 4 letters sent by [REDACTED] under Article 5 § 3.",
         "drops a number"),
        ("The applicants did get the 3 letters sent by [REDACTED] under Article 5 § 3.",
         "drops a negation"),
        ("The applicant did not get the 3 letters sent by [REDACTED] under Article 5 § 3.",
         "drops or changes words"),
        ("The applicants did not get the 3 letters sent by Smith under Article 5 § 3.",
         "drops a placeholder"),
        ("The applicants did not get the 3 letters Smith sent by [REDACTED] under Article "
         "5 § 3.", "adds a name"),
        ("The applicants did not get the 3 letters sent twice by [REDACTED] under Article "
         "5 § 3 in 1999.", "adds a number or placeholder"),
        ("The applicants did not receive the 3 letters sent by [REDACTED] under Article 5 § 3.",
         "keeps a phrase to replace"),
    ],
)
def test_fact_check_refuses(answer: str, reason: str) -> None:
    verdict = check_facts(S, answer, [span_of(S, "receive")])
    assert verdict.reason == reason
    assert not verdict.ok


def test_fact_check_accepts_a_reordered_sentence() -> None:
    got = "Under Article 5 § 3, the 3 letters sent by [REDACTED] were not given to the applicants."
    assert check_facts(S, got, [span_of(S, "did not receive")]).ok
    # a capitalised first word is a name unless the document writes it in lower case
    got = "Regarding Article 5 § 3, the 3 letters sent by [REDACTED] never reached the applicants."
    assert check_facts(S, got, [span_of(S, "did not receive")], {"regarding"}).ok
    assert check_facts(S, got, [span_of(S, "did not receive")]).reason == "adds a name"


def test_fact_check_keeps_negations_of_the_spans_out_of_the_count() -> None:
    # "without" inside the named span may go; one outside may not
    s = "He left without notice and did not return."
    assert check_facts(s, "He departed abruptly and did not return.",
                       [span_of(s, "left without notice")]).ok
    assert check_facts(s, "He departed abruptly and did return.",
                       [span_of(s, "left without notice")]).reason == "drops a negation"


# -- the alignment ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("X Y Z.", "X Z."),
        ("X Z.", "X Y Z."),
        ("a b", "c a b"),
        ("a b", "a b c"),
        ("In the police station the applicants denied the charges.",
         "At the police station, the applicants rejected the charges."),
    ],
)
def test_changed_span_rebuilds_the_new_sentence(old: str, new: str) -> None:
    got = changed_span(old, new)
    assert got is not None
    a, b, text = got
    assert old[:a] + text + old[b:] == new
    assert changes(old, new)


def test_alignment_records_the_changed_words() -> None:
    got = changes("The judge ordered their detention.", "The judge ordered that they be held.")
    assert [(c.original, c.new) for c in got] == [("their detention", "that they be held")]
    assert got[0].n_words == 2
    assert changed_span("a b.", "a b.") is None


# -- the prompt ------------------------------------------------------------------------------


def test_prompt_prefix_is_the_same_for_every_sentence() -> None:
    a = render_messages("Before.", "One sentence here.", [(4, 12)])
    b = render_messages("", "Another one.", [(8, 11)], refused="Another.", why="drops words")
    assert a[:-1] == b[:-1]  # system prompt and examples: a cached prefix
    assert f"Sentence: Another {MARK_OPEN}one" in b[-1]["content"]
    assert "Replace: [\"one\"]" in b[-1]["content"] and "refused" in b[-1]["content"]
    assert "Context" not in b[-1]["content"]


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("Rewritten sentence: \"The court ruled.\"\nExplanation: ...", "The court ruled."),
        ("\n\n<sentence>The court ruled.</sentence>", "The court ruled."),
        ("Replacements: ruled = decided\nSentence: The court decided.", "The court decided."),
        ("Replacements: ruled = decided\nThe court decided.", "The court decided."),
        ("   ", None),
        (None, None),
    ],
)
def test_parse_answer(raw: object, want: str | None) -> None:
    assert parse_answer(raw) == want


# -- settings and backends --------------------------------------------------------------------


def test_sentences_is_a_mode() -> None:
    assert "sentences" in REWRITE_MODES
    assert DelinkSettings(rewrite="sentences").rewrite == "sentences"
    assert rewrite_for("sentences", True) == "sentences"
    with pytest.raises(ConfigError):
        DelinkSettings(rewrite="sentence")


def asked(messages: list[dict[str, str]]) -> tuple[str, list[str]]:
    """The sentence (marks removed) and the phrases to replace of a sentence request, as
    a fake writer reads them back from the prompt."""
    request = messages[-1]["content"]
    sentence = unmark(re.search(r"^Sentence: (.*)$", request, re.M).group(1))  # type: ignore[union-attr]
    spans = json.loads(re.search(r"^Replace: (.*)$", request, re.M).group(1))  # type: ignore[union-attr]
    return sentence, spans


class _Writer:
    """A fake LLM: ``rewrite`` answers nothing; ``complete_sentence`` answers with
    ``answer(sentence, spans, refused)`` (the request read back from the prompt)."""

    name = "fake-writer"

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.requests: list[str] = []

    def rewrite(self, context: str, spans: list[str]) -> dict[str, Any]:
        return {}

    def complete_sentence(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        request = messages[-1]["content"]
        self.requests.append(request)
        sentence, spans = asked(messages)
        new = self.answer(sentence, spans, "was refused" in request)
        return f"Replacements: {'; '.join(spans)}\nSentence: {new}"


def test_wrappers_pass_sentences_through() -> None:
    w = _Writer(lambda s, spans, again: s)
    assert writes_sentences(CachedRewriter(CircuitBreaker(w)))
    assert writes_sentences(RewriterPool([w, w]))

    class JsonOnly:
        name = "json"

        def rewrite(self, context: str, spans: list[str]) -> dict[str, Any]:
            return {}

    assert not writes_sentences(CircuitBreaker(JsonOnly()))  # type: ignore[arg-type]
    cached = CachedRewriter(CircuitBreaker(w))
    msgs = render_messages("", "A b.", [(2, 3)])
    assert cached.complete_sentence(msgs, 20) == cached.complete_sentence(msgs, 20)
    assert len(w.requests) == 1 and cached.hits == 1


# -- the loop with fake writers ------------------------------------------------------------------


def replaced(sentence: str, spans: list[str], by: str = "that matter") -> str:
    for s in spans:
        sentence = sentence.replace(s, by, 1)
    return sentence


def short_doc(sample_deid: list[tuple[str, str]]) -> str:
    """The sample's facts, whose flagged runs are mostly common words: the runs of its
    procedure are words of names, which are redacted, not restated (``name_word_in``)."""
    text = sample_deid[0][1]
    return text[text.index("THE FACTS") :]


def test_a_good_rewrite_is_accepted_and_audited(
    sample_index: NgramIndex, sample_deid: list[tuple[str, str]], vouch_all: None
) -> None:
    w = _Writer(lambda s, spans, again: replaced(s, spans))
    res = Delinker(sample_index, k=2, rewriter=w, rewrite="sentences").delink(
        short_doc(sample_deid)
    )
    assert res.text is not None and not res.failed
    assert not analyze(sample_index, res.text, k=2).linkable  # the phrase guarantee
    sent = [a for a in res.audit if a.method == "sentence"]
    assert sent and w.requests
    assert all(a.source == "llm" for a in sent)
    assert any(a.replacement == "that matter" for a in sent)
    assert "that matter" in res.text
    assert res.words_rewritten >= sum(a.n_words for a in sent)
    # every audited block sits in its pass's text where the original words were
    for a in sent:
        if a.pass_no == 1:
            assert res.input_text[a.start : a.end] == a.original


def _drop_first(s: str, spans: list[str], again: bool) -> str:
    """An answer that rewrites the named phrases but drops the sentence's first long word
    outside them (an unnamed adverb or verb)."""
    out = replaced(s, spans)
    for m in re.finditer(r"[a-z]{5,}", out):
        if m.group() not in " ".join(spans) and m.group() != "matter":
            return out[: m.start()] + out[m.end() :]
    return out


def test_a_dropped_unnamed_word_is_spliced_back(
    sample_index: NgramIndex, sample_deid: list[tuple[str, str]], vouch_all: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import presidio_delink.sentences.rewrite as sentence_rewrite

    monkeypatch.setattr(sentence_rewrite, "ATTEMPTS", 2)  # the second request is tested too
    # every answer drops a word outside the spans: refused, asked again with the refused
    # words named, refused again; then spliced: the named phrases' rewrites kept, the
    # dropped word restored, the checks run again and pass
    w = _Writer(_drop_first)
    text = short_doc(sample_deid)
    res = Delinker(sample_index, k=2, rewriter=w, rewrite="sentences").delink(text)
    assert res.text is not None
    assert res.refusals.get("sentence: drops or changes words", 0) >= 2
    again = [r for r in w.requests if "was refused" in r]
    assert again and all("drops or changes words:" in r for r in again)
    assert len(again) * 2 == len(w.requests)  # each sentence asked twice
    assert res.refusals.get("sentence: accepted spliced", 0) >= 1
    sent = [a for a in res.audit if a.method == "sentence"]
    # only the named phrases changed: no audited block drops a word
    assert sent and all(a.replacement == "that matter" for a in sent)
    assert "that matter" in res.text
    assert not analyze(sample_index, res.text, k=2).linkable  # the final check


def test_without_splice_a_changed_fact_falls_back(sample_index: NgramIndex) -> None:
    from presidio_delink.sentences.rewrite import Job, SentenceStep

    shown = "He was subsequently detained at the Ankara police station on <DATE_TIME>."
    job = Job(0, len(shown), shown, (span_of(shown, "Ankara police station"),))
    w = _Writer(lambda s, spans, again: "He was detained at the local facility on <DATE_TIME>.")
    res = DelinkResult(id="x", text="", input_text=shown, passes=0, linkable_after=False)
    off = SentenceStep(w, sample_index.tokenizer, splice=False, attempts=2)
    assert off.write(shown, [job], [], res) == {}
    assert res.refusals["sentence: drops or changes words"] == 2
    on = SentenceStep(w, sample_index.tokenizer, attempts=2)
    got = on.write(shown, [job], [], res)
    assert got == {(0, len(shown)):
                   "He was subsequently detained at the local facility on <DATE_TIME>."}
    assert res.refusals["sentence: accepted spliced"] == 1


def test_splice_keeps_only_the_named_phrases_changes() -> None:
    from presidio_delink.sentences.align import splice

    s = "The remedy was not adequate, as the Ankara State Security Court subsequently held."
    spans = (span_of(s, "Ankara State Security Court"),)
    got = splice(s, "The remedy was insufficient, as the trial court subsequently held.", spans)
    assert got.sentence == "The remedy was not adequate, as the trial court subsequently held."
    assert check_facts(s, got.sentence, spans).ok
    # a block that also changes a content word outside the phrase is restored whole
    assert splice(s, "The remedy was insufficient, as the trial court held.",
                  spans).sentence is None
    # a kept block may reach over function words next to the phrase
    got = splice(s, "The remedy was not adequate, as a court subsequently held.", spans)
    assert got.sentence == "The remedy was not adequate, as a court subsequently held."
    # nothing changed in the named phrase: nothing to splice
    assert splice(s, "The remedy was inadequate, as the Ankara State Security Court "
                     "subsequently held.", spans).sentence is None


def test_a_duplicate_after_splicing_is_refused() -> None:
    from presidio_delink.sentences.align import splice

    s = "He was subsequently detained at the Ankara police station."
    spans = (span_of(s, "Ankara police station"),)
    # "subsequently" moved into the named phrase's block: restored, it would stand twice
    got = splice(s, "He was detained at the subsequently named facility.", spans)
    assert got.sentence is None and got.reason == "repeats a word: subsequently"


def test_a_deleted_named_phrase_is_redacted_not_rewritten(sample_index: NgramIndex) -> None:
    from presidio_delink.sentences.align import splice
    from presidio_delink.sentences.rewrite import Job, SentenceStep

    shown = "The court dismissed the claim as manifestly ill-founded."
    spans = (span_of(shown, "dismissed"), span_of(shown, "manifestly ill-founded"))
    answer = "The court rejected the complaint as."
    cut = splice(shown, answer, spans)
    assert cut.sentence == "The court rejected the claim as manifestly ill-founded."
    assert cut.deleted == ("manifestly ill-founded",)
    step = SentenceStep(_Writer(lambda s, spans, again: answer), sample_index.tokenizer)
    got, why = step._spliced(shown, Job(0, len(shown), shown, spans), answer, [], ())
    assert got == "The court rejected the claim as [REDACTED]." and why == ""


def test_a_spliced_block_that_still_links_is_refused(sample_index: NgramIndex) -> None:
    from presidio_delink.sentences.rewrite import Job, SentenceStep

    shown = "He was subsequently detained at the Ankara police station."
    job = Job(0, len(shown), shown, (span_of(shown, "Ankara police station"),))
    w = _Writer(lambda s, spans, again: "He was detained at the city lockup.")

    def links(text: str, a: int, b: int, ignore: object = ()) -> list[str]:  # finds it
        return ["city lockup"] if "city lockup" in text[a:b] else []

    res = DelinkResult(id="x", text="", input_text=shown, passes=0, linkable_after=False)
    step = SentenceStep(w, sample_index.tokenizer, links, attempts=2)
    assert step.write(shown, [job], [], res) == {}
    assert res.refusals["sentence: splice refused: can still be found"] == 2
    assert "sentence: accepted spliced" not in res.refusals


def test_an_echo_is_refused_by_the_index(sample_index: NgramIndex, sample_deid) -> None:  # type: ignore[no-untyped-def]
    # the sentence back as it was: keeps the named phrases, and still links
    w = _Writer(lambda s, spans, again: s)
    text = short_doc(sample_deid)
    loop = DelinkLoop(sample_index, k=2, rewriter=w, rewrite="sentences")
    res = loop.run(text)
    assert res.text is not None
    # kept phrases are redacted in the echo (its only change): no sentence rewrite; the
    # cheap steps' answers it shows and keeps are audited as theirs
    assert not [a for a in res.audit if a.method == "sentence"]
    assert any(a.method == "candidate" for a in res.audit)
    assert res.refusals.get("sentence: keeps a phrase to replace", 0) >= 1
    assert not analyze(sample_index, res.text, k=2).linkable
    # the index check alone refuses it too
    from presidio_delink.sentences.rewrite import Job, SentenceStep

    rep = loop.check(text)
    a, b, _f = rep.spans()[0]
    from presidio_delink.edits import sentence_bounds

    sa, sb = next((x, y) for x, y in sentence_bounds(text) if x <= a < y)
    step = SentenceStep(w, sample_index.tokenizer, loop.sentence_links)
    job = Job(sa, sb, text[sa:sb], ())  # no named span: only the index can refuse it
    verdict = step.verify(text, job, text[sa:sb])
    assert verdict.reason == "can still be found" and verdict.words


def test_without_a_sentence_writer_it_is_the_candidates_mode(
    sample_index: NgramIndex, sample_deid: list[tuple[str, str]]
) -> None:
    text = short_doc(sample_deid)
    a = Delinker(sample_index, k=2, rewriter=None, rewrite="sentences").delink(text)
    b = Delinker(sample_index, k=2, rewriter=None, rewrite="candidates").delink(text)
    assert a.text == b.text


def test_strict_mode_raises_when_the_writer_fails(
    sample_index: NgramIndex, sample_deid: list[tuple[str, str]]
) -> None:
    from presidio_delink.errors import LLMError

    def fail(s: str, spans: list[str], again: bool) -> str:
        raise LLMError("down")

    text = short_doc(sample_deid)
    res = Delinker(sample_index, k=2, rewriter=_Writer(fail), rewrite="sentences").delink(text)
    assert res.text is not None and any("LLM" in w for w in res.warnings)
    with pytest.raises(LLMError):
        Delinker(sample_index, k=2, rewriter=_Writer(fail), rewrite="sentences",
                 strict=True).delink(text)


def test_result_counts_drafts() -> None:
    res = DelinkResult(id="x", text="", input_text="", passes=0, linkable_after=False)
    assert "drafted_tokens" not in res.to_json()  # no drafting: the record as without it
    res.drafted_tokens, res.accepted_tokens = 30, 7
    rec = res.to_json()
    assert rec["drafted_tokens"] == 30 and rec["accepted_tokens"] == 7


def test_kept_phrases_are_redacted_in_the_answer_and_the_job() -> None:
    from presidio_delink.sentences.rewrite import Job, _kept_redacted

    shown = "The court dismissed the claim as manifestly ill-founded."
    spans = (span_of(shown, "dismissed"), span_of(shown, "manifestly ill-founded"))
    answer = "The court rejected the claim as manifestly ill-founded."
    verdict = check_facts(shown, answer, spans)
    assert verdict.reason == "keeps a phrase to replace"
    assert verdict.words == ("manifestly ill-founded",)
    got = _kept_redacted(Job(0, len(shown), shown, spans), answer, verdict.words)
    assert got is not None
    job, new = got
    assert new == "The court rejected the claim as [REDACTED]."
    assert job.shown == "The court dismissed the claim as [REDACTED]."
    assert [job.shown[a:b] for a, b in job.spans] == ["dismissed"]
    assert check_facts(job.shown, new, job.spans).ok
    assert _kept_redacted(Job(0, len(shown), shown, spans), answer, ["absent"]) is None


def test_a_named_word_deleted_by_an_accepted_answer_is_redacted(
    sample_index: NgramIndex,
) -> None:
    from presidio_delink.sentences.align import restore_deleted
    from presidio_delink.sentences.rewrite import Job, SentenceStep

    shown = "This case was assigned to the newly composed Second Section (Rule 52 § 1)."
    spans = (span_of(shown, "newly composed"), span_of(shown, "Rule"))
    answer = "This case was assigned to the recently formed Second Section (52 § 1)."
    assert check_facts(shown, answer, spans).ok  # the fact check lets a phrase go
    back, deleted = restore_deleted(shown, answer, spans)
    assert back == "This case was assigned to the recently formed Second Section (Rule 52 § 1)."
    assert deleted == ("Rule",)
    assert restore_deleted(shown, back, spans) == (back, ())
    job = Job(0, len(shown), shown, spans)
    res = DelinkResult(id="x", text="", input_text=shown, passes=0, linkable_after=False)
    got = SentenceStep(_Writer(lambda s, sp, again: answer), sample_index.tokenizer).write(
        shown, [job], [], res)
    assert got == {(0, len(shown)): "This case was assigned to the recently formed Second "
                                    "Section ([REDACTED] 52 § 1)."}
    assert res.refusals["sentence: accepted with deleted phrases redacted"] == 1


def test_name_word_in_reads_capitals_inside_a_sentence() -> None:
    from presidio_delink.candidates.context import name_word_in

    t = "He met the Minister of Defense. Defense was cut by the minister."
    at = t.index("Defense")
    assert name_word_in(t, at, at + len("Defense"))
    assert name_word_in(t, t.index("of Def"), at + 3)  # a run holding one such word
    first = t.index("Defense was")  # a sentence's first word is not a name's
    assert not name_word_in(t, first, first + len("Defense"))
    assert not name_word_in(t, t.index("met"), t.index("met") + 3)


def test_a_word_of_a_name_is_redacted_not_restated(
    sample_index: NgramIndex, sample_deid: list[tuple[str, str]]
) -> None:
    # the sample's procedure: its flagged runs are mostly words of names ("the European
    # Commission of Human Rights", "Rule 26"); none is named to the writer, each is
    # redacted with its reason, and the rest still goes to the writer
    from presidio_delink.candidates.context import NAME_WORD, name_word_in

    text = sample_deid[0][1]
    text = text[: text.index("THE FACTS")]
    w = _Writer(lambda s, spans, again: replaced(s, spans))
    res = Delinker(sample_index, k=2, rewriter=w, rewrite="sentences", passes=1).delink(text)
    assert res.text is not None and not analyze(sample_index, res.text, k=2).linkable
    named = [a for a in res.audit if a.reason == NAME_WORD]
    assert named and all(a.replacement == "[REDACTED]" for a in named)
    assert all(name_word_in(text, a.start, a.end) for a in named)
    asked = [s for r in w.requests
             for s in json.loads(re.search(r"^Replace: (.*)$", r, re.M).group(1))]  # type: ignore[union-attr]
    assert not {a.original for a in named} & set(asked)
    assert all(not any(ch[:1].isupper() for ch in s.split()[1:]) for s in asked)


def test_a_pronoun_is_not_restated() -> None:
    from presidio_delink.candidates.context import NAME_WORD, PRONOUN, unrestatable

    t = "He complained that his cell was cold. The Remand Centre replied."
    assert unrestatable(t, 0, 2) == PRONOUN  # a sentence's first word: no name, a pronoun
    assert unrestatable(t, t.index("his"), t.index("his") + 8) == PRONOUN  # "his cell"
    assert unrestatable(t, t.index("Centre"), t.index("Centre") + 6) == NAME_WORD
    assert unrestatable(t, t.index("cold"), t.index("cold") + 4) is None
    assert unrestatable(t, t.index("that"), t.index("that") + 4) is None  # not "hat"


def test_a_run_with_a_pronoun_is_redacted_not_named(
    sample_index: NgramIndex, sample_deid: list[tuple[str, str]]
) -> None:
    from presidio_delink.candidates.context import PERSONAL_PRONOUNS, PRONOUN

    w = _Writer(_drop_first)
    res = DelinkLoop(sample_index, k=2, rewriter=w, rewrite="sentences").run(
        short_doc(sample_deid)
    )
    assert res.text is not None
    held = [a for a in res.audit if a.reason == PRONOUN]
    assert held and all(a.replacement == "[REDACTED]" for a in held)  # "their unjustified"
    asked = [s for r in w.requests
             for s in json.loads(re.search(r"^Replace: (.*)$", r, re.M).group(1))]  # type: ignore[union-attr]
    assert asked and not any(set(s.casefold().split()) & PERSONAL_PRONOUNS for s in asked)


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("He departed after the hearing, but the judge waited.", "drops a connective"),
        ("He departed before the hearing, and the judge waited.", "drops a connective"),
        ("He departed before the hearing, but then the judge waited.", None),
        ("He departed before the hearing only, but the judge waited.", "adds a connective"),
    ],
)
def test_fact_check_keeps_connectives(answer: str, reason: str | None) -> None:
    # "before" -> "after" or "but" -> "and" are small words that change what is said
    s = "He left before the hearing, but the judge waited."
    assert check_facts(s, answer, [span_of(s, "left")]).reason == reason
    t = "He left and the judge waited."
    assert check_facts(t, "He departed but the judge waited.",
                       [span_of(t, "left")]).reason == "adds a connective"

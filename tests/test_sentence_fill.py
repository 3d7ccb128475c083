"""Named phrases filled in place (``sentences/fill.py``): every other word copied, each
phrase's words read up to the words after it, refused phrases asked again then redacted."""

from __future__ import annotations

from typing import Any

from presidio_delink.edits import REDACTED
from presidio_delink.results import DelinkResult
from presidio_delink.sentences.fill import _anchor, blame, compose, fill, groups, refill
from presidio_delink.sentences.rewrite import FILL_TRIES, SENSE, Job, SentenceStep
from presidio_delink.text import Tokenizer

S = "The investigating judge ordered that they be placed in detention on remand because of " \
    "the risk of absconding."


def _spans(text: str, *phrases: str) -> list[tuple[int, int]]:
    return [(text.index(p), text.index(p) + len(p)) for p in phrases]


class _Model:
    """A fake engine: for the words before a phrase, the continuation in ``said`` (the
    first whose key ends the started answer); records every request."""

    def __init__(self, said: dict[str, list[str]]) -> None:
        self.said = {k: list(v) for k, v in said.items()}
        self.asked: list[tuple[str, list[str], list[str]]] = []

    def __call__(self, messages: list[dict[str, str]], started: str, stops: list[str],
                 max_tokens: int, avoid: list[str]) -> tuple[str, bool]:
        self.asked.append((started, stops, avoid))
        for key, answers in self.said.items():
            if started.endswith(key):
                text = answers.pop(0) if len(answers) > 1 else answers[0]
                cut = [text.index(s) for s in stops if s and s in text]
                return (text[: min(cut)], True) if cut else (text, False)
        return " " + "x " * 40, False


def test_groups_join_phrases_with_no_word_between() -> None:
    text = "He was held, detained and questioned."
    assert groups(text, _spans(text, "held", "detained")) == [(7, 21)]
    assert groups(text, _spans(text, "held", "questioned")) == [(7, 11), (26, 36)]


def test_anchor_is_two_words_or_the_end_mark() -> None:
    assert _anchor(S, S.index("placed in detention") + 19, len(S)) == " on remand"
    assert _anchor(S, len(S) - 1, len(S)) == "."
    assert _anchor("a b", 3, 3) == ""


def test_fill_copies_every_other_word_and_reads_each_phrase_to_its_anchor() -> None:
    model = _Model({" be": [" held in custody on remand because"], " of": [" flight."]})
    f = fill(model, "", S, _spans(S, "placed in detention", "absconding"))
    assert f.new == ("held in custody", "flight")
    shown, spans, answer, placed = compose(f, {0, 1})
    assert shown == S
    assert answer == S.replace("placed in detention", "held in custody").replace(
        "absconding", "flight")
    assert [answer[a:b] for a, b in placed] == ["held in custody", "flight"]
    # the phrase's first content word is banned, and the second request starts after the
    # first phrase's new words
    assert model.asked[0][2] == ["placed"]
    assert model.asked[1][0].endswith("held in custody on remand because of the risk of")


def test_words_that_cannot_be_read_leave_the_phrase_unfilled() -> None:
    for said in ([" placed in detention on remand"],   # the phrase itself
                 [" on remand"],                       # nothing
                 [" kept in a cell until the trial."],  # never came back to the anchor
                 [" " + "very " * 12 + "on remand"]):  # over the words' budget
        f = fill(_Model({" be": said, " of": [" flight."]}), "", S,
                 _spans(S, "placed in detention", "absconding"))
        assert f.new == (None, "flight"), said


def test_compose_redacts_the_parts_not_taken_in_both_texts() -> None:
    f = fill(_Model({" be": [" held on remand"], " of": [" flight."]}), "", S,
             _spans(S, "placed in detention", "absconding"))
    shown, spans, answer, placed = compose(f, {1})
    assert shown == S.replace("placed in detention", REDACTED)
    assert answer == shown.replace("absconding", "flight")
    assert [shown[a:b] for a, b in spans] == ["absconding"]
    assert [answer[a:b] for a, b in placed] == ["flight"]


def test_blame_names_the_parts_a_refusal_falls_in() -> None:
    answer = "The judge ordered that they be held in custody because of flight."
    placed = [(answer.index("held in custody"), answer.index("held in custody") + 15),
              (answer.index("flight"), answer.index("flight") + 6)]
    assert blame([0, 1], placed, answer, ("held",)) == {0}
    assert blame([0, 1], placed, answer, ("because of flight",)) == {1}
    assert blame([0, 1], placed, answer, ("ordered that",)) == set()


def test_refill_bans_the_refused_words_and_keeps_the_parts_before() -> None:
    model = _Model({" be": [" held on remand"], " of": [" flight.", " escape."]})
    f = fill(model, "", S, _spans(S, "placed in detention", "absconding"))
    g = refill(model, f, 1, ["flight"])
    assert g.new == ("held", "escape")
    assert model.asked[-1][2] == ["absconding", "flight"]
    assert model.asked[-1][0].endswith("be held on remand because of the risk of")


def _res(text: str) -> DelinkResult:
    return DelinkResult(id="x", text="", input_text=text, passes=0, linkable_after=False)


class _NoSentences:
    name = "fill-only"

    def rewrite(self, context: str, spans: list[str]) -> dict[str, Any]:
        return {}

    def complete_sentence(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        raise AssertionError("a filled sentence makes no whole-sentence request")


def test_step_asks_a_refused_phrase_again_then_redacts_it() -> None:
    text = S
    job = Job(0, len(S), S, tuple(_spans(S, "placed in detention", "absconding")),
              runs=tuple(_spans(S, "placed in detention", "absconding")))
    # "flight" and then "escape" are refused by the sense check; "held" is vouched for
    model = _Model({" be": [" held on remand"], " of": [" flight.", " escape.", " fleeing."]})

    def sense(old: str, new: str) -> bool:
        return "flight" not in new and "escape" not in new

    step = SentenceStep(_NoSentences(), Tokenizer(), sense=sense, fill=model)
    res = _res(text)
    got = step.write(text, [job], [], res)
    assert got == {(0, len(S)): S.replace("placed in detention", "held").replace(
        "absconding", "fleeing")}
    assert res.refusals[f"sentence: {SENSE}"] == 2
    assert res.llm_calls == 4  # two phrases, then two more words for the second
    # every word refused: the phrase is redacted, the other kept
    model = _Model({" be": [" held on remand"], " of": [" flight.", " escape.", " exit."]})
    step = SentenceStep(_NoSentences(), Tokenizer(), sense=lambda o, n: "held" in n, fill=model)
    res = _res(text)
    got = step.write(text, [job], [], res)
    assert got == {(0, len(S)): S.replace("placed in detention", "held").replace(
        "absconding", REDACTED)}
    assert res.refusals["sentence: accepted, filled in place, some phrases redacted"] == 1


def test_a_part_refused_for_a_small_word_is_asked_a_bounded_number_of_times() -> None:
    # "prepared" -> "finished or" adds a connective, and the model keeps saying it: after
    # FILL_TRIES requests the phrase is redacted, and with nothing rewritten left the
    # sentence is refused
    text = "The order was not prepared by the parties until <DATE_TIME>."
    job = Job(0, len(text), text, tuple(_spans(text, "prepared")))
    model = _Model({" not": [" finished or by the parties"]})
    res = _res(text)
    assert SentenceStep(_NoSentences(), Tokenizer(), fill=model).write(text, [job], [], res) == {}
    assert len(model.asked) == FILL_TRIES
    assert model.asked[-1][2] == ["prepared", "or"]
    assert res.refusals["sentence: adds a connective"] == FILL_TRIES


def test_a_named_word_in_another_form_is_no_rewrite() -> None:
    from presidio_delink.sentences.fill import reinflects

    for old, new in (("property", "properties"), ("other business", "other businesses"),
                     ("organised", "organized"), ("civilian", "civil"), ("sang", "sung"),
                     ("went", "gone")):
        assert reinflects(old, new), (old, new)
    for old, new in (("placed in detention", "held in detention"), ("commission", "committee"),
                     ("requested", "required"), ("terminated", "concluded")):
        assert not reinflects(old, new), (old, new)
    # asked once more with that form banned; a second such answer leaves it unfilled
    text = "He paid for the property in cash."
    model = _Model({" the": [" properties in cash", " house in cash"]})
    assert fill(model, "", text, _spans(text, "property")).new == ("house",)
    assert model.asked[-1][2] == ["property", "properties"]
    model = _Model({" the": [" properties in cash", " propertys in cash"]})
    assert fill(model, "", text, _spans(text, "property")).new == (None,)


def test_marks_the_model_copies_are_taken_out_and_placeholders_refused() -> None:
    text = "The commission revoked its decision."
    f = fill(_Model({" commission": [" \u27e6cancelled\u27e7 its decision"]}), "", text,
             _spans(text, "revoked"))
    assert f.new == ("cancelled",)
    f = fill(_Model({" commission": [" [REDACTED] its decision"]}), "", text,
             _spans(text, "revoked"))
    assert f.new == (None,)


def test_a_failed_call_is_counted_once_and_leaves_the_sentence_to_the_fallback() -> None:
    from presidio_delink.errors import LLMError

    def broken(*_args: Any) -> tuple[str, bool]:
        raise LLMError("engine down")

    job = Job(0, len(S), S, tuple(_spans(S, "absconding")))
    res = _res(S)
    assert SentenceStep(_NoSentences(), Tokenizer(), fill=broken).write(S, [job], [], res) == {}
    assert res.llm_calls == 1
    assert any("LLM failed" in w for w in res.warnings)


def test_a_phrase_in_quotation_marks_is_not_asked_about() -> None:
    from presidio_delink.sentences.fill import quoted

    text = 'He released the EP "\u5fae\u5149" under the label, calling it \u201ca rough result\u201d.'
    assert quoted(text, text.index("\u5fae")) and quoted(text, text.index("rough"))
    assert not quoted(text, text.index("label")) and not quoted(text, text.index("released"))
    model = _Model({" EP \"": [" \u6697\u5f71\" under"], " He": [" issued the EP"]})
    f = fill(model, "", text, _spans(text, "released", "\u5fae\u5149"))
    assert f.new == ("issued", None)
    assert all(not started.endswith('EP "') for started, _s, _a in model.asked)


def test_content_words_written_as_small_words_only_are_no_rewrite() -> None:
    text = "Smith (born 25 May) is a singer."
    f = fill(_Model({" (": [" was 25 May"]}), "", text, _spans(text, "born"))
    assert f.new == (None,)
    text = "In <DATE_TIME> he left."
    assert fill(_Model({"Sentence:": [" At <DATE_TIME>"]}), "", text, _spans(text, "In")).new \
        == ("At",)

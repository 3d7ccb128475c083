"""The sentence step asks about the clauses of a sentence that hold its named runs
(``presidio_delink.sentences.clauses``): where a sentence is cut, what a job shows, how an
answer for a part of a sentence is finished, and the loop with a fake writer."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from test_sentences import asked

from presidio_delink import NgramIndex
from presidio_delink.linkage import analyze
from presidio_delink.pipeline import Delinker
from presidio_delink.sentences.clauses import MIN_WORDS, piece
from presidio_delink.sentences.rewrite import _finished, jobs

S = ("The individuals appealed on <DATE_TIME>, arguing that the sum of compensation granted "
     "was not adequate, and that the court (in Ankara, in a hearing of the assize "
     "chamber) had erred.")


def at(text: str, words: str) -> tuple[int, int]:
    i = text.index(words)
    return i, i + len(words)


def cut(text: str, named: list[str], runs: list[str] = ()) -> str:  # type: ignore[assignment]
    a, b = piece(text, 0, len(text), [at(text, w) for w in named], [at(text, w) for w in runs])
    return text[a:b]


def test_the_clause_of_a_named_run_is_asked_about() -> None:
    assert cut(S, ["compensation"]) == (
        "arguing that the sum of compensation granted was not adequate")


def test_brackets_are_not_cut_and_the_last_clause_keeps_its_full_stop() -> None:
    got = cut(S, ["assize"])
    assert got == ("and that the court (in Ankara, in a hearing of the assize chamber) "
                   "had erred.")


def test_a_short_clause_is_widened_to_the_next() -> None:
    got = cut(S, ["appealed"])
    assert got.startswith("The individuals appealed")
    assert len(re.findall(r"\w+", got)) >= MIN_WORDS
    assert got.endswith("was not adequate")


def test_runs_from_two_clauses_take_both_and_a_near_whole_sentence_is_whole() -> None:
    assert cut(S, ["compensation", "erred"]) == (
        "arguing that the sum of compensation granted was not adequate, and that the court "
        "(in Ankara, in a hearing of the assize chamber) had erred.")
    assert cut(S, ["appealed", "erred"]) == S
    assert cut(S, []) == S


def test_no_cut_inside_a_run() -> None:
    # a run over the comma keeps the two clauses together
    got = cut(S, ["compensation"], ["adequate, and that"])
    assert "adequate, and that" in got


@dataclass(frozen=True)
class R:
    start: int
    end: int
    n_words: int = 1


def test_a_job_shows_the_clause_and_its_context_holds_the_sentence_head() -> None:
    text = "The case was heard. " + S
    named = R(*at(text, "compensation"))
    cheap = R(*at(text, "granted"))
    outside = R(*at(text, "erred"))
    answers = {(cheap.start, cheap.end): ("awarded", "candidate"),
               (outside.start, outside.end): ("was wrong", "candidate")}
    (job,) = jobs(text, [named, cheap, outside], answers)
    assert job.shown == "arguing that the sum of compensation awarded was not adequate"
    assert text[job.start : job.end] == ("arguing that the sum of compensation granted was "
                                         "not adequate")
    assert job.shown[slice(*job.spans[0])] == "compensation"
    assert job.runs == ((named.start, named.end),)
    assert job.context.endswith("The individuals appealed on <DATE_TIME>, ")
    assert job.context.startswith("The case was heard.")
    (whole,) = jobs(text, [named, cheap, outside], answers, clauses=False)
    assert text[whole.start : whole.end] == S
    assert "was wrong" in whole.shown


@pytest.mark.parametrize(
    ("answer", "shown", "want"),
    [
        # a part of a sentence: the model's full stop and capital go
        ("Claiming that the total was not adequate.",
         "arguing that the sum was not adequate", "claiming that the total was not adequate"),
        # a name the part itself opens with keeps its capital
        ("Ankara said so.", "and Ankara had said so", "Ankara said so"),
        # a whole sentence gets its end back
        ("The total was low", "The sum was low.", "The total was low."),
        (".", "the sum", None),
    ],
)
def test_finished(answer: str, shown: str, want: str | None) -> None:
    assert _finished(answer, shown) == want


class _ClauseWriter:
    """A fake LLM that restates what it is shown with the named phrases replaced, and
    records each sentence it was shown."""

    name = "fake-clauses"

    def __init__(self) -> None:
        self.shown: list[str] = []

    def rewrite(self, context: str, spans: list[str]) -> dict[str, object]:
        return {}

    def complete_sentence(self, messages: list[dict[str, str]], max_tokens: int) -> str:
        sentence, spans = asked(messages)
        self.shown.append(sentence)
        new = sentence
        for s in spans:
            new = new.replace(s, "that matter", 1)
        new = new[:1].upper() + new[1:]
        end = "" if new.endswith(".") else "."
        return f"Replacements: {'; '.join(spans)}\nSentence: {new}{end}"


def test_the_loop_writes_clauses_in_place(
    sample_index: NgramIndex, sample_deid: list[tuple[str, str]], vouch_all: None
) -> None:
    text = sample_deid[0][1]
    text = text[text.index("THE FACTS") :]
    w = _ClauseWriter()
    res = Delinker(sample_index, k=2, rewriter=w, rewrite="sentences").delink(text)
    assert res.text is not None and not res.failed
    assert not analyze(sample_index, res.text, k=2).linkable
    assert w.shown
    sent = [a for a in res.audit if a.method == "sentence"]
    assert sent
    # a part of a sentence was asked about; the writer capitalised and ended it, and in
    # the text it has neither
    part = next(x for x in w.shown if x[:1].islower())
    assert part[:1].upper() + part[1:].split()[0] not in res.text
    assert ".." not in res.text and ".." not in text

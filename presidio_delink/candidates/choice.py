"""What the chooser decides for one run (:class:`Choice`), and the choices that need no
candidate: leaving out a gloss in brackets or a modifier.

Why a module of its own: a :class:`Choice` is what the chooser hands the loop and the
audit record reads, whoever made it; and leaving words out is decided by rules and a
score of the sentence with and without them (:mod:`.drop`), not by proposing and
ranking replacements (:class:`~.chooser.CandidateChooser`, which calls these where
nothing else survived).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from presidio_delink.candidates.drop import DROP_MARGIN, droppable
from presidio_delink.candidates.score import Ask, contexts
from presidio_delink.edits import Run, dropped

__all__ = ["Accept", "Choice", "Links", "drop_ask", "drop_choice", "gloss_choice", "refuse"]


@dataclass
class Choice:
    """What was decided for one run: the chosen candidate (None: none survived)."""

    text: str | None
    source: str | None
    score: float | None
    proposed: int
    refused: dict[str, int] = field(default_factory=dict)
    #: whether the LLM may write one where none survived
    #: (:meth:`~.chooser.CandidateChooser.needs_writer`)
    writer: bool = False
    #: the survivors that link nowhere, best first, as ``(text, source, score)``: the
    #: first is the choice; the LLM chooses among up to ``options`` of them
    #: (``rewrite="choose"``, :meth:`~.chooser.CandidateChooser.choose`)
    options: list[tuple[str, str, float | None]] = field(default_factory=list)


Accept = Callable[[Run, str], "str | None"]
"""``(run, candidate) -> None`` when the candidate passes the loop's checks, else why not."""
Links = Callable[[str, int, int], bool]
"""``(new text, start, end) -> bool``: whether the replacement at ``new_text[start:end]``
still links."""


def refuse(ch: Choice, why: str, n: int) -> None:
    """Count ``n`` candidates of ``ch`` refused for ``why`` (nothing when ``n`` is 0)."""
    if n:
        ch.refused[why] = ch.refused.get(why, 0) + n


def gloss_choice(text: str, r: Run, links: Links | None) -> Choice:
    """A gloss in brackets (:func:`~.drop.gloss_span`) left out, where that links
    nowhere."""
    ch = Choice(None, None, None, 1)
    a, b, _new = dropped(text, r.start, r.end)
    if links is not None and links(text[:a] + text[b:], a, a):
        refuse(ch, "links below k", 1)
    else:
        ch.text, ch.source, ch.score = "", "generalisation", 0.0
        ch.options.append(("", "generalisation", 0.0))
    return ch


def drop_ask(
    text: str, r: Run, toks: Sequence[tuple[int, int, str]], ch: Choice
) -> Ask | None:
    """Where no candidate survived and the run is a modifier that may be left out
    (:mod:`.drop`): what to score, the next words with it, without it, and it alone
    (:func:`drop_choice`); else None."""
    i = next((j for j, (a, b, _t) in enumerate(toks) if (a, b) == (r.start, r.end)), None)
    if i is None or droppable(text, toks, i) is not None:
        return None
    ch.proposed += 1
    left, right = contexts(text, r.start, r.end)
    word = (" " if r.start > 0 and text[r.start - 1].isspace() else "") + text[r.start : r.end]
    return left, [word + right, right, word], "", False


def drop_choice(
    text: str, r: Run, scores: Sequence[float], links: Links | None, ch: Choice
) -> None:
    """The run left out, if the sentence reads as well without it (``scores``: those
    of :func:`drop_ask`) and leaving it out links nowhere."""
    with_it, without, alone = scores
    # log p(next words | left) without the word, against with it
    score = without - (with_it - alone)
    if score < -DROP_MARGIN:
        refuse(ch, "the next words read worse without it", 1)
        return
    a, b, _new = dropped(text, r.start, r.end)  # the edit the loop will apply
    if links is not None and links(text[:a] + text[b:], a, a):
        refuse(ch, "links below k", 1)
        return
    ch.options.append(("", "generalisation", round(score, 3)))

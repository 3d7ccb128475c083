"""The guarantee against a panel of independent adversaries (tests/adversaries.py): after
`delink`, no member finds a phrase of the output in fewer than k groups of the collection."""

from __future__ import annotations

import json
import re
from pathlib import Path

from adversaries import CaseAdversary, panel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presidio_delink import NgramIndex
from presidio_delink.pipeline import Delinker

SAMPLES = Path(__file__).resolve().parent.parent / "samples"

# Spellings that text models merge or split differently: diacritics, look-alike letters
# (Cyrillic а, о, і), inner hyphens and apostrophe variants, in-word punctuation, case.
WORDS = [
    "court", "the", "applicant", "applicant\u2019s", "applicant's", "non-pecuniary",
    "pecuniary", "non", "damage", "\u0130zmir", "Izmir", "izmir", "Bi\u00e7er", "Bicer",
    "Bic\u0327er", "22/2", "22.2", "3.5", "U.S.", "caf\u00e9", "cafe", "l995", "1995",
    "well-known", "known", "WELL", "Court", "\u015e\u0131rnak", "Sirnak", "7(1)", "7 \u00a7 1",
    "7.1", "7", "1",
]
# Look-alike spellings (Cyrillic \u0430, \u043e, \u0456) appear in the texts to delink: the
# attack hides a word of the output from an exact check.  (A collection that itself holds
# look-alike spellings is out of the promise for adversaries that fold them on both sides
# while others do not: see presidio_delink/views.py.)
LOOKALIKES = {"a": "\u0430", "o": "\u043e", "i": "\u0456", "c": "\u0441", "p": "\u0440"}
SEPS = [" ", " ", " ", ", ", ". ", " - ", "; ", " (", ") ", "\u2019 ", " [REDACTED] ", " <PERSON> "]
text_st = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPS)), min_size=1,
                   max_size=18).map(lambda parts: "".join(w + s for w, s in parts))


@st.composite
def disguised(draw: st.DrawFn, text: str) -> str:
    """``text`` with some Latin letters swapped for look-alikes."""
    chars = list(text)
    for i, c in enumerate(chars):
        if c in LOOKALIKES and draw(st.integers(0, 3)) == 0:
            chars[i] = LOOKALIKES[c]
    return "".join(chars)
GROUPS = st.sampled_from([None, "p1", "p2"])


def delink_all(idx: NgramIndex, texts: list[str], k: int) -> list[str]:
    d = Delinker(idx, k=k)
    outs = []
    for i, t in enumerate(texts):
        res = d.delink(t, f"q{i}")
        assert not res.failed and res.text is not None
        outs.append(res.text)
    return outs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(st.tuples(text_st, GROUPS), min_size=2, max_size=8),
       queries=st.lists(text_st.flatmap(disguised), min_size=1, max_size=3), k=st.integers(2, 3),
       use_groups=st.booleans(), data=st.data())
def test_no_panel_member_links_the_output(tmp_path_factory, docs, queries, k, use_groups, data) -> None:  # type: ignore[no-untyped-def]
    collection = [(f"d{i}", t) for i, (t, _) in enumerate(docs)]
    if use_groups:
        items = [(f"d{i}", t, g) for i, (t, g) in enumerate(docs)]
        groups = [g if g is not None else f"d{i}" for i, (_, g) in enumerate(docs)]
    else:
        items, groups = collection, None  # type: ignore[assignment]
    idx = NgramIndex.build(items, tmp_path_factory.mktemp("adv") / "i", max_n=4)
    # Queries: fresh texts and near-copies of collection documents (the usual case).
    texts = list(queries) + [data.draw(disguised(t)) for t, _ in docs[:2]]
    outs = delink_all(idx, texts, k)
    for adv in panel(max_n=4):
        found = adv.linkable(outs, collection, k, groups)  # type: ignore[attr-defined]
        assert found == [[] for _ in outs], (adv.name, found)  # type: ignore[attr-defined]


def _samples() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    def read(name: str) -> list[tuple[str, str]]:
        lines = (SAMPLES / name).read_text(encoding="utf-8").splitlines()
        return [(r["id"], r["text"]) for r in map(json.loads, lines)]

    return read("collection.jsonl"), read("deidentified.jsonl")


def test_panel_on_the_samples(tmp_path: Path) -> None:
    """Every member links the de-identified samples before (so the panel can fail) and
    none links them after; the opt-in case view closes what the case adversary finds."""
    collection, deid = _samples()
    texts = [t for _, t in deid[:3]]
    idx = NgramIndex.build(collection, tmp_path / "i")
    outs = delink_all(idx, texts, 2)
    for adv in panel():
        before = adv.linkable(texts, collection, 2)  # type: ignore[attr-defined]
        assert all(before), adv.name  # type: ignore[attr-defined]
        assert adv.linkable(outs, collection, 2) == [[], [], []], adv.name  # type: ignore[attr-defined]
    case = CaseAdversary()
    idx_case = NgramIndex.build(
        collection, tmp_path / "c", views=("folded", "folded-cross", "fine", "accent-cross", "case")
    )
    assert case.linkable(delink_all(idx_case, texts, 2), collection, 2) == [[], [], []]


def test_groups_count_people_not_documents(tmp_path: Path) -> None:
    docs = [
        ("judgment", "The applicant was detained in Sirnak prison for nine days.", "case-1"),
        ("hudoc", "The applicant was detained in Sirnak prison for nine days.", "case-1"),
        ("other", "The applicant was detained in a prison.", "case-2"),
        ("third", "An applicant was released.", "case-3"),
    ]
    text = "He was detained in Sirnak prison for nine days."
    plain = NgramIndex.build([(d, t) for d, t, _ in docs], tmp_path / "p")
    grouped = NgramIndex.build(docs, tmp_path / "g")
    assert not Delinker(plain, k=2).check(text).linkable  # df 2: passes k = 2 ...
    rep = Delinker(grouped, k=2).check(text)
    assert rep.linkable  # ... yet both documents are about one case
    assert {f.groups for f in rep.flagged} == {1} and {f.df for f in rep.flagged} == {2}
    out = delink_all(grouped, [text], 2)[0]
    for adv in panel():
        assert adv.linkable([out], [(d, t) for d, t, _ in docs], 2,  # type: ignore[attr-defined]
                            [g for _, _, g in docs]) == [[]]


# -- the product of normalisations ----------------------------------------------------------
# Each word of a text is drawn with a combination of spellings (case, diacritics, look-alike
# letters, inner hyphens and apostrophes joining it to the next word), and each gap with a
# separator (spaces, clause punctuation, a dash, a list bullet opening a line): every
# adversary of the panel reads a different product of these axes.
BASE = ["the", "applicant", "court", "jury", "lawyer", "client", "above", "mentioned",
        "damage", "case", "prison", "detained", "cafe", "izmir", "and", "of", "seriousness"]
# (No dotted capital I: lower-cased it is i + U+0307, which the panel's regex word models
# split into two words, a limit of those adversaries' tokenisers rather than a spelling.)
ACCENTS = {"e": ["\u00e9", "e\u0301"], "c": ["\u00e7"], "i": ["\u00ef"], "a": ["\u00e0"]}
JOINS = ["-", "\u2011", "'", "\u2019"]
GAPS = [" ", " ", " ", ", ", "; ", ". ", " - ", " \u2013 ", "\n- ", "\n\u2013 ", "\n\u2022 ",
        ":\n- ", " [REDACTED] "]


@st.composite
def spelled(draw: st.DrawFn, word: str, lookalikes: bool = True) -> str:
    """``word`` with any combination of case, diacritics and (unless ``lookalikes`` is
    False) look-alike letters."""
    case = draw(st.sampled_from(["lower", "title", "upper"]))
    out = []
    axes = ["plain", "plain", "accent", "lookalike"] if lookalikes else ["plain", "accent"]
    for c in word:
        axis = draw(st.sampled_from(axes))
        if axis == "accent" and c in ACCENTS:
            c = draw(st.sampled_from(ACCENTS[c]))
        elif axis == "lookalike" and c in LOOKALIKES:
            c = LOOKALIKES[c]
        out.append(c)
    s = "".join(out)
    return s.upper() if case == "upper" else s.capitalize() if case == "title" else s


@st.composite
def product_text(draw: st.DrawFn, lookalikes: bool = True) -> str:
    words = draw(st.lists(st.sampled_from(BASE), min_size=2, max_size=14))
    parts = []
    for w in words:
        parts.append(draw(spelled(w, lookalikes)))
        parts.append(draw(st.sampled_from(GAPS + JOINS)))
    return "".join(parts[:-1]) + "."


@st.composite
def respelled(draw: st.DrawFn, text: str) -> str:
    """A near-copy of ``text``: each word spelled anew, each gap kept or changed."""
    out = []
    for m in re.finditer(r"(?<!\[)([^\W_]+)|(\[REDACTED\]|[^\w\[]+|\[|_)", text):
        if m.group(1):
            plain = "".join(LATIN_OF.get(c, c) for c in m.group(1))
            out.append(draw(spelled(plain.lower())) if draw(st.booleans()) else m.group(1))
        else:
            out.append(draw(st.sampled_from(GAPS + JOINS)) if draw(st.integers(0, 3)) == 0
                       else m.group(2))
    return "".join(out)


LATIN_OF = {v: k for k, v in LOOKALIKES.items()}


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
# Look-alike letters in the texts to delink only: a collection that itself holds them is
# out of the promise (see presidio_delink/views.py).
@given(docs=st.lists(st.tuples(product_text(lookalikes=False), GROUPS), min_size=2, max_size=6),
       k=st.integers(2, 3), use_groups=st.booleans(), data=st.data())
def test_no_panel_member_links_the_output_under_combined_spellings(
    tmp_path_factory, docs, k, use_groups, data  # type: ignore[no-untyped-def]
) -> None:
    collection = [(f"d{i}", t) for i, (t, _) in enumerate(docs)]
    if use_groups:
        items = [(f"d{i}", t, g) for i, (t, g) in enumerate(docs)]
        groups = [g if g is not None else f"d{i}" for i, (_, g) in enumerate(docs)]
    else:
        items, groups = collection, None  # type: ignore[assignment]
    idx = NgramIndex.build(items, tmp_path_factory.mktemp("prod") / "i", max_n=4)
    texts = [data.draw(respelled(t)) for t, _ in docs[:2]] + [data.draw(product_text())]
    outs = delink_all(idx, texts, k)
    for adv in panel(max_n=4):
        found = adv.linkable(outs, collection, k, groups)  # type: ignore[attr-defined]
        assert found == [[] for _ in outs], (adv.name, found, outs)  # type: ignore[attr-defined]

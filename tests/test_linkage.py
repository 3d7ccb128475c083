"""The detector against brute force (Hypothesis) and on real data."""

from __future__ import annotations

import itertools

import pytest
from brute import doc_ngram_sets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presidio_delink import NgramIndex, linkage
from presidio_delink.errors import ConfigError
from presidio_delink.linkage import analyze
from presidio_delink.views import DEFAULT_VIEWS

VIEW_ST = st.sampled_from(DEFAULT_VIEWS)

WORDS = ["a", "b", "c", "d", "e"]
SEPS = [" ", " ", " ", ", ", " [REDACTED] "]
text_st = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPS)), max_size=14).map(
    lambda parts: "".join(w + s for w, s in parts)
)
corpus_st = st.lists(text_st, min_size=2, max_size=7).map(
    lambda ts: [(f"d{i}", t) for i, t in enumerate(ts)]
)
# Bags of single words (comma-separated): where linkable triples without linkable pairs live.
bag_st = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True).map(", ".join)
bag_corpus_st = st.lists(bag_st, min_size=3, max_size=12).map(
    lambda ts: [(f"d{i}", t) for i, t in enumerate(ts)]
)


def brute_text_ngrams(tok, text: str, max_n: int) -> dict[str, list[tuple[int, int]]]:  # type: ignore[no-untyped-def]
    out: dict[str, list[tuple[int, int]]] = {}
    for seg in tok.segments(text):
        for i in range(len(seg)):
            for n in range(1, min(max_n, len(seg) - i) + 1):
                key = " ".join(t.word for t in seg[i : i + n])
                out.setdefault(key, []).append((seg[i].start, seg[i + n - 1].end))
    return out


def contains(big: str, small: str) -> bool:
    b, s = big.split(" "), small.split(" ")
    return any(b[i : i + len(s)] == s for i in range(len(b) - len(s) + 1)) and big != small


def brute(docs, text, k, max_n, tok):  # type: ignore[no-untyped-def]
    sets = doc_ngram_sets(docs, tok, max_n)
    grams = brute_text_ngrams(tok, text, max_n)
    post = {g: frozenset(d for d, s in enumerate(sets) if g in s) for g in grams}
    rare = {g for g, p in post.items() if 1 <= len(p) < k}
    minimal = {g for g in rare if not any(contains(g, h) for h in rare)}
    a = [g for g, p in post.items() if len(p) >= k]
    combos = {}
    for r in (2, 3):
        for c in itertools.combinations(sorted(a), r):
            inter = frozenset.intersection(*(post[g] for g in c))
            if 1 <= len(inter) < k:
                combos[c] = inter
    return grams, post, minimal, combos


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=corpus_st, query=text_st, k=st.integers(2, 3), max_n=st.integers(1, 4),
       arity=st.integers(1, 3), view=VIEW_ST)
def test_detector_equals_brute_force(tmp_path_factory, docs, query, k, max_n, arity, view) -> None:  # type: ignore[no-untyped-def]
    check(tmp_path_factory, docs, query, k, max_n, arity, view)


GROUPS = st.sampled_from([None, "g0", "g1", "g2"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=corpus_st, query=text_st, k=st.integers(2, 3), arity=st.integers(1, 3),
       groups=st.lists(GROUPS, min_size=7, max_size=7), view=VIEW_ST)
def test_groups_equal_brute_force(tmp_path_factory, docs, query, k, arity, groups, view) -> None:  # type: ignore[no-untyped-def]
    """k counts distinct groups: brute force over group sets."""
    grouped = [(d, t, g) for (d, t), g in zip(docs, groups, strict=False)]
    idx = NgramIndex.build(grouped, tmp_path_factory.mktemp("g") / "i", max_n=3)
    label = [g if g is not None else f"doc:{d}" for d, _, g in grouped]
    tok = idx.views[view].tokenizer
    grams, post, _, _ = brute(docs, query, k, 3, tok)
    gpost = {g: frozenset(label[d] for d in p) for g, p in post.items()}
    rare = {g for g, p in gpost.items() if 1 <= len(p) < k}
    minimal = {g for g in rare if not any(contains(g, h) for h in rare)}
    rep = analyze(idx, query, k=k, arity=arity, views=[view], exhaustive=True)
    assert {f.key for f in rep.flagged if f.arity == 1} == minimal
    for f in rep.flagged:
        if f.arity == 1:
            assert f.groups == len(gpost[f.key]) and f.df == len(post[f.key])
    if arity >= 2:
        frequent = sorted(g for g, p in gpost.items() if len(p) >= k)
        linked: set[int] = set()
        for r in range(2, arity + 1):
            for c in itertools.combinations(frequent, r):
                inter = frozenset.intersection(*(gpost[g] for g in c))
                if 1 <= len(inter) < k:
                    linked |= {d for d in range(len(label)) if label[d] in inter}
        combo_flags = any(f.arity >= 2 for f in rep.flagged)
        assert combo_flags == bool(linked)
        assert set(rep.combination_docs) == linked


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=bag_corpus_st, query=bag_st, k=st.integers(2, 4), arity=st.integers(2, 3))
def test_combinations_of_words_equal_brute_force(tmp_path_factory, docs, query, k, arity) -> None:  # type: ignore[no-untyped-def]
    bag_query = ", ".join(WORDS)  # the query holds every word: the richest combinations
    check(tmp_path_factory, docs, bag_query if query == "a" else query, k, 2, arity, "folded")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=corpus_st, parts=st.lists(text_st, min_size=1, max_size=4), k=st.integers(2, 3),
       window=st.integers(1, 7))
def test_a_check_walked_in_windows_equals_one_walk(tmp_path_factory, monkeypatch, docs, parts, k,
                                                   window) -> None:  # type: ignore[no-untyped-def]
    """An arity-1 check walks the text ``WINDOW`` positions at a time: a window may end
    inside a segment, and inside a query of a view that crosses punctuation."""
    idx = NgramIndex.build(docs, tmp_path_factory.mktemp("w") / "i", max_n=4)
    query = " ".join(parts)

    def report(size: int) -> tuple[object, ...]:
        monkeypatch.setattr(linkage, "WINDOW", size)
        rep = analyze(idx, query, k=k, max_n=3)
        return rep.n_words, [(f.key, f.view, f.spans, f.df, f.docs, f.groups) for f in rep.flagged]

    assert report(window) == report(1 << 20)


def test_a_triple_links_where_no_pair_does(tmp_path) -> None:  # type: ignore[no-untyped-def]
    docs = [("d0", "a, b, c"), ("d1", "a, b"), ("d2", "a, c"), ("d3", "b, c"), ("d4", "x")]
    idx = NgramIndex.build(docs, tmp_path / "i", views=["folded"])
    assert not analyze(idx, "c, b, a", k=2, arity=2).linkable
    rep = analyze(idx, "c, b, a", k=2, arity=3)
    assert [c.keys for c in rep.combinations] == [("a", "b", "c")]
    assert rep.combinations[0].docs == (0,)
    assert rep.linked_docs() == {idx.doc_ids[0]: [(("a", "b", "c"), ("folded",))]}
    assert {f.key for f in rep.flagged} == {"a"} and rep.flagged[0].arity == 3


def check(tmp_path_factory, docs, query, k, max_n, arity, view) -> None:  # type: ignore[no-untyped-def]
    idx = NgramIndex.build(docs, tmp_path_factory.mktemp("l") / "i", max_n=4, views=[view])
    rep = analyze(idx, query, k=k, arity=arity, max_n=max_n)
    full = analyze(idx, query, k=k, arity=arity, max_n=max_n, exhaustive=True)
    # The fast search decides exactly as the exhaustive one, flagging a subset of what it
    # flags (the same set whenever some pair links).
    fast_flags = {f.key: f.arity for f in rep.flagged}
    full_flags = {f.key: f.arity for f in full.flagged}
    assert rep.linkable == full.linkable
    assert fast_flags.items() <= full_flags.items()
    if any(f.arity == 2 for f in full.flagged) or arity < 3:
        assert fast_flags == full_flags
    grams, post, minimal, combos = brute(docs, query, k, max_n, idx.views[view].tokenizer)
    single = {f.key: f for f in rep.flagged if f.arity == 1}
    assert set(single) == minimal
    for key, f in single.items():
        assert sorted(f.spans) == sorted(set(grams[key]))
        assert f.df == len(post[key])
        assert set(f.docs) == post[key]
    if arity == 1:
        assert not rep.combinations
        return
    want = {c: d for c, d in combos.items() if len(c) <= arity}
    # Exact decision: linkable through combinations iff brute force finds one.
    assert bool(rep.combinations) == bool(want)
    for c in rep.combinations:
        assert len(c.keys) <= arity
        inter = frozenset.intersection(*(post[g] for g in c.keys))
        assert 1 <= len(inter) < k and set(c.docs) == inter
        assert all(len(post[g]) >= k for g in c.keys)
        assert c.flagged == min(c.keys, key=lambda x: x.count(" ")) or (
            c.flagged.count(" ") == min(x.count(" ") for x in c.keys)
        )
        assert c.flagged in {f.key for f in rep.flagged}
    # Exhaustive: the adversary's complete result.
    if arity >= 2:
        want_docs = set().union(*want.values()) if want else set()
        assert set(full.combination_docs) == want_docs
    # Every brute-force pair is found when arity allows (pairs are exact over the items).
    found = {tuple(sorted(c.keys)) for c in rep.combinations}
    for c in want:
        if len(c) == 2 and c not in found:
            # allowed only if some member is not maximal in every document of the pair
            assert any(
                any(contains(h, g) and post[h] & want[c] for h in post if len(post[h]) >= k)
                for g in c
            )


def test_arguments_are_validated(sample_index: NgramIndex) -> None:
    with pytest.raises(ConfigError):
        analyze(sample_index, "x", k=1)
    with pytest.raises(ConfigError):
        analyze(sample_index, "x", arity=4)
    with pytest.raises(ConfigError):
        analyze(sample_index, "x", max_n=9)


def test_real_deidentified_sample(sample_index: NgramIndex, sample_deid, sample_docs) -> None:  # type: ignore[no-untyped-def]
    doc_id, text = sample_deid[0]
    rep = analyze(sample_index, text, k=2)
    assert rep.linkable
    assert doc_id in rep.linked_docs()  # the source is singled out, by its id
    for f in rep.flagged:
        for a, b in f.spans:
            assert "[REDACTED]" not in text[a:b]
            if f.view == "folded":
                assert sample_index.df(text[a:b]) == f.df
        assert 1 <= f.df < 2


def test_placeholders_are_boundaries(sample_index: NgramIndex) -> None:
    text = "lodged an application <PERSON> against the Republic [REDACTED] of Turkey"
    rep = analyze(sample_index, text, k=2)
    for f in rep.flagged:
        for a, b in f.spans:
            assert "<" not in text[a:b] and "[" not in text[a:b]


def test_unknown_text_links_nothing(sample_index: NgramIndex) -> None:
    rep = analyze(sample_index, "zzqx wubble frobnicate", k=5, arity=3)
    assert not rep.linkable and not rep.combinations
    assert analyze(sample_index, "", k=2).flagged == []


def test_linked_docs_name_the_views_and_give_each_piece_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    docs = [("d0", "The applicant's representatives were heard."),
            ("d1", "The applicant was heard."), ("d2", "The court was heard.")]
    idx = NgramIndex.build(docs, tmp_path / "i")
    rep = analyze(idx, "Their applicant's representatives left.", k=2)
    linked = rep.linked_docs()
    assert list(linked) == ["d0"]
    pieces = linked["d0"]
    # one phrase links in several views at one place: one piece, naming them all
    where = [next(f.spans[0] for f in rep.flagged if f.key == p.ngrams[0] and f.view == p.views[0])
             for p in pieces]
    assert len(where) == len(set(where))
    assert any(len(p.views) > 1 for p in pieces)
    assert {v for p in pieces for v in p.views} <= set(idx.views)
    assert sum(len(p.views) for p in pieces) == sum(
        1 for f in rep.flagged if 0 in f.docs and f.arity == 1)

"""A growing collection (docs/index.md): adding documents never lowers a df, a group count
or a combination's count, so whatever reached ``k`` stays at ``k`` or above; an N-gram
the collection did not hold (df 0) can reach 1..k-1, which is why an output must be
checked again against a grown index."""

from __future__ import annotations

from brute import doc_ngram_sets, postings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presidio_delink import NgramIndex
from presidio_delink.linkage import analyze

WORDS = ["a", "b", "c", "d", "e", "the", "court", "oslo"]
doc_text = st.lists(
    st.tuples(st.sampled_from(WORDS), st.sampled_from([" ", " ", ". ", ", "])), max_size=25
).map(lambda parts: "".join(w + s for w, s in parts))
docs = st.lists(st.tuples(doc_text, st.sampled_from(["g0", "g1", "g2", None])),
                min_size=1, max_size=6)


def _items(texts: list[tuple[str, str | None]], start: int) -> list[tuple[str, str, str | None]]:
    return [(f"d{start + i}", t, g) for i, (t, g) in enumerate(texts)]


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(base=docs, extra=docs, text=doc_text, k=st.integers(2, 3))
def test_counts_never_fall_when_documents_are_added(  # type: ignore[no-untyped-def]
    tmp_path_factory, base, extra, text, k
) -> None:
    old_docs = _items(base, 0)
    new_docs = old_docs + _items(extra, len(old_docs))
    d = tmp_path_factory.mktemp("grow")
    old = NgramIndex.build(old_docs, d / "old", max_n=3)
    new = NgramIndex.build(new_docs, d / "new", max_n=3)
    for name, view in old.views.items():
        sets_old = doc_ngram_sets([(i, t) for i, t, _ in old_docs], view.tokenizer, 3)
        sets_new = doc_ngram_sets([(i, t) for i, t, _ in new_docs], view.tokenizer, 3)
        for key in set().union(*sets_old):
            words = key.split(" ")
            a = old.views[name].lookup(words)
            b = new.views[name].lookup(words)
            # exact against brute force, and never lower
            assert a.tolist() == postings(sets_old, key)
            assert b.tolist() == postings(sets_new, key)
            assert set(a.tolist()) <= set(b.tolist())
            assert len(old.groups_of(a)) <= len(new.groups_of(b))
    # linkage: an output linkage-free against the old index (nothing flagged) links,
    # against the grown one, only through N-grams or combinations the old collection
    # held in no group at all (df 0): a count that reached k stays at k or above
    n_old = len(old_docs)

    def old_groups(view: str, keys: tuple[str, ...]) -> set[int]:
        sets = [set(old.groups_of(old.views[view].lookup(key.split(" "))).tolist())
                for key in keys]
        return set.intersection(*sets)

    for arity in (1, 2):
        if analyze(old, text, k=k, arity=arity).flagged:
            continue
        after = analyze(new, text, k=k, arity=arity, exhaustive=True)
        for f in after.flagged:
            if f.arity == 1:
                holders = new.views[f.view].lookup(f.key.split(" ")).tolist()
                assert holders and min(holders) >= n_old, (f.view, f.key)
        for c in after.combinations:
            assert old_groups(c.view, c.keys) == set(), c


def test_a_phrase_absent_before_can_link_after(tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    """Why a linkage-free output must be checked again when documents are added: its
    phrases found nowhere (df 0) link to a new document that holds them."""
    d = tmp_path_factory.mktemp("absent")
    old_docs = [("d0", "the court sat in oslo", None), ("d1", "the court sat in bergen", None)]
    text = "the court sat in tromso"
    old = NgramIndex.build(old_docs, d / "old", max_n=3)
    assert analyze(old, text, k=2).flagged == []
    new = NgramIndex.build(old_docs + [("d2", "a hearing in tromso", None)], d / "new", max_n=3)
    flagged = analyze(new, text, k=2).flagged
    assert any(f.key == "tromso" and f.df == 1 for f in flagged)

"""A check of all views at once shares what its views have in common (one reading of the
same pieces, one list of the same queries, a view's answers taken from the view it is
stored over where its own entries change nothing: ``linkage_queries.Shared``); its
flagged N-grams are those of each view checked alone, which shares nothing."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presidio_delink import NgramIndex
from presidio_delink.linkage import analyze

# Words on which the views differ: hyphens, apostrophes, periods, a dash alone, marks
# that only the surface view breaks at, letters that only some views fold.
WORDS = ["court", "non-pecuniary", "applicant\u2019s", "applicant", "s", "U.S.", "-", "\u2013",
         "\u00a7", "Bi\u00e7er", "bicer", "3.5", "a/b", "b"]
SEPS = [" ", " ", " ", ", ", ". ", " - ", " [REDACTED] "]
text_st = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPS)), max_size=14).map(
    lambda parts: "".join(w + s for w, s in parts))
corpus_st = st.lists(text_st, min_size=2, max_size=8)


def flagged(rep) -> list[tuple[object, ...]]:
    return sorted((f.view, f.key, f.spans, f.df, f.docs, f.groups) for f in rep.flagged)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=corpus_st, query=st.lists(text_st, min_size=1, max_size=3).map(" ".join),
       k=st.integers(2, 3), grouped=st.booleans(), n_parts=st.sampled_from([1, 3]))
def test_all_views_at_once_equal_each_view_alone(tmp_path_factory, texts, query, k,
                                                 grouped, n_parts) -> None:
    docs = [(f"d{i}", t, f"g{i // 2}") if grouped else (f"d{i}", t)
            for i, t in enumerate(texts)]
    idx = NgramIndex.build(docs, tmp_path_factory.mktemp("s") / "i", max_n=4, n_parts=n_parts)
    assert all(len(v.parts) == n_parts for v in idx.views.values())
    together = analyze(idx, query, k=k)
    alone = [f for name in idx.views for f in analyze(idx, query, k=k, views=[name]).flagged]
    assert flagged(together) == sorted((f.view, f.key, f.spans, f.df, f.docs, f.groups)
                                       for f in alone)

"""The fused reading's :func:`~presidio_delink.attacks.fused.features` against a
straightforward implementation (stable argsorts and sorts of whole rows), bit for bit:
the same candidates in the same order, the same feature values and dtypes, ties at the
candidate cut-off included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from presidio_delink.attacks.fused import CANDIDATES, TOP, UNRANKED, features


def _reference(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidates from a stable argsort of each row's positive scores; ranks from a sort
    of each whole row."""
    n_members = rows.shape[0]
    cand: set[int] = set()
    for s in rows:
        pos = np.flatnonzero(s > 0)
        if len(pos):
            top = pos[np.argsort(-s[pos], kind="stable")[:CANDIDATES]]
            cand.update(top.tolist())
    cands = np.array(sorted(cand), dtype=np.int64)
    if not len(cands):
        return cands, np.zeros((0, 4 * n_members + 1), dtype=np.float64)
    sub = rows[:, cands]
    best = rows.max(axis=1, keepdims=True)
    rel = np.divide(sub, best, out=np.zeros_like(sub, dtype=np.float64), where=best > 0)
    rank = np.empty(sub.shape, dtype=np.float64)
    for i, s in enumerate(rows):
        above = np.searchsorted(np.sort(-s), -sub[i], side="left")
        rank[i] = np.where(sub[i] > 0, 1 + above, UNRANKED)
    in_top = rank <= TOP
    x = np.concatenate(
        [rel.T, np.log(rank).T, (rank == 1).T, in_top.T, in_top.sum(axis=0)[:, None]], axis=1
    )
    return cands, x


def _same(rows: np.ndarray) -> None:
    got_c, got_x = features(rows)
    want_c, want_x = _reference(rows)
    assert got_c.dtype == want_c.dtype
    assert got_x.dtype == want_x.dtype
    assert got_x.shape == want_x.shape
    assert np.array_equal(got_c, want_c)
    assert np.array_equal(got_x, want_x)


# few distinct values (many ties, zeros, negatives) over rows wider than CANDIDATES
_SMALL = st.sampled_from([-2.0, -0.5, -0.0, 0.0, 0.0, 0.0, 0.25, 1.0, 1.0, 2.0, 3.5])


@settings(max_examples=200, deadline=None)
@given(
    hnp.arrays(
        dtype=st.sampled_from([np.float64, np.float32]),
        shape=st.tuples(st.integers(0, 5), st.integers(0, 3 * CANDIDATES)),
        elements=_SMALL,
    )
)
def test_features_match_the_reference_on_tied_rows(rows: np.ndarray) -> None:
    _same(rows)


@settings(max_examples=100, deadline=None)
@given(
    hnp.arrays(
        dtype=np.float64,
        shape=st.tuples(st.integers(1, 4), st.integers(1, 4 * CANDIDATES)),
        elements=st.one_of(
            st.just(0.0),
            st.integers(-3, 3).map(float),
            st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, width=64),
        ),
    )
)
def test_features_match_the_reference_on_mixed_rows(rows: np.ndarray) -> None:
    _same(rows)


def test_ties_at_the_cut_off_keep_the_lowest_indices() -> None:
    # one higher score, then more equal positive scores than places: the stable order
    # takes the equal ones by ascending index
    s = np.zeros(200)
    s[10:190:2] = 1.0
    s[151] = 2.0
    rows = np.stack([s, np.zeros(200)])
    cands, _ = features(rows)
    want = sorted([151, *range(10, 190, 2)[: CANDIDATES - 1]])
    assert cands.tolist() == want
    _same(rows)

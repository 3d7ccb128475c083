"""The lower bound of ``benchmarks/ranked/words_bound.py``: the fractional knapsack is the
LP optimum, never above the integer one."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "benchmarks" / "ranked"), str(REPO / "benchmarks")]

from words_bound import knapsack  # noqa: E402

instances = st.integers(1, 6).flatmap(
    lambda n: st.tuples(
        st.lists(st.lists(st.floats(0, 5).map(lambda v: round(v, 2)), min_size=3, max_size=3),
                 min_size=n, max_size=n),
        st.lists(st.integers(1, 4), min_size=n, max_size=n),
    )
)


@settings(max_examples=150, deadline=None)
@given(instances)
def test_bound_is_the_lp_optimum_and_below_the_integer_one(inst) -> None:  # type: ignore[no-untyped-def]
    value = np.asarray(inst[0], dtype=float)
    cost = np.asarray(inst[1], dtype=float)
    got = knapsack(value, cost, 0)
    n = len(cost)
    for u in range(value.shape[1]):
        delta = value[:, 0] - value[:, u]
        need = delta.sum()
        if need <= 0:
            assert got[u] == 0
            continue
        # the LP: min cost.x, delta.x >= need, 0 <= x <= 1
        lp = linprog(cost, A_ub=[-delta], b_ub=[-need], bounds=[(0, 1)] * n, method="highs")
        assert lp.status == 0
        assert got[u] == np.float64(got[u])
        assert abs(got[u] - lp.fun) <= 1e-6 * max(1.0, lp.fun)
        best = min(
            cost[list(sub)].sum()
            for k in range(n + 1)
            for sub in itertools.combinations(range(n), k)
            if delta[list(sub)].sum() >= need - 1e-9
        )
        assert got[u] <= best + 1e-9


def test_source_below_nothing_needs_no_words() -> None:
    value = np.array([[1.0, 2.0], [0.5, 1.0]])  # unit 1 scores above the source already
    assert knapsack(value, np.ones(2), 0)[1] == 0
    # the source's own column: no lead over itself
    assert knapsack(value, np.ones(2), 0)[0] == 0

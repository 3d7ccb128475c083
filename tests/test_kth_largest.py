"""``kth_largest``: exactly numpy's partition, on the sparse rows of group scores."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from presidio_delink.attacks.scoring import kth_largest


@settings(max_examples=200, deadline=None)
@given(
    g=arrays(np.float64, st.tuples(st.integers(0, 6), st.integers(1, 12)),
             elements=st.sampled_from([0.0, 0.0, 0.0, 0.5, 1.25, 3.0, 7.5, -1.0])),
    k=st.integers(1, 12),
)
def test_equals_numpy_partition(g: np.ndarray, k: int) -> None:
    if k > g.shape[1]:
        k = g.shape[1]
    want = np.partition(g, -k, axis=1)[:, -k]
    got = kth_largest(g, k)
    assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_rows(dtype: type) -> None:
    rng = np.random.default_rng(5)
    g = np.zeros((8, 1000), dtype=dtype)
    for i in range(8):
        at = rng.choice(1000, size=i, replace=False)  # rows with 0 to 7 positive scores
        g[i, at] = rng.random(i).astype(dtype) + 0.1
    for k in (1, 2, 5):
        assert np.array_equal(kth_largest(g, k), np.partition(g, -k, axis=1)[:, -k])

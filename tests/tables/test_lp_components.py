"""The blocks of unknowns of an LP model (``sdckit.tables._lp.components``)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components

from sdckit.tables._lp import components


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=0, max_value=12),
    st.integers(min_value=1, max_value=15),
    st.floats(min_value=0.0, max_value=0.5),
    st.integers(min_value=0, max_value=2**31 - 1),
)
def test_components_equal_those_of_the_column_graph(
    m: int, k: int, density: float, seed: int
) -> None:
    """The bipartite labelling gives the blocks, and the numbers, of the square ``A' A``."""
    rng = np.random.default_rng(seed)
    dense = (rng.random((m, k)) < density) * rng.choice([-1.0, 1.0, 2.0], size=(m, k))
    a = sp.csr_matrix(dense)
    n, labels = components(a)
    pattern = sp.csr_matrix(dense != 0, dtype=np.int8)
    n_ref, ref = connected_components((pattern.T @ pattern).tocsr(), directed=False)
    assert n == n_ref
    np.testing.assert_array_equal(labels, ref)


def test_a_long_row_costs_its_length_only() -> None:
    """A relation over 200,000 unknowns (the square would hold 4e10 entries)."""
    k = 200_000
    a = sp.csr_matrix((np.ones(k), (np.zeros(k, dtype=np.int64), np.arange(k))), shape=(2, k + 1))
    n, labels = components(a)
    assert n == 2 and labels[:k].max() == 0 and labels[k] == 1

"""l-diversity: hand-computed values and properties."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit.errors import ColumnError, ParameterError
from sdckit.risk import l_diversity


def test_hand_computed_group() -> None:
    df = pl.DataFrame(
        {
            "age": [1, 1, 1, 2, 2, 1, 1, 1],
            "disease": ["a", "a", "b", "c", "c", None, "d", "a"],
        }
    )
    res = l_diversity(df, keys=["age"], sensitive="disease")
    # class age=1: a x3, b, d, one missing (6 records); class age=2: c x2
    assert res.distinct["disease"].tolist() == [4, 4, 4, 1, 1, 4, 4, 4]
    h = -(0.5 * math.log(0.5) + 3 * (1 / 6) * math.log(1 / 6))
    np.testing.assert_allclose(res.entropy["disease"][0], math.exp(h))
    assert res.entropy["disease"][3] == pytest.approx(1.0)
    # recursive: r = (3, 1, 1), c = 2: 2*(1+1) > 3 -> l >= 2; 2*1 > 3 fails -> l = 2
    assert res.recursive["disease"].tolist() == [2, 2, 2, 1, 1, 2, 2, 2]
    assert res.minimum()["l_distinct_disease"] == 1


def test_recursive_depends_on_c() -> None:
    df = pl.DataFrame({"k": [1] * 7, "s": [1, 1, 1, 2, 2, 3, 4]})
    # r = (3, 2, 1, 1): tails 4, 2, 1
    for c, expected in [(0.5, 1), (1.0, 2), (2.0, 3), (4.0, 4)]:
        res = l_diversity(df, keys=["k"], sensitive="s", c=c)
        assert res.recursive["s"][0] == expected


def test_multi_attribute() -> None:
    df = pl.DataFrame({"k": [1, 1, 1, 1], "s1": [1, 2, 1, 2], "s2": [5, 5, 6, 7]})
    res = l_diversity(df, keys=["k"], sensitive=["s1", "s2"])
    # split by s2, every sub-class has one value of s1: entropy 1; split by s1: s2 in
    # {5, 6} and {5, 7}: entropy 2
    assert res.multi_entropy is not None
    np.testing.assert_allclose(res.multi_entropy, 1.0)
    assert list(res.to_frame().columns)[-2:] == ["l_entropy_multi", "l_recursive_multi"]


def test_errors() -> None:
    df = pl.DataFrame({"k": [1, 2], "s": [1, 2]})
    with pytest.raises(ColumnError, match="sensitive"):
        l_diversity(df, keys=["k"])
    with pytest.raises(ParameterError, match="'c'"):
        l_diversity(df, keys=["k"], sensitive="s", c=0)


@given(
    rows=st.lists(
        st.tuples(st.integers(0, 2), st.one_of(st.none(), st.integers(0, 4))),
        min_size=2,
        max_size=40,
    )
)
def test_brute_force(rows) -> None:
    df = pl.DataFrame(rows, schema=["k", "s"], orient="row")
    res = l_diversity(df, keys=["k"], sensitive="s")
    for i, (key, _) in enumerate(rows):
        values = [s for k, s in rows if k == key]
        present = [v for v in values if v is not None]
        counts = sorted((present.count(v) for v in set(present)), reverse=True)
        n_missing = len(values) - len(present)
        distinct = len(counts) + (1 if n_missing and counts else 0)
        assert res.distinct["s"][i] == distinct
        shares = [c / len(values) for c in counts] + (
            [n_missing / len(values)] if n_missing and counts else []
        )
        assert res.entropy["s"][i] == pytest.approx(math.exp(-sum(p * math.log(p) for p in shares)))
        if counts:
            ell = 1
            for j in range(1, len(counts)):
                if 2 * sum(counts[j:]) > counts[0]:
                    ell += 1
                else:
                    break
            assert res.recursive["s"][i] == ell
        assert 1 <= res.entropy["s"][i] <= max(distinct, 1) + 1e-9

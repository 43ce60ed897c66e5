"""Data shuffling: exact marginals, kept relations, errors."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit import Microdata
from sdckit.errors import ColumnError, DataError
from sdckit.masking.shuffling import Shuffling, shuffle


def test_relation_kept_and_records_changed() -> None:
    rng = np.random.default_rng(1)
    n = 2000
    x = rng.normal(size=n)
    g = rng.choice(["a", "b"], n)
    y = 3 * x + np.where(g == "a", 2.0, -2.0) + rng.normal(size=n)
    df = pl.DataFrame({"x": x, "g": g, "y": y})
    res = shuffle(df, numeric=["y"], predictors=["x", "g"], seed=2)
    out = res.data
    assert np.array_equal(np.sort(out["y"].to_numpy()), np.sort(y))
    corr_before = np.corrcoef(x, y)[0, 1]
    corr_after = np.corrcoef(x, out["y"].to_numpy())[0, 1]
    assert abs(corr_after - corr_before) < 0.03
    assert res.n_changed_records > 0.9 * n
    # the group effect is recovered
    gap = out.filter(pl.col("g") == "a")["y"].mean() - out.filter(pl.col("g") == "b")["y"].mean()
    assert gap == pytest.approx(4.0, abs=0.4)


@given(seed=st.integers(0, 1000), n=st.integers(5, 60))
def test_permutation_property(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    df = pl.DataFrame(
        {"a": rng.normal(size=n), "b": rng.normal(size=n), "k": rng.integers(0, 3, n)}
    )
    md = Microdata(df, keys=["k"], numeric=["a", "b"])
    method = Shuffling(seed=seed)
    method.verify(md, method.apply(md))


def test_errors() -> None:
    df = pl.DataFrame({"a": [1.0, None, 3.0], "k": [1, 2, 3]})
    with pytest.raises(DataError, match="complete values"):
        shuffle(df, numeric=["a"], predictors=["k"])
    with pytest.raises(ColumnError, match="both shuffled and a predictor"):
        shuffle(df, numeric=["a"], predictors=["a"])


def test_large_integers_and_missing_category() -> None:
    rng = np.random.default_rng(5)
    n = 60
    y = [2**60 + int(v) for v in rng.integers(0, 1000, n)]
    g = pl.Series([None if i % 7 == 0 else ("a" if i % 2 else "b") for i in range(n)],
                  dtype=pl.String)  # fmt: skip
    df = pl.DataFrame({"y": y, "g": g})
    out = shuffle(df, numeric=["y"], predictors=["g"], seed=1).data
    assert sorted(out["y"].to_list()) == sorted(y)
    with pytest.raises(DataError, match="missing for every record"):
        shuffle(df.with_columns(z=pl.lit(None, dtype=pl.Float64)), numeric=["y"],
                predictors=["z"])  # fmt: skip

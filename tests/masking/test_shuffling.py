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
    res = shuffle(df, variables=["y"], predictors=["x", "g"], seed=2)
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
        shuffle(df, variables=["a"], predictors=["k"])
    with pytest.raises(ColumnError, match="both shuffled and a predictor"):
        shuffle(df, variables=["a"], predictors=["a"])


def test_large_integers_and_missing_category() -> None:
    rng = np.random.default_rng(5)
    n = 60
    y = [2**60 + int(v) for v in rng.integers(0, 1000, n)]
    g = pl.Series([None if i % 7 == 0 else ("a" if i % 2 else "b") for i in range(n)],
                  dtype=pl.String)  # fmt: skip
    df = pl.DataFrame({"y": y, "g": g})
    out = shuffle(df, variables=["y"], predictors=["g"], seed=1).data
    assert sorted(out["y"].to_list()) == sorted(y)
    with pytest.raises(DataError, match="missing for every record"):
        shuffle(df.with_columns(z=pl.lit(None, dtype=pl.Float64)), variables=["y"],
                predictors=["z"])  # fmt: skip


def _two_numeric(n: int = 200) -> pl.DataFrame:
    rng = np.random.default_rng(11)
    age = rng.integers(18, 80, n)
    return pl.DataFrame(
        {
            "sex": rng.choice(["f", "m"], n),
            "age": age,
            "income": 1000 + 40 * age + rng.normal(0, 300, n),
            "savings": rng.normal(5000, 900, n),
        }
    )


def test_twin_shuffles_only_the_variables_named() -> None:
    # the twin takes the class's parameter `variables`; `numeric` is the Microdata role
    df = _two_numeric()
    md = Microdata(df, keys=["sex"], numeric=["income", "savings"])
    for data in (md, df):
        res = shuffle(data, variables=["income"], seed=3)
        assert list(res.changed) == ["income"], res.changed
        assert res.changed["income"] > 150  # 200 records: nearly every value moves
        assert res.data["savings"].equals(df["savings"])
        assert sorted(res.data["income"]) == sorted(df["income"])
        assert res.protection.get_params()["variables"] == ["income"]
    # without `variables` the class shuffles the numeric role, given with the data or not
    both = shuffle(md, seed=3)
    assert sorted(both.changed) == ["income", "savings"]
    by_role = shuffle(df, numeric=["savings"], seed=3)
    assert list(by_role.changed) == ["savings"]
    # the twin and the class give the same file
    by_class = Shuffling(variables=["income"], seed=3).apply(md)
    assert by_class.microdata.frame.equals(shuffle(md, variables=["income"], seed=3).data)

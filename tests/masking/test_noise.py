"""Tests of additive noise (methods.md M10, worked example E6)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit import Microdata
from sdckit._keyed_random import normals
from sdckit.errors import ColumnError, DataError, ParameterError
from sdckit.masking.keyed import noise_key
from sdckit.masking.noise import AddNoise, add_noise
from sdckit.protection import Protected

COV = np.array([[4.0, 1.2, 0.5], [1.2, 2.0, -0.4], [0.5, -0.4, 1.0]])


def _normal_frame(n: int, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.multivariate_normal([10.0, -5.0, 100.0], COV, size=n)
    return pl.DataFrame({"a": x[:, 0], "b": x[:, 1], "c": x[:, 2]})


def _matrix(frame: pl.DataFrame, cols: list[str]) -> np.ndarray:
    return frame.select(cols).to_numpy().astype(float)


# ------------------------------------------------------------------ values from the formulas
def test_additive_matches_formula_with_the_same_random_stream() -> None:
    df = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": [10.0, 0.0, 5.0, 5.0]})
    res = add_noise(df, numeric=["x", "y"], method="additive", noise=50, seed=5)
    sd = np.array([np.std([1, 2, 3, 4], ddof=1), np.std([10, 0, 5, 5], ddof=1)])
    # the normals are keyed by the seed's key and the row (sdckit._keyed_random), one lane
    # per variable
    key = noise_key(5)
    e = np.column_stack([normals(key, j, np.arange(4)) for j in range(2)]) * 0.5 * sd
    expected = df.to_numpy() + e
    np.testing.assert_allclose(res.microdata.frame.to_numpy(), expected, rtol=1e-14)
    assert res.details["noise_sd"] == pytest.approx({"x": 0.5 * sd[0], "y": 0.5 * sd[1]})
    assert res.changed == {"x": 4, "y": 4}


def test_e6_coefficients_and_delta_one_draws_from_the_fitted_normal() -> None:
    df = _normal_frame(50)
    res = add_noise(df, numeric=["a", "b", "c"], method="correlated2", delta=0.6, seed=1)
    assert res.details["c1"] == pytest.approx(0.8)
    assert res.details["c2"] == pytest.approx(0.6)
    # y = c1 x + c2 e with e = mu (1 - c1) / c2 + F z, F F^T = Sigma (eigendecomposition)
    x = df.to_numpy()
    mu, sigma = x.mean(axis=0), np.cov(x, rowvar=False)
    values, vectors = np.linalg.eigh(sigma)
    factor = vectors * np.sqrt(values)
    key = noise_key(1)
    z = np.column_stack([normals(key, j, np.arange(len(x))) for j in range(3)])
    expected = 0.8 * x + 0.6 * (z @ factor.T + mu * 0.2 / 0.6)
    np.testing.assert_allclose(res.microdata.frame.to_numpy(), expected, rtol=1e-12)


def test_zero_noise_changes_nothing() -> None:
    df = _normal_frame(20)
    res = add_noise(df, numeric=["a", "b"], noise=0, seed=1)
    assert res.changed == {}
    assert res.n_changed_records == 0


# ------------------------------------------------------------------ E6 moments on large n
@pytest.fixture(scope="module")
def big() -> pl.DataFrame:
    return _normal_frame(100_000, seed=3)


def test_e6_keeps_means_and_covariance_within_sampling_error(big: pl.DataFrame) -> None:
    delta = 0.3
    res = add_noise(big, numeric=["a", "b", "c"], method="correlated2", delta=delta, seed=2)
    x, y = big.to_numpy(), res.microdata.frame.to_numpy()
    sd = x.std(axis=0, ddof=1)
    se = delta * sd / np.sqrt(len(x))
    assert np.all(np.abs(y.mean(axis=0) - x.mean(axis=0)) < 5 * se)
    scale = np.outer(sd, sd)
    gap = np.abs(np.cov(y, rowvar=False) - np.cov(x, rowvar=False)) / scale
    assert gap.max() < 0.01
    # the full covariance keeps correlations (sdcMicro's diagonal version would shrink them)
    np.testing.assert_allclose(
        np.corrcoef(y, rowvar=False), np.corrcoef(x, rowvar=False), atol=0.01
    )
    ratios = res.details["variance_ratio"]
    assert all(abs(r - 1) < 0.02 for r in ratios.values())
    # y - x = (c1 - 1) x + c2 e has sd sigma * sqrt(2 (1 - c1))
    c1 = np.sqrt(1 - delta**2)
    assert (y - x).std(axis=0) == pytest.approx(sd * np.sqrt(2 * (1 - c1)), rel=0.02)


def test_uncorrelated_and_correlated_inflate_variance_as_documented(big: pl.DataFrame) -> None:
    x = big.to_numpy()
    add = add_noise(big, numeric=["a", "b", "c"], method="additive", noise=50, seed=4)
    y = add.microdata.frame.to_numpy()
    np.testing.assert_allclose(y.var(axis=0) / x.var(axis=0), 1.25, rtol=0.02)
    assert abs(np.corrcoef(y, rowvar=False)[0, 1]) < abs(np.corrcoef(x, rowvar=False)[0, 1])
    cor = add_noise(big, numeric=["a", "b", "c"], method="correlated", noise=50, seed=4)
    y = cor.microdata.frame.to_numpy()
    np.testing.assert_allclose(
        np.cov(y, rowvar=False), 1.5 * np.cov(x, rowvar=False), atol=0.02 * 4.0
    )
    np.testing.assert_allclose(
        np.corrcoef(y, rowvar=False), np.corrcoef(x, rowvar=False), atol=0.01
    )


def test_exact_keeps_mean_and_covariance_to_1e9(big: pl.DataFrame) -> None:
    method = AddNoise(method="exact", delta=0.5, seed=9)
    md = Microdata(big, numeric=["a", "b", "c"])
    res = method.apply(md)
    method.verify(md, res)
    x, y = big.to_numpy(), res.microdata.frame.to_numpy()
    sd = x.std(axis=0, ddof=1)
    assert np.all(np.abs(y.mean(axis=0) - x.mean(axis=0)) <= 1e-9 * np.abs(x.mean(axis=0)))
    gap = np.abs(np.cov(y, rowvar=False) - np.cov(x, rowvar=False)) / np.outer(sd, sd)
    assert gap.max() <= 1e-9
    assert res.n_changed_records == len(x)


def test_exact_with_missing_values_and_a_balance_edit() -> None:
    rng = np.random.default_rng(8)
    x = rng.gamma(2.0, 50.0, size=200).round(2)
    y = rng.gamma(3.0, 20.0, size=200).round(2)
    x[[3, 17]] = np.nan
    z = x + y
    df = pl.DataFrame({"x": x, "y": y, "z": z, "k": rng.integers(0, 3, size=200)})
    df = df.with_columns(pl.col("x").fill_nan(None), pl.col("z").fill_nan(None))
    method = AddNoise(method="exact", delta=0.3, balance=[("z", ["x", "y"])], seed=4)
    md = Microdata(df, numeric=["x", "y", "z"], keys=["k"])
    res = method.apply(md)
    method.verify(md, res)
    out = res.microdata.frame
    assert out.get_column("x").null_count() == 2 and out.get_column("z").null_count() == 2
    assert "k" not in res.changed
    complete = ~np.isnan(x)
    got = _matrix(out, ["x", "y", "z"])[complete]
    want = np.column_stack([x, y, z])[complete]
    np.testing.assert_allclose(got.mean(axis=0), want.mean(axis=0), rtol=1e-9)
    np.testing.assert_allclose(np.cov(got, rowvar=False), np.cov(want, rowvar=False), rtol=1e-8)


# ------------------------------------------------------------------ properties
_values = st.lists(
    st.floats(min_value=-1000, max_value=1000, allow_nan=False).map(lambda v: round(v, 2)),
    min_size=8,
    max_size=30,
)


@given(
    a=_values,
    data=st.data(),
    method=st.sampled_from(["additive", "correlated", "correlated2", "exact", "outliers"]),
    seed=st.integers(0, 2**16),
)
def test_balance_edits_hold_exactly(
    a: list[float], data: st.DataObject, method: str, seed: int
) -> None:
    n = len(a)
    b = data.draw(st.lists(st.integers(-500, 500), min_size=n, max_size=n))
    c = data.draw(st.lists(st.integers(0, 50), min_size=n, max_size=n))
    df = (
        pl.DataFrame({"a": a, "b": b, "c": c})
        .with_columns(ab=pl.col("a") + pl.col("b"))
        .with_columns(abc=pl.col("ab") + pl.col("c"))
    )
    balance = [("abc", ["ab", "c"]), ("ab", ["a", "b"])]
    noise = AddNoise(method=method, balance=balance, seed=seed)  # type: ignore[arg-type]
    md = Microdata(df, numeric=["a", "b", "c", "ab", "abc"])
    try:
        res = noise.apply(md)
    except DataError:  # exact noise on a singular covariance (e.g. a constant column pair)
        assert method == "exact"
        return
    noise.verify(md, res)
    out = res.microdata.frame
    assert (out["a"] + out["b"] == out["ab"]).all()
    assert (out["ab"] + out["c"] == out["abc"]).all()


@given(
    x=st.lists(st.floats(0, 1e6, allow_nan=False), min_size=10, max_size=60),
    q=st.floats(0.5, 0.95),
    seed=st.integers(0, 1000),
)
def test_quantile_outlier_noise_touches_only_values_above_the_quantile(
    x: list[float], q: float, seed: int
) -> None:
    y = list(reversed(x))
    df = pl.DataFrame({"x": x, "y": y})
    res = add_noise(df, numeric=["x", "y"], method="outliers", outlier_quantile=q, seed=seed)
    out = res.microdata.frame
    for col in ("x", "y"):
        values = df[col].to_numpy()
        moved = out[col].to_numpy() != values
        assert not np.any(moved & (values <= np.quantile(values, q)))
    outlier_records = res.details["outliers"]
    assert not np.any(res.changed_records & ~outlier_records)


@given(seed=st.integers(0, 1000), shift=st.floats(20, 100))
def test_mahalanobis_outlier_noise_touches_only_flagged_records(seed: int, shift: float) -> None:
    rng = np.random.default_rng(seed)
    x = rng.multivariate_normal([0, 0, 0], COV, size=120)
    x[:3] += shift  # three gross outliers
    df = pl.DataFrame({"a": x[:, 0], "b": x[:, 1], "c": x[:, 2]})
    res = add_noise(
        df, numeric=["a", "b", "c"], method="outliers", outlier_rule="mahalanobis", seed=seed
    )
    flagged = res.details["outliers"]
    assert flagged[:3].all()
    assert flagged.sum() < 20
    np.testing.assert_array_equal(res.changed_records, flagged)


@given(
    seed=st.integers(0, 2**32 - 1),
    method=st.sampled_from(["additive", "correlated", "correlated2", "exact", "outliers"]),
)
def test_same_seed_same_output_and_missing_stay_missing(seed: int, method: str) -> None:
    df = _normal_frame(25).with_columns(
        pl.when(pl.int_range(25) % 7 == 0).then(None).otherwise(pl.col("b")).alias("b")
    )
    kwargs = {"numeric": ["a", "b", "c"], "method": method}
    a = add_noise(df, seed=seed, **kwargs).microdata.frame
    b = add_noise(df, seed=np.random.default_rng(seed), **kwargs).microdata.frame
    assert a.equals(b, null_equal=True)
    assert a.get_column("b").null_count() == 4
    c = add_noise(df, seed=seed + 1, **kwargs).microdata.frame
    assert not a.equals(c)


def test_constant_variable_and_unlisted_columns_unchanged() -> None:
    df = _normal_frame(30).with_columns(const=pl.lit(7.0), label=pl.lit("x"))
    for method in ("additive", "correlated", "correlated2", "exact"):
        res = add_noise(df, numeric=["a", "b", "const"], method=method, seed=1)  # type: ignore[arg-type]
        assert set(res.changed) == {"a", "b"}
        assert res.details["constant_variables"] == ["const"]


def test_variables_parameter_and_pandas_index() -> None:
    df = _normal_frame(12).to_pandas()
    df.index = pd.Index(list("abcdefghijkl"), name="id")
    res = AddNoise(variables=["c"], seed=3).apply(df, numeric=["a", "b", "c"])
    assert set(res.changed) == {"c"}
    assert res.data.index.equals(df.index)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"noise": -1}, ParameterError, "noise"),
        ({"delta": 0}, ParameterError, "delta"),
        ({"delta": 1.5}, ParameterError, "delta"),
        ({"method": "gaussian"}, ParameterError, "method"),
        ({"outlier_rule": "iqr"}, ParameterError, "outlier_rule"),
        ({"outlier_quantile": 1.0}, ParameterError, "outlier_quantile"),
        ({"variables": ["name"]}, ColumnError, "not numeric"),
        ({"variables": ["nope"]}, ColumnError, "not in the data"),
        ({"balance": [("t", ["a", "a"])]}, ParameterError, "'balance' parameter of AddNoise"),
        ({"balance": [("a", ["b", "a"])]}, ParameterError, "total as a component"),
        ({"balance": [("a", ["b"]), ("b", ["a"])]}, ParameterError, "circular"),
        ({"balance": [("t", ["a", "name"])]}, ColumnError, "not a noise variable"),
        ({"balance": [("t", ["a", "zz"])]}, ColumnError, "'zz', which is not in the data"),
        ({"balance": "t=a+b"}, ParameterError, "balance"),
        ({"seed": -3}, ParameterError, "seed"),
        ({"variables": ["w"]}, ColumnError, "weight"),
    ],
)
def test_bad_parameters(kwargs: dict, error: type[Exception], match: str) -> None:
    df = _normal_frame(10).with_columns(
        name=pl.lit("x"), t=pl.col("a") + pl.col("b"), w=pl.lit(2.0)
    )
    with pytest.raises(error, match=match):
        AddNoise(**kwargs).apply(df, numeric=["a", "b", "c", "t"], weight="w")


def test_balance_shapes_admitted() -> None:
    """A single pair, job-file lists and a single-name component are all valid edits."""
    df = _normal_frame(12).with_columns(t=pl.col("a") + pl.col("b"), u=pl.col("c"))
    numeric = ["a", "b", "c", "t", "u"]
    reference = add_noise(df, numeric=numeric, balance=[("t", ["a", "b"]), ("u", ["c"])], seed=3)
    for balance in (
        [["t", ["a", "b"]], ["u", ["c"]]],  # TOML lists
        [("t", ("a", "b")), ("u", "c")],  # tuples, one component by name
    ):
        out = add_noise(df, numeric=numeric, balance=balance, seed=3)
        assert out.microdata.frame.equals(reference.microdata.frame)
    single = add_noise(df, numeric=["a", "b", "c", "t"], balance=("t", ["a", "b"]), seed=3)
    frame = single.microdata.frame
    assert (frame["t"] == frame["a"] + frame["b"]).all()


def test_bad_data() -> None:
    df = _normal_frame(10).with_columns(t=pl.col("a") + pl.col("b") + 1.0)
    with pytest.raises(DataError, match="does not hold"):
        add_noise(df, numeric=["a", "b", "t"], balance=[("t", ["a", "b"])])
    with pytest.raises(ColumnError, match="numeric variables"):
        add_noise(df)
    collinear = df.with_columns(d=pl.col("a") * 2 + pl.col("b"))
    with pytest.raises(DataError, match="singular"):
        add_noise(collinear, numeric=["a", "b", "d"], method="exact", seed=1)
    half = df.with_columns(
        a=pl.when(pl.int_range(10) >= 5).then(None).otherwise(pl.col("a")),
        b=pl.when(pl.int_range(10) < 5).then(None).otherwise(pl.col("b")),
    )
    with pytest.raises(DataError, match="Fewer than two"):
        add_noise(half, numeric=["a", "b"], method="correlated", seed=1)


def test_verify_detects_broken_promises() -> None:
    df = _normal_frame(40).with_columns(t=pl.col("a") + pl.col("b"), k=pl.lit(1))
    md = Microdata(df, numeric=["a", "b", "c", "t"], keys=["k"])
    method = AddNoise(method="exact", balance=[("t", ["a", "b"])], seed=2)
    res = method.apply(md)
    method.verify(md, res)
    frame = res.microdata.frame
    tampered = [
        frame.with_columns(t=pl.col("t") + 1e-6),  # edit broken
        frame.with_columns(k=pl.lit(2)),  # a non-noise variable changed
        frame.with_columns(c=pl.col("c") * 1.001),  # covariance no longer exact
    ]
    for bad in tampered:
        fake = Protected.from_frames(md, bad, method)
        with pytest.raises(AssertionError):
            method.verify(md, fake)

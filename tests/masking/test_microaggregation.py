"""Microaggregation: published MDAV figures, optimal univariate vs brute force, properties."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit import Microdata
from sdckit.errors import ColumnError, DataError, InfeasibleError, ParameterError
from sdckit.masking._mdav import mdav_labels
from sdckit.masking._microaggregation import (
    Microaggregation,
    information_loss_lower_bound,
    information_loss_sse,
    microaggregation,
)
from sdckit.masking._refine import refine_partition
from sdckit.masking._univariate import optimal_univariate_labels

# benchmarks.md A1.2 (MDAV) and A1.3 (univariate lower bound), Census = CASCrefmicrodata
CENSUS_MDAV = {3: 5.6922, 4: 7.4947, 5: 9.0884, 10: 14.1559}
CENSUS_LOWER_BOUND = {3: 0.1029, 4: 0.2340, 5: 0.3313, 10: 0.8906}


@pytest.fixture(scope="module")
def census(shared_data: Path) -> pl.DataFrame:
    return pl.read_csv(shared_data / "CASCrefmicrodata.csv")


def _zscores(x: np.ndarray) -> np.ndarray:
    return (x - x.mean(axis=0)) / x.std(axis=0)


def _sse(z: np.ndarray, labels: np.ndarray) -> float:
    counts = np.bincount(labels)
    sums = np.zeros((counts.size, z.shape[1]))
    np.add.at(sums, labels, z)
    return float(((z - sums[labels] / counts[labels, None]) ** 2).sum())


# ---------------------------------------------------------------------- published figures
@pytest.mark.parametrize("k", [3, 4, 5, 10])
def test_census_mdav_information_loss(census: pl.DataFrame, k: int) -> None:
    result = microaggregation(census, numeric=census.columns, k=k)
    assert result.details["information_loss"] == pytest.approx(CENSUS_MDAV[k], abs=1e-3)
    sizes = result.details["group_sizes"]
    assert (sizes[:-1] == k).all() and k <= sizes[-1] <= 2 * k - 1
    # the released values are the group means: recompute the loss from the output alone
    out = result.data.to_numpy()
    x = census.to_numpy().astype(float)
    z_out = (out - x.mean(axis=0)) / x.std(axis=0)
    z = _zscores(x)
    sse = float(((z - z_out) ** 2).sum())
    assert 100 * sse / z.size == pytest.approx(CENSUS_MDAV[k], abs=1e-3)


@pytest.mark.parametrize("k", [3, 4, 5, 10])
def test_census_univariate_lower_bound(census: pl.DataFrame, k: int) -> None:
    bound = information_loss_lower_bound(census, k)
    assert bound == pytest.approx(CENSUS_LOWER_BOUND[k], abs=1e-3)
    univariate = microaggregation(census, numeric=census.columns, k=k, method="univariate")
    assert univariate.details["information_loss"] == pytest.approx(bound, rel=1e-9)


def test_census_refined_beats_mdav(census: pl.DataFrame) -> None:
    x = census.to_numpy().astype(float)
    for k in (3, 4, 5, 10):
        # a short search (the default 2000 iterations reach 12-15 % below MDAV; bench script)
        result = microaggregation(
            census, numeric=census.columns, k=k, method="mdav_refined", iterations=150, seed=1
        )
        loss = result.details["information_loss"]
        sizes = result.details["group_sizes"]
        assert sizes.min() >= k and sizes.max() <= 2 * k - 1
        assert CENSUS_LOWER_BOUND[k] < loss <= 0.93 * CENSUS_MDAV[k]
        assert loss == pytest.approx(information_loss_sse(x, result.details["groups"]))
        Microaggregation(k=k, method="mdav_refined").verify(
            Microdata(census, numeric=census.columns), result
        )


# ---------------------------------------------------------------------- hand-computed
def test_small_example_by_hand() -> None:
    df = pl.DataFrame({"x": [1.0, 2.0, 3.0, 10.0, 11.0, 12.0, 30.0], "y": [0, 0, 0, 0, 0, 0, 0]})
    result = microaggregation(df, numeric=["x", "y"], k=3)
    # 7 records (2k <= 7 < 3k): the farthest from the mean (9.86) is 30, its 2 nearest are 12
    # and 11; the 4 records left form the last group.
    assert result.data["x"].to_list() == pytest.approx([4.0] * 4 + [53 / 3] * 3)
    assert result.details["group_sizes"].tolist() == [3, 4]
    assert result.data["y"].to_list() == [0.0] * 7
    assert information_loss_sse([[1.0], [2.0], [10.0], [11.0]], [0, 0, 1, 1]) == pytest.approx(
        100 * 1 / 82
    )


def test_median_aggregation() -> None:
    df = pl.DataFrame({"x": [1.0, 2.0, 9.0, 100.0, 101.0, 150.0, 151.0]})
    result = microaggregation(df, numeric="x", k=3, aggregate="median")
    # farthest from the mean (73.4) is 151, with 150 and 101; the rest {1, 2, 9, 100}
    assert result.data["x"].to_list() == [5.5] * 4 + [150.0] * 3
    Microaggregation(k=3, aggregate="median").verify(Microdata(df, numeric="x"), result)


def test_univariate_and_median_with_missing_values() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(40, 3))
    x[rng.random(size=x.shape) < 0.1] = np.nan
    frame = pl.DataFrame({"s": np.repeat([1, 2], 20), "a": x[:, 0], "b": x[:, 1], "c": x[:, 2]})
    md = Microdata(frame, numeric=["a", "b", "c"], strata="s")
    for method in ("univariate", "mdav_refined"):
        algorithm = Microaggregation(k=4, method=method, aggregate="median", iterations=20)
        result = algorithm.apply(md)
        algorithm.verify(md, result)
        n_null = sum(result.data[col].is_null().sum() for col in ("a", "b", "c"))
        n_nan = sum(frame[col].is_nan().sum() for col in ("a", "b", "c"))
        assert n_null == n_nan + result.details["suppressed"]
        assert method == "mdav_refined" or result.details["suppressed"] == 0
    groups = result.details["groups"]
    assert groups.ndim == 1 and (np.bincount(groups) >= 4).all()
    uni = Microaggregation(k=4, method="univariate").apply(md).details["groups"]
    assert uni.shape == (40, 3) and ((uni < 0) == np.isnan(x)).all()


# ---------------------------------------------------------------------- univariate optimum
def _partitions(items: list[int], k: int) -> Iterator[list[list[int]]]:
    """All set partitions of ``items`` into blocks of at least ``k`` elements."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    n_rest = len(rest)
    for mask in range(1 << n_rest):
        block = [first] + [rest[i] for i in range(n_rest) if mask >> i & 1]
        if len(block) < k:
            continue
        others = [rest[i] for i in range(n_rest) if not mask >> i & 1]
        if 0 < len(others) < k:
            continue
        for tail in _partitions(others, k):
            yield [block, *tail]


@given(
    st.lists(st.integers(-20, 20), min_size=2, max_size=8),
    st.integers(2, 3),
)
def test_optimal_univariate_equals_brute_force(values: list[int], k: int) -> None:
    x = np.array(values, dtype=float)
    if len(x) < k:
        return
    labels, sse = optimal_univariate_labels(x, k)
    best = min(
        sum(float(((x[b] - x[b].mean()) ** 2).sum()) for b in part)
        for part in _partitions(list(range(len(x))), k)
    )
    assert sse == pytest.approx(best, abs=1e-9)
    sizes = np.bincount(labels)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    assert _sse(x[:, None], labels) == pytest.approx(best, abs=1e-9)


# ---------------------------------------------------------------------- MDAV kernel
def _mdav_reference(z: np.ndarray, k: int) -> np.ndarray:
    """Plain float64 numpy MDAV (methods.md M6.1), ties to the lowest index."""
    n = len(z)
    labels = np.full(n, -1)
    if n < 2 * k:
        return np.zeros(n, dtype=np.int64)
    rest = np.arange(n)

    def farthest(q: np.ndarray, rows: np.ndarray) -> int:
        d = ((z[rows] - q) ** 2).sum(axis=1)
        return int(rows[np.flatnonzero(d == d.max())[0]])

    def take(centre: int, rows: np.ndarray, label: int) -> np.ndarray:
        d = ((z[rows] - z[centre]) ** 2).sum(axis=1)
        d[rows == centre] = -1.0
        group = rows[np.lexsort((rows, d))[:k]]
        labels[group] = label
        return rows[~np.isin(rows, group)]

    label = 0
    while len(rest) >= 3 * k:
        r = farthest(z[rest].mean(axis=0), rest)
        s = farthest(z[r], rest)
        rest = take(r, rest, label)
        label += 1
        if labels[s] < 0:
            rest = take(s, rest, label)
            label += 1
    if len(rest) >= 2 * k:
        rest = take(farthest(z[rest].mean(axis=0), rest), rest, label)
        label += 1
    labels[rest] = label
    return labels


@given(st.integers(2, 150), st.integers(1, 5), st.integers(2, 6), st.integers(0, 10**6))
def test_mdav_kernel_equals_plain_implementation(n: int, p: int, k: int, seed: int) -> None:
    if n < k:
        return
    rng = np.random.default_rng(seed)
    # integer grids give many exact ties; the kernel must break them the same way
    z = rng.integers(0, 3, size=(n, p)).astype(float) if seed % 2 else rng.normal(size=(n, p))
    np.testing.assert_array_equal(mdav_labels(z, k), _mdav_reference(z, k))


def test_mdav_kernel_equals_plain_implementation_on_census(census: pl.DataFrame) -> None:
    z = _zscores(census.to_numpy().astype(float))
    for k in (3, 10):
        np.testing.assert_array_equal(mdav_labels(z, k), _mdav_reference(z, k))


# ---------------------------------------------------------------------- properties
matrices = st.tuples(st.integers(6, 60), st.integers(1, 4), st.integers(2, 5), st.integers(0, 99))


def _data(n: int, p: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, p)) * rng.uniform(0.5, 50, size=p)
    if seed % 3 == 0:  # many ties
        x = np.round(x / 20)
    return x


@given(matrices)
def test_mdav_group_sizes_and_means(args: tuple[int, int, int, int]) -> None:
    n, p, k, seed = args
    if n < k:
        return
    x = _data(n, p, seed)
    frame = pl.DataFrame({f"v{j}": x[:, j] for j in range(p)})
    before = frame.clone()
    md = Microdata(frame, numeric=frame.columns)
    result = Microaggregation(k=k).apply(md)
    assert frame.equals(before)
    sizes = result.details["group_sizes"]
    if n >= 2 * k:
        assert (sizes[:-1] == k).all()
    assert k <= sizes[-1] <= 2 * k - 1 or (n < 2 * k and sizes.tolist() == [n])
    Microaggregation(k=k).verify(md, result)
    again = Microaggregation(k=k).apply(md)
    assert again.microdata.frame.equals(result.microdata.frame)


@given(matrices)
def test_refined_never_worse_and_sizes_bounded(args: tuple[int, int, int, int]) -> None:
    n, p, k, seed = args
    if n < 2 * k:
        return
    z = _zscores(_data(n, p, seed) + np.arange(n)[:, None] * 1e-9)
    start = mdav_labels(z, k)
    refined = refine_partition(z, start, k)
    sizes = np.bincount(refined)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    assert _sse(z, refined) <= _sse(z, start) + 1e-9
    searched = refine_partition(z, start, k, iterations=5, seed=seed)
    assert np.array_equal(searched, refine_partition(z, start, k, iterations=5, seed=seed))
    sizes = np.bincount(searched)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    assert _sse(z, searched) <= _sse(z, refined) + 1e-9
    lower = sum(optimal_univariate_labels(z[:, j], k)[1] for j in range(p))
    assert _sse(z, refined) >= lower - 1e-9


@given(st.integers(0, 40))
def test_strata_are_aggregated_separately(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 30
    frame = pl.DataFrame({"s": rng.integers(0, 3, size=n), "x": rng.normal(size=n)})
    if (np.bincount(frame["s"].to_numpy(), minlength=3) < 3).any():
        with pytest.raises(InfeasibleError, match="fewer than k=3"):
            microaggregation(frame, numeric="x", strata="s", k=3)
        return
    md = Microdata(frame, numeric="x", strata="s")
    method = Microaggregation(k=3)
    result = method.apply(md)
    method.verify(md, result)
    groups = result.details["groups"]
    strata = frame["s"].to_numpy()
    for g in np.unique(groups):
        assert len(np.unique(strata[groups == g])) == 1
    # same as aggregating each stratum on its own
    for s in np.unique(strata):
        part = frame.filter(pl.col("s") == s)
        alone = microaggregation(part, numeric="x", k=3).data["x"].to_numpy()
        np.testing.assert_allclose(result.data["x"].to_numpy()[strata == s], alone)


def test_pandas_index_and_missing_values() -> None:
    df = pd.DataFrame(
        {"a": [1.0, 2.0, np.nan, 4.0, 5.0, 6.0], "b": [1, 1, 2, 9, 9, 9], "c": list("uvwxyz")},
        index=[10, 11, 12, 13, 14, 15],
    )
    result = microaggregation(df, numeric=["a", "b"], k=3)
    out = result.data
    assert out.index.tolist() == [10, 11, 12, 13, 14, 15]
    assert np.isnan(out["a"].iloc[2])
    assert out["c"].tolist() == list("uvwxyz")
    g = result.details["groups"]
    assert g[0] == g[1] == g[2] and g[3] == g[4] == g[5]
    # only 2 observed values of "a" in the first group: a mean of 2 would disclose too much
    assert out["a"].iloc[:3].isna().all() and result.details["suppressed"] == 2
    assert out["a"].iloc[3] == 5.0 and out["b"].iloc[0] == pytest.approx(4 / 3)
    Microaggregation(k=3).verify(Microdata(df, numeric=["a", "b"]), result)
    with pytest.raises(DataError, match="every aggregated variable missing"):
        microaggregation(df.assign(b=[1, 1, np.nan, 9, 9, 9.0]), numeric=["a", "b"], k=2)


def test_bad_input() -> None:
    df = pl.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "s": ["a", "b", "c", "d"]})
    with pytest.raises(ParameterError, match="'k'"):
        microaggregation(df, numeric="x", k=1)
    with pytest.raises(ParameterError, match="'k'"):
        microaggregation(df, numeric="x", k=5)
    with pytest.raises(ParameterError, match="'method'"):
        microaggregation(df, numeric="x", method="kmeans")  # type: ignore[arg-type]
    with pytest.raises(ColumnError, match="'s'"):
        Microaggregation(variables=["s"]).apply(df)
    with pytest.raises(ColumnError, match="numeric variables"):
        Microaggregation().apply(df)
    with pytest.raises(DataError, match="infinite"):
        microaggregation(df.with_columns(x=pl.Series([1.0, np.inf, 2.0, 3.0])), numeric="x")

"""The cell key method for magnitudes: flex function, cellKey's key scrambling, numeric ptables.

Published values: the R package cellKey (github.com/sdcTools/cellKey, version 1.0.2),
``tests/testthat/test_numvars.R`` (the parameters of ``ck_params_nums`` with
``ptable::pt_ex_nums()``: 96 ptable rows, mean p 0.042, ``E = 1.34``, separation point 0) and
its vignette's flex parameters; the ptable's design is ``ptable::create_num_ptable``
(github.com/sdcTools/ptable ``R/pt_create_pTable.R``).  The other expected values are computed
by hand in the comments from the method's definition (module docstring of
``sdckit.tables.cellkey_magnitude``).
"""

from __future__ import annotations

from functools import cache

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdckit.errors import InfeasibleError, ParameterError
from sdckit.tables import (
    CellKeyMagnitudes,
    CellStatus,
    MagnitudePTable,
    Table,
    cell_key_magnitudes,
    default_magnitude_ptable,
    flex_function,
    ptable_magnitudes,
    scrambled_keys,
)


@cache
def _small_ptable() -> MagnitudePTable:
    """A cheap numeric ptable for the property tests (rows 0, 1, 3)."""
    return ptable_magnitudes(D=3, V=1.0, step=2, icat=[1, 3])


def _hand_ptable() -> MagnitudePTable:
    """A ptable written by hand: row 1 v = -1, 0, 1; row 2 v = -2 .. 2."""
    rows = [
        (0.0, 0.0, 0.0, 1.0),
        (1.0, 0.0, -1.0, 0.25),
        (1.0, 1.0, 0.0, 0.5),
        (1.0, 2.0, 1.0, 0.25),
        (2.0, 0.0, -2.0, 0.1),
        (2.0, 1.0, -1.0, 0.2),
        (2.0, 2.0, 0.0, 0.4),
        (2.0, 3.0, 1.0, 0.2),
        (2.0, 4.0, 2.0, 0.1),
    ]
    f = pl.DataFrame(rows, schema=["i", "j", "v", "p"], orient="row")
    f = f.with_columns(pl.col("p").cum_sum().over("i").round(8).alias("p_int_ub"))
    f = f.with_columns((pl.col("p_int_ub") - pl.col("p")).alias("p_int_lb"))
    return MagnitudePTable(f.select("i", "j", "v", "p", "p_int_lb", "p_int_ub"), 2, 1.0, 1)


# ------------------------------------------------------------------ published and hand values
def test_flex_function_hand_values() -> None:
    # cellKey's test parameters: fp = 1000, p = (0.20, 0.03), q = 2
    kw = {"fp": 1000.0, "p_small": 0.2, "p_large": 0.03, "q": 2.0}
    # x = 3000: f1 = (600 - 30) / 30 = 19, f2 = (2000 / 4000)^2 = 0.25, m = 0.03 (1 + 4.75)
    assert flex_function([3000.0], **kw)[0] == pytest.approx(0.1725)
    # up to and at the flex point: p_small (the function is continuous there)
    assert flex_function([10.0, 999.0, 1000.0], **kw) == pytest.approx([0.2, 0.2, 0.2])
    # far above: towards p_large, never below it for q > 1
    big = flex_function([1e6, 1e9], **kw)
    assert np.all(big >= 0.03) and big[1] == pytest.approx(0.03, rel=1e-3)
    assert np.all(np.diff(flex_function(np.linspace(1000, 1e5, 50), **kw)) < 0)


def test_scrambled_keys_as_cellkey_rotates_digits() -> None:
    # cellKey's .scramble_ckeys on the key's decimal digits (R prints no trailing zeros)
    assert scrambled_keys([0.12345], 3).tolist() == [[0.12345, 0.23451, 0.34512]]
    assert scrambled_keys([0.12345], 2, same_key=False).tolist() == [[0.23451, 0.34512]]
    # "0.5" without the same key: "0." + "0" + "5"; then "0.50"
    assert scrambled_keys([0.5], 2, same_key=False).tolist() == [[0.05, 0.5]]
    assert scrambled_keys([0.012], 3).tolist() == [[0.012, 0.12, 0.201]]
    assert scrambled_keys([0.0], 2).tolist() == [[0.0, 0.0]]
    # keys of 10 and 12 digits (record keys of digits = 12) keep every digit
    assert scrambled_keys([0.1234567891], 2).tolist() == [[0.1234567891, 0.2345678911]]
    assert scrambled_keys([0.123456789012], 2)[0, 1] == 0.234567890121


def test_pt_ex_nums_as_in_cellkey_tests() -> None:
    pt = default_magnitude_ptable()  # ptable::pt_ex_nums(parity = TRUE, separation = FALSE)
    f = pt.frame
    assert f.height == 96  # cellKey: dim(pp$ptab) == c(96, 7)
    assert round(float(f["p"].mean()), 3) == 0.042  # cellKey: round(mean(pp$ptab$p), 3)
    assert pt.rows.tolist() == [0.0, 1.0, 5.0, 10.0]
    stats = f.group_by("i").agg(
        pl.col("p").sum().alias("total"),
        (pl.col("p") * pl.col("v")).sum().alias("mean"),
        (pl.col("p") * pl.col("v") ** 2).sum().alias("var"),
        pl.col("j").min().alias("lo"),
        pl.len().alias("n"),
    )
    stats = stats.sort("i")
    assert stats["n"].to_list() == [1, 23, 31, 41]  # targets 1/2 apart, never below 0
    assert stats["lo"].to_list() == [0.0, 0.0, 0.0, 0.0]
    assert stats["total"].to_numpy() == pytest.approx(1.0)
    assert np.abs(stats["mean"].to_numpy()).max() < 1e-6
    var = stats["var"].to_numpy()
    assert var[1] == pytest.approx(3.0, abs=1e-6)  # optim 4 in row 1: exactly V
    assert np.all(var <= 3.0 + 1e-6)
    # E = 1 + 0.5^2 + 0.3^2 = 1.34 and no separation point without a small-cell ptable
    m = CellKeyMagnitudes(fp=1000, p_small=0.2, p_large=0.03, epsilon=[1, 0.5, 0.3], q=2)
    assert float(np.sum(m.weights() ** 2)) == pytest.approx(1.34)
    assert m.separation_point() == 0.0


def test_separation_point_of_the_vignette() -> None:
    # ptable::pt_ex_nums(separation = TRUE)$small_cells: D = 5, V = 1, step 5, rows 1, 3, 5;
    # the variance bound binds in the last row, so m1 = 1, and with the vignette's flex
    # parameters (p = (0.3, 0.03), epsilon = (1, 0.5, 0.2)): z_s = 1 / (sqrt(1.29) 0.3)
    small = ptable_magnitudes(D=5, V=1.0, step=5, icat=[1, 3, 5], optim=[4, 1, 1])
    assert small.frame.height == 1 + 31 + 41 + 51
    assert small.max_variance == pytest.approx(1.0, abs=1e-6)
    m = CellKeyMagnitudes(fp=1000, p_small=0.3, p_large=0.03, small_ptable=small)
    assert m.separation_point() == pytest.approx(1.0 / (np.sqrt(1.29) * 0.3), rel=1e-6)


def _one_dim(values: list[float], top: list[list[float]], n: list[int]) -> Table:
    return Table.from_array(
        np.array(values),
        {"g": ["a", "b"]},
        n_contributors=np.array(n),
        top=np.array(top),
        kind="magnitude",
    )


def test_three_components_by_hand() -> None:
    # cell a: T = 1000, top 600, 300, 100; fp = 100, p = (0.2, 0.05), q = 2, eps 1, .5, .2
    t = _one_dim([1015.0, 1000.0, 15.0], [[600, 300, 100], [600, 300, 100], [10, 5, 0]], [5, 3, 2])
    m = CellKeyMagnitudes(
        fp=100, p_small=0.2, p_large=0.05, q=2, epsilon=[1, 0.5, 0.2], ptable=_hand_ptable()
    )
    res = m.apply(t, [0.0, 0.95, 0.72])
    # keys of cell a: 0.95, 0.59, 0.95
    assert res.cell_keys[1].tolist() == [0.95, 0.59, 0.95]
    # j = 1: m(600) = 0.05 (1 + 23 (200/700)^2) = 0.143877551; d = 86.3265306; a = 11.6 -> row 2
    # (cut at D), key 0.95 -> v = 2: noise 172.6530612, T = 1172.6530612
    # j = 2: m(300) = 0.05 (1 + 11 / 4) = 0.1875; d = 300 * 0.1875 * 0.5 = 28.125; key 0.59 ->
    # v = 0: no noise
    # j = 3: m(100) = 0.2 (the flex point); d = 100 * 0.2 * 0.2 = 4; key 0.95 -> v = 2: noise 8
    assert res.magnitude[1] == pytest.approx([86.3265306, 28.125, 4.0])
    assert res.deviation[1].tolist() == [2.0, 0.0, 2.0]
    assert res.perturbed[1] == pytest.approx(1180.6530612)
    # cell b: T = 15, top 10, 5 (two contributors); with p_small = 1: d = 10, a = 1.5 between
    # rows 1 and 2: key 0.72 gives v = 0 in row 1 and v = 1 in row 2: v = 0.5, noise 5, T = 20;
    # j = 2: d = 5 * 1 * 0.5 = 2.5, a = 8 -> row 2, key 0.27 (0.72 rotated) -> v = -1: T = 17.5
    m2 = CellKeyMagnitudes(fp=100, p_small=1.0, p_large=0.05, top_k=2, epsilon=[1, 0.5])
    res2 = m2.set_params(ptable=_hand_ptable()).apply(t, [0.0, 0.95, 0.72])
    assert res2.cell_keys[2].tolist() == [0.72, 0.27]
    assert res2.deviation[2].tolist() == [0.5, -1.0]
    assert res2.noise[2].tolist() == [5.0, -2.5]
    assert res2.perturbed[2] == pytest.approx(17.5)
    # the empty total key (0) and a third component of a cell with two contributors: no noise
    assert res2.noise[0].tolist() == [0.0, 0.0] and res.noise[2, 2] == 0.0


def test_small_value_never_crosses_zero_and_mu_c() -> None:
    # cell a: T = 5 from contributions 10 and -5: d = 10 > |T|, so d = T = 5 and a = 1 (row 1);
    # key 0.05 -> v = -1: noise -5, T = 0.  As a primary with mu_c = 1: -5 (1 + 1) = -10, cut
    # at -5 (the value never crosses zero)
    t = _one_dim([25.0, 5.0, 20.0], [[20, 10, 0], [10, -5, 0], [20, 0, 0]], [3, 2, 1])
    m = CellKeyMagnitudes(fp=100, p_small=1.0, p_large=0.05, top_k=1, ptable=_hand_ptable())
    res = m.apply(t, [0.0, 0.05, 0.9])
    assert res.magnitude[1, 0] == 5.0 and res.deviation[1, 0] == -1.0
    assert res.perturbed[1] == 0.0
    primary = t.suppress(np.array([False, True, True]), CellStatus.PRIMARY)
    res_mu = m.set_params(mu_c=1.0).apply(primary, [0.0, 0.05, 0.9])
    assert res_mu.perturbed[1] == 0.0
    # cell b: T = 20, d = 20 = |T| (not above it): a = 1, key 0.9 -> v = 1; primary with
    # mu_c = 1: noise 20 (1 + 1) = 40
    assert res.perturbed[2] == 40.0
    assert res_mu.perturbed[2] == 60.0


# ------------------------------------------------------------------ errors
def test_bad_parameters_are_named() -> None:
    t = _one_dim([3.0, 2.0, 1.0], [[2], [2], [1]], [2, 1, 1])
    with pytest.raises(ParameterError, match="'epsilon'"):
        CellKeyMagnitudes(fp=10, top_k=2, epsilon=[1, 0.5, 0.2]).apply(t, [0, 0.1, 0.2])
    with pytest.raises(ParameterError, match="'epsilon'"):
        CellKeyMagnitudes(fp=10, top_k=2, epsilon=[0.5, 0.2]).apply(t, [0, 0.1, 0.2])
    with pytest.raises(ParameterError, match="'p_large'"):
        CellKeyMagnitudes(fp=10, p_small=0.1, p_large=0.2).apply(t, [0, 0.1, 0.2])
    with pytest.raises(ParameterError, match="'top_k' parameter of CellKeyMagnitudes"):
        CellKeyMagnitudes(fp=10, top_k=7).apply(t, [0, 0.1, 0.2])
    with pytest.raises(ParameterError, match="'fp' parameter of CellKeyMagnitudes"):
        CellKeyMagnitudes(fp=0).apply(t, [0, 0.1, 0.2])
    with pytest.raises(ParameterError, match="cell keys"):
        CellKeyMagnitudes(fp=10).apply(t, [0.1, 0.2])
    df = pl.DataFrame({"id": [1, 2], "g": ["a", "b"], "v": [1.0, 2.0]})
    with pytest.raises(ParameterError, match="Did you mean 'fp'"):
        cell_key_magnitudes(df, ["g"], "v", fpp=10)
    with pytest.raises(ParameterError, match="needs the parameter 'fp'"):
        cell_key_magnitudes(df, ["g"], "v")
    with pytest.raises(ParameterError, match="by name"):
        cell_key_magnitudes(df, ["g"], "v", 10)
    with pytest.raises(ParameterError, match="'icat'"):
        ptable_magnitudes(D=4, V=1.0, icat=[1, 2])
    with pytest.raises(ParameterError, match="'optim'"):
        ptable_magnitudes(D=4, V=1.0, optim=[1, 4, 1])
    with pytest.raises(ParameterError, match="below 50"):
        ptable_magnitudes(D=10, V=1.0, step=5)
    with pytest.raises(InfeasibleError, match="class 1"):
        ptable_magnitudes(D=1, V=5.0, optim=4)  # a variance of 5 with |v| <= 1


# ------------------------------------------------------------------ properties
_records = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from(["x", "y"]),
        st.integers(0, 5000),
    ),
    min_size=2,
    max_size=25,
)


def _frame(rows: list[tuple[str, str, int]]) -> pl.DataFrame:
    g, h, v = zip(*rows, strict=True)
    return pl.DataFrame({"id": list(range(len(rows))), "g": g, "h": h, "v": [float(x) for x in v]})


_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_KW = {"fp": 500.0, "p_small": 0.3, "p_large": 0.05, "q": 2.0}


@_SETTINGS
@given(rows=_records, seed=st.integers(0, 1000), mu=st.sampled_from([0.0, 1.5]))
def test_properties_same_keys_zero_cells_bound(
    rows: list[tuple[str, str, int]], seed: int, mu: float
) -> None:
    df = _frame(rows)
    pt = _small_ptable()
    run = {"key_columns": "id", "seed": seed, "ptable": pt, "mu_c": mu, **_KW}
    res = cell_key_magnitudes(df, ["g", "h"], "v", **run)
    again = cell_key_magnitudes(df, ["g", "h"], "v", **run)
    # the records' keys are the seed: the same keys give the same output
    assert np.array_equal(res.perturbed, again.perturbed)
    vals = res.table.values
    # zero cells (empty or of zero value) stay zero; no value changes sign
    assert np.all(res.perturbed[vals == 0] == 0)
    assert np.all(res.perturbed >= 0)
    # each component's noise is at most the ptable's largest deviation (plus mu_c on the
    # first) times its flex magnitude
    bound = np.abs(res.magnitude) * (pt.D + np.array([mu, 0.0, 0.0]))
    assert np.all(np.abs(res.noise) <= bound + 1e-9)
    assert np.allclose(res.perturbed - vals, res.noise.sum(axis=1))


@_SETTINGS
@given(rows=_records, seed=st.integers(0, 1000))
def test_property_same_contributors_same_noise_in_two_tables(
    rows: list[tuple[str, str, int]], seed: int
) -> None:
    df = _frame(rows)
    run = {"key_columns": "id", "seed": seed, "ptable": _small_ptable(), **_KW}
    two = cell_key_magnitudes(df, ["g", "h"], "v", **run).to_frame()
    one = cell_key_magnitudes(df, ["g"], "v", **run).to_frame()
    # the margin g of the two-way table has the contributors of the cell g of the one-way one
    margin = two.filter(pl.col("h") == "Total").drop("h").sort("g")
    assert margin["cell_key"].to_list() == one.sort("g")["cell_key"].to_list()
    assert margin["perturbed"].to_numpy() == pytest.approx(one.sort("g")["perturbed"].to_numpy())


def test_zero_values_leave_the_cell_key_alone_unless_asked() -> None:
    df = pl.DataFrame({"id": [1, 2, 3], "g": ["a", "a", "b"], "v": [5.0, 0.0, 7.0]})
    run = {"key_columns": "id", "ptable": _small_ptable(), **_KW}
    without = cell_key_magnitudes(df, ["g"], "v", **run)
    with_zero = cell_key_magnitudes(df, ["g"], "v", use_zero_keys=True, **run)
    only = cell_key_magnitudes(df.filter(pl.col("v") != 0), ["g"], "v", **run)
    # a record of value 0 does not change the cell key (cellKey's use_zero_rkeys = FALSE)
    assert without.cell_keys[:, 0].tolist() == only.cell_keys[:, 0].tolist()
    assert with_zero.cell_keys[1, 0] != without.cell_keys[1, 0]
    assert without.summary().rows[0] == ("cells", 3)


def test_rules_mark_the_sensitive_cells() -> None:
    from sdckit.tables import Dominance

    df = pl.DataFrame(
        {"id": range(6), "g": ["a", "a", "a", "b", "b", "b"], "v": [900.0, 5, 5, 30, 30, 40]}
    )
    run = {"key_columns": "id", "ptable": _small_ptable(), "top_k": 1, "epsilon": [1.0]}
    run |= {"fp": 500.0, "p_small": 0.05, "p_large": 0.01}  # small noise: no cut at zero
    plain = cell_key_magnitudes(df, ["g"], "v", **run)
    extra = cell_key_magnitudes(df, ["g"], "v", mu_c=2.0, sensitive=[Dominance(n=1, k=80)], **run)
    # the total (900 of 1010) and cell a are dominated by one contribution
    assert extra.table.primary.tolist() == [True, True, False]
    # the dominated cell a gets |v| + 2 times its magnitude; the others are unchanged
    d = plain.magnitude[1, 0]
    assert abs(extra.noise[1, 0]) == pytest.approx(d * (abs(plain.deviation[1, 0]) + 2.0))
    assert extra.noise[2, 0] == plain.noise[2, 0]


def test_the_documented_example_runs() -> None:
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "cellkey.md"
    blocks = re.findall(r"^```python\n(.*?)^```", doc.read_text(encoding="utf-8"), re.S | re.M)
    assert blocks
    namespace: dict[str, object] = {"print": lambda *a, **k: None}
    for block in blocks:
        exec(compile(block, "docs/cellkey.md", "exec"), namespace)
    res = namespace["res"]
    assert res.perturbed.shape == (4,)  # type: ignore[attr-defined]
    # A is dominated (9000 of 9420), C has one contributor: primaries with the extra mu_c
    assert res.table.primary.tolist() == [False, True, False, True]  # type: ignore[attr-defined]


def test_noise_has_mean_zero_over_the_keys() -> None:
    # zero-mean ptable rows, and interpolation between two rows with the same key, give noise
    # of mean zero: over many cells far from zero (no cut), the mean of v is near 0 and its
    # variance near V (rows 1 and 3 of the small ptable, exact and interpolated positions)
    rng = np.random.default_rng(5)
    n = 4000
    keys = np.round(rng.random(n), 8)
    pt = _small_ptable()
    for a in (1.0, 2.0, 3.0, 7.0):
        v = pt.deviations(keys, np.full(n, a))
        assert abs(v.mean()) < 0.05, a
        assert np.all(np.abs(v) <= pt.D)
    v3 = pt.deviations(keys, np.full(n, 3.0))
    assert np.var(v3) == pytest.approx(1.0, rel=0.1)


def test_odd_cells_use_their_own_ptable() -> None:
    # cellKey's parity case (top_k = 1): even contributor counts look up `ptable`, odd ones
    # `ptable_odd`; here the odd ptable never changes a value (every row v = 0)
    still = pl.DataFrame(
        {"i": [0.0, 1.0, 2.0], "j": [0.0, 1.0, 2.0], "v": [0.0] * 3, "p": [1.0] * 3}
    ).with_columns(pl.lit(0.0).alias("p_int_lb"), pl.lit(1.0).alias("p_int_ub"))
    odd_pt = MagnitudePTable(still.select("i", "j", "v", "p", "p_int_lb", "p_int_ub"), 2, 1.0, 1)
    t = _one_dim([30.0, 20.0, 10.0], [[10, 10], [10, 10], [10, 0]], [3, 2, 1])
    kw = {"fp": 100, "p_small": 1.0, "top_k": 1, "epsilon": [1.0], "ptable": _hand_ptable()}
    res = CellKeyMagnitudes(**kw, ptable_odd=odd_pt).apply(t, [0.95, 0.95, 0.95])
    # even cell a (2 contributors): d = 10, a = 2, key 0.95 -> v = 2 in the hand ptable
    assert res.perturbed.tolist() == [30.0, 40.0, 10.0]
    with pytest.raises(ParameterError, match="'ptable_odd'"):
        CellKeyMagnitudes(fp=100, ptable_odd=odd_pt).apply(t, [0.1, 0.2, 0.3])


@_SETTINGS
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(-300, 300)),
        min_size=2,
        max_size=20,
    ),
    seed=st.integers(0, 1000),
)
def test_property_mixed_signs_never_cross_zero(rows: list[tuple[str, int]], seed: int) -> None:
    g, v = zip(*rows, strict=True)
    df = pl.DataFrame({"id": list(range(len(rows))), "g": g, "v": [float(x) for x in v]})
    res = cell_key_magnitudes(
        df, ["g"], "v", key_columns="id", seed=seed, ptable=_small_ptable(), mu_c=1.0, **_KW
    )
    vals = res.table.values
    # a perturbed value keeps its sign or becomes 0; zero stays zero
    assert np.all(res.perturbed * np.sign(vals) >= 0)
    assert np.all(res.perturbed[vals == 0] == 0)


def test_mean_and_sum_bases_by_hand() -> None:
    # cellKey's type = "mean" / "sum": one component from the cell mean or the cell value.
    # p_small = 1, fp = 100, keys 0.95 (v = 1 in row 1, v = 2 in row 2 of the hand ptable)
    t = _one_dim([30.0, 20.0, 10.0], [[10, 10], [10, 10], [10, 0]], [3, 2, 1])
    kw = {"fp": 100, "p_small": 1.0, "top_k": 1, "epsilon": [1.0], "ptable": _hand_ptable()}
    keys = [0.95, 0.95, 0.95]
    # means 10, 10, 10: d = 10; a = 3 (cut at 2), 2, 1: v = 2, 2, 1
    mean = CellKeyMagnitudes(**kw, base="mean").apply(t, keys)
    assert mean.magnitude[:, 0].tolist() == [10.0, 10.0, 10.0]
    assert mean.perturbed.tolist() == [50.0, 40.0, 20.0]
    # the values themselves: d = T, a = 1, v = 1: every value doubles
    total = CellKeyMagnitudes(**kw, base="sum").apply(t, keys)
    assert total.perturbed.tolist() == [60.0, 40.0, 20.0]
    with pytest.raises(ParameterError, match="'base' parameter"):
        CellKeyMagnitudes(fp=100, base="mean").apply(t, keys)  # top_k 3

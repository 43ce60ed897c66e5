"""PRAM: worked example E5, invariance, unbiased estimation, control of combinations."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit import Microdata
from sdckit.errors import ColumnError, ParameterError, VerificationError
from sdckit.masking._pram import (
    Pram,
    generate_transition,
    invariant_transition,
    pram,
    pram_estimate,
)
from sdckit.protection import Protected
from sdckit.utility import pram_entropy

E5_P = np.array(
    [
        [0.8264, 0.0579, 0.0579, 0.0579],
        [0.0427, 0.8718, 0.0427, 0.0427],
        [0.0479, 0.0479, 0.8563, 0.0479],
        [0.0598, 0.0598, 0.0598, 0.8207],
    ]
)
E5_T = np.array([25.0, 30.0, 50.0, 10.0])
E5_R_STAR = np.array(
    [
        [0.8478, 0.0496, 0.0740, 0.0287],
        [0.0413, 0.8764, 0.0598, 0.0225],
        [0.0370, 0.0359, 0.9058, 0.0213],
        [0.0716, 0.0674, 0.1067, 0.7543],
    ]
)


def test_worked_example_e5() -> None:
    r_star, alpha = invariant_transition(E5_P, E5_T, alpha=0.5)
    assert alpha == 0.5
    # to 4 decimals; one entry differs in the 4th decimal because P is printed rounded
    np.testing.assert_allclose(r_star, E5_R_STAR, atol=1.01e-4)
    assert np.count_nonzero(np.abs(r_star.round(4) - E5_R_STAR) > 1e-9) <= 1
    np.testing.assert_allclose(E5_T @ r_star, E5_T, rtol=1e-12)
    np.testing.assert_allclose(r_star.sum(axis=1), 1.0)


def test_alpha_from_target_diagonal() -> None:
    r_star, alpha = invariant_transition(E5_P, E5_T, target_min_diagonal=0.9)
    assert np.diag(r_star).min() == pytest.approx(0.9)
    assert 0 < alpha < 1
    np.testing.assert_allclose(E5_T @ r_star, E5_T, rtol=1e-12)


def test_generated_matrix() -> None:
    p = generate_transition(5, min_diagonal=0.7, seed=1)
    assert np.all(np.diag(p) >= 0.7)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    off = p[~np.eye(5, dtype=bool)].reshape(5, 4)
    np.testing.assert_allclose(off, off[:, :1].repeat(4, axis=1))


def _data(n: int = 400, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame({"v": rng.choice(["a", "b", "c", "d"], n, p=[0.4, 0.3, 0.2, 0.1])})


def test_invariant_pram_keeps_expected_frequencies() -> None:
    df = _data()
    levels = ["a", "b", "c", "d"]
    t = np.array([(df["v"] == lv).sum() for lv in levels], dtype=float)
    runs = []
    for seed in range(200):
        out = pram(df, variables=["v"], seed=seed).data
        runs.append([(out["v"] == lv).sum() for lv in levels])
    runs = np.array(runs, dtype=float)
    se = runs.std(axis=0, ddof=1) / np.sqrt(len(runs))
    assert np.all(np.abs(runs.mean(axis=0) - t) < 3 * se + 1e-9)
    assert runs.std(axis=0).max() > 0  # values were really perturbed


def test_estimator_is_unbiased() -> None:
    df = _data(500, seed=2)
    p = generate_transition(4, min_diagonal=0.75, diagonal="fixed")
    levels = ["a", "b", "c", "d"]
    t = np.array([(df["v"] == lv).sum() for lv in levels], dtype=float)
    estimates = []
    for seed in range(200):
        out = pram(df, variables=["v"], transition=p, invariant=False, seed=seed).data
        released = np.array([(out["v"] == lv).sum() for lv in levels], dtype=float)
        estimates.append(pram_estimate(released, p).estimate)
    estimates = np.array(estimates)
    se = estimates.std(axis=0, ddof=1) / np.sqrt(len(estimates))
    assert np.all(np.abs(estimates.mean(axis=0) - t) < 3 * se)
    # the analytic variance matches the Monte-Carlo one within 25 %
    analytic = pram_estimate(t @ p, p).standard_error
    np.testing.assert_allclose(estimates.std(axis=0, ddof=1), analytic, rtol=0.25)


def test_strata_and_missing_values() -> None:
    rng = np.random.default_rng(3)
    v = pl.Series(rng.choice(["x", "y", None], 300).tolist(), dtype=pl.String)
    df = pl.DataFrame({"v": v, "s": np.repeat([1, 2, 3], 100)})
    md = Microdata(df, keys=["v"], strata="s")
    res = Pram(variables=["v"], seed=1).apply(md)
    assert len(res.details["transition"]["v"]) == 3
    assert res.data["v"].is_null().to_list() == df["v"].is_null().to_list()


@given(seed=st.integers(0, 10_000))
def test_no_forbidden_combination(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 120
    age = rng.choice(["child", "adult"], n)
    marital = np.where(age == "child", "single", rng.choice(["single", "married"], n))
    df = pl.DataFrame({"age": age, "marital": marital})
    res = pram(
        df,
        variables=["age", "marital"],
        forbidden=[{"age": "child", "marital": "married"}],
        min_diagonal=0.5,
        seed=seed,
    )
    out = res.data
    assert out.filter((pl.col("age") == "child") & (pl.col("marital") == "married")).height == 0


def test_must_exist_combinations() -> None:
    df = pl.DataFrame({"a": [1, 1, 2, 2] * 30, "b": [1, 2, 1, 1] * 30})
    res = pram(df, variables=["a", "b"], must_exist=[["a", "b"]], min_diagonal=0.5, seed=4)
    combos = set(res.data.select("a", "b").unique().iter_rows())
    assert combos <= {(1, 1), (1, 2), (2, 1)}


def test_information_loss_details() -> None:
    df = _data()
    res = pram(df, variables=["v"], transition=np.eye(4), invariant=False, seed=1)
    assert res.n_changed_records == 0
    assert res.details["expected_share_changed"]["v"] == 0
    assert pram_entropy(np.eye(4), [1, 1, 1, 1]) == 0


def test_errors() -> None:
    df = _data()
    with pytest.raises(ParameterError, match="square"):
        pram(df, variables=["v"], transition=np.ones((2, 3)) / 3)
    with pytest.raises(ParameterError, match="4 levels"):
        pram(df, variables=["v"], transition=np.eye(3))
    with pytest.raises(ColumnError, match="'nope'"):
        pram(df, variables=["nope"])
    with pytest.raises(ParameterError, match="singular"):
        pram_estimate([1, 1], [[0.5, 0.5], [0.5, 0.5]])


def test_all_missing_variable_and_nan_kept() -> None:
    df = pl.DataFrame(
        {
            "a": pl.Series([None] * 6, dtype=pl.String),
            "b": [1.0, float("nan"), 2.0, 1.0, 2.0, None],
        }
    )
    out = pram(df, variables=["a", "b"], seed=1, min_diagonal=0.5).data
    assert out["a"].null_count() == 6
    assert out["b"].is_nan().fill_null(False).to_list()[1]
    assert out["b"].is_null().to_list()[5]


def test_declared_forms_of_the_parameters() -> None:
    df = pl.DataFrame({"age": ["child", "adult"] * 60, "marital": ["single", "married"] * 60})
    md = Microdata(df, keys=["age", "marital"])
    single = Pram(forbidden={"age": "child", "marital": "married"}, min_diagonal=0.5, seed=2)
    listed = Pram(forbidden=[{"age": "child", "marital": "married"}], min_diagonal=0.5, seed=2)
    assert single.apply(md).data.equals(listed.apply(md).data)
    per_variable = Pram(transition={"age": np.eye(2), "marital": [[0.5, 0.5], [0.5, 0.5]]},
                        invariant=False, seed=1)  # fmt: skip
    assert per_variable.apply(md).changed.keys() <= {"marital"}
    keys_by_default = Pram(variables=[], seed=3).apply(md)
    assert keys_by_default.details["variables"] == ("age", "marital")
    with pytest.raises(ColumnError, match=r"'transition' parameter of Pram .* 'agee'"):
        Pram(transition={"agee": np.eye(2)}).apply(md)
    with pytest.raises(ColumnError, match=r"'forbidden' parameter of Pram .* 'mar'"):
        Pram(forbidden={"mar": "married"}).apply(md)
    with pytest.raises(ParameterError, match="'invariant' parameter of Pram"):
        Pram(invariant="yes").apply(md)


def test_verify_reports_what_failed() -> None:
    method, md = Pram.contract_example()
    result = method.apply(md)
    method.verify(md, result)
    tampered = md.frame.with_columns(pl.lit("married").alias("marital"))
    with pytest.raises(VerificationError, match=r"Pram: .*forbidden"):
        method.verify(md, Protected.from_frames(md, tampered, method))
    tampered = md.frame.with_columns(pl.col("region") + 1)
    with pytest.raises(VerificationError, match="'region' was changed but not PRAMmed"):
        method.verify(md, Protected.from_frames(md, tampered, method))


def test_misspelt_or_positional_keywords_name_the_fix() -> None:
    # issue 28: `pram(df, keys=K, min_diag=0.9)` was a plain TypeError
    df = _data()
    with pytest.raises(ParameterError, match=r"^pram\(\) has no parameter 'min_diag'\. Did you"):
        pram(df, keys=["v"], min_diag=0.9)
    with pytest.raises(ParameterError, match=r"Did you mean 'min_diagonal'\?"):
        Pram(min_diag=0.9)
    with pytest.raises(ParameterError, match=r"Pram\(variables=\.\.\.\)"):
        Pram(["v"])
    with pytest.raises(ParameterError, match=r"pram\(data, variables=\.\.\.\)"):
        pram(df, ["v"])
    # roles and parameters together: the keys role, PRAM on the keys by default
    out = pram(df, keys=["v"], min_diagonal=0.9, seed=1)
    assert list(out.microdata.keys) == ["v"] and list(out.changed) == ["v"]

"""Household-level variables: every method treats them per household, and verify() says so.

Microaggregation forms groups of at least ``k`` households (not of ``k`` records, which could be
the members of one household); the random methods (PRAM, noise, rank swapping, shuffling,
synthesis) draw once per household, so nothing is left for the generic household rule of the
release roles to overwrite after the method's own checks.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit import Microdata
from sdckit.errors import ColumnError, InfeasibleError, ParameterError, VerificationError
from sdckit.masking._microaggregation import Microaggregation
from sdckit.masking._pram import Pram, generate_transition, pram_estimate
from sdckit.masking._rank_swapping import RankSwapping
from sdckit.masking.noise import AddNoise
from sdckit.masking.shuffling import Shuffling
from sdckit.masking.synthetic import Synthesis
from sdckit.protection import Protected

HOUSEHOLD_LEVEL = ["region", "hsize", "hh_income", "rent"]


def _households(
    seed: int, n_households: int = 60, *, missing: bool = False, max_size: int = 5
) -> pl.DataFrame:
    """A person file in households, members not contiguous, ids not in order of appearance."""
    rng = np.random.default_rng(seed)
    size = rng.integers(1, max_size + 1, n_households)
    ids = rng.permutation(n_households) * 3 + 100
    hh = np.repeat(ids, size)
    n = len(hh)
    per_household = {
        "region": rng.choice(["north", "south", "east", "west"], n_households),
        "hsize": size,
        "hh_income": rng.gamma(3.0, 1000.0, n_households).round(0),
        "rent": rng.gamma(2.0, 200.0, n_households).round(1),
    }
    if missing:
        per_household["rent"][rng.random(n_households) < 0.15] = np.nan
    position = np.repeat(np.arange(n_households), size)
    frame = pl.DataFrame(
        {
            "hid": hh,
            **{c: v[position] for c, v in per_household.items()},
            "sex": rng.integers(1, 3, n),
            "age": rng.integers(1, 8, n),
            "income": rng.gamma(2.0, 500.0, n).round(0),
            "w": rng.uniform(1.0, 20.0, n).round(2),
        }
    ).with_columns(pl.col("rent").fill_nan(None))
    return frame[rng.permutation(n)]


def _microdata(frame: pl.DataFrame, **roles: object) -> Microdata:
    defaults: dict[str, object] = {
        "keys": ["region", "sex", "age"],
        "numeric": ["income", "hh_income", "rent"],
        "weight": "w",
        "household": "hid",
        "household_level": HOUSEHOLD_LEVEL,
    }
    defaults.update(roles)
    return Microdata(frame, **defaults)  # type: ignore[arg-type]


def _constant_within_households(result: Protected, columns: list[str]) -> None:
    for c in columns:
        assert result.microdata.inconsistent_households(c) == 0, c
    # nothing was left for the generic household rule to repair
    assert "release_roles" not in result.details, result.details.get("release_roles")


def _households_sharing(frame: pl.DataFrame, column: str) -> np.ndarray:
    """For every released (non-missing) value, the number of households that have it."""
    shared = (
        frame.select("hid", column)
        .drop_nulls()
        .group_by(column)
        .agg(pl.col("hid").n_unique().alias("n"))
    )
    return shared.get_column("n").to_numpy()


# ------------------------------------------------------------------------ microaggregation
@given(
    seed=st.integers(0, 10_000),
    n_households=st.integers(2, 40),
    k=st.integers(2, 5),
    method=st.sampled_from(["mdav", "univariate", "mdav_refined"]),
    aggregate=st.sampled_from(["mean", "median"]),
    with_person=st.booleans(),
    with_strata=st.booleans(),
    missing=st.booleans(),
)
def test_household_microaggregation_groups_households(
    seed: int,
    n_households: int,
    k: int,
    method: str,
    aggregate: str,
    with_person: bool,
    with_strata: bool,
    missing: bool,
) -> None:
    frame = _households(seed, n_households, missing=missing)
    if with_strata:  # a household-level stratum, as strata usually are
        frame = frame.with_columns(st=(pl.col("hid") // 3) % 2)
    md = _microdata(frame, keys=["sex", "age"], strata="st" if with_strata else None)
    variables = ["hh_income", "rent"] + (["income"] if with_person else [])
    algorithm = Microaggregation(
        k=k,
        method=method,
        aggregate=aggregate,
        variables=variables,
        iterations=10,  # type: ignore[arg-type]
    )
    per_stratum = (
        frame.group_by("st").agg(pl.col("hid").n_unique()).get_column("hid").to_numpy()
        if with_strata
        else np.array([n_households])
    )
    if k > n_households:
        with pytest.raises(ParameterError, match="'k' parameter must be <= the number of"):
            algorithm.apply(md)
        return
    if (per_stratum < k).any() or (with_person and (frame.height < k)):
        with pytest.raises(InfeasibleError, match=f"fewer than k={k}"):
            algorithm.apply(md)
        return
    heads = frame.group_by("hid").first()
    with_rent = (
        heads.filter(pl.col("rent").is_not_null())
        .group_by("st" if with_strata else pl.lit(0))
        .len()
        .get_column("len")
        .to_numpy()
    )
    if method == "univariate" and ((with_rent > 0) & (with_rent < k)).any():
        with pytest.raises(InfeasibleError, match=r"'rent' has fewer than k=.* households with"):
            algorithm.apply(md)
        return
    result = algorithm.apply(md)
    algorithm.verify(md, result)
    out = result.microdata.frame
    _constant_within_households(result, ["hh_income", "rent"])
    for column in ("hh_income", "rent"):
        assert (_households_sharing(out, column) >= k).all(), column
        # missing stays missing; a value is only suppressed, never invented
        assert out[column].is_null().sum() >= frame[column].is_null().sum()
    assert result.details["household_level"] == ("hh_income", "rent")
    hh_groups = np.asarray(result.details["household_groups"])
    assert hh_groups.shape[0] == n_households
    sizes = result.details["household_group_sizes"]
    for s in sizes if isinstance(sizes, list) else [sizes]:
        assert (s[s > 0] >= k).all()
    # the same call gives the same bytes
    again = algorithm.apply(md).microdata.frame
    assert again.equals(out, null_equal=True)


def test_household_means_are_means_over_households() -> None:
    # household 1 has five members: a mean over records would weight it five times
    frame = pl.DataFrame(
        {
            "hid": [1, 1, 1, 1, 1, 2, 3, 4, 5, 6],
            "hh_income": [1.0] * 5 + [2.0, 3.0, 10.0, 11.0, 12.0],
            "income": [5.0, 6.0, 7.0, 8.0, 9.0, 1.0, 2.0, 3.0, 4.0, 5.0],
        }
    )
    md = Microdata(frame, numeric=["hh_income", "income"], household="hid",
                   household_level="hh_income")  # fmt: skip
    result = Microaggregation(k=3, variables=["hh_income"]).apply(md)
    assert result.data["hh_income"].to_list() == [2.0] * 7 + [11.0] * 3
    assert result.details["household_groups"].tolist() == [0, 0, 0, 1, 1, 1]
    assert result.details["household_group_sizes"].tolist() == [3, 3]
    assert result.details["group_sizes"].tolist() == [7, 3]  # records per group
    # SSE on the records' z-scores around the released means (households 1..3 -> 2.0)
    z = (frame["hh_income"].to_numpy() - frame["hh_income"].mean()) / frame["hh_income"].std(ddof=0)
    released = (result.data["hh_income"].to_numpy() - frame["hh_income"].mean()) / frame[
        "hh_income"
    ].std(ddof=0)
    loss = 100 * float(((z - released) ** 2).sum()) / float((z**2).sum())
    assert result.details["information_loss"] == pytest.approx(loss)
    Microaggregation(k=3, variables=["hh_income"]).verify(md, result)
    # person-level and household-level variables together: aggregated separately
    both = Microaggregation(k=3, variables=["hh_income", "income"]).apply(md)
    assert both.data["hh_income"].to_list() == [2.0] * 7 + [11.0] * 3
    groups = both.details["groups"]
    assert groups.shape == (10, 2)
    assert (np.bincount(groups[:, 1]) >= 3).all()
    assert set(groups[:, 0]).isdisjoint(set(groups[:, 1]))
    Microaggregation(k=3, variables=["hh_income", "income"]).verify(md, both)


def test_record_grouping_of_a_household_variable_fails_verification() -> None:
    frame = _households(3)
    md = _microdata(frame)
    record_level = Microdata(frame, numeric=["hh_income"], household="hid")  # no role
    method = Microaggregation(k=3, variables=["hh_income"])
    by_records = method.apply(record_level)  # groups of records: members land together
    assert record_level.with_frame(by_records.microdata.frame).household_level == ()
    with pytest.raises(VerificationError, match="household"):
        method.verify(md, by_records)
    by_households = method.apply(md)
    method.verify(md, by_households)


def test_household_stratum_is_the_first_members() -> None:
    frame = _households(8, 30)
    rng = np.random.default_rng(1)
    # a person-level stratum: members of one household may be in different strata
    frame = frame.with_columns(st=pl.Series(rng.integers(0, 2, frame.height)))
    md = _microdata(frame, strata="st")
    method = Microaggregation(k=3, variables=["hh_income"])
    result = method.apply(md)
    method.verify(md, result)
    _constant_within_households(result, ["hh_income"])
    first = frame.group_by("hid", maintain_order=True).first()
    groups = dict(zip(first["hid"].sort(), result.details["household_groups"], strict=True))
    stratum = dict(zip(first["hid"], first["st"], strict=True))
    for g in set(groups.values()):
        assert len({stratum[h] for h, gg in groups.items() if gg == g}) == 1


def test_household_microaggregation_errors_name_the_parameter() -> None:
    frame = _households(2, 4)
    md = _microdata(frame)
    with pytest.raises(ParameterError, match=r"'k' parameter must be <= the number of households"):
        Microaggregation(k=5, variables=["hh_income"]).apply(md)
    strata = frame.with_columns(st=(pl.col("hid") == pl.col("hid").min()).cast(pl.Int64))
    with pytest.raises(InfeasibleError, match="fewer than k=2 households"):
        Microaggregation(k=2, variables=["hh_income"]).apply(_microdata(strata, strata="st"))


def test_household_microaggregation_on_the_demo_file() -> None:
    from sdckit.datasets import DEMO_ROLES, load_demo

    demo = load_demo().head(4000)
    md = Microdata(demo, **{**DEMO_ROLES, "household_level": ["household_income"]})
    method = Microaggregation(k=3, variables=["household_income"])
    result = method.apply(md)
    method.verify(md, result)
    _constant_within_households(result, ["household_income"])
    assert (_households_sharing(
        result.microdata.frame.rename({"household_id": "hid"}), "household_income"
    ) >= 3).all()  # fmt: skip
    # record-level grouping is cheaper in SSE but gives no protection: compare the losses
    record = Microaggregation(k=3, variables=["household_income"]).apply(
        Microdata(demo, **DEMO_ROLES)
    )
    assert result.details["information_loss"] > record.details["information_loss"]


# ------------------------------------------------------------------------ PRAM
def test_pram_draws_once_per_household_and_keeps_the_control() -> None:
    frame = _households(5, 120)
    md = _microdata(frame)
    forbidden = [{"region": "north", "age": 1}]
    method = Pram(variables=["region", "age"], forbidden=forbidden, min_diagonal=0.6, seed=3)
    result = method.apply(md)
    method.verify(md, result)
    _constant_within_households(result, ["region"])
    out = result.microdata.frame
    bad_before = frame.filter((pl.col("region") == "north") & (pl.col("age") == 1)).height
    bad_after = out.filter((pl.col("region") == "north") & (pl.col("age") == 1)).height
    assert bad_after <= bad_before
    assert result.details["per_household"] == ("region",)
    # the changes counted are those of the output: whole households change together
    changed = frame["region"] != out["region"]
    assert result.changed["region"] == int(changed.sum())
    households_changed = frame.filter(changed)["hid"].unique()
    assert (
        int(changed.sum()) == frame.filter(pl.col("hid").is_in(households_changed.implode())).height
    )
    again = method.apply(md).microdata.frame
    assert again.equals(out)


def test_pram_estimate_stays_unbiased_with_household_draws() -> None:
    frame = _households(6, 200)
    md = _microdata(frame)
    levels = ["east", "north", "south", "west"]
    t = np.array([(frame["region"] == lv).sum() for lv in levels], dtype=float)
    p = generate_transition(4, min_diagonal=0.7, diagonal="fixed")
    estimates, errors, naive = [], [], []
    for seed in range(200):
        out = Pram(variables=["region"], transition=p, invariant=False, seed=seed).apply(md).data
        released = np.array([(out["region"] == lv).sum() for lv in levels], dtype=float)
        # per released category: the sum over households of the squared household size
        households = out.group_by("hid").agg(pl.col("region").first(), pl.len().alias("size"))
        squares = households.group_by("region").agg((pl.col("size") ** 2).sum())
        by_level = dict(squares.iter_rows())
        squared = np.array([by_level.get(lv, 0.0) for lv in levels], dtype=float)
        estimate = pram_estimate(released, p, squared_sizes=squared)
        estimates.append(estimate.estimate)
        errors.append(estimate.standard_error)
        naive.append(pram_estimate(released, p).standard_error)
    estimates = np.array(estimates)
    spread = estimates.std(axis=0, ddof=1)
    assert np.all(np.abs(estimates.mean(axis=0) - t) < 3.5 * spread / np.sqrt(len(estimates)))
    # members move together: the record formula understates the spread, the household one not
    np.testing.assert_allclose(np.mean(errors, axis=0), spread, rtol=0.25)
    assert np.all(np.mean(naive, axis=0) < 0.75 * spread)
    with pytest.raises(ParameterError, match="'squared_sizes'"):
        pram_estimate(released, p, squared_sizes=[-1.0, 0.0, 0.0, 0.0])


def test_pram_verify_catches_values_changed_after_the_draws() -> None:
    frame = _households(7)
    md = _microdata(frame)
    method = Pram(variables=["region"], seed=1)
    result = method.apply(md)
    # a member-by-member result (as the methods did before): the household rule repairs it
    member_wise = frame.with_columns(
        pl.when(pl.int_range(pl.len()) % 2 == 0)
        .then(pl.lit("north"))
        .otherwise(pl.col("region"))
        .alias("region")
    )
    repaired = Protected.from_frames(md, member_wise, method, details=result.details)
    assert "region" in repaired.details["release_roles"]
    with pytest.raises(VerificationError, match="after the draws"):
        method.verify(md, repaired)


# ------------------------------------------------------------------------ noise
@pytest.mark.parametrize(
    ("method", "rule"),
    [
        ("additive", "quantile"),
        ("correlated", "quantile"),
        ("correlated2", "quantile"),
        ("exact", "quantile"),
        ("outliers", "quantile"),
        ("outliers", "mahalanobis"),
    ],
)
def test_noise_per_household(method: str, rule: str) -> None:
    frame = _households(9, 150, missing=True)
    md = _microdata(frame)
    noise = AddNoise(method=method, outlier_rule=rule, seed=4)  # type: ignore[arg-type]
    result = noise.apply(md)
    noise.verify(md, result)
    _constant_within_households(result, ["hh_income", "rent"])
    out = result.microdata.frame
    assert out["rent"].is_null().to_list() == frame["rent"].is_null().to_list()
    if method != "outliers":
        assert (out["hh_income"] != frame["hh_income"]).all()
    else:  # an outlier record makes its household's household-level values outliers
        flagged = pl.Series(result.details["outliers"])
        touched = frame.filter(out["hh_income"] != frame["hh_income"])["hid"].unique()
        members = frame["hid"].is_in(touched.implode())
        assert (flagged | ~members).all()
    assert noise.apply(md).microdata.frame.equals(out, null_equal=True)


def test_household_noise_has_the_covariance_asked() -> None:
    from sdckit.masking.noise import _household_noise

    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 4))
    cov = a @ a.T
    n = 200_000
    lead = np.repeat(np.arange(0, n, 2), 2)  # households of two records
    e = _household_noise(rng.standard_normal((n, 4)), cov, [1, 3], lead)
    assert np.array_equal(e[:, [1, 3]], e[lead][:, [1, 3]])
    np.testing.assert_allclose(np.cov(e, rowvar=False), cov, atol=0.05 * np.abs(cov).max())


def test_exact_noise_keeps_moments_with_households() -> None:
    frame = _households(10, 200, missing=True)
    md = _microdata(frame)
    result = AddNoise(method="exact", seed=2).apply(md)
    cols = ["income", "hh_income", "rent"]
    x = frame.select(cols).to_numpy()
    y = result.microdata.frame.select(cols).to_numpy()
    complete = ~np.isnan(x).any(axis=1)
    np.testing.assert_allclose(y[complete].mean(axis=0), x[complete].mean(axis=0), rtol=1e-9)
    np.testing.assert_allclose(
        np.cov(y[complete], rowvar=False), np.cov(x[complete], rowvar=False), rtol=1e-8
    )
    _constant_within_households(result, ["hh_income", "rent"])


def test_balance_edit_with_a_household_level_total_needs_household_components() -> None:
    frame = _households(11).with_columns(total=pl.col("hh_income") + pl.col("rent").fill_null(0))
    frame = frame.with_columns(rent=pl.col("rent").fill_null(0))
    md = _microdata(frame, numeric=["income", "hh_income", "rent", "total"],
                    household_level=[*HOUSEHOLD_LEVEL, "total"])  # fmt: skip
    ok = AddNoise(balance=[("total", ["hh_income", "rent"])], seed=1)
    result = ok.apply(md)
    ok.verify(md, result)
    _constant_within_households(result, ["total", "hh_income", "rent"])
    frame2 = frame.with_columns(total=pl.col("hh_income") + pl.col("income"))
    md2 = _microdata(frame2.with_columns(total=pl.col("total").max().over("hid")),
                     numeric=["income", "hh_income", "total"],
                     household_level=[*HOUSEHOLD_LEVEL, "total"])  # fmt: skip
    with pytest.raises(ColumnError, match=r"'total'.*'income' is not household-level"):
        AddNoise(balance=[("total", ["hh_income", "income"])]).apply(md2)


# ------------------------------------------------------------------------ rank swapping
@pytest.mark.parametrize("variant", ["classic", "sdcmicro"])
def test_rank_swapping_between_households(variant: str) -> None:
    frame = _households(12, 100, missing=True)
    md = _microdata(frame)
    method = RankSwapping(variables=["income", "hh_income", "rent"], method=variant, seed=5)
    result = method.apply(md)
    method.verify(md, result)
    _constant_within_households(result, ["hh_income", "rent"])
    before = frame.group_by("hid").first().sort("hid")
    after = result.microdata.frame.group_by("hid").first().sort("hid")
    if variant == "classic":  # the households' values are a permutation of theirs
        assert sorted(after["hh_income"]) == sorted(before["hh_income"])
        assert sorted(after["rent"].drop_nulls()) == sorted(before["rent"].drop_nulls())
        assert (after["hh_income"] != before["hh_income"]).any()
        # the window counts household ranks: 5 % of 100 households
        assert result.details["window"]["hh_income"] == 5
    assert result.details["per_household"] == ("hh_income", "rent")
    assert method.apply(md).microdata.frame.equals(result.microdata.frame, null_equal=True)


# ------------------------------------------------------------------------ shuffling
def test_shuffling_between_households() -> None:
    frame = _households(13, 120)
    md = _microdata(frame)
    method = Shuffling(variables=["income", "hh_income"], predictors=["sex", "age", "hsize"],
                       seed=6)  # fmt: skip
    result = method.apply(md)
    method.verify(md, result)
    _constant_within_households(result, ["hh_income"])
    before = frame.group_by("hid").first()
    after = result.microdata.frame.group_by("hid").first()
    assert sorted(after["hh_income"]) == sorted(before["hh_income"])
    assert sorted(result.data["income"]) == sorted(frame["income"])
    assert result.details["household_coefficients"].shape == (
        result.details["coefficients"].shape[0],
        1,
    )
    assert method.apply(md).microdata.frame.equals(result.microdata.frame)
    # a member-by-member permutation breaks the promise: caught
    member_wise = frame.with_columns(pl.col("hh_income").shuffle(seed=1))
    with pytest.raises(VerificationError, match="'hh_income'"):
        method.verify(md, Protected.from_frames(md, member_wise, method))


# ------------------------------------------------------------------------ synthesis
@pytest.mark.parametrize("method", ["cart", "parametric"])
def test_synthesis_draws_household_variables_per_household(method: str) -> None:
    frame = _households(14, 150)
    md = _microdata(frame)
    synth = Synthesis(synthesize=["region", "age", "hh_income", "income"], method=method, seed=7)
    result = synth.apply(md)
    synth.verify(md, result)
    _constant_within_households(result, ["region", "hh_income"])
    assert result.details["per_household"] == ("region", "hh_income")
    out = result.microdata.frame
    assert out["hid"].to_list() == frame["hid"].to_list()  # the households stay whole
    assert synth.apply(md).microdata.frame.equals(out)
    if method == "cart":  # donors are real household values
        assert set(out["hh_income"]) <= set(frame["hh_income"])


def test_synthesis_verify_catches_household_values_that_differ() -> None:
    frame = _households(15)
    md = _microdata(frame)
    synth = Synthesis(synthesize=["hh_income"], seed=1)
    result = synth.apply(md)
    member_wise = frame.with_columns(pl.col("hh_income").shuffle(seed=2))
    broken = Protected.from_frames(md, member_wise, synth, details=result.details)
    with pytest.raises(VerificationError, match="'hh_income'"):
        synth.verify(md, broken)

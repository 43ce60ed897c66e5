"""Interval disclosure (sdcMicro dRisk, dRiskRMD) and distance-based record linkage."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from scipy.spatial.distance import cdist

from sdckit import Microdata
from sdckit.errors import ColumnError, DataError, ParameterError, SdcWarning
from sdckit.risk.linkage import (
    IntervalDisclosureResult,
    IntervalDisclosureRmdResult,
    RecordLinkageResult,
    _robust_covariance,
    interval_disclosure,
    interval_disclosure_rmd,
    record_linkage,
)

# ------------------------------------------------------------------------------ fixtures
X4 = pl.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [10.0, 20.0, 30.0, 40.0]})
XM4 = pl.DataFrame({"a": [1.0, 2.5, 3.0, 5.0], "b": [10.0, 20.0, 35.0, 45.0]})
# masked standard deviations by hand: a: mean 2.875, squares sum 8.1875 -> sqrt(8.1875 / 3);
# b: mean 27.5, squares sum 725 -> sqrt(725 / 3)
SD_A = math.sqrt(8.1875 / 3)  # 1.652019...
SD_B = math.sqrt(725 / 3)  # 15.545632...


def _noisy(n: int, p: int, noise: float, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, p)) @ (np.eye(p) + 0.3)
    xm = x + noise * rng.standard_normal((n, p))
    cols = [f"v{j}" for j in range(p)]
    return pl.DataFrame(x, schema=cols), pl.DataFrame(xm, schema=cols)


# ------------------------------------------------------------------ interval disclosure
def test_interval_disclosure_hand_computed() -> None:
    # k = 0.2: half-widths 0.330404 (a) and 3.109126 (b); |x - xm| = (0, .5, 0, 1), (0, 0, 5, 5)
    res = interval_disclosure(X4, XM4, numeric=["a", "b"], k=0.2)
    assert isinstance(res, IntervalDisclosureResult)
    np.testing.assert_allclose(res.half_width, [0.2 * SD_A, 0.2 * SD_B], rtol=1e-14)
    np.testing.assert_allclose(res.half_width, [0.330404, 3.109126], atol=1e-6)
    assert res.outside.tolist() == [0, 1, 1, 2]
    # sdcMicro counts a record at risk when at most one variable lies outside
    assert res.at_risk.tolist() == [True, True, True, False]
    assert res.risk == 0.75
    strict = interval_disclosure(X4, XM4, numeric=["a", "b"], k=0.2, max_outside=0)
    assert strict.at_risk.tolist() == [True, False, False, False]
    assert strict.risk == 0.25
    # k = 0.4: half-widths 0.660808 and 6.218253 -> only record 4's a (diff 1) lies outside
    wide = interval_disclosure(X4, XM4, numeric=["a", "b"], k=0.4, max_outside=0)
    assert wide.outside.tolist() == [0, 0, 0, 1]
    assert wide.risk == 0.75
    assert interval_disclosure(X4, XM4, numeric=["a", "b"], k=0.4).risk == 1.0


def test_interval_disclosure_identical_and_frames() -> None:
    x, _ = _noisy(50, 3, 0.0, 1)
    assert interval_disclosure(x, x, numeric=x.columns, k=0.0, max_outside=0).risk == 1.0
    df = X4.to_pandas()
    df.index = pd.Index(["r4", "r3", "r2", "r1"], name="rid")
    before = df.copy(deep=True)
    res = interval_disclosure(df, XM4.to_pandas().set_index(df.index), numeric=["a", "b"], k=0.2)
    pd.testing.assert_frame_equal(df, before)
    out = res.to_frame()
    assert isinstance(out, pd.DataFrame)
    assert out.index.equals(df.index)
    assert out["interval_risk"].tolist() == [True, True, True, False]
    assert out["variables_outside"].tolist() == [0, 1, 1, 2]
    arrow = interval_disclosure(X4.to_arrow(), XM4.to_arrow(), numeric=["a", "b"], k=0.2)
    assert isinstance(arrow.to_frame(), pa.Table)
    summary = res.summary().to_dict()
    assert summary["interval disclosure risk"] == 0.75
    assert summary["records at risk"] == 3


def test_interval_disclosure_microdata_numeric_role() -> None:
    md = Microdata(X4.with_columns(pl.Series("g", [1, 1, 2, 2])), keys="g", numeric=["a", "b"])
    res = interval_disclosure(md, XM4, k=0.2)
    assert res.numeric == ("a", "b")
    assert res.risk == 0.75


def test_interval_disclosure_one_variable_warns_and_constant_masked() -> None:
    with pytest.warns(SdcWarning, match="every record counts as at risk"):
        assert interval_disclosure(X4, XM4, numeric="a").risk == 1.0
    # a constant masked variable gives zero-width intervals: only equal values are inside
    xm = XM4.with_columns(pl.lit(2.0).alias("a"))
    res = interval_disclosure(X4, xm, numeric=["a", "b"], k=0.2, max_outside=0)
    assert res.half_width[0] == 0.0
    assert res.at_risk.tolist() == [False, True, False, False]


# ---------------------------------------------------------------------------- dRiskRMD
def test_rmd_hand_computed_classical() -> None:
    # one variable 1..5: z = (x - 3) / sqrt(2.5); classical covariance of z is 1, so the
    # distance is |z| and the weight 0.05 |z|.  Identical files: every masked value lies inside
    # its open interval except the record at the centre (interval of width 0).
    x = pl.DataFrame({"a": [1.0, 2.0, 3.0, 4.0, 5.0]})
    z = np.array([-2.0, -1.0, 0.0, 1.0, 2.0]) / math.sqrt(2.5)
    res = interval_disclosure_rmd(x, x, numeric="a", covariance="classical")
    assert isinstance(res, IntervalDisclosureRmdResult)
    np.testing.assert_allclose(res.robust_distance, np.abs(z), rtol=1e-12)
    assert res.at_risk.tolist() == [True, True, False, True, True]
    assert res.risk1 == 0.8
    # wrisk1 = n1 * sum(weights) / n = 4 * 0.05 * (6 / sqrt(2.5)) / 5 = 0.1517893...
    expected = 4 * 0.05 * (6 / math.sqrt(2.5)) / 5
    assert res.weighted_risk1 == pytest.approx(expected, rel=1e-12)
    assert res.weighted_risk1 == pytest.approx(0.1517893, abs=1e-7)
    # neighbours are 1 / sqrt(2.5) = 0.632 apart: isolated for k2 = 0.05, not for k2 = 1
    assert res.at_risk_isolated.tolist() == [True, True, False, True, True]
    assert res.weighted_risk2 == pytest.approx(expected, rel=1e-12)
    crowded = interval_disclosure_rmd(x, x, numeric="a", covariance="classical", k2=1.0)
    assert crowded.risk2 == 0.0 and crowded.weighted_risk2 == 0.0
    assert crowded.risk_vector2.tolist() == [0.0] * 5
    np.testing.assert_allclose(res.risk_vector1, 0.05 * np.abs(z), rtol=1e-12)
    # each file is standardised on its own: an affine masking leaves the standardised values
    affine = interval_disclosure_rmd(
        x, x.with_columns(pl.col("a") * 10 + 3), numeric="a", covariance="classical"
    )
    assert affine.at_risk.tolist() == res.at_risk.tolist()


def test_rmd_shifted_record_leaves_its_interval() -> None:
    # move one masked value by half the spacing: standardised masked values change for all
    # records, and only those still within 0.05 * k * |z| of the original remain at risk
    x = pl.DataFrame({"a": [1.0, 2.0, 3.0, 4.0, 5.0], "b": [2.0, 1.0, 4.0, 3.0, 5.0]})
    res = interval_disclosure_rmd(x, x, numeric=["a", "b"], covariance="classical", k=1.0)
    assert res.risk1 == 1.0
    xm = x.with_columns(pl.Series("a", [1.0, 2.0, 3.0, 4.0, 5.5]))
    moved = interval_disclosure_rmd(x, xm, numeric=["a", "b"], covariance="classical", k=1.0)
    # b is unchanged, so every record with a positive weight keeps b inside its interval
    assert moved.risk1 == 1.0
    xm2 = xm.with_columns(pl.Series("b", [2.5, 1.0, 4.0, 3.0, 5.0]))
    moved2 = interval_disclosure_rmd(x, xm2, numeric=["a", "b"], covariance="classical", k=1.0)
    assert moved2.risk1 < 1.0
    assert 0.0 <= moved2.risk2 <= moved2.risk1


def test_rmd_mcd_is_robust_to_outliers() -> None:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((400, 3))
    x[:40] += 8.0  # 10 % gross outliers
    frame = pl.DataFrame(x, schema=["a", "b", "c"])
    robust = interval_disclosure_rmd(frame, frame, numeric=frame.columns)
    classical = interval_disclosure_rmd(frame, frame, numeric=frame.columns, covariance="classical")
    cutoff = math.sqrt(stats.chi2.ppf(0.975, 3))
    assert np.all(robust.robust_distance[:40] > 2 * cutoff)
    assert np.all(classical.robust_distance[:40] < 2 * cutoff)
    assert np.median(robust.robust_distance[40:]) < cutoff
    assert robust.risk1 == 1.0  # identical files: every record inside its interval
    # one variable: the exact univariate MCD ignores the outliers as well
    one = interval_disclosure_rmd(frame, frame, numeric="a")
    assert one.robust_distance[:40].min() > 2 * math.sqrt(stats.chi2.ppf(0.975, 1))
    one_classical = interval_disclosure_rmd(frame, frame, numeric="a", covariance="classical")
    assert one_classical.robust_distance[:40].max() < 2 * math.sqrt(stats.chi2.ppf(0.975, 1))


def test_rmd_errors() -> None:
    a = np.random.default_rng(3).standard_normal(50)
    collinear = pl.DataFrame({"a": a, "b": 2 * a})
    with pytest.raises(DataError, match="linear combination"):
        interval_disclosure_rmd(collinear, collinear, numeric=["a", "b"], covariance="classical")
    with pytest.raises(DataError, match="MCD"):
        interval_disclosure_rmd(collinear, collinear, numeric=["a", "b"])
    heap = pl.DataFrame({"a": np.r_[np.zeros(30), a[:20]], "b": np.r_[np.ones(30), a[20:40]]})
    with pytest.raises(DataError, match="more than half"):
        interval_disclosure_rmd(heap, heap, numeric=["a", "b"])
    constant = pl.DataFrame({"a": a, "b": np.ones(50)})
    with pytest.raises(DataError, match="'b' is constant in the original file"):
        interval_disclosure_rmd(constant, constant, numeric=["a", "b"])
    with pytest.raises(ParameterError, match="covariance"):
        interval_disclosure_rmd(collinear, collinear, numeric="a", covariance="robust")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="'k2'"):
        interval_disclosure_rmd(collinear, collinear, numeric="a", k2=-1.0)


def test_univariate_mcd_matches_brute_force() -> None:
    # the raw MCD of one variable is the h-subset of smallest variance (all C(12, 7) subsets
    # tried here), times the consistency factor h/n / F_{chi2_3}(chi2_1^-1(h/n)) (robustbase's
    # MCDcons); then records with squared distance above chi2_1(0.975) are dropped and the
    # variance of the rest is multiplied by the factor for 0.975.
    z = np.array([0.3, -1.2, 0.8, 0.1, 5.0, -0.4, 0.9, 7.5, -0.2, 0.6, 1.4, -6.0])
    n, h = len(z), (len(z) + 2) // 2

    def factor(frac: float) -> float:
        return frac / stats.chi2.cdf(stats.chi2.ppf(frac, 1), 3)

    best = min(itertools.combinations(range(n), h), key=lambda idx: np.var(z[list(idx)]))
    sub = z[list(best)]
    raw_mean, raw_var = sub.mean(), sub.var(ddof=1) * factor(h / n)
    keep = (z - raw_mean) ** 2 / raw_var <= stats.chi2.ppf(0.975, 1)
    expected = z[keep].var(ddof=1) * factor(0.975)
    assert keep.sum() == 9  # the three gross outliers are dropped
    assert _robust_covariance(z[:, None])[0, 0] == pytest.approx(expected, rel=1e-12)


def test_rmd_on_casc_reference_data(shared_data: Path) -> None:
    casc = pl.read_csv(shared_data / "CASCrefmicrodata.csv").cast(pl.Float64)
    cols = ["AFNLWGT", "AGI", "EMCONTRB", "FEDTAX", "PTOTVAL", "STATETAX"]
    res = interval_disclosure_rmd(casc, casc, numeric=cols)
    assert res.n_records == 1080
    assert res.risk1 == 1.0  # identical files: every masked value inside its interval
    assert np.all(np.isfinite(res.robust_distance)) and res.robust_distance.min() > 0
    # skewed income data: the robust distances flag far more outliers than classical ones
    cutoff = math.sqrt(stats.chi2.ppf(0.975, len(cols)))
    classical = interval_disclosure_rmd(casc, casc, numeric=cols, covariance="classical")
    assert (res.robust_distance > cutoff).sum() > 2 * (classical.robust_distance > cutoff).sum()
    # rounding to 2 significant digits keeps records linkable; to 1 digit much less so
    risks = []
    for digits in (2, 1):
        rounded = casc.with_columns(
            [
                pl.col(c).map_batches(lambda s, d=digits: pl.Series(_round_sig(s.to_numpy(), d)))
                for c in cols
            ]
        )
        risks.append(
            (
                record_linkage(casc, rounded, numeric=cols).risk,
                interval_disclosure(casc, rounded, numeric=cols).risk,
                interval_disclosure_rmd(casc, rounded, numeric=cols).risk1,
            )
        )
    (link2, interval2, rmd2), (link1, interval1, rmd1) = risks
    assert link2 == 1.0 and 0.5 < link1 < 0.8
    assert interval2 > 0.99 and interval1 < 0.05
    assert res.risk1 > rmd2 > rmd1


def _round_sig(values: np.ndarray, digits: int) -> np.ndarray:
    magnitude = np.floor(np.log10(np.maximum(np.abs(values), 1.0)))
    scale = 10.0 ** (magnitude - digits + 1)
    return np.round(values / scale) * scale


# ----------------------------------------------------------------------- record linkage
X_LINK = pl.DataFrame({"a": [0.0, 1.0, 0.0, 5.0], "b": [0.0, 0.0, 1.0, 5.0]})


def test_record_linkage_hand_computed_with_tie() -> None:
    # masked record 2 (0.5, 0) is at distance 0.5 from originals 1 and 2: a tie
    xm = pl.DataFrame({"a": [0.1, 0.5, 0.0, 5.0], "b": [0.0, 0.0, 1.0, 5.0]})
    res = record_linkage(X_LINK, xm, numeric=["a", "b"], standardize=False)
    assert isinstance(res, RecordLinkageResult)
    assert res.linked.tolist() == [True, False, True, True]
    assert res.link_probability.tolist() == [1.0, 0.5, 1.0, 1.0]
    assert res.n_tied.tolist() == [1, 2, 1, 1]
    assert res.rank.tolist() == [1, 1, 1, 1]
    np.testing.assert_allclose(res.distance, [0.1, 0.5, 0.0, 0.0], atol=1e-15)
    assert res.risk == 0.75
    assert res.risk_probabilistic == 0.875


def test_record_linkage_hand_computed_wrong_link() -> None:
    # masked record 2 (0.4, 0) is nearer to original 1 (0.4) than to its own (0.6)
    xm = pl.DataFrame({"a": [0.1, 0.4, 0.0, 5.0], "b": [0.0, 0.0, 1.0, 5.0]})
    res = record_linkage(X_LINK, xm, numeric=["a", "b"], standardize=False)
    assert res.linked.tolist() == [True, False, True, True]
    assert res.nearest.tolist() == [0, 0, 2, 3]
    assert res.rank.tolist() == [1, 2, 1, 1]
    assert res.link_probability.tolist() == [1.0, 0.0, 1.0, 1.0]
    assert res.risk == 0.75 and res.risk_probabilistic == 0.75
    assert res.share_within_rank(2) == 1.0
    capped = record_linkage(X_LINK, xm, numeric=["a", "b"], standardize=False, max_rank=1)
    assert capped.rank.tolist() == [1, 2, 1, 1]


@pytest.mark.parametrize("method", ["euclidean", "mahalanobis"])
def test_record_linkage_identical_files(method: str) -> None:
    x, _ = _noisy(500, 4, 0.0, 2)
    res = record_linkage(x, x, numeric=x.columns, method=method)  # type: ignore[arg-type]
    assert res.linked.all() and res.risk == 1.0 and res.risk_probabilistic == 1.0
    assert (res.rank == 1).all()


def test_record_linkage_duplicate_originals_are_ties() -> None:
    x = pl.DataFrame({"a": [1.0, 1.0, 2.0, 3.0, 7.0], "b": [0.0, 0.0, 5.0, 1.0, 2.0]})
    res = record_linkage(x, x, numeric=["a", "b"])
    assert res.linked.tolist() == [False, False, True, True, True]
    assert res.link_probability.tolist() == [0.5, 0.5, 1.0, 1.0, 1.0]
    assert res.risk == 0.6 and res.risk_probabilistic == 0.8


def test_record_linkage_heavy_noise_links_little() -> None:
    x, xm = _noisy(2000, 3, 3.0, 4)
    res = record_linkage(x, xm, numeric=x.columns)
    assert res.risk < 0.02
    light = record_linkage(x, _noisy(2000, 3, 0.0, 4)[0] + 0.01, numeric=x.columns)
    assert light.risk == 1.0


@pytest.mark.parametrize(
    ("method", "covariance"),
    [("euclidean", "original"), ("mahalanobis", "original"), ("mahalanobis", "difference")],
)
def test_record_linkage_matches_brute_force(method: str, covariance: str) -> None:
    x, xm = _noisy(300, 3, 0.4, 5)
    res = record_linkage(
        x,
        xm,
        numeric=x.columns,
        method=method,
        covariance=covariance,
        max_rank=400,  # type: ignore[arg-type]
    )
    a = x.to_numpy()
    b = xm.to_numpy()
    a = (a - a.mean(0)) / a.std(0, ddof=1)
    b = (b - b.mean(0)) / b.std(0, ddof=1)
    if method == "euclidean":
        d = cdist(b, a)
    else:
        cov = np.cov(a if covariance == "original" else a - b, rowvar=False)
        d = cdist(b, a, metric="mahalanobis", VI=np.linalg.inv(cov))
    true = np.diag(d)
    rank = 1 + (d < true[:, None] - 1e-9).sum(axis=1)
    assert res.rank.tolist() == rank.tolist()
    assert res.nearest.tolist() == d.argmin(axis=1).tolist()
    assert res.linked.tolist() == (d.argmin(axis=1) == np.arange(300)).tolist()
    capped = record_linkage(
        x,
        xm,
        numeric=x.columns,
        method=method,
        covariance=covariance,
        max_rank=3,  # type: ignore[arg-type]
    )
    assert capped.rank.tolist() == np.minimum(rank, 4).tolist()
    assert 0.0 < res.risk < 1.0


def test_record_linkage_frames_and_summary() -> None:
    xm = pl.DataFrame({"a": [0.1, 0.4, 0.0, 5.0], "b": [0.0, 0.0, 1.0, 5.0]})
    idx = pd.Index([40, 30, 20, 10], name="id")
    res = record_linkage(
        X_LINK.to_pandas().set_index(idx), xm.to_pandas().set_index(idx), numeric=["a", "b"]
    )
    out = res.to_frame()
    assert out.index.equals(idx)
    assert list(out.columns) == ["linked", "link_probability", "nearest", "rank", "distance"]
    s = res.summary().to_dict()
    assert s["records"] == 4 and s["linkage risk"] == res.risk
    assert "RecordLinkageResult" in repr(res)
    md = Microdata(X_LINK, numeric=["a", "b"])
    assert record_linkage(md, xm).numeric == ("a", "b")

    class _Protected:  # what a protection method returns: the masked Microdata inside
        microdata = Microdata(xm, numeric=["a", "b"])

    res2 = record_linkage(X_LINK, _Protected(), standardize=False)
    assert res2.rank.tolist() == [1, 2, 1, 1]


def test_record_linkage_errors() -> None:
    with pytest.raises(DataError, match="singular"):
        record_linkage(
            X_LINK, X_LINK, numeric=["a", "b"], method="mahalanobis", covariance="difference"
        )
    with pytest.raises(ParameterError, match="method"):
        record_linkage(X_LINK, X_LINK, numeric="a", method="manhattan")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="max_rank"):
        record_linkage(X_LINK, X_LINK, numeric="a", max_rank=0)
    with pytest.raises(ParameterError, match="standardize"):
        record_linkage(X_LINK, X_LINK, numeric="a", standardize="yes")  # type: ignore[arg-type]
    const = X_LINK.with_columns(pl.lit(1.0).alias("b"))
    with pytest.raises(DataError, match="'b' is constant in the masked file"):
        record_linkage(X_LINK, const, numeric=["a", "b"])
    # without standardising a constant variable is harmless
    assert record_linkage(X_LINK, const, numeric=["a", "b"], standardize=False).n_records == 4


# ------------------------------------------------------------------------- input errors
@pytest.mark.parametrize("func", [interval_disclosure, interval_disclosure_rmd, record_linkage])
def test_input_errors(func) -> None:  # type: ignore[no-untyped-def]
    secret = 123456.789
    x = pl.DataFrame({"a": [secret, 2.0, 3.0, 4.0], "b": [1.0, 5.0, 2.0, 7.0], "s": list("wxyz")})
    with pytest.raises(DataError, match="4 records and the masked file 3"):
        func(x, x.head(3), numeric=["a", "b"])
    with pytest.raises(ColumnError, match="'s' of the original file is not numeric"):
        func(x, x, numeric=["a", "s"])
    with pytest.raises(ColumnError, match="'c' is not in the data"):
        func(x, x, numeric=["a", "c"])
    with pytest.raises(ColumnError, match="No numeric variables"):
        func(x, x)
    missing = x.with_columns(pl.Series("b", [1.0, None, 2.0, float("nan")]))
    with pytest.raises(DataError, match="'b' has 2 missing value") as info:
        func(x, missing, numeric=["a", "b"])
    assert "masked file" in str(info.value) and str(secret) not in str(info.value)
    infinite = x.with_columns(pl.Series("a", [1.0, 2.0, float("inf"), 4.0]))
    with pytest.raises(DataError, match="infinite"):
        func(infinite, x, numeric=["a", "b"])
    kwargs = {"k": -0.5} if func is not record_linkage else {"max_rank": -1}
    with pytest.raises(ParameterError, match=f"'{next(iter(kwargs))}' parameter"):
        func(x, x, numeric=["a", "b"], **kwargs)
    with pytest.raises(DataError, match="at least two records"):
        func(x.head(1), x.head(1), numeric=["a", "b"])


# ---------------------------------------------------------------------- properties
cases = st.tuples(
    st.integers(min_value=0, max_value=2**32 - 1),  # seed
    st.integers(min_value=8, max_value=60),  # records
    st.integers(min_value=1, max_value=4),  # variables
    st.sampled_from([0.0, 0.01, 0.3, 2.0]),  # noise
)


@given(cases, st.integers(min_value=-3, max_value=3))
def test_properties_linkage(case: tuple[int, int, int, float], power: int) -> None:
    seed, n, p, noise = case
    x, xm = _noisy(n, p, noise, seed)
    cols = x.columns
    res = record_linkage(x, xm, numeric=cols)
    assert 0.0 <= res.risk <= res.risk_probabilistic <= 1.0
    assert res.linked.sum() <= (res.rank == 1).sum()
    # joint permutation of the rows of both files permutes the per-record results
    perm = np.random.default_rng(seed).permutation(n)
    permuted = record_linkage(x[perm], xm[perm], numeric=cols)
    assert permuted.linked.tolist() == res.linked[perm].tolist()
    assert permuted.rank.tolist() == res.rank[perm].tolist()
    # standardised linkage ignores the units of each variable (in either file)
    factor = 2.0**power
    scaled = record_linkage(x * factor, xm * (3 * factor), numeric=cols)
    assert scaled.linked.tolist() == res.linked.tolist()
    assert scaled.rank.tolist() == res.rank.tolist()
    maha = record_linkage(x, xm, numeric=cols, method="mahalanobis")
    assert 0.0 <= maha.risk <= maha.risk_probabilistic <= 1.0


@given(cases, st.integers(min_value=-3, max_value=3))
def test_properties_interval(case: tuple[int, int, int, float], power: int) -> None:
    seed, n, p, noise = case
    x, xm = _noisy(n, p, noise, seed)
    cols = x.columns
    res = interval_disclosure(x, xm, numeric=cols, max_outside=0, k=0.1)
    assert 0.0 <= res.risk <= 1.0
    perm = np.random.default_rng(seed).permutation(n)
    permuted = interval_disclosure(x[perm], xm[perm], numeric=cols, max_outside=0, k=0.1)
    assert permuted.at_risk.tolist() == res.at_risk[perm].tolist()
    factor = 2.0**power  # exact in binary floating point
    scaled = interval_disclosure(x * factor, xm * factor, numeric=cols, max_outside=0, k=0.1)
    assert scaled.at_risk.tolist() == res.at_risk.tolist()
    rmd = interval_disclosure_rmd(x, xm, numeric=cols, covariance="classical", k=5.0)
    assert 0.0 <= rmd.risk2 <= rmd.risk1 <= 1.0
    assert not (rmd.at_risk_isolated & ~rmd.at_risk).any()
    rmd_perm = interval_disclosure_rmd(
        x[perm], xm[perm], numeric=cols, covariance="classical", k=5.0
    )
    assert rmd_perm.at_risk.tolist() == rmd.at_risk[perm].tolist()

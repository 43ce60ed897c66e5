"""ptables for the cell key method: the R package ptable's design, constraints, tau-ARGUS files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sdckit import SdcError
from sdckit.tables import (
    PTable,
    cell_key_counts,
    check_ptable,
    ptable_counts,
    read_ptable,
    write_ptable,
)

# The published ptable ptab_freq.txt of tau-ARGUS's cell key test data (sdcTools/tauargus,
# data/cellkey/Magnitude), made by the R package ptable with create_cnt_ptable(D = 5, V = 3,
# js = 2, pstay = 0.5): the upper bounds p_int_ub of the rows i = 1 (blocked targets 1, 2),
# 3 (pstay binding), 6 (the monotony constraint binding: -3 < -2 = -1) and 8 (the last row,
# symmetric), by j.
PUBLISHED = {
    1: {0: 0.73446954, 3: 0.87118973, 4: 0.94398604, 5: 0.9814156, 6: 1.0},
    3: {
        0: 0.18737598,
        3: 0.68737598,
        4: 0.84367414,
        5: 0.93448801,
        6: 0.97773003,
        7: 0.99460391,
        8: 1.0,
    },
    6: {
        3: 0.09063278,
        4: 0.18280325,
        5: 0.27497372,
        6: 0.77497372,
        7: 0.84623644,
        8: 0.90383053,
        9: 0.94761721,
        10: 0.97893236,
        11: 1.0,
    },
    8: {
        3: 0.01158491,
        4: 0.03698039,
        5: 0.0837402,
        6: 0.15605737,
        7: 0.25,
        8: 0.75,
        9: 0.84394263,
        10: 0.91625981,
        11: 0.96301961,
        12: 0.98841508,
        13: 1.0,
    },
}


@pytest.fixture(scope="module")
def published_params() -> PTable:
    return ptable_counts(D=5, V=3, js=2, pstay=0.5)


def test_reproduces_the_published_ptable(published_params: PTable) -> None:
    f = published_params.frame
    assert f["i"].max() == 8  # rows 0 .. D + js + 1
    assert f.height == 66  # as the published file
    for i, row in PUBLISHED.items():
        part = f.filter(pl.col("i") == i).sort("j")
        assert part["j"].to_list() == list(row)
        # the published bounds have 8 decimals; the R optimiser stops at a relative 1e-7
        np.testing.assert_allclose(part["p_int_ub"].to_numpy(), list(row.values()), atol=1.5e-8)
    # the row of 0 never moves
    assert f.filter(pl.col("i") == 0).rows() == [(0, 0, 0, 1.0, 0.0, 1.0)]


def test_published_parameters_meet_every_constraint(published_params: PTable) -> None:
    check = check_ptable(published_params)
    assert check.ok
    f = published_params.frame
    per_row = f.group_by("i").agg(
        pl.col("p").sum().alias("s"),
        (pl.col("p") * pl.col("v")).sum().alias("m"),
        (pl.col("p") * pl.col("v") ** 2).sum().alias("var"),
        pl.col("p").filter(pl.col("v") == 0).sum().alias("stay"),
    )
    np.testing.assert_allclose(per_row["s"].to_numpy(), 1.0, atol=1e-12)
    np.testing.assert_allclose(per_row["m"].to_numpy(), 0.0, atol=1e-7)
    assert per_row.filter(pl.col("i") > 0)["var"].max() <= 3 + 1e-6
    assert per_row.filter(pl.col("i") >= 3)["stay"].min() >= 0.5 - 1e-7
    assert f["v"].abs().max() <= 5
    assert not f["j"].is_in([1, 2]).any()
    assert (f["j"] >= 0).all()


@pytest.mark.parametrize(
    "params",
    [
        {"D": 2, "V": 1.0},
        {"D": 3, "V": 2.0, "js": 1},
        {"D": 4, "V": 4.5, "js": 3, "pstay": 0.4},
        {"D": 3, "V": 1.5, "mono": False},
    ],
)
def test_constraints_hold(params: dict) -> None:
    pt = ptable_counts(**params)
    check = check_ptable(pt)
    assert check.ok, check
    f = pt.frame
    js = params.get("js", 0)
    assert f["i"].max() == (params["D"] if js == 0 else params["D"] + js + 1)
    assert not ((f["j"] >= 1) & (f["j"] <= js)).any()  # no perturbation into 1 .. js
    assert (f["j"] >= 0).all()  # no negative counts
    assert (f["v"].abs() <= params["D"]).all()


def test_exact_variance_with_optim_4() -> None:
    pt = ptable_counts(D=4, V=2.0, optim=4)
    assert check_ptable(pt, exact_variance=True).ok
    # optim = 1 allows less variance where the maximum entropy does not reach it
    small = ptable_counts(D=1, V=5.0)
    assert check_ptable(small).worst_variance < 5.0
    assert not check_ptable(small, exact_variance=True).ok


def test_monotony_left_of_zero() -> None:
    pt = ptable_counts(D=5, V=3, js=2, pstay=0.5)
    row = pt.frame.filter(pl.col("i") == 6).sort("v")
    left = row.filter(pl.col("v") <= 0)["p"].to_numpy()
    assert np.all(np.diff(left) >= -1e-8)


def test_tau_argus_file_and_full_file_round_trip(tmp_path: Path) -> None:
    pt = ptable_counts(D=3, V=2.0, js=1)
    ta = write_ptable(pt, tmp_path / "pt.txt")
    lines = ta.read_text().splitlines()
    assert lines[0] == "i;j;p;v;p_int_ub"  # tau-ARGUS reads the 5th field as the bound
    assert lines[1] == "0;0;1;0;1"
    assert all(len(line.split(";")) == 5 for line in lines)
    full = write_ptable(pt, tmp_path / "full.csv", format="full")
    head = full.read_text().splitlines()
    assert head[0] == "i;j;p;v;p_int_lb;p_int_ub;type"
    assert head[1].endswith(";all")
    for path in (ta, full):
        back = read_ptable(path, js=1)
        assert back.frame.height == pt.frame.height
        np.testing.assert_allclose(back.frame["p_int_ub"], pt.frame["p_int_ub"], atol=1e-8)
        np.testing.assert_allclose(back.frame["p"], pt.frame["p"], atol=2e-8)
        assert back.D == 3 and back.js == 1
        assert check_ptable(back).ok


def test_reads_the_old_header(tmp_path: Path) -> None:
    p = tmp_path / "old.txt"
    p.write_text('"i";"j";"p";"v";"p_ij_ub"\n0;0;1;0;1\n1;0;0.5;-1;0.5\n1;2;0.5;1;1\n')
    back = read_ptable(p)
    assert back.frame["p_int_ub"].to_list() == [1.0, 0.5, 1.0]
    assert back.frame["p_int_lb"].to_list() == [0.0, 0.0, 0.5]


def test_works_with_the_cell_key_method() -> None:
    pt = ptable_counts(D=3, V=2.5, js=2)
    df = pl.DataFrame({"id": range(200), "g": [f"g{k % 40}" for k in range(200)]})
    res = cell_key_counts(df, ["g"], pt, key_columns="id")
    out = res.perturbed
    assert not np.any((out >= 1) & (out <= 2))  # blocked counts never published
    assert np.all(out >= 0)
    assert np.all(np.abs(res.deviation) <= 3)


def test_bad_parameters_and_files(tmp_path: Path) -> None:
    with pytest.raises(SdcError, match="'D'"):
        ptable_counts(D=0, V=1.0)
    with pytest.raises(SdcError, match="'pstay'"):
        ptable_counts(D=2, V=1.0, pstay=1.0)
    with pytest.raises(SdcError, match="'optim'"):
        ptable_counts(D=2, V=1.0, optim=7)
    with pytest.raises(SdcError, match="raise 'V'"):
        ptable_counts(D=2, V=1.0, js=2)  # count 1 can only go to 0 or 3: variance 2 at least
    with pytest.raises(SdcError, match="'format'"):
        write_ptable(ptable_counts(D=2, V=1.0), tmp_path / "x.txt", format="sas")
    bad = tmp_path / "bad.txt"
    bad.write_text("i;j;p;v;p_int_ub\n0;0;1;0;1\n1;x;1;0;1\n")
    with pytest.raises(SdcError, match="Line 3"):
        read_ptable(bad)
    bad.write_text("i;j;p;v\n0;0;1;0\n")
    with pytest.raises(SdcError, match="p_int_ub"):
        read_ptable(bad)
    with pytest.raises(SdcError, match="does not exist"):
        read_ptable(tmp_path / "none.txt")

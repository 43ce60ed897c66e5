"""The table model: hierarchies, aggregation from microdata, relations, export."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit.errors import DataError, ParameterError
from sdckit.tables import CellStatus, Hierarchy, Table, audit
from sdckit.tables.examples import E2_INNER, e2_table, with_margins

REGION = Hierarchy.from_dict({"Total": ["N", "S"], "N": ["N1", "N2"], "S": ["S1"]})


def test_hierarchy_forms() -> None:
    h = Hierarchy.from_code_lengths(["C101", "C102", "C201", "D1"], lengths=[1, 3])
    assert h.codes == ("Total", "C", "C10", "C101", "C102", "C20", "C201", "D", "D1")
    assert [h.codes[i] for i in h.leaves] == ["C101", "C102", "C201", "D1"]
    assert h.depth.tolist() == [0, 1, 2, 3, 3, 2, 3, 1, 2]
    flat = Hierarchy.flat([3, 1, 2])
    assert flat.codes == ("Total", "3", "1", "2")
    with pytest.raises(DataError, match="root"):
        Hierarchy.from_dict({"A": ["B"], "C": ["D"]})
    with pytest.raises(ParameterError, match="lengths"):
        Hierarchy.from_code_lengths(["A1"], lengths=[2, 1])


def _microdata(n: int = 400, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "region": rng.choice(["N1", "N2", "S1"], n),
            "sector": rng.choice(["a", "b", "c"], n),
            "turnover": rng.lognormal(3, 1.5, n),
            "w": rng.uniform(1, 5, n),
        }
    )


def test_from_microdata_matches_brute_force() -> None:
    df = _microdata()
    t = Table.from_microdata(df, {"region": REGION, "sector": None}, "turnover", n_top=2)
    assert t.shape == (6, 4)
    t.check_additivity()
    assert np.allclose(t.constraint_matrix @ t.values, 0)
    frame = t.to_frame()
    parent = {"N1": "N", "N2": "N", "S1": "S"}
    for row in frame.iter_rows(named=True):
        sel = df
        if row["region"] in ("N", "S"):
            sel = sel.filter(pl.col("region").replace_strict(parent) == row["region"])
        elif row["region"] != "Total":
            sel = sel.filter(pl.col("region") == row["region"])
        if row["sector"] != "Total":
            sel = sel.filter(pl.col("sector") == row["sector"])
        x = np.sort(sel["turnover"].to_numpy())[::-1]
        assert row["value"] == pytest.approx(x.sum())
        assert row["n_contributors"] == len(x)
        assert row["top_1"] == pytest.approx(x[0] if len(x) else 0)
        assert row["top_2"] == pytest.approx(x[1] if len(x) > 1 else 0)
    assert frame.filter(pl.col("region") == "S").get_column("value").to_list() == pytest.approx(
        frame.filter(pl.col("region") == "S1").get_column("value").to_list()
    )


def test_weighted_counts_and_magnitudes() -> None:
    df = _microdata(50)
    counts = Table.from_microdata(df, ["sector"], weight="w")
    assert counts.kind == "count"
    assert counts.values[0] == pytest.approx(df["w"].sum())
    assert counts.n_contributors[0] == 50
    mag = Table.from_microdata(df, ["sector"], "turnover", weight="w")
    assert mag.values[0] == pytest.approx((df["w"] * df["turnover"]).sum())


def test_from_microdata_errors() -> None:
    df = _microdata(20)
    with pytest.raises(DataError, match=r"'region'.*not leaves"):
        Table.from_microdata(df, {"region": Hierarchy.flat(["N1", "N2"])}, "turnover")
    with pytest.raises(DataError, match=r"'region'.*not leaves"):
        Table.from_microdata(df.with_columns(pl.lit("N").alias("region")), {"region": REGION})


def test_given_table_checked_for_additivity() -> None:
    full = with_margins(E2_INNER)
    full[2, 0] += 1  # row B's total is off by one
    with pytest.raises(DataError) as info:
        Table.from_array(full, {"region": list("ABCDE"), "industry": ["i1", "i2", "i3"]})
    message = str(info.value)
    # named by cell number and positions (row B is position 2, the total position 0) ...
    assert "cell 8 (position 2 in 'region', 0 in 'industry') along 'industry'" in message
    # ... never by its codes or its value
    for data in ("'B'", "Total", "i1", str(int(full[2, 0]))):
        assert data not in message, message


def test_from_frame_round_trip(tmp_path) -> None:
    t = e2_table()
    frame = t.to_frame()
    again = Table.from_frame(frame, ["region", "industry"], "value", n_contributors=None)
    assert np.array_equal(again.values, t.values)
    d = t.cell(region="D", industry="36210")
    pattern = [t.cell(region=r, industry=c) for r, c in [("B", "36210"), ("B", "36300")]]
    t2 = t.suppress([d], CellStatus.PRIMARY).suppress(
        [*pattern, t.cell(region="D", industry="36300")]
    )
    # the E2 pattern, written with the verdict of its audit (write audits nothing itself)
    out = t2.write(tmp_path / "e2.csv", verdict=audit(t2))
    back = pl.read_csv(out)
    assert back.columns == ["region", "industry", "value", "suppressed", "symbol"]
    assert back.filter(pl.col("suppressed")).get_column("value").to_list() == [None] * 4
    assert back.height == 24
    pq = t2.write(tmp_path / "e2.parquet", published=False)
    assert pl.read_parquet(pq).get_column("value").sum() == pytest.approx(t.values.sum())
    assert not list(tmp_path.glob(".*tmp"))
    with pytest.raises(ParameterError):
        t2.write(tmp_path / "e2.xlsx")


def test_empty_cells_and_summary() -> None:
    df = pl.DataFrame({"r": ["a", "a", "b"], "c": ["x", "y", "x"], "v": [1.0, 2.0, 3.0]})
    t = Table.from_microdata(df, ["r", "c"], "v")
    assert t.status[t.cell(r="b", c="y")] == CellStatus.EMPTY
    assert t.summary().to_dict()["empty cells"] == 1


@given(
    st.lists(st.integers(0, 4), min_size=2, max_size=40),
    st.lists(st.integers(0, 3), min_size=2, max_size=40),
)
def test_relations_hold_for_any_microdata(a: list[int], b: list[int]) -> None:
    n = min(len(a), len(b))
    df = pl.DataFrame({"a": [str(v) for v in a[:n]], "b": [str(v) for v in b[:n]]})
    t = Table.from_microdata(df, ["a", "b"])
    assert np.allclose(t.constraint_matrix @ t.values, 0)
    assert t.values[0] == n
    # every row of M has one +1 (its total) and -1 for each part
    m = t.constraint_matrix.toarray()
    assert np.all((m == 1).sum(axis=1) == 1)

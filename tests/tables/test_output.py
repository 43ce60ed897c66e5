"""Exports and messages: one symbol for suppressed cells, no data values in errors, safe writes."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sdckit.errors import DataError, ParameterError, SdcError
from sdckit.tables import (
    CellStatus,
    MarkedCells,
    Table,
    apply_rules,
    cell_key_counts,
    count_ptable,
    suppress_optimal,
)
from sdckit.tables.examples import e2_table


def _protected():
    t = e2_table()
    d = t.cell(region="D", industry="36210")
    return suppress_optimal(apply_rules(t, MarkedCells(cells=[d], upper=500)), cost="unity")


def test_published_export_does_not_tell_primaries_from_secondaries(tmp_path) -> None:
    res = _protected()
    t = res.table
    assert t.primary.sum() == 1 and t.secondary.sum() >= 3
    frame = t.to_published_frame()
    assert frame.columns == ["region", "industry", "value", "suppressed", "symbol"]
    assert frame["suppressed"].to_list() == t.suppressed.tolist()
    assert frame.filter(pl.col("suppressed"))["value"].null_count() == t.suppressed.sum()
    text = t.write(tmp_path / "pub.csv").read_text(encoding="utf-8")
    for word in ("primary", "secondary", "status", "level"):
        assert word not in text
    # the internal export keeps the status
    internal = pl.read_csv(t.write(tmp_path / "full.csv", published=False))
    assert sorted(internal.filter(pl.col("status") != "safe")["status"].unique()) == [
        "primary",
        "secondary",
    ]


def test_text_in_the_value_column_is_a_clear_error() -> None:
    frame = e2_table().to_frame().select("region", "industry", "value")
    text = [str(v) for v in frame["value"]]
    text[3] = "secret9"
    bad = frame.with_columns(pl.Series("value", text))
    with pytest.raises(DataError, match="'value'") as info:
        Table.from_frame(bad, ["region", "industry"], "value")
    assert "secret9" not in str(info.value)
    counts = frame.with_columns(n=pl.lit(2.5))
    with pytest.raises(DataError, match="whole numbers") as info:
        Table.from_frame(counts, ["region", "industry"], "value", n_contributors="n")
    assert "2.5" not in str(info.value)


def test_suppress_checks_the_cell_numbers() -> None:
    t = e2_table()
    with pytest.raises(ParameterError, match=r"from 0 to 23"):
        t.suppress([24])
    with pytest.raises(ParameterError, match=r"from 0 to 23"):
        t.suppress([-1])
    with pytest.raises(ParameterError, match="one entry per cell"):
        t.suppress(np.array([True, False]))
    with pytest.raises(ParameterError, match="cell numbers"):
        t.suppress([1.5])
    assert t.suppress([3], CellStatus.PRIMARY).primary.sum() == 1
    assert t.suppress([]).suppressed.sum() == 0


def test_write_creates_the_directory_atomically(tmp_path) -> None:
    res = _protected()
    target = tmp_path / "new" / "deeper" / "pub.parquet"
    assert res.table.write(target) == target
    assert pl.read_parquet(target).height == res.table.n_cells
    assert not list(target.parent.glob(".*tmp"))
    (tmp_path / "folder.csv").mkdir()
    with pytest.raises(ParameterError, match="directory"):
        res.table.write(tmp_path / "folder.csv")


def test_cell_key_counts_hides_the_values_of_a_bad_key_column() -> None:
    df = pl.DataFrame({"g": ["a", "b"] * 5, "k": ["0.25", "confidential"] * 5})
    with pytest.raises(SdcError, match="'k'") as info:
        cell_key_counts(df, ["g"], count_ptable(D=2, V=1.0), record_key="k")
    assert "confidential" not in str(info.value)

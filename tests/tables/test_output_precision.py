"""Magnitudes in the exported tables at the input's precision, not the noise of adding floats.

Incomes in cents summed over thousands of records give sums such as ``110429230.61999997``; the
published and internal CSV files write ``110429230.62``.  The rounding never moves a value by
more than the float error (the sums are checked against exact decimal sums), and values with
more decimals than the noise keep them.
"""

from __future__ import annotations

import re
from decimal import Decimal

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.tables import Table
from sdckit.tables._build import decimals_of as _decimals


def test_sums_of_cents_are_written_with_two_decimals(tmp_path) -> None:
    rng = np.random.default_rng(5)
    n = 20_000
    cents = rng.integers(0, 10**9, n)
    frame = pl.DataFrame({
        "region": rng.choice(["A", "B", "C"], n),
        "income": [int(c) / 100 for c in cents],
    })  # fmt: skip
    table = Table.from_microdata(frame, {"region": None}, "income")
    raw = [repr(float(v)) for v in table.values]
    assert any(len(r.split(".")[1]) > 2 for r in raw if "." in r)  # the float noise is there
    text = table.write(tmp_path / "t.csv", published=False).read_text(encoding="utf-8")
    values = pl.read_csv(tmp_path / "t.csv", infer_schema=False)["value"].to_list()
    assert all(re.fullmatch(r"\d+(\.\d{1,2})?", v) for v in values), values
    # the exact decimal sums (hand-free: Decimal arithmetic on the cents)
    exact = {}
    for region, c in zip(frame["region"], cents, strict=True):
        exact[region] = exact.get(region, Decimal(0)) + Decimal(int(c)) / 100
    written = pl.read_csv(tmp_path / "t.csv", infer_schema=False)
    for region, value in written.select("region", "value").iter_rows():
        if region in exact:
            assert Decimal(value) == exact[region]
    assert "e+" not in text


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-(10**11), 10**11), min_size=2, max_size=200),
       st.integers(0, 3))  # fmt: skip
def test_published_sums_are_the_exact_decimal_sums(units: list[int], decimals: int) -> None:
    """Inputs with ``decimals`` decimals: every written sum is the exact decimal sum."""
    scale = 10**decimals
    n = len(units)
    frame = pl.DataFrame({
        "g": [f"g{i % 3}" for i in range(n)], "x": [u / scale for u in units],
    })  # fmt: skip
    table = Table.from_microdata(frame, {"g": None}, "x")
    written = table.to_published_frame()
    exact: dict[str, Decimal] = {}
    for i, u in enumerate(units):
        exact[f"g{i % 3}"] = exact.get(f"g{i % 3}", Decimal(0)) + Decimal(u) / scale
    exact["Total"] = sum(exact.values(), Decimal(0))
    for g, value in written.select("g", "value").iter_rows():
        assert Decimal(repr(value)) == exact[g]


def test_integers_and_real_decimals_are_kept() -> None:
    assert _decimals(np.array([3.0, 4.0])) == 0
    assert _decimals(np.array([1 / 3])) is None
    assert _decimals(np.array([0.125, 2.5])) == 3
    assert _decimals(np.array([np.nan, 1.55, 0.0])) == 2


def test_small_contributions_keep_their_decimals() -> None:
    """The precision is read from every contribution, not only the largest ones a cell keeps:
    1,000 + 900 + 800 + 0.25 is published as 2700.25 (the largest three are whole numbers)."""
    frame = pl.DataFrame({"g": ["a"] * 4 + ["b"] * 3, "x": [1000.0, 900.0, 800.0, 0.25,
                                                             3.0, 4.0, 5.0]})  # fmt: skip
    table = Table.from_microdata(frame, {"g": None}, "x", n_top=3)
    assert table.value_decimals == 2
    written = dict(table.to_published_frame().select("g", "value").iter_rows())
    assert written == {"Total": 2712.25, "a": 2700.25, "b": 12.0}

"""Zero-valued cells as secondary suppressions: a zero primary is protected, every method.

Before, cells of value 0 were never secondary candidates: the optimal method raised "No
suppression pattern protects every primary" and the heuristics returned a pattern in which the
zero primary was exactly recomputable, with only a warning.
"""

from __future__ import annotations

import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.datasets import load_demo
from sdckit.errors import SdcWarning
from sdckit.tables import (
    Dominance,
    Hierarchy,
    MarkedCells,
    MinFrequency,
    PPercent,
    Table,
    apply_rules,
    audit,
    suppress_hypercube,
    suppress_modular,
    suppress_optimal,
)
from sdckit.tables.examples import with_margins

METHODS = [suppress_optimal, suppress_hypercube, suppress_modular]


def _zero_row_table() -> Table:
    """Rows a, b x columns x, y: (a, x) = 0 with 1 contributor, (a, y) = 0 with 5, b positive."""
    values = with_margins([[0, 0], [7, 5]])
    contributors = with_margins([[1, 5], [4, 3]]).astype(int)
    t = Table.from_array(
        values,
        {"r": ["a", "b"], "c": ["x", "y"]},
        n_contributors=contributors,
        kind="magnitude",
    )
    return apply_rules(t, MinFrequency(threshold=3))


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.__name__)
def test_zero_primary_is_protected_through_its_zero_total(method) -> None:
    t = _zero_row_table()
    ax, a_total = t.cell(r="a", c="x"), t.cell(r="a", c="Total")
    assert t.primary.tolist().count(True) == 1 and t.primary[ax]
    assert t.upper[ax] == 1 and t.lower[ax] == 0  # the minimum level; it cannot go below 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", SdcWarning)  # no "under-protected" warning any more
        res = method(t)
    check = audit(res.table, insider=False)
    assert check.ok and res.protected and res.table.protected
    lo, hi = check.interval(ax)
    assert lo == 0 and hi >= 1
    # row a adds up to its total: the zero total must be suppressed for (a, x) to move
    assert res.table.suppressed[a_total]


def test_optimal_pattern_of_the_zero_row_by_hand() -> None:
    # (a, x) up by 1 needs (a, Total) up; then either (b, x) and (b, Total) down (7 + 12) or the
    # column total of x and the grand total up (7 + 12): 19 either way, plus the zero cell
    res = suppress_optimal(_zero_row_table(), cost="value")
    assert res.optimal and res.n_secondary == 3
    assert res.secondary_value == 19
    assert res.cost == pytest.approx(19 + 3e-3)  # the zero penalty is not part of the cost


def _downward_table() -> Table:
    # (a, x) = 5 must move down by 2; the zero cell (a, y) (3 contributors) could take the move
    # for free, the non-zero pattern costs more: the non-zero cells are still preferred
    values = with_margins([[5, 0], [4, 6]])
    contributors = with_margins([[4, 3], [4, 4]]).astype(int)
    t = Table.from_array(
        values, {"r": ["a", "b"], "c": ["x", "y"]}, n_contributors=contributors, kind="magnitude"
    )
    return apply_rules(t, MarkedCells(cells=[t.cell(r="a", c="x")], upper=0, lower=2))


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.__name__)
def test_non_zero_cells_are_preferred_where_they_protect(method) -> None:
    t = _downward_table()
    res = method(t, cost="value")
    assert audit(res.table, insider=False).ok
    zero = res.table.values == 0
    assert not np.any(res.table.secondary & zero)
    if method is suppress_optimal:
        assert res.secondary_value == 5 + 4 + 10  # (a, Total), (b, x), (b, Total)


REGION = Hierarchy.from_dict({"T": ["N", "S"], "N": ["n1", "n2"], "S": ["s1", "s2", "s3"]})


@st.composite
def tables_with_zeros(draw: st.DrawFn) -> Table:
    three = draw(st.booleans())
    n = draw(st.integers(25, 90))
    seed = draw(st.integers(0, 100_000))
    rng = np.random.default_rng(seed)
    region = rng.choice(["n1", "n2", "s1", "s2", "s3"], n)
    data = {
        "region": region,
        "sector": rng.choice(["a", "b", "c"], n),
        "v": np.round(rng.lognormal(2, 1.5, n), 2),
    }
    zero_share = draw(st.sampled_from([0.0, 0.3, 0.7]))
    v = np.where(rng.random(n) < zero_share, 0.0, data["v"])
    zero_region = draw(st.sampled_from([None, "n1", "s3"]))  # a zero row (and a zero sub-total)
    if zero_region is not None:
        v = np.where(region == zero_region, 0.0, v)
    data["v"] = v
    dims: dict = {"region": REGION, "sector": None}
    if three:
        data["size"] = rng.choice(["small", "large"], n)
        dims["size"] = None
    t = Table.from_microdata(pl.DataFrame(data), dims, "v")
    return apply_rules(t, [PPercent(p=20), MinFrequency(threshold=3)])


@settings(max_examples=12, deadline=None)
@given(tables_with_zeros())
def test_every_pattern_passes_the_audit_with_zero_cells(table: Table) -> None:
    methods = [suppress_hypercube, suppress_modular]
    if len(table.dimensions) == 2:
        methods.append(suppress_optimal)
    for method in methods:
        res = method(table)
        check = audit(res.table, insider=False)
        assert check.ok, method.__name__
        assert res.protected, method.__name__
        assert np.all(res.table.suppressed >= table.suppressed)
        # every zero primary can move: its interval is not a point
        zero_primary = table.primary & (table.values == 0)
        for c in np.flatnonzero(zero_primary).tolist():
            lo, hi = check.interval(c)
            assert hi - lo >= table.upper[c] - 1e-9


def test_demo_income_table_with_zero_income_cells() -> None:
    # region x economic status: zero-income cells with 1 or 2 respondents ("under 15"); before,
    # modular left them exactly recomputable and warned
    df = load_demo().head(2000)
    t = Table.from_microdata(df, ["region", "economic_activity"], "income")
    t = apply_rules(t, [MinFrequency(threshold=3), Dominance(n=1, k=80)])
    zero_primary = t.primary & (t.values == 0)
    assert zero_primary.sum() > 0
    for method in METHODS:
        with warnings.catch_warnings():
            warnings.simplefilter("error", SdcWarning)
            res = method(t)
        assert audit(res.table, insider=False).ok, method.__name__

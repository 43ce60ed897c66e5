"""The generated business register, and its tables protected by every suppression method.

Tables of 3 and 4 dimensions with hierarchies (activity divisions in sections, regions in
areas), built with the enterprise as respondent and the enterprise group as holding, rules at
both levels (minimum frequency and p% on holdings, (1, 80)-dominance on enterprises); each
suppression method's pattern is audited by LP (the outsider audit): no primary is below its
protection level.  The tables are cut small (two sections, two areas) to keep the tests fast;
bench/bench_respondents.py runs the full register.
"""

from __future__ import annotations

import io

import numpy as np
import polars as pl
import pytest

from sdckit.datasets import (
    BUSINESS_COLUMNS,
    BUSINESS_HIERARCHIES,
    BUSINESS_ROLES,
    generate_business_register,
)
from sdckit.errors import ParameterError
from sdckit.tables import (
    Dominance,
    GaussSuppression,
    HypercubeSuppression,
    MinFrequency,
    ModularSuppression,
    OptimalSuppression,
    PPercent,
    Table,
    apply_rules,
    audit,
    repair_suppression,
)


def test_same_seed_same_bytes_and_documented_columns() -> None:
    a, b = io.BytesIO(), io.BytesIO()
    generate_business_register(700, seed=5).write_csv(a)
    generate_business_register(700, seed=5).write_csv(b)
    assert a.getvalue() == b.getvalue()
    other = generate_business_register(700, seed=6)
    assert not other.equals(pl.read_csv(io.BytesIO(a.getvalue())))
    df = generate_business_register(700, seed=5)
    assert list(df.columns) == list(BUSINESS_COLUMNS)
    assert set(BUSINESS_ROLES["dimensions"]) <= set(df.columns)
    with pytest.raises(ParameterError, match="n_enterprises"):
        generate_business_register(0)


def test_the_register_is_what_business_tables_are_made_of() -> None:
    df = generate_business_register(3000, seed=2)
    ent = df.group_by("enterprise_id").agg(
        pl.col("holding_id").n_unique().alias("holdings"),
        pl.col("holding_id").first(),
        pl.col("activity").n_unique().alias("activities"),
        pl.col("size_class").n_unique().alias("sizes"),
        pl.col("turnover").sum(),
        pl.col("local_unit_id").n_unique().alias("units"),
    )
    assert ent.height == 3000
    # one holding, one activity and one size class per enterprise; some have several units
    assert ent["holdings"].max() == 1 and ent["activities"].max() == 1 and ent["sizes"].max() == 1
    assert 0 < (ent["units"] > 1).mean() < 0.5
    # most enterprises independent, groups of 2 to 20 enterprises
    groups = ent.drop_nulls("holding_id").group_by("holding_id").len()["len"]
    assert 0.6 < ent["holding_id"].is_null().mean() < 0.95
    assert groups.min() >= 2 and groups.max() <= 20
    # skewed: the 1 % largest enterprises have a large share of the turnover
    t = np.sort(ent["turnover"].to_numpy())[::-1]
    assert t[: len(t) // 100].sum() > 0.2 * t.sum()
    # the codes are leaves of the published hierarchies
    for col, tree in BUSINESS_HIERARCHIES.items():
        leaves = {c for k, v in tree.items() if k != "Total" for c in v}
        assert set(df[col].unique()) <= leaves


def _register() -> pl.DataFrame:
    df = generate_business_register(1500, seed=7)
    df = df.filter(pl.col("section").is_in(["C", "G"]) & pl.col("area").is_in(["N", "S"]))
    small = pl.col("size_class") == "0-9"
    ltd = pl.col("legal_form") == "limited company"
    return df.with_columns(
        size_class=pl.when(small).then(pl.lit("small")).otherwise(pl.lit("large")),
        legal_form=pl.when(ltd).then(pl.lit("ltd")).otherwise(pl.lit("other")),
    )


ACTIVITY = {k: v for k, v in BUSINESS_HIERARCHIES["activity"].items() if k in ("C", "G")}
REGION = {k: v for k, v in BUSINESS_HIERARCHIES["region"].items() if k in ("N", "S")}
DIMENSIONS = {
    3: {"activity": {"Total": ["C", "G"], **ACTIVITY}, "region": {"Total": ["N", "S"], **REGION},
        "size_class": None},
    4: {"section": None, "region": {"Total": ["N", "S"], **REGION}, "size_class": None,
        "legal_form": None},
}  # fmt: skip
RULES = [MinFrequency(threshold=3), PPercent(p=10), Dominance(n=1, k=80, level="respondent")]


@pytest.fixture(scope="module")
def marked() -> dict[int, Table]:
    df = _register()
    out = {}
    for d, dims in DIMENSIONS.items():
        t = Table.from_microdata(
            df, dims, "turnover", respondent="enterprise_id", holding="holding_id"
        )
        out[d] = apply_rules(t, RULES)
    return out


def test_the_tables_count_holdings_and_flag_cells_records_would_pass(marked) -> None:
    t = marked[3]
    assert t.n_cells == 10 * 8 * 3
    assert t.contributions is not None and t.contributions.level == "holding"
    assert t.respondent_contributors is not None
    assert np.all(t.n_contributors <= t.respondent_contributors)
    by_records = apply_rules(Table.from_microdata(_register(), DIMENSIONS[3], "turnover"), RULES)
    # cells of several local units of fewer than 3 holdings: primary only with the ids
    assert np.sum(t.primary & ~by_records.primary) > 0


METHODS = {
    "hypercube": HypercubeSuppression,
    "modular": ModularSuppression,
    "optimal": OptimalSuppression,
    "gauss": GaussSuppression,
}


@pytest.mark.parametrize(
    ("dims", "method"),
    [(3, m) for m in METHODS] + [(4, m) for m in ("hypercube", "modular", "gauss")],
)
def test_every_method_protects_every_primary_of_the_register_tables(
    marked, dims: int, method: str
) -> None:
    t = marked[dims]
    assert int(t.primary.sum()) > 5
    result = METHODS[method]().apply(t)
    out = result.table
    assert np.array_equal(out.primary, t.primary)
    # the method's own claim is against an outsider
    verdict = audit(out, insider=False)
    under = out.primary[verdict.under_protected]
    assert int(under.sum()) == 0, f"{method}: {int(under.sum())} primaries under-protected"
    assert verdict.ok
    # each enterprise (holding) knows its own contributions: the repair makes the pattern
    # pass the insider audit too, and the outsider's still
    repaired = repair_suppression(out, insider=True)
    assert repaired.protected
    final = audit(repaired.table, insider=True)
    assert final.ok and final.insider_audit is not None and final.insider_audit.ok
    assert audit(repaired.table, insider=False).ok
    assert np.all(repaired.table.suppressed >= out.suppressed)

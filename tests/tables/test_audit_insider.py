"""The one audit entry point (:mod:`sdckit.tables.audit`) and the insider audit.

Hand-computed cases: the R1 attack of issue 29 (two single-enterprise primaries in one row,
the third suppressed cell of the row computable from the published cells), the union of
sdcTools UserSupport#307, an insider with contributions in several cells; the declaration the
table jobs read; ``Table.write`` taking the verdict; and every method's pattern on a small
three-way table with single-contributor cells passing the insider audit after the repair.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl
import pytest

import sdckit.tables.audit as audit_package
from sdckit.errors import ParameterError, VerificationError
from sdckit.jobs import sections
from sdckit.jobs.tables import check_audit
from sdckit.tables import (
    Audit,
    MarkedCells,
    MinFrequency,
    PPercent,
    Table,
    apply_rules,
    audit,
    repair_suppression,
    suppress_gauss,
    suppress_hypercube,
    suppress_modular,
    suppress_optimal,
)
from sdckit.tables._contributors import Contributions
from sdckit.tables.audit import insider_audit

# rows (Total, r1, r2, r3) x columns (Total, c1, c2, c3), flat cell = 4 * row + column
INNER = np.array([[5, 7, 20], [30, 40, 25], [10, 12, 8]])
CONTRIBUTORS = np.array([[1, 1, 5], [6, 8, 5], [3, 3, 2]])
A, B, C, D, E = 5, 6, 7, 9, 10  # r1c1, r1c2, r1c3, r2c1, r2c2


def _margins(x: np.ndarray) -> np.ndarray:
    x = np.vstack([x.sum(0), x])
    return np.hstack([x.sum(1)[:, None], x])


def r1_table() -> Table:
    """Issue 29's example: A and B one enterprise each, primaries of one row; C, the third
    suppressed cell of that row, is the only suppressed cell of its column (computable);
    D and E close the cycle A, B, E, D."""
    t = Table.from_array(
        _margins(INNER),
        {"r": ["r1", "r2", "r3"], "c": ["c1", "c2", "c3"]},
        n_contributors=_margins(CONTRIBUTORS),
        kind="magnitude",
    )
    return apply_rules(t, MarkedCells(cells=[A, B], upper=2, lower=2)).suppress([C, D, E])


def test_the_outsider_audit_passes_and_the_insider_one_fails_by_the_r1_attack() -> None:
    t = r1_table()
    outsider = audit(t, insider=False)
    assert outsider.ok
    assert outsider.interval(A) == (0.0, 12.0)  # A + B = 12 (row r1 less C), A, B >= 0
    assert outsider.computable_secondaries.tolist() == [
        C
    ]  # column c3: the column total less r2c3, r3c3
    found = audit(t)  # insider on by default for magnitudes
    assert not found.ok and not found.table.protected
    ia = found.insider_audit
    # the respondent of A knows A: B = 12 - A exactly; and the other way round
    assert sorted(zip(ia.unit.tolist(), ia.cell.tolist(), strict=True)) == [(A, B), (B, A)]
    assert ia.exact.all()
    assert ia.minimum.tolist() == ia.maximum.tolist()
    assert sorted(ia.minimum.tolist()) == [5.0, 7.0]
    assert found.under_protected.tolist() == [A, B]
    frame = found.to_frame()
    assert frame.filter(pl.col("cell") == A)["insider_protected"].to_list() == [False]
    assert ("insider audit: primaries computed exactly", 2) in found.summary().rows


def test_the_repair_protects_the_primaries_from_the_insiders() -> None:
    t = r1_table()
    res = repair_suppression(t, cost="unity")
    assert res.protected is True
    assert res.details["repaired_for_insiders"] >= 1
    after = audit(res.table)
    assert after.ok and after.insider_audit.ok
    assert res.table.suppressed[[A, B, C, D, E]].all()  # nothing published that was hidden


def test_without_the_insider_audit_the_repair_leaves_the_pattern() -> None:
    res = repair_suppression(r1_table(), cost="unity", insider=False)
    assert res.details["repaired"] == 0 and res.protected is True


def test_rule_r1_by_the_rank_test_is_the_audits_insider() -> None:
    t = Table.from_array(
        _margins(INNER),
        {"r": ["r1", "r2", "r3"], "c": ["c1", "c2", "c3"]},
        n_contributors=_margins(CONTRIBUTORS),
        kind="magnitude",
    )
    t = apply_rules(t, MarkedCells(cells=[A, B], upper=0)).suppress([C, D, E])
    assert audit(t, method="rank", insider=False).ok
    by_rank = audit(t, method="rank")
    assert not by_rank.ok and by_rank.under_protected.tolist() == [A, B]
    assert by_rank.parameters["method"] == "rank"
    with pytest.raises(ParameterError, match="unions"):
        audit(t, method="rank", unions=True)


def test_an_insider_with_contributions_in_several_cells() -> None:
    """One respondent (unit 0) contributes 1 to A and 29 to D: it knows A >= 1, D >= 29.

    No single-contributor cell.  In the cycle A, B, E, D, A rises by t where B and D fall by
    t (A + B = 12: row r1 less C, which column c3 gives).  Outsider: A in [0, 12].  Unit 0:
    D = 30 - t >= 29 leaves t <= 1, so A <= 6, short of A's upper level (5 + 2); downwards
    A = 5 - t >= 1 (its own contribution) reaches 1 <= 5 - 2.  Unit 1 (4 of A) knows A >= 4:
    its lower level is capped at 5 - 4 = 1 (it knows A is at least its own 4), which 4
    meets; unit 2 (1 of D) learns nothing that matters.
    """
    t = Table.from_array(
        _margins(INNER),
        {"r": ["r1", "r2", "r3"], "c": ["c1", "c2", "c3"]},
        n_contributors=_margins(CONTRIBUTORS + 1),
        kind="magnitude",
    )
    t = apply_rules(t, MarkedCells(cells=[A], upper=2, lower=2)).suppress([B, C, D, E])
    grid = np.arange(16).reshape(4, 4)
    row1, row2, col1 = grid[1, 0], grid[2, 0], grid[0, 1]
    # (unit, cell, contribution), totals included; the other cells' units are left out (no
    # one is their only contributor)
    entries = [
        (0, A, 1.0), (0, D, 29.0), (0, row1, 1.0), (0, row2, 29.0), (0, col1, 30.0), (0, 0, 30.0),
        (1, A, 4.0), (1, row1, 4.0), (1, col1, 4.0), (1, 0, 4.0),
        (2, D, 1.0), (2, row2, 1.0), (2, col1, 1.0), (2, 0, 1.0),
    ]  # fmt: skip
    units, cells, values = (np.array(x) for x in zip(*entries, strict=True))
    contributions = Contributions("respondent", units, cells, values.astype(float), 3)
    with_units = replace(t, contributions=contributions)
    assert audit(with_units, insider=False).ok
    found = insider_audit(with_units, intervals="exact")
    assert found.cell.tolist() == [A] and found.unit.tolist() == [0]
    assert (found.minimum[0], found.maximum[0]) == (1.0, 6.0)
    assert not found.exact[0] and found.level == "respondent"
    assert not audit(with_units).ok


def test_the_union_audit_judges_unions_by_the_tables_rules() -> None:
    """sdcTools UserSupport#307: A = 15, B = 5, C = 3 under a total of 23 and a minimum
    frequency of 11: B and C are primary, their union (8 = 23 - 15) is published exactly
    and is below 11 too."""
    t = Table.from_array(np.array([23, 15, 5, 3]), {"v1": ["A", "B", "C"]}, kind="count")
    marked = apply_rules(t, MinFrequency(threshold=11))
    assert marked.primary.tolist() == [False, False, True, True]
    assert audit(marked).ok  # each cell alone: B + C = 8 known, each in [0, 8]
    by_rules = audit(marked, unions=True)
    assert not by_rules.ok
    assert [g.tolist() for g in by_rules.union_audit.under_protected] == [[2, 3]]
    # the former default (a minimum frequency of 3) passed the union of 8
    assert audit(marked, unions=[MinFrequency(threshold=3)]).ok
    # with A suppressed too (tau-ARGUS's optimal pattern) the union of B and C is protected
    assert audit(marked.suppress([1]), unions=True).ok


def test_the_audit_is_declared_and_the_job_reads_the_declaration() -> None:
    assert list(Audit.parameters)[:3] == ["method", "insider", "intervals"]
    assert sections.AUDIT_PARAMETERS is Audit.parameters
    assert check_audit({"insider": True, "intervals": "check"}) == {
        "insider": True,
        "intervals": "check",
    }
    with pytest.raises(ParameterError, match=r"\[audit\].*'insiders'.*insider"):
        check_audit({"insiders": True})
    with pytest.raises(ParameterError, match=r"\[audit\]"):
        check_audit({"method": "simplex"})
    with pytest.raises(ParameterError, match="rank"):
        check_audit({"intervals": "rank", "integer_aware": True})
    # the package is callable as the function it replaces
    t = r1_table()
    assert audit_package(t, insider=False).ok and audit_package.audit is not audit_package


def test_a_table_job_audits_the_insiders(tmp_path) -> None:
    from sdckit.jobs.tables import _audit

    t = r1_table()
    assert not _audit(t, {"insider": True}).ok
    assert _audit(t, {"insider": False}).ok
    assert _audit(t, {}).insider_audit is not None  # on for a magnitude table


def test_write_takes_the_verdict_and_does_not_audit(tmp_path) -> None:
    t = r1_table()
    with pytest.raises(VerificationError, match="not been audited"):
        t.write(tmp_path / "t.csv")
    failed = audit(t)
    with pytest.raises(VerificationError, match="does not protect"):
        t.write(tmp_path / "t.csv", verdict=failed)
    passed = audit(t, insider=False)
    assert t.write(tmp_path / "t.csv", verdict=passed).exists()
    assert passed.table.write(tmp_path / "u.csv").exists()  # the audit's table carries it
    other = audit(t.suppress([11]), insider=False)
    with pytest.raises(ParameterError, match="another suppression pattern"):
        t.write(tmp_path / "v.csv", verdict=other)
    assert not (tmp_path / "v.csv").exists()


def business_records(seed: int = 29, n: int = 70) -> pl.DataFrame:
    """Enterprises: location x activity x size class, a skewed turnover (lognormal)."""
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "location": rng.choice(["L1", "L2", "L3"], n, p=[0.5, 0.3, 0.2]),
            "activity": rng.choice(["A", "B", "C"], n, p=[0.5, 0.35, 0.15]),
            "size": rng.choice(["s", "m", "l"], n, p=[0.6, 0.3, 0.1]),
            "turnover": np.round(rng.lognormal(3.0, 1.2, n), 1),
        }
    )


SMALL_RULES = [MinFrequency(threshold=3, safety_range=10.0), PPercent(p=15.0)]


@pytest.mark.parametrize(
    "method",
    [suppress_hypercube, suppress_modular, suppress_optimal, suppress_gauss],
    ids=["hypercube", "modular", "optimal", "gauss"],
)
def test_every_methods_pattern_passes_the_insider_audit_after_the_repair(method) -> None:
    t = Table.from_microdata(business_records(), ["location", "activity", "size"], "turnover")
    marked = apply_rules(t, SMALL_RULES)
    assert (marked.primary & (marked.n_contributors == 1)).sum() >= 2  # single-enterprise cells
    pattern = method(marked).table
    before = audit(pattern, intervals="check")
    # each method leaves some primary below its level for an insider on this table
    assert before.single_cell_protected.all() and not before.insider_audit.ok
    repaired = repair_suppression(pattern, cost="value")
    final = audit(repaired.table)
    assert final.ok and final.insider_audit.ok and repaired.protected is True
    assert (repaired.table.suppressed >= pattern.suppressed).all()  # only more suppressions


def test_the_reports_show_the_insider_audit() -> None:
    from sdckit.report._table import render_table_report

    res = repair_suppression(r1_table(), cost="unity")
    checked = audit(res.table)
    internal = render_table_report(res, kind="internal", audit=checked)
    assert "Insider audit: each record" in internal
    assert "none brings a primary below its protection levels" in internal
    external = render_table_report(res, kind="external", audit=checked)
    assert "with its own contributions" in external
    failing = render_table_report(r1_table(), kind="internal", audit=audit(r1_table()))
    assert "2 primary cell(s) below their levels for some insider, 2 of them" in failing
    assert "1 secondary suppression(s) can be computed exactly" in failing


def test_the_atoms_method_audits_linked_tables_over_the_records() -> None:
    from sdckit.tables import LinkedTables

    df = pl.DataFrame({"r": list("aaaabbbb"), "s": list("mfmfmfff"), "g": list("xyxyyxyx")})
    linked = LinkedTables.from_microdata(df, [["r", "s"], ["r", "g"]])
    assert audit(linked, method="atoms").ok  # nothing suppressed
    with pytest.raises(ParameterError, match="linked tables"):
        audit(r1_table(), method="atoms")


def test_a_table_job_repairs_the_pattern_for_the_insiders() -> None:
    from sdckit.jobs.tables import protect_table
    from sdckit.tables import ModularSuppression

    t = Table.from_microdata(business_records(), ["location", "activity", "size"], "turnover")
    marked = apply_rules(t, SMALL_RULES)
    result, checked = protect_table(marked, ModularSuppression(), {"intervals": "check"})
    assert checked.ok and checked.insider_audit.ok and result.protected
    assert result.details["repaired_for_insiders"] > 0
    assert result.n_secondary == int(result.table.secondary.sum())
    assert np.array_equal(checked.table.status, result.table.status)
    # with the insider audit off the method's own pattern is published
    _, outsider = protect_table(marked, ModularSuppression(), {"insider": False})
    assert outsider.ok and outsider.insider_audit is None


def _unit_interval_by_linprog(t: Table, unit: int, target: int) -> tuple[float, float]:
    """The interval of ``target`` for ``unit`` from scipy's linprog over the whole table (an
    independent model: every published cell fixed, suppressed cells within their a priori
    bounds, the unit's sole cells fixed, its other cells at least its contribution)."""
    from scipy.optimize import linprog

    c = t.contributions
    mine = c.unit == unit
    per_cell = np.bincount(c.cell, minlength=t.n_cells)
    lo = np.where(t.suppressed, np.minimum(t.lower_bounds, t.values), t.values)
    hi = np.where(t.suppressed, np.maximum(t.upper_bounds, t.values), t.values)
    for cell, value in zip(c.cell[mine].tolist(), c.value[mine].tolist(), strict=True):
        if not t.suppressed[cell]:
            continue
        if per_cell[cell] == 1:
            lo[cell] = hi[cell] = t.values[cell]
        elif t.lower_bounds[cell] >= 0:
            lo[cell] = max(lo[cell], value)
    m = t.constraint_matrix.toarray()
    bounds = list(zip(lo.tolist(), hi.tolist(), strict=True))
    out = []
    for sign in (1.0, -1.0):
        cost = np.zeros(t.n_cells)
        cost[target] = sign
        res = linprog(cost, A_eq=m, b_eq=np.zeros(len(m)), bounds=bounds, method="highs")
        assert res.status == 0
        out.append(sign * res.fun)
    return out[0], out[1]


def test_exact_intervals_of_the_failing_pairs_agree_with_an_independent_lp() -> None:
    """The exact mode decides like the check mode and gives each failing (unit, primary)
    pair the interval scipy's linprog finds on the unit's whole-table model."""
    from sdckit.datasets import BUSINESS_HIERARCHIES, generate_business_register

    register = generate_business_register(120, seed=5)
    dims = {"activity": BUSINESS_HIERARCHIES["activity"], "region": BUSINESS_HIERARCHIES["region"]}
    t = Table.from_microdata(
        register, dims, "turnover", respondent="enterprise_id", holding="holding_id"
    )
    t = apply_rules(t, [MinFrequency(threshold=3), PPercent(p=15)])
    pattern = suppress_modular(t).table
    exact = insider_audit(pattern, intervals="exact")
    check = insider_audit(pattern, intervals="check")
    # the modular pattern is an outsider's: holdings break it, some exactly, some not
    assert len(exact.cell) == 28 and exact.exact.sum() == 5
    pairs = sorted(zip(exact.unit.tolist(), exact.cell.tolist(), strict=True))
    assert pairs == sorted(zip(check.unit.tolist(), check.cell.tolist(), strict=True))
    for u, cell, low, high in zip(
        exact.unit.tolist(), exact.cell.tolist(), exact.minimum, exact.maximum, strict=True
    ):
        want = _unit_interval_by_linprog(pattern, u, cell)
        assert (low, high) == pytest.approx(want, rel=1e-6, abs=1e-6)


def test_the_table_command_says_the_insider_audit_and_its_repair(tmp_path) -> None:
    from typer.testing import CliRunner

    from sdckit.cli.app import app

    business_records().write_csv(tmp_path / "firms.csv")
    (tmp_path / "job.toml").write_text(
        'title = "Firms"\n[input]\nfile = "firms.csv"\n'
        '[table]\ndimensions = ["location", "activity", "size"]\nvalue = "turnover"\n'
        '[[rules]]\nrule = "min_frequency"\nthreshold = 3\nsafety_range = 10.0\n'
        '[[rules]]\nrule = "p_percent"\np = 15.0\n'
        '[suppression]\nmethod = "modular"\n[output]\ntable = "out.csv"\n'
    )
    out = CliRunner().invoke(app, ["table", str(tmp_path / "job.toml")], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    line = next(x for x in out.output.splitlines() if "insider audit" in x)
    assert "records attacking" in line and "passed" in line
    # the modular pattern is repaired for the insiders (as protect_table does above)
    assert "secondaries added for the insiders" in out.output

"""The stepwise runner of a table job (sdckit.jobs.TableRunner): the rules, the suppression,
the refusal worded once, and the table job of a state that reproduces it byte for byte."""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sdckit.errors import ParameterError
from sdckit.jobs import TableOutputs, TableRunner, load_table_job, run_table_job
from sdckit.jobs.table_runner import table_refusal


def records(seed: int, n: int) -> pl.DataFrame:
    """Small microdata: two coded dimensions and a positive magnitude."""
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "region": rng.choice(["01", "02", "03"], n),
            "sector": rng.choice(["A", "B", "C", "D"], n),
            "turnover": np.round(rng.lognormal(6, 1, n), 2),
            "w": np.round(rng.uniform(1, 30, n), 1),
        }
    )


def runner_on(tmp: Path, seed: int = 1, n: int = 60, **spec: object) -> TableRunner:
    path = tmp / "records.csv"
    records(seed, n).write_csv(path)
    table = {"dimensions": ["region", "sector"], "value": "turnover", **spec}
    return TableRunner.from_input({"file": str(path)}, table)


def test_rules_mark_the_primaries_and_a_new_rule_set_forgets_the_suppression(
    tmp_path: Path,
) -> None:
    run = runner_on(tmp_path)
    # the codes are read as text, as a table job reads them ("01" stays "01")
    assert "01" in run.table.hierarchies[0].codes
    assert run.marked is None
    run.set_rules([{"rule": "min_frequency", "threshold": 3}])
    # hand-counted: the cells with 1 or 2 records are the primaries (empty cells are not)
    counts = run.table.n_contributors
    expected = int(((counts >= 1) & (counts <= 2)).sum())
    assert expected > 0 and int(run.marked.primary.sum()) == expected
    run.set_suppression("hypercube")
    result, audit = run.protect()
    assert run.result is result and audit.ok
    assert run.result.table.suppressed.sum() >= expected
    run.set_rules([{"rule": "min_frequency", "threshold": 2}])
    assert run.result is None and run.audit is None
    with pytest.raises(ParameterError, match=r"rule 1 \(min_frequency\).*'threshold'"):
        run.set_rules([{"rule": "min_frequency", "treshold": 2}])
    with pytest.raises(ParameterError, match="rounding method"):
        run.set_suppression("controlled_rounding")
    with pytest.raises(ParameterError, match=r"\[audit\].*'intervals'"):
        run.set_audit({"intervals": "everything"})
    with pytest.raises(ParameterError, match=r'intervals = "rank".*remove integer'):
        run.set_audit({"intervals": "rank", "integer": True})
    run.set_rules([])
    with pytest.raises(ParameterError, match="Add a sensitivity rule first"):
        run.protect()


def test_the_refusal_is_the_sentence_sdckit_table_prints() -> None:
    failed = SimpleNamespace(ok=False, intervals="check", under_protected=[1, 4, 9])
    assert table_refusal(failed, [Path("pub.csv"), Path("ext.html")]) == (
        "the audit found 3 under-protected primary cell(s); not written: pub.csv and "
        "ext.html. Do not publish this pattern."
    )
    rank = SimpleNamespace(ok=False, intervals="rank", under_protected=[2])
    assert "1 exactly computable primary" in str(table_refusal(rank, [], where="T: "))
    passed = SimpleNamespace(ok=True, intervals="check", under_protected=[])
    assert table_refusal(passed, [Path("pub.csv")]) is None
    joint = table_refusal(
        passed, [Path("p.csv")], joint_ok=False, details={"atom_audit_under_protected": 2}
    )
    assert joint is not None and joint.startswith(
        "the joint audit over the records' code combinations found 2 under-protected"
    )


def test_write_withholds_an_unprotected_pattern_and_removes_an_older_one(
    tmp_path: Path,
) -> None:
    from sdckit.tables.suppression._common import make_result

    run = runner_on(tmp_path)
    run.set_rules([{"rule": "min_frequency", "threshold": 3}])
    out = TableOutputs(table=tmp_path / "o" / "pub.csv", table_full=tmp_path / "o" / "full.csv")
    run.protect()
    written, refusal = run.write(out)
    assert refusal is None and written == [out.table_full, out.table]
    # the primaries alone suppressed (no secondaries): the job's audit refuses the pattern
    marked = run.marked
    run.set_result(make_result(marked, marked, "none", marked.values, False, 0.0, None))
    written, refusal = run.write(out)
    assert not run.audit.ok  # a lone primary of a row is its margin minus the others
    assert written == [out.table_full]
    assert refusal == table_refusal(run.audit, [out.table])
    assert not out.table.exists()  # the older published table is gone
    with pytest.raises(ParameterError, match="'table' and 'table_full' are the same file"):
        run.write(TableOutputs(table=out.table, table_full=out.table))


# ------------------------------------------------------------------ the round trip
RULES = st.sampled_from(
    [
        {"rule": "min_frequency", "threshold": 3},
        {"rule": "min_frequency", "threshold": 2},
        {"rule": "dominance", "n": 1, "k": 80.0},
        {"rule": "p_percent", "p": 15.0},
    ]
)
METHODS = st.sampled_from(
    [
        ("hypercube", {}),
        ("hypercube", {"cost": "unity"}),
        ("modular", {"n_jobs": 1}),
        ("optimal", {"max_iterations": 200}),
        ("gauss", {}),
    ]
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data_seed=st.integers(0, 10**6),
    n=st.integers(30, 120),
    rules=st.lists(RULES, min_size=1, max_size=2, unique_by=lambda r: str(r)),
    method=METHODS,
    audit=st.sampled_from([None, {}, {"intervals": "check"}]),
    hierarchy=st.booleans(),
    weight=st.booleans(),
)
def test_a_table_job_built_step_by_step_round_trips_through_its_toml(
    data_seed: int,
    n: int,
    rules: list[dict],
    method: tuple[str, dict],
    audit: dict | None,
    hierarchy: bool,
    weight: bool,
) -> None:
    """A table from a CSV file of records -> rules -> suppression -> to_toml -> load_table_job
    -> run_table_job: the same published table, byte for byte, and the same decision."""
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        spec: dict = {"weight": "w"} if weight else {}
        if hierarchy:  # region 01 and 02 in a group of their own under the total
            spec["hierarchies"] = {"region": {"Total": ["N", "03"], "N": ["01", "02"]}}
        built = runner_on(tmp, data_seed, n, **spec)
        built.set_rules(rules)
        built.set_suppression(*method)
        built.set_audit(audit)
        built.protect()
        a = TableOutputs(table=tmp / "a" / "pub.csv", table_full=tmp / "a" / "full.csv")
        written, refusal = built.write(a)
        job_path = tmp / "job.toml"
        job_path.write_text(
            built.to_toml({"table": "b/pub.csv", "table_full": "b/full.csv"}), encoding="utf-8"
        )
        job = load_table_job(job_path)
        result = run_table_job(job)
        event("published" if refusal is None else "withheld")
        assert (refusal is None) == result.protected
        assert [p.name for p in written] == [p.name for p in result.written]
        assert a.table_full.read_bytes() == (tmp / "b" / "full.csv").read_bytes()
        if refusal is None:
            assert a.table.read_bytes() == (tmp / "b" / "pub.csv").read_bytes()
        else:
            assert refusal == table_refusal(result.audit, [a.table])
            assert not (tmp / "b" / "pub.csv").exists()
        # the loaded job's runner writes the same job again (its tables as they were read)
        again = TableRunner.from_job(job).to_document()
        assert again["rules"] == rules and again["suppression"] == built.suppression


def test_a_runner_from_a_job_writes_back_what_was_changed_and_the_input_it_read(
    tmp_path: Path,
) -> None:
    """A runner made from a job file: the rules set afterwards are the ones written back (not
    the job file's), and the input is the file the job read, as an absolute path."""
    folder = tmp_path / "jobs"
    folder.mkdir()
    records(2, 80).write_csv(folder / "records.csv")
    (folder / "job.toml").write_text(
        '[input]\nfile = "records.csv"\n[table]\ndimensions = ["region", "sector"]\n'
        'value = "turnover"\n[[rules]]\nrule = "min_frequency"\nthreshold = 3\n'
        '[suppression]\nmethod = "hypercube"\n[output]\ntable = "out.csv"\n',
        encoding="utf-8",
    )
    run = TableRunner.from_job(load_table_job(folder / "job.toml"))
    run.set_rules([{"rule": "min_frequency", "threshold": 5}])
    document = run.to_document()
    assert document["rules"] == [{"rule": "min_frequency", "threshold": 5}]
    assert document["input"]["file"] == str((folder / "records.csv").resolve())
    built = TableRunner.from_input(
        {"file": "records.csv"}, {"dimensions": ["region"], "value": "turnover"}, base=folder
    )
    assert built.input["file"] == str((folder / "records.csv").resolve())

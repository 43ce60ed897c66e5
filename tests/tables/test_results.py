"""Rich table results: a SuppressionResult holds the method that made it (``protection``, as
``Protected`` does), a table job's result is the direct call's, and linked tables give one
result per table."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from sdckit.datasets import generate_census
from sdckit.io import read_data, write_data
from sdckit.protection import get_method
from sdckit.tables import (
    GaussSuppression,
    HypercubeSuppression,
    LinkedTables,
    MinFrequency,
    ModularSuppression,
    OptimalSuppression,
    apply_rules,
)
from sdckit.tables.table import CellStatus

METHODS = [GaussSuppression, HypercubeSuppression, ModularSuppression, OptimalSuppression]


@pytest.mark.parametrize("cls", METHODS, ids=lambda c: c.alias)
def test_each_result_holds_the_method_that_made_it(cls: type) -> None:
    method, table = cls.contract_example()
    method.set_params(cost="unity")
    res = method.apply(table)
    assert type(res.protection) is cls
    assert res.protection is not method  # a clone: the record does not follow the caller
    assert res.params == method.get_params() and res.params["cost"] == "unity"
    assert res.method == cls.alias == get_method(res.method, "table").alias
    method.set_params(cost="value")
    assert res.params["cost"] == "unity"
    # the summary names the method and its (scalar) parameters; to_frame is the table's
    rows = dict(res.summary().rows)
    assert rows["method"] == cls.alias and rows["parameter cost"] == "unity"
    assert res.to_frame().height == table.n_cells


def test_a_per_cell_parameter_stays_out_of_the_summary() -> None:
    _, table = GaussSuppression.contract_example()
    cost = np.arange(1.0, table.n_cells + 1)
    res = GaussSuppression(cost=cost).apply(table)
    assert np.array_equal(res.params["cost"], cost)
    rows = dict(res.summary().rows)
    assert "parameter cost" not in rows and rows["parameter singletons"] is True


def test_with_details_adds_figures_and_keeps_the_rest() -> None:
    method, table = HypercubeSuppression.contract_example()
    res = method.apply(table)
    more = res.with_details(linked_with=[1])
    assert more.details == {**res.details, "linked_with": [1]}
    assert "linked_with" not in res.details
    assert more.protection is res.protection and more.table is res.table


# --------------------------------------------------------------------------- jobs
@pytest.fixture(scope="module")
def census_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("results") / "census.csv"
    write_data(generate_census(1500, seed=5), path)
    return path


def _job(tmp_path: Path, data: Path, name: str, dims: str, method: str) -> Path:
    text = textwrap.dedent(
        f"""
        title = "{name}"
        [input]
        file = "{data.as_posix()}"
        [table]
        dimensions = [{dims}]
        [[rules]]
        rule = "min_frequency"
        threshold = 3
        [suppression]
        method = "{method}"
        cost = "unity"
        [output]
        table = "out/{name}.csv"
        """
    )
    path = tmp_path / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("method", ["gauss", "hypercube"])
def test_a_jobs_result_is_the_direct_calls(tmp_path: Path, census_csv: Path, method: str) -> None:
    from sdckit.jobs import load_table_job, run_table_job

    job = load_table_job(_job(tmp_path, census_csv, "one", '"region", "occupation"', method))
    got = run_table_job(job, write=False).suppression
    direct = job.suppression.apply(apply_rules(job.table, list(job.rules)))
    assert type(got.protection) is type(direct.protection) is type(job.suppression)
    assert got.params == direct.params == job.suppression_params
    assert got.method == direct.method == method
    assert got.table.status.tolist() == direct.table.status.tolist()
    assert (got.n_secondary, got.secondary_value, got.cost, got.protected) == (
        direct.n_secondary,
        direct.secondary_value,
        direct.cost,
        direct.protected,
    )


def test_linked_tables_give_one_result_per_table(census_csv: Path) -> None:
    frame = read_data(census_csv, text_columns=["region", "occupation", "sex", "age_group"])
    ref = LinkedTables.from_microdata(
        frame, [["region", "occupation"], ["region", "sex", "age_group"]]
    )
    marked = ref.with_tables([apply_rules(t, [MinFrequency(threshold=3)]) for t in ref.tables])
    methods = [GaussSuppression(cost="unity"), HypercubeSuppression()]
    out = marked.protect(methods)
    assert out.protected and len(out.results) == len(out.linked.tables) == 2
    for k, res in enumerate(out.results):
        table = out.linked.tables[k]
        assert type(res.protection) is type(methods[k])
        assert res.params == methods[k].get_params()
        assert res.table.status.tolist() == table.status.tolist()
        assert res.n_secondary == int((table.status == CellStatus.SECONDARY).sum())
        assert res.protected is True and res.table.protected is True
        assert res.details["joint_rounds"] == out.rounds
        assert res.details["joint_repairs"] == out.joint_repairs
        # its cost: the secondaries under its own method's cost
        w = np.ones(table.n_cells) if k == 0 else np.abs(marked.tables[k].values) + 1e-3
        assert res.cost == pytest.approx(w[table.status == CellStatus.SECONDARY].sum())


def test_linked_jobs_take_the_linked_results(tmp_path: Path, census_csv: Path) -> None:
    """Two jobs on one file are protected as linked tables; each job's result is that
    table's result of the linked protection (its own method), with the jobs it was
    protected with."""
    from sdckit.jobs import load_table_job, run_table_jobs

    paths = [
        _job(tmp_path, census_csv, "a", '"region", "occupation"', "gauss"),
        _job(tmp_path, census_csv, "b", '"region", "sex", "age_group"', "hypercube"),
    ]
    jobs = [load_table_job(p) for p in paths]
    results = run_table_jobs(jobs, write=False)
    for k, (job, got) in enumerate(zip(jobs, results, strict=True)):
        res = got.suppression
        assert type(res.protection) is type(job.suppression)
        assert res.params == job.suppression_params
        assert res.method == ("gauss", "hypercube")[k]
        assert res.details["linked_with"] == [1 - k]
        assert res.details["linked_scheme"] == "iterative"
        assert res.n_secondary == int(got.table.secondary.sum())
        assert got.audit.ok

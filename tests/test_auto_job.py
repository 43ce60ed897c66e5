"""Automatic protection in job files: ``method = "auto"`` with its models from ``[target]``."""

from __future__ import annotations

import textwrap
import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sdckit.errors import ParameterError
from sdckit.jobs import Runner, load_job, run_job
from sdckit.lattice import LatticeAnonymization


def _data(path: Path, n: int = 300, seed: int = 1) -> Path:
    rng = np.random.default_rng(seed)
    pl.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "sex": rng.choice(["f", "m"], n),
            "zip": rng.choice(["1011", "1012", "1023", "2031"], n),
        }
    ).write_csv(path)
    return path


def _job(tmp_path: Path, target: str, step: str = "", hierarchy: str = "") -> Path:
    _data(tmp_path / "people.csv")
    (tmp_path / "hier").mkdir(exist_ok=True)
    (tmp_path / "hier" / "sex.csv").write_text("f;*\nm;*\n", encoding="utf-8")
    text = textwrap.dedent(
        f"""
        seed = 4
        [input]
        file = "people.csv"
        numeric_keys = ["age"]
        [roles]
        keys = ["age", "sex", "zip"]
        [[steps]]
        method = "auto"
        suppression_limit = 0.05
        algorithm = "exhaustive"
        {step}
        [steps.hierarchies]
        age = {{kind = "bands", widths = [10, 20]}}
        sex = "hier/sex.csv"
        zip = {{kind = "redact"}}
        {hierarchy}
        {target}
        [output]
        data = "out.csv"
        report_internal = "report.html"
        order = "original"
        """
    )
    path = tmp_path / "job.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_step_takes_its_models_from_the_target_and_hierarchy_files_from_the_job(
    tmp_path: Path,
) -> None:
    job = load_job(_job(tmp_path, "[target]\nk = 5"))
    step = job.steps[0]
    assert isinstance(step.method, LatticeAnonymization)
    assert step.params["models"] == {"k": 5}
    assert step.params["hierarchies"]["sex"] == str((tmp_path / "hier" / "sex.csv").resolve())
    assert job.target is not None and job.target.k == 5


def test_a_job_with_auto_passes_the_release_check_and_writes_a_k_anonymous_file(
    tmp_path: Path,
) -> None:
    job = load_job(_job(tmp_path, "[target]\nk = 5"))
    outcome = run_job(job)
    assert outcome.refusal is None and outcome.target_met
    step = outcome.session.history[0]
    search = step.result.details["search"]
    assert search.optimum is not None and search.proven_optimal
    out = pl.read_csv(tmp_path / "out.csv", infer_schema=False)
    released = out.filter(pl.col("sex").is_not_null())
    assert released.group_by(["age", "sex", "zip"]).len()["len"].min() >= 5
    assert out.height - released.height == search.n_suppressed <= 0.05 * out.height
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Automatic protection (step 1)" in html
    assert "What else was close" in html and "Pareto frontier" in html
    assert "the lattice&#39;s R-U map" in html or "the lattice's R-U map" in html


def test_the_runner_writes_a_job_that_reads_back_the_same_step(tmp_path: Path) -> None:
    job = load_job(_job(tmp_path, "[target]\nk = 3"))
    run = Runner.from_job(job)
    run.apply_job_steps()
    document = tomllib.loads(run.to_toml())
    assert document["steps"][0]["method"] == "auto"
    assert document["steps"][0]["models"] == {"k": 3}
    again = tmp_path / "again.toml"
    again.write_text(run.to_toml(), encoding="utf-8")
    assert load_job(again).steps[0].params == job.steps[0].params


def test_the_runner_gives_an_auto_step_the_k_of_its_target(tmp_path: Path) -> None:
    job = load_job(_job(tmp_path, "[target]\nk = 4"))
    run = Runner.from_job(job)
    spec, name = run.prepare_step(
        "auto", {"hierarchies": {"sex": {"kind": "flat"}}, "suppression_limit": 0.5}
    )
    assert name == "auto" and spec.params["models"] == {"k": 4}


@pytest.mark.parametrize(
    ("target", "step", "message"),
    [
        ("", "", "automatic protection needs a target"),
        (
            '[target]\nk = 5\nl = {attribute = "zip", l = 2}',
            "models = {k = 5}",
            "given both in the step",
        ),
        ("[target]\nk = 5\nl = 3", "", "'l' must be a table"),
        ('[target]\nk = 5\nl = {attribute = "zip", kind = "odd"}', "", "kind must be one of"),
        ("[target]\nk = 5\nspeed = 3", "", "speed"),
    ],
)
def test_bad_auto_steps_and_targets_are_refused_before_any_work(
    tmp_path: Path, target: str, step: str, message: str
) -> None:
    with pytest.raises(ParameterError, match=message):
        load_job(_job(tmp_path, target, step))


def test_search_models_in_the_target_need_an_auto_step(tmp_path: Path) -> None:
    _data(tmp_path / "people.csv")
    path = tmp_path / "job.toml"
    path.write_text(
        textwrap.dedent(
            """
            [input]
            file = "people.csv"
            [roles]
            keys = ["sex", "zip"]
            [[steps]]
            method = "local_suppression"
            k = 3
            [target]
            k = 3
            t = {attribute = "age", t = 0.2}
            [output]
            data = "out.csv"
            """
        ),
        encoding="utf-8",
    )
    with pytest.raises(ParameterError, match="'t' are privacy models of automatic protection"):
        load_job(path)


def test_a_missing_hierarchy_file_is_named(tmp_path: Path) -> None:
    path = _job(tmp_path, "[target]\nk = 5")
    path.write_text(path.read_text().replace("hier/sex.csv", "hier/nope.csv"), encoding="utf-8")
    with pytest.raises(ParameterError, match="hierarchy file of key 'sex' does not exist"):
        load_job(path)


def test_auto_is_a_candidate_of_the_r_u_map_with_the_target_of_the_job(tmp_path: Path) -> None:
    ru = textwrap.dedent(
        """
        [ru_map]
        risk = "k5_violations"
        loss = "share_changed"
        seeds = [0]
        [[ru_map.candidates]]
        method = "auto"
        hierarchies = {age = {kind = "bands", widths = [10, 20]}, sex = "hier/sex.csv"}
        grid = {suppression_limit = [0.0, 0.05]}
        """
    )
    job = load_job(_job(tmp_path, "[target]\nk = 5\n" + ru))
    candidates = job.ru_map.candidates
    assert [c.label for c in candidates] == [
        "auto suppression_limit = 0",
        "auto suppression_limit = 0.05",
    ]
    assert all(c.method.models == {"k": 5} for c in candidates)
    assert Path(candidates[0].method.hierarchies["sex"]).is_absolute()
    result = Runner.from_job(job).ru_map()
    points = result.to_frame()
    # every candidate of the search is 5-anonymous (a suppressed record matches any record)
    assert points.filter(pl.col("candidate").str.starts_with("auto"))["risk"].max() == 0

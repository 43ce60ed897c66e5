"""Job files that recode to a level of an ARX hierarchy CSV (paths relative to the job file)."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from sdckit.errors import ParameterError
from sdckit.hierarchies import GeneralisationHierarchy
from sdckit.jobs import load_job, run_job

ARX = Path(__file__).parent / "data" / "arx"


def _job(tmp_path: Path, hierarchy: str = "hier/education.csv", level: int = 1) -> Path:
    (tmp_path / "hier").mkdir(exist_ok=True)
    shutil.copy(ARX / "adult_hierarchy_education.csv", tmp_path / "hier" / "education.csv")
    education = ["Bachelors", "Masters", "HS-grad", "11th", "Preschool", "Doctorate"] * 5
    pl.DataFrame(
        {"education": education, "sex": [1, 2] * 15, "income": [float(i) for i in range(30)]}
    ).write_csv(tmp_path / "people.csv")
    path = tmp_path / "job.toml"
    path.write_text(
        f"""
[input]
file = "people.csv"

[roles]
keys = ["education", "sex"]
numeric = ["income"]

[[steps]]
method = "global_recoding"
hierarchies = {{ education = "{hierarchy}" }}
levels = {{ education = {level} }}

[output]
data = "out/protected.parquet"
""",
        encoding="utf-8",
    )
    return path


def test_job_reads_the_hierarchy_relative_to_the_job_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ARX)  # not the job's directory: the path must not depend on it
    job = load_job(_job(tmp_path))
    step = job.steps[0]
    assert Path(step.params["hierarchies"]["education"]).is_absolute()
    result = run_job(job, write=False)
    out = result.session.current.frame["education"]
    h = GeneralisationHierarchy.read_arx_csv(ARX / "adult_hierarchy_education.csv")
    original = pl.read_csv(tmp_path / "people.csv")["education"]
    assert out.to_list() == h.generalise(original, 1).to_list()
    assert out[0] == "Undergraduate"


def test_a_missing_hierarchy_file_fails_at_loading_naming_the_step(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match=r"step 1 \(global_recoding\).*does not exist"):
        load_job(_job(tmp_path, hierarchy="hier/nope.csv"))


def test_a_level_above_the_height_fails_at_loading(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match=r"step 1 \(global_recoding\).*above the height"):
        load_job(_job(tmp_path, level=7))


def test_runner_step_with_a_relative_path_exports_a_job_that_finds_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sdckit.jobs import Runner

    _job(tmp_path)  # the data and the hierarchy file
    monkeypatch.chdir(tmp_path)
    run = Runner.from_input(
        {"file": str(tmp_path / "people.csv")},
        {"keys": ["education", "sex"], "numeric": ["income"]},
    )
    run.apply_step(
        "global_recoding", {"hierarchies": {"education": "hier/education.csv"}, "levels": 2}
    )
    text = run.to_toml({"data": str(tmp_path / "out.parquet")})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "job.toml").write_text(text, encoding="utf-8")
    monkeypatch.chdir(ARX)
    result = run_job(load_job(elsewhere / "job.toml"), write=False)
    assert result.session.current.frame["education"].equals(run.current.frame["education"])
    assert result.session.current.frame["education"][0] == "Higher education"


def test_runner_exports_key_combination_objects_and_refuses_hierarchy_objects(
    tmp_path: Path,
) -> None:
    from sdckit.jobs import Runner
    from sdckit.masking import GlobalRecoding, LocalSuppression
    from sdckit.risk import KeyCombination

    _job(tmp_path)
    roles = {"keys": ["education", "sex"], "numeric": ["income"]}
    run = Runner.from_input({"file": str(tmp_path / "people.csv")}, roles)
    run.apply_step(LocalSuppression(key_combinations=[KeyCombination(("education",), 6)]))
    text = run.to_toml()
    assert 'key_combinations = [{ keys = ["education"], k = 6 }]' in text
    h = GeneralisationHierarchy.read_arx_csv(ARX / "adult_hierarchy_education.csv")
    run.apply_step(GlobalRecoding(hierarchies={"education": h}, levels=1))
    with pytest.raises(ParameterError, match="write_arx_csv"):
        run.to_toml()


def test_an_ru_map_candidate_reads_its_hierarchy_relative_to_the_job_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _job(tmp_path)
    path.write_text(
        path.read_text(encoding="utf-8")
        + """
[ru_map]
[[ru_map.candidates]]
method = "global_recoding"
label = "education one level up"
hierarchies = { education = "hier/education.csv" }
levels = { education = 1 }
""",
        encoding="utf-8",
    )
    monkeypatch.chdir(ARX)  # not the job's directory
    job = load_job(path)
    for candidate in job.ru_map.candidates:
        name = candidate.method.hierarchies["education"]
        assert Path(name).is_absolute() and Path(name).is_file()

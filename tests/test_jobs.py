"""The jobs layer: the demo job validated once, one frequency table per state, progress."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from sdckit import Microdata
from sdckit.jobs import JobResult, load_job, run_job
from sdckit.jobs.reference import BEGIN, END, methods_markdown
from sdckit.protection import ProtectionMethod
from sdckit.risk._frequencies import FrequencyResult

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture(scope="module")
def demo_job_path() -> Path:
    with resources.as_file(resources.files("sdckit").joinpath("demo_job.toml")) as path:
        yield path


def test_demo_job_validates_once_and_counts_frequencies_once_per_state(
    demo_job_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    validations = 0
    tables = 0
    inside_method = 0
    original_validate = Microdata._validate
    original_init = FrequencyResult.__init__
    original_apply = ProtectionMethod.apply

    def counting_validate(self: Microdata) -> None:
        nonlocal validations
        validations += 1
        original_validate(self)

    def counting_init(self: FrequencyResult, *args: object, **kwargs: object) -> None:
        nonlocal tables
        if not inside_method:  # a method's own algorithm may count as often as it needs
            tables += 1
        original_init(self, *args, **kwargs)

    def tracking_apply(self: ProtectionMethod, data: object, **roles: object) -> object:
        nonlocal inside_method
        inside_method += 1
        try:
            return original_apply(self, data, **roles)
        finally:
            inside_method -= 1

    monkeypatch.setattr(Microdata, "_validate", counting_validate)
    monkeypatch.setattr(FrequencyResult, "__init__", counting_init)
    monkeypatch.setattr(ProtectionMethod, "apply", tracking_apply)
    stages: dict[str, tuple[int, int]] = {}

    def progress(stage: str, done: int, total: int) -> None:
        assert 0 <= done <= total or total == 0
        stages[stage] = (done, total)

    job = load_job(demo_job_path, output_dir=tmp_path)
    assert validations == 1  # the input file, once
    result = run_job(job, progress=progress)
    assert isinstance(result, JobResult)
    assert validations == 1  # no step validates the whole file again
    assert job.ru_map is not None
    ru = job.ru_map
    ru_runs = sum(len(ru.seeds) if c.method.stochastic else 1 for c in ru.candidates)
    # the original once, each of the 6 steps once, each R-U map run once; the target check, the
    # reports and the R-U map's original point read the session's assessments
    assert tables == 1 + len(job.steps) + ru_runs
    assert stages["Protection steps"] == (6, 6)
    # the R-U map: the original, the current state (the candidates are applied to it), the runs
    assert stages["R-U map"] == (2 + ru_runs, 2 + ru_runs)
    assert stages["Writing outputs"] == (3, 3)
    assert result.target_met is True
    assert result.risk.smallest_class == 3
    assert {p.name for p in result.written} == {
        "demo_protected.parquet", "demo_report_internal.html", "demo_report_external.html",
    }  # fmt: skip
    steps = result.session.history
    assert [type(s.protection).__name__ for s in steps] == [
        "GlobalRecoding", "GlobalRecoding", "Pram", "LocalSuppression", "Microaggregation",
        "WeightCalibration",
    ]  # fmt: skip
    assert steps[-1].risk is result.risk
    figures = {k: after for k, _, after in result.comparison()}
    assert figures["sample_uniques"] == 0 and figures["k3_violations"] == 0


def test_run_without_writing(demo_job_path: Path, tmp_path: Path) -> None:
    text = demo_job_path.read_text(encoding="utf-8").replace(
        'dataset = "demo"', 'dataset = "demo"\nrows = 2000'
    )
    text = text[: text.index("[ru_map]")]
    path = tmp_path / "job.toml"
    path.write_text(text, encoding="utf-8")
    result = run_job(load_job(path, output_dir=tmp_path / "out"), write=False)
    assert result.written == [] and not (tmp_path / "out").exists()
    assert result.ru_map is None
    assert len(result.session.history) == 6


def test_methods_within_strata_report_each_stratum(demo_job_path: Path, tmp_path: Path) -> None:
    text = demo_job_path.read_text(encoding="utf-8").replace(
        'dataset = "demo"', 'dataset = "demo"\nrows = 2000'
    )
    path = tmp_path / "job.toml"
    path.write_text(text[: text.index("[ru_map]")], encoding="utf-8")
    job = load_job(path, output_dir=tmp_path / "out")
    n_strata = job.microdata.frame["stratum"].n_unique()
    seen: list[tuple[str, int, int]] = []
    run_job(job, write=False, progress=lambda stage, done, total: seen.append((stage, done, total)))
    strata = [s for s in seen if s[0].endswith("strata")]
    # the demo's local suppression (step 3) and microaggregation (step 5) work within strata
    assert sorted({s[0] for s in strata}) == ["Step 3: strata", "Step 5: strata"]
    for stage in ("Step 3: strata", "Step 5: strata"):
        assert [(d, t) for s, d, t in strata if s == stage] == [
            (i, n_strata) for i in range(1, n_strata + 1)
        ]


def test_the_method_reference_in_the_docs_is_generated_from_the_registry() -> None:
    text = (DOCS / "job-files.md").read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    assert text[start:end].strip() == methods_markdown().strip(), (
        "docs/job-files.md is out of date: run python -m sdckit.jobs.reference docs/job-files.md"
    )
    for alias in ("local_suppression", "pram", "targeted_record_swapping", "min_frequency"):
        assert f"**`{alias}`**" in text


# ------------------------------------------------------------------ household-wide variables
def _household_job(tmp_path: Path, roles_extra: str = "") -> Path:
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(11)
    sizes = rng.integers(1, 4, size=40)
    per_household = np.arange(len(sizes))
    hid = np.repeat(per_household, sizes)
    pl.DataFrame(
        {
            "hid": hid,
            "region": np.repeat(per_household % 4, sizes),
            "tenure": np.repeat(per_household % 3, sizes),
            "sex": rng.integers(1, 3, size=len(hid)),
            "age_group": rng.integers(1, 5, size=len(hid)),
            "income": rng.normal(size=len(hid)),
            "hh_income": np.repeat(rng.normal(size=len(sizes)), sizes),
        }
    ).write_parquet(tmp_path / "survey.parquet")
    path = tmp_path / "job.toml"
    path.write_text(
        f"""
[input]
file = "survey.parquet"

[roles]
keys = ["region", "tenure", "sex", "age_group"]
numeric = ["income", "hh_income"]
household = "hid"
household_level = ["region"]
{roles_extra}

[[steps]]
method = "local_suppression"
k = 2

[output]
data = "out/protected.parquet"
""",
        encoding="utf-8",
    )
    return path


def test_job_adds_the_household_wide_variables_and_notes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import polars as pl

    validations = 0
    original_validate = Microdata._validate

    def counting_validate(self: Microdata) -> None:
        nonlocal validations
        validations += 1
        original_validate(self)

    monkeypatch.setattr(Microdata, "_validate", counting_validate)
    job = load_job(_household_job(tmp_path))
    assert validations == 1  # the input file is still validated once
    md = job.microdata
    assert md.household_level == ("region", "tenure", "hh_income")
    assert job.roles["household_level"] == ["region", "tenure", "hh_income"]
    assert len(job.notes) == 1
    note = job.notes[0]
    assert "'tenure', 'hh_income'" in note and "'region'" not in note
    assert "detect_household_level = false" in note
    # every method treats them per household: a suppressed tenure is suppressed for all members
    result = run_job(job, write=False)
    out = result.session.current.frame
    assert out["tenure"].null_count() > 0
    per_household = out.group_by("hid").agg(
        pl.col("tenure").null_count().alias("gone"), pl.len().alias("n")
    )
    assert ((per_household["gone"] == 0) | (per_household["gone"] == per_household["n"])).all()


def test_job_detection_of_household_wide_variables_can_be_turned_off(tmp_path: Path) -> None:
    job = load_job(_household_job(tmp_path, "detect_household_level = false"))
    assert job.microdata.household_level == ("region",)
    assert job.notes == []
    # explicit true is the default; nothing to add gives no note
    job = load_job(_household_job(tmp_path, "detect_household_level = true"))
    assert job.microdata.household_level == ("region", "tenure", "hh_income")
    text = (tmp_path / "job.toml").read_text(encoding="utf-8")
    (tmp_path / "job.toml").write_text(
        text.replace(
            'household_level = ["region"]', 'household_level = ["region", "tenure", "hh_income"]'
        ),
        encoding="utf-8",
    )
    assert load_job(tmp_path / "job.toml").notes == []
    # without a household id nothing is detected
    (tmp_path / "job.toml").write_text(
        text.replace('household = "hid"\nhousehold_level = ["region"]', ""), encoding="utf-8"
    )
    job = load_job(tmp_path / "job.toml")
    assert job.microdata.household_level == () and job.notes == []


@pytest.mark.parametrize("value", ['"no"', "0", "[]"])
def test_job_detect_household_level_must_be_a_boolean(tmp_path: Path, value: str) -> None:
    from sdckit.errors import ParameterError

    with pytest.raises(ParameterError, match="'detect_household_level'") as err:
        load_job(_household_job(tmp_path, f"detect_household_level = {value}"))
    message = str(err.value)
    assert "\n" not in message and message.startswith("[roles]")


def test_job_detect_household_level_bad_value_is_one_line_on_the_command_line(
    tmp_path: Path,
) -> None:
    from typer.testing import CliRunner

    from sdckit.cli.app import app

    path = _household_job(tmp_path, 'detect_household_level = "yes"')
    result = CliRunner().invoke(app, ["protect", str(path)])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "'detect_household_level'" in lines[0], result.stderr
    assert "Traceback" not in result.stdout + result.stderr

"""The stepwise runner (sdckit.jobs.Runner): steps, undo and redo, the cached release, the
outputs, and the job file of a state that reproduces it byte for byte."""

from __future__ import annotations

import tempfile
import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdckit.errors import ParameterError
from sdckit.jobs import Outputs, Runner, load_job, run_job
from sdckit.jobs.wording import refusal_line
from sdckit.masking import LocalSuppression, Pram
from sdckit.microdata import Microdata
from sdckit.protection import get_method
from sdckit.release import ReleaseTarget

ROLES = {"keys": ["sex", "region", "age"], "numeric": ["income"], "weight": "w"}


def survey(seed: int, n: int = 150) -> pl.DataFrame:
    """A small sample survey: three coded keys, an income and a weight."""
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "sex": rng.choice(["1", "2"], n),
            "region": rng.choice(["01", "02", "03", "04"], n),
            "age": rng.choice(["1", "2", "3", "4", "5"], n),
            "income": np.round(rng.lognormal(10, 0.5, n), 2),
            "w": np.round(rng.uniform(20, 60, n), 1),
        }
    )


def runner_on(tmp: Path, data_seed: int = 1, **options: object) -> Runner:
    path = tmp / "survey.csv"
    survey(data_seed).write_csv(path)
    return Runner.from_input({"file": str(path)}, ROLES, **options)  # type: ignore[arg-type]


def test_steps_undo_redo_and_the_seed_rule(tmp_path: Path) -> None:
    run = runner_on(tmp_path, seed=10)
    # the codes of the CSV file are read as text, as a job reads them ("01" stays "01")
    assert run.original.frame.schema["region"] == pl.String
    assert run.original.frame["region"].str.starts_with("0").all()
    run.apply_step("pram", {"variables": ["region"]})
    run.apply_step(LocalSuppression(k=3))
    # the job's seed rule: step i of a method taking a seed gets seed + i - 1
    assert run.steps[0].params == {"variables": ["region"], "seed": 10}
    assert run.steps[1].params == {"k": 3}  # a method object: only what differs from defaults
    assert run.step_names == ("pram", "local_suppression")
    after_two = run.current
    undone = run.undo()
    assert undone.number == 2 and len(run.steps) == 1 and len(run.redo_steps) == 1
    assert run.current is run.session.history[0].result.microdata
    redone = run.redo()
    assert redone is undone and run.current is after_two  # put back, not computed again
    with pytest.raises(ParameterError, match="no undone step"):
        run.redo()
    run.undo()
    run.apply_step("pram", {"variables": ["age"]})  # a new step forgets the undone ones
    assert run.redo_steps == () and run.steps[1].params["seed"] == 11
    run.undo()
    run.undo()
    with pytest.raises(ParameterError, match="no step to undo"):
        run.undo()
    assert run.current is run.original


def test_a_bad_step_names_the_step_and_changes_nothing(tmp_path: Path) -> None:
    run = runner_on(tmp_path)
    with pytest.raises(ParameterError, match=r"step 1 \(pram\).*'min_diagonal'"):
        run.apply_step("pram", {"variables": ["region"], "min_diag": 0.9})
    assert run.steps == () and run.version == 0


def test_the_release_is_cached_until_the_state_changes(tmp_path: Path) -> None:
    run = runner_on(tmp_path, seed=3, target=ReleaseTarget(k=2))
    first = run.release()
    assert run.release() is first
    run.apply_step("local_suppression", {"k": 2})
    second = run.release()
    assert second is not first and run.release() is second
    run.undo()
    assert run.release() is not second
    run.set_target(ReleaseTarget(k=3))
    assert run.release().check.k == 3
    # a new seed: a new record order (the release of the old seed is not reused)
    third = run.release()
    run.set_seed(3)
    assert run.release() is third
    run.set_seed(4)
    fourth = run.release()
    assert fourth is not third and fourth.order.tolist() != third.order.tolist()


def test_write_refuses_a_refused_release_and_removes_an_older_one(tmp_path: Path) -> None:
    out = Outputs(
        data=tmp_path / "out" / "protected.csv",
        report_internal=tmp_path / "out" / "internal.html",
        report_external=tmp_path / "out" / "external.html",
        plots=False,
    )
    run = runner_on(tmp_path, seed=5, target=ReleaseTarget(k=2), outputs=out)
    run.apply_step("local_suppression", {"k": 2})
    written, refusal = run.write()
    assert refusal is None
    assert written == [out.report_internal, out.data, out.report_external]
    assert pl.read_csv(out.data).height == 150
    # the original file itself is far from 5-anonymous: refused, the older release removed
    run.undo()
    run.set_target(ReleaseTarget(k=5))
    written, refusal = run.write()
    assert refusal is not None and "fewer than 4 other records" in refusal
    assert written == [out.report_internal]
    assert not out.data.exists() and not out.report_external.exists()
    assert out.report_internal.exists()


def test_a_runner_from_objects_needs_an_input_for_a_job_file() -> None:
    run = Runner(survey(0), **ROLES)
    run.apply_step(Pram(variables=["sex"], seed=4))
    assert run.steps[0].params == {"variables": ["sex"], "seed": 4}
    with pytest.raises(ParameterError, match=r"give input="):
        run.to_toml()
    empty = Runner(survey(0), input={"file": "x.csv"}, **ROLES)
    with pytest.raises(ParameterError, match=r"\[\[steps\]\]"):
        empty.to_toml()


def test_the_ru_map_is_built_on_the_current_state(tmp_path: Path) -> None:
    ru = {"candidates": [{"method": "local_suppression", "grid": {"k": [2, 3]}}], "seeds": [0]}
    run = runner_on(tmp_path, seed=2, ru_map=ru)
    before = run.ru_map()
    assert before.points["candidate"].to_list() == [
        "original", "local_suppression k = 2", "local_suppression k = 3",
    ]  # fmt: skip
    run.apply_step("local_suppression", {"k": 3})
    after = run.ru_map()
    assert run.ru_map() is after  # cached
    points = {r["candidate"]: r for r in after.points.iter_rows(named=True)}
    assert list(points) == [
        "original", "current", "local_suppression k = 2", "local_suppression k = 3",
    ]  # fmt: skip
    # applied to a 3-anonymous file, k = 2 and k = 3 change nothing more: each candidate has
    # the current state's risk and loss (measured against the original), not the original's
    current = points["current"]
    assert current["loss"] > 0
    for label in ("local_suppression k = 2", "local_suppression k = 3"):
        assert points[label]["risk"] == pytest.approx(current["risk"])
        assert points[label]["loss"] == pytest.approx(current["loss"])
    assert points["original"]["loss"] == 0


# ------------------------------------------------------------------ the round trip
STEPS = st.sampled_from(
    [
        ("pram", {"variables": ["region"]}),
        ("pram", {"variables": ["age", "sex"], "min_diagonal": 0.7}),
        ("local_suppression", {"k": 2}),
        ("local_suppression", {"k": 3, "importance": {"sex": 3, "age": 1, "region": 2}}),
        ("add_noise", {"variables": ["income"], "noise": 5.0}),
        ("microaggregation", {"variables": ["income"], "k": 3}),
        ("microaggregation", {"variables": ["income"], "k": 4, "method": "univariate"}),
        ("global_recoding", {"mapping": {"age": {"1": "1-2", "2": "1-2"}}}),
    ]
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data_seed=st.integers(0, 10**6),
    job_seed=st.integers(0, 10**6),
    steps=st.lists(STEPS, min_size=1, max_size=3),
    k=st.sampled_from([None, 2, 3]),
    finish=st.booleans(),
    as_objects=st.booleans(),
)
def test_a_job_built_step_by_step_round_trips_through_its_toml(
    data_seed: int,
    job_seed: int,
    steps: list[tuple[str, dict]],
    k: int | None,
    finish: bool,
    as_objects: bool,
) -> None:
    """Objects (a Microdata and method objects) or job tables -> steps -> to_toml -> load_job
    -> run_job: the same protected file, byte for byte, and the same release decision."""
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        target = ReleaseTarget(k=k) if k is not None else None
        options = {"seed": job_seed, "target": target,
                   "outputs": Outputs(data=tmp / "a" / "protected.csv")}  # fmt: skip
        if as_objects:  # a Microdata built in Python, the file it was written to as [input]
            frame = survey(data_seed)
            frame.write_csv(tmp / "survey.csv")
            built = Runner(
                Microdata(frame, **ROLES), input={"file": str(tmp / "survey.csv")}, **options
            )  # type: ignore[arg-type]
        else:
            built = runner_on(tmp, data_seed, **options)
        if finish:  # a last 3-anonymous step: most such files may be released
            steps = [*steps, ("local_suppression", {"k": 3})]
        for name, params in steps:
            if as_objects:  # a method object; one without a seed gets the job's seed rule
                built.apply_step(get_method(name)(**params))
            else:
                built.apply_step(name, params)
        written, refusal = built.write()
        job_path = tmp / "job.toml"
        job_path.write_text(
            built.to_toml(outputs={"data": str(tmp / "b" / "protected.csv")}), encoding="utf-8"
        )
        result = run_job(load_job(job_path))
        # the same decision, the same finding (worded for the command line by run_job)
        assert result.refusal == refusal_line(built.release())
        assert (refusal is None) == (result.refusal is None)
        assert result.release is not None
        assert result.release.output.equals(built.release().output)
        if refusal is None:
            assert written == [tmp / "a" / "protected.csv"]
            a = (tmp / "a" / "protected.csv").read_bytes()
            assert a == (tmp / "b" / "protected.csv").read_bytes()
        else:
            assert not (tmp / "b" / "protected.csv").exists()


def test_a_parameter_called_method_survives_the_job_file(tmp_path: Path) -> None:
    """Microaggregation's own 'method' parameter, given flat or as a step's TOML table with a
    params sub-table, is kept (and written to the params sub-table of the job file)."""
    run = runner_on(tmp_path, seed=1)
    run.apply_step("microaggregation", {"variables": ["income"], "k": 4, "method": "univariate"})
    run.apply_step("microaggregation", {"k": 5, "params": {"method": "mdav"}})
    assert [s.method.method for s in run.steps] == ["univariate", "mdav"]
    steps = run.to_document()["steps"]
    assert steps[0] == {"method": "microaggregation", "params": {"method": "univariate"},
                        "variables": ["income"], "k": 4, "seed": 1}  # fmt: skip
    assert steps[1] == {"method": "microaggregation", "params": {"method": "mdav"}, "k": 5,
                        "seed": 2}  # fmt: skip


def test_write_checks_every_output_before_any_work(tmp_path: Path) -> None:
    from sdckit.errors import DataError

    run = runner_on(tmp_path, seed=1, target=ReleaseTarget(k=2))
    run.apply_step("local_suppression", {"k": 2})
    same = tmp_path / "out" / "same.html"
    with pytest.raises(ParameterError, match="'report_internal' and 'report_external' are"):
        run.write(Outputs(report_internal=same, report_external=same))
    with pytest.raises(ParameterError, match="input file"):
        run.write(Outputs(data=tmp_path / "survey.csv"))
    (tmp_path / "a_file").write_text("x", encoding="utf-8")
    with pytest.raises(DataError):
        run.write(Outputs(data=tmp_path / "a_file" / "protected.csv"))
    assert not (tmp_path / "out").exists()  # nothing written, no folder made


def test_an_input_read_from_a_base_folder_is_kept_absolute(tmp_path: Path) -> None:
    """The job file written again reads the same file wherever it is saved, and an output
    that is the input (named relative to the base) is refused."""
    folder = tmp_path / "data"
    folder.mkdir()
    survey(1).write_csv(folder / "survey.csv")
    run = Runner.from_input({"file": "survey.csv"}, ROLES, base=folder, seed=1)  # type: ignore[arg-type]
    assert run.input["file"] == str((folder / "survey.csv").resolve())
    run.apply_step("local_suppression", {"k": 2})
    assert tomllib.loads(run.to_toml())["input"]["file"] == run.input["file"]
    with pytest.raises(ParameterError, match="is the input file"):
        run.write(Outputs(data=folder / "survey.csv"))

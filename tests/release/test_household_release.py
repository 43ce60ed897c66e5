"""A household survey released safe *and* useful: the shipped survey job, read by attackers.

The job (``src/sdckit/survey_job.toml``) keeps the weight, a household id, the household size
and the household incomes.  The release check passes it; the independent attackers of the red
team (``tests/release/redteam``), which read only the written file, get nothing back beyond
chance; the weighted estimates users make are kept far better than by the release that drops
all of them.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import polars as pl
import pytest
from tests.release.redteam.attackers import ATTACKS
from tests.release.redteam.harness import score

from sdckit.datasets import generate_household_survey
from sdckit.jobs import load_job, run_job
from sdckit.release import ReleasePlan, ReleaseTarget, release
from sdckit.session import release_map
from sdckit.utility.weighted import weighted_estimates

TARGETS = ["region", "urban_rural", "household_size", "sex", "relationship", "marital_status",
           "education", "employment", "age", "hh_income", "eq_income", "income"]  # fmt: skip


@pytest.fixture(scope="module")
def survey_job(tmp_path_factory: pytest.TempPathFactory):
    """The shipped job on a generated survey of 1,500 households (another seed)."""
    folder = tmp_path_factory.mktemp("survey")
    data = generate_household_survey(1500, seed=11)
    data.write_parquet(folder / "survey.parquet")
    text = resources.files("sdckit").joinpath("survey_job.toml").read_text(encoding="utf-8")
    text = text.replace('dataset = "survey"', 'file = "survey.parquet"')
    path = folder / "job.toml"
    path.write_text(text, encoding="utf-8")
    job = load_job(path, output_dir=folder / "out")
    return job, run_job(job), data


def test_the_useful_release_passes_and_is_written(survey_job) -> None:
    job, result, data = survey_job
    assert result.refusal is None, result.refusal
    check = result.release.check
    assert check.ok and check.target_met
    written = pl.read_parquet(job.output_data)
    # what users need is in the file
    for column in ("weight", "hh_id", "household_size", "hh_income", "eq_income", "income"):
        assert column in written.columns, column
    for gone in ("person_id", "date_of_birth", "age_decimal", "remark", "district"):
        assert gone not in written.columns
    # the household size is the number of released members; the household id is new
    members = written.select(pl.len().over("hh_id")).to_series()
    assert (written["household_size"] == members).all()
    assert written["hh_id"].n_unique() == data["hh_id"].n_unique()
    assert not written["hh_id"].sort().equals(data["hh_id"].sort())
    # household incomes are the same for every member (noise drawn once per household)
    per = written.group_by("hh_id").agg(pl.col("hh_income").n_unique().alias("u"))
    assert (per["u"] == 1).all()
    # the calibrated weights keep the weighted totals of the calibrated released variables
    for variable in ("region", "sex", "household_size"):
        before = data.group_by(variable).agg(pl.col("weight").sum()).sort(variable)
        shown = written.filter(pl.col(variable).is_not_null())
        after = written.group_by(variable).agg(pl.col("weight").sum()).sort(variable)
        if shown.height == written.height:
            assert after["weight"].to_numpy() == pytest.approx(before["weight"].to_numpy())
    assert written["weight"].sum() == pytest.approx(data["weight"].sum())


KEYS = ["region", "urban_rural", "household_size", "sex", "relationship", "marital_status",
        "education", "employment", "age"]  # fmt: skip
NUMBERS = ["income", "hh_income", "eq_income"]


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_no_independent_attack_gets_anything_back(survey_job, attack: str) -> None:
    """Nothing beyond chance, nor beyond what the released key variables alone give.

    The harness's chance is the uninformed guess; the released keys and numbers say more about
    everybody (a child aged 0-14 is not employed; an income says employed), which is what the
    file publishes.  So an attack is also compared with the same decision tree trained on the
    other released keys and numbers only (the intruder without any other channel, the release
    check's comparable records).
    """
    _, result, data = survey_job
    out = result.release
    for target in TARGETS:
        guess = ATTACKS[attack](out.output, target)
        s = score(out, data, target, guess, attack=attack)
        if not s.beyond_chance:
            continue
        others = [k for k in [*KEYS, *NUMBERS] if k != target]
        keys_only = ATTACKS["learning"](out.output.select([*others, target]), target)
        base = score(out, data, target, keys_only, attack="keys only")
        assert s.got_back <= base.got_back + s.margin, f"{s} (the keys alone: {base.got_back})"


def test_the_release_map_shows_the_useful_release_beside_the_empty_one(survey_job) -> None:
    _job, result, _data = survey_job
    original = result.session.original
    protected = result.session.current
    useful = result.release
    plan = ReleasePlan(
        drop=["district", "date_of_birth", "age_decimal", "remark", "member", "weight",
              "hh_income", "eq_income"],
        household_id="drop",
    )  # fmt: skip
    empty = release(original, protected, plan, target=ReleaseTarget(k=3), seed=1)
    assert "weight" not in empty.frame.columns and "hh_id" not in empty.frame.columns
    means = ["income", "hh_income", "eq_income"]
    formula = "income ~ C(sex) + C(employment)"
    keep = weighted_estimates(original, useful.frame, totals=["region", "sex"], means=means,
                              regression=formula)  # fmt: skip
    drop = weighted_estimates(original, empty.frame, totals=["region", "sex"], means=means,
                              regression=formula)  # fmt: skip
    # the dropped household incomes are lost (loss 1 each); the kept ones are within noise
    assert keep.loss < 0.1 < drop.loss
    ru = release_map(original, {"keeps weight and households": useful, "drops them": empty},
                     totals=["region", "sex"], means=means, regression=formula)  # fmt: skip
    points = {r["candidate"]: r for r in ru.points.iter_rows(named=True)}
    assert points["keeps weight and households"]["loss"] == pytest.approx(keep.loss)
    assert points["drops them"]["loss"] == pytest.approx(drop.loss)
    assert points["original"]["loss"] == 0.0
    assert points["keeps weight and households"]["risk"] < points["original"]["risk"]
    assert ru.best == "keeps weight and households" or ru.best is None


def test_the_job_runs_from_the_command_line(survey_job, tmp_path: Path) -> None:
    job, _result, _ = survey_job
    assert job.output_data is not None and job.output_data.exists()
    assert job.report_internal is not None and job.report_internal.exists()
    internal = job.report_internal.read_text(encoding="utf-8")
    assert "It may be released." in internal

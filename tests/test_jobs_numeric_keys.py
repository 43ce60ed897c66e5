"""A job that bands a key the CSV file holds as numbers: the message names the fix.

A job reads the key columns of a CSV file as text (codes such as ``007``), unless
``[input] numeric_keys`` lists them; interval recoding or top coding of such a key used to stop
after the earlier steps with "not numeric (type String)".  Now the loader says the fix at once,
and with the fix the job runs.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from sdckit.datasets import generate_household_survey
from sdckit.errors import ParameterError, SdcError
from sdckit.jobs import load_job, run_job

JOB = """
[input]
file = "survey.csv"
{extra}
[roles]
keys = ["region", "sex", "age"]
weight = "weight"

[[steps]]
method = "global_recoding"
mapping = {{ sex = {{ male = "m", female = "f" }} }}

[[steps]]
method = "{method}"
columns = ["age"]
{params}

[output]
data = "out.csv"
"""
METHODS = {
    "interval_recoding": "breaks = [0, 15, 30, 45, 65, 120]",
    "top_bottom_coding": "upper = 80",
}


@pytest.fixture
def survey(tmp_path: Path) -> Path:
    generate_household_survey(200, seed=3).write_csv(tmp_path / "survey.csv")
    return tmp_path


@pytest.mark.parametrize("method", sorted(METHODS))
def test_the_message_names_numeric_keys(survey: Path, method: str) -> None:
    path = survey / "job.toml"
    path.write_text(JOB.format(extra="", method=method, params=METHODS[method]))
    with pytest.raises(ParameterError) as info:
        load_job(path)
    message = str(info.value)
    assert message.startswith("step 2 (")
    assert "'age'" in message
    assert '[input] numeric_keys = ["age"]' in message


@pytest.mark.parametrize("method", sorted(METHODS))
def test_with_numeric_keys_the_job_runs(survey: Path, method: str) -> None:
    path = survey / "job.toml"
    path.write_text(
        JOB.format(extra='numeric_keys = ["age"]', method=method, params=METHODS[method])
    )
    result = run_job(load_job(path), write=False)
    age = result.session.current.frame["age"]
    original = pl.read_csv(survey / "survey.csv")["age"]
    if method == "interval_recoding":
        assert age.n_unique() <= 5
    else:
        assert age.max() == 80 and original.max() > 80


def test_a_key_of_codes_is_not_taken_for_numbers(survey: Path) -> None:
    """A text key that is not numbers (region) in a numeric parameter keeps its own error."""
    path = survey / "job.toml"
    path.write_text(
        JOB.format(
            extra="", method="interval_recoding", params=METHODS["interval_recoding"]
        ).replace('columns = ["age"]', 'columns = ["region"]')
    )
    with pytest.raises(SdcError) as info:
        run_job(load_job(path), write=False)
    assert "numeric_keys" not in str(info.value)


def test_a_parquet_key_of_digit_codes_gets_no_csv_advice(tmp_path: Path) -> None:
    """Outside CSV files no column is read as text: no numeric_keys advice there."""
    frame = generate_household_survey(200, seed=3).with_columns(pl.col("age").cast(pl.String))
    frame.write_parquet(tmp_path / "survey.parquet")
    path = tmp_path / "job.toml"
    path.write_text(
        JOB.format(
            extra="", method="interval_recoding", params=METHODS["interval_recoding"]
        ).replace("survey.csv", "survey.parquet")
    )
    with pytest.raises(SdcError) as info:
        run_job(load_job(path), write=False)
    assert "numeric_keys" not in str(info.value)


CANDIDATE_JOB = """
[input]
file = "survey.csv"
{extra}
[roles]
keys = ["region", "sex", "age"]
weight = "weight"

[[steps]]
method = "local_suppression"
k = 2

[ru_map]
risk = "global_risk"
loss = "share_changed"

[[ru_map.candidates]]
method = "interval_recoding"
columns = ["age"]
breaks = [0, 15, 30, 45, 65, 120]

[output]
data = "out.csv"
"""


def test_an_r_u_map_candidate_names_numeric_keys_too(survey: Path) -> None:
    """A candidate of the R-U map bands a key read as text: the same fix, named at once."""
    path = survey / "job.toml"
    path.write_text(CANDIDATE_JOB.format(extra=""))
    with pytest.raises(ParameterError) as info:
        load_job(path)
    message = str(info.value)
    assert message.startswith("[ru_map] candidate") and "'age'" in message
    assert '[input] numeric_keys = ["age"]' in message
    path.write_text(CANDIDATE_JOB.format(extra='numeric_keys = ["age"]'))
    result = run_job(load_job(path), write=False)
    assert result.ru_map is not None and result.ru_map.n_candidates == 1

"""Assigning the roles reads the open file as a job does, from memory.

The workspace reads a CSV file twice when it is opened (typed, and its number columns as
written); assigning the roles then composes the frame ``sdckit protect`` would read (key codes
such as ``007`` as text, the numeric keys as numbers) without reading the file again: on
1,000,000 records that is the difference between 1.4 s and 13 s (bench/bench_ui.py).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import sdckit.io
from sdckit.jobs.load import read_microdata
from sdckit.ui._workspace import Source, Workspace


def _no_progress(*args: object) -> None:
    return None


@pytest.mark.parametrize("numeric_keys", [[], ["age"]])
def test_the_roles_read_from_memory_equal_a_job_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, numeric_keys: list[str]
) -> None:
    path = tmp_path / "codes.csv"
    path.write_text(
        "region,age,sex,income,w\n007,31,1,1200.5,10\n012,45,2,,12\n007,31,2,900,9\n"
        "120,NA,1,300,11\n",
        encoding="utf-8",
    )
    ws = Workspace(tmp_path / "out", seed=1)
    ws.open(Source("file", "codes.csv", path, None, ("NA",)), _no_progress)
    roles = {"keys": ["region", "age", "sex"], "numeric": ["income"], "weight": "w"}
    spec = ws.source.input_spec(numeric_keys)  # type: ignore[union-attr]
    expected, _, _ = read_microdata(spec, roles)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the file was read again")

    monkeypatch.setattr(sdckit.io, "read_data", refuse)
    ws.set_roles(roles, [], numeric_keys, _no_progress)
    frame = ws.runner.original.frame  # type: ignore[union-attr]
    assert frame.equals(expected.frame)
    assert frame["region"].to_list() == ["007", "012", "007", "120"]
    assert frame.schema["age"] == (pl.Int64 if numeric_keys else pl.String)
    assert frame["age"].to_list()[:2] == ([31, 45] if numeric_keys else ["31", "45"])


def test_a_candidate_banding_a_key_read_as_text_names_the_box(tmp_path: Path) -> None:
    from sdckit.errors import ParameterError

    path = tmp_path / "ages.csv"
    rows = [f"{r},{a},{s}" for r in ("007", "012") for a in range(20, 70, 3) for s in (1, 2)]
    path.write_text("region,age,sex\n" + "\n".join(rows) + "\n", encoding="utf-8")
    ws = Workspace(tmp_path / "out", seed=1)
    ws.open(Source("file", "ages.csv", path), _no_progress)
    roles = {"keys": ["region", "age", "sex"]}
    ws.set_roles(roles, [], [], _no_progress)
    band = {"columns": ["age"], "breaks": [0, 30, 50, 120]}
    with pytest.raises(ParameterError, match="read as a number") as info:
        ws.add_candidate("interval_recoding", band, "", {})
    assert "'age'" in str(info.value) and ws.ru_candidates == []
    ws.set_roles(roles, [], ["age"], _no_progress)  # the box ticked
    ws.add_candidate("interval_recoding", band, "", {})
    ws.build_ru(_no_progress)
    assert ws.ru_result is not None and ws.ru_result.n_candidates == 1

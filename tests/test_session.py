"""Protection session: history, figures, undo, export."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sdckit.errors import ParameterError
from sdckit.masking._pram import Pram
from sdckit.masking._rank_swapping import RankSwapping
from sdckit.session import Session


def _data() -> pl.DataFrame:
    rng = np.random.default_rng(0)
    n = 400
    return pl.DataFrame(
        {
            "sex": rng.integers(1, 3, n),
            "region": rng.integers(1, 8, n),
            "age": rng.integers(1, 10, n),
            "income": rng.lognormal(8, 1, n),
            "w": rng.uniform(50, 150, n),
        }
    )


def test_history_figures_and_undo(tmp_path) -> None:
    df = _data()
    s = Session(df, keys=["sex", "region", "age"], numeric=["income"], weight="w")
    before = s.initial_figures
    assert before["sample_uniques"] > 0
    step1 = s.apply(Pram(variables=["age"], seed=1))
    step2 = s.apply(RankSwapping(p=5, seed=2))
    assert [st.number for st in s.history] == [1, 2]
    assert step2.figures["sse_sst_pct"] > 0
    assert step1.figures["share_keys_changed"] > 0
    frame = s.to_frame()
    assert frame["step"].to_list() == [0, 1, 2]
    assert "expected_reidentifications" in frame.columns
    # undo keeps the earlier step and its data; the original is untouched
    s.undo()
    assert len(s.history) == 1
    assert s.current.frame.equals(step1.result.microdata.frame)
    assert s.original.frame.equals(df)
    # unchanged columns are shared with the original, not copied
    assert s.current.frame["income"].equals(df["income"])
    out = s.export(tmp_path / "protected.parquet")
    assert pl.read_parquet(out).equals(s.current.frame)
    assert "Protection session" in str(s.summary())


def test_undo_without_steps() -> None:
    s = Session(_data(), keys=["sex"])
    with pytest.raises(ParameterError, match="no step"):
        s.undo()
    with pytest.raises(ParameterError, match="protection method"):
        s.apply("pram")  # type: ignore[arg-type]

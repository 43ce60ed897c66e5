"""Protection session: history, figures, undo, export."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sdckit.errors import ParameterError
from sdckit.masking._pram import Pram
from sdckit.masking._rank_swapping import RankSwapping
from sdckit.release import ReleasePlan, ReleaseTarget
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
    # no risk bound (the default target asks for 3-anonymity, which PRAM does not give)
    free = ReleaseTarget()
    out = s.export(tmp_path / "protected.parquet", ReleasePlan(order="original"), target=free)
    assert pl.read_parquet(out).equals(s.current.frame)
    shuffled = pl.read_parquet(s.export(tmp_path / "shuffled.parquet", seed=3, target=free))
    assert shuffled.sort(shuffled.columns).equals(s.current.frame.sort(shuffled.columns))
    assert "Protection session" in str(s.summary())


def test_export_refuses_a_file_that_gives_values_back(tmp_path) -> None:
    from sdckit.errors import VerificationError
    from sdckit.masking import LocalSuppression

    # the one woman of region a is unique: her region is suppressed, and the six other
    # records of district 1 show it
    df = pl.DataFrame(
        {
            "region": ["a"] * 7 + ["b"] * 6,
            "district": [1] * 7 + [2] * 6,
            "sex": [1] * 6 + [2] + [1, 2] * 3,
        }
    )
    s = Session(df, keys=["region", "sex"])
    s.apply(LocalSuppression(k=2, importance=[2, 1], block_inference=False))
    assert s.current.frame["region"].null_count() > 0
    with pytest.raises(VerificationError, match="'district' gives back"):
        s.export(tmp_path / "out.csv", k=2)
    assert not (tmp_path / "out.csv").exists()
    assert s.release(ReleasePlan(drop=["district"]), k=2).check.ok


def test_undo_without_steps() -> None:
    s = Session(_data(), keys=["sex"])
    with pytest.raises(ParameterError, match="no step"):
        s.undo()
    with pytest.raises(ParameterError, match="protection method"):
        s.apply("pram")  # type: ignore[arg-type]

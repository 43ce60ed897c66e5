"""Replicated uniques: synthetic records reproducing the keys of an original sample unique."""

from __future__ import annotations

import pandas as pd
import polars as pl
import pytest

from sdckit import Microdata
from sdckit.errors import ColumnError
from sdckit.risk import ReplicatedUniquesResult, replicated_uniques


def test_hand_computed() -> None:
    o = pl.DataFrame({"a": [1, 1, 2, 3, None], "b": [1, 1, 3, 4, 5]})
    s = pl.DataFrame({"a": [2, 1, 2, None, 3, 3], "b": [3, 1, 1, 5, 4, 4]})
    res = replicated_uniques(o, s, ["a", "b"])
    assert isinstance(res, ReplicatedUniquesResult)
    # (2, 3), (3, 4) and (missing, 5) are the original uniques; missing is a value of its own
    assert res.replicated.tolist() == [True, False, False, True, True, True]
    assert (res.n_replicated, res.n_original_uniques, res.n_records) == (4, 3, 6)
    assert res.share == pytest.approx(4 / 6)
    assert res.keys == ("a", "b")
    assert "replicating a sample unique" in str(res.summary())
    with pytest.raises(AttributeError):
        res.n_replicated = 0  # type: ignore[misc]


def test_keys_default_to_the_original_roles_and_frame_type() -> None:
    o = pl.DataFrame({"a": [1, 1, 2], "b": [1, 1, 3]})
    md = Microdata(o, keys=["a", "b"])
    s = pd.DataFrame({"a": [2, 1], "b": [3, 1]}, index=["x", "y"])
    res = replicated_uniques(md, s)
    assert res.replicated.tolist() == [True, False]
    frame = res.to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.index) == ["x", "y"]
    assert frame["replicated_unique"].tolist() == [True, False]


def test_errors() -> None:
    o = pl.DataFrame({"a": [1, 1, 2]})
    with pytest.raises(ColumnError, match="keys"):
        replicated_uniques(o, o)
    with pytest.raises(ColumnError, match="'b'"):
        replicated_uniques(o, o, ["b"])

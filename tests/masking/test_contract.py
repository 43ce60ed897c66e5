"""The shared contract every protection method must meet.

Every registered :class:`~sdckit.masking._base.ProtectionMethod` is run on its own contract
example: the caller's data is untouched, the same seed gives identical output, the caller's
frame type, row order and index are kept, the record of changes is consistent, and the promised
protection is verified after the fact.
"""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pandas as pd
import polars as pl
import pytest

import sdckit.masking
from sdckit import Microdata
from sdckit.masking._base import Protected, ProtectionMethod

for _mod in pkgutil.iter_modules(sdckit.masking.__path__):
    importlib.import_module(f"sdckit.masking.{_mod.name}")

METHODS = sorted(ProtectionMethod.registry)


def _example(name: str) -> tuple[ProtectionMethod, Microdata]:
    return ProtectionMethod.registry[name].contract_example()


def _with_pandas_index(md: Microdata) -> tuple[pd.DataFrame, dict]:
    df = md.frame.to_pandas()
    df.index = pd.Index([f"r{i}" for i in range(len(df))][::-1], name="rid")
    return df, md.roles()


def test_registry_is_not_empty() -> None:
    assert METHODS, "no protection method registered"


@pytest.mark.parametrize("name", METHODS)
def test_input_untouched_and_index_kept(name: str) -> None:
    method, md = _example(name)
    df, roles = _with_pandas_index(md)
    before = df.copy(deep=True)
    result = method.apply(df, **roles)
    pd.testing.assert_frame_equal(df, before)
    assert isinstance(result, Protected)
    out = result.data
    assert isinstance(out, pd.DataFrame)
    if len(out) == len(df):
        assert out.index.equals(df.index)
    else:  # sub-sampling keeps a subset of the labels, in the original order
        assert out.index.isin(df.index).all()
        pos = df.index.get_indexer(out.index)
        assert (np.diff(pos) > 0).all()


@pytest.mark.parametrize("name", METHODS)
def test_same_seed_same_output(name: str) -> None:
    method, md = _example(name)
    a = method.apply(md).microdata.frame
    b = method.apply(md).microdata.frame
    assert a.equals(b, null_equal=True)


@pytest.mark.parametrize("name", METHODS)
def test_polars_and_pandas_agree(name: str) -> None:
    method, md = _example(name)
    df, roles = _with_pandas_index(md)
    from_pandas = method.apply(df, **roles).microdata.frame
    from_polars = method.apply(md.frame, **roles).microdata.frame
    assert from_pandas.equals(from_polars, null_equal=True)
    assert isinstance(method.apply(md.frame, **roles).data, pl.DataFrame)


@pytest.mark.parametrize("name", METHODS)
def test_protection_verified_and_changes_recorded(name: str) -> None:
    method, md = _example(name)
    result = method.apply(md)
    method.verify(md, result)
    assert result.microdata.roles() == md.roles() or result.details.get("roles_changed")
    if result.microdata.n_records == md.n_records:
        assert result.changed_records.shape == (md.n_records,)
        assert result.n_changed_records <= md.n_records
        for col, count in result.changed.items():
            assert 0 < count <= md.n_records, col
    assert set(method.get_params()) == set(type(method)._param_names())
    assert str(result.summary())

"""The shared contract every protection method must meet.

Every registered :class:`~sdckit.protection.ProtectionMethod` is run on its own contract
example: the caller's data is untouched, the same seed gives identical output, the caller's
frame type, row order and index are kept, the record of changes is consistent, the promised
protection is verified after the fact, and the declared parameter constraints reject wrong
values with an error naming the class and the parameter.
"""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import polars as pl
import pytest

from sdckit import Microdata, SdcError
from sdckit.protection import Param, Protected, ProtectionMethod, clone, registry

METHODS = sorted(registry())


def _example(name: str) -> tuple[ProtectionMethod, Microdata]:
    return registry()[name].contract_example()  # type: ignore[attr-defined]


def _with_pandas_index(md: Microdata) -> tuple[pd.DataFrame, dict]:
    df = md.frame.to_pandas()
    df.index = pd.Index([f"r{i}" for i in range(len(df))][::-1], name="rid")
    return df, md.roles()


def test_registry_is_not_empty() -> None:
    assert len(METHODS) >= 13, METHODS


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
            assert col in md.frame.columns
    assert str(result.summary())


# ------------------------------------------------------------------ declared parameters
@pytest.mark.parametrize("name", METHODS)
def test_declaration_matches_signature(name: str) -> None:
    cls = registry()[name]
    sig = inspect.signature(cls.__init__)
    params = [p for p in sig.parameters.values() if p.name != "self"]
    assert [p.name for p in params] == list(cls.parameters)
    assert all(p.kind is p.KEYWORD_ONLY for p in params)
    assert all(isinstance(p, Param) for p in cls.parameters.values())
    assert cls.description.strip() and len(cls.description) <= 300
    assert "\n" not in cls.description
    for pname, param in cls.parameters.items():
        assert param.help, f"{name}.{pname} has no help text"
        default = sig.parameters[pname].default
        if default is not inspect.Parameter.empty and not callable(default):
            assert param.accepts(default), f"{name}.{pname}: default {default!r} not admissible"


@pytest.mark.parametrize("name", METHODS)
def test_clone_and_set_params(name: str) -> None:
    method, md = _example(name)
    copy = clone(method)
    assert copy is not method and type(copy) is type(method)
    assert copy.get_params().keys() == method.get_params().keys()
    a = method.apply(md).microdata.frame
    b = copy.apply(md).microdata.frame
    assert a.equals(b, null_equal=True)
    with pytest.raises(SdcError, match="no parameter"):
        copy.set_params(no_such_parameter=1)
    result = method.apply(md)
    assert type(result.protection) is type(method)
    assert result.protection is not method
    assert result.protection.get_params().keys() == method.get_params().keys()


def _invalid_cases() -> list[tuple[str, str, str, object]]:
    cases = []
    for name in METHODS:
        cls = registry()[name]
        for pname, param in cls.parameters.items():
            wrong = param.wrong_type_example()
            if wrong is not None:
                cases.append((name, pname, "wrong type", wrong))
            for value in param.out_of_range_examples():
                cases.append((name, pname, "out of range", value))
            if param.names_columns():
                cases.append((name, pname, "unknown column", None))
    return cases


def _unknown_column_value(param: Param) -> object:
    """A value of the parameter's first column-naming form that names a missing column."""
    from sdckit._constraints import Column, ColumnMap, Columns, ListOf, TupleOf

    def build(form: object) -> object:
        if isinstance(form, Column):
            return "no_such_column"
        if isinstance(form, Columns):
            return ["no_such_column"]
        if isinstance(form, ColumnMap):
            return {"no_such_column": _example_value(form.value)}
        if isinstance(form, ListOf):
            return [build(form.item)]
        if isinstance(form, TupleOf):
            return [build(i) if _names(i) else _example_value(i) for i in form.items]
        return None

    for form in param.forms:
        if _names(form):
            return build(form)
    raise AssertionError("no column-naming form")


def _names(form: object) -> bool:
    return Param(form).names_columns()  # type: ignore[arg-type]


def _example_value(form: object) -> object:
    from sdckit._constraints import (
        Array,
        Boolean,
        Columns,
        Instance,
        Integer,
        ListOf,
        MapOf,
        NoneValue,
        Options,
        Real,
        String,
    )

    if isinstance(form, Integer):
        return form.minimum if form.minimum is not None else 1
    if isinstance(form, Real):
        lo = form.minimum if form.minimum is not None else 0.0
        return lo + 0.5 if form.maximum is None or lo + 0.5 < form.maximum else lo
    if isinstance(form, Options):
        return form.choices[0]
    if isinstance(form, Boolean):
        return True
    if isinstance(form, Columns):
        return ["no_such_column"]
    if isinstance(form, ListOf):
        return [_example_value(form.item)] * max(1, form.min_length)
    if isinstance(form, String):
        return "x"
    if isinstance(form, Instance):
        return next((v for v in (0.5, 1, "x", {"a": "b"}) if form.accepts(v)), None)
    if isinstance(form, Array):
        return np.eye(2).tolist() if form.ndim == 2 else [1.0] * 2
    if isinstance(form, MapOf):
        return {"a": _example_value(form.value)}
    if isinstance(form, NoneValue):
        return None
    return {}


@pytest.mark.parametrize(
    ("name", "param", "kind", "value"),
    _invalid_cases(),
    ids=lambda v: v if isinstance(v, str) else type(v).__name__,
)
def test_constraints_reject_bad_values(name: str, param: str, kind: str, value: object) -> None:
    method, md = _example(name)
    if kind == "unknown column":
        value = _unknown_column_value(type(method).parameters[param])
    bad = clone(method).set_params(**{param: value})
    with pytest.raises(SdcError) as info:
        bad.apply(md)
    message = str(info.value)
    assert name in message, message
    assert repr(param) in message, message
    if kind == "unknown column":
        assert "no_such_column" in message

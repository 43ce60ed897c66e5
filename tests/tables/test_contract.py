"""The shared contract every sensitivity rule and table method must meet.

Every class registered in ``registry("rule")`` (sensitivity rules) and ``registry("table")``
(secondary suppression, rounding, adjustment) is run on its own contract example: the
declaration equals the keyword-only signature, every parameter has a help line and an
admissible default, the input table is untouched, clone and set_params give the same result,
the function twin gives the same result as the class, and the declared constraints reject
wrong values with an error naming the class and the parameter.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

from sdckit import SdcError
from sdckit.errors import ParameterError
from sdckit.protection import Param, Parameterised, clone, get_method, registry, snake_name
from sdckit.tables import (
    AdjustmentResult,
    RoundingResult,
    RuleOutcome,
    SensitivityRule,
    SuppressionResult,
    Table,
    TableMethod,
    adjust_controlled,
    round_controlled,
    round_deterministic,
    round_random,
    round_small_cells,
    small_cell_adjustment,
    suppress_gauss,
    suppress_hypercube,
    suppress_modular,
    suppress_optimal,
)
from sdckit.twins import function_twins

FAMILIES = ("rule", "table")
CLASSES = [(family, name) for family in FAMILIES for name in sorted(registry(family))]
IDS = [f"{family}-{name}" for family, name in CLASSES]

#: The names job files use (they must keep working).
JOB_NAMES = {
    "rule": {
        "min_frequency": "MinFrequency",
        "dominance": "Dominance",
        "p_percent": "PPercent",
        "pq": "PQRule",
        "zero_cells": "ZeroCells",
        "marked_cells": "MarkedCells",
    },
    "table": {
        "optimal": "OptimalSuppression",
        "hypercube": "HypercubeSuppression",
        "modular": "ModularSuppression",
        "gauss": "GaussSuppression",
        "deterministic": "DeterministicRounding",
        "random": "RandomRounding",
        "controlled": "ControlledRounding",
        "small_cells": "SmallCellRounding",
        "adjustment": "SmallCellAdjustment",
        "cta": "ControlledAdjustment",
    },
}

TWINS = {
    "OptimalSuppression": suppress_optimal,
    "HypercubeSuppression": suppress_hypercube,
    "ModularSuppression": suppress_modular,
    "GaussSuppression": suppress_gauss,
    "DeterministicRounding": round_deterministic,
    "RandomRounding": round_random,
    "ControlledRounding": round_controlled,
    "SmallCellRounding": round_small_cells,
    "SmallCellAdjustment": small_cell_adjustment,
    "ControlledAdjustment": adjust_controlled,
}


def _example(family: str, name: str) -> tuple[Any, Table]:
    return registry(family)[name].contract_example()  # type: ignore[attr-defined]


def _run(method: Any, table: Table) -> Any:
    if isinstance(method, SensitivityRule):
        return method.evaluate(table)
    return method.apply(table)


def _fingerprint(result: Any) -> tuple[Any, ...]:
    """The figures of a result that must not change (no timings)."""
    if isinstance(result, RuleOutcome):
        return (result.unsafe, result.upper, result.lower, result.sliding)
    if isinstance(result, SuppressionResult):
        scalars = {k: v for k, v in result.details.items() if np.isscalar(v)}
        t = result.table
        return (t.status, t.values, result.n_secondary, result.cost, result.optimal, scalars)
    if isinstance(result, AdjustmentResult):
        return (result.adjusted, result.direction, result.distance, result.optimal)
    assert isinstance(result, RoundingResult), type(result)
    return (result.rounded, result.base, result.method)


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        if isinstance(x, np.ndarray):
            if not (x.dtype == y.dtype and np.array_equal(x, y)):
                return False
        elif x != y:
            return False
    return True


def _table_state(table: Table) -> tuple[np.ndarray, ...]:
    return tuple(
        np.array(a, copy=True)
        for a in (table.values, table.status, table.upper, table.lower, table.sliding)
    )


def test_registries_hold_every_rule_and_method() -> None:
    for family, names in JOB_NAMES.items():
        assert sorted(registry(family)) == sorted(names.values())


@pytest.mark.parametrize("family", FAMILIES)
def test_job_file_names_and_snake_names_resolve(family: str) -> None:
    known = registry(family)
    for alias, cls_name in JOB_NAMES[family].items():
        cls = get_method(alias, family)
        assert cls is known[cls_name]
        assert cls.alias == alias
        assert get_method(snake_name(cls_name), family) is cls
        assert get_method(cls_name, family) is cls
    with pytest.raises(SdcError, match="unknown method"):
        get_method("no_such_method", family)


@pytest.mark.parametrize(("family", "name"), CLASSES, ids=IDS)
def test_base_class_and_family(family: str, name: str) -> None:
    cls = registry(family)[name]
    base = SensitivityRule if family == "rule" else TableMethod
    assert issubclass(cls, base) and issubclass(cls, Parameterised)
    assert cls.family == family
    assert cls.name and isinstance(cls.name, str)
    if family == "table":
        assert cls.kind in ("suppression", "rounding", "adjustment")


# ------------------------------------------------------------------ declared parameters
@pytest.mark.parametrize(("family", "name"), CLASSES, ids=IDS)
def test_declaration_matches_signature(family: str, name: str) -> None:
    cls = registry(family)[name]
    sig = inspect.signature(cls.__init__)
    params = [p for p in sig.parameters.values() if p.name != "self"]
    assert [p.name for p in params] == list(cls.parameters)
    assert all(p.kind is p.KEYWORD_ONLY for p in params)
    assert all(isinstance(p, Param) for p in cls.parameters.values())
    assert cls.description.strip() and len(cls.description) <= 300
    assert "\n" not in cls.description
    assert cls.description.rstrip().endswith(".")
    assert cls.description.format(variables="x") == cls.description  # no stray braces
    for pname, param in cls.parameters.items():
        assert param.help, f"{name}.{pname} has no help text"
        default = sig.parameters[pname].default
        if default is not inspect.Parameter.empty and not callable(default):
            assert param.accepts(default), f"{name}.{pname}: default {default!r} not admissible"


@pytest.mark.parametrize(("family", "name"), CLASSES, ids=IDS)
def test_init_only_stores_keyword_arguments(family: str, name: str) -> None:
    method, _ = _example(family, name)
    params = method.get_params()
    first = next(iter(params))
    with pytest.raises(ParameterError, match="keyword arguments only"):
        type(method)(params[first])  # positional arguments are refused
    # nothing is checked when the object is built
    assert type(method)(**{**params, first: object()}).get_params()[first] is not None
    assert repr(method).startswith(f"{name}(")


# ------------------------------------------------------------------ the contract example
@pytest.mark.parametrize(("family", "name"), CLASSES, ids=IDS)
def test_example_runs_and_leaves_the_table_alone(family: str, name: str) -> None:
    method, table = _example(family, name)
    before = _table_state(table)
    result = _run(method, table)
    after = _table_state(table)
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))
    if family == "rule":
        assert isinstance(result, RuleOutcome)
        assert result.unsafe.shape == (table.n_cells,)
        assert result.unsafe.any(), "the example should flag a cell"
    elif method.kind == "suppression":
        assert isinstance(result, SuppressionResult)
        assert result.n_secondary > 0
        assert result.table.primary.sum() == table.primary.sum()
    elif method.kind == "adjustment":
        assert isinstance(result, AdjustmentResult)
        assert result.audit().ok
        assert np.count_nonzero(result.direction) == table.primary.sum()
    else:
        assert isinstance(result, RoundingResult)
        assert result.rounded.shape == (table.n_cells,)
        assert np.all(result.rounded % result.base == 0) or result.method in (
            "small_cells",
            "adjustment",
        )


@pytest.mark.parametrize(("family", "name"), CLASSES, ids=IDS)
def test_clone_and_set_params_give_the_same_result(family: str, name: str) -> None:
    method, table = _example(family, name)
    copy = clone(method)
    assert copy is not method and type(copy) is type(method)
    assert copy.get_params().keys() == method.get_params().keys()
    expected = _fingerprint(_run(method, table))
    assert _same(_fingerprint(_run(copy, table)), expected)
    rebuilt = type(method)(**method.get_params())
    assert _same(_fingerprint(_run(rebuilt, table)), expected)
    reset = clone(method).set_params(**method.get_params())
    assert _same(_fingerprint(_run(reset, table)), expected)
    with pytest.raises(SdcError, match="no parameter"):
        copy.set_params(no_such_parameter=1)


def test_twins_are_the_generated_ones() -> None:
    generated = {cls.__name__: fn for cls, fn in function_twins("table").items()}
    assert generated == TWINS


@pytest.mark.parametrize("name", sorted(TWINS))
def test_function_twin_gives_the_same_result(name: str) -> None:
    cls = registry("table")[name]
    fn = TWINS[name]
    sig = inspect.signature(fn)
    # the twin takes the class's parameters, and the call arguments of its apply (progress)
    runtime = {k for k in inspect.signature(cls.apply).parameters if k not in ("self", "table")}
    fn_params = {k: p for k, p in sig.parameters.items() if k != "table" and k not in runtime}
    assert list(fn_params) == list(cls.parameters)
    init = inspect.signature(cls.__init__).parameters
    for pname, p in fn_params.items():
        assert p.default == init[pname].default, pname
    method, table = cls.contract_example()
    expected = _fingerprint(method.apply(table))
    assert _same(_fingerprint(fn(table, **method.get_params())), expected)


# ------------------------------------------------------------------ bad values
def _invalid_cases() -> list[tuple[str, str, str, str, object]]:
    cases = []
    for family, name in CLASSES:
        cls = registry(family)[name]
        for pname, param in cls.parameters.items():
            wrong = param.wrong_type_example()
            if wrong is not None:
                cases.append((family, name, pname, "wrong type", wrong))
            for value in param.out_of_range_examples():
                cases.append((family, name, pname, "out of range", value))
    return cases


def test_every_parameter_has_a_bad_value() -> None:
    covered = {(f, n, p) for f, n, p, _, _ in _invalid_cases()}
    for family, name in CLASSES:
        for pname in registry(family)[name].parameters:
            assert (family, name, pname) in covered, f"{name}.{pname}"


@pytest.mark.parametrize(
    ("family", "name", "param", "kind", "value"),
    _invalid_cases(),
    ids=lambda v: v if isinstance(v, str) else type(v).__name__,
)
def test_constraints_reject_bad_values(
    family: str, name: str, param: str, kind: str, value: object
) -> None:
    method, table = _example(family, name)
    bad = clone(method).set_params(**{param: value})
    with pytest.raises(SdcError) as info:
        _run(bad, table)
    message = str(info.value)
    assert name in message, message
    assert repr(param) in message, message
    with pytest.raises(SdcError, match=repr(param)):
        bad.validate_params()

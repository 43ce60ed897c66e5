"""The keyword contract of every registered method and of its function twin.

Part of the contract suite (with ``tests/masking/test_contract.py`` and
``tests/tables/test_contract.py``), run over every class of ``registry("microdata")``,
``registry("rule")`` and ``registry("table")``:

* the twin's signature is the data, then exactly the class's parameters (same names, same
  defaults, keyword-only), then, for a microdata method, the role keywords of
  :class:`~sdckit.microdata.Microdata` that are not parameters of the class;
* the twin gives the result of the class;
* a misspelt keyword, to the class or to the twin, is a :class:`ParameterError` with the
  did-you-mean hint of ``set_params`` and the job loader; a positional argument is a
  :class:`ParameterError` saying that the parameters are given by name; neither message shows
  the value given.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.errors import ParameterError
from sdckit.masking import Microaggregation
from sdckit.microdata import Microdata
from sdckit.protection import Parameterised, registry
from sdckit.twins import function_twins, role_keywords

FAMILIES = ("microdata", "rule", "table")
CLASSES = [(family, name) for family in FAMILIES for name in sorted(registry(family))]
IDS = [f"{family}-{name}" for family, name in CLASSES]
WITH_TWIN = [(f, n) for f, n in CLASSES if f != "rule"]  # rules have no function twin
TWIN_IDS = [f"{family}-{name}" for family, name in WITH_TWIN]

#: A value that must never be echoed in an error message.
SECRET = "secret-value-4711"


def _cls(family: str, name: str) -> type[Parameterised]:
    return registry(family)[name]


def _twin(family: str, name: str) -> Any:
    return function_twins(family)[_cls(family, name)]


def _misspelt(pname: str) -> str:
    """A plausible typo of ``pname`` ('min_diagonal' -> 'min_diagonl', 'k' -> 'k_')."""
    return pname[:-2] + pname[-1] if len(pname) > 3 else pname + "_"


def test_every_microdata_and_table_method_has_a_twin() -> None:
    for family in ("microdata", "table"):
        assert set(function_twins(family)) == set(registry(family).values()), family
    assert function_twins("rule") == {}


def test_role_keywords_are_those_of_microdata() -> None:
    assert role_keywords()[:6] == ("keys", "numeric", "weight", "strata", "household", "sensitive")
    sig = inspect.signature(Microdata.__init__)
    assert set(role_keywords()) == {n for n in sig.parameters if n not in ("self", "data")}


@pytest.mark.parametrize(("family", "name"), WITH_TWIN, ids=TWIN_IDS)
def test_twin_signature_is_the_declaration(family: str, name: str) -> None:
    cls = _cls(family, name)
    twin = _twin(family, name)
    sig = list(inspect.signature(twin).parameters.values())
    init = inspect.signature(cls.__init__).parameters
    data, rest = sig[0], sig[1:]
    assert data.kind is data.POSITIONAL_OR_KEYWORD
    assert all(p.kind is p.KEYWORD_ONLY for p in rest)
    params = rest[: len(cls.parameters)]
    assert [p.name for p in params] == list(cls.parameters)
    for p in params:
        assert p.default == init[p.name].default or p.default is init[p.name].default, p.name
    # then the roles (microdata methods), then the call's runtime arguments: the
    # keyword-only arguments of ``apply`` (``progress``), never parameters
    runtime = [
        n
        for n, p in inspect.signature(cls.apply).parameters.items()
        if p.kind is p.KEYWORD_ONLY and n not in cls.parameters and n not in role_keywords()
    ]
    roles = [p.name for p in rest[len(cls.parameters) :]]
    if family == "microdata":
        want = [r for r in role_keywords() if r not in cls.parameters]
        assert roles == [*want, *runtime]
    else:
        assert roles == runtime
    doc = twin.__doc__ or ""
    assert f":class:`{name}`" in doc and ">>> " in doc, f"{twin.__name__}: no docs or example"


@pytest.mark.parametrize(("family", "name"), WITH_TWIN, ids=TWIN_IDS)
def test_twin_gives_the_result_of_the_class(family: str, name: str) -> None:
    cls = _cls(family, name)
    method, data = cls.contract_example()  # type: ignore[attr-defined]
    params = method.get_params()
    by_class = method.apply(data)
    by_twin = _twin(family, name)(data, **copy.deepcopy(params))
    if family == "microdata":
        assert by_twin.microdata.frame.equals(by_class.microdata.frame, null_equal=True)
        assert by_twin.changed == by_class.changed
        assert by_twin.protection.get_params().keys() == params.keys()
    else:
        assert type(by_twin) is type(by_class)
        a, b = by_twin.table if hasattr(by_twin, "table") else by_twin, by_class
        if hasattr(by_class, "rounded"):
            assert by_twin.rounded.tolist() == by_class.rounded.tolist()
        else:
            assert a.status.tolist() == b.table.status.tolist()


@pytest.mark.parametrize(("family", "name"), CLASSES, ids=IDS)
def test_class_refuses_a_misspelt_keyword_with_a_hint(family: str, name: str) -> None:
    cls = _cls(family, name)
    first = next(iter(cls.parameters))
    with pytest.raises(ParameterError) as info:
        cls(**{_misspelt(first): SECRET})
    message = str(info.value)
    assert message.startswith(f"{name} has no parameter {_misspelt(first)!r}.")
    assert f"Did you mean {first!r}?" in message
    assert "Valid parameters: " + ", ".join(cls.parameters) in message
    assert SECRET not in message


@pytest.mark.parametrize(("family", "name"), CLASSES, ids=IDS)
def test_class_refuses_positional_arguments(family: str, name: str) -> None:
    cls = _cls(family, name)
    first = next(iter(cls.parameters))
    with pytest.raises(ParameterError) as info:
        cls(SECRET)
    message = str(info.value)
    assert message == f"{name} takes keyword arguments only: {name}({first}=...)."
    # the same refusal for an instance built from its own parameters plus a positional
    method, _ = cls.contract_example()  # type: ignore[attr-defined]
    with pytest.raises(ParameterError, match="keyword arguments only"):
        cls(SECRET, **method.get_params())


@pytest.mark.parametrize(("family", "name"), CLASSES, ids=IDS)
def test_set_params_and_constructor_word_unknown_names_alike(family: str, name: str) -> None:
    cls = _cls(family, name)
    method, _ = cls.contract_example()  # type: ignore[attr-defined]
    first = next(iter(cls.parameters))
    with pytest.raises(ParameterError) as by_set:
        method.set_params(**{_misspelt(first): SECRET})
    with pytest.raises(ParameterError) as by_init:
        cls(**{_misspelt(first): SECRET})
    assert str(by_set.value) == str(by_init.value)


@pytest.mark.parametrize(("family", "name"), WITH_TWIN, ids=TWIN_IDS)
def test_twin_refuses_a_misspelt_keyword_with_a_hint(family: str, name: str) -> None:
    cls = _cls(family, name)
    twin = _twin(family, name)
    _, data = cls.contract_example()  # type: ignore[attr-defined]
    first = next(iter(cls.parameters))
    with pytest.raises(ParameterError) as info:
        twin(data, **{_misspelt(first): SECRET})
    message = str(info.value)
    assert message.startswith(f"{twin.__name__}() has no parameter {_misspelt(first)!r}.")
    assert f"Did you mean {first!r}?" in message
    assert SECRET not in message
    if family == "microdata":
        assert "; roles: keys, numeric, weight" in message
        with pytest.raises(ParameterError, match=r"Did you mean 'household'\?"):
            twin(data, househld="hh")


@pytest.mark.parametrize(("family", "name"), WITH_TWIN, ids=TWIN_IDS)
def test_twin_refuses_a_second_positional_argument(family: str, name: str) -> None:
    cls = _cls(family, name)
    twin = _twin(family, name)
    method, data = cls.contract_example()  # type: ignore[attr-defined]
    with pytest.raises(ParameterError) as info:
        twin(data, SECRET, **method.get_params())
    message = str(info.value)
    assert "only positional argument" in message and "by name" in message
    assert SECRET not in message
    with pytest.raises(ParameterError, match="as its first argument"):
        twin(**method.get_params())


def test_a_parameter_named_like_a_role_goes_to_the_class() -> None:
    import polars as pl

    from sdckit.masking import microaggregation

    df = pl.DataFrame({"g": [1, 1, 1, 2, 2, 2], "x": [1.0, 2.0, 3.0, 10.0, 11.0, 30.0]})
    assert "strata" in Microaggregation.parameters and "strata" in role_keywords()
    sig = inspect.signature(microaggregation).parameters
    assert list(sig).count("strata") == 1
    out = microaggregation(df, variables=["x"], k=3, strata="g")
    assert out.protection.get_params()["strata"] == "g"
    assert out.microdata.strata is None  # the role was not set from it
    assert out.data["x"].to_list() == [2.0, 2.0, 2.0, 17.0, 17.0, 17.0]


@settings(max_examples=60, deadline=None)
@given(
    name=st.from_regex(r"[a-z][a-z_0-9]{0,20}", fullmatch=True),
    value=st.text(min_size=1).map(lambda t: "\u00a7" + t),  # "§" never appears otherwise
)
def test_any_unknown_keyword_is_named_and_its_value_never_shown(name: str, value: str) -> None:
    import polars as pl

    from sdckit.masking import Pram, pram

    if name in Pram.parameters or name in role_keywords() or name == "data":
        return
    df = pl.DataFrame({"a": [1, 2, 1, 2]})
    for call in (lambda: Pram(**{name: value}), lambda: pram(df, keys=["a"], **{name: value})):
        with pytest.raises(ParameterError) as info:
            call()
        message = str(info.value)
        assert f"no parameter {name!r}." in message
        assert "Valid parameters: variables, transition, min_diagonal" in message
        assert "\u00a7" not in message


def _required(cls: type[Parameterised]) -> list[str]:
    init = inspect.signature(cls.__init__).parameters
    return [n for n, p in init.items() if n != "self" and p.default is p.empty]


REQUIRED = [(f, n) for f, n in CLASSES if _required(_cls(f, n))]


def test_some_classes_have_required_parameters() -> None:
    names = {n for _, n in REQUIRED}
    assert {
        "TopBottomCoding",
        "IntervalRecoding",
        "RiskSuppression",
        "DeterministicRounding",
    } <= names


@pytest.mark.parametrize(("family", "name"), REQUIRED, ids=[f"{f}-{n}" for f, n in REQUIRED])
def test_a_missing_required_parameter_is_named(family: str, name: str) -> None:
    cls = _cls(family, name)
    missing = _required(cls)
    with pytest.raises(ParameterError) as info:
        cls()
    assert str(info.value) == (
        f"{name} needs the parameter(s) {', '.join(map(repr, missing))}: {name}({missing[0]}=...)."
    )
    if family != "rule":
        _, data = cls.contract_example()  # type: ignore[attr-defined]
        with pytest.raises(ParameterError, match="needs the parameter"):
            _twin(family, name)(data)


def test_a_twin_takes_the_progress_of_its_class() -> None:
    """``progress`` is a call argument of a method that runs by strata: its twin passes it
    to ``apply`` (and it is no parameter of the class)."""
    import numpy as np
    import polars as pl

    from sdckit.masking import Microaggregation, microaggregation

    assert "progress" not in Microaggregation.parameters
    rng = np.random.default_rng(3)
    df = pl.DataFrame({"x": rng.normal(size=60), "s": np.repeat(["a", "b", "c"], 20)})
    seen: list[tuple[int, int]] = []
    out = microaggregation(
        df, numeric=["x"], strata="s", k=3, progress=lambda done, total: seen.append((done, total))
    )
    by_class = Microaggregation(k=3, strata="s").apply(df, numeric=["x"])
    assert out.microdata.frame.equals(by_class.microdata.frame)
    assert seen and seen[-1] == (3, 3)
    with pytest.raises(ParameterError, match="progres"):
        microaggregation(df, numeric=["x"], k=3, progres=print)

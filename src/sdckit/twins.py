"""Function twins: ``pram(df, ...)`` beside ``Pram(...).apply(df)``, made from the declaration.

Every protection method class has a function twin (``Shuffling`` and :func:`shuffle`,
``GaussSuppression`` and :func:`suppress_gauss`, ...).  The twins are not written by hand:
:func:`function_twin` turns a documented stub into the twin of a class, so a twin takes
exactly

* the data (a frame or a :class:`~sdckit.microdata.Microdata` for a microdata method, a
  :class:`~sdckit.tables.Table` for a table method), the only positional argument;
* the class's parameters, under the same names and with the same defaults;
* for a microdata method, the role keywords of :class:`~sdckit.microdata.Microdata`
  (``keys``, ``numeric``, ``weight``, ``strata``, ``household``, ...), used to build the
  Microdata from a plain frame (given with a Microdata they replace its roles);
* the runtime arguments of the call, the keyword-only arguments of the class's ``apply``
  (``progress`` where the method reports its progress): call arguments, not parameters.

A name that is both a parameter of the class and a role (``strata`` of
:class:`~sdckit.masking.Microaggregation`) is the class's parameter: the twin passes it to
the class, which falls back on the data's role when it is not given.  Anything else is a
:class:`~sdckit.errors.ParameterError` with the same did-you-mean hint as ``set_params`` and
the job loader.  The stub's body is never run; its name, docstring and return annotation are
kept.

Examples
--------
>>> import polars as pl
>>> from sdckit.masking import shuffle
>>> "variables" in shuffle.__signature__.parameters, "numeric" in shuffle.__signature__.parameters
(True, True)
>>> df = pl.DataFrame({"x": [1.0, 2.0, 3.0]})
>>> shuffle(df, varaibles=["x"])
Traceback (most recent call last):
...
sdckit.errors.ParameterError: shuffle() has no parameter 'varaibles'. Did you mean 'variables'? ...
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from sdckit.errors import ParameterError
from sdckit.microdata import Microdata
from sdckit.protection import Parameterised, registry, unknown_parameter

__all__ = ["function_twin", "function_twins", "role_keywords"]

F = TypeVar("F", bound=Callable[..., Any])

#: class -> its twin, filled as the methods' modules are imported.
_TWINS: dict[type[Parameterised], Callable[..., Any]] = {}


def role_keywords() -> tuple[str, ...]:
    """The keywords of :class:`~sdckit.microdata.Microdata` besides the data (its roles)."""
    sig = inspect.signature(Microdata.__init__)
    return tuple(n for n, p in sig.parameters.items() if p.kind is p.KEYWORD_ONLY)


def function_twin(cls: type[Parameterised], *, roles: bool = True) -> Callable[[F], F]:
    """Decorator: make the documented stub below it the function twin of ``cls``.

    Parameters
    ----------
    cls : type
        The method class; the twin calls ``cls(**parameters).apply(data, **roles)``.
    roles : bool, default True
        Whether the twin takes the role keywords of :class:`~sdckit.microdata.Microdata`
        (microdata methods); table methods take none.

    Returns
    -------
    callable
        A decorator keeping the stub's name, module, docstring and return annotation.
    """

    def decorate(stub: F) -> F:
        init = inspect.signature(cls.__init__).parameters
        own = [p for n, p in init.items() if n != "self"]
        names = [p.name for p in own]
        role_names = [r for r in role_keywords() if r not in names] if roles else []
        stub_sig = inspect.signature(stub)
        data_name = next(iter(stub_sig.parameters))
        data = inspect.Parameter(
            data_name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            annotation=stub_sig.parameters[data_name].annotation,
        )
        md_sig = inspect.signature(Microdata.__init__).parameters
        extra = [md_sig[r] for r in role_names]  # Microdata's own defaults and annotations
        # the call's runtime arguments (``progress``): keyword-only arguments of ``apply``
        runtime = [
            p
            for n, p in inspect.signature(cls.apply).parameters.items()  # type: ignore[attr-defined]
            if p.kind is p.KEYWORD_ONLY and n not in names and n not in role_names
        ]
        run_names = [p.name for p in runtime]
        signature = inspect.Signature(
            [data, *own, *extra, *runtime], return_annotation=stub_sig.return_annotation
        )
        label = f"{stub.__name__}()"

        @functools.wraps(stub)
        def twin(*args: Any, **kwargs: Any) -> Any:
            if not args and data_name not in kwargs:
                raise ParameterError(f"{label} needs the {data_name} as its first argument.")
            if len(args) > 1 or (args and data_name in kwargs):
                example = f"{names[0]}=..." if names else "..."
                raise ParameterError(
                    f"{label} takes the {data_name} as its only positional argument; give "
                    f"the parameters by name: {stub.__name__}({data_name}, {example})."
                )
            value = args[0] if args else kwargs.pop(data_name)
            params: dict[str, Any] = {}
            given_roles: dict[str, Any] = {}
            for name, item in kwargs.items():
                if name in names:
                    params[name] = item
                elif name in role_names or name in run_names:
                    given_roles[name] = item
                else:
                    raise unknown_parameter(label, name, names, [*role_names, *run_names])
            method = cls(**params)
            return method.apply(value, **given_roles)  # type: ignore[attr-defined]

        del twin.__wrapped__  # the signature is the generated one, not the stub's
        twin.__signature__ = signature  # type: ignore[attr-defined]
        twin.twin_of = cls  # type: ignore[attr-defined]
        _TWINS[cls] = twin
        return twin  # type: ignore[return-value]

    return decorate


def function_twins(family: str = "microdata") -> Mapping[type[Parameterised], Callable[..., Any]]:
    """The twin of every registered class of ``family`` that has one (read-only)."""
    classes = registry(family).values()
    return MappingProxyType({c: _TWINS[c] for c in classes if c in _TWINS})

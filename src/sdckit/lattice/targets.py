"""Privacy models and loss measures by name: how a job file's ``[target]`` and ``loss`` read.

The names are resolved against the classes :mod:`sdckit.lattice` exports when they are asked
for, so a model or measure added there is available here without an edit; a name sdckit knows
but whose class is not in this version gives a "not available" error, not a traceback.

``[target]`` entries (each a number, a table of the model's parameters, or a list of tables
for several attributes):

=========================  =================================================================
``k = 5``                  k-anonymity
``l = {attribute, kind, l, c}``  l-diversity; ``kind`` = "distinct" (default), "entropy",
                           "recursive"
``t = {attribute, kind, t}``     t-closeness; ``kind`` = "equal" (default), "ordered",
                           "hierarchical"
``delta = {...}``          delta-presence (a research subset)
``k_map = {...}``          k-map (a population table or an estimate)
``average_risk = ...``     average re-identification risk
``sample_uniqueness = ...``, ``population_uniqueness = ...``  uniqueness bounds
=========================  =================================================================
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping
from typing import Any

from sdckit.errors import ParameterError, SdcError
from sdckit.lattice.loss import LossMeasure
from sdckit.lattice.models import PrivacyModel

__all__ = ["LOSS_NAMES", "MODEL_KEYS", "loss_measure", "privacy_models"]

#: ``[target]`` key -> the model class, or per ``kind`` the classes.
_MODELS: dict[str, str | dict[str, str]] = {
    "k": "KAnonymity",
    "l": {
        "distinct": "DistinctLDiversity",
        "entropy": "EntropyLDiversity",
        "recursive": "RecursiveCLDiversity",
    },
    "t": {
        "equal": "EqualDistanceTCloseness",
        "ordered": "OrderedDistanceTCloseness",
        "hierarchical": "HierarchicalTCloseness",
    },
    "delta": "DPresence",
    "k_map": "KMap",
    "average_risk": "AverageReidentificationRisk",
    "sample_uniqueness": "SampleUniqueness",
    "population_uniqueness": "PopulationUniqueness",
}

#: The ``[target]`` keys that are privacy models of the search.
MODEL_KEYS: tuple[str, ...] = tuple(_MODELS)

#: The loss measures sdckit knows by name (ARX's), available or to come.
LOSS_NAMES: tuple[str, ...] = (
    "loss", "entropy", "non_uniform_entropy", "discernibility", "aecs", "precision", "height",
    "kl_divergence",
)  # fmt: skip


def _exported(base: type) -> dict[str, type]:
    """The subclasses of ``base`` that :mod:`sdckit.lattice` and its model and loss modules
    export, by class name."""
    import importlib

    # by name at run time: the package imports this module (through the method)
    modules = [
        importlib.import_module(name)
        for name in (PrivacyModel.__module__, LossMeasure.__module__, "sdckit.lattice")
    ]
    found: dict[str, type] = {}
    for module in modules:
        for name, value in vars(module).items():
            if isinstance(value, type) and issubclass(value, base) and value is not base:
                found.setdefault(name, value)
    return found


def _plain(name: str) -> str:
    return name.replace("_", "").replace("-", "").replace(" ", "").lower()


def _construct(cls: type, value: Any, where: str) -> Any:
    """``cls(value)`` for a number, ``cls(**value)`` for a table; errors in job terms."""
    try:
        if isinstance(value, Mapping):
            return cls(**value)
        return cls(value)
    except TypeError:
        params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
        raise ParameterError(
            f"{where}: {cls.__name__} takes the parameters {', '.join(params)}; give them as a "
            f"table, e.g. {{{params[0] if params else 'x'} = ...}}."
        ) from None
    except SdcError as exc:
        raise type(exc)(f"{where}: {exc}") from None


def privacy_models(table: Mapping[str, Any], where: str = "[target]") -> list[PrivacyModel]:
    """The privacy models of a ``[target]``-style table (its other keys are ignored).

    Examples
    --------
    >>> [m.describe() for m in privacy_models({"k": 5, "max_global_risk_pct": 1.0})]
    ['5-anonymity']
    >>> privacy_models({"l": {"attribute": "dx", "kind": "fancy"}})
    Traceback (most recent call last):
    ...
    sdckit.errors.ParameterError: [target] 'l': kind must be one of 'distinct', ...
    """
    available = _exported(PrivacyModel)
    found: list[PrivacyModel] = []
    for key, spec in _MODELS.items():
        if key not in table:
            continue
        values = table[key] if isinstance(table[key], list) else [table[key]]
        if not values:
            raise ParameterError(f"{where} {key!r} is an empty list; give at least one model.")
        for value in values:
            here = f"{where} {key!r}"
            if isinstance(spec, dict):
                if not isinstance(value, Mapping):
                    raise ParameterError(
                        f'{here} must be a table such as {{attribute = "...", kind = '
                        f'"{next(iter(spec))}", {key} = ...}}.'
                    )
                value = dict(value)
                kind = value.pop("kind", next(iter(spec)))
                if kind not in spec:
                    raise ParameterError(
                        f"{here}: kind must be one of {', '.join(map(repr, spec))}."
                    )
                class_name = spec[kind]
            else:
                if isinstance(value, bool) or not isinstance(value, int | float | Mapping):
                    raise ParameterError(f"{here} must be a number or a table of parameters.")
                class_name = spec
            cls = available.get(class_name)
            if cls is None:
                raise ParameterError(
                    f"{here}: the privacy model {class_name} is not available in this version "
                    f"of sdckit (available: {', '.join(sorted(available))})."
                )
            found.append(_construct(cls, value, here))
    return found


def loss_measure(spec: Any, where: str = "loss") -> LossMeasure:
    """The loss measure named by ``spec`` (a name, ``{measure = name, ...parameters}`` or a
    :class:`~sdckit.lattice.LossMeasure`).

    Examples
    --------
    >>> loss_measure("height").describe()
    'Height'
    """
    if isinstance(spec, LossMeasure):
        return spec
    params: dict[str, Any] = {}
    if isinstance(spec, Mapping):
        params = dict(spec)
        spec = params.pop("measure", None)
    if not isinstance(spec, str) or not spec.strip():
        raise ParameterError(
            f'{where} must name a loss measure such as "height" (or be a table with '
            'measure = "..." and its parameters).'
        )
    available = {_plain(n): c for n, c in _exported(LossMeasure).items()}
    cls = available.get(_plain(spec))
    if cls is None:
        names = sorted({*LOSS_NAMES, *available})
        if _plain(spec) in {_plain(n) for n in LOSS_NAMES}:
            raise ParameterError(
                f"{where}: the loss measure {spec!r} is not available in this version of "
                f"sdckit (available: {', '.join(sorted(available))})."
            )
        close = difflib.get_close_matches(spec.lower(), names, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ParameterError(f"{where}: unknown loss measure {spec!r}.{hint}")
    return _construct(cls, params, where) if params else cls()

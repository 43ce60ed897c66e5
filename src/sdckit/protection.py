"""The protection contract: methods, their declared parameters, their results, the registry.

Every protection method of sdckit (microdata methods in :mod:`sdckit.masking`, sensitivity
rules and secondary-suppression methods in :mod:`sdckit.tables`) follows one contract, as
scikit-learn's estimators do:

* ``__init__`` takes keyword-only parameters and only stores them; ``get_params``,
  ``set_params`` and :func:`clone` work without per-class code;
* the class declares every parameter in ``parameters`` (a :class:`Param` per name: types,
  ranges, choices, which parameters name columns, a help line) and says in ``description``
  what it does in one plain sentence; the declaration is checked against the signature when
  the class is defined, and the values are checked when the method is applied, with errors
  that name the class and the parameter;
* a microdata method's :meth:`ProtectionMethod.apply` returns a :class:`Protected` (the new
  file with the same roles, what changed, and the method object); the caller's data is never
  modified; random methods take ``seed`` (int or :class:`numpy.random.Generator`);
* :meth:`ProtectionMethod.verify` checks the promised protection after the fact and raises
  :class:`~sdckit.errors.VerificationError` (never a bare ``assert``, which ``python -O``
  removes).

Every concrete class registers itself; :func:`registry` returns them by family, importing the
packages that define them once, on first use.

Examples
--------
>>> from sdckit.protection import get_method, registry
>>> cls = get_method("local_suppression")
>>> cls.__name__, "k" in cls.parameters
('LocalSuppression', True)
>>> method = cls(k=3)
>>> clone(method).set_params(k=5).get_params()["k"], method.k
(5, 3)
"""

from __future__ import annotations

import copy
import difflib
import functools
import importlib
import inspect
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

import numpy as np
import polars as pl

from sdckit._constraints import (
    Array,
    Boolean,
    Callable_,
    Column,
    ColumnMap,
    Columns,
    Constraint,
    Instance,
    Integer,
    ListOf,
    MapOf,
    NoneValue,
    Options,
    Param,
    Real,
    Seed,
    String,
    TupleOf,
    columns_named,
    validate_parameters,
)
from sdckit._results import Summary
from sdckit.errors import ParameterError, VerificationError
from sdckit.microdata import Microdata, as_microdata

__all__ = [
    "Array",
    "Boolean",
    "Callable_",
    "Column",
    "ColumnMap",
    "Columns",
    "Constraint",
    "Instance",
    "Integer",
    "ListOf",
    "MapOf",
    "NoneValue",
    "Options",
    "Param",
    "Parameterised",
    "Protected",
    "ProtectionMethod",
    "Real",
    "Seed",
    "String",
    "TupleOf",
    "changed_cells",
    "clone",
    "get_method",
    "harmonise",
    "registry",
    "require",
    "snake_name",
    "unknown_parameter",
]

#: The packages whose import registers the classes of each family (plugin discovery).
_FAMILY_PACKAGES: dict[str, tuple[str, ...]] = {
    "microdata": ("sdckit.masking", "sdckit.lattice"),
    "rule": ("sdckit.tables",),
    "table": ("sdckit.tables",),
}
_REGISTRY: dict[str, dict[str, type[Parameterised]]] = {name: {} for name in _FAMILY_PACKAGES}
_FILLED: set[str] = set()

P = TypeVar("P", bound="Parameterised")


def snake_name(class_name: str) -> str:
    """``LocalSuppression`` -> ``local_suppression`` (the name used in job files)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", class_name).lower()


def unknown_parameter(
    owner: str, name: str, valid: Sequence[str], roles: Sequence[str] = ()
) -> ParameterError:
    """The error for a keyword ``name`` that ``owner`` does not take, with the closest one.

    One wording for ``set_params``, the classes' constructors and the function twins (the job
    loader words the same hint in job-file terms); a twin also lists the role keywords it
    takes.  Only names appear, never a value.

    Examples
    --------
    >>> print(unknown_parameter("Pram", "min_diag", ["seed", "min_diagonal"]))
    Pram has no parameter 'min_diag'. Did you mean 'min_diagonal'? Valid parameters: seed, ...
    """
    close = difflib.get_close_matches(name, [*valid, *roles], n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    also = f"; roles: {', '.join(roles)}" if roles else ""
    return ParameterError(
        f"{owner} has no parameter {name!r}.{hint} Valid parameters: {', '.join(valid)}{also}."
    )


def _keyword_init(init: Any) -> Any:
    """``init`` refusing positional arguments and unknown or missing keywords with a
    :class:`ParameterError` (a plain ``TypeError`` would name neither the fix nor the
    valid parameters)."""
    sig = inspect.signature(init)
    valid = [n for n in sig.parameters if n != "self"]
    required = [n for n, p in sig.parameters.items() if n != "self" and p.default is p.empty]

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        owner = type(self).__name__
        if args:
            example = f"{valid[0]}=..." if valid else ""
            raise ParameterError(f"{owner} takes keyword arguments only: {owner}({example}).")
        for name in kwargs:
            if name not in valid:
                raise unknown_parameter(owner, name, valid)
        missing = [n for n in required if n not in kwargs]
        if missing:
            raise ParameterError(
                f"{owner} needs the parameter(s) {', '.join(map(repr, missing))}: "
                f"{owner}({missing[0]}=...)."
            )
        init(self, **kwargs)

    __init__._keyword_checked = True  # type: ignore[attr-defined]
    return __init__


class Parameterised:
    """Keyword-only parameters stored by ``__init__``, declared in ``parameters``.

    Subclasses set ``parameters`` (name -> :class:`Param`), ``description`` (one plain
    sentence; ``{variables}`` stands for the variables a step changed) and ``name`` (the
    display name).  A concrete subclass whose declaration does not match its ``__init__``
    signature is refused when it is defined.
    """

    #: Display name (``"local suppression"``).
    name: ClassVar[str] = "method"
    #: One plain-language sentence saying what the method does.
    description: ClassVar[str] = ""
    #: The declared parameters, in signature order.
    parameters: ClassVar[Mapping[str, Param]] = MappingProxyType({})
    #: Registry family (``"microdata"``, ``"rule"``, ``"table"``); None: not registered.
    family: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if inspect.isabstract(cls) or cls.__name__.startswith("_"):
            return
        names = cls._param_names()
        sig = inspect.signature(cls.__init__)
        for p in sig.parameters.values():
            if p.name == "self":
                continue
            if p.kind is not p.KEYWORD_ONLY:
                raise TypeError(
                    f"{cls.__name__}.__init__ must take keyword-only parameters "
                    f"('{p.name}' is not); put a '*' first."
                )
        declared = list(cls.parameters)
        if declared != names:
            missing = [n for n in names if n not in declared]
            extra = [n for n in declared if n not in names]
            raise TypeError(
                f"{cls.__name__}.parameters must declare exactly the parameters of __init__, "
                f"in order (undeclared: {missing}, unknown: {extra})."
            )
        if not cls.description:
            raise TypeError(f"{cls.__name__} needs a one-sentence 'description'.")
        if not getattr(cls.__init__, "_keyword_checked", False):
            # once here for every method class, instead of a check in each constructor
            cls.__init__ = _keyword_init(cls.__init__)  # type: ignore[method-assign]
        if cls.family is not None:
            _REGISTRY.setdefault(cls.family, {})[cls.__name__] = cls

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.name != "self"]

    def get_params(self) -> dict[str, Any]:
        """The parameters, as given to ``__init__`` (a new dict)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self: P, **params: Any) -> P:
        """Set parameters by name and return ``self`` (unknown names are an error)."""
        valid = self._param_names()
        for name in params:
            if name not in valid:
                raise unknown_parameter(type(self).__name__, name, valid)
        for name, value in params.items():
            setattr(self, name, value)
        return self

    def validate_params(
        self, columns: Sequence[str] | None = None, *, where: str | None = None
    ) -> None:
        """Check the parameters against their declaration (and the data's ``columns``).

        Raises
        ------
        ParameterError
            A value of the wrong type or out of range.
        ColumnError
            A parameter names a column that is not among ``columns``.
        """
        validate_parameters(
            type(self).__name__, type(self).parameters, self.get_params(),
            columns=columns, where=where,
        )  # fmt: skip

    def columns_used(self) -> list[str]:
        """The columns named by the parameters."""
        return columns_named(type(self).parameters, self.get_params())

    @classmethod
    def describe(cls, variables: Sequence[str] = ()) -> str:
        """The description with ``{variables}`` filled in (no parameter value appears)."""
        names = ", ".join(variables) if variables else "some variables"
        return cls.description.format(variables=names)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _fail(self, what: str) -> None:
        """Raise a :class:`VerificationError` saying what failed (used by ``verify``)."""
        raise VerificationError(f"{type(self).__name__}: {what}")

    def _require(self, condition: object, what: str) -> None:
        """Raise a :class:`VerificationError` unless ``condition`` holds."""
        if not bool(condition):
            self._fail(what)


def require(condition: object, what: str) -> None:
    """Raise a :class:`VerificationError` with ``what`` unless ``condition`` holds.

    The replacement of ``assert`` in verification code (``python -O`` keeps it).
    """
    if not bool(condition):
        raise VerificationError(what)


def clone(method: P) -> P:
    """A new, unapplied method with (deep copies of) the same parameters."""
    if not isinstance(method, Parameterised):
        raise ParameterError("clone() takes a protection method, a rule or a table method.")
    return type(method)(**copy.deepcopy(method.get_params()))


def changed_cells(before: pl.Series, after: pl.Series) -> np.ndarray:
    """Boolean per record: True where the value differs (a value made missing counts)."""
    if before.dtype.is_float():
        before = before.fill_nan(None)
    if after.dtype.is_float():
        after = after.fill_nan(None)
    if before.dtype != after.dtype:
        # compare in a type wide enough for both (a recode 1 -> 1.5 is a change)
        if before.dtype.is_numeric() and after.dtype.is_numeric():
            wide = (
                pl.Int64 if before.dtype.is_integer() and after.dtype.is_integer() else pl.Float64
            )
            before, after = before.cast(wide), after.cast(wide)
        else:
            before, after = before.cast(pl.String), after.cast(pl.String)
    differs = (before != after).fill_null(True)
    both_null = before.is_null() & after.is_null()
    return (differs & ~both_null).to_numpy()


def _null_mask(series: pl.Series) -> pl.Series:
    return series.fill_nan(None).is_null() if series.dtype.is_float() else series.is_null()


def harmonise(
    original: Microdata, frame: pl.DataFrame, rows: np.ndarray | None = None
) -> tuple[pl.DataFrame, dict[str, int]]:
    """Apply the release roles to a method's output: households, then linked variables.

    * A household-level variable that a method left unequal within a household is made equal
      again: when some member's value was suppressed, it is suppressed for every member;
      otherwise every member takes the value of the household's first member.
    * Wherever a key was suppressed, the variables linked to it are suppressed too.

    Returns the frame and the number of values changed per column by these rules.
    """
    before = original.frame if rows is None else original.frame[np.asarray(rows)]
    if before.height != frame.height:
        return frame, {}
    changed: dict[str, int] = {}
    hh = original.household
    if hh is not None and hh in frame.columns:
        for col in original.household_level:
            if col not in frame.columns:
                continue
            lost = (~_null_mask(before.get_column(col))) & _null_mask(frame.get_column(col))
            work = pl.DataFrame(
                {"h": frame.get_column(hh), "v": frame.get_column(col), "lost": lost}
            )
            spread = work.select(
                (pl.col("v").n_unique().over("h") > 1).any()
                | (pl.col("lost").any().over("h") & ~pl.col("lost")).any()
            ).item()
            if not spread:
                continue
            fixed = work.select(
                pl.when(pl.col("lost").any().over("h"))
                .then(None)
                .otherwise(pl.col("v").first().over("h"))
                .alias(col)
            ).to_series()
            count = int(changed_cells(frame.get_column(col), fixed).sum())
            if count:
                frame = frame.with_columns(fixed.cast(frame.schema[col]))
                changed[col] = count
    for col, key in original.linked.items():
        if col not in frame.columns or key not in frame.columns:
            continue
        became = (~_null_mask(before.get_column(key))) & _null_mask(frame.get_column(key))
        follow = became & ~_null_mask(frame.get_column(col))
        count = int(follow.sum())
        if count:
            frame = frame.with_columns(
                pl.when(follow).then(None).otherwise(frame.get_column(col)).alias(col)
            )
            changed[col] = changed.get(col, 0) + count
    return frame, changed


@dataclass(frozen=True, repr=False)
class Protected:
    """The result of a protection method.

    Attributes
    ----------
    microdata : Microdata
        The protected file, with the same column roles as the input.
    method : str
        Display name of the method that produced it.
    params : dict
        The method's parameters.
    changed : dict of str to int
        Number of changed values per variable (only variables with changes are listed).
    changed_records : numpy.ndarray
        Boolean per record: True where at least one value changed.
    details : dict
        Method-specific information (groups, swap partners, transition matrix, ...).
    protection : ProtectionMethod or None
        The method object that produced the result (a clone, so later changes to the
        caller's object do not alter the record).
    """

    microdata: Microdata
    method: str
    params: dict[str, Any]
    changed: dict[str, int]
    changed_records: np.ndarray
    details: dict[str, Any] = field(default_factory=dict)
    protection: ProtectionMethod | None = field(default=None, compare=False)

    @classmethod
    def from_frames(
        cls,
        original: Microdata,
        frame: pl.DataFrame,
        method: ProtectionMethod,
        *,
        details: dict[str, Any] | None = None,
        roles: dict[str, Any] | None = None,
        rows: np.ndarray | None = None,
    ) -> Protected:
        """Build the result by comparing ``frame`` with ``original`` column by column.

        ``rows`` gives the original positions of the records of ``frame`` when a method keeps
        a subset of the records (sub-sampling); their index labels are kept.  The release
        roles are applied first (:func:`harmonise`): household-level variables stay constant
        within households and linked variables follow their key's suppression; what these
        rules changed is listed in ``details["release_roles"]``.
        """
        frame, by_roles = harmonise(original, frame, rows)
        details = dict(details or {})
        if by_roles:
            details["release_roles"] = by_roles
        changed: dict[str, int] = {}
        records = np.zeros(frame.height, dtype=bool)
        if frame.height == original.n_records:
            # (sub-sampling changes the number of records; changed cells are then not defined)
            for col in frame.columns:
                if col not in original.frame.columns:
                    continue
                mask = changed_cells(original.frame.get_column(col), frame.get_column(col))
                count = int(np.count_nonzero(mask))
                if count:
                    changed[col] = count
                    records |= mask
        md = original.with_frame(frame, rows=rows, **(roles or {}))
        return cls(
            microdata=md,
            method=method.name,
            params=method.get_params(),
            changed=changed,
            changed_records=records,
            details=details,
            protection=method,
        )

    @property
    def data(self) -> Any:
        """The protected data in the caller's frame type, with the caller's index."""
        return self.microdata.to_native()

    def to_frame(self) -> Any:
        """Same as :attr:`data`."""
        return self.data

    @property
    def n_changed_records(self) -> int:
        """Number of records with at least one changed value."""
        return int(np.count_nonzero(self.changed_records))

    def summary(self) -> Summary:
        """What the method did: parameters and changed values per variable."""
        rows: list[tuple[str, Any]] = [("records", self.microdata.n_records)]
        rows += [(f"parameter {k}", v) for k, v in self.params.items() if v is not None]
        rows.append(("records changed", self.n_changed_records))
        rows += [(f"values changed in {k}", v) for k, v in self.changed.items()]
        return Summary(f"Protection: {self.method}", rows)

    def __repr__(self) -> str:
        return (
            f"Protected(method={self.method!r}, records={self.microdata.n_records}, "
            f"changed_records={self.n_changed_records})"
        )


class ProtectionMethod(Parameterised, ABC):
    """Base class of microdata protection methods (see the module docstring)."""

    name: ClassVar[str] = "protection method"
    family: ClassVar[str | None] = "microdata"
    #: Whether the method uses randomness (then it takes ``seed``).
    stochastic: ClassVar[bool] = False

    def apply(self, data: Any, **roles: Any) -> Protected:
        """Protect ``data`` (a frame with roles given as keywords, or a Microdata).

        The parameters are checked against their declaration first; an error names the
        class and the parameter.
        """
        return self._protect(data, roles)

    def _protect(self, data: Any, roles: dict[str, Any], **call: Any) -> Protected:
        """:meth:`apply` with call arguments for :meth:`_apply` (a method that takes some,
        such as ``progress``, overrides :meth:`apply` to accept them and calls this)."""
        md = as_microdata(data, **roles)
        self.validate_params(md.frame.columns)
        # call arguments not given are not passed: a subclass's _apply need not take them
        result = self._apply(md, **{k: v for k, v in call.items() if v is not None})
        return _with_protection(result, self)

    @abstractmethod
    def _apply(self, md: Microdata, **call: Any) -> Protected:
        """Protect a validated :class:`Microdata`."""

    @abstractmethod
    def verify(self, original: Microdata, protected: Protected) -> None:
        """Check the promised protection after the fact; raise VerificationError if it fails.

        For example local suppression recomputes ``fk`` and checks ``fk >= k``.
        """

    @classmethod
    @abstractmethod
    def contract_example(cls) -> tuple[ProtectionMethod, Microdata]:
        """A small instance and data for the shared contract tests."""


def _with_protection(result: Protected, method: ProtectionMethod) -> Protected:
    """``result`` with ``protection`` set to a clone of ``method`` (the record of the step)."""
    try:
        recorded = clone(method)
    except Exception:  # a parameter that cannot be copied (an open resource): keep the object
        recorded = method
    object.__setattr__(result, "protection", recorded)
    return result


# ------------------------------------------------------------------------------- registry
def _fill(family: str) -> None:
    if family in _FILLED:
        return
    for package in _FAMILY_PACKAGES.get(family, ()):
        importlib.import_module(package)
    _FILLED.add(family)


def registry(family: str = "microdata") -> Mapping[str, type[Parameterised]]:
    """Every registered class of a family, by class name (read-only).

    Parameters
    ----------
    family : {"microdata", "rule", "table"}, default "microdata"
        Microdata protection methods, table sensitivity rules, or table protection methods.
    """
    if family not in _FAMILY_PACKAGES:
        raise ParameterError(
            f"Unknown family {family!r}; choose one of {', '.join(map(repr, _FAMILY_PACKAGES))}."
        )
    _fill(family)
    return MappingProxyType(dict(sorted(_REGISTRY[family].items())))


def get_method(name: object, family: str = "microdata", *, where: str = "") -> Any:
    """The class registered under a class name (``LocalSuppression``) or its snake_case alias.

    Raises
    ------
    ParameterError
        An unknown name, with the closest known name and the list of known names.
    """
    prefix = f"{where}: " if where else ""
    if not isinstance(name, str) or not name.strip():
        raise ParameterError(f"{prefix}'method' must be a method name such as 'local_suppression'.")
    known = registry(family)
    aliases: dict[str, str] = {}
    for cls_name, cls in known.items():
        aliases[cls_name.lower()] = cls_name
        aliases[snake_name(cls_name)] = cls_name
        alias = getattr(cls, "alias", None)
        if isinstance(alias, str):
            aliases[alias] = cls_name
    key = name.strip().lower().replace("-", "_")
    if key in aliases:
        return known[aliases[key]]
    names = sorted({getattr(c, "alias", None) or snake_name(n) for n, c in known.items()})
    close = difflib.get_close_matches(key, names, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ParameterError(
        f"{prefix}unknown method {name!r}.{hint} Known methods: {', '.join(names)}."
    )

"""What every protection method promises, and the result it returns.

A protection method is a class whose ``__init__`` takes keyword-only parameters and only stores
them (as in scikit-learn), with a function twin that wraps it.  ``method.apply(data, **roles)``
returns a :class:`Protected`: the protected data in the caller's frame type, row order and
index, a new :class:`~sdckit.microdata.Microdata` with the same roles, and a record of what
changed.  The caller's data is never modified.  Random methods take ``seed`` (int or
:class:`numpy.random.Generator`); the same seed gives the same output, bit for bit.

Every concrete method registers itself (``ProtectionMethod.registry``) and implements
:meth:`ProtectionMethod.verify`, which checks the promised protection after the fact; the
shared contract tests in ``tests/masking/test_contract.py`` run against all of them, using the
small example each method provides in :meth:`ProtectionMethod.contract_example`.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit.microdata import Microdata, as_microdata

__all__ = ["Protected", "ProtectionMethod", "changed_cells"]


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


@dataclass(frozen=True, repr=False)
class Protected:
    """The result of a protection method.

    Attributes
    ----------
    microdata : Microdata
        The protected file, with the same column roles as the input.
    method : str
        Name of the method that produced it.
    params : dict
        The method's parameters.
    changed : dict of str to int
        Number of changed values per variable (only variables with changes are listed
        when ``changed`` is computed by :meth:`from_frames`).
    changed_records : numpy.ndarray
        Boolean per record: True where at least one value changed.
    details : dict
        Method-specific information (groups, swap partners, transition matrix, ...).
    """

    microdata: Microdata
    method: str
    params: dict[str, Any]
    changed: dict[str, int]
    changed_records: np.ndarray
    details: dict[str, Any] = field(default_factory=dict)

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
        a subset of the records (sub-sampling); their index labels are kept.
        """
        if frame.height != original.n_records:
            # sub-sampling changes the number of records; changed cells are then not defined
            changed: dict[str, int] = {}
            records = np.zeros(frame.height, dtype=bool)
        else:
            changed = {}
            records = np.zeros(frame.height, dtype=bool)
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
            details=dict(details or {}),
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


class ProtectionMethod(ABC):
    """Base class of protection methods (see the module docstring for the contract)."""

    name: ClassVar[str] = "protection method"
    registry: ClassVar[dict[str, type[ProtectionMethod]]] = {}
    #: Whether the method uses randomness (then it takes ``seed``).
    stochastic: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not inspect.isabstract(cls) and not cls.__name__.startswith("_"):
            ProtectionMethod.registry[cls.__name__] = cls

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.name != "self"]

    def get_params(self) -> dict[str, Any]:
        """The method's parameters, as given to ``__init__``."""
        return {name: getattr(self, name) for name in self._param_names()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def apply(self, data: Any, **roles: Any) -> Protected:
        """Protect ``data`` (a frame with roles given as keywords, or a Microdata)."""
        md = as_microdata(data, **roles)
        return self._apply(md)

    @abstractmethod
    def _apply(self, md: Microdata) -> Protected:
        """Protect a validated :class:`Microdata`."""

    @abstractmethod
    def verify(self, original: Microdata, protected: Protected) -> None:
        """Check the promised protection after the fact; raise AssertionError if it fails.

        For example local suppression recomputes ``fk`` and checks ``fk >= k``.
        """

    @classmethod
    @abstractmethod
    def contract_example(cls) -> tuple[ProtectionMethod, Microdata]:
        """A small instance and data for the shared contract tests."""

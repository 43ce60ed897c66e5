"""The exceptions and warnings of sdckit.

Every error raised for bad input is an :class:`SdcError`.  Messages name the column or parameter
at fault and say how to fix it; they never contain data values, which may be confidential.
"""

from __future__ import annotations

__all__ = [
    "ColumnError",
    "DataError",
    "InfeasibleError",
    "ParameterError",
    "SdcError",
    "SdcWarning",
    "VerificationError",
]


class SdcError(Exception):
    """Base class of every error sdckit raises for bad input or an impossible request."""


class ColumnError(SdcError, ValueError):
    """A column is unknown, duplicated, of the wrong type, or given two incompatible roles."""


class ParameterError(SdcError, ValueError):
    """A parameter has a value outside its allowed range or of the wrong type."""


class DataError(SdcError, ValueError):
    """The data cannot be used as given (empty, invalid weights, all-missing key, ...)."""


class InfeasibleError(SdcError):
    """The requested protection cannot be reached with the given settings."""


class VerificationError(SdcError, AssertionError):
    """A protection does not hold what it promises (raised by ``verify()`` and release checks).

    It is also an :class:`AssertionError`, so older ``except AssertionError`` clauses still
    catch it; unlike a bare ``assert`` it is raised under ``python -O`` too.
    """


class SdcWarning(UserWarning):
    """Something in the input is legal but suspicious (for example a key with very many levels)."""

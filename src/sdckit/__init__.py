"""sdckit: statistical disclosure control for microdata and statistical tables."""

from sdckit.errors import (
    ColumnError,
    DataError,
    InfeasibleError,
    ParameterError,
    SdcError,
    SdcWarning,
)
from sdckit.microdata import Microdata, as_microdata

__version__ = "0.1.0"

__all__ = [
    "ColumnError",
    "DataError",
    "InfeasibleError",
    "Microdata",
    "ParameterError",
    "SdcError",
    "SdcWarning",
    "__version__",
    "as_microdata",
]

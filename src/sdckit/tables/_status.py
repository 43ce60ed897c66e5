"""Cell status codes of a table and their names in exports (the bottom of sdckit.tables)."""

from __future__ import annotations

from enum import IntEnum

import numpy as np

__all__ = ["STATUS_NAMES", "CellStatus"]


class CellStatus(IntEnum):
    """Status of a cell: published (safe), suppressed (primary, secondary), empty, protected."""

    SAFE = 0
    PRIMARY = 1
    SECONDARY = 2
    EMPTY = 3
    PROTECTED = 4


#: Name of each status code in the internal export and the audit frame.
STATUS_NAMES = np.array(["safe", "primary", "secondary", "empty", "protected"])

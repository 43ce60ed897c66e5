"""Pairing an original and a protected file for utility measures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from sdckit._validation import check_columns_exist, column_list
from sdckit.errors import ColumnError, DataError
from sdckit.microdata import Microdata, as_microdata

__all__ = ["paired_frames", "weights_of"]


def _frame_of(data: Any) -> tuple[pl.DataFrame, Microdata]:
    md = as_microdata(data)  # a frame, a Microdata or the result of a protection method
    return md.frame, md


def paired_frames(
    original: Any,
    protected: Any,
    columns: str | Sequence[str] | None,
    role: str,
) -> tuple[pl.DataFrame, pl.DataFrame, tuple[str, ...], Microdata | None]:
    """Both files as polars frames, the compared columns, and the original's roles if known.

    ``columns`` defaults to the original Microdata's ``role`` variables (``numeric`` or ``keys``).
    Raises :class:`DataError` when the files have different numbers of records.
    """
    left, md = _frame_of(original)
    right, md_right = _frame_of(protected)
    if not (md.keys or md.numeric) and (md_right.keys or md_right.numeric):
        md = md_right  # roles known only from the protected file
    cols = column_list(columns, role if role != "keys" else "variables")
    if not cols and md is not None:
        cols = md.numeric if role == "numeric" else md.keys
    if not cols:
        raise ColumnError(
            f"No {role} variables to compare; pass the columns (e.g. {role}=['income'])."
        )
    check_columns_exist(cols, list(left.columns), f"{role} (original file)")
    check_columns_exist(cols, list(right.columns), f"{role} (protected file)")
    if left.height != right.height:
        raise DataError(
            f"The original file has {left.height} records and the protected file "
            f"{right.height}; record-level utility needs the same records in the same order."
        )
    return left, right, cols, md


def weights_of(frame: pl.DataFrame, weight: str | None, md: Microdata | None) -> np.ndarray | None:
    """Weights from an explicit column or the Microdata's weight role (None for unweighted)."""
    name = weight if weight is not None else (md.weight if md is not None else None)
    if name is None:
        return None
    check_columns_exist([name], list(frame.columns), "weight")
    return frame.get_column(name).cast(pl.Float64).to_numpy()

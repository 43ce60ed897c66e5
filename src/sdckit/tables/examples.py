"""Small tables with published answers: worked examples E2, E3 and the sdcTable trap (A4).

Used by the tests and the documentation (worked-examples.md E2, E3; benchmarks.md A4).

Examples
--------
>>> from sdckit.tables.examples import e2_table
>>> e2_table().n_cells
24
"""

from __future__ import annotations

import numpy as np

from sdckit.tables.table import Table

__all__ = [
    "A4_INNER",
    "A4_PRIMARIES",
    "E2_INNER",
    "E3_INNER",
    "a4_table",
    "e2_table",
    "e3_table",
    "with_margins",
]


def with_margins(inner: np.ndarray) -> np.ndarray:
    """A 2-D interior with its row totals (column 0), column totals (row 0) and grand total."""
    inner = np.asarray(inner, dtype=float)
    full = np.zeros((inner.shape[0] + 1, inner.shape[1] + 1))
    full[1:, 1:] = inner
    full[1:, 0] = inner.sum(axis=1)
    full[0, 1:] = inner.sum(axis=0)
    full[0, 0] = inner.sum()
    return full


E2_INNER = np.array(
    [
        [2608, 11358, 4871],
        [2562, 11631, 3652],
        [2608, 11956, 3054],
        [2309, 12281, 3051],
        [2240, 7347, 3537],
    ]
)


def e2_table() -> Table:
    """worked-examples.md E2: turnover by region and industry."""
    return Table.from_array(
        with_margins(E2_INNER),
        {"region": list("ABCDE"), "industry": ["36210", "36220", "36300"]},
        kind="magnitude",
    )


# benchmarks.md A4, sdcTable test-simpleheuristic.R (the column totals follow from the interior)
A4_INNER = np.array([[30, 47, 64, 89], [90, 124, 5, 31], [92, 100, 59, 85], [800, 991, 651, 685]])
A4_PRIMARIES = [
    ("w", "a"),
    ("w", "b"),
    ("w", "c"),
    ("x", "a"),
    ("x", "c"),
    ("y", "b"),
    ("y", "d"),
    ("z", "b"),
    ("z", "d"),
]


def a4_table() -> Table:
    """benchmarks.md A4: sdcTable's 4x4 table where every line has two suppressions."""
    return Table.from_array(
        with_margins(A4_INNER), {"row": list("wxyz"), "col": list("abcd")}, kind="magnitude"
    )


E3_INNER = np.array([[0, 5, 6, 4], [1, 2, 1, 7], [0, 2, 0, 0], [0, 4, 3, 4]])


def e3_table() -> Table:
    """worked-examples.md E3: a census table (rows 1-4, columns A-D)."""
    return Table.from_array(with_margins(E3_INNER), {"row": list("1234"), "col": list("ABCD")})

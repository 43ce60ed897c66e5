"""The cell key method for frequency tables (methods.md M12; magnitudes: ``cellkey_magnitude``).

1. Every record gets a reproducible record key in [0, 1): a seeded hash of its content (give
   an identifier column so that equal records get different keys).
2. A cell's key is the fractional part of the sum of its records' keys.
3. A perturbation table (ptable) lists, for each original count ``i``, the deviations ``v`` and
   their cumulative probability intervals; the cell's deviation is the one whose interval
   holds the cell key.  Probabilities are chosen by maximum entropy with zero mean and a
   variance bound (as the R package ``ptable``; solved with SciPy's SLSQP).

Because the cell key depends only on the contributing records, the same cell is perturbed the
same way in every table that contains it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit._validation import check_columns_exist, check_int, check_real, column_list
from sdckit.errors import InfeasibleError, ParameterError
from sdckit.microdata import as_microdata
from sdckit.tables.table import Table

__all__ = [
    "CellKeyResult",
    "PTable",
    "cell_key_counts",
    "count_ptable",
    "record_keys",
]


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser: a stable, well-mixed 64-bit hash of each value."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def record_keys(
    data: Any, *, columns: str | Sequence[str] | None = None, seed: int = 0, digits: int = 8
) -> np.ndarray:
    """Reproducible record keys in [0, 1) from a seeded hash of each record's content.

    Integer columns are hashed with splitmix64 (the same keys on every platform and version);
    other columns with polars' row hash, stable for a given polars version: store the keys
    with the data to use them across versions.

    Parameters
    ----------
    data : DataFrame or Microdata
    columns : str or list of str, optional
        Columns to hash (default: all); an identifier column makes the keys unique.
    seed : int
        Changes every key (keep it secret).
    digits : int
        Decimal digits the keys are rounded to.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"id": [1, 2, 3]})
    >>> k = record_keys(df, seed=42)
    >>> bool(((k >= 0) & (k < 1)).all()), (record_keys(df, seed=42) == k).all()
    (True, np.True_)
    """
    md = as_microdata(data)
    frame = md.frame
    cols = column_list(columns, "columns") or tuple(frame.columns)
    check_columns_exist(cols, list(frame.columns), "record-key")
    seed = check_int(seed, "seed", minimum=0)
    digits = check_int(digits, "digits", minimum=1, maximum=15)
    sub = frame.select(cols)
    if all(dt.is_integer() for dt in sub.dtypes) and not any(sub.null_count().row(0)):
        hashed = np.full(sub.height, np.uint64(seed))
        for col in cols:
            raw = sub.get_column(col).cast(pl.Int64).to_numpy().view(np.uint64)
            hashed = _splitmix64(hashed ^ raw)
    else:  # polars' row hash: stable for a given polars version only
        hashed = sub.hash_rows(seed=seed).to_numpy()
    keys = (hashed >> np.uint64(11)).astype(np.float64) / float(1 << 53)
    return np.floor(keys * 10.0**digits) / 10.0**digits


@dataclass(frozen=True, eq=False)
class PTable:
    """A perturbation table for counts.

    Attributes
    ----------
    frame : polars.DataFrame
        Columns ``i`` (original count; the last ``i`` serves all larger counts), ``j``
        (perturbed count), ``v = j - i``, ``p`` and the cumulative interval
        ``(p_int_lb, p_int_ub]``.
    D, V, js : parameters (maximum deviation, variance bound, blocked counts 1..js).
    """

    frame: pl.DataFrame
    D: int
    V: float
    js: int

    def to_frame(self) -> pl.DataFrame:
        """The ptable rows (``i, j, v, p, p_int_lb, p_int_ub``)."""
        return self.frame

    @property
    def max_i(self) -> int:
        """The largest original count with its own row."""
        return int(self.frame["i"].max())

    def deviations(self, counts: np.ndarray, cell_keys: np.ndarray) -> np.ndarray:
        """The deviation of each cell from its original count and cell key."""
        counts = np.asarray(counts, dtype=np.int64)
        row = np.minimum(counts, self.max_i)
        out = np.zeros(len(counts), dtype=np.int64)
        f = self.frame
        for i in np.unique(row).tolist():
            part = f.filter(pl.col("i") == i)
            ub = part["p_int_ub"].to_numpy()
            v = part["v"].to_numpy()
            sel = row == i
            pos = np.searchsorted(ub, cell_keys[sel], side="left")
            out[sel] = v[np.minimum(pos, len(v) - 1)]
        return out

    def summary(self) -> Summary:
        """Parameters and the achieved variance per row."""
        f = self.frame.group_by("i").agg(
            (pl.col("p") * pl.col("v")).sum().alias("mean"),
            (pl.col("p") * pl.col("v") ** 2).sum().alias("variance"),
        )
        rows = [
            ("D", self.D),
            ("V", self.V),
            ("js", self.js),
            ("rows", f.height),
            ("largest |mean|", float(f["mean"].abs().max())),
            ("largest variance", float(f["variance"].max())),
        ]
        return Summary("Perturbation table (counts)", rows)


def _max_entropy(v: np.ndarray, V: float, pstay: float | None, mono: bool) -> np.ndarray:
    eps = 1e-8
    n = len(v)
    zero = np.flatnonzero(v == 0)

    def objective(p: np.ndarray) -> float:
        q = np.clip(p, 1e-300, None)
        return float(np.sum(q * np.log2(q)))

    def gradient(p: np.ndarray) -> np.ndarray:
        q = np.clip(p, 1e-300, None)
        return np.log2(q) + 1.0 / np.log(2.0)

    cons: list[dict[str, Any]] = [
        {"type": "eq", "fun": lambda p: np.sum(p) - 1.0, "jac": lambda p: np.ones(n)},
        {"type": "eq", "fun": lambda p: v @ p, "jac": lambda p: v.astype(float)},
        {"type": "ineq", "fun": lambda p: V - (v**2) @ p, "jac": lambda p: -(v**2.0)},
    ]
    if pstay is not None and len(zero):
        z = int(zero[0])
        e = np.zeros(n)
        e[z] = 1.0
        cons.append({"type": "ineq", "fun": lambda p, z=z: p[z] - pstay, "jac": lambda p, e=e: e})
    if mono:
        order = np.argsort(v)
        for a, b in itertools.pairwise(order):
            g = np.zeros(n)
            if v[b] <= 0:  # non-decreasing up to v = 0
                g[b], g[a] = 1.0, -1.0
            elif v[a] >= 0:  # non-increasing after v = 0
                g[a], g[b] = 1.0, -1.0
            else:
                continue
            cons.append({"type": "ineq", "fun": lambda p, g=g: g @ p, "jac": lambda p, g=g: g})
    from scipy.optimize import minimize  # (on first use)

    start = np.exp(-(v**2) / (2 * max(V, 1e-3)))
    start /= start.sum()
    res = minimize(
        objective,
        start,
        jac=gradient,
        method="SLSQP",
        constraints=cons,
        bounds=[(eps, 1.0)] * n,
        options={"maxiter": 500, "ftol": 1e-12},
    )
    p = np.clip(res.x, eps, 1.0)
    p /= p.sum()
    if not res.success or abs(v @ p) > 1e-6 or (v**2) @ p > V + 1e-6:
        raise InfeasibleError("the ptable row has no solution")
    return p


def _solve_row(v: np.ndarray, V: float, pstay: float | None, mono: bool, i: int) -> np.ndarray:
    """One ptable row; pstay is lowered by 0.05 (then dropped, then mono) until feasible."""
    attempts: list[tuple[float | None, bool]] = []
    if pstay is not None:
        attempts += [(max(pstay - 0.05 * k, 0.0), mono) for k in range(21)]
    attempts += [(None, mono), (None, False)]
    for floor, monotone in attempts:
        try:
            return _max_entropy(v, V, floor, monotone)
        except InfeasibleError:
            continue
    raise InfeasibleError(f"No ptable row for count {i}; raise V or lower D.")


def count_ptable(
    D: int, V: float, *, js: int = 0, pstay: float | None = None, mono: bool = True
) -> PTable:
    """A perturbation table for counts by maximum entropy (R package ``ptable``'s design).

    Parameters
    ----------
    D : int
        Maximum absolute deviation.
    V : float
        Variance bound of the deviations (each row: sum p v^2 <= V).
    js : int
        Counts 1..js are never published (blocked as targets).
    pstay : float, optional
        Lower bound of the probability of no change (lowered by 0.05 until feasible).
    mono : bool
        Probabilities rise towards v = 0 and fall after it.

    Examples
    --------
    >>> pt = count_ptable(D=2, V=1.0)
    >>> pt.frame.filter(pt.frame["i"] == 3)["v"].to_list()
    [-2, -1, 0, 1, 2]
    """
    D = check_int(D, "D", minimum=1)
    V = check_real(V, "V", minimum=0, min_inclusive=False)
    js = check_int(js, "js", minimum=0)
    if pstay is not None:
        pstay = check_real(pstay, "pstay", minimum=0, maximum=1)
    rows: list[dict[str, Any]] = [{"i": 0, "j": 0, "v": 0, "p": 1.0}]
    for i in range(1, D + js + 2):
        targets = np.array([j for j in range(max(i - D, 0), i + D + 1) if not 1 <= j <= js])
        v = targets - i
        p = _solve_row(v, V, pstay, mono, i)
        for jj, vv, pp in zip(targets.tolist(), v.tolist(), p.tolist(), strict=True):
            rows.append({"i": i, "j": jj, "v": vv, "p": pp})
    frame = (
        pl.DataFrame(rows)
        .with_columns(pl.col("p").cum_sum().over("i").alias("p_int_ub"))
        .with_columns((pl.col("p_int_ub") - pl.col("p")).alias("p_int_lb"))
    )
    frame = frame.with_columns(
        pl.when(pl.col("p_int_ub") == pl.col("p_int_ub").max().over("i"))
        .then(1.0)
        .otherwise(pl.col("p_int_ub"))
        .alias("p_int_ub")
    )
    return PTable(frame.select("i", "j", "v", "p", "p_int_lb", "p_int_ub"), D, V, js)


@dataclass(frozen=True, eq=False)
class CellKeyResult:
    """A frequency table perturbed by the cell key method.

    Attributes
    ----------
    table : Table
        The original table (counts or magnitudes).
    cell_keys : numpy.ndarray
    deviation : numpy.ndarray
        The ptable deviation ``v`` each cell's key selects.
    perturbed : numpy.ndarray
        Published value: ``n + v`` (weighted: ``(n + v)`` times the cell's mean weight).
    """

    table: Table
    cell_keys: np.ndarray
    deviation: np.ndarray
    perturbed: np.ndarray

    def to_frame(self) -> pl.DataFrame:
        """Codes, original and perturbed value, cell key and deviation of each cell."""
        frame = self.table.to_frame(status=False).select(list(self.table.dimensions))
        return frame.with_columns(
            pl.Series("original", self.table.values),
            pl.Series("n_contributors", self.table.n_contributors),
            pl.Series("cell_key", self.cell_keys),
            pl.Series("deviation", self.deviation),
            pl.Series("perturbed", self.perturbed),
        )

    def summary(self) -> Summary:
        """Changed cells and the mean absolute deviation."""
        rows = [
            ("cells", self.table.n_cells),
            ("cells changed", int(np.count_nonzero(self.deviation))),
            ("mean absolute deviation", float(np.mean(np.abs(self.deviation)))),
            ("mean deviation", float(np.mean(self.deviation))),
        ]
        return Summary("Cell key method", rows)


def _given_keys(frame: pl.DataFrame, record_key: str) -> np.ndarray:
    """The record keys of the column ``record_key`` (numbers in [0, 1), checked)."""
    check_columns_exist([record_key], list(frame.columns), "record-key")
    try:
        keys = frame.get_column(record_key).cast(pl.Float64, strict=True).to_numpy()
    except (pl.exceptions.PolarsError, TypeError, ValueError):
        # polars' message quotes the offending values: never pass it on
        raise ParameterError(
            f"The record-key column {record_key!r} has entries that are not numbers; give "
            "numbers in [0, 1) (or leave record_key out to compute the keys)."
        ) from None
    if np.any(~np.isfinite(keys)) or np.any(keys < 0) or np.any(keys >= 1):
        raise ParameterError(f"The record-key column {record_key!r} must lie in [0, 1).")
    return keys


def cell_key_counts(
    data: Any,
    dimensions: Sequence[str] | Mapping[str, Any],
    ptable: PTable,
    *,
    record_key: str | None = None,
    weight: str | None = None,
    key_columns: str | Sequence[str] | None = None,
    seed: int = 0,
    digits: int = 8,
    missing: str = "error",
) -> CellKeyResult:
    """A frequency table perturbed by the cell key method.

    Parameters
    ----------
    data : DataFrame
        The microdata.
    dimensions : list of str or dict
        As for :meth:`Table.from_microdata`.
    ptable : PTable
        From :func:`count_ptable`.
    record_key : str, optional
        A column of record keys in [0, 1); computed by :func:`record_keys` (over
        ``key_columns``, with ``seed``) when not given.
    weight : str, optional
        Sampling weight: the perturbed count is scaled by the cell's mean weight.
    digits : int, default 8
        Decimal digits of the record keys; cell keys are summed exactly in these units.
    missing : {"error", "category", "drop"}
        Records with a missing dimension code, as for :meth:`Table.from_microdata`.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"id": range(40), "g": ["a", "b"] * 20})
    >>> res = cell_key_counts(df, ["g"], count_ptable(D=2, V=1.0), key_columns="id")
    >>> res.perturbed.shape
    (3,)
    """
    if not isinstance(ptable, PTable):
        raise ParameterError("The 'ptable' parameter must be a PTable (see count_ptable).")
    md = as_microdata(data)
    frame = md.frame
    digits = check_int(digits, "digits", minimum=1, maximum=12)
    if record_key is None:
        keys = record_keys(frame, columns=key_columns, seed=seed, digits=digits)
    else:
        keys = _given_keys(frame, record_key)
    # integer arithmetic: sums of keys scaled to integers are exact in any order, so the same
    # records always give the same cell key (floating sums would differ in the last bits)
    scale = 10.0**digits
    name = "__sdckit_record_key__"
    keyed = frame.with_columns(pl.Series(name, np.round(keys * scale)))
    counts = Table.from_microdata(keyed, dimensions, weight=weight, n_top=1, missing=missing)
    key_sum = Table.from_microdata(keyed, dimensions, name, n_top=1, missing=missing)
    cell_keys = np.mod(np.round(key_sum.values), scale) / scale
    n = counts.n_contributors
    v = ptable.deviations(n, cell_keys)
    perturbed = (n + v).astype(float)
    if weight is not None:
        mean_w = np.divide(counts.weights, n, out=np.zeros(len(n)), where=n > 0)
        perturbed = perturbed * mean_w
    return CellKeyResult(counts, cell_keys, v, perturbed)

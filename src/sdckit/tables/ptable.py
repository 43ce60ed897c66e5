"""Perturbation tables for the cell key method: the R package ``ptable``'s design, tau-ARGUS files.

:func:`ptable_counts` builds the perturbation table (ptable) of a frequency table as the R
package ``ptable`` (``create_cnt_ptable``) does:

* one row per original count ``i = 0 .. n`` with ``n = D`` (``js = 0``) or ``D + js + 1``; the
  last row serves every larger count;
* the targets of row ``i`` are ``j = max(i - D, 0) .. i + D`` without the blocked counts
  ``1 .. js`` (so no perturbation gives a negative count or a count in ``1 .. js``), with
  deviation ``v = j - i``;
* the probabilities maximise the entropy ``-sum p log p`` subject to ``sum p = 1``, zero mean
  ``sum p v = 0``, variance ``sum p v^2 <= V`` (``optim = 1``) or ``= V`` (``optim = 4``),
  ``p >= 1e-8`` and, with ``mono``, probabilities that do not decrease from the most negative
  deviation up to ``v = 0``;
* ``pstay`` is a lower bound on the probability of no change; while the variance of a row
  misses ``V`` (to three decimals) the bound is lowered by 0.05, at most 20 times;
* the cumulative bounds are rounded to 8 decimals and ``p`` is their difference.

:func:`write_ptable` writes the file tau-ARGUS reads (``i;j;p;v;p_int_ub``: a header line, then
the rows; tau-ARGUS takes the fifth field as the upper bound of the cell-key interval, so the
columns must be in this order), or the full table of the R package (``i;j;p;v;p_int_lb;
p_int_ub;type``); :func:`read_ptable` reads either.  :func:`check_ptable` checks the
constraints.  The tables work with :func:`~sdckit.tables.cell_key_counts`.

:func:`ptable_magnitudes` builds the ptable of a magnitude table (``create_num_ptable``):
rows ``i = 0`` and the classes ``icat`` (which hold 1 and ``D``), targets
``j = max(i - D, 0) .. i + D`` in steps of ``1 / step`` (so the deviations ``v`` are
fractions), the same maximum-entropy problem without ``js`` and ``pstay``; a
:class:`MagnitudePTable` looks up (and interpolates between) its rows for the cell key method
of :mod:`sdckit.tables.cellkey_magnitude`.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit._validation import check_int, check_real
from sdckit.errors import DataError, InfeasibleError, ParameterError
from sdckit.tables.cellkey import PTable

__all__ = [
    "MagnitudePTable",
    "PTableCheck",
    "check_ptable",
    "ptable_counts",
    "ptable_magnitudes",
    "read_ptable",
    "write_ptable",
]

_EPS = 1e-8  # the R package's lower bound of every probability (1 / 10^8)
_DIGITS = 8  # decimals of the cumulative bounds


def _entropy_row(
    v: np.ndarray, V: float, lower: np.ndarray, mono: bool, equal_variance: bool
) -> np.ndarray:
    """Maximum-entropy probabilities of one row (a strictly convex problem: one optimum)."""
    n = len(v)
    vf = v.astype(float)
    v2 = vf**2
    cons: list[dict[str, Any]] = [
        {"type": "eq", "fun": lambda p: np.sum(p) - 1.0, "jac": lambda p: np.ones(n)},
        {"type": "eq", "fun": lambda p: vf @ p, "jac": lambda p: vf},
    ]
    if equal_variance:
        cons.append({"type": "eq", "fun": lambda p: v2 @ p - V, "jac": lambda p: v2})
    else:
        cons.append({"type": "ineq", "fun": lambda p: V - v2 @ p, "jac": lambda p: -v2})
    zero = np.flatnonzero(v == 0)
    if mono and len(zero):
        # non-decreasing from the most negative deviation up to v = 0 (as the R package)
        for a, b in itertools.pairwise(range(int(zero[0]) + 1)):
            g = np.zeros(n)
            g[b], g[a] = 1.0, -1.0
            cons.append({"type": "ineq", "fun": lambda p, g=g: g @ p, "jac": lambda p, g=g: g})

    def objective(p: np.ndarray) -> float:
        q = np.clip(p, 1e-300, None)
        return float(np.sum(q * np.log(q)))

    def gradient(p: np.ndarray) -> np.ndarray:
        return np.log(np.clip(p, 1e-300, None)) + 1.0

    from scipy.optimize import minimize  # (on first use)

    start = np.exp(-v2 / (2.0 * max(V, 1e-3)))
    start = np.maximum(start / start.sum(), lower)
    start /= start.sum()
    res = minimize(
        objective,
        start,
        jac=gradient,
        method="SLSQP",
        constraints=cons,
        bounds=list(zip(lower.tolist(), [1.0] * n, strict=True)),
        options={"maxiter": 2000, "ftol": 1e-15},
    )
    p = np.clip(res.x, lower, 1.0)
    var = float(v2 @ p)
    if V + 1e-7 < var <= V * (1.0 + 1e-4) and np.any(v == 0):
        # SLSQP can stop a hair above the variance bound on long rows: move that much
        # probability to "no change" (sum, zero mean and the monotony towards v = 0 stay)
        t = 1.0 - V / var
        p = p * (1.0 - t)
        p[v == 0] += t
    ok = abs(p.sum() - 1.0) < 1e-7 and abs(vf @ p) < 1e-7 and v2 @ p <= V + 1e-7
    if not ok:
        raise InfeasibleError("no ptable row")
    return p / p.sum()


def _row(
    i: int, D: int, V: float, js: int, pstay: float | None, optim: int, mono: bool
) -> tuple[np.ndarray, np.ndarray]:
    j = np.array([t for t in range(max(i - D, 0), i + D + 1) if not 1 <= t <= js])
    v = j - i
    lower = np.full(len(v), _EPS)
    at_zero = v == 0
    if pstay is not None:
        lower[at_zero] = max(pstay, _EPS)
    blocked = 1 <= i <= js
    p = None
    for attempt in range(20):
        if attempt:
            lower[at_zero] = np.maximum(lower[at_zero] - 0.05, _EPS)
        try:
            p = _entropy_row(v, V, lower, mono, optim == 4)
        except InfeasibleError:
            if attempt == 19 or not at_zero.any():
                break
            continue
        variance = float((v.astype(float) ** 2) @ p)
        if blocked or round(variance, 3) == round(V, 3):
            break
    if p is None:
        raise InfeasibleError(
            f"No ptable row for the original count {i}: the constraints cannot all hold; raise "
            "'V', lower 'pstay' or raise 'D'."
        )
    return j, p


def ptable_counts(
    D: int,
    V: float,
    *,
    js: int = 0,
    pstay: float | None = None,
    optim: int = 1,
    mono: bool = True,
) -> PTable:
    """A perturbation table for counts, as the R package ``ptable``'s ``create_cnt_ptable``.

    Parameters
    ----------
    D : int
        Maximum absolute deviation (``|v| <= D``).
    V : float
        Variance of the deviations: an upper bound (``optim=1``) or exact (``optim=4``).
    js : int, default 0
        No perturbation gives a count in ``1 .. js`` (nor a negative count).
    pstay : float, optional
        Lower bound (0 < pstay < 1) of the probability of no change, lowered by 0.05 while the
        variance of a row misses ``V``.
    optim : {1, 4}, default 1
        1: variance at most ``V``; 4: variance exactly ``V`` (the R package's choices 2 and 3
        differ from 1 only in how the solver is told that probabilities are at most 1).
    mono : bool, default True
        Probabilities do not decrease from the most negative deviation up to ``v = 0``.

    Returns
    -------
    PTable
        Use it with :func:`~sdckit.tables.cell_key_counts`; write it with
        :func:`write_ptable`.

    Examples
    --------
    >>> pt = ptable_counts(D=2, V=1.0, js=1)
    >>> row = pt.frame.filter(pt.frame["i"] == 2)
    >>> row["j"].to_list(), row["v"].to_list()
    ([0, 2, 3, 4], [-2, 0, 1, 2])
    >>> check_ptable(pt).ok
    True
    """
    D = check_int(D, "D", minimum=1)
    V = check_real(V, "V", minimum=0, min_inclusive=False)
    js = check_int(js, "js", minimum=0)
    if pstay is not None:
        pstay = check_real(pstay, "pstay", minimum=0, maximum=1)
        if pstay in (0.0, 1.0):
            raise ParameterError("The 'pstay' parameter must lie strictly between 0 and 1.")
    if optim not in (1, 2, 3, 4) or isinstance(optim, bool):
        raise ParameterError("The 'optim' parameter must be 1, 2, 3 or 4 (as in the R package).")
    if not isinstance(mono, bool | np.bool_):
        raise ParameterError("The 'mono' parameter must be True or False.")
    n_rows = D if js == 0 else D + js + 1
    i_col, j_col, p_col = [0], [0], [1.0]
    for i in range(1, n_rows + 1):
        j, p = _row(i, D, V, js, pstay, int(optim), bool(mono))
        i_col += [i] * len(j)
        j_col += j.tolist()
        p_col += p.tolist()
    frame = pl.DataFrame({"i": i_col, "j": j_col, "p": p_col})
    frame = frame.with_columns((pl.col("j") - pl.col("i")).alias("v"))
    return PTable(_intervals(frame), D, float(V), js)


@dataclass(frozen=True)
class PTableCheck:
    """Which constraints a ptable meets (True: met, within ``tolerance``).

    Attributes
    ----------
    sums_to_one, zero_mean, variance, max_noise, no_negative, no_small : bool
        Every row's probabilities sum to 1; every row has mean deviation 0; variance at most
        ``V`` (equal to it with ``exact_variance``); ``|v| <= D``; no target below 0; no target
        in ``1 .. js``.
    intervals : bool
        The cumulative bounds rise from 0 to 1 in every row, ``p = p_int_ub - p_int_lb``.
    worst_mean, worst_variance : float
        The largest ``|mean|`` and the largest variance over the rows.
    """

    sums_to_one: bool
    zero_mean: bool
    variance: bool
    max_noise: bool
    no_negative: bool
    no_small: bool
    intervals: bool
    worst_mean: float
    worst_variance: float

    @property
    def ok(self) -> bool:
        """True when every constraint holds."""
        return all(
            (
                self.sums_to_one,
                self.zero_mean,
                self.variance,
                self.max_noise,
                self.no_negative,
                self.no_small,
                self.intervals,
            )
        )


def check_ptable(
    table: PTable, *, tolerance: float = 1e-6, exact_variance: bool = False
) -> PTableCheck:
    """Check a ptable against its constraints (rows sum to 1, mean 0, variance, bounds).

    Examples
    --------
    >>> check_ptable(ptable_counts(D=3, V=2.0, js=2)).ok
    True
    """
    if not isinstance(table, PTable):
        raise ParameterError("check_ptable needs a PTable (see ptable_counts or read_ptable).")
    tol = check_real(tolerance, "tolerance", minimum=0)
    f = table.frame
    per_row = f.group_by("i").agg(
        pl.col("p").sum().alias("sum"),
        (pl.col("p") * pl.col("v")).sum().alias("mean"),
        (pl.col("p") * pl.col("v") ** 2).sum().alias("var"),
        pl.col("p_int_ub").max().alias("top"),
        pl.col("p_int_lb").min().alias("bottom"),
    )
    ordered = f.sort(["i", "j"])
    steps = ordered.with_columns(
        pl.col("p_int_lb").shift(-1).over("i").alias("next_lb"),
    ).filter(pl.col("next_lb").is_not_null())
    intervals = (
        bool(((steps["next_lb"] - steps["p_int_ub"]).abs() <= tol).all())
        and bool(((per_row["top"] - 1.0).abs() <= tol).all())
        and bool((per_row["bottom"].abs() <= tol).all())
        and bool(((f["p_int_ub"] - f["p_int_lb"] - f["p"]).abs() <= tol).all())
        and bool((f["p"] >= -tol).all())
    )
    variance_row = per_row.filter(pl.col("i") > 0)["var"]
    var_ok = bool((variance_row <= table.V + tol).all())
    if exact_variance:
        var_ok = var_ok and bool(((variance_row - table.V).abs() <= tol).all())
    j = f["j"].to_numpy()
    return PTableCheck(
        sums_to_one=bool(((per_row["sum"] - 1.0).abs() <= tol).all()),
        zero_mean=bool((per_row["mean"].abs() <= tol).all()),
        variance=var_ok,
        max_noise=bool((f["v"].abs() <= table.D).all()),
        no_negative=bool((j >= 0).all()),
        no_small=bool(not ((j >= 1) & (j <= table.js)).any()),
        intervals=intervals,
        worst_mean=float(per_row["mean"].abs().max()),
        worst_variance=float(per_row["var"].max()),
    )


_TAUARGUS_COLUMNS = ("i", "j", "p", "v", "p_int_ub")
_FULL_COLUMNS = ("i", "j", "p", "v", "p_int_lb", "p_int_ub", "type")


def write_ptable(table: PTable, path: str | os.PathLike[str], *, format: str = "tauargus") -> Path:
    """Write a ptable as a ``;``-separated text file.

    Parameters
    ----------
    table : PTable
    path : path
    format : {"tauargus", "full"}
        ``"tauargus"``: ``i;j;p;v;p_int_ub``, the file tau-ARGUS reads for the cell key method
        (what the R package's ``pt_export(..., SDCtool = "TauArgus")`` writes); ``"full"``:
        ``i;j;p;v;p_int_lb;p_int_ub;type`` (the R package's ``pTable``, type ``"all"``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> p = write_ptable(ptable_counts(D=2, V=1.0), d / "pt.txt")
    >>> p.read_text().splitlines()[:2]
    ['i;j;p;v;p_int_ub', '0;0;1;0;1']
    >>> read_ptable(p).frame.height == ptable_counts(D=2, V=1.0).frame.height
    True
    """
    if not isinstance(table, PTable):
        raise ParameterError("write_ptable needs a PTable (see ptable_counts).")
    if format not in ("tauargus", "full"):
        raise ParameterError('The \'format\' parameter must be "tauargus" or "full".')
    cols = _TAUARGUS_COLUMNS if format == "tauargus" else _FULL_COLUMNS
    f = table.frame.with_columns(pl.lit("all").alias("type"))
    lines = [";".join(cols)]
    for row in f.select(cols).iter_rows():
        lines.append(";".join(_fmt(x) for x in row))
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    from sdckit.io import atomic_path

    with atomic_path(target) as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def _fmt(x: Any) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, int | np.integer):
        return str(int(x))
    value = round(float(x), _DIGITS)
    if value == int(value):
        return str(int(value))
    return f"{value:.{_DIGITS}f}".rstrip("0")


def read_ptable(
    path: str | os.PathLike[str], *, D: int | None = None, V: float | None = None, js: int = 0
) -> PTable:
    """Read a ptable file (tau-ARGUS ``i;j;p;v;p_int_ub`` or the full R layout).

    The header names the columns (``p_ij_ub`` is read as ``p_int_ub``); rows must come in
    increasing ``j`` within each ``i``.  ``D`` and ``V`` default to the largest ``|v|`` and the
    largest row variance, ``js`` to 0.

    Raises
    ------
    DataError
        The file is not a ptable: a missing column, a field that is not a number (named by
        its line), or rows out of order.
    """
    p = Path(path)
    if not p.is_file():
        raise ParameterError(f"The ptable file {p.name!r} does not exist; check the path.")
    lines = [ln.strip() for ln in p.read_text(encoding="utf-8-sig").splitlines() if ln.strip()]
    if len(lines) < 2:
        raise DataError(f"The ptable file {p.name!r} has no rows below its header line.")
    header = [h.strip().strip('"').lower() for h in lines[0].split(";")]
    header = ["p_int_ub" if h == "p_ij_ub" else "p" if h == "p_ij" else h for h in header]
    for need in ("i", "j", "p", "v", "p_int_ub"):
        if need not in header:
            raise DataError(
                f"The ptable file {p.name!r} has no column {need!r} in its header line; give "
                "the columns i;j;p;v;p_int_ub (tau-ARGUS) or i;j;p;v;p_int_lb;p_int_ub;type."
            )
    pos = {h: k for k, h in enumerate(header)}
    rows: dict[str, list[float]] = {"i": [], "j": [], "p": [], "p_int_ub": []}
    for n, line in enumerate(lines[1:], start=2):
        fields = [x.strip().strip('"') for x in line.split(";")]
        try:
            for key in rows:
                rows[key].append(float(fields[pos[key]]))
        except (ValueError, IndexError):
            raise DataError(
                f"Line {n} of the ptable file {p.name!r} has a missing field or one that is not a "
                "number; every row needs i, j, p, v and p_int_ub."
            ) from None
    i = np.asarray(rows["i"], dtype=np.int64)
    j = np.asarray(rows["j"], dtype=np.int64)
    ub = np.asarray(rows["p_int_ub"], dtype=float)
    same = np.r_[False, i[1:] == i[:-1]]
    if np.any(np.diff(i) < 0) or np.any(same & (np.r_[0, np.diff(j)] <= 0)):
        raise DataError(
            f"The ptable file {p.name!r} is out of order: rows must come by increasing i, and "
            "by increasing j within each i."
        )
    lb = np.where(same, np.r_[0.0, ub[:-1]], 0.0)
    frame = pl.DataFrame({"i": i, "j": j, "v": j - i, "p": ub - lb, "p_int_lb": lb, "p_int_ub": ub})
    d = int(np.abs(j - i).max()) if D is None else check_int(D, "D", minimum=1)
    var = (
        float(frame.group_by("i").agg((pl.col("p") * pl.col("v") ** 2).sum())["p"].max())
        if V is None
        else check_real(V, "V", minimum=0, min_inclusive=False)
    )
    return PTable(frame, max(d, 1), var, check_int(js, "js", minimum=0))


@dataclass(frozen=True, eq=False)
class MagnitudePTable:
    """A perturbation table for magnitudes (fractional deviations, a few rows ``i``).

    Attributes
    ----------
    frame : polars.DataFrame
        Columns ``i`` (the row: 0 and the classes ``icat``), ``j``, ``v = j - i``, ``p`` and
        the cumulative interval ``(p_int_lb, p_int_ub]``.
    D, V, step : parameters (maximum deviation, variance bound, steps per unit).
    """

    frame: pl.DataFrame
    D: int
    V: float
    step: int

    def to_frame(self) -> pl.DataFrame:
        """The ptable rows (``i, j, v, p, p_int_lb, p_int_ub``)."""
        return self.frame

    @property
    def rows(self) -> np.ndarray:
        """The row values ``i`` in increasing order (0 first)."""
        return np.unique(self.frame["i"].to_numpy()).astype(float)

    @property
    def max_variance(self) -> float:
        """The variance of the deviations in the last row (``i = D``)."""
        last = self.frame.filter(pl.col("i") == pl.col("i").max())
        return float((last["p"] * last["v"] ** 2).sum())

    def row_deviations(self, cell_keys: np.ndarray) -> np.ndarray:
        """``(n, rows)``: the deviation each key selects in each row (first ``key < p_int_ub``)."""
        keys = np.asarray(cell_keys, dtype=float)
        out = np.zeros((len(keys), len(self.rows)))
        for r, i in enumerate(self.rows.tolist()):
            part = self.frame.filter(pl.col("i") == i)
            ub = part["p_int_ub"].to_numpy()
            v = part["v"].to_numpy()
            pos = np.searchsorted(ub, keys, side="right")  # cellKey: the first row with key < ub
            out[:, r] = v[np.minimum(pos, len(v) - 1)]
        return out

    def deviations(self, cell_keys: np.ndarray, a: np.ndarray) -> np.ndarray:
        """The deviation for each cell key at the (fractional) row position ``a``.

        ``a`` above ``D`` is cut to ``D``; between two rows the deviations the key selects in
        both are interpolated linearly (as the R package cellKey does); a key of 0 (no
        contributor) selects 0.
        """
        rows = self.rows
        a = np.minimum(np.abs(np.asarray(a, dtype=float)), rows[-1])
        per_row = self.row_deviations(cell_keys)
        lo = np.clip(np.searchsorted(rows, a, side="right") - 1, 0, len(rows) - 1)
        hi = np.minimum(lo + 1, len(rows) - 1)
        span = rows[hi] - rows[lo]
        lam = np.divide(a - rows[lo], span, out=np.zeros(len(a)), where=span > 0)
        idx = np.arange(len(a))
        v = (1.0 - lam) * per_row[idx, lo] + lam * per_row[idx, hi]
        return np.where(np.asarray(cell_keys) == 0, 0.0, v)

    def summary(self) -> Summary:
        """Parameters and the achieved variance per row."""
        f = self.frame.group_by("i").agg((pl.col("p") * pl.col("v") ** 2).sum().alias("var"))
        rows = [
            ("D", self.D),
            ("V", self.V),
            ("step", self.step),
            ("rows i", ", ".join(f"{x:g}" for x in self.rows)),
            ("largest variance", float(f["var"].max())),
        ]
        return Summary("Perturbation table (magnitudes)", rows)


def _per_row(value: Any, n: int, name: str, check: Any) -> list[Any]:
    """A scalar or one value per row (the R package's vectors ``optim``, ``mono``)."""
    if isinstance(value, list | tuple):
        if len(value) != n:
            raise ParameterError(
                f"The {name!r} parameter must be one value or {n} values (one per class of "
                f"'icat'); got {len(value)}."
            )
        return [check(x) for x in value]
    return [check(value)] * n


def ptable_magnitudes(
    D: int,
    V: float,
    *,
    step: int = 2,
    icat: Sequence[int] | None = None,
    optim: int | Sequence[int] = 1,
    mono: bool | Sequence[bool] = True,
) -> MagnitudePTable:
    """A perturbation table for magnitudes, as the R package ``ptable``'s ``create_num_ptable``.

    Parameters
    ----------
    D : int
        Maximum absolute deviation (in units of the flex magnitude).
    V : float
        Variance of the deviations: a bound (``optim=1``) or exact (``optim=4``).
    step : int, default 2
        Targets are ``1 / step`` apart (``D * step`` below 50).
    icat : list of int, optional
        The rows besides 0: must hold 1 and ``D`` (default ``[1, D]``); a cell between two
        rows interpolates their deviations.
    optim : int or list of int, default 1
        1: variance at most ``V``; 4: exactly ``V``; one for all rows or one per class.
    mono : bool or list of bool, default True
        Probabilities do not decrease from the most negative deviation up to ``v = 0``.

    Examples
    --------
    >>> pt = ptable_magnitudes(D=10, V=3, step=2, icat=[1, 5, 10], optim=[4, 1, 1])
    >>> pt.frame.height  # cellKey's test of ptable::pt_ex_nums(): 96 rows
    96
    >>> pt.rows.tolist()
    [0.0, 1.0, 5.0, 10.0]
    """
    D = check_int(D, "D", minimum=1)
    V = check_real(V, "V", minimum=0, min_inclusive=False)
    step = check_int(step, "step", minimum=1)
    if D * step >= 50:
        raise ParameterError("'D' times 'step' must be below 50 (as in the R package): lower one.")
    cats = [1, D] if icat is None else sorted({check_int(c, "icat", minimum=1) for c in icat})
    if 1 not in cats or D not in cats or max(cats) > D:
        raise ParameterError("The 'icat' parameter must hold 1 and 'D', and nothing above 'D'.")

    def _optim(x: Any) -> int:
        if isinstance(x, bool) or x not in (1, 2, 3, 4):
            raise ParameterError(
                "The 'optim' parameter must be 1, 2, 3 or 4 (as in the R package)."
            )
        return int(x)

    def _mono(x: Any) -> bool:
        if not isinstance(x, bool | np.bool_):
            raise ParameterError("The 'mono' parameter must be True or False (or one per class).")
        return bool(x)

    optims = _per_row(optim, len(cats), "optim", _optim)
    monos = _per_row(mono, len(cats), "mono", _mono)
    i_col: list[float] = [0.0]
    j_col: list[float] = [0.0]
    p_col: list[float] = [1.0]
    for i, opt, mon in zip(cats, optims, monos, strict=True):
        # targets on a grid of 1/step, rounded to 4 decimals as the R package does
        j = np.round(np.arange(max(i - D, 0) * step, (i + D) * step + 1) / step, 4)
        v = np.round(j - i, 4)
        try:
            p = _entropy_row(v, V, np.full(len(v), _EPS), mon, opt == 4)
            if opt == 4 and abs(float((v**2) @ p) - V) > 1e-6:
                raise InfeasibleError("variance missed")
        except InfeasibleError:
            raise InfeasibleError(
                f"No ptable row for the class {i}: the constraints cannot all hold; raise 'V' "
                "or 'D', or use optim = 1."
            ) from None
        i_col += [float(i)] * len(j)
        j_col += j.tolist()
        p_col += p.tolist()
    frame = pl.DataFrame({"i": i_col, "j": j_col, "p": p_col}).with_columns(
        (pl.col("j") - pl.col("i")).round(4).alias("v")
    )
    return MagnitudePTable(_intervals(frame), D, float(V), step)


def _intervals(frame: pl.DataFrame) -> pl.DataFrame:
    """Cumulative bounds rounded to 8 decimals, the last one 1, ``p`` their difference.

    The bounds are what the cell keys are compared with, so ``p`` is recomputed from them
    (as in the R package).
    """
    frame = frame.with_columns(pl.col("p").cum_sum().over("i").round(_DIGITS).alias("p_int_ub"))
    frame = frame.with_columns(
        pl.when(pl.col("j") == pl.col("j").max().over("i"))
        .then(1.0)
        .otherwise(pl.col("p_int_ub"))
        .alias("p_int_ub")
    )
    frame = frame.with_columns(
        pl.col("p_int_ub").shift(1, fill_value=0.0).over("i").alias("p_int_lb")
    ).with_columns((pl.col("p_int_ub") - pl.col("p_int_lb")).alias("p"))
    return frame.select("i", "j", "v", "p", "p_int_lb", "p_int_ub")

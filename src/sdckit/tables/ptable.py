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

Magnitude tables have their own ptables: :mod:`sdckit.tables.ptable_magnitude`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from sdckit._validation import check_int, check_real
from sdckit.errors import DataError, InfeasibleError, ParameterError
from sdckit.tables._maxent import DIGITS, EPS, entropy_row, intervals
from sdckit.tables.cellkey import PTable

__all__ = ["PTableCheck", "check_ptable", "ptable_counts", "read_ptable", "write_ptable"]


def _row(
    i: int, D: int, V: float, js: int, pstay: float | None, optim: int, mono: bool
) -> tuple[np.ndarray, np.ndarray]:
    j = np.array([t for t in range(max(i - D, 0), i + D + 1) if not 1 <= t <= js])
    v = j - i
    lower = np.full(len(v), EPS)
    at_zero = v == 0
    if pstay is not None:
        lower[at_zero] = max(pstay, EPS)
    blocked = 1 <= i <= js
    p = None
    for attempt in range(20):
        if attempt:
            lower[at_zero] = np.maximum(lower[at_zero] - 0.05, EPS)
        try:
            p = entropy_row(v, V, lower, mono, optim == 4)
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
    return PTable(intervals(frame), D, float(V), js)


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
    value = round(float(x), DIGITS)
    if value == int(value):
        return str(int(value))
    return f"{value:.{DIGITS}f}".rstrip("0")


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

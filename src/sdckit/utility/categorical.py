"""Information loss for categorical variables and contingency tables (methods.md M13, E7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from sdckit._codes import encode_column
from sdckit._results import Summary
from sdckit.errors import DataError, ParameterError
from sdckit.utility._inputs import paired_frames, weights_of

__all__ = [
    "CategoricalLossResult",
    "TableDistances",
    "categorical_loss",
    "cramers_v",
    "pram_entropy",
    "table_distances",
]


@dataclass(frozen=True)
class TableDistances:
    """Distances between an original table ``T`` and a protected table ``T'`` of equal shape.

    Attributes
    ----------
    hellinger : float
        ``sqrt(1/2 * sum (sqrt(T) - sqrt(T'))^2)`` on the counts.
    hellinger_normalised : float
        Hellinger distance of the two tables as distributions, in [0, 1].
    relative_absolute_distance : float
        ``sum |T - T'| / sum T``.
    relative_absolute_distance_cells : float
        ``sum |T - T'| / T`` over the cells with ``T > 0`` (E7's per-area RAD).
    average_absolute_distance : float
        ``sum |T - T'| / number of cells``.
    cramers_v_original, cramers_v_protected, cramers_v_change_pct : float
        Cramer's V of two-way tables and its relative change ``100 (V' - V) / V``.
    false_zeros, false_non_zeros : int
        Cells non-zero in T but zero in T', and zero in T but non-zero in T'.
    """

    hellinger: float
    hellinger_normalised: float
    relative_absolute_distance: float
    relative_absolute_distance_cells: float
    average_absolute_distance: float
    cramers_v_original: float
    cramers_v_protected: float
    cramers_v_change_pct: float
    false_zeros: int
    false_non_zeros: int


def cramers_v(table: Any) -> float:
    """Cramer's V of a two-way table: ``sqrt(chi2 / (n * (min(R, C) - 1)))``.

    Examples
    --------
    >>> round(cramers_v([[10, 0], [0, 10]]), 6)
    1.0
    """
    t = np.asarray(table, dtype=np.float64)
    if t.ndim != 2:
        raise ParameterError("cramers_v needs a two-way table (a 2-D array).")
    t = t[t.sum(axis=1) > 0][:, t.sum(axis=0) > 0]
    if min(t.shape) < 2:
        return float("nan")
    chi2 = stats.chi2_contingency(t, correction=False)[0]
    return float(np.sqrt(chi2 / (t.sum() * (min(t.shape) - 1))))


def table_distances(original: Any, protected: Any) -> TableDistances:
    """Hellinger, relative and average absolute distance, Cramer's V change of two tables.

    Examples
    --------
    >>> d = table_distances([[4, 0], [1, 5]], [[3, 0], [0, 6]])
    >>> d.average_absolute_distance, d.relative_absolute_distance, d.false_zeros
    (0.75, 0.3, 1)
    """
    t = np.asarray(original, dtype=np.float64)
    u = np.asarray(protected, dtype=np.float64)
    if t.shape != u.shape:
        raise ParameterError(
            f"The tables have different shapes {t.shape} and {u.shape}; compare tables over "
            "the same cells."
        )
    if np.any(t < 0) or np.any(u < 0):
        raise DataError("Table distances need non-negative cell counts.")
    absdiff = np.abs(t - u)
    hd = float(np.sqrt(0.5 * np.sum((np.sqrt(t) - np.sqrt(u)) ** 2)))
    st, su = t.sum(), u.sum()
    hd_norm = float(
        np.sqrt(0.5 * np.sum((np.sqrt(u / su) - np.sqrt(t / st)) ** 2)) if st and su else np.nan
    )
    pos = t > 0
    v, v2 = (cramers_v(t), cramers_v(u)) if t.ndim == 2 else (np.nan, np.nan)
    return TableDistances(
        hellinger=hd,
        hellinger_normalised=hd_norm,
        relative_absolute_distance=float(absdiff.sum() / st) if st else float("nan"),
        relative_absolute_distance_cells=float(np.sum(absdiff[pos] / t[pos])),
        average_absolute_distance=float(absdiff.mean()),
        cramers_v_original=v,
        cramers_v_protected=v2,
        cramers_v_change_pct=float(100.0 * (v2 - v) / v) if v else float("nan"),
        false_zeros=int(np.count_nonzero(pos & (u == 0))),
        false_non_zeros=int(np.count_nonzero(~pos & (u > 0))),
    )


def pram_entropy(transition: Any, frequencies: Any) -> float:
    """Entropy-based information loss of PRAM: ``H(original | released)`` in nats.

    ``transition[k, l] = P(released l | original k)`` and ``frequencies`` the original category
    frequencies (methods.md M9).  Zero for the identity matrix; higher means more protection
    and more loss.

    Examples
    --------
    >>> pram_entropy([[1.0, 0.0], [0.0, 1.0]], [5, 5])
    0.0
    >>> round(pram_entropy([[0.5, 0.5], [0.5, 0.5]], [5, 5]), 6)
    0.693147
    """
    p = np.asarray(transition, dtype=np.float64)
    pi = np.asarray(frequencies, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] != p.shape[1] or p.shape[0] != pi.shape[0]:
        raise ParameterError(
            "The transition matrix must be square with one row per category of 'frequencies'."
        )
    pi = pi / pi.sum()
    joint = pi[:, None] * p  # P(original k, released l)
    released = joint.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        cond = np.where(released > 0, joint / released, 0.0)  # P(original k | released l)
        terms = np.where(cond > 0, cond * np.log(cond), 0.0)
    return float(-np.sum(released * terms.sum(axis=0)) + 0.0)


@dataclass(frozen=True, repr=False)
class CategoricalLossResult:
    """Changes of categorical variables between the original and the protected file.

    ``per_variable`` has one row per variable: the share of changed values, the number made
    missing (suppressed), the Hellinger distance and the relative and average absolute
    distance of the (weighted) frequency distributions.  ``pairs`` has Cramer's V for every
    pair of variables in both files and its relative change.
    """

    variables: tuple[str, ...]
    per_variable: pl.DataFrame
    pairs: pl.DataFrame
    share_changed: float

    def to_frame(self) -> pl.DataFrame:
        """One row per variable (polars)."""
        return self.per_variable

    def summary(self) -> Summary:
        """File-level figures."""
        rows: list[tuple[str, Any]] = [
            ("variables", len(self.variables)),
            ("share of changed values", self.share_changed),
            ("values suppressed", int(self.per_variable["suppressed"].sum())),
            ("largest Hellinger distance", float(self.per_variable["hellinger"].max())),
        ]
        if self.pairs.height:
            rows.append(
                (
                    "largest |Cramer's V change| (%)",
                    float(self.pairs["cramers_v_change_pct"].abs().max()),
                )
            )
        return Summary("Information loss: categorical variables", rows)


def _comparable(s: pl.Series) -> pl.Series:
    """A float column whose values are whole numbers becomes Int64 (1.0 and 1 compare equal)."""
    if s.dtype.is_float():
        finite = s.fill_nan(None)
        values = finite.drop_nulls()
        if len(values) == 0 or bool((values == values.round(0)).all()):
            return finite.cast(pl.Int64, strict=False)
        return finite
    return s


def _joint_codes(a: pl.Series, b: pl.Series) -> tuple[np.ndarray, np.ndarray, int]:
    """Codes of two versions of a variable on a common set of levels (missing = -1)."""
    a, b = _comparable(a), _comparable(b)
    if a.dtype.is_numeric() and b.dtype.is_numeric():
        common = pl.Float64 if (a.dtype.is_float() or b.dtype.is_float()) else pl.Int64
        both = pl.concat([a.cast(common), b.cast(common)])
    else:
        both = pl.concat([a.cast(pl.String), b.cast(pl.String)])
    codes, levels = encode_column(both)
    return codes[: len(a)], codes[len(a) :], len(levels)


def categorical_loss(
    original: Any, protected: Any, *, variables: Any = None, weight: str | None = None
) -> CategoricalLossResult:
    """Compare the categorical variables of an original and a protected file.

    Examples
    --------
    >>> import polars as pl
    >>> x = pl.DataFrame({"sex": ["F", "M", "F"], "reg": [92, 75, 75]})
    >>> y = pl.DataFrame({"sex": ["F", "F", "M"], "reg": [92, 75, 75]})
    >>> res = categorical_loss(x, y, variables=["sex", "reg"])
    >>> res.per_variable["share_changed"].to_list()
    [0.6666666666666666, 0.0]
    """
    left, right, cols, md = paired_frames(original, protected, variables, "keys")
    w = weights_of(left, weight, md)
    weights = np.ones(left.height) if w is None else w
    rows = []
    codes = {}
    for c in cols:
        a, b, n_levels = _joint_codes(left.get_column(c), right.get_column(c))
        codes[c] = (a, b, n_levels)
        changed = (a != b) & (a >= 0)
        suppressed = (a >= 0) & (b < 0)
        t = np.bincount(a[a >= 0], weights[a >= 0], minlength=n_levels)
        u = np.bincount(b[b >= 0], weights[b >= 0], minlength=n_levels)
        d = table_distances(t, u)
        rows.append(
            {
                "variable": c,
                "share_changed": float(changed.mean()),
                "suppressed": int(suppressed.sum()),
                "hellinger": d.hellinger_normalised,
                "relative_absolute_distance": d.relative_absolute_distance,
                "average_absolute_distance": d.average_absolute_distance,
            }
        )
    pair_rows = []
    for i, c1 in enumerate(cols):
        for c2 in cols[i + 1 :]:
            a1, b1, n1 = codes[c1]
            a2, b2, n2 = codes[c2]
            ok_a = (a1 >= 0) & (a2 >= 0)
            ok_b = (b1 >= 0) & (b2 >= 0)
            t = np.bincount(a1[ok_a] * n2 + a2[ok_a], weights[ok_a], minlength=n1 * n2)
            u = np.bincount(b1[ok_b] * n2 + b2[ok_b], weights[ok_b], minlength=n1 * n2)
            v, v2 = cramers_v(t.reshape(n1, n2)), cramers_v(u.reshape(n1, n2))
            pair_rows.append(
                {
                    "variable_1": c1,
                    "variable_2": c2,
                    "cramers_v_original": v,
                    "cramers_v_protected": v2,
                    "cramers_v_change_pct": 100.0 * (v2 - v) / v if v else float("nan"),
                }
            )
    per_variable = pl.DataFrame(rows)
    pairs = pl.DataFrame(
        pair_rows,
        schema={
            "variable_1": pl.String,
            "variable_2": pl.String,
            "cramers_v_original": pl.Float64,
            "cramers_v_protected": pl.Float64,
            "cramers_v_change_pct": pl.Float64,
        },
    )
    return CategoricalLossResult(
        variables=cols,
        per_variable=per_variable,
        pairs=pairs,
        share_changed=float(per_variable["share_changed"].mean()),
    )

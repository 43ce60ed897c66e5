"""Sub-sampling: release a random part of the file, with adjusted sampling weights.

``method="srs"`` keeps ``round(fraction * n)`` records drawn by simple random sampling without
replacement.  ``method="stratified"`` draws within each stratum of ``Microdata.strata``
independently, ``m_h = round(fraction * n_h)`` records but at least one (proportional
allocation; the total sample size is then ``sum(m_h)``, which may differ from
``round(fraction * n)``).  Rounding is half up.

Kept records stay in the caller's order, with the caller's index labels.  Their weights are
adjusted so that they still estimate population totals:

``weighting="calibrate"`` (default)
    ``w'_i = w_i * W_h / sum_{kept i in h} w_i``: the weights of the kept records of a stratum
    (the whole file for "srs") add up to the original total ``W_h`` exactly.  When the weights
    are equal within the stratum (always so for a file without weights) this is the design
    weight ``w_i / f_h`` with the within-stratum sampling fraction ``f_h = m_h / n_h``.
``weighting="design"``
    ``w'_i = w_i / f_h`` (the two-phase design weight): unbiased, totals kept in expectation.

A file without a weight gets a weight column (``weight_name``, default ``"weight"``) holding
``1 / f_h`` (calibrated base weights 1), and that column becomes its weight role.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
import polars as pl

from sdckit._codes import encode_column
from sdckit._validation import check_choice, check_real, check_seed
from sdckit.errors import ColumnError, ParameterError
from sdckit.microdata import Microdata
from sdckit.protection import Options, Param, Protected, ProtectionMethod, Real, Seed, String
from sdckit.twins import function_twin

__all__ = ["SubSample", "subsample"]

SAMPLING_METHODS: tuple[str, ...] = ("srs", "stratified")
WEIGHTINGS: tuple[str, ...] = ("calibrate", "design")


def _round_half_up(values: np.ndarray) -> np.ndarray:
    return np.floor(values + 0.5).astype(np.int64)


class SubSample(ProtectionMethod):
    """Keep a random sample of the records and adjust their weights.

    Parameters
    ----------
    fraction : float
        Sampling fraction in (0, 1].
    method : {"srs", "stratified"}, default "srs"
        Simple random sampling without replacement, or proportional stratified sampling
        within the strata of the data (at least one record per stratum).
    weighting : {"calibrate", "design"}, default "calibrate"
        How weights are adjusted (see the module docstring).
    weight_name : str, default "weight"
        Name of the weight column added when the data has no weight.
    seed : int or numpy.random.Generator, optional
        Random seed.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking.sampling import SubSample
    >>> df = pl.DataFrame({"region": [1, 1, 1, 1, 2, 2], "age": [20, 30, 40, 50, 60, 70]})
    >>> res = SubSample(fraction=0.5, method="stratified", seed=1).apply(df, strata="region")
    >>> res.microdata.n_records, res.microdata.weight
    (3, 'weight')
    >>> sorted(res.data["weight"].to_list())
    [2.0, 2.0, 2.0]
    """

    name: ClassVar[str] = "sub-sampling"
    description: ClassVar[str] = (
        "Releases a random sample of the records, with sampling weights adjusted so that they "
        "still estimate population totals (sub-sampling)."
    )
    stochastic: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Param]] = {
        "fraction": Param(
            Real(minimum=0.0, maximum=1.0, min_open=True),
            help="share of the records that is kept",
        ),
        "method": Param(
            Options(*SAMPLING_METHODS),
            help="simple random sampling, or proportional sampling within the strata",
        ),
        "weighting": Param(
            Options(*WEIGHTINGS),
            help="weights calibrated to the original totals, or design weights",
        ),
        "weight_name": Param(
            String(), help="name of the weight column added when the data has no weight"
        ),
        "seed": Param(Seed(), None, help="random seed (an integer or a numpy Generator)"),
    }

    def __init__(
        self,
        *,
        fraction: float,
        method: Literal["srs", "stratified"] = "srs",
        weighting: Literal["calibrate", "design"] = "calibrate",
        weight_name: str = "weight",
        seed: int | np.random.Generator | None = None,
    ) -> None:
        self.fraction = fraction
        self.method = method
        self.weighting = weighting
        self.weight_name = weight_name
        self.seed = seed

    def _check(self, md: Microdata) -> tuple[float, str, str, np.ndarray]:
        """Validated parameters and the stratum code of every record."""
        fraction = check_real(
            self.fraction, "fraction", minimum=0.0, maximum=1.0, min_inclusive=False
        )
        method = check_choice(self.method, "method", SAMPLING_METHODS)
        weighting = check_choice(self.weighting, "weighting", WEIGHTINGS)
        if md.weight is None:
            if not isinstance(self.weight_name, str) or not self.weight_name:
                raise ParameterError("The 'weight_name' parameter must be a non-empty string.")
            if self.weight_name in md.frame.columns:
                raise ColumnError(
                    f"The data has no weight role but already has a column {self.weight_name!r}; "
                    "declare it as the weight or pass another weight_name=..."
                )
        if method == "stratified":
            if md.strata is None:
                raise ColumnError(
                    "Stratified sub-sampling needs strata; pass strata=... when building the "
                    "data, or use method='srs'."
                )
            codes, _ = encode_column(md.frame.get_column(md.strata))
            stratum = codes.astype(np.int64)
        else:
            stratum = np.zeros(md.n_records, dtype=np.int64)
        return fraction, method, weighting, stratum

    @staticmethod
    def _allocation(stratum: np.ndarray, fraction: float, method: str) -> tuple[np.ndarray, ...]:
        """Population size ``n_h`` and sample size ``m_h`` of every stratum."""
        n_h = np.bincount(stratum)
        if method == "stratified":
            m_h = np.clip(_round_half_up(fraction * n_h), 1, n_h)
        else:
            m_h = _round_half_up(np.array([fraction * n_h.sum()]))
        return n_h, m_h

    def _apply(self, md: Microdata) -> Protected:
        fraction, method, weighting, stratum = self._check(md)
        n_h, m_h = self._allocation(stratum, fraction, method)
        if m_h.sum() < 2:
            raise ParameterError(
                f"The 'fraction' parameter keeps {int(m_h.sum())} record(s); a released file "
                "needs at least two records (raise the fraction)."
            )
        rng = check_seed(self.seed)
        order = np.lexsort((rng.random(md.n_records), stratum))
        starts = np.concatenate(([0], np.cumsum(n_h)[:-1]))
        rank = np.arange(md.n_records) - starts[stratum[order]]
        keep = np.zeros(md.n_records, dtype=bool)
        keep[order[rank < m_h[stratum[order]]]] = True
        positions = np.flatnonzero(keep)

        base = md.weights()
        w = np.ones(md.n_records) if base is None else base
        total_h = np.bincount(stratum, w, minlength=len(n_h))
        if weighting == "design":
            factor_h = n_h / m_h
        else:
            factor_h = total_h / np.bincount(stratum[keep], w[keep], minlength=len(n_h))
        new_w = w[keep] * factor_h[stratum[keep]]

        weight_col = md.weight or self.weight_name
        frame = md.frame.filter(pl.Series(keep)).with_columns(
            pl.Series(weight_col, new_w, dtype=pl.Float64)
        )
        roles = {} if md.weight else {"weight": weight_col}
        if method == "stratified" and md.strata is not None:
            labels = encode_column(md.frame.get_column(md.strata))[1].cast(pl.String)
        else:
            labels = pl.Series(["all"])
        strata_table = pl.DataFrame(
            {
                "stratum": labels,
                "records": n_h,
                "kept": m_h,
                "sampling_fraction": m_h / n_h,
                "weight_total": total_h,
                "weight_factor": factor_h,
            }
        )
        details: dict[str, Any] = {
            "kept": keep,
            "positions": positions,
            "n_kept": int(positions.size),
            "strata": strata_table,
            "weight_column": weight_col,
            "roles_changed": bool(roles),
        }
        # the released records keep the caller's index labels
        return Protected.from_frames(md, frame, self, details=details, roles=roles, rows=positions)

    def verify(self, original: Microdata, protected: Protected) -> None:
        """Check: a subset in the original order, exact sample sizes, weights add up."""
        fraction, method, weighting, stratum = self._check(original)
        n_h, m_h = self._allocation(stratum, fraction, method)
        positions = np.asarray(protected.details["positions"])
        out = protected.microdata.frame
        self._require(
            out.height == positions.size == m_h.sum(),
            "the sample size differs from the allocation",
        )
        self._require(np.all(np.diff(positions) > 0), "the records are not in the original order")
        self._require(
            np.array_equal(np.bincount(stratum[positions], minlength=len(n_h)), m_h),
            "the stratum sample sizes differ from the allocation",
        )
        weight_col = protected.details["weight_column"]
        same = original.frame[positions].drop(weight_col, strict=False)
        self._require(
            same.equals(out.drop(weight_col), null_equal=True),
            "values of the kept records changed",
        )
        base = original.weights()
        w = np.ones(original.n_records) if base is None else base
        new_w = out.get_column(weight_col).to_numpy()
        self._require(np.all(new_w > 0), f"the weights in {weight_col!r} are not all positive")
        if weighting == "calibrate":
            totals = np.bincount(stratum, w, minlength=len(n_h))
            kept = np.bincount(stratum[positions], new_w, minlength=len(n_h))
            self._require(
                np.allclose(kept, totals, rtol=1e-9, atol=0),
                "the weight totals of the strata differ from the original ones",
            )
        else:
            factor = (n_h / m_h)[stratum[positions]]
            self._require(
                np.allclose(new_w, w[positions] * factor, rtol=1e-12),
                "the weights are not the design weights",
            )

    @classmethod
    def contract_example(cls) -> tuple[SubSample, Microdata]:
        """Stratified half sample of a small weighted file."""
        rng = np.random.default_rng(7)
        frame = pl.DataFrame(
            {
                "region": rng.integers(1, 4, size=40),
                "sex": rng.integers(1, 3, size=40),
                "income": rng.gamma(2.0, 100.0, size=40).round(1),
                "w": rng.uniform(5.0, 50.0, size=40).round(2),
            }
        )
        md = Microdata(frame, keys=["sex"], numeric=["income"], weight="w", strata="region")
        return cls(fraction=0.5, method="stratified", seed=11), md


@function_twin(SubSample)
def subsample(data: Any, **params: Any) -> Protected:
    """Keep a random sample of the records (function form of :class:`SubSample`).

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.microdata.Microdata`.
    fraction, method, weighting, weight_name, seed
        The parameters of :class:`SubSample`, by name (keyword arguments only).
    **roles
        The role keywords of :class:`~sdckit.microdata.Microdata` (``keys``, ``numeric``,
        ``weight``, ``strata``, ``household``, ...) for building it from a plain frame;
        given with a Microdata they replace its roles (see :mod:`sdckit.twins`).

    Returns
    -------
    Protected
        The kept records in the original order; ``details["kept"]`` marks them.

    Examples
    --------
    >>> import pandas as pd
    >>> from sdckit.masking.sampling import subsample
    >>> df = pd.DataFrame({"x": range(10)}, index=list("abcdefghij"))
    >>> out = subsample(df, fraction=0.3, seed=2).data
    >>> len(out), out["weight"].sum(), out.index.isin(df.index).all()
    (3, np.float64(10.0), np.True_)
    """

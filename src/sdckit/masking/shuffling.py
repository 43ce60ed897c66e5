"""Data shuffling (Muralidhar and Sarathy): rank-order replacement after a regression.

The sensitive numeric variables ``Y`` are regressed on the other variables ``X`` (numeric, and
categorical ones as indicator columns).  New values ``Y* = X B + E`` are drawn with ``E`` from
the normal distribution of the residuals (their covariance matrix), and then each sensitive
variable is *shuffled*: the record with the ``r``-th smallest ``Y*_j`` receives the ``r``-th
smallest original value of ``Y_j``.  The released values are therefore a permutation of the
original ones (every marginal distribution is kept exactly), while their relation with ``X``
follows the fitted regression.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import polars as pl

from sdckit._codes import encode_column
from sdckit._validation import check_seed, column_list
from sdckit.errors import ColumnError, DataError
from sdckit.microdata import Microdata
from sdckit.protection import Columns, Param, Protected, ProtectionMethod, Seed

__all__ = ["Shuffling", "shuffle"]


def _design(md: Microdata, predictors: Sequence[str]) -> np.ndarray:
    cols = [np.ones(md.n_records)]
    for c in predictors:
        s = md.frame.get_column(c)
        if s.dtype.is_numeric() and c not in md.keys:
            v = s.cast(pl.Float64).to_numpy()
            missing = np.isnan(v)
            if missing.all():
                raise DataError(
                    f"The predictor {c!r} is missing for every record; drop it from the predictors."
                )
            if missing.any():  # mean imputation plus an indicator of the imputed records
                v = np.where(missing, np.nanmean(v), v)
                cols.append(missing.astype(np.float64))
            cols.append(v)
        else:
            codes, levels = encode_column(s)
            for level in range(1, len(levels)):  # first level is the reference
                cols.append((codes == level).astype(np.float64))
            if (codes < 0).any():  # missing is a category of its own, not the reference
                cols.append((codes < 0).astype(np.float64))
    return np.column_stack(cols)


class Shuffling(ProtectionMethod):
    """Data shuffling of sensitive numeric variables (see the module docstring).

    Parameters
    ----------
    variables : list of str, optional
        Sensitive numeric variables to shuffle (default: the numeric variables).
    predictors : list of str, optional
        Variables the sensitive ones are regressed on (default: the key variables plus the
        numeric variables that are not shuffled).
    seed : int or numpy.random.Generator, optional
    """

    name: ClassVar[str] = "data shuffling"
    description: ClassVar[str] = (
        "Reorders the values of {variables} among the records so that they follow a "
        "regression on the other variables, keeping every original value (data shuffling)."
    )
    stochastic: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Param]] = {
        "variables": Param(
            Columns(role="numeric", min_length=0),
            None,
            help="the sensitive numeric variables to shuffle (default: the numeric variables)",
        ),
        "predictors": Param(
            Columns(min_length=0),
            None,
            help="the variables they are regressed on (default: keys and other numeric ones)",
        ),
        "seed": Param(Seed(), None, help="random seed (an integer or a numpy Generator)"),
    }

    def __init__(
        self,
        *,
        variables: str | Sequence[str] | None = None,
        predictors: str | Sequence[str] | None = None,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        self.variables = variables
        self.predictors = predictors
        self.seed = seed

    def _roles(self, md: Microdata) -> tuple[tuple[str, ...], tuple[str, ...]]:
        ys = column_list(self.variables, "variables") or md.numeric
        if not ys:
            raise ColumnError("Shuffling needs sensitive numeric variables: pass variables=[...].")
        for c in ys:
            if c not in md.frame.columns or not md.frame.schema[c].is_numeric():
                raise ColumnError(f"The shuffled variable {c!r} must be a numeric column.")
        xs = column_list(self.predictors, "predictors")
        if not xs:
            xs = tuple(md.keys) + tuple(c for c in md.numeric if c not in ys)
        for c in xs:
            if c not in md.frame.columns:
                raise ColumnError(f"The predictor {c!r} is not in the data.")
            if c in ys:
                raise ColumnError(f"The column {c!r} cannot be both shuffled and a predictor.")
        return ys, xs

    def _apply(self, md: Microdata) -> Protected:
        rng = check_seed(self.seed)
        ys, xs = self._roles(md)
        y = md.frame.select(pl.col(c).cast(pl.Float64) for c in ys).to_numpy()
        if np.isnan(y).any():
            raise DataError(
                "Shuffling needs complete values of the shuffled variables; impute or drop "
                "the records with missing values first."
            )
        x = _design(md, xs)
        beta, *_ = np.linalg.lstsq(x, y, rcond=None)
        fitted = x @ beta
        resid = y - fitted
        cov = np.atleast_2d(np.cov(resid, rowvar=False))
        noise = rng.multivariate_normal(np.zeros(len(ys)), cov, size=md.n_records, method="eigh")
        y_star = fitted + noise
        updates = []
        for j, c in enumerate(ys):
            ranks = np.argsort(np.argsort(y_star[:, j], kind="stable"), kind="stable")
            # the original values in their own type (exact for large integers), by rank
            ordered = md.frame.get_column(c).sort()
            updates.append(ordered.gather(pl.Series(ranks)).alias(c))
        frame = md.frame.with_columns(updates)
        details = {"coefficients": beta, "residual_covariance": cov, "predictors": xs}
        return Protected.from_frames(md, frame, self, details=details)

    def verify(self, original: Microdata, protected: Protected) -> None:
        """Every shuffled variable is a permutation of the original values; others unchanged."""
        ys, _ = self._roles(original)
        for c in ys:
            before = np.sort(original.frame.get_column(c).to_numpy())
            after = np.sort(protected.microdata.frame.get_column(c).to_numpy())
            self._require(
                np.array_equal(before, after), f"the values of {c!r} are not a permutation"
            )
        for c in protected.changed:
            self._require(c in ys, f"the column {c!r}, which is not shuffled, changed")

    @classmethod
    def contract_example(cls) -> tuple[ProtectionMethod, Microdata]:
        rng = np.random.default_rng(9)
        n = 200
        age = rng.integers(18, 80, n)
        sex = rng.choice(["f", "m"], n)
        income = 1000 + 40 * age + rng.normal(0, 300, n)
        df = pl.DataFrame({"age": age, "sex": sex, "income": income})
        md = Microdata(df, keys=["sex"], numeric=["income"])
        return cls(variables=["income"], predictors=["age", "sex"], seed=4), md


def shuffle(
    data: Any,
    *,
    numeric: Sequence[str] | None = None,
    predictors: Sequence[str] | None = None,
    seed: Any = None,
    **roles: Any,
) -> Protected:
    """Function twin of :class:`Shuffling`.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=500)
    >>> df = pl.DataFrame({"x": x, "y": 2 * x + rng.normal(size=500)})
    >>> out = shuffle(df, numeric=["y"], predictors=["x"], seed=1).data
    >>> bool(np.array_equal(np.sort(out["y"]), np.sort(df["y"])))
    True
    """
    return Shuffling(variables=numeric, predictors=predictors, seed=seed).apply(
        data, numeric=numeric, **roles
    )

"""Data shuffling (Muralidhar and Sarathy): rank-order replacement after a regression.

The sensitive numeric variables ``Y`` are regressed on the other variables ``X`` (numeric, and
categorical ones as indicator columns).  New values ``Y* = X B + E`` are drawn with ``E`` from
the normal distribution of the residuals (their covariance matrix), and then each sensitive
variable is *shuffled*: the record with the ``r``-th smallest ``Y*_j`` receives the ``r``-th
smallest original value of ``Y_j``.  The released values are therefore a permutation of the
original ones (every marginal distribution is kept exactly), while their relation with ``X``
follows the fitted regression.

Household-level sensitive variables (``Microdata.household_level``) are shuffled between
households: one row per household (its value, and its first member's predictors) is regressed,
drawn and ranked as above, separately from the person-level variables, and each household's new
value is given to every member.  The household values are a permutation of the original ones
(``details["household_coefficients"]`` holds that regression).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import polars as pl

from sdckit._codes import encode_column, first_index
from sdckit._validation import check_seed, column_list
from sdckit.errors import ColumnError, DataError
from sdckit.microdata import Microdata
from sdckit.protection import Columns, Param, Protected, ProtectionMethod, Seed
from sdckit.twins import function_twin

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


def _fit_and_rank(
    x: np.ndarray, y: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Regression of ``y`` on ``x``, a normal draw around the fit, and the ranks of the draws."""
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    fitted = x @ beta
    resid = y - fitted
    cov = np.atleast_2d(np.cov(resid, rowvar=False))
    noise = rng.multivariate_normal(np.zeros(y.shape[1]), cov, size=len(y), method="eigh")
    y_star = fitted + noise
    ranks = [
        np.argsort(np.argsort(y_star[:, j], kind="stable"), kind="stable")
        for j in range(y.shape[1])
    ]
    return beta, cov, ranks


def _household_variables(md: Microdata, cols: Sequence[str]) -> set[str]:
    """The variables of ``cols`` that are household-level (shuffled between households)."""
    if md.household is None:
        return set()
    return set(cols) & set(md.household_level)


def _households(md: Microdata) -> tuple[np.ndarray, np.ndarray]:
    """Household number of every record (ids in sorted order) and each household's first member."""
    column = md.household
    if column is None:  # (only called for files with household-level variables)
        raise ColumnError("Household-level variables need the household id: pass household=...")
    codes, levels = encode_column(md.frame.get_column(column))
    if (codes < 0).any():
        raise DataError(
            f"The household column {column!r} has missing values; every record needs a "
            "household id."
        )
    return codes.astype(np.int64), first_index(codes, len(levels))


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
        house = _household_variables(md, ys)
        if not house:
            beta, cov, ranks = _fit_and_rank(x, y, rng)
            updates = []
            for j, c in enumerate(ys):
                # the original values in their own type (exact for large integers), by rank
                ordered = md.frame.get_column(c).sort()
                updates.append(ordered.gather(pl.Series(ranks[j])).alias(c))
            frame = md.frame.with_columns(updates)
            details = {"coefficients": beta, "residual_covariance": cov, "predictors": xs}
            return Protected.from_frames(md, frame, self, details=details)
        # household-level variables: one row per household (its first member's predictors)
        member, first = _households(md)
        if len(first) < 2:
            raise DataError(
                "Shuffling a household-level variable needs at least two households; remove "
                "it from the shuffled variables."
            )
        person = [j for j, c in enumerate(ys) if c not in house]
        hh = [j for j, c in enumerate(ys) if c in house]
        updates = []
        details: dict[str, Any] = {
            "coefficients": None,
            "residual_covariance": None,
            "predictors": xs,
            "per_household": tuple(ys[j] for j in hh),
        }
        if person:
            beta, cov, ranks = _fit_and_rank(x, y[:, person], rng)
            for r, j in zip(ranks, person, strict=True):
                ordered = md.frame.get_column(ys[j]).sort()
                updates.append(ordered.gather(pl.Series(r)).alias(ys[j]))
            details.update(coefficients=beta, residual_covariance=cov)
        beta, cov, ranks = _fit_and_rank(x[first], y[np.ix_(first, hh)], rng)
        for r, j in zip(ranks, hh, strict=True):
            ordered = md.frame.get_column(ys[j]).gather(first).sort()
            updates.append(ordered.gather(pl.Series(r)).gather(member).alias(ys[j]))
        details.update(household_coefficients=beta, household_residual_covariance=cov)
        frame = md.frame.with_columns(updates)
        return Protected.from_frames(md, frame, self, details=details)

    def verify(self, original: Microdata, protected: Protected) -> None:
        """Every shuffled variable is a permutation of the original values; others unchanged.

        A household-level variable is constant within households and its household values
        (one per household) are a permutation of the original household values.
        """
        ys, _ = self._roles(original)
        house = _household_variables(original, ys)
        member, first = _households(original) if house else (np.zeros(0, np.int64),) * 2
        for c in ys:
            before = original.frame.get_column(c).to_numpy()
            after = protected.microdata.frame.get_column(c).to_numpy()
            if c in house:
                self._require(
                    np.array_equal(after, after[first][member]),
                    f"the household-level variable {c!r} differs within a household",
                )
                before, after = before[first], after[first]
            before, after = np.sort(before), np.sort(after)
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


@function_twin(Shuffling)
def shuffle(data: Any, **params: Any) -> Protected:
    """Function twin of :class:`Shuffling`.

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.microdata.Microdata`.
    variables, predictors, seed
        The parameters of :class:`Shuffling`, by name (keyword arguments only).
    **roles
        The role keywords of :class:`~sdckit.microdata.Microdata` (``keys``, ``numeric``,
        ``weight``, ``strata``, ``household``, ...) for building it from a plain frame;
        given with a Microdata they replace its roles (see :mod:`sdckit.twins`).

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=500)
    >>> df = pl.DataFrame({"x": x, "y": 2 * x + rng.normal(size=500)})
    >>> out = shuffle(df, variables=["y"], predictors=["x"], seed=1).data
    >>> bool(np.array_equal(np.sort(out["y"]), np.sort(df["y"])))
    True
    """

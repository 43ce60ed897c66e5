"""PRAM: the post-randomisation method for categorical variables (methods.md M9, example E5).

Each record's value ``k`` of a PRAMmed variable is replaced by a draw from row ``k`` of a
transition matrix ``P`` (``P[k, l] = P(released l | original k)``).  The matrix is given by the
user or generated with a minimum diagonal probability; the *invariant* version ``R = P Q`` (with
``Q`` the backward matrix by Bayes' rule) keeps the expected category frequencies, and
``R* = alpha R + (1 - alpha) I`` raises its diagonal.  Within strata the matrices are built per
stratum.  Control of impossible combinations redraws the records whose new combination is
forbidden (or absent from the original file) and, if that fails, restores their original values.
The unbiased moment estimate of the original frequencies is ``T* P^-1``
(:func:`pram_estimate`).

Household-level variables (``Microdata.household_level``) are drawn once per household: the
household's first member's value is drawn from the matrix of that member's stratum and given to
every member, so released values are constant within households and the matrices describe them
(nothing is changed afterwards by the household rule of the release roles).  The matrices are
built from person counts, so the invariant matrix keeps the expected *person* frequencies and
``T* P^-1`` on person counts stays unbiased, with a larger variance since members move together
(give :func:`pram_estimate` the released ``squared_sizes`` for the right standard errors).
Control of combinations redraws the whole household of a record that breaks it, and restores
the original values of every member of a household that still breaks it (``reverted_records``
counts those members).

Random numbers: the matrices of stratum ``s`` (the whole file is stratum 0 without strata) are
generated from a stream of their own derived from ``seed``
(:func:`sdckit.masking._strata.stratum_seeds`); the draws are keyed by the seed and the
record's row in the file (:mod:`sdckit._keyed_random`, lane: the variable and the redraw), so
a slice of the file, a Dask or a Spark partition draws exactly what the whole file draws for
its rows (:mod:`sdckit.masking.keyed`, :mod:`sdckit.engines`).  The output does not depend on
``n_jobs`` (kept for compatibility: the draws are one compiled pass).  The draws differ from
those of versions before the keyed generator.
"""

from __future__ import annotations

import datetime
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import polars as pl

from sdckit._codes import encode_column, first_index
from sdckit._validation import check_choice, check_int, check_real, check_seed, column_list
from sdckit.errors import ColumnError, DataError, ParameterError
from sdckit.masking._keyed_draws import decode, draw_codes, pram_keys, pram_lane, stratum_codes
from sdckit.masking._strata import N_JOBS, Progress, ReportsStrata
from sdckit.microdata import Microdata
from sdckit.protection import (
    Array,
    Boolean,
    ColumnMap,
    Columns,
    Instance,
    Integer,
    ListOf,
    Options,
    Param,
    Protected,
    ProtectionMethod,
    Real,
    Seed,
)
from sdckit.twins import function_twin

__all__ = [
    "Pram",
    "PramEstimate",
    "generate_transition",
    "invariant_transition",
    "pram",
    "pram_estimate",
]


def generate_transition(
    n_levels: int, *, min_diagonal: float = 0.8, diagonal: str = "random", seed: Any = None
) -> np.ndarray:
    """A transition matrix with diagonal >= ``min_diagonal`` and equal off-diagonal entries.

    ``diagonal="random"`` draws each diagonal entry uniformly in ``[min_diagonal, 1]`` (as
    sdcMicro's ``pram``); ``"fixed"`` sets them all to ``min_diagonal``.

    Examples
    --------
    >>> generate_transition(3, min_diagonal=0.7, diagonal="fixed").round(2).tolist()
    [[0.7, 0.15, 0.15], [0.15, 0.7, 0.15], [0.15, 0.15, 0.7]]
    """
    n_levels = check_int(n_levels, "n_levels", minimum=1)
    min_diagonal = check_real(min_diagonal, "min_diagonal", minimum=0.0, maximum=1.0)
    check_choice(diagonal, "diagonal", ("random", "fixed"))
    if n_levels == 1:
        return np.ones((1, 1))
    if diagonal == "random":
        d = check_seed(seed).uniform(min_diagonal, 1.0, size=n_levels)
    else:
        d = np.full(n_levels, min_diagonal)
    p = np.repeat(((1.0 - d) / (n_levels - 1))[:, None], n_levels, axis=1)
    np.fill_diagonal(p, d)
    return p


def invariant_transition(
    p: Any, frequencies: Any, *, alpha: float | None = 0.5, target_min_diagonal: float | None = None
) -> tuple[np.ndarray, float]:
    """The invariant matrix ``R* = alpha P Q + (1 - alpha) I`` for category ``frequencies``.

    ``Q[j, i] = P[i, j] T[i] / sum_k P[k, j] T[k]`` so that ``T R = T``.  With
    ``target_min_diagonal`` the largest ``alpha`` whose smallest diagonal reaches the target is
    chosen.  Returns the matrix and the ``alpha`` used.

    Examples
    --------
    Worked example E5:

    >>> import numpy as np
    >>> P = [[0.8264, 0.0579, 0.0579, 0.0579], [0.0427, 0.8718, 0.0427, 0.0427],
    ...      [0.0479, 0.0479, 0.8563, 0.0479], [0.0598, 0.0598, 0.0598, 0.8207]]
    >>> R, alpha = invariant_transition(P, [25, 30, 50, 10], alpha=0.5)
    >>> R[0].round(4).tolist()
    [0.8478, 0.0496, 0.074, 0.0287]
    """
    p = _check_matrix(p)
    t = np.asarray(frequencies, dtype=np.float64)
    if t.shape != (p.shape[0],) or np.any(t < 0) or t.sum() <= 0:
        raise ParameterError(
            "The 'frequencies' must be non-negative, one per category, with a positive total."
        )
    released = t @ p
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.where(released[:, None] > 0, (p * t[:, None]).T / released[:, None], 0.0)
    # categories that can never be released keep their row of Q at zero; give R identity rows
    r = p @ q
    absent = t == 0
    r[absent] = 0.0
    r[absent, absent] = 1.0
    row_sums = r.sum(axis=1, keepdims=True)
    r = r / np.where(row_sums > 0, row_sums, 1.0)
    if target_min_diagonal is not None:
        target = check_real(target_min_diagonal, "target_min_diagonal", minimum=0.0, maximum=1.0)
        d = np.diag(r)
        with np.errstate(divide="ignore"):
            limits = np.where(d < 1.0, (1.0 - target) / (1.0 - d), np.inf)
        alpha = float(min(1.0, limits.min()))
    elif alpha is None:
        alpha = 1.0
    alpha = check_real(alpha, "alpha", minimum=0.0, maximum=1.0)
    return alpha * r + (1.0 - alpha) * np.eye(len(r)), alpha


def _check_matrix(p: Any) -> np.ndarray:
    m = np.asarray(p, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise ParameterError("A transition matrix must be square (one row and column per level).")
    if np.any(m < 0) or not np.allclose(m.sum(axis=1), 1.0, atol=1e-3):
        raise ParameterError(
            "A transition matrix must have non-negative entries and rows summing to 1."
        )
    return m / m.sum(axis=1, keepdims=True)  # printed matrices may be off by rounding


@dataclass(frozen=True)
class PramEstimate:
    """Unbiased moment estimate ``T* P^-1`` of the original frequencies and its covariance."""

    estimate: np.ndarray
    covariance: np.ndarray

    @property
    def standard_error(self) -> np.ndarray:
        """Square roots of the variances."""
        return np.sqrt(np.clip(np.diag(self.covariance), 0.0, None))


def pram_estimate(released: Any, transition: Any, *, squared_sizes: Any = None) -> PramEstimate:
    """Estimate original category frequencies from released ones: ``T* P^-1``.

    ``Var(T*) = sum_k T_k (diag(P_k) - P_k^T P_k)`` evaluated at the estimate, and
    ``Var(T_hat) = P^-T Var(T*) P^-1`` (methods.md M9).

    Parameters
    ----------
    released : array-like
        Released frequency of each category (persons), in the order of the matrix.
    transition : array-like
        The transition matrix used.
    squared_sizes : array-like, optional
        For a household-level variable (drawn once per household, so members move together):
        per released category, the sum over households of the squared household size.  The
        variance then uses ``S_k`` (its estimate ``squared_sizes P^-1``) in place of ``T_k``;
        without it, the standard errors of a household-level variable are too small.

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> est = pram_estimate(np.array([100.0, 50.0]) @ P, P)
    >>> est.estimate.round(9).tolist()
    [100.0, 50.0]
    """
    p = _check_matrix(transition)
    t_star = np.asarray(released, dtype=np.float64)
    if t_star.shape != (p.shape[0],):
        raise ParameterError(
            "The 'released' frequencies must give one number per category of the transition matrix."
        )
    try:
        p_inv = np.linalg.inv(p)
    except np.linalg.LinAlgError:
        raise ParameterError(
            "The transition matrix is singular; T* P^-1 needs an invertible matrix (for "
            "example every diagonal entry above 1/2)."
        ) from None
    est = t_star @ p_inv
    t_pos = np.clip(est, 0.0, None)
    if squared_sizes is not None:
        squares = np.asarray(squared_sizes, dtype=np.float64)
        if squares.shape != t_star.shape or not np.all(np.isfinite(squares)) or (squares < 0).any():
            raise ParameterError(
                "The 'squared_sizes' must be non-negative numbers, one per category of the "
                "transition matrix."
            )
        t_pos = np.clip(squares @ p_inv, 0.0, None)
    var_star = np.diag(t_pos @ p) - (p.T * t_pos) @ p
    cov = p_inv.T @ var_star @ p_inv
    return PramEstimate(estimate=est, covariance=cov)


def _transition_matrix(
    var: str,
    n_levels: int,
    counts: np.ndarray,
    rng: np.random.Generator,
    settings: dict[str, Any],
) -> tuple[np.ndarray, float | None]:
    """The matrix of one variable in one stratum (``settings``: the matrix parameters of
    :class:`Pram`) and the ``alpha`` of an invariant matrix."""
    transition = settings["transition"]
    if transition is not None:
        user = transition.get(var) if isinstance(transition, Mapping) else transition
        if user is None:
            raise ParameterError(f"No transition matrix given for the variable {var!r}.")
        p = _check_matrix(user)
        if p.shape[0] != n_levels:
            raise ParameterError(
                f"The transition matrix of {var!r} has {p.shape[0]} rows but the variable "
                f"has {n_levels} levels (rows follow the sorted levels)."
            )
    else:
        p = generate_transition(
            n_levels,
            min_diagonal=settings["min_diagonal"],
            diagonal=settings["diagonal"],
            seed=rng,
        )
    if not settings["invariant"]:
        return p, None
    return invariant_transition(
        p, counts, alpha=settings["alpha"], target_min_diagonal=settings["target_min_diagonal"]
    )


def _as_combinations(combos: Any, name: str) -> list[dict[str, Any]]:
    if combos is None:
        return []
    if isinstance(combos, Mapping):
        combos = [combos]
    out = []
    for c in combos:
        if not isinstance(c, Mapping) or not c:
            raise ParameterError(
                f"The {name!r} parameter takes a list of dicts such as "
                "{'marital': 'married', 'age_group': '0-14'}."
            )
        out.append(dict(c))
    return out


#: A value of a category in a forbidden combination (compared with the column's values).
_CATEGORY = Instance(
    (str, numbers.Real, datetime.date, datetime.time, datetime.timedelta),
    "a category value (text, number or date)",
)
#: A transition matrix: square, one row and column per level.
_MATRIX = Array(ndim=2, square=True)


class Pram(ReportsStrata, ProtectionMethod):
    """PRAM of categorical variables (see the module docstring).

    Parameters
    ----------
    variables : list of str, optional
        Variables to PRAM (default: the key variables).
    transition : array or dict of str to array, optional
        A user transition matrix (rows and columns in the sorted order of the variable's
        levels); without it one is generated with ``min_diagonal``.
    min_diagonal : float, default 0.8
        Smallest diagonal probability of a generated matrix.
    diagonal : {"random", "fixed"}
        Generated diagonals drawn in ``[min_diagonal, 1]`` or all equal to ``min_diagonal``.
    invariant : bool, default True
        Use the invariant matrix ``R*`` (keeps expected frequencies).
    alpha : float, default 0.5
        Mixing weight of ``R* = alpha R + (1 - alpha) I``.
    target_min_diagonal : float, optional
        Choose ``alpha`` so the smallest diagonal of ``R*`` reaches this value.
    by_strata : bool, default True
        Build the matrices and draw within the strata of the Microdata (if it has strata).
    forbidden : list of dict, optional
        Combinations that must not appear, e.g. ``[{"marital": "married", "age_group": "0-14"}]``.
    must_exist : list of list of str, optional
        Groups of variables whose released combinations must occur in the original file.
    max_redraws : int, default 50
        Redraws for records that break the control; then their original values are restored.
    seed : int or numpy.random.Generator, optional
        The matrices of stratum ``s`` come from a stream derived from it, the draws are keyed
        by it and the record's row (see the module docstring).
    n_jobs : int, default 1
        Accepted for compatibility with the other methods within strata; PRAM's draws are one
        compiled pass, and the output is the same for every value.
    """

    name: ClassVar[str] = "PRAM"
    description: ClassVar[str] = (
        "Changes some values of {variables} at random by a known probability mechanism "
        "(post-randomisation, PRAM)."
    )
    stochastic: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Param]] = {
        "variables": Param(
            Columns(role="keys", min_length=0),
            None,
            help="categorical variables to PRAM (default: the key variables)",
        ),
        "transition": Param(
            _MATRIX,
            ColumnMap(_MATRIX),
            None,
            help="transition matrix (rows and columns in sorted level order), or one per variable",
        ),
        "min_diagonal": Param(
            Real(minimum=0.0, maximum=1.0),
            help="smallest probability of keeping a value in a generated matrix",
        ),
        "diagonal": Param(
            Options("random", "fixed"),
            help="generated diagonals drawn at random above min_diagonal, or all equal to it",
        ),
        "invariant": Param(
            Boolean(), help="use the invariant matrix, which keeps the expected frequencies"
        ),
        "alpha": Param(
            Real(minimum=0.0, maximum=1.0),
            None,
            help="weight of the invariant matrix against the identity (None: 1)",
        ),
        "target_min_diagonal": Param(
            Real(minimum=0.0, maximum=1.0),
            None,
            help="choose alpha so that the smallest diagonal of the matrix reaches this value",
        ),
        "by_strata": Param(Boolean(), help="build the matrices and draw within the strata"),
        "forbidden": Param(
            ListOf(ColumnMap(_CATEGORY)),
            ColumnMap(_CATEGORY),
            None,
            help="combinations {column: category} that must not be released",
        ),
        "must_exist": Param(
            ListOf(Columns()),
            None,
            help="groups of variables whose released combinations must occur in the original",
        ),
        "max_redraws": Param(
            Integer(minimum=0),
            help="redraws of records that break the control before their values are restored",
        ),
        "seed": Param(Seed(), None, help="seed of the random draws"),
        "n_jobs": N_JOBS,
    }

    def __init__(
        self,
        *,
        variables: Sequence[str] | None = None,
        transition: Any = None,
        min_diagonal: float = 0.8,
        diagonal: str = "random",
        invariant: bool = True,
        alpha: float | None = 0.5,
        target_min_diagonal: float | None = None,
        by_strata: bool = True,
        forbidden: Any = None,
        must_exist: Sequence[Sequence[str]] | None = None,
        max_redraws: int = 50,
        seed: Any = None,
        n_jobs: int = 1,
    ) -> None:
        self.variables = variables
        self.transition = transition
        self.min_diagonal = min_diagonal
        self.diagonal = diagonal
        self.invariant = invariant
        self.alpha = alpha
        self.target_min_diagonal = target_min_diagonal
        self.by_strata = by_strata
        self.forbidden = forbidden
        self.must_exist = must_exist
        self.max_redraws = max_redraws
        self.seed = seed
        self.n_jobs = n_jobs

    # ------------------------------------------------------------------ helpers
    def _variables(self, md: Microdata) -> tuple[str, ...]:
        cols = column_list(self.variables, "variables") or md.keys
        if not cols:
            raise ColumnError("PRAM needs variables: pass variables=[...] or key variables.")
        for c in cols:
            if c not in md.frame.columns:
                raise ColumnError(f"The PRAM variable {c!r} is not in the data.")
        return cols

    def _settings(self) -> dict[str, Any]:
        """The parameters the matrices are built from."""
        names = ("transition", "min_diagonal", "diagonal", "invariant", "alpha")
        return {name: getattr(self, name) for name in (*names, "target_min_diagonal")}

    def _matrix(
        self, var: str, n_levels: int, counts: np.ndarray, rng: np.random.Generator
    ) -> tuple[np.ndarray, float | None]:
        return _transition_matrix(var, n_levels, counts, rng, self._settings())

    def _violations(
        self,
        frame: pl.DataFrame,
        forbidden: list[dict[str, Any]],
        must_exist: list[list[str]],
        original: pl.DataFrame,
    ) -> np.ndarray:
        bad = np.zeros(frame.height, dtype=bool)
        for combo in forbidden:
            expr = pl.lit(True)
            for col, value in combo.items():
                expr = expr & (pl.col(col) == value).fill_null(False)
            bad |= frame.select(expr).to_series().to_numpy()
        for group in must_exist:
            present = original.select(group).unique().with_columns(_ok=pl.lit(True))
            joined = (
                frame.select(group)
                .with_row_index("_row")
                .join(present, on=group, how="left", nulls_equal=True)
            )
            ok = joined.sort("_row").get_column("_ok").fill_null(False).to_numpy()
            bad |= ~ok
        return bad

    # ------------------------------------------------------------------ contract
    def _apply(self, md: Microdata, progress: Progress | None = None) -> Protected:
        cols = self._variables(md)
        max_redraws = check_int(self.max_redraws, "max_redraws", minimum=0)
        forbidden = _as_combinations(self.forbidden, "forbidden")
        must_exist = [list(column_list(g, "must_exist")) for g in (self.must_exist or [])]
        for combo in forbidden:
            for c in combo:
                if c not in md.frame.columns:
                    raise ColumnError(f"The forbidden combination names an unknown column {c!r}.")
        for group in must_exist:
            for c in group:
                if c not in md.frame.columns:
                    raise ColumnError(f"The must_exist group names an unknown column {c!r}.")
        n = md.n_records
        rows_all = np.arange(n, dtype=np.int64)  # the draws are keyed by the row (file order)
        if self.by_strata and md.strata is not None:
            column = md.frame.get_column(md.strata)
            strata = stratum_codes(column, encode_column(column)[1], n)
            n_strata = int(strata.max(initial=0)) + 1
        else:
            strata, n_strata = np.zeros(n, dtype=np.int64), 1
        seeds, key = pram_keys(self.seed, n_strata)
        encoded = {c: encode_column(md.frame.get_column(c)) for c in cols}
        house = _household_variables(md, cols)
        # household-level variables: one draw per household, made for its first member (whose
        # stratum is the household's) and given to every member
        lead = _household_heads(md) if house else rows_all
        is_lead = lead == rows_all
        house_strata = strata[lead]
        # the matrices of a stratum come from its own stream, in the order of the variables
        # (person counts: the invariant matrix keeps the expected person frequencies)
        settings = self._settings()
        matrices: dict[str, list[np.ndarray]] = {c: [] for c in cols}
        alphas: dict[str, list[float | None]] = {c: [] for c in cols}
        counts = {}
        for c in cols:
            codes, levels = encoded[c]
            st = house_strata if c in house else strata
            keep = codes >= 0
            n_lv = max(len(levels), 1)
            flat = np.bincount(st[keep] * n_lv + codes[keep], minlength=n_strata * n_lv)
            counts[c] = flat.reshape(n_strata, n_lv)[:, : len(levels)].astype(np.float64)
        for s in range(n_strata):
            rng = np.random.default_rng(seeds[s])
            for c in cols:
                n_lv = len(encoded[c][1])
                if n_lv == 0 or counts[c][s].sum() == 0:
                    matrices[c].append(np.eye(n_lv))
                    alphas[c].append(None)
                    continue
                m, a = _transition_matrix(c, n_lv, counts[c][s], rng, settings)
                matrices[c].append(m)
                alphas[c].append(a)
            if progress is not None:
                progress(s + 1, n_strata)

        def draw(i: int, c: str, attempt: int, select: np.ndarray | None) -> np.ndarray:
            codes = encoded[c][0]
            if c in house:  # drawn for the first member, keyed by the first member's row
                sel = is_lead if select is None else is_lead & select
                out = draw_codes(codes, house_strata, matrices[c], key, pram_lane(i, attempt),
                                 rows_all, sel)  # fmt: skip
                return out[lead]
            return draw_codes(codes, strata, matrices[c], key, pram_lane(i, attempt), rows_all,
                              select)  # fmt: skip

        new_codes = {c: draw(i, c, 0, None) for i, c in enumerate(cols)}
        levels_of = {c: encoded[c][1] for c in cols}
        frame = decode(md.frame, new_codes, levels_of)
        redraws = reverted = 0
        if forbidden or must_exist:
            bad = self._violations(frame, forbidden, must_exist, md.frame)
            for attempt in range(1, max_redraws + 1):
                if not bad.any():
                    break
                redraws += 1
                for i, c in enumerate(cols):
                    # a household-level value is redrawn for the whole household of a record
                    sel = np.isin(lead, lead[bad]) if c in house else bad
                    new_codes[c] = np.where(sel, draw(i, c, attempt, sel), new_codes[c])
                frame = decode(md.frame, new_codes, levels_of)
                bad = self._violations(frame, forbidden, must_exist, md.frame)
            if bad.any():
                if house:  # a household-level value is restored in every member, with the rest
                    bad = np.isin(lead, lead[bad])
                reverted = int(bad.sum())
                for c in cols:
                    new_codes[c] = np.where(bad, encoded[c][0], new_codes[c])
                frame = decode(md.frame, new_codes, levels_of)
        details: dict[str, Any] = {
            "variables": cols,
            "levels": {c: encoded[c][1].to_list() for c in cols},
            "transition": {c: matrices[c] for c in cols},
            "alpha": {c: alphas[c] for c in cols},
            "redraws": redraws,
            "reverted_records": reverted,
            "expected_share_changed": {
                c: _expected_change(
                    encoded[c][0], house_strata if c in house else strata, matrices[c]
                )
                for c in cols
            },
        }
        if house:
            details["per_household"] = tuple(c for c in cols if c in house)
        return Protected.from_frames(md, frame, self, details=details)

    def verify(self, original: Microdata, protected: Protected) -> None:
        """Only the PRAMmed variables change, within their levels; no forbidden combination.

        Household-level variables are drawn once per household: they are constant within
        households, and no PRAMmed value was altered after the draws by the household rule of
        the release roles (the transition matrices describe the released values).
        """
        cols = self._variables(original)
        for col in protected.changed:
            self._require(col in cols, f"the variable {col!r} was changed but not PRAMmed")
        after_draws = sorted(set(protected.details.get("release_roles", {})) & set(cols))
        if after_draws:
            self._fail(
                f"values of {after_draws[0]!r} were changed after the draws; the transition "
                "matrices do not describe the released values"
            )
        house = _household_variables(original, cols)
        if house:
            lead = _household_heads(original)
            out = protected.microdata.frame
            for c in house:
                values = out.get_column(c)
                self._require(
                    values.equals(values.gather(pl.Series(lead)), null_equal=True),
                    f"the household-level variable {c!r} differs within a household",
                )
        for c in cols:
            before = set(original.frame.get_column(c).drop_nulls().unique().to_list())
            after = set(protected.microdata.frame.get_column(c).drop_nulls().unique().to_list())
            self._require(after <= before, f"a level of {c!r} was released that does not exist")
            miss_before = original.frame.get_column(c).is_null().to_numpy()
            miss_after = protected.microdata.frame.get_column(c).is_null().to_numpy()
            self._require(
                np.array_equal(miss_before, miss_after), f"missing values of {c!r} were changed"
            )
        forbidden = _as_combinations(self.forbidden, "forbidden")
        must_exist = [list(g) for g in (self.must_exist or [])]
        if forbidden or must_exist:
            bad_after = self._violations(
                protected.microdata.frame, forbidden, must_exist, original.frame
            )
            bad_before = self._violations(original.frame, forbidden, must_exist, original.frame)
            self._require(
                not np.any(bad_after & ~bad_before),
                "a forbidden (or non-existing) combination was released",
            )

    @classmethod
    def contract_example(cls) -> tuple[ProtectionMethod, Microdata]:
        rng = np.random.default_rng(5)
        n = 300
        df = pl.DataFrame(
            {
                "age_group": rng.choice(["0-14", "15-64", "65+"], n, p=[0.2, 0.6, 0.2]),
                "marital": rng.choice(["single", "married", "widowed"], n),
                "region": rng.integers(1, 5, n),
                "w": rng.uniform(1, 10, n),
            }
        ).with_columns(
            pl.when(pl.col("age_group") == "0-14")
            .then(pl.lit("single"))
            .otherwise(pl.col("marital"))
            .alias("marital")
        )
        md = Microdata(df, keys=["age_group", "marital"], weight="w", strata="region")
        method = cls(
            variables=["age_group", "marital"],
            forbidden=[{"age_group": "0-14", "marital": "married"}],
            seed=11,
        )
        return method, md


def _household_variables(md: Microdata, cols: Sequence[str]) -> set[str]:
    """The variables of ``cols`` that are household-level (drawn once per household)."""
    if md.household is None:
        return set()
    return set(cols) & set(md.household_level)


def _household_heads(md: Microdata) -> np.ndarray:
    """Position of the first member of each record's household."""
    column = md.household
    if column is None:  # (only called for files with household-level variables)
        raise ColumnError("Household-level variables need the household id: pass household=...")
    codes, levels = encode_column(md.frame.get_column(column))
    if (codes < 0).any():
        raise DataError(
            f"The household column {column!r} has missing values; every record needs a "
            "household id."
        )
    return first_index(codes, len(levels))[codes]


def _expected_change(codes: np.ndarray, strata: np.ndarray, matrices: list[np.ndarray]) -> float:
    """Expected share of changed values: ``sum_k pi_k (1 - P_kk)`` over strata."""
    valid = codes >= 0
    if not valid.any():
        return 0.0
    total = 0.0
    for s, m in enumerate(matrices):
        sel = valid & (strata == s)
        if sel.any() and m.size:
            counts = np.bincount(codes[sel], minlength=m.shape[0])
            total += float(counts @ (1.0 - np.diag(m)))
    return total / int(valid.sum())


@function_twin(Pram)
def pram(data: Any, **params: Any) -> Protected:
    """Function twin of :class:`Pram`: ``pram(df, variables=[...], seed=1)``.

    Roles for building the :class:`~sdckit.microdata.Microdata` (``keys``, ``strata``,
    ``weight``) may be passed with the parameters.

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.microdata.Microdata`.
    variables, transition, min_diagonal, diagonal, invariant, alpha, target_min_diagonal,
    by_strata, forbidden, must_exist, max_redraws, seed, n_jobs
        The parameters of :class:`Pram`, by name (keyword arguments only).
    **roles
        The role keywords of :class:`~sdckit.microdata.Microdata` (``keys``, ``numeric``,
        ``weight``, ``strata``, ``household``, ...) for building it from a plain frame;
        given with a Microdata they replace its roles (see :mod:`sdckit.twins`).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"sex": ["m", "f"] * 50, "reg": [1, 2, 3, 4] * 25})
    >>> out = pram(df, variables=["reg"], seed=3, min_diagonal=0.9)
    >>> out.data.height, sorted(out.data["reg"].unique().to_list())
    (100, [1, 2, 3, 4])
    """

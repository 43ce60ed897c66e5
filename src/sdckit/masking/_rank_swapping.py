"""Rank swapping of numeric variables (methods.md M7).

*Classic* (Moore 1996, mu-ARGUS): per variable, sort the values; for each not yet swapped rank
``i`` (ascending) pick a partner uniformly among the not yet swapped ranks ``i < j <= i + w``
with ``w = floor(p n / 100)``; swap the two values.  Every value moves by at most ``w`` ranks
and the marginal distribution of each variable is kept exactly.

*sdcMicro* (``rankSwap``): the top and bottom ``top_percent`` / ``bottom_percent`` of the values
are replaced by their means and not swapped; the rank window is derived from ``p``, ``r0``
(bound on the correlation attenuation) or ``k0`` (bound on subset-mean changes); the remaining
values are swapped in descending order within the window.

Household-level variables (``Microdata.household_level``) are swapped between households: one
value per household is ranked and swapped as above (the window ``p`` is a percentage of the
households, ``details["window"]`` a number of household ranks), and each household's new value is
given to every member.  The distribution over households is kept exactly; over persons it is
not, since a value can move to a household of another size.

The partner search uses a Fenwick tree over the ranks that are still free, so each variable
takes O(n log n) time whatever the window size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numba
import numpy as np
import polars as pl

from sdckit._codes import encode_column, first_index
from sdckit._validation import check_choice, check_real, check_seed, column_list
from sdckit.errors import ColumnError, DataError, ParameterError
from sdckit.microdata import Microdata
from sdckit.protection import Columns, Options, Param, Protected, ProtectionMethod, Real, Seed
from sdckit.twins import function_twin

__all__ = ["RankSwapping", "rank_swapping"]


@numba.njit(cache=True)
def _swap_ranks(
    order: np.ndarray, free: np.ndarray, window: int, uniforms: np.ndarray
) -> np.ndarray:  # pragma: no cover - jit
    """Partner of every rank (itself when it keeps its value), ranks visited ascending.

    ``free[r]`` says whether rank ``r`` may take part; ``window`` is the largest rank distance.
    """
    n = order.shape[0]
    size = 1
    while size < n + 1:
        size <<= 1
    tree = np.zeros(size + 1, dtype=np.int64)
    for r in range(n):
        if free[r]:
            i = r + 1
            while i <= size:
                tree[i] += 1
                i += i & (-i)
    partner = np.arange(n)
    for r in range(n):
        if not free[r]:
            continue
        # remove r
        i = r + 1
        while i <= size:
            tree[i] -= 1
            i += i & (-i)
        free[r] = False
        hi = min(n - 1, r + window)
        # count of free ranks in (r, hi] = prefix(hi + 1) - prefix(r + 1)
        c_hi = 0
        i = hi + 1
        while i > 0:
            c_hi += tree[i]
            i -= i & (-i)
        c_lo = 0
        i = r + 1
        while i > 0:
            c_lo += tree[i]
            i -= i & (-i)
        count = c_hi - c_lo
        if count <= 0:
            continue
        k = c_lo + 1 + min(int(uniforms[r] * count), count - 1)  # k-th free rank overall
        pos = 0
        step = size
        while step > 0:
            nxt = pos + step
            if nxt <= size and tree[nxt] < k:
                pos = nxt
                k -= tree[nxt]
            step >>= 1
        j = pos  # zero-based rank
        i = j + 1
        while i <= size:
            tree[i] -= 1
            i += i & (-i)
        free[j] = False
        partner[r] = j
        partner[j] = r
    return partner


def _swap_variable(
    values: np.ndarray,
    missing: np.ndarray,
    method: str,
    p: float | None,
    r0: float | None,
    k0: float | None,
    top: float,
    bottom: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, int, int]:
    """Swapped values of one variable (missing values stay), the window and swaps made."""
    out = values.copy()
    valid = np.flatnonzero(~missing)
    n = len(valid)
    if n < 2:
        return out, 0, 0
    if method == "classic":
        order = valid[np.argsort(values[valid], kind="stable")]
        window = int(np.floor((p or 0.0) * n / 100.0))
        free = np.ones(n, dtype=np.bool_)
        sorted_values = values[order]
    else:  # sdcMicro: descending order, top/bottom coded tails excluded
        order = valid[np.argsort(-values[valid], kind="stable")]
        sorted_values = values[order].copy()
        n_top = int(np.floor(n * top / 100.0))
        n_bottom = int(np.floor(n * bottom / 100.0))
        free = np.ones(n, dtype=np.bool_)
        free[:n_top] = False
        free[n - n_bottom :] = False
        sorted_values = sorted_values.astype(np.float64)
        if n_top:
            sorted_values[:n_top] = sorted_values[:n_top].mean()
        if n_bottom:
            sorted_values[n - n_bottom :] = sorted_values[n - n_bottom :].mean()
        middle = sorted_values[free]
        n_mid = len(middle)
        if n_mid >= 2:
            delta = abs(middle[-1] - middle[0]) or 1.0
            if p is not None:
                fraction = p / 100.0
            elif k0 is not None:
                fraction = np.sqrt(8.0 / 3.0) * k0 * abs(middle.mean()) / delta
            else:
                fraction = np.sqrt(2.0 * middle.var(ddof=1) * (1.0 - (r0 or 0.95))) / delta
            window = max(int(np.floor(n_mid * fraction)) - 1, 0)
        else:
            window = 0
    uniforms = rng.random(n)
    partner = _swap_ranks(order, free, window, uniforms)
    if sorted_values.dtype != out.dtype:
        out = out.astype(sorted_values.dtype)
    out[order] = sorted_values[partner]
    return out, window, int(np.count_nonzero(partner != np.arange(n)))


def _swap_series(
    series: pl.Series,
    method: str,
    p: float | None,
    r0: float | None,
    k0: float | None,
    top: float,
    bottom: float,
    rng: np.random.Generator,
) -> tuple[pl.Series, int, int]:
    """One variable swapped (missing values stay), its rank window and the swaps made."""
    missing = series.is_null().to_numpy()
    if series.dtype.is_float():
        missing |= series.is_nan().fill_null(False).to_numpy()
    # values in their own type: integers are swapped exactly, never through floats
    values = series.fill_null(0).to_numpy(allow_copy=True).copy()
    new, window, swaps = _swap_variable(values, missing, method, p, r0, k0, top, bottom, rng)
    out = pl.Series(series.name, new)
    if missing.any():  # keep null or NaN exactly as the caller had it
        idx = np.flatnonzero(missing)
        out = out.cast(series.dtype).scatter(idx, series.gather(idx))
    return out, window, swaps


def _household_variables(md: Microdata, cols: Sequence[str]) -> set[str]:
    """The variables of ``cols`` that are household-level (swapped between households)."""
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


class RankSwapping(ProtectionMethod):
    """Rank swapping of numeric variables (see the module docstring).

    Parameters
    ----------
    variables : list of str, optional
        Variables to swap (default: the numeric variables).
    method : {"classic", "sdcmicro"}
    p : float, optional
        Rank window in percent of the number of records (default 5 in the classic method; in
        the sdcMicro variant give at most one of ``p``, ``r0`` and ``k0``).
    r0, k0 : float, optional
        sdcMicro's alternatives to ``p`` (default ``r0 = 0.95`` when neither ``p`` nor ``k0``
        is given in the sdcMicro variant).
    top_percent, bottom_percent : float, default 5.0
        sdcMicro variant: share of the largest / smallest values replaced by their mean.
    seed : int or numpy.random.Generator, optional
    """

    name: ClassVar[str] = "rank swapping"
    description: ClassVar[str] = (
        "Exchanges values of {variables} between records whose values are close in rank, "
        "keeping the distribution of each variable (rank swapping)."
    )
    stochastic: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Param]] = {
        "variables": Param(
            Columns(role="numeric", min_length=0),
            None,
            help="numeric variables to swap (default: the numeric variables)",
        ),
        "method": Param(
            Options("classic", "sdcmicro"),
            help="classic rank swapping, or sdcMicro's variant with top and bottom coding",
        ),
        "p": Param(
            Real(minimum=0.0, maximum=100.0),
            None,
            help="largest rank distance of a swap, in percent of the records (classic: 5)",
        ),
        "r0": Param(
            Real(minimum=0.0, maximum=1.0),
            None,
            help="sdcMicro variant: bound on the attenuation of correlations (instead of p)",
        ),
        "k0": Param(
            Real(minimum=0.0),
            None,
            help="sdcMicro variant: bound on the change of subset means (instead of p)",
        ),
        "top_percent": Param(
            Real(minimum=0.0, maximum=50.0),
            help="sdcMicro variant: percent of the largest values replaced by their mean",
        ),
        "bottom_percent": Param(
            Real(minimum=0.0, maximum=50.0),
            help="sdcMicro variant: percent of the smallest values replaced by their mean",
        ),
        "seed": Param(Seed(), None, help="seed of the random choice of swap partners"),
    }

    def __init__(
        self,
        *,
        variables: Sequence[str] | None = None,
        method: str = "classic",
        p: float | None = None,
        r0: float | None = None,
        k0: float | None = None,
        top_percent: float = 5.0,
        bottom_percent: float = 5.0,
        seed: Any = None,
    ) -> None:
        self.variables = variables
        self.method = method
        self.p = p
        self.r0 = r0
        self.k0 = k0
        self.top_percent = top_percent
        self.bottom_percent = bottom_percent
        self.seed = seed

    def _variables(self, md: Microdata) -> tuple[str, ...]:
        cols = column_list(self.variables, "variables") or md.numeric
        if not cols:
            raise ColumnError("Rank swapping needs numeric variables: pass variables=[...].")
        for c in cols:
            if c not in md.frame.columns:
                raise ColumnError(f"The variable {c!r} is not in the data.")
            if not md.frame.schema[c].is_numeric():
                raise ColumnError(f"Rank swapping needs numeric variables; {c!r} is not numeric.")
        return cols

    def _apply(self, md: Microdata) -> Protected:
        check_choice(self.method, "method", ("classic", "sdcmicro"))
        p = None if self.p is None else check_real(self.p, "p", minimum=0.0, maximum=100.0)
        r0 = None if self.r0 is None else check_real(self.r0, "r0", minimum=0.0, maximum=1.0)
        k0 = None if self.k0 is None else check_real(self.k0, "k0", minimum=0.0)
        if self.method == "classic":
            p = 5.0 if p is None else p
        elif sum(v is not None for v in (p, r0, k0)) > 1:
            raise ParameterError(
                "The sdcMicro variant of rank swapping takes one of 'p', 'r0' and 'k0'."
            )
        top = check_real(self.top_percent, "top_percent", minimum=0.0, maximum=50.0)
        bottom = check_real(self.bottom_percent, "bottom_percent", minimum=0.0, maximum=50.0)
        rng = check_seed(self.seed)
        updates, windows, swaps = [], {}, {}
        cols = self._variables(md)
        house = _household_variables(md, cols)
        member, first = _households(md) if house else (np.zeros(0, np.int64),) * 2
        for c in cols:
            series = md.frame.get_column(c)
            if c in house:  # one value per household, swapped among households
                unit, windows[c], swaps[c] = _swap_series(
                    series.gather(first), self.method, p, r0, k0, top, bottom, rng
                )
                updates.append(unit.gather(member))
                continue
            out, windows[c], swaps[c] = _swap_series(
                series, self.method, p, r0, k0, top, bottom, rng
            )
            updates.append(out)
        frame = md.frame.with_columns(updates)
        details: dict[str, Any] = {"window": windows, "swapped_values": swaps}
        if house:
            details["per_household"] = tuple(c for c in cols if c in house)
        return Protected.from_frames(md, frame, self, details=details)

    def verify(self, original: Microdata, protected: Protected) -> None:
        """Classic: marginals identical and no value moved further than the window.

        A household-level variable is swapped between households: it is constant within
        households, and the checks apply to the households' values (one per household).
        """
        cols = self._variables(original)
        house = _household_variables(original, cols)
        member, first = _households(original) if house else (np.zeros(0, np.int64),) * 2
        for c in cols:
            before = original.frame.get_column(c).cast(pl.Float64).to_numpy()
            after = protected.microdata.frame.get_column(c).cast(pl.Float64).to_numpy()
            self._require(
                np.array_equal(np.isnan(before), np.isnan(after)),
                f"missing values of {c!r} moved",
            )
            if c in house:
                self._require(
                    np.array_equal(after, after[first][member], equal_nan=True),
                    f"the household-level variable {c!r} differs within a household",
                )
                before, after = before[first], after[first]
            if self.method != "classic":
                continue
            valid = ~np.isnan(before)
            self._require(
                np.array_equal(np.sort(before[valid]), np.sort(after[valid])),
                f"the distribution of {c!r} changed",
            )
            window = protected.details["window"][c]
            sorted_values = np.sort(before[valid])
            lo = np.searchsorted(sorted_values, before[valid], side="left")
            hi = np.searchsorted(sorted_values, before[valid], side="right") - 1
            lo2 = np.searchsorted(sorted_values, after[valid], side="left")
            hi2 = np.searchsorted(sorted_values, after[valid], side="right") - 1
            # rank distance allowing for ties: the closest ranks of the two values
            distance = np.maximum(0, np.maximum(lo2 - hi, lo - hi2))
            self._require(
                distance.max(initial=0) <= window,
                f"a value of {c!r} moved further than the rank window",
            )

    @classmethod
    def contract_example(cls) -> tuple[ProtectionMethod, Microdata]:
        rng = np.random.default_rng(3)
        df = pl.DataFrame(
            {
                "income": rng.lognormal(10, 1, 200).round(0),
                "savings": rng.normal(1000, 300, 200),
                "region": rng.integers(1, 4, 200),
            }
        )
        return cls(p=10.0, seed=7), Microdata(df, keys=["region"], numeric=["income", "savings"])


@function_twin(RankSwapping)
def rank_swapping(data: Any, **params: Any) -> Protected:
    """Function twin of :class:`RankSwapping`.

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.microdata.Microdata`.
    variables, method, p, r0, k0, top_percent, bottom_percent, seed
        The parameters of :class:`RankSwapping`, by name (keyword arguments only).
    **roles
        The role keywords of :class:`~sdckit.microdata.Microdata` (``keys``, ``numeric``,
        ``weight``, ``strata``, ``household``, ...) for building it from a plain frame;
        given with a Microdata they replace its roles (see :mod:`sdckit.twins`).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"x": [float(v) for v in range(100)]})
    >>> out = rank_swapping(df, variables=["x"], p=5, seed=1)
    >>> sorted(out.data["x"].to_list()) == list(map(float, range(100)))
    True
    >>> max(abs(a - b) for a, b in zip(out.data["x"], df["x"])) <= 5
    True
    """

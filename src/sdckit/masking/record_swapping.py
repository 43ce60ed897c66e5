"""Targeted record swapping for census-type data, and its information loss on tables (M8).

Households are swapped between geographic areas: each pair of households exchanges all its
geography columns (every level of ``hierarchy``) and the ``carry_along`` variables, so all
members move together and every other variable of every person is unchanged.

The algorithm (after sdcMicro's ``recordSwap``, itself derived from ONS code):

1. At each level ``h`` of the hierarchy (an area at level ``h`` is the combination of the
   hierarchy columns down to ``h``), a person's count is the number of persons in the same area
   with the same values of the risk variables; the person is risky below ``k``.  A household is
   risky at ``h`` if one of its members is, and its sampling weight at ``h`` is the largest
   ``1 / count`` among its members.
2. From the highest level to the lowest, every risky household not yet swapped (in random
   order) is swapped with a donor household from a *different* area at that level, drawn with
   probability proportional to its weight among the households not yet swapped that match it on
   the first similarity profile offering one.  Households without any donor are reported.
3. At the lowest level, extra households are swapped so that the number of swapped households
   of each area (both members of a pair count, as in sdcMicro) reaches its target count.

The rate rule (checked by :meth:`TargetedRecordSwapping.verify`): with ``N_a`` households in a
lowest-level area ``a`` and ``t_a = swap_rate * N_a``, the target count ``c_a`` is ``t_a`` rounded
down or up at random (up with probability equal to the fraction), so totals are unbiased.  Let
``f_a`` be the number of households of ``a`` swapped in the risk stage.  Extra households of
``a`` are drawn while its count is below ``c_a``; their donors come from areas still below
their own target count, or else from areas whose count does not exceed ``t_a``.  Hence the
realised count ``n_a`` satisfies ``n_a <= max(f_a, t_a + 1)``, and ``n_a >= c_a`` unless the
area is listed as short of donors.  Where the risky households alone do not exceed the target
(``f_a <= t_a``) and donors exist, ``|n_a - t_a| <= 1``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import polars as pl

from sdckit._codes import encode_column, first_index, group_ids
from sdckit._results import Summary
from sdckit._validation import check_columns_exist, check_int, check_real, check_seed, column_list
from sdckit.errors import ColumnError, DataError, ParameterError
from sdckit.microdata import Microdata
from sdckit.protection import Protected, ProtectionMethod

if TYPE_CHECKING:
    from sdckit.utility.categorical import TableDistances

__all__ = [
    "SwapTableLoss",
    "TargetedRecordSwapping",
    "swap_table_loss",
    "targeted_record_swapping",
]

# Integer sampling weights: floor(_SCALE / count), exact in int64 sums for millions of households.
_SCALE = float(1 << 40)


class TargetedRecordSwapping(ProtectionMethod):
    """Targeted record swapping of households between geographic areas (see the module docstring).

    Parameters
    ----------
    hierarchy : list of str
        Geographic columns from the highest level to the lowest, e.g.
        ``["region", "district", "area"]``.  Every member of a household must share them.
    risk_variables : list of str, optional
        Variables defining the risk counts (default: the key variables minus the hierarchy and
        carry-along columns).
    k : int, default 3
        A person is risky at a level if fewer than ``k`` persons of its area share its values.
    swap_rate : float, default 0.05
        Share of households to swap in each lowest-level area, risky ones included.
    similarity : list of list of str, optional
        Household-level variables a donor must match, tried in order, e.g.
        ``[["household_size"], []]``.  Default ``[[]]``: any household.
    carry_along : list of str, optional
        Household-level variables that move with the geography (e.g. an area classification).
    seed : int or numpy.random.Generator, optional

    Notes
    -----
    ``Protected.details`` holds: ``pairs`` (polars frame: ``household``, ``donor``, ``level``
    -- the hierarchy column at which the pair was made, or ``"swap_rate"`` for extra swaps --
    and ``similarity_profile``, the index of the profile matched); ``without_donor``
    (``household``, ``level``: risky households for which no profile offered a donor at that
    level); ``rates`` (one row per lowest-level area: the hierarchy values, ``households``,
    ``target`` ``t_a``, ``target_count`` ``c_a``, ``risk_stage_swapped`` ``f_a``, ``swapped``
    ``n_a``, ``realised_rate`` and ``short_of_donors``); ``risky_households`` per level;
    ``swapped_households``; ``rate_stage_without_donor`` (households drawn for the rate that
    found no donor).  Missing geography values count as a value of their own.

    Examples
    --------
    >>> from sdckit.datasets import DEMO_ROLES, generate_census
    >>> df = generate_census(2_000, seed=1)
    >>> method = TargetedRecordSwapping(
    ...     hierarchy=["region", "district", "area"], risk_variables=["sex", "age_group"],
    ...     k=2, swap_rate=0.1, similarity=[["household_size"], []], seed=3)
    >>> out = method.apply(df, household="household_id")
    >>> out.details["without_donor"].height
    0
    >>> bool((out.data["age"] == df["age"]).all())
    True
    """

    name: ClassVar[str] = "targeted record swapping"
    stochastic: ClassVar[bool] = True

    def __init__(
        self,
        *,
        hierarchy: Sequence[str],
        risk_variables: Sequence[str] | None = None,
        k: int = 3,
        swap_rate: float = 0.05,
        similarity: Sequence[Sequence[str]] | None = None,
        carry_along: Sequence[str] | None = None,
        seed: Any = None,
    ) -> None:
        self.hierarchy = hierarchy
        self.risk_variables = risk_variables
        self.k = k
        self.swap_rate = swap_rate
        self.similarity = similarity
        self.carry_along = carry_along
        self.seed = seed

    # ------------------------------------------------------------------ parameters
    def _settings(
        self, md: Microdata
    ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], list[tuple[str, ...]]]:
        md.require(household=True, what="Targeted record swapping")
        columns = md.frame.columns
        hierarchy = column_list(self.hierarchy, "hierarchy")
        if not hierarchy:
            raise ParameterError(
                "The 'hierarchy' parameter needs at least one geographic column, from the "
                "highest level to the lowest."
            )
        check_columns_exist(hierarchy, columns, "hierarchy")
        carry = column_list(self.carry_along, "carry_along")
        check_columns_exist(carry, columns, "carry_along")
        moved = set(hierarchy) | set(carry)
        if len(moved) != len(hierarchy) + len(carry):
            raise ParameterError("A column cannot be both in 'hierarchy' and in 'carry_along'.")
        if md.household in moved:
            raise ParameterError("The household id cannot be a geography or carry-along column.")
        if self.risk_variables is None:
            risk = tuple(c for c in md.keys if c not in moved)
        else:
            risk = column_list(self.risk_variables, "risk_variables")
            check_columns_exist(risk, columns, "risk variable")
        if not risk:
            raise ColumnError(
                "Targeted record swapping needs risk variables: pass risk_variables=[...] or "
                "key variables outside the hierarchy."
            )
        if moved & set(risk):
            raise ParameterError(
                "A risk variable cannot be a geography or carry-along column; the geography "
                "is part of every risk count already."
            )
        profiles = [[]] if self.similarity is None else list(self.similarity)
        if not profiles or isinstance(self.similarity, str):
            raise ParameterError(
                "The 'similarity' parameter takes a list of lists of column names, e.g. "
                "[['household_size'], []]."
            )
        sims = [column_list(p, "similarity") for p in profiles]
        for p in sims:
            check_columns_exist(p, columns, "similarity")
        check_int(self.k, "k", minimum=1)
        check_real(self.swap_rate, "swap_rate", minimum=0.0, maximum=1.0)
        return hierarchy, risk, carry, sims

    # ------------------------------------------------------------------ preparation
    @staticmethod
    def _households(md: Microdata) -> tuple[np.ndarray, int, np.ndarray]:
        """Household index per record, number of households, first record of each household."""
        codes, _ = encode_column(md.frame.get_column(md.household))
        hh, n_hh = group_ids(codes[:, None])
        return hh, n_hh, first_index(hh, n_hh)

    @staticmethod
    def _household_codes(
        md: Microdata, cols: Sequence[str], hh: np.ndarray, first: np.ndarray, what: str
    ) -> np.ndarray:
        """Codes of household-level columns (one row per household); raise if they vary."""
        out = np.zeros((len(first), len(cols)), dtype=np.int32)
        for j, c in enumerate(cols):
            codes, _ = encode_column(md.frame.get_column(c))
            if not np.array_equal(codes, codes[first][hh]):
                raise DataError(
                    f"The {what} column {c!r} differs between members of a household; it must "
                    "be a household-level variable (the same for every member)."
                )
            out[:, j] = codes[first]
        return out

    @staticmethod
    def _risk(
        geo: np.ndarray, risk_codes: np.ndarray, level: int, k: int, hh: np.ndarray, n_hh: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per household at one level: risky flag and integer sampling weight."""
        both = np.hstack([geo[:, : level + 1], risk_codes])
        ids, n_ids = group_ids(both)
        counts = np.bincount(ids, minlength=n_ids)[ids]
        smallest = np.full(n_hh, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(smallest, hh, counts)
        weight = np.floor(_SCALE / smallest).astype(np.int64)
        return smallest < k, weight

    @staticmethod
    def _layout(
        sim: list[np.ndarray], area: np.ndarray, n_area: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per profile: households sorted by (group, area), positions, group and area bounds."""
        n_hh = len(area)
        n_q = len(sim)
        order = np.empty((n_q, n_hh), dtype=np.int64)
        pos = np.empty((n_q, n_hh), dtype=np.int64)
        bounds = np.empty((n_q, n_hh, 4), dtype=np.int64)
        for q, group in enumerate(sim):
            key = group.astype(np.int64) * n_area + area
            o = np.argsort(key, kind="stable")
            order[q] = o
            pos[q, o] = np.arange(n_hh)
            sorted_group, sorted_key = group[o], key[o]
            bounds[q, :, 0] = np.searchsorted(sorted_group, group, side="left")
            bounds[q, :, 1] = np.searchsorted(sorted_group, group, side="right")
            bounds[q, :, 2] = np.searchsorted(sorted_key, key, side="left")
            bounds[q, :, 3] = np.searchsorted(sorted_key, key, side="right")
        return order, pos, bounds

    # ------------------------------------------------------------------ contract
    def _apply(self, md: Microdata) -> Protected:
        from sdckit.masking._record_swapping_kernel import rate_stage, risk_stage

        hierarchy, risk, carry, profiles = self._settings(md)
        k = check_int(self.k, "k", minimum=1)
        swap_rate = check_real(self.swap_rate, "swap_rate", minimum=0.0, maximum=1.0)
        rng = check_seed(self.seed)
        hh, n_hh, first = self._households(md)
        geo_hh = self._household_codes(md, hierarchy, hh, first, "hierarchy")
        self._household_codes(md, carry, hh, first, "carry_along")
        geo = geo_hh[hh]
        risk_codes = np.column_stack(
            [encode_column(md.frame.get_column(c))[0] for c in risk]
        ).astype(np.int32)
        sim = [
            group_ids(self._household_codes(md, p, hh, first, "similarity"))[0] for p in profiles
        ]
        n_levels = len(hierarchy)
        partner = np.arange(n_hh, dtype=np.int64)
        swapped = np.zeros(n_hh, dtype=np.bool_)
        pairs = np.empty((n_hh // 2 + 1, 4), dtype=np.int64)
        n_pairs = 0
        uniforms = rng.random(2 * n_hh + 8)
        cursor = 0
        no_donor = np.zeros((n_levels + 1, n_hh), dtype=np.bool_)
        risky_levels = np.zeros((n_levels, n_hh), dtype=np.bool_)
        area = np.zeros(n_hh, dtype=np.int64)
        n_area = 1
        layout = None
        weight = np.zeros(n_hh, dtype=np.int64)
        for level in range(n_levels):
            area, n_area = group_ids(geo_hh, range(level + 1))
            risky, weight = self._risk(geo, risk_codes, level, k, hh, n_hh)
            risky_levels[level] = risky
            layout = self._layout(sim, area, n_area)
            candidates = rng.permutation(np.flatnonzero(risky)).astype(np.int64)
            n_pairs, cursor = risk_stage(
                candidates, *layout, weight, level, partner, swapped, pairs, n_pairs,
                no_donor[level], uniforms, cursor,
            )  # fmt: skip
        n_households = np.bincount(area, minlength=n_area)
        risk_stage_swapped = np.bincount(area, weights=swapped, minlength=n_area).astype(np.int64)
        target = swap_rate * n_households
        floor = np.floor(target + 1e-9)
        fraction = np.clip(target - floor, 0.0, None)
        target_count = (floor + (rng.random(n_area) < fraction - 1e-9)).astype(np.int64)
        n_swapped = risk_stage_swapped.copy()
        members = np.argsort(area, kind="stable").astype(np.int64)
        area_start = np.concatenate([[0], np.cumsum(n_households)]).astype(np.int64)
        assert layout is not None
        short = np.zeros(n_area, dtype=np.bool_)
        n_pairs, cursor = rate_stage(
            area, area_start, members, rng.permutation(n_area).astype(np.int64), target_count,
            target, n_swapped, *layout, weight, n_levels, partner, swapped, pairs, n_pairs,
            no_donor[n_levels], short, uniforms, cursor,
        )  # fmt: skip
        source = first[partner][hh]
        moved = md.frame.select([*hierarchy, *carry])[source]
        frame = md.frame.with_columns(moved.get_columns())
        details = self._details(
            md, hierarchy, first, pairs[:n_pairs], no_donor, risky_levels, area, n_households,
            target, target_count, risk_stage_swapped, n_swapped, short,
        )  # fmt: skip
        return Protected.from_frames(md, frame, self, details=details)

    def _details(
        self,
        md: Microdata,
        hierarchy: tuple[str, ...],
        first: np.ndarray,
        pairs: np.ndarray,
        no_donor: np.ndarray,
        risky_levels: np.ndarray,
        area: np.ndarray,
        n_households: np.ndarray,
        target: np.ndarray,
        target_count: np.ndarray,
        risk_stage_swapped: np.ndarray,
        n_swapped: np.ndarray,
        short: np.ndarray,
    ) -> dict[str, Any]:
        ids = md.frame.get_column(md.household).gather(first)
        stages = [*hierarchy, "swap_rate"]
        level_names = pl.Series(stages, dtype=pl.String)
        pair_frame = pl.DataFrame(
            {
                "household": ids.gather(pairs[:, 0]),
                "donor": ids.gather(pairs[:, 1]),
                "level": level_names.gather(pairs[:, 2]),
                "similarity_profile": pairs[:, 3],
            }
        )
        lvl, hh_idx = np.nonzero(no_donor[: len(hierarchy)])
        without = pl.DataFrame({"household": ids.gather(hh_idx), "level": level_names.gather(lvl)})
        area_first = first_index(area, len(n_households))
        geo = md.frame.select(hierarchy)[first[area_first]]
        rates = geo.with_columns(
            pl.Series("households", n_households),
            pl.Series("target", target),
            pl.Series("target_count", target_count),
            pl.Series("risk_stage_swapped", risk_stage_swapped),
            pl.Series("swapped", n_swapped),
            pl.Series("realised_rate", n_swapped / np.maximum(n_households, 1)),
            pl.Series("short_of_donors", short),
        )
        return {
            "pairs": pair_frame,
            "without_donor": without,
            "rates": rates,
            "risky_households": {
                name: int(risky_levels[j].sum()) for j, name in enumerate(hierarchy)
            },
            "swapped_households": int(2 * len(pairs)),
            "rate_stage_without_donor": int(no_donor[len(hierarchy)].sum()),
        }

    def verify(self, original: Microdata, protected: Protected) -> None:
        """Risky households swapped or reported, households whole, rate rule, rest unchanged.

        Also checks, independently of the kernel, that an area reported short of donors has no
        unswapped household with a possible donor left (an unswapped household of the same
        similarity group in another area whose count does not exceed its target).
        """
        hierarchy, risk, carry, profiles = self._settings(original)
        k = check_int(self.k, "k", minimum=1)
        before, after = original.frame, protected.microdata.frame
        hid = original.household
        assert before.height == after.height, "record swapping changed the number of records"
        for c in before.columns:
            if c not in hierarchy and c not in carry:
                assert before.get_column(c).equals(after.get_column(c)), f"{c} changed"
        whole = after.group_by(hid).agg(pl.struct([*hierarchy, *carry]).n_unique().alias("u"))
        assert whole["u"].max() == 1, "a household was split between areas"
        details = protected.details
        without = details["without_donor"]
        for level, col in enumerate(hierarchy):
            prefix = list(hierarchy[: level + 1])
            counts = before.select(hid, pl.len().over([*prefix, *risk]).alias("count"))
            risky = counts.filter(pl.col("count") < k)[hid].unique()
            moved = _moved_households(before, after, hid, prefix)
            listed = without.filter(pl.col("level") == col)["household"]
            unresolved = risky.filter(
                ~risky.is_in(moved.implode()) & ~risky.is_in(listed.implode())
            )
            assert unresolved.len() == 0, f"a risky household at level {col} was not swapped"
        rates = details["rates"]
        t = rates["target"].to_numpy()
        n = rates["swapped"].to_numpy()
        f = rates["risk_stage_swapped"].to_numpy()
        c = rates["target_count"].to_numpy()
        short = rates["short_of_donors"].to_numpy()
        assert np.all(c >= np.floor(t + 1e-9)) and np.all(c <= np.ceil(t - 1e-9)), "target count"
        assert np.all(n <= np.maximum(f, t + 1 + 1e-9)), "an area was swapped above its target"
        assert np.all(short | (n >= c)), "an area below its target is not reported"
        lowest = list(hierarchy)
        moved = _moved_households(before, after, hid, lowest)
        households = before.unique(hid, keep="first", maintain_order=True).with_columns(
            pl.col(hid).is_in(moved.implode()).alias("_swapped")
        )
        per_area = households.filter("_swapped").group_by(lowest).len("_n")
        joined = rates.join(per_area, on=lowest, how="left", nulls_equal=True)
        assert (joined["_n"].fill_null(0) == joined["swapped"]).all(), "swap counts differ"
        if short.any():
            _check_short(households, rates, lowest, profiles)

    @classmethod
    def contract_example(cls) -> tuple[ProtectionMethod, Microdata]:
        from sdckit.datasets import generate_census

        df = generate_census(600, seed=4).select(
            "household_id", "region", "district", "area", "urban_rural", "household_size",
            "sex", "age_group", "income",
        )  # fmt: skip
        md = Microdata(df, keys=["sex", "age_group"], numeric=["income"], household="household_id")
        method = cls(
            hierarchy=["region", "district", "area"],
            k=2,
            swap_rate=0.1,
            similarity=[["household_size"], []],
            carry_along=["urban_rural"],
            seed=5,
        )
        return method, md


def _moved_households(
    before: pl.DataFrame, after: pl.DataFrame, hid: str, columns: list[str]
) -> pl.Series:
    """Household ids whose values on ``columns`` changed."""
    old = before.select(pl.struct(columns)).to_series()
    new = after.select(pl.struct(columns)).to_series()
    return before[hid].filter(old.ne_missing(new)).unique()


def _check_short(
    households: pl.DataFrame,
    rates: pl.DataFrame,
    lowest: list[str],
    profiles: list[tuple[str, ...]],
) -> None:
    """No unswapped household of a short area has a possible donor left."""
    short_areas = rates.filter("short_of_donors").select(lowest)
    open_areas = rates.filter(pl.col("swapped") <= pl.col("target") + 1e-9).select(lowest)
    unswapped = households.filter(~pl.col("_swapped"))
    stuck = unswapped.join(short_areas, on=lowest, how="semi", nulls_equal=True)
    pool = unswapped.join(open_areas, on=lowest, how="semi", nulls_equal=True)
    for profile in profiles:
        by = list(profile)
        keys = list(dict.fromkeys([*by, *lowest]))
        own = pool.group_by(keys).len("_own")
        check = stuck.join(own, on=keys, how="left", nulls_equal=True)
        if by:
            total = pool.group_by(by).len("_total")
            check = check.join(total, on=by, how="left", nulls_equal=True)
        else:
            check = check.with_columns(pl.lit(pool.height).alias("_total"))
        outside = check["_total"].fill_null(0) - check["_own"].fill_null(0)
        assert (outside == 0).all(), "an area is reported short of donors but a donor exists"


def targeted_record_swapping(
    data: Any,
    *,
    hierarchy: Sequence[str],
    household: str | None = None,
    seed: Any = None,
    **params: Any,
) -> Protected:
    """Function twin of :class:`TargetedRecordSwapping`.

    Roles (``household``, ``keys``, ...) may be passed with the parameters.

    Examples
    --------
    >>> from sdckit.datasets import generate_census
    >>> df = generate_census(1_000, seed=2)
    >>> out = targeted_record_swapping(
    ...     df, hierarchy=["region", "district"], household="household_id",
    ...     risk_variables=["sex", "age_group"], k=2, swap_rate=0.05, seed=1)
    >>> out.details["pairs"].columns
    ['household', 'donor', 'level', 'similarity_profile']
    """
    role_names = ("keys", "numeric", "weight", "strata", "sensitive")
    roles = {k: params.pop(k) for k in list(params) if k in role_names}
    method = TargetedRecordSwapping(hierarchy=hierarchy, seed=seed, **params)
    return method.apply(data, household=household, **roles)


# ---------------------------------------------------------------------- information loss on tables
_PROBS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0)
_METRICS = ("abs_diff", "rel_abs_diff", "abs_sqrt_diff")


@dataclass(frozen=True, repr=False)
class SwapTableLoss:
    """Information loss on frequency tables after swapping (sdcMicro ``infoLoss``, M8).

    Attributes
    ----------
    table_vars : tuple of str
        The variables of the table.
    cells : polars.DataFrame
        One row per cell of the table and of every margin (every subset of ``table_vars``,
        down to the grand total): ``margin`` (the variables of that table joined by " x ", or
        "total"), the variables (null where summed over), ``original`` and ``swapped`` counts,
        ``abs_diff = |o - s|``, ``rel_abs_diff = |o - s| / o`` (0 where ``o = 0``) and
        ``abs_sqrt_diff = |sqrt(o) - sqrt(s)|``.  Cells empty in both files are not listed.
    measures : polars.DataFrame
        Quantiles (``statistic`` "q0.50" ...) and the mean of the three differences over all
        cells.
    false_zeros, false_non_zeros : int
        Cells (of all margins) with ``o > 0, s = 0`` and with ``o = 0, s > 0``.
    distances : TableDistances
        :func:`sdckit.utility.table_distances` of the full (innermost) table.
    """

    table_vars: tuple[str, ...]
    cells: pl.DataFrame
    measures: pl.DataFrame
    false_zeros: int
    false_non_zeros: int
    distances: TableDistances

    def to_frame(self) -> pl.DataFrame:
        """One row per table cell (polars), see :attr:`cells`."""
        return self.cells

    def summary(self) -> Summary:
        """Means and largest differences, false zeros and non-zeros, Hellinger distance."""
        mean = self.measures.filter(pl.col("statistic") == "mean").row(0, named=True)
        top = self.measures.filter(pl.col("statistic") == "q1.00").row(0, named=True)
        rows: list[tuple[str, Any]] = [("cells", self.cells.height)]
        for m in _METRICS:
            rows += [(f"mean {m}", mean[m]), (f"max {m}", top[m])]
        rows += [
            ("false zeros", self.false_zeros),
            ("false non-zeros", self.false_non_zeros),
            ("Hellinger distance (full table)", self.distances.hellinger),
        ]
        title = f"Table information loss after swapping: {' x '.join(self.table_vars)}"
        return Summary(title, rows)

    def __repr__(self) -> str:
        return f"SwapTableLoss(table_vars={list(self.table_vars)}, cells={self.cells.height})"


def swap_table_loss(
    original: Any, swapped: Any, table_vars: Sequence[str], *, probs: Sequence[float] = _PROBS
) -> SwapTableLoss:
    """Compare frequency tables of the original and the swapped file over all margins.

    Parameters
    ----------
    original, swapped : DataFrame, Microdata or Protected
    table_vars : list of str
        Variables of the table, e.g. ``["area", "sex", "age_group"]``.
    probs : list of float
        Quantiles reported in :attr:`SwapTableLoss.measures`.

    Examples
    --------
    >>> import polars as pl
    >>> o = pl.DataFrame({"area": [1, 1, 2, 2], "sex": ["f", "m", "f", "f"]})
    >>> s = pl.DataFrame({"area": [1, 2, 2, 2], "sex": ["f", "m", "f", "f"]})
    >>> loss = swap_table_loss(o, s, ["area", "sex"])
    >>> loss.false_zeros, loss.false_non_zeros, loss.cells.height
    (1, 1, 9)
    """
    from sdckit.utility import table_distances
    from sdckit.utility._inputs import paired_frames

    left, right, cols, _ = paired_frames(original, swapped, column_list(table_vars, "table_vars"),
                                         "keys")  # fmt: skip
    reserved = {"margin", "original", "swapped", *_METRICS}
    if reserved & set(cols):
        raise ColumnError(
            f"The table variables may not be named {', '.join(sorted(reserved))}; rename them."
        )
    qs = [check_real(p, "probs", minimum=0.0, maximum=1.0) for p in probs]
    parts = []
    for size in range(len(cols), -1, -1):
        for subset in combinations(cols, size):
            by = list(subset)
            if by:
                o = left.group_by(by).len("original")
                s = right.group_by(by).len("swapped")
                t = o.join(s, on=by, how="full", coalesce=True, nulls_equal=True)
            else:
                t = pl.DataFrame({"original": [left.height], "swapped": [right.height]})
            label = " x ".join(by) if by else "total"
            parts.append(t.with_columns(pl.lit(label).alias("margin")))
    cells = pl.concat(parts, how="diagonal_relaxed").select(
        "margin", *cols, pl.col("original", "swapped").fill_null(0).cast(pl.Int64)
    )
    o = cells["original"].to_numpy().astype(np.float64)
    s = cells["swapped"].to_numpy().astype(np.float64)
    absd = np.abs(o - s)
    reld = np.divide(absd, o, out=np.zeros_like(absd), where=o > 0)
    sqrtd = np.abs(np.sqrt(o) - np.sqrt(s))
    cells = cells.with_columns(
        pl.Series("abs_diff", absd),
        pl.Series("rel_abs_diff", reld),
        pl.Series("abs_sqrt_diff", sqrtd),
    )
    values = {"abs_diff": absd, "rel_abs_diff": reld, "abs_sqrt_diff": sqrtd}
    measures = pl.DataFrame(
        {
            "statistic": [f"q{p:.2f}" for p in qs] + ["mean"],
            **{m: [*np.quantile(v, qs).tolist(), float(v.mean())] for m, v in values.items()},
        }
    )
    if "q1.00" not in measures["statistic"]:
        measures = measures.vstack(
            pl.DataFrame(
                {"statistic": ["q1.00"], **{m: [float(v.max())] for m, v in values.items()}}
            )
        )
    inner = parts[0]
    inner_o = inner["original"].fill_null(0).to_numpy()
    inner_s = inner["swapped"].fill_null(0).to_numpy()
    return SwapTableLoss(
        table_vars=cols,
        cells=cells,
        measures=measures,
        false_zeros=int(np.count_nonzero((o > 0) & (s == 0))),
        false_non_zeros=int(np.count_nonzero((o == 0) & (s > 0))),
        distances=table_distances(inner_o, inner_s),
    )

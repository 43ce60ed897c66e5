"""Targeted record swapping for census-type data (M8).

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

The information loss on frequency tables after swapping is measured by ``swap_table_loss`` of
the utility measures.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import polars as pl

from sdckit._codes import encode_column, first_index, group_ids
from sdckit._validation import check_columns_exist, check_int, check_real, check_seed, column_list
from sdckit.errors import ColumnError, DataError, ParameterError
from sdckit.microdata import Microdata
from sdckit.protection import (
    Columns,
    Integer,
    ListOf,
    Param,
    Protected,
    ProtectionMethod,
    Real,
    Seed,
    require,
)
from sdckit.twins import function_twin

__all__ = ["TargetedRecordSwapping", "targeted_record_swapping"]

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
    >>> import numpy as np, polars as pl
    >>> rng = np.random.default_rng(1)
    >>> size = rng.integers(1, 5, 400)  # 400 households of 1 to 4 persons in 8 areas
    >>> hh = np.repeat(np.arange(400), size)
    >>> area = rng.integers(0, 8, 400)[hh]
    >>> df = pl.DataFrame({"household_id": hh, "region": area // 4, "district": area // 2,
    ...                    "area": area, "household_size": size[hh],
    ...                    "sex": rng.integers(1, 3, len(hh)),
    ...                    "age_group": rng.integers(1, 6, len(hh))})
    >>> method = TargetedRecordSwapping(
    ...     hierarchy=["region", "district", "area"], risk_variables=["sex", "age_group"],
    ...     k=2, swap_rate=0.1, similarity=[["household_size"], []], seed=3)
    >>> out = method.apply(df, household="household_id")
    >>> out.details["without_donor"].height
    0
    >>> bool((out.data["sex"] == df["sex"]).all())
    True
    """

    name: ClassVar[str] = "targeted record swapping"
    description: ClassVar[str] = (
        "Exchanges the geography and carried-along variables ({variables}) of households at "
        "risk of re-identification, and of a share of the other households, with those of "
        "similar households in other areas (targeted record swapping)."
    )
    stochastic: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Param]] = {
        "hierarchy": Param(
            Columns(), help="geographic variables, from the highest level to the lowest"
        ),
        "risk_variables": Param(
            Columns(role="keys"),
            None,
            help="variables of the risk counts (default: the keys outside the geography)",
        ),
        "k": Param(
            Integer(minimum=1),
            help="a person is at risk when fewer than k persons of its area share its values",
        ),
        "swap_rate": Param(
            Real(minimum=0.0, maximum=1.0),
            help="share of the households of each area to swap, households at risk included",
        ),
        "similarity": Param(
            ListOf(Columns(min_length=0), min_length=1),
            None,
            help="household variables a donor must match, profiles tried in order",
        ),
        "carry_along": Param(
            Columns(min_length=0),
            None,
            help="household variables that move with the geography",
        ),
        "seed": Param(Seed(), None, help="seed of the random choice of households and donors"),
    }

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
        if layout is None:  # (excluded by _settings: the hierarchy has at least one level)
            raise ParameterError("The 'hierarchy' parameter needs at least one column.")
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
        self._require(before.height == after.height, "the number of records changed")
        for c in before.columns:
            if c not in hierarchy and c not in carry:
                self._require(
                    before.get_column(c).equals(after.get_column(c)),
                    f"the variable {c!r} changed although it is not swapped",
                )
        whole = after.group_by(hid).agg(pl.struct([*hierarchy, *carry]).n_unique().alias("u"))
        self._require(whole["u"].max() == 1, "a household was split between areas")
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
            self._require(
                unresolved.len() == 0,
                f"a household at risk at the level {col!r} was neither swapped nor reported",
            )
        rates = details["rates"]
        t = rates["target"].to_numpy()
        n = rates["swapped"].to_numpy()
        f = rates["risk_stage_swapped"].to_numpy()
        c = rates["target_count"].to_numpy()
        short = rates["short_of_donors"].to_numpy()
        self._require(
            np.all(c >= np.floor(t + 1e-9)) and np.all(c <= np.ceil(t - 1e-9)),
            "a target count is not the target rounded down or up",
        )
        self._require(
            np.all(n <= np.maximum(f, t + 1 + 1e-9)), "an area was swapped above its target"
        )
        self._require(np.all(short | (n >= c)), "an area below its target count is not reported")
        lowest = list(hierarchy)
        moved = _moved_households(before, after, hid, lowest)
        households = before.unique(hid, keep="first", maintain_order=True).with_columns(
            pl.col(hid).is_in(moved.implode()).alias("_swapped")
        )
        per_area = households.filter("_swapped").group_by(lowest).len("_n")
        joined = rates.join(per_area, on=lowest, how="left", nulls_equal=True)
        self._require(
            (joined["_n"].fill_null(0) == joined["swapped"]).all(),
            "the reported swap counts differ from the households moved",
        )
        if short.any():
            _check_short(households, rates, lowest, profiles)

    @classmethod
    def contract_example(cls) -> tuple[ProtectionMethod, Microdata]:
        """About 400 persons in 150 households of a small generated census (12 areas)."""
        df = _small_census(np.random.default_rng(4), n_households=150)
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


def _small_census(rng: np.random.Generator, n_households: int) -> pl.DataFrame:
    """Persons in households in 2 regions x 2 districts x 3 areas (for the contract example).

    ``urban_rural`` belongs to the area, ``household_size`` to the household; ``sex``,
    ``age_group`` and ``income`` to the person.
    """
    area_codes = [f"r{r}d{d}a{a}" for r in (1, 2) for d in (1, 2) for a in (1, 2, 3)]
    urban = np.array(["urban", "rural"])[rng.integers(0, 2, len(area_codes))]
    size = rng.integers(1, 6, n_households)
    area = rng.integers(0, len(area_codes), n_households)
    hh = np.repeat(np.arange(n_households), size)
    codes = np.array(area_codes)[area[hh]]
    n = len(hh)
    return pl.DataFrame(
        {
            "household_id": hh + 1,
            "region": [c[:2] for c in codes],
            "district": [c[:4] for c in codes],
            "area": codes,
            "urban_rural": urban[area[hh]],
            "household_size": size[hh],
            "sex": rng.integers(1, 3, n),
            "age_group": rng.choice(
                ["0-14", "15-29", "30-44", "45-64", "65+", "85+"],
                n,
                p=[0.2, 0.2, 0.25, 0.25, 0.09, 0.01],
            ),
            "income": rng.lognormal(10.0, 0.6, n).round(0),
        }
    )


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
        require(
            (outside == 0).all(),
            "TargetedRecordSwapping: an area is reported short of donors but a donor exists",
        )


@function_twin(TargetedRecordSwapping)
def targeted_record_swapping(data: Any, **params: Any) -> Protected:
    """Function twin of :class:`TargetedRecordSwapping`.

    Roles (``household``, ``keys``, ...) may be passed with the parameters.

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.microdata.Microdata`.
    hierarchy, risk_variables, k, swap_rate, similarity, carry_along, seed
        The parameters of :class:`TargetedRecordSwapping`, by name (keyword arguments only).
    **roles
        The role keywords of :class:`~sdckit.microdata.Microdata` (``keys``, ``numeric``,
        ``weight``, ``strata``, ``household``, ...) for building it from a plain frame;
        given with a Microdata they replace its roles (see :mod:`sdckit.twins`).

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> rng = np.random.default_rng(2)
    >>> hh = np.repeat(np.arange(300), rng.integers(1, 4, 300))
    >>> area = rng.integers(0, 6, 300)[hh]
    >>> df = pl.DataFrame({"household_id": hh, "region": area // 3, "district": area,
    ...                    "sex": rng.integers(1, 3, len(hh)),
    ...                    "age_group": rng.integers(1, 6, len(hh))})
    >>> out = targeted_record_swapping(
    ...     df, hierarchy=["region", "district"], household="household_id",
    ...     risk_variables=["sex", "age_group"], k=2, swap_rate=0.05, seed=1)
    >>> out.details["pairs"].columns
    ['household', 'donor', 'level', 'similarity_profile']
    """

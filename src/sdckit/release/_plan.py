"""The release plan: what happens to every column of the input when the file is released.

Every column has one release role, taken from the roles of the :class:`~sdckit.Microdata` and
the plan:

* key variables, numeric variables, the weight, the strata and the sensitive variables are
  released (protected by the steps);
* variables linked to a key are released and follow the key's suppression;
* household-level variables are released and are kept constant within households;
* direct identifiers are never released;
* the household id is replaced by a new random id (``household_id="new"``, the default) or
  dropped (``"drop"``);
* ``keep`` lists the only columns to release, or ``drop`` the columns to leave out;
* every other column is *not mentioned*: it is released as it is, and the release check decides
  whether it gives back a protected value (then the file is not written, and the message names
  the column and the two ways out: declare it linked, or drop it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from sdckit._validation import check_choice, check_columns_exist, check_seed, column_list
from sdckit.errors import ColumnError, ParameterError
from sdckit.microdata import Microdata

__all__ = ["ReleasePlan"]


@dataclass(frozen=True)
class ReleasePlan:
    """What is released of each column.

    Parameters
    ----------
    keep : list of str, optional
        Release only these columns (the household id is added when ``household_id="new"``).
    drop : list of str, optional
        Leave these columns out.
    household_id : {"new", "drop"}, default "new"
        Replace the household id by a new random id (members stay linked, the register id is
        not released), or leave it out.
    order : {"shuffled", "original"}, default "shuffled"
        Write the records in a random order (the position of a record in the input, often
        sorted by a register id, is not released) or in the input's order.
    household_size : str, optional
        A household size column released as the number of members of each household in the
        released file.  While the household id is released, counting members gives the size
        back, so a suppressed or recoded size protects nothing: the plan shows it as it is
        (consistent with the members) and the check counts it as known; protect the other
        keys instead (local suppression with the size among its ``fixed`` keys).

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit import Microdata
    >>> df = pl.DataFrame({"pid": [1, 2, 3, 4], "h": [7, 7, 9, 9], "sex": [1, 2, 1, 2],
    ...                    "note": ["a", "b", "c", "d"]})
    >>> md = Microdata(df, keys=["sex"], household="h", identifiers=["pid"])
    >>> plan = ReleasePlan(drop=["note"])
    >>> plan.roles(md)["pid"], plan.roles(md)["h"], plan.released_columns(md)
    ('direct identifier', 'household id (new random id)', ['h', 'sex'])
    >>> released = plan.apply(md, seed=1)
    >>> released["h"].n_unique(), released["h"].to_list() == [7, 7, 9, 9]
    (2, False)
    """

    keep: tuple[str, ...] | None = None
    drop: tuple[str, ...] = ()
    household_id: str = "new"
    order: str = "shuffled"
    household_size: str | None = None

    def __post_init__(self) -> None:
        keep = None if self.keep is None else column_list(self.keep, "keep")
        object.__setattr__(self, "keep", keep)
        object.__setattr__(self, "drop", column_list(self.drop, "drop"))
        check_choice(self.household_id, "household_id", ("new", "drop"))
        check_choice(self.order, "order", ("shuffled", "original"))
        if keep is not None and self.drop:
            raise ParameterError(
                "Give either 'keep' (the columns to release) or 'drop' (the columns to leave "
                "out), not both."
            )

    # ------------------------------------------------------------------ roles
    def validate(self, md: Microdata) -> None:
        """Check the plan against the file's columns and roles."""
        columns = list(md.frame.columns)
        check_columns_exist(self.keep or (), columns, "kept")
        check_columns_exist(self.drop, columns, "dropped")
        if self.household_size is not None:
            check_columns_exist([self.household_size], columns, "household size")
            if md.household is None:
                raise ColumnError(
                    "The release plan's 'household_size' is counted from the household id: "
                    "give the data a household role (household=...)."
                )
        for col in self.keep or ():
            if col in md.identifiers:
                raise ColumnError(
                    f"The column {col!r} is a direct identifier and is never released; take it "
                    "out of 'keep'."
                )

    def roles(self, md: Microdata) -> dict[str, str]:
        """The release role of every column of the file."""
        self.validate(md)
        out: dict[str, str] = {}
        hh_level = set(md.household_level)
        for col in md.frame.columns:
            if col in md.identifiers:
                role = "direct identifier"
            elif col == md.household:
                role = (
                    "household id (new random id)" if self.household_id == "new"
                    else "household id (dropped)"
                )  # fmt: skip
            elif col in self.drop or (self.keep is not None and col not in self.keep):
                role = "dropped"
            elif col in md.keys:
                role = "key"
            elif col in md.linked:
                role = f"linked to {md.linked[col]}"
            elif col in md.numeric:
                role = "numeric"
            elif col == md.weight:
                role = "weight"
            elif col == md.strata:
                role = "strata"
            elif col in md.sensitive:
                role = "sensitive"
            elif self.keep is not None:
                role = "released"
            elif col in hh_level:
                role = "household-level"
            else:
                role = "not mentioned"
            if col in hh_level and role not in ("dropped", "household-level"):
                role += " (household-level)"
            out[col] = role
        return out

    def released_columns(self, md: Microdata) -> list[str]:
        """The columns of the released file, in the input's order."""
        roles = self.roles(md)
        return [
            c for c, r in roles.items()
            if r not in ("direct identifier", "dropped", "household id (dropped)")
        ]  # fmt: skip

    def unmentioned(self, md: Microdata) -> list[str]:
        """Columns no role and no list of the plan mentions (released as they are)."""
        return [c for c, r in self.roles(md).items() if r.startswith("not mentioned")]

    def declared(self, md: Microdata) -> list[str]:
        """Columns the plan or the roles mention (the rest are 'not mentioned')."""
        unmentioned = set(self.unmentioned(md))
        return [c for c in md.frame.columns if c not in unmentioned]

    # ------------------------------------------------------------------ release
    def apply(self, md: Microdata, *, seed: Any = None) -> pl.DataFrame:
        """The released columns, with a new household id, in the input's record order.

        (The record order of the written file is set by :meth:`record_order`.)

        Parameters
        ----------
        md : Microdata
            The protected file (with the original's roles).
        seed : int or numpy.random.Generator, optional
            Seed of the new household ids (without one they are not reproducible).
        """
        columns = self.released_columns(md)
        frame = md.frame.select(columns)
        hh = md.household
        if hh is not None and hh in columns and self.household_id == "new":
            frame = frame.with_columns(new_household_ids(md.frame.get_column(hh), seed))
        size = self.household_size
        if size is not None and size in columns and hh is not None:
            counted = md.frame.select(pl.len().over(hh)).to_series()
            dtype = md.frame.schema[size]
            counted = counted.cast(pl.String) if dtype == pl.String else counted.cast(dtype)
            frame = frame.with_columns(counted.alias(size))
        return frame

    def record_order(self, n_records: int, *, seed: Any = None) -> np.ndarray | None:
        """The positions of the records in the written file (None: the input's order)."""
        if self.order == "original":
            return None
        return check_seed(seed).permutation(n_records)


def new_household_ids(ids: pl.Series, seed: Any = None) -> pl.Series:
    """Random household ids 1..H (the same for all members; no order of the old ids kept)."""
    rng = check_seed(seed)
    codes = ids.cast(pl.String).rank("dense").cast(pl.Int64).to_numpy() - 1
    n = int(codes.max()) + 1 if len(codes) else 0
    new = rng.permutation(n).astype(np.int64) + 1
    return pl.Series(ids.name, new[codes], dtype=pl.Int64)


def columns_of(values: Sequence[str] | None) -> tuple[str, ...]:
    """A tuple of column names (for job files)."""
    return column_list(values, "columns")

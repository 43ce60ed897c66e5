"""A microdata file and the roles of its columns, validated once.

:class:`Microdata` is the object every risk measure and protection method takes.  It holds the
data as a polars frame in the caller's row order, the column roles (categorical key variables,
numeric variables, sampling weight, strata, household id, sensitive variables), the release roles
(variables linked to a key, household-level variables, direct identifiers), and lazily the
integer encoding of the key variables shared by all frequency-based measures.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import Any

import numpy as np
import polars as pl

from sdckit._codes import KeyCodes, encode_keys
from sdckit._frames import FrameInfo, from_polars, to_polars
from sdckit._validation import check_columns_exist, check_int, column_list
from sdckit.errors import ColumnError, DataError, SdcWarning

__all__ = ["Microdata", "as_microdata"]

#: ``household_level="auto"`` finds household-wide variables only in data with at least this
#: many households of two members or more (in fewer, a variable is constant within households
#: by accident too often).
MIN_HOUSEHOLDS_FOR_DETECTION = 10


class Microdata:
    """A microdata file with explicit column roles.

    Parameters
    ----------
    data : DataFrame
        pandas, polars or pyarrow table (or a lazy frame narwhals supports).  It is not modified.
    keys : str or list of str, optional
        Categorical key variables (quasi-identifiers).  Missing values are allowed.
    numeric : str or list of str, optional
        Numeric (continuous) variables: continuous key variables or variables to protect.
    weight : str, optional
        Sampling weight: positive and finite for every record.  Without it the file is treated
        as a census (every weight 1).
    strata : str, optional
        Stratum of each record (no missing values).
    household : str, optional
        Household id of each record (no missing values).
    sensitive : str or list of str, optional
        Sensitive variables (used by l-diversity).
    linked : dict of str to str, optional
        Variables linked to a key variable (sdcMicro's "ghost variables"), ``{column: key}``:
        the column is a function of the key or carries the same information (a region code and
        its name, a district inside a region).  Wherever a method suppresses the key, the
        linked column is suppressed too.
    household_level : str or list of str, optional
        Variables constant within a household (region of residence, household size, household
        income); needs ``household``.  Every method treats them per household: a value
        suppressed or changed in one member is suppressed or changed in all members alike.
        ``"auto"``: the variables with a role that the data shows to be household-wide
        (:meth:`detect_household_level`; none without a household id).  A column named
        ``auto`` is given as ``["auto"]``.
    identifiers : str or list of str, optional
        Direct identifiers (names, person numbers): never released.
    max_levels : int, default 1000
        A key variable with more levels than this triggers a :class:`SdcWarning`.

    Raises
    ------
    ColumnError
        A named column is missing, duplicated, has the wrong type, or has two roles.
    DataError
        Empty data, a single record, invalid weights, missing strata or household ids.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit import Microdata
    >>> df = pl.DataFrame({"sex": [1, 2, 1], "age": [3, 3, 4], "w": [10.0, 20.0, 5.0]})
    >>> md = Microdata(df, keys=["sex", "age"], weight="w")
    >>> md.n_records, md.keys
    (3, ('sex', 'age'))
    """

    def __init__(
        self,
        data: Any,
        *,
        keys: str | Iterable[str] | None = None,
        numeric: str | Iterable[str] | None = None,
        weight: str | None = None,
        strata: str | None = None,
        household: str | None = None,
        sensitive: str | Iterable[str] | None = None,
        linked: Mapping[str, str] | None = None,
        household_level: str | Iterable[str] | None = None,
        identifiers: str | Iterable[str] | None = None,
        max_levels: int = 1000,
    ) -> None:
        frame, info = to_polars(data)
        auto = _is_auto(household_level)
        self._init(
            frame,
            info,
            keys=column_list(keys, "keys"),
            numeric=column_list(numeric, "numeric"),
            weight=weight,
            strata=strata,
            household=household,
            sensitive=column_list(sensitive, "sensitive"),
            linked=_linked_map(linked),
            household_level=() if auto else column_list(household_level, "household_level"),
            identifiers=column_list(identifiers, "identifiers"),
            max_levels=check_int(max_levels, "max_levels", minimum=2),
        )
        if auto:
            self._household_level = self.detect_household_level()

    def _init(
        self,
        frame: pl.DataFrame,
        info: FrameInfo,
        *,
        keys: tuple[str, ...],
        numeric: tuple[str, ...],
        weight: str | None,
        strata: str | None,
        household: str | None,
        sensitive: tuple[str, ...],
        linked: dict[str, str] | None = None,
        household_level: tuple[str, ...] = (),
        identifiers: tuple[str, ...] = (),
        max_levels: int,
        full: bool = True,
    ) -> None:
        self._frame = frame
        self._info = info
        self._keys = keys
        self._numeric = numeric
        self._weight = weight
        self._strata = strata
        self._household = household
        self._sensitive = sensitive
        self._linked = dict(linked or {})
        self._household_level = household_level
        self._identifiers = identifiers
        self._max_levels = max_levels
        self._derived = False  # True for files made by a protection method (see with_frame)
        self._validate_roles()
        if full:
            self._validate()

    # ------------------------------------------------------------------ validation
    def _validate_roles(self) -> None:
        """Schema-only checks (cheap): records present, role columns exist, one role each."""
        frame = self._frame
        columns = list(frame.columns)
        if frame.height == 0:
            raise DataError("The data has no records; a disclosure assessment needs records.")
        if frame.height == 1:
            raise DataError(
                "The data has a single record; disclosure risk and protection need at least "
                "two records."
            )
        singles = {
            "weight": self._weight,
            "strata": self._strata,
            "household": self._household,
        }
        for role, col in singles.items():
            if col is not None and not isinstance(col, str):
                raise ColumnError(f"The {role!r} role takes one column name (a string).")
        roles: dict[str, str] = {}
        for role, cols in (
            ("key", self._keys),
            ("numeric", self._numeric),
            ("sensitive", self._sensitive),
            ("weight", (self._weight,) if self._weight else ()),
            ("strata", (self._strata,) if self._strata else ()),
            ("household", (self._household,) if self._household else ()),
            ("identifier", self._identifiers),
            ("linked", tuple(self._linked)),
        ):
            check_columns_exist(cols, columns, role)
            for col in cols:
                if col in roles:
                    raise ColumnError(
                        f"The column {col!r} is given two roles ({roles[col]} and {role}); "
                        "give each column one role."
                    )
                roles[col] = role
        for col in self._numeric:
            dtype = frame.schema[col]
            if not dtype.is_numeric():
                raise ColumnError(
                    f"The numeric variable {col!r} is not numeric (type {dtype}); convert it "
                    "to numbers or declare it a key variable."
                )
        for col in (*self._keys, *self._sensitive, *self._linked):
            dtype = frame.schema[col]
            if dtype.is_nested() or dtype == pl.Object:
                raise ColumnError(
                    f"The column {col!r} holds nested values (type {dtype.base_type()}); key, "
                    "sensitive and linked variables need one category per record: flatten "
                    "or convert the column first."
                )
        for col, key in self._linked.items():
            if key not in self._keys:
                raise ColumnError(
                    f"The column {col!r} is linked to {key!r}, which is not a key variable; "
                    "link it to one of the key variables."
                )
        if self._household_level:
            if self._household is None:
                raise ColumnError(
                    "Household-level variables need the household id: pass household=..."
                )
            check_columns_exist(self._household_level, columns, "household-level")
            for col in self._household_level:
                if col in (self._household, *self._identifiers):
                    raise ColumnError(
                        f"The column {col!r} cannot be household-level: it is the household id "
                        "or a direct identifier."
                    )

    def _validate(self) -> None:
        """The checks of the values (weights, strata, households): once per input file.

        Files made from a validated file by a protection method (:meth:`with_frame`) only get
        the schema checks; the method is responsible for what it writes.
        """
        frame = self._frame
        if self._weight is not None:
            self._validate_weight()
        for role, col in (("strata", self._strata), ("household", self._household)):
            if col is None:
                continue
            values = frame.get_column(col)
            if values.dtype.is_float():
                values = values.fill_nan(None)
            if values.null_count() > 0:
                raise DataError(
                    f"The {role} column {col!r} has missing values; every record needs a "
                    f"{role} value (fill them or drop those records)."
                )
        self._validate_household_level(self._household_level)

    def _validate_household_level(self, columns: Iterable[str]) -> None:
        """Each of ``columns`` is constant within every household."""
        for col in columns:
            n_bad = self.inconsistent_households(col)
            if n_bad:
                raise DataError(
                    f"The household-level variable {col!r} takes more than one value in "
                    f"{n_bad} household(s); a household-level variable must be constant within "
                    "each household (correct the data or do not declare it household-level)."
                )

    def detect_household_level(self) -> tuple[str, ...]:
        """The variables with a role that are the same for every member of every household.

        The key, numeric, linked and sensitive variables (whatever ``household_level``
        declares) whose value is, within each household, the same for all members or missing
        for all members (NaN counts as missing; a household in which some members have a value
        and others miss it is not constant).  Found only with a household id and in data with
        at least ten households of two members or more (``MIN_HOUSEHOLDS_FOR_DETECTION``; in
        fewer, a variable is constant within households by accident); otherwise none.  One
        polars ``group_by`` over the households (about a second on 1,000,000 records).

        Returns
        -------
        tuple of str
            In the order of the roles (keys, numeric, linked, sensitive).
        """
        hh = self._household
        if hh is None:
            return ()
        candidates = list(
            dict.fromkeys((*self._keys, *self._numeric, *self._linked, *self._sensitive))
        )
        candidates = [c for c in candidates if c != hh]
        if not candidates:
            return ()
        frame = self._frame
        exprs = []
        for i, col in enumerate(candidates):
            expr = pl.col(col)
            if frame.schema[col].is_float():
                expr = expr.fill_nan(None)
            exprs.append(expr.alias(f"c{i}"))
        counts = (
            frame.lazy()
            .select(pl.col(hh).alias("h"), *exprs)
            .group_by("h")
            .agg(pl.len().alias("n"), *(pl.col(f"c{i}").n_unique() for i in range(len(exprs))))
            .filter(pl.col("n") >= 2)
            .select(
                pl.len().alias("households"),
                *(pl.col(f"c{i}").max().alias(f"c{i}") for i in range(len(exprs))),
            )
            .collect()
        )
        if counts.item(0, "households") < MIN_HOUSEHOLDS_FOR_DETECTION:
            return ()
        return tuple(c for i, c in enumerate(candidates) if counts.item(0, f"c{i}") <= 1)

    def inconsistent_households(self, column: str) -> int:
        """Number of households in which ``column`` takes more than one value (missing counts)."""
        if self._household is None:
            return 0
        values = self._frame.get_column(column)
        if values.dtype.is_float():
            values = values.fill_nan(None)
        counts = (
            pl.DataFrame({"h": self._frame.get_column(self._household), "v": values})
            .group_by("h")
            .agg(pl.col("v").n_unique())
        )
        return int((counts.get_column("v") > 1).sum())

    def _validate_weight(self) -> None:
        col = self._weight
        if col is None:
            return
        s = self._frame.get_column(col)
        if not s.dtype.is_numeric():
            raise ColumnError(
                f"The weight column {col!r} is not numeric (type {s.dtype}); convert it to numbers."
            )
        values = s.cast(pl.Float64)
        n_missing = values.fill_nan(None).null_count()
        if n_missing:
            raise DataError(
                f"The weight column {col!r} has {n_missing} missing value(s); every record "
                "needs a positive sampling weight (impute or drop those records)."
            )
        arr = values.to_numpy()
        if not np.all(np.isfinite(arr)):
            raise DataError(
                f"The weight column {col!r} has infinite values; weights must be finite."
            )
        n_bad = int(np.count_nonzero(arr <= 0))
        if n_bad:
            raise DataError(
                f"The weight column {col!r} has {n_bad} zero or negative value(s); sampling "
                "weights must be positive."
            )

    # ------------------------------------------------------------------ roles
    @property
    def frame(self) -> pl.DataFrame:
        """The data as a polars DataFrame, in the caller's row order."""
        return self._frame

    @property
    def frame_info(self) -> FrameInfo:
        """The caller's frame type and index, used to hand results back."""
        return self._info

    @property
    def n_records(self) -> int:
        """Number of records."""
        return self._frame.height

    @property
    def keys(self) -> tuple[str, ...]:
        """Categorical key variables."""
        return self._keys

    @property
    def numeric(self) -> tuple[str, ...]:
        """Numeric variables."""
        return self._numeric

    @property
    def weight(self) -> str | None:
        """Sampling weight column, or None."""
        return self._weight

    @property
    def strata(self) -> str | None:
        """Strata column, or None."""
        return self._strata

    @property
    def household(self) -> str | None:
        """Household id column, or None."""
        return self._household

    @property
    def sensitive(self) -> tuple[str, ...]:
        """Sensitive variables."""
        return self._sensitive

    @property
    def linked(self) -> dict[str, str]:
        """Variables linked to a key, ``{column: key}``."""
        return dict(self._linked)

    def linked_to(self, key: str) -> tuple[str, ...]:
        """The columns linked to ``key``."""
        return tuple(col for col, k in self._linked.items() if k == key)

    @property
    def household_level(self) -> tuple[str, ...]:
        """Household-level variables (constant within a household)."""
        return self._household_level

    @property
    def identifiers(self) -> tuple[str, ...]:
        """Direct identifiers (never released)."""
        return self._identifiers

    @property
    def max_levels(self) -> int:
        """Number of key levels above which a warning is given."""
        return self._max_levels

    def roles(self) -> dict[str, Any]:
        """The column roles as keyword arguments of :class:`Microdata`."""
        return {
            "keys": list(self._keys),
            "numeric": list(self._numeric),
            "weight": self._weight,
            "strata": self._strata,
            "household": self._household,
            "sensitive": list(self._sensitive),
            "linked": dict(self._linked),
            "household_level": list(self._household_level),
            "identifiers": list(self._identifiers),
        }

    def __repr__(self) -> str:
        parts = [f"n_records={self.n_records}", f"keys={list(self._keys)}"]
        for name in ("numeric", "sensitive", "household_level", "identifiers", "linked"):
            if getattr(self, name):
                parts.append(f"{name}={list(getattr(self, name))}")
        for name in ("weight", "strata", "household"):
            if getattr(self, name):
                parts.append(f"{name}={getattr(self, name)!r}")
        return f"Microdata({', '.join(parts)})"

    # ------------------------------------------------------------------ derived data
    def require(
        self,
        *,
        keys: bool = False,
        numeric: bool = False,
        sensitive: bool = False,
        household: bool = False,
        what: str = "This measure",
    ) -> None:
        """Raise a :class:`ColumnError` if a role needed by ``what`` is not set."""
        needed = {
            "keys": keys and not self._keys,
            "numeric": numeric and not self._numeric,
            "sensitive": sensitive and not self._sensitive,
            "household": household and not self._household,
        }
        for role, missing in needed.items():
            if missing:
                raise ColumnError(
                    f"{what} needs {role} variables; pass {role}=... when building the data."
                )

    @cached_property
    def key_codes(self) -> KeyCodes:
        """Key variables encoded as integer codes (computed once, then cached)."""
        self.require(keys=True, what="Encoding the key variables")
        codes = encode_keys(self._frame, self._keys)
        self._check_keys(codes)
        return codes

    def _check_keys(self, codes: KeyCodes) -> None:
        for j, name in enumerate(codes.names):
            n_levels = len(codes.levels[j])
            if n_levels == 0 and self._derived:
                continue  # suppressed everywhere by a method: every value matches any value
            if n_levels == 0:
                raise DataError(
                    f"The key variable {name!r} is missing for every record; drop it from the "
                    "key variables."
                )
            series = self._frame.get_column(name)
            if series.dtype.is_float():
                finite = series.fill_nan(None).drop_nulls()
                if len(finite) and bool((finite != finite.round(0)).any()):
                    warnings.warn(
                        f"The key variable {name!r} has non-integer numbers and looks "
                        "continuous; recode it into categories or declare it numeric.",
                        SdcWarning,
                        stacklevel=4,
                    )
                    continue
            if n_levels > self._max_levels:
                warnings.warn(
                    f"The key variable {name!r} has {n_levels} levels (more than max_levels="
                    f"{self._max_levels}); almost every record may be unique. Recode it, or "
                    "raise max_levels to silence this warning.",
                    SdcWarning,
                    stacklevel=4,
                )

    def weights(self) -> np.ndarray | None:
        """Sampling weights as float64, or None for a file without weights."""
        if self._weight is None:
            return None
        return self._frame.get_column(self._weight).cast(pl.Float64).to_numpy()

    def column(self, name: str) -> np.ndarray:
        """One column as a numpy array."""
        return self._frame.get_column(name).to_numpy()

    def with_frame(
        self, frame: pl.DataFrame, *, rows: np.ndarray | None = None, **roles: Any
    ) -> Microdata:
        """A new :class:`Microdata` over ``frame`` with the same roles.

        ``frame`` has the same records in the same order, or, with ``rows``, the records at
        those positions of this file (their index labels are kept for pandas callers).
        Roles given as keyword arguments replace the current ones.
        """
        merged = self.roles()
        merged.update(roles)
        info = self._info
        if rows is not None and info.index is not None:
            info = FrameInfo(info.backend, info.index[np.asarray(rows)])
        new = object.__new__(Microdata)
        current = self.roles()
        auto = _is_auto(merged["household_level"])
        # the values of a column whose role is new are checked (a new weight, strata,
        # household: everything; new household-level variables alone: their consistency)
        changed_role = any(
            merged[name] != current[name] for name in ("weight", "strata", "household")
        )
        new._init(
            frame,
            info,
            keys=column_list(merged["keys"], "keys"),
            numeric=column_list(merged["numeric"], "numeric"),
            weight=merged["weight"],
            strata=merged["strata"],
            household=merged["household"],
            sensitive=column_list(merged["sensitive"], "sensitive"),
            linked=_linked_map(merged["linked"]),
            household_level=(
                () if auto else column_list(merged["household_level"], "household_level")
            ),
            identifiers=column_list(merged["identifiers"], "identifiers"),
            max_levels=self._max_levels,
            full=changed_role,
        )
        if auto:
            new._household_level = new.detect_household_level()
        elif not changed_role:
            known = set(self._household_level)
            new._validate_household_level(c for c in new._household_level if c not in known)
        # the same frame with other roles is the same file (not one made by a method)
        new._derived = self._derived if frame is self._frame and rows is None else True
        return new

    def to_native(self, frame: pl.DataFrame | None = None) -> Any:
        """``frame`` (default: this file's data) in the caller's form, with the caller's index."""
        return from_polars(self._frame if frame is None else frame, self._info)


def _is_auto(value: object) -> bool:
    """Whether a ``household_level`` argument asks for detection (the string ``"auto"``)."""
    return isinstance(value, str) and value == "auto"


def _linked_map(value: object) -> dict[str, str]:
    """Normalise the ``linked`` role: a table ``{column: key}``."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(c, str) and isinstance(k, str) for c, k in value.items()
    ):
        raise ColumnError(
            "The 'linked' role must be a table {column: key variable}, e.g. {'district': 'region'}."
        )
    return dict(value)


def as_microdata(data: Any, **roles: Any) -> Microdata:
    """Return ``data`` if it is a :class:`Microdata`, else build one from a frame and roles.

    The result of a protection method (anything with a ``microdata`` attribute) gives its
    protected file.  Roles given together with a :class:`Microdata` replace its roles.
    """
    inner = getattr(data, "microdata", None)
    if isinstance(inner, Microdata):
        data = inner
    if isinstance(data, Microdata):
        active = {k: v for k, v in roles.items() if v is not None}
        return data.with_frame(data.frame, **active) if active else data
    return Microdata(data, **roles)

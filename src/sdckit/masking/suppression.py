"""Local suppression: set key values to missing until every record is safe.

:class:`LocalSuppression` reaches k-anonymity on the key variables with missing values matching
any value (sdcMicro's ``localSuppression`` semantics, ``fk`` as in
:func:`sdckit.risk._frequencies` with ``missing="wildcard"``, ``alpha=1``), suppressing few values
and the least important keys first.  :class:`RiskSuppression` suppresses key values of records
whose individual re-identification risk exceeds a threshold.

The greedy works on key patterns, not records (see :mod:`sdckit.masking._suppression_kernel`):
unsafe patterns are handled rarest first; ``fk`` is recomputed before each one (earlier
suppressions often already made it safe).  A pattern short of ``d`` matches is fixed by
suppressing one key in ``d`` neighbouring records when that is cheaper than suppressing in all of
its own records; otherwise the key whose suppression raises ``fk`` most (capped at ``k``) is
suppressed in its records, ties going to a key that also helps another unsafe pattern, then to
the least important key.  On sdcMicro's
``testdata`` with its importance order it needs 94 / 152 / 250 suppressions for k = 2 / 3 / 5,
where sdcMicro 5.8.1 needs 157 / 293 / 500.  On 1,000,000 records with 7 keys, k = 3 takes
about 6 s (bench/bench_suppression.py).

With ``by_strata=True`` k-anonymity is reached within each stratum of the data's strata column
(each stratum is a file of its own for the greedy), in parallel processes with ``n_jobs > 1``
and the same output (:mod:`sdckit.masking._strata`); inferences are then blocked over the whole
file.  The loops of :func:`close_inferences` are numba kernels (one pass over the records per
pair of keys: well under a second on 1,000,000 records).

Keys in ``fixed`` are never suppressed (a household size, which the members of a released
household give back anyway): records are grouped by the fixed keys' values, as by the strata of
``by_strata`` (the groups of both are crossed), and k-anonymity is reached within each group by
suppressing the other keys, so a fixed key's value always counts in ``fk``.  Missing values of a
fixed key: with ``missing="category"`` they are a value of their own; with wildcards the records
whose fixed keys are partly missing join a group whose values they match (so they match every
record of it): the largest one short of ``k`` records, else, when they are fewer than ``k``
themselves, the largest one; otherwise they form a group of their own.  A group of fewer than
``k`` records makes the suppression infeasible.  Inferences are not blocked through a fixed key
(that would suppress it); the suppressed values a fixed key still gives back are counted in
``details["given_back_by_fixed"]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations as _subsets
from typing import Any, ClassVar

import numpy as np
import polars as pl

from sdckit._codes import first_index, group_ids
from sdckit._validation import check_choice, check_int, check_real, column_list
from sdckit.errors import ColumnError, InfeasibleError, ParameterError
from sdckit.masking._own_combinations import (
    check_combination_columns,
    own_combinations,
    own_subsets,
)
from sdckit.masking._strata import (
    N_JOBS,
    Progress,
    ReportsStrata,
    Strata,
    n_workers,
    run,
    split,
)
from sdckit.masking._suppression_kernel import key_words, suppress_to_k
from sdckit.masking._suppression_restore import (
    close_inferences_kernel,
    restore_values,
    structural_dependencies,
    suppress_and_restore,
)
from sdckit.microdata import Microdata
from sdckit.protection import (
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
    require,
)
from sdckit.risk._frequencies import frequency_counts
from sdckit.risk.combinations import KeyCombination
from sdckit.twins import function_twin

__all__ = [
    "LocalSuppression",
    "RiskSuppression",
    "local_suppression",
    "suppress_risky_records",
]

Importance = Sequence[int] | Mapping[str, int] | None


def key_priority(md: Microdata, importance: Importance, fixed: Sequence[str] = ()) -> np.ndarray:
    """Suppression priority of each key (higher = suppressed first) from the importance ranks.

    ``importance`` gives one rank per key, lower = more important = suppressed last (sdcMicro).
    Without it, keys with more levels are suppressed first (sdcMicro's default).  A dict need not
    rank the ``fixed`` keys (never suppressed, their rank is not used).
    """
    keys = md.keys
    m = len(keys)
    if importance is None:
        levels = md.key_codes.cardinalities
        # rank by number of levels: the key with most levels gets the highest priority
        order = np.argsort(levels, kind="stable")
        prio = np.empty(m, dtype=np.int64)
        prio[order] = np.arange(1, m + 1)
        return prio
    if isinstance(importance, Mapping):
        for name in importance:
            if name not in keys:
                raise ColumnError(
                    f"The 'importance' parameter names {name!r}, which is not a key variable; "
                    f"give ranks for the key variables {', '.join(map(repr, keys))}."
                )
        missing = [name for name in keys if name not in importance and name not in fixed]
        if missing:
            raise ParameterError(
                f"The 'importance' parameter has no rank for the key variable(s) "
                f"{', '.join(map(repr, missing))}; give one rank per key variable."
            )
        ranks = [importance.get(name, 1) for name in keys]
    else:
        if isinstance(importance, str):
            raise ParameterError(
                "The 'importance' parameter must be a list of ranks (one per key variable) or "
                "a dict key variable -> rank."
            )
        ranks = list(importance)
        if len(ranks) != m:
            raise ParameterError(
                f"The 'importance' parameter has {len(ranks)} rank(s) but there are {m} key "
                "variables; give one rank per key variable, in key order."
            )
    values = [check_int(r, "importance", minimum=1) for r in ranks]
    return np.asarray(values, dtype=np.int64)


def _suppress_codes(
    codes: np.ndarray,
    cardinalities: np.ndarray,
    k: int,
    priority: np.ndarray,
    wildcard: bool,
    pull: bool = True,
) -> np.ndarray:
    """Codes after suppression to k-anonymity over all columns of ``codes``.

    With ``pull=False`` only records below ``k`` are changed.
    """
    if codes.shape[1] > 60:
        raise ParameterError(
            "Local suppression handles at most 60 key variables; use fewer key variables."
        )
    radix = np.asarray(cardinalities, dtype=np.int64) + 1
    try:
        words = key_words(radix)
    except OverflowError:
        raise ParameterError(
            "The key variables have too many combinations of levels for local suppression "
            "(more than 2**124); recode some key variables into fewer categories."
        ) from None
    before = np.ascontiguousarray(codes, dtype=np.int64)
    prio = priority.astype(np.int64)
    if wildcard and pull:
        # the greedy, then up to three rounds giving back values that turned out not to be
        # needed, on the same groups and maps
        out = suppress_and_restore(before, int(k), prio, radix, words, 3)
    else:
        out = suppress_to_k(before, int(k), prio, radix, words, wildcard, pull)
        if wildcard:
            out = restore_values(before, out, int(k), prio, radix, words, 3)
    result = out.astype(np.int32)
    if not wildcard:
        _complete_category(result, k)
    return result


def _suppress_subsets(
    codes: np.ndarray,
    cardinalities: np.ndarray,
    k: int,
    priority: np.ndarray,
    wildcard: bool,
    subsets: list[tuple[int, ...]],
    ks: list[int] | None = None,
) -> np.ndarray:
    """``codes`` (changed in place and returned) after suppression on every key subset.

    ``ks`` gives each subset its own ``k`` (own key combinations); without it every subset
    takes ``k``.  The work of one stratum (a module-level function, so that it can run in
    another process).
    """
    changed = True
    while changed:
        changed = False
        for i, subset in enumerate(subsets):
            cols = list(subset)
            before = int(np.count_nonzero(codes[:, cols] < 0))
            codes[:, cols] = _suppress_codes(
                codes[:, cols],
                cardinalities[cols],
                k if ks is None else ks[i],
                priority[cols],
                wildcard,
            )
            changed |= int(np.count_nonzero(codes[:, cols] < 0)) > before
        # with wildcards suppression never lowers fk, so one pass is enough; with missing
        # values as a category a later subset can break an earlier one: repeat until stable
        changed &= not wildcard and len(subsets) > 1
    return codes


def _complete_category(codes: np.ndarray, k: int) -> None:
    """With missing values as a category, fill a too small all-missing group (in place).

    The greedy can leave fewer than ``k`` records with every key suppressed (nothing else can
    join them).  Records of the largest other groups are then fully suppressed as well: part of
    a group when the rest stays at ``k`` or more, else the whole group.
    """
    while True:
        gid, n_groups = group_ids(codes)
        counts = np.bincount(gid, minlength=n_groups)
        blank = (codes < 0).all(axis=1)
        n_blank = int(blank.sum())
        if n_blank == 0 or n_blank >= k:
            return
        counts_other = counts.copy()
        counts_other[np.unique(gid[blank])] = 0
        donor = int(np.argmax(counts_other))
        need = k - n_blank
        rows = np.flatnonzero(gid == donor)
        if counts_other[donor] - need >= k:
            rows = rows[-need:]
        codes[rows] = -1


#: A suppressed key value counts as given back by another key when at least this many released
#: records share the record's value of that key, show the suppressed key, and all show the
#: suppressed value (as the release check counts it).
MIN_WITNESSES = 10


def close_households(
    codes: np.ndarray,
    suppressed: np.ndarray,
    households: pl.Series,
    *,
    fixed: Sequence[int] = (),
) -> tuple[np.ndarray, int]:
    """Suppress a suppressed value in the other members of the household who show it.

    The members of a household share many values (a country of birth, a marital status of a
    couple); a value suppressed in one member and shown by another comes back through the
    household id.  So wherever key ``j`` is suppressed in a member whose value is ``v``, key
    ``j`` is suppressed in every member of the household whose value is ``v``.  With missing
    values as wildcards this never lowers ``fk``.  Keys at the positions ``fixed`` are left
    alone.  Returns the new suppression flags and the number of values added.
    """
    supp = np.ascontiguousarray(suppressed, dtype=np.bool_).copy()
    if not supp.any():
        return supp, 0
    hh = households.rank("dense").cast(pl.Int64).to_numpy()
    added = 0
    for j in range(codes.shape[1]):
        if j in fixed or not supp[:, j].any():
            continue
        frame = pl.DataFrame({"h": hh, "v": codes[:, j], "s": supp[:, j]})
        hidden = frame.select(pl.col("s").any().over("h", "v")).to_series().to_numpy()
        new = hidden & (codes[:, j] >= 0) & ~supp[:, j]
        added += int(new.sum())
        supp[:, j] |= new
    return supp, added


def close_inferences(
    codes: np.ndarray,
    suppressed: np.ndarray,
    witnesses: int = MIN_WITNESSES,
    *,
    fixed: Sequence[int] = (),
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """Suppress further key values until no suppressed value can be read back from a key.

    A suppressed value of key ``j`` in record ``r`` is read back from key ``c`` when at least
    ``witnesses`` released records share ``r``'s value of ``c``, show key ``j``, and all show
    the same value (young children give back a suppressed education "none"), or when
    ``c`` determines ``j`` in the whole file (a classification, as district gives region).  Then
    ``c`` is suppressed in ``r`` as well; repeated until nothing is read back.  With missing
    values as wildcards this never lowers ``fk``.

    The keys at the positions ``fixed`` are never suppressed, so what they give back is left
    as it is (see :func:`given_back_by_fixed`); the rule is applied among the other keys.
    ``weights`` (int64, one per row): the records each row stands for, when a row stands for
    several records of equal codes and flags (a pattern table); default one each.

    Returns the new suppression flags and the number of values added.
    """
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    supp = np.ascontiguousarray(suppressed, dtype=np.bool_).copy()
    if len(fixed):
        free = [j for j in range(codes.shape[1]) if j not in set(fixed)]
        if not free:
            return supp, 0
        sub, added = close_inferences(codes[:, free], supp[:, free], witnesses, weights=weights)
        supp[:, free] = sub
        return supp, added
    if codes.shape[1] < 2 or not supp.any():
        return supp, 0
    w = np.empty(0, np.int64) if weights is None else np.ascontiguousarray(weights, np.int64)
    determines = structural_dependencies(codes, w)
    added = close_inferences_kernel(codes, supp, int(witnesses), determines, w)
    return supp, int(added)


def given_back_by_fixed(
    codes: np.ndarray,
    suppressed: np.ndarray,
    fixed: Sequence[int],
    witnesses: int = MIN_WITNESSES,
) -> np.ndarray:
    """Flags of the suppressed values that a key at a position in ``fixed`` gives back.

    The rule of :func:`close_inferences` with a never-suppressed key ``c`` as the witness: at
    least ``witnesses`` released records share the record's value of ``c``, show the key and
    all show the same value, or ``c`` determines the key in the whole file.  These values
    cannot be protected without suppressing ``c``.
    """
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    supp = np.asarray(suppressed, dtype=bool)
    out = np.zeros(supp.shape, dtype=bool)
    fixed = sorted(set(fixed))
    cells = supp & (codes >= 0)
    if not fixed or not cells.any():
        return out
    determines = structural_dependencies(codes, np.empty(0, dtype=np.int64))
    released = np.where(supp, -1, codes)
    big = np.iinfo(np.int64).max
    for c in fixed:
        cv = codes[:, c]
        present = cv >= 0
        if not present.any():
            continue
        size = int(cv.max()) + 1
        for j in range(codes.shape[1]):
            target = cells[:, j] & present
            if j == c or not target.any():
                continue
            shown = present & (released[:, j] >= 0)
            values = released[shown, j]
            count = np.bincount(cv[shown], minlength=size)
            low = np.full(size, big, dtype=np.int64)
            high = np.full(size, -1, dtype=np.int64)
            np.minimum.at(low, cv[shown], values)
            np.maximum.at(high, cv[shown], values)
            readable = (count >= witnesses) & (low == high)
            if determines[c, j]:
                readable[:] = True
            out[:, j] |= target & readable[np.where(present, cv, 0)]
    return out


def _key_subsets(m: int, combinations: int | None) -> list[tuple[int, ...]]:
    if combinations is None or combinations >= m:
        return [tuple(range(m))]
    return list(_subsets(range(m), combinations))


def _fixed_positions(md: Microdata, fixed: object) -> list[int]:
    """Positions among the keys of the ``fixed`` keys (checked: key variables)."""
    names = column_list(fixed, "fixed")  # type: ignore[arg-type]
    for name in names:
        if name not in md.keys:
            raise ColumnError(
                f"The 'fixed' parameter names {name!r}, which is not a key variable; name key "
                "variables that must never be suppressed."
            )
    return sorted(md.keys.index(name) for name in names)


def _attach_partial(pattern: np.ndarray, lead: int, gid: np.ndarray, k: int) -> np.ndarray:
    """Group ids with the groups of partly missing fixed values merged into others (wildcards).

    ``pattern`` holds per record the ``lead`` columns that must be equal (the stratum) and then
    the fixed keys' codes (-1 missing).  A group whose fixed values are partly missing matches
    (equal where it is not missing) groups with no missing fixed value; merged into one of them,
    its records match every record of it on the fixed keys.  Taken in turn, such a group joins
    the largest matching group still short of ``k`` records, or else, when it has fewer than
    ``k`` records itself, the largest matching group; otherwise it stays a group of its own.
    Returns dense ids.
    """
    n_groups = int(gid.max()) + 1
    sizes = np.bincount(gid, minlength=n_groups)
    pat = pattern[first_index(gid, n_groups)]
    values = pat[:, lead:]
    complete = (values >= 0).all(axis=1)
    target = np.arange(n_groups)
    for g in np.flatnonzero(~complete):  # (a loop over groups)
        known = values[g] >= 0
        match = complete & (values[:, known] == values[g, known]).all(axis=1)
        if lead:
            match &= (pat[:, :lead] == pat[g, :lead]).all(axis=1)
        candidates = np.flatnonzero(match)
        short = candidates[sizes[candidates] < k]
        if len(short):
            chosen = short[np.argmax(sizes[short])]
        elif len(candidates) and sizes[g] < k:
            chosen = candidates[np.argmax(sizes[candidates])]
        else:
            continue
        target[g] = chosen
        sizes[chosen] += sizes[g]
    _, dense = np.unique(target[gid], return_inverse=True)
    return dense.reshape(-1).astype(np.int64)


def _frame_with_suppressions(md: Microdata, suppressed: np.ndarray) -> pl.DataFrame:
    """The data with the key values flagged in ``suppressed`` (n x m) set to missing."""
    exprs = []
    for j, name in enumerate(md.keys):
        flags = suppressed[:, j]
        if flags.any():
            exprs.append(pl.when(pl.Series(flags)).then(None).otherwise(pl.col(name)).alias(name))
    return md.frame.with_columns(exprs) if exprs else md.frame


def _used_keys(md: Microdata, keys: Sequence[str]) -> list[str]:
    """The keys with at least one non-missing value."""
    used = []
    for name in keys:
        col = md.frame.get_column(name)
        if col.dtype.is_float():
            col = col.fill_nan(None)
        if col.null_count() < md.n_records:
            used.append(name)
    return used


def _fk_after(md: Microdata, keys: list[str], missing: str) -> np.ndarray:
    """``fk`` over ``keys``; a key suppressed in every record matches all and is left out."""
    used = _used_keys(md, keys)
    if not used:
        return np.full(md.n_records, float(md.n_records))
    sub = md.with_frame(md.frame, keys=used)
    return frequency_counts(sub, missing=missing, alpha=1.0).fk  # type: ignore[arg-type]


def _check_only_suppressed(original: Microdata, protected: Protected) -> None:
    """Every changed value was a key value set to missing; other columns are untouched."""
    before = original.frame
    after = protected.microdata.frame
    require(after.columns == before.columns, "the protected file has other columns")
    for name in before.columns:
        a, b = before.get_column(name), after.get_column(name)
        if a.dtype.is_float():
            a = a.fill_nan(None)
        if b.dtype.is_float():
            b = b.fill_nan(None)
        if name in original.keys:
            kept = b.is_not_null()
            require(
                (a.filter(kept) == b.cast(a.dtype).filter(kept)).all(),
                f"values of the key {name!r} were changed, not only suppressed",
            )
        else:
            require(a.equals(b, null_equal=True), f"the column {name!r} was changed")


class LocalSuppression(ReportsStrata, ProtectionMethod):
    """Local suppression of key values to reach k-anonymity.

    Key values are set to missing so that every record has ``fk >= k``, where a missing value
    matches any value (as :func:`sdckit.risk._frequencies` with ``missing="wildcard"``).  Few
    values are suppressed, and among equally good choices the least important key.

    Parameters
    ----------
    k : int, default 2
        Every record must share its key combination with at least ``k - 1`` others.
    importance : list of int or dict, optional
        One rank per key variable (in key order, or a dict key -> rank); lower = more important
        = suppressed last, as in sdcMicro.  Default: keys with more levels are suppressed first.
        A dict need not rank the ``fixed`` keys.
    fixed : list of str, optional
        Key variables that are never suppressed, by the greedy nor against inferences: a
        household size when the household id is released (the members counted give it back).
        Records are grouped by the fixed keys' values, as strata are with ``by_strata``, and
        k-anonymity is reached within each group by suppressing the other keys, so a fixed
        key's value always counts in ``fk`` (with ``combinations``: every subset of that many
        other keys, plus the fixed keys).  With wildcards, records whose fixed keys are partly
        missing join a group whose values they match when it or they are short of ``k``
        records (see the module docstring).  Raises :class:`~sdckit.errors.InfeasibleError`
        when a group has fewer than ``k`` records (recode the fixed keys or lower ``k``).
        Household-level keys that are not fixed are still suppressed per household.
    combinations : int, optional
        Reach k-anonymity for every subset of ``combinations`` key variables (and so for all
        smaller subsets) instead of the full key set (sdcMicro's ``combs``).
    key_combinations : list, optional
        One's own combinations of key variables, each with its own threshold (mu-ARGUS'
        combinations): ``{"keys": [...], "k": ...}`` tables (``k`` defaults to ``k``),
        :class:`~sdckit.risk.KeyCombination` objects or lists of keys.  Every combination
        then meets its own ``k`` (missing values counted as ``missing`` says), instead of
        the full key set meeting ``k``.  With ``fixed`` keys or ``by_strata`` each
        combination is reached within their groups (so it holds with them and without).
    identification_levels : dict, optional
        ``{key: level}``, 1 = most identifying, 0 = not identifying: the combinations are
        generated from the levels as mu-ARGUS does (see
        :func:`sdckit.risk.combinations_from_levels`), each with threshold ``k``.  At most
        one of ``combinations``, ``key_combinations`` and ``identification_levels``.
    missing : {"wildcard", "category"}, default "wildcard"
        ``"wildcard"``: a missing value matches any value.  ``"category"``: it is a category
        of its own (needs many more suppressions).
    block_inference : bool, default True
        A suppressed value that another key gives back is no protection: when at least ten
        released records share the record's value of another key and all show the suppressed
        value (the age group of young children gives back their education), that other key
        is suppressed in the record too (see :func:`close_inferences`; wildcards only).
        ``False`` reproduces the plain greedy (as sdcMicro, which does not do this).  A
        ``fixed`` key is never suppressed for this: the values it still gives back are counted
        in ``details["given_back_by_fixed"]``.
    block_households : bool, default True
        With a household id (and wildcards): a value suppressed in one member is suppressed
        in the other members of the household who show the same value, who would otherwise
        give it back through the household (see :func:`close_households`;
        ``details["suppressions_within_households"]`` counts them).  Household-level keys are
        suppressed in every member anyway.
    by_strata : bool, default False
        Reach k-anonymity within each stratum of the data (its ``strata`` role) instead of the
        whole file: a record must share its key values with ``k - 1`` others *of its stratum*
        (as if the stratum were one more key that is never suppressed).  Inferences are
        blocked over the whole file, after the strata are done.
    n_jobs : int, default 1
        With ``by_strata`` or ``fixed``, the number of processes working on strata (groups of
        the fixed keys) at the same time (-1: one per core).  The output is the same for every
        value.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking.suppression import LocalSuppression
    >>> df = pl.DataFrame({"a": [1, 1, 1, 2], "b": [1, 1, 2, 2]})
    >>> res = LocalSuppression(k=2).apply(df, keys=["a", "b"])
    >>> res.details["suppressions"], res.data.rows()
    (1, [(1, 1), (1, 1), (1, 2), (None, 2)])

    With ``a`` fixed, ``b`` is suppressed within the groups of ``a``, ``a`` never:

    >>> df = pl.DataFrame({"a": [1, 1, 1, 2, 2, 2], "b": [5, 5, 6, 5, 6, 6]})
    >>> LocalSuppression(k=2, fixed=["a"]).apply(df, keys=["a", "b"]).data.rows()
    [(1, 5), (1, 5), (1, None), (2, None), (2, 6), (2, 6)]
    """

    name: ClassVar[str] = "local suppression"
    description: ClassVar[str] = (
        "Sets some values of the key variables ({variables}) to missing so that every key "
        "combination is shared by at least k records (local suppression)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "k": Param(Integer(minimum=1), help="every key combination is shared by k records"),
        "importance": Param(
            ListOf(Integer(minimum=1), min_length=1),
            ColumnMap(Integer(minimum=1), role="keys"),
            None,
            help="rank of each key; lower ranks (more important keys) are suppressed last",
        ),
        "fixed": Param(
            Columns(role="keys", min_length=0),
            None,
            help="keys never suppressed: k-anonymity is reached within the groups of their values",
        ),
        "combinations": Param(
            Integer(minimum=1), None, help="reach k-anonymity on every subset of this many keys"
        ),
        "key_combinations": Param(
            ListOf(
                Instance(
                    (Mapping, KeyCombination, list, tuple),
                    "a table {keys = [...], k = ...} or a list of key variables",
                ),
                min_length=1,
            ),
            None,
            help="own combinations of keys, each with its own k (mu-ARGUS combinations)",
        ),
        "identification_levels": Param(
            ColumnMap(Integer(minimum=0), role="keys"),
            None,
            help="mu-ARGUS identification level of each key (1 = most identifying)",
        ),
        "missing": Param(
            Options("wildcard", "category"),
            help="a missing value matches any value, or is a category of its own",
        ),
        "block_inference": Param(
            Boolean(),
            help="also suppress a key that would give a suppressed value back (wildcards only)",
        ),
        "block_households": Param(
            Boolean(),
            help="also suppress a suppressed value in the household members who show it",
        ),
        "by_strata": Param(
            Boolean(), help="reach k-anonymity within each stratum of the data's strata column"
        ),
        "n_jobs": N_JOBS,
    }

    def __init__(
        self,
        *,
        k: int = 2,
        importance: Importance = None,
        fixed: Sequence[str] | None = None,
        combinations: int | None = None,
        key_combinations: Sequence[Any] | None = None,
        identification_levels: Mapping[str, int] | None = None,
        missing: str = "wildcard",
        block_inference: bool = True,
        block_households: bool = True,
        by_strata: bool = False,
        n_jobs: int = 1,
    ) -> None:
        self.k = k
        self.importance = importance
        self.fixed = fixed
        self.combinations = combinations
        self.key_combinations = key_combinations
        self.identification_levels = identification_levels
        self.missing = missing
        self.block_inference = block_inference
        self.block_households = block_households
        self.by_strata = by_strata
        self.n_jobs = n_jobs

    def _check(self, md: Microdata) -> tuple[int, int | None, list[int]]:
        """``k``, ``combinations`` and the positions of the fixed keys, checked."""
        k = check_int(self.k, "k", minimum=1)
        check_choice(self.missing, "missing", ("wildcard", "category"))
        combos = self.combinations
        if combos is not None:
            combos = check_int(combos, "combinations", minimum=1)
        md.require(keys=True, what="Local suppression")
        fixed = _fixed_positions(md, self.fixed)
        if k > md.n_records:
            raise InfeasibleError(
                f"k-anonymity with k={k} is impossible with {md.n_records} records; choose "
                "k <= the number of records."
            )
        n_workers(self.n_jobs)
        return k, combos, fixed

    def own_combinations(self, k: int) -> tuple[KeyCombination, ...] | None:
        """The own key combinations (given or from identification levels), None without."""
        return own_combinations(
            k, self.combinations, self.key_combinations, self.identification_levels
        )

    def validate_params(
        self, columns: Sequence[str] | None = None, *, where: str | None = None
    ) -> None:
        """The declared checks, and the keys of ``key_combinations`` among ``columns``."""
        super().validate_params(columns, where=where)
        if self.key_combinations is not None:
            k = check_int(self.k, "k", minimum=1)
            check_combination_columns(self.key_combinations, k, columns, where)

    def _strata(self, md: Microdata, k: int) -> Strata | None:
        """The strata to work within (``by_strata``), checked; None for the whole file."""
        if not self.by_strata:
            return None
        if md.strata is None:
            raise ColumnError(
                "Local suppression with by_strata=True needs the strata column: give the data "
                "a strata role (strata=...)."
            )
        strata = split(md.frame.get_column(md.strata), md.strata)
        small = int(np.count_nonzero(strata.sizes() < k))
        if small:
            raise InfeasibleError(
                f"{small} stratum/strata of {md.strata!r} have fewer than k={k} records, so "
                "k-anonymity within them is impossible; merge small strata or lower k."
            )
        return strata

    def _groups(self, md: Microdata, k: int, fixed: list[int]) -> Strata | None:
        """The groups to work within: the strata (``by_strata``) crossed with the values of
        the fixed keys, checked (every group has ``k`` records); None for the whole file."""
        strata = self._strata(md, k)
        if not fixed:
            return strata
        parts = [] if strata is None else [strata.codes[:, None]]
        pattern = np.column_stack([*parts, md.key_codes.codes[:, fixed]]).astype(np.int64)
        gid, _ = group_ids(pattern)
        if self.missing == "wildcard" and (pattern[:, len(parts) :] < 0).any():
            gid = _attach_partial(pattern, len(parts), gid, k)
        groups = split(gid)
        small = int(np.count_nonzero(groups.sizes() < k))
        if small:
            names = ", ".join(repr(md.keys[j]) for j in fixed)
            within = f" within the strata of {md.strata!r}" if strata is not None else ""
            raise InfeasibleError(
                f"{small} group(s) of the values of the fixed key(s) {names}{within} have fewer "
                f"than k={k} records, so k-anonymity without suppressing them is impossible; "
                "recode the fixed keys into fewer categories, or lower k."
            )
        return groups

    def _apply(self, md: Microdata, progress: Progress | None = None) -> Protected:
        k, combos, fixed = self._check(md)
        priority = key_priority(md, self.importance, [md.keys[j] for j in fixed])
        kc = md.key_codes
        wildcard = self.missing == "wildcard"
        combinations = self.own_combinations(k)
        own = None if combinations is None else own_subsets(md, combinations, fixed)
        ks = None if own is None else own[1]
        # with own combinations each is reached within the groups of the fixed keys: they
        # need the largest k of any combination, one of fixed keys only included
        largest = k if combinations is None else max(c.k for c in combinations)
        groups = self._groups(md, largest, fixed)
        free = [j for j in range(len(md.keys)) if j not in fixed]
        subsets = _key_subsets(len(free), combos) if own is None else own[0]
        if not free:  # every key fixed: nothing to suppress (the groups have k records)
            codes = kc.codes.copy()
        elif groups is None:
            codes = _suppress_subsets(
                kc.codes.copy(), kc.cardinalities, k, priority, wildcard, subsets, ks
            )
        else:  # each group on its own (in parallel processes with n_jobs > 1)
            sub_codes = kc.codes[:, free]
            card, prio = kc.cardinalities[free], priority[free]
            tasks = [
                (sub_codes[rows], card, k, prio, wildcard, subsets, ks) for rows in groups.rows
            ]
            done = run(
                _suppress_subsets, tasks, self.n_jobs, weights=groups.sizes(), progress=progress
            )
            out = np.empty_like(sub_codes)
            for rows, result in zip(groups.rows, done, strict=True):
                out[rows] = result
            codes = kc.codes.copy()
            codes[:, free] = out
        suppressed = (codes < 0) & (kc.codes >= 0)
        added = household_added = 0
        households = (
            md.frame.get_column(md.household) if md.household is not None and wildcard else None
        )
        for _ in range(3):  # each closure can open the other; a few rounds settle it
            before = int(suppressed.sum())
            if self.block_inference and wildcard:
                suppressed, more = close_inferences(kc.codes, suppressed, fixed=fixed)
                added += more
            if self.block_households and households is not None:
                suppressed, more = close_households(kc.codes, suppressed, households, fixed=fixed)
                household_added += more
            if int(suppressed.sum()) == before:
                break
        frame = _frame_with_suppressions(md, suppressed)
        details = {
            "suppressions": int(suppressed.sum()),
            "suppressions_against_inference": added,
            "suppressions_within_households": household_added,
            "suppressions_per_key": dict(
                zip(md.keys, suppressed.sum(axis=0).tolist(), strict=True)
            ),
            "suppressed": suppressed,
            "k": k,
            "strata": md.strata if self.by_strata else None,
        }
        own_combos = self.own_combinations(k)
        if own_combos is not None:
            details["key_combinations"] = [(list(c.keys), c.k) for c in own_combos]
        if fixed:
            details["fixed"] = [md.keys[j] for j in fixed]
            details["given_back_by_fixed"] = (
                int(given_back_by_fixed(kc.codes, suppressed, fixed).sum()) if wildcard else 0
            )
        return Protected.from_frames(md, frame, self, details=details)

    def verify(self, original: Microdata, protected: Protected) -> None:
        """Recompute ``fk`` (for every key subset when ``combinations`` is set): ``fk >= k``;
        with own key combinations, each one's ``fk`` against its own ``k``.

        With ``by_strata``, ``fk`` counts the records of the same stratum (the original strata
        column is one more key).  With ``fixed``, no fixed key lost a value, and ``fk`` is
        counted over every subset of the other keys together with the fixed keys.
        """
        k, combos, fixed = self._check(original)
        _check_only_suppressed(original, protected)
        md = protected.microdata
        keys = list(md.keys)
        for j in fixed:
            before = original.frame.get_column(keys[j])
            after = md.frame.get_column(keys[j])
            if before.dtype.is_float():
                before, after = before.fill_nan(None), after.fill_nan(None)
            self._require(
                not bool((before.is_not_null() & after.is_null()).any()),
                f"the fixed key {keys[j]!r} was suppressed",
            )
        extra: list[str] = [keys[j] for j in fixed]
        if self.by_strata:
            self._strata(original, k)
            extra.append("_sdckit_stratum")
            stratum = original.frame.get_column(str(original.strata)).alias(extra[-1])
            md = md.with_frame(md.frame.with_columns(stratum))
        free = [j for j in range(len(keys)) if j not in fixed]
        own = self.own_combinations(k)
        if own is not None:  # every combination recounted, with the groups it was reached in
            for c in own:
                names = list(dict.fromkeys([*c.keys, *extra]))
                fk = _fk_after(md, names, self.missing)
                self._require(
                    np.all(fk >= c.k),
                    f"some records have fk < {c.k} in the key combination "
                    f"{' x '.join(map(repr, c.keys))} after suppression",
                )
            return
        for subset in _key_subsets(len(free), combos):
            fk = _fk_after(md, [keys[free[i]] for i in subset] + extra, self.missing)
            self._require(np.all(fk >= k), f"some records have fk < {k} after suppression")

    @classmethod
    def contract_example(cls) -> tuple[ProtectionMethod, Microdata]:
        """Twelve records, three keys, k = 3."""
        df = pl.DataFrame(
            {
                "sex": [1, 1, 2, 2, 1, 2, 1, 2, 1, 1, 2, 2],
                "age": [1, 1, 1, 2, 2, 2, 3, 3, 1, 2, 1, 3],
                "region": ["a", "a", "b", "b", "a", "c", "a", "b", "a", "a", "b", "c"],
                "income": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0],
            }
        )
        md = Microdata(df, keys=["sex", "age", "region"], numeric=["income"])
        return cls(k=3, importance=[1, 2, 3]), md


@function_twin(LocalSuppression)
def local_suppression(data: Any, **params: Any) -> Protected:
    """Suppress key values until every record has ``fk >= k`` (see :class:`LocalSuppression`).

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.microdata.Microdata`.
    k, importance, fixed, combinations, key_combinations, identification_levels, missing,
    block_inference, block_households, by_strata, n_jobs
        The parameters of :class:`LocalSuppression`, by name (keyword arguments only).
    **roles
        The role keywords of :class:`~sdckit.microdata.Microdata` (``keys``, ``numeric``,
        ``weight``, ``strata``, ``household``, ...) for building it from a plain frame;
        given with a Microdata they replace its roles (see :mod:`sdckit.twins`).

    Returns
    -------
    Protected
        ``details["suppressions"]`` is the number of values suppressed.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking.suppression import local_suppression
    >>> df = pl.DataFrame({"a": [1, 1, 2, 2, 3], "b": [1, 1, 1, 1, 1]})
    >>> res = local_suppression(df, keys=["a", "b"], k=2)
    >>> res.data["a"].to_list()
    [1, 1, 2, 2, None]
    """


class RiskSuppression(ProtectionMethod):
    """Suppress key values of records whose individual risk exceeds a threshold.

    While some records have an individual (Benedetti-Franconi) risk above ``threshold``, the
    least important non-missing key value of each of them is suppressed and the risks are
    recomputed.  Without weights the risk is ``1 / fk``, so the threshold amounts to
    k-anonymity with ``k = ceil(1 / threshold)``: the greedy of :class:`LocalSuppression` is
    then used, changing only the records above the threshold.

    Parameters
    ----------
    threshold : float
        Largest acceptable individual risk, in (0, 1].
    importance : list of int or dict, optional
        As in :class:`LocalSuppression` (lower = suppressed last).
    method : {"approx", "exact"}, default "approx"
        Risk formula (see :func:`sdckit.risk.individual_risk`).
    missing : {"wildcard", "category"}, default "wildcard"

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking.suppression import RiskSuppression
    >>> df = pl.DataFrame({"a": [1, 1, 1, 2], "b": [1, 1, 2, 2]})
    >>> res = RiskSuppression(threshold=0.5).apply(df, keys=["a", "b"])
    >>> res.data.rows()
    [(1, 1), (1, 1), (1, 2), (None, 2)]
    """

    name: ClassVar[str] = "risk-based local suppression"
    description: ClassVar[str] = (
        "Sets some values of the key variables ({variables}) of records with a high "
        "re-identification risk to missing until no record's risk exceeds a threshold."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "threshold": Param(
            Real(minimum=0.0, maximum=1.0, min_open=True),
            help="largest acceptable individual re-identification risk",
        ),
        "importance": LocalSuppression.parameters["importance"],
        "method": Param(
            Options("approx", "exact"), help="risk formula: sdcMicro's approximation or exact"
        ),
        "missing": LocalSuppression.parameters["missing"],
    }

    def __init__(
        self,
        *,
        threshold: float,
        importance: Importance = None,
        method: str = "approx",
        missing: str = "wildcard",
    ) -> None:
        self.threshold = threshold
        self.importance = importance
        self.method = method
        self.missing = missing

    def _check(self, md: Microdata) -> float:
        threshold = check_real(
            self.threshold, "threshold", minimum=0.0, maximum=1.0, min_inclusive=False
        )
        check_choice(self.method, "method", ("approx", "exact"))
        check_choice(self.missing, "missing", ("wildcard", "category"))
        md.require(keys=True, what="Risk-based suppression")
        return threshold

    def _risk(self, md: Microdata) -> np.ndarray:
        from sdckit.risk.individual import benedetti_franconi_risk, individual_risk

        used = _used_keys(md, md.keys)
        if not used:  # every key suppressed everywhere: one class holding every record
            n = md.n_records
            weights = md.weights()
            total = float(n) if weights is None else float(weights.sum())
            fk, fw = np.full(n, float(n)), np.full(n, total)
            return benedetti_franconi_risk(fk, fw, self.method)  # type: ignore[arg-type]
        sub = md.with_frame(md.frame, keys=used) if len(used) < len(md.keys) else md
        return individual_risk(sub, method=self.method, missing=self.missing).risk  # type: ignore[arg-type]

    def _apply(self, md: Microdata) -> Protected:
        threshold = self._check(md)
        priority = key_priority(md, self.importance)
        m = len(md.keys)
        original_codes = md.key_codes.codes
        if md.weight is None:
            # without weights the risk is 1 / fk: the threshold is k-anonymity, reached by
            # suppressing only in the records below k (missing values as wildcards or as a
            # category, as the measure is asked to treat them)
            k = max(1, int(np.floor(1.0 / threshold)))
            while 1.0 / k > threshold:
                k += 1
            if k > md.n_records:
                raise InfeasibleError(
                    f"Without weights the risk is at least 1/{md.n_records} (every record "
                    f"alike); the threshold {threshold} cannot be reached."
                )
            kc = md.key_codes
            wildcard = self.missing == "wildcard"
            codes = _suppress_codes(kc.codes, kc.cardinalities, k, priority, wildcard, pull=False)
            return self._result(md, (codes < 0) & (original_codes >= 0), threshold)
        missing = original_codes < 0
        current = md
        # keys in suppression order: highest priority first (stable for ties)
        order = np.argsort(-priority, kind="stable")
        for _ in range(2 * m + 2):
            risky = self._risk(current) > threshold
            if not risky.any():
                break
            todo = risky & ~missing.all(axis=1)
            if not todo.any():
                raise InfeasibleError(
                    f"Some records stay above the risk threshold {threshold} with every key "
                    "value suppressed; raise the threshold."
                )
            avail = ~missing[:, order]
            first = np.argmax(avail, axis=1)
            rows = np.flatnonzero(todo)
            missing[rows, order[first[rows]]] = True
            frame = _frame_with_suppressions(md, missing & (original_codes >= 0))
            current = md.with_frame(frame)
        else:  # pragma: no cover - every round suppresses a value of each risky record
            raise InfeasibleError("Risk-based suppression did not converge.")
        return self._result(md, missing & (original_codes >= 0), threshold)

    def _result(self, md: Microdata, suppressed: np.ndarray, threshold: float) -> Protected:
        frame = _frame_with_suppressions(md, suppressed)
        details = {
            "suppressions": int(suppressed.sum()),
            "suppressions_per_key": dict(
                zip(md.keys, suppressed.sum(axis=0).tolist(), strict=True)
            ),
            "suppressed": suppressed,
            "threshold": threshold,
        }
        return Protected.from_frames(md, frame, self, details=details)

    def verify(self, original: Microdata, protected: Protected) -> None:
        """Recompute the individual risks: none above the threshold."""
        threshold = self._check(original)
        _check_only_suppressed(original, protected)
        risk = self._risk(protected.microdata)
        self._require(
            np.all(risk <= threshold + 1e-12), "some records remain above the risk threshold"
        )

    @classmethod
    def contract_example(cls) -> tuple[ProtectionMethod, Microdata]:
        """Twelve records with weights, three keys, threshold 0.1."""
        _, md = LocalSuppression.contract_example()
        frame = md.frame.with_columns(
            pl.Series("w", [10.0, 12.0, 30.0, 8.0, 20.0, 15.0, 9.0, 40.0, 11.0, 5.0, 7.0, 25.0])
        )
        md2 = Microdata(frame, keys=list(md.keys), numeric=["income"], weight="w")
        return cls(threshold=0.1), md2


@function_twin(RiskSuppression)
def suppress_risky_records(data: Any, **params: Any) -> Protected:
    """Suppress key values until no individual risk exceeds ``threshold``.

    See :class:`RiskSuppression`.

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.microdata.Microdata`.
    threshold, importance, method, missing
        The parameters of :class:`RiskSuppression`, by name (keyword arguments only).
    **roles
        The role keywords of :class:`~sdckit.microdata.Microdata` (``keys``, ``numeric``,
        ``weight``, ``strata``, ``household``, ...) for building it from a plain frame;
        given with a Microdata they replace its roles (see :mod:`sdckit.twins`).

    Returns
    -------
    Protected

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking.suppression import suppress_risky_records
    >>> df = pl.DataFrame({"a": [1, 1, 2, 2, 3], "b": [1, 1, 1, 1, 2]})
    >>> res = suppress_risky_records(df, keys=["a", "b"], threshold=0.5)
    >>> res.data["b"].to_list()
    [1, 1, 1, 1, None]
    """

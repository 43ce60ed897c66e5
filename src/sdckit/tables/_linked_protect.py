"""The protection of linked tables: the iterative scheme, the joint elimination and repair.

:meth:`sdckit.tables.LinkedTables.protect` calls :func:`protect_linked` (the scheme is described
in :mod:`sdckit.tables.linked`); its result is a :class:`LinkedProtection`.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from sdckit._results import Summary
from sdckit._validation import check_int
from sdckit.errors import InfeasibleError, ParameterError, SdcWarning
from sdckit.tables.table import CellStatus, Table

if TYPE_CHECKING:
    from sdckit.tables.linked import LinkedAudit, LinkedTables

__all__ = ["LinkedProtection", "protect_linked"]


@dataclass(frozen=True, eq=False)
class LinkedProtection:
    """The result of :meth:`LinkedTables.protect`.

    Attributes
    ----------
    linked : LinkedTables
        The tables with primary and secondary suppressions (common cells agree).
    audit : LinkedAudit
        The joint audit of the final pattern (check mode: every requirement decided exactly,
        the intervals inner ones; `linked.audit()` gives the exact intervals).
    rounds : int
        Rounds of the scheme (a round protects every table once, then audits jointly).
    joint_repairs : int
        Cells added by the combined-system repair (leaks between tables).
    seconds : float
    details : dict
        Counts of the scheme (``passes``; ``joint_elimination``).
    results : tuple of SuppressionResult
        One per table, in the order of the tables: the table with its suppressions and the
        joint verdict (``protected``), the method that protected it (``protection``), its
        secondaries and their cost under that method's ``cost``; ``details`` hold the
        scheme's ``joint_rounds`` and ``joint_repairs``.
    """

    linked: LinkedTables
    audit: LinkedAudit
    rounds: int
    joint_repairs: int
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)
    results: tuple[Any, ...] = ()

    @property
    def protected(self) -> bool:
        """True when the joint audit finds every primary protected."""
        return self.audit.ok

    @property
    def tables(self) -> tuple[Table, ...]:
        """The protected tables, each with the joint verdict recorded."""
        return tuple(t.with_verdict(self.audit.ok) for t in self.linked.tables)

    def summary(self) -> Summary:
        """Suppressions, rounds and the joint verdict."""
        lk = self.linked
        status = lk.status
        return Summary(
            "Secondary suppression of linked tables",
            [
                ("tables", len(lk.tables)),
                ("distinct cells", lk.n_distinct),
                ("common cells", len(lk.common_cells)),
                ("primary suppressions (distinct)", int((status == CellStatus.PRIMARY).sum())),
                ("secondary suppressions (distinct)", int((status == CellStatus.SECONDARY).sum())),
                ("rounds", self.rounds),
                ("cells added by the joint repair", self.joint_repairs),
                ("protected (joint audit)", self.protected),
                ("seconds", self.seconds),
            ],
        )


def _apply(method: Any, table: Table, progress: Any) -> Any:
    """``method.apply(table)``, with ``progress`` as its call argument when it takes one."""
    import inspect

    if progress is not None and "progress" in inspect.signature(method.apply).parameters:
        return method.apply(table, progress=progress)
    return method.apply(table)


def _table_result(
    original: Table,
    table: Table,
    method: Any,
    seconds: float,
    protected: bool,
    rounds: int,
    repairs: int,
) -> Any:
    """One table's result of the linked protection (its method, its cost, the joint verdict)."""
    from sdckit.tables.suppression._common import cell_costs, make_result

    cost = cell_costs(original, getattr(method, "cost", "value"))
    try:
        method.get_params()
    except AttributeError:  # an object that declares no parameters: named, not kept
        method = getattr(method, "alias", type(method).__name__)
    return make_result(
        table, original, method, cost, False, seconds, protected,
        joint_rounds=rounds, joint_repairs=repairs,
    )  # fmt: skip


def protect_linked(
    linked: LinkedTables,
    method: Any,
    *,
    max_rounds: int,
    cost: Any,
    joint_elimination: bool,
    secondaries_as_primary: bool,
    progress: Any,
) -> LinkedProtection:
    """:meth:`LinkedTables.protect` (its docstring says what each argument does)."""
    from sdckit.tables.suppression import HypercubeSuppression

    start = time.perf_counter()
    max_rounds = check_int(max_rounds, "max_rounds", minimum=1)
    if method is None:
        method = HypercubeSuppression()
    methods = list(method) if isinstance(method, (list, tuple)) else [method] * len(linked.tables)
    if len(methods) != len(linked.tables) or any(
        getattr(m, "kind", None) != "suppression" for m in methods
    ):
        raise ParameterError(
            "The 'method' of LinkedTables.protect must be a secondary-suppression method "
            "(HypercubeSuppression, ModularSuppression, OptimalSuppression, "
            "GaussSuppression), or a list of one per table."
        )
    current = linked.synced()
    details: dict[str, Any] = {}
    for name, flag in (
        ("joint_elimination", joint_elimination),
        ("secondaries_as_primary", secondaries_as_primary),
    ):
        if not isinstance(flag, bool):
            raise ParameterError(f"The {name!r} parameter must be True or False.")
    if joint_elimination:
        if any(t.contributions is not None for t in linked.tables):
            # its singleton rules read one contributor per atom (a record), not the
            # respondents and holdings behind several atoms
            raise ParameterError(
                "joint_elimination does not take tables built with respondent or holding "
                "yet; protect them with the iterative scheme (joint_elimination=False)."
            )
        current, details["joint_elimination"] = _eliminate_jointly(current, methods[0], cost)
    repairs = 0
    passes = 0
    rounds = 0
    for rounds in range(1, max_rounds + 1):  # noqa: B007 - the count is reported
        changed = True
        while changed and passes < 10 * max_rounds:
            changed = False
            passes += 1
            for k in range(len(current.tables)):
                t = current.tables[k]
                if not t.primary.any() and not t.suppressed.any():
                    continue
                if secondaries_as_primary:
                    # R's back-tracking: what is suppressed already must not be
                    # computable in this table either; it stays secondary in the release
                    promoted = t.status == CellStatus.SECONDARY
                    shown = t.with_status(status=np.where(promoted, CellStatus.PRIMARY, t.status))
                    out = _apply(methods[k], shown, progress).table
                    out = out.with_status(
                        status=np.where(promoted, CellStatus.SECONDARY, out.status)
                    )
                else:
                    out = _apply(methods[k], t, progress).table
                if np.any(out.suppressed & ~t.suppressed):
                    changed = True
                tables = list(current.tables)
                tables[k] = out
                current = current.with_tables(tables).synced()
        joint = current.audit(intervals="check")
        if joint.ok:
            break
        current, added = _joint_repair(current, joint, cost)
        if not added:
            break
        repairs += added
    if not joint.ok:
        bad = joint.under_protected
        named = "; ".join(f"table {k}: {current.tables[k].cell_position(c)}" for k, c in bad[:3])
        raise InfeasibleError(
            f"{len(bad)} primary cell(s) of the linked tables stay under-protected in the "
            f"joint audit ({named}); raise max_rounds, use the optimal method, or protect "
            "the tables with fewer common cells frozen."
        )
    details["passes"] = passes
    seconds = time.perf_counter() - start
    results = tuple(
        _table_result(before, after, m, seconds, joint.ok, rounds, repairs)
        for before, after, m in zip(linked.tables, current.tables, methods, strict=True)
    )
    return LinkedProtection(current, joint, rounds, repairs, seconds, details, results)


def _eliminate_jointly(
    linked: LinkedTables, method: Any, cost: Any
) -> tuple[LinkedTables, dict[str, Any]]:
    """The tables with the secondaries of one elimination over the joint model."""
    from sdckit.tables.suppression._gauss_linked import joint_elimination

    n_atoms, atom, cell = linked.joint_model()
    status = linked._merged()[0]
    w = linked._costs(cost, status)
    arithmetic = getattr(method, "arithmetic", "exact")
    fresh, unsafe, details = joint_elimination(
        n_atoms,
        atom,
        cell,
        status,
        w,
        arithmetic=arithmetic,
        singletons=bool(getattr(method, "singletons", True)),
        n_contributors=linked.n_contributors,
    )
    exposed = details.pop("singleton_unsafe")
    details["singleton_unsafe"] = len(exposed)
    if len(exposed):
        warnings.warn(
            f"{len(exposed)} primary cell(s) of the linked tables can be computed by a "
            "respondent who knows his own single-contributor cell, from cells that are "
            "never suppressed (frozen or empty cells); freeze fewer cells to protect them.",
            SdcWarning,
            stacklevel=3,
        )
    if len(unsafe):
        named = "; ".join(
            f"table {k}: {linked.tables[k].cell_position(c)}"
            for k, c in (where[0] for where in linked._locations(unsafe[:3]))
        )
        raise InfeasibleError(
            f"{len(unsafe)} primary cell(s) of the linked tables can be computed from cells "
            f"that are never suppressed (empty or frozen cells), whatever the pattern "
            f"({named}); freeze fewer cells or mark fewer empty cells as primary."
        )
    tables = []
    for t, ids in zip(linked.tables, linked.cell_map, strict=True):
        tables.append(t.suppress(fresh[ids] & ~t.suppressed) if fresh[ids].any() else t)
    return linked.with_tables(tables).synced(), details


def _joint_repair(linked: LinkedTables, joint: LinkedAudit, cost: Any) -> tuple[LinkedTables, int]:
    """Suppress the cheapest cells that protect the jointly under-protected primaries."""
    from sdckit.tables.suppression._common import protect_with_lp

    status, up, low, sl = linked._merged()
    n = linked.n_distinct
    w = linked._costs(cost, status)
    like = linked._as_table(status)
    ubcap = np.maximum(linked.upper_bounds - linked.values, 0.0)
    lbcap = np.maximum(linked.values - linked.lower_bounds, 0.0)
    targets: list[tuple[int, float]] = []
    for k in np.flatnonzero(~joint.protected):
        c = int(joint.cells[k])
        need_up = min(max(up[c], sl[c] - min(low[c], lbcap[c])), ubcap[c])
        if need_up <= 0:
            need_up = min(1e-3 * (1.0 + abs(linked.values[c])), ubcap[c])
        if need_up > 0:
            targets.append((c, float(need_up)))
        if low[c] > 0:
            targets.append((c, -float(min(low[c], lbcap[c]))))
    supp = (status == CellStatus.PRIMARY) | (status == CellStatus.SECONDARY)
    allowed = status == CellStatus.SAFE
    new = protect_with_lp(
        like,  # type: ignore[arg-type]
        linked.constraint_matrix,
        np.arange(n),
        supp,
        allowed,
        w,
        targets,
    )
    fresh = new & ~supp
    if not fresh.any():
        return linked, 0
    tables = []
    for t, ids in zip(linked.tables, linked.cell_map, strict=True):
        tables.append(t.suppress(fresh[ids] & ~t.suppressed) if fresh[ids].any() else t)
    return linked.with_tables(tables).synced(), int(fresh.sum())

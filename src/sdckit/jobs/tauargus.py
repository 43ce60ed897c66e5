"""tau-ARGUS batch files as table jobs: ``load_arb(FILE.arb) -> TableJob``.

A tau-ARGUS user's batch (``.arb``) with its record description (``.rda``), microdata (``.asc``)
and hierarchy files (``.hrc``) becomes one :class:`~sdckit.jobs.tables.TableJob` per
``<SPECIFYTABLE>``, run by :func:`~sdckit.jobs.tables.run_table_job` like a TOML table job:

* the explanatory variables are the dimensions, with the hierarchy of their ``.hrc`` file
  (``<HIERCODELIST>``, ``<HIERLEADSTRING>``), of their digits (``<HIERLEVELS>``) or flat, and
  the total ``<TOTCODE>``; a missing code (the .rda's missing values) found in the data is a
  code of its own directly under the total, as in tau-ARGUS;
* the response is the cell value (``<freq>``: a frequency table); the ``<SAFETYRULE>`` becomes a
  :class:`~sdckit.tables.tauargus.TauArgusRule` (tau-ARGUS's verdicts and protection levels;
  minimum level ``10^-decimals`` of the response);
* ``<SUPPRESS>`` ``GH(t, ...)`` becomes :class:`~sdckit.tables.HypercubeSuppression`
  (``ApplySingleton`` -> ``singletons``), ``MOD(t, time, single, multiple, minfreq)``
  :class:`~sdckit.tables.ModularSuppression` (singleton options -> ``singletons``),
  ``OPT(t, minutes)`` :class:`~sdckit.tables.OptimalSuppression` (``time_limit``); a table
  without ``<SUPPRESS>`` gets the hypercube method.  The cost (``<SPECIFYTABLE>``'s fourth part)
  is the response (default), a numeric variable (summed per cell, raised to the power lambda;
  lambda 0 is the logarithm), ``-1`` (contributors) or ``-2`` (unity); ``-3`` (distance) is not
  supported;
* ``<WRITETABLE> (t, type, options, "file")``: with ``AS+`` (write the status) the internal
  export (``table_full``), otherwise the published table (``table``); every output type is
  written as CSV, the file name's suffix replaced by ``.csv`` when it is another one.

Not translated (refused with the line number): tabular input (``<OPENTABLEDATA>``), a priori
files, rounding, CTA, the cell key method, request rules.  A ``<HOLDING>`` variable of the .rda
is the table's holding column (``Table.from_microdata(..., holding=...)``): the 1st and 2nd NK
and P rules and the 1st FREQ rule count records (``TauArgusRule(level="respondent")``), the 3rd
and 4th NK and P rules and the 2nd FREQ rule count holdings (a second ``TauArgusRule`` with
``level="holding"``), as tau-ARGUS applies them.  The a priori bound
percentage of ``GH`` and the modular ``MinFreq`` option have no sdckit counterpart and are
ignored.  With ``WGT(1)`` the table is weighted with sdckit's semantics (expanded
contributions), which differ from tau-ARGUS's (a record of weight ``w`` counted as ``w``
contributors): a warning says so.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from sdckit.errors import DataError, ParameterError, SdcWarning
from sdckit.jobs.tables import TableJob

__all__ = ["load_arb", "load_arb_jobs"]


def _hierarchy(var: Any, meta: Any, batch_dir: Path, codes: list[str]) -> Any:
    from sdckit.tables import Hierarchy
    from sdckit.tables.tauargus import read_hrc

    missing = [m.strip() for m in var.missing]
    found = sorted(set(codes))
    valid = [c for c in found if c not in missing]
    extra = [c for c in found if c in missing]
    if var.hiercodelist:
        name = var.hiercodelist.replace("\\", "/")
        path = Path(name)
        if not path.is_absolute():
            near_meta = meta.path.parent / path
            path = near_meta if near_meta.is_file() else batch_dir / Path(name).name
        h = read_hrc(path, lead=var.leadstring or "@", total=var.totcode)
    elif var.hierlevels:
        lengths = list(np.cumsum(var.hierlevels))
        lengths = [int(x) for x in lengths if 0 < x < var.width]
        if not valid:
            raise DataError(f"The variable {var.name!r} has no valid code in the microdata.")
        h = (
            Hierarchy.from_code_lengths(valid, lengths, total=var.totcode)
            if lengths
            else Hierarchy.flat(valid, total=var.totcode)
        )
    else:
        if not valid and not extra:
            raise DataError(f"The variable {var.name!r} has no code in the microdata.")
        return Hierarchy.flat([*valid, *extra], total=var.totcode)
    if not extra:
        return h
    tree: dict[str, list[str]] = {}
    for i, p in enumerate(h.parent.tolist()):
        if p >= 0:
            tree.setdefault(h.codes[p], []).append(h.codes[i])
    for code in extra:
        if code not in h.index:
            tree.setdefault(h.total, []).append(code)
    return Hierarchy.from_dict(tree)


def _suppression(spec: tuple[str, list[float]] | None, cost: Any, where: str) -> Any:
    from sdckit.tables import HypercubeSuppression, ModularSuppression, OptimalSuppression

    if spec is None:
        return HypercubeSuppression(cost=cost)
    method, args = spec
    if method == "GH":
        single = bool(args[3]) if len(args) > 3 else True
        return HypercubeSuppression(cost=cost, singletons=single)
    if method == "MOD":
        flags = [bool(a) for a in args[2:4]]
        single = any(flags) if flags else True
        return ModularSuppression(cost=cost, singletons=single)
    if method == "OPT":
        params: dict[str, Any] = {"cost": cost}
        if len(args) > 1 and args[1] > 0 and "time_limit" in OptimalSuppression.parameters:
            params["time_limit"] = float(args[1]) * 60.0
        return OptimalSuppression(**params)
    raise ParameterError(f"{where}: the suppression method {method} is not supported.")


def _cost(table_spec: Any, meta: Any, data: Any, dimensions: dict[str, Any], where: str) -> Any:
    from sdckit.tables import Table

    cost = table_spec.cost
    lam = float(table_spec.cost_lambda)
    if cost is None or (table_spec.response is not None and cost == table_spec.response):
        base: Any = "value"
        if lam == 1.0:
            return base
        cost = table_spec.response
    if cost == "-1":
        return "contributors"
    if cost == "-2":
        return "unity"
    if cost == "-3":
        warnings.warn(
            f"{where}: the distance cost (-3) has no sdckit counterpart; the unity cost is used.",
            SdcWarning,
            stacklevel=4,
        )
        return "unity"
    if cost is None:
        return "value"
    var = meta.variable(cost, where)
    if not var.numeric:
        raise ParameterError(f"{where}: the cost variable {var.name!r} is not <NUMERIC>.")
    sums = Table.from_microdata(data, dimensions, var.name, n_top=1).values
    sums = np.abs(sums)
    if lam == 0.0:
        out = np.log(np.maximum(sums, 1.0))
    elif lam != 1.0:
        out = sums**lam
    else:
        out = sums
    return out + 1e-3


def _csv(base: Path, name: str) -> Path:
    p = Path(name.replace("\\", "/"))
    if len(name) > 1 and name[1] == ":":  # a Windows drive path: write next to the batch file
        p = Path(p.name)
    if not p.is_absolute():
        p = base / p
    return p if p.suffix.lower() in (".csv", ".parquet") else p.with_suffix(".csv")


def load_arb_jobs(path: str | os.PathLike[str]) -> list[TableJob]:
    """One validated :class:`TableJob` per ``<SPECIFYTABLE>`` of a tau-ARGUS batch file.

    Raises
    ------
    SdcError
        A command or option sdckit does not translate, a variable the .rda does not describe,
        unreadable files (named by file and line).
    """
    from sdckit.tables import Table
    from sdckit.tables.tauargus import TauArgusRule, parse_safety_rule, read_arb, read_asc, read_rda

    arb = Path(path)
    if arb.suffix.lower() != ".arb":
        raise ParameterError(f"The tau-ARGUS batch file {arb.name!r} must end in .arb.")
    batch = read_arb(arb)
    if batch.microdata is None or batch.metadata is None:
        raise ParameterError(
            f"The batch file {arb.name!r} needs <OPENMICRODATA> and <OPENMETADATA>; sdckit "
            "translates batches on microdata only."
        )
    if not batch.tables:
        raise ParameterError(f"The batch file {arb.name!r} specifies no table (<SPECIFYTABLE>).")
    meta = read_rda(batch.metadata)
    data = read_asc(batch.microdata, meta)
    jobs = []
    for k, spec in enumerate(batch.tables, start=1):
        where = f"{arb.name}, line {spec.line} (table {k})"
        dims: dict[str, Any] = {}
        missing_codes: dict[str, list[str]] = {}
        for name in spec.explanatory:
            var = meta.variable(name, where)
            if not var.recodeable:
                raise ParameterError(
                    f"{where}: the explanatory variable {var.name!r} is not <RECODEABLE> in the "
                    "metadata file."
                )
            codes = data.get_column(var.name).to_list()
            dims[var.name] = _hierarchy(var, meta, arb.parent, codes)
            if var.missing:
                missing_codes[var.name] = [m.strip() for m in var.missing]
        rules = parse_safety_rule(spec.safety_rule or "", f"{where} <SAFETYRULE>")
        weighted = rules.pop("weights")
        holding_rules = rules.pop("holding")
        holding = _holding(meta, holding_rules, where)
        value = None
        decimals = 0
        if spec.response is not None:
            resp = meta.variable(spec.response, where)
            if not resp.numeric:
                raise ParameterError(f"{where}: the response {resp.name!r} is not <NUMERIC>.")
            if data.get_column(resp.name).null_count():
                raise DataError(
                    f"{where}: the response {resp.name!r} has missing values (its missing codes) "
                    "in some records; impute them or leave those records out first."
                )
            value = resp.name
            decimals = resp.decimals
        elif rules["dominance"] or rules["pq"] or rules["zero_unsafe"]:
            raise ParameterError(
                f"{where}: the dominance, p% and zero rules cannot be applied to a frequency "
                "table (as in tau-ARGUS); keep FREQ (and MAN, MIS) only."
            )
        if spec.shadow is not None and spec.shadow != spec.response:
            raise ParameterError(
                f"{where}: a shadow variable other than the response is not supported; give the "
                "response as the shadow variable."
            )
        weight = None
        if weighted:
            wvar = meta.weight
            if wvar is None:
                raise ParameterError(f"{where}: WGT(1) needs a <WEIGHT> variable in the .rda.")
            weight = wvar.name
            warnings.warn(
                f"{where}: WGT(1): sdckit weights the table with its own semantics (expanded "
                "contributions w_i x_i in the rules); tau-ARGUS counts a record of weight w as w "
                "contributors, so the primaries can differ.",
                SdcWarning,
                stacklevel=2,
            )
        n_top = max(
            [3]
            + [n for n, _ in rules["dominance"] + holding_rules["dominance"]]
            + [n + 1 for _, _, n in rules["pq"] + holding_rules["pq"]]
        )
        table = Table.from_microdata(data, dims, value, weight=weight, n_top=n_top, holding=holding)
        rule = TauArgusRule(
            **rules, missing_codes=missing_codes, minimum_level=float(10.0**-decimals)
        )
        rule.validate_params(where=where)
        table_rules = [rule]
        if holding is not None and _any_rule(holding_rules):
            # tau-ARGUS's holding-level rules: the same safety rule, holdings as contributors
            table_rules.append(
                TauArgusRule(
                    **{**rules, "zero_unsafe": False, **holding_rules},
                    missing_codes=missing_codes,
                    minimum_level=float(10.0**-decimals),
                    level="holding",
                )
            )
        cost = _cost(spec, meta, data, dims, where)
        suppression = _suppression(spec.suppress, cost, where)
        suppression.validate_params(where=where)
        full = published = None
        for _type, options, name in spec.writes:
            target = _csv(arb.parent, name)
            if "AS+" in options:
                full = target
            else:
                published = target
        if full is not None and full == published:
            raise ParameterError(f"{where}: two <WRITETABLE> commands write the same file.")
        jobs.append(
            TableJob(
                path=arb,
                title=f"tau-ARGUS batch {arb.name}, table {k}",
                table=table,
                rules=tuple(table_rules),
                suppression=suppression,
                audit_params=None,
                output_table=published,
                output_full=full,
            )
        )
    return jobs


def _any_rule(rules: dict[str, Any]) -> bool:
    return bool(rules["dominance"] or rules["pq"] or rules["min_frequency"] > 0)


def _holding(meta: Any, holding_rules: dict[str, Any], where: str) -> str | None:
    """The holding variable of the table: the .rda's ``<HOLDING>`` (None without one)."""
    var = meta.holding
    if var is None and _any_rule(holding_rules):
        raise ParameterError(
            f"{where}: the <SAFETYRULE> has holding-level rules (a 3rd or 4th NK or P rule, a "
            "2nd FREQ rule) but the metadata file declares no <HOLDING> variable; declare it "
            "there (or drop those rules)."
        )
    return None if var is None else var.name


def load_arb(path: str | os.PathLike[str], *, table: int | None = None) -> TableJob:
    """The :class:`TableJob` of a tau-ARGUS batch file (``table``: which ``<SPECIFYTABLE>``).

    Parameters
    ----------
    path : path
        The ``.arb`` file; relative file names in it are read from its folder (a Windows
        drive path is looked up by its file name next to the batch file).
    table : int, optional
        1-based number of the table; needed when the batch specifies several
        (:func:`load_arb_jobs` gives them all).
    """
    jobs = load_arb_jobs(path)
    if table is None:
        if len(jobs) > 1:
            raise ParameterError(
                f"The batch file specifies {len(jobs)} tables; give table=1 .. {len(jobs)}, or "
                "use load_arb_jobs for all of them."
            )
        return jobs[0]
    if isinstance(table, bool) or not isinstance(table, int) or not 1 <= table <= len(jobs):
        raise ParameterError(f"The 'table' parameter must be a number from 1 to {len(jobs)}.")
    return jobs[table - 1]

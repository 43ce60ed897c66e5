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
* a table given by its cells (``<OPENTABLEDATA>`` with a table's metadata, ``<READTABLE> 0``:
  the totals read and checked, ``1``: computed from the bottom cells): the frequency, largest
  contributions (``<MAXSCORE>``), cost, protection levels and status of each cell are read;
  without ``<SAFETYRULE>`` the status decides (``S`` safe, ``U`` unsafe, ``P`` protected), with
  one the rule decides and ``U`` / ``P`` still apply;
* ``<APRIORY> "file.hst", t, "sep"[, ignore]``: the statuses, protection levels, costs (and a
  priori bounds, ``AB``) of an a priori file override the rules' (codes not in the table are
  skipped with a warning, an error with ignore = 0);
* ``<RECODE> t, var, "file.grc"`` or ``<RECODE> t, var, L``: the variable recoded for that table
  (microdata only, as in tau-ARGUS);
* ``<SUPPRESS> RND(t, base, steps, time)``: controlled rounding
  (:class:`~sdckit.tables.ControlledRounding`, ``steps`` -> ``k_steps``, minutes ->
  ``time_limit``) of a frequency table, audited by :func:`~sdckit.tables.audit_rounding`;
  ``<SUPPRESS> CKM(t) "ptable"``: the cell key method for a frequency table
  (:func:`~sdckit.tables.cellkey.cell_key_counts`, the record keys of the .rda's ``<RECORDKEY>``
  variable; the ptable file given there or in the .rda's ``<PFILE>``);
* ``<WRITETABLE> (t, kind, options, "file")``: tau-ARGUS's formats 1 (CSV), 2 (CSV for a pivot
  table), 3 (code-value), 4 (SBS) with its options (:mod:`sdckit.tables.tauargus`,
  ``write_tauargus_table``): a file with the status (``AS+`` on 2, 3; SBS) is internal and always
  written; the others are published, withheld (and an earlier one removed) when the audit
  fails.

The request rule ``REQ(p1, p2, m, margin)`` reads the codes of the .rda's ``<REQUEST>``
variable (magnitude tables from microdata).  A ``<HOLDING>`` variable of the .rda is the
table's holding column (``Table.from_microdata(..., holding=...)``): the 1st and 2nd NK and P
rules and the 1st FREQ rule count records (``TauArgusRule(level="respondent")``), the 3rd and 4th
NK and P rules and the 2nd FREQ rule count holdings (a second ``TauArgusRule`` with
``level="holding"``), as tau-ARGUS applies them.  Not translated (refused with the line number):
CTA, the network method, holding rules on tabular input, the expansion of trivial levels in a
priori files.  The a priori bound percentage of ``GH`` and the modular ``MinFreq`` option have no
sdckit counterpart and are ignored.  With ``WGT(1)`` the table is weighted with sdckit's
semantics (expanded contributions), which differ from tau-ARGUS's (a record of weight ``w``
counted as ``w`` contributors): a warning says so.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sdckit.errors import DataError, ParameterError, SdcWarning
from sdckit.jobs.tables import TableJob

__all__ = [
    "ArbPerturbationJob",
    "ArbPerturbationResult",
    "ArbTableJob",
    "load_arb",
    "load_arb_jobs",
    "run_arb_job",
    "run_arb_perturbation",
    "write_arb",
    "write_arb_outputs",
]


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


def _target(base: Path, name: str) -> Path:
    """An output file named in a batch: relative to its folder; a Windows drive path is
    written next to the batch file."""
    p = Path(name.replace("\\", "/"))
    if len(name) > 1 and name[1] == ":":
        p = Path(p.name)
    return p if p.is_absolute() else base / p


@dataclass(frozen=True)
class ArbTableJob(TableJob):
    """A table job of a tau-ARGUS batch: a :class:`TableJob` and its ``<WRITETABLE>`` files
    (``(kind, options, path)``), written by :func:`write_arb_outputs` in tau-ARGUS's formats."""

    writes: tuple[tuple[int, str, Path], ...] = ()
    response_name: str = "Freq"
    decimals: int = 0


@dataclass(frozen=True)
class ArbPerturbationJob:
    """A table of a batch protected by controlled rounding (``RND``) or the cell key method
    (``CKM``) instead of suppression; run by :func:`run_arb_perturbation`."""

    path: Path
    title: str
    table: Any
    method: str
    params: dict[str, Any]
    writes: tuple[tuple[int, str, Path], ...] = ()
    response_name: str = "Freq"
    records: Any = None
    dimensions: Any = None


def _writes(spec: Any, base: Path, where: str) -> tuple[tuple[int, str, Path], ...]:
    from sdckit.tables.tauargus import parse_write_options

    out = []
    for kind, options, name in spec.writes:
        parse_write_options(kind, options, f"{where} <WRITETABLE>")
        out.append((kind, options, _target(base, name)))
    if len({p.resolve() for _, _, p in out}) != len(out):
        raise ParameterError(f"{where}: two <WRITETABLE> commands write the same file.")
    return tuple(out)


def _tabular_table(batch: Any, spec: Any, meta: Any, frame: Any, where: str) -> tuple[Any, Any]:
    """The table and the statements of a batch's tabular input."""
    from sdckit.tables.tauargus import table_from_tab

    if batch.read_table not in (0, 1):
        raise ParameterError(
            f"{where}: tabular input needs <READTABLE> 0 (totals read and checked) or 1 "
            "(totals computed); sdckit protects additive tables only."
        )
    if spec.recodes:
        raise ParameterError(
            f"{where}: <RECODE> (line {spec.recodes[0][2]}) is for tables from microdata "
            "(tau-ARGUS refuses it for tabular input too)."
        )
    dims: dict[str, Any] = {}
    for name in spec.explanatory:
        var = meta.variable(name, where)
        if not var.recodeable:
            raise ParameterError(
                f"{where}: the explanatory variable {var.name!r} is not <RECODEABLE> in the "
                "metadata file."
            )
        codes = [c for c in frame.get_column(var.name).to_list() if c != var.totcode]
        if var.hierlevels:
            codes = [c for c in codes if len(c) == var.width]
        if var.hiercodelist is None and not var.hierlevels and not codes:
            raise DataError(f"{where}: the variable {var.name!r} has no code in the table file.")
        dims[var.name] = _hierarchy(var, meta, batch.path.parent, codes)
    if spec.shadow and spec.response and spec.shadow != spec.response and spec.safety_rule:
        shadow = meta.variable(spec.shadow, where).name
        response = meta.variable(spec.response, where).name
        if not frame.get_column(shadow).equals(frame.get_column(response)):
            raise ParameterError(
                f"{where}: the rules would apply to the shadow variable {shadow!r}, which differs "
                "from the response; sdckit applies them to the response: give the response as "
                "the shadow variable."
            )
    table, stated = table_from_tab(
        frame,
        meta,
        dims,
        spec.response,
        compute_totals=batch.read_table == 1,
        keep_status=batch.keep_status,
        where=where,
    )
    if spec.safety_rule:  # a rule decides; a safe status no longer overrides it
        stated.status[stated.status == 0] = -1
    names = {v.name.lower() for v in meta.with_role("cost")}
    if spec.cost is None or spec.cost.lower() not in names:  # the cost column is not the cost
        stated.cost[:] = np.nan
    return table, stated


def _microdata_dims(spec: Any, meta: Any, data: Any, arb: Path, where: str) -> tuple[Any, Any]:
    """The dimensions of a table from microdata, with its ``<RECODE>`` commands applied."""
    from sdckit.tables.tauargus import recode_codes

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
    for name, target, line in spec.recodes:
        var = meta.variable(name, f"{arb.name}, line {line}")
        if var.name not in dims:
            raise ParameterError(
                f"{arb.name}, line {line}: <RECODE> names {var.name!r}, which is not a "
                "variable of that table."
            )
        new, mapping = recode_codes(dims[var.name], target)
        dims[var.name] = new
        data = data.with_columns(data.get_column(var.name).replace(mapping))
    return dims, missing_codes, data


def _statements(spec: Any, table: Any, stated: Any, totals: list[str], where: str) -> Any:
    from sdckit.tables.tauargus import read_hst

    for path, sep, ignore, line in spec.apriori:
        ap = read_hst(path, table, separator=sep, totals=totals, ignore_errors=ignore)
        if ap.skipped:
            warnings.warn(
                f"{where}: {ap.skipped} line(s) of the a priori file {path.name!r} (line {line} "
                "of the batch) name codes that are not in the table and were skipped.",
                SdcWarning,
                stacklevel=3,
            )
        stated = stated.then(ap)
    return stated


def _perturbation(
    spec: Any, batch: Any, arb: Path, table: Any, where: str, extra: dict[str, Any]
) -> ArbPerturbationJob:
    method, args = spec.suppress
    if spec.response is not None:
        raise ParameterError(
            f"{where}: {method} in a batch is supported for frequency tables (<freq>) only."
        )
    params: dict[str, Any] = {}
    if method == "RND":
        params["base"] = int(args[1])
        params["k_steps"] = int(args[2]) if len(args) > 2 else 0
        if len(args) > 3 and args[3] > 0:
            params["time_limit"] = float(args[3]) * 60.0
    else:
        if extra.get("data") is None:
            raise ParameterError(f"{where}: the cell key method needs microdata.")
        names = re.findall(r'"([^"]+)"', spec.suppress_files) or spec.suppress_files.split()
        ptable = names[0] if names else extra.get("pfile")
        if not ptable or not extra.get("record_key"):
            raise ParameterError(
                f"{where}: CKM needs a <RECORDKEY> variable in the .rda and a ptable file "
                '(CKM(t) "ptable.txt" or <PFILE> in the .rda).'
            )
        params["ptable"] = _target(arb.parent, ptable)
        params["record_key"] = extra["record_key"]
    return ArbPerturbationJob(
        path=arb,
        title=f"tau-ARGUS batch {arb.name}, table {extra['k']}",
        table=table,
        method=method,
        params=params,
        writes=_writes(spec, arb.parent, where),
        records=extra.get("data"),
        dimensions=extra.get("dims"),
    )


def load_arb_jobs(path: str | os.PathLike[str]) -> list[Any]:
    """One validated job per ``<SPECIFYTABLE>`` of a tau-ARGUS batch file: an
    :class:`ArbTableJob` (suppression) or an :class:`ArbPerturbationJob` (``RND``, ``CKM``).

    Raises
    ------
    SdcError
        A command or option sdckit does not translate, a variable the .rda does not describe,
        unreadable files (named by file and line).

    Examples
    --------
    A table given by its cells (totals computed), with the status of each cell:

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "t.rda").write_text("<SEPARATOR> ,\\nSize\\n <RECODEABLE>\\n"
    ...                              "Turnover\\n <NUMERIC>\\nStatus\\n <STATUS>\\n")
    >>> _ = (d / "t.tab").write_text("s,40,S\\nm,35,S\\nl,5,U\\n")
    >>> _ = (d / "t.arb").write_text('<OPENTABLEDATA> "t.tab"\\n<OPENMETADATA> "t.rda"\\n'
    ...     '<SPECIFYTABLE> "Size"|"Turnover"||\\n<READTABLE> 1\\n<SUPPRESS> OPT(1,1)\\n'
    ...     '<WRITETABLE> (1,2,AS+,"out.csv")\\n')
    >>> (job,) = load_arb_jobs(d / "t.arb")
    >>> job.table.hierarchies[0].codes, job.table.values.tolist()
    (('Total', 'l', 'm', 's'), [80.0, 5.0, 35.0, 40.0])
    >>> res = run_arb_job(job)
    >>> print((d / "out.csv").read_text())
    "Size","Turnover","Status"
    "Total",80,1
    "l",5,9
    "m",35,11
    "s",40,1
    <BLANKLINE>
    """
    from sdckit.tables import Table
    from sdckit.tables.tauargus import (
        APriori,
        TauArgusRule,
        apply_apriori,
        parse_safety_rule,
        read_arb,
        read_asc,
        read_rda,
        read_tab,
        read_table_rda,
    )

    arb = Path(path)
    if arb.suffix.lower() != ".arb":
        raise ParameterError(f"The tau-ARGUS batch file {arb.name!r} must end in .arb.")
    batch = read_arb(arb)
    tabular = batch.tabular is not None
    if (batch.microdata is None and not tabular) or batch.metadata is None:
        raise ParameterError(
            f"The batch file {arb.name!r} needs <OPENMICRODATA> (or <OPENTABLEDATA>) and "
            "<OPENMETADATA>."
        )
    if not batch.tables:
        raise ParameterError(f"The batch file {arb.name!r} specifies no table (<SPECIFYTABLE>).")
    if tabular:
        meta: Any = read_table_rda(batch.metadata)
        frame = read_tab(batch.tabular, meta)
        data = None
    else:
        meta = read_rda(batch.metadata)
        data = read_asc(batch.microdata, meta)
    jobs: list[Any] = []
    for k, spec in enumerate(batch.tables, start=1):
        where = f"{arb.name}, line {spec.line} (table {k})"
        rules = parse_safety_rule(spec.safety_rule or "", f"{where} <SAFETYRULE>")
        weighted = rules.pop("weights")
        request = rules.get("request")
        holding_rules = rules.pop("holding")
        if tabular and _any_rule(holding_rules):
            raise ParameterError(
                f"{where}: holding-level rules (a 3rd or 4th NK or P rule, a 2nd FREQ rule) need "
                "microdata with a <HOLDING> variable."
            )
        holding = None if tabular else _holding(meta, holding_rules, where)
        missing_codes: dict[str, list[str]] = {}
        table_data = data
        decimals = 0
        if spec.response is not None:
            resp = meta.variable(spec.response, where)
            if not resp.numeric:
                raise ParameterError(f"{where}: the response {resp.name!r} is not <NUMERIC>.")
            decimals = resp.decimals
        elif rules["dominance"] or rules["pq"] or rules["zero_unsafe"]:
            raise ParameterError(
                f"{where}: the dominance, p% and zero rules cannot be applied to a frequency "
                "table (as in tau-ARGUS); keep FREQ (and MAN, MIS) only."
            )
        if spec.shadow is not None and spec.shadow != spec.response and not tabular:
            raise ParameterError(
                f"{where}: a shadow variable other than the response is not supported; give the "
                "response as the shadow variable."
            )
        if tabular:
            if weighted:
                raise ParameterError(f"{where}: WGT(1) needs microdata.")
            table, stated = _tabular_table(batch, spec, meta, frame, where)
            dims = dict(zip(table.dimensions, table.hierarchies, strict=True))
        else:
            dims, missing_codes, table_data = _microdata_dims(spec, meta, data, arb, where)
            value = None
            if spec.response is not None:
                value = meta.variable(spec.response).name
                if table_data.get_column(value).null_count():
                    raise DataError(
                        f"{where}: the response {value!r} has missing values (its missing codes) "
                        "in some records; impute them or leave those records out first."
                    )
            weight = None
            if weighted:
                wvar = meta.weight
                if wvar is None:
                    raise ParameterError(f"{where}: WGT(1) needs a <WEIGHT> variable in the .rda.")
                weight = wvar.name
                warnings.warn(
                    f"{where}: WGT(1): sdckit weights the table with its own semantics (expanded "
                    "contributions w_i x_i in the rules); tau-ARGUS counts a record of weight w "
                    "as w contributors, so the primaries can differ.",
                    SdcWarning,
                    stacklevel=2,
                )
            n_top = max(
                [3]
                + [n for n, _ in rules["dominance"] + holding_rules["dominance"]]
                + [n + 1 for _, _, n in rules["pq"] + holding_rules["pq"]]
            )
            table = Table.from_microdata(
                table_data, dims, value, weight=weight, n_top=n_top, holding=holding
            )
            stated = APriori.empty(table.n_cells)
        totals = [meta.variable(d).totcode for d in table.dimensions]
        stated = _statements(spec, table, stated, totals, where)
        if spec.suppress is not None and spec.suppress[0] in ("RND", "CKM"):
            if spec.apriori:
                raise ParameterError(f"{where}: an a priori file applies to suppression only.")
            key = next((v for v in meta.variables if getattr(v, "recordkey", False)), None)
            extra = {
                "k": k,
                "data": table_data,
                "dims": dims,
                "record_key": key.name if key is not None else None,
                "pfile": key.pfile if key is not None else None,
            }
            jobs.append(_perturbation(spec, batch, arb, table, where, extra))
            continue
        table = apply_apriori(table, stated)
        if request is not None:
            if tabular or spec.response is None:
                raise ParameterError(
                    f"{where}: the request rule REQ needs a magnitude table from microdata."
                )
            rules["request_top"] = _request_top(meta, table_data, dims, spec.response, where)
        rule = TauArgusRule(
            **rules, missing_codes=missing_codes, minimum_level=float(10.0**-decimals),
            manual=stated,
        )  # fmt: skip
        rule.validate_params(where=where)
        table_rules = [rule]
        if holding is not None and _any_rule(holding_rules):
            # tau-ARGUS's holding-level rules: the same safety rule, holdings as contributors
            # (the request rule and the a priori statements belong to the first)
            table_rules.append(
                TauArgusRule(
                    **{
                        **rules,
                        "zero_unsafe": False,
                        "request": None,
                        "request_top": None,
                        **holding_rules,
                    },
                    missing_codes=missing_codes,
                    minimum_level=float(10.0**-decimals),
                    level="holding",
                )
            )
        if tabular:
            cost = _tabular_cost(spec, meta, table, stated, where)
        else:
            cost = _cost(spec, meta, table_data, dims, where)
        if stated.any_cost:
            cost = np.where(np.isnan(stated.cost), _cost_array(table, cost), stated.cost)
        suppression = _suppression(spec.suppress, cost, where)
        suppression.validate_params(where=where)
        jobs.append(
            ArbTableJob(
                path=arb,
                title=f"tau-ARGUS batch {arb.name}, table {k}",
                table=table,
                rules=tuple(table_rules),
                suppression=suppression,
                audit_params=None,
                output_table=None,
                output_full=None,
                writes=_writes(spec, arb.parent, where),
                response_name=spec.response or "Freq",
                decimals=decimals,
            )
        )
    return jobs


def _request_top(meta: Any, data: Any, dims: dict[str, Any], response: str, where: str) -> Any:
    """Per cell, the largest contribution of a record with the first and the second
    ``<REQUEST>`` code (0 where none)."""
    from sdckit.tables import Table

    var = next((v for v in meta.variables if v.request), None)
    if var is None:
        raise ParameterError(f"{where}: REQ needs a <REQUEST> variable in the .rda.")
    value = meta.variable(response).name
    n = int(np.prod([h.size for h in dims.values()]))
    out = np.zeros((n, 2))
    codes = data.get_column(var.name).str.strip_chars()
    for j, code in enumerate(var.request[:2]):
        subset = data.filter(codes == code.strip())
        if subset.height:
            part = Table.from_microdata(subset, dims, value, n_top=1)
            out[:, j] = np.abs(part.top[:, 0])
    return out


def _tabular_cost(spec: Any, meta: Any, table: Any, stated: Any, where: str) -> Any:
    """The cost of a table given by its cells: the response (default), ``-1``, ``-2``, or the
    metadata's ``<COST>`` variable (read into ``stated.cost``)."""
    cost = spec.cost
    if cost is None or cost == spec.response:
        return "value"
    if cost == "-1":
        return "contributors"
    if cost in ("-2", "-3"):
        return "unity"
    var = meta.variable(cost, where)
    if var.role != "cost":
        raise ParameterError(f"{where}: the cost variable {var.name!r} is not <COST> in the .rda.")
    return "value"  # the cost column is in the statements, which replace it cell by cell


def _cost_array(table: Any, cost: Any) -> Any:
    if not isinstance(cost, str):
        return np.asarray(cost, dtype=float)
    if cost == "unity":
        return np.ones(table.n_cells)
    if cost == "contributors":
        return np.maximum(table.n_contributors, 0).astype(float) + 1e-3
    return np.abs(table.values) + 1e-3


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


def load_arb(path: str | os.PathLike[str], *, table: int | None = None) -> Any:
    """The job of one table of a tau-ARGUS batch file (``table``: which ``<SPECIFYTABLE>``).

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


# ---------------------------------------------------------------------- running and writing
def write_arb_outputs(job: Any, outcome: Any, *, write: bool = True) -> Any:
    """Write a batch table's ``<WRITETABLE>`` files in tau-ARGUS's formats.

    A file with the status (``AS+`` on kinds 2 and 3, the SBS format) is internal and always
    written; the others are published: written only when the audit passed, else withheld (an
    earlier one removed).  Returns ``outcome`` with those files in ``written`` and
    ``withheld``.
    """
    from dataclasses import replace

    from sdckit.tables.tauargus import parse_write_options, write_tauargus_table

    written = list(outcome.written)
    withheld = list(outcome.withheld)
    if not write:
        return outcome
    extra: dict[str, Any] = {}
    rule = next((r for r in getattr(job, "rules", ()) if hasattr(r, "status_codes")), None)
    if rule is not None:  # the rule behind each primary, for the status numbers and SBS
        extra["status_codes"] = rule.status_codes(job.table)
        ns = [n for n, _ in rule.dominance] + [n + 1 for _, _, n in rule.pq]
        extra["n_top"] = max(ns, default=0)
        extra["pq"] = bool(rule.pq)
    for kind, options, target in job.writes:
        opts = parse_write_options(kind, options)
        # the status (pivot, code-value) and the SBS format show suppressed values: internal;
        # a CSV file (kind 1) never shows them, with or without AS+
        internal = (opts["AS"] and kind in (2, 3)) or kind == 4
        if internal or outcome.protected:
            written.append(
                write_tauargus_table(
                    outcome.table,
                    target,
                    kind,
                    options,
                    response=job.response_name,
                    decimals=getattr(job, "decimals", 0),
                    **extra,
                )
            )
        else:
            withheld.append(target)
            target.unlink(missing_ok=True)
    return replace(outcome, written=written, withheld=withheld)


def run_arb_job(job: Any, *, progress: Any = None, write: bool = True) -> Any:
    """Run one job of a batch: :func:`~sdckit.jobs.run_table_job` and the batch's outputs
    (:class:`ArbTableJob`), or :func:`run_arb_perturbation` (:class:`ArbPerturbationJob`)."""
    from sdckit.jobs.tables import run_table_job

    if isinstance(job, ArbPerturbationJob):
        return run_arb_perturbation(job, write=write)
    outcome = run_table_job(job, progress=progress, write=write)
    if not isinstance(job, ArbTableJob):  # a TOML job writes its own outputs
        return outcome
    return write_arb_outputs(job, outcome, write=write)


@dataclass(frozen=True)
class ArbPerturbationResult:
    """A rounded or cell-key-perturbed batch table: the method's result, the published table
    (its values perturbed, every cell safe), the rounding audit (None for the cell key method)
    and the files written."""

    result: Any
    table: Any
    audit: Any
    written: list[Path]
    withheld: list[Path] = field(default_factory=list)

    @property
    def protected(self) -> bool:
        """True: a perturbed table has no suppressed cell to under-protect."""
        return True


def run_arb_perturbation(job: ArbPerturbationJob, *, write: bool = True) -> ArbPerturbationResult:
    """Round (``RND``) or perturb by the cell key method (``CKM``) a batch's frequency table
    and write its outputs (the perturbed values; status columns say ``S``) unless
    ``write=False`` (then :func:`write_arb_outputs` writes them)."""
    from dataclasses import replace as dc_replace

    from sdckit.tables import ControlledRounding, audit_rounding
    from sdckit.tables.cellkey import cell_key_counts
    from sdckit.tables.ptable import read_ptable

    checked = None
    if job.method == "RND":
        method = ControlledRounding(**job.params)
        result = method.apply(job.table)
        published = result.rounded
        checked = audit_rounding(
            job.table, published, int(job.params["base"]), k_steps=job.params["k_steps"]
        )
    else:
        result = cell_key_counts(
            job.records, job.dimensions, read_ptable(job.params["ptable"]),
            record_key=job.params["record_key"],
        )  # fmt: skip
        published = result.perturbed
    table = dc_replace(job.table, values=np.asarray(published, dtype=float))
    outcome = ArbPerturbationResult(result, table, checked, [])
    return write_arb_outputs(job, outcome, write=write)


# ---------------------------------------------------------------------- a job as a batch
def _suppress_command(method: Any) -> str:
    """The ``<SUPPRESS>`` counterpart of a suppression method (for table 1)."""
    from sdckit.tables import HypercubeSuppression, ModularSuppression, OptimalSuppression

    single = int(bool(getattr(method, "singletons", True)))
    if isinstance(method, HypercubeSuppression):
        return f"GH(1,100,0,{single})"
    if isinstance(method, ModularSuppression):
        return f"MOD(1,5,{single},{single},0)"
    if isinstance(method, OptimalSuppression):
        limit = getattr(method, "time_limit", None)
        minutes = max(1, int(np.ceil(float(limit) / 60.0))) if limit else 10
        return f"OPT(1,{minutes})"
    warnings.warn(
        f"The suppression method {type(method).__name__} has no tau-ARGUS counterpart; the "
        "batch uses the modular method (MOD).",
        SdcWarning,
        stacklevel=3,
    )
    return "MOD(1,5,1,1,0)"


def write_arb(
    job: TableJob, directory: str | os.PathLike[str], name: str | None = None
) -> list[Path]:
    """Write a table job as a tau-ARGUS batch on tabular input, to rerun it in tau-ARGUS.

    The job's rules are applied first and the table is written with its primaries (status
    ``U`` and their protection levels), its contributors and largest contributions, so that
    tau-ARGUS protects the same primaries; the suppression method becomes ``GH``, ``MOD`` or
    ``OPT`` (another method: ``MOD``, with a warning).  Running the batch with ``sdckit table``
    gives the job's pattern again.

    Parameters
    ----------
    job : TableJob
        A validated job (:func:`~sdckit.jobs.load_table_job`).
    directory : path
        Where to write (created).
    name : str, optional
        The stem of the files (default: the job file's).

    Returns
    -------
    list of Path
        The batch (first), the metadata, the cells and the hierarchy files.
    """
    from sdckit.tables import apply_rules
    from sdckit.tables.tauargus import write_tauargus_batch

    marked = apply_rules(job.table, list(job.rules)) if job.rules else job.table
    cost = getattr(job.suppression, "cost", "value")
    decimals = marked.value_decimals if marked.value_decimals and marked.value_decimals > 0 else 0
    return write_tauargus_batch(
        marked,
        directory,
        name or job.path.stem,
        suppress=_suppress_command(job.suppression),
        response="Count" if marked.kind == "count" else "value",
        cost=cost,
        decimals=decimals,
    )

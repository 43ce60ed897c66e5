"""``python -m sdckit.demo`` (``make demo``): risk, protection and reports of the demo census.

Loads the bundled synthetic file (50,000 persons in households, :func:`sdckit.datasets.load_demo`)
and measures its disclosure risk with the suggested roles (:data:`sdckit.datasets.DEMO_ROLES`):
frequencies and k-anonymity, individual (Benedetti-Franconi) and household risk, SUDA2 and
l-diversity of the sensitive health condition.  Then it runs the job file shipped with the
package (``sdckit/demo_job.toml``, the same as ``sdckit protect``): global recoding of age
and of rare countries of birth, PRAM of marital status, local suppression to 3-anonymity and
microaggregation of income, checked against the target k = 3; an R-U map of three methods
with three parameter values each; and it writes the protected file and the internal and
external HTML reports into ``./out/``.

``python -m sdckit.demo --out DIR`` writes elsewhere; ``--risk-only`` stops after the risk
assessment.  The whole demo takes about a minute.
"""

from __future__ import annotations

import argparse
import time
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from sdckit._results import format_value

__all__ = ["main", "run_demo", "run_demo_protection"]


def _table(title: str, rows: list[tuple[str, Any]], note: str | None = None) -> Table:
    table = Table(title=title, title_justify="left", caption=note, caption_justify="left")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for label, value in rows:
        table.add_row(label, value if isinstance(value, str) else format_value(value))
    return table


def _pct(part: float, whole: float) -> str:
    return f"{format_value(part)} ({100.0 * part / whole:.1f} %)"


def run_demo(
    console: Console | None = None, *, out_dir: str | Path | None = "out", protect: bool = True
) -> dict[str, Any]:
    """Run the demo, print it on ``console`` and return the key figures.

    Parameters
    ----------
    console : rich.console.Console, optional
        Where to print (default: standard output).
    out_dir : str or Path, default "out"
        Directory for the protected file and the reports (created if needed).
    protect : bool, default True
        Run the protection job after the risk assessment (False: the risk assessment only).

    Returns
    -------
    dict
        ``records``, ``households``, ``sample_uniques``, ``violations_k2/k3/k5``,
        ``expected_reidentifications``, ``global_risk_pct``,
        ``household_expected_reidentifications``, ``suda_records_at_risk``,
        ``l_distinct_below_2`` and ``seconds``; with ``protect`` also the entries of
        :func:`run_demo_protection`.

    Examples
    --------
    >>> import io
    >>> from rich.console import Console
    >>> from sdckit.demo import run_demo
    >>> figures = run_demo(Console(file=io.StringIO()), protect=False)
    >>> int(figures["records"])
    50000
    """
    from sdckit import Microdata
    from sdckit.datasets import DEMO_ROLES, load_demo
    from sdckit.risk import assess_risk
    from sdckit.risk.suda import suda2

    console = console or Console(highlight=False)
    start = time.perf_counter()
    frame = load_demo()
    md = Microdata(frame, **DEMO_ROLES)
    n = md.n_records
    households = frame.get_column("household_id").n_unique()
    sensitive = md.sensitive[0]

    console.print(
        Panel.fit(
            "[bold]sdckit demo[/bold]: disclosure risk of a synthetic census sample\n"
            f"{n:,} persons in {households:,} households, 8 regions; the data are generated "
            "(sdckit.datasets.load_demo), no row is a real person.",
            border_style="blue",
        )
    )
    levels = ", ".join(f"{k} ({frame.get_column(k).n_unique()})" for k in md.keys)
    weights = frame.get_column("weight")
    console.print(
        _table(
            "The file and its column roles",
            [
                ("records", n),
                ("households", households),
                ("key variables (levels)", levels),
                ("sampling weight", f"weight, {weights.min():g} to {weights.max():g}"),
                ("strata", f"{md.strata} ({frame.get_column(md.strata or '').n_unique()})"),
                ("sensitive variable", sensitive),
            ],
        )
    )

    # frequencies, k-anonymity, individual and household risk, l-diversity: one assessment
    risk = assess_risk(md)
    freq, ind, hh, ldiv = risk.frequencies, risk.individual, risk.household, risk.diversity
    if freq is None or ind is None or hh is None or ldiv is None:  # the demo roles give all
        raise RuntimeError("the demo file lost a role")
    violations = {k: risk.k_violations(k) for k in (2, 3, 5)}
    console.print(
        _table(
            "Frequencies and k-anonymity",
            [
                ("equivalence classes (key combinations)", freq.n_classes),
                ("sample uniques (fk = 1)", _pct(freq.sample_uniques, n)),
                *((f"records violating {k}-anonymity", _pct(v, n)) for k, v in violations.items()),
            ],
        )
    )
    console.print(
        _table(
            "Re-identification risk (Benedetti-Franconi, as sdcMicro)",
            [
                ("expected re-identifications", ind.expected_reidentifications),
                ("global risk (%)", ind.global_risk_pct),
                ("highest individual risk", float(ind.risk.max())),
                ("records with risk > 0.1", int(np.count_nonzero(ind.risk > 0.1))),
                ("expected re-identifications via households", hh.expected_reidentifications),
                ("global household risk (%)", hh.global_risk_pct),
            ],
        )
    )
    by_region = (
        pl.DataFrame(
            {
                "region": frame.get_column("region"),
                "unique": freq.fk == 1,
                "risk": ind.risk,
            }
        )
        .group_by("region")
        .agg(
            pl.len().alias("records"),
            pl.col("unique").sum().alias("uniques"),
            pl.col("risk").sum().alias("expected"),
        )
        .sort("expected", descending=True)
    )
    region_table = Table(title="Where the risk is: by region", title_justify="left")
    for name in ("region", "records", "sample uniques", "expected re-identifications"):
        region_table.add_column(name, justify="left" if name == "region" else "right")
    for region, records, uniques, expected in by_region.iter_rows():
        region_table.add_row(
            region, format_value(records), format_value(uniques), format_value(expected)
        )
    console.print(region_table)

    # SUDA2
    suda = suda2(md)
    at_risk = int(np.count_nonzero(suda.score > 0))
    order = np.argsort(-np.nan_to_num(suda.contributions, nan=-1.0), kind="stable")
    top = ", ".join(f"{suda.keys[j]} {suda.contributions[j]:.0f}%" for j in order[:3])
    sizes = ", ".join(
        f"{s}: {int(c):,}" for s, c in enumerate(suda.msu_counts_by_size, start=1) if c
    )
    console.print(
        _table(
            "SUDA2: minimal sample uniques",
            [
                ("records with an MSU (SUDA score > 0)", _pct(at_risk, n)),
                ("minimal sample uniques", suda.n_msus),
                ("MSUs by size", sizes),
                ("records with DIS-SUDA > 0.1", int(np.count_nonzero(suda.dis_score > 0.1))),
                ("largest DIS-SUDA score", float(suda.dis_score.max(initial=0.0))),
                ("largest contributions", top),
            ],
        )
    )

    # l-diversity of the sensitive variable
    distinct = ldiv.distinct[sensitive]
    below_2 = int(np.count_nonzero(distinct < 2))
    console.print(
        _table(
            f"l-diversity of {sensitive}",
            [
                (f"records whose class has one {sensitive} value (l = 1)", _pct(below_2, n)),
                (
                    "of them in classes of 2+ records (attribute disclosure)",
                    int(np.count_nonzero((distinct < 2) & (freq.fk >= 2))),
                ),
                ("median distinct l", float(np.median(distinct))),
                ("median entropy l", float(np.median(ldiv.entropy[sensitive]))),
            ],
            note=f"recursive (c, l)-diversity with c = {ldiv.c:g} is also computed",
        )
    )
    figures: dict[str, Any] = {
        "records": float(n),
        "households": float(households),
        "sample_uniques": float(freq.sample_uniques),
        "violations_k2": float(violations[2]),
        "violations_k3": float(violations[3]),
        "violations_k5": float(violations[5]),
        "expected_reidentifications": ind.expected_reidentifications,
        "global_risk_pct": ind.global_risk_pct,
        "household_expected_reidentifications": hh.expected_reidentifications,
        "suda_records_at_risk": float(at_risk),
        "l_distinct_below_2": float(below_2),
    }
    if protect:
        figures.update(run_demo_protection(console, out_dir=out_dir or "out"))
    figures["seconds"] = seconds = time.perf_counter() - start
    console.print(f"Done in {seconds:.1f} s.  Try it on your own file:")
    console.print("  sdckit risk FILE.csv --keys a,b,c --weight w --out risk.csv", soft_wrap=True)
    console.print("  sdckit protect JOB.toml   (see docs/job-files.md)", soft_wrap=True)
    return figures


def run_demo_protection(console: Console, *, out_dir: str | Path = "out") -> dict[str, Any]:
    """Run the shipped demo job (``sdckit/demo_job.toml``) and write its outputs to ``out_dir``.

    Parameters
    ----------
    console : rich.console.Console
    out_dir : str or Path, default "out"

    Returns
    -------
    dict
        ``protected_min_fk`` (smallest key class of the protected file),
        ``protected_global_risk_pct``, ``target_met``, ``ru_candidates``, ``ru_best`` and the
        paths ``protected_file``, ``report_internal`` and ``report_external``.
    """
    from sdckit._console import print_job_result, progress_bar
    from sdckit.jobs import load_job, run_job

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    console.print(
        Panel.fit(
            "[bold]Protection[/bold]: the job file sdckit/demo_job.toml "
            "(as `sdckit protect demo_job.toml`)\n"
            "global recoding of age and of rare countries, PRAM of marital status, "
            "local suppression to k = 3, microaggregation of income;\n"
            "an R-U map of 3 methods x 3 parameter values; HTML reports",
            border_style="blue",
        )
    )
    with resources.as_file(resources.files("sdckit").joinpath("demo_job.toml")) as job_path:
        job = load_job(job_path, output_dir=out)
    with progress_bar(console) as progress:
        outcome = run_job(job, progress=progress)
    print_job_result(job, outcome, console)
    internal, external = job.report_internal, job.report_external
    console.print(
        f"[bold]Reports[/bold]: open {internal.resolve() if internal else '-'} (internal) "
        f"and {external.resolve() if external else '-'} (external) in a browser.",
        soft_wrap=True,
    )
    risk = outcome.risk
    return {
        "protected_min_fk": float(risk.frequencies.fk.min()) if risk.frequencies else 0.0,
        "protected_global_risk_pct": risk.global_risk_pct,
        "target_met": bool(outcome.target_met),
        "ru_candidates": float(outcome.ru_map.n_candidates) if outcome.ru_map else 0.0,
        "ru_best": outcome.ru_map.best if outcome.ru_map else None,
        "protected_file": job.output_data,
        "report_internal": internal,
        "report_external": external,
    }


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``python -m sdckit.demo [--out DIR] [--risk-only]``."""
    parser = argparse.ArgumentParser(
        prog="python -m sdckit.demo", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--out", default="out", help="output directory (default: ./out)")
    parser.add_argument(
        "--risk-only", action="store_true", help="only the risk assessment (no protection)"
    )
    args = parser.parse_args(argv)
    run_demo(out_dir=args.out, protect=not args.risk_only)


if __name__ == "__main__":
    main()

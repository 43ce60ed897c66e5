"""Timings of microdata protection II: targeted record swapping, PRAM, rank swapping, shuffling,
synthetic data (issue 5).

Run: ``.venv/bin/python bench/bench_microdata_ii.py [--persons N] [--pram-values V]
[--repeat R] [--skip-synthetic]``; prints markdown tables (best of R runs, wall-clock seconds,
including validation and building the result; numba kernels are compiled or loaded from the
cache by a small warm-up run first).

* targeted record swapping of a generated census of N persons (default 1,000,000), hierarchy
  region > district > area, risk variables sex x age_group x country_of_birth, k = 3,
  swap rate 5 %, similarity [household_size] then any, urban_rural carried along; then the
  table information loss on area x sex x age_group;
* PRAM (invariant, alpha 0.5) of V values (default 10,000,000 = 10 categorical census
  variables x 1,000,000 persons);
* classic rank swapping (p = 5) of the 5 numeric census variables of the N persons;
* data shuffling of income and expenditure (regressed on age, sex, education) of N persons;
* synthetic data (CART) of the 50,000-person demo file: time, propensity-score MSE and the
  confidence-interval overlap of a regression of income.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import polars as pl

from sdckit import Microdata
from sdckit.datasets import DEMO_ROLES, generate_census, load_demo
from sdckit.masking._pram import Pram
from sdckit.masking._rank_swapping import RankSwapping
from sdckit.masking.record_swapping import TargetedRecordSwapping
from sdckit.masking.shuffling import Shuffling
from sdckit.masking.synthetic import Synthesis
from sdckit.risk import replicated_uniques
from sdckit.utility import propensity_mse, regression_comparison, swap_table_loss

PRAM_VARIABLES = [
    "region",
    "urban_rural",
    "sex",
    "age_group",
    "marital_status",
    "education",
    "economic_activity",
    "occupation",
    "country_of_birth",
    "health_condition",
]
NUMERIC = ["income", "expenditure", "savings", "hours_worked", "household_income"]


def best_time(func: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Smallest wall-clock time of ``repeat`` runs and the last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return min(times), result


def swapping_method(seed: int = 1) -> TargetedRecordSwapping:
    return TargetedRecordSwapping(
        hierarchy=["region", "district", "area"],
        risk_variables=["sex", "age_group", "country_of_birth"],
        k=3,
        swap_rate=0.05,
        similarity=[["household_size"], []],
        carry_along=["urban_rural"],
        seed=seed,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--persons", type=int, default=1_000_000)
    parser.add_argument("--pram-values", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--skip-synthetic", action="store_true")
    args = parser.parse_args()
    n = args.persons
    rows: list[tuple[str, str, float, str]] = []

    # warm-up: load (or compile) the numba kernels on a small file
    small = Microdata(generate_census(2_000, seed=2), household="household_id")
    swapping_method().apply(small)

    census = generate_census(n, seed=1)
    md = Microdata(census, household="household_id", numeric=NUMERIC)
    method = swapping_method()
    seconds, out = best_time(lambda: method.apply(md), args.repeat)
    details = out.details
    n_hh = census["household_id"].n_unique()
    risky = ", ".join(f"{k} {v:,}" for k, v in details["risky_households"].items())
    rates = details["rates"]
    rows.append(
        (
            "targeted record swapping",
            f"{n:,} persons, {n_hh:,} households",
            seconds,
            f"risky households per level: {risky}; swapped {details['swapped_households']:,} "
            f"({details['swapped_households'] / n_hh:.1%}); without donor "
            f"{details['without_donor'].height}; areas short of donors "
            f"{int(rates['short_of_donors'].sum())} of {rates.height}",
        )
    )
    start = time.perf_counter()
    method.verify(md, out)
    rows.append(("verify targeted swapping", f"{n:,} persons", time.perf_counter() - start, ""))
    seconds, loss = best_time(
        lambda: swap_table_loss(census, out, ["area", "sex", "age_group"]), args.repeat
    )
    mean = loss.measures.filter(pl.col("statistic") == "mean").row(0, named=True)
    rows.append(
        (
            "swap_table_loss area x sex x age_group",
            f"{loss.cells.height:,} cells (all margins)",
            seconds,
            f"mean abs diff {mean['abs_diff']:.3f}, mean rel abs diff {mean['rel_abs_diff']:.3f}, "
            f"mean abs sqrt diff {mean['abs_sqrt_diff']:.3f}; false zeros {loss.false_zeros:,}, "
            f"false non-zeros {loss.false_non_zeros:,}",
        )
    )

    persons = max(1, args.pram_values // len(PRAM_VARIABLES))
    pram_data = census if persons == n else generate_census(persons, seed=1)
    pram_md = Microdata(pram_data.select(PRAM_VARIABLES), keys=PRAM_VARIABLES, max_levels=100)
    pram = Pram(variables=PRAM_VARIABLES, seed=1)
    seconds, out = best_time(lambda: pram.apply(pram_md), args.repeat)
    share = sum(out.changed.values()) / (persons * len(PRAM_VARIABLES))
    rows.append(
        (
            "PRAM (invariant, alpha 0.5, min diagonal 0.8)",
            f"{persons * len(PRAM_VARIABLES):,} values ({len(PRAM_VARIABLES)} x {persons:,})",
            seconds,
            f"share of values changed {share:.2%}",
        )
    )

    rank = RankSwapping(variables=NUMERIC, p=5.0, seed=1)
    seconds, out = best_time(lambda: rank.apply(md), args.repeat)
    rows.append(("rank swapping (classic, p = 5)", f"{n:,} x {len(NUMERIC)}", seconds, ""))

    shuffle_md = Microdata(
        census.select("income", "expenditure", "age", "sex", "education"),
        keys=["sex", "education"],
        numeric=["income", "expenditure", "age"],
    )
    shuffling = Shuffling(
        variables=["income", "expenditure"], predictors=["age", "sex", "education"], seed=1
    )
    seconds, out = best_time(lambda: shuffling.apply(shuffle_md), args.repeat)
    rows.append(("data shuffling", f"{n:,} x 2 (3 predictors)", seconds, ""))

    if not args.skip_synthetic:
        demo = load_demo()
        demo_md = Microdata(demo, **DEMO_ROLES)
        synthesis = Synthesis(method="cart", min_samples_leaf=5, seed=1)
        seconds, out = best_time(lambda: synthesis.apply(demo_md), args.repeat)
        synthetic = out.microdata
        variables = [*DEMO_ROLES["keys"], "income", "hours_worked"]
        start = time.perf_counter()
        pmse = propensity_mse(demo_md, synthetic, variables)
        pmse_seconds = time.perf_counter() - start
        formula = "income ~ C(age_group) + C(sex) + C(education)"
        reg = regression_comparison(demo, synthetic.frame, formula)
        replicated = replicated_uniques(demo_md, synthetic, DEMO_ROLES["keys"]).n_replicated
        rows.append(
            (
                "synthetic data (CART, 13 variables)",
                f"{demo.height:,} persons (demo)",
                seconds,
                f"replicated uniques {replicated}; redraws "
                f"{out.details['replicated_unique_redraws']}",
            )
        )
        rows.append(
            (
                "propensity MSE (logistic, main effects)",
                f"{len(variables)} variables",
                pmse_seconds,
                f"pMSE {pmse.pmse:.3g}, null {pmse.pmse_null:.3g}, ratio {pmse.pmse_ratio:.2f}",
            )
        )
        rows.append(
            (
                "regression comparison",
                formula,
                float("nan"),
                f"mean CI overlap {reg.mean_overlap:.3f}, smallest "
                f"{float(reg.coefficients['overlap'].min()):.3f}",
            )
        )

    print(f"\n### Microdata protection II (best of {args.repeat})\n")
    print("| method | size | seconds | result |")
    print("|---|---|---:|---|")
    for name, size, secs, note in rows:
        shown = "" if secs != secs else f"{secs:.2f}"
        print(f"| {name} | {size} | {shown} | {note} |")


if __name__ == "__main__":
    main()

"""Simulation study of population-uniqueness estimators (issue 4) and speed of the model search.

A synthetic population of ``--population`` persons is drawn from a known decomposable model over
10 categorical variables (cardinalities 2 to 50); simple random samples of a few percent are
drawn; for each estimator the estimated number of population uniques among the sample uniques is
compared with the true number counted in the population.  Prints markdown tables.

Run: ``.venv/bin/python bench/bench_uniqueness.py`` (options: ``--seeds 3 --fraction 0.03``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl

from sdckit import Microdata
from sdckit.masking._marginal_swap import MarginalPreservingSwap
from sdckit.risk.graphical import DecomposableModel, decomposable_risk, search_decomposable
from sdckit.risk.graphical.model import _fit, margin_table
from sdckit.risk.loglinear import loglinear_risk
from sdckit.risk.uniqueness import ewens, pitman, poisson_gamma

NAMES = [
    "sex",
    "age",
    "marital",
    "education",
    "occupation",
    "hours",
    "region",
    "tenure",
    "citizen",
    "industry",
]
CARDS = [2, 50, 5, 10, 20, 4, 30, 8, 3, 12]
# true model: cliques as variable positions, in a perfect sequence
TRUE_CLIQUES = [(0, 1, 2), (1, 3), (3, 4, 0), (4, 5, 9), (3, 6), (6, 7), (2, 8)]


def simulate_population(size: int, seed: int, concentration: float = 0.1) -> pl.DataFrame:
    """Draw ``size`` persons from the decomposable model with random conditional tables."""
    rng = np.random.default_rng(seed)
    codes = np.zeros((size, len(CARDS)), dtype=np.int64)
    done: set[int] = set()
    for clique in TRUE_CLIQUES:
        sep = [v for v in clique if v in done]
        new = [v for v in clique if v not in done]
        n_sep = int(np.prod([CARDS[v] for v in sep])) if sep else 1
        n_new = int(np.prod([CARDS[v] for v in new]))
        sep_index = np.zeros(size, dtype=np.int64)
        for v in sep:
            sep_index = sep_index * CARDS[v] + codes[:, v]
        cond = rng.dirichlet(np.full(n_new, concentration), size=n_sep)
        cum = np.cumsum(cond, axis=1)
        u = rng.random(size)
        joint = np.empty(size, dtype=np.int64)
        order = np.argsort(sep_index, kind="stable")
        bounds = np.searchsorted(sep_index[order], np.arange(n_sep + 1))
        for s in range(n_sep):
            rows = order[bounds[s] : bounds[s + 1]]
            if len(rows):
                joint[rows] = np.minimum(np.searchsorted(cum[s], u[rows]), n_new - 1)
        for v in reversed(new):
            codes[:, v] = joint % CARDS[v]
            joint //= CARDS[v]
        done.update(new)
    return pl.DataFrame({name: codes[:, j] for j, name in enumerate(NAMES)})


def true_model() -> DecomposableModel:
    return DecomposableModel.from_cliques(NAMES, [[NAMES[v] for v in c] for c in TRUE_CLIQUES])


def tree_terms(md: Microdata) -> list[list[str]]:
    """Two-way terms of the maximum-weight spanning tree of pairwise mutual information.

    All two-way terms of 10 keys form a non-decomposable model whose full table (1.7e10 cells
    here) cannot be fitted; the strongest tree of two-way terms is decomposable.
    """
    import networkx as nx

    table = margin_table(md)
    graph = nx.Graph()
    m = len(md.keys)
    for u in range(m):
        for v in range(u + 1, m):
            mi = table.xlogx({u, v}) + table.xlogx(set()) - table.xlogx({u}) - table.xlogx({v})
            graph.add_edge(u, v, weight=mi)
    tree = nx.maximum_spanning_tree(graph)
    return [[md.keys[u], md.keys[v]] for u, v in tree.edges]


def precision_at(scores: np.ndarray, truth: np.ndarray, k: int) -> float:
    """Share of true population uniques among the ``k`` highest scores (ties by position)."""
    if k == 0:
        return float("nan")
    order = np.lexsort((np.arange(len(scores)), -scores))[:k]
    return float(truth[order].mean())


def one_seed(seed: int, population: int, fraction: float, restarts: int) -> list[dict]:
    pop = simulate_population(population, seed)
    pop_md = Microdata(pop, keys=NAMES)
    pop_ids = pop_md.key_codes.codes
    from sdckit._codes import group_ids

    gid, n_groups = group_ids(pop_ids)
    pop_count = np.bincount(gid, minlength=n_groups)[gid]
    rng = np.random.default_rng(seed + 1000)
    n = round(fraction * population)
    rows = np.sort(rng.choice(population, size=n, replace=False))
    sample = pop[rows]
    md = Microdata(sample, keys=NAMES)
    fk = np.bincount(group_ids(md.key_codes.codes)[0])[group_ids(md.key_codes.codes)[0]]
    unique = fk == 1
    truth_mask = unique & (pop_count[rows] == 1)
    truth = int(truth_mask.sum())
    out: list[dict] = []

    def add(name: str, estimate: float, scores: np.ndarray | None, extra: str = "") -> None:
        prec = (
            float("nan")
            if scores is None
            else precision_at(scores[unique], truth_mask[unique], truth)
        )
        out.append(
            {
                "seed": seed,
                "estimator": name,
                "estimate": estimate,
                "truth": truth,
                "precision": prec,
                "note": extra,
                "sample_uniques": int(unique.sum()),
            }
        )

    N = population
    add(
        "Poisson-Gamma (moments)",
        poisson_gamma(md, population_size=N).expected_population_uniques,
        None,
    )
    add(
        "Poisson-Gamma (ML)",
        poisson_gamma(md, population_size=N, method="ml").expected_population_uniques,
        None,
    )
    add("Ewens", ewens(md, population_size=N).expected_population_uniques, None)
    add("Pitman", pitman(md, population_size=N).expected_population_uniques, None)
    main = loglinear_risk(md, population_size=N)
    add("log-linear main effects", main.tau1, main.prob_population_unique)
    tree = loglinear_risk(md, population_size=N, model=tree_terms(md))
    add("log-linear two-way (spanning tree)", tree.tau1, tree.prob_population_unique)
    t0 = time.perf_counter()
    search = search_decomposable(md, restarts=restarts, seed=seed)
    elapsed = time.perf_counter() - t0
    best = decomposable_risk(md, model=search.best.model, population_size=N)
    table = margin_table(md)
    true_aic = _fit(table, true_model(), "full").aic
    add(
        "decomposable, AIC search",
        best.expected_population_uniques,
        best.risk,
        f"AIC {search.best.aic:.1f} vs true {true_aic:.1f}; search {elapsed:.1f}s",
    )
    true = decomposable_risk(md, model=true_model(), population_size=N)
    add("decomposable, true model (reference)", true.expected_population_uniques, true.risk)
    return out


def speed(population: int, seed: int, restarts: int) -> list[tuple[str, float]]:
    pop = simulate_population(population, seed)
    md = Microdata(pop, keys=NAMES)
    t0 = time.perf_counter()
    _ = md.key_codes
    t1 = time.perf_counter()
    search = search_decomposable(md)
    t2 = time.perf_counter()
    decomposable_risk(md, model=search.best.model, population_size=20 * population)
    t3 = time.perf_counter()
    true_aic = _fit(margin_table(md), true_model(), "full").aic
    t4 = time.perf_counter()
    serial = search_decomposable(md, restarts=restarts, seed=seed)
    t5 = time.perf_counter()
    parallel = search_decomposable(md, restarts=restarts, seed=seed, n_jobs=2)
    t6 = time.perf_counter()
    assert serial.to_frame().equals(parallel.to_frame())
    swap = MarginalPreservingSwap(
        model=search.best.model, threshold=0.0, max_records=50, population_size=20 * population
    )
    t7 = time.perf_counter()
    swapped = swap.apply(md)
    t8 = time.perf_counter()
    swap.verify(md, swapped)
    return [
        ("records", float(population)),
        ("encode keys (s)", t1 - t0),
        ("model search from independence (s)", t2 - t1),
        ("edge moves", float(search.n_moves)),
        ("best AIC - true model AIC", search.best.aic - true_aic),
        ("per-record risk, all records (s)", t3 - t2),
        (f"search with {restarts} random restarts, 1 process (s)", t5 - t4),
        (f"search with {restarts} random restarts, 2 processes (s)", t6 - t5),
        ("best AIC with restarts - true model AIC", serial.best.aic - true_aic),
        ("marginal-preserving swap of the 50 riskiest sample uniques (s)", t8 - t7),
        ("of which swapped (clique margins verified equal)", len(swapped.details["swapped"])),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--population", type=int, default=1_000_000)
    parser.add_argument("--fraction", type=float, default=0.03)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--restarts", type=int, default=10)
    args = parser.parse_args()
    rows: list[dict] = []
    for seed in range(args.seeds):
        rows += one_seed(seed, args.population, args.fraction, args.restarts)
    frame = pl.DataFrame(rows)
    print(
        f"## Population uniques among sample uniques (N={args.population:,}, "
        f"SRS {args.fraction:.0%}, {args.seeds} seeds)\n"
    )
    print("| seed | sample uniques | true population uniques among them |")
    print("|---|---|---|")
    for seed in range(args.seeds):
        r = frame.filter(pl.col("seed") == seed).row(0, named=True)
        print(f"| {seed} | {r['sample_uniques']} | {r['truth']} |")
    print(
        "\n| estimator | mean estimate | sd | mean truth | mean rel. error | "
        "precision@truth (mean) |"
    )
    print("|---|---|---|---|---|---|")
    summary = (
        frame.with_columns(((pl.col("estimate") - pl.col("truth")) / pl.col("truth")).alias("rel"))
        .group_by("estimator", maintain_order=True)
        .agg(
            pl.col("estimate").mean().alias("mean"),
            pl.col("estimate").std().fill_null(0.0).alias("sd"),
            pl.col("truth").mean().alias("truth"),
            pl.col("rel").mean().alias("rel"),
            pl.col("precision").mean().alias("precision"),
        )
    )
    for r in summary.iter_rows(named=True):
        prec = "n/a (same for all)" if np.isnan(r["precision"]) else f"{r['precision']:.3f}"
        print(
            f"| {r['estimator']} | {r['mean']:.1f} | {r['sd']:.1f} | {r['truth']:.1f} | "
            f"{r['rel']:+.1%} | {prec} |"
        )
    print("\n| seed | decomposable search |")
    print("|---|---|")
    for r in frame.filter(pl.col("note") != "").iter_rows(named=True):
        print(f"| {r['seed']} | {r['note']} |")
    print(f"\n## Speed (10 keys, {args.population:,} records; wall-clock seconds)\n")
    print("| step | value |")
    print("|---|---|")
    for label, value in speed(args.population, 99, 4):
        print(f"| {label} | {value:.2f} |")


if __name__ == "__main__":
    main()

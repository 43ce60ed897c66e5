"""The brute-force check of the issue: for every privacy model and loss measure of
sdckit.lattice, on random small data, Flash returns the optimum that evaluating every node
finds (the same node and loss), proven.  Where a model or measure is monotone Flash prunes
with it; where it is not, Flash must evaluate what it cannot prune, and the answer is still
the exhaustive one."""

from __future__ import annotations

import math

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdckit.lattice import (
    AECS,
    AverageReidentificationRisk,
    Discernibility,
    DistinctLDiversity,
    DPresence,
    EntropyLDiversity,
    EqualDistanceTCloseness,
    Height,
    HierarchicalTCloseness,
    KAnonymity,
    KLDivergence,
    KMap,
    LatticeData,
    Loss,
    NonUniformEntropy,
    OrderedDistanceTCloseness,
    Precision,
    RecursiveCLDiversity,
    SampleUniqueness,
    search_lattice,
)

SENSITIVE = [("a", "ab", "*"), ("b", "ab", "*"), ("c", "cd", "*"), ("d", "cd", "*")]


@st.composite
def lattices(draw: st.DrawFn) -> LatticeData:
    """2-3 keys of 1-4 values with random nested hierarchies (heights 1-3), 6-40 records, a
    sensitive attribute of 4 values and a research subset (at least one record)."""
    n_keys = draw(st.integers(2, 3))
    n = draw(st.integers(6, 40))
    columns: dict[str, list[str]] = {}
    hierarchies: dict[str, list[tuple[str, ...]]] = {}
    for j in range(n_keys):
        n_values = draw(st.integers(1, 4))
        values = [f"v{i}" for i in range(n_values)]
        groups = list(range(n_values))
        rows = [[v] for v in values]
        for level in range(1, draw(st.integers(1, 3)) + 1):
            n_prev = max(groups) + 1
            merge = draw(
                st.lists(st.integers(0, max(n_prev - 2, 0)), min_size=n_prev, max_size=n_prev)
            )
            groups = [merge[g] for g in groups]
            for row, g in zip(rows, groups, strict=True):
                row.append(f"{level}:{g}")
        hierarchies[f"k{j}"] = [tuple(r) for r in rows]
        columns[f"k{j}"] = draw(st.lists(st.sampled_from(values), min_size=n, max_size=n))
    columns["s"] = draw(st.lists(st.sampled_from("abcd"), min_size=n, max_size=n))
    subset = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    subset[draw(st.integers(0, n - 1))] = True
    return LatticeData.build(pl.DataFrame(columns), hierarchies, sensitive=["s"], subset=subset)


MODELS = {
    "k": lambda: [KAnonymity(3)],
    "distinct-l": lambda: [DistinctLDiversity("s", l=2)],
    "entropy-l": lambda: [EntropyLDiversity("s", l=1.5)],
    "recursive-cl": lambda: [RecursiveCLDiversity("s", c=2.0, l=2)],
    "equal-t": lambda: [EqualDistanceTCloseness("s", t=0.4), KAnonymity(2)],
    "ordered-t": lambda: [OrderedDistanceTCloseness("s", t=0.3)],
    "hierarchical-t": lambda: [HierarchicalTCloseness("s", t=0.3, hierarchy=SENSITIVE)],
    "delta": lambda: [DPresence(d_min=0.0, d_max=0.7)],
    "k-map": lambda: [KMap(2)],
    "average-risk": lambda: [AverageReidentificationRisk(0.4)],
    "sample-uniqueness": lambda: [SampleUniqueness(0.2)],
}

MEASURES = {
    "height": Height,
    "nu-entropy": lambda: NonUniformEntropy(monotone=True),
    "nu-entropy-suppression": lambda: NonUniformEntropy(monotone=False),
    "loss": Loss,
    "dm*": lambda: Discernibility(monotone=True),
    "dm": lambda: Discernibility(monotone=False),
    "aecs": AECS,
    "precision": Precision,
    "kl": KLDivergence,
}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lattices(),
    st.sampled_from(sorted(MODELS)),
    st.sampled_from(sorted(MEASURES)),
    st.sampled_from([0.0, 0.1, 0.3]),
)
def test_flash_returns_the_exhaustive_optimum_for_every_model_and_measure(
    data: LatticeData, model: str, measure: str, limit: float
) -> None:
    def run(algorithm: str):
        models, loss = MODELS[model](), MEASURES[measure]()
        for m in models:
            m.prepare(data)
        loss.prepare(data)
        return search_lattice(data, models, loss, suppression_limit=limit, algorithm=algorithm)

    reference = run("exhaustive")
    fast = run("flash")
    assert fast.proven_optimal and fast.stopped is None
    assert fast.optimum == reference.optimum
    if reference.optimum is None:
        assert math.isnan(fast.loss)
    else:
        assert math.isclose(fast.loss, reference.loss, rel_tol=1e-12, abs_tol=1e-12)
        assert fast.n_suppressed == reference.n_suppressed
    assert fast.n_evaluated <= reference.n_evaluated

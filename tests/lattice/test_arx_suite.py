"""ARX's own anonymisation tests on adult.csv, reproduced.

The cases are those of ARX's ``src/test/org/deidentifier/arx/test/TestAnonymization*.java``
(KAnonymity, LDiversity, EntropyLDiversity, TCloseness, OrderedDistanceTCloseness, DPresence,
KMap, RiskBased) at commit aacd487 (tests/data/arx/README.md): ARX's optimal transformation
(one level per key, keys in the column order of adult.csv without the sensitive attribute)
and its information loss.  Cases that differ only in ARX's "practical monotonicity" switch
(a search option, same optimum) are listed once.

For each case: ARX's optimum is anonymous here, its loss equals ARX's (1e-9 relative), and each
of its direct predecessors (one key one level lower) either fails or scores no less, so it is
a local optimum here too.  A few cases run the exhaustive search (``slow``); the others wait for
the fast search.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from functools import cache
from pathlib import Path

import polars as pl
import pytest

from sdckit.lattice import (
    AECS,
    AverageReidentificationRisk,
    Discernibility,
    DPresence,
    EntropyLDiversity,
    EqualDistanceTCloseness,
    HierarchicalTCloseness,
    KAnonymity,
    KMap,
    LatticeData,
    Loss,
    LossMeasure,
    NonUniformEntropy,
    OrderedDistanceTCloseness,
    PopulationUniqueness,
    PrivacyModel,
    SampleUniqueness,
    evaluate_node,
    search_lattice,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "arx"
USA = 317_238_626  # ARXPopulationModel Region.USA

pytestmark = pytest.mark.skipif(
    not (DATA / "adult.csv").exists(), reason="ARX's adult data are not in tests/data/arx"
)


def ent(monotone: bool) -> Callable[[], LossMeasure]:
    # ARX: Metric.createPrecomputedEntropyMetric(0.1, monotone); 0.1 is a precomputation
    # threshold (speed only), the gs factor is 0.5
    return lambda: NonUniformEntropy(monotone=monotone)


def dm_star() -> LossMeasure:
    return Discernibility(monotone=True)


def loss() -> LossMeasure:
    return Loss()


def aecs() -> LossMeasure:
    return AECS()


def k(v: int) -> Callable[[], list[PrivacyModel]]:
    return lambda: [KAnonymity(v)]


def eld(l: float, estimator: str) -> Callable[[], list[PrivacyModel]]:
    return lambda: [EntropyLDiversity("occupation", l=l, estimator=estimator)]


def etc(kv: int, t: float) -> Callable[[], list[PrivacyModel]]:
    return lambda: [EqualDistanceTCloseness("occupation", t=t), KAnonymity(kv)]


def otc(kv: int, t: float) -> Callable[[], list[PrivacyModel]]:
    return lambda: [OrderedDistanceTCloseness("occupation", t=t), KAnonymity(kv)]


def htc(kv: int) -> Callable[[], list[PrivacyModel]]:
    # ARX's TCloseness test adds hierarchical 0.2-closeness of occupation when the case has no
    # t-closeness model of its own ("TODO: Ugly hack!" there)
    return lambda: [
        HierarchicalTCloseness("occupation", t=0.2, hierarchy=_hierarchy("occupation")),
        KAnonymity(kv),
    ]


def dp(lo: float, hi: float) -> Callable[[], list[PrivacyModel]]:
    return lambda: [DPresence(d_min=lo, d_max=hi)]


def kmap(v: int) -> Callable[[], list[PrivacyModel]]:
    return lambda: [KMap(v)]


def kmap_ztp(v: int) -> Callable[[], list[PrivacyModel]]:
    return lambda: [
        KMap(v, population_size=USA, significance=0.01, estimator="zero_truncated_poisson")
    ]


def pu(model: str) -> Callable[[], list[PrivacyModel]]:
    return lambda: [PopulationUniqueness(0.0001, population_size=USA, model=model)]


# (name, suppression limit, measure, models, data, ARX's loss, ARX's optimum); data: "all" the 9
# keys; "sens" occupation sensitive, not a key; "subset" the research subset, occupation not a
# key; "nokey" occupation not a key (ARX's cases name it sensitive without a model that uses it)
CASES = [
    ("k-0", 0.04, ent(True), k(5), "all", "255559.85455731067", (1, 0, 1, 1, 3, 2, 2, 0, 1)),
    ("k-1", 0.04, ent(True), k(100), "all", "379417.3460570988", (1, 1, 1, 1, 3, 2, 2, 1, 1)),
    ("k-2", 0.0, ent(True), k(5), "all", "407289.5388925293", (1, 2, 1, 1, 3, 2, 2, 1, 1)),
    ("k-3", 0.0, ent(True), k(100), "all", "453196.8932458743", (0, 4, 1, 1, 3, 2, 2, 1, 1)),
    (
        "ld-0",
        0.04,
        ent(False),
        eld(5, "shannon"),
        "sens",
        "228878.2039109517",
        (1, 0, 1, 1, 2, 2, 2, 1),
    ),
    ("ld-1", 0.04, ent(False), eld(100, "shannon"), "sens", None, None),
    (
        "ld-2",
        0.0,
        ent(False),
        eld(5, "shannon"),
        "sens",
        "324620.5269918692",
        (1, 1, 1, 1, 3, 2, 2, 1),
    ),
    ("ld-3", 0.0, ent(False), eld(100, "shannon"), "sens", None, None),
    (
        "eld-0",
        0.04,
        ent(False),
        eld(5, "grassberger"),
        "sens",
        "216092.124036387",
        (1, 0, 1, 0, 3, 2, 2, 0),
    ),
    (
        "eld-2",
        0.0,
        ent(False),
        eld(5, "grassberger"),
        "sens",
        "324620.5269918692",
        (1, 1, 1, 1, 3, 2, 2, 1),
    ),
    (
        "eld-3",
        0.05,
        ent(False),
        eld(3, "grassberger"),
        "sens",
        "180347.4325366015",
        (0, 0, 1, 1, 2, 2, 2, 0),
    ),
    ("eld-5", 0.1, ent(False), eld(100, "grassberger"), "sens", None, None),
    ("tc-0", 0.04, dm_star, etc(5, 0.2), "sens", "3.11880088E8", (1, 4, 1, 0, 3, 2, 2, 1)),
    ("tc-1", 0.04, dm_star, etc(100, 0.2), "sens", "3.11880088E8", (1, 4, 1, 0, 3, 2, 2, 1)),
    ("tc-2", 0.04, ent(True), htc(5), "sens", "377622.78458729305", (1, 4, 0, 0, 3, 2, 2, 1)),
    ("tc-3", 0.04, ent(True), htc(100), "sens", "390765.61326019815", (1, 4, 1, 0, 3, 1, 2, 1)),
    ("tc-4", 0.0, dm_star, etc(5, 0.2), "sens", "4.56853172E8", (1, 4, 1, 1, 3, 2, 2, 1)),
    ("tc-5", 0.0, dm_star, etc(100, 0.2), "sens", "4.56853172E8", (1, 4, 1, 1, 3, 2, 2, 1)),
    ("tc-6", 0.0, ent(True), htc(5), "sens", "398400.0741806447", (0, 4, 1, 1, 3, 2, 2, 1)),
    ("tc-7", 0.0, ent(True), htc(100), "sens", "398400.0741806447", (0, 4, 1, 1, 3, 2, 2, 1)),
    ("tc-10", 0.04, ent(True), htc(5), "sens", "390765.61326019815", (1, 4, 1, 0, 3, 1, 2, 1)),
    ("otc-0", 0.04, dm_star, otc(5, 0.2), "sens", "2712340.0", (0, 0, 1, 1, 2, 2, 2, 0)),
    ("otc-1", 0.04, dm_star, otc(100, 0.2), "sens", "1.9937246E7", (1, 0, 1, 2, 3, 2, 2, 1)),
    ("otc-2", 0.0, dm_star, otc(5, 0.1), "sens", "9.786802E7", (1, 1, 1, 2, 3, 2, 2, 1)),
    ("otc-3", 0.0, dm_star, otc(100, 0.2), "sens", "1.6231213E8", (1, 4, 1, 1, 1, 2, 2, 1)),
    ("otc-4", 0.04, dm_star, otc(5, 0.05), "sens", "2.01413138E8", (1, 4, 1, 0, 3, 2, 2, 0)),
    ("dp-0", 0.0, aecs, dp(0.0, 0.2), "subset", "52.0", (1, 4, 1, 1, 0, 2, 2, 0)),
    ("dp-1", 0.0, ent(True), dp(0.0, 0.2), "subset", "30238.2081484441", (0, 1, 1, 2, 3, 2, 2, 0)),
    ("dp-2", 0.0, ent(False), dp(0.0, 0.2), "subset", "30238.2081484441", (0, 1, 1, 2, 3, 2, 2, 0)),
    ("dp-3", 0.05, aecs, dp(0.0, 0.2), "subset", "8.02127659574468", (0, 0, 1, 2, 1, 2, 2, 1)),
    ("dp-4", 0.05, ent(True), dp(0.0, 0.2), "subset", "19804.2887675027", (1, 0, 1, 1, 2, 2, 2, 0)),
    (
        "dp-5",
        0.05,
        ent(False),
        dp(0.0, 0.2),
        "subset",
        "20747.362350403302",
        (1, 0, 1, 1, 2, 2, 2, 0),
    ),
    ("dp-6", 0.0, aecs, dp(0.05, 0.15), "subset", "150.8", (0, 4, 0, 1, 3, 2, 2, 1)),
    (
        "dp-7",
        0.0,
        ent(True),
        dp(0.05, 0.15),
        "subset",
        "37223.2491248282",
        (1, 4, 1, 1, 1, 2, 2, 1),
    ),
    (
        "dp-8",
        0.0,
        ent(False),
        dp(0.05, 0.15),
        "subset",
        "37223.2491248282",
        (1, 4, 1, 1, 1, 2, 2, 1),
    ),
    ("dp-9", 0.05, aecs, dp(0.05, 0.15), "subset", "97.29032258064517", (1, 4, 1, 1, 0, 2, 2, 1)),
    (
        "dp-10",
        0.05,
        ent(True),
        dp(0.05, 0.15),
        "subset",
        "33649.9118226187",
        (1, 4, 1, 1, 0, 2, 2, 1),
    ),
    (
        "dp-11",
        0.05,
        ent(False),
        dp(0.05, 0.15),
        "subset",
        "33660.3063277646",
        (1, 4, 1, 1, 0, 2, 2, 1),
    ),
    ("km-0", 0.05, ent(False), kmap_ztp(3), "nokey", "130804.5332092598", (0, 0, 1, 1, 0, 2, 2, 0)),
    (
        "km-1",
        0.05,
        ent(False),
        kmap_ztp(1000),
        "nokey",
        "151894.1394841501",
        (0, 0, 1, 1, 1, 2, 1, 0),
    ),
    ("km-2", 0.0, aecs, kmap(5), "subset", "45.014925373134325", (1, 0, 1, 2, 3, 2, 2, 1)),
    ("km-3", 0.0, ent(True), kmap(3), "subset", "23387.494246375998", (0, 0, 1, 2, 3, 2, 2, 0)),
    ("km-4", 0.0, ent(False), kmap(5), "subset", "28551.7222913157", (1, 0, 1, 2, 3, 2, 2, 1)),
    ("km-5", 0.05, aecs, kmap(20), "subset", "11.424242424242424", (1, 0, 1, 1, 3, 2, 1, 0)),
    ("km-6", 0.05, ent(True), kmap(7), "subset", "17075.7181747451", (0, 0, 1, 1, 2, 2, 2, 0)),
    ("km-7", 0.05, ent(False), kmap(3), "subset", "15121.633326877098", (0, 0, 1, 1, 1, 2, 1, 0)),
    ("km-9", 0.0, ent(True), kmap(2), "subset", "23108.1673304724", (1, 0, 1, 1, 3, 2, 2, 0)),
    ("km-10", 0.0, ent(False), kmap(10), "subset", "30238.2081484441", (0, 1, 1, 2, 3, 2, 2, 0)),
    ("km-11", 0.05, aecs, kmap(10), "subset", "7.215311004784689", (0, 0, 1, 1, 3, 2, 1, 0)),
    ("km-12", 0.05, ent(True), kmap(5), "subset", "17053.8743069776", (0, 0, 1, 0, 2, 2, 2, 1)),
    (
        "rb-0",
        0.04,
        ent(False),
        lambda: [AverageReidentificationRisk(0.01)],
        "all",
        "314637.8461904862",
        (1, 0, 1, 1, 3, 2, 2, 1, 1),
    ),
    (
        "rb-1",
        0.04,
        loss,
        lambda: [SampleUniqueness(0.01)],
        "all",
        "0.1606952725863784",
        (0, 3, 0, 0, 1, 1, 1, 1, 0),
    ),
    (
        "rb-2",
        0.04,
        ent(False),
        pu("dankar"),
        "all",
        "144298.1603344462",
        (0, 0, 1, 1, 1, 2, 1, 0, 0),
    ),
    ("rb-3", 0.04, loss, pu("zayatz"), "all", "0.16078200456326086", (0, 3, 0, 0, 1, 1, 1, 1, 0)),
    (
        "rb-4",
        0.04,
        ent(False),
        pu("pitman"),
        "all",
        "144298.1603344462",
        (0, 0, 1, 1, 1, 2, 1, 0, 0),
    ),
    ("rb-5", 0.04, loss, pu("snb"), "all", "0.17599055898432758", (0, 3, 0, 0, 2, 1, 1, 1, 0)),
]


def _hierarchy(name: str) -> list[tuple[str, ...]]:
    with open(DATA / f"adult_hierarchy_{name}.csv", encoding="utf-8", newline="") as f:
        return [tuple(row) for row in csv.reader(f, delimiter=";")]


@cache
def _adult(kind: str) -> LatticeData:
    frame = pl.read_csv(DATA / "adult.csv", separator=";", infer_schema_length=0)
    keys = [c for c in frame.columns if kind == "all" or c != "occupation"]
    subset = None
    if kind == "subset":
        sub = pl.read_csv(DATA / "adult_subset.csv", separator=";", infer_schema_length=0)
        # ARX's DataSubset.create: each subset row marks the first unused equal row of the data
        nth = pl.int_range(pl.len()).over(sub.columns).alias("_nth")
        marked = sub.with_columns(nth, pl.lit(True).alias("_in"))
        joined = frame.with_row_index("_row").with_columns(nth)
        joined = joined.join(marked, on=[*sub.columns, "_nth"], how="left")
        flags = joined.sort("_row").get_column("_in").fill_null(False)
        assert int(flags.sum()) == sub.height
        subset = flags.to_numpy()
    sensitive = ["occupation"] if kind == "sens" else []
    return LatticeData.build(
        frame, {k: _hierarchy(k) for k in keys}, sensitive=sensitive, subset=subset
    )


def _prepared(case: tuple) -> tuple[LatticeData, list[PrivacyModel], LossMeasure]:
    _, _, measure, models, kind, _, _ = case
    data = _adult(kind)
    models_ = models()
    for m in models_:
        m.prepare(data)
    measure_ = measure()
    measure_.prepare(data)
    return data, models_, measure_


# ARX's entropy l-diversity stops summing f G(f) at the first partial sum above its bound; with
# Grassberger's G(1) < 0 the verdict then depends on the order of ARX's hash table of values
# (Distribution.java), which sdckit does not reproduce: it judges the whole sum (the
# definition), so with suppression a few classes pass here that ARX suppresses
NOT_REPRODUCED = {"eld-0", "eld-3"}


def _param(case: tuple) -> object:
    marks = (
        [pytest.mark.xfail(strict=True, reason="ARX's hash order in Grassberger's early stop")]
        if case[0] in NOT_REPRODUCED
        else []
    )
    return pytest.param(case, id=case[0], marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_arx_optimum_is_anonymous_with_arx_loss_and_locally_optimal(case: tuple) -> None:
    _name, limit, _, _, _, expected, node = case
    data, models, measure = _prepared(case)
    if node is None:
        # ARX finds no solution: the sensitive attribute has fewer values than l, so no class
        # of any node is diverse enough and the top node (one class) fails
        top = evaluate_node(data, data.heights, models, suppression_limit=limit, measure=measure)
        assert not top.anonymous
        return
    result = evaluate_node(data, node, models, suppression_limit=limit, measure=measure)
    assert result.anonymous
    assert result.loss == pytest.approx(float(expected), rel=1e-9, abs=0.0)
    for j in range(len(node)):
        if node[j] == 0:
            continue
        lower = (*node[:j], node[j] - 1, *node[j + 1 :])
        other = evaluate_node(data, lower, models, suppression_limit=limit, measure=measure)
        assert not other.anonymous or other.loss >= result.loss, lower


SLOW = ["tc-0", "otc-0", "dp-3"]


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_exhaustive_search_finds_arx_optimum(name: str) -> None:
    case = next(c for c in CASES if c[0] == name)
    _, limit, _, _, _, expected, node = case
    data, models, measure = _prepared(case)
    result = search_lattice(data, models, measure, suppression_limit=limit, algorithm="exhaustive")
    assert result.loss == pytest.approx(float(expected), rel=1e-9, abs=0.0)
    # ARX reports its optimum; with ties in loss the node may differ, the loss may not
    optimum_rows = result.nodes.filter(pl.col("anonymous") & (pl.col("loss") == result.loss))
    nodes = {tuple(r[: len(node)]) for r in optimum_rows.iter_rows()}
    assert tuple(node) in nodes
    assert math.isfinite(result.loss)


# The cases a full Flash search proves in a few seconds here (``bench/bench_arx_suite.py``
# runs every case: the others take 4 to 350 s, population uniqueness with Pitman's and
# Dankar's estimators the longest)
FLASH = [
    "k-0", "k-1", "k-2", "k-3", "ld-2", "ld-3", "eld-2", "tc-4", "tc-5", "tc-6", "tc-7",
    "otc-2", "otc-3", "dp-0", "dp-1", "dp-2", "dp-6", "dp-7", "dp-8", "km-0", "km-1", "km-2",
    "km-3", "km-4", "km-5", "km-6", "km-7", "km-9", "km-10", "km-12",
]  # fmt: skip


@pytest.mark.parametrize("name", FLASH)
def test_flash_finds_and_proves_arx_optimum(name: str) -> None:
    case = next(c for c in CASES if c[0] == name)
    _, limit, _, _, _, expected, node = case
    data, models, measure = _prepared(case)
    result = search_lattice(data, models, measure, suppression_limit=limit)
    assert result.algorithm == "flash" and result.proven_optimal
    if node is None:  # ARX finds no solution (fewer sensitive values than l): neither do we
        assert result.optimum is None
        return
    assert result.loss == pytest.approx(float(expected), rel=1e-9, abs=0.0)
    assert result.optimum == tuple(node)
    assert result.n_evaluated < data.n_nodes


def test_flash_beats_arx_practical_monotonicity_where_it_misses_the_optimum() -> None:
    """ARX's case tc-10 assumes "practical monotonicity" (a non-monotone setting searched as if
    monotone) and returns a node of loss 390765.6; its case tc-2, the same data, models and
    measure searched exactly, finds 377622.8 at another node.  sdckit's Flash prunes only where
    the flags allow it, so it returns tc-2's optimum for tc-10."""
    case = next(c for c in CASES if c[0] == "tc-10")
    exact = next(c for c in CASES if c[0] == "tc-2")
    assert (case[1], case[4]) == (exact[1], exact[4])  # same limit and data (and, above, models)
    data, models, measure = _prepared(case)
    result = search_lattice(data, models, measure, suppression_limit=case[1])
    assert result.proven_optimal
    assert result.optimum == exact[6]
    assert result.loss == pytest.approx(float(exact[5]), rel=1e-9, abs=0.0)
    assert result.loss < float(case[5])

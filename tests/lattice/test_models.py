"""Privacy models and loss measures of the lattice on tiny data, values computed by hand."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdckit.errors import ParameterError
from sdckit.lattice import (
    AECS,
    AverageReidentificationRisk,
    Discernibility,
    DistinctLDiversity,
    DPresence,
    EntropyLDiversity,
    EqualDistanceTCloseness,
    GlobalRisk,
    HierarchicalTCloseness,
    IndividualRisk,
    KAnonymity,
    KLDivergence,
    KMap,
    LatticeData,
    Loss,
    NonUniformEntropy,
    OrderedDistanceTCloseness,
    PopulationUniqueness,
    Precision,
    RecursiveCLDiversity,
    SampleUniqueness,
    SuppressedAndRecoded,
    evaluate_node,
)

AGE = [("31", "30-39", "*"), ("35", "30-39", "*"), ("47", "40-49", "*"), ("48", "40-49", "*")]
SEX = [("f", "*"), ("m", "*")]


def _data(**kw) -> LatticeData:
    # records: (31,f,a) (35,m,b) (47,f,a) (48,f,c) (48,f,a) (31,m,b)
    df = pl.DataFrame(
        {
            "age": [31, 35, 47, 48, 48, 31],
            "sex": ["f", "m", "f", "f", "f", "m"],
            "dx": ["a", "b", "a", "c", "a", "b"],
            "s": [True, True, False, True, False, True],
        }
    )
    return LatticeData.build(df, {"age": AGE, "sex": SEX}, sensitive=["dx"], **kw)


def _by_size(classes, passes) -> dict[tuple[str, ...], bool]:
    data = classes.data
    return {
        tuple(data.labels[j][lv][c[j]] for j, lv in enumerate(classes.levels)): bool(p)
        for c, p in zip(classes.codes, passes, strict=True)
    }


def test_distinct_and_recursive_l_diversity_by_hand() -> None:
    data = _data()
    node = data.classes((1, 1))  # 30-39: dx a,b,b ; 40-49: dx a,c,a
    assert _by_size(node, DistinctLDiversity("dx", l=2).class_passes(node)) == {
        ("30-39", "*"): True,
        ("40-49", "*"): True,
    }
    # recursive (c=1, l=2): r1 < 1 * (r2 + ...): 30-39: 2 < 1 no; 40-49: 2 < 1 no
    rec = RecursiveCLDiversity("dx", c=1.0, l=2).class_passes(node)
    assert not rec.any()
    # c=3: 2 < 3 yes for both
    assert RecursiveCLDiversity("dx", c=3.0, l=2).class_passes(node).all()


def test_entropy_l_diversity_by_hand() -> None:
    data = _data()
    node = data.classes((2, 1))  # one class: a x3, b x2, c x1
    # entropy = -(.5 ln .5 + 1/3 ln 1/3 + 1/6 ln 1/6) = 1.0114; exp = 2.749
    assert EntropyLDiversity("dx", l=2.74).class_passes(node).tolist() == [True]
    assert EntropyLDiversity("dx", l=2.76).class_passes(node).tolist() == [False]
    # Grassberger: G(3) = G(2), so sum f G(f) = 3 G(2) + 2 G(2) + G(1)
    # = 5 * 0.7296371545 - 1.2703628455 = 2.3778229; a class passes when
    # 6 (G(6) - ln l) >= that: ln l <= 1.7963038 - 0.3963038 = 1.4, and l <= 3 distinct values
    assert EntropyLDiversity("dx", l=3, estimator="grassberger").class_passes(node).tolist() == [
        True
    ]
    assert EntropyLDiversity("dx", l=3).class_passes(node).tolist() == [False]  # 2.749 < 3
    assert EntropyLDiversity("dx", l=3.01, estimator="grassberger").class_passes(node).tolist() == [
        False
    ]  # 4 distinct values needed


def test_t_closeness_by_hand() -> None:
    data = _data()
    node = data.classes((1, 1))
    # overall a .5 b 1/3 c 1/6; 30-39: a 1/3 b 2/3; 40-49: a 2/3 c 1/3
    # equal: 30-39 .5(|1/3-.5|+|2/3-1/3|+1/6) = 1/3; 40-49 .5(1/6+1/3+1/6) = 1/3
    assert EqualDistanceTCloseness("dx", t=0.34).class_passes(node).all()
    assert not EqualDistanceTCloseness("dx", t=0.33).class_passes(node).any()
    # ordered a<b<c: cumulative differences 30-39: -1/6, +1/6, 0 -> 1/3 / 2 = 1/6
    # 40-49: +1/6, -1/6, 0 -> 1/6
    assert OrderedDistanceTCloseness("dx", t=0.17).class_passes(node).all()
    assert not OrderedDistanceTCloseness("dx", t=0.16).class_passes(node).any()
    # hierarchy a,b under "ab", c alone, all under "*": 30-39 extra a -1/6 b +1/3 c -1/6;
    # node ab: min(1/3, 1/6) * 1/2 = 1/12; then ab +1/6, c -1/6 at the root: 1/6 * 1 -> 1/4
    hier = [("a", "ab", "*"), ("b", "ab", "*"), ("c", "c", "*")]
    htc = HierarchicalTCloseness("dx", t=0.25, hierarchy=hier)
    htc.prepare(data)
    passes = _by_size(node, htc.class_passes(node))
    # 40-49: a +1/6 b -1/3 c +1/6: ab node min(1/6,1/3)/2 = 1/12; root ab -1/6 c +1/6 -> 1/4
    assert passes == {("30-39", "*"): True, ("40-49", "*"): True}
    htc2 = HierarchicalTCloseness("dx", t=0.24, hierarchy=hier)
    htc2.prepare(data)
    assert not htc2.class_passes(node).any()


def test_delta_presence_and_k_map_with_subset() -> None:
    data = _data(subset="s")  # released: (31,f) (35,m) (48,f) (31,m)
    node = data.classes((1, 0))  # 30-39 f: 1 of 1; 30-39 m: 2 of 2; 40-49 f: 1 of 3
    dp = DPresence(d_min=0.0, d_max=0.5)
    dp.prepare(data)
    assert _by_size(node, dp.class_passes(node)) == {
        ("30-39", "f"): False,
        ("30-39", "m"): False,
        ("40-49", "f"): True,
    }
    km = KMap(3)
    km.prepare(data)
    assert _by_size(node, km.class_passes(node)) == {
        ("30-39", "f"): False,
        ("30-39", "m"): False,
        ("40-49", "f"): True,
    }
    # 3 released records suppressed of 4: limit 0.75 -> budget 3
    r = evaluate_node(data, (1, 0), [dp], suppression_limit=0.75)
    assert r.anonymous and r.n_suppressed == 3
    # a class without released records that fails d_min cannot be suppressed
    r = evaluate_node(data, (0, 0), [DPresence(d_min=0.1, d_max=1.0)], suppression_limit=1.0)
    assert not r.anonymous  # (47,f) has no released record
    with pytest.raises(ParameterError, match="subset"):
        DPresence(d_min=0.0, d_max=0.5).prepare(_data())


def test_k_map_estimate_matches_arx_derivation() -> None:
    # lambda = 30162 / 317238626 * 3 = 2.85e-4: P(X=1 | X>=1) = 0.99986 >= 0.99 -> k' = 2
    km = KMap(3, population_size=317_238_626, estimator="zero_truncated_poisson")
    assert km.derived_k(30_162) == 2
    # k = 1000: lambda = 0.0951; P(1|>=1) = 0.9530, + P(2|>=1) = 0.9976 -> k' = 3
    assert (
        KMap(1000, population_size=317_238_626, estimator="zero_truncated_poisson").derived_k(
            30_162
        )
        == 3
    )
    # Poisson, lambda = 0.5 (k=5, n/N = 0.1): P(X<=0) = .6065, P(X<=1) = .9098, P(X<=2) = .9856,
    # P(X<=3) = .9982 >= .99 -> c = 3, ARX's k' = c + 2 = 5 -> min(k, 5) = 5
    assert KMap(5, population_size=100, estimator="poisson").derived_k(10) == 5
    with pytest.raises(ParameterError):
        KMap(3, population_size=100)


def test_risk_models_suppress_the_smallest_classes() -> None:
    data = _data()
    # node (0,0): classes (31,f)1 (35,m)1 (47,f)1 (48,f)2 (31,m)1; risk 5/6 = .83
    r = evaluate_node(data, (0, 0), [AverageReidentificationRisk(0.5)], suppression_limit=1.0)
    # suppressing the 4 singletons leaves one class of 2: risk .5
    assert r.anonymous and r.n_suppressed == 4
    r = evaluate_node(data, (0, 0), [AverageReidentificationRisk(0.5)], suppression_limit=0.5)
    assert not r.anonymous
    # sample uniqueness <= .5: 4 uniques of 6; drop 2 (first by record order): 2 of 4 = .5
    r = evaluate_node(data, (0, 0), [SampleUniqueness(0.5)], suppression_limit=0.5)
    assert r.anonymous and r.n_suppressed == 2
    assert r.suppressed.sum() == 2


def test_loss_measures_by_hand() -> None:
    data = _data()
    node = data.classes((1, 1))  # two classes of 3
    none = np.zeros(2, dtype=bool)
    # DM* = 9 + 9; DM with one class suppressed: 9 + 6 * 3
    assert Discernibility(monotone=True).loss(node, none) == 18.0
    assert Discernibility(monotone=False).loss(node, np.array([True, False])) == 27.0
    # AECS: 6 / 2; one suppressed: 6 / (1 + 1)
    assert AECS().loss(node, none) == 3.0
    assert AECS().loss(node, np.array([True, False])) == 3.0
    # precision: age 1/2, sex 1/1 -> mean .75; one class suppressed: age (3*.5 + 3)/6 = .75,
    # sex (3 + 3)/6 = 1 -> .875
    assert Precision().loss(node, none) == 0.75
    assert Precision().loss(node, np.array([True, False])) == 0.875
    # non-uniform entropy: age: 31 x2, 35, 47, 48 x2 -> 30-39 x3, 40-49 x3:
    # 2 log2(3/2) + log2 3 + log2 3 + 2 log2(3/2) = 4 log2 1.5 + 2 log2 3; sex f x4, m x2 -> 6:
    # 4 log2 1.5 + 2 log2 3
    ent = NonUniformEntropy(monotone=True)
    expected = 2 * (4 * math.log2(1.5) + 2 * math.log2(3))
    assert ent.loss(node, none) == pytest.approx(expected, abs=1e-9)
    # loss: age share 2/4 for every record, normalised (6*.5 - 6/4) / (6 - 6/4) = 1/3;
    # sex share 1: (6 - 3) / (6 - 3) = 1; geometric mean (4/3 * 2) ** .5 - 1
    assert Loss().loss(node, none) == pytest.approx(math.sqrt(8 / 3) - 1, abs=1e-9)
    # own: nothing suppressed; recoded cells: age all 6, sex all 6 -> 12 / 12
    assert SuppressedAndRecoded().loss(node, none) == 1.0


def test_kl_divergence_by_hand() -> None:
    data = _data()
    node = data.classes((2, 1))  # everything in one class: area 4 ages x 2 sexes = 8
    # records: (31,f) (35,m) (47,f) (48,f) x2 (31,m): p = 1/6 each, 2/6 for the two (48,f)
    # q = 1/8 for every record: sum p log2(8 p) = 4 * 1/6 log2(8/6) + 2 * 2/6 log2(16/6)
    expected = 4 / 6 * math.log2(8 / 6) + 4 / 6 * math.log2(16 / 6)
    kl = KLDivergence()
    assert kl.loss(node, np.zeros(1, dtype=bool)) == pytest.approx(expected, abs=1e-12)
    # nothing generalised: q = p for every record
    base = data.classes((0, 0))
    assert kl.loss(base, np.zeros(base.n_classes, dtype=bool)) == pytest.approx(0.0, abs=1e-12)
    # all suppressed: the whole domain, as the top node
    assert kl.loss(base, np.ones(base.n_classes, dtype=bool)) == pytest.approx(expected)


def test_non_monotone_entropy_adds_the_suppressed_records_entropy() -> None:
    data = _data()
    node = data.classes((0, 0))
    sup = np.array([len(c) == 0 for c in node.codes])  # none
    mono = NonUniformEntropy(monotone=True)
    nm = NonUniformEntropy(monotone=False)
    assert nm.loss(node, sup) == mono.loss(node, sup) == 0.0
    # suppress the two classes (31,f) and (31,m): age 31 x2 -> 2 log2(2/2) = 0;
    # sex f, m -> 2 * log2(2) = 2
    labels = [(data.labels[0][0][c[0]], data.labels[1][0][c[1]]) for c in node.codes]
    sup = np.array([lab[0] == "31" for lab in labels])
    assert nm.loss(node, sup) == pytest.approx(2.0, abs=1e-9)


def test_parameters_are_checked() -> None:
    with pytest.raises(ParameterError, match="'l'"):
        DistinctLDiversity("dx", l=0)
    with pytest.raises(ParameterError, match="'t'"):
        EqualDistanceTCloseness("dx", t=1.5)
    with pytest.raises(ParameterError, match="d_min"):
        DPresence(d_min=0.5, d_max=0.2)
    with pytest.raises(ParameterError, match="'threshold'"):
        SampleUniqueness(2.0)
    with pytest.raises(ParameterError, match="sensitive"):
        DistinctLDiversity("nope", l=2).prepare(_data())


def test_sdckit_risk_targets_by_hand() -> None:
    data = _data()
    # node (0,0): classes of 1, 1, 1, 2, 1 records; risk 1/f: expected re-identifications 5
    target = GlobalRisk(max_expected_reidentifications=2.0)
    target.prepare(data)
    assert not target.holds(np.array([1, 1, 1, 2, 1]))
    # suppressing the first three singletons leaves (48,f) x2 and (31,m): 1 + 1 = 2
    r = evaluate_node(data, (0, 0), [target], suppression_limit=0.5)
    assert r.anonymous and r.n_suppressed == 3
    # global risk: 100 * 2 / 6 = 33.3 % after the same suppression
    pct = GlobalRisk(max_global_risk_pct=34.0)
    pct.prepare(data)
    assert evaluate_node(data, (0, 0), [pct], suppression_limit=0.5).n_suppressed == 3
    # with weights: one record of weight 17 (Benedetti-Franconi: 0.17707583), three of 36
    df = pl.DataFrame({"sex": ["f", "m", "m", "m"], "w": [17.0, 12.0, 12.0, 12.0]})
    weighted = LatticeData.build(df, {"sex": SEX}, weight="w")
    node = weighted.classes((0,))
    passes = IndividualRisk(0.18).class_passes(node)
    assert passes.all()
    assert IndividualRisk(0.17).class_passes(node).tolist() == [False, True]
    # 1 * 0.17707583 + 3 * p / (f - q) with p = 3/36, q = 11/12: 3 * (1/12) / (3 - 11/12)
    expected = 0.17707583 + 3 * (1 / 12) / (3 - 11 / 12)
    sums = np.array([17.0, 36.0])
    assert GlobalRisk(max_expected_reidentifications=expected + 1e-6).holds(np.array([1, 3]), sums)
    assert not GlobalRisk(max_expected_reidentifications=expected - 1e-6).holds(
        np.array([1, 3]), sums
    )


# -- monotonicity, on random small data ------------------------------------------------------

LEVELS3 = [(str(v), str(v // 2), "*") for v in range(4)]
LEVELS2 = [(str(v), "*") for v in range(3)]

records = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 3), st.booleans()),
    min_size=4,
    max_size=40,
)


def _random(rows, subset: bool = False) -> LatticeData:
    df = pl.DataFrame(
        {
            "a": [str(r[0]) for r in rows],
            "b": [str(r[1]) for r in rows],
            "s": [str(r[2]) for r in rows],
            "in": [r[3] for r in rows],
        }
    )
    return LatticeData.build(
        df, {"a": LEVELS3, "b": LEVELS2}, sensitive=["s"], subset="in" if subset else None
    )


S_HIER = [(str(v), "lo" if v < 2 else "hi", "*") for v in range(4)]

MODELS = [
    lambda: KAnonymity(3),
    lambda: DistinctLDiversity("s", l=2),
    lambda: EntropyLDiversity("s", l=1.5),
    lambda: RecursiveCLDiversity("s", c=2.0, l=2),
    lambda: EqualDistanceTCloseness("s", t=0.3),
    lambda: OrderedDistanceTCloseness("s", t=0.3),
    lambda: AverageReidentificationRisk(0.3),
    lambda: SampleUniqueness(0.1),
    lambda: PopulationUniqueness(0.05, population_size=400, model="zayatz"),
    lambda: GlobalRisk(max_expected_reidentifications=6.0),
    lambda: KMap(4, population_size=200, estimator="poisson"),
    lambda: EntropyLDiversity("s", l=1.5, estimator="grassberger"),
    lambda: HierarchicalTCloseness("s", t=0.3, hierarchy=S_HIER),
    lambda: DPresence(d_min=0.2, d_max=0.8),
    lambda: KMap(3),
]

#: models that need the research subset
SUBSET = (DPresence, KMap)


def _check_monotone(data: LatticeData, model, limit: float) -> None:
    model.prepare(data)
    nodes = list(itertools.product(*(range(h + 1) for h in data.heights)))
    ok = {n: evaluate_node(data, n, [model], suppression_limit=limit).anonymous for n in nodes}
    for n in nodes:
        if not ok[n]:
            continue
        for j in range(len(n)):
            if n[j] < data.heights[j]:
                up = (*n[:j], n[j] + 1, *n[j + 1 :])
                assert ok[up], (model.describe(), n, up)


@settings(max_examples=150, deadline=None)
@given(records, st.integers(0, len(MODELS) - 1))
def test_monotone_models_never_fail_going_up(rows, which) -> None:
    model = MODELS[which]()
    if not model.monotone:
        return
    subset = isinstance(model, SUBSET) and getattr(model, "population_size", None) is None
    if subset and not any(r[3] for r in rows):
        return
    _check_monotone(_random(rows, subset), model, 0.0)


@settings(max_examples=150, deadline=None)
@given(records, st.integers(0, len(MODELS) - 1))
def test_models_monotone_with_suppression_never_fail_going_up(rows, which) -> None:
    model = MODELS[which]()
    if not model.monotone_with_suppression:
        return
    subset = isinstance(model, SUBSET) and getattr(model, "population_size", None) is None
    if subset and not any(r[3] for r in rows):
        return
    _check_monotone(_random(rows, subset), model, 0.2)


MEASURES = [
    lambda: NonUniformEntropy(monotone=True),
    lambda: NonUniformEntropy(monotone=False),
    lambda: Loss(),
    lambda: Discernibility(monotone=True),
    lambda: Discernibility(monotone=False),
    lambda: AECS(),
    lambda: Precision(),
    lambda: SuppressedAndRecoded(),
    lambda: KLDivergence(),
]


@settings(max_examples=150, deadline=None)
@given(records, st.integers(0, len(MEASURES) - 1))
def test_lower_bounds_hold_and_monotone_measures_never_fall(rows, which) -> None:
    data = _random(rows)
    measure = MEASURES[which]()
    measure.prepare(data)
    model = KAnonymity(2)
    nodes = list(itertools.product(*(range(h + 1) for h in data.heights)))
    res = {
        n: evaluate_node(data, n, [model], suppression_limit=0.3, measure=measure) for n in nodes
    }
    for n in nodes:
        bound = measure.lower_bound(n, data)
        for m in nodes:
            if all(a >= b for a, b in zip(m, n, strict=True)):
                assert res[m].loss >= bound - 1e-9, (measure.describe(), n, m)
                if measure.monotone and res[n].anonymous and res[m].anonymous:
                    assert res[m].loss >= res[n].loss - 1e-9, (measure.describe(), n, m)


def test_zayatz_hypergeometric_product_equals_scipy() -> None:
    from scipy import stats

    from sdckit.lattice.risk_models import _one_sampled

    sizes = np.array([1, 2, 5, 40])
    expected = stats.hypergeom.pmf(1, 10_000, sizes, 300)
    assert np.allclose(_one_sampled(sizes, 10_000.0, 300.0), expected, rtol=1e-12)

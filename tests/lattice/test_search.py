"""The Flash search and the heuristic against the exhaustive search, on random small data."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit.errors import ParameterError
from sdckit.lattice import (
    Height,
    KAnonymity,
    LatticeData,
    LossMeasure,
    NodeClasses,
    PrivacyModel,
    _rollup,
    recode_locally,
    search_lattice,
)

MISSING = "?"  # a missing value is a value of the hierarchy, as in ARX's adult data


class SizeSquares(LossMeasure):
    """The sum of the squared sizes of the released classes (suppressed records cost 0).

    Monotone for k-anonymity with or without suppression: a more general node keeps every
    class kept below it (merged into larger ones), and merging classes adds to the squares.
    """

    def loss(self, classes: NodeClasses, suppressed: np.ndarray) -> float:
        return float((classes.sizes[~suppressed].astype(np.float64) ** 2).sum())


class SuppressionPenalty(LossMeasure):
    """Squares plus ``n`` per suppressed record: not monotone with suppression (generalising
    can release suppressed records), declared not monotone."""

    monotone = False

    def loss(self, classes: NodeClasses, suppressed: np.ndarray) -> float:
        sizes = classes.sizes.astype(np.float64)
        n = classes.data.n_records
        return float((sizes[~suppressed] ** 2).sum() + sizes[suppressed].sum() * n)


class AtMost(PrivacyModel):
    """Every released class has at most ``m`` records: generalising can break it."""

    monotone = False
    monotone_with_suppression = False

    def __init__(self, m: int) -> None:
        self.m = m

    def class_passes(self, classes: NodeClasses) -> np.ndarray:
        return classes.sizes <= self.m


@st.composite
def lattices(draw: st.DrawFn) -> LatticeData:
    """2-4 keys of 1-5 values (one of them possibly the missing code), hierarchies of
    heights 1-3 merging the groups of the level below at random, 4-40 records."""
    n_keys = draw(st.integers(2, 4))
    n_records = draw(st.integers(4, 40))
    columns: dict[str, list[str]] = {}
    hierarchies: dict[str, list[tuple[str, ...]]] = {}
    for j in range(n_keys):
        n_values = draw(st.integers(1, 5))
        values = [f"v{i}" for i in range(n_values)]
        if draw(st.booleans()):
            values[-1] = MISSING
        groups = list(range(n_values))
        rows = [[v] for v in values]
        for level in range(1, draw(st.integers(1, 3)) + 1):
            n_prev = max(groups) + 1
            merge = draw(st.lists(st.integers(0, max(n_prev - 2, 0)), min_size=n_prev,
                                  max_size=n_prev))  # fmt: skip
            groups = [merge[g] for g in groups]
            for row, g in zip(rows, groups, strict=True):
                row.append(f"{level}:{g}")
        hierarchies[f"k{j}"] = [tuple(r) for r in rows]
        columns[f"k{j}"] = draw(
            st.lists(st.sampled_from(values), min_size=n_records, max_size=n_records)
        )
    return LatticeData.build(pl.DataFrame(columns), hierarchies)


LIMITS = st.sampled_from([0.0, 0.1, 0.25])


def _same(fast, reference) -> None:
    assert fast.optimum == reference.optimum
    if reference.optimum is None:
        assert math.isnan(fast.loss)
    else:
        assert fast.loss == reference.loss and fast.n_suppressed == reference.n_suppressed
    assert fast.proven_optimal and fast.stopped is None
    assert fast.n_evaluated <= reference.n_evaluated


@given(lattices(), st.integers(1, 4), LIMITS)
def test_flash_returns_the_exhaustive_optimum_with_height(data, k, limit) -> None:
    args = ([KAnonymity(k)], Height())
    reference = search_lattice(data, *args, suppression_limit=limit, algorithm="exhaustive")
    fast = search_lattice(data, *args, suppression_limit=limit)
    _same(fast, reference)
    assert fast.lower_bound == (math.inf if fast.optimum is None else fast.loss)
    # every evaluated node agrees with the exhaustive search
    joined = fast.nodes.join(reference.nodes, on=list(data.keys), suffix="_ref")
    assert joined.height == fast.nodes.height
    assert (joined["anonymous"] == joined["anonymous_ref"]).all()


@given(lattices(), st.integers(1, 4), LIMITS)
def test_flash_returns_the_exhaustive_optimum_with_size_squares(data, k, limit) -> None:
    args = ([KAnonymity(k)], SizeSquares())
    reference = search_lattice(data, *args, suppression_limit=limit, algorithm="exhaustive")
    _same(search_lattice(data, *args, suppression_limit=limit), reference)


@given(lattices(), st.integers(1, 4), LIMITS)
def test_a_measure_declared_not_monotone_is_still_searched_exactly(data, k, limit) -> None:
    args = ([KAnonymity(k)], SuppressionPenalty())
    reference = search_lattice(data, *args, suppression_limit=limit, algorithm="exhaustive")
    fast = search_lattice(data, *args, suppression_limit=limit)
    _same(fast, reference)
    # no measure rule and no bound: only the non-anonymous nodes were tagged, never an
    # anonymous one skipped
    anonymous = reference.nodes.filter(pl.col("anonymous")).height
    assert fast.nodes.filter(pl.col("anonymous")).height == anonymous


@given(lattices(), st.integers(1, 6), LIMITS)
def test_a_model_that_is_not_monotone_is_searched_exactly(data, m, limit) -> None:
    args = ([AtMost(m)], Height())
    reference = search_lattice(data, *args, suppression_limit=limit, algorithm="exhaustive")
    fast = search_lattice(data, *args, suppression_limit=limit)
    _same(fast, reference)
    # the heuristic's greedy ascent (no tagging) and its descent, then Flash: the same optimum
    _same(search_lattice(data, *args, suppression_limit=limit, algorithm="heuristic"), reference)
    # proven only because every node that could beat the optimum was evaluated: no tagging
    # without monotonicity, only the bound (Height: its loss) and the monotone measure
    best = math.inf if fast.optimum is None else fast.loss
    levels = reference.nodes.select(data.keys).rows()
    evaluated = set(fast.nodes.select(data.keys).rows())
    for node in levels:
        if sum(node) < best:
            assert node in evaluated


@given(lattices(), st.integers(1, 4), LIMITS, st.integers(1, 6))
def test_a_budget_returns_the_best_found_and_a_true_bound(data, k, limit, budget) -> None:
    args = ([KAnonymity(k)], Height())
    reference = search_lattice(data, *args, suppression_limit=limit, algorithm="exhaustive")
    for algorithm in ("heuristic", "flash"):
        cut = search_lattice(
            data, *args, suppression_limit=limit, algorithm=algorithm, max_nodes=budget
        )
        assert cut.n_evaluated <= budget
        true = math.inf if reference.optimum is None else reference.loss
        assert cut.lower_bound <= true
        if cut.optimum is not None:
            assert cut.loss >= true
            row = reference.nodes.filter(
                pl.all_horizontal(
                    pl.col(key) == v for key, v in zip(data.keys, cut.optimum, strict=True)
                )
            )
            assert row["anonymous"].item() and row["loss"].item() == cut.loss
        if cut.proven_optimal:
            _same(cut, reference)
        else:
            assert cut.stopped == "max_nodes"


def _adult(keys: tuple[str, ...], n_records: int | None = None) -> LatticeData:
    from pathlib import Path

    folder = Path(__file__).parents[1] / "data" / "arx"
    frame = pl.read_csv(folder / "adult.csv", separator=";", infer_schema=False)
    frame = frame if n_records is None else frame.head(n_records)
    hierarchies = {
        key: [
            tuple(line.split(";"))
            for line in (folder / f"adult_hierarchy_{key}.csv").read_text().splitlines()
        ]
        for key in keys
    }
    return LatticeData.build(frame, hierarchies)


def test_flash_prunes_on_adult() -> None:
    data = _adult(("sex", "age", "race", "marital-status", "education"))
    assert data.n_nodes == 240
    for k, limit in ((5, 0.0), (5, 0.04), (100, 0.0)):
        reference = search_lattice(
            data, [KAnonymity(k)], Height(), suppression_limit=limit, algorithm="exhaustive"
        )
        for algorithm in ("flash", "heuristic"):
            fast = search_lattice(
                data, [KAnonymity(k)], Height(), suppression_limit=limit, algorithm=algorithm
            )
            _same(fast, reference)
            assert fast.n_evaluated < data.n_nodes // 2


def test_a_time_limit_stops_the_search_with_an_honest_result() -> None:
    data = _adult(("sex", "age", "race", "marital-status", "education"))
    cut = search_lattice(data, [KAnonymity(5)], Height(), time_limit=1e-9)
    assert not cut.proven_optimal and cut.stopped == "time_limit"
    assert cut.n_evaluated <= 1 and cut.lower_bound <= 1.0
    assert "lower bound" in str(cut.summary())


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"algorithm": "samarati"}, "algorithm"),
        ({"max_nodes": 0}, "max_nodes"),
        ({"time_limit": -1.0}, "time_limit"),
        ({"max_nodes": True}, "max_nodes"),
        ({"algorithm": "exhaustive", "max_nodes": 10}, "max_nodes"),
        ({"suppression_limit": 1.5}, "suppression_limit"),
    ],
)
def test_bad_search_arguments_are_refused(kwargs, match) -> None:
    data = _adult(("sex", "race"))
    with pytest.raises(ParameterError, match=match):
        search_lattice(data, [KAnonymity(2)], Height(), **kwargs)


def test_a_lattice_too_large_to_hold_is_refused() -> None:
    frame = pl.DataFrame({f"k{j}": ["a", "b"] for j in range(26)})
    hierarchy = [("a", "*"), ("b", "*")]
    data = LatticeData.build(frame, dict.fromkeys(frame.columns, hierarchy))
    assert data.n_nodes == 2**26
    with pytest.raises(ParameterError, match="nodes"):
        search_lattice(data, [KAnonymity(2)], Height())


def _classes_from_records(data: LatticeData, levels: tuple[int, ...]) -> dict[tuple, int]:
    codes = np.column_stack([data.maps[j][lv][data.base[:, j]] for j, lv in enumerate(levels)])
    rows, counts = np.unique(codes, axis=0, return_counts=True)
    return {tuple(r): int(c) for r, c in zip(rows.tolist(), counts.tolist(), strict=True)}


@pytest.mark.parametrize("pack_limit", [1 << 62, 4])
def test_rolled_up_classes_are_the_classes_of_the_records(monkeypatch, pack_limit) -> None:
    # a tiny cache forces evictions and roll-ups from many different parents; a tiny pack
    # limit forces the grouping of rows that do not pack into an int64
    monkeypatch.setattr(_rollup, "_MAX_SNAPSHOTS", 3)
    monkeypatch.setattr(_rollup, "_MAX_ELEMENTS", 10_000)
    monkeypatch.setattr(_rollup, "_PACK_LIMIT", pack_limit)
    data = _adult(("sex", "age", "race", "marital-status", "education"), 2_000)
    rng = np.random.default_rng(7)
    nodes = [tuple(int(rng.integers(0, h + 1)) for h in data.heights) for _ in range(40)]
    for levels in nodes + nodes[::-1]:
        classes = data.classes(levels)
        expected = _classes_from_records(data, levels)
        codes = [tuple(c) for c in classes.codes.tolist()]
        assert codes == sorted(expected)  # numbered in lexicographic order of the codes
        assert classes.sizes.tolist() == [expected[c] for c in codes]
        record_codes = np.column_stack(
            [data.maps[j][lv][data.base[:, j]] for j, lv in enumerate(levels)]
        )
        assert (classes.codes[classes.class_of] == record_codes).all()


def test_many_values_group_by_hash_the_same_as_by_counting() -> None:
    rng = np.random.default_rng(3)
    values = [f"{i:03d}" for i in range(90)]
    frame = pl.DataFrame({f"k{j}": rng.choice(values, 500).tolist() for j in range(3)})
    hierarchy = [(v, v[:2], v[:1], "*") for v in values]
    data = LatticeData.build(frame, dict.fromkeys(frame.columns, hierarchy))
    for levels in [(0, 0, 0), (1, 0, 2), (3, 1, 0), (2, 2, 2)]:
        classes = data.classes(levels)
        expected = _classes_from_records(data, levels)
        assert [tuple(c) for c in classes.codes.tolist()] == sorted(expected)
        assert classes.sizes.sum() == 500


@given(lattices(), st.integers(2, 4), st.sampled_from([0.1, 0.25, 0.5]))
def test_local_recoding_releases_k_anonymous_records_by_recount(data, k, limit) -> None:
    local = recode_locally(data, [KAnonymity(k)], Height(), suppression_limit=limit)
    first = local.rounds[0]
    reference = search_lattice(data, [KAnonymity(k)], Height(), suppression_limit=limit)
    assert first.optimum == reference.optimum
    release = local.release()
    kept = release.filter(pl.col(data.keys[0]).is_not_null())
    assert kept.height + local.n_suppressed == data.n_records
    # the recount: every released combination of values is shared by at least k records
    if kept.height:
        assert kept.group_by(list(data.keys)).len()["len"].min() >= k
    assert local.n_suppressed <= (first.n_suppressed if first.optimum else data.n_records)
    assert sum(local.released_by_round) == kept.height
    if first.optimum is not None:
        # at most the global search's suppression, which is within the limit
        assert local.n_suppressed <= math.floor(limit * data.n_records)
        # records released by round 1 are at the global optimum
        round_one = (local.levels == np.array(first.optimum)).all(axis=1)
        assert round_one.sum() == local.released_by_round[0]


def test_local_recoding_by_hand() -> None:
    # ages 31 x3, 35, 47, 48; k = 2, half may be suppressed (3 records)
    df = pl.DataFrame({"age": [31, 31, 31, 35, 47, 48], "sex": ["f"] * 6})
    age = [("31", "30-39", "*"), ("35", "30-39", "*"), ("47", "40-49", "*"), ("48", "40-49", "*")]
    data = LatticeData.build(df, {"age": age, "sex": [("f", "*")]})
    local = recode_locally(data, [KAnonymity(2)], Height(), suppression_limit=0.5)
    # round 1: level 0 suppresses 35, 47, 48; round 2 (those three, 1 may be suppressed):
    # 30-39 x1 suppressed, 40-49 x2 released; round 3 (35 alone): nothing meets k = 2
    assert [r.optimum for r in local.rounds] == [(0, 0), (1, 0), None]
    assert local.released_by_round == (3, 2, 0) and local.n_suppressed == 1
    assert local.release()["age"].to_list() == ["31", "31", "31", None, "40-49", "40-49"]
    assert local.to_frame()["suppressed"].to_list() == [False] * 3 + [True, False, False]
    assert "round 2" in str(local.summary())
    with pytest.raises(ParameterError, match="max_rounds"):
        recode_locally(data, [KAnonymity(2)], Height(), max_rounds=0)


def test_a_search_repeated_on_warm_snapshots_gives_the_same_bytes() -> None:
    data = _adult(("sex", "age", "race", "marital-status", "education"))
    first = search_lattice(data, [KAnonymity(5)], Height(), suppression_limit=0.04)
    again = search_lattice(data, [KAnonymity(5)], Height(), suppression_limit=0.04)
    assert first.nodes.equals(again.nodes) and first.optimum == again.optimum
    fresh = _adult(("sex", "age", "race", "marital-status", "education"))
    for levels in first.nodes.select(data.keys).rows()[:20]:
        warm, cold = data.classes(levels), fresh.classes(levels)
        assert np.array_equal(warm.class_of, cold.class_of)
        assert np.array_equal(warm.codes, cold.codes)


@pytest.mark.parametrize("algorithm", ["flash", "exhaustive", "heuristic"])
def test_progress_counts_the_nodes_decided_up_to_the_whole_lattice(algorithm: str) -> None:
    data = _adult(("age", "sex", "race", "marital-status"))
    calls: list[tuple[int, int]] = []
    result = search_lattice(
        data, [KAnonymity(5)], Height(), suppression_limit=0.04, algorithm=algorithm,
        progress=lambda done, total: calls.append((done, total)),
    )  # fmt: skip
    assert calls[-1] == (data.n_nodes, data.n_nodes)
    assert all(total == data.n_nodes for _, total in calls)
    done = [d for d, _ in calls]
    assert done == sorted(done) and len(calls) >= result.n_evaluated // 32
    quiet = search_lattice(data, [KAnonymity(5)], Height(), suppression_limit=0.04,
                           algorithm=algorithm)  # fmt: skip
    assert quiet.optimum == result.optimum

"""The lattice's data, node check and the exhaustive reference search, on hand-made data."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from sdckit.errors import DataError, ParameterError
from sdckit.lattice import (
    Height,
    KAnonymity,
    LatticeData,
    evaluate_node,
    search_lattice,
    suppression_budget,
)

AGE = [("31", "30-39", "*"), ("35", "30-39", "*"), ("47", "40-49", "*"), ("48", "40-49", "*")]
SEX = [("f", "*"), ("m", "*")]


def _data(**kw) -> LatticeData:
    df = pl.DataFrame(
        {
            "age": [31, 35, 47, 48, 48, 31],
            "sex": ["f", "m", "f", "f", "f", "m"],
            "dx": ["a", "b", "a", "c", "a", "b"],
        }
    )
    return LatticeData.build(df, {"age": AGE, "sex": SEX}, **kw)


def test_classes_at_each_level_count_the_records() -> None:
    data = _data(sensitive=["dx"])
    assert data.heights == (2, 1) and data.n_nodes == 6
    node = data.classes((0, 0))
    # (31,f) (35,m) (47,f) (48,f)x2 (31,m)
    assert sorted(node.sizes.tolist()) == [1, 1, 1, 1, 2]
    top = data.classes((2, 1))
    assert top.sizes.tolist() == [6]
    assert top.histogram("dx").tolist() == [[3, 2, 1]]
    decade = data.classes((1, 1))
    assert sorted(decade.sizes.tolist()) == [3, 3]
    labels = {data.labels[0][1][c[0]] for c in decade.codes}
    assert labels == {"30-39", "40-49"}


def test_float_coded_values_match_the_hierarchy() -> None:
    df = pl.DataFrame({"age": [31.0, 35.0, 47.0], "sex": ["f", "m", "f"]})
    data = LatticeData.build(df, {"age": AGE, "sex": SEX})
    assert data.base[:, 0].tolist() == [0, 1, 2]


def test_a_value_missing_from_the_hierarchy_is_refused_without_the_value() -> None:
    df = pl.DataFrame({"age": [31, 99], "sex": ["f", "m"]})
    with pytest.raises(DataError, match="'age'") as err:
        LatticeData.build(df, {"age": AGE, "sex": SEX})
    assert "99" not in str(err.value)


def test_suppression_budget_is_the_floor_of_the_share() -> None:
    assert suppression_budget(0.04, 30162) == 1206
    assert suppression_budget(0.0, 100) == 0
    with pytest.raises(ParameterError):
        suppression_budget(1.5, 10)


def test_node_check_suppresses_the_failing_classes_within_the_limit() -> None:
    data = _data()
    r = evaluate_node(data, (1, 0), [KAnonymity(2)], suppression_limit=0.5, measure=Height())
    # (30-39,f)=1 (30-39,m)=2 (40-49,f)=3: one record suppressed
    assert r.anonymous and r.n_suppressed == 1 and r.loss == 1.0
    r = evaluate_node(data, (1, 0), [KAnonymity(2)], suppression_limit=0.1)
    assert not r.anonymous and np.isnan(r.loss)


def test_exhaustive_search_finds_the_least_loss_node() -> None:
    data = _data()
    result = search_lattice(
        data, [KAnonymity(2)], Height(), suppression_limit=0.0, algorithm="exhaustive"
    )
    # (1,1): 30-39 x3, 40-49 x3 ; (2,0): f x4, m x2 -- both height 2, first in order wins
    assert result.optimum == (1, 1) and result.loss == 2.0 and result.proven_optimal
    assert result.nodes.height == 6 and result.n_evaluated == 6
    anonymous = result.nodes.filter(pl.col("anonymous")).select("age", "sex").rows()
    assert sorted(anonymous) == [(1, 1), (2, 0), (2, 1)]
    assert "optimum" in str(result.summary())
    limited = search_lattice(
        data, [KAnonymity(2)], Height(), suppression_limit=0.2, algorithm="exhaustive"
    )
    assert limited.optimum == (1, 0) and limited.n_suppressed == 1


def test_a_hierarchy_whose_levels_do_not_nest_is_refused() -> None:
    """Pruning assumes each level groups whole groups of the level below."""
    from sdckit.hierarchies import HierarchyError

    df = pl.DataFrame({"age": [31, 35, 47], "sex": ["f", "m", "f"]})
    crossed = [("31", "30-39", "A"), ("35", "30-39", "B"), ("47", "40-49", "*")]
    with pytest.raises(HierarchyError, match=r"'age'.*not nested"):
        LatticeData.build(df, {"age": crossed, "sex": SEX})

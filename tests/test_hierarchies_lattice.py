"""Generalisation hierarchies in the lattice search, and its optimum applied by global recoding."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from sdckit.hierarchies import GeneralisationHierarchy
from sdckit.lattice import KAnonymity, LatticeData, Loss, search_lattice
from sdckit.masking import GlobalRecoding
from sdckit.risk import frequencies

ARX = Path(__file__).parent / "data" / "arx"
KEYS = ("age", "education", "sex")

pytestmark = pytest.mark.skipif(
    not (ARX / "adult.csv").exists(), reason="ARX's adult data are not in tests/data/arx"
)


def _adult() -> pl.DataFrame:
    return pl.read_csv(ARX / "adult.csv", separator=";", infer_schema_length=0).select(KEYS)


def test_search_takes_hierarchy_objects_and_its_optimum_recodes_to_k_anonymity() -> None:
    df = _adult()
    objects = {
        k: GeneralisationHierarchy.read_arx_csv(ARX / f"adult_hierarchy_{k}.csv") for k in KEYS
    }
    rows = {k: list(h.table()) for k, h in objects.items()}
    with_objects = search_lattice(LatticeData.build(df, objects), [KAnonymity(5)], Loss())
    with_rows = search_lattice(LatticeData.build(df, rows), [KAnonymity(5)], Loss())
    assert with_objects.optimum == with_rows.optimum
    assert with_objects.loss == with_rows.loss
    assert with_objects.optimum is not None
    # the optimum's levels, applied by global recoding, give a 5-anonymous file
    levels = dict(zip(KEYS, with_objects.optimum, strict=True))
    recoded = GlobalRecoding(hierarchies=objects, levels=levels).apply(df, keys=list(KEYS))
    assert frequencies(recoded.data, keys=list(KEYS)).fk.min() >= 5
    # one level lower on any key breaks it (a k-anonymous node below would have less loss)
    assert all(
        frequencies(
            GlobalRecoding(hierarchies=objects, levels={**levels, key: levels[key] - 1})
            .apply(df, keys=list(KEYS))
            .data,
            keys=list(KEYS),
        ).fk.min()
        < 5
        for key in KEYS
        if levels[key] > 0
    )


def test_search_over_built_hierarchies() -> None:
    df = pl.DataFrame(
        {
            "age": [23, 27, 31, 36, 44, 47, 52, 58, 61, 66, 24, 33],
            "zip": ["0123", "0124", "0131", "0132", "0211", "0212", "0221", "0222", "0123",
                    "0124", "0131", "0211"],
        }
    )  # fmt: skip
    hierarchies = {
        "age": GeneralisationHierarchy.from_intervals(range(20, 70), widths=[10, 20, 40]),
        "zip": GeneralisationHierarchy.from_prefixes(df["zip"].unique().to_list()),
    }
    result = search_lattice(LatticeData.build(df, hierarchies), [KAnonymity(3)], Loss())
    assert result.optimum is not None
    levels = dict(zip(("age", "zip"), result.optimum, strict=True))
    out = GlobalRecoding(hierarchies=hierarchies, levels=levels).apply(df, keys=["age", "zip"])
    assert frequencies(out.data, keys=["age", "zip"]).fk.min() >= 3

"""Table dimensions built from generalisation hierarchies (Hierarchy.from_generalisation)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from sdckit.errors import DataError, ParameterError
from sdckit.hierarchies import GeneralisationHierarchy
from sdckit.tables import Hierarchy, Table

ARX = Path(__file__).parents[1] / "data" / "arx"


def test_tree_of_a_prefix_hierarchy() -> None:
    g = GeneralisationHierarchy.from_prefixes(["011", "012", "021"], keep=[2, 1])
    h = Hierarchy.from_generalisation(g)
    assert h.codes == ("*", "0**", "01*", "011", "012", "02*", "021")
    parents = {h.codes[i]: h.codes[p] for i, p in enumerate(h.parent.tolist()) if p >= 0}
    assert parents == {"0**": "*", "01*": "0**", "011": "01*", "012": "01*", "02*": "0**",
                       "021": "02*"}  # fmt: skip


def test_labels_kept_across_levels_are_one_node_and_a_total_is_added() -> None:
    g = GeneralisationHierarchy.from_mapping([{"a1": "a", "a2": "a"}], values=["a1", "a2", "b"],
                                             top=False)  # fmt: skip
    h = Hierarchy.from_generalisation(g, total="All")
    assert h.codes == ("All", "a", "a1", "a2", "b")
    assert [h.codes[i] for i in h.leaves] == ["a1", "a2", "b"]


def test_a_label_naming_two_groups_is_refused() -> None:
    # "x" is a value under "p" and, one level up, the label of another group
    g = GeneralisationHierarchy.from_table([["x", "p", "*"], ["y", "x", "*"]])
    with pytest.raises(DataError, match="two different groups"):
        Hierarchy.from_generalisation(g)
    with pytest.raises(ParameterError):
        Hierarchy.from_generalisation({"a": "b"})  # type: ignore[arg-type]


def test_table_over_arx_education_hierarchy() -> None:
    g = GeneralisationHierarchy.read_arx_csv(ARX / "adult_hierarchy_education.csv")
    h = Hierarchy.from_generalisation(g)
    assert h.total == "*" and len(h.leaves) == 16
    df = pl.DataFrame(
        {
            "education": ["Bachelors", "Masters", "HS-grad", "11th", "Preschool", "Masters"],
            "income": [10.0, 20.0, 3.0, 4.0, 1.0, 5.0],
        }
    )
    t = Table.from_microdata(df, {"education": h}, "income")
    t.check_additivity()
    values = dict(zip(t.to_frame()["education"], t.to_frame()["value"], strict=True))
    assert values["Graduate"] == pytest.approx(25.0)
    assert values["Higher education"] == pytest.approx(35.0)
    assert values["Secondary education"] == pytest.approx(7.0)
    assert values["*"] == pytest.approx(43.0)


def test_a_generalisation_hierarchy_is_a_dimension_spec() -> None:
    g = GeneralisationHierarchy.from_prefixes(["011", "012", "021"], keep=[1])
    df = pl.DataFrame({"zip": ["011", "012", "021", "011"], "n": [1.0, 2.0, 4.0, 8.0]})
    t = Table.from_microdata(df, {"zip": g}, "n")
    values = dict(zip(t.to_frame()["zip"], t.to_frame()["value"], strict=True))
    assert values == {"*": 15.0, "0**": 15.0, "011": 9.0, "012": 2.0, "021": 4.0}

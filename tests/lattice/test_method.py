"""Automatic protection as a method: the released optimum, its recount, names and sources."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import sdckit.lattice as lattice
from sdckit import Microdata
from sdckit.errors import (
    ColumnError,
    DataError,
    InfeasibleError,
    ParameterError,
    VerificationError,
)
from sdckit.lattice import (
    KAnonymity,
    LatticeAnonymization,
    LossMeasure,
    PrivacyModel,
    anonymize_lattice,
)
from sdckit.lattice import targets as lattice_targets
from sdckit.lattice._sources import hierarchy_rows
from sdckit.lattice.explain import close_nodes, frontier
from sdckit.protection import get_method

ARX = Path(__file__).parents[1] / "data" / "arx"


def _census(n: int = 400, seed: int = 3) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "sex": rng.choice(["f", "m"], n),
            "zip": rng.choice(["1011", "1012", "1023", "1024", "2031", "2032"], n),
            "income": rng.normal(size=n),
        }
    )


HIER = {
    "age": {"kind": "bands", "widths": [5, 10, 20]},
    "sex": {"kind": "flat"},
    "zip": {"kind": "redact"},
}


def _brute_force(df: pl.DataFrame, k: int, limit: float) -> tuple[tuple[int, ...], int]:
    """The least-height node by plain polars group-bys over every node (ties: lexicographic)."""
    rows = {key: hierarchy_rows(HIER[key], df[key], key) for key in HIER}
    heights = [len(r[0]) - 1 for r in rows.values()]
    budget = math.floor(limit * df.height)
    for total in range(sum(heights) + 1):
        for node in itertools.product(*(range(h + 1) for h in heights)):
            if sum(node) != total:
                continue
            cols = []
            for (key, r), level in zip(rows.items(), node, strict=True):
                mapping = {row[0]: row[level] for row in r}
                cols.append(df[key].cast(pl.String).replace_strict(mapping).alias(key))
            sizes = pl.DataFrame(cols).group_by(list(HIER)).len()["len"]
            failing = int(sizes.filter(sizes < k).sum())
            if failing <= budget:
                return node, failing
    raise AssertionError("no node")


@pytest.mark.parametrize(("k", "limit"), [(2, 0.0), (5, 0.02), (10, 0.05)])
def test_the_released_optimum_is_the_brute_force_one(k: int, limit: float) -> None:
    df = _census()
    res = anonymize_lattice(
        df, keys=["age", "sex", "zip"], numeric=["income"], hierarchies=HIER,
        models={"k": k}, suppression_limit=limit, algorithm="exhaustive",
    )  # fmt: skip
    node, failing = _brute_force(df, k, limit)
    assert tuple(res.details["levels"].values()) == node
    assert res.details["n_suppressed"] == failing
    out = res.microdata.frame
    suppressed = out["age"].is_null()
    assert int(suppressed.sum()) == failing
    # a suppressed record loses every key, a released one none
    for key in ("sex", "zip"):
        assert out[key].is_null().equals(suppressed)
    sizes = out.filter(~suppressed).group_by(["age", "sex", "zip"]).len()["len"]
    assert sizes.min() >= k
    assert out["income"].equals(df["income"])  # other columns untouched
    assert df.height == 400 and df["age"].null_count() == 0  # the caller's data unchanged
    LatticeAnonymization(hierarchies=HIER, models={"k": k}, suppression_limit=limit).verify(
        Microdata(df, keys=["age", "sex", "zip"], numeric=["income"]), res
    )


def test_labels_come_from_the_hierarchy_and_level_zero_keeps_the_column() -> None:
    df = pl.DataFrame(
        {"age": [31, 35, 33, 38, 47, 48, 44, 41], "sex": ["f", "m", "f", "m", "f", "m", "f", "m"]}
    )
    res = anonymize_lattice(
        df, keys=["age", "sex"], models={"k": 2},
        hierarchies={"age": {"kind": "bands", "widths": [10]}, "sex": {"kind": "flat"}},
    )  # fmt: skip
    assert res.details["levels"] == {"age": 1, "sex": 0}
    assert res.data["age"].to_list() == ["[30, 40)"] * 4 + ["[40, 50)"] * 4
    assert res.data["sex"].to_list() == df["sex"].to_list()
    assert res.details["search"].optimum == (1, 0)


def test_verify_catches_a_tampered_release() -> None:
    method, md = LatticeAnonymization.contract_example()
    res = method.apply(md)
    method.verify(md, res)
    frame = res.microdata.frame
    label = frame["age"].drop_nulls()[0]
    wrong = frame.with_columns(
        pl.when(pl.col("age") == label).then(pl.lit("0-9")).otherwise(pl.col("age")).alias("age")
    )
    tampered = type(res)(**{**res.__dict__, "microdata": md.with_frame(wrong)})
    with pytest.raises(VerificationError, match="'age'"):
        method.verify(md, tampered)
    # the classes are counted again on the released file: a stricter k does not hold there
    stricter = method.set_params(models={"k": 6})
    with pytest.raises(VerificationError, match="6-anonymity does not hold"):
        stricter.verify(md, res)


def test_an_unreachable_target_says_what_to_change() -> None:
    df = pl.DataFrame({"sex": ["f", "m", "f"]})
    with pytest.raises(InfeasibleError, match="suppression_limit"):
        anonymize_lattice(df, keys=["sex"], hierarchies={"sex": None}, models={"k": 2})


def test_bad_input_gets_a_clear_error_without_data_values() -> None:
    df = pl.DataFrame({"age": [31, None, 47], "sex": ["f", "m", "f"]})
    with pytest.raises(DataError, match="'age' has 1 missing") as err:
        anonymize_lattice(df, keys=["age", "sex"], hierarchies={"sex": None}, models={"k": 2})
    assert "31" not in str(err.value)
    df = pl.DataFrame({"age": [31, 35, 47], "sex": ["f", "m", "f"], "x": [1, 2, 3]})
    with pytest.raises(ParameterError, match="'x', which is not a key"):
        anonymize_lattice(df, keys=["age", "sex"], hierarchies={"x": {"kind": "flat"}},
                          models={"k": 2})  # fmt: skip
    with pytest.raises(ParameterError, match="whole multiple"):
        anonymize_lattice(df, keys=["age"], hierarchies={"age": {"kind": "bands",
                          "widths": [5, 7]}}, models={"k": 2})  # fmt: skip
    with pytest.raises(ParameterError, match="needs numbers"):
        anonymize_lattice(df, keys=["sex"], hierarchies={"sex": {"kind": "bands",
                          "widths": [5]}}, models={"k": 2})  # fmt: skip
    with pytest.raises(ParameterError, match="kind = one of"):
        anonymize_lattice(df, keys=["sex"], hierarchies={"sex": {"widths": [5]}},
                          models={"k": 2})  # fmt: skip
    with pytest.raises(ParameterError, match=r"'algorithm' parameter .* must be one of"):
        anonymize_lattice(df, keys=["sex"], hierarchies={"sex": None}, models={"k": 2},
                          algorithm="no_such_algorithm")  # fmt: skip
    with pytest.raises(ParameterError, match="does not exist"):
        anonymize_lattice(df, keys=["sex"], hierarchies={"sex": "/no/such/file.csv"},
                          models={"k": 2})  # fmt: skip


def test_builders_make_nested_levels() -> None:
    zips = pl.Series(["1011", "1023", "203"])
    assert hierarchy_rows({"kind": "redact"}, zips, "zip") == (
        ("1011", "101*", "10**", "1***", "*"),
        ("1023", "102*", "10**", "1***", "*"),
        ("203", "20*", "2**", "***", "*"),
    )
    ages = pl.Series([7, 23])
    assert hierarchy_rows({"kind": "bands", "widths": [5, 10]}, ages, "age") == (
        ("7", "[5, 10)", "[0, 10)", "*"),
        ("23", "[20, 25)", "[20, 30)", "*"),
    )
    assert hierarchy_rows(None, pl.Series(["a", "b", "a"]), "x") == (("a",), ("b",))


def test_an_arx_hierarchy_file_is_read(tmp_path: Path) -> None:
    rows = hierarchy_rows(str(ARX / "adult_hierarchy_sex.csv"), pl.Series(["Male"]), "sex")
    assert rows == (("Male", "*"), ("Female", "*"))


def test_models_and_measures_by_name_come_from_sdckit_lattice(monkeypatch) -> None:
    class Spread(LossMeasure):
        """A test measure: the number of classes (fewer is more loss)."""

        def loss(self, classes, suppressed) -> float:
            return -float(classes.n_classes)

    monkeypatch.setattr(lattice, "Spread", Spread, raising=False)
    assert isinstance(lattice_targets.loss_measure("spread"), Spread)
    with pytest.raises(ParameterError, match=r"unknown loss measure 'spred'\. Did you mean"):
        lattice_targets.loss_measure("spred")
    monkeypatch.setattr(lattice_targets, "LOSS_NAMES", ("future_measure",))
    with pytest.raises(ParameterError, match="not available in this version"):
        lattice_targets.loss_measure("future_measure")
    # a model the search does not have yet: a clear error naming it
    for module in (lattice, lattice.models):
        monkeypatch.delattr(module, "DPresence", raising=False)
    with pytest.raises(ParameterError, match="DPresence is not available"):
        lattice_targets.privacy_models({"delta": {"dmin": 0.0, "dmax": 0.5}})
    with pytest.raises(ParameterError, match="KAnonymity takes the parameters k"):
        lattice_targets.privacy_models({"k": {"kk": 3}})


def test_a_model_with_a_sensitive_attribute_gets_it_coded_and_is_recounted(
    monkeypatch,
) -> None:
    class TwoValues(PrivacyModel):
        """A test model: every class shows at least two values of ``attribute``."""

        def __init__(self, attribute: str) -> None:
            self.attribute = attribute

        def class_passes(self, classes):
            return (classes.histogram(self.attribute) > 0).sum(axis=1) >= 2

    df = pl.DataFrame({"sex": ["f", "f", "m", "m", "m"], "dx": ["a", "b", "a", "a", "a"]})
    res = anonymize_lattice(
        df, keys=["sex"], hierarchies={"sex": {"kind": "flat"}}, models=[TwoValues("dx")]
    )
    assert res.details["levels"] == {"sex": 1}  # the men show one diagnosis only
    method = LatticeAnonymization(hierarchies={"sex": {"kind": "flat"}}, models=[TwoValues("dx")])
    method.verify(Microdata(df, keys=["sex"]), res)


def test_explanations_list_the_close_nodes_and_the_frontier() -> None:
    df = _census()
    res = anonymize_lattice(
        df, keys=["age", "sex", "zip"], hierarchies=HIER, models=[KAnonymity(5)],
        suppression_limit=0.02, algorithm="exhaustive",
    )  # fmt: skip
    search = res.details["search"]
    # Flash lists only the nodes it evaluated; the exhaustive search lists every node
    close = close_nodes(search, df.height, 5)
    assert close.height == 5
    assert (close["loss"] >= search.loss).all()
    assert close["n_suppressed"].max() <= math.floor(0.02 * df.height)
    front = frontier(search, df.height)
    assert front["chosen"].sum() == 1
    # the chosen node is shown even when a node of the same loss suppresses less (ties in
    # loss go to the first node in order of levels); the others are the frontier
    nodes = search.nodes.with_columns((pl.col("n_suppressed") / df.height).alias("risk"))
    chosen = front.filter(pl.col("chosen"))
    rivals = nodes.filter(
        (pl.col("loss") < chosen["loss"][0]) & (pl.col("risk") <= chosen["risk"][0])
    )
    assert rivals.height == 0
    front = front.filter(~pl.col("chosen"))
    # the frontier: along increasing loss, the risk strictly falls
    assert (front["risk"].diff().drop_nulls() < 0).all()
    assert (front["loss"].diff().drop_nulls() > 0).all()
    # no evaluated node beats a frontier node on both
    for loss, risk in front.select("loss", "risk").rows():
        better = nodes.filter(
            (pl.col("loss") <= loss) & (pl.col("risk") <= risk)
            & ((pl.col("loss") < loss) | (pl.col("risk") < risk))
        )  # fmt: skip
        assert better.height == 0


def test_the_job_name_auto_finds_the_method() -> None:
    assert get_method("auto") is LatticeAnonymization


def test_household_level_keys_follow_the_release_roles_and_verify_accepts_them() -> None:
    # households 1-4; region is the same for every member; person 7 (household 4) is the only
    # 60-year-old in the south and is suppressed, and the release roles then suppress the
    # region of the other member of household 4 too
    df = pl.DataFrame(
        {
            "hh": [1, 1, 2, 2, 3, 3, 4, 4],
            "region": ["n", "n", "n", "n", "s", "s", "s", "s"],
            "age": [30, 31, 30, 31, 40, 41, 40, 61],
        }
    )
    md = Microdata(df, keys=["region", "age"], household="hh", household_level=["region"])
    method = LatticeAnonymization(
        hierarchies={"age": {"kind": "bands", "widths": [10]}, "region": None},
        models={"k": 2}, suppression_limit=0.125,
    )  # fmt: skip
    res = method.apply(md)
    assert res.details["levels"] == {"region": 0, "age": 1}
    out = res.microdata.frame
    assert out["age"].null_count() == 1 and out["region"].null_count() == 2
    assert res.details["release_roles"] == {"region": 1}
    method.verify(md, res)
    bad = out.with_columns(pl.when(pl.col("hh") == 1).then(None).otherwise(pl.col("age"))
                           .alias("age"))  # fmt: skip
    with pytest.raises(VerificationError, match="some keys suppressed but not all"):
        method.verify(md, type(res)(**{**res.__dict__, "microdata": md.with_frame(bad)}))


def test_the_words_say_when_nothing_meets_the_target_and_when_not_proven() -> None:
    import dataclasses

    from sdckit.lattice import Height, LatticeData, search_lattice
    from sdckit.lattice.explain import chosen_words

    df = pl.DataFrame({"sex": ["f", "m", "f"]})
    data = LatticeData.build(df, {"sex": [("f", "*"), ("m", "*")]})
    none = search_lattice(data, [KAnonymity(4)], Height(), algorithm="exhaustive")
    assert chosen_words(none, 3) == (
        "No transformation meets 4-anonymity with at most 0.00% of the records suppressed "
        "(2 of 2 nodes evaluated)."
    )
    found = search_lattice(data, [KAnonymity(3)], Height(), algorithm="exhaustive")
    assert chosen_words(found, 3).startswith("Chose sex=1 (loss 1 by Height) for 3-anonymity")
    heuristic = dataclasses.replace(found, proven_optimal=False)
    assert "the best found (not proven optimal" in chosen_words(heuristic, 3)


@pytest.mark.parametrize(
    "models",
    [
        {"k": 2, "average_risk": 0.3},
        {"sample_uniqueness": 0.05},
        {"k": 2, "l": {"attribute": "dx", "kind": "distinct", "l": 2}},
        {"t": {"attribute": "dx", "kind": "equal", "t": 0.5}},
    ],
)
def test_the_release_of_every_kind_of_model_is_verified_by_recount(models) -> None:
    rng = np.random.default_rng(3)
    df = pl.DataFrame(
        {
            "age": rng.integers(20, 60, 300),
            "sex": rng.choice(["f", "m"], 300),
            "dx": rng.choice(["a", "b", "c"], 300),
        }
    )
    hierarchies = {"age": {"kind": "bands", "widths": [5, 10, 20]}, "sex": {"kind": "flat"}}
    res = anonymize_lattice(
        df, keys=["age", "sex"], hierarchies=hierarchies, models=models, suppression_limit=0.05
    )
    method = LatticeAnonymization(hierarchies=hierarchies, models=models, suppression_limit=0.05)
    method.verify(Microdata(df, keys=["age", "sex"]), res)  # raises when a model fails
    assert res.details["search"].proven_optimal


@pytest.mark.parametrize("models", [{"delta": {"d_min": 0.0, "d_max": 0.5}}, {"k_map": 3}])
def test_models_that_need_a_population_table_are_refused_with_the_way_out(models) -> None:
    df = pl.DataFrame({"age": [31, 35, 47, 48], "sex": ["f", "m", "f", "m"]})
    hierarchies = {"age": {"kind": "bands", "widths": [10]}, "sex": {"kind": "flat"}}
    with pytest.raises(ParameterError, match="research subset of a population table"):
        anonymize_lattice(df, keys=["age", "sex"], hierarchies=hierarchies, models=models)
    estimated = {"k_map": {"k": 3, "population_size": 1000, "estimator": "poisson"}}
    res = anonymize_lattice(df, keys=["age", "sex"], hierarchies=hierarchies, models=estimated,
                            suppression_limit=0.5)  # fmt: skip
    assert res.details["search"].optimum is not None


def test_records_at_the_top_label_do_not_count_against_the_limit_in_verify() -> None:
    """With a sample-based model the search (as ARX) does not count a class whose every key
    is at its single top label; the release still suppresses it, and verify counts the same
    way: the limit (2 records here) holds for the other suppressed records."""
    df = pl.DataFrame({"x": ["a"] * 2 + ["c"] * 5 + ["b"]})
    rows = [("a", "a", "*"), ("c", "c", "*"), ("b", "*", "*")]  # b reaches the top at level 1
    method = LatticeAnonymization(
        hierarchies={"x": rows}, models={"k": 2, "average_risk": 0.25}, suppression_limit=0.3
    )
    md = Microdata(df, keys=["x"])
    res = method.apply(md)
    assert res.details["levels"] == {"x": 1}
    assert res.data["x"].to_list() == [None, None, "c", "c", "c", "c", "c", None]
    assert res.details["search"].n_suppressed == 2
    method.verify(md, res)
    over = LatticeAnonymization(
        hierarchies={"x": rows}, models={"k": 2, "average_risk": 0.25}, suppression_limit=0.1
    )
    with pytest.raises(VerificationError, match="more records suppressed than the limit"):
        over.verify(md, res)


def test_a_linked_column_and_a_misnamed_attribute_are_refused() -> None:
    df = pl.DataFrame(
        {"age": [31, 35, 47, 48], "sex": ["f", "m", "f", "m"], "birth": [1990, 1986, 1974, 1973]}
    )
    hierarchies = {"age": {"kind": "bands", "widths": [10]}, "sex": {"kind": "flat"}}
    method = LatticeAnonymization(hierarchies=hierarchies, models={"k": 2})
    with pytest.raises(ParameterError, match="'birth' is linked to a key") as err:
        method.apply(Microdata(df, keys=["age", "sex"], linked={"birth": "age"}))
    assert "1990" not in str(err.value)
    wrong = LatticeAnonymization(
        hierarchies=hierarchies, models={"l": {"attribute": "dxx", "l": 2}}
    )
    with pytest.raises(ColumnError, match="'dxx'"):
        wrong.apply(Microdata(df, keys=["age", "sex"]))


def test_verify_refuses_forged_levels_with_a_verification_error() -> None:
    df = pl.DataFrame({"age": [31, 35, 47, 48], "sex": ["f", "m", "f", "m"]})
    hierarchies = {"age": {"kind": "bands", "widths": [10]}, "sex": {"kind": "flat"}}
    method = LatticeAnonymization(hierarchies=hierarchies, models={"k": 2})
    md = Microdata(df, keys=["age", "sex"])
    res = method.apply(md)
    for levels in ({"age": 1}, {"age": 7, "sex": 0}):
        forged = res.__class__(**{**res.__dict__, "details": {**res.details, "levels": levels}})
        with pytest.raises(VerificationError):
            method.verify(md, forged)

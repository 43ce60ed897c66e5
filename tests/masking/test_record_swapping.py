"""Targeted record swapping (methods.md M8)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdckit import Microdata
from sdckit.datasets import generate_census
from sdckit.errors import ColumnError, DataError, ParameterError, VerificationError
from sdckit.masking.record_swapping import TargetedRecordSwapping, targeted_record_swapping
from sdckit.protection import Protected

HIERARCHY = ["region", "district", "area"]


def _hand_made(b_sizes: list[int], b_values: list[list[str]]) -> pl.DataFrame:
    """Region A (one area): h1 holds the only 'x' (risky at every level); region B is given."""
    households = [(1, "A", ["x", "c", "c"]), (2, "A", ["c"]), (3, "A", ["c"])]
    households += [(4 + i, "B", vals) for i, vals in enumerate(b_values)]
    assert [len(v) for _, _, v in households[3:]] == b_sizes
    rows = []
    for hid, region, values in households:
        for j, v in enumerate(values):
            rows.append(
                {
                    "hid": hid,
                    "region": region,
                    "area": f"{region}1",
                    "size": len(values),
                    "var": v,
                    "person": f"{hid}-{j}",
                }
            )
    return pl.DataFrame(rows)


def _geography(frame: pl.DataFrame, hid: int) -> tuple[str, str]:
    sub = frame.filter(pl.col("hid") == hid)
    assert sub["region"].n_unique() == 1 and sub["area"].n_unique() == 1
    return sub["region"][0], sub["area"][0]


def test_hand_made_risky_household_and_known_donor() -> None:
    df = _hand_made([3, 1, 1], [["c", "c", "c"], ["c"], ["c"]])
    method = TargetedRecordSwapping(
        hierarchy=["region", "area"],
        risk_variables=["var"],
        k=2,
        swap_rate=0.0,
        similarity=[["size"]],
        seed=1,
    )
    out = method.apply(df, household="hid")
    pairs = out.details["pairs"]
    assert pairs.rows() == [(1, 4, "region", 0)]
    assert out.details["without_donor"].height == 0
    assert out.details["risky_households"] == {"region": 1, "area": 1}
    new = out.data
    assert _geography(new, 1) == ("B", "B1")
    assert _geography(new, 4) == ("A", "A1")
    for hid in (2, 3, 5, 6):
        assert _geography(new, hid) == _geography(df, hid)
    assert new.select("hid", "size", "var", "person").equals(
        df.select("hid", "size", "var", "person")
    )
    assert out.changed == {"region": 6, "area": 6}
    method.verify(Microdata(df, household="hid"), out)


def test_hand_made_without_donor_then_next_profile() -> None:
    df = _hand_made([1, 1, 1], [["c"], ["c"], ["c"]])  # no household of size 3 in region B
    strict = TargetedRecordSwapping(
        hierarchy=["region", "area"], risk_variables=["var"], k=2, swap_rate=0.0,
        similarity=[["size"]], seed=1,
    )  # fmt: skip
    out = strict.apply(df, household="hid")
    assert out.details["pairs"].height == 0
    assert out.details["without_donor"].rows() == [(1, "region"), (1, "area")]
    assert out.n_changed_records == 0
    strict.verify(Microdata(df, household="hid"), out)
    relaxed = TargetedRecordSwapping(
        hierarchy=["region", "area"], risk_variables=["var"], k=2, swap_rate=0.0,
        similarity=[["size"], []], seed=1,
    )  # fmt: skip
    out = relaxed.apply(df, household="hid")
    (household, donor, level, profile), *rest = out.details["pairs"].rows()
    assert not rest and household == 1 and donor in (4, 5, 6)
    assert (level, profile) == ("region", 1)
    assert _geography(out.data, 1) == ("B", "B1")


def test_donor_drawn_proportional_to_risk() -> None:
    # region B: household 4 has weight 1/2 (count 2), households 5..8 weight 1/4 each (count 4)
    df = _hand_made([2, 1, 1, 1, 1], [["y", "y"], ["c"], ["c"], ["c"], ["c"]])
    md = Microdata(df, household="hid")
    draws = 300
    chosen = [
        TargetedRecordSwapping(
            hierarchy=["region"], risk_variables=["var"], k=2, swap_rate=0.0, seed=s
        )
        .apply(md)
        .details["pairs"]["donor"][0]
        for s in range(draws)
    ]
    hits = sum(d == 4 for d in chosen)
    expected, sd = draws / 3, np.sqrt(draws * (1 / 3) * (2 / 3))
    assert abs(hits - expected) < 4 * sd
    assert set(chosen) == {4, 5, 6, 7, 8}


def _random_census(seed: int, n_households: int) -> pl.DataFrame:
    """Households with repeated area codes across regions (areas are region-area pairs)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 5, n_households)
    hh = np.repeat(np.arange(n_households), sizes)
    region = rng.integers(0, 3, n_households)
    area = rng.integers(0, 4, n_households)
    n = len(hh)
    return pl.DataFrame(
        {
            "hid": hh * 7 + 3,
            "region": region[hh],
            "area": area[hh],
            "kind": np.array(["u", "r"])[(region * 4 + area) % 2][hh],
            "size": sizes[hh],
            "sex": rng.integers(0, 2, n),
            "age": rng.integers(0, 4, n),
            "income": rng.normal(size=n),
        }
    )


def _check_rate_rule(out: Protected) -> None:
    rates = out.details["rates"]
    t = rates["target"].to_numpy()
    n = rates["swapped"].to_numpy()
    f = rates["risk_stage_swapped"].to_numpy()
    short = rates["short_of_donors"].to_numpy()
    ok = (f <= t) & ~short
    assert np.all(np.abs(n[ok] - t[ok]) <= 1 + 1e-9)
    assert np.all(n >= f)


def _check_pairs(
    before: pl.DataFrame, after: pl.DataFrame, geo: list[str], hid: str, out: Protected
) -> None:
    first_before = before.unique(hid, keep="first", maintain_order=True)
    first_after = after.unique(hid, keep="first", maintain_order=True)
    old = dict(zip(first_before[hid], first_before.select(geo).rows(), strict=True))
    new = dict(zip(first_after[hid], first_after.select(geo).rows(), strict=True))
    pairs = out.details["pairs"]
    for a, b in zip(pairs["household"], pairs["donor"], strict=True):
        assert new[a] == old[b] and new[b] == old[a]
    in_pairs = set(pairs["household"]) | set(pairs["donor"])
    assert len(in_pairs) == 2 * pairs.height  # nobody is swapped twice
    assert all(new[h] == old[h] for h in old if h not in in_pairs)


@given(
    seed=st.integers(0, 10_000),
    n_households=st.integers(2, 120),
    k=st.integers(1, 4),
    swap_rate=st.floats(0.0, 1.0),
    profiles=st.sampled_from([None, [["size"]], [["size"], []], [["size", "kind"], ["size"]]]),
    carry=st.booleans(),
)
def test_properties_random_households(
    seed: int,
    n_households: int,
    k: int,
    swap_rate: float,
    profiles: list[list[str]] | None,
    carry: bool,
) -> None:
    df = _random_census(seed, n_households)
    md = Microdata(df, keys=["sex", "age"], numeric=["income"], household="hid")
    method = TargetedRecordSwapping(
        hierarchy=["region", "area"],
        k=k,
        swap_rate=swap_rate,
        similarity=profiles,
        carry_along=["kind"] if carry else None,
        seed=seed,
    )
    out = method.apply(md)
    method.verify(md, out)
    _check_rate_rule(out)
    geo = ["region", "area", "kind"] if carry else ["region", "area"]
    _check_pairs(df, out.microdata.frame, geo, "hid", out)
    if not carry:
        assert out.microdata.frame["kind"].equals(df["kind"])


@given(
    seed=st.integers(0, 1_000),
    n_persons=st.integers(50, 1_500),
    k=st.integers(2, 5),
    swap_rate=st.sampled_from([0.0, 0.03, 0.1, 0.37]),
    levels=st.sampled_from([HIERARCHY, ["region", "area"], ["district"]]),
)
def test_properties_generated_census(
    seed: int, n_persons: int, k: int, swap_rate: float, levels: list[str]
) -> None:
    df = generate_census(n_persons, seed=seed)
    md = Microdata(df, household="household_id")
    method = TargetedRecordSwapping(
        hierarchy=levels,
        risk_variables=["sex", "age_group"],
        k=k,
        swap_rate=swap_rate,
        similarity=[["household_size"], []],
        carry_along=["urban_rural"],
        seed=seed,
    )
    out = method.apply(md)
    method.verify(md, out)
    _check_rate_rule(out)
    # every lowest-level area: realised swaps counted from the data match the report
    rates = out.details["rates"]
    assert rates["households"].sum() == df["household_id"].n_unique()


def test_rate_rule_exact_without_risk() -> None:
    # k = 1: nobody is risky, so every area ends within one household of its target
    df = generate_census(3_000, seed=8)
    method = TargetedRecordSwapping(
        hierarchy=["region", "district"], risk_variables=["sex"], k=1, swap_rate=0.2, seed=2
    )
    out = method.apply(df, household="household_id")
    rates = out.details["rates"]
    assert rates["risk_stage_swapped"].sum() == 0
    assert not rates["short_of_donors"].any()
    diff = (rates["swapped"] - rates["target"]).abs()
    assert diff.max() <= 1.0
    assert rates["swapped"].sum() == out.details["swapped_households"]
    total_target = rates["target"].sum()
    assert abs(rates["swapped"].sum() - total_target) <= 0.05 * total_target + 2


def test_seed_reproducibility_and_function_twin() -> None:
    df = generate_census(2_000, seed=3)
    params = {
        "hierarchy": HIERARCHY,
        "risk_variables": ["sex", "age_group"],
        "k": 3,
        "swap_rate": 0.1,
        "similarity": [["household_size"], []],
        "carry_along": ["urban_rural"],
    }
    a = TargetedRecordSwapping(**params, seed=42).apply(df, household="household_id")
    b = TargetedRecordSwapping(**params, seed=42).apply(df, household="household_id")
    c = TargetedRecordSwapping(**params, seed=43).apply(df, household="household_id")
    assert a.data.equals(b.data)
    assert a.details["pairs"].equals(b.details["pairs"])
    assert a.details["rates"].equals(b.details["rates"])
    assert not a.details["pairs"].equals(c.details["pairs"])
    twin = targeted_record_swapping(df, household="household_id", seed=42, **params)
    assert twin.data.equals(a.data)
    gen = TargetedRecordSwapping(**params, seed=np.random.default_rng(42))
    assert gen.apply(df, household="household_id").data.equals(a.data)


def test_default_risk_variables_are_keys_outside_geography() -> None:
    df = generate_census(800, seed=5)
    md = Microdata(df, keys=["region", "sex", "age_group"], household="household_id")
    method = TargetedRecordSwapping(hierarchy=["region", "area"], k=2, seed=1)
    explicit = TargetedRecordSwapping(
        hierarchy=["region", "area"], risk_variables=["sex", "age_group"], k=2, seed=1
    )
    assert method.apply(md).data.equals(explicit.apply(md).data)


def test_bad_input() -> None:
    df = generate_census(300, seed=1)
    ok = {"hierarchy": HIERARCHY, "risk_variables": ["sex"], "seed": 1}
    with pytest.raises(ColumnError, match="household"):
        TargetedRecordSwapping(**ok).apply(df, keys=["sex"])
    with pytest.raises(ColumnError, match="'areas'"):
        TargetedRecordSwapping(hierarchy=["region", "areas"], risk_variables=["sex"]).apply(
            df, household="household_id"
        )
    for rate in (-0.1, 1.5):
        with pytest.raises(ParameterError, match="swap_rate"):
            TargetedRecordSwapping(**ok, swap_rate=rate).apply(df, household="household_id")
    with pytest.raises(ParameterError, match="'k'"):
        TargetedRecordSwapping(**ok, k=0).apply(df, household="household_id")
    with pytest.raises(ParameterError, match="hierarchy"):
        TargetedRecordSwapping(hierarchy=[], risk_variables=["sex"]).apply(
            df, household="household_id"
        )
    with pytest.raises(ColumnError, match="similarity"):
        TargetedRecordSwapping(**ok, similarity=[["hh_size"]]).apply(df, household="household_id")
    with pytest.raises(ParameterError, match="risk variable"):
        TargetedRecordSwapping(hierarchy=HIERARCHY, risk_variables=["area"]).apply(
            df, household="household_id"
        )
    with pytest.raises(ColumnError, match="risk variables"):
        TargetedRecordSwapping(hierarchy=HIERARCHY).apply(df, household="household_id")
    with pytest.raises(DataError, match="'sex'"):  # person-level similarity variable
        TargetedRecordSwapping(**ok, similarity=[["sex"]]).apply(df, household="household_id")
    split = df.with_columns(pl.col("area").shuffle(seed=1))
    with pytest.raises(DataError, match="'area'"):
        TargetedRecordSwapping(**ok).apply(split, household="household_id")


def test_area_short_of_donors_is_reported() -> None:
    # swap rate 1: area A (5 households) can only pair with the single household of area B
    rows = [{"hid": h, "area": "A" if h < 5 else "B", "sex": h % 2} for h in range(6)]
    df = pl.DataFrame(rows)
    method = TargetedRecordSwapping(hierarchy=["area"], risk_variables=["sex"], k=1, swap_rate=1.0)
    for seed in range(5):
        out = TargetedRecordSwapping(**{**method.get_params(), "seed": seed}).apply(
            df, household="hid"
        )
        rates = out.details["rates"].sort("area")
        assert rates.select("area", "target_count", "swapped", "short_of_donors").rows() == [
            ("A", 5, 1, True),
            ("B", 1, 1, False),
        ]
        assert out.details["pairs"].height == 1
        assert out.details["rate_stage_without_donor"] == 4
        method.verify(Microdata(df, household="hid"), out)


def test_declared_forms_and_verify_messages() -> None:
    method, md = TargetedRecordSwapping.contract_example()
    result = method.apply(md)
    method.verify(md, result)
    # one profile given as a single column name, carry_along as an empty list
    same = TargetedRecordSwapping(**{**method.get_params(), "similarity": ["household_size", []]})
    assert same.apply(md).data.equals(result.data)
    with pytest.raises(ParameterError, match="'similarity' parameter of TargetedRecordSwapping"):
        TargetedRecordSwapping(**{**method.get_params(), "similarity": []}).apply(md)
    with pytest.raises(ColumnError, match=r"'carry_along' parameter .* 'urban'"):
        TargetedRecordSwapping(**{**method.get_params(), "carry_along": ["urban"]}).apply(md)
    tampered = result.microdata.frame.with_columns(pl.col("income") + 1)
    with pytest.raises(VerificationError, match="'income' changed although it is not swapped"):
        method.verify(md, Protected.from_frames(md, tampered, method, details=result.details))
    with pytest.raises(VerificationError, match="neither swapped nor reported"):
        method.verify(md, Protected.from_frames(md, md.frame, method, details=result.details))

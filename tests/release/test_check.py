"""The independent release check, on the cases that slipped through before and at random.

Each case of the first part released protected values on the earlier code: an exact age beside
a suppressed age group, a district beside a suppressed region, a person id, a household id
beside suppressed household sizes and regions, household-level numbers that find the household.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sdckit import Microdata
from sdckit.datasets import generate_census
from sdckit.errors import DataError, VerificationError
from sdckit.jobs.wording import finding_line
from sdckit.masking import GlobalRecoding, LocalSuppression
from sdckit.release import ReleasePlan, ReleaseTarget, check_release, release

KEYS = ["region", "sex", "age_group", "marital_status"]


@pytest.fixture(scope="module")
def census() -> pl.DataFrame:
    return generate_census(3000, seed=11)


def _roles(**extra: object) -> dict:
    return dict(keys=KEYS, numeric=["income"], weight="weight", **extra)


# ---------------------------------------------------------------------- what leaked before
def test_exact_age_and_district_give_back_suppressed_values(census: pl.DataFrame) -> None:
    md = Microdata(census, **_roles())
    protected = LocalSuppression(k=3, block_inference=False).apply(md).microdata
    out = release(md, protected, k=3)
    found = {(f.column, f.target): f.count for f in out.check.findings if f.check == "determined"}
    suppressed_regions = int(protected.frame["region"].null_count())
    assert suppressed_regions > 0
    # every suppressed region comes back from district, area or stratum (classifications)
    assert found[("district", "region")] == suppressed_regions
    assert found[("stratum", "region")] == suppressed_regions
    suppressed_ages = int(protected.frame["age_group"].null_count())
    assert found[("age", "age_group")] == suppressed_ages
    assert "person_id" in out.check.identifiers  # a column with a value per record
    assert not out.check.ok
    with pytest.raises(VerificationError, match="not written"):
        out.write("never.csv")


def test_dropping_and_linking_the_revealing_columns_passes(census: pl.DataFrame, tmp_path) -> None:
    named = census.with_columns(("Region " + pl.col("region")).alias("region_name"))
    md = Microdata(
        named, **_roles(linked={"region_name": "region"}, identifiers=["person_id"],
                        household="household_id",
                        household_level=["region", "urban_rural", "household_size",
                                         "household_income"])
    )  # fmt: skip
    protected = LocalSuppression(k=3, importance=[1, 2, 3, 4]).apply(md).microdata
    assert protected.frame["region"].null_count() > 0
    plan = ReleasePlan(drop=["district", "area", "age", "stratum"])
    out = release(md, protected, plan, k=3, seed=3)
    assert out.check.recoverable_values == 0, out.check.findings
    assert out.check.ok, out.check.findings
    # the linked region name was suppressed with its region
    rel = out.frame
    assert (rel["region_name"].is_null() == rel["region"].is_null()).all()
    path = out.write(tmp_path / "released.parquet")
    written = pl.read_parquet(path)
    assert "person_id" not in written.columns and "household_id" in written.columns
    assert written.height == md.n_records
    # new ids: the same households, other numbers, another record order
    assert written["household_id"].n_unique() == named["household_id"].n_unique()
    assert not written["household_id"].equals(named["household_id"])


def test_household_survey_gives_back_sizes_and_regions_through_the_household(
    census: pl.DataFrame,
) -> None:
    keys = ["region", "household_size", "sex", "age_group"]
    md = Microdata(census, keys=keys, household="household_id")
    # without closing the household channel (a region suppressed in one member only)
    leaky = LocalSuppression(k=3, block_inference=False, block_households=False)
    protected = leaky.apply(md).microdata
    out = release(md, protected, ReleasePlan(order="original"))
    by = {(f.check, f.column, f.target): f.count for f in out.check.findings}
    sizes = int(protected.frame["household_size"].null_count())
    assert sizes > 0
    # counting the members of a household gives every suppressed household size back
    assert by[("household", "household_id", "household_size")] == sizes
    assert by[("household", "household_id", "region")] > 0


def test_household_level_numbers_find_the_household(census: pl.DataFrame) -> None:
    keys = ["region", "sex", "age_group"]
    md = Microdata(census, keys=keys, household="household_id")
    protected = LocalSuppression(k=3, block_inference=False).apply(md).microdata
    out = release(md, protected, ReleasePlan(household_id="drop", drop=["weight"]))
    assert "household_id" not in out.frame.columns
    # the household income is the same for every member and different per household: the
    # released file still links the members, so the risk counts households
    assert out.check.risk is not None and out.check.risk.households is not None
    assert "household_income" in out.check.risk.households
    assert out.check.household_risk_pct is not None
    dropped = release(md, protected, ReleasePlan(
        household_id="drop", drop=["weight", "household_income", "district", "area", "stratum"],
    ))  # fmt: skip
    assert dropped.check.risk.households is None and dropped.check.household_risk_pct is None


def test_declared_household_level_keys_are_suppressed_per_household(census: pl.DataFrame) -> None:
    keys = ["region", "sex", "age_group"]
    md = Microdata(census, keys=keys, household="household_id", household_level=["region"])
    protected = LocalSuppression(k=3).apply(md).microdata
    per_household = (
        protected.frame.group_by("household_id")
        .agg(pl.col("region").null_count().alias("n"), pl.len().alias("size"))
        .filter(pl.col("n") > 0)
    )
    assert per_household.height > 0
    assert (per_household["n"] == per_household["size"]).all()
    out = release(md, protected, ReleasePlan(drop=["district", "area", "stratum", "age"]))
    assert out.check.household_values == 0


def test_household_size_as_a_key_needs_the_household_id_dropped(census: pl.DataFrame) -> None:
    keys = ["household_size", "sex", "age_group"]
    md = Microdata(census, keys=keys, household="household_id", household_level=["household_size"])
    protected = LocalSuppression(k=3).apply(md).microdata
    drop = ["district", "area", "stratum", "age", "household_income", "person_id", "weight"]
    kept = release(md, protected, ReleasePlan(drop=drop), k=3)
    assert kept.check.household_values > 0  # the new id still counts the members
    dropped = release(md, protected, ReleasePlan(drop=drop, household_id="drop"), k=3)
    assert dropped.check.household_values == 0, dropped.check.findings


def test_recoded_key_given_back_by_a_finer_column() -> None:
    # every exact age is shared by at least ten records (a classification an intruder knows)
    df = pl.DataFrame(
        {
            "age": [21, 21, 22, 22, 37, 37, 38, 38] * 6,
            "age_group": (["20-24"] * 4 + ["35-39"] * 4) * 6,
            "sex": [1, 2] * 24,
        }
    )  # fmt: skip
    md = Microdata(df, keys=["age_group", "sex"])
    recoded = (
        GlobalRecoding(mapping={"age_group": {"20-24": "20-39", "35-39": "20-39"}})
        .apply(md)
        .microdata
    )
    res = release(md, recoded, ReleasePlan(order="original"), k=2)
    assert res.check.determined_values == 48  # every record: age gives the five-year group
    (attack,) = [a for a in res.check.attacks if a.kind == "recoded"]
    # chance: the share of a record's five-year group among the records of its ten-year group
    assert (attack.protected, attack.got_back, attack.chance) == (48, 48, 24.0)
    assert release(md, recoded, ReleasePlan(drop=["age"]), k=2).check.ok


def test_identifiers_and_targets() -> None:
    df = pl.DataFrame({"pid": range(8), "a": [1, 1, 1, 1, 2, 2, 2, 2], "w": [10.0] * 8})
    md = Microdata(df, keys=["a"], weight="w", identifiers=["pid"])
    assert release(md, md).frame.columns == ["a", "w"]
    res = check_release(df, df, keys=["a"], identifiers=["pid"], weight="w")
    assert res.identifiers == ("pid",) and not res.ok
    # fk = 4, Fk = 40: Benedetti-Franconi risk (sdcMicro's approximation) p / (f - q)
    p = 4 / 40
    expected = p / (4 - (1 - p))
    tight = ReleaseTarget(k=5, max_individual_risk=expected / 2)
    res = check_release(df.drop("pid"), df.drop("pid"), keys=["a"], weight="w", target=tight)
    assert res.k_violations == 8 and not res.target_met
    assert res.highest_risk == pytest.approx(expected, rel=1e-12)
    with pytest.raises(DataError, match="number of records"):
        check_release(df, df.head(4), keys=["a"])


def test_plan_keep_and_drop_are_exclusive() -> None:
    from sdckit.errors import ParameterError

    with pytest.raises(ParameterError, match="not both"):
        ReleasePlan(keep=["a"], drop=["b"])
    md = Microdata(pl.DataFrame({"a": [1, 1], "pid": [1, 2]}), keys="a", identifiers=["pid"])
    with pytest.raises(Exception, match="direct identifier"):
        ReleasePlan(keep=["a", "pid"]).roles(md)


# ----------------------------------------------------------------- brute force and random
def _brute_fk(rows: list[tuple]) -> list[int]:
    """fk with missing (None) matching anything, by comparing every pair."""

    def match(a: tuple, b: tuple) -> bool:
        return all(x is None or y is None or x == y for x, y in zip(a, b, strict=True))

    return [sum(match(r, s) for s in rows) for r in rows]


def _brute_household_recovered(orig: pl.DataFrame, rel: pl.DataFrame, t: str, hh: str) -> int:
    """Protected values of t that another member of the household shows (released hh id)."""
    n = 0
    o, r = orig.to_dicts(), rel.to_dicts()
    for i in range(len(o)):
        if o[i][t] is None or r[i][t] == o[i][t]:
            continue
        shown = {r[j][t] for j in range(len(o)) if j != i and r[j][hh] == r[i][hh]} - {None}
        if len(shown) == 1 and shown == {o[i][t]}:
            n += 1
    return n


households = st.lists(
    st.tuples(
        st.integers(1, 4),  # household size
        st.sampled_from(["n", "s", "e", "w"]),  # region of the household
    ),
    min_size=8,
    max_size=30,
)


def _household_file(spec: list[tuple[int, str]], data: st.DataObject) -> pl.DataFrame:
    rows = []
    for h, (size, region) in enumerate(spec):
        for _ in range(size):
            rows.append(
                {
                    "hid": h,
                    "region": region,
                    "region_name": f"Region {region.upper()}",  # linked: a function of region
                    "sex": data.draw(st.sampled_from(["1", "2"])),
                    "age": data.draw(st.sampled_from(["young", "mid", "old", None])),
                }
            )
    return pl.DataFrame(rows)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=households, data=st.data(), k=st.integers(2, 3), recode=st.booleans())
def test_any_suppression_sequence_leaves_nothing_to_read_back(
    spec: list[tuple[int, str]], data: st.DataObject, k: int, recode: bool
) -> None:
    df = _household_file(spec, data)
    assume(df.height >= 2 * k)
    keys = ["region", "sex", "age"]
    md = Microdata(
        df, keys=keys, household="hid", household_level=["region"],
        linked={"region_name": "region"},
    )  # fmt: skip
    current = md
    if recode:
        current = GlobalRecoding(mapping={"age": {"mid": "old"}}).apply(current).microdata
    current = LocalSuppression(k=k).apply(current).microdata
    plan = ReleasePlan()  # records in a random order (in the original order, households of
    # one region written next to each other give a suppressed region back: tested elsewhere)
    out = release(md, current, plan, k=k, seed=0)
    rel = out.frame
    # independent recount by brute force
    fk = _brute_fk([tuple(row) for row in rel.select(keys).iter_rows()])
    assert min(fk) >= k
    assert out.check.k_violations == sum(f < k for f in fk) == 0
    assert out.check.household_values == _brute_household_recovered(df, rel, "region", "hid") == 0
    # the linked region name follows the region's suppression
    assert (rel["region_name"].is_null() == rel["region"].is_null()).all()
    if not recode:  # with recoding, a coincidental structure of a tiny file may count
        assert out.check.recoverable_values == 0, out.check.findings


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", None]), st.sampled_from(["x", "y", None])),
        min_size=2,
        max_size=25,
    ),
    st.integers(2, 4),
)
def test_wildcard_counts_equal_a_brute_force_recount(rows: list[tuple], k: int) -> None:
    df = pl.DataFrame({"u": [r[0] for r in rows], "v": [r[1] for r in rows]}, strict=False)
    res = check_release(df, df, keys=["u", "v"], target=ReleaseTarget(k=k))
    fk = _brute_fk(rows)
    assert res.smallest_class == min(fk)
    assert res.k_violations == sum(f < k for f in fk)


def test_brute_force_household_recount_on_a_census(census: pl.DataFrame) -> None:
    small = census.head(400)
    md = Microdata(small, keys=["region", "sex", "age_group"], household="household_id")
    leaky = LocalSuppression(k=3, block_inference=False, block_households=False)
    protected = leaky.apply(md).microdata
    res = release(md, protected, ReleasePlan(order="original", household_id="drop",
                                              drop=["household_income", "weight"]))  # fmt: skip
    with_id = release(md, protected, ReleasePlan(order="original"))
    brute = _brute_household_recovered(small, with_id.frame, "region", "household_id")
    counted = sum(
        f.count for f in with_id.check.findings
        if f.check == "household" and f.column == "household_id" and f.target == "region"
    )  # fmt: skip
    assert counted == brute > 0
    assert res.check.household_values <= with_id.check.household_values


def test_a_top_coded_household_size_comes_back_by_counting_members() -> None:
    from sdckit.datasets import generate_household_survey

    df = generate_household_survey(600, seed=2).drop("person_id", "remark", "date_of_birth")
    md = Microdata(df, keys=["region", "household_size", "sex"], household="hh_id",
                   household_level=["region", "household_size"])  # fmt: skip
    top = {str(s): str(s) if s < 6 else "6+" for s in range(1, 20)}
    coded = GlobalRecoding(mapping={"household_size": top}).apply(md).microdata
    large = int((df["household_size"] >= 6).sum())
    plan = ReleasePlan(keep=["hh_id", "region", "household_size", "sex"])
    out = release(md, coded, plan, target=ReleaseTarget(k=2), seed=1)
    (attack,) = [a for a in out.check.attacks if a.target == "household_size"]
    # "6+" hides nothing: the released household id counts the members of every one of them
    assert (attack.kind, attack.protected, attack.got_back) == ("recoded", large, large)
    finding = next(f for f in out.check.findings if f.target == "household_size")
    assert finding.column == "hh_id" and "counting" in finding.how
    assert "leave the household id out" in finding.fix_words()
    assert '[output] household_id = "drop"' in finding_line(finding)  # the command line's words
    # without the household id nothing comes back (the members are not linked)
    alone = release(md, coded, ReleasePlan(keep=["region", "household_size", "sex"],
                                           household_id="drop"),
                    target=ReleaseTarget(k=2), seed=1)  # fmt: skip
    assert not [f for f in alone.check.findings if f.target == "household_size"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(60, 400), share=st.floats(0.02, 0.3))
def test_no_channel_no_finding(seed: int, n: int, share: float) -> None:
    """Values suppressed at random in a file whose columns say nothing about each other:
    whatever the attackers assert, nothing is given back beyond chance (no false alarm)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    df = pl.DataFrame({
        "a": rng.choice(["x", "y", "z"], n),
        "b": rng.choice(["p", "q"], n),
        "c": rng.choice(["u", "v", "w", "t"], n),
        "w": rng.lognormal(3.0, 0.5, n).round(0),   # a weight unrelated to everything
        "note": rng.choice(["ok", "call back", "helpful", None], n),
        "score": rng.normal(size=n),
    })  # fmt: skip
    md = Microdata(df, keys=["a", "b", "c"], numeric=["score"], weight="w")
    hidden = rng.random(n) < share
    released = md.with_frame(df.with_columns(pl.when(pl.Series(hidden)).then(None)
                                             .otherwise(pl.col("a")).alias("a")))  # fmt: skip
    out = release(md, released, ReleasePlan(keep=["a", "b", "c", "w", "note", "score"]),
                  target=ReleaseTarget(), seed=seed)  # fmt: skip
    assert out.check.recoverable_values == 0, out.check.findings


def test_the_check_gives_the_same_verdict_every_time_and_in_any_number_of_threads(
    census: pl.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sdckit.release import _check, _context

    md = Microdata(census, **_roles(household="household_id"))
    protected = LocalSuppression(k=3, block_inference=False).apply(md).microdata
    plan = ReleasePlan(drop=["district", "area"])
    first = release(md, protected, plan, k=3, seed=5).check
    again = release(md, protected, plan, k=3, seed=5).check
    monkeypatch.setattr(_context, "THREADS", 1)
    monkeypatch.setattr(_check, "THREADS", 1)
    single = release(md, protected, plan, k=3, seed=5).check
    for other in (again, single):
        assert other.attacks_frame().equals(first.attacks_frame())
        assert other.to_frame().equals(first.to_frame())
    assert first.findings  # the age and the stratum give values back: something to compare


@pytest.mark.parametrize(
    ("k", "words"),
    [(2, "with no other record (k = 2)"), (4, "with fewer than 3 other records (k = 4)")],
)
def test_a_k_anonymity_finding_counts_the_other_records(k: int, words: str) -> None:
    df = pl.DataFrame({"sex": ["m", "f", "f", "m", "m", "f", "f"],
                       "region": ["a", "a", "a", "b", "b", "b", "c"]})  # fmt: skip
    check = check_release(df, df, keys=["sex", "region"], target=ReleaseTarget(k=k))
    (finding,) = [f for f in check.findings if f.check == "k_anonymity"]
    records = {2: 3, 4: 7}[k]  # k = 2: (m, a), (f, b), (f, c) are alone; k = 4: every record
    assert finding.count == records and finding.how.startswith(f"{records} released records")
    assert finding.how.endswith(words + "."), finding.how


def test_a_date_column_is_read_as_dates_whatever_its_first_rows() -> None:
    """The quick test of whether a text column holds dates looks at the whole file: a file
    sorted so that its first 1,200 rows say 'unknown' still has its dates read (95 % are)."""
    import datetime as dt

    from sdckit.release._channels import _text_channels

    days = [dt.date(1940, 1, 1) + dt.timedelta(days=int(d)) for d in range(0, 30_000 * 7, 7)]
    text = ["unknown"] * 1_200 + [d.isoformat() for d in days[1_200:]]
    groups: list = []
    orders: list = []
    _text_channels("born", "'born'", pl.Series("born", text), groups, orders)
    assert [o.label for o in orders] == ["'born' (as a date)"]
    assert any(g.label == "'born' (as a date) (year)" for g in groups)


def test_luck_counts_a_household_guessed_together_as_one_draw() -> None:
    """Ten households of ten members, each right by chance one time in ten: three households
    guessed right (30 values, chance 10) is luck when a household's members stand or fall
    together (sd of the count 9.5), not when the 100 guesses are independent (sd 3)."""
    from sdckit.release._score import _beyond, _clusters

    right = np.repeat([True] * 3 + [False] * 7, 10)
    chance = np.full(100, 0.1)
    confident = np.full(100, 0.95)
    assert _beyond(right, chance, confident, 0.0)
    households = np.repeat(np.arange(10), 10)
    rows, guessed = np.arange(100), np.zeros(100, dtype=np.int64)
    assert not _beyond(right, chance, confident, 0.0, _clusters(households, rows, guessed))
    # a record without a household, or another guess in the household, is a draw of its own
    assert len(np.unique(_clusters(np.full(100, -1), rows, guessed))) == 100
    split = _clusters(households, rows, np.tile([0, 1], 50))
    assert len(np.unique(split)) == 20
    # seven households right of ten is beyond luck either way
    many = np.repeat([True] * 7 + [False] * 3, 10)
    assert _beyond(many, chance, confident, 0.0, _clusters(households, rows, guessed))

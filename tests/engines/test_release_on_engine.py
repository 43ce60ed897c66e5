"""The release check on an engine (check_on_engine) and the report made from it.

The same original and released census file on the polars engines, Dask and Spark: the
recounted k-anonymity and risk equal sdckit.risk in memory, the margins, changed values and
moments equal polars on the whole frame, the sample is the same on every engine, the sampled
attacks find a planted leak and pass a clean release, and the report says "sample".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from engine_helpers import spark_session

from sdckit.datasets import generate_census
from sdckit.engines import check_on_engine
from sdckit.engines._aggregates import PRIME, ROW, SampleHash
from sdckit.errors import ColumnError, DataError, ParameterError
from sdckit.report import render_engine_report, write_engine_report
from sdckit.risk import assess_risk

KEYS = ["region", "urban_rural", "sex", "age_group", "marital_status"]
NUMERIC = ["income", "expenditure", "hours_worked"]
ROLES = {"keys": KEYS, "numeric": NUMERIC, "weight": "weight", "strata": "stratum",
         "household": "household_id"}  # fmt: skip
COLUMNS = [ROW, *KEYS, *NUMERIC, "weight", "household_id", "stratum"]
SAMPLE = 1500


def _census() -> tuple[pl.DataFrame, pl.DataFrame]:
    """A census file in random record order (so that the order gives nothing back) and its
    release: keys suppressed in the classes below 3, income rounded to thousands."""
    df = generate_census(4000, seed=3).sample(fraction=1.0, shuffle=True, seed=5)
    df = df.with_row_index(ROW).with_columns(pl.col(ROW).cast(pl.Int64)).select(COLUMNS)
    rel = df.with_columns(
        pl.when(pl.len().over(KEYS) < 3).then(None).otherwise(pl.col("age_group"))
        .alias("age_group"),
        (pl.col("income") / 1000).round() * 1000,
    )  # fmt: skip
    small = pl.len().over(["region", "urban_rural", "sex", "marital_status"]) < 3
    rel = rel.with_columns(
        pl.when(small).then(None).otherwise(pl.col("marital_status")).alias("marital_status")
    )
    return df, rel


ORIGINAL, RELEASED = _census()


def _weak() -> pl.DataFrame:
    """A release with a planted leak, the weights left out and values of another type: the
    region suppressed in a tenth of the records and released whole as ``copy``; expenditure
    released as bands of 10,000; hours worked as floats with missing values."""
    suppress = pl.when(pl.col(ROW) % 10 == 0).then(None).otherwise(pl.col("region"))
    bands = (pl.col("expenditure") // 10_000 * 10_000).cast(pl.Int64).cast(pl.String)
    hours = pl.when(pl.col(ROW) % 7 == 0).then(None).otherwise(pl.col("hours_worked"))
    return RELEASED.drop("weight").with_columns(
        suppress.alias("region"), pl.col("region").alias("copy"), bands.alias("expenditure"),
        hours.cast(pl.Float64).alias("hours_worked"),
    )  # fmt: skip


WEAK = _weak()


# ------------------------------------------------------------------------------ engines
@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


@pytest.fixture(scope="module")
def spark():
    yield from spark_session("sdckit-release-check-tests")


def _to_dask(frame: pl.DataFrame):
    dd = pytest.importorskip("dask.dataframe")
    return dd.from_pandas(frame.to_pandas(), npartitions=3)


@pytest.fixture(params=["polars", "streaming", "dask", "spark"])
def on_engine(request):
    """(engine, a function putting a polars frame on it)."""
    engine = request.param
    if engine == "dask":
        request.getfixturevalue("dask_client")
        return engine, _to_dask
    if engine == "spark":
        session = request.getfixturevalue("spark")
        return engine, lambda frame: session.createDataFrame(frame.to_arrow())
    return engine, lambda frame: frame.lazy()


def _check(on_engine, original=ORIGINAL, released=RELEASED, **kwargs):
    engine, put = on_engine
    kwargs = {"roles": ROLES, "k": 3, "seed": 7, "sample_size": SAMPLE, **kwargs}
    return check_on_engine(put(original), put(released), engine=engine, **kwargs)


@pytest.fixture(scope="module")
def results() -> dict:
    """One check per engine, shared by the tests that compare figures."""
    return {}


@pytest.fixture
def result(on_engine, results):
    if on_engine[0] not in results:
        results[on_engine[0]] = _check(on_engine)
    return results[on_engine[0]]


@pytest.fixture(scope="module")
def weak_results() -> dict:
    return {}


@pytest.fixture
def weak(on_engine, weak_results):
    """The check of the weak release (see ``_weak``) on each engine."""
    if on_engine[0] not in weak_results:
        weak_results[on_engine[0]] = _check(on_engine, released=WEAK)
    return weak_results[on_engine[0]]


# ------------------------------------------------------------------------------ figures
def test_k_anonymity_and_risk_equal_sdckit_risk(result) -> None:
    ref = assess_risk(RELEASED, keys=KEYS, weight="weight", household="household_id")
    want = ref.figures()
    for name, value in want.items():
        if isinstance(value, int):
            assert result.risk[name] == value, name
        else:
            assert result.risk[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name
    assert result.smallest_class == ref.smallest_class == 3
    assert result.k_violations == ref.k_violations(3) == 0
    assert result.target_met and result.n_records == ORIGINAL.height


def test_margins_and_changes_equal_polars(result) -> None:
    for variable in [*KEYS, "stratum"]:
        got = result.margins.filter(pl.col("variable") == variable)
        for frame, column in ((ORIGINAL, "original"), (RELEASED, "released")):
            want = frame.group_by(variable).len().filter(pl.col("len") > 0)
            want_map = dict(zip(want.get_column(variable).to_list(),
                                want.get_column("len").to_list(), strict=True))  # fmt: skip
            pairs = zip(got.get_column("value").to_list(), got.get_column(column).to_list(),
                        strict=True)  # fmt: skip
            got_map = {v: c for v, c in pairs if c}
            assert got_map == want_map, (variable, column)
        changed = ORIGINAL.get_column(variable).ne_missing(RELEASED.get_column(variable)).sum()
        suppressed = (RELEASED.get_column(variable).is_null()
                      & ORIGINAL.get_column(variable).is_not_null()).sum()  # fmt: skip
        row = result.changes.filter(pl.col("variable") == variable).row(0, named=True)
        assert (row["changed"], row["suppressed"]) == (changed, suppressed), variable
        assert row["margin_shift"] == got.get_column("difference").abs().sum() // 2
    assert result.changes.filter(pl.col("variable") == "age_group")["suppressed"].item() > 0
    income = result.changes.filter(pl.col("variable") == "income").row(0, named=True)
    assert income["changed"] == ORIGINAL["income"].ne_missing(RELEASED["income"]).sum() > 0
    assert result.figures()["key_values_suppressed"] == sum(
        RELEASED[k].is_null().sum() - ORIGINAL[k].is_null().sum() for k in KEYS
    )


def test_moments_equal_numpy(result) -> None:
    for frame, tag in ((ORIGINAL, "original"), (RELEASED, "released")):
        x = frame.select(NUMERIC).to_numpy().astype(np.float64)
        table = result.numeric
        np.testing.assert_allclose(table[f"mean_{tag}"].to_numpy(), x.mean(axis=0), rtol=1e-10)
        np.testing.assert_allclose(table[f"var_{tag}"].to_numpy(), x.var(axis=0, ddof=1),
                                   rtol=1e-8)  # fmt: skip
        corr = np.corrcoef(x, rowvar=False)
        want = [corr[i, j] for i in range(3) for j in range(i + 1, 3)]
        np.testing.assert_allclose(result.correlations[tag].to_numpy(), want, rtol=1e-8)
    assert result.numeric["mean_released"][0] != result.numeric["mean_original"][0]


# ------------------------------------------------------------------------------ the sample
def test_the_sample_is_the_same_on_every_engine(result, results) -> None:
    assert result.sample_unit == "households"
    # the hash computed here in numpy draws the same households as the engine did
    rng = np.random.default_rng(7)
    a, b = int(rng.integers(1, PRIME)), int(rng.integers(0, PRIME))
    hashing = SampleHash(a, b, int(np.ceil(SAMPLE / ORIGINAL.height * PRIME)))
    keep = hashing.keep(ORIGINAL.get_column("household_id").to_numpy())
    want = np.sort(ORIGINAL.get_column(ROW).to_numpy()[keep])
    np.testing.assert_array_equal(result.sample_index, want)
    assert result.sample_records == len(want)
    assert 0.7 * SAMPLE < len(want) < 1.3 * SAMPLE
    # whole households: every member of a sampled household is in the sample
    sampled = ORIGINAL.filter(pl.col(ROW).is_in(want.tolist()))
    hh = sampled.get_column("household_id").unique()
    assert ORIGINAL.filter(pl.col("household_id").is_in(hh.implode())).height == len(want)
    for other in results.values():
        np.testing.assert_array_equal(other.sample_index, result.sample_index)


def test_another_seed_draws_another_sample() -> None:
    engine = ("streaming", lambda frame: frame.lazy())
    one = _check(engine, seed=1)
    two = _check(engine, seed=2)
    again = _check(engine, seed=1)
    assert not np.array_equal(one.sample_index, two.sample_index)
    np.testing.assert_array_equal(one.sample_index, again.sample_index)


def test_records_drawn_without_household_id() -> None:
    roles = {k: v for k, v in ROLES.items() if k != "household"}
    res = _check(("streaming", lambda frame: frame.lazy()), roles=roles)
    assert res.sample_unit == "records"
    rng = np.random.default_rng(7)
    a, b = int(rng.integers(1, PRIME)), int(rng.integers(0, PRIME))
    hashing = SampleHash(a, b, int(np.ceil(SAMPLE / ORIGINAL.height * PRIME)))
    rows = np.arange(ORIGINAL.height)
    np.testing.assert_array_equal(res.sample_index, rows[hashing.keep(rows)])


def test_a_clean_release_passes(result) -> None:
    assert result.ok, result.summary()
    assert result.sample.recoverable_values == 0 and not result.sample.identifiers
    assert not result.whole_file
    text = str(result.summary())
    assert "sample of" in text and "What it cannot show" in text


def test_a_small_file_is_read_whole() -> None:
    res = _check(("streaming", lambda frame: frame.lazy()), sample_size=10**6)
    assert res.whole_file and res.sample_records == ORIGINAL.height
    assert "every record" in res.sample_words()


# ------------------------------------------------------------------------------ errors
def test_the_row_index_is_required() -> None:
    with pytest.raises(ColumnError, match=ROW):
        check_on_engine(ORIGINAL.drop(ROW).lazy(), RELEASED.lazy(), engine="streaming",
                        roles=ROLES, k=3, seed=1)  # fmt: skip


def test_records_must_match() -> None:
    with pytest.raises(DataError, match="number of records"):
        check_on_engine(ORIGINAL.lazy(), RELEASED.head(10).lazy(), engine="streaming",
                        roles=ROLES, k=3, seed=1)  # fmt: skip
    shifted = RELEASED.with_columns(pl.col(ROW) + 1)
    with pytest.raises(DataError, match="row index"):
        check_on_engine(ORIGINAL.lazy(), shifted.lazy(), engine="streaming",
                        roles={"keys": KEYS}, k=3, seed=1, sample_size=SAMPLE)  # fmt: skip


def test_bad_roles() -> None:
    with pytest.raises(ParameterError, match="unknown role"):
        check_on_engine(ORIGINAL.lazy(), RELEASED.lazy(), engine="streaming",
                        roles={"key": KEYS}, k=3, seed=1)  # fmt: skip
    with pytest.raises(ColumnError, match="nope"):
        check_on_engine(ORIGINAL.lazy(), RELEASED.lazy(), engine="streaming",
                        roles={"keys": ["nope"]}, k=3, seed=1)  # fmt: skip


# ------------------------------------------------------------------------------ the report
STEPS = [
    {"method": "LocalSuppression", "params": {"k": 3}, "variables": ["age_group"],
     "changed": {"age_group": 12}, "records": 12},
    {"method": "GlobalRecoding", "params": {"width": 1000}, "variables": ["income"]},
]  # fmt: skip


def test_the_report_says_sample(tmp_path: Path) -> None:
    res = _check(("streaming", lambda frame: frame.lazy()))
    path = write_engine_report(res, tmp_path / "internal.html", steps=STEPS)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert "a seeded sample of" in text and "What it cannot show" in text
    assert "LocalSuppression" in text and "k=3" in text
    assert "Margins of the key variables and strata" in text
    assert "every record" in text and "It may be released" in text
    external = render_engine_report(res, steps=STEPS, kind="external")
    assert "the attacks read a sample of" in external
    assert "k=3" not in external and "Margins" not in external
    assert "Removes" in external or "suppress" in external.lower()
    # the same check gives the same bytes
    assert render_engine_report(res, steps=STEPS) == text


def test_the_report_of_a_refused_release(tmp_path: Path) -> None:
    res = _check(("streaming", lambda frame: frame.lazy()), released=WEAK)
    text = render_engine_report(res, steps=STEPS)
    assert "must NOT be released" in text and "&#39;copy&#39;" in text
    with pytest.raises(ParameterError, match="check_on_engine"):
        render_engine_report(object())


def test_the_sample_finds_a_released_copy_of_a_suppressed_key(weak) -> None:
    assert not weak.ok
    found = weak.to_frame().filter(pl.col("column") == "copy")
    assert found.height == 1
    assert found.row(0, named=True)["target"] == "region"
    assert found.row(0, named=True)["source"] == "sample"
    # the sampled suppressed values, each given back by the copy
    sampled = WEAK.filter(pl.col(ROW).is_in(weak.sample_index.tolist()))
    assert found.row(0, named=True)["count"] == sampled["region"].null_count() > 0


def test_weights_left_out_are_read_from_the_original(weak) -> None:
    """As the in-memory check: the risk of a file released without its weights uses the
    original weights (joined on the row index on the engine)."""
    # expenditure, released as bands, is a key of the released file (as in memory)
    keys = [*KEYS, "expenditure"]
    ref = assess_risk(WEAK.with_columns(ORIGINAL["weight"]), keys=keys, weight="weight",
                      household="household_id")  # fmt: skip
    assert "original weights" in weak.weights and weak.keys == tuple(keys)
    for name, value in ref.figures().items():
        assert weak.risk[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name


def test_values_of_another_type(weak) -> None:
    """A number released as a band is compared as text and left out of the moments; an
    integer released as float (missing values) is compared as a number."""
    changes = {r["variable"]: r for r in weak.changes.iter_rows(named=True)}
    assert changes["expenditure"]["changed"] == ORIGINAL.height
    want = int((ORIGINAL[ROW] % 7 == 0).sum())
    assert changes["hours_worked"]["changed"] == changes["hours_worked"]["suppressed"] == want
    assert weak.numeric.get_column("variable").to_list() == ["income", "hours_worked"]
    assert any("expenditure" in note for note in weak.notes)
    assert changes["region"]["suppressed"] == int((ORIGINAL[ROW] % 10 == 0).sum())


def test_files_compared_in_slices_or_joined(monkeypatch) -> None:
    """The streaming engine compares the files slice by slice when they line up, and joins
    them on the row index when they do not (a released file in another order)."""
    engine = ("streaming", lambda frame: frame.lazy())
    whole = _check(engine)
    monkeypatch.setenv("SDCKIT_CHANGED_ROWS", "700")
    sliced = _check(engine)
    shuffled = _check(engine, released=RELEASED.reverse())
    assert whole.changes.get_column("changed").sum() > 0
    assert sliced.changes.equals(whole.changes)
    assert shuffled.changes.equals(whole.changes)
    assert shuffled.margins.equals(whole.margins)


def test_households_drawn_from_the_original_when_the_release_renumbers_them(on_engine) -> None:
    """The job releases new household ids: the sample is drawn by the original's households
    and the same records taken from the released file by their row index (drawing by each
    file's own ids would pick other households in the two files)."""
    ids = ORIGINAL.get_column("household_id").unique().sort()
    new = pl.DataFrame(
        {"household_id": ids, "new": np.random.default_rng(3).permutation(len(ids)) + 1}
    )
    renumbered = (
        RELEASED.join(new, on="household_id", how="left")
        .with_columns(pl.col("new").cast(ORIGINAL.schema["household_id"]).alias("household_id"))
        .drop("new")
        .select(RELEASED.columns)
    )
    res = _check(on_engine, released=renumbered)
    assert res.sample_unit == "households" and not res.whole_file
    # the sample holds whole original households
    drawn = ORIGINAL.filter(pl.col(ROW).is_in(pl.Series(res.sample_index, dtype=pl.Int64)))
    sizes = ORIGINAL.group_by("household_id").len()
    got = drawn.group_by("household_id").len().join(sizes, on="household_id", suffix="_all")
    assert (got["len"] == got["len_all"]).all()
    engine = ("streaming", lambda frame: frame.lazy())
    np.testing.assert_array_equal(res.sample_index, _check(engine).sample_index)

"""Microaggregation within strata and record swapping within top-level areas on the engines.

Per record the output must equal the in-memory method's: microaggregation within strata on the
whole file; record swapping run in memory on each top-level area alone with that area's seed
(stream ``(0, s)`` of the seed), on the lower levels of the hierarchy.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from engine_helpers import released_in_memory, spark_session

from sdckit.datasets import generate_census
from sdckit.engines import EngineError
from sdckit.engines._groups import (
    microaggregation_on_engine,
    swapping_on_engine,
    swapping_within_areas_on_engine,
)
from sdckit.masking import Microaggregation, TargetedRecordSwapping
from sdckit.masking.keyed import ROW, group_seeds

SWAP = {
    "hierarchy": ["region", "district", "area"],
    "risk_variables": ["sex", "age_group"],
    "k": 3,
    "swap_rate": 0.05,
}


@pytest.fixture(scope="module")
def census() -> pl.DataFrame:
    df = generate_census(2400, seed=7).with_row_index(ROW).with_columns(pl.col(ROW).cast(pl.Int64))
    # missing values in an aggregated variable (they stay missing)
    return df.with_columns(
        savings=pl.when(pl.col(ROW) % 19 == 0).then(None).otherwise(pl.col("savings"))
    )


def _micro_reference(census: pl.DataFrame, method: str) -> pl.DataFrame:
    m = Microaggregation(k=3, method=method, variables=["income", "savings"], iterations=3, seed=5)
    return m.apply(census, strata="region").data


def _swap_reference(census: pl.DataFrame, seed: int) -> pl.DataFrame:
    """The in-memory swap of each region alone, with the region's stream."""
    regions = sorted(census.get_column("region").unique().to_list())
    seeds = group_seeds(seed, len(regions))
    parts = []
    for s, region in enumerate(regions):
        records = census.filter(pl.col("region") == region)
        method = TargetedRecordSwapping(
            **{**SWAP, "hierarchy": SWAP["hierarchy"][1:]}, seed=np.random.default_rng(seeds[s])
        )
        parts.append(method.apply(records, household="household_id").data)
    return pl.concat(parts).sort(ROW)


def _same(out: pl.DataFrame, ref: pl.DataFrame) -> None:
    out = out.sort(ROW)
    for c in ref.columns:
        a, b = out.get_column(c).cast(ref.schema[c]), ref.get_column(c)
        if b.dtype.is_float():
            a, b = a.fill_nan(None), b.fill_nan(None)
        assert a.equals(b, null_equal=True), c


def _engines(census: pl.DataFrame):
    yield "polars", census, lambda f: f
    yield "streaming", census.lazy(), lambda f: f.collect(engine="streaming")


@pytest.mark.parametrize("method", ["mdav", "mdav_refined"])
def test_microaggregation_within_strata_on_polars(census, method) -> None:
    ref = _micro_reference(census, method)
    m = Microaggregation(k=3, method=method, variables=["income", "savings"], iterations=3)
    for engine, frame, done in _engines(census):
        out = done(microaggregation_on_engine(frame, engine, m, seed=5, roles={"strata": "region"}))
        _same(out, ref)
    assert not ref.get_column("income").equals(census.get_column("income"))


def _whole_reference(census: pl.DataFrame, seed: int) -> pl.DataFrame:
    """The in-memory swap of the whole file (households swapped across regions)."""
    method = TargetedRecordSwapping(**SWAP, seed=seed)
    return method.apply(census, household="household_id").data


def test_swapping_within_regions_on_polars(census) -> None:
    ref = _swap_reference(census, 3)
    assert not ref.get_column("area").equals(census.get_column("area"))  # households moved
    method = TargetedRecordSwapping(**SWAP)
    for engine, frame, done in _engines(census):
        out = swapping_within_areas_on_engine(
            frame, engine, method, seed=3, roles={"household": "household_id"}
        )
        _same(done(out), ref)
    other = swapping_within_areas_on_engine(
        census, "polars", method, seed=4, roles={"household": "household_id"}
    )
    assert not other.get_column("area").equals(ref.get_column("area"))


def test_swapping_over_the_whole_file_equals_memory(census) -> None:
    """The engine's swap is the in-memory method's on the whole file: households moved across
    regions too, the same records moved, the same values, on each engine."""
    ref = _whole_reference(census, 3)
    moved = ref.get_column("region") != census.get_column("region")
    assert moved.sum() > 0  # a household given the geography of another region
    method = TargetedRecordSwapping(**SWAP)
    for engine, frame, done in _engines(census):
        out = swapping_on_engine(frame, engine, method, seed=3, roles={"household": "household_id"})
        _same(done(out), ref)
    # the seed is the job's: another seed, another swap
    other = swapping_on_engine(
        census, "polars", method, seed=4, roles={"household": "household_id"}
    )
    assert not other.get_column("area").equals(ref.get_column("area"))


def test_what_stays_in_memory_is_refused(census) -> None:
    one_level = TargetedRecordSwapping(**{**SWAP, "hierarchy": ["region"]})
    with pytest.raises(EngineError, match="two levels"):
        swapping_within_areas_on_engine(
            census, "polars", one_level, seed=1, roles={"household": "household_id"}
        )
    roles = {
        "strata": "region",
        "household": "household_id",
        "household_level": ["household_income"],
    }
    m = Microaggregation(k=3, variables=["household_income"])
    with pytest.raises(EngineError, match="in memory"):
        microaggregation_on_engine(census, "polars", m, seed=1, roles=roles)


# ------------------------------------------------------------------------------ Dask, Spark
@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def test_group_steps_on_dask(client, census) -> None:
    dd = pytest.importorskip("dask.dataframe")
    frame = dd.from_pandas(census.to_pandas(), npartitions=3)
    m = Microaggregation(k=3, method="mdav_refined", variables=["income", "savings"], iterations=3)
    out = microaggregation_on_engine(frame, "dask", m, seed=5, roles={"strata": "region"})
    _same(pl.from_pandas(out.compute()), _micro_reference(census, "mdav_refined"))
    out = swapping_within_areas_on_engine(
        frame, "dask", TargetedRecordSwapping(**SWAP), seed=3, roles={"household": "household_id"}
    )
    _same(pl.from_pandas(out.compute()), _swap_reference(census, 3))
    out = swapping_on_engine(
        frame, "dask", TargetedRecordSwapping(**SWAP), seed=3, roles={"household": "household_id"}
    )
    _same(pl.from_pandas(out.compute()), _whole_reference(census, 3))


@pytest.fixture(scope="module")
def spark():
    yield from spark_session("sdckit-group-steps")


def test_group_steps_on_spark(spark, census) -> None:
    frame = spark.createDataFrame(census.to_arrow()).repartition(3)
    m = Microaggregation(k=3, method="mdav", variables=["income", "savings"], iterations=3)
    out = microaggregation_on_engine(frame, "spark", m, seed=5, roles={"strata": "region"})
    _same(pl.from_arrow(out.toArrow()), _micro_reference(census, "mdav"))
    out = swapping_within_areas_on_engine(
        frame, "spark", TargetedRecordSwapping(**SWAP), seed=3, roles={"household": "household_id"}
    )
    _same(pl.from_arrow(out.toArrow()), _swap_reference(census, 3))
    out = swapping_on_engine(
        frame, "spark", TargetedRecordSwapping(**SWAP), seed=3, roles={"household": "household_id"}
    )
    _same(pl.from_arrow(out.toArrow()), _whole_reference(census, 3))


def test_a_job_swaps_on_an_engine_as_in_memory(tmp_path) -> None:
    """A job with record swapping runs on the streaming engine (no fallback to memory), and
    its released file equals the in-memory runner's, record for record in the released
    order."""
    import textwrap

    from typer.testing import CliRunner

    from sdckit.cli.app import app
    from sdckit.engines import unsupported_reason

    assert unsupported_reason(TargetedRecordSwapping(**SWAP), "streaming") is None
    census = generate_census(2400, seed=8)
    census.write_parquet(tmp_path / "census.parquet")
    job_file = tmp_path / "job.toml"
    job_file.write_text(
        textwrap.dedent(
            """
            seed = 11
            [input]
            file = "census.parquet"
            engine = "streaming"
            [roles]
            keys = ["region", "sex"]
            household = "household_id"
            identifiers = ["person_id"]
            [[steps]]
            method = "targeted_record_swapping"
            hierarchy = ["region", "district", "area"]
            risk_variables = ["sex", "age_group"]
            k = 3
            swap_rate = 0.05
            [target]
            k = 2
            [output]
            data = "out.parquet"
            keep = ["household_id", "region", "district", "area", "sex", "age_group"]
            """
        )
    )
    result = CliRunner().invoke(app, ["protect", str(job_file)])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "engine 'streaming'" in result.stdout
    got = pl.read_parquet(tmp_path / "out.parquet" / "*.parquet")
    runner, _, want = released_in_memory(job_file)
    moved = runner.current.frame["region"] != runner.original.frame["region"]
    assert int(moved.sum()) > 0  # households given the geography of another region
    assert got.columns == want.columns
    assert got.equals(want)

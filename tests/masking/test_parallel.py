"""Record-level methods within strata, in parallel processes (sdckit.masking._strata).

Local suppression, microaggregation, PRAM and noise work stratum by stratum; with ``n_jobs=2``
the strata go to two worker processes and the output is the same, bit for bit, as with
``n_jobs=1``: each stratum draws from a stream of its own derived from the method's seed, which
depends neither on the number of workers nor on the order in which strata finish.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sdckit import Microdata
from sdckit._keyed_random import normals
from sdckit.errors import ColumnError, DataError, InfeasibleError, ParameterError
from sdckit.masking import _strata
from sdckit.masking._microaggregation import Microaggregation
from sdckit.masking._pram import Pram
from sdckit.masking.keyed import noise_key
from sdckit.masking.noise import AddNoise
from sdckit.masking.suppression import LocalSuppression
from sdckit.protection import Protected, clone

N_STRATA = 5


def _file(seed: int = 0, n: int = 2500, n_strata: int = N_STRATA) -> pl.DataFrame:
    """A person file in households, in strata of unequal size (households within a stratum)."""
    rng = np.random.default_rng(seed)
    n_households = n // 3
    hh_stratum = rng.choice(n_strata, n_households, p=np.arange(1, n_strata + 1) / 15)
    hid = np.sort(rng.integers(0, n_households, n))
    hh_income = rng.gamma(3.0, 1000.0, n_households).round(0)
    frame = pl.DataFrame(
        {
            "hid": hid,
            "region": hh_stratum[hid],
            "hh_income": hh_income[hid],
            "sex": rng.integers(1, 3, n),
            "age": rng.integers(1, 9, n),
            "edu": rng.choice(["none", "primary", "secondary", "higher"], n),
            "job": rng.integers(0, 12, n),
            "income": rng.gamma(2.0, 500.0, n).round(1),
            "expenses": rng.gamma(3.0, 100.0, n).round(1),
        }
    )
    frame = frame.with_columns(total=pl.col("income") + pl.col("expenses"))
    return frame[rng.permutation(n)]


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    return _file()


def _md(frame: pl.DataFrame, **roles: object) -> Microdata:
    defaults: dict[str, object] = {
        "keys": ["sex", "age", "edu", "job"],
        "numeric": ["income", "expenses", "total", "hh_income"],
        "strata": "region",
    }
    defaults.update(roles)
    return Microdata(frame, **defaults)  # type: ignore[arg-type]


def _fk(frame: pl.DataFrame, keys: list[str], missing: str) -> np.ndarray:
    """fk recomputed; a key missing in every record matches everything and is left out."""
    from sdckit.risk import frequencies

    used = [c for c in keys if frame[c].null_count() < frame.height]
    if not used:
        return np.full(frame.height, float(frame.height))
    return frequencies(frame, keys=used, missing=missing, alpha=1.0).fk  # type: ignore[arg-type]


def _same(a: Protected, b: Protected) -> None:
    assert a.microdata.frame.equals(b.microdata.frame, null_equal=True)
    assert a.changed == b.changed
    np.testing.assert_array_equal(a.changed_records, b.changed_records)


def _serial_and_parallel(method: object, md: Microdata) -> tuple[Protected, Protected]:
    serial = clone(method).set_params(n_jobs=1).apply(md)  # type: ignore[attr-defined]
    parallel = clone(method).set_params(n_jobs=2).apply(md)  # type: ignore[attr-defined]
    return serial, parallel


# ------------------------------------------------------------------ parallel == serial
@pytest.mark.parametrize("missing", ["wildcard", "category"])
def test_local_suppression_within_strata_parallel_equals_serial(
    frame: pl.DataFrame, missing: str
) -> None:
    md = _md(frame)
    method = LocalSuppression(k=3, by_strata=True, missing=missing)
    serial, parallel = _serial_and_parallel(method, md)
    _same(serial, parallel)
    np.testing.assert_array_equal(serial.details["suppressed"], parallel.details["suppressed"])
    method.verify(md, parallel)
    assert serial.details["strata"] == "region"
    # k-anonymity within each stratum, recomputed on each stratum alone
    out = parallel.microdata.frame
    for level in range(N_STRATA):
        part = out.filter(pl.col("region") == level)
        assert _fk(part, list(md.keys), missing).min() >= 3


def test_local_suppression_within_strata_is_each_stratum_alone(frame: pl.DataFrame) -> None:
    md = _md(frame)
    ranks = [1, 2, 3, 4]  # (the default ranks count the levels of the file, or of a stratum)
    method = LocalSuppression(k=3, importance=ranks, by_strata=True, block_inference=False)
    result = clone(method).set_params(n_jobs=2).apply(md)
    out = result.microdata.frame
    for level in range(N_STRATA):
        rows = frame["region"].to_numpy() == level
        alone = LocalSuppression(k=3, importance=ranks, block_inference=False).apply(
            Microdata(frame.filter(pl.col("region") == level), keys=list(md.keys))
        )
        assert (
            out.filter(pl.Series(rows))
            .select(md.keys)
            .equals(alone.microdata.frame.select(md.keys), null_equal=True)
        )
    # within strata needs at least as many suppressions as the whole file
    whole = LocalSuppression(k=3, importance=ranks, block_inference=False).apply(md)
    assert result.details["suppressions"] >= whole.details["suppressions"]


@pytest.mark.parametrize("method", ["mdav", "mdav_refined", "univariate"])
def test_microaggregation_within_strata_parallel_equals_serial(
    frame: pl.DataFrame, method: str
) -> None:
    md = _md(frame, numeric=["income", "expenses"])
    algorithm = Microaggregation(k=3, method=method, iterations=20, seed=4)
    serial, parallel = _serial_and_parallel(algorithm, md)
    _same(serial, parallel)
    np.testing.assert_array_equal(serial.details["groups"], parallel.details["groups"])
    algorithm.verify(md, parallel)


def test_microaggregation_with_households_parallel_equals_serial(frame: pl.DataFrame) -> None:
    md = _md(frame, numeric=["income", "hh_income"], household="hid", household_level=["hh_income"])
    algorithm = Microaggregation(k=3, method="mdav_refined", iterations=20, seed=1)
    seen: list[tuple[int, int]] = []
    serial = algorithm.apply(md)
    parallel = clone(algorithm).set_params(n_jobs=2).apply(md, progress=lambda *a: seen.append(a))
    _same(serial, parallel)
    algorithm.verify(md, parallel)
    # two passes (records, then households), counted together
    assert seen == [(i, 2 * N_STRATA) for i in range(1, 2 * N_STRATA + 1)]


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"invariant": False, "diagonal": "fixed", "min_diagonal": 0.6},
        {"forbidden": [{"sex": 1, "edu": "higher"}], "min_diagonal": 0.5},
    ],
    ids=["invariant", "fixed", "forbidden"],
)
def test_pram_within_strata_parallel_equals_serial(frame: pl.DataFrame, params: dict) -> None:
    md = _md(frame)
    method = Pram(variables=["sex", "edu", "job"], seed=12, **params)
    serial, parallel = _serial_and_parallel(method, md)
    _same(serial, parallel)
    for c in ("sex", "edu", "job"):
        assert len(serial.details["transition"][c]) == N_STRATA
        for a, b in zip(
            serial.details["transition"][c], parallel.details["transition"][c], strict=True
        ):
            np.testing.assert_array_equal(a, b)
    assert serial.details["redraws"] == parallel.details["redraws"]
    method.verify(md, parallel)


def test_pram_household_level_within_strata_parallel_equals_serial() -> None:
    # a person-level stratum: members of a household may be in different strata (the
    # household's draw is made in its first member's stratum)
    frame = _file(3).with_columns(
        region=pl.Series(np.random.default_rng(0).integers(0, 3, 2500)),
        hcat=(pl.col("hid") % 4).cast(pl.String),
    )
    md = _md(frame, keys=["sex", "hcat"], numeric=[], household="hid", household_level=["hcat"])
    method = Pram(variables=["sex", "hcat"], seed=5)
    serial, parallel = _serial_and_parallel(method, md)
    _same(serial, parallel)
    method.verify(md, parallel)
    assert parallel.microdata.inconsistent_households("hcat") == 0


@pytest.mark.parametrize(
    "params",
    [
        {"method": "additive"},
        {"method": "correlated"},
        {"method": "exact", "balance": [("total", ["income", "expenses"])]},
        {"method": "outliers", "outlier_rule": "mahalanobis"},
    ],
    ids=["additive", "correlated", "exact", "outliers"],
)
def test_noise_within_strata_parallel_equals_serial(frame: pl.DataFrame, params: dict) -> None:
    md = _md(frame, numeric=["income", "expenses", "total"])
    method = AddNoise(by_strata=True, seed=8, **params)
    serial, parallel = _serial_and_parallel(method, md)
    _same(serial, parallel)
    method.verify(md, parallel)
    assert serial.details["strata"] == list(range(N_STRATA))
    assert len(serial.details["by_stratum"]) == N_STRATA
    assert all(len(v) == N_STRATA for v in serial.details["noise_sd"].values())


def test_noise_exact_keeps_the_moments_of_each_stratum(frame: pl.DataFrame) -> None:
    md = _md(frame, numeric=["income", "expenses"])
    out = AddNoise(method="exact", by_strata=True, seed=2, n_jobs=2).apply(md).microdata.frame
    for level in range(N_STRATA):
        before = frame.filter(pl.col("region") == level).select("income", "expenses").to_numpy()
        after = out.filter(pl.col("region") == level).select("income", "expenses").to_numpy()
        np.testing.assert_allclose(after.mean(axis=0), before.mean(axis=0), rtol=1e-9)
        np.testing.assert_allclose(np.cov(after.T), np.cov(before.T), rtol=1e-8)


def test_noise_household_level_within_strata(frame: pl.DataFrame) -> None:
    md = _md(frame, numeric=["income", "hh_income"], household="hid", household_level=["hh_income"])
    method = AddNoise(method="correlated", by_strata=True, seed=3)
    serial, parallel = _serial_and_parallel(method, md)
    _same(serial, parallel)
    method.verify(md, parallel)
    assert parallel.microdata.inconsistent_households("hh_income") == 0
    # households spread over strata cannot get one draw per household within strata
    spread = frame.with_columns(region=pl.Series(np.arange(frame.height) % 2))
    with pytest.raises(DataError, match="households have members in different strata"):
        method.apply(_md(spread, numeric=["income", "hh_income"], household="hid",
                         household_level=["hh_income"]))  # fmt: skip


# ------------------------------------------------------------------ seeds
def test_stratum_streams_depend_on_the_seed_and_the_stratum_only() -> None:
    a = _strata.stratum_seeds(7, 3)
    b = _strata.stratum_seeds(7, 10)
    for x, y in zip(a, b, strict=False):
        assert np.random.default_rng(x).random() == np.random.default_rng(y).random()
    assert len({np.random.default_rng(s).random() for s in b}) == 10
    other = _strata.stratum_seeds(7, 3, stream=1)
    assert np.random.default_rng(other[0]).random() != np.random.default_rng(a[0]).random()
    # a Generator gives a sequence drawn from it (its state advances, reproducibly)
    g1, g2 = np.random.default_rng(5), np.random.default_rng(5)
    assert _strata.base_sequence(g1).entropy == _strata.base_sequence(g2).entropy
    assert _strata.base_sequence(g1).entropy != _strata.base_sequence(g2.spawn(1)[0]).entropy


def test_a_stratum_gets_the_same_scale_without_the_other_strata(frame: pl.DataFrame) -> None:
    # the per-stratum parts (here the noise scale) depend on the stratum alone; the draws are
    # keyed by the seed and the record's row in the file (sdckit._keyed_random), so a record
    # keeps its noise wherever the file is cut, as long as it keeps its row
    md = _md(frame, numeric=["income", "expenses"])
    full = AddNoise(by_strata=True, seed=8, n_jobs=2).apply(md)
    first_two = frame.filter(pl.col("region") < 2)
    part = AddNoise(by_strata=True, seed=8).apply(_md(first_two, numeric=["income", "expenses"]))
    for v in ("income", "expenses"):
        assert full.details["noise_sd"][v][:2] == part.details["noise_sd"][v]
    rows = np.flatnonzero(frame.get_column("region").to_numpy() < 2)
    key = noise_key(_strata.base_sequence(8))
    x = frame.select("income", "expenses").to_numpy()[rows].astype(float)
    scale = np.array([full.details["noise_sd"][v] for v in ("income", "expenses")]).T
    region = frame.get_column("region").to_numpy()[rows]
    z = np.column_stack([normals(key, j, rows) for j in range(2)])
    got = full.microdata.frame.select("income", "expenses").to_numpy()[rows]
    np.testing.assert_array_equal(got, x + z * scale[region])


@pytest.mark.parametrize("seed", [3, None])
def test_seeds_do_not_depend_on_n_jobs(frame: pl.DataFrame, seed: int | None) -> None:
    md = _md(frame)
    if seed is None:  # a Generator: equal states give equal outputs
        a = Pram(variables=["edu"], seed=np.random.default_rng(1)).apply(md)
        b = Pram(variables=["edu"], seed=np.random.default_rng(1), n_jobs=-1).apply(md)
    else:
        a = Pram(variables=["edu"], seed=seed).apply(md)
        b = Pram(variables=["edu"], seed=seed, n_jobs=-1).apply(md)
    _same(a, b)


def test_without_strata_the_seed_is_used_as_before(frame: pl.DataFrame) -> None:
    # one stratum or none: the method's own Generator, as before the strata could run apart
    md = _md(frame, strata=None, numeric=["income", "expenses"])
    noise = AddNoise(seed=11).apply(md)
    # the normals are keyed by the first number of the seed's Generator and the row
    x = md.frame.select("income", "expenses").to_numpy()
    sd = x.std(axis=0, ddof=1)
    key = noise_key(np.random.default_rng(11))
    z = np.column_stack([normals(key, j, np.arange(len(x))) for j in range(2)])
    expected = x + z * 1.5 * sd
    np.testing.assert_allclose(
        noise.microdata.frame.select("income", "expenses").to_numpy(), expected, rtol=1e-12
    )
    assert noise.microdata.frame.equals(AddNoise(seed=11, n_jobs=2).apply(md).microdata.frame)
    # by_strata without a strata column is an error, not the whole file
    with pytest.raises(ColumnError, match="strata"):
        AddNoise(seed=11, by_strata=True).apply(md)
    with pytest.raises(ColumnError, match="strata"):
        LocalSuppression(by_strata=True).apply(_md(frame, strata=None))


# ------------------------------------------------------------------ progress, errors
def test_progress_over_strata(frame: pl.DataFrame) -> None:
    md = _md(frame)
    seen: list[tuple[int, int]] = []
    LocalSuppression(k=2, by_strata=True, n_jobs=2).apply(
        md, progress=lambda done, total: seen.append((done, total))
    )
    assert seen == [(i, N_STRATA) for i in range(1, N_STRATA + 1)]
    seen.clear()
    Pram(variables=["edu"], seed=1).apply(md, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(i, N_STRATA) for i in range(1, N_STRATA + 1)]
    seen.clear()
    AddNoise(seed=1).apply(md, progress=lambda d, t: seen.append((d, t)))  # no strata: none
    assert seen == []
    with pytest.raises(ParameterError, match="progress"):
        Pram(variables=["edu"], seed=1).apply(md, progress="not callable")


def test_small_strata_and_failures_in_workers(frame: pl.DataFrame) -> None:
    small = frame.with_columns(
        region=pl.when(pl.int_range(frame.height) < 2).then(99).otherwise(pl.col("region"))
    )
    with pytest.raises(InfeasibleError, match="fewer than k=3"):
        LocalSuppression(k=3, by_strata=True, n_jobs=2).apply(_md(small))
    # an error raised in a worker reaches the caller: the first stratum's, as in a serial run
    region, first_two = pl.col("region"), pl.int_range(pl.len()).over("region") < 2
    sparse = frame.with_columns(
        income=pl.when((region == 0) & ~first_two).then(None).otherwise(pl.col("income")),
        expenses=pl.when((region == 3) & ~first_two).then(None).otherwise(pl.col("expenses")),
    )
    counts = sparse.group_by("region").agg(pl.col("income", "expenses").count()).sort("region")
    assert counts["income"][0] == 2 and counts["expenses"][3] == 2
    for n_jobs in (1, 2):
        with pytest.raises(InfeasibleError, match="'income' has fewer than k=3 observed"):
            Microaggregation(k=3, method="univariate", n_jobs=n_jobs).apply(
                _md(sparse, numeric=["income", "expenses"])
            )
    missing = frame.with_columns(region=pl.when(pl.col("sex") == 1).then(None).otherwise(1))
    with pytest.raises(DataError, match="missing values"):
        LocalSuppression(by_strata=True).apply(_md(missing))


def test_n_jobs_values() -> None:
    assert _strata.n_workers(1) == 1
    assert _strata.n_workers(-1) >= 1
    assert _strata.n_workers(8, n_tasks=3) == 3
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ParameterError, match="n_jobs"):
            _strata.n_workers(bad)
    param = LocalSuppression.parameters["n_jobs"]
    assert param.accepts(-1) and param.accepts(4) and not param.accepts(0)
    assert "-1 (every core)" in param.describe()


def test_a_script_without_a_main_guard_can_use_workers(tmp_path: Path) -> None:
    # spawn/forkserver workers would run an unguarded script again; they must not
    script = tmp_path / "unguarded.py"
    script.write_text(
        textwrap.dedent(
            """
            import numpy as np
            import polars as pl
            from sdckit import Microdata
            from sdckit.masking._pram import Pram

            rng = np.random.default_rng(0)
            df = pl.DataFrame({"s": rng.integers(0, 3, 300), "v": rng.integers(0, 4, 300)})
            md = Microdata(df, keys=["v"], strata="s")
            a = Pram(variables=["v"], seed=1, n_jobs=2).apply(md).microdata.frame
            b = Pram(variables=["v"], seed=1).apply(md).microdata.frame
            print("same" if a.equals(b) else "differ")
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "same"

"""Local suppression over one's own key combinations, each with its own k (mu-ARGUS, sdcMicro
``combs``), given by hand or generated from identification levels."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdckit import Microdata
from sdckit.errors import ColumnError, InfeasibleError, ParameterError, VerificationError
from sdckit.masking.suppression import LocalSuppression
from sdckit.protection import Protected
from sdckit.risk import combination_risk, combinations_from_levels


def test_hand_computed_each_combination_its_own_k() -> None:
    df = pl.DataFrame({"a": [1, 1, 1, 2, 1], "b": [5, 5, 5, 5, 6]})
    # a needs 2 records per value: only a of record 4 can go; b needs 4: only b of record 5
    method = LocalSuppression(
        key_combinations=[{"keys": ["a"], "k": 2}, {"keys": ["b"], "k": 4}],
        block_inference=False,
    )
    md = Microdata(df, keys=["a", "b"])
    res = method.apply(md)
    assert res.data.rows() == [(1, 5), (1, 5), (1, 5), (None, 5), (1, None)]
    assert res.details["suppressions"] == 2
    assert res.details["key_combinations"] == [(["a"], 2), (["b"], 4)]
    method.verify(md, res)
    # the full key set is not asked to be 2-anonymous: (1, None) matches (1, 5), fine anyway
    plain = LocalSuppression(k=2, block_inference=False).apply(md)
    assert plain.details["suppressions"] == 2


@pytest.mark.parametrize("missing", ["wildcard", "category"])
def test_a_combination_of_all_keys_is_plain_local_suppression(missing: str) -> None:
    rng = np.random.default_rng(3)
    df = pl.DataFrame({c: rng.integers(0, 4, 200) for c in ("a", "b", "c", "d")})
    # some values already missing: treated as the plain method treats them
    df = df.with_columns(
        pl.when(pl.Series(rng.random(200) < 0.05)).then(None).otherwise(pl.col("b")).alias("b")
    )
    md = Microdata(df, keys=["a", "b", "c", "d"])
    own = LocalSuppression(key_combinations=[["a", "b", "c", "d"]], k=3, missing=missing)
    plain = LocalSuppression(k=3, missing=missing)
    assert own.apply(md).data.equals(plain.apply(md).data)
    # and every pair with one k is sdcMicro's combs = 2
    pairs = [list(p) for p in combinations(["a", "b", "c", "d"], 2)]
    own2 = LocalSuppression(key_combinations=pairs, k=3, missing=missing).apply(md)
    plain2 = LocalSuppression(k=3, combinations=2, missing=missing).apply(md)
    assert own2.data.equals(plain2.data)


def test_identification_levels_generate_the_combinations() -> None:
    rng = np.random.default_rng(5)
    df = pl.DataFrame({c: rng.integers(0, 5, 150) for c in ("sex", "age", "region", "job")})
    levels = {"sex": 1, "age": 2, "region": 2, "job": 3}
    md = Microdata(df, keys=list(levels))
    res = LocalSuppression(identification_levels=levels, k=3).apply(md)
    combos = combinations_from_levels(levels, 3)
    assert res.details["key_combinations"] == [(list(c.keys), 3) for c in combos]
    assert combination_risk(res.microdata, combos).is_safe
    # the full key set is not protected by these combinations alone
    assert not combination_risk(res.microdata, [(list(levels), 3)]).is_safe


def test_with_a_fixed_key_each_combination_is_met_within_its_groups() -> None:
    rng = np.random.default_rng(9)
    df = pl.DataFrame(
        {
            "hh_size": rng.integers(1, 3, 120),
            "a": rng.integers(0, 4, 120),
            "b": rng.integers(0, 6, 120),
        }
    )
    md = Microdata(df, keys=["hh_size", "a", "b"])
    method = LocalSuppression(
        fixed=["hh_size"], key_combinations=[(["a"], 3), (["a", "b"], 2), (["hh_size"], 2)]
    )
    res = method.apply(md)
    method.verify(md, res)
    assert res.data["hh_size"].equals(df["hh_size"])
    assert combination_risk(res.microdata, [["hh_size", "a"], ["hh_size", "a", "b"]]).is_safe


def test_verify_recounts_every_combination() -> None:
    df = pl.DataFrame({"a": [1, 1, 1, 2, 1], "b": [5, 5, 5, 5, 6]})
    md = Microdata(df, keys=["a", "b"])
    method = LocalSuppression(key_combinations=[(["a"], 2), (["b"], 4)])
    good = method.apply(md)
    only_a = df.with_columns(pl.Series("a", [1, 1, 1, None, 1]))
    tampered = Protected.from_frames(md, only_a, method, details=good.details)
    with pytest.raises(VerificationError, match="'b'"):
        method.verify(md, tampered)


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"combinations": 2, "key_combinations": [["a"]]}, ParameterError, "at most one"),
        (
            {"identification_levels": {"a": 1}, "key_combinations": [["a"]]},
            ParameterError,
            "at most one",
        ),
        ({"key_combinations": [["a", "zz"]]}, ColumnError, "'zz'"),
        ({"key_combinations": [(["a"], 99)]}, InfeasibleError, "k=99"),
        ({"key_combinations": [{"keys": ["a"], "k": 0}]}, ParameterError, "k"),
    ],
)
def test_bad_combinations(params: dict, error: type[Exception], match: str) -> None:
    md = Microdata(pl.DataFrame({"a": [1, 1, 2, 2], "b": [1, 2, 1, 2]}), keys=["a", "b"])
    with pytest.raises(error, match=match):
        LocalSuppression(**params).apply(md)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    n=st.integers(8, 60),
    m=st.integers(2, 4),
    missing=st.sampled_from(["wildcard", "category"]),
)
def test_after_suppression_every_combination_meets_its_k(
    data: st.DataObject, n: int, m: int, missing: str
) -> None:
    keys = [f"k{j}" for j in range(m)]
    columns = {
        name: data.draw(
            st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=n, max_size=n), label=name
        )
        for name in keys
    }
    for values in columns.values():  # a key missing everywhere is refused by Microdata
        values[0] = 0 if values[0] is None else values[0]
    df = pl.DataFrame(columns, schema=dict.fromkeys(keys, pl.Int64))
    subsets = data.draw(
        st.lists(
            st.tuples(
                st.lists(st.sampled_from(keys), min_size=1, max_size=m, unique=True),
                st.integers(1, 4),
            ),
            min_size=1,
            max_size=4,
        ),
        label="combinations",
    )
    combos = [{"keys": ks, "k": k} for ks, k in subsets]
    md = Microdata(df, keys=keys)
    method = LocalSuppression(key_combinations=combos, missing=missing)
    res = method.apply(md)
    method.verify(md, res)  # recounts every combination itself
    # an independent recount, with the missing values as the method treats them
    assert combination_risk(res.microdata, combos, missing=missing).is_safe
    # only key values set to missing; values already missing stay missing
    for name in keys:
        before, after = df[name], res.data[name]
        kept = after.is_not_null()
        assert (before.filter(kept) == after.filter(kept)).all()
        assert after.null_count() >= before.null_count()


def test_job_file_with_own_combinations(tmp_path: Path) -> None:
    from sdckit.jobs import load_job, run_job

    rng = np.random.default_rng(1)
    pl.DataFrame(
        {c: rng.integers(0, 4, 80) for c in ("sex", "age", "region")}
        | {"income": rng.normal(size=80)}
    ).write_csv(tmp_path / "d.csv")
    job = tmp_path / "job.toml"
    text = """
[input]
file = "d.csv"

[roles]
keys = ["sex", "age", "region"]
numeric = ["income"]

[[steps]]
method = "local_suppression"
k = 2
key_combinations = [{ keys = ["sex", "age"], k = 4 }, { keys = ["REGION_KEY"] }]

[output]
data = "out.parquet"
"""
    job.write_text(text.replace("REGION_KEY", "region"), encoding="utf-8")
    result = run_job(load_job(job), write=False)
    out = result.session.current
    assert combination_risk(out, [(["sex", "age"], 4), (["region"], 2)]).is_safe
    job.write_text(text.replace("REGION_KEY", "nope"), encoding="utf-8")
    with pytest.raises(ColumnError, match=r"step 1 \(local_suppression\).*'nope'"):
        load_job(job)


def test_groups_in_worker_processes_give_the_same_output() -> None:
    rng = np.random.default_rng(2)
    df = pl.DataFrame({c: rng.integers(0, 4, 300) for c in ("g", "a", "b", "c")})
    md = Microdata(df, keys=["g", "a", "b", "c"])
    combos = [(["a", "b"], 3), (["b", "c"], 2), (["a"], 5)]
    one = LocalSuppression(fixed=["g"], key_combinations=combos, n_jobs=1).apply(md)
    two = LocalSuppression(fixed=["g"], key_combinations=combos, n_jobs=2).apply(md)
    assert one.data.equals(two.data)
    assert combination_risk(one.microdata, [(["g", *ks], k) for ks, k in combos]).is_safe


def test_engine_step_equals_the_in_memory_suppression() -> None:
    from sdckit.engines._rows import read_with_row
    from sdckit.engines._steps import suppress_on_engine

    rng = np.random.default_rng(4)
    df = pl.DataFrame({c: rng.integers(0, 5, 200) for c in ("a", "b", "c")})
    method = LocalSuppression(key_combinations=[(["a", "b"], 3), (["c"], 50)])
    want = method.apply(Microdata(df, keys=["a", "b", "c"])).data
    lf = read_with_row(df.lazy(), "streaming")
    got = suppress_on_engine(lf, "streaming", method, seed=None, roles={"keys": ["a", "b", "c"]})
    out = got.collect().sort("__sdckit_row").select(["a", "b", "c"])
    assert out.equals(want)
    assert out["a"].null_count() + out["b"].null_count() + out["c"].null_count() > 0


def test_a_combination_of_fixed_keys_only_has_its_own_k_checked() -> None:
    """The fixed keys cannot be suppressed: a combination of them alone whose groups are below
    its k is infeasible, not silently released."""
    df = pl.DataFrame({"a": ["x"] * 3 + ["y"] * 6, "b": list("ababababa")})
    md = Microdata(df, keys=["a", "b"])
    method = LocalSuppression(
        fixed=["a"], key_combinations=[{"keys": ["a"], "k": 5}, {"keys": ["b"], "k": 2}]
    )
    with pytest.raises(InfeasibleError, match="k=5"):
        method.apply(md)
    ok = LocalSuppression(
        fixed=["a"], key_combinations=[{"keys": ["a"], "k": 3}, {"keys": ["b"], "k": 2}]
    ).apply(md)
    assert combination_risk(ok.microdata, [(["a"], 3), (["a", "b"], 2)]).is_safe

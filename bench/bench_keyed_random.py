"""The cost of the keyed generator against numpy's stream, on 10,000,000 records (issue 30).

PRAM and additive noise draw keyed by the seed and each record's row (``sdckit._keyed_random``)
so that any slice of the file draws what the whole file draws.  This measures, best of R runs:

* uniforms and normals: the keyed kernels against ``Generator.random`` / ``standard_normal``;
* PRAM's draws of one variable with 8 levels: the keyed kernel (``draw_codes``) against the
  old per-level ``Generator.choice``;
* the noise scale: the exact standard deviation (``sdckit._exact_sums``) against polars' ``std``;
* the whole methods: ``Pram`` (one variable, 8 levels, 20 strata) and ``AddNoise`` (2 variables)
  on the in-memory path.

Run: ``.venv/bin/python bench/bench_keyed_random.py [--records N] [--repeat R]``; prints a
markdown table (wall-clock seconds).  ``method_times`` imports only public names, so the
same whole-method timings can be taken on an older checkout:
``PYTHONPATH=OLD/src:bench python -c "import bench_keyed_random as b; b.method_times(10**7, 3)"``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import polars as pl

from sdckit import Microdata
from sdckit.masking import AddNoise, Pram


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def old_pram_draw(codes: np.ndarray, matrix: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The draws before the keyed generator: one vectorised ``choice`` per level."""
    out = codes.copy()
    for level in range(matrix.shape[0]):
        sel = np.flatnonzero(codes == level)
        if len(sel):
            out[sel] = rng.choice(matrix.shape[0], size=len(sel), p=matrix[level])
    return out


def make_frame(n: int) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    x = rng.lognormal(10, 1, size=(n, 2))
    return pl.DataFrame(
        {
            "v": rng.integers(0, 8, n).astype(np.int32),
            "s": rng.integers(0, 20, n),
            "x": x[:, 0],
            "y": x[:, 1],
        }
    )


def method_times(n: int, r: int) -> tuple[float, float]:
    """Best times of ``Pram`` (one variable of 8 levels, 20 strata) and ``AddNoise``
    (additive, 2 variables) in memory."""
    md = Microdata(make_frame(n), keys=["v"], numeric=["x", "y"], strata="s")
    pram = best(lambda: Pram(variables=["v"], seed=1).apply(md), r)
    noise = best(lambda: AddNoise(seed=1).apply(md), r)
    print(f"Pram (1 variable, 20 strata), in memory: {pram:.2f} s")
    print(f"AddNoise (additive, 2 variables), in memory: {noise:.2f} s")
    return pram, noise


def main() -> None:
    from sdckit._exact_sums import partial_moments
    from sdckit._keyed_random import normals, uniforms
    from sdckit.masking._keyed_draws import draw_codes

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n, r = args.records, args.repeat
    rows = np.arange(n, dtype=np.int64)
    frame = make_frame(n)
    codes = frame.get_column("v").to_numpy()
    x = frame.select("x", "y").to_numpy()
    matrix = np.full((8, 8), 0.1 / 7) + np.eye(8) * (0.9 - 0.1 / 7)
    uniforms(1, 0, rows[:10])  # (compile / load the kernels first)
    normals(1, 0, rows[:10])
    draw_codes(codes[:10], np.zeros(10, np.int64), [matrix], 1, 0, rows[:10])
    partial_moments(x[:10])
    cases = [
        ("uniforms", lambda: np.random.default_rng(1).random(n), lambda: uniforms(1, 0, rows)),
        (
            "normals",
            lambda: np.random.default_rng(1).standard_normal(n),
            lambda: normals(1, 0, rows),
        ),
        (
            "PRAM draws (8 levels)",
            lambda: old_pram_draw(codes, matrix, np.random.default_rng(1)),
            lambda: draw_codes(codes, np.zeros(n, np.int64), [matrix], 1, 0, rows),
        ),
        (
            "noise scale: sd of 2 variables",
            lambda: frame.select(pl.col("x").std(), pl.col("y").std()),
            lambda: partial_moments(x).sd(),
        ),
    ]
    print(f"{n:,} records, best of {r} (seconds)\n")
    print("| step | numpy / polars (old) | keyed / exact (new) | ratio |")
    print("|---|---:|---:|---:|")
    for name, old, new in cases:
        a, b = best(old, r), best(new, r)
        print(f"| {name} | {a:.2f} | {b:.2f} | {b / a:.2f} |")
    print()
    method_times(n, r)


if __name__ == "__main__":
    main()

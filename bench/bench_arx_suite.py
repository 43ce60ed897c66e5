"""ARX's own test suite on adult.csv, searched in full: every case of
``tests/lattice/test_arx_suite.py`` (ARX's TestAnonymization*.java cases) run by
``search_lattice`` (Flash by default), with its time, nodes evaluated, whether the optimum is
proven, and whether node and loss are ARX's.

Usage: ``python bench/bench_arx_suite.py [--algorithm flash|exhaustive] [--only k-0,tc-10]``
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import time
from pathlib import Path

from sdckit.lattice import search_lattice

SUITE = Path(__file__).resolve().parents[1] / "tests" / "lattice" / "test_arx_suite.py"


def _suite():  # the cases and the data loading live with the test that asserts them
    spec = importlib.util.spec_from_file_location("arx_suite", SUITE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--algorithm", default="flash")
    parser.add_argument("--only", default="", help="comma-separated case names")
    args = parser.parse_args()
    suite = _suite()
    only = {n for n in args.only.split(",") if n}
    print("| case | seconds | nodes evaluated | proven | ARX's node | ARX's loss |")
    print("|---|---:|---:|---|---|---|")
    total = 0.0
    for case in suite.CASES:
        name, limit, _, _, _, expected, node = case
        if only and name not in only:
            continue
        data, models, measure = suite._prepared(case)
        start = time.perf_counter()
        result = search_lattice(
            data, models, measure, suppression_limit=limit, algorithm=args.algorithm
        )
        seconds = time.perf_counter() - start
        total += seconds
        if node is None:
            same_node = same_loss = result.optimum is None
        else:
            same_node = result.optimum == tuple(node)
            same_loss = result.optimum is not None and math.isclose(
                result.loss, float(expected), rel_tol=1e-9
            )
        print(
            f"| {name} | {seconds:.2f} | {result.n_evaluated} of {data.n_nodes} | "
            f"{result.proven_optimal} | {'yes' if same_node else result.optimum} | "
            f"{'yes' if same_loss else f'{result.loss:.10g}'} |",
            flush=True,
        )
    print(f"\ntotal {total:.1f} s")


if __name__ == "__main__":
    main()

"""Run every benchmark script in turn and write its markdown output to bench/results/.

Run: ``make bench`` (or ``.venv/bin/python bench/run_all.py [name ...]``).  The figures go into
docs/benchmarks.md by hand, with the date and the command.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNS = {
    "risk": ["bench_risk.py", "3"],
    "suda2": ["bench_suda2.py", "2"],
    "microaggregation": ["bench_microaggregation.py"],
    "suppression": ["bench_suppression.py"],
    "noise": ["bench_noise.py", "--repeat", "2"],
    "keyed_random": ["bench_keyed_random.py", "--repeat", "3"],
    "random_steps_stream": ["bench_random_steps_stream.py", "2e7"],
    "linkage": ["bench_linkage.py", "2"],
    "microdata_ii": ["bench_microdata_ii.py"],
    "uniqueness": ["bench_uniqueness.py"],
    "tables": ["bench_tables.py", "--audit-big"],
    "cli": ["bench_cli.py", "--repeat", "5"],
}


def main() -> None:
    names = sys.argv[1:] or list(RUNS)
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    for name in names:
        script, *args = RUNS[name]
        start = time.perf_counter()
        result = subprocess.run(
            [sys.executable, str(HERE / script), *args], capture_output=True, text=True
        )
        (out_dir / f"{name}.md").write_text(result.stdout + result.stderr[-2000:])
        print(f"{name}: exit {result.returncode} in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()

"""Time and memory of each stage of an engine job, in one process.

    PYTHONPATH=src python bench/profile_engine_job.py JOB.toml [--engine streaming]

Runs ``plan_engine_job`` and ``run_engine_job`` on the job file and prints, at every progress
report, the seconds since the start, the resident memory and the peak so far (``resource``),
then the whole run's peak: which stage holds the memory.  Run it in the job's folder (relative
paths of the job are read from there).
"""

from __future__ import annotations

import argparse
import resource
import time


def _resident_gb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1e6
    return float("nan")


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def main() -> None:
    from sdckit.jobs.engine_job import plan_engine_job, run_engine_job

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("job")
    parser.add_argument("--engine", default=None, help="default: the job's choice")
    args = parser.parse_args()
    start = time.perf_counter()
    last: list[tuple[str, int]] = []

    def report(stage: str, done: int, total: int) -> None:
        if last and last[-1] == (stage, done):
            return
        last.append((stage, done))
        print(
            f"{time.perf_counter() - start:7.1f} s  resident {_resident_gb():5.2f} GB  "
            f"peak {_peak_gb():5.2f} GB  {stage} {done}/{total}",
            flush=True,
        )

    chosen, _reason, job = plan_engine_job(args.job)
    engine = args.engine or chosen
    res = run_engine_job(job, engine, progress=report)
    print(
        f"engine {engine}: {time.perf_counter() - start:.1f} s, peak {_peak_gb():.2f} GB; "
        f"records below k: {res.k_violations}; release check passed: {res.check.ok}"
    )


if __name__ == "__main__":
    main()

"""The red-team suite on a larger survey: every weak release, its attacker, the check's verdict.

Run: ``.venv/bin/python bench/bench_redteam.py [--households H] [--seed S] [--all]``.  Builds each
release of ``tests/release/redteam/test_redteam.py`` on a survey of H households (default
5,000, about 12,000 persons), runs the attacker meant for it (``--all``: every attacker) on the
file as written, scores it with the original (``tests/release/redteam/harness.py``) and prints
a markdown table: attack, target, protected values, values got back, the chance count, the
margin above chance, and ``out.check.ok`` (False: the release check refuses the file), then the
same for the control (the release with its weakness removed).  A verdict LEAK marks a file the
check lets through although the attacker gets back more than chance plus the margin.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the red-team helpers live in tests/release/redteam

from tests.release.redteam.attackers import ATTACKS  # noqa: E402
from tests.release.redteam.harness import Score, score  # noqa: E402
from tests.release.redteam.test_redteam import SCENARIOS  # noqa: E402


def verdict(check_ok: bool, result: Score) -> str:
    """refused (the check stops the file), LEAK (passed, attack beyond chance) or ok."""
    if not check_ok:
        return "refused"
    return "LEAK" if result.beyond_chance else "ok"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--households", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--all", action="store_true", help="run every attacker on every release")
    args = parser.parse_args()

    print(f"Red team on {args.households:,} households (seed {args.seed})\n")
    columns = [
        "scenario", "attack", "target", "protected", "got back", "chance", "margin",
        "check ok", "verdict", "control: got back / protected (chance)", "control check ok",
        "control verdict", "seconds",
    ]  # fmt: skip
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    start = time.perf_counter()
    for scenario in SCENARIOS:
        t0 = time.perf_counter()
        weak, original = scenario.build(args.households, args.seed, True)
        fixed, _ = scenario.build(args.households, args.seed, False)
        for attack in list(ATTACKS) if args.all else [scenario.attack]:
            result = score(
                weak, original, scenario.target, ATTACKS[attack](weak.output, scenario.target)
            )
            control = score(
                fixed, original, scenario.target, ATTACKS[attack](fixed.output, scenario.target)
            )
            target = scenario.target
            if result.continuous:
                target += f" (median abs. error {result.attacker_mae} vs {result.release_mae})"
            cells = [
                scenario.name, attack, target, result.protected, result.got_back,
                f"{result.chance:.0f}", f"{result.margin:.0f}", weak.check.ok,
                verdict(weak.check.ok, result),
                f"{control.got_back} / {control.protected} ({control.chance:.0f})",
                fixed.check.ok, verdict(fixed.check.ok, control),
                f"{time.perf_counter() - t0:.1f}",
            ]  # fmt: skip
            print("| " + " | ".join(str(c) for c in cells) + " |")
    print(f"\ntotal {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()

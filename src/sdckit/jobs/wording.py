"""The release check's findings worded for the command line: fixes in job-file syntax.

The release layer (:mod:`sdckit.release`) says *what* fixes a finding as structured
:class:`~sdckit.release.Remedy` objects (an action, a column, the protected variable) and words
them for a person; each face words them in its own terms.  ``sdckit protect`` and ``sdckit
check`` speak of the job file, so their fixes are the job-file lines to change
(docs/job-files.md); the browser interface names its own controls.

Examples
--------
>>> from sdckit.release import Remedy
>>> remedy_line(Remedy("drop", "remark"))
'[output] drop = ["remark"]'
>>> remedy_line(Remedy("link", "age_band", "age"))
'[roles] linked = { age_band = "age" }'
"""

from __future__ import annotations

from typing import Any

from sdckit.jobs.toml_writer import key, value
from sdckit.release import Release, ReleaseFinding, Remedy

__all__ = ["finding_line", "refusal_line", "remedy_line"]


def remedy_line(remedy: Remedy) -> str:
    """One remedy as the job-file change that makes it."""
    column, target = remedy.column or "", remedy.target or ""
    c, t, k = value(column), value(target), key(column)
    lines: dict[str, str] = {
        "drop": f"[output] drop = [{c}]",
        "link": f"[roles] linked = {{ {k} = {t} }}",
        "household_level": f"[roles] household_level = [..., {t}]",
        "calibrate_weights": '[[steps]] method = "weight_calibration" (after the other steps)',
        "shuffle": '[output] order = "shuffled"',
        "derive_household_size": f"[output] household_size = {t}",
        "drop_household_id": '[output] household_id = "drop"',
        "recode": f'[[steps]] method = "global_recoding" of {c}',
        "suppress": (
            f'[[steps]] method = "local_suppression" with a more important rank for {t} '
            "in importance"
        ),
        "identifier": f"[roles] identifiers = [..., {c}]",
        "protect_keys": (
            '[[steps]] method = "global_recoding" of a key, or method = "local_suppression" '
            "with the target's k"
        ),
    }
    return lines.get(remedy.action) or remedy.words()


def finding_line(finding: ReleaseFinding) -> str:
    """A finding and its fixes (job-file syntax) in one line."""
    if not finding.remedies:
        return finding.how
    return f"{finding.how} Fix: {' or '.join(remedy_line(r) for r in finding.remedies)}."


def refusal_line(release: Release | Any) -> str | None:
    """Why a released file must not be written, with the fix in job-file syntax (None when it
    may be written)."""
    check = release.check
    if check.ok:
        return None
    return finding_line(check.findings[0]) if check.findings else check.first_problem()

"""The information-loss figures shown after each protection step.

:func:`assess_utility` compares a protected file with the original (when their records are
aligned) and keeps the few figures the session history, the reports and the command line show:
SSE/SST and IL1s of the numeric variables, the share of key values changed and the number of
key values suppressed.  The full measures are :func:`~sdckit.utility.continuous_loss` and
:func:`~sdckit.utility.categorical_loss`, which it calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sdckit._results import Summary
from sdckit.microdata import Microdata

__all__ = ["UtilityAssessment", "assess_utility", "compared_variables"]


@dataclass(frozen=True)
class UtilityAssessment:
    """Information loss of a protected file against the original.

    Attributes
    ----------
    aligned : bool
        Whether the files have the same records (otherwise no figure is computed).
    sse_sst_pct : float or None
        SSE/SST of the numeric variables, in percent.
    il1s : float or None
        The size-corrected IL1s of the numeric variables (sdcMicro's sum).
    share_keys_changed : float or None
        Share of key values changed or suppressed (a fraction in [0, 1]).
    key_values_suppressed : int or None
        Key values set to missing.
    """

    aligned: bool
    sse_sst_pct: float | None = None
    il1s: float | None = None
    share_keys_changed: float | None = None
    key_values_suppressed: int | None = None

    def figures(self) -> dict[str, float | int]:
        """The figures that are defined, by name."""
        names = ("sse_sst_pct", "il1s", "share_keys_changed", "key_values_suppressed")
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}

    def summary(self) -> Summary:
        """The figures as a printable summary."""
        labels = {
            "sse_sst_pct": "SSE/SST of numeric variables (%)",
            "il1s": "IL1s of numeric variables",
            "share_keys_changed": "share of key values changed (%)",
            "key_values_suppressed": "key values suppressed",
        }
        shown = {  # shares in percent, as everywhere else
            k: 100.0 * v if k == "share_keys_changed" else v for k, v in self.figures().items()
        }
        rows: list[tuple[str, Any]] = [(labels[k], v) for k, v in shown.items()]
        notes = [] if self.aligned else ["the files have different records: no comparison"]
        return Summary("Information loss", rows, notes)


def compared_variables(original: Microdata, current: Microdata) -> tuple[list[str], list[str]]:
    """The numeric variables and the keys of ``current`` compared with ``original``.

    A numeric variable cut into intervals has become a key (its values are categories): it is
    compared as a key, not as a number.
    """
    numeric = [c for c in current.numeric if c in original.numeric]
    keys = [c for c in current.keys if c in original.frame.columns]
    return numeric, keys


def assess_utility(original: Microdata, current: Microdata) -> UtilityAssessment:
    """The information-loss figures of ``current`` against ``original``.

    Parameters
    ----------
    original, current : Microdata
        The original and the protected file (same roles).

    Returns
    -------
    UtilityAssessment

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit import Microdata
    >>> a = Microdata(pl.DataFrame({"k": [1, 1, 2, 2], "x": [1.0, 2, 3, 4]}), keys="k", numeric="x")
    >>> b = a.with_frame(pl.DataFrame({"k": [1, None, 2, 2], "x": [1.0, 2, 3, 4]}))
    >>> u = assess_utility(a, b)
    >>> u.share_keys_changed, u.key_values_suppressed, u.sse_sst_pct
    (0.25, 1, 0.0)
    """
    from sdckit.utility.categorical import categorical_loss
    from sdckit.utility.continuous import continuous_loss

    if current.n_records != original.n_records:
        return UtilityAssessment(aligned=False)
    values: dict[str, Any] = {}
    numeric, keys = compared_variables(original, current)
    if numeric:
        cont = continuous_loss(original, current, numeric=numeric)
        values["sse_sst_pct"] = cont.sse_sst
        values["il1s"] = cont.il1s
    if keys:
        cat = categorical_loss(original, current, variables=keys)
        values["share_keys_changed"] = cat.share_changed
        values["key_values_suppressed"] = int(cat.per_variable["suppressed"].sum())
    return UtilityAssessment(aligned=True, **values)

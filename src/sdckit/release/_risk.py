"""The risk panel of the released file, under a stated intruder model.

The intruder knows the values of the released key variables (and of linked variables finer
than their key) for a person of the population, and looks for that person in the file.  The
population frequency of each key combination is estimated from the survey weights: the
weights the file carries, or, when the release leaves them out, the weights of the original
(the agency's best estimate of the population, whether or not it publishes them); without
weights the file is a census.  A missing value matches any value (as sdcMicro counts).  The
households count only when the released file links their members (a household id, or
households the attacks rebuilt from other columns); otherwise every person is on their own.

Computed here with polars and numpy (not by :mod:`sdckit.risk`), so an error there is not
repeated by the check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from sdckit.release._encode import CodedFrame

__all__ = ["BOUNDED", "ReleaseRisk", "released_risk"]

#: The measures a release target bounds: the bound's name -> (the attribute of
#: :class:`ReleaseRisk`, its label).
BOUNDED: dict[str, tuple[str, str]] = {
    "max_global_risk_pct": ("global_risk_pct", "global risk (%)"),
    "max_expected_reidentifications": (
        "expected_reidentifications", "expected re-identifications"),
    "max_individual_risk": ("highest_risk", "highest individual risk"),
    "max_household_risk_pct": ("household_risk_pct", "household risk (%)"),
    "max_household_expected_reidentifications": (
        "household_expected_reidentifications",
        "expected re-identifications through households"),
}  # fmt: skip


@dataclass(frozen=True)
class ReleaseRisk:
    """Re-identification risk of the released file.

    Attributes
    ----------
    keys : tuple of str
        The released key variables and the linked variables finer than their key.
    intruder : str
        The intruder model, in words.
    weights : str
        Where the population frequencies come from: ``"released weight"``, ``"original
        weights (not released)"`` or ``"none (census)"``.
    households : str or None
        How the released file links household members (None: it does not).
    fk : numpy.ndarray
        Sample frequency of each released record's key combination.
    smallest_class : int or None
    expected_reidentifications, global_risk_pct, highest_risk : float or None
        Benedetti-Franconi individual risk summed, in percent of the records, and its maximum.
    household_expected_reidentifications, household_risk_pct : float or None
        Household risk (None when households are not linked).
    """

    keys: tuple[str, ...]
    intruder: str
    weights: str
    households: str | None
    fk: np.ndarray
    smallest_class: int | None
    expected_reidentifications: float | None
    global_risk_pct: float | None
    highest_risk: float | None
    household_expected_reidentifications: float | None
    household_risk_pct: float | None

    def measures(self) -> dict[str, tuple[float | None, str]]:
        """The value and the label of every measure a target bounds, by the bound's name."""
        return {
            name: (getattr(self, attribute), label) for name, (attribute, label) in BOUNDED.items()
        }

    def k_violations(self, k: int) -> int:
        """Records whose key combination is shared by fewer than ``k`` records."""
        return int(np.count_nonzero(self.fk < k)) if self.keys else 0


def _codes_of(coded: CodedFrame, columns: Sequence[str]) -> np.ndarray:
    out = np.empty((coded.frame.height, len(columns)), dtype=np.int64)
    for j, col in enumerate(columns):
        out[:, j] = coded(col)[0]
    return out


def _dense_rows(values: np.ndarray) -> np.ndarray:
    """Dense ids of the rows of a non-negative integer matrix (equal rows, equal ids)."""
    key = np.zeros(len(values), dtype=np.int64)
    for j in range(values.shape[1]):
        col = values[:, j]
        card = int(col.max()) + 1 if len(col) else 1
        if len(key) and int(key.max()) >= (2**62) // max(card, 1):
            key = np.unique(key, return_inverse=True)[1].astype(np.int64)
        key = key * card + col
    return np.unique(key, return_inverse=True)[1].reshape(-1).astype(np.int64)


def wildcard_counts(codes: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """fk and Fk with missing values (code -1) matching any value.

    The records are reduced to their distinct key combinations; two combinations match when
    they agree on the keys both show.  For each pattern of missing keys, the combinations of
    the patterns with the same union of missing keys are counted together on the keys outside
    that union (one grouping for all of them).
    """
    n, m = codes.shape
    if m == 0:
        return np.full(n, float(n)), np.full(n, float(weights.sum()))
    gid = _dense_rows(codes + 1)
    n_groups = int(gid.max()) + 1
    first = np.zeros(n_groups, dtype=np.int64)
    first[gid[::-1]] = np.arange(n)[::-1]
    rep = codes[first]
    g_count = np.bincount(gid, minlength=n_groups).astype(np.float64)
    g_weight = np.bincount(gid, weights=weights, minlength=n_groups)
    bits = ((rep < 0) * (1 << np.arange(m, dtype=np.int64))).sum(axis=1)
    patterns = [int(p) for p in np.unique(bits)]
    members = {p: np.flatnonzero(bits == p) for p in patterns}
    fk, fw = g_count.copy(), g_weight.copy()
    for p in patterns:
        left = members[p]
        unions: dict[int, list[np.ndarray]] = {}
        for q in patterns:
            if q != p:
                unions.setdefault(p | q, []).append(members[q])
        for union, parts in unions.items():
            right = np.concatenate(parts)
            on = [j for j in range(m) if not (union >> j) & 1]
            if not on:
                fk[left] += g_count[right].sum()
                fw[left] += g_weight[right].sum()
                continue
            ids = _dense_rows(rep[np.concatenate([left, right])][:, on])
            lid, rid = ids[: len(left)], ids[len(left) :]
            size = int(ids.max()) + 1
            fk[left] += np.bincount(rid, weights=g_count[right], minlength=size)[lid]
            fw[left] += np.bincount(rid, weights=g_weight[right], minlength=size)[lid]
    return fk[gid], fw[gid]


def bf_risk(fk: np.ndarray, Fk: np.ndarray) -> np.ndarray:
    """Benedetti-Franconi risk, the approximation sdcMicro prints (closed forms for f <= 2)."""
    f = fk.astype(np.float64)
    p = np.minimum(f / np.maximum(Fk, 1e-300), 1.0)
    q = 1.0 - p
    out = 1.0 / f
    ok = q > 1e-12
    with np.errstate(divide="ignore", invalid="ignore"):
        r1 = p * -np.log(p) / q
        r2 = p / q**2 * (p * np.log(p) + q)
        rn = p / (f - q)
    out = np.where(ok & (f == 1), r1, out)
    out = np.where(ok & (f == 2), r2, out)
    out = np.where(ok & (f > 2), rn, out)
    return out


def released_risk(
    released: CodedFrame,
    keys: Sequence[str],
    weights: np.ndarray | None,
    weight_source: str,
    households: np.ndarray | None,
    household_link: str | None,
) -> ReleaseRisk:
    """The risk panel of ``released`` (see the module docstring).

    Parameters
    ----------
    released : CodedFrame
        The released file (any record order), with the codes of its columns.
    keys : sequence of str
        The key variables the intruder knows (present in ``released``).
    weights : numpy.ndarray or None
        Sampling weights aligned with ``released`` (None: a census).
    weight_source : str
        Where the weights come from, in words.
    households : numpy.ndarray or None
        True household of each released record, when the file links households.
    household_link : str or None
        How the file links them, in words.
    """
    n = released.frame.height
    w = np.ones(n) if weights is None else weights
    intruder = (
        "the intruder knows the released key variables of a person"
        + (" and finds the other members of the household in the file" if household_link else "")
        + "; population frequencies from "
        + weight_source
    )
    if not keys:
        return ReleaseRisk(
            keys=(), intruder=intruder, weights=weight_source, households=household_link,
            fk=np.full(n, float(n)), smallest_class=None, expected_reidentifications=None,
            global_risk_pct=None, highest_risk=None, household_expected_reidentifications=None,
            household_risk_pct=None,
        )  # fmt: skip
    fk, Fk = wildcard_counts(_codes_of(released, keys), w)
    risk = bf_risk(fk, Fk)
    er = float(risk.sum())
    hh_er = hh_pct = None
    if households is not None and household_link is not None:
        with np.errstate(divide="ignore"):  # a risk of 1 makes its household's 1 (log 0)
            per = pl.DataFrame({"h": households, "l": np.log1p(-np.minimum(risk, 1.0))})
        hh = -np.expm1(per.select(pl.col("l").sum().over("h")).to_series().to_numpy())
        hh_er = float(hh.sum())
        hh_pct = 100.0 * hh_er / n
    return ReleaseRisk(
        keys=tuple(keys),
        intruder=intruder,
        weights=weight_source,
        households=household_link,
        fk=fk,
        smallest_class=int(np.floor(fk.min())),
        expected_reidentifications=er,
        global_risk_pct=100.0 * er / n,
        highest_risk=float(risk.max()),
        household_expected_reidentifications=hh_er,
        household_risk_pct=hh_pct,
    )

"""The disclosure measures of one target and one synthetic copy (synthpop 1.9's ``disclosure()``).

The two tables of synthpop, target level ``t`` by key combination ``q`` for the original
(``d_tq``) and the synthetic file (``s_tq``), are held sparsely: one entry per cell that is
non-empty in either file.  The tables of the attribute measures are derived from them *before*
the exclusions (as synthpop does), then every table goes through the same exclusions; the
identity measures and the CAP measures use the tables after the exclusions.  All percentages
have the number of records of the whole file as denominator (``N_d`` or ``N_s``), as in
synthpop, whatever was excluded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["EXCLUSION_REASONS", "MEASURES", "TABLES", "Options", "measure_copy"]

#: The measures of one target and one copy, in synthpop's order (ident, attrib, allCAPs).
MEASURES = (
    "UiO", "UiS", "UiOiS", "repU",
    "Dorig", "Dsyn", "iS", "DiS", "DiSCO", "DiSDiO", "max_denom", "mean_denom",
    "baseCAPd", "CAPd", "CAPs", "DCAP", "TCAP",
    "DCAPalt", "TCAPalt", "TCAP_DiS",
)  # fmt: skip
#: The last three are not in synthpop's ``disclosure()`` output but in its vignette's Table 1
#: and Appendix 2: DCAP and DiSCO's numerator over the synthetic records whose keys occur in
#: the original, and DiSCO over DiS (the TCAP of Little et al. 2022, 2025).
#: The tables whose exclusions are counted (synthpop's ``Nexclusions`` rows).
TABLES = ("original", "synthetic", "Dorig", "Dsyn", "iS", "DiS", "DiSCO", "DiSDiO")
#: The reasons of exclusion (synthpop's ``Nexclusions`` columns), then the records remaining.
EXCLUSION_REASONS = (
    "excluded_target", "missing_target", "missing_keys", "set_to_exclude", "over_denom_lim",
    "remaining",
)  # fmt: skip


@dataclass(frozen=True)
class Options:
    """The options of the measures, as codes of the target and key levels."""

    denom_lim: int = 5
    exclude_over_denom_lim: bool = False
    not_target_codes: tuple[int, ...] = ()
    use_target_na: bool = True
    use_keys_na: tuple[bool, ...] = ()
    exclude: tuple[tuple[int, int, int], ...] = ()  # (key index, key code, target code)
    thresh_1way: tuple[float, float] = (50.0, 90.0)
    thresh_2way: tuple[float, float] = (4.0, 80.0)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` with 0 where ``den`` is 0 (synthpop sets those proportions to 0)."""
    out = np.zeros(len(num), dtype=np.float64)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _reasons(
    cell_k: np.ndarray,
    cell_t: np.ndarray,
    key_levels: np.ndarray,
    missing_key: np.ndarray,
    target_missing: int,
    orig_target_missing: bool,
    opt: Options,
) -> np.ndarray:
    """The first reason (1..4, 0 for none) for which each cell is excluded."""
    reason = np.zeros(len(cell_k), dtype=np.int8)

    def mark(hit: np.ndarray, code: int) -> None:
        reason[(reason == 0) & hit] = code

    if opt.not_target_codes:
        mark(np.isin(cell_t, opt.not_target_codes), 1)
    # synthpop drops the missing target only when the original has missing target values
    if not opt.use_target_na and orig_target_missing and target_missing >= 0:
        mark(cell_t == target_missing, 2)
    for i, use in enumerate(opt.use_keys_na):
        if not use and missing_key[i] >= 0:
            mark(key_levels[cell_k, i] == missing_key[i], 3)
    for i, kcode, tcode in opt.exclude:
        mark((key_levels[cell_k, i] == kcode) & (cell_t == tcode), 4)
    return reason


def _exclude(values: np.ndarray, reason: np.ndarray, opt: Options) -> tuple[np.ndarray, np.ndarray]:
    """A table after the exclusions, and the records excluded for each reason."""
    counts = np.zeros(len(EXCLUSION_REASONS), dtype=np.int64)
    total = int(values.sum())
    counts[:4] = np.bincount(reason, weights=values, minlength=5)[1:5].astype(np.int64)
    out = np.where(reason > 0, 0, values)
    if opt.exclude_over_denom_lim:
        over = out > opt.denom_lim
        counts[4] = int(out[over].sum())
        out = np.where(over, 0, out)
    counts[5] = total - int(counts[:5].sum())
    return out, counts


def measure_copy(
    target_orig: np.ndarray,
    target_syn: np.ndarray,
    n_target_levels: int,
    target_missing: int,
    key_orig: np.ndarray,
    key_syn: np.ndarray,
    key_levels: np.ndarray,
    missing_key: np.ndarray,
    opt: Options,
) -> tuple[dict[str, float], dict[str, Any] | None, list[dict[str, Any]], np.ndarray]:
    """Measures, 1-way check, 2-way checks and exclusion counts of one target and one copy.

    ``key_levels[q, i]`` is the code of key variable ``i`` in key combination ``q``;
    ``missing_key[i]`` the code of its missing level (-1 if none), ``target_missing`` that of
    the target.
    """
    n_d, n_s = len(target_orig), len(target_syn)
    n_q = key_levels.shape[0]
    width = max(n_target_levels, 1)
    cd = key_orig * width + target_orig
    cs = key_syn * width + target_syn
    cells, inverse = np.unique(np.concatenate([cd, cs]), return_inverse=True)
    d = np.bincount(inverse[:n_d], minlength=len(cells)).astype(np.int64)
    s = np.bincount(inverse[n_d:], minlength=len(cells)).astype(np.int64)
    cell_k, cell_t = cells // width, cells % width
    d_q = np.bincount(cell_k, weights=d, minlength=n_q)[cell_k]  # key totals, per cell
    s_q = np.bincount(cell_k, weights=s, minlength=n_q)[cell_k]
    # tables before the exclusions (synthpop's did, dis, tab_iS, tab_DiS, tab_DiSCO, tab_DiSDiO)
    d_one = (d_q > 0) & (d == d_q)  # pd_tq = 1
    s_one = (s_q > 0) & (s == s_q)  # ps_tq = 1
    any_s_one = np.bincount(cell_k, weights=s_one, minlength=n_q)[cell_k] > 0
    tables = {
        "original": d,
        "synthetic": s,
        "Dorig": np.where(d_one, d, 0),
        "Dsyn": np.where(s_one, s, 0),
        "iS": np.where(s_q > 0, d, 0),
        "DiS": np.where(any_s_one, d, 0),
        "DiSCO": np.where(s_one, d, 0),
        "DiSDiO": np.where(s_one & d_one, d, 0),
    }
    base_td = np.bincount(cell_t, weights=d, minlength=width)
    in_syn = s_q > 0  # the key combination occurs in the synthetic file
    reason = _reasons(
        cell_k,
        cell_t,
        key_levels,
        missing_key,
        target_missing,
        bool((target_orig == target_missing).any()) if target_missing >= 0 else False,
        opt,
    )
    counts = np.zeros((len(TABLES), len(EXCLUSION_REASONS)), dtype=np.int64)
    after: dict[str, np.ndarray] = {}
    for row, name in enumerate(TABLES):
        after[name], counts[row] = _exclude(tables[name], reason, opt)
    d2, s2, disco = after["original"], after["synthetic"], after["DiSCO"]
    dq2 = np.bincount(cell_k, weights=d2, minlength=n_q)
    sq2 = np.bincount(cell_k, weights=s2, minlength=n_q)
    present = np.zeros(n_q, dtype=bool)
    present[cell_k[in_syn]] = True
    pct_d, pct_s = 100.0 / n_d, (100.0 / n_s if n_s else float("nan"))
    m: dict[str, float] = {
        "UiO": np.count_nonzero(dq2 == 1) * pct_d,
        "UiS": np.count_nonzero(sq2 == 1) * pct_s,
        "UiOiS": np.count_nonzero((dq2 == 1) & present) * pct_d,
        "repU": np.count_nonzero((dq2 == 1) & (sq2 == 1)) * pct_d,
        "Dorig": after["Dorig"].sum() * pct_d,
        "Dsyn": after["Dsyn"].sum() * pct_s,
        "iS": after["iS"].sum() * pct_d,
        "DiS": after["DiS"].sum() * pct_d,
        "DiSCO": disco.sum() * pct_d,
        "DiSDiO": after["DiSDiO"].sum() * pct_d,
        "max_denom": float(disco.max()) if len(disco) else 0.0,
        "mean_denom": float(disco[disco > 0].mean()) if (disco > 0).any() else float("nan"),
        "baseCAPd": float(np.sum((base_td / n_d) ** 2)) * 100.0,
        # proportions after the exclusions
        "CAPd": float(np.sum(_ratio(d2 * d2, dq2[cell_k]))) * pct_d,
        "CAPs": float(np.sum(_ratio(s2 * s2, sq2[cell_k]))) * pct_s,
        "DCAP": float(np.sum(_ratio(s2, sq2[cell_k]) * d2)) * pct_d,
    }
    tcap_den = dq2[sq2 > 0].sum()  # original records whose keys occur in the synthetic file
    m["TCAP"] = disco.sum() / tcap_den * 100.0 if tcap_den else float("nan")
    ns_both = sq2[dq2 > 0].sum()  # synthetic records whose keys occur in the original
    dcap_num = float(np.sum(_ratio(s2, sq2[cell_k]) * d2))
    m["DCAPalt"] = dcap_num / ns_both * 100.0 if ns_both else float("nan")
    m["TCAPalt"] = disco.sum() / ns_both * 100.0 if ns_both else float("nan")
    dis_den = after["DiS"].sum()
    m["TCAP_DiS"] = disco.sum() / dis_den * 100.0 if dis_den else float("nan")
    m = {k: float(v) for k, v in m.items()}
    check1 = _check_1way(cell_t, d2, disco, width, opt)
    check2 = _check_2way(cell_k, cell_t, disco, key_levels, key_orig, target_orig, width, opt)
    return m, check1, check2, counts


def _check_1way(
    cell_t: np.ndarray, d2: np.ndarray, disco: np.ndarray, width: int, opt: Options
) -> dict[str, Any] | None:
    """The target level that dominates the disclosive records, if over ``thresh_1way``."""
    per_level = np.bincount(cell_t, weights=d2, minlength=width)
    dis_level = np.bincount(cell_t, weights=disco, minlength=width)
    total_dis = float(dis_level.sum())
    level = int(np.argmax(dis_level))  # ties: the first level, as synthpop's stable sort
    n_level = float(dis_level[level])
    pct_dis = n_level / total_dis * 100.0 if total_dis else float("nan")
    if not (n_level > opt.thresh_1way[0] and pct_dis > opt.thresh_1way[1]):
        return None
    all_records = float(per_level.sum())
    return {
        "level": level,
        "all": int(all_records),
        "pct_level_all": float(per_level[level]) / all_records * 100.0,
        "total_disclosive": int(total_dis),
        "n_level_disclosive": int(n_level),
        "pct_level_disclosive": pct_dis,
    }


def _check_2way(
    cell_k: np.ndarray,
    cell_t: np.ndarray,
    disco: np.ndarray,
    key_levels: np.ndarray,
    key_orig: np.ndarray,
    target_orig: np.ndarray,
    width: int,
    opt: Options,
) -> list[dict[str, Any]]:
    """Pairs of a target level and one key's level behind large disclosive cells.

    The cells of the DiSCO table with more than ``thresh_2way[0]`` records are taken apart
    into (target level, level of key ``i``) pairs, each counted with the records of its
    cells; a pair is flagged when more than ``thresh_2way[1]`` % of the original records
    with that key level have that target level (the relation alone would disclose).
    """
    big = disco > opt.thresh_2way[0]
    if not big.any():
        return []
    out: list[dict[str, Any]] = []
    for i in range(key_levels.shape[1]):
        level = key_levels[key_orig, i]  # each original record's level of key i
        klev = key_levels[cell_k[big], i]
        n_k = int(key_levels[:, i].max()) + 1
        pair = klev * width + cell_t[big]
        uniq, inv = np.unique(pair, return_inverse=True)
        npairs = np.bincount(inv, weights=disco[big]).astype(np.int64)
        key_total = np.bincount(level, minlength=n_k)
        joint = np.bincount(level * width + target_orig, minlength=n_k * width)
        kc, tc = np.divmod(uniq, width)
        tot = key_total[kc]
        both = joint[uniq]
        pct = np.full(len(uniq), np.nan)
        np.divide(both * 100.0, tot, out=pct, where=tot > 0)
        for j in np.flatnonzero(pct > opt.thresh_2way[1]):  # the flagged pairs only
            out.append(
                {"key": i, "key_level": int(kc[j]), "target_level": int(tc[j]),
                 "n_pairs": int(npairs[j]), "key_target_total": int(both[j]),
                 "key_total": int(tot[j]), "pct_target_key_level": float(pct[j])}
            )  # fmt: skip
    out.sort(key=lambda r: -r["n_pairs"])  # stable: ties keep the key order
    return out

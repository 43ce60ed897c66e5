"""A tau-ARGUS batch with a ``<HOLDING>`` variable: holding-level rules as tau-ARGUS applies them.

tau-ARGUS takes a record as an enterprise; the ``<HOLDING>`` variable of the .rda groups records
into holdings.  The 1st and 2nd NK and P rules and the 1st FREQ rule of a ``<SAFETYRULE>`` count
records, the 3rd and 4th NK and P rules and the 2nd FREQ rule count holdings, a holding's
contribution being the sum of its records' (tau-ARGUS 4.1 manual, "Specify tables": holding
level; ``TableSet.java`` of sdcTools/tauargus: the rule slots 2 and 3 set ``holding``).

The records (region, holding, turnover), by hand:

* N: h1 50, h1 30, h3 20: 3 records, 2 holdings (h1 = 80 of 100);
* S: h1 15, h4 40, h2 10, h2 5: 4 records, 3 holdings (h4 = 40, h1 = 15, h2 = 15 of 70).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sdckit.errors import SdcError
from sdckit.jobs.tauargus import load_arb
from sdckit.tables import evaluate_rules

RECORDS = ["N,h1,50", "N,h1,30", "N,h3,20", "S,h1,15", "S,h4,40", "S,h2,10", "S,h2,5"]


def _batch(folder: Path, rule: str, holding: bool = True) -> Path:
    (folder / "b.asc").write_text("\n".join(RECORDS) + "\n")
    (folder / "b.rda").write_text(
        '<SEPARATOR> ","\nRegion 1\n <RECODEABLE>\nGroup 2\n'
        + (" <HOLDING>\n" if holding else "")
        + "Turnover 8\n <NUMERIC>\n"
    )
    arb = folder / "b.arb"
    arb.write_text(
        '<OPENMICRODATA> "b.asc"\n<OPENMETADATA> "b.rda"\n'
        '<SPECIFYTABLE> "Region"|"Turnover"|"Turnover"|"Turnover"\n'
        f"<SAFETYRULE> {rule}\n<READMICRODATA>\n<SUPPRESS> MOD(1,5,1,0,0)\n"
        '<WRITETABLE> (1,2,,"out.csv")\n'
    )
    return arb


def _flags(arb: Path) -> dict[str, list[bool]]:
    job = load_arb(arb)
    t = job.table
    cells = [t.cell(Region=c) for c in ("Total", "N", "S")]
    out = evaluate_rules(t, list(job.rules))
    return {name: flag[cells].tolist() for name, flag in out.flags.items()}


@pytest.mark.parametrize(
    ("rule", "primary"),
    [
        # FREQ at record level only: N has 3 records, S 4: nothing unsafe
        ("FREQ(3,10)", [False, False, False]),
        # the 2nd FREQ counts holdings: N has 2
        ("FREQ(3,10)|FREQ(3,10)", [False, True, False]),
        # NK(1,75) on records: N's largest record is 50 of 100: safe; on holdings h1 is 80
        ("NK(1,75)", [False, False, False]),
        ("NK(0,0)|NK(0,0)|NK(1,75)", [False, True, False]),
        # p% 10 on holdings: N 100 - 80 - 20 = 0 < 8; S 70 - 40 - 15 = 15 >= 4
        ("P(10,1)|P(0,1)|P(10,1)", [False, True, False]),
    ],
)
def test_holding_rules_flag_what_tau_argus_flags(tmp_path: Path, rule: str, primary: list) -> None:
    flags = _flags(_batch(tmp_path, rule))
    union = [any(f[i] for f in flags.values()) for i in range(3)]
    assert union == primary


def test_the_holding_is_the_tables_holding_column(tmp_path: Path) -> None:
    job = load_arb(_batch(tmp_path, "FREQ(3,10)|FREQ(3,10)"))
    t = job.table
    n, s = t.cell(Region="N"), t.cell(Region="S")
    assert t.contributions is not None and t.contributions.level == "holding"
    assert t.n_contributors[[n, s]].tolist() == [2, 3]
    assert t.respondent_contributors is not None
    assert t.respondent_contributors[[n, s]].tolist() == [3, 4]
    assert [r.level for r in job.rules] == ["respondent", "holding"]


def test_holding_rules_need_a_holding_variable(tmp_path: Path) -> None:
    with pytest.raises(SdcError, match="declares no <HOLDING> variable"):
        load_arb(_batch(tmp_path, "FREQ(3,10)|FREQ(3,10)", holding=False))

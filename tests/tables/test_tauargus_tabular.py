"""tau-ARGUS batches beyond microdata and suppression: tabular input, a priori files,
``<RECODE>``, rounding and the cell key method in ``<SUPPRESS>``, tau-ARGUS's output formats,
and ``sdckit table --write-arb``.

``data/tauargus/tableinput`` holds tau-ARGUS's own test of tabular input (``TestTable.arb``,
``pp.rda``, ``pp.tab``, ``region2.hrc``: sdcTools/tauargus, ``data/tableinput``, EUPL 1.1), a
table written by tau-ARGUS itself (decimal commas, quoted codes with leading spaces, totals
given, statuses ``S`` / ``U`` / ``E`` and protection levels); ``data/tauargus/cellkey`` holds
tau-ARGUS's cell-key metadata and ptable (sdcTools/tauargus, ``data/cellkey/Frequency``).  The
other files are small and made by hand here, their expected values worked out in the comments.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit import SdcError
from sdckit.cli.app import app
from sdckit.errors import SdcWarning
from sdckit.jobs import load_table_job, run_table_job
from sdckit.jobs.tauargus import (
    ArbPerturbationJob,
    load_arb_jobs,
    run_arb_job,
)
from sdckit.tables import Hierarchy, Table, apply_rules, audit
from sdckit.tables.cellkey import cell_key_counts, count_ptable
from sdckit.tables.ptable import write_ptable
from sdckit.tables.tauargus import (
    read_hst,
    read_tab,
    read_table_rda,
    recode_codes,
    write_tauargus_table,
)

DATA = Path(__file__).parent / "data" / "tauargus"
runner = CliRunner()


def run(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


# ---------------------------------------------------------------------- tau-ARGUS's own test
def test_tau_argus_table_input_runs(tmp_path: Path) -> None:
    for f in (DATA / "tableinput").iterdir():
        shutil.copy(f, tmp_path / f.name)
    arb = tmp_path / "TestTable.arb"
    arb.write_text(
        arb.read_text() + '<SUPPRESS> MOD(1,5,1,0,0)\n<WRITETABLE> (1,2,AS+,"out.csv")\n'
    )
    (job,) = load_arb_jobs(arb)
    t = job.table
    assert t.dimensions == ("Size", "Region")
    assert t.hierarchies[1].codes[:5] == ("Total", "Nr", "1", "2", "3")
    # decimal commas read; <READTABLE> 1: the totals are the sums of the bottom cells, here
    # 16,847,645.84, one less than the file's 16,847,646,84 (its cell " 2" x " 4" holds 4 and
    # its shadow 5: the file's totals add up the shadow)
    assert t.values[0] == pytest.approx(16847645.84, abs=1e-6)
    assert t.n_contributors[0] == 42723
    # every row of the file is its cell
    meta = read_table_rda(tmp_path / "pp.rda")
    frame = read_tab(tmp_path / "pp.tab", meta)
    # every bottom cell of the file is its cell (<READTABLE> 1: the totals are computed)
    leaves = [{h.codes[i] for i in h.leaves.tolist()} for h in t.hierarchies]
    n = 0
    for row in frame.iter_rows(named=True):
        if row["Size"] in leaves[0] and row["Region"] in leaves[1]:
            c = t.cell(Size=row["Size"], Region=row["Region"])
            assert t.values[c] == pytest.approx(row["Var2"])
            n += 1
    assert n > 50
    # <READTABLE> 1T without <SAFETYRULE>: the file's statuses decide; its 9 "U" rows (two of
    # them region subtotals, kept by the T) are the primaries, with the file's levels
    marked = apply_rules(t, list(job.rules))
    unsafe = frame.filter(pl.col("StatusVar") == "U")
    assert unsafe.height == 9 == int(marked.primary.sum())
    for row in unsafe.iter_rows(named=True):
        c = t.cell(Size=row["Size"], Region=row["Region"])
        assert marked.primary[c]
        assert marked.upper[c] == pytest.approx(row["UpperProtLevel"])
    # the cost is the response (the batch's fourth part), not the metadata's <COSTVAR> column
    assert job.suppression.cost == "value"
    res = run_arb_job(job)
    assert res.protected and res.table.secondary.sum() > 0
    assert audit(res.table, intervals="exact").ok
    out = pl.read_csv(tmp_path / "out.csv", infer_schema=False)
    assert out.columns == ["Size", "Region", "Var2", "Status"]
    assert (out["Status"] == "9").sum() == 9  # tau-ARGUS's "unsafe (manual)"
    # the metadata's cost variable named as the cost: each listed cell's cost is its field
    arb.write_text(arb.read_text().replace('"Var2_Shadow"|"Var2"', '"Var2_Shadow"|"Var2_Cost"'))
    (job,) = load_arb_jobs(arb)
    cost = np.asarray(job.suppression.cost)
    for row in frame.iter_rows(named=True):
        assert cost[job.table.cell(Size=row["Size"], Region=row["Region"])] == row["Var2_Cost"]


# ---------------------------------------------------------------------- a hand-made batch
RDA = """<SEPARATOR> ","
Sector
  <RECODEABLE>
  <TOTCODE> Total
Size
  <RECODEABLE>
  <TOTCODE> Total
Turnover
  <NUMERIC>
  <DECIMALS> 0
Freq
  <FREQUENCY>
Top1
  <MAXSCORE>
Top2
  <MAXSCORE>
"""
# Sector A, B, C x Size s, l: (value, contributors, largest two contributions)
CELLS = {
    ("A", "s"): (100, 10, 20, 15),
    ("A", "l"): (50, 2, 30, 20),  # 2 contributors: FREQ(3) primary
    ("B", "s"): (80, 8, 12, 11),
    ("B", "l"): (90, 1, 90, 0),  # 1 contributor: primary
    ("C", "s"): (60, 6, 10, 9),
    ("C", "l"): (40, 5, 35, 2),  # NK(1,80): 35 / 40 = 87.5 % > 80: primary
}


def _tab(cells: dict, totals: bool) -> str:
    rows = [f"{a},{b},{v},{n},{t1},{t2}" for (a, b), (v, n, t1, t2) in cells.items()]
    if totals:
        sums: dict[tuple[str, str], list[float]] = {}
        for (a, b), (v, n, t1, t2) in cells.items():
            for key in ((a, "Total"), ("Total", b), ("Total", "Total")):
                s = sums.setdefault(key, [0, 0, 0, 0])
                s[0] += v
                s[1] += n
                s[2:] = sorted([*s[2:], t1, t2], reverse=True)[:2]
        rows += [f"{a},{b},{v},{n},{t1},{t2}" for (a, b), (v, n, t1, t2) in sums.items()]
    return "\n".join(rows) + "\n"


def _batch(d: Path, *, totals: bool = True, read: str = "0", extra: str = "") -> Path:
    (d / "biz.rda").write_text(RDA)
    (d / "biz.tab").write_text(_tab(CELLS, totals))
    arb = d / "biz.arb"
    arb.write_text(
        '<OPENTABLEDATA> "biz.tab"\n<OPENMETADATA> "biz.rda"\n'
        '<SPECIFYTABLE> "Sector""Size"|"Turnover"||\n<SAFETYRULE> FREQ(3,20)|NK(1,80)\n'
        f"<READTABLE> {read}\n{extra}<SUPPRESS> OPT(1,1)\n"
        '<WRITETABLE> (1,2,AS+,"out/status.csv")\n<WRITETABLE> (1,3,,"out/published.txt")\n'
    )
    return arb


def test_tabular_batch_applies_the_rules(tmp_path: Path) -> None:
    (job,) = load_arb_jobs(_batch(tmp_path))
    marked = apply_rules(job.table, list(job.rules))
    t = job.table
    flagged = {(a, b) for (a, b) in CELLS if marked.primary[t.cell(Sector=a, Size=b)]}
    assert flagged == {("A", "l"), ("B", "l"), ("C", "l")}
    assert int(marked.primary.sum()) == 3
    # NK(1,80) level: 100/80 * 35 - 40 = 3.75; FREQ(3,20): 20 % of 50 = 10
    assert marked.upper[t.cell(Sector="C", Size="l")] == pytest.approx(3.75)
    assert marked.upper[t.cell(Sector="A", Size="l")] == pytest.approx(10.0)


def test_totals_computed_from_the_bottom_cells(tmp_path: Path) -> None:
    for name in "abc":
        (tmp_path / name).mkdir()
    (given,) = load_arb_jobs(_batch(tmp_path / "a", totals=True))
    (computed,) = load_arb_jobs(_batch(tmp_path / "b", totals=False, read="1"))
    np.testing.assert_allclose(computed.table.values, given.table.values)
    np.testing.assert_array_equal(computed.table.n_contributors, given.table.n_contributors)
    np.testing.assert_allclose(computed.table.top, given.table.top)
    assert computed.table.values[0] == 420  # 100 + 50 + 80 + 90 + 60 + 40
    # totals read that do not add up: the message names the cell, not a value
    d = tmp_path / "c"
    arb = _batch(d)
    (d / "biz.tab").write_text(
        (d / "biz.tab").read_text().replace("Total,Total,420", "Total,Total,421")
    )
    with pytest.raises(SdcError, match=r"not the sum of its parts: cell 0 "):
        load_arb_jobs(arb)


def test_apriori_file_statuses_levels_and_costs(tmp_path: Path) -> None:
    hst = tmp_path / "biz.hst"
    # B,l: stated safe (the rule's verdict overridden); A,s: stated unsafe with levels 5, 7;
    # B,s: protected (never suppressed); C,s: cost 1000 (expensive to suppress); a code
    # that is not in the table: skipped with a warning (ignore errors = 1)
    hst.write_text("B;l;s\nA;s;u\nA;s;pl;5;7\nB;s;p\nC;s;c;1000\nZ;s;u\n")
    arb = _batch(tmp_path, extra='<APRIORY> "biz.hst",1,";",1\n')
    with pytest.warns(SdcWarning, match="1 line"):
        (job,) = load_arb_jobs(arb)
    t = job.table
    marked = apply_rules(t, list(job.rules))
    flagged = {(a, b) for (a, b) in CELLS if marked.primary[t.cell(Sector=a, Size=b)]}
    assert flagged == {("A", "l"), ("A", "s"), ("C", "l")}
    a_s = t.cell(Sector="A", Size="s")
    assert (marked.lower[a_s], marked.upper[a_s]) == (5.0, 7.0)
    assert t.status[t.cell(Sector="B", Size="s")] == 4  # protected
    cost = np.asarray(job.suppression.cost)
    assert cost[t.cell(Sector="C", Size="s")] == 1000.0
    assert cost[t.cell(Sector="A", Size="s")] == pytest.approx(100.001)  # the value (+1e-3)
    res = run_arb_job(job)
    assert res.protected
    assert not res.table.suppressed[t.cell(Sector="B", Size="s")]
    # ignore errors = 0: the unknown code is an error naming the file and line
    arb.write_text(arb.read_text().replace('";",1', '";",0'))
    with pytest.raises(SdcError, match=r"Line 6 of the a priori file 'biz.hst'"):
        load_arb_jobs(arb)


def test_the_batch_with_tabular_input_and_apriori_runs_through_the_cli(tmp_path: Path) -> None:
    (tmp_path / "biz.hst").write_text("B,s,p\n")
    arb = _batch(tmp_path, extra='<APRIORY> "biz.hst",1,","\n')
    code, stdout, stderr = run("table", arb)
    assert code == 0, stderr
    assert "every suppressed cell protected" in stdout
    status = pl.read_csv(tmp_path / "out" / "status.csv", infer_schema=False)
    assert status.columns == ["Sector", "Size", "Turnover", "Status"]
    numbers = dict(
        zip(zip(status["Sector"], status["Size"], strict=True), status["Status"], strict=True)
    )
    assert numbers[("B", "s")] == "10"  # protected
    # tau-ARGUS's status numbers: 5 unsafe by the frequency rule, 3 by the dominance rule
    # (B,l: one contributor, 100 % > 80 %: the dominance rule comes first, as in tau-ARGUS)
    assert {k: v for k, v in numbers.items() if v in ("3", "5")} == {
        ("A", "l"): "5",
        ("B", "l"): "3",
        ("C", "l"): "3",
    }
    published = (tmp_path / "out" / "published.txt").read_text().splitlines()
    hidden = {ln.rsplit(",", 1)[0] for ln in published if ln.endswith(",x")}
    assert hidden == {f'"{a}","{b}"' for (a, b), s in numbers.items() if s in ("3", "5", "11")}
    assert "11" in numbers.values()  # some secondaries


@pytest.mark.parametrize(
    ("file", "text", "needle"),
    [
        ("biz.tab", "A,s,100,10,20\n", r"Line 1 of the table file 'biz.tab' has 5 fields"),
        ("biz.tab", "A,s,1OO,10,20,15\n", r"Line 1 of the table file 'biz.tab'.*'Turnover'"),
        ("biz.rda", RDA + "  <HOLDING>\n", r"Line 17 of the metadata file 'biz.rda'.*<HOLDING>"),
        ("biz.rda", RDA.replace("  <FREQUENCY>\n", ""), r"Line 11 .*'Freq' has no role"),
    ],
)
def test_malformed_lines_name_the_file_and_line(
    tmp_path: Path, file: str, text: str, needle: str
) -> None:
    arb = _batch(tmp_path)
    (tmp_path / file).write_text(text)
    with pytest.raises(SdcError, match=needle):
        load_arb_jobs(arb)


def test_read_hst_malformed_lines(tmp_path: Path) -> None:
    t = Table.from_array(np.array([9.0, 7.0, 2.0]), {"x": ["a", "b"]})
    p = tmp_path / "a.hst"
    for text, needle in [
        ("a,s\nb,q\n", r"Line 2 of the a priori file 'a.hst': the type"),
        ("a,pl,1\n", r"Line 1 .*PL needs 2 number"),
        ("a,c,abc\n", r"Line 1 .*must be numbers"),
        ("a,pl,-1,2\n", r"Line 1 .*must not be negative"),
    ]:
        p.write_text(text)
        with pytest.raises(SdcError, match=needle):
            read_hst(p, t)
    p.write_text("a;s\n")
    with pytest.raises(SdcError, match="no separator ','"):
        read_hst(p, t)
    p.write_text("a,ab,1,8\nTotal,ml\n")
    ap = read_hst(p, t)
    assert (ap.lower_bound[1], ap.upper_bound[1]) == (1.0, 8.0)
    assert ap.status.tolist() == [3, -1, -1]


# ---------------------------------------------------------------------- <RECODE>
def test_recode_codes() -> None:
    h = Hierarchy.from_dict({"T": ["A", "B"], "A": ["A1", "A2"], "A1": ["A11", "A12"], "B": ["B1"]})
    new, mapping = recode_codes(h, "2")
    assert new.codes == ("T", "A", "A1", "A2", "B", "B1")
    assert mapping == {"A11": "A1", "A12": "A1", "A2": "A2", "B1": "B1"}
    new, mapping = recode_codes(h, "1")
    assert new.codes == ("T", "A", "B") and mapping["A12"] == "A"


def test_recode_files(tmp_path: Path) -> None:
    flat = Hierarchy.flat(["1", "2", "3", "10", "x"])
    grc = tmp_path / "r.grc"
    grc.write_text("low: 1-3\nhigh: 10-\n")  # 10 is a number: "10" >= "10", "3" < "10"
    new, mapping = recode_codes(flat, grc)
    assert mapping == {"1": "low", "2": "low", "3": "low", "10": "high", "x": "x"}
    assert set(new.codes) == {"Total", "low", "high", "x"}
    tree = Hierarchy.from_dict({"Total": ["A", "B"], "A": ["A1", "A2"], "B": ["B1"]})
    grc.write_text("<TREERECODE>\nA\n")
    new, mapping = recode_codes(tree, grc)
    assert new.codes == ("Total", "A", "B", "B1") and mapping["A2"] == "A"
    grc.write_text("<TREERECODE>\nZ\n")
    with pytest.raises(SdcError, match=r"Line 2 of the recode file 'r.grc'"):
        recode_codes(tree, grc)
    grc.write_text("low 1-3\n")
    with pytest.raises(SdcError, match=r"Line 1 of the recode file 'r.grc'"):
        recode_codes(flat, grc)


MICRO_RDA = """Sector 1 1
  <RECODEABLE>
Size 2 2
  <RECODEABLE>
  <HIERARCHICAL>
  <HIERLEVELS> 1 1
Key 4 6
  <RECORDKEY>
"""


def _micro(d: Path, suppress: str, extra: str = "", spec: str = "<freq>") -> Path:
    """A microdata batch: 60 records over Sector (A, B, C) x Size (11, 12, 21, 22)."""
    rng = np.random.default_rng(3)
    lines = []
    for i in range(60):
        sector = "ABC"[i % 3]
        size = ["11", "12", "21", "22"][int(rng.integers(4))]
        lines.append(f"{sector}{size}{(i * 0.0137) % 1:.4f}")
    (d / "m.asc").write_text("\n".join(lines) + "\n")
    (d / "m.rda").write_text(MICRO_RDA)
    arb = d / "m.arb"
    arb.write_text(
        '<OPENMICRODATA> "m.asc"\n<OPENMETADATA> "m.rda"\n'
        f'<SPECIFYTABLE> "Sector""Size"|{spec}||\n<SAFETYRULE> FREQ(4,10)\n<READMICRODATA>\n'
        f'{extra}<SUPPRESS> {suppress}\n<WRITETABLE> (1,2,AS-,"out.csv")\n'
    )
    return arb


def test_recode_in_a_batch(tmp_path: Path) -> None:
    arb = _micro(tmp_path, "GH(1,100,0,1)")
    (full,) = load_arb_jobs(arb)
    arb.write_text(arb.read_text().replace("<SUPPRESS>", "<RECODE> 1, Size, 1\n<SUPPRESS>"))
    (recoded,) = load_arb_jobs(arb)
    assert recoded.table.hierarchies[1].codes == ("Total", "1", "2")
    # the recoded cells are the sums of the cells they replace
    for sector in ("A", "B", "C", "Total"):
        for code in ("1", "2"):
            assert (
                recoded.table.values[recoded.table.cell(Sector=sector, Size=code)]
                == (full.table.values[full.table.cell(Sector=sector, Size=code)])
            )
    arb.write_text(arb.read_text().replace("<RECODE> 1, Size, 1", "<RECODE> 1, Nosuch, 1"))
    with pytest.raises(SdcError, match="'Nosuch'"):
        load_arb_jobs(arb)


# ---------------------------------------------------------------------- RND and CKM
def test_controlled_rounding_in_a_batch(tmp_path: Path) -> None:
    arb = _micro(tmp_path, "RND(1,5,0,1)")
    (job,) = load_arb_jobs(arb)
    assert isinstance(job, ArbPerturbationJob)
    assert job.params == {"base": 5, "k_steps": 0, "time_limit": 60.0}
    code, _stdout, stderr = run("table", arb)
    assert code == 0, stderr
    out = pl.read_csv(tmp_path / "out.csv", infer_schema=False)
    rounded = out["Freq"].cast(float).to_numpy()
    assert np.all(rounded % 5 == 0)
    t = job.table
    assert np.allclose(t.constraint_matrix @ rounded, 0)  # additive, totals included
    assert np.all(np.abs(rounded - t.values) < 5)  # zero-restricted: an adjacent multiple


def test_cell_key_method_in_a_batch(tmp_path: Path) -> None:
    ptable = count_ptable(D=2, V=1.0)
    write_ptable(ptable, tmp_path / "p.txt")
    arb = _micro(tmp_path, 'CKM(1) "p.txt"')
    (job,) = load_arb_jobs(arb)
    res = run_arb_job(job)
    direct = cell_key_counts(job.records, job.dimensions, ptable, record_key="Key")
    np.testing.assert_allclose(res.table.values, direct.perturbed)
    out = pl.read_csv(tmp_path / "out.csv", infer_schema=False)
    np.testing.assert_allclose(out["Freq"].cast(float).to_numpy(), direct.perturbed)


# ---------------------------------------------------------------------- output formats
def test_output_formats_by_hand(tmp_path: Path) -> None:
    from sdckit.tables import CellStatus

    t = Table.from_array(
        np.array([[10.0, 6.0, 4.0], [7.0, 5.0, 2.0], [3.0, 1.0, 2.0]]),
        {"r": ["a", "b"], "c": ["x", "y"]},
        n_contributors=[[6, 3, 3], [4, 2, 2], [2, 1, 1]],
        top=[[[4, 2], [4, 1], [2, 1]], [[4, 2], [4, 1], [1, 1]], [[1, 1], [1, 0], [1, 1]]],
    )
    t = t.suppress([4, 7], CellStatus.PRIMARY).suppress([5, 8])  # (a,x), (b,x) | (a,y), (b,y)
    p = tmp_path / "t"
    # 1: the last dimension across, an empty line after the block
    text = write_tauargus_table(t, p, 1).read_text()
    assert text == ',"Total","x","y"\n"Total",10,6,4\n"a",7,x,x\n"b",3,x,x\n\n'
    # 2 with the status: tau-ARGUS's numbers (1 safe, 3 unsafe by a rule, 11 secondary)
    lines = write_tauargus_table(t, p, 2, "AS+").read_text().splitlines()
    assert lines[:3] == ['"r","c","Freq","Status"', '"Total","Total",10,1', '"Total","x",6,1']
    assert lines[5:7] == ['"a","x",5,3', '"a","y",2,11']
    # 3 without quotes: no first line, "x" for a suppressed value
    lines = write_tauargus_table(t, p, 3, "QU-").read_text().splitlines()
    assert lines[3:5] == ["a,Total,7", "a,x,x"]
    # 4, SBS: codes (with HL+ their levels: 0 in a flat variable), value, contributors,
    # letter and shares; (b,x) flagged by the frequency rule (status 5: "A"), (a,x) by a
    # dominance rule on the largest contribution ("B", 4 of 5 = 80 %), (a,y) secondary ("D")
    codes = np.zeros(t.n_cells, dtype=np.int64)
    codes[[4, 7]] = [3, 5]
    out = write_tauargus_table(t, p, 4, "HL+", decimals=1, status_codes=codes, n_top=1)
    lines = out.read_text().splitlines()
    assert lines[0] == '"Total",0,"Total",0,10.0,6,V'
    assert lines[4:8] == [  # a flat variable's codes are at level 0, as in tau-ARGUS
        '"a",0,"x",0,5.0,2,B,80.0',
        '"a",0,"y",0,2.0,2,D',
        '"b",0,"Total",0,3.0,2,V',
        '"b",0,"x",0,1.0,1,A',
    ]
    # a p% rule: "F" and the shares of the two largest contributions
    line = write_tauargus_table(t, p, 4, "", status_codes=codes, pq=True).read_text()
    assert line.splitlines()[4] == '"a","x",5,2,F,80.0,20.0'
    with pytest.raises(SdcError, match="output type 5"):
        write_tauargus_table(t, p, 5)
    with pytest.raises(SdcError, match="options"):
        write_tauargus_table(t, p, 2, "XX+")


def test_formats_equal_tau_argus_files(tmp_path: Path) -> None:
    """The hand-made batch with its a priori file, run by tau-ARGUS's engine (pytauargus 0.6.0,
    engine 1.1.4.11, ``tauargus run`` in its own environment) with ``<WRITETABLE>`` kinds 1,
    2 (AS+), 3 and 4 (HL+): ``data/tauargus/formats``.  Given tau-ARGUS's pattern (read from its
    status numbers), sdckit writes the same four files byte for byte."""
    from sdckit.tables import CellStatus

    ref = DATA / "formats"
    shutil.copy(ref / "biz.hst", tmp_path / "biz.hst")
    (job,) = load_arb_jobs(_batch(tmp_path, extra='<APRIORY> "biz.hst",1,","\n'))
    rule = job.rules[0]
    marked = apply_rules(job.table, [rule])
    pivot = pl.read_csv(ref / "k2.csv", infer_schema=False)
    numbers = {(r["Sector"], r["Size"]): int(r["Status"]) for r in pivot.iter_rows(named=True)}
    t = marked
    cells = {key: t.cell(Sector=key[0], Size=key[1]) for key in numbers}
    # the same primaries (3: dominance, 5: frequency) and protected cell (10) as tau-ARGUS
    assert {k for k, n in numbers.items() if n in (3, 5)} == {
        k for k, c in cells.items() if t.primary[c]
    }
    assert {k for k, n in numbers.items() if n == 10} == {
        k for k, c in cells.items() if t.status[c] == CellStatus.PROTECTED
    }
    secondary = [t.cell(Sector=a, Size=b) for (a, b), n in numbers.items() if n == 11]
    t = t.suppress(secondary)
    codes = rule.status_codes(job.table)
    extra = {"status_codes": codes, "n_top": 1, "pq": False}
    for kind, options, name in ((1, "", "k1.csv"), (2, "AS+", "k2.csv"), (3, "", "k3.txt")):
        mine = write_tauargus_table(t, tmp_path / name, kind, options, response="Turnover", **extra)
        assert mine.read_bytes() == (ref / name).read_bytes(), name
    mine = write_tauargus_table(t, tmp_path / "k4.sbs", 4, "HL+", **extra)
    assert mine.read_bytes() == (ref / "k4.sbs").read_bytes()


def test_csv_of_three_dimensions_has_blocks(tmp_path: Path) -> None:
    values = np.zeros((3, 3, 3))
    leaves = np.array([[1.0, 2.0], [3.0, 4.0]])
    values[1:, 1:, 1:] = np.stack([leaves, leaves * 10])
    values[0] = values[1:].sum(axis=0)
    values[:, 0] = values[:, 1:].sum(axis=1)
    values[:, :, 0] = values[:, :, 1:].sum(axis=2)
    t = Table.from_array(values, {"a": ["p", "q"], "b": ["r", "s"], "c": ["u", "v"]})
    lines = write_tauargus_table(t, tmp_path / "c.csv", 1, "QU-").read_text().splitlines()
    # one block per code of the first variable, named as tau-ARGUS names it
    assert lines[:6] == [
        "Var 1,Total",
        ",Total,u,v",
        "Total,110,44,66",
        "r,33,11,22",
        "s,77,33,44",
        "",
    ]
    assert lines[6:9] == ["Var 1,p", ",Total,u,v", "Total,10,4,6"]
    assert len(lines) == 3 * 6


def test_empty_cells_are_not_zeros(tmp_path: Path) -> None:
    t = Table.from_array(np.array([5.0, 5.0, 0.0]), {"x": ["a", "b"]}, n_contributors=[2, 2, 0])
    p = tmp_path / "e.csv"
    assert write_tauargus_table(t, p, 3).read_text() == '"Total",5\n"a",5\n"b",-\n'
    assert write_tauargus_table(t, p, 3, "SE+").read_text() == '"Total",5\n"a",5\n'
    assert write_tauargus_table(t, p, 3, "AS+").read_text().splitlines()[2] == '"b",-,14'
    assert write_tauargus_table(t, p, 1).read_text() == ',"Total","a","b"\n,5,5,-'


# ---------------------------------------------------------------------- --write-arb
JOB = """
title = "Persons by region and occupation"
[input]
file = "{data}"
[table]
dimensions = ["region", "occupation"]
[[rules]]
rule = "min_frequency"
threshold = 4
[suppression]
method = "{method}"
[output]
table_full = "out/full.csv"
"""


@pytest.mark.parametrize("method", ["hypercube", "modular", "optimal"])
def test_write_arb_round_trip(tmp_path: Path, method: str) -> None:
    from sdckit.datasets import generate_census
    from sdckit.io import write_data

    data = tmp_path / "census.csv"
    write_data(generate_census(600, seed=2), data)
    job_file = tmp_path / "job.toml"
    job_file.write_text(JOB.format(data=data.as_posix(), method=method))
    code, stdout, stderr = run("table", job_file, "--write-arb", tmp_path / "arb")
    assert code == 0, stderr
    arb = tmp_path / "arb" / "job.arb"
    assert arb.is_file() and "Wrote" in stdout
    assert not (tmp_path / "out").exists()  # written, not run
    direct = run_table_job(load_table_job(job_file), write=False)
    code, stdout, stderr = run("table", arb)
    assert code == 0, stderr
    status = pl.read_csv(tmp_path / "arb" / "job_status.csv", infer_schema=False)
    t = direct.table
    numbers = np.array(status["Status"].to_list())
    np.testing.assert_array_equal(numbers == "9", t.primary)  # stated unsafe in the .tab
    np.testing.assert_array_equal(numbers == "11", t.secondary)
    (batch_job,) = load_arb_jobs(arb)
    assert batch_job.table.kind == t.kind == "count"  # counts written as response and frequency
    np.testing.assert_allclose(batch_job.table.values, t.values)
    np.testing.assert_array_equal(batch_job.table.n_contributors, t.n_contributors)
    marked = apply_rules(batch_job.table, list(batch_job.rules))
    np.testing.assert_allclose(marked.upper, t.upper)


def test_write_arb_refuses_a_batch(tmp_path: Path) -> None:
    arb = _micro(tmp_path, "GH(1,100,0,1)")
    code, _stdout, stderr = run("table", arb, "--write-arb", tmp_path / "x")
    assert code == 2 and "a batch is one already" in stderr


# ---------------------------------------------------------------------- REQ
def test_request_rule(tmp_path: Path) -> None:
    # Sector, request code, turnover; REQ(30, 50, 3, 10):
    # A: a code-1 record gives 50 of 120 (41.7 % > 30 %): unsafe, level 10 % of 120 = 12
    # B: a code-2 record gives 40 of 125 (32 % <= 50 %), 4 contributors: safe
    # C: a code-1 record gives 5 of 305: safe
    # D: a code-2 record in a cell of 2 contributors (< 3): unsafe, level 2
    # Total: code 1 at most 50 of 570: safe
    records = {
        "A": [(50, "1"), (30, "0"), (20, "0"), (10, "0"), (10, "0")],
        "B": [(40, "2"), (30, "0"), (30, "0"), (25, "0")],
        "C": [(5, "1"), (100, "0"), (100, "0"), (100, "0")],
        "D": [(10, "2"), (10, "0")],
    }
    lines = [f"{s}{r}{v:>5d}" for s, recs in records.items() for v, r in recs]
    (tmp_path / "r.asc").write_text("\n".join(lines) + "\n")
    (tmp_path / "r.rda").write_text(
        'Sector 1 1\n  <RECODEABLE>\nReq 2 1\n  <REQUEST> "1" "2"\nTurn 3 5\n  <NUMERIC>\n'
    )
    arb = tmp_path / "r.arb"
    arb.write_text(
        '<OPENMICRODATA> "r.asc"\n<OPENMETADATA> "r.rda"\n<SPECIFYTABLE> "Sector"|"Turn"||\n'
        "<SAFETYRULE> REQ(30,50,3,10)\n<READMICRODATA>\n<SUPPRESS> GH(1,100,0,1)\n"
    )
    (job,) = load_arb_jobs(arb)
    marked = apply_rules(job.table, list(job.rules))
    t = job.table
    assert t.hierarchies[0].codes == ("Total", "A", "B", "C", "D")
    assert marked.primary.tolist() == [False, True, False, False, True]
    assert marked.upper.tolist() == pytest.approx([0, 12.0, 0, 0, 2.0])
    assert run_arb_job(job).protected
    # a request rule without a <REQUEST> variable
    (tmp_path / "r.rda").write_text("Sector 1 1\n  <RECODEABLE>\nReq 2 1\nTurn 3 5\n  <NUMERIC>\n")
    with pytest.raises(SdcError, match="<REQUEST> variable"):
        load_arb_jobs(arb)


def test_table_metadata_with_status_codes_cost_and_levels(tmp_path: Path) -> None:
    """<HIERLEVELS> codes, a <COST> variable, <LOWERPL>/<UPPERPL> and the status codes of
    <SAFE>, <UNSAFE>, <PROTECT> (here "ok", "bad", "keep"), status only (no <SAFETYRULE>)."""
    (tmp_path / "t.rda").write_text(
        '<SEPARATOR> ";"\n<SAFE> ok\n<UNSAFE> bad\n<PROTECT> keep\n'
        "Nace\n  <RECODEABLE>\n  <HIERLEVELS> 1 1\nTurnover\n  <NUMERIC>\n"
        "Cost\n  <NUMERIC> <COST>\nLow\n  <NUMERIC> <LOWERPL>\nUp\n  <NUMERIC> <UPPERPL>\n"
        "State\n  <STATUS>\n"
    )
    # Nace 1 = 11 + 12, 2 = 21 + 22; 12 unsafe (levels 3 and 4), 21 protected
    rows = [
        ("Total", 100, 1, "", "", "ok"),
        ("1", 40, 1, "", "", "ok"),
        ("11", 30, 1, "", "", "ok"),
        ("12", 10, 50, 3, 4, "bad"),
        ("2", 60, 1, "", "", "ok"),
        ("21", 25, 1, "", "", "keep"),
        ("22", 35, 7, "", "", "ok"),
    ]
    (tmp_path / "t.tab").write_text("".join(";".join(map(str, r)) + "\n" for r in rows))
    arb = tmp_path / "t.arb"
    arb.write_text(
        '<OPENTABLEDATA> "t.tab"\n<OPENMETADATA> "t.rda"\n'
        '<SPECIFYTABLE> "Nace"|"Turnover"||"Cost"\n<READTABLE> 0\n<SUPPRESS> OPT(1,1)\n'
    )
    (job,) = load_arb_jobs(arb)
    t = job.table
    assert t.hierarchies[0].codes == ("Total", "1", "11", "12", "2", "21", "22")
    marked = apply_rules(t, list(job.rules))
    assert marked.primary.tolist() == [False, False, False, True, False, False, False]
    assert (marked.lower[3], marked.upper[3]) == (3.0, 4.0)
    assert t.status[5] == 4  # protected
    np.testing.assert_allclose(np.asarray(job.suppression.cost), [1, 1, 1, 50, 1, 1, 7])
    res = run_arb_job(job)
    # 12 needs a partner in Nace 1: 11 (cost 1) and, for the total, the cheapest way
    assert res.table.suppressed.tolist()[:4] == [False, False, True, True]
    assert not res.table.suppressed[5]
    arb.write_text(arb.read_text().replace("<READTABLE> 0", "<READTABLE> 2"))
    with pytest.raises(SdcError, match="READTABLE> 0"):
        load_arb_jobs(arb)
    arb.write_text(arb.read_text().replace("<READTABLE> 2", "<READTABLE> 0"))
    (tmp_path / "t.hst").write_text("11;s\n")
    arb.write_text(arb.read_text().replace("<SUPPRESS>", '<APRIORY> "t.hst",1,";",1,1\n<SUPPRESS>'))
    with pytest.raises(SdcError, match=r"Line 5 .*expansion of trivial levels"):
        load_arb_jobs(arb)


def test_a_shadow_other_than_the_response_is_refused_with_rules(tmp_path: Path) -> None:
    for f in (DATA / "tableinput").iterdir():
        shutil.copy(f, tmp_path / f.name)
    arb = tmp_path / "TestTable.arb"
    load_arb_jobs(arb)  # status only: the shadow (which differs in one cell) is not used
    arb.write_text(arb.read_text().replace("<READTABLE>", "<SAFETYRULE> NK(1,80)\n<READTABLE>"))
    with pytest.raises(SdcError, match="shadow variable 'Var2_Shadow'"):
        load_arb_jobs(arb)


def test_cell_key_method_with_tau_argus_metadata_and_ptable(tmp_path: Path) -> None:
    """tau-ARGUS's own cell-key metadata and ptable (sdcTools/tauargus, data/cellkey/Frequency:
    ``Tau_TestW_CKM.rda`` with its ``<RECORDKEY>`` variable and ``<PFILE>``,
    ``tau_testW_ptable.txt``, ``region2.hrc``; their microdata file is not in the repository, so
    records in its layout are made here)."""
    from sdckit.tables.ptable import read_ptable

    for f in (DATA / "cellkey").iterdir():
        shutil.copy(f, tmp_path / f.name)
    rng = np.random.default_rng(11)
    lines = []
    for _ in range(400):
        region = int(rng.integers(1, 13))
        size = int(rng.integers(1, 4))
        key = rng.random()
        record = f"01 12345{size:>2d} {region:>2d} 0010" + " " * 80  # positions 1 to 98
        lines.append(f"{record}0{key:.15f}")
    (tmp_path / "w.asc").write_text("\n".join(lines) + "\n")
    arb = tmp_path / "ckm.arb"
    arb.write_text(
        '<OPENMICRODATA> "w.asc"\n<OPENMETADATA> "Tau_TestW_CKM.rda"\n'
        '<SPECIFYTABLE> "Size""Region"|<freq>||\n<SAFETYRULE> FREQ(3,10)\n<READMICRODATA>\n'
        '<SUPPRESS> CKM(1)\n<WRITETABLE> (1,2,,"ckm.csv")\n'
    )
    (job,) = load_arb_jobs(arb)
    assert job.params["record_key"] == "Key"
    assert job.params["ptable"] == tmp_path / "tau_testW_ptable.txt"  # from <PFILE>
    res = run_arb_job(job)
    ptable = read_ptable(tmp_path / "tau_testW_ptable.txt")
    direct = cell_key_counts(job.records, job.dimensions, ptable, record_key="Key")
    np.testing.assert_allclose(res.table.values, direct.perturbed)
    counts = job.table.values
    assert np.abs(res.table.values - counts).max() <= 7  # the ptable's largest deviation
    assert np.any(res.table.values != counts)
    out = pl.read_csv(tmp_path / "ckm.csv", infer_schema=False)
    np.testing.assert_allclose(out["Freq"].cast(float).to_numpy(), direct.perturbed)

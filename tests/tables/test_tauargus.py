"""tau-ARGUS files: .hrc, .rda, .asc, .arb readers, the safety rule and the batch translation.

The example batch (tests/tables/data/tauargus/testdata.arb with its .rda and .hrc) runs on
sdcMicro's testdata (../shared/data/testdata.csv) written as a fixed-format .asc file.  Its
primaries are compared with

* tau-ARGUS's own: ``tauargus_primaries.csv`` holds the status and protection level of every cell
  of tables 1 and 2, written by tau-ARGUS's library (libtauargus, run through the pytauargus
  0.6.0 wheel in a separate environment: ``<WRITETABLE> (t, 5, SO+, ...)`` after
  ``<READMICRODATA>``; that wrapper leaves ``MIS`` out, so table 3 is checked by hand only);
* the tau-ARGUS rules applied by hand (the manual, section 4.4.4 and 5.7) to the records.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sdckit import SdcError
from sdckit.jobs.tables import TableJob, run_table_job
from sdckit.jobs.tauargus import load_arb, load_arb_jobs
from sdckit.tables import (
    HypercubeSuppression,
    ModularSuppression,
    OptimalSuppression,
    Table,
    apply_rules,
)
from sdckit.tables.tauargus import (
    TauArgusRule,
    parse_safety_rule,
    read_arb,
    read_asc,
    read_hrc,
    read_rda,
)

DATA = Path(__file__).parent / "data" / "tauargus"


# ---------------------------------------------------------------------- the example batch
def _write_asc(src: Path, target: Path) -> None:
    df = pl.read_csv(src)
    with target.open("w") as f:
        for r in df.iter_rows(named=True):
            f.write(
                f"{r['urbrur']}{r['roof']}{r['walls']}{r['water']}{r['relat']}{r['sex']}"
                f"{round(r['income']):>10d}{r['sampling_weight']:>4d}\n"
            )


@pytest.fixture(scope="module")
def batch_dir(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Path:
    d = tmp_path_factory.mktemp("tauargus")
    for name in ("testdata.arb", "testdata.rda", "water.hrc"):
        shutil.copy(DATA / name, d / name)
    _write_asc(shared_data / "testdata.csv", d / "testdata.asc")
    return d


@pytest.fixture(scope="module")
def jobs(batch_dir: Path) -> list[TableJob]:
    return load_arb_jobs(batch_dir / "testdata.arb")


def _leaves_under(h, node: int) -> set[str]:
    out = set()
    stack = [node]
    while stack:
        n = stack.pop()
        kids = h.children[n]
        if not kids:
            out.add(h.codes[n])
        stack.extend(kids)
    return out


def _by_hand(data: pl.DataFrame, table: Table, rule: dict, value: str | None) -> dict:
    """tau-ARGUS's verdict per cell from the records: (unsafe, level) by cell label."""
    out = {}
    dims = table.dimensions
    leaves = [[_leaves_under(h, n) for n in range(h.size)] for h in table.hierarchies]
    for cell in range(table.n_cells):
        nodes = table.node_index[cell]
        mask = pl.lit(True)
        for d, dim in enumerate(dims):
            mask = mask & pl.col(dim).is_in(list(leaves[d][nodes[d]]))
        part = data.filter(mask)
        freq = part.height
        x = np.sort(part[value].to_numpy())[::-1] if value else np.ones(freq)
        total = float(x.sum())
        unsafe, level = False, 0.0
        if freq > 0:
            by_rule, upl = False, 0.0
            for n, k in rule.get("NK", []):
                if total > 0 and x[:n].sum() > k / 100 * total:
                    by_rule = True
                upl = max(upl, 100 / k * x[:n].sum()) if 100 / k * x[:n].sum() > total else upl
            for p, n in rule.get("P", []):
                rest = total - x[: n + 1].sum()
                if p / 100 * x[0] > rest:
                    by_rule = True
                cand = p / 100 * x[0] + x[: n + 1].sum()
                upl = max(upl, cand) if cand > total else upl
            minfreq, frange = rule.get("FREQ", (0, 0))
            if by_rule:
                unsafe = True
                dist = upl - total
                if dist <= 0:
                    dist = total * (frange if freq <= minfreq else rule.get("MAN", 20)) / 100
                level = max(dist, 1.0)
            elif freq < minfreq:
                unsafe, level = True, max(total * frange / 100, 1.0)
            if unsafe and rule.get("MIS"):
                missing = rule["MIS"]
                codes = [table.hierarchies[d].codes[nodes[d]] for d in range(len(dims))]
                if any(c in missing.get(dim, ()) for c, dim in zip(codes, dims, strict=True)):
                    unsafe, level = False, 0.0
        out[table.cell_label(cell)] = (unsafe, level)
    return out


HAND_RULES = [
    {"NK": [(1, 60), (3, 90)], "P": [(20, 2)], "FREQ": (10, 15)},
    {"P": [(10, 1)], "FREQ": (5, 10), "MAN": 25},
    {"FREQ": (15, 20), "MIS": {"roof": ["9"]}},
]


def test_translation_reads_the_batch(jobs: list[TableJob], batch_dir: Path) -> None:
    assert len(jobs) == 3
    t1, _t2, t3 = (j.table for j in jobs)
    assert t1.dimensions == ("water", "roof") and t1.kind == "magnitude"
    assert t1.hierarchies[0].codes == (
        "Total",
        "P",
        "1",
        "2",
        "3",
        "O",
        "4",
        "5",
        "6",
        "7",
        "9",
    )  # fmt: skip  - the missing code 9 of water sits directly under the total
    assert t1.hierarchies[1].codes == ("Total", "2", "4", "5", "6", "9")
    assert t1.values[0] == pytest.approx(229529860219)  # as tau-ARGUS's grand total
    assert t3.kind == "count" and t3.values[0] == 4580
    assert isinstance(jobs[0].suppression, ModularSuppression)
    assert isinstance(jobs[1].suppression, HypercubeSuppression)
    assert jobs[1].suppression.cost == "unity"  # cost -2
    assert jobs[1].suppression.singletons is True
    assert isinstance(jobs[2].suppression, OptimalSuppression)
    assert jobs[2].suppression.time_limit == 60.0  # OPT(3, 1): one minute
    out = batch_dir / "out"
    assert jobs[0].output_full == out / "water_roof_status.csv"  # AS+
    assert jobs[0].output_table == out / "water_roof.csv"
    assert jobs[1].output_table == out / "relat_sex.csv"  # .txt written as CSV
    assert jobs[2].output_full == out / "roof_sex.csv"


def test_primaries_equal_tau_argus(jobs: list[TableJob]) -> None:
    ref = pl.read_csv(
        DATA / "tauargus_primaries.csv", schema_overrides={"code1": pl.String, "code2": pl.String}
    )
    for k in (1, 2):
        job = jobs[k - 1]
        t = apply_rules(job.table, list(job.rules))
        expected = ref.filter(pl.col("table") == k)
        d1, d2 = t.dimensions
        # tau-ARGUS lists the cells it knows; every one of them is a cell of ours and back
        assert expected.height == t.n_cells
        for code1, code2, status, level in expected.select(
            "code1", "code2", "status", "level"
        ).iter_rows():
            c = t.cell(**{d1: code1, d2: code2})
            assert t.primary[c] == (status == "U"), t.cell_label(c)
            assert (t.status[c] == 3) == (status == "E")  # empty cells
            if status == "U":  # tau-ARGUS writes the levels rounded to the response's decimals
                assert abs(t.upper[c] - level) <= 1.0 and t.lower[c] == t.upper[c]
        assert int(t.primary.sum()) == int((expected["status"] == "U").sum())
    assert int(apply_rules(jobs[0].table, list(jobs[0].rules)).primary.sum()) == 11
    assert int(apply_rules(jobs[1].table, list(jobs[1].rules)).primary.sum()) == 5


def test_primaries_equal_the_rules_applied_by_hand(jobs: list[TableJob], batch_dir: Path) -> None:
    meta = read_rda(batch_dir / "testdata.rda")
    data = read_asc(batch_dir / "testdata.asc", meta)
    for job, rule, value in zip(jobs, HAND_RULES, ("income", "income", None), strict=True):
        t = apply_rules(job.table, list(job.rules))
        hand = _by_hand(data, t, rule, value)
        for c in range(t.n_cells):
            unsafe, level = hand[t.cell_label(c)]
            assert t.primary[c] == unsafe, t.cell_label(c)
            if unsafe:
                assert t.upper[c] == pytest.approx(level, rel=1e-9)
    t3 = apply_rules(jobs[2].table, list(jobs[2].rules))
    # roof 5 splits 10 / 9 by sex: unsafe; roof 9 (8 / 8) is a missing code and MIS(1) is set
    assert sorted(t3.cell_label(c) for c in np.flatnonzero(t3.primary)) == [
        "roof='5', sex='1'",
        "roof='5', sex='2'",
    ]


def test_the_batch_runs_as_table_jobs(jobs: list[TableJob]) -> None:
    for job in jobs[:2]:  # MOD and GH; the optimal method is tested with its own tests
        res = run_table_job(job)
        assert res.protected and not res.withheld
        assert res.suppression.n_secondary > 0
        for path in res.written:
            assert path.is_file() and path.suffix == ".csv"
    published = pl.read_csv(jobs[0].output_table)
    assert published.columns == ["water", "roof", "value", "suppressed", "symbol"]
    assert published["suppressed"].sum() >= 11


def test_load_arb_picks_one_table(batch_dir: Path) -> None:
    with pytest.raises(SdcError, match="specifies 3 tables"):
        load_arb(batch_dir / "testdata.arb")
    job = load_arb(batch_dir / "testdata.arb", table=2)
    assert job.table.dimensions == ("relat", "sex")
    with pytest.raises(SdcError, match="from 1 to 3"):
        load_arb(batch_dir / "testdata.arb", table=4)


# ---------------------------------------------------------------------- the readers
def test_read_hrc(tmp_path: Path) -> None:
    p = tmp_path / "r.hrc"
    p.write_text("Nr\n@ 1\n@ 2\nOs\n@ 3\n@@31\n@@32\n")
    h = read_hrc(p, total="NL")
    assert h.codes == ("NL", "Nr", "1", "2", "Os", "3", "31", "32")
    assert h.parent.tolist() == [-1, 0, 1, 1, 0, 4, 5, 5]
    p.write_text("A\n@@A1\n")
    with pytest.raises(SdcError, match=r"Line 2 .* more than one level deeper"):
        read_hrc(p)
    p.write_text("A\n@B\nB\n")
    with pytest.raises(SdcError, match=r"Line 3 .* second time"):
        read_hrc(p)
    p.write_text("A\n#A1\n")
    assert read_hrc(p, lead="#").codes == ("Total", "A", "A1")


def test_read_rda_fixed_and_free(tmp_path: Path) -> None:
    meta = read_rda(DATA / "testdata.rda")
    water = meta.variable("WATER")  # names are case-insensitive, as in tau-ARGUS
    assert (water.start, water.width, water.missing) == (4, 1, ("9",))
    assert water.hiercodelist == "water.hrc" and water.leadstring == "@"
    assert meta.weight is not None and meta.weight.name == "weight"
    free = tmp_path / "f.rda"
    free.write_text(
        '<SEPARATOR> ","\nRegion 2 99\n <RECODEABLE>\n <HIERARCHICAL>\n <HIERLEVELS> 1 1\n'
        "Turnover 8\n <NUMERIC>\n <DECIMALS> 2\n"
    )
    m = read_rda(free)
    assert m.separator == ","
    assert m.variables[0].hierlevels == (1, 1) and m.variables[0].start is None
    assert m.variables[1].decimals == 2
    asc = tmp_path / "f.asc"
    asc.write_text("11,10.5\n12,99\n21,3\n")
    frame = read_asc(asc, m)
    assert frame["Region"].to_list() == ["11", "12", "21"]
    assert frame["Turnover"].to_list() == [10.5, 99.0, 3.0]
    free.write_text("Region 1 2\n <RECODEABLE>\n <HOLDING>\n")
    with pytest.raises(SdcError, match=r"Line 3 .*HOLDING"):
        read_rda(free)
    free.write_text("Region 1 2\n <NOSUCH>\n")
    with pytest.raises(SdcError, match=r"Line 2 .*<NOSUCH>"):
        read_rda(free)
    free.write_text("Region one 2\n")
    with pytest.raises(SdcError, match=r"Line 1 .*start position and width"):
        read_rda(free)


def test_read_asc_errors_name_record_and_variable(tmp_path: Path) -> None:
    rda = tmp_path / "m.rda"
    rda.write_text("Region 1 2 99\n <RECODEABLE>\nIncome 3 4 9999\n <NUMERIC>\n")
    meta = read_rda(rda)
    asc = tmp_path / "m.asc"
    asc.write_text(" 1  10\n 29999\n 3 1x0\n")
    with pytest.raises(SdcError, match=r"Record 3 .*'Income'") as err:
        read_asc(asc, meta)
    assert "1x0" not in str(err.value)  # never the data value
    asc.write_text(" 1  10\n 29999\n")
    frame = read_asc(asc, meta)
    assert frame["Region"].to_list() == ["1", "2"]
    assert frame["Income"].to_list() == [10.0, None]  # the missing code
    asc.write_text(" 1\n")
    with pytest.raises(SdcError, match=r"Record 1 .*too short"):
        read_asc(asc, meta)


def test_parse_safety_rule() -> None:
    r = parse_safety_rule("NK(3,75)|NK(1,50)|P(15)|P(20,80,2)|FREQ(3,20)|ZERO(5)|MIS(1)|MAN(15)")
    assert r["dominance"] == [(3, 75.0), (1, 50.0)]
    assert r["pq"] == [(15.0, 100.0, 1), (20.0, 80.0, 2)]
    assert (r["min_frequency"], r["frequency_range"]) == (3, 20.0)
    assert r["zero_unsafe"] and r["zero_range"] == 5.0
    assert r["missing_safe"] and r["manual_range"] == 15.0
    assert parse_safety_rule("NK(0,0)|P(25,1)")["dominance"] == []  # NK(0,0): no rule
    with pytest.raises(SdcError, match="holding"):
        parse_safety_rule("NK(3,75)|NK(1,50)|NK(2,80)")
    with pytest.raises(SdcError, match="request rule"):
        parse_safety_rule("REQ(70,70,3,10)")
    with pytest.raises(SdcError, match="unknown rule"):
        parse_safety_rule("XYZ(1)")


def test_tau_argus_rule_on_a_hand_table() -> None:
    # contributions of the cells: a = [50, 30, 20] (total 100), b = [8, 1, 1] (total 10)
    t = Table.from_array(
        np.array([110.0, 100.0, 10.0]),
        {"x": ["a", "b"]},
        top=[[50, 30, 20], [50, 30, 20], [8, 1, 1]],
        n_contributors=[6, 3, 3],
    )
    # P(10, 2): two intruders together (x2 + x3) estimate x1; a: 10 % of 50 > 100 - 100
    out = TauArgusRule(pq=[(10.0, 100.0, 2)]).evaluate(t)
    assert out.unsafe.tolist() == [False, True, True]
    assert out.upper[1] == pytest.approx(5.0)  # 0.1 * 50 + (50 + 30 + 20) - 100
    assert out.upper[2] == 1.0  # 0.8, raised to the minimum level 10^-decimals = 1
    fine = TauArgusRule(pq=[(10.0, 100.0, 2)], minimum_level=0.01).evaluate(t)
    assert fine.upper[2] == pytest.approx(0.8)
    # FREQ only, with a minimum level of 1 (no decimals)
    out = TauArgusRule(min_frequency=4, frequency_range=5.0).evaluate(t)
    assert out.unsafe.tolist() == [False, True, True]
    assert out.upper.tolist() == [0.0, 5.0, 1.0]  # 5 % of 100; 5 % of 10 below 1
    # ZERO: a zero cell with contributors
    z = Table.from_array(
        np.array([10.0, 10.0, 0.0]), {"x": ["a", "b"]}, top=[[6, 4], [6, 4], [0, 0]],
        n_contributors=[4, 2, 2],
    )  # fmt: skip
    out = TauArgusRule(zero_unsafe=True, zero_range=3.0).evaluate(z)
    assert out.unsafe.tolist() == [False, False, True]
    assert (out.upper[2], out.lower[2]) == (3.0, 0.0)


def test_read_arb_commands(tmp_path: Path) -> None:
    p = tmp_path / "b.arb"
    p.write_text(
        "// a comment\n<LOGBOOK> log.txt\n"
        '<OPENMICRODATA> "C:\\\\data\\\\x.asc"\n<OPENMETADATA> "x.rda" // trailing comment\n'
        "<SPECIFYTABLE>\n"
        '"A""B"|"V"|"V"|-1\n<SAFETYRULE> NK(3,75)\n<READMICRODATA>\n<SUPPRESS> GH(1,75,0,0)\n'
        '<WRITETABLE> (1,3,AS-,"out.txt")\n<GOINTERACTIVE>\n'
    )
    b = read_arb(p)
    assert b.microdata == tmp_path / "x.asc"  # a Windows path is looked up next to the batch
    assert b.metadata == tmp_path / "x.rda"
    (t,) = b.tables
    assert (t.explanatory, t.response, t.shadow, t.cost) == (["A", "B"], "V", "V", "-1")
    assert t.safety_rule == "NK(3,75)" and t.suppress == ("GH", [1.0, 75.0, 0.0, 0.0])
    assert t.writes == [(3, "AS-", "out.txt")]
    p.write_text('<OPENTABLEDATA> "t.tab"\n')
    with pytest.raises(SdcError, match=r"Line 1 .*<OPENTABLEDATA> is not supported"):
        read_arb(p)
    p.write_text('<SPECIFYTABLE> "A"|"V"\n<SUPPRESS> RND(1,5)\n')
    with pytest.raises(SdcError, match=r"Line 2 .*RND"):
        read_arb(p)
    p.write_text('<SPECIFYTABLE> "A"|"V"\n<SUPPRESS> MOD(2)\n')
    with pytest.raises(SdcError, match="names table 2"):
        read_arb(p)


def test_translation_errors(batch_dir: Path, tmp_path: Path) -> None:
    for name in ("testdata.rda", "water.hrc", "testdata.asc"):
        shutil.copy(batch_dir / name, tmp_path / name)
    arb = tmp_path / "x.arb"
    head = '<OPENMICRODATA> "testdata.asc"\n<OPENMETADATA> "testdata.rda"\n'
    arb.write_text(head + '<SPECIFYTABLE> "roof"|<freq>\n<SAFETYRULE> P(15,1)\n')
    with pytest.raises(SdcError, match="frequency table"):
        load_arb_jobs(arb)
    arb.write_text(head + '<SPECIFYTABLE> "income"|"income"\n<SAFETYRULE> P(15,1)\n')
    with pytest.raises(SdcError, match="not <RECODEABLE>"):
        load_arb_jobs(arb)
    arb.write_text(head + '<SPECIFYTABLE> "nosuch"|"income"\n')
    with pytest.raises(SdcError, match="'nosuch' is not described"):
        load_arb_jobs(arb)
    arb.write_text('<SPECIFYTABLE> "roof"|"income"\n')
    with pytest.raises(SdcError, match="OPENMICRODATA"):
        load_arb_jobs(arb)
    with pytest.raises(SdcError, match=r"\.arb"):
        load_arb_jobs(tmp_path / "testdata.rda")

"""``sdckit table BATCH.arb``: a tau-ARGUS batch file run as table jobs from the command line."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli.app import app
from sdckit.jobs import run_table_job
from sdckit.jobs.tauargus import load_arb, load_arb_jobs, run_arb_job
from sdckit.tables import audit

DATA = Path(__file__).resolve().parents[1] / "tables" / "data" / "tauargus"
runner = CliRunner()


def run(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def write_asc(src: Path, target: Path) -> None:
    """sdcMicro's testdata as the fixed-format .asc file that testdata.rda describes."""
    df = pl.read_csv(src)
    with target.open("w") as f:
        for r in df.iter_rows(named=True):
            f.write(
                f"{r['urbrur']}{r['roof']}{r['walls']}{r['water']}{r['relat']}{r['sex']}"
                f"{round(r['income']):>10d}{r['sampling_weight']:>4d}\n"
            )


@pytest.fixture(scope="module")
def asc(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Path:
    path = tmp_path_factory.mktemp("asc") / "testdata.asc"
    write_asc(shared_data / "testdata.csv", path)
    return path


def batch_copy(target: Path, asc: Path, name: str = "testdata.arb") -> Path:
    """The example batch with its .rda, .hrc and .asc in ``target`` (outputs go to out/)."""
    target.mkdir(parents=True, exist_ok=True)
    for file in ("testdata.rda", "water.hrc"):
        shutil.copy(DATA / file, target / file)
    shutil.copy(asc, target / "testdata.asc")
    shutil.copy(DATA / "testdata.arb", target / name)
    return target / name


def assert_one_line_error(code: int, stdout: str, stderr: str, *needles: str) -> None:
    assert code == 2, (stdout, stderr)
    assert "Traceback" not in stdout + stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("Error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_batch_runs_every_table_as_the_api_does(tmp_path: Path, asc: Path) -> None:
    arb = batch_copy(tmp_path / "cli", asc, name="TestData.ARB")  # the suffix in any case
    code, stdout, stderr = run("table", arb)
    assert code == 0, stderr
    assert "Traceback" not in stdout + stderr
    text = "".join(stdout.split())  # rich wraps long lines, paths included

    def squash(s: str) -> str:
        return "".join(s.split())

    # every table in order, each followed by what it wrote
    titles = [squash(f"tau-ARGUS batch TestData.ARB, table {k}") for k in (1, 2, 3)]
    at = [text.index(t) for t in titles]
    assert at == sorted(at)
    expected = {
        1: ["out/water_roof_status.csv", "out/water_roof.csv"],
        2: ["out/relat_sex.txt"],  # <WRITETABLE> (2,3,...): a code-value file
        3: ["out/roof_sex.csv"],
    }
    ends = [*at[1:], len(text)]
    for k, files in expected.items():
        block = text[at[k - 1] : ends[k - 1]]
        assert squash("every suppressed cell protected") in block
        for name in files:
            assert squash(f"Wrote {arb.parent / name}") in block, (k, name)
    assert text.count("Wrote") == 4
    # the same batch through load_arb + run_arb_job (another folder: its own outputs)
    direct_arb = batch_copy(tmp_path / "api", asc)
    jobs = load_arb_jobs(direct_arb)
    assert len(jobs) == 3
    for k, job in enumerate(jobs, start=1):
        assert load_arb(direct_arb, table=k).writes == job.writes
        res = run_arb_job(job)
        assert res.protected and not res.withheld
        for written in res.written:
            mine = arb.parent / written.relative_to(direct_arb.parent)
            assert mine.read_text() == written.read_text(), mine
        # the published table hides every primary (and secondary) cell, and the audit of
        # the pattern passes
        checked = audit(res.table, intervals="exact", insider=False)
        assert checked.ok and len(checked.under_protected) == 0
        assert int(res.table.primary.sum()) > 0
        suppressed = res.table.suppressed
        for kind, _options, path in job.writes:
            lines = path.read_text().splitlines()
            if kind == 1:  # the table as tau-ARGUS shows it: "x" where suppressed
                cells = [f for line in lines[1:] for f in line.split(",")[1:]]
                assert cells == ["x" if s else c for s, c in zip(suppressed, cells, strict=True)]
                assert cells.count("x") == int(suppressed.sum())
            else:  # pivot (names first) or code-value: codes, value ("x" where suppressed)
                values = [line.rsplit(",", 1)[1] for line in lines[1 if kind == 2 else 0 :]]
                assert [v == "x" for v in values] == suppressed.tolist()


def test_an_unsupported_batch_command_is_one_line(tmp_path: Path, asc: Path) -> None:
    arb = batch_copy(tmp_path, asc)
    text = arb.read_text(encoding="utf-8")
    arb.write_text(text.replace("<SUPPRESS> GH(2,100,0,1)", "<SUPPRESS> CTA(2)"), "utf-8")
    code, stdout, stderr = run("table", arb)
    assert_one_line_error(code, stdout, stderr, "Line 15", "'testdata.arb'", "CTA is not supported")
    assert not (tmp_path / "out").exists()  # refused before the first table runs
    arb.write_text(text.replace("<SUPPRESS> GH(2,100,0,1)", "<SUPPRESS> RND(2,1)"), "utf-8")
    assert_one_line_error(*run("table", arb), "table 2", "RND", "frequency tables")
    # microdata metadata read as a table's: the first variable line has a start and width
    arb.write_text(text.replace("<OPENMICRODATA>", "<OPENTABLEDATA>"), "utf-8")
    assert_one_line_error(*run("table", arb), "'testdata.rda'", "at most two missing codes")
    assert_one_line_error(*run("table", tmp_path / "none.arb"), "'none.arb' does not exist")
    assert not (tmp_path / "out").exists()


def test_a_failed_audit_in_a_batch_withholds_that_table(
    tmp_path: Path, asc: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sdckit.tables import OptimalSuppression
    from sdckit.tables.suppression._common import make_result

    def no_secondaries(self, table):  # a method that gives back the primaries alone
        return make_result(table, table, "optimal", table.values, False, 0.0, None)

    # table 3 (roof x sex, counts) is linked with no other table of the batch
    monkeypatch.setattr(OptimalSuppression, "apply", no_secondaries)
    arb = batch_copy(tmp_path, asc)
    text = arb.read_text(encoding="utf-8")  # table 3 written as published (no status)
    arb.write_text(text.replace('(3,1,AS+,"out/roof_sex.csv")', '(3,1,AS-,"out/roof_sex.csv")'))
    code, stdout, stderr = run("table", arb)
    assert code == 1, (stdout, stderr)
    assert "Traceback" not in stdout + stderr
    assert "table 3: the audit found" in stderr and "Do not publish" in stderr
    assert not (tmp_path / "out" / "roof_sex.csv").exists()
    # the other tables ran and wrote their outputs
    for name in ("water_roof.csv", "water_roof_status.csv", "relat_sex.txt"):
        assert (tmp_path / "out" / name).is_file()
    # a CSV file (kind 1) shows no suppressed value, with AS+ too: it is published, withheld
    arb.write_text(text)  # (3,1,AS+,"out/roof_sex.csv")
    code, stdout, stderr = run("table", arb)
    assert code == 1 and not (tmp_path / "out" / "roof_sex.csv").exists()


LINKED_BATCH = """// two count tables of one file: they share the water margin and the total
<OPENMICRODATA> "testdata.asc"
<OPENMETADATA> "testdata.rda"
<SPECIFYTABLE> "water""roof"|<freq>
<SAFETYRULE> FREQ(40,20)
<SPECIFYTABLE> "water""relat"|<freq>
<SAFETYRULE> FREQ(40,20)
<READMICRODATA>
<SUPPRESS> MOD(1,5,1,0,0)
<WRITETABLE> (1,2,,"out/water_roof.csv")
<SUPPRESS> MOD(2,5,1,0,0)
<WRITETABLE> (2,2,,"out/water_relat.csv")
"""


def test_tables_of_one_file_are_protected_together(tmp_path: Path, asc: Path) -> None:
    """Protected one by one, the two tables suppress a water-margin cell in one table and
    publish it in the other, which leaves primaries short in the joint audit; the batch run
    protects them as linked tables: the common cells agree and the joint audit passes."""
    from sdckit.jobs import run_table_jobs
    from sdckit.tables import LinkedTables

    arb = batch_copy(tmp_path / "cli", asc, name="linked.arb")
    arb.write_text(LINKED_BATCH, encoding="utf-8")
    jobs = load_arb_jobs(arb)
    alone = [run_table_job(job, write=False) for job in jobs]
    assert all(res.protected for res in alone)  # each table on its own passes its audit
    apart = LinkedTables([res.table for res in alone])
    assert not apart.consistent
    assert not apart.audit().ok  # a common cell published in one table gives it away
    code, stdout, stderr = run("table", arb)
    assert code == 0, stderr
    text = " ".join(stdout.split())
    assert text.count("protected together with") == 2
    assert text.count("joint audit of the linked tables │ passed") == 2
    together = run_table_jobs(jobs, write=False)
    linked = LinkedTables([res.table for res in together])
    assert linked.consistent and linked.audit().ok
    assert [res.suppression.details["linked_with"] for res in together] == [[1], [0]]
    assert all(res.protected for res in together)
    # the published files hide exactly the suppressed cells, the same common cells in both
    hidden = []
    for res, name in zip(together, ("water_roof.csv", "water_relat.csv"), strict=True):
        published = pl.read_csv(arb.parent / "out" / name, infer_schema=False)
        assert (published["Freq"] == "x").to_list() == res.table.suppressed.tolist()
        hidden.append(published)
    margin = [
        (frame.filter(pl.col(other) == "Total").sort("water")["Freq"] == "x").to_list()
        for frame, other in zip(hidden, ("roof", "relat"), strict=True)
    ]
    assert margin[0] == margin[1] and any(margin[0])


def test_an_error_in_a_later_table_leaves_no_file(
    tmp_path: Path, asc: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every table of a run is protected before the first output is written: an error in
    the last table (here its method raises) leaves the folder empty and names the job."""
    from sdckit.errors import InfeasibleError
    from sdckit.tables import OptimalSuppression

    def refuse(self, table):
        raise InfeasibleError("no pattern protects this table")

    monkeypatch.setattr(OptimalSuppression, "apply", refuse)
    arb = batch_copy(tmp_path, asc)  # table 3 (roof x sex) uses OPT
    code, stdout, stderr = run("table", arb)
    assert_one_line_error(code, stdout, stderr, "table 3", "no pattern protects")
    assert not (tmp_path / "out").exists()

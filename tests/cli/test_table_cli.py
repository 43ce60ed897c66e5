"""End-to-end tests of ``sdckit table JOB.toml``: rules, secondary suppression, audit, outputs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from sdckit.cli.app import app
from sdckit.datasets import generate_census
from sdckit.io import read_data, write_data

runner = CliRunner()


def run(*args: str | Path) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def census_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tables") / "census.csv"
    write_data(generate_census(1500, seed=5), path)
    return path


def job_text(data: Path) -> str:
    return textwrap.dedent(
        f"""
        title = "Persons by region and occupation"
        [input]
        file = "{data.as_posix()}"
        [table]
        dimensions = ["region", "occupation"]
        [[rules]]
        rule = "min_frequency"
        threshold = 3
        [suppression]
        method = "optimal"
        [audit]
        [output]
        table = "out/published.csv"
        table_full = "out/full.csv"
        """
    )


def assert_one_line_error(code: int, stdout: str, stderr: str, *needles: str) -> None:
    assert code == 2, (stdout, stderr)
    assert "Traceback" not in stdout + stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("Error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_table_job_suppresses_small_cells_and_passes_the_audit(
    tmp_path: Path, census_csv: Path
) -> None:
    job = tmp_path / "job.toml"
    job.write_text(job_text(census_csv), encoding="utf-8")
    code, stdout, stderr = run("table", job)
    assert code == 0, stderr
    assert "every suppressed cell protected" in stdout
    full = read_data(tmp_path / "out" / "full.csv")
    published = read_data(tmp_path / "out" / "published.csv")
    # the interior cells, recomputed from the microdata
    counts = read_data(census_csv).group_by("region", "occupation").len()
    interior = full.filter(~pl.col("is_total")).join(
        counts, on=["region", "occupation"], how="left"
    )
    assert (interior["value"] == interior["len"].fill_null(0)).all()
    small = interior.filter((pl.col("len") > 0) & (pl.col("len") < 3))
    assert small.height > 0
    assert (small["status"] == "primary").all()
    # every primary and secondary cell is missing in the published table with the symbol x,
    # every empty cell with the symbol -, no other cell
    hidden = full["status"].is_in(["primary", "secondary"])
    empty = full["status"] == "empty"
    assert full.filter(pl.col("status") == "secondary").height > 0 and empty.any()
    assert published.height == full.height
    assert published["value"].is_null().to_list() == (hidden | empty).to_list()
    symbols = published["symbol"].fill_null("").to_list()
    assert symbols == ["x" if h else "-" if e else "" for h, e in zip(hidden, empty, strict=True)]


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        (('rule = "min_frequency"', 'rule = "min_freq"'), ("rule 1", "'min_freq'")),
        (("threshold = 3", 'threshold = "3"'), ("rule 1", "'threshold'", "int")),
        (("threshold = 3", "treshold = 3"), ("has no parameter 'treshold'", "'threshold'")),
        (('"occupation"]', '"ocupation"]'), ("'ocupation'", "'occupation'")),
        (('method = "optimal"', 'method = "best"'), ("[suppression]", "'best'")),
        (('method = "optimal"', 'method = "optimal"\nmax_passes = 3'), ("'max_passes'",)),
        (("[audit]", "[audit]\nintegers = true"), ("[audit]", "'integers'")),
        (('table = "out/published.csv"', 'table = "out/published.xlsx"'), (".csv or .parquet",)),
    ],
)
def test_bad_table_jobs_exit_2_before_any_work(
    tmp_path: Path, census_csv: Path, change: tuple[str, str], needles: tuple[str, ...]
) -> None:
    text = job_text(census_csv)
    assert change[0] in text
    job = tmp_path / "job.toml"
    job.write_text(text.replace(*change), encoding="utf-8")
    assert_one_line_error(*run("table", job), *needles)
    assert not (tmp_path / "out").exists()


def test_missing_files(tmp_path: Path) -> None:
    assert_one_line_error(*run("table", tmp_path / "none.toml"), "does not exist")
    job = tmp_path / "job.toml"
    job.write_text(job_text(tmp_path / "nothing.csv"), encoding="utf-8")
    assert_one_line_error(*run("table", job), "nothing.csv", "does not exist")


def test_published_table_has_one_symbol_and_reports_are_written(
    tmp_path: Path, census_csv: Path
) -> None:
    text = job_text(census_csv).replace(
        'table_full = "out/full.csv"',
        'table_full = "out/full.csv"\nreport_internal = "out/internal.html"\n'
        'report_external = "out/external.html"',
    )
    job = tmp_path / "job.toml"
    job.write_text(text, encoding="utf-8")
    code, _, stderr = run("table", job)
    assert code == 0, stderr
    published = (tmp_path / "out" / "published.csv").read_text(encoding="utf-8")
    assert published.splitlines()[0] == "region,occupation,value,suppressed,symbol"
    assert "primary" not in published and "secondary" not in published
    external = (tmp_path / "out" / "external.html").read_text(encoding="utf-8")
    internal = (tmp_path / "out" / "internal.html").read_text(encoding="utf-8")
    assert "primary" not in external and 'class="cell primary"' in internal


def test_job_without_audit_section_audits_and_withholds_an_unprotected_pattern(
    tmp_path: Path, census_csv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sdckit.tables import OptimalSuppression
    from sdckit.tables.suppression._common import make_result

    def no_secondaries(self, table):  # a method that gives back the primaries alone
        return make_result(table, table, "optimal", table.values, False, 0.0, None)

    monkeypatch.setattr(OptimalSuppression, "apply", no_secondaries)
    text = (
        job_text(census_csv)
        .replace("[audit]\n", "")
        .replace(
            'table_full = "out/full.csv"',
            'table_full = "out/full.csv"\nreport_external = "out/external.html"',
        )
    )
    assert "[audit]" not in text
    job = tmp_path / "job.toml"
    job.write_text(text, encoding="utf-8")
    code, stdout, stderr = run("table", job)
    assert code == 1, (stdout, stderr)
    assert "Do not publish" in stderr and "Traceback" not in stdout + stderr
    assert "audit (check mode)" in stdout and "FAILED" in stdout
    assert not (tmp_path / "out" / "published.csv").exists()
    assert not (tmp_path / "out" / "external.html").exists()
    assert (tmp_path / "out" / "full.csv").exists()  # the internal export, for the diagnosis


@pytest.mark.parametrize("key", ["table", "table_full"])
def test_an_output_that_is_the_input_is_refused(tmp_path: Path, census_csv: Path, key: str) -> None:
    before = census_csv.read_bytes()
    text = job_text(census_csv).replace(
        f'{key} = "out/{"published" if key == "table" else "full"}.csv"',
        f'{key} = "{census_csv.as_posix()}"',
    )
    job = tmp_path / "job.toml"
    job.write_text(text, encoding="utf-8")
    assert_one_line_error(*run("table", job), f"[output] '{key}' file is the input file")
    assert census_csv.read_bytes() == before
    same = job_text(census_csv).replace('"out/full.csv"', '"out/published.csv"')
    job.write_text(same, encoding="utf-8")
    assert_one_line_error(*run("table", job), "are the same file")


def test_missing_dimension_codes_in_a_job(tmp_path: Path) -> None:
    data = tmp_path / "people.csv"
    rows = ["region,occupation"] + [f"r{i % 3},o{i % 4}" for i in range(60)] + [",o1", "r1,"]
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    job = tmp_path / "job.toml"
    job.write_text(job_text(data), encoding="utf-8")
    assert_one_line_error(*run("table", job), "'region'", 'missing = "category"')
    for mode in ("category", "drop"):
        text = job_text(data).replace(
            'dimensions = ["region", "occupation"]',
            f'dimensions = ["region", "occupation"]\nmissing = "{mode}"',
        )
        job.write_text(text, encoding="utf-8")
        code, stdout, stderr = run("table", job)
        assert code == 0, stderr
        full = read_data(tmp_path / "out" / "full.csv")
        if mode == "category":
            assert "(missing)" in full["region"].to_list()
            assert "(missing)" in full["occupation"].to_list()
        else:
            assert "records dropped" in stdout
            assert full.filter(pl.col("is_total").not_())["value"].sum() == 60
    bad = job_text(data).replace(
        'dimensions = ["region", "occupation"]',
        'dimensions = ["region", "occupation"]\nmissing = "skip"',
    )
    job.write_text(bad, encoding="utf-8")
    assert_one_line_error(*run("table", job), "'missing'")


def test_an_infeasible_table_names_cells_by_position(tmp_path: Path) -> None:
    data = tmp_path / "cells.csv"
    # an empty cell marked unsafe whose total and sibling are empty too (no contributors):
    # empty cells are never suppressed, so no pattern protects it
    data.write_text("g,v,n\nTotal,0,0\nsecretcode,0,0\nother,0,0\n", encoding="utf-8")
    job = tmp_path / "job.toml"
    job.write_text(
        textwrap.dedent(
            f"""
            [input]
            file = "{data.as_posix()}"
            kind = "cells"
            [table]
            dimensions = ["g"]
            value = "v"
            n_contributors = "n"
            [[rules]]
            rule = "marked_cells"
            cells = [1]
            upper = 1000
            lower = 0
            [suppression]
            method = "optimal"
            [output]
            table = "out/published.csv"
            """
        ),
        encoding="utf-8",
    )
    code, stdout, stderr = run("table", job)
    assert code == 2, (stdout, stderr)
    assert "cell 1 (position 1 in 'g')" in stderr
    assert "along 'g' has no other cell that may be suppressed" in stderr
    assert "secretcode" not in stderr and "Traceback" not in stderr
    assert not (tmp_path / "out").exists()


def test_several_jobs_on_one_file_are_protected_together(tmp_path: Path, census_csv: Path) -> None:
    """``sdckit table A.toml B.toml``: two tables of the same records (region x occupation,
    region x sex: the region margin is common) are protected as linked tables, so every
    common cell has the same symbol in both published files and the joint audit passes."""
    from sdckit.jobs import load_table_job, run_table_jobs
    from sdckit.tables import LinkedTables

    first = tmp_path / "a.toml"
    first.write_text(job_text(census_csv), encoding="utf-8")
    second = tmp_path / "b.toml"
    text = job_text(census_csv).replace('"occupation"]', '"sex"]').replace("out/", "out/b_")
    second.write_text(text.replace("threshold = 3", "threshold = 60"), encoding="utf-8")
    code, stdout, stderr = run("table", first, second)
    assert code == 0, stderr
    assert stdout.count("every suppressed cell protected") == 2
    a = read_data(tmp_path / "out" / "full.csv")
    b = read_data(tmp_path / "out" / "b_full.csv")
    margin_a = a.filter(pl.col("occupation") == "Total").sort("region")["status"]
    margin_b = b.filter(pl.col("sex") == "Total").sort("region")["status"]
    hidden_a = margin_a.is_in(["primary", "secondary"]).to_list()
    assert hidden_a == margin_b.is_in(["primary", "secondary"]).to_list()
    assert any(hidden_a)  # the rule of 60 makes the Islands margin (51) primary
    jobs = [load_table_job(first), load_table_job(second)]
    results = run_table_jobs(jobs, write=False)
    assert LinkedTables([r.table for r in results]).audit().ok
    # run alone, the first job publishes the Islands margin that the second hides
    from sdckit.jobs import run_table_job

    alone = [run_table_job(job, write=False).table for job in jobs]
    assert not LinkedTables(alone).audit().ok
    assert results[0].suppression.details["linked_with"] == [1]
    # two jobs writing the same file are refused before any work
    second.write_text(job_text(census_csv).replace('"occupation"]', '"sex"]'), "utf-8")
    assert_one_line_error(*run("table", first, second), "write the same file")


def _linked_jobs(tmp_path: Path, data: Path, scheme: str | None, method: str = "gauss") -> list:
    texts = []
    for name, dims in (("a", '"region", "occupation"'), ("b", '"region", "sex", "age_group"')):
        text = job_text(data).replace('"region", "occupation"', dims)
        text = text.replace('method = "optimal"', f'method = "{method}"')
        if scheme is not None:
            text = text.replace(f'method = "{method}"', f'method = "{method}"\nlinked = "{scheme}"')
        path = tmp_path / f"{name}.toml"
        path.write_text(text.replace("out/", f"out/{name}_"), encoding="utf-8")
        texts.append(path)
    return texts


@pytest.mark.parametrize(
    ("scheme", "kwargs"),
    [
        ("joint_elimination", {"joint_elimination": True}),
        ("secondaries_as_primary", {"secondaries_as_primary": True}),
        (None, {}),
    ],
)
def test_linked_scheme_of_a_batch_is_that_of_linked_tables(
    tmp_path: Path, census_csv: Path, scheme: str | None, kwargs: dict
) -> None:
    """``[suppression] linked`` picks the scheme of LinkedTables.protect: the batch of two jobs
    on one file gives the pattern of ``LinkedTables.from_microdata(...).protect(...)`` on the
    same records (for the joint elimination the job reads the records again for their code
    combinations), and the CLI writes it."""
    from sdckit.jobs import load_table_job, run_table_jobs
    from sdckit.tables import GaussSuppression, LinkedTables, MinFrequency, apply_rules

    paths = _linked_jobs(tmp_path, census_csv, scheme)
    results = run_table_jobs([load_table_job(p) for p in paths], write=False)
    frame = read_data(census_csv, text_columns=["region", "occupation", "sex", "age_group"])
    ref = LinkedTables.from_microdata(
        frame, [["region", "occupation"], ["region", "sex", "age_group"]]
    )
    marked = ref.with_tables([apply_rules(t, [MinFrequency(threshold=3)]) for t in ref.tables])
    expected = marked.protect(GaussSuppression(), **kwargs)
    assert expected.protected
    for got, want in zip(results, expected.tables, strict=True):
        assert got.table.status.tolist() == want.status.tolist()
        assert got.audit.ok
        assert got.suppression.details["linked_scheme"] == (scheme or "iterative")
    if scheme == "joint_elimination":
        assert "joint_elimination" in expected.details
    code, stdout, stderr = run("table", *paths)
    assert code == 0, stderr
    assert stdout.count((scheme or "iterative").replace("_", " ")) == 2  # one per table
    written = read_data(
        tmp_path / "out" / "b_full.csv", text_columns=["region", "sex", "age_group"]
    )
    assert int(written["status"].is_in(["primary", "secondary"]).sum()) == int(
        results[1].table.suppressed.sum()
    )


def test_linked_scheme_errors(tmp_path: Path, census_csv: Path) -> None:
    """A scheme that is not one, two schemes in one group, and the joint elimination on
    tables of two different files: one-line errors before any output."""
    paths = _linked_jobs(tmp_path, census_csv, "global")
    assert_one_line_error(*run("table", *paths), "'linked' must be one of", "joint_elimination")
    paths = _linked_jobs(tmp_path, census_csv, "joint_elimination")
    paths[1].write_text(
        paths[1].read_text("utf-8").replace("joint_elimination", "iterative"), encoding="utf-8"
    )
    assert_one_line_error(*run("table", *paths), "'linked' differs", "same value")
    copy = tmp_path / "copy.csv"
    copy.write_bytes(census_csv.read_bytes())
    paths = _linked_jobs(tmp_path, census_csv, "joint_elimination")
    paths[1].write_text(
        paths[1].read_text("utf-8").replace(census_csv.as_posix(), copy.as_posix()), "utf-8"
    )
    assert_one_line_error(*run("table", *paths), "one microdata file")
    assert not (tmp_path / "out").exists()


def _gauss_job(path: Path, data: Path, dims: str, threshold: int, suppression: str,
               outputs: str) -> Path:  # fmt: skip
    """A table job on ``data``: minimum frequency ``threshold``, the Gauss method with the
    extra ``suppression`` lines, the ``outputs`` lines."""
    path.write_text(
        textwrap.dedent(
            f"""
            title = "{path.stem}"
            [input]
            file = "{data.as_posix()}"
            [table]
            dimensions = {dims}
            [[rules]]
            rule = "min_frequency"
            threshold = {threshold}
            [suppression]
            method = "gauss"
            """
        )
        + f"{suppression}\n[output]\n{outputs}\n",
        encoding="utf-8",
    )
    return path


def test_joint_elimination_reads_every_table_code_as_text(tmp_path: Path) -> None:
    """Codes that read as numbers would change ("1.10" would become 1.1) in a variable of the
    second job only: the records read again for the joint elimination read every table's
    codes as text, as the jobs did, so the atoms match the tables."""
    import numpy as np

    rng = np.random.default_rng(3)
    n = 300
    frame = pl.DataFrame(
        {
            "region": [f"{r:02d}" for r in rng.integers(1, 4, n)],
            "sex": rng.choice(["1", "2"], n).tolist(),
            "branch": [f"{b}.{b}0" for b in rng.integers(1, 8, n)],
        }
    )
    data = tmp_path / "firms.csv"
    frame.write_csv(data)
    paths = [
        _gauss_job(tmp_path / f"{name}.toml", data, dims, 10, 'linked = "joint_elimination"',
                   f'table_full = "out/{name}.csv"')
        for name, dims in (("a", '["region", "sex"]'), ("b", '["region", "branch"]'))
    ]  # fmt: skip
    code, stdout, stderr = run("table", *paths)
    assert code == 0, stderr
    written = read_data(tmp_path / "out" / "b.csv", text_columns=["region", "branch"])
    assert set(written["branch"].to_list()) >= {"1.10", "7.70", "Total"}
    assert stdout.count("joint elimination") == 2


def _cycle_jobs(tmp_path: Path, scheme: str, joint_audit: str = "atoms") -> list[Path]:
    """sex x age, age x region, region x sex of 18 records in four code combinations."""
    rows = []
    for (sex, age, region), n in {
        ("f", "y", "a"): 3,
        ("m", "o", "a"): 4,
        ("f", "o", "b"): 5,
        ("m", "y", "b"): 6,
    }.items():
        rows += [{"sex": sex, "age": age, "region": region}] * n
    data = tmp_path / "cycle.csv"
    pl.DataFrame(rows).write_csv(data)
    return [
        _gauss_job(
            tmp_path / f"{scheme}_{name}.toml", data, dims, 4,
            f'linked = "{scheme}"\nlinked_audit = "{joint_audit}"',
            f'table = "out/{scheme}_{name}.csv"\ntable_full = "out/{scheme}_{name}_full.csv"',
        )
        for name, dims in (("sa", '["sex", "age"]'), ("ar", '["age", "region"]'),
                           ("rs", '["region", "sex"]'))
    ]  # fmt: skip


def test_linked_audit_over_the_atoms_withholds_what_the_cycle_discloses(tmp_path: Path) -> None:
    """Three tables whose variables overlap in a cycle, minimum frequency 4.  The iterative
    scheme passes the tables' joint audit, but an intruder who knows the four code
    combinations of the records computes three primaries: with ``linked_audit = "atoms"``
    no published table is written and the status is 1 (the internal files are).  The joint
    elimination's pattern passes that audit and is published."""
    from sdckit.jobs import load_table_job, run_table_jobs

    paths = _cycle_jobs(tmp_path, "iterative")
    results = run_table_jobs([load_table_job(p) for p in paths], write=False)
    assert all(r.audit.ok and not r.protected for r in results)
    assert results[0].suppression.details["atom_audit_under_protected"] == 3
    code, stdout, stderr = run("table", *paths)
    assert code == 1
    assert "code combinations found 3 under-protected" in stderr
    assert "Traceback" not in stderr
    out = tmp_path / "out"
    assert not any((out / f"iterative_{n}.csv").exists() for n in ("sa", "ar", "rs"))
    assert all((out / f"iterative_{n}_full.csv").exists() for n in ("sa", "ar", "rs"))
    paths = _cycle_jobs(tmp_path, "joint_elimination")
    code, stdout, stderr = run("table", *paths)
    assert code == 0, stderr
    assert "FAILED" not in stdout
    joint = run_table_jobs([load_table_job(p) for p in paths], write=False)
    assert all(r.protected for r in joint)
    assert joint[0].suppression.details["atom_audit_under_protected"] == 0
    assert all((out / f"joint_elimination_{n}.csv").exists() for n in ("sa", "ar", "rs"))


def test_linked_audit_by_the_rank_test_withholds_the_computable_primaries(tmp_path: Path) -> None:
    """``linked_audit = "atoms_exact"``: the rank test over the records' code combinations
    (no LP) finds the three primaries of the cycle exactly computable from the iterative
    pattern (the ones the LP audit over the atoms finds), and passes the joint elimination's."""
    from sdckit.jobs import load_table_job, run_table_jobs

    paths = _cycle_jobs(tmp_path, "iterative", "atoms_exact")
    results = run_table_jobs([load_table_job(p) for p in paths], write=False)
    assert all(r.audit.ok and not r.protected for r in results)
    assert results[0].suppression.details["atom_audit_computable"] == 3
    code, stdout, stderr = run("table", *paths)
    assert code == 1 and "code combinations found 3 exactly computable" in stderr
    assert "exact disclosure only" in stdout
    assert not (tmp_path / "out" / "iterative_sa.csv").exists()
    paths = _cycle_jobs(tmp_path, "joint_elimination", "atoms_exact")
    code, stdout, stderr = run("table", *paths)
    assert code == 0, stderr
    joint = run_table_jobs([load_table_job(p) for p in paths], write=False)
    assert all(r.protected for r in joint)
    assert joint[0].suppression.details["atom_audit_computable"] == 0


def _rank_job(tmp_path: Path, data: Path, levels: bool = False) -> Path:
    """A Gauss job audited by the rank test: minimum frequency 3 without protection levels
    (unless ``levels``), no LP repair."""
    text = job_text(data).replace(
        "threshold = 3\n",
        "threshold = 3\n" + ("" if levels else "safety_range = 0\nminimum_level = 0\n"),
    )
    text = text.replace('method = "optimal"\n', 'method = "gauss"\nrepair_limit = 0\n')
    text = text.replace("[audit]\n", '[audit]\nintervals = "rank"\n')
    job = tmp_path / "job.toml"
    job.write_text(text, encoding="utf-8")
    return job


def test_the_rank_test_audits_a_gauss_pattern_and_says_what_it_checked(
    tmp_path: Path, census_csv: Path
) -> None:
    from sdckit.jobs import load_table_job, run_table_job
    from sdckit.tables import audit

    job = _rank_job(tmp_path, census_csv)
    job.write_text(
        job.read_text(encoding="utf-8").replace(
            'table = "out/published.csv"\n',
            'table = "out/published.csv"\nreport_internal = "out/internal.html"\n'
            'report_external = "out/external.html"\n',
        ),
        encoding="utf-8",
    )
    code, stdout, stderr = run("table", job)
    assert code == 0, (stdout, stderr)
    assert "rank test (exact disclosure only" in stdout and "no primary computable" in stdout
    assert (tmp_path / "out" / "published.csv").exists()
    # the reports show the rank test's verdict (no LP audit run for them)
    internal = (tmp_path / "out" / "internal.html").read_text(encoding="utf-8")
    assert "Audited by the rank test" in internal
    assert "no primary can be computed exactly" in internal
    assert "feasibility interval: the smallest" not in internal
    external = (tmp_path / "out" / "external.html").read_text(encoding="utf-8")
    assert "rank test of the published cells" in external
    assert "none of\nthem can be computed exactly" in external
    # the same job's pattern, audited independently by LP: no primary has a point interval
    stages: list[tuple[str, int, int]] = []
    res = run_table_job(
        load_table_job(job), write=False, progress=lambda *call: stages.append(call)
    )
    assert res.audit.intervals == "rank" and res.audit.ok
    # the rank test reports its progress inside the audit stage
    rank = [call for call in stages if call[0] == "Audit: rank test"]
    assert rank and rank[-1][1] == rank[-1][2] > 0
    lp = audit(res.table, primaries_only=True, insider=False)
    primary = res.table.primary[lp.cells]
    assert primary.sum() > 0 and not lp.exact[primary].any()


def test_the_rank_test_withholds_a_pattern_that_gives_a_primary(
    tmp_path: Path, census_csv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sdckit.tables import GaussSuppression
    from sdckit.tables.suppression._common import make_result

    def no_secondaries(self, table):  # the primaries alone
        return make_result(table, table, "gauss", table.values, False, 0.0, None)

    monkeypatch.setattr(GaussSuppression, "apply", no_secondaries)
    code, stdout, stderr = run("table", _rank_job(tmp_path, census_csv))
    assert code == 1, (stdout, stderr)
    assert "exactly computable primary cell(s)" in stderr and "Do not publish" in stderr
    assert "FAILED" in stdout
    assert not (tmp_path / "out" / "published.csv").exists()


def test_the_rank_test_refuses_protection_levels_before_the_suppression(
    tmp_path: Path, census_csv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sdckit.tables import GaussSuppression

    def never(self, table):
        raise AssertionError("the suppression ran")

    monkeypatch.setattr(GaussSuppression, "apply", never)
    job = _rank_job(tmp_path, census_csv, levels=True)
    assert_one_line_error(
        *run("table", job), '[audit] intervals = "rank"', "protection levels", "safety_range=0"
    )
    assert not (tmp_path / "out").exists()


def test_the_rank_test_takes_no_lp_options(tmp_path: Path, census_csv: Path) -> None:
    job = _rank_job(tmp_path, census_csv)
    job.write_text(
        job.read_text(encoding="utf-8").replace(
            'intervals = "rank"\n', 'intervals = "rank"\nunions = true\n'
        ),
        encoding="utf-8",
    )
    assert_one_line_error(*run("table", job), '[audit] intervals = "rank"', "remove unions")
    assert not (tmp_path / "out").exists()


def test_records_without_a_value_in_a_job(tmp_path: Path) -> None:
    """A magnitude with item nonresponse: refused with the fix, or left out and counted."""
    data = tmp_path / "firms.csv"
    rows = ["region,occupation,turnover"] + [
        f"r{i % 3},o{i % 4},{'' if i % 7 == 3 else 10 + i}" for i in range(60)
    ]
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    job = tmp_path / "job.toml"
    magnitude = 'dimensions = ["region", "occupation"]\nvalue = "turnover"'
    text = job_text(data).replace('dimensions = ["region", "occupation"]', magnitude)
    job.write_text(text, encoding="utf-8")
    assert_one_line_error(*run("table", job), "'turnover'", 'missing_value = "drop"')
    job.write_text(text.replace(magnitude, magnitude + '\nmissing_value = "drop"'), "utf-8")
    code, stdout, stderr = run("table", job)
    assert code == 0, stderr
    left_out = [i for i in range(60) if i % 7 == 3]
    assert "records dropped" in stdout and str(len(left_out)) in stdout
    full = read_data(tmp_path / "out" / "full.csv")
    expected = sum(10 + i for i in range(60) if i % 7 != 3)
    assert full.filter(pl.col("is_total").not_())["value"].sum() == expected
    job.write_text(text.replace(magnitude, magnitude + '\nmissing_value = "zero"'), "utf-8")
    assert_one_line_error(*run("table", job), "'missing_value'")

"""The shape of the package: layers, import direction, no import loops, public module paths.

Layers, from the bottom: core (errors, microdata, protection, io, ...), measures (risk,
utility), methods (masking, tables), workflow (session < plots < report < jobs) and faces
(cli, demo).  Every import (at module level or inside a function) goes to the same layer or a
lower one; masking and utility never import each other; nothing but the faces imports the
command line; and the import graph of the modules has no cycle.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

import sdckit

SRC = Path(sdckit.__file__).resolve().parent

#: (pattern of module names, rank); the first match wins.  Equal ranks may import each other.
LAYERS: list[tuple[str, int, str]] = [
    (r"^sdckit\.(cli|demo|__main__|_console|ui)(\.|$)", 90, "faces"),
    (r"^sdckit\.jobs(\.|$)", 70, "jobs"),
    (r"^sdckit\.report(\.|$)", 65, "report"),
    (r"^sdckit\.plots$", 62, "plots"),
    (r"^sdckit\.session$", 60, "session"),
    (r"^sdckit\.engines(\.|$)", 55, "engines"),
    (r"^sdckit\.release(\.|$)", 50, "release"),
    (r"^sdckit\.lattice(\.|$)", 45, "search (lattice)"),
    (r"^sdckit\.(masking|tables)(\.|$)", 40, "methods"),
    (r"^sdckit\.utility(\.|$)", 25, "measures (utility)"),
    (r"^sdckit\.risk(\.|$)", 20, "measures (risk)"),
    (r"^sdckit(\.[a-z_]+)?$", 0, "core"),
    (r"^sdckit\.datasets(\.|$)", 0, "core"),
]


def _layer(module: str) -> tuple[int, str]:
    for pattern, rank, name in LAYERS:
        if re.match(pattern, module):
            return rank, name
    raise AssertionError(f"no layer for {module}")


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path, module: str) -> set[str]:
    """Every sdckit module ``path`` imports, at module level or in functions (not for typing)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    # imports for the type checker only (``if TYPE_CHECKING:``) never run
    typing_only = {
        id(inner)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and ast.unparse(block.test).endswith("TYPE_CHECKING")
        for stmt in block.body
        for inner in ast.walk(stmt)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            names = [target] + [f"{target}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            if name == "sdckit" or name.startswith("sdckit."):
                found.add(name)
    return found


def _graph() -> nx.DiGraph:
    modules = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for module, path in modules.items():
        for target in _imports(path, module):
            # "from sdckit.x import y" names either the module sdckit.x.y or an attribute of x
            while target not in modules and "." in target:
                target = target.rpartition(".")[0]
            if target in modules and target != module:
                graph.add_edge(module, target)
    return graph


GRAPH = _graph()


def test_every_module_has_a_layer() -> None:
    for module in GRAPH.nodes:
        _layer(module)


def test_imports_only_go_down() -> None:
    bad = []
    for src, dst in GRAPH.edges:
        (rs, ls), (rd, ld) = _layer(src), _layer(dst)
        if rd > rs:
            bad.append(f"{src} ({ls}) imports {dst} ({ld})")
    assert not bad, "\n".join(bad)


def test_masking_and_utility_do_not_import_each_other() -> None:
    bad = [
        f"{s} -> {d}"
        for s, d in GRAPH.edges
        if (s.startswith("sdckit.masking") and d.startswith("sdckit.utility"))
        or (s.startswith("sdckit.utility") and d.startswith("sdckit.masking"))
    ]
    assert not bad, bad


def test_risk_does_not_import_utility_or_methods() -> None:
    bad = [
        f"{s} -> {d}"
        for s, d in GRAPH.edges
        if s.startswith("sdckit.risk")
        and d.startswith(("sdckit.utility", "sdckit.masking", "sdckit.tables"))
    ]
    assert not bad, bad


def test_the_release_check_shares_no_code_with_the_methods() -> None:
    """The release check reads files with core helpers only: no method, no risk measure."""
    bad = [
        f"{s} -> {d}"
        for s, d in GRAPH.edges
        if s.startswith("sdckit.release") and _layer(d)[0] > 0
        and not d.startswith("sdckit.release")
    ]  # fmt: skip
    assert not bad, bad


def test_the_library_does_not_import_the_command_line() -> None:
    bad = [
        f"{s} -> {d}"
        for s, d in GRAPH.edges
        if d.startswith("sdckit.cli") and not s.startswith(("sdckit.cli", "sdckit.__main__"))
    ]
    assert not bad, bad


def test_no_import_cycles() -> None:
    cycles = list(nx.simple_cycles(GRAPH))
    # a package importing its own submodules (__init__ re-exports) is not a loop, but a
    # submodule importing its package back while the package imports it is
    assert not cycles, cycles[:5]


def test_no_import_circle_inside_tables_and_the_table_does_not_audit() -> None:
    """The audit sits above :class:`~sdckit.tables.Table`: nothing the table module imports
    (at module level or in a function) is part of the audit, so writing a table does not
    audit it (the former circle table -> _output -> _audit_core -> table); and the modules of
    ``sdckit.tables`` import each other without a circle."""
    tables = GRAPH.subgraph(n for n in GRAPH.nodes if n.startswith("sdckit.tables"))
    assert not list(nx.simple_cycles(tables))
    below_table = nx.descendants(GRAPH, "sdckit.tables.table")
    assert not sorted(m for m in below_table if m.startswith("sdckit.tables.audit"))
    # the check sees an edge it must refuse
    circle = nx.DiGraph([("sdckit.tables.table", "sdckit.tables._output"),
                         ("sdckit.tables._output", "sdckit.tables.table")])  # fmt: skip
    assert list(nx.simple_cycles(circle))


def test_every_public_module_path_imports_as_a_module() -> None:
    """No module is shadowed by a function of the same name (``sdckit.masking.pram``)."""
    for info in pkgutil.walk_packages(sdckit.__path__, "sdckit."):
        name = info.name
        if any(part.startswith("_") for part in name.split(".")[1:]):
            continue
        module = importlib.import_module(name)
        parent_name, _, attr = name.rpartition(".")
        parent = importlib.import_module(parent_name)
        assert getattr(parent, attr) is module, f"{name} is shadowed by {getattr(parent, attr)!r}"


def test_no_bare_assert_in_the_package() -> None:
    """Checks that must hold under ``python -O`` raise; they never ``assert``."""
    found = []
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(SRC)}:{n.lineno}" for n in ast.walk(tree)
                  if isinstance(n, ast.Assert)]  # fmt: skip
    assert not found, found


def _imported_after(statement: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter has imported after running ``statement``."""
    code = f"import sys\n{statement}\nprint(','.join(m for m in {modules!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    return [m for m in out.split(",") if m]


HEAVY = (
    "scipy.stats",
    "matplotlib",
    "numba",
    "sdckit.masking",
    "sdckit.tables",
    "sdckit.report",
    "sdckit.jobs",
)


def test_importing_the_package_is_light() -> None:
    """``import sdckit`` and the command line do not pull in the heavy parts.

    The command line imports what a command needs when it runs, so ``sdckit --help`` starts
    without numpy, polars, pyarrow or rich either.
    """
    assert _imported_after("import sdckit, sdckit.cli.app", HEAVY) == []
    assert _imported_after("import sdckit.cli.app", ("numpy", "polars", "pyarrow", "rich")) == []
    assert _imported_after("import sdckit", ("numpy", "polars", "sdckit.microdata")) == []


def test_a_table_job_imports_no_microdata_method() -> None:
    """``sdckit table`` starts without the microdata methods, the utility measures, scipy's
    statistics and optimisers or numba (a second of start-up; numba comes with the Gauss
    method, scipy.optimize with the integer audit, rounding and the cell key method)."""
    unused = ("sdckit.masking", "sdckit.utility", "sdckit.risk", "scipy.stats", "scipy.optimize",
              "numba")  # fmt: skip
    assert _imported_after("import sdckit.tables", unused) == []
    statement = "from sdckit.jobs import load_table_job, run_table_job; import sdckit.cli.table"
    assert _imported_after(statement, unused) == []


@pytest.mark.parametrize("module", ["sdckit.masking", "sdckit.tables", "sdckit.jobs"])
def test_subpackages_import_alone(module: str) -> None:
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True)


#: What the browser interface may use of the jobs layer (module: names, None for the whole
#: module): the runner, the section checks of a form and the table job's functions.  It runs
#: no release, target check, report or writing of its own, so it imports none of the layers
#: that do those (the session, the release, the reports) and no private module of jobs.
UI_MAY_USE: dict[str, set[str] | None] = {
    "sdckit.jobs": {"Outputs", "Runner", "TableOutputs", "TableRunner"},
    "sdckit.jobs.sections": None,
    "sdckit.jobs.target": {"parse_target"},
    # the child process of the secondary suppression (Cancel stops it at once)
    "sdckit.jobs.tables": {"protect_table"},
}
UI_MAY_NOT = ("sdckit.session", "sdckit.release", "sdckit.report", "sdckit.protection.Session")


def _ui_uses(path: Path) -> list[tuple[str, str | None]]:
    """(module, name) of every sdckit import of a UI module, and of every ``"module:name"``
    string it gives a child process to run."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    used: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            used += [(a.name, None) for a in node.names if a.name.startswith("sdckit")]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sdckit"):
            used += [(str(node.module), a.name) for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = re.fullmatch(r"(sdckit(?:\.\w+)+):(\w+)", node.value)
            if match:
                used.append((match.group(1), match.group(2)))
    return used


def test_the_browser_interface_only_calls_named_functions_of_the_jobs_layer(
    tmp_path: Path,
) -> None:
    bad = []
    for path in sorted((SRC / "ui").rglob("*.py")):
        for module, name in _ui_uses(path):
            full = module if name is None else f"{module}.{name}"
            if full.startswith(UI_MAY_NOT) or module.startswith(UI_MAY_NOT):
                bad.append(f"{path.name}: {full} (release, report or session logic)")
            elif module.startswith("sdckit.jobs"):
                allowed = UI_MAY_USE.get(module, set())
                if allowed is not None and name not in allowed:
                    bad.append(f"{path.name}: {full} (not a named entry point of jobs)")
    assert not bad, "\n".join(bad)
    # the check itself sees an import it must refuse
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from sdckit.release import release\nfrom sdckit.jobs.run import run_job\n"
        "x = 'sdckit.report:write_report'\n",
        encoding="utf-8",
    )
    assert _ui_uses(sample) == [
        ("sdckit.release", "release"), ("sdckit.jobs.run", "run_job"),
        ("sdckit.report", "write_report"),
    ]  # fmt: skip


def test_the_release_layer_words_no_job_file_syntax() -> None:
    """Findings are structured; each face words them (the command line in job-file syntax,
    sdckit.jobs.wording; the browser in its controls' words): the release layer names no
    job-file table."""
    syntax = re.compile(r"\[\[?(output|roles|steps|target|input)\]\]?")
    for path in sorted((SRC / "release").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not syntax.search(text), f"{path.name} words a fix in job-file syntax"

"""The tables workflow of the UI: build a table, mark the primaries, suppress, audit, export.

:class:`TableState` keeps a :class:`sdckit.jobs.TableRunner`, the table job's stepwise
runner, and calls it one request at a time: it builds the table, checks and applies the rules,
writes the outputs and the table job (``docs/job-files.md``), and words a withheld published
table, so the exported job gives the same table with ``sdckit table``.  The secondary
suppression and the audit run in a child process, so that *Cancel* stops them at once
(:func:`sdckit.ui._tasks.run_in_process`); the runner takes their result back.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sdckit.errors import ParameterError
from sdckit.jobs import TableOutputs, TableRunner
from sdckit.ui._tasks import run_in_process

__all__ = ["TableState", "parse_hierarchy"]

STATUS_NAMES = ("safe", "primary", "secondary", "empty", "protected")


def parse_hierarchy(text: str, dimension: str) -> dict[str, list[str]] | None:
    """A hierarchy written one parent a line: ``Total: North, South`` (None when empty).

    Examples
    --------
    >>> parse_hierarchy("Total: N, S\\nN: N1, N2", "region")
    {'Total': ['N', 'S'], 'N': ['N1', 'N2']}
    """
    tree: dict[str, list[str]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parent, sep, children = line.partition(":")
        kids = [c.strip() for c in children.split(",") if c.strip()]
        if not sep or not parent.strip() or not kids:
            raise ParameterError(
                f"The hierarchy of {dimension!r}: line {number} must read 'parent: child, "
                "child, ...'."
            )
        if parent.strip() in tree:
            raise ParameterError(
                f"The hierarchy of {dimension!r} lists the same parent twice (line {number})."
            )
        tree[parent.strip()] = kids
    return tree or None


def hierarchy_text(tree: dict[str, list[str]] | None) -> str:
    """The text form of a hierarchy (the inverse of :func:`parse_hierarchy`)."""
    if not tree:
        return ""
    return "\n".join(f"{p}: {', '.join(kids)}" for p, kids in tree.items())


@dataclass
class TableExport:
    """The files of the last table export."""

    files: dict[str, Path] = field(default_factory=dict)
    refusal: str | None = None
    job_text: str = ""


class TableState:
    """The table being protected (see the module docstring)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.runner: TableRunner | None = None
        self._rules: list[dict[str, Any]] = []  # rules given before a table is built
        self.export = TableExport()
        self.version = 0

    def touch(self) -> None:
        """A new version of the table state."""
        self.version += 1

    # ------------------------------------------------------------------ the runner's state
    @property
    def input_spec(self) -> dict[str, Any] | None:
        """The ``[input]`` table of the table built (None: none built)."""
        return None if self.runner is None else self.runner.input

    @property
    def spec(self) -> dict[str, Any]:
        """The ``[table]`` table of the table built (empty: none built)."""
        return {} if self.runner is None else dict(self.runner.table_spec or {})

    @property
    def table(self) -> Any:
        """The table as built."""
        return None if self.runner is None else self.runner.table

    @property
    def rules(self) -> list[dict[str, Any]]:
        """The ``[[rules]]`` tables."""
        return list(self._rules) if self.runner is None else list(self.runner.rules)

    @property
    def marked(self) -> Any:
        """The table with its primaries marked (None: no rule yet)."""
        return None if self.runner is None else self.runner.marked

    @property
    def suppression(self) -> dict[str, Any]:
        """The ``[suppression]`` table."""
        return {"method": "hypercube"} if self.runner is None else self.runner.suppression

    @property
    def audit_params(self) -> dict[str, Any] | None:
        """The ``[audit]`` table (None: none, the job audits in check mode)."""
        return None if self.runner is None else self.runner.audit_params

    @property
    def result(self) -> Any:
        """The secondary suppression (None: not run)."""
        return None if self.runner is None else self.runner.result

    @property
    def audit(self) -> Any:
        """The audit of the pattern run with it (None: none)."""
        return None if self.runner is None else self.runner.audit

    # ------------------------------------------------------------------ building
    def build(self, input_spec: dict[str, Any], spec: dict[str, Any]) -> None:
        """Build the table as a table job does (raises SdcError in the job's words); the
        rules already given mark the new table's primaries."""
        runner = TableRunner.from_input(input_spec, spec)
        with self.lock:
            if self.rules:
                runner.set_rules(self.rules)
            old = self.runner
            if old is not None:  # the method and audit chosen stay chosen
                supp = dict(old.suppression)
                runner.set_suppression(supp.pop("method", "hypercube"), supp)
                runner.set_audit(old.audit_params)
            self.runner = runner
            self.export = TableExport()
            self.touch()

    def set_rules(self, rules: list[dict[str, Any]]) -> None:
        """Replace the rules (checked as a job's ``[[rules]]``) and mark the primaries."""
        with self.lock:
            if self.runner is None:
                if rules:
                    TableRunner.check_rules(rules)
                self._rules = [dict(r) for r in rules]
            else:
                self.runner.set_rules(rules)
            self.touch()

    def check_method(self, name: str, params: dict[str, Any]) -> None:
        """Check a secondary suppression method and its parameters as a job's."""
        TableRunner.prepare_suppression(name, params)
        if self.marked is None:
            raise ParameterError("Add a sensitivity rule first: it marks the primary cells.")

    @property
    def shown(self) -> Any:
        """The table to show: suppressed, else marked, else as built."""
        if self.result is not None:
            return self.result.table
        return self.marked if self.marked is not None else self.table

    def protect(self, name: str, params: dict[str, Any], audit: bool, progress: Any,
                cancel: Any) -> None:  # fmt: skip
        """Secondary suppression and audit (a task, in a child process)."""
        with self.lock:
            runner = self.runner
            if runner is None or runner.marked is None:
                raise ParameterError("Add a sensitivity rule first: it marks the primary cells.")
            arguments = runner.protect_arguments(name, params, audit={} if audit else False)
            version = self.version
        result, checked = run_in_process(
            "sdckit.jobs.tables:protect_table", arguments, progress, cancel
        )
        with self.lock:
            if self.version != version or self.runner is not runner:
                return
            runner.set_suppression(name, params)
            runner.set_audit({} if audit else None)
            runner.set_result(result, checked)
            self.touch()

    # ------------------------------------------------------------------ views
    def grid(self, layer: dict[str, int] | None = None, max_rows: int = 400) -> dict[str, Any]:
        """Rows and columns of the first two dimensions (others at a chosen code)."""
        t = self.shown
        if t is None:
            return {}
        dims = list(t.dimensions)
        hs = list(t.hierarchies)
        depth = [_depths(h.parent) for h in hs]
        layer = layer or {}
        fixed = [int(layer.get(d, 0)) for d in dims[2:]]
        cells = np.arange(t.n_cells).reshape(t.shape)
        if len(dims) == 1:
            plane = cells[:, None]
            cols = [("", 0, -1)]
        else:
            plane = cells[(slice(None), slice(None), *fixed)]
            cols = [(hs[1].codes[j], depth[1][j], j) for j in range(hs[1].size)]
        rows = []
        for i in range(min(hs[0].size, max_rows)):
            out = []
            for j in range(plane.shape[1]):
                c = int(plane[i, j])
                out.append({
                    "cell": c,
                    "value": float(t.values[c]),
                    "status": STATUS_NAMES[int(t.status[c])],
                    "n": int(t.n_contributors[c]),
                    "total": bool(t.is_total[c]),
                })  # fmt: skip
            rows.append({"code": hs[0].codes[i], "depth": int(depth[0][i]), "cells": out})
        return {
            "dimensions": dims,
            "columns": cols,
            "rows": rows,
            "truncated": hs[0].size > max_rows,
            "layers": [
                {"name": d, "codes": list(h.codes), "chosen": fixed[k]}
                for k, (d, h) in enumerate(zip(dims[2:], hs[2:], strict=True))
            ],
            "counts": {
                name: int(np.sum(t.status == code)) for code, name in enumerate(STATUS_NAMES)
            },
            "kind": t.kind,
        }

    # ------------------------------------------------------------------ export
    def export_all(self, out_dir: Path, stem: str, title: str, progress: Any) -> TableExport:
        """Write the table job, the internal table and (if protected) the published table."""
        from sdckit.io import atomic_path

        runner = self.runner
        if runner is None or runner.result is None:
            raise ParameterError("Run the secondary suppression first.")
        out_dir.mkdir(parents=True, exist_ok=True)
        names = {
            "job": f"{stem}_table_job.toml",
            "published": f"{stem}_table_published.csv",
            "internal": f"{stem}_table_internal.csv",
        }
        runner.title = title
        header = (
            "# sdckit table job written by the browser interface (sdckit ui).\n"
            "# Run it again with: sdckit table <this file>   (docs/job-files.md)\n"
        )
        text = runner.to_toml({"table": names["published"], "table_full": names["internal"]},
                              header=header)  # fmt: skip
        progress("Writing the table job", 0, 3)
        job = out_dir / names["job"]
        with atomic_path(job) as tmp:
            tmp.write_text(text, encoding="utf-8")
        progress("Writing the tables", 1, 3)
        published, internal = out_dir / names["published"], out_dir / names["internal"]
        written, refusal = runner.write(TableOutputs(table=published, table_full=internal))
        files = {"job": job, "internal": internal}
        if published in written:
            files["published"] = published
        progress("Done", 3, 3)
        record = TableExport(files=files, refusal=refusal, job_text=text)
        with self.lock:
            self.export = record
        return record


def _depths(parent: np.ndarray) -> list[int]:
    depth = [0] * len(parent)
    for i, p in enumerate(parent.tolist()):
        depth[i] = 0 if p < 0 else depth[p] + 1
    return depth


def safe_stem(text: str) -> str:
    """A file-name stem from any text."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_") or "table"

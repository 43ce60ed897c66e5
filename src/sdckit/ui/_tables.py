"""The tables workflow of the UI: build a table, mark the primaries, suppress, audit, export.

:class:`TableState` keeps the ``[input]``, ``[table]``, ``[[rules]]``, ``[suppression]`` and
``[audit]`` tables of a table job (``docs/job-files.md``), and builds everything through the
jobs layer (:mod:`sdckit.jobs.sections`), so the exported job gives the same table with
``sdckit table``.  The secondary suppression and the audit run in a child process, so that
*Cancel* stops them at once (:func:`sdckit.ui._tasks.run_in_process`).
"""

from __future__ import annotations

import contextlib
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import sdckit.jobs.sections as _jobs
from sdckit.errors import ParameterError
from sdckit.jobs.toml_writer import dumps, same_document
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
        self.input_spec: dict[str, Any] | None = None
        self.spec: dict[str, Any] = {}
        self.table: Any = None
        self.rules: list[dict[str, Any]] = []
        self.marked: Any = None
        self.suppression: dict[str, Any] = {"method": "hypercube"}
        self.audit_params: dict[str, Any] | None = {}
        self.result: Any = None
        self.audit: Any = None
        self.export = TableExport()
        self.version = 0

    def touch(self) -> None:
        """A new version of the table state."""
        self.version += 1

    # ------------------------------------------------------------------ building
    def build(self, input_spec: dict[str, Any], spec: dict[str, Any]) -> None:
        """Build the table as a table job does (raises SdcError in the job's words)."""
        table = _jobs.build_table(input_spec, spec)
        with self.lock:
            self.input_spec, self.spec, self.table = dict(input_spec), dict(spec), table
            self.marked = self.result = self.audit = None
            self.export = TableExport()
            self._mark()
            self.touch()

    def set_rules(self, rules: list[dict[str, Any]]) -> None:
        """Replace the rules (checked as a job's ``[[rules]]``) and mark the primaries."""
        if rules:
            _jobs.build_rules(rules)
        with self.lock:
            self.rules = [dict(r) for r in rules]
            self.result = self.audit = None
            self._mark()
            self.touch()

    def _mark(self) -> None:
        from sdckit.tables import apply_rules

        if self.table is None:
            self.marked = None
            return
        self.marked = apply_rules(self.table, list(_jobs.build_rules(self.rules))) if self.rules \
            else None  # fmt: skip

    @property
    def shown(self) -> Any:
        """The table to show: suppressed, else marked, else as built."""
        if self.result is not None:
            return self.result.table
        return self.marked if self.marked is not None else self.table

    def protect(self, name: str, params: dict[str, Any], audit: bool, progress: Any,
                cancel: Any) -> None:  # fmt: skip
        """Secondary suppression and audit (a task, in a child process)."""
        if self.marked is None:
            raise ParameterError("Add a sensitivity rule first: it marks the primary cells.")
        method = _jobs.table_method(name, params)
        if getattr(type(method), "kind", "suppression") != "suppression":
            raise ParameterError(
                f"{name!r} is a rounding method; choose a secondary suppression method."
            )
        audit_params = dict(self.audit_params or {}) if audit else None
        version = self.version
        result, checked = run_in_process(
            "sdckit.jobs.tables:protect_table", (self.marked, method, audit_params), progress,
            cancel,
        )  # fmt: skip
        with self.lock:
            if self.version != version:
                return
            self.suppression = {"method": name, **params}
            self.audit_params = audit_params
            self.result, self.audit = result, checked
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
    def job_document(self, names: dict[str, str], title: str) -> dict[str, Any]:
        """The table job that gives this table (``sdckit table``)."""
        if self.input_spec is None or self.table is None:
            raise ParameterError("Build a table first.")
        if not self.rules:
            raise ParameterError("A table job needs at least one sensitivity rule.")
        document: dict[str, Any] = {
            "title": title,
            "input": self.input_spec,
            "table": self.spec,
            "rules": self.rules,
            "suppression": self.suppression,
            "output": {"table": names["published"], "table_full": names["internal"]},
        }
        if self.audit_params is not None:
            document["audit"] = self.audit_params
        return document

    def export_all(self, out_dir: Path, stem: str, title: str, progress: Any) -> TableExport:
        """Write the table job, the internal table and (if protected) the published table."""
        from sdckit.errors import VerificationError
        from sdckit.io import atomic_path

        if self.result is None:
            raise ParameterError("Run the secondary suppression first.")
        out_dir.mkdir(parents=True, exist_ok=True)
        names = {
            "job": f"{stem}_table_job.toml",
            "published": f"{stem}_table_published.csv",
            "internal": f"{stem}_table_internal.csv",
        }
        document = self.job_document(names, title)
        header = (
            "# sdckit table job written by the browser interface (sdckit ui).\n"
            "# Run it again with: sdckit table <this file>   (docs/job-files.md)\n"
        )
        text = dumps(document, header=header)
        if not same_document(document, text):  # pragma: no cover - the writer's own check
            raise ParameterError("The table job could not be written faithfully.")
        progress("Writing the table job", 0, 3)
        job = out_dir / names["job"]
        with atomic_path(job) as tmp:
            tmp.write_text(text, encoding="utf-8")
        files = {"job": job}
        progress("Writing the tables", 1, 3)
        from sdckit.jobs.tables import job_audit, write_table_outputs

        # the table job always audits its pattern (check mode by default): so does the export
        checked = self.audit if self.audit is not None else job_audit(self.result.table, None)
        files = {"job": job}
        refusal = None
        published = out_dir / names["published"]
        try:
            _, written, withheld = write_table_outputs(
                self.result, checked, table=published, table_full=out_dir / names["internal"]
            )
        except VerificationError as exc:
            written, withheld, refusal = [out_dir / names["internal"]], [], str(exc)
        files["internal"] = out_dir / names["internal"]
        if published in written:
            files["published"] = published
        elif withheld:
            refusal = (
                f"the audit finds {len(checked.under_protected)} under-protected cell(s); "
                "the published table is not written (choose another method or rules)."
            )
        if refusal is not None:  # never leave an earlier published table behind
            with contextlib.suppress(FileNotFoundError):
                published.unlink()
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

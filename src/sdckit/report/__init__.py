"""HTML reports of a protection session: an internal and an external (publishable) version.

:func:`write_report` writes one self-contained HTML file (figures embedded as PNG images) from
a :class:`sdckit.session.Session`.  The ``internal`` report gives the methodologist every risk
and utility figure, the history of the steps with all their parameters, the figures and the
R-U map; the ``external`` report says only what may be published about the protection.
:func:`write_engine_report` writes the same reports for a job run on an engine, from the
aggregates of its release check (:func:`sdckit.engines.check_on_engine`).
"""

from sdckit.report._engine import render_engine_report, write_engine_report
from sdckit.report._html import describe_step, render_report, write_report
from sdckit.report._search import search_sections
from sdckit.report._table import write_table_report as write_table_report

__all__ = [
    "describe_step",
    "render_engine_report",
    "render_report",
    "search_sections",
    "write_engine_report",
    "write_report",
]

"""HTML reports of a protection session: an internal and an external (publishable) version.

:func:`write_report` writes one self-contained HTML file (figures embedded as PNG images) from
a :class:`sdckit.session.Session`.  The ``internal`` report gives the methodologist every risk
and utility figure, the history of the steps with all their parameters, the figures and the
R-U map; the ``external`` report says only what may be published about the protection.
"""

from sdckit.report._html import describe_step, render_report, write_report
from sdckit.report._table import write_table_report as write_table_report

__all__ = ["describe_step", "render_report", "write_report"]

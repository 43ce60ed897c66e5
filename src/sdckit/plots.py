"""Figures comparing original and protected data (matplotlib).

Every function returns a :class:`matplotlib.figure.Figure` built without pyplot, so nothing is
shown and no global state is touched; save it with ``fig.savefig(...)`` or embed it in a report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from sdckit._codes import encode_column
from sdckit.errors import ColumnError
from sdckit.microdata import as_microdata

__all__ = [
    "bar_chart",
    "boxplots",
    "correlation_heatmaps",
    "correspondence_plane",
    "histogram",
    "mosaic",
    "pca_plane",
    "regression_intervals",
    "risk_distribution",
    "ru_map_plot",
]

ORIGINAL = "#1f4e79"
PROTECTED = "#d9822b"


def _frame(data: Any) -> pl.DataFrame:
    return as_microdata(data).frame


def _numeric(frame: pl.DataFrame, col: str) -> np.ndarray:
    if col not in frame.columns:
        raise ColumnError(f"The column {col!r} is not in the data.")
    if not frame.schema[col].is_numeric():
        raise ColumnError(f"The column {col!r} is not numeric.")
    v = frame.get_column(col).cast(pl.Float64).to_numpy()
    return v[np.isfinite(v)]


def histogram(original: Any, protected: Any, variable: str, *, bins: int = 30) -> Figure:
    """Overlaid histograms of a numeric variable, original and protected.

    Examples
    --------
    >>> import polars as pl
    >>> fig = histogram(pl.DataFrame({"x": [1.0, 2, 3]}), pl.DataFrame({"x": [1.0, 2, 2]}), "x")
    >>> len(fig.axes)
    1
    """
    x, y = _numeric(_frame(original), variable), _numeric(_frame(protected), variable)
    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    edges = np.histogram_bin_edges(np.concatenate([x, y]), bins=bins)
    ax.hist(x, bins=edges, alpha=0.6, color=ORIGINAL, label="original")
    ax.hist(y, bins=edges, alpha=0.6, color=PROTECTED, label="protected")
    ax.set_xlabel(variable)
    ax.set_ylabel("records")
    ax.legend()
    fig.tight_layout()
    return fig


def boxplots(original: Any, protected: Any, variables: Sequence[str]) -> Figure:
    """Side-by-side box plots per variable, original and protected."""
    fo, fp = _frame(original), _frame(protected)
    fig = Figure(figsize=(max(4, 2.2 * len(variables)), 4))
    axes = fig.subplots(1, len(variables), squeeze=False)[0]
    for ax, var in zip(axes, variables, strict=True):
        box = ax.boxplot([_numeric(fo, var), _numeric(fp, var)], tick_labels=["orig.", "prot."],
                         patch_artist=True)  # fmt: skip
        for patch, color in zip(box["boxes"], (ORIGINAL, PROTECTED), strict=True):
            patch.set_facecolor(color)
            patch.set_alpha(0.6)
        ax.set_title(var)
    fig.tight_layout()
    return fig


def _counts(frame: pl.DataFrame, variable: str) -> pl.DataFrame:
    if variable not in frame.columns:
        raise ColumnError(f"The column {variable!r} is not in the data.")
    return frame.group_by(variable).len().with_columns(pl.col(variable).cast(pl.String))


def bar_chart(original: Any, protected: Any, variable: str) -> Figure:
    """Bar chart of the categories of a variable, original and protected (missing shown)."""
    a = _counts(_frame(original), variable).rename({"len": "original"})
    b = _counts(_frame(protected), variable).rename({"len": "protected"})
    t = a.join(b, on=variable, how="full", coalesce=True, nulls_equal=True).fill_null(0)
    t = t.sort(variable, nulls_last=True)
    labels = [("missing" if v is None else str(v)) for v in t.get_column(variable).to_list()]
    pos = np.arange(len(labels))
    fig = Figure(figsize=(max(5, 0.5 * len(labels) + 2), 4))
    ax = fig.add_subplot()
    ax.bar(pos - 0.2, t["original"].to_numpy(), width=0.4, color=ORIGINAL, label="original")
    ax.bar(pos + 0.2, t["protected"].to_numpy(), width=0.4, color=PROTECTED, label="protected")
    ax.set_xticks(pos, labels, rotation=45 if len(labels) > 8 else 0)
    ax.set_title(variable)
    ax.set_ylabel("records")
    ax.legend()
    fig.tight_layout()
    return fig


def correlation_heatmaps(original: Any, protected: Any, variables: Sequence[str]) -> Figure:
    """Correlation matrix of the original data and its change in the protected data."""
    fo, fp = _frame(original), _frame(protected)
    x = fo.select(pl.col(v).cast(pl.Float64) for v in variables).drop_nulls().to_numpy()
    y = fp.select(pl.col(v).cast(pl.Float64) for v in variables).drop_nulls().to_numpy()
    cx, cy = np.corrcoef(x, rowvar=False), np.corrcoef(y, rowvar=False)
    fig = Figure(figsize=(10, 4.5))
    axes = fig.subplots(1, 2)
    for ax, mat, title, lim in ((axes[0], cx, "correlation (original)", 1.0),
                                (axes[1], cy - cx, "difference (protected - original)",
                                 max(0.05, float(np.nanmax(np.abs(cy - cx)))))):  # fmt: skip
        im = ax.imshow(mat, cmap="RdBu_r", vmin=-lim, vmax=lim)
        ax.set_xticks(range(len(variables)), variables, rotation=90)
        ax.set_yticks(range(len(variables)), variables)
        ax.set_title(title)
        fig.colorbar(im, ax=ax, shrink=0.8)
    fig.tight_layout()
    return fig


def mosaic(data: Any, first: str, second: str) -> Figure:
    """Mosaic plot of two categorical variables (statsmodels)."""
    from statsmodels.graphics.mosaicplot import mosaic as sm_mosaic

    frame = _frame(data).select(first, second).drop_nulls()
    counts = frame.group_by(first, second).len()
    table = {(str(a), str(b)): n for a, b, n in counts.iter_rows()}
    fig = Figure(figsize=(6, 5))
    ax = fig.add_subplot()
    sm_mosaic(table, ax=ax, gap=0.01, labelizer=lambda k: "", title=f"{first} x {second}")
    fig.tight_layout()
    return fig


def pca_plane(original: Any, protected: Any, variables: Sequence[str], *,
              max_points: int = 5000) -> Figure:  # fmt: skip
    """Both files projected on the first two principal components of the original data."""
    fo, fp = _frame(original), _frame(protected)
    x = fo.select(pl.col(v).cast(pl.Float64) for v in variables).to_numpy()
    y = fp.select(pl.col(v).cast(pl.Float64) for v in variables).to_numpy()
    keep = np.isfinite(x).all(axis=1) & np.isfinite(y).all(axis=1)
    x, y = x[keep], y[keep]
    mean, sd = x.mean(axis=0), x.std(axis=0, ddof=1)
    sd[sd == 0] = 1.0
    zx, zy = (x - mean) / sd, (y - mean) / sd
    _, vectors = np.linalg.eigh(np.cov(zx, rowvar=False))
    basis = vectors[:, ::-1][:, :2]
    px, py = zx @ basis, zy @ basis
    step = max(1, len(px) // max_points)
    fig = Figure(figsize=(6, 5))
    ax = fig.add_subplot()
    ax.scatter(px[::step, 0], px[::step, 1], s=6, alpha=0.5, color=ORIGINAL, label="original")
    ax.scatter(py[::step, 0], py[::step, 1], s=6, alpha=0.5, color=PROTECTED, label="protected")
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
    ax.legend()
    fig.tight_layout()
    return fig


def _ca_coordinates(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row and column principal coordinates (first two axes) of a correspondence analysis."""
    p = table / table.sum()
    r, c = p.sum(axis=1), p.sum(axis=0)
    r[r == 0], c[c == 0] = 1e-12, 1e-12
    s = (p - np.outer(r, c)) / np.sqrt(np.outer(r, c))
    u, sigma, vt = np.linalg.svd(s, full_matrices=False)
    rows = (u[:, :2] * sigma[:2]) / np.sqrt(r)[:, None]
    cols = (vt.T[:, :2] * sigma[:2]) / np.sqrt(c)[:, None]
    return rows, cols


def correspondence_plane(original: Any, protected: Any, first: str, second: str) -> Figure:
    """Correspondence-analysis planes of a two-way table, original and protected."""
    fo, fp = _frame(original), _frame(protected)
    both_a = pl.concat([fo.get_column(first).cast(pl.String), fp.get_column(first).cast(pl.String)])
    both_b = pl.concat([fo.get_column(second).cast(pl.String),
                        fp.get_column(second).cast(pl.String)])  # fmt: skip
    ca, la = encode_column(both_a)
    cb, lb = encode_column(both_b)
    n = fo.height
    fig = Figure(figsize=(10, 4.5))
    axes = fig.subplots(1, 2, sharex=True, sharey=True)
    for ax, sl, title in ((axes[0], slice(0, n), "original"), (axes[1], slice(n, None),
                                                                "protected")):  # fmt: skip
        a, b = ca[sl], cb[sl]
        ok = (a >= 0) & (b >= 0)
        t = (
            np.bincount(a[ok] * len(lb) + b[ok], minlength=len(la) * len(lb))
            .reshape(len(la), len(lb))
            .astype(float)
        )
        rows, cols = _ca_coordinates(t)
        ax.scatter(rows[:, 0], rows[:, 1], color=ORIGINAL, marker="o", label=first)
        ax.scatter(cols[:, 0], cols[:, 1], color=PROTECTED, marker="^", label=second)
        for i, lab in enumerate(la.to_list()):
            ax.annotate(str(lab), rows[i, :2], fontsize=7)
        for j, lab in enumerate(lb.to_list()):
            ax.annotate(str(lab), cols[j, :2], fontsize=7)
        ax.axhline(0, color="grey", lw=0.5)
        ax.axvline(0, color="grey", lw=0.5)
        ax.set_title(f"correspondence analysis ({title})")
    axes[0].legend()
    fig.tight_layout()
    return fig


def regression_intervals(comparison: Any) -> Figure:
    """Confidence intervals of regression coefficients, original and protected, side by side."""
    t = comparison.coefficients
    pos = np.arange(t.height)
    fig = Figure(figsize=(6, max(3, 0.6 * t.height + 1)))
    ax = fig.add_subplot()
    for offset, which, color in ((-0.15, "original", ORIGINAL), (0.15, "protected", PROTECTED)):
        est = t[f"estimate_{which}"].to_numpy()
        lo, up = t[f"lower_{which}"].to_numpy(), t[f"upper_{which}"].to_numpy()
        ax.errorbar(est, pos + offset, xerr=[est - lo, up - est], fmt="o", color=color,
                    label=which, capsize=3)  # fmt: skip
    ax.set_yticks(pos, t["term"].to_list())
    ax.axvline(0, color="grey", lw=0.5)
    ax.set_title(f"{comparison.formula}: mean CI overlap {comparison.mean_overlap:.3f}")
    ax.legend()
    fig.tight_layout()
    return fig


def risk_distribution(risk: Any, *, threshold: float | None = None, bins: int = 40) -> Figure:
    """Histogram of individual risks (log-scaled counts), with an optional threshold line."""
    values = np.asarray(getattr(risk, "risk", risk), dtype=np.float64)
    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    ax.hist(values, bins=bins, color=ORIGINAL, alpha=0.8, log=True)
    if threshold is not None:
        ax.axvline(threshold, color="red", ls="--", label=f"threshold {threshold:g}")
        ax.legend()
    ax.set_xlabel("individual re-identification risk")
    ax.set_ylabel("records (log scale)")
    fig.tight_layout()
    return fig


def ru_map_plot(result: Any) -> Figure:
    """The R-U map: every candidate with error bars, the Pareto front, the risk limit."""
    p = result.points
    fig = Figure(figsize=(7, 5))
    ax = fig.add_subplot()
    orig = p.filter(pl.col("candidate") == "original")
    cand = p.filter(pl.col("candidate") != "original")
    ax.errorbar(cand["risk"], cand["loss"], xerr=cand["risk_sd"], yerr=cand["loss_sd"], fmt="o",
                color=PROTECTED, ecolor="grey", capsize=2, label="candidates")  # fmt: skip
    front = p.filter(pl.col("pareto")).sort("risk")
    ax.plot(front["risk"], front["loss"], "--", color="black", lw=1, label="Pareto front")
    ax.scatter(orig["risk"], orig["loss"], marker="*", s=150, color=ORIGINAL, label="original",
               zorder=3)  # fmt: skip
    for name, r, loss in cand.select("candidate", "risk", "loss").iter_rows():
        ax.annotate(str(name), (r, loss), fontsize=7, xytext=(3, 3), textcoords="offset points")
    if result.max_risk is not None:
        ax.axvline(result.max_risk, color="red", ls=":", label="maximum tolerable risk")
    ax.set_xlabel(f"disclosure risk ({result.risk_name})")
    ax.set_ylabel(f"information loss ({result.loss_name})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig

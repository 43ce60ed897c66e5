"""Figures comparing original and protected data (matplotlib).

Every function returns a :class:`matplotlib.figure.Figure` built without pyplot, so nothing is
shown and no global state is touched; save it with ``fig.savefig(...)`` or embed it in a report.

Every figure has a title and labelled axes, with the unit of each measure: risks and shares are
shown in percent (as in the reports' tables), and an axis whose values span two decades or more
(individual risks, record counts) is drawn on a log scale, which its label says.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from sdckit._codes import encode_column
from sdckit.errors import ColumnError
from sdckit.microdata import as_microdata
from sdckit.utility.rumap import REFERENCE

__all__ = [
    "bar_chart",
    "boxplots",
    "correlation_heatmaps",
    "correspondence_plane",
    "histogram",
    "measure_display",
    "mosaic",
    "pca_plane",
    "regression_intervals",
    "risk_bins",
    "risk_distribution",
    "risk_distributions",
    "ru_map_plot",
]

ORIGINAL = "#1f4e79"
PROTECTED = "#d9822b"
HIGHLIGHT = "#c0392b"

#: A log scale when the positive values of an axis span at least this many decades.
LOG_DECADES = 2.0

#: How the named measures of the R-U map are shown: (label, factor to the unit, unit).
#: Shares and risks are shown in percent, as in the figures tables of the reports.
_MEASURES: dict[str, tuple[str, float, str]] = {
    "global_risk": ("global risk", 100.0, "%"),
    "expected_reidentifications": ("expected re-identifications", 1.0, "persons"),
    "sample_uniques": ("sample uniques", 1.0, "records"),
    "k2_violations": ("records violating 2-anonymity", 1.0, ""),
    "k3_violations": ("records violating 3-anonymity", 1.0, ""),
    "k5_violations": ("records violating 5-anonymity", 1.0, ""),
    "record_linkage": ("share of records linked", 100.0, "%"),
    "sse_sst": ("SSE/SST of numeric variables", 1.0, "%"),
    "il1s": ("IL1s of numeric variables", 1.0, ""),
    "share_changed": ("share of key values changed", 100.0, "%"),
    "hellinger": ("mean Hellinger distance of key variables", 1.0, ""),
}


def measure_display(name: str) -> tuple[str, float]:
    """The label (with its unit) of an R-U map measure and the factor from its value to the unit.

    Parameters
    ----------
    name : str
        A risk or loss measure of :func:`sdckit.utility.ru_map` (``RUMapResult.risk_name`` or
        ``loss_name``); another name is shown as it is.

    Returns
    -------
    (str, float)

    Examples
    --------
    >>> measure_display("global_risk")
    ('global risk (%)', 100.0)
    >>> measure_display("sse_sst")  # already in percent
    ('SSE/SST of numeric variables (%)', 1.0)
    >>> measure_display("my_measure")
    ('my_measure', 1.0)
    """
    label, factor, unit = _MEASURES.get(name, (name, 1.0, ""))
    return (f"{label} ({unit})" if unit else label), factor


def _spans_decades(values: Any, decades: float = LOG_DECADES) -> bool:
    """Whether the positive finite values span at least ``decades`` powers of ten."""
    v = np.asarray(values, dtype=np.float64).ravel()
    v = v[np.isfinite(v) & (v > 0)]
    return v.size > 1 and float(np.log10(v.max() / v.min())) >= decades


def _count_label(log: bool) -> str:
    return "records (log scale)" if log else "records"


def _renderer(fig: Figure) -> Any:
    """An Agg renderer for ``fig`` (to measure texts), attaching an Agg canvas if needed."""
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    return canvas.get_renderer()


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
    """Histograms of a numeric variable, original (filled) and protected (outline), same bins.

    The record counts are on a log scale when they span two decades or more.

    Examples
    --------
    >>> import polars as pl
    >>> fig = histogram(pl.DataFrame({"x": [1.0, 2, 3]}), pl.DataFrame({"x": [1.0, 2, 2]}), "x")
    >>> len(fig.axes), fig.axes[0].get_ylabel()
    (1, 'records')
    """
    x, y = _numeric(_frame(original), variable), _numeric(_frame(protected), variable)
    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    edges = np.histogram_bin_edges(np.concatenate([x, y]), bins=bins)
    counts = np.concatenate([np.histogram(x, edges)[0], np.histogram(y, edges)[0]])
    log = _spans_decades(counts)
    ax.hist(x, bins=edges, alpha=0.45, color=ORIGINAL, label="original", log=log)
    ax.hist(y, bins=edges, histtype="step", lw=1.6, color=PROTECTED, label="protected", log=log)
    ax.set_xlabel(variable)
    ax.set_ylabel(_count_label(log))
    ax.set_title(f"Distribution of {variable}")
    ax.legend()
    fig.tight_layout()
    return fig


def boxplots(original: Any, protected: Any, variables: Sequence[str]) -> Figure:
    """Side-by-side box plots per variable, original and protected."""
    fo, fp = _frame(original), _frame(protected)
    fig = Figure(figsize=(max(4, 2.4 * len(variables)), 4.2))
    axes = fig.subplots(1, len(variables), squeeze=False)[0]
    for ax, var in zip(axes, variables, strict=True):
        box = ax.boxplot([_numeric(fo, var), _numeric(fp, var)],
                         tick_labels=["original", "protected"], patch_artist=True)  # fmt: skip
        for patch, color in zip(box["boxes"], (ORIGINAL, PROTECTED), strict=True):
            patch.set_facecolor(color)
            patch.set_alpha(0.6)
        ax.set_title(var)
        ax.set_xlabel("file")
        ax.set_ylabel(f"value of {var}")
    fig.suptitle("Box plots: original and protected values")
    fig.tight_layout()
    return fig


def _counts(frame: pl.DataFrame, variable: str) -> pl.DataFrame:
    if variable not in frame.columns:
        raise ColumnError(f"The column {variable!r} is not in the data.")
    return frame.group_by(variable).len().with_columns(pl.col(variable).cast(pl.String))


def bar_chart(original: Any, protected: Any, variable: str) -> Figure:
    """Bar chart of the categories of a variable, original and protected (missing shown).

    With more than 8 categories or a label longer than 10 characters the bars are horizontal
    (one category a row, long labels wrapped), so that no label overlaps another; the record
    counts are on a log scale when they span two decades or more.

    Examples
    --------
    >>> import polars as pl
    >>> a = pl.DataFrame({"s": ["never married", "married", "married"]})
    >>> fig = bar_chart(a, a, "s")
    >>> fig.axes[0].get_xlabel(), fig.axes[0].get_ylabel()  # horizontal bars: long labels
    ('records', 's')
    """
    a = _counts(_frame(original), variable).rename({"len": "original"})
    b = _counts(_frame(protected), variable).rename({"len": "protected"})
    t = a.join(b, on=variable, how="full", coalesce=True, nulls_equal=True).fill_null(0)
    t = t.sort(variable, nulls_last=True)
    numbers = t.get_column(variable).str.strip_chars().cast(pl.Float64, strict=False)
    if numbers.null_count() == t.get_column(variable).null_count() < t.height:
        # categories that are numbers (a key read as text): -1, 0, 1, 2, 10, not -1, 0, 1, 10, 2
        t = t.with_columns(numbers.alias("_order")).sort("_order", nulls_last=True).drop("_order")
    labels = [("missing" if v is None else str(v)) for v in t.get_column(variable).to_list()]
    co, cp = t["original"].to_numpy(), t["protected"].to_numpy()
    log = _spans_decades(np.concatenate([co, cp]))
    pos = np.arange(len(labels))
    horizontal = len(labels) > 8 or max((len(label) for label in labels), default=0) > 10
    if horizontal:
        wrapped = [textwrap.fill(label, 22) for label in labels]
        lines = max((w.count("\n") + 1 for w in wrapped), default=1)
        height = max(3.0, len(labels) * (0.18 * lines + 0.17) + 1.4)
        fig = Figure(figsize=(7, height))
        ax = fig.add_subplot()
        ax.barh(pos - 0.2, co, height=0.4, color=ORIGINAL, label="original", log=log)
        ax.barh(pos + 0.2, cp, height=0.4, color=PROTECTED, label="protected", log=log)
        ax.set_yticks(pos, wrapped)
        ax.set_ylim(len(labels) - 0.5, -0.5)  # the first category on top
        ax.set_xlabel(_count_label(log))
        ax.set_ylabel(variable)
    else:
        wrapped = [textwrap.fill(label, 10) for label in labels]
        fig = Figure(figsize=(max(5.0, 0.9 * len(labels) + 2), 4))
        ax = fig.add_subplot()
        ax.bar(pos - 0.2, co, width=0.4, color=ORIGINAL, label="original", log=log)
        ax.bar(pos + 0.2, cp, width=0.4, color=PROTECTED, label="protected", log=log)
        ax.set_xticks(pos, wrapped)
        ax.set_xlabel(variable)
        ax.set_ylabel(_count_label(log))
    ax.set_title(f"Categories of {variable}: original and protected")
    ax.legend()
    fig.tight_layout()
    return fig


def correlation_heatmaps(original: Any, protected: Any, variables: Sequence[str]) -> Figure:
    """Correlation matrix of the original data and its change in the protected data."""
    fo, fp = _frame(original), _frame(protected)
    x = fo.select(pl.col(v).cast(pl.Float64) for v in variables).drop_nulls().to_numpy()
    y = fp.select(pl.col(v).cast(pl.Float64) for v in variables).drop_nulls().to_numpy()
    cx, cy = np.corrcoef(x, rowvar=False), np.corrcoef(y, rowvar=False)
    fig = Figure(figsize=(11, 5))
    axes = fig.subplots(1, 2)
    for ax, mat, title, lim in ((axes[0], cx, "correlation (original)", 1.0),
                                (axes[1], cy - cx, "difference (protected - original)",
                                 max(0.05, float(np.nanmax(np.abs(cy - cx)))))):  # fmt: skip
        im = ax.imshow(mat, cmap="RdBu_r", vmin=-lim, vmax=lim)
        ax.set_xticks(range(len(variables)), variables, rotation=90)
        ax.set_yticks(range(len(variables)), variables)
        ax.set_xlabel("variable")
        ax.set_ylabel("variable")
        ax.set_title(title)
        bar = fig.colorbar(im, ax=ax, shrink=0.8)
        bar.set_label(title.split(" (")[0])
    fig.tight_layout(w_pad=3.0)
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
    ax.set_xlabel(first)
    ax.set_ylabel(second)
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
    values, vectors = np.linalg.eigh(np.cov(zx, rowvar=False))
    values = np.clip(values[::-1], 0.0, None)
    share = 100.0 * values / values.sum() if values.sum() > 0 else np.zeros_like(values)
    basis = vectors[:, ::-1][:, :2]
    px, py = zx @ basis, zy @ basis
    step = max(1, len(px) // max_points)
    fig = Figure(figsize=(6, 5))
    ax = fig.add_subplot()
    ax.scatter(px[::step, 0], px[::step, 1], s=6, alpha=0.5, color=ORIGINAL, label="original")
    ax.scatter(py[::step, 0], py[::step, 1], s=6, alpha=0.5, color=PROTECTED, label="protected")
    ax.set_xlabel(f"PC 1 ({share[0]:.0f} % of the variance)")
    ax.set_ylabel(f"PC 2 ({share[1]:.0f} % of the variance)" if len(share) > 1 else "PC 2")
    ax.set_title("Principal components of the original data")
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
        ax.set_xlabel("dimension 1")
        ax.set_ylabel("dimension 2")
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
    ax.set_xlabel("coefficient and confidence interval")
    ax.set_ylabel("term")
    ax.set_title(f"{comparison.formula}: mean CI overlap {comparison.mean_overlap:.3f}")
    ax.legend()
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------- risk
def _risk_values(risk: Any) -> np.ndarray:
    values = np.asarray(getattr(risk, "risk", risk), dtype=np.float64).ravel()
    return values[np.isfinite(values)]


def risk_bins(*risks: Any, bins: int = 40) -> np.ndarray:
    """Common bin edges (probabilities) for histograms of individual risks to be compared.

    The edges cover every value of every ``risks``; they are spaced logarithmically from the
    smallest positive risk when the risks span two decades or more (zero risks then fall in the
    first bin), linearly from 0 otherwise.

    Parameters
    ----------
    *risks : IndividualRiskResult or array of float
        Risks of the states to compare (e.g. the original and the protected file).
    bins : int, default 40

    Returns
    -------
    numpy.ndarray
        ``bins + 1`` increasing edges.

    Examples
    --------
    >>> risk_bins([0.001, 0.1], [0.01], bins=2).round(4).tolist()  # two decades: log spacing
    [0.001, 0.01, 0.1]
    >>> risk_bins([0.2, 0.4], bins=2).tolist()
    [0.0, 0.2, 0.4]
    """
    values = np.concatenate([_risk_values(r) for r in risks]) if risks else np.zeros(0)
    positive = values[values > 0]
    if positive.size == 0:
        return np.linspace(0.0, 1.0, bins + 1)
    high = float(positive.max())
    if _spans_decades(positive):
        return np.geomspace(float(positive.min()), high, bins + 1)
    return np.linspace(0.0, high, bins + 1)


def risk_distribution(
    risk: Any,
    *,
    threshold: float | None = None,
    bins: int | Sequence[float] = 40,
    ylim: tuple[float, float] | None = None,
    title: str = "Individual re-identification risk",
) -> Figure:
    """Histogram of individual risks in percent (log-scaled counts), with the global risk.

    The risk axis is logarithmic when the risks span two decades or more (see
    :func:`risk_bins`); the global risk (the mean of the individual risks) is drawn as a line.

    Parameters
    ----------
    risk : IndividualRiskResult or array of float
        Individual risks (probabilities).
    threshold : float, optional
        A risk threshold (a probability) drawn as a dashed line.
    bins : int or sequence of float, default 40
        Number of bins or bin edges (probabilities, e.g. from :func:`risk_bins`, so that
        several figures share them); the risk axis spans exactly the edges.
    ylim : (float, float), optional
        Range of the record counts (to give several figures the same one).
    title : str

    Examples
    --------
    >>> fig = risk_distribution([0.001, 0.01, 0.2, 0.2])
    >>> fig.axes[0].get_xscale(), fig.axes[0].get_xlabel()
    ('log', 'individual re-identification risk (%, log scale)')
    """
    values = _risk_values(risk)
    edges = risk_bins(values, bins=bins) if isinstance(bins, int) else np.asarray(bins, float)
    log_x = bool(edges[0] > 0 and _spans_decades([edges[0], edges[-1]]))
    zeros = int(np.count_nonzero(values < edges[0]))
    shown = np.clip(values, edges[0], None)  # risks below the first edge (0) in the first bin
    fig = Figure(figsize=(6.4, 4))
    ax = fig.add_subplot()
    label = f"records ({zeros:,} with risk 0 in the first bin)" if zeros else "records"
    ax.hist(100.0 * shown, bins=100.0 * edges, color=ORIGINAL, alpha=0.8, log=bool(values.size),
            label=label)  # fmt: skip
    if log_x:
        ax.set_xscale("log")
    ax.set_xlim(100.0 * edges[0], 100.0 * edges[-1])
    if ylim is not None:
        ax.set_ylim(*ylim)
    if values.size:
        mean = 100.0 * float(values.mean())
        ax.axvline(mean, color="black", lw=1, label=f"global risk (mean) {mean:.3g} %")
    if threshold is not None:
        ax.axvline(100.0 * threshold, color=HIGHLIGHT, ls="--",
                   label=f"threshold {100.0 * threshold:g} %")  # fmt: skip
    ax.set_xlabel(
        "individual re-identification risk (%, log scale)"
        if log_x
        else "individual re-identification risk (%)"
    )
    ax.set_ylabel(_count_label(True))
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def risk_distributions(
    *risks: Any,
    titles: Sequence[str] | None = None,
    threshold: float | None = None,
    bins: int = 40,
) -> list[Figure]:
    """Histograms of several individual risks, comparable: same bins, risk range and counts.

    Parameters
    ----------
    *risks : IndividualRiskResult or array of float
        E.g. the risks of the original and of the protected file.
    titles : list of str, optional
        One title per figure.
    threshold : float, optional
    bins : int, default 40

    Returns
    -------
    list of Figure

    Examples
    --------
    >>> before, after = risk_distributions([0.5, 0.2, 0.001], [0.01, 0.02, 0.001])
    >>> before.axes[0].get_xlim() == after.axes[0].get_xlim()
    True
    """
    if titles is not None and len(titles) != len(risks):
        raise ValueError("Give one title per risk.")
    edges = risk_bins(*risks, bins=bins)
    counts = [np.histogram(np.clip(_risk_values(r), edges[0], None), edges)[0] for r in risks]
    top = max((int(c.max()) for c in counts if c.size), default=1)
    ylim = (0.5, max(top, 1) * 10.0)  # a decade above the highest bar for the legend
    names = titles or [f"Individual re-identification risk ({i + 1})" for i in range(len(risks))]
    return [
        risk_distribution(r, threshold=threshold, bins=edges, ylim=ylim, title=name)
        for r, name in zip(risks, names, strict=True)
    ]


# ---------------------------------------------------------------------------- R-U map
def _overlaps(box: Any, others: Sequence[Any]) -> bool:
    return any(box.overlaps(o) for o in others)


def _place_labels(fig: Figure, ax: Any, points: Sequence[tuple[str, float, float, bool]]) -> None:
    """Label every point next to it, inside the axes and without overlapping another label."""
    renderer = _renderer(fig)
    inside = ax.get_window_extent(renderer)
    placed: list[Any] = []
    x_mid = inside.x0 + 0.6 * inside.width
    offsets = [(0, 4), (0, -12), (0, 13), (0, -21), (0, 22), (0, -30), (0, 31)]
    for name, x, y, bold in points:
        px, _ = ax.transData.transform((x, y))
        right = px > x_mid  # labels of points on the right extend to the left
        gap = 11 if bold else 5  # the recommended point is circled
        text = None
        for dx, dy in offsets:
            if text is not None:
                text.remove()
            text = ax.annotate(
                name, (x, y), xytext=(-gap - dx if right else gap + dx, dy),
                textcoords="offset points", ha="right" if right else "left", fontsize=7,
                fontweight="bold" if bold else "normal", color=HIGHLIGHT if bold else "black",
                bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.75},
            )  # fmt: skip
            box = text.get_window_extent(renderer)
            if box.x0 >= inside.x0 and box.x1 <= inside.x1 and box.y0 >= inside.y0 \
                    and box.y1 <= inside.y1 and not _overlaps(box, placed):  # fmt: skip
                break
        if text is not None:
            text.set_gid(f"ru-label:{name}")
            placed.append(text.get_window_extent(renderer))


def ru_map_plot(result: Any) -> Figure:
    """The R-U map: every candidate with error bars, the Pareto front, the risk limit.

    Risks and losses are shown in the unit of their measure (percent for shares and risks,
    see :func:`measure_display`).  The recommended candidate (``result.best``: the least loss
    below the maximum tolerable risk) is circled and its label is bold; the maximum tolerable
    risk, when given, is a vertical line.
    """
    risk_label, rf = measure_display(result.risk_name)
    loss_label, lf = measure_display(result.loss_name)
    p = result.points.with_columns(
        pl.col("risk") * rf, pl.col("risk_sd") * rf, pl.col("loss") * lf, pl.col("loss_sd") * lf
    )
    fig = Figure(figsize=(8, 5.6))
    ax = fig.add_subplot()
    orig = p.filter(pl.col("candidate") == "original")
    now = p.filter(pl.col("candidate") == "current")  # the state the candidates start from
    cand = p.filter(~pl.col("candidate").is_in(REFERENCE))
    ax.errorbar(cand["risk"], cand["loss"], xerr=cand["risk_sd"], yerr=cand["loss_sd"], fmt="o",
                color=PROTECTED, ecolor="grey", capsize=2, label="candidates")  # fmt: skip
    front = p.filter(pl.col("pareto")).sort("risk")
    ax.plot(front["risk"], front["loss"], "--", color="black", lw=1, label="Pareto front")
    ax.scatter(orig["risk"], orig["loss"], marker="*", s=150, color=ORIGINAL, label="original",
               zorder=3)  # fmt: skip
    if now.height:
        ax.scatter(now["risk"], now["loss"], marker="D", s=60, color="black",
                   label="after the steps", zorder=3)  # fmt: skip
    best = result.best
    if best is not None:
        row = cand.filter(pl.col("candidate") == best)
        what = "recommended" if result.max_risk is not None else "least loss"
        ax.scatter(row["risk"], row["loss"], s=320, facecolors="none", edgecolors=HIGHLIGHT,
                   linewidths=2, zorder=4, label=f"{what}: {best}", gid="ru-best")  # fmt: skip
    if result.max_risk is not None:
        limit = float(result.max_risk) * rf
        unit = f" {_MEASURES[result.risk_name][2]}" if result.risk_name in _MEASURES else ""
        ax.axvline(limit, color=HIGHLIGHT, ls=":", gid="ru-max-risk",
                   label=f"maximum tolerable risk: {limit:.3g}{unit}")  # fmt: skip
    ax.set_xlabel(f"disclosure risk: {risk_label}")
    ax.set_ylabel(f"information loss: {loss_label}")
    ax.set_title("R-U confidentiality map")
    ax.margins(x=0.12, y=0.12)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncols=3)
    fig.tight_layout()
    labels = [(str(n), float(r), float(v), n == best)
              for n, r, v in cand.select("candidate", "risk", "loss").iter_rows()]  # fmt: skip
    _place_labels(fig, ax, labels)
    return fig

"""Every plot returns a figure with content and never shows it."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from sdckit import plots
from sdckit.errors import ColumnError
from sdckit.masking._rank_swapping import RankSwapping
from sdckit.risk import individual_risk
from sdckit.utility import regression_comparison, ru_map


@pytest.fixture(scope="module")
def pair() -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(0)
    n = 300
    x = pl.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.normal(size=n),
            "c": rng.integers(0, 4, n),
            "d": rng.choice(["u", "v", "w"], n),
        }
    )
    y = x.with_columns(pl.col("a") + rng.normal(scale=0.3, size=n),
                       pl.Series("d", rng.choice(["u", "v", "w"], n)))  # fmt: skip
    return x, y


def _check(fig: Figure, n_axes: int = 1) -> None:
    assert isinstance(fig, Figure)
    assert len(fig.axes) >= n_axes
    ax = fig.axes[0]
    assert ax.has_data()


def test_all_plots(pair, tmp_path) -> None:
    x, y = pair
    _check(plots.histogram(x, y, "a"))
    _check(plots.boxplots(x, y, ["a", "b"]), 2)
    _check(plots.bar_chart(x, y, "d"))
    _check(plots.correlation_heatmaps(x, y, ["a", "b", "c"]), 2)
    _check(plots.mosaic(x, "c", "d"))
    _check(plots.pca_plane(x, y, ["a", "b", "c"]))
    _check(plots.correspondence_plane(x, y, "c", "d"), 2)
    _check(plots.regression_intervals(regression_comparison(x, y, "a ~ b + C(d)")))
    risk = individual_risk(x, keys=["c", "d"])
    _check(plots.risk_distribution(risk, threshold=0.1))
    res = ru_map(x, {f"p={p}": RankSwapping(p=p) for p in (2, 10)}, risk="record_linkage",
                 loss="sse_sst", seeds=(1,), max_risk=0.5, numeric=["a", "b"])  # fmt: skip
    fig = plots.ru_map_plot(res)
    _check(fig)
    fig.savefig(tmp_path / "ru.png")
    assert (tmp_path / "ru.png").stat().st_size > 1000


def test_bad_column(pair) -> None:
    x, y = pair
    with pytest.raises(ColumnError, match="not numeric"):
        plots.histogram(x, y, "d")


# ---------------------------------------------------------------------------- readability
def _panels(fig: Figure) -> list[list]:  # type: ignore[type-arg]
    """The axes of a figure but its colour bars, twins (same position) together."""
    panels: dict[tuple[float, ...], list] = {}  # type: ignore[type-arg]
    for ax in fig.axes:
        if ax.get_label() != "<colorbar>":
            panels.setdefault(tuple(np.round(ax.get_position().bounds, 6)), []).append(ax)
    return list(panels.values())


def _text_boxes(fig: Figure, texts: list) -> list:  # type: ignore[type-arg]
    renderer = FigureCanvasAgg(fig).get_renderer()
    return [t.get_window_extent(renderer) for t in texts if t.get_text()]


def _assert_apart_and_inside(fig: Figure, texts: list) -> None:  # type: ignore[type-arg]
    boxes = _text_boxes(fig, texts)
    assert boxes
    for i, box in enumerate(boxes):
        assert box.x0 >= 0 and box.y0 >= 0, box
        assert box.x1 <= fig.bbox.width + 0.5 and box.y1 <= fig.bbox.height + 0.5, box
        for other in boxes[i + 1 :]:
            assert not box.overlaps(other), (box, other)


def test_every_plot_has_a_title_and_labelled_axes(pair) -> None:
    x, y = pair
    risk = individual_risk(x, keys=["c", "d"])
    res = ru_map(x, {f"p={p}": RankSwapping(p=p) for p in (2, 10)}, risk="record_linkage",
                 loss="sse_sst", seeds=(1,), max_risk=0.5, numeric=["a", "b"])  # fmt: skip
    figures = [
        plots.histogram(x, y, "a"),
        plots.boxplots(x, y, ["a", "b"]),
        plots.bar_chart(x, y, "d"),
        plots.correlation_heatmaps(x, y, ["a", "b", "c"]),
        plots.mosaic(x, "c", "d"),
        plots.pca_plane(x, y, ["a", "b", "c"]),
        plots.correspondence_plane(x, y, "c", "d"),
        plots.regression_intervals(regression_comparison(x, y, "a ~ b + C(d)")),
        plots.risk_distribution(risk, threshold=0.1),
        plots.ru_map_plot(res),
    ]
    for fig in figures:
        for panel in _panels(fig):
            title = next((ax.get_title() for ax in panel if ax.get_title()), "")
            assert title, fig
            assert any(ax.get_xlabel() for ax in panel), title
            assert any(ax.get_ylabel() for ax in panel), title
    # the R-U measures in their units: a linkage risk (a share) in percent, SSE/SST in percent
    ax = figures[-1].axes[0]
    assert ax.get_xlabel() == "disclosure risk: share of records linked (%)"
    assert ax.get_ylabel() == "information loss: SSE/SST of numeric variables (%)"
    linked = res.points.filter(pl.col("candidate") != "original")["risk"].to_numpy()
    bars = next(c for c in ax.containers if c.get_label() == "candidates")
    assert np.sort(bars.lines[0].get_xdata()) == pytest.approx(np.sort(100 * linked))
    assert plots.measure_display("share_changed") == ("share of key values changed (%)", 100.0)


def test_bar_chart_labels_are_readable() -> None:
    long = [f"{name} (a rather long category label)" for name in ("first", "second", "third")]
    many = [f"level {i:02d}" for i in range(25)]
    short = ["a", "b", "c"]
    for labels in (long, many, short):
        frame = pl.DataFrame({"v": labels * 4})
        fig = plots.bar_chart(frame, frame, "v")
        ax = fig.axes[0]
        horizontal = labels is not short  # long or many labels: one category per row
        ticks = ax.get_yticklabels() if horizontal else ax.get_xticklabels()
        assert [t.get_text().replace("\n", " ") for t in ticks] == labels
        if horizontal:
            assert ax.get_xlabel() == "records" and ax.get_ylabel() == "v"
        else:
            assert ax.get_xlabel() == "v" and ax.get_ylabel() == "records"
        fig.draw_without_rendering()
        _assert_apart_and_inside(fig, [*ticks, ax.title, ax.xaxis.label, ax.yaxis.label])


def test_counts_spanning_decades_are_on_a_log_scale() -> None:
    values = np.r_[np.zeros(5000), 1.0, 2.0, 3.0]
    skewed = pl.DataFrame({"v": ["common"] * 5000 + ["rare"] * 3, "x": values})
    fig = plots.bar_chart(skewed, skewed, "v")
    assert fig.axes[0].get_yscale() == "log" and fig.axes[0].get_ylabel() == "records (log scale)"
    fig = plots.histogram(skewed, skewed, "x")
    assert fig.axes[0].get_yscale() == "log" and fig.axes[0].get_ylabel() == "records (log scale)"
    even = pl.DataFrame({"v": ["a", "b"] * 50, "x": np.arange(100.0)})
    assert plots.bar_chart(even, even, "v").axes[0].get_yscale() == "linear"
    assert plots.histogram(even, even, "x").axes[0].get_ylabel() == "records"


def test_risk_distribution_scales_and_shared_bins() -> None:
    rng = np.random.default_rng(1)
    before = 10 ** rng.uniform(-5, -0.5, 2000)  # spans decades: log risk axis
    after = np.r_[before[:1000] / 10, 0.0]  # lower risks, one record with risk 0
    fb, fa = plots.risk_distributions(before, after, titles=["before", "after"])
    a, b = fb.axes[0], fa.axes[0]
    assert a.get_xscale() == "log" and a.get_yscale() == "log"
    assert a.get_xlabel() == "individual re-identification risk (%, log scale)"
    assert a.get_ylabel() == "records (log scale)"
    assert a.get_xlim() == b.get_xlim() and a.get_ylim() == b.get_ylim()
    assert a.get_xlim() == pytest.approx((100 * after[after > 0].min(), 100 * before.max()))
    edges_a = [p.get_x() for p in a.patches]
    assert edges_a == [p.get_x() for p in b.patches] and len(edges_a) == 40
    assert sum(p.get_height() for p in b.patches) == after.size  # the 0 in the first bin
    assert "1 with risk 0" in b.get_legend_handles_labels()[1][0]
    # narrow risks: linear axis from 0, in percent
    fig = plots.risk_distribution(np.array([0.2, 0.3, 0.35]), threshold=0.25)
    ax = fig.axes[0]
    assert ax.get_xscale() == "linear"
    assert ax.get_xlabel() == "individual re-identification risk (%)"
    assert ax.get_xlim() == pytest.approx((0.0, 35.0))
    assert [round(ln.get_xdata()[0], 6) for ln in ax.lines] == [round(100 * 0.85 / 3, 6), 25.0]
    with pytest.raises(ValueError, match="one title per risk"):
        plots.risk_distributions(before, titles=["a", "b"])

"""Every plot returns a figure with content and never shows it."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
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

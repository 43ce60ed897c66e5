"""The categories of a bar chart in numeric order when they are numbers (a key read as text)."""

from __future__ import annotations

import polars as pl

from sdckit.plots import bar_chart


def _labels(fig: object) -> list[str]:
    ax = fig.axes[0]  # type: ignore[attr-defined]
    ticks = ax.get_yticklabels() if ax.get_ylabel() != "records" else ax.get_xticklabels()
    return [t.get_text() for t in ticks]


def test_numbers_in_numeric_order() -> None:
    frame = pl.DataFrame({"age": ["10", "2", "-1", "1", None, "2"]})
    assert _labels(bar_chart(frame, frame, "age")) == ["-1", "1", "2", "10", "missing"]
    many = pl.DataFrame({"age": [str(i) for i in range(12)]})
    fig = bar_chart(many, many, "age")  # horizontal bars: more than 8 categories
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == [str(i) for i in range(12)]


def test_words_keep_their_order() -> None:
    frame = pl.DataFrame({"sex": ["m", "f", "f"], "band": ["10-19", "2-9", "0-1"]})
    assert _labels(bar_chart(frame, frame, "sex")) == ["f", "m"]
    assert _labels(bar_chart(frame, frame, "band")) == ["0-1", "10-19", "2-9"]

"""The internal report shows synthpop's disclosure measures for a synthesis step."""

from __future__ import annotations

import re

import pytest

from sdckit.datasets import generate_census
from sdckit.masking import Synthesis
from sdckit.report import render_report
from sdckit.session import Session
from sdckit.utility import synthetic_disclosure

KEYS = ["region", "sex", "age_group"]


@pytest.fixture(scope="module")
def session() -> Session:
    frame = generate_census(800, seed=4).select(
        [*KEYS, "marital_status", "health_condition", "income"]
    )
    s = Session(frame, keys=KEYS, numeric=["income"], sensitive=["health_condition"])
    s.apply(Synthesis(synthesize=[*KEYS, "marital_status", "income"], seed=5))
    return s


def _cells(text: str) -> dict[str, list[str]]:
    part = text[text.index('id="synthetic-disclosure"') :]
    part = part[: part.index("</section>")]
    rows = re.findall(r"<tr><td>([^<]+)</td>((?:<td class=\"num\">[^<]*</td>)+)</tr>", part)
    return {name: re.findall(r">([^<]*)</td>", cells) for name, cells in rows}


def test_synthesis_step_shows_repu_and_disco(session: Session) -> None:
    internal = render_report(session, kind="internal")
    external = render_report(session, kind="external")
    assert "replicated uniques, repU (%)" in internal
    assert "Step 1 (synthetic data): keys region, sex, age_group</h3>" in internal
    rows = _cells(internal)
    assert set(rows) == {"marital_status", "income"}  # the synthesised variables, not keys
    step = session.history[0]
    res = synthetic_disclosure(
        session.original, step.result.microdata, keys=KEYS,
        targets=["marital_status", "income"], ngroups_targets={"income": 20},
    )  # fmt: skip
    for target, cells in rows.items():
        shown = [float(c.replace(",", "")) for c in cells]
        expected = [res.mean(m, target) for m in ("UiO", "repU", "Dorig", "DiSCO")]
        assert shown[:4] == pytest.approx(expected, rel=1e-2, abs=0.01)
    # replicated uniques were redrawn by the synthesis: none left
    assert res.mean("repU") == 0.0
    assert 'id="synthetic-disclosure"' not in external


def test_no_section_without_a_synthesis() -> None:
    frame = generate_census(300, seed=2).select([*KEYS, "marital_status"])
    s = Session(frame, keys=KEYS)
    assert 'id="synthetic-disclosure"' not in render_report(s, kind="internal")

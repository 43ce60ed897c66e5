"""Information loss of protected tables: E7 measures on hand-made tables, suppression loss."""

from __future__ import annotations

import numpy as np
import pytest

from sdckit.tables import Table, perturbation_loss, suppression_loss
from sdckit.tables.examples import e2_table, with_margins


def test_e7_measures_by_hand() -> None:
    # areas k1, k2 (rows) x cells c1, c2: k1 (4, 1) -> (1, 4); k2 (9, 0) unchanged
    t = Table.from_array(
        with_margins([[4, 1], [9, 0]]), {"area": ["k1", "k2"], "cell": ["c1", "c2"]}
    )
    pert = with_margins([[1, 4], [9, 0]]).ravel()
    res = perturbation_loss(t, pert, area="area")
    assert res.n_areas == 2
    assert res.hellinger == pytest.approx((1.0 + 0.0) / 2)  # sqrt(1/2 ((1-2)^2 + (2-1)^2)) = 1
    assert res.relative_absolute_distance == pytest.approx((3 / 4 + 3 / 1) / 2)
    assert res.average_absolute_distance == pytest.approx((6 / 2) / 2)

    def cramer(m: np.ndarray) -> float:
        m = np.asarray(m, float)
        e = m.sum(1, keepdims=True) * m.sum(0, keepdims=True) / m.sum()
        return float(np.sqrt(((m - e) ** 2 / e).sum() / m.sum()))

    v0, v1 = cramer([[4, 1], [9, 0]]), cramer([[1, 4], [9, 0]])
    assert res.cramers_v_original == pytest.approx(v0)
    assert res.cramers_v_change_pct == pytest.approx(100 * (v1 - v0) / v0)
    x = np.array([4, 1, 9, 0.0])
    y = np.array([1, 4, 9, 0.0])
    hd = np.sqrt(((np.sqrt(y / y.sum()) - np.sqrt(x / x.sum())) ** 2).sum()) / np.sqrt(2)
    assert res.hellinger_normalised == pytest.approx(hd)
    whole = perturbation_loss(t, pert)
    assert whole.n_areas == 1
    assert whole.average_absolute_distance == pytest.approx(6 / 4)
    assert res.summary().to_dict()["n_areas"] == 2


def test_suppression_loss_e2() -> None:
    t = e2_table()
    cells = [
        t.cell(region=r, industry=c)
        for r, c in [("B", "36210"), ("D", "36210"), ("B", "36300"), ("D", "36300")]
    ]
    loss = suppression_loss(t.suppress(cells))
    assert (loss.n_secondary, loss.n_primary) == (4, 0)
    assert loss.value_secondary == 2562 + 2309 + 3652 + 3051
    assert loss.share_value == pytest.approx(11574 / 85065)
    assert loss.share_interior_cells == pytest.approx(4 / 15)
    assert loss.to_frame().height == 1

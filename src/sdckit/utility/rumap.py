"""The R-U confidentiality map (Duncan, Keller-McNulty and Stokes; methods.md M14).

For every candidate release (a protection method with its parameters) a disclosure-risk measure
``R`` and an information-loss measure ``L`` are computed on the same data; randomised methods
are run with several seeds and their mean and standard deviation reported.  The original file
sits at ``(R0, 0)``.  A candidate *dominates* another when it has no more risk and no more loss
(and is strictly better in one); the non-dominated candidates form the Pareto front.  With a
maximum tolerable risk the admissible candidates are marked, and the best one is the admissible
candidate with the least loss.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from sdckit._results import Summary
from sdckit._validation import check_real
from sdckit.errors import ParameterError
from sdckit.microdata import Microdata, as_microdata
from sdckit.protection import Protected, ProtectionMethod

__all__ = ["REFERENCE", "RUMapResult", "loss_measure", "risk_measure", "ru_map"]

#: The points of a map that are not candidates: the original file and the current state.
REFERENCE = ("original", "current")

RiskFunction = Callable[[Microdata, Microdata], float]
LossFunction = Callable[[Microdata, Microdata], float]


def _global_risk(original: Microdata, protected: Microdata) -> float:
    from sdckit.risk import individual_risk

    return individual_risk(protected).global_risk


def _expected_reidentifications(original: Microdata, protected: Microdata) -> float:
    from sdckit.risk import individual_risk

    return individual_risk(protected).expected_reidentifications


def _sample_uniques(original: Microdata, protected: Microdata) -> float:
    from sdckit.risk import frequencies

    return float(frequencies(protected).sample_uniques)


def _violations(k: int) -> RiskFunction:
    def measure(original: Microdata, protected: Microdata) -> float:
        from sdckit.risk import frequencies

        return float(frequencies(protected).violations(k).records)

    return measure


def _linkage(original: Microdata, protected: Microdata) -> float:
    from sdckit.risk import linkage

    res = linkage.record_linkage(original, protected, numeric=list(original.numeric))
    return float(res.risk_probabilistic)


RISK_MEASURES: dict[str, RiskFunction] = {
    "global_risk": _global_risk,
    "expected_reidentifications": _expected_reidentifications,
    "sample_uniques": _sample_uniques,
    "k2_violations": _violations(2),
    "k3_violations": _violations(3),
    "k5_violations": _violations(5),
    "record_linkage": _linkage,
}


def _sse_sst(original: Microdata, protected: Microdata) -> float:
    from sdckit.utility.continuous import continuous_loss

    return continuous_loss(original, protected).sse_sst


def _il1s(original: Microdata, protected: Microdata) -> float:
    from sdckit.utility.continuous import continuous_loss

    return continuous_loss(original, protected).il1s


def _share_changed(original: Microdata, protected: Microdata) -> float:
    from sdckit.utility.categorical import categorical_loss

    return categorical_loss(original, protected).share_changed


def _hellinger(original: Microdata, protected: Microdata) -> float:
    from sdckit.utility.categorical import categorical_loss

    return float(categorical_loss(original, protected).per_variable["hellinger"].mean())


def _weighted_estimates(original: Microdata, protected: Microdata) -> float:
    from sdckit.utility.weighted import weighted_estimates_loss

    return weighted_estimates_loss(original, protected)


LOSS_MEASURES: dict[str, LossFunction] = {
    "sse_sst": _sse_sst,
    "il1s": _il1s,
    "share_changed": _share_changed,
    "hellinger": _hellinger,
    "weighted_estimates": _weighted_estimates,
}


def risk_measure(name: str | RiskFunction) -> RiskFunction:
    """A risk function ``f(original, protected) -> float`` by name (or the callable itself)."""
    if callable(name):
        return name
    if name not in RISK_MEASURES:
        raise ParameterError(
            f"Unknown risk measure {name!r}; choose one of {', '.join(sorted(RISK_MEASURES))} "
            "or pass a function f(original, protected) -> float."
        )
    return RISK_MEASURES[name]


def loss_measure(name: str | LossFunction) -> LossFunction:
    """A loss function ``f(original, protected) -> float`` by name (or the callable itself)."""
    if callable(name):
        return name
    if name not in LOSS_MEASURES:
        raise ParameterError(
            f"Unknown loss measure {name!r}; choose one of {', '.join(sorted(LOSS_MEASURES))} "
            "or pass a function f(original, protected) -> float."
        )
    return LOSS_MEASURES[name]


def _with_seed(method: ProtectionMethod, seed: int) -> ProtectionMethod:
    params = method.get_params()
    params["seed"] = seed
    return type(method)(**params)


def pareto_front(risk: np.ndarray, loss: np.ndarray) -> np.ndarray:
    """Boolean mask of the non-dominated points (lower risk and lower loss are better)."""
    n = len(risk)
    front = np.ones(n, dtype=bool)
    for i in range(n):  # candidates are few (a parameter grid), not records
        dominated = (risk <= risk[i]) & (loss <= loss[i]) & ((risk < risk[i]) | (loss < loss[i]))
        front[i] = not dominated.any()
    return front


@dataclass(frozen=True, repr=False)
class RUMapResult:
    """Risk and loss of every candidate release, with the Pareto front.

    ``points`` has one row per candidate: ``candidate``, ``method``, ``risk``, ``risk_sd``,
    ``loss``, ``loss_sd``, ``replicates``, ``pareto`` and ``admissible`` (risk at most
    ``max_risk``); the first row is the original file.
    """

    points: pl.DataFrame
    risk_name: str
    loss_name: str
    max_risk: float | None

    def to_frame(self) -> pl.DataFrame:
        """One row per candidate (polars)."""
        return self.points

    @property
    def n_candidates(self) -> int:
        """The candidate points (not the reference points of :data:`REFERENCE`)."""
        return int((~self.points.get_column("candidate").is_in(REFERENCE)).sum())

    @property
    def best(self) -> str | None:
        """The admissible candidate with the least loss (None if none is admissible)."""
        ok = self.points.filter(pl.col("admissible") & ~pl.col("candidate").is_in(REFERENCE))
        if ok.height == 0:
            return None
        return str(ok.sort(["loss", "risk"]).get_column("candidate")[0])

    def summary(self) -> Summary:
        """The candidates on the Pareto front and the recommended one."""
        front = self.points.filter(pl.col("pareto") & ~pl.col("candidate").is_in(REFERENCE))
        rows: list[tuple[str, Any]] = [
            ("candidates", self.n_candidates),
            ("on the Pareto front", front.height),
            ("risk of the original file", float(self.points["risk"][0])),
        ]
        if self.max_risk is not None:
            rows.append(("maximum tolerable risk", self.max_risk))
            rows.append(("admissible candidates", int(self.points["admissible"].sum()) - 0))
            rows.append(("recommended (least loss below the maximum risk)", self.best or "none"))
        notes = [f"risk measure: {self.risk_name}; loss measure: {self.loss_name}"]
        return Summary("R-U confidentiality map", rows, notes)


def ru_map(
    data: Any,
    candidates: Mapping[str, ProtectionMethod] | Sequence[tuple[str, ProtectionMethod]],
    *,
    risk: str | RiskFunction = "global_risk",
    loss: str | LossFunction = "sse_sst",
    seeds: Sequence[int] = (0, 1, 2),
    max_risk: float | None = None,
    start: Microdata | None = None,
    **roles: Any,
) -> RUMapResult:
    """Compute the R-U map of a set of candidate releases.

    Parameters
    ----------
    data : DataFrame or Microdata
    candidates : dict or list of (label, method)
        The candidate releases, e.g. ``{"MDAV k=3": Microaggregation(k=3), ...}``.
    risk, loss : str or callable
        Measures by name (see ``RISK_MEASURES`` / ``LOSS_MEASURES``) or functions
        ``f(original, protected) -> float``.
    seeds : list of int
        Seeds for randomised methods (deterministic methods run once).
    max_risk : float, optional
        Maximum tolerable risk; marks the admissible candidates.
    start : Microdata, optional
        The state the candidates are applied to: the file after the steps already applied
        (default: ``data`` itself).  Risk and loss are still measured against ``data``, the
        original; the map then has a point ``"current"`` for ``start`` as it is.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> from sdckit.masking import RankSwapping
    >>> rng = np.random.default_rng(0)
    >>> df = pl.DataFrame({"x": rng.normal(size=200), "y": rng.normal(size=200)})
    >>> grid = {f"swap p={p}": RankSwapping(p=p) for p in (1, 5, 20)}
    >>> res = ru_map(df, grid, risk="record_linkage", loss="sse_sst", numeric=["x", "y"])
    >>> res.points.height
    4
    """
    md = as_microdata(data, **roles)
    items = list(candidates.items()) if isinstance(candidates, Mapping) else list(candidates)
    if not items:
        raise ParameterError("The R-U map needs at least one candidate method.")
    risk_fn, loss_fn = risk_measure(risk), loss_measure(loss)
    seeds = list(seeds)
    if not seeds:
        raise ParameterError("The 'seeds' parameter needs at least one seed.")
    rows = [
        {
            "candidate": "original",
            "method": "none",
            "risk": float(risk_fn(md, md)),
            "risk_sd": 0.0,
            "loss": float(loss_fn(md, md)),
            "loss_sd": 0.0,
            "replicates": 1,
        }
    ]
    base = md if start is None else start
    if base is not md:
        rows.append({
            "candidate": "current", "method": "steps applied", "risk": float(risk_fn(md, base)),
            "risk_sd": 0.0, "loss": float(loss_fn(md, base)), "loss_sd": 0.0, "replicates": 1,
        })  # fmt: skip
    for label, method in items:
        if not isinstance(method, ProtectionMethod):
            raise ParameterError(f"The candidate {label!r} is not a protection method.")
        runs = [_with_seed(method, s) for s in seeds] if method.stochastic else [method]
        values = []
        for m in runs:
            protected: Protected = m.apply(base)
            values.append((risk_fn(md, protected.microdata), loss_fn(md, protected.microdata)))
        arr = np.array(values, dtype=np.float64)
        rows.append(
            {
                "candidate": str(label),
                "method": method.name,
                "risk": float(arr[:, 0].mean()),
                "risk_sd": float(arr[:, 0].std(ddof=1)) if len(arr) > 1 else 0.0,
                "loss": float(arr[:, 1].mean()),
                "loss_sd": float(arr[:, 1].std(ddof=1)) if len(arr) > 1 else 0.0,
                "replicates": len(arr),
            }
        )
    points = pl.DataFrame(rows)
    front = pareto_front(points["risk"].to_numpy(), points["loss"].to_numpy())
    if max_risk is not None:
        max_risk = check_real(max_risk, "max_risk", minimum=0.0)
        admissible = points["risk"].to_numpy() <= max_risk
    else:
        admissible = np.ones(points.height, dtype=bool)
    points = points.with_columns(pl.Series("pareto", front), pl.Series("admissible", admissible))
    risk_name = risk if isinstance(risk, str) else getattr(risk, "__name__", "custom")
    loss_name = loss if isinstance(loss, str) else getattr(loss, "__name__", "custom")
    return RUMapResult(points=points, risk_name=risk_name, loss_name=loss_name, max_risk=max_risk)

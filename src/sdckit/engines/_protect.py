"""Protection steps where the records are: the dispatcher from method class to engine step,
and the k-anonymity recount of a file on an engine.

:data:`ENGINE_STEPS` maps each method class that has an engine version to its function
``step(frame, engine, method, *, seed, roles) -> frame`` (native frames carrying the row index
:data:`sdckit.engines._rows.ROW`).  The deterministic steps are in :mod:`._steps`; the
stochastic ones in :mod:`._random` (PRAM, additive noise) and :mod:`._groups`
(microaggregation within strata, targeted record swapping over the whole file), which
draw what the in-memory methods draw for the same rows.  A method without an engine version is
refused with an :class:`EngineError` that names it and the way out (the in-memory path).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sdckit.engines._api import EngineError, risk_on_engine
from sdckit.engines._groups import microaggregation_on_engine, swapping_on_engine
from sdckit.engines._random import noise_on_engine, pram_on_engine
from sdckit.engines._rows import ROW
from sdckit.engines._steps import recode_on_engine, suppress_on_engine, top_bottom_on_engine
from sdckit.masking import AddNoise, Microaggregation, Pram, TargetedRecordSwapping
from sdckit.masking.recoding import GlobalRecoding, TopBottomCoding
from sdckit.masking.suppression import LocalSuppression

__all__ = ["ENGINE_STEPS", "engine_step", "k_violations_on_engine", "unsupported_reason"]

StepFunction = Callable[..., Any]

#: Method class -> its engine step (``step(frame, engine, method, *, seed, roles)``).
ENGINE_STEPS: dict[type, StepFunction] = {
    GlobalRecoding: recode_on_engine,
    TopBottomCoding: top_bottom_on_engine,
    LocalSuppression: suppress_on_engine,
    Pram: pram_on_engine,
    AddNoise: noise_on_engine,
    Microaggregation: microaggregation_on_engine,
    TargetedRecordSwapping: swapping_on_engine,
}


def unsupported_reason(method: Any, engine: str) -> str | None:
    """Why ``method`` cannot run on ``engine`` (None: it can).

    Examples
    --------
    >>> from sdckit.masking.recoding import GlobalRecoding
    >>> unsupported_reason(GlobalRecoding(mapping={"a": {1: 2}}), "dask") is None
    True
    """
    name = getattr(method, "name", type(method).__name__)
    if type(method) not in ENGINE_STEPS:
        return f"{name} has no engine version yet"
    if isinstance(method, TopBottomCoding) and method.quantile:
        return f"{name} with quantile=True needs exact quantiles of every record"
    if isinstance(method, AddNoise) and method.method != "additive":
        return f"{name} with method={method.method!r} needs the moments of every record"
    return None


def engine_step(method: Any, engine: str) -> StepFunction:
    """The engine step of ``method``; :class:`EngineError` when it has none.

    Examples
    --------
    >>> from sdckit.masking.recoding import GlobalRecoding
    >>> engine_step(GlobalRecoding(mapping={"a": {1: 2}}), "streaming").__name__
    'recode_on_engine'
    """
    reason = unsupported_reason(method, engine)
    if reason is not None:
        raise EngineError(
            f"{reason}, so it cannot run on engine={engine!r}; run the job in memory "
            '([input] engine = "polars", or --engine polars) or leave the step out.'
        )
    return ENGINE_STEPS[type(method)]


def run_steps(
    frame: Any,
    engine: str,
    methods: Sequence[Any],
    seeds: Sequence[Any],
    roles: Mapping[str, Any],
    progress: Callable[[str, int, int], None] | None = None,
) -> Any:
    """``methods`` one after the other on ``frame`` (every step checked before any runs)."""
    functions = [engine_step(m, engine) for m in methods]
    total = len(methods)
    for i, (method, function, seed) in enumerate(zip(methods, functions, seeds, strict=True)):
        if progress is not None:
            progress(f"Step {i + 1}: {method.name}", i, total)
        frame = function(frame, engine, method, seed=seed, roles=roles)
    if progress is not None:
        progress("Steps", total, total)
    return frame


def k_violations_on_engine(frame: Any, engine: str, keys: Sequence[str], k: int) -> int:
    """Records of ``frame`` with ``fk < k`` (missing key values as wildcards), counted on the
    engine by :func:`sdckit.engines.risk_on_engine` (a class table), not by the methods.

    Examples
    --------
    >>> import polars as pl
    >>> lf = pl.LazyFrame({"a": [1, 1, None, 2], "b": [1, 1, 1, 1]})
    >>> k_violations_on_engine(lf, "streaming", ["a", "b"], 3)
    1
    """
    data = frame.drop(ROW) if engine == "streaming" and ROW in frame.collect_schema() else frame
    res = risk_on_engine(data, keys=list(keys), ks=(k,), engine=engine)
    return int(res.figures()[f"k{k}_violations"])

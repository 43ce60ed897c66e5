"""The automatic protection step of a job (``method = "auto"``) and the ``[target]`` it meets.

The privacy models of the search are declared in ``[target]`` beside the release check's
bounds: ``k`` is both (the search looks for a k-anonymous generalisation, the release check
counts ``fk`` on the released file), ``l``, ``t``, ``delta``, ``k_map``, ``average_risk``,
``sample_uniqueness`` and ``population_uniqueness`` are models of the search only
(:mod:`sdckit.lattice.targets`).  An ``auto`` step that gives no ``models`` of its own takes
them from ``[target]``; the job's risk bounds are checked by the release check on the released
file, as for every job.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sdckit.errors import ParameterError
from sdckit.lattice.targets import MODEL_KEYS, loss_measure, privacy_models

__all__ = ["SEARCH_ONLY_KEYS", "auto_params", "is_auto", "target_models"]

#: The ``[target]`` keys the release check does not read: models of the search only.
SEARCH_ONLY_KEYS: tuple[str, ...] = tuple(k for k in MODEL_KEYS if k != "k")


def is_auto(cls: type) -> bool:
    """Whether a step's class is the automatic protection (the lattice search)."""
    return getattr(cls, "alias", None) == "auto"


def target_models(target: Mapping[str, Any] | None) -> dict[str, Any]:
    """The privacy-model entries of a ``[target]`` table."""
    return {k: v for k, v in (target or {}).items() if k in MODEL_KEYS}


def auto_params(
    params: dict[str, Any],
    target: Mapping[str, Any] | None,
    base: Path | None,
    where: str,
) -> dict[str, Any]:
    """An ``auto`` step's parameters with its models taken from ``[target]`` (when it gives
    none) and its hierarchy files made absolute (relative to the job file's folder).

    Examples
    --------
    >>> auto_params({"hierarchies": {"sex": {"kind": "flat"}}}, {"k": 5}, None, "step 1")
    {'hierarchies': {'sex': {'kind': 'flat'}}, 'models': {'k': 5}}
    """
    params = dict(params)
    declared = target_models(target)
    if "models" in params:
        beyond_k = [k for k in declared if k != "k"]
        if beyond_k:
            raise ParameterError(
                f"{where}: the privacy models are given both in the step ('models') and in "
                f"[target] ({', '.join(beyond_k)}); give them in [target] only."
            )
    else:
        if not declared:
            raise ParameterError(
                f"{where}: automatic protection needs a target: add [target] with k = 5 (and "
                "l, t, delta, k_map, average_risk, ... as needed), or give the step 'models'."
            )
        params["models"] = declared
    # the models and the measure by name, checked now rather than after the steps before
    source = "[target]" if declared and params["models"] is declared else f"{where}: models"
    if isinstance(params["models"], Mapping):
        privacy_models(params["models"], source)
    if "loss" in params:
        loss_measure(params["loss"], f"{where}: loss")
    hierarchies = params.get("hierarchies")
    if isinstance(hierarchies, dict) and base is not None:
        resolved: dict[str, Any] = {}
        for key, source in hierarchies.items():
            if isinstance(source, str) and source.strip():
                path = Path(source)
                path = path if path.is_absolute() else base / path
                if not path.is_file():
                    raise ParameterError(
                        f"{where}: the hierarchy file of key {key!r} does not exist "
                        f"({source}); paths are relative to the job file."
                    )
                source = str(path.resolve())
            resolved[key] = source
        params["hierarchies"] = resolved
    return params


def check_search_only_keys(target: Mapping[str, Any] | None, has_auto_step: bool) -> None:
    """Refuse privacy models in ``[target]`` that nothing would meet: no ``auto`` step searches
    for them and the release check does not count them."""
    extra = [k for k in target_models(target) if k != "k"]
    if extra and not has_auto_step:
        raise ParameterError(
            f"[target] {', '.join(map(repr, extra))} are privacy models of automatic "
            'protection, which no step of this job runs: add a step with method = "auto", '
            "or remove them."
        )


def search_lines(session: Any) -> list[str]:
    """Per automatic protection step of ``session``: the transformation chosen and why, and
    the next best ones (what the command line prints under the step)."""
    from sdckit.lattice.explain import chosen_words, close_nodes

    lines: list[str] = []
    for step in session.history:
        search = step.result.details.get("search")
        if search is None:
            continue
        n = session.original.n_records
        lines.append(f"Step {step.number} ({step.method}): {chosen_words(search, n)}")
        close = close_nodes(search, n, 3)
        if close.height:
            others = "; ".join(
                f"{node} (loss {loss:g}, {suppressed} suppressed)"
                for node, loss, suppressed in close.select("node", "loss", "n_suppressed").rows()
            )
            lines.append(f"  Next best meeting the target: {others}.")
    return lines

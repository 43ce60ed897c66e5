"""Automatic protection as a method: search the lattice, release its optimum.

:class:`LatticeAnonymization` (``method = "auto"`` in a job file) searches the lattice of the
keys' generalisation levels for the least-loss node that meets the privacy models within the
suppression limit (:func:`~sdckit.lattice.search_lattice`), then releases it: every key shown
at its level (the hierarchy's labels), and the records of the suppressed classes with every key
missing, as local suppression marks a suppressed value (a missing value then matches any value
in sdckit's risk measures, so a suppressed record lowers no one's class size).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import polars as pl

from sdckit.errors import ColumnError, DataError, InfeasibleError, ParameterError
from sdckit.lattice._check import evaluate_node, suppression_budget, top_records
from sdckit.lattice._data import LatticeData
from sdckit.lattice._sources import hierarchy_rows
from sdckit.lattice.loss import LossMeasure
from sdckit.lattice.models import DPresence, KMap, PrivacyModel
from sdckit.lattice.search import ALGORITHMS, SearchResult, search_lattice
from sdckit.lattice.targets import loss_measure, privacy_models
from sdckit.microdata import Microdata
from sdckit.protection import (
    ColumnMap,
    Constraint,
    Instance,
    ListOf,
    Param,
    Protected,
    ProtectionMethod,
    Real,
    String,
)
from sdckit.twins import function_twin

__all__ = ["LatticeAnonymization", "anonymize_lattice"]

Progress = Any


class _Table(Constraint):
    """A non-empty table with text keys (a job file's inline table)."""

    kind = "table"

    def __init__(self, text: str) -> None:
        self.text = text

    def accepts(self, value: object) -> bool:
        return isinstance(value, Mapping) and bool(value) and all(isinstance(k, str) for k in value)

    def type_matches(self, value: object) -> bool:
        return isinstance(value, Mapping)

    def describe(self) -> str:
        return self.text


class _Hierarchy(Constraint):
    """A key's hierarchy: a file path, a builder table, rows, or an object with ``table()``."""

    kind = "hierarchy"

    def accepts(self, value: object) -> bool:
        if value is None:  # the key kept as it is
            return True
        if isinstance(value, str):
            return bool(value.strip())
        if isinstance(value, Mapping):  # a builder, checked when it builds (its kind, widths)
            return True
        if hasattr(value, "table"):
            return True
        return (
            isinstance(value, Sequence)
            and bool(value)
            and all(isinstance(r, Sequence) and not isinstance(r, str) for r in value)
        )

    def type_matches(self, value: object) -> bool:
        return isinstance(value, str | Mapping | Sequence) or hasattr(value, "table")

    def describe(self) -> str:
        return (
            'an ARX hierarchy CSV file, a builder table {kind = "bands", widths = [...]}, '
            '{kind = "redact"} or {kind = "flat"}, or the hierarchy\'s rows'
        )


class LatticeAnonymization(ProtectionMethod):
    """The least-loss generalisation of the keys that meets the privacy models (ARX's search).

    Parameters
    ----------
    hierarchies : dict
        Per key variable, its generalisation hierarchy: the path of an ARX hierarchy CSV file,
        an inline builder (``{"kind": "bands", "widths": [5, 10, 20]}``, ``{"kind":
        "redact"}`` for codes, ``{"kind": "flat"}`` for value then ``*``), the rows (one per
        value: the value, then its label per level) or an object with a ``table()`` method.
        A key without a hierarchy is kept as it is (it still counts in every class).
    models : list of PrivacyModel or dict
        The target: privacy model objects (:class:`~sdckit.lattice.KAnonymity`, ...) or a
        ``[target]``-style table (``{"k": 5, "l": {...}}``, see
        :mod:`sdckit.lattice.targets`).
    loss : str or LossMeasure, default "height"
        The measure minimised: a name (``"height"``, ARX's ``"loss"``, ``"entropy"``, ... as
        :mod:`sdckit.lattice` provides them) or an object (a measure with parameters).
    suppression_limit : float, default 0.0
        The share of records that may be suppressed (ARX's limit: at most
        ``floor(limit * n)`` records).
    algorithm : str, optional
        The search algorithm (:func:`~sdckit.lattice.search_lattice`; default: its default).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"age": [31, 35, 47, 48, 33], "sex": ["f", "m", "f", "f", "m"]})
    >>> method = LatticeAnonymization(
    ...     hierarchies={"age": {"kind": "bands", "widths": [10]}, "sex": {"kind": "flat"}},
    ...     models={"k": 2}, suppression_limit=0.2,
    ... )
    >>> res = method.apply(df, keys=["age", "sex"])
    >>> res.details["levels"], res.details["n_suppressed"]
    ({'age': 1, 'sex': 0}, 1)
    >>> res.data.rows()
    [(None, None), ('[30, 40)', 'm'), ('[40, 50)', 'f'), ('[40, 50)', 'f'), ('[30, 40)', 'm')]
    """

    name: ClassVar[str] = "automatic protection"
    alias: ClassVar[str] = "auto"
    #: What the progress of :meth:`apply` counts (the runner shows it under the step).
    progress_unit: ClassVar[str] = "lattice search"
    description: ClassVar[str] = (
        "Generalises the key variables ({variables}) to the levels of their hierarchies with "
        "the least information loss that meets the target, suppressing the records that "
        "still fail it within a limit (ARX's lattice search)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "hierarchies": Param(
            ColumnMap(_Hierarchy(), role="keys"),
            help="per key: an ARX hierarchy file or a builder (bands, redact, flat)",
        ),
        "models": Param(
            _Table("a [target] table of privacy models ({k = 5, l = {...}})"),
            ListOf(Instance((PrivacyModel,), "a privacy model"), min_length=1),
            help="the target: privacy models (default in a job: its [target])",
        ),
        "loss": Param(
            String(),
            Instance((LossMeasure,), "a loss measure"),
            help="the information-loss measure minimised (height, loss, entropy, ...)",
        ),
        "suppression_limit": Param(
            Real(minimum=0.0, maximum=1.0), help="share of records that may be suppressed"
        ),
        "algorithm": Param(String(), None, help="search algorithm (default: the search's)"),
    }

    def __init__(
        self,
        *,
        hierarchies: Mapping[str, Any],
        models: Sequence[PrivacyModel] | Mapping[str, Any],
        loss: str | LossMeasure = "height",
        suppression_limit: float = 0.0,
        algorithm: str | None = None,
    ) -> None:
        self.hierarchies = hierarchies
        self.models = models
        self.loss = loss
        self.suppression_limit = suppression_limit
        self.algorithm = algorithm

    def apply(self, data: Any, *, progress: Progress | None = None, **roles: Any) -> Protected:
        """Protect ``data``; ``progress(done, total)`` counts the lattice's nodes decided."""
        return self._protect(data, roles, progress=progress)

    def validate_params(
        self, columns: Sequence[str] | None = None, *, where: str | None = None
    ) -> None:
        """The declared checks, then the models and the loss measure by name (an unknown or
        not yet available name is refused before the search, with the names there are)."""
        super().validate_params(columns, where=where)
        prefix = f"{where}: " if where else ""
        try:
            self.target_models()
            loss_measure(self.loss)
        except ParameterError as exc:
            raise ParameterError(f"{prefix}{exc}") from None
        # the search module's names, read at run time (the search gains algorithms)
        if self.algorithm is not None and self.algorithm not in ALGORITHMS:
            raise ParameterError(
                f"{prefix}The 'algorithm' parameter of {type(self).__name__} must be one of "
                f"{', '.join(map(repr, ALGORITHMS))}."
            )

    # ------------------------------------------------------------------ preparing
    def target_models(self) -> list[PrivacyModel]:
        """The privacy models (fresh objects for a table)."""
        if isinstance(self.models, Mapping):
            models = privacy_models(self.models, "models")
            if not models:
                raise ParameterError(
                    "models has no privacy model; give k, l, t, delta, k_map, average_risk, "
                    "sample_uniqueness or population_uniqueness."
                )
            return models
        return list(self.models)

    def lattice_data(self, md: Microdata, models: Sequence[PrivacyModel]) -> LatticeData:
        """The records coded with a hierarchy per key (every key of ``md``, in its order)."""
        for key in self.hierarchies:
            if key not in md.keys:
                raise ParameterError(
                    f"hierarchies names {key!r}, which is not a key variable; add it to the keys "
                    "or remove its hierarchy."
                )
        if not md.keys:
            raise ParameterError("automatic protection needs key variables (the keys role).")
        for model in models:
            if isinstance(model, DPresence) or (
                isinstance(model, KMap) and model.population_size is None
            ):
                # the released file would be the research subset, not the whole input: not yet
                raise ParameterError(
                    f"{model.describe()} needs a research subset of a population table, which "
                    "automatic protection of a file does not take yet; search it from Python "
                    "(sdckit.lattice.search_lattice with LatticeData.build(subset=...)), or "
                    "give k-map a population_size and an estimator."
                )
        linked = sorted(c for c, key in (md.linked or {}).items() if key in md.keys)
        if linked:
            # a linked column released as it is would give back the generalised key
            raise ParameterError(
                f"the column {linked[0]!r} is linked to a key; automatic protection generalises "
                "the keys and would release it unchanged: drop it from the release or recode "
                "it with its key."
            )
        frame = md.frame
        for key in md.keys:
            missing = frame.get_column(key).null_count()
            if missing:
                raise DataError(
                    f"key {key!r} has {missing} missing value(s); the search needs every key "
                    "value (recode them into a category first)."
                )
        hierarchies = {
            key: hierarchy_rows(self.hierarchies.get(key), frame.get_column(key), key)
            for key in md.keys
        }
        sensitive = _named(models, ("attribute", "attributes", "sensitive"))
        for name in sensitive:
            if name not in frame.columns:
                raise ColumnError(
                    f"a privacy model names the attribute {name!r}, which is not a column of "
                    "the data; give the column of the sensitive attribute."
                )
        subsets = _named(models, ("subset",))
        return LatticeData.build(
            frame,
            hierarchies,
            sensitive=sensitive,
            subset=subsets[0] if subsets else None,
            weight=md.weight,
        )

    def search(
        self, md: Microdata, progress: Progress | None = None
    ) -> tuple[LatticeData, list[PrivacyModel], LossMeasure, SearchResult]:
        """Code the data and search its lattice (no release); ``progress(done, total)``
        counts the nodes decided."""
        models = self.target_models()
        measure = loss_measure(self.loss)
        data = self.lattice_data(md, models)
        algorithm = {} if self.algorithm is None else {"algorithm": self.algorithm}
        result = search_lattice(
            data, models, measure, suppression_limit=float(self.suppression_limit),
            progress=progress, **algorithm,
        )  # fmt: skip
        return data, models, measure, result

    # ------------------------------------------------------------------ applying
    def _apply(self, md: Microdata, progress: Progress | None = None) -> Protected:
        data, models, measure, result = self.search(md, progress)
        if result.optimum is None:
            raise InfeasibleError(
                f"no generalisation of the keys meets the target ({' and '.join(result.models)}) "
                f"with at most {self.suppression_limit:.2%} of the records suppressed; raise "
                "suppression_limit, give the keys coarser hierarchies or relax the target."
            )
        node = evaluate_node(
            data, result.optimum, models,
            suppression_limit=float(self.suppression_limit), measure=measure,
        )  # fmt: skip
        suppressed = node.suppressed[node.classes.class_of]
        frame = md.frame.with_columns(
            [_released(md.frame, data, j, level, suppressed) for j, level in
             enumerate(result.optimum)]
        )  # fmt: skip
        levels = dict(zip(data.keys, result.optimum, strict=True))
        details = {
            "search": result,
            "levels": levels,
            "n_suppressed": int(suppressed.sum()),
            "suppressed": suppressed,
            "loss": result.loss,
        }
        return Protected.from_frames(md, frame, self, details=details)

    # ------------------------------------------------------------------ verifying
    def verify(self, original: Microdata, protected: Protected) -> None:
        """Recount the released file: every key shows its value's label at the chosen level or
        is missing with every other key of the record, no more records than the limit are
        suppressed, the other columns are unchanged, and every privacy model holds on the
        released records (their classes counted again from the written values)."""
        models = self.target_models()
        data = self.lattice_data(original, models)
        levels = protected.details.get("levels")
        self._require(
            isinstance(levels, dict) and set(levels) == set(data.keys),
            "the result does not say the level chosen for every key",
        )
        try:
            node = data.check_levels([levels[k] for k in data.keys])
        except (ParameterError, TypeError, ValueError):
            node = None
        self._require(node is not None, "the result's levels are not a node of the lattice")
        out = protected.microdata.frame
        for col in original.frame.columns:
            if col not in original.keys:
                self._require(
                    original.frame.get_column(col).equals(out.get_column(col), null_equal=True),
                    f"the column {col!r} was changed",
                )
        missing = np.column_stack([out.get_column(k).is_null().to_numpy() for k in data.keys])
        suppressed = missing.all(axis=1)
        # the release roles suppress a household-level key in every member of a household
        # where one member's was: the only other missing values allowed
        by_roles = [j for j, k in enumerate(data.keys) if k in original.household_level]
        partial = missing.any(axis=1) & ~suppressed
        others = [j for j in range(len(data.keys)) if j not in by_roles]
        self._require(
            not bool(missing[partial][:, others].any())
            and (not partial.any() or bool(protected.details.get("release_roles"))),
            "a record has some keys suppressed but not all",
        )
        budget = suppression_budget(float(self.suppression_limit), original.n_records)
        # counted as the search counts them: records whose every key is at its top label
        # lose nothing more by suppression (the search's check, ARX's)
        counted = suppressed & ~top_records(data, node)
        self._require(int(counted.sum()) <= budget, "more records suppressed than the limit")
        filled = []
        for j, key in enumerate(data.keys):
            expected = _released(original.frame, data, j, levels[key], suppressed)
            shown = out.get_column(key)
            if partial.any():  # a value the release roles suppressed: its label, recounted
                lost = pl.Series(partial) & shown.is_null()
                shown = pl.select(pl.when(lost).then(expected).otherwise(shown)).to_series()
            self._require(
                expected.cast(pl.String).equals(shown.cast(pl.String), null_equal=True),
                f"the key {key!r} does not show the labels of level {levels[key]}",
            )
            filled.append(shown.alias(key))
        out = out.with_columns(filled)
        kept = out.filter(pl.Series(~suppressed))
        if kept.height == 0:
            return
        recount = LatticeData.build(
            kept,
            {k: hierarchy_rows(None, kept.get_column(k), k) for k in data.keys},
            sensitive=list(data.sensitive),
            subset=None if data.subset is None else data.subset[~suppressed],
            weight=original.weight,
        )
        classes = recount.classes((0,) * len(data.keys))
        for model in models:
            model.prepare(recount)
            if model.sample_based:
                weights = classes.weight_sums() if model.uses_weights else None
                self._require(
                    bool(model.holds(classes.sizes, weights)),
                    f"{model.describe()} does not hold on the released records",
                )
            else:
                self._require(
                    bool(np.all(model.class_passes(classes))),
                    f"{model.describe()} does not hold on the released records",
                )

    @classmethod
    def contract_example(cls) -> tuple[ProtectionMethod, Microdata]:
        """Twelve records, two keys with hierarchies, k = 3 with 1/6 of the records suppressed."""
        df = pl.DataFrame(
            {
                "age": [21, 23, 25, 34, 36, 38, 45, 41, 44, 52, 67, 29],
                "sex": ["f", "m", "f", "m", "m", "f", "f", "f", "m", "m", "f", "m"],
                "income": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0],
            }
        )
        md = Microdata(df, keys=["age", "sex"], numeric=["income"])
        method = cls(
            hierarchies={"age": {"kind": "bands", "widths": [10, 20]}, "sex": {"kind": "flat"}},
            models={"k": 3},
            suppression_limit=0.2,
        )
        return method, md


def _named(models: Sequence[PrivacyModel], attributes: Sequence[str]) -> list[str]:
    """The column names the models hold under ``attributes`` (their sensitive attribute, their
    research subset), in order, once."""
    names: dict[str, None] = {}
    for model in models:
        for attribute in attributes:
            value = getattr(model, attribute, None)
            for name in [value] if isinstance(value, str) else value or ():
                if isinstance(name, str):
                    names.setdefault(name, None)
    return list(names)


def _released(
    frame: pl.DataFrame, data: LatticeData, j: int, level: int, suppressed: np.ndarray
) -> pl.Series:
    """Key ``j`` at ``level`` (its labels; the original column at level 0), missing where the
    record is suppressed."""
    key = data.keys[j]
    if level == 0:
        column = frame.get_column(key)
    else:
        labels = pl.Series(key, data.labels[j][level], dtype=pl.String)
        column = labels.gather(data.maps[j][level][data.base[:, j]]).alias(key)
    if not suppressed.any():
        return column
    return pl.select(
        pl.when(pl.Series(suppressed)).then(None).otherwise(column).alias(key)
    ).to_series()


@function_twin(LatticeAnonymization)
def anonymize_lattice(data: Any, **params: Any) -> Protected:
    """The least-loss generalisation that meets the target (see :class:`LatticeAnonymization`).

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.microdata.Microdata`.
    hierarchies, models, loss, suppression_limit, algorithm
        The parameters of :class:`LatticeAnonymization`, by name (keyword arguments only).
    **roles
        The role keywords of :class:`~sdckit.microdata.Microdata` (``keys``, ...).

    Returns
    -------
    Protected
        ``details["levels"]`` is the level chosen per key, ``details["search"]`` the
        :class:`~sdckit.lattice.SearchResult`.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"sex": ["f", "m", "f", "f"]})
    >>> res = anonymize_lattice(df, keys=["sex"], hierarchies={"sex": {"kind": "flat"}},
    ...                         models={"k": 2})
    >>> res.details["levels"], res.data["sex"].to_list()
    ({'sex': 1}, ['*', '*', '*', '*'])
    """

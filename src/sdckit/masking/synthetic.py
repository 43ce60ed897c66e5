"""Synthetic data by sequential conditional models (as the R package synthpop does).

Variables are synthesised one after another in a *visit sequence*.  The first synthesised
variable is drawn from its observed distribution; every later one from a model of it given the
variables before it in the sequence, fitted on the original data:

* ``method="cart"`` (default): a classification or regression tree; a synthetic record falls into
  a leaf and receives the value of a random original record of that leaf (so released values
  are real values and the conditional distribution is non-parametric);
* ``method="parametric"``: a linear model with normal residuals for numeric variables and a
  multinomial logistic model for categorical ones.

*Fully synthetic* data synthesise every variable; *partly synthetic* data keep the variables
not listed in ``synthesize`` and use them as predictors.  A fitted :class:`Synthesizer` can be
saved and reused, and ``generate(copies=m)`` gives several synthetic copies from one fit.

Missing values of predictors: a missing value of a categorical predictor is a level of its own;
a numeric predictor with missing values enters the models with its missing values replaced by
its observed mean plus an indicator column of missingness (so trees and linear models treat
those records apart).  A synthesised numeric variable must be complete (:class:`DataError`).

Household-level variables (``Microdata.household_level``) that are synthesised are modelled on
one row per household (its first member's predictors) and drawn once per household of the
synthetic file (the kept household id), so every member gets the same value; the replicated
uniques are then redrawn household by household, in place.

Synthetic records that reproduce the key combination of an original sample unique are found by
:func:`sdckit.risk.replicated_uniques`; the propensity-score MSE of a synthetic file is
``propensity_mse`` of the utility measures.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl

from sdckit._codes import encode_column, first_index
from sdckit._validation import check_choice, check_int, check_seed, column_list
from sdckit.errors import ColumnError, DataError, ParameterError
from sdckit.microdata import Microdata, as_microdata
from sdckit.protection import (
    Boolean,
    Columns,
    Integer,
    Options,
    Param,
    Protected,
    ProtectionMethod,
    Seed,
)
from sdckit.risk.replicated import replicated_uniques
from sdckit.twins import function_twin

__all__ = ["Synthesis", "Synthesizer", "synthesize"]


def _is_categorical(md: Microdata, col: str) -> bool:
    dtype = md.frame.schema[col]
    return col in md.keys or col in md.sensitive or not dtype.is_numeric() or dtype == pl.Boolean


def _household_variables(md: Microdata, cols: Sequence[str]) -> set[str]:
    """The variables of ``cols`` that are household-level (synthesised per household)."""
    if md.household is None:
        return set()
    return set(cols) & set(md.household_level)


def _households(md: Microdata) -> tuple[np.ndarray, np.ndarray]:
    """Household number of every record (ids in sorted order) and each household's first member."""
    column = md.household
    if column is None:  # (only called for files with household-level variables)
        raise ColumnError("Household-level variables need the household id: pass household=...")
    codes, levels = encode_column(md.frame.get_column(column))
    if (codes < 0).any():
        raise DataError(
            f"The household column {column!r} has missing values; every record needs a "
            "household id."
        )
    return codes.astype(np.int64), first_index(codes, len(levels))


@dataclass
class _VariableModel:
    name: str
    categorical: bool
    predictors: list[str]
    model: Any  # fitted sklearn estimator, or None for the marginal
    # leaves of a tree: sorted leaf ids, start and size of each leaf's donor values in ``pool``
    leaf_values: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None
    levels: pl.Series | None
    observed: np.ndarray  # original codes (categorical) or values (numeric)
    residual_sd: float = 0.0
    per_household: bool = False  # fitted and drawn on one row per household


class Synthesizer:
    """Fit sequential conditional models on the original file and generate synthetic copies.

    Parameters
    ----------
    synthesize : list of str, optional
        Variables to synthesise (default: every key, numeric and sensitive variable).  The
        other columns of the file are kept (partly synthetic data) and serve as predictors.
    visit_sequence : list of str, optional
        Order of synthesis (default: the order of ``synthesize``).
    method : {"cart", "parametric"}
    min_samples_leaf : int, default 5
        Smallest leaf of a tree (larger leaves protect more).
    seed : int or numpy.random.Generator, optional

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> rng = np.random.default_rng(0)
    >>> df = pl.DataFrame({"sex": rng.integers(1, 3, 200), "age": rng.integers(18, 90, 200)})
    >>> syn = Synthesizer(seed=1).fit(df, keys=["sex"], numeric=["age"])
    >>> copies = syn.generate(copies=2)
    >>> len(copies), copies[0].height
    (2, 200)
    """

    def __init__(
        self,
        *,
        synthesize: Sequence[str] | None = None,
        visit_sequence: Sequence[str] | None = None,
        method: str = "cart",
        min_samples_leaf: int = 5,
        seed: Any = None,
    ) -> None:
        self.synthesize = synthesize
        self.visit_sequence = visit_sequence
        self.method = method
        self.min_samples_leaf = min_samples_leaf
        self.seed = seed
        self._models: list[_VariableModel] = []
        self._md: Microdata | None = None
        self._predictor_levels: dict[str, list[Any]] = {}
        self._predictor_fill: dict[str, tuple[float, bool]] = {}

    # ------------------------------------------------------------------ fitting
    def _sequence(self, md: Microdata) -> tuple[list[str], list[str]]:
        targets = list(column_list(self.synthesize, "synthesize")) or list(
            dict.fromkeys([*md.keys, *md.numeric, *md.sensitive])
        )
        if not targets:
            raise ColumnError(
                "Nothing to synthesise: pass synthesize=[...] or give key/numeric variables."
            )
        order = list(column_list(self.visit_sequence, "visit_sequence")) or targets
        if sorted(order) != sorted(targets):
            raise ParameterError(
                "The 'visit_sequence' must list exactly the variables to synthesise."
            )
        for c in order:
            if c not in md.frame.columns:
                raise ColumnError(f"The variable {c!r} is not in the data.")
        role_cols = {md.weight, md.strata, md.household}
        kept = [c for c in md.frame.columns if c not in order and c not in role_cols]
        return order, kept

    def _features(self, frame: pl.DataFrame, cols: list[str], md: Microdata) -> np.ndarray:
        """Predictor matrix; categories are coded with the levels seen when fitting."""
        if not cols:
            return np.zeros((frame.height, 0))
        parts = []
        for c in cols:
            s = frame.get_column(c)
            if _is_categorical(md, c):
                if c not in self._predictor_levels:
                    self._predictor_levels[c] = encode_column(
                        md.frame.get_column(c).cast(pl.String)
                    )[1].to_list()
                levels = self._predictor_levels[c]
                codes = s.cast(pl.String).replace_strict(
                    levels, list(range(len(levels))), default=-1, return_dtype=pl.Int64
                )
                parts.append(codes.to_numpy().astype(np.float64)[:, None])
            else:
                fill, flagged = self._fill_value(c, md)
                v = s.cast(pl.Float64).to_numpy()
                missing = np.isnan(v)
                parts.append(np.where(missing, fill, v)[:, None])
                if flagged:  # missing values: the mean plus an indicator of missingness
                    parts.append(missing.astype(np.float64)[:, None])
        return np.hstack(parts)

    def _fill_value(self, column: str, md: Microdata) -> tuple[float, bool]:
        """Imputation value of a numeric predictor (the observed mean when fitting) and
        whether its missing values get an indicator column."""
        fills = self.__dict__.setdefault("_predictor_fill", {})
        if column not in fills:
            ref = md.frame.get_column(column).cast(pl.Float64)
            values = ref.to_numpy()
            if np.isinf(values).any():
                raise DataError(
                    f"The predictor {column!r} has infinite values; synthesis needs finite "
                    "numbers (recode them or drop the column)."
                )
            observed = values[~np.isnan(values)]
            mean = float(observed.mean()) if len(observed) else 0.0
            fills[column] = (mean, len(observed) < len(values))
        return fills[column]

    def fit(self, data: Any, **roles: Any) -> Synthesizer:
        """Fit the models on the original file (a frame with roles, or a Microdata)."""
        from sklearn.linear_model import LinearRegression, LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

        check_choice(self.method, "method", ("cart", "parametric"))
        leaf = check_int(self.min_samples_leaf, "min_samples_leaf", minimum=1)
        md = as_microdata(data, **roles)
        rng = check_seed(self.seed)
        order, kept = self._sequence(md)
        self._md, self._order, self._kept = md, order, kept
        self._models = []
        self._predictor_levels = {}
        self._predictor_fill = {}
        house = _household_variables(md, order)
        # household-level variables: fitted on one row per household (its first member's)
        first = _households(md)[1] if house else np.zeros(0, dtype=np.int64)
        for j, c in enumerate(order):
            predictors = kept + order[:j]
            categorical = _is_categorical(md, c)
            per_household = c in house
            frame = md.frame[first] if per_household else md.frame
            s = frame.get_column(c)
            if categorical:
                codes, levels = encode_column(s.cast(pl.String) if not s.dtype.is_numeric() else s)
                target = codes
            else:
                levels = None
                target = s.cast(pl.Float64).to_numpy()
                if np.isnan(target).any():
                    raise DataError(
                        f"The numeric variable {c!r} has missing values; impute them before "
                        "synthesis (or declare it categorical)."
                    )
            x = self._features(frame, predictors, md)
            model, leaf_values, resid_sd = None, None, 0.0
            if predictors:
                state = int(rng.integers(0, 2**31 - 1))
                if self.method == "cart":
                    tree_cls = DecisionTreeClassifier if categorical else DecisionTreeRegressor
                    model = tree_cls(min_samples_leaf=leaf, random_state=state).fit(x, target)
                    leaves = model.apply(x)
                    order_idx = np.argsort(leaves, kind="stable")
                    sorted_leaves = leaves[order_idx]
                    starts = np.flatnonzero(np.r_[True, sorted_leaves[1:] != sorted_leaves[:-1]])
                    sizes = np.diff(np.r_[starts, len(sorted_leaves)])
                    leaf_values = (sorted_leaves[starts], starts, sizes, target[order_idx])
                elif categorical:
                    if len(np.unique(target)) > 1:
                        model = make_pipeline(
                            StandardScaler(), LogisticRegression(max_iter=1000)
                        ).fit(x, target)
                else:
                    model = LinearRegression().fit(x, target)
                    resid_sd = float(np.std(target - model.predict(x), ddof=1))
            self._models.append(
                _VariableModel(
                    c,
                    categorical,
                    predictors,
                    model,
                    leaf_values,
                    levels,
                    target,
                    resid_sd,
                    per_household,
                )
            )
        return self

    # ------------------------------------------------------------------ generation
    def _check_fitted(self) -> Microdata:
        if self._md is None:
            raise ParameterError("The synthesizer is not fitted; call fit(data) first.")
        return self._md

    def _generate_one(self, n: int, rng: np.random.Generator) -> pl.DataFrame:
        md = self._check_fitted()
        others = [c for c in md.frame.columns if c not in self._order]
        base = pl.DataFrame({"_r": np.arange(n)})
        if others and n == md.n_records:
            base = base.hstack(md.frame.select(others))
        elif others:  # other sizes: the kept variables of records drawn with replacement
            base = base.hstack(md.frame.select(others)[rng.integers(0, md.n_records, n)])
        out = base
        member = first = None
        if any(vm.per_household for vm in self._models):
            # the households of the synthetic records: one draw per household id
            column = md.household
            if column is None:  # (fit() marks household-level models only with a household)
                raise ParameterError("The synthesizer has no household id; call fit() again.")
            codes, ids = encode_column(out.get_column(column))
            member, first = codes.astype(np.int64), first_index(codes, len(ids))
        for vm in self._models:
            if vm.per_household and member is not None and first is not None:
                values = self._draw(vm, out[first], len(first), rng, md)[member]
            else:
                values = self._draw(vm, out, n, rng, md)
            out = out.with_columns(self._decode(vm, values, md))
        columns = [c for c in md.frame.columns if c in out.columns]
        return out.select(columns)

    def _draw(
        self,
        vm: _VariableModel,
        out: pl.DataFrame,
        n: int,
        rng: np.random.Generator,
        md: Microdata,
    ) -> np.ndarray:
        """Synthetic values of one variable for the ``n`` rows of ``out``."""
        if vm.model is None and (not vm.predictors or self.method == "parametric"):
            values = vm.observed[rng.integers(0, len(vm.observed), n)]
        elif self.method == "cart":
            x = self._features(out, vm.predictors, md)
            if vm.leaf_values is None:
                raise ParameterError(
                    "The synthesizer was fitted with another method; call fit() again "
                    "after changing 'method'."
                )
            leaves = vm.model.apply(x)
            leaf_ids, starts, sizes, pool = vm.leaf_values
            where = np.searchsorted(leaf_ids, leaves)
            # a random donor of the leaf for every synthetic record, all at once
            pick = np.minimum((rng.random(n) * sizes[where]).astype(np.int64), sizes[where] - 1)
            values = pool[starts[where] + pick]
        elif vm.categorical:
            x = self._features(out, vm.predictors, md)
            prob = vm.model.predict_proba(x)
            cum = np.cumsum(prob, axis=1)
            pick = (rng.random(n)[:, None] > cum).sum(axis=1)
            values = vm.model.classes_[np.minimum(pick, len(vm.model.classes_) - 1)]
        else:
            x = self._features(out, vm.predictors, md)
            values = vm.model.predict(x) + rng.normal(0.0, vm.residual_sd, n)
        return values

    @staticmethod
    def _decode(vm: _VariableModel, values: np.ndarray, md: Microdata) -> pl.Series:
        dtype = md.frame.schema[vm.name]
        if vm.categorical:
            if vm.levels is None:  # (fit() gives every categorical model its levels)
                raise ParameterError(
                    f"The model of {vm.name!r} has no categories; call fit() again."
                )
            codes = values.astype(np.int64)
            s = vm.levels.gather(pl.Series(np.where(codes >= 0, codes, 0))).alias(vm.name)
            missing = np.flatnonzero(codes < 0)
            if len(missing):
                s = s.scatter(missing, None)
            return s.cast(dtype, strict=False)
        s = pl.Series(vm.name, values)
        if dtype.is_integer():
            s = s.round(0)
        return s.cast(dtype, strict=False)

    def generate(
        self, n: int | None = None, *, copies: int = 1, seed: Any = None
    ) -> list[pl.DataFrame]:
        """``copies`` synthetic files of ``n`` records (default: the original size)."""
        md = self._check_fitted()
        n = md.n_records if n is None else check_int(n, "n", minimum=1)
        copies = check_int(copies, "copies", minimum=1)
        if seed is not None:
            rng = check_seed(seed)
        elif self.seed is None or isinstance(self.seed, np.random.Generator):
            rng = check_seed(self.seed)  # fresh entropy, or the caller's generator
        else:  # an int seed: every call gives the same copies
            rng = np.random.default_rng([int(self.seed), 1])
        return [self._generate_one(n, rng) for _ in range(copies)]

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Save the fitted synthesizer (pickle, written atomically).  Load with :meth:`load`."""
        from sdckit.io import atomic_path

        self._check_fitted()
        target = Path(path)
        with atomic_path(target) as tmp:
            tmp.write_bytes(pickle.dumps(self))
        return target

    @staticmethod
    def load(path: str | os.PathLike[str]) -> Synthesizer:
        """Load a synthesizer saved by :meth:`save` (only load files you trust: pickle)."""
        obj = pickle.loads(Path(path).read_bytes())
        if not isinstance(obj, Synthesizer):
            raise DataError("The file does not contain an sdckit Synthesizer.")
        return obj


class Synthesis(ProtectionMethod):
    """Release a (fully or partly) synthetic file in place of the original.

    Parameters are those of :class:`Synthesizer`, plus ``allow_replicated_uniques`` (default
    False): synthetic records that reproduce the key combination of an original sample unique
    are redrawn (``max_redraws`` times), and any still left are replaced by redrawn copies of
    records that are not replicated uniques.
    """

    name: ClassVar[str] = "synthetic data"
    description: ClassVar[str] = (
        "Replaces the values of {variables} with synthetic values drawn from models fitted on "
        "the original file (synthetic data)."
    )
    stochastic: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Param]] = {
        "synthesize": Param(
            Columns(min_length=0),
            None,
            help="variables to synthesise (default: the key, numeric and sensitive variables)",
        ),
        "visit_sequence": Param(
            Columns(min_length=0),
            None,
            help="order of synthesis of the same variables (default: the order of synthesize)",
        ),
        "method": Param(
            Options("cart", "parametric"),
            help="classification and regression trees, or linear and logistic models",
        ),
        "min_samples_leaf": Param(
            Integer(minimum=1), help="smallest leaf of a tree (larger leaves protect more)"
        ),
        "allow_replicated_uniques": Param(
            Boolean(),
            help="keep synthetic records that reproduce the keys of an original sample unique",
        ),
        "max_redraws": Param(
            Integer(minimum=0),
            help="redraws of records replicating a sample unique before they are replaced",
        ),
        "seed": Param(Seed(), None, help="seed of the models and of the synthetic draws"),
    }

    def __init__(
        self,
        *,
        synthesize: Sequence[str] | None = None,
        visit_sequence: Sequence[str] | None = None,
        method: str = "cart",
        min_samples_leaf: int = 5,
        allow_replicated_uniques: bool = False,
        max_redraws: int = 20,
        seed: Any = None,
    ) -> None:
        self.synthesize = synthesize
        self.visit_sequence = visit_sequence
        self.method = method
        self.min_samples_leaf = min_samples_leaf
        self.allow_replicated_uniques = allow_replicated_uniques
        self.max_redraws = max_redraws
        self.seed = seed

    def _apply(self, md: Microdata) -> Protected:
        rng = check_seed(self.seed)
        syn = Synthesizer(
            synthesize=self.synthesize,
            visit_sequence=self.visit_sequence,
            method=self.method,
            min_samples_leaf=self.min_samples_leaf,
            seed=rng,
        ).fit(md)
        frame = syn._generate_one(md.n_records, rng)
        redraws = 0
        synthesized = set(syn._order)
        keys = list(md.keys)
        check = not self.allow_replicated_uniques and keys and synthesized & set(keys)
        house = _household_variables(md, syn._order)
        if check and house:
            frame, redraws = self._replace_households(md, syn, frame, keys, rng)
        elif check:
            bad = replicated_uniques(md, frame, keys).replicated
            for _ in range(check_int(self.max_redraws, "max_redraws", minimum=0)):
                if not bad.any():
                    break
                redraws += 1
                fresh = syn._generate_one(md.n_records, rng)
                frame = pl.concat(
                    [frame.filter(pl.Series(~bad)), fresh.filter(pl.Series(bad))]
                )  # replaced records move to the end; order of synthetic records is arbitrary
                bad = replicated_uniques(md, frame, keys).replicated
            if bad.any():
                good = np.flatnonzero(~bad)
                if len(good) == 0:
                    raise DataError("Every synthetic record replicates an original unique.")
                pick = good[rng.integers(0, len(good), int(bad.sum()))]
                frame = pl.concat([frame.filter(pl.Series(~bad)), frame[pick]])
        details: dict[str, Any] = {
            "visit_sequence": syn._order,
            "kept": syn._kept,
            "replicated_unique_redraws": redraws,
            "roles_changed": False,
        }
        if house:
            details["per_household"] = tuple(c for c in syn._order if c in house)
        return Protected.from_frames(md, frame.select(md.frame.columns), self, details=details)

    def _replace_households(
        self,
        md: Microdata,
        syn: Synthesizer,
        frame: pl.DataFrame,
        keys: list[str],
        rng: np.random.Generator,
    ) -> tuple[pl.DataFrame, int]:
        """Redraw replicated uniques household by household, in place (households stay whole).

        A household with a record that replicates an original sample unique is replaced by the
        same household of a fresh synthetic file (its household-level values drawn once for
        all members); records still replicating one after ``max_redraws`` are replaced by
        copies of records that do not (with their household id and household values).
        """
        n = md.n_records
        codes = _households(md)[0]  # (the synthetic records keep the original household ids)
        position = np.arange(n)
        bad = replicated_uniques(md, frame, keys).replicated
        redraws = 0
        for _ in range(check_int(self.max_redraws, "max_redraws", minimum=0)):
            if not bad.any():
                break
            redraws += 1
            fresh = syn._generate_one(n, rng)  # the same records and household ids, in order
            whole = np.isin(codes, codes[bad])
            frame = pl.concat([frame, fresh])[np.where(whole, position + n, position)]
            bad = replicated_uniques(md, frame, keys).replicated
        if bad.any():
            good = np.flatnonzero(~bad)
            if len(good) == 0:
                raise DataError("Every synthetic record replicates an original unique.")
            rows = position.copy()
            rows[bad] = good[rng.integers(0, len(good), int(bad.sum()))]
            frame = frame[rows]
        return frame, redraws

    def verify(self, original: Microdata, protected: Protected) -> None:
        """Same columns and size; no replicated unique unless allowed.

        Synthesised household-level variables are drawn once per household: constant within
        the synthetic file's households, and not changed afterwards by the household rule.
        """
        self._require(
            protected.microdata.frame.columns == original.frame.columns,
            "the synthetic file has other columns than the original",
        )
        self._require(
            protected.microdata.n_records == original.n_records,
            "the synthetic file has another number of records than the original",
        )
        house = sorted(set(protected.details.get("per_household", ())))
        after_draws = sorted(set(protected.details.get("release_roles", {})) & set(house))
        if after_draws:
            self._fail(f"values of {after_draws[0]!r} were changed after the synthesis")
        for c in house:
            self._require(
                protected.microdata.inconsistent_households(c) == 0,
                f"the household-level variable {c!r} differs within a household",
            )
        if not self.allow_replicated_uniques and original.keys:
            bad = replicated_uniques(original, protected.microdata, list(original.keys))
            synthesized = set(column_list(self.synthesize, "synthesize")) or set(original.keys)
            if synthesized & set(original.keys):
                self._require(
                    bad.n_replicated == 0,
                    "a synthetic record replicates an original sample unique",
                )

    @classmethod
    def contract_example(cls) -> tuple[ProtectionMethod, Microdata]:
        rng = np.random.default_rng(2)
        n = 300
        sex = rng.integers(1, 3, n)
        age = rng.integers(1, 8, n)
        income = 1000 + 200 * age + rng.normal(0, 100, n)
        df = pl.DataFrame({"sex": sex, "age": age, "income": income})
        md = Microdata(df, keys=["sex", "age"], numeric=["income"])
        return cls(seed=3, min_samples_leaf=10), md


@function_twin(Synthesis)
def synthesize(data: Any, **params: Any) -> Protected:
    """Replace variables by values drawn from models fitted on the data (see :class:`Synthesis`).

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.microdata.Microdata`.
    synthesize, visit_sequence, method, min_samples_leaf, allow_replicated_uniques,
    max_redraws, seed
        The parameters of :class:`Synthesis`, by name (keyword arguments only).
    **roles
        The role keywords of :class:`~sdckit.microdata.Microdata` (``keys``, ``numeric``,
        ``weight``, ``strata``, ``household``, ...) for building it from a plain frame;
        given with a Microdata they replace its roles (see :mod:`sdckit.twins`).

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"sex": ["f", "m"] * 50, "age": [20, 30, 40, 50, 60] * 20})
    >>> out = synthesize(df, keys=["sex", "age"], seed=1)
    >>> out.data.height, sorted(out.data["age"].unique().to_list())
    (100, [20, 30, 40, 50, 60])
    """

"""Marginal-preserving swapping of risky sample uniques (Takemura & Endo 2006; Takemura & Hara).

Under a decomposable model with junction tree edges ``C - C'`` and separators ``S = C & C'``,
cutting an edge splits the key variables into ``S``, the variables ``T`` on one side (minus
``S``) and those on the other.  Two records that agree on ``S`` may exchange their values on
``T``: every clique lies on one side, so it either does not meet ``T`` or its part outside ``T``
lies in ``S`` where the records agree, and every clique margin (the sufficient statistics of the
model) is unchanged.  methods.md M5.3.

For each risky sample unique (risk ``(1 - p(i)) ** (N - n)`` above a threshold under the model,
highest first), the partner is the closest record (a distance the user can set) that agrees on a
separator and differs on both sides of it (otherwise the swap would only exchange two whole
records); records already swapped are not used again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import networkx as nx
import numpy as np
import polars as pl

from sdckit._validation import check_int, check_real, check_seed
from sdckit.errors import ParameterError
from sdckit.microdata import Microdata
from sdckit.protection import (
    Callable_,
    Columns,
    Instance,
    Integer,
    ListOf,
    Options,
    Param,
    Protected,
    ProtectionMethod,
    Real,
    Seed,
)
from sdckit.risk.graphical._margins import table_codes
from sdckit.risk.graphical.chordal import junction_tree
from sdckit.risk.graphical.model import DecomposableModel, _as_model, decomposable_risk
from sdckit.twins import function_twin

__all__ = ["MarginalPreservingSwap", "marginal_swap", "swap_sides"]

Distance = Callable[[pl.DataFrame, pl.DataFrame], np.ndarray]


def swap_sides(model: DecomposableModel) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Pairs ``(S, T)``: swapping the variables ``T`` between records that agree on ``S`` keeps
    every clique margin of ``model``.

    One pair per side of every junction-tree edge; for a disconnected graph also each connected
    component against the rest (``S`` empty).  Sorted by the size of ``T``.

    Examples
    --------
    >>> from sdckit.masking import swap_sides
    >>> from sdckit.risk.graphical import DecomposableModel
    >>> swap_sides(DecomposableModel.from_cliques(["a", "b", "c"], [("a", "b"), ("b", "c")]))
    [((1,), (0,)), ((1,), (2,))]
    """
    tree = junction_tree(model.adjacency())
    sides: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()
    for a, b, sep in list(tree.edges(data="separator")):
        tree.remove_edge(a, b)
        for root in (a, b):
            block = set().union(*map(set, nx.node_connected_component(tree, root)))
            side = tuple(sorted(block - set(sep)))
            if side:
                sides.add((tuple(sep), side))
        tree.add_edge(a, b, separator=sep)
    components = list(nx.connected_components(tree))
    if len(components) > 1:
        for comp in components:
            sides.add(((), tuple(sorted(set().union(*map(set, comp))))))
    return sorted(sides, key=lambda st: (len(st[1]), st))


def _bits(columns: Sequence[int]) -> int:
    return sum(1 << v for v in columns)


def _best_side(
    items: np.ndarray,
    sides: list[tuple[tuple[int, ...], tuple[int, ...]]],
    m: int,
    distance: Callable[[np.ndarray], np.ndarray],
    agree: np.ndarray | None = None,
) -> tuple[float, tuple[int, ...], np.ndarray] | None:
    """The side to swap and the closest items (agreement patterns, or rows with ``agree``).

    An item qualifies for ``(S, T)`` if it agrees with the risky record on ``S`` and differs
    on ``T`` and on the rest (else the swap would only exchange two whole records).  The first
    side reaching the smallest distance wins.
    """
    bits = items if agree is None else agree[items]
    full = (1 << m) - 1
    best = None
    for sep, side in sides:
        s_bits, t_bits = _bits(sep), _bits(side)
        r_bits = full & ~s_bits & ~t_bits
        ok = (bits & s_bits) == s_bits
        ok &= ((bits & t_bits) != t_bits) & ((bits & r_bits) != r_bits)
        chosen = items[ok]
        if not len(chosen):
            continue
        dist = np.asarray(distance(chosen), dtype=float)
        low = float(dist.min())
        if best is None or low < best[0]:
            best = (low, side, chosen[dist == low])
    return best


def _hamming(record: pl.DataFrame, candidates: pl.DataFrame) -> np.ndarray:
    """Number of key variables on which each candidate differs from the record."""
    total = np.zeros(candidates.height)
    for name in record.columns:
        value = record.get_column(name)[0]
        col = candidates.get_column(name)
        same = col.is_null() if value is None else (col == value).fill_null(False)
        total += ~same.to_numpy()
    return total


class MarginalPreservingSwap(ProtectionMethod):
    """Swap risky sample uniques with partners so that every clique margin of a model is kept.

    Parameters
    ----------
    model : DecomposableModel, networkx.Graph or list of cliques
        The decomposable model over the key variables (e.g. ``search_decomposable(...)
        .best.model``) whose clique margins must not change.
    threshold : float, default 0.5
        Sample uniques whose probability of being population unique under the model is at
        least this are swapped.
    max_records : int, optional
        Swap at most this many risky records (the riskiest first).
    population_size : int, optional
        Population size ``N`` (default: the sum of the weights).
    distance : "hamming" or callable, default "hamming"
        Distance between a risky record and candidate partners:
        ``distance(record, candidates) -> array`` on one-row and many-row polars frames of
        the key variables.  The closest candidate is taken; ties are broken at random.
    seed : int or numpy.random.Generator, optional
        Seed for breaking ties.

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit import Microdata
    >>> from sdckit.masking import MarginalPreservingSwap
    >>> df = pl.DataFrame({"a": [0, 0, 1, 1, 2, 2], "b": [0, 0, 0, 1, 1, 1],
    ...                    "c": [0, 1, 0, 1, 0, 1]})
    >>> method = MarginalPreservingSwap(model=[("a", "b"), ("b", "c")], threshold=0.0,
    ...                                 population_size=60, seed=1)
    >>> md = Microdata(df, keys=["a", "b", "c"])
    >>> result = method.apply(md)
    >>> method.verify(md, result)  # every clique margin is unchanged
    >>> result.details["swapped"], result.details["partners"]
    ([1, 3], [2, 4])
    """

    name: ClassVar[str] = "marginal-preserving swapping"
    description: ClassVar[str] = (
        "Exchanges values of {variables} between risky sample uniques and similar records so "
        "that every margin of a chosen model of the key variables is kept "
        "(marginal-preserving swapping)."
    )
    stochastic: ClassVar[bool] = True
    parameters: ClassVar[dict[str, Param]] = {
        "model": Param(
            Instance((DecomposableModel,), "a decomposable model over the keys"),
            Options("independence", "saturated"),
            Instance((nx.Graph,), "a networkx graph over the keys"),
            ListOf(Columns(role="keys", min_length=0)),
            help="the model whose clique margins are kept (a model, a graph or its cliques)",
        ),
        "threshold": Param(
            Real(minimum=0.0, maximum=1.0),
            help="smallest probability of being population unique for a record to be swapped",
        ),
        "max_records": Param(
            Integer(minimum=0), None, help="swap at most this many risky records, riskiest first"
        ),
        "population_size": Param(
            Integer(minimum=1), None, help="population size (default: the sum of the weights)"
        ),
        "distance": Param(
            Options("hamming"),
            Callable_("a function distance(record, candidates)"),
            help="distance to candidate partners: 'hamming' or a function",
        ),
        "seed": Param(Seed(), None, help="seed for breaking ties between equally close partners"),
    }

    def __init__(
        self,
        *,
        model: Any,
        threshold: float = 0.5,
        max_records: int | None = None,
        population_size: int | None = None,
        distance: str | Distance = "hamming",
        seed: np.random.Generator | int | None = None,
    ) -> None:
        self.model = model
        self.threshold = threshold
        self.max_records = max_records
        self.population_size = population_size
        self.distance = distance
        self.seed = seed

    def _distance(self) -> Distance:
        if isinstance(self.distance, str):
            if self.distance != "hamming":
                raise ParameterError(
                    "The 'distance' parameter must be 'hamming' or a callable "
                    f"distance(record, candidates); got {self.distance!r}."
                )
            return _hamming
        if not callable(self.distance):
            raise ParameterError("The 'distance' parameter must be 'hamming' or a callable.")
        return self.distance

    def _risky(self, md: Microdata, model: DecomposableModel) -> np.ndarray:
        threshold = check_real(self.threshold, "threshold", minimum=0.0, maximum=1.0)
        risk = decomposable_risk(md, model=model, population_size=self.population_size)
        rows = np.flatnonzero((risk.fk == 1) & (risk.risk >= threshold))
        rows = rows[np.lexsort((rows, -risk.risk[rows]))]
        if self.max_records is not None:
            rows = rows[: check_int(self.max_records, "max_records", minimum=0)]
        return rows

    def _apply(self, md: Microdata) -> Protected:
        md.require(keys=True, what="Marginal-preserving swapping")
        model = _as_model(self.model, md.keys)
        distance = self._distance()
        rng = check_seed(self.seed)
        risky = self._risky(md, model)
        codes = np.asfortranarray(table_codes(md.key_codes)[0])
        n, m = codes.shape
        if m > 62:
            raise ParameterError(
                f"Marginal-preserving swapping supports at most 62 key variables; got {m}."
            )
        sides = swap_sides(model)
        keys_frame = md.frame.select(md.keys)
        source = np.tile(np.arange(n), (m, 1))  # source[v, r]: original row of value v of r
        used = np.zeros(n, dtype=bool)
        swapped, partners, variables, not_swappable = [], [], [], []
        by_pattern = isinstance(self.distance, str) and m <= 20
        for i in risky:
            if used[i]:
                continue
            agree = np.zeros(n, dtype=np.int64)  # bit v set: the record agrees with i on v
            for v in range(m):
                agree |= (codes[:, v] == codes[i, v]).astype(np.int64) << v
            agree[used] = -1  # never a candidate
            agree[i] = -1
            if by_pattern:  # Hamming distance depends on the agreement pattern only
                present = np.flatnonzero(np.bincount(agree[agree >= 0], minlength=1 << m))
                best = _best_side(present, sides, m, lambda bits: m - np.bitwise_count(bits))
                if best is not None:
                    best = (best[0], best[1], np.flatnonzero(np.isin(agree, best[2])))
            else:
                candidates = np.flatnonzero(agree >= 0)
                best = _best_side(
                    candidates,
                    sides,
                    m,
                    lambda rows, i=i: np.asarray(
                        distance(keys_frame[int(i)], keys_frame[rows]), dtype=float
                    ),
                    agree,
                )
            if best is None:
                not_swappable.append(int(i))
                continue
            _, side, ties = best
            j = int(ties[rng.integers(len(ties))]) if len(ties) > 1 else int(ties[0])
            cols = list(side)
            codes[i, cols], codes[j, cols] = codes[j, cols].copy(), codes[i, cols].copy()
            for v in cols:
                source[v, i], source[v, j] = source[v, j], source[v, i]
            used[[i, j]] = True
            swapped.append(int(i))
            partners.append(j)
            variables.append(tuple(md.keys[v] for v in cols))
        frame = md.frame.with_columns(
            md.frame.get_column(name).gather(source[v]) for v, name in enumerate(md.keys)
        )
        details = {
            "model": model.formula(),
            "risky": [int(r) for r in risky],
            "swapped": swapped,
            "partners": partners,
            "swapped_variables": variables,
            "not_swappable": not_swappable,
        }
        return Protected.from_frames(md, frame, self, details=details)

    def verify(self, original: Microdata, protected: Protected) -> None:
        """Check that every clique margin of the model is identical before and after."""
        model = _as_model(self.model, original.keys)
        for clique in model.cliques:
            before = original.frame.group_by(list(clique)).len().sort(list(clique))
            after = protected.microdata.frame.group_by(list(clique)).len().sort(list(clique))
            self._require(
                before.equals(after, null_equal=True),
                f"the margin {' x '.join(clique)} of the model changed",
            )

    @classmethod
    def contract_example(cls) -> tuple[MarginalPreservingSwap, Microdata]:
        """Thirty records over three keys; the chain model [a,b][b,c]."""
        rng = np.random.default_rng(0)
        a = rng.integers(0, 4, 30)
        b = (a + rng.integers(0, 2, 30)) % 3
        c = rng.integers(0, 3, 30)
        df = pl.DataFrame({"a": a, "b": b, "c": c, "w": np.full(30, 20.0)})
        md = Microdata(df, keys=["a", "b", "c"], weight="w")
        method = cls(model=[("a", "b"), ("b", "c")], threshold=0.0, seed=3)
        return method, md


@function_twin(MarginalPreservingSwap)
def marginal_swap(data: Any, **params: Any) -> Protected:
    """Swap risky sample uniques keeping every clique margin of a decomposable model.

    Function form of :class:`MarginalPreservingSwap` (see it for the parameters).  The result's
    ``details`` list the risky records, those swapped with their partners and swapped
    variables, and those for which no partner exists.

    Parameters
    ----------
    data : DataFrame or Microdata
        The microdata (pandas, polars or pyarrow), or a :class:`~sdckit.microdata.Microdata`.
    model, threshold, max_records, population_size, distance, seed
        The parameters of :class:`MarginalPreservingSwap`, by name (keyword arguments only).
    **roles
        The role keywords of :class:`~sdckit.microdata.Microdata` (``keys``, ``numeric``,
        ``weight``, ``strata``, ``household``, ...) for building it from a plain frame;
        given with a Microdata they replace its roles (see :mod:`sdckit.twins`).

    Examples
    --------
    >>> import polars as pl
    >>> from sdckit.masking import marginal_swap
    >>> df = pl.DataFrame({"a": [0, 0, 1, 1, 2, 2], "b": [0, 0, 0, 1, 1, 1],
    ...                    "c": [0, 1, 0, 1, 0, 1]})
    >>> res = marginal_swap(df, keys=["a", "b", "c"], model=[("a", "b"), ("b", "c")],
    ...                     threshold=0.0, population_size=60, seed=1)
    >>> len(res.details["swapped"]) + len(res.details["not_swappable"]) <= 6
    True
    """

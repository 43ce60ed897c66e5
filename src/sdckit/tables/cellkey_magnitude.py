"""The cell key method for magnitude tables: top-k contributions, flex function, numeric ptable.

The method of the R package cellKey (``ck_params_nums(type = "top_contr")`` with
``ck_flexparams``) and of tau-ARGUS (Giessing & Tent 2019; deliverable D4.2 of the ESSnet
"Open source tools for perturbative confidentiality methods"):

1. A cell's key ``ck`` is the fractional part of the sum of its records' keys (records whose
   value is 0 left out unless ``use_zero_keys``); the ``k`` contributions get keys derived
   from it: the first ``ck`` itself (``same_key``) or ``ck`` with its first decimal digit
   moved to the end, each next one the previous with its first digit moved to the end.
2. The largest contributions ``x_1 >= ... >= x_k`` of the cell are taken in turn.  The
   magnitude of the noise of ``x_j`` is ``d_j = eps_j * m(|x_j|) * x_j`` where the flex
   function ``m`` is ``p_small`` below the flex point ``fp`` and falls towards ``p_large``
   above it: ``m(x) = p_large (1 + (p_small x - p_large fp) / (p_large fp) (2 fp / (fp +
   x))^q)``.  A contribution below the separation point ``z_s = sqrt(m1) / (sqrt(E)
   p_small)`` (``m1`` the variance of the last row of the ptable for small cells, ``E = sum
   eps_j^2``) gets ``d_j = 1`` and its deviation from that ptable.
3. With ``T`` the cell's running value (the original value, then perturbed component by
   component), ``a = |T / d_j|``; when ``|T| < |d_j|`` the magnitude is ``T`` itself.  The
   ptable row ``a`` (cut at ``D``; between two rows the deviations both rows give for the key
   are interpolated) and the contribution's key select a deviation ``v``; the noise is
   ``sign(T) |d_j| sign(v) (|v| + mu)`` with ``mu = mu_c`` for the first component of a
   sensitive (primary) cell, else 0, and never takes ``T`` across 0.
4. The published value is ``T`` after the ``k`` components.  Empty cells and cells of value 0
   stay as they are; the same contributors give the same keys and the same noise in every
   table.

Two choices follow cellKey's documentation where its code (version 1.0.2) differs: ``eps_j``
weights every component (the code leaves it out below ``fp``), and ``mu_c`` is added to the
first component only (the code adds it to every one).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar, TypeVar, cast

import numpy as np
import polars as pl

from sdckit._constraints import Boolean, Instance, Integer, ListOf, Options, Param, Real
from sdckit._results import Summary
from sdckit._validation import check_columns_exist, check_int
from sdckit.errors import ParameterError
from sdckit.microdata import as_microdata
from sdckit.protection import Parameterised, unknown_parameter
from sdckit.tables._flex import flex_function, scrambled_keys
from sdckit.tables._status import CellStatus
from sdckit.tables.cellkey import record_keys
from sdckit.tables.ptable_magnitude import MagnitudePTable, ptable_magnitudes
from sdckit.tables.table import Table

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "CellKeyMagnitudeResult",
    "CellKeyMagnitudes",
    "cell_key_magnitudes",
    "default_magnitude_ptable",
    "flex_function",
    "scrambled_keys",
]


@cache
def default_magnitude_ptable() -> MagnitudePTable:
    """The ptable of ``ptable::pt_ex_nums()`` (D = 10, V = 3, step 2, rows 1, 5, 10).

    Computed once per process (a few maximum-entropy problems).
    """
    return ptable_magnitudes(D=10, V=3.0, step=2, icat=[1, 5, 10], optim=[4, 1, 1])


@dataclass(frozen=True, eq=False)
class CellKeyMagnitudeResult:
    """A magnitude table perturbed by the cell key method.

    Attributes
    ----------
    table : Table
        The original table.
    cell_keys : numpy.ndarray
        ``(n_cells, k)`` keys of the contributions (column 0: the first component's).
    magnitude : numpy.ndarray
        ``(n_cells, k)`` noise magnitudes ``d_j`` (0 where a cell has fewer contributions).
    deviation : numpy.ndarray
        ``(n_cells, k)`` ptable deviations ``v_j``.
    noise : numpy.ndarray
        ``(n_cells, k)`` noise of each component.
    perturbed : numpy.ndarray
        The published values: the original plus the noise of its components.
    small : numpy.ndarray
        ``(n_cells, k)`` True where the ptable for small cells was used.
    method : CellKeyMagnitudes
        The method (and parameters) that made the result.
    """

    table: Table
    cell_keys: np.ndarray
    magnitude: np.ndarray
    deviation: np.ndarray
    noise: np.ndarray
    perturbed: np.ndarray
    small: np.ndarray
    method: CellKeyMagnitudes

    def to_frame(self) -> pl.DataFrame:
        """Codes, original and perturbed value, first cell key and the noise of each cell."""
        frame = self.table.to_frame(status=False).select(list(self.table.dimensions))
        return frame.with_columns(
            pl.Series("original", self.table.values),
            pl.Series("n_contributors", self.table.n_contributors),
            pl.Series("cell_key", self.cell_keys[:, 0]),
            pl.Series("noise", self.noise.sum(axis=1)),
            pl.Series("perturbed", self.perturbed),
        )

    def summary(self) -> Summary:
        """Changed cells and the relative size of the noise."""
        noise = self.noise.sum(axis=1)
        vals = self.table.values
        rel = np.divide(np.abs(noise), np.abs(vals), out=np.zeros(len(vals)), where=vals != 0)
        rows = [
            ("cells", self.table.n_cells),
            ("top contributions used (k)", self.noise.shape[1]),
            ("cells changed", int(np.count_nonzero(noise))),
            ("mean absolute noise", float(np.mean(np.abs(noise)))),
            ("mean relative noise", float(np.mean(rel))),
            ("largest relative noise", float(rel.max(initial=0.0))),
            ("components from the small-cell ptable", int(self.small.sum())),
        ]
        return Summary("Cell key method (magnitudes)", rows)


_PTABLE = Instance(
    (MagnitudePTable,),
    "a MagnitudePTable (in a job file: a table of ptable_magnitudes' D, V, step, icat, optim, "
    "mono)",
)


class CellKeyMagnitudes(Parameterised):
    """The cell key method for magnitudes: noise from the top-k contributions (cellKey's flex).

    Parameters
    ----------
    fp : float
        The flex point: contributions up to it get the share ``p_small`` of noise.
    top_k : int, default 3
        Contributions of each cell that get noise (1 to 6, as in cellKey).
    p_small, p_large : float, default 0.25, 0.05
        Noise shares of small and of large contributions (cellKey's ``p``;
        ``p_small >= p_large``).
    epsilon : list of float, optional
        Weights of the ``top_k`` components, the first 1, not increasing (default ``1, 0.5,
        0.2`` for three, as in cellKey's vignette; otherwise ``1, 1/2, 1/3, ...``).
    q : float, default 3
        How fast the share falls above ``fp`` (at least 1).
    mu_c : float, default 0
        Extra noise, in units of the first component's magnitude, for sensitive cells (the
        table's primaries).
    ptable : MagnitudePTable, optional
        Default: :func:`default_magnitude_ptable`.
    small_ptable : MagnitudePTable, optional
        The ptable for small contributions; gives the separation point.  None: no separation.
    same_key : bool, default True
        The first component uses the cell key itself (else its digits rotated once).
    ptable_odd : MagnitudePTable, optional
        The ptable of cells with an odd number of contributors; ``ptable`` then serves the
        even ones (cellKey's ``"even"`` and ``"odd"`` ptables; only with ``top_k = 1``).
    base : {"top", "mean", "sum"}, default "top"
        What the noise grows with (cellKey's ``type``): the ``top_k`` largest contributions,
        or (with ``top_k = 1``) the cell's mean or its value.

    Examples
    --------
    >>> import numpy as np
    >>> from sdckit.tables import Table
    >>> t = Table.from_array(np.array([300.0, 200.0, 100.0]), {"g": ["a", "b"]},
    ...                      n_contributors=np.array([2, 1, 1]),
    ...                      top=np.array([[200.0, 100.0], [200.0, 0.0], [100.0, 0.0]]))
    >>> small = ptable_magnitudes(D=2, V=0.5, step=2)
    >>> res = CellKeyMagnitudes(fp=100, top_k=1, ptable=small).apply(t, [0.5, 0.25, 0.75])
    >>> bool(np.all(np.abs(res.perturbed - t.values) <= 2 * 0.25 * t.top[:, 0]))
    True
    """

    name: ClassVar[str] = "cell key method for magnitudes"
    description: ClassVar[str] = (
        "Adds noise to every cell from its largest contributions and its cell key (the same "
        "contributors get the same noise in every table)."
    )
    parameters: ClassVar[dict[str, Param]] = {
        "fp": Param(Real(minimum=0.0, min_open=True), help="flex point of the noise share"),
        "top_k": Param(Integer(minimum=1, maximum=6), help="largest contributions given noise"),
        "p_small": Param(
            Real(minimum=0.0, maximum=1.0, min_open=True), help="noise share up to the flex point"
        ),
        "p_large": Param(
            Real(minimum=0.0, maximum=1.0), help="noise share approached by large contributions"
        ),
        "epsilon": Param(
            ListOf(Real(minimum=0.0, maximum=1.0), min_length=1),
            None,
            help="weights of the components (first 1, not increasing; one per top_k)",
        ),
        "q": Param(Real(minimum=1.0), help="how fast the share falls above the flex point"),
        "mu_c": Param(Real(minimum=0.0), help="extra noise of sensitive (primary) cells"),
        "ptable": Param(_PTABLE, None, help="the perturbation table (default: ptable::pt_ex_nums)"),
        "small_ptable": Param(
            _PTABLE, None, help="ptable of small contributions (sets the separation point)"
        ),
        "same_key": Param(Boolean(), help="the first component uses the cell key itself"),
        "ptable_odd": Param(
            _PTABLE, None, help="ptable of cells with an odd number of contributors (top_k 1)"
        ),
        "base": Param(
            Options("top", "mean", "sum"),
            help="the noise grows with the top_k largest contributions, the cell mean or the "
            "cell value (top_k 1)",
        ),
    }

    def __init__(
        self,
        *,
        fp: float,
        top_k: int = 3,
        p_small: float = 0.25,
        p_large: float = 0.05,
        epsilon: Sequence[float] | None = None,
        q: float = 3.0,
        mu_c: float = 0.0,
        ptable: MagnitudePTable | None = None,
        small_ptable: MagnitudePTable | None = None,
        same_key: bool = True,
        ptable_odd: MagnitudePTable | None = None,
        base: str = "top",
    ) -> None:
        self.fp = fp
        self.top_k = top_k
        self.p_small = p_small
        self.p_large = p_large
        self.epsilon = epsilon
        self.q = q
        self.mu_c = mu_c
        self.ptable = ptable
        self.small_ptable = small_ptable
        self.same_key = same_key
        self.ptable_odd = ptable_odd
        self.base = base

    # ------------------------------------------------------------------ derived parameters
    def weights(self) -> np.ndarray:
        """The component weights ``eps_1 .. eps_k`` (checked)."""
        k = int(self.top_k)
        if self.epsilon is None:
            return np.array([1.0, 0.5, 0.2]) if k == 3 else 1.0 / np.arange(1, k + 1)
        eps = np.asarray(self.epsilon, dtype=float)
        if len(eps) != k or eps[0] != 1.0 or np.any(np.diff(eps) > 0):
            raise ParameterError(
                "The 'epsilon' parameter of CellKeyMagnitudes must hold one weight per "
                f"contribution of 'top_k' ({k}), the first 1, none larger than the one before."
            )
        return eps

    def separation_point(self) -> float:
        """``z_s = sqrt(m1) / (sqrt(E) p_small)``; 0 without a ptable for small cells."""
        if self.small_ptable is None:
            return 0.0
        e = float(np.sum(self.weights() ** 2))
        return float(np.sqrt(self.small_ptable.max_variance) / (np.sqrt(e) * self.p_small))

    def validate_params(
        self, columns: Sequence[str] | None = None, *, where: str | None = None
    ) -> None:
        """Check the declared constraints, then ``p_small >= p_large`` and ``epsilon``."""
        super().validate_params(columns, where=where)
        prefix = f"{where}: " if where else ""
        if self.p_large > self.p_small:
            raise ParameterError(
                f"{prefix}The 'p_large' parameter of CellKeyMagnitudes must not exceed "
                "'p_small' (the share of noise falls for large contributions)."
            )
        try:
            self.weights()
        except ParameterError as exc:
            raise ParameterError(f"{prefix}{exc}") from None
        if self.base != "top" and self.top_k != 1:
            raise ParameterError(
                f"{prefix}The 'base' parameter of CellKeyMagnitudes is {self.base!r}: one "
                "component, so 'top_k' must be 1 (and 'epsilon' [1])."
            )
        if self.ptable_odd is not None and (self.ptable is None or self.top_k != 1):
            raise ParameterError(
                f"{prefix}The 'ptable_odd' parameter of CellKeyMagnitudes needs 'ptable' (for "
                "the even cells) and 'top_k' = 1 (as in cellKey)."
            )

    # ------------------------------------------------------------------ the method
    def apply(self, table: Table, cell_keys: Any) -> CellKeyMagnitudeResult:
        """Perturb the magnitude table ``table`` given each cell's key (in C order).

        ``table.top`` must hold at least the cells' largest contribution; a cell with fewer
        than ``top_k`` contributors gets noise from those it has.  Cells of status primary
        are the sensitive ones (``mu_c``).  The table is not modified.
        """
        self.validate_params()
        if not isinstance(table, Table):
            raise ParameterError(
                "CellKeyMagnitudes.apply needs a Table (see Table.from_microdata)."
            )
        ck = np.asarray(cell_keys, dtype=float).ravel()
        if ck.shape != (table.n_cells,) or np.any(~np.isfinite(ck)) or np.any((ck < 0) | (ck >= 1)):
            raise ParameterError(
                "The cell keys must be one number in [0, 1) per cell of the table (in C order)."
            )
        if self.base == "mean" and not table.weighted and np.any(table.n_contributors < 0):
            raise ParameterError(
                "The table does not know its contributors, so it has no cell means; give "
                "n_contributors, or base 'top' or 'sum'."
            )
        if self.base == "top" and table.top.shape[1] == 0:
            raise ParameterError(
                "The table holds no largest contributions; build it from microdata "
                "(Table.from_microdata with n_top at least top_k)."
            )
        keys = scrambled_keys(ck, int(self.top_k), same_key=bool(self.same_key))
        return _perturb(self, table, keys)


def _perturb(m: CellKeyMagnitudes, table: Table, keys: np.ndarray) -> CellKeyMagnitudeResult:
    k = int(m.top_k)
    n = table.n_cells
    eps = m.weights()
    zs = m.separation_point()
    ptab = m.ptable if m.ptable is not None else default_magnitude_ptable()
    top = np.zeros((n, k))
    n_contrib = table.n_contributors
    if m.base == "top":
        have = min(k, table.top.shape[1])
        top[:, :have] = table.top[:, :have]
    else:  # cellKey's type "mean" or "sum": one component, from the cell's mean or value
        have = 1
        units = table.weights if table.weighted else n_contrib.astype(float)
        mean = np.divide(table.values, units, out=np.zeros(n), where=units > 0)
        top[:, 0] = mean if m.base == "mean" else table.values
    # a component exists for the j-th contributor of a cell with a key and a non-zero value
    present = (keys[:, :1] != 0) & (table.values[:, None] != 0) & (np.arange(k) < have)
    present &= (n_contrib[:, None] < 0) | (np.arange(k) < n_contrib[:, None])
    sensitive = table.status == CellStatus.PRIMARY
    running = table.values.astype(float).copy()
    magnitude = np.zeros((n, k))
    deviation = np.zeros((n, k))
    noise = np.zeros((n, k))
    small = np.zeros((n, k), dtype=bool)
    p_sm = float(m.p_small)
    for j in range(k):
        on = present[:, j]
        x = top[:, j]
        ax = np.abs(x)
        share = flex_function(
            ax, fp=float(m.fp), p_small=p_sm, p_large=float(m.p_large), q=float(m.q)
        )
        d = x * share * eps[j]
        is_small = ax < zs
        d = np.where(is_small, 1.0, d)
        # a magnitude larger than the value itself: the value is the magnitude (cellKey)
        big = np.abs(running) < np.abs(d)
        d = np.where(big, running, d)
        x_scaled = np.where(big, running / (p_sm * eps[j]) if eps[j] > 0 else np.inf, x)
        now_small = big & (np.abs(x_scaled) < zs)
        is_small = is_small | now_small
        d = np.where(now_small, 1.0, d)
        skip = now_small & (j > 0)  # a later component of a small cell gets no noise
        a = np.divide(np.abs(running), np.abs(d), out=np.zeros(n), where=d != 0)
        v = np.zeros(n)
        large_rows = on & ~is_small & ~skip
        if m.ptable_odd is not None:  # cellKey's parity case: odd contributor counts
            odd = large_rows & (n_contrib % 2 == 1)
            large_rows &= ~odd
            if odd.any():
                v[odd] = m.ptable_odd.deviations(keys[odd, j], a[odd])
        if large_rows.any():
            v[large_rows] = ptab.deviations(keys[large_rows, j], a[large_rows])
        small_rows = on & is_small & ~skip
        if small_rows.any():
            if m.small_ptable is None:  # (zs = 0 then: never reached)
                raise AssertionError("small cells without a ptable for them")
            v[small_rows] = m.small_ptable.deviations(keys[small_rows, j], a[small_rows])
        mu = float(m.mu_c) if j == 0 else 0.0
        sign_t = np.where(running >= 0, 1.0, -1.0)
        sign_v = np.where(v >= 0, 1.0, -1.0)
        hat = sign_t * np.abs(d) * sign_v * (np.abs(v) + np.where(sensitive, mu, 0.0))
        # never across zero: a downward step stops at 0
        down = sign_v < 0
        hat = np.where(down & (sign_t < 0), np.minimum(hat, -running), hat)
        hat = np.where(down & (sign_t > 0), np.maximum(hat, -running), hat)
        hat = np.where(on & ~skip, hat, 0.0)
        magnitude[:, j] = np.where(on, d, 0.0)
        deviation[:, j] = np.where(on, v, 0.0)
        small[:, j] = on & is_small
        noise[:, j] = hat
        running = running + hat
    return CellKeyMagnitudeResult(
        table, keys, magnitude, deviation, noise, table.values + noise.sum(axis=1), small, m
    )


def _checked_keywords(fn: F) -> F:
    """Unknown or positional keyword arguments as a ParameterError naming them, not a TypeError."""
    sig = inspect.signature(fn)
    names = list(sig.parameters)
    n_positional = sum(p.kind is p.POSITIONAL_OR_KEYWORD for p in sig.parameters.values())
    required = [
        n for n, p in sig.parameters.items() if p.kind is p.KEYWORD_ONLY and p.default is p.empty
    ]

    @functools.wraps(fn)
    def inner(*args: Any, **kwargs: Any) -> Any:
        if len(args) > n_positional:
            raise ParameterError(
                f"{fn.__name__}() takes the data, the dimensions and the value by position and "
                "its parameters by name (fp=..., top_k=...)."
            )
        for key in kwargs:
            if key not in names:
                raise unknown_parameter(f"{fn.__name__}()", key, names[n_positional:])
        for name in required:
            if name not in kwargs:
                raise ParameterError(f"{fn.__name__}() needs the parameter {name!r}.")
        return fn(*args, **kwargs)

    return cast(F, inner)


@_checked_keywords
def cell_key_magnitudes(
    data: Any,
    dimensions: Sequence[str] | Mapping[str, Any],
    value: str,
    *,
    fp: float,
    top_k: int = 3,
    p_small: float = 0.25,
    p_large: float = 0.05,
    epsilon: Sequence[float] | None = None,
    q: float = 3.0,
    mu_c: float = 0.0,
    ptable: MagnitudePTable | None = None,
    small_ptable: MagnitudePTable | None = None,
    same_key: bool = True,
    ptable_odd: MagnitudePTable | None = None,
    base: str = "top",
    record_key: str | None = None,
    key_columns: str | Sequence[str] | None = None,
    seed: int = 0,
    digits: int = 8,
    use_zero_keys: bool = False,
    weight: str | None = None,
    sensitive: Any = None,
    missing: str = "error",
) -> CellKeyMagnitudeResult:
    """A magnitude table from microdata, perturbed by the cell key method (the function twin).

    Builds the table (:meth:`Table.from_microdata` with the ``top_k`` largest contributions),
    the cell keys from the records' keys, and applies :class:`CellKeyMagnitudes` with the
    parameters ``fp`` to ``same_key``.

    Parameters
    ----------
    data, dimensions, value
        Microdata, spanning variables (as for :meth:`Table.from_microdata`), the magnitude.
    fp, top_k, p_small, p_large, epsilon, q, mu_c, ptable, small_ptable, same_key, ptable_odd, base
        The parameters of :class:`CellKeyMagnitudes`.
    record_key : str, optional
        A column of record keys in [0, 1); computed by :func:`~sdckit.tables.record_keys`
        (over ``key_columns`` with ``seed``) when not given.
    digits : int, default 8
        Decimals of the record keys; cell keys are summed exactly in these units.
    use_zero_keys : bool, default False
        Records with the value 0 count in the cell key (cellKey's ``use_zero_rkeys``).
    weight : str, optional
        Sampling weight: weighted totals and weighted largest contributions.
    sensitive : sequence of SensitivityRule, optional
        Rules whose flagged cells get the extra noise ``mu_c``.
    missing : {"error", "category", "drop"}
        Records with a missing dimension code, as for :meth:`Table.from_microdata`.

    Examples
    --------
    >>> import polars as pl
    >>> df = pl.DataFrame({"id": range(40), "g": ["a", "b"] * 20,
    ...                    "v": [float(10 + i) for i in range(40)]})
    >>> small = ptable_magnitudes(D=2, V=0.5, step=2)
    >>> res = cell_key_magnitudes(df, ["g"], "v", fp=20, ptable=small, key_columns="id")
    >>> res.perturbed.shape, res.cell_keys.shape
    ((3,), (3, 3))
    """
    method = CellKeyMagnitudes(
        fp=fp,
        top_k=top_k,
        p_small=p_small,
        p_large=p_large,
        epsilon=epsilon,
        q=q,
        mu_c=mu_c,
        ptable=ptable,
        small_ptable=small_ptable,
        same_key=same_key,
        ptable_odd=ptable_odd,
        base=base,
    )
    method.validate_params()
    frame = as_microdata(data).frame
    check_columns_exist([value], list(frame.columns), "value")
    digits = check_int(digits, "digits", minimum=1, maximum=12)
    if not isinstance(use_zero_keys, bool):
        raise ParameterError("The 'use_zero_keys' parameter must be True or False.")
    if record_key is None:
        keys = record_keys(frame, columns=key_columns, seed=seed, digits=digits)
    else:
        from sdckit.tables.cellkey import _given_keys

        keys = _given_keys(frame, record_key)
    scale = 10.0**digits
    units = np.round(keys * scale)
    if not use_zero_keys:
        x = frame.get_column(value).cast(pl.Float64, strict=False).fill_null(0.0).to_numpy()
        units = np.where(x == 0, 0.0, units)
    name = "__sdckit_record_key__"
    keyed = frame.with_columns(pl.Series(name, units))
    table = Table.from_microdata(
        keyed, dimensions, value, weight=weight, n_top=int(top_k), missing=missing
    )
    key_sum = Table.from_microdata(keyed, dimensions, name, n_top=1, missing=missing)
    cell_keys = np.mod(np.round(key_sum.values), scale) / scale
    if sensitive is not None:
        from sdckit.tables.rules import apply_rules

        table = apply_rules(table, sensitive)
    return method.apply(table, cell_keys)

"""Scoring an attack on a released file with the truth, which only the test knows.

Definitions (one target column, the records of the file as written):

* **Truth, at the released granularity.**  Written row ``i`` is input row ``out.order[i]`` (the
  input order when ``out.order`` is None); its truth is the original value of the target.  When
  the job coarsened the target (a recoding: on the records where both the original and the
  released value are shown, every original value goes to one released value and there are
  fewer released than original values, e.g. ages into age bands), the truth is the original
  value mapped by that recoding, learned from those records; a record whose original value is
  never seen with a shown released value cannot be mapped and is left out (``unscored``).
  Continuous targets (floats with more than 100 distinct values) are never mapped: their truth
  is the original number.
* **Protected values**: the records whose truth is known and whose released value is missing
  (suppressed, or the column is not released) or differs from the truth (recoded beyond the
  released granularity, PRAM, noise, top coding, a new household id).
* **Got back**: the protected values the attacker guessed right.  Categorical and discrete
  targets: the guess equals the truth.  Continuous targets: a perturbed value is got back when
  the guess is within half the release's own error of the truth (the guess says more than the
  released number); a suppressed one when the guess is within 2 % of the truth.
* **Chance**: what an intruder gets without the leak.  Categorical: the number of protected
  records showing the most frequent truth among them (guessing that value everywhere gets
  exactly this many).  Continuous: the larger of that and the number of suppressed protected
  values within 2 % of the median shown value (reading the released number itself never beats
  half its own error, so perturbed values add nothing).
* **Margin**: ``3 * sqrt(P * p * (1 - p)) + max(3, 0.05 * P)`` for ``P`` protected values and
  chance share ``p``: three binomial standard deviations of the uninformed guess, plus 5 % of
  the protected values (at least 3) for the statistical inference a correct release still
  allows (released columns are correlated with the target: retired persons are old, urban
  households live in the capital) and which disclosure control accepts.  Leaks are gross by
  comparison: an exact dependence gives back nearly all the protected values.
* For continuous targets the median absolute errors of the attacker's guesses and of the
  released values (over the protected values) are reported too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from tests.release.redteam.attackers import Guess


@dataclass(frozen=True)
class Score:
    """The result of one attack on one target of one release (see the module docstring)."""

    attack: str
    target: str
    protected: int
    got_back: int
    chance: float
    guessed: int
    continuous: bool
    check_ok: bool
    unscored: int = 0
    attacker_mae: float | None = None
    release_mae: float | None = None

    @property
    def margin(self) -> float:
        """Statistical margin above chance (see the module docstring)."""
        p = self.chance / self.protected if self.protected else 0.0
        return 3.0 * math.sqrt(self.protected * p * (1.0 - p)) + max(3.0, 0.05 * self.protected)

    @property
    def beyond_chance(self) -> bool:
        """The attacker got back more than chance plus the margin."""
        return self.got_back > self.chance + self.margin

    def row(self) -> dict[str, Any]:
        """One row of a results table."""
        return {
            "attack": self.attack,
            "target": self.target,
            "protected": self.protected,
            "got_back": self.got_back,
            "chance": round(self.chance, 1),
            "beyond_chance": self.beyond_chance,
            "check_ok": self.check_ok,
            "attacker_mae": self.attacker_mae,
            "release_mae": self.release_mae,
        }

    def __str__(self) -> str:
        text = (
            f"{self.attack} on {self.target}: got back {self.got_back} of {self.protected} "
            f"protected values (chance {self.chance:.0f}, margin {self.margin:.0f}); "
            f"check ok: {self.check_ok}"
        )
        if self.continuous:
            text += f"; median abs. error {self.attacker_mae} vs released {self.release_mae}"
        return text


def _key(s: pl.Series) -> pl.Series:
    """Values as comparable strings: whole numbers without a decimal point, NaN as null."""
    if s.dtype.is_float():
        s = s.fill_nan(None)
        values = s.drop_nulls().to_numpy()
        if len(values) and np.all(values == np.floor(values)) and np.all(np.abs(values) < 2**62):
            s = s.cast(pl.Int64)
    return s.cast(pl.String)


def _continuous(s: pl.Series) -> bool:
    return s.dtype.is_float() and s.fill_nan(None).drop_nulls().n_unique() > 100


def released_truth(original: pl.Series, released: pl.Series) -> tuple[pl.Series, np.ndarray]:
    """The truth at the released granularity (strings), and the rows that cannot be mapped."""
    n = len(original)
    ko, kr = _key(original), _key(released)
    both = (ko.is_not_null() & kr.is_not_null()).to_numpy()
    if _continuous(original) or not both.any():
        return ko, np.zeros(n, dtype=bool)
    pairs = pl.DataFrame({"o": ko.filter(pl.Series(both)), "r": kr.filter(pl.Series(both))})
    if (pairs["o"] == pairs["r"]).all():
        return ko, np.zeros(n, dtype=bool)
    table = pairs.group_by("o", "r").len().sort("len", descending=True)
    per = table.group_by("o", maintain_order=True).agg(
        pl.col("r").first(), (pl.col("len").first() / pl.col("len").sum()).alias("purity")
    )
    functional = float((per["purity"] == 1.0).mean()) >= 0.99  # type: ignore[arg-type]
    coarser = pairs["r"].n_unique() < pairs["o"].n_unique()
    if not (functional and coarser):
        return ko, np.zeros(n, dtype=bool)
    mapped = (
        pl.DataFrame({"o": ko})
        .with_row_index("i")
        .join(per.select("o", "r"), on="o", how="left")
        .sort("i")
        .get_column("r")
    )
    unscored = (ko.is_not_null() & mapped.is_null()).to_numpy()
    return mapped, unscored


def score(
    out: Any, original: pl.DataFrame, target: str, guess: Guess, *, attack: str | None = None
) -> Score:
    """Score ``guess`` (per row of ``out.output``) against the original (see the module doc).

    Parameters
    ----------
    out : sdckit.release.Release
        The release: ``out.output`` is the file as written, ``out.order`` maps its rows to the
        input rows (None: the input order).
    original : polars.DataFrame
        The original file, in input order (the records the release was made from).
    target : str
        The target column (a column of the original).
    guess : Guess
        The attacker's guesses, one per written row.
    """
    released = out.output
    n = released.height
    if original.height != n:
        raise ValueError("The release must keep every record of the original.")
    order = np.arange(n) if out.order is None else np.asarray(out.order)
    orig = original.get_column(target).gather(pl.Series(order))
    if target in released.columns:
        rel = released.get_column(target)
    else:
        rel = pl.Series(target, [None] * n, dtype=orig.dtype)
    rel = rel.fill_nan(None) if rel.dtype.is_float() else rel
    values = guess.values
    continuous = _continuous(orig)
    name = attack or guess.attack
    check_ok = bool(out.check.ok)
    if continuous:
        return _score_continuous(name, target, orig, rel, values, check_ok)
    truth, unscored = released_truth(orig, rel)
    kr = _key(rel)
    protected = (truth.is_not_null() & (kr.is_null() | (kr != truth).fill_null(True))).to_numpy()
    protected &= ~unscored
    hit = (_key(values) == truth).fill_null(False).to_numpy() & protected
    p_truth = truth.filter(pl.Series(protected))
    chance = float(p_truth.value_counts()["count"].max()) if p_truth.len() else 0.0  # type: ignore[arg-type]
    return Score(
        attack=name,
        target=target,
        protected=int(protected.sum()),
        got_back=int(hit.sum()),
        chance=chance,
        guessed=int((values.is_not_null().to_numpy() & protected).sum()),
        continuous=False,
        check_ok=check_ok,
        unscored=int(unscored.sum()),
    )


def _score_continuous(
    attack: str, target: str, orig: pl.Series, rel: pl.Series, values: pl.Series, check_ok: bool
) -> Score:
    truth = orig.cast(pl.Float64).fill_nan(None).to_numpy().astype(np.float64)
    released = rel.cast(pl.Float64).to_numpy().astype(np.float64)
    guess = values.cast(pl.Float64, strict=False).fill_nan(None).to_numpy().astype(np.float64)
    known = np.isfinite(truth)
    shown = np.isfinite(released)
    release_error = np.abs(released - truth)
    changed = shown & known & (release_error > 1e-9 * np.maximum(1.0, np.abs(truth)))
    suppressed = known & ~shown
    protected = changed | suppressed
    error = np.abs(guess - truth)
    with np.errstate(invalid="ignore"):
        hit = np.where(changed, error <= 0.5 * release_error, error <= 0.02 * np.abs(truth))
    hit = np.nan_to_num(hit).astype(bool) & protected & np.isfinite(guess)
    counts = pl.Series(truth[protected]).value_counts()
    chance = float(counts["count"].max()) if counts.height else 0.0  # type: ignore[arg-type]
    if suppressed.any() and shown.any():
        median = float(np.median(released[shown]))
        near = np.abs(median - truth[suppressed]) <= 0.02 * np.abs(truth[suppressed])
        chance = max(chance, float(near.sum()))
    guessed = protected & np.isfinite(guess)
    perturbed = changed
    return Score(
        attack=attack,
        target=target,
        protected=int(protected.sum()),
        got_back=int(hit.sum()),
        chance=chance,
        guessed=int(guessed.sum()),
        continuous=True,
        check_ok=check_ok,
        attacker_mae=round(float(np.median(error[guessed])), 2) if guessed.any() else None,
        release_mae=round(float(np.median(release_error[perturbed])), 2)
        if perturbed.any()
        else None,
    )

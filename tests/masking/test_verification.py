"""verify() raises VerificationError, under ``python -O`` too (no bare assert in the checks).

``tests/test_optimised.py`` runs this file again with ``python -O``.
"""

from __future__ import annotations

import sys

import polars as pl
import pytest

from sdckit import Microdata
from sdckit.errors import SdcError, VerificationError
from sdckit.masking import GlobalRecoding, LocalSuppression, Microaggregation
from sdckit.protection import Protected


class _NoSuppression(LocalSuppression):
    """A broken local suppression: claims k-anonymity but changes nothing."""

    def _apply(self, md: Microdata) -> Protected:
        return Protected.from_frames(md, md.frame, self)


class _WrongRecoding(GlobalRecoding):
    """A broken recoding: writes another value than the mapping's target."""

    def _apply(self, md: Microdata) -> Protected:
        col = next(iter(self.mapping))
        frame = md.frame.with_columns(pl.lit("elsewhere").alias(col))
        return Protected.from_frames(md, frame, self)


def _data() -> Microdata:
    df = pl.DataFrame(
        {
            "sex": [1, 1, 2, 2, 1, 2, 1, 2],
            "region": ["a", "a", "b", "b", "c", "c", "d", "e"],
            "income": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
        }
    )
    return Microdata(df, keys=["sex", "region"], numeric=["income"])


def test_running_optimised_or_not() -> None:
    print("optimize flag:", sys.flags.optimize)


def test_broken_suppression_is_caught() -> None:
    md = _data()
    method = _NoSuppression(k=2)
    with pytest.raises(VerificationError, match="fk < 2") as info:
        method.verify(md, method.apply(md))
    assert isinstance(info.value, SdcError)
    assert "_NoSuppression" in str(info.value) or "LocalSuppression" in str(info.value)


def test_broken_recoding_is_caught() -> None:
    md = _data()
    method = _WrongRecoding(mapping={"region": {"a": "ab", "b": "ab"}})
    with pytest.raises(VerificationError):
        method.verify(md, method.apply(md))


def test_microaggregation_result_tampered_with_is_caught() -> None:
    md = _data()
    method = Microaggregation(k=3, variables=["income"], method="univariate")
    good = method.apply(md)
    method.verify(md, good)  # the real result passes
    # the original values under the real result's details: groups of 1, not of 3
    tampered = Protected.from_frames(md, md.frame, method, details=good.details)
    with pytest.raises(VerificationError):
        method.verify(md, tampered)


def test_a_working_method_passes() -> None:
    md = _data()
    method = LocalSuppression(k=2)
    method.verify(md, method.apply(md))

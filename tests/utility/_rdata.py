"""A small reader of R's ``.rda`` files (XDR serialisation), enough for data frames.

Only for the tests that rebuild synthpop's published examples from its SD2011 data: data
frames of integer, double, logical, character and factor columns.  Written from R's
documented serialisation format (R Internals, "Serialization Formats"); no R code is used.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import struct
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

NA_INT = -(2**31)
_NIL, _REF, _ALTREP, _ATTRLIST = 254, 255, 238, 239
_SPECIAL = {242, 241, 253, 252, 251}  # empty env, base env, global env, unbound, missing arg


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.refs = data, 0, []

    def int(self) -> int:
        (v,) = struct.unpack_from(">i", self.data, self.pos)
        self.pos += 4
        return v

    def ints(self, n: int) -> np.ndarray:
        out = np.frombuffer(self.data, ">i4", n, self.pos).astype(np.int64)
        self.pos += 4 * n
        return out

    def doubles(self, n: int) -> np.ndarray:
        out = np.frombuffer(self.data, ">f8", n, self.pos).astype(np.float64)
        self.pos += 8 * n
        return out

    def length(self) -> int:
        n = self.int()
        if n == -1:  # long vector: two more words
            hi, lo = self.int(), self.int()
            n = (hi << 32) + lo
        return n

    def item(self) -> Any:
        flags = self.int()
        kind, levels = flags & 0xFF, flags >> 12
        has_attr, has_tag = bool(flags & (1 << 9)), bool(flags & (1 << 10))
        if kind == _NIL or kind in _SPECIAL:
            return None
        if kind == _REF:
            index = (flags >> 8) or self.int()  # packed into the flags, else in the next word
            return self.refs[index - 1]
        if kind == 1:  # symbol: its name, remembered for references
            name = self.item()
            self.refs.append(name)
            return name
        if kind == 9:  # CHARSXP
            n = self.int()
            if n == -1:
                return None
            raw = self.data[self.pos : self.pos + n]
            self.pos += n
            return raw.decode("latin-1" if levels & 4 else "utf-8", errors="replace")
        if kind in (2, _ATTRLIST):  # pairlist: a dict of tag -> value
            out: dict[Any, Any] = {}
            while kind in (2, _ATTRLIST):
                if has_attr:
                    self.item()
                tag = self.item() if has_tag else len(out)
                out[tag] = self.item()
                flags = self.int()
                kind = flags & 0xFF
                has_attr, has_tag = bool(flags & (1 << 9)), bool(flags & (1 << 10))
            if kind != _NIL:
                raise ValueError(f"unexpected pairlist end {kind}")
            return out
        if kind == _ALTREP:
            info, state, attr = self.item(), self.item(), self.item()
            cls = info[0] if isinstance(info, dict) else None
            if cls == "compact_intseq":
                n, start, step = (int(v) for v in state)
                return _Vector(np.arange(start, start + n * step, step), attr)
            if cls == "compact_realseq":
                n, start, step = (float(v) for v in state)
                return _Vector(start + step * np.arange(int(n)), attr)
            if isinstance(state, _Vector | list):
                return state
            raise ValueError(f"unsupported ALTREP class {cls}")
        if kind in (10, 13):
            value: Any = self.ints(self.length())
        elif kind == 14:
            value = self.doubles(self.length())
        elif kind in (16, 19):
            value = [self.item() for _ in range(self.length())]
        else:
            raise ValueError(f"unsupported R type {kind}")
        attrs = self.item() if has_attr else {}
        return _Vector(value, attrs, logical=kind == 10)


class _Vector:
    def __init__(self, values: Any, attrs: Any, logical: bool = False) -> None:
        self.values, self.attrs, self.logical = values, attrs or {}, logical

    def __iter__(self) -> Any:
        return iter(self.values)


def _column(v: _Vector) -> pl.Series:
    cls = v.attrs.get("class")
    classes = list(cls.values) if isinstance(cls, _Vector) else []
    if "factor" in classes:
        levels = list(v.attrs["levels"].values)
        codes = np.asarray(v.values)
        return pl.Series([None if c == NA_INT else levels[c - 1] for c in codes], dtype=pl.String)
    if isinstance(v.values, list):
        return pl.Series(v.values, dtype=pl.String)
    values = np.asarray(v.values)
    if values.dtype == np.int64:
        na = values == NA_INT
        if v.logical:
            return pl.Series(np.where(na, False, values == 1)).scatter(np.flatnonzero(na), None)
        return pl.Series(values, dtype=pl.Int64).scatter(np.flatnonzero(na), None)
    return pl.Series(values).fill_nan(None)  # NA and NaN alike


def read_rda(path: str | Path) -> dict[str, pl.DataFrame]:
    """The data frames saved in an ``.rda`` file, by name."""
    raw = Path(path).read_bytes()
    for opener in (gzip.decompress, bz2.decompress, lzma.decompress):
        try:
            raw = opener(raw)
            break
        except (OSError, ValueError, lzma.LZMAError):
            continue
    if not raw.startswith(b"RDX") or raw[5:7] != b"X\n":
        raise ValueError("not an XDR .rda file")
    r = _Reader(raw[7:])
    version = r.int()
    r.int(), r.int()
    if version == 3:
        r.pos += r.int()  # native encoding name
    out = {}
    for name, value in r.item().items():
        names = list(value.attrs["names"].values)
        columns = zip(names, value.values, strict=True)
        out[name] = pl.DataFrame([_column(c).alias(n) for n, c in columns])
    return out

"""Delta file statistics of a Parquet file, from its footer, as the Delta protocol asks for them.

The protocol ("Per-file Statistics"): ``minValues`` holds, per column, a value less than or equal to
every non-null value of the file, ``maxValues`` one greater than or equal to every one, ``nullCount``
the number of nulls.  A column whose bound cannot be given is *left out* of ``minValues`` /
``maxValues`` (never written as ``null``: some readers turn a null bound into a comparison with null,
which rules the file out).  Long strings are cut to a prefix, the way delta-spark's statistics
collection does it (``delta.dataSkippingStringPrefixLength``, 32 characters): the minimum becomes its
prefix, which is still a lower bound; the maximum becomes a prefix followed by a tie-breaker character
greater than the character it replaces (U+007F when that character is ASCII, else U+10FFFF), which
makes it an upper bound again; the prefix grows to at most twice the length while no tie-breaker fits,
and past that the maximum is left out.  Timestamps are milliseconds, rounded outwards.  Strings
compare by code point, which is the UTF-8 byte order Parquet and Delta use.
"""
from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["file_stats", "string_min_bound", "string_max_bound", "ts_stat", "STRING_PREFIX_LENGTH"]

STRING_PREFIX_LENGTH = 32   # delta-spark's delta.dataSkippingStringPrefixLength default
_ASCII_TIE_BREAKER = "\x7f"
_TOP_TIE_BREAKER = "\U0010ffff"


def string_min_bound(value: str, prefix: int = STRING_PREFIX_LENGTH) -> str:
    """A lower bound of ``value`` at most ``prefix`` characters long: its prefix."""
    return value[:prefix]


def string_max_bound(value: str, prefix: int = STRING_PREFIX_LENGTH) -> str | None:
    """An upper bound of ``value`` at most ``2 * prefix + 1`` characters long, or None when there is
    none that short (then the maximum is left out)."""
    if len(value) <= prefix:
        return value
    for cut in range(prefix, min(len(value), 2 * prefix + 1)):
        nxt = value[cut]
        if nxt < _ASCII_TIE_BREAKER:
            return value[:cut] + _ASCII_TIE_BREAKER
        if nxt < _TOP_TIE_BREAKER:
            return value[:cut] + _TOP_TIE_BREAKER
    return None


def ts_stat(v: object, floor: bool) -> str:
    """Delta timestamp statistics: ISO-8601 UTC with milliseconds (bounds rounded outwards)."""
    from store_format.timeutil import datetime_to_us, ms_to_datetime
    us = datetime_to_us(v) if isinstance(v, _dt.datetime) else int(v)  # type: ignore[call-overload]
    ms = us // 1000 if floor else -(-us // 1000)
    return ms_to_datetime(ms).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def file_stats(meta: pq.FileMetaData, fields: Sequence[pa.Field]) -> dict:
    """``numRecords``, ``minValues``, ``maxValues``, ``nullCount`` of the top-level primitive columns
    ``fields`` (binary columns: null counts only), from the row group statistics of the footer ``meta``.
    A column is left out of the bounds when a row group has no statistics or no min/max for a column
    that holds values there, and out of ``nullCount`` when a row group does not count its nulls."""
    wanted = {f.name: f for f in fields if not pa.types.is_nested(f.type)}
    mins: dict[str, object] = {}
    maxs: dict[str, object] = {}
    nulls: dict[str, int] = {}
    bounded = dict.fromkeys(wanted, True)
    counted = dict.fromkeys(wanted, True)
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for j in range(group.num_columns):
            col = group.column(j)
            name = col.path_in_schema
            if name not in wanted:
                continue
            st = col.statistics
            if st is None or not st.has_null_count:
                counted[name] = False
            else:
                nulls[name] = nulls.get(name, 0) + st.null_count
            if st is None or not st.has_min_max:
                if st is None or not st.has_null_count or st.null_count != group.num_rows:
                    bounded[name] = False
                continue
            lo, hi = st.min, st.max
            mins[name] = lo if name not in mins else min(mins[name], lo)
            maxs[name] = hi if name not in maxs else max(maxs[name], hi)
    out_min: dict[str, object] = {}
    out_max: dict[str, object] = {}
    for name, field in wanted.items():
        if not bounded[name] or name not in mins:
            continue
        lo, hi = mins[name], maxs[name]
        if pa.types.is_timestamp(field.type):
            out_min[name], out_max[name] = ts_stat(lo, floor=True), ts_stat(hi, floor=False)
        elif pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
            if not isinstance(lo, str) or not isinstance(hi, str):
                continue
            out_min[name] = string_min_bound(lo)
            top = string_max_bound(hi)
            if top is not None:
                out_max[name] = top
        elif isinstance(lo, (bool, int, float)) and isinstance(hi, (bool, int, float)):
            if isinstance(lo, float) and (lo != lo or hi != hi):   # NaN: no usable bound
                continue
            out_min[name], out_max[name] = lo, hi
    return {"numRecords": meta.num_rows, "minValues": out_min, "maxValues": out_max,
            "nullCount": {k: v for k, v in nulls.items() if counted[k]}}

"""Which files of a Delta table version may hold the rows a lookup wants: read from the add actions'
partition values and statistics, keeping every file the statistics cannot rule out.

A lookup asks for the rows matching any of many *probes*: a probe gives, per column, one value the
row must have (the columns of a :class:`Probes` table; a null cell asks nothing of that column);
``ranges`` add bounds every row must respect.  A file is skipped only when, for every probe, some
column's partition value differs, or its ``minValues`` / ``maxValues`` statistics exclude the value.
A statistic that is missing, null, of the wrong type, or inconsistent (min above max) rules nothing
out: the file is kept.  Timestamp maxima are widened by a millisecond less a microsecond (the Delta
protocol lets writers truncate them to milliseconds).  Strings compare by code point (UTF-8 byte
order), as Parquet and Delta order them.

Why not the pruning of delta-rs's pyarrow dataset: it turns each file's statistics into a fragment
expression, and a column without statistics in one file (left out, as the protocol says) becomes
``column >= null``, which makes pyarrow drop the file; the rows in it were silently lost.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import urllib.parse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

__all__ = ["Probes", "may_match", "add_actions", "partition_expression"]

_TS_SLACK = _dt.timedelta(microseconds=999)


@dataclasses.dataclass(frozen=True)
class Probes:
    """Rows wanted: any row of ``values`` (each an AND of ``column == value``, null cells ignored),
    and within every ``(column, op, value)`` of ``ranges`` (op ``>=`` or ``<=``)."""
    values: pa.Table
    ranges: tuple[tuple[str, str, object], ...] = ()


def add_actions(dt) -> pa.Table:
    """The add actions of the version ``dt`` (a ``deltalake.DeltaTable``), flattened: ``path``,
    ``partition.<col>``, ``min.<col>``, ``max.<col>``.  delta-rs reads statistics it cannot parse
    as nulls."""
    return pa.table(dt.get_add_actions(flatten=True))


def may_match(actions: pa.Table, probes: Probes, partition_columns: set[str]) -> np.ndarray:
    """Per add action, whether the file may hold a row the probes want (see the module docstring)."""
    n = actions.num_rows
    keep = np.zeros(n, dtype=bool)
    if probes.values.num_rows == 0:
        return keep
    for i in range(n):
        if not _within_ranges(actions, i, probes.ranges, partition_columns):
            continue
        alive = np.ones(probes.values.num_rows, dtype=bool)
        for col in probes.values.column_names:
            wanted = probes.values[col]
            if col in partition_columns:
                alive &= _partition_allows(actions, i, col, wanted)
            else:
                alive &= _stats_allow(actions, i, col, wanted)
            if not alive.any():
                break
        keep[i] = bool(alive.any())
    return keep


def partition_expression(actions: pa.Table, i: int, schema: pa.Schema, partition_columns: list[str]
                         ) -> ds.Expression:
    """The partition values of add action ``i`` as an expression pyarrow fills those columns from."""
    expr = ds.scalar(True)
    for col in partition_columns:
        value = _cell(actions, f"partition.{col}", i)
        field = ds.field(col)
        if value is None:
            expr = expr & field.is_null()
        else:
            expr = expr & (field == pa.scalar(value).cast(schema.field(col).type))
    return expr


def file_path(actions: pa.Table, i: int) -> str:
    """The file of add action ``i``, relative to the table (add paths are URI-escaped)."""
    return urllib.parse.unquote(actions["path"][i].as_py())


# ---------------------------------------------------------------------------------------------


def _cell(actions: pa.Table, name: str, i: int):
    return actions[name][i].as_py() if name in actions.column_names else None


def _bounds(actions: pa.Table, col: str, i: int) -> tuple[object, object]:
    """The file's (min, max) of ``col`` when both are there and consistent, else (None, None)."""
    lo, hi = _cell(actions, f"min.{col}", i), _cell(actions, f"max.{col}", i)
    if lo is None or hi is None:
        return None, None
    if isinstance(hi, _dt.datetime):
        hi = hi + _TS_SLACK
    try:
        if lo > hi:
            return None, None
    except TypeError:
        return None, None
    return lo, hi


def _stats_allow(actions: pa.Table, i: int, col: str, wanted: pa.ChunkedArray) -> np.ndarray:
    """Probes whose value of ``col`` lies within the file's bounds (or asks nothing, or the bounds
    are unusable)."""
    lo, hi = _bounds(actions, col, i)
    if lo is None:
        return np.ones(len(wanted), dtype=bool)
    try:
        inside = pc.and_(pc.greater_equal(wanted, pa.scalar(lo, wanted.type)),
                         pc.less_equal(wanted, pa.scalar(hi, wanted.type)))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, OverflowError):
        return np.ones(len(wanted), dtype=bool)
    return np.asarray(pc.fill_null(inside, True).to_numpy(zero_copy_only=False), dtype=bool)


def _partition_allows(actions: pa.Table, i: int, col: str, wanted: pa.ChunkedArray) -> np.ndarray:
    value = _cell(actions, f"partition.{col}", i)
    try:
        equal = pc.equal(wanted, pa.scalar(value).cast(wanted.type)) if value is not None else \
            pc.is_null(wanted)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return np.ones(len(wanted), dtype=bool)
    return np.asarray(pc.fill_null(equal, True).to_numpy(zero_copy_only=False), dtype=bool)


def _within_ranges(actions: pa.Table, i: int, ranges, partition_columns: set[str]) -> bool:
    for col, op, value in ranges:
        if col in partition_columns:
            part = _cell(actions, f"partition.{col}", i)
            lo = hi = part
        else:
            lo, hi = _bounds(actions, col, i)
        if lo is None:
            continue
        try:
            if (op == ">=" and hi < value) or (op == "<=" and lo > value):
                return False
        except TypeError:
            continue
    return True

"""The tables as ``validate`` reads them, and the array helpers its figures are computed with.

:class:`TableReader` opens each table once as readers see it (the versions of the latest complete
run, :mod:`pipelines.tables.runs`; without any run, the newest versions, to show what is there) and
yields its rows batch by batch in the published schema's types, so that a table rewritten with other
types or without some columns still reduces to figures (the ``tables`` suite reports the schema).
The rest are small numpy helpers shared by the message and key figures: dense ids for strings,
growing per-segment counters, counts of rows of runs that ``runs`` does not know.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..delta import arrow_dataset, open_table
from ..tables.runs import snapshot
from ..tables.schema import (
    ANOMALIES_SCHEMA,
    EXPIRY_AUDIT_SCHEMA,
    MESSAGE_KEYS_SCHEMA,
    MESSAGES_SCHEMA,
    RUNS_SCHEMA,
    SEGMENTS_SCHEMA,
)

__all__ = ["TableReader", "SCHEMAS", "NO_TS", "Ids", "to_numpy", "grow", "bincount", "unknown_run_rows"]

SCHEMAS = {"messages": MESSAGES_SCHEMA, "message_keys": MESSAGE_KEYS_SCHEMA, "segments": SEGMENTS_SCHEMA,
           "expiry_audit": EXPIRY_AUDIT_SCHEMA, "anomalies": ANOMALIES_SCHEMA, "runs": RUNS_SCHEMA}
BATCH_ROWS = 1 << 18
NO_TS = np.iinfo(np.int64).min      # no store time (a null, or none gathered)


class TableReader:
    """The six tables under ``root`` as readers see them, each opened once.

    ``present`` holds the columns each existing table has; :meth:`batches` and :meth:`read` give
    the columns asked for in the schema's types (a column the table lacks comes as nulls).
    """

    def __init__(self, root: str) -> None:
        self.root = root
        self.present: dict[str, set[str]] = {}
        self._snapshot = snapshot(root)
        self._opened: dict[str, Any] = {}

    def open(self, name: str):
        """The table (``deltalake.DeltaTable``) at the version of the latest complete run; without any
        run (no ``runs`` row: nothing published, or the runs table lost), its newest version; or None."""
        if name not in self._opened:
            snap = self._snapshot
            self._opened[name] = snap.open(name) if snap.run is not None else open_table(self.root, name)
        return self._opened[name]

    def batches(self, name: str, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        """The table's rows as batches of ``columns`` in the schema's types; a column the table lacks
        comes as nulls (its absence fails the schema check), a missing table as no batches."""
        dt = self.open(name)
        if dt is None:
            return
        schema = SCHEMAS[name]
        have = [c for c in columns if c in self.present.get(name, set())]
        ds = arrow_dataset(self.root, name, dt)
        for batch in ds.to_batches(columns=have, batch_size=BATCH_ROWS, batch_readahead=1, fragment_readahead=1):
            arrays = []
            for c in columns:
                typ = schema.field(c).type
                if c in have:
                    col = batch.column(have.index(c))
                    arrays.append(col if col.type == typ else _cast(col, typ))
                else:
                    arrays.append(pa.nulls(batch.num_rows, typ))
            yield pa.RecordBatch.from_arrays(arrays, names=list(columns))

    def read(self, name: str, columns: Sequence[str]) -> pa.Table:
        """All of :meth:`batches` as one table (empty when the table is missing)."""
        schema = pa.schema([SCHEMAS[name].field(c) for c in columns])
        batches = list(self.batches(name, columns))
        return pa.Table.from_batches(batches, schema=schema) if batches else schema.empty_table()


def _cast(col: pa.Array, typ: pa.DataType) -> pa.Array:
    try:
        return col.cast(typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.nulls(len(col), typ)


def to_numpy(arr: pa.Array | pa.ChunkedArray, fill: Any, dtype: Any) -> np.ndarray:
    """The values as a numpy array of ``dtype``, nulls as ``fill``, timestamps as their integers."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count:
        arr = pc.fill_null(arr, fill)
    if pa.types.is_timestamp(arr.type):
        arr = arr.cast(pa.int64())
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=dtype)


class Ids:
    """Dense ids for strings (segment names, topics) across batches."""

    def __init__(self) -> None:
        self.ids: dict[str | None, int] = {}
        self.names: list[str | None] = []

    def __call__(self, arr: pa.Array) -> np.ndarray:
        enc = pc.dictionary_encode(arr, null_encoding="encode")
        mapping = np.array([self._id(v) for v in enc.dictionary.to_pylist()] or [0], dtype=np.int32)
        return mapping[np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)]

    def _id(self, v: str | None) -> int:
        if v not in self.ids:
            self.ids[v] = len(self.names)
            self.names.append(v)
        return self.ids[v]

    def get(self, v: str | None) -> int:
        return self._id(v)

    def __len__(self) -> int:
        return len(self.names)


def grow(counts: np.ndarray, n: int) -> np.ndarray:
    """``counts`` padded with zeros to ``n`` entries (new ids since the last batch)."""
    return counts if len(counts) >= n else np.concatenate([counts, np.zeros(n - len(counts), counts.dtype)])


def bincount(idx: np.ndarray, n: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Counts (or sums of ``weights``) per id as int64, ``n`` entries at least."""
    if weights is not None:
        weights = weights.astype(np.int64)
    return np.bincount(idx, weights=weights, minlength=n).astype(np.int64)


def unknown_run_rows(run_ids: pa.Array, known_runs: set) -> int:
    """Rows whose run_id is null or not in runs."""
    here = set(pc.unique(run_ids).to_pylist())
    if here <= known_runs:
        return 0
    unknown = pa.array(sorted(r for r in here - known_runs if r is not None), pa.string())
    return int(pc.sum(pc.is_in(run_ids, value_set=unknown)).as_py() or 0) + run_ids.null_count

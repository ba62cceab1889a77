"""Data-quality validation of the Delta tables with Great Expectations (``python -m pipelines validate``).

The tables are read once with delta-rs, as readers see them (the versions of the latest complete
run, :mod:`pipelines.tables.runs`; without any run, the newest versions), batch by batch, and
reduced in Arrow/numpy to small frames of *figures*: one row per table, per segment, per consume
queue, per index file, per expiry-audit file, per anomaly kind and for the latest run.  Every check
is a Great Expectations expectation on one of those frames, so that the whole verdict shows in the
Data Docs; no frame holds message data (keys, bodies, properties), only counts, offsets, times and
the ids of the rows (segment, topic and queue id, index file, kind).  GX never sees a 3 M-row frame:
uniqueness, contiguity and referential checks are computed as counts first.  Results use GX's
``COMPLETE`` format with the id columns as ``unexpected_index_column_names``: a failing expectation
names every segment, queue or file it failed on, in the report and in the Data Docs.

The GX side is the 1.x API: an ephemeral context whose Data Docs site is ``DOCS/gx``; one pandas data
source, one data asset and batch definition per frame, one :class:`ExpectationSuite`,
:class:`ValidationDefinition` and :class:`Checkpoint` per frame (a checkpoint passes one set of batch
parameters, i.e. one dataframe, to all its validation definitions).  ``DOCS/index.html`` is a static
page of this run (suites, pass/fail counts, failing expectations with their observed values, anomaly
counts) linking to GX's validation pages: GX's own index builds its tables with JavaScript from public
CDNs and stays empty offline.  The default ``DOCS`` is ``TABLES/_data_docs``: table readers open the
six tables by name, and Spark, Hive and Delta readers skip folders starting with ``_``.

Expectations and the damage each one catches: :data:`SUITES` (``python -m pipelines validate --json``
lists the failing ones with their observed values).

Long module: the 48 expectations of nine suites, the figures each needs and the Data Docs page; a
suite's expectations and its figures stay together.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import html
import json
import logging
import os
import shutil
import sys
import time
import urllib.parse
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from store_format.anomalies import REPORTED_KINDS
from store_format.config import BrokerConfig
from store_format.errors import StoreError
from store_format.layout import CQ_UNIT_SIZE, segment_name, signed32
from store_format.timeutil import datetime_to_us, iso_us

from .delta import arrow_dataset, open_table
from .tables.runs import newest_run, snapshot
from .tables.schema import (
    ANOMALIES_SCHEMA,
    EXPIRY_AUDIT_SCHEMA,
    KEY_BUCKETS_PROPERTY,
    MESSAGE_KEYS_SCHEMA,
    MESSAGES_SCHEMA,
    RUNS_SCHEMA,
    SEGMENTS_SCHEMA,
    TABLE_NAMES,
)
from .validate_lookups import LOOKUP_COLUMNS, lookup_sample

__all__ = ["validate_tables", "run_validate_command", "compute_figures", "ValidationReport", "SuiteOutcome",
           "Failure", "Figures", "SUITES", "ANOMALY_KINDS", "DOCS_FOLDER", "ValidationSetupError"]

log = logging.getLogger(__name__)

DOCS_FOLDER = "_data_docs"          # default Data Docs folder under the tables root
GX_SITE = "gx"                      # GX's own Data Docs site inside the docs folder
SUITE_PREFIX = "rocketmq_tables."
ANOMALY_KINDS = REPORTED_KINDS      # the one vocabulary (store_format.anomalies.AnomalyKind)
INSTALL_HINT = "pip install 'rocketmq-offline-index[validate]' (or: pip install great-expectations)"
_INDEX_MARKER = '<meta name="generator" content="rocketmq-offline-index validate">'
_SCHEMAS = {"messages": MESSAGES_SCHEMA, "message_keys": MESSAGE_KEYS_SCHEMA, "segments": SEGMENTS_SCHEMA,
            "expiry_audit": EXPIRY_AUDIT_SCHEMA, "anomalies": ANOMALIES_SCHEMA, "runs": RUNS_SCHEMA}
_BATCH_ROWS = 1 << 18
_NO_TS = np.iinfo(np.int64).min
_ENTRY_BITSET_MAX = 1 << 27         # entry numbers above this (or above the configured capacity) are not tracked


class ValidationSetupError(StoreError):
    """Validation cannot run (no tables, Great Expectations missing, unusable docs folder)."""


# ---------------------------------------------------------------------------------------------
# figures: the tables reduced to small frames


@dataclasses.dataclass
class Figures:
    """The frames the suites validate (one row per table, segment, queue, index file, ...)."""
    tables: pd.DataFrame
    segments: pd.DataFrame
    messages: pd.DataFrame
    consume_queues: pd.DataFrame
    message_keys: pd.DataFrame
    expiry_audit: pd.DataFrame
    anomalies: pd.DataFrame
    runs: pd.DataFrame
    anomaly_counts: dict[str, int]
    latest_run: str | None
    seconds: float = 0.0
    key_lookups: pd.DataFrame = dataclasses.field(default_factory=lambda: pd.DataFrame(columns=LOOKUP_COLUMNS))

    def frame(self, name: str) -> pd.DataFrame:
        return getattr(self, name)


def _open(root: str, name: str):
    """The table as readers see it: at the version of the latest complete run; without any run (no
    ``runs`` row: nothing published, or the runs table lost), its newest version, to show what is there."""
    snap = snapshot(root)
    return snap.open(name) if snap.run is not None else open_table(root, name)


def _batches(root: str, name: str, columns: Sequence[str], present: dict[str, set[str]]) -> Iterator[pa.RecordBatch]:
    """The table's rows as batches of ``columns`` in the schema's types; a column the table lacks
    comes as nulls (its absence fails the schema check), a missing table as no batches."""
    dt = _open(root, name)
    if dt is None:
        return
    schema = _SCHEMAS[name]
    have = [c for c in columns if c in present.get(name, set())]
    ds = arrow_dataset(root, name, dt)
    for batch in ds.to_batches(columns=have, batch_size=_BATCH_ROWS, batch_readahead=1, fragment_readahead=1):
        arrays = []
        for c in columns:
            typ = schema.field(c).type
            if c in have:
                col = batch.column(have.index(c))
                arrays.append(col if col.type == typ else _cast(col, typ))
            else:
                arrays.append(pa.nulls(batch.num_rows, typ))
        yield pa.RecordBatch.from_arrays(arrays, names=list(columns))


def _cast(col: pa.Array, typ: pa.DataType) -> pa.Array:
    try:
        return col.cast(typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.nulls(len(col), typ)


def _read(root: str, name: str, columns: Sequence[str], present: dict[str, set[str]]) -> pa.Table:
    schema = pa.schema([_SCHEMAS[name].field(c) for c in columns])
    batches = list(_batches(root, name, columns, present))
    return pa.Table.from_batches(batches, schema=schema) if batches else schema.empty_table()


def _np(arr: pa.Array | pa.ChunkedArray, fill: Any, dtype: Any) -> np.ndarray:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.null_count:
        arr = pc.fill_null(arr, fill)
    if pa.types.is_timestamp(arr.type):
        arr = arr.cast(pa.int64())
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=dtype)


class _Ids:
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


def _grow(counts: np.ndarray, n: int) -> np.ndarray:
    return counts if len(counts) >= n else np.concatenate([counts, np.zeros(n - len(counts), counts.dtype)])


def _bincount(idx: np.ndarray, n: int, weights: np.ndarray | None = None) -> np.ndarray:
    if weights is not None:
        weights = weights.astype(np.int64)
    return np.bincount(idx, weights=weights, minlength=n).astype(np.int64)


def _iso_us(us: int) -> str | None:
    """ISO text of a store time gathered by the figures (``_NO_TS``: none)."""
    return None if us == _NO_TS else iso_us(us)


def _base_of(name: str | None) -> int:
    return int(name) if name is not None and name.isdigit() else -1


def _schema_figures(root: str) -> tuple[pd.DataFrame, dict[str, set[str]]]:
    """One row per table: does it exist, its rows, missing columns and columns of another type."""
    rows = []
    present: dict[str, set[str]] = {}
    for name in TABLE_NAMES:
        dt = _open(root, name)
        expected = _SCHEMAS[name]
        if dt is None:
            rows.append({"table": name, "exists": False, "rows": 0, "missing_columns": len(expected),
                         "type_mismatches": 0, "detail": "no Delta table"})
            continue
        ds = arrow_dataset(root, name, dt)
        got = ds.schema
        present[name] = set(got.names)
        missing = [f.name for f in expected if f.name not in present[name]]
        wrong = [f"{f.name} ({got.field(f.name).type}, expected {f.type})" for f in expected
                 if f.name in present[name] and not _same_type(got.field(f.name).type, f.type)]
        n = ds.count_rows()
        detail = "; ".join(x for x in (f"missing: {', '.join(missing)}" if missing else "",
                                       f"types: {', '.join(wrong)}" if wrong else "") if x)
        rows.append({"table": name, "exists": True, "rows": n, "missing_columns": len(missing),
                     "type_mismatches": len(wrong), "detail": detail or "as published"})
    return pd.DataFrame(rows), present


def _same_type(got: pa.DataType, want: pa.DataType) -> bool:
    """Equal up to string/binary/list representations (large_*, *_view) and field names of nested types."""
    def norm(t: pa.DataType) -> str:
        if pa.types.is_large_string(t) or pa.types.is_string_view(t):
            return "string"
        if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
            return "binary"
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
            return f"list<{norm(t.value_type)}>"
        if pa.types.is_map(t):
            return f"map<{norm(t.key_type)},{norm(t.item_type)}>"
        if pa.types.is_dictionary(t):
            return norm(t.value_type)
        return str(t)
    return norm(got) == norm(want)


def _run_config(run: dict | None) -> BrokerConfig:
    props: dict[str, str] = {}
    if run is not None and run.get("config"):
        try:
            props = {str(k): str(v) for k, v in json.loads(run["config"]).items()}
        except (ValueError, AttributeError):
            props = {}
    try:
        return BrokerConfig.from_properties(props)
    except StoreError:
        return BrokerConfig.from_properties({})


def compute_figures(tables: str, *, expected_anomalies: Mapping[str, int] | None = None) -> Figures:
    """Reduce the tables under ``tables`` to the frames the suites check (no GX needed).

    Args:
        tables: root folder (or URI) of the Delta tables.
        expected_anomalies: anomaly count accepted per kind (default 0 for every kind).
    Raises:
        ValidationSetupError: none of the six tables exists under ``tables``.
    """
    t0 = time.perf_counter()
    table_frame, present = _schema_figures(tables)
    if not present:
        raise ValidationSetupError(
            f"{tables}: no Delta tables there (expected {', '.join(TABLE_NAMES)}); publish them with "
            "'python -m pipelines tables --store STORE --tables PATH' or 'rebuild --tables PATH'")
    runs = _read(tables, "runs", ["run_id", "finished_at", "config", "resume_segment", "watermark_segment",
                                  "segments_in_store", "messages_written", "keys_written", "anomalies", "mode"],
                 present)
    run_rows = runs.to_pylist()
    run = newest_run(run_rows)
    known_runs = {r["run_id"] for r in run_rows}
    config = _run_config(run)
    seg_ids = _Ids()

    segs = _read(tables, "segments", ["segment", "base_offset", "file_size", "bytes_written", "first_store_time",
                                      "last_store_time", "records", "dispatched", "index_keys", "status"], present)
    for s in segs["segment"].to_pylist():
        seg_ids.get(s)
    anomalies = _read(tables, "anomalies", ["segment", "kind"], present)

    lap = time.perf_counter()
    msg = _message_figures(tables, present, seg_ids, known_runs)
    log.info("messages: %s rows in %.1f s", f"{msg['n']:,}", time.perf_counter() - lap)
    lap = time.perf_counter()
    keys = _key_figures(tables, present, seg_ids, known_runs, msg, config)
    log.info("message_keys: %s rows in %.1f s", f"{keys['n']:,}", time.perf_counter() - lap)

    n_seg = len(seg_ids)  # keys may name segments that messages does not
    for k in ("rows", "dispatched", "crc_bad", "size_bad", "nulls", "bad_sizes", "cq_flag", "duplicates", "not_base",
              "not_increasing", "gaps", "ends"):
        msg[k] = _grow(msg[k], n_seg)
    for k in ("ts_min", "ts_max"):
        msg[k] = np.concatenate([msg[k], np.full(n_seg - len(msg[k]), _NO_TS, np.int64)])
    message_rows = msg["rows"]
    key_rows = _grow(keys["per_segment"], n_seg)

    # anomalies per kind and, for the record anomalies, per segment
    kinds = [k if k is not None else "(null)" for k in anomalies["kind"].to_pylist()]
    found: dict[str, int] = {}
    for k in kinds:
        found[k] = found.get(k, 0) + 1
    expected = {k: 0 for k in ANOMALY_KINDS}
    expected.update({k: int(v) for k, v in (expected_anomalies or {}).items()})
    other_kinds = sorted((set(found) | set(expected)) - set(ANOMALY_KINDS))
    anomaly_frame = pd.DataFrame([{"kind": k, "found": found.get(k, 0), "expected": expected.get(k, 0),
                                   "known": k in ANOMALY_KINDS} for k in list(ANOMALY_KINDS) + other_kinds])
    per_seg_anom: dict[tuple[str | None, str], int] = {}
    for s, k in zip(anomalies["segment"].to_pylist(), kinds):
        per_seg_anom[(s, k)] = per_seg_anom.get((s, k), 0) + 1

    segment_frame = _segment_frame(segs, seg_ids, message_rows, msg, key_rows, config)
    message_frame = _message_frame(seg_ids, msg, per_seg_anom)
    queue_frame = msg["queues"]
    key_frame = keys["frame"]
    audit_frame = _audit_frame(tables, present, seg_ids, message_rows, segs, msg, keys, config)

    # the latest run against the tables
    live = {s for s, st in zip(segs["segment"].to_pylist(), segs["status"].to_pylist()) if st == "live"}
    if run is not None:
        resume = run["resume_segment"] or ""
        since = [i for i, name in enumerate(seg_ids.names) if name is not None and name >= resume]
        run_frame = pd.DataFrame([{
            "run_id": run["run_id"], "mode": run["mode"],
            "messages_written": _int(run["messages_written"]), "message_rows": int(message_rows[since].sum()),
            "keys_written": _int(run["keys_written"]), "key_rows": int(key_rows[since].sum()),
            "anomalies": _int(run["anomalies"]), "anomaly_rows": anomalies.num_rows,
            "segments_in_store": _int(run["segments_in_store"]), "live_segments": len(live),
            "watermark_segment_live": run["watermark_segment"] in live,
            "rows_of_unknown_runs": msg["unknown_run_rows"] + keys["unknown_run_rows"]}])
    else:
        run_frame = pd.DataFrame(columns=["run_id", "mode", "messages_written", "message_rows", "keys_written",
                                          "key_rows", "anomalies", "anomaly_rows", "segments_in_store",
                                          "live_segments", "watermark_segment_live", "rows_of_unknown_runs"])
    lap = time.perf_counter()
    lookups = lookup_sample(tables)
    log.info("key lookups: %d sampled entries in %.1f s", len(lookups), time.perf_counter() - lap)
    return Figures(table_frame, segment_frame, message_frame, queue_frame, key_frame, audit_frame, anomaly_frame,
                   run_frame, {k: int(v) for k, v in found.items()}, run["run_id"] if run else None,
                   round(time.perf_counter() - t0, 3), lookups)


def _unknown_run_rows(run_ids: pa.Array, known_runs: set) -> int:
    """Rows whose run_id is null or not in runs."""
    here = set(pc.unique(run_ids).to_pylist())
    if here <= known_runs:
        return 0
    unknown = pa.array(sorted(r for r in here - known_runs if r is not None), pa.string())
    return int(pc.sum(pc.is_in(run_ids, value_set=unknown)).as_py() or 0) + run_ids.null_count


def _int(v: Any) -> int:
    return -1 if v is None else int(v)


_MSG_COLUMNS = ["segment", "commitlog_offset", "position", "size", "structural_size", "body_size",
                "store_timestamp", "topic", "queue_id", "consume_queue", "consume_queue_offset", "indexed",
                "body_crc_ok", "dispatch", "run_id", "lmq_queues", "lmq_queue_ids", "lmq_consume_queue_offsets"]
_MSG_REQUIRED = ["commitlog_offset", "position", "size", "structural_size", "topic", "queue_id", "store_timestamp",
                 "consume_queue", "indexed", "body_crc_ok", "dispatch", "run_id"]


def _message_figures(root: str, present: dict[str, set[str]], seg_ids: _Ids, known_runs: set) -> dict:
    """Per-segment counts over ``messages`` and the arrays the key checks join against."""
    topic_ids = _Ids()
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("seg", "pos", "off", "ssize", "ts", "indexed", "qkey",
                                                           "cqoff", "lmq_qkey", "lmq_cqoff")}
    per_seg: dict[str, np.ndarray] = {k: np.zeros(0, np.int64) for k in (
        "rows", "dispatched", "crc_bad", "size_bad", "nulls", "bad_sizes", "cq_flag")}
    n = 0
    unknown_runs = 0
    for b in _batches(root, "messages", _MSG_COLUMNS, present):
        if not b.num_rows:
            continue
        n += b.num_rows
        col = dict(zip(b.schema.names, b.columns))
        seg = seg_ids(col["segment"])
        k = len(seg_ids)
        pos = _np(col["position"], -1, np.int64)
        size = _np(col["size"], 0, np.int64)
        ssize = _np(col["structural_size"], 0, np.int64)
        body = _np(col["body_size"], 0, np.int64)
        nulls = np.zeros(b.num_rows, np.int64)
        for c in _MSG_REQUIRED:
            if col[c].null_count:
                nulls += _np(pc.is_null(col[c]), False, bool)
        dispatch = col["dispatch"]
        not_dispatched = _np(pc.starts_with(dispatch, "not dispatched"), False, bool)
        size_bad = _np(pc.starts_with(dispatch, "not dispatched: totalSize"), False, bool)
        crc_bad = ~_np(col["body_crc_ok"], True, bool) & (body > 0)   # recovery checks non-empty bodies only
        in_cq = _np(col["consume_queue"], False, bool)
        has_cq_off = _np(pc.is_valid(col["consume_queue_offset"]), False, bool)
        bad_sizes = (size <= 0) | (ssize <= 0) | (body < 0) | (body > ssize)
        for key, values in (("rows", None), ("dispatched", ~not_dispatched), ("crc_bad", crc_bad),
                            ("size_bad", size_bad), ("nulls", nulls), ("bad_sizes", bad_sizes),
                            ("cq_flag", in_cq != has_cq_off)):
            per_seg[key] = _grow(per_seg[key], k)
            per_seg[key][:k] += _bincount(seg, k, values)
        unknown_runs += _unknown_run_rows(col["run_id"], known_runs)
        parts["seg"].append(seg)
        parts["pos"].append(pos)
        parts["off"].append(_np(col["commitlog_offset"], -1, np.int64))
        parts["ssize"].append(ssize)
        parts["ts"].append(_np(col["store_timestamp"], _NO_TS, np.int64))
        parts["indexed"].append(_np(col["indexed"], False, bool))
        q = in_cq & has_cq_off
        if q.any():
            topics = topic_ids(col["topic"].filter(pa.array(q)))
            qid = _np(col["queue_id"].filter(pa.array(q)), -1, np.int64)
            parts["qkey"].append((topics.astype(np.int64) << 32) | (qid & 0xFFFFFFFF))
            parts["cqoff"].append(_np(col["consume_queue_offset"].filter(pa.array(q)), -1, np.int64))
        lmq_names = pc.list_flatten(col["lmq_queues"]) if col["lmq_queues"].null_count < b.num_rows else None
        if lmq_names is not None and len(lmq_names):
            # the light queue units (multi-dispatch): they fill the light queues' consume queue files
            lmq_units = pc.list_flatten(col["lmq_consume_queue_offsets"])
            lmq_qids = pc.list_flatten(col["lmq_queue_ids"])
            if len(lmq_units) == len(lmq_names) == len(lmq_qids):
                written = _np(pc.is_valid(lmq_units), False, bool)
                w = pa.array(written)
                topics = topic_ids(lmq_names.filter(w))
                qid = _np(lmq_qids.filter(w), -1, np.int64)
                parts["lmq_qkey"].append((topics.astype(np.int64) << 32) | (qid & 0xFFFFFFFF))
                parts["lmq_cqoff"].append(_np(lmq_units.filter(w), -1, np.int64))

    def cat(k: str, dtype: Any) -> np.ndarray:  # and drop the pieces
        pieces = parts.pop(k)
        return np.concatenate(pieces) if pieces else np.zeros(0, dtype)

    seg, pos, off = cat("seg", np.int32), cat("pos", np.int64), cat("off", np.int64)
    ssize, ts, indexed = cat("ssize", np.int64), cat("ts", np.int64), cat("indexed", bool)
    k = len(seg_ids)
    for key in per_seg:
        per_seg[key] = _grow(per_seg[key], k)
    bases = np.array([_base_of(s) for s in seg_ids.names], dtype=np.int64)

    # offsets: duplicates anywhere in the table, then each segment in position order
    by_off = np.argsort(off, kind="stable")
    off_sorted = off[by_off]
    dup = np.zeros(len(off), bool)
    dup[1:] = off_sorted[1:] == off_sorted[:-1]
    duplicates = _bincount(seg[by_off][dup], k)
    not_base = _bincount(seg, k, off != bases[seg] + pos)
    order = np.lexsort((pos, seg))
    s_o, p_o, o_o, z_o, t_o = seg[order], pos[order], off[order], ssize[order], ts[order]
    del order, pos, ssize
    same = s_o[1:] == s_o[:-1]
    not_increasing = _bincount(s_o[1:], k, same & (o_o[1:] <= o_o[:-1]))
    gaps = _bincount(s_o[1:], k, same & (p_o[1:] != p_o[:-1] + z_o[:-1]))
    ends = np.zeros(k, np.int64)
    ts_min = np.full(k, _NO_TS, np.int64)
    ts_max = np.full(k, _NO_TS, np.int64)
    if len(s_o):
        starts = np.flatnonzero(np.r_[True, ~same])
        present_segs = s_o[starts]
        ends[present_segs] = np.maximum.reduceat(p_o + z_o, starts)
        valid = t_o != _NO_TS
        lo = np.minimum.reduceat(np.where(valid, t_o, np.iinfo(np.int64).max), starts)
        hi = np.maximum.reduceat(np.where(valid, t_o, _NO_TS), starts)
        ts_min[present_segs] = np.where(lo == np.iinfo(np.int64).max, _NO_TS, lo)
        ts_max[present_segs] = hi

    # consume queues: each queue's unit numbers unique and contiguous; units per consume queue file
    qkey, cqoff = cat("qkey", np.int64), cat("cqoff", np.int64)
    queue_rows = []
    if len(qkey):
        qo = np.lexsort((cqoff, qkey))
        qk, co = qkey[qo], cqoff[qo]
        qsame = qk[1:] == qk[:-1]
        qstarts = np.flatnonzero(np.r_[True, ~qsame])
        qdup = np.r_[False, qsame & (co[1:] == co[:-1])]
        units = np.diff(np.r_[qstarts, len(qk)])
        dups = np.add.reduceat(qdup.astype(np.int64), qstarts)
        firsts, lasts = co[qstarts], co[np.r_[qstarts[1:], len(qk)] - 1]
        for i, s in enumerate(qstarts.tolist()):
            queue = int(qk[s])
            queue_rows.append({"topic": topic_ids.names[queue >> 32], "queue_id": signed32(queue),
                               "units": int(units[i]), "first_offset": int(firsts[i]), "last_offset": int(lasts[i]),
                               "span": int(lasts[i] - firsts[i] + 1), "duplicate_units": int(dups[i])})
        queue_frame = pd.DataFrame(queue_rows)
    else:
        queue_frame = pd.DataFrame(columns=["topic", "queue_id", "units", "first_offset", "last_offset", "span",
                                            "duplicate_units"])
    # units per consume queue file: the records' own units and their light queue units
    # (``CommitLogDispatcherBuildConsumeQueue`` multi-dispatch writes light queue files like any other)
    fk, fo = np.r_[qkey, cat("lmq_qkey", np.int64)], np.r_[cqoff, cat("lmq_cqoff", np.int64)]
    fs = np.lexsort((fo, fk))
    files = {"qkey": fk[fs], "cqoff": fo[fs]}
    return {"n": n, "rows": per_seg["rows"], "dispatched": per_seg["dispatched"], "crc_bad": per_seg["crc_bad"],
            "size_bad": per_seg["size_bad"], "nulls": per_seg["nulls"], "bad_sizes": per_seg["bad_sizes"],
            "cq_flag": per_seg["cq_flag"], "duplicates": duplicates, "not_base": not_base,
            "not_increasing": not_increasing, "gaps": gaps, "ends": ends, "ts_min": ts_min, "ts_max": ts_max,
            "off_sorted": off_sorted, "by_off": by_off, "seg": seg, "ts": ts, "indexed": indexed,
            "queues": queue_frame, "cq_files": files, "topics": topic_ids, "unknown_run_rows": unknown_runs}


_KEY_COLUMNS = ["segment", "key_bucket", "key_hash", "slot", "commitlog_offset", "store_timestamp", "index_file",
                "index_file_no", "index_entry", "run_id"]
_KEY_REQUIRED = ["key_hash", "slot", "commitlog_offset", "store_timestamp", "index_file", "index_file_no",
                 "index_entry", "run_id"]


class _IndexFileAcc:
    """Running figures of one index file number; entry numbers seen are kept as a bitset."""

    COUNTERS = ("orphans", "unindexed", "time_mismatch", "bucket_mismatch", "slot_mismatch", "nulls")

    def __init__(self, capacity: int) -> None:
        self.rows = 0
        self.first = np.iinfo(np.int64).max
        self.last = np.iinfo(np.int64).min
        self.names: set[str | None] = set()
        self.bits = np.zeros(capacity // 8 + 1, np.uint8)
        self.duplicates = 0
        self.out_of_range = 0
        self.capacity = capacity
        self.counts = dict.fromkeys(self.COUNTERS, 0)

    def add_entries(self, entries: np.ndarray) -> None:
        self.rows += len(entries)
        if not len(entries):
            return
        self.first = min(self.first, int(entries.min()))
        self.last = max(self.last, int(entries.max()))
        ok = (entries >= 1) & (entries <= self.capacity)
        self.out_of_range += int((~ok).sum())
        e = entries[ok]
        u = np.unique(e)
        byte, mask = u >> 3, (1 << (u & 7)).astype(np.uint8)
        self.duplicates += int(len(e) - len(u) + np.count_nonzero(self.bits[byte] & mask))
        np.bitwise_or.at(self.bits, byte, mask)


def _key_figures(root: str, present: dict[str, set[str]], seg_ids: _Ids, known_runs: set, msg: dict,
                 config: BrokerConfig) -> dict:
    """Per-segment key counts and per-index-file figures of ``message_keys``, joined to ``messages``
    by (segment, commitlog_offset) through the sorted offsets."""
    dt = _open(root, "message_keys")
    buckets = None
    if dt is not None:
        field = next((f for f in dt.schema().fields if f.name == "key_bucket"), None)
        meta = (field.metadata or {}) if field is not None else {}
        buckets = int(meta[KEY_BUCKETS_PROPERTY]) if KEY_BUCKETS_PROPERTY in meta else None
    capacity = min(int(config.index_entries_per_file), _ENTRY_BITSET_MAX)
    files: dict[int, _IndexFileAcc] = {}
    per_seg = np.zeros(0, np.int64)
    n = 0
    unknown_runs = 0
    off_sorted, by_off = msg["off_sorted"], msg["by_off"]
    m_seg, m_ts, m_indexed = msg["seg"], msg["ts"], msg["indexed"]
    for b in _batches(root, "message_keys", _KEY_COLUMNS, present):
        if not b.num_rows:
            continue
        n += b.num_rows
        col = dict(zip(b.schema.names, b.columns))
        seg = seg_ids(col["segment"])
        k = len(seg_ids)
        per_seg = _grow(per_seg, k)
        per_seg[:k] += _bincount(seg, k)
        off = _np(col["commitlog_offset"], -1, np.int64)
        ts = _np(col["store_timestamp"], _NO_TS, np.int64)
        if len(off_sorted):
            i = np.minimum(np.searchsorted(off_sorted, off), len(off_sorted) - 1)
            j = by_off[i]
            hit = (off_sorted[i] == off) & (m_seg[j] == seg)
            unindexed = hit & ~m_indexed[j]
            time_mismatch = hit & (m_ts[j] != ts)
        else:
            hit = unindexed = time_mismatch = np.zeros(len(off), bool)
        orphan = ~hit
        h = _np(col["key_hash"], -1, np.int64)
        bucket = _np(col["key_bucket"], -1, np.int64)
        slot = _np(col["slot"], -1, np.int64)
        bucket_bad = (bucket != h % buckets) if buckets else np.zeros(len(h), bool)
        slot_bad = slot != h % int(config.maxHashSlotNum)
        nulls = np.zeros(b.num_rows, np.int64)
        for c in _KEY_REQUIRED:
            if col[c].null_count:
                nulls += _np(pc.is_null(col[c]), False, bool)
        unknown_runs += _unknown_run_rows(col["run_id"], known_runs)
        file_no = _np(col["index_file_no"], -1, np.int64)
        entry = _np(col["index_entry"], -1, np.int64)
        # one group per index file number in the batch: sums with reduceat, entries and names per group
        order = np.argsort(file_no, kind="stable")
        fs = file_no[order]
        starts = np.flatnonzero(np.r_[True, fs[1:] != fs[:-1]]) if len(fs) else np.zeros(0, np.int64)
        stops = np.r_[starts[1:], len(fs)]
        sums = {counter: np.add.reduceat(arr[order].astype(np.int64), starts) if len(starts) else arr[:0]
                for counter, arr in zip(_IndexFileAcc.COUNTERS,
                                     (orphan, unindexed, time_mismatch, bucket_bad, slot_bad, nulls))}
        enc = pc.dictionary_encode(col["index_file"], null_encoding="encode")
        values = enc.dictionary.to_pylist()
        codes = np.asarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)[order]
        changes = np.r_[False, codes[1:] != codes[:-1]] if len(codes) else np.zeros(0, bool)
        es = entry[order]
        for g, (lo, hi) in enumerate(zip(starts.tolist(), stops.tolist())):
            f = int(fs[lo])
            acc = files.get(f)
            if acc is None:
                acc = files[f] = _IndexFileAcc(capacity)
            acc.add_entries(es[lo:hi])
            if changes[lo + 1:hi].any():
                acc.names.update(values[c] for c in np.unique(codes[lo:hi]).tolist())
            else:
                acc.names.add(values[int(codes[lo])])
            for counter in _IndexFileAcc.COUNTERS:
                acc.counts[counter] += int(sums[counter][g])
    rows = []
    prev_name: str | None = None
    for f in sorted(files):
        a = files[f]
        name = min((x for x in a.names if x is not None), default=None)
        rows.append({"index_file_no": f, "index_file": name, "names": len(a.names), "key_rows": a.rows,
                     "first_entry": a.first, "last_entry": a.last, "span": a.last - a.first + 1,
                     "duplicate_entries": a.duplicates, "entries_out_of_range": a.out_of_range,
                     "orphan_keys": a.counts["orphans"], "keys_of_unindexed_messages": a.counts["unindexed"],
                     "time_mismatches": a.counts["time_mismatch"], "bucket_mismatches": a.counts["bucket_mismatch"],
                     "slot_mismatches": a.counts["slot_mismatch"], "null_fields": a.counts["nulls"],
                     "name_increasing": prev_name is None or (name is not None and name > prev_name)})
        prev_name = name if name is not None else prev_name
    frame = pd.DataFrame(rows, columns=["index_file_no", "index_file", "names", "key_rows", "first_entry",
                                        "last_entry", "span", "duplicate_entries", "entries_out_of_range",
                                        "orphan_keys", "keys_of_unindexed_messages", "time_mismatches",
                                        "bucket_mismatches", "slot_mismatches", "null_fields", "name_increasing"])
    return {"n": n, "per_segment": per_seg, "frame": frame, "unknown_run_rows": unknown_runs,
            "per_file_rows": {r["index_file"]: r["key_rows"] for r in rows}}


def _segment_frame(segs: pa.Table, seg_ids: _Ids, message_rows: np.ndarray, msg: dict, key_rows: np.ndarray,
                   config: BrokerConfig) -> pd.DataFrame:
    recs = {r["segment"]: r for r in segs.to_pylist()}
    live = sorted((r for r in recs.values() if r["status"] == "live" and r["base_offset"] is not None),
                  key=lambda r: r["base_offset"])
    next_base = {a["segment"]: b["base_offset"] for a, b in zip(live, live[1:])}
    rows = []
    for i, name in enumerate(seg_ids.names):
        r = recs.get(name, {})
        base, size = r.get("base_offset"), r.get("file_size")
        rows.append({
            "segment": name, "status": r.get("status") or "missing",
            "base_offset": base, "base_offset_name": segment_name(base) if base is not None else None,
            "file_size": size, "expected_file_size": int(config.mappedFileSizeCommitLog),
            "end_offset": base + size if base is not None and size is not None else None,
            "next_live_base_offset": next_base.get(name), "bytes_written": r.get("bytes_written"),
            "records_end": int(msg["ends"][i]),
            "records": r.get("records"), "message_rows": int(message_rows[i]),
            "dispatched": r.get("dispatched"), "dispatched_rows": int(msg["dispatched"][i]),
            "index_keys": r.get("index_keys"), "key_rows": int(key_rows[i]),
            "rows_left": int(message_rows[i] + key_rows[i]),
            "first_store_time": _iso_dt(r.get("first_store_time")),
            "min_store_time": _iso_us(int(msg["ts_min"][i])),
            "last_store_time": _iso_dt(r.get("last_store_time")),
            "max_store_time": _iso_us(int(msg["ts_max"][i])),
        })
    frame = pd.DataFrame(rows, columns=["segment", "status", "base_offset", "base_offset_name", "file_size",
                                        "expected_file_size", "end_offset", "next_live_base_offset", "bytes_written",
                                        "records_end", "records", "message_rows", "dispatched", "dispatched_rows",
                                        "index_keys", "key_rows", "rows_left", "first_store_time", "min_store_time",
                                        "last_store_time", "max_store_time"])
    for c in ("base_offset", "file_size", "end_offset", "next_live_base_offset", "bytes_written", "records",
              "dispatched", "index_keys"):
        frame[c] = frame[c].astype("Int64")
    return frame.sort_values("segment", na_position="first", ignore_index=True)


def _iso_dt(v: Any) -> str | None:
    """ISO text of a time read from a table row, in the same form as :func:`_iso_us`."""
    if v is None:
        return None
    if isinstance(v, _dt.datetime):
        return iso_us(datetime_to_us(v))
    return str(v)


def _message_frame(seg_ids: _Ids, msg: dict, per_seg_anom: dict[tuple[str | None, str], int]) -> pd.DataFrame:
    rows = []
    for i, name in enumerate(seg_ids.names):
        if not msg["rows"][i] and not per_seg_anom.get((name, "crc_mismatch")) \
                and not per_seg_anom.get((name, "size_mismatch")):
            continue
        rows.append({"segment": name, "rows": int(msg["rows"][i]), "duplicate_offsets": int(msg["duplicates"][i]),
                     "offsets_not_base_plus_position": int(msg["not_base"][i]),
                     "offsets_not_increasing": int(msg["not_increasing"][i]), "layout_gaps": int(msg["gaps"][i]),
                     "bad_sizes": int(msg["bad_sizes"][i]), "null_fields": int(msg["nulls"][i]),
                     "consume_queue_flag_mismatches": int(msg["cq_flag"][i]),
                     "crc_mismatch_rows": int(msg["crc_bad"][i]),
                     "crc_mismatch_anomalies": per_seg_anom.get((name, "crc_mismatch"), 0),
                     "size_mismatch_rows": int(msg["size_bad"][i]),
                     "size_mismatch_anomalies": per_seg_anom.get((name, "size_mismatch"), 0)})
    cols = ["segment", "rows", "duplicate_offsets", "offsets_not_base_plus_position", "offsets_not_increasing",
            "layout_gaps", "bad_sizes", "null_fields", "consume_queue_flag_mismatches", "crc_mismatch_rows",
            "crc_mismatch_anomalies", "size_mismatch_rows", "size_mismatch_anomalies"]
    return pd.DataFrame(rows, columns=cols).sort_values("segment", na_position="first", ignore_index=True)


def _audit_frame(root: str, present: dict[str, set[str]], seg_ids: _Ids, message_rows: np.ndarray, segs: pa.Table,
                 msg: dict, keys: dict, config: BrokerConfig) -> pd.DataFrame:
    """The inventory rows of ``expiry_audit`` (segments, consume queue files, index files) against
    what the other tables hold."""
    audit = _read(root, "expiry_audit", ["kind", "name", "messages"], present)
    claimed: dict[tuple[str, str | None], int] = {}
    for kind, name, n in zip(audit["kind"].to_pylist(), audit["name"].to_pylist(), audit["messages"].to_pylist()):
        if kind in ("segment", "consume_queue_file", "index_file"):
            claimed[(kind, name)] = claimed.get((kind, name), 0) + int(n or 0)
    actual: dict[tuple[str, str | None], int] = {}
    live = {s for s, st in zip(segs["segment"].to_pylist(), segs["status"].to_pylist()) if st == "live"}
    for i, name in enumerate(seg_ids.names):
        if name in live or message_rows[i]:
            actual[("segment", name)] = int(message_rows[i])
    qk, co = msg["cq_files"]["qkey"], msg["cq_files"]["cqoff"]
    if len(qk):  # sorted by queue, then unit number: a file is a run of equal (queue, unit // units per file)
        units_per_file = max(int(config.cq_file_size) // CQ_UNIT_SIZE, 1)
        fno = co // units_per_file
        starts = np.flatnonzero(np.r_[True, (qk[1:] != qk[:-1]) | (fno[1:] != fno[:-1])])
        counts = np.diff(np.r_[starts, len(qk)])
        topics = msg["topics"].names
        for q, f, c in zip(qk[starts].tolist(), fno[starts].tolist(), counts.tolist()):
            name = f"{topics[q >> 32]}/{signed32(q)}/{segment_name(f * int(config.cq_file_size))}"
            actual[("consume_queue_file", name)] = int(c)
    for name, c in keys["per_file_rows"].items():
        actual[("index_file", name)] = actual.get(("index_file", name), 0) + int(c)
    rows = [{"kind": k, "name": n, "audit_count": claimed.get((k, n), 0), "table_count": actual.get((k, n), 0),
             "in_audit": (k, n) in claimed, "in_tables": (k, n) in actual}
            for k, n in sorted(set(claimed) | set(actual), key=lambda x: (x[0], x[1] or ""))]
    return pd.DataFrame(rows, columns=["kind", "name", "audit_count", "table_count", "in_audit", "in_tables"])


# ---------------------------------------------------------------------------------------------
# the suites


@dataclasses.dataclass(frozen=True)
class Check:
    """One expectation: its GX class name and arguments, the rule in words, and the damage it catches."""
    expectation: str
    kwargs: dict
    rule: str
    catches: str


@dataclasses.dataclass(frozen=True)
class Suite:
    frame: str                      # Figures attribute (also the data asset's name)
    ids: tuple[str, ...]            # columns naming a row (shown with unexpected values)
    about: str
    checks: tuple[Check, ...]

    @property
    def name(self) -> str:
        return SUITE_PREFIX + self.frame


def _zero(column: str, rule: str, catches: str, **kw: Any) -> Check:
    return Check("ExpectColumnValuesToBeBetween", {"column": column, "min_value": 0, "max_value": 0, **kw}, rule,
                 catches)


def _equal(a: str, b: str, rule: str, catches: str, **kw: Any) -> Check:
    return Check("ExpectColumnPairValuesToBeEqual",
                 {"column_A": a, "column_B": b, "ignore_row_if": "either_value_is_missing", **kw}, rule, catches)


def _true(column: str, rule: str, catches: str) -> Check:
    return Check("ExpectColumnValuesToBeInSet", {"column": column, "value_set": [True]}, rule, catches)


_LIVE = ("status", "==", "live")
_DELETED = ("status", "==", "deleted")

SUITES: tuple[Suite, ...] = (
    Suite("tables", ("table", "detail"), "one row per table: presence and schema", (
        _true("exists", "all six tables exist (exists is true for every table)",
              "a table folder lost or never committed (a failed or partial publish, a wrong --tables path)"),
        _zero("missing_columns", "every column of the published schema is there (missing_columns = 0)",
              "tables written by another version of the job, or rewritten by hand without some columns"),
        _zero("type_mismatches", "every column has the published type (type_mismatches = 0)",
              "a table rewritten with other types (e.g. timestamps as strings, ints widened), which breaks "
              "lookups and the incremental merge"),
    )),
    Suite("segments", ("segment",), "one row per segment named by segments, messages or message_keys", (
        Check("ExpectColumnValuesToBeInSet", {"column": "status", "value_set": ["live", "deleted"]},
              "every segment holding messages or keys rows has a segments row (status is live or deleted)",
              "rows of segments the segments table does not know: leftovers of a failed run, partitions copied in "
              "from another store, a segments table that lost rows"),
        _equal("segment", "base_offset_name", "a segment's name is its 20-digit base offset",
               "segments rows edited or mixed up (a lookup by offset would pick the wrong segment)"),
        _equal("file_size", "expected_file_size",
               "each live segment is mappedFileSizeCommitLog long (file_size equals the latest run's setting)",
               "truncated or odd-sized segment files recorded (the broker refuses to load them)",
               row_condition=_LIVE),
        _equal("end_offset", "next_live_base_offset",
               "live segments cover the commitlog without a gap (base_offset + file_size = next base_offset)",
               "a segment missing from the table or from the store between two others: the commitlog has a hole"),
        Check("ExpectColumnPairValuesAToBeGreaterThanB",
              {"column_A": "file_size", "column_B": "bytes_written", "or_equal": True,
               "ignore_row_if": "either_value_is_missing"},
              "bytes_written is at most file_size", "segments rows with impossible write positions"),
        Check("ExpectColumnPairValuesAToBeGreaterThanB",
              {"column_A": "bytes_written", "column_B": "records_end", "or_equal": True,
               "ignore_row_if": "either_value_is_missing"},
              "the last messages row ends within bytes_written (records_end <= bytes_written)",
              "messages rows beyond the data the walk recorded (rows from another store or a longer segment)"),
        _equal("records", "message_rows", "a live segment's records equals its rows in messages",
               "messages rows lost or duplicated after publication (a partition file deleted, a bad compaction or "
               "vacuum, a hand-made delete or append)", row_condition=_LIVE),
        _equal("dispatched", "dispatched_rows", "a live segment's dispatched equals its dispatched rows in messages",
               "messages rows whose dispatch was changed, or lost dispatched rows", row_condition=_LIVE),
        _equal("index_keys", "key_rows", "a live segment's index_keys equals its rows in message_keys",
               "message_keys rows lost or duplicated (a bucket file deleted, rows appended twice)",
               row_condition=_LIVE),
        _zero("rows_left", "a deleted segment has no messages or message_keys rows left (rows_left = 0)",
              "rows of segments the broker deleted still in the tables (lookups return messages that are gone)",
              row_condition=_DELETED),
        _equal("first_store_time", "min_store_time",
               "a segment's first_store_time equals the earliest store_timestamp of its messages rows",
               "store timestamps outside the segment's time range: rows moved to the wrong segment partition, "
               "timestamps rewritten, or segments figures stale"),
        _equal("last_store_time", "max_store_time",
               "a segment's last_store_time equals the latest store_timestamp of its messages rows",
               "store timestamps outside the segment's time range (as above); the expiry audit uses these times"),
    )),
    Suite("messages", ("segment",), "one row per segment of the messages table", (
        _zero("duplicate_offsets", "commitlog offsets are unique in the table (duplicate_offsets = 0)",
              "a messages row written twice (a retried or overlapping publish, a hand-made append)"),
        _zero("offsets_not_base_plus_position",
              "every commitlog_offset equals its segment's base offset plus its position",
              "rows in the wrong segment partition, or records whose stored physical offset is wrong"),
        _zero("offsets_not_increasing", "commitlog offsets increase with the position within a segment",
              "rows out of order or duplicated within a segment"),
        _zero("layout_gaps", "within a segment each record starts where the previous one ends (position + "
                             "structural_size)", "messages rows missing from the middle of a segment"),
        _zero("bad_sizes", "size and structural_size are positive and 0 <= body_size <= structural_size",
              "rows with impossible sizes (corrupt rows or a mis-decoded record)"),
        _zero("null_fields", "no nulls in offsets, sizes, topic, queue_id, store_timestamp, flags, dispatch, run_id",
              "rows with missing fields (a partial write, a schema change, store timestamps out of range)"),
        _zero("consume_queue_flag_mismatches",
              "consume_queue is true exactly when consume_queue_offset is set",
              "rows whose dispatch figures contradict each other"),
        _equal("crc_mismatch_rows", "crc_mismatch_anomalies",
               "rows with body_crc_ok false and a non-empty body equal the segment's crc_mismatch anomalies",
               "anomalies rows lost, or messages rows changed after the run"),
        _equal("size_mismatch_rows", "size_mismatch_anomalies",
               "rows skipped for their totalSize equal the segment's size_mismatch anomalies",
               "anomalies rows lost, or messages rows changed after the run"),
    )),
    Suite("consume_queues", ("topic", "queue_id"), "one row per (topic, queue_id) of records in a consume queue", (
        _zero("duplicate_units", "no two rows of a queue have the same consume_queue_offset (duplicate_units = 0)",
              "a message counted twice in its queue (duplicated rows)"),
        _equal("span", "units",
               "each queue's consume_queue_offset values are contiguous (last - first + 1 equals the rows)",
               "messages rows missing from a queue (a consumer would see a hole), or units mis-numbered"),
    )),
    Suite("message_keys", ("index_file_no", "index_file"), "one row per index file of the message_keys table", (
        _zero("orphan_keys", "every key row points at a messages row with its segment and commitlog_offset",
              "key rows of messages that are gone: lookups by key return nothing or the wrong message"),
        _zero("keys_of_unindexed_messages", "key rows only point at messages rows with indexed = true",
              "keys of records the reput does not index (rolled-back transactions, skipped records)"),
        _zero("time_mismatches", "a key row's store_timestamp equals its message's",
              "key rows joined to the wrong message (time-range lookups miss them)"),
        _zero("duplicate_entries", "entry numbers are unique within an index file",
              "key rows written twice"),
        _equal("span", "key_rows", "entry numbers of an index file are contiguous (last - first + 1 equals the rows)",
               "key rows missing from the middle of an index file"),
        _zero("entries_out_of_range", "entry numbers are within 1 .. maxIndexNum - 1",
              "entries an index file cannot hold (a wrong maxIndexNum, corrupt rows)"),
        Check("ExpectColumnValuesToBeBetween", {"column": "names", "min_value": 1, "max_value": 1},
              "one name per index file number", "index files that would overwrite each other or be loaded twice"),
        _true("name_increasing", "index file names increase with the file number",
              "names the broker would load in the wrong order (IndexService sorts by name)"),
        _zero("bucket_mismatches", "key_bucket = key_hash % the table's bucket count",
              "rows in the wrong bucket partition: a lookup by key opens another file and misses them"),
        _zero("slot_mismatches", "slot = key_hash % maxHashSlotNum", "rows with a wrong hash slot"),
        _zero("null_fields", "no nulls in hash, slot, offset, time, index file fields and run_id",
              "rows with missing fields"),
    )),
    Suite("key_lookups", ("index_file", "index_entry"), "one row per sampled message_keys row (an entry of a "
                                                        "rebuilt index file), looked up by key as users do", (
        _true("found", "looking the entry's topic and key up (pipelines.lookup.lookup_key, the lookup command) "
                       "returns its message",
              "keys present in the tables but lost to lookups: files whose partition values or statistics exclude "
              "their own rows (e.g. truncated statistics of long topic strings), rows in the wrong bucket, "
              "messages rows missing"),
    )),
    Suite("expiry_audit", ("kind", "name"), "one row per segment, consume queue file and index file the audit lists "
                                            "or the tables hold", (
        _equal("audit_count", "table_count",
               "the audit's message count of each segment, consume queue file and index file equals the tables' "
               "(0 where one side does not list it)",
               "an expiry audit that does not describe the tables: rows lost or added since, or files missing "
               "from the inventory, so the cleanup forecast and the lost-message counts are wrong"),
    )),
    Suite("anomalies", ("kind",), "one row per anomaly kind", (
        _equal("found", "expected", "the anomaly count of each kind equals the accepted count (0 unless given)",
               "a corrupt store: bad magic codes, unreadable or mis-sized records, CRC mismatches, unreachable "
               "records, queue offset gaps; the consume queues and index rebuilt from it are not what a clean "
               "store gives"),
        _true("known", "every anomaly kind is one the job writes",
              "anomalies written by another version or by hand, which these checks cannot judge"),
    )),
    Suite("runs", ("run_id",), "the latest row of runs against the tables", (
        Check("ExpectTableRowCountToEqual", {"value": 1}, "the runs table has a latest run",
              "tables without a run row: not published by this job, or the runs table lost"),
        _equal("messages_written", "message_rows",
               "the latest run's messages_written equals the messages rows of the segments it scanned",
               "messages rows lost or added since the last run"),
        _equal("keys_written", "key_rows",
               "the latest run's keys_written equals the message_keys rows of the segments it scanned",
               "message_keys rows lost or added since the last run"),
        _equal("anomalies", "anomaly_rows", "the latest run's anomaly count equals the anomalies rows",
               "anomalies rows lost or added since the last run"),
        _equal("segments_in_store", "live_segments", "the latest run's segments_in_store equals the live segments",
               "a segments table out of step with the last run"),
        _true("watermark_segment_live", "the latest run's watermark segment is a live segment",
              "an incremental refresh would start from a segment the tables do not have"),
        _zero("rows_of_unknown_runs", "every messages and message_keys row was written by a run in runs",
              "rows from an aborted run or copied from other tables"),
    )),
)


# ---------------------------------------------------------------------------------------------
# running the suites


@dataclasses.dataclass
class Failure:
    """A failing expectation and what was observed."""
    suite: str
    expectation: str                 # GX expectation type, e.g. expect_column_values_to_be_between
    column: str                      # the figure checked ("a,b" for a pair, "" for the table)
    rule: str
    observed: str
    catches: str

    def line(self) -> str:
        return f"FAIL {self.suite}: {self.rule} -- observed: {self.observed}"


@dataclasses.dataclass
class SuiteOutcome:
    name: str
    success: bool
    evaluated: int
    successful: int
    unsuccessful: int
    page: str | None = None          # the GX validation page, relative to the docs folder


@dataclasses.dataclass
class ValidationReport:
    """What :func:`validate_tables` found."""
    tables: str
    success: bool
    suites: list[SuiteOutcome]
    failures: list[Failure]
    anomaly_counts: dict[str, int]
    latest_run: str | None
    docs: str | None                 # path of the docs index (None: not written)
    seconds: float
    figures: Figures | None = dataclasses.field(default=None, repr=False)

    @property
    def evaluated(self) -> int:
        return sum(s.evaluated for s in self.suites)

    @property
    def unsuccessful(self) -> int:
        return sum(s.unsuccessful for s in self.suites)

    def to_dict(self) -> dict:
        return {"tables": self.tables, "success": self.success, "latest_run": self.latest_run,
                "expectations": self.evaluated, "failed": self.unsuccessful,
                "suites": [dataclasses.asdict(s) for s in self.suites],
                "failures": [dataclasses.asdict(f) | {"line": f.line()} for f in self.failures],
                "anomalies": self.anomaly_counts, "docs": self.docs, "seconds": self.seconds}

    def render(self) -> str:
        verdict = "PASSED" if self.success else "FAILED"
        lines = [f"validation     {verdict}: {self.evaluated - self.unsuccessful} of {self.evaluated} expectations "
                 f"hold in {len(self.suites)} suites ({self.tables}, latest run {self.latest_run or 'none'})"]
        lines += [f.line() for f in self.failures]
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(self.anomaly_counts.items())) or "none"
        lines.append(f"anomalies      {kinds}")
        if self.docs:
            lines.append(f"data docs      {self.docs}")
        return "\n".join(lines)


def _import_gx():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import great_expectations as gx
            import great_expectations.expectations as gxe
            from great_expectations.data_context.types.base import (
                DataContextConfig,
                InMemoryStoreBackendDefaults,
                ProgressBarsConfig,
            )
            from great_expectations.expectations.row_conditions import Column
    except ImportError as e:
        raise ValidationSetupError(f"Great Expectations is not installed ({e}); install it with {INSTALL_HINT}") \
            from None
    return gx, gxe, DataContextConfig, InMemoryStoreBackendDefaults, ProgressBarsConfig, Column


def _docs_dir(tables: str, docs: str | None) -> str:
    if docs is None:
        if "://" in tables and not tables.startswith("file://"):
            raise ValidationSetupError(f"{tables} is not a local folder: give --docs a local folder for the Data Docs")
        root = tables[len("file://"):] if tables.startswith("file://") else tables
        docs = os.path.join(root, DOCS_FOLDER)
    docs = os.path.abspath(docs)
    if os.path.exists(docs) and not os.path.isdir(docs):
        raise ValidationSetupError(f"{docs} exists and is not a folder: choose another --docs folder")
    from .preflight import check_writable_folder
    check_writable_folder(docs, "--docs", "it receives the Data Docs")   # before the checks run
    index = os.path.join(docs, "index.html")
    ours = False
    if os.path.exists(index):
        with open(index, encoding="utf-8", errors="replace") as f:
            ours = _INDEX_MARKER in f.read(4096)
    # the previous run's pages are replaced: only in a folder this command wrote
    if (os.path.exists(index) or os.path.exists(os.path.join(docs, GX_SITE))) and not ours:
        raise ValidationSetupError(f"{docs} already holds an index.html or {GX_SITE}/ not written by validate: "
                                   "choose another --docs folder")
    return docs


def validate_tables(tables: str, docs: str | None = None, *, expected_anomalies: Mapping[str, int] | None = None,
                    write_docs: bool = True) -> ValidationReport:
    """Validate the Delta tables under ``tables`` with the suites of :data:`SUITES`.

    Args:
        tables: root folder (or URI) of the tables.
        docs: Data Docs folder (default ``TABLES/_data_docs``); ``DOCS/index.html`` is the entry page.
        expected_anomalies: anomaly count accepted per kind, e.g. ``{"crc_mismatch": 1}`` for a store
            whose damage is known (default 0 for every kind: a corrupt store fails).
        write_docs: build the Data Docs (False: only the report).
    Returns:
        The report (``success`` is False when some expectation fails).
    Raises:
        ValidationSetupError: no tables under ``tables``, Great Expectations missing, or an unusable
            docs folder.

    Example:
        >>> report = validate_tables("demo/out/tables")  # doctest: +SKIP
        >>> report.success, [f.line() for f in report.failures]  # doctest: +SKIP
    """
    t0 = time.perf_counter()
    if not any(_open(tables, name) is not None for name in TABLE_NAMES):
        compute_figures(tables)  # raises the "no tables" error before Great Expectations is loaded
    gx_mod = _import_gx()
    docs_dir = _docs_dir(tables, docs) if write_docs else None
    figures = compute_figures(tables, expected_anomalies=expected_anomalies)
    log.info("figures computed in %.1f s", figures.seconds)
    outcomes, failures = _run_gx(gx_mod, figures, docs_dir)
    report = ValidationReport(tables=tables, success=all(o.success for o in outcomes), suites=outcomes,
                              failures=failures, anomaly_counts=figures.anomaly_counts,
                              latest_run=figures.latest_run, docs=None, seconds=0.0, figures=figures)
    if docs_dir is not None:
        report.docs = _write_index(docs_dir, report)
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def _expectation(gxe, column_cls, check: Check):
    kwargs = dict(check.kwargs)
    cond = kwargs.pop("row_condition", None)
    if cond is not None:
        col, op, value = cond
        assert op == "=="
        kwargs["row_condition"] = column_cls(col) == value
    cls = getattr(gxe, check.expectation)
    return cls(**kwargs, description=check.rule, notes=f"Catches: {check.catches}",
               meta={"catches": check.catches})


def _run_gx(gx_mod, figures: Figures, docs_dir: str | None) -> tuple[list[SuiteOutcome], list[Failure]]:
    gx, gxe, DataContextConfig, InMemoryStoreBackendDefaults, ProgressBarsConfig, Column = gx_mod
    site_dir = os.path.join(docs_dir, GX_SITE) if docs_dir else None
    sites = {}
    if site_dir is not None:
        if os.path.isdir(site_dir):
            shutil.rmtree(site_dir)  # the previous run's pages: the docs describe this run
        sites = {"tables": {"class_name": "SiteBuilder", "show_how_to_buttons": False,
                            "store_backend": {"class_name": "TupleFilesystemStoreBackend",
                                              "base_directory": site_dir},
                            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder",
                                                   "show_cta_footer": False}}}
    config = DataContextConfig(store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
                               analytics_enabled=False, progress_bars=ProgressBarsConfig(globally=False),
                               data_docs_sites=sites)
    outcomes: list[SuiteOutcome] = []
    failures: list[Failure] = []
    gx_log = logging.getLogger("great_expectations")
    old_level = gx_log.level
    gx_log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            context = gx.get_context(mode="ephemeral", project_config=config)
            source = context.data_sources.add_pandas("rocketmq_tables")
            identifiers = []
            for suite_def in SUITES:
                asset = source.add_dataframe_asset(suite_def.frame)
                batch_def = asset.add_batch_definition_whole_dataframe("figures")
                suite = context.suites.add(gx.ExpectationSuite(name=suite_def.name, meta={"about": suite_def.about}))
                for check in suite_def.checks:
                    suite.add_expectation(_expectation(gxe, Column, check))
                vdef = context.validation_definitions.add(
                    gx.ValidationDefinition(name=suite_def.name, data=batch_def, suite=suite))
                checkpoint = context.checkpoints.add(gx.Checkpoint(
                    name=suite_def.name, validation_definitions=[vdef], actions=[],
                    result_format={"result_format": "COMPLETE", "partial_unexpected_count": 20,
                                   "unexpected_index_column_names": list(suite_def.ids)}))
                result = checkpoint.run(batch_parameters={"dataframe": figures.frame(suite_def.frame)})
                for ident, vres in result.run_results.items():
                    identifiers.append(ident)
                    stats = vres.statistics
                    outcomes.append(SuiteOutcome(suite_def.name, bool(vres.success),
                                                 int(stats["evaluated_expectations"]),
                                                 int(stats["successful_expectations"]),
                                                 int(stats["unsuccessful_expectations"])))
                    by_rule = {c.rule: c for c in suite_def.checks}
                    for er in vres.results:
                        if er.success:
                            continue
                        cfg = er.expectation_config
                        failed = by_rule.get(cfg.description or "")
                        failures.append(Failure(suite_def.name, cfg.type, _column_of(failed),
                                                cfg.description or cfg.type, _observed(er, suite_def),
                                                failed.catches if failed else ""))
            if site_dir is not None:
                context.build_data_docs(site_names=["tables"])
                for outcome, ident in zip(outcomes, identifiers):
                    outcome.page = _page_of(context, ident, docs_dir)
    finally:
        gx_log.setLevel(old_level)
    return outcomes, failures


def _column_of(check: Check | None) -> str:
    if check is None:
        return ""
    kw = check.kwargs
    return kw.get("column") or (f"{kw['column_A']},{kw['column_B']}" if "column_A" in kw else "")


def _page_of(context, ident, docs_dir: str | None) -> str | None:
    try:
        urls = context.get_docs_sites_urls(resource_identifier=ident, site_name="tables")
    except Exception:  # noqa: BLE001 - a missing link must not fail the validation
        return None
    for u in urls:
        url = u.get("site_url") or ""
        if url.startswith("file://") and docs_dir:
            path = urllib.parse.unquote(url[len("file://"):])
            return os.path.relpath(path, docs_dir).replace(os.sep, "/")
    return None


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return None
    return v


def _observed(er, suite_def: Suite) -> str:
    """One line: the unexpected rows with their ids and values, or the observed value."""
    res = er.result or {}
    if "observed_value" in res and "unexpected_count" not in res:
        return str(_plain(res["observed_value"]))
    rows = res.get("unexpected_index_list") or res.get("partial_unexpected_index_list") or []
    total = res.get("unexpected_count")
    count = res.get("element_count")
    items = []
    for r in rows[:5]:
        if isinstance(r, dict):
            ids = " ".join(f"{k}={_plain(r[k])}" for k in suite_def.ids if k in r)
            vals = ", ".join(f"{k}={_plain(v)}" for k, v in r.items() if k not in suite_def.ids)
            items.append(f"{ids} ({vals})" if vals else ids)
        else:
            items.append(str(_plain(r)))
    if not items:
        items = [str(_plain(v)) for v in (res.get("partial_unexpected_list") or [])[:5]]
    more = f", ... {total - len(items)} more" if isinstance(total, int) and total > len(items) else ""
    head = f"{total} of {count} rows unexpected" if total is not None else "failed"
    if er.exception_info and er.exception_info.get("raised_exception"):
        head = f"error: {er.exception_info.get('exception_message')}"
    return f"{head}: {'; '.join(items)}{more}" if items else head


def _write_index(docs_dir: str, report: ValidationReport) -> str:
    """``DOCS/index.html``: this run's verdict as static HTML (readable offline), linking to GX's pages."""
    e = html.escape
    verdict = "PASSED" if report.success else "FAILED"
    suites = "\n".join(
        f"<tr class=\"{'pass' if s.success else 'fail'}\"><td>"
        + (f"<a href=\"{e(s.page)}\">{e(s.name)}</a>" if s.page else e(s.name))
        + f"</td><td>{'passed' if s.success else 'FAILED'}</td><td>{s.evaluated}</td><td>{s.successful}</td>"
          f"<td>{s.unsuccessful}</td></tr>" for s in report.suites)
    fails = "\n".join(f"<li><b>{e(f.suite)}</b>: {e(f.rule)}<br>observed: <code>{e(f.observed)}</code><br>"
                      f"<small>catches: {e(f.catches)}</small></li>" for f in report.failures) or "<li>none</li>"
    kinds = "\n".join(f"<tr><td>{e(k)}</td><td>{v}</td></tr>" for k, v in sorted(report.anomaly_counts.items())) \
        or "<tr><td colspan=\"2\">none</td></tr>"
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
{_INDEX_MARKER}
<title>RocketMQ tables validation: {verdict}</title>
<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}}
td,th{{border:1px solid #999;padding:4px 8px;text-align:left}} tr.fail td{{background:#fdd}}
tr.pass td{{background:#dfd}} code{{white-space:pre-wrap}}</style></head>
<body>
<h1>RocketMQ tables validation: <span id="verdict">{verdict}</span></h1>
<p>Tables: <code>{e(report.tables)}</code> &middot; latest run: <code>{e(report.latest_run or 'none')}</code>
&middot; validated {now} &middot; {report.evaluated - report.unsuccessful} of {report.evaluated} expectations hold,
{report.unsuccessful} failed.</p>
<h2>Expectation suites</h2>
<table id="suites"><tr><th>suite</th><th>status</th><th>evaluated</th><th>successful</th><th>unsuccessful</th></tr>
{suites}
</table>
<h2>Failing expectations</h2>
<ul id="failures">
{fails}
</ul>
<h2>Anomalies by kind</h2>
<table id="anomalies"><tr><th>kind</th><th>rows</th></tr>
{kinds}
</table>
<p>Each suite links to its Great Expectations validation page; the
<a href="{GX_SITE}/index.html">Great Expectations Data Docs home</a> lists them too (its tables need JavaScript
from public CDNs).</p>
</body></html>
"""
    os.makedirs(docs_dir, exist_ok=True)
    path = os.path.join(docs_dir, "index.html")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(tmp, path)
    return path


def run_validate_command(*, tables: str, docs: str | None, as_json: bool) -> int:
    """``python -m pipelines validate``: 0 when every expectation holds, 1 when some fail (one line
    each, with the observed value); errors a user can fix raise :class:`StoreError` (exit 2)."""
    report = validate_tables(tables, docs)
    if as_json:
        print(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        print(report.render())
    sys.stdout.flush()
    return 0 if report.success else 1

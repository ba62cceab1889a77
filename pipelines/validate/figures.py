"""The tables reduced to the small frames the suites check (:class:`Figures`, :func:`compute_figures`).

The tables are read once, as readers see them (:class:`TableReader`), batch by batch, and reduced in
Arrow/numpy to one row per table, per segment, per consume queue, per index file, per expiry-audit
file, per anomaly kind and for the latest run.  No frame holds message data (keys, bodies,
properties), only counts, offsets, times and the ids of the rows (segment, topic and queue id, index
file, kind); uniqueness, contiguity and referential checks are computed as counts here, so Great
Expectations never sees a 3 M-row frame.  The ``messages`` and ``message_keys`` passes are in
:mod:`.message_figures` and :mod:`.key_figures`, the lookup sample in :mod:`.key_lookups`; this
module holds the schema figures, the segments, expiry-audit, anomaly and run frames, and puts them
together.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import logging
import time
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa

from store_format.anomalies import REPORTED_KINDS
from store_format.config import BrokerConfig
from store_format.dledger import ENTRY_HEADER_SIZE
from store_format.layout import segment_name
from store_format.timeutil import datetime_to_us, iso_us

from ..delta import arrow_dataset
from ..tables.runs import newest_run, run_config
from ..tables.schema import TABLE_NAMES
from .errors import ValidationSetupError
from .key_figures import key_figures
from .key_lookups import LOOKUP_COLUMNS, lookup_sample
from .message_figures import cq_file_counts, message_figures, message_frame
from .table_reading import NO_TS, SCHEMAS, Ids, TableReader, grow

__all__ = ["Figures", "compute_figures", "assemble_figures", "FigureSource", "ArrowSource", "schema_row",
           "missing_table_row", "same_type", "AUDITED_KINDS", "NULL_KIND"]

AUDITED_KINDS = ("segment", "consume_queue_file", "index_file")   # the expiry_audit rows checked
NULL_KIND = "(null)"                   # an anomalies row without a kind
TABLE_COLUMNS = ["table", "exists", "rows", "missing_columns", "type_mismatches", "detail"]
RUN_COLUMNS = ["run_id", "mode", "messages_written", "message_rows", "keys_written", "key_rows", "anomalies",
               "anomaly_rows", "segments_in_store", "live_segments", "watermark_segment_live", "rows_of_unknown_runs"]

log = logging.getLogger(__name__)


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


def _schema_rows(reader: TableReader) -> list[dict]:
    """One row per table: does it exist, its rows, missing columns and columns of another type (and
    the columns of each existing table in ``reader.present``)."""
    rows = []
    present = reader.present
    for name in TABLE_NAMES:
        dt = reader.open(name)
        expected = SCHEMAS[name]
        if dt is None:
            rows.append(missing_table_row(name))
            continue
        ds = arrow_dataset(reader.root, name, dt)
        got = ds.schema
        present[name] = set(got.names)
        missing = [f.name for f in expected if f.name not in present[name]]
        wrong = [f"{f.name} ({got.field(f.name).type}, expected {f.type})" for f in expected
                 if f.name in present[name] and not same_type(got.field(f.name).type, f.type)]
        rows.append(schema_row(name, ds.count_rows(), missing, wrong))
    return rows


def schema_row(name: str, n: int, missing: list[str], wrong: list[str]) -> dict:
    """The ``tables`` suite's row of an existing table: its rows, missing columns and columns of another type."""
    detail = "; ".join(x for x in (f"missing: {', '.join(missing)}" if missing else "",
                                   f"types: {', '.join(wrong)}" if wrong else "") if x)
    return {"table": name, "exists": True, "rows": n, "missing_columns": len(missing),
            "type_mismatches": len(wrong), "detail": detail or "as published"}


def missing_table_row(name: str) -> dict:
    """The ``tables`` suite's row of a table that is not there."""
    return {"table": name, "exists": False, "rows": 0, "missing_columns": len(SCHEMAS[name]),
            "type_mismatches": 0, "detail": "no Delta table"}


def same_type(got: pa.DataType, want: pa.DataType) -> bool:
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


class FigureSource(Protocol):
    """Where the figures' counts come from: the tables read with delta-rs and reduced in Arrow/numpy
    (:class:`ArrowSource`), or read and reduced by Spark (:class:`pipelines.validate.spark_figures.SparkSource`).
    Each method returns what is proportional to the segments, queues and files, never to the rows."""
    engine: str
    present: dict[str, set[str]]

    def schema_rows(self) -> list[dict]: ...
    def small_table(self, name: str, columns: list[str]) -> pa.Table: ...
    def anomalies(self) -> dict[tuple[str | None, str], int]: ...
    def audit_claims(self) -> dict[tuple[str, str | None], int]: ...
    def messages(self, seg_ids: Ids, known_runs: set, entry_header: int, config: BrokerConfig) -> dict: ...
    def keys(self, seg_ids: Ids, known_runs: set, msg: dict, config: BrokerConfig) -> dict: ...


class ArrowSource:
    """The tables read once with delta-rs (:class:`TableReader`), batch by batch, reduced in Arrow/numpy."""
    engine = "arrow"

    def __init__(self, tables: str) -> None:
        self.reader = TableReader(tables)
        self.present = self.reader.present

    def schema_rows(self) -> list[dict]:
        return _schema_rows(self.reader)

    def small_table(self, name: str, columns: list[str]) -> pa.Table:
        return self.reader.read(name, columns)

    def anomalies(self) -> dict[tuple[str | None, str], int]:
        t = self.reader.read("anomalies", ["segment", "kind"])
        out: dict[tuple[str | None, str], int] = {}
        for s, k in zip(t["segment"].to_pylist(), t["kind"].to_pylist()):
            key = (s, k if k is not None else NULL_KIND)
            out[key] = out.get(key, 0) + 1
        return out

    def audit_claims(self) -> dict[tuple[str, str | None], int]:
        audit = self.reader.read("expiry_audit", ["kind", "name", "segment", "messages"])
        claimed: dict[tuple[str, str | None], int] = {}
        for kind, name, seg, n in zip(audit["kind"].to_pylist(), audit["name"].to_pylist(),
                                      audit["segment"].to_pylist(), audit["messages"].to_pylist()):
            if kind == "segment":
                name = seg   # a DLedger data file's row is named dledger-<selfId>/data/<segment>
            if kind in AUDITED_KINDS:
                claimed[(kind, name)] = claimed.get((kind, name), 0) + int(n or 0)
        return claimed

    def messages(self, seg_ids: Ids, known_runs: set, entry_header: int, config: BrokerConfig) -> dict:
        msg = message_figures(self.reader, seg_ids, known_runs, entry_header)
        msg["cq_file_counts"] = cq_file_counts(msg, int(config.cq_file_size))
        return msg

    def keys(self, seg_ids: Ids, known_runs: set, msg: dict, config: BrokerConfig) -> dict:
        return key_figures(self.reader, seg_ids, known_runs, msg, config)


def compute_figures(tables: str, *, expected_anomalies: Mapping[str, int] | None = None) -> Figures:
    """Reduce the tables under ``tables`` to the frames the suites check, with delta-rs and Arrow (no GX needed).

    Args:
        tables: root folder (or URI) of the Delta tables.
        expected_anomalies: anomaly count accepted per kind (default 0 for every kind).
    Raises:
        ValidationSetupError: none of the six tables exists under ``tables``.
    """
    return assemble_figures(ArrowSource(tables), tables, expected_anomalies=expected_anomalies)


def assemble_figures(source: FigureSource, tables: str, *,
                     expected_anomalies: Mapping[str, int] | None = None) -> Figures:
    """The frames the suites check, from the counts of ``source`` (either engine): one definition of
    every figure above the counts, so that both engines give the suites the same frames.

    Raises:
        ValidationSetupError: none of the six tables exists under ``tables``.
    """
    t0 = time.perf_counter()
    table_frame = pd.DataFrame(source.schema_rows(), columns=TABLE_COLUMNS)
    if not source.present:
        raise ValidationSetupError(
            f"{tables}: no Delta tables there (expected {', '.join(TABLE_NAMES)}); publish them with "
            "'python -m pipelines tables --store STORE --tables PATH' or 'rebuild --tables PATH'")
    runs = source.small_table("runs", ["run_id", "finished_at", "config", "resume_segment", "watermark_segment",
                                       "segments_in_store", "messages_written", "keys_written", "anomalies", "mode"])
    run_rows = runs.to_pylist()
    run = newest_run(run_rows)
    known_runs = {r["run_id"] for r in run_rows}
    config = run_config(run, tolerant=True)
    seg_ids = Ids()

    segs = source.small_table("segments", ["segment", "base_offset", "file_size", "bytes_written",
                                           "first_store_time", "last_store_time", "records", "dispatched",
                                           "index_keys", "status"])
    for s in segs["segment"].to_pylist():
        seg_ids.get(s)
    per_seg_anom = source.anomalies()

    lap = time.perf_counter()
    msg = source.messages(seg_ids, known_runs, ENTRY_HEADER_SIZE if config.enableDLegerCommitLog else 0, config)
    log.info("messages: %s rows in %.1f s", f"{msg['n']:,}", time.perf_counter() - lap)
    lap = time.perf_counter()
    keys = source.keys(seg_ids, known_runs, msg, config)
    log.info("message_keys: %s rows in %.1f s", f"{keys['n']:,}", time.perf_counter() - lap)

    n_seg = len(seg_ids)  # keys may name segments that messages does not
    for k in ("rows", "dispatched", "crc_bad", "size_bad", "nulls", "bad_sizes", "cq_flag", "duplicates", "not_base",
              "not_increasing", "gaps", "ends"):
        msg[k] = grow(msg[k], n_seg)
    for k in ("ts_min", "ts_max"):
        msg[k] = np.concatenate([msg[k], np.full(n_seg - len(msg[k]), NO_TS, np.int64)])
    message_rows = msg["rows"]
    key_rows = grow(keys["per_segment"], n_seg)

    # anomalies per kind and, for the record anomalies, per segment
    found: dict[str, int] = {}
    for (_s, k), c in per_seg_anom.items():
        found[k] = found.get(k, 0) + c
    expected = {k: 0 for k in REPORTED_KINDS}
    expected.update({k: int(v) for k, v in (expected_anomalies or {}).items()})
    other_kinds = sorted((set(found) | set(expected)) - set(REPORTED_KINDS))
    anomaly_frame = pd.DataFrame([{"kind": k, "found": found.get(k, 0), "expected": expected.get(k, 0),
                                   "known": k in REPORTED_KINDS} for k in list(REPORTED_KINDS) + other_kinds])

    segment_frame = _segment_frame(segs, seg_ids, message_rows, msg, key_rows, config)
    messages_frame = message_frame(seg_ids, msg, per_seg_anom)
    queue_frame = msg["queues"]
    key_frame = keys["frame"]
    audit_frame = _audit_frame(source.audit_claims(), seg_ids, message_rows, segs, msg, keys, config)

    # the latest run against the tables
    live = {s for s, st in zip(segs["segment"].to_pylist(), segs["status"].to_pylist()) if st == "live"}
    if run is not None:
        resume = run["resume_segment"] or ""
        since = [i for i, name in enumerate(seg_ids.names) if name is not None and name >= resume]
        run_frame = pd.DataFrame([{
            "run_id": run["run_id"], "mode": run["mode"],
            "messages_written": _int(run["messages_written"]), "message_rows": int(message_rows[since].sum()),
            "keys_written": _int(run["keys_written"]), "key_rows": int(key_rows[since].sum()),
            "anomalies": _int(run["anomalies"]), "anomaly_rows": sum(per_seg_anom.values()),
            "segments_in_store": _int(run["segments_in_store"]), "live_segments": len(live),
            "watermark_segment_live": run["watermark_segment"] in live,
            "rows_of_unknown_runs": msg["unknown_run_rows"] + keys["unknown_run_rows"]}], columns=RUN_COLUMNS)
    else:
        run_frame = pd.DataFrame(columns=RUN_COLUMNS)
    lap = time.perf_counter()
    lookups = lookup_sample(tables)
    log.info("key lookups: %d sampled entries in %.1f s", len(lookups), time.perf_counter() - lap)
    return Figures(table_frame, segment_frame, messages_frame, queue_frame, key_frame, audit_frame, anomaly_frame,
                   run_frame, {k: int(v) for k, v in found.items()}, run["run_id"] if run else None,
                   round(time.perf_counter() - t0, 3), lookups)


def _int(v: Any) -> int:
    return -1 if v is None else int(v)


def _segment_frame(segs: pa.Table, seg_ids: Ids, message_rows: np.ndarray, msg: dict, key_rows: np.ndarray,
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


def _iso_us(us: int) -> str | None:
    """ISO text of a store time gathered by the figures (``NO_TS``: none)."""
    return None if us == NO_TS else iso_us(us)


def _iso_dt(v: Any) -> str | None:
    """ISO text of a time read from a table row, in the same form as :func:`_iso_us`."""
    if v is None:
        return None
    if isinstance(v, _dt.datetime):
        return iso_us(datetime_to_us(v))
    return str(v)


def _audit_frame(claimed: dict[tuple[str, str | None], int], seg_ids: Ids, message_rows: np.ndarray,
                 segs: pa.Table, msg: dict, keys: dict, config: BrokerConfig) -> pd.DataFrame:
    """The inventory rows of ``expiry_audit`` (segments, consume queue files, index files) against
    what the other tables hold; the queues of BatchCQ topics (``batchconsumequeue/``) are not in
    the audit, nor any queue of a RocksDB consume queue (``storeType=defaultRocksDB``: no files)."""
    batch_topics = config.batch_topics
    actual: dict[tuple[str, str | None], int] = {}
    live = {s for s, st in zip(segs["segment"].to_pylist(), segs["status"].to_pylist()) if st == "live"}
    for i, name in enumerate(seg_ids.names):
        if name in live or message_rows[i]:
            actual[("segment", name)] = int(message_rows[i])
    for name, c in ({} if config.rocksdb_cq else msg["cq_file_counts"]).items():
        if batch_topics and name.rsplit("/", 2)[0] in batch_topics:
            continue
        actual[("consume_queue_file", name)] = int(c)
    for name, c in keys["per_file_rows"].items():
        actual[("index_file", name)] = actual.get(("index_file", name), 0) + int(c)
    rows = [{"kind": k, "name": n, "audit_count": claimed.get((k, n), 0), "table_count": actual.get((k, n), 0),
             "in_audit": (k, n) in claimed, "in_tables": (k, n) in actual}
            for k, n in sorted(set(claimed) | set(actual), key=lambda x: (x[0], x[1] or ""))]
    return pd.DataFrame(rows, columns=["kind", "name", "audit_count", "table_count", "in_audit", "in_tables"])

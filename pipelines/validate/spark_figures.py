"""The counts of ``validate --engine spark``: the Delta tables read and reduced by Spark (:class:`SparkSource`).

Each table is read as readers see it (the version of the latest complete run,
:mod:`pipelines.tables.runs`; without any run, the newest) through :func:`pipelines.delta.read_spark`:
``spark.read.format("delta")`` with ``versionAsOf`` when the session has Delta's classes, else Spark's
Parquet reader over the files delta-rs lists for that version.  The columns come in the published
schema's types (a column the table lacks as nulls, a column of another type cast, nulls where it does
not cast), as :class:`pipelines.validate.table_reading.TableReader` gives them to the Arrow engine.

Spark then does every per-row step of :mod:`.message_figures` and :mod:`.key_figures` as DataFrame
aggregates, windows and joins: per segment, rows, null fields, impossible sizes, CRC and totalSize
failures (``CommitLog.checkMessageAndReturnSize``), duplicate offsets, offsets against ``base offset +
position``, gaps in the layout (a window over each segment in position order); per queue, its
consume queue units (``ConsumeQueue.putMessagePositionInfo``) and per consume queue file its units,
light queues' too (``CommitLogDispatcherBuildConsumeQueue`` multi-dispatch); per index file, its entries
(``IndexFile.putKey``) joined to their messages.  The driver collects one row per segment, queue,
consume queue file, index file and anomaly kind, and :func:`pipelines.validate.figures.assemble_figures`
puts them into the frames exactly as for the Arrow engine.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from store_format.config import BrokerConfig
from store_format.layout import CQ_UNIT_SIZE, consume_queue_file_path

from ..delta import arrow_dataset, open_table, read_spark
from ..pyspark_private import arrow_schema_of_spark
from ..session import delta_classes_available, spark_schema
from ..tables.rows import NOT_DISPATCHED, SIZE_MISMATCH_DISPATCH
from ..tables.runs import snapshot
from ..tables.schema import TABLE_NAMES, table_key_buckets
from .figures import AUDITED_KINDS, NULL_KIND, missing_table_row, same_type, schema_row
from .key_figures import KEY_COLUMNS, KEY_REQUIRED, entry_capacity, index_file_frame
from .message_figures import MESSAGE_COLUMNS, MESSAGE_REQUIRED, consume_queue_frame
from .table_reading import NO_TS, SCHEMAS, Ids

__all__ = ["SparkSource", "spark_frame"]

# the columns of the frames of figures that hold text (the type of a column of nulls; others hold counts)
_TEXT = {"table", "detail", "segment", "status", "base_offset_name", "first_store_time", "min_store_time",
         "last_store_time", "max_store_time", "topic", "index_file", "key", "kind", "name", "run_id", "mode"}

_PER_SEGMENT = ("rows", "dispatched", "crc_bad", "size_bad", "nulls", "bad_sizes", "cq_flag", "duplicates",
                "not_base", "not_increasing", "gaps", "ends")
_KEY_COUNTERS = ("orphan_keys", "keys_of_unindexed_messages", "time_mismatches", "bucket_mismatches",
                 "slot_mismatches", "null_fields")


def _flag(c: Column) -> Column:
    return c.cast("long")


class SparkSource:
    """The tables read and reduced by Spark; ``reader`` says how they were read (``delta``: delta-spark,
    ``parquet``: the files delta-rs lists, when the session has no Delta classes)."""
    engine = "spark"

    def __init__(self, spark: SparkSession, tables: str) -> None:
        self.spark = spark
        self.tables = tables
        self.present: dict[str, set[str]] = {}
        self.reader = "delta" if delta_classes_available(spark) else "parquet"
        self._snap = snapshot(tables)
        self._opened: dict[str, tuple[object, DataFrame] | None] = {}
        self._messages: DataFrame | None = None

    # -- reading -------------------------------------------------------------------------------

    def _open(self, name: str) -> tuple[object, DataFrame] | None:
        """The table's delta-rs handle (its log: version, schema metadata) and its rows as a Spark
        DataFrame at that version; None when it is not there."""
        if name not in self._opened:
            dt = self._snap.open(name) if self._snap.run is not None else open_table(self.tables, name)
            if dt is None:
                self._opened[name] = None
            else:
                version = dt.version()
                df = read_spark(self.spark, self.tables, name, SCHEMAS[name],
                                version=version if self.reader == "delta" else None,
                                files=None if self.reader == "delta" else dt.file_uris())
                self._opened[name] = (dt, df)
        return self._opened[name]

    def _arrow_schema(self, name: str, dt: object, df: DataFrame) -> pa.Schema:
        """The table's columns and types: Spark's schema of the Delta table, or (Parquet fallback, which
        reads with the published schema) the one in the Delta log."""
        if self.reader == "delta":
            return arrow_schema_of_spark(df.schema, timezone="UTC")   # an instant, as published (tz UTC)
        return arrow_dataset(self.tables, name, dt).schema

    def frame(self, name: str, columns: list[str]) -> DataFrame:
        """``columns`` of the table in the published schema's types (missing: nulls; no table: no rows)."""
        wanted = spark_schema(pa.schema([SCHEMAS[name].field(c) for c in columns]))
        opened = self._open(name)
        if opened is None:
            return self.spark.createDataFrame([], wanted)
        df = opened[1]
        have = {f.name: f.dataType for f in df.schema.fields}
        cols = []
        for f in wanted.fields:
            if f.name in self.present.get(name, set()) and f.name in have:
                c = F.col(f.name)
                cols.append((c if have[f.name] == f.dataType else c.try_cast(f.dataType)).alias(f.name))
            else:
                cols.append(F.lit(None).cast(f.dataType).alias(f.name))
        return df.select(cols)

    # -- the figure source ---------------------------------------------------------------------

    def schema_rows(self) -> list[dict]:
        rows = []
        for name in TABLE_NAMES:
            opened = self._open(name)
            if opened is None:
                rows.append(missing_table_row(name))
                continue
            dt, df = opened
            got = self._arrow_schema(name, dt, df)
            self.present[name] = set(got.names)
            expected = SCHEMAS[name]
            missing = [f.name for f in expected if f.name not in self.present[name]]
            wrong = [f"{f.name} ({got.field(f.name).type}, expected {f.type})" for f in expected
                     if f.name in self.present[name] and not same_type(got.field(f.name).type, f.type)]
            rows.append(schema_row(name, df.count(), missing, wrong))
        return rows

    def small_table(self, name: str, columns: list[str]) -> pa.Table:
        """A table of one row per run or segment, collected."""
        table = self.frame(name, columns).toArrow()
        return table.cast(pa.schema([SCHEMAS[name].field(c) for c in columns]))

    def anomalies(self) -> dict[tuple[str | None, str], int]:
        rows = self.frame("anomalies", ["segment", "kind"]).groupBy("segment", "kind").count().collect()
        return {(r["segment"], r["kind"] if r["kind"] is not None else NULL_KIND): int(r["count"]) for r in rows}

    def audit_claims(self) -> dict[tuple[str, str | None], int]:
        audit = self.frame("expiry_audit", ["kind", "name", "segment", "messages"]).where(
            F.col("kind").isin(list(AUDITED_KINDS)))
        # a segment row by its segment: a DLedger data file's row is named dledger-<selfId>/data/<segment>
        audit = audit.withColumn("name", F.when(F.col("kind") == "segment", F.col("segment")).otherwise(F.col("name")))
        rows = audit.groupBy("kind", "name").agg(F.sum(F.coalesce("messages", F.lit(0))).alias("n")).collect()
        return {(r["kind"], r["name"]): int(r["n"] or 0) for r in rows}

    def messages(self, seg_ids: Ids, known_runs: set, entry_header: int, config: BrokerConfig) -> dict:
        df = self.frame("messages", MESSAGE_COLUMNS)
        body = F.coalesce("body_size", F.lit(0))
        ssize = F.coalesce("structural_size", F.lit(0))
        size = F.coalesce("size", F.lit(0))
        seg_base = F.coalesce(F.when(F.col("segment").rlike("^[0-9]+$"), F.col("segment").try_cast("long")),
                              F.lit(-1))
        rows = df.select(
            "segment", "topic", "queue_id", "consume_queue_offset", "lmq_queues", "lmq_queue_ids",
            "lmq_consume_queue_offsets",
            F.coalesce("position", F.lit(-1)).alias("pos"), F.coalesce("commitlog_offset", F.lit(-1)).alias("off"),
            ssize.alias("ssize"), F.coalesce(F.unix_micros("store_timestamp"), F.lit(NO_TS)).alias("ts"),
            F.coalesce("indexed", F.lit(False)).alias("indexed"),
            _flag(~F.coalesce(F.col("dispatch").startswith(NOT_DISPATCHED), F.lit(False))).alias("dispatched"),
            _flag(F.coalesce(F.col("dispatch").startswith(SIZE_MISMATCH_DISPATCH), F.lit(False))).alias("size_bad"),
            _flag(~F.coalesce("body_crc_ok", F.lit(True)) & (body > 0)).alias("crc_bad"),
            sum((_flag(F.col(c).isNull()) for c in MESSAGE_REQUIRED), F.lit(0).cast("long")).alias("nulls"),
            _flag((size <= 0) | (ssize <= 0) | (body < 0) | (body > ssize)).alias("bad_sizes"),
            _flag(F.coalesce("consume_queue", F.lit(False)) != F.col("consume_queue_offset").isNotNull())
            .alias("cq_flag"),
            (F.coalesce("consume_queue", F.lit(False)) & F.col("consume_queue_offset").isNotNull()).alias("in_cq"),
            _flag(_unknown_run(known_runs)).alias("unknown_run"), seg_base.alias("base"))
        rows = rows.persist()
        self._messages = rows
        # offsets: duplicates anywhere in the table, then each segment in position order
        by_offset = Window.partitionBy("off").orderBy(F.col("segment").asc_nulls_first(), "pos")
        in_segment = Window.partitionBy("segment").orderBy("pos", "off")
        whole_segment = Window.partitionBy("segment")
        header = F.when(F.lit(entry_header > 0) & (F.min("pos").over(whole_segment) == entry_header),
                        F.lit(entry_header)).otherwise(F.lit(0))
        prev_off, prev_pos = F.lag("off").over(in_segment), F.lag("pos").over(in_segment)
        prev_size = F.lag("ssize").over(in_segment)
        ordered = rows.select(
            "*", _flag(F.row_number().over(by_offset) > 1).alias("duplicate"),
            _flag(F.coalesce(prev_off >= F.col("off"), F.lit(False))).alias("not_increasing_row"),
            _flag(F.coalesce(F.col("pos") != prev_pos + prev_size + header, F.lit(False))).alias("gap"))
        agg = ordered.groupBy("segment").agg(
            F.count(F.lit(1)).alias("rows"), F.sum("dispatched").alias("dispatched"),
            F.sum("crc_bad").alias("crc_bad"), F.sum("size_bad").alias("size_bad"), F.sum("nulls").alias("nulls"),
            F.sum("bad_sizes").alias("bad_sizes"), F.sum("cq_flag").alias("cq_flag"),
            F.sum("duplicate").alias("duplicates"), F.sum(_flag(F.col("off") != F.col("base") + F.col("pos")))
            .alias("not_base"), F.sum("not_increasing_row").alias("not_increasing"), F.sum("gap").alias("gaps"),
            F.max(F.col("pos") + F.col("ssize")).alias("ends"),
            F.min(F.when(F.col("ts") != NO_TS, F.col("ts"))).alias("ts_min"),
            F.max(F.when(F.col("ts") != NO_TS, F.col("ts"))).alias("ts_max"),
            F.sum("unknown_run").alias("unknown_run")).collect()
        for r in agg:
            seg_ids.get(r["segment"])
        k = len(seg_ids)
        msg: dict = {key: np.zeros(k, np.int64) for key in _PER_SEGMENT}
        msg["ts_min"], msg["ts_max"] = np.full(k, NO_TS, np.int64), np.full(k, NO_TS, np.int64)
        for r in agg:
            i = seg_ids.get(r["segment"])
            for key in _PER_SEGMENT:
                msg[key][i] = int(r[key] or 0)
            for key in ("ts_min", "ts_max"):
                msg[key][i] = NO_TS if r[key] is None else int(r[key])
        msg["n"] = int(sum(r["rows"] for r in agg))
        msg["unknown_run_rows"] = int(sum(r["unknown_run"] or 0 for r in agg))
        msg["queues"], msg["cq_file_counts"] = self._queues(rows, int(config.cq_file_size))
        return msg

    def _queues(self, rows: DataFrame, cq_file_size: int):
        """Per queue its units, first and last unit number and repeated numbers; per consume queue file
        its units (the records' own and their light queue units)."""
        units = rows.where("in_cq").select("topic", F.coalesce("queue_id", F.lit(-1)).alias("qid"),
                                           F.col("consume_queue_offset").alias("cqoff"))
        queues = units.groupBy("topic", "qid").agg(
            F.count(F.lit(1)).alias("units"), F.min("cqoff").alias("first"), F.max("cqoff").alias("last"),
            F.count_distinct("cqoff").alias("distinct")).collect()
        queue_rows = [{"topic": r["topic"], "queue_id": int(r["qid"]), "units": int(r["units"]),
                       "first_offset": int(r["first"]), "last_offset": int(r["last"]),
                       "span": int(r["last"]) - int(r["first"]) + 1,
                       "duplicate_units": int(r["units"]) - int(r["distinct"])} for r in queues]
        same_length = (F.size("lmq_queues") == F.size("lmq_queue_ids")) & \
                      (F.size("lmq_queues") == F.size("lmq_consume_queue_offsets"))
        light = (rows.where(F.col("lmq_queues").isNotNull() & same_length)
                 .select(F.explode(F.arrays_zip("lmq_queues", "lmq_queue_ids", "lmq_consume_queue_offsets"))
                         .alias("u"))
                 .select(F.col("u.lmq_queues").alias("topic"), F.coalesce("u.lmq_queue_ids", F.lit(-1)).alias("qid"),
                         F.col("u.lmq_consume_queue_offsets").alias("cqoff"))
                 .where(F.col("cqoff").isNotNull()))
        per_file = max(cq_file_size // CQ_UNIT_SIZE, 1)
        files = (units.unionByName(light)
                 .groupBy("topic", "qid", F.floor(F.col("cqoff") / per_file).alias("fno")).count().collect())
        counts = {consume_queue_file_path(r["topic"], int(r["qid"]), int(r["fno"]) * cq_file_size): int(r["count"])
                  for r in files}
        return consume_queue_frame(queue_rows), counts

    def keys(self, seg_ids: Ids, known_runs: set, msg: dict, config: BrokerConfig) -> dict:
        df = self.frame("message_keys", KEY_COLUMNS)
        opened = self._open("message_keys")
        buckets = table_key_buckets(opened[0]) if opened is not None and \
            "key_bucket" in self.present.get("message_keys", set()) else None
        capacity = entry_capacity(config)
        assert self._messages is not None
        # each key row against its messages row (segment and commitlog offset)
        targets = self._messages.groupBy("segment", "off").agg(
            F.min("ts").alias("m_ts"), F.bool_and("indexed").alias("m_indexed"))
        h = F.coalesce("key_hash", F.lit(-1).cast("long"))
        keys = df.select("*", F.coalesce("commitlog_offset", F.lit(-1)).alias("k_off"),
                         F.coalesce(F.unix_micros("store_timestamp"), F.lit(NO_TS)).alias("k_ts"))
        joined = keys.join(targets, keys["segment"].eqNullSafe(targets["segment"]) & (keys["k_off"] == targets["off"]),
                           "left").drop(targets["segment"])
        hit = F.col("m_ts").isNotNull()
        entry = F.coalesce("index_entry", F.lit(-1))
        in_range = (entry >= 1) & (entry <= capacity)
        bucket_bad = (F.coalesce("key_bucket", F.lit(-1)) != F.pmod(h, F.lit(buckets))) if buckets else F.lit(False)
        flags = joined.select(
            "segment", "index_file", F.coalesce("index_file_no", F.lit(-1)).alias("file_no"), entry.alias("entry"),
            _flag(in_range).alias("in_range"),
            _flag(~hit).alias("orphan_keys"), _flag(hit & ~F.col("m_indexed")).alias("keys_of_unindexed_messages"),
            _flag(hit & (F.col("m_ts") != F.col("k_ts"))).alias("time_mismatches"),
            _flag(bucket_bad).alias("bucket_mismatches"),
            _flag(F.coalesce("slot", F.lit(-1)) != F.pmod(h, F.lit(int(config.maxHashSlotNum))))
            .alias("slot_mismatches"),
            sum((_flag(F.col(c).isNull()) for c in KEY_REQUIRED), F.lit(0).cast("long")).alias("null_fields"),
            _flag(_unknown_run(known_runs)).alias("unknown_run")).persist()
        per_seg = flags.groupBy("segment").agg(F.count(F.lit(1)).alias("rows"),
                                                F.sum("unknown_run").alias("unknown_run")).collect()
        files = flags.groupBy("file_no").agg(
            F.count(F.lit(1)).alias("key_rows"), F.min("entry").alias("first_entry"),
            F.max("entry").alias("last_entry"),
            (F.count_distinct("index_file") + F.max(_flag(F.col("index_file").isNull()))).alias("names"),
            F.min("index_file").alias("index_file"), F.sum("in_range").alias("in_range"),
            F.count_distinct(F.when(F.col("in_range") == 1, F.col("entry"))).alias("distinct_in_range"),
            *[F.sum(c).alias(c) for c in _KEY_COUNTERS]).collect()
        flags.unpersist()
        self._messages.unpersist()
        for r in per_seg:
            seg_ids.get(r["segment"])
        counts = np.zeros(len(seg_ids), np.int64)
        for r in per_seg:
            counts[seg_ids.get(r["segment"])] = int(r["rows"])
        per_file = [{"index_file_no": int(r["file_no"]), "index_file": r["index_file"], "names": int(r["names"]),
                     "key_rows": int(r["key_rows"]), "first_entry": int(r["first_entry"]),
                     "last_entry": int(r["last_entry"]),
                     "duplicate_entries": int(r["in_range"]) - int(r["distinct_in_range"]),
                     "entries_out_of_range": int(r["key_rows"]) - int(r["in_range"]),
                     **{c: int(r[c]) for c in _KEY_COUNTERS}} for r in files]
        return {"n": int(counts.sum()), "per_segment": counts,
                "unknown_run_rows": int(sum(r["unknown_run"] or 0 for r in per_seg)), **index_file_frame(per_file)}


def _unknown_run(known_runs: set) -> Column:
    """A row whose run_id is null or not a run of ``runs`` (as :func:`.table_reading.unknown_run_rows`)."""
    known = sorted(r for r in known_runs if r is not None)
    run = F.col("run_id")
    return run.isNull() | ~run.isin(known) if known else F.lit(True)


def spark_frame(spark: SparkSession, frame: pd.DataFrame) -> DataFrame:
    """A frame of figures as the Spark DataFrame GX's Spark data source validates: the same rows in the
    same order, in one partition, typed by column (text, flag, or a 64-bit count) so that an empty
    frame or a column of nulls keeps its type."""
    rows = [tuple(_plain(v) for v in r) for r in frame.itertuples(index=False, name=None)]
    types = []
    for i, c in enumerate(frame.columns):
        v = next((r[i] for r in rows if r[i] is not None), None)
        types.append(pa.bool_() if isinstance(v, bool) else pa.string() if isinstance(v, str)
                     else pa.int64() if v is not None or c not in _TEXT else pa.string())
    table = pa.Table.from_pylist([dict(zip(frame.columns, r)) for r in rows],
                                 schema=pa.schema(list(zip(frame.columns, types))))
    return spark.createDataFrame(table).coalesce(1)   # Arrow in, no Python worker when GX queries it


def _plain(v: object) -> object:
    """A Python value of a cell (numpy scalars as Python ones, pandas' missing values as None)."""
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return None
    return v.item() if isinstance(v, np.generic) else v

"""Schemas of the Delta tables, their descriptions, and the key buckets of ``message_keys``.

Tables under one root (one line per column in the README):

* ``messages``       one row per commitlog record on the reput's path, partitioned by ``segment``;
                     each file in commitlog offset order (statistics on ``commitlog_offset`` and
                     ``store_timestamp`` prune offset and time lookups).
* ``message_keys``   one row per index entry, partitioned by ``segment`` and ``key_bucket`` (=
                     ``key_hash % B``, B in the column's metadata ``rocketmq.keyBuckets``, 1 per 32 MiB
                     of segment up to 32), each file sorted by ``key_hash``: a lookup of ``topic#key``
                     reads one bucket of each segment.
* ``segments``       one row per commitlog segment seen, live or deleted (rewritten each run).
* ``expiry_audit``   the next cleanups as of the run (or of ``audit --as-of``), plus the inventory of
                     consume queue and index files the audit needs (rewritten each run).
* ``anomalies``      what the scan found wrong (rewritten each run: earlier rows of unscanned
                     segments are kept).
* ``runs``           one row per run (appended, last: the marker of a complete publication; its
                     ``versions`` records the version of each table the run left, which readers
                     open: :mod:`pipelines.tables.runs`).
"""
from __future__ import annotations

import pyarrow as pa

from store_format.config import BrokerConfig
from store_format.layout import TRANSACTION_COMMIT, TRANSACTION_NOT, TRANSACTION_PREPARED, TRANSACTION_ROLLBACK

__all__ = ["TABLE_NAMES", "MESSAGES_SCHEMA", "MESSAGE_KEYS_SCHEMA", "SEGMENTS_SCHEMA", "EXPIRY_AUDIT_SCHEMA",
           "ANOMALIES_SCHEMA", "RUNS_SCHEMA", "DESCRIPTIONS", "FILE_ORDER", "KEY_BUCKETS_PROPERTY", "MAX_KEY_BUCKETS",
           "default_key_buckets", "message_keys_schema", "key_buckets_of", "TX_NAMES", "TS", "MIN_TS_MS",
           "MAX_TS_MS", "latest_run", "table_key_buckets"]

KEY_BUCKETS_PROPERTY = "rocketmq.keyBuckets"   # metadata of message_keys.key_bucket: key_bucket = key_hash % this
MAX_KEY_BUCKETS = 32
BUCKET_TARGET_BYTES = 32 << 20                 # about this much commitlog per bucket file
TS = pa.timestamp("us", tz="UTC")
TABLE_NAMES = ("messages", "message_keys", "segments", "expiry_audit", "anomalies", "runs")

MESSAGES_SCHEMA = pa.schema([
    ("segment", pa.string()),                  # partition: name (20-digit base offset) of the record's segment
    ("commitlog_offset", pa.int64()),          # stored physicalOffset
    ("position", pa.int64()),                  # position of the record in its segment
    ("size", pa.int32()),                      # declared totalSize
    ("structural_size", pa.int32()),           # length the record's own fields give
    ("topic", pa.string()),
    ("queue_id", pa.int32()),
    ("queue_offset", pa.int64()),              # stored queueOffset
    ("consume_queue_offset", pa.int64()),      # index of its unit in the consume queue (null: no unit written)
    ("sys_flag", pa.int32()),
    ("transaction_type", pa.string()),         # none | prepared | commit | rollback
    ("born_timestamp", TS),
    ("born_host", pa.string()),
    ("store_timestamp", TS),
    ("store_host", pa.string()),
    ("flag", pa.int32()),
    ("tags", pa.string()),
    ("tags_code", pa.int64()),                 # as written to the consume queue (with ext: to the ext unit)
    ("keys", pa.list_(pa.string())),           # KEYS tokens
    ("uniq_key", pa.string()),                 # UNIQ_KEY: the client's msgId
    ("msg_id", pa.string()),                   # offset msgId: store host + commitlog offset
    ("reconsume_times", pa.int32()),
    ("prepared_transaction_offset", pa.int64()),
    ("body_size", pa.int32()),
    ("body_crc", pa.int32()),                  # stored bodyCRC
    ("body_crc_ok", pa.bool_()),               # UtilAll.crc32(body) equals it
    ("properties", pa.map_(pa.string(), pa.string())),
    ("real_topic", pa.string()),               # REAL_TOPIC (delayed messages)
    ("real_queue_id", pa.int32()),             # REAL_QID
    ("retry_topic", pa.string()),              # RETRY_TOPIC (retried messages)
    ("delay_level", pa.int32()),               # DELAY
    ("lmq_queues", pa.list_(pa.string())),     # light message queues it was also dispatched to
    ("lmq_queue_ids", pa.list_(pa.int32())),   # their queue ids (0 for %LMQ% names with enableLmq)
    ("lmq_consume_queue_offsets", pa.list_(pa.int64())),   # index of its unit in each (null: not written)
    ("consume_queue", pa.bool_()),             # a consume queue unit was written for it
    ("indexed", pa.bool_()),                   # its keys went into the index
    ("dispatch", pa.string()),                 # what the reput did with it, and why
    ("body", pa.binary()),                     # only with --with-body
    ("run_id", pa.string()),                   # run that wrote the row
])

MESSAGE_KEYS_SCHEMA = pa.schema([
    ("segment", pa.string()),                  # partition: segment of the record
    ("key_bucket", pa.int32()),                # partition: key_hash % the table's rocketmq.keyBuckets
    ("topic", pa.string()),
    ("key", pa.string()),
    ("kind", pa.string()),                     # uniq_key | key | tag (5.4+ brokers index tags)
    ("key_hash", pa.int32()),                  # IndexFile hash of topic#key
    ("slot", pa.int32()),                      # key_hash % maxHashSlotNum
    ("commitlog_offset", pa.int64()),
    ("store_timestamp", TS),
    ("index_file", pa.string()),               # index file name (UTC yyyyMMddHHmmssSSS, as the rebuild names it)
    ("index_file_no", pa.int64()),             # index file number in creation order (0: first)
    ("index_entry", pa.int32()),               # entry number in the file (1-based)
    ("run_id", pa.string()),
])

SEGMENTS_SCHEMA = pa.schema([
    ("segment", pa.string()),
    ("base_offset", pa.int64()),
    ("file_size", pa.int64()),
    ("bytes_written", pa.int64()),             # where its data ends (the file size when it ends in a blank record)
    ("first_store_time", TS),
    ("last_store_time", TS),
    ("records", pa.int64()),
    ("dispatched", pa.int64()),
    ("index_keys", pa.int64()),
    ("topics", pa.list_(pa.string())),
    ("file_mtime", TS),                        # file modification time (what the broker's cleanup uses)
    ("status", pa.string()),                   # live | deleted
    ("first_run", pa.string()),
    ("last_run", pa.string()),                 # last run that saw it in the store
    ("deleted_run", pa.string()),              # run that found it gone
])

EXPIRY_AUDIT_SCHEMA = pa.schema([
    ("as_of", TS),
    ("run_id", pa.string()),
    ("kind", pa.string()),                     # segment | consume_queue_file | consume_queue_ext_file | index_file
    #                                            | unconsumed | rocksdb_queue
    ("name", pa.string()),                     # segment / topic/queueId/file / consumequeue_ext/topic/queueId/file
    #                                            / index file name
    ("segment", pa.string()),                  # the commitlog segment whose deletion takes it
    ("topic", pa.string()),
    ("queue_id", pa.int32()),
    ("consumer_group", pa.string()),
    ("min_offset", pa.int64()),                # commitlog offsets covered (first / last unit or entry)
    ("max_offset", pa.int64()),
    ("is_last", pa.bool_()),                   # last segment / last file of its queue / last index file: never deleted
    ("reference_time", TS),                    # segments: the time compared with fileReservedTime
    ("time_source", pa.string()),              # mtime | last_store_time
    ("expires_at", TS),
    ("deleted_at", TS),                        # cleanup round that deletes it (null: not foreseen)
    ("at_next_cleanup", pa.bool_()),
    ("reason", pa.string()),
    ("messages", pa.int64()),
    ("bytes", pa.int64()),
])

ANOMALIES_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("segment", pa.string()),
    ("commitlog_offset", pa.int64()),
    ("position", pa.int64()),
    ("length", pa.int64()),                    # bytes affected (ranges), else null
    ("kind", pa.string()),                     # store_format.anomalies.AnomalyKind (bad_magic, size_mismatch, ...)
    ("topic", pa.string()),
    ("queue_id", pa.int32()),
    ("expected", pa.int64()),
    ("found", pa.int64()),
    ("detail", pa.string()),
])

RUNS_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("command", pa.string()),                  # rebuild | tables
    ("mode", pa.string()),                     # full | incremental
    ("started_at", TS),
    ("finished_at", TS),
    ("store", pa.string()),
    ("tables", pa.string()),
    ("config", pa.string()),                   # broker settings used (JSON)
    ("versions", pa.string()),                 # software versions, the writer, and "tables": each table's
                                               # Delta version after the run (JSON)
    ("with_body", pa.bool_()),
    ("segments_in_store", pa.int32()),
    ("segments_scanned", pa.int32()),
    ("segments_deleted", pa.int32()),
    ("resume_segment", pa.string()),           # first segment scanned
    ("watermark_segment", pa.string()),        # segment where the walk ended: the next run starts there
    ("watermark_offset", pa.int64()),          # commitlog offset where the walk ended
    ("records_scanned", pa.int64()),
    ("messages_written", pa.int64()),
    ("keys_written", pa.int64()),
    ("anomalies", pa.int64()),
    ("timings", pa.string()),                  # seconds per stage (JSON)
])

# the order of the rows in each file of the two big tables (what the tasks write; delta-spark sorts so):
# offset order for messages, key_hash then put order (index file and entry) for message_keys
FILE_ORDER = {"messages": ("commitlog_offset",), "message_keys": ("key_hash", "index_file_no", "index_entry")}

DESCRIPTIONS = {
    "messages": "one row per commitlog record on the reput's path; partitioned by segment",
    "message_keys": "one row per index entry; partitioned by segment and key_bucket (key_hash % B, B in its metadata)",
    "segments": "one row per commitlog segment seen (live or deleted)",
    "expiry_audit": "what the broker's next cleanups delete, and the file inventory behind it",
    "anomalies": "corrupt ranges, size mismatches, bad magic codes, CRC mismatches, queue offset gaps",
    "runs": "one row per run: inputs, versions, counts, timings, watermark",
}

TX_NAMES = {TRANSACTION_NOT: "none", TRANSACTION_PREPARED: "prepared", TRANSACTION_COMMIT: "commit",
            TRANSACTION_ROLLBACK: "rollback"}
MIN_TS_MS = -62_135_596_800_000   # 0001-01-01: Spark's timestamp range
MAX_TS_MS = 253_402_300_799_999   # 9999-12-31


def default_key_buckets(config: BrokerConfig) -> int:
    """Buckets per segment of a new ``message_keys`` table: one per 32 MiB of segment, 1 to 32 (a
    lookup opens one bucket file per segment; files stay a sensible size)."""
    return int(max(1, min(MAX_KEY_BUCKETS, config.mappedFileSizeCommitLog // BUCKET_TARGET_BYTES)))


def message_keys_schema(buckets: int) -> pa.Schema:
    """:data:`MESSAGE_KEYS_SCHEMA` with the bucket count in the ``key_bucket`` column's metadata
    (Delta keeps column metadata; delta-rs refuses table properties it does not know)."""
    i = MESSAGE_KEYS_SCHEMA.get_field_index("key_bucket")
    field = MESSAGE_KEYS_SCHEMA.field(i).with_metadata({KEY_BUCKETS_PROPERTY: str(buckets),
                                                        "comment": f"key_hash % {buckets}"})
    return MESSAGE_KEYS_SCHEMA.set(i, field)


def key_buckets_of(tables: str) -> int | None:
    """The bucket count of an existing ``message_keys`` table (None: no table)."""
    from ..delta import open_table
    dt = open_table(tables, "message_keys")
    return None if dt is None else table_key_buckets(dt)


def table_key_buckets(dt) -> int:
    """The bucket count of a ``message_keys`` table (``deltalake.DeltaTable``) from its schema."""
    field = next(f for f in dt.schema().fields if f.name == "key_bucket")
    return int((field.metadata or {}).get(KEY_BUCKETS_PROPERTY) or MAX_KEY_BUCKETS)


def latest_run(tables: str) -> dict | None:
    """The newest row of ``runs``: the latest complete run (None without one); see
    :mod:`pipelines.tables.runs` for the versions of the tables it published."""
    from .runs import snapshot
    return snapshot(tables).run

"""The expectation suites of ``validate``: nine suites, one per frame of figures, 48 expectations.

Each :class:`Check` is one Great Expectations expectation (its class name and arguments), the rule
it states in words and the damage it catches; each :class:`Suite` names the frame of
:class:`pipelines.validate.figures.Figures` it runs on and the columns that name a row (shown with
every unexpected value).  The rules mirror what the broker relies on when it loads the files
rebuilt from these tables: segments named by their base offset and ``mappedFileSizeCommitLog`` long
(``MappedFileQueue.load``), consume queue offsets contiguous per queue
(``ConsumeQueue.putMessagePositionInfo``), index entries numbered ``1 .. maxIndexNum - 1`` with
``slot = keyHash % maxHashSlotNum`` (``IndexFile.putKey``), index file names increasing
(``IndexService.load`` sorts by name).
"""
from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["Check", "Suite", "SUITES", "SUITE_PREFIX"]

SUITE_PREFIX = "rocketmq_tables."


@dataclasses.dataclass(frozen=True)
class Check:
    """One expectation: its GX class name and arguments, the rule in words, and the damage it catches."""
    expectation: str
    kwargs: dict
    rule: str
    catches: str


@dataclasses.dataclass(frozen=True)
class Suite:
    """One suite: the frame it runs on, the columns naming a row, what a row is, its checks."""
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
                             "structural_size; after a DLedger entry header in a DLedger data file)",
              "messages rows missing from the middle of a segment"),
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

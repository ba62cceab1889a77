"""The 5.5 RocksDB message index (``indexRocksDBEnable``): its key/value set.

Mirrors rocketmq-store 5.5.1 (``IndexRocksDBStore``, ``IndexRocksDBRecord``, ``MessageRocksDBStorage``;
``MixAll.dealTimeToHourStamps`` of rocketmq-common):

* ``MessageRocksDBStorage`` keeps one database in ``<storePathRootDir>/rocksdbstore`` with the column
  families ``default`` (this index), ``timer`` and ``trans``, all with RocksDB's bytewise comparator.
* ``CommitLogDispatcherBuildIndex`` hands every dispatched record to ``IndexRocksDBStore.buildIndex``
  when ``messageIndexEnable`` and ``indexRocksDBEnable`` are both true (5.5.1 keeps ``indexFileWriteEnable``
  for the index files only).  ``buildIndex`` skips rolled back transaction records, and every record
  whose topic or ``UNIQ_KEY`` property is empty or whose store timestamp is not above 0; for the others it
  queues, in this order, one record per distinct non-empty token of ``KEYS`` split on single spaces
  (type ``K``), one for a non-empty ``TAGS`` value taken whole (type ``T``), and one for the unique key
  (type ``U``).  No topic is left out (system topics too).
* ``IndexRocksDBRecord.getKeyBytes`` (all integers big-endian, strings UTF-8)::

      K: hour i64 · "@" topic "@K@" key "@" uniqKey "@" · commitlogOffset i64
      T: hour i64 · "@" topic "@T@" tags "@" uniqKey "@" · commitlogOffset i64
      U: hour i64 · "@" topic "@U@" uniqKey "@" · commitlogOffset i64

  where ``hour`` is the store timestamp floored to the hour (``dealTimeToHourStamps``: ``ts / 3600000 *
  3600000``, UTC); a key whose hour is 0 (a store timestamp below one hour) is not written.  The value
  is the store timestamp, i64.  Equal tokens of ``KEYS`` give one key; records never share a key (the
  offset ends it).
* ``writeRecordsForIndex`` also writes ``lastOffsetPy`` and ``lastStoreTimeStamp`` (8 bytes each) when
  the batch it writes (up to 1000 queued records, cut by timing) ends with a ``U`` record: the offset
  and store time of that record's message, each only when above the value stored.  Which batches end
  so depends on the broker's timing; the last batch a broker writes before it stops ends with the last
  indexed message's ``U`` record, so a broker that dispatched the whole commitlog holds that message's
  offset, and its store time unless an earlier batch end had a larger one (a clock that went back):
  :func:`index_rocksdb_entries` writes the last indexed message's offset and store time, as a broker
  that put everything in one batch does.
* Cleanup (``IndexRocksDBStore.deleteExpiredIndex``, run by the consume queue cleanup when the
  commitlog's min offset has risen) range-deletes the 168 hours up to the hour of the earliest commitlog
  file's creation time (a file system attribute) less one hour.  The entries of the records still in
  the commitlog are therefore kept unless that attribute is later than their store time by over an hour
  (on Linux, JDKs before 22 report the last modification time as creation time); the entries of
  deleted files that the broker still holds are not derivable from what is left.  The rebuild writes
  the entries of every record the reput dispatches.

The ``trans`` family (``TransMessageRocksDBStore``) is not derivable: the half messages' records carry a
check count that ``TransactionalMessageRocksDBService`` (rocketmq-broker) raises, and deletes records
by, on its wall-clock driven checks.
"""
from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .javahash import java_utf8_decode
from .message_rocksdb import LAST_OFFSET_PY
from .walkresult import (
    F_INDEX,
    F_TEXT_BAD,
    K_KIND,
    K_LEN,
    K_START,
    KEY_KIND_KEY,
    KEY_KIND_TAG,
    KEY_KIND_UNIQ,
    R_FLAGS,
    R_KEY_COUNT,
    R_KEY_FIRST,
    R_PHYS,
    R_STATUS,
    R_STORE_TS,
    R_TOPIC_LEN,
    R_TOPIC_START,
    STATUS_DISPATCHED,
    WalkResult,
)

__all__ = ["INDEX_FAMILY", "TRANS_FAMILY", "TIMER_FAMILY", "LAST_OFFSET_PY", "LAST_STORE_TIMESTAMP",
           "MILLIS_PER_HOUR", "IndexEntries", "index_rocksdb_entries", "rocksdb_index_key", "last_records",
           "bytewise_unique", "entries_from", "entry_offset", "restart_last_records"]

INDEX_FAMILY = "default"                        # RocksDB.DEFAULT_COLUMN_FAMILY
TIMER_FAMILY = "timer"                          # MessageRocksDBStorage.TIMER_COLUMN_FAMILY
TRANS_FAMILY = "trans"                          # MessageRocksDBStorage.TRANS_COLUMN_FAMILY
LAST_STORE_TIMESTAMP = b"lastStoreTimeStamp"    # MessageRocksDBStorage.LAST_STORE_TIMESTAMP
MILLIS_PER_HOUR = 3_600_000                     # MixAll.MILLS_FOR_HOUR
_SPLIT = 64                                     # IndexRocksDBRecord.KEY_SPLIT "@"
_TYPE = {KEY_KIND_KEY: 75, KEY_KIND_TAG: 84, KEY_KIND_UNIQ: 85}   # MessageConst.INDEX_KEY/TAG/UNIQUE_TYPE


def rocksdb_index_key(hour: int, topic: bytes, kind: bytes, key: bytes | None, uniq: bytes, offset: int) -> bytes:
    """``IndexRocksDBRecord.getKeyBytes`` (``kind`` b"K", b"T" or b"U"; ``key`` None for "U")."""
    middle = b"@" + topic + b"@" + kind + b"@" + (key + b"@" if key is not None else b"") + uniq + b"@"
    return hour.to_bytes(8, "big", signed=True) + middle + offset.to_bytes(8, "big", signed=True)


@numba.njit(cache=True, nogil=True)
def _indexed(rec, key, i):
    """Whether ``buildIndex`` queues anything for record ``i`` (module docstring), its text valid UTF-8."""
    r = rec[i]
    if r[R_STATUS] != STATUS_DISPATCHED or (r[R_FLAGS] & F_INDEX) == 0 or (r[R_FLAGS] & F_TEXT_BAD) != 0:
        return False
    if r[R_KEY_COUNT] == 0 or r[R_TOPIC_LEN] == 0 or r[R_STORE_TS] < MILLIS_PER_HOUR:
        return False
    first = r[R_KEY_FIRST]
    return key[first, K_KIND] == KEY_KIND_UNIQ and key[first, K_LEN] > 0


@numba.njit(cache=True, nogil=True)
def _copy(out, at, text, start, length):
    for j in range(length):
        out[at + j] = text[start + j]
    return at + length


@numba.njit(cache=True, nogil=True)
def _put_i64(out, at, v):
    for j in range(8):
        out[at + j] = (v >> (56 - 8 * j)) & 0xFF
    return at + 8


@numba.njit(cache=True, nogil=True)
def _entries(text, origin, rec, key, kind_code, fill, data, offsets, ts_out, off_out):
    """Two passes: with ``fill`` False count the entries and bytes, else write them (and ``offsets``).
    Keys of one record equal to an earlier key of the same record (a token repeated in ``KEYS``) are
    written again: the database keeps one."""
    n = 0
    pos = 0
    for i in range(rec.shape[0]):
        if not _indexed(rec, key, i):
            continue
        r = rec[i]
        first = r[R_KEY_FIRST]
        ts = r[R_STORE_TS]
        hour = ts // MILLIS_PER_HOUR * MILLIS_PER_HOUR
        t0 = r[R_TOPIC_START] - origin
        tl = r[R_TOPIC_LEN]
        u0 = key[first, K_START] - origin
        ul = key[first, K_LEN]
        for k in range(first, first + r[R_KEY_COUNT]):
            kind = key[k, K_KIND]
            size = 8 + 1 + tl + 3 + ul + 1 + 8
            if kind != KEY_KIND_UNIQ:
                size += key[k, K_LEN] + 1
            if fill:
                at = pos
                offsets[n + 1] = pos + size
                at = _put_i64(data, at, hour)
                data[at] = _SPLIT
                at = _copy(data, at + 1, text, t0, tl)
                data[at] = _SPLIT
                data[at + 1] = kind_code[kind]
                data[at + 2] = _SPLIT
                at += 3
                if kind != KEY_KIND_UNIQ:
                    at = _copy(data, at, text, key[k, K_START] - origin, key[k, K_LEN])
                    data[at] = _SPLIT
                    at += 1
                at = _copy(data, at, text, u0, ul)
                data[at] = _SPLIT
                at = _put_i64(data, at + 1, r[R_PHYS])
                ts_out[n] = ts
                off_out[n] = r[R_PHYS]
            pos += size
            n += 1
    return n, pos


class IndexEntries:
    """A walk's index entries: ``keys`` (Arrow binary), and per entry the record's ``store_timestamp``
    (the value) and ``commitlog_offset`` (numpy int64)."""

    def __init__(self, keys: pa.Array, store_timestamp: np.ndarray, commitlog_offset: np.ndarray) -> None:
        self.keys, self.store_timestamp, self.commitlog_offset = keys, store_timestamp, commitlog_offset

    def __len__(self) -> int:
        return len(self.keys)


def index_rocksdb_entries(res: WalkResult) -> IndexEntries:
    """The entries ``IndexRocksDBStore.buildIndex`` queues for the dispatched records of a walk (rules in
    the module docstring), built from the walk's index key rows (:func:`store_format.dispatch.
    put_index_keys` with 5.5's tag keys: unique key first, then the ``KEYS`` tokens, then the tags).
    Records whose topic, tags or keys are not valid UTF-8 go through the JDK's decoding, one by one."""
    text = np.asarray(res.text, dtype=np.uint8)
    kind_code = np.zeros(max(_TYPE) + 1, dtype=np.uint8)
    for kind, code in _TYPE.items():
        kind_code[kind] = code
    none8, none64 = np.zeros(0, np.uint8), np.zeros(0, np.int64)
    n, size = _entries(text, res.text_origin, res.rec, res.key, kind_code, False, none8, none64, none64, none64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    data = np.empty(size, dtype=np.uint8)
    ts = np.empty(n, dtype=np.int64)
    off = np.empty(n, dtype=np.int64)
    _entries(text, res.text_origin, res.rec, res.key, kind_code, True, data, offsets, ts, off)
    keys = pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    slow_keys, slow_ts, slow_off = _malformed_entries(res, text)
    if slow_keys:
        keys = pa.concat_arrays([keys, pa.array(slow_keys, pa.large_binary())])
        ts = np.concatenate([ts, np.array(slow_ts, dtype=np.int64)])
        off = np.concatenate([off, np.array(slow_off, dtype=np.int64)])
    return IndexEntries(keys, ts, off)


def bytewise_unique(entries: IndexEntries) -> IndexEntries:
    """The entries in the order of the index family's comparator, each key once: the order a table file of
    that family holds its keys in.  ``createIndexCFOptions`` sets no comparator, so the family has
    ``ColumnFamilyOptions``' default, RocksDB's ``BytewiseComparator``: unsigned bytes, a key before every
    longer key it begins.  Equal keys come from one record only (a token repeated in ``KEYS``, with one
    value), and the database keeps one of them."""
    n = len(entries)
    if n == 0:
        return entries
    order = pc.sort_indices(entries.keys)      # Arrow orders binary values by unsigned bytes, then by length
    keys = entries.keys.take(order)
    order_np = order.to_numpy()
    ts, off = entries.store_timestamp[order_np], entries.commitlog_offset[order_np]
    if n > 1:
        same = pc.equal(keys.slice(1), keys.slice(0, n - 1)).to_numpy(zero_copy_only=False)
        if same.any():
            keep = np.concatenate([np.ones(1, dtype=bool), ~same])
            keys, ts, off = keys.filter(pa.array(keep)), ts[keep], off[keep]
    return IndexEntries(keys, ts, off)


def entries_from(entries: IndexEntries, offset: int) -> IndexEntries:
    """The entries a restart adds to the store's database: ``IndexRocksDBStore.buildIndex`` returns at once for
    a record whose commitlog offset lies below the database's ``lastOffsetPy`` (``offset``; the record at it is
    queued again, under the same keys and values).  The dispatch goes in commitlog order and the value only
    grows to offsets already dispatched, so the value the restart found decides for every record: a second
    pass over records (the start's reput after the recovery's dispatch) puts the same keys again or nothing."""
    if offset <= 0:
        return entries
    keep = entries.commitlog_offset >= offset
    if keep.all():
        return entries
    return IndexEntries(entries.keys.filter(pa.array(keep)), entries.store_timestamp[keep],
                        entries.commitlog_offset[keep])


def entry_offset(key: bytes) -> int:
    """The commitlog offset an index key ends with (``IndexRocksDBRecord.getKeyBytes``); -1 for a key too short
    to be an index key."""
    return int.from_bytes(key[-8:], "big", signed=True) if len(key) >= 17 else -1


def restart_last_records(stored_offset: int, stored_ts: int, offset: int,
                         store_timestamp: int) -> list[tuple[bytes, bytes]]:
    """``writeRecordsForIndex`` over a database holding ``lastOffsetPy`` ``stored_offset`` and
    ``lastStoreTimeStamp`` ``stored_ts``: the restart's last batch ends with the ``U`` entry of its last indexed
    record (at ``offset``), and each key is written only when that record's value is above the stored one."""
    return [r for r, above in zip(last_records(offset, store_timestamp),
                                  (offset > stored_offset, store_timestamp > stored_ts)) if above]


def _malformed_entries(res: WalkResult, text: np.ndarray) -> tuple[list[bytes], list[int], list[int]]:
    """The entries of indexed records whose text is not valid UTF-8: each string decoded as the JDK
    does (U+FFFD for malformed input) and encoded again (``String.getBytes(UTF_8)``).  Rare: per record."""
    rec, key = res.rec, res.key
    bad = np.flatnonzero((rec[:, R_STATUS] == STATUS_DISPATCHED) & ((rec[:, R_FLAGS] & F_INDEX) != 0)
                         & ((rec[:, R_FLAGS] & F_TEXT_BAD) != 0) & (rec[:, R_KEY_COUNT] > 0))

    def string(start: int, length: int) -> bytes:
        s = start - res.text_origin
        return java_utf8_decode(text[s:s + length]).encode("utf-8", "replace")

    keys: list[bytes] = []
    ts: list[int] = []
    off: list[int] = []
    for i in bad.tolist():
        r = rec[i]
        first, count = int(r[R_KEY_FIRST]), int(r[R_KEY_COUNT])
        topic = string(int(r[R_TOPIC_START]), int(r[R_TOPIC_LEN]))
        store_ts, phys = int(r[R_STORE_TS]), int(r[R_PHYS])
        if key[first, K_KIND] != KEY_KIND_UNIQ or not topic or store_ts < MILLIS_PER_HOUR:
            continue
        uniq = string(int(key[first, K_START]), int(key[first, K_LEN]))
        if not uniq:
            continue
        hour = store_ts // MILLIS_PER_HOUR * MILLIS_PER_HOUR
        for k in range(first, first + count):
            kind = int(key[k, K_KIND])
            value = None if kind == KEY_KIND_UNIQ else string(int(key[k, K_START]), int(key[k, K_LEN]))
            keys.append(rocksdb_index_key(hour, topic, bytes([_TYPE[kind]]), value, uniq, phys))
            ts.append(store_ts)
            off.append(phys)
    return keys, ts, off


def last_records(offset: int, store_timestamp: int) -> list[tuple[bytes, bytes]]:
    """``lastOffsetPy`` and ``lastStoreTimeStamp`` for the last indexed record at ``offset`` (module
    docstring)."""
    return [(LAST_OFFSET_PY, offset.to_bytes(8, "big", signed=True)),
            (LAST_STORE_TIMESTAMP, store_timestamp.to_bytes(8, "big", signed=True))]

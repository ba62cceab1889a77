"""The RocksDB consume queue of 5.x (``storeType=defaultRocksDB``): its key/value set.

With that setting the broker keeps no ``consumequeue/<topic>/<queueId>/`` files: ``consumequeue/``
is one RocksDB database (``ConsumeQueueRocksDBStorage``, RocketMQ 5.3.3 and 5.5.1) with two column
families.  All integers are big-endian; ``CTRL_1`` is the byte 0x01 (``AbstractRocksDBStorage``).

The ``default`` family (``RocksDBConsumeQueueTable``), one entry per dispatched unit::

    key    topicLength i32 · 0x01 · topic (UTF-8) · 0x01 · queueId i32 · 0x01 · queueOffset i64
    value  commitlogOffset i64 · size i32 · tagsCode i64 · storeTimestamp i64          (28 bytes)

The ``offset`` family (``RocksDBConsumeQueueOffsetTable``)::

    key    topicLength i32 · 0x01 · topic · 0x01 · "max" or "min" · 0x01 · queueId i32
    value  commitlogOffset i64 · queueOffset i64                                        (16 bytes)

and the dispatch checkpoint, the key of topic ``CHECKPOINT_TOPIC`` (``TopicValidator.
RMQ_SYS_ROCKSDB_OFFSET_TOPIC``), "max", queue 0, whose 8-byte value is the largest
``commitlogOffset + size`` of the last batch written.

How the reput fills it (``RocksDBConsumeQueueStore.putMessagePositionInfoWrapper`` hands each unit to
``RocksGroupCommitService``, which writes up to 256 at a time with ``putMessagePosition0``), and so
:func:`rocksdb_cq_entries`:

* every unit is put under its key: no append position, no blank units, none of the file queue's
  "repeated unit" skips; a later unit with the same key replaces the earlier one;
* a queue's "max" entry is its last dispatched unit (commitlog offset, queue offset), whatever the
  queue offset (``updateTempTopicQueueMaxOffset`` keeps the batch's last unit per queue);
* "min" entries are written only when a reader asks for a queue's minimum
  (``RocksDBConsumeQueueOffsetTable.getMinCqOffset`` → ``correctMinCqOffset``), never by the reput;
* light queues (``enableLmq`` alone, ``dispatchLMQ``: not ``enableMultiDispatch``, and a name holding '/' or an
  empty name too, unlike the file queues; :func:`light_unit_config`, :func:`light_rows`): the record's unit again
  under each ``%LMQ%`` queue (queue id 0; another name, "" too, under the record's queue id) at its listed offset,
  after the record's own unit;
* a rebuild from an empty database reads but never dispatches the record at commitlog offset 0: an empty
  database answers 0 (not -1) for its dispatched position (``RocksDBConsumeQueueOffsetTable.
  getMaxPhyOffset``), and 5.5.1's ``CommitLog.recoverNormally`` dispatches only records whose offset
  is above it.

Batch boundaries are not known offline; they matter only for units with equal keys (one queue
offset stored twice in one queue), where the broker keeps the earliest of one batch but the latest
across batches.  :func:`rocksdb_cq_entries` keeps the latest and counts such keys.
"""
from __future__ import annotations

import dataclasses
import struct
from collections.abc import Sequence

import numpy as np

from .config import BrokerConfig
from .walkresult import (
    L_REC,
    L_STATUS,
    LMQ_BAD_OFFSET,
    LMQ_OK,
    LMQ_SKIPPED_SEPARATOR,
    LMQ_SKIPPED_SEPARATOR_BAD_OFFSET,
    R_PHYS,
    R_STATUS,
    STATUS_BELOW_ROCKSDB_START,
    STATUS_DISPATCHED,
    WalkResult,
)

__all__ = ["CHECKPOINT_TOPIC", "CQ_KEY_TAIL", "OFFSET_FAMILY", "OFFSET_KEY_TAIL", "RocksCqEntries", "cq_key",
           "cq_value", "offset_key", "offset_value", "checkpoint_key", "rocksdb_cq_entries", "split_key",
           "undispatch_first_record", "unindex_first_record", "light_rows", "light_unit_config",
           "light_units_unmodelled"]

CTRL_1 = b"\x01"                   # AbstractRocksDBStorage.CTRL_1
OFFSET_FAMILY = "offset"           # ConsumeQueueRocksDBStorage.OFFSET_COLUMN_FAMILY
CHECKPOINT_TOPIC = "CHECKPOINT_TOPIC"   # TopicValidator.RMQ_SYS_ROCKSDB_OFFSET_TOPIC
MAX = b"max"                       # RocksDBConsumeQueueOffsetTable.MAX_BYTES
MIN = b"min"                       # RocksDBConsumeQueueOffsetTable.MIN_BYTES

_TOPIC_LEN = struct.Struct(">i")
CQ_KEY_TAIL = struct.Struct(">cicq")       # 0x01, queueId, 0x01, queueOffset
OFFSET_KEY_TAIL = struct.Struct(">c3sci")  # 0x01, "max"/"min", 0x01, queueId
# value of a default-family entry (RocksDBConsumeQueueTable.CQ_UNIT_SIZE = 28)
CQ_VALUE = np.dtype([("offset", ">i8"), ("size", ">i4"), ("tags_code", ">i8"), ("store_timestamp", ">i8")])
OFFSET_VALUE = struct.Struct(">qq")        # commitlogOffset, queueOffset
CHECKPOINT_VALUE = struct.Struct(">q")     # the dispatched position


def topic_bytes(topic: str) -> bytes:
    """``String.getBytes(UTF_8)``: an unpaired surrogate becomes ``?``."""
    return topic.encode("utf-8", errors="replace")


def _topic_prefix(topic: str) -> bytes:
    t = topic_bytes(topic)
    return _TOPIC_LEN.pack(len(t)) + CTRL_1 + t


def split_key(key: bytes) -> tuple[str, bytes] | None:
    """A key's topic (``topicLength i32 · 0x01 · topic``) and what follows it (``CQ_KEY_TAIL`` or
    ``OFFSET_KEY_TAIL`` in the broker's keys); None when the key is not of that shape."""
    if len(key) < 5:
        return None
    n = _TOPIC_LEN.unpack_from(key)[0]
    if n < 0 or len(key) < 5 + n:
        return None
    return key[5:5 + n].decode("utf-8", "replace"), key[5 + n:]


def cq_key(topic: str, queue_id: int, queue_offset: int) -> bytes:
    """Key of a unit (``RocksDBConsumeQueueTable.buildCQKeyByteBuffer``)."""
    return _topic_prefix(topic) + CQ_KEY_TAIL.pack(CTRL_1, queue_id, CTRL_1, queue_offset)


def cq_value(offset: int, size: int, tags_code: int, store_timestamp: int) -> bytes:
    """Value of a unit (``RocksDBConsumeQueueTable.buildCQValueByteBuffer``)."""
    return np.array([(offset, size, tags_code, store_timestamp)], dtype=CQ_VALUE).tobytes()


def offset_key(topic: str, queue_id: int, *, maximum: bool = True) -> bytes:
    """Key of a queue's max (or min) entry (``RocksDBConsumeQueueOffsetTable.buildOffsetKeyByteBuffer``)."""
    return _topic_prefix(topic) + OFFSET_KEY_TAIL.pack(CTRL_1, MAX if maximum else MIN, CTRL_1, queue_id)


def offset_value(offset: int, queue_offset: int) -> bytes:
    return OFFSET_VALUE.pack(offset, queue_offset)


def checkpoint_key() -> bytes:
    """``RocksDBConsumeQueueOffsetTable.MAX_PHYSICAL_OFFSET_CHECKPOINT_KEY``."""
    return offset_key(CHECKPOINT_TOPIC, 0)


@dataclasses.dataclass
class RocksCqEntries:
    """The two families' entries, each sorted by key (bytewise, the families' comparator)."""
    default: list[tuple[bytes, bytes]]
    offset: list[tuple[bytes, bytes]]
    # units whose key a later unit took again with another value (a record read twice, as a restart's reput walks
    # records a crash walk dispatched, puts the same value again: not counted)
    replaced: int


def rocksdb_cq_entries(queues: Sequence[tuple[str, int]], queue: np.ndarray, queue_offset: np.ndarray,
                       offset: np.ndarray, size: np.ndarray, tags_code: np.ndarray,
                       store_timestamp: np.ndarray) -> RocksCqEntries:
    """The key/value set the reput leaves after dispatching these units into an empty database
    (rules in the module docstring; ``RocksDBConsumeQueueStore.putMessagePosition0``); the units of
    the record at commitlog offset 0 are not among them (:func:`undispatch_first_record`).

    Args:
        queues: (topic, queue id) of each queue number.
        queue: each unit's queue number, units in dispatch order (the same columns follow).
    """
    queue, queue_offset, offset = np.asarray(queue), np.asarray(queue_offset), np.asarray(offset)
    size, tags_code, store_timestamp = np.asarray(size), np.asarray(tags_code), np.asarray(store_timestamp)
    values = np.empty(len(queue), dtype=CQ_VALUE)
    values["offset"], values["size"] = offset, size
    values["tags_code"], values["store_timestamp"] = tags_code, store_timestamp
    raw = values.tobytes()
    prefixes = [_topic_prefix(t) for t, _ in queues]
    default: dict[bytes, bytes] = {}
    last: dict[int, int] = {}
    replaced = 0
    for i, (q, qo) in enumerate(zip(queue.tolist(), queue_offset.tolist())):
        key, value = prefixes[q] + CQ_KEY_TAIL.pack(CTRL_1, queues[q][1], CTRL_1, qo), raw[28 * i:28 * i + 28]
        replaced += default.get(key, value) != value
        default[key] = value
        last[q] = i
    entries_offset = [(offset_key(queues[q][0], queues[q][1]), offset_value(int(offset[i]), int(queue_offset[i])))
                      for q, i in last.items()]
    if len(offset):
        end = int((offset.astype(np.int64) + size.astype(np.int64)).max())
        entries_offset.append((checkpoint_key(), CHECKPOINT_VALUE.pack(end)))
    return RocksCqEntries(default=sorted(default.items()), offset=sorted(entries_offset),
                          replaced=replaced)


def light_unit_config(config: BrokerConfig) -> BrokerConfig:
    """``config`` as the commitlog walk reads light (multi-dispatch) units for a RocksDB consume queue, 5.3.3 and
    5.5.1 alike, the running broker's reput and a recovery's walk: ``RocksDBConsumeQueueStore.dispatchLMQ`` (from
    ``putMessagePosition0``) puts them under ``enableLmq`` alone (``DispatchRequest.containsLMQ``: a topic
    ``MixAll.topicAllowsLMQ`` lets through, ``INNER_MULTI_DISPATCH`` and ``INNER_MULTI_QUEUE_OFFSET`` both not
    blank), not ``enableMultiDispatch`` as the file queue's ``MultiDispatchUtils.checkMultiDispatchQueue``."""
    if config.enableMultiDispatch == config.enableLmq:
        return config
    return dataclasses.replace(config, enableMultiDispatch=config.enableLmq)


def light_rows(res: WalkResult) -> WalkResult:
    """A walk's result (under :func:`light_unit_config`) with its light units as ``dispatchLMQ`` puts them, so read by
    :func:`store_format.dispatch.queue_units`:

    * a queue name holding the path separator is put like any other (5.x file queues skip it:
      ``LMQ_SKIPPED_SEPARATOR``, its offset parsed all the same, or ``LMQ_SKIPPED_SEPARATOR_BAD_OFFSET``, one
      ``Long.parseLong`` refuses, which ``dispatchLMQ`` parses and fails on: ``LMQ_BAD_OFFSET`` here);
    * an empty name (``LMQ_EMPTY_NAME``: ``",%LMQ%a"``, ``String.split`` keeps a leading or inner empty part) is put
      as the file queues put it (:func:`store_format.walkresult.light_units_put`): it is no ``MixAll.isLmq`` name, so
      its unit keeps the record's queue id, under topic "" (a key of topic length 0), and the offset family gets that
      queue's max like any other's."""
    status = res.lmq[:, L_STATUS]
    slashed = status == LMQ_SKIPPED_SEPARATOR
    slashed_bad = status == LMQ_SKIPPED_SEPARATOR_BAD_OFFSET
    if not (slashed.any() or slashed_bad.any()):
        return res
    lmq = res.lmq.copy()
    lmq[slashed, L_STATUS] = LMQ_OK
    lmq[slashed_bad, L_STATUS] = LMQ_BAD_OFFSET
    return dataclasses.replace(res, lmq=lmq)


def light_units_unmodelled(res: WalkResult) -> str:
    """Why the light units of a walk's records (:func:`light_rows`) are not derivable from the store (empty: they
    are): a queue offset ``Long.parseLong`` refuses makes ``dispatchLMQ`` throw, so ``putMessagePosition0`` fails
    the whole group commit batch, ``putMessagePosition`` retries it 30 times and throws, and
    ``RocksGroupCommitService.groupCommit`` retries it until the store stops: no unit of that batch or of any later
    one is written, and which earlier records' units share that batch is what ``doCommit`` drained from its buffer
    since its last commit (up to 256 requests), the timing of the broker's threads (5.3.3 and 5.5.1)."""
    if (res.lmq[:, L_STATUS] == LMQ_BAD_OFFSET).any():
        return ("a multi-dispatch request there names a queue offset that is no long: the broker's RocksDB group "
                "commit fails on it (RocksDBConsumeQueueStore.dispatchLMQ), and which earlier records' units it "
                "loses with it is its threads' timing, not in the store")
    return ""


def undispatch_first_record(res: WalkResult) -> WalkResult:
    """A walk's result with the record at commitlog offset 0, when it holds it, read but not
    dispatched (status :data:`STATUS_BELOW_ROCKSDB_START`), for a rebuild into an empty RocksDB
    consume queue: that record goes neither to the consume queue nor to the index (module docstring:
    the empty database answers 0 as its dispatched position, and only records above it are
    dispatched).  It stays among the records read; its index keys and light queue units leave the
    result (``res.key`` holds the keys of dispatched records only, in walk order)."""
    return _first_record_without(res, dispatch=False)


def unindex_first_record(res: WalkResult) -> WalkResult:
    """A walk's result with the record at commitlog offset 0 dispatched to its queues but without its
    index keys: a 5.x restart with ``recheckReputOffsetFromCq=true`` after a normal recovery
    (``DefaultMessageStore.doRecheckReputOffsetFromCq``, 5.3.3 and 5.5.1): the second reput starts at
    offset 0 and dispatches that record, which ``IndexService.buildIndex`` then skips as it lies below
    the last index file's ``endPhyOffset`` (:class:`store_format.restart_reput.SecondReput`)."""
    return _first_record_without(res, dispatch=True)


def _first_record_without(res: WalkResult, *, dispatch: bool) -> WalkResult:
    hit = np.flatnonzero(res.rec[:, R_PHYS] == 0)
    if not len(hit) or res.rec[hit[0], R_STATUS] != STATUS_DISPATCHED:
        return res
    i = int(hit[0])
    first = np.zeros(len(res.rec), dtype=bool)
    first[i] = True
    out = res.without_keys(first)
    if dispatch:
        return out
    rec = out.rec.copy() if out is res else out.rec
    rec[i, R_STATUS] = STATUS_BELOW_ROCKSDB_START
    return dataclasses.replace(out, rec=rec, lmq=res.lmq[res.lmq[:, L_REC] != i])

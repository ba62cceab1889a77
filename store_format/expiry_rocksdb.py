"""The cleanup of a 5.x RocksDB consume queue (``storeType=defaultRocksDB``) once segments go: which units
the compaction removes, and what each queue's minimum offset is afterwards.

Read in rocketmq-store 5.3.3 and 5.5.1:

* ``RocksDBConsumeQueueStore.RocksDBCleanConsumeQueueService.deleteExpiredFiles`` (every
  ``cleanResourceInterval``): when ``CommitLog.getMinOffset`` rose since its last look and the disk is full
  or it is ``deleteWhen``'s hour (``isTimeToDelete``), ``cleanExpired(minOffset)`` → a manual compaction of
  the ``default`` family (``AbstractRocksDBStorage.manualCompaction``, on its own one-thread pool).  The
  compaction filter removes every entry whose value is at least 28 bytes and whose first long, the unit's
  commitlog offset, is below the minimum: 5.5.1's ``CqCompactionFilter`` (``native/cq_compaction_filter.cpp``,
  given the minimum by ``CqCompactionFilterJni.setMinPhyOffset``), 5.3.3's ``RemoveConsumeQueueCompactionFilter``
  of rocketmq-rocksdb (``ConsumeQueueCompactionFilterFactory``: the store's ``getMinPhyOffset`` when the
  compaction starts).  Units of light queues are entries of the same family and go the same way; the
  ``offset`` family ("max"/"min" entries, the checkpoint) is not filtered.
* ``getMinOffsetInQueue`` → ``RocksDBConsumeQueueOffsetTable.getMinCqOffset``: a "min" entry (or the heap's)
  at or above the new minimum answers as it is; otherwise ``correctMinCqOffset``: the queue's max entry
  below the minimum gives max + 1, else ``RocksDBConsumeQueueTable.binarySearchInCQ`` the smallest queue
  offset whose unit is at or above the minimum (a removed unit reads as missing, which the search treats
  as below: the answer is the same before and after the compaction), written as the new "min" entry.
  With a queue's units in commitlog order, that is one past the last unit below the minimum.
"""
from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["RocksQueueCleanup", "rocksdb_queue_cleanup"]


@dataclasses.dataclass
class RocksQueueCleanup:
    """Per queue (``queue`` indexes the caller's queue list) with units below the new minimum: how many
    the compaction removes, the commitlog offsets of the first and last of them, and the queue's minimum
    offset afterwards (``getMinOffsetInQueue``)."""
    queue: np.ndarray
    units_removed: np.ndarray
    first_offset: np.ndarray
    last_offset: np.ndarray
    min_offset_after: np.ndarray


def rocksdb_queue_cleanup(queue: np.ndarray, queue_offset: np.ndarray, commitlog_offset: np.ndarray,
                          new_min: int) -> RocksQueueCleanup:
    """The units (one row each: queue number, queue offset, commitlog offset) that the compaction after the
    minimum commitlog offset rose to ``new_min`` removes, grouped by queue (module docstring)."""
    queue = np.asarray(queue, np.int64)
    below = np.asarray(commitlog_offset, np.int64) < new_min
    q, cq, off = queue[below], np.asarray(queue_offset, np.int64)[below], np.asarray(commitlog_offset, np.int64)[below]
    if not len(q):
        empty = np.zeros(0, np.int64)
        return RocksQueueCleanup(empty, empty, empty, empty, empty)
    order = np.lexsort((off, q))
    q, cq, off = q[order], cq[order], off[order]
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    ends = np.r_[starts[1:], len(q)]
    return RocksQueueCleanup(q[starts], ends - starts, off[starts], off[ends - 1],
                             np.maximum.reduceat(cq, starts) + 1)

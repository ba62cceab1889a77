"""Batch consume queues (5.x ``queue.type=BatchCQ`` topics): the units the reput writes into
``batchconsumequeue/<topic>/<queueId>/<20-digit>``.

Mirrors ``BatchConsumeQueue.putMessagePositionInfoWrapper`` / ``putBatchMessagePositionInfo`` (5.3.3,
5.5.1; ``StorePathConfigHelper.getStorePathBatchConsumeQueue``), with the dispatch request fields of
``CommitLog.checkMessageAndReturnSize`` / ``DispatchRequest.setBatchSizeIfNeeded``.

Unit (46 bytes, big-endian, no header in the file)::

    commitlogOffset  i64   the record's start
    size             i32   the record's total size
    tagsCode         i64   as for an ordinary consume queue unit
    storeTime        i64   the record's store timestamp
    msgBaseOffset    i64   queue offset of the batch's first message (INNER_BASE, else the record's)
    batchSize        i16   messages in the record (INNER_NUM, else 1)
    compactedOffset  i32   always -1 (INVALID_POS)
    reserved         i32   always 0

Rules (the per-queue state is two numbers: the start of the last unit written, and the write
position):

* a unit whose base offset or batch size is negative is not written (the wrapper only warns);
* a unit whose commitlog offset is ``<=`` the start of the queue's last unit is skipped ("build
  batch consume queue repeatedly": the start, not the end as in ``ConsumeQueue``);
* any other unit is appended at the write position.  The first file is always
  ``00000000000000000000`` (``getLastMappedFile(getMaxOffset())`` of an empty queue), no blank units,
  and the next file (``+ mapperFileSizeBatchConsumeQueue``) is created only when a unit is appended
  after the last file is full: a queue never has an empty trailing file.
"""
from __future__ import annotations

import numba
import numpy as np

from .javatext import parse_java_long
from .layout import segment_name

__all__ = ["BCQ_UNIT_DTYPE", "BCQ_UNIT_SIZE", "BCQ_DIR", "DEFAULT_BCQ_FILE_SIZE", "B_MAX_PHYS", "B_WRITE_POS",
           "new_batch_states", "inner_batch_fields", "assign_batch_positions", "build_bcq_file", "bcq_file_name",
           "bcq_file_size_error"]

BCQ_DIR = "batchconsumequeue"

# BatchConsumeQueue.CQ_STORE_UNIT_SIZE and its field offsets (MSG_TAG_OFFSET_INDEX = 12, ...)
BCQ_UNIT_DTYPE = np.dtype([
    ("commitlogOffset", ">i8"),
    ("size", ">i4"),
    ("tagsCode", ">i8"),
    ("storeTime", ">i8"),
    ("msgBaseOffset", ">i8"),
    ("batchSize", ">i2"),
    ("compactedOffset", ">i4"),
    ("reserved", ">i4"),
])
BCQ_UNIT_SIZE = BCQ_UNIT_DTYPE.itemsize   # 46
INVALID_POS = -1                          # compactedOffset of every unit BatchConsumeQueue writes
DEFAULT_BCQ_FILE_SIZE = 300_000 * BCQ_UNIT_SIZE   # MessageStoreConfig.mapperFileSizeBatchConsumeQueue

SHORT_MIN, SHORT_MAX = -32768, 32767
LONG_MIN, LONG_MAX = -9223372036854775808, 9223372036854775807

# columns of a batch queue's append state (a row of ``new_batch_states``)
B_MAX_PHYS = 0    # maxMsgPhyOffsetInCommitLog: start of the last unit written (-1: none)
B_WRITE_POS = 1   # write position: logical byte offset of the next unit


def new_batch_states(n: int) -> np.ndarray:
    """Append-state rows (columns ``B_*``) of ``n`` batch queues that have no unit yet."""
    states = np.zeros((n, 2), dtype=np.int64)
    states[:, B_MAX_PHYS] = -1
    return states


def bcq_file_size_error(file_size: int) -> str | None:
    """Why ``mapperFileSizeBatchConsumeQueue`` cannot hold a batch queue, or None.  The getter does
    not round to whole units: with a size that is not a multiple of 46 the last file never becomes
    full (``MappedFile.appendMessage`` refuses a unit that does not fit, ``getLastMappedFile`` creates
    the next file only after a full one), so the broker's dispatch stalls and gives up."""
    if file_size <= 0:
        return f"mapperFileSizeBatchConsumeQueue={file_size} must be a positive multiple of {BCQ_UNIT_SIZE}"
    if file_size % BCQ_UNIT_SIZE:
        return (f"mapperFileSizeBatchConsumeQueue={file_size} is not a multiple of the {BCQ_UNIT_SIZE}-byte batch "
                "consume queue unit: the broker fills no file completely and stops building such queues "
                "(BatchConsumeQueue.putBatchMessagePositionInfo gives up); use a multiple of "
                f"{BCQ_UNIT_SIZE} (default {DEFAULT_BCQ_FILE_SIZE})")
    return None


@numba.njit(cache=True, nogil=True)
def _inner_fields(text, origin, base_span, num_span, queue_offset, base, batch):
    for i in range(queue_offset.shape[0]):
        base[i] = queue_offset[i]
        batch[i] = 1
        bs, bl = base_span[i, 0], base_span[i, 1]
        ns, nl = num_span[i, 0], num_span[i, 1]
        if bs < 0 or ns < 0:
            continue
        v, ok_v = parse_java_long(text, bs - origin, bs - origin + bl, LONG_MIN, LONG_MAX)
        n, ok_n = parse_java_long(text, ns - origin, ns - origin + nl, SHORT_MIN, SHORT_MAX)
        if ok_v and ok_n:   # the walk stopped at a record where they do not parse (5.x)
            base[i] = v
            batch[i] = n


def inner_batch_fields(text: np.ndarray, origin: int, base_span: np.ndarray, num_span: np.ndarray,
                       queue_offset: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``msgBaseOffset`` and ``batchSize`` of dispatch requests (``checkMessageAndReturnSize`` then
    ``DispatchRequest.setBatchSizeIfNeeded``): with both ``INNER_BASE`` and ``INNER_NUM`` present,
    ``Long.parseLong(INNER_BASE)`` and ``Short.parseShort(INNER_NUM)``; else the record's queue offset
    and 1.

    Args:
        text, origin: the walk's string bytes (``text[pos - origin]``).
        base_span, num_span: per request, (position, length) of the INNER_BASE / INNER_NUM value, -1
            when absent (the walk's ``prop_span`` columns).
        queue_offset: the record's queue offset.
    """
    n = len(queue_offset)
    base = np.empty(n, dtype=np.int64)
    batch = np.empty(n, dtype=np.int16)
    _inner_fields(np.asarray(text, dtype=np.uint8), np.int64(origin), np.ascontiguousarray(base_span, dtype=np.int64),
                  np.ascontiguousarray(num_span, dtype=np.int64), np.ascontiguousarray(queue_offset, dtype=np.int64),
                  base, batch)
    return base, batch


@numba.njit(cache=True, nogil=True)
def _assign(queue_idx, offset, base, batch, states, positions):
    for i in range(queue_idx.shape[0]):
        q = queue_idx[i]
        if base[i] < 0 or batch[i] < 0:
            positions[i] = -1   # putMessagePositionInfoWrapper: warned, not written
            continue
        if offset[i] <= states[q, B_MAX_PHYS]:
            positions[i] = -1   # repeated
            continue
        positions[i] = states[q, B_WRITE_POS]
        states[q, B_WRITE_POS] += BCQ_UNIT_SIZE
        states[q, B_MAX_PHYS] = offset[i]


def assign_batch_positions(queue_idx: np.ndarray, offset: np.ndarray, base: np.ndarray, batch: np.ndarray,
                           states: np.ndarray) -> np.ndarray:
    """Logical byte position of each unit in its batch queue, -1 where the broker writes none
    (``BatchConsumeQueue.putMessagePositionInfoWrapper`` / ``putBatchMessagePositionInfo``).

    Args:
        queue_idx: queue number of each unit (row of ``states``), units in dispatch order.
        offset: the unit's commitlog offset; base, batch: its base offset and batch size.
        states: int64 matrix ``[n_queues, 2]`` of ``B_*`` columns (:func:`new_batch_states`),
            updated in place.
    """
    positions = np.empty(len(queue_idx), dtype=np.int64)
    _assign(np.ascontiguousarray(queue_idx, dtype=np.int64), np.ascontiguousarray(offset, dtype=np.int64),
            np.ascontiguousarray(base, dtype=np.int64), np.ascontiguousarray(batch, dtype=np.int64), states, positions)
    return positions


def build_bcq_file(file_start: int, file_size: int, positions: np.ndarray, offset: np.ndarray, size: np.ndarray,
                   tags_code: np.ndarray, store_ts: np.ndarray, base: np.ndarray, batch: np.ndarray, *,
                   trim: bool = False) -> np.ndarray:
    """One batch consume queue file (uint8 array): the units at their positions, zeros after them.

    Args:
        trim: return only the bytes up to the last unit (a sparse writer adds the zeros).
    """
    slot = (np.asarray(positions, dtype=np.int64) - file_start) // BCQ_UNIT_SIZE
    n_units = (int(slot.max()) + 1 if len(slot) else 0) if trim else file_size // BCQ_UNIT_SIZE
    units = np.zeros(n_units, dtype=BCQ_UNIT_DTYPE)
    units["commitlogOffset"][slot] = offset
    units["size"][slot] = size
    units["tagsCode"][slot] = tags_code
    units["storeTime"][slot] = store_ts
    units["msgBaseOffset"][slot] = base
    units["batchSize"][slot] = batch
    units["compactedOffset"][slot] = INVALID_POS
    return units.view(np.uint8)


def bcq_file_name(file_start: int) -> str:
    """File name of a batch consume queue file: its 20-digit start offset in the queue's byte space."""
    return segment_name(file_start)

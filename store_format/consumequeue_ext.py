"""Consume queue ext files (``enableConsumeQueueExt=true``), as the reput writes them.

Mirrors ``ConsumeQueueExt.put`` / ``fullFillToEnd`` / ``decorate`` and the call in
``ConsumeQueue.putMessagePositionInfoWrapper`` (4.9.8; 5.3.3 and 5.5.1 are the same), with no filter
bitmap (``enableCalcFilterBitMap=false``, a ``BrokerConfig`` setting: the bitmap comes from the
consumers' live filters, which a store does not hold).

Ext unit  [ConsumeQueueExt.CqExtUnit.write]::

    size          i16   20 (18 fixed bytes + 2 for bitMapSize)
    tagsCode      i64   the record's tagsCode (tag hash, or a delayed message's delivery time)
    msgStoreTime  i64   the record's storeTimestamp
    bitMapSize    i16   0 (no bitmap bytes follow)

* One ext unit is put each time ``putMessagePositionInfoWrapper`` runs for a record's own queue,
  *before* ``putMessagePositionInfo``: a unit the consume queue then skips as written "repeatedly"
  still gets its ext unit.  Light queue (multi-dispatch / LMQ) units are written with
  ``putMessagePositionInfo`` directly: no ext unit, and their tagsCode is the record's.
* The consume queue unit stores the ext address instead of the tagsCode: the unit's real offset in
  the queue's ext space plus ``Long.MIN_VALUE`` (``decorate``).
* ``consumequeue_ext/<topic>/<queueId>/<20-digit start offset>``, files of exactly
  ``mappedFileSizeConsumeQueueExt`` bytes (default 48 MiB, not rounded), the first at offset 0
  whatever the queue's first queue offset.  A unit goes at the file's write position when it leaves
  at least ``END_BLANK_DATA_LENGTH`` (4) bytes after it; otherwise a short -1 marks the write
  position and the unit goes at the start of the next file.  So a file holds
  ``(fileSize - 4) // 20`` units, and its end marker exists only once a next file does.
"""
from __future__ import annotations

import numpy as np

from .layout import segment_name

__all__ = ["EXT_UNIT_DTYPE", "EXT_UNIT_SIZE", "END_BLANK_DATA_LENGTH", "LONG_MIN", "MIN_EXT_FILE_SIZE",
           "ext_units_per_file", "ext_real_offsets", "ext_addresses", "ext_ordinals", "build_ext_file", "ext_file_name"]

EXT_UNIT_DTYPE = np.dtype([
    ("size", ">i2"),           # whole unit, bitmap included
    ("tagsCode", ">i8"),
    ("msgStoreTime", ">i8"),
    ("bitMapSize", ">i2"),     # 0: no bitmap
])
EXT_UNIT_SIZE = EXT_UNIT_DTYPE.itemsize   # 20: CqExtUnit.MIN_EXT_UNIT_SIZE
END_BLANK_DATA_LENGTH = 4                 # ConsumeQueueExt.END_BLANK_DATA_LENGTH: kept free at a file's end
END_MARK = np.array([-1], dtype=">i2")    # fullFillToEnd: a short -1 at the write position
# below this no unit fits a file: ConsumeQueueExt.put gives up (tagsCode kept) after creating files
MIN_EXT_FILE_SIZE = EXT_UNIT_SIZE + END_BLANK_DATA_LENGTH
LONG_MIN = -(1 << 63)                     # Long.MIN_VALUE: ConsumeQueueExt.decorate adds it to a real offset


def ext_units_per_file(file_size: int) -> int:
    """Units an ext file takes before its end marker [ConsumeQueueExt.put: ``size > blankSize``]."""
    return (file_size - END_BLANK_DATA_LENGTH) // EXT_UNIT_SIZE


def ext_real_offsets(ordinal: np.ndarray, file_size: int) -> np.ndarray:
    """Real offset (file start + position) in the queue's ext space of the queue's ``ordinal``-th ext
    unit (0-based, counting every unit put, including those the consume queue then skipped)."""
    per_file = ext_units_per_file(file_size)
    ordinal = np.asarray(ordinal, dtype=np.int64)
    return ordinal // per_file * file_size + ordinal % per_file * EXT_UNIT_SIZE


def ext_addresses(ordinal: np.ndarray, file_size: int) -> np.ndarray:
    """What the consume queue unit stores instead of the tagsCode [ConsumeQueueExt.decorate]: the
    real offset plus ``Long.MIN_VALUE``."""
    return ext_real_offsets(ordinal, file_size) + LONG_MIN


def build_ext_file(file_size: int, tags_code: np.ndarray, store_ts: np.ndarray, end_mark: bool) -> list:
    """An ext file of a queue as pieces for :func:`pipelines.build.write_file` (the unit bytes, then an
    int for the zero tail).

    Args:
        tags_code, store_ts: the file's units, from its first one on.
        end_mark: the file has a successor: the short -1 follows its last unit (``fullFillToEnd``).
    """
    per_file = ext_units_per_file(file_size)
    assert len(tags_code) <= per_file and (not end_mark or len(tags_code) == per_file)
    units = np.zeros(len(tags_code), dtype=EXT_UNIT_DTYPE)
    units["size"] = EXT_UNIT_SIZE
    units["tagsCode"] = tags_code
    units["msgStoreTime"] = store_ts
    data = units.view(np.uint8)
    if end_mark:
        data = np.concatenate([data, END_MARK.view(np.uint8)])
    return [data, file_size - len(data)]


def ext_file_name(file_no: int, file_size: int) -> str:
    """File name of ext file ``file_no``: its 20-digit start offset in the queue's ext space."""
    return segment_name(file_no * file_size)


def ext_ordinals(queue_idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Ordinal of each ext unit in its queue, for units in put order (``queue_idx``: each unit's queue
    number), after the ``counts[q]`` units queue ``q`` already put; ``counts`` is updated in place."""
    queue_idx = np.asarray(queue_idx, dtype=np.int64)
    order = np.argsort(queue_idx, kind="stable")
    qs = queue_idx[order]
    starts = np.r_[0, np.flatnonzero(np.diff(qs)) + 1]
    rank = np.arange(len(qs), dtype=np.int64) - np.repeat(starts, np.diff(np.r_[starts, len(qs)]))
    out = np.empty(len(qs), dtype=np.int64)
    out[order] = counts[qs] + rank
    counts += np.bincount(queue_idx, minlength=len(counts)).astype(np.int64)
    return out

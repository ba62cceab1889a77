"""What ``CommitLog.recoverAbnormally``'s own dispatch does to a queue whose files the start kept.

An abnormal start (an ``abort`` file) walks the commitlog from the segment ``isMappedFileMatchedRecover``
picks (:func:`store_format.recovery.recovery_start_index`) and hands every record it accepts to the
dispatchers (4.9.8 ``DefaultMessageStore.doDispatch``; 5.3.3 and 5.5.1 ``onCommitLogDispatch``) *before*
``truncateDirtyLogicFiles`` runs (after the walk, rocketmq-all-4.9.8 and 5.3.3 ``CommitLog.recoverAbnormally``,
rocketmq-store 5.5.1 likewise), against the queues as ``ConsumeQueue.recover`` left them:

* ``ConsumeQueue.putMessagePositionInfoWrapper`` first puts an ext unit (``ConsumeQueueExt.put``, with
  ``enableConsumeQueueExt``) for *every* record of the queue, then ``putMessagePositionInfo`` skips the unit
  when ``offset + size <= maxPhysicOffset`` and, when its queue offset's byte position lies below the
  queue's write position, skips it too (``expectLogicOffset < currentLogicOffset``; but queue offset 0, which
  it checks for no order: appended at the write position, the queue's next units then behind it); above it
  the unit is still appended at the write position (only logged); the skips leave ``maxPhysicOffset`` as it
  was.  On a queue without files the first unit goes at its own position (``fillPreBlank`` before it).
* ``BatchConsumeQueue.putBatchMessagePositionInfo`` (5.x) skips a unit when ``offset <=
  maxMsgPhyOffsetInCommitLog`` and appends the others at the write position; no ext file.

Units come in commitlog order, so once one is appended every later one is too: the skip by the write
position only cuts a prefix (after a queue offset 0 appended there, from the write position after it).
"""
from __future__ import annotations

import dataclasses

import numpy as np

__all__ = ["RecoveryDispatch", "recovery_dispatch"]


@dataclasses.dataclass
class RecoveryDispatch:
    """One queue's share of the dispatch: ``records`` handed to it (each puts an ext unit on an ext queue),
    ``appended`` (mask over the given units), and the queue's write position and max physical offset after."""
    records: int
    appended: np.ndarray
    write_position: int
    max_physic_offset: int


def recovery_dispatch(off: np.ndarray, size: np.ndarray, logic: np.ndarray, *, start: int, end: int,
                      max_physic: int, write_position: int, unit_size: int, batch: bool) -> RecoveryDispatch:
    """The queue's units (``off``/``size``: commitlog offset and size; ``logic``: the byte position its
    queue offset gives, ``cqOffset * unitSize``; in commitlog order) whose records lie in ``[start, end)``
    through ``ConsumeQueue.putMessagePositionInfo`` (``batch``: ``BatchConsumeQueue.putBatchMessagePositionInfo``,
    where ``max_physic`` is the start of its last unit) on a queue ending at ``write_position`` (0: no file)."""
    off = np.asarray(off, dtype=np.int64)
    size = np.asarray(size, dtype=np.int64)
    walked = (off >= start) & (off < end)
    if batch:
        put = walked & (off > max_physic)
    else:
        put = walked & (off + size > max_physic)
        logic = np.asarray(logic, dtype=np.int64)
        head = np.flatnonzero(put)[:1]
        if write_position > 0 and len(head) and logic[head[0]] == 0:
            # queue offset 0 passes no order check: appended at the write position, the rest from after it
            k = int(head[0])
            rest = recovery_dispatch(off[k + 1:], size[k + 1:], logic[k + 1:], start=start, end=end,
                                     max_physic=int(off[k] + size[k]), write_position=write_position + unit_size,
                                     unit_size=unit_size, batch=False)
            return RecoveryDispatch(int(walked.sum()), np.concatenate([np.arange(k + 1) == k, rest.appended]),
                                    rest.write_position, rest.max_physic_offset)
        if write_position > 0:
            put &= logic >= write_position
    n = int(put.sum())
    if not n:
        return RecoveryDispatch(int(walked.sum()), put, write_position, max_physic)
    last = int(np.flatnonzero(put)[-1])
    if batch:
        wp, mx = write_position + n * unit_size, int(off[last])
    else:
        first = int(np.flatnonzero(put)[0])
        base = write_position if write_position > 0 else int(logic[first])
        wp, mx = base + n * unit_size, int(off[last] + size[last])
    return RecoveryDispatch(int(walked.sum()), put, wp, mx)

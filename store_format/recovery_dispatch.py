"""What ``CommitLog.recoverAbnormally``'s own dispatch does to a queue whose files the start kept.

An abnormal start (an ``abort`` file) walks the commitlog from the segment ``isMappedFileMatchedRecover``
picks (:func:`store_format.recovery.recovery_start_index`) and hands every record it accepts to the
dispatchers (4.9.8 ``DefaultMessageStore.doDispatch``; 5.3.3 and 5.5.1 ``onCommitLogDispatch``) *before*
``truncateDirtyLogicFiles`` runs (after the walk, rocketmq-all-4.9.8 and 5.3.3 ``CommitLog.recoverAbnormally``,
rocketmq-store 5.5.1 likewise), against the queues as ``ConsumeQueue.recover`` left them:

* ``ConsumeQueue.putMessagePositionInfoWrapper`` first puts an ext unit (``ConsumeQueueExt.put``, with
  ``enableConsumeQueueExt``) for *every* record of the queue, then ``putMessagePositionInfo`` places the units one
  by one (:func:`store_format.consumequeue.assign_positions`, from the loaded write position and max): skipped
  when ``offset + size <= maxPhysicOffset``, skipped when its queue offset's byte position lies below the write
  position the unit before left (``expectLogicOffset < currentLogicOffset``; queue offset 0 is not checked),
  else appended at the write position (above it only logged); the skips leave ``maxPhysicOffset`` as it was.  On
  a queue without files the first unit goes at its own position (``fillPreBlank`` before it); a loaded queue at
  write position 0 (a file of zeros ``ConsumeQueue.recover`` kept) takes it at 0 (``loaded_state``).
* ``BatchConsumeQueue.putBatchMessagePositionInfo`` (5.x) skips a unit when ``offset <=
  maxMsgPhyOffsetInCommitLog`` and appends the others at the write position; no ext file.

Units come in commitlog order.  A queue holding a record's own units and light ones (``%LMQ%`` topic put to
itself while other records multi-dispatch to it) takes their queue offsets from two counters, so its units need
not come in queue offset order: a unit after an appended one may be skipped, which the unit-by-unit placement
reads from each unit's own queue offset (the caller hands every unit walked, those the reput once dropped too).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .consumequeue import Q_MAX_PHYS, Q_WRITE_POS, assign_positions, loaded_state

__all__ = ["RecoveryDispatch", "recovery_dispatch"]

# the file size handed to assign_positions: a queue without files starts at its first unit's position whatever it is
_NO_FILE_BOUND = 1 << 62


@dataclasses.dataclass
class RecoveryDispatch:
    """One queue's share of the dispatch: ``records`` handed to it (each puts an ext unit on an ext queue),
    ``appended`` (mask over the given units), and the queue's write position and max physical offset after."""
    records: int
    appended: np.ndarray
    write_position: int
    max_physic_offset: int


def recovery_dispatch(off: np.ndarray, size: np.ndarray, logic: np.ndarray, *, start: int, end: int,
                      max_physic: int, write_position: int, unit_size: int, batch: bool,
                      loaded: bool = True) -> RecoveryDispatch:
    """The queue's units (``off``/``size``: commitlog offset and size; ``logic``: the byte position its
    queue offset gives, ``cqOffset * unitSize``; in commitlog order) whose records lie in ``[start, end)``
    through ``ConsumeQueue.putMessagePositionInfo`` (``batch``: ``BatchConsumeQueue.putBatchMessagePositionInfo``,
    where ``max_physic`` is the start of its last unit) on a queue ending at ``write_position`` (``loaded``: the store's
    load put it in its table, so it has a file even at write position 0; else 0 is no file)."""
    off = np.asarray(off, dtype=np.int64)
    size = np.asarray(size, dtype=np.int64)
    walked = (off >= start) & (off < end)
    if batch:
        put = walked & (off > max_physic)
    else:
        return _put_one_by_one(off, size, np.asarray(logic, dtype=np.int64) // unit_size, walked,
                               max_physic=max_physic, write_position=write_position, loaded=loaded)
    n = int(put.sum())
    if not n:
        return RecoveryDispatch(int(walked.sum()), put, write_position, max_physic)
    last = int(np.flatnonzero(put)[-1])
    return RecoveryDispatch(int(walked.sum()), put, write_position + n * unit_size, int(off[last]))


def _put_one_by_one(off: np.ndarray, size: np.ndarray, queue_offset: np.ndarray, walked: np.ndarray, *,
                    max_physic: int, write_position: int, loaded: bool) -> RecoveryDispatch:
    """``ConsumeQueue.putMessagePositionInfo`` on each walked unit in turn (:func:`assign_positions`): from the
    loaded write position and max (:func:`loaded_state`; no file tracking: the files are the caller's)."""
    state = loaded_state(max_physic, write_position, loaded=loaded)
    idx = np.flatnonzero(walked)
    pos = assign_positions(np.zeros(len(idx), np.int64), off[idx], size[idx], queue_offset[idx], _NO_FILE_BOUND,
                           state)
    put = np.zeros(len(off), bool)
    put[idx] = pos >= 0
    if not put.any():
        return RecoveryDispatch(int(walked.sum()), put, write_position, max_physic)
    return RecoveryDispatch(int(walked.sum()), put, int(state[0, Q_WRITE_POS]), int(state[0, Q_MAX_PHYS]))

"""What ``DefaultMessageStore.start`` does after a recovery that dispatched: the second reput of 4.9.8's
``start()`` and of 5.x ``doRecheckReputOffsetFromCq`` (``recheckReputOffsetFromCq=true``).

:class:`Accepted` collects, while :mod:`store_format.recovery` walks, what the records recovery accepted
leave in the consume queues and the index; :func:`start_reput_check` says where the second reput starts
and refuses the cases where it would write what a rebuild cannot (checked against a 5.3.3 broker: the
last indexed record put a second time).  :func:`reput_records_from` counts what the reput's walk finds
after the cut, the records a restart discards.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from . import commitlog as cl
from .config import BrokerConfig
from .errors import UnsupportedConfigError
from .reput import next_reput_offset
from .store import StoreLocation

__all__ = ["Accepted", "reput_records_from", "start_reput_check"]


@dataclasses.dataclass
class Accepted:
    """What the records recovery accepted leave behind for ``DefaultMessageStore.start``: the largest
    ``maxPhysicOffset`` of a consume queue (``offset + size`` of the last record put into one,
    ``ConsumeQueue.putMessagePositionInfo``; -1: none) and the last index file's ``endPhyOffset``
    (the offset of the last record whose keys ``IndexService.buildIndex`` put; -1: none)."""
    cq_end: int = -1
    last_indexed: int = -1

    def add(self, rec: np.ndarray) -> None:
        if not len(rec):
            return
        cq = np.nonzero((rec[:, cl.R_FLAGS] & cl.F_CQ) != 0)[0]
        if len(cq):
            self.cq_end = int(rec[cq[-1], cl.R_PHYS] + rec[cq[-1], cl.R_TOTAL])
        keyed = np.nonzero(((rec[:, cl.R_FLAGS] & cl.F_INDEX) != 0) & (rec[:, cl.R_KEY_COUNT] > 0))[0]
        if len(keyed):
            self.last_indexed = int(rec[keyed[-1], cl.R_PHYS])



def start_reput_check(config: BrokerConfig, min_offset: int, checked_from: int, process_offset: int,
                       accepted: Accepted, *, abnormal: bool) -> int:
    """Where ``DefaultMessageStore.start`` sets the reput after a recovery that dispatched, and a refusal
    where that reput would write what the rebuild cannot.

    4.9.8 ``start()`` always, 5.x ``doRecheckReputOffsetFromCq`` with ``recheckReputOffsetFromCq=true``:
    the reput restarts at the largest ``maxPhysicOffset`` of the consume queues, at least the commitlog's
    minimum offset, and walks to the end again.  ``ConsumeQueue.putMessagePositionInfo`` drops a unit with
    ``offset + size <= maxPhysicOffset`` (so no queue gets a unit twice), but ``IndexService.buildIndex``
    skips only records *below* the last index file's ``endPhyOffset``: the last indexed record is indexed
    a second time when it lies at or after that restart point (a keyed prepared transaction message after
    the last queued record).  5.x without the switch: ``start()`` sets the reput to
    ``CommitLog.getConfirmOffset()``, the end of the recovered commitlog, and it adds nothing (-1).
    """
    if config.is_5x and not config.recheckReputOffsetFromCq:
        return -1
    reput = max(accepted.cq_end, min_offset, 0)
    why = "recheckReputOffsetFromCq=true: " if config.is_5x else ""
    if reput < checked_from:
        raise UnsupportedConfigError(
            f"{why}after the {'abnormal' if abnormal else 'normal'} recovery (which dispatched from offset "
            f"{checked_from} and put no consume queue unit) DefaultMessageStore.start walks the commitlog again "
            f"from {reput}, dispatching records recovery did not: not reproduced; let the broker recover")
    if config.messageIndexEnable and accepted.last_indexed >= reput:
        raise UnsupportedConfigError(
            f"{why}DefaultMessageStore.start walks the commitlog again from {reput} (end of the last consume "
            f"queue unit) and IndexService.buildIndex indexes the record at {accepted.last_indexed} a second "
            "time (it skips only records below the last index file's endPhyOffset): not reproduced; let the "
            "broker recover")
    return reput


def reput_records_from(store: StoreLocation, config: BrokerConfig, offset: int, window: int,
                       margin: int) -> tuple[int, int]:
    """Records (and their bytes) the reput's walk finds from commitlog ``offset`` to the end of the store
    (:func:`store_format.reput.next_reput_offset` between slices), walked ``window`` bytes at a time (each
    walk's buffer ``margin`` bytes larger): what a restart's recovery discards when it cuts the commitlog there."""
    scratch = cl.Scratch()
    records = nbytes = 0
    reput = offset
    while True:
        seg = store.segment_at(reput)
        if seg is None:
            break
        state = cl.WalkState.at_slice_start(reput - seg.base, seg.size)
        with store.reader(seg) as read:
            while True:
                split_end = min(state.bufpos + window, seg.size + 1)
                res = cl.walk_range(read, seg.base, seg.size, state, split_end, config, window=window + margin,
                                    keep_text=False, scratch=scratch)
                records += len(res.rec)
                nbytes += int(res.rec[:, cl.R_STRUCT].sum()) if len(res.rec) else 0
                state = res.state
                if res.stop != cl.Stop.SPLIT_END:
                    break
        if res.stop == cl.Stop.LIMIT:
            break
        nxt = next_reput_offset(seg, state, res.stop, seg.size, config.is_master)
        if nxt is None or nxt <= reput:
            break
        reput = nxt
    return records, nbytes

"""A 5.x DLedger crash restart of a store converted in place whose start's reput begins in the old commitlog files.

Mirrors ``DefaultMessageStore.doRecheckReputOffsetFromCq`` (called by ``start`` with
``recheckReputOffsetFromCq=true``), ``DLedgerCommitLog.getMinOffset``, ``DLedgerCommitLog.getData`` and
``DLedgerCommitLog.checkMessageAndReturnSize`` (rocketmq-all-5.3.3 and rocketmq-store 5.5.1), after
``DLedgerCommitLog.dledgerRecoverAbnormally`` (:mod:`store_format.dledger_crash`):

* A walk that dispatched records but queued none (every record it accepted a prepared or rolled back transaction
  message: ``CommitLogDispatcherBuildConsumeQueue`` puts no unit for them, so no queue is created) leaves the
  consume queue table empty.  ``doRecheckReputOffsetFromCq`` then sets the reput at the commitlog's min offset
  (its start value, no queue above it), the first old ``commitlog/`` file's on a store converted in place.
* From there ``getData`` below ``dividedCommitlogOffset`` is the base ``CommitLog``'s over the old files, loaded
  whole (``MappedFileQueue.load``; no recovery of them runs once DLedger has a data file), and
  ``checkMessageAndReturnSize`` hands a record whose second int is a message or blank magic code to the base
  check: the reput dispatches the old records, rolls into the first data file at the last old file's blank
  (``setRecoverPosition`` wrote it at the first start after the switch) and walks the data files to the log's end,
  the walk's records a second time.  That is the reput-before-the-walk rule
  (:func:`store_format.dledger_crash._reput_before_walk`, ``DLedgerCrash.before``): the old records' units are put
  (no queue holds one), ``IndexService.buildIndex`` skips every record below the index's ``endPhyOffset`` (the old
  records and the earlier data files' ones: the walk indexed later records) and puts the walk's last indexed
  record's keys again.

A walk that queued something sets the reput at the queues' largest offset, inside the data files (never here); a
walk that ended early (a damaged message) or a queue cut (a 5.5.1 cut emptying every queue) and a reput at
2147483647 inside an old file stay refused (:mod:`store_format.dledger_crash`).
"""
from __future__ import annotations

from .config import BrokerConfig
from .restart_reput import Accepted

__all__ = ["reput_in_old_files"]


def reput_in_old_files(config: BrokerConfig, accepted: Accepted, min_offset: int, dividing: int, early: bool,
                       queued_on_disk: bool) -> int | None:
    """Where the start's reput begins when ``doRecheckReputOffsetFromCq`` finds every queue empty after a walk that
    queued nothing, on a store converted in place: the min offset ``min_offset``, in the old files below
    ``dividing`` (``dividedCommitlogOffset``, the first data file's offset).  None: not this case (no switch, a
    queue unit from the walk or on disk, no old files, or a walk that ended at a damaged message)."""
    if not config.recheckReputOffsetFromCq or early or queued_on_disk:
        return None
    if accepted.max_physic_offset(config.batch_topics) >= 0:
        return None
    reput = max(min_offset, 0)
    return reput if reput < dividing else None

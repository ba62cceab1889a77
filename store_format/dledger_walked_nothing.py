"""A 5.x DLedger crash restart whose ``dledgerRecoverAbnormally`` walk dispatches nothing, with the consume queues
on disk (``verify`` predicts the next start on the store as it is): the queue cut and where the start's reput begins.

Mirrors (rocketmq-all-5.3.3 and rocketmq-store 5.5.1): ``DefaultMessageStore.recover`` runs ``ConsumeQueue.recover``
(loading the queues) before ``DLedgerCommitLog.dledgerRecoverAbnormally``, whose message check fails at the first
entry of the data file it starts at (``forceVerifyPropCRC=true``: DLedger's encoder appends no ``__CRC32#``
property): it dispatches nothing onto the loaded queues and its ``processOffset`` is that file's start.
``truncateDirtyLogicFiles(processOffset)`` runs when the ``maxPhyOffsetOfConsumeQueue`` passed in reaches it
(5.3.3: ``getMaxPhyOffsetInConsumeQueue``, the loaded queues' largest max; 5.5.1: ``getDispatchFromPhyOffset(false)``,
the checkpoint's ``logicsPhysicalOffset``, then ``ConsumeQueueStore.truncateDirty``'s own check of the loaded queues'
largest max) and cuts every queue's units at or past it (``ConsumeQueue.truncateDirtyLogicFiles``:
:attr:`store_format.dledger_crash_cut.QueuesOnDisk.max_after_cut` with no walked unit gives each queue's max then; a
queue left with no file keeps ``processOffset`` as its max on 5.3.3 and gets -1 on 5.5.1 from
``recoverTopicQueueTable``'s ``correctMinOffset``).  ``DefaultMessageStore.start``'s reput then begins at
``getConfirmOffset`` (DLedger's committed position) or, with ``recheckReputOffsetFromCq``
(``doRecheckReputOffsetFromCq``), at the queues' largest max after the cut (before it, when nothing is cut), at least
``DLedgerCommitLog.getMinOffset``, and dispatches every record from there to the log's end by
``ConsumeQueue.putMessagePositionInfo``'s rule: a unit at or below its queue's max dropped, the others appended at the
write position.  From at or before ``processOffset`` every cut unit comes back; from past it the records between are
dispatched by no one (:attr:`store_format.dledger_crash.DLedgerCrash.gap`), their cut units lost.
"""
from __future__ import annotations

from .config import BrokerConfig
from .dledger_crash_after import refusal
from .dledger_crash_cut import BLANK_MAX, QueueCut, QueuesOnDisk
from .filedump.checkpoint import Checkpoint

__all__ = ["reput_after_cut"]


def reput_after_cut(on_disk: QueuesOnDisk, process_offset: int, cp: Checkpoint, config: BrokerConfig, *,
                    min_offset: int, confirm_offset: int, log_end: int, why: str) -> tuple[int, QueueCut | None]:
    """Where the start's reput begins after a walk that dispatched nothing onto the queues ``on_disk`` (module
    docstring), and the cut ``truncateDirtyLogicFiles`` made at ``process_offset`` (None: none): its ``reput``, and
    ``held_emptied`` the queues it left with no file (no lost units listed: a reput past ``process_offset`` leaves
    them out as :attr:`store_format.dledger_crash.DLedgerCrash.gap`'s).  ``confirm_offset``: the committed position
    (at least the first data file's offset), ``log_end``: where DLedger's recovery ends the log.

    Raises:
        UnsupportedConfigError: with ``recheckReputOffsetFromCq``, a reput set by a queue the cut left inside the log
            (``why`` leads the text): one byte before ``process_offset`` (a batch queue left with no file) or at
            2147483647 (a queue left with ``fillPreBlank`` units only) inside a log past 2 GiB.
    """
    v55 = config.brokerVersion == "5.5"
    truncates = on_disk.max_physic_offset >= process_offset and (not v55 or cp.logics_physical_offset >= process_offset)
    after = on_disk.max_after_cut(process_offset, {}) if truncates else {}
    if not config.recheckReputOffsetFromCq:
        reput = confirm_offset
    else:
        tops = [-1 if v55 and not stays and v == process_offset else v for v, stays, _w, _d in after.values()] \
            if truncates else [on_disk.max_physic_offset]
        reput = max(min_offset, 0, *tops)
        if (truncates and reput == process_offset - 1) or BLANK_MAX == reput < log_end:
            raise refusal(f"{why}: the start's reput would begin at {reput} (a queue truncateDirtyLogicFiles left with "
                          "no file or with fillPreBlank units only), inside an entry")
    if not truncates:
        return reput, None
    return reput, QueueCut(reput, (), {}, 0, held_emptied=frozenset(n for n, (_v, stays, _w, _d) in after.items()
                                                                     if not stays))

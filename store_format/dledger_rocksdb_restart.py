"""A 5.x restart of a RocksDB consume queue store (``storeType=defaultRocksDB``) over a DLedger commitlog, its
database and ``index/`` deleted first (as ``rebuild --as-restart`` assumes): what it dispatches, in which order.

Mirrors (rocketmq-all-5.3.3 and rocketmq-store 5.5.1 alike where not said otherwise):

* ``DefaultMessageStore.recover``: ``RocksDBConsumeQueueStore.recover`` reads the empty database's max physical
  offset, 0 (``RocksDBConsumeQueueOffsetTable.getMaxPhyOffset``: no checkpoint key), and hands it to the commitlog's
  recovery as ``dispatchFromPhyOffset`` / ``maxPhyOffsetOfConsumeQueue``.
* ``DLedgerCommitLog.dledgerRecoverNormally`` (clean shutdown): DLedger's own recovery, then no dispatch at all
  (only ``truncateDirtyLogicFiles`` when that 0 reaches the log's end).
* ``DLedgerCommitLog.dledgerRecoverAbnormally`` (an ``abort`` file): ``isMmapFileMatchedRecover`` asks the queue
  store whether a data file's first message's physical offset is at most the database's (5.5.1
  ``RocksDBConsumeQueueStore.isMappedFileMatchedRecover``: ``phyOffset <= dispatchFromPhyOffset``; 5.3.3 the same
  test inline with ``isEnableRocksDBStore``): the first entry's message lies at 48 or later, above 0, so no file
  matches and the walk starts at the first data file.  It dispatches every message its check
  (``checkMessageAndReturnSize`` with ``checkCRCOnRecover``) accepts, committed or not, to the log's end;
  ``truncateDirty`` is not reached (0 is below ``processOffset``).
* ``DefaultMessageStore.start``: the reput from ``getConfirmOffset()``, DLedger's committed position; with
  ``recheckReputOffsetFromCq=true`` ``doRecheckReputOffsetFromCq`` finds the queue table empty (the RocksDB store
  creates queues for readers only) and sets it at ``commitLog.getMinOffset()``.  It reads up to the committed
  position, which DLedger moves to the log's end once the node leads (a group of one commits the entries its
  checkpoint was behind): so from where it starts to the log's end.
* ``RocksDBConsumeQueueStore.putMessagePosition0`` (the group commit of up to 256 requests in dispatch order): a
  unit put again under its key with the same value changes nothing; a queue's "max" entry is its last unit
  dispatched, and the checkpoint key the largest ``offset + size`` of the last group, the log's last queued record
  in every case here: so the database is that of one pass over the records from the first one dispatched to the
  log's end (:func:`store_format.rocksdb_cq.rocksdb_cq_entries`).
* ``IndexService.buildIndex`` skips records below the last index file's ``endPhyOffset``: after the crash walk a
  reput that reaches the walk's last indexed record indexes it again (its keys twice), as for file queues.
* A crash walk whose check ends at a damaged message (a body CRC, ``forceVerifyPropCRC``) inside the log DLedger's
  recovery keeps (it reads no CRC): ``processOffset`` lies above 0, so ``truncateDirty`` is not reached, and the
  start's reput (``ReputMessageService.doReput``: ``checkMessageAndReturnSize`` without CRC) from at or before the
  damaged entry walks the walk's records again (the same keys and values; the last indexed record's keys again),
  then the damaged message and the rest; from past it (the committed position) the records between are dispatched
  by no one; from the log's end nothing follows the damage (:attr:`RocksDLedgerRestart.jump`, ``walk_end``).
* A store converted in place (old ``commitlog/`` files before the data files): the crash walk reads the data files
  only (``dledgerRecoverAbnormally``), and with ``recheckReputOffsetFromCq`` the reput starts at
  ``DLedgerCommitLog.getMinOffset``, the first old file's offset: ``DLedgerCommitLog.getData`` below
  ``dividedCommitlogOffset`` is ``CommitLog.getData``, the check hands an old record (its second int a message or
  blank magic code) to the base check, each old file's blank rolls it on (``rollNextFile``) to the data files, whose
  records it walks again.  After a crash the old records lie below the walk's ``endPhyOffset``: units, no keys.  A
  store with no data file yet (the first start with DLedger) is the ordinary RocksDB restart of the old files
  (``isInrecoveringOldCommitlog``; ``pipelines.restart.as_restart``, ``StoreLocation.dledger_pending``).

Refused in one line (:func:`plan_rocksdb_dledger_restart`): a crash walk whose check fails at the first data file's
first entry (it dispatches nothing), a record past the walk's end that the start's reput's own check (no CRC) refuses
too (a bad magic code: where ``doReput`` goes on then depends on ``getData``'s buffer and DLedger's commits), and a
store converted in place with the 5.5.1 RocksDB message index after a crash (the reput's old records lie below the
walk's: whether ``IndexRocksDBStore.buildIndex`` skips them depends on whether its thread has written the walk's
batches, timing): none checked against the broker.  Checked against the 5.5.1 broker (and 5.3.3 with ``ROCKSDB_LINES``):
tests/test_rocksdb_dledger_restart_broker.py, tests/test_rocksdb_dledger_restart_more_broker.py (the damaged
message, the converted stores).

``indexRocksDBEnable``/``transRocksDBEnable`` (5.5.1; 5.3.3 has neither store) change none of this: their stores'
``getDispatchFromPhyOffset`` (``lastOffsetPy`` of ``rocksdbstore/``, kept by the restart) only lowers
``DefaultMessageStore.recover``'s ``dispatchFromPhyOffset`` where above 0 and it is already 0, and
``DLedgerCommitLog.isMmapFileMatchedRecover`` asks the queue store alone; what the restart adds to the index family
(``IndexRocksDBStore.buildIndex``, records from its ``lastOffsetPy`` on) is ``pipelines.rebuild``'s as for any
``--as-restart`` (checked against the 5.5.1 broker: tests/test_rocksdb_dledger_verify_more_broker.py).
"""
from __future__ import annotations

import dataclasses

from . import commitlog as cl
from .config import BrokerConfig
from .dledger import ENTRY_HEADER_SIZE
from .dledger_crash import walk_data_files
from .dledger_crash_after import checked_windows
from .dledger_recovery import DLedgerRecovery
from .errors import UnsupportedConfigError
from .restart_reput import Accepted
from .store import Segment, StoreLocation

__all__ = ["RocksDLedgerRestart", "plan_rocksdb_dledger_restart"]


@dataclasses.dataclass(frozen=True)
class RocksDLedgerRestart:
    """What the restart dispatches: ``walk_from`` (the crash walk's first data file's offset; -1: a clean restart,
    no walk) to ``end`` (the log's end; after a walk that ended early with no reput past it, ``walk_end``), then the
    start's reput from ``reput`` to ``end`` (nothing where ``reput >= end``); ``reindex``: the record whose keys that
    reput indexes again (-1: none)."""
    abnormal: bool
    walk_from: int
    end: int
    reput: int
    reindex: int
    reason: str
    # dledgerRecoverAbnormally's processOffset: its last file's offset plus the message sizes it walked there (no
    # entry headers); dledgerRecoverNormally's maxPhyOffset, the log's end (-1: no data file)
    process_offset: int = -1
    # where the crash walk's message check failed inside the log DLedger keeps (a damaged message's entry; -1: it
    # walked to the log's end): it dispatched up to there, the start's reput from reput on (no CRC check)
    walk_end: int = -1

    @property
    def first(self) -> int:
        """The first commitlog offset anything is dispatched from (``end``: nothing)."""
        if self.walk_from >= 0:
            return self.walk_from
        return min(self.reput, self.end)

    @property
    def jump(self) -> tuple[int, int] | None:
        """Where the crash walk's dispatch stops and where the start's reput goes on
        (:func:`store_format.store.jump_at`), when they are not one pass from ``walk_from`` to ``end``: the reput
        from before the walk's data files (the old ``commitlog/`` files of a store converted in place) walks them,
        then the walk's records again; from before a damaged message's entry the walk's records from there again;
        from past it (the committed position) the records between are dispatched by no one."""
        if self.walk_from < 0 or self.reput >= self.end:
            return None
        stop = self.walk_end if self.walk_end >= 0 else self.end
        if self.reput < self.walk_from or (self.walk_end >= 0 and self.reput != stop):
            return stop, self.reput
        return None


def _refuse(why: str) -> UnsupportedConfigError:
    return UnsupportedConfigError(
        f"storeType=defaultRocksDB with enableDLegerCommitLog=true: rebuild --as-restart of {why} is not modelled "
        "(not checked against the broker); plain rebuild writes its database and index/, verify compares them")


def _reput_check_ends(st: StoreLocation, files: list[Segment], stop: int, config: BrokerConfig) -> int:
    """Where ``doReput``'s own message check (``checkMessageAndReturnSize`` without CRC) ends, walking the data
    files from ``stop`` (an entry's start): the log's end, unless it refuses a record (its offset)."""
    k = next(n for n, f in enumerate(files) if f.base <= stop < f.end)
    pos, scratch = stop - files[k].base, cl.Scratch()
    while True:
        seg = files[k]
        for window in checked_windows(st, seg, pos, config, scratch):
            res, halt = window[0], window[1]
            if halt is not None:
                return halt.offset - ENTRY_HEADER_SIZE
        if res.stop == cl.Stop.BLANK and k + 1 < len(files):
            k, pos = k + 1, 0
            continue
        return seg.end if res.stop == cl.Stop.BLANK else seg.base + res.state.bufpos


def plan_rocksdb_dledger_restart(st: StoreLocation, config: BrokerConfig, rec: DLedgerRecovery,
                                 abnormal: bool) -> RocksDLedgerRestart:
    """The restart of ``st`` after DLedger's recovery ``rec``, its database deleted (module docstring);
    ``abnormal``: an ``abort`` file.

    Raises:
        UnsupportedConfigError: what is refused (module docstring).
    """
    assert st.dledger is not None
    log = st.dledger
    files = [Segment(k, name, int(name), size, path, mtime, dledger=True)
             for k, (name, size, path, mtime) in enumerate(log.files)]
    old = [seg for seg in st.segments if not seg.dledger]
    if old and abnormal and config.index_rocksdb:
        raise _refuse("a store converted in place with indexRocksDBEnable after a crash (the reput's old records lie "
                      "below the walk's: whether IndexRocksDBStore.buildIndex skips them depends on whether its thread "
                      "has written the walk's batches)")
    end = rec.process_offset
    # DLedgerCommitLog.getMinOffset: the first old commitlog/ file's (a store converted in place), else the first
    # data file's; getConfirmOffset: the committed position, else (nothing committed) the first data file's offset
    min_offset = old[0].base if old else files[0].base if files else 0
    committed = max(rec.committed_pos, files[0].base) if files else 0
    reput = min_offset if config.recheckReputOffsetFromCq else committed
    if not abnormal or not files:
        return RocksDLedgerRestart(False, -1, end, reput, -1, "dledgerRecoverNormally dispatches nothing",
                                   end if files else -1)
    # isMmapFileMatchedRecover: no data file's first message (48 bytes in) lies at or below the empty database's 0
    accepted = Accepted()
    stop, last_base, last_sizes, reason = walk_data_files(st, files, 0, config, accepted)
    walk_end = -1
    if stop != end:   # a message its check (checkCRCOnRecover, forceVerifyPropCRC) refuses: DLedger's recovery kept it
        if stop <= files[0].base:
            raise _refuse(f"a crash restart whose dledgerRecoverAbnormally walk dispatches nothing (its check fails at "
                          f"the first entry, {stop}: {reason})")
        if reput < end and (at := _reput_check_ends(st, files, max(reput, stop), config)) != end:
            raise _refuse(f"a crash restart whose dledgerRecoverAbnormally walk ends at {stop} ({reason}) and whose "
                          f"start's reput's own check (no CRC) ends at {at}, before DLedger's log end {end}")
        walk_end = stop
    last = accepted.last_indexed
    reindex = last if config.writes_index_files and 0 <= reput <= last < end else -1
    return RocksDLedgerRestart(True, files[0].base, end if reput < end or walk_end < 0 else walk_end, reput, reindex,
                               reason, last_base + last_sizes, walk_end)

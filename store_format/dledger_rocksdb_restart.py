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

Refused in one line (:func:`plan_rocksdb_dledger_restart`): a store converted in place (old ``commitlog/``
files: the reput reads them, the crash walk does not), a crash walk whose message check ends before DLedger's log
end (a damaged message, ``forceVerifyPropCRC``): none checked against the broker.  Checked against the 5.5.1
broker (and 5.3.3 with ``ROCKSDB_LINES``): tests/test_rocksdb_dledger_restart_broker.py.

``indexRocksDBEnable``/``transRocksDBEnable`` (5.5.1; 5.3.3 has neither store) change none of this: their stores'
``getDispatchFromPhyOffset`` (``lastOffsetPy`` of ``rocksdbstore/``, kept by the restart) only lowers
``DefaultMessageStore.recover``'s ``dispatchFromPhyOffset`` where above 0 and it is already 0, and
``DLedgerCommitLog.isMmapFileMatchedRecover`` asks the queue store alone; what the restart adds to the index family
(``IndexRocksDBStore.buildIndex``, records from its ``lastOffsetPy`` on) is ``pipelines.rebuild``'s as for any
``--as-restart`` (checked against the 5.5.1 broker: tests/test_rocksdb_dledger_verify_more_broker.py).
"""
from __future__ import annotations

import dataclasses

from .config import BrokerConfig
from .dledger_crash import walk_data_files
from .dledger_recovery import DLedgerRecovery
from .errors import UnsupportedConfigError
from .restart_reput import Accepted
from .store import Segment, StoreLocation

__all__ = ["RocksDLedgerRestart", "plan_rocksdb_dledger_restart"]


@dataclasses.dataclass(frozen=True)
class RocksDLedgerRestart:
    """What the restart dispatches: ``walk_from`` (the crash walk's first data file's offset; -1: a clean restart,
    no walk) to ``end`` (the log's end), then the start's reput from ``reput`` to ``end`` (nothing where
    ``reput >= end``); ``reindex``: the record whose keys that reput indexes again (-1: none)."""
    abnormal: bool
    walk_from: int
    end: int
    reput: int
    reindex: int
    reason: str
    # dledgerRecoverAbnormally's processOffset: its last file's offset plus the message sizes it walked there (no
    # entry headers); dledgerRecoverNormally's maxPhyOffset, the log's end (-1: no data file)
    process_offset: int = -1

    @property
    def first(self) -> int:
        """The first commitlog offset anything is dispatched from (``end``: nothing)."""
        if self.walk_from >= 0:
            return self.walk_from
        return min(self.reput, self.end)


def _refuse(why: str) -> UnsupportedConfigError:
    return UnsupportedConfigError(
        f"storeType=defaultRocksDB with enableDLegerCommitLog=true: rebuild --as-restart of {why} is not modelled "
        "(not checked against the broker); plain rebuild writes its database and index/, verify compares them")


def plan_rocksdb_dledger_restart(st: StoreLocation, config: BrokerConfig, rec: DLedgerRecovery,
                                 abnormal: bool) -> RocksDLedgerRestart:
    """The restart of ``st`` after DLedger's recovery ``rec``, its database deleted (module docstring);
    ``abnormal``: an ``abort`` file.

    Raises:
        UnsupportedConfigError: what is refused (module docstring).
    """
    assert st.dledger is not None
    if any(not seg.dledger for seg in st.segments):
        raise _refuse("a store converted in place (old commitlog/ files before the DLedger data)")
    log = st.dledger
    files = [Segment(k, name, int(name), size, path, mtime, dledger=True)
             for k, (name, size, path, mtime) in enumerate(log.files)]
    end = rec.process_offset
    min_offset = files[0].base if files else 0      # DLedgerCommitLog.getMinOffset (no old files)
    reput = min_offset if config.recheckReputOffsetFromCq else max(rec.committed_pos, min_offset)
    if not abnormal or not files:
        return RocksDLedgerRestart(False, -1, end, reput, -1, "dledgerRecoverNormally dispatches nothing",
                                   end if files else -1)
    # isMmapFileMatchedRecover: no data file's first message (48 bytes in) lies at or below the empty database's 0
    accepted = Accepted()
    stop, last_base, last_sizes, reason = walk_data_files(st, files, 0, config, accepted)
    if stop != end:
        raise _refuse(f"a crash restart whose dledgerRecoverAbnormally walk ends at {stop} ({reason}) before DLedger's "
                      f"log end {end}")
    last = accepted.last_indexed
    reindex = last if config.writes_index_files and 0 <= reput <= last < end else -1
    return RocksDLedgerRestart(True, files[0].base, end, reput, reindex, reason, last_base + last_sizes)


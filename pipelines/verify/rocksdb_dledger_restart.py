"""``verify``'s next-start prediction for a RocksDB consume queue over a DLedger commitlog (``storeType=defaultRocksDB``
with ``enableDLegerCommitLog=true``), its database kept: DLedger's recovery, then ``DLedgerCommitLog``'s
after a clean shutdown (``DLedgerCommitLog.dledgerRecoverNormally``: no dispatch, ``truncateDirty`` at the log's end
when the database's checkpoint reaches it, a no-op there), then the start's reput from the min offset
(``recheckReputOffsetFromCq=true``) or the committed position to the log's end (entries past DLedger's committed
position too: a group of one commits them once the node leads, ``DLedgerCommitLog.getData`` serving the reput up to
the committed position; the rebuild compared with reads them as well, ``pipelines.restart.led_dledger_store``, checked
against the 5.5.1 broker: tests/test_rocksdb_dledger_verify_more_broker.py), the database's entries as
:func:`store_format.rocksdb_recovery.predict_rocksdb_restart` changes them, reported queue by queue like the plain
RocksDB store's (:mod:`.rocksdb_restart`); with 5.5.1's ``indexRocksDBEnable``/``transRocksDBEnable`` their stores'
lastOffsetPy (``rocksdbstore/``, above 0) lowers ``DefaultMessageStore.recover``'s ``dispatchFromPhyOffset`` below a
checkpoint at the log's end, so ``truncateDirty`` is not called there (where it changes nothing: the same
prediction, noted).  A store converted in place (old ``commitlog/`` files, then data files): ``dledgerRecoverNormally``
alike (5.3.3, 5.5.1), and the start's reput from ``DLedgerCommitLog.getMinOffset``, the first old file's offset
(``recheckReputOffsetFromCq``), reads the old files through ``CommitLog.getData`` below ``dividedCommitlogOffset`` and
rolls over their blanks to the data files, putting every unit again (checked against the 5.5.1 and 5.3.3 brokers:
tests/test_rocksdb_dledger_verify_converted_broker.py).  Refused in one line: a crash restart
(``dledgerRecoverAbnormally``'s walk from the data file the database's checkpoint matches, and where that
checkpoint reaches its short ``processOffset`` ``truncateDirty`` racing the walk's dispatch through
``RocksGroupCommitService`` queue by queue, seen on the 5.5.1 broker: tests/test_rocksdb_dledger_restart_broker.py), a
checkpoint past the log's end, and what :func:`store_format.dledger_rocksdb_restart.plan_rocksdb_dledger_restart`
refuses.

A store converted in place with no DLedger data file yet (``StoreLocation.dledger_pending``), its first start with
DLedger (:func:`predict_rocksdb_dledger_first_start`): ``DLedgerCommitLog.dledgerRecoverNormally`` /
``dledgerRecoverAbnormally`` find no data file and run the base ``CommitLog``'s recovery of the old files
(``isInrecoveringOldCommitlog``: the base message check), which is the plain RocksDB store's recovery from the
database's checkpoint (:func:`.rocksdb_restart.predict_rocksdb_store_restart`); ``setRecoverPosition`` then writes a
blank at the last old file's wrote position and creates the first data file at ``dividedCommitlogOffset``, that
file's end.  The start's reput from ``getConfirmOffset`` (``getMaxOffset``: nothing committed, the first data file's
offset, ``dividedCommitlogOffset``) finds nothing; with ``recheckReputOffsetFromCq`` from ``getMinOffset``, the first
old file's, it walks the old files again through ``CommitLog.getData`` and its blank rolls it to the empty data
file: the plain store's second reput over the old files (checked against the 5.5.1 broker, 5.3.3 with
``ROCKSDB_MORE_LINES``: tests/test_rocksdb_dledger_verify_first_start_broker.py)."""
from __future__ import annotations

from collections.abc import Callable, Iterator

from store_format.config import BrokerConfig
from store_format.dledger_recovery import recover_dledger
from store_format.dledger_rocksdb_restart import plan_rocksdb_dledger_restart
from store_format.errors import UnsupportedConfigError
from store_format.message_rocksdb import dispatch_store_offsets
from store_format.rocksdb_recovery import parse_database, predict_rocksdb_restart
from store_format.store import StoreLocation

from .report import RestartPrediction
from .restart_index import predict_index
from .rocksdb_restart import predict_rocksdb_store_restart, queue_restarts, select_entries

__all__ = ["predict_rocksdb_dledger_first_start", "predict_rocksdb_dledger_store_restart"]


def predict_rocksdb_dledger_first_start(st: StoreLocation, config: BrokerConfig, store_entries: dict,
                                        ref_entries: dict, *, clean: bool, store_index: list[tuple[str, int, dict]],
                                        expected_index: Callable[[], Iterator[bytes]],
                                        checkpoint_index_ts: int | None) -> RestartPrediction:
    """The first start with DLedger of a store converted in place with no data file yet (module docstring): the
    plain RocksDB store's restart of the old files, noted."""
    assert st.dledger_pending and st.dledger is None
    p = predict_rocksdb_store_restart(st, config, store_entries, ref_entries, clean=clean, store_index=store_index,
                                      expected_index=expected_index, checkpoint_index_ts=checkpoint_index_ts)
    divided = st.segments[-1].end
    # the plain store's reput starts at its end (getConfirmOffset); DLedgerCommitLog's at the first data file's offset
    p.notes[:] = [n.replace("; the reput then starts at the commitlog's end", "") for n in p.notes]
    p.notes.append(
        "enableDLegerCommitLog=true and no DLedger data file yet: DLedgerCommitLog recovers the old commitlog/ files "
        f"with the base CommitLog's {'normal' if clean else 'abnormal'} recovery (isInrecoveringOldCommitlog) and "
        f"creates its first data file at dividedCommitlogOffset {divided}, the last old file's end; the start's reput "
        + ("from the old files' min offset walks them again, their blank rolling it on to the empty data file"
           if config.recheckReputOffsetFromCq else
           f"from getConfirmOffset, that data file's offset {divided}, finds nothing"))
    return p


def predict_rocksdb_dledger_store_restart(st: StoreLocation, config: BrokerConfig, store_entries: dict,
                                          ref_entries: dict, *, clean: bool, store_index: list[tuple[str, int, dict]],
                                          expected_index: Callable[[], Iterator[bytes]],
                                          checkpoint_index_ts: int | None) -> RestartPrediction:
    """The prediction from both databases' entries (the store's and the rebuild's).

    Raises:
        UnsupportedConfigError: what is not modelled (module docstring).
    """
    assert st.dledger is not None
    store, checkpoint = parse_database(store_entries)
    ref, _ = parse_database(ref_entries)
    rec = recover_dledger(st.fs, st.dledger, config.mappedFileSizeCommitLog)
    end, cp0 = rec.process_offset, checkpoint or 0
    if cp0 > end:
        raise UnsupportedConfigError(f"the database's checkpoint {cp0} lies past DLedger's log end {end} "
                                     "(truncateDirty at the log's end): not checked against the broker")
    if not clean:
        raise UnsupportedConfigError(
            "after a crash (abort file) over the database kept: dledgerRecoverAbnormally walks from the last data "
            "file whose first message lies at or below the database's checkpoint, and where that checkpoint reaches "
            "the walk's processOffset (which leaves out the last file's entry headers) truncateDirty races the walk's "
            "dispatch through RocksGroupCommitService queue by queue (its max entries and min entries then depend on "
            "timing); not modelled")
    plan = plan_rocksdb_dledger_restart(st, config, rec, False)
    min_phy = st.segments[0].base
    again = select_entries(ref, lambda phy: (phy >= plan.reput) & (phy < end)) if plan.reput < end else None
    r = predict_rocksdb_restart(store, checkpoint, {}, end=plan.process_offset, min_phy=min_phy,
                                abnormal=False, broker_551=config.brokerVersion == "5.5", again=again,
                                dledger=True)
    p = RestartPrediction("5", clean, min_phy, end, rocksdb=True, rocksdb_checkpoint_before=checkpoint,
                          rocksdb_checkpoint_after=r.checkpoint, truncate_dirty_logic_files=r.truncated)
    p.recovery_cut, p.recovery_reason = end, rec.reason
    # dledgerRecoverNormally dispatches nothing: nothing from the log's end on
    p.reput_from, p.reput_from_inclusive, p.tail_bytes = end, True, 0
    queue_restarts(p, store, ref, r, end)
    # DefaultMessageStore.recover: 5.5.1's IndexRocksDBStore/TransMessageRocksDBStore lastOffsetPy (above 0) lowers
    # dispatchFromPhyOffset, dledgerRecoverNormally's maxPhyOffsetOfConsumeQueue, below the log's end
    low = dispatch_store_offsets(st, config)
    lowered = cp0 >= end and low.dispatch_from(cp0) < end
    p.notes.append("DLedgerCommitLog.dledgerRecoverNormally dispatches nothing"
                   + (f"; the checkpoint reaches the log's end {end}, but {low.describe()} lowers "
                      f"dispatchFromPhyOffset to {low.dispatch_from(cp0)}: truncateDirty is not called (there it "
                      "would change nothing)"
                      if lowered else
                      f"; the checkpoint reaches the log's end {end}: truncateDirty there (nothing past it)"
                      if cp0 >= end else ""))
    if rec.committed_pos < end:   # the reference rebuild read them too (pipelines.restart.led_dledger_store)
        p.notes.append(f"it assumes the node leads: a group of one commits the entries past committed index "
                       f"{rec.committed_index} (position {rec.committed_pos}) and the start's reput goes on to the "
                       f"log's end {end} (a multi-node group may truncate them instead)")
    second, divided = None, st.dledger.first_offset
    if again is not None:
        p.second_reput_from, second = plan.reput, (
            f"the start's reput walks the log again from {plan.reput} ("
            + ("recheckReputOffsetFromCq=true: the RocksDB queue table is empty at a start, so the min offset"
               if config.recheckReputOffsetFromCq else "getConfirmOffset: DLedger's committed position")
            + (f"; the old commitlog/ files first, CommitLog.getData below dividedCommitlogOffset {divided}, their "
               "blanks rolling it on to the data files" if plan.reput < divided else "")
            + ") to its end, putting every unit again: each queue "
            "with a unit there gets its last one as max entry, the checkpoint the end of the last one; "
            "IndexService.buildIndex puts the last indexed record's keys again")
    predict_index(p, end, config=config, store_index=store_index, expected_index=expected_index,
                  checkpoint_index_ts=checkpoint_index_ts, clean_shutdown=clean, end=end,
                  second_reput_from=p.second_reput_from, second_reput_note=second)
    return p

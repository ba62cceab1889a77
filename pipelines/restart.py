"""``--as-restart``: the store as the reput sees it after the broker's commitlog recovery."""
from __future__ import annotations

import dataclasses

import pyarrow.fs as pafs

from store_format.anomalies import AnomalyKind
from store_format.batchconsumequeue import BCQ_DIR
from store_format.config import BrokerConfig
from store_format.consumequeue import cq_file_name
from store_format.dledger_crash import DLedgerCrash, plan_dledger_crash
from store_format.dledger_inside_units import Placed
from store_format.dledger_recovery import DLedgerRecovery, recover_dledger
from store_format.dledger_rocksdb_restart import RocksDLedgerRestart, plan_rocksdb_dledger_restart
from store_format.empty_request_held import HELD_FOLDERS
from store_format.empty_topic_restart import (
    is_topic_empty_file,
)
from store_format.errors import StoreError
from store_format.recovery import RecoveryPlan, plan_recovery, read_checkpoint
from store_format.store import (
    Segment,
    StoreLocation,
    jump_at,
    pieces_at_refusals,
    then_pieces,
    with_dledger_committed,
)

from .anomalies import at_offset

__all__ = ["as_restart", "inside_blanks", "led_dledger_store", "Restart", "DLedgerRestart"]

@dataclasses.dataclass
class Restart:
    """What a broker restart's commitlog recovery keeps and throws away (``--as-restart``)."""
    plan: RecoveryPlan

    def anomalies(self, kept: StoreLocation) -> list[dict]:
        """The restart's own finding, at the cut (in ``kept``, the store the restart leaves)."""
        p = self.plan
        if not (p.discarded_messages or p.discarded_bytes or p.deleted_segments):
            return []
        return [at_offset(kept, p.process_offset, AnomalyKind.RESTART_DISCARDS,
                          f"a broker restart ({p.mode} recovery, {p.broker_version}.x rules) cuts the commitlog at "
                           f"{p.process_offset}: {p.reason}; it discards {p.discarded_messages:,} record(s), "
                           f"{p.discarded_bytes:,} bytes, and deletes {p.deleted_segments} later segment(s)",
                          found=p.discarded_messages)]


@dataclasses.dataclass
class DLedgerRestart:
    """What a DLedger broker's restart keeps (``DLedgerMmapFileStore.recover``) and dispatches; ``nothing``:
    its reput starts at the committed position (5.x without ``recheckReputOffsetFromCq``)."""
    recovery: DLedgerRecovery
    committed_pos_before: int
    nothing: bool
    crash: DLedgerCrash | None = None   # 5.x after a crash: what dledgerRecoverAbnormally dispatches
    # storeType=defaultRocksDB: what the restart dispatches into the (deleted, so empty) database
    rocks: RocksDLedgerRestart | None = None
    # a clean restart with entries past the committed one: assumed the node leads (a group of one commits them)
    leads: bool = False

    def anomalies(self, kept: StoreLocation) -> list[dict]:
        """DLedger's recovery cutting committed entries off (the committed position moves back)."""
        r = self.recovery
        if r.committed_pos >= self.committed_pos_before or not kept.segments:
            return []
        return [at_offset(kept, max(r.committed_pos, kept.segments[0].base), AnomalyKind.RESTART_DISCARDS,
                          "a broker restart (DLedgerMmapFileStore.recover) ends the DLedger log at "
                          f"{r.process_offset}: "
                          f"{r.reason}; the committed position moves from {self.committed_pos_before} to "
                          f"{r.committed_pos} (committed index {r.committed_index})", found=1)]


def rocksdb_dledger_restart(st: StoreLocation, config: BrokerConfig,
                            progress) -> tuple[StoreLocation, DLedgerRestart]:  # noqa: ANN001
    """A RocksDB consume queue store over a DLedger commitlog as its restart (database and ``index/`` deleted; 5.5.1's
    ``rocksdbstore/`` kept, as the restart keeps it, whose lastOffsetPy changes nothing it dispatches) dispatches it
    (:func:`store_format.dledger_rocksdb_restart.plan_rocksdb_dledger_restart`): DLedger's recovery,
    then after a crash ``dledgerRecoverAbnormally``'s walk from the first data file to the log's end, and the
    start's reput from the min offset (``recheckReputOffsetFromCq=true``) or the committed position to the log's
    end: read as one pass from the first record dispatched to the log's end (the database of both passes is that
    of one), the walk's last indexed record indexed again where the reput reaches it (``StoreLocation.reindex``).
    Where the two passes differ (``RocksDLedgerRestart.jump``: the walk ended at a damaged message, or the reput
    begins in a converted store's old ``commitlog/`` files), the walk's pass, then the reput's
    (:func:`store_format.store.jump_at`: the records it reads again land on the same keys with the same values,
    and ``IndexService.buildIndex``'s ``endPhyOffset`` keeps their keys out but the last indexed record's)."""
    assert st.dledger is not None
    rec = recover_dledger(st.fs, st.dledger, config.mappedFileSizeCommitLog)
    before = st.dledger.committed_pos
    plan = plan_rocksdb_dledger_restart(st, config, rec, st.broker_may_be_running())
    progress.emit(f"[rebuild] as a restart: DLedger's recovery (walk from data file {rec.checked_from}) ends the log "
                  f"at {rec.process_offset} ({rec.reason}); committed index {rec.committed_index}, position "
                  f"{rec.committed_pos}")
    walked = plan.walk_end if plan.walk_end >= 0 else rec.process_offset
    progress.emit("[rebuild] as a restart (storeType=defaultRocksDB, the database deleted: its max physical offset "
                  "0): " + (f"DLedgerCommitLog.dledgerRecoverAbnormally walks every data file from the first, "
                            f"{plan.walk_from}, to {walked} ({plan.reason}) and dispatches "
                            + ("nothing (its check fails at the first entry)" if plan.walked_nothing else
                               "every entry, committed or not")
                            if plan.abnormal else "DLedgerCommitLog.dledgerRecoverNormally dispatches nothing")
                  + (f"; the start's reput from {plan.reput} "
                     + ("(recheckReputOffsetFromCq=true: the RocksDB queue table is empty, so the min offset) "
                        if config.recheckReputOffsetFromCq else "(the committed position) ")
                     + f"to the log's end {rec.process_offset} once the node leads"
                     + (f" (its own check, no CRC, ends the dispatch at {plan.end})"
                        if plan.reput < plan.end < rec.process_offset and plan.walk_end != plan.end else "")
                     + ("" if plan.reput < plan.end else ": nothing")
                     + (", the old commitlog/ files' records first (a store converted in place: below the walk's "
                        "last indexed record, so no key)"
                        if plan.abnormal and not plan.walked_nothing and 0 <= plan.reput < plan.walk_from else
                        ", the old commitlog/ files' records first (a store converted in place)"
                        if plan.reput < plan.end and any(not seg.dledger and seg.end > plan.reput
                                                         for seg in st.segments) else "")
                     + (", the damaged message and the rest too (its check reads no CRC)"
                        if 0 <= plan.walk_end and plan.reput <= plan.walk_end < plan.end else
                        f": the records from {plan.walk_end} to {plan.reput} are dispatched by no one"
                        if 0 <= plan.walk_end < plan.reput < plan.end else "")
                     + (f", indexing the record at {plan.reindex} again" if plan.reindex >= 0 else "")))
    # a converted store's old files dispatch their record at offset 0 (no dispatchFromPhyOffset): StoreLocation marks
    # them so when it opens a RocksDB DLedger store (store_format.store)
    kept = with_dledger_committed(st, rec.ledger_end_index, plan.end)
    first = plan.first
    if first >= plan.end or not kept.segments:
        kept = dataclasses.replace(kept, segments=[dataclasses.replace(seg, readable=0) for seg in kept.segments])
        return kept, DLedgerRestart(rec, before, True, rocks=plan)
    if plan.jump is not None:   # the walk's pass, then the reput's (the last indexed record's keys again there)
        return jump_at(kept, *plan.jump, walked_from=plan.walk_from), DLedgerRestart(rec, before, False, rocks=plan)
    segs = [seg for seg in kept.segments if seg.end > first]
    segs[0] = dataclasses.replace(segs[0], start=max(first - segs[0].base, 0))
    kept = dataclasses.replace(kept, segments=[dataclasses.replace(seg, index=i) for i, seg in enumerate(segs)],
                               reindex=plan.reindex)
    return kept, DLedgerRestart(rec, before, False, rocks=plan)


def dledger_restart(st: StoreLocation, config: BrokerConfig, progress) -> tuple[StoreLocation, DLedgerRestart]:  # noqa: ANN001
    """A DLedger store as a restart's reput reads it: DLedger's recovery first (where the log ends and
    what stays committed: :func:`store_format.dledger_recovery.recover_dledger`), then
    ``DefaultMessageStore.start``: 4.9.8 dispatches from the commitlog's min offset up to the committed
    position; 5.x starts at ``getConfirmOffset()``, the committed position itself, so nothing is
    dispatched unless ``recheckReputOffsetFromCq=true`` moves it back to the min offset.  A 5.x abnormal
    restart (``abort`` file): ``dledgerRecoverAbnormally`` dispatches every entry from the data file its
    checks start at to the log's end, committed or not (:func:`store_format.dledger_crash.plan_dledger_crash`);
    on 5.5.1 the queues it wrote may be cut (``truncateDirtyLogicFiles``): :func:`apply_cut` then
    removes the files that cut deleted and nothing wrote again and moves the units put back in part, and
    the start's reput may index the last indexed record again (``StoreLocation.reindex``)."""
    assert st.dledger is not None
    rec = recover_dledger(st.fs, st.dledger, config.mappedFileSizeCommitLog)
    before = st.dledger.committed_pos
    progress.emit(f"[rebuild] as a restart: DLedger's recovery (walk from data file {rec.checked_from}) ends the log "
                  f"at {rec.process_offset} ({rec.reason}); committed index {rec.committed_index}, position "
                  f"{rec.committed_pos}")
    if config.is_5x and st.broker_may_be_running():
        crash = plan_dledger_crash(st, config, rec, read_checkpoint(st))
        if crash.walked_nothing:
            progress.emit(f"[rebuild] as a restart after a crash: DLedgerCommitLog.dledgerRecoverAbnormally's message "
                          f"check fails at the first entry of data file {crash.start_file} ({crash.reason}): it "
                          "dispatches nothing, and the start's reput "
                          + (f"dispatches every entry from {crash.reput_from} to {crash.end}"
                             if crash.reput_from < crash.end else
                             f"starts at the committed position {crash.reput_from}, the log's end: nothing")
                          + (" (recheckReputOffsetFromCq=true: the queues are empty, so from the min offset)"
                             if config.recheckReputOffsetFromCq else "")
                          + (", the old commitlog files' records first (a store converted in place)"
                             if crash.from_old_files else ""))
            kept = with_dledger_committed(st, rec.ledger_end_index, crash.end)
            if crash.reput_from >= crash.end:
                kept = dataclasses.replace(kept, segments=[dataclasses.replace(seg, readable=0)
                                                           for seg in kept.segments])
            else:   # from the reput's start, inside its data file when it is the committed position
                segs = [seg for seg in kept.segments if seg.end > crash.start_offset]
                segs[0] = dataclasses.replace(segs[0], start=max(crash.start_offset - segs[0].base, 0))
                kept = dataclasses.replace(kept, segments=[dataclasses.replace(seg, index=i)
                                                           for i, seg in enumerate(segs)])
            return kept, DLedgerRestart(rec, before, crash.reput_from >= crash.end, crash)
        if crash.walk_end >= 0:
            progress.emit(f"[rebuild] as a restart after a crash: DLedgerCommitLog.dledgerRecoverAbnormally's message "
                          f"check ends its walk at {crash.walk_end} ({crash.reason}), inside the log DLedger keeps; "
                          f"the start's reput from {crash.reput_from} "
                          + ("adds nothing (the log's end)" if crash.end <= crash.walk_end else
                             f"dispatches the rest to {crash.end}" if crash.gap is None else
                             f"dispatches from there to {crash.end}: the records from {crash.walk_end} to "
                             f"{crash.reput_from} are never dispatched, and each queue appends the later ones at its "
                             "write position")
                          + (" (it walks the walk's records from there again before the rest: their ext units and "
                             "the last indexed record's keys go before the rest's)" if crash.again else ""))
        progress.emit(f"[rebuild] as a restart after a crash: DLedgerCommitLog.dledgerRecoverAbnormally dispatches "
                      f"every entry from data file {crash.start_file} to {crash.end}, committed or not")
        if crash.cut is not None:
            c = crash.cut
            progress.emit(f"[rebuild] as a restart after a crash: truncateDirtyLogicFiles cuts the queues at the "
                          f"recovery's processOffset {crash.process_offset} (its last file's message sizes, without "
                          f"the entry headers); the start's reput from {c.reput} puts back {c.restored} unit(s), "
                          f"{c.lost_units} stay cut or dropped (past their queue's write position, overwritten, or at "
                          f"or below its max once parsed units went before them) and "
                          f"{len(c.dropped) + len(c.batch_dropped)} queue file(s) stay deleted"
                          + (f"; in {len(c.moves)} queue(s) it puts back only the last cut units, appended at the "
                             "write position over the others (putMessagePositionInfo)" if c.moves else ""))
        if crash.cut is not None and crash.cut.inside_from >= 0:
            at = crash.cut.inside_from
            progress.emit(f"[rebuild] as a restart after a crash: doRecheckReputOffsetFromCq sets the reput at {at} ("
                          + ("processOffset" if at == crash.process_offset else
                             "processOffset - 1, where a batch queue the cut emptied leaves its max"
                             if at == crash.process_offset - 1 else
                             "where a queue the cut left with fillPreBlank units only leaves its max")
                          + ("), inside an old commitlog file (a store converted in place: CommitLog.getData gives its "
                             "bytes to the file's end)" if any(not seg.dledger and seg.base <= at < seg.end
                                                              for seg in st.segments) else "), inside an entry")
                          + (f": DLedgerCommitLog's message check there parses {len(crash.cut.inside_records)} "
                             f"message(s) ("
                             + ', '.join(f'{a} to {b}' if b > a else f'a blank at {a}, its empty request to topic "" '
                                         'queue 0' for a, b in crash.cut.inside_records)
                             + "), which it dispatches after the walk's records, then"
                             if crash.cut.inside_records else ": DLedgerCommitLog's message check there")
                          + f" sends it on to {crash.cut.reput} "
                          "(ReputMessageService.doReput)"
                          + (", from where it walks the records again (their units dropped or the cut ones put "
                             "back, their keys unless below the index's endPhyOffset)"
                             if crash.cut.inside_records and crash.start_offset <= crash.cut.reput < crash.end
                             and crash.cut.reput != crash.walk_end else
                             ", the entry where the walk ended, from where it dispatches the damaged message and the "
                             "rest (the cut units before it stay cut)" if crash.cut.inside_records
                             and crash.cut.reput == crash.walk_end else ""))
        placed = crash.cut.inside_placed if crash.cut is not None else Placed()
        if placed.units:
            progress.emit("[rebuild] as a restart after a crash: of the messages its check parses there, "
                          f"{len(placed.units)} unit(s) go to queues the walk wrote, at the write positions "
                          "the cut left (putMessagePositionInfo, whatever their queue offsets): "
                          + ", ".join(f"{u.topic}/{u.queue_id} at {u.position}" for u in placed.units))
        if placed.whole:
            progress.emit("[rebuild] as a restart after a crash: the queues the walk wrote that the reput touches, "
                          "replayed from the files the cut leaves (putMessagePositionInfo in reput order: the parsed "
                          "units, the cut units dispatched again, the records past the walk's end): "
                          + ", ".join(f"{w.topic}/{w.queue_id} ({len(w.units) + len(w.copies)} unit(s) appended, "
                                      f"{len(w.opened)} file(s) created)" for w in placed.whole))
        if placed.opened:
            progress.emit("[rebuild] as a restart after a crash: for those messages getLastMappedFile creates "
                          + ", ".join(f"{t}/{q}/{cq_file_name(f)}" for t, q, f in placed.opened)
                          + " (a write position at a file's start, or a queue the cut left with no file: "
                          "fillPreBlank units first; zeros but for the units put there, also when the unit is then "
                          "dropped)")
        progress.emit(f"[rebuild] as a restart after a crash: the start's reput begins at {crash.reput_from}"
                      + (f" and indexes the record at {crash.reindex} again" if crash.reindex >= 0 else "")
                      + ("; it puts an ext unit again for each record of an ext queue from there (ConsumeQueueExt.put "
                         "before the unit is dropped or put)" if crash.ext_again and crash.before else
                         f"; it puts {sum(a.count for a in crash.ext_again)} ext unit(s) again, one per record of an "
                         "ext queue (ConsumeQueueExt.put before the unit is dropped or put back)"
                         if crash.ext_again else ""))
        if crash.cut is not None and crash.cut.before_placed.units:
            progress.emit("[rebuild] as a restart after a crash: a queue the cut left fillPreBlank units only appends "
                          "a record of queue offset 0 before the walk's data file (putMessagePositionInfo: no queue "
                          "offset check), then the walk's units by the same rule: "
                          + ", ".join(f"{u.topic}/{u.queue_id} at {u.position}" for u in crash.cut.before_placed.units))
        reset = crash.cut.reset if crash.cut is not None and crash.before else ()
        if crash.before:
            progress.emit(f"[rebuild] as a restart after a crash: the start's reput from {crash.reput_from}, before "
                          f"data file {crash.start_file}, walks the earlier files' records, then the walk's ones again "
                          "(their units dropped: putMessagePositionInfo)"
                          + ("; it goes on in the old commitlog files, the base CommitLog's records (a store converted "
                             "in place: from inside an earlier old file)"
                             if crash.drops_before and crash.from_old_files else
                             "; it begins in the old commitlog files (a store converted in place: "
                             "recheckReputOffsetFromCq=true finds every queue empty, the walk having queued nothing "
                             "or the cut having left no queue file, so from the min offset)"
                             if crash.from_old_files else "")
                          + (f"; {', '.join(f'{t}/{q}' for t, q in crash.drops_before)} drop every record before "
                             "the walk's data file (queue offsets below the write position: putMessagePositionInfo)"
                             + (", but the ones appended above" if crash.cut and crash.cut.before_placed.units else "")
                             if crash.drops_before else "")
                          + (f"; the cut left {', '.join(f'{t}/{q}' for t, q in reset)} with no file (max -1: "
                             "ConsumeQueue.correctMinOffset), which it writes anew from its start" if reset else ""))
        for at, recs in crash.old_parsed:
            progress.emit(f"[rebuild] as a restart after a crash: the start's reput's check refuses the record at {at} "
                          "in an old commitlog file and, 48 bytes further (DLedgerCommitLog.checkMessageAndReturnSize),"
                          f" parses {len(recs)} record(s) ("
                          + ", ".join(f"{a} to {b}" if b > a else f"a blank at {a}, its empty request" for a, b in recs)
                          + "), which it dispatches before it goes on at the next file")
        kept = with_dledger_committed(st, rec.ledger_end_index, crash.end)
        runs = tuple((a, b) for a, b in crash.cut.inside_records if b > a) if crash.cut is not None else ()
        if crash.before:   # the earlier files' records after the walk's, then the walk's again (jump_at)
            assert crash.jump is not None
            kept = jump_at(dataclasses.replace(kept, reindex=-1), *crash.jump, walked_from=crash.start_offset)
            # the reput's pass: the segments after the one the walk's pass goes on from
            reput_pass = next(k for k, seg in enumerate(kept.segments) if seg.resume >= 0) + 1
            if runs:   # first the messages its check parses where it was set (a blank's empty request: inside_blanks)
                kept = then_pieces(kept, runs, st.segments, after=reput_pass - 1)
            if crash.old_parsed:   # an old file's refused record, the records parsed 48 bytes further, the next file
                kept = pieces_at_refusals(kept, crash.old_parsed, st.segments, reput_pass + len(runs))
            if reset:   # from the reput's first piece on, the parsed messages' if any
                kept = dataclasses.replace(kept, queue_reset=reset, reset_from=reput_pass)
            return kept, DLedgerRestart(rec, before, False, crash)
        segs = [seg for seg in kept.segments if seg.base >= crash.start_offset]
        kept = dataclasses.replace(kept, segments=[dataclasses.replace(seg, index=i) for i, seg in enumerate(segs)],
                                   reindex=crash.reindex)
        if crash.jump is not None:   # the reput's records read where it reads them (the walk's again: its keys, ext)
            kept = jump_at(dataclasses.replace(kept, reindex=-1) if crash.again else kept, *crash.jump)
        if runs:   # the messages its check parses where it was set (a blank's empty request: inside_blanks), then the
            # records from where it goes on again when that is inside the walk's range (their keys as the index
            # takes them after those messages', not StoreLocation.reindex)
            assert crash.cut is not None
            if crash.jump is not None:   # after a walk that ended early (crash.again, going on at its end or past
                # it: crash.gap): between the walk's pass and the reput's, which jump_at sent on from walk_end to where
                # it goes on
                assert crash.cut.reput == crash.reput_from, crash
                walk_pass = next(k for k, seg in enumerate(kept.segments) if seg.resume >= 0)
                return then_pieces(kept, runs, st.segments, after=walk_pass), DLedgerRestart(rec, before, False, crash)
            again = crash.cut.reput if crash.start_offset <= crash.cut.reput < crash.end else -1
            kept = then_pieces(dataclasses.replace(kept, reindex=-1) if again >= 0 else kept, runs, st.segments,
                               then=again)
        return kept, DLedgerRestart(rec, before, False, crash)
    # a clean restart: the reput reads up to the committed position (DLedgerCommitLog.getData), which a group of one
    # moves to the log's end once the node leads (QuorumAckChecker: its own end index is the quorum's)
    end = rec.process_offset
    kept = with_dledger_committed(st, rec.ledger_end_index, end)
    if not kept.segments:
        raise StoreError(f"{st.uri}: a restart keeps no commitlog data (DLedger's recovery leaves no entry "
                         f"and there is no old commitlog)")
    behind = rec.committed_pos < end
    if config.is_5x and not config.recheckReputOffsetFromCq:   # getConfirmOffset: the committed position
        reput = rec.committed_pos if rec.committed_pos > 0 else \
            next((seg.base for seg in kept.segments if seg.dledger), end)
    else:   # 4.9.8 start() / doRecheckReputOffsetFromCq: no queue left, so the commitlog's min offset
        reput = kept.segments[0].base
    leads = (" once the node leads (a group of one commits the entries past committed index "
             f"{rec.committed_index}, position {rec.committed_pos}, and DLedgerCommitLog.getData serves the reput up "
             "to the committed position; a multi-node group may truncate them instead)" if behind else "")
    nothing = reput >= end
    if nothing:
        progress.emit("[rebuild] as a restart: a 5.x DLedger broker starts its reput at the committed position "
                      f"{reput} (getConfirmOffset), the log's end, so its restart writes no consume queue or index "
                      "file; recheckReputOffsetFromCq=true makes it dispatch from the commitlog's min offset")
        kept = dataclasses.replace(kept, segments=[dataclasses.replace(seg, readable=0) for seg in kept.segments])
        return kept, DLedgerRestart(rec, before, True)
    progress.emit(f"[rebuild] as a restart: the start's reput from {reput} "
                  + ("(the committed position: getConfirmOffset, 5.x without recheckReputOffsetFromCq) "
                     if config.is_5x and not config.recheckReputOffsetFromCq else "(the commitlog's min offset) ")
                  + f"to the log's end {end}{leads}")
    if reput > kept.segments[0].base:
        segs = [seg for seg in kept.segments if seg.end > reput]
        segs[0] = dataclasses.replace(segs[0], start=max(reput - segs[0].base, 0))
        kept = dataclasses.replace(kept, segments=[dataclasses.replace(seg, index=i) for i, seg in enumerate(segs)])
    return kept, DLedgerRestart(rec, before, False, leads=behind)


def led_dledger_store(st: StoreLocation, config: BrokerConfig) -> StoreLocation | None:
    """``st`` read to the end of the log DLedger's recovery keeps where a clean restart (no ``abort`` file on 5.x, whose
    crash restart is ``dledgerRecoverAbnormally``'s; 4.9.8's is the same either way; file consume queues, or a RocksDB
    consume queue, whose start's reput goes on to the log's end alike) finds entries past the committed one: once the
    node leads, a group of one commits them and the reput goes on to them (:func:`dledger_restart`,
    :func:`rocksdb_dledger_restart`), so ``verify``'s reference for that restart holds their units too; None where it
    reads no further than ``st`` does."""
    if st.dledger is None or (config.is_5x and st.broker_may_be_running()) \
            or not st.dledger.uncommitted:
        return None
    rec = recover_dledger(st.fs, st.dledger, config.mappedFileSizeCommitLog)
    if rec.committed_pos >= rec.process_offset or rec.committed_pos < st.dledger.committed_pos:
        return None
    return with_dledger_committed(st, rec.ledger_end_index, rec.process_offset)


def inside_blanks(recovery: object) -> int:
    """How many blanks' empty requests a 5.x DLedger crash restart's reput set inside an entry dispatches
    (:mod:`store_format.dledger_reput_inside`: records of no bytes among those its check parses), which
    ``pipelines.rebuild`` writes with the concurrent reput's
    (:func:`store_format.concurrent_reput.empty_request_files`: topic "" queue 0's unit, with
    ``enableConsumeQueueExt`` each one's ext unit first, over what an ``--as-restart`` store holds there)."""
    crash = recovery.crash if isinstance(recovery, DLedgerRestart) else None
    return (sum(b == a for a, b in crash.cut.inside_records) if crash is not None and crash.cut is not None else 0) \
        + (sum(b == a for _, recs in crash.old_parsed for a, b in recs) if crash is not None else 0)


def as_restart(st: StoreLocation, config: BrokerConfig, progress) -> tuple[StoreLocation, Restart | DLedgerRestart]:  # noqa: ANN001
    """The store as the reput sees it after the broker's recovery (:func:`store_format.recovery.plan_recovery`):
    segments after the cut deleted, the segment holding it read up to it, and, where the recovery itself
    dispatches (4.9 abnormal, 5.x), nothing before the segment it started from.  A RocksDB consume queue
    store: the record at commitlog offset 0 is dispatched where the recovery dispatches every record it
    accepts (abnormal), else read only (``RecoveryPlan.dispatch_above``); where the start's second reput begins
    before the recovery's first record (a 5.5.1 RocksDB store of more files than ``commitLogRecoverMaxNum``), from
    that reput's start, the keys of the records below the recovery's left out (``Segment.index_from``), after the
    recovery's own walk where it began inside a record and put keys (``RecoveryPlan.walk_first``).  DLedger stores:
    :func:`dledger_restart`; a store converted in place with no DLedger data file yet
    (``StoreLocation.dledger_pending``) is recovered as an ordinary one.  A RocksDB consume queue over a DLedger
    commitlog: :func:`rocksdb_dledger_restart` (with no DLedger data file yet: the ordinary RocksDB restart of the old
    files, as above)."""
    if config.rocksdb_cq and config.enableDLegerCommitLog and st.dledger is not None:
        return rocksdb_dledger_restart(st, config, progress)
    held = _held_queue_files(st) if not config.rocksdb_cq else []
    if held:
        progress.emit(f"[rebuild] as a restart: warning: the store holds {len(held)} consume queue or index file(s) "
                      f"({held[0]}{', ...' if len(held) > 1 else ''}); --as-restart writes what a restart makes of "
                      "it once consumequeue/ and index/ are deleted, as before a rebuild; a broker started on it as it "
                      "is recovers from those files instead (verify predicts that start)")
    if st.dledger is not None:
        return dledger_restart(st, config, progress)
    plan = plan_recovery(st, config)
    if st.dledger_pending:
        progress.emit("[rebuild] as a restart: enableDLegerCommitLog=true and no DLedger data file yet: "
                      "DLedgerCommitLog recovers the old commitlog/ files with the base CommitLog's recovery "
                      "(isInrecoveringOldCommitlog"
                      + ("" if plan.broker_version == "5" else "; 4.9.8: the normal one") + ")")
    progress.emit(f"[rebuild] as a restart: {plan.mode} recovery cuts the commitlog at {plan.process_offset} "
                  f"({plan.reason}); dispatch from {plan.dispatch_from}")
    kept: list[Segment] = []
    # the start's second reput from below the recovery's first record: from there (restart_reput.SecondReput)
    before = 0 <= plan.restart_reput_from < plan.dispatch_from
    first = plan.restart_reput_from if before else plan.dispatch_from
    for seg in st.segments:
        if seg.base > plan.process_offset or seg.end <= first:
            continue
        # 5.5.1 enableAcceleratedRecovery: the abnormal recovery walks its first segment from inside it
        start = max(first - seg.base, 0)
        readable = plan.process_offset - seg.base if seg.base <= plan.process_offset < seg.end else -1
        offset_zero = config.rocksdb_cq and (plan.dispatch_above < 0 or plan.rocksdb_offset_zero)
        kept.append(dataclasses.replace(seg, index=len(kept), readable=readable, start=start,
                                        dispatch_offset_zero=offset_zero,
                                        index_offset_zero=plan.dispatch_above < 0 or plan.index_offset_zero,
                                        index_from=plan.index_from if seg.base < plan.index_from else -1))
    if not kept:
        raise StoreError(f"{st.uri}: a restart keeps no commitlog data (recovery cut at {plan.process_offset})")
    if plan.walk_first >= 0:
        kept = _walk_then_reput(st, plan, kept)
    if plan.restart_reput_from >= 0:
        progress.emit(f"[rebuild] as a restart: the second reput (DefaultMessageStore.start) walks again from "
                      f"{plan.restart_reput_from}" + (f" and indexes the record at {plan.reindex} again"
                                                       if plan.reindex >= 0 else "")
                      + (f", queueing the records below the recovery's first ({plan.dispatch_from})"
                         + (f", none indexed below {plan.index_from}" if plan.index_from >= 0 else ", indexing them")
                         if before else "")
                      + (f", after the keys the recovery's walk from {plan.walk_first} put"
                         if plan.walk_first >= 0 else ""))
    return StoreLocation(st.uri, st.fs, st.root, kept, batch_topics=st.batch_topics, reindex=plan.reindex), \
        Restart(plan)


def _walk_then_reput(st: StoreLocation, plan: RecoveryPlan, reput: list[Segment]) -> list[Segment]:
    """``RecoveryPlan.walk_first``: the 5.5.1 accelerated recovery's walk from inside a record up to the cut, read
    first (its records queue nothing, their keys go first in the index, at their physicalOffset fields), the reading
    then going on at the second reput's start (``Segment.resume``) over ``reput``, that reput's segments."""
    walk = [dataclasses.replace(seg, start=max(plan.walk_first - seg.base, 0), index_from=-1,
                                readable=plan.process_offset - seg.base if seg.base <= plan.process_offset < seg.end
                                else -1)
            for seg in st.segments if seg.end > plan.walk_first and seg.base < plan.process_offset]
    walk[-1] = dataclasses.replace(walk[-1], resume=plan.restart_reput_from)
    return [dataclasses.replace(seg, index=i) for i, seg in enumerate(walk + reput)]


def _held_queue_files(st: StoreLocation) -> list[str]:
    """The consume queue, ext, batch consume queue and index files ``st`` holds (relative paths, sorted), but for
    topic ""'s (files right in ``consumequeue/<queueId>/`` and ``consumequeue_ext/0/``: folders the broker loads as
    topic "<queueId>", which ``store_format.empty_request_held`` and ``store_format.empty_topic_restart`` model)."""
    out = []
    for folder in ("consumequeue", "consumequeue_ext", BCQ_DIR, "index"):
        infos = st.fs.get_file_info(pafs.FileSelector(f"{st.root}/{folder}", allow_not_found=True, recursive=True))
        for info in infos:
            if info.type != pafs.FileType.File:
                continue
            rel = info.path[len(st.root) + 1:]
            if rel.count("/") == 2 and (rel.rsplit("/", 1)[0] in HELD_FOLDERS
                                        or folder == "consumequeue" and is_topic_empty_file(rel.split("/", 1)[1])):
                continue
            out.append(rel)
    return sorted(out)

"""``--as-restart``: the store as the reput sees it after the broker's commitlog recovery."""
from __future__ import annotations

import dataclasses

import pyarrow.fs as pafs

from store_format.anomalies import AnomalyKind
from store_format.batchconsumequeue import BCQ_DIR
from store_format.config import BrokerConfig
from store_format.dledger_crash import DLedgerCrash
from store_format.dledger_recovery import DLedgerRecovery, recover_dledger
from store_format.dledger_rocksdb_restart import RocksDLedgerRestart, plan_rocksdb_dledger_restart
from store_format.empty_request_held import HELD_FOLDERS
from store_format.empty_topic_restart import (
    is_topic_empty_file,
)
from store_format.errors import StoreError
from store_format.recovery import RecoveryPlan, plan_recovery
from store_format.store import (
    Segment,
    StoreLocation,
    jump_at,
    read_from,
    read_nothing,
    with_dledger_committed,
)

from .anomalies import at_offset
from .restart_dledger_crash import crash_restart

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
    _tell_recovery(rec, progress)
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
        return read_nothing(kept), DLedgerRestart(rec, before, True, rocks=plan)
    if plan.jump is not None:   # the walk's pass, then the reput's (the last indexed record's keys again there)
        return jump_at(kept, *plan.jump, walked_from=plan.walk_from), DLedgerRestart(rec, before, False, rocks=plan)
    return dataclasses.replace(read_from(kept, first), reindex=plan.reindex), DLedgerRestart(rec, before, False,
                                                                                             rocks=plan)


def dledger_restart(st: StoreLocation, config: BrokerConfig, progress) -> tuple[StoreLocation, DLedgerRestart]:  # noqa: ANN001
    """A DLedger store as a restart's reput reads it, in the order ``DLedgerCommitLog.recover`` runs: DLedger's
    recovery first (``DLedgerMmapFileStore.recover``: where the log ends and what stays committed,
    :func:`store_format.dledger_recovery.recover_dledger`), then a 5.x abnormal restart (``abort`` file) goes through
    ``dledgerRecoverAbnormally``, ``truncateDirtyLogicFiles`` and the start's reput
    (:func:`pipelines.restart_dledger_crash.crash_restart`), any other through ``DefaultMessageStore.start``'s reput
    alone (:func:`_clean_restart`)."""
    assert st.dledger is not None
    rec = recover_dledger(st.fs, st.dledger, config.mappedFileSizeCommitLog)
    before = st.dledger.committed_pos
    _tell_recovery(rec, progress)
    if config.is_5x and st.broker_may_be_running():
        kept, crash, nothing = crash_restart(st, config, rec, progress)
        return kept, DLedgerRestart(rec, before, nothing, crash)
    return _clean_restart(st, config, rec, before, progress)


def _tell_recovery(rec: DLedgerRecovery, progress) -> None:  # noqa: ANN001
    """``DLedgerMmapFileStore.recover``'s outcome: the data file its walk starts at, where it ends the log, and the
    committed entry it leaves."""
    progress.emit(f"[rebuild] as a restart: DLedger's recovery (walk from data file {rec.checked_from}) ends the log "
                  f"at {rec.process_offset} ({rec.reason}); committed index {rec.committed_index}, position "
                  f"{rec.committed_pos}")


def _clean_restart(st: StoreLocation, config: BrokerConfig, rec: DLedgerRecovery, before: int,
                   progress) -> tuple[StoreLocation, DLedgerRestart]:  # noqa: ANN001
    """A restart without ``dledgerRecoverAbnormally`` (a clean shutdown, or any 4.9.8 start): the reput of
    ``DefaultMessageStore.start`` from :func:`_reput_start` reads up to the committed position
    (``DLedgerCommitLog.getData``), which a group of one moves to the log's end once the node leads
    (``QuorumAckChecker``: its own end index is the quorum's)."""
    end = rec.process_offset
    kept = with_dledger_committed(st, rec.ledger_end_index, end)
    if not kept.segments:
        raise StoreError(f"{st.uri}: a restart keeps no commitlog data (DLedger's recovery leaves no entry "
                         f"and there is no old commitlog)")
    behind = rec.committed_pos < end
    reput = _reput_start(kept, config, rec, end)
    leads = (" once the node leads (a group of one commits the entries past committed index "
             f"{rec.committed_index}, position {rec.committed_pos}, and DLedgerCommitLog.getData serves the reput up "
             "to the committed position; a multi-node group may truncate them instead)" if behind else "")
    if reput >= end:
        progress.emit("[rebuild] as a restart: a 5.x DLedger broker starts its reput at the committed position "
                      f"{reput} (getConfirmOffset), the log's end, so its restart writes no consume queue or index "
                      "file; recheckReputOffsetFromCq=true makes it dispatch from the commitlog's min offset")
        return read_nothing(kept), DLedgerRestart(rec, before, True)
    progress.emit(f"[rebuild] as a restart: the start's reput from {reput} "
                  + ("(the committed position: getConfirmOffset, 5.x without recheckReputOffsetFromCq) "
                     if config.is_5x and not config.recheckReputOffsetFromCq else "(the commitlog's min offset) ")
                  + f"to the log's end {end}{leads}")
    if reput > kept.segments[0].base:
        kept = read_from(kept, reput)
    return kept, DLedgerRestart(rec, before, False, leads=behind)


def _reput_start(kept: StoreLocation, config: BrokerConfig, rec: DLedgerRecovery, end: int) -> int:
    """Where ``DefaultMessageStore.start`` sets the reput of a restart with no queue left: 5.x without
    ``recheckReputOffsetFromCq``, ``getConfirmOffset()``, the committed position (none yet: the first data file's
    start); 4.9.8, or ``doRecheckReputOffsetFromCq`` finding no queue, the commitlog's min offset."""
    if config.is_5x and not config.recheckReputOffsetFromCq:
        return rec.committed_pos if rec.committed_pos > 0 else \
            next((seg.base for seg in kept.segments if seg.dledger), end)
    return kept.segments[0].base


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

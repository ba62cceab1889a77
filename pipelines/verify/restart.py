"""The broker's next start on a store as it is (:class:`~pipelines.verify.report.RestartPrediction`):
``MappedFileQueue.doLoad``'s size check and ``ConsumeQueue.recover`` per queue (with
``ConsumeQueueExt.recover`` / ``truncateByMaxAddress`` on its ext files; ``BatchConsumeQueue.recover``
for a batch consume queue), then ``CommitLog.recoverNormally`` → ``truncateDirtyLogicFiles`` on every
queue and where the reput (4.9.x ``DefaultMessageStore.start``) or the recovery's own dispatch (5.x
``CommitLog.recoverNormally``) starts again; after a crash, ``CommitLog.recoverAbnormally``'s dispatch from
its start segment before ``truncateDirtyLogicFiles`` (:func:`abnormal_dispatch`); ``index/``:
:mod:`pipelines.verify.restart_index`."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping

import numpy as np

from store_format.batchconsumequeue import BCQ_DIR
from store_format.config import BrokerConfig
from store_format.consumequeue_ext import LONG_MIN
from store_format.consumequeue_ext_recovery import ext_position_after_puts, ext_unit_starts, recover_ext, un_decorate
from store_format.consumequeue_recovery import (
    BCQ_RULES,
    CORRECT_MIN_OFFSET_533,
    CQ_RULES,
    EXT_MAX_ADDR,
    TailFiles,
    correct_min_offset_fails,
    last_ext_address,
    recover_consume_queue,
    truncate_dirty_logic_files,
)
from store_format.recovery_dispatch import recovery_dispatch

from .report import QueueRestart, RestartPrediction
from .restart_index import predict_index


@dataclasses.dataclass
class _QueueState:
    """One queue after ``ConsumeQueue.recover`` (or ``BatchConsumeQueue.recover``), kept for the
    store-wide steps."""
    restart: QueueRestart
    tail_files: TailFiles                                   # last remaining files (see consumequeue_recovery)
    missing_offsets: np.ndarray                             # expected units the recovered queue lacks
    expected_files: list[tuple[str, int, int, int]]         # rebuilt files: name, min offset, max offset, units
    ext_file_size: int = 0                                  # > 0: the queue has ext files (enableConsumeQueueExt)
    last_ext_addr: int = 1                                  # last kept unit's ext address (1: none)
    older_files: int = 0                                    # files older than tail_files
    # per rebuilt file of an ext queue, its units holding an ext address: the records the dispatch puts an ext unit
    # for (own units; a light one, ConsumeQueue.multiDispatchLmqQueue's putMessagePositionInfo, puts none)
    expected_ext: dict[str, int] = dataclasses.field(default_factory=dict)
    # an ext queue's ext units on disk below its ext write position after the load (real offsets, walked by their
    # size fields: filter-bitmap units too), and the real offsets the store's units below its write position after
    # ConsumeQueue.recover point at
    ext_starts: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    ext_pointed: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    ext_pointed_by: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))   # their offsets
    ext_moved: int = 0                                      # ext puts after the load that moved the write position
    # a 5.x DLedger crash restart: the own units its walk and reput append that stay (each points at the ext unit put
    # for it); None: not counted (the puts are then taken as pointed at but those moving the write position)
    ext_pointed_new: int | None = None
    ext_kept_below: int | None = None   # the 5.5.1 DLedger crash cut's processOffset: units at or past it not kept
    # a file on disk: the store's load put the queue in its table (a queue only the rebuild holds is not there, and
    # truncateDirtyLogicFiles, which walks that table, leaves it alone unless the recovery's dispatch created it)
    loaded: bool = True


def _rules(layout: str):  # noqa: ANN202
    return BCQ_RULES if layout == BCQ_DIR else CQ_RULES


def recover_queue(queue: str, store_files: list[tuple[str, bytes]], expected_files: list[tuple[str, bytes]],
                  config: BrokerConfig, *, layout: str = "consumequeue",
                  ext_files: list[tuple[str, bytes]] | None = None) -> _QueueState:
    """One queue through ``MappedFileQueue.doLoad`` and ``ConsumeQueue.recover``
    (:func:`store_format.consumequeue_recovery.recover_consume_queue`; ``BatchConsumeQueue.recover``
    for ``layout="batchconsumequeue"``), its ext files (``ext_files``, with ``enableConsumeQueueExt``)
    through ``ConsumeQueueExt.recover`` and ``truncateByMaxAddress``
    (:func:`store_format.consumequeue_ext_recovery.recover_ext`; a queue with no file: not, but its dispatches still
    put ext units), then the rebuilt units the recovered queue lacks (by commitlog offset) and, per rebuilt file of an
    ext queue, its units holding an ext address (own units: ``putMessagePositionInfoWrapper`` puts their ext units; a
    light unit, ``ConsumeQueue.multiDispatchLmqQueue``'s ``putMessagePositionInfo``, none)."""
    rules = _rules(layout)
    file_size = config.mapperFileSizeBatchConsumeQueue if layout == BCQ_DIR else config.cq_file_size
    rec = recover_consume_queue(store_files, file_size=file_size, broker_5x=config.is_5x, rules=rules)
    q = QueueRestart(queue, layout=layout, load_failure=rec.load_failure, recover_stops_at=rec.recover_stops_at,
                     units_dropped_by_recover=rec.units_dropped, files_deleted_by_recover=rec.files_deleted,
                     max_physic_offset=rec.max_physic_offset, write_position=rec.write_position)
    # with enableConsumeQueueExt every dispatch puts ext units (putMessagePositionInfoWrapper), files or not
    ext_size = config.mappedFileSizeConsumeQueueExt if ext_files is not None else 0
    ext_starts = ext_pointed = ext_pointed_by = np.zeros(0, np.int64)
    if ext_files is not None and rec.files_loaded:   # ConsumeQueue.recover touches the ext only then
        ext = recover_ext(ext_files, file_size=ext_size, broker_5x=config.is_5x, max_ext_addr=rec.max_ext_addr)
        why = ext.load_failure or ext.failure
        if why:
            q.load_failure = (f"{q.load_failure}; " if q.load_failure else "") + f"consumequeue_ext: {why}"
        q.ext_write_position, q.ext_files_deleted = ext.write_position, ext.files_deleted
        q.ext_units_dropped, q.ext_note = ext.units_dropped, ext.note
        if not why:
            ext_starts = ext_unit_starts(ext_files, ext.write_position)
            ext_pointed, ext_pointed_by = _pointed(store_files, rec.write_position, file_size)
    exp_summary = []
    missing = []
    expected_ext = {}
    for name, data in sorted(expected_files):
        u = np.frombuffer(data, dtype=rules.dtype, count=len(data) // rules.unit_size)
        msg = rules.is_message(u)
        off = u["commitlogOffset"].astype(np.int64)[msg]
        if len(off):
            exp_summary.append((name, int(off.min()), int(off.max()), len(off)))
            missing.append(off[~np.isin(off, rec.present)])
            if ext_size:
                expected_ext[name] = int(_holds_ext(u[msg]).sum())
    miss = np.concatenate(missing) if missing else np.zeros(0, np.int64)
    return _QueueState(q, rec.tail_files, miss, exp_summary, ext_size, rec.max_ext_addr, rec.files_before_tail,
                       expected_ext, ext_starts, ext_pointed, ext_pointed_by, loaded=bool(store_files))


def _pointed(files: list[tuple[str, bytes]], end: int, file_size: int) -> tuple[np.ndarray, np.ndarray]:
    """The real offsets (``ConsumeQueueExt.unDecorate``) the ext addresses of a consume queue's units below byte
    ``end`` (its write position after ``ConsumeQueue.recover``) point at, and those units' commitlog offsets."""
    real, by = [], []
    for name, data in files:
        base = int(name)
        if base >= end or len(data) != file_size:
            continue
        u = np.frombuffer(data, dtype=CQ_RULES.dtype, count=min(len(data), end - base) // CQ_RULES.unit_size)
        tags = u["tagsCode"].astype(np.int64)
        ext = tags <= EXT_MAX_ADDR
        real.append(tags[ext] - LONG_MIN)
        by.append(u["commitlogOffset"].astype(np.int64)[ext])
    none = np.zeros(0, np.int64)
    return (np.concatenate(real), np.concatenate(by)) if real else (none, none)


def _holds_ext(u: np.ndarray) -> np.ndarray:
    """Which consume queue units hold an ext address (``ConsumeQueueExt.isExtAddr`` of their tagsCode): those of
    the records ``putMessagePositionInfoWrapper`` put an ext unit for."""
    return u["tagsCode"].astype(np.int64) <= EXT_MAX_ADDR


def truncate_queue(state: _QueueState, phy_offset: int) -> None:
    """``ConsumeQueue.truncateDirtyLogicFiles(phyOffset)`` (``BatchConsumeQueue``'s for a batch queue) on
    one queue (:func:`store_format.consumequeue_recovery.truncate_dirty_logic_files`), added to its report."""
    q = state.restart
    rules = _rules(q.layout)
    t = truncate_dirty_logic_files(state.tail_files, phy_offset, unit_size=rules.unit_size,
                                   truncate_from=rules.truncate_from, older_files=state.older_files)
    q.max_physic_offset = t.max_physic_offset
    q.units_truncated += t.units_truncated
    q.files_deleted_by_truncate.extend(t.files_deleted)
    q.write_position = t.write_position
    state.last_ext_addr = last_ext_address(state.tail_files)


def _ext_orphans(state: _QueueState) -> int:
    """Ext units before the queue's ext write position after the recovery that no kept consume queue unit
    points at: the ext units on disk after the load (walked by their size fields, filter-bitmap units too) no unit
    up to the last kept ext address points at (those of units ``truncateDirtyLogicFiles`` cut off: it does not touch
    the ext files; none kept: every one; after a DLedger crash's cut, ``ext_kept_below``, every unit below the cut
    is kept, in a file before the tail files too) and, after an abnormal start, those ``recoverAbnormally``'s
    dispatch put for records the queue already held (each unit it appended points at its own)."""
    q = state.restart
    if not state.ext_file_size or (q.ext_write_position is None and state.ext_pointed_new is None):
        return 0
    last = state.last_ext_addr
    if state.ext_kept_below is not None:   # the cut's write position: a cut unit's bytes past it are not read
        kept = state.ext_pointed_by < state.ext_kept_below   # truncateByMaxAddress: only with no file left, no address
        if last != 1:
            kept &= state.ext_pointed <= un_decorate(last)
    else:
        kept = state.ext_pointed <= un_decorate(last) if last != 1 else np.zeros(len(state.ext_pointed), bool)
    pointed = state.ext_pointed[kept]
    on_disk = int((~np.isin(state.ext_starts, pointed)).sum())
    if state.ext_pointed_new is not None:
        return max(0, on_disk + q.ext_units_appended - state.ext_pointed_new)
    return max(0, on_disk + state.ext_moved - q.units_appended_by_recovery)


def _put_ext(state: _QueueState, records: int, *, moves_write_position: bool) -> None:
    """``records`` more calls of ``ConsumeQueueExt.put`` on an ext queue (one per record handed to
    ``ConsumeQueue.putMessagePositionInfoWrapper``, before its duplicate check); ``moves_write_position``:
    during the recovery (the reported ext write position is the one after ``load()``)."""
    q = state.restart
    if not state.ext_file_size or records <= 0:
        return
    q.ext_units_appended += records
    if moves_write_position:   # the puts create the files up to the new end again
        state.ext_moved += records
        q.ext_write_position = ext_position_after_puts(q.ext_write_position or 0, records, state.ext_file_size)
        q.ext_files_deleted = [n for n in q.ext_files_deleted if int(n) >= q.ext_write_position]


def abnormal_dispatch(state: _QueueState, start: int, end: int,
                      read_expected: Callable[[str, str, str], bytes]) -> None:
    """``CommitLog.recoverAbnormally``'s dispatch (rocketmq-all-4.9.8 and 5.3.3, rocketmq-store 5.5.1) of the
    records in ``[start, end)`` to one queue as its recovery left it, before ``truncateDirtyLogicFiles``
    (:func:`store_format.recovery_dispatch.recovery_dispatch`): the units it appends, the units it no longer
    lacks, and one ext unit per record of an ext queue whose unit there is its own (holds an ext address)."""
    q = state.restart
    rules = _rules(q.layout)
    records, appended = 0, []
    wp, mx = q.write_position, q.max_physic_offset
    for name, lo, hi, _n in state.expected_files:
        if hi < start or lo >= end:
            continue
        data = read_expected(q.layout, q.queue, name)
        u = np.frombuffer(data, dtype=rules.dtype, count=len(data) // rules.unit_size)
        msg = np.flatnonzero(rules.is_message(u))
        u = u[msg]
        d = recovery_dispatch(u["commitlogOffset"], u["size"], int(name) + msg * rules.unit_size, start=start,
                              end=end, max_physic=mx, write_position=wp, unit_size=rules.unit_size,
                              batch=q.layout == BCQ_DIR)
        # one ext unit per record of the queue's own (putMessagePositionInfoWrapper): not for a light unit
        # (ConsumeQueue.multiDispatchLmqQueue calls putMessagePositionInfo alone)
        off = u["commitlogOffset"].astype(np.int64)
        records += int(((off >= start) & (off < end) & _holds_ext(u)).sum()) if state.ext_file_size else d.records
        wp, mx = d.write_position, d.max_physic_offset
        if d.appended.any():
            appended.append(u["commitlogOffset"][d.appended].astype(np.int64))
    if appended:
        got = np.concatenate(appended)
        q.units_appended_by_recovery = len(got)
        q.write_position, q.max_physic_offset = wp, mx
        state.missing_offsets = state.missing_offsets[~np.isin(state.missing_offsets, got)]
    _put_ext(state, records, moves_write_position=True)


def _dispatch_reaches(states: list[_QueueState], start: int, end: int,
                      read_expected: Callable[[str, str, str], bytes]) -> bool:
    """Whether the recovery's dispatch of the records from ``start`` leaves some queue's max physical offset at
    ``end`` (the commitlog's end): a rebuilt unit of such a record whose ``getMaxPhysicOffset`` reaches it (a unit the
    dispatch skips: its queue's max already does).  5.5.1 ``ConsumeQueueStore.truncateDirty``, which
    ``truncateDirtyLogicFiles`` calls after that dispatch, cuts the queues only then."""
    for s in states:
        rules = _rules(s.restart.layout)
        for name, _lo, hi, _n in s.expected_files:
            if hi < start:
                continue
            data = read_expected(s.restart.layout, s.restart.queue, name)
            u = np.frombuffer(data, dtype=rules.dtype, count=len(data) // rules.unit_size)
            u = u[rules.is_message(u)]
            if ((u["commitlogOffset"].astype(np.int64) >= start) & (rules.max_physic(u) >= end)).any():
                return True
    return False


def predict_restart(states: list[_QueueState], *, config: BrokerConfig, commitlog_min: int, commitlog_end: int,
                    clean_shutdown: bool, store_index: list[tuple[str, int, dict]],
                    expected_index: Callable[[], Iterator[bytes]], checkpoint_index_ts: int | None,
                    read_expected: Callable[[str, str, str], bytes], truncate_at: int | None = None,
                    reput_from_queues: bool | None = None, second_reput: bool = False,
                    dispatch_from: int | None = None, cut_lost: dict[str, np.ndarray] | None = None,
                    cut_at: int | None = None,
                    reindex_from: int | None = None, abnormal_from: int | None = None,
                    ext_again_from: int | None = None, skip: tuple[int, int] | None = None,
                    again_to: int | None = None, parsed_keys: tuple[int, ...] | None = None,
                    parsed_then: int | None = None, walk_end: int | None = None, walk_from: int | None = None,
                    old_runs: tuple[tuple[int, int, int], ...] = (),
                    ext_parsed: dict[str, int] | None = None, ext_parsed_kept: dict[str, int] | None = None,
                    cut_emptied: frozenset[str] | None = None,
                    ext_puts: dict[str, int] | None = None, ext_put_back: dict[str, int] | None = None,
                    ext_not_predicted: dict[str, str] | None = None,
                    reput_at: int | None = None,
                    after_load: Mapping[str, tuple[int, int]] | None = None) -> RestartPrediction:
    """The store-wide steps of a start, after each queue's :func:`recover_queue`.

    * ``CommitLog.recoverNormally``: when the queues' max physical offset is at or past the
      commitlog's end, ``truncateDirtyLogicFiles(end)`` runs on every queue (5.5.1 calls it always, and its
      ``ConsumeQueueStore.truncateDirty`` cuts when the max after the recovery's dispatch is: :func:`_dispatch_reaches`;
      a cut keeps a last file's first unit, zeros too); 5.3.3: a consume queue whose last file holds no unit then
      makes the load fail (:func:`store_format.consumequeue_recovery.correct_min_offset_fails`, the queue's
      ``load_failure``);
    * 4.9.x ``DefaultMessageStore.start``: the reput starts at max(commitlog min offset, max
      physical offset over the queues after truncation) and dispatches everything from there;
    * 5.x ``CommitLog.recoverNormally`` dispatches, while it recovers, the records whose offset is
      strictly greater than the queues' max physical offset (computed before the truncation); the
      reput then starts at the commitlog's end (``recheckReputOffsetFromCq`` defaults to false).
      A record starting exactly at that offset (the one after the last unit) is not dispatched;
    * a dispatched unit is appended unless ``offset + size <= maxPhysicOffset`` of its queue
      (``ConsumeQueue.putMessagePositionInfo``), for a batch queue unless ``offset <=
      maxMsgPhyOffsetInCommitLog`` (``BatchConsumeQueue.putBatchMessagePositionInfo``);
      ``IndexService.buildIndex`` skips records below the last index file's endPhyOffset.
    Batch queues take part in every step: their ``getMaxPhysicOffset`` (the start of their last unit)
    counts in the queues' max physical offset (``ConsumeQueueStore.getMaxPhyOffsetInConsumeQueue``).
    ``commitlog_end`` is where the commitlog ends after the broker's recovery (nothing at or after it is
    dispatched).  Units a queue lacks (compared by commitlog offset with the rebuild) and that fall
    outside the dispatched range, or inside it but skipped by the dispatch, are never written again: they are
    reported as lost.  For a queue with
    ext files, the ext units before the ext write position that no kept unit points at are counted
    (``ext_units_orphaned``, :func:`_ext_orphans`): the units dispatched again get their ext units after them; after
    a DLedger crash (``dispatch_from``) also the walk's and the reput's puts but one per own unit they leave in the
    queue (an own unit of the rebuild they append or put back, a parsed message's), and the store's units the 5.5.1
    cut takes (at or past ``cut_at``: past the write position, which bounds what the broker reads) point at none.

    A DLedger store (``DLedgerCommitLog.recover``) passes ``truncate_at``, the end of the log DLedger's
    recovery keeps (``getMaxWrotePosition``, which the queues are truncated against instead of
    ``commitlog_end``), and ``reput_from_queues``: True for 4.9.8's ``start()`` or 5.x with
    ``recheckReputOffsetFromCq`` (the reput from the queues' max physical offset), False for 5.x
    without it (no dispatch in the recovery, the reput at the committed position: nothing again; ``reput_at``, that
    position, where a clean restart finds entries past it, which the node commits once it leads: the reput goes on
    from there to ``commitlog_end``, the log's end).

    ``second_reput`` (5.x with ``recheckReputOffsetFromCq=true``): ``DefaultMessageStore.start`` then
    (``doRecheckReputOffsetFromCq``, 5.3.3 and 5.5.1) walks again from the largest ``getMaxPhysicOffset``
    over the queues as the recovery's dispatch left them (a batch queue's: the start of its last unit), at
    least the commitlog's min offset: the units a queue still lacks from there on are appended (a record
    starting exactly at the queues' max, which the recovery's dispatch skips, is one), and
    ``IndexService.buildIndex`` puts the keys of the records at or after both that offset and the last
    index file's ``endPhyOffset`` (the last indexed record a second time).

    A 5.x DLedger store after a crash passes ``dispatch_from`` instead
    (:func:`store_format.dledger_crash.plan_dledger_crash`): ``dledgerRecoverAbnormally`` puts every
    message from there (inclusive) to ``commitlog_end``, no queue is truncated against the log's end, and
    the start's reput adds nothing but, on 5.5.1, what ``truncateDirtyLogicFiles`` at the walk's short
    ``processOffset`` (``cut_at``) cut and it puts back: ``cut_lost``, per queue (``topic/queueId``), the
    commitlog offsets of the units that cut leaves out for good
    (:class:`store_format.dledger_crash_cut.QueueCut`), are lost, a queue's own units among them too;
    every other unit at or past ``cut_at`` is written again (the cut took it,
    the reput puts it back); ``reindex_from``: the reput starts there and indexes the last indexed record
    again; ``ext_again_from``: where that reput starts, which puts an ext unit again for each record of an
    ext queue from there (:class:`store_format.dledger_crash_cut.ExtAgain`); ``skip``: the records no one
    dispatches (:attr:`store_format.dledger_crash.DLedgerCrash.gap`), whose units a queue lacks stay lost (and those
    it holds at or past ``cut_at`` too: the cut takes them) and whose keys are not put; ``again_to``: the reput
    walks the records from its start to there again, then goes on past the records the recovery's walk left
    (:attr:`store_format.dledger_crash.DLedgerCrash.again`): the ext units put again are those of the records
    below it, the keys put again those of ``reindex_from`` alone.  ``parsed_keys`` (the start's reput set inside an
    entry parses messages there: :attr:`store_format.dledger_crash.DLedgerCrash.inside_keys`, the PHYSICALOFFSET
    fields of their keys in put order) and ``parsed_then`` (where that reput walks on from, None: past the log's
    end): the keys are those of the walk, then the parsed ones ``buildIndex`` takes, then those of the records from
    ``parsed_then`` at or above the ``endPhyOffset`` they left (:func:`predict_index`), instead of
    ``reindex_from``'s; ``walk_end``: where the recovery's walk ended early (its keys are those below it).
    ``walk_from``: where the walk's keys begin (a reput from before it, ``dispatch_from``: its own records after,
    ``IndexService.buildIndex`` skipping those below the ``endPhyOffset`` the walk left: with ``parsed_keys`` its
    ``parsed_then``, else ``reindex_from``'s second walk).
    ``old_runs``: with ``parsed_keys``, a reput from a converted store's old files whose check refuses records there
    and parses messages 48 bytes further (:attr:`store_format.dledger_crash.DLedgerCrash.old_parsed_runs`): the last
    of ``parsed_keys`` are theirs, put in reput order among the old records' (:func:`predict_index`).
    With ``abnormal_from``, ``parsed_keys`` are those of a 5.5.1 accelerated walk from inside a record
    (``RecoveryPlan.walk_keys``; ``walk_end`` its start: the rebuild holds none of its records).
    ``ext_parsed``: per ext queue, the ext units ``putMessagePositionInfoWrapper`` puts for those parsed messages'
    own units (:attr:`store_format.dledger_inside_state.Placed.ext_put`; no rebuilt queue holds their units), added
    to its ext units appended (a queue no file of the store or the rebuild holds, one those messages alone go to: a
    queue of its own in the prediction); ``ext_parsed_kept``: per queue, those parsed own units
    ``putMessagePositionInfo`` appends (the others' ext units no unit points at); ``cut_emptied``: the queues whose
    files ``truncateDirtyLogicFiles`` at ``cut_at`` deletes (every first unit at or past it): no kept unit points at
    an ext unit, so every one before the ext write position ``ConsumeQueue.recover`` left counts as orphaned (the
    cut's own ``truncateByMaxAddress`` then gets no address and leaves the ext files alone).  ``ext_puts``: per ext
    queue the DLedger cut's reput walks (5.5.1, 5.3.3) after a walk to the log's end
    (:attr:`store_format.dledger_crash.DLedgerCrash.walk_end` < 0), the ext units the walk and the reput put as the
    crash plan counts them from the commitlog (:class:`store_format.dledger_crash_cut.ExtAgain`'s ``before +
    count``: one per own record handed to ``putMessagePositionInfoWrapper``, its unit dropped or not, past the
    rebuild's end too), instead of the rebuilt units holding an ext address; ``ext_put_back``: per such queue whose
    put-backs the plan places by position, the own units that reput puts back (each points at the ext unit put for it),
    instead of the rebuilt units at or past ``cut_at`` (which lack the records past the rebuild's end:
    :mod:`pipelines.verify.ext_reput`); ``ext_not_predicted``: per queue, why its ext units orphaned are not predicted
    (0, and a note).  ``after_load``: per queue, its max physical offset and write position once the store's load
    has run a 5.x DLedger crash restart's walk and cut (:attr:`store_format.dledger_crash_cut.QueueCut.loaded`), which
    the queue's report gives instead of ``ConsumeQueue.recover``'s (the queue before the start's reput, as for every
    other restart).

    ``abnormal_from`` (an ``abort`` file; the commitlog's recovery, not DLedger's): where
    ``CommitLog.recoverAbnormally``'s walk starts (its start segment, :func:`store_format.recovery.plan_recovery`'s
    ``dispatch_from``: inside it with 5.5.1 ``enableAcceleratedRecovery``).  It dispatches every record from
    there to ``commitlog_end`` against the queues as
    their recovery left them (:func:`abnormal_dispatch`: units appended, ext units put), *then*
    ``truncateDirtyLogicFiles`` runs (when the max physical offset the queues had before the dispatch is at
    or past the end; 5.5.1: the max after the dispatch) on the queues the dispatch appended nothing to (what it
    appended lies before the end); ``IndexService.buildIndex`` puts the keys of the records from there.  Afterwards the
    4.9.x reput starts at the queues' max physical offset (the records from there again: their keys from the
    last indexed record on, an ext unit each on an ext queue) and the 5.x one at the commitlog's end.
    """
    is5 = config.is_5x
    p = RestartPrediction("5" if is5 else "4", clean_shutdown, commitlog_min, commitlog_end)
    p.start_fails = any(s.restart.load_failure for s in states)
    p.max_physic_offset_in_queues = max((s.restart.max_physic_offset for s in states), default=-1)
    cut = commitlog_end if truncate_at is None else truncate_at
    # rocketmq-store 5.5.1 (CommitLog.recoverNormally/recoverAbnormally, since CombineConsumeQueue) calls it
    # whatever the queues' max physical offset
    always = config.brokerVersion == "5.5" and truncate_at is None
    abnormal = abnormal_from is not None and dispatch_from is None and truncate_at is None
    if abnormal:
        assert abnormal_from is not None
        p.abnormal_dispatch_from = abnormal_from
        for s in states:
            abnormal_dispatch(s, abnormal_from, commitlog_end, read_expected)
            p.units_appended_by_recovery += s.restart.units_appended_by_recovery
    # 5.3.3 correctMinOffset over a consume queue whose last file ConsumeQueue.recover left empty, unless the
    # truncation (which keeps a last file's first unit, zeros too) or the recovery's dispatch writes there
    empty_last = {id(s) for s in states if config.brokerVersion == "5" and dispatch_from is None and s.loaded
                  and s.restart.layout != BCQ_DIR and s.tail_files and not s.restart.load_failure
                  and correct_min_offset_fails(int(s.tail_files[-1][0]),
                                               s.restart.write_position == int(s.tail_files[-1][0]))}
    p.truncate_dirty_logic_files = dispatch_from is None and (always or p.max_physic_offset_in_queues >= cut)
    cuts = p.truncate_dirty_logic_files
    if always and (abnormal or reput_from_queues is None):   # 5.5.1 ConsumeQueueStore.truncateDirty: the max now
        start = abnormal_from if abnormal and abnormal_from is not None else p.max_physic_offset_in_queues + 1
        cuts = max((s.restart.max_physic_offset for s in states), default=-1) >= cut \
            or _dispatch_reaches(states, start, cut, read_expected)
    if cuts:
        for s in states:
            if not s.restart.units_appended_by_recovery and s.loaded:
                truncate_queue(s, cut)
                empty_last.discard(id(s))
    recovery_dispatches = is5 and reput_from_queues is None and dispatch_from is None and not abnormal
    if dispatch_from is not None:
        p.reput_from, p.reput_from_inclusive = dispatch_from, True
    elif recovery_dispatches:
        p.reput_from, p.reput_from_inclusive = p.max_physic_offset_in_queues, False
    elif reput_at is not None:   # 5.x DLedger: getConfirmOffset, the committed position before the node leads
        p.reput_from, p.reput_from_inclusive = reput_at, True
    elif reput_from_queues is False or (abnormal and is5):   # 5.x: the reput at getConfirmOffset
        p.reput_from = commitlog_end
    else:
        after = max((s.restart.max_physic_offset for s in states), default=-1)
        p.reput_from = max(after, commitlog_min, 0)
    first = p.reput_from if p.reput_from_inclusive else p.reput_from + 1
    p.tail_bytes = max(0, commitlog_end - max(first, commitlog_min))

    def in_tail(off: np.ndarray) -> np.ndarray:
        tail = (off >= first) & (off < commitlog_end)
        return tail & ~((off >= skip[0]) & (off < skip[1])) if skip is not None else tail

    top = max((s.restart.max_physic_offset for s in states), default=-1)   # the queues' max after the dispatch
    upto = np.iinfo(np.int64).max if again_to is None else again_to
    none = np.zeros(0, np.int64)
    for s in states:
        q = s.restart
        cut_away = (cut_lost or {}).get(q.queue, none)
        rules = _rules(q.layout)
        n_tail = n_cut = n_records = n_again = n_own_put = n_own_cut = 0
        for name, lo, hi, n in s.expected_files:
            if hi < first or lo >= commitlog_end:
                continue
            if lo >= first and hi < commitlog_end and lo > q.max_physic_offset and not second_reput \
                    and (skip is None or hi < skip[0] or lo >= skip[1]) \
                    and not ((cut_away >= lo) & (cut_away <= hi)).any() \
                    and (ext_again_from is None or not lo < ext_again_from <= hi) \
                    and (again_to is None or not lo < again_to <= hi) \
                    and not (s.ext_file_size and cut_at is not None and lo < cut_at <= hi):
                n_tail += n
                n_records += s.expected_ext.get(name, 0)
                n_own_put += s.expected_ext.get(name, 0)
                n_own_cut += s.expected_ext.get(name, 0) if cut_at is not None and lo >= cut_at else 0
                n_again += s.expected_ext.get(name, 0) if ext_again_from is not None and lo >= ext_again_from \
                    and hi < upto else 0
                continue
            data = read_expected(q.layout, q.queue, name)
            u = np.frombuffer(data, dtype=rules.dtype, count=len(data) // rules.unit_size)
            u = u[rules.is_message(u)]
            off, size = u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64)
            tail = in_tail(off)
            lost_here = tail & np.isin(off, cut_away)
            put = tail & rules.appended(off, size, q.max_physic_offset) & ~lost_here
            if cut_at is not None:   # the units the cut took and the reput put back, a queue's own ones too
                put |= tail & (off >= cut_at) & ~lost_here
            if skip is not None and cut_at is not None:   # held units of the records no one dispatches, cut
                n_cut += int(((off >= max(skip[0], cut_at, first)) & (off < min(skip[1], commitlog_end))
                              & ~np.isin(off, s.missing_offsets)).sum())
            n_cut += int(lost_here.sum())
            # units the queue lacks that the dispatch skips (at or below its max): never written
            n_cut += int((tail & ~put & ~lost_here & np.isin(off, s.missing_offsets)).sum())
            n_tail += int(put.sum())
            if s.ext_file_size:   # one ext unit per record of the queue's own: those whose units hold an ext address
                own = _holds_ext(u)
                n_records += int((in_tail(off) & own).sum())
                n_own_put += int((put & own).sum())
                if cut_at is not None:   # the own units the reput puts back
                    n_own_cut += int((put & own & (off >= cut_at)).sum())
                if ext_again_from is not None:
                    n_again += int((in_tail(off) & own & (off >= ext_again_from) & (off < upto)).sum())
            if put.any():
                top = max(top, int(rules.max_physic(u[put]).max()))
        q.units_dispatched_again = n_tail
        q.units_lost = n_cut
        puts = (ext_puts or {}).get(q.queue)   # the crash plan's count, from the commitlog (dropped units too)
        _put_ext(s, n_records + n_again + (ext_parsed or {}).get(q.queue, 0) if puts is None else puts,
                 moves_write_position=recovery_dispatches)
        if dispatch_from is not None:   # a DLedger crash restart: the ext units its puts left pointed at
            parsed = (ext_parsed or {}).get(q.queue, 0)
            back = (ext_put_back or {}).get(q.queue)   # the plan's put-backs, records past the rebuild's end too
            # no cut: the plan's figure is every own unit the walk appended (the rebuild lacks those past its end)
            s.ext_pointed_new = (n_own_put if back is None else back if cut_at is None
                                 else n_own_put - n_own_cut + back) \
                + (ext_parsed_kept or {}).get(q.queue, parsed)
            s.ext_kept_below = cut_at
        if cut_emptied is not None and q.queue in cut_emptied:
            s.last_ext_addr = 1   # no unit of it kept
    held = {s.restart.queue for s in states}
    for queue, n in sorted((ext_parsed or {}).items()):   # a queue only parsed messages go to: no state, its puts
        if queue not in held and n > 0:
            q = QueueRestart(queue, ext_units_appended=n)
            p.ext_units_appended += n
            p.queues.append(q)
    again = max(top, commitlog_min, 0) if second_reput else commitlog_end
    for s in states:
        q = s.restart
        if after_load is not None and q.queue in after_load:   # reported as the load left it: after the walk and cut
            q.max_physic_offset, q.write_position = after_load[q.queue]
        if id(s) in empty_last and not q.units_appended_by_recovery \
                and not (recovery_dispatches and q.units_dispatched_again):
            q.load_failure = (f"its last consume queue file ({s.tail_files[-1][0]}) holds no unit after "
                              f"ConsumeQueue.recover: {CORRECT_MIN_OFFSET_533}")
            p.start_fails = True
        left = s.missing_offsets[~in_tail(s.missing_offsets)]
        later = (left >= again) & (left < commitlog_end)   # the second reput appends them
        q.units_dispatched_again += int(later.sum())
        q.units_lost += int((~later).sum())
        why = (ext_not_predicted or {}).get(q.queue)
        q.ext_units_orphaned = 0 if why else _ext_orphans(s)
        if why:
            p.notes.append(f"ext units orphaned of {q.queue} not predicted: {why}")
        p.units_dropped_by_recover += q.units_dropped_by_recover
        p.units_truncated += q.units_truncated
        p.units_dispatched_again += q.units_dispatched_again
        p.units_lost += q.units_lost
        p.ext_units_dropped += q.ext_units_dropped
        p.ext_units_orphaned += q.ext_units_orphaned
        p.ext_units_appended += q.ext_units_appended
        if (q.load_failure or q.units_dropped_by_recover or q.units_truncated or q.units_lost
                or q.units_dispatched_again or q.files_deleted_by_recover or q.files_deleted_by_truncate
                or q.recover_stops_at is not None or q.ext_units_dropped or q.ext_units_orphaned
                or q.ext_files_deleted or q.ext_units_appended or q.units_appended_by_recovery):
            p.queues.append(q)
    if abnormal:   # recoverAbnormally's dispatch, then a 4.9.x reput from the queues' max (or the 5.x second one)
        assert abnormal_from is not None
        then = again if second_reput else p.reput_from if not is5 and p.reput_from < commitlog_end else None
        predict_index(p, abnormal_from, config=config, store_index=store_index, expected_index=expected_index,
                      checkpoint_index_ts=checkpoint_index_ts, clean_shutdown=clean_shutdown, end=commitlog_end,
                      parsed_keys=parsed_keys, parsed_then=parsed_then, walk_end=walk_end, accelerated=True,
                      second_reput_from=then, second_reput_note=None if second_reput else (
                          f"4.9.x DefaultMessageStore.start: the reput walks again from {then} (the queues' max "
                          "physical offset after the recovery), indexing the last indexed record a second time "
                          "when it lies there"))
    else:
        predict_index(p, first if walk_from is None else walk_from, config=config, store_index=store_index,
                      expected_index=expected_index, checkpoint_index_ts=checkpoint_index_ts,
                      clean_shutdown=clean_shutdown, end=commitlog_end
                      if second_reput or reindex_from is not None or parsed_keys is not None else None,
                      second_reput_from=again if second_reput else reindex_from, skip=skip, second_end=again_to,
                      parsed_keys=parsed_keys, parsed_then=parsed_then, walk_end=walk_end, old_runs=old_runs)
    if recovery_dispatches:
        p.notes.append("5.x CommitLog.recoverNormally dispatches only records with commitLogOffset > the queues' max "
                       "physical offset (offset + size of their last unit), and the reput then starts at the "
                       "commitlog's end (getConfirmOffset), so a record starting exactly there is never dispatched "
                       "again: its units count as lost")
    if not clean_shutdown and dispatch_from is None and not abnormal:
        p.notes.append("abort file present: the broker runs its abnormal recovery, which re-dispatches from the "
                       "segment the checkpoint points at (not modelled here beyond the index files it deletes)")
    if truncate_at is None:
        p.notes.append("the commitlog end is where the rebuild's walk ended; the broker's own recovery (CRC checks of "
                       "the last segments) is not emulated")
    return p

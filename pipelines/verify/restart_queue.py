"""One queue at the broker's next start on a store as it is, for :func:`pipelines.verify.restart.predict_restart`:
``MappedFileQueue.doLoad``'s size check and ``ConsumeQueue.recover`` (with ``ConsumeQueueExt.recover`` /
``truncateByMaxAddress`` on its ext files; ``BatchConsumeQueue.recover`` for a batch consume queue:
:func:`recover_queue`), ``ConsumeQueue.truncateDirtyLogicFiles`` (:func:`truncate_queue`),
``CommitLog.recoverAbnormally``'s dispatch (:func:`abnormal_dispatch`), the ext units ``ConsumeQueueExt.put`` adds
(:func:`put_ext`) and those no kept unit points at (:func:`ext_orphans`)."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from store_format.batchconsumequeue import BCQ_DIR
from store_format.config import BrokerConfig
from store_format.consumequeue_ext import LONG_MIN
from store_format.consumequeue_ext_recovery import ext_position_after_puts, ext_unit_starts, recover_ext, un_decorate
from store_format.consumequeue_recovery import (
    BCQ_RULES,
    CQ_RULES,
    EXT_MAX_ADDR,
    TailFiles,
    last_ext_address,
    no_file_max,
    recover_consume_queue,
    truncate_dirty_logic_files,
)
from store_format.recovery_dispatch import recovery_dispatch

from .report import QueueRestart

__all__ = ["QueueState", "abnormal_dispatch", "ext_orphans", "holds_ext", "put_ext", "queue_rules", "recover_queue",
           "truncate_queue"]


@dataclasses.dataclass
class QueueState:
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


def queue_rules(layout: str):  # noqa: ANN202
    return BCQ_RULES if layout == BCQ_DIR else CQ_RULES


def recover_queue(queue: str, store_files: list[tuple[str, bytes]], expected_files: list[tuple[str, bytes]],
                  config: BrokerConfig, *, layout: str = "consumequeue",
                  ext_files: list[tuple[str, bytes]] | None = None) -> QueueState:
    """One queue through ``MappedFileQueue.doLoad`` and ``ConsumeQueue.recover``
    (:func:`store_format.consumequeue_recovery.recover_consume_queue`; ``BatchConsumeQueue.recover``
    for ``layout="batchconsumequeue"``), its ext files (``ext_files``, with ``enableConsumeQueueExt``)
    through ``ConsumeQueueExt.recover`` and ``truncateByMaxAddress``
    (:func:`store_format.consumequeue_ext_recovery.recover_ext`; a queue with no file: not, but its dispatches still
    put ext units), then the rebuilt units the recovered queue lacks (by commitlog offset) and, per rebuilt file of an
    ext queue, its units holding an ext address (own units: ``putMessagePositionInfoWrapper`` puts their ext units; a
    light unit, ``ConsumeQueue.multiDispatchLmqQueue``'s ``putMessagePositionInfo``, none)."""
    rules = queue_rules(layout)
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
                expected_ext[name] = int(holds_ext(u[msg]).sum())
    miss = np.concatenate(missing) if missing else np.zeros(0, np.int64)
    return QueueState(q, rec.tail_files, miss, exp_summary, ext_size, rec.max_ext_addr, rec.files_before_tail,
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


def holds_ext(u: np.ndarray) -> np.ndarray:
    """Which consume queue units hold an ext address (``ConsumeQueueExt.isExtAddr`` of their tagsCode): those of
    the records ``putMessagePositionInfoWrapper`` put an ext unit for."""
    return u["tagsCode"].astype(np.int64) <= EXT_MAX_ADDR


def truncate_queue(state: QueueState, phy_offset: int, *, no_file_max_reset: bool) -> None:
    """``ConsumeQueue.truncateDirtyLogicFiles(phyOffset)`` (``BatchConsumeQueue``'s for a batch queue) on
    one queue (:func:`store_format.consumequeue_recovery.truncate_dirty_logic_files`), added to its report; a queue
    it leaves with no file gets the max ``recoverTopicQueueTable`` leaves it
    (:func:`store_format.consumequeue_recovery.no_file_max`; ``no_file_max_reset``: the line's
    :func:`store_format.consumequeue_recovery.no_file_resets_max`, 5.5.1's -1 for a consume queue)."""
    q = state.restart
    rules = queue_rules(q.layout)
    t = truncate_dirty_logic_files(state.tail_files, phy_offset, unit_size=rules.unit_size,
                                   truncate_from=rules.truncate_from, older_files=state.older_files)
    q.max_physic_offset = t.max_physic_offset
    q.units_truncated += t.units_truncated
    q.files_deleted_by_truncate.extend(t.files_deleted)
    q.write_position = t.write_position
    if not state.tail_files and not state.older_files:
        q.max_physic_offset = no_file_max(t.max_physic_offset, resets=no_file_max_reset, batch=q.layout == BCQ_DIR)
    state.last_ext_addr = last_ext_address(state.tail_files)


def ext_orphans(state: QueueState) -> int:
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


def put_ext(state: QueueState, records: int, *, moves_write_position: bool) -> None:
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


def abnormal_dispatch(state: QueueState, start: int, end: int,
                      read_expected: Callable[[str, str, str], bytes], walked: np.ndarray | None = None) -> None:
    """``CommitLog.recoverAbnormally``'s dispatch (rocketmq-all-4.9.8 and 5.3.3, rocketmq-store 5.5.1) of the
    records in ``[start, end)`` to one queue as its recovery left it, before ``truncateDirtyLogicFiles``
    (:func:`store_format.recovery_dispatch.recovery_dispatch`): the units it appends, the units it no longer
    lacks, and one ext unit per record of an ext queue whose unit there is its own (holds an ext address).
    The units are the expected files' (the reput's), or with ``walked`` every unit the walk hands the queue (rows
    of commitlog offset, size, queue offset, own: :func:`store_format.restart_reput.walked_file_queue_units`; with
    multi-dispatch a queue's own and light units need not come in queue offset order, and units the reput dropped
    may be appended now)."""
    q = state.restart
    rules = queue_rules(q.layout)
    records, appended = 0, []
    wp, mx = q.write_position, q.max_physic_offset
    if walked is not None:
        d = recovery_dispatch(walked[:, 0], walked[:, 1], walked[:, 2] * rules.unit_size, start=start, end=end,
                              max_physic=mx, write_position=wp, unit_size=rules.unit_size, batch=False,
                              loaded=state.loaded)
        # one ext unit per record of the queue's own (a light unit puts none: multiDispatchLmqQueue)
        records = int(walked[:, 3].astype(bool).sum()) if state.ext_file_size else d.records
        wp, mx = d.write_position, d.max_physic_offset
        if d.appended.any():
            appended.append(walked[d.appended, 0].astype(np.int64))
    for name, lo, hi, _n in state.expected_files if walked is None else ():
        if hi < start or lo >= end:
            continue
        data = read_expected(q.layout, q.queue, name)
        u = np.frombuffer(data, dtype=rules.dtype, count=len(data) // rules.unit_size)
        msg = np.flatnonzero(rules.is_message(u))
        u = u[msg]
        d = recovery_dispatch(u["commitlogOffset"], u["size"], int(name) + msg * rules.unit_size, start=start,
                              end=end, max_physic=mx, write_position=wp, unit_size=rules.unit_size,
                              batch=q.layout == BCQ_DIR, loaded=state.loaded)
        # one ext unit per record of the queue's own (putMessagePositionInfoWrapper): not for a light unit
        # (ConsumeQueue.multiDispatchLmqQueue calls putMessagePositionInfo alone)
        off = u["commitlogOffset"].astype(np.int64)
        records += int(((off >= start) & (off < end) & holds_ext(u)).sum()) if state.ext_file_size else d.records
        wp, mx = d.write_position, d.max_physic_offset
        if d.appended.any():
            appended.append(u["commitlogOffset"][d.appended].astype(np.int64))
    if appended:
        got = np.concatenate(appended)
        q.units_appended_by_recovery = len(got)
        q.write_position, q.max_physic_offset = wp, mx
        state.missing_offsets = state.missing_offsets[~np.isin(state.missing_offsets, got)]
    put_ext(state, records, moves_write_position=True)

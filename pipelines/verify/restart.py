"""The broker's next start on a store as it is (:class:`~pipelines.verify.report.RestartPrediction`):
``MappedFileQueue.doLoad``'s size check and ``ConsumeQueue.recover`` per queue, then
``CommitLog.recoverNormally`` → ``ConsumeQueue.truncateDirtyLogicFiles`` and where the reput
(4.9.x ``DefaultMessageStore.start``) or the recovery's own dispatch (5.x
``CommitLog.recoverNormally``) starts again."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import numpy as np

from store_format.config import BrokerConfig
from store_format.consumequeue_recovery import (
    TailFiles,
    recover_consume_queue,
    truncate_dirty_logic_files,
    unit_is_message,
)
from store_format.layout import index_file_size

from .compare import IndexView
from .report import QueueRestart, RestartPrediction
from .storefiles import cq_units


@dataclasses.dataclass
class _QueueState:
    """One queue after ``ConsumeQueue.recover``, kept for the store-wide steps."""
    restart: QueueRestart
    tail_files: TailFiles                                   # last remaining files: name, offsets, sizes
    missing_offsets: np.ndarray                             # expected units the recovered queue lacks
    expected_files: list[tuple[str, int, int, int]]         # rebuilt files: name, min offset, max offset, units


def recover_queue(queue: str, store_files: list[tuple[str, bytes]], expected_files: list[tuple[str, bytes]],
                  config: BrokerConfig) -> _QueueState:
    """One queue through ``MappedFileQueue.doLoad`` and ``ConsumeQueue.recover``
    (:func:`store_format.consumequeue_recovery.recover_consume_queue`), then the rebuilt units the
    recovered queue lacks (by commitlog offset)."""
    rec = recover_consume_queue(store_files, file_size=config.cq_file_size, broker_5x=config.is_5x)
    q = QueueRestart(queue, load_failure=rec.load_failure, recover_stops_at=rec.recover_stops_at,
                     units_dropped_by_recover=rec.units_dropped, files_deleted_by_recover=rec.files_deleted,
                     max_physic_offset=rec.max_physic_offset)
    exp_summary = []
    missing = []
    for name, data in sorted(expected_files):
        u = cq_units(data)
        off, size = u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64)
        off = off[unit_is_message(off, size)]
        if len(off):
            exp_summary.append((name, int(off.min()), int(off.max()), len(off)))
            missing.append(off[~np.isin(off, rec.present)])
    miss = np.concatenate(missing) if missing else np.zeros(0, np.int64)
    return _QueueState(q, rec.tail_files, miss, exp_summary)


def truncate_queue(state: _QueueState, phy_offset: int) -> None:
    """``ConsumeQueue.truncateDirtyLogicFiles(phyOffset)`` on one queue
    (:func:`store_format.consumequeue_recovery.truncate_dirty_logic_files`), added to its report."""
    t = truncate_dirty_logic_files(state.tail_files, phy_offset)
    q = state.restart
    q.max_physic_offset = t.max_physic_offset
    q.units_truncated += t.units_truncated
    q.files_deleted_by_truncate.extend(t.files_deleted)


def predict_restart(states: list[_QueueState], *, config: BrokerConfig, commitlog_min: int, commitlog_end: int,
                    clean_shutdown: bool, store_index: list[tuple[str, int, dict]],
                    expected_index: Callable[[], Iterator[bytes]], checkpoint_index_ts: int | None,
                    read_expected_cq: Callable[[str, str], bytes], truncate_at: int | None = None,
                    reput_from_queues: bool | None = None) -> RestartPrediction:
    """The store-wide steps of a start, after each queue's :func:`recover_queue`.

    * ``CommitLog.recoverNormally``: when the queues' max physical offset is at or past the
      commitlog's end, ``truncateDirtyLogicFiles(end)`` runs on every queue;
    * 4.9.x ``DefaultMessageStore.start``: the reput starts at max(commitlog min offset, max
      physical offset over the queues after truncation) and dispatches everything from there;
    * 5.x ``CommitLog.recoverNormally`` dispatches, while it recovers, the records whose offset is
      strictly greater than the queues' max physical offset (computed before the truncation); the
      reput then starts at the commitlog's end (``recheckReputOffsetFromCq`` defaults to false).
      A record starting exactly at that offset (the one after the last unit) is not dispatched;
    * a dispatched unit is appended unless ``offset + size <= maxPhysicOffset`` of its queue
      (``ConsumeQueue.putMessagePositionInfo``); ``IndexService.buildIndex`` skips records below
      the last index file's endPhyOffset.
    Units a queue lacks (compared by commitlog offset with the rebuild) and that fall before the
    restart point are never written again: they are reported as lost.

    A DLedger store (``DLedgerCommitLog.recover``) passes ``truncate_at``, the end of the log DLedger's
    recovery keeps (``getMaxWrotePosition``, which the queues are truncated against instead of
    ``commitlog_end``), and ``reput_from_queues``: True for 4.9.8's ``start()`` or 5.x with
    ``recheckReputOffsetFromCq`` (the reput from the queues' max physical offset), False for 5.x
    without it (no dispatch in the recovery, the reput at the committed position: nothing again).
    """
    is5 = config.is_5x
    p = RestartPrediction("5" if is5 else "4", clean_shutdown, commitlog_min, commitlog_end)
    p.start_fails = any(s.restart.load_failure for s in states)
    p.max_physic_offset_in_queues = max((s.restart.max_physic_offset for s in states), default=-1)
    cut = commitlog_end if truncate_at is None else truncate_at
    p.truncate_dirty_logic_files = p.max_physic_offset_in_queues >= cut
    if p.truncate_dirty_logic_files:
        for s in states:
            truncate_queue(s, cut)
    recovery_dispatches = is5 and reput_from_queues is None
    if recovery_dispatches:
        p.reput_from, p.reput_from_inclusive = p.max_physic_offset_in_queues, False
    elif reput_from_queues is False:
        p.reput_from = commitlog_end
    else:
        after = max((s.restart.max_physic_offset for s in states), default=-1)
        p.reput_from = max(after, commitlog_min, 0)
    first = p.reput_from if p.reput_from_inclusive else p.reput_from + 1
    p.tail_bytes = max(0, commitlog_end - max(first, commitlog_min))

    def in_tail(off: np.ndarray) -> np.ndarray:
        return off >= first

    for s in states:
        q = s.restart
        n_tail = 0
        for name, lo, hi, n in s.expected_files:
            if hi < first:
                continue
            if lo >= first:
                n_tail += n
                continue
            u = cq_units(read_expected_cq(q.queue, name))
            off, size = u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64)
            n_tail += int(in_tail(off[unit_is_message(off, size)]).sum())
        q.units_dispatched_again = n_tail
        q.units_lost = int((~in_tail(s.missing_offsets)).sum())
        p.units_dropped_by_recover += q.units_dropped_by_recover
        p.units_truncated += q.units_truncated
        p.units_dispatched_again += q.units_dispatched_again
        p.units_lost += q.units_lost
        if (q.load_failure or q.units_dropped_by_recover or q.units_truncated or q.units_lost
                or q.files_deleted_by_recover or q.files_deleted_by_truncate or q.recover_stops_at is not None):
            p.queues.append(q)
    # index: IndexService.load maps every file (a short one is extended); an abnormal start deletes
    # the files whose endTimestamp is after the checkpoint's indexMsgTimestamp
    full = index_file_size(config.maxHashSlotNum, config.maxIndexNum)
    last_end = 0
    for name, file_size, header in store_index:
        if file_size < full:
            p.index_files_extended.append(name)
        if not clean_shutdown and checkpoint_index_ts is not None and header["end_timestamp"] > checkpoint_index_ts:
            p.index_files_deleted.append(name)
            continue
        last_end = header["end_phy_offset"]
    threshold = max(first, last_end)
    keys = 0
    for data in expected_index():
        v = IndexView.parse(data, config.maxHashSlotNum, config.maxIndexNum)
        if v.header["end_phy_offset"] < threshold:
            break  # files newest first: the older ones end even earlier
        n_entries = max(0, min(v.header["index_count"], len(v.entries)) - 1)
        keys += int((v.entries["commitlogOffset"][1:1 + n_entries] >= threshold).sum())
    p.index_keys_put_again = keys
    if recovery_dispatches:
        p.notes.append("5.x CommitLog.recoverNormally dispatches only records with commitLogOffset > the queues' max "
                       "physical offset (offset + size of their last unit), and the reput then starts at the "
                       "commitlog's end (getConfirmOffset), so a record starting exactly there is never dispatched "
                       "again: its units count as lost")
    if not clean_shutdown:
        p.notes.append("abort file present: the broker runs CommitLog.recoverAbnormally, which re-dispatches from the "
                       "segment the checkpoint points at (not modelled here beyond the index files it deletes)")
    if truncate_at is None:
        p.notes.append("the commitlog end is where the rebuild's walk ended; the broker's own recovery (CRC checks of "
                       "the last segments) is not emulated")
    return p

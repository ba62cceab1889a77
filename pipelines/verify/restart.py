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
from store_format.layout import CQ_BLANK_SIZE, CQ_UNIT_SIZE, index_file_size

from .compare import _IndexView
from .report import QueueRestart, RestartPrediction
from .storefiles import _units

_RECOVER_FILES = 3  # ConsumeQueue.recover starts at the third file from the end


@dataclasses.dataclass
class _QueueState:
    """One queue after ``ConsumeQueue.recover``, kept for the store-wide steps."""
    restart: QueueRestart
    tail_files: list[tuple[str, np.ndarray, np.ndarray]]   # last remaining files: name, offsets, sizes
    missing_offsets: np.ndarray                             # expected units the recovered queue lacks
    expected_files: list[tuple[str, int, int, int]]         # rebuilt files: name, min offset, max offset, units


def _valid(off: np.ndarray, size: np.ndarray) -> np.ndarray:
    """A unit ``ConsumeQueue.recover`` accepts: ``offset >= 0 && size > 0``."""
    return (off >= 0) & (size > 0)


def _real(off: np.ndarray, size: np.ndarray) -> np.ndarray:
    """A unit that stands for a message (not a ``fillPreBlank`` unit)."""
    return _valid(off, size) & ~((off == 0) & (size == CQ_BLANK_SIZE))


def recover_queue(queue: str, store_files: list[tuple[str, bytes]], expected_files: list[tuple[str, bytes]],
                  config: BrokerConfig) -> _QueueState:
    """One queue through ``MappedFileQueue.doLoad`` and ``ConsumeQueue.recover``.

    * doLoad: every file must be ``mappedFileSizeConsumeQueue`` long, else load() fails (5.x first
      deletes a last file of length 0);
    * recover: from the third file from the end, units are accepted while ``offset >= 0 && size >
      0``; the first other unit ends the queue: ``truncateDirtyFiles`` deletes the files after it.
      maxPhysicOffset = offset + size of the last accepted unit.
    """
    q = QueueRestart(queue)
    file_size = config.cq_file_size
    files = sorted(store_files)
    if config.is_5x and files and len(files[-1][1]) == 0:
        files = files[:-1]
    loadable = []
    for name, data in files:
        if len(data) != file_size:
            q.load_failure = f"{name} is {len(data):,} bytes, mappedFileSizeConsumeQueue gives {file_size:,}"
        else:
            loadable.append((name, data))
    units = [(name, _units(data)) for name, data in loadable]
    present: list[np.ndarray] = []
    start = max(0, len(units) - _RECOVER_FILES)
    for _name, u in units[:start]:
        off, size = u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64)
        present.append(off[_real(off, size)])
    cut_file = len(units)
    for fi in range(start, len(units)):
        name, u = units[fi]
        off, size = u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64)
        ok = _valid(off, size)
        k = len(u) if ok.all() else int(np.argmin(ok))
        if k:
            q.max_physic_offset = int(off[k - 1] + size[k - 1])
        present.append(off[:k][_real(off[:k], size[:k])])
        if k < len(u):
            # the normal end of a queue (zeros after the last unit) also stops here; it is reported
            # only when something written lies after the stop
            cut_file = fi
            raw = np.frombuffer(loadable[fi][1], dtype=np.uint8).reshape(-1, CQ_UNIT_SIZE)
            q.units_dropped_by_recover = int(raw[k:].any(axis=1).sum())
            for later_name, later_data in loadable[fi + 1:]:
                q.units_dropped_by_recover += int(
                    np.frombuffer(later_data, dtype=np.uint8).reshape(-1, CQ_UNIT_SIZE).any(axis=1).sum())
                q.files_deleted_by_recover.append(later_name)
            if q.units_dropped_by_recover or q.files_deleted_by_recover:
                q.recover_stops_at = int(name) + k * CQ_UNIT_SIZE
            break
    remaining = units[:cut_file + 1] if cut_file < len(units) else units
    # the files truncateDirtyLogicFiles may look at; it rescans the last one from its first unit
    tail = [(name, u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64))
            for name, u in remaining[-_RECOVER_FILES:]]
    have = np.concatenate(present) if present else np.zeros(0, np.int64)
    exp_summary = []
    missing = []
    for name, data in sorted(expected_files):
        u = _units(data)
        off, size = u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64)
        off = off[_real(off, size)]
        if len(off):
            exp_summary.append((name, int(off.min()), int(off.max()), len(off)))
            missing.append(off[~np.isin(off, have)])
    miss = np.concatenate(missing) if missing else np.zeros(0, np.int64)
    return _QueueState(q, tail, miss, exp_summary)


def truncate_queue(state: _QueueState, phy_offset: int) -> None:
    """``ConsumeQueue.truncateDirtyLogicFiles(phyOffset)``: maxPhysicOffset starts at phyOffset;
    from the last file backwards, a file whose first unit points at or past phyOffset is deleted;
    otherwise its units are kept up to the first one that is invalid or points at or past it (the
    first unit of a file is kept without the validity check)."""
    q = state.restart
    q.max_physic_offset = phy_offset
    files = state.tail_files
    while files:
        name, off, size = files[-1]
        if not len(off):
            return
        if off[0] >= phy_offset:
            q.units_truncated += int(_valid(off, size).sum())
            q.files_deleted_by_truncate.append(name)
            files.pop()
            continue
        q.max_physic_offset = int(off[0] + size[0])
        rest_ok = _valid(off[1:], size[1:])
        k = len(rest_ok) if rest_ok.all() else int(np.argmin(rest_ok))
        past = np.flatnonzero(off[1:1 + k] >= phy_offset)
        if len(past):
            j = int(past[0])
            q.units_truncated += int(_valid(off[1 + j:1 + k], size[1 + j:1 + k]).sum())
            k = j
        if k:
            q.max_physic_offset = int(off[k] + size[k])
        files[-1] = (name, off[:1 + k], size[:1 + k])
        return


def predict_restart(states: list[_QueueState], *, config: BrokerConfig, commitlog_min: int, commitlog_end: int,
                    clean_shutdown: bool, store_index: list[tuple[str, int, dict]],
                    expected_index: Callable[[], Iterator[bytes]], checkpoint_index_ts: int | None,
                    read_expected_cq: Callable[[str, str], bytes]) -> RestartPrediction:
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
    """
    is5 = config.is_5x
    p = RestartPrediction("5" if is5 else "4", clean_shutdown, commitlog_min, commitlog_end)
    p.start_fails = any(s.restart.load_failure for s in states)
    p.max_physic_offset_in_queues = max((s.restart.max_physic_offset for s in states), default=-1)
    p.truncate_dirty_logic_files = p.max_physic_offset_in_queues >= commitlog_end
    if p.truncate_dirty_logic_files:
        for s in states:
            truncate_queue(s, commitlog_end)
    if is5:
        p.reput_from, p.reput_from_inclusive = p.max_physic_offset_in_queues, False
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
            u = _units(read_expected_cq(q.queue, name))
            off, size = u["commitlogOffset"].astype(np.int64), u["size"].astype(np.int64)
            n_tail += int(in_tail(off[_real(off, size)]).sum())
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
        v = _IndexView.parse(data, config.maxHashSlotNum, config.maxIndexNum)
        if v.header["end_phy_offset"] < threshold:
            break  # files newest first: the older ones end even earlier
        n_entries = max(0, min(v.header["index_count"], len(v.entries)) - 1)
        keys += int((v.entries["commitlogOffset"][1:1 + n_entries] >= threshold).sum())
    p.index_keys_put_again = keys
    if is5:
        p.notes.append("5.x CommitLog.recoverNormally dispatches only records with commitLogOffset > the queues' max "
                       "physical offset (offset + size of their last unit), and the reput then starts at the "
                       "commitlog's end (getConfirmOffset), so a record starting exactly there is never dispatched "
                       "again: its units count as lost")
    if not clean_shutdown:
        p.notes.append("abort file present: the broker runs CommitLog.recoverAbnormally, which re-dispatches from the "
                       "segment the checkpoint points at (not modelled here beyond the index files it deletes)")
    p.notes.append("the commitlog end is where the rebuild's walk ended; the broker's own recovery (CRC checks of the "
                   "last segments) is not emulated")
    return p

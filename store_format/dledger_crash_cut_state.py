"""The queues the 5.x DLedger crash recovery's walk wrote, and ``truncateDirtyLogicFiles(processOffset)`` on them: the
first two steps of :func:`store_format.dledger_crash_cut.cut_queues` (its module docstring tells the whole sequence).

:func:`walked_positions` mirrors rocketmq-store 5.5.1 ``ConsumeQueue.putMessagePositionInfo`` as the walk's dispatch
ran it on a queue holding a record's own units and light ones (``multiDispatchLmqQueue``): where each unit went in
commitlog order, not where its queue offset says (:func:`store_format.dledger_queue_track.replayed`).
:func:`truncate_dirty` mirrors ``ConsumeQueueStore.truncateDirty``'s ``ConsumeQueue.truncateDirtyLogicFiles`` and
``BatchConsumeQueue.truncateDirtyLogicFiles`` (the units at or past ``processOffset`` taken, each queue's max physical
offset after the cut) with ``DefaultMessageStore.recoverTopicQueueTable``'s ``ConsumeQueue.correctMinOffset`` left to
the caller (5.5.1 sets a queue left with no file to -1).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .consumequeue_recovery import no_file_max
from .dledger_inside_mixed import OnDiskCut
from .dledger_queue_track import (
    BLANK_MAX,
    KIND_BATCH,
    KIND_CQ,
    KIND_LIGHT,
    U_KEY,
    U_KIND,
    U_OFFSET,
    U_QUEUE,
    QueueTrack,
    max_key,
    mixed_queues,
    replayed,
)
from .layout import CQ_UNIT_SIZE


@dataclasses.dataclass
class WalkedPositions:
    """Where the walk's dispatch put the units of its last data file (``units``: ``track.last_file()``) in the queues
    holding a record's own units and light ones.  ``mixed``: per such queue, each unit's queue byte position in
    commitlog order (-1: dropped) and where each stands (a dropped one: the next one's); ``earlier``: per queue whose
    units in the walk's earlier data files were of one kind (or both, ``QueueTrack.replayed_before``), the write
    position and max they left; ``both_disk``: queues on disk before the walk with units of both kinds in the walk's
    earlier data files; ``disk_mixed``: the mixed queues on disk before the walk whose walk's units were dispatched onto
    the files ``ConsumeQueue.recover`` loaded; ``appended``: per unit of ``units``, whether it leaves a max."""
    units: np.ndarray
    mixed: dict[int, tuple[np.ndarray, np.ndarray]]
    earlier: dict[int, tuple[int, int]]
    both_disk: set[int]
    disk_mixed: set[int]
    appended: np.ndarray


@dataclasses.dataclass
class TruncatedQueues:
    """What ``truncateDirtyLogicFiles(processOffset)`` leaves: ``per_queue``, per queue the walk's units it took (rows
    of ``UNIT_COLUMNS`` in commitlog order, a mixed queue's keyed by where each stands); ``mixed_dropped``: the mixed
    queues with a cut unit the walk's dispatch dropped; ``kept``: the queues left with a unit below the offset (or a
    file on disk); ``top``: the largest max among those; ``max_after``: per other cut queue, its max physical offset
    after the cut (``processOffset``, ``processOffset - 1`` for a batch queue, 2147483647 after ``fillPreBlank`` units
    only)."""
    per_queue: dict[int, np.ndarray]
    mixed_dropped: set[int]
    kept: set[int]
    top: int
    max_after: dict[int, int]

    def batch(self, q: int) -> bool:
        """Whether cut queue ``q`` is a batch consume queue (``BatchConsumeQueue``)."""
        return bool(self.per_queue[q][0, U_KIND] == KIND_BATCH)

    def no_file(self, q: int) -> bool:
        """Whether the cut left queue ``q`` with no file (no unit below the offset, no ``fillPreBlank`` unit)."""
        return q in self.max_after and self.max_after[q] != BLANK_MAX

    def emptied(self, q: int) -> bool:
        """Whether ``q`` is a consume queue (not a batch one) the cut left with no file."""
        return self.no_file(q) and not self.batch(q)

    def table_max(self, q: int, resets: bool) -> int:
        """The max of queue ``q`` of ``max_after`` once ``recoverTopicQueueTable`` has run: a queue left with no file
        by :func:`store_format.consumequeue_recovery.no_file_max` (``resets``: the line's ``no_file_resets_max``)."""
        v = self.max_after[q]
        return no_file_max(v, resets=resets, batch=self.batch(q)) if self.no_file(q) else v


def walked_positions(track: QueueTrack, cq_file_size: int,
                     on_disk: dict[tuple[str, int], OnDiskCut] | None) -> WalkedPositions:
    """Where ``ConsumeQueue.putMessagePositionInfo`` put the walk's units of its last data file in each queue holding a
    record's own units and light ones (:class:`WalkedPositions`): appended at the write position in commitlog order,
    whatever queue offset each holds; a unit at or below the queue's max dropped."""
    units = track.last_file()
    # a queue holding a record's own units and light ones, written in the last data file only: where
    # putMessagePositionInfo put each unit in commitlog order (its queue byte position, -1 dropped) and where each
    # stands (a dropped one: the next one's), not its queue offset (dledger_queue_track.replayed); a unit the walk
    # dropped below processOffset leaves no max
    mixed = {q: replayed(units[units[:, U_QUEUE] == q], cq_file_size)[:2] for q in mixed_queues(units)
             if q not in track.seen_before}
    # one whose units in the walk's earlier data files are of one kind, the other kind's in the last one: those at
    # their queue offsets, the last file's replayed from the write position and max they leave; of both kinds there:
    # the write position and max putMessagePositionInfo left after them in commitlog order (QueueTrack.
    # replayed_before; for a queue on disk before the walk the cut of its files instead, disk_mixed below: refused
    # unless the reput replays it whole, where its files hold its cut units not kept)
    earlier: dict[int, tuple[int, int]] = {}
    both_disk: set[int] = set()   # of those, ones with units of both kinds in the walk's earlier data files
    for q in np.unique(units[units[:, U_KIND] != KIND_BATCH, U_QUEUE]).tolist():
        own_before, light_before = track.last_before.get(q), track.light_before.get(q)
        kinds = {int(k) for k in np.unique(units[units[:, U_QUEUE] == q, U_KIND])}
        if own_before and light_before:
            if track.names[q] in (on_disk or {}):
                both_disk.add(q)
                continue
            both = track.replayed_before(q)
            assert both is not None, "units in the walk's earlier data files: replayed"
            earlier[q] = both
            mixed[q] = replayed(units[units[:, U_QUEUE] == q], cq_file_size, both)[:2]
        elif (before := own_before or light_before) is not None and \
                kinds | {KIND_CQ if own_before else KIND_LIGHT} == {KIND_CQ, KIND_LIGHT}:
            earlier[q] = ((before[0] + 1) * CQ_UNIT_SIZE, before[1])
            mixed[q] = replayed(units[units[:, U_QUEUE] == q], cq_file_size, earlier[q])[:2]
    # the mixed queues on disk before the walk, the walk's units dispatched onto the files ConsumeQueue.recover loaded
    # (QueuesOnDisk.max_after_cut, QueueTrack.mixed_walked): the cut's write position and max those files', where
    # they hold its units not kept (modelled where the reput replays it whole: dledger_inside_mixed.mixed_on_disk)
    disk_mixed = {q for q in set(mixed) | both_disk
                  if on_disk and on_disk.get(track.names[q], (0, False, 0, False))[3]}
    appended = np.ones(len(units), dtype=bool)
    for q, (pos, _at) in mixed.items():
        appended[units[:, U_QUEUE] == q] = pos >= 0
    for q in disk_mixed:   # their max: the cut of their files (on_disk below), not the walk's units alone
        appended[units[:, U_QUEUE] == q] = False
    return WalkedPositions(units, mixed, earlier, both_disk, disk_mixed, appended)


def truncate_dirty(track: QueueTrack, walked: WalkedPositions, process_offset: int, cq_file_size: int,
                   on_disk: dict[tuple[str, int], OnDiskCut] | None) -> TruncatedQueues:
    """``ConsumeQueue.truncateDirtyLogicFiles`` / ``BatchConsumeQueue.truncateDirtyLogicFiles`` at ``process_offset`` on
    every queue (:class:`TruncatedQueues`): the walk's units at or past it taken; a queue left with none (no file, or
    ``fillPreBlank`` units only) gets the max the method leaves it (a consume queue's ``ConsumeQueueExt.
    truncateByMaxAddress`` reached with no ext address: its ext files untouched); a queue on disk before the walk
    (``on_disk``) as :class:`store_format.dledger_crash_cut.QueuesOnDisk` says its files' cut leaves it."""
    units, mixed, appended = walked.units, walked.mixed, walked.appended
    below = units[:, U_OFFSET] < process_offset
    cut = units[~below]
    kept = track.seen_before | {int(k) for k in np.unique(units[below, U_QUEUE])}
    top = max(track.end_before, int(max_key(units[below & appended]).max()) if (below & appended).any() else -1)
    per_queue: dict[int, np.ndarray] = {}
    mixed_dropped: set[int] = set()   # the mixed queues with a cut unit the walk's dispatch dropped
    if len(cut):
        order = np.argsort(cut[:, U_QUEUE], kind="stable")
        ids, starts = np.unique(cut[order, U_QUEUE], return_index=True)
        for q, rows in zip(ids, np.split(order, starts[1:])):
            per_queue[int(q)] = cut[rows]
            if int(q) in mixed:   # each cut unit at the position it stands at in the walk's queue
                pos, at = mixed[int(q)]
                per_queue[int(q)][:, U_KEY] = at[len(at) - len(rows):] // CQ_UNIT_SIZE
                if (pos[len(pos) - len(rows):] < 0).any():
                    mixed_dropped.add(int(q))
    emptied: set[int] = set()
    if on_disk:
        queue_ids = {name: k for k, name in enumerate(track.names)}
        left = [v for v, stays, _w, _d in on_disk.values() if stays]
        top = max(top, *left) if left else top
        kept |= {queue_ids[n] for n, (_v, stays, _w, _d) in on_disk.items() if stays and n in queue_ids}
        emptied = {queue_ids[n] for n, (_v, stays, _w, _d) in on_disk.items() if not stays and n in queue_ids}
    max_after = {}
    for q, rows in per_queue.items():
        if q in kept:
            continue   # its last kept unit ends at or below top, before every cut unit
        if rows[0, U_KIND] == KIND_BATCH:   # BatchConsumeQueue.truncateDirtyLogicFiles with no file left
            max_after[q] = process_offset - 1
        elif q in emptied:   # its files on disk all went: the walk appended to them, created none
            max_after[q] = process_offset
        else:
            max_after[q] = BLANK_MAX if (int(rows[0, U_KEY]) * CQ_UNIT_SIZE) % cq_file_size else process_offset
    return TruncatedQueues(per_queue, mixed_dropped, kept, top, max_after)

"""The queues the 5.x DLedger crash recovery's walk wrote, as ``truncateDirtyLogicFiles`` left them, for the messages a
start's reput set inside an entry parses (:func:`inside_units`): built from the walk's units that
:class:`store_format.dledger_queue_track.QueueTrack` collects (rows of its ``UNIT_COLUMNS``), handed to
:func:`store_format.dledger_inside_units.place_inside`.

Mirrors rocketmq-store 5.5.1 ``ConsumeQueue.truncateDirtyLogicFiles`` and ``BatchConsumeQueue.truncateDirtyLogicFiles``
(5.3.3's the same: a consume queue whose files all go keeps the max ``processOffset`` there, which 5.3.3's
``ConsumeQueue.correctMinOffset`` does not reset, and its ``correctMinOffset`` failing on an empty last file:
:func:`_start_fails_533`) (the write position and max physical offset each leaves a queue with; a queue on disk
before the walk after ``putMessagePositionInfo`` or ``BatchConsumeQueue.putBatchMessagePositionInfo`` put the
walk's units onto its files: :func:`store_format.consumequeue_recovery.dispatch_units`); a light queue
(``ConsumeQueue.multiDispatchLmqQueue`` into a ``ConsumeQueue`` of the consume queue table the cut walks) the same as
a record's own.  A consume queue on disk before the walk that the walk wrote no unit of, only records past its end,
a file of it left by the cut: as ``ConsumeQueue.recover`` loaded its files and the cut left them, nothing of the walk
(:func:`held_past_only`; one whose files the cut deleted from no file and its max, -1 on 5.5.1
(``ConsumeQueue.correctMinOffset`` with no file), ``processOffset`` on 5.3.3: :func:`emptied_past_only`; with ext
files their end as ``ConsumeQueue.recover``'s ``ConsumeQueueExt.recover`` and ``truncateByMaxAddress`` left it, which
the cut does not move (returning inside its loop, or with every file deleted reaching its ``truncateByMaxAddress``
with no address): a byte end, the units before it of any size, ext units with filter bitmaps too).
A queue holding both kinds (a message put to topic ``%LMQ%...`` itself), its own and light queue offsets from two
counters: :mod:`store_format.dledger_inside_mixed`.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from .batchconsumequeue import BCQ_UNIT_SIZE
from .consumequeue_recovery import CORRECT_MIN_OFFSET_533, correct_min_offset_fails, no_file_max
from .dledger_inside_mixed import OnDiskCut, mixed_on_disk, mixed_state
from .dledger_inside_state import QueueFiles, refuse
from .dledger_inside_units import ParsedUnit, Placed, Tags, WalkedQueue, place_inside
from .dledger_queue_track import (
    KIND_BATCH,
    KIND_CQ,
    KIND_LIGHT,
    U_END,
    U_KEY,
    U_KIND,
    U_OFFSET,
    U_QUEUE,
    QueueTrack,
    positions,
)
from .errors import UnsupportedConfigError
from .layout import CQ_UNIT_SIZE

__all__ = ["cut_refusal", "emptied_past_only", "held_past_only", "inside_units"]



def inside_units(track: QueueTrack, parsed: tuple[ParsedUnit, ...], per_queue: dict[int, np.ndarray],
                 max_after: dict[int, int], process_offset: int,
                 on_disk: dict[tuple[str, int], OnDiskCut] | None, reput: int, end: int,
                 after: np.ndarray | None, cq_file_size: int, at: int, ext_file_size: int,
                 reset_emptied: bool = False, bcq_file_size: int = 0, tags: Tags | None = None,
                 ext_held: Mapping[tuple[str, int], int] | None = None) -> Placed:
    """:func:`store_format.dledger_inside_units.place_inside` on the walk's queues as the cut left them: the write
    position at the first cut unit (after the last unit when none was cut), the max at the end of the last unit
    below ``processOffset`` in the walk's last file (the cut's ``max_after`` when none is there: 2147483647 after
    ``fillPreBlank`` units only, which ``truncateDirtyLogicFiles`` keeps like any unit below ``processOffset``, the
    write position after them: the cut units the reput dispatches again go from there by the same rule, after the
    parsed units, its records past the walk's end after those from the state they left, as in any queue the cut
    left a file of: the replay), and for a queue on disk before the walk
    that the cut left a file of the write position and max ``truncateDirtyLogicFiles`` left in its files
    (``on_disk``: once the walk's units were dispatched onto them, for a queue it wrote units of one kind in, its
    own or light ones, in its last data file, its earlier ones or both: ``QueueTrack.own_walked``, for a batch
    queue it wrote by ``BatchConsumeQueue.putBatchMessagePositionInfo``, its units in the walk's earlier data
    files first (kept for a batch queue on disk: ``QueueTrack.keep_queues``), in its last one, in either only:
    ``QueueTrack.batch_walked``; refused, a guard, when a walk unit below ``processOffset`` ends (a batch queue's:
    starts) past the max of files they were not dispatched onto: :func:`_on_disk`;
    a batch queue on disk that the cut left no file of: its max ``processOffset - 1``, its next
    unit at queue byte 0, ``MappedFileQueue``'s ``getMaxOffset`` with no file); ``ext_file_size`` > 0:
    ``enableConsumeQueueExt`` (the ext units the walk put per queue: ``track.own_units``; a reput that goes on at
    ``reput`` before ``end`` puts its ext units after the parsed ones', for the cut units it dispatches again and the
    records past the walk's end; going on before the walk's last data file, for the earlier files' records it walks
    first too: ``ConsumeQueueExt.put`` runs for each record of a queue's own it walks, whatever becomes of its unit,
    so they count as in the last file, :class:`store_format.dledger_crash_cut.ExtAgain` with
    ``QueueTrack.own_before``, before the walk's first data file
    :func:`store_format.dledger_crash_before.ext_before_walk`).  A light queue goes as a record's own (its units in
    the walk's earlier data files: ``QueueTrack.light_before``); one with both kinds of unit by the positions
    ``putMessagePositionInfo`` gave them (:func:`store_format.dledger_inside_mixed.mixed_state`: from the state its
    units in the walk's earlier data files left, of one kind at their queue offsets, of both kinds
    ``QueueTrack.replayed_before``; on disk before the walk: :func:`store_format.dledger_inside_mixed.mixed_on_disk`,
    its cut units dispatched again and records past the walk's end too, ext files or not; else refused).  A queue
    only records past the walk's end went to (a batch queue too; not on disk before the walk) is one the walk did not
    write (None: the rebuild's own dispatch, reading the parsed messages before those records as the broker
    dispatches them, puts them where the broker does); such a batch queue on disk that the cut left no file of is
    the emptied batch queue (its max ``processOffset - 1``: a parsed unit starting there dropped, the records past the
    walk's end from queue byte 0), one the cut left a file of goes from that file's write position and max
    (``BatchConsumeQueue.truncateDirtyLogicFiles`` on the files alone: the walk wrote none of it); so too a consume
    queue on disk the cut left a file of, 5.5.1 or 5.3.3 (``ConsumeQueue.truncateDirtyLogicFiles`` on its files alone:
    :func:`held_past_only`; with ext files, their ext units going on after the ext files' end as
    ``ConsumeQueue.recover`` left them: ``ext_held``); a consume queue so on disk with no file left: no file, its max
    -1 (5.5.1) or ``processOffset`` (5.3.3), replayed from there (:func:`emptied_past_only`; with ext files as
    above, after the ext units of the deleted files' units, which no unit points at any more).
    ``after``: the units of the records past the walk's end (a walk ended by a damaged message), those from
    ``reput`` on handed over as
    :attr:`WalkedQueue.past`, with the number of cut units the reput goes on past when it dispatches none of them
    again (:attr:`WalkedQueue.skipped`; when it dispatches only the last ones again, the first ones inside the parsed
    messages: :attr:`WalkedQueue.again_skip`, whatever the queue kept below ``processOffset``: a walk unit,
    ``fillPreBlank`` units only or its units in the walk's earlier data files, ext files or not, on disk before the
    walk or not; where the cut left no file replayed from its max, -1 on 5.5.1 (``reset_emptied``), ``processOffset``
    on 5.3.3, ext files or not; on disk before the walk, after its files as the cut left them)).  The cut units the
    reput dispatches again are a queue's last ones (it goes on at an entry's start and dispatches every record from
    there); the first ones, inside the parsed messages, stay cut whatever follows (:attr:`WalkedQueue.again_skip`):
    with ext files too (``ConsumeQueueExt.put`` runs for the records the reput walks only: no ext unit for them
    again), in a queue on disk before the walk, and in one the cut left no file of.  ``tags``: ``place_inside``'s.
    Not ``reset_emptied`` (5.3.3): refused where the reput leaves a replayed queue's last file empty, the store's start
    failing then (:func:`_start_fails_533`).  Per queue, as the cut takes it: its units (:func:`_queue_units`), then
    what the cut left of it (:func:`_walked`: :func:`_batch_cut`, :func:`_queue_cut`)."""
    ids = {name: k for k, name in enumerate(track.names)}
    cuts = _Cuts(track, track.last_file(), parsed, per_queue, max_after, process_offset, on_disk or {}, reput, end,
                 after, cq_file_size, ext_file_size, reset_emptied, ext_held or {})

    def walked(name: tuple[str, int]) -> WalkedQueue | None:
        q = ids.get(name)
        return None if q is None else _walked(cuts, _queue_units(cuts, name, q))
    placed = place_inside(parsed, walked, cq_file_size=cq_file_size, at=at, ext_file_size=ext_file_size,
                          bcq_file_size=bcq_file_size, tags=tags)
    if not reset_emptied:
        _start_fails_533(placed, cq_file_size, at)
    return placed


@dataclasses.dataclass(frozen=True)
class _Cuts:
    """:func:`inside_units`' inputs, the same for every queue: the walk's units (``QueueTrack``, its last data file's
    rows), the parsed units, the cut per queue and where the reput goes on."""
    track: QueueTrack
    units: np.ndarray
    parsed: tuple[ParsedUnit, ...]
    per_queue: dict[int, np.ndarray]
    max_after: dict[int, int]
    process_offset: int
    on_disk: Mapping[tuple[str, int], OnDiskCut]
    reput: int
    end: int
    after: np.ndarray | None
    cq_file_size: int
    ext_file_size: int
    reset_emptied: bool
    ext_held: Mapping[tuple[str, int], int]


@dataclasses.dataclass(frozen=True)
class _Units:
    """One queue's units as the walk and the cut left them (:func:`_queue_units`)."""
    name: tuple[str, int]
    q: int
    rows: np.ndarray          # its units in the walk's last data file
    cut: np.ndarray           # the last of them, which the cut took
    kept: np.ndarray          # the others
    later: np.ndarray         # its records past the walk's end the reput dispatches
    own_before: tuple[int, int] | None     # its last own unit in the walk's earlier data files
    light_before: tuple[int, int] | None   # else its last light unit there
    kinds: set[int]           # the kinds of unit the walk wrote of it

    @property
    def before(self) -> tuple[int, int] | None:
        return self.own_before or self.light_before


def _queue_units(c: _Cuts, name: tuple[str, int], q: int) -> _Units:
    """The walk's units of queue ``q`` (``name``) in its last data file, those ``truncateDirtyLogicFiles`` took (the
    last ones), its records past the walk's end from where the reput goes on, its last units in the walk's earlier
    data files and the kinds of unit the walk wrote of it."""
    units, track = c.units, c.track
    rows = units[units[:, U_QUEUE] == q]
    cut = c.per_queue.get(q, rows[:0])
    kept = rows[:len(rows) - len(cut)]
    later = c.after[(c.after[:, U_QUEUE] == q) & (c.after[:, U_OFFSET] >= c.reput)] if c.after is not None \
        else rows[:0]
    # its last own unit in the walk's earlier data files, else its last light unit there (a light queue's units go
    # by the same putMessagePositionInfo, with their INNER_MULTI_QUEUE_OFFSET; the cut takes them the same)
    own_before, light_before = track.last_before.get(q), track.light_before.get(q)
    kinds = {int(k) for k in np.unique(rows[:, U_KIND])} | ({KIND_CQ} if own_before else set()) | \
        ({KIND_LIGHT} if light_before else set())
    return _Units(name, q, rows, cut, kept, later, own_before, light_before, kinds)


def _walked(c: _Cuts, u: _Units) -> WalkedQueue | None:
    """One queue as ``ConsumeQueue.truncateDirtyLogicFiles`` or ``BatchConsumeQueue.truncateDirtyLogicFiles`` left
    it for the reput (:func:`inside_units`): None for a queue only records past the walk's end went to, not on disk
    before the walk; a consume queue on disk that the walk wrote no unit of (:func:`emptied_past_only`,
    :func:`held_past_only`); a batch queue (:func:`_batch_cut`); a consume queue the walk wrote
    (:func:`_queue_cut`)."""
    track, name, q, kinds, cut = c.track, u.name, u.q, u.kinds, u.cut
    held_only = c.on_disk.get(name) if not kinds and q not in track.batch_before else None
    # on disk before the walk, the cut leaving it no file (the files' units all at or past processOffset):
    # BatchConsumeQueue.truncateDirtyLogicFiles leaves its max processOffset - 1 (the emptied batch queue below),
    # ConsumeQueue's -1 on 5.5.1 (recoverTopicQueueTable), processOffset on 5.3.3 (emptied_past_only); a batch
    # queue the cut left a file of: as that file leaves it (its write position and max), replayed from there
    past_only_batch = held_only is not None and name[0] in track.batch_topics
    if not kinds and q not in track.batch_before and held_only is None:
        # only records past the walk's end went to it (a walk ended by a damaged message; not on disk before the
        # walk): the cut leaves it no file, as a queue the walk did not write; the broker dispatches the parsed
        # units, then those records from where
        # the reput goes on, and the rebuild reads them in that order too (pipelines.restart: store.then_pieces
        # puts the parsed messages between the walk's pass and the reput's), so its own dispatch puts them where
        # the broker does.  A batch queue so too:
        # BatchConsumeQueue.putBatchMessagePositionInfo, no queue offset check, appends each unit starting past
        # the max (-1 for a queue created then) at getLastMappedFile(getMaxOffset()), 0 with no file, as the
        # rebuild's batch dispatch (batchconsumequeue.assign_batch_positions) does in the same order
        return None
    if held_only is not None and not held_only[1] and not past_only_batch:
        # a consume queue on disk whose files the cut deleted: no file, its max -1 (5.5.1's correctMinOffset
        # resets it) or processOffset (5.3.3's keeps it), its ext files as ConsumeQueue.recover left them:
        # replayed from there (emptied_past_only)
        return emptied_past_only(no_file_max(c.process_offset, resets=c.reset_emptied), u.later, c.ext_file_size,
                                 c.ext_held.get(name))
    if held_only is not None and held_only[1] and not past_only_batch:
        # a consume queue on disk, a file of it left by the cut (5.5.1 or 5.3.3): replayed from that file's write
        # position and max (held_past_only)
        return held_past_only(held_only, u.later, c.ext_file_size, c.ext_held.get(name))
    back = (cut[:, U_OFFSET] >= c.reput) & (cut[:, U_OFFSET] < c.end)   # the cut units the reput dispatches again
    if (u.rows[:, U_KIND] == KIND_BATCH).all() if len(u.rows) else q in track.batch_before or past_only_batch:
        return _batch_cut(c, u, back, past_only_batch)
    return _queue_cut(c, u, back)


def _batch_cut(c: _Cuts, u: _Units, back: np.ndarray, past_only_batch: bool) -> WalkedQueue:
    """A batch queue as ``BatchConsumeQueue.truncateDirtyLogicFiles`` left it (:func:`_walked_batch`), on disk before
    the walk too: the cut leaving it no file, or a file of it (where the walk's units must leave it, else refused);
    ``back``: the cut units the reput dispatches again."""
    name, q, rows, cut, kept, later = u.name, u.q, u.rows, u.cut, u.kept, u.later
    track, parsed, max_after, process_offset, on_disk = c.track, c.parsed, c.max_after, c.process_offset, c.on_disk
    held = on_disk.get(name)
    # on disk before the walk, the cut leaving it no file (the first unit of its files at or past
    # processOffset: the walk appended none below it): its max processOffset - 1, nothing of its history
    # stays, and getLastMappedFile(getMaxOffset()), 0 with no file, creates the next unit's file at queue
    # byte 0, wherever its files and the walk's units stood (the reput set inside an entry starts at
    # processOffset - 1 or past it: this max cannot move it); a file of it left: as
    # BatchConsumeQueue.truncateDirtyLogicFiles left its files, where the walk's units (at the positions the
    # queue holds them) must leave it (else refused; so too for one the walk wrote in an earlier data file
    # only, none of its units cut)
    emptied_batch = held is not None and not held[1]
    # the parsed units the rebuild's own dispatch appends after the walk's units (each starting past the last
    # walk unit's start), before the records past the walk's end it reads after them: where the replay reads
    # those records' units (dledger_inside_replay_batch)
    walk_max = int(rows[:, U_OFFSET].max()) if len(rows) else -1 if past_only_batch else \
        track.batch_before.get(q)
    rebuilt = sum(1 for p in parsed if (p.topic, p.queue_id) == name and p.batch and p.base >= 0 and
                  p.batch_size >= 0 and walk_max is not None and p.offset > walk_max)
    # (a batch queue only records past the walk's end went to, a file of it left by the cut: as that file
    # alone leaves it, its max held[0])
    walked_batch = _walked_batch(rows, cut, kept, process_offset - 1 if emptied_batch else held[0]
                                 if past_only_batch and held is not None else max_after.get(q),
                                 later, back, track.batch_before.get(q), track.batch_units.get(q, 0), rebuilt)
    if emptied_batch and not walked_batch.refused:
        return dataclasses.replace(walked_batch, write=0, max=process_offset - 1)
    if held is not None and held[1] and not walked_batch.refused and \
            (walked_batch.write, walked_batch.max) != (held[2], held[0]):
        # putBatchMessagePositionInfo appends a unit only past the loaded max, past every unit of the files:
        # the walk's last unit below processOffset starting at or below the max the cut leaves them, it
        # appended none the cut keeps, and the files alone say where the cut leaves the queue; the walk's
        # units dispatched onto the files before the cut (held[3]: written in the walk's last data file, its
        # units of the earlier ones kept for a queue on disk, QueueTrack.batch_walked), the cut's
        # write position and max are those of the files with the units it appended.  The cut units the
        # reput dispatches again and its records past the walk's end follow the parsed units from there by
        # the same rule (no queue offset check: wherever the walk had them)
        if walked_batch.max <= held[0] or held[3]:
            return dataclasses.replace(walked_batch, write=held[2], max=held[0])
        return WalkedQueue(0, 0, 0, 0, refused="a batch queue on disk before the walk whose files the cut "
                           f"leaves at write position {held[2]}, max {held[0]}, not where the walk's units "
                           "leave it (units of it starting past the max its files loaded with, the walk's "
                           "units not dispatched onto them)")
    return walked_batch


def _queue_cut(c: _Cuts, u: _Units, back: np.ndarray) -> WalkedQueue:
    """A consume queue the walk wrote as ``ConsumeQueue.truncateDirtyLogicFiles`` left it (its write position at the
    first cut unit, its max where its last unit below ``processOffset`` ends): of both kinds of unit
    (:func:`store_format.dledger_inside_mixed.mixed_on_disk`, :func:`store_format.dledger_inside_mixed.mixed_state`),
    the cut leaving it no file, on disk before the walk (:func:`_on_disk`); ``back``: the cut units the reput
    dispatches again."""
    name, q, rows, cut, kept, later, kinds, before = u.name, u.q, u.rows, u.cut, u.kept, u.later, u.kinds, u.before
    own_before, light_before = u.own_before, u.light_before
    track, max_after, process_offset, on_disk, ext_held = c.track, c.max_after, c.process_offset, c.on_disk, c.ext_held
    ext_file_size, cq_file_size, reset_emptied = c.ext_file_size, c.cq_file_size, c.reset_emptied
    top = int(kept[-1, U_END]) if len(kept) else max_after[q] if q in max_after else before and before[1]
    # the cut left it no file (one on disk before the walk then too: nothing of its history stays)
    emptied = max_after.get(q) == process_offset
    # on disk before the walk, a file of it left by the cut: as the cut left its files (their write position and
    # max), where the walk's units below processOffset end at or below that max (else refused: _on_disk)
    disk = on_disk.get(name) if not emptied else None
    # the reput going on at an entry's start past the first cut units (inside the parsed messages) dispatches
    # only the rest again: those first ones stay cut (WalkedQueue.again_skip).  It goes on at an entry's start
    # and dispatches every record from there, so the cut units it dispatches again are the last ones (in
    # commitlog order): never some of them but for its last ones
    skip = int(np.argmax(back)) if back.any() else 0
    assert not back.any() or back[skip:].all(), "the cut units dispatched again are the queue's last ones"
    if kinds == {KIND_CQ, KIND_LIGHT} and disk is not None:
        # on disk before the walk: the cut's write position and max once the walk's units were dispatched onto
        # the files ConsumeQueue.recover loaded (QueueTrack.mixed_walked), else refused
        # (dledger_inside_mixed.mixed_on_disk)
        return mixed_on_disk(disk, rows, cut, back, later, ext_file_size, ext_held.get(name),
                              track.own_units.get(q, 0))
    if kinds == {KIND_CQ, KIND_LIGHT}:
        # its units in the walk's earlier data files of one kind only: at their queue offsets there, the last
        # file's replayed from after them; of both kinds there, from the write position and max
        # putMessagePositionInfo left after them in commitlog order (QueueTrack.replayed_before; the queue not on
        # disk before the walk here)
        start = None if before is None else track.replayed_before(q) if own_before and light_before else \
            ((before[0] + 1) * CQ_UNIT_SIZE, before[1])
        return mixed_state(rows, cut, process_offset, cq_file_size, track.own_units.get(q, 0),
                      before is not None and start is None, back, later, emptied, start, reset_emptied)
    refused = ("a queue the walk wrote no unit of, only records past its end" if not kinds else
               "a queue the walk wrote units of two kinds in (a record's own and light ones: their queue offsets "
               "from two counters, not where those put them)" if len(kinds) > 1 or KIND_BATCH in kinds
               else
               "a queue whose units below processOffset lie in an earlier data file" if top is None and disk is None
               else "")
    if refused:
        return WalkedQueue(0, 0, 0, 0, refused=refused)
    # the records past the walk's end the reput dispatches after the parsed ones (dledger_inside_replay)
    past = tuple(map(tuple, positions(later).tolist()))
    assert (top is not None or disk is not None) and (cut[:, U_OFFSET] == rows[len(kept):, U_OFFSET]).all()
    if not len(rows):   # written in the walk's earlier data files only: not cut, after its last unit there
        assert before is not None and top is not None
        write = after_last = (before[0] + 1) * CQ_UNIT_SIZE
        return _on_disk(WalkedQueue(write, top, after_last, before[1], track.own_units.get(q, 0), past=past), disk)
    after_last = int(rows[-1, U_KEY] + 1) * CQ_UNIT_SIZE
    again = tuple(map(tuple, positions(cut).tolist())) \
        if back.any() else ()
    if emptied:   # the cut left no file: its max -1 (5.5.1 recoverTopicQueueTable), processOffset (5.3.3)
        return WalkedQueue(-1, no_file_max(process_offset, resets=reset_emptied), after_last,
                           int(rows[:, U_END].max()), track.own_units.get(q, 0), again=again, again_skip=skip,
                           past=past)
    write = int(cut[0, U_KEY]) * CQ_UNIT_SIZE if len(cut) else after_last
    return _on_disk(WalkedQueue(write, -1 if top is None else top, after_last, int(rows[:, U_END].max()),
                                track.own_units.get(q, 0), again=again, past=past, again_skip=skip,
                                skipped=len(cut) if len(past) and not back.any() else 0), disk)


def _start_fails_533(placed: Placed, cq_file_size: int, at: int) -> None:
    """Refuse (one line) a reput that leaves an ordinary queue replayed whole (:attr:`Placed.whole`) with an empty last
    file on 5.3.3: ``getLastMappedFile`` created it at the write position, a file's start, for a unit the queue offset
    check then dropped.  After the reput, ``doRecheckReputOffsetFromCq`` calls ``recoverTopicQueueTable``, whose
    ``ConsumeQueue.correctMinOffset`` (5.3.3: no guard on the last file's read position, which 5.5.1 added) selects
    the 20 bytes before that empty file's write position: ``IllegalArgumentException``, the store's start fails (the
    broker does not start; its files are not a restart's).  A batch queue cannot be left so: 5.3.3's
    ``BatchConsumeQueue.putBatchMessagePositionInfo`` drops a unit (at or below its max) before
    ``getLastMappedFile``, so a file it creates gets the unit; and its ``correctMinOffset`` reads nothing before a
    file's start (``reviseMinOffsetInQueue`` and ``refreshCache`` skip a file under one unit, ``getMinMsgOffset``
    returns null there, the first file is read from 0 under a catch)."""
    for w in placed.whole:
        if isinstance(w, QueueFiles) and w.opened:
            last = max(w.opened)
            held = [p for p, *_u in w.units] + [p for p, _s in w.copies] + \
                ([w.blank_until - 1] if w.blank_until > last else [])
            if correct_min_offset_fails(last, not any(last <= p < last + cq_file_size for p in held)):
                raise refuse(at, f"for {w.topic}/{w.queue_id}, whose last consume queue file (at queue byte {last}) "
                                 f"the reput leaves empty: then {CORRECT_MIN_OFFSET_533}")


def _on_disk(walked: WalkedQueue, disk: OnDiskCut | None) -> WalkedQueue:
    """``walked`` (the walk's queue as the cut left it; its max -1 when the walk has no unit of it below
    ``processOffset``) for a queue on disk before the walk that the cut left a file of (``disk``:
    ``ConsumeQueue.truncateDirtyLogicFiles`` on its files on disk): their write position and max, wherever the walk's
    queue offsets put them.  The walk's dispatch skips a unit ending at or below the queue's max (``offset + size
    <= maxPhysicOffset``, the max loaded from those files at least), and the units it appends past it lie after every
    unit of those files, where the cut takes them (past ``processOffset``) or keeps them: so when the walk's units
    below ``processOffset`` end at or below the max the cut leaves those files, it appended none the cut keeps, and
    the files alone say where the cut leaves the queue.  Where the walk wrote the queue with units of one kind, a
    record's own ones or light ones (``ConsumeQueue.multiDispatchLmqQueue``: each ``%LMQ%`` queue's
    ``putMessagePositionInfo``, its ``INNER_MULTI_QUEUE_OFFSET`` the queue offset, from that queue's own max and
    write position), in its last data file, in its earlier ones too or there only (kept for the queues on disk:
    ``QueueTrack.keep_queues``, ``QueueTrack.own_walked``), ``disk`` is the cut after the walk's units were
    dispatched onto those files (its last element true: appended or skipped as ``putMessagePositionInfo`` does from
    the max and write position ``ConsumeQueue.recover`` loaded them with), so any of its units may end past the max
    the files alone leave (5.3.3's ``multiDispatchLmqQueue`` and ``putMessagePositionInfo`` read the same).  Refused
    (a guard: every queue on disk the walk wrote so is dispatched) a walk unit below ``processOffset`` ending past
    the max of files the walk's units were not dispatched onto (appended, or skipped by a larger max the files loaded
    with: not told apart).  A cut that goes on into files older than those ``ConsumeQueue.recover`` read reads them
    (``verify``)."""
    if disk is None:
        return walked
    if walked.max > disk[0] and not disk[3]:
        return WalkedQueue(0, 0, 0, 0, refused="a queue on disk before the walk whose files the cut leaves at write "
                           f"position {disk[2]}, max {disk[0]}, below where the walk's units below processOffset end "
                           f"({walked.max}), the walk's units not dispatched onto them")
    return dataclasses.replace(walked, write=disk[2], max=disk[0], disk=True)


def held_past_only(held: OnDiskCut, later: np.ndarray, ext_file_size: int, ext_end: int | None) -> WalkedQueue:
    """A consume queue (not a batch one) on disk before the walk that the walk wrote no unit of, only records past its
    end went to (``later``), a file of it left by the cut (``held``: ``ConsumeQueue.truncateDirtyLogicFiles`` on its
    files alone, as ``ConsumeQueue.recover`` loaded them: their units starting below ``processOffset`` kept, the write
    position after the last one, the max its end; 5.3.3's ``recover``, ``truncateDirtyLogicFiles`` and
    ``putMessagePositionInfo`` read as 5.5.1's but for a log line).  The reput puts its parsed units and then those
    records by ``putMessagePositionInfo`` from there (:func:`store_format.dledger_inside_replay.replay_queue`): each
    ending past the max appended at the write position unless its queue offset * 20 lies below it (not 0), whatever
    units the files hold.  The rebuild's queue holds none of those files' units (verify only: ``--as-restart`` plans
    with no queue on disk, the rebuild's own dispatch then), so its state is given as the broker's (the replay
    writes the queue whole).  With ext files
    (``ext_file_size``; ``ext_end``: :attr:`store_format.dledger_crash_cut.QueuesOnDisk.ext_end`): the ext files as
    ``ConsumeQueue.recover`` left them (``ConsumeQueueExt.recover`` walks every file's units to the last file's end
    of them, ``truncateByMaxAddress`` with the last ext address among the consume queue units it accepted moves that
    end back to after the unit there); the cut, a file of the queue staying, returns inside its loop and never reaches
    its own ``truncateByMaxAddress``, so the ext units of the parsed units and those records (``ConsumeQueueExt.put``
    in ``putMessagePositionInfoWrapper``) go from there, a byte end whatever the sizes of the units before it (ext
    units with filter bitmaps too: :attr:`WalkedQueue.ext_end`).  Refused with ext files not read (an assert-like
    guard: verify reads every such queue's)."""
    return _past_only(held[2], held[0], later, ext_file_size, ext_end, "", disk=True)


def emptied_past_only(top: int, later: np.ndarray, ext_file_size: int, ext_end: int | None) -> WalkedQueue:
    """A consume queue (not a batch one) on disk before the walk that the walk wrote no unit of, only records past its
    end went to (``later``), whose files the cut deleted (every file's first unit at or past ``processOffset``:
    ``ConsumeQueue.truncateDirtyLogicFiles`` sets the max to ``processOffset`` first and deletes them from the last
    back), its max ``top`` after the start's ``recoverTopicQueueTable``: ``ConsumeQueue.correctMinOffset`` with no
    file resets it to -1 on 5.5.1 (``-to-entry-past-only-kept``, ``-kept-ext``), keeps ``processOffset`` on 5.3.3
    (``-emptied-kept-embedded-to-entry-past-only-emptied``, ``-ext``).  The reput puts its parsed units and then
    those records by ``putMessagePositionInfo`` from there (:func:`store_format.dledger_inside_replay.replay_queue`):
    a unit ending at or below the max dropped, the first one appended into the file ``getLastMappedFile`` creates at
    its queue offset * 20, after ``fillPreBlank`` units, the next ones by the queue offset check.  The rebuild's queue
    holds none of the deleted files' units (verify only: ``--as-restart`` plans with no queue on disk, the rebuild's
    own dispatch then), so its state is given as the broker's (the replay writes the queue whole).  With ext files
    (``ext_end`` as for :func:`held_past_only`): the cut, having deleted every file, reaches its
    ``truncateByMaxAddress`` with no address (``maxExtAddr`` 1, set only from a unit it keeps; ``isExtAddr`` false),
    which does nothing, so the ext units (``ConsumeQueueExt.put`` in ``putMessagePositionInfoWrapper``) go on after
    the ext files' end as ``ConsumeQueue.recover`` left it (a byte end), after ext units no consume queue unit points
    at any more; refused when not read."""
    return _past_only(-1, top, later, ext_file_size, ext_end, ", whose files the cut deletes", disk=False)


def _past_only(write: int, top: int, later: np.ndarray, ext_file_size: int, ext_end: int | None, which: str, *,
               disk: bool) -> WalkedQueue:
    """The state of :func:`held_past_only`'s and :func:`emptied_past_only`'s queue: write position ``write``
    and max ``top`` as the cut left its files (the rebuild's given as the broker's), ``later`` its records past the
    walk's end, its ext units going on from the byte end ``ext_end`` (:attr:`WalkedQueue.ext_end`: whatever the
    sizes of the units before it, ``ConsumeQueueExt.put`` appends at the last file's write position or, the unit not
    fitting the file's rest, in the next file: :func:`store_format.dledger_inside_replay.replay_queue`); refused with
    ext files not read (``which`` says which queue)."""
    if ext_file_size and (ext_end is None or ext_end < 0):
        return WalkedQueue(0, 0, 0, 0, refused="a consume queue on disk before the walk that the walk wrote no unit "
                           f"of, only records past its end{which}, with ext files whose end after "
                           "ConsumeQueueExt.recover and truncateByMaxAddress is not read")
    return WalkedQueue(write, top, write, top, ext_end=ext_end if ext_file_size and ext_end is not None else -1,
                       past=tuple(map(tuple, positions(later).tolist())), disk=disk)


def _walked_batch(rows: np.ndarray, cut: np.ndarray, kept: np.ndarray, emptied_max: int | None, later: np.ndarray,
                  back: np.ndarray, earlier: int | None, done: int, rebuilt: int = 0) -> WalkedQueue:
    """A batch queue the walk wrote (``rows``, its units in its last data file: ``cut`` the last ones; none when it
    wrote the queue in its earlier data files only, ``done`` units, ``QueueTrack.batch_units``), as
    ``BatchConsumeQueue.truncateDirtyLogicFiles`` left it: the write position at its first
    cut unit (after its last unit when none was cut; the walk's units count from the queue's start), the max at the
    start of its last unit below ``processOffset`` (in the walk's earlier data files when none is in the last one:
    ``earlier``, ``QueueTrack.batch_before``; ``emptied_max``, ``processOffset - 1``, when it cut them all);
    the rebuild's after every walk unit; the cut units the reput dispatches again after the parsed ones, then its
    records past the walk's end (``later``, at the positions the rebuild's queue holds them, after the cut units:
    :attr:`WalkedQueue.again`), which ``place_inside`` puts by the same rule, but for the first cut units when the
    reput goes on past them (inside the parsed messages: :attr:`WalkedQueue.again_skip`, lost), all of them when it
    goes on past every one, its records past the walk's end alone appended after the parsed units
    (``putBatchMessagePositionInfo`` has no queue offset check: each one starting past the max goes at the write
    position).  The reput goes on at one offset and dispatches every record from there, so the cut units it
    dispatches again are always the last ones.  In the rebuild's queue the records past the walk's end follow the
    ``rebuilt`` parsed units its own dispatch appended after the walk's units (those starting past the last one's
    start, cut or not), so their sources lie past those (their bytes moved to where the broker appends them after
    the parsed units); so too in a queue the cut took no unit of (``-batch-uncut-to-entry-past``).
    Refused: its units below ``processOffset`` in an earlier data file the walk did not keep (no ``earlier``)."""
    top = int(kept[-1, U_OFFSET]) if len(kept) else emptied_max if emptied_max is not None else earlier
    refused = "a batch queue whose units below processOffset lie in an earlier data file" if top is None else ""
    if refused:
        return WalkedQueue(0, 0, 0, 0, refused=refused)
    assert top is not None
    # the reput going on past the first cut units (they lie inside the parsed messages) dispatches the rest again;
    # past all of them (a parsed message ending at or past the last one's end), none: the records past the walk's
    # end alone follow the parsed units (the cut units lost)
    skip = int(len(back) - back.sum())
    # the reput goes on at one commitlog offset and dispatches every record from there: the cut units it dispatches
    # again (in commitlog order, each below the log's end) are the last ones
    assert back[skip:].all(), "the cut units dispatched again are the last ones"
    count = int(rows[-1, U_KEY] + 1) if len(rows) else done   # the units the rebuild's queue holds after the walk
    after_last = count * BCQ_UNIT_SIZE
    # the records past the walk's end follow its cut units in the rebuild's queue
    # (dledger_crash_cut_reput.appended_keys)
    past = np.column_stack([later[:, U_OFFSET], later[:, U_END], count + rebuilt + np.arange(len(later))])
    units = np.concatenate([cut[:, [U_OFFSET, U_END, U_KEY]], past])
    again = tuple((int(o), int(e - o), int(k)) for o, e, k in units) if back.any() or len(later) else ()
    return WalkedQueue(int(cut[0, U_KEY]) * BCQ_UNIT_SIZE if len(cut) else after_last, top, after_last,
                       int(rows[:, U_OFFSET].max()) if len(rows) else top, batch=True, again=again,
                       again_skip=skip if again else 0)


def cut_refusal(why: str) -> UnsupportedConfigError:
    """The one-line refusal of a cut that is not modelled (``why``: what the store has)."""
    return UnsupportedConfigError(f"a 5.x DLedger store whose last shutdown was not clean (abort file): "
                                  f"truncateDirtyLogicFiles cuts the queues dledgerRecoverAbnormally wrote at its "
                                  f"short processOffset, with {why}; not modelled, let the broker recover")

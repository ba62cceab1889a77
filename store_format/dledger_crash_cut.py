"""5.5.1's cut of the consume queues a DLedger crash recovery just wrote, and what the start then puts back.

Mirrors rocketmq-store 5.5.1 ``ConsumeQueue.truncateDirtyLogicFiles``, ``BatchConsumeQueue.truncateDirtyLogicFiles``,
``ConsumeQueue.putMessagePositionInfoWrapper``/``putMessagePositionInfo``/``multiDispatchLmqQueue``,
``BatchConsumeQueue.putBatchMessagePositionInfo`` and ``ConsumeQueueExt.put``/``truncateByMaxAddress``.

``DLedgerCommitLog.dledgerRecoverAbnormally`` (rocketmq-store 5.5.1) ends with ``processOffset``, its last
data file's start plus the message sizes in it (the 48-byte entry headers left out), and calls
``DefaultMessageStore.truncateDirtyLogicFiles(processOffset)`` when the checkpoint's ``logicsPhysicalOffset``
(``getDispatchFromPhyOffset(false)``, read before the recovery) is at or past it.  That is
``ConsumeQueueStore.truncateDirty``: when the queues' largest ``getMaxPhysicOffset`` (after the walk's
dispatch: the end of the last unit put) is at or past the offset, ``ConsumeQueue.truncateDirtyLogicFiles``
on every queue (5.3.3 the same file code, but its ``truncateDirty`` does not check, and it is called only
when the queues loaded from disk reach ``processOffset``: never with ``consumequeue/`` deleted):

* the queue's max physical offset is set to ``processOffset``; from its last file backwards, a file whose
  first unit's commitlog offset is at or past it is deleted (``MappedFileQueue.deleteLastMappedFile``: the
  file is destroyed on disk); in the first file that stays, the units below it are kept (a ``fillPreBlank``
  unit, offset 0 and size 2147483647, too) and the write position is set after the last one, whose
  ``offset + size`` becomes the queue's max physical offset (2147483647 after ``fillPreBlank`` units only;
  ``processOffset`` itself when every file went).  The units after the write position stay on disk.
* a light queue (multi-dispatch, ``%LMQ%...``) is a ``ConsumeQueue`` like any other: cut the same way, its
  units placed by the queue offsets their messages' ``INNER_MULTI_QUEUE_OFFSET`` gives.  One that also holds a
  record's own units (a message put to topic ``%LMQ%...`` itself: its queue offsets from ``topicQueueTable``, the
  light ones' from ``lmqTopicQueueTable``) has them where ``putMessagePositionInfo`` put them in commitlog order,
  not where their queue offsets say (``dledger_queue_track.replayed``; with units of one kind in the walk's earlier
  data files, those at their queue offsets and the last file's replayed from after them; of both kinds there, the
  last file's replayed from the write position and max the rule left after them, ``QueueTrack.replayed_before``; on
  disk before the walk, ``truncateDirtyLogicFiles`` on the files ``ConsumeQueue.recover`` loaded once the walk's units
  were dispatched onto them, ``QueueTrack.mixed_walked``, the reput set inside an entry replaying it whole from the
  write position and max that leaves, a parsed unit going to it or not, ``dledger_inside_mixed.mixed_on_disk`` and
  ``mixed_disk_put_back``: its cut units dispatched again and its records past the walk's end each by the rule with
  its own queue offset, written from its record, with ext files their ext units after the walk's; ``verify`` only;
  a reput not set inside an entry putting back its cut units the same, with no parsed message, its records of the
  walk's last data file from its start dispatched onto the state the cut left): the cut, reading the file's units,
  goes by those positions (its write
  position, the max the reput starts from); a reput set inside an entry dispatching its
  cut units again after parsed units puts them as ``dledger_inside_replay.replay_queue`` says (from those positions);
  one dispatching every cut unit again with no parsed unit there starts from the walk's own state before the first
  (the cut's write position and max), so each appended one goes back where it was and each one the walk dropped is
  dropped again; a reput set inside an entry putting back only its last cut units (the first inside the parsed
  messages), its queue offsets checked against a write position the walk never had there, replays it whole from
  the state the cut left (``dledger_inside_mixed.mixed_put_back``: ``putMessagePositionInfo`` with each one's own
  queue offset, one the walk dropped written from its record, then its records past the walk's end; with ext files
  an own unit's ext unit first, a light one none; on disk before the walk: ``mixed_disk_put_back``; every unit of
  it cut, no file left: a new file where the first one put back falls, ``fillPreBlank`` before it, ext files kept).
* with ``enableConsumeQueueExt`` the ext files are not touched: the method reaches its
  ``ConsumeQueueExt.truncateByMaxAddress`` call only once every file of the queue went, with the address 1,
  which is no ext address (``isExtAddr``), so nothing is cut.
* ``BatchConsumeQueue.truncateDirtyLogicFiles`` (a BatchCQ topic's queue, 46-byte units placed one after
  the other): the same walk from the last file back, but the queue's max physical offset
  (``maxMsgPhyOffsetInCommitLog``) becomes the *start* of the last unit kept, or ``processOffset - 1`` when
  every file went.
* ``index/`` is not touched.
* then ``DefaultMessageStore.recoverTopicQueueTable`` (``ConsumeQueue.correctMinOffset``): 5.5.1 sets the max
  physical offset of a queue left with no file to -1; 5.3.3 leaves it at ``processOffset``.

``DefaultMessageStore.start`` then sets the reput at ``getConfirmOffset()`` (the committed position) or,
with ``recheckReputOffsetFromCq=true``, at the largest ``getMaxPhysicOffset`` over the cut queues (at least
the commitlog's min offset): ``doRecheckReputOffsetFromCq``.  The reput walks to the log's end (the group
commits the rest).  ``ConsumeQueue.putMessagePositionInfo`` drops a unit with ``offset + size`` at or below
its queue's max (or whose queue offset is not 0 and falls below the write position, "build consume queue
repeatedly": no cut unit's does), and appends every other unit at the queue's write position (``getLastMappedFile``: the
last file, or a new one after it when it is full), whatever queue offset the unit's message holds ("logic
queue order maybe wrong" is only logged); only in a queue left with no file does the new file start where
the unit's own offset falls, with ``fillPreBlank`` units before it.  A cut queue's units are consecutive, so
the reput puts back a suffix of them (those at or past where it starts):

* all of them: each lands at its own position, the files stay as the recovery wrote them;
* none: they stay only as bytes past the write position, or not at all in a deleted file;
* some (:class:`QueueMove`): they land from the write position on, shifted down over the ones left out
  (in a file that stayed, the bytes after them are still the old units); in a queue the cut emptied, at
  their own positions in a new file that starts with ``fillPreBlank`` units.

A batch queue's units go through ``BatchConsumeQueue.putBatchMessagePositionInfo``: dropped when their
offset is at or below the queue's max (no cut unit is: every one starts at or past ``processOffset``),
else appended at the write position (``getLastMappedFile(getMaxOffset())``: 0 in a queue the cut emptied,
which is where its first unit was, the walk having built the queue from nothing).  So the cut batch units
from the reput's start on are put back, from the first cut unit's position on, shifted down over the others.
A light queue's units are put by ``doDispatchLmqQueue`` after the record's own unit, whatever became of it.
With ``enableConsumeQueueExt``, ``ConsumeQueue.putMessagePositionInfoWrapper`` puts an ext unit
(``ConsumeQueueExt.put``) for every record of its own queue the reput walks *before* the unit is dropped or
appended (:class:`ExtAgain`): the ext files grow by one unit per record from the reput's start to the log's
end, after the units the recovery's walk put, and a unit put back holds its new ext unit's address (light
queue units hold the tags code, batch queues have no ext files).  That holds without a cut too (5.3.3, or
5.5.1 when the checkpoint is behind ``processOffset``): the units are all dropped, the ext units still put.
When the walk ended at a damaged message before the log's end, the records past it get theirs after those
(:class:`ExtAgain` counts the walk's records only, its addresses are those of the cut units put back: the units
of the records past the walk hold the addresses their own dispatch gave them).

A reput set at 2147483647 inside an entry may first parse well-formed messages there and dispatch them into the
queues as the cut left them (:mod:`store_format.dledger_inside_units`: their ext units too, the files
created for them and what the rebuild's own dispatch of them put that the broker's queues lack:
:attr:`QueueCut.inside_placed`), and a blank's empty request 48 bytes further into
topic "" queue 0 (with ``enableConsumeQueueExt`` its ext unit first, the unit holding its address:
``pipelines.restart_cut.apply_cut``), before it goes on.

``IndexService.buildIndex`` indexes the last indexed record again when the reput reaches it.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np

from .batchconsumequeue import BCQ_UNIT_SIZE
from .dledger_inside_mixed import EarlierOwn, OnDiskCut, earlier_reput_refusal, mixed_disk_put_back, mixed_put_back
from .dledger_inside_state import QueueFiles
from .dledger_inside_units import ParsedUnit, Placed, Tags
from .dledger_inside_walked import cut_refusal, inside_units
from .dledger_queue_track import (
    BLANK_MAX,
    KIND_BATCH,
    KIND_CQ,
    KIND_LIGHT,
    U_END,
    U_KEY,
    U_KIND,
    U_OFFSET,
    U_QUEUE,
    QueueTrack,
    max_key,
    mixed_queues,
    replayed,
)
from .errors import UnsupportedConfigError
from .layout import CQ_UNIT_SIZE

__all__ = ["BLANK_MAX", "ExtAgain", "OnDiskCut", "QueueCut", "QueueMove", "QueuesOnDisk", "QueueTrack", "cut_queues",
           "ext_reput"]




@dataclasses.dataclass(frozen=True)
class QueuesOnDisk:
    """The consume queues a store holds when the crash restart starts (``verify`` predicts that start on the store as it
    is): their largest max physical offset after ``ConsumeQueue.recover`` (``BatchConsumeQueue.recover``'s: the start of
    its last unit; 5.3.3 passes it to ``dledgerRecoverAbnormally``; 5.5.1's ``truncateDirty`` checks it with the
    walk's), and, per queue ``(topic, queue id)``, its max physical offset once ``truncateDirtyLogicFiles`` cut its own
    units at an offset (``max_after_cut(offset, walked)``; a consume queue in ``walked``, the walk's units of a queue it
    wrote with units of one kind (own or light), in its last data file, its earlier ones too or only when one of
    ``consume_queues`` (commitlog offset, size, queue offset: ``QueueTrack.own_walked``; one it wrote both a record's
    own units and light ones in, the light ones with their light queue offsets: ``QueueTrack.mixed_walked``; a batch
    queue it wrote in its last data file, its units in earlier ones, if any, first, or in those only, kept when it is
    one of ``batch_queues``: ``QueueTrack.batch_walked``), once ``putMessagePositionInfo``
    (``putBatchMessagePositionInfo``) dispatched those onto its files:
    :func:`store_format.consumequeue_recovery.dispatch_units`), with whether a file of it stays, its write position then
    and whether the walk's units were dispatched (:data:`OnDiskCut`): a consume queue's, the end of its last unit below
    it, 2147483647 after ``fillPreBlank`` units only, the offset itself when every file goes; a batch queue's
    (``BatchConsumeQueue.truncateDirtyLogicFiles``), the start of its last unit below it, the offset - 1 when every file
    goes."""
    max_physic_offset: int
    max_after_cut: Callable[[int, dict[tuple[str, int], np.ndarray]], dict[tuple[str, int], OnDiskCut]]
    # a batch queue's unit numbers of the units of commitlog offsets (-1: not held): QueueTrack.place_batch
    batch_position: Callable[[tuple[str, int], np.ndarray], np.ndarray] | None = None
    # the consume queues holding units (QueueTrack.keep_queues: the walk's units of its earlier files kept for them)
    consume_queues: frozenset[tuple[str, int]] = frozenset()
    # the batch queues holding units (QueueTrack.keep_queues too: the walk's units of its earlier files dispatched onto
    # their files, QueueTrack.batch_walked)
    batch_queues: frozenset[tuple[str, int]] = frozenset()
    # with ext files (enableConsumeQueueExt), per consume queue holding units: where ConsumeQueue.recover leaves its
    # ext files' end, the real offset at which ConsumeQueueExt.put goes on (ConsumeQueueExt.recover, then
    # truncateByMaxAddress with the last ext address among the units it accepted: consumequeue_ext_recovery.recover_ext;
    # any unit sizes before it, filter bitmap units too); truncateDirtyLogicFiles leaves a queue's ext files alone
    # when a file of it stays (it returns inside its loop, before truncateByMaxAddress)
    ext_end: Mapping[tuple[str, int], int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class QueueMove:
    """A cut queue whose units the start's reput puts back only in part (module docstring): the ``count``
    units that sat at queue byte position ``source`` in the recovery's queue are appended from ``target`` on
    (the cut's write position: the first cut unit's own position); ``blank_from`` >= 0 for a queue the cut
    emptied: then ``target == source``, and the new file holds ``fillPreBlank`` units from ``blank_from``
    (its start) up to ``target``.  Files from the first one past ``target`` on are new (zeros where no
    unit is put); the file holding ``target``, when it is not a file start, keeps its other bytes.
    ``batch``: a batch consume queue (``batchconsumequeue/``, 46-byte units; never ``blank_from``).
    ``zero_from`` >= 0: the queue position from which the broker never wrote the file holding ``target`` (the
    units of records past where the recovery's walk ended, which only the start's reput dispatches), whose bytes
    from there are zeros but for the units moved in."""
    topic: str
    queue_id: int
    source: int
    target: int
    count: int
    blank_from: int = -1
    batch: bool = False
    zero_from: int = -1


@dataclasses.dataclass(frozen=True)
class ExtAgain:
    """An ext queue's share of the start's reput (``enableConsumeQueueExt``):
    ``ConsumeQueue.putMessagePositionInfoWrapper`` puts an ext unit (``ConsumeQueueExt.put``, at the ext
    write position: after the ``before`` units the recovery's walk put, one per record) for each of the
    queue's ``count`` records the reput walks (the last ``count`` of those ``before``: the same unit again),
    before ``putMessagePositionInfo`` drops the unit or puts it back; the unit put back holds that new ext
    unit's address.  ``positions``: the queue byte positions of the units put back, ``ordinals``: for each,
    which of the ``count`` records it is (0: the first the reput walks); ``skip``: of the ``before`` units, the
    last ones the messages parsed where the reput was set put (after the walk's: the walk's units of those
    records end ``skip`` units before ``before``)."""
    topic: str
    queue_id: int
    before: int
    count: int
    positions: np.ndarray
    ordinals: np.ndarray
    skip: int = 0


@dataclasses.dataclass(frozen=True)
class QueueCut:
    """``truncateDirtyLogicFiles(processOffset)`` and the start's reput after it (module docstring):
    where the reput starts, the consume queue files the cut deleted that nothing writes again
    (``(topic, queue id, file start)``; ``batch_dropped``: batch consume queue files), the queues whose
    units are put back only in part (``moves``), the units cut off and not put back (``lost``: per queue,
    their commitlog offsets; past their queue's write position or overwritten, on disk only where their file
    stayed; also the records past the walk's end whose units the reput drops after messages parsed where it was
    set: of an ordinary queue replayed whole, ``Placed.whole``, those it does not append),
    with the number of units cut and put back (``restored``), and the ext units the
    reput puts (``ext_again``)."""
    reput: int
    dropped: tuple[tuple[str, int, int], ...]
    lost: dict[tuple[str, int], np.ndarray]
    restored: int
    moves: tuple[QueueMove, ...] = ()
    batch_dropped: tuple[tuple[str, int, int], ...] = ()
    ext_again: tuple[ExtAgain, ...] = ()
    inside_from: int = -1   # where the reput was set when that is inside an entry (``reput``: where it goes on from)
    # the records the reput's check parses from inside_from on before it goes on at ``reput`` (``(start, end)``,
    # store_format.dledger_reput_inside): dispatched after the walk's records (store_format.store.then_pieces)
    inside_records: tuple[tuple[int, int], ...] = ()
    # reset_emptied (5.5.1): the consume queues the cut left with no file, whose max recoverTopicQueueTable sets to -1
    reset: tuple[tuple[str, int], ...] = ()
    # where the units of inside_records go in the queues the walk wrote, the files created for them, and what the
    # rebuild's own dispatch of them put that the broker's queues do not hold (store_format.dledger_inside_units)
    inside_placed: Placed = Placed()
    # a reput set at 2147483647 gone on before the walk's data file, where a queue the cut left fillPreBlank units
    # only appends a record of queue offset 0 (store_format.dledger_crash_before.appended_before): its units as the
    # broker puts them and the rebuild's ones it does not hold
    before_placed: Placed = Placed()
    # verify: the queues on disk before the walk whose files this cut deletes every file of (no file left)
    held_emptied: frozenset[tuple[str, int]] = frozenset()

    @property
    def lost_units(self) -> int:
        return sum(len(v) for v in self.lost.values())


# where the reput set inside an entry goes on, the records it dispatches first and their consume queue units
# (dledger_crash._reput_inside)
Inside = Callable[[int], tuple[int, tuple[tuple[int, int], ...], tuple[ParsedUnit, ...]]]


def cut_queues(track: QueueTrack, process_offset: int, *, cq_file_size: int, bcq_file_size: int, ext: bool,
               recheck: bool, min_offset: int, confirm_offset: int, end: int,
               on_disk: dict[tuple[str, int], OnDiskCut] | None = None,
               inside: Inside | None = None, ext_file_size: int = 0,
               reset_emptied: bool = False, ext_earlier: EarlierOwn | None = None,
               after: np.ndarray | None = None, walk_end: int = -1, tags: Tags | None = None,
               ext_held: Mapping[tuple[str, int], int] | None = None) -> QueueCut:
    """The cut at ``process_offset`` of the queues the walk filled (``track``), and the start's reput from
    ``confirm_offset`` (the committed position) or, with ``recheck``, from the cut queues' largest max (at
    least ``min_offset``), walking to ``end`` (module docstring); ``ext``: ``enableConsumeQueueExt``.
    ``on_disk``: the consume queues the store held before the walk (batch queues too), each with its max
    physical offset once the cut took its own units, whether a file of it stays and its write position
    (:class:`QueuesOnDisk`);
    the walk's units of every record from its start file
    are in ``track`` whether its dispatch appended them or found them there, so the units the cut takes
    are the walk's.  ``inside``: where the reput set at ``process_offset`` (inside an entry) dispatches
    from, or where it stands when it dispatches nothing, and the messages its check parses on the way (at
    ``processOffset``, one byte before it or 2147483647: :attr:`QueueCut.inside_records`, dispatched before it
    goes on, their units appended after the walk's, and in the queues the walk wrote where the cut left their write
    positions, :attr:`QueueCut.inside_placed`, with ext files holding their ext units' addresses, ``ext_file_size``
    the ext file size; a blank's empty request, a record of no bytes, goes to topic "" queue 0, its ext unit too:
    ``pipelines.restart_cut.apply_cut``; where it then goes on inside the log, at an entry's start or a file's, it puts
    back the cut units from there like any reput; after a walk that ended early, from before its end only: then it
    walks the walk's records from there again, and the damaged message and the records after it, ``after``)
    (:func:`store_format.dledger_reput_inside.reput_inside_entry`,
    :func:`store_format.dledger_inside_units.place_inside`; ``ext_held``: :attr:`QueuesOnDisk.ext_end`).
    ``reset_emptied`` (5.5.1): a queue the
    cut left with no file counts -1 for the reput's start, not ``processOffset``.

    ``after``, ``walk_end`` (a walk whose message check failed at ``walk_end``, inside the log, before ``end``): the
    units of the records from there to ``end`` (:data:`store_format.dledger_queue_track.UNIT_COLUMNS`), which only the
    start's reput, whose check reads no CRC, dispatches.  A reput from at or before ``walk_end`` appends them to their
    queues after the cut units it puts back (a queue's units past the walk follow its cut ones: one suffix, moved with
    them, :attr:`QueueMove.zero_from`); one from between ``walk_end`` and ``end`` appends those from its start on, the
    records before it left out (no cut unit is put back: every one lies before ``walk_end``); one from ``end`` on never
    reaches them.  Either way the rebuild's walk, which leaves the same records out, put them where
    :func:`_appended_keys` says, the positions the moves start from.  ``tags(offset, size, queue)``: the tags code of
    a record's own unit for ``queue`` (read from the log), for a record past the walk's end the reput appends to a
    queue replayed whole (:func:`store_format.dledger_inside_replay.replay_queue`).

    Raises:
        UnsupportedConfigError: a reput that would start inside an entry without ``inside``: at
            ``processOffset`` itself, one byte before it (a batch queue the cut emptied), or at 2147483647 (a queue
            left with ``fillPreBlank`` units only) inside a log past 2 GiB;
            with ext, a reput from before the walk's last data file when ``track`` kept only that file's units;
            messages parsed where it was set that :func:`store_format.dledger_inside_units.place_inside` refuses.
    """
    units = track.last_file()
    below = units[:, U_OFFSET] < process_offset
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
    inside_from = -1
    inside_records: tuple[tuple[int, int], ...] = ()
    placed = Placed()
    if recheck:
        # 5.5.1 recoverTopicQueueTable (ConsumeQueue.correctMinOffset) sets the max of a queue left with no file to
        # -1 before the start; 5.3.3 keeps processOffset there
        reput = max(top, *(-1 if reset_emptied and v == process_offset else v for v in max_after.values()),
                    min_offset, 0)
        # an emptied queue's max: processOffset (5.3.3 ConsumeQueue) or processOffset - 1 (BatchConsumeQueue)
        if reput in (process_offset, process_offset - 1) and reput > top:
            if inside is None:
                raise _refuse(f"the reput would start at {reput}, inside an entry")
            inside_from, (reput, inside_records, parsed) = reput, inside(reput)   # where doReput goes on from
        elif reput == BLANK_MAX and reput < end:   # a queue left with fillPreBlank units only
            if inside is None:
                raise _refuse("the reput would start at 2147483647 (a queue left with fillPreBlank units only), inside "
                              "the log")
            inside_from, (reput, inside_records, parsed) = reput, inside(reput)
        if inside_records:   # the messages its check parses where it was set, into the queues as the cut left them
            # (store_format.dledger_reput_inside, store_format.dledger_inside_units)
            placed = inside_units(track, parsed, per_queue, max_after, process_offset, on_disk, reput, end, after,
                                  cq_file_size, inside_from, ext_file_size if ext else 0, reset_emptied,
                                  bcq_file_size, tags, ext_held)
            assert not ext or ext_file_size > 0, "enableConsumeQueueExt: the ext file size"
    else:
        reput = confirm_offset
    zero_from: dict[int, int] = {}
    own: dict[int, np.ndarray] = {}   # per cut queue, its rows' own queue offsets (before _appended_keys)
    if after is not None and reput > walk_end:
        # the records from walk_end to the reput's start are never dispatched (DLedgerCrash.gap); from the log's
        # end on, nothing past the walk is
        after = after[after[:, U_OFFSET] >= reput]
    if after is not None and len(after):
        for q in np.unique(after[:, U_QUEUE]):
            rows = after[after[:, U_QUEUE] == q]
            if int(q) in per_queue:   # a queue the cut took units of: its units past the walk follow them
                own[int(q)] = np.concatenate([per_queue[int(q)][:, U_KEY], rows[:, U_KEY]])
                rows = _appended_keys(rows, int(per_queue[int(q)][-1, U_KEY]))
                per_queue[int(q)] = np.concatenate([per_queue[int(q)], rows])
                zero_from[int(q)] = int(rows[0, U_KEY]) * (BCQ_UNIT_SIZE if rows[0, U_KIND] == KIND_BATCH
                                                           else CQ_UNIT_SIZE)
    dropped: list[tuple[str, int, int]] = []
    batch_dropped: list[tuple[str, int, int]] = []
    lost: dict[tuple[str, int], np.ndarray] = {}
    moves: list[QueueMove] = []
    put_back: dict[int, tuple[np.ndarray, np.ndarray]] = {}   # per queue: offsets and positions of units put back
    restored = 0
    whole = {(w.topic, w.queue_id): w for w in placed.whole}   # ordinary queues replayed whole (apply_cut)
    for q, rows in per_queue.items():
        batch = rows[0, U_KIND] == KIND_BATCH
        if (w := whole.get(track.names[q])) is not None:   # no file cut nor moved here: apply_cut writes them whole
            restored += _take_whole(w, rows, lost, track.names[q])
            continue
        again = (rows[:, U_OFFSET] >= reput) & (rows[:, U_OFFSET] < end)
        if not batch:   # putBatchMessagePositionInfo drops offset <= max: no cut unit (max < processOffset)
            again &= rows[:, U_END] > max_after.get(q, -1)
        n = int(again.sum())
        if q in disk_mixed and (inside_from >= 0 or n or q in both_disk):
            # on disk before the walk, no parsed unit going to it (of both kinds in the walk's earlier data files
            # too), the reput set inside an entry or, not set inside one (5.5.1 and 5.3.3), putting back cut units of
            # it (of both kinds earlier: none too; from before the walk's last data file: earlier_reput_refusal):
            # replayed whole from its files as the cut left them, its cut units (and its records of the walk's last
            # data file from the reput's start) the reput dispatches and its records past the walk's end by the rule
            # with their own queue offsets (dledger_inside_mixed.mixed_disk_put_back; verify only)
            assert on_disk is not None
            label = "/".join(map(str, track.names[q]))
            if inside_from < 0 and reput < track.base and (why := earlier_reput_refusal(
                    track, on_disk[track.names[q]], reput, ext_file_size if ext else 0, ext_earlier)) is not None:
                raise _refuse(f"the queue {label} holding a record's own units and light ones, on disk before the "
                              f"walk, dispatched by a reput not set inside an entry, from before the walk's last data "
                              f"file, {why}")
            w = mixed_disk_put_back(track, q, on_disk[track.names[q]], process_offset, reput, end, after,
                                    cq_file_size, inside_from if inside_from >= 0 else reput, tags,
                                    ext_file_size if ext else 0, (ext_held or {}).get(track.names[q]),
                                    inside=inside_from >= 0, earlier=ext_earlier)
            if w is None:   # mixed_on_disk's guards: the walk's units were dispatched onto its files (disk_mixed)
                why = "whose files the cut deletes" if not on_disk[track.names[q]][1] else \
                    "with ext files whose end is not read"
                raise _refuse(f"the queue {label} holding a record's own units and light ones, on disk before the "
                              f"walk, no parsed unit going to it, {why}")
            placed = dataclasses.replace(placed, whole=placed.whole + (w,))
            restored += _take_whole(w, rows, lost, track.names[q])
            continue
        if q in both_disk:
            raise _refuse(f"the queue {'/'.join(map(str, track.names[q]))} holding a record's own units and light ones "
                          "in the walk's earlier data files, on disk before the walk, no parsed unit going to it, "
                          "the walk's units not dispatched onto its files (a guard: verify keeps them)")
        assert again[len(rows) - n:].all(), "the units put back are the queue's last ones"
        if q in mixed and 0 < n < len(rows):
            # none parsed there, the first cut units inside the parsed messages: the queue replayed whole from the
            # state the cut left (dledger_inside_mixed.mixed_put_back; apply_cut writes it), the last ones by the
            # rule with their own queue offsets, then its records past the walk's end with theirs (ext files or not;
            # not on disk before the walk)
            past = after[after[:, U_QUEUE] == q] if after is not None else units[:0]
            k = len(rows) - len(past)   # its cut units (rows: those, then its records past the walk's end)
            w = mixed_put_back(track, q, rows[:k], again[:k], process_offset, cq_file_size, inside_from, tags,
                               earlier.get(q), past, ext_file_size if ext else 0,
                               q not in kept and max_after.get(q) == process_offset, reset_emptied) \
                if inside_from >= 0 and track.names[q] not in (on_disk or {}) and \
                (past[:, U_OFFSET] == rows[k:, U_OFFSET]).all() and again[k:].all() else None
            if w is not None:
                placed = dataclasses.replace(placed, whole=placed.whole + (w,))
                restored += _take_whole(w, rows, lost, track.names[q])
                continue
            label = "/".join(map(str, track.names[q]))
            if ext and q not in kept and max_after.get(q) == process_offset:
                raise _refuse(f"the queue {label} holding a record's own units and light ones, with ext files, every "
                              "unit of which the cut took (no file left), whose cut units the reput puts back, only "
                              "the last ones")
            raise _refuse(f"the queue {label} holding a record's own units and light ones, whose cut units the reput "
                          "puts back, only the last ones (their queue offsets against positions the walk did not give "
                          "them)")
        unit, size = (BCQ_UNIT_SIZE, bcq_file_size) if batch else (CQ_UNIT_SIZE, cq_file_size)
        pos = rows[:, U_KEY] * unit
        if n == len(rows) and q in mixed_dropped:
            # every cut unit of a mixed queue dispatched again, none parsed there: from the state the cut left, the
            # walk's own before its first cut unit (write position and max), putMessagePositionInfo does as the walk
            # did, each appended one back where it was, each one the walk dropped dropped again (no queue holds it)
            walked = mixed[q][0][len(mixed[q][0]) - n:] >= 0
            restored += int(walked.sum())
            put_back[q] = (rows[walked, U_OFFSET], pos[walked])
            lost[track.names[q]] = rows[~walked, U_OFFSET]
            continue
        restored += n
        if n == len(rows):
            put_back[q] = (rows[:, U_OFFSET], pos)
            continue
        name = track.names[q]
        lost[name] = rows[:len(rows) - n, U_OFFSET]
        first, last = int(pos[0]), int(pos[-1])
        if n == 0:
            gone_from = first
        elif not batch and q not in kept and max_after[q] == process_offset:   # the cut emptied the queue
            # the new file starts where the first unit put back falls by its own queue offset (fillPreBlank)
            source, target = int(pos[-n]), int(own[q][-n]) * unit if q in own else int(pos[-n])
            blank_from = target - target % size
            moves.append(QueueMove(*name, source, target, n, blank_from))
            put_back[q] = (rows[-n:, U_OFFSET], target + unit * np.arange(n, dtype=np.int64))
            dropped += [(*name, f) for f in range(first, blank_from, size)]
            continue
        else:   # appended at the write position (a batch queue the cut emptied: 0, its first unit's)
            moves.append(QueueMove(*name, int(pos[-n]), first, n, batch=bool(batch), zero_from=zero_from.get(q, -1)))
            put_back[q] = (rows[-n:, U_OFFSET], first + unit * np.arange(n, dtype=np.int64))
            gone_from = first + n * unit
        start = -(-gone_from // size) * size   # the first file that starts at or past it
        (batch_dropped if batch else dropped).extend(
            (*name, f) for f in range(start, last - last % size + 1, size))
    for name, w in whole.items():   # its records past the walk's end dropped, its cut units none went on past
        if w.lost:
            lost[name] = np.union1d(lost.get(name, np.zeros(0, np.int64)), np.asarray(w.lost, dtype=np.int64))
    if walk_end >= 0:   # the units of records past the walk hold the ext units their own dispatch put
        put_back = {q: (off[off < walk_end], pos[off < walk_end]) for q, (off, pos) in put_back.items()}
    ext_again = ext_reput(track, reput, end, put_back) if ext else ()
    if placed.ext_put:   # the parsed units' ext units lie between the walk's and the reput's
        parsed_ext = {(t, qid): n for t, qid, n in placed.ext_put}
        ext_again = tuple(dataclasses.replace(a, before=a.before + parsed_ext.get((a.topic, a.queue_id), 0),
                                              skip=parsed_ext.get((a.topic, a.queue_id), 0)) for a in ext_again)
    reset = sorted(track.names[q] for q, v in max_after.items() if reset_emptied and v == process_offset)
    return QueueCut(reput, tuple(sorted(dropped)), lost, restored, tuple(moves), tuple(sorted(batch_dropped)),
                    ext_again, inside_from, inside_records, tuple(reset), placed,
                    held_emptied=frozenset(name for name, c in (on_disk or {}).items() if not c[1]))


def _appended_keys(rows: np.ndarray, last: int) -> np.ndarray:
    """``rows``, one queue's units of the records past the walk's end that the start's reput dispatches (in
    commitlog order), with the queue positions (in units) the walk's dispatch of every record before them leaves
    them at: right after ``last``, the walk's last unit in that queue, one after the other
    (``putMessagePositionInfo`` appends at the write position whatever queue offset a unit holds).  Their own
    queue offsets when the reput walks on from the walk's end; below them by the records it leaves out when it
    begins past it (:attr:`store_format.dledger_crash_plan.DLedgerCrash.gap`)."""
    out = rows.copy()
    out[:, U_KEY] = last + 1 + np.arange(len(rows), dtype=np.int64)
    return out


def ext_reput(track: QueueTrack, reput: int, end: int,
              put_back: dict[int, tuple[np.ndarray, np.ndarray]] | None = None) -> tuple[ExtAgain, ...]:
    """The ext units the start's reput from ``reput`` to ``end`` puts (:class:`ExtAgain`), one per record of a
    record's own consume queue (not a light or batch queue), whether its unit is dropped or put back
    (``put_back``: per queue, the commitlog offsets and queue byte positions of the units put back).

    The records of the files before the walk's last one count too (``track.keep_own``): cut units lie in the
    last file only, so only the ordinals of the units put back depend on them.

    Raises:
        UnsupportedConfigError: the reput starts before the walk's last data file and ``track`` kept only that
            file's units.
    """
    if reput >= end:
        return ()
    if reput < track.base and not track.keep_own:
        raise _refuse(f"consume queue ext files (enableConsumeQueueExt=true) and the start's reput from {reput}, "
                      f"before the recovery's last data file ({track.base})")
    last = track.last_file()
    last = last[last[:, U_KIND] == KIND_CQ][:, [U_OFFSET, U_QUEUE]]
    units = np.concatenate([*(track.own_before if reput < track.base else []), last])   # in commitlog order
    units = units[(units[:, 0] >= reput) & (units[:, 0] < end)]
    out = []
    for q in np.unique(units[:, 1]):
        offsets = units[units[:, 1] == q, 0]
        back_off, back_pos = (put_back or {}).get(int(q), (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        ordinals = np.searchsorted(offsets, back_off)
        assert (offsets[ordinals] == back_off).all() if len(back_off) else True
        out.append(ExtAgain(*track.names[int(q)], track.own_units[int(q)], len(offsets),
                            np.asarray(back_pos, dtype=np.int64), ordinals))
    return tuple(out)


def _take_whole(w: QueueFiles, rows: np.ndarray, lost: dict[tuple[str, int], np.ndarray],
                name: tuple[str, int]) -> int:
    """A queue the replay writes whole (``w``): how many of its cut units (``rows``) it puts back; those it does not
    go to ``lost`` under ``name``."""
    got = np.isin(rows[:, U_OFFSET], np.asarray(w.put_back, dtype=np.int64))
    if not got.all():
        lost[name] = rows[~got, U_OFFSET]
    return int(got.sum())


def _refuse(why: str) -> UnsupportedConfigError:
    return cut_refusal(why)

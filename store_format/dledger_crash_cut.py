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
repeatedly"), and appends every other unit at the queue's write position (``getLastMappedFile``: the
last file, or a new one after it when it is full), whatever queue offset the unit's message holds ("logic
queue order maybe wrong" is only logged); only in a queue left with no file does the new file start where
the unit's own offset falls, with ``fillPreBlank`` units before it.  A cut queue's units are consecutive (the walk
appended them one after the other from one past its unit before them, a queue offset ahead of the write position too;
one below it the walk dropped), so the reput puts back a suffix of them (those at or past where it starts):

* all of them: each lands at its own position, the files stay as the recovery wrote them;
* none: they stay only as bytes past the write position, or not at all in a deleted file;
* some (:class:`QueueMove`): they land from the write position on, shifted down over the ones left out
  (in a file that stayed, the bytes after them are still the old units); in a queue the cut emptied, at
  their own positions in a new file that starts with ``fillPreBlank`` units.  One the walk dropped that the reput
  puts back (its write position lower) is in no file of the walk: those put back are written from their records
  (:attr:`QueueMove.units`; with ext files refused).

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

:func:`cut_queues` runs those steps in the broker's order: the walk's queue positions and ``truncateDirtyLogicFiles``
(:mod:`store_format.dledger_crash_cut_state`), ``doRecheckReputOffsetFromCq`` and the reput set inside an entry (here),
what ``doReput`` puts back and its ext units (:mod:`store_format.dledger_crash_cut_reput`).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np

from .dledger_crash_cut_reput import (
    ExtAgain,
    QueueMove,
    ReputRun,
    ext_refused,
    ext_reput,
    past_walk_units,
    put_back_units,
    reput_ext_units,
)
from .dledger_crash_cut_state import TruncatedQueues, truncate_dirty, walked_positions
from .dledger_inside_mixed import EarlierOwn, OnDiskCut
from .dledger_inside_units import ParsedUnit, Placed, Tags
from .dledger_inside_walked import cut_refusal, inside_units
from .dledger_queue_track import BLANK_MAX, U_QUEUE, QueueTrack

__all__ = ["BLANK_MAX", "U_QUEUE", "ExtAgain", "OnDiskCut", "QueueCut", "QueueMove", "QueuesOnDisk", "QueueTrack",
           "cut_queues", "ext_refused", "ext_reput"]


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
    # the consume queues whose files ConsumeQueue.recover keeps holding no unit (zeros: max -1, write position 0); the
    # walk's first unit goes onto such a file at 0 whatever its queue offset (no fillPreBlank units: the file was not
    # created in this run, MappedFile.isFirstCreateInQueue): not modelled but for zeros_queues
    empty_queues: frozenset[tuple[str, int]] = frozenset()
    # of those, the ones whose files are all zeros (no ext unit on disk for it; with ext files, one file named 0):
    # modelled as a queue on disk, in consume_queues too (max_after_cut dispatches the walk's units onto the file
    # ConsumeQueue.recover stopped in from its start, putMessagePositionInfo's rule, then cuts it), its units own ones,
    # light ones or both
    zeros_queues: frozenset[tuple[str, int]] = frozenset()
    # per consume queue holding units (zeros_queues too): its max physical offset and write position (queue bytes) as
    # ConsumeQueue.recover left its files, before the walk (a file of zeros: max -1, the kept file's start), where the
    # walk's putMessagePositionInfo appends its first unit of the queue
    loaded_at: Mapping[tuple[str, int], tuple[int, int]] = dataclasses.field(default_factory=dict)


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
    # verify: per queue on disk before the walk, the cut's state of its files (OnDiskCut: max, a file stays, write
    # position, the walk's units dispatched; QueuesOnDisk.max_after_cut)
    held_cut: Mapping[tuple[str, int], OnDiskCut] = dataclasses.field(default_factory=dict)
    # verify, a walk that dispatched nothing (store_format.dledger_walked_nothing.reput_after_cut): per queue on disk,
    # its max physical offset and write position as the store's load leaves them after this cut, before the start's
    # reput (a queue left with no file: write position 0, max processOffset, -1 on 5.5.1: correctMinOffset)
    loaded: Mapping[tuple[str, int], tuple[int, int]] = dataclasses.field(default_factory=dict)
    # verify, a walk that dispatched nothing whose reput set at 2147483647 goes on before the committed position (the
    # next data file's start, an entry's): per queue on disk a parsed own unit appended to ends past there, the max
    # that unit leaves it, at or below which
    # putMessagePositionInfo drops the queue's units of the records the reput walks from there (store_format.
    # dledger_walked_nothing._maxes_past; pipelines.verify.crash_units.cut_lost counts them lost)
    drops_to: Mapping[tuple[str, int], int] = dataclasses.field(default_factory=dict)

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
               ext_held: Mapping[tuple[str, int], int] | None = None,
               loaded_at: Mapping[tuple[str, int], tuple[int, int]] | None = None) -> QueueCut:
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
    :func:`store_format.dledger_inside_units.place_inside`; ``ext_held``: :attr:`QueuesOnDisk.ext_end`; ``loaded_at``:
    :attr:`QueuesOnDisk.loaded_at`).
    ``reset_emptied`` (5.5.1): a queue the
    cut left with no file counts -1 for the reput's start, not ``processOffset``.

    ``after``, ``walk_end`` (a walk whose message check failed at ``walk_end``, inside the log, before ``end``): the
    units of the records from there to ``end`` (:data:`store_format.dledger_queue_track.UNIT_COLUMNS`), which only the
    start's reput, whose check reads no CRC, dispatches.  A reput from at or before ``walk_end`` appends them to their
    queues after the cut units it puts back (a queue's units past the walk follow its cut ones: one suffix, moved with
    them, :attr:`QueueMove.zero_from`); one from between ``walk_end`` and ``end`` appends those from its start on, the
    records before it left out (no cut unit is put back: every one lies before ``walk_end``); one from ``end`` on never
    reaches them.  Either way the rebuild's walk, which leaves the same records out, put them where
    :func:`store_format.dledger_crash_cut_reput.appended_keys` says, the positions the moves start from.
    ``tags(offset, size, queue)``: the tags code of a record's own unit for ``queue`` (read from the log), for a
    record past the walk's end the reput appends to a queue replayed whole
    (:func:`store_format.dledger_inside_replay.replay_queue`).

    Raises:
        UnsupportedConfigError: a reput that would start inside an entry without ``inside``: at
            ``processOffset`` itself, one byte before it (a batch queue the cut emptied), or at 2147483647 (a queue
            left with ``fillPreBlank`` units only) inside a log past 2 GiB;
            with ext, a reput from before the walk's last data file when ``track`` kept only that file's units;
            messages parsed where it was set that :func:`store_format.dledger_inside_units.place_inside` refuses.

    The broker's sequence, one step each: where the walk's dispatch put its units
    (:func:`store_format.dledger_crash_cut_state.walked_positions`), ``truncateDirtyLogicFiles`` at ``processOffset``
    (:func:`store_format.dledger_crash_cut_state.truncate_dirty`), ``doRecheckReputOffsetFromCq``
    (:func:`recheck_reput_offset`), the reput set inside an entry (:func:`_inside_hand_off`), what ``doReput``
    dispatches of the records past the walk's end (:func:`store_format.dledger_crash_cut_reput.past_walk_units`) and
    puts back (:func:`store_format.dledger_crash_cut_reput.put_back_units`), and its ext units
    (:func:`store_format.dledger_crash_cut_reput.reput_ext_units`).
    """
    walk = walked_positions(track, cq_file_size, on_disk)
    cut = truncate_dirty(track, walk, process_offset, cq_file_size, on_disk)
    if recheck:
        reput = recheck_reput_offset(cut, process_offset, min_offset, reset_emptied)
        inside_from, reput, inside_records, placed = _inside_hand_off(
            track, cut, reput, process_offset, end, inside, on_disk, after, cq_file_size, bcq_file_size,
            ext_file_size if ext else 0, reset_emptied, tags, ext_held)
        assert not inside_records or not ext or ext_file_size > 0, "enableConsumeQueueExt: the ext file size"
    else:
        reput, inside_from, inside_records, placed = confirm_offset, -1, (), Placed()
    past = past_walk_units(cut.per_queue, after, reput, walk_end)
    run = ReputRun(track, process_offset, reput, end, inside_from, cq_file_size, bcq_file_size, ext, ext_file_size,
                   reset_emptied, past.after, on_disk, tags, ext_held, ext_earlier, loaded_at)
    back = put_back_units(run, walk, cut, past, placed)
    ext_again = reput_ext_units(run, back.put_back, walk_end, back.placed)
    reset = sorted(track.names[q] for q, v in cut.max_after.items() if cut.table_max(q, reset_emptied) != v)
    return QueueCut(reput, tuple(sorted(back.dropped)), back.lost, back.restored, tuple(back.moves),
                    tuple(sorted(back.batch_dropped)), ext_again, inside_from, inside_records, tuple(reset),
                    back.placed, held_emptied=frozenset(name for name, c in (on_disk or {}).items() if not c[1]),
                    held_cut=dict(on_disk or {}))


def recheck_reput_offset(cut: TruncatedQueues, process_offset: int, min_offset: int, reset_emptied: bool) -> int:
    """``DefaultMessageStore.doRecheckReputOffsetFromCq`` (``recheckReputOffsetFromCq=true``): the reput starts at the
    largest ``getMaxPhysicOffset`` over the queues as the cut left them, at least the commitlog's min offset (and 0);
    5.5.1's ``recoverTopicQueueTable`` (``ConsumeQueue.correctMinOffset``) has set the max of a queue left with no file
    to -1 before (``reset_emptied``), 5.3.3 keeps ``processOffset`` there."""
    return max(cut.top, *(cut.table_max(q, reset_emptied) for q in cut.max_after), min_offset, 0)


def _inside_hand_off(track: QueueTrack, cut: TruncatedQueues, reput: int, process_offset: int, end: int,
                     inside: Inside | None, on_disk: dict[tuple[str, int], OnDiskCut] | None, after: np.ndarray | None,
                     cq_file_size: int, bcq_file_size: int, ext_file_size: int, reset_emptied: bool,
                     tags: Tags | None, ext_held: Mapping[tuple[str, int], int] | None,
                     ) -> tuple[int, int, tuple[tuple[int, int], ...], Placed]:
    """A reput ``doRecheckReputOffsetFromCq`` set inside an entry (at ``processOffset``, one byte before it: a queue the
    cut emptied, or at 2147483647: a queue left with ``fillPreBlank`` units only, inside the log): ``inside`` says where
    ``doReput``'s ``checkMessageAndReturnSize`` goes on from and the messages it parses on the way, which it dispatches
    into the queues as the cut left them (:func:`store_format.dledger_inside_walked.inside_units`).  Returns where it
    was set (-1: not inside an entry), where it goes on, those records and where their units go (:class:`Placed`).

    Raises:
        UnsupportedConfigError: set inside an entry without ``inside``.
    """
    inside_from = -1
    inside_records: tuple[tuple[int, int], ...] = ()
    placed = Placed()
    # an emptied queue's max: processOffset (5.3.3 ConsumeQueue) or processOffset - 1 (BatchConsumeQueue)
    if reput in (process_offset, process_offset - 1) and reput > cut.top:
        if inside is None:
            raise cut_refusal(f"the reput would start at {reput}, inside an entry")
        inside_from, (reput, inside_records, parsed) = reput, inside(reput)   # where doReput goes on from
    elif reput == BLANK_MAX and reput < end:   # a queue left with fillPreBlank units only
        if inside is None:
            raise cut_refusal("the reput would start at 2147483647 (a queue left with fillPreBlank units only), inside "
                              "the log")
        inside_from, (reput, inside_records, parsed) = reput, inside(reput)
    if inside_records:   # the messages its check parses where it was set, into the queues as the cut left them
        # (store_format.dledger_reput_inside, store_format.dledger_inside_units)
        placed = inside_units(track, parsed, cut.per_queue, cut.max_after, process_offset, on_disk, reput, end, after,
                              cq_file_size, inside_from, ext_file_size, reset_emptied, bcq_file_size, tags, ext_held)
    return inside_from, reput, inside_records, placed

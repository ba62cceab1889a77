"""The queues holding both a record's own units and light ones (a message put to topic ``%LMQ%...`` itself, with
``enableMultiDispatch``/``enableLmq``) that a 5.x DLedger crash recovery's walk wrote, as ``truncateDirtyLogicFiles``
left them, for the messages a start's reput set inside an entry parses: split from
:mod:`store_format.dledger_inside_walked`, which hands such a queue here.

Mirrors rocketmq-store 5.5.1 (5.3.3 read the same but where said) ``ConsumeQueue.putMessagePositionInfo`` over a queue
whose own queue offsets come from ``QueueOffsetOperator``'s ``topicQueueTable`` and light ones from its
``lmqTopicQueueTable`` (``ConsumeQueue.multiDispatchLmqQueue``): the walk's units stand where the rule put them in
commitlog order, not where their queue offsets say (:func:`store_format.dledger_queue_track.replayed`, over the
walk's earlier data files too: ``QueueTrack.replayed_before``); ``truncateDirtyLogicFiles`` cuts the file's units
(:func:`mixed_state`; on disk before the walk, the files ``ConsumeQueue.recover`` loaded with the walk's units
dispatched onto them: :func:`mixed_on_disk`); the reput's parsed units, its cut units dispatched again and its records
past the walk's end go on by the same rule (:func:`store_format.dledger_inside_replay.replay_queue`), with ext files
an ext unit for each own unit only (``putMessagePositionInfoWrapper``'s ``ConsumeQueueExt.put``; a light unit none).
A queue the cut left with ``fillPreBlank`` units only (none of its units below ``processOffset``, the walk's first one
after those blanks: ``ConsumeQueue.fillPreBlank``) goes on from their max, 2147483647, which sets the start's reput
inside an entry of a log past 2 GiB (:func:`mixed_state`).
A reput with no parsed unit there that puts back cut units: :func:`mixed_put_back`, :func:`mixed_disk_put_back` (the
latter also for a reput not set inside an entry, an ordinary crash restart's from the cut queues' largest max or the
committed position, that puts back cut units of a queue on disk before the walk; from before the walk's last data
file: :func:`earlier_reput_refusal`, its records of the walk's earlier data files first, :func:`earlier_units`, each
by the rule from the state the cut left, the cut's max at or past the last data file's start or below it, with ext
files an ext unit each for its own ones first).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np

from .consumequeue_ext_recovery import ext_position_after_puts
from .consumequeue_recovery import no_file_max
from .dledger_inside_replay import replay_queue
from .dledger_inside_state import QueueFiles, Tags, WalkedQueue
from .dledger_queue_track import BLANK_MAX, U_END, U_OFFSET, U_QUEUE, QueueTrack, positions, replayed

__all__ = ["EarlierOwn", "OnDiskCut", "earlier_units", "earlier_reput_refusal", "mixed_disk_put_back", "mixed_on_disk",
           "mixed_put_back",
           "mixed_state"]

# a queue on disk once truncateDirtyLogicFiles cut its own units (QueuesOnDisk.max_after_cut): its max physical offset,
# whether a file of it stays, its write position (queue bytes; a cut going on into older files reads them), and
# whether the walk's units were dispatched onto its files before the cut (putMessagePositionInfo: dispatch_units)
OnDiskCut = tuple[int, bool, int, bool]
class EarlierOwn(Protocol):
    """Given a reput's start before the walk's first data file, the records it walks there
    (:class:`store_format.dledger_crash_before.EarlierRecords`): called, per queue the records of its own consume
    queue (each puts an ext unit first); :meth:`units`, one queue's units among them; :meth:`reads_old`, whether
    they lie in a converted store's old commitlog files."""
    def __call__(self, reput: int) -> Mapping[tuple[str, int], int]: ...

    def units(self, reput: int, queue: tuple[str, int]) -> np.ndarray: ...

    def reads_old(self, reput: int) -> bool: ...


def mixed_state(rows: np.ndarray, cut: np.ndarray, process_offset: int, cq_file_size: int, ext_next: int,
           elsewhere: bool, back: np.ndarray, later: np.ndarray, emptied: bool = False,
           start: tuple[int, int] | None = None, reset_emptied: bool = True) -> WalkedQueue:
    """A queue the walk wrote both a record's own units and light ones in (``rows``, in its last data file, in
    commitlog order; ``cut`` the last ones, at or past ``processOffset``), as ``ConsumeQueue.truncateDirtyLogicFiles``
    left it: the walk's dispatch put them by ``putMessagePositionInfo`` in commitlog order whatever their queue offsets
    (own and light ones from two counters: :func:`store_format.dledger_queue_track.replayed`), the cut reads the
    file's units, so its write position is where the first unit appended at or past ``processOffset`` stands (after
    the last one appended when none is), its max the end of the last one appended below it; the rebuild's queue (the
    same rule over the same units, :mod:`store_format.consumequeue`) after the last one appended.  The cut units the
    reput dispatches again after the parsed ones (``back``: its last ones, going on at an entry's start) go to
    :attr:`WalkedQueue.again` with their own queue offsets, which ``putMessagePositionInfo`` checks against the write
    position then, and where the walk's queue holds each (:attr:`WalkedQueue.again_at`: its replayed position, -1
    for one the walk dropped), which the replay reads it from (one the walk dropped written from its record).
    With ext files (``ext_next``: the ext units the walk put, ``QueueTrack.own_units``):
    ``putMessagePositionInfoWrapper`` puts an ext unit (``ConsumeQueueExt.put``) for each own unit only, before
    ``putMessagePositionInfo`` appends or drops it, a light unit none (``multiDispatchLmqQueue`` calls
    ``putMessagePositionInfo`` alone), so the ext ordinals count the queue's own units, wherever the walk put them; the
    cut returns at its first unit at or past ``processOffset`` (a file of it left), before
    ``ConsumeQueueExt.truncateByMaxAddress``: the ext file stays as the walk wrote it, and the parsed own units and the
    cut own units dispatched again put their ext units after it. Its records past the walk's end (``later``, in
    commitlog order) go to :attr:`WalkedQueue.past` with their real queue offsets (own from ``topicQueueTable``, light
    from ``lmqTopicQueueTable``): ``place_inside`` puts each by ``putMessagePositionInfo`` from the state the parsed
    and cut units left (also after cut units the reput goes on past, inside the parsed messages: the first
    :attr:`WalkedQueue.again_skip`, or all of them, :attr:`WalkedQueue.skipped`; the queue replayed whole,
    :func:`store_format.dledger_inside_replay.replay_queue`), the rebuild's own dispatch by the same rule after the
    walk's units and the parsed ones.
    A unit below ``processOffset`` the walk dropped (a queue offset not 0 below the write position then) is in no
    file: ``truncateDirtyLogicFiles`` never reads it, its max the end of the last unit appended below
    ``processOffset`` (``-light-mixed-mid``), as ``dledger_crash_cut.cut_queues`` takes it for the reput's start.
    ``emptied``: every unit of it at or past ``processOffset``, the cut left it no file (write position -1, the max
    -1 on 5.5.1, ``recoverTopicQueueTable``, ``reset_emptied``; ``processOffset`` on 5.3.3, whose
    ``truncateDirtyLogicFiles`` set it first and whose ``correctMinOffset`` keeps it with no file): the replay's
    ``putMessagePositionInfo`` creates the file where the first unit appended falls (``fillPreBlank`` units before
    it), the cut units dispatched again read where the walk's queue holds them.
    ``start``: the write position and max its units in the walk's earlier data files leave (of one kind there, each
    at its queue offset; of both kinds, as the rule put them in commitlog order: ``QueueTrack.replayed_before``):
    the last file's replayed from there, the cut's max the earlier units' end when none of the last file's lies
    below ``processOffset``.  On disk before the walk: :func:`mixed_on_disk`.
    None appended below ``processOffset``, a file left (no ``start``): the walk's first unit (the queue had no file:
    ``putMessagePositionInfo`` appends it at its queue offset * 20, not a file's start, ``fillPreBlank`` units before
    it in its file), and so every one, lies at or past ``processOffset``; ``truncateDirtyLogicFiles`` keeps those
    blank units (offset 0 below ``processOffset``, size ``Integer.MAX_VALUE``): write position that first unit's, max
    2147483647, which sets the start's reput there (``doRecheckReputOffsetFromCq``), inside an entry of a log past 2
    GiB (``-past-2gib-mixed-blank``: the parsed unit, then the cut units by the rule from there;
    ``-past-2gib-mixed-blank-two``: a parsed unit ending at or below that max dropped).
    The same for a queue no parsed unit goes to whose last cut units alone the reput puts back (:func:`mixed_put_back`,
    told ``emptied`` by ``dledger_crash_cut.cut_queues``: ``-light-mixed-emptied-back``).
    Refused: its units in the walk's earlier data files with no replayed state (``elsewhere``: a guard), and every
    unit cut with no file left but not ``emptied`` (a guard: every caller says whether the cut left a file)."""
    pos, at, final = replayed(rows, cq_file_size, start)
    below = rows[:, U_OFFSET] < process_offset
    kept = below & (pos >= 0)
    two = "a queue the walk wrote units of two kinds in (a record's own and light ones)"
    # none appended below processOffset, the first unit at a file's start: the cut deletes that file (no file left),
    # which the caller says (emptied): a guard
    no_file = not emptied and start is None and not kept.any() and len(at) > 0 and int(at[0]) % cq_file_size == 0
    if elsewhere or no_file:
        return WalkedQueue(0, 0, 0, 0, refused=f"{two}, its units in the walk's earlier data files not replayed"
                           if elsewhere else f"{two}, every unit of it cut with no file left, its cut units put back "
                           "only in part with no parsed unit there")
    assert (cut[:, U_OFFSET] == rows[len(rows) - len(cut):, U_OFFSET]).all()
    write = int(at[len(rows) - len(cut)]) if len(cut) else final
    if emptied:   # no file left: max -1 (5.5.1 recoverTopicQueueTable), processOffset (5.3.3), every unit cut
        assert len(cut) == len(rows) and not below.any()
        write, top = -1, no_file_max(process_offset, resets=reset_emptied)
    elif kept.any() or start is not None:   # the last unit below processOffset, in the last data file or the earlier
        top = int(rows[kept][-1, U_END]) if kept.any() else start[1] if start is not None else -1
    else:   # none appended below processOffset, a file left: the walk's first unit (always appended: no file, max -1)
        # at or past it, after the fillPreBlank units putMessagePositionInfo wrote before it in its file (its queue
        # offset not 0, its position not a file's start), which the cut keeps (offset 0, size Integer.MAX_VALUE)
        assert len(cut) == len(rows) and write % cq_file_size, "fillPreBlank units before the first unit"
        top = BLANK_MAX
    appended = rows[pos >= 0]
    return WalkedQueue(write, top, final, int(appended[-1, U_END]) if len(appended) else start[1] if start else -1,
                       ext_next, **_goes_on(rows, cut, back, later, pos[len(rows) - len(cut):]))


def mixed_on_disk(disk: OnDiskCut, rows: np.ndarray, cut: np.ndarray, back: np.ndarray, later: np.ndarray,
                   ext_file_size: int, ext_end: int | None = None, walked_ext: int = 0) -> WalkedQueue:
    """A queue holding a record's own units and light ones that was on disk before the walk (``disk``: a file of it
    left by the cut): ``ConsumeQueue.recover`` loaded its files (their write position and max), the walk's
    ``putMessagePositionInfo`` put its units onto them in commitlog order (:meth:`store_format.dledger_queue_track.
    QueueTrack.mixed_walked`, :func:`store_format.consumequeue_recovery.dispatch_units`: dropped at or below the max
    or a queue offset not 0 whose ``* 20`` lies below the write position, own and light queue offsets alike, else
    appended), and ``truncateDirtyLogicFiles`` cut those files at ``processOffset``: the parsed units go from the write
    position and max it left (the replay, :func:`store_format.dledger_inside_replay.replay_queue`).  Its cut units
    the reput dispatches again (``back``: the last of ``cut``, its units in the walk's last data file ``rows`` at or
    past ``processOffset``; the first ones inside the parsed messages stay cut, :attr:`WalkedQueue.again_skip`) go
    after the parsed units with their own queue offsets (own ones from ``topicQueueTable``, light ones from
    ``lmqTopicQueueTable``), then its records past the walk's end (``later``, :attr:`WalkedQueue.past`), each by
    ``putMessagePositionInfo`` from the state the ones before left: the state after the cut is all the rule reads,
    wherever the walk's dispatch had put those units in the files (appended, or dropped with the crashed broker's
    unit of the record already there), and the unit it appends is the dispatch request's (offset, size, tags code for
    this queue: its own unit's or, ``multiDispatchLmqQueue``, its light unit's, the same code), so each is written
    from its record (:attr:`WalkedQueue.again_at` -1; ``verify`` reads no walk's queue bytes for it).  The rebuild's
    queue holds none of those files' units (``verify`` only: ``--as-restart`` plans with no queue on disk), so its
    state is given as the broker's.  With ext files (``ext_file_size``): ``ConsumeQueue.recover`` left them at the
    byte end ``ext_end`` (``ConsumeQueueExt.recover``, ``truncateByMaxAddress``:
    :attr:`store_format.dledger_crash_cut.QueuesOnDisk.ext_end`), the walk's ``putMessagePositionInfoWrapper`` put an
    ext unit there for each of its own units of the queue (``walked_ext``, ``QueueTrack.own_units``; a light unit
    none), whatever ``putMessagePositionInfo`` then did with the unit, and the cut, a file of the queue staying,
    returns inside its loop before ``truncateByMaxAddress``: the reput's ext units go on after those
    (:attr:`WalkedQueue.ext_end`).  The same on 5.3.3 (``ConsumeQueue.recover`` before the walk there too:
    ``-emptied-kept-embedded-light-mixed-held``, ``-held-t5``, ``-earlier-both``).  Refused: the walk's units not
    dispatched onto its files (``disk[3]`` false: a guard, ``verify`` keeps every on-disk queue's units of the walk's
    earlier data files), no file left by the cut, or ext files whose end ``verify`` did not read (assert-like
    guards)."""
    if not disk[1] or not disk[3] or (ext_file_size and (ext_end is None or ext_end < 0)):
        return WalkedQueue(0, 0, 0, 0, refused="a queue the walk wrote units of two kinds in (a record's own and light "
                           "ones), on disk before the walk, whose files the cut deletes, its units not dispatched onto "
                           "them, or with ext files whose end is not read")
    ext_at = -1 if not ext_file_size or ext_end is None else ext_position_after_puts(ext_end, walked_ext, ext_file_size)
    return WalkedQueue(disk[2], disk[0], disk[2], disk[0], disk=True, ext_end=ext_at,
                       **_goes_on(rows, cut, back, later, np.full(len(cut), -1, dtype=np.int64)))


def _goes_on(rows: np.ndarray, cut: np.ndarray, back: np.ndarray, later: np.ndarray, held_at: np.ndarray) -> dict:
    """What the reput does with a mixed queue after its parsed units, as :class:`WalkedQueue` fields: the cut units
    (``cut``, the last of ``rows``) it dispatches again (``back``: its last ones), with their own queue offsets (the
    rows', not the cut's positions) and where the walk's queue holds each (``held_at``: -1, written from its record),
    the first of them it dispatches again (``again_skip``), its records past the walk's end (``later``) and, when it
    dispatches none of the cut units but goes on to those records, how many it went past (``skipped``)."""
    again = tuple(map(tuple, positions(rows[len(rows) - len(cut):]).tolist())) if back.any() else ()
    return {"again": again, "again_at": tuple(int(p) for p in held_at) if again else (),
            "again_skip": int(np.argmax(back)) if back.any() else 0,
            "past": tuple(map(tuple, positions(later).tolist())),
            "skipped": len(cut) if len(later) and not back.any() else 0}


def mixed_put_back(track: QueueTrack, q: int, cut: np.ndarray, back: np.ndarray, process_offset: int,
                   cq_file_size: int, at: int, tags: Tags | None,
                   start: tuple[int, int] | None = None, later: np.ndarray | None = None,
                   ext_file_size: int = 0, emptied: bool = False, reset_emptied: bool = True) -> QueueFiles | None:
    """Queue ``q`` of ``track``, holding a record's own units and light ones in the walk's last data file only, none
    past the walk's end, no parsed unit going to it, whose cut units (``cut``, in commitlog order) the reput set
    inside an entry (at ``at``) dispatches again only in part (``back``: the last ones; it went on past the first,
    inside the parsed messages): replayed whole (:func:`store_format.dledger_inside_replay.replay_queue`) from the
    state ``truncateDirtyLogicFiles`` left it in (:func:`mixed_state`), each of those last cut units by
    ``putMessagePositionInfo`` with its own queue offset, from where the walk's queue holds it or, one the walk's
    dispatch dropped, from its record (``tags``).  ``start``: the write position and max its units of one kind in
    the walk's earlier data files leave; ``later``: its records past the walk's end the reput dispatches after them
    (rows of ``UNIT_COLUMNS`` with their own queue offsets), by the same rule.  ``ext_file_size`` > 0
    (``enableConsumeQueueExt``): each of those that is a record's own unit gets an ext unit first
    (``putMessagePositionInfoWrapper``), after the walk's (``QueueTrack.own_units``: the cut, a file of the queue
    left, leaves the ext files as the walk wrote them), the unit appended holding its address
    (``-light-mixed-skip-t0-own-ext``); a light unit none (``-light-mixed-skip-t0-ext``); from ``fillPreBlank`` units
    only (max 2147483647) as :func:`mixed_state` says (``-past-2gib-mixed-blank-back``).  ``emptied``: every unit of
    the queue at or past ``processOffset``, the cut deleted its files (``dledger_crash_cut.cut_queues`` knows: its max
    ``processOffset``, no unit kept), its max -1 on 5.5.1 (``recoverTopicQueueTable``, ``reset_emptied``),
    ``processOffset`` on 5.3.3: the first unit put back gets a new file where its own queue offset falls
    (``putMessagePositionInfo``, ``fillPreBlank`` units before it), the rest by the rule from there
    (``-light-mixed-emptied-back``); with ext files the cut, having deleted every file of the queue, reaches
    ``ConsumeQueueExt.truncateByMaxAddress`` with the address 1 (no file's first unit below ``processOffset`` set
    another), no ext address, and ``correctMinOffset`` returns before ``truncateByMinAddress`` (no file): the ext
    files stay as the walk wrote them, the own units put back get their ext units after the walk's
    (``-light-mixed-emptied-back-ext``: a light unit put back, none; ``-light-mixed-emptied-back-own-ext``: an own
    one, ext unit 1, the unit in the new file holding its address; 5.3.3 reads the same).
    None where :func:`mixed_state` refuses the queue (a guard: it refuses none handed here)."""
    units = track.last_file()
    rows = units[units[:, U_QUEUE] == q]
    s = mixed_state(rows, cut, process_offset, cq_file_size, track.own_units.get(q, 0), False, back,
                    rows[:0] if later is None else later, emptied, start, reset_emptied)
    return None if s.refused else replay_queue(track.names[q], s, [], cq_file_size, at, tags, ext_file_size)


def mixed_disk_put_back(track: QueueTrack, q: int, disk: OnDiskCut, process_offset: int, reput: int, end: int,
                        after: np.ndarray | None, cq_file_size: int, at: int, tags: Tags | None,
                        ext_file_size: int = 0, ext_end: int | None = None, *,
                        inside: bool = True, earlier: EarlierOwn | None = None) -> QueueFiles | None:
    """Queue ``q`` of ``track``, holding a record's own units and light ones, on disk before the walk (``disk``: the
    walk's units dispatched onto its files, a file of it left by the cut), no parsed unit going to it, whose cut units
    the reput set inside an entry (at ``at``, going on at ``reput``, dispatching up to ``end``) dispatches again (its
    last ones) or not at all, and its records past the walk's end (``after``, from ``reput`` on): replayed whole
    (:func:`store_format.dledger_inside_replay.replay_queue`) from the write position and max
    ``truncateDirtyLogicFiles`` left its files at (:func:`mixed_on_disk`), each by ``putMessagePositionInfo`` with
    its own queue offset (``verify`` only); with ext files (``ext_file_size``) their ext units after the walk's, from
    the end ``ConsumeQueue.recover`` left them at (``ext_end``).  ``inside`` false: a reput NOT set inside an entry
    (``DefaultMessageStore.start``'s ``doRecheckReputOffsetFromCq``, the cut queues' largest max, or the committed
    position; ``at`` is then ``reput``) that dispatches cut units of it, with no parsed message: the same rule, its
    records of the walk's last data file from ``reput`` on, those below ``processOffset`` too (each at or below the
    cut's max dropped; one the walk's dispatch dropped, from the same write position and max, dropped again), each
    with an ext unit first when it is a record's own (``putMessagePositionInfoWrapper``); the same on 5.3.3 (its
    ``ConsumeQueue.recover``, ``truncateDirtyLogicFiles`` and ``ConsumeQueueExt`` read the same; its cut runs when the
    loaded queues' max reaches ``processOffset``, as kept queues past it do).  From before the walk's last data file
    (:func:`earlier_reput_refusal`) the same from the state the cut left, its records of the walk's earlier data
    files from ``reput`` on first (:func:`earlier_units`: each at or below the cut's max dropped, one above it by the
    queue offset test, appended written from its record; with ext files an own one's ext unit first; ``earlier``
    counting the ext units of its own records before the walk's first data file, all at or below the cut's max);
    putting back none of its cut units (the reput from past them): the queue as the cut left it (one with units of
    both kinds in the walk's earlier data files too).  None where :func:`mixed_on_disk` refuses the queue (no file
    left, its ext files' end not read)."""
    units = track.last_file()
    rows = units[units[:, U_QUEUE] == q]
    # a reput not set inside an entry may start below processOffset: its records of the walk's last data file from
    # there go by the rule too (each at or below the cut's max dropped; one the walk's dispatch dropped, from the same
    # write position and max, dropped again)
    cut = rows[rows[:, U_OFFSET] >= (process_offset if inside else min(process_offset, reput))]
    back = (cut[:, U_OFFSET] >= reput) & (cut[:, U_OFFSET] < end)
    later = after[(after[:, U_QUEUE] == q) & (after[:, U_OFFSET] >= reput)] if after is not None else rows[:0]
    walked = track.own_units.get(q, 0)
    # its records before the walk's first data file the reput walks: all at or below the cut's max (dropped), an ext
    # unit each first for its own ones (counted); with the max below that file's start, read and replayed as below
    before = not inside and reput < track.first and disk[0] < track.first
    if ext_file_size and not inside and reput < track.first and not before:
        assert earlier is not None, "earlier_reput_refusal refuses it"
        walked += int(earlier(reput).get(track.names[q], 0))
    s = mixed_on_disk(disk, rows, cut, back, later, ext_file_size, ext_end, walked)
    if s.refused:
        return None
    if not inside and reput < track.base:   # from before the walk's last data file: its records of the earlier data
        # files from the reput on first, each by the rule from the state the cut left (putMessagePositionInfo: at or
        # below the max dropped, else the queue offset test), an own one's ext unit first; written from its record
        # when appended (again_at -1)
        first = earlier_units(track, q, reput)
        if before:
            assert earlier is not None, "earlier_reput_refusal refuses it"
            first = np.concatenate([earlier.units(reput, track.names[q]), first])
        assert s.again_skip == 0 and (len(first) == 0 or len(s.again) == len(cut)), "every cut unit dispatched again"
        s.again = tuple(map(tuple, first.tolist())) + s.again
        s.again_at = (-1,) * len(s.again)
    return replay_queue(track.names[q], s, [], cq_file_size, at, tags, ext_file_size)


def earlier_reput_refusal(track: QueueTrack, disk: OnDiskCut, reput: int, ext_file_size: int,
                          earlier: EarlierOwn | None = None) -> str | None:
    """Why a reput NOT set inside an entry that starts before the walk's last data file (``reput`` below
    ``track.base``: the committed position, or ``doRecheckReputOffsetFromCq``'s largest max) is not modelled for a
    queue holding a record's own units and light ones, on disk before the walk (``disk``, :func:`mixed_on_disk`), or
    None: ``doReput`` dispatches the queue's records of the earlier data files first (walked or not), each by
    ``ConsumeQueue.putMessagePositionInfo`` from the state ``truncateDirtyLogicFiles`` left (a light one by
    ``multiDispatchLmqQueue``: the same call): a unit ending at or below the queue's max is dropped whatever its queue
    offset, one ending above it goes by the queue offset test (dropped when its queue offset is not 0 and its ``* 20``
    lies below the write position, else appended there).  Those of the walk's earlier data files (5.3.3's walk from
    the first one, ``-mixed-disk-below``) are the walk's (:func:`earlier_units`), those before its first data file
    (``QueueTrack.first``; 5.5.1's walk from the last one) read from the log (``earlier``:
    :meth:`EarlierOwn.units`); they go so in :func:`mixed_disk_put_back` (``inside`` false), then the last data
    file's records by the same rule: the cut's max at or past the last data file's start (``disk[0]``: a unit of it
    below ``processOffset`` kept) drops every earlier one (``-mixed-disk-earlier``), below it (``-mixed-disk-below``:
    the max an earlier data file's light unit's end) own unit 1 after it, ending above it, goes by the queue offset
    test (dropped again, as the crashed broker's dispatch did from the same state).  Those before the walk's first
    data file end at or before its start, so with the max at or past it they are all dropped and only counted.  With
    ext files ``putMessagePositionInfoWrapper`` puts an ext unit (``ConsumeQueueExt.put``, appended after the last
    one whatever the unit then does) for each own record first, a light one none (``multiDispatchLmqQueue``): the
    replay puts those of the records it dispatches in order, ``earlier`` counts those it only drops
    (``-mixed-disk-earlier-ext``, ``-mixed-disk-earlier-own-ext``, ``-mixed-disk-below-ext``, 5.5.1 and 5.3.3).
    Refused: the reput from before the walk's first data file with no ``earlier`` to read or count those records (a
    guard), or, with the max below that file's start, from a converted store's old commitlog files (not read as
    units here)."""
    if ext_file_size and reput < track.first and earlier is None:
        return "with ext files (its records before the walk's first data file put ext units first, not counted)"
    if reput < track.first and disk[0] < track.first and (earlier is None or earlier.reads_old(reput)):
        return f"its max after the cut ({disk[0]}) below the walk's first data file's start ({track.first}), the " \
            "reput from before it " + ("in a converted store's old commitlog files" if earlier is not None else
                                       "(those records not read)")
    return None


def earlier_units(track: QueueTrack, q: int, reput: int) -> np.ndarray:
    """Queue ``q``'s units of the walk's earlier data files (``QueueTrack.kept_before``: a queue on disk before the
    walk, one of ``keep_queues``) from commitlog offset ``reput`` on, in commitlog order: rows of commitlog offset,
    size and queue offset (an own unit's from ``topicQueueTable``, a light one's its ``INNER_MULTI_QUEUE_OFFSET``), as
    ``doReput`` hands them to ``putMessagePositionInfo`` (a light one by ``multiDispatchLmqQueue``)."""
    if reput >= track.base or not track.kept_before.get(q):
        return np.zeros((0, 3), dtype=np.int64)
    rows = np.concatenate(track.kept_before[q])
    return rows[rows[:, 0] >= reput]

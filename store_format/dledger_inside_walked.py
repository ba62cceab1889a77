"""The queues the 5.x DLedger crash recovery's walk wrote, as ``truncateDirtyLogicFiles`` left them, for the messages a
start's reput set inside an entry parses (:func:`inside_units`): built from the walk's units that
:class:`store_format.dledger_queue_track.QueueTrack` collects (rows of its ``UNIT_COLUMNS``), handed to
:func:`store_format.dledger_inside_units.place_inside`.

Mirrors rocketmq-store 5.5.1 ``ConsumeQueue.truncateDirtyLogicFiles`` and ``BatchConsumeQueue.truncateDirtyLogicFiles``
(the write position and max physical offset each leaves a queue with).
"""
from __future__ import annotations

import numpy as np

from .batchconsumequeue import BCQ_UNIT_SIZE
from .dledger_inside_units import ParsedUnit, Placed, WalkedQueue, place_inside
from .dledger_queue_track import KIND_BATCH, U_END, U_KEY, U_KIND, U_OFFSET, U_QUEUE, QueueTrack
from .errors import UnsupportedConfigError
from .layout import CQ_UNIT_SIZE

__all__ = ["OnDiskCut", "cut_refusal", "inside_units"]

# a queue on disk once truncateDirtyLogicFiles cut its own units (QueuesOnDisk.max_after_cut): its max physical offset,
# whether a file of it stays, and its write position (queue bytes; -1: the cut would go on into older files)
OnDiskCut = tuple[int, bool, int]


def inside_units(track: QueueTrack, parsed: tuple[ParsedUnit, ...], per_queue: dict[int, np.ndarray],
                 max_after: dict[int, int], process_offset: int,
                 on_disk: dict[tuple[str, int], OnDiskCut] | None, reput: int, end: int,
                 after: np.ndarray | None, cq_file_size: int, at: int, ext_file_size: int,
                 reset_emptied: bool = False, bcq_file_size: int = 0) -> Placed:
    """:func:`store_format.dledger_inside_units.place_inside` on the walk's queues as the cut left them: the write
    position at the first cut unit (after the last unit when none was cut), the max at the end of the last unit
    below ``processOffset`` in the walk's last file (the cut's ``max_after`` when none is there: 2147483647 after
    ``fillPreBlank`` units only), and for a queue on disk before the walk that the cut left a file of the write
    position and max ``truncateDirtyLogicFiles`` left in its files (``on_disk``; refused unless the walk's units
    below ``processOffset`` in its last file end there); ``ext_file_size`` > 0: ``enableConsumeQueueExt`` (the ext
    units the walk put per queue: ``track.own_units``; a reput that goes on at ``reput`` before ``end`` puts its ext
    units after the parsed ones', for the cut units it dispatches again and the records past the walk's end; refused
    when it goes on before the walk's last data file).  ``after``: the units of the records past the walk's end (a
    walk ended by a damaged message), those from ``reput`` on handed over as :attr:`WalkedQueue.past`, with the
    number of cut units the reput goes on past when it dispatches none of them again (:attr:`WalkedQueue.skipped`;
    refused where it dispatches only some, or none with ext files))."""
    ids = {name: k for k, name in enumerate(track.names)}
    units = track.last_file()
    if ext_file_size and reput < end:
        # the reput going on puts an ext unit for each record of a queue's own it walks (ExtAgain, counted from the
        # walk's, after the parsed ones': ExtAgain.skip; the records past the walk's end after them, as the
        # rebuild's own dispatch of those): refused before the walk's last data file (records of the earlier files)
        if any(ids.get((u.topic, u.queue_id)) is not None and reput < track.base for u in parsed):
            raise cut_refusal(f"enableConsumeQueueExt and a reput set at {at} that would parse a message there for a "
                              f"queue the walk wrote, then go on at {reput}, before the walk's last data file")

    def walked(name: tuple[str, int]) -> WalkedQueue | None:
        q = ids.get(name)
        if q is None:
            return None
        rows = units[units[:, U_QUEUE] == q]
        cut = per_queue.get(q, rows[:0])
        kept = rows[:len(rows) - len(cut)]
        later = after[(after[:, U_QUEUE] == q) & (after[:, U_OFFSET] >= reput)] if after is not None else rows[:0]
        before = track.last_before.get(q)   # its last own unit in the walk's earlier data files
        top = int(kept[-1, U_END]) if len(kept) else max_after[q] if q in max_after else before and before[1]
        back = (cut[:, U_OFFSET] >= reput) & (cut[:, U_OFFSET] < end)   # the cut units the reput dispatches again
        # the cut left it no file (one on disk before the walk then too: nothing of its history stays)
        emptied = max_after.get(q) == process_offset
        if len(rows) and (rows[:, U_KIND] == KIND_BATCH).all() and name not in (on_disk or {}):
            return _walked_batch(rows, cut, kept, max_after.get(q), len(later) > 0, bool(back.any()))
        # on disk before the walk, a file of it left by the cut: as the cut left its files (their write position and
        # max), which the walk's units below processOffset in its last file must end at (else refused)
        disk = (on_disk or {}).get(name) if not emptied else None
        refused = ("a queue on disk before the walk with none of its units below processOffset in the walk's last "
                   "data file" if disk is not None and not len(kept)
                   else "a queue the walk wrote light or batch units in" if before is None and not len(rows) else
                   "a queue the walk wrote units of another kind in"
                   if len(rows) and (not (rows[:, U_KIND] == rows[0, U_KIND]).all() or rows[0, U_KIND] == KIND_BATCH)
                   else
                   "a queue whose units below processOffset lie in an earlier data file" if top is None else
                   "whose records past the walk's end the reput dispatches afterwards, with only some cut units of it "
                   "dispatched again before them, none with ext files, or no file left"
                   if len(later) and (emptied or (back.any() and not back.all()) or (len(cut) and not back.any()
                                                                                     and ext_file_size)) else
                   "whose cut units the reput puts back afterwards, with none of its units below processOffset "
                   "in the walk (fillPreBlank units only; emptied on 5.3.3 or with ext files), or only some of them"
                   if back.any() and not ((len(kept) or q not in max_after
                                           or (emptied and reset_emptied and not ext_file_size)) and back.all())
                   else "")
        if refused:
            return WalkedQueue(0, 0, 0, 0, refused=refused)
        # the records past the walk's end the reput dispatches after the parsed ones (place_inside's _place_past)
        past = tuple((int(o), int(e - o), int(k)) for o, e, k in later[:, [U_OFFSET, U_END, U_KEY]])
        assert top is not None and (cut[:, U_OFFSET] == rows[len(kept):, U_OFFSET]).all()
        if not len(rows):   # written in the walk's earlier data files only: not cut, after its last unit there
            assert before is not None
            return WalkedQueue((before[0] + 1) * CQ_UNIT_SIZE, before[1], (before[0] + 1) * CQ_UNIT_SIZE, before[1],
                               track.own_units.get(q, 0), past=past)
        after_last = int(rows[-1, U_KEY] + 1) * CQ_UNIT_SIZE
        again = tuple((int(o), int(e - o), int(k)) for o, e, k in cut[:, [U_OFFSET, U_END, U_KEY]]) \
            if back.any() else ()
        if emptied:   # the cut left no file: its max -1 (5.5.1 recoverTopicQueueTable), processOffset (5.3.3)
            return WalkedQueue(-1, -1 if reset_emptied else process_offset, after_last, int(rows[:, U_END].max()),
                               track.own_units.get(q, 0), again=again)
        write = int(cut[0, U_KEY]) * CQ_UNIT_SIZE if len(cut) else after_last
        if disk is not None:   # ConsumeQueue.truncateDirtyLogicFiles on the files on disk
            if (disk[2], disk[0]) != (write, top):
                return WalkedQueue(0, 0, 0, 0, refused="a queue on disk before the walk whose files the cut leaves "
                                   f"at write position {disk[2]}, max {disk[0]}, not where the walk's units end")
            write, top = disk[2], disk[0]
        return WalkedQueue(write, top, after_last, int(rows[:, U_END].max()), track.own_units.get(q, 0), again=again,
                           past=past, skipped=len(cut) if len(past) and not back.any() else 0)
    return place_inside(parsed, walked, cq_file_size=cq_file_size, at=at, ext_file_size=ext_file_size,
                        bcq_file_size=bcq_file_size)


def _walked_batch(rows: np.ndarray, cut: np.ndarray, kept: np.ndarray, emptied_max: int | None, later: bool,
                  back: bool) -> WalkedQueue:
    """A batch queue the walk wrote in its last data file (``rows``, its units there: ``cut`` the last ones) and
    nowhere before, as ``BatchConsumeQueue.truncateDirtyLogicFiles`` left it: the write position at its first cut
    unit (after its last unit when none was cut; the walk's units count from the queue's start), the max at the
    start of its last unit below ``processOffset`` (``emptied_max``, ``processOffset - 1``, when it cut them all);
    the rebuild's after every walk unit.  Refused: units in the walk's earlier data files too, records past the
    walk's end, or cut units the reput puts back after the parsed ones."""
    top = int(kept[-1, U_OFFSET]) if len(kept) else emptied_max
    refused = ("a batch queue whose units below processOffset lie in an earlier data file" if top is None else
               "a batch queue whose units past the walk's end the reput dispatches afterwards" if later else
               "a batch queue whose cut units the reput puts back afterwards" if back else "")
    if refused:
        return WalkedQueue(0, 0, 0, 0, refused=refused)
    assert top is not None
    after_last = int(rows[-1, U_KEY] + 1) * BCQ_UNIT_SIZE
    return WalkedQueue(int(cut[0, U_KEY]) * BCQ_UNIT_SIZE if len(cut) else after_last, top, after_last,
                       int(rows[:, U_OFFSET].max()), batch=True)


def cut_refusal(why: str) -> UnsupportedConfigError:
    """The one-line refusal of a cut that is not modelled (``why``: what the store has)."""
    return UnsupportedConfigError(f"a 5.x DLedger store whose last shutdown was not clean (abort file): "
                                  f"truncateDirtyLogicFiles cuts the queues dledgerRecoverAbnormally wrote at its "
                                  f"short processOffset, with {why}; not modelled, let the broker recover")

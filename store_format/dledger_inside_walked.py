"""The queues the 5.x DLedger crash recovery's walk wrote, as ``truncateDirtyLogicFiles`` left them, for the messages a
start's reput set inside an entry parses (:func:`inside_units`): built from the walk's units that
:class:`store_format.dledger_crash_cut.QueueTrack` collects (rows of :data:`UNIT_COLUMNS`), handed to
:func:`store_format.dledger_inside_units.place_inside`.

Mirrors rocketmq-store 5.5.1 ``ConsumeQueue.truncateDirtyLogicFiles`` and ``BatchConsumeQueue.truncateDirtyLogicFiles``
(the write position and max physical offset each leaves a queue with).
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from .batchconsumequeue import BCQ_UNIT_SIZE
from .dledger_inside_units import ParsedUnit, Placed, WalkedQueue, place_inside
from .errors import UnsupportedConfigError
from .layout import CQ_UNIT_SIZE

__all__ = ["KIND_BATCH", "KIND_CQ", "KIND_LIGHT", "UNIT_COLUMNS", "U_END", "U_KEY", "U_KIND", "U_OFFSET", "U_QUEUE",
           "WalkTrack", "cut_refusal", "inside_units"]

# a tracked unit: commitlog offset, offset + size, queue number, its queue offset (a batch queue's: its
# unit number in the queue), kind
UNIT_COLUMNS = ("offset", "end", "queue", "key", "kind")
U_OFFSET, U_END, U_QUEUE, U_KEY, U_KIND = range(5)
KIND_CQ, KIND_LIGHT, KIND_BATCH = 0, 1, 2   # a record's own consume queue, a light queue (LMQ), a batch queue


class WalkTrack(Protocol):
    """What :func:`inside_units` reads of :class:`store_format.dledger_crash_cut.QueueTrack`."""
    names: list[tuple[str, int]]
    base: int
    last_before: dict[int, tuple[int, int]]
    own_units: dict[int, int]

    def last_file(self) -> np.ndarray: ...


def inside_units(track: WalkTrack, parsed: tuple[ParsedUnit, ...], per_queue: dict[int, np.ndarray],
                 max_after: dict[int, int], process_offset: int,
                 on_disk: dict[tuple[str, int], tuple[int, bool]] | None, reput: int, end: int,
                 after: np.ndarray | None, cq_file_size: int, at: int, ext_file_size: int,
                 reset_emptied: bool = False, bcq_file_size: int = 0) -> Placed:
    """:func:`store_format.dledger_inside_units.place_inside` on the walk's queues as the cut left them: the write
    position at the first cut unit (after the last unit when none was cut), the max at the end of the last unit
    below ``processOffset`` in the walk's last file (the cut's ``max_after`` when none is there: 2147483647 after
    ``fillPreBlank`` units only; a batch queue's: :func:`_walked_batch`); ``ext_file_size`` > 0:
    ``enableConsumeQueueExt`` (the ext units the walk put per queue: ``track.own_units``; a reput that goes on at
    ``reput`` before ``end`` puts its ext units after the parsed ones' only in the queues whose records it walks,
    refused for those the walk wrote); ``bcq_file_size``: the batch queues' file size."""
    ids = {name: k for k, name in enumerate(track.names)}
    units = track.last_file()
    if ext_file_size and reput < end:
        # the reput going on puts an ext unit for each record of a queue's own it walks (ExtAgain, counted from the
        # walk's, after the parsed ones': ExtAgain.skip): refused for a queue the walk wrote with records past the
        # walk (refused below too), or for any before the walk's last data file (records of the earlier files)
        walks = {int(q) for q in after[after[:, U_OFFSET] >= reput, U_QUEUE]} if after is not None else set()
        if any((q := ids.get((u.topic, u.queue_id))) is not None and (reput < track.base or q in walks)
               for u in parsed):
            raise cut_refusal(f"enableConsumeQueueExt and a reput set at {at} that would parse a message there for a "
                          f"queue the walk wrote, then go on at {reput}, before the walk's last data file or past "
                          "its end")

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
        refused = ("a queue on disk before the walk" if name in (on_disk or {}) and not emptied
                   else "a queue the walk wrote light or batch units in" if before is None and not len(rows) else
                   "a queue the walk wrote units of another kind in"
                   if len(rows) and (not (rows[:, U_KIND] == rows[0, U_KIND]).all() or rows[0, U_KIND] == KIND_BATCH)
                   else
                   "a queue whose units below processOffset lie in an earlier data file" if top is None else
                   "whose units past the walk's end the reput dispatches afterwards" if len(later) else
                   "whose cut units the reput puts back afterwards, with none of its units below processOffset "
                   "in the walk's last file, or only some of them" if back.any() and not (len(kept) and back.all())
                   else "")
        if refused:
            return WalkedQueue(0, 0, 0, 0, refused=refused)
        assert top is not None and (cut[:, U_OFFSET] == rows[len(kept):, U_OFFSET]).all()
        if not len(rows):   # written in the walk's earlier data files only: not cut, after its last unit there
            assert before is not None
            return WalkedQueue((before[0] + 1) * CQ_UNIT_SIZE, before[1], (before[0] + 1) * CQ_UNIT_SIZE, before[1],
                               track.own_units.get(q, 0))
        after_last = int(rows[-1, U_KEY] + 1) * CQ_UNIT_SIZE
        if emptied:   # the cut left no file: its max -1 (5.5.1 recoverTopicQueueTable), processOffset (5.3.3)
            return WalkedQueue(-1, -1 if reset_emptied else process_offset, after_last, int(rows[:, U_END].max()),
                               track.own_units.get(q, 0))
        again = tuple((int(o), int(e - o), int(k)) for o, e, k in cut[:, [U_OFFSET, U_END, U_KEY]]) \
            if back.any() else ()
        return WalkedQueue(int(cut[0, U_KEY]) * CQ_UNIT_SIZE if len(cut) else after_last, top, after_last,
                           int(rows[:, U_END].max()), track.own_units.get(q, 0), again=again)
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

"""The units the 5.5.1 start's reput puts back into a queue ``truncateDirtyLogicFiles(processOffset)`` cut after a
DLedger crash walk (:func:`store_format.dledger_crash_cut.cut_queues`, its put-back
:func:`store_format.dledger_crash_cut_reput.put_back_units`), on units built here from the broker's rule
(rocketmq-store 5.5.1 ``ConsumeQueue.putMessagePositionInfo``): a unit ending at or below the queue's max is dropped,
one whose queue offset is not 0 and whose ``* 20`` lies below the write position too ("Build consume queue
repeatedly"), every other appended at the write position whatever its queue offset ("logic queue order maybe wrong"
only logged).  The broker's case of a queue offset ahead: tests/test_dledger_crash_cut_gap_broker.py; of a queue
on disk with no walk unit before its cut ones: tests/test_dledger_crash_held_broker.py; of a cut unit the walk dropped
(below a file of zeros named 220): tests/test_dledger_crash_zeros_files_broker.py; of one the reput puts back though
the walk dropped it, and of a first cut unit not right after the walk's unit before it:
tests/test_dledger_crash_cut_order_broker.py."""
from __future__ import annotations

import numpy as np
import pytest

from store_format.dledger_crash_cut import cut_queues
from store_format.dledger_queue_track import KIND_CQ, KIND_LIGHT, QueueTrack
from store_format.errors import UnsupportedConfigError

CQ_FILE = 1000          # 50 units of 20 bytes a consume queue file
PROCESS_OFFSET = 500
END = 900


def _cut(keys: list[int], reput: int, offsets: tuple[int, ...] = (400, 600, 700, 800),
         before: dict[int, tuple[int, int]] | None = None, light: bool = False,
         on_disk: dict[tuple[str, int], tuple[int, bool, int, bool]] | None = None,
         loaded_at: dict[tuple[str, int], tuple[int, int]] | None = None, ext: bool = False):  # noqa: ANN202
    """T0/0 with units at commitlog ``offsets`` (400: below ``processOffset``) of queue offsets ``keys``, the reput from
    the committed position ``reput`` (no ``recheckReputOffsetFromCq``); ``before``: the queue's last unit (queue
    offset, end) in the walk's earlier data files (``light``: the units light queue units, ``multiDispatchLmqQueue``'s,
    there too); ``on_disk``: the queue's files
    as the cut left them (``QueuesOnDisk.max_after_cut``), ``loaded_at``: as ``ConsumeQueue.recover`` left them before
    the walk (max, write position: ``QueuesOnDisk.loaded_at``); each record's tags code its offset + 1 (``tags``)."""
    track = QueueTrack()
    track.names, track.ids = [("T0", 0)], {("T0", 0): 0}
    kind = KIND_LIGHT if light else KIND_CQ
    track._cur = [np.array([(o, o + 50, 0, k, kind) for o, k in zip(offsets, keys)], dtype=np.int64)]
    if before is not None:
        track.seen_before = {0}
        (track.light_before if light else track.last_before).update(before)
    return cut_queues(track, PROCESS_OFFSET, cq_file_size=CQ_FILE, bcq_file_size=CQ_FILE, ext=ext, recheck=False,
                      min_offset=0, confirm_offset=reput, end=END, on_disk=on_disk, loaded_at=loaded_at,
                      ext_file_size=1000 if ext else 0, tags=lambda offset, size, queue, light=False: offset + 1)


def test_a_cut_unit_whose_queue_offset_is_ahead_goes_where_the_write_position_is() -> None:
    # queue offsets 5, 6, 57 (ahead), 8: the walk put the cut units at 120, 140, 160 (57 * 20 past the write position
    # 140: appended there; 8 * 20 = 160 at it); the cut leaves write position 120, the reput from 700 appends the
    # last two from there, 57's unit at 120 and 8's at 140, the one at 600 left out
    c = _cut([5, 6, 57, 8], 700)
    (move,) = c.moves
    assert (move.source, move.target, move.count, move.blank_from) == (140, 120, 2, -1)
    assert (c.restored, c.lost[("T0", 0)].tolist()) == (2, [600])
    # from 600 on: every cut unit back where the walk had it
    c = _cut([5, 6, 57, 8], 600)
    assert (c.moves, c.restored, dict(c.lost)) == ((), 3, {})


def test_a_cut_unit_the_walk_dropped_is_dropped_again_or_put_back_from_its_record() -> None:
    # queue offsets 5, 6, 3, 7: 3 * 20 lies below the walk's write position 140 (not 0): the walk dropped it and put
    # 7's at 140; the cut leaves write position 120, the reput from 700 drops 3's again (60 below 120) and appends 7's
    # at 120: 140 -> 120, the units of 600 and 700 lost
    (move,) = (c := _cut([5, 6, 3, 7], 700)).moves
    assert (move.source, move.target, move.count, move.units) == (140, 120, 1, ())
    assert (c.restored, c.lost[("T0", 0)].tolist()) == (1, [600, 700])
    # queue offsets 5, 6, 8, 7: the walk appended 8's at 140 (ahead) and dropped 7's (140 below 160); the reput from 800
    # appends 7's at 120 (140 not below 120): no file of the walk holds it, written from its record
    (move,) = (c := _cut([5, 6, 8, 7], 800)).moves
    assert (move.source, move.target, move.count, move.units) == (-1, 120, 1, ((800, 50, 801),))
    assert (c.restored, c.lost[("T0", 0)].tolist(), c.dropped) == (1, [600, 700], ())
    # the reput from 700: 8's at 120, 7's at 140 (not below 140), both written from their records
    (move,) = (c := _cut([5, 6, 8, 7], 700)).moves
    assert (move.source, move.target, move.units) == (-1, 120, ((700, 50, 701), (800, 50, 801)))
    # with ext files the unit holds its new ext unit's address: refused in one line
    with pytest.raises(UnsupportedConfigError) as e:
        _cut([5, 6, 8, 7], 800, ext=True)
    assert "\n" not in str(e.value) and "T0/0" in str(e.value) and "walk dropped a cut unit" in str(e.value)


def test_a_first_cut_unit_not_right_after_the_walks_unit_before_goes_where_that_one_left_the_write_position() -> None:
    # queue offsets 4, 5 (below processOffset), 9, 10, 11: the walk appended 9's at 120 (one past 5's, ahead), 10's and
    # 11's after it; the cut leaves 120, the reput from 700 appends the last two there: 140 -> 120 (the broker's
    # -partial-first-ahead)
    offsets = (300, 400, 600, 700, 800)
    (move,) = (c := _cut([4, 5, 9, 10, 11], 700, offsets)).moves
    assert (move.source, move.target, move.count, c.lost[("T0", 0)].tolist()) == (140, 120, 2, [600])
    # queue offsets 4, 5, 3, 6, 7: the walk dropped 3's (60 below 120) and put 6's at 120, 7's at 140; the reput from
    # 700 appends them there again, from 600 it drops 3's again: 3's lost either way (-partial-first-behind)
    for reput in (700, 600):
        (move,) = (c := _cut([4, 5, 3, 6, 7], reput, offsets)).moves
        assert (move.source, move.target, move.count, c.lost[("T0", 0)].tolist()) == (120, 120, 2, [600])
    # the unit before one past its own unit before in an earlier data file (queue offset 4): the same
    (move,) = _cut([5, 9, 10, 11], 700, (400, 600, 700, 800), before={0: (4, 350)}).moves
    assert (move.source, move.target, move.count) == (140, 120, 2)
    # the unit before not one past its own unit before (queue offsets 4, 30, 6, 7: 30's at slot 5, not 30) or alone
    # (5 and 9, its unit before unknown; in an earlier data file, a light queue's too): where the walk put it is not
    # read, refused in one line
    for keys, offsets_, before, light in (([4, 30, 6, 7], (300, 400, 600, 700), None, False),
                                          ([5, 9, 10, 11], (400, 600, 700, 800), None, False),
                                          ([9, 10, 11], (600, 700, 800), {0: (5, 450)}, False),
                                          ([9, 10, 11], (600, 700, 800), {0: (5, 450)}, True)):
        with pytest.raises(UnsupportedConfigError) as e:
            _cut(keys, 700, offsets_, before=before, light=light)
        assert "\n" not in str(e.value) and "T0/0" in str(e.value) and "not one past" in str(e.value), keys
    # right after it (6, 7, 8 after 5 in an earlier data file): from 120, the last two put back there
    (move,) = _cut([6, 7, 8], 700, (600, 700, 800), before={0: (5, 450)}).moves
    assert (move.source, move.target, move.count) == (140, 120, 2)


def test_an_emptied_queue_whose_walk_dropped_its_first_cut_unit() -> None:
    # a kept file of zeros named 1000 (recover: max -1, write position 1000), every file of it deleted by the cut; the
    # walk dropped 4's (80 below 1000) and put 60's at 1000, 61's at 1020.  The reput from 700 puts them into a new file
    # where 60 falls (1000, fillPreBlank up to 1200): 1000 -> 1200, 4's lost
    held, loaded = {("T0", 0): (500, False, 0, True)}, {("T0", 0): (-1, 1000)}
    (move,) = (c := _cut([4, 60, 61], 700, (600, 700, 800), on_disk=held, loaded_at=loaded)).moves
    assert (move.source, move.target, move.count, move.blank_from) == (1000, 1200, 2, 1000)
    assert (c.lost[("T0", 0)].tolist(), c.dropped) == ([600], ())
    # the reput from 600 puts 4's back first, in a new file 0 (fillPreBlank up to 80), the others after it: written
    # from their records, the walk's file 1000 gone
    (move,) = (c := _cut([4, 60, 61], 600, (600, 700, 800), on_disk=held, loaded_at=loaded)).moves
    assert (move.source, move.target, move.count, move.blank_from) == (-1, 80, 3, 0)
    assert [u[0] for u in move.units] == [600, 700, 800] and (c.restored, dict(c.lost)) == (3, {})
    assert c.dropped == (("T0", 0, 1000),)


def test_a_queue_on_disk_with_no_walk_unit_below_process_offset_starts_where_recover_left_its_files() -> None:
    # T0/0 loaded by ConsumeQueue.recover up to write position 120 (max 450), the walk's units of it its cut ones only,
    # queue offsets 9, 10, 11: putMessagePositionInfo appended the first (180, ahead) at 120, the others after it (the
    # broker's -partial-held-ahead store, tests/test_dledger_crash_held_broker.py); the cut takes them back to 120, the
    # reput from 700 appends the last two from there: 140 -> 120
    held, loaded = {("T0", 0): (450, True, 120, True)}, {("T0", 0): (450, 120)}
    c = _cut([9, 10, 11], 700, (600, 700, 800), on_disk=held, loaded_at=loaded)
    (move,) = c.moves
    assert (move.source, move.target, move.count, move.blank_from) == (140, 120, 2, -1)
    assert (c.restored, c.lost[("T0", 0)].tolist()) == (2, [600])
    # their own queue offsets from the write position: the walk put them there, the reput from 600 puts all back
    c = _cut([6, 7, 8], 600, (600, 700, 800), on_disk=held, loaded_at=loaded)
    assert (c.moves, c.restored, dict(c.lost)) == ((), 3, {})
    # queue offsets * 20 below the files' write position: the walk dropped 4's and 5's (Build consume queue
    # repeatedly), put 6's at 120; the reput from 700 drops 5's again and appends 6's at 120 (the broker's
    # -zeros-emptied-named drops so below a file of zeros named 220, tests/test_dledger_crash_zeros_files_broker.py)
    (move,) = (c := _cut([4, 5, 6], 700, (600, 700, 800), on_disk=held, loaded_at=loaded)).moves
    assert (move.source, move.target, move.count, c.lost[("T0", 0)].tolist()) == (120, 120, 1, [600, 700])
    # a kept file of zeros (recover: max -1, write position its start, 0) whose every file the cut deletes (the
    # broker's -zeros-emptied, tests/test_dledger_crash_zeros_broker.py): the walk put them from 0 whatever their
    # queue offsets, not from the state the cut leaves (no file); the reput from 700 puts the last two into a new file
    # where 10 falls (fillPreBlank before it): 20 -> 200
    c = _cut([9, 10, 11], 700, (600, 700, 800), on_disk={("T0", 0): (500, False, 0, True)},
             loaded_at={("T0", 0): (-1, 0)})
    (move,) = c.moves
    assert (move.source, move.target, move.count, move.blank_from) == (20, 200, 2, 0)

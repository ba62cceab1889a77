"""What ``truncateDirtyLogicFiles(processOffset)`` leaves a queue whose every unit the DLedger crash walk wrote lies
at or past ``processOffset`` (:func:`store_format.dledger_crash_cut_state.truncate_dirty`), on units built here from
the broker's rules (rocketmq-store 5.5.1, rocketmq-all-5.3.3):

* ``ConsumeQueue.truncateDirtyLogicFiles`` first sets the queue's max to ``processOffset``, then walks its files from
  the last: a file whose first unit lies at or past the offset is deleted; in one whose first unit lies below, each
  unit below sets the max to its ``offset + size``.  A queue whose first unit the walk put at a queue offset inside a
  file had that file opened with ``fillPreBlank`` units (offset 0, size ``Integer.MAX_VALUE``) before it: they stay,
  and so does the file, with the max 2147483647; one whose first unit opened its file at that file's start loses the
  file and keeps ``processOffset``.
* ``BatchConsumeQueue.truncateDirtyLogicFiles`` leaves a batch queue with no unit below the offset the max
  ``processOffset - 1``.

The broker's cases are the 2 GiB stores of tests/test_dledger_2gib*_broker.py (``DLEDGER_2GIB=1``), which the default
suite does not write: this keeps the rule checked in every run."""
from __future__ import annotations

import numpy as np

from store_format.dledger_crash_cut import recheck_reput_offset
from store_format.dledger_crash_cut_state import TruncatedQueues, WalkedPositions, truncate_dirty
from store_format.dledger_queue_track import BLANK_MAX, KIND_BATCH, KIND_CQ, QueueTrack

CQ_FILE = 1000          # 50 units of 20 bytes a consume queue file
PROCESS_OFFSET = 500


def _cut(rows: list[tuple[int, int, int, int, int]], names: list[tuple[str, int]]) -> TruncatedQueues:
    track = QueueTrack()
    track.names, track.ids = names, {n: k for k, n in enumerate(names)}
    track._cur = [np.array(rows, dtype=np.int64)]
    units = track.last_file()
    walked = WalkedPositions(units, {}, {}, set(), set(), np.ones(len(units), dtype=bool))
    return truncate_dirty(track, walked, PROCESS_OFFSET, CQ_FILE, None)


def _truncated(rows: list[tuple[int, int, int, int, int]], names: list[tuple[str, int]]) -> dict[int, int]:
    return _cut(rows, names).max_after


def test_a_queue_opened_inside_a_file_keeps_its_fillpreblank_units_and_their_max() -> None:
    # T0/0's first unit at queue offset 5 (byte 100 of its first file): fillPreBlank units before it, max 2**31 - 1
    assert BLANK_MAX == 2**31 - 1
    assert _truncated([(600, 650, 0, 5, KIND_CQ), (700, 750, 0, 6, KIND_CQ)], [("T0", 0)]) == {0: BLANK_MAX}


def test_a_queue_opened_at_a_file_start_loses_that_file_and_keeps_process_offset() -> None:
    # T1/0's first unit at queue offset 50: the start of its second file (50 * 20 = 1000)
    assert _truncated([(600, 650, 0, 50, KIND_CQ), (700, 750, 0, 51, KIND_CQ)], [("T1", 0)]) == {0: PROCESS_OFFSET}


def test_a_batch_queue_with_no_unit_below_keeps_process_offset_minus_one() -> None:
    assert _truncated([(600, 650, 0, 0, KIND_BATCH)], [("BT0", 0)]) == {0: PROCESS_OFFSET - 1}


def test_recover_topic_queue_table_resets_only_a_consume_queue_left_with_no_file_on_5_5_1() -> None:
    # T0/0 left fillPreBlank units (a file), T1/0 no file, BT0/0 (a batch queue) no file: 5.5.1's
    # ConsumeQueue.correctMinOffset finds no last file of T1/0 and sets its max to -1; BatchConsumeQueue's never sets
    # the max; 5.3.3 leaves every max as the cut set it (consumequeue_recovery.no_file_max)
    cut = _cut([(600, 650, 0, 5, KIND_CQ), (610, 660, 1, 50, KIND_CQ), (620, 670, 2, 0, KIND_BATCH)],
               [("T0", 0), ("T1", 0), ("BT0", 0)])
    assert cut.max_after == {0: BLANK_MAX, 1: PROCESS_OFFSET, 2: PROCESS_OFFSET - 1}
    assert [(cut.batch(q), cut.no_file(q), cut.emptied(q)) for q in range(3)] == \
        [(False, False, False), (False, True, True), (True, True, False)]
    assert [cut.table_max(q, True) for q in range(3)] == [BLANK_MAX, -1, PROCESS_OFFSET - 1]
    assert [cut.table_max(q, False) for q in range(3)] == [BLANK_MAX, PROCESS_OFFSET, PROCESS_OFFSET - 1]
    # doRecheckReputOffsetFromCq's start: the largest of those maxes
    cut = _cut([(610, 660, 1, 50, KIND_CQ), (620, 670, 2, 0, KIND_BATCH)], [("T1", 0), ("BT0", 0)])
    assert (recheck_reput_offset(cut, PROCESS_OFFSET, 0, True), recheck_reput_offset(cut, PROCESS_OFFSET, 0, False)) \
        == (PROCESS_OFFSET - 1, PROCESS_OFFSET)


def test_a_queue_with_a_unit_below_process_offset_is_not_given_a_max_here() -> None:
    # the unit at 400 stays: its end (450) is the queue's max, through TruncatedQueues.top, not max_after
    got = _truncated([(400, 450, 0, 5, KIND_CQ), (600, 650, 0, 6, KIND_CQ), (700, 750, 1, 7, KIND_CQ)],
                     [("T0", 0), ("T2", 0)])
    assert got == {1: BLANK_MAX}


def test_ext_units_of_a_queue_whose_put_back_units_are_light_ones_too_are_refused_in_one_line() -> None:
    """``ConsumeQueue.putMessagePositionInfoWrapper`` puts an ext unit for a record's own unit only
    (``multiDispatchLmqQueue`` none): a queue holding own units and light ones whose put-back units include a light
    one is refused in one line, not an assertion (``ext_refused``; ``ext_reput`` leaves the refusal in
    ``ExtAgain.refused`` for a replay of the queue to take its place: ``-t9-first-light-mixed-ext``)."""
    import pytest

    from store_format.dledger_crash_cut_reput import ext_refused, ext_reput
    from store_format.dledger_queue_track import KIND_LIGHT
    from store_format.errors import UnsupportedConfigError

    track = QueueTrack(keep_own=True)
    track.names, track.ids = [("%LMQ%q1", 0)], {("%LMQ%q1", 0): 0}
    track._cur = [np.array([(600, 650, 0, 0, KIND_CQ), (700, 750, 0, 1, KIND_LIGHT)], dtype=np.int64)]
    track.base, track.own_units = 0, {0: 1}
    # the own unit put back: its ordinal among the own records the reput walks
    (again,) = ext_reput(track, 0, 1000, {0: (np.array([600]), np.array([20]))})
    assert again.ordinals.tolist() == [0] and ext_refused((again,)) == (again,)
    (light,) = ext_reput(track, 0, 1000, {0: (np.array([600, 700]), np.array([20, 40]))})
    assert light.ordinals.tolist() == [0] and light.positions.tolist() == [20]   # the own unit's only
    with pytest.raises(UnsupportedConfigError) as e:
        ext_refused((light,))
    assert "\n" not in str(e.value) and "%LMQ%q1/0" in str(e.value) and "light units" in str(e.value)

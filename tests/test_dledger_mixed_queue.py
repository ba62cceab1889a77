"""A consume queue a 5.x DLedger crash recovery's walk wrote both a record's own units and light ones in (a message
put to topic ``%LMQ%q1`` itself beside multi-dispatch into it): where ``putMessagePositionInfo`` put them
(``dledger_queue_track.replayed``) and the queue as ``truncateDirtyLogicFiles`` left it (``dledger_inside_mixed``),
on units built here; the broker's own case is ``-light-mixed`` in test_dledger_crash_inside_light_broker.py."""
from __future__ import annotations

import numpy as np

from store_format.dledger_inside_mixed import mixed_state
from store_format.dledger_queue_track import KIND_CQ, KIND_LIGHT, mixed_queues, replayed

# -light-mixed's shape: light units of queue offsets 0-2, an own unit of queue offset 0, then past processOffset a
# light unit of queue offset 3 (rows: offset, end, queue, queue offset, kind)
ROWS = np.array([[100, 150, 0, 0, KIND_LIGHT], [200, 250, 0, 1, KIND_LIGHT], [300, 350, 0, 2, KIND_LIGHT],
                 [400, 450, 0, 0, KIND_CQ], [600, 650, 0, 3, KIND_LIGHT]], dtype=np.int64)


def test_units_go_where_the_rule_puts_them_in_commitlog_order_not_by_queue_offset() -> None:
    assert mixed_queues(ROWS) == [0]
    pos, at, final = replayed(ROWS, 220)
    # the own unit of queue offset 0 appended at 60; the light unit of queue offset 3 dropped (60 below 80)
    assert pos.tolist() == [0, 20, 40, 60, -1] and at.tolist() == [0, 20, 40, 60, 80] and final == 80


NONE = np.zeros(1, dtype=bool)   # no cut unit dispatched again
NO_PAST = ROWS[:0]                # no record past the walk's end
# a record past the walk's end: %LMQ%q1's light unit of queue offset 4 (a walk ended by a damaged message before it)
PAST = np.array([[800, 850, 0, 4, KIND_LIGHT]], dtype=np.int64)


def test_the_cut_leaves_the_write_position_by_the_files_units() -> None:
    w = mixed_state(ROWS, ROWS[4:], 500, 220, 1, elsewhere=False, back=NONE, later=NO_PAST)
    assert not w.refused and (w.write, w.max, w.rebuild_write, w.rebuild_max) == (80, 450, 80, 450)
    # with ext files: the walk's one own unit put the one ext unit (light units none), the next ext ordinal 1
    assert w.ext_next == 1
    # a light unit of queue offset 4 past processOffset, appended at 80: the cut's write position there (an own unit
    # of queue offset 1 would be dropped, 20 below the write position)
    rows = np.vstack([ROWS[:4], [[600, 650, 0, 4, KIND_LIGHT]]])
    w = mixed_state(rows, rows[4:], 500, 220, 2, elsewhere=False, back=NONE, later=NO_PAST)
    assert (w.write, w.max, w.rebuild_write, w.rebuild_max) == (80, 450, 100, 650)


def test_cut_units_dispatched_again_carry_their_queue_offsets_and_where_the_walk_holds_them() -> None:
    # -light-mixed's cut light unit of queue offset 3, which the walk dropped: checked by its own queue offset (3),
    # read from nowhere (-1)
    w = mixed_state(ROWS, ROWS[4:], 500, 220, 1, elsewhere=False, back=~NONE, later=NO_PAST)
    assert [q for _o, _n, q in w.again] == [3] and w.again_at == (-1,) and w.again_skip == 0
    # an own unit of queue offset 0 cut at 60 (the walk appended it there, after light units 0-2)
    rows = np.vstack([ROWS[:3], [[600, 650, 0, 0, KIND_CQ]]])
    w = mixed_state(rows, rows[3:], 500, 220, 1, elsewhere=False, back=~NONE, later=NO_PAST)
    assert (w.write, w.max) == (60, 350) and [q for _o, _n, q in w.again] == [0] and w.again_at == (60,)


def test_records_past_the_walks_end_after_cut_units_the_reput_goes_on_past() -> None:
    # no cut unit dispatched again (inside the parsed messages): the record past the walk's end follows the parsed
    # units from the write position and max the cut left (the queue replayed whole), the cut unit counted skipped
    w = mixed_state(ROWS, ROWS[4:], 500, 220, 1, elsewhere=False, back=NONE, later=PAST)
    assert not w.refused and w.again == () and w.skipped == 1 and [(o, n, q) for o, n, q in w.past] == [(800, 50, 4)]
    assert (w.write, w.max) == (80, 450)


def test_a_queue_the_cut_left_with_no_file() -> None:
    # every unit past processOffset (50), the 5.5.1 cut deleting its files: write position and max -1, each cut unit
    # dispatched again with its own queue offset from where the walk's queue holds it
    w = mixed_state(ROWS, ROWS, 50, 220, 1, elsewhere=False, back=np.ones(len(ROWS), dtype=bool), later=NO_PAST,
               emptied=True)
    assert not w.refused and (w.write, w.max, w.rebuild_write) == (-1, -1, 80)
    assert [q for _o, _n, q in w.again] == [0, 1, 2, 0, 3] and w.again_at == (0, 20, 40, 60, -1)


def test_a_queue_with_units_of_one_kind_in_earlier_data_files() -> None:
    # light units 0 and 1 in an earlier data file (write position 40, max 350 there), the own unit of queue offset 0
    # in the last one past processOffset: appended at 40, the cut's write position; its max the earlier units' end
    rows = np.array([[600, 650, 0, 0, KIND_CQ]], dtype=np.int64)
    w = mixed_state(rows, rows, 500, 220, 1, elsewhere=False, back=np.zeros(1, dtype=bool), later=NO_PAST,
               start=(40, 350))
    assert not w.refused and (w.write, w.max, w.rebuild_write, w.rebuild_max) == (40, 350, 60, 650)


def test_a_unit_below_process_offset_the_walk_dropped() -> None:
    # every unit below processOffset (700), the light unit of queue offset 3 dropped there: the cut reads the file's
    # units, its write position after the last appended one (80), its max that one's end, not the dropped one's
    w = mixed_state(ROWS, ROWS[5:], 700, 220, 1, elsewhere=False, back=NONE[:0], later=NO_PAST)
    assert not w.refused and (w.write, w.max, w.rebuild_write, w.rebuild_max) == (80, 450, 80, 450)
    # -light-mixed-mid's shape: light 0, 1, the own unit of queue offset 0 at 40, light 2 dropped (40 below 60), all
    # below processOffset; light 3 at 60 cut
    rows = ROWS[[0, 1, 3, 2, 4]]
    w = mixed_state(rows, rows[4:], 500, 220, 1, elsewhere=False, back=NONE, later=NO_PAST)
    assert not w.refused and (w.write, w.max) == (60, 450)


def test_a_queue_the_533_cut_left_with_no_file() -> None:
    # 5.3.3 (not reset_emptied): no file, its max kept at processOffset (correctMinOffset does not reset it)
    w = mixed_state(ROWS, ROWS, 50, 220, 1, elsewhere=False, back=np.ones(len(ROWS), dtype=bool), later=NO_PAST,
               emptied=True, reset_emptied=False)
    assert not w.refused and (w.write, w.max, w.rebuild_write) == (-1, 50, 80)


def test_what_stays_refused() -> None:
    assert "earlier data files" in mixed_state(ROWS, ROWS[4:], 500, 220, 1, elsewhere=True, back=NONE,
                                               later=NO_PAST).refused
    # every unit cut, the first at a file's start (the cut leaves no file) but not said to be emptied
    assert "no file left" in mixed_state(ROWS, ROWS, 50, 220, 1, elsewhere=False, back=NONE, later=NO_PAST).refused


def test_a_queue_the_cut_left_with_fillpreblank_units_only() -> None:
    # no unit appended below processOffset, a file left: the first unit (light, queue offset 3) at 60 after three
    # fillPreBlank units, the own one of queue offset 0 at 80; the cut keeps the blanks (max 2147483647), write 60
    # (-past-2gib-mixed-blank's shape)
    rows = np.array([[600, 650, 0, 3, KIND_LIGHT], [700, 750, 0, 0, KIND_CQ]], dtype=np.int64)
    w = mixed_state(rows, rows, 500, 220, 1, elsewhere=False, back=np.ones(2, dtype=bool), later=NO_PAST)
    assert not w.refused and (w.write, w.max, w.rebuild_write, w.rebuild_max) == (60, 2**31 - 1, 100, 750)
    # both cut units dispatched again, each read where the walk's queue holds it
    assert [tuple(a) for a in w.again] == [(600, 50, 3), (700, 50, 0)] and w.again_at == (60, 80)


def test_records_past_the_walks_end_keep_their_own_queue_offsets() -> None:
    # every cut unit dispatched again, then the record past the walk's end: handed over with its queue offset (4), which
    # putMessagePositionInfo checks against the write position the parsed and cut units leave
    w = mixed_state(ROWS, ROWS[4:], 500, 220, 1, elsewhere=False, back=~NONE, later=PAST)
    assert not w.refused and [(o, n, q) for o, n, q in w.past] == [(800, 50, 4)]

"""``store_format.consumequeue_recovery`` against ``ConsumeQueue.recover`` /
``truncateDirtyLogicFiles`` / ``MappedFileQueue.doLoad`` (rocketmq-all-5.3.3), and the same walks with
``BatchConsumeQueue``'s rules, stepped through by hand on small files of three units each: the
expected figures below are those steps."""
from __future__ import annotations

import numpy as np

from store_format.batchconsumequeue import BCQ_UNIT_DTYPE, BCQ_UNIT_SIZE
from store_format.consumequeue_recovery import (
    BCQ_RULES,
    dispatch_units,
    last_ext_address,
    recover_consume_queue,
    truncate_dirty_logic_files,
)
from store_format.layout import CQ_UNIT_DTYPE, CQ_UNIT_SIZE

FILE = 3 * CQ_UNIT_SIZE


def _file(*units: tuple[int, int]) -> bytes:
    a = np.zeros(3, dtype=CQ_UNIT_DTYPE)
    for i, (off, size) in enumerate(units):
        a[i] = (off, size, 0)
    return a.tobytes()


def _queue() -> list[tuple[str, bytes]]:
    return [(f"{0:020d}", _file((100, 10), (110, 10), (120, 10))),
            (f"{FILE:020d}", _file((130, 10), (0, 0), (140, 10)))]


def test_recover_stops_at_the_first_invalid_unit() -> None:
    # recover(): file 0 accepts all three units; file 1 accepts (130, 10), stops at the zero unit:
    # processOffset = 60 + 20, maxPhysicOffset = 140; (140, 10) lies after the stop
    rec = recover_consume_queue(_queue(), file_size=FILE, broker_5x=False)
    assert rec.load_failure is None
    assert rec.recover_stops_at == FILE + CQ_UNIT_SIZE
    assert rec.units_dropped == 1
    assert rec.files_deleted == []
    assert rec.max_physic_offset == 140
    assert rec.write_position == FILE + CQ_UNIT_SIZE
    assert sorted(rec.present.tolist()) == [100, 110, 120, 130]


def test_truncate_dirty_logic_files_walks_back_from_the_last_file() -> None:
    # truncateDirtyLogicFiles(115): last file's first unit 130 >= 115 -> deleted; file 0: 100 < 115
    # (max 110), 110 < 115 (max 120), 120 >= 115 -> return with maxPhysicOffset 120
    rec = recover_consume_queue(_queue(), file_size=FILE, broker_5x=False)
    t = truncate_dirty_logic_files(rec.tail_files, 115)
    assert t.max_physic_offset == 120
    assert t.files_deleted == [f"{FILE:020d}"]
    assert t.units_truncated == 3
    assert [name for name, *_ in rec.tail_files] == [f"{0:020d}"]
    assert t.write_position == 2 * CQ_UNIT_SIZE
    assert rec.tail_files[0][1].tolist() == [100, 110]


def test_do_load_refuses_a_file_of_another_size_and_5x_drops_an_empty_last_file() -> None:
    files = _queue() + [(f"{2 * FILE:020d}", b"")]
    assert recover_consume_queue(files, file_size=FILE, broker_5x=True).load_failure is None
    failure = recover_consume_queue(files, file_size=FILE, broker_5x=False).load_failure
    assert failure is not None and failure.startswith(f"{2 * FILE:020d} is 0 bytes")


def test_recover_remembers_the_last_ext_address_it_accepted() -> None:
    # ConsumeQueue.recover keeps maxExtAddr = the tagsCode of the last accepted unit that is an ext
    # address (<= Integer.MIN_VALUE - 1); the unit after the hole (0, 0) is not accepted
    a = np.zeros(3, dtype=CQ_UNIT_DTYPE)
    a[0] = (100, 10, -(1 << 63) + 40)
    a[1] = (110, 10, 7)                 # a plain tagsCode: not an ext address
    b = np.zeros(3, dtype=CQ_UNIT_DTYPE)
    b[2] = (130, 10, -(1 << 63) + 80)
    rec = recover_consume_queue([(f"{0:020d}", a.tobytes()), (f"{FILE:020d}", b.tobytes())], file_size=FILE,
                                broker_5x=False)
    assert rec.max_ext_addr == -(1 << 63) + 40
    assert last_ext_address(rec.tail_files[:1]) == -(1 << 63) + 40


BFILE = 3 * BCQ_UNIT_SIZE


def _bfile(*units: tuple[int, int, int, int]) -> bytes:
    a = np.zeros(3, dtype=BCQ_UNIT_DTYPE)
    for i, (off, size, base, batch) in enumerate(units):
        a[i] = (off, size, 0, 0, base, batch, -1, 0)
    return a.tobytes()


def test_batch_recover_needs_a_base_offset_and_a_batch_size_and_keeps_the_last_start() -> None:
    # BatchConsumeQueue.recover: (100, 10, 0, 2) and (110, 10, 2, 1) accepted; (120, 10, 3, 0) has batchSize 0:
    # the walk stops at byte 2 * 46 of file 0, file 1 goes (truncateDirtyFiles); maxMsgPhyOffsetInCommitLog is
    # the start of the last accepted unit, 110
    files = [(f"{0:020d}", _bfile((100, 10, 0, 2), (110, 10, 2, 1), (120, 10, 3, 0))),
             (f"{BFILE:020d}", _bfile((130, 10, 4, 1)))]
    rec = recover_consume_queue(files, file_size=BFILE, broker_5x=True, rules=BCQ_RULES)
    assert rec.max_physic_offset == 110
    assert rec.write_position == rec.recover_stops_at == 2 * BCQ_UNIT_SIZE
    assert rec.files_deleted == [f"{BFILE:020d}"]
    assert rec.units_dropped == 2
    assert sorted(rec.present.tolist()) == [100, 110]


def test_batch_truncate_starts_below_the_cut_and_keeps_starts() -> None:
    # BatchConsumeQueue.truncateDirtyLogicFiles(125): file 1's first unit 130 >= 125 -> deleted (1 unit);
    # file 0: 100 kept (max 100), 110 kept (max 110), 120 < 125 kept (max 120), file full -> stop
    files = [(f"{0:020d}", _bfile((100, 10, 0, 1), (110, 10, 1, 1), (120, 10, 2, 1))),
             (f"{BFILE:020d}", _bfile((130, 10, 3, 1)))]
    rec = recover_consume_queue(files, file_size=BFILE, broker_5x=True, rules=BCQ_RULES)
    assert rec.max_physic_offset == 130
    t = truncate_dirty_logic_files(rec.tail_files, 125, unit_size=BCQ_UNIT_SIZE, truncate_from=-1)
    assert (t.max_physic_offset, t.units_truncated, t.files_deleted) == (120, 1, [f"{BFILE:020d}"])
    assert t.write_position == BFILE
    # every unit at or past the cut: every file deleted (the queue ends at 0), the max stays at phyOffset - 1
    rec = recover_consume_queue(files[1:], file_size=BFILE, broker_5x=True, rules=BCQ_RULES)
    t = truncate_dirty_logic_files(rec.tail_files, 125, unit_size=BCQ_UNIT_SIZE, truncate_from=-1)
    assert (t.max_physic_offset, t.units_truncated, t.write_position) == (124, 1, 0)


def test_batch_dispatch_appends_past_the_loaded_start_then_the_cut_keeps_those_below_it() -> None:
    # BatchConsumeQueue.recover on file 0 holding (100, 10) alone: max 100, write position 46.
    # putBatchMessagePositionInfo of (90, 5) (start at or below 100: skipped), (105, 20) (start past 100, though it
    # overlaps: appended at 46, max 105), (130, 10) (appended at 92, file 0 full) and (150, 10) (getLastMappedFile
    # adds file 138: at its byte 0); the unit numbers given are not read (no queue offset check)
    files = [(f"{0:020d}", _bfile((100, 10, 0, 1)))]
    rec = recover_consume_queue(files, file_size=BFILE, broker_5x=True, rules=BCQ_RULES)
    assert (rec.max_physic_offset, rec.write_position) == (100, BCQ_UNIT_SIZE)
    units = np.array([(90, 5, 7), (105, 20, 7), (130, 10, 7), (150, 10, 7)], dtype=np.int64)
    tail = dispatch_units(rec.tail_files, units, rec.max_physic_offset, BFILE, BCQ_RULES)
    assert [name for name, *_ in tail] == [f"{0:020d}", f"{BFILE:020d}"]
    assert tail[0][1].tolist() == [100, 105, 130] and tail[0][2].tolist() == [100, 105, 130]   # max: the start
    assert tail[1][1][:1].tolist() == [150] and tail[1][3].tolist() == [True, False, False]
    assert rec.tail_files[0][1].tolist()[:2] == [100, 0]   # copied, not changed
    # truncateDirtyLogicFiles(140): file 138's first unit 150 >= 140 -> deleted; file 0 kept whole: max 130
    t = truncate_dirty_logic_files(tail, 140, unit_size=BCQ_UNIT_SIZE, truncate_from=-1)
    assert (t.max_physic_offset, t.write_position, t.files_deleted) == (130, BFILE, [f"{BFILE:020d}"])
    # (120): 130 >= 120 stops file 0 at 92, max 105 (the files alone would leave 46 and 100)
    tail = dispatch_units(rec.tail_files, units, rec.max_physic_offset, BFILE, BCQ_RULES)
    t = truncate_dirty_logic_files(tail, 120, unit_size=BCQ_UNIT_SIZE, truncate_from=-1)
    assert (t.max_physic_offset, t.write_position) == (105, 2 * BCQ_UNIT_SIZE)

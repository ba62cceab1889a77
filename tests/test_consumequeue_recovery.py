"""``store_format.consumequeue_recovery`` against ``ConsumeQueue.recover`` /
``truncateDirtyLogicFiles`` / ``MappedFileQueue.doLoad`` (rocketmq-all-5.3.3), stepped through by
hand on small files of three units each: the expected figures below are those steps."""
from __future__ import annotations

import numpy as np

from store_format.consumequeue_recovery import recover_consume_queue, truncate_dirty_logic_files
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
    assert sorted(rec.present.tolist()) == [100, 110, 120, 130]


def test_truncate_dirty_logic_files_walks_back_from_the_last_file() -> None:
    # truncateDirtyLogicFiles(115): last file's first unit 130 >= 115 -> deleted; file 0: 100 < 115
    # (max 110), 110 < 115 (max 120), 120 >= 115 -> return with maxPhysicOffset 120
    rec = recover_consume_queue(_queue(), file_size=FILE, broker_5x=False)
    t = truncate_dirty_logic_files(rec.tail_files, 115)
    assert t.max_physic_offset == 120
    assert t.files_deleted == [f"{FILE:020d}"]
    assert t.units_truncated == 3
    assert [name for name, _, _ in rec.tail_files] == [f"{0:020d}"]
    assert rec.tail_files[0][1].tolist() == [100, 110]


def test_do_load_refuses_a_file_of_another_size_and_5x_drops_an_empty_last_file() -> None:
    files = _queue() + [(f"{2 * FILE:020d}", b"")]
    assert recover_consume_queue(files, file_size=FILE, broker_5x=True).load_failure is None
    failure = recover_consume_queue(files, file_size=FILE, broker_5x=False).load_failure
    assert failure is not None and failure.startswith(f"{2 * FILE:020d} is 0 bytes")

"""``store_format.consumequeue_ext_recovery`` against ``ConsumeQueueExt.recover`` /
``truncateByMaxAddress`` / ``MappedFileQueue.truncateDirtyFiles`` (rocketmq-all-4.9.8, the same in
5.3.3), stepped through by hand on ext files of 64 bytes (three 20-byte units, then 4 bytes kept free):
the expected figures below are those steps."""
from __future__ import annotations

import numpy as np

from store_format.consumequeue_ext import EXT_UNIT_DTYPE, EXT_UNIT_SIZE
from store_format.consumequeue_ext_recovery import ext_units_between, recover_ext

FILE = 3 * EXT_UNIT_SIZE + 4
LONG_MIN = -(1 << 63)


def _file(units: int, end_mark: bool = False, size: int = EXT_UNIT_SIZE) -> bytes:
    a = np.zeros(units, dtype=EXT_UNIT_DTYPE)
    a["size"] = size
    a["tagsCode"] = np.arange(units) + 1
    data = a.tobytes() + ((-1).to_bytes(2, "big", signed=True) if end_mark else b"")
    return data + bytes(FILE - len(data))


def _queue() -> list[tuple[str, bytes]]:
    return [(f"{0:020d}", _file(3, end_mark=True)), (f"{FILE:020d}", _file(3, end_mark=True)),
            (f"{2 * FILE:020d}", _file(2))]


def test_recover_ends_in_the_last_file_and_max_address_truncates_back() -> None:
    # recover walks every file; the last one has two units: processOffset = 128 + 40 (nothing deleted).
    # truncateByMaxAddress(address of real offset 64 + 20): file 64 holds it, its unit is 20 bytes long:
    # truncateDirtyFiles(104) deletes file 128 and puts file 64's end at 40
    r = recover_ext(_queue(), file_size=FILE, broker_5x=False, max_ext_addr=LONG_MIN + FILE + EXT_UNIT_SIZE)
    assert (r.load_failure, r.failure, r.note) == (None, None, "")
    assert r.recover_position == 2 * FILE + 2 * EXT_UNIT_SIZE
    assert r.write_position == FILE + 2 * EXT_UNIT_SIZE
    assert r.files_deleted == [f"{2 * FILE:020d}"]
    assert r.units_dropped == 1 + 2          # file 64's third unit, file 128's two


def test_max_address_at_or_past_the_recovered_end_changes_nothing() -> None:
    # selectMappedBuffer gives nothing at or past the write position recover left (168): no truncation
    r = recover_ext(_queue(), file_size=FILE, broker_5x=False, max_ext_addr=LONG_MIN + 2 * FILE + 2 * EXT_UNIT_SIZE)
    assert r.write_position == r.recover_position == 2 * FILE + 2 * EXT_UNIT_SIZE
    assert r.files_deleted == [] and r.units_dropped == 0 and "nothing truncated" in r.note
    # a plain tagsCode (1: none seen) is not an ext address: nothing either
    r = recover_ext(_queue(), file_size=FILE, broker_5x=False, max_ext_addr=1)
    assert r.write_position == r.recover_position and r.note


def test_a_size_that_skips_past_the_end_fails_the_load_and_a_wrong_length_is_refused() -> None:
    # readBySkip: a unit of size 30 at byte 60 moves the buffer to 90 > 64: IllegalArgumentException
    bad = bytearray(_file(3))
    bad[60:62] = (30).to_bytes(2, "big")
    r = recover_ext([(f"{0:020d}", bytes(bad))], file_size=FILE, broker_5x=False, max_ext_addr=1)
    assert r.failure is not None and "past the file's end" in r.failure
    r = recover_ext([(f"{0:020d}", _file(1)[:50])], file_size=FILE, broker_5x=True, max_ext_addr=1)
    assert r.load_failure is not None and "mappedFileSizeConsumeQueueExt" in r.load_failure


def test_units_between_skips_the_free_bytes_at_each_file_end() -> None:
    # units at 0, 20, 40 | 64, 84, 104 | 128 ...: from 20 up to 104 there are 20, 40, 64, 84
    assert ext_units_between(20, 104, FILE) == 4
    assert ext_units_between(60, 64, FILE) == 0     # 60 is file 0's end after its third unit
    assert ext_units_between(104, 20, FILE) == -4

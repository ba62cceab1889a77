"""``store_format.consumequeue_ext_recovery`` against ``ConsumeQueueExt.recover`` /
``truncateByMaxAddress`` / ``MappedFileQueue.truncateDirtyFiles`` (rocketmq-all-4.9.8, the same in
5.3.3), stepped through by hand on ext files of 64 bytes (three 20-byte units, then 4 bytes kept free):
the expected figures below are those steps."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store_format.consumequeue_ext import END_BLANK_DATA_LENGTH, EXT_UNIT_DTYPE, EXT_UNIT_SIZE
from store_format.consumequeue_ext_recovery import ext_position_after_puts, ext_put_at, ext_units_between, recover_ext

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


def _put_step_by_step(position: int, puts: int, file_size: int) -> int:
    """``ConsumeQueueExt.put`` of ``puts`` 20-byte units, one call at a time, on a write position and a last file's
    start: ``getLastMappedFile`` (a full file, or none: a new one after it), ``blankSize = fileSize - wrotePosition -
    END_BLANK_DATA_LENGTH``, ``size > blankSize``: ``fullFillToEnd`` (the write position the file's size) and the
    next try, else ``appendMessage``."""
    start, wrote = position - position % file_size, position % file_size
    for _ in range(puts):
        while True:
            if wrote == file_size:   # isFull: getLastMappedFile(0) creates the next file
                start, wrote = start + file_size, 0
            if EXT_UNIT_SIZE > file_size - wrote - END_BLANK_DATA_LENGTH:
                wrote = file_size    # fullFillToEnd
                continue
            wrote += EXT_UNIT_SIZE
            break
    return start + wrote


@settings(max_examples=400, deadline=None)
@given(file_size=st.integers(EXT_UNIT_SIZE + 4, 200), data=st.data())
def test_position_after_puts_is_the_step_by_step_put_from_any_byte_end(file_size: int, data: st.DataObject) -> None:
    # any byte end but one leaving 1 byte of its file (fullFillToEnd's short does not fit: the put throws)
    position = data.draw(st.integers(0, 4 * file_size).filter(lambda p: p % file_size != file_size - 1))
    puts = data.draw(st.integers(0, 30))
    assert ext_position_after_puts(position, puts, file_size) == _put_step_by_step(position, puts, file_size)
    if puts:   # the first unit's place (its address: decorate) is where one put from there ends, less 20
        assert ext_put_at(position, file_size) == ext_position_after_puts(position, 1, file_size) - EXT_UNIT_SIZE
    per_file = (file_size - END_BLANK_DATA_LENGTH) // EXT_UNIT_SIZE
    on_unit = position // file_size * file_size + min(position % file_size // EXT_UNIT_SIZE, per_file) * EXT_UNIT_SIZE
    if position == on_unit:   # a unit boundary: the 20-byte ordinal count
        first = position // file_size * per_file + position % file_size // EXT_UNIT_SIZE
        assert ext_units_between(position, ext_position_after_puts(position, puts, file_size), file_size) == puts
        if puts:
            last = first + puts - 1
            assert ext_position_after_puts(position, puts, file_size) == \
                last // per_file * file_size + last % per_file * EXT_UNIT_SIZE + EXT_UNIT_SIZE


def test_put_after_a_bitmap_unit_end_off_the_20_byte_grid() -> None:
    # a 26-byte unit (6 bitmap bytes) at 0 and one at 26 end at 52: 52 + 20 > 64 - 4, so the next unit goes to 64
    assert ext_put_at(52, FILE) == FILE and ext_position_after_puts(52, 2, FILE) == FILE + 2 * EXT_UNIT_SIZE
    assert ext_put_at(26, FILE) == 26 and ext_position_after_puts(26, 2, FILE) == FILE + EXT_UNIT_SIZE
    with pytest.raises(ValueError, match="fullFillToEnd"):
        ext_put_at(FILE - 1, FILE)

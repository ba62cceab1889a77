"""store_format.batchconsumequeue against a plain reading of BatchConsumeQueue.putMessagePositionInfoWrapper /
putBatchMessagePositionInfo: one queue's units, one at a time."""
from __future__ import annotations

import struct

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from store_format.batchconsumequeue import (
    BCQ_UNIT_SIZE,
    assign_batch_positions,
    bcq_file_size_error,
    build_bcq_file,
    new_batch_states,
)

UNIT = struct.Struct(">qiqqqhii")


def _reference(units: list[tuple[int, int, int, int]]) -> list[int]:
    """(queue, commitlog offset, base, batch) in dispatch order -> byte position or -1."""
    last: dict[int, int] = {}
    write: dict[int, int] = {}
    out = []
    for q, off, base, batch in units:
        if base < 0 or batch < 0 or off <= last.get(q, -1):
            out.append(-1)
            continue
        out.append(write.get(q, 0))
        write[q] = write.get(q, 0) + BCQ_UNIT_SIZE
        last[q] = off
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 300), st.integers(-2, 50), st.integers(-1, 5)),
                max_size=60))
def test_positions_follow_the_broker_rules(units) -> None:
    arr = np.array(units, dtype=np.int64).reshape(-1, 4)
    states = new_batch_states(3)
    pos = assign_batch_positions(arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3], states)
    assert pos.tolist() == _reference(units)


def test_file_bytes_and_size_rule() -> None:
    pos = np.array([46, 0])   # any order: each unit at its slot
    data = build_bcq_file(0, 4 * 46, pos, np.array([500, 7]), np.array([90, 80]), np.array([-3, 0]),
                          np.array([1700000000001, 1700000000000]), np.array([5, 0]), np.array([1, 5]))
    assert len(data) == 4 * 46
    assert UNIT.unpack_from(data, 0) == (7, 80, 0, 1700000000000, 0, 5, -1, 0)
    assert UNIT.unpack_from(data, 46) == (500, 90, -3, 1700000000001, 5, 1, -1, 0)
    assert bytes(data[92:]) == bytes(92)
    assert bcq_file_size_error(46 * 3) is None
    assert "multiple of 46" in (bcq_file_size_error(1000) or "")

"""DLedger crash restarts on the 5.3.3 line (an abort file, ``recheckReputOffsetFromCq=true``, the queues kept on
disk) whose start's reput, set at ``processOffset`` (the max the 5.3.3 cut keeps for a queue it emptied), parses a
well-formed message for that queue there and then goes on at an entry's start past that queue's first cut unit
(inside the parsed message), dispatching only its last one again: the -own-to-entry-some stores of
:mod:`broker_dledger_inside_533_scenarios`.  Written by the published RocketMQ 5.3.3 store through the JVM harness in
``tests/broker/`` (``DLEDGER_LINES=5.3.3``, or ``4.9.8,5.3.3,5.5.1``): what the broker's restart wrote, and
``verify``'s plan and units lost on the store as that restart found it.
"""
from __future__ import annotations

import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_files import cq_unit, last_data_bytes
from broker_dledger_runs import LINES, _queued, _units_below_write, _verify_with_plan, _written

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()

_LINES_533 = bh.params_or_skip([ln for ln in LINES if ln.startswith("5.3")],
                               "5.3.3 only: DLEDGER_LINES=5.3.3 (or 4.9.8,5.3.3,5.5.1)")


def _kept_some_store(name: str, suffix: str) -> tuple[dict, Path, int, int, int, int]:
    """The -own-to-entry-some store ``name`` as the 5.3.3 broker wrote it, asserted to be the case: the cut at
    ``processOffset`` took T9/0's two units (on disk before the walk) with its only file, its max kept at
    ``processOffset``, where the reput is set and the parsed message's head (``suffix``'s) lies,
    that message ending where the last record's entry starts, the first T9/0 record inside it and the last one past
    it; the run, its folder, the reput, the parsed message's size, and the first and last records' offsets."""
    from broker_dledger_inside_533_scenarios import KEPT_LOW, KEPT_SOME_QUEUE_OFFSETS, kept_some_messages
    from broker_dledger_inside_again_scenarios import SOME_T0_SIZE, SOME_T0_TOPIC_AT
    r, w, src = _written(name)
    reput, head, size = kept_some_messages(KEPT_SOME_QUEUE_OFFSETS[suffix], suffix == KEPT_LOW)
    assert int(w["truncateDirtyLogicFilesAt"]) == reput, w["truncateDirtyLogicFilesAt"]
    assert last_data_bytes(src, reput, len(head)) == head, "the message at processOffset"
    first_at = reput + size - SOME_T0_SIZE   # inside the parsed message
    first = last_data_bytes(src, first_at, SOME_T0_SIZE)
    assert struct.unpack(">i", first[:4])[0] == SOME_T0_SIZE and first[SOME_T0_TOPIC_AT:SOME_T0_TOPIC_AT + 3] == \
        b"\x02T9", first
    last_at = reput + size + 48   # the last record, after its entry's header
    last = last_data_bytes(src, last_at, 256)
    last_size = struct.unpack(">i", last[:4])[0]
    assert struct.unpack(">q", last[20:28])[0] == struct.unpack(">q", first[20:28])[0] + 1 == 1
    assert int(w["maxPhyOffset"]) == last_at + last_size, w["maxPhyOffset"]
    # T9/0 on disk before the walk, both its units at or past processOffset: the 5.3.3 cut deletes its file and keeps
    # its max at processOffset, the largest, where doRecheckReputOffsetFromCq sets the reput
    before = (src / "before" / "consumequeue" / "T9" / "0" / f"{0:020d}").read_bytes()
    assert [cq_unit(before, k)[:2] for k in (0, 20)] == [(first_at, SOME_T0_SIZE), (last_at, last_size)], before.hex()
    loaded = w["queuesAfterLoad"]["T9/0"]
    assert loaded["files"] == [] and int(loaded["maxPhysicOffset"]) == reput, loaded
    return r, src, reput, size, first_at, last_at


@pytest.mark.parametrize("suffix", ["", "-zero", "-low"], ids=["some", "zero", "low"])
@pytest.mark.parametrize("line", _LINES_533)
def test_verify_predicts_a_crash_restart_whose_reput_puts_back_only_the_last_cut_unit_of_a_queue_the_533_cut_emptied(
        line, suffix, tmp_path, monkeypatch):
    """-own-to-entry-some: the parsed T9/0 message's queue offset 13: getLastMappedFile creates file 220 (no file
    left, the max processOffset, which the parsed unit ends past), two fillPreBlank units, the parsed unit at 260;
    the reput goes on at the last entry and dispatches the last cut unit (queue offset 1) again: past the max, but
    20 lies below the write position 280 ("build consume queue repeatedly"), dropped; the first cut unit, inside the
    parsed message, is not dispatched again: both lost.  -some-zero: queue offset 0: file 0, the parsed unit at 0,
    the last cut unit appended at 20 (its queue offset the write position), the first lost.  -some-low: the -some
    message with its PHYSICALOFFSET field such that its unit ends at processOffset, the max the 5.3.3 cut keeps:
    dropped ("maybe try to build consume queue repeatedly", no file created), so the last cut unit is the queue's
    first: file 0, a fillPreBlank unit, the unit at 20 (the 5.5.1 max of -1 would put the parsed unit at 260 and
    drop the last).  verify's plan puts them there (the replay's copies, the first lost) and its units lost are those
    the broker's queues lack."""
    from broker_dledger_inside_533_scenarios import KEPT_LOW, KEPT_SOME_QUEUE_OFFSETS

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-kept-embedded-own-to-entry-some{suffix}"
    r, src, reput, size, _first_at, last_at = _kept_some_store(name, suffix)
    w = r["written"]
    file_size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    low, back = suffix == KEPT_LOW, suffix != ""   # the parsed unit dropped; the last cut unit appended
    at = 0 if low else KEPT_SOME_QUEUE_OFFSETS[suffix] * 20   # the queue's first unit (but fillPreBlank ones)
    start = at - at % file_size
    state = w["queuesAfterDispatch"]["T9/0"]
    assert state["files"] == [f"{start:020d}"], state
    held = (src / "expected" / "consumequeue" / "T9" / "0" / state["files"][0]).read_bytes()
    blank = struct.pack(">qiq", 0, 2**31 - 1, 0)
    last_size = struct.unpack(">i", last_data_bytes(src, last_at, 4))[0]
    parsed_at = struct.unpack(">q", last_data_bytes(src, reput, 36)[28:36])[0]   # its PHYSICALOFFSET field
    assert parsed_at == (reput - size if low else reput), parsed_at
    units = (blank if low else struct.pack(">qiq", reput, size, 0)) + \
        (struct.pack(">qiq", last_at, last_size, 0) if back else b"")
    assert int(state["maxOffset"]) == at + len(units), state
    assert held == blank * (at % file_size // 20) + units + bytes(file_size - at % file_size - len(units)), held.hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    assert placed.units == (() if low else (InsideUnit("T9", 0, at, reput, size, 0),)), placed
    (q,) = [w for w in placed.whole if (w.topic, w.queue_id) == ("T9", 0)]   # replayed whole
    # the first cut unit dropped, the second (back) where it was
    assert q.copies == (((20, 20),) if back else ()) and len(q.lost) == 2 - back, q
    assert placed.opened == (("T9", 0, start),), placed
    count = _units_below_write(w, src, (reput, reput - size))   # neither fillPreBlank nor the parsed one
    assert p["units_lost"] == _queued(r["scenario"]) - count == 2 - back, (count, p["units_lost"], p["notes"])
    (t9,) = [q for q in p["queues"] if q["queue"] == "T9/0"]
    assert t9["units_lost"] == 2 - back, t9

"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside
an entry, parses a well-formed message for an ordinary consume queue the walk wrote and then goes on at an entry's
start past some of that queue's cut units, dispatching only the rest again.  Written by the published RocketMQ store
through the JVM harness in ``tests/broker/``: what the broker's restart wrote, ``rebuild --as-restart`` on the store
as that restart found it (byte for byte) and ``verify``'s units lost.  The scenarios:
:mod:`broker_dledger_inside_again_scenarios`.
"""
from __future__ import annotations

import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_files import last_data_bytes
from broker_dledger_runs import (
    LINES,
    _queued,
    _restart_as_the_broker,
    _units_below_write,
    _verify,
    _written,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


def _units(src: Path, queue: str, files: list[str], end: int) -> dict[int, tuple[int, int, int]]:
    """The broker's units of ``queue`` (``T/q``) in its files ``files`` below queue byte ``end``, by queue byte."""
    out = {}
    for f in files:
        b = (src / "expected" / "consumequeue" / queue / f).read_bytes()[:max(0, end - int(f))]
        out |= {int(f) + i: struct.unpack(">qiq", b[i:i + 20]) for i in range(0, len(b), 20)}
    return out


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_puts_back_only_the_last_cut_unit_of_a_queue(line, tmp_path):
    """The -to-entry store with one more T0/0 message before its last (two T0/0 units cut) and, where the reput is
    set (processOffset - 1), a T0/0 message (queue offset 1000) whose body runs over the host record's tail, B9's
    entry and the first T0/0 entry up to its record's topic, so that it ends at the last message's entry.
    putMessagePositionInfo appends it at the write position the cut left (the first cut unit's, K * 20: queue offset
    1000 passes the check); the reput goes on at the last entry and dispatches the last T0/0 record again: past the
    max, queue offset K + 1 not below the write position, so appended at (K + 1) * 20, where it was; the first cut
    unit, inside the parsed message, is not dispatched again (lost).  --as-restart writes the broker's files byte for
    byte, verify predicts the units lost."""
    from broker_dledger_inside_again_scenarios import (
        SOME_B9_SIZE,
        SOME_T0_PROPS,
        SOME_T0_SIZE,
        SOME_T0_TOPIC_AT,
        embedded_to_entry_some_messages,
    )
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-some"
    r, w, src = _written(name)
    reput, head, size = embedded_to_entry_some_messages()
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    assert last_data_bytes(src, reput, len(head)) == head, "the T0/0 message at processOffset - 1"
    first_at = reput + size - SOME_T0_SIZE   # the first T0/0 record, inside the parsed message
    b9 = last_data_bytes(src, first_at - 48 - SOME_B9_SIZE, SOME_B9_SIZE)
    assert struct.unpack(">i", b9[:4])[0] == SOME_B9_SIZE, b9
    first = last_data_bytes(src, first_at, SOME_T0_SIZE)
    assert struct.unpack(">i", first[:4])[0] == SOME_T0_SIZE and first[SOME_T0_TOPIC_AT:SOME_T0_TOPIC_AT + 3] == \
        b"\x02T0" and first.endswith(SOME_T0_PROPS), first
    last_at = reput + size + 48   # the last T0/0 record, after its entry's header
    last = last_data_bytes(src, last_at, SOME_T0_SIZE)
    assert struct.unpack(">i", last[:4])[0] == SOME_T0_SIZE, last
    assert int(w["maxPhyOffset"]) == last_at + SOME_T0_SIZE, w["maxPhyOffset"]
    k = struct.unpack(">q", first[20:28])[0]   # the first cut unit's queue offset
    assert struct.unpack(">q", last[20:28])[0] == k + 1 and k > 0
    state = w["queuesAfterDispatch"]["T0/0"]
    assert int(state["maxOffset"]) == (k + 2) * 20 and int(state["maxPhysicOffset"]) == last_at + SOME_T0_SIZE, state
    units = _units(src, "T0/0", state["files"], (k + 2) * 20)
    assert [units[p][:2] for p in (k * 20, (k + 1) * 20)] == [(reput, size), (last_at, SOME_T0_SIZE)], units
    assert sum(units[(k - 1) * 20][:2]) < reput + 1, units   # the last unit below processOffset
    _restart_as_the_broker(src, name, line, tmp_path)
    code, report = _verify(bh.copy_store(src / "before", tmp_path / "verify"), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    held = _units_below_write(w, src, (reput,))   # the broker's units but fillPreBlank ones and the parsed one
    assert p["units_lost"] == _queued(r["scenario"]) - held > 0, (held, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_puts_a_cut_unit_back_elsewhere_in_a_file_left(line, tmp_path):
    """The -to-entry-some store with the parsed T0/0 message's queue offset 1, below the write position the cut
    leaves (K * 20, in a file the cut left): putMessagePositionInfo drops it ("build consume queue repeatedly"); the
    reput goes on at the last entry and dispatches the last T0/0 record (queue offset K + 1) again: past the max, its
    queue offset not below the write position, so appended at K * 20, not where it was; the bytes past it stay as
    the walk left them (the last cut unit at (K + 1) * 20); the first cut unit, inside the parsed message, is not
    dispatched again (lost).  --as-restart writes the broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_again_scenarios import (
        SOME_MOVED_QUEUE_OFFSET,
        SOME_T0_SIZE,
        embedded_to_entry_some_messages,
    )
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-some-moved"
    r, w, src = _written(name)
    reput, head, size = embedded_to_entry_some_messages(SOME_MOVED_QUEUE_OFFSET)
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    assert last_data_bytes(src, reput, len(head)) == head, "the T0/0 message at processOffset - 1"
    first = last_data_bytes(src, reput + size - SOME_T0_SIZE, SOME_T0_SIZE)
    last_at = reput + size + 48   # the last T0/0 record, after its entry's header
    last = last_data_bytes(src, last_at, SOME_T0_SIZE)
    assert struct.unpack(">i", last[:4])[0] == SOME_T0_SIZE, last
    k = struct.unpack(">q", first[20:28])[0]   # the first cut unit's queue offset
    assert struct.unpack(">q", last[20:28])[0] == k + 1 and k > SOME_MOVED_QUEUE_OFFSET
    state = w["queuesAfterDispatch"]["T0/0"]
    assert int(state["maxOffset"]) == (k + 1) * 20 and int(state["maxPhysicOffset"]) == last_at + SOME_T0_SIZE, state
    units = _units(src, "T0/0", state["files"], (k + 2) * 20)
    assert [units[p][:2] for p in (k * 20, (k + 1) * 20)] == [(last_at, SOME_T0_SIZE)] * 2, units
    assert sum(units[(k - 1) * 20][:2]) < reput + 1, units   # the last unit below processOffset
    _restart_as_the_broker(src, name, line, tmp_path)
    code, report = _verify(bh.copy_store(src / "before", tmp_path / "verify"), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    held = _units_below_write(w, src)   # the broker's units but fillPreBlank ones (the parsed one dropped)
    assert p["units_lost"] == _queued(r["scenario"]) - held > 0, (held, p["units_lost"], p["notes"])

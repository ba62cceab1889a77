"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside an
entry, parses a message for an ordinary queue the walk wrote and goes on to its records past the walk's end in a
layout the old difference model (:mod:`store_format.dledger_inside_past`) refused, that queue's replay
(:mod:`store_format.dledger_inside_replay`) alone deciding what the broker writes
(:mod:`broker_dledger_inside_gate_scenarios`).  Written by the published RocketMQ store through the JVM harness in
``tests/broker/``: what the broker's restart wrote, ``rebuild --as-restart`` on the store as that restart found it
(byte for byte) and ``verify``'s units lost, counted from the broker's files.  The stores are written with the
others of :mod:`broker_dledger_runs` (one pytest session)."""
from __future__ import annotations

import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_runs import (
    LINES,
    _restart_as_the_broker,
    _verify_loses_as_the_broker,
    _written,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()

# the T0 messages after B9's: 300-byte records, each behind a 48-byte DLedger header
_TAIL, _ENTRY_HEADER = 300, 48


def _t0_units(w: dict, src: Path) -> tuple[list[str], dict[str, list[tuple[int, int, int]]]]:
    """The broker's T0/0 consume queue after the restart: its files (names) and each file's units."""
    folder = src / "expected" / "consumequeue" / "T0" / "0"
    units = {}
    for f in sorted(p.name for p in folder.iterdir()):
        b = (folder / f).read_bytes()
        units[f] = [struct.unpack(">qiq", b[i:i + 20]) for i in range(0, len(b), 20)]
    return w["queuesAfterDispatch"]["T0/0"]["files"], units


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_broker_creates_for_a_later_record_the_file_the_rebuild_creates(line, tmp_path):
    """-to-entry-past-cut-two-over-wide: -past-cut-two-over (two T0/0 units cut, queue offsets 24, 25 at 480, 500; one
    parsed T0/0 message, queue offset 1000, ending where the second cut record ends, so the reput goes on at the
    damaged message's entry without dispatching the cut units again) with consume queue files of 13 units. The
    broker puts the parsed unit at 480, the damaged message's (queue offset 26) at 500, file 260's last place, and
    creates file 520 for the last message's (queue offset 27); the rebuild's own dispatch appends those two after
    every walk unit, creating file 520 for the damaged message's unit and putting the last one's at 540, past that
    file's start. --as-restart writes the broker's files byte for byte (file 520 holding the last message's unit
    alone), and verify's units lost are the units the broker's queues lack (both cut units among them)."""
    from broker_dledger_inside_past_far_scenarios import PAST_WIDE_CQ_SIZE
    from broker_dledger_inside_past_more_scenarios import PAST_OVER_CUT_END
    from broker_dledger_inside_scenarios import EMBED_PROCESS_OFFSET
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut-two-over-wide"
    r, w, src = _written(name)
    assert int(w["truncateDirtyLogicFilesAt"]) == EMBED_PROCESS_OFFSET + 2 * _TAIL, w["truncateDirtyLogicFilesAt"]
    reput, cut_end = EMBED_PROCESS_OFFSET + 2 * _TAIL - 1, PAST_OVER_CUT_END + _ENTRY_HEADER + _TAIL
    end = int(w["maxPhyOffset"])
    damaged, last = end - _TAIL - _ENTRY_HEADER - _TAIL, end - _TAIL
    assert int(w["damagedRecord"]) == damaged == cut_end + _ENTRY_HEADER, w["damagedRecord"]
    names, units = _t0_units(w, src)
    assert names[-2:] == [f"{260:020d}", f"{520:020d}"], names
    assert len(units[f"{260:020d}"]) == PAST_WIDE_CQ_SIZE // 20, units
    assert units[f"{260:020d}"][-2:] == [(reput, cut_end - reput, 0), (damaged, _TAIL, 0)], units
    assert units[f"{520:020d}"] == [(last, _TAIL, 0)] + [(0, 0, 0)] * (PAST_WIDE_CQ_SIZE // 20 - 1), units
    assert all(u[0] not in (PAST_OVER_CUT_END - _TAIL, cut_end - _TAIL) for f in units.values() for u in f), units
    assert int(w["queuesAfterDispatch"]["T0/0"]["maxOffset"]) == 540, w["queuesAfterDispatch"]["T0/0"]
    _restart_as_the_broker(src, name, line, tmp_path)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_rebuild_drops_then_shifts_records_past_the_walk(line, tmp_path):
    """-to-entry-past-cut-two-beyond: two T0/0 units cut (queue offsets 24, 25 at 480, 500), the damaged message for
    T0/1, two T0/0 messages after it (queue offsets 26, 27); where the reput is set a T0/0 message (queue offset 1000)
    ends where the damaged record ends, past the walk's end, so the reput goes on at the next entry, dispatching
    neither cut unit again nor the damaged message. The broker puts the parsed unit at 480 and appends the next two
    at 500 and 520, zeros after; the rebuild's own dispatch appends the parsed unit after every walk unit (520),
    drops the first of those two (queue offset 26, below its write position 540) and appends the second at 540.
    --as-restart writes the broker's files byte for byte, and verify's units lost are the units the broker's queues
    lack (both cut units among them)."""
    from broker_dledger_inside_gate_scenarios import TWO_BEYOND_END
    from broker_dledger_inside_past_more_scenarios import PAST_OVER_CUT_END
    from broker_dledger_inside_scenarios import EMBED_PROCESS_OFFSET
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut-two-beyond"
    r, w, src = _written(name)
    assert int(w["truncateDirtyLogicFilesAt"]) == EMBED_PROCESS_OFFSET + 2 * _TAIL, w["truncateDirtyLogicFilesAt"]
    reput, cut_end = EMBED_PROCESS_OFFSET + 2 * _TAIL - 1, PAST_OVER_CUT_END + _ENTRY_HEADER + _TAIL
    end = int(w["maxPhyOffset"])
    first, second = end - 2 * _TAIL - _ENTRY_HEADER, end - _TAIL
    assert int(w["damagedRecord"]) == cut_end + _ENTRY_HEADER == TWO_BEYOND_END - _TAIL, w["damagedRecord"]
    assert first - _ENTRY_HEADER == TWO_BEYOND_END, (first, TWO_BEYOND_END)
    _names, units = _t0_units(w, src)
    assert units[f"{440:020d}"][2:6] == [(reput, TWO_BEYOND_END - reput, 0), (first, _TAIL, 0), (second, _TAIL, 0),
                                         (0, 0, 0)], units
    assert all(u[0] not in (PAST_OVER_CUT_END - _TAIL, cut_end - _TAIL) for f in units.values() for u in f), units
    assert int(w["queuesAfterDispatch"]["T0/0"]["maxOffset"]) == 540, w["queuesAfterDispatch"]["T0/0"]
    _restart_as_the_broker(src, name, line, tmp_path)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))

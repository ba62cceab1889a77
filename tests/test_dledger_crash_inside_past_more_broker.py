"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose walk ended at a damaged
message and whose start's reput, set inside an entry, parses a well-formed message for a queue the walk wrote, then
goes on and reaches records of that queue past the walk's end at a write position that is a consume queue file's
start (the -to-entry-past stores with files of 5 units: ``-file``), written by the published RocketMQ store through
the JVM harness in ``tests/broker/``: what the broker's restart wrote, ``rebuild --as-restart`` on the store as that
restart found it (byte for byte, or its one-line refusal) and ``verify``'s units lost, counted from the broker's
files.  The stores are written with the others of :mod:`broker_dledger_runs` (one pytest session)."""
from __future__ import annotations

import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_files import ext_units
from broker_dledger_runs import (
    LINES,
    _restart_as_the_broker,
    _verify_loses_as_the_broker,
    _written,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()

# the T0/0 messages after B9's in the -to-entry-past stores: 300-byte records, each behind a 48-byte DLedger header
_TAIL, _ENTRY_HEADER = 300, 48


def _t0_units(w: dict, src: Path) -> tuple[list[str], dict[str, list[tuple[int, int, int]]]]:
    """The broker's T0/0 consume queue after the restart: its files (names) and each file's units, all of them."""
    state = w["queuesAfterDispatch"]["T0/0"]
    folder = src / "expected" / "consumequeue" / "T0" / "0"
    units = {}
    for f in sorted(p.name for p in folder.iterdir()):
        b = (folder / f).read_bytes()
        units[f] = [struct.unpack(">qiq", b[i:i + 20]) for i in range(0, len(b), 20)]
    return state["files"], units


@pytest.mark.parametrize("more", [0, 1], ids=["one", "two"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_reput_reaches_records_past_the_walk_at_a_file_start(line, more, tmp_path):
    """The -to-entry-past store (-two: one more T0/0 message after the damaged one) with consume queue files of 5
    units (-file): the parsed T0/0 unit fills the last place of T0/0's file 400 (queue byte 480), so the reput,
    going on at B9's entry, dispatches the damaged T0/0 message with T0/0's write position at a file's start (500):
    getLastMappedFile creates file 500 before the queue offset check drops the unit (queue offset 24, below the
    write position), and it stays, zeros (-file); the next message's unit (-two: queue offset 25) is appended there.
    --as-restart writes the broker's files byte for byte (the rebuild's dispatch of those records creates the same
    file), and verify's units lost are the units the broker's queues lack (the damaged message's among them)."""
    from broker_dledger_inside_past_more_scenarios import PAST_FILE_CQ_SIZE
    from broker_dledger_inside_scenarios import (
        EMBED_HOST_AT,
        EMBED_HOST_BODY,
        EMBED_PROCESS_OFFSET,
        TO_ENTRY_HOST_TAIL,
    )
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past" + ("-two" if more else "") + "-file"
    r, w, src = _written(name)
    assert int(w["truncateDirtyLogicFilesAt"]) == EMBED_PROCESS_OFFSET, w["truncateDirtyLogicFilesAt"]
    reput, host_end = EMBED_PROCESS_OFFSET - 1, EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    end = int(w["maxPhyOffset"])
    damaged = end - _TAIL - more * (_TAIL + _ENTRY_HEADER)   # the damaged T0/0 message
    assert int(w["damagedRecord"]) == damaged, w["damagedRecord"]
    names, units = _t0_units(w, src)
    new = f"{500:020d}"
    assert names[-1] == new and int(w["queuesAfterDispatch"]["T0/0"]["maxOffset"]) == 500 + 20 * more, names
    assert units[f"{400:020d}"][-1] == (reput, host_end - reput, 0), units   # the parsed unit, file 400's last place
    kept = [(end - _TAIL, _TAIL, 0)] if more else []
    assert units[new] == kept + [(0, 0, 0)] * (PAST_FILE_CQ_SIZE // 20 - more), units[new]   # created, zeros else
    assert all(u[0] != damaged for f in units.values() for u in f), units
    _restart_as_the_broker(src, name, line, tmp_path)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_reput_puts_cut_units_then_records_past_the_walk_at_a_file_start(line, tmp_path):
    """The -to-entry-past-cut store with consume queue files of 5 units (-file): the parsed T0/0 unit at the cut
    unit's place (480) fills file 400; the reput, going on at B9's entry, dispatches the cut T0/0 unit again with the
    write position at file 500's start: getLastMappedFile creates it, the unit dropped (its queue offset below);
    the damaged message's unit and the next are appended there (500, 520).  --as-restart writes the broker's files
    byte for byte (the file it writes anew for the cut unit keeps the rebuild's units of those records), and
    verify's units lost are the units the broker's queues lack (the cut one's among them)."""
    from broker_dledger_inside_scenarios import EMBED_HOST_AT, EMBED_HOST_BODY, EMBED_PROCESS_OFFSET, TO_ENTRY_HOST_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut-file"
    r, w, src = _written(name)
    assert int(w["truncateDirtyLogicFilesAt"]) == EMBED_PROCESS_OFFSET + _TAIL, w["truncateDirtyLogicFilesAt"]
    reput, host_end = EMBED_PROCESS_OFFSET + _TAIL - 1, EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    end = int(w["maxPhyOffset"])
    later = [end - _TAIL - _ENTRY_HEADER - _TAIL, end - _TAIL]   # the damaged T0/0 message and the next
    cut = later[0] - _ENTRY_HEADER - _TAIL                        # the cut T0/0 message
    names, units = _t0_units(w, src)
    assert names[-1] == f"{500:020d}" and int(w["queuesAfterDispatch"]["T0/0"]["maxOffset"]) == 540, names
    assert units[f"{400:020d}"][-1] == (reput, host_end - reput, 0), units
    assert units[f"{500:020d}"] == [(later[0], _TAIL, 0), (later[1], _TAIL, 0)] + [(0, 0, 0)] * 3, units
    assert all(u[0] != cut for f in units.values() for u in f), units
    _restart_as_the_broker(src, name, line, tmp_path)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))

@pytest.mark.parametrize("ext", [False, True], ids=["plain", "ext"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_reput_appends_a_record_past_the_walk_in_the_parsed_units_new_file(
        line, ext, tmp_path):
    """The -to-entry-past-two store with consume queue files of 6 units (-opened; -ext: enableConsumeQueueExt, ext
    files of 10 units): T0/0's write position after the walk, 480, is a file's start, so getLastMappedFile creates
    file 480 for the parsed T0/0 unit; the reput, going on at B9's entry, drops the damaged message's unit (queue
    offset 24, below the write position) and appends the next one's (queue offset 25) at 500, in that new file; with
    ext files each record gets its ext unit after the parsed unit's, the kept unit holding its address.
    --as-restart writes the broker's files byte for byte (the file it writes anew for the parsed unit keeps the
    rebuild's unit of that record), and verify's units lost are the units the broker's queues lack."""
    from broker_dledger_inside_past_more_scenarios import PAST_OPENED_CQ_SIZE
    from broker_dledger_inside_scenarios import (
        EMBED_HOST_AT,
        EMBED_HOST_BODY,
        EMBED_PROCESS_OFFSET,
        TO_ENTRY_HOST_TAIL,
    )
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-two-opened" + ("-ext" if ext else "")
    r, w, src = _written(name)
    assert int(w["truncateDirtyLogicFilesAt"]) == EMBED_PROCESS_OFFSET, w["truncateDirtyLogicFilesAt"]
    reput, host_end = EMBED_PROCESS_OFFSET - 1, EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    end = int(w["maxPhyOffset"])
    damaged = end - 2 * _TAIL - _ENTRY_HEADER
    assert int(w["damagedRecord"]) == damaged, w["damagedRecord"]
    names, units = _t0_units(w, src)
    new = f"{480:020d}"
    assert names[-1] == new and int(w["queuesAfterDispatch"]["T0/0"]["maxOffset"]) == 520, names
    parsed, kept, *rest = units[new]
    assert parsed[:2] == (reput, host_end - reput) and kept[:2] == (end - _TAIL, _TAIL), units[new]
    assert rest == [(0, 0, 0)] * (PAST_OPENED_CQ_SIZE // 20 - 2), units[new]
    assert all(u[0] != damaged for f in units.values() for u in f), units
    if ext:   # the parsed unit's ext unit, then the damaged one's, then the kept one's
        address = parsed[2] + 2**63
        cq_ext = ext_units((src / "expected" / "consumequeue_ext" / "T0" / "0" / f"{0:020d}").read_bytes())
        assert address % 20 == 0 and len(cq_ext) == address // 20 + 3, (address, cq_ext)
        assert kept[2] == parsed[2] + 40, units[new]
    else:
        assert parsed[2] == kept[2] == 0, units[new]
    _restart_as_the_broker(src, name, line, tmp_path, ext=ext)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))



@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_reput_drops_a_record_past_the_walk_after_cut_units(line, tmp_path):
    """The -to-entry-past-cut store with two T0/0 messages where the reput is set (-parsed-two: queue offsets 1000
    and 1001, the second ending at B9's entry): their units take T0/0's write position (480, the cut unit's place)
    and the next (500); the reput, going on at B9's entry, drops the cut T0/0 unit and then the damaged message's
    (queue offsets 24 and 25, below the write position) and appends the last one's (26) at 520.  --as-restart writes
    the broker's files byte for byte (the rebuild's unit of the damaged message under the second parsed unit), and
    verify's units lost are the units the broker's queues lack (the cut and the damaged ones among them)."""
    from broker_dledger_inside_scenarios import EMBED_HOST_AT, EMBED_HOST_BODY, EMBED_PROCESS_OFFSET, TO_ENTRY_HOST_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut-parsed-two"
    r, w, src = _written(name)
    assert int(w["truncateDirtyLogicFilesAt"]) == EMBED_PROCESS_OFFSET + _TAIL, w["truncateDirtyLogicFilesAt"]
    reput, host_end = EMBED_PROCESS_OFFSET + _TAIL - 1, EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    end = int(w["maxPhyOffset"])
    damaged, last = end - _TAIL - _ENTRY_HEADER - _TAIL, end - _TAIL
    cut = damaged - _ENTRY_HEADER - _TAIL                        # the cut T0/0 message
    assert int(w["damagedRecord"]) == damaged, w["damagedRecord"]
    _names, units = _t0_units(w, src)
    first, second, kept = units[f"{440:020d}"][2:5]
    assert first[0] == reput and first[0] + first[1] == second[0] and second[0] + second[1] == host_end, units
    assert kept == (last, _TAIL, 0) and int(w["queuesAfterDispatch"]["T0/0"]["maxOffset"]) == 540, units
    assert all(u[0] not in (cut, damaged) for f in units.values() for u in f), units
    _restart_as_the_broker(src, name, line, tmp_path)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (first[0], second[0]))



@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_reput_goes_on_past_cut_units_to_records_past_the_walk(line, tmp_path):
    """The -to-entry-past-cut store whose parsed T0/0 message (queue offset 1000) ends where the cut T0/0 record ends
    (-over: its body covering B9's entry and that record's head, its topic and properties that record's): the reput
    goes on at the damaged message's entry, past the cut units (B9's, T0/0's), which it does not dispatch again; the
    parsed unit goes to T0/0's write position (480, the cut unit's place), the damaged message's unit and the next
    are appended after it (500, 520: their queue offsets). --as-restart writes the broker's files byte for byte, and
    verify's units lost are the units the broker's queues lack (both cut units among them)."""
    from broker_dledger_inside_past_more_scenarios import PAST_OVER_CUT_END
    from broker_dledger_inside_scenarios import EMBED_PROCESS_OFFSET
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut-over"
    r, w, src = _written(name)
    assert int(w["truncateDirtyLogicFilesAt"]) == EMBED_PROCESS_OFFSET + _TAIL, w["truncateDirtyLogicFilesAt"]
    reput = EMBED_PROCESS_OFFSET + _TAIL - 1
    end = int(w["maxPhyOffset"])
    damaged, last = end - _TAIL - _ENTRY_HEADER - _TAIL, end - _TAIL
    assert int(w["damagedRecord"]) == damaged == PAST_OVER_CUT_END + _ENTRY_HEADER, w["damagedRecord"]
    _names, units = _t0_units(w, src)
    assert units[f"{440:020d}"][2:6] == [(reput, PAST_OVER_CUT_END - reput, 0), (damaged, _TAIL, 0), (last, _TAIL, 0),
                                         (0, 0, 0)], units
    assert all(u[0] != PAST_OVER_CUT_END - _TAIL for f in units.values() for u in f), units   # the cut T0/0 unit
    assert w["queuesAfterDispatch"]["B9/0"]["files"] == [], w["queuesAfterDispatch"]["B9/0"]   # B9's not put back
    _restart_as_the_broker(src, name, line, tmp_path)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))



@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_reput_puts_records_past_the_walk_before_where_the_rebuild_does(line, tmp_path):
    """-to-entry-past-cut-two-over: two T0/0 units cut (queue offsets 24, 25 at 480, 500), one parsed T0/0 message
    (queue offset 1000) ending where the second cut record ends, so the reput goes on at the damaged message's entry
    without dispatching the cut units again. The broker puts the parsed unit at 480, then appends the damaged
    message's unit (queue offset 26: "logic queue order maybe wrong") at 500, over the second cut unit, and the next
    at 520, zeros after; the rebuild's own dispatch appends those two after every walk unit (520, 540). --as-restart
    writes the broker's files byte for byte (those two moved to 500 and 520), and verify's units lost are the units
    the broker's queues lack (both cut units among them)."""
    from broker_dledger_inside_past_more_scenarios import PAST_OVER_CUT_END
    from broker_dledger_inside_scenarios import EMBED_PROCESS_OFFSET
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut-two-over"
    r, w, src = _written(name)
    assert int(w["truncateDirtyLogicFilesAt"]) == EMBED_PROCESS_OFFSET + 2 * _TAIL, w["truncateDirtyLogicFilesAt"]
    reput, cut_end = EMBED_PROCESS_OFFSET + 2 * _TAIL - 1, PAST_OVER_CUT_END + _ENTRY_HEADER + _TAIL
    end = int(w["maxPhyOffset"])
    damaged, last = end - _TAIL - _ENTRY_HEADER - _TAIL, end - _TAIL
    assert int(w["damagedRecord"]) == damaged == cut_end + _ENTRY_HEADER, w["damagedRecord"]
    _names, units = _t0_units(w, src)
    assert units[f"{440:020d}"][2:6] == [(reput, cut_end - reput, 0), (damaged, _TAIL, 0), (last, _TAIL, 0),
                                         (0, 0, 0)], units
    _restart_as_the_broker(src, name, line, tmp_path)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))

"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose walk ended at a damaged
message and whose start's reput, set inside an entry, parses a well-formed message for a queue the walk wrote that
reaches past the walk's end, then goes on and reaches records of that queue past the walk's end
(:mod:`broker_dledger_inside_past_far_scenarios`), written by the published RocketMQ store through the JVM harness in
``tests/broker/``: what the broker's restart wrote, ``rebuild --as-restart`` on the store as that restart found it
(byte for byte) and ``verify``'s units lost, counted from the broker's files.  The stores are written with the
others of :mod:`broker_dledger_runs` (one pytest session)."""
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

# the T0 messages after B9's: 300-byte records, each behind a 48-byte DLedger header
_TAIL, _ENTRY_HEADER = 300, 48


def _units(w: dict, src: Path, queue: str) -> tuple[list[str], dict[str, list[tuple[int, int, int]]]]:
    """The broker's consume queue ``queue`` (``T0/0``) after the restart: its files (names) and each file's units."""
    state = w["queuesAfterDispatch"][queue]
    folder = src / "expected" / "consumequeue" / queue
    units = {}
    for f in sorted(p.name for p in folder.iterdir()):
        b = (folder / f).read_bytes()
        units[f] = [struct.unpack(">qiq", b[i:i + 20]) for i in range(0, len(b), 20)]
    return state["files"], units


@pytest.mark.parametrize("files", ["", "-file", "-wide", "-ext"], ids=["plain", "file", "wide", "ext"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_parsed_unit_ends_past_the_walk_before_a_record_past_it(line, files, tmp_path):
    """-to-entry-past-cut-beyond: one T0/0 unit cut (queue offset 24, at 480), the damaged message for T0/1, the last
    one for T0/0 (queue offset 25); where the reput is set a T0/0 message (queue offset 1000) ends where the damaged
    record ends, past T0/0's last walk unit, so the reput goes on at the last message's entry, dispatching neither
    the cut units again nor the damaged message. The broker puts the parsed unit at 480 (the cut unit's place) and
    appends the last message's at 500 (its queue offset 25, not below the write position), zeros after; the
    rebuild's own dispatch appends the parsed unit after every walk unit (500) and drops the last message's (queue
    offset 25, below its write position 520). -file (consume queue files of 5 units): the parsed unit fills file
    400, so getLastMappedFile creates file 500 for the last message's unit (the cut deleted the one there), where the
    rebuild's dispatch created file 500 for its parsed unit; -wide (files of 13 units): the rebuild's dispatch
    creates file 520 for the last message (its write position after its parsed unit, which fills file 260), the
    broker none; -ext (ext files of 204 bytes, 10 units each): the parsed unit holds the address of the ext unit put
    after the walk's (the cut one's too), the last message's unit that of the next one, the broker's and the
    rebuild's dispatch alike putting both. --as-restart writes the broker's files byte for byte (the last message's
    unit written at 500 over the rebuild's parsed one; -file: file 500 written anew; -wide: file 520 removed; -ext:
    the ext files too), and
    verify's units lost are the units the broker's queues lack (the cut T0/0 unit among them)."""
    from broker_dledger_inside_past_far_scenarios import PAST_BEYOND_END, PAST_WIDE_CQ_SIZE
    from broker_dledger_inside_past_more_scenarios import PAST_FILE_CQ_SIZE, PAST_OVER_CUT_END
    from broker_dledger_inside_scenarios import EMBED_PROCESS_OFFSET
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut-beyond{files}"
    r, w, src = _written(name)
    assert int(w["truncateDirtyLogicFilesAt"]) == EMBED_PROCESS_OFFSET + _TAIL, w["truncateDirtyLogicFilesAt"]
    reput = EMBED_PROCESS_OFFSET + _TAIL - 1
    end = int(w["maxPhyOffset"])
    damaged, last = end - _TAIL - _ENTRY_HEADER - _TAIL, end - _TAIL
    assert int(w["damagedRecord"]) == damaged == PAST_OVER_CUT_END + _ENTRY_HEADER, w["damagedRecord"]
    assert last - _ENTRY_HEADER == PAST_BEYOND_END, (last, PAST_BEYOND_END)
    names, units = _units(w, src, "T0/0")
    parsed = (reput, PAST_BEYOND_END - reput, 0)
    if files == "-ext":   # the units hold ext addresses: ordinals k and k + 1 (10 units a 204-byte file)
        folder = src / "expected" / "consumequeue_ext" / "T0" / "0"
        cq_ext = [u for f in sorted(folder.iterdir()) for u in ext_units(f.read_bytes()) if len(u) == 20]
        k = len(cq_ext) - 2   # the parsed message's ext unit, then the last one's, after the walk's
        address = [k // 10 * 204 + k % 10 * 20 - 2**63, (k + 1) // 10 * 204 + (k + 1) % 10 * 20 - 2**63]
        assert units[f"{440:020d}"][2:5] == [(*parsed[:2], address[0]), (last, _TAIL, address[1]), (0, 0, 0)], \
            (units, len(cq_ext))
        assert k == 5 + 1, k   # the walk's T0/0 ext units (5, and the cut one's): the parsed unit at ordinal 6
        parsed = (*parsed[:2], address[0])
    if files == "-wide":
        assert names[-1] == f"{260:020d}", names   # no file 520
        assert units[f"{260:020d}"][-2:] == [parsed, (last, _TAIL, 0)] and \
            len(units[f"{260:020d}"]) == PAST_WIDE_CQ_SIZE // 20, units
    elif files == "-file":
        assert names[-2:] == [f"{400:020d}", f"{500:020d}"], names
        assert units[f"{400:020d}"][-1] == parsed, units
        assert units[f"{500:020d}"] == [(last, _TAIL, 0)] + [(0, 0, 0)] * (PAST_FILE_CQ_SIZE // 20 - 1), units
    elif not files:
        assert units[f"{440:020d}"][2:5] == [parsed, (last, _TAIL, 0), (0, 0, 0)], units
    assert all(u[0] != PAST_OVER_CUT_END - _TAIL for f in units.values() for u in f), units   # the cut T0/0 unit
    assert int(w["queuesAfterDispatch"]["T0/0"]["maxOffset"]) == 520, w["queuesAfterDispatch"]["T0/0"]
    _restart_as_the_broker(src, name, line, tmp_path, ext=files == "-ext")
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_rebuild_creates_the_file_the_broker_creates_later(line, tmp_path):
    """-to-entry-past-cut-beyond-wide-two: -wide (consume queue files of 13 units) with one T0/0 message more after
    the last one (queue offset 26). The rebuild's dispatch creates file 520 for the last message, whose unit it drops
    (queue offset 25 below its write position 520), then appends the next one's at 520; the broker appends the last
    message's at 500 (file 260's last place) and the next one's at 520, creating file 520 then. --as-restart keeps
    file 520 (the same unit in both) and writes the broker's files byte for byte; verify's units lost too."""
    from broker_dledger_inside_scenarios import EMBED_PROCESS_OFFSET
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut-beyond-wide-two"
    r, w, src = _written(name)
    reput = EMBED_PROCESS_OFFSET + _TAIL - 1
    end = int(w["maxPhyOffset"])
    last, next_ = end - 2 * _TAIL - _ENTRY_HEADER, end - _TAIL
    names, units = _units(w, src, "T0/0")
    assert names[-2:] == [f"{260:020d}", f"{520:020d}"], names
    assert units[f"{260:020d}"][-1] == (last, _TAIL, 0), units
    assert units[f"{520:020d}"] == [(next_, _TAIL, 0)] + [(0, 0, 0)] * 12, units
    assert int(w["queuesAfterDispatch"]["T0/0"]["maxOffset"]) == 540, w["queuesAfterDispatch"]["T0/0"]
    _restart_as_the_broker(src, name, line, tmp_path)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))

"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose walk ended at a damaged
message and whose start's reput, set inside an entry, parses a well-formed message for a queue the walk wrote, then
goes on and reaches records of that queue past the walk's end, written by the published RocketMQ store through the
JVM harness in ``tests/broker/``: what the broker's restart wrote, ``rebuild --as-restart`` on the store as that
restart found it (byte for byte) and ``verify``'s units lost, counted from the broker's files.  The stores are written
with the others of :mod:`broker_dledger_runs` (one pytest session)."""
from __future__ import annotations

import struct

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


def _batch_offsets(data: bytes) -> list[int]:
    """A batch consume queue file's units' commitlog offsets up to its first zero unit."""
    out = []
    for i in range(0, len(data) - 45, 46):
        if not any(data[i:i + 46]):
            break
        out.append(struct.unpack(">q", data[i:i + 8])[0])
    return out


@pytest.mark.parametrize("ext", [False, True], ids=["plain", "ext"])
@pytest.mark.parametrize("more", [0, 1], ids=["one", "two"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_reput_parses_a_message_then_reaches_records_past_the_walk_of_its_queue(
        line, more, ext, tmp_path):
    """The -to-entry store with its last message (T0/0, after B9's) damaged, so that the walk ends there, and at
    processOffset - 1 a well-formed T0/0 message (queue offset 1000) ending at B9's entry (-to-entry-past; -two: one
    more T0/0 message after the damaged one; -ext: enableConsumeQueueExt, ext files of 10 units). The broker
    appends the parsed unit at T0/0's write position, goes on at B9's entry, puts B9's unit back at 0 and dispatches
    the records past the walk's end (its check reads no CRC) by ConsumeQueue.putMessagePositionInfo from the state
    the parsed unit left: the damaged message's unit, whose queue offset the parsed unit took, is dropped; the next
    one's (-two), its queue offset the write position, is appended there; with ext files each gets its ext unit
    first, after the parsed unit's, the kept unit holding its address. --as-restart writes the broker's files byte
    for byte, and verify's units lost are the units the broker's queues lack (the damaged message's among them)."""
    from broker_dledger_inside_scenarios import EMBED_HOST_AT, EMBED_HOST_BODY, EMBED_PROCESS_OFFSET, TO_ENTRY_HOST_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past" + ("-two" if more else "") + \
        ("-ext" if ext else "")
    r, w, src = _written(name)
    assert int(w["truncateDirtyLogicFilesAt"]) == EMBED_PROCESS_OFFSET, w["truncateDirtyLogicFilesAt"]
    reput, host_end = EMBED_PROCESS_OFFSET - 1, EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    end = int(w["maxPhyOffset"])
    damaged = end - _TAIL - more * (_TAIL + _ENTRY_HEADER)   # the damaged T0/0 message
    kept = [end - _TAIL] if more else []                      # the T0/0 message after it
    state = w["queuesAfterDispatch"]["T0/0"]
    units = []
    for f in state["files"]:
        b = (src / "expected" / "consumequeue" / "T0" / "0" / f).read_bytes()[:max(0, int(state["maxOffset"]) - int(f))]
        units += [struct.unpack(">qiq", b[i:i + 20]) for i in range(0, len(b), 20)]
    parsed = units[-1 - more]
    assert parsed[:2] == (reput, host_end - reput), units[-3:]
    assert [u[:2] for u in units[len(units) - more:]] == [(k, _TAIL) for k in kept], units[-3:]
    assert all(u[0] != damaged for u in units), units[-3:]
    b9 = (src / "expected" / "batchconsumequeue" / "B9" / "0" / f"{0:020d}").read_bytes()
    assert _batch_offsets(b9)[0] == host_end + _ENTRY_HEADER, _batch_offsets(b9)   # B9's record put back
    if ext:
        address = parsed[2] + 2**63   # the parsed unit's ext unit, then the damaged one's, then the kept one's
        cq_ext = ext_units((src / "expected" / "consumequeue_ext" / "T0" / "0" / f"{0:020d}").read_bytes())
        assert address % 20 == 0 and len(cq_ext) == address // 20 + 2 + more, (address, cq_ext)
        assert not more or units[-1][2] == parsed[2] + 40, units[-2:]
    _restart_as_the_broker(src, name, line, tmp_path, ext=ext)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))


@pytest.mark.parametrize("ext", [False, True], ids=["plain", "ext"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_reput_parses_a_message_then_puts_cut_units_and_records_past_the_walk_of_its_queue(
        line, ext, tmp_path):
    """The -to-entry store (its last T0/0 message cut, the parsed T0/0 message at processOffset - 1, queue offset
    1000, ending at B9's entry) with two T0/0 messages after it, the first damaged, so that the walk ends there
    (-to-entry-past-cut; -ext: enableConsumeQueueExt). The broker appends the parsed unit at T0/0's write position
    (over the cut unit's place), goes on at B9's entry, puts B9's unit back, drops the cut T0/0 unit (its queue offset
    below the write position), then appends the damaged message's unit and the next one's (their queue offsets the
    write positions); with ext files each of the three records gets its ext unit after the parsed unit's, the two
    appended units holding theirs. --as-restart writes the broker's files byte for byte, and verify's units lost are
    the units the broker's queues lack (the cut one's among them)."""
    from broker_dledger_inside_scenarios import EMBED_HOST_AT, EMBED_HOST_BODY, EMBED_PROCESS_OFFSET, TO_ENTRY_HOST_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut" + ("-ext" if ext else "")
    r, w, src = _written(name)
    assert int(w["truncateDirtyLogicFilesAt"]) == EMBED_PROCESS_OFFSET + _TAIL, w["truncateDirtyLogicFilesAt"]
    reput, host_end = EMBED_PROCESS_OFFSET + _TAIL - 1, EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    end = int(w["maxPhyOffset"])
    later = [end - _TAIL - _ENTRY_HEADER - _TAIL, end - _TAIL]   # the damaged T0/0 message and the next
    cut = later[0] - _ENTRY_HEADER - _TAIL                        # the cut T0/0 message
    state = w["queuesAfterDispatch"]["T0/0"]
    units = []
    for f in state["files"]:
        b = (src / "expected" / "consumequeue" / "T0" / "0" / f).read_bytes()[:max(0, int(state["maxOffset"]) - int(f))]
        units += [struct.unpack(">qiq", b[i:i + 20]) for i in range(0, len(b), 20)]
    assert [u[:2] for u in units[-3:]] == [(reput, host_end - reput), *((k, _TAIL) for k in later)], units[-4:]
    assert all(u[0] != cut for u in units), units[-4:]
    if ext:   # the parsed unit's ext unit, then the reput's for the cut record, the damaged one and the next
        address = units[-3][2] + 2**63
        cq_ext = ext_units((src / "expected" / "consumequeue_ext" / "T0" / "0" / f"{0:020d}").read_bytes())
        assert address % 20 == 0 and len(cq_ext) == address // 20 + 4, (address, cq_ext)
        assert [u[2] - units[-3][2] for u in units[-2:]] == [40, 60], units[-3:]
    _restart_as_the_broker(src, name, line, tmp_path, ext=ext)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))

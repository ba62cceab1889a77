"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose walk ended at a damaged
message and whose start's reput, set inside an entry, parses a well-formed message for a queue the cut left with no
file (``correctMinOffset``: max -1), then goes on at an entry's start, dispatches that queue's cut unit again and then
its records past the walk's end, each by ``ConsumeQueue.putMessagePositionInfo`` from the state the units before it
left (the -to-entry-emptied-past stores of :mod:`broker_dledger_inside_past_rest_scenarios`), or in a queue whose
only unit below processOffset lies in the walk's earlier data file, after only its last cut unit dispatched again
(-past-cut-two-some-earlier), written by the published
RocketMQ store through the JVM harness in ``tests/broker/``: what the broker's restart wrote, ``rebuild --as-restart``
on the store as that restart found it (byte for byte) and ``verify``'s units lost, counted from the broker's files.
The stores are written with the others of :mod:`broker_dledger_runs` (one pytest session)."""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_files import cq_unit, ext_units
from broker_dledger_runs import (
    LINES,
    _restart_as_the_broker,
    _verify_loses_as_the_broker,
    _written,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()

# the T8/0 messages after B9's: 300-byte records, each behind a 48-byte DLedger header
_TAIL, _ENTRY_HEADER = 300, 48
# the emptied stores' queue files: 11 units (tests/broker_dledger_scenarios)
_BLANK = (0, 2**31 - 1, 0)
SOME_EARLIER = "dledger-abort-emptied-batch-embedded-to-entry-past-cut-two-some-earlier"


def some_earlier_written(line: str, suffix: str) -> tuple[dict, dict, Path, int, int, int, int, list]:
    """The -past-cut-two-some-earlier store with ``suffix`` (also used by
    :mod:`test_dledger_crash_inside_blank_broker`) as the broker wrote and restarted it: its run, report
    and folder, where the reput is set (processOffset - 1), the second cut T6/0 record's offset, the damaged one's
    and the last one's; and T6/0's units as the broker left them, after asserting what it wrote (the parsed unit at
    20, the second cut unit back at 40, the records past the walk's end at 60 and 80; the first cut unit lost)."""
    from test_dledger_crash_inside_past_rest_broker import cut_two_some_units, past_cut_written
    r, src, reput, cut_end, damaged, last = past_cut_written(f"{line}-{SOME_EARLIER}{suffix}", 2)
    w, second = r["written"], cut_end - _TAIL   # the second cut T6/0 record
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2 and int(data[1].name) <= reput, data   # the walk over both data files
    loaded = w["queuesAfterLoad"]["T6/0"]   # the cut: write position 20, max the earlier data file's unit's end
    assert int(loaded["maxOffset"]) == 20 and int(loaded["maxPhysicOffset"]) < int(data[1].name), loaded
    state = w["queuesAfterDispatch"]["T6/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 100, state
    held = (src / "expected" / "consumequeue" / "T6" / "0" / state["files"][0]).read_bytes()
    units = [cq_unit(held, k) for k in range(0, len(held), 20)]
    assert sum(units[0][:2]) == int(loaded["maxPhysicOffset"]), units   # the walk's unit of the earlier data file
    cut_two_some_units(units[1:], reput, second, damaged, last)
    assert units[5][:2] == (0, 0), units
    return r, w, src, reput, second, damaged, last, units


@pytest.mark.parametrize("variant", ["", "-zero", "-zero-ext"], ids=["thirteen", "zero", "zero-ext"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_puts_cut_units_then_records_past_the_walk_in_a_queue_left_no_file(
        line, variant, tmp_path):
    """The -to-entry-emptied store (T8/0, a topic of its own: the 5.5.1 cut leaves it no file, max -1; the parsed
    T8/0 message at processOffset - 1 ending at B9's entry) with two T8/0 messages after the cut one, the first
    damaged, so that the walk ends there (-to-entry-emptied-past).  The broker creates the parsed unit's file where
    its queue offset falls and appends it there, goes on at B9's entry, puts B9's unit back, appends the cut T8/0 unit
    (queue offset 0: no order check) after the parsed one, then dispatches the records past the walk's end (queue
    offsets 1 and 2) by the same rule: with the parsed unit at queue offset 13 (file 220, two fillPreBlank units
    before it, the cut unit at 280) both lie below the write position (300) and are dropped; with it at 0 (-zero:
    file 0, the cut unit at 20) the damaged one is dropped (20 below 40) and the next appended at 40, its own
    place; -zero-ext (enableConsumeQueueExt): each record gets its ext unit first, the walk's, then the parsed
    message's, the cut record's, the damaged one's and the next one's, the units holding their addresses.
    --as-restart writes the broker's files byte for byte, and verify's units lost are the units the broker's
    queues lack (the damaged record's among them)."""
    from broker_dledger_inside_scenarios import (
        EMBED_HOST_AT,
        EMBED_HOST_BODY,
        EMBED_OWN_QUEUE_OFFSET,
        EMBED_PROCESS_OFFSET,
        TO_ENTRY_HOST_TAIL,
    )
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-emptied-past{variant}"
    ext = variant.endswith("-ext")
    r, w, src = _written(name)
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    # processOffset that of the -to-entry-emptied store (the walk's end, the damaged record, lies past it)
    assert int(w["truncateDirtyLogicFilesAt"]) == EMBED_PROCESS_OFFSET + _TAIL, w["truncateDirtyLogicFilesAt"]
    reput, host_end = EMBED_PROCESS_OFFSET + _TAIL - 1, EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    end = int(w["maxPhyOffset"])
    damaged, last = end - _TAIL - _ENTRY_HEADER - _TAIL, end - _TAIL
    cut = damaged - _ENTRY_HEADER - _TAIL   # the cut T8/0 record, queue offset 0
    assert int(w["damagedRecord"]) == damaged, w["damagedRecord"]
    assert w["queuesAfterLoad"]["T8/0"]["files"] == [] and int(w["queuesAfterLoad"]["T8/0"]["maxPhysicOffset"]) == -1
    state = w["queuesAfterDispatch"]["T8/0"]
    at = (0 if variant else EMBED_OWN_QUEUE_OFFSET) * 20   # the parsed unit, where its queue offset falls
    (file,) = state["files"]
    assert int(file) == at - at % size, state
    held = (src / "expected" / "consumequeue" / "T8" / "0" / file).read_bytes()
    units = [cq_unit(held, k) for k in range(0, size, 20)]
    appended = [(reput, host_end - reput), (cut, _TAIL)] + ([(last, _TAIL)] if variant else [])
    assert [u[:2] for u in units] == [_BLANK[:2]] * (at % size // 20) + appended + [(0, 0)] * (
        size // 20 - at % size // 20 - len(appended)), units
    assert int(state["maxOffset"]) == at + 20 * len(appended), state
    assert int(state["maxPhysicOffset"]) == appended[-1][0] + appended[-1][1], state
    if ext:   # the walk's ext unit (the cut record's), then the parsed message's, the cut record's again, the
        # damaged one's (its unit dropped) and the last one's: the units hold the 2nd, 3rd and 5th addresses
        cq_ext = ext_units((src / "expected" / "consumequeue_ext" / "T8" / "0" / f"{0:020d}").read_bytes())
        assert len(cq_ext) == 5, cq_ext
        assert [u[2] + 2**63 for u in units[:3]] == [20, 40, 80], units[:3]
    else:
        assert all(u[2] == 0 for u in units), units
    _restart_as_the_broker(src, name, line, tmp_path, ext=ext)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_dispatches_the_last_cut_unit_then_records_past_the_walk_held_earlier(
        line, tmp_path):
    """-past-cut-two-some-earlier: the -past-cut-two-some layout over the -earlier walk (both data files walked, the
    cut still happening) for T6/0, whose only unit below processOffset (queue offset 0, message 11) lies in the
    earlier data file: the walk keeps no T6/0 unit in its last one, the cut leaves T6/0's write position at its first
    cut unit (20, queue offset 1), its max that earlier unit's end.  The parsed T6/0 message (queue offset 1000)
    ends where the first cut record ends, so the broker appends its unit at 20, goes on at the second cut record's
    entry, puts that cut unit back at 40 (queue offset 2, the write position), then appends the damaged message's
    unit and the last one's at 60 and 80 (queue offsets 3 and 4); the first cut unit stays lost (dispatched again it
    would be dropped too: its end is the parsed unit's, the max).  --as-restart writes the broker's files byte for
    byte, and verify's units lost are the units the broker's queues lack."""
    r, _w, src, reput, *_rest = some_earlier_written(line, "")
    name = f"{line}-{SOME_EARLIER}"
    _restart_as_the_broker(src, name, line, tmp_path)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_puts_a_cut_unit_back_elsewhere_in_a_file_it_creates_anew(
        line, tmp_path):
    """-to-entry-some-moved-file: the -to-entry-some-moved store (two T0/0 units cut, queue offsets K and K + 1; the
    parsed T0/0 message, queue offset 1, swallowing the first one's record) with consume queue files of 12 units, so
    that the first cut unit (K * 20) lies at a file's start: the cut deletes that file and leaves T0/0 the full one
    before it; ``getLastMappedFile`` creates the file anew for the parsed unit, which is then dropped (queue offset 1,
    below the write position), and the reput, going on at the last entry, dispatches the last cut unit again, which
    goes to that file's start (K * 20), not where it was ((K + 1) * 20, zeros now); the first cut unit stays lost.
    --as-restart writes the broker's files byte for byte, verify predicts the units lost."""
    import struct

    from broker_dledger_files import last_data_bytes
    from broker_dledger_inside_again_scenarios import (
        SOME_MOVED_QUEUE_OFFSET,
        SOME_T0_SIZE,
        embedded_to_entry_some_messages,
    )
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-some-moved-file"
    r, w, src = _written(name)
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    reput, head, n = embedded_to_entry_some_messages(SOME_MOVED_QUEUE_OFFSET)
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    assert last_data_bytes(src, reput, len(head)) == head, "the T0/0 message at processOffset - 1"
    first = last_data_bytes(src, reput + n - SOME_T0_SIZE, SOME_T0_SIZE)
    last_at = reput + n + _ENTRY_HEADER   # the last T0/0 record, after its entry's header
    last = last_data_bytes(src, last_at, SOME_T0_SIZE)
    k = struct.unpack(">q", first[20:28])[0]   # the first cut unit's queue offset
    assert struct.unpack(">q", last[20:28])[0] == k + 1 and k > SOME_MOVED_QUEUE_OFFSET
    assert k * 20 % size == 0, (k, size)   # the first cut unit at a file's start
    # before the restart: the walk's T0/0 files (written by the broker before the crash, deleted before the restart)
    state = w["queuesAfterDispatch"]["T0/0"]
    assert state["files"][-2:] == [f"{k * 20 - size:020d}", f"{k * 20:020d}"], state
    assert int(state["maxOffset"]) == (k + 1) * 20 and int(state["maxPhysicOffset"]) == last_at + SOME_T0_SIZE, state
    full = (src / "expected" / "consumequeue" / "T0" / "0" / f"{k * 20 - size:020d}").read_bytes()
    assert sum(cq_unit(full, size - 20)[:2]) < reput + 1, full.hex()   # the last unit below processOffset
    new = (src / "expected" / "consumequeue" / "T0" / "0" / f"{k * 20:020d}").read_bytes()
    assert cq_unit(new, 0) == (last_at, SOME_T0_SIZE, 0) and new[20:] == bytes(size - 20), new.hex()
    _restart_as_the_broker(src, name, line, tmp_path)
    _verify_loses_as_the_broker(r, src, line, tmp_path, ())

"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``, the queues kept: ``keepQueues``)
whose start's reput, set inside an entry, parses a well-formed message there for a queue on disk before the walk that
the walk also wrote in an earlier data file than its last, where a walk unit below processOffset ends past the max the
cut leaves its files (``-own-held-disk-appended-walked``, ``-skipped-walked``, ``-below-walked``), written by the
published RocketMQ store through the JVM harness in ``tests/broker/``: what the broker wrote, and ``verify``'s
prediction on the store as its restart found it; and one parsing a message for a batch queue on disk before the walk
that the walk wrote in an earlier data file only (``-earlier-batch-only-kept``) or whose files the cut leaves elsewhere
than the walk's units would (``-batch-held-shifted``).

The cases these grow from (the walk starting at the last data file) are in
:mod:`test_dledger_crash_inside_disk_more_broker`; the broker writes every store once a pytest session
(:mod:`broker_dledger_runs`).
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_files import first_units
from broker_dledger_runs import (
    LINES,
    _capture_cuts,
    _inside_run,
    _loses_as_the_broker,
    _units_below_write,
    _verify_with_plan,
    _written,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


@pytest.mark.parametrize("suffix", ["-appended", "-skipped", "-below"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_walk_from_an_earlier_file_appends_or_skips_a_kept_queues_unit(
        line, suffix, tmp_path, monkeypatch):
    """The -own-held-disk-appended and -disk-skipped stores with the walk starting at the first data file
    (``messageIndexSafe``): T8/0's planted file holds the unit of its queue offset 0 (first data file) alone, or with
    queue offset 2's (past processOffset) after it, and the walk dispatches queue offset 0's unit onto it too (at or
    below the loaded max: skipped), then those of queue offsets 1 (below processOffset) and 2: appended at 20 and 40
    (``-appended``, loaded max queue offset 0's end) or skipped below the loaded max (``-skipped``). The cut leaves
    write position 40, max queue offset 1's end, or 20 and queue offset 0's end (the planted file alone: 20 and queue
    offset 0's end, below where the walk's unit of queue offset 1 ends); the T8/0 message where the reput is set
    (processOffset - 1, queue offset 13) goes there. verify on the store as that restart found it, its walk's units of
    the first data file dispatched onto T8/0's files too, leaves T8/0 with the broker's write position and max, puts the
    parsed unit where the broker did and predicts the units lost (``-skipped``: queue offset 1's unit too). ``-below``:
    the planted file holds another record's unit alone, ending below queue offset 0's: the walk appends queue offset 0's
    unit at 20 (``putMessagePositionInfo`` checks no order for queue offset 0), skips queue offset 1's (its position
    below the write position) and appends queue offset 2's at 40; the cut leaves write position 40, max queue offset 0's
    end: the parsed unit goes to 40."""
    from broker_dledger_2gib import embedded_message
    from broker_dledger_inside_disk_batch_scenarios import BELOW_UNIT
    from broker_dledger_inside_disk_scenarios import EARLIER_UNIT, SHIFTED_UNITS
    from broker_dledger_inside_scenarios import EMBED_OWN_QUEUE_OFFSET

    from store_format.dledger_inside_units import InsideUnit
    from store_format.layout import CQ_UNIT_SIZE
    name = f"{line}-dledger-abort-emptied-batch-embedded-own-held-disk{suffix}-walked"
    r, w, src = _written(name)
    reput = int(w["truncateDirtyLogicFilesAt"]) - 1
    msg = embedded_message(reput, topic=b"T8", queue_offset=EMBED_OWN_QUEUE_OFFSET)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    first, log = data[0].read_bytes(), data[-1].read_bytes()
    base = int(data[-1].name)
    assert int(data[0].name) == 0 and len(data) == 2 and log[reput - base:reput - base + len(msg)] == msg
    # T8/0's records: queue offset 0 in the first data file, 1 (below processOffset) and 2 (past it) in the last
    for k, ((offset, size), (b, at)) in enumerate(zip((EARLIER_UNIT, *SHIFTED_UNITS),
                                                      ((first, 0), (log, base), (log, base)))):
        rec = b[offset - at:offset - at + size]
        assert (int.from_bytes(rec[:4], "big"), int.from_bytes(rec[20:28], "big"),
                int.from_bytes(rec[28:36], "big")) == (size, k, offset), rec[:40].hex()
        assert b"\x02T8" in rec, rec.hex()
    assert base < SHIFTED_UNITS[0][0] and sum(SHIFTED_UNITS[0]) < reput + 1 <= SHIFTED_UNITS[1][0]
    below = first[BELOW_UNIT[0]:sum(BELOW_UNIT)]   # the first data file's first record, ending below queue offset 0
    assert (int.from_bytes(below[:4], "big"), int.from_bytes(below[28:36], "big")) == (BELOW_UNIT[1], BELOW_UNIT[0])
    assert sum(BELOW_UNIT) < sum(EARLIER_UNIT)
    (held_file,) = sorted((src / "before" / "consumequeue" / "T8" / "0").iterdir())
    planted = {"-appended": [EARLIER_UNIT], "-skipped": [EARLIER_UNIT, SHIFTED_UNITS[1]],
               "-below": [BELOW_UNIT]}[suffix]
    before = held_file.read_bytes()
    assert first_units(before, len(planted)) == planted and not any(before[len(planted) * CQ_UNIT_SIZE:])
    kept = {"-appended": [EARLIER_UNIT, SHIFTED_UNITS[0]], "-skipped": [EARLIER_UNIT],
            "-below": [BELOW_UNIT, EARLIER_UNIT]}[suffix]
    assert int(w["queuesAfterLoad"]["T8/0"]["maxOffset"]) == len(kept) * CQ_UNIT_SIZE, w["queuesAfterLoad"]["T8/0"]
    assert int(w["queuesAfterLoad"]["T8/0"]["maxPhysicOffset"]) == sum(kept[-1]), w["queuesAfterLoad"]["T8/0"]
    state = w["queuesAfterDispatch"]["T8/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == (len(kept) + 1) * CQ_UNIT_SIZE, state
    held = (src / "expected" / "consumequeue" / "T8" / "0" / held_file.name).read_bytes()
    assert first_units(held, len(kept) + 1) == [*kept, (reput, len(msg))], held[:80].hex()
    assert not any(held[(len(kept) + 1) * CQ_UNIT_SIZE:]), held.hex()
    cuts = _capture_cuts(monkeypatch)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    # T8/0 as the walk's dispatch and the cut left it: the broker's max and write position after its recovery
    loaded = w["queuesAfterLoad"]["T8/0"]
    assert cuts[0][("T8", 0)] == (int(loaded["maxPhysicOffset"]), True, int(loaded["maxOffset"]), True), cuts
    assert crash.start_offset == 0, crash.start_offset   # the walk starts at the first data file
    placed = crash.cut.inside_placed
    assert (placed.units, placed.opened, placed.blank_until) == (
        (InsideUnit("T8", 0, len(kept) * CQ_UNIT_SIZE, reput, len(msg), 0),), (), ()), placed
    _loses_as_the_broker(p, r, src, (reput,))   # neither fillPreBlank nor the parsed one held


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_message_for_a_kept_batch_queue_walked_earlier_only(
        line, tmp_path, monkeypatch):
    """The -earlier-batch-only store with the queues kept (keepQueues): B7/0, on disk before the walk with its one
    unit (message 10, first data file), which the walk wrote in that earlier data file only
    (``putBatchMessagePositionInfo`` skips it: its start at the loaded max).  BatchConsumeQueue.truncateDirtyLogicFiles
    cuts nothing of it: max that unit's start, write position 46, where the walk's units leave it too; the B7/0
    message where the reput is set (processOffset - 1) starts past that max and is appended at 46.  verify on the
    store as that restart found it puts the parsed unit where the broker did and predicts the units lost."""
    from broker_dledger_inside_scenarios import BATCH_INNER, embedded_earlier_batch_message

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-batch-embedded-earlier-batch-only-kept"
    reput, msg = embedded_earlier_batch_message()
    r, w, src = _inside_run(name, reput, msg, b"x" * 8)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    base = int(data[-1].name)
    assert len(data) == 2, data
    (held_file,) = sorted((src / "before" / "batchconsumequeue" / "B7" / "0").iterdir())   # on disk before
    before = held_file.read_bytes()
    u0 = struct.unpack(">q", before[:8])[0]
    assert u0 < base and before[46:] == bytes(len(before) - 46), before[:92].hex()   # the earlier data file's unit
    loaded = w["queuesAfterLoad"]["B7/0"]
    assert loaded["files"] == [held_file.name] and int(loaded["maxOffset"]) == 46, loaded
    assert int(loaded["maxPhysicOffset"]) == u0, loaded
    state = w["queuesAfterDispatch"]["B7/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 92, state
    b7 = (src / "expected" / "batchconsumequeue" / "B7" / "0" / held_file.name).read_bytes()
    stored = struct.unpack(">q", msg[56:64])[0]
    assert b7[:46] == before[:46] and struct.unpack(">qiqqqhii", b7[46:92]) == (
        reput, len(msg), 0, stored, *BATCH_INNER[1], -1, 0), b7[:92].hex()
    assert b7[92:] == bytes(len(b7) - 92)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.start_offset == 0, crash.start_offset   # the walk starts at the first data file
    placed = crash.cut.inside_placed
    assert placed.units == (InsideUnit("B7", 0, 46, reput, len(msg), 0, True, stored, *BATCH_INNER[1]),) and \
        placed.opened == (), placed
    _loses_as_the_broker(p, r, src, (reput,))   # neither fillPreBlank nor the parsed one held


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_message_for_a_kept_batch_queue_its_files_left_elsewhere(
        line, tmp_path, monkeypatch):
    """The -batch-held store with B7/0's file planted with its unit of the last message before the host and one at
    the host record after it (below processOffset): loaded max the host record's start, write position 92; the walk
    skips its first B7/0 unit (at or below that max) and appends the last one (past processOffset) at 92, which the
    cut takes: write position 92, max the host record's start, where the walk's units alone would say 46; the B7/0
    message where the reput is set starts past that max and is appended at 92.  verify on the store as that restart
    found it takes the files as the cut left them (the walk's last unit below processOffset starting at or below
    their max: it appended none the cut keeps), puts the parsed unit where the broker did and predicts the units
    lost."""
    from broker_dledger_inside_disk_batch_scenarios import HELD_B7_HOST_UNIT, HELD_B7_UNIT
    from broker_dledger_inside_scenarios import BATCH_INNER, EMBED_HOST_AT, embedded_earlier_batch_message

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-batch-embedded-batch-held-shifted"
    reput, msg = embedded_earlier_batch_message()
    r, w, src = _inside_run(name, reput, msg, b"x" * 8)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    log, base = data[-1].read_bytes(), int(data[-1].name)
    offset, size = HELD_B7_UNIT[:2]
    rec = log[offset - base:offset - base + size]   # the B7/0 record before the host
    assert (int.from_bytes(rec[:4], "big"), int.from_bytes(rec[28:36], "big")) == (size, offset) and b"\x02B7" in rec
    assert HELD_B7_HOST_UNIT[0] == EMBED_HOST_AT < reput + 1
    (held_file,) = sorted((src / "before" / "batchconsumequeue" / "B7" / "0").iterdir())
    before = held_file.read_bytes()
    assert [struct.unpack(">qiqqqhii", before[k:k + 46]) for k in (0, 46)] == [HELD_B7_UNIT, HELD_B7_HOST_UNIT]
    assert not any(before[92:])
    loaded = w["queuesAfterLoad"]["B7/0"]
    assert loaded["files"] == [held_file.name] and int(loaded["maxOffset"]) == 92, loaded
    assert int(loaded["maxPhysicOffset"]) == EMBED_HOST_AT, loaded
    state = w["queuesAfterDispatch"]["B7/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 138, state
    b7 = (src / "expected" / "batchconsumequeue" / "B7" / "0" / held_file.name).read_bytes()
    stored = struct.unpack(">q", msg[56:64])[0]
    assert b7[:92] == before[:92] and struct.unpack(">qiqqqhii", b7[92:138]) == (
        reput, len(msg), 0, stored, *BATCH_INNER[1], -1, 0), b7[:138].hex()
    assert not any(b7[138:])
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    assert placed.units == (InsideUnit("B7", 0, 92, reput, len(msg), 0, True, stored, *BATCH_INNER[1]),) and \
        placed.opened == (), placed
    # the one unit held at the host record is B7/0's planted one, no message's own (the host's own is not held)
    assert _units_below_write(w, src, (reput,)) - _units_below_write(w, src, (reput, EMBED_HOST_AT)) == 1
    _loses_as_the_broker(p, r, src, (reput,), extra=1)   # neither fillPreBlank nor the parsed one held

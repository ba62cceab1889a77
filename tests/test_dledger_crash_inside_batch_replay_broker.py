"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``, the queues kept: ``keepQueues``)
whose start's reput, set inside an entry, parses a message for a batch queue the walk wrote in a case only the replay
of that queue (:mod:`store_format.dledger_inside_replay_batch`) with the walk's units of its earlier data files kept
(``QueueTrack.batch_walked``) models (:mod:`broker_dledger_inside_batch_replay_scenarios`):
``-earlier-batch-held-lower``, B7/0 on disk before the walk, whose unit of the walk's earlier data file the walk
appends onto its planted file (``-earlier-batch-only-held-lower``: written there only), and
``-to-entry-past-only-batch-held``, a batch queue on disk before the walk that the
walk wrote no unit of (only a record past its end), its planted file kept by the cut.
Written by the published RocketMQ store through the JVM harness in ``tests/broker/``: what the broker's restart wrote,
and ``verify``'s prediction on the store as that restart found it (its units lost, counted from the broker's files;
the planted file is no rebuild's, so ``--as-restart`` is not compared).  The stores are written with the others of
:mod:`broker_dledger_runs` (one pytest session)."""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_files import last_data_bytes
from broker_dledger_runs import LINES, _capture_cuts, _inside_run, _loses_as_the_broker, _verify_with_plan

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_walk_appended_an_earlier_files_unit_onto_a_batch_queues_files(
        line, tmp_path, monkeypatch):
    """-earlier-batch-held-lower: B7/0's planted file holds one unit (:data:`BELOW_B7_UNIT`, the first data file's
    first record, another queue's): loaded max 48, write position 46.  The walk goes over both data files: its
    ``putBatchMessagePositionInfo`` appends B7/0's unit of message 10 of the first one (starting past 48) at 46, that
    of the message before the host (below processOffset) at 92 and that of the last message (past processOffset) at
    138; the cut takes the last one: write position 138, max the start of the message before the host.  The B7/0
    message where the reput is set starts past it and is appended at 138.  The broker's file, byte for byte: the
    planted unit, the walk's two units it kept, the parsed one, zeros.  verify on the store as that restart found it
    dispatches the walk's B7/0 units of both data files onto the planted file before the cut (the earlier one no
    longer refused), replays B7/0 from there (the parsed unit where the broker put it, the same bytes) and predicts
    the units lost."""
    from broker_dledger_inside_bcq_disk_scenarios import BELOW_B7_UNIT, EARLIER_B7_UNIT
    from broker_dledger_inside_disk_batch_scenarios import HELD_B7_UNIT
    from broker_dledger_inside_scenarios import BATCH_INNER, embedded_earlier_batch_message

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-batch-embedded-earlier-batch-held-lower"
    reput, msg = embedded_earlier_batch_message()
    r, w, src = _inside_run(name, reput, msg, b"x" * 8)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    first, log, base = data[0].read_bytes(), data[-1].read_bytes(), int(data[-1].name)
    # B7/0's records: message 10 of the first data file, the one before the host (below processOffset)
    earlier = first[EARLIER_B7_UNIT[0]:sum(EARLIER_B7_UNIT[:2])]
    assert (int.from_bytes(earlier[:4], "big"), int.from_bytes(earlier[28:36], "big")) == EARLIER_B7_UNIT[1::-1]
    assert b"\x02B7" in earlier
    offset, size = HELD_B7_UNIT[:2]
    rec = log[offset - base:offset - base + size]
    assert (int.from_bytes(rec[:4], "big"), int.from_bytes(rec[28:36], "big")) == (size, offset) and b"\x02B7" in rec
    below = first[BELOW_B7_UNIT[0]:sum(BELOW_B7_UNIT[:2])]   # the planted unit's record: another queue's
    assert (int.from_bytes(below[:4], "big"), int.from_bytes(below[28:36], "big")) == BELOW_B7_UNIT[1::-1]
    assert b"\x02B7" not in below and BELOW_B7_UNIT[0] < EARLIER_B7_UNIT[0] < base < offset < reput
    (held_file,) = sorted((src / "before" / "batchconsumequeue" / "B7" / "0").iterdir())
    before = held_file.read_bytes()
    assert struct.unpack(">qiqqqhii", before[:46]) == BELOW_B7_UNIT and not any(before[46:])
    # after the broker's recovery (the walk's dispatch of both data files onto the planted file, then the cut): write
    # position 138, max the start of the message before the host (the planted file alone: 46 and 48)
    loaded = w["queuesAfterLoad"]["B7/0"]
    assert loaded["files"] == [held_file.name] and int(loaded["maxOffset"]) == 138, loaded
    assert int(loaded["maxPhysicOffset"]) == offset, loaded
    state = w["queuesAfterDispatch"]["B7/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 184, state
    b7 = (src / "expected" / "batchconsumequeue" / "B7" / "0" / held_file.name).read_bytes()
    units = [struct.unpack(">qiqqqhii", b7[k:k + 46]) for k in (0, 46, 92, 138)]
    stored = struct.unpack(">q", msg[56:64])[0]
    parsed = (reput, len(msg), 0, stored, *BATCH_INNER[1], -1, 0)
    assert b7[:46] == before[:46] and [u[:2] for u in units[1:3]] == [EARLIER_B7_UNIT[:2], (offset, size)] and \
        units[3] == parsed and not any(b7[184:]), b7[:184].hex()
    cuts = _capture_cuts(monkeypatch)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.start_offset == 0, crash.start_offset   # the walk from the first data file
    # B7/0 as the walk's dispatch of both data files onto the planted file and the cut left it
    assert cuts[0][("B7", 0)] == (offset, True, 138, True), cuts
    placed = crash.cut.inside_placed
    assert placed.units == (InsideUnit("B7", 0, 138, reput, len(msg), 0, True, stored, *BATCH_INNER[1]),) and \
        placed.opened == (), placed
    (q,) = [q for q in placed.whole if (q.topic, q.queue_id) == ("B7", 0)]
    assert (q.parsed_at, q.opened, q.copies) == ((138,), (), ()), q
    # neither fillPreBlank nor the parsed one held; B7/0's planted unit is no message's own (another queue's record,
    # whose own unit the broker's queue holds too)
    _loses_as_the_broker(p, r, src, (reput,), extra=1)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_message_for_a_held_batch_queue_only_past_went_to(
        line, tmp_path, monkeypatch):
    """-to-entry-past-only-batch-held: BZ/0 on disk before the walk, its planted file holding one unit
    (:data:`BELOW_B7_UNIT`, another queue's record, below processOffset); the walk, ended by the damaged last
    message, wrote no unit of it.  ``BatchConsumeQueue.truncateDirtyLogicFiles`` keeps that file (write position 46,
    max 48); where the reput is set (processOffset - 1) the BZ/0 message starts past 48 and goes to 46, and the reput,
    gone on to the damaged record past the walk's end, appends its unit at 92.  The broker's file, byte for byte: the
    planted unit, the parsed one, the damaged record's, zeros.  verify on the store as that restart found it (no
    longer refused: "a queue the walk wrote no unit of, only records past its end") replays BZ/0 from the planted
    file as the cut left it and predicts the units lost."""
    from broker_dledger_inside_bcq_disk_scenarios import BELOW_B7_UNIT
    from broker_dledger_inside_only_past_scenarios import (
        PAST_ONLY_BATCH_TOPIC,
        embedded_to_entry_past_only_batch_message,
    )
    from broker_dledger_inside_scenarios import BATCH_INNER

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-only-batch-held"
    reput, msg = embedded_to_entry_past_only_batch_message()
    r, w, src = _inside_run(name, reput, msg, damaged=True)
    damaged = int(w["damagedRecord"])
    queue = f"{PAST_ONLY_BATCH_TOPIC}/0"
    (held_file,) = sorted((src / "before" / "batchconsumequeue" / PAST_ONLY_BATCH_TOPIC / "0").iterdir())
    before = held_file.read_bytes()
    assert struct.unpack(">qiqqqhii", before[:46]) == BELOW_B7_UNIT and not any(before[46:])
    first = sorted((src / "before" / "dledger-n0" / "data").iterdir())[0].read_bytes()
    below = first[BELOW_B7_UNIT[0]:sum(BELOW_B7_UNIT[:2])]   # the planted unit's record: another queue's
    assert (int.from_bytes(below[:4], "big"), int.from_bytes(below[28:36], "big")) == BELOW_B7_UNIT[1::-1]
    assert PAST_ONLY_BATCH_TOPIC.encode() not in below
    loaded = w["queuesAfterLoad"][queue]
    assert loaded["files"] == [held_file.name] and int(loaded["maxOffset"]) == 46, loaded
    assert int(loaded["maxPhysicOffset"]) == BELOW_B7_UNIT[0], loaded
    state = w["queuesAfterDispatch"][queue]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 138, state
    data = (src / "expected" / "batchconsumequeue" / PAST_ONLY_BATCH_TOPIC / "0" / held_file.name).read_bytes()
    head = last_data_bytes(src, damaged, 64)
    units = [struct.unpack(">qiqqqhii", data[k:k + 46]) for k in (0, 46, 92)]
    stored = struct.unpack(">q", msg[56:64])[0]
    parsed = (reput, len(msg), 0, stored, *BATCH_INNER[1], -1, 0)
    assert data[:46] == before[:46] and units[1] == parsed and \
        units[2] == (damaged, struct.unpack(">i", head[:4])[0], 0, struct.unpack(">q", head[56:64])[0],
                     struct.unpack(">q", head[20:28])[0], 1, -1, 0) and not any(data[138:]), data[:138].hex()
    cuts = _capture_cuts(monkeypatch)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert cuts[0][(PAST_ONLY_BATCH_TOPIC, 0)] == (BELOW_B7_UNIT[0], True, 46, False), cuts
    placed = crash.cut.inside_placed
    (unit,) = placed.units
    assert unit == InsideUnit(PAST_ONLY_BATCH_TOPIC, 0, 46, reput, len(msg), 0, True, stored, *BATCH_INNER[1]) and \
        placed.opened == (), placed
    (q,) = [q for q in placed.whole if (q.topic, q.queue_id) == (PAST_ONLY_BATCH_TOPIC, 0)]
    assert (q.parsed_at, [pos for pos, _source in q.copies], q.put_back) == ((46,), [92], (damaged,)), q
    # the planted unit is no message's own (another queue's record, whose own unit the broker's queue holds too)
    _loses_as_the_broker(p, r, src, (reput,), extra=1, some=False)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_walk_appended_its_only_units_of_an_earlier_file_onto_a_batch_queue(
        line, tmp_path, monkeypatch):
    """-earlier-batch-only-held-lower: B7/0, written by the walk in the first data file only (message 10), its planted
    file holding one unit (:data:`BELOW_B7_UNIT`, another queue's record): loaded max 48, write position 46.  The
    walk's ``putBatchMessagePositionInfo`` appends message 10's unit at 46 (it starts past 48); the cut keeps it
    (below processOffset): write position 92, max its start; the B7/0 message where the reput is set starts past it
    and is appended at 92.  The broker's file, byte for byte: the planted unit, message 10's, the parsed one, zeros.
    verify on the store as that restart found it dispatches the walk's B7/0 unit of the first data file onto the
    planted file before the cut (``QueueTrack.batch_walked``: a batch queue on disk, its earlier units kept; before,
    refused), replays B7/0 from there and predicts the units lost."""
    from broker_dledger_inside_bcq_disk_scenarios import BELOW_B7_UNIT, EARLIER_B7_UNIT
    from broker_dledger_inside_scenarios import BATCH_INNER, embedded_earlier_batch_message

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-batch-embedded-earlier-batch-only-held-lower"
    reput, msg = embedded_earlier_batch_message()
    r, w, src = _inside_run(name, reput, msg, b"x" * 8)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2, data
    first = data[0].read_bytes()
    earlier = first[EARLIER_B7_UNIT[0]:sum(EARLIER_B7_UNIT[:2])]   # message 10: B7/0's only record in the walk
    assert (int.from_bytes(earlier[:4], "big"), int.from_bytes(earlier[28:36], "big")) == EARLIER_B7_UNIT[1::-1]
    assert b"\x02B7" in earlier and BELOW_B7_UNIT[0] < EARLIER_B7_UNIT[0] < int(data[-1].name)
    (held_file,) = sorted((src / "before" / "batchconsumequeue" / "B7" / "0").iterdir())
    before = held_file.read_bytes()
    assert struct.unpack(">qiqqqhii", before[:46]) == BELOW_B7_UNIT and not any(before[46:])
    loaded = w["queuesAfterLoad"]["B7/0"]
    assert loaded["files"] == [held_file.name] and int(loaded["maxOffset"]) == 92, loaded
    assert int(loaded["maxPhysicOffset"]) == EARLIER_B7_UNIT[0], loaded
    state = w["queuesAfterDispatch"]["B7/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 138, state
    b7 = (src / "expected" / "batchconsumequeue" / "B7" / "0" / held_file.name).read_bytes()
    stored = struct.unpack(">q", msg[56:64])[0]
    units = [struct.unpack(">qiqqqhii", b7[k:k + 46]) for k in (0, 46, 92)]
    assert b7[:46] == before[:46] and units[1][:2] == EARLIER_B7_UNIT[:2] and \
        units[2] == (reput, len(msg), 0, stored, *BATCH_INNER[1], -1, 0) and not any(b7[138:]), b7[:138].hex()
    cuts = _capture_cuts(monkeypatch)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.start_offset == 0, crash.start_offset   # the walk from the first data file
    assert cuts[0][("B7", 0)] == (EARLIER_B7_UNIT[0], True, 92, True), cuts
    placed = crash.cut.inside_placed
    assert placed.units == (InsideUnit("B7", 0, 92, reput, len(msg), 0, True, stored, *BATCH_INNER[1]),) and \
        placed.opened == (), placed
    (q,) = [q for q in placed.whole if (q.topic, q.queue_id) == ("B7", 0)]
    assert (q.parsed_at, q.opened, q.copies) == ((92,), (), ()), q
    # the planted unit is no message's own (another queue's record, whose own unit the broker's queue holds too)
    _loses_as_the_broker(p, r, src, (reput,), extra=1, some=False)

"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``, the queues kept: ``keepQueues``)
whose start's reput, set inside an entry, parses a well-formed message there for a batch queue on disk before the
walk onto whose files the walk appended units the cut keeps (``-batch-held-below``), written by the published
RocketMQ store through the JVM harness in ``tests/broker/``: what the broker wrote, and ``verify``'s prediction on the
store as its restart found it.

The stores are in :mod:`broker_dledger_inside_bcq_disk_scenarios`; the broker writes every store once a pytest session
(:mod:`broker_dledger_runs`).
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_runs import LINES, _capture_cuts, _inside_run, _loses_as_the_broker, _verify_with_plan

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


@pytest.mark.parametrize("stem", ["-batch-held-below", "-earlier-batch-held-below"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_walk_appended_kept_units_onto_a_batch_queues_files(
        line, stem, tmp_path, monkeypatch):
    """The -batch-held store with B7/0's file planted with one unit alone (:data:`BELOW_B7_UNIT`: the first data
    file's first record, another queue's): loaded max 48, write position 46.  The walk's
    ``putBatchMessagePositionInfo`` appends its B7/0 unit of the last message before the host (below processOffset,
    starting past 48) at 46 and that of the last message (past processOffset) at 92; the cut takes the last one:
    write position 92, max the start of the message before the host (the files alone would leave 46 and 48, the
    walk's units alone 46); the B7/0 message where the reput is set starts past that max and is appended at 92.
    ``-earlier-batch-held-below``: the walk goes over both data files and wrote B7/0 in the first one too (message
    10), the planted file holding that unit (:data:`EARLIER_B7_UNIT`: loaded max its start, write position 46): the
    walk skips it (at that max), then as above.  The broker's file, byte for byte: the planted unit, the walk's unit
    it kept, the parsed one, zeros.  verify on the store as that restart found it dispatches the walk's B7/0 units
    onto the planted file before the cut, leaves B7/0 with the broker's write position and max, puts the parsed unit
    where the broker did (the same bytes) and predicts the units lost."""
    from broker_dledger_inside_bcq_disk_scenarios import BELOW_B7_UNIT, EARLIER_B7_UNIT
    from broker_dledger_inside_disk_batch_scenarios import HELD_B7_UNIT
    from broker_dledger_inside_scenarios import BATCH_INNER, EMBED_HOST_AT, embedded_earlier_batch_message

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-batch-embedded{stem}"
    reput, msg = embedded_earlier_batch_message()
    r, w, src = _inside_run(name, reput, msg, b"x" * 8)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    first, log, base = data[0].read_bytes(), data[-1].read_bytes(), int(data[-1].name)
    offset, size = HELD_B7_UNIT[:2]
    rec = log[offset - base:offset - base + size]   # the B7/0 record before the host, below processOffset
    assert (int.from_bytes(rec[:4], "big"), int.from_bytes(rec[28:36], "big")) == (size, offset) and b"\x02B7" in rec
    planted_unit = EARLIER_B7_UNIT if stem.startswith("-earlier") else BELOW_B7_UNIT
    assert planted_unit[0] < base < offset < EMBED_HOST_AT < reput + 1
    # the planted unit's record in the first data file: another queue's, or B7/0's message 10
    below = first[planted_unit[0]:sum(planted_unit[:2])]
    assert (int.from_bytes(below[:4], "big"), int.from_bytes(below[28:36], "big")) == planted_unit[1::-1]
    assert (b"\x02B7" in below) == stem.startswith("-earlier"), below.hex()
    (held_file,) = sorted((src / "before" / "batchconsumequeue" / "B7" / "0").iterdir())
    before = held_file.read_bytes()
    assert struct.unpack(">qiqqqhii", before[:46]) == planted_unit and not any(before[46:])
    # after the broker's recovery (the walk's dispatch onto the planted file, then the cut): write position 92, max
    # the start of the walk's unit it kept (the planted file alone would leave 46 and its unit's start)
    loaded = w["queuesAfterLoad"]["B7/0"]
    assert loaded["files"] == [held_file.name] and int(loaded["maxOffset"]) == 92, loaded
    assert int(loaded["maxPhysicOffset"]) == offset, loaded
    state = w["queuesAfterDispatch"]["B7/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 138, state
    b7 = (src / "expected" / "batchconsumequeue" / "B7" / "0" / held_file.name).read_bytes()
    stored = struct.unpack(">q", msg[56:64])[0]
    # the walk's unit kept at 46 (its record's queue offset, stored time and batch of one), then the parsed one
    walk_unit = struct.unpack(">qiqqqhii", b7[46:92])
    assert walk_unit[:2] == (offset, size) and walk_unit[2] == 0 and walk_unit[5:] == (1, -1, 0), b7[:138].hex()
    parsed = (reput, len(msg), 0, stored, *BATCH_INNER[1], -1, 0)
    assert b7[:46] == before[:46] and struct.unpack(">qiqqqhii", b7[92:138]) == parsed, b7[:138].hex()
    assert not any(b7[138:])
    cuts = _capture_cuts(monkeypatch)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.start_offset == (0 if stem.startswith("-earlier") else base), crash.start_offset
    # B7/0 as the walk's dispatch onto the planted file and the cut left it: max the kept walk unit's start, write 92
    assert cuts[0][("B7", 0)] == (offset, True, 92, True), cuts
    placed = crash.cut.inside_placed
    (unit,) = placed.units
    assert unit == InsideUnit("B7", 0, 92, reput, len(msg), 0, True, stored, *BATCH_INNER[1]) and \
        placed.opened == (), placed
    # the parsed unit's bytes as the broker wrote them at 92
    assert struct.pack(">qiqqqhii", unit.offset, unit.size, unit.tags_code, unit.store_time, unit.base,
                       unit.batch_size, -1, 0) == b7[92:138]
    # neither fillPreBlank nor the parsed one held; -batch-held-below: B7/0's planted unit (first in its file, checked
    # above) is no message's own (another queue's record, whose own unit the broker's queue holds too)
    _loses_as_the_broker(p, r, src, (reput,), extra=0 if stem.startswith("-earlier") else 1)

@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_a_crash_restart_whose_reput_reaches_a_record_past_the_walk_for_a_batch_queue_the_cut_took_no_unit_of(
        line, tmp_path, monkeypatch):
    """The -batch-held-shifted-to-entry-past store with no file planted, the queues rebuilt, and its last B7/0 message
    before the damaged one to B9/0: B7/0's only walk unit (the message before the host, below processOffset) is not
    cut (write position 46, max its start); where the reput is set (processOffset - 1) the B7/0 message ending at
    B9's entry goes to 46; the reput goes on there, dispatches B9/0's two cut units again (B9/0 emptied by the cut:
    at 0 and 46 of a new file) and reaches the damaged B7/0 message past the walk's end: appended at 92.  The
    rebuild's own dispatch put the parsed unit at 46 after the walk's and the damaged record at 92 after it: the
    record past the walk's end comes from there.  ``--as-restart`` writes the broker's queues byte for byte, and
    verify predicts the units lost."""
    from broker_dledger_inside_disk_batch_scenarios import HELD_B7_UNIT, embedded_batch_held_to_entry_message
    from broker_dledger_inside_scenarios import BATCH_INNER
    from broker_dledger_runs import _restart_as_the_broker, _verify_loses_as_the_broker

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-batch-embedded-batch-uncut-to-entry-past"
    reput, msg = embedded_batch_held_to_entry_message()
    r, w, src = _inside_run(name, reput, msg, damaged=True)
    damaged = int(w["damagedRecord"])
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    log, base = data[-1].read_bytes(), int(data[-1].name)
    rec = log[damaged - base:damaged - base + 300]
    assert int.from_bytes(rec[:4], "big") == 300 and b"\x02B7" in rec   # the damaged B7/0 record
    assert not (src / "before" / "batchconsumequeue").exists() or \
        not any((src / "before" / "batchconsumequeue").rglob("0000*"))   # the queues rebuilt
    # B7/0 after the cut: its walk unit kept (the message before the host); then the parsed one and the damaged one
    assert int(w["queuesAfterLoad"]["B7/0"]["maxOffset"]) == 46, w["queuesAfterLoad"]["B7/0"]
    assert int(w["queuesAfterLoad"]["B7/0"]["maxPhysicOffset"]) == HELD_B7_UNIT[0]
    state = w["queuesAfterDispatch"]["B7/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 138, state
    b7 = (src / "expected" / "batchconsumequeue" / "B7" / "0" / state["files"][0]).read_bytes()
    units = [struct.unpack(">qiqqqhii", b7[k:k + 46]) for k in (0, 46, 92)]
    stored = struct.unpack(">q", msg[56:64])[0]
    assert [u[:2] for u in units] == [HELD_B7_UNIT[:2], (reput, len(msg)), (damaged, 300)], units
    assert units[1] == (reput, len(msg), 0, stored, *BATCH_INNER[1], -1, 0) and not any(b7[138:]), units
    # B9/0 emptied by the cut, its two units dispatched again by the reput
    assert int(w["queuesAfterLoad"]["B9/0"]["maxOffset"]) == 0 and \
        int(w["queuesAfterDispatch"]["B9/0"]["maxOffset"]) == 92, w["queuesAfterDispatch"]["B9/0"]
    _restart_as_the_broker(src, name, line, tmp_path, batch=True)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / f"v-{name}"), src, line)
    placed = crash.cut.inside_placed
    assert placed.units == (InsideUnit("B7", 0, 46, reput, len(msg), 0, True, stored, *BATCH_INNER[1]),), placed
    # B7/0 replayed whole (dledger_inside_replay_batch): the record past the walk's end read at 92 of the rebuild's
    # queue (after the parsed unit its own dispatch put at 46), appended at 92
    (q,) = [q for q in placed.whole if (q.topic, q.queue_id) == ("B7", 0)]
    assert (q.parsed_at, q.copies, q.opened) == ((46,), ((92, 92),), ()) and placed.rebuild_units == (), placed
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))

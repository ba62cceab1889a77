"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``, the queues kept: ``keepQueues``)
whose start's reput, set inside an entry, parses a well-formed message there for a queue on disk before the walk whose
files the cut leaves, where a walk unit below processOffset ends past the max the cut leaves those files: the walk
appended it (``-own-held-disk-appended``: the loaded max below it) or skipped it below a larger loaded max
(``-own-held-disk-skipped``), written by the published RocketMQ store through the JVM harness in ``tests/broker/``:
what the broker wrote, and ``verify``'s prediction on the store as its restart found it.

The cases this one grows from (the walk's units ending at or below that max) are in
:mod:`test_dledger_crash_inside_disk_broker`; the broker writes every store once a pytest session
(:mod:`broker_dledger_runs`).
"""
from __future__ import annotations

import broker_harness as bh
import pytest
from broker_dledger_files import first_units
from broker_dledger_runs import LINES, _queued, _units_below_write, _verify_with_plan, _written

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


@pytest.mark.parametrize("suffix", ["-appended", "-skipped"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_walk_appends_or_skips_a_unit_of_a_kept_queue_past_its_files_max(
        line, suffix, tmp_path, monkeypatch):
    """The -own-held-shifted store with T8/0's file planted with the unit of its queue offset 0 (first data file)
    alone (``-appended``) or with queue offset 2's (past processOffset) after it (``-skipped``): the cut on the planted
    file alone leaves both at write position 20, max that unit's end, below the end of the walk's unit of queue
    offset 1 (below processOffset).  ``ConsumeQueue.recover`` loads max that unit's end (``-appended``) or queue
    offset 2's (``-skipped``); the walk's ``putMessagePositionInfo`` appends the unit of queue offset 1 at 20 (its
    queue offset matches the write position) and the one of queue offset 2 at 40 (``-appended``), or skips both
    below the loaded max (``-skipped``); ``truncateDirtyLogicFiles`` leaves write position 40, max queue offset 1's
    end, or 20 and queue offset 0's end; the T8/0 message where the reput is set (processOffset - 1, queue offset
    13) goes there.  verify on the store as that restart found it puts it where the broker did and predicts the
    units lost (``-skipped``: queue offset 1's unit too)."""
    from broker_dledger_2gib import embedded_message
    from broker_dledger_inside_disk_scenarios import EARLIER_UNIT, SHIFTED_UNITS
    from broker_dledger_inside_scenarios import EMBED_OWN_QUEUE_OFFSET

    from store_format.dledger_inside_units import InsideUnit
    from store_format.layout import CQ_UNIT_SIZE
    name = f"{line}-dledger-abort-emptied-batch-embedded-own-held-disk{suffix}"
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
    (held_file,) = sorted((src / "before" / "consumequeue" / "T8" / "0").iterdir())
    planted = [EARLIER_UNIT] if suffix == "-appended" else [EARLIER_UNIT, SHIFTED_UNITS[1]]
    before = held_file.read_bytes()
    assert first_units(before, len(planted)) == planted and not any(before[len(planted) * CQ_UNIT_SIZE:])
    # the walk appended queue offset 1's unit (the recovery's cut left two units) or skipped it (one)
    kept = [EARLIER_UNIT, SHIFTED_UNITS[0]] if suffix == "-appended" else [EARLIER_UNIT]
    assert int(w["queuesAfterLoad"]["T8/0"]["maxOffset"]) == len(kept) * CQ_UNIT_SIZE, w["queuesAfterLoad"]["T8/0"]
    state = w["queuesAfterDispatch"]["T8/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == (len(kept) + 1) * CQ_UNIT_SIZE, state
    held = (src / "expected" / "consumequeue" / "T8" / "0" / held_file.name).read_bytes()
    assert first_units(held, len(kept) + 1) == [*kept, (reput, len(msg))], held[:80].hex()
    assert not any(held[(len(kept) + 1) * CQ_UNIT_SIZE:]), held.hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    assert (placed.units, placed.opened, placed.blank_until) == (
        (InsideUnit("T8", 0, len(kept) * CQ_UNIT_SIZE, reput, len(msg), 0),), (), ()), placed
    held_units = _units_below_write(w, src, (reput,))   # neither fillPreBlank nor the parsed one
    assert p["units_lost"] == _queued(r["scenario"]) - held_units > 0, (held_units, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_cut_goes_into_files_of_a_kept_queue_older_than_recover_reads(
        line, tmp_path, monkeypatch):
    """The -own-held-disk store with T8/0 planted with four files: the first holding the unit of queue offset 0
    alone, the next three full of queue offset 2's unit (past processOffset).  ``ConsumeQueue.recover`` reads the
    last three (max queue offset 2's end): the walk skips its T8/0 units below it, ``truncateDirtyLogicFiles`` deletes
    those three and goes on into the first, leaving write position 20, max queue offset 0's end; the T8/0 message
    where the reput is set goes to 20.  verify on the store as that restart found it reads that first file too, puts
    the parsed unit where the broker did and predicts the units lost (queue offset 1's unit, skipped, too)."""
    from broker_dledger_2gib import embedded_message
    from broker_dledger_inside_disk_scenarios import EARLIER_UNIT, SHIFTED_UNITS
    from broker_dledger_inside_scenarios import EMBED_OWN_QUEUE_OFFSET

    from store_format.dledger_inside_units import InsideUnit
    from store_format.layout import CQ_UNIT_SIZE
    name = f"{line}-dledger-abort-emptied-batch-embedded-own-held-disk-older"
    r, w, src = _written(name)
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    reput = int(w["truncateDirtyLogicFilesAt"]) - 1
    msg = embedded_message(reput, topic=b"T8", queue_offset=EMBED_OWN_QUEUE_OFFSET)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    log, base = data[-1].read_bytes(), int(data[-1].name)
    assert log[reput - base:reput - base + len(msg)] == msg and sum(SHIFTED_UNITS[0]) < reput + 1 <= SHIFTED_UNITS[1][0]
    files = sorted((src / "before" / "consumequeue" / "T8" / "0").iterdir())
    assert [f.name for f in files] == [f"{k * size:020d}" for k in range(4)], files
    first = files[0].read_bytes()
    assert first_units(first, 1) == [EARLIER_UNIT] and not any(first[CQ_UNIT_SIZE:]), first.hex()
    for f in files[1:]:
        assert first_units(f.read_bytes(), size // CQ_UNIT_SIZE) == [SHIFTED_UNITS[1]] * (size // CQ_UNIT_SIZE), f.name
    # the recovery's cut left the first file with its one unit: the walk appended nothing
    assert int(w["queuesAfterLoad"]["T8/0"]["maxOffset"]) == CQ_UNIT_SIZE, w["queuesAfterLoad"]["T8/0"]
    state = w["queuesAfterDispatch"]["T8/0"]
    assert state["files"] == [files[0].name] and int(state["maxOffset"]) == 2 * CQ_UNIT_SIZE, state
    assert sorted(p.name for p in (src / "expected" / "consumequeue" / "T8" / "0").iterdir()) == [files[0].name]
    held = (src / "expected" / "consumequeue" / "T8" / "0" / files[0].name).read_bytes()
    assert first_units(held, 2) == [EARLIER_UNIT, (reput, len(msg))] and not any(held[2 * CQ_UNIT_SIZE:]), held.hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    assert (placed.units, placed.opened, placed.blank_until) == (
        (InsideUnit("T8", 0, CQ_UNIT_SIZE, reput, len(msg), 0),), (), ()), placed
    held_units = _units_below_write(w, src, (reput,))   # neither fillPreBlank nor the parsed one
    assert p["units_lost"] == _queued(r["scenario"]) - held_units > 0, (held_units, p["units_lost"], p["notes"])


@pytest.mark.parametrize("suffix", ["-past-kept", "-past-cut-kept"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_dispatches_records_past_the_walk_for_a_kept_queue(
        line, suffix, tmp_path, monkeypatch):
    """The -to-entry-past and -to-entry-past-cut stores with the queues kept: T0/0, the parsed message's queue, on
    disk before the walk with its units of the records past the walk's end (written before the damage).  The walk
    skips its T0/0 units below the loaded max, the cut leaves write position 480 (after queue offset 23's unit,
    below processOffset), the parsed T0/0 unit goes there, over the cut unit; ``-past-kept``: the damaged record
    (queue offset 24, past the walk's end) is then dropped (its queue offset lies below the write position);
    ``-past-cut-kept``: the cut unit (queue offset 24) the reput dispatches again is dropped, the damaged record and
    the one after it (25, 26) are appended at 500 and 520.  verify on the store as that restart found it puts them
    where the broker did and predicts the units lost."""
    from broker_dledger_inside_scenarios import EMBED_HOST_AT, EMBED_HOST_BODY, TO_ENTRY_HOST_TAIL

    from store_format.dledger_inside_units import InsideUnit
    from store_format.layout import CQ_UNIT_SIZE
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry{suffix}"
    r, w, src = _written(name)
    reput = int(w["truncateDirtyLogicFilesAt"]) - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    log, base = data[-1].read_bytes(), int(data[-1].name)
    at = reput - base
    assert int.from_bytes(log[at:at + 4], "big") == host_end - reput and b"\x02T0" in log[at:host_end - base]
    past = 3 if suffix == "-past-kept" else 5   # T0/0's units in its last file before the restart
    files = sorted((src / "before" / "consumequeue" / "T0" / "0").iterdir())
    last = files[-1].read_bytes()
    units = first_units(last, past)
    assert int(files[-1].name) == 22 * CQ_UNIT_SIZE and not any(last[past * CQ_UNIT_SIZE:]), last.hex()
    for k, (offset, size) in enumerate(units):   # T0/0's records of queue offsets 22 on
        rec = log[offset - base:offset - base + size]
        assert (int.from_bytes(rec[:4], "big"), int.from_bytes(rec[20:28], "big"),
                int.from_bytes(rec[28:36], "big")) == (size, 22 + k, offset), rec[:40].hex()
    assert sum(units[1]) <= reput < host_end <= units[2][0], units
    assert int(w["queuesAfterLoad"]["T0/0"]["maxOffset"]) == 24 * CQ_UNIT_SIZE, w["queuesAfterLoad"]["T0/0"]
    kept = [*units[:2], (reput, host_end - reput), *units[3:]]
    state = w["queuesAfterDispatch"]["T0/0"]
    assert state["files"] == [f.name for f in files] and int(state["maxOffset"]) == (22 + len(kept)) * CQ_UNIT_SIZE
    held = (src / "expected" / "consumequeue" / "T0" / "0" / files[-1].name).read_bytes()
    assert first_units(held, len(kept)) == kept and not any(held[len(kept) * CQ_UNIT_SIZE:]), held.hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    (q,) = [w for w in placed.whole if (w.topic, w.queue_id) == ("T0", 0)]   # replayed whole
    # the unit at units[2] dropped: -past-kept, a record past the walk's end; -past-cut-kept, the first cut unit
    # dispatched again (the parsed unit took its position)
    assert (placed.units, placed.opened, q.lost) == (
        (InsideUnit("T0", 0, 24 * CQ_UNIT_SIZE, reput, host_end - reput, 0),), (), (units[2][0],)), placed
    held_units = _units_below_write(w, src, (reput,))   # neither fillPreBlank nor the parsed one
    assert p["units_lost"] == _queued(r["scenario"]) - held_units > 0, (held_units, p["units_lost"], p["notes"])

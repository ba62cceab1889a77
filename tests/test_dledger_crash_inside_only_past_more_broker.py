"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``, the queues kept: ``keepQueues``)
whose start's reput, set inside an entry, parses a message for a consume queue on disk before the walk that the walk
wrote no unit of, only a record past its end (the damaged last message), a file of it left by the cut, with consume
queue ext files (:mod:`broker_dledger_inside_only_past_more_scenarios`): ``-to-entry-past-only-held-ext``.  Written
by the published RocketMQ store through the JVM harness in ``tests/broker/``: what the broker's restart wrote (its
consume queue and ext files), and ``verify``'s prediction on the store as that restart found it (its plan replaying
the queue from the planted files as the cut left them, the ext units going on from the ext files' end as
``ConsumeQueue.recover`` left it; its units lost counted from the broker's files).  The planted files are no
rebuild's, so ``--as-restart`` is not compared (as for :mod:`test_dledger_crash_inside_only_past_held_broker`)."""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_files import cq_unit, ext_orphans, ext_units, last_data_bytes
from broker_dledger_runs import LINES, _capture_cuts, _inside_run, _loses_as_the_broker, _verify_with_plan, _written

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


def _address(real: int) -> int:
    """``ConsumeQueueExt.decorate``: an ext unit's real offset as a consume queue unit's tags code."""
    return real - (1 << 63)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_message_for_a_held_queue_with_ext_files(
        line, tmp_path, monkeypatch):
    """TZ/0 on disk before the walk, its planted consume queue file holding one unit of
    :data:`broker_dledger_inside_only_past_held_scenarios.HELD_UNIT`'s record (below processOffset) whose tags code is
    the address of ext unit 1 (real offset 20), its planted ext file holding four ext units; the walk, ended by the
    damaged last message, wrote no unit of it.  ``ConsumeQueue.recover`` runs ``ConsumeQueueExt.recover`` (the ext
    files' end after the four units, 80) and ``truncateByMaxAddress`` with that address (the end moved back to after
    the unit at 20: 40); ``truncateDirtyLogicFiles`` keeps the planted unit (write position 20) and returns inside its
    loop, the ext files untouched.  The reput (set at processOffset - 1) puts the parsed TZ/0 message's ext unit at
    40 and its unit at 20 holding that address, then the damaged record's ext unit at 60 and its unit at 40.  The
    broker's files, byte for byte; verify (no longer refused: "with ext files (the ext units on disk not read)")
    replays TZ/0 from the planted files as the cut left them, its ext units from 40, and predicts the units lost."""
    from broker_dledger_inside_light_scenarios import PAST_ONLY_TOPIC, embedded_to_entry_past_only_message
    from broker_dledger_inside_only_past_held_scenarios import HELD_UNIT
    from broker_dledger_inside_only_past_more_scenarios import HELD_EXT_AT, HELD_EXT_UNITS, ext_unit
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-only-held-ext"
    reput, msg = embedded_to_entry_past_only_message()
    r, w, src = _inside_run(name, reput, msg, damaged=True)
    damaged = int(w["damagedRecord"])
    queue = f"{PAST_ONLY_TOPIC}/0"
    planted = (HELD_UNIT[0], HELD_UNIT[1], _address(HELD_EXT_AT))
    (held_file,) = sorted((src / "before" / "consumequeue" / PAST_ONLY_TOPIC / "0").iterdir())
    held = held_file.read_bytes()
    assert held_file.name == f"{0:020d}" and cq_unit(held, 0) == planted and not any(held[20:])
    (ext_file,) = sorted((src / "before" / "consumequeue_ext" / PAST_ONLY_TOPIC / "0").iterdir())
    assert ext_units(ext_file.read_bytes()) == [ext_unit(k) for k in range(HELD_EXT_UNITS)]
    end = HELD_UNIT[0] + HELD_UNIT[1]
    loaded = w["queuesAfterLoad"][queue]   # after the cut: the planted unit kept
    assert int(loaded["maxOffset"]) == 20 and int(loaded["maxPhysicOffset"]) == end, loaded
    assert int(w["queuesAfterDispatch"][queue]["maxOffset"]) == 60, w["queuesAfterDispatch"][queue]
    size = struct.unpack(">i", last_data_bytes(src, damaged, 4))[0]
    (got_file,) = sorted((src / "expected" / "consumequeue" / PAST_ONLY_TOPIC / "0").iterdir())
    got = got_file.read_bytes()
    # the ext units after truncateByMaxAddress's end (40), not after recover's (80)
    assert [cq_unit(got, k) for k in (0, 20, 40)] == \
        [planted, (reput, len(msg), _address(40)), (damaged, size, _address(60))] and not any(got[60:]), got[:60].hex()
    (got_ext,) = sorted((src / "expected" / "consumequeue_ext" / PAST_ONLY_TOPIC / "0").iterdir())
    units = ext_units(got_ext.read_bytes())
    assert len(units) == HELD_EXT_UNITS and units[:2] == [ext_unit(0), ext_unit(1)], units
    assert all(u != ext_unit(k) for k, u in enumerate(units) if k >= 2), units   # the broker's new ext units
    cuts = _capture_cuts(monkeypatch)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert cuts[0][(PAST_ONLY_TOPIC, 0)][:3] == (end, True, 20), cuts
    placed = crash.cut.inside_placed
    (q,) = [q for q in placed.whole if (q.topic, q.queue_id) == (PAST_ONLY_TOPIC, 0)]
    assert (q.parsed_at, q.opened, q.put_back, q.copies) == ((20,), (), (damaged,), ()), q
    assert list(q.units) == [(20, reput, len(msg), _address(40)), (40, damaged, size, _address(60))], q
    # the planted unit is no message's own (another queue's record, whose own unit the broker's queue holds too)
    _loses_as_the_broker(p, r, src, (reput,), extra=1, some=False)


_LINES_533 = bh.params_or_skip([ln for ln in LINES if ln.startswith("5.3")],
                               "5.3.3 only: DLEDGER_LINES=5.3.3 (or 4.9.8,5.3.3,5.5.1)")


@pytest.mark.parametrize("ext", [False, True], ids=["", "ext"])
@pytest.mark.parametrize("line", _LINES_533)
def test_verify_predicts_a_533_crash_restart_whose_reput_parses_a_message_for_a_queue_only_past_went_to_emptied(
        line, ext, tmp_path, monkeypatch):
    """-emptied-kept-embedded-to-entry-past-only-emptied (5.3.3): TZ/0's planted file holds one unit at
    processOffset (:func:`broker_dledger_inside_only_past_more_scenarios.deleted_unit`), which ``ConsumeQueue.recover``
    loads; the walk, ended by the damaged last message (TZ/0, queue offset 0), wrote no unit of TZ/0.  The cut sets
    TZ/0's max to processOffset and deletes the file (its first unit at processOffset); 5.3.3's
    ``recoverTopicQueueTable`` keeps that max (5.5.1 resets it to -1).  At processOffset, where
    ``doRecheckReputOffsetFromCq`` sets the reput, the TZ/0 message (queue offset 1000) ends past it:
    ``putMessagePositionInfo`` on no file creates file 19800 (``getLastMappedFile(20000)``), ``fillPreBlank`` units
    up to 20000, the unit at 20000; the reput goes on at the last (T9/0) message's entry and appends the damaged
    record's unit (queue offset 0: no check) at 20020, in the file created there.  ``ext`` (-ext): the planted unit's
    tags code the address of ext unit 1 (real offset 20), TZ/0's ext file planted holding four units:
    ``ConsumeQueue.recover``'s ``ConsumeQueueExt.recover`` ends at 80, its ``truncateByMaxAddress`` at 40; the cut,
    deleting the file, reaches its own ``truncateByMaxAddress`` with no address (nothing), so the parsed unit holds the
    address of the ext unit at 40, the damaged record's that of the one at 60.  The broker's files, byte for byte;
    verify (no longer refused: "a queue the walk wrote no unit of, only records past its end") replays TZ/0 from no
    file and max processOffset and predicts the units lost; with ext files its TZ/0 figures are the broker's (2 ext
    units appended: the parsed message's and the damaged record's; 2 orphaned: those at 0 and 20, no unit kept)."""
    from broker_dledger_inside_light_scenarios import PAST_ONLY_TOPIC
    from broker_dledger_inside_only_past_held_scenarios import kept_past_only_message
    from broker_dledger_inside_only_past_more_scenarios import HELD_EXT_AT, HELD_EXT_UNITS, deleted_unit, ext_unit
    name = f"{line}-dledger-abort-emptied-kept-embedded-to-entry-past-only-emptied" + ("-ext" if ext else "")
    reput, msg = kept_past_only_message()
    r, w, src = _written(name)
    damaged = int(w["damagedRecord"])
    assert int(w["truncateDirtyLogicFilesAt"]) == reput < damaged, w   # the reput at processOffset (5.3.3)
    assert last_data_bytes(src, reput, len(msg)) == msg, "the message at processOffset"
    queue = f"{PAST_ONLY_TOPIC}/0"
    (held_file,) = sorted((src / "before" / "consumequeue" / PAST_ONLY_TOPIC / "0").iterdir())
    held = held_file.read_bytes()
    planted = (*deleted_unit()[:2], _address(HELD_EXT_AT) if ext else 0)
    assert held_file.name == f"{0:020d}" and cq_unit(held, 0) == planted and not any(held[20:])
    if ext:
        (ext_file,) = sorted((src / "before" / "consumequeue_ext" / PAST_ONLY_TOPIC / "0").iterdir())
        assert ext_units(ext_file.read_bytes()) == [ext_unit(k) for k in range(HELD_EXT_UNITS)]
    loaded = w["queuesAfterLoad"][queue]   # the cut deleted the file, the max processOffset kept
    assert loaded["files"] == [] and int(loaded["maxPhysicOffset"]) == reput, loaded
    state = w["queuesAfterDispatch"][queue]
    assert state["files"] == [f"{19800:020d}", f"{20020:020d}"] and int(state["maxOffset"]) == 20040, state
    out = src / "expected" / "consumequeue" / PAST_ONLY_TOPIC / "0"
    first, second = (f.read_bytes() for f in sorted(out.iterdir()))
    size = struct.unpack(">i", last_data_bytes(src, damaged, 4))[0]
    blank = (0, 2**31 - 1, 0)
    tags = (_address(40), _address(60)) if ext else (0, 0)
    assert [cq_unit(first, k) for k in range(0, 220, 20)] == [blank] * 10 + [(reput, len(msg), tags[0])], first.hex()
    assert cq_unit(second, 0) == (damaged, size, tags[1]) and not any(second[20:]), second[:40].hex()
    if ext:   # the ext units after truncateByMaxAddress's end (40): the first two planted ones stay
        (got_ext,) = sorted((src / "expected" / "consumequeue_ext" / PAST_ONLY_TOPIC / "0").iterdir())
        units = ext_units(got_ext.read_bytes())
        assert len(units) == HELD_EXT_UNITS and units[:2] == [ext_unit(0), ext_unit(1)], units
        assert all(u != ext_unit(k) for k, u in enumerate(units) if k >= 2), units
    cuts = _capture_cuts(monkeypatch)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert cuts[0][(PAST_ONLY_TOPIC, 0)][:3] == (reput, False, 0), cuts
    placed = crash.cut.inside_placed
    (q,) = [q for q in placed.whole if (q.topic, q.queue_id) == (PAST_ONLY_TOPIC, 0)]
    assert (q.parsed_at, q.opened, q.blank_until, q.put_back, q.copies) == \
        ((20000,), (19800, 20020), 20000, (damaged,), ()), q
    assert list(q.units) == [(20000, reput, len(msg), tags[0]), (20020, damaged, size, tags[1])], q
    if ext:   # verify's TZ/0 ext figures are the broker's: the ext units its restart put, and those before the loaded
        # end (40) that no unit of its queue points at (the cut kept none)
        loaded_end = int(loaded["extMaxOffset"])
        appended = (int(state["extMaxOffset"]) - loaded_end) // 20
        orphans = ext_orphans({0: ext_file.read_bytes()}, loaded_end, set(tags))
        assert (loaded_end, appended, orphans) == (40, 2, 2)
        (figures,) = [f for f in p["queues"] if f["queue"] == queue]
        assert (figures["ext_units_appended"], figures["ext_units_orphaned"]) == (appended, orphans), figures
    _loses_as_the_broker(p, r, src, (reput,), some=False)

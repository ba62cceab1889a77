"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``, the queues kept: ``keepQueues``)
whose start's reput, set inside an entry, parses a message for a consume queue (not a batch one) on disk before the
walk that the walk wrote no unit of, only a record past its end (the damaged last message), a file of it left by
the cut (:mod:`broker_dledger_inside_only_past_held_scenarios`): ``-to-entry-past-only-held``, ``-held-full`` and
``-held-over``; and on 5.3.3 (``DLEDGER_LINES=5.3.3``, or ``4.9.8,5.3.3,5.5.1``; the reput set at ``processOffset``)
``-emptied-kept-embedded-to-entry-past-only-held``.  Written by the published RocketMQ store through the JVM harness
in ``tests/broker/``: what the broker's restart wrote, and ``verify``'s prediction on the store as that restart found
it (its plan replaying the queue from the planted files as the cut left them, its units lost counted from the
broker's files).  The planted files are no rebuild's, so ``--as-restart`` (which plans with no queue on disk: the
rebuild's own dispatch) is not compared, as for the batch queue's case
(:mod:`test_dledger_crash_inside_batch_replay_broker`).  The stores are written with the others of
:mod:`broker_dledger_runs` (one pytest session)."""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_files import cq_unit, last_data_bytes
from broker_dledger_runs import LINES, _capture_cuts, _inside_run, _loses_as_the_broker, _verify_with_plan, _written

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


# per store: the planted files' starts and units each, the write position the cut leaves (max: the planted unit's
# end), where the parsed unit goes (-1: dropped by the queue offset check), the files getLastMappedFile creates
CASES = [
    pytest.param("", (0,), 1, 20, 20, (), id="held"),
    pytest.param("-full", (0,), 11, 220, 220, (220,), id="held-full"),
    pytest.param("-over", tuple(range(0, 19801, 220)), 11, 20020, -1, (20020,), id="held-over"),
]


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
@pytest.mark.parametrize(("suffix", "planted", "per_file", "write", "parsed_at", "opened"), CASES)
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_message_for_a_held_queue_only_past_went_to(
        line, suffix, planted, per_file, write, parsed_at, opened, tmp_path, monkeypatch):
    """TZ/0 on disk before the walk, its planted files holding units of :data:`HELD_UNIT` (another queue's record,
    below processOffset) only; the walk, ended by the damaged last message, wrote no unit of it.
    ``ConsumeQueue.truncateDirtyLogicFiles`` keeps every planted unit (write position after the last, max its end).
    Where the reput is set (processOffset - 1) the TZ/0 message (queue offset 1000) ends past that max:
    ``putMessagePositionInfo`` appends it at the write position (-held: 20, its queue offset * 20 past it;
    -held-full: 220, in the file ``getLastMappedFile`` creates there) or drops it (-held-over: 20000 below the write
    position 20020, the file at 20020 created first); the reput, gone on to the damaged record past the walk's end
    (queue offset 0: no check), appends its unit after that.  The broker's files, byte for byte: the planted units,
    the parsed one, the damaged record's, zeros.  verify on the store as that restart found it (no longer refused: "a
    queue the walk wrote no unit of, only records past its end") replays TZ/0 from the planted files as the cut left
    them and predicts the units lost."""
    from broker_dledger_inside_light_scenarios import PAST_ONLY_TOPIC, embedded_to_entry_past_only_message
    from broker_dledger_inside_only_past_held_scenarios import HELD_UNIT
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-only-held{suffix}"
    reput, msg = embedded_to_entry_past_only_message()
    r, w, src = _inside_run(name, reput, msg, damaged=True)
    damaged = int(w["damagedRecord"])
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    queue = f"{PAST_ONLY_TOPIC}/0"
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert int(data[0].name) == 0
    rec = data[0].read_bytes()[HELD_UNIT[0]:sum(HELD_UNIT[:2])]   # the planted unit's record: another queue's
    assert (int.from_bytes(rec[:4], "big"), int.from_bytes(rec[28:36], "big")) == HELD_UNIT[1::-1]
    assert PAST_ONLY_TOPIC.encode() not in rec
    folder = src / "before" / "consumequeue" / PAST_ONLY_TOPIC / "0"
    assert [int(f.name) for f in sorted(folder.iterdir())] == list(planted)
    for f in sorted(folder.iterdir()):
        held = f.read_bytes()
        assert [cq_unit(held, k) for k in range(0, per_file * 20, 20)] == [HELD_UNIT] * per_file
        assert not any(held[per_file * 20:])
    end = HELD_UNIT[0] + HELD_UNIT[1]
    loaded = w["queuesAfterLoad"][queue]   # after the cut: the planted units all kept
    assert int(loaded["maxOffset"]) == write and int(loaded["maxPhysicOffset"]) == end, loaded
    state = w["queuesAfterDispatch"][queue]
    damaged_at = write + 20 if parsed_at >= 0 else write
    assert int(state["maxOffset"]) == damaged_at + 20, state
    out = src / "expected" / "consumequeue" / PAST_ONLY_TOPIC / "0"
    files = sorted(out.iterdir())
    assert [int(f.name) for f in files] == [*planted, *opened], files
    queue_bytes = b"".join(f.read_bytes() for f in files)
    assert len(queue_bytes) == size * len(files)
    first = planted[0]
    units = [cq_unit(queue_bytes, k - first) for k in range(first, damaged_at + 20, 20)]
    assert units[:write // 20 - first // 20] == [HELD_UNIT] * (write // 20 - first // 20)
    stored_tags = 0   # KEYS only: no TAGS property, tags code 0
    if parsed_at >= 0:
        assert units[(parsed_at - first) // 20] == (reput, len(msg), stored_tags), units[-3:]
    head = last_data_bytes(src, damaged, 4)
    assert units[(damaged_at - first) // 20][:2] == (damaged, struct.unpack(">i", head)[0]), units[-3:]
    assert not any(queue_bytes[damaged_at + 20 - first:])
    cuts = _capture_cuts(monkeypatch)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert cuts[0][(PAST_ONLY_TOPIC, 0)][:3] == (end, True, write), cuts
    placed = crash.cut.inside_placed
    (q,) = [q for q in placed.whole if (q.topic, q.queue_id) == (PAST_ONLY_TOPIC, 0)]
    assert (q.parsed_at, q.opened, q.put_back, q.copies) == ((parsed_at,), opened, (damaged,), ()), q
    assert [u[0] for u in q.units] == ([parsed_at] if parsed_at >= 0 else []) + [damaged_at], q
    # the planted units are no message's own (another queue's record, whose own unit the broker's queue holds too)
    _loses_as_the_broker(p, r, src, (reput,), extra=per_file * len(planted), some=False)


_LINES_533 = bh.params_or_skip([ln for ln in LINES if ln.startswith("5.3")],
                               "5.3.3 only: DLEDGER_LINES=5.3.3 (or 4.9.8,5.3.3,5.5.1)")


@pytest.mark.parametrize("line", _LINES_533)
def test_verify_predicts_a_533_crash_restart_whose_reput_parses_a_message_for_a_held_queue_only_past_went_to(
        line, tmp_path, monkeypatch):
    """-emptied-kept-embedded-to-entry-past-only-held (5.3.3): the 5.3.3 cut empties T9/0 and keeps its max at
    processOffset, where ``doRecheckReputOffsetFromCq`` sets the reput, and keeps TZ/0's planted file (its one unit,
    :data:`HELD_UNIT`, below processOffset: write position 20, max 488); the walk, ended by the damaged last message
    (TZ/0, queue offset 0), wrote no unit of TZ/0.  At processOffset the TZ/0 message (queue offset 1000) ends past
    488: ``putMessagePositionInfo`` appends it at 20; the reput goes on at the last (T9/0) message's entry and then
    appends the damaged record's unit at 40.  5.3.3's ``ConsumeQueue.recover``, ``truncateDirtyLogicFiles`` and
    ``putMessagePositionInfo`` read as 5.5.1's (but a log line).  The broker's file, byte for byte; verify (no longer
    refused) replays TZ/0 from the planted file as the cut left it and predicts the units lost."""
    from broker_dledger_inside_light_scenarios import PAST_ONLY_TOPIC
    from broker_dledger_inside_only_past_held_scenarios import HELD_UNIT, kept_past_only_message
    name = f"{line}-dledger-abort-emptied-kept-embedded-to-entry-past-only-held"
    reput, msg = kept_past_only_message()
    r, w, src = _written(name)
    damaged = int(w["damagedRecord"])
    assert int(w["truncateDirtyLogicFilesAt"]) == reput < damaged, w   # the reput at processOffset (5.3.3)
    assert last_data_bytes(src, reput, len(msg)) == msg, "the message at processOffset"
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert int(data[0].name) == 0
    rec = data[0].read_bytes()[HELD_UNIT[0]:sum(HELD_UNIT[:2])]   # the planted unit's record: another queue's
    assert (int.from_bytes(rec[:4], "big"), int.from_bytes(rec[28:36], "big")) == HELD_UNIT[1::-1]
    assert PAST_ONLY_TOPIC.encode() not in rec
    queue = f"{PAST_ONLY_TOPIC}/0"
    (held_file,) = sorted((src / "before" / "consumequeue" / PAST_ONLY_TOPIC / "0").iterdir())
    held = held_file.read_bytes()
    assert cq_unit(held, 0) == HELD_UNIT and not any(held[20:])
    end = HELD_UNIT[0] + HELD_UNIT[1]
    assert w["queuesAfterLoad"]["T9/0"]["files"] == [] and int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == \
        reput, w["queuesAfterLoad"]["T9/0"]   # emptied by the 5.3.3 cut: its max processOffset sets the reput
    loaded = w["queuesAfterLoad"][queue]
    assert loaded["files"] == [held_file.name] and int(loaded["maxOffset"]) == 20 and \
        int(loaded["maxPhysicOffset"]) == end, loaded
    state = w["queuesAfterDispatch"][queue]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 60, state
    got = (src / "expected" / "consumequeue" / PAST_ONLY_TOPIC / "0" / held_file.name).read_bytes()
    size = struct.unpack(">i", last_data_bytes(src, damaged, 4))[0]
    assert [cq_unit(got, k) for k in (0, 20, 40)] == [HELD_UNIT, (reput, len(msg), 0), (damaged, size, 0)] and \
        not any(got[60:]), got[:60].hex()
    cuts = _capture_cuts(monkeypatch)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert cuts[0][(PAST_ONLY_TOPIC, 0)] == (end, True, 20, False), cuts
    placed = crash.cut.inside_placed
    (q,) = [q for q in placed.whole if (q.topic, q.queue_id) == (PAST_ONLY_TOPIC, 0)]
    assert (q.parsed_at, q.opened, q.put_back, q.copies) == ((20,), (), (damaged,), ()), q
    assert [u[:3] for u in q.units] == [(20, reput, len(msg)), (40, damaged, size)], q
    # the planted unit is no message's own (another queue's record, whose own unit the broker's queue holds too)
    _loses_as_the_broker(p, r, src, (reput,), extra=1, some=False)

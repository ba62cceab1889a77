"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside
an entry, parses a well-formed message for a batch queue (``BatchConsumeQueue``) only records past the walk's end go
to: the walk wrote no unit of it; and an ordinary or batch queue so, on disk before the walk (the queues kept),
the cut leaving it no file (``verify``'s prediction and plan).  Written by the published RocketMQ store through the
JVM harness in ``tests/broker/``: what the broker's restart wrote, ``rebuild --as-restart`` on the store as that
restart found it (byte for byte) and ``verify``'s units lost.  The scenarios:
:mod:`broker_dledger_inside_only_past_scenarios`; the ordinary queue's case not on disk:
:mod:`test_dledger_crash_inside_light_broker` (``-to-entry-past-only``).
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_files import last_data_bytes, replayed_files
from broker_dledger_runs import LINES, _inside_run, _restart_as_the_broker, _verify_loses_as_the_broker

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_parses_a_message_for_a_batch_queue_only_records_past_the_walk_went_to(
        line, tmp_path):
    """The -to-entry-past store (its damaged last message ends the walk; the message where the reput is set,
    processOffset - 1, ends at B9's entry) with that message (INNER_BASE 40, INNER_NUM 2) and the damaged one for the
    BatchCQ topic BZ, queue 0, which no other message goes to: the walk wrote no unit of it, the cut leaves it no
    file. BatchConsumeQueue.putBatchMessagePositionInfo (no queue offset check, past the max of a queue with no
    file) appends the parsed unit at 0 of the file getLastMappedFile creates, then, the reput going on at B9's entry,
    the damaged record's (its check reads no CRC) at 46. The rebuild reads the parsed message after the walk's
    records and before the records from where the reput goes on, so its own batch dispatch (assign_batch_positions:
    the same rule, in the same order) puts them there too: --as-restart writes the broker's files byte for byte,
    verify predicts the units lost."""
    from broker_dledger_inside_only_past_scenarios import (
        PAST_ONLY_BATCH_TOPIC,
        embedded_to_entry_past_only_batch_message,
    )
    from broker_dledger_inside_scenarios import BATCH_INNER
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-only-batch"
    reput, msg = embedded_to_entry_past_only_batch_message()
    r, w, src = _inside_run(name, reput, msg, damaged=True)   # the BZ/0 message from processOffset - 1 to B9's entry
    damaged = int(w["damagedRecord"])
    assert not (src / "before" / "batchconsumequeue" / PAST_ONLY_BATCH_TOPIC).exists()
    head = last_data_bytes(src, damaged, 64)
    size = struct.unpack(">i", head[:4])[0]
    state = w["queuesAfterDispatch"][f"{PAST_ONLY_BATCH_TOPIC}/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 92, state
    data = (src / "expected" / "batchconsumequeue" / PAST_ONLY_BATCH_TOPIC / "0" / f"{0:020d}").read_bytes()
    got = [struct.unpack(">qiqqqhii", data[i:i + 46]) for i in (0, 46)]
    assert got == [(reput, len(msg), 0, struct.unpack(">q", msg[56:64])[0], *BATCH_INNER[1], -1, 0),
                   (damaged, size, 0, struct.unpack(">q", head[56:64])[0], struct.unpack(">q", head[20:28])[0], 1,
                    -1, 0)], got
    assert data[92:] == bytes(len(data) - 92)
    _restart_as_the_broker(src, name, line, tmp_path, ext=False, batch=True)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_message_for_a_kept_queue_only_records_past_went_to(
        line, tmp_path, monkeypatch):
    """The -to-entry-past-only store with the queues kept (keepQueues): TZ/0 on disk before the walk, its one file
    holding the damaged record's unit only (past processOffset). ConsumeQueue.truncateDirtyLogicFiles deletes it and
    the 5.5.1 start (ConsumeQueue.correctMinOffset with no file) leaves its max -1: the parsed unit at 20000 after
    fillPreBlank units, the damaged record's (queue offset 0) appended at 20020 in the next file. verify on the store
    as that restart found it predicts the units lost, its plan replaying TZ/0 whole from that state
    (dledger_inside_walked.emptied_past_only): the broker's files byte for byte."""
    from broker_dledger_inside_light_scenarios import PAST_ONLY_TOPIC, embedded_to_entry_past_only_message
    from broker_dledger_inside_scenarios import TO_ENTRY_QUEUE_OFFSET
    from broker_dledger_runs import _loses_as_the_broker, _verify_with_plan
    from test_dledger_crash_inside_light_broker import past_only_queue_as_the_broker_wrote_it
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-only-kept"
    reput, msg = embedded_to_entry_past_only_message()
    r, w, src = _inside_run(name, reput, msg, damaged=True)
    damaged = int(w["damagedRecord"])
    (held_file,) = sorted((src / "before" / "consumequeue" / PAST_ONLY_TOPIC / "0").iterdir())   # on disk before
    held = held_file.read_bytes()
    assert struct.unpack(">q", held[:8])[0] == damaged and held[20:] == bytes(len(held) - 20)
    assert w["queuesAfterLoad"][f"{PAST_ONLY_TOPIC}/0"] == {"type": "ConsumeQueue", "maxOffset": 0, "files": [],
                                                            "maxPhysicOffset": -1}
    past_only_queue_as_the_broker_wrote_it(r, src, reput, len(msg))
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    (q,) = [q for q in crash.cut.inside_placed.whole if (q.topic, q.queue_id) == (PAST_ONLY_TOPIC, 0)]
    assert (q.parsed_at, q.put_back, q.lost) == ((TO_ENTRY_QUEUE_OFFSET * 20,), (damaged,), ()), q
    folder = src / "expected" / "consumequeue" / PAST_ONLY_TOPIC / "0"
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    assert replayed_files(q, size) == {int(f.name): f.read_bytes() for f in folder.iterdir()}
    _loses_as_the_broker(p, r, src, (reput,), some=False)   # the queues kept: none need be lost


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_drops_a_parsed_unit_of_a_kept_batch_queue_only_past_went_to(
        line, tmp_path, monkeypatch):
    """The -to-entry-past-only-batch store with the queues kept (keepQueues): BZ/0 on disk before the walk, its one
    file holding the damaged record's unit only (past processOffset). BatchConsumeQueue.truncateDirtyLogicFiles
    deletes it and leaves its max processOffset - 1, where the parsed message starts: putBatchMessagePositionInfo
    drops it (at the max), then appends the damaged record's unit at 0 of the file getLastMappedFile creates.
    verify on the store as that restart found it predicts the units lost, and its plan replays BZ/0 whole
    (:mod:`store_format.dledger_inside_replay_batch`): it opens file 0 and copies the damaged record's unit from 46
    (after the parsed one, in the rebuild's queue) to 0, the parsed one placed nowhere."""
    from broker_dledger_inside_only_past_scenarios import (
        PAST_ONLY_BATCH_TOPIC,
        embedded_to_entry_past_only_batch_message,
    )
    from broker_dledger_runs import _loses_as_the_broker, _verify_with_plan
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-only-batch-kept"
    reput, msg = embedded_to_entry_past_only_batch_message()
    r, w, src = _inside_run(name, reput, msg, damaged=True)
    damaged = int(w["damagedRecord"])
    (held_file,) = sorted((src / "before" / "batchconsumequeue" / PAST_ONLY_BATCH_TOPIC / "0").iterdir())
    assert struct.unpack(">q", held_file.read_bytes()[:8])[0] == damaged   # on disk before: the damaged record's
    assert w["queuesAfterLoad"][f"{PAST_ONLY_BATCH_TOPIC}/0"] == {
        "type": "BatchConsumeQueue", "maxOffset": 0, "files": [], "maxPhysicOffset": reput}
    state = w["queuesAfterDispatch"][f"{PAST_ONLY_BATCH_TOPIC}/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 46, state
    data = (src / "expected" / "batchconsumequeue" / PAST_ONLY_BATCH_TOPIC / "0" / f"{0:020d}").read_bytes()
    head = last_data_bytes(src, damaged, 64)
    assert struct.unpack(">qiqqqhii", data[:46]) == (damaged, struct.unpack(">i", head[:4])[0], 0,
                                                     struct.unpack(">q", head[56:64])[0],
                                                     struct.unpack(">q", head[20:28])[0], 1, -1, 0)
    assert data[46:] == bytes(len(data) - 46)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    (q,) = [q for q in placed.whole if (q.topic, q.queue_id) == (PAST_ONLY_BATCH_TOPIC, 0)]
    assert placed.units == () and placed.opened == ((PAST_ONLY_BATCH_TOPIC, 0, 0),) and \
        (q.parsed_at, q.opened, q.copies) == ((-1,), (0,), ((0, 46),)), placed
    _loses_as_the_broker(p, r, src, (reput,), some=False)   # the queues kept: none need be lost

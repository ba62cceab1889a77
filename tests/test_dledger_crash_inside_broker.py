"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput is set inside an
entry where the bytes form well-formed messages for queues the walk wrote, written by the published RocketMQ store
through the JVM harness in ``tests/broker/``: what the broker's restart wrote, ``rebuild --as-restart`` on the store as
that restart found it (byte for byte) and ``verify``'s units lost.  The stores are written with the others of
:mod:`broker_dledger_runs` (one pytest session); the other inside-entry cases are in :mod:`test_dledger_crash_broker`.
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_files import ext_units
from broker_dledger_runs import (
    LINES,
    _queued,
    _restart_as_the_broker,
    _same_files,
    _units_below_write,
    _verify,
    _verify_loses_as_the_broker,
    _written,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


def _batch_units(data: bytes) -> list[tuple[int, ...]]:
    """A batch consume queue file's units up to its first zero one: (offset, size, tags code, store time,
    msgBaseOffset, batchSize, compacted offset, reserved)."""
    out = []
    for i in range(0, len(data) - 45, 46):
        unit = struct.unpack(">qiqqqhii", data[i:i + 46])
        if not any(unit):
            break
        out.append(unit)
    return out


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_reput_parses_messages_for_a_batch_queue_the_walk_wrote(line, tmp_path):
    """The -emptied-batch-embedded store (the cut empties the batch queue B9/0, its max processOffset - 1, where
    the reput is set) with, there, two well-formed B9/0 messages (INNER_BASE 5 and 40, INNER_NUM 3 and 2), then 'x'
    bytes: BatchConsumeQueue.putBatchMessagePositionInfo drops the first, whose offset is the queue's max (no queue
    offset check), and appends the second at the write position the cut left, 0, in the file getLastMappedFile
    creates there (the full 13,800,000 bytes): its 46-byte unit holds its offset, size, tags code 0, store time,
    msgBaseOffset 40, batchSize 2, -1 and 0; B9's own unit stays cut. --as-restart writes the broker's files byte
    for byte, verify predicts the units lost."""
    from broker_dledger_inside_scenarios import BATCH_INNER, embedded_batch_messages
    name = f"{line}-dledger-abort-emptied-batch-embedded-batch"
    r, w, src = _written(name)
    reput, first, second = embedded_batch_messages()
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    assert w["queuesAfterLoad"]["B9/0"] == {"type": "BatchConsumeQueue", "maxOffset": 0, "files": [],
                                            "maxPhysicOffset": reput}, w["queuesAfterLoad"]["B9/0"]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    with data[-1].open("rb") as f:
        f.seek(reput - int(data[-1].name))
        assert f.read(len(first) + len(second) + 8) == first + second + b"x" * 8, "the B9/0 messages at the start"
    state = w["queuesAfterDispatch"]["B9/0"]
    assert state["files"] == ["00000000000000000000"] and int(state["maxOffset"]) == 46, state
    b9 = (src / "expected" / "batchconsumequeue" / "B9" / "0" / "00000000000000000000").read_bytes()
    assert len(b9) == 13_800_000
    store_time = struct.unpack(">q", second[56:64])[0]
    assert _batch_units(b9) == [(reput + len(first), len(second), 0, store_time, *BATCH_INNER[1], -1, 0)], \
        _batch_units(b9)
    _restart_as_the_broker(src, name, line, tmp_path, batch=True)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput + len(first),))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_reput_parses_a_message_for_a_light_queue_the_walk_wrote_with_ext_files(
        line, tmp_path):
    """The -emptied-batch-embedded-light store with enableConsumeQueueExt=true (ext files of 10 units): the T5/0 and
    %LMQ%q1 message where the reput is set (processOffset - 1) puts its own unit after an ext unit (its tags code
    that ext unit's address), and ConsumeQueue.multiDispatchLmqQueue its light unit by putMessagePositionInfo alone:
    no ext unit, the message's own tags code (0), appended at %LMQ%q1's write position as without ext files (the
    fourth unit); %LMQ%q1 gets no ext file. --as-restart writes the broker's files byte for byte (consume queue ext
    files too), verify predicts the units lost."""
    from broker_dledger_inside_scenarios import LIGHT_PUTS, embedded_light_message
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-ext"
    r, w, src = _written(name)
    reput, msg = embedded_light_message()
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == ["00000000000000000000"] and not state["extFiles"], state
    b = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / "00000000000000000000").read_bytes()
    units = [struct.unpack(">qiq", b[i:i + 20]) for i in range(0, int(state["maxOffset"]), 20)]
    assert len(units) == len(LIGHT_PUTS) + 1 and units[-1] == (reput, len(msg), 0), units
    own = w["queuesAfterDispatch"]["T5/0"]
    t5 = (src / "expected" / "consumequeue" / "T5" / "0" / own["files"][0]).read_bytes()
    assert own["extFiles"] and struct.unpack(">q", t5[12:20])[0] < 0, "T5/0's unit holds no ext address"
    _restart_as_the_broker(src, name, line, tmp_path, ext=True)
    _same_files(src / "expected", tmp_path / name, "batchconsumequeue")
    code, report = _verify(bh.copy_store(src / "before", tmp_path / "verify"), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    held = _units_below_write(w, src, (reput,))   # neither fillPreBlank nor the parsed ones
    sent = _queued(r["scenario"]) + len(LIGHT_PUTS) + 1   # a unit each, a light one more for four
    assert p["units_lost"] == sent - held > 0, (held, p["units_lost"], p["notes"])



@pytest.mark.parametrize("suffix", ["-earlier-ext", "-to-entry-earlier-ext"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_with_ext_files_whose_reput_parses_messages_for_queues_the_walk_wrote_in_its_earlier_file(
        line, suffix, tmp_path):
    """The -earlier and -to-entry-earlier stores (the walk over both data files, messageIndexSafe) with
    enableConsumeQueueExt (ext files of 10 units): the parsed T7/0 and T6/0 messages (-earlier; T7/0 written in the
    earlier data file only, T6/0's unit below processOffset there) and the parsed T6/0 one ending at B9's entry
    (-to-entry-earlier) each get an ext unit after every one the walk put for its queue, in both data files
    (ConsumeQueueExt.put at the ext write position: the walk's two T6/0 ext units, its cut one's too), their
    consume queue unit at the write position holding that ext unit's address; the reput going on at B9's entry
    (-to-entry-earlier) puts one more for the last T6/0 message (the same bytes as the walk's) before it drops
    that message's unit. --as-restart writes the broker's files byte for byte (consumequeue_ext/ too), verify
    predicts the units lost."""
    name = f"{line}-dledger-abort-emptied-batch-embedded{suffix}"
    r, w, src = _written(name)
    reput = int(w["truncateDirtyLogicFilesAt"]) - 1
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2 and int(data[1].name) <= reput, data
    msgs = r["scenario"]["messages"]
    parsed = {}   # per queue: the parsed message's consume queue unit (the second) and its ext unit
    for queue in ("T7/0", "T6/0") if suffix == "-earlier-ext" else ("T6/0",):
        topic = queue.split("/")[0]
        walked = sum(1 for m in msgs if m.get("topic") == topic)   # the walk's ext units of the queue
        cq = (src / "expected" / "consumequeue" / queue / f"{0:020d}").read_bytes()
        ext = ext_units((src / "expected" / "consumequeue_ext" / queue / f"{0:020d}").read_bytes())
        offset, _, tags = struct.unpack(">qiq", cq[20:40])
        assert reput <= offset and tags == -2**63 + 20 * walked, (queue, offset, tags)   # ext address: after the walk's
        assert cq[40:] == bytes(len(cq) - 40), f"{queue}: only the walk's unit below processOffset and the parsed one"
        again = 1 if suffix == "-to-entry-earlier-ext" else 0   # the reput's ext unit for the last T6/0 message
        assert len(ext) == walked + 1 + again and (not again or ext[-1] == ext[walked - 1]), (queue, ext)
        parsed[queue] = offset
    _restart_as_the_broker(src, name, line, tmp_path, ext=True)
    _verify_loses_as_the_broker(r, src, line, tmp_path, tuple(parsed.values()))

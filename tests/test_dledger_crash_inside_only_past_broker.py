"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside
an entry, parses a well-formed message for a batch queue (``BatchConsumeQueue``) only records past the walk's end go
to: the walk wrote no unit of it.  Written by the published RocketMQ store through the JVM harness in
``tests/broker/``: what the broker's restart wrote, ``rebuild --as-restart`` on the store as that restart found it
(byte for byte) and ``verify``'s units lost.  The scenarios: :mod:`broker_dledger_inside_only_past_scenarios`; the
ordinary queue's case: :mod:`test_dledger_crash_inside_light_broker` (``-to-entry-past-only``).
"""
from __future__ import annotations

import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_files import last_data_bytes
from broker_dledger_runs import _RUNS, LINES, _restart_as_the_broker, _verify_loses_as_the_broker

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
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    w, src = r["written"], Path(r["scenario"]["dir"])
    reput, msg = embedded_to_entry_past_only_batch_message()
    damaged = int(w["damagedRecord"])
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1 < damaged, (w["truncateDirtyLogicFilesAt"], damaged)
    assert last_data_bytes(src, reput, len(msg)) == msg, "the BZ/0 message from processOffset - 1 to B9's entry"
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

"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside
an entry, parses a well-formed message for a batch queue (``BatchConsumeQueue``) the walk wrote, beyond those of
:mod:`test_dledger_crash_inside_batch_broker`: one the walk wrote in an earlier data file only.  Written by the
published RocketMQ store through the JVM harness in ``tests/broker/``: what the broker's restart wrote,
``rebuild --as-restart`` on the store as that restart found it (byte for byte) and ``verify``'s units lost.  The
scenarios: :mod:`broker_dledger_inside_batch_scenarios`.
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_files import last_data_bytes
from broker_dledger_runs import (
    LINES,
    _restart_as_the_broker,
    _verify_loses_as_the_broker,
    _written,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_parses_a_message_for_a_batch_queue_written_in_an_earlier_file_only(
        line, tmp_path):
    """The -earlier-batch store with its last message to B9/0 instead of B7/0: the walk wrote B7/0's one unit (message
    10) in the first data file only. BatchConsumeQueue.truncateDirtyLogicFiles cuts nothing of it (that unit starts
    below processOffset): its max that unit's start, its write position 46; the B7/0 message where the reput is set
    (processOffset - 1, B9/0's max: the cut takes both B9/0 units) starts past that max, so
    putBatchMessagePositionInfo appends it at 46; the 'x' bytes after it send the reput past the rest. --as-restart
    writes the broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_scenarios import BATCH_INNER, embedded_earlier_batch_message
    name = f"{line}-dledger-abort-emptied-batch-embedded-earlier-batch-only"
    r, w, src = _written(name)
    reput, msg = embedded_earlier_batch_message()
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2 and int(data[1].name) <= reput, data
    assert last_data_bytes(src, reput, len(msg) + 8) == msg + b"x" * 8, "the B7/0 message at processOffset - 1"
    assert not (src / "before" / "batchconsumequeue" / "B7").exists()
    loaded = w["queuesAfterLoad"]["B7/0"]
    assert loaded["files"] == [f"{0:020d}"] and int(loaded["maxOffset"]) == 46, loaded
    state = w["queuesAfterDispatch"]["B7/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 92, state
    b7 = (src / "expected" / "batchconsumequeue" / "B7" / "0" / f"{0:020d}").read_bytes()
    first = struct.unpack(">qiqqqhii", b7[:46])
    assert first[0] < int(data[1].name) and first[4:6] == (0, 1), first   # the earlier data file's unit
    assert int(loaded["maxPhysicOffset"]) == first[0], loaded
    assert struct.unpack(">qiqqqhii", b7[46:92]) == (
        reput, len(msg), 0, struct.unpack(">q", msg[56:64])[0], *BATCH_INNER[1], -1, 0), b7[46:92].hex()
    assert b7[92:] == bytes(len(b7) - 92)
    assert w["queuesAfterDispatch"]["B9/0"]["files"] == [], w["queuesAfterDispatch"]["B9/0"]
    _restart_as_the_broker(src, name, line, tmp_path, batch=True)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))


@pytest.mark.parametrize("past", [False, True], ids=["", "past"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_puts_back_only_the_last_cut_unit_of_a_batch_queue(
        line, past, tmp_path):
    """The -to-entry store with its last message to B9/0 too (two B9/0 units cut) and, where the reput is set
    (processOffset - 1, B9/0's max), two B9/0 messages, the second's body running over the host record's tail and
    B9's entry up to its record's topic, so that it ends at the last message's entry (its topic and properties B9's
    record's, no INNER_BASE: the batch unit's msgBaseOffset its queue offset field, 7). putBatchMessagePositionInfo
    drops the first (at the max) and appends the second at 0 of a new file 0; the reput goes on at the last entry
    and dispatches the last B9/0 record again, appended at 46; B9's record, inside the parsed message, is not
    dispatched again (lost). ``past`` (-some-past): one more B9/0 message after it, damaged (the walk ends there,
    processOffset the same); the reput reaches it past the walk's end and appends it at 92 by the same rule.
    --as-restart writes the broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_batch_scenarios import (
        SOME_B9_PROPS,
        SOME_B9_SIZE,
        SOME_B9_TOPIC_AT,
        SOME_QUEUE_OFFSET,
        embedded_to_entry_batch_some_messages,
    )
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-batch-some{'-past' if past else ''}"
    r, w, src = _written(name)
    reput, first, head, size = embedded_to_entry_batch_some_messages()
    at = reput + len(first)
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    assert w["queuesAfterLoad"]["B9/0"] == {"type": "BatchConsumeQueue", "maxOffset": 0, "files": [],
                                            "maxPhysicOffset": reput}, w["queuesAfterLoad"]["B9/0"]
    assert last_data_bytes(src, reput, len(first) + len(head)) == first + head, "the B9/0 messages at processOffset - 1"
    b9_at = at + size - SOME_B9_SIZE
    b9 = last_data_bytes(src, b9_at, SOME_B9_SIZE)
    assert struct.unpack(">i", b9[:4])[0] == SOME_B9_SIZE and b9[SOME_B9_TOPIC_AT:SOME_B9_TOPIC_AT + 3] == b"\x02B9"
    assert b9[-len(SOME_B9_PROPS):] == SOME_B9_PROPS, b9
    last_at = at + size + 48   # the last B9/0 record, after its entry's header
    lasts = [last_at, last_at + 348] if past else [last_at]   # the damaged one after it, past the walk's end
    heads = [last_data_bytes(src, a, 64) for a in lasts]
    assert [struct.unpack(">i", h[:4])[0] for h in heads] == [300] * len(lasts), heads
    assert int(w["maxPhyOffset"]) == lasts[-1] + 300, w["maxPhyOffset"]
    n = 1 + len(lasts)
    state = w["queuesAfterDispatch"]["B9/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 46 * n, state
    assert int(state["maxPhysicOffset"]) == lasts[-1], state
    data = (src / "expected" / "batchconsumequeue" / "B9" / "0" / f"{0:020d}").read_bytes()
    units = [struct.unpack(">qiqqqhii", data[i:i + 46]) for i in range(0, 46 * n, 46)]
    assert units == [(at, size, 0, struct.unpack(">q", head[56:64])[0], SOME_QUEUE_OFFSET, 1, -1, 0),
                     *((a, 300, 0, struct.unpack(">q", h[56:64])[0], k, 1, -1, 0)
                       for k, (a, h) in enumerate(zip(lasts, heads), 1))], units
    assert data[46 * n:] == bytes(len(data) - 46 * n)
    _restart_as_the_broker(src, name, line, tmp_path, batch=True)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (at,))

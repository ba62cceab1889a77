"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside
an entry, parses well-formed messages for a batch queue (``BatchConsumeQueue``) the walk wrote, beyond those of
:mod:`test_dledger_crash_inside_batch_broker` and :mod:`test_dledger_crash_inside_batch_more_broker`: a parsed message
ending past every cut unit of the queue, the reput then reaching a record of it past the walk's end
(``-to-entry-batch-past-over``).  Written by the published RocketMQ store through the JVM harness in ``tests/broker/``:
what the broker's restart wrote, ``rebuild --as-restart`` on the store as that restart found it (byte for byte) and
``verify``'s units lost.  The scenarios: :mod:`broker_dledger_inside_batch_scenarios`.
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
def test_as_restart_after_a_crash_whose_reput_goes_on_past_every_cut_batch_unit_to_a_record_past_the_walk(
        line, tmp_path):
    """The -to-entry-batch-past store (B9's message and the last one, damaged, to B9/0: the walk ends at the damaged
    one, the cut takes B9's unit, processOffset - 1 B9/0's max) whose second B9/0 message where the reput is set runs
    over the host record's tail and B9's entry up to its record's topic, ending where B9's record ends.
    putBatchMessagePositionInfo drops the first (at the max) and appends the second at 0 of a new file 0; the reput
    goes on at the damaged message's entry, past B9's cut record (inside the parsed one: lost), and appends the
    damaged B9/0 record, past the walk's end, at 46 (its start past the max, no queue offset check).  --as-restart
    writes the broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_batch_scenarios import (
        SOME_B9_PROPS,
        SOME_B9_SIZE,
        SOME_B9_TOPIC_AT,
        SOME_QUEUE_OFFSET,
        embedded_to_entry_batch_some_messages,
    )
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-batch-past-over"
    r, w, src = _written(name)
    reput, first, head, size = embedded_to_entry_batch_some_messages(past=True)
    at = reput + len(first)
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    assert w["queuesAfterLoad"]["B9/0"] == {"type": "BatchConsumeQueue", "maxOffset": 0, "files": [],
                                            "maxPhysicOffset": reput}, w["queuesAfterLoad"]["B9/0"]
    assert last_data_bytes(src, reput, len(first) + len(head)) == first + head, "the B9/0 messages at processOffset - 1"
    b9_at = at + size - SOME_B9_SIZE   # B9's record, cut, inside the second parsed message
    b9 = last_data_bytes(src, b9_at, SOME_B9_SIZE)
    assert struct.unpack(">i", b9[:4])[0] == SOME_B9_SIZE and b9[SOME_B9_TOPIC_AT:SOME_B9_TOPIC_AT + 3] == b"\x02B9"
    assert b9[-len(SOME_B9_PROPS):] == SOME_B9_PROPS and reput + 1 <= b9_at, b9
    damaged = at + size + 48   # the damaged B9/0 record, after its entry's header: the walk's end
    assert int(w["damagedRecord"]) == damaged, w["damagedRecord"]
    dh = last_data_bytes(src, damaged, 64)
    assert struct.unpack(">i", dh[:4])[0] == 300 and int(w["maxPhyOffset"]) == damaged + 300, w["maxPhyOffset"]
    state = w["queuesAfterDispatch"]["B9/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 92, state
    assert int(state["maxPhysicOffset"]) == damaged, state
    data = (src / "expected" / "batchconsumequeue" / "B9" / "0" / f"{0:020d}").read_bytes()
    units = [struct.unpack(">qiqqqhii", data[i:i + 46]) for i in (0, 46)]
    assert units == [(at, size, 0, struct.unpack(">q", head[56:64])[0], SOME_QUEUE_OFFSET, 1, -1, 0),
                     (damaged, 300, 0, struct.unpack(">q", dh[56:64])[0], 1, 1, -1, 0)], units
    assert data[92:] == bytes(len(data) - 92)
    _restart_as_the_broker(src, name, line, tmp_path, batch=True)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (at,))


@pytest.mark.parametrize("past", [False, True], ids=["", "past"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_puts_cut_units_back_into_a_kept_batch_queue_left_elsewhere(
        line, past, tmp_path, monkeypatch):
    """The -batch-held-shifted store (B7/0's file planted with its unit of the last message before the host and one at
    the host record: the cut leaves write position 92, max the host record's start, where the walk's units alone
    would say 46) whose B7/0 message where the reput is set (processOffset - 1) ends at B9's entry: the parsed unit
    goes to 92 (its start past that max), then the reput goes on at B9's entry and dispatches B9's cut unit again
    (B9/0, the batch queue the cut emptied: at 0 of a new file) and the last B7/0 record's, cut: its start past the
    parsed one, no queue offset check, so it is appended at 138 (the walk had it at 92).  ``past``
    (-to-entry-past): one more B7/0 message after it, damaged (the walk ends there, processOffset the same), which
    the reput reaches past the walk's end and appends at 184 by the same rule.  verify on the store as that restart
    found it puts the parsed unit and the cut units where the broker did and predicts the units lost (none)."""
    from broker_dledger_inside_disk_batch_scenarios import (
        HELD_B7_HOST_UNIT,
        HELD_B7_UNIT,
        embedded_batch_held_to_entry_message,
    )
    from broker_dledger_inside_scenarios import BATCH_INNER, EMBED_HOST_AT, EMBED_HOST_BODY, TO_ENTRY_HOST_TAIL
    from broker_dledger_runs import _queued, _units_below_write, _verify_with_plan

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-batch-embedded-batch-held-shifted-to-entry{'-past' if past else ''}"
    r, w, src = _written(name)
    reput, msg = embedded_batch_held_to_entry_message()
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    assert last_data_bytes(src, reput, len(msg)) == msg and reput + len(msg) == host_end
    b9_at = host_end + 48   # B9's record (cut), after its entry's header
    b9_size = struct.unpack(">i", last_data_bytes(src, b9_at, 4))[0]
    lasts = [b9_at + b9_size + 48]   # the last B7/0 record (cut), then the damaged one past the walk's end
    if past:
        lasts.append(lasts[0] + 300 + 48)
        assert int(w["damagedRecord"]) == lasts[1], w["damagedRecord"]
    heads = [last_data_bytes(src, a, 64) for a in lasts]
    assert [struct.unpack(">i", h[:4])[0] for h in heads] == [300] * len(lasts), heads
    assert int(w["maxPhyOffset"]) == lasts[-1] + 300 and reput + 1 <= b9_at, w["maxPhyOffset"]
    (held_file,) = sorted((src / "before" / "batchconsumequeue" / "B7" / "0").iterdir())
    before = held_file.read_bytes()
    assert [struct.unpack(">qiqqqhii", before[k:k + 46]) for k in (0, 46)] == [HELD_B7_UNIT, HELD_B7_HOST_UNIT]
    assert not any(before[92:])
    loaded = w["queuesAfterLoad"]["B7/0"]
    assert loaded["files"] == [held_file.name] and int(loaded["maxOffset"]) == 92, loaded
    assert int(loaded["maxPhysicOffset"]) == EMBED_HOST_AT, loaded
    n = 1 + len(lasts)
    state = w["queuesAfterDispatch"]["B7/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 92 + 46 * n, state
    assert int(state["maxPhysicOffset"]) == lasts[-1], state
    b7 = (src / "expected" / "batchconsumequeue" / "B7" / "0" / held_file.name).read_bytes()
    stored = struct.unpack(">q", msg[56:64])[0]
    units = [struct.unpack(">qiqqqhii", b7[k:k + 46]) for k in range(92, 92 + 46 * n, 46)]
    assert b7[:92] == before[:92] and units == [
        (reput, len(msg), 0, stored, *BATCH_INNER[1], -1, 0),
        *((a, 300, 0, struct.unpack(">q", h[56:64])[0], struct.unpack(">q", h[20:28])[0], 1, -1, 0)
          for a, h in zip(lasts, heads))], units
    assert not any(b7[92 + 46 * n:])
    b9 = w["queuesAfterDispatch"]["B9/0"]
    assert b9["files"] == [f"{0:020d}"] and int(b9["maxOffset"]) == 46 and int(b9["maxPhysicOffset"]) == b9_at, b9
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    assert placed.units == (InsideUnit("B7", 0, 92, reput, len(msg), 0, True, stored, *BATCH_INNER[1]),), placed
    # B7/0 replayed whole (dledger_inside_replay_batch): the B7/0 cut unit, then the record past the walk's end,
    # after the parsed one (B9/0's goes back where the walk had it, at 0: the cut's own put back, no parsed unit there)
    (q,) = [q for q in placed.whole if (q.topic, q.queue_id) == ("B7", 0)]
    assert q.parsed_at == (92,) and [pos for pos, _source in q.copies] == [92 + 46 * k for k in range(1, n)], q
    held_units = _units_below_write(w, src, (reput,))   # neither fillPreBlank nor the parsed one
    # the one unit held at the host record is B7/0's planted one, no message's own (the host's own is not held)
    assert held_units - _units_below_write(w, src, (reput, EMBED_HOST_AT)) == 1
    # every unit sent is held (B7/0's and B9's cut ones put back, the one past the walk's end appended): none lost
    assert p["units_lost"] == _queued(r["scenario"]) - (held_units - 1) == 0, (held_units, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_parses_messages_for_a_batch_queue_emptied_from_a_later_file(
        line, tmp_path, monkeypatch):
    """The -batch store (two B9/0 messages where the reput is set, processOffset - 1) with batch consume queue files of
    460 bytes and B9/0's one file planted at queue byte 460 with B9's unit: the walk finds it there (unit 10),
    BatchConsumeQueue.truncateDirtyLogicFiles deletes that file (its first unit past processOffset), leaving B9/0 no
    file and its max processOffset - 1; the first parsed message is dropped (at the max), the second appended at 0 of
    the file getLastMappedFile(getMaxOffset() = 0) creates, not at 460 where the walk's unit stood.  verify on the
    store as that restart found it puts the parsed unit where the broker did and predicts the units lost."""
    from broker_dledger_inside_disk_batch_scenarios import PLANTED_B9_UNIT
    from broker_dledger_inside_scenarios import BATCH_INNER, embedded_batch_messages
    from broker_dledger_runs import _queued, _units_below_write, _verify_with_plan

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-batch-embedded-batch-planted-later"
    r, w, src = _written(name)
    reput, first, second = embedded_batch_messages()
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    assert last_data_bytes(src, reput, len(first) + len(second)) == first + second, \
        "the B9/0 messages at processOffset - 1"
    offset, size = PLANTED_B9_UNIT[:2]
    rec = last_data_bytes(src, offset, size)   # B9's record, past processOffset
    assert (int.from_bytes(rec[:4], "big"), int.from_bytes(rec[28:36], "big")) == (size, offset) and b"\x02B9" in rec
    assert offset > reput + 1
    (held_file,) = sorted((src / "before" / "batchconsumequeue" / "B9" / "0").iterdir())   # planted
    assert held_file.name == f"{460:020d}" and held_file.read_bytes() == struct.pack(">qiqqqhii", *PLANTED_B9_UNIT) \
        + bytes(460 - 46)
    assert w["queuesAfterLoad"]["B9/0"] == {"type": "BatchConsumeQueue", "maxOffset": 0, "files": [],
                                            "maxPhysicOffset": reput}, w["queuesAfterLoad"]["B9/0"]
    state = w["queuesAfterDispatch"]["B9/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 46, state
    b9 = (src / "expected" / "batchconsumequeue" / "B9" / "0" / f"{0:020d}").read_bytes()
    stored = struct.unpack(">q", second[56:64])[0]
    assert b9 == struct.pack(">qiqqqhii", reput + len(first), len(second), 0, stored, *BATCH_INNER[1], -1, 0) \
        + bytes(460 - 46), b9[:46].hex()
    assert not (src / "expected" / "batchconsumequeue" / "B9" / "0" / held_file.name).exists()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    assert placed.units == (InsideUnit("B9", 0, 0, reput + len(first), len(second), 0, True, stored,
                                       *BATCH_INNER[1]),) and placed.opened == (("B9", 0, 0),), placed
    held = _units_below_write(w, src, (reput + len(first),))
    assert p["units_lost"] == _queued(r["scenario"]) - held > 0, (held, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_message_for_a_kept_batch_queue_emptied_walked_earlier(
        line, tmp_path, monkeypatch):
    """The -earlier-batch-only-kept store (the walk wrote B7/0 in the first data file only) with B7/0's file planted
    with one unit past processOffset (the last message's record): the walk skips its B7/0 unit (at or below the
    loaded max), BatchConsumeQueue.truncateDirtyLogicFiles deletes the file (its first unit past processOffset),
    leaving B7/0 no file and its max processOffset - 1, so the B7/0 message where the reput is set (processOffset - 1)
    is dropped: B7/0 keeps no file.  verify on the store as that restart found it places no unit and predicts the
    units lost."""
    from broker_dledger_inside_disk_batch_scenarios import EMPTIED_B7_UNIT
    from broker_dledger_inside_scenarios import embedded_earlier_batch_message
    from broker_dledger_runs import _queued, _units_below_write, _verify_with_plan
    name = f"{line}-dledger-abort-emptied-batch-embedded-earlier-batch-only-kept-emptied"
    r, w, src = _written(name)
    reput, msg = embedded_earlier_batch_message()
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2 and last_data_bytes(src, reput, len(msg) + 8) == msg + b"x" * 8
    offset, size = EMPTIED_B7_UNIT[:2]
    rec = last_data_bytes(src, offset, size)   # the last message's record (B9/0), past processOffset
    assert (int.from_bytes(rec[:4], "big"), int.from_bytes(rec[28:36], "big")) == (size, offset) and offset > reput
    (held_file,) = sorted((src / "before" / "batchconsumequeue" / "B7" / "0").iterdir())   # planted
    before = held_file.read_bytes()
    assert before[:46] == struct.pack(">qiqqqhii", *EMPTIED_B7_UNIT) and not any(before[46:])
    loaded = w["queuesAfterLoad"]["B7/0"]
    assert loaded["files"] == [] and int(loaded["maxPhysicOffset"]) == reput, loaded
    state = w["queuesAfterDispatch"]["B7/0"]
    assert state["files"] == [] and int(state["maxPhysicOffset"]) == reput, state
    assert not (src / "expected" / "batchconsumequeue" / "B7" / "0").is_dir() or \
        not any((src / "expected" / "batchconsumequeue" / "B7" / "0").iterdir())
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    assert placed.units == () and placed.opened == (), placed
    held = _units_below_write(w, src, (reput,))
    assert p["units_lost"] == _queued(r["scenario"]) - held > 0, (held, p["units_lost"], p["notes"])

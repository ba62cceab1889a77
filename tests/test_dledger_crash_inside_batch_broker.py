"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside
an entry, parses well-formed messages there and then goes on at an entry's start, dispatching the cut units of a
queue the walk wrote again after the parsed ones: a batch queue (``BatchConsumeQueue``) and, with consume queue ext
files, a consume queue the 5.5.1 cut left with no file.  Written by the published RocketMQ
store through the JVM harness in ``tests/broker/``: what the broker's restart wrote, ``rebuild --as-restart`` on the
store as that restart found it (byte for byte) and ``verify``'s units lost.  The broker writes every store once a
pytest session (:mod:`broker_dledger_runs`); the other inside-entry cases: :mod:`test_dledger_crash_inside_broker`,
:mod:`test_dledger_crash_inside_queues_broker`.
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_files import cq_unit, last_data_bytes
from broker_dledger_runs import (
    LINES,
    _queued,
    _restart_as_the_broker,
    _units_below_write,
    _verify_loses_as_the_broker,
    _written,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_puts_a_cut_batch_unit_back_after_parsed_ones(line, tmp_path):
    """The -to-entry store with, where the reput is set (processOffset - 1, the max the cut leaves B9/0, the batch
    queue it empties), two well-formed B9/0 messages (INNER_BASE 5 and 40), the second ending at B9's entry:
    BatchConsumeQueue.putBatchMessagePositionInfo drops the first (its offset is the max) and appends the second at
    0, in the file getLastMappedFile creates; the reput goes on at B9's entry and dispatches B9's cut record again:
    its start lies past the max (the second's), no queue offset check, so its unit (msgBaseOffset 0, batchSize 1)
    is appended at 46, not at 0 where the walk had it; the cut T0/0 unit goes back where it was. --as-restart
    writes the broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_scenarios import (
        BATCH_INNER,
        EMBED_HOST_AT,
        EMBED_HOST_BODY,
        TO_ENTRY_HOST_TAIL,
        embedded_to_entry_batch_messages,
    )
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-batch"
    r, w, src = _written(name)
    reput, first, second = embedded_to_entry_batch_messages()
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    assert w["queuesAfterLoad"]["B9/0"] == {"type": "BatchConsumeQueue", "maxOffset": 0, "files": [],
                                            "maxPhysicOffset": reput}, w["queuesAfterLoad"]["B9/0"]
    assert last_data_bytes(src, reput, len(first) + len(second)) == first + second, \
        "the B9/0 messages at processOffset - 1"
    b9_at = host_end + 48   # B9's record, after its entry's header
    b9 = last_data_bytes(src, b9_at, 64)
    b9_size, b9_queue_offset, b9_stored = struct.unpack(">i", b9[:4])[0], *struct.unpack(">q", b9[20:28]), \
        struct.unpack(">q", b9[56:64])[0]
    state = w["queuesAfterDispatch"]["B9/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 92, state
    assert int(state["maxPhysicOffset"]) == b9_at, state
    data = (src / "expected" / "batchconsumequeue" / "B9" / "0" / f"{0:020d}").read_bytes()
    units = [struct.unpack(">qiqqqhii", data[i:i + 46]) for i in (0, 46)]
    second_stored = struct.unpack(">q", second[56:64])[0]
    assert units == [(reput + len(first), len(second), 0, second_stored, *BATCH_INNER[1], -1, 0),
                     (b9_at, b9_size, 0, b9_stored, b9_queue_offset, 1, -1, 0)], units
    assert data[92:] == bytes(len(data) - 92)
    _restart_as_the_broker(src, name, line, tmp_path, ext=False, batch=True)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput + len(first),))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_with_ext_files_after_a_crash_whose_reput_puts_a_cut_unit_back_in_a_queue_left_no_file(
        line, tmp_path):
    """The -to-entry-emptied store (T8/0, a topic of its own, the 5.5.1 cut leaving it no file) with
    enableConsumeQueueExt (ext files of 10 units): the cut leaves T8/0's ext file and the walk's ext unit of its cut
    record; the parsed message (queue offset 13) puts its ext unit after it (ConsumeQueueExt.put) and its unit in
    file 220, two fillPreBlank units before it, holding that ext unit's address (ordinal 1); the reput, going on at
    B9's entry, puts the cut record's ext unit again (the walk's bytes, ordinal 2) and appends its unit after the
    parsed one, holding that address. --as-restart writes the broker's files byte for byte (consumequeue_ext/ too),
    verify predicts the units lost."""
    from broker_dledger_inside_scenarios import (
        EMBED_HOST_AT,
        EMBED_HOST_BODY,
        EMBED_OWN_QUEUE_OFFSET,
        TO_ENTRY_HOST_TAIL,
    )
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-emptied-ext"
    r, w, src = _written(name)
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    reput = int(w["truncateDirtyLogicFilesAt"]) - 1
    tail = int(w["maxPhyOffset"]) - 300   # the last T8/0 message (300 bytes), the log's last
    loaded = w["queuesAfterLoad"]["T8/0"]
    assert loaded["files"] == [] and int(loaded["maxPhysicOffset"]) == -1, loaded
    assert loaded["extFiles"] == [f"{0:020d}"] and int(loaded["extMaxOffset"]) == 20, loaded
    state = w["queuesAfterDispatch"]["T8/0"]
    at = EMBED_OWN_QUEUE_OFFSET * 20
    assert state["files"] == [f"{at - at % size:020d}"] and int(state["maxOffset"]) == at + 40, state
    assert state["extFiles"] == [f"{0:020d}"] and int(state["extMaxOffset"]) == 60, state
    held = (src / "expected" / "consumequeue" / "T8" / "0" / state["files"][0]).read_bytes()
    assert [cq_unit(held, k) for k in (at % size, at % size + 20)] == [
        (reput, host_end - reput, -2**63 + 20), (tail, 300, -2**63 + 40)], held.hex()
    ext = (src / "expected" / "consumequeue_ext" / "T8" / "0" / f"{0:020d}").read_bytes()
    units = [ext[i:i + 20] for i in range(0, 60, 20)]
    parsed_stored = struct.unpack(">q", last_data_bytes(src, reput, 64)[56:64])[0]
    assert units[2] == units[0] and units[1] == struct.pack(">hqqh", 20, 0, parsed_stored, 0), units
    assert ext[60:] == bytes(len(ext) - 60)
    _restart_as_the_broker(src, name, line, tmp_path, ext=True, batch=True)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))


@pytest.mark.parametrize("line", bh.params_or_skip([ln for ln in LINES if ln.startswith("5.3")],
                                                   "5.3.3 only: DLEDGER_LINES=4.9.8,5.3.3,5.5.1"))
def test_verify_predicts_a_crash_restart_whose_reput_puts_a_cut_unit_back_in_a_queue_the_533_cut_emptied(
        line, tmp_path, monkeypatch):
    """The -emptied-kept-embedded-own store on 5.3.3 (the queues kept) with the T9/0 message at processOffset (queue
    offset 13) ending where the last message's (T9/0's) entry starts: the 5.3.3 cut deletes T9/0's files and keeps
    its max at processOffset, so the parsed unit gets file 220, two fillPreBlank units before it (getLastMappedFile
    on no file), and the reput, going on at that entry, dispatches the cut T9/0 unit (queue offset 0: no "build
    consume queue repeatedly" check) again: past the max the parsed unit left, appended after it at 280, not at 0
    where the walk had it. verify on the store as that restart found it predicts the units lost, and its plan puts
    both units where the broker did."""
    from broker_dledger_inside_scenarios import (
        EMBED_HOST_AT,
        EMBED_HOST_BODY,
        EMBED_OWN_QUEUE_OFFSET,
        EMBED_PROCESS_OFFSET,
        TO_ENTRY_HOST_TAIL,
    )
    from broker_dledger_runs import _verify_with_plan

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-kept-embedded-own-to-entry"
    r, w, src = _written(name)
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    reput = EMBED_PROCESS_OFFSET
    assert int(w["truncateDirtyLogicFilesAt"]) == reput, w["truncateDirtyLogicFilesAt"]
    assert struct.unpack(">i", last_data_bytes(src, reput, 4))[0] == host_end - reput, \
        "the T9/0 message at processOffset"
    last = host_end + 48   # the last T9/0 message, after its entry's header
    last_size = struct.unpack(">i", last_data_bytes(src, last, 4))[0]
    loaded = w["queuesAfterLoad"]["T9/0"]
    assert loaded["files"] == [] and int(loaded["maxPhysicOffset"]) == reput, loaded
    state = w["queuesAfterDispatch"]["T9/0"]
    at = EMBED_OWN_QUEUE_OFFSET * 20
    first = at - at % size
    assert state["files"] == [f"{first:020d}"] and int(state["maxOffset"]) == at + 40, state
    held = (src / "expected" / "consumequeue" / "T9" / "0" / state["files"][0]).read_bytes()
    blank = struct.pack(">qiq", 0, 2**31 - 1, 0)
    assert held == blank * (at % size // 20) + struct.pack(">qiq", reput, host_end - reput, 0) + \
        struct.pack(">qiq", last, last_size, 0) + bytes(size - at % size - 40), held.hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    assert placed.units == (InsideUnit("T9", 0, at, reput, host_end - reput, 0),), placed
    (q,) = [w for w in placed.whole if (w.topic, w.queue_id) == ("T9", 0)]   # replayed whole
    # the cut unit (queue byte 0 of the walk's queue) appended after the parsed one
    assert q.copies == ((at + 20, 0),) and placed.opened == (("T9", 0, first),), placed
    count = _units_below_write(w, src, (reput,))   # neither fillPreBlank nor the parsed one
    # none lost: the one cut unit comes back (at 280); left cut (the refusal's old worst case) it would be one
    assert p["units_lost"] == _queued(r["scenario"]) - count == 0, (count, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_reaches_a_batch_record_past_the_walk_after_parsed_ones(
        line, tmp_path):
    """The -to-entry-batch store with its last message for B9/0 too and damaged (a body byte flipped): the walk ends
    there, so processOffset and the reput's start are those of -emptied-batch-embedded, where the two B9/0 messages
    lie. The first is dropped (at the max), the second goes to 0 of a new file 0; the reput goes on at B9's entry,
    appends B9's cut unit at 46 and then, its check reading no CRC, the damaged B9/0 record past the walk's end at 92
    (putBatchMessagePositionInfo: past the max, no queue offset check). --as-restart writes the broker's files byte
    for byte, verify predicts the units lost."""
    from broker_dledger_inside_scenarios import (
        BATCH_INNER,
        EMBED_HOST_AT,
        EMBED_HOST_BODY,
        EMBED_PROCESS_OFFSET,
        TO_ENTRY_HOST_TAIL,
        embedded_to_entry_batch_messages,
    )
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-batch-past"
    r, w, src = _written(name)
    reput, first, second = embedded_to_entry_batch_messages(past=True)
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    assert int(w["truncateDirtyLogicFilesAt"]) == EMBED_PROCESS_OFFSET == reput + 1, w["truncateDirtyLogicFilesAt"]
    assert last_data_bytes(src, reput, len(first) + len(second)) == first + second, \
        "the B9/0 messages at processOffset - 1"
    units = []
    for at in (host_end + 48, int(w["maxPhyOffset"]) - 300):   # B9's record, then the damaged one (the log's last)
        head = last_data_bytes(src, at, 64)
        units.append((at, struct.unpack(">i", head[:4])[0], 0, struct.unpack(">q", head[56:64])[0],
                      struct.unpack(">q", head[20:28])[0], 1, -1, 0))
    assert units[1][1] == 300, units
    state = w["queuesAfterDispatch"]["B9/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 138, state
    data = (src / "expected" / "batchconsumequeue" / "B9" / "0" / f"{0:020d}").read_bytes()
    got = [struct.unpack(">qiqqqhii", data[i:i + 46]) for i in (0, 46, 92)]
    assert got == [(reput + len(first), len(second), 0, struct.unpack(">q", second[56:64])[0], *BATCH_INNER[1], -1, 0),
                   *units], got
    assert data[138:] == bytes(len(data) - 138)
    _restart_as_the_broker(src, name, line, tmp_path, ext=False, batch=True)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput + len(first),))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_parses_a_message_for_a_batch_queue_held_in_an_earlier_file(
        line, tmp_path):
    """The -earlier walk (both data files walked, the cut still happening) with a second BatchCQ topic, B7: message
    10 of the first data file and a last message after B9's go to B7/0. BatchConsumeQueue.truncateDirtyLogicFiles
    keeps B7/0's unit of the earlier data file (its max that unit's start, the write position 46) and cuts the last
    one; the B7/0 message where the reput is set (processOffset - 1, B9/0's max) starts past that max, so it is
    appended at 46, over the cut unit's bytes; the 'x' bytes after it send the reput past the rest. --as-restart
    writes the broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_scenarios import BATCH_INNER, embedded_earlier_batch_message
    name = f"{line}-dledger-abort-emptied-batch-embedded-earlier-batch"
    r, w, src = _written(name)
    reput, msg = embedded_earlier_batch_message()
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2 and int(data[1].name) <= reput, data
    assert last_data_bytes(src, reput, len(msg) + 8) == msg + b"x" * 8, "the B7/0 message at processOffset - 1"
    before = (src / "before" / "batchconsumequeue" / "B7" / "0" / f"{0:020d}")
    state = w["queuesAfterDispatch"]["B7/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 92, state
    b7 = (src / "expected" / "batchconsumequeue" / "B7" / "0" / f"{0:020d}").read_bytes()
    first = struct.unpack(">qiqqqhii", b7[:46])
    assert first[0] < int(data[1].name) and first[4:6] == (0, 1), first   # the earlier data file's unit
    assert struct.unpack(">qiqqqhii", b7[46:92]) == (
        reput, len(msg), 0, struct.unpack(">q", msg[56:64])[0], *BATCH_INNER[1], -1, 0), b7[46:92].hex()
    assert b7[92:] == bytes(len(b7) - 92) and not before.exists()
    _restart_as_the_broker(src, name, line, tmp_path, batch=True)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_parses_messages_for_a_kept_batch_queue_the_cut_emptied(
        line, tmp_path, monkeypatch):
    """The -emptied-batch-embedded-batch store with the queues kept (keepQueues): B9/0, on disk before the walk with
    its one unit, is emptied by BatchConsumeQueue.truncateDirtyLogicFiles (its file deleted, its max processOffset -
    1) as if the walk had built it: of the two B9/0 messages where the reput is set the first (at the max) is
    dropped and the second appended at 0 in the file getLastMappedFile creates. verify on the store as that
    restart found it predicts the units lost, and its plan puts the parsed unit where the broker did."""
    from broker_dledger_inside_scenarios import BATCH_INNER, embedded_batch_messages

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-batch-embedded-batch-kept"
    r, w, src = _written(name)
    reput, first, second = embedded_batch_messages()
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    (held_file,) = sorted((src / "before" / "batchconsumequeue" / "B9" / "0").iterdir())   # on disk before
    assert struct.unpack(">q", held_file.read_bytes()[:8])[0] > reput
    assert w["queuesAfterLoad"]["B9/0"] == {"type": "BatchConsumeQueue", "maxOffset": 0, "files": [],
                                            "maxPhysicOffset": reput}, w["queuesAfterLoad"]["B9/0"]
    assert last_data_bytes(src, reput, len(first) + len(second)) == first + second, \
        "the B9/0 messages at processOffset - 1"
    state = w["queuesAfterDispatch"]["B9/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 46, state
    b9 = (src / "expected" / "batchconsumequeue" / "B9" / "0" / f"{0:020d}").read_bytes()
    stored = struct.unpack(">q", second[56:64])[0]
    assert struct.unpack(">qiqqqhii", b9[:46]) == (reput + len(first), len(second), 0, stored, *BATCH_INNER[1],
                                                   -1, 0), b9[:46].hex()
    assert b9[46:] == bytes(len(b9) - 46)
    from broker_dledger_runs import _verify_with_plan
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    assert placed.units == (InsideUnit("B9", 0, 0, reput + len(first), len(second), 0, True, stored,
                                       *BATCH_INNER[1]),) and placed.opened == (("B9", 0, 0),), placed
    held = _units_below_write(w, src, (reput + len(first),))
    assert p["units_lost"] == _queued(r["scenario"]) - held > 0, (held, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_message_for_a_kept_batch_queue_the_cut_left_a_unit(
        line, tmp_path, monkeypatch):
    """The -emptied-batch-embedded store with the queues kept (keepQueues) and a second BatchCQ topic, B7: the last
    message before the host (below processOffset, in the last data file) and a last one after B9's go to B7/0, on
    disk before the walk; BatchConsumeQueue.truncateDirtyLogicFiles keeps its first unit (the max that unit's start,
    the write position 46) and cuts the last; the B7/0 message where the reput is set (processOffset - 1, B9/0's
    max) starts past that max and is appended at 46, over the cut unit's bytes. verify on the store as that restart
    found it predicts the units lost, and its plan puts the parsed unit where the broker did."""
    from broker_dledger_inside_scenarios import BATCH_INNER, embedded_earlier_batch_message
    from broker_dledger_runs import _verify_with_plan

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-batch-embedded-batch-held"
    r, w, src = _written(name)
    reput, msg = embedded_earlier_batch_message()
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    assert last_data_bytes(src, reput, len(msg) + 8) == msg + b"x" * 8, "the B7/0 message at processOffset - 1"
    (held_file,) = sorted((src / "before" / "batchconsumequeue" / "B7" / "0").iterdir())   # on disk before
    before = held_file.read_bytes()
    u0, u1 = struct.unpack(">q", before[:8])[0], struct.unpack(">q", before[46:54])[0]
    assert u0 < reput < u1 and before[92:] == bytes(len(before) - 92), (u0, u1)
    assert w["queuesAfterLoad"]["B7/0"]["files"] == [held_file.name], w["queuesAfterLoad"]["B7/0"]
    assert int(w["queuesAfterLoad"]["B7/0"]["maxPhysicOffset"]) == u0, w["queuesAfterLoad"]["B7/0"]
    state = w["queuesAfterDispatch"]["B7/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 92, state
    b7 = (src / "expected" / "batchconsumequeue" / "B7" / "0" / held_file.name).read_bytes()
    stored = struct.unpack(">q", msg[56:64])[0]
    assert b7[:46] == before[:46] and struct.unpack(">qiqqqhii", b7[46:92]) == (
        reput, len(msg), 0, stored, *BATCH_INNER[1], -1, 0), b7[:92].hex()
    assert b7[92:] == bytes(len(b7) - 92)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    assert placed.units == (InsideUnit("B7", 0, 46, reput, len(msg), 0, True, stored, *BATCH_INNER[1]),) and \
        placed.opened == (), placed
    held = _units_below_write(w, src, (reput,))   # neither fillPreBlank units nor the parsed one
    assert p["units_lost"] == _queued(r["scenario"]) - held > 0, (held, p["units_lost"], p["notes"])

"""``verify`` of a 5.5.1 DLedger crash store past 2 GiB whose recovery walk dispatches nothing and whose start's reput
the cut sets at 2147483647, inside an entry, where its check parses a message that also goes to a light queue the
store holds files of that the cut empties, checked against the broker (``DLEDGER_2GIB=1`` only: some 2.15 GB of data
files, as much again in ``before/``; minutes).

``5.5.1-dledger-abort-propcrc-kept-past-2gib-embedded-light-emptied`` (:func:`light_emptied_scenario`): the
``-embedded-light`` store (:func:`test_dledger_walked_nothing_2gib_parsed_broker.embedded_light_scenario`: the T5/0
message at 2147483647 also going to ``%LMQ%q1`` at light queue offset 2) whose last T9 message also goes to
``%LMQ%q1`` (light queue offset 0; its body shorter by the properties that adds: the same layout), so the running
broker wrote that light queue before the crash (``keepQueues``): one unit, past the 22nd data file's start.
``dledgerRecoverAbnormally`` walks nothing and ``truncateDirtyLogicFiles`` at the 22nd data file's start
(``ConsumeQueueStore.truncateDirty``: every loaded queue, the light one too) deletes the light queue's only file;
the start's ``recoverOffsetTable`` runs ``correctMinOffset`` on every loaded queue, light ones too, which gives the
emptied one the max -1, as an own queue's (``-embedded-t7-emptied``).  ``doRecheckReputOffsetFromCq`` sets the reput
at 2147483647 (T9's ``fillPreBlank`` unit), where ``DLedgerCommitLog``'s check parses the T5 message:
``putMessagePositionInfoWrapper`` puts T5/0's unit (a new queue: at 0), then ``multiDispatchLmqQueue`` the light unit
onto the loaded, emptied ``%LMQ%q1`` (``findConsumeQueue``) by ``putMessagePositionInfo`` from no file and max -1:
``getLastMappedFile`` creates the queue's first file, ``fillPreBlank`` units up to light queue offset 2's place, the
unit there.  Its next check fails on the body's 'x' bytes and it jumps to the log's end: every unit of the 22nd data
file stays lost, the last T9 message's light unit too.

The broker's queues after ``load()`` and after the reput, the ``%LMQ%q1`` file before and after the restart and the
index are asserted first; then ``verify`` on the store as the restart found it predicts that restart (units lost, none
put again, the one index key) and its plan replays ``%LMQ%q1`` from the state the cut left
(``QueueCut.inside_placed``, :func:`store_format.dledger_walked_nothing._placed_on_disk`): the light unit where the
broker put it, the queue's file the broker's byte for byte.
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    EMBED_AT_BODY_DATA,
    LINE,
    NEEDS_2GIB,
    held_units,
    queued_messages,
    t0_record_at_2147483647,
    written,
)
from broker_dledger_walked_nothing_inside_scenarios import PAST_2GIB_T9_LAST
from test_dledger_walked_nothing_2gib_broker import _index_keys, _verify
from test_dledger_walked_nothing_2gib_light_disk_broker import CUT_T0, _units, _with_light
from test_dledger_walked_nothing_2gib_parsed_broker import (
    LIGHT,
    LIGHT_QUEUE_OFFSET,
    embedded_light_scenario,
    light_message,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()


def light_emptied_scenario(line: str = LINE) -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-embedded-light-emptied``: above."""
    sc = embedded_light_scenario(line)
    *rest, last = sc["messages"]
    return {**sc, "name": f"{sc['name']}-emptied", "messages": [*rest, _with_light(last, 0)]}


def test_verify_predicts_a_message_for_a_light_queue_the_cut_emptied_parsed_at_2147483647(tmp_path,
                                                                                         monkeypatch) -> None:
    """What the broker wrote first (the light queue before the restart: the last T9 message's light unit only; after
    ``load()`` no file, max -1; after the reput a new file at 0, :data:`LIGHT_QUEUE_OFFSET` ``fillPreBlank`` units,
    the parsed light unit at its light queue offset's place; T5/0 created; T0 and T9 as ``load()`` left them; E5
    indexed once); then verify predicts the reput set at 2147483647 parsing the message and going on at the log's
    end (every unit of the 22nd data file lost, the last T9 message's light unit too, none put again, the one index
    key, each loaded queue's write position and max as the load left them) and its plan's ``%LMQ%q1`` is the
    broker's file."""
    sc = light_emptied_scenario()
    w, src = written(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 22 and cut == int(data[-1].name) < BLANK_MAX < PAST_2GIB_T9_LAST < end, (cut, end)
    msg = light_message()
    record = t0_record_at_2147483647(src)
    assert record[88 + EMBED_AT_BODY_DATA:88 + EMBED_AT_BODY_DATA + len(msg)] == msg, "the bytes at 2147483647"
    name = f"{LIGHT}/0"
    before = (src / "before" / "consumequeue" / LIGHT / "0" / f"{0:020d}").read_bytes()
    assert _units(before, 2) == [(PAST_2GIB_T9_LAST, 193, 0), (0, 0, 0)], "written before the crash"
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    assert set(loaded) == {"T0/0", "T9/0", name}, loaded
    assert int(loaded["T9/0"]["maxPhysicOffset"]) == BLANK_MAX and int(loaded["T9/0"]["maxOffset"]) == 20, loaded
    # the cut deleted the light queue's only file; correctMinOffset reset its max to -1
    assert loaded[name]["files"] == [] and int(loaded[name]["maxPhysicOffset"]) == -1, loaded[name]
    assert set(after) == {"T0/0", "T9/0", "T5/0", name}, after
    assert after["T0/0"] == loaded["T0/0"] and after["T9/0"] == loaded["T9/0"], after   # no cut unit put back
    unit = (BLANK_MAX, len(msg), 0)
    t5 = (src / "expected" / "consumequeue" / "T5" / "0" / f"{0:020d}").read_bytes()
    assert _units(t5, 1) == [unit] and not any(t5[20:]), t5[:40].hex()
    # putMessagePositionInfo from no file and max -1: a new file at 0, fillPreBlank units, the unit at offset 2's place
    at = 20 * LIGHT_QUEUE_OFFSET
    light = (src / "expected" / "consumequeue" / LIGHT / "0" / f"{0:020d}").read_bytes()
    assert after[name]["files"] == [f"{0:020d}"], after[name]
    assert (int(after[name]["maxOffset"]), int(after[name]["maxPhysicOffset"])) == (at + 20, BLANK_MAX + len(msg))
    assert _units(light, LIGHT_QUEUE_OFFSET + 1) == [(0, BLANK_MAX, 0)] * LIGHT_QUEUE_OFFSET + [unit], light[:80].hex()
    assert not any(light[at + 20:]), light[:80].hex()
    assert _index_keys(src) == 1, "E5 indexed, once"
    p, note, crash = _verify(src, tmp_path, monkeypatch)
    # the reference's units: each queued message's and the last T9 message's light unit; the broker's queues hold
    # theirs but the parsed message's two (T5's left out, the light one no message's)
    lost = queued_messages(sc) + 1 - (held_units(src, ends=after, leave_out="T5") - 1)
    assert p["units_lost"] == lost == CUT_T0 + 3 and p["units_dispatched_again"] == 0, (p["units_lost"], lost, note)
    assert p["index_keys_put_again"] == 1, (p["index_keys_put_again"], p["notes"])
    # each queue as the broker's load left it after the cut: the emptied light queue with no file, max -1 (5.5.1)
    listed = {q["queue"]: (q["write_position"], q["max_physic_offset"]) for q in p["queues"]}
    assert {q: listed.get(q) for q in loaded} == {
        q: (int(s["maxOffset"]), int(s["maxPhysicOffset"])) for q, s in loaded.items()}, (listed, loaded)
    assert "where its check parses 1 message(s), then fails" in note and f"getData hands, {end};" in note, note
    assert crash.walked_nothing and crash.process_offset == cut and crash.reput_from == end, crash
    assert crash.cut is not None and crash.cut.inside_from == BLANK_MAX and crash.gap == (cut, end), crash
    assert crash.cut.inside_records == ((BLANK_MAX, BLANK_MAX + len(msg)),) and crash.inside_keys == (BLANK_MAX,)
    assert crash.cut.held_emptied == frozenset({(LIGHT, 0)}), crash.cut.held_emptied
    # the plan: %LMQ%q1 replayed from no file and max -1; its file is the broker's
    (q,) = crash.cut.inside_placed.whole
    assert (q.topic, q.queue_id, q.opened, q.blank_until, q.parsed_at) == (LIGHT, 0, (0,), at, (at,)), q
    assert q.units == ((at, *unit),) and not q.copies and not q.put_back, q
    planned = bytearray(len(light))
    planned[:at] = struct.pack(">qiq", 0, BLANK_MAX, 0) * LIGHT_QUEUE_OFFSET
    for pos, *u in q.units:
        planned[pos:pos + 20] = struct.pack(">qiq", *u)
    bh.same_bytes(light, bytes(planned), f"consumequeue/{name}/{0:020d}")

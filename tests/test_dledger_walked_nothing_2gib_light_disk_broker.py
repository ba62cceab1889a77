"""``verify`` of a 5.5.1 DLedger crash store past 2 GiB whose recovery walk dispatches nothing and whose start's reput
the cut sets at 2147483647, inside an entry, where its check parses a message that also goes to a light queue the
store holds files of, checked against the broker (``DLEDGER_2GIB=1`` only: some 2.15 GB of data files, as much again
in ``before/``; minutes).

``5.5.1-dledger-abort-propcrc-kept-past-2gib-embedded-light-held-disk`` (:func:`light_held_disk_scenario`): the
``-embedded-light`` store (:func:`test_dledger_walked_nothing_2gib_parsed_broker.embedded_light_scenario`: the T5/0
message at 2147483647 also going to ``%LMQ%q1`` at light queue offset 2) whose first and last T9 messages also go to
``%LMQ%q1`` (light queue offsets 0 and 1; their bodies shorter by the properties that adds: the same layout), so the
running broker wrote that light queue before the crash (``keepQueues``): its unit of the first T9 message, in the first
data file, and that of the last, past the 22nd data file's start.  ``dledgerRecoverAbnormally`` walks nothing,
``truncateDirtyLogicFiles`` at the 22nd data file's start (``ConsumeQueueStore.truncateDirty``: every loaded queue, the
light one too) leaves ``%LMQ%q1`` its first unit (write position 20, max that unit's end: a file of it stays), T9
its ``fillPreBlank`` unit only (max 2147483647, the largest) and T0 its units of the earlier files;
``doRecheckReputOffsetFromCq`` sets the reput at 2147483647, where ``DLedgerCommitLog``'s check parses the T5
message: ``putMessagePositionInfoWrapper`` puts T5/0's unit (a new queue: at 0), then ``multiDispatchLmqQueue`` the
light unit onto the loaded ``%LMQ%q1`` (``findConsumeQueue``) by ``putMessagePositionInfo`` from the write position
and max the cut left: ending past the max, its queue offset * 20 (40) past the write position (20), so appended at the
write position ("logic queue order maybe wrong" only logged), over the cut unit's bytes.  The light queue offset the
start's ``recoverOffsetTable`` puts in the queue offset table (1, the cut queue's) is for later puts, not for the
dispatch, which takes the message's ``INNER_MULTI_QUEUE_OFFSET``.  Its next check fails on the body's 'x' bytes and it
jumps to the log's end: every unit of the 22nd data file stays lost, the last T9 message's light unit too.

``-held-disk-zero``: the same with the parsed message's light queue offset 0 (:func:`parsed_message`):
``putMessagePositionInfo`` checks no queue offset of 0, so the light unit is appended at the write position 20 all the
same, though 0 lies below it (a queue offset past 0 that did would be dropped: "build consume queue repeatedly").

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
    EMBED_T0_DATA,
    LINE,
    NEEDS_2GIB,
    held_units,
    queued_messages,
    t0_record_at_2147483647,
    with_embedded_message,
    written,
)
from broker_dledger_inside_scenarios import LIGHT_PROPS
from broker_dledger_walked_nothing_inside_scenarios import PAST_2GIB_T9_LAST
from test_dledger_walked_nothing_2gib_broker import _index_keys, _verify
from test_dledger_walked_nothing_2gib_parsed_broker import (
    LIGHT,
    LIGHT_QUEUE_OFFSET,
    embedded_light_scenario,
    light_message,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()


def _with_light(m: dict, light_offset: int) -> dict:
    """T9 message ``m`` also to ``%LMQ%q1`` at ``light_offset`` (one digit), its body shorter by the properties."""
    assert m["topic"] == "T9" and "properties" not in m and m["bodySize"] > LIGHT_PROPS, m
    return {**m, "bodySize": m["bodySize"] - LIGHT_PROPS,
            "properties": {"INNER_MULTI_DISPATCH": LIGHT, "INNER_MULTI_QUEUE_OFFSET": str(light_offset)}}


_OFFSET_FIELD = b"INNER_MULTI_QUEUE_OFFSET\x01"


def parsed_message(light_offset: int = LIGHT_QUEUE_OFFSET) -> bytes:
    """The message at 2147483647: ``light_message`` with the light queue offset ``light_offset`` (one digit; a
    property, which neither the message check nor the body CRC covers)."""
    msg = light_message()
    at = msg.index(_OFFSET_FIELD) + len(_OFFSET_FIELD)
    assert msg[at:at + 1] == str(LIGHT_QUEUE_OFFSET).encode() and 0 <= light_offset <= 9
    return msg[:at] + str(light_offset).encode() + msg[at + 1:]


SUFFIX = {LIGHT_QUEUE_OFFSET: "", 0: "-zero"}   # the parsed message's light queue offset -> the scenario's suffix


def light_held_disk_scenario(light_offset: int = LIGHT_QUEUE_OFFSET, line: str = LINE) -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-embedded-light-held-disk`` (``-zero``: light queue offset 0):
    above."""
    sc = embedded_light_scenario(line)
    name = f"{sc['name']}-held-disk{SUFFIX[light_offset]}"
    sc = with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA, name, parsed_message(light_offset))
    first, *rest, last = sc["messages"]
    return {**sc, "messages": [_with_light(first, 0), *rest, _with_light(last, 1)]}


CUT_T0 = 11207   # T0's units in the 22nd data file (the cut takes them)
T9_FIRST = (48, 193)   # the first T9 message (after its entry's 48-byte header), the same size with the properties


def _units(b: bytes, n: int) -> list[tuple[int, int, int]]:
    return [struct.unpack(">qiq", b[i:i + 20]) for i in range(0, 20 * n, 20)]


@pytest.mark.parametrize("light_offset", sorted(SUFFIX, reverse=True), ids=["held-disk", "held-disk-zero"])
def test_verify_predicts_a_message_for_a_held_light_queue_parsed_at_2147483647(tmp_path, monkeypatch,
                                                                                light_offset: int) -> None:
    """What the broker wrote first (the light queue before the restart: the first and last T9 messages' light units;
    after ``load()`` the first only, write position 20; after the reput the parsed light unit at 20, not at its light
    queue offset's place; T5/0 created; T0 and T9 as ``load()`` left them; E5 indexed once); then verify predicts the
    reput set at 2147483647 parsing the message and going on at the log's end (every unit of the 22nd data file lost,
    the last T9 message's light unit too, none put again, the one index key) and its plan's ``%LMQ%q1`` is the
    broker's file."""
    sc = light_held_disk_scenario(light_offset)
    w, src = written(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 22 and cut == int(data[-1].name) < BLANK_MAX < PAST_2GIB_T9_LAST < end, (cut, end)
    msg = parsed_message(light_offset)
    assert len(msg) == len(light_message())
    record = t0_record_at_2147483647(src)
    assert record[88 + EMBED_AT_BODY_DATA:88 + EMBED_AT_BODY_DATA + len(msg)] == msg, "the bytes at 2147483647"
    name = f"{LIGHT}/0"
    before = (src / "before" / "consumequeue" / LIGHT / "0" / f"{0:020d}").read_bytes()
    assert _units(before, 3) == [(*T9_FIRST, 0), (PAST_2GIB_T9_LAST, 193, 0), (0, 0, 0)], "written before the crash"
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    assert set(loaded) == {"T0/0", "T9/0", name}, loaded
    assert int(loaded["T9/0"]["maxPhysicOffset"]) == BLANK_MAX and int(loaded["T9/0"]["maxOffset"]) == 20, loaded
    # the cut left the light queue its first unit: a file stays, write position 20, the max that unit's end
    assert (int(loaded[name]["maxOffset"]), int(loaded[name]["maxPhysicOffset"])) == (20, sum(T9_FIRST)), loaded
    assert set(after) == {"T0/0", "T9/0", "T5/0", name}, after
    assert after["T0/0"] == loaded["T0/0"] and after["T9/0"] == loaded["T9/0"], after   # no cut unit put back
    unit = (BLANK_MAX, len(msg), 0)
    t5 = (src / "expected" / "consumequeue" / "T5" / "0" / f"{0:020d}").read_bytes()
    assert _units(t5, 1) == [unit] and not any(t5[20:]), t5[:40].hex()
    # putMessagePositionInfo on the loaded queue: appended at the write position 20, its light queue offset 2's place
    # (40) past it, or 0, no queue offset checked
    light = (src / "expected" / "consumequeue" / LIGHT / "0" / f"{0:020d}").read_bytes()
    assert (int(after[name]["maxOffset"]), int(after[name]["maxPhysicOffset"])) == (40, BLANK_MAX + len(msg)), after
    assert _units(light, 2) == [(*T9_FIRST, 0), unit] and not any(light[40:]), light[:60].hex()
    assert _index_keys(src) == 1, "E5 indexed, once"
    p, note, crash = _verify(src, tmp_path, monkeypatch)
    # the reference's units: each queued message's and the two T9 messages' light units; the broker's queues hold
    # theirs but the parsed message's two (T5's left out, the light one no message's)
    lost = queued_messages(sc) + 2 - (held_units(src, ends=after, leave_out="T5") - 1)
    assert p["units_lost"] == lost == CUT_T0 + 3 and p["units_dispatched_again"] == 0, (p["units_lost"], lost, note)
    assert p["index_keys_put_again"] == 1, (p["index_keys_put_again"], p["notes"])
    assert "where its check parses 1 message(s), then fails" in note and f"getData hands, {end};" in note, note
    assert crash.walked_nothing and crash.process_offset == cut and crash.reput_from == end, crash
    assert crash.cut is not None and crash.cut.inside_from == BLANK_MAX and crash.gap == (cut, end), crash
    assert crash.cut.inside_records == ((BLANK_MAX, BLANK_MAX + len(msg)),) and crash.inside_keys == (BLANK_MAX,)
    # the plan: %LMQ%q1 replayed from the write position and max the cut left; its file is the broker's
    (q,) = crash.cut.inside_placed.whole
    assert (q.topic, q.queue_id, q.walk_end, q.parsed_at) == (LIGHT, 0, 20, (20,)), q
    assert q.units == ((20, *unit),) and not q.opened and not q.copies and not q.put_back, q
    planned = bytearray(before[:q.walk_end] + bytes(len(before) - q.walk_end))
    for pos, *u in q.units:
        planned[pos:pos + 20] = struct.pack(">qiq", *u)
    bh.same_bytes(light, bytes(planned), f"consumequeue/{name}/{0:020d}")

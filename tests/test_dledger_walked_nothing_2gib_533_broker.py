"""``verify`` of a 5.3.3 DLedger crash store past 2 GiB whose recovery walk dispatches nothing and whose start's reput
the cut sets at 2147483647, inside an entry, where its check parses a message for a queue the store holds a file of
that the cut deletes, checked against the 5.3.3 broker (``DLEDGER_2GIB=1`` only: some 2.15 GB of data files, as much
again in ``before/``; about a minute to write).

``5.3.3-dledger-abort-propcrc-kept-past-2gib-embedded-t7-emptied``
(:func:`test_dledger_walked_nothing_2gib_more_broker.embedded_t7_emptied_scenario` on the 5.3.3 line): T7/0's
consume queue file planted with one unit past the 22nd data file's start and, at 2147483647, a T7/0 message of queue
offset 5.  ``ConsumeQueue.truncateDirtyLogicFiles`` sets T7's max to ``processOffset`` (the 22nd data file's start)
and deletes its only file; 5.3.3's ``correctMinOffset`` finds no file and leaves that max (5.5.1's gives -1:
``tests/test_dledger_walked_nothing_2gib_more_broker.py``).  The parsed unit ends past it, so
``putMessagePositionInfo`` keeps it: ``getLastMappedFile`` creates T7's first file at 0 (the queue offset's file),
``isFirstCreateInQueue``: ``fillPreBlank`` units up to queue byte 100, the unit there (the same place as on 5.5.1).

``5.3.3-dledger-abort-propcrc-kept-past-2gib-embedded-light-emptied``
(:func:`test_dledger_walked_nothing_2gib_light_emptied_broker.light_emptied_scenario` on the 5.3.3 line): the T5/0
message at 2147483647 also going to ``%LMQ%q1`` at light queue offset 2, the last T9 message to ``%LMQ%q1`` at 0, so
the running broker wrote that light queue before the crash, one unit past ``processOffset``.  5.3.3's
``ConsumeQueueStore.truncateDirty`` cuts every loaded queue, the light one too: ``truncateDirtyLogicFiles`` deletes
its only file and leaves its max at ``processOffset``, which ``recoverOffsetTable``'s ``correctMinOffset`` (no file)
leaves, as T7's above.  ``multiDispatchLmqQueue``'s ``putMessagePositionInfo`` keeps the light unit (it ends past that
max): ``getLastMappedFile`` creates the queue's first file at 0, 2 ``fillPreBlank`` units, the unit at queue byte 40.

What the broker wrote is asserted first (T7's max after ``load()`` is ``processOffset``, no file; after the reput its
new file); then ``verify`` on the store as the restart found it puts the unit where the broker did
(:func:`store_format.dledger_walked_nothing._placed_on_disk` with the max ``processOffset``) and counts the units lost.
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    FILL_PRE_BLANK_UNIT,
    NEEDS_2GIB,
    held_units,
    queued_messages,
    retargeted,
    t0_record_at_2147483647,
    written,
)
from broker_dledger_2gib import EMBED_AT_BODY_DATA as AT_BODY
from broker_dledger_walked_nothing_inside_scenarios import PAST_2GIB_T9_LAST
from test_dledger_walked_nothing_2gib_broker import _index_keys, _verify
from test_dledger_walked_nothing_2gib_light_disk_broker import _units
from test_dledger_walked_nothing_2gib_light_emptied_broker import light_emptied_scenario
from test_dledger_walked_nothing_2gib_more_broker import embedded_t7_emptied_scenario
from test_dledger_walked_nothing_2gib_parsed_broker import LIGHT, LIGHT_QUEUE_OFFSET, light_message

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()

LINE = "5.3.3"


def test_verify_predicts_a_533_message_parsed_at_2147483647_for_a_queue_the_cut_left_no_file_of(tmp_path,
                                                                                                 monkeypatch) -> None:
    """What the 5.3.3 broker wrote first (after ``load()`` T7 with no file and the max ``processOffset``, the cut's
    offset, not -1; after the reput one file at 0: 5 ``fillPreBlank`` units, the parsed unit at queue byte 100, E5
    indexed); then verify's plan puts the unit there and its figures count every other unit of the 22nd data file
    lost."""
    sc = embedded_t7_emptied_scenario(LINE)
    w, src = written(sc, tmp_path, LINE)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    assert cut < BLANK_MAX < end and cut < PAST_2GIB_T9_LAST, (cut, end)
    msg = retargeted(BLANK_MAX, b"T7", 5)
    record = t0_record_at_2147483647(src)
    assert record[88 + AT_BODY:88 + AT_BODY + len(msg)] == msg, "the bytes at 2147483647"
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    planted = (src / "before" / "consumequeue" / "T7" / "0" / f"{0:020d}").read_bytes()
    assert struct.unpack(">qiq", planted[:20]) == (PAST_2GIB_T9_LAST, 193, 0) and not any(planted[20:])
    # load() (recover, then the cut at the 22nd data file's start): no file left, the max processOffset
    assert (loaded["T7/0"]["files"], int(loaded["T7/0"]["maxPhysicOffset"])) == ([], cut), loaded["T7/0"]
    assert int(loaded["T9/0"]["maxPhysicOffset"]) == BLANK_MAX, loaded["T9/0"]
    assert after["T7/0"]["files"] == [f"{0:020d}"], after["T7/0"]
    assert int(after["T7/0"]["maxOffset"]) == 120 and int(after["T7/0"]["maxPhysicOffset"]) == BLANK_MAX + len(msg)
    t7 = (src / "expected" / "consumequeue" / "T7" / "0" / f"{0:020d}").read_bytes()
    assert t7[:100] == FILL_PRE_BLANK_UNIT * 5 and struct.unpack(">qiq", t7[100:120]) == (BLANK_MAX, len(msg), 0)
    assert not any(t7[120:]), "the planted unit gone (the cut deleted its file)"
    assert _index_keys(src) == 1, "E5 indexed"
    p, note, crash = _verify(src, tmp_path, monkeypatch, LINE)
    lost = queued_messages(sc) - held_units(src, ends=after) + 1   # the parsed unit is no message's
    assert p["units_lost"] == lost and p["units_dispatched_again"] == 0, (p["units_lost"], lost, note)
    assert p["index_keys_put_again"] == 1, (p["index_keys_put_again"], p["notes"])
    assert "where its check parses 1 message(s), then fails" in note and f"getData hands, {end};" in note, note
    assert crash.walked_nothing and crash.process_offset == cut and crash.reput_from == end, crash
    assert crash.cut is not None and crash.cut.inside_records == ((BLANK_MAX, BLANK_MAX + len(msg)),), crash.cut
    assert ("T7", 0) in crash.cut.held_emptied, crash.cut.held_emptied
    (q,) = crash.cut.inside_placed.whole   # T7 replayed from no file and the max processOffset
    assert (q.topic, q.opened, q.blank_until, q.parsed_at) == ("T7", (0,), 100, (100,)), q
    assert q.units == ((100, BLANK_MAX, len(msg), 0),), q


def test_verify_predicts_a_533_light_unit_parsed_at_2147483647_for_a_light_queue_the_cut_emptied(tmp_path,
                                                                                                   monkeypatch) -> None:
    """What the 5.3.3 broker wrote first (``%LMQ%q1`` before the restart: the last T9 message's light unit; after
    ``load()`` no file and the max ``processOffset``, not -1; after the reput one file at 0:
    :data:`LIGHT_QUEUE_OFFSET` ``fillPreBlank`` units, the parsed light unit at queue byte 40; T5/0 created; E5
    indexed once); then verify predicts the reput (units lost, none put again, the one key) and its plan's
    ``%LMQ%q1`` is the broker's file byte for byte."""
    sc = light_emptied_scenario(LINE)
    w, src = written(sc, tmp_path, LINE)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    assert cut < BLANK_MAX < PAST_2GIB_T9_LAST < end, (cut, end)
    msg = light_message()
    record = t0_record_at_2147483647(src)
    assert record[88 + AT_BODY:88 + AT_BODY + len(msg)] == msg, "the bytes at 2147483647"
    name = f"{LIGHT}/0"
    before = (src / "before" / "consumequeue" / LIGHT / "0" / f"{0:020d}").read_bytes()
    assert _units(before, 2) == [(PAST_2GIB_T9_LAST, 193, 0), (0, 0, 0)], "written before the crash"
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    assert set(loaded) == {"T0/0", "T9/0", name}, loaded
    # the cut deleted the light queue's only file and left its max at processOffset (5.5.1: -1)
    assert (loaded[name]["files"], int(loaded[name]["maxPhysicOffset"])) == ([], cut), loaded[name]
    assert set(after) == {"T0/0", "T9/0", "T5/0", name}, after
    assert after["T0/0"] == loaded["T0/0"] and after["T9/0"] == loaded["T9/0"], after   # no cut unit put back
    unit = (BLANK_MAX, len(msg), 0)
    at = 20 * LIGHT_QUEUE_OFFSET
    light = (src / "expected" / "consumequeue" / LIGHT / "0" / f"{0:020d}").read_bytes()
    assert after[name]["files"] == [f"{0:020d}"], after[name]
    assert (int(after[name]["maxOffset"]), int(after[name]["maxPhysicOffset"])) == (at + 20, BLANK_MAX + len(msg))
    assert light[:at] == FILL_PRE_BLANK_UNIT * LIGHT_QUEUE_OFFSET and _units(light[at:], 1) == [unit], light[:80].hex()
    assert not any(light[at + 20:]), light[:80].hex()
    assert _index_keys(src) == 1, "E5 indexed, once"
    p, note, crash = _verify(src, tmp_path, monkeypatch, LINE)
    # the reference's units: each queued message's and the last T9 message's light unit; the broker's queues hold
    # theirs but the parsed message's two (T5's left out, the light one no message's)
    lost = queued_messages(sc) + 1 - (held_units(src, ends=after, leave_out="T5") - 1)
    assert p["units_lost"] == lost and p["units_dispatched_again"] == 0, (p["units_lost"], lost, note)
    assert p["index_keys_put_again"] == 1, (p["index_keys_put_again"], p["notes"])
    assert "where its check parses 1 message(s), then fails" in note and f"getData hands, {end};" in note, note
    assert crash.walked_nothing and crash.process_offset == cut and crash.reput_from == end, crash
    assert crash.cut is not None and crash.cut.inside_records == ((BLANK_MAX, BLANK_MAX + len(msg)),), crash.cut
    assert crash.cut.held_emptied == frozenset({(LIGHT, 0)}), crash.cut.held_emptied
    (q,) = crash.cut.inside_placed.whole   # %LMQ%q1 replayed from no file and the max processOffset
    assert (q.topic, q.queue_id, q.opened, q.blank_until, q.parsed_at) == (LIGHT, 0, (0,), at, (at,)), q
    assert q.units == ((at, *unit),) and not q.copies and not q.put_back, q
    planned = bytearray(len(light))
    planned[:at] = FILL_PRE_BLANK_UNIT * LIGHT_QUEUE_OFFSET
    for pos, *u in q.units:
        planned[pos:pos + 20] = struct.pack(">qiq", *u)
    bh.same_bytes(light, bytes(planned), f"consumequeue/{name}/{0:020d}")

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

What the broker wrote is asserted first (T7's max after ``load()`` is ``processOffset``, no file; after the reput its
new file); then ``verify`` on the store as the restart found it puts the unit where the broker did
(:func:`store_format.dledger_walked_nothing._placed_on_disk` with the max ``processOffset``) and counts the units lost.
"""
from __future__ import annotations

import os
import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    FILL_PRE_BLANK_UNIT,
    held_units,
    queued_messages,
    retargeted,
    t0_record_at_2147483647,
    written,
)
from broker_dledger_2gib import EMBED_AT_BODY_DATA as AT_BODY
from broker_dledger_walked_nothing_inside_scenarios import PAST_2GIB_T9_LAST
from test_dledger_walked_nothing_2gib_broker import _index_keys, _verify
from test_dledger_walked_nothing_2gib_more_broker import embedded_t7_emptied_scenario

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.big_store,
              pytest.mark.skipif(os.environ.get("DLEDGER_2GIB") != "1", reason="a 2 GiB store: DLEDGER_2GIB=1")]

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

"""``verify`` of a 5.5.1 DLedger crash store past 2 GiB whose recovery walk dispatches nothing and whose start's reput
the cut sets at 2147483647, inside an entry, where its check parses a message for a queue the store holds files of
(T0, whose units of the walk's data file the cut took), checked against the broker (``DLEDGER_2GIB=1`` only: some
2.15 GB of data files, as much again in ``before/``; minutes each, run them one at a time with ``-k``).

``5.5.1-dledger-abort-propcrc-kept-past-2gib-embedded-t0-<queue offset>`` (:func:`embedded_t0_scenario`): the
``-propcrc-kept-past-2gib`` store
(:func:`broker_dledger_walked_nothing_inside_scenarios.walked_nothing_past_2gib_scenario`) whose last T0 body
holds, from 2147483647 on, a well-formed message for T0/0 (keys ``E5``, :func:`broker_dledger_2gib.retargeted`) of
that queue offset.  ``dledgerRecoverAbnormally`` walks nothing,
``truncateDirtyLogicFiles`` at the 22nd data file's start leaves T9 with its ``fillPreBlank`` unit only (max
2147483647, the largest) and T0 its units of the earlier files (its write position after them, its max their
end); ``doRecheckReputOffsetFromCq`` sets the reput at 2147483647, where the check parses the T0 message:
``doReput`` dispatches it onto T0 as the cut left it (``ConsumeQueue.putMessagePositionInfo``: ending past the
max, its queue offset * 20 past the write position, so appended there (``-past``, the record's own queue offset
in the walk's data file); below it and not 0, dropped (``-below``, queue offset 1); its keys indexed either way),
then its next check fails on the body's 'x' bytes and it jumps to the log's end: every unit of the 22nd data file
stays lost.

``-embedded-t0-past-ext``, ``-embedded-t0-below-ext`` (:func:`embedded_t0_ext_scenario`) and ``-embedded-ext``
(:func:`embedded_ext_scenario`, the T5 message of ``tests/test_dledger_walked_nothing_2gib_broker.py``): the same
with ``enableConsumeQueueExt=true``: ``putMessagePositionInfoWrapper`` puts the parsed message's ext unit first
(``ConsumeQueueExt.put``, T0's after the ext files' end ``load()`` left, which the cut, a file staying, does not
move; T5's the first of its new ext file), whatever becomes of the unit; an appended unit holds its address.

``-embedded-t7-emptied`` (:func:`embedded_t7_emptied_scenario`): T7/0's file planted with one unit past the 22nd
data file's start, which the cut deletes (5.5.1: its max -1), and a T7 message of queue offset 5 at 2147483647:
``getLastMappedFile`` creates T7's first file at 0, ``fillPreBlank`` units up to queue byte 100, the unit there.

The broker's queues after ``load()`` and after the reput, the T0 unit (or none) and the index are asserted first;
then ``verify`` on the store as the restart found it predicts that restart (units lost, none put again, the index
key) and its plan the broker's T0 (``QueueCut.inside_placed``: T0 replayed whole from the state the cut left).
"""
from __future__ import annotations

import base64
import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    EMBED_AT_BODY_DATA,
    EMBED_T0_DATA,
    FILL_PRE_BLANK_UNIT,
    LINE,
    NEEDS_2GIB,
    embedded_message,
    held_units,
    queued_messages,
    retargeted,
    t0_record_at_2147483647,
    with_embedded_message,
    written,
)
from broker_dledger_walked_nothing_inside_scenarios import (
    PAST_2GIB_T9_FILE,
    PAST_2GIB_T9_LAST,
    walked_nothing_past_2gib_scenario,
)
from test_dledger_walked_nothing_2gib_broker import _index_keys, _verify

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()

CUT_T0 = 11207            # T0's units in the 22nd data file (the cut takes them)


def embedded_t0_scenario(queue_offset: int, tag: str, line: str = LINE) -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-embedded-t0-<tag>``: above."""
    sc = walked_nothing_past_2gib_scenario(line)
    return with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA, f"{sc['name']}-embedded-t0-{tag}",
                                 retargeted(BLANK_MAX, b"T0", queue_offset))


def _t0_unit_at(src, position: int) -> tuple[int, int, int]:  # noqa: ANN001
    """The broker's T0/0 unit at queue byte ``position`` (``src/expected``)."""
    qdir = src / "expected" / "consumequeue" / "T0" / "0"
    f = max((p for p in qdir.iterdir() if int(p.name) <= position), key=lambda p: int(p.name))
    with f.open("rb") as h:
        h.seek(position - int(f.name))
        return struct.unpack(">qiq", h.read(20))


@pytest.mark.parametrize("queue_offset,tag,appended", [(EMBED_T0_DATA, "past", True), (1, "below", False)],
                         ids=["past", "below"])
def test_verify_predicts_a_t0_message_parsed_at_2147483647(tmp_path, monkeypatch, queue_offset: int, tag: str,
                                                           appended: bool) -> None:
    """What the broker wrote first (the cut at the 22nd data file's start, below 2147483647; T0 after ``load()`` with
    its units below it, T9 with its ``fillPreBlank`` unit only; the T0 message at 2147483647; after the reput T0's
    one unit more at the write position the cut left (``-past``) or none (``-below``), E5 indexed, no other unit
    put); then verify predicts the reput set at 2147483647 parsing the message and going on at the log's end (every
    unit of the 22nd data file lost, none put again, the one index key) and its plan puts the T0 unit where the
    broker did."""
    sc = embedded_t0_scenario(queue_offset, tag)
    w, src = written(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 22 and cut == int(data[-1].name) < BLANK_MAX < end, (cut, end)
    msg = retargeted(BLANK_MAX, b"T0", queue_offset)
    record = t0_record_at_2147483647(src)
    assert record[88 + EMBED_AT_BODY_DATA:88 + EMBED_AT_BODY_DATA + len(msg)] == msg, "the bytes at 2147483647"
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    assert set(loaded) == {"T0/0", "T9/0"}, loaded
    assert int(loaded["T9/0"]["maxPhysicOffset"]) == BLANK_MAX and int(loaded["T9/0"]["maxOffset"]) == 20, loaded
    write, top = int(loaded["T0/0"]["maxOffset"]), int(loaded["T0/0"]["maxPhysicOffset"])
    assert 0 < write < 20 * EMBED_T0_DATA and write % 20 == 0 and top < cut, loaded["T0/0"]
    assert set(after) == {"T0/0", "T9/0"} and after["T9/0"] == loaded["T9/0"], after
    if appended:   # putMessagePositionInfo: past the max, queue offset past the write position: at the write position
        assert queue_offset * 20 > write
        assert int(after["T0/0"]["maxOffset"]) == write + 20, after["T0/0"]
        assert int(after["T0/0"]["maxPhysicOffset"]) == BLANK_MAX + len(msg), after["T0/0"]
        assert _t0_unit_at(src, write) == (BLANK_MAX, len(msg), 0)
    else:          # queue offset * 20 below the write position, not 0: dropped
        assert 0 < queue_offset * 20 < write and after["T0/0"] == loaded["T0/0"], after["T0/0"]
    assert _index_keys(src) == 1, "E5 indexed"
    p, note, crash = _verify(src, tmp_path, monkeypatch)
    lost = queued_messages(sc) - held_units(src, ends=after) + int(appended)   # the parsed unit is no message's
    assert p["units_lost"] == lost == CUT_T0 + 2 and p["units_dispatched_again"] == 0, (p["units_lost"], lost, note)
    assert p["index_keys_put_again"] == 1, (p["index_keys_put_again"], p["notes"])
    assert "where its check parses 1 message(s), then fails" in note and f"getData hands, {end};" in note, note
    assert crash.walked_nothing and crash.process_offset == cut and crash.reput_from == end, crash
    assert crash.cut is not None and crash.cut.inside_from == BLANK_MAX and crash.gap == (cut, end), crash
    assert crash.cut.inside_records == ((BLANK_MAX, BLANK_MAX + len(msg)),) and crash.inside_keys == (BLANK_MAX,)
    (t0,) = crash.cut.inside_placed.whole   # the plan: T0 replayed from the write position and max the cut left
    assert (t0.topic, t0.queue_id, t0.walk_end) == ("T0", 0, write), t0
    assert t0.parsed_at == ((write,) if appended else (-1,)), t0
    assert t0.units == (((write, BLANK_MAX, len(msg), 0),) if appended else ()), t0
    assert not t0.opened and not t0.put_back and not t0.lost, t0


def embedded_t0_ext_scenario(queue_offset: int, tag: str, line: str = LINE) -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-embedded-t0-<tag>-ext``: :func:`embedded_t0_scenario` with
    ``enableConsumeQueueExt=true`` (default ext file size: every T0 unit's ext unit in one file)."""
    sc = embedded_t0_scenario(queue_offset, tag, line)
    return {**sc, "config": {**sc["config"], "enableConsumeQueueExt": "true"}, "name": f"{sc['name']}-ext"}


@pytest.mark.parametrize("queue_offset,tag,appended", [(EMBED_T0_DATA, "past", True), (1, "below", False)],
                         ids=["past-ext", "below-ext"])
def test_verify_predicts_a_t0_message_parsed_at_2147483647_with_ext_files(tmp_path, monkeypatch, queue_offset: int,
                                                                          tag: str, appended: bool) -> None:
    """With ext files: what the broker wrote first (T0's ext files after ``load()`` ending after its last unit's ext
    unit, the cut leaving them so: a file of T0 stays; after the reput one ext unit more there,
    ``putMessagePositionInfoWrapper``'s ``ConsumeQueueExt.put`` before ``putMessagePositionInfo``, whose unit, when
    appended at the write position the cut left, holds its address as its tags code; dropped, none points at it);
    then verify's ext figures for T0 (the one ext unit appended; orphaned: those of the cut units, and the parsed
    one's when its unit is dropped) and the plan's T0 unit (its tags code that address)."""
    sc = embedded_t0_ext_scenario(queue_offset, tag)
    w, src = written(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    assert cut < BLANK_MAX < end, (cut, end)
    msg = retargeted(BLANK_MAX, b"T0", queue_offset)
    record = t0_record_at_2147483647(src)
    assert record[88 + EMBED_AT_BODY_DATA:88 + EMBED_AT_BODY_DATA + len(msg)] == msg, "the bytes at 2147483647"
    loaded, after = w["queuesAfterLoad"]["T0/0"], w["queuesAfterDispatch"]["T0/0"]
    write, ext_end = int(loaded["maxOffset"]), int(loaded["extMaxOffset"])
    assert 0 < write < 20 * EMBED_T0_DATA and ext_end == 20 * (write // 20 + CUT_T0), loaded   # every T0 unit's
    assert int(after["extMaxOffset"]) == ext_end + 20, after   # the parsed message's ext unit, appended or not
    address = ext_end - 2**63   # ConsumeQueueExt.decorate
    if appended:
        assert int(after["maxOffset"]) == write + 20 and int(after["maxPhysicOffset"]) == BLANK_MAX + len(msg)
        assert _t0_unit_at(src, write) == (BLANK_MAX, len(msg), address)
    else:
        assert int(after["maxOffset"]) == write and int(after["maxPhysicOffset"]) == int(loaded["maxPhysicOffset"])
    assert _index_keys(src) == 1, "E5 indexed"
    p, note, crash = _verify(src, tmp_path, monkeypatch)
    assert p["units_lost"] == CUT_T0 + 2 and p["units_dispatched_again"] == 0, (p["units_lost"], note)
    assert crash.cut is not None and crash.cut.inside_records == ((BLANK_MAX, BLANK_MAX + len(msg)),), crash.cut
    (t0,) = crash.cut.inside_placed.whole
    assert t0.parsed_at == ((write,) if appended else (-1,)), t0
    assert t0.units == (((write, BLANK_MAX, len(msg), address),) if appended else ()), t0
    assert crash.cut.inside_placed.ext_put == (("T0", 0, 1),), crash.cut.inside_placed
    (figures,) = [f for f in p["queues"] if f["queue"] == "T0/0"]
    # the broker's: the ext units its restart put, and those before the end that no unit of T0 below its write
    # position points at (each kept unit points at its own ext unit)
    orphans = (int(after["extMaxOffset"]) - int(after["maxOffset"])) // 20
    assert orphans == CUT_T0 + int(not appended)
    assert (figures["ext_units_appended"], figures["ext_units_orphaned"]) == (1, orphans), figures


def embedded_ext_scenario(line: str = LINE) -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-embedded-ext``: ``-propcrc-kept-past-2gib-embedded`` (the T5
    message at 2147483647, ``tests/test_dledger_walked_nothing_2gib_broker.py``) with ``enableConsumeQueueExt=true``."""
    sc = walked_nothing_past_2gib_scenario(line)
    sc = with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA, f"{sc['name']}-embedded-ext")
    return {**sc, "config": {**sc["config"], "enableConsumeQueueExt": "true"}}


def test_verify_predicts_a_new_queues_message_parsed_at_2147483647_with_ext_files(tmp_path, monkeypatch) -> None:
    """``-embedded-ext``: what the broker wrote first (T5/0 created by the parsed message, its ext unit the first of
    a new ext file, its unit at 0 holding that address; T0's ext files as ``load()`` left them, its cut units' ext
    units orphaned); then verify's ext figures (T5's one ext unit appended; T0's orphans) and its plan
    (``Placed.ext_put`` counts T5's, no queue replayed: T5 is the rebuild's own dispatch's)."""
    sc = embedded_ext_scenario()
    w, src = written(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    assert cut < BLANK_MAX < end, (cut, end)
    msg = embedded_message(BLANK_MAX)
    record = t0_record_at_2147483647(src)
    assert record[88 + EMBED_AT_BODY_DATA:88 + EMBED_AT_BODY_DATA + len(msg)] == msg, "the bytes at 2147483647"
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    assert after["T0/0"] == loaded["T0/0"], after["T0/0"]
    write = int(loaded["T0/0"]["maxOffset"])
    assert int(loaded["T0/0"]["extMaxOffset"]) == 20 * (write // 20 + CUT_T0), loaded["T0/0"]
    assert int(after["T5/0"]["maxOffset"]) == 20 and int(after["T5/0"]["extMaxOffset"]) == 20, after["T5/0"]
    t5 = (src / "expected" / "consumequeue" / "T5" / "0" / f"{0:020d}").read_bytes()
    assert struct.unpack(">qiq", t5[:20]) == (BLANK_MAX, len(msg), -2**63), t5[:20].hex()   # ext address 0
    assert _index_keys(src) == 1, "E5 indexed"
    p, note, crash = _verify(src, tmp_path, monkeypatch)
    assert p["units_lost"] == CUT_T0 + 2 and p["units_dispatched_again"] == 0, (p["units_lost"], note)
    assert crash.cut is not None and crash.cut.inside_records == ((BLANK_MAX, BLANK_MAX + len(msg)),), crash.cut
    assert crash.cut.inside_placed.ext_put == (("T5", 0, 1),) and not crash.cut.inside_placed.whole, crash.cut
    figures = {f["queue"]: f for f in p["queues"]}
    assert figures["T5/0"]["ext_units_appended"] == 1, figures.get("T5/0")
    assert (figures["T0/0"]["ext_units_appended"], figures["T0/0"]["ext_units_orphaned"]) == (0, CUT_T0), \
        figures["T0/0"]


def embedded_t7_emptied_scenario(line: str = LINE) -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-embedded-t7-emptied``: the ``-propcrc-kept-past-2gib`` store with
    T7/0's consume queue file planted holding one unit, the last T9 record's (past the 22nd data file's start: the cut
    deletes the file, 5.5.1's ``correctMinOffset`` then sets T7's max to -1), and at 2147483647 a T7/0 message of
    queue offset 5 (:func:`broker_dledger_2gib.retargeted`)."""
    sc = walked_nothing_past_2gib_scenario(line)
    t7 = struct.pack(">qiq", PAST_2GIB_T9_LAST, 193, 0)
    plant = {**sc["plantFiles"], f"consumequeue/T7/0/{0:020d}":
             base64.b64encode(t7 + bytes(PAST_2GIB_T9_FILE - len(t7))).decode()}
    return with_embedded_message({**sc, "plantFiles": plant}, EMBED_T0_DATA, EMBED_AT_BODY_DATA,
                                 f"{sc['name']}-embedded-t7-emptied", retargeted(BLANK_MAX, b"T7", 5))


def test_verify_predicts_a_message_parsed_at_2147483647_for_a_queue_the_cut_left_no_file_of(tmp_path,
                                                                                            monkeypatch) -> None:
    """``-embedded-t7-emptied``: what the broker wrote first (T7's planted file in ``before/``; after ``load()``,
    whose cut deleted it, no file and the max -1; after the reput one file at 0: ``getLastMappedFile`` on no file
    creates it where queue offset 5 falls, ``putMessagePositionInfo`` (``isFirstCreateInQueue``) puts 5
    ``fillPreBlank`` units and the parsed unit at queue byte 100); then verify's plan puts it there (T7 replayed from
    no file and the max -1)."""
    sc = embedded_t7_emptied_scenario()
    w, src = written(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    assert cut < BLANK_MAX < end and cut < PAST_2GIB_T9_LAST, (cut, end)
    msg = retargeted(BLANK_MAX, b"T7", 5)
    record = t0_record_at_2147483647(src)
    assert record[88 + EMBED_AT_BODY_DATA:88 + EMBED_AT_BODY_DATA + len(msg)] == msg, "the bytes at 2147483647"
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    planted = (src / "before" / "consumequeue" / "T7" / "0" / f"{0:020d}").read_bytes()
    assert struct.unpack(">qiq", planted[:20]) == (PAST_2GIB_T9_LAST, 193, 0) and not any(planted[20:])
    # load() (recover, then the cut at the 22nd data file's start): no file left, the max -1 (correctMinOffset)
    assert (loaded["T7/0"]["files"], int(loaded["T7/0"]["maxPhysicOffset"])) == ([], -1), loaded["T7/0"]
    assert int(loaded["T9/0"]["maxPhysicOffset"]) == BLANK_MAX, loaded["T9/0"]
    assert int(after["T7/0"]["maxOffset"]) == 120 and int(after["T7/0"]["maxPhysicOffset"]) == BLANK_MAX + len(msg)
    t7 = (src / "expected" / "consumequeue" / "T7" / "0" / f"{0:020d}").read_bytes()
    assert t7[:100] == FILL_PRE_BLANK_UNIT * 5 and struct.unpack(">qiq", t7[100:120]) == (BLANK_MAX, len(msg), 0)
    assert not any(t7[120:]), "the planted unit gone (the cut deleted its file)"
    p, note, crash = _verify(src, tmp_path, monkeypatch)
    assert crash.cut is not None and crash.cut.inside_records == ((BLANK_MAX, BLANK_MAX + len(msg)),), crash.cut
    assert ("T7", 0) in crash.cut.held_emptied, crash.cut.held_emptied
    (q,) = crash.cut.inside_placed.whole
    assert (q.topic, q.opened, q.blank_until, q.parsed_at) == ("T7", (0,), 100, (100,)), q
    assert q.units == ((100, BLANK_MAX, len(msg), 0),), q

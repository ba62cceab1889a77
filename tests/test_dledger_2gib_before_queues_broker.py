"""5.5.1 DLedger crash restarts whose start's reput, set at 2147483647 inside an entry of a data file before the walk's,
goes on before the walk's data file and appends a record of queue offset 0 there to a queue the cut left with
``fillPreBlank`` units only, in the queue shapes main refused, checked against the broker (``DLEDGER_2GIB=1`` only:
some 2.3 GB of data files, its ``before/`` copy as much).

``-past-2gib-before-t9-first-ext`` (:func:`past_2gib_before_t9_first_ext_scenario`): ``-past-2gib-before-t9-first``
(:func:`test_dledger_2gib_before_more_broker.past_2gib_before_t9_first_scenario`) with ``enableConsumeQueueExt=true``.
``ConsumeQueue.putMessagePositionInfoWrapper`` puts an ext unit (``ConsumeQueueExt.put``) for every record before
``putMessagePositionInfo`` drops its unit or puts it: T9's ext units are the walk's T9 record's, the 23rd data file's
one's (its unit appended at 20, queue offset 0: no order check, holding that second ext unit's address) and the walk's
again (dropped: queue offset 1 below the write position 40).  ``rebuild --as-restart`` replays T9's queue by that rule
(:func:`store_format.dledger_crash_before.appended_before`, each unit holding the address of the ext unit its record
got in reput order) and writes ``consumequeue/``, ``consumequeue_ext/`` and ``index/`` byte for byte.
``-past-2gib-before-t9-first-more-ext``: with a second T9 message in the walk (queue offset 2), appended at 40 by the
reput, holding its fifth ext unit's address (the rebuild's unit of it held its second's).

``-past-2gib-before-no-file-ext`` (:func:`past_2gib_before_no_file_ext_scenario`): ``-past-2gib-before-no-file``
(:func:`test_dledger_2gib_before_more_broker.past_2gib_before_no_file_scenario`: the cut leaves T7's queue no file,
max -1, and the reput set at 2147483647 parses a T7 message of queue offset 3 there) with ext files: the cut keeps the
walk's T7 ext unit, the parsed message's ext unit follows it (its unit, after three ``fillPreBlank`` units, holding
that address) and the walk's T7 record's again (its unit appended at 80, holding the third's).  The rebuild's own
dispatch writes T7's queue and ext units so (``StoreLocation.queue_reset``); the cut's addresses of units put back
(``ExtAgain``) leave T7 out (:func:`store_format.dledger_crash_reput_before.reput_before_walk`).

``-past-2gib-before-t9-first-light`` (:func:`past_2gib_before_t9_first_light_scenario`): ``-past-2gib-before-t9-first``
with ``enableMultiDispatch``/``enableLmq`` whose two T9 messages also go to ``%LMQ%q1`` (light queue offsets 0 and 1,
bodies shorter by the properties: the same layout).  The cut leaves %LMQ%q1 one ``fillPreBlank`` unit as it does T9;
``ConsumeQueue.multiDispatchLmqQueue`` runs ``putMessagePositionInfo`` for the light unit after the own one, by the same
rule: the 23rd data file's light unit (queue offset 0) appended at 20, the walk's dropped.

``-past-2gib-before-t9-first-parsed`` (:func:`past_2gib_before_t9_first_parsed_scenario`): ``-t9-first``
with a well-formed T9 message of queue offset 5 at 2147483647 inside the T0 body there: the reput parses it first, from
the state the cut left T9's queue in (one ``fillPreBlank`` unit, max 2147483647): its end past the max, its queue offset
past the write position ("logic queue order maybe wrong", no drop): appended at 20; then it goes on at the 23rd data
file and appends that file's T9 unit (queue offset 0) at 40, and drops the walk's (queue offset 1, below 60).
``rebuild --as-restart`` replays T9's queue so, the parsed unit first
(:func:`store_format.dledger_crash_before.appended_cut`).
"""
from __future__ import annotations

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
    as_restart,
    as_restart_matches_broker,
    held_units,
    queued_messages,
    retargeted,
    same_files_as_the_broker,
    verify_restart,
    with_embedded_message,
    written,
)
from broker_dledger_files import ext_figures_as_the_broker
from test_dledger_2gib_again_broker import EXT_FILE_SIZE, ext_units
from test_dledger_2gib_before_more_broker import past_2gib_before_no_file_scenario, past_2gib_before_t9_first_scenario

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()

LONG_MIN = -2**63


def past_2gib_before_t9_first_ext_scenario(line: str, more: int = 0) -> dict:
    """``<line>-dledger-abort-past-2gib-before-t9-first[-more]-ext`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`test_dledger_2gib_before_more_broker.past_2gib_before_t9_first_scenario` with ``enableConsumeQueueExt=true``
    (ext files of :data:`test_dledger_2gib_again_broker.EXT_FILE_SIZE` bytes)."""
    sc = past_2gib_before_t9_first_scenario(line, more)
    return {**sc, "name": f"{sc['name']}-ext",
            "config": {**sc["config"], "enableConsumeQueueExt": "true",
                       "mappedFileSizeConsumeQueueExt": str(EXT_FILE_SIZE)}}


def _units(src, topic: str) -> list[tuple[int, int, int]]:  # noqa: ANN001
    files = sorted((src / "expected" / "consumequeue" / topic / "0").iterdir())
    return [struct.unpack(">qiq", b[i:i + 20]) for f in files for b in (f.read_bytes(),)
            for i in range(0, len(b) - 19, 20)]


@pytest.mark.parametrize("more", [0, 1])
def test_crash_restart_with_ext_whose_reput_before_the_walk_appends_a_queue_offset_0_record(tmp_path, more):
    """The 5.5.1 broker with ext files: T9's ext units the walk's (one per walk T9 record), the 23rd data file's T9
    record's, then the walk's again; the 23rd file's T9 unit (queue offset 0) appended at 20 holding the address of its
    ext unit (the walk's count on), the walk's first T9 unit dropped (queue offset 1, below 40), with ``more`` the
    walk's second appended at 40 holding its own reput ext unit's address.  ``rebuild --as-restart`` writes
    ``consumequeue/``, ``consumequeue_ext/`` and ``index/`` byte for byte and ``verify``'s units lost are those the
    broker's queues do not hold."""
    sc = past_2gib_before_t9_first_ext_scenario(LINE, more)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left fillPreBlank units only
    walk = 1 + more   # the walk's T9 records (ext units 0 .. walk - 1), then the reput's: the 23rd file's, the walk's
    t9 = _units(src, "T9")
    addr = [LONG_MIN + 20 * k for k in range(2 * walk + 1)]
    assert struct.pack(">qiq", *t9[0]) == FILL_PRE_BLANK_UNIT, t9[:3]
    assert t9[1] == (int(data[22].name) + ENTRY_HEADER_SIZE, t9[1][1], addr[walk]), ("appended at 20", t9[:4])
    if more:
        assert t9[2][0] > int(data[23].name) and t9[2][2] == addr[walk + 2], ("the walk's second at 40", t9[:4])
    assert not any(any(u) for u in t9[2 + more:]), t9[:5]
    ext = ext_units(src, "T9")
    assert len(ext) == 2 * walk + 1 and ext[:walk] == ext[walk + 1:] and ext[walk] not in ext[:walk], ext
    text = as_restart_matches_broker(src, tmp_path, sc, w, ext=True)
    assert "appends a record of queue offset 0 before the walk's data file" in text and \
        "then the walk's units by the same rule: T9/0 at 20" in text, text[-3000:]
    # every ext queue's ext units appended and orphaned the broker's: T0's 23590 (the 23rd data file's records and
    # the walk's again, each unit appended pointing at its own), none orphaned; T9's 3 (5), 2 (3) orphaned
    p = verify_restart(src, tmp_path / "figs")
    assert p is not None
    figs = ext_figures_as_the_broker(p, w, src)
    assert figs["T0/0"] == (23590, 23590, 0, 0) and figs["T9/0"][2] == 2 + more, figs


def past_2gib_before_no_file_ext_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-no-file-ext`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`test_dledger_2gib_before_more_broker.past_2gib_before_no_file_scenario` with ``enableConsumeQueueExt=true``
    (ext files of :data:`test_dledger_2gib_again_broker.EXT_FILE_SIZE` bytes)."""
    sc = past_2gib_before_no_file_scenario(line)
    return {**sc, "name": f"{sc['name']}-ext",
            "config": {**sc["config"], "enableConsumeQueueExt": "true",
                       "mappedFileSizeConsumeQueueExt": str(EXT_FILE_SIZE)}}


def test_crash_restart_with_ext_whose_reput_before_the_walk_parses_a_message_of_a_queue_the_cut_left_no_file(tmp_path):
    """The cut leaves T7's queue no file (max -1) and keeps its ext unit; the 5.5.1 broker's reput set at 2147483647
    parses the T7 message there (queue offset 3): its ext unit after the walk's, a new queue file, three
    ``fillPreBlank`` units, its unit holding that address; then goes on at the 23rd data file and appends the walk's
    T7 unit (queue offset 0: no order check) after it, holding the address of the third ext unit (the walk's record's
    again).  ``rebuild --as-restart`` writes ``consumequeue/``, ``consumequeue_ext/`` and ``index/`` byte for byte
    and ``verify``'s units lost are those the broker's queues do not hold (its ext figures on this store:
    tests/test_verify_ext_orphans_2gib_broker.py)."""
    sc = past_2gib_before_no_file_ext_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    load = w["queuesAfterLoad"]
    assert int(load["T7/0"]["maxPhysicOffset"]) == -1 and not load["T7/0"]["files"], load["T7/0"]
    msg = retargeted(BLANK_MAX, b"T7", 3)
    t7 = _units(src, "T7")
    assert [struct.pack(">qiq", *u) for u in t7[:3]] == [FILL_PRE_BLANK_UNIT] * 3, t7[:5]
    assert t7[3] == (BLANK_MAX, len(msg), LONG_MIN + 20), ("the parsed unit, its ext unit the second", t7[:5])
    assert t7[4][0] > int(data[23].name) and t7[4][2] == LONG_MIN + 40, ("the walk's T7 unit, the third", t7[:6])
    assert not any(any(u) for u in t7[5:]), t7[:6]
    ext = ext_units(src, "T7")
    assert len(ext) == 3 and ext[0] == ext[2] != ext[1], ext
    text = as_restart_matches_broker(src, tmp_path, sc, w, parsed=1, ext=True)
    assert "the cut left T7/0 with no file (max -1: ConsumeQueue.correctMinOffset), which it writes anew" in text, \
        text[-3000:]


LMQ = "%LMQ%q1"
LIGHT_PROPS = 56   # the bytes INNER_MULTI_DISPATCH=%LMQ%q1 and INNER_MULTI_QUEUE_OFFSET=<one digit> add to a record


def past_2gib_before_t9_first_light_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-t9-first-light`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`test_dledger_2gib_before_more_broker.past_2gib_before_t9_first_scenario` with ``enableMultiDispatch``/
    ``enableLmq`` whose two T9 messages (the 23rd data file's first, the log's last) also go to %LMQ%q1 (light queue
    offsets 0 and 1), their bodies shorter by :data:`LIGHT_PROPS`: the same layout."""
    sc = past_2gib_before_t9_first_scenario(line)
    t9 = [k for k, m in enumerate(sc["messages"]) if m.get("topic") == "T9"]
    assert len(t9) == 2, t9
    messages = list(sc["messages"])
    for n, k in enumerate(t9):
        assert messages[k]["bodySize"] == 100, messages[k]
        messages[k] = {**messages[k], "bodySize": 100 - LIGHT_PROPS,
                       "properties": {"INNER_MULTI_DISPATCH": LMQ, "INNER_MULTI_QUEUE_OFFSET": str(n)}}
    return {**sc, "messages": messages, "name": f"{sc['name']}-light",
            "config": {**sc["config"], "enableMultiDispatch": "true", "enableLmq": "true"}}


def test_crash_restart_whose_reput_before_the_walk_appends_a_light_unit_of_queue_offset_0(tmp_path):
    """The cut leaves T9 and %LMQ%q1 one ``fillPreBlank`` unit each (max 2147483647); the 5.5.1 broker's reput goes
    on at the 23rd data file and appends its T9 record's own unit and its light unit (queue offset 0 both: no order
    check) at 20, then drops the walk's (queue offset 1, below the write position 40).  ``rebuild --as-restart``
    writes ``consumequeue/`` and ``index/`` byte for byte and ``verify``'s units lost are those the broker's queues
    do not hold (the light units counted too)."""
    sc = past_2gib_before_t9_first_light_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    load = w["queuesAfterLoad"]
    assert int(load["T9/0"]["maxPhysicOffset"]) == BLANK_MAX == int(load[f"{LMQ}/0"]["maxPhysicOffset"]), load
    first = int(data[22].name) + ENTRY_HEADER_SIZE
    for topic in ("T9", LMQ):
        units = _units(src, topic)
        assert struct.pack(">qiq", *units[0]) == FILL_PRE_BLANK_UNIT and units[1][0] == first and \
            not any(any(u) for u in units[2:]), (topic, units[:3])
    assert _units(src, "T9")[1] == _units(src, LMQ)[1]
    text = as_restart(src, tmp_path / "ours")
    same_files_as_the_broker(src, tmp_path / "ours")
    assert "then the walk's units by the same rule: " in text and "T9/0 at 20" in text and f"{LMQ}/0 at 20" in text, \
        text[-3000:]
    p = verify_restart(src, tmp_path)
    held = held_units(src, ends=w["queuesAfterDispatch"], leave_out="")
    assert p is not None and p["units_lost"] == queued_messages(sc) + 2 - held, (held, p and p["notes"])


PARSED_QUEUE_OFFSET = 5


def past_2gib_before_t9_first_parsed_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-t9-first-parsed`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`test_dledger_2gib_before_more_broker.past_2gib_before_t9_first_scenario` with a well-formed T9 message of
    queue offset :data:`PARSED_QUEUE_OFFSET` at 2147483647 inside the T0 body there."""
    return with_embedded_message(past_2gib_before_t9_first_scenario(line), EMBED_T0_DATA, EMBED_AT_BODY_DATA,
                                 f"{line}-dledger-abort-past-2gib-before-t9-first-parsed",
                                 msg=retargeted(BLANK_MAX, b"T9", PARSED_QUEUE_OFFSET))


def test_crash_restart_whose_reput_before_the_walk_appends_a_queue_offset_0_record_after_a_parsed_unit(tmp_path):
    """The cut leaves T9 one ``fillPreBlank`` unit (max 2147483647); the 5.5.1 broker's reput set at 2147483647 parses
    the T9 message there (queue offset 5) and appends it at 20, goes on at the 23rd data file, appends its T9 unit
    (queue offset 0: no order check) at 40 and drops the walk's (queue offset 1).  ``rebuild --as-restart`` writes
    ``consumequeue/`` and ``index/`` byte for byte and ``verify``'s units lost are those the broker's queues do not
    hold (the parsed unit no message of the log's)."""
    sc = past_2gib_before_t9_first_parsed_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left fillPreBlank units only
    msg = retargeted(BLANK_MAX, b"T9", PARSED_QUEUE_OFFSET)
    t9 = _units(src, "T9")
    assert struct.pack(">qiq", *t9[0]) == FILL_PRE_BLANK_UNIT and t9[1][:2] == (BLANK_MAX, len(msg)), t9[:4]
    assert t9[2][0] == int(data[22].name) + ENTRY_HEADER_SIZE and not any(any(u) for u in t9[3:]), t9[:5]
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="", parsed=1)
    assert "then the walk's units by the same rule: T9/0 at 20, T9/0 at 40" in text, text[-3000:]

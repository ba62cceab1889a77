"""5.5.1 DLedger crash restarts whose start's reput, set at 2147483647 inside an entry of a data file before the
walk's, parses a message there going to a queue holding own and light units both that the cut left ``fillPreBlank``
units only, then goes on before the walk's data file and appends a record of queue offset 0 to that queue, checked
against the broker (``DLEDGER_2GIB=1`` only: some 2.3 GB of data files, its ``before/`` copy as much).

Both build on ``-past-2gib-before-t9-first-light-mixed``
(:func:`test_dledger_2gib_before_other_broker.past_2gib_before_t9_first_mixed_scenario`: %LMQ%q1/0 holds the two T9
records' light units, light queue offsets 0 and 1, and the log's last message's own unit, queue offset 0).
``-mixed-parsed-own`` (:func:`past_2gib_before_mixed_parsed_own_scenario`): a well-formed %LMQ%q1 message (own queue
offset :data:`PARSED_QUEUE_OFFSET`) at 2147483647 inside the T0 body there.  ``-mixed-parsed-light``
(:func:`past_2gib_before_mixed_parsed_light_scenario`): a well-formed T9 message there (queue offset
:data:`PARSED_QUEUE_OFFSET`) also going to %LMQ%q1 (light queue offset :data:`PARSED_QUEUE_OFFSET`).

``ConsumeQueue.putMessagePositionInfo`` checks each unit alike, own (``putMessagePositionInfoWrapper``) or light
(``multiDispatchLmqQueue``), each with its own counter's queue offset: at or below the max dropped, a queue offset not
0 below the write position dropped, any other appended at the write position.  So the parsed unit goes first (appended
at 20, past the max 2147483647 and the write position 20), the 23rd data file's T9 record's light unit (light queue
offset 0: no order check) at 40, the walk's light unit (1, below 60) drops and the walk's own unit (queue offset 0)
goes at 60.  ``rebuild --as-restart`` replays the queue so, the parsed unit first whatever its kind
(:func:`store_format.dledger_crash_before.appended_before`).

A record's own and light unit both in that queue (``putMessagePositionInfoWrapper`` puts its own unit, then
``multiDispatchLmqQueue`` its light one, whose end is then at the max: dropped), with ext files to tell the two apart
(an own unit holds its ext unit's address, a light one the request's tags code): the parsed message's
(``-mixed-ext-parsed-both``, :func:`past_2gib_before_mixed_parsed_both_ext_scenario`) and the walk's record's
(``-mixed-ext-self``, :func:`past_2gib_before_mixed_self_ext_scenario`: its light queue offset 2 would have gone at
40 had the light unit come first).
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
    as_restart_matches_broker,
    embedded_message,
    verify_restart,
    with_embedded_message,
    written,
)
from broker_dledger_files import ext_figures_as_the_broker
from test_dledger_2gib_again_broker import ext_units
from test_dledger_2gib_before_mixed_ext_broker import past_2gib_before_t9_first_mixed_ext_scenario
from test_dledger_2gib_before_other_broker import past_2gib_before_t9_first_mixed_scenario
from test_dledger_2gib_before_queues_broker import LIGHT_PROPS as LIGHT_PROPS_SIZE
from test_dledger_2gib_before_queues_broker import LMQ, PARSED_QUEUE_OFFSET

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()

LONG_MIN = -2**63
# the parsed T9 message's properties: also to %LMQ%q1 (light queue offset PARSED_QUEUE_OFFSET), keys E5
LIGHT_PROPS = (f"INNER_MULTI_DISPATCH\x01{LMQ}\x02INNER_MULTI_QUEUE_OFFSET\x01{PARSED_QUEUE_OFFSET}\x02"
               "KEYS\x01E5\x02").encode()


def parsed_own_message() -> bytes:
    """The %LMQ%q1 message (queue 0, own queue offset :data:`PARSED_QUEUE_OFFSET`, keys ``E5``) at 2147483647."""
    return embedded_message(BLANK_MAX, topic=LMQ.encode(), queue_offset=PARSED_QUEUE_OFFSET)


def parsed_light_message() -> bytes:
    """The T9 message (queue 0, queue offset :data:`PARSED_QUEUE_OFFSET`) at 2147483647 also going to %LMQ%q1."""
    return embedded_message(BLANK_MAX, props=LIGHT_PROPS, topic=b"T9", queue_offset=PARSED_QUEUE_OFFSET)


def past_2gib_before_mixed_parsed_own_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-t9-first-light-mixed-parsed-own`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`test_dledger_2gib_before_other_broker.past_2gib_before_t9_first_mixed_scenario` with
    :func:`parsed_own_message` at 2147483647 inside the T0 body there."""
    sc = past_2gib_before_t9_first_mixed_scenario(line)
    return with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA, f"{sc['name']}-parsed-own",
                                 msg=parsed_own_message())


def past_2gib_before_mixed_parsed_light_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-t9-first-light-mixed-parsed-light`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`test_dledger_2gib_before_other_broker.past_2gib_before_t9_first_mixed_scenario` with
    :func:`parsed_light_message` at 2147483647 inside the T0 body there."""
    sc = past_2gib_before_t9_first_mixed_scenario(line)
    return with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA, f"{sc['name']}-parsed-light",
                                 msg=parsed_light_message())


def _units(src, topic: str) -> list[tuple[int, int, int]]:  # noqa: ANN001
    files = sorted((src / "expected" / "consumequeue" / topic / "0").iterdir())
    return [struct.unpack(">qiq", b[i:i + 20]) for f in files for b in (f.read_bytes(),)
            for i in range(0, len(b) - 19, 20)]


def _broker_replayed_the_mixed_queue(w: dict, src, msg: bytes, tags: int = 0) -> None:  # noqa: ANN001
    """What the 5.5.1 broker's reput left in %LMQ%q1/0 (the cut's ``fillPreBlank`` unit, max 2147483647): the parsed
    unit (``msg``'s, at 2147483647, ``tags`` in its tags code field) at 20, the 23rd data file's T9 record's light
    unit (light queue offset 0) at 40, the walk's own unit (queue offset 0) at 60, the walk's light unit (1, below the
    write position) dropped."""
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    load = w["queuesAfterLoad"]
    assert int(load["T9/0"]["maxPhysicOffset"]) == BLANK_MAX == int(load[f"{LMQ}/0"]["maxPhysicOffset"]), load
    own = int(w["queuesAfterDispatch"][f"{LMQ}/0"]["maxPhysicOffset"])   # the log's last record, its own unit
    units = _units(src, LMQ)
    assert struct.pack(">qiq", *units[0]) == FILL_PRE_BLANK_UNIT, units[:5]
    assert units[1] == (BLANK_MAX, len(msg), tags), ("the parsed unit at 20", units[:5])
    assert units[2][0] == int(data[22].name) + ENTRY_HEADER_SIZE, ("the 23rd file's T9 light unit at 40", units[:5])
    assert units[3][0] + units[3][1] == own and units[3][0] > int(data[23].name), ("the walk's own unit at 60", units)
    assert not any(any(u) for u in units[4:]), ("the walk's light unit dropped", units[:6])


def test_crash_restart_whose_reput_before_the_walk_appends_to_a_mixed_queue_after_a_parsed_own_unit(tmp_path):
    """The cut leaves %LMQ%q1 one ``fillPreBlank`` unit (max 2147483647); the 5.5.1 broker's reput set at 2147483647
    parses the %LMQ%q1 message there (own queue offset 5) and appends its unit at 20, goes on at the 23rd data file,
    appends its T9 record's light unit (light queue offset 0) at 40, drops the walk's light unit (1) and appends the
    walk's own unit (queue offset 0) at 60.  ``rebuild --as-restart`` writes ``consumequeue/`` and ``index/`` byte for
    byte; ``verify``'s units lost are those the broker's queues do not hold (the parsed unit no message of the log's,
    the T9 records' light units the rebuild's too) and its index keys put again the broker's index keys."""
    sc = past_2gib_before_mixed_parsed_own_scenario(LINE)
    w, src = written(sc, tmp_path)
    _broker_replayed_the_mixed_queue(w, src, parsed_own_message())
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="", parsed=1, light=2)
    assert f"then the walk's units by the same rule: {LMQ}/0 at 20, {LMQ}/0 at 40, {LMQ}/0 at 60" in text, \
        text[-3000:]


def test_crash_restart_whose_reput_before_the_walk_appends_to_a_mixed_queue_after_a_parsed_light_unit(tmp_path):
    """The same with a T9 message at 2147483647 (queue offset 5) also going to %LMQ%q1 (light queue offset 5): the
    5.5.1 broker's reput appends its T9 unit at 20 in T9's queue and its light unit at 20 in %LMQ%q1's, then the 23rd
    data file's T9 record's units at 40 (T9's own unit, queue offset 0, and its light unit), drops the walk's T9 unit
    and light unit (queue offset 1 both) and appends the walk's own %LMQ%q1 unit at 60.  ``rebuild --as-restart``
    writes ``consumequeue/`` and ``index/`` byte for byte and ``verify``'s units lost are those the broker's queues do
    not hold (the parsed units no message of the log's)."""
    sc = past_2gib_before_mixed_parsed_light_scenario(LINE)
    w, src = written(sc, tmp_path)
    msg = parsed_light_message()
    _broker_replayed_the_mixed_queue(w, src, msg)
    t9 = _units(src, "T9")
    assert t9[1] == (BLANK_MAX, len(msg), 0) and t9[2][0] == _units(src, LMQ)[2][0], t9[:4]
    assert not any(any(u) for u in t9[3:]), ("the walk's T9 unit dropped", t9[:5])
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="", parsed=2, light=2)
    assert f"{LMQ}/0 at 20, {LMQ}/0 at 40, {LMQ}/0 at 60" in text and "T9/0 at 20, T9/0 at 40" in text, text[-3000:]


# the parsed %LMQ%q1 message's properties for -parsed-both: also to %LMQ%q1 itself (light queue offset
# PARSED_QUEUE_OFFSET), keys E5
BOTH_PROPS = (f"INNER_MULTI_DISPATCH\x01{LMQ}\x02INNER_MULTI_QUEUE_OFFSET\x01{PARSED_QUEUE_OFFSET}\x02"
              "KEYS\x01E5\x02").encode()


def parsed_both_message() -> bytes:
    """The %LMQ%q1 message (own queue offset :data:`PARSED_QUEUE_OFFSET`) at 2147483647 also going to %LMQ%q1 itself
    (light queue offset :data:`PARSED_QUEUE_OFFSET`): its own and light unit both in that queue."""
    return embedded_message(BLANK_MAX, props=BOTH_PROPS, topic=LMQ.encode(), queue_offset=PARSED_QUEUE_OFFSET)


def past_2gib_before_mixed_parsed_both_ext_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-t9-first-light-mixed-parsed-both-ext`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`test_dledger_2gib_before_mixed_ext_broker.past_2gib_before_t9_first_mixed_ext_scenario` (ext files) with
    :func:`parsed_both_message` at 2147483647 inside the T0 body there."""
    sc = past_2gib_before_t9_first_mixed_ext_scenario(line)
    return with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA, f"{sc['name']}-parsed-both",
                                 msg=parsed_both_message())


def test_crash_restart_with_ext_whose_reput_before_the_walk_drops_a_parsed_records_light_unit_in_its_own_queue(
        tmp_path):
    """With ext files, the %LMQ%q1 message parsed at 2147483647 also going to %LMQ%q1 itself: the 5.5.1 broker's reput
    puts its ext unit (the second, after the walk's own record's the cut kept) and appends its own unit at 20 holding
    that address, then ``multiDispatchLmqQueue`` drops its light unit (its end at the max its own unit set); the 23rd
    data file's T9 record's light unit goes at 40 (the request's tags code, no ext unit), the walk's own unit at 60
    holding the third ext unit's address (that record's again), its light unit dropped.  ``rebuild --as-restart``
    writes ``consumequeue/``, ``consumequeue_ext/`` and ``index/`` byte for byte (the parsed record's own unit before
    its light one) and ``verify``'s units lost are those the broker's queues do not hold."""
    sc = past_2gib_before_mixed_parsed_both_ext_scenario(LINE)
    w, src = written(sc, tmp_path)
    msg = parsed_both_message()
    assert w["queuesAfterLoad"][f"{LMQ}/0"]["extFiles"], w["queuesAfterLoad"][f"{LMQ}/0"]   # the cut kept it
    units = _units(src, LMQ)
    assert units[1] == (BLANK_MAX, len(msg), LONG_MIN + 20), ("the parsed own unit at 20, the second ext unit", units)
    assert units[2][2] == 0 and units[3][2] == LONG_MIN + 40, ("a light unit at 40, the walk's own unit at 60", units)
    ext = ext_units(src, LMQ)
    assert len(ext) == 3 and ext[0] == ext[2] != ext[1], ("the walk's own record's, the parsed one's, again", ext)
    _broker_replayed_the_mixed_queue(w, src, msg, tags=LONG_MIN + 20)
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="", parsed=1, light=2, ext=True)
    assert f"then the walk's units by the same rule: {LMQ}/0 at 20, {LMQ}/0 at 40, {LMQ}/0 at 60" in text, \
        text[-3000:]
    p = verify_restart(src, tmp_path / "again")
    assert p is not None
    figs = ext_figures_as_the_broker(p, w, src)   # every ext queue's appended and orphaned: the broker's
    assert figs[f"{LMQ}/0"][:2] == (3, 3), figs


SELF_LIGHT_QUEUE_OFFSET = 2   # the log's last %LMQ%q1 message's light queue offset (after the two T9 records')


def past_2gib_before_mixed_self_ext_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-t9-first-light-mixed-ext-self`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`test_dledger_2gib_before_mixed_ext_broker.past_2gib_before_t9_first_mixed_ext_scenario` whose last message
    (to %LMQ%q1 itself, own queue offset 0) also goes to %LMQ%q1 (light queue offset
    :data:`SELF_LIGHT_QUEUE_OFFSET`), its body shorter by
    :data:`test_dledger_2gib_before_queues_broker.LIGHT_PROPS`: the walk's record's own and light unit both in it."""
    sc = past_2gib_before_t9_first_mixed_ext_scenario(line)
    *head, last = sc["messages"]
    assert last["topic"] == LMQ and last["bodySize"] == 100, last
    last = {**last, "bodySize": 100 - LIGHT_PROPS_SIZE,
            "properties": {"INNER_MULTI_DISPATCH": LMQ, "INNER_MULTI_QUEUE_OFFSET": str(SELF_LIGHT_QUEUE_OFFSET)}}
    return {**sc, "messages": [*head, last], "name": f"{sc['name']}-self"}


def test_crash_restart_with_ext_whose_reput_before_the_walk_drops_a_walk_records_light_unit_in_its_own_queue(
        tmp_path):
    """With ext files, the walk's %LMQ%q1 record (own queue offset 0) also going to %LMQ%q1 (light queue offset 2):
    the 5.5.1 broker's reput goes on at the 23rd data file, appends its T9 record's light unit at 20 (no ext unit),
    drops the walk's T9 light unit (1, below 40), puts the walk's %LMQ%q1 record's ext unit again and appends its own
    unit at 40 holding that second ext unit's address, then drops its light unit (its end at the max its own unit
    set; light queue offset 2 would have gone at 40 the other way round).  ``rebuild --as-restart`` writes
    ``consumequeue/``, ``consumequeue_ext/`` and ``index/`` byte for byte and ``verify``'s units lost are those the
    broker's queues do not hold."""
    sc = past_2gib_before_mixed_self_ext_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    load = w["queuesAfterLoad"]
    assert int(load["T9/0"]["maxPhysicOffset"]) == BLANK_MAX == int(load[f"{LMQ}/0"]["maxPhysicOffset"]), load
    own = int(w["queuesAfterDispatch"][f"{LMQ}/0"]["maxPhysicOffset"])   # the log's last record
    units = _units(src, LMQ)
    assert struct.pack(">qiq", *units[0]) == FILL_PRE_BLANK_UNIT, units[:4]
    assert units[1][0] == int(data[22].name) + ENTRY_HEADER_SIZE and units[1][2] == 0, ("a light unit at 20", units)
    assert units[2][0] + units[2][1] == own and units[2][2] == LONG_MIN + 20, ("its own unit at 40, not light", units)
    assert not any(any(u) for u in units[3:]), ("its light unit dropped", units[:5])
    ext = ext_units(src, LMQ)
    assert len(ext) == 2 and ext[0] == ext[1], ("the walk's own record's ext unit twice", ext)
    # the T9 records' light units (the reference, a rebuild, drops the self one by the same rule)
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="", light=2, ext=True)
    assert f"then the walk's units by the same rule: {LMQ}/0 at 20, {LMQ}/0 at 40, T9/0 at 20" in text, text[-3000:]

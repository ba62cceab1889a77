"""``verify`` of a 5.5.1 DLedger crash store past 2 GiB whose recovery walk dispatches nothing and whose start's reput
the cut sets at 2147483647, inside an entry, where its check parses a message that also goes to a light queue
(multi-dispatch), checked against the broker (``DLEDGER_2GIB=1`` only: some 2.15 GB of data files, as much again in
``before/``; minutes).

``5.5.1-dledger-abort-propcrc-kept-past-2gib-embedded-light`` (:func:`embedded_light_scenario`): the
``-propcrc-kept-past-2gib`` store
(:func:`broker_dledger_walked_nothing_inside_scenarios.walked_nothing_past_2gib_scenario`) with
``enableMultiDispatch``/``enableLmq``, whose last T0 body holds, from 2147483647 on, a well-formed T5/0 message (keys
``E5``) whose properties also send it to the light queue ``%LMQ%q1`` at light queue offset :data:`LIGHT_QUEUE_OFFSET`
(``INNER_MULTI_DISPATCH``, ``INNER_MULTI_QUEUE_OFFSET``).  ``dledgerRecoverAbnormally`` walks nothing,
``truncateDirtyLogicFiles`` at the 22nd data file's start leaves T9 with its ``fillPreBlank`` unit only (max
2147483647, the largest) and T0 its units of the earlier files; ``doRecheckReputOffsetFromCq`` sets the reput at
2147483647, where ``DLedgerCommitLog``'s check parses the message: ``doDispatch`` hands it to
``ConsumeQueue.putMessagePositionInfoWrapper``, which puts T5/0's unit (a new queue: at 0) and then, the properties
naming light queues (``MultiDispatchUtils.checkMultiDispatchQueue``), ``multiDispatchLmqQueue``:
``putMessagePositionInfo`` on ``%LMQ%q1`` queue 0 (``enableLmq``: queue id 0) at the light queue offset, a new queue
(``getLastMappedFile`` creates its first file, ``fillPreBlank`` units before the unit: ``isFirstCreateInQueue``);
``IndexService.buildIndex`` indexes ``E5`` once (no key for a light queue).  Its next check fails on the body's 'x'
bytes and it jumps to the log's end: every unit of the 22nd data file stays lost.

The broker's queues after ``load()`` and after the reput, the T5 and ``%LMQ%q1`` units and the index are asserted
first; then ``verify`` on the store as the restart found it predicts that restart (units lost, none put again, the
one index key; no queue of the store touched by the parsed units), and the units the model reads in the parsed
message are the broker's, the light one placed by ``putMessagePositionInfo``'s rule on a new queue
(:func:`store_format.dledger_inside_state.put_cq`) where the broker put it.
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
    embedded_message,
    first_queue_file,
    held_units,
    log_bytes,
    queued_messages,
    t0_record_at_2147483647,
    with_embedded_message,
    written,
)
from broker_dledger_walked_nothing_inside_scenarios import PAST_2GIB_T9_LAST, walked_nothing_past_2gib_scenario
from test_dledger_walked_nothing_2gib_broker import _index_keys, _verify

from store_format.config import load_broker_config
from store_format.dledger_inside_state import WalkedQueue, put_cq
from store_format.dledger_inside_units import parsed_units

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()

LIGHT = "%LMQ%q1"
LIGHT_QUEUE_OFFSET = 2   # past 0: putMessagePositionInfo on the new light queue puts fillPreBlank units first
LIGHT_PROPS = (f"KEYS\x01E5\x02INNER_MULTI_DISPATCH\x01{LIGHT}\x02INNER_MULTI_QUEUE_OFFSET\x01{LIGHT_QUEUE_OFFSET}\x02"
               .encode())


def light_message() -> bytes:
    """The T5/0 message at 2147483647 (queue offset 0, keys ``E5``, its PHYSICALOFFSET field 2147483647) that also
    goes to ``%LMQ%q1`` at :data:`LIGHT_QUEUE_OFFSET`."""
    return embedded_message(BLANK_MAX, props=LIGHT_PROPS)


def embedded_light_scenario(line: str = LINE) -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib-embedded-light``: above."""
    sc = walked_nothing_past_2gib_scenario(line)
    sc = with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA, f"{sc['name']}-embedded-light", light_message())
    return {**sc, "config": {**sc["config"], "enableMultiDispatch": "true", "enableLmq": "true"}}


CUT_T0 = 11207   # T0's units in the 22nd data file (the cut takes them)


def test_verify_predicts_a_message_for_a_new_light_queue_parsed_at_2147483647(tmp_path, monkeypatch) -> None:
    """What the broker wrote first (the cut at the 22nd data file's start, below 2147483647; after ``load()`` T0 with
    its units below it, T9 with its ``fillPreBlank`` unit only; the light message at 2147483647; after the reput T0
    and T9 as ``load()`` left them, T5/0's one unit at 0, ``%LMQ%q1``/0 created with :data:`LIGHT_QUEUE_OFFSET`
    ``fillPreBlank`` units and the same unit after them, E5 the one key indexed); then verify predicts the reput set
    at 2147483647 parsing the message and going on at the log's end (every unit of the 22nd data file lost, none put
    again, the one index key, its note naming the reput set inside an entry; T0/0 and T9/0 as the load left them)
    with no queue of the store replayed, and the units the model reads in the message (the rule that places a light
    unit on a new queue) are where the broker put them."""
    sc = embedded_light_scenario()
    w, src = written(sc, tmp_path)
    end, cut = int(w["maxPhyOffset"]), int(w["truncateDirtyLogicFilesAt"])
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 22 and cut == int(data[-1].name) < BLANK_MAX < PAST_2GIB_T9_LAST < end, (cut, end)
    msg = light_message()
    record = t0_record_at_2147483647(src)
    assert record[88 + EMBED_AT_BODY_DATA:88 + EMBED_AT_BODY_DATA + len(msg)] == msg, "the bytes at 2147483647"
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    assert set(loaded) == {"T0/0", "T9/0"}, loaded
    assert int(loaded["T9/0"]["maxPhysicOffset"]) == BLANK_MAX and int(loaded["T9/0"]["maxOffset"]) == 20, loaded
    assert int(loaded["T0/0"]["maxPhysicOffset"]) < cut, loaded["T0/0"]
    assert set(after) == {"T0/0", "T9/0", "T5/0", f"{LIGHT}/0"}, after
    assert after["T0/0"] == loaded["T0/0"] and after["T9/0"] == loaded["T9/0"], after   # no cut unit put back
    unit = struct.pack(">qiq", BLANK_MAX, len(msg), 0)
    t5 = first_queue_file(src, "T5/0")
    assert t5[:20] == unit and not any(t5[20:]), t5[:40].hex()
    light = first_queue_file(src, f"{LIGHT}/0")
    at = 20 * LIGHT_QUEUE_OFFSET
    assert (int(after[f"{LIGHT}/0"]["maxOffset"]), int(after[f"{LIGHT}/0"]["maxPhysicOffset"])) == (
        at + 20, BLANK_MAX + len(msg)), after[f"{LIGHT}/0"]
    assert light[:at] == FILL_PRE_BLANK_UNIT * LIGHT_QUEUE_OFFSET and light[at:at + 20] == unit, light[:at + 40].hex()
    assert not any(light[at + 20:]), "nothing after the light unit"
    assert _index_keys(src) == 1, "E5 indexed, once"
    p, note, crash = _verify(src, tmp_path, monkeypatch)
    # the queued messages' units but those the broker's queues hold (T5's and the light unit are no message's)
    lost = queued_messages(sc) - held_units(src, ends=after, leave_out="T5") + 1
    assert p["units_lost"] == lost == CUT_T0 + 2 and p["units_dispatched_again"] == 0, (p["units_lost"], lost, note)
    assert p["index_keys_put_again"] == 1, (p["index_keys_put_again"], p["notes"])
    # the index note names the case (the reput set inside an entry parsed the message), not an accelerated walk
    assert any(n.startswith("the start's reput, set inside an entry, parses messages there whose 1 index key(s)")
               for n in p["notes"]), p["notes"]
    # T0/0 and T9/0 as the broker's load left them after the cut (the reput put nothing back: as after it too)
    listed = {q["queue"]: (q["write_position"], q["max_physic_offset"]) for q in p["queues"]}
    assert {q: listed.get(q) for q in loaded} == {
        q: (int(s["maxOffset"]), int(s["maxPhysicOffset"])) for q, s in loaded.items()}, (listed, loaded)
    assert "where its check parses 1 message(s), then fails" in note and f"getData hands, {end};" in note, note
    assert crash.walked_nothing and crash.process_offset == cut and crash.reput_from == end, crash
    assert crash.cut is not None and crash.cut.inside_from == BLANK_MAX and crash.gap == (cut, end), crash
    assert crash.cut.inside_records == ((BLANK_MAX, BLANK_MAX + len(msg)),) and crash.inside_keys == (BLANK_MAX,)
    assert crash.cut.inside_placed.whole == () and crash.cut.inside_placed.ext_put == (), crash.cut.inside_placed
    # the units the model reads in the parsed message, and the light one on a new queue by putMessagePositionInfo's
    # rule (no file, the max -1: its first file where the queue offset falls, fillPreBlank units before it)
    config = load_broker_config((src / "broker.conf").read_text(), brokerVersion="5.5")
    units = parsed_units(lambda pos, n: log_bytes(src, pos, n), crash.cut.inside_records, config)
    assert [(u.topic, u.queue_id, u.offset, u.size, u.queue_offset, u.tags_code, u.own) for u in units] == [
        ("T5", 0, BLANK_MAX, len(msg), 0, 0, True), (LIGHT, 0, BLANK_MAX, len(msg), LIGHT_QUEUE_OFFSET, 0, False)]
    opened: list[tuple[str, int, int]] = []
    blanks: list[tuple[str, int, int]] = []
    q = WalkedQueue(-1, -1, -1, -1)
    assert put_cq((LIGHT, 0), q, BLANK_MAX + len(msg), LIGHT_QUEUE_OFFSET, config.cq_file_size, opened, blanks) == at
    assert (opened, blanks, q.max) == ([(LIGHT, 0, 0)], [(LIGHT, 0, at)], int(after[f"{LIGHT}/0"]["maxPhysicOffset"]))

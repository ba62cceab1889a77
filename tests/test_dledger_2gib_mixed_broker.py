"""A 5.5.1 DLedger crash restart whose cut leaves a queue holding a record's own units and light ones (``%LMQ%q9``:
messages put to that topic itself, one multi-dispatched into it) with ``fillPreBlank`` units only, so that its max,
2147483647, sets the start's reput inside an entry of a log past 2 GiB, where the broker's check parses a message for
that queue, checked against the broker (``DLEDGER_2GIB=1`` only: some 2.15 GB of data, its ``before/`` copy as much).

The ``-past-2gib-mixed-blank`` store (:func:`broker_dledger_2gib_mixed_scenarios.past_2gib_mixed_blank_scenario`):
``ConsumeQueue.putMessagePositionInfo`` in the walk puts the last %LMQ%q9 message's own unit (queue offset 1, no file:
``fillPreBlank`` unit at 0) at 20 and the T8 message's light unit (queue offset 0) at 40, both past processOffset;
``truncateDirtyLogicFiles`` keeps the blank unit (offset 0, size ``Integer.MAX_VALUE``): write position 20, max
2147483647 (:func:`store_format.dledger_inside_mixed.mixed_state`).  The reput set there parses a %LMQ%q9 message up
to the last %LMQ%q9 entry, appends its unit at 20, then walks the entries on: the own cut unit ends at or below the
parsed unit's end (dropped), the light one goes to 40.  ``rebuild --as-restart`` must write the broker's
``consumequeue/`` and ``index/`` byte for byte and ``verify`` predict its units lost and keys put again.  The
``-two`` store (two messages parsed there): the first, its end at or below 2147483647, dropped by that max; the
second's light unit at 20; the own cut unit dropped by its queue offset, the light one at 40.  The ``-back`` store
(no parsed unit for it): its last two cut units put back by the rule from that state, the first one left cut.
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    EMBED_AT_BODY_DATA,
    FILL_PRE_BLANK_UNIT,
    LINE,
    NEEDS_2GIB,
    T0_TAIL,
    T9_ENTRY,
    as_restart,
    entry_bound_message,
    first_queue_file,
    held_units,
    log_bytes,
    queued_messages,
    same_files_as_the_broker,
    t0_record_at_2147483647,
    verify_restart,
    written,
)
from broker_dledger_2gib_mixed_scenarios import (
    MIXED,
    MIXED_FIELD,
    TWO_LOW_FIELD,
    mixed_parsed_message,
    mixed_parsed_two,
    past_2gib_mixed_blank_back_scenario,
    past_2gib_mixed_blank_scenario,
)

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store]

bh.skip_without_tools()

OWN_SIZE = 88 + 95 + 1 + len(MIXED) + 2 + len(b"KEYS\x01K9\x02")   # the last %LMQ%q9 record (keys K9)
LIGHT_AT = MIXED_FIELD + OWN_SIZE + ENTRY_HEADER_SIZE         # the T8 record after it
LIGHT_SIZE = 88 + 100 + 1 + 2 + 2 + len(b"INNER_MULTI_DISPATCH\x01%LMQ%q9\x02INNER_MULTI_QUEUE_OFFSET\x010\x02")


@NEEDS_2GIB
def test_crash_restart_whose_mixed_queue_left_with_fill_pre_blank_units_sets_the_reput_at_2147483647(tmp_path):
    """The cut leaves %LMQ%q9/0 (own and light units) its ``fillPreBlank`` unit only: write position 20, max
    2147483647, the largest of the queues' maxes, where ``doRecheckReputOffsetFromCq`` sets the reput, inside the last
    T0 entry's body.  The 5.5.1 broker's check parses the %LMQ%q9 message there (to the T0 record's end), appends its
    unit at 20 (its PHYSICALOFFSET field, the last %LMQ%q9 record's offset), walks on from the next entry: the own cut
    unit (queue offset 1) ends below the parsed unit's end, dropped; T8's light unit (queue offset 0) appended at 40,
    its own unit back in T8/0 (emptied by the cut).  ``rebuild --as-restart``: the broker's ``consumequeue/`` and
    ``index/`` byte for byte; ``verify``: its units lost and index keys put again."""
    sc = past_2gib_mixed_blank_scenario(LINE)
    w, src = written(sc, tmp_path)
    msg = mixed_parsed_message()
    record = t0_record_at_2147483647(src, len(T0_TAIL) + ENTRY_HEADER_SIZE)
    at = 88 + EMBED_AT_BODY_DATA   # 2147483647 in the record
    assert record[at:at + len(msg)] == msg, "the %LMQ%q9 message from 2147483647 to the T0 record's end"
    # the records after it: the last %LMQ%q9 message (its own unit, queue offset 1), the T8 one also to %LMQ%q9
    own, light = log_bytes(src, MIXED_FIELD, 28), log_bytes(src, LIGHT_AT, 28)
    assert struct.unpack(">i", own[:4])[0] == OWN_SIZE and struct.unpack(">q", own[20:28])[0] == 1, own
    assert struct.unpack(">i", light[:4])[0] == LIGHT_SIZE and LIGHT_AT + LIGHT_SIZE == w["maxPhyOffset"], light
    # what the cut left (the harness after load, before the reput): %LMQ%q9/0 its fillPreBlank unit only, write
    # position 20, max 2147483647, the largest: the reput's start; T8/0 no file
    loaded = w["queuesAfterLoad"]
    mixed = loaded[f"{MIXED}/0"]
    assert (mixed["maxPhysicOffset"], mixed["maxOffset"], mixed["files"]) == (BLANK_MAX, 20, [f"{0:020d}"]), mixed
    assert max(int(q["maxPhysicOffset"]) for q in loaded.values()) == BLANK_MAX, loaded
    assert w["truncateDirtyLogicFilesAt"] < BLANK_MAX and (loaded["T8/0"]["files"], loaded["T8/0"]["maxPhysicOffset"]) \
        == ([], -1), loaded
    # what the broker's reput did: the parsed unit at 20, the light unit at 40 (the own cut unit dropped)
    units = first_queue_file(src, f"{MIXED}/0")
    assert units[:60] == FILL_PRE_BLANK_UNIT + struct.pack(">qiqqiq", MIXED_FIELD, len(msg), 0, LIGHT_AT, LIGHT_SIZE,
                                                           0) and not any(units[60:]), units[:80].hex()
    assert int(w["queuesAfterDispatch"][f"{MIXED}/0"]["maxOffset"]) == 60, w["queuesAfterDispatch"]
    t8 = first_queue_file(src, "T8/0")
    assert t8[:20] == struct.pack(">qiq", LIGHT_AT, LIGHT_SIZE, 0) and not any(t8[20:]), t8[:40].hex()
    text = as_restart(src, tmp_path / "ours")
    same_files_as_the_broker(src, tmp_path / "ours")
    assert f"parses 1 message(s) ({BLANK_MAX} to {T9_ENTRY})" in text and f"{MIXED}/0 at 20" in text, text[-3000:]
    p = verify_restart(src, tmp_path)
    # the reference (a rebuild) holds a unit per queued message and T8's light unit; the broker's queues hold the
    # parsed unit, no message of the log
    held = held_units(src, ends=w["queuesAfterDispatch"], leave_out="") - 1
    assert p is not None and p["units_lost"] == queued_messages(sc) + 1 - held, (held, p and p["notes"])
    keys = sum(struct.unpack(">i", f.read_bytes()[36:40])[0] - 1 for f in (src / "expected" / "index").iterdir())
    assert keys == 3 and p["index_keys_put_again"] == keys, (keys, p["index_keys_put_again"], p["notes"])


@NEEDS_2GIB
def test_crash_restart_whose_mixed_queue_left_with_fill_pre_blank_units_keeps_their_max(tmp_path):
    """The ``-two`` store: two messages parsed at 2147483647.  The first, for %LMQ%q9 (own queue offset 0), its
    PHYSICALOFFSET field 1000: its end at or below the max the ``fillPreBlank`` unit left (2147483647), the 5.5.1
    broker drops it; the second, for T7/0 and %LMQ%q9 (light queue offset 3: 60 past the write position 20), goes
    to 20 (T7/0's unit, a queue the walk did not write, at 0).  The reput walks on from the next entry: the own cut
    unit (queue offset 1: 20 below the write position 40) dropped, T8's light unit (queue offset 0) at 40.
    ``rebuild --as-restart``: the broker's ``consumequeue/`` and ``index/`` byte for byte (E7 below the index's
    endPhyOffset, not indexed; K9 again); ``verify``: its units lost and index keys put again."""
    sc = past_2gib_mixed_blank_scenario(LINE, two=True)
    w, src = written(sc, tmp_path)
    first, second = mixed_parsed_two()
    record = t0_record_at_2147483647(src, len(T0_TAIL) + ENTRY_HEADER_SIZE)
    at = 88 + EMBED_AT_BODY_DATA   # 2147483647 in the record
    assert record[at:at + len(first) + len(second)] == first + second, "the two messages from 2147483647 on"
    mixed = w["queuesAfterLoad"][f"{MIXED}/0"]
    assert (mixed["maxPhysicOffset"], mixed["maxOffset"]) == (BLANK_MAX, 20), mixed
    assert TWO_LOW_FIELD + len(first) <= BLANK_MAX, "the first parsed unit ends at or below the cut's max"
    # what the broker's reput did: the first parsed unit dropped, the second's light unit at 20, T8's at 40
    units = first_queue_file(src, f"{MIXED}/0")
    second_at = BLANK_MAX + len(first)
    assert units[:60] == FILL_PRE_BLANK_UNIT + struct.pack(">qiqqiq", second_at, len(second), 0, LIGHT_AT, LIGHT_SIZE,
                                                           0) and not any(units[60:]), units[:80].hex()
    t7 = first_queue_file(src, "T7/0")
    assert t7[:20] == struct.pack(">qiq", second_at, len(second), 0) and not any(t7[20:]), t7[:40].hex()
    assert int(log_bytes(src, MIXED_FIELD + 20, 8).hex(), 16) == 1, "the own cut unit's queue offset 1"
    text = as_restart(src, tmp_path / "ours")
    same_files_as_the_broker(src, tmp_path / "ours")
    assert f"parses 2 message(s) ({BLANK_MAX} to {second_at}, {second_at} to {T9_ENTRY})" in text and \
        f"{MIXED}/0 at 20" in text, text[-3000:]
    p = verify_restart(src, tmp_path)
    # the broker's queues hold the second parsed message's two units (T7/0's, %LMQ%q9's), no message of the log
    held = held_units(src, ends=w["queuesAfterDispatch"], leave_out="") - 2
    assert p is not None and p["units_lost"] == queued_messages(sc) + 1 - held, (held, p and p["notes"])
    keys = sum(struct.unpack(">i", f.read_bytes()[36:40])[0] - 1 for f in (src / "expected" / "index").iterdir())
    assert keys == 2 and p["index_keys_put_again"] == keys, (keys, p["index_keys_put_again"], p["notes"])


@NEEDS_2GIB
def test_crash_restart_whose_mixed_queue_left_with_fill_pre_blank_units_gets_its_last_cut_units_back(tmp_path):
    """The ``-back`` store: %LMQ%q9/0's own units of queue offsets 1 (a T0 message's place, past processOffset and
    below 2147483647) and 2 (the last %LMQ%q9 message), and T8's light unit (queue offset 0), all cut, the
    ``fillPreBlank`` unit kept (write position 20, max 2147483647, the reput's start).  The message parsed there is
    T5's (the ``-embedded-to-entry`` one): no parsed unit for %LMQ%q9, and the 5.5.1 broker, walking on from the
    last %LMQ%q9 entry, dispatches its last two cut units again: own unit 2 appended at 20 (40 past the write
    position), the light one at 40; own unit 1 stays cut.  ``rebuild --as-restart`` (the queue replayed whole from
    the cut's state, ``dledger_inside_mixed.mixed_put_back``): the broker's ``consumequeue/`` and ``index/`` byte for
    byte; ``verify``: its units lost and index keys put again."""
    sc = past_2gib_mixed_blank_back_scenario(LINE)
    w, src = written(sc, tmp_path)
    msg = entry_bound_message()
    assert log_bytes(src, BLANK_MAX, len(msg)) == msg, "the T5 message from 2147483647 to the last T0 record's end"
    back = log_bytes(src, BLANK_MAX - EMBED_AT_BODY_DATA - 88 - 10 * (4189 + ENTRY_HEADER_SIZE), 28)
    assert struct.unpack(">i", back[:4])[0] == 4189 and struct.unpack(">q", back[20:28])[0] == 1, back
    assert int(log_bytes(src, MIXED_FIELD + 20, 8).hex(), 16) == 2, "the last %LMQ%q9 record's queue offset 2"
    mixed = w["queuesAfterLoad"][f"{MIXED}/0"]
    assert (mixed["maxPhysicOffset"], mixed["maxOffset"]) == (BLANK_MAX, 20), mixed
    assert w["truncateDirtyLogicFilesAt"] < BLANK_MAX - EMBED_AT_BODY_DATA - 88 - 10 * (4189 + ENTRY_HEADER_SIZE)
    # what the broker's reput did: own unit 2 at 20, the light unit at 40 (the walk's light unit's bytes at 60 stay)
    units = first_queue_file(src, f"{MIXED}/0")
    light = struct.pack(">qiq", LIGHT_AT, LIGHT_SIZE, 0)
    assert units[:80] == FILL_PRE_BLANK_UNIT + struct.pack(">qiq", MIXED_FIELD, OWN_SIZE, 0) + light + light and \
        not any(units[80:]), units[:100].hex()
    assert int(w["queuesAfterDispatch"][f"{MIXED}/0"]["maxOffset"]) == 60, w["queuesAfterDispatch"]
    text = as_restart(src, tmp_path / "ours")
    same_files_as_the_broker(src, tmp_path / "ours")
    assert f"parses 1 message(s) ({BLANK_MAX} to {T9_ENTRY})" in text and f"{MIXED}/0 (2 unit(s) appended" in text, \
        text[-3000:]
    p = verify_restart(src, tmp_path)
    # the broker's queues hold the parsed T5 unit (left out: no message of the log) and T8's light unit beside
    # every message's own
    held = held_units(src, ends=w["queuesAfterDispatch"], leave_out="T5")
    assert p is not None and p["units_lost"] == queued_messages(sc) + 1 - held, (held, p and p["notes"])
    keys = sum(struct.unpack(">i", f.read_bytes()[36:40])[0] - 1 for f in (src / "expected" / "index").iterdir())
    assert keys == 3 and p["index_keys_put_again"] == keys, (keys, p["index_keys_put_again"], p["notes"])

"""A 5.5.1 DLedger crash restart whose start's reput, set at 2147483647 inside the last T0 entry of a log past 2 GiB
(:func:`broker_dledger_scenarios.past_2gib_abort_scenario`), parses well-formed messages there: several for one queue,
checked against the broker (``DLEDGER_2GIB=1`` only: the store holds some 2.15 GB of data, its ``before/`` copy as
much).

``ConsumeQueue.putMessagePositionInfo`` (rocketmq-store 5.5.1) drops a unit whose ``offset + size`` is at or below its
queue's max physical offset, or whose queue offset is not 0 and falls below the queue's write position ("build consume
queue repeatedly"), and appends every other one at the write position, whatever its queue offset ("logic queue order
maybe wrong" is only logged); a queue's first unit creates the file where its own queue offset falls, with
``fillPreBlank`` units before it.  The rebuild reads the parsed messages after the walk's records
(``QueueCut.inside_records``, ``store.then_pieces``) and appends their units by those rules
(:mod:`store_format.consumequeue`); ``rebuild --as-restart`` on the store as the restart found it must write the
broker's ``consumequeue/`` and ``index/`` byte for byte, and verify's units lost are counted from the broker's queues.
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    LINE,
    NEEDS_2GIB,
    as_restart,
    as_restart_matches_broker,
    embedded_message,
    first_units,
    held_units,
    log_bytes,
    queued_messages,
    retargeted,
    same_files_as_the_broker,
    verify_restart,
    with_messages,
    written,
)
from broker_dledger_scenarios import PAST_2GIB_BEFORE, PAST_2GIB_FILE, PAST_2GIB_LAST, past_2gib_abort_scenario

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store]

bh.skip_without_tools()

BLANK = (0, BLANK_MAX, 0)


@NEEDS_2GIB
def test_crash_restart_whose_reput_at_2147483647_reads_three_messages_for_one_new_queue(tmp_path):
    """Three T5 messages from 2147483647 on, of queue offsets 2, 1 and 7: the 5.5.1 broker's reput dispatches the
    three, then its check on the 'x' bytes after them fails and it jumps to the log's end.  T5/0's file starts with
    two ``fillPreBlank`` units and the first message's unit (queue offset 2), drops the second's (1: below the write
    position) and appends the third's at the write position (queue offset 7, put at 3); the three keys are indexed.
    ``rebuild --as-restart``: the broker's ``consumequeue/`` and ``index/`` byte for byte, and verify's units lost."""
    size = len(embedded_message(BLANK_MAX))
    at = [BLANK_MAX + k * size for k in range(3)]
    msgs = [retargeted(a, b"T5", q) for a, q in zip(at, (2, 1, 7))]
    sc = with_messages(past_2gib_abort_scenario(LINE), f"{LINE}-dledger-abort-past-2gib-embedded-t5x3", msgs)
    w, src = written(sc, tmp_path)
    assert log_bytes(src, BLANK_MAX, 3 * size) == b"".join(msgs), "the three messages at 2147483647"
    assert log_bytes(src, BLANK_MAX + 3 * size, 8) == b"x" * 8
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left the fillPreBlank unit
    assert "T5/0" not in w["queuesAfterLoad"], w["queuesAfterLoad"]
    # what the broker's reput did: the first at its queue offset, the second dropped, the third at the write position
    assert first_units(src, "T5", 5) == [BLANK, BLANK, (at[0], size, 0), (at[2], size, 0), (0, 0, 0)]
    (index,) = sorted((src / "expected" / "index").iterdir())
    assert struct.unpack(">qqqqii", index.read_bytes()[:40])[2:] == (at[0], at[2], 1, 4), "E5 indexed three times"
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    assert f"parses 3 message(s) ({at[0]} to {at[1]}, {at[1]} to {at[2]}, {at[2]} to {at[2] + size})" in text, \
        text[-3000:]


@NEEDS_2GIB
def test_crash_restart_whose_reput_at_2147483647_reads_messages_for_the_queues_the_walk_wrote(tmp_path):
    """Three messages from 2147483647 on for the queues the recovery's walk wrote and the cut left: T9 (queue offset 1;
    the cut left its ``fillPreBlank`` unit only), then T0 (queue offset 1, then 0; the cut left its units below
    ``processOffset``).  The 5.5.1 broker appends T9's at its write position (20, over its cut unit's bytes), drops
    the first T0 one (its queue offset below the write position: "build consume queue repeatedly") and appends the
    second at T0's write position, over its first cut unit (queue offset 0: no check), the other cut units' bytes
    staying after it; then its check fails on the 'x' bytes and it jumps to the log's end.  ``rebuild --as-restart``
    (``QueueCut.inside_placed.units``): the broker's ``consumequeue/`` and ``index/`` byte for byte, and verify's units
    lost (the units the broker's queues hold but for the two parsed messages', which are no messages of the log)."""
    size = len(embedded_message(BLANK_MAX))
    at = [BLANK_MAX + k * size for k in range(3)]
    msgs = [retargeted(a, t, q) for a, t, q in zip(at, (b"T9", b"T0", b"T0"), (1, 1, 0))]
    sc = with_messages(past_2gib_abort_scenario(LINE), f"{LINE}-dledger-abort-past-2gib-embedded-walked", msgs)
    w, src = written(sc, tmp_path)
    assert log_bytes(src, BLANK_MAX, 3 * size) == b"".join(msgs), "the three messages at 2147483647"
    assert log_bytes(src, BLANK_MAX + 3 * size, 8) == b"x" * 8
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left the fillPreBlank unit
    # what the broker's reput did: T9's at 20 (its cut unit's place), nothing after it
    assert first_units(src, "T9", 3) == [BLANK, (at[0], size, 0), (0, 0, 0)]
    t9 = w["queuesAfterDispatch"]["T9/0"]   # its write position (bytes) and max physical offset
    assert (int(t9["maxOffset"]), int(t9["maxPhysicOffset"])) == (40, at[0] + size), t9
    # T0's second at the write position the cut left (queue offset 0), between T0 units 4237 bytes apart: the last one
    # below processOffset before it, the second cut one after it (the first's place taken, the rest left as bytes)
    t0 = src / "expected" / "consumequeue" / "T0" / "0" / f"{6_000_000:020d}"
    b = t0.read_bytes()
    found = [i for i in range(0, len(b), 20) if b[i:i + 8] == at[2].to_bytes(8, "big")]
    assert len(found) == 1 and not any(b[i:i + 8] == at[1].to_bytes(8, "big") for i in range(0, len(b), 20))
    (p,) = found
    before, here, after = (struct.unpack(">qiq", b[i:i + 20]) for i in (p - 20, p, p + 20))
    assert here == (at[2], size, 0) and before[1] == after[1] == 4189 and after[0] - before[0] == 2 * 4237, \
        (before, here, after)
    t0q = w["queuesAfterDispatch"]["T0/0"]
    assert (int(t0q["maxOffset"]), int(t0q["maxPhysicOffset"])) == (6_000_000 + p + 20, at[2] + size), t0q
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="", parsed=2)
    assert f"parses 3 message(s) ({at[0]} to {at[1]}, {at[1]} to {at[2]}, {at[2]} to {at[2] + size})" in text, \
        text[-3000:]
    assert f"T9/0 at 20, T0/0 at {6_000_000 + p}" in text, text[-3000:]


@NEEDS_2GIB
def test_crash_restart_whose_reput_at_2147483647_reads_messages_with_consume_queue_ext(tmp_path):
    """``enableConsumeQueueExt=true``: a T5 message (a new queue, queue offset 0), then a T9 one (queue offset 1, the
    queue the cut left with its ``fillPreBlank`` unit only) from 2147483647 on.  ``putMessagePositionInfoWrapper``
    puts each one's ext unit first (``ConsumeQueueExt.put``: T5's the first of its ext queue, T9's after the one the
    recovery's walk put for T9's last message) and the consume queue unit holds its address (``decorate``) as its
    tags code: T5/0's unit at its queue offset, T9/0's at 20.  ``rebuild --as-restart``: the broker's
    ``consumequeue/``, ``consumequeue_ext/`` and ``index/`` byte for byte, and verify's units lost."""
    size = len(embedded_message(BLANK_MAX))
    at = [BLANK_MAX + k * size for k in range(2)]
    msgs = [retargeted(at[0], b"T5", 0), retargeted(at[1], b"T9", 1)]
    sc = past_2gib_abort_scenario(LINE)
    sc = {**sc, "config": {**sc["config"], "enableConsumeQueueExt": "true"}}
    sc = with_messages(sc, f"{LINE}-dledger-abort-past-2gib-embedded-ext", msgs)
    w, src = written(sc, tmp_path)
    assert log_bytes(src, BLANK_MAX, 2 * size) == b"".join(msgs) and log_bytes(src, at[1] + size, 8) == b"x" * 8
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left the fillPreBlank unit
    # what the broker did: each unit's tags code the address of its ext unit (its real offset + Long.MIN_VALUE), the
    # ext unit (size 20, the tags code 0, the store time, no bitmap) T5's first and T9's second
    ext = src / "expected" / "consumequeue_ext"
    unit = struct.pack(">hqqh", 20, 0, 1_700_000_000_001, 0)
    assert first_units(src, "T5", 2) == [(at[0], size, -2**63), (0, 0, 0)]
    assert first_units(src, "T9", 3) == [BLANK, (at[1], size, 20 - 2**63), (0, 0, 0)]
    (t5,) = sorted((ext / "T5" / "0").iterdir())
    (t9,) = sorted((ext / "T9" / "0").iterdir())
    assert t5.read_bytes()[:22] == unit + bytes(2) and t9.read_bytes()[20:42] == unit + bytes(2)
    text = as_restart(src, tmp_path / "ours")
    assert f"parses 2 message(s) ({at[0]} to {at[1]}, {at[1]} to {at[1] + size})" in text, text[-3000:]
    same_files_as_the_broker(src, tmp_path / "ours")
    exp = sorted(p for p in ext.rglob("*") if p.is_file())
    got = sorted(p for p in (tmp_path / "ours" / "consumequeue_ext").rglob("*") if p.is_file())
    assert [p.relative_to(tmp_path / "ours" / "consumequeue_ext") for p in got] == [p.relative_to(ext) for p in exp]
    for e, o in zip(exp, got):
        bh.same_bytes(e.read_bytes(), o.read_bytes(), f"consumequeue_ext/{e.relative_to(ext)}")
    pred = verify_restart(src, tmp_path)
    held, queued = held_units(src, ends=w["queuesAfterDispatch"], leave_out="T5") - 1, queued_messages(sc)
    assert pred is not None and pred["units_lost"] == queued - held, (held, queued, pred and pred["notes"])


# -at-file-start: consume queue files of 36193 units, so that the first T0 unit the cut takes (queue offset 506702:
# the 11082nd T0 record of the last data file, the first whose commitlog offset is at or past processOffset) starts
# the 15th file, which the cut deletes, leaving the 14th full
AT_START_UNITS = 36193
AT_START_CQ_FILE = AT_START_UNITS * 20
FIRST_CUT_T0 = PAST_2GIB_BEFORE + 11081
FIRST_CUT_AT = FIRST_CUT_T0 * 20   # its queue byte position: T0's write position after the cut
LAST_KEPT_T0_END = 21 * PAST_2GIB_FILE + 11080 * 4237 + 48 + 4189


@NEEDS_2GIB
@pytest.mark.parametrize("queue_offset", [0, 1], ids=["appended", "dropped"])
def test_crash_restart_whose_reput_at_2147483647_reads_a_message_for_a_queue_whose_write_position_starts_a_file(
        tmp_path, queue_offset):
    """Consume queue files of 36193 units: the cut leaves T0/0 with its 14th file full and deletes the 15th (its
    first unit the first cut one), so T0's write position is that file's start.  A T0 message at 2147483647 (its end
    past the max the cut left): ``putMessagePositionInfo`` asks ``getLastMappedFile``, which creates the 15th file
    anew (zeros) before the queue offset check; queue offset 0 appends the unit at its start, queue offset 1 ("build
    consume queue repeatedly") drops it, the new file staying, all zeros.  ``rebuild --as-restart``
    (``QueueCut.inside_placed.opened``): the broker's ``consumequeue/`` and ``index/`` byte for byte, and verify's units
    lost."""
    assert FIRST_CUT_T0 % AT_START_UNITS == 0
    size = len(embedded_message(BLANK_MAX))
    sc = past_2gib_abort_scenario(LINE)
    sc = {**sc, "config": {**sc["config"], "mappedFileSizeConsumeQueue": str(AT_START_CQ_FILE)}}
    sc = with_messages(sc, f"{LINE}-dledger-abort-past-2gib-embedded-at-start-{queue_offset}",
                       [retargeted(BLANK_MAX, b"T0", queue_offset)])
    w, src = written(sc, tmp_path)
    assert log_bytes(src, BLANK_MAX + size, 8) == b"x" * 8
    kept, new = f"{FIRST_CUT_AT - AT_START_CQ_FILE:020d}", f"{FIRST_CUT_AT:020d}"
    loaded = w["queuesAfterLoad"]["T0/0"]   # the cut: the 15th file deleted, the write position its start
    assert (int(loaded["maxOffset"]), list(loaded["files"]), int(loaded["maxPhysicOffset"])) == \
        (FIRST_CUT_AT, [kept], LAST_KEPT_T0_END), loaded
    appended = queue_offset == 0
    t0 = w["queuesAfterDispatch"]["T0/0"]   # what the reput did: the 15th file created, the unit put or dropped
    assert (int(t0["maxOffset"]), list(t0["files"]), int(t0["maxPhysicOffset"])) == \
        (FIRST_CUT_AT + 20 * appended, [kept, new], BLANK_MAX + size if appended else LAST_KEPT_T0_END), t0
    data = (src / "expected" / "consumequeue" / "T0" / "0" / new).read_bytes()
    unit = struct.pack(">qiq", BLANK_MAX, size, 0) if appended else b""
    assert data == unit + bytes(AT_START_CQ_FILE - len(unit))
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="", parsed=appended)
    assert f"T0/0/{new}" in text and (f"T0/0 at {FIRST_CUT_AT}" in text) == appended, text[-3000:]


@NEEDS_2GIB
def test_crash_restart_whose_reput_at_2147483647_reads_messages_past_the_walks_last_units(tmp_path):
    """Two messages from 2147483647 on whose PHYSICALOFFSET fields say offsets past the end of the walk's last unit of
    their queues (the log's end, some 600 bytes further): T9 (queue offset 2) and T0 (queue offset 600000, past the
    walk's last T0 unit's).  The 5.5.1 broker appends each at the write position the cut left (T9's at 20, T0's at
    its first cut unit's place); the rebuild's own dispatch of them would append them after the walk's last units
    (T9's at 40, T0's after its last cut unit), where the broker's files hold zeros.  ``rebuild --as-restart``
    (``QueueCut.inside_placed.whole``, the queues replayed whole): the broker's ``consumequeue/`` and ``index/`` byte
    for byte, and verify's units lost."""
    size = len(embedded_message(BLANK_MAX))
    x, y = BLANK_MAX + 20_000, BLANK_MAX + 30_000   # past the log's end (the last T9 entry ends 653 bytes past it)
    msgs = [retargeted(x, b"T9", 2), retargeted(y, b"T0", 600_000)]
    sc = with_messages(past_2gib_abort_scenario(LINE), f"{LINE}-dledger-abort-past-2gib-embedded-past-walk", msgs)
    w, src = written(sc, tmp_path)
    assert log_bytes(src, BLANK_MAX, 2 * size) == b"".join(msgs) and log_bytes(src, BLANK_MAX + 2 * size, 8) == b"x" * 8
    # what the broker's reput did: T9's at 20 (the cut's write position), nothing at 40
    assert first_units(src, "T9", 3) == [BLANK, (x, size, 0), (0, 0, 0)]
    t9 = w["queuesAfterDispatch"]["T9/0"]
    assert (int(t9["maxOffset"]), int(t9["maxPhysicOffset"])) == (40, x + size), t9
    # T0's at its first cut unit's place (the cut's write position), zeros after the walk's last unit
    t0 = w["queuesAfterDispatch"]["T0/0"]
    assert (int(t0["maxOffset"]), int(t0["maxPhysicOffset"])) == (FIRST_CUT_AT + 20, y + size), t0
    b = (src / "expected" / "consumequeue" / "T0" / "0" / f"{6_000_000:020d}").read_bytes()
    p, last = FIRST_CUT_AT - 6_000_000, (PAST_2GIB_BEFORE + PAST_2GIB_LAST) * 20 - 6_000_000
    assert struct.unpack(">qiq", b[p:p + 20]) == (y, size, 0)
    assert struct.unpack(">qiq", b[p - 20:p])[0] + 4189 == LAST_KEPT_T0_END, "the last unit the cut left before it"
    assert struct.unpack(">qiq", b[last - 20:last])[1] == 4189 and b[last:last + 20] == bytes(20), "zeros after"
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="", parsed=2)
    assert f"T9/0 at 20, T0/0 at {FIRST_CUT_AT}" in text, text[-3000:]


@NEEDS_2GIB
def test_crash_restart_whose_reput_at_2147483647_reads_messages_for_a_queue_the_cut_emptied(tmp_path):
    """A T7 message (T7's first, queue offset 0) put just before the last T9 one: its unit starts T7/0's only file,
    which the cut deletes (its commitlog offset past ``processOffset``), and 5.5.1's ``correctMinOffset`` sets the
    queue's max to -1.  Two T7 messages from 2147483647 on (queue offsets 3 and 9): ``getLastMappedFile`` creates
    T7/0's first file anew where the first one's queue offset falls, ``fillPreBlank`` units before it, and the second
    is appended at the write position (80); the cut unit is not put back (the reput then jumps to the log's end).
    ``rebuild --as-restart``: the broker's ``consumequeue/`` and ``index/`` byte for byte, and verify's units
    lost."""
    size = len(embedded_message(BLANK_MAX))
    at = [BLANK_MAX + k * size for k in range(2)]
    msgs = [retargeted(a, b"T7", q) for a, q in zip(at, (3, 9))]
    sc = past_2gib_abort_scenario(LINE)
    sc = {**sc, "messages": [*sc["messages"][:-1], {"topic": "T7", "queueId": 0, "bodySize": 100},
                             sc["messages"][-1]]}
    sc = with_messages(sc, f"{LINE}-dledger-abort-past-2gib-embedded-emptied", msgs)
    w, src = written(sc, tmp_path)
    assert log_bytes(src, BLANK_MAX, 2 * size) == b"".join(msgs) and log_bytes(src, at[1] + size, 8) == b"x" * 8
    loaded = w["queuesAfterLoad"]["T7/0"]   # the cut left no file, the max -1
    assert (list(loaded["files"]), int(loaded["maxPhysicOffset"])) == ([], -1), loaded
    t7 = w["queuesAfterDispatch"]["T7/0"]
    assert (int(t7["maxOffset"]), int(t7["maxPhysicOffset"])) == (100, at[1] + size), t7
    assert first_units(src, "T7", 6) == [BLANK, BLANK, BLANK, (at[0], size, 0), (at[1], size, 0), (0, 0, 0)]
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="", parsed=2)
    assert "T7/0 at 60, T7/0 at 80" in text, text[-3000:]


@NEEDS_2GIB
def test_crash_restart_whose_reput_at_2147483647_reads_a_message_past_a_walk_unit_that_fills_its_file(tmp_path):
    """Consume queue files of 36202 units: the walk's last T0 unit (queue offset 506827) fills T0/0's 14th file, where
    the cut leaves the write position at its first cut unit.  A T0 message at 2147483647 whose PHYSICALOFFSET lies
    past the log's end (queue offset 600000): the 5.5.1 broker appends it at that write position and creates no file;
    the rebuild's own dispatch would create the 15th file and put it there.  ``rebuild --as-restart``
    (``QueueCut.inside_placed.whole``, the queue replayed whole): the broker's ``consumequeue/`` (no 15th file) and
    ``index/`` byte for byte, and verify's units lost."""
    units_per_file = 36202
    assert (PAST_2GIB_BEFORE + PAST_2GIB_LAST) % units_per_file == 0 and FIRST_CUT_T0 % units_per_file
    size = len(embedded_message(BLANK_MAX))
    y = BLANK_MAX + 30_000
    sc = past_2gib_abort_scenario(LINE)
    sc = {**sc, "config": {**sc["config"], "mappedFileSizeConsumeQueue": str(units_per_file * 20)}}
    sc = with_messages(sc, f"{LINE}-dledger-abort-past-2gib-embedded-past-full", [retargeted(y, b"T0", 600_000)])
    w, src = written(sc, tmp_path)
    assert log_bytes(src, BLANK_MAX + size, 8) == b"x" * 8
    start = FIRST_CUT_T0 // units_per_file * units_per_file * 20
    t0 = w["queuesAfterDispatch"]["T0/0"]   # one file, the unit at the cut's write position
    assert (int(t0["maxOffset"]), list(t0["files"]), int(t0["maxPhysicOffset"])) == \
        (FIRST_CUT_AT + 20, [f"{start:020d}"], y + size), t0
    b = (src / "expected" / "consumequeue" / "T0" / "0" / f"{start:020d}").read_bytes()
    assert struct.unpack(">qiq", b[FIRST_CUT_AT - start:FIRST_CUT_AT - start + 20]) == (y, size, 0)
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="", parsed=1)
    assert f"T0/0 at {FIRST_CUT_AT}" in text, text[-3000:]


@NEEDS_2GIB
def test_crash_restart_whose_reput_at_2147483647_reads_messages_for_an_emptied_queue_with_consume_queue_ext(tmp_path):
    """``enableConsumeQueueExt=true`` with the ``-emptied`` store's T7 message: a T7 message (queue offset 3) and a
    T9 one whose PHYSICALOFFSET lies past the log's end (queue offset 2) from 2147483647 on.  Each one's ext unit
    goes after the one the walk put for that queue (the cut leaves the ext files), T7/0's file is created anew (three
    ``fillPreBlank`` units, the unit at 60), T9's unit lands at 20, each holding its ext unit's address.
    ``rebuild --as-restart``: ``consumequeue/``, ``consumequeue_ext/`` and ``index/`` byte for byte, and verify's
    units lost."""
    size = len(embedded_message(BLANK_MAX))
    x = BLANK_MAX + 20_000
    msgs = [retargeted(BLANK_MAX, b"T7", 3), retargeted(x, b"T9", 2)]
    sc = past_2gib_abort_scenario(LINE)
    sc = {**sc, "config": {**sc["config"], "enableConsumeQueueExt": "true"},
          "messages": [*sc["messages"][:-1], {"topic": "T7", "queueId": 0, "bodySize": 100}, sc["messages"][-1]]}
    sc = with_messages(sc, f"{LINE}-dledger-abort-past-2gib-embedded-emptied-ext", msgs)
    w, src = written(sc, tmp_path)
    assert log_bytes(src, BLANK_MAX, 2 * size) == b"".join(msgs) and log_bytes(src, BLANK_MAX + 2 * size, 8) == b"x" * 8
    assert (list(w["queuesAfterLoad"]["T7/0"]["files"]), int(w["queuesAfterLoad"]["T7/0"]["maxPhysicOffset"])) == \
        ([], -1)
    # what the broker did: each unit's tags code the address of the second ext unit of its queue
    assert first_units(src, "T7", 5) == [BLANK, BLANK, BLANK, (BLANK_MAX, size, 20 - 2**63), (0, 0, 0)]
    assert first_units(src, "T9", 3) == [BLANK, (x, size, 20 - 2**63), (0, 0, 0)]
    text = as_restart(src, tmp_path / "ours")
    assert "T7/0 at 60, T9/0 at 20" in text, text[-3000:]
    same_files_as_the_broker(src, tmp_path / "ours")
    ext = src / "expected" / "consumequeue_ext"
    exp = sorted(p for p in ext.rglob("*") if p.is_file())
    got = sorted(p for p in (tmp_path / "ours" / "consumequeue_ext").rglob("*") if p.is_file())
    assert [p.relative_to(tmp_path / "ours" / "consumequeue_ext") for p in got] == [p.relative_to(ext) for p in exp]
    for e, o in zip(exp, got):
        bh.same_bytes(e.read_bytes(), o.read_bytes(), f"consumequeue_ext/{e.relative_to(ext)}")
    pred = verify_restart(src, tmp_path)
    held, queued = held_units(src, ends=w["queuesAfterDispatch"]) - 2, queued_messages(sc)
    assert pred is not None and pred["units_lost"] == queued - held, (held, queued, pred and pred["notes"])

"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``, the queues kept: ``keepQueues``)
whose start's reput, set inside an entry, parses a well-formed message that also goes to a light queue
(multi-dispatch: ``%LMQ%q1``) on disk before the walk, whose files hold units ending below where the walk's light
units of its earlier data file end: the walk's ``ConsumeQueue.multiDispatchLmqQueue`` puts those onto the files
``ConsumeQueue.recover`` loaded by that queue's ``putMessagePositionInfo`` (appended, or skipped below the loaded
max or, a queue offset not 0, below the write position) before ``truncateDirtyLogicFiles`` cuts them
(``-earlier-light-held-disk-appended``, ``-skipped``, ``-to-entry-earlier-light-held-disk-below``; refused before:
the walk's light units not dispatched onto the files).  Written by the published RocketMQ store through the JVM
harness in ``tests/broker/``: what the broker's restart wrote, and ``verify`` on the store as that restart found it
(a queue on disk before the walk is ``verify``'s only: ``--as-restart`` plans from the commitlog alone).  The
scenarios: :mod:`broker_dledger_inside_light_disk_scenarios`.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_files import first_units
from broker_dledger_runs import LINES, _capture_cuts, _loses_as_the_broker, _verify_with_plan, _written

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


def _record(data: list[Path], offset: int, size: int) -> bytes:
    """The record at commitlog ``offset`` (``size`` bytes) of the DLedger data files ``data``, asserting its size and
    physical offset fields say so."""
    (f,) = [f for f in data if int(f.name) <= offset < int(f.name) + f.stat().st_size]
    rec = f.read_bytes()[offset - int(f.name):offset - int(f.name) + size]
    assert (int.from_bytes(rec[:4], "big"), int.from_bytes(rec[28:36], "big")) == (size, offset), rec[:40].hex()
    return rec


@pytest.mark.parametrize("suffix", ["earlier-light-held-disk-appended", "earlier-light-held-disk-skipped",
                                    "to-entry-earlier-light-held-disk-below"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_walk_puts_earlier_light_units_past_a_kept_queues_files_max(
        line, suffix, tmp_path, monkeypatch):
    """%LMQ%q1/0 on disk before the walk (which starts at the first data file, ``messageIndexSafe``), its file planted
    before the restart. ``-appended``: holding message 10's light unit (light queue offset 0) alone: the walk skips
    that unit (at or below the loaded max) and appends message 11's (light queue offset 1) at 20; the cut keeps
    both (write position 40, max message 11's end) and the parsed T7/0 message's light unit (light queue offset 7)
    goes to 40. ``-skipped``: holding message 10's and the last message's (past processOffset) units: the walk skips
    both of its light units below that loaded max, the cut takes the planted unit past processOffset (write position
    20, max message 10's end), the parsed light unit goes to 20 and message 11's is lost. ``-below``
    (-to-entry-earlier-light: message 11 and the last message light queue offsets 0 and 1): holding the first data
    file's first record's unit (ending below message 11's): the walk appends message 11's light unit at 20 (queue
    offset 0: no order check) and drops the last message's (20 below the write position 40); the cut leaves write
    position 40, the parsed light unit goes there, and the reput, going on at B9's entry, drops the last message's
    light unit again. The planted file alone leaves write position 20 and a max below message 11's light unit's end
    in each (refused before). verify on the store as that restart found it, the walk's light units dispatched onto
    the files, leaves %LMQ%q1 with the broker's write position and max, puts the parsed unit where the broker did and
    predicts the units lost."""
    from broker_dledger_inside_light_disk_scenarios import LIGHT_BELOW_UNIT, LIGHT_EARLIER_UNIT, LIGHT_PAST_UNIT
    from broker_dledger_inside_light_scenarios import (
        EARLIER_LIGHT_PUTS,
        embedded_earlier_light_messages,
        embedded_to_entry_earlier_light_message,
    )

    from store_format.dledger import ENTRY_HEADER_SIZE
    from store_format.layout import CQ_UNIT_SIZE
    name = f"{line}-dledger-abort-emptied-batch-embedded-{suffix}"
    r, w, src = _written(name)
    reput = int(w["truncateDirtyLogicFilesAt"]) - 1
    below = suffix.endswith("-below")
    if below:
        at, parsed = embedded_to_entry_earlier_light_message()
        leave_out: tuple[int, ...] = (reput,)
    else:
        at, parsed, _second = embedded_earlier_light_messages()
        leave_out = (reput, reput + len(parsed))
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert at == reput and len(data) == 2 and int(data[1].name) <= reput, (at, reput, data)
    assert b"%LMQ%q1" in parsed and _record(data, reput, len(parsed)) == parsed
    # the light records: message 10 (-earlier-light only), message 11 (the next record), the last message
    m10 = _record(data, *LIGHT_EARLIER_UNIT)
    m11_at = sum(LIGHT_EARLIER_UNIT) + ENTRY_HEADER_SIZE
    m11 = (m11_at, int.from_bytes(data[0].read_bytes()[m11_at:m11_at + 4], "big"))
    assert sum(m11) <= int(data[1].name) and b"%LMQ%q1" in _record(data, *m11)
    assert (b"%LMQ%q1" in m10) != below and (b"%LMQ%q1" in _record(data, *LIGHT_PAST_UNIT)) == below
    assert sum(LIGHT_BELOW_UNIT) < m11[0] and b"%LMQ%q1" not in _record(data, *LIGHT_BELOW_UNIT)
    assert LIGHT_PAST_UNIT[0] > reput and sum(LIGHT_PAST_UNIT) == int(w["maxPhyOffset"])
    planted, kept = {"earlier-light-held-disk-appended": ([LIGHT_EARLIER_UNIT], [LIGHT_EARLIER_UNIT, m11]),
                     "earlier-light-held-disk-skipped": ([LIGHT_EARLIER_UNIT, LIGHT_PAST_UNIT], [LIGHT_EARLIER_UNIT]),
                     "to-entry-earlier-light-held-disk-below": ([LIGHT_BELOW_UNIT], [LIGHT_BELOW_UNIT, m11])}[suffix]
    (held_file,) = sorted((src / "before" / "consumequeue" / "%LMQ%q1" / "0").iterdir())
    before = held_file.read_bytes()
    assert first_units(before, len(planted)) == planted and not any(before[len(planted) * CQ_UNIT_SIZE:])
    # the recovery (the walk's dispatch onto the planted file, then the cut) leaves %LMQ%q1 so
    loaded = w["queuesAfterLoad"]["%LMQ%q1/0"]
    assert (int(loaded["maxOffset"]), int(loaded["maxPhysicOffset"])) == (len(kept) * CQ_UNIT_SIZE, sum(kept[-1])), \
        loaded
    # the planted file alone (its units below processOffset) ends below the walk's light unit of message 11
    assert sum(planted[0]) < sum(m11)
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == (len(kept) + 1) * CQ_UNIT_SIZE, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / held_file.name).read_bytes()
    assert first_units(held[:len(kept) * CQ_UNIT_SIZE], len(kept)) == kept, held[:80].hex()
    assert held[len(kept) * CQ_UNIT_SIZE:len(kept) * CQ_UNIT_SIZE + 12] == \
        reput.to_bytes(8, "big") + len(parsed).to_bytes(4, "big"), held[:80].hex()
    assert not any(held[(len(kept) + 1) * CQ_UNIT_SIZE:]), held.hex()
    cuts = _capture_cuts(monkeypatch)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    # %LMQ%q1 as the walk's dispatch and the cut left it: the broker's max and write position after its recovery
    assert cuts[0][("%LMQ%q1", 0)] == (int(loaded["maxPhysicOffset"]), True, int(loaded["maxOffset"]), True), cuts
    assert crash.start_offset == 0, crash.start_offset   # the walk starts at the first data file
    placed = crash.cut.inside_placed
    assert [(u.position, u.offset, u.size) for u in placed.units if u.topic == "%LMQ%q1"] == \
        [(len(kept) * CQ_UNIT_SIZE, reput, len(parsed))], placed
    (w_lmq,) = [q for q in placed.whole if q.topic == "%LMQ%q1"]
    assert [(pos, o) for pos, o, _s, _t in w_lmq.units] == [(len(kept) * CQ_UNIT_SIZE, reput)], w_lmq
    # -below: the last message's light unit, cut, dispatched again and dropped (queue offset 1 below the write
    # position)
    assert w_lmq.lost == ((LIGHT_PAST_UNIT[0],) if below else ()), w_lmq
    # a unit each, a light one more for the two light puts (-below: and the planted unit, which no put sent)
    _loses_as_the_broker(p, r, src, leave_out, extra=len(EARLIER_LIGHT_PUTS) + below)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.3")] or
                         [pytest.param("5.3.3", marks=pytest.mark.skip(reason="5.3.3 only: DLEDGER_LINES=5.3.3"))])
def test_verify_predicts_a_533_crash_restart_whose_walk_appends_an_earlier_light_unit_past_a_kept_queues_files_max(
        line, tmp_path, monkeypatch):
    """The 5.3.3 -emptied-kept-embedded-light-earlier-held-disk store: the walk starts at the first data file
    (``messageIndexSafe``), where messages 10 and 11 also go to %LMQ%q1 (light queue offsets 0 and 1), the last
    message (past processOffset) too (2); %LMQ%q1/0 on disk before the walk, its file planted holding message 10's
    unit alone (loaded max its end, write position 20). The walk's multiDispatchLmqQueue (5.3.3's
    putMessagePositionInfo, read as 5.5.1's) skips message 10's unit, appends message 11's at 20 and the last
    message's at 40; the 5.3.3 cut (the other queues' loaded max past processOffset) takes the last: write position
    40, max message 11's end (the planted file alone: 20 and message 10's end, refused before). Where the reput is set
    (processOffset) the T5/0 message also to %LMQ%q1 (light queue offset 7) goes to 40, and the reput, going on at
    T9's entry, drops the last message's light unit (queue offset 2 below 60). verify on the store as that restart
    found it, the walk's light units dispatched onto the planted file, puts the parsed unit where the broker did,
    the light unit dispatched again lost, and predicts the units lost."""
    from broker_dledger_files import last_data_bytes
    from broker_dledger_inside_light_disk_scenarios import LIGHT_EARLIER_UNIT
    from broker_dledger_inside_light_scenarios import EARLIER_LIGHT_PUTS
    from broker_dledger_inside_mixed_more_scenarios import kept_light_mixed_emptied_message
    from broker_dledger_inside_scenarios import LIGHT_TAIL

    from store_format.dledger import ENTRY_HEADER_SIZE
    from store_format.layout import CQ_UNIT_SIZE
    name = f"{line}-dledger-abort-emptied-kept-embedded-light-earlier-held-disk"
    reput, msg = kept_light_mixed_emptied_message()
    r, w, src = _written(name)
    assert r["scenario"]["keepQueues"] and b"%LMQ%q1" in msg
    # the 5.3.3 cut at processOffset, where the reput is set, and the message there
    assert int(w["truncateDirtyLogicFilesAt"]) == reput and last_data_bytes(src, reput, len(msg)) == msg
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2 and int(data[1].name) <= reput, data
    tail = int(w["maxPhyOffset"]) - LIGHT_TAIL   # the last message, light queue offset 2
    m10 = LIGHT_EARLIER_UNIT
    m11_at = sum(m10) + ENTRY_HEADER_SIZE
    m11 = (m11_at, int.from_bytes(data[0].read_bytes()[m11_at:m11_at + 4], "big"))
    for offset, size in (m10, m11, (tail, LIGHT_TAIL)):
        assert b"%LMQ%q1" in _record(data, offset, size)
    assert sum(m11) <= int(data[1].name) < reput < tail
    (held_file,) = sorted((src / "before" / "consumequeue" / "%LMQ%q1" / "0").iterdir())
    before = held_file.read_bytes()
    assert first_units(before, 1) == [m10] and not any(before[CQ_UNIT_SIZE:]), before[:60].hex()
    loaded = w["queuesAfterLoad"]["%LMQ%q1/0"]
    assert (int(loaded["maxOffset"]), int(loaded["maxPhysicOffset"])) == (2 * CQ_UNIT_SIZE, sum(m11)), loaded
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 3 * CQ_UNIT_SIZE, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / held_file.name).read_bytes()
    assert first_units(held, 3) == [m10, m11, (reput, len(msg))] and not any(held[3 * CQ_UNIT_SIZE:]), held[:80].hex()
    cuts = _capture_cuts(monkeypatch)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert cuts[0][("%LMQ%q1", 0)] == (sum(m11), True, 2 * CQ_UNIT_SIZE, True), cuts
    placed = crash.cut.inside_placed
    assert [(u.position, u.offset, u.size) for u in placed.units if u.topic == "%LMQ%q1"] == \
        [(2 * CQ_UNIT_SIZE, reput, len(msg))], placed
    (w_lmq,) = [q for q in placed.whole if q.topic == "%LMQ%q1"]
    assert [(pos, o) for pos, o, _s, _t in w_lmq.units] == [(2 * CQ_UNIT_SIZE, reput)], w_lmq
    assert w_lmq.lost == (tail,) and w_lmq.put_back == (), w_lmq
    # a unit each, a light one more for the three light puts
    _loses_as_the_broker(p, r, src, (reput,), extra=len(EARLIER_LIGHT_PUTS) + 1)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_walk_puts_earlier_own_and_light_units_onto_a_kept_queues_files(
        line, tmp_path, monkeypatch):
    """The -earlier-light-both-held-disk-below store: %LMQ%q1 holds own and light units, all in the walk's earlier
    data file (message 9 put to %LMQ%q1 itself, own queue offset 0; messages 10 and 11, light queue offsets 0 and 1),
    none in its last; on disk before the walk, its file planted holding the first data file's first record's unit
    alone (another queue's, ending below message 9's). The walk's putMessagePositionInfo appends the own unit at 20
    and light unit 0 at 40 (queue offsets 0: no order check) and drops light unit 1 (20 below the write position 60);
    the cut takes nothing of it (write position 60, max message 10's end; the planted file alone: 20 and that
    record's end); the parsed T7/0 message's light unit (light queue offset 7) goes to 60. verify on the store as
    that restart found it, the walk's units of the earlier data file dispatched onto the planted file (refused
    before: a queue of both kinds on disk whose units the walk wrote in its earlier data files only was not
    dispatched), puts the parsed unit where the broker did and predicts the units lost."""
    from broker_dledger_inside_light_disk_scenarios import LIGHT_BELOW_UNIT, LIGHT_EARLIER_UNIT
    from broker_dledger_inside_light_scenarios import EARLIER_LIGHT_PUTS, embedded_earlier_light_messages

    from store_format.dledger import ENTRY_HEADER_SIZE
    from store_format.layout import CQ_UNIT_SIZE
    name = f"{line}-dledger-abort-emptied-batch-embedded-earlier-light-both-held-disk-below"
    r, w, src = _written(name)
    reput = int(w["truncateDirtyLogicFilesAt"]) - 1
    at, parsed, _second = embedded_earlier_light_messages()
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert at == reput and len(data) == 2 and int(data[1].name) <= reput and _record(data, reput, len(parsed)) == parsed
    m10 = LIGHT_EARLIER_UNIT
    m11_at = sum(m10) + ENTRY_HEADER_SIZE
    m11 = (m11_at, int.from_bytes(data[0].read_bytes()[m11_at:m11_at + 4], "big"))
    (held_file,) = sorted((src / "before" / "consumequeue" / "%LMQ%q1" / "0").iterdir())
    before = held_file.read_bytes()
    assert first_units(before, 1) == [LIGHT_BELOW_UNIT] and not any(before[CQ_UNIT_SIZE:]), before[:60].hex()
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / held_file.name).read_bytes()
    units = first_units(held, 4)
    m9 = units[1]   # message 9, put to %LMQ%q1 itself: the record just before message 10
    assert sum(m9) + ENTRY_HEADER_SIZE == m10[0] and b"\x07%LMQ%q1" in _record(data, *m9)
    assert b"INNER_MULTI_DISPATCH" not in _record(data, *m9)
    for light in (m10, m11):
        assert b"INNER_MULTI_DISPATCH\x01%LMQ%q1" in _record(data, *light) and sum(light) <= int(data[1].name)
    assert sum(LIGHT_BELOW_UNIT) < m9[0]
    # the broker's file: the planted unit, the own unit and light unit 0 appended, light unit 1 dropped, the parsed one
    assert units == [LIGHT_BELOW_UNIT, m9, m10, (reput, len(parsed))] and not any(held[4 * CQ_UNIT_SIZE:]), units
    loaded = w["queuesAfterLoad"]["%LMQ%q1/0"]
    assert (int(loaded["maxOffset"]), int(loaded["maxPhysicOffset"])) == (3 * CQ_UNIT_SIZE, sum(m10)), loaded
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 4 * CQ_UNIT_SIZE, state
    cuts = _capture_cuts(monkeypatch)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert cuts[0][("%LMQ%q1", 0)] == (sum(m10), True, 3 * CQ_UNIT_SIZE, True), cuts
    assert crash.start_offset == 0, crash.start_offset
    placed = crash.cut.inside_placed
    assert [(u.position, u.offset, u.size) for u in placed.units if u.topic == "%LMQ%q1"] == \
        [(3 * CQ_UNIT_SIZE, reput, len(parsed))], placed
    (w_lmq,) = [q for q in placed.whole if q.topic == "%LMQ%q1"]
    assert [(pos, o) for pos, o, _s, _t in w_lmq.units] == [(3 * CQ_UNIT_SIZE, reput)], w_lmq
    # a unit each, a light one more for the two light puts and the planted unit, which no put sent, less light unit 1,
    # which the rule drops in any rebuild (own queue offset 0 and light queue offset 0 before it)
    _loses_as_the_broker(p, r, src, (reput, reput + len(parsed)), extra=len(EARLIER_LIGHT_PUTS) + 1 - 1)

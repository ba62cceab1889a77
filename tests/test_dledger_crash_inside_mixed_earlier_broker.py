"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside
an entry, parses a unit for a queue holding a record's own units and light ones (``%LMQ%q1``, queue 0) with units of
both kinds in the walk's earlier data file: ``putMessagePositionInfo`` put those in commitlog order whatever their
queue offsets (own and light ones from two counters), so the write position and max the cut leaves are those the
rule leaves after them.  Written by the published RocketMQ store through the JVM harness in ``tests/broker/``: what
the broker's restart wrote, ``rebuild --as-restart`` on the store as that restart found it (byte for byte) and
``verify``'s units lost.  The scenarios: :mod:`broker_dledger_inside_mixed_earlier_scenarios`.
"""
from __future__ import annotations

import broker_harness as bh
import pytest
from broker_dledger_files import cq_unit
from broker_dledger_runs import (
    LINES,
    _inside_run,
    _loses_as_the_broker,
    _restart_as_the_broker,
    _verify_loses_as_the_broker,
    _verify_with_plan,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_parses_a_light_unit_for_a_queue_with_both_kinds_in_an_earlier_file(
        line, tmp_path):
    """The -earlier-light-mixed-both store: in the walk's earlier data file the own unit of the message put to
    %LMQ%q1 itself (own queue offset 0) at 0, message 10's light unit (queue offset 0) at 20, message 11's (queue
    offset 1) dropped (20 below write position 40); in the last one the own unit of the last message (own queue
    offset 1) dropped too, past processOffset. The cut leaves write position 40 (not 40 by either kind's queue
    offsets: 20 after the own unit, 40 after the light ones), the max message 10's end; the T7/0 message where the
    reput is set also goes to %LMQ%q1 (light queue offset 7): appended at 40. --as-restart writes the broker's files
    byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_light_scenarios import EARLIER_LIGHT_PUTS, embedded_earlier_light_messages
    from broker_dledger_inside_mixed_earlier_scenarios import BOTH_OWN_PUT
    name = f"{line}-dledger-abort-emptied-batch-embedded-earlier-light-mixed-both"
    reput, first, second = embedded_earlier_light_messages()
    r, w, src = _inside_run(name, reput, first + second, b"x" * 8)
    msgs = r["scenario"]["messages"]
    assert msgs[BOTH_OWN_PUT]["topic"] == "%LMQ%q1" and msgs[-1]["topic"] == "%LMQ%q1"
    assert [msgs[i]["properties"]["INNER_MULTI_QUEUE_OFFSET"] for i in EARLIER_LIGHT_PUTS] == ["0", "1"]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2 and int(data[1].name) <= reput, data
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 60, state
    lmq = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    units = [cq_unit(lmq, k) for k in range(0, 60, 20)]
    # the earlier data file's own unit, then one light unit (message 11's dropped): both below the last file
    assert units[0][0] < units[1][0] and all(o + s <= int(data[1].name) for o, s, _t in units[:2]), units
    # the own unit first: message 10's record follows it; the parsed light unit at 40, the cut left nothing after it
    assert units[2] == (reput, len(first), 0) and lmq[60:] == bytes(len(lmq) - 60), units
    _restart_as_the_broker(src, name, line, tmp_path)
    # the parsed ones sent by no put; a unit each, a light one more for two, less two the rule drops in any rebuild
    # (message 11's light unit and the last message's own unit: the plain rebuild's dispatch puts them in the same
    # order from the same state), lost to no crash: the crash loses B9's unit alone
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput, reput + len(first)),
                                extra=len(EARLIER_LIGHT_PUTS) - 2)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_that_cuts_a_queue_with_both_kinds_in_an_earlier_file(line, tmp_path):
    """The -earlier-light-mixed-both store with the messages where the reput is set for T7/0 and T6/0 alone
    (-earlier-light-mixed-t7-both): no parsed unit goes to %LMQ%q1; the cut leaves the earlier data file's own unit
    at 0 and light unit at 20 (write position 40: message 11's light unit dropped there), the last message's own
    unit, which the walk dropped, cut and not dispatched again. --as-restart writes the broker's files byte for byte,
    verify predicts the units lost."""
    from broker_dledger_inside_light_scenarios import EARLIER_LIGHT_PUTS
    from broker_dledger_inside_mixed_earlier_scenarios import BOTH_OWN_PUT
    from broker_dledger_inside_scenarios import embedded_earlier_messages
    name = f"{line}-dledger-abort-emptied-batch-embedded-earlier-light-mixed-t7-both"
    reput, run = embedded_earlier_messages()
    r, w, src = _inside_run(name, reput, run, b"x" * 8)
    assert r["scenario"]["messages"][BOTH_OWN_PUT]["topic"] == "%LMQ%q1"
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 40, state
    lmq = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    units = [cq_unit(lmq, 0), cq_unit(lmq, 20)]
    assert units[0][0] < units[1][0] and all(o + s <= int(data[1].name) for o, s, _t in units), units
    assert int(state["maxPhysicOffset"]) == sum(units[1][:2]), state   # message 10's end: 11's light unit dropped
    assert lmq[40:] == bytes(len(lmq) - 40), lmq[:60].hex()
    _restart_as_the_broker(src, name, line, tmp_path)
    # the parsed ones sent by no put; a unit each, a light one more for two, less the two the rule drops in any
    # rebuild (message 11's light unit, the last message's own unit)
    first = int.from_bytes(run[:4], "big")   # the T7/0 message's size, the T6/0 one after it
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput, reput + first), extra=len(EARLIER_LIGHT_PUTS) - 2)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_dispatches_a_cut_unit_again_in_a_queue_with_both_kinds_earlier(
        line, tmp_path):
    """The -to-entry-earlier-light store with message 9 of the first data file put to %LMQ%q1 itself
    (-to-entry-earlier-light-both): the walk's units of %LMQ%q1 in its earlier data file, the own unit (own queue
    offset 0) at 0 and message 11's light unit (queue offset 0) at 20; the last message's light unit (queue offset 1)
    dropped (20 below 40) past processOffset. The T6/0 message where the reput is set, also to %LMQ%q1 (light queue
    offset 7), goes to 40 (where the cut leaves the queue: its write position after the earlier file's units in
    commitlog order), and the reput, going on at B9's entry, dispatches the last message again: its light unit
    dropped again. --as-restart writes the broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_light_scenarios import embedded_to_entry_earlier_light_message
    from broker_dledger_inside_mixed_earlier_scenarios import BOTH_OWN_PUT
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-earlier-light-both"
    reput, msg = embedded_to_entry_earlier_light_message()
    r, w, src = _inside_run(name, reput, msg)
    assert r["scenario"]["messages"][BOTH_OWN_PUT]["topic"] == "%LMQ%q1"
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2 and int(data[1].name) <= reput, data
    tail = int(w["maxPhyOffset"]) - 300   # the last message (300 bytes), the log's last
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 60, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    units = [cq_unit(held, k) for k in range(0, 60, 20)]
    assert units[0][0] < units[1][0] and all(o + s <= int(data[1].name) for o, s, _t in units[:2]), units
    assert units[2] == (reput, len(msg), 0) and held[60:] == bytes(len(held) - 60), units
    assert tail not in [o for o, _s, _t in units], "the last message's light unit dropped, by the walk and again"
    t6 = (src / "expected" / "consumequeue" / "T6" / "0" / f"{0:020d}").read_bytes()
    assert cq_unit(t6, 20) == (reput, len(msg), 0) and t6[40:] == bytes(len(t6) - 40), t6[:60].hex()   # T6/0 too
    _restart_as_the_broker(src, name, line, tmp_path)
    # a unit each, a light one more for two, less the last message's light unit, which any rebuild drops
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=1)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_light_unit_for_a_kept_queue_with_own_units(
        line, tmp_path, monkeypatch):
    """The -light-mixed store with the queues kept (-light-mixed-kept): %LMQ%q1/0 on disk before the walk (the light
    units 0-2 at 0-40, the own unit, own queue offset 0, at 60: the crashed broker's dispatch); the walk's
    putMessagePositionInfo puts its units onto those files (every one at or below their max dropped, the last
    message's light unit, queue offset 3, below write position 80), the cut leaves write position 80 and the own
    unit's end; the T5/0 message where the reput is set also goes to %LMQ%q1 (light queue offset 7): appended at 80.
    verify on the store as that restart found it puts it there and predicts the units lost."""
    from broker_dledger_inside_light_scenarios import MIXED_PUT
    from broker_dledger_inside_scenarios import LIGHT_PUTS, embedded_light_message

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-kept"
    reput, msg = embedded_light_message()
    r, w, src = _inside_run(name, reput, msg, b"x" * 8)
    assert r["scenario"]["keepQueues"] and r["scenario"]["messages"][MIXED_PUT]["topic"] == "%LMQ%q1"
    (held_file,) = sorted((src / "before" / "consumequeue" / "%LMQ%q1" / "0").iterdir())
    before = held_file.read_bytes()
    assert w["queuesAfterLoad"]["%LMQ%q1/0"]["files"] == [held_file.name], w["queuesAfterLoad"].get("%LMQ%q1/0")
    units_before = [cq_unit(before, k) for k in range(0, 80, 20)]
    assert all(o < reput for o, _s, _t in units_before) and before[80:] == bytes(len(before) - 80), units_before
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 100, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / held_file.name).read_bytes()
    assert held[:80] == before[:80] and cq_unit(held, 80) == (reput, len(msg), 0), held[:120].hex()
    assert held[100:] == bytes(len(held) - 100), held.hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert [u for u in crash.cut.inside_placed.units if u.topic == "%LMQ%q1"] == \
        [InsideUnit("%LMQ%q1", 0, 80, reput, len(msg), 0)], crash.cut.inside_placed
    # a unit each, a light one more for three: the last message's light unit is dropped by any dispatch
    _loses_as_the_broker(p, r, src, (reput,), extra=len(LIGHT_PUTS))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_light_unit_for_a_planted_queue_with_own_units(
        line, tmp_path, monkeypatch):
    """The -light-mixed-kept store with %LMQ%q1/0's file planted before the restart holding only light units 1 and 2
    (-light-mixed-kept-planted), at 0 and 20: ConsumeQueue.recover loads write position 40, max light unit 2's end;
    the walk's putMessagePositionInfo drops light units 0-2 (at or below that max), appends the own unit (own queue
    offset 0) at 40 and the last message's light unit (queue offset 3) at 60; the cut takes that one (past
    processOffset): write position 60, max the own unit's end. The T5/0 message where the reput is set also goes to
    %LMQ%q1 (light queue offset 7): appended at 60 (not 80, where the walk's units alone leave the queue). verify on
    the store as that restart found it puts it there and predicts the units lost (light unit 0, missing from the
    planted file, lost too)."""
    from broker_dledger_inside_light_scenarios import MIXED_PUT
    from broker_dledger_inside_mixed_earlier_scenarios import PLANTED_UNITS
    from broker_dledger_inside_scenarios import LIGHT_PUTS, embedded_light_message

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-kept-planted"
    reput, msg = embedded_light_message()
    r, w, src = _inside_run(name, reput, msg, b"x" * 8)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    log, base = data[-1].read_bytes(), int(data[-1].name)
    msgs = r["scenario"]["messages"]
    for k, (offset, size) in enumerate(PLANTED_UNITS):   # the records of light puts 1 and 2
        rec = log[offset - base:offset - base + size]
        assert int.from_bytes(rec[:4], "big") == size and int.from_bytes(rec[28:36], "big") == offset, rec[:40].hex()
        assert msgs[LIGHT_PUTS[k + 1]]["properties"]["INNER_MULTI_QUEUE_OFFSET"] == str(k + 1)
        assert b"INNER_MULTI_QUEUE_OFFSET\x01" + str(k + 1).encode() in rec, rec.hex()
    (held_file,) = sorted((src / "before" / "consumequeue" / "%LMQ%q1" / "0").iterdir())
    before = held_file.read_bytes()
    assert [cq_unit(before, k)[:2] for k in (0, 20)] == list(PLANTED_UNITS) and before[40:] == bytes(len(before) - 40)
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 80, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / held_file.name).read_bytes()
    own = cq_unit(held, 40)
    assert msgs[MIXED_PUT]["topic"] == "%LMQ%q1" and PLANTED_UNITS[1][0] < own[0] < reput, own
    assert held[:40] == before[:40] and cq_unit(held, 60) == (reput, len(msg), 0), held[:100].hex()
    assert held[80:] == bytes(len(held) - 80), held.hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert [u for u in crash.cut.inside_placed.units if u.topic == "%LMQ%q1"] == \
        [InsideUnit("%LMQ%q1", 0, 60, reput, len(msg), 0)], crash.cut.inside_placed
    # a unit each, a light one more for three (light unit 0, missing from the planted file, lost)
    _loses_as_the_broker(p, r, src, (reput,), extra=len(LIGHT_PUTS))


@pytest.mark.parametrize("suffix", ["", "-planted"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_light_unit_for_a_kept_queue_with_both_kinds_earlier(
        line, suffix, tmp_path, monkeypatch):
    """The -earlier-light-mixed-both store with the queues kept (-earlier-light-mixed-both-kept): %LMQ%q1/0 on disk
    before the walk as the crashed broker's dispatch wrote it (the own unit at 0, light unit 0 at 20); the walk, from
    the first data file, puts its units of both kinds onto those files (every one at or below their max, or below the
    write position, dropped), the cut leaves write position 40 and the parsed light unit goes there. ``-planted``: the
    file planted with light unit 1 alone at 0 (write position 20, max its end): the walk drops the own unit and light
    units 0 and 1, appends the last message's own unit (own queue offset 1) at 20, past processOffset; the cut leaves
    write position 20 and the parsed light unit goes there (the walk's units alone leave 40). verify on the store as
    that restart found it puts it there and predicts the units lost."""
    from broker_dledger_inside_light_scenarios import EARLIER_LIGHT_PUTS, embedded_earlier_light_messages
    from broker_dledger_inside_mixed_earlier_scenarios import BOTH_OWN_PUT, PLANTED_BOTH_UNIT

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-batch-embedded-earlier-light-mixed-both-kept{suffix}"
    reput, first, second = embedded_earlier_light_messages()
    r, w, src = _inside_run(name, reput, first + second, b"x" * 8)
    msgs = r["scenario"]["messages"]
    assert r["scenario"]["keepQueues"] and msgs[BOTH_OWN_PUT]["topic"] == "%LMQ%q1" == msgs[-1]["topic"]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2 and int(data[1].name) <= reput, data
    (held_file,) = sorted((src / "before" / "consumequeue" / "%LMQ%q1" / "0").iterdir())
    before = held_file.read_bytes()
    units_before = [cq_unit(before, k) for k in range(0, 40, 20)]
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / held_file.name).read_bytes()
    if suffix:
        log = data[0].read_bytes()
        offset, size = PLANTED_BOTH_UNIT   # message 11's record: light queue offset 1
        rec = log[offset:offset + size]
        assert int.from_bytes(rec[:4], "big") == size and int.from_bytes(rec[28:36], "big") == offset, rec[:40].hex()
        assert msgs[EARLIER_LIGHT_PUTS[1]]["properties"]["INNER_MULTI_QUEUE_OFFSET"] == "1"
        assert b"INNER_MULTI_QUEUE_OFFSET\x011" in rec, rec.hex()
        assert units_before[0][:2] == PLANTED_BOTH_UNIT and before[20:] == bytes(len(before) - 20), before[:60].hex()
        at = 20
    else:   # the own unit, then light unit 0, both in the first data file; light unit 1 dropped
        assert all(o + s <= int(data[1].name) for o, s, _t in units_before) and before[40:] == bytes(len(before) - 40)
        at = 40
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == at + 20, state
    assert held[:at] == before[:at] and cq_unit(held, at) == (reput, len(first), 0), held[:80].hex()
    assert held[at + 20:] == bytes(len(held) - at - 20), held.hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert [u for u in crash.cut.inside_placed.units if u.topic == "%LMQ%q1"] == \
        [InsideUnit("%LMQ%q1", 0, at, reput, len(first), 0)], crash.cut.inside_placed
    # the parsed ones sent by no put; a unit each, a light one more for two, less two the rule drops in any rebuild
    # (message 11's light unit and the last message's own unit); planted: the own unit and light unit 0, missing
    # from the file, lost too, and light unit 1, which any rebuild drops, held there (counted among those held)
    _loses_as_the_broker(p, r, src, (reput, reput + len(first)), extra=len(EARLIER_LIGHT_PUTS) - 2 + bool(suffix))

"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside
an entry, replays a queue holding a record's own units and light ones (``%LMQ%q1``, queue 0: multi-dispatch beside
messages put to that topic itself, their queue offsets from two counters): where the reput appends a cut unit the
walk's dispatch dropped (its bytes in no file of the walk's queue, computed from the record: its offset, size and
tags code for that queue), with records past the walk's end after cut units it goes on past, with no parsed unit
there putting back only the last cut units, a queue the cut left no file of, and one with units of one kind in the
walk's earlier data file.  Written by the published RocketMQ store through the JVM harness in ``tests/broker/``:
what the broker's restart wrote, ``rebuild --as-restart`` on the store as that restart found it (byte for byte) and
``verify``'s units lost.  The scenarios: :mod:`broker_dledger_inside_mixed_replay_scenarios`.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_files import cq_unit
from broker_dledger_runs import LINES, _inside_run, _restart_as_the_broker, _verify_loses_as_the_broker

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_appends_a_cut_light_unit_the_walk_dropped(line, tmp_path):
    """The -light-mixed-skip-dropped store: the walk's units of %LMQ%q1 light at 0-40, the own unit (queue offset 0)
    of the message between B9's and the last at 60, the last message's light unit (queue offset 3) dropped below
    write position 80. The cut leaves write position 60; the parsed message (the %LMQ%q1 record's topic and
    properties, own queue offset 1) is dropped there (20 below 60), the reput goes on at the last message's entry
    (the %LMQ%q1 record inside the parsed message: not dispatched again) and appends that message's light unit,
    which the walk dropped, at 60. --as-restart writes the broker's files byte for byte, verify predicts the units
    lost."""
    from broker_dledger_inside_mixed_replay_scenarios import embedded_light_mixed_skip_dropped_message
    from broker_dledger_inside_scenarios import LIGHT_PUTS, LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-skip-dropped"
    reput, head, size = embedded_light_mixed_skip_dropped_message()
    r, w, src = _inside_run(name, reput, head)   # the %LMQ%q1 message's header from processOffset - 1
    tail = int(w["maxPhyOffset"]) - LIGHT_TAIL   # the last message, T0/0 and %LMQ%q1 light queue offset 3
    own = tail - 48 - LIGHT_TAIL                  # the message put to %LMQ%q1 itself, inside the parsed one
    assert reput + size == own + LIGHT_TAIL and r["scenario"]["messages"][-2]["topic"] == "%LMQ%q1"
    held, units = _lmq_four_units(w, src, reput, tail)
    # the light unit the walk dropped, appended where the walk's own unit stood; neither the parsed unit nor that
    # own unit held
    assert units[3][:2] == (tail, LIGHT_TAIL) and held[80:] == bytes(len(held) - 80), held[:100].hex()
    t0 = b"".join(f.read_bytes() for f in sorted((src / "expected" / "consumequeue" / "T0" / "0").iterdir()))
    assert tail in [cq_unit(t0, k)[0] for k in range(0, len(t0), 20)], "the last message put back in T0/0"
    _restart_as_the_broker(src, name, line, tmp_path)
    # a unit each, a light one more for the three light puts and the last message
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=len(LIGHT_PUTS) + 1)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_dispatches_records_past_the_walk_after_a_cut_unit_it_went_past(
        line, tmp_path):
    """The -light-mixed-skip-dropped store with two more T0/0 messages also to %LMQ%q1 (light queue offsets 4 and 5),
    the first damaged: the walk ends there; the reput goes on past the %LMQ%q1 record's own unit (inside the parsed
    message, not dispatched again), appends the last walked message's light unit, which the walk dropped, at 60, then
    the two records past the walk's end by putMessagePositionInfo with their real light queue offsets from the state
    that left: 4 at 80, 5 at 100. --as-restart writes the broker's files byte for byte, verify predicts the units
    lost."""
    from broker_dledger_inside_mixed_replay_scenarios import embedded_light_mixed_skip_dropped_message
    from broker_dledger_inside_scenarios import LIGHT_PUTS, LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-skip-dropped-past"
    reput, head, size = embedded_light_mixed_skip_dropped_message()
    r, w, src = _inside_run(name, reput, head, damaged=True)
    damaged = int(w["damagedRecord"])
    tail = damaged - ENTRY_HEADER_SIZE - LIGHT_TAIL   # the last walked message, T0/0 and %LMQ%q1 light offset 3
    assert reput + size == tail - ENTRY_HEADER_SIZE, (reput, size, tail)
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 120, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    units = [cq_unit(held, k) for k in range(0, 120, 20)]
    assert all(o < reput for o, _s, _t in units[:len(LIGHT_PUTS)]) and held[120:] == bytes(len(held) - 120), units
    # the light unit the walk dropped at 60, the damaged record's at 80, the next one's at 100
    assert [u[:2] for u in units[3:]] == [(tail, LIGHT_TAIL), (damaged, LIGHT_TAIL),
                                         (damaged + LIGHT_TAIL + ENTRY_HEADER_SIZE, LIGHT_TAIL)], units
    _restart_as_the_broker(src, name, line, tmp_path)
    # a unit each, a light one more for the three light puts, the last walked message and the two records past the
    # walk's end
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=len(LIGHT_PUTS) + 3)



@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_puts_back_only_the_last_cut_unit_of_a_queue_with_own_units(
        line, tmp_path):
    """The -light-mixed-skip-t0 store: the walk's units of %LMQ%q1 light at 0-40, the %LMQ%q1 record's own unit
    (queue offset 0) at 60, the last message's light unit (queue offset 3) dropped below 80; the message parsed
    where the reput is set is for T0/0 alone (no parsed unit in %LMQ%q1) and swallows the %LMQ%q1 record, so the
    reput, going on at the last message's entry, puts back only the last cut unit of %LMQ%q1, from the write position
    (60) and max the cut left: its light unit, which the walk dropped, appended at 60. --as-restart writes the
    broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_mixed_replay_scenarios import embedded_light_mixed_skip_t0_message
    from broker_dledger_inside_scenarios import LIGHT_PUTS, LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-skip-t0"
    reput, head, size = embedded_light_mixed_skip_t0_message()
    r, w, src = _inside_run(name, reput, head)
    tail = int(w["maxPhyOffset"]) - LIGHT_TAIL   # the last message, T0/0 and %LMQ%q1 light queue offset 3
    assert reput + size == tail - ENTRY_HEADER_SIZE and r["scenario"]["messages"][-3]["topic"] == "%LMQ%q1"
    held, units = _lmq_four_units(w, src, reput, tail)
    assert units[3][:2] == (tail, LIGHT_TAIL) and held[80:] == bytes(len(held) - 80), held[:100].hex()
    t0 = b"".join(f.read_bytes() for f in sorted((src / "expected" / "consumequeue" / "T0" / "0").iterdir()))
    t0_units = [cq_unit(t0, k)[0] for k in range(0, len(t0), 20)]
    assert reput in t0_units and tail in t0_units, "the parsed and the last message in T0/0"
    _restart_as_the_broker(src, name, line, tmp_path)
    # a unit each, a light one more for the three light puts and the last message
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=len(LIGHT_PUTS) + 1)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_dispatches_records_past_the_walk_after_every_cut_unit_it_went_past(
        line, tmp_path):
    """The -light-mixed-skip-dropped-past store with the message where the reput is set swallowing every cut record
    and the damaged one, their topic and properties the damaged record's (T0/0 queue offset 1000, %LMQ%q1 light
    queue offset 4): the cut leaves %LMQ%q1 at write position 60, where the parsed light unit goes; the reput goes on
    past both cut units (the own unit and the light unit the walk dropped: neither dispatched again, both below the
    parsed message's end) and appends the last record's light unit (queue offset 5) at 80. --as-restart writes the
    broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_mixed_replay_scenarios import embedded_light_mixed_skip_all_past_message
    from broker_dledger_inside_scenarios import LIGHT_PUTS, LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-skip-all-past"
    reput, head, size = embedded_light_mixed_skip_all_past_message()
    r, w, src = _inside_run(name, reput, head, damaged=True)
    damaged = int(w["damagedRecord"])
    assert reput + size == damaged + LIGHT_TAIL, (reput, size, damaged)
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 100, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    units = [cq_unit(held, k) for k in range(0, 100, 20)]
    assert all(o < reput for o, _s, _t in units[:len(LIGHT_PUTS)]) and held[100:] == bytes(len(held) - 100), units
    # the parsed light unit at 60, the last record's at 80
    assert [u[:2] for u in units[3:]] == [(reput, size), (damaged + LIGHT_TAIL + ENTRY_HEADER_SIZE, LIGHT_TAIL)], units
    _restart_as_the_broker(src, name, line, tmp_path)
    # a unit each, a light one more for the three light puts and the two records past the walk's end: the last walked
    # message's light unit, which the plain rebuild's dispatch drops too (queue offset 3 below 80) and the reput never
    # dispatches (inside the parsed message), is lost to no crash
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=len(LIGHT_PUTS) + 2)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_parses_a_light_unit_for_a_queue_with_own_units_the_cut_emptied(
        line, tmp_path):
    """The -light-mixed-emptied store: the walk's units of %LMQ%q1, the own unit of the message put to it (queue
    offset 0) at 0 and the last message's light unit (queue offset 0) at 20, both past processOffset: the cut leaves
    it no file (max -1). The T5/0 message where the reput is set (also to %LMQ%q1, light queue offset 7) gets a new
    file where its queue offset falls (fillPreBlank units at 0-120, the unit at 140), and the reput, going on at
    B9's entry, appends both cut units after it (queue offsets 0: no check), at 160 and 180. --as-restart writes the
    broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_mixed_replay_scenarios import (
        EMPTIED_LIGHT_QUEUE_OFFSET,
        embedded_light_mixed_emptied_message,
    )
    from broker_dledger_inside_scenarios import LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-emptied"
    reput, msg = embedded_light_mixed_emptied_message()
    r, w, src = _inside_run(name, reput, msg)
    tail = int(w["maxPhyOffset"]) - LIGHT_TAIL   # the last message, T0/0 and %LMQ%q1 light queue offset 0
    own = tail - ENTRY_HEADER_SIZE - LIGHT_TAIL   # the message put to %LMQ%q1 itself
    assert r["scenario"]["messages"][-2]["topic"] == "%LMQ%q1"
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    at = EMPTIED_LIGHT_QUEUE_OFFSET * 20
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == at + 60, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    blank = (0).to_bytes(8, "big") + (2**31 - 1).to_bytes(4, "big") + bytes(8)
    assert held[:at] == blank * EMPTIED_LIGHT_QUEUE_OFFSET and held[at + 60:] == bytes(len(held) - at - 60), held.hex()
    assert [cq_unit(held, k)[:2] for k in range(at, at + 60, 20)] == [(reput, len(msg)), (own, LIGHT_TAIL),
                                                                      (tail, LIGHT_TAIL)], held.hex()
    _restart_as_the_broker(src, name, line, tmp_path)
    # a unit each, a light one more for the last message
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=1)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_parses_a_light_unit_for_a_queue_with_units_in_an_earlier_file(
        line, tmp_path):
    """The -earlier-light-mixed store: the walk's light units 0 and 1 of %LMQ%q1 in its earlier data file (at 0, 20),
    the own unit (queue offset 0) of its last message, put to %LMQ%q1 itself, in the last one, appended at 40 past
    processOffset: the cut leaves write position 40, the max the earlier file's second unit's end. The T7/0 message
    where the reput is set also goes to %LMQ%q1 (light queue offset 7): appended at 40. --as-restart writes the
    broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_light_scenarios import EARLIER_LIGHT_PUTS, embedded_earlier_light_messages
    name = f"{line}-dledger-abort-emptied-batch-embedded-earlier-light-mixed"
    reput, first, second = embedded_earlier_light_messages()
    r, w, src = _inside_run(name, reput, first + second, b"x" * 8)
    assert r["scenario"]["messages"][-1]["topic"] == "%LMQ%q1"
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2 and int(data[1].name) <= reput, data
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 60, state
    lmq = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    units = [cq_unit(lmq, k) for k in range(0, 60, 20)]
    assert all(o + s <= int(data[1].name) for o, s, _t in units[:2]), units   # the earlier data file's units
    # the parsed light unit where the walk's own unit stood (cut; the reput goes on past it: lost)
    assert units[2] == (reput, len(first), 0) and lmq[60:] == bytes(len(lmq) - 60), units
    _restart_as_the_broker(src, name, line, tmp_path)
    # the parsed ones sent by no put; a unit each, a light one more for two
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput, reput + len(first)), extra=len(EARLIER_LIGHT_PUTS))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_goes_past_a_cut_own_unit_of_a_queue_with_units_in_an_earlier_file(
        line, tmp_path):
    """The -earlier-light-mixed store with the messages where the reput is set for T7/0 and T6/0 alone
    (-earlier-light-mixed-t7): no parsed unit goes to %LMQ%q1; the cut leaves its earlier data file's light units at
    0 and 20 (write position 40), the own unit the walk appended at 40 cut and not dispatched again. --as-restart
    writes the broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_light_scenarios import EARLIER_LIGHT_PUTS
    from broker_dledger_inside_scenarios import embedded_earlier_messages
    name = f"{line}-dledger-abort-emptied-batch-embedded-earlier-light-mixed-t7"
    reput, run = embedded_earlier_messages()
    r, w, src = _inside_run(name, reput, run, b"x" * 8)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 40, state
    lmq = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    assert all(o + s <= int(data[1].name) for o, s, _t in (cq_unit(lmq, 0), cq_unit(lmq, 20)))
    _restart_as_the_broker(src, name, line, tmp_path)
    # the parsed ones sent by no put; a unit each, a light one more for two
    first = int.from_bytes(run[:4], "big")   # the T7/0 message's size, the T6/0 one after it
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput, reput + first), extra=len(EARLIER_LIGHT_PUTS))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_puts_back_the_last_cut_unit_then_records_past_the_walk(line, tmp_path):
    """The -light-mixed-skip-t0 store with two more T0/0 messages also to %LMQ%q1 (light queue offsets 4 and 5), the
    first damaged: the walk ends there; with no parsed unit in %LMQ%q1 the reput puts back its last cut unit (the
    light unit the walk dropped, at 60), then the two records past the walk's end at 80 and 100. --as-restart writes
    the broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_mixed_replay_scenarios import embedded_light_mixed_skip_t0_message
    from broker_dledger_inside_scenarios import LIGHT_PUTS, LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-skip-t0-past"
    reput, head, size = embedded_light_mixed_skip_t0_message()
    r, w, src = _inside_run(name, reput, head, damaged=True)
    damaged = int(w["damagedRecord"])
    tail = damaged - ENTRY_HEADER_SIZE - LIGHT_TAIL
    assert reput + size == tail - ENTRY_HEADER_SIZE, (reput, size, tail)
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 120, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    units = [cq_unit(held, k) for k in range(0, 120, 20)]
    assert [u[:2] for u in units[3:]] == [(tail, LIGHT_TAIL), (damaged, LIGHT_TAIL),
                                         (damaged + LIGHT_TAIL + ENTRY_HEADER_SIZE, LIGHT_TAIL)], units
    assert held[120:] == bytes(len(held) - 120), held[:140].hex()
    _restart_as_the_broker(src, name, line, tmp_path)
    # a unit each, a light one more for the three light puts, the last walked message and the two records past the
    # walk's end
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=len(LIGHT_PUTS) + 3)


def _lmq_four_units(w: dict, src: Path, reput: int, tail: int) -> tuple[bytes, list[tuple[int, int, int]]]:
    """The broker's %LMQ%q1/0 after its restart (the -skip-dropped and -skip-t0 stores): one file, four units (the
    light puts' below the reput, then one), its max the last message's end (``tail``); the file's bytes and units."""
    from broker_dledger_inside_scenarios import LIGHT_PUTS, LIGHT_TAIL
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 80, state
    assert int(state["maxPhysicOffset"]) == tail + LIGHT_TAIL, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    units = [cq_unit(held, k) for k in range(0, 80, 20)]
    assert all(o < reput for o, _s, _t in units[:len(LIGHT_PUTS)]), units
    return held, units

"""DLedger crash restarts (an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside an entry,
replays a queue holding a record's own units and light ones (``%LMQ%q1``, queue 0: multi-dispatch beside messages
put to that topic itself, their queue offsets from two counters), beyond
:mod:`test_dledger_crash_inside_mixed_replay_broker`: a light unit below processOffset the walk's dispatch dropped
(5.5.1), the reput putting back only the last cut units with ext files, a light one or an own one with a new ext
unit (5.5.1), and a queue the 5.3.3 cut left with no file, its max kept at processOffset (5.3.3). Written by the
published RocketMQ store through the JVM harness in ``tests/broker/``: what the broker's restart wrote, ``rebuild
--as-restart`` on the store as that restart found it (5.5.1, byte for byte) or ``verify``'s plan (5.3.3, its queues
kept on disk), and ``verify``'s units lost. The scenarios: :mod:`broker_dledger_inside_mixed_more_scenarios`.
"""
from __future__ import annotations

import struct
from pathlib import Path

import broker_harness as bh
import numpy as np
import pytest
from broker_dledger_files import cq_unit, last_data_bytes
from broker_dledger_runs import (
    LINES,
    _inside_run,
    _queued,
    _restart_as_the_broker,
    _units_below_write,
    _verify_loses_as_the_broker,
    _verify_with_plan,
    _written,
)

from store_format.consumequeue_ext import ext_addresses
from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()

_LINES_533 = bh.params_or_skip([ln for ln in LINES if ln.startswith("5.3")],
                               "5.3.3 only: DLEDGER_LINES=5.3.3 (or 4.9.8,5.3.3,5.5.1)")
_LMQ = Path("consumequeue") / "%LMQ%q1" / "0" / f"{0:020d}"
_LMQ_EXT = Path("consumequeue_ext") / "%LMQ%q1" / "0" / f"{0:020d}"
_BLANK = struct.pack(">qiq", 0, 2**31 - 1, 0)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_parses_a_light_unit_for_a_queue_whose_walk_dropped_one_below_the_cut(
        line, tmp_path):
    """The -light-mixed-mid store: the walk's putMessagePositionInfo puts %LMQ%q1's light units 0 and 1 at 0 and 20,
    the own unit (queue offset 0) of the put between the second and third light put at 40, and drops the third light
    unit (queue offset 2, below write position 60), below processOffset; the last message's light unit (queue offset
    3) goes at 60, past processOffset. truncateDirtyLogicFiles reads the file's units: write position 60, its max
    the own unit's end (not the dropped unit's, which no file holds). The T5/0 message where the reput is set also
    goes to %LMQ%q1 (light queue offset 7): appended at 60. --as-restart writes the broker's files byte for byte,
    verify predicts the units lost."""
    from broker_dledger_inside_mixed_more_scenarios import MID_PUT
    from broker_dledger_inside_scenarios import LIGHT_PUTS, embedded_light_message
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-mid"
    reput, msg = embedded_light_message()
    r, w, src = _inside_run(name, reput, msg, b"x" * 8)   # the T5/0 and %LMQ%q1 message from processOffset - 1
    assert r["scenario"]["messages"][MID_PUT]["topic"] == "%LMQ%q1"
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 80, state
    held = (src / "expected" / _LMQ).read_bytes()
    units = [cq_unit(held, k) for k in range(0, 80, 20)]
    # light 0 and 1, then the own unit, all below processOffset in commitlog order; the parsed light unit at 60
    assert [o for o, _s, _t in units[:3]] == sorted(o for o, _s, _t in units[:3]) and units[2][0] < reput, units
    assert units[3] == (reput, len(msg), 0) and held[80:] == bytes(len(held) - 80), units
    # the queue as the recovery's walk and cut left it (load()): write position 60, its max the own unit's end (the
    # third light unit, dropped by the walk below processOffset, in no file); the last message's light unit cut
    loaded = w["queuesAfterLoad"]["%LMQ%q1/0"]
    assert loaded["files"] == [f"{0:020d}"] and int(loaded["maxOffset"]) == 60, loaded
    assert int(loaded["maxPhysicOffset"]) == units[2][0] + units[2][1], loaded
    third = r["scenario"]["messages"][LIGHT_PUTS[2]]
    assert third["properties"]["INNER_MULTI_QUEUE_OFFSET"] == "2", third
    _restart_as_the_broker(src, name, line, tmp_path)
    # a unit each, a light one more for three: the third light put's, which any dispatch drops, lost to no crash
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=len(LIGHT_PUTS))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_puts_back_only_the_last_cut_unit_of_a_queue_with_own_units_and_ext(
        line, tmp_path):
    """The -light-mixed-skip-t0 store with enableConsumeQueueExt (-light-mixed-skip-t0-ext): the walk's units of
    %LMQ%q1 light at 0-40, the %LMQ%q1 record's own unit (queue offset 0) at 60 with ext unit 0 (a light unit gets
    none), the last message's light unit (queue offset 3) dropped below 80. No parsed unit goes to %LMQ%q1; the reput,
    going on at the last message's entry past the %LMQ%q1 record, puts back only the last cut unit: its light unit,
    appended at 60 holding its tags code, no ext unit put for it; the ext file stays as the walk wrote it (a file of
    the queue left: the cut returns before truncateByMaxAddress). --as-restart writes the broker's files
    (consumequeue_ext/ too) byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_mixed_replay_scenarios import embedded_light_mixed_skip_t0_message
    from broker_dledger_inside_scenarios import LIGHT_PUTS, LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-skip-t0-ext"
    reput, head, size = embedded_light_mixed_skip_t0_message()
    r, w, src = _inside_run(name, reput, head)
    tail = int(w["maxPhyOffset"]) - LIGHT_TAIL   # the last message, T0/0 and %LMQ%q1 light queue offset 3
    assert reput + size == tail - ENTRY_HEADER_SIZE and r["scenario"]["messages"][-3]["topic"] == "%LMQ%q1"
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 80, state
    assert int(state["maxPhysicOffset"]) == tail + LIGHT_TAIL and int(state["extMaxOffset"]) == 20, state
    held = (src / "expected" / _LMQ).read_bytes()
    units = [cq_unit(held, k) for k in range(0, 80, 20)]
    assert all(o < reput and t >= 0 for o, _s, t in units[:len(LIGHT_PUTS)]), units
    # the light unit the walk dropped, holding its tags code (not an ext address), where the own unit stood
    assert units[3][:2] == (tail, LIGHT_TAIL) and units[3][2] >= 0 and held[80:] == bytes(len(held) - 80), units
    loaded = w["queuesAfterLoad"]["%LMQ%q1/0"]   # as the walk and the cut left it: the own unit's ext unit kept
    assert int(loaded["maxOffset"]) == 60 and int(loaded["extMaxOffset"]) == 20, loaded
    ext = (src / "expected" / _LMQ_EXT).read_bytes()
    assert int.from_bytes(ext[:2], "big") == 20 and ext[20:] == bytes(len(ext) - 20), ext[:60].hex()
    _restart_as_the_broker(src, name, line, tmp_path, ext=True)
    # a unit each, a light one more for the three light puts and the last message
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=len(LIGHT_PUTS) + 1)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_puts_back_only_the_last_cut_own_unit_with_a_new_ext_unit(
        line, tmp_path):
    """The -light-mixed-skip-t0-own-ext store (ext files of 10 units): the walk's units of %LMQ%q1 light at 0-40, the
    light unit of queue offset 3 at 60, then the %LMQ%q1 record's own unit (queue offset 0) at 80 with ext unit 0,
    both cut. No parsed unit goes to %LMQ%q1; the reput, going on at the own record's entry past the light one (inside
    the parsed message), puts ext unit 1 for it (ConsumeQueueExt.put: after the walk's, which the cut left) and
    appends the own unit at 60, the cut's write position (queue offset 0: no check), holding that ext unit's address.
    --as-restart writes the broker's files (consumequeue_ext/ too) byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_mixed_replay_scenarios import embedded_light_mixed_skip_t0_message
    from broker_dledger_inside_scenarios import LIGHT_PUTS, LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-skip-t0-own-ext"
    reput, head, size = embedded_light_mixed_skip_t0_message()
    r, w, src = _inside_run(name, reput, head)
    own = int(w["maxPhyOffset"]) - LIGHT_TAIL   # the last message, put to %LMQ%q1 itself (own queue offset 0)
    assert reput + size == own - ENTRY_HEADER_SIZE and r["scenario"]["messages"][-1]["topic"] == "%LMQ%q1"
    loaded = w["queuesAfterLoad"]["%LMQ%q1/0"]   # the cut at the light unit (60), the walk's ext unit left
    assert int(loaded["maxOffset"]) == 60 and int(loaded["extMaxOffset"]) == 20, loaded
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 80, state
    assert int(state["maxPhysicOffset"]) == own + LIGHT_TAIL and int(state["extMaxOffset"]) == 40, state
    held = (src / "expected" / _LMQ).read_bytes()
    units = [cq_unit(held, k) for k in range(0, 80, 20)]
    assert all(o < reput and t >= 0 for o, _s, t in units[:len(LIGHT_PUTS)]), units
    assert units[3] == (own, LIGHT_TAIL, _ext_address(1)), units
    # past the write position the walk's own unit stays on disk as bytes (holding ext unit 0's address)
    assert cq_unit(held, 80) == (own, LIGHT_TAIL, _ext_address(0)) and held[100:] == bytes(len(held) - 100)
    ext = (src / "expected" / _LMQ_EXT).read_bytes()
    assert [int.from_bytes(ext[k:k + 2], "big") for k in (0, 20)] == [20, 20] and ext[40:] == bytes(len(ext) - 40)
    _restart_as_the_broker(src, name, line, tmp_path, ext=True)
    # a unit each, a light one more for the three light puts and the light record inside the parsed message
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=len(LIGHT_PUTS) + 1)


def _ext_address(ordinal: int) -> int:
    """The tags code of a unit holding ext unit ``ordinal``'s address (ext files of 204 bytes)."""
    return int(ext_addresses(np.array([ordinal]), 204)[0])


@pytest.mark.parametrize("line", _LINES_533)
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_light_unit_for_a_queue_with_own_units_the_533_cut_emptied(
        line, tmp_path, monkeypatch):
    """The 5.3.3 -emptied-kept-embedded-light-mixed-emptied store (the queues kept on disk): %LMQ%q1's own unit
    (queue offset 0) of the message put to it and the last message's light unit (queue offset 0), at 0 and 20, both
    past processOffset: the 5.3.3 cut deletes its file and keeps its max at processOffset (no correctMinOffset
    reset), where the reput is set with T9/0's. The T5/0 message there (also to %LMQ%q1, light queue offset 7) ends
    past that max: getLastMappedFile on no file creates file 0, fillPreBlank units up to 140, the unit at 140; the
    reput, going on at T9's entry, appends both cut units after it (queue offsets 0: no check) at 160 and 180, each
    read where the walk's queue holds it. verify's plan replays %LMQ%q1 into the broker's file byte for byte, and its
    units lost are the units the broker's queues lack."""
    from broker_dledger_inside_mixed_more_scenarios import KEPT_LIGHT_QUEUE_OFFSET, kept_light_mixed_emptied_message
    from broker_dledger_inside_scenarios import LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-kept-embedded-light-mixed-emptied"
    reput, msg = kept_light_mixed_emptied_message()
    r, w, src = _written(name)
    # the 5.3.3 cut at processOffset, where the reput is set (the max it keeps for the queues it left no file) and
    # the message there
    assert int(w["truncateDirtyLogicFilesAt"]) == reput and last_data_bytes(src, reput, len(msg)) == msg
    tail = int(w["maxPhyOffset"]) - LIGHT_TAIL   # the last message, T0/0 and %LMQ%q1 light queue offset 0
    own = tail - ENTRY_HEADER_SIZE - LIGHT_TAIL   # the message put to %LMQ%q1 itself
    assert r["scenario"]["messages"][-2]["topic"] == "%LMQ%q1" and own > reput
    # on disk before the walk, its first unit past processOffset: the 5.3.3 cut deletes the file, keeps its max
    before = (src / "before" / _LMQ).read_bytes()
    assert [cq_unit(before, k)[:2] for k in (0, 20)] == [(own, LIGHT_TAIL), (tail, LIGHT_TAIL)], before[:60].hex()
    loaded = w["queuesAfterLoad"]["%LMQ%q1/0"]
    assert loaded["files"] == [] and int(loaded["maxPhysicOffset"]) == reput, loaded
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    at = KEPT_LIGHT_QUEUE_OFFSET * 20
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == at + 60, state
    held = (src / "expected" / _LMQ).read_bytes()
    assert held[:at] == _BLANK * KEPT_LIGHT_QUEUE_OFFSET and held[at + 60:] == bytes(len(held) - at - 60), held.hex()
    assert [cq_unit(held, k)[:2] for k in range(at, at + 60, 20)] == [(reput, len(msg)), (own, LIGHT_TAIL),
                                                                      (tail, LIGHT_TAIL)], held.hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / "plan"), src, line)
    (q,) = [q for q in crash.cut.inside_placed.whole if (q.topic, q.queue_id) == ("%LMQ%q1", 0)]
    assert (q.cut_from, q.opened, q.blank_until, q.put_back, q.lost) == (0, (0,), at, (own, tail), ()), q
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    assert _replayed(q, before, size) == {f"{0:020d}": held}
    # a unit each, a light one more for the last message
    assert p["units_lost"] == _queued(r["scenario"]) + 1 - _units_below_write(w, src, (reput,)), p["notes"]


def _replayed(q: object, walk: bytes, size: int) -> dict[str, bytes]:
    """The files of the replayed queue ``q`` (``QueueFiles`` of a queue the cut left with no file): those
    ``getLastMappedFile`` created, ``fillPreBlank`` units, the units appended, and the cut units' bytes read where
    the walk's queue holds them (``walk``: its file on disk before the walk, the same units in the same order)."""
    files = {f: bytearray(size) for f in q.opened}
    if q.blank_until >= 0:
        f = q.blank_until - q.blank_until % size
        files[f][:q.blank_until - f] = _BLANK * ((q.blank_until - f) // 20)
    for pos, offset, n, tags in q.units:
        files[pos - pos % size][pos % size:pos % size + 20] = struct.pack(">qiq", offset, n, tags)
    for pos, source in q.copies:
        files[pos - pos % size][pos % size:pos % size + 20] = walk[source:source + 20]
    return {f"{f:020d}": bytes(d) for f, d in sorted(files.items())}

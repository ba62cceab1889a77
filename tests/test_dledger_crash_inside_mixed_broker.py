"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside
an entry, parses a well-formed message that also goes to a light queue (multi-dispatch: ``%LMQ%q1``) that also holds
a record's own units (a message put to topic ``%LMQ%q1`` itself), with ``enableConsumeQueueExt=true``: the walk's
dispatch puts an ext unit for each own unit only (a light unit none), the reput's after them for a parsed own unit
or a cut own unit it dispatches again.  Written by the published RocketMQ store through the JVM harness in
``tests/broker/``: what the broker's restart wrote, ``rebuild --as-restart`` on the store as that restart found it
(byte for byte) and ``verify``'s units lost.  The scenarios: :mod:`broker_dledger_inside_light_scenarios`.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import numpy as np
import pytest
from broker_dledger_files import cq_unit, last_data_bytes
from broker_dledger_runs import _RUNS, LINES, _queued, _restart_as_the_broker, _units_below_write, _verify

from store_format.consumequeue_ext import ext_addresses

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()

# the scenarios' ext files: 204 bytes (mappedFileSizeConsumeQueueExt), ten 20-byte units (no filter bitmap)
EXT_FILE_SIZE = 204
LMQ = Path("consumequeue") / "%LMQ%q1" / "0" / f"{0:020d}"
LMQ_EXT = Path("consumequeue_ext") / "%LMQ%q1" / "0" / f"{0:020d}"


def _ext_address(ordinal: int) -> int:
    return int(ext_addresses(np.array([ordinal]), EXT_FILE_SIZE)[0])


def _verify_loses(r: dict, src: Path, line: str, tmp_path: Path, reput: int) -> None:
    """verify predicts the crash restart, its units lost those sent less those the broker's queues hold (a light
    unit more for each of the -light store's three light puts; the parsed one sent by no put)."""
    from broker_dledger_inside_scenarios import LIGHT_PUTS
    _code, report = _verify(bh.copy_store(src / "before", tmp_path / "verify"), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    held_units = _units_below_write(r["written"], src, (reput,))
    sent = _queued(r["scenario"]) + len(LIGHT_PUTS)
    assert p["units_lost"] == sent - held_units > 0, (held_units, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_parses_a_light_unit_for_a_queue_with_own_units_and_ext_files(
        line, tmp_path):
    """The -light-mixed store with enableConsumeQueueExt (-light-mixed-ext): %LMQ%q1/0 holds the walk's light units
    at 0-40 and its own unit (queue offset 0) at 60, the last message's light unit dropped. The walk's
    putMessagePositionInfoWrapper put an ext unit for the own unit only (ConsumeQueueExt.put; multiDispatchLmqQueue
    calls putMessagePositionInfo alone: no ext unit for a light one), so the own unit at 60 holds ext ordinal 0's
    address and the ext file one 20-byte unit; the cut returns at its first unit at or past processOffset, before
    truncateByMaxAddress: the ext file stays. The parsed T5/0 message's light unit goes to 80 with its own tags code,
    no ext unit. --as-restart writes the broker's files (consumequeue_ext/ too) byte for byte, verify predicts the
    units lost."""
    from broker_dledger_inside_light_scenarios import MIXED_PUT
    from broker_dledger_inside_scenarios import LIGHT_PUTS, embedded_light_message
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-ext"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    w, src = r["written"], Path(r["scenario"]["dir"])
    assert r["scenario"]["config"]["enableConsumeQueueExt"] == "true"
    assert r["scenario"]["messages"][MIXED_PUT]["topic"] == "%LMQ%q1"
    reput, msg = embedded_light_message()
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    assert last_data_bytes(src, reput, len(msg) + 8) == msg + b"x" * 8, "the T5/0 and %LMQ%q1 message"
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert int(state["maxOffset"]) == 100 and int(state["extMaxOffset"]) == 20, state
    held = (src / "expected" / LMQ).read_bytes()
    units = [cq_unit(held, k) for k in range(0, 100, 20)]
    light = len(LIGHT_PUTS)
    # the own unit holds ext ordinal 0's address; the light units (the parsed one too) their own tags codes
    assert units[light][2] == _ext_address(0) and all(t >= 0 for _o, _s, t in units[:light] + units[light + 1:])
    assert units[-1] == (reput, len(msg), 0) and held[100:] == bytes(len(held) - 100), units
    ext = (src / "expected" / LMQ_EXT).read_bytes()
    assert int.from_bytes(ext[:2], "big") == 20 and ext[20:] == bytes(len(ext) - 20), ext[:60].hex()
    _restart_as_the_broker(src, name, line, tmp_path, ext=True)
    _verify_loses(r, src, line, tmp_path, reput)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_appends_a_cut_own_unit_with_a_new_ext_unit_after_a_parsed_light_one(
        line, tmp_path):
    """The -light-own-to-entry store with enableConsumeQueueExt (-light-own-to-entry-ext): the walk put the last
    message's own unit of %LMQ%q1 (queue offset 0) at 60 after the three light ones, and its ext unit (ordinal 0:
    the light ones have none); the cut takes that unit, leaving the ext file as the walk wrote it. The parsed T5/0
    message's light unit goes to 60 (no ext unit); the reput, going on at B9's entry, dispatches the last message
    again: ConsumeQueueExt.put puts ext unit 1 (at ext byte 20: the ordinals count own units only), and the own unit,
    queue offset 0, is appended at 80 holding its address. --as-restart writes the broker's files (consumequeue_ext/
    too) byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_light_scenarios import embedded_light_to_entry_message
    from broker_dledger_inside_scenarios import LIGHT_PUTS, LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-own-to-entry-ext"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    w, src = r["written"], Path(r["scenario"]["dir"])
    assert r["scenario"]["config"]["enableConsumeQueueExt"] == "true"
    reput, msg = embedded_light_to_entry_message()
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    assert last_data_bytes(src, reput, len(msg)) == msg, "the T5/0 and %LMQ%q1 message from processOffset - 1"
    tail = int(w["maxPhyOffset"]) - LIGHT_TAIL   # the last message, to %LMQ%q1 itself, after B9's
    assert r["scenario"]["messages"][-1]["topic"] == "%LMQ%q1"
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert int(state["maxOffset"]) == 100 and int(state["extMaxOffset"]) == 40, state
    assert int(state["maxPhysicOffset"]) == tail + LIGHT_TAIL, state
    held = (src / "expected" / LMQ).read_bytes()
    units = [cq_unit(held, k) for k in range(0, 100, 20)]
    assert all(o < reput and t >= 0 for o, _s, t in units[:len(LIGHT_PUTS)]), units
    assert units[3] == (reput, len(msg), 0), units   # the parsed light unit: its own tags code
    assert units[4] == (tail, LIGHT_TAIL, _ext_address(1)), units   # the ext unit the reput put, after the walk's
    assert held[100:] == bytes(len(held) - 100), held[:120].hex()
    ext = (src / "expected" / LMQ_EXT).read_bytes()
    assert [int.from_bytes(ext[k:k + 2], "big") for k in (0, 20)] == [20, 20] and ext[40:] == bytes(len(ext) - 40)
    assert ext[2:20] == ext[22:40], "the same record's ext unit twice"
    _restart_as_the_broker(src, name, line, tmp_path, ext=True)
    _verify_loses(r, src, line, tmp_path, reput)



@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_parses_an_own_unit_with_an_ext_unit_for_a_queue_with_light_ones(
        line, tmp_path):
    """The -light-mixed-ext store with the message where the reput is set put to topic %LMQ%q1 itself (own queue
    offset 7, no multi-dispatch: -light-mixed-parsed-own-ext): the walk's own unit at 60 holds ext ordinal 0's
    address (the three light units and the last message's dropped one none); the parsed own unit's
    putMessagePositionInfoWrapper puts ext unit 1 (at ext byte 20, after the walk's: the ordinals count own units
    only) and appends the unit at 80, the cut's write position (queue offset 7: 140 not below it), holding its
    address. --as-restart writes the broker's files (consumequeue_ext/ too) byte for byte, verify predicts the units
    lost."""
    from broker_dledger_inside_light_scenarios import PARSED_OWN_QUEUE_OFFSET, embedded_light_mixed_parsed_own_message
    from broker_dledger_inside_scenarios import LIGHT_PUTS
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-parsed-own-ext"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    w, src = r["written"], Path(r["scenario"]["dir"])
    assert r["scenario"]["config"]["enableConsumeQueueExt"] == "true"
    reput, msg = embedded_light_mixed_parsed_own_message()
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    assert last_data_bytes(src, reput, len(msg) + 8) == msg + b"x" * 8, "the %LMQ%q1 message itself"
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert int(state["maxOffset"]) == 100 and int(state["extMaxOffset"]) == 40, state
    assert int(state["maxPhysicOffset"]) == reput + len(msg), state
    held = (src / "expected" / LMQ).read_bytes()
    units = [cq_unit(held, k) for k in range(0, 100, 20)]
    light = len(LIGHT_PUTS)
    assert all(t >= 0 for _o, _s, t in units[:light]) and units[light][2] == _ext_address(0), units
    assert units[4] == (reput, len(msg), _ext_address(1)) and 4 * 20 < PARSED_OWN_QUEUE_OFFSET * 20, units
    assert held[100:] == bytes(len(held) - 100), held[:120].hex()
    ext = (src / "expected" / LMQ_EXT).read_bytes()
    assert [int.from_bytes(ext[k:k + 2], "big") for k in (0, 20)] == [20, 20] and ext[40:] == bytes(len(ext) - 40)
    _restart_as_the_broker(src, name, line, tmp_path, ext=True)
    _verify_loses(r, src, line, tmp_path, reput)

"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside
an entry, parses a well-formed message that also goes to a light queue (multi-dispatch: ``%LMQ%q1``) the walk wrote
in its earlier data file only, or that also holds a record's own units (a message put to topic ``%LMQ%q1`` itself;
also with its cut units dispatched again after the parsed one, and records past the walk's end), or one for a queue
only records past the walk's end go to; the queue holding both kinds with ``enableConsumeQueueExt=true`` too (the
walk's dispatch puts an ext unit for each own unit only, a light unit none; the reput's after them for a parsed own
unit or a cut own unit it dispatches again).  Written by the published RocketMQ store through the JVM
harness in ``tests/broker/``: what the broker's restart wrote, ``rebuild --as-restart`` on the store as that restart
found it (byte for byte) and ``verify``'s units lost.  The scenarios: :mod:`broker_dledger_inside_light_scenarios`.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import numpy as np
import pytest
from broker_dledger_files import cq_unit
from broker_dledger_runs import (
    LINES,
    _as_restart,
    _inside_run,
    _restart_as_the_broker,
    _same_files,
    _same_tree,
    _verify_loses_as_the_broker,
)

from store_format.consumequeue_ext import ext_addresses
from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_parses_a_message_for_a_light_queue_written_in_an_earlier_file_only(
        line, tmp_path):
    """The -earlier store (both data files walked, the cut still happening) with multi-dispatch on: its messages 10
    and 11 of the first data file also go to %LMQ%q1 (light queue offsets 0, 1), so the walk wrote that light queue
    in its earlier data file only; ConsumeQueue.truncateDirtyLogicFiles (%LMQ%q1 is in the consume queue table the
    cut walks) cuts nothing of it: its max the second unit's end, its write position 40. Where the reput is set
    (processOffset - 1) the T7/0 message also goes to %LMQ%q1 (light queue offset 7): multiDispatchLmqQueue puts
    it by putMessagePositionInfo past that max, appended at 40 whatever its queue offset ("logic queue order maybe
    wrong"); the T6/0 message and the 'x' bytes follow. --as-restart writes the broker's files byte for byte, verify
    predicts the units lost."""
    from broker_dledger_inside_light_scenarios import EARLIER_LIGHT_PUTS, embedded_earlier_light_messages
    name = f"{line}-dledger-abort-emptied-batch-embedded-earlier-light"
    reput, first, second = embedded_earlier_light_messages()
    r, w, src = _inside_run(name, reput, first + second, b"x" * 8)   # the T7/0 (and %LMQ%q1) and T6/0 messages
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2 and int(data[1].name) <= reput, data
    assert not (src / "before" / "consumequeue" / "%LMQ%q1").exists()
    loaded = w["queuesAfterLoad"]["%LMQ%q1/0"]
    assert loaded["files"] == [f"{0:020d}"] and int(loaded["maxOffset"]) == 40, loaded
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 60, state
    lmq = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    units = [cq_unit(lmq, k) for k in range(0, 60, 20)]
    assert all(o + s <= int(data[1].name) for o, s, _t in units[:2]), units   # the earlier data file's units
    assert int(loaded["maxPhysicOffset"]) == units[1][0] + units[1][1], loaded
    assert units[2] == (reput, len(first), 0) and lmq[60:] == bytes(len(lmq) - 60), units
    t7 = (src / "expected" / "consumequeue" / "T7" / "0" / f"{0:020d}").read_bytes()
    assert cq_unit(t7, 20)[:2] == (reput, len(first)), "the parsed message's own unit"
    _restart_as_the_broker(src, name, line, tmp_path)
    # the parsed ones sent by no put; a unit each, a light one more for two
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput, reput + len(first)), extra=len(EARLIER_LIGHT_PUTS))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_drops_a_cut_light_unit_after_a_parsed_one_in_a_queue_held_earlier(
        line, tmp_path):
    """The -to-entry-earlier store (the -earlier walk; message 11 of the first data file and the last message, after
    B9's, for T6/0) with multi-dispatch on and those two messages also to %LMQ%q1 (light queue offsets 0, 1): its
    unit below processOffset lies in the earlier data file, the cut leaves its write position at its cut unit (20).
    The T6/0 message where the reput is set (processOffset - 1) also goes to %LMQ%q1 (light queue offset 7) and ends
    at B9's entry: its light unit is appended at 20, and the reput, going on at B9's entry, dispatches the last
    message again, whose light unit (queue offset 1: its position below the write position) putMessagePositionInfo
    drops, as its T6/0 unit. --as-restart writes the broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_light_scenarios import embedded_to_entry_earlier_light_message
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-earlier-light"
    reput, msg = embedded_to_entry_earlier_light_message()
    r, w, src = _inside_run(name, reput, msg)   # the T6/0 and %LMQ%q1 message from processOffset - 1
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2 and int(data[1].name) <= reput, data
    tail = int(w["maxPhyOffset"]) - 300   # the last message (300 bytes), the log's last
    loaded = w["queuesAfterLoad"]["%LMQ%q1/0"]
    assert loaded["files"] == [f"{0:020d}"] and int(loaded["maxOffset"]) == 20, loaded
    for queue in ("%LMQ%q1", "T6"):
        state = w["queuesAfterDispatch"][f"{queue}/0"]
        assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 40, (queue, state)
        held = (src / "expected" / "consumequeue" / queue / "0" / f"{0:020d}").read_bytes()
        first = cq_unit(held, 0)
        assert first[0] + first[1] <= int(data[1].name) and cq_unit(held, 20) == (reput, len(msg), 0), held[:60].hex()
        assert held[40:] == bytes(len(held) - 40) and tail not in (first[0], reput), (queue, held.hex())
    assert int(loaded["maxPhysicOffset"]) == first[0] + first[1], loaded
    _restart_as_the_broker(src, name, line, tmp_path)
    # a unit each, a light one more for two
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=2)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_parses_a_message_for_a_light_queue_with_own_units(line, tmp_path):
    """The -light store with one put of the last data file below processOffset sent to topic %LMQ%q1 itself (queue
    0): the store gives its own unit queue offset 0 (topicQueueTable) beside the light units' 0-3
    (lmqTopicQueueTable), and the walk's ConsumeQueue.putMessagePositionInfo, in commitlog order, appends it at 60
    (queue offset 0: no "build consume queue repeatedly" check) and drops the last message's light unit (queue offset
    3, below that write position): the walk's units of %LMQ%q1 are not where their queue offsets put them. The plain
    rebuild's dispatch (no crash) puts them as the walk did. truncateDirtyLogicFiles reads the file's units: the
    write position after the own unit (80), its end the max. The T5/0 message where the reput is set also goes to
    %LMQ%q1 (light queue offset 7): appended at 80. --as-restart writes the broker's files byte for byte, verify
    predicts the units lost."""
    from broker_dledger_inside_light_scenarios import MIXED_PUT
    from broker_dledger_inside_scenarios import LIGHT_PUTS, LIGHT_TAIL, embedded_light_message
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed"
    reput, msg = embedded_light_message()
    r, w, src = _inside_run(name, reput, msg, b"x" * 8)   # the T5/0 and %LMQ%q1 message
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 100, state
    lmq = Path("consumequeue") / "%LMQ%q1" / "0" / f"{0:020d}"
    held = (src / "expected" / lmq).read_bytes()
    units = [cq_unit(held, k) for k in range(0, 100, 20)]
    own = units[len(LIGHT_PUTS)]
    assert r["scenario"]["messages"][MIXED_PUT]["topic"] == "%LMQ%q1"
    assert units[-1] == (reput, len(msg), 0) and held[100:] == bytes(len(held) - 100), units
    assert int(w["maxPhyOffset"]) - LIGHT_TAIL not in [o for o, _s, _t in units], "the last message's light unit"
    assert [o for o, _s, _t in units[:-1]] == sorted(o for o, _s, _t in units[:-1]) and own[0] < reput, units
    # the plain rebuild of the log (no crash restart) dispatches the walk's units by the same rule: own unit at 60,
    # the last message's light unit dropped
    code, err = _rebuild_plain(src / "before", tmp_path / "plain", src, line)
    assert code == 0, err[-2000:]
    assert (tmp_path / "plain" / lmq).read_bytes() == held[:80] + bytes(len(held) - 80)
    _restart_as_the_broker(src, name, line, tmp_path)
    # a unit each, a light one more for three: the last message's light unit is dropped by any dispatch (the plain
    # one too), lost to no crash
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=len(LIGHT_PUTS))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_drops_a_cut_light_unit_again_in_a_queue_with_own_units(line, tmp_path):
    """The -light-mixed store (the walk's units of %LMQ%q1 at 0-40 light, 60 the own unit of queue offset 0, the last
    message's light unit, queue offset 3, dropped below that write position) with the T5/0 message where the reput
    is set (also to %LMQ%q1, light queue offset 7) ending at B9's entry: the cut leaves %LMQ%q1 at write position 80,
    the parsed light unit goes there, and the reput, going on at B9's entry, dispatches the last message again,
    whose light unit putMessagePositionInfo drops again (queue offset 3 below write position 100): a cut unit the
    walk's queue does not hold. --as-restart writes the broker's files byte for byte, verify predicts the units
    lost."""
    from broker_dledger_inside_light_scenarios import MIXED_PUT, embedded_light_to_entry_message
    from broker_dledger_inside_scenarios import LIGHT_PUTS, LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-to-entry"
    reput, msg = embedded_light_to_entry_message()
    r, w, src = _inside_run(name, reput, msg)   # the T5/0 and %LMQ%q1 message from processOffset - 1
    tail = int(w["maxPhyOffset"]) - LIGHT_TAIL   # the last message, T0/0 and %LMQ%q1, after B9's
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 100, state
    assert int(state["maxPhysicOffset"]) == reput + len(msg), state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    units = [cq_unit(held, k) for k in range(0, 100, 20)]
    assert r["scenario"]["messages"][MIXED_PUT]["topic"] == "%LMQ%q1"
    assert units[-1] == (reput, len(msg), 0) and held[100:] == bytes(len(held) - 100), units
    assert tail not in [o for o, _s, _t in units] and units[len(LIGHT_PUTS)][0] < reput, units
    t0 = b"".join(f.read_bytes() for f in sorted((src / "expected" / "consumequeue" / "T0" / "0").iterdir()))
    assert tail in [cq_unit(t0, k)[0] for k in range(0, len(t0), 20)], "the last message put back in T0/0"
    _restart_as_the_broker(src, name, line, tmp_path)
    # a unit each, a light one more for three: the last message's light unit, which any dispatch drops (the walk's,
    # the plain rebuild's and the reput's), is lost to no crash
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=len(LIGHT_PUTS))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_appends_a_cut_own_unit_after_a_parsed_light_one(line, tmp_path):
    """The -light store (light units of %LMQ%q1 at 0-40, below processOffset) with its last message, after B9's, sent
    to topic %LMQ%q1 itself: its own unit (queue offset 0, topicQueueTable) the walk's putMessagePositionInfo
    appended at 60, not at 0 where its queue offset says (the plain rebuild puts it there too). The cut leaves the
    write position at 60, where the parsed T5/0 message's light unit goes (light queue offset 7); the message ends at
    B9's entry, so the reput goes on there and dispatches the last message again: its own unit, queue offset 0 (no
    "build consume queue repeatedly" check), appended at 80. --as-restart (reading that unit where the walk's queue
    holds it) writes the broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_light_scenarios import embedded_light_to_entry_message
    from broker_dledger_inside_scenarios import LIGHT_PUTS, LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-own-to-entry"
    reput, msg = embedded_light_to_entry_message()
    r, w, src = _inside_run(name, reput, msg)   # the T5/0 and %LMQ%q1 message from processOffset - 1
    tail = int(w["maxPhyOffset"]) - LIGHT_TAIL   # the last message, to %LMQ%q1 itself, after B9's
    assert r["scenario"]["messages"][-1]["topic"] == "%LMQ%q1"
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 100, state
    assert int(state["maxPhysicOffset"]) == tail + LIGHT_TAIL, state
    lmq = Path("consumequeue") / "%LMQ%q1" / "0" / f"{0:020d}"
    held = (src / "expected" / lmq).read_bytes()
    units = [cq_unit(held, k) for k in range(0, 100, 20)]
    assert all(o < reput for o, _s, _t in units[:len(LIGHT_PUTS)]), units
    assert units[3] == (reput, len(msg), 0) and units[4][:2] == (tail, LIGHT_TAIL), units
    assert held[100:] == bytes(len(held) - 100), held[:120].hex()
    # the plain rebuild of the log (no crash restart) dispatches the walk's units by the same rule: the own unit at 60
    code, err = _rebuild_plain(src / "before", tmp_path / "plain", src, line)
    assert code == 0, err[-2000:]
    assert (tmp_path / "plain" / lmq).read_bytes() == held[:60] + held[80:100] + bytes(len(held) - 80)
    _restart_as_the_broker(src, name, line, tmp_path)
    # a unit each, a light one more for three
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=len(LIGHT_PUTS))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_dispatches_every_cut_unit_of_a_queue_with_own_units_again(
        line, tmp_path):
    """The -light-mixed-to-entry store with the message where the reput is set for T5/0 alone: no parsed unit goes
    to %LMQ%q1, and the reput, going on at B9's entry, before every cut unit of %LMQ%q1, dispatches them all again
    from the write position and max the cut left, the walk's own before its first cut unit: putMessagePositionInfo
    does as the walk did, the last message's light unit (queue offset 3, which the walk dropped) dropped again, the
    queue as the walk wrote it (80 bytes). --as-restart writes the broker's files byte for byte, verify predicts the
    units lost."""
    from broker_dledger_inside_light_scenarios import MIXED_PUT, embedded_light_to_entry_message
    from broker_dledger_inside_scenarios import LIGHT_PUTS, LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-to-entry-t5"
    reput, msg = embedded_light_to_entry_message(light=False)
    r, w, src = _inside_run(name, reput, msg)   # the T5/0 message from processOffset - 1 to B9's entry
    tail = int(w["maxPhyOffset"]) - LIGHT_TAIL   # the last message, T0/0 and %LMQ%q1, after B9's
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 80, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    units = [cq_unit(held, k) for k in range(0, 80, 20)]
    assert r["scenario"]["messages"][MIXED_PUT]["topic"] == "%LMQ%q1"
    assert int(state["maxPhysicOffset"]) == units[-1][0] + units[-1][1] < reput, (state, units)
    assert all(o < reput for o, _s, _t in units) and held[80:] == bytes(len(held) - 80), held[:100].hex()
    t0 = b"".join(f.read_bytes() for f in sorted((src / "expected" / "consumequeue" / "T0" / "0").iterdir()))
    assert tail in [cq_unit(t0, k)[0] for k in range(0, len(t0), 20)], "the last message put back in T0/0"
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    # B9's and the last message's T0/0 unit put back, its light unit dropped again
    assert "puts back 2 unit(s), 1 stay cut or dropped" in err, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    _same_files(src / "expected", tmp_path / name, "batchconsumequeue")
    # a unit each, a light one more for three: the last message's light unit, which any dispatch drops, is lost to no
    # crash
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=len(LIGHT_PUTS))


def _rebuild_plain(store: Path, out: Path, src: Path, line: str) -> tuple[int, str]:
    """``rebuild`` (no ``--as-restart``) on ``store`` with the scenario's broker.conf: exit code, stderr."""
    import contextlib
    import io

    from broker_dledger_runs import BROKER_LINE

    from pipelines.cli import main
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["rebuild", "--store", str(store), "--out", str(out), "--config", str(src / "broker.conf"),
                     "--broker-version", BROKER_LINE[line], "--split-size", "4k", "--no-tables"])
    return code, err.getvalue()



@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_parses_a_message_for_a_queue_only_records_past_the_walk_went_to(
        line, tmp_path):
    """The -to-entry-past store (its damaged last message ends the walk; the message where the reput is set,
    processOffset - 1, ends at B9's entry) with that message and the damaged one for TZ/0, which no other message goes
    to: the walk wrote no unit of it, the cut leaves it no file. The broker puts the parsed unit (queue offset 1000)
    in a new file where that offset falls (fillPreBlank units before it), then, going on at B9's entry, appends the
    damaged record's (queue offset 0: appended wherever the write position is) in the next file. The rebuild reads
    the parsed message after the walk's records and before the records from where the reput goes on, so its own
    dispatch puts them there too: --as-restart writes the broker's files byte for byte, verify predicts the units
    lost."""
    from broker_dledger_inside_light_scenarios import embedded_to_entry_past_only_message
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-only"
    reput, msg = embedded_to_entry_past_only_message()
    r, w, src = _inside_run(name, reput, msg, damaged=True)   # the TZ/0 message from processOffset - 1 to B9's entry
    past_only_queue_as_the_broker_wrote_it(r, src, reput, len(msg))
    _restart_as_the_broker(src, name, line, tmp_path)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))


def past_only_queue_as_the_broker_wrote_it(r: dict, src: Path, reput: int, size: int) -> None:
    """TZ/0 of a -to-entry-past-only store (queues kept or not) as the broker's restart left it: the parsed unit (at
    ``reput``, ``size`` bytes) where its queue offset falls, fillPreBlank units before it in its file, then zeros;
    the damaged record's unit (queue offset 0) appended at the next file's start, then zeros."""
    from broker_dledger_inside_light_scenarios import PAST_ONLY_TOPIC
    from broker_dledger_inside_scenarios import TO_ENTRY_QUEUE_OFFSET
    w, msg_size = r["written"], size
    damaged = int(w["damagedRecord"])
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    at = TO_ENTRY_QUEUE_OFFSET * 20
    first = at - at % size
    state = w["queuesAfterDispatch"][f"{PAST_ONLY_TOPIC}/0"]
    assert state["files"] == [f"{first:020d}", f"{first + size:020d}"] and int(state["maxOffset"]) == first + size + 20
    folder = src / "expected" / "consumequeue" / PAST_ONLY_TOPIC / "0"
    held = (folder / f"{first:020d}").read_bytes()
    assert [cq_unit(held, k) for k in range(0, at - first, 20)] == [(0, 2**31 - 1, 0)] * ((at - first) // 20)
    assert cq_unit(held, at - first) == (reput, msg_size, 0) and held[at - first + 20:] == bytes(size - at + first - 20)
    nxt = (folder / f"{first + size:020d}").read_bytes()
    assert cq_unit(nxt, 0)[0] == damaged and nxt[20:] == bytes(size - 20), "the damaged record's unit"


# the scenarios' ext files: 204 bytes (mappedFileSizeConsumeQueueExt), ten 20-byte units (no filter bitmap)
EXT_FILE_SIZE = 204
LMQ = Path("consumequeue") / "%LMQ%q1" / "0" / f"{0:020d}"
LMQ_EXT = Path("consumequeue_ext") / "%LMQ%q1" / "0" / f"{0:020d}"


def _ext_address(ordinal: int) -> int:
    return int(ext_addresses(np.array([ordinal]), EXT_FILE_SIZE)[0])


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
    reput, msg = embedded_light_message()
    r, w, src = _inside_run(name, reput, msg, b"x" * 8)   # the T5/0 and %LMQ%q1 message
    assert r["scenario"]["config"]["enableConsumeQueueExt"] == "true"
    assert r["scenario"]["messages"][MIXED_PUT]["topic"] == "%LMQ%q1"
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
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=len(LIGHT_PUTS))   # a light unit more each


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
    reput, msg = embedded_light_to_entry_message()
    r, w, src = _inside_run(name, reput, msg)   # the T5/0 and %LMQ%q1 message from processOffset - 1
    assert r["scenario"]["config"]["enableConsumeQueueExt"] == "true"
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
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=len(LIGHT_PUTS))   # a light unit more each



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
    reput, msg = embedded_light_mixed_parsed_own_message()
    r, w, src = _inside_run(name, reput, msg, b"x" * 8)   # the %LMQ%q1 message itself
    assert r["scenario"]["config"]["enableConsumeQueueExt"] == "true"
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
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=len(LIGHT_PUTS))   # a light unit more each


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_dispatches_records_past_the_walk_to_a_queue_with_own_units(
        line, tmp_path):
    """The -light-mixed-to-entry store with two more T0/0 messages also to %LMQ%q1 (light queue offsets 4 and 5), the
    first damaged: the walk ends there, and the reput, after the parsed light unit (at 80) and the last message
    dispatched again (its light unit dropped, queue offset 3 below write position 100), dispatches the two records
    past the walk's end into %LMQ%q1 by ConsumeQueue.putMessagePositionInfo with their real light queue offsets
    (lmqTopicQueueTable): 4 dropped below write position 100, 5 appended at 100. The rebuild's own dispatch reads
    them after the parsed message and applies the same rule. --as-restart writes the broker's files byte for byte,
    verify predicts the units lost."""
    from broker_dledger_inside_light_scenarios import embedded_light_to_entry_message
    from broker_dledger_inside_scenarios import LIGHT_PUTS, LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-to-entry-past"
    reput, msg = embedded_light_to_entry_message()
    r, w, src = _inside_run(name, reput, msg, damaged=True)   # the T5/0 and %LMQ%q1 message from processOffset - 1
    damaged = int(w["damagedRecord"])
    tail = damaged - ENTRY_HEADER_SIZE - LIGHT_TAIL   # the last walked message, T0/0 and %LMQ%q1, after B9's
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 120, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    units = [cq_unit(held, k) for k in range(0, 120, 20)]
    assert units[4] == (reput, len(msg), 0) and held[120:] == bytes(len(held) - 120), units
    # light queue offset 5, in the next entry, appended at 100; 4 (the damaged record) dropped below it
    assert units[5][:2] == (damaged + LIGHT_TAIL + ENTRY_HEADER_SIZE, LIGHT_TAIL), units
    assert {tail, damaged}.isdisjoint(o for o, _s, _t in units), units
    _restart_as_the_broker(src, name, line, tmp_path)
    # a unit each, a light one more for the three light puts and the two records past the walk's end (the last walked
    # message's light unit, which any dispatch drops, lost to no crash; light queue offset 4 the reput drops)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,), extra=len(LIGHT_PUTS) + 2)

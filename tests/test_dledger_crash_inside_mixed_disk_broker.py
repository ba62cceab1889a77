"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside
an entry, replays a queue holding a record's own units and light ones (``%LMQ%q1``, queue 0) that was on disk before
the walk (``keepQueues``), a file of it left by the cut: the cut units it dispatches again and the records past the
walk's end go by ``putMessagePositionInfo`` from the write position and max ``truncateDirtyLogicFiles`` left once the
walk's units were dispatched onto the files ``ConsumeQueue.recover`` loaded.  Written by the published RocketMQ store
through the JVM harness in ``tests/broker/``: what the broker's restart wrote, and ``verify`` on the store as that
restart found it (on-disk queues are verify's only: ``--as-restart`` plans with no queue on disk): where it puts the
units and its units lost.  The scenarios: :mod:`broker_dledger_inside_mixed_disk_scenarios`.
"""
from __future__ import annotations

import broker_harness as bh
import numpy as np
import pytest
from broker_dledger_files import cq_unit, ext_appended, ext_appended_as_the_broker
from broker_dledger_runs import LINES, _inside_run, _loses_as_the_broker, _verify_with_plan

from store_format.consumequeue_ext import ext_addresses
from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


@pytest.mark.parametrize("past", [False, True], ids=["", "past"])
@pytest.mark.parametrize("suffix", ["", "-planted"])
@pytest.mark.parametrize("store", ["skip-dropped", "skip-t0"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_puts_back_cut_units_of_a_kept_queue_with_own_units(
        line, store, suffix, past, tmp_path, monkeypatch):
    """The -light-mixed-skip-dropped store (``past``: -light-mixed-skip-dropped-past, two more T0/0 messages also to
    %LMQ%q1, light queue offsets 4 and 5, the first damaged: the walk ends there; ``skip-t0``: -light-mixed-skip-t0,
    the message parsed where the reput is set for T0/0 alone, none going to %LMQ%q1) with the queues kept: %LMQ%q1/0
    on disk before the walk as the crashed broker's dispatch wrote it (light units 0-2 at 0-40, the %LMQ%q1 record's
    own unit, own queue offset 0, at 60; the last walked message's light unit, queue offset 3, dropped; ``past``:
    light units 4 and 5 at 80 and 100). The walk's putMessagePositionInfo drops every unit onto those files, the cut
    leaves write position 60 (the own unit past processOffset), max light unit 2's end: the parsed unit (own queue
    offset 1) dropped, the reput, going on at the last walked message's entry (the own unit inside the parsed
    message), appends its light unit at 60 (``past``: then light units 4 and 5 at 80 and 100). ``-planted``: the file
    planted with light unit 2 alone at 0 (write position 20, max its end): the walk drops light units 0-2, appends the
    own unit at 20 and the last walked message's light unit at 40; the cut takes both (write position 20): the parsed
    unit goes to 20, the light unit dispatched again after it (``skip-t0``: to 20; ``past``: light units 4 and 5
    after it). verify on the store as that restart found it puts them there and predicts the units lost."""
    from broker_dledger_inside_mixed_disk_scenarios import PLANTED_LIGHT_2
    from broker_dledger_inside_mixed_replay_scenarios import (
        embedded_light_mixed_skip_dropped_message,
        embedded_light_mixed_skip_t0_message,
    )
    from broker_dledger_inside_scenarios import LIGHT_PUTS, LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-{store}{'-past' if past else ''}-kept{suffix}"
    t0 = store == "skip-t0"   # a T0/0 message (as long a record) between the %LMQ%q1 one and the last
    reput, head, size = (embedded_light_mixed_skip_t0_message if t0 else embedded_light_mixed_skip_dropped_message)()
    r, w, src = _inside_run(name, reput, head, damaged=past)
    msgs = r["scenario"]["messages"]
    assert r["scenario"]["keepQueues"] and msgs[-2 - t0 - 2 * past]["topic"] == "%LMQ%q1"
    damaged = int(w["damagedRecord"]) if past else 0
    tail = (damaged - ENTRY_HEADER_SIZE if past else int(w["maxPhyOffset"])) - LIGHT_TAIL   # the last walked message
    own = tail - (1 + t0) * (ENTRY_HEADER_SIZE + LIGHT_TAIL)   # the record put to %LMQ%q1 itself
    # the parsed message ends where that record does (skip-t0: where the T0/0 one after it does)
    assert reput + size == tail - ENTRY_HEADER_SIZE, (reput, size, own)
    later = [(damaged, LIGHT_TAIL), (damaged + LIGHT_TAIL + ENTRY_HEADER_SIZE, LIGHT_TAIL)] if past else []
    (held_file,) = sorted((src / "before" / "consumequeue" / "%LMQ%q1" / "0").iterdir())
    before = held_file.read_bytes()
    if suffix:   # light unit 2's record, planted alone
        data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
        log, base = data[-1].read_bytes(), int(data[-1].name)
        offset, n = PLANTED_LIGHT_2
        rec = log[offset - base:offset - base + n]
        assert int.from_bytes(rec[:4], "big") == n and int.from_bytes(rec[28:36], "big") == offset, rec[:40].hex()
        assert msgs[LIGHT_PUTS[2]]["properties"]["INNER_MULTI_QUEUE_OFFSET"] == "2"
        assert b"INNER_MULTI_QUEUE_OFFSET\x012" in rec, rec.hex()
        assert cq_unit(before, 0)[:2] == PLANTED_LIGHT_2 and before[20:] == bytes(len(before) - 20), before[:60].hex()
        at = 20
    else:   # the crashed broker's dispatch: light units 0-2, the own unit at 60 (and light units 4 and 5)
        units_before = [cq_unit(before, k)[:2] for k in range(0, 80 + 20 * len(later), 20)]
        assert all(o < reput for o, _s in units_before[:3]) and units_before[3:] == [(own, LIGHT_TAIL), *later], \
            units_before
        at = 60
    parsed = [(reput, size)] if suffix and not t0 else []   # dropped below 60 with the file as the broker wrote it
    assert w["queuesAfterLoad"]["%LMQ%q1/0"]["files"] == [held_file.name], w["queuesAfterLoad"].get("%LMQ%q1/0")
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    end = at + 20 * (len(parsed) + 1 + len(later))
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == end, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / held_file.name).read_bytes()
    assert held[:at] == before[:at], held[:at].hex()
    assert [cq_unit(held, k)[:2] for k in range(at, end, 20)] == [*parsed, (tail, LIGHT_TAIL), *later], held.hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert [(u.position, u.offset, u.size) for u in crash.cut.inside_placed.units if u.topic == "%LMQ%q1"] == \
        [(at, o, s) for o, s in parsed], crash.cut.inside_placed
    # a unit each, a light one more for the three light puts and the last walked message (and the two records past
    # the walk's end); planted: light units 0 and 1, missing from the file, lost in any rebuild too
    _loses_as_the_broker(p, r, src, (reput,), extra=len(LIGHT_PUTS) + 1 + len(later))
    (w_lmq,) = [q for q in crash.cut.inside_placed.whole if q.topic == "%LMQ%q1"]
    assert w_lmq.put_back == (tail, *(o for o, _s in later)), w_lmq
    # where the replay writes each (the broker's file above)
    assert [(pos, o) for pos, o, _s, _t in w_lmq.units] == \
        [(at + 20 * k, o) for k, (o, _s) in enumerate([*parsed, (tail, LIGHT_TAIL), *later])], w_lmq
    # the own unit, cut and inside the parsed message, stays cut
    assert crash.cut.lost[("%LMQ%q1", 0)].tolist() == [own], crash.cut.lost


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_drops_a_cut_unit_again_in_a_kept_queue_with_both_kinds_earlier(
        line, tmp_path, monkeypatch):
    """The -to-entry-earlier-light-both store with the queues kept (-to-entry-earlier-light-both-kept): %LMQ%q1/0 on
    disk before the walk as the crashed broker's dispatch wrote it (the own unit, own queue offset 0, at 0, message
    11's light unit, queue offset 0, at 20; the last message's light unit, queue offset 1, dropped below 40). The
    walk, from the first data file, drops every unit onto those files; the cut leaves write position 40; the T6/0
    message where the reput is set, also to %LMQ%q1 (light queue offset 7), goes to 40, and the reput, going on at
    B9's entry, dispatches the last message again: its light unit dropped again (20 below 60). verify on the store as
    that restart found it puts them there and predicts the units lost."""
    from broker_dledger_inside_light_scenarios import embedded_to_entry_earlier_light_message
    from broker_dledger_inside_mixed_earlier_scenarios import BOTH_OWN_PUT
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-earlier-light-both-kept"
    reput, msg = embedded_to_entry_earlier_light_message()
    r, w, src = _inside_run(name, reput, msg)
    assert r["scenario"]["keepQueues"] and r["scenario"]["messages"][BOTH_OWN_PUT]["topic"] == "%LMQ%q1"
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2 and int(data[1].name) <= reput, data
    tail = int(w["maxPhyOffset"]) - 300   # the last message (300 bytes), the log's last
    (held_file,) = sorted((src / "before" / "consumequeue" / "%LMQ%q1" / "0").iterdir())
    before = held_file.read_bytes()
    units_before = [cq_unit(before, k) for k in (0, 20)]
    assert all(o + s <= int(data[1].name) for o, s, _t in units_before) and before[40:] == bytes(len(before) - 40)
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 60, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / held_file.name).read_bytes()
    assert held[:40] == before[:40] and cq_unit(held, 40) == (reput, len(msg), 0), held[:80].hex()
    assert held[60:] == bytes(len(held) - 60), held.hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert [(u.position, u.offset) for u in crash.cut.inside_placed.units if u.topic == "%LMQ%q1"] == [(40, reput)]
    (w_lmq,) = [q for q in crash.cut.inside_placed.whole if q.topic == "%LMQ%q1"]
    assert w_lmq.put_back == () and w_lmq.lost == (tail,), w_lmq
    # a unit each, a light one more for two, less the last message's light unit, which any rebuild drops
    _loses_as_the_broker(p, r, src, (reput,), extra=1)


@pytest.mark.parametrize("suffix", ["", "-planted"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_that_cuts_a_kept_queue_with_both_kinds_earlier_no_parsed_unit_there(
        line, suffix, tmp_path, monkeypatch):
    """The -earlier-light-mixed-t7-both store with the queues kept (-earlier-light-mixed-t7-both-kept): %LMQ%q1/0 on
    disk before the walk (the own unit at 0, message 10's light unit at 20; message 11's light unit and the last
    message's own unit, own queue offset 1, dropped), no parsed unit going to it: the walk drops every unit onto
    those files, the cut leaves write position 40, the last message's own unit cut and not dispatched again.
    ``-planted``: the file planted with message 11's light unit alone at 0: the walk drops the own unit and light
    units 0 and 1, appends the last message's own unit at 20; the cut takes it (write position 20). verify on the
    store as that restart found it keeps the queue so and predicts the units lost (once refused: the queue's
    positions in its files not known)."""
    from broker_dledger_inside_light_scenarios import EARLIER_LIGHT_PUTS
    from broker_dledger_inside_mixed_earlier_scenarios import BOTH_OWN_PUT, PLANTED_BOTH_UNIT
    from broker_dledger_inside_scenarios import embedded_earlier_messages
    name = f"{line}-dledger-abort-emptied-batch-embedded-earlier-light-mixed-t7-both-kept{suffix}"
    reput, run = embedded_earlier_messages()
    r, w, src = _inside_run(name, reput, run, b"x" * 8)
    msgs = r["scenario"]["messages"]
    assert r["scenario"]["keepQueues"] and msgs[BOTH_OWN_PUT]["topic"] == "%LMQ%q1" == msgs[-1]["topic"]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    (held_file,) = sorted((src / "before" / "consumequeue" / "%LMQ%q1" / "0").iterdir())
    before = held_file.read_bytes()
    if suffix:
        offset, size = PLANTED_BOTH_UNIT   # message 11's record: light queue offset 1
        rec = data[0].read_bytes()[offset:offset + size]
        assert int.from_bytes(rec[:4], "big") == size and int.from_bytes(rec[28:36], "big") == offset, rec[:40].hex()
        assert msgs[EARLIER_LIGHT_PUTS[1]]["properties"]["INNER_MULTI_QUEUE_OFFSET"] == "1"
        assert cq_unit(before, 0)[:2] == PLANTED_BOTH_UNIT and before[20:] == bytes(len(before) - 20)
        at = 20
    else:
        units_before = [cq_unit(before, k) for k in (0, 20)]
        assert all(o + s <= int(data[1].name) for o, s, _t in units_before) and before[40:] == bytes(len(before) - 40)
        at = 40
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == at, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / held_file.name).read_bytes()
    assert held[:at] == before[:at], held[:at + 20].hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert not [u for u in crash.cut.inside_placed.units if u.topic == "%LMQ%q1"], crash.cut.inside_placed
    (w_lmq,) = [q for q in crash.cut.inside_placed.whole if q.topic == "%LMQ%q1"]
    assert w_lmq.put_back == () and w_lmq.units == () and w_lmq.walk_end == at, w_lmq   # the cut's write position
    (lost,) = crash.cut.lost[("%LMQ%q1", 0)].tolist()   # the last message's own unit
    assert lost > int(data[1].name) and lost > reput, (lost, reput)
    # the parsed ones sent by no put; a unit each, a light one more for two, less two the rule drops in any rebuild
    # (message 11's light unit, the last message's own unit); planted: light unit 1, which any rebuild drops, held
    first = int.from_bytes(run[:4], "big")   # the T7/0 message's size, the T6/0 one after it
    _loses_as_the_broker(p, r, src, (reput, reput + first), extra=len(EARLIER_LIGHT_PUTS) - 2 + bool(suffix))


@pytest.mark.parametrize("store", ["light-own-to-entry", "light-mixed-parsed-own", "light-mixed-skip-t0-own"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_puts_ext_units_after_the_walks_in_a_kept_queue_with_own_units(
        line, store, tmp_path, monkeypatch):
    """Three stores with enableConsumeQueueExt (ext files of 10 units) and the queues kept: %LMQ%q1/0 and its ext file
    on disk before the walk as the crashed broker's dispatch wrote them (the light units at 0-40, an own unit holding
    ext unit 0's address). ConsumeQueue.recover leaves the ext file's end after ext unit 0; the walk's
    putMessagePositionInfoWrapper puts ext unit 1 for the own unit (ConsumeQueueExt.put), which putMessagePositionInfo
    then drops onto those files; the cut, a file left, returns before truncateByMaxAddress.
    -light-own-to-entry-ext-kept:
    the parsed light unit at 60, the last message's own unit (cut) dispatched again with ext unit 2 at 80;
    -light-mixed-parsed-own-ext-kept: the parsed own unit with ext unit 2 at 80; -light-mixed-skip-t0-own-ext-kept: no
    parsed unit there, the own unit (cut) dispatched again with ext unit 2 at 60 (ext unit 1 each without the queues
    kept). verify on the store as that restart found it puts them there and predicts the units lost."""
    from broker_dledger_inside_light_scenarios import (
        embedded_light_mixed_parsed_own_message,
        embedded_light_to_entry_message,
    )
    from broker_dledger_inside_mixed_replay_scenarios import embedded_light_mixed_skip_t0_message
    from broker_dledger_inside_scenarios import LIGHT_PUTS, LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-{store}-ext-kept"
    if store == "light-mixed-skip-t0-own":
        reput, msg, _size = embedded_light_mixed_skip_t0_message()
        r, w, src = _inside_run(name, reput, msg)
    else:
        reput, msg = (embedded_light_to_entry_message if store == "light-own-to-entry"
                      else embedded_light_mixed_parsed_own_message)()
        r, w, src = _inside_run(name, reput, msg, b"" if store == "light-own-to-entry" else b"x" * 8)
    assert r["scenario"]["keepQueues"] and r["scenario"]["config"]["enableConsumeQueueExt"] == "true"
    ext_before = (src / "before" / "consumequeue_ext" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    assert int.from_bytes(ext_before[:2], "big") == 20 and ext_before[20:] == bytes(len(ext_before) - 20)
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    own = int(w["maxPhyOffset"]) - LIGHT_TAIL   # the log's last message: to %LMQ%q1 itself (but -parsed-own's)
    if store == "light-own-to-entry":
        expected = [(60, reput, 0), (80, own, _ext_address(2))]
    elif store == "light-mixed-parsed-own":
        expected = [(80, reput, _ext_address(2))]
    else:
        expected = [(60, own, _ext_address(2))]
    end = expected[-1][0] + 20
    assert int(state["maxOffset"]) == end and int(state["extMaxOffset"]) == 60, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    assert [(k, *cq_unit(held, k)[::2]) for k, _o, _t in expected] == expected, held[:120].hex()
    ext = (src / "expected" / "consumequeue_ext" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    assert [int.from_bytes(ext[k:k + 2], "big") for k in (0, 20, 40)] == [20] * 3 and ext[60:] == bytes(len(ext) - 60)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    (w_lmq,) = [q for q in crash.cut.inside_placed.whole if q.topic == "%LMQ%q1"]
    assert [(pos, o, t) for pos, o, _s, t in w_lmq.units] == expected, w_lmq
    # verify's ext units appended are the broker's, every ext queue's: %LMQ%q1/0's 2 (ext unit 1, the walk's for the
    # own unit, and 2, the reput's; no ext unit for a light unit: ConsumeQueue.multiDispatchLmqQueue calls
    # putMessagePositionInfo alone) from the ext end ConsumeQueue.recover left (20: ext_before's one unit)
    assert ext_appended_as_the_broker(p, w, src)["%LMQ%q1/0"] == ext_appended(w, src, "%LMQ%q1/0", 20) == 2
    # a unit each, a light one more for the three light puts (and the light record inside the parsed message); none
    # lost in -light-own-to-entry-ext-kept (the kept queues hold every unit the crashed broker's dispatch wrote)
    _loses_as_the_broker(p, r, src, (reput,), extra=len(LIGHT_PUTS) + (store == "light-mixed-skip-t0-own"),
                         some=store != "light-own-to-entry")


def _ext_address(ordinal: int) -> int:
    """The tags code of a unit holding ext unit ``ordinal``'s address (ext files of 204 bytes)."""
    return int(ext_addresses(np.array([ordinal]), 204)[0])

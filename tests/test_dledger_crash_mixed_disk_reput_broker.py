"""DLedger crash restarts (5.5.1; 5.3.3 with ``DLEDGER_LINES=5.3.3``, its ``truncateDirtyLogicFiles`` run as the
loaded queues reach ``processOffset``; an abort file) whose start's reput, NOT set inside an entry, puts back the cut
units of a queue holding a record's own units and light ones (``%LMQ%q1``, queue 0) that was on disk before the walk
(``keepQueues``): ``ConsumeQueue.recover`` loaded its files, the walk's ``putMessagePositionInfo`` dispatched its units
onto them, ``truncateDirtyLogicFiles`` cut them at ``processOffset``, and the reput (from the cut queues' largest max
with ``recheckReputOffsetFromCq=true``, else from the committed position) dispatches the queue's records from its start
by the same rule onto the state the cut left (``store_format.dledger_inside_mixed.mixed_disk_put_back``).  Written by
the published RocketMQ store through the JVM harness in ``tests/broker/``: what the broker's restart wrote first (the
reput's start, which units it put where), then ``verify`` on the store as that restart found it (on-disk queues are
verify's only): where it puts the units and its units lost, queue by queue.  The scenarios:
:mod:`broker_dledger_mixed_disk_reput_scenarios`.
"""
from __future__ import annotations

import broker_harness as bh
import pytest
from broker_dledger_files import (
    cq_unit,
    ext_appended_as_the_broker,
    ext_orphaned_as_the_broker,
    ext_recovered_end,
    last_data_bytes,
)
from broker_dledger_runs import LINES, _entries_from, _loses_as_the_broker, _lost_per_queue, _verify_with_plan, _written

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()

LMQ = "%LMQ%q1/0"


def _lmq_records(src, w: dict) -> list[tuple[int, int, str]]:
    """The records of the last data file that go to %LMQ%q1 (commitlog offset, size, ``own``: put to topic %LMQ%q1
    itself, ``light``: multi-dispatched there), in commitlog order."""
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    out = []
    for off in _entries_from(src, int(data[-1].name) + 48, int(w["maxPhyOffset"])):
        size = int.from_bytes(last_data_bytes(src, off, 4), "big")
        rec = last_data_bytes(src, off, size)
        if b"INNER_MULTI_DISPATCH\x01%LMQ%q1" in rec:
            out.append((off, size, "light"))
        elif b"\x07%LMQ%q1" in rec:
            out.append((off, size, "own"))
    return out


@pytest.mark.parametrize("suffix", ["", "-committed", "-ext", "-committed-ext"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith(("5.5", "5.3"))])
def test_verify_predicts_a_crash_restart_whose_reput_not_set_inside_an_entry_puts_back_a_kept_mixed_queue(
        line, suffix, tmp_path, monkeypatch):
    """The -batch-kept layouts store (T0, %LMQ%q1 and BT0 on queue 0, the queues kept) with three T0/0 puts past
    processOffset sent to %LMQ%q1 itself (own queue offsets 0-2): the crashed broker's dispatch put the first own unit
    (queue offset 0) among the light ones and dropped the other two and the light unit after own unit 0 (their queue
    offsets below the write position).
    The walk drops every unit onto the loaded files; the cut leaves the write position at the first unit at or past
    processOffset. ``-mixed-disk-reput`` (recheckReputOffsetFromCq=true): the reput starts at the cut queues' largest
    max (T0/0's), below every cut unit of %LMQ%q1, and puts the cut units back where they were (those three dropped
    again);
    ``-committed`` (no recheck, the committed position 12 entries behind the log's end): it starts past the first cut
    units and appends the last light ones from the cut's write position (own unit 2 dropped). ``-ext``: the same with
    enableConsumeQueueExt (ext files of 10 units): own unit 0 put back holds the address of the ext unit the reput put
    for it (putMessagePositionInfoWrapper), after the walk's; the ext units appended are one per own record the walk
    and the reput hand over, their units dropped or not (ConsumeQueue.recover cut the ext files first). verify on the
    store as that restart found it puts them there (ext addresses too) and predicts the units lost queue by queue,
    the ext units appended and orphaned, every queue's (T0/0's units put back for records past verify's rebuild, the
    committed position, point at the reput's ext units: counted from the crash plan's ExtAgain.positions)."""
    from broker_dledger_mixed_disk_reput_scenarios import COMMITTED_BACK, OWN_PUTS
    name = f"{line}-dledger-abort-mixed-disk-reput{suffix}"
    r, w, src = _written(name)
    msgs = r["scenario"]["messages"]
    assert r["scenario"]["keepQueues"] and all(msgs[i]["topic"] == "%LMQ%q1" for i in OWN_PUTS)
    committed, ext = "-committed" in suffix, suffix.endswith("-ext")
    assert (r["scenario"]["config"].get("recheckReputOffsetFromCq") == "true") == (not committed)
    assert (r["scenario"]["config"].get("enableConsumeQueueExt") == "true") == ext
    po = int(w["truncateDirtyLogicFilesAt"])
    recs = _lmq_records(src, w)
    cut = [(o, s, k) for o, s, k in recs if o >= po]
    assert [k for _o, _s, k in recs if k == "own"] == ["own"] * len(OWN_PUTS) and \
        [k for _o, _s, k in cut].count("own") == len(OWN_PUTS), (po, recs)
    # what the broker wrote: the cut's write position and max for %LMQ%q1 (its first cut unit's position, the end of
    # the last unit below processOffset), the reput's start
    loaded = w["queuesAfterLoad"]
    write, top = int(loaded[LMQ]["maxOffset"]), int(loaded[LMQ]["maxPhysicOffset"])
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    before = {int(f.name): f.read_bytes() for f in (src / "before" / "consumequeue" / "%LMQ%q1" / "0").iterdir()}
    crashed = [cq_unit(before[p - p % size], p % size)[:2] for p in range(0, max(before) + size, 20)]
    crashed = [u for u in crashed if u[1]]   # the crashed broker's units, in its files' order
    k = next(i for i, (o, _s) in enumerate(crashed) if o >= po)
    assert write == 20 * k and top == sum(crashed[k - 1]), (write, top, crashed[k - 1:k + 1])
    # the crashed broker's dispatch (the rule from the queue's start, as any rebuild's) put own unit 0 among the light
    # ones and dropped own units 1 and 2 and the light units whose queue offsets then fell below the write position
    own0 = next(o for o, _s, kind in cut if kind == "own")
    dropped = sorted(set(cut) - {(o, s, kind) for o, s, kind in cut if (o, s) in crashed})
    assert (own0, 171) in crashed and [k for _o, _s, k in dropped].count("own") == len(OWN_PUTS) - 1, dropped
    if committed:   # the committed position: the start of the entry that many entries behind the log's end
        data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
        reput = _entries_from(src, int(data[-1].name) + 48, int(w["maxPhyOffset"]))[-COMMITTED_BACK] - 48
        assert cut[0][0] < reput and own0 < reput, (cut[:3], reput)
    else:   # doRecheckReputOffsetFromCq: the largest max over the cut queues (T0's last unit below processOffset
        # ends past it), below every cut unit of %LMQ%q1
        reput = max(int(q["maxPhysicOffset"]) for q in loaded.values())
        assert reput <= cut[0][0] and reput != po, (reput, po, cut[0])
    # the broker's files after the reput: from the cut's write position, units of the cut records from the reput's
    # start appended in commitlog order (recheck: each back where the crashed broker's dispatch had it; committed:
    # the first one dispatched, a light one, at the write position), the others dropped
    state = w["queuesAfterDispatch"][LMQ]
    expected = {int(f.name): f.read_bytes() for f in (src / "expected" / "consumequeue" / "%LMQ%q1" / "0").iterdir()}
    held = [cq_unit(expected[p - p % size], p % size) for p in range(write, int(state["maxOffset"]), 20)]
    put = [u[:2] for u in held]
    again = [(o, s) for o, s, _k in cut if o >= reput]
    assert put and all(u in again for u in put) and put == sorted(put), (put, again)
    if committed:
        assert put[0] == next((o, s) for o, s, k in cut if o >= reput and k == "light") and \
            len(put) < len(again), (put, again)
    else:
        assert put == crashed[k:], (put, crashed[k:])
    assert all(expected[f][:write - f] == before[f][:write - f] for f in before if f < write), "below the write"
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.cut.reput == reput and crash.cut.inside_from < 0, (crash.cut.reput, reput)
    (w_lmq,) = [q for q in crash.cut.inside_placed.whole if (q.topic, q.queue_id) == ("%LMQ%q1", 0)]
    # where verify's replay writes each unit, tags code too (the broker's file above)
    assert [(pos, o, s, t) for pos, o, s, t in w_lmq.units] == \
        [(write + 20 * i, *u) for i, u in enumerate(held)] and not w_lmq.copies, w_lmq
    assert w_lmq.walk_end == write, w_lmq
    # the cut units it does not put back: those before the reput's start and own units 1 and 2
    assert sorted(crash.cut.lost[("%LMQ%q1", 0)].tolist()) == \
        sorted(o for o, s, _k in cut if (o, s) not in put), crash.cut.lost
    # units lost, queue by queue, as the broker's queues lack them; %LMQ%q1's less the units the rule drops in any
    # dispatch from the queue's start (the reference's too: the crashed broker's)
    lost = _lost_per_queue(r, src)
    lost[LMQ] = lost.get(LMQ, 0) - len(dropped)
    predicted = {q["queue"]: q["units_lost"] for q in p["queues"]}
    assert {q: n for q, n in predicted.items() if n} == {q: n for q, n in lost.items() if n}, (predicted, lost)
    assert bool(lost.get(LMQ)) == committed, lost
    # with ext files own unit 0 (when put back) holds an ext address (ConsumeQueueExt.decorate), a light unit its tags
    # code
    assert all((t < 0) == (ext and o == own0) for o, _s, t in held), held
    if ext:
        # ConsumeQueue.recover's truncateByMaxAddress cut the crashed broker's three ext units (one per own record)
        # to the end of own unit 0's; the walk put one per own record after it (truncateDirtyLogicFiles returns
        # before its own truncateByMaxAddress once it keeps a unit), the reput one per own record from its start,
        # dropped or not: the broker's ext units appended, verify's the same
        assert ext_recovered_end(src, LMQ) == 20 and int(loaded[LMQ]["extMaxOffset"]) == 20 * (1 + len(OWN_PUTS))
        figures = ext_appended_as_the_broker(p, w, src)
        assert figures[LMQ] == len(OWN_PUTS) + sum(o >= reput for o, _s, k in recs if k == "own"), figures
        # T0/0: the 5.5.1 walk from the last data file's start (100 records), the 5.3.3 one from the first (264)
        t0 = {"5.5": (115, 107), "5.3": (279, 271)}[line[:3]]
        assert figures[LMQ] == (4 if committed else 6) and figures["T0/0"] == t0[committed], figures
        # the ext units no unit below the write position points at, verify's as the broker's: T0/0's the ext units
        # of the units the cut took (ConsumeQueue.recover's truncateByMaxAddress kept them) and the walk's (every unit
        # dropped, the queue held them), the reput's pointed at by the units it puts back, records past verify's
        # rebuild (the committed position) too
        orphaned = ext_orphaned_as_the_broker(p, w, src)
        assert orphaned[LMQ] == ((5, 5) if committed else (6, 6)) and orphaned["T0/0"] == (t0[0], t0[0]), orphaned
        # the plan's T0/0 units put back (ExtAgain.positions) are the broker's (from the cut's write position to its
        # final one), more than verify's rebuilt units dispatched again (the rebuild lacks the last records)
        back = next(a for a in crash.ext_again if (a.topic, a.queue_id) == ("T0", 0))
        again_t0 = next(q["units_dispatched_again"] for q in p["queues"] if q["queue"] == "T0/0")
        assert len(back.positions) == (int(w["queuesAfterDispatch"]["T0/0"]["maxOffset"])
                                       - int(loaded["T0/0"]["maxOffset"])) // 20 > again_t0, (back, again_t0)



@pytest.mark.parametrize("suffix", ["", "-planted"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_not_set_inside_an_entry_puts_back_a_kept_queue_with_both_kinds(
        line, suffix, tmp_path, monkeypatch):
    """The -earlier-light-mixed-t7-both-kept store with its B9 message sent to T0/0 (-kept-t0): %LMQ%q1/0 on disk
    before the walk (the own unit, own queue offset 0, at 0 and message 10's light unit at 20, both in the walk's
    earlier data file; message 11's light unit and the last message's own unit, own queue offset 1, dropped), no
    queue emptied by the cut: the reput starts at the cut queues' largest max (T0/0's), below the host message, not
    inside an entry, and dispatches the last message's own unit again: dropped again (20 below the write position 40).
    ``-planted``: the file planted with message 11's light unit alone at 0: the walk appends the own unit at 20, the
    cut takes it (write position 20), the reput puts it back at 20. verify on the store as that restart found it puts
    it there (or drops it) and predicts the units lost."""
    from broker_dledger_inside_mixed_earlier_scenarios import BOTH_OWN_PUT, PLANTED_BOTH_UNIT
    from broker_dledger_inside_scenarios import EMBED_HOST_AT
    name = f"{line}-dledger-abort-emptied-batch-embedded-earlier-light-mixed-t7-both-kept-t0{suffix}"
    r, w, src = _written(name)
    msgs = [m for m in r["scenario"]["messages"] if "topic" in m]
    assert r["scenario"]["keepQueues"] and msgs[-1]["topic"] == "%LMQ%q1" and msgs[-2]["topic"] == "T0"
    assert r["scenario"]["messages"][BOTH_OWN_PUT]["topic"] == "%LMQ%q1"
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    tail = int(w["maxPhyOffset"]) - 300   # the last message's record, put to %LMQ%q1 itself (own queue offset 1)
    assert len(data) == 2 and b"\x07%LMQ%q1" in last_data_bytes(src, tail, 300), data
    po = int(w["truncateDirtyLogicFilesAt"])
    loaded = w["queuesAfterLoad"]
    # what the broker wrote: no queue left with no file, the reput at the cut queues' largest max, below the host
    # message (processOffset lies inside its body) and the last message's unit: not inside an entry
    reput = max(int(q["maxPhysicOffset"]) for q in loaded.values())
    assert all(q["files"] for q in loaded.values()) and reput < EMBED_HOST_AT < po < tail, (reput, po, tail)
    (held_file,) = sorted((src / "before" / "consumequeue" / "%LMQ%q1" / "0").iterdir())
    before = held_file.read_bytes()
    if suffix:
        assert cq_unit(before, 0)[:2] == PLANTED_BOTH_UNIT and before[20:] == bytes(len(before) - 20)
        write, top = 20, sum(PLANTED_BOTH_UNIT)
    else:   # units of both kinds, in the first data file
        units = [cq_unit(before, k) for k in (0, 20)]
        assert all(o + s <= int(data[1].name) for o, s, _t in units) and before[40:] == bytes(len(before) - 40)
        write, top = 40, sum(units[1][:2])
    assert (int(loaded[LMQ]["maxOffset"]), int(loaded[LMQ]["maxPhysicOffset"])) == (write, top), loaded[LMQ]
    state = w["queuesAfterDispatch"][LMQ]
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / held_file.name).read_bytes()
    assert int(state["maxOffset"]) == 40 and held[:write] == before[:write], (state, held[:60].hex())
    if suffix:   # the own unit put back at the write position
        assert cq_unit(held, 20)[:2] == (tail, 300) and held[40:] == bytes(len(held) - 40), held[:60].hex()
    else:   # dropped again: the file as the crashed broker left it
        assert held == before, held[:60].hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.cut.reput == reput and crash.cut.inside_from < 0, (crash.cut.reput, reput)
    (w_lmq,) = [q for q in crash.cut.inside_placed.whole if (q.topic, q.queue_id) == ("%LMQ%q1", 0)]
    assert w_lmq.walk_end == write, w_lmq
    if suffix:
        assert w_lmq.units == ((20, *cq_unit(held, 20)),) and w_lmq.put_back == (tail,), w_lmq
        assert ("%LMQ%q1", 0) not in crash.cut.lost, crash.cut.lost
    else:
        assert w_lmq.units == () and w_lmq.lost == (tail,), w_lmq
        assert crash.cut.lost[("%LMQ%q1", 0)].tolist() == [tail], crash.cut.lost
    # a unit each, a light one more for each multi-dispatched message, less the two the rule drops in any rebuild
    # (message 11's light unit, the last message's own unit); planted: the broker's queue holds those two instead of
    # the reference's own unit 0 and light unit 0, lost (none lost without it: every queue holds what the reference
    # does)
    light = sum("INNER_MULTI_DISPATCH" in m.get("properties", {}) for m in msgs)
    _loses_as_the_broker(p, r, src, (), extra=light - 2 + 2 * bool(suffix), some=bool(suffix))


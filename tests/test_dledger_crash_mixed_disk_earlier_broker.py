"""DLedger crash restarts (an abort file) whose start's reput, NOT set inside an entry, dispatches a queue holding a
record's own units and light ones (``%LMQ%q1``, queue 0) that was on disk before the walk (``keepQueues``), in the
two shapes ``store_format.dledger_crash_cut.cut_queues`` refused before
(``store_format.dledger_inside_mixed.earlier_reput_refusal``, ``mixed_disk_put_back``):

* from before the walk's last data file (the committed position, no ``recheckReputOffsetFromCq``; 5.5.1 and 5.3.3):
  ``DefaultMessageStore``'s ``doReput`` dispatches the queue's records of the earlier data file first, each by
  ``ConsumeQueue.putMessagePositionInfo`` from the state ``truncateDirtyLogicFiles`` left, all at or below the cut's
  max (dropped), then those of the last data file by the same rule: the cut units back where they were;
* a queue with units of both kinds in the walk's earlier data file whose cut units the reput (from the log's end)
  puts back none of (5.5.1): the queue stays as the cut left it.

Written by the published RocketMQ store through the JVM harness in ``tests/broker/``: what the broker's restart wrote
first (the reput's start, which units it put where), then ``verify`` on the store as that restart found it (on-disk
queues are verify's only).  The scenarios: :mod:`broker_dledger_mixed_disk_earlier_scenarios`.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_files import cq_unit, last_data_bytes
from broker_dledger_runs import (
    LINES,
    _entries_from,
    _loses_as_the_broker,
    _lost_per_queue,
    _verify_with_plan,
    _written,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()

LMQ = "%LMQ%q1/0"


def _bytes(src: Path, offset: int, n: int) -> bytes:
    """``n`` bytes of the data file (of the store the restart found) holding commitlog offset ``offset``."""
    size = int(bh.read_conf(src / "broker.conf")["mappedFileSizeCommitLog"])
    base = offset - offset % size
    data = (src / "before" / "dledger-n0" / "data" / f"{base:020d}").read_bytes()
    return data[offset - base:offset - base + n]


def _lmq_records(src: Path, w: dict) -> list[tuple[int, int, str]]:
    """Every record of the log that goes to %LMQ%q1 (commitlog offset, size, ``own``: put to topic %LMQ%q1 itself,
    ``light``: multi-dispatched there), in commitlog order."""
    out = []
    for off in _entries_from(src, 48, int(w["maxPhyOffset"])):
        size = int.from_bytes(_bytes(src, off, 4), "big")
        rec = _bytes(src, off, size)
        if b"INNER_MULTI_DISPATCH\x01%LMQ%q1" in rec:
            out.append((off, size, "light"))
        elif b"\x07%LMQ%q1" in rec:
            out.append((off, size, "own"))
    return out


def _queue_files(src: Path, which: str) -> dict[int, bytes]:
    return {int(f.name): f.read_bytes() for f in (src / which / "consumequeue" / "%LMQ%q1" / "0").iterdir()}


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith(("5.5", "5.3"))])
def test_verify_predicts_a_reput_from_before_the_last_data_file_over_a_kept_mixed_queue(line, tmp_path, monkeypatch):
    """The -mixed-disk-reput-committed store (T0, %LMQ%q1 and BT0 on queue 0, the queues kept, three T0/0 puts past
    processOffset sent to %LMQ%q1 itself) with DLedger's checkpoint 160 entries behind the log's end, six before the
    last data file's start: the reput from that committed position dispatches %LMQ%q1's light units of the earlier
    data file first (each at or below the max the cut left: dropped), then the last data file's records by the same
    rule from the cut's write position: those below processOffset dropped, the cut units back where the crashed
    broker's dispatch had them (own units 1 and 2 dropped again).  verify on the store as that restart found it
    replays the queue so (``mixed_disk_put_back``) and predicts the units lost queue by queue."""
    from broker_dledger_mixed_disk_earlier_scenarios import EARLIER_BACK
    from broker_dledger_mixed_disk_reput_scenarios import OWN_PUTS
    name = f"{line}-dledger-abort-mixed-disk-earlier"
    r, w, src = _written(name)
    msgs = r["scenario"]["messages"]
    assert r["scenario"]["keepQueues"] and all(msgs[i]["topic"] == "%LMQ%q1" for i in OWN_PUTS)
    assert "recheckReputOffsetFromCq" not in r["scenario"]["config"] and "enableConsumeQueueExt" not in \
        r["scenario"]["config"]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    last = int(data[-1].name)
    po = int(w["truncateDirtyLogicFilesAt"])
    # what the broker wrote: the committed position (the reput's start) before the last data file's start
    entries = _entries_from(src, 48, int(w["maxPhyOffset"]))
    reput = entries[-EARLIER_BACK] - 48
    assert len(data) == 2 and reput < last < po, (reput, last, po)
    recs = _lmq_records(src, w)
    earlier = [(o, s) for o, s, _k in recs if reput <= o < last]
    cut = [(o, s, k) for o, s, k in recs if o >= po]
    assert earlier and all(k == "light" for o, _s, k in recs if o < last), earlier
    assert [k for _o, _s, k in cut].count("own") == len(OWN_PUTS), cut
    # the cut's write position and max for %LMQ%q1 (its first cut unit's position, the end of the last unit below
    # processOffset): past the last data file's start, so every earlier record's unit ends at or below it
    loaded = w["queuesAfterLoad"]
    write, top = int(loaded[LMQ]["maxOffset"]), int(loaded[LMQ]["maxPhysicOffset"])
    assert last <= top < po and all(o + s <= top for o, s in earlier), (last, top, po)
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    before = _queue_files(src, "before")
    crashed = [cq_unit(before[p - p % size], p % size)[:2] for p in range(0, max(before) + size, 20)]
    crashed = [u for u in crashed if u[1]]   # the crashed broker's units, in its files' order
    k = next(i for i, (o, _s) in enumerate(crashed) if o >= po)
    assert write == 20 * k and top == sum(crashed[k - 1]), (write, top, crashed[k - 1:k + 1])
    # the broker's files after the reput: below the write position as before (the earlier records and those of the
    # last data file below processOffset dropped), from it the cut units back where the crashed broker had them
    state = w["queuesAfterDispatch"][LMQ]
    expected = _queue_files(src, "expected")
    held = [cq_unit(expected[p - p % size], p % size) for p in range(write, int(state["maxOffset"]), 20)]
    put = [u[:2] for u in held]
    assert put == crashed[k:] and all(u in [(o, s) for o, s, _k in cut] for u in put), (put, crashed[k:])
    assert all(expected[f][:write - f] == before[f][:write - f] for f in before if f < write), "below the write"
    dropped = sorted(set(cut) - {(o, s, kind) for o, s, kind in cut if (o, s) in crashed})
    assert [kind for _o, _s, kind in dropped].count("own") == len(OWN_PUTS) - 1, dropped
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.cut.reput == reput and crash.cut.inside_from < 0, (crash.cut.reput, reput)
    (w_lmq,) = [q for q in crash.cut.inside_placed.whole if (q.topic, q.queue_id) == ("%LMQ%q1", 0)]
    assert [(pos, o, s, t) for pos, o, s, t in w_lmq.units] == \
        [(write + 20 * i, *u) for i, u in enumerate(held)] and not w_lmq.copies, w_lmq
    assert w_lmq.walk_end == write, w_lmq
    assert sorted(crash.cut.lost[("%LMQ%q1", 0)].tolist()) == \
        sorted(o for o, s, _k in cut if (o, s) not in put), crash.cut.lost
    # units lost, queue by queue, as the broker's queues lack them (%LMQ%q1's less the units the rule drops in any
    # dispatch from the queue's start: none lost)
    lost = _lost_per_queue(r, src)
    lost[LMQ] = lost.get(LMQ, 0) - len(dropped)
    predicted = {q["queue"]: q["units_lost"] for q in p["queues"]}
    assert {q: n for q, n in predicted.items() if n} == {q: n for q, n in lost.items() if n}, (predicted, lost)
    assert not lost.get(LMQ), lost


@pytest.mark.parametrize("suffix", ["", "-planted"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_reput_putting_back_none_of_a_kept_queue_with_both_kinds(line, suffix, tmp_path,
                                                                                    monkeypatch):
    """The -earlier-light-mixed-t7-both-kept-t0 stores (%LMQ%q1/0 on disk before the walk, units of both kinds in
    the walk's earlier data file) without recheckReputOffsetFromCq, the committed position the log's end: the reput
    starts there and puts back none of the queue's cut units (the last message's own unit): the queue stays as the
    cut left it (write position 40; ``-planted``: 20, the own unit the walk appended at 20 cut).  verify on the store
    as that restart found it leaves it so and predicts the units lost."""
    from broker_dledger_inside_mixed_earlier_scenarios import PLANTED_BOTH_UNIT
    name = f"{line}-dledger-abort-emptied-batch-embedded-earlier-light-mixed-t7-both-kept-t0{suffix}-end"
    r, w, src = _written(name)
    msgs = [m for m in r["scenario"]["messages"] if "topic" in m]
    assert r["scenario"]["keepQueues"] and msgs[-1]["topic"] == "%LMQ%q1"
    assert "recheckReputOffsetFromCq" not in r["scenario"]["config"] and "dledgerCommittedBack" not in r["scenario"]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    end = int(w["maxPhyOffset"])
    tail = end - 300   # the last message's record, put to %LMQ%q1 itself (own queue offset 1)
    assert len(data) == 2 and b"\x07%LMQ%q1" in last_data_bytes(src, tail, 300), data
    po = int(w["truncateDirtyLogicFilesAt"])
    assert po < tail, (po, tail)
    loaded = w["queuesAfterLoad"]
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
    # what the broker wrote: DLedger's checkpoint commits every entry (the committed position, where the reput
    # starts, the log's end); the reput dispatched nothing into %LMQ%q1: its write position and max as the cut left
    # them, its bytes below as before (planted: the own unit the walk appended at 20 cut, not put back; the cut
    # leaves the walk's bytes past the write position, which no reader reads)
    cp = dict(ln.split("=", 1) for ln in (src / "before" / "dledger-n0" / "checkpoint").read_text().split())
    assert cp["committedIndex"] == cp["endIndex"], cp
    state = w["queuesAfterDispatch"][LMQ]
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / held_file.name).read_bytes()
    assert (int(state["maxOffset"]), int(state["maxPhysicOffset"])) == (write, top), state
    assert held[:write] == before[:write], held[:60].hex()
    if suffix:   # the walk's own unit, cut at 20
        assert cq_unit(held, 20)[:2] == (tail, 300), held[:60].hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.cut.reput == end and crash.cut.inside_from < 0, (crash.cut.reput, end)
    (w_lmq,) = [q for q in crash.cut.inside_placed.whole if (q.topic, q.queue_id) == ("%LMQ%q1", 0)]
    assert w_lmq.walk_end == write and w_lmq.units == () and not w_lmq.copies and w_lmq.put_back == (), w_lmq
    assert crash.cut.lost[("%LMQ%q1", 0)].tolist() == [tail], crash.cut.lost
    # the reput from the log's end dispatched nothing at all: every queue as the cut left it (T0/0's unit of the
    # B9 message sent there, past processOffset, stays cut)
    assert w["queuesAfterDispatch"] == loaded, "no queue changed by the reput"
    # a unit each, a light one more for each multi-dispatched message, less the two the rule drops in any rebuild
    # (message 11's light unit, the last message's own unit); planted: the broker's queue holds message 11's light
    # unit instead of the reference's own unit 0 and light unit 0 (lost); T0/0's cut unit lost either way
    light = sum("INNER_MULTI_DISPATCH" in m.get("properties", {}) for m in msgs)
    _loses_as_the_broker(p, r, src, (), extra=light - 2 + bool(suffix), some=True)
    predicted = {q["queue"]: q["units_lost"] for q in p["queues"] if q["units_lost"]}
    assert predicted == {"T0/0": 1, **({LMQ: 2} if suffix else {})}, predicted


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.3")])
def test_verify_predicts_a_533_reput_putting_back_none_of_a_kept_queue_with_both_kinds(line, tmp_path, monkeypatch):
    """The 5.3.3 -emptied-kept-embedded-light-mixed-earlier-both store (%LMQ%q1/0 on disk before the walk: the own
    unit of queue offset 0 at 0 and light unit 0 at 20, both of the walk's first data file, light unit 2 of the last
    message at 40; the own unit of queue offset 1 dropped) without recheckReputOffsetFromCq, the committed position
    the log's end: the 5.3.3 cut takes light unit 2 (write position 40) and the reput, from the log's end, puts back
    none of the queue's cut units: light unit 2 stays cut.  verify on the store as that restart found it leaves the
    queue so and predicts the units lost queue by queue."""
    from broker_dledger_inside_light_scenarios import EARLIER_LIGHT_PUTS
    from broker_dledger_inside_mixed_earlier_scenarios import BOTH_OWN_PUT
    from broker_dledger_inside_scenarios import LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-kept-embedded-light-mixed-earlier-both-end"
    r, w, src = _written(name)
    msgs = r["scenario"]["messages"]
    assert r["scenario"]["keepQueues"] and msgs[BOTH_OWN_PUT]["topic"] == msgs[-2]["topic"] == "%LMQ%q1"
    assert "recheckReputOffsetFromCq" not in r["scenario"]["config"] and "dledgerCommittedBack" not in r["scenario"]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    end = int(w["maxPhyOffset"])
    tail = end - LIGHT_TAIL   # the last message, light queue offset 2
    own = tail - 48 - LIGHT_TAIL   # own queue offset 1
    po = int(w["truncateDirtyLogicFilesAt"])
    assert len(data) == 2 and int(data[1].name) <= po < own, (data, po, own)
    (held_file,) = sorted((src / "before" / "consumequeue" / "%LMQ%q1" / "0").iterdir())
    before = held_file.read_bytes()
    earlier = [cq_unit(before, k)[:2] for k in (0, 20)]   # the own unit, light unit 0: in the first data file
    assert all(o + s <= int(data[1].name) for o, s in earlier) and cq_unit(before, 40)[:2] == (tail, LIGHT_TAIL) \
        and before[60:] == bytes(len(before) - 60), before[:80].hex()
    # what the broker wrote: DLedger's checkpoint commits every entry (the reput starts at the log's end); the cut's
    # write position 40 (light unit 2 cut), max light unit 0's end; the reput dispatched nothing: every queue as the
    # cut left it
    cp = dict(ln.split("=", 1) for ln in (src / "before" / "dledger-n0" / "checkpoint").read_text().split())
    assert cp["committedIndex"] == cp["endIndex"], cp
    loaded = w["queuesAfterLoad"]
    assert (int(loaded[LMQ]["maxOffset"]), int(loaded[LMQ]["maxPhysicOffset"])) == (40, sum(earlier[1])), loaded[LMQ]
    assert w["queuesAfterDispatch"] == loaded, "no queue changed by the reput"
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / held_file.name).read_bytes()
    assert held[:40] == before[:40], held[:80].hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.cut.reput == end and crash.cut.inside_from < 0, (crash.cut.reput, end)
    (w_lmq,) = [q for q in crash.cut.inside_placed.whole if (q.topic, q.queue_id) == ("%LMQ%q1", 0)]
    assert w_lmq.walk_end == 40 and w_lmq.units == () and not w_lmq.copies and w_lmq.put_back == (), w_lmq
    assert sorted(crash.cut.lost[("%LMQ%q1", 0)].tolist()) == [own, tail], crash.cut.lost
    # a unit each, a light one more for the three light puts, less light unit 1 and the own unit of queue offset 1,
    # which the rule drops in any rebuild; light unit 2 lost (and the other queues' cut units)
    _loses_as_the_broker(p, r, src, (), extra=len(EARLIER_LIGHT_PUTS) + 1 - 2, some=True)
    predicted = {q["queue"]: q["units_lost"] for q in p["queues"] if q["units_lost"]}
    assert predicted.get(LMQ) == 1, predicted

"""DLedger crash restarts (an abort file) whose start's reput, NOT set inside an entry, starts before the walk's last
data file (DLedger's committed position, no ``recheckReputOffsetFromCq``) and dispatches a queue holding a record's
own units and light ones (``%LMQ%q1``, queue 0) that was on disk before the walk (``keepQueues``), whose max after
``truncateDirtyLogicFiles`` lies below that file's start (the shape ``store_format.dledger_inside_mixed.
earlier_reput_refusal`` refused before; ``mixed_disk_put_back``, ``earlier_units``,
``store_format.dledger_crash_before.EarlierRecords.units``): ``doReput`` dispatches the queue's records of the
earlier data file from its start by ``ConsumeQueue.putMessagePositionInfo`` from the state the cut left (a light one
by ``multiDispatchLmqQueue``), those ending at or below the max dropped, own unit 1 ending above it dropped by the
queue offset test (its queue offset * 20 below the write position), then the last data file's records by the same
rule; with ext files ``putMessagePositionInfoWrapper`` puts an ext unit for each own record first.  On 5.5.1 the
walk starts at the last data file (the earlier records read from the log: ``EarlierRecords.units``), on 5.3.3 at the
first (the walk's own units of the earlier data file: ``earlier_units``), so both paths have a broker case.

Written by the published RocketMQ store through the JVM harness in ``tests/broker/``: what the broker's restart wrote
first (the reput's start, the cut's write position and max, which units it put where), then ``verify`` on the store
as that restart found it (on-disk queues are verify's only: ``--as-restart`` plans with no queue on disk).  The
scenarios: :mod:`broker_dledger_mixed_disk_below_scenarios`.
"""
from __future__ import annotations

import broker_harness as bh
import pytest
from broker_dledger_files import cq_unit, ext_figures_as_the_broker
from broker_dledger_runs import LINES, _entries_from, _lost_per_queue, _verify_with_plan, _written
from test_dledger_crash_mixed_disk_earlier_broker import _lmq_records, _queue_files

from store_format import dledger_inside_replay
from store_format.consumequeue_ext import LONG_MIN

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()

LMQ = "%LMQ%q1/0"


@pytest.mark.parametrize("suffix", ["", "-ext"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith(("5.5", "5.3"))])
def test_verify_predicts_a_reput_from_before_the_last_data_file_over_a_kept_mixed_queue_whose_max_lies_below_it(
        line, suffix, tmp_path, monkeypatch):
    """The -mixed-disk-below stores (%LMQ%q1/0 on disk before the walk, own units 0 and 1 sent to it in the earlier
    data file after committed position, no light unit of it in the last data file below processOffset; ``-ext``: the
    layouts store's ext files of 10 units): the cut leaves %LMQ%q1's max at the end of the earlier data file's last
    light unit, below the last data file's start.  The reput from the committed position drops own unit 0 and the
    light units there (at or below the max) and own unit 1 (ending above it, queue offset 1 * 20 below the write
    position), then puts the last data file's cut light units back where the crashed broker had them, its own puts
    dropped again; with ext files an ext unit for each own record it walks.  verify on the store as that restart
    found it replays the queue so and predicts the units lost (and the ext units appended) as the broker's."""
    from broker_dledger_mixed_disk_earlier_scenarios import EARLIER_BACK, EARLIER_OWN_PUTS
    from broker_dledger_mixed_disk_reput_scenarios import OWN_PUTS
    name = f"{line}-dledger-abort-mixed-disk-below{suffix}"
    r, w, src = _written(name)
    conf = r["scenario"]["config"]
    msgs = r["scenario"]["messages"]
    assert r["scenario"]["keepQueues"] and "recheckReputOffsetFromCq" not in conf
    assert all(msgs[i]["topic"] == "%LMQ%q1" for i in (*EARLIER_OWN_PUTS, *OWN_PUTS))
    assert (conf.get("enableConsumeQueueExt") == "true") == bool(suffix), conf
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    last = int(data[-1].name)
    po = int(w["truncateDirtyLogicFilesAt"])
    # what the broker wrote: the committed position (the reput's start) before the last data file's start
    entries = _entries_from(src, 48, int(w["maxPhyOffset"]))
    reput = entries[-EARLIER_BACK] - 48
    assert len(data) == 2 and reput < last < po, (reput, last, po)
    recs = _lmq_records(src, w)
    earlier = [(o, s, k) for o, s, k in recs if reput <= o < last]
    assert not [x for x in recs if last <= x[0] < po], "no record of %LMQ%q1 in the last data file below processOffset"
    assert [k for _o, _s, k in earlier] == ["own", "light", "light", "own"], earlier
    own0, own1 = (o for o, _s, k in earlier if k == "own")
    # the cut's write position and max for %LMQ%q1: the max the end of the earlier data file's last light unit, BELOW
    # the last data file's start; own unit 1 after it ends above it
    loaded = w["queuesAfterLoad"][LMQ]
    write, top = int(loaded["maxOffset"]), int(loaded["maxPhysicOffset"])
    assert top == sum(earlier[2][:2]) < last and own1 + earlier[3][1] > top, (top, last, earlier)
    size = int(conf["mappedFileSizeConsumeQueue"])
    before = _queue_files(src, "before")
    crashed = [cq_unit(before[p - p % size], p % size)[:2] for p in range(0, max(before) + size, 20)]
    crashed = [u for u in crashed if u[1]]   # the crashed broker's units, in its files' order
    k = next(i for i, (o, _s) in enumerate(crashed) if o >= po)
    # the crashed broker's dispatch: own unit 0 appended (queue offset 0: no check), the light unit after it and own
    # unit 1 dropped (queue offsets * 20 below the write position), the last light unit of the earlier data file last
    assert crashed[k - 2:k] == [earlier[0][:2], earlier[2][:2]] and earlier[1][:2] not in crashed and \
        earlier[3][:2] not in crashed, crashed[k - 3:k + 1]
    assert write == 20 * k and top == sum(crashed[k - 1]), (write, top, crashed[k - 1:k + 1])
    # the broker's files after the reput: below the write position as before (every earlier record dropped, own
    # unit 1 by the queue offset test), from it the cut units back where the crashed broker had them
    state = w["queuesAfterDispatch"][LMQ]
    expected = _queue_files(src, "expected")
    held = [cq_unit(expected[p - p % size], p % size) for p in range(write, int(state["maxOffset"]), 20)]
    assert [u[:2] for u in held] == crashed[k:], (held, crashed[k:])
    assert all(expected[f][:write - f] == before[f][:write - f] for f in before if f < write), "below the write"
    walked = [(o, s, kind) for o, s, kind in recs if o >= reput]
    ext_put = 0
    if suffix:   # an ext unit put for each own record the reput walks, whatever became of its unit
        ext_put = (int(state["extMaxOffset"]) - int(loaded["extMaxOffset"])) // 20
        assert ext_put == sum(kind == "own" for _o, _s, kind in walked) == 5, (ext_put, walked)
    # the ext units the plan's replay puts (ConsumeQueueExt.put's addresses), to set against the broker's
    puts: list[int] = []
    real_put = dledger_inside_replay._Ext.put

    def spy(ext):  # noqa: ANN001, ANN202
        puts.append(real_put(ext))
        return puts[-1]
    monkeypatch.setattr(dledger_inside_replay._Ext, "put", spy)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.cut.reput == reput and crash.cut.inside_from < 0, (crash.cut.reput, reput)
    (w_lmq,) = [q for q in crash.cut.inside_placed.whole if (q.topic, q.queue_id) == ("%LMQ%q1", 0)]
    assert [(pos, o, s, t) for pos, o, s, t in w_lmq.units] == \
        [(write + 20 * i, *u) for i, u in enumerate(held)] and not w_lmq.copies, (w_lmq, held)
    assert w_lmq.walk_end == write, w_lmq
    assert sorted(crash.cut.lost[("%LMQ%q1", 0)].tolist()) == \
        sorted(o for o, _s, kind in walked if o >= po and kind == "own"), crash.cut.lost
    # units lost, queue by queue, as the broker's queues lack them (%LMQ%q1's: the units the rule drops in any
    # dispatch from the queue's start, none lost: the light unit after own unit 0 and own units 1 to 4)
    lost = _lost_per_queue(r, src)
    assert lost.get(LMQ) == 5, lost
    lost[LMQ] -= 5
    predicted = {q["queue"]: q["units_lost"] for q in p["queues"]}
    assert {q: n for q, n in predicted.items() if n} == {q: n for q, n in lost.items() if n}, (predicted, lost)
    if suffix:   # the replay's ext units the broker's: one per own record walked, the last ending at its ext end;
        # the ext units appended the broker's (the reput's five among them); orphaned not predicted
        assert len(puts) == ext_put and puts[-1] - LONG_MIN + 20 == int(state["extMaxOffset"]), (puts, state)
        figs = ext_figures_as_the_broker(p, w, src)
        assert sorted(figs) == [LMQ, "T0/0"], figs
    # every record of %LMQ%q1 the reput walks, the earlier data file's first: those not put dropped
    assert sorted(w_lmq.put_back + w_lmq.lost) == [o for o, _s, _k in walked] and own1 in w_lmq.lost, w_lmq

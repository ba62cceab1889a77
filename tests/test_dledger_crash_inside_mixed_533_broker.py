"""DLedger crash restarts on the 5.3.3 line (an abort file, ``recheckReputOffsetFromCq=true``, the queues kept on
disk) whose start's reput, set inside an entry, replays a queue holding a record's own units and light ones
(``%LMQ%q1``, queue 0) that was on disk before the walk, a file of it left by the cut: 5.3.3's
``DefaultMessageStore.recover`` loads the queues (``ConsumeQueue.recover``) before ``dledgerRecoverAbnormally``'s walk
as 5.5.1's does, so the walk's ``putMessagePositionInfo`` runs on the loaded files and ``truncateDirtyLogicFiles`` cuts
them so written.  Written by the published RocketMQ store through the JVM harness in ``tests/broker/`` (5.3.3:
``DLEDGER_LINES=5.3.3``): what the broker's restart wrote, and ``verify`` on the store as that restart found it
(on-disk queues are verify's only).  The scenarios: :mod:`broker_dledger_inside_mixed_533_scenarios`.
"""
from __future__ import annotations

import broker_harness as bh
import pytest
from broker_dledger_files import cq_unit, last_data_bytes
from broker_dledger_runs import LINES, _loses_as_the_broker, _verify_with_plan, _written

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()

_LINES_533 = bh.params_or_skip([ln for ln in LINES if ln.startswith("5.3")],
                               "5.3.3 only: DLEDGER_LINES=5.3.3 (or 4.9.8,5.3.3,5.5.1)")


@pytest.mark.parametrize("line", _LINES_533)
def test_verify_predicts_a_533_crash_restart_whose_reput_parses_a_unit_for_a_kept_queue_with_own_units(
        line, tmp_path, monkeypatch):
    """The 5.3.3 -emptied-kept-embedded-light-mixed-held store: %LMQ%q1/0 on disk before the walk as the crashed
    broker's dispatch wrote it (the own unit of queue offset 0, below processOffset, at 0; the own unit of queue
    offset 1 and the last message's light unit, queue offset 0, both past processOffset, at 20 and 40). The walk's
    putMessagePositionInfo drops all three onto those files; the 5.3.3 cut keeps the file, write position 20, its
    max the first own unit's end; the reput is set at processOffset (T9/0's max, the queue the cut emptied), where the
    T5/0 message also to %LMQ%q1 (light queue offset 7) goes to 20, and going on at T9's entry it drops the own unit
    of queue offset 1 (20 below 40) and appends the light unit at 40. verify on the store as that restart found it
    puts them there and predicts the units lost (the walk's units not dispatched onto the files: refused before)."""
    from broker_dledger_inside_mixed_more_scenarios import MID_PUT, kept_light_mixed_emptied_message
    from broker_dledger_inside_scenarios import LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-kept-embedded-light-mixed-held"
    reput, msg = kept_light_mixed_emptied_message()
    r, w, src = _written(name)
    msgs = r["scenario"]["messages"]
    assert r["scenario"]["keepQueues"] and msgs[MID_PUT]["topic"] == msgs[-2]["topic"] == "%LMQ%q1"
    # the 5.3.3 cut at processOffset, where the reput is set (T9/0's max), and the message there
    assert int(w["truncateDirtyLogicFilesAt"]) == reput and last_data_bytes(src, reput, len(msg)) == msg
    tail = int(w["maxPhyOffset"]) - LIGHT_TAIL   # the last message, T0/0 and %LMQ%q1 light queue offset 0
    own = tail - ENTRY_HEADER_SIZE - LIGHT_TAIL   # the message put to %LMQ%q1 after T9's (own queue offset 1)
    (held_file,) = sorted((src / "before" / "consumequeue" / "%LMQ%q1" / "0").iterdir())
    before = held_file.read_bytes()
    first = cq_unit(before, 0)[:2]   # MID_PUT's own unit, below processOffset
    assert first[0] + first[1] <= reput < own and [cq_unit(before, k)[:2] for k in (20, 40)] == \
        [(own, LIGHT_TAIL), (tail, LIGHT_TAIL)] and before[60:] == bytes(len(before) - 60), before[:80].hex()
    assert w["queuesAfterLoad"]["%LMQ%q1/0"]["files"] == [held_file.name], w["queuesAfterLoad"].get("%LMQ%q1/0")
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 60, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / held_file.name).read_bytes()
    assert held[:20] == before[:20] and [cq_unit(held, k)[:2] for k in (20, 40)] == \
        [(reput, len(msg)), (tail, LIGHT_TAIL)] and held[60:] == bytes(len(held) - 60), held[:80].hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert [(u.position, u.offset, u.size) for u in crash.cut.inside_placed.units if u.topic == "%LMQ%q1"] == \
        [(20, reput, len(msg))], crash.cut.inside_placed
    (w_lmq,) = [q for q in crash.cut.inside_placed.whole if q.topic == "%LMQ%q1"]
    # where the replay writes each (the broker's file above): the parsed unit, then the light unit put back
    assert [(pos, o) for pos, o, _s, _t in w_lmq.units] == [(20, reput), (40, tail)], w_lmq
    assert w_lmq.put_back == (tail,), w_lmq
    # a unit each, a light one more for the last message
    _loses_as_the_broker(p, r, src, (reput,), extra=1)


@pytest.mark.parametrize("line", _LINES_533)
def test_verify_predicts_a_533_crash_restart_whose_reput_puts_back_cut_units_of_a_kept_queue_with_own_units(
        line, tmp_path, monkeypatch):
    """The 5.3.3 -emptied-kept-embedded-light-mixed-held-t5 store: %LMQ%q1/0 on disk before the walk as in
    -light-mixed-held (own units of queue offsets 0 and 1 at 0 and 20, the last message's light unit of queue offset
    0 at 40), the message where the reput is set (processOffset) for T5/0 alone: no parsed unit going to %LMQ%q1. The
    walk drops its units onto the loaded file, the 5.3.3 cut leaves write position 20; the reput, going on at T9's
    entry, appends the own unit of queue offset 1 at 20 (not below 20) and the light unit at 40 again. verify on the
    store as that restart found it replays the queue so and predicts the units lost (refused before: the walk's
    units not dispatched onto the files on 5.3.3)."""
    from broker_dledger_inside_mixed_533_scenarios import kept_t5_message
    from broker_dledger_inside_mixed_more_scenarios import MID_PUT
    from broker_dledger_inside_scenarios import LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-kept-embedded-light-mixed-held-t5"
    reput, msg = kept_t5_message()
    r, w, src = _written(name)
    msgs = r["scenario"]["messages"]
    assert r["scenario"]["keepQueues"] and msgs[MID_PUT]["topic"] == msgs[-2]["topic"] == "%LMQ%q1"
    assert int(w["truncateDirtyLogicFilesAt"]) == reput and last_data_bytes(src, reput, len(msg)) == msg
    assert b"%LMQ%q1" not in msg
    tail = int(w["maxPhyOffset"]) - LIGHT_TAIL
    own = tail - ENTRY_HEADER_SIZE - LIGHT_TAIL
    (held_file,) = sorted((src / "before" / "consumequeue" / "%LMQ%q1" / "0").iterdir())
    before = held_file.read_bytes()
    first = cq_unit(before, 0)[:2]
    assert first[0] + first[1] <= reput < own and [cq_unit(before, k)[:2] for k in (20, 40)] == \
        [(own, LIGHT_TAIL), (tail, LIGHT_TAIL)] and before[60:] == bytes(len(before) - 60), before[:80].hex()
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 60, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / held_file.name).read_bytes()
    assert held == before, (held[:80].hex(), before[:80].hex())   # both cut units put back where they were
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert not [u for u in crash.cut.inside_placed.units if u.topic == "%LMQ%q1"], crash.cut.inside_placed
    (w_lmq,) = [q for q in crash.cut.inside_placed.whole if q.topic == "%LMQ%q1"]
    assert [(pos, o) for pos, o, _s, _t in w_lmq.units] == [(20, own), (40, tail)], w_lmq
    assert w_lmq.put_back == (own, tail) and w_lmq.lost == (), w_lmq
    # a unit each, a light one more for the last message: every one held again, none lost
    _loses_as_the_broker(p, r, src, (reput,), extra=1, some=False)
    assert p["units_lost"] == 0, p["notes"]


@pytest.mark.parametrize("line", _LINES_533)
def test_verify_predicts_a_533_crash_restart_that_puts_back_a_cut_unit_of_a_kept_queue_with_both_kinds_earlier(
        line, tmp_path, monkeypatch):
    """The 5.3.3 -emptied-kept-embedded-light-mixed-earlier-both store: the walk starts at the first data file
    (messageIndexSafe), where %LMQ%q1 gets the own unit of queue offset 0 and light units 0 and 1; on disk before the
    walk as the crashed broker's dispatch wrote it: the own unit at 0, light unit 0 at 20 (light unit 1 and the own
    unit of queue offset 1 after T9's dropped, 20 below 40), light unit 2 of the last message at 40. The walk drops
    every unit onto that file; the 5.3.3 cut takes light unit 2 (write position 40); the message where the reput is
    set (processOffset) is for T5/0 alone, and the reput, going on at T9's entry, drops the own unit of queue offset 1
    again and appends light unit 2 at 40 again. verify on the store as that restart found it replays the queue so
    and predicts the units lost (refused before: units of both kinds in the walk's earlier data files, the walk's
    units not dispatched onto the files on 5.3.3)."""
    from broker_dledger_inside_light_scenarios import EARLIER_LIGHT_PUTS
    from broker_dledger_inside_mixed_533_scenarios import kept_t5_message
    from broker_dledger_inside_mixed_earlier_scenarios import BOTH_OWN_PUT
    from broker_dledger_inside_scenarios import LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-kept-embedded-light-mixed-earlier-both"
    reput, msg = kept_t5_message()
    r, w, src = _written(name)
    msgs = r["scenario"]["messages"]
    assert r["scenario"]["keepQueues"] and msgs[BOTH_OWN_PUT]["topic"] == msgs[-2]["topic"] == "%LMQ%q1"
    assert int(w["truncateDirtyLogicFilesAt"]) == reput and last_data_bytes(src, reput, len(msg)) == msg
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2 and int(data[1].name) <= reput, data
    tail = int(w["maxPhyOffset"]) - LIGHT_TAIL   # the last message, light queue offset 2
    own = tail - ENTRY_HEADER_SIZE - LIGHT_TAIL   # own queue offset 1
    (held_file,) = sorted((src / "before" / "consumequeue" / "%LMQ%q1" / "0").iterdir())
    before = held_file.read_bytes()
    earlier = [cq_unit(before, k)[:2] for k in (0, 20)]   # the own unit, light unit 0: in the first data file
    assert all(o + s <= int(data[1].name) for o, s in earlier) and cq_unit(before, 40)[:2] == (tail, LIGHT_TAIL) \
        and before[60:] == bytes(len(before) - 60), before[:80].hex()
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 60, state
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / held_file.name).read_bytes()
    assert held == before, (held[:80].hex(), before[:80].hex())
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert not [u for u in crash.cut.inside_placed.units if u.topic == "%LMQ%q1"], crash.cut.inside_placed
    (w_lmq,) = [q for q in crash.cut.inside_placed.whole if q.topic == "%LMQ%q1"]
    assert [(pos, o) for pos, o, _s, _t in w_lmq.units] == [(40, tail)] and w_lmq.put_back == (tail,), w_lmq
    assert w_lmq.lost == (own,), w_lmq
    # a unit each, a light one more for the three light puts, less light unit 1 and the own unit of queue offset 1,
    # which the rule drops in any rebuild: none lost
    _loses_as_the_broker(p, r, src, (reput,), extra=len(EARLIER_LIGHT_PUTS) + 1 - 2, some=False)
    assert p["units_lost"] == 0, p["notes"]

"""A 5.3.3 clean start with ``recheckReputOffsetFromCq=true`` whose ``recoverNormally`` dispatch (the records past the
loaded queues' max physical offset, no truncate) opens a topic "" queue (``consumequeue/<queueId>/<file>``:
multi-dispatch requests naming an empty queue, ``ConsumeQueue.multiDispatchLmqQueue``) and that queue alone holds
the queue table's max afterwards: ``doRecheckReputOffsetFromCq``'s second reput starts at the end of the last unit it
put (:func:`store_format.empty_topic_restart.table_max_beside_own`, not truncated).

``-untruncated``: puts m0 (T1/0), a (T0/0, queue offset 0), X (T1/1) and R (T0/0, queue offset 1, a request
``",%LMQ%a"`` asking topic "" queue 0 for 0 and %LMQ%a/0 for 1), the last record; the puts' enableLmq=false keeps
those offsets.  Queues kept, T0/0's and %LMQ%a/0's file planted as a's unit three times (write position 60, max a's
end), T1/1's as m0's unit: the loaded max is a's end, X's offset, so the recovery dispatches R alone.  Its own and
%LMQ%a units (queue offset 1, behind the write position) are dropped as built repeatedly
(``putMessagePositionInfo``); topic "" queue 0, created afresh, puts it at 0 over its held file: its max, R's end,
is the table's, the own queues' a's end.

5.3.3 alone: its ``recoverNormally`` calls ``truncateDirtyLogicFiles`` only where the queues' max before the
dispatch reaches the recovery's end, while 5.5.1's ``ConsumeQueueStore.truncateDirty`` takes that max after the
dispatch (here R's end: it truncates every queue, reading topic "" queue 0's last file as the truncated case does).

Each test first asserts what the broker wrote (the queue table after the load, where its second reput started), then
``verify`` of ``before/``: its ``second_reput_from`` (taking that untruncated branch out fails it) and R's T0/0 and
%LMQ%a/0 units, which the broker drops (queue offset 1 behind a write position of 3 units: files that disagree with
the commitlog) and ``verify``'s recovery dispatch drops too (``putMessagePositionInfo``'s rule from the loaded state,
:func:`pipelines.verify.restart_dispatch.dispatch_again`; putting them by the max alone fails that test).
``PIPELINES_FULL_SUITE=1`` writes this store.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_layout_scenarios import Messages
from test_light_empty_reput_again_498_broker import FIRST, _puts

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.3.3"
CQ_SIZE = 6000   # mappedFileSizeConsumeQueue: 300 units, one file each


def untruncated_scenario(line: str = LINE) -> dict:
    """``-untruncated`` (module docstring)."""
    g = Messages(144, ["T0", "T1"], queues=2)
    request = {"INNER_MULTI_DISPATCH": ",%LMQ%a", "INNER_MULTI_QUEUE_OFFSET": "0,1"}
    messages = [g.one(topic="T1", queueId=0), g.one(topic="T0", queueId=0), g.one(topic="T1", queueId=1),
                g.one(topic="T0", queueId=0, properties=request)]
    a_thrice = {"fileSize": CQ_SIZE, "units": [{"put": 1}] * 3}
    return {"name": f"{line}-light-empty-untruncated", "messages": messages,
            "config": {"mappedFileSizeCommitLog": str(32 * 1024), "maxHashSlotNum": "101", "maxIndexNum": "400",
                       "mappedFileSizeConsumeQueue": str(CQ_SIZE), "enableLmq": "false",
                       "enableMultiDispatch": "true", "recheckReputOffsetFromCq": "true"},
            "keepQueues": True, "keepBefore": True,
            "plantUnits": {f"consumequeue/T0/0/{FIRST}": a_thrice, f"consumequeue/%LMQ%a/0/{FIRST}": a_thrice,
                           f"consumequeue/T1/1/{FIRST}": {"fileSize": CQ_SIZE, "units": [{"put": 0}]}}}


SCENARIOS = {LINE: bh.bounded([untruncated_scenario()], full_only=("-untruncated",))}
CASES = bh.params_or_skip([pytest.param(sc["name"], id=sc["name"]) for sc in SCENARIOS[LINE]],
                          "PIPELINES_FULL_SUITE=1 writes this store")
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "5.3.3 store whose recovery's topic \"\" queue holds the table's max", threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker's restart found it (``before/``) and left it (``expected/``), with our ``verify``
    of ``before/``."""
    return bh.restart_run(request, _RUNS, STORES)


@pytest.mark.parametrize("name", CASES)
def test_the_recovery_s_topic_empty_queue_holds_the_table_s_max(written, name):
    """What the broker wrote: after the load (its ``recoverNormally`` dispatch, no truncate) T0/0 and %LMQ%a/0 at a's
    end (R's units dropped: write position still 60), T1/0 and T1/1 at m0's end, topic "" queue 0 at R's end, the
    commitlog's end: the table's max, where the second reput starts (nothing more put after it)."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    _m0, a, x, r = _puts(d)[:4]
    end = w["maxPhyOffset"]
    assert r > x and end > r and w.get("truncateDirtyLogicFilesAt") == -1, (w.get("truncateDirtyLogicFilesAt"), end)
    got = {q: (s["maxPhysicOffset"], s["maxOffset"]) for q, s in w["queuesAfterLoad"].items()
           if not q.startswith(("SCHEDULE", "rmq"))}
    assert got == {"T1/0": (a, 20), "T0/0": (x, 60), "%LMQ%a/0": (x, 60), "T1/1": (a, 20), "/0": (end, 20),
                   "0/0": (-1, 0)}, got
    assert max(s["maxPhysicOffset"] for s in w["queuesAfterLoad"].values()) == end
    after = {q: (s["maxPhysicOffset"], s["maxOffset"]) for q, s in w["queuesAfterDispatch"].items() if q in got}
    assert after == got, after


@pytest.mark.parametrize("name", CASES)
def test_verify_starts_the_second_reput_at_the_topic_empty_queue_s_max(written, name):
    """``verify`` of ``before/``: the second reput from the table's max, topic "" queue 0's (R's end)."""
    v, w = written["verify"], written["written"]
    assert v["report"] is not None and v["code"] in (0, 1), v["stderr"]
    restart = v["report"]["restart"]
    assert restart is not None, v["report"]["restart_note"]
    assert restart["second_reput_from"] == max(s["maxPhysicOffset"] for s in w["queuesAfterLoad"].values()), \
        (restart["second_reput_from"], restart["notes"])


@pytest.mark.parametrize("name", CASES)
def test_verify_drops_the_own_units_the_broker_drops(written, name):
    """``verify``'s units put again by the recovery's dispatch per own queue: the broker's (its ``maxOffset`` after
    the load less before it, none: R's T0/0 and %LMQ%a/0 units dropped)."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    held = {q: 20 * sum(1 for _, size in bh.cq_units(d / "before" / "consumequeue" / q / FIRST) if size > 0)
            for q in ("T0/0", "%LMQ%a/0")}
    put = {q: (w["queuesAfterLoad"][q]["maxOffset"] - held[q]) // 20 for q in held}
    assert put == {"T0/0": 0, "%LMQ%a/0": 0}, put
    ours = {q["queue"]: q["units_dispatched_again"] for q in written["verify"]["report"]["restart"]["queues"]
            if q["queue"] in put}
    assert ours == put, ours

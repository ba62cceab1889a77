"""A crash restart (5.5.1, ordinary store, ``enableAcceleratedRecovery``) over a queue whose only consume queue file is
all zeros, with ``CommitLog.recoverAbnormally``'s walk starting at a record of queue offset > 0 of that queue.

Four puts to T0/0 (consume queue files of 30 units: file 0 only), the queue's four units zeroed (``zeroQueueTail``:
the file stays on disk at its full length), the queue folders kept, an ``abort`` file, the checkpoint's
logicsPhysicalOffset at put 2: the walk dispatches puts 2 and 3.  ``ConsumeQueue.recover`` keeps the file (write
position 0); ``putMessagePositionInfo`` finds it (``MappedFile.isFirstCreateInQueue`` false: no ``fillPreBlank``)
and appends put 2's unit at 0 (queue offset 2 ahead of it is only logged), put 3's at 20.  ``verify`` on ``before/``
must predict that: a loaded queue's write position 0 is a file, not "no file"
(:func:`store_format.consumequeue.loaded_state`).  The 4.9.8 and 5.3.3 brokers (a walk from a whole commitlog file):
:mod:`test_restart_zeros_loaded_queue_lines_broker`.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_layout_scenarios import Messages

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
NAME = f"{LINE}-zeros-loaded-accel-crash"


def _scenarios() -> list[dict]:
    g = Messages(165, ["T0"], queues=1)
    return [{"name": NAME, "abort": True, "keepQueues": True, "keepBefore": True,
             "messages": [g.one(queueId=0) for _ in range(4)],
             "config": {"mappedFileSizeCommitLog": str(32 * 1024), "mappedFileSizeConsumeQueue": "600",
                        "maxHashSlotNum": "101", "maxIndexNum": "400", "enableAcceleratedRecovery": "true"},
             "checkpointLogicsPhysicalOffset": {"put": 2},
             "zeroQueueTail": [{"path": "consumequeue/T0/0", "units": 4, "unitSize": 20}]}]


SCENARIOS = {LINE: _scenarios()}
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "store with a queue whose only file is zeros, crash-restarted", threads=1)


@pytest.fixture
def run(request) -> dict:
    """The scenario as the broker's restart found it (``before/``) and what it did, with our ``verify`` of it."""
    return bh.written_once(request, _RUNS, STORES, then=bh.restart_checked, every=True)[NAME]


def test_the_broker_appended_the_walk_s_units_at_the_loaded_file_s_start(run) -> None:
    """What the broker wrote: ``before/``'s T0/0 is file 0 of zeros; after the restart it holds puts 2 and 3 at 0 and
    20 (no ``fillPreBlank`` units), nothing after; the queue's max offset is 2 units."""
    d, w = Path(run["scenario"]["dir"]), run["written"]
    f = f"{0:020d}"
    before = d / "before" / "consumequeue" / "T0" / "0"
    assert [p.name for p in before.iterdir()] == [f] and not (before / f).read_bytes().strip(b"\0")
    after = bh.cq_units(d / "expected" / "consumequeue" / "T0" / "0" / f)
    assert after[0][0] == w["checkpointLogicsPhysicalOffset"] and after[0][1] > 0 and after[1][1] > 0, after[:3]
    assert after[1][0] == after[0][0] + after[0][1] and set(after[2:]) == {(0, 0)}, after[:3]
    assert w["queuesAfterLoad"]["T0/0"]["maxOffset"] == 40, w["queuesAfterLoad"]["T0/0"]


def test_verify_predicts_the_appends_onto_the_loaded_empty_file(run) -> None:
    """``verify``'s T0/0: the walk's two units appended, write position and max physical offset the broker's."""
    w = run["written"]
    v = run["verify"]
    assert v["code"] in (0, 1) and v["report"] is not None, v["stderr"]
    p = v["report"]["restart"]
    assert p is not None and not v["report"]["restart_note"], v["report"].get("restart_note")
    q = {(x["layout"], x["queue"]): x for x in p["queues"]}.get(("consumequeue", "T0/0"))
    s = w["queuesAfterLoad"]["T0/0"]
    assert q is not None, "verify does not list T0/0"
    assert (q["write_position"], q["max_physic_offset"]) == (s["maxOffset"], s["maxPhysicOffset"]), (q, s)
    assert q["units_appended_by_recovery"] == 2, q
    assert p["abnormal_dispatch_from"] == w["checkpointLogicsPhysicalOffset"]

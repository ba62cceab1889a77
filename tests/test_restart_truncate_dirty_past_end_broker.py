"""A consume queue the restart's cut leaves with no file, on the 4.9.8 and 5.3.3 lines: the max physical offset the
broker's queue then has (``ConsumeQueue.truncateDirtyLogicFiles`` sets the cut's offset first and deletes every
file; ``DefaultMessageStore.recoverTopicQueueTable``'s ``ConsumeQueue.correctMinOffset`` on 4.9.8 and 5.3.3 does not
look at a queue with no file, so the max stays the cut's offset; 5.5.1's resets it to -1:
``tests/test_restart_truncate_dirty_551_broker.py``'s ``-dirty-past-end``).  One rule:
:func:`store_format.consumequeue_recovery.no_file_max`.

The ``-dirty-past-end`` shape on each line (clean restart, queue folders kept: ``keepQueues``): consume queue files
of two units (``mappedFileSizeConsumeQueue=40``); puts 0-2 to T0/0 (file 0 full, file 40 holding put 2's unit, then
zeroed: ``zeroQueueTail``), put 3 to T0/1, put 4 to T0/2 with its body damaged (``damageMessage``).  The commitlog's
recovery ends at put 4's start, T0/2's only unit lies past it, so the queues' max is past the end and
``recoverNormally`` calls ``truncateDirtyLogicFiles`` there: T0/2's only file is deleted (max: the cut's offset),
T0/0 keeps file 40's first unit of zeros (one unit further than ``ConsumeQueue.recover`` left it, max 0), T0/1 keeps
put 3's unit (max: its end, the cut's offset too).

Each test first asserts what the broker wrote and did (``before/``'s files, ``truncateDirtyLogicFilesAt``,
``damagedRecord``, ``queuesAfterLoad``), then that ``verify`` of ``before/`` predicts each queue's write position
and max physical offset after ``load()`` and the units cut.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_layout_scenarios import Messages

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINES = ("4.9.8", "5.3.3")
FILE = 40   # two units a file
UNIT = 20


def _scenario(line: str) -> dict:
    g = Messages(174, ["T0"], queues=1)
    msgs = [g.one(queueId=0) for _ in range(3)] + [g.one(queueId=1), g.one(queueId=2)]
    return {"name": f"{line}-dirty-past-end", "keepQueues": True, "keepBefore": True, "messages": msgs,
            "damageMessage": 4,
            "config": {"mappedFileSizeCommitLog": str(32 * 1024), "mappedFileSizeConsumeQueue": str(FILE),
                       "maxHashSlotNum": "101", "maxIndexNum": "400"},
            "zeroQueueTail": [{"path": "consumequeue/T0/0", "units": 1, "unitSize": UNIT}]}


SCENARIOS = {line: [_scenario(line)] for line in LINES}
NAMES = [sc["name"] for scs in SCENARIOS.values() for sc in scs]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "store(s) whose restart's cut leaves a queue with no file", threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker's restart found it (``before/``) and what it did, with our ``verify`` of
    ``before/`` (every scenario once)."""
    return bh.restart_run(request, _RUNS, STORES)



def _assert_written(d: Path, w: dict) -> int:
    """What the broker wrote and its restart did: T0/0's files 0 (two units) and 40 (all zeros), T0/1's and T0/2's
    one unit each, the cut at the damaged put 4's start, which T0/2's unit points at; after ``load()`` T0/2 with no
    file and the cut's offset as its max, T0/0 one unit of zeros further (max 0), T0/1 as on disk.  Returns the
    cut's offset."""
    assert w.get("ok"), w
    cq = d / "before" / "consumequeue" / "T0"
    assert sorted(p.name for p in (cq / "0").iterdir()) == [f"{0:020d}", f"{FILE:020d}"], sorted((cq / "0").iterdir())
    assert all(size > 0 for _, size in bh.cq_units(cq / "0" / f"{0:020d}")), bh.cq_units(cq / "0" / f"{0:020d}")
    assert not (cq / "0" / f"{FILE:020d}").read_bytes().strip(b"\0")
    end = int(w["truncateDirtyLogicFilesAt"])
    assert end > 0 and w["damagedRecord"] == end, w
    (q1, _), (q2, _) = bh.cq_units(cq / "1" / f"{0:020d}"), bh.cq_units(cq / "2" / f"{0:020d}")
    assert q1[0] + q1[1] == end == q2[0], (end, q1, q2)   # put 3 ends where put 4 (T0/2's unit) starts
    loaded = w["queuesAfterLoad"]
    t00, t01, t02 = loaded["T0/0"], loaded["T0/1"], loaded["T0/2"]
    assert (t00["maxOffset"], t00["maxPhysicOffset"]) == (FILE + UNIT, 0), loaded
    assert (t01["maxOffset"], t01["maxPhysicOffset"]) == (UNIT, end), loaded
    # the queue the cut left with no file: its max the cut's offset (correctMinOffset leaves it), not -1 as on 5.5.1
    assert not t02["files"] and t02["maxOffset"] == 0 and t02["maxPhysicOffset"] == end, (end, loaded)
    return end


@pytest.mark.parametrize("name", NAMES)
def test_verify_predicts_the_queue_the_cut_left_with_no_file(written, name):
    """``verify``'s T0/0, T0/1 and T0/2 have the write position and max physical offset the broker's queues had after
    ``load()``; T0/2's one unit cut, its file deleted, its max the cut's offset."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    end = _assert_written(d, w)
    v = written["verify"]
    assert v["code"] in (0, 1) and v["report"] is not None, v["stderr"]
    p = v["report"]["restart"]
    assert not p["start_fails"] and p["clean_shutdown"], p
    listed = {q["queue"]: q for q in p["queues"]}
    for queue in ("T0/0", "T0/2"):
        s, q = w["queuesAfterLoad"][queue], listed[queue]
        moved = q["units_dispatched_again"]   # a clean restart's dispatch: after the figures
        assert q["write_position"] + UNIT * moved == s["maxOffset"], (queue, q, s)
        assert q["max_physic_offset"] == s["maxPhysicOffset"], (queue, q, s)
    t02 = listed["T0/2"]
    assert t02["units_truncated"] == 1 and t02["files_deleted_by_truncate"] == [f"{0:020d}"], t02
    assert t02["max_physic_offset"] == end, t02
    t01 = listed.get("T0/1")   # nothing happens to it: as on disk
    assert t01 is None or (t01["write_position"], t01["max_physic_offset"]) == (UNIT, end), t01

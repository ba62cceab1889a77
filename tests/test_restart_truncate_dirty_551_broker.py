"""5.5.1's ``ConsumeQueueStore.truncateDirty`` after the recovery's dispatch reached the commitlog's end, checked
against the 5.5.1 broker's restart of an ordinary store (file consume queues, queue folders kept: ``keepQueues``).

rocketmq-store 5.5.1 has ``CommitLog.recoverNormally``/``recoverAbnormally`` call ``truncateDirtyLogicFiles(end)``
after their dispatch, and ``truncateDirty`` cuts every queue only when the queues' max physical offset at that moment
(after the dispatch) is at or past the end.  ``ConsumeQueue.truncateDirtyLogicFiles`` keeps a last file's first unit
even when it is zeros, so a queue whose last consume queue file is empty ends one unit further (20 bytes into that
file, max physical offset 0) than ``ConsumeQueue.recover`` left it.

Consume queue files of two units (``mappedFileSizeConsumeQueue=40``); puts 0-2 to T0/0 (file 0 full, file 40 holding
put 2's unit), then puts 3-4 to T0/1; T0/0's last unit zeroed (``zeroQueueTail``: file 40 all zeros).  The broker:

* ``5.5.1-dirty-reach`` (clean restart): T0/1's two units zeroed too (its only file all zeros), so the queues' max is
  put 1's end, put 2's start: ``recoverNormally`` dispatches the records past it (not put 2, whose unit is lost) and
  writes puts 3 and 4 at T0/1's start; the max reaches the end, ``truncateDirty`` cuts: T0/0 ends at 60, max 0, and
  T0/1 keeps its two units (cut after the dispatch: before it, the cut would have kept T0/1's first unit of zeros).
* ``5.5.1-dirty-reach-crash``: the same store with an ``abort`` file, ``enableAcceleratedRecovery`` and the
  checkpoint's logicsPhysicalOffset at put 3: ``recoverAbnormally``'s walk writes puts 3 and 4 into T0/1, then cuts.
* ``5.5.1-dirty-short`` (the other direction; ``PIPELINES_FULL_SUITE=1``): only T0/1's last unit zeroed, so the max
  is put 3's end, put 4's start, which the dispatch skips: the max stays below the end, nothing is cut, T0/0 ends at
  40.
* ``5.5.1-dirty-past-end`` (``PIPELINES_FULL_SUITE=1``): put 4 goes to T0/2 and its body is damaged
  (``damageMessage``): the commitlog ends at put 4's start and T0/2's unit lies past it (the max is past the end
  before any dispatch): the cut deletes T0/2's only file (its max then -1: ``recoverTopicQueueTable``'s
  ``ConsumeQueue.correctMinOffset`` finds no file) and keeps T0/0's unit of zeros.
* ``5.5.1-dirty-prepared-crash`` (the other direction after a crash) and ``-prepared`` (``PIPELINES_FULL_SUITE=1``):
  ``-reach-crash`` and ``-reach`` with a prepared transaction message last (to T0/1): the walk (the dispatch) writes
  puts 3 and 4 but no unit of it, so the max stays at its start, below the end: nothing is cut, T0/0 ends at 40.

Each test first asserts what the broker wrote and did (``before/``'s files, ``truncateDirtyLogicFilesAt``,
``queuesAfterLoad``, ``expected/``'s files after the restart), then that ``verify`` of ``before/`` predicts each
queue's write position and max physical offset after ``load()`` (the report gives a clean restart's before the
recovery's dispatch: plus the units it dispatches), the units dispatched, appended, cut and lost.  ``rebuild
--as-restart`` does not apply (it models a start with the queue folders deleted).
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_layout_scenarios import Messages

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
FILE = 40   # two units a file
UNIT = 20


def _zeroed(**units: int) -> list[dict]:
    return [{"path": f"consumequeue/T0/{q.removeprefix('q')}", "units": n, "unitSize": UNIT} for q, n in units.items()]


def _scenarios() -> list[dict]:
    g = Messages(171, ["T0"], queues=1)
    msgs = [g.one(queueId=0) for _ in range(3)] + [g.one(queueId=1) for _ in range(2)]
    base = {"name": f"{LINE}-dirty-reach", "keepQueues": True, "keepBefore": True, "messages": msgs,
            "config": {"mappedFileSizeCommitLog": str(32 * 1024), "mappedFileSizeConsumeQueue": str(FILE),
                       "maxHashSlotNum": "101", "maxIndexNum": "400"},
            "zeroQueueTail": _zeroed(q0=1, q1=2)}
    crash = {**base, "name": f"{LINE}-dirty-reach-crash", "abort": True, "checkpointLogicsPhysicalOffset": {"put": 3},
             "config": {**base["config"], "enableAcceleratedRecovery": "true"}}
    short = {**base, "name": f"{LINE}-dirty-short", "zeroQueueTail": _zeroed(q0=1, q1=1)}
    past = {**base, "name": f"{LINE}-dirty-past-end", "messages": [*msgs[:4], {**msgs[4], "queueId": 2}],
            "damageMessage": 4, "zeroQueueTail": _zeroed(q0=1)}
    # a prepared message last: the dispatch queues no unit of it, so the max stays below the end
    tail = [*msgs, g.one(queueId=1, tranType="prepared")]
    prepared = [{**sc, "name": sc["name"].replace("-reach", "-prepared"), "messages": tail} for sc in (base, crash)]
    return [base, crash, short, past, *prepared]


SCENARIOS = {LINE: bh.bounded(_scenarios(), full_only=("-short", "-past-end", "-prepared"))}
NAMES = [sc["name"] for sc in SCENARIOS[LINE]]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "5.5.1 store(s) whose recovery's dispatch reaches the end or not", threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker's restart found it (``before/``) and what it did, with our ``verify`` of
    ``before/`` (every scenario once)."""
    return bh.restart_run(request, _RUNS, STORES)



def _on_disk(queue: Path) -> int:
    """Where a queue's units on disk end (its last file's name plus its leading units)."""
    last = sorted(queue.iterdir())[-1]
    units = bh.cq_units(last)
    return int(last.name) + UNIT * next((i for i, (_, size) in enumerate(units) if size <= 0), len(units))


def _end(w: dict) -> int:
    """Where the broker's recovery ended the commitlog: the offset it called ``truncateDirtyLogicFiles`` with."""
    at = w["truncateDirtyLogicFilesAt"]
    assert at > 0, w
    return int(at)


def _assert_written(name: str, d: Path, w: dict) -> None:
    """What the broker wrote and the restart found: T0/0's files 0 (two units) and 40 (all zeros); T0/1 per scenario;
    and which queues ``load()`` cut (``queuesAfterLoad``)."""
    assert w.get("ok"), w
    q0 = d / "before" / "consumequeue" / "T0" / "0"
    assert sorted(p.name for p in q0.iterdir()) == [f"{0:020d}", f"{FILE:020d}"], sorted(q0.iterdir())
    assert all(size > 0 for _, size in bh.cq_units(q0 / f"{0:020d}")), bh.cq_units(q0 / f"{0:020d}")
    assert not (q0 / f"{FILE:020d}").read_bytes().strip(b"\0")
    # put 2's unit never written again: the dispatch starts past it, the reput at the end
    assert not (d / "expected" / "consumequeue" / "T0" / "0" / f"{FILE:020d}").read_bytes().strip(b"\0")
    end, loaded = _end(w), w["queuesAfterLoad"]
    t00, t01 = loaded["T0/0"], loaded.get("T0/1")
    q1 = bh.cq_units(d / "before" / "consumequeue" / "T0" / "1" / f"{0:020d}")
    if "-prepared" in name:   # no cut: T0/0 as recover left it; puts 3 and 4 into T0/1, its max the prepared's start
        assert q1 == [(0, 0), (0, 0)], q1
        assert (t00["maxOffset"], t01["maxOffset"]) == (FILE, FILE) and t00["maxPhysicOffset"] > 0, loaded
        after = bh.cq_units(d / "expected" / "consumequeue" / "T0" / "1" / f"{0:020d}")
        assert after[1][0] + after[1][1] == t01["maxPhysicOffset"] < end, (end, after, loaded)
        return
    if name.endswith("-short"):   # no cut: T0/0 as recover left it; put 4 never dispatched
        assert q1[0][1] > 0 and q1[1] == (0, 0), q1
        assert (t00["maxOffset"], t01["maxOffset"]) == (FILE, UNIT) and t00["maxPhysicOffset"] > 0, loaded
        assert t01["maxPhysicOffset"] < end, (end, loaded)
        assert bh.cq_units(d / "expected" / "consumequeue" / "T0" / "1" / f"{0:020d}")[1] == (0, 0)
        return
    # the cut kept T0/0's unit of zeros in file 40: one unit further, max physical offset 0
    assert (t00["maxOffset"], t00["maxPhysicOffset"]) == (FILE + UNIT, 0), loaded
    if name.endswith("-past-end"):   # the damaged put 4 (T0/2) past the end: its only file deleted by the cut
        assert w["damagedRecord"] == end and "T0/2" in loaded and not loaded["T0/2"]["files"], (end, loaded)
        assert loaded["T0/2"]["maxPhysicOffset"] == -1, loaded   # correctMinOffset with no file (4.9.8, 5.3.3: end)
        assert t01["maxPhysicOffset"] == end and t01["maxOffset"] == UNIT, loaded
        return
    assert q1 == [(0, 0), (0, 0)], q1   # T0/1's only file all zeros; the dispatch wrote puts 3 and 4 into it
    assert (t01["maxOffset"], t01["maxPhysicOffset"]) == (FILE, end), (end, loaded)
    after = bh.cq_units(d / "expected" / "consumequeue" / "T0" / "1" / f"{0:020d}")
    assert after[1][0] + after[1][1] == end and after[0][0] + after[0][1] == after[1][0], after
    if name.endswith("-crash"):
        assert w["checkpointLogicsPhysicalOffset"] == after[0][0], w


@pytest.mark.parametrize("name", NAMES)
def test_verify_predicts_the_queues_as_the_5_5_1_load_left_them(written, name):
    """``verify``'s T0/0 and T0/1 (T0/2) have the write position and max physical offset the broker's queues had after
    ``load()``: after its dispatch (the report's write position plus the units it dispatched) and its cut (a queue it
    does not list: as on disk); put 2's unit lost (never dispatched); puts 3 and 4 written into T0/1."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    _assert_written(name, d, w)
    v = written["verify"]
    assert v["code"] in (0, 1) and v["report"] is not None, v["stderr"]
    p = v["report"]["restart"]
    assert not p["start_fails"], p
    listed = {q["queue"]: q for q in p["queues"]}
    crash = name.endswith("-crash")
    assert p["clean_shutdown"] is not crash, p
    for queue, s in sorted(w["queuesAfterLoad"].items()):
        q = listed.get(queue)
        if q is None:   # nothing happens to it: the broker's load left it as on disk
            assert s["maxOffset"] == _on_disk(d / "before" / "consumequeue" / queue), (queue, s, sorted(listed))
            continue
        moved = 0 if crash else q["units_dispatched_again"]   # the clean restart's dispatch: after the figures
        assert q["write_position"] + UNIT * moved == s["maxOffset"], (queue, q, s)
        assert moved or q["max_physic_offset"] == s["maxPhysicOffset"], (queue, q, s)
    assert listed["T0/0"]["units_lost"] == 1, listed["T0/0"]   # put 2's unit: never dispatched
    if "-short" not in name and "-past-end" not in name:   # puts 3 and 4 into T0/1: the dispatch's or the walk's
        t01 = listed["T0/1"]
        assert (t01["units_appended_by_recovery"], t01["units_dispatched_again"]) == ((2, 0) if crash else (0, 2)), t01
    if name.endswith("-short"):   # put 4's unit: at the queues' max, skipped
        assert listed["T0/1"]["units_lost"] == 1, listed["T0/1"]
    if name.endswith("-past-end"):
        assert listed["T0/2"]["units_truncated"] == 1 and listed["T0/2"]["files_deleted_by_truncate"], listed["T0/2"]

"""A broker start over an ordinary store (file consume queues, no DLedger) one of whose queues ends in a consume queue
file of zeros: the put that needed it had ``getLastMappedFile`` create the file (on disk at its full length at once)
after a full one, and the crash came before its unit reached the disk (harness ``zeroQueueTail``: the queue's last unit
zeroed).  Consume queue files of two units (``mappedFileSizeConsumeQueue=40``); puts 0-2 to T0/0 (file 0 full, file 40
holding put 2's unit), then puts 3-4 to T0/1; the restart keeps the queue files (``keepQueues``).

``ConsumeQueue.recover`` stops T0/0 at file 40's first unit (zeros) and keeps that file, its read position 0.
``-zeros-last``: T0/1's last unit (put 4) zeroed too, so the queues' max physical offset is put 3's end, below the
commitlog's end: 5.3.3's ``CommitLog.recoverNormally`` calls no ``truncateDirtyLogicFiles`` and dispatches only the
records past that max (put 2's record is not one), so T0/0's last file is still empty when ``recoverTopicQueueTable``
calls ``ConsumeQueue.correctMinOffset``, which on 5.3.3 reads the 20 bytes before that file's start: ``load()``
fails (``loadMayFail``).  ``verify`` says so (the rule: :func:`store_format.consumequeue_recovery.
correct_min_offset_fails`).  5.5.1 guards that read and loads the same store (its ``truncateDirty`` cuts nothing: the
max is below the end, and the recovery's dispatch leaves it so: ``verify`` cut T0/0 to one unit of zeros before it
modelled that), 4.9.8 reads the first file only: both start, and ``verify`` gives the broker's figures.
5.3.3 starts too where something writes that file first (``PIPELINES_FULL_SUITE=1``): ``-zeros-last-truncated`` (T0/1
not zeroed: the max is the commitlog's end, ``truncateDirtyLogicFiles`` keeps the file's first unit of zeros, read
position 20, max 0) and ``-zeros-last-dispatched`` (put 2 to T0/0 after a put to T0/1, both units zeroed: the
recovery's dispatch writes put 2's unit into that file).  ``-zeros-last-deleted``: the first store restarted with its
queue folders deleted (what ``rebuild --as-restart`` models; over kept queue files it warns that ``verify`` predicts
that start instead): 5.3.3 starts, and ``--as-restart`` writes its consume queue and index files byte for byte.

By default ``5.3.3-zeros-last``; the rest with ``PIPELINES_FULL_SUITE=1``.
"""
from __future__ import annotations

import os
from pathlib import Path

import broker_harness as bh
import pytest
from broker_layout_scenarios import Messages

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

FILE = 40   # two units a file


def _zeroed(*queues: int) -> list[dict]:
    return [{"path": f"consumequeue/T0/{q}", "units": 1, "unitSize": 20} for q in queues]


def zeros_last_scenarios(line: str) -> list[dict]:
    """``-zeros-last`` of ``line`` (module docstring); 5.3.3 adds ``-zeros-last-truncated`` and
    ``-zeros-last-dispatched``."""
    g = Messages(162, ["T0"], queues=1)
    msgs = [g.one(queueId=0) for _ in range(3)] + [g.one(queueId=1) for _ in range(2)]
    base = {"name": f"{line}-zeros-last", "keepQueues": True, "keepBefore": True, "loadMayFail": True, "messages": msgs,
            "config": {"mappedFileSizeCommitLog": str(32 * 1024), "mappedFileSizeConsumeQueue": str(FILE),
                       "maxHashSlotNum": "101", "maxIndexNum": "400"},
            "zeroQueueTail": _zeroed(0, 1)}
    if line != "5.3.3":
        return [base]
    # puts 0, 1 to T0/0, 2 to T0/1, 3 to T0/0: the max is put 1's end, put 2 starts there (not dispatched), put 3 is
    deleted = {k: v for k, v in base.items() if k not in ("keepQueues", "loadMayFail")}
    return [base, {**base, "name": f"{line}-zeros-last-truncated", "zeroQueueTail": _zeroed(0)},
            {**base, "name": f"{line}-zeros-last-dispatched", "messages": [msgs[0], msgs[1], msgs[3], msgs[2]]},
            {**deleted, "name": f"{line}-zeros-last-deleted"}]


FULL = os.environ.get("PIPELINES_FULL_SUITE", "") not in ("", "0")
SCENARIOS = {line: bh.bounded(zeros_last_scenarios(line), full_only=("-truncated", "-dispatched", "-deleted"))
             for line in (("5.3.3", "5.5.1", "4.9.8") if FULL else ("5.3.3",))}
FAILS = [pytest.param(sc["name"], id=sc["name"]) for sc in SCENARIOS["5.3.3"] if sc["name"] == "5.3.3-zeros-last"]
STARTS = bh.params_or_skip([pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs
                            if sc["name"] != "5.3.3-zeros-last" and "keepQueues" in sc], "PIPELINES_FULL_SUITE=1")
DELETED = bh.params_or_skip([pytest.param(sc["name"], id=sc["name"]) for sc in SCENARIOS["5.3.3"]
                             if "keepQueues" not in sc], "PIPELINES_FULL_SUITE=1")
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "file queue store(s) ending a queue in a file of zeros, restarted", threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker's restart found it (``before/``) and what it did, with our ``verify`` of
    ``before/`` (every scenario once)."""
    return bh.restart_run(request, _RUNS, STORES)



def _assert_zeros_last(d: Path) -> None:
    """What the broker wrote and the restart found: T0/0's files 0 (two units) and 40 (all zeros)."""
    q = d / "before" / "consumequeue" / "T0" / "0"
    assert sorted(p.name for p in q.iterdir()) == [f"{0:020d}", f"{FILE:020d}"], sorted(q.iterdir())
    assert all(size > 0 for _, size in bh.cq_units(q / f"{0:020d}")), bh.cq_units(q / f"{0:020d}")
    assert len((q / f"{FILE:020d}").read_bytes()) == FILE and not (q / f"{FILE:020d}").read_bytes().strip(b"\0")


@pytest.mark.parametrize("name", FAILS)
def test_a_5_3_3_start_over_an_empty_last_file_fails(written, name):
    """``5.3.3-zeros-last``: the broker's ``load()`` failed; ``verify`` predicts that failure for T0/0 alone."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    _assert_zeros_last(d)
    assert w.get("loadFailed"), w
    p = bh.verified(d / "before", d / "broker.conf", "5")["restart"]
    failing = {q["queue"]: q["load_failure"] for q in p["queues"] if q["load_failure"]}
    assert p["start_fails"] and list(failing) == ["T0/0"], p
    assert "5.3.3 store's start fails (ConsumeQueue.correctMinOffset" in failing["T0/0"], failing


@pytest.mark.parametrize("name", STARTS)
def test_a_start_that_loads_is_predicted_as_the_broker_loaded_it(written, name):
    """The stores 5.5.1, 4.9.8 and 5.3.3 (something writes the empty file first) start over: ``load()`` succeeded, and
    ``verify``'s T0/0 (listed: put 2's unit is lost or dispatched again) has the write position and max physical
    offset the broker's queue had after ``load()``; no start failure predicted."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    _assert_zeros_last(d)
    assert w.get("ok") and not w.get("loadFailed"), w
    v = written["verify"]
    assert v["code"] in (0, 1) and v["report"] is not None, v["stderr"]
    p = v["report"]["restart"]
    listed = {q["queue"]: q for q in p["queues"]}
    assert not p["start_fails"] and "T0/0" in listed, p
    loaded, q = w["queuesAfterLoad"]["T0/0"], listed["T0/0"]
    # the report's figures are the queue's before the start's dispatch; 5.x dispatches in load() (recoverNormally)
    dispatched = q["units_dispatched_again"] if written["line"] != "4.9.8" else 0
    assert q["write_position"] + 20 * dispatched == loaded["maxOffset"], (q, loaded)
    assert dispatched or q["max_physic_offset"] == loaded["maxPhysicOffset"], (q, loaded)


@pytest.mark.parametrize("name", DELETED)
def test_as_restart_over_the_same_commitlog_with_the_queues_deleted_is_the_5_3_3_start(written, name):
    """``5.3.3-zeros-last-deleted``: the broker started (its recovery rebuilt T0/0 from no file: files 0 and 40, put
    2's unit in the second); ``rebuild --as-restart`` of ``before/`` writes its consume queue and index files."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    assert w.get("ok") and not w.get("loadFailed") and not (d / "before" / "consumequeue").exists(), w
    q = d / "expected" / "consumequeue" / "T0" / "0"
    assert sorted(p.name for p in q.iterdir()) == [f"{0:020d}", f"{FILE:020d}"], sorted(q.iterdir())
    assert bh.cq_units(q / f"{FILE:020d}")[0][1] > 0, bh.cq_units(q / f"{FILE:020d}")
    bh.restart_files_are_the_broker_s(written)

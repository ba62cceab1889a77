"""A 5.5.1 start whose recovery's ``truncateDirtyLogicFiles`` deletes the last file of a topic "" queue its crash walk
opened (``consumequeue/<queueId>/<file>``: multi-dispatch requests naming an empty queue,
``ConsumeQueue.multiDispatchLmqQueue``), with ``recheckReputOffsetFromCq=true``: the queue table's max physical
offset, where the second reput (``doRecheckReputOffsetFromCq``) starts, then comes from the file before it, which
:func:`store_format.empty_topic_restart.table_max_beside_own` does not model (None), so ``verify`` predicts no restart
(one line) instead of a start from the own queues alone.

``-truncate-deletes``: tests/test_light_empty_restart_533_broker.py's ``-empty-last`` store (files of two units;
topic "" queue 1's file 0 full with the units asked for 0 and 9, one more request asking for 1, which opens file 40
and is dropped), then D (plain, damaged: the walk stops there) and N (a request asking topic "" queue 1 for 2: the
broker's puts wrote it at file 40's unit 0); queues kept, an abort file.  The walk dispatches every record before D,
queue 1 opened afresh over its held files: file 0 written again, file 40 opened and nothing put.  N's units put the
loaded queues' max past D, so ``truncateDirtyLogicFiles(D)`` runs over every queue: queue 1's last file starts with
N's unit, at or past D: deleted, and its max the last unit of file 0.

Each test first asserts what the broker wrote (where it truncated, file 40 deleted, queue 1's table entry after the
load), then ``verify`` of ``before/``.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_layout_scenarios import Messages
from test_light_empty_reput_again_498_broker import _puts
from test_light_empty_restart_533_broker import _empty_last

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
FIRST, SECOND = f"{0:020d}", f"{40:020d}"


def truncate_deletes_scenario(line: str = LINE) -> dict:
    """``-truncate-deletes`` (module docstring)."""
    base = {k: v for k, v in _empty_last(line).items() if k not in ("keepBefore", "loadMayFail")}
    g = Messages(143, ["T1"], queues=2)
    damaged, n = g.one(topic="T1", queueId=0), g.one(
        topic="T1", queueId=1, properties={"INNER_MULTI_DISPATCH": ",%LMQ%a", "INNER_MULTI_QUEUE_OFFSET": "2,4"})
    return {**base, "name": f"{line}-light-empty-files-truncate-deletes", "messages": [*base["messages"], damaged, n],
            "config": {**base["config"], "recheckReputOffsetFromCq": "true"}, "keepQueues": True, "abort": True,
            "damageMessage": len(base["messages"])}


SCENARIOS = {LINE: [truncate_deletes_scenario()]}
CASES = [pytest.param(sc["name"], id=sc["name"]) for sc in SCENARIOS[LINE]]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "5.5.1 store whose truncate deletes a reopened topic \"\" file", threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker's restart found it (``before/``) and left it (``expected/``), with our ``verify``
    of ``before/``."""
    return bh.restart_run(request, _RUNS, STORES)


def _unit_offsets(path: Path) -> list[int]:
    return [at for at, size in bh.cq_units(path) if size > 0]


@pytest.mark.parametrize("name", CASES)
def test_the_truncate_deletes_the_reopened_queue_s_last_file(written, name):
    """What the broker wrote: truncated at D (the walk's end); ``before/``'s topic "" queue 1 file 40 starts with N's
    unit, past D; after the load queue 1 (the walk's) has file 0 alone, its max the end of that file's last unit
    (the request asking for 9), and file 40 is gone from ``expected/``."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    puts = _puts(d)
    dmg, n = puts[written["scenario"]["damageMessage"]], puts[written["scenario"]["damageMessage"] + 1]
    assert w.get("damagedRecord") == dmg and w["truncateDirtyLogicFilesAt"] == dmg, (w.get("damagedRecord"), puts)
    before, after = d / "before" / "consumequeue" / "1", d / "expected" / "consumequeue" / "1"
    assert _unit_offsets(before / SECOND)[:1] == [n] and n > dmg, (_unit_offsets(before / SECOND), n, dmg)
    assert _unit_offsets(before / FIRST) == [puts[2], puts[6]], _unit_offsets(before / FIRST)
    assert not (after / SECOND).exists() and (after / FIRST).is_file(), sorted(p.name for p in after.iterdir())
    q = w["queuesAfterLoad"]["/1"]
    assert (q["files"], q["maxPhysicOffset"]) == ([FIRST], puts[7]), q


@pytest.mark.parametrize("name", CASES)
def test_verify_does_not_predict_a_start_from_an_unknown_table_max(written, name):
    """``verify`` of ``before/``: no restart predicted, the one line saying the truncate deletes a reopened topic ""
    queue's last file (the second reput's start, the table's max, not known)."""
    v = written["verify"]
    assert v["report"] is not None and v["code"] in (0, 1), v["stderr"]
    assert v["report"]["restart"] is None, v["report"]["restart"] and v["report"]["restart"]["notes"]
    why = v["report"]["restart_note"]
    assert why.startswith("not predicted: ") and "truncateDirtyLogicFiles deletes the last file of a topic" in why \
        and "\n" not in why, why

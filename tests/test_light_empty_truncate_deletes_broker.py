"""A start whose recovery's ``truncateDirtyLogicFiles`` deletes the last file of a topic "" queue its crash walk
opened (``consumequeue/<queueId>/<file>``: multi-dispatch requests naming an empty queue,
``ConsumeQueue.multiDispatchLmqQueue``): that queue's max physical offset, which the reput set from the whole queue
table reads (5.x ``doRecheckReputOffsetFromCq`` with ``recheckReputOffsetFromCq=true``, 4.9.8's reput), then comes
from the file before it (:func:`store_format.empty_topic_restart.truncate_reopened`), and the deleted file is one
more file the start removes from topic "".

``-truncate-deletes``: tests/test_light_empty_restart_533_broker.py's ``-empty-last`` store (files of two units;
topic "" queue 1's file 0 full with the units asked for 0 and 9, one more request asking for 1, which opens file 40
and is dropped), then D (plain, damaged: the walk stops there) and N (a request asking topic "" queue 1 for 2: the
broker's puts wrote it at file 40's unit 0); queues kept, an abort file.  The walk dispatches every record before D,
queue 1 opened afresh over its held files: file 0 written again, file 40 opened and nothing put.  N's units put the
loaded queues' max past D, so ``truncateDirtyLogicFiles(D)`` runs over every queue: queue 1's last file starts with
N's unit, at or past D: deleted, and its max the end of the last unit of file 0 (which ``getLastMappedFile`` found
full: the dispatch's alone).

By default 5.5.1 with ``recheckReputOffsetFromCq=true``; ``PIPELINES_FULL_SUITE=1`` adds 5.5.1 without it (no second
reput: the file deleted all the same) and 5.3.3 with it (the truncate leaves the reopened queue no empty last file,
so ``ConsumeQueue.correctMinOffset`` does not fail the start).

Each test first asserts what the broker wrote (where it truncated, file 40 deleted, queue 1's table entry after the
load, where its second reput started), then ``verify`` of ``before/``.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_layout_scenarios import Messages
from test_light_empty_reopen_broker import _units
from test_light_empty_reput_again_498_broker import _puts
from test_light_empty_restart_533_broker import _empty_last

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
FIRST, SECOND = f"{0:020d}", f"{40:020d}"


def truncate_deletes_scenario(line: str = LINE, recheck: bool = True) -> dict:
    """``-truncate-deletes`` (module docstring), with ``recheckReputOffsetFromCq=true`` (``recheck``) or without
    (``-no-recheck``)."""
    base = {k: v for k, v in _empty_last(line).items() if k not in ("keepBefore", "loadMayFail")}
    g = Messages(143, ["T1"], queues=2)
    damaged, n = g.one(topic="T1", queueId=0), g.one(
        topic="T1", queueId=1, properties={"INNER_MULTI_DISPATCH": ",%LMQ%a", "INNER_MULTI_QUEUE_OFFSET": "2,4"})
    return {**base, "name": f"{line}-light-empty-files-truncate-deletes{'' if recheck else '-no-recheck'}",
            "messages": [*base["messages"], damaged, n],
            "config": {**base["config"], **({"recheckReputOffsetFromCq": "true"} if recheck else {})},
            "keepQueues": True, "abort": True, "damageMessage": len(base["messages"])}


SCENARIOS = {LINE: bh.bounded([truncate_deletes_scenario(), truncate_deletes_scenario(recheck=False)],
                              full_only=("-no-recheck",)),
             "5.3.3": bh.bounded([truncate_deletes_scenario("5.3.3")], full_only=("-truncate-deletes",))}
CASES = [pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "5.x store(s) whose truncate deletes a reopened topic \"\" file", threads=1)


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


def _recheck(written: dict) -> bool:
    return written["scenario"]["config"].get("recheckReputOffsetFromCq") == "true"


def _broker_topic_empty(d: Path) -> tuple[dict[int, list[str]], dict[int, int], int]:
    """What the broker's start left of topic ""'s files: per queue id its files after the start
    (``expected/consumequeue/<queueId>/``) and how many units of ``before/`` are no longer there (overwritten or in a
    deleted file); and how many of ``before/``'s files differ after it (deleted ones too)."""
    before, after = d / "before" / "consumequeue", d / "expected" / "consumequeue"
    names = {int(f.name): sorted(p.name for p in f.iterdir()) for f in after.iterdir() if f.name.isdigit()}
    lost, changed = {}, 0
    for folder in (f for f in before.iterdir() if f.name.isdigit()):
        was, now = set(), set()
        for f in folder.iterdir():
            kept = after / folder.name / f.name
            was |= set(_units(f).values())
            now |= set(_units(kept).values()) if kept.exists() else set()
            changed += not kept.exists() or f.read_bytes() != kept.read_bytes()
        lost[int(folder.name)] = len(was - now)
    return names, lost, changed


@pytest.mark.parametrize("name", CASES)
def test_verify_predicts_the_start_past_the_deleted_file(written, name):
    """``verify`` of ``before/``: a restart predicted (no line saying it is not); where the second reput starts,
    the broker's (the largest max of its queue table after the load; no second reput without the setting); topic
    "" queue 1 with file 40 deleted by the truncate, its max and write position the broker's after the load; topic
    ""'s files after the start (the store's, less those deleted), the units of the store's files gone and how many
    files differ, the broker's."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    v = written["verify"]
    assert v["report"] is not None and v["code"] in (0, 1), v["stderr"]
    restart = v["report"]["restart"]
    assert restart is not None, v["report"]["restart_note"]
    table = max(0, *(s["maxPhysicOffset"] for s in w["queuesAfterLoad"].values()))
    assert restart["second_reput_from"] == (table if _recheck(written) else None), \
        (restart["second_reput_from"], table)
    load = w["queuesAfterLoad"]["/1"]
    q = next((q for q in restart["queues"] if q["queue"] == "/1"), None)
    assert q is not None, restart["notes"]
    assert (q["files_deleted_by_truncate"], q["max_physic_offset"], q["write_position"]) == \
        ([SECOND], load["maxPhysicOffset"], load["maxOffset"]), (q, load)
    deleted = {int(q["queue"][1:]): set(q["files_deleted_by_truncate"]) for q in restart["queues"]
               if q["queue"].startswith("/")}
    before = d / "before" / "consumequeue"
    ours = {int(f.name): sorted(p.name for p in f.iterdir() if p.name not in deleted.get(int(f.name), ()))
            for f in before.iterdir() if f.name.isdigit()}
    names, lost, changed = _broker_topic_empty(d)
    assert names[1] == [FIRST] and lost[1] >= 1 and changed >= 1, (names, lost, changed)
    assert ours == names, (ours, names)
    assert {int(q["queue"][1:]): q["units_lost"] for q in restart["queues"] if q["queue"].startswith("/")} == \
        {k: n for k, n in lost.items() if n or k in deleted}, (restart["queues"], lost)
    notes = [n for n in restart["notes"] if n.startswith('topic "" queues')]
    assert len(notes) == 1 and "not predicted" not in notes[0] and "reopens queue(s) 0, 1 " in notes[0] \
        and f"{changed} file(s) then differing" in notes[0], notes
    assert f"the recovery's truncate deletes {SECOND}" in q["note"], q["note"]

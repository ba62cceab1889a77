"""The 5.x brokers' restart over topic ""'s consume queue files (``consumequeue/<queueId>/<file>``: multi-dispatch
requests naming an empty queue, ``ConsumeQueue.multiDispatchLmqQueue``), queues kept, where the recovery's
``truncateDirtyLogicFiles`` leaves the own queues' max physical offset before a queued empty-name record: the
``-small`` (a crash walk) and ``-small-clean`` stores of tests/test_light_empty_reput_again_498_broker.py (m0, R0,
p1, R, D damaged, N; T0/0's and %LMQ%a/0's second file, N's, planted as zeros), with
``recheckReputOffsetFromCq=true`` (``-recheck``) and without.

Both lines truncate at D; after the load the own queues' max is R's offset (T1/1's p1), the topic "" queue a crash
walk opened ends at D, and the queues the load made of topic "0"'s file names (``0/0``, ``0/40``, no file) have
the max the truncate set, D, on 5.3.3, and -1 on 5.5.1 (``ConsumeQueue.correctMinOffset`` resetting a queue with
no file).  ``doRecheckReputOffsetFromCq``'s second reput starts at the whole table's max: D (nothing again) but on
5.5.1 after a clean start, R, which it dispatches again: topic "" queue 0 opened afresh over its held file, R put at
unit 0 over R0 (and appended to %LMQ%a/0).  Without the setting the reput starts at the commitlog's end.

Each test first asserts what the broker wrote (the queue table after the load, where its second reput started:
that table's max, the files after the start), then ``verify`` of ``before/``: the second reput's start is the
table's max (:func:`store_format.empty_topic_restart.reput_start_over_table`, with
:func:`store_format.empty_topic_restart.table_max_beside_own`); topic "" predicted as the broker's files give it:
nothing put again, or on 5.5.1's clean start R put by the second reput onto the queue it creates afresh over the
held file (:func:`store_format.empty_topic_restart.opened_afresh`); T0/0 and %LMQ%a/0 as the broker's table after
the load (the truncate took their zeroed last file's first unit: max 0) and the units its dispatches put there: on
5.5.1's clean start R appended again to %LMQ%a/0, its request naming queue offset 0 (pipelines/verify/restart_recheck.py
``held_put_again``).

By default 5.5.1's ``-small-clean-recheck``; ``PIPELINES_FULL_SUITE=1`` adds 5.5.1's other three and 5.3.3's four.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from test_light_empty_reopen_broker import _units, broker_topic_empty
from test_light_empty_reput_again_498_broker import DAMAGED, FIRST, SECOND, _puts, reput_again_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()


def small_scenarios(line: str) -> list[dict]:
    """``-small`` and ``-small-clean`` of ``line``, with ``recheckReputOffsetFromCq=true`` (``-recheck``) and
    without."""
    shapes = [sc for sc in reput_again_scenarios(line) if "-small" in sc["name"]]
    return [*({**sc, "name": f"{sc['name']}-recheck", "config": {**sc["config"], "recheckReputOffsetFromCq": "true"}}
              for sc in shapes), *shapes]


SCENARIOS = {"5.5.1": bh.bounded(small_scenarios("5.5.1"), full_only=("-small-recheck", "-small", "-small-clean")),
             "5.3.3": bh.bounded(small_scenarios("5.3.3"), full_only=("-small-recheck", "-small", "-small-clean",
                                                                      "-small-clean-recheck"))}
CASES = [pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "5.x store(s) whose own queues' max lies before a queued empty-name record",
                   threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker's restart found it (``before/``) and left it (``expected/``), with our ``verify``
    of ``before/``."""
    return bh.restart_run(request, _RUNS, STORES)


def _shape(written: dict) -> tuple[bool, bool, bool]:
    """(a crash walk, the second reput on, 5.5.1)."""
    sc = written["scenario"]
    return bool(sc.get("abort")), sc["config"].get("recheckReputOffsetFromCq") == "true", written["line"] == "5.5.1"


def _broker_second_reput(written: dict) -> int | None:
    """Where the broker's second reput started: the largest ``getMaxPhysicOffset`` of its queue table after the load
    (``queuesAfterLoad``: every queue, after ``recoverTopicQueueTable``), at least the commitlog's min offset, 0
    (None: no second reput)."""
    if not _shape(written)[1]:
        return None
    return max(0, *(s["maxPhysicOffset"] for s in written["written"]["queuesAfterLoad"].values()))


@pytest.mark.parametrize("name", CASES)
def test_the_second_reput_starts_at_the_whole_table_s_max(written, name):
    """What the broker wrote: truncated at D; after the load T1/1 R's offset, T0/0 and %LMQ%a/0 0, topic "0"'s
    file-name queues D on 5.3.3, -1 on 5.5.1, the crash walk's topic "" queue 0 D; its second reput from that
    table's max, which dispatches R again on 5.5.1 after a clean start only: topic "" queue 0's first file R, R
    (afresh over R0, R), %LMQ%a/0 one unit more; every other start leaves topic "" and the queues as loaded."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    walked, recheck, v551 = _shape(written)
    puts = _puts(d)
    r0, r, dmg = (puts + [None] * 6)[1], (puts + [None] * 6)[3], (puts + [None] * 6)[DAMAGED]
    assert w.get("damagedRecord") == dmg and w["truncateDirtyLogicFilesAt"] == dmg, (w.get("damagedRecord"), puts)
    loaded = w["queuesAfterLoad"]
    got = {q: (s["files"], s["maxPhysicOffset"]) for q, s in loaded.items() if not q.startswith(("SCHEDULE", "rmq"))}
    names = -1 if v551 else dmg   # the file-name queues after recoverTopicQueueTable
    assert got == {"T1/0": ([FIRST], r0), "T0/0": ([FIRST, SECOND], 0), "%LMQ%a/0": ([FIRST, SECOND], 0),
                   "T1/1": ([FIRST], r), "0/0": ([], names), "0/40": ([], names),
                   **({"/0": ([FIRST], dmg)} if walked else {})}, got
    again = v551 and recheck and not walked   # the second reput from R's offset
    assert _broker_second_reput(written) == (None if not recheck else r if again else dmg)
    after = {q: (s["maxPhysicOffset"], s["maxOffset"]) for q, s in w["queuesAfterDispatch"].items() if q in got}
    lmq = {"%LMQ%a/0": (dmg, loaded["%LMQ%a/0"]["maxOffset"] + 20)} if again else {}
    assert after == {**{q: (s["maxPhysicOffset"], s["maxOffset"]) for q, s in loaded.items() if q in got}, **lmq}, \
        after
    before, expected = d / "before" / "consumequeue" / "0", d / "expected" / "consumequeue" / "0"
    assert _units(before / FIRST) == {0: r0, 1: r} and _units(before / SECOND) == {0: puts[5]}
    assert _units(expected / FIRST) == ({0: r, 1: r} if again else {0: r0, 1: r})
    bh.same_bytes((before / SECOND).read_bytes(), (expected / SECOND).read_bytes(), f"consumequeue/0/{SECOND}")
    if again:
        assert w["queuesAfterDispatch"]["/0"]["maxPhysicOffset"] == dmg, w["queuesAfterDispatch"].get("/0")


@pytest.mark.parametrize("name", CASES)
def test_verify_takes_the_second_reput_from_the_whole_table(written, name):
    """``verify`` of ``before/``: the second reput where the broker's started (the table's max: its
    ``second_reput_from``); topic "" queue 0 as the broker's files give it (units put and lost, files differing): on
    5.5.1's clean store with the setting the second reput's R onto the queue it creates afresh over the held file,
    else the crash walk's puts or none; T0/0 and %LMQ%a/0 as the broker's table gives them after the load (write
    position, max 0: the truncate took their zeroed last file's first unit) and the units its dispatches put there:
    on 5.5.1's clean store with the setting R appended again to %LMQ%a/0 (its request names queue offset 0, so
    ``putMessagePositionInfo`` skips the repeated-build check), dropped by T0/0 (queue offset 1, behind its write
    position)."""
    d = Path(written["scenario"]["dir"])
    walked, recheck, v551 = _shape(written)
    v = written["verify"]
    assert v["report"] is not None and v["code"] in (0, 1), v["stderr"]
    restart = v["report"]["restart"]
    assert restart["second_reput_from"] == _broker_second_reput(written), restart["second_reput_from"]
    notes = [n for n in restart["notes"] if n.startswith('topic "" queues')]
    ours = {int(q["queue"][1:]): (q["units_dispatched_again"], q["units_lost"]) for q in restart["queues"]
            if q["queue"].startswith("/")}
    truth, changed = broker_topic_empty(d, written["written"])
    again = v551 and recheck and not walked   # the broker put R again (over R0's unit: 1 put, 1 lost, 1 file)
    assert truth == {0: (1, 1) if again else (2, 0) if walked else (0, 0)} and changed == int(again), (truth, changed)
    assert ours == {q: t for q, t in truth.items() if t != (0, 0)}, (restart["queues"], notes)
    assert len(notes) == 1 and "not predicted" not in notes[0] and (
        "reopens queue(s) 0 " in notes[0] and f"{changed} file(s) then differing" in notes[0] if walked or again
        else "dispatches no such record: they stay byte for byte" in notes[0]), notes
    w = written["written"]
    for qn in ("T0/0", "%LMQ%a/0"):   # as loaded, then what the start's dispatches put: the broker's, then ours
        load, after = w["queuesAfterLoad"][qn], w["queuesAfterDispatch"][qn]
        put = (after["maxOffset"] - load["maxOffset"]) // 20
        assert (load["maxPhysicOffset"], put) == (0, int(again and qn == "%LMQ%a/0")), (qn, load, after)
        q = next(q for q in restart["queues"] if q["queue"] == qn)
        assert (q["write_position"], q["max_physic_offset"], q["units_dispatched_again"]) == \
            (load["maxOffset"], load["maxPhysicOffset"], put), (qn, q, load)
    assert not [q for q in restart["queues"] if q["units_dispatched_again"]
                and q["queue"] not in ("%LMQ%a/0", "T0/0") and not q["queue"].startswith("/")], restart["queues"]

"""A broker restarted with ``enableMultiDispatch=false`` over a store written with it on: topic ""'s consume queue
files (``consumequeue/<queueId>/<file>``: multi-dispatch requests naming an empty queue,
``ConsumeQueue.multiDispatchLmqQueue``) are still there, and the start's load makes queues of their names whatever
that setting (4.9.8 ``DefaultMessageStore.loadConsumeQueue``, 5.x ``ConsumeQueueStore.loadConsumeQueues``: topic
"<queueId>", queue ``Integer.parseInt(name)``, no file), which the reput set from the whole queue table reads.

The ``-small`` (a crash walk) and ``-small-clean`` stores of tests/test_light_empty_reput_again_498_broker.py (m0,
R0, p1, R, D damaged, N; T0/0's and %LMQ%a/0's second file planted as zeros), their puts with
``enableMultiDispatch=true`` (``putSettings``), the restart (and broker.conf, which ``verify`` reads) with it off
(``-off``); on 5.x with ``recheckReputOffsetFromCq=true``.  Both lines truncate at D; the own queues' max after the
load is R's offset (T1/1's p1), no topic "" queue is opened (the recovery's dispatch puts no multi-dispatch unit),
and the queues made of topic "0"'s file names (``0/0``, ``0/40``) have the max the truncate set, D (5.5.1: -1,
``ConsumeQueue.correctMinOffset``).  So the 4.9.8 reput starts at D, 5.3.3's second reput at D, 5.5.1's at R; the
files stay as they were (R put again to T0/0 is dropped behind its write position).

Each test first asserts what the broker wrote (the queue table after the load and after the reput, where its reput
started, the topic "" files after the start), then ``verify`` of ``before/``: the reput from the whole table's max
(:func:`store_format.empty_topic_restart.table_max_beside_own` with the setting off: the file-name queues alone).

By default 4.9.8's and 5.3.3's ``-small-clean...-off``; ``PIPELINES_FULL_SUITE=1`` adds the crash walks and 5.5.1.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from test_light_empty_reopen_broker import broker_topic_empty
from test_light_empty_reput_again_498_broker import DAMAGED, FIRST, SECOND, _puts, reput_again_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()


def off_scenarios(line: str) -> list[dict]:
    """``-small`` and ``-small-clean`` of ``line``, written with ``enableMultiDispatch=true``, restarted with it off
    (5.x: with the second reput)."""
    recheck = {"recheckReputOffsetFromCq": "true"} if line != "4.9.8" else {}
    return [{**sc, "name": f"{sc['name']}{'-recheck' if recheck else ''}-off",
             "config": {**sc["config"], **recheck, "enableMultiDispatch": "false"},
             "putSettings": {"enableMultiDispatch": "true"}}
            for sc in reput_again_scenarios(line) if "-small" in sc["name"]]


SCENARIOS = {"4.9.8": bh.bounded(off_scenarios("4.9.8"), full_only=("-small-off",)),
             "5.3.3": bh.bounded(off_scenarios("5.3.3"), full_only=("-small-recheck-off",)),
             "5.5.1": bh.bounded(off_scenarios("5.5.1"), full_only=("-off",))}
CASES = [pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "store(s) written with enableMultiDispatch=true, restarted with it off", threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker's restart found it (``before/``) and left it (``expected/``), with our ``verify``
    of ``before/``."""
    return bh.restart_run(request, _RUNS, STORES)


def _broker_reput(written: dict) -> int:
    """Where the broker's reput set from the whole queue table started (4.9.8 ``DefaultMessageStore.start``, 5.x
    ``doRecheckReputOffsetFromCq``): the largest ``getMaxPhysicOffset`` of its table after the load
    (``queuesAfterLoad``: every queue, after ``recoverTopicQueueTable``), at least 0 (the commitlog's min)."""
    return max(0, *(s["maxPhysicOffset"] for s in written["written"]["queuesAfterLoad"].values()))


@pytest.mark.parametrize("name", CASES)
def test_the_file_name_queues_set_the_reput_with_multi_dispatch_off(written, name):
    """What the broker wrote: it ran with the setting off (broker.conf) and truncated at D; after the load T1/1 R's
    offset, T0/0 and %LMQ%a/0 0, topic "0"'s file-name queues D (5.5.1: -1) and no topic "" queue, after a crash walk
    too; its reput from that table's max (D; 5.5.1: R); after it the queues as loaded and topic ""'s files as
    found."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    conf = (d / "broker.conf").read_text().split()
    assert "enableMultiDispatch=false" in conf and ("recheckReputOffsetFromCq=true" in conf) == \
        (written["line"] != "4.9.8"), conf
    puts = _puts(d)
    r0, r, dmg = (puts + [None] * 6)[1], (puts + [None] * 6)[3], (puts + [None] * 6)[DAMAGED]
    assert w.get("damagedRecord") == dmg and w["truncateDirtyLogicFilesAt"] == dmg, (w.get("damagedRecord"), puts)
    loaded = w["queuesAfterLoad"]
    got = {q: (s["files"], s["maxPhysicOffset"]) for q, s in loaded.items() if not q.startswith(("SCHEDULE", "rmq"))}
    names = -1 if written["line"] == "5.5.1" else dmg
    assert got == {"T1/0": ([FIRST], r0), "T0/0": ([FIRST, SECOND], 0), "%LMQ%a/0": ([FIRST, SECOND], 0),
                   "T1/1": ([FIRST], r), "0/0": ([], names), "0/40": ([], names)}, got
    assert _broker_reput(written) == (r if written["line"] == "5.5.1" else dmg)
    after = {q: (s["maxPhysicOffset"], s["maxOffset"]) for q, s in w["queuesAfterDispatch"].items()
             if not q.startswith(("SCHEDULE", "rmq"))}
    assert after == {q: (s["maxPhysicOffset"], s["maxOffset"]) for q, s in loaded.items() if q in got}, after
    for f in (FIRST, SECOND):
        bh.same_bytes((d / "before" / "consumequeue" / "0" / f).read_bytes(),
                      (d / "expected" / "consumequeue" / "0" / f).read_bytes(), f"consumequeue/0/{f} after the start")


@pytest.mark.parametrize("name", CASES)
def test_verify_takes_the_reput_from_the_whole_table_with_multi_dispatch_off(written, name):
    """``verify`` of ``before/`` (with the setting off): the reput where the broker's started (4.9.8: its
    ``reput_from``; 5.x: ``second_reput_from``), no unit put again, topic "" queue 0 left as found (one note line, not
    "not predicted")."""
    d = Path(written["scenario"]["dir"])
    v = written["verify"]
    assert v["report"] is not None and v["code"] in (0, 1), v["stderr"]
    restart = v["report"]["restart"]
    assert restart is not None, v["report"].get("no_prediction")
    start = restart["reput_from"] if written["line"] == "4.9.8" else restart["second_reput_from"]
    assert start == _broker_reput(written), (start, _broker_reput(written))
    truth, changed = broker_topic_empty(d, written["written"])
    assert truth == {0: (0, 0)} and changed == 0, (truth, changed)
    assert not [q for q in restart["queues"] if q["units_dispatched_again"]], restart["queues"]
    notes = [n for n in restart["notes"] if n.startswith('topic "" queues')]
    assert len(notes) == 1 and "dispatches no such record: they stay byte for byte" in notes[0], notes

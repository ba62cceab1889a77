"""A file consume queue holding a record's own units *and* light ones (``%LMQ%x``, queue 0: messages put to topic
``%LMQ%x`` itself between messages to T0/0 that multi-dispatch to it, ``enableMultiDispatch``/``enableLmq``), crashed
and restarted on an ordinary commitlog by the 5.3.3 broker (and the 4.9.8 one with ``PIPELINES_FULL_SUITE=1``),
whose ``CommitLog.recoverAbnormally`` walks from a whole commitlog file chosen by the checkpoint's timestamps (the
shape of :mod:`test_restart_zeros_loaded_queue_lines_broker`: file 1, opened before a 4 s pause).  The 5.5.1
accelerated case is :mod:`test_restart_mixed_queue_broker`.

Both lines take the own puts' queue offsets and the light ones' from two counters: 5.3.3's ``QueueOffsetOperator``
(``topicQueueTable``, ``lmqTopicQueueTable``); 4.9.8 likewise with ``enableLmq=true`` (``CommitLog``'s append
callback reads ``topicQueueTable`` for the record's own topic-queue key, ``MultiDispatch.getTopicQueueOffset`` and
``updateMultiQueueOffset`` ``lmqTopicQueueTable`` for a ``%LMQ%`` key); only with ``enableLmq=false`` would a light
put to ``%LMQ%x`` share the own puts' counter (its key then the same ``%LMQ%x-<queueId>`` in ``topicQueueTable``,
from the record's own queue id). So the 4.9.8 broker reaches the shape too.

Puts: own 0, light 0 (file 0), T1/0 fillers until one opens file 1, then own 1, light 1, ..., own 3, light 3, the
pause, a last T1/0 put.  The reput's ``putMessagePositionInfo`` writes own 0 at 0, light 0 at 20 (queue offset 0
passes no check), drops own 1 and light 1 (20 < 40), appends own 2 at 40 and own 3 at 60, drops lights 2 and 3.

* ``-mixedq-crash-kept``: an ``abort`` file, the queues kept, the last three units of ``%LMQ%x/0`` zeroed (own 0
  alone left): the walk from file 1 appends own 1 at 20 (light 0's record is in file 0, not walked), drops light 1,
  appends own 2 and 3, drops lights 2 and 3.  ``verify`` on ``before/`` must predict the queue's end, max and the
  units the walk appended.
* ``-mixedq-crash``: the same crash with the queue folders deleted: the walk's own 1 (queue offset 1) goes at 20
  after a ``fillPreBlank`` unit; ``rebuild --as-restart`` must write the broker's files byte for byte.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import numpy as np
import pytest
from test_restart_zeros_loaded_queue_lines_broker import (
    CONFIG,
    SIZE,
    queue_entry,
    records,
    units,
    walk_shaped,
    walk_starts_at_file_1,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LMQ = "%LMQ%x"
MIXED = {**CONFIG, "enableMultiDispatch": "true", "enableLmq": "true"}
OWN = {"topic": LMQ, "queueId": 0, "bodySize": 100}
LIGHT = {"topic": "T0", "queueId": 0, "bodySize": 120, "properties": {"INNER_MULTI_DISPATCH": LMQ}}


def _pairs(first: int, n: int) -> list[dict]:
    """own i, light i for i in [first, first + n), each with its own key and unique key."""
    return [{**m, "keys": f"K{2 * i + k}", "uniqKey": f"7F00000100002A9F0000000000{2 * i + k:06X}"}
            for i in range(first, first + n) for k, m in enumerate((OWN, LIGHT))]


def _scenarios(line: str) -> list[dict]:
    crash = {"abort": True, "config": MIXED,
             "messages": walk_shaped(_pairs(0, 1), 4, _pairs(1, 3), {"topic": "T1", "queueId": 0, "bodySize": 100})}
    return [{**crash, "name": f"{line}-mixedq-crash-kept", "keepQueues": True,
             "zeroQueueTail": [{"path": f"consumequeue/{LMQ}/0", "units": 3, "unitSize": 20}]},
            {**crash, "name": f"{line}-mixedq-crash"}]


# 4.9.8 with PIPELINES_FULL_SUITE=1 only: the same rule (two counters), the same units
SCENARIOS = {"5.3.3": _scenarios("5.3.3")}
if bh.bounded([{"name": "4.9.8"}], full_only=("4.9.8",)):
    SCENARIOS["4.9.8"] = _scenarios("4.9.8")
RUN_LINES = [pytest.param(line, id=line) for line in SCENARIOS]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "store(s) with a queue of own and light units, crash-restarted", threads=2)


@pytest.fixture
def runs(request) -> dict[str, dict]:
    """Every scenario as the broker wrote and restarted it, with our verify (queues kept) or ``--as-restart``."""
    return bh.written_once(request, _RUNS, STORES, then=bh.restart_checked, every=True)


def _queue_units(folder: Path) -> list[tuple[int, int]]:
    """The units of a queue's files up to the first empty one."""
    out = []
    for f in sorted(folder.iterdir()):
        for u in units(f):
            if u[1] == 0:
                return out
            out.append(u)
    return out


def _own_and_light(d: Path) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The records of the own puts (topic %LMQ%x) and of the light puts (T0), in put order, from ``before/``."""
    recs = records(d / "before" / "commitlog")
    return ([(r["offset"], r["size"]) for r in recs if r["topic"] == LMQ],
            [(r["offset"], r["size"]) for r in recs if r["topic"] == "T0"])


@pytest.mark.parametrize("line", RUN_LINES)
def test_the_broker_put_the_walk_s_units_out_of_queue_offset_order(runs, line: str) -> None:
    """What the broker wrote: own 0 and light 0 in file 0, the others in file 1; after the crash restart on its own
    files %LMQ%x/0 holds own 0, 1, 2, 3 (own 1 at 20: the walk from file 1, light 1 to 3 dropped), ending at 80;
    with the queues deleted a ``fillPreBlank`` unit, own 1, 2, 3, and T0/0 a ``fillPreBlank`` unit, lights 1 to 3."""
    kept = runs[f"{line}-mixedq-crash-kept"]
    d, w = Path(kept["scenario"]["dir"]), kept["written"]
    walk_starts_at_file_1(d)
    own, light = _own_and_light(d)
    assert len(own) == len(light) == 4 and own[0][0] < SIZE <= own[1][0] < 2 * SIZE, (own, light)
    assert light[0][0] < SIZE <= light[1][0], light
    assert _queue_units(d / "before" / "consumequeue" / LMQ / "0") == own[:1]   # the zeroed tail
    assert _queue_units(d / "expected" / "consumequeue" / LMQ / "0") == own
    assert w["queuesAfterLoad"][f"{LMQ}/0"]["maxOffset"] == 80, w["queuesAfterLoad"][f"{LMQ}/0"]
    deleted = Path(runs[f"{line}-mixedq-crash"]["scenario"]["dir"]) / "expected" / "consumequeue"
    for queue, want in ((f"{LMQ}/0", own[1:]), ("T0/0", light[1:])):
        got = np.frombuffer(next((deleted / queue).iterdir()).read_bytes()[:100], dtype=">i8,>i4,>i8")
        assert got["f1"][0] == 0x7FFFFFFF, queue   # fillPreBlank (queue offset 1 on an empty queue)
        assert [tuple(map(int, u)) for u in got[["f0", "f1"]][1:4]] == want and got["f1"][4] == 0, queue


@pytest.mark.parametrize("line", RUN_LINES)
def test_verify_predicts_the_walk_on_the_mixed_queue(runs, line: str) -> None:
    """``verify``'s prediction of the kept queue after the walk: where its files end, its max physical offset and
    the units the walk appended (the broker's, past own 0), the walk from file 1."""
    r = runs[f"{line}-mixedq-crash-kept"]
    d, w = Path(r["scenario"]["dir"]), r["written"]
    q = queue_entry(r["verify"], f"{LMQ}/0")
    s = w["queuesAfterLoad"][f"{LMQ}/0"]
    assert (q["write_position"], q["max_physic_offset"]) == (s["maxOffset"], s["maxPhysicOffset"]), (q, s)
    assert q["units_appended_by_recovery"] == len(_queue_units(d / "expected" / "consumequeue" / LMQ / "0")) - 1
    assert r["verify"]["report"]["restart"]["abnormal_dispatch_from"] == SIZE


@pytest.mark.parametrize("line", RUN_LINES)
def test_as_restart_writes_the_broker_s_files(runs, line: str) -> None:
    bh.restart_files_are_the_broker_s(runs[f"{line}-mixedq-crash"])

"""A file consume queue holding a record's own units *and* light ones (``%LMQ%x``, queue 0: messages put to topic
``%LMQ%x`` itself between messages to T0/0 that multi-dispatch to it, ``enableMultiDispatch``/``enableLmq``),
written, crashed and restarted by the 5.5.1 broker (the JVM harness, :mod:`broker_harness`).

The own puts take their queue offsets from the topic queue table, the light ones from the LMQ table
(``QueueOffsetOperator``), so the queue's units do not come in queue offset order: the reput's
``ConsumeQueue.putMessagePositionInfo`` appends own 0 at 0, light 0 at 20 (queue offset 0 passes no check), drops own
1 and light 1 (20 < 40), appends own 2 at 40 and own 3 at 60, and drops lights 2 and 3 (below the write position).

* ``-mixedq``: written, no restart: a plain ``rebuild`` must write the broker's files byte for byte.
* ``-mixedq-accel-crash-kept``: an ``abort`` file, the queues kept, the last three units of ``%LMQ%x/0`` zeroed
  (``zeroQueueTail``: own 0 alone left), ``enableAcceleratedRecovery=true`` and the checkpoint's
  logicsPhysicalOffset at put 2 (own 1): ``CommitLog.recoverAbnormally``'s walk starts there, after light 0's record,
  so the units the walk puts onto the queue are not the ones the crashed broker's reput put: own 1 (queue offset 1,
  at write position 20) is appended now.  ``verify`` on ``before/`` must predict the queue's end, max and the units
  the walk appended.
* ``-mixedq-accel-crash`` (``PIPELINES_FULL_SUITE=1``): the same crash with the queue folders deleted:
  ``rebuild --as-restart`` must write the broker's files byte for byte.

The 5.3.3 and 4.9.8 brokers (a walk from a whole commitlog file): :mod:`test_restart_mixed_queue_lines_broker`.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import numpy as np
import pytest

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
LMQ = "%LMQ%x"
CONFIG = {"mappedFileSizeCommitLog": str(32 * 1024), "mappedFileSizeConsumeQueue": "600", "maxHashSlotNum": "101",
          "maxIndexNum": "400", "enableMultiDispatch": "true", "enableLmq": "true"}
ACCEL = {"enableAcceleratedRecovery": "true"}
OWN = {"topic": LMQ, "queueId": 0, "bodySize": 100}
LIGHT = {"topic": "T0", "queueId": 0, "bodySize": 120, "properties": {"INNER_MULTI_DISPATCH": LMQ}}
# own 0, light 0, own 1, light 1, ... (puts 2k and 2k + 1)
MESSAGES = [{**m, "keys": f"K{i}", "uniqKey": f"7F00000100002A9F0000000000{i:06X}"}
            for i, m in enumerate(m for _ in range(4) for m in (OWN, LIGHT))]


def _scenarios() -> list[dict]:
    base = {"name": f"{LINE}-mixedq", "config": CONFIG, "messages": MESSAGES}
    crash = {**base, "abort": True, "config": {**CONFIG, **ACCEL}, "checkpointLogicsPhysicalOffset": {"put": 2},
             "zeroQueueTail": [{"path": f"consumequeue/{LMQ}/0", "units": 3, "unitSize": 20}]}
    return [base, {**crash, "name": f"{LINE}-mixedq-accel-crash-kept", "keepQueues": True},
            {**crash, "name": f"{LINE}-mixedq-accel-crash"}]


# the restart over deleted queues (--as-restart) with PIPELINES_FULL_SUITE=1 only
SCENARIOS = {LINE: bh.bounded(_scenarios(), full_only=("-mixedq-accel-crash",))}
NAMES = {sc["name"] for sc in SCENARIOS[LINE]}
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "store(s) with a queue of own and light units", threads=1)


def _then(run: dict) -> None:
    if "abort" in run["scenario"]:
        bh.restart_checked(run)
    else:
        run["rebuild"] = bh.rebuild(Path(run["scenario"]["dir"]), bh.BROKER_VERSION_ARG[run["line"]])


@pytest.fixture
def runs(request) -> dict[str, dict]:
    """Every scenario as the broker wrote (and restarted) it, with our rebuild or verify of it (once)."""
    return bh.written_once(request, _RUNS, STORES, then=_then, every=True)


def _units(folder: Path) -> list[tuple[int, int]]:
    """(commitlog offset, size) of every unit of a queue's files up to the first empty one."""
    out = []
    for f in sorted(folder.iterdir()):
        for offset, size in bh.cq_units(f):
            if size <= 0:
                return out
            out.append((offset, size))
    return out


def _own_and_light(root: Path) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The records of the own puts and of the light puts, in put order: the light ones are T0/0's units; the own
    ones the other units the crashed broker's %LMQ%x queue (``-mixedq``'s, complete) and its restart hold."""
    light = _units(root / "consumequeue" / "T0" / "0")
    return light, sorted(set(_units(root / "consumequeue" / LMQ / "0")) - set(light))


def test_the_broker_put_the_units_out_of_queue_offset_order(runs) -> None:
    """What the broker wrote: T0/0 holds the four light records; %LMQ%x/0 own 0, light 0, own 2, own 3 (own 1 and
    lights 1-3 dropped by the queue offset check); after the crash restart on its own files (the walk from own 1's
    record) own 0, own 1, own 2, own 3 (light 0 zeroed and its record not walked, own 1 now at its queue offset's
    position); the restart with the queues deleted wrote own 1 at 20 after a ``fillPreBlank`` unit, own 2 and 3."""
    plain = Path(runs[f"{LINE}-mixedq"]["scenario"]["dir"]) / "expected"
    light, own = _own_and_light(plain)
    assert len(light) == 4 and len(own) == 3, (light, own)
    assert _units(plain / "consumequeue" / LMQ / "0") == [own[0], light[0], own[1], own[2]]
    kept = runs[f"{LINE}-mixedq-accel-crash-kept"]
    d, w = Path(kept["scenario"]["dir"]), kept["written"]
    assert _units(d / "before" / "consumequeue" / LMQ / "0") == [own[0]]   # the zeroed tail
    after = _units(d / "expected" / "consumequeue" / LMQ / "0")
    assert after[0] == own[0] and after[2:] == own[1:] and after[1] not in light, after
    assert after[1][0] == w["checkpointLogicsPhysicalOffset"], (after, w["checkpointLogicsPhysicalOffset"])
    assert w["queuesAfterLoad"][f"{LMQ}/0"]["maxOffset"] == 80
    if f"{LINE}-mixedq-accel-crash" not in NAMES:
        return
    deleted = Path(runs[f"{LINE}-mixedq-accel-crash"]["scenario"]["dir"]) / "expected" / "consumequeue" / LMQ / "0"
    units = np.frombuffer(next(deleted.iterdir()).read_bytes()[:80], dtype=">i8,>i4,>i8")
    assert units["f1"][0] == 0x7FFFFFFF   # fillPreBlank (queue offset 1 on an empty queue)
    assert [tuple(map(int, u)) for u in units[["f0", "f1"]][1:]] == after[1:]


def test_a_plain_rebuild_writes_the_broker_s_files(runs) -> None:
    bh.restart_files_are_the_broker_s(runs[f"{LINE}-mixedq"])


@pytest.mark.skipif(f"{LINE}-mixedq-accel-crash" not in NAMES, reason="full suite only: PIPELINES_FULL_SUITE=1")
def test_as_restart_writes_the_broker_s_files(runs) -> None:
    bh.restart_files_are_the_broker_s(runs[f"{LINE}-mixedq-accel-crash"])


def test_verify_predicts_the_restart_on_the_mixed_queue(runs) -> None:
    """``verify``'s prediction of the queue after the walk: where its files end, its max physical offset and the units
    the walk appended (the broker's files after its restart, past the zeroed tail's start)."""
    r = runs[f"{LINE}-mixedq-accel-crash-kept"]
    d, w = Path(r["scenario"]["dir"]), r["written"]
    v = r["verify"]
    assert v["code"] in (0, 1) and v["report"] is not None, v["stderr"]
    p = v["report"]["restart"]
    assert p is not None and not v["report"]["restart_note"], v["report"].get("restart_note")
    q = {(x["layout"], x["queue"]): x for x in p["queues"]}.get(("consumequeue", f"{LMQ}/0"))
    s = w["queuesAfterLoad"][f"{LMQ}/0"]
    assert q is not None, "verify does not list the mixed queue"
    assert (q["write_position"], q["max_physic_offset"]) == (s["maxOffset"], s["maxPhysicOffset"])
    assert q["units_appended_by_recovery"] == len(_units(d / "expected" / "consumequeue" / LMQ / "0")) - 1
    assert p["abnormal_dispatch_from"] == w["checkpointLogicsPhysicalOffset"]

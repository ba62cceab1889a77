"""``verify``'s prediction of the broker's next start on consume queue ext stores and batch consume queue
stores, checked against the broker's own restart on the very same files.

The JVM harness (:mod:`broker_harness`, ``tests/broker/``) writes each store with the published RocketMQ
store (the ``plain`` and ``mixed`` ext stores of :mod:`broker_cqext_scenarios`, the two batch stores of
:mod:`broker_batchcq_scenarios`), flips a body byte of the record six puts before the end
(``damageMessage``) and restarts the broker *keeping* ``consumequeue/``, ``consumequeue_ext/``,
``batchconsumequeue/`` and ``index/`` (``keepQueues``). Its recovery ends the commitlog at the damaged
record; the queues reach past it, so ``truncateDirtyLogicFiles`` cuts every queue back, consume queues
and batch consume queues alike, while the ext files keep the units of the cut consume queue units.
``<dir>/before/`` is the store as that restart found it, and the harness reports every queue as the
broker holds it after ``load()`` (``queuesAfterLoad``: the queues' and the commitlog's recovery), once
its reput has caught up (``queuesAfterDispatch``), and whether the recovery called
``truncateDirtyLogicFiles`` (``truncateDirtyLogicFilesAt``: 4.9.8 and 5.3.3 only when the queues' max
physical offset is at or past the commitlog's end, which holds without a cut too, when the last record is
queued: 5.3.3's recovery of the ``mixed`` store starts in the segment after the damaged record's and cuts
nothing; 5.5.1 always).

``verify`` on ``before/`` must predict, queue by queue, what the broker did: where the queue's files end
(its write position), its max physical offset, the units cut off, the files deleted, where its ext
files end and how many ext units no kept unit points at; and, store-wide, where the commitlog ends and
how many units the dispatch writes again. A queue ``verify`` does not list must be one the broker left
as it was. Ext stores: 4.9.8 and 5.5.1 (``CQEXT_LINES``); batch stores: 5.5.1 (``BATCHCQ_LINES``).

``*-crash-kept``: the same stores restarted after a crash (an ``abort`` file), with the last two units (before
the damaged record) of the queue holding the record before it zeroed (harness ``zeroQueueTail``).
``CommitLog.recoverAbnormally`` dispatches every record from its start segment before
``truncateDirtyLogicFiles``: ``verify`` must predict the units it appends again (the broker's files after the
restart between the queue's old end and its end after ``load()``), or that they stay missing when their
records lie before that segment, the ext write position after the ext unit it puts for every record, the
ext units no kept unit points at (counted in the broker's files), and the index keys it puts.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import numpy as np
import pytest
from broker_batchcq_scenarios import batchcq_scenarios
from broker_cqext_scenarios import cqext_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

EXT_LINES = bh.lines_from_env("CQEXT_LINES", "4.9.8,5.5.1")
BATCH_LINES = bh.lines_from_env("BATCHCQ_LINES", "5.5.1")
BROKER_LINE = bh.BROKER_VERSION_ARG
FOLDER = {"ConsumeQueue": "consumequeue", "BatchConsumeQueue": "batchconsumequeue"}
UNIT = {"consumequeue": 20, "batchconsumequeue": 46}
LONG_MIN = -(1 << 63)


def _kept(sc: dict) -> dict:
    puts = sum(1 for m in sc["messages"] if "sleepMs" not in m)
    return {**sc, "name": f"{sc['name']}-kept", "damageMessage": puts - 6, "keepQueues": True}


def _crash(sc: dict, folder: str) -> dict:
    """``<name>-crash-kept``: ``sc`` damaged as :func:`_kept` does, the last two units before the damaged
    record of the queue in ``folder`` that holds the record before it zeroed (units it lacks), and restarted
    after a crash (an ``abort`` file: ``CommitLog.recoverAbnormally`` dispatches again every record from its
    start segment, before ``truncateDirtyLogicFiles``)."""
    zero = {"path": folder, "units": 2, "unitSize": UNIT[folder]}
    return {**_kept(sc), "name": f"{sc['name']}-crash-kept", "abort": True, "zeroQueueTail": zero}


def _recheck(sc: dict) -> list[dict]:
    """``sc`` ending in a keyed message to a BatchCQ topic with ``recheckReputOffsetFromCq=true``, restarted on its
    own files undamaged (``-recheck-kept``: the start's second reput, from the start of that record's batch unit,
    indexes it again) and damaged (``-recheck-damaged-kept``)."""
    last = {"topic": "BT0", "queueId": 0, "body": "dGFpbA==", "keys": "the-last-key",
            "uniqKey": "7F00000100002A9F00000000FFFFFFFD"}
    tail = {**sc, "name": f"{sc['name']}-recheck", "messages": [*sc["messages"], last],
            "config": {**sc["config"], "recheckReputOffsetFromCq": "true"}}
    return [{**tail, "name": f"{tail['name']}-kept", "keepQueues": True, "keepBefore": True},
            _kept({**tail, "name": f"{tail['name']}-damaged"})]


def _recovery_settings(sc: dict) -> list[dict]:
    """5.5.1 ``recoverAbnormally``'s own settings on :func:`_crash`'s store: ``-accel-crash-kept``
    (``enableAcceleratedRecovery=true``: the walk starts at the checkpoint's logicsPhysicalOffset, set to the
    record three puts before the end, inside its segment and past the damaged record) and
    ``-offset-check-crash-kept`` (``checkCommitLogOffsetOnRecover=true``, the physicalOffset field of the record
    eight puts before the end moved four segments on: the walk ends there, before the damaged record)."""
    crash = _crash(sc, "consumequeue")
    puts = sum(1 for m in sc["messages"] if "sleepMs" not in m)
    return [{**crash, "name": f"{sc['name']}-accel-crash-kept", "checkpointLogicsPhysicalOffset": {"put": puts - 3},
             "config": {**sc["config"], "enableAcceleratedRecovery": "true"}},
            {**crash, "name": f"{sc['name']}-offset-check-crash-kept", "damageOffsetField": puts - 8,
             "config": {**sc["config"], "checkCommitLogOffsetOnRecover": "true"}}]


def _scenarios(line: str) -> list[dict]:
    scs: list[dict] = []
    if line in EXT_LINES:
        ext = [sc for sc in cqext_scenarios(line) if not sc["name"].endswith("-lmq")]
        scs += [_kept(sc) for sc in ext] + [_crash(sc, "consumequeue") for sc in ext]
        # the light queues' units (multi-dispatch) put no ext unit, recoverAbnormally's dispatch neither
        scs += [_crash(sc, "consumequeue") for sc in cqext_scenarios(line) if sc["name"].endswith("-lmq")]
        if line.startswith("5.5"):
            scs += _recovery_settings(ext[0])
    if line in BATCH_LINES:
        batch = batchcq_scenarios(line)
        scs += [_kept(sc) for sc in batch] + [_crash(sc, "batchconsumequeue") for sc in batch] + _recheck(batch[0])
    return scs


# the default suite: the mixed ext stores (batches, delays, transactions) and the first batch store after a
# crash and with recheckReputOffsetFromCq; the plain ext stores, the second batch store, the first one's
# clean restart and the checkCommitLogOffsetOnRecover crash (its --as-restart is test_restart_accelerated_broker's)
# with PIPELINES_FULL_SUITE=1
SCENARIOS = {line: bh.bounded(_scenarios(line), ("-cqext-plain-kept", "-cqext-plain-crash-kept", "-bcq-b-kept",
                                                 "-bcq-b-crash-kept", "-bcq-a-kept", "-offset-check-crash-kept"))
             for line in dict.fromkeys(EXT_LINES + BATCH_LINES)}
CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
_RUNS: dict[str, dict] = {}
# one store at a time in each JVM: with the 5.5.1 stores restarted side by side, one run saw a recovery
STORES = bh.Stores(SCENARIOS, "store(s), each restarted on its own queue files", threads=1)


@pytest.fixture
def restarted(request) -> dict:
    """The scenario as the broker wrote it and restarted it on its own files (every scenario once)."""
    # start at the first segment although the queues covered the last one's first record
    return bh.written_once(request, _RUNS, STORES)


def _verify(d: Path, line: str) -> tuple[int, dict]:
    v = bh.verify_json(d / "before", d / "broker.conf", BROKER_LINE[line])
    assert v["code"] in (0, 1) and v["report"] is not None, v["stderr"]
    return v["code"], v["report"]


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def _units(folder: Path, name: str, unit: int) -> np.ndarray:
    data = (folder / name).read_bytes()
    fields = np.dtype({"names": ["offset", "size"], "formats": [">i8", ">i4"], "offsets": [0, 8], "itemsize": unit})
    return np.frombuffer(data, dtype=fields, count=len(data) // unit)


def _queue_end(folder: Path, unit: int) -> int:
    """Where a broker-written queue's units end (the first unit with size 0 over its files), in bytes."""
    names = _names(folder)
    for name in names:
        empty = np.flatnonzero(_units(folder, name, unit)["size"] <= 0)
        if len(empty):
            return int(name) + int(empty[0]) * unit
    return int(names[-1]) + len(_units(folder, names[-1], unit)) * unit if names else 0


def _units_between(folder: Path, unit: int, start: int, end: int) -> int:
    """Units of records (size > 0, offset > 0) at byte positions [start, end) of the queue's files."""
    n = 0
    for name in _names(folder):
        u = _units(folder, name, unit)
        pos = int(name) + np.arange(len(u)) * unit
        n += int(((pos >= start) & (pos < end) & (u["size"] > 0) & (u["offset"] > 0)).sum())
    return n


def _ext_units(folder: Path) -> list[int]:
    """Real offsets of every ext unit in a queue's ext files (units of 20 bytes, up to a size <= 0)."""
    out = []
    for name in _names(folder):
        data = (folder / name).read_bytes()
        p = 0
        while p + 2 <= len(data) and int.from_bytes(data[p:p + 2], "big", signed=True) == 20:
            out.append(int(name) + p)
            p += 20
    return out


def _last_ext_end(folder: Path, end: int) -> int:
    """End of the ext unit the consume queue unit before logical byte ``end`` points at (0: none)."""
    if end <= 0:
        return 0
    pos = end - 20
    name = max(n for n in _names(folder) if int(n) <= pos)
    at = pos - int(name)
    tags = int.from_bytes((folder / name).read_bytes()[at + 12:at + 20], "big", signed=True)
    return tags - LONG_MIN + 20 if tags <= -(1 << 31) - 1 else 0


def _unreferenced(root: Path, queue: str, cq_end: int, ext_end: int) -> int:
    """Ext units below ``ext_end`` in ``root``'s ext files of ``queue`` that no unit below logical byte
    ``cq_end`` of its consume queue points at."""
    cq = root / "consumequeue" / queue
    tags = np.concatenate([np.frombuffer((cq / n).read_bytes(), dtype=np.dtype(
        {"names": ["tags"], "formats": [">i8"], "offsets": [12], "itemsize": 20}))["tags"][
        :max(0, (cq_end - int(n)) // 20)] for n in _names(cq)] or [np.zeros(0, np.int64)]).astype(np.int64)
    referenced = {int(t) - LONG_MIN for t in tags if t <= -(1 << 31) - 1}
    return sum(1 for o in _ext_units(root / "consumequeue_ext" / queue) if o < ext_end and o not in referenced)


def _index_entries(folder: Path, skip: tuple[str, ...] = ()) -> int:
    """Entries in a folder's index files but ``skip`` (IndexHeader.indexCount, at byte 36, counts from 1)."""
    return sum(max(int.from_bytes(f.read_bytes()[36:40], "big") - 1, 0) for f in folder.iterdir()
               if f.name not in skip) if folder.is_dir() else 0


@pytest.mark.parametrize("line,name", CASES)
def test_verify_predicts_the_broker_restart_on_its_own_files(restarted, line: str, name: str) -> None:
    d = Path(restarted["scenario"]["dir"])
    w = restarted["written"]
    code, report = _verify(d, line)
    p = report["restart"]
    assert p is not None, report.get("restart_note")
    assert not report["restart_note"], report["restart_note"]   # "": a prediction was made
    assert not p["start_fails"]
    # the commitlog: where the broker's recovery ended it (at the damaged record when its walk reaches it:
    # 5.5.1 starts at the last segment whose first record the queues cover)
    assert p["recovery_cut"] == w["maxPhyOffset"]
    damage_cut = w["maxPhyOffset"] in (w.get("damagedRecord"), w.get("damagedOffsetRecord"))
    if "-accel-" in name:   # the walk started inside its segment, at the checkpoint's offset, past the damage
        size = int(restarted["scenario"]["config"]["mappedFileSizeCommitLog"])
        assert p["abnormal_dispatch_from"] % size and p["abnormal_dispatch_from"] > w["damagedRecord"]
        assert w["maxPhyOffset"] > w["damagedRecord"]
    if "-offset-check-" in name:   # the walk ended at the record whose offset field lies outside its segment
        assert w["maxPhyOffset"] == w["damagedOffsetRecord"]
    # whether the broker's recovery called DefaultMessageStore.truncateDirtyLogicFiles (the harness's store
    # records the call), at the end of the commitlog it kept
    assert p["truncate_dirty_logic_files"] == (w["truncateDirtyLogicFilesAt"] >= 0)
    assert w["truncateDirtyLogicFilesAt"] in (-1, w["maxPhyOffset"])
    listed = {(q["layout"], q["queue"]): q for q in p["queues"]}
    after_load, after_dispatch = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    cut_by_broker = orphans_by_broker = added_by_broker = appended_by_broker = 0
    checked = set()
    for queue, s in sorted(after_load.items()):
        folder = FOLDER[s["type"]]
        unit = UNIT[folder]
        q = listed.get((folder, queue))
        checked.add((folder, queue))
        before = d / "before" / folder / queue
        end_before = _queue_end(before, unit)
        cut = (end_before - s["maxOffset"]) // unit
        # an abnormal start's recovery appended units the queue lacked (the broker's files after its restart)
        appended = _units_between(d / "expected" / folder / queue, unit, end_before, s["maxOffset"])
        cut = max(0, cut)
        deleted = sorted(set(_names(before)) - set(s["files"]))
        cut_by_broker += cut
        appended_by_broker += appended
        added_by_broker += (after_dispatch[queue]["maxOffset"] - s["maxOffset"]) // unit
        ext = d / "before" / "consumequeue_ext" / queue
        orphans, ext_deleted = 0, []
        if "extMaxOffset" in s:
            if "-crash-" in name:   # the broker's own files after the restart: every unit its queue's kept units
                orphans = _unreferenced(d / "expected", queue, s["maxOffset"], s["extMaxOffset"])   # miss
            else:
                referenced = _last_ext_end(before, s["maxOffset"])
                orphans = sum(1 for o in _ext_units(ext) if referenced <= o < s["extMaxOffset"])
            ext_deleted = sorted(set(_names(ext)) - set(s["extFiles"]))
            orphans_by_broker += orphans
        ext_moved = "extMaxOffset" in s and s["extMaxOffset"] != (max(_ext_units(ext), default=-20) + 20)
        if q is None:
            assert (cut, appended, deleted, orphans, ext_deleted, ext_moved) == (0, 0, [], 0, [], False), (
                f"{folder}/{queue}: the broker changed it, verify does not list it")
            continue
        assert q["write_position"] == s["maxOffset"], f"{folder}/{queue}: where its files end"
        assert q["max_physic_offset"] == s["maxPhysicOffset"], f"{folder}/{queue}: max physical offset"
        assert q["units_truncated"] + q["units_dropped_by_recover"] == cut, f"{folder}/{queue}: units cut off"
        assert q["units_appended_by_recovery"] == appended, f"{folder}/{queue}: units recovery appended"
        assert sorted(q["files_deleted_by_recover"] + q["files_deleted_by_truncate"]) == deleted, queue
        if "extMaxOffset" in s:
            assert q["ext_write_position"] == s["extMaxOffset"], f"{queue}: where its ext files end"
            assert q["ext_units_orphaned"] == orphans, f"{queue}: ext units no kept unit points at"
            assert sorted(q["ext_files_deleted"]) == ext_deleted, queue
    assert set(listed) <= checked, f"verify lists queues the broker does not have: {set(listed) - checked}"
    assert p["units_truncated"] + p["units_dropped_by_recover"] == cut_by_broker
    assert p["units_dispatched_again"] == added_by_broker
    assert p["units_appended_by_recovery"] == appended_by_broker
    assert p["ext_units_orphaned"] == orphans_by_broker
    if "-crash-" in name:   # recoverAbnormally dispatched every record from its start segment
        assert p["abnormal_dispatch_from"] is not None
        # the zeroed units come back when their records lie in the walked segments, else they stay missing
        assert appended_by_broker > 0 or p["units_lost"] > 0
        if "-cqext-" in name:
            assert p["ext_units_appended"] > 0
    if "-recheck-" in name or "-crash-" in name:
        # index: the entries the start put (its second reput: the last record's keys again; an abnormal start
        # deletes the files written after the checkpoint's index timestamp first)
        gone = tuple(sorted(set(_names(d / "before" / "index")) - set(_names(d / "expected" / "index"))))
        assert sorted(p["index_files_deleted"]) == list(gone)
        put = _index_entries(d / "expected" / "index") - _index_entries(d / "before" / "index", gone)
        assert p["index_keys_put_again"] == put
        if "-recheck-kept" in name:
            assert put == 2   # the last record's UNIQ_KEY and KEYS
    if not damage_cut:
        assert cut_by_broker == 0
    elif "-cqext-" in name:
        assert cut_by_broker > 0 and orphans_by_broker > 0, "the restart left no ext unit behind the cut units"
    else:
        assert any(layout == "batchconsumequeue" and q["units_truncated"] for (layout, _), q in listed.items())

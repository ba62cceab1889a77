"""``rebuild --as-restart`` where the start's second reput begins before the first record the recovery dispatched,
on consume queue files: the 4.9.8 ``start()`` after an abnormal recovery that queued nothing, and the 5.5.1
``doRecheckReputOffsetFromCq`` (``recheckReputOffsetFromCq=true``) after an ``enableAcceleratedRecovery``
recovery that began inside its file and queued nothing.  Checked against the brokers' own restarts (4 KiB
commitlog files; ``consumequeue/`` and ``index/`` deleted; an ``abort`` file).

* ``4.9.8-before-delay-prepared-crash``: 20 single messages (every fourth delayed, ``messageDelayLevel`` of
  hours, so nothing is delivered), 25 prepared transaction messages (indexed, no consume queue unit), a 3.5 s
  pause, 4 single messages, the first of them damaged (body CRC).  The checkpoint's timestamps are the last
  message's, so ``CommitLog.recoverAbnormally`` starts at the last file whose first record is at least 3 s older:
  one of prepared records, which it walks up to the damaged record (the cut), queueing nothing.
  ``DefaultMessageStore.start`` then sets the reput at the commitlog's min offset (the queue table is empty) and
  it queues every single message, the delayed ones with their delivery time as tagsCode (``load`` parsed the
  delay levels after ``recover``: :func:`store_format.recovery.dispatch_config`), while ``IndexService.buildIndex``
  skips every record below the last one the recovery indexed (no key below the recovery's start).
  ``-ext-crash``: the same with ``enableConsumeQueueExt=true`` (the delivery times in the ext units).
* ``5.5.1-before-accel-damaged-crash``: 40 single messages, the checkpoint's logicsPhysicalOffset set to put 30's
  record (inside its file), that record damaged: the accelerated walk starts there and stops at once (the cut),
  dispatching nothing; the reput from the min offset parses every file, the start file from its start, queueing
  and indexing every record below the cut (recovery indexed nothing).
* ``5.5.1-before-accel-prepared-crash``: 20 single messages, 25 prepared ones, the checkpoint's logicsPhysicalOffset
  set to put 22's (prepared) record: the walk from there indexes the prepared records to the end and queues
  nothing; the reput from the min offset queues the single messages and indexes no record below put 22's
  (the records of that file before it included) but the last indexed one again.

(An accelerated start inside a record: tests/test_restart_accelerated_inside_broker.py.)

First what the broker did (its cut, its units, its index keys, read with a small commitlog reader of this
module's own), then ``rebuild --as-restart`` on ``<dir>/before``: ``consumequeue/`` and ``index/`` byte for byte,
and ``verify``'s restart prediction on ``<dir>/before`` (the cut, the second reput from the min offset).
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import numpy as np
import pytest
from broker_layout_scenarios import Messages

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

SIZE = 4096
INDEX = {"maxHashSlotNum": "101", "maxIndexNum": "400"}
V4_BODY_LEN_AT = 84   # totalSize .. preparedTransactionOffset of a record with IPv4 hosts
PREPARED = 0x4        # MessageSysFlag.TRANSACTION_PREPARED_TYPE
EXT = {"enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": str(1 << 20)}


def _scenarios() -> dict[str, list[dict]]:
    g = Messages(187, ["T0", "T1", "T2"])
    old = [g.one(delayLevel=g.rng.randint(1, 3)) if i % 4 == 1 else g.one() for i in range(20)]
    old += [g.one(tranType="prepared") for _ in range(25)] + [{"sleepMs": 3500}] + [g.one() for _ in range(4)]
    # the commit log's flush thread puts its last file's store time into the checkpoint's physicMsgTimestamp at
    # each thorough flush only (flushCommitLogThoroughInterval, 10 s by default: 1 s here)
    old += [{"sleepMs": 3000}]
    v4 = {"name": "4.9.8-before-delay-prepared-crash", "abort": True, "damageMessage": 45, "messages": old,
          "config": {"mappedFileSizeCommitLog": str(SIZE), "messageDelayLevel": "1h 2h 3h",
                     "flushCommitLogThoroughInterval": "1000", **INDEX}}
    accel = {"mappedFileSizeCommitLog": str(SIZE), "recheckReputOffsetFromCq": "true",
             "enableAcceleratedRecovery": "true", **INDEX}
    g = Messages(188, ["T0", "T1", "T2"])
    singles = [g.one() for _ in range(40)]
    g = Messages(189, ["T0", "T1", "T2"])
    prepared = [g.one() for _ in range(20)] + [g.one(tranType="prepared") for _ in range(25)]
    v5 = [{"name": "5.5.1-before-accel-damaged-crash", "abort": True, "damageMessage": 30, "messages": singles,
           "checkpointLogicsPhysicalOffset": {"put": 30}, "config": accel},
          {"name": "5.5.1-before-accel-prepared-crash", "abort": True, "messages": prepared,
           "checkpointLogicsPhysicalOffset": {"put": 22}, "config": accel}]
    ext = {**v4, "name": "4.9.8-before-delay-prepared-ext-crash", "config": {**v4["config"], **EXT}}
    return {"4.9.8": [v4, ext], "5.5.1": v5}


SCENARIOS = _scenarios()
MODELLED = [pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "store(s), each restarted after a crash", threads=1)


@pytest.fixture
def runs(request) -> dict[str, dict]:
    """Every scenario as the broker wrote and restarted it, our ``--as-restart`` rebuild and ``verify`` (once)."""
    return bh.written_once(request, _RUNS, STORES, then=bh.restart_rebuilt_and_verified, every=True)




def _records(d: Path) -> list[dict]:
    """Every record of ``d/before/commitlog`` (IPv4 hosts, V1 records): offset, size, sysFlag, topic."""
    out = []
    for f in sorted((d / "before" / "commitlog").iterdir()):
        data, base, pos = f.read_bytes(), int(f.name), 0
        while pos + V4_BODY_LEN_AT + 4 <= len(data):
            total = int.from_bytes(data[pos:pos + 4], "big")
            if data[pos + 4:pos + 8] != bytes.fromhex("daa320a7") or total <= 0:
                break   # a blank or the end of the data
            body = int.from_bytes(data[pos + V4_BODY_LEN_AT:pos + V4_BODY_LEN_AT + 4], "big")
            at = pos + V4_BODY_LEN_AT + 4 + body
            out.append({"offset": base + pos, "size": total, "sysflag": int.from_bytes(data[pos + 36:pos + 40], "big"),
                        "topic": data[at + 1:at + 1 + data[at]].decode()})
            pos += total
    return out


def _units(d: Path) -> dict[str, np.ndarray]:
    """The broker's consume queue units, per ``topic/queueId`` (offset, size, tagsCode)."""
    out = {}
    for f in sorted((d / "expected" / "consumequeue").rglob("*")):
        if f.is_file():
            u = np.frombuffer(f.read_bytes(), dtype=np.dtype([("off", ">i8"), ("size", ">i4"), ("tags", ">i8")]))
            out[str(f.parent.relative_to(d / "expected" / "consumequeue"))] = u[u["size"] > 0]
    return out


def _key_offsets(d: Path, which: str = "expected") -> np.ndarray:
    """The commitlog offsets of every key of the broker's index files (``which``: ``before``, those it restarted on)."""
    from store_format.indexfile import read_header
    from store_format.layout import INDEX_ENTRY_SIZE, INDEX_HEADER_SIZE, INDEX_SLOT_SIZE
    out = []
    for f in sorted((d / which / "index").iterdir()):
        data = f.read_bytes()
        at = INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * int(INDEX["maxHashSlotNum"])
        for i in range(1, read_header(data).index_count):
            e = at + i * INDEX_ENTRY_SIZE
            out.append(int.from_bytes(data[e + 4:e + 12], "big", signed=True))
    return np.asarray(out, dtype=np.int64)


def _queued_offsets(d: Path) -> list[int]:
    return sorted(int(o) for u in _units(d).values() for o in u["off"])


def _second_reput_predicted(r: dict) -> None:
    """``verify``'s report on ``<dir>/before`` (``r["verify"]``) predicts the broker's restart with no note: its cut
    (the writer's ``maxPhyOffset``), every unit of its queues dispatched again, none truncated, every key of its
    index put again."""
    report = r["verify"]["report"]
    assert report is not None, r["verify"]["stderr"]
    p = report["restart"]
    assert p is not None and not report["restart_note"], report.get("restart_note")
    d = Path(r["scenario"]["dir"])
    assert p["recovery_cut"] == r["written"]["maxPhyOffset"], p
    assert p["units_dispatched_again"] == len(_queued_offsets(d)) and p["units_truncated"] == 0, p
    assert p["index_keys_put_again"] == len(_key_offsets(d)), p


@pytest.mark.parametrize("name", MODELLED)
def test_the_broker_s_reput_started_below_its_recovery(runs, name: str) -> None:
    """The broker's own files: the cut, units of every record the second reput queued (below the recovery's start),
    and the index keys ``buildIndex`` left."""
    r = runs[name]
    d, w = Path(r["scenario"]["dir"]), r["written"]
    recs = _records(d)
    end = w["maxPhyOffset"]
    kept = [x for x in recs if x["offset"] < end]
    singles = [x["offset"] for x in kept if x["sysflag"] & 0xC != PREPARED]
    prepared = [x["offset"] for x in kept if x["sysflag"] & 0xC == PREPARED]
    keys = _key_offsets(d)
    assert _queued_offsets(d) == singles and singles, "the broker queued other records than every single message"
    if name.startswith("4.9.8"):
        assert end == w["damagedRecord"] and prepared and max(singles) < min(prepared)
        # the recovery started at a later file of prepared records: no key of a single message or of the first
        # prepared records, keys from there on
        assert len(keys) and keys.min() > prepared[0] and keys.min() % SIZE == 0, keys.min() if len(keys) else None
        delayed = {q: u for q, u in _units(d).items() if q.startswith("SCHEDULE_TOPIC_XXXX/")}
        assert delayed, "no delayed message queued"
        if "-ext-" not in name:   # (with ext files the unit holds the ext address, the ext unit the tagsCode)
            assert all((u["tags"] > 2**31).all() for u in delayed.values()), "tagsCode not delivery times"
        return
    at = w["checkpointLogicsPhysicalOffset"]
    assert at % SIZE and any(at - at % SIZE <= x["offset"] < at for x in recs), "the walk did not start inside a file"
    if "-damaged-" in name:   # the walk stopped at once: nothing indexed, the reput indexed every record
        assert end == at == w["damagedRecord"] and not prepared
        assert sorted(set(keys.tolist())) == singles
    else:                     # recovery indexed the prepared records from its start, nothing below it
        assert end == kept[-1]["offset"] + kept[-1]["size"] and max(singles) < at
        assert sorted(set(keys.tolist())) == [p for p in prepared if p >= at]


@pytest.mark.parametrize("name", MODELLED)
def test_as_restart_gives_the_broker_s_files(runs, name: str) -> None:
    """``consumequeue/`` (and ``consumequeue_ext/``) and ``index/``: the broker's restart's files byte for byte."""
    ext = ("consumequeue_ext",) if "-ext-" in name else ()
    bh.restart_files_are_the_broker_s(runs[name], ("consumequeue", *ext))


@pytest.mark.parametrize("name", MODELLED)
def test_verify_predicts_the_second_reput_from_the_min_offset(runs, name: str) -> None:
    """``verify`` on ``<dir>/before``: the broker's cut, and what the second reput from the commitlog's min offset
    writes: every unit of the broker's queues, every key of its index."""
    _second_reput_predicted(runs[name])


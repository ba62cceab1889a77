"""``verify`` on a 5.5.1 RocksDB consume queue store (``storeType=defaultRocksDB``, ``enableAcceleratedRecovery=true``,
``recheckReputOffsetFromCq=true``) whose kept database's max-physical-offset checkpoint lies at a NORMAL message
planted in the last record's body (not a prepared one, as in :mod:`test_restart_accelerated_rocksdb_broker`'s
``-kept-planted``): the recovery's walk (``CommitLog.recoverAbnormally`` from
``RocksDBConsumeQueueStore.getDispatchFromPhyOffset``) accepts it and queues it under the queue offset its own field
holds (:data:`PLANTED_QUEUE_OFFSET`, one the second reput never writes), the second reput from offset 0
(``DefaultMessageStore.doRecheckReputOffsetFromCq``) parses the host whole.  Checked against the broker's own restart
(4 KiB commitlog files; an ``abort`` file; the database kept, ``rocksdbCqCheckpoint``).

* ``5.5.1-rocksdb-accel-kept-planted-normal-crash`` (full suite only, ``PIPELINES_FULL_SUITE=1``): 39 messages and
  a host (T0/0, no key) holding the planted message (T0/0, sysFlag 0, its physicalOffset field the host's offset,
  queue offset :data:`PLANTED_QUEUE_OFFSET`).

First what the broker did, then ``verify``'s prediction of that restart.
"""
from __future__ import annotations

import base64
import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_layout_scenarios import Messages
from test_restart_accelerated_inside_broker import _records
from test_restart_accelerated_planted_broker import ADD, HOST, HOST_BODY, PHYSICAL_OFFSET_AT, SYSFLAG_AT, planted
from test_restart_reput_before_recovery_more_broker import INDEX, SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
pytest.importorskip("rocksdict")

PLANTED_QUEUE_OFFSET = 1000   # far above T0/0's units: the second reput never writes that key
QUEUE_OFFSET_AT = 20          # a message's queueOffset field


def planted_normal() -> bytes:
    """:func:`~test_restart_accelerated_planted_broker.planted`'s bytes as a normal message (sysFlag 0) of queue
    offset :data:`PLANTED_QUEUE_OFFSET`."""
    msg = bytearray(planted())
    struct.pack_into(">i", msg, SYSFLAG_AT, 0)
    struct.pack_into(">q", msg, QUEUE_OFFSET_AT, PLANTED_QUEUE_OFFSET)
    return bytes(msg)


def _scenarios() -> dict[str, list[dict]]:
    conf = {"storeType": "defaultRocksDB", "mappedFileSizeCommitLog": str(SIZE), "recheckReputOffsetFromCq": "true",
            "enableAcceleratedRecovery": "true", **INDEX}
    p = Messages(212, ["T0", "T1", "T2"])
    host = {"topic": "T0", "queueId": 0, "body": base64.b64encode(b"h" * HOST_BODY).decode()}
    sc = {"name": "5.5.1-rocksdb-accel-kept-planted-normal-crash", "abort": True, "keepBefore": True,
          "keepQueues": True, "messages": [*(p.one() for _ in range(HOST)), host], "config": conf,
          "plantBytes": {"put": HOST, "add": ADD, "offsetFieldAt": PHYSICAL_OFFSET_AT,
                         "bytes": base64.b64encode(planted_normal()).decode()},
          "rocksdbCqCheckpoint": {"put": HOST, "add": ADD}}
    return {"5.5.1": [sc]}


# with the full suite only (about 8 s: the broker's store and a verify): it shows a refusal, no prediction
SCENARIOS = {line: kept for line, scs in _scenarios().items() if (kept := bh.bounded(scs, ("-normal-crash",)))}
NAMES = bh.params_or_skip([pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs],
                          "full suite only: PIPELINES_FULL_SUITE=1")
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "RocksDB store(s), each restarted after a crash", threads=1)


@pytest.fixture
def runs(request) -> dict[str, dict]:
    """Every scenario as the broker wrote and restarted it, and our ``verify`` of ``<dir>/before`` (once)."""
    return bh.written_once(request, _RUNS, STORES, every=True, then=bh.restart_checked)


@pytest.mark.parametrize("name", NAMES)
def test_the_walk_queued_the_planted_message_under_its_own_queue_offset(runs, name: str) -> None:
    """The broker's own files: the walk began at the planted message (the database's checkpoint) and accepted it (the
    commitlog kept to the host's end); the restart's database holds every unit the first life's did, unchanged, and
    one more: the planted message's, under T0/0's queue offset :data:`PLANTED_QUEUE_OFFSET` (its own field), its
    commitlog offset the host's (its physicalOffset field).  The second reput from offset 0 put the host's unit (T0/0
    queue offset 0) after it through the same ``RocksGroupCommitService`` queue, so T0/0's max entry is the host's
    again: the planted unit stays above its queue's max (``truncateDirty`` returns at once, the cut past every unit,
    and deletes no unit anyway).  The checkpoint after: the host's end.  The first life's index files went; the new
    one holds the first life's keys (the planted message has none)."""
    from collections import Counter

    from broker_rocksdb_runs import database, parsed_database
    from test_restart_reput_before_recovery_more_broker import _key_offsets
    r = runs[name]
    d, w = Path(r["scenario"]["dir"]), r["written"]
    assert w.get("ok"), w.get("error")
    host = _records(d)[-1]
    assert w["plantedAt"] == w["rocksdbCqCheckpoint"] == host["offset"] + ADD and host["offset"] % SIZE, (w, host)
    assert w["maxPhyOffset"] == host["offset"] + host["size"], "the walk did not accept the planted message"
    units_before = database(d / "before" / "consumequeue")["default"]
    units_after = database(d / "expected" / "consumequeue")["default"]
    new = set(units_after) - set(units_before)
    assert len(new) == 1 and all(units_after[k] == v for k, v in units_before.items()), "other units than one added"
    assert int.from_bytes(units_after[new.pop()][:8], "big") == host["offset"], "the new unit is not at the host"
    after, cp_after = parsed_database(d / "expected" / "consumequeue")
    t0 = after["T0/0"]
    assert sorted(t0.cq.tolist()) == [0, PLANTED_QUEUE_OFFSET] and set(t0.phy.tolist()) == {host["offset"]}, t0
    assert t0.max == (host["offset"], 0), ("T0/0's max entry is not the host's", t0.max)
    assert cp_after == host["offset"] + host["size"], (cp_after, host)
    names = [{f.name for f in (d / which / "index").iterdir()} for which in ("before", "expected")]
    assert names[0] and not names[0] & names[1], names
    assert Counter(_key_offsets(d).tolist()) == Counter(_key_offsets(d, "before").tolist())


@pytest.mark.parametrize("name", NAMES)
def test_verify_predicts_the_walk_s_planted_unit(runs, name: str) -> None:
    """``verify`` on ``<dir>/before`` (the database kept): the cut at the host's end, the checkpoint after, queue by
    queue the max and min entries of the database the broker's restart left and the units above the max (T0/0: the
    planted one), the planted unit under its own queue offset with the broker's value, the index files deleted and
    every key of the broker's new index file."""
    from broker_rocksdb_runs import kept_database_as_predicted
    from test_restart_reput_before_recovery_more_broker import _key_offsets
    r = runs[name]
    d = Path(r["scenario"]["dir"])
    p, listed = kept_database_as_predicted(r)
    assert listed["T0/0"]["units_truncated"] == 1, listed.get("T0/0")
    names = [{f.name for f in (d / which / "index").iterdir()} for which in ("before", "expected")]
    assert set(p["index_files_deleted"]) == names[0] - names[1], (p["index_files_deleted"], names)
    assert p["index_keys_put_again"] == len(_key_offsets(d)), (p["index_keys_put_again"], p["notes"])


@pytest.mark.parametrize("name", NAMES)
def test_the_walk_s_units_are_the_broker_s_new_key_and_value(runs, name: str) -> None:
    """The units ``verify`` puts for the walk (:func:`store_format.restart_reput.walk_units` from the planted message
    to the cut, in the 5.5.1 reput's parse): exactly the key and value the broker's restart added to the database."""
    from broker_rocksdb_runs import added_units, walked_units_as_entries
    r = runs[name]
    ours = walked_units_as_entries(r)
    assert ours == added_units(Path(r["scenario"]["dir"])), ours

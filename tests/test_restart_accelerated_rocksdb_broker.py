"""``rebuild --as-restart`` and ``verify`` on a RocksDB consume queue store (5.5.1 ``storeType=defaultRocksDB``)
restarted after a crash with ``enableAcceleratedRecovery=true`` and ``recheckReputOffsetFromCq=true``, its
checkpoint's logicsPhysicalOffset inside a record or at a message planted inside one: the scenarios of
:mod:`test_restart_accelerated_inside_broker` and :mod:`test_restart_accelerated_planted_broker` on a RocksDB
store.  Checked against the broker's own restart (4 KiB commitlog files; ``consumequeue/`` (the database) and
``index/`` deleted; an ``abort`` file).

A RocksDB store's recovery does not read that offset: ``DefaultMessageStore.recover`` takes
``dispatchFromPhyOffset`` from ``RocksDBConsumeQueueStore.getDispatchFromPhyOffset``, the database's
max-physical-offset checkpoint as ``recover`` read it (``RocksDBConsumeQueueOffsetTable.getMaxPhyOffset``: 0 with no
entry, the deleted database), and no RocksDB dispatch store lowers a 0.  ``CommitLog.recoverAbnormally`` picks the
first file (the only one whose first record lies at or below 0) or the one ``commitLogRecoverMaxNum`` files back,
and starts it at ``0 - base``: the protective fall-back to the file's start below 0, the start itself at 0.  The walk
is a plain abnormal one from a file's start: it meets no planted message (it checks the host whole), and the second
reput from the min offset puts every unit again, the record at 0's too, and indexes only the last indexed record
again (``IndexService.buildIndex`` skips the records below it, those below the walk's file too).

* ``5.5.1-rocksdb-accel-inside-crash``: 40 single messages in seven files, ``commitLogRecoverMaxNum=3`` (the walk from
  the fifth file), the checkpoint 5 bytes into put 25's record, in that file, not its first.
* ``5.5.1-rocksdb-accel-planted-keyed-crash``: 39 messages and a host (key K9) holding a prepared message planted in
  its body (its physicalOffset field the host's offset, the key K9 too), the checkpoint at the planted bytes: the
  walk's CRC check cuts the commitlog at the host.
* ``5.5.1-rocksdb-accel-kept-inside-crash``: the 40 messages, the database kept (``keepQueues``) with its
  max-physical-offset checkpoint set 5 bytes into put 30 (``rocksdbCqCheckpoint``): there the walk begins (the last
  file whose first record lies at or below it), its first check fails and the commitlog is cut there; the second
  reput from offset 0 ends at the record crossing the cut.  ``verify`` on ``<dir>/before`` predicts that restart.
* ``5.5.1-rocksdb-accel-kept-planted-crash``: the database kept, its checkpoint at the planted message (the host
  without a key), which the walk accepts (the commitlog kept to the host's end): it queues and indexes nothing, the
  second reput from offset 0 reads the host whole; the first life's index files go (the checkpoint's index timestamp
  is 0), the reput puts every key again, the record at 0's too.  ``verify`` predicts that restart.
* Full suite only: ``-inside-all-crash`` (the checkpoint 5 bytes into put 30, the walk from the first file),
  ``-planted-crash`` (the host without the key) and ``-kept-planted-keyed-crash`` (the database's checkpoint at the
  keyed planted message: the walk indexes its key at the host's offset, the reput then the host alone).

First what the broker did (every record before the cut queued, the record at 0 too, none at the checkpoint's offset;
the keys of every record from the walk's file on, the last one's twice), then ``rebuild --as-restart`` on
``<dir>/before``: both column families key for key and ``index/`` byte for byte; for the kept databases what the
broker did, then ``verify``'s prediction.
"""
from __future__ import annotations

import base64
from collections import Counter
from pathlib import Path

import broker_harness as bh
import pytest
from broker_layout_scenarios import Messages
from broker_rocksdb_runs import (
    as_restart_database_is_the_broker_s,
    as_restart_index_is_the_broker_s,
    database,
    kept_database_as_predicted,
    parsed_database,
)
from test_restart_accelerated_inside_broker import _records
from test_restart_accelerated_planted_broker import ADD, HOST, HOST_BODY, KEYED_HOST_SIZE, PHYSICAL_OFFSET_AT, planted
from test_restart_reput_before_recovery_more_broker import INDEX, SIZE, _key_offsets

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
pytest.importorskip("rocksdict")


def _scenarios() -> dict[str, list[dict]]:
    conf = {"storeType": "defaultRocksDB", "mappedFileSizeCommitLog": str(SIZE), "recheckReputOffsetFromCq": "true",
            "enableAcceleratedRecovery": "true", **INDEX}
    g, p = Messages(188, ["T0", "T1", "T2"]), Messages(212, ["T0", "T1", "T2"])   # the file queue modules' messages
    singles, before_host = [g.one() for _ in range(40)], [p.one() for _ in range(HOST)]
    every = {"name": "5.5.1-rocksdb-accel-inside-all-crash", "abort": True, "keepBefore": True, "messages": singles,
             "checkpointLogicsPhysicalOffset": {"put": 30, "add": 5}, "config": conf}
    # seven files: the walk goes back three (the last one's base 4 * SIZE), the checkpoint inside put 25 there
    inside = {**every, "name": "5.5.1-rocksdb-accel-inside-crash", "config": {**conf, "commitLogRecoverMaxNum": "3"},
              "checkpointLogicsPhysicalOffset": {"put": 25, "add": 5}}
    host = {"topic": "T0", "queueId": 0, "body": base64.b64encode(b"h" * HOST_BODY).decode()}
    plant = {"put": HOST, "add": ADD, "bytes": base64.b64encode(planted()).decode()}
    plain = {**every, "name": "5.5.1-rocksdb-accel-planted-crash", "messages": [*before_host, host],
             "plantBytes": plant, "checkpointLogicsPhysicalOffset": {"put": HOST, "add": ADD}}
    keyed = {**plain, "name": "5.5.1-rocksdb-accel-planted-keyed-crash",
             "messages": [*before_host, {**host, "keys": "K9"}],
             "plantBytes": {**plant, "offsetFieldAt": PHYSICAL_OFFSET_AT,
                            "bytes": base64.b64encode(planted(host_size=KEYED_HOST_SIZE)).decode()}}
    # the database kept, its max-physical-offset checkpoint set 5 bytes into put 30 (file 5, not its first record)
    kept = {**every, "name": "5.5.1-rocksdb-accel-kept-inside-crash", "keepQueues": True,
            "rocksdbCqCheckpoint": {"put": 30, "add": 5}}
    del kept["checkpointLogicsPhysicalOffset"]
    kept_planted = {**plain, "name": "5.5.1-rocksdb-accel-kept-planted-crash", "keepQueues": True,
                    "rocksdbCqCheckpoint": {"put": HOST, "add": ADD}}   # at the planted message
    del kept_planted["checkpointLogicsPhysicalOffset"]
    kept_keyed = {**keyed, "name": "5.5.1-rocksdb-accel-kept-planted-keyed-crash", "keepQueues": True,
                  "rocksdbCqCheckpoint": {"put": HOST, "add": ADD}}   # the planted message shares the host's key
    del kept_keyed["checkpointLogicsPhysicalOffset"]
    return {"5.5.1": [inside, keyed, kept, kept_planted, every, plain, kept_keyed]}


# with the full suite only: -planted (no key; -keyed plants the same bytes, with a key the walk would index),
# -inside-all (the walk from the first file; -inside's from a later one, whose records below it get no key) and
# -kept-planted-keyed (the walk's key first in the index: -kept-planted's walk puts none)
SCENARIOS = {line: bh.bounded(scs, ("-accel-planted-crash", "-inside-all-crash", "-kept-planted-keyed-crash"))
             for line, scs in _scenarios().items()}
NAMES = [pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs if "keepQueues" not in sc]
KEPT = [pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs
        if "keepQueues" in sc and "-planted-" not in sc["name"]]
KEPT_PLANTED = [pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs
                if "keepQueues" in sc and "-planted-" in sc["name"]]
_RUNS: dict[str, dict] = {}
# one store at a time in each JVM: RocksDB stores written in threads crashed the JVM
STORES = bh.Stores(SCENARIOS, "RocksDB store(s), each restarted after a crash", threads=1)


@pytest.fixture
def runs(request) -> dict[str, dict]:
    """Every scenario as the broker wrote and restarted it, and our ``--as-restart`` rebuild of it (once)."""
    return bh.written_once(request, _RUNS, STORES, every=True, then=bh.restart_checked)


@pytest.mark.parametrize("name", NAMES)
def test_the_broker_walked_from_a_file_s_start_past_the_checkpoint(runs, name: str) -> None:
    """The broker's own files: the checkpoint's offset inside a record (at the planted bytes), not a file's first,
    past the start of the file the walk began at (the first; -inside: the one ``commitLogRecoverMaxNum`` files back,
    only the first file's first record lying at or below the empty database's 0, the checkpoint's offset in that
    file), yet the walk read that file from its start by the records' own boundaries: it kept the commitlog to its
    end (-inside) or cut it at the host's start (-planted: the planted bytes broke the host's body CRC, which the walk
    checks).  Every record before the cut is queued, the one at offset 0
    too, none at the checkpoint's offset (the second reput from offset 0); the index holds the keys of every record
    from the walk's file on, in commitlog order (the reput puts none below the last one), then the last one's again."""
    r = runs[name]
    d, w = Path(r["scenario"]["dir"]), r["written"]
    assert w.get("ok"), w.get("error")
    recs = _records(d)
    files = len(list((d / "before" / "commitlog").iterdir()))
    walk_from = max(files - int(r["scenario"]["config"].get("commitLogRecoverMaxNum", "10")), 0) * SIZE
    assert ("-inside-crash" in name) == (walk_from > 0), (name, files)
    at = w["checkpointLogicsPhysicalOffset"]
    host = next(x for x in recs if x["offset"] < at < x["offset"] + x["size"])
    assert host["offset"] % SIZE and host["offset"] > walk_from, "the checkpoint's offset lies in a file's first record"
    if "-inside-crash" in name:
        assert host["offset"] < walk_from + SIZE, "the checkpoint's offset lies outside the walk's file"
    cut = recs[-1]["offset"] + recs[-1]["size"]
    if "-planted-" in name:
        assert host is recs[-1] and w["plantedAt"] == at == host["offset"] + ADD, (w, host)
        if "-keyed-" in name:
            assert host["size"] == KEYED_HOST_SIZE, f"the host record is {host['size']} bytes: set KEYED_HOST_SIZE"
        cut = host["offset"]
    assert w["maxPhyOffset"] == cut, (w["maxPhyOffset"], cut)
    below = [x["offset"] for x in recs if x["offset"] < cut]
    units = database(d / "expected" / "consumequeue")["default"]
    queued = sorted(int.from_bytes(v[:8], "big") for v in units.values())
    assert below[0] == 0 and queued == below, "the broker queued other records than every one from offset 0"
    keys = _key_offsets(d).tolist()   # every message before the host has a key (its uniqKey)
    once = Counter(keys)[keys[-1]] // 2
    first, again = keys[:len(keys) - once], keys[len(keys) - once:]
    assert sorted(set(first)) == [o for o in below if o >= walk_from] and first == sorted(first), \
        "the broker indexed other records than every one from the walk's file to the cut, in commitlog order"
    assert once and again == [below[-1]] * once, "the last record's keys not put again"


@pytest.mark.parametrize("name", NAMES)
def test_as_restart_gives_the_broker_s_key_value_set(runs, name: str) -> None:
    """Both column families: exactly the keys and values of the database the broker's restart wrote."""
    as_restart_database_is_the_broker_s(runs[name])


@pytest.mark.parametrize("name", NAMES)
def test_as_restart_index_files_are_the_broker_s(runs, name: str) -> None:
    """``index/``: the broker's restart's files, byte for byte, file by file in order."""
    as_restart_index_is_the_broker_s(runs[name])



@pytest.mark.parametrize("name", KEPT)
def test_a_kept_database_s_checkpoint_inside_a_record_cuts_there(runs, name: str) -> None:
    """The broker's own files, the database kept with its max-physical-offset checkpoint set inside a record (not its
    file's first): the walk began there (``RocksDBConsumeQueueStore.getDispatchFromPhyOffset``), its first check
    failed and the commitlog was cut there; the second reput from offset 0 read the records before the one crossing
    the cut, not that one: every queue's max entry lies below it, the checkpoint is its start."""
    r = runs[name]
    d, w = Path(r["scenario"]["dir"]), r["written"]
    assert w.get("ok"), w.get("error")
    recs = _records(d)
    at = w["rocksdbCqCheckpoint"]
    host = next(x for x in recs if x["offset"] < at < x["offset"] + x["size"])
    assert host["offset"] % SIZE, "the checkpoint's offset lies in a file's first record"
    assert w["rocksdbCqCheckpointBefore"] == recs[-1]["offset"] + recs[-1]["size"], "the first life's checkpoint"
    assert w["maxPhyOffset"] == at, "the restart cut the commitlog elsewhere than at the database's checkpoint"
    after, cp_after = parsed_database(d / "expected" / "consumequeue")
    assert cp_after == host["offset"], (cp_after, host)
    maxima = sorted(int(q.max[0]) for q in after.values() if q.max is not None)
    assert maxima and maxima[-1] < host["offset"] and maxima[-1] in [x["offset"] for x in recs]


@pytest.mark.parametrize("name", KEPT)
def test_verify_predicts_the_restart_on_the_kept_database(runs, name: str) -> None:
    """``verify`` on ``<dir>/before`` (the database kept): the cut, the checkpoint after, and queue by queue the max
    and min entries and the units left above the new max of the database the broker's restart left; the first
    life's index files deleted (the checkpoint's index timestamp is 0) and every key of the broker's new one: the
    second reput's from offset 0 (the record at 0's too) up to the record crossing the cut, not that one's."""
    r = runs[name]
    d = Path(r["scenario"]["dir"])
    p, _ = kept_database_as_predicted(r)
    cp_after = parsed_database(d / "expected" / "consumequeue")[1]
    names = [{f.name for f in (d / which / "index").iterdir()} for which in ("before", "expected")]
    assert names[0] and not names[0] & names[1], names
    keys = _key_offsets(d).tolist()
    assert 0 in keys and max(keys) < cp_after, "the broker indexed the record crossing the cut, or not the one at 0"
    assert set(p["index_files_deleted"]) == names[0], (p["index_files_deleted"], names)
    assert p["index_keys_put_again"] == len(keys), (p["index_keys_put_again"], p["notes"])


@pytest.mark.parametrize("name", KEPT_PLANTED)
def test_a_kept_database_s_walk_accepts_the_planted_message(runs, name: str) -> None:
    """The broker's own files, the database kept with its checkpoint at a prepared message planted in the last
    record's body: the walk began there and accepted it (the commitlog kept to the host's end), which queued nothing;
    the second reput from offset 0 read the host whole: the database holds every record's unit, the record at 0's
    and the host's too, its checkpoint the host's end.  The index files of the first life went (the checkpoint's
    index timestamp is 0): the new one holds every key of the first life's files once (the walk put none, the reput
    from an empty index every key from offset 0 on); -keyed: the planted message's key at the host's offset (its
    physicalOffset field), then the host's own, nothing below it (``IndexService.buildIndex``: ``endPhyOffset``)."""
    r = runs[name]
    d, w = Path(r["scenario"]["dir"]), r["written"]
    assert w.get("ok"), w.get("error")
    recs = _records(d)
    host = recs[-1]
    assert w["plantedAt"] == w["rocksdbCqCheckpoint"] == host["offset"] + ADD and host["offset"] % SIZE, (w, host)
    assert w["maxPhyOffset"] == host["offset"] + host["size"], "the walk did not accept the planted message"
    after, cp_after = parsed_database(d / "expected" / "consumequeue")
    assert sorted(int(o) for q in after.values() for o in q.phy) == [x["offset"] for x in recs]
    assert cp_after == host["offset"] + host["size"], (cp_after, host)
    names = [{f.name for f in (d / which / "index").iterdir()} for which in ("before", "expected")]
    assert names[0] and not names[0] & names[1], names
    keys = _key_offsets(d).tolist()
    if "-keyed-" in name:
        assert keys == [host["offset"]] * 2, "the broker indexed other records"
    else:
        first_life = _key_offsets(d, "before").tolist()
        assert 0 in keys and Counter(keys) == Counter(first_life), "the broker indexed other keys than the first life"


@pytest.mark.parametrize("name", KEPT_PLANTED)
def test_verify_predicts_the_walk_over_the_planted_message(runs, name: str) -> None:
    """``verify`` on ``<dir>/before`` (the database kept): the cut at the host's end, the checkpoint after, queue by
    queue the max and min entries of the database the broker's restart left, the index files deleted and every key
    of the broker's new index file (the walk's and the reput's)."""
    r = runs[name]
    d = Path(r["scenario"]["dir"])
    p, _ = kept_database_as_predicted(r)
    names = [{f.name for f in (d / which / "index").iterdir()} for which in ("before", "expected")]
    assert set(p["index_files_deleted"]) == names[0] - names[1], (p["index_files_deleted"], names)
    assert p["index_keys_put_again"] == len(_key_offsets(d)), (p["index_keys_put_again"], p["notes"])

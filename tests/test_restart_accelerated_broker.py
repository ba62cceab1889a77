"""``rebuild --as-restart`` and ``verify``'s next-start prediction on 5.5.1 stores restarted after a crash with
``enableAcceleratedRecovery=true`` or ``checkCommitLogOffsetOnRecover=true``, checked against the broker's own
restart.

The JVM harness (:mod:`broker_harness`, ``tests/broker/``) writes the ``plain`` consume queue ext store of
:mod:`broker_cqext_scenarios` with the 5.5.1 store (three 32 KiB segments), leaves an ``abort`` file and
restarts the broker with ``consumequeue/``, ``consumequeue_ext/`` and ``index/`` deleted (``<dir>/before/``:
the store as that restart found it).  5.5.1 ``CommitLog.recoverAbnormally`` reads both settings:

* ``-accel``: the record six puts before the end damaged (body CRC), the checkpoint's logicsPhysicalOffset set
  to the record three puts before the end (what a queue flush leaves: the offset of the last record queued),
  ``enableAcceleratedRecovery=true``: the walk starts inside its start segment at that offset, past the damaged
  record, so it cuts nothing and dispatches only from there;
  ``-accel-off`` is the same store without the setting (the walk from the segment's start cuts at the damaged
  record): the broker wrote other files.
* ``-accel-inside``: undamaged, the checkpoint's logicsPhysicalOffset moved 5 bytes into that record: the walk
  reads no record there and the commitlog is cut at that offset (nothing dispatched, the later bytes dropped).
* ``-accel-load-fails``: logicsPhysicalOffset set to 0 (physicMsgTimestamp set): the broker's ``load()`` fails
  (``ConsumeQueueStore.getDispatchFromPhyOffset`` throws); ``--as-restart`` refuses with exit code 2.
* ``-accel-index-rocksdb``: as ``-accel`` with ``indexRocksDBEnable=true`` and the last ten messages put without
  a unique key (``IndexRocksDBStore.buildIndex`` skips them): the message RocksDB store's lastOffsetPy is the
  offset of the record eleven puts before the end, below the checkpoint's and the damaged record's;
  ``DefaultMessageStore.recover`` starts the walk there, so it cuts at the damaged record.  ``before/`` keeps
  ``rocksdbstore/``.
  ``--as-restart`` writes the database that restart leaves: the store's own ``rocksdbstore/`` (copied) with
  what its dispatch adds, the key/value set of the broker's ``expected/rocksdbstore/``.  ``RDBIDX_FULL=1`` adds two
  crash restarts with ``indexRocksDBEnable=true`` and no accelerated recovery (every message with a unique key):
  ``-crash-index-rocksdb`` (the database keeps the entries of the records after the damaged one, which the
  recovery cuts off, and its lastOffsetPy past the cut: the restart adds nothing) and ``-crash-index-rocksdb-lost``
  (``rocksdbstore/`` deleted before the restart: the broker creates it empty, the recovery walks from the first
  segment and the database gets the entries of every record before the cut).  With PIPELINES_FULL_SUITE=1 also
  ``-crash-index-rocksdb-lag`` (undamaged): before the crash restart the harness deletes the index entries of
  the records after the one eight puts before the end and of the one ten before the end, and sets lastOffsetPy
  to the former (a crash that lost the index thread's last batches and an earlier one): the restart puts back
  those from lastOffsetPy on, not the earlier hole (``IndexRocksDBStore.buildIndex`` skips records below it).
* ``-offset-check``: the physicalOffset field of the record six puts before the end set four segments further
  (its body CRC holds), ``checkCommitLogOffsetOnRecover=true``: the walk ends at that record;
  ``-offset-check-off``: without the setting the broker accepts it and goes on.

Each ``--as-restart`` rebuild of ``before/`` must write the broker's files byte for byte; ``verify`` says it
predicts no start for the store whose load fails.  ``verify``'s prediction with either setting, against the
broker's restart on its own queue files: :mod:`test_restart_prediction_broker` (``-accel-crash-kept``,
``-offset-check-crash-kept``).
"""
from __future__ import annotations

import os
from pathlib import Path

import broker_harness as bh
import pytest
from broker_cqext_scenarios import cqext_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
AREAS = ("consumequeue", "consumequeue_ext", "index")
ACCEL = {"enableAcceleratedRecovery": "true"}
CHECK = {"checkCommitLogOffsetOnRecover": "true"}
INDEX_ROCKSDB = {"indexRocksDBEnable": "true"}


def _scenarios() -> list[dict]:
    sc = cqext_scenarios(LINE)[0]   # plain
    name = sc["name"]
    puts = sum(1 for m in sc["messages"] if "sleepMs" not in m)
    crash = {**sc, "abort": True}

    def conf(extra: dict) -> dict:
        return {**sc["config"], **extra}
    damaged = {**crash, "damageMessage": puts - 6}
    foreign = {**crash, "damageOffsetField": puts - 6, "keepBefore": True}
    # the checkpoint as after a queue flush that reached the record three puts before the end (a flush may lag)
    at = {"put": puts - 3}
    return [
        {**damaged, "name": f"{name}-accel", "config": conf(ACCEL), "checkpointLogicsPhysicalOffset": at},
        {**damaged, "name": f"{name}-accel-off", "checkpointLogicsPhysicalOffset": at},
        {**crash, "name": f"{name}-accel-inside", "config": conf(ACCEL), "keepBefore": True,
         "checkpointLogicsPhysicalOffset": {**at, "add": 5}},
        {**crash, "name": f"{name}-accel-load-fails", "config": conf(ACCEL), "keepBefore": True, "loadMayFail": True,
         "keepQueues": True, "checkpointLogicsPhysicalOffset": {"set": 0}},
        {**damaged, "name": f"{name}-accel-index-rocksdb", "config": conf({**ACCEL, "indexRocksDBEnable": "true"}),
         "checkpointLogicsPhysicalOffset": at, "messages": _without_unique_keys(sc["messages"], 10)},
        {**foreign, "name": f"{name}-offset-check", "config": conf(CHECK)},
        {**foreign, "name": f"{name}-offset-check-off"},
    ] + ([
        {**damaged, "name": f"{name}-crash-index-rocksdb", "config": conf(INDEX_ROCKSDB)},
        {**damaged, "name": f"{name}-crash-index-rocksdb-lost", "config": conf(INDEX_ROCKSDB),
         "dropRocksdbStore": True},
    ] if os.environ.get("RDBIDX_FULL") else []) + [
        {**crash, "name": f"{name}-crash-index-rocksdb-lag", "config": conf(INDEX_ROCKSDB),
         "rocksdbIndexLag": {"put": puts - 8, "hole": puts - 10}},
    ]


def _without_unique_keys(messages: list[dict], last: int) -> list[dict]:
    """``messages`` with the last ``last`` puts carrying no unique key (nothing for the RocksDB index)."""
    out = [dict(m) for m in messages]
    for m in [m for m in out if "sleepMs" not in m][-last:]:
        m.pop("uniqKey", None)
    return out


# the "-off" stores (the same without the setting: the harness shows the setting changed the broker's
# restart) and the RocksDB index that lost batches before its restart (-lag: the lastOffsetPy filter; the
# -accel-index-rocksdb restart stays) with PIPELINES_FULL_SUITE=1 only
SCENARIOS = {LINE: bh.bounded(_scenarios(), ("-off", "-lag"))}
NAMES = [sc["name"] for sc in SCENARIOS[LINE]]
REBUILT = [n for n in NAMES if not n.endswith("-off")]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "store(s), each restarted after a crash", threads=1)


@pytest.fixture
def runs(request) -> dict[str, dict]:
    """Every scenario as the broker wrote and restarted it, and our ``--as-restart`` rebuilds (once)."""
    def then(r: dict) -> None:
        if r["scenario"]["name"] in REBUILT:
            r["rebuild"] = bh.rebuild_as_restart(Path(r["scenario"]["dir"]), "5.5")
    return bh.written_once(request, _RUNS, STORES, then=then, every=True)


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) if root.is_dir() else []


def _same_as_broker(r: dict) -> None:
    reb = r["rebuild"]
    if reb["code"] != 0:
        why = [ln for ln in reb["stderr"].splitlines() if ln.startswith("error:")] or [reb["stderr"][-1000:]]
        pytest.fail(f"rebuild --as-restart exited {reb['code']}: {' | '.join(why)}")
    d = Path(r["scenario"]["dir"])
    for area in AREAS[:2]:
        exp, ours = d / "expected" / area, d / "ours" / area
        assert _files(ours) == _files(exp), f"{area} file set differs"
        for rel in _files(exp):
            bh.same_bytes((exp / rel).read_bytes(), (ours / rel).read_bytes(), f"{area}/{rel}")
    # index files are named by their creation time: compared in name order
    exp_idx, our_idx = _files(d / "expected" / "index"), _files(d / "ours" / "index")
    assert len(our_idx) == len(exp_idx), f"index file count {len(our_idx)} != broker's {len(exp_idx)}"
    for e, o in zip(exp_idx, our_idx):
        bh.same_bytes((d / "expected" / "index" / e).read_bytes(), (d / "ours" / "index" / o).read_bytes(),
                      f"index file {o} vs broker's {e}")


def _area_bytes(d: Path) -> dict[str, bytes]:
    return {f"{a}/{rel}": (d / "expected" / a / rel).read_bytes() for a in AREAS[:2]
            for rel in _files(d / "expected" / a)}


def _record_end(d: Path, size: int, at: int) -> int:
    data = (d / "before" / "commitlog" / f"{at - at % size:020d}").read_bytes()
    return at + int.from_bytes(data[at % size:at % size + 4], "big")


@pytest.mark.parametrize("name", [n for n in REBUILT if "load-fails" not in n])
def test_as_restart_matches_the_broker(runs, name: str) -> None:
    """consumequeue/, consumequeue_ext/ and index/: the files the broker's restart wrote, byte for byte."""
    _same_as_broker(runs[name])


def test_accelerated_recovery_changes_what_the_restart_writes(runs) -> None:
    """The harness itself: with the setting the walk started at the checkpoint's offset, past the damaged record
    (no cut there, fewer files, starting later); without it the restart cut at the damaged record."""
    on = runs["5.5.1-cqext-plain-accel"]["written"]
    assert on["maxPhyOffset"] > on["checkpointLogicsPhysicalOffset"] > on["damagedRecord"]
    if "5.5.1-cqext-plain-accel-off" not in runs:
        return   # the store without the setting: PIPELINES_FULL_SUITE=1
    off = runs["5.5.1-cqext-plain-accel-off"]["written"]
    assert off["maxPhyOffset"] == off["damagedRecord"] < off["checkpointLogicsPhysicalOffset"]
    d_on = Path(runs["5.5.1-cqext-plain-accel"]["scenario"]["dir"])
    d_off = Path(runs["5.5.1-cqext-plain-accel-off"]["scenario"]["dir"])
    assert _area_bytes(d_on) != _area_bytes(d_off)


def test_accelerated_recovery_inside_a_record_cuts_there(runs) -> None:
    w = runs["5.5.1-cqext-plain-accel-inside"]["written"]
    assert w["maxPhyOffset"] == w["checkpointLogicsPhysicalOffset"]
    d = Path(runs["5.5.1-cqext-plain-accel-inside"]["scenario"]["dir"])
    assert not _files(d / "expected" / "consumequeue")   # nothing dispatched


def test_accelerated_recovery_without_a_checkpoint_offset_fails_to_load(runs) -> None:
    r = runs["5.5.1-cqext-plain-accel-load-fails"]
    assert r["written"].get("loadFailed") and r["written"]["checkpointLogicsPhysicalOffset"] == 0
    reb = r["rebuild"]
    assert reb["code"] == 2 and "fails to load" in reb["stderr"], reb["stderr"][-2000:]


def test_offset_check_ends_the_recovery_at_the_foreign_offset(runs) -> None:
    on = runs["5.5.1-cqext-plain-offset-check"]
    size = int(on["scenario"]["config"]["mappedFileSizeCommitLog"])
    at = on["written"]["damagedOffsetRecord"]
    assert on["written"]["maxPhyOffset"] == at
    if "5.5.1-cqext-plain-offset-check-off" not in runs:
        return   # the store without the setting: PIPELINES_FULL_SUITE=1
    off = runs["5.5.1-cqext-plain-offset-check-off"]
    assert off["written"]["maxPhyOffset"] > _record_end(Path(off["scenario"]["dir"]), size, at)


def _verify(d: Path) -> dict:
    return bh.verified(d / "before", d / "broker.conf", "5.5")


def test_verify_refuses_to_predict_a_restart_that_fails(runs) -> None:
    r = runs["5.5.1-cqext-plain-accel-load-fails"]
    report = _verify(Path(r["scenario"]["dir"]))
    assert report["restart"] is None and "fails to load" in report["restart_note"]


def _last_offset_py(db: Path) -> int:
    """``lastOffsetPy`` of the default family of the broker's message RocksDB (MessageRocksDBStorage), read raw."""
    import rocksdict as rd
    r = rd.Rdict(str(db), options=rd.Options(raw_mode=True), column_families={
        f: rd.Options(raw_mode=True) for f in rd.Rdict.list_cf(str(db)) if f != "default"},
        access_type=rd.AccessType.read_only())
    try:
        return int.from_bytes(r[b"lastOffsetPy"], "big")
    finally:
        r.close()


def test_index_rocksdb_offset_moves_the_accelerated_start(runs) -> None:
    """The RocksDB index's lastOffsetPy lies below the checkpoint's offset and the damaged record: the broker's
    walk started there and cut at the damaged record (``-accel`` does not); ``--as-restart`` (above) and
    ``verify``'s prediction agree."""
    r = runs["5.5.1-cqext-plain-accel-index-rocksdb"]
    w, d = r["written"], Path(r["scenario"]["dir"])
    last = _last_offset_py(d / "before" / "rocksdbstore")
    assert 0 < last < w["damagedRecord"] < w["checkpointLogicsPhysicalOffset"]
    assert w["maxPhyOffset"] == w["damagedRecord"]
    assert runs["5.5.1-cqext-plain-accel"]["written"]["maxPhyOffset"] > w["damagedRecord"]
    p = _verify(d)["restart"]
    assert p is not None and p["recovery_cut"] == w["maxPhyOffset"] and p["abnormal_dispatch_from"] == last


def _index_family(db: Path) -> dict[bytes, bytes]:
    """Every key/value of the index (``default``) family, read from a copy (a read-only opening may write)."""
    import shutil

    from pipelines.index_rocksdb import read_message_rocksdb

    copy = db.parent / f"{db.parent.name}-read-{db.name}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(db, copy)
    return read_message_rocksdb(copy)["default"]


@pytest.mark.parametrize("name", [n for n in REBUILT if "index-rocksdb" in n])
def test_as_restart_writes_the_database_the_restart_leaves(runs, name: str) -> None:
    """``rocksdbstore/``'s index family after ``--as-restart``: the broker's after its restart, key for key and
    value for value (lastOffsetPy and lastStoreTimeStamp included).
    ``-accel-index-rocksdb``: the store's database holds every entry before the restart (its walk from
    lastOffsetPy puts the same again); ``-crash-index-rocksdb``: the entries of the records the recovery cuts off
    stay; ``-crash-index-rocksdb-lost``: a database the restart creates, holding the records before the cut."""
    r = runs[name]
    reb = r["rebuild"]
    assert reb["code"] == 0, reb["stderr"][-2000:]
    assert "is not rebuilt (--as-restart" not in reb["stderr"]
    d, w = Path(r["scenario"]["dir"]), r["written"]
    expected, ours = _index_family(d / "expected" / "rocksdbstore"), _index_family(d / "ours" / "rocksdbstore")
    missing, extra = sorted(set(expected) - set(ours)), sorted(set(ours) - set(expected))
    assert not missing and not extra, f"keys only the broker has {missing[:3]}, only ours {extra[:3]}"
    assert [k for k in expected if expected[k] != ours[k]] == []
    special = (b"lastOffsetPy", b"lastStoreTimeStamp")
    offsets = sorted(int.from_bytes(k[-8:], "big") for k in expected if k not in special)
    if name.endswith("-lag"):   # put back from lastOffsetPy on, the hole below it not
        before = {int.from_bytes(k[-8:], "big") for k in _index_family(d / "before" / "rocksdbstore")
                  if k not in special}
        last, hole = w["rocksdbIndexLastOffsetPy"], w["rocksdbIndexHole"]
        assert w["rocksdbIndexDeleted"] > 0 and hole < last and max(before) == last and hole not in before
        assert hole not in offsets and max(offsets) > last and set(offsets) > before
        return
    assert offsets and offsets[0] < w["damagedRecord"]
    if name.endswith("-lost"):
        assert not (d / "before" / "rocksdbstore").exists() and offsets[-1] < w["damagedRecord"]
    else:
        before = _index_family(d / "before" / "rocksdbstore")
        assert set(before) <= set(ours)
        if name.endswith("-crash-index-rocksdb"):   # kept past the cut
            assert offsets[-1] > w["damagedRecord"] and _last_offset_py(d / "ours" / "rocksdbstore") > w["maxPhyOffset"]

"""``rebuild --as-restart`` where the start's second reput begins before the first record the recovery
dispatched, checked against the 5.5.1 broker's own restart (stores: :mod:`broker_reput_before_recovery_scenarios`).

A RocksDB consume queue store (``storeType=defaultRocksDB``) with ``recheckReputOffsetFromCq=true`` and more
commitlog files than ``commitLogRecoverMaxNum`` (10, the default: 4 KiB files), restarted with its database and
``index/`` deleted: the empty database's max physical offset is 0, so ``CommitLog.recoverNormally`` /
``recoverAbnormally`` walk back over the last 10 files without finding one whose first record lies at or below
it and start at the tenth from the end; ``DefaultMessageStore.doRecheckReputOffsetFromCq`` then sets the reput at
the commitlog's min offset (the queue table is empty), which walks every file again: the records below the
recovery's start get their units (the record at offset 0's too), but ``IndexService.buildIndex`` skips them,
lying below the last index file's ``endPhyOffset`` (:class:`store_format.restart_reput.SecondReput`).  The store
ends in a keyed message (indexed twice).  Clean (``-before``) and crashed (``-before-crash``) shutdowns.  The same
with consume queue files (``-files-prepared``): the last ten files and more hold prepared transaction messages
only, so the recovery queues nothing and the queues' max physical offset gives the start's reput no later start
than the min offset; it queues every record into the empty queues, indexing none below the recovery's start.

First what the broker did (its database holds units of records in the first file; its index no key below the
recovery's start), then ``rebuild --as-restart`` on ``<dir>/before``: the broker's key/value set, both column
families (consume queue files: byte for byte), and its ``index/`` files byte for byte.

The ``-kept`` variants restart the broker on the same store keeping its database and ``index/`` (``keepQueues``):
the recovery starts at the last file (its first record lies below the database's checkpoint), the second reput
again at offset 0; ``verify`` on ``<dir>/before`` must predict the database the broker left, queue by queue, its
checkpoint, and (clean shutdown) how many index keys the start adds.  The consume queue file store's ``-kept``
variant (clean): the normal recovery dispatches above the queues' max physical offset (nothing is queued), the
second reput starts there; ``verify`` must predict no queue change (the broker's files stay as they were) and the
index keys the broker's start adds.
"""

from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import numpy as np
import pytest
from broker_reput_before_recovery_scenarios import RECOVER_MAX_NUM, reput_before_recovery_scenarios
from broker_rocksdb_runs import as_restart_index_is_the_broker_s, database, queues_as_predicted, same_databases

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
pytest.importorskip("rocksdict")

LINE = "5.5.1"


def _scenarios() -> list[dict]:
    deleted = reput_before_recovery_scenarios(LINE)
    return deleted + [{**sc, "name": f"{sc['name']}-kept", "keepQueues": True}
                      for sc in deleted if "-rocksdb-" in sc["name"] or not sc.get("abort")]


SCENARIOS = _scenarios()
CASES = [pytest.param(sc["name"], id=sc["name"]) for sc in SCENARIOS if not sc.get("keepQueues")]
KEPT = [pytest.param(sc["name"], id=sc["name"]) for sc in SCENARIOS
        if sc.get("keepQueues") and "-rocksdb-" in sc["name"]]
KEPT_FILES = [pytest.param(sc["name"], id=sc["name"]) for sc in SCENARIOS
              if sc.get("keepQueues") and "-rocksdb-" not in sc["name"]]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores({LINE: SCENARIOS}, "RocksDB store(s), each restarted", threads=1)


@pytest.fixture
def restarted(request) -> dict:
    """The scenario as the broker wrote and restarted it, and our ``--as-restart`` rebuild of it, or with its
    database kept our ``verify`` (once each)."""
    return bh.written_once(request, _RUNS, STORES, then=bh.restart_checked)




def _recovery_start(d: Path) -> int:
    """Base offset of the file the broker's recovery starts at: the tenth from the end (none of the last 10
    starts at or below the empty database's max physical offset 0)."""
    bases = sorted(int(f.name) for f in (d / "before" / "commitlog").iterdir() if f.name.isdigit())
    assert len(bases) > RECOVER_MAX_NUM, f"{len(bases)} commitlog files: the recovery reaches the first"
    return bases[-RECOVER_MAX_NUM]


def _index_offsets(folder: Path) -> np.ndarray:
    """The commitlog offsets of every key of the index files of ``folder``."""
    from store_format.indexfile import read_header
    from store_format.layout import INDEX_ENTRY_SIZE, INDEX_HEADER_SIZE, INDEX_SLOT_SIZE
    out = []
    for f in sorted(folder.iterdir()):
        if not f.name.isdigit():
            continue
        data = f.read_bytes()
        at = INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * 101   # maxHashSlotNum of broker_rocksdb_scenarios
        for i in range(1, read_header(data).index_count):
            e = at + i * INDEX_ENTRY_SIZE
            out.append(int.from_bytes(data[e + 4:e + 12], "big", signed=True))
    return np.asarray(out, dtype=np.int64)


def _unit_offsets(d: Path) -> np.ndarray:
    """The commitlog offsets of the units the broker's restart left: its database's, or its consume queue files'
    (20-byte units; blank ones, size 0 or Integer.MAX_VALUE, left out)."""
    if (d / "expected" / "consumequeue" / "CURRENT").is_file():
        units = database(d / "expected" / "consumequeue")["default"]
        return np.asarray([int.from_bytes(v[:8], "big") for v in units.values()], dtype=np.int64)
    out = []
    for f in sorted((d / "expected" / "consumequeue").rglob("*")):
        if f.is_file():
            u = np.frombuffer(f.read_bytes(), dtype=np.dtype([("off", ">i8"), ("size", ">i4"), ("tags", ">i8")]))
            out.append(u["off"][(u["size"] > 0) & (u["size"] < 2**31 - 1)].astype(np.int64))
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


@pytest.mark.parametrize("name", CASES)
def test_the_broker_s_reput_started_below_its_recovery(restarted, name: str) -> None:
    """The broker's own files: units of records below the recovery's start, the record at offset 0's too (the
    second reput's), and no index key below it (``buildIndex`` skipped them), but keys from it on."""
    d = Path(restarted["scenario"]["dir"])
    start = _recovery_start(d)
    phys = _unit_offsets(d)
    assert (phys == 0).any() and (phys < start).sum() > 10, f"{(phys < start).sum()} unit(s) below {start}"
    keys = _index_offsets(d / "expected" / "index")
    assert len(keys) and keys.min() >= start, f"index keys from offset {keys.min() if len(keys) else None}, " \
                                              f"the recovery started at {start}"


@pytest.mark.parametrize("name", CASES)
def test_as_restart_gives_the_broker_s_queues(restarted, name: str) -> None:
    """Both column families: exactly the keys and values of the database the broker's restart wrote."""
    r = restarted["rebuild"]
    if r["code"] != 0:
        why = [ln for ln in r["stderr"].splitlines() if ln.startswith("error:")] or [r["stderr"][-1000:]]
        pytest.fail(f"rebuild --as-restart exited {r['code']}: {' | '.join(why)}")
    d = Path(restarted["scenario"]["dir"])
    if "-rocksdb-" not in name:   # consume queue files, byte for byte
        exp, ours_cq = d / "expected" / "consumequeue", d / "ours" / "consumequeue"
        names = sorted(str(p.relative_to(exp)) for p in exp.rglob("*") if p.is_file())
        assert names and names == sorted(str(p.relative_to(ours_cq)) for p in ours_cq.rglob("*") if p.is_file())
        for rel in names:
            bh.same_bytes((exp / rel).read_bytes(), (ours_cq / rel).read_bytes(), f"consumequeue/{rel}")
        return
    same_databases(d / "expected" / "consumequeue", d / "ours" / "consumequeue")


@pytest.mark.parametrize("name", CASES)
def test_as_restart_index_files_are_the_broker_s(restarted, name: str) -> None:
    """``index/``: the broker's restart's files, byte for byte, file by file in order."""
    as_restart_index_is_the_broker_s(restarted)



@pytest.mark.parametrize("name", KEPT)
def test_verify_predicts_the_restart_on_the_kept_database(restarted, name: str) -> None:
    """The broker's recovery started at the last file and its reput at offset 0 (units below the recovery's start
    unchanged); verify predicts each queue's "max"/"min" entries and units above the max, the checkpoint and
    (clean shutdown) the index keys the start adds."""
    from store_format.indexfile import read_header
    d = Path(restarted["scenario"]["dir"])
    _recovery_start(d)   # more files than commitLogRecoverMaxNum
    report = restarted["verify"]["report"]
    assert report is not None, restarted["verify"]["stderr"]
    p = report["restart"]
    assert p is not None and p["rocksdb"], report.get("restart_note")
    assert p["recovery_cut"] == p["commitlog_end"] == restarted["written"]["maxPhyOffset"]
    assert p["second_reput_from"] == 0
    from pipelines.verify.rocksdb_compare import read_store_database
    from store_format.rocksdb_recovery import parse_database
    before, cp_before = parse_database(read_store_database(str(d / "before" / "consumequeue")))
    after, cp_after = parse_database(read_store_database(str(d / "expected" / "consumequeue")))
    assert p["rocksdb_checkpoint_before"] == cp_before
    assert cp_after in (p["rocksdb_checkpoint_after"], p["race_checkpoint_after"]), (cp_after, p)
    listed = {q["queue"]: q for q in p["queues"]}
    queues_as_predicted(before, after, listed)
    if not restarted["scenario"].get("abort"):   # (an abnormal start deletes index files first)
        def count(folder: Path) -> int:
            return sum(read_header(f.read_bytes()).index_count - 1 for f in sorted(folder.iterdir())
                       if f.name.isdigit())
        grown = count(d / "expected" / "index") - count(d / "before" / "index")
        assert grown == p["index_keys_put_again"] and grown > 0, (grown, p["index_keys_put_again"])


@pytest.mark.parametrize("name", KEPT_FILES)
def test_verify_predicts_the_restart_on_the_kept_files(restarted, name: str) -> None:
    """Consume queue files and ``index/`` kept, clean shutdown: the 5.5.1 normal recovery dispatches only above the
    queues' max physical offset (the last single message's end: prepared messages only after it), the second
    reput starts there; the broker's queue files stay as they were, and its index gains the keys verify says."""
    from store_format.indexfile import read_header
    d = Path(restarted["scenario"]["dir"])
    _recovery_start(d)
    report = restarted["verify"]["report"]
    assert report is not None, restarted["verify"]["stderr"]
    p = report["restart"]
    assert p is not None and not report["restart_note"], report.get("restart_note")
    assert p["recovery_cut"] == p["commitlog_end"] == restarted["written"]["maxPhyOffset"]
    exp, before = d / "expected" / "consumequeue", d / "before" / "consumequeue"
    names = sorted(str(f.relative_to(exp)) for f in exp.rglob("*") if f.is_file())
    assert names == sorted(str(f.relative_to(before)) for f in before.rglob("*") if f.is_file())
    for rel in names:
        bh.same_bytes((before / rel).read_bytes(), (exp / rel).read_bytes(), f"consumequeue/{rel} (kept)")
    assert p["units_dispatched_again"] == p["units_truncated"] == p["units_appended_by_recovery"] == 0, p

    def count(folder: Path) -> int:
        return sum(read_header(f.read_bytes()).index_count - 1 for f in sorted(folder.iterdir()) if f.name.isdigit())
    grown = count(d / "expected" / "index") - count(d / "before" / "index")
    assert grown == p["index_keys_put_again"], (grown, p["index_keys_put_again"], p["notes"])

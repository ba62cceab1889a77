"""``verify`` on a RocksDB consume queue store (5.x ``storeType=defaultRocksDB``) restarted after a crash with its
database KEPT, whose abnormal recovery itself walks from the first commitlog file (offset 0) while the index is empty:
the keys of the record at commitlog offset 0.  Checked against the broker's own restart.

The broker (4 KiB commitlog files, small index files) writes 20 keyed messages, the one at offset 0 with a key of its
own besides its uniqKey; the harness leaves an ``abort`` file, keeps the database (``keepQueues``) and sets its
max-physical-offset checkpoint to the start of put 2 (``rocksdbCqCheckpoint``), in the first file.  At the restart
``CommitLog.recoverAbnormally`` goes back to the last file whose first record lies at or below that checkpoint
(``RocksDBConsumeQueueStore.isMappedFileMatchedRecover``): the first file, from offset 0, dispatching every record
(``doDispatch``: ``DefaultMessageStore.doDispatch``, the index dispatcher among them).  The checkpoint's
``indexMsgTimestamp`` is 0 (no index file filled), so ``IndexService.load`` deleted every index file of the first
life: the new file's ``endPhyOffset`` is 0 when the record at offset 0 comes, which ``IndexService.buildIndex`` does
not skip (it skips offsets below ``endPhyOffset`` only).  Our rebuild's index never holds that record's keys (a
RocksDB store's reput reads it without dispatching it), so ``verify`` adds them
(:func:`store_format.restart_reput.offset_zero_keys`) where the walk that indexes from offset 0 meets an index still
empty there.

* ``<line>-rocksdb-zero-kept-crash``: that restart (no second reput).
* ``<line>-rocksdb-zero-kept-recheck-crash``: ``recheckReputOffsetFromCq=true``: the start's second reput from offset 0
  then finds the index's ``endPhyOffset`` at the last record and indexes that one's keys again, the record at 0's
  not a second time.
* Full suite only: ``<line>-rocksdb-zero-kept-indexed-crash``: 300 messages in 64 KiB files, an index file filled
  in the first life (the checkpoint's ``indexMsgTimestamp`` its last store time): the start keeps it, and the walk
  from offset 0 puts no key below its ``endPhyOffset``, the record at 0's not again; ``verify`` adds none.

First what the broker did (the index holds every key from offset 0 on, the record at 0's too, in commitlog order;
with the second reput the last record's again), then ``verify``'s prediction on ``<dir>/before``: queue by queue,
the checkpoint, the index files deleted and the new file's key count.  5.5.1 by default; ``ROCKSDB_LINES=5.3.3,5.5.1``
adds 5.3.3.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import broker_harness as bh
import pytest
from broker_layout_scenarios import Messages
from broker_rocksdb_runs import kept_database_as_predicted
from test_restart_accelerated_inside_broker import _records
from test_restart_reput_before_recovery_more_broker import INDEX, SIZE, _key_offsets

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
pytest.importorskip("rocksdict")

LINES = bh.lines_from_env("ROCKSDB_LINES", "5.5.1")
ZERO_KEY = "K-at-zero"   # the record at offset 0's own key, besides its uniqKey


def _scenarios(line: str) -> list[dict]:
    conf = {"storeType": "defaultRocksDB", "mappedFileSizeCommitLog": str(SIZE), **INDEX}
    g = Messages(122, ["T0", "T1", "T2"])
    messages = [g.one(keys=ZERO_KEY)] + [g.one() for _ in range(19)]
    plain = {"name": f"{line}-rocksdb-zero-kept-crash", "abort": True, "keepBefore": True, "keepQueues": True,
             "messages": messages, "config": conf, "rocksdbCqCheckpoint": {"put": 2, "add": 0}}
    recheck = {**plain, "name": f"{line}-rocksdb-zero-kept-recheck-crash",
               "config": {**conf, "recheckReputOffsetFromCq": "true"}}
    # an index file filled (400 entries): the checkpoint's indexMsgTimestamp its last store time, so the start keeps
    # it and the walk from offset 0 meets its endPhyOffset; 64 KiB files, fewer than commitLogRecoverMaxNum's 10
    more = messages + [g.one() for _ in range(280)]
    indexed = {**recheck, "name": f"{line}-rocksdb-zero-kept-indexed-crash", "messages": more,
               "config": {**recheck["config"], "mappedFileSizeCommitLog": str(16 * SIZE)}}
    return [plain, recheck, indexed]


# with PIPELINES_FULL_SUITE=1 only: -indexed (the index not empty at the walk's start: no key of offset 0 again)
SCENARIOS = {line: bh.bounded(_scenarios(line), ("-zero-kept-indexed-crash",)) for line in LINES}
NAMES = [pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs]
EMPTY = [n for n in NAMES if "-indexed-" not in n.values[0]]
INDEXED = bh.params_or_skip([n for n in NAMES if "-indexed-" in n.values[0]],
                            "PIPELINES_FULL_SUITE=1 writes the -indexed store")
_RUNS: dict[str, dict] = {}
# one store at a time in each JVM: RocksDB stores written in threads crashed the JVM
STORES = bh.Stores(SCENARIOS, "RocksDB store(s), each restarted on its own database after a crash", threads=1)


@pytest.fixture
def runs(request) -> dict[str, dict]:
    """Every scenario as the broker wrote and restarted it, and our ``verify`` of ``<dir>/before`` (once)."""
    return bh.written_once(request, _RUNS, STORES, every=True, then=bh.restart_checked)


def _index_names(d: Path, which: str) -> set[str]:
    return {f.name for f in (d / which / "index").iterdir()}


@pytest.mark.parametrize("name", EMPTY)
def test_the_broker_indexed_the_record_at_offset_zero(runs, name: str) -> None:
    """The broker's own files: the kept database's checkpoint in the first file, the checkpoint's index timestamp 0,
    the commitlog kept to its end; the first life's index files gone, the new one holding the keys of every record
    from offset 0 on in commitlog order, the record at 0's (its uniqKey and its own key) among them; with the second
    reput the last record's keys once more, the record at 0's not."""
    from store_format.recovery import parse_checkpoint

    r = runs[name]
    d, w = Path(r["scenario"]["dir"]), r["written"]
    assert w.get("ok"), w.get("error")
    recs = _records(d)
    assert len({x["offset"] // int(r["scenario"]["config"]["mappedFileSizeCommitLog"]) for x in recs}) > 1, \
        "the commitlog fits in one file"
    assert recs[0]["offset"] == 0 and w["rocksdbCqCheckpoint"] == recs[2]["offset"] < recs[3]["offset"] < SIZE, w
    assert w["rocksdbCqCheckpointBefore"] == recs[-1]["offset"] + recs[-1]["size"], "the first life's checkpoint"
    assert parse_checkpoint((d / "before" / "checkpoint").read_bytes()).index_msg_timestamp == 0, "an index file filled"
    assert w["maxPhyOffset"] == recs[-1]["offset"] + recs[-1]["size"], "the restart cut the commitlog"
    before, after = _index_names(d, "before"), _index_names(d, "expected")
    assert before and not before & after, (before, after)
    keys = _key_offsets(d).tolist()
    per_record = Counter(_key_offsets(d, "before").tolist())
    assert per_record[0] >= 2, "the first life did not index the record at offset 0's keys"
    recheck = r["scenario"]["config"].get("recheckReputOffsetFromCq") == "true"
    again = per_record[recs[-1]["offset"]] if recheck else 0
    first = keys[:len(keys) - again]
    assert Counter(first) == per_record and first == sorted(first), \
        "the broker indexed other keys than every record's from offset 0, in commitlog order"
    assert keys[len(keys) - again:] == [recs[-1]["offset"]] * again, "the second reput's keys"


@pytest.mark.parametrize("name", EMPTY)
def test_verify_counts_the_keys_of_the_record_at_offset_zero(runs, name: str) -> None:
    """``verify`` on ``<dir>/before``: the cut, the checkpoint after, queue by queue the max and min entries of the
    database the broker's restart left, the first life's index files deleted and every key of the broker's new index
    file, the record at offset 0's too."""
    r = runs[name]
    d = Path(r["scenario"]["dir"])
    p, _ = kept_database_as_predicted(r)
    assert p["reput_from"] == 0 and p["reput_from_inclusive"], "not a walk from offset 0"
    assert set(p["index_files_deleted"]) == _index_names(d, "before"), p["index_files_deleted"]
    assert p["index_keys_put_again"] == len(_key_offsets(d)), (p["index_keys_put_again"], len(_key_offsets(d)),
                                                               p["notes"])


def _file_key_offsets(f: Path) -> list[int]:
    """The commitlog offsets of the keys of one index file, in entry order."""
    from store_format.indexfile import read_header
    from store_format.layout import INDEX_ENTRY_SIZE, INDEX_HEADER_SIZE, INDEX_SLOT_SIZE
    data = f.read_bytes()
    at = INDEX_HEADER_SIZE + INDEX_SLOT_SIZE * int(INDEX["maxHashSlotNum"])
    return [int.from_bytes(data[at + i * INDEX_ENTRY_SIZE + 4:at + i * INDEX_ENTRY_SIZE + 12], "big", signed=True)
            for i in range(1, read_header(data).index_count)]


@pytest.mark.parametrize("name", INDEXED)
def test_an_index_file_kept_holds_the_record_at_offset_zero_once(runs, name: str) -> None:
    """-indexed, the broker's own files: an index file filled in the first life (the checkpoint's indexMsgTimestamp
    set), which the start kept unchanged; the walk from offset 0 then put no key below its endPhyOffset, the record
    at 0's not again: the new file's keys lie at or above it.  Then ``verify``: the files deleted and the new
    file's key count."""
    from store_format.indexfile import read_header
    from store_format.recovery import parse_checkpoint

    r = runs[name]
    d, w = Path(r["scenario"]["dir"]), r["written"]
    assert w.get("ok"), w.get("error")
    recs = _records(d)
    assert recs[0]["offset"] == 0 and w["rocksdbCqCheckpoint"] == recs[2]["offset"], w
    assert w["maxPhyOffset"] == recs[-1]["offset"] + recs[-1]["size"], "the restart cut the commitlog"
    assert parse_checkpoint((d / "before" / "checkpoint").read_bytes()).index_msg_timestamp > 0, "no index file filled"
    before, after = _index_names(d, "before"), _index_names(d, "expected")
    kept = sorted(before & after)
    assert kept, (before, after)
    for n in kept:
        assert (d / "before" / "index" / n).read_bytes() == (d / "expected" / "index" / n).read_bytes(), n
    end_phy = max(read_header((d / "before" / "index" / n).read_bytes()).end_phy_offset for n in kept)
    assert end_phy > 0 and 0 in _file_key_offsets(d / "before" / "index" / kept[0])
    new = [o for n in sorted(after - before) for o in _file_key_offsets(d / "expected" / "index" / n)]
    assert new and min(new) >= end_phy, "the broker indexed records below the kept file's endPhyOffset"
    report = r["verify"]["report"]
    assert report is not None, r["verify"]["stderr"]
    p = report["restart"]
    assert p is not None and p["rocksdb"] and p["reput_from"] == 0, report.get("restart_note")
    assert set(p["index_files_deleted"]) == before - after, (p["index_files_deleted"], before, after)
    assert p["index_keys_put_again"] == len(new), (p["index_keys_put_again"], len(new), p["notes"])

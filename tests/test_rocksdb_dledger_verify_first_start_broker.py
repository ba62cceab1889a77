"""``verify``'s next-start prediction for a RocksDB consume queue (5.x ``storeType=defaultRocksDB``) with
``enableDLegerCommitLog=true`` on a store converted in place with no DLedger data file yet: its first start with
DLedger, the database and ``index/`` kept, checked against the broker's own restart
(:func:`pipelines.verify.rocksdb_dledger_restart.predict_rocksdb_dledger_first_start`).

The JVM harness (:mod:`broker_harness`) writes :mod:`broker_dledger_scenarios`' ``converted`` messages before the
switch with an ordinary commitlog and ``storeType=defaultRocksDB``, shuts the broker down, keeps the store with its
database and ``index/`` (``keepQueues``) in ``<dir>/before/`` and starts the broker on it with DLedger on (no
``dledger-n0/`` yet):

* ``-first-start-restart-kept`` (clean, ``recheckReputOffsetFromCq=true``): ``DLedgerCommitLog`` finds no data file
  and runs the base ``CommitLog.recoverNormally`` over the old files (nothing above the database's checkpoint to
  dispatch), creates its first data file at the last old file's end (``dividedCommitlogOffset``), and the start's
  reput from the old files' min offset puts every unit again (same keys and values) and the last indexed record's
  keys again, its blank rolling it on to the empty data file;
* ``-first-start-crash-kept`` (an ``abort`` file; ``PIPELINES_FULL_SUITE=1``): the base
  ``CommitLog.recoverAbnormally`` of the old files dispatches their records again from its start file (either
  outcome of its race with ``truncateDirty`` where verify names two), ``IndexService.load`` deletes the index file
  past the checkpoint's index time, then the same reput;
* ``-first-start-restart-kept-norecheck`` (``PIPELINES_FULL_SUITE=1``): without the setting the reput starts at
  ``getConfirmOffset``, the empty data file's offset: nothing changes.

Each case first asserts what the broker's restart wrote, then ``verify``'s report on ``before/`` queue by queue
against the broker's database.  5.5.1 by default; ``ROCKSDB_MORE_LINES=5.3.3,5.5.1`` adds 5.3.3.
"""
from __future__ import annotations

from pathlib import Path

import broker_dledger_scenarios as dl
import broker_harness as bh
import numpy as np
import pytest
from broker_rocksdb_runs import queues_as_predicted

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
pytest.importorskip("rocksdict")

LINES = bh.lines_from_env("ROCKSDB_MORE_LINES", "5.5.1")


def _scenarios(line: str) -> list[dict]:
    converted = dl.dledger_scenarios(line)[2]
    switch = next(i for i, m in enumerate(converted["messages"]) if "switchToDLedger" in m)

    def rocks(what: str, *, recheck: bool = True, **knobs: object) -> dict:
        conf = {**converted["config"], "storeType": "defaultRocksDB"}
        if not recheck:
            conf.pop("recheckReputOffsetFromCq", None)
        return {**converted, "messages": converted["messages"][:switch + 1], "keepBefore": True, "keepQueues": True,
                **knobs, "config": conf, "name": f"{line}-rocksdb-dledger-{what}"}

    return [rocks("first-start-restart-kept"), rocks("first-start-crash-kept", abort=True),
            rocks("first-start-restart-kept-norecheck", recheck=False, restartRebuildsNothing=True)]


# the default suite: the clean start alone (the crash start's recovery is the plain RocksDB store's, checked by
# tests/test_rocksdb_restart_prediction_broker.py; the reput after it the same)
SCENARIOS = {line: bh.bounded(_scenarios(line), ("-first-start-restart-kept-norecheck", "-first-start-crash-kept"))
             for line in LINES}
CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
_RUNS: dict[str, dict] = {}
# one store at a time in each JVM: RocksDB stores written in threads crashed the JVM
STORES = bh.Stores(SCENARIOS, "RocksDB stores converted in place, each started with DLedger for the first time",
                   threads=1)


@pytest.fixture
def restarted(request) -> dict:
    """The scenario as the broker wrote and restarted it, and our ``verify`` of ``before/`` (every scenario written,
    and verified, once)."""
    return bh.written_once(request, _RUNS, STORES, then=bh.restart_checked)


def _parsed(db: Path):  # noqa: ANN202
    from pipelines.verify.rocksdb_compare import read_store_database
    from store_format.rocksdb_recovery import parse_database
    return parse_database(read_store_database(str(db)))



def _old(store: Path) -> tuple[int, int]:
    """The first old ``commitlog/`` file's offset and the last one's end."""
    old = sorted((store / "commitlog").iterdir())
    return int(old[0].name), int(old[-1].name) + old[-1].stat().st_size


def _index_entries(folder: Path, slots: int, name: str | None = None) -> list[tuple[bytes, int]]:
    """(key hash, commitlog offset) of every index entry, file by file in put order (of the file ``name`` alone)."""
    out = []
    for f in sorted(p for p in folder.iterdir() if p.name.isdigit() and name in (None, p.name)):
        data = f.read_bytes()
        count, at = int.from_bytes(data[36:40], "big"), 40 + 4 * slots
        out += [(data[at + 20 * i:at + 20 * i + 4], int.from_bytes(data[at + 20 * i + 4:at + 20 * i + 12], "big"))
                for i in range(1, count)]
    return out


def _recheck(sc: dict) -> bool:
    return sc["config"].get("recheckReputOffsetFromCq") == "true"


@pytest.mark.parametrize("line,name", CASES)
def test_the_broker_s_first_start_with_dledger(restarted, line: str, name: str) -> None:
    """What the broker's first start with DLedger did on the store kept: no data file before it, its first one at
    the last old file's end after; the database's units unchanged, the checkpoint key at the last record's end; after
    a clean shutdown the index grown by the last indexed record's keys again exactly where the start's reput walked
    the old files again (``recheckReputOffsetFromCq``)."""
    sc, d, w = restarted["scenario"], Path(restarted["scenario"]["dir"]), restarted["written"]
    before_dir = d / "before"
    assert (before_dir / "abort").is_file() == bool(sc.get("abort"))
    assert (before_dir / "commitlog").is_dir() and not (before_dir / "dledger-n0").exists()
    first, old_end = _old(before_dir)
    assert first == 0 and w["dividedCommitlogOffset"] == old_end
    before, cp_before = _parsed(before_dir / "consumequeue")
    after, cp_after = _parsed(d / "expected" / "consumequeue")
    phys = np.concatenate([q.phy for q in before.values()])
    assert phys.min() == 0 and len(phys) > 30 and cp_before is not None and 0 < cp_before < old_end
    assert cp_after == cp_before, (cp_before, cp_after)
    assert set(after) == set(before)
    for queue, b in before.items():
        a = after[queue]
        assert np.array_equal(a.cq, b.cq) and np.array_equal(a.phy, b.phy), f"{queue}: units changed"
    if sc.get("abort"):   # (an abnormal start may delete index files first)
        return
    slots = int(sc["config"]["maxHashSlotNum"])
    old_ix, new_ix = _index_entries(before_dir / "index", slots), _index_entries(d / "expected" / "index", slots)
    assert old_ix and new_ix[:len(old_ix)] == old_ix
    again = new_ix[len(old_ix):]
    if _recheck(sc):
        assert again and again == [e for e in old_ix if e[1] == old_ix[-1][1]], \
            "other keys than the last indexed record's put again"
    else:
        assert not again, "the reput from the empty data file's offset indexed something"


@pytest.mark.parametrize("line,name", CASES)
def test_verify_predicts_the_first_start(restarted, line: str, name: str) -> None:
    """``verify`` on ``before/``: the database identical to its rebuild, and the prediction of the broker's first
    start with DLedger queue by queue (max and min entries after, either outcome where it names a race), the
    checkpoint, the start's reput from the old files' min offset or none, and the index keys it puts again."""
    sc, d = restarted["scenario"], Path(restarted["scenario"]["dir"])
    v = restarted["verify"]
    assert v["report"] is not None, v["stderr"]
    report = v["report"]
    counts = report["counts"]["rocksdb_consume_queue"]
    assert counts["identical"] > 0 and counts["differs"] == 1 and counts["missing"] == counts["extra"] == 0, counts
    # the database's one unit a rebuild leaves out: the record at commitlog offset 0, which the live reput of the
    # broker that wrote the old files dispatched and a rebuild into an empty database reads only
    (odd,) = [q for q in report["rocksdb_consume_queue"] if q["status"] != "identical"]
    assert odd["found_unit"]["commitlogOffset"] == 0 and odd["expected_unit"] is None, odd
    assert "0 missing, 1 extra, 0 different" in odd["note"], odd
    p = report["restart"]
    assert p is not None and p["rocksdb"], report.get("restart_note") or report.get("no_prediction")
    _, old_end = _old(d / "before")
    before, cp_before = _parsed(d / "before" / "consumequeue")
    after, cp_after = _parsed(d / "expected" / "consumequeue")
    assert p["recovery_cut"] == p["commitlog_end"] == cp_before   # the last old record's end
    assert any(f"dividedCommitlogOffset {old_end}" in n for n in p["notes"]), p["notes"]
    assert p["rocksdb_checkpoint_before"] == cp_before
    assert cp_after in (p["rocksdb_checkpoint_after"], p["race_checkpoint_after"]), (cp_after, p)
    assert p["second_reput_from"] == (0 if _recheck(sc) else None), p["second_reput_from"]
    if sc.get("abort"):   # IndexService.load after a crash: the files past the checkpoint's index timestamp go
        names = [{f.name for f in (d / w / "index").iterdir()} for w in ("before", "expected")]
        assert p["index_files_deleted"] and set(p["index_files_deleted"]) == names[0] - names[1], (p, names)
        # the keys the start put: every key of the files it created (the recovery's records from its start file on,
        # the last indexed record's again by the second reput), the kept files' growth
        slots = int(sc["config"]["maxHashSlotNum"])
        put = sum(len(_index_entries(d / "expected" / "index", slots, f.name))
                  - (len(_index_entries(d / "before" / "index", slots, f.name)) if f.name in names[0] else 0)
                  for f in (d / "expected" / "index").iterdir())
        assert put > 0 and put == p["index_keys_put_again"], \
            f"the broker's restart put {put} index key(s), verify says {p['index_keys_put_again']}"
    else:
        slots = int(sc["config"]["maxHashSlotNum"])
        grown = len(_index_entries(d / "expected" / "index", slots)) \
            - len(_index_entries(d / "before" / "index", slots))
        assert grown == p["index_keys_put_again"], \
            f"the broker's index gained {grown} key(s), verify says {p['index_keys_put_again']}"
    listed = {q["queue"]: q for q in p["queues"]}
    assert set(listed) <= set(before) | set(after)
    queues_as_predicted(before, after, listed)

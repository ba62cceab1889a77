"""The expiry audit of a RocksDB consume queue store (5.x ``storeType=defaultRocksDB``) against the
broker's own cleanup: the segments that go, then ``RocksDBConsumeQueueStore.cleanExpired`` (the
compaction with the consume queue filter) and ``getMinOffsetInQueue`` of every queue.

The harness writes the ``mixed`` and ``lmq`` RocksDB scenarios of :mod:`broker_rocksdb_scenarios`
(32 KiB segments, light queues in ``lmq``); each store, with the database and ``index/`` of the broker's
own rebuild, gets its older segments aged past ``fileReservedTime`` and is published as tables (``tables
--store``); ``audit`` as of that clock predicts the next cleanup.  On a copy, the harness's Reader
(``Cleanup.java``, ``RocksCq.cleanExpired``) sets the same ages against the JVM's clock, runs the broker's
``CommitLog.deleteExpiredFile`` round, then ``cleanExpired`` with the new minimum commitlog offset, waits
for the compaction thread, dumps both families and asks ``getMinOffsetInQueue`` of every queue.

The audit's segments must be the ones the broker deleted, its new minimum the broker's, and per queue
its ``rocksdb_queue`` row the units the compaction removed (exactly the units below the minimum; the rest
of the database unchanged) and ``getMinOffsetInQueue``'s answer.  5.5.1 by default;
``ROCKSDB_LINES=5.3.3,5.5.1`` adds 5.3.3.
"""
from __future__ import annotations

import time
from pathlib import Path

import broker_harness as bh
import pytest
from broker_rocksdb_scenarios import rocksdb_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
pytest.importorskip("rocksdict")

LINES = bh.lines_from_env("ROCKSDB_LINES", "5.5.1")
BROKER_LINE = bh.BROKER_VERSION_ARG
SCENARIOS = {line: [sc for sc in rocksdb_scenarios(line) if sc["name"].endswith(("-mixed", "-lmq"))]
             for line in LINES}
CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "RocksDB store(s) for the cleanup", threads=1)


def _prepare(d: Path, line: str, clock: int) -> dict:
    """The store with the broker's database and index/, its older segments 100 h old and the newer
    half 1 h old, published as tables; the Reader's cleanup request on a copy of it."""
    store = bh.broker_store(d, d / "case" / "store")
    segs = sorted(p.name for p in (store / "commitlog").iterdir())
    old = max(1, len(segs) // 2)
    case = bh.aged_store_with_tables(d, store, old, clock, BROKER_LINE[line])
    return {"segments": segs, "old": old, "tables": case["tables"], "conf": case["conf_file"], "store": store,
            "request": {"store": str(case["copy"]), "config": case["conf"],
                        "cleanup": {"clockMs": clock, "mtimes": case["mtimes"], "cleanImmediately": False,
                                    "rocksdb": True}}}


@pytest.fixture
def cleaned(request, tmp_path_factory) -> dict:
    """Every scenario written, prepared, cleaned by the broker and audited by us (once)."""
    if not _RUNS:
        work = tmp_path_factory.mktemp("rocksdb-cleanup")
        written = bh.write_lines(request, STORES, work)
        clock = int(time.time() * 1000)
        for line, scs in SCENARIOS.items():
            ok = [sc["name"] for sc in scs if written[sc["name"]]["written"].get("ok")]
            prepared = {n: _prepare(Path(written[n]["scenario"]["dir"]), line, clock) for n in ok}
            answers = bh.read_stores(line, [p["request"] for p in prepared.values()], work) if ok else []
            for (n, p), ans in zip(prepared.items(), answers):
                from pipelines.audit import run_audit
                from store_format.store import load_config_for
                _rows, summary = run_audit(str(p["tables"]), clock, config=load_config_for(str(p["conf"])), tz="UTC",
                                           time_source="mtime")
                _RUNS[n] = {**p, "answer": next(a for a in ans if a.get("kind") == "cleanup"), "audit": summary,
                            "rows": _rows}
        for sc in (s for scs in SCENARIOS.values() for s in scs):
            _RUNS.setdefault(sc["name"], {"error": written[sc["name"]]["written"].get("error")})
    r = _RUNS[request.node.callspec.params["name"]]
    if "answer" not in r:
        pytest.fail(f"the broker's writer failed: {r.get('error')}")
    return r


def _parse(families: list[dict]):  # noqa: ANN202
    from store_format.rocksdb_recovery import parse_database
    return parse_database({f["family"]: [(bytes.fromhex(k), bytes.fromhex(v)) for k, v in f["entries"]]
                           for f in families})[0]


@pytest.mark.parametrize("line,name", CASES)
def test_audit_predicts_the_broker_s_rocksdb_cleanup(cleaned, line: str, name: str) -> None:
    """Segments and minimum, then per queue: the units the compaction removed and getMinOffsetInQueue."""
    from pipelines.verify.rocksdb_compare import read_store_database
    from store_format.rocksdb_recovery import parse_database

    a, s = cleaned["answer"], cleaned["audit"]
    going = [x["segment"] for x in s["segments"]]
    assert going == cleaned["segments"][:cleaned["old"]], "the audit's segments are not the old ones"
    assert sorted(a["commitlog"]) == cleaned["segments"][cleaned["old"]:], "the broker kept other segments"
    assert s["rocksdb_new_min_offset"] == a["minOffset"]
    rocks = a["rocksdb"]
    assert rocks["compacted"], "the broker's compaction did not finish"
    before, _ = parse_database(read_store_database(str(cleaned["store"] / "consumequeue")))
    after = _parse(rocks["families"])
    predicted = {q["queue"]: q for q in s["rocksdb_queues"]}
    assert predicted, "no queue loses units: the case checks nothing"
    for queue, b in sorted(before.items()):
        gone = b.phy < a["minOffset"]
        kept = after.get(queue)
        left = (kept.cq.tolist(), kept.phy.tolist()) if kept is not None else ([], [])
        assert left == (b.cq[~gone].tolist(), b.phy[~gone].tolist()), f"{queue}: the compaction left other units"
        q = predicted.get(queue)
        assert int(gone.sum()) == (q["units_removed"] if q else 0), f"{queue}: units removed"
        if q is not None:
            assert rocks["minOffsetInQueue"][queue] == q["min_offset_in_queue_after"], \
                f"{queue}: getMinOffsetInQueue {a['minOffsetInQueue'][queue]}, the audit says " \
                f"{q['min_offset_in_queue_after']}"
    rows = [r for r in cleaned["rows"].to_pylist() if r["kind"] == "rocksdb_queue"]
    assert sorted(r["name"] for r in rows) == sorted(predicted)

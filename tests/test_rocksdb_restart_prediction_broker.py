"""``verify``'s prediction of the broker's next start on a RocksDB consume queue store (5.x
``storeType=defaultRocksDB``), checked against the broker's own restart on the very same store.

The JVM harness (:mod:`broker_harness`, ``tests/broker/``) writes each RocksDB scenario of
:mod:`broker_rocksdb_scenarios` with the published RocketMQ store, flips a body byte of the record six
puts before the end (``damageMessage``), leaves an ``abort`` file in the ``-crash`` variants, keeps the
store as the restart finds it in ``<dir>/before/`` and restarts the broker on it *keeping* its database
(``keepQueues``): the recovery dispatches from the database's checkpoint (the end of the data, past the
damaged record), cuts the commitlog at the damaged record and ``truncateDirty`` corrects the checkpoint and
the "max" entries reaching past the cut (writing "min" entries on its way); the crash variant's abnormal
recovery dispatches every record again first.  ``<dir>/expected/consumequeue`` is the database after that
restart.

``verify`` on ``before/`` must predict, queue by queue, the database the broker left: each queue's "max"
and "min" entries (either outcome of the abnormal start's race where verify names two), the checkpoint,
how many units each queue keeps above its new max, and where the commitlog ends; a queue ``verify`` does
not list must keep its entries; after a clean shutdown, how many index keys the start puts again (the
index files' counts grow by that).

With ``recheckReputOffsetFromCq=true`` (``-recheck``: the damaged ``plain`` store, clean and crashed, and
the ``lmq`` store ending undamaged in a keyed message) the start's second reput
(``DefaultMessageStore.doRecheckReputOffsetFromCq``) dispatches every record from the commitlog's min
offset again after all that: it sets the max entries and the checkpoint once more and indexes the last
indexed record a second time.  5.5.1 by default; ``ROCKSDB_LINES=5.3.3,5.5.1`` adds 5.3.3.
"""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import broker_harness as bh
import numpy as np
import pytest
from broker_rocksdb_scenarios import rocksdb_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
pytest.importorskip("rocksdict")

LINES = bh.lines_from_env("ROCKSDB_LINES", "5.5.1")
BROKER_LINE = bh.BROKER_VERSION_ARG


def _recheck(sc: dict) -> dict:
    return {**sc, "name": sc["name"] + "-recheck", "config": {**sc["config"], "recheckReputOffsetFromCq": "true"}}


def _scenarios(line: str) -> list[dict]:
    scs = rocksdb_scenarios(line)
    kept = bh.restart_variants(scs, ("-plain", "-mixed", "-lmq"))
    recheck = [_recheck(sc) for sc in kept if sc["name"].startswith(f"{line}-rocksdb-plain-")]
    # undamaged, ending in a keyed message: the second reput indexes it again
    last = {"topic": "T0", "queueId": 1, "body": "dGFpbA==", "keys": "the-last-key",
            "uniqKey": "7F00000100002A9F00000000FFFFFFFE"}
    lmq = next(sc for sc in scs if sc["name"].endswith("-lmq"))
    recheck.append(_recheck({**lmq, "name": f"{lmq['name']}-tail", "messages": [*lmq["messages"], last],
                             "keepBefore": True}))
    return [{**sc, "name": sc["name"] + "-kept", "keepQueues": True} for sc in kept + recheck]


# with PIPELINES_FULL_SUITE=1 only: the plain store restarted as it is (its -recheck variants stay) and the
# mixed store's clean restart (the lmq store's covers that recovery)
SCENARIOS = {line: bh.bounded(_scenarios(line), ("-rocksdb-plain-restart-kept", "-rocksdb-plain-crash-kept",
                                                 "-rocksdb-mixed-restart-kept"))
             for line in LINES}
CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "RocksDB store(s), each restarted on its own database", threads=1)


@pytest.fixture
def restarted(request, tmp_path_factory) -> dict:
    """The scenario as the broker wrote it and restarted it on its own database, and ``verify``'s JSON
    report on the store as that restart found it (every scenario once)."""
    if not _RUNS:
        work = tmp_path_factory.mktemp("rocksdb-restart-prediction")
        _RUNS.update(bh.write_lines(request, STORES, work))
        from pipelines.cli import main
        for r in _RUNS.values():
            if r["written"].get("ok"):
                d = Path(r["scenario"]["dir"])
                out, err = io.StringIO(), io.StringIO()
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    code = main(["verify", "--store", str(d / "before"), "--config", str(d / "broker.conf"),
                                 "--broker-version", BROKER_LINE[r["line"]], "--split-size", "4k", "--json"])
                r["verify"] = {"code": code, "stderr": err.getvalue()[-2000:],
                               "report": json.loads(out.getvalue()) if out.getvalue().strip() else None}
    r = _RUNS[request.node.callspec.params["name"]]
    if not r["written"].get("ok"):
        pytest.fail(f"the broker's writer failed on {r['scenario']['name']}: {r['written'].get('error')}")
    assert r["verify"]["report"] is not None, r["verify"]["stderr"]
    return r


def _database(db: Path):  # noqa: ANN202
    from pipelines.verify.rocksdb_compare import read_store_database
    from store_format.rocksdb_recovery import parse_database
    return parse_database(read_store_database(str(db)))


def _key(e: list[int] | None) -> tuple[int, ...] | None:
    return None if e is None else tuple(e)


def _pair(e) -> list[int] | None:  # noqa: ANN001
    return None if e is None else [int(e[0]), int(e[1])]


def _index_count(folder: Path) -> int:
    """The index keys of the files of ``folder`` (``indexCount`` less the unused entry 0, file by file)."""
    from store_format.indexfile import read_header
    return sum(read_header(f.read_bytes()).index_count - 1 for f in sorted(folder.iterdir()) if f.name.isdigit())


@pytest.mark.parametrize("line,name", CASES)
def test_verify_predicts_the_broker_s_restart_on_its_own_database(restarted, line: str, name: str) -> None:
    """Queue by queue, the "max" and "min" entries and the units above the new max of the database the
    broker's restart left, and its checkpoint, are what ``verify`` predicted from the store before it."""
    d = Path(restarted["scenario"]["dir"])
    p = restarted["verify"]["report"]["restart"]
    assert p is not None and p["rocksdb"], restarted["verify"]["report"].get("restart_note")
    assert p["recovery_cut"] == p["commitlog_end"] == restarted["written"]["maxPhyOffset"]
    before, cp_before = _database(d / "before" / "consumequeue")
    after, cp_after = _database(d / "expected" / "consumequeue")
    assert p["rocksdb_checkpoint_before"] == cp_before
    assert cp_after in (p["rocksdb_checkpoint_after"], p["race_checkpoint_after"]), (cp_after, p)
    listed = {q["queue"]: q for q in p["queues"]}
    assert set(listed) <= set(before) | set(after)
    if not restarted["scenario"].get("abort"):   # (the abnormal start: truncateDirty may come after the dispatch)
        assert p["truncate_dirty_logic_files"] == (cp_before > p["commitlog_end"])
    if name.startswith(f"{line}-rocksdb-plain-restart"):   # its last records all have units: the cut is below them
        assert p["truncate_dirty_logic_files"] and listed, "truncateDirty cuts no queue"
    recheck = restarted["scenario"]["config"].get("recheckReputOffsetFromCq") == "true"
    assert (p["second_reput_from"] is not None) == recheck
    if not restarted["scenario"].get("abort"):   # (an abnormal start deletes index files first)
        grown = _index_count(d / "expected" / "index") - _index_count(d / "before" / "index")
        assert grown == p["index_keys_put_again"], f"the broker's index gained {grown} key(s), verify says " \
                                                   f"{p['index_keys_put_again']}"
        if name.startswith(f"{line}-rocksdb-lmq-tail"):   # the last record's keys, a second time
            assert grown > 0
    for queue in sorted(set(before) | set(after)):
        b, a = before.get(queue), after.get(queue)
        got = (_pair(a.max), _pair(a.min)) if a is not None else (None, None)
        q = listed.get(queue)
        if q is None:
            assert got == ((_pair(b.max), _pair(b.min)) if b is not None else (None, None)), \
                f"{queue}: not listed by verify, but the broker changed its entries {got}"
            continue
        options = {(_key(q["max_entry_after"]), _key(q["min_entry_after"])): q["units_truncated"]}
        if q["race_max_entry_after"] is not None or q["race_min_entry_after"] is not None:
            options[(_key(q["race_max_entry_after"]), _key(q["race_min_entry_after"]))] = q["race_units_truncated"]
        got_key = (_key(got[0]), _key(got[1]))
        assert got_key in options, f"{queue}: the broker's max/min entries {got}, verify predicted {list(options)}"
        above = int((a.cq > a.max[1]).sum()) if a is not None and a.max is not None else 0
        assert above == options[got_key], f"{queue}: {above} unit(s) above the max, verify says {options[got_key]}"
    # units are never deleted, and those the abnormal recovery dispatches again are the ones already there
    for queue, b in before.items():
        a = after[queue]
        assert np.array_equal(a.cq, b.cq) and np.array_equal(a.phy, b.phy), f"{queue}: units changed"

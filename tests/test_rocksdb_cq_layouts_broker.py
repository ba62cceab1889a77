"""The RocksDB consume queue (5.x ``storeType=defaultRocksDB``) with the settings once refused beside
it, checked against stores the published RocketMQ store writes through the JVM harness
(:mod:`broker_rocksdb_layouts_scenarios`): ``enableConsumeQueueExt=true`` (ignored by the RocksDB
store: no ``consumequeue_ext/``), BatchCQ topics (ordinary RocksDB queues, one unit per record at its
queue offset) and a DLedger commitlog (plain ``rebuild`` by the DLedger scan; ``verify`` compares the
database entry by entry, with the next start; ``repair`` replaces a damaged database as a whole;
``audit`` names the compaction; ``--as-restart`` writes the broker's restart).

Each case first asserts what the broker wrote (so the store really is the case), then that our
``rebuild`` (4 KiB splits) holds exactly the broker's key/value set in both families (read by the
broker's code, harness ``Reader``), that the broker answers alike on our database, that ``index/``
is byte for byte the broker's, and that the messages table places the units under the database's keys.

5.5.1 by default; ``ROCKSDB_LINES=5.3.3,5.5.1`` adds 5.3.3.
"""
from __future__ import annotations

import json

import broker_harness as bh
import pytest
from broker_rocksdb_layouts_scenarios import rocksdb_layout_scenarios
from broker_rocksdb_runs import damage_database, run_of, store_with_broker_db, stores, write_rebuild_read

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
rd = pytest.importorskip("rocksdict")

LINES = bh.lines_from_env("ROCKSDB_LINES", "5.5.1")
BROKER_LINE = bh.BROKER_VERSION_ARG
SCENARIOS = {line: rocksdb_layout_scenarios(line) for line in LINES}
STORES = stores(SCENARIOS)
CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
DLEDGER = [c for c in CASES if "-dledger-" in c.values[1]]
_RUNS: dict[str, dict] = {}


@pytest.fixture
def written(request, tmp_path_factory):
    """Every scenario written by the broker, rebuilt by us and read back by the broker, once.  Not the queues of
    the BatchCQ case: 5.5.1's own ``DefaultMessageStore.getMessage`` fails there on the broker's database (a
    NullPointerException at a queue offset inside an inner batch, which has no key)."""
    if not _RUNS:
        write_rebuild_read(request, tmp_path_factory.mktemp("rocksdb-layouts"), STORES, _RUNS,
                           lambda d, line: bh.rebuild(d, BROKER_LINE[line], "--tables", str(d / "tables")),
                           lambda d: not d.name.endswith("-batchcq"))
    return run_of(_RUNS, request.node.callspec.params["name"])


def _families(answers: list[dict]) -> dict[str, dict[str, str]]:
    return {a["family"]: dict(a["entries"]) for a in answers if a["kind"] == "rocksdb"}


def _units(family: dict[str, str]) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """(topic, queueId) -> [(queue offset, commitlog offset)] of a ``default`` family, in key order."""
    out: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for k, v in sorted(family.items()):
        key, value = bytes.fromhex(k), bytes.fromhex(v)
        n = int.from_bytes(key[:4], "big", signed=True)
        topic = key[5:5 + n].decode()
        qid = int.from_bytes(key[6 + n:10 + n], "big", signed=True)
        qoff = int.from_bytes(key[11 + n:19 + n], "big", signed=True)
        out.setdefault((topic, qid), []).append((qoff, int.from_bytes(value[:8], "big", signed=True)))
    return out


@pytest.mark.parametrize("line,name", CASES)
def test_broker_wrote_the_case(written, line, name):
    """The store is the case: a RocksDB database in ``consumequeue/`` with units, and
    cqext: enableConsumeQueueExt=true and no ``consumequeue_ext/`` written by the broker;
    batchcq: BatchCQ topics, no ``batchconsumequeue/``, and their queues' units at queue offsets that
    skip (an inner batch of n takes n offsets, ``increaseQueueOffset`` with INNER_NUM, one unit);
    dledger: no commitlog/ but a DLedger data folder, each unit's commitlog offset an entry's position + 48."""
    d, conf = written["dir"], bh.read_conf(written["dir"] / "broker.conf")
    cq = d / "expected" / "consumequeue"
    assert conf["storeType"] == "defaultRocksDB"
    assert (cq / "CURRENT").is_file() and not any(p.is_dir() for p in cq.iterdir())
    units = _units(_families(written["answers"]["expected"])["default"])
    assert units
    if name.endswith("-cqext"):
        assert conf["enableConsumeQueueExt"] == "true"
        assert not (d / "expected" / "consumequeue_ext").exists() and not (d / "store" / "consumequeue_ext").exists()
    elif name.endswith("-batchcq"):
        topics = json.loads((d / "store" / "config" / "topics.json").read_text())["topicConfigTable"]
        batch = {t for t, c in topics.items() if c.get("attributes", {}).get("queue.type") == "BatchCQ"}
        assert batch == set(written["scenario"]["batchTopics"])
        assert not (d / "expected" / "batchconsumequeue").exists()
        gaps = [b[0] - a[0] for (t, _q), us in units.items() if t in batch for a, b in zip(us, us[1:])]
        assert gaps and max(gaps) > 1 and min(gaps) >= 1, gaps
    else:
        assert conf["enableDLegerCommitLog"] == "true"
        assert not (d / "store" / "commitlog").exists() and (d / "store" / "dledger-n0" / "data").is_dir()
        offsets = sorted(o for us in units.values() for _q, o in us)
        assert offsets[0] == 48, offsets[:3]   # the first entry's body: DLedgerEntry header of 48 bytes


@pytest.mark.parametrize("line,name", CASES)
def test_key_value_sets_match_broker(written, line, name):
    """Both column families hold exactly the broker's keys and values (read by the broker's code)."""
    exp, ours = _families(written["answers"]["expected"]), _families(written["answers"]["ours"])
    assert sorted(exp) == sorted(ours) == ["default", "offset"]
    assert sorted(p.name for p in (written["dir"] / "ours").iterdir()) == ["consumequeue", "index"]
    for family, e in exp.items():
        o = ours[family]
        missing, extra = sorted(set(e) - set(o)), sorted(set(o) - set(e))
        assert not missing and not extra, f"{family}: keys only the broker has {missing[:3]}, only ours {extra[:3]}"
        wrong = [k for k in e if e[k] != o[k]]
        assert not wrong, (f"{family}: {len(wrong)} value(s) differ, first key {wrong[0]}: "
                           f"{e[wrong[0]]} vs {o[wrong[0]]}")


@pytest.mark.parametrize("line,name", CASES)
def test_broker_answers_alike_on_our_database(written, line, name):
    """The broker opens our database and index and answers every queue (not in the BatchCQ case: see
    :func:`_read_request`) and key query as on its own."""
    exp = [a for a in written["answers"]["expected"] if a["kind"] in ("queue", "query")]
    ours = [a for a in written["answers"]["ours"] if a["kind"] in ("queue", "query")]
    assert exp and ours == exp
    assert name.endswith("-batchcq") or any(a["kind"] == "queue" for a in exp)


@pytest.mark.parametrize("line,name", CASES)
def test_index_files_are_the_broker_s(written, line, name):
    """``index/``: byte for byte the broker's, file by file in order."""
    exp = sorted((written["dir"] / "expected" / "index").iterdir())
    ours = sorted((written["dir"] / "ours" / "index").iterdir())
    assert exp and len(ours) == len(exp)
    for i, (e, o) in enumerate(zip(exp, ours)):
        bh.same_bytes(e.read_bytes(), o.read_bytes(), f"index file #{i}")


@pytest.mark.parametrize("line,name", CASES)
def test_table_queues_are_the_broker_s(written, line, name):
    """The messages table (written by the same rebuild) places every unit under the queue offset and
    commitlog offset of the broker's database, queue by queue; the record at commitlog offset 0 (none in a
    DLedger store: its first record lies at 48) is the one row read but not dispatched."""
    from pipelines.tables.rows import ROCKSDB_START_DISPATCH
    from pipelines.tables.runs import snapshot

    rows = snapshot(str(written["dir"] / "tables")).read_arrow("messages").to_pylist()
    ours: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for r in rows:
        if r["consume_queue"]:
            ours.setdefault((r["topic"], r["queue_id"]), []).append((r["consume_queue_offset"], r["commitlog_offset"]))
    broker = _units(_families(written["answers"]["expected"])["default"])
    assert broker and {q: sorted(us) for q, us in ours.items()} == broker
    undispatched = [(r["commitlog_offset"], r["dispatch"]) for r in rows
                    if not r["dispatch"].startswith(("consume queue", "no consume queue"))]
    assert undispatched == ([] if "-dledger-" in name else [(0, ROCKSDB_START_DISPATCH)])


@pytest.mark.parametrize("line,name", DLEDGER)
def test_dledger_as_restart_gives_the_broker_s_restart(written, tmp_path, line, name):
    """With a DLedger commitlog, ``rebuild --as-restart`` of the store the broker's restart left (a clean shutdown,
    ``recheckReputOffsetFromCq=true``) writes what its restart did: the database and index/ of one pass over the log
    (:mod:`store_format.dledger_rocksdb_restart`; more cases in tests/test_rocksdb_dledger_restart_broker.py)."""
    from broker_rocksdb_runs import same_databases

    d = written["dir"]
    store = store_with_broker_db(written, tmp_path)
    code, _, err = bh.cli(["rebuild", "--store", str(store), "--config", str(d / "broker.conf"), "--out",
                           str(tmp_path / "o"), "--as-restart", "--broker-version", BROKER_LINE[line],
                           "--no-tables"])
    assert code == 0, err[-1500:]
    assert "dledgerRecoverNormally dispatches nothing" in err, err[-1500:]
    same_databases(d / "expected" / "consumequeue", tmp_path / "o" / "consumequeue")
    exp, ours = sorted((d / "expected" / "index").iterdir()), sorted((tmp_path / "o" / "index").iterdir())
    assert exp and len(ours) == len(exp)
    for e, o in zip(exp, ours):
        bh.same_bytes(e.read_bytes(), o.read_bytes(), e.name)


@pytest.mark.parametrize("line,name", DLEDGER)
def test_dledger_verify_compares_the_database_entry_by_entry(written, tmp_path, line, name):
    """``verify`` with a DLedger commitlog: the broker's own database and index/ verify identical (exit 0), the
    next start predicted (a clean one: its reput puts every unit again, nothing changes; the restart itself is
    checked in tests/test_rocksdb_dledger_restart_broker.py); with units deleted and changed and a max entry deleted
    in a copy of the database, it names exactly those queues with their missing and different entries (exit 1)."""
    d = written["dir"]
    store = store_with_broker_db(written, tmp_path)
    base = ["verify", "--store", str(store), "--config", str(d / "broker.conf"), "--broker-version",
            BROKER_LINE[line]]
    code, out, _ = bh.cli([*base, "--json"])
    report = json.loads(out)
    assert code == 0 and report["identical"], report["summary"]
    assert report["counts"]["rocksdb_consume_queue"]["identical"] > 1 and report["counts"]["index"]["identical"]
    p = report["restart"]
    assert p is not None and p["rocksdb"] and not report["restart_note"], report["restart_note"]
    assert p["rocksdb_checkpoint_after"] == p["rocksdb_checkpoint_before"] and not p["truncate_dirty_logic_files"]
    assert p["units_lost"] == p["units_truncated"] == 0, p
    assert all(q["max_entry_after"] == q["max_entry_before"] for q in p["queues"]), p["queues"]
    code, text, _ = bh.cli(base)
    assert code == 0 and "not predicted" not in text
    first, second, q0 = damage_database(written, store / "consumequeue")
    code, out, _ = bh.cli([*base, "--json"])
    report = json.loads(out)
    assert code == 1 and not report["identical"] and report["restart"] is not None, report["restart_note"]
    bad = {r["path"]: r for r in report["rocksdb_consume_queue"]}
    q1 = f"{first['topic']}/{first['queueId']}"
    assert sorted(bad) == sorted({q1, f"{second['topic']}/{second['queueId']}"})
    assert bad[q1]["differing_units"] == 2 and bad[q1]["first_unit"] == q0
    assert bad[q1]["note"].startswith("entries: 1 missing, 0 extra, 1 different")
    assert "max entry" in bad[f"{second['topic']}/{second['queueId']}"]["note"]


@pytest.mark.parametrize("line,name", DLEDGER)
def test_dledger_repair_replaces_a_damaged_database_as_a_whole(written, tmp_path, line, name):
    """``repair`` with a DLedger commitlog on a store whose database was damaged (as above): one
    ``replace_database``; afterwards the store's database holds exactly the broker's own key/value set, the backup
    the damage, and ``verify`` finds the store identical."""
    from pipelines.verify.rocksdb_compare import compare_rocksdb_cq

    d = written["dir"]
    store = store_with_broker_db(written, tmp_path)
    damage_database(written, store / "consumequeue")
    conf = ["--store", str(store), "--config", str(d / "broker.conf"), "--broker-version", BROKER_LINE[line]]
    code, out, _ = bh.cli(["repair", *conf, "--backup", str(tmp_path / "backup"), "--json"])
    assert code == 0, out[-2000:]
    assert [(a["action"], a["path"], a["done"]) for a in json.loads(out)["plan"]["actions"]] == [
        ("replace_database", "consumequeue", True)]
    results, _ = compare_rocksdb_cq(str(store / "consumequeue"), str(d / "expected" / "consumequeue"))
    assert results and all(r.status == "identical" for r in results), [r for r in results if r.status != "identical"]
    kept, _ = compare_rocksdb_cq(str(tmp_path / "backup" / "consumequeue"), str(d / "expected" / "consumequeue"))
    assert sum(r.status != "identical" for r in kept) == 2
    code, out, _ = bh.cli(["verify", *conf, "--json"])
    assert code == 0 and json.loads(out)["identical"]


@pytest.mark.parametrize("line,name", DLEDGER)
def test_dledger_audit_names_the_compaction(written, tmp_path, line, name):
    """``audit`` on the tables of a RocksDB store over a DLedger commitlog: DLedger's cleanup rule for the data
    files, the RocksDB compaction's note and the DLedger note, no consume queue file; far ahead, every data file
    but the last goes and the compaction removes, per queue, exactly the broker's units (its own database) below
    the last data file's offset (``DLedgerCommitLog.getMinOffset``), the queue's minimum then one past them."""
    from pipelines.tables.expiry_audit import ROCKSDB_CQ_NOTE
    from pipelines.tables.expiry_rocksdb import ROCKSDB_DLEDGER_NOTE
    from pipelines.tables.runs import snapshot

    tables = written["dir"] / "tables"
    code, out, _ = bh.cli(["audit", "--tables", str(tables), "--as-of", "now", "--json"])
    assert code == 0, out[-2000:]
    summary = json.loads(out)
    assert ROCKSDB_CQ_NOTE in summary["notes"] and ROCKSDB_DLEDGER_NOTE in summary["notes"]
    assert summary["dledger"]["data_files"] >= 1 and summary["consume_queue_files"] == 0
    kinds = set(snapshot(str(tables)).read_arrow("expiry_audit")["kind"].to_pylist())
    assert "consume_queue_file" not in kinds and "segment" in kinds
    code, out, _ = bh.cli(["audit", "--tables", str(tables), "--as-of", "2100-01-01T00:00:00Z", "--json"])
    summary = json.loads(out)
    data = sorted(int(p.name) for p in (written["dir"] / "store" / "dledger-n0" / "data").iterdir())
    assert code == 0 and len(data) > 1 and len(summary["segments"]) == len(data) - 1
    assert summary["rocksdb_new_min_offset"] == data[-1]
    below: dict[str, list[int]] = {}
    for (topic, qid), us in _units(_families(written["answers"]["expected"])["default"]).items():
        below[f"{topic}/{qid}"] = [q for q, o in us if o < data[-1]]
    assert {q["queue"]: (q["units_removed"], q["min_offset_in_queue_after"]) for q in summary["rocksdb_queues"]} == {
        q: (len(qs), max(qs) + 1) for q, qs in below.items() if qs}

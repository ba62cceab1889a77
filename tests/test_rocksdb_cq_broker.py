"""RocksDB consume queues (5.x ``storeType=defaultRocksDB``) written by the published RocketMQ store
through the JVM harness in ``tests/broker/``: our rebuild (``python -m pipelines rebuild`` at 4 KiB
splits: :func:`pipelines.rocksdb_cq.build_rocksdb_cq`, written with ``rocksdict``) against the broker's own rebuild of
``consumequeue/``, family by family, and the broker's answers (harness ``Reader``: the families as it
opened them, then min/max offsets and getMessage over every queue) on our database and on its own.

Nothing is left out of the comparison: the only run-dependent values the broker keeps there, the
"min" entries (written by ``getMinCqOffset`` when a reader asks), are absent from both databases
when the Reader dumps them, and the checkpoint (``CHECKPOINT_TOPIC``) holds a commitlog position.

5.5.1 by default; ``ROCKSDB_LINES=5.3.3,5.5.1`` adds 5.3.3.
"""
from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import broker_harness as bh
import pytest
from broker_rocksdb_runs import damage_database, run_of, store_with_broker_db, stores, write_rebuild_read
from broker_rocksdb_scenarios import rocksdb_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
rd = pytest.importorskip("rocksdict")

LINES = bh.lines_from_env("ROCKSDB_LINES", "5.5.1")
BROKER_LINE = bh.BROKER_VERSION_ARG
SCENARIOS = {line: rocksdb_scenarios(line) for line in LINES}
STORES = stores(SCENARIOS)
CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
_RUNS: dict[str, dict] = {}


def _ours(d: Path, line: str) -> dict:
    """Our rebuild of the store, as a user runs it (the contract command, 4 KiB splits to force
    resyncs): ``consumequeue/`` (the database) and ``index/`` under ``ours/``, the tables in ``tables/``."""
    return bh.rebuild(d, BROKER_LINE[line], "--tables", str(d / "tables"))


@pytest.fixture
def written(request, tmp_path_factory):
    """Every scenario written by the broker, rebuilt by us and read back by the broker, once."""
    return _written(request, tmp_path_factory, request.node.callspec.params["name"])


@pytest.fixture
def written_any(request, tmp_path_factory):
    """The first scenario of the line, written and rebuilt."""
    line = request.node.callspec.params["line"]
    return _written(request, tmp_path_factory, SCENARIOS[line][0]["name"])


def _written(request, tmp_path_factory, name: str) -> dict:
    if not _RUNS:
        write_rebuild_read(request, tmp_path_factory.mktemp("rocksdb"), STORES, _RUNS, _ours)
    return run_of(_RUNS, name)


def _families(answers: list[dict]) -> dict[str, list[list[str]]]:
    return {a["family"]: a["entries"] for a in answers if a["kind"] == "rocksdb"}


@pytest.mark.parametrize("line,name", CASES)
def test_broker_wrote_a_rocksdb_consume_queue(written, line, name):
    """The harness itself: the broker's consumequeue/ is a RocksDB database with units and max entries,
    no queue folders, and no "min" entry before any reader asked."""
    cq = written["dir"] / "expected" / "consumequeue"
    assert (cq / "CURRENT").is_file() and not any(p.is_dir() for p in cq.iterdir())
    fam = _families(written["answers"]["expected"])
    assert fam["default"] and fam["offset"]
    assert not any(b"\x01min\x01" in bytes.fromhex(k) for k, _ in fam["offset"])


@pytest.mark.parametrize("line,name", CASES)
def test_key_value_sets_match_broker(written, line, name):
    """Both column families hold exactly the broker's keys and values (read by the broker's code)."""
    exp, ours = _families(written["answers"]["expected"]), _families(written["answers"]["ours"])
    assert sorted(exp) == sorted(ours) == ["default", "offset"]
    for family in exp:
        e, o = {k: v for k, v in exp[family]}, {k: v for k, v in ours[family]}
        missing, extra = sorted(set(e) - set(o)), sorted(set(o) - set(e))
        assert not missing and not extra, f"{family}: keys only the broker has {missing[:3]}, only ours {extra[:3]}"
        wrong = [k for k in e if e[k] != o[k]]
        assert not wrong, (f"{family}: {len(wrong)} value(s) differ, first key {wrong[0]}: "
                           f"{e[wrong[0]]} vs {o[wrong[0]]}")


@pytest.mark.parametrize("line,name", CASES)
def test_broker_answers_alike_on_our_database(written, line, name):
    """The broker opens our database and index and answers every queue (min, max, getMessage from 0)
    and every key query as on its own."""
    exp = [a for a in written["answers"]["expected"] if a["kind"] in ("queue", "query")]
    ours = [a for a in written["answers"]["ours"] if a["kind"] in ("queue", "query")]
    assert exp and ours == exp


@pytest.mark.parametrize("line,name", CASES)
def test_index_files_are_the_broker_s(written, line, name):
    """``index/`` stays file-based with a RocksDB consume queue: byte for byte the broker's, file by file
    in order (a file's name is the broker's clock when it made it)."""
    exp = sorted((written["dir"] / "expected" / "index").iterdir())
    ours = sorted((written["dir"] / "ours" / "index").iterdir())
    assert exp and len(ours) == len(exp)
    for i, (e, o) in enumerate(zip(exp, ours)):
        bh.same_bytes(e.read_bytes(), o.read_bytes(), f"index file #{i}")


@pytest.mark.parametrize("line", LINES)
def test_what_is_not_built_for_it_is_refused_in_one_line(written_any, tmp_path, line):
    """The store's database read with file-based settings: one line, exit 2.  (--as-restart, with
    recheckReputOffsetFromCq=true too: test_rocksdb_restart_broker.)"""
    from pipelines.cli import main

    d = written_any["dir"]
    conf_default = tmp_path / "default.conf"
    conf_default.write_text((d / "broker.conf").read_text().replace("storeType=defaultRocksDB", "storeType=default"))
    store_with_db = tmp_path / "store"
    shutil.copytree(d / "store", store_with_db)
    shutil.copytree(d / "expected" / "consumequeue", store_with_db / "consumequeue")
    for argv in (["rebuild", "--store", str(store_with_db), "--config", str(conf_default),
                  "--out", str(tmp_path / "o3")],):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
        lines = [ln for ln in err.getvalue().splitlines() if ln.startswith("error:")]
        assert code == 2 and len(lines) == 1, (argv, err.getvalue()[-1500:])
        assert "RocksDB" in lines[0] or "storeType" in lines[0], lines[0]



def _table_queues(tables: Path) -> tuple[dict[tuple[str, int], list[tuple[int, int, int]]], list[dict]]:
    """Each queue's units as the messages table places them, (unit, queue offset, commitlog offset) in
    queue order (a light queue's units with the record's own queue offset, as getMessage decodes them), and
    the rows of records read but not dispatched."""
    from pipelines.tables.runs import snapshot

    rows = snapshot(str(tables)).read_arrow("messages").to_pylist()
    units: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
    for r in rows:
        if r["consume_queue"]:
            units.setdefault((r["topic"], r["queue_id"]), []).append(
                (r["consume_queue_offset"], r["queue_offset"], r["commitlog_offset"]))
        light = zip(r["lmq_queues"] or [], r["lmq_queue_ids"] or [], r["lmq_consume_queue_offsets"] or [])
        for name, qid, unit in light:
            if unit is not None:
                units.setdefault((name, qid), []).append((unit, r["queue_offset"], r["commitlog_offset"]))
    return ({q: sorted(us) for q, us in units.items()},
            [r for r in rows if not r["dispatch"].startswith(("consume queue", "no consume queue"))])


@pytest.mark.parametrize("line,name", CASES)
def test_table_queues_are_the_broker_s(written, line, name):
    """The messages table places every unit where the broker's RocksDB queues hold it: queue by queue,
    what getMessage returns from offset 0 (queue offset, commitlog offset, in order) and the queue's
    max offset; the record at commitlog offset 0, which the broker's rebuild never dispatches, is a
    row read but not dispatched, in no queue."""
    _check_table_queues(written, written["dir"] / "tables")


def _check_table_queues(written: dict, tables: Path) -> None:
    """``tables``' messages place each unit where the broker's queues hold it (see the test above)."""
    from pipelines.tables.rows import ROCKSDB_START_DISPATCH
    from pipelines.tables.runs import snapshot

    broker = {(a["topic"], a["queueId"]): a for a in written["answers"]["expected"] if a["kind"] == "queue"}
    ours, undispatched = _table_queues(tables)
    assert broker and set(ours) <= set(broker)
    for q, a in broker.items():
        units = ours.get(q, [])
        got = [[qo, off] for _u, qo, off in units]
        assert got == [m[:2] for m in a["messages"]], f"queue {q}: {got[:5]} vs broker's {a['messages'][:5]}"
        assert units and units[-1][0] + 1 == a["max"], f"queue {q}: last unit {units[-1:]}, broker's max {a['max']}"
    assert [(r["commitlog_offset"], r["consume_queue"], r["indexed"], r["dispatch"]) for r in undispatched] == [
        (0, False, False, ROCKSDB_START_DISPATCH)]
    # records read count it, records dispatched do not
    segments = snapshot(str(tables)).read_arrow("segments").to_pylist()
    assert sum(r["records"] for r in segments) == sum(r["dispatched"] for r in segments) + 1


@pytest.mark.parametrize("line,name", CASES)
def test_table_lookups_answer_like_the_broker_s_index(written, line, name):
    """Every (topic, key) of the scenario: ``lookup`` over the tables and over our ``index/`` finds what
    the broker's queryMessage finds on its own store (with the client's filters)."""
    from pipelines.lookup import lookup_index, lookup_key
    from store_format.config import load_broker_config

    d = written["dir"]
    queries = [a for a in written["answers"]["expected"] if a["kind"] == "query"]
    assert queries
    config = load_broker_config((d / "broker.conf").read_text(), brokerVersion=BROKER_LINE[line])
    for a in queries:
        want = bh.expected_lookup(a)
        got = sorted(r["commitlog_offset"] for r in lookup_key(str(d / "tables"), a["topic"], a["key"]).rows)
        assert got == want, f"lookup (tables) {a['topic']!r} {a['key'][:40]!r}: {got} != broker's {want}"
        by_index = lookup_index(str(d / "ours" / "index"), str(d / "store"), config, a["topic"], a["key"])
        got = sorted(r["commitlog_offset"] for r in by_index.rows)
        assert got == want, f"lookup --index {a['topic']!r} {a['key'][:40]!r}: {got} != broker's {want}"


def _cli(argv: list[str]) -> tuple[int, str]:
    code, out, _ = bh.cli(argv)
    return code, out


@pytest.mark.parametrize("line,name", CASES)
def test_tables_refresh_and_audit(written, tmp_path, line, name):
    """``tables --store`` into new tables (a full run), then again (incremental: from the last
    segment on) places the units where the broker's queues hold them; ``audit`` answers, saying how
    the RocksDB consume queue's cleanup goes (``test_rocksdb_cleanup_broker``) and listing no consume
    queue file; ``validate``
    passes (its inventory check expects no consume queue file)."""
    from pipelines.tables.expiry_audit import ROCKSDB_CQ_NOTE
    from pipelines.tables.runs import snapshot

    d, tables = written["dir"], tmp_path / "tables"
    argv = ["tables", "--store", str(d / "store"), "--tables", str(tables), "--config", str(d / "broker.conf"),
            "--broker-version", BROKER_LINE[line], "--split-size", "4k"]
    for mode in ("full", "incremental"):
        code, _ = _cli(argv)
        assert code == 0
        assert snapshot(str(tables)).run["mode"] == mode
        _check_table_queues(written, tables)
    code, text = _cli(["audit", "--tables", str(tables), "--as-of", "now"])
    assert code == 0 and ROCKSDB_CQ_NOTE in text
    code, text = _cli(["validate", "--tables", str(tables), "--engine", "arrow"])   # no consume queue file expected
    assert code == 0, text[-2000:]
    kinds = set(snapshot(str(tables)).read_arrow("expiry_audit")["kind"].to_pylist())
    assert "consume_queue_file" not in kinds and "segment" in kinds


_store_with_broker_db, _damage = store_with_broker_db, damage_database


@pytest.mark.parametrize("line", LINES)
def test_verify_compares_the_database_entry_by_entry(written_any, tmp_path, line):
    """``verify`` on the broker's own store (the database and index/ of its own rebuild) finds every
    queue identical; with units deleted and changed and a max entry deleted in a copy of that database,
    it names exactly those queues with their missing and different entries (exit 1); the store's
    database is read from a copy, never opened in place."""
    import json

    d = written_any["dir"]
    store = _store_with_broker_db(written_any, tmp_path)
    base = ["verify", "--store", str(store), "--config", str(d / "broker.conf"),
            "--broker-version", BROKER_LINE[line], "--json"]
    code, out = _cli(base)
    report = json.loads(out)
    assert code == 0 and report["identical"], report["summary"]
    assert report["counts"]["rocksdb_consume_queue"]["identical"] > 1
    assert report["restart"]["rocksdb"] and not report["restart"]["queues"]   # nothing happens at a start
    first, second, q0 = _damage(written_any, store / "consumequeue")
    before = sorted(p.name for p in (store / "consumequeue").iterdir())
    code, out = _cli(base)
    report = json.loads(out)
    assert code == 1 and not report["identical"]
    bad = {r["path"]: r for r in report["rocksdb_consume_queue"]}
    name = f"{first['topic']}/{first['queueId']}"
    assert sorted(bad) == sorted({name, f"{second['topic']}/{second['queueId']}"})
    assert bad[name]["differing_units"] == 2 and bad[name]["first_unit"] == q0
    assert bad[name]["note"].startswith("entries: 1 missing, 0 extra, 1 different")
    other = bad[f"{second['topic']}/{second['queueId']}"]
    assert other["differing_units"] == 1 and "max entry" in other["note"]
    assert sorted(p.name for p in (store / "consumequeue").iterdir()) == before   # not opened in place


@pytest.mark.parametrize("line", LINES)
def test_repair_replaces_a_damaged_database_as_a_whole(written_any, tmp_path, line):
    """``repair`` on a store whose database was damaged (as above) plans one ``replace_database``, swaps
    the rebuilt database in, and keeps the damaged one in the backup: afterwards the store's database
    holds exactly the broker's own key/value set (both families), ``verify`` finds it identical, the
    backup still holds the damage, and the staged folder an interrupted repair left is gone."""
    import json

    from pipelines.verify.rocksdb_compare import compare_rocksdb_cq

    d = written_any["dir"]
    store = _store_with_broker_db(written_any, tmp_path)
    _damage(written_any, store / "consumequeue")
    (store / ".consumequeue.repair-0123456789ab.tmp").mkdir()       # as an interrupted repair leaves it
    conf = ["--store", str(store), "--config", str(d / "broker.conf"), "--broker-version", BROKER_LINE[line]]
    code, out = _cli(["repair", *conf, "--backup", str(tmp_path / "backup"), "--json"])
    assert code == 0, out[-2000:]
    result = json.loads(out)
    assert [(a["action"], a["path"], a["done"]) for a in result["plan"]["actions"]] == [
        ("replace_database", "consumequeue", True)]
    assert any(".consumequeue.repair-0123456789ab.tmp" in n for n in result["notes"])
    results, _ = compare_rocksdb_cq(str(store / "consumequeue"), str(d / "expected" / "consumequeue"))
    assert results and all(r.status == "identical" for r in results), [r for r in results if r.status != "identical"]
    kept, _ = compare_rocksdb_cq(str(tmp_path / "backup" / "consumequeue"), str(d / "expected" / "consumequeue"))
    assert sum(r.status != "identical" for r in kept) == 2
    assert not [p.name for p in store.iterdir() if p.name.startswith(".consumequeue")]
    code, out = _cli(["verify", *conf, "--json"])
    assert code == 0 and json.loads(out)["identical"]

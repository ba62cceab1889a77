"""A RocksDB consume queue (5.x ``storeType=defaultRocksDB``) over a DLedger commitlog, checked against the broker's
own restart: ``verify`` over the database kept with entries past DLedger's committed position, and ``rebuild
--as-restart`` with 5.5.1's ``indexRocksDBEnable``/``transRocksDBEnable``.

The JVM harness (:mod:`broker_harness`) writes :mod:`broker_dledger_scenarios`' ``plain`` messages (60, each with a
unique key, half with keys and tags, three data files) with ``storeType=defaultRocksDB``, keeps the store in
``<dir>/before/`` and restarts the broker on it.

* ``-restart-back-kept`` (``recheckReputOffsetFromCq=true``) and ``-restart-back-kept-norecheck`` (without it): the
  database and ``index/`` kept (``keepQueues``) after a clean shutdown, DLedger's checkpoint :data:`BACK` entries
  behind the log's end (``dledgerCommittedBack``: a crash before the group committed them).  The broker's restart
  (``dledgerRecoverNormally``: no dispatch; the start's reput from the min offset, or from the committed position,
  up to the committed position, which a group of one moves to the log's end once the node leads) puts the units
  again up to the log's end.  ``verify`` on ``before/`` compares the database with a rebuild read to the log's end
  (``pipelines.restart.led_dledger_store``): identical, and it predicts, queue by queue, the entries the broker left.
* ``-crash-rdbidx-lag`` (an ``abort`` file, the checkpoint :data:`BACK` entries behind) and
  ``-restart-back-norecheck-rdbidx-lag`` (a clean shutdown, the start's reput from the committed position) with
  ``indexRocksDBEnable=true`` and ``transRocksDBEnable=true``: the consume queue database and ``index/`` deleted
  (what ``--as-restart`` assumes), ``rocksdbstore/`` kept (the restart keeps it: ``--as-restart`` adds to the store's
  copy), its index entries of the records after an earlier put deleted and of one put below it, lastOffsetPy set to
  that put's record (``rocksdbIndexLag``: a crash that lost the index thread's last batches).  Their stores'
  lastOffsetPy only lowers ``DefaultMessageStore.recover``'s ``dispatchFromPhyOffset`` where above 0, which the
  deleted database's 0 already is, and ``DLedgerCommitLog.isMmapFileMatchedRecover`` asks the queue store alone: the
  restart dispatches what it does without them, and ``IndexRocksDBStore.buildIndex`` indexes the records it dispatches
  from lastOffsetPy on.  ``rebuild --as-restart`` of ``before/`` gives the broker's database key for key, its
  ``index/`` byte for byte and its ``rocksdbstore/`` index family key for key.  ``PIPELINES_FULL_SUITE=1`` adds
  ``-crash-rdbidx-lost`` (``rocksdbstore/`` deleted before the restart: the broker creates it empty) and
  ``-restart-back-rdbidx-lag`` (a clean restart from the min offset), ``-crash-damaged-rdbidx-lag`` (the 56th
  message's body byte flipped: the walk ends there, the start's reput from the min offset walks its records again,
  then the damaged message and the rest), ``-converted-restart-rdbidx-lost`` (a store converted in place, clean,
  ``rocksdbstore/`` deleted: the reput from the old files' offset 0 indexes their records, then the data files'; with
  an ``abort`` file added ``--as-restart`` refuses it in one line: after a crash the walk's records reach the index
  thread first, so whether the old records get entries is thread timing), and ``-restart-back-kept-rdbidx``: verify's
  prediction over the database kept with both settings on (their lastOffsetPy lowers ``dispatchFromPhyOffset`` below
  the log's end, so ``truncateDirty`` is not called: it would change nothing, the same prediction).

5.5.1 by default; ``ROCKSDB_MORE_LINES=5.3.3,5.5.1`` adds 5.3.3's verify cases (5.3.3 has neither RocksDB store).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import broker_dledger_scenarios as dl
import broker_harness as bh
import numpy as np
import pytest
from broker_dledger_runs import _committed_pos
from broker_rocksdb_runs import (
    as_restart_database_is_the_broker_s,
    as_restart_index_is_the_broker_s,
    database,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
pytest.importorskip("rocksdict")

LINES = bh.lines_from_env("ROCKSDB_MORE_LINES", "5.5.1")
BROKER_LINE = bh.BROKER_VERSION_ARG
BACK = 5    # entries DLedger's checkpoint is behind the log's end
PUTS = 60   # the plain store's messages
RDBIDX = {"indexRocksDBEnable": "true", "transRocksDBEnable": "true"}
DAMAGED = 55   # the put whose body byte is flipped (the 56th message, in the last data file)


def _scenarios(line: str) -> list[dict]:
    plain, _, converted = dl.dledger_scenarios(line)[:3]

    def rocks(what: str, *, recheck: bool = True, extra: dict | None = None, sc: dict = plain,
              **knobs: object) -> dict:
        conf = {**sc["config"], "storeType": "defaultRocksDB", **(extra or {})}
        if not recheck:
            conf.pop("recheckReputOffsetFromCq", None)
        return {**sc, "keepBefore": True, "dledgerCommittedBack": BACK, **knobs, "config": conf,
                "name": f"{line}-rocksdb-dledger-{what}"}

    out = [rocks("restart-back-kept", keepQueues=True),
           rocks("restart-back-kept-norecheck", recheck=False, keepQueues=True, restartRebuildsNothing=True)]
    if line.startswith("5.5"):
        # the database kept with the RocksDB message stores: their lastOffsetPy lowers dispatchFromPhyOffset
        out.append(rocks("restart-back-kept-rdbidx", keepQueues=True, extra=RDBIDX))
        # the index lost its last batches after put PUTS-8 and put PUTS-10's (a hole below lastOffsetPy); the clean
        # restart without the switch: its lastOffsetPy below the committed position (records between never indexed)
        out += [rocks("crash-rdbidx-lag", abort=True, extra=RDBIDX,
                      rocksdbIndexLag={"put": PUTS - 8, "hole": PUTS - 10}),
                rocks("restart-back-norecheck-rdbidx-lag", recheck=False, restartRebuildsNothing=True, extra=RDBIDX,
                      rocksdbIndexLag={"put": PUTS - 12, "hole": PUTS - 14}),
                rocks("crash-rdbidx-lost", abort=True, extra=RDBIDX, dropRocksdbStore=True),
                # a damaged message (body CRC) in the last data file: the walk ends there, the reput from the min
                # offset walks its records again, then the damaged message and the rest
                rocks("crash-damaged-rdbidx-lag", abort=True, extra=RDBIDX, damageMessage=DAMAGED,
                      rocksdbIndexLag={"put": DAMAGED - 10, "hole": DAMAGED - 12}),
                # a store converted in place (old commitlog/ files), clean: the reput from the old files' min offset;
                # with an abort file added, refused (thread timing)
                rocks("converted-restart-rdbidx-lost", sc=converted, extra=RDBIDX, dropRocksdbStore=True),
                rocks("restart-back-rdbidx-lag", extra=RDBIDX, rocksdbIndexLag={"put": PUTS - 12, "hole": PUTS - 14})]
    return out


# -restart-back-kept-norecheck with the full suite only: test_rocksdb_dledger_verify_converted_broker's
# -converted-restart-kept-norecheck predicts the same reput from the committed position over a kept database
SCENARIOS = {line: bh.bounded(_scenarios(line), ("-crash-rdbidx-lost", "-restart-back-rdbidx-lag",
                                                 "-restart-back-kept-norecheck",
                                                 "-restart-back-kept-rdbidx", "-crash-damaged-rdbidx-lag",
                                                 "-converted-restart-rdbidx-lost"))
             for line in LINES}
ALL = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
KEPT = [c for c in ALL if "-kept" in c.values[1]]
REBUILT = [c for c in ALL if c not in KEPT]
CONVERTED = [c for c in ALL if "-converted-" in c.values[1]] or [
    pytest.param("", "", marks=pytest.mark.skip(reason="PIPELINES_FULL_SUITE=1 writes the converted store"))]
_RUNS: dict[str, dict] = {}
# one store at a time in each JVM: RocksDB stores written in threads crashed the JVM
STORES = bh.Stores(SCENARIOS, "RocksDB DLedger store(s), each restarted", threads=1)


@pytest.fixture
def restarted(request) -> dict:
    """The scenario as the broker wrote and restarted it, and our ``verify`` (database kept) or ``--as-restart``
    rebuild of ``before/`` (every scenario written, and run, once)."""
    return bh.written_once(request, _RUNS, STORES, then=bh.restart_checked)


def _log_end(store: Path) -> int:
    """DLedger's log end in ``store``: the end of the last entry its ``index/`` holds."""
    units = b"".join(p.read_bytes() for p in sorted((store / "dledger-n0" / "index").iterdir()))
    last = max(i for i in range(len(units) // 32) if int.from_bytes(units[32 * i:32 * i + 4], "big") != 0)
    return int.from_bytes(units[32 * last + 4:32 * last + 12], "big") \
        + int.from_bytes(units[32 * last + 12:32 * last + 16], "big")


def _units(default: dict[bytes, bytes]) -> list[tuple[int, int]]:
    """(commitlog offset, size) of every unit of a consume queue database's ``default`` family, in commitlog order."""
    return sorted((int.from_bytes(v[:8], "big"), int.from_bytes(v[8:12], "big")) for v in default.values())


def _checkpoint(offset: dict[bytes, bytes]) -> int:
    from store_format.rocksdb_cq import checkpoint_key
    return int.from_bytes(offset[checkpoint_key()], "big")


def _parsed(db: Path):  # noqa: ANN202
    from pipelines.verify.rocksdb_compare import read_store_database
    from store_format.rocksdb_recovery import parse_database
    return parse_database(read_store_database(str(db)))


def _pair(e) -> tuple[int, int] | None:  # noqa: ANN001
    return None if e is None else (int(e[0]), int(e[1]))


def _index_count(folder: Path) -> int:
    """The index keys of the files of ``folder`` (``indexCount`` less the unused entry 0, file by file)."""
    from store_format.indexfile import read_header
    return sum(read_header(f.read_bytes()).index_count - 1 for f in sorted(folder.iterdir()) if f.name.isdigit())


SPECIAL = (b"lastOffsetPy", b"lastStoreTimeStamp")


def _index_family(db: Path, work: Path) -> dict[bytes, bytes]:
    """Every key/value of a ``rocksdbstore/``'s index (``default``) family, read from a copy."""
    from pipelines.index_rocksdb import read_message_rocksdb

    copy = work / f"{db.parent.name}-{db.name}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(db, copy)
    return read_message_rocksdb(copy)["default"]


def _indexed(family: dict[bytes, bytes]) -> set[int]:
    """The commitlog offsets of the records an index family holds entries of (the key's last 8 bytes)."""
    return {int.from_bytes(k[-8:], "big") for k in family if k not in SPECIAL}


@pytest.mark.parametrize("line,name", KEPT)
def test_verify_predicts_the_restart_past_the_committed_position(restarted, line: str, name: str,
                                                                  tmp_path: Path) -> None:
    """The database and ``index/`` kept after a clean shutdown, every record dispatched (checkpoint key at the log's
    end), DLedger's checkpoint :data:`BACK` entries behind: the broker's restart put units up to the log's end (the
    node leads, a group of one commits them).  ``verify`` on ``before/`` finds the database identical to its rebuild
    (read to the log's end, not to the committed position), says it assumes the node leads, and predicts queue by
    queue the "max" and "min" entries the broker left, the units above the max, the checkpoint, and the index keys
    the start puts again (the last indexed record's: the reput from the min offset, or from the committed position,
    reaches it)."""
    d = Path(restarted["scenario"]["dir"])
    committed, end = _committed_pos(d / "before"), _log_end(d / "before")
    before, cp_before = _parsed(d / "before" / "consumequeue")
    after, cp_after = _parsed(d / "expected" / "consumequeue")
    assert committed < end and not (d / "before" / "abort").exists() and cp_before == end == cp_after, \
        (committed, end, cp_before, cp_after)
    assert restarted["written"]["dledgerCommittedPos"] == end   # the broker's node led and committed them
    v = restarted["verify"]
    assert v["report"] is not None, v["stderr"]
    report = v["report"]
    assert report["identical"], report["summary"]   # the rebuild read to the log's end too
    p = report["restart"]
    assert p is not None and p["rocksdb"], report.get("restart_note")
    assert p["recovery_cut"] == p["commitlog_end"] == end
    assert any("it assumes the node leads" in n for n in p["notes"]), p["notes"]
    # -rdbidx: IndexRocksDBStore's lastOffsetPy (the last record's offset) lowers dispatchFromPhyOffset below the end
    if name.endswith("-rdbidx"):
        last = int.from_bytes(_index_family(d / "before" / "rocksdbstore", tmp_path)[b"lastOffsetPy"], "big")
        assert 0 < last < end, (last, end)
    said = "truncateDirty is not called" if name.endswith("-rdbidx") else "truncateDirty there"
    assert any(said in n for n in p["notes"]), p["notes"]
    assert p["rocksdb_checkpoint_before"] == cp_before and p["rocksdb_checkpoint_after"] == cp_after
    assert not p["truncate_dirty_logic_files"] and p["units_lost"] == p["units_truncated"] == 0
    recheck = restarted["scenario"]["config"].get("recheckReputOffsetFromCq") == "true"
    # the start's reput: from the min offset (the first data file's, 0) or the committed position, to the log's end
    assert p["second_reput_from"] == (0 if recheck else committed), (p["second_reput_from"], committed)
    grown = _index_count(d / "expected" / "index") - _index_count(d / "before" / "index")
    assert grown > 0 and grown == p["index_keys_put_again"], \
        f"the broker's index gained {grown} key(s), verify says {p['index_keys_put_again']}"
    listed = {q["queue"]: q for q in p["queues"]}
    assert set(listed) <= set(before) | set(after)
    changed = 0
    for queue in sorted(set(before) | set(after)):
        b, a = before.get(queue), after.get(queue)
        got = (_pair(a.max), _pair(a.min)) if a is not None else (None, None)
        changed += b is None or got != (_pair(b.max), _pair(b.min))
        q = listed.get(queue)
        if q is None:
            assert got == ((_pair(b.max), _pair(b.min)) if b is not None else (None, None)), \
                f"{queue}: not listed by verify, but the broker changed its entries {got}"
            continue
        assert got == (_pair(q["max_entry_after"]), _pair(q["min_entry_after"])), (queue, got, q)
        above = int((a.cq > a.max[1]).sum()) if a is not None and a.max is not None else 0
        assert above == q["units_truncated"], (queue, above, q)
    for queue, b in before.items():
        a = after[queue]
        assert np.array_equal(a.cq, b.cq) and np.array_equal(a.phy, b.phy), f"{queue}: units changed"


@pytest.mark.parametrize("line,name", REBUILT)
def test_the_broker_restart_dispatched(restarted, line: str, name: str, tmp_path: Path) -> None:
    """What the broker's restart wrote with the RocksDB message stores on: the consume queue database with units up to
    DLedger's log end, from the first record (at 48: after a crash the walk from the first data file, the deleted
    database's 0 matching none, whatever lastOffsetPy says; a clean restart from the min offset) or from the committed
    position (a clean restart without ``recheckReputOffsetFromCq``); the index family with entries of the records the
    restart dispatched from lastOffsetPy on (the hole below it stays; the records between it and the committed
    position stay unindexed where the reput starts at the committed position)."""
    sc, d, w = restarted["scenario"], Path(restarted["scenario"]["dir"]), restarted["written"]
    committed, end = _committed_pos(d / "before"), _log_end(d / "before")
    assert committed < end and (d / "before" / "abort").is_file() == bool(sc.get("abort"))
    broker = database(d / "expected" / "consumequeue")
    units = _units(broker["default"])
    assert units and units[-1][0] + units[-1][1] == end == _checkpoint(broker["offset"]), (units[-1], end)
    norecheck = "-norecheck" in name
    first = 0 if "-converted-" in name else 48   # an old file's first record, or the first entry's
    assert units[0][0] >= committed if norecheck else units[0][0] == first, (units[0], committed)
    expected = _indexed(_index_family(d / "expected" / "rocksdbstore", tmp_path))
    offsets = [o for o, _ in units] if not norecheck else None
    if "-converted-" in name:   # the old files' records first (from offset 0), then the data files'
        first_data = int(sorted((d / "before" / "dledger-n0" / "data").iterdir())[0].name)
        assert not (d / "before" / "rocksdbstore").exists() and first_data > 0
        assert min(expected) < first_data < max(expected), (min(expected), first_data)
        return
    if sc.get("dropRocksdbStore"):
        assert not (d / "before" / "rocksdbstore").exists()
        assert expected == set(offsets or []), "every record dispatched is indexed in the new database"
        return
    before = _indexed(_index_family(d / "before" / "rocksdbstore", tmp_path))
    last, hole = w["rocksdbIndexLastOffsetPy"], w["rocksdbIndexHole"]
    assert w["rocksdbIndexDeleted"] > 0 and hole < last == max(before) and hole not in before
    assert hole not in expected and max(expected) > last and expected > before
    if "damaged" in name:   # the reput (no CRC check) dispatched the damaged message: a unit and its entries
        damaged = w["damagedRecord"]
        assert damaged in {o for o, _ in units} and damaged in expected and last < damaged
    if norecheck:   # below the committed position nothing is dispatched: the records past lastOffsetPy stay out
        assert last < committed
        assert not {o for o in expected - before if last < o < committed}
    else:
        assert {o for o, _ in units if o >= last} <= expected


@pytest.mark.parametrize("line,name", REBUILT)
def test_as_restart_gives_the_broker_s_databases_and_index_files(restarted, line: str, name: str,
                                                                 tmp_path: Path) -> None:
    """``rebuild --as-restart`` of ``before/``: the consume queue database key for key (both column families),
    ``index/`` byte for byte, and ``rocksdbstore/``'s index family key for key and value for value (lastOffsetPy and
    lastStoreTimeStamp included)."""
    as_restart_database_is_the_broker_s(restarted)
    as_restart_index_is_the_broker_s(restarted)
    d = Path(restarted["scenario"]["dir"])
    expected = _index_family(d / "expected" / "rocksdbstore", tmp_path)
    got = _index_family(d / "ours" / "rocksdbstore", tmp_path)
    missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
    assert not missing and not extra, f"keys only the broker has {missing[:3]}, only ours {extra[:3]}"
    assert [k for k in expected if expected[k] != got[k]] == []


@pytest.mark.parametrize("line,name", CONVERTED)
def test_a_converted_store_with_the_index_after_a_crash_is_refused(restarted, tmp_path: Path, line: str,
                                                                    name: str) -> None:
    """The converted store with an ``abort`` file added: the crash walk's records (the data files') reach the index
    thread before the reput's old records, whose offsets lie below them, so whether ``IndexRocksDBStore.buildIndex``
    skips those is thread timing: one line, exit 2."""
    d = Path(restarted["scenario"]["dir"])
    store = tmp_path / "store"
    shutil.copytree(d / "before", store)
    (store / "abort").touch()
    code, _, err = bh.cli(["rebuild", "--store", str(store), "--out", str(tmp_path / "o"), "--as-restart",
                           "--config", str(d / "broker.conf"), "--broker-version", BROKER_LINE[line], "--no-tables"])
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert code == 2 and len(lines) == 1, err[-1500:]
    assert "converted in place with indexRocksDBEnable after a crash" in lines[0], lines[0]

"""``rebuild --as-restart`` on a RocksDB consume queue (5.x ``storeType=defaultRocksDB``) over a DLedger commitlog,
checked against the broker's own restart (:mod:`store_format.dledger_rocksdb_restart`).

The JVM harness (:mod:`broker_harness`) writes :mod:`broker_dledger_scenarios`' ``plain`` (and ``mixed``) messages
with ``storeType=defaultRocksDB``, keeps the store in ``<dir>/before/`` and restarts the broker on it with the
database and ``index/`` deleted: after a clean shutdown (``-restart``), with DLedger's checkpoint five entries
behind the log's end (``-back``: ``dledgerCommittedBack``, the entries a crash left uncommitted), without
``recheckReputOffsetFromCq`` (``-norecheck``), and after a crash (``-crash``: an ``abort`` file, the abnormal
recovery).  Each case first asserts what the broker's restart did (which records its database holds units of,
where its checkpoint stands, the walk's last record indexed twice after a crash), then that ``rebuild
--as-restart`` on ``<dir>/before/`` gives its database's key/value set, both column families entry for entry, and
its ``index/`` files byte for byte.  A crash walk that ends at a damaged message before a record the start's
reput's own check refuses too, below DLedger's committed position in its data file, stays refused in one line (a
damaged message alone: tests/test_rocksdb_dledger_restart_more_broker.py; such a record elsewhere:
tests/test_rocksdb_dledger_restart_damaged_broker.py).

With the database kept (``keepQueues``, ``-kept``): after a clean shutdown ``verify`` on ``before/`` predicts the
broker's restart over it, queue by queue (``pipelines/verify/rocksdb_dledger_restart.py``); after a crash it says in
one line that it gives none (``truncateDirty`` at the walk's short ``processOffset`` races the walk's dispatch).

5.5.1 by default; ``ROCKSDB_LINES=5.3.3,5.5.1`` adds 5.3.3.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import broker_dledger_scenarios as dl
import broker_harness as bh
import numpy as np
import pytest
from broker_rocksdb_runs import (
    as_restart_database_is_the_broker_s,
    as_restart_index_is_the_broker_s,
    database,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
pytest.importorskip("rocksdict")

LINES = bh.lines_from_env("ROCKSDB_LINES", "5.5.1")
BROKER_LINE = bh.BROKER_VERSION_ARG
BACK = 5   # entries DLedger's checkpoint is behind the log's end in the -back and -crash cases


def _scenarios(line: str) -> list[dict]:
    plain, mixed = dl.dledger_scenarios(line)[:2]

    def rocks(sc: dict, what: str, *, recheck: bool = True, **knobs: object) -> dict:
        conf = {**sc["config"], "storeType": "defaultRocksDB"}
        if not recheck:
            conf.pop("recheckReputOffsetFromCq", None)
        return {**sc, **knobs, "config": conf, "name": f"{line}-rocksdb-dledger-{what}"}

    return [rocks(plain, "restart", keepBefore=True),
            rocks(plain, "restart-back", keepBefore=True, dledgerCommittedBack=BACK),
            rocks(plain, "restart-back-norecheck", recheck=False, keepBefore=True, restartRebuildsNothing=True,
                  dledgerCommittedBack=BACK),
            rocks(plain, "crash", abort=True, dledgerCommittedBack=BACK),
            rocks(plain, "crash-norecheck", recheck=False, abort=True, dledgerCommittedBack=BACK),
            rocks(mixed, "mixed-crash", abort=True, dledgerCommittedBack=BACK),
            # the database kept (keepQueues): verify's prediction on before/ (a clean restart), its refusal (a crash)
            rocks(plain, "restart-kept", keepBefore=True, keepQueues=True),
            rocks(plain, "restart-kept-norecheck", recheck=False, keepBefore=True, keepQueues=True,
                  restartRebuildsNothing=True),
            rocks(mixed, "mixed-restart-kept", keepBefore=True, keepQueues=True),
            rocks(plain, "crash-kept", abort=True, keepQueues=True)]

# the default suite leaves out what another case covers with the same rule: the clean restart with the log all
# committed (-restart-back), the plain crash (-mixed-crash), the kept database without the switch and of the mixed
# store (-restart-kept); and what a case of the other RocksDB + DLedger modules covers: the clean restart without the
# switch past the committed position (-restart-back-norecheck-rdbidx-lag), the crash without it (-crash-damaged-gap),
# verify over the kept database (-restart-back-kept, past the committed position too); PIPELINES_FULL_SUITE=1 writes all
SCENARIOS = {line: bh.bounded(_scenarios(line), ("-dledger-restart", "-dledger-crash", "-restart-kept-norecheck",
                                                 "-mixed-restart-kept", "-restart-back-norecheck",
                                                 "-dledger-crash-norecheck", "-dledger-restart-kept"))
             for line in LINES}
ALL = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
CASES = [c for c in ALL if not c.values[1].endswith("-kept") and not c.values[1].endswith("-kept-norecheck")]
KEPT = [c for c in ALL if c not in CASES and "crash" not in c.values[1]]
KEPT_CRASH = [c for c in ALL if c not in CASES and "crash" in c.values[1]]
CRASH = [c for c in CASES if "crash" in c.values[1]]
_RUNS: dict[str, dict] = {}
# one store at a time in each JVM: RocksDB stores written in threads crashed the JVM
STORES = bh.Stores(SCENARIOS, "RocksDB DLedger store(s), each restarted", threads=1)


@pytest.fixture
def restarted(request) -> dict:
    """The scenario as the broker wrote and restarted it, and our ``--as-restart`` rebuild of ``before/``, or with
    its database kept our ``verify`` on the store as the restart found it (every scenario written, and rebuilt,
    once)."""
    return bh.written_once(request, _RUNS, STORES, then=bh.restart_checked)


def _committed_pos(store: Path) -> int:
    """DLedger's committed position in ``store`` as the restart finds it: the end of the entry its ``checkpoint``
    names, from that entry's unit in the first ``index/`` file (32 bytes: magic, pos, size, index, term)."""
    index = int(bh.read_conf(store / "dledger-n0" / "checkpoint")["committedIndex"])
    first = sorted((store / "dledger-n0" / "index").iterdir())[0]
    with first.open("rb") as f:
        f.seek(index * 32)
        unit = f.read(32)
    assert int.from_bytes(unit[16:24], "big") == index, (index, unit.hex())
    return int.from_bytes(unit[4:12], "big") + int.from_bytes(unit[12:16], "big")


def _log_end(store: Path) -> int:
    """DLedger's log end in ``store``: the end of the last entry its ``index/`` holds."""
    units = b"".join(p.read_bytes() for p in sorted((store / "dledger-n0" / "index").iterdir()))
    last = max(i for i in range(len(units) // 32) if int.from_bytes(units[32 * i:32 * i + 4], "big") != 0)
    return int.from_bytes(units[32 * last + 4:32 * last + 12], "big") \
        + int.from_bytes(units[32 * last + 12:32 * last + 16], "big")


def _units(default: dict[bytes, bytes]) -> list[tuple[int, int]]:
    """(commitlog offset, size) of every unit of a ``default`` family, in commitlog order."""
    return sorted((int.from_bytes(v[:8], "big"), int.from_bytes(v[8:12], "big")) for v in default.values())


def _checkpoint(offset: dict[bytes, bytes]) -> int:
    from store_format.rocksdb_cq import checkpoint_key
    return int.from_bytes(offset[checkpoint_key()], "big")


def _index_holds_a_key_twice(index_dir: Path, slots: int) -> bool:
    (index,) = index_dir.iterdir()
    data = index.read_bytes()
    count = int.from_bytes(data[36:40], "big")
    at = 40 + 4 * slots
    entries = [data[at + 20 * i:at + 20 * i + 12] for i in range(1, count)]   # (key hash, offset)
    return len(set(entries)) < len(entries)


@pytest.mark.parametrize("line,name", CASES)
def test_the_broker_restart_dispatched(restarted, line: str, name: str) -> None:
    """What the broker's restart wrote: units up to DLedger's log end in every case (the entries past the committed
    position are committed once the node leads, and the reput goes on to them), the checkpoint key at the end of the
    last one; from the first record (at 48, behind the first entry's header) with ``recheckReputOffsetFromCq`` or
    after a crash (the walk from the first data file: the empty database's 0 matches no file), only the entries
    past the committed position after a clean restart without it; after a crash the walk's last indexed record
    indexed again (its keys twice) where the reput reaches it."""
    sc, d = restarted["scenario"], Path(restarted["scenario"]["dir"])
    committed, end = _committed_pos(d / "before"), _log_end(d / "before")
    assert (committed < end) == ("dledgerCommittedBack" in sc), (committed, end)
    assert (d / "before" / "abort").is_file() == bool(sc.get("abort"))
    broker = database(d / "expected" / "consumequeue")
    units = _units(broker["default"])
    assert units and units[-1][0] + units[-1][1] == end == _checkpoint(broker["offset"]), (units[-1], end)
    if name.endswith("-restart-back-norecheck"):
        assert units[0][0] >= committed, (units[0], committed)
    else:
        assert units[0][0] == 48, units[0]
    if "crash" in name:
        assert _index_holds_a_key_twice(d / "expected" / "index", int(sc["config"]["maxHashSlotNum"]))


@pytest.mark.parametrize("line,name", CASES)
def test_as_restart_gives_the_broker_s_key_value_set(restarted, line: str, name: str) -> None:
    """Both column families: exactly the keys and values of the database the broker's restart wrote."""
    err = as_restart_database_is_the_broker_s(restarted)
    said = "dledgerRecoverAbnormally walks every data file" if "crash" in name else "dledgerRecoverNormally"
    assert said in err, err[-2000:]


@pytest.mark.parametrize("line,name", CASES)
def test_as_restart_index_files_are_the_broker_s(restarted, line: str, name: str) -> None:
    """``index/``: the broker's restart's files, byte for byte, file by file in order."""
    as_restart_index_is_the_broker_s(restarted)


@pytest.mark.parametrize("line,name", CRASH[:1])
def test_a_crash_walk_ending_at_a_damaged_message_before_another_is_refused(restarted, tmp_path, line: str,
                                                                            name: str) -> None:
    """The crash store with a committed message's body CRC field changed (DLedger's recovery reads no CRC, so it
    keeps the log; ``dledgerRecoverAbnormally``'s check ends its walk there, at its entry's start: modelled, see
    tests/test_rocksdb_dledger_restart_more_broker.py) and the magic code of a later message changed too, below
    DLedger's committed position in its data file, restarted with ``recheckReputOffsetFromCq=true``: the start's
    reput from the min offset reads it and its own check (no CRC) refuses it, and whether ``getData``'s buffer ends
    at the committed position or further is thread timing (past the committed position, or where the reput goes on
    at the next data file, modelled: tests/test_rocksdb_dledger_restart_damaged_broker.py): one line, exit 2."""
    d = Path(restarted["scenario"]["dir"])
    store = tmp_path / "store"
    shutil.copytree(d / "before", store)
    units = _units(database(d / "expected" / "consumequeue")["default"])
    size = int(restarted["scenario"]["config"]["mappedFileSizeCommitLog"])
    committed = _committed_pos(d / "before")
    phy, later = units[len(units) // 2][0], units[-BACK - 2][0]
    assert phy < later < committed and later // size == committed // size, (phy, later, committed)
    for at, field in ((phy, 8), (later, 4)):   # the body CRC field (after totalSize and the magic code); the magic
        data = store / "dledger-n0" / "data" / f"{at - at % size:020d}"
        raw = bytearray(data.read_bytes())
        raw[at % size + field] ^= 0xFF
        data.write_bytes(bytes(raw))
    conf = tmp_path / "broker.conf"
    conf.write_text((d / "broker.conf").read_text() + "\nrecheckReputOffsetFromCq=true\n")
    code, _, err = bh.cli(["rebuild", "--store", str(store), "--out", str(tmp_path / "o"), "--as-restart",
                           "--config", str(conf), "--broker-version", BROKER_LINE[line], "--no-tables"])
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert code == 2 and len(lines) == 1, err[-1500:]
    assert "storeType=defaultRocksDB" in lines[0] and f"walk ends at {phy - 48} " in lines[0] \
        and f"own check (no CRC) ends at {later - 48}, below DLedger's committed position" in lines[0], lines[0]


def _parsed(db: Path):  # noqa: ANN202
    from pipelines.verify.rocksdb_compare import read_store_database
    from store_format.rocksdb_recovery import parse_database
    return parse_database(read_store_database(str(db)))


def _pair(e) -> tuple[int, int] | None:  # noqa: ANN001
    return None if e is None else (int(e[0]), int(e[1]))


@pytest.mark.parametrize("line,name", KEPT or [pytest.param("", "", marks=pytest.mark.skip(
    reason="-restart-kept: PIPELINES_FULL_SUITE=1 (by default "
           "test_rocksdb_dledger_verify_more_broker's -restart-back-kept)"))])
def test_verify_predicts_the_clean_restart_over_the_database_kept(restarted, line: str, name: str) -> None:
    """The broker restarted after a clean shutdown on its own database (``keepQueues``): ``dledgerRecoverNormally``
    dispatches nothing, ``truncateDirty`` at the log's end (the checkpoint is there) changes nothing, and the start's
    reput from the min offset (``recheckReputOffsetFromCq``) puts every unit again (from the committed position, the
    log's end, without it: nothing).  ``verify`` on the store as that restart found it predicts, queue by queue, the
    "max" and "min" entries the broker left, the units above the max, the checkpoint, which queues keep their
    entries, and how many index keys the start puts again (the last indexed record's, with the reput)."""
    d = Path(restarted["scenario"]["dir"])
    v = restarted["verify"]
    assert v["report"] is not None, v["stderr"]
    p = v["report"]["restart"]
    assert p is not None and p["rocksdb"], v["report"].get("restart_note")
    before, cp_before = _parsed(d / "before" / "consumequeue")
    after, cp_after = _parsed(d / "expected" / "consumequeue")
    end = _log_end(d / "before")
    assert not (d / "before" / "abort").exists() and cp_before == end   # the case: a clean shutdown, all dispatched
    assert p["recovery_cut"] == p["commitlog_end"] == end
    assert p["rocksdb_checkpoint_before"] == cp_before and p["rocksdb_checkpoint_after"] == cp_after
    assert not p["truncate_dirty_logic_files"] and p["units_lost"] == p["units_truncated"] == 0
    recheck = restarted["scenario"]["config"].get("recheckReputOffsetFromCq") == "true"
    assert (p["second_reput_from"] is not None) == recheck
    grown = _index_count(d / "expected" / "index") - _index_count(d / "before" / "index")
    assert grown == p["index_keys_put_again"], f"the broker's index gained {grown} key(s), verify says " \
                                               f"{p['index_keys_put_again']}"
    assert (grown > 0) == recheck   # the last indexed record's keys, a second time
    listed = {q["queue"]: q for q in p["queues"]}
    assert set(listed) <= set(before) | set(after)
    for queue in sorted(set(before) | set(after)):
        b, a = before.get(queue), after.get(queue)
        got = (_pair(a.max), _pair(a.min)) if a is not None else (None, None)
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


@pytest.mark.parametrize("line,name", KEPT_CRASH)
def test_verify_refuses_the_crash_restart_over_the_database_kept(restarted, line: str, name: str) -> None:
    """After a crash over the database kept (its checkpoint at the log's end, so at or past the walk's processOffset,
    which leaves out the last file's entry headers: ``truncateDirty`` is reached while the walk's dispatch lands
    through ``RocksGroupCommitService``), ``verify`` gives no prediction: one line in its report."""
    d = Path(restarted["scenario"]["dir"])
    v = restarted["verify"]
    assert v["report"] is not None, v["stderr"]
    _, cp_before = _parsed(d / "before" / "consumequeue")
    assert (d / "before" / "abort").is_file() and cp_before == _log_end(d / "before")
    assert v["report"]["restart"] is None and "after a crash (abort file) over the database kept" in \
        v["report"]["restart_note"], v["report"]["restart_note"]


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

"""``rebuild --as-restart`` on RocksDB consume queue stores (5.x ``storeType=defaultRocksDB``), checked
against the broker's own restart.

The JVM harness (:mod:`broker_harness`, ``tests/broker/``) writes each RocksDB scenario of
:mod:`broker_rocksdb_scenarios` with the published RocketMQ store, flips a body byte of the record six
puts before the end (``damageMessage``), leaves an ``abort`` file in the ``-crash`` variants, keeps that
store in ``<dir>/before/`` and restarts the broker on it with ``consumequeue/`` (the database) and
``index/`` deleted.  Its recovery cuts the commitlog at the damaged record and dispatches from the
segment at offset 0 (the empty database's max physical offset is 0): a normal recovery only records
above offset 0, an abnormal one every record, offset 0 included (:mod:`store_format.recovery`).
``rebuild --as-restart`` on ``<dir>/before/`` must give the broker's key/value set, both column families
entry for entry, and its ``index/`` files byte for byte.

5.5.1 by default; ``ROCKSDB_LINES=5.3.3,5.5.1`` (as for :mod:`test_rocksdb_cq_broker`) adds 5.3.3.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from broker_rocksdb_runs import (
    as_restart_database_is_the_broker_s,
    as_restart_index_is_the_broker_s,
    database,
)
from broker_rocksdb_scenarios import rocksdb_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
pytest.importorskip("rocksdict")

LINES = bh.lines_from_env("ROCKSDB_LINES", "5.5.1")
BROKER_LINE = bh.BROKER_VERSION_ARG


def _recheck(sc: dict) -> list[dict]:
    """``sc`` ending in a keyed message, restarted with ``recheckReputOffsetFromCq=true`` (no damage) after a
    clean shutdown (``-recheck``, ``<dir>/before`` kept) and after a crash (``-recheck-crash``): the start's
    second reput walks from the commitlog's min offset again."""
    last = {"topic": "T0", "queueId": 1, "body": "dGFpbA==", "keys": "the-last-key",
            "uniqKey": "7F00000100002A9F00000000FFFFFFFE"}
    tail = {**sc, "name": f"{sc['name']}-recheck", "messages": [*sc["messages"], last], "keepBefore": True,
            "config": {**sc["config"], "recheckReputOffsetFromCq": "true"}}
    return [tail, {**tail, "name": f"{tail['name']}-crash", "abort": True}]


RECHECK = {line: _recheck(rocksdb_scenarios(line)[-1]) for line in LINES}   # the -lmq store: light queues too
# with PIPELINES_FULL_SUITE=1 only: the plain store's restarts (mixed and lmq hold its kinds of records too)
# and the mixed store's clean restart (the lmq store's covers that recovery)
SCENARIOS = {line: bh.bounded(bh.restart_variants(rocksdb_scenarios(line), ("-plain", "-mixed", "-lmq")),
                              ("-rocksdb-plain-restart", "-rocksdb-plain-crash", "-rocksdb-mixed-restart"))
                   + RECHECK[line]
             for line in LINES}
CASES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs
         if "damageMessage" in sc]
ALL_CASES = CASES + [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in RECHECK.items() for sc in scs]
_RUNS: dict[str, dict] = {}
# one store at a time in each JVM: RocksDB stores written in threads crashed the JVM
STORES = bh.Stores(SCENARIOS, "RocksDB store(s), each restarted", threads=1)


@pytest.fixture
def restarted(request) -> dict:
    """The scenario as the broker wrote and restarted it, and our ``--as-restart`` rebuild of it (every
    scenario written, and rebuilt, once)."""
    return bh.written_once(request, _RUNS, STORES, then=lambda r: r.update(
        rebuild=bh.rebuild_as_restart(Path(r["scenario"]["dir"]), BROKER_LINE[r["line"]])))


def _units_at_offset_zero(default: dict[bytes, bytes]) -> int:
    """Units of the default family whose commitlog offset (the value's first 8 bytes) is 0."""
    return sum(1 for v in default.values() if int.from_bytes(v[:8], "big") == 0)


@pytest.mark.parametrize("line,name", CASES)
def test_the_broker_cut_at_the_damaged_record(restarted, line: str, name: str) -> None:
    """The harness itself (:func:`broker_harness.check_cut_at_damaged_record`)."""
    bh.check_cut_at_damaged_record(restarted)


@pytest.mark.parametrize("line,name", CASES)
def test_only_the_abnormal_recovery_dispatches_offset_zero(restarted, line: str, name: str) -> None:
    """The broker's own database: the record at commitlog offset 0 has a unit after a crash (the abnormal
    recovery dispatches every record it accepts: its own unit, and light queue units in ``-lmq``) and
    none after a clean shutdown (the normal recovery dispatches only records above the empty database's
    max physical offset, 0)."""
    broker = database(Path(restarted["scenario"]["dir"]) / "expected" / "consumequeue")
    assert broker.get("default"), "the broker's restart wrote no unit"
    at_zero = _units_at_offset_zero(broker["default"])
    assert (at_zero > 0) == bool(restarted["scenario"].get("abort")), f"{at_zero} unit(s) at commitlog offset 0"


@pytest.mark.parametrize("line,name", ALL_CASES)
def test_as_restart_gives_the_broker_s_key_value_set(restarted, line: str, name: str) -> None:
    """Both column families: exactly the keys and values of the database the broker's restart wrote."""
    as_restart_database_is_the_broker_s(restarted)


@pytest.mark.parametrize("line,name", ALL_CASES)
def test_as_restart_index_files_are_the_broker_s(restarted, line: str, name: str) -> None:
    """``index/``: the broker's restart's files, byte for byte, file by file in order (a file's name is the
    broker's clock when it made it)."""
    as_restart_index_is_the_broker_s(restarted)


@pytest.mark.parametrize("line,name", ALL_CASES[len(CASES):])
def test_recheck_reput_dispatches_offset_zero(restarted, line: str, name: str) -> None:
    """The broker's own database after a restart with ``recheckReputOffsetFromCq=true``: the record at
    commitlog offset 0 has units after the clean shutdown too (the second reput started at the commitlog's
    min offset: a RocksDB store's queue table is empty after a restart)."""
    broker = database(Path(restarted["scenario"]["dir"]) / "expected" / "consumequeue")
    assert _units_at_offset_zero(broker["default"]) > 0

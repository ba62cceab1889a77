"""``verify`` on a 5.5.1 RocksDB consume queue store (``enableAcceleratedRecovery=true``, ``enableLmq``) whose kept
database's max-physical-offset checkpoint lies at a NORMAL message planted in the last record's body whose
multi-dispatch request names an EMPTY queue first (``INNER_MULTI_DISPATCH`` ``",%LMQ%w9"`` at ``"3,7"``): the
recovery's walk accepts it, and ``RocksDBConsumeQueueStore.dispatchLMQ`` puts its own unit, a unit of topic "" under
its own queue id (0) at 3 (no ``MixAll.isLmq`` name) and :data:`LIGHT`/0 at 7, as for a rebuild
(tests/test_rocksdb_light_empty_broker.py).  The planted bytes carry the request as a client could write it (the
put path with ``enableLmq`` would give the empty name an empty offset).  The plant and the restart are those of
tests/test_restart_accelerated_rocksdb_light_broker.py.  With the full suite only (``PIPELINES_FULL_SUITE=1``).

First what the broker did, then ``verify``'s prediction of that restart.
"""
from __future__ import annotations

import base64
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_2gib import embedded_message
from broker_layout_scenarios import Messages
from test_restart_accelerated_planted_broker import ADD, HOST, HOST_BODY, PHYSICAL_OFFSET_AT
from test_restart_accelerated_rocksdb_light_broker import (
    KEY,
    LIGHT,
    PLANTED_QUEUE_OFFSET,
    light_props,
    planted_light,
)
from test_restart_reput_before_recovery_more_broker import INDEX, SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()
pytest.importorskip("rocksdict")

EMPTY_AT, LIGHT_AT = 3, 7     # the queue offsets of the empty name's unit and of LIGHT's
PROPS = f"KEYS\x01{KEY}\x02".encode() + light_props(f",{LIGHT}", f"{EMPTY_AT},{LIGHT_AT}")


def _scenarios() -> dict[str, list[dict]]:
    conf = {"storeType": "defaultRocksDB", "mappedFileSizeCommitLog": str(SIZE), "recheckReputOffsetFromCq": "true",
            "enableAcceleratedRecovery": "true", "enableMultiDispatch": "true", "enableLmq": "true", **INDEX}
    p = Messages(212, ["T0", "T1", "T2"])
    host = {"topic": "T0", "queueId": 0, "body": base64.b64encode(b"h" * HOST_BODY).decode()}
    return {"5.5.1": [{"name": "5.5.1-rocksdb-accel-kept-planted-light-empty-crash", "abort": True,
                       "keepBefore": True, "keepQueues": True, "messages": [*(p.one() for _ in range(HOST)), host],
                       "config": conf,
                       "plantBytes": {"put": HOST, "add": ADD, "offsetFieldAt": PHYSICAL_OFFSET_AT,
                                      "bytes": base64.b64encode(planted_light(PROPS)).decode()},
                       "rocksdbCqCheckpoint": {"put": HOST, "add": ADD}}]}


SCENARIOS = {line: kept for line, scs in _scenarios().items() if (kept := bh.bounded(scs, ("-crash",)))}
NAMES = bh.params_or_skip([pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs],
                          "full suite only: PIPELINES_FULL_SUITE=1")
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "RocksDB store(s) restarted after a crash, an empty light name planted", threads=1)


@pytest.fixture
def runs(request) -> dict[str, dict]:
    """Every scenario as the broker wrote and restarted it, and our ``verify`` of ``<dir>/before`` (once)."""
    return bh.written_once(request, _RUNS, STORES, every=True, then=bh.restart_checked)


@pytest.mark.parametrize("name", NAMES)
def test_the_walk_put_a_unit_of_topic_empty(runs, name: str) -> None:
    """The broker's own files: the walk accepted the planted messages (the commitlog kept to the host's end) and the
    restart added exactly three units, all the planted message's value: its own T0/0 at
    :data:`PLANTED_QUEUE_OFFSET`, topic "" queue 0 at :data:`EMPTY_AT` and :data:`LIGHT`/0 at :data:`LIGHT_AT`;
    the offset family's max of ("", 0) is that unit."""
    from broker_rocksdb_runs import added_units, database

    from store_format.rocksdb_cq import OFFSET_VALUE, cq_key, cq_value, offset_key
    r = runs[name]
    d, w = Path(r["scenario"]["dir"]), r["written"]
    assert w.get("ok"), w.get("error")
    assert w["plantedAt"] == w["rocksdbCqCheckpoint"], w
    host = w["plantedAt"] - ADD
    value = cq_value(host, len(embedded_message(0, body=b"light!", props=PROPS, topic=b"T0")), 0,
                     1_700_000_000_001)
    assert added_units(d) == {cq_key("T0", 0, PLANTED_QUEUE_OFFSET): value, cq_key("", 0, EMPTY_AT): value,
                         cq_key(LIGHT, 0, LIGHT_AT): value}
    offsets = database(d / "expected" / "consumequeue")["offset"]
    assert OFFSET_VALUE.unpack(offsets[offset_key("", 0)]) == (host, EMPTY_AT)


@pytest.mark.parametrize("name", NAMES)
def test_verify_predicts_the_empty_name_s_queue(runs, name: str) -> None:
    """``verify`` on ``<dir>/before`` (the database kept): queue by queue the broker's restart's max and min entries
    (:func:`broker_rocksdb_runs.kept_database_as_predicted`), queue "/0" (topic "", queue 0) a new one whose max is
    the planted message's unit at :data:`EMPTY_AT`."""
    from broker_rocksdb_runs import kept_database_as_predicted
    r = runs[name]
    _p, listed = kept_database_as_predicted(r)
    assert listed["/0"]["max_entry_after"] == [r["written"]["plantedAt"] - ADD, EMPTY_AT], listed.get("/0")
    assert listed[f"{LIGHT}/0"]["max_entry_after"][1] == LIGHT_AT, listed.get(f"{LIGHT}/0")


@pytest.mark.parametrize("name", NAMES)
def test_the_walk_s_units_are_the_broker_s_new_keys_and_values(runs, name: str) -> None:
    """The units ``verify`` puts for the walk (:func:`store_format.restart_reput.walk_units` from the planted message
    to the cut): exactly the keys and values the broker's restart added, the empty name's among them."""
    from broker_rocksdb_runs import added_units, walked_units_as_entries
    r = runs[name]
    ours = walked_units_as_entries(r)
    assert ours == added_units(Path(r["scenario"]["dir"])), ours

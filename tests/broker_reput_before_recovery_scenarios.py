"""Stores whose restart's second reput (``recheckReputOffsetFromCq=true``) starts before the first record the
recovery dispatched, for the broker harness (:mod:`broker_harness`); 4 KiB commitlog files, more than
``commitLogRecoverMaxNum`` (10), so that the 5.5.1 recovery, which walks back at most that many, starts above the
commitlog's min offset.

* ``rocksdb``: the RocksDB ``plain`` store (:mod:`broker_rocksdb_scenarios`) ending in a keyed message: the empty
  database's max physical offset 0 matches no file the recovery looks at;
* ``prepared``: consume queue files; 20 single messages, then 70 prepared transaction messages (indexed, no
  consume queue unit) filling the last ten files and more: the recovery queues nothing, so the start's reput
  begins at the min offset.
"""
from __future__ import annotations

from broker_layout_scenarios import Messages
from broker_rocksdb_scenarios import rocksdb_scenarios

RECOVER_MAX_NUM = 10   # MessageStoreConfig.commitLogRecoverMaxNum's default (5.5.1)


def reput_before_recovery_scenarios(line: str) -> list[dict]:
    """Each store restarted (queues and index deleted) after a clean shutdown and after a crash (``-crash``),
    ``<dir>/before`` kept."""
    sc = rocksdb_scenarios(line)[0]   # plain: 70 messages over 4 topics, 4 queues
    assert sc["name"].endswith("-plain")
    last = {"topic": "T0", "queueId": 1, "body": "dGFpbA==", "keys": "the-last-key",
            "uniqKey": "7F00000100002A9F00000000FFFFFFFE"}
    rocks = {**sc, "name": f"{sc['name']}-recheck-before", "messages": [*sc["messages"], last], "keepBefore": True,
             "config": {**sc["config"], "recheckReputOffsetFromCq": "true", "mappedFileSizeCommitLog": "4096"}}
    g = Messages(91, ["T0", "T1", "T2"])
    files = {"name": f"{line}-files-prepared-recheck-before", "keepBefore": True,
             "messages": [g.one() for _ in range(20)] + [g.one(tranType="prepared") for _ in range(70)],
             "config": {"recheckReputOffsetFromCq": "true", "mappedFileSizeCommitLog": "4096",
                        "maxHashSlotNum": "101", "maxIndexNum": "400"}}
    return [s for one in (rocks, files) for s in (one, {**one, "name": f"{one['name']}-crash", "abort": True})]

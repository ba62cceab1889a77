"""RocksDB consume queue scenarios (5.x ``storeType=defaultRocksDB``) with the settings whose
combination with it was once refused, for the broker harness (:mod:`broker_harness`); fixed, the same
on every run:

* ``<line>-rocksdb-cqext``: ``enableConsumeQueueExt=true`` too (no RocksDB consume queue class reads it;
  only ``ConsumeQueue`` makes ``ConsumeQueueExt`` files, and the RocksDB store makes no ``ConsumeQueue``);
* ``<line>-rocksdb-batchcq``: BatchCQ topics in ``config/topics.json`` (inner batches, outer batches,
  single messages, transactions, delays: :mod:`broker_batchcq_scenarios`' mix), whose queues
  ``RocksDBConsumeQueueStore`` keeps like any other;
* ``<line>-rocksdb-dledger-plain`` / ``-mixed``: a DLedger commitlog (``enableDLegerCommitLog=true``,
  :mod:`broker_dledger_scenarios`' settings and messages).
"""
from __future__ import annotations

import broker_batchcq_scenarios as bcq
import broker_dledger_scenarios as dl
from broker_rocksdb_scenarios import config as rocksdb_config
from broker_rocksdb_scenarios import rocksdb_scenarios


def rocksdb_layout_scenarios(line: str) -> list[dict]:
    """The scenarios of 5.x broker line ``line``."""
    plain = rocksdb_scenarios(line)[0]
    out = [{**plain, "name": f"{line}-rocksdb-cqext",
            "config": {**plain["config"], "enableConsumeQueueExt": "true"}}]
    b = bcq.batchcq_scenarios(line)[0]
    out.append({**b, "name": f"{line}-rocksdb-batchcq", "config": {**b["config"], "storeType": "defaultRocksDB"}})
    for sc in dl.dledger_scenarios(line)[:2]:
        what = sc["name"].rsplit("-", 1)[1]
        out.append({**sc, "name": f"{line}-rocksdb-dledger-{what}",
                    "config": {**sc["config"], "storeType": rocksdb_config()["storeType"]}})
    return out

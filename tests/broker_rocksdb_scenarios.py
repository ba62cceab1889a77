"""RocksDB consume queue scenarios for the broker harness (:mod:`broker_harness`): small 5.x stores
written with ``storeType=defaultRocksDB``, fixed rather than drawn, the same on every run; the broker
rebuilds ``consumequeue/`` as a RocksDB database (``RocksDBConsumeQueueStore``).

* ``plain``: single messages over 3 topics and 4 queues, most with tags, some without (tagsCode 0),
  a long topic (V2 record, over 127 bytes of UTF-8 in the key).
* ``mixed``: batches, delayed messages (tagsCode = delivery time), prepared/committed/rolled back
  transactions (no unit for prepared and rolled back ones), commitlog segments of 32 KiB.
* ``lmq``: ``enableMultiDispatch``/``enableLmq`` with ``INNER_MULTI_DISPATCH``: units of light
  queues (``%LMQ%...``, queue 0) beside the records' own.
"""
from __future__ import annotations

from broker_layout_scenarios import layout_scenarios

TOPICS = ["T0", "T1", "%RETRY%cg1", "LongTopic-" + "x" * 190]


def config() -> dict[str, str]:
    return {
        "storeType": "defaultRocksDB",
        "mappedFileSizeCommitLog": str(32 * 1024),
        "maxHashSlotNum": "101",
        "maxIndexNum": "400",
    }


def rocksdb_scenarios(line: str) -> list[dict]:
    """The RocksDB consume queue scenarios of 5.x broker line ``line`` (``<line>-rocksdb-<what>``)."""
    return layout_scenarios(line, "rocksdb", 21, TOPICS, {what: config() for what in ("plain", "mixed", "lmq")},
                            batch_topics=TOPICS[:3])

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

import base64
import random

from broker_scenarios import KEYS, TAGS

TOPICS = ["T0", "T1", "%RETRY%cg1", "LongTopic-" + "x" * 190]


def config() -> dict[str, str]:
    return {
        "storeType": "defaultRocksDB",
        "mappedFileSizeCommitLog": str(32 * 1024),
        "maxHashSlotNum": "101",
        "maxIndexNum": "400",
    }


class Messages:
    """Messages drawn from a fixed seed."""

    def __init__(self, seed: int, queues: int = 4) -> None:
        self.rng = random.Random(seed)
        self.queues = queues
        self.n = 0

    def one(self, **extra) -> dict:
        self.n += 1
        m = {"topic": self.rng.choice(TOPICS), "queueId": self.rng.randint(0, self.queues - 1),
             "body": base64.b64encode(self.rng.randbytes(self.rng.randint(50, 900))).decode(),
             "uniqKey": f"7F00000100002A9F0000{self.n:012X}"}
        if self.rng.random() < 0.5:
            m["keys"] = self.rng.choice(KEYS[:4])
        if self.rng.random() < 0.8:
            m["tags"] = self.rng.choice(TAGS)
        m.update(extra)
        return m

    def batch(self, size: int) -> dict:
        parts = []
        for _ in range(size):
            self.n += 1
            part = {"body": base64.b64encode(self.rng.randbytes(300)).decode(),
                    "uniqKey": f"7F00000100002A9F0000{self.n:012X}"}
            if self.rng.random() < 0.6:
                part["tags"] = self.rng.choice(TAGS)
            parts.append(part)
        return {"topic": self.rng.choice(TOPICS[:3]), "queueId": self.rng.randint(0, 3), "batch": parts}


def rocksdb_scenarios(line: str) -> list[dict]:
    """The RocksDB consume queue scenarios of 5.x broker line ``line`` (``<line>-rocksdb-<what>``)."""
    scenarios: dict[str, dict] = {}
    g = Messages(21)
    scenarios["plain"] = {"config": config(), "messages": [g.one() for _ in range(70)]}

    g = Messages(22)
    mixed = []
    for i in range(45):
        kind = i % 5
        if kind == 0:
            mixed.append(g.batch(g.rng.randint(2, 4)))
        elif kind == 1:
            mixed.append(g.one(delayLevel=g.rng.randint(1, 8)))
        elif kind == 2:
            mixed.append(g.one(tranType=g.rng.choice(["prepared", "commit", "rollback"])))
        else:
            mixed.append(g.one())
    scenarios["mixed"] = {"config": {**config(), "messageDelayLevel": "1s 5s 10s 30s 1m"}, "messages": mixed}

    g = Messages(23, queues=2)
    lmq = []
    for i in range(60):
        extra = {}
        if i % 2 == 0:
            queues = g.rng.sample(["%LMQ%q1", "%LMQ%q2", "%LMQ%q3"], g.rng.randint(1, 2))
            extra["properties"] = {"INNER_MULTI_DISPATCH": ",".join(queues)}
        lmq.append(g.one(**extra))
    scenarios["lmq"] = {"config": {**config(), "enableMultiDispatch": "true", "enableLmq": "true"},
                        "messages": lmq}
    return [{**sc, "name": f"{line}-rocksdb-{what}"} for what, sc in scenarios.items()]

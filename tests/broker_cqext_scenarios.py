"""ConsumeQueueExt scenarios for the broker harness (:mod:`broker_harness`): small stores written with
``enableConsumeQueueExt=true`` (no filter bitmap), fixed rather than drawn, the same on every run.

Ext files are made tiny (``mappedFileSizeConsumeQueueExt``), so that each queue's ext units span
several files and each full file ends with the end marker: 104 bytes hold exactly 5 units and the
4 bytes kept free, 110 bytes 5 units and 10 bytes left. Consume queue files hold 6 units, commitlog
segments 32 KiB.

* ``plain``: single messages over 3 topics and 4 queues, most with tags (the ext unit keeps the tag's
  hash), some without (tagsCode 0), a long topic (V2 record) on 5.x.
* ``mixed``: batches, delayed messages (the ext unit keeps the delivery time the reput computes),
  prepared/committed/rolled back transactions (no consume queue unit, so no ext unit, for prepared
  and rolled back ones).
* ``lmq``: ``enableMultiDispatch``/``enableLmq`` with ``INNER_MULTI_DISPATCH``: the light queues'
  units keep the plain tagsCode and put no ext unit (queues 0 and 1 only, so that own queues still
  fill several ext files).
"""
from __future__ import annotations

import base64
import random

from broker_scenarios import KEYS, TAGS


def config(ext_file_size: int) -> dict[str, str]:
    return {
        "mappedFileSizeCommitLog": str(32 * 1024),
        "mappedFileSizeConsumeQueue": "120",   # 6 units a file
        "maxHashSlotNum": "101",
        "maxIndexNum": "400",
        "enableConsumeQueueExt": "true",
        "mappedFileSizeConsumeQueueExt": str(ext_file_size),
    }


class _Messages:
    def __init__(self, seed: int, topics: list[str], queues: int = 4) -> None:
        self.rng = random.Random(seed)
        self.topics = topics
        self.queues = queues
        self.n = 0

    def one(self, **extra) -> dict:
        self.n += 1
        m = {"topic": self.rng.choice(self.topics), "queueId": self.rng.randint(0, self.queues - 1),
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
        return {"topic": self.rng.choice(self.topics), "queueId": self.rng.randint(0, 3), "batch": parts}


def cqext_scenarios(line: str) -> list[dict]:
    """The ConsumeQueueExt scenarios of broker line ``line`` (named ``<line>-cqext-<what>``)."""
    topics = ["T0", "T1", "%RETRY%cg1"]
    if not line.startswith("4"):
        topics.append("LongTopic-" + "x" * 190)
    scenarios: dict[str, dict] = {}

    g = _Messages(11, topics)
    scenarios["plain"] = {"config": config(104), "messages": [g.one() for _ in range(70)]}

    g = _Messages(12, topics)
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
    scenarios["mixed"] = {"config": {**config(110), "messageDelayLevel": "1s 5s 10s 30s 1m"}, "messages": mixed}

    g = _Messages(13, topics, queues=2)
    lmq = []
    for i in range(60):
        extra = {}
        if i % 2 == 0:
            queues = g.rng.sample(["%LMQ%q1", "%LMQ%q2", "%LMQ%q3"], g.rng.randint(1, 2))
            extra["properties"] = {"INNER_MULTI_DISPATCH": ",".join(queues)}
        lmq.append(g.one(**extra))
    scenarios["lmq"] = {"config": {**config(104), "enableMultiDispatch": "true", "enableLmq": "true"},
                        "messages": lmq}
    return [{**sc, "name": f"{line}-cqext-{what}"} for what, sc in scenarios.items()]

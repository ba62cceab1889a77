"""The three fixed scenarios each store-layout test of the broker harness writes (``plain``, ``mixed``,
``lmq``), with the layout's own settings: the same messages on every run.

* ``plain``: single messages over the topics and 4 queues, most with tags, some without (tagsCode 0);
* ``mixed``: batches, delayed messages (tagsCode = delivery time), prepared/committed/rolled back
  transactions (no unit for prepared and rolled back ones);
* ``lmq``: ``enableMultiDispatch``/``enableLmq`` with ``INNER_MULTI_DISPATCH``: units of light queues
  (``%LMQ%...``, queue 0) beside the records' own, over queues 0 and 1 only.
"""
from __future__ import annotations

import base64
import random

from broker_scenarios import KEYS, TAGS


class Messages:
    """Messages drawn from a fixed seed over ``topics`` (batches over ``batch_topics``, default all)."""

    def __init__(self, seed: int, topics: list[str], queues: int = 4, batch_topics: list[str] | None = None) -> None:
        self.rng = random.Random(seed)
        self.topics, self.queues = topics, queues
        self.batch_topics = batch_topics or topics
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
        return {"topic": self.rng.choice(self.batch_topics), "queueId": self.rng.randint(0, 3), "batch": parts}


def layout_scenarios(line: str, layout: str, seed: int, topics: list[str], configs: dict[str, dict[str, str]],
                     batch_topics: list[str] | None = None) -> list[dict]:
    """``plain``, ``mixed`` and ``lmq`` with ``configs[what]`` each, named ``<line>-<layout>-<what>``;
    ``seed``, ``seed + 1``, ``seed + 2`` draw their messages."""
    scenarios: dict[str, dict] = {}
    g = Messages(seed, topics, batch_topics=batch_topics)
    scenarios["plain"] = {"config": configs["plain"], "messages": [g.one() for _ in range(70)]}

    g = Messages(seed + 1, topics, batch_topics=batch_topics)
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
    scenarios["mixed"] = {"config": {**configs["mixed"], "messageDelayLevel": "1s 5s 10s 30s 1m"}, "messages": mixed}

    g = Messages(seed + 2, topics, queues=2, batch_topics=batch_topics)
    lmq = []
    for i in range(60):
        extra = {}
        if i % 2 == 0:
            queues = g.rng.sample(["%LMQ%q1", "%LMQ%q2", "%LMQ%q3"], g.rng.randint(1, 2))
            extra["properties"] = {"INNER_MULTI_DISPATCH": ",".join(queues)}
        lmq.append(g.one(**extra))
    scenarios["lmq"] = {"config": {**configs["lmq"], "enableMultiDispatch": "true", "enableLmq": "true"},
                        "messages": lmq}
    return [{**sc, "name": f"{line}-{layout}-{what}"} for what, sc in scenarios.items()]

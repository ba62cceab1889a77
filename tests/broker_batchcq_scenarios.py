"""Scenarios for the broker harness with BatchCQ topics (5.x): topics whose ``config/topics.json``
attribute ``queue.type`` is ``BatchCQ``, whose queues the broker keeps in ``batchconsumequeue/``
(``BatchConsumeQueue``, 46-byte units) instead of ``consumequeue/``.

A scenario's ``batchTopics`` names them (see :mod:`broker_harness` and the Java ``Writer``). A
``batch`` object for such a topic that carries a ``uniqKey`` (the batch's own unique id: a producer
always sets one, ``DefaultMQProducer.batch``) is stored as ONE inner-batch record, as
``SendMessageProcessor.sendBatchMessage`` stores it (sysFlag INNER_BATCH and NEED_UNWRAP, properties
INNER_NUM and, from the store, INNER_BASE): one unit whose batch size is the number of messages. A
batch without one is put with ``putMessages`` (a record and a unit of batch size 1 per message), and
so is every single message. Prepared/rollback transaction records get no unit; a delayed message
goes to SCHEDULE_TOPIC_XXXX (an ordinary queue).

:func:`expected_units` says, from a scenario alone, the units the broker's rebuild must write into
each BatchCQ queue: (base offset, batch size, tags code) in queue order.
"""
from __future__ import annotations

import base64
import random

BATCH_TOPICS = ["BT0", "BT1"]
UNIT_SIZE = 46   # BatchConsumeQueue.CQ_STORE_UNIT_SIZE


def java_hash(s: str) -> int:
    """String.hashCode (UTF-16 code units), as a signed int: the tags code of a SINGLE_TAG topic."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _body(rng: random.Random, size: int) -> str:
    return base64.b64encode(rng.randbytes(size)).decode()


def _scenario(line: str, name: str, seed: int, count: int, unit_files: int, commitlog_size: int) -> dict:
    rng = random.Random(seed)
    msgs: list[dict] = []
    for n in range(count):
        kind = rng.choice(["inner"] * 5 + ["plain"] * 3 + ["outer", "tran", "delay", "other"])
        topic = "T0" if kind == "other" else rng.choice(BATCH_TOPICS)
        qid = rng.randrange(2)
        uniq = f"7F00000100002A9F0000{n:06X}000000"
        if kind in ("inner", "outer"):
            parts = []
            for i in range(rng.randint(2, 6)):
                m = {"body": _body(rng, rng.choice([0, 5, 60, 300])),
                     "uniqKey": f"7F00000100002A9F0000{n:06X}{i + 1:06X}"}
                if rng.random() < 0.5:
                    m["keys"] = f"inner-{n}-{i}"   # inside the body: the index never sees it
                if rng.random() < 0.5:
                    m["tags"] = rng.choice(["TagA", "TagB"])
                parts.append(m)
            msg: dict = {"topic": topic, "queueId": qid, "batch": parts, "properties": {"WAIT": "true"}}
            if kind == "inner":
                msg["uniqKey"] = uniq
        else:
            msg = {"topic": topic, "queueId": qid, "body": _body(rng, rng.choice([1, 40, 500])), "uniqKey": uniq}
            if rng.random() < 0.6:
                msg["tags"] = rng.choice(["TagA", "TagB", "TagC"])
            if rng.random() < 0.5:
                msg["keys"] = f"key-{n}"
            if kind == "tran":
                msg["tranType"] = rng.choice(["prepared", "commit", "rollback"])
            elif kind == "delay":
                msg["delayLevel"] = rng.randint(1, 3)
        msgs.append(msg)
    config = {
        "mappedFileSizeCommitLog": str(commitlog_size),
        "mappedFileSizeConsumeQueue": "600",
        # a multiple of the unit: the broker fills a file exactly, then creates the next one
        "mapperFileSizeBatchConsumeQueue": str(unit_files * UNIT_SIZE),
        "maxHashSlotNum": "101",
        "maxIndexNum": "400",
        "brokerRole": "ASYNC_MASTER",
    }
    return {"name": f"{line}-{name}", "config": config, "batchTopics": BATCH_TOPICS, "messages": msgs}


def batchcq_scenarios(line: str) -> list[dict]:
    """Two stores for a 5.x line: several BatchCQ files per queue (4 and 3 units a file), commitlog
    files that end in blanks, inner batches, single messages, outer batches, transactions, delays,
    and an ordinary topic beside them."""
    return [_scenario(line, "bcq-a", 11, 60, 4, 32768),
            _scenario(line, "bcq-b", 23, 40, 3, 12288)]


def expected_units(sc: dict) -> dict[tuple[str, int], list[tuple[int, int, int]]]:
    """Per BatchCQ queue (topic, queueId): its units in order, (base offset, batch size, tags code).

    Queue offsets count messages: an inner batch of n takes n offsets (``BatchConsumeQueue.
    assignQueueOffset`` / ``increaseQueueOffset`` with ``INNER_NUM``), a message or a message of an
    outer batch one; an inner batch's record has no TAGS property (tags code 0)."""
    batch_topics = set(sc.get("batchTopics", ()))
    next_offset: dict[tuple[str, int], int] = {}
    units: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
    for m in sc["messages"]:
        topic = m.get("topic")
        if topic not in batch_topics or m.get("delayLevel"):
            continue
        q = (topic, m["queueId"])
        base = next_offset.get(q, 0)
        if "batch" in m:
            if "uniqKey" in m:
                units.setdefault(q, []).append((base, len(m["batch"]), 0))
                next_offset[q] = base + len(m["batch"])
            else:
                for i, part in enumerate(m["batch"]):
                    units.setdefault(q, []).append((base + i, 1, java_hash(part["tags"]) if "tags" in part else 0))
                next_offset[q] = base + len(m["batch"])
            continue
        if m.get("tranType") in ("prepared", "rollback"):
            continue   # no queue offset assigned, no unit dispatched
        units.setdefault(q, []).append((base, 1, java_hash(m["tags"]) if "tags" in m else 0))
        next_offset[q] = base + 1
    return units

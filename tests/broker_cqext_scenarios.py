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

:func:`cqext_cleanup_scenarios` gives the store of the cleanup test (:mod:`test_cqext_cleanup_broker`):
8 KiB segments, so that half of them hold about half of each queue's ext files.
"""
from __future__ import annotations

import base64
import random

from broker_layout_scenarios import layout_scenarios
from broker_scenarios import TAGS


def config(ext_file_size: int) -> dict[str, str]:
    return {
        "mappedFileSizeCommitLog": str(32 * 1024),
        "mappedFileSizeConsumeQueue": "120",   # 6 units a file
        "maxHashSlotNum": "101",
        "maxIndexNum": "400",
        "enableConsumeQueueExt": "true",
        "mappedFileSizeConsumeQueueExt": str(ext_file_size),
    }


def cqext_scenarios(line: str) -> list[dict]:
    """The ConsumeQueueExt scenarios of broker line ``line`` (named ``<line>-cqext-<what>``)."""
    topics = ["T0", "T1", "%RETRY%cg1"]
    if not line.startswith("4"):
        topics.append("LongTopic-" + "x" * 190)
    return layout_scenarios(line, "cqext", 11, topics, {"plain": config(104), "mixed": config(110), "lmq": config(104)})


def cqext_cleanup_scenarios(line: str) -> list[dict]:
    """``<line>-cqext-cleanup``: 160 messages of 100 to 300 body bytes in 8 KiB segments (about eight),
    over queues 0 and 1 of T0 and T1 (about 40 units, 8 ext files of 5 units each, per queue), and ten
    messages of ``Old`` queue 0 among the first 40 only (two ext files, every unit in the oldest
    segments)."""
    rng = random.Random(31)
    messages = []
    for i in range(160):
        m = {"topic": "Old" if i < 40 and i % 4 == 0 else rng.choice(["T0", "T1"]),
             "queueId": 0 if i < 40 and i % 4 == 0 else rng.randint(0, 1),
             "body": base64.b64encode(rng.randbytes(rng.randint(100, 300))).decode(),
             "uniqKey": f"7F00000100002A9F0001{i:012X}"}
        if rng.random() < 0.8:
            m["tags"] = rng.choice(TAGS)
        messages.append(m)
    conf = {**config(104), "mappedFileSizeCommitLog": str(8 * 1024)}
    return [{"name": f"{line}-cqext-cleanup", "config": conf, "messages": messages}]

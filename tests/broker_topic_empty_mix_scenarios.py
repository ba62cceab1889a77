"""Stores where blanks' empty requests (5.x ``enableBuildConsumeQueueConcurrently=true``: a batch task of
``ConcurrentReputMessageService`` reads a blank's magic code, ``DispatchRequest(0, true)``) and multi-dispatch requests
naming an empty queue (``INNER_MULTI_DISPATCH`` ``",%LMQ%a"`` on a record of queue 0, ``enableMultiDispatch=true``,
``enableLmq=false``: topic "" queue 0) both reach topic "" queue 0 (``consumequeue/0/``), the broker's reput alone
writing the files (``reputDamage``, as :mod:`broker_concurrent_scenarios`' ``blankon``: the last record before the
second segment's blank made to reach that file's end, the task then reads the blank and its empty request is
dispatched there, and the reput goes on at the next file).

* ``-before``: an empty-name request in the first segment, before the blank (asking ("", 0) for queue offset 2), and
  two after it (3, then 1): with consume queue ext files (``consumequeue_ext/0/`` shows the empty request's ext unit).
* ``-after``: the empty-name requests all after the blank (asking 0, 4, 2, 3).
* ``-before-plain`` and ``-after-ext`` (``PIPELINES_FULL_SUITE=1``): the same without and with ext files.

Each light request also names ``%LMQ%a`` (queue offsets 0, 1, 2, ... in put order), whose queue lists the requests'
records in order.  5.5.1 by default; ``PIPELINES_FULL_SUITE=1`` adds 5.3.3.
"""
from __future__ import annotations

import os

import broker_harness as bh
from broker_concurrent_scenarios import BLANKON, SEGMENT
from broker_layout_scenarios import Messages

FULL = os.environ.get("PIPELINES_FULL_SUITE", "") not in ("", "0")
LINES = ("5.5.1", "5.3.3") if FULL else ("5.5.1",)
EXT = {"enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": "204"}
# put index -> the queue offset its request asks for ("", 0); the first segment holds puts 0..11 or so, the second
# (whose last record is damaged, its blank read by the task) up to about 24
REQUESTS = {"before": {3: 2, 40: 3, 46: 1}, "after": {40: 0, 44: 4, 50: 2, 56: 3}}


def _messages(asks: dict[int, int]) -> list[dict]:
    g = Messages(23, ["T0", "T1", "T2"])
    out = []
    for i in range(70):
        if i in asks:
            n = len([k for k in asks if k < i])
            out.append(g.one(queueId=0, properties={"INNER_MULTI_DISPATCH": ",%LMQ%a",
                                                    "INNER_MULTI_QUEUE_OFFSET": f"{asks[i]},{n}"}))
        else:
            out.append(g.one())
    return out


def mix_scenarios(line: str) -> list[dict]:
    config = {"mappedFileSizeCommitLog": str(SEGMENT), "mappedFileSizeConsumeQueue": "120", "maxHashSlotNum": "101",
              "maxIndexNum": "400", "enableBuildConsumeQueueConcurrently": "true", "enableMultiDispatch": "true",
              "enableLmq": "false"}
    out = []
    for what, ext in (("before", True), ("before-plain", False), ("after", False), ("after-ext", True)):
        out.append({"name": f"{line}-creput-empty-mix-{what}", "messages": _messages(REQUESTS[what.split("-")[0]]),
                    "config": {**config, **(EXT if ext else {})}, "reputDamage": BLANKON})
    return bh.bounded(out, ("-before-plain", "-after-ext"))


SCENARIOS = {line: mix_scenarios(line) for line in LINES}

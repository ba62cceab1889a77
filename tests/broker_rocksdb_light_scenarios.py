"""RocksDB consume queue stores (``storeType=defaultRocksDB``) whose messages carry multi-dispatch requests
(``INNER_MULTI_DISPATCH`` to :data:`LIGHT_A` and :data:`LIGHT_SLASHED`, a name holding the path separator), written
by the broker harness under three settings, ``<line>-rocksdb-light-<what>``:

* ``lmqonly``: ``enableLmq=true``, ``enableMultiDispatch=false``;
* ``multionly``: ``enableLmq=false``, ``enableMultiDispatch=true`` (the messages carry their own
  ``INNER_MULTI_QUEUE_OFFSET``: without ``enableLmq`` the put path assigns none);
* ``both``: both true;
* ``lmqonly-live``: ``lmqonly`` whose first life's database (the running broker's reput) is kept in ``before/``
  (``keepBefore``, ``keepQueues``; the restart then dispatches nothing more).

With ``enableLmq`` the put path writes ``INNER_MULTI_QUEUE_OFFSET`` itself (``LmqDispatch``), over the messages'
own.  A retry topic's message asks for :data:`LIGHT_A` too (``MixAll.topicAllowsLMQ`` refuses it).
"""
from __future__ import annotations

from broker_layout_scenarios import Messages

LIGHT_A = "%LMQ%a"
LIGHT_SLASHED = "%LMQ%b/c"
SETTINGS = {"lmqonly": ("true", "false"), "multionly": ("false", "true"), "both": ("true", "true")}


def _messages() -> list[dict]:
    g = Messages(136, ["T0", "T1"], queues=2)
    out = [g.one()]                        # the record at offset 0 (a rebuild into an empty database skips it)
    offsets = {LIGHT_A: 0, LIGHT_SLASHED: 0}
    for i in range(15):
        names = [LIGHT_A, LIGHT_SLASHED] if i % 3 == 0 else [LIGHT_SLASHED] if i % 3 == 1 else []
        extra = {}
        if names:
            extra["properties"] = {"INNER_MULTI_DISPATCH": ",".join(names),
                                   "INNER_MULTI_QUEUE_OFFSET": ",".join(str(offsets[n]) for n in names)}
            for n in names:
                offsets[n] += 1
        out.append(g.one(**extra))
    out.append(g.one(topic="%RETRY%cg1", queueId=0, properties={"INNER_MULTI_DISPATCH": LIGHT_A,
                                                                 "INNER_MULTI_QUEUE_OFFSET": "40"}))
    out.append(g.one())
    return out


def light_scenarios(line: str) -> list[dict]:
    """The four stores of broker line ``line``."""
    messages = _messages()
    base = {"storeType": "defaultRocksDB", "mappedFileSizeCommitLog": str(32 * 1024), "maxHashSlotNum": "101",
            "maxIndexNum": "400"}
    out = [{"name": f"{line}-rocksdb-light-{what}", "messages": messages,
            "config": {**base, "enableLmq": lmq, "enableMultiDispatch": multi}}
           for what, (lmq, multi) in SETTINGS.items()]
    return [*out, {**out[0], "name": f"{out[0]['name']}-live", "keepBefore": True, "keepQueues": True}]

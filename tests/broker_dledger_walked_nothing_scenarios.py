"""DLedger crash restarts (5.x) whose ``dledgerRecoverAbnormally`` walk dispatches nothing, restarted with the
consume queues on disk (``keepQueues``): the ``plain`` store of :mod:`broker_dledger_scenarios` written with
``enabledAppendPropCRC`` and ``forceVerifyPropCRC`` (DLedger's encoder appends no ``__CRC32#`` property, so the
walk's message check fails at the first entry of the data file it starts at), the broker's restart keeping
``consumequeue/`` and ``index/`` as the crash left them:

* ``<line>-dledger-abort-propcrc-kept``: with ``recheckReputOffsetFromCq=true``, the whole log committed;
* ``-kept-back``: the same with DLedger's checkpoint three entries behind the log's end;
* ``-kept-norecheck``: without ``recheckReputOffsetFromCq``, the checkpoint three entries behind;
* ``-kept-nocut`` and ``-kept-nocut-norecheck`` (5.5.1): those two with the store checkpoint's
  ``logicsPhysicalOffset`` set to 0: ``isMmapFileMatchedRecover`` then compares the first message's store timestamp
  with ``logicsMsgTimestamp`` (the walk starts at a later data file), and ``dledgerRecoverAbnormally`` is passed 0,
  below ``processOffset``: no queue is cut.  Their messages end with a pause (``sleepMs`` 0) and every consume queue
  flush sets the checkpoint (``flushConsumeQueueThoroughInterval=0``): the writer then waits until the checkpoint's
  ``logicsMsgTimestamp`` is the last dispatch's, so that the walk starts at the last data file however busy the
  machine.

The broker's queues after ``load()`` (``queuesAfterLoad``: after ``truncateDirtyLogicFiles``) and after the reput
(``queuesAfterDispatch``) are in the writer's report.
"""
from __future__ import annotations

from broker_dledger_scenarios import THOROUGH_CHECKPOINT, dledger_scenarios

PROP = {"enabledAppendPropCRC": "true", "forceVerifyPropCRC": "true"}


def walked_nothing_kept_scenarios(line: str) -> list[dict]:
    """The crash restarts above on broker line ``line`` (5.x lines only)."""
    if not line.startswith(("5.3", "5.5")):
        return []
    plain = dledger_scenarios(line)[0]
    conf = {**plain["config"], **PROP}
    norecheck = {k: v for k, v in conf.items() if k != "recheckReputOffsetFromCq"}
    kept = {**plain, "abort": True, "keepQueues": True, "config": conf, "name": f"{line}-dledger-abort-propcrc-kept"}
    back = {**kept, "dledgerCommittedBack": 3, "name": f"{kept['name']}-back"}
    out = [kept, back, {**back, "config": norecheck, "name": f"{kept['name']}-norecheck"}]
    if line.startswith("5.5"):
        # the walk's start then follows logicsMsgTimestamp: a trailing pause makes the writer wait until the
        # checkpoint holds the last dispatch's timestamp (a busy machine's flush thread could put back an earlier one,
        # and the walk would start at the first data file, cutting at 0); every flush sets it (the default sets it
        # once a minute: at the first flush, a second after the start, wherever the dispatch is then)
        nocut = {**back, "messages": [*back["messages"], {"sleepMs": 0}], "config": {**conf, **THOROUGH_CHECKPOINT},
                 "checkpointLogicsPhysicalOffset": {"set": 0}, "name": f"{kept['name']}-nocut"}
        out += [nocut, {**nocut, "config": {**norecheck, **THOROUGH_CHECKPOINT}, "name": f"{nocut['name']}-norecheck"}]
    return out

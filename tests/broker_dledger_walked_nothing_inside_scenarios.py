"""DLedger crash restarts (5.x) whose ``dledgerRecoverAbnormally`` walk dispatches nothing (``forceVerifyPropCRC``:
DLedger's encoder appends no ``__CRC32#`` property, so the walk's message check fails at the first entry of the data
file it starts at) and whose start's reput the cut sets one byte before ``processOffset``, restarted with the
consume queues on disk (``keepQueues``, ``recheckReputOffsetFromCq=true``):

* ``<line>-dledger-abort-propcrc-kept-bcq-emptied``: T0/0 and T1/1 messages (2000-byte bodies, some 28 to a 64 KiB
  data file) over three data files, then ten messages of the BatchCQ topic BT0 (queue 0) in the last one only.  The
  walk starts at the last data file (``isMmapFileMatchedRecover``, 5.5.1: its first message's offset at or below the
  checkpoint's ``logicsPhysicalOffset``, which every flush writes: ``flushConsumeQueueThoroughInterval=0``; 5.3.3: its
  first message's store timestamp at or below the checkpoint's ``getMinTimestamp``, its physic and logics timestamps'
  least less 3 s: a pause of 3.5 s after that message, message 54), whose start is
  ``processOffset``; ``truncateDirtyLogicFiles`` there deletes every file of BT0/0
  (``BatchConsumeQueue.truncateDirtyLogicFiles``: its max ``processOffset - 1``) and leaves T0/0 and T1/1 a unit of
  the earlier files each (their max the end of that unit, at least 8 bytes before the file's end: DLedger's
  ``MmapFileList.preAppend`` ends a full file with a blank of at least 8 bytes), so the start's reput begins at
  ``processOffset - 1``, the last byte of the data file before, inside that blank;
* ``-back``: the same with DLedger's checkpoint three entries behind the log's end;
* ``5.5.1-dledger-abort-propcrc-kept-past-2gib`` (some 2.15 GB of data: ``DLEDGER_2GIB=1`` only,
  :func:`walked_nothing_past_2gib_scenario`): the ``-past-2gib`` store (a T9 message, T0 messages over 21 data files
  of 100,000,000 bytes and 11207 entries of the 22nd, a last T9 message ending 653 bytes past 2147483647) with the
  queues kept, T9's queue file planted as the walk of the ``-past-2gib`` store writes it (a ``fillPreBlank`` unit,
  then the last T9 message's unit): the walk starts at the 22nd data file and dispatches nothing, the cut at its
  start leaves T9 with its ``fillPreBlank`` unit only (max 2147483647) and T0 its units of the earlier files, so the
  reput is set at 2147483647, inside the body of the last T0 entry.

The broker's queues after ``load()`` (``queuesAfterLoad``) and after the reput (``queuesAfterDispatch``) are in the
writer's report.
"""
from __future__ import annotations

import base64
import struct

from broker_dledger_scenarios import THOROUGH_CHECKPOINT, Messages, config, past_2gib_abort_scenario

PROP = {"enabledAppendPropCRC": "true", "forceVerifyPropCRC": "true"}
BODY = 2000        # the T0/T1 messages' body size: some 28 entries to a data file
T_MESSAGES = 60    # T0/0 and T1/1 alternately, over the first two data files and the start of the third
B_MESSAGES = 10    # then BT0/0 only, in the last data file
LAST_FILE_FIRST = 54   # the T message the last data file starts with (26 entries in the first, 28 in the second)


def walked_nothing_inside_scenarios(line: str) -> list[dict]:
    """The crash restarts above on broker line ``line`` (5.x lines only)."""
    if not line.startswith(("5.3", "5.5")):
        return []
    g = Messages(88, ["T0"])
    messages = []
    for i in range(T_MESSAGES):
        m = g.one(keyed=i % 2 == 0)
        m.update(topic=f"T{i % 2}", queueId=i % 2, body=g.body(BODY, BODY))
        messages.append(m)
        if i == LAST_FILE_FIRST:   # 5.3.3: the rest stored more than 3 s later (StoreCheckpoint.getMinTimestamp)
            messages.append({"sleepMs": 3500})
    for _ in range(B_MESSAGES):
        m = g.one(keyed=True)
        m.update(topic="BT0", queueId=0, body=g.body(100, 400))
        messages.append(m)
    conf = {**config(line), **THOROUGH_CHECKPOINT, **PROP, "mapperFileSizeBatchConsumeQueue": str(11 * 46)}
    kept = {"config": conf, "batchTopics": ["BT0"], "messages": messages, "abort": True, "keepQueues": True,
            "name": f"{line}-dledger-abort-propcrc-kept-bcq-emptied"}
    return [kept, {**kept, "dledgerCommittedBack": 3, "name": f"{kept['name']}-back"}]


PAST_2GIB_T9_LAST = 2147484107   # the -past-2gib store's last T9 record (193 bytes, its entry ending 653 past 2**31-1)
PAST_2GIB_T9_FILE = 6_000_000    # its mappedFileSizeConsumeQueue


def walked_nothing_past_2gib_scenario(line: str) -> dict:
    """``<line>-dledger-abort-propcrc-kept-past-2gib`` (5.5.1, ``DLEDGER_2GIB=1``): above."""
    sc = past_2gib_abort_scenario(line)
    t9 = bytes(8) + struct.pack(">i", 2**31 - 1) + bytes(8) + struct.pack(">qiq", PAST_2GIB_T9_LAST, 193, 0)
    plant = {f"consumequeue/T9/0/{0:020d}": base64.b64encode(t9 + bytes(PAST_2GIB_T9_FILE - len(t9))).decode()}
    return {**{k: v for k, v in sc.items() if k != "reportQueues"}, "config": {**sc["config"], **PROP},
            "keepQueues": True, "plantFiles": plant, "name": f"{line}-dledger-abort-propcrc-kept-past-2gib"}

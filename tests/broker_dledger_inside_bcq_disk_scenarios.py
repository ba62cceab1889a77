"""Inside-entry DLedger crash scenarios of a batch queue on disk before the walk (5.5.1, ``keepQueues``; the
harness's ``plantFiles`` puts a queue file of its own in) onto whose files the walk appended units the cut keeps:
``-batch-held-below``, B7/0's planted file holding one unit that starts below every unit the walk wrote of it, and
``-earlier-batch-held-below``, B7/0 written by the walk in both data files, its planted file holding the unit of its
earlier data file; and a
batch queue the cut took no unit of whose record past the walk's end the reput reaches (``-batch-uncut-to-entry-past``,
queues rebuilt).
Built on the -batch-held store of :func:`broker_dledger_inside_scenarios.embedded_batch_held_scenario`;
:func:`broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios` lists them (:func:`bcq_disk_scenarios`)."""
from __future__ import annotations

import base64
import struct

# -batch-held-below: B7/0's planted unit (commitlog offset, size: the first data file's first record, another queue's;
# BatchConsumeQueue.recover reads no commitlog; tags code, store time (recover reads none), msgBaseOffset, batchSize,
# compacted offset, reserved)
BELOW_B7_UNIT = (48, 440, 0, 1795975756917, 0, 1, -1, 0)
# -earlier-batch-held-below: B7/0's planted unit, that of message 10 of the first data file (its B7/0 record: the test
# checks offset and size against the log; the rest as BELOW_B7_UNIT's)
EARLIER_B7_UNIT = (3996, 401, 0, 1795975756917, 0, 1, -1, 0)


def bcq_disk_scenarios(sc: dict) -> list[dict]:
    """This module's stores, built on the -emptied-batch-embedded store ``sc``."""
    return [embedded_batch_held_below_scenario(sc), embedded_earlier_batch_held_below_scenario(sc),
            embedded_batch_uncut_to_entry_past_scenario(sc)]


def embedded_batch_held_below_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-batch-held-below`` (5.5.1, the queues kept): the -batch-held store
    with B7/0's file replaced before the restart (``plantFiles``) by one holding :data:`BELOW_B7_UNIT` alone: loaded
    max 48, write position 46.  The walk appends its B7/0 unit of the last message before the host (below
    processOffset, starting past 48) at 46 and that of the last message (past processOffset) at 92; the cut takes the
    last: write position 92, max the start of the message before the host, where the files alone would say 46 and
    48 and the walk's units alone 46; the B7/0 message where the reput is set goes to 92."""
    from broker_dledger_inside_scenarios import embedded_batch_held_scenario
    held = embedded_batch_held_scenario(sc)
    unit = struct.pack(">qiqqqhii", *BELOW_B7_UNIT)
    size = int(held["config"].get("mapperFileSizeBatchConsumeQueue", 300000 * 46))   # the store's default
    return {**held, "name": f"{held['name']}-below", "plantFiles": {
        f"batchconsumequeue/B7/0/{0:020d}": base64.b64encode(unit + bytes(size - len(unit))).decode()}}


def embedded_batch_uncut_to_entry_past_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-batch-uncut-to-entry-past`` (5.5.1, queues rebuilt): the
    -batch-held-shifted-to-entry-past store (:func:`broker_dledger_inside_disk_batch_scenarios.
    embedded_batch_held_shifted_to_entry_scenario`) with no file planted, the queues not kept, and its last B7/0
    message before the damaged one to B9/0 instead: B7/0's only walk unit is that of the message before the host
    (below processOffset), so the cut takes none of it; where the reput is set (processOffset - 1) the B7/0 message
    ending at B9's entry, then the reput dispatches B9's record and the one after it (B9/0's, cut) again and reaches
    the damaged B7/0 message, a record past the walk's end."""
    from broker_dledger_inside_disk_batch_scenarios import embedded_batch_held_shifted_to_entry_scenario
    past = embedded_batch_held_shifted_to_entry_scenario(sc, past=True)
    *rest, tail, damaged = past["messages"]
    assert tail["topic"] == damaged["topic"] == "B7" and past["damageMessage"] == len(past["messages"]) - 1
    out = {k: v for k, v in past.items() if k != "plantFiles"}
    return {**out, "keepQueues": False, "messages": [*rest, {**tail, "topic": "B9"}, damaged],
            "name": past["name"].replace("-batch-held-shifted-to-entry-past", "-batch-uncut-to-entry-past")}


def embedded_earlier_batch_held_below_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-earlier-batch-held-below`` (5.5.1, the queues kept): the
    -earlier-batch store (:func:`broker_dledger_inside_scenarios.embedded_earlier_batch_scenario`: the walk goes over
    both data files; B7/0 gets message 10 of the first one and the last message, cut) with the message before the
    host to B7/0 too (below processOffset), and B7/0's file replaced before the restart by one holding
    :data:`EARLIER_B7_UNIT` alone: loaded max message 10's start, write position 46.  The walk skips message 10's
    unit (at that max), appends the one before the host at 46 and the last at 92; the cut takes the last: write
    position 92, max the start of the message before the host (the planted file alone: 46 and message 10's start);
    the B7/0 message where the reput is set goes to 92."""
    from broker_dledger_inside_scenarios import embedded_earlier_batch_scenario
    earlier = embedded_earlier_batch_scenario(sc)
    *rest, before, host, b9, tail = earlier["messages"]
    unit = struct.pack(">qiqqqhii", *EARLIER_B7_UNIT)
    size = int(earlier["config"].get("mapperFileSizeBatchConsumeQueue", 300000 * 46))   # the store's default
    planted = base64.b64encode(unit + bytes(size - len(unit))).decode()
    return {**earlier, "keepQueues": True, "name": f"{earlier['name']}-held-below",
            "messages": [*rest, {**before, "topic": "B7", "queueId": 0}, host, b9, tail],
            "plantFiles": {f"batchconsumequeue/B7/0/{0:020d}": planted}}

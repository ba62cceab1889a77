"""Inside-entry DLedger crash scenarios of a batch queue replayed whole
(:mod:`store_format.dledger_inside_replay_batch`) in a case the difference model refused: ``-earlier-batch-held-lower``,
B7/0 on disk before the walk (5.5.1, ``keepQueues``; the harness's ``plantFiles`` puts its file in), written by the
walk in both data files, its planted file holding one unit that starts below every unit the walk wrote of it, so that
the walk's ``putBatchMessagePositionInfo`` appends its unit of the earlier data file onto that file too
(``-earlier-batch-only-held-lower``: the same for B7/0 written by the walk in the earlier data file only); and
``-to-entry-past-only-batch-held``, a batch queue on disk before the walk that the walk wrote no unit of, only a record
past its end, its planted file holding a unit below processOffset, which the cut keeps.  Built on the
-earlier-batch-held-below store of
:func:`broker_dledger_inside_bcq_disk_scenarios.embedded_earlier_batch_held_below_scenario` and the
-to-entry-past-only-batch one of
:func:`broker_dledger_inside_only_past_scenarios.embedded_to_entry_past_only_batch_scenario`;
:func:`broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios` lists them (:func:`batch_replay_scenarios`)."""
from __future__ import annotations

import base64
import struct


def batch_replay_scenarios(sc: dict) -> list[dict]:
    """This module's stores, built on the -emptied-batch-embedded store ``sc``."""
    return [embedded_earlier_batch_held_lower_scenario(sc), embedded_earlier_batch_only_held_lower_scenario(sc),
            embedded_to_entry_past_only_batch_held_scenario(sc)]


def embedded_earlier_batch_held_lower_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-earlier-batch-held-lower`` (5.5.1, the queues kept): the
    -earlier-batch-held-below store (the walk goes over both data files; B7/0 gets message 10 of the first one, the
    last message before the host, below processOffset, and the last message, cut) with B7/0's planted file holding
    :data:`broker_dledger_inside_bcq_disk_scenarios.BELOW_B7_UNIT` alone (the first data file's first record, another
    queue's): loaded max 48, write position 46.  The walk appends message 10's unit at 46 (it starts past 48), the one
    before the host at 92 and the last at 138; the cut takes the last: write position 138, max the start of the
    message before the host (the planted file alone: 46 and 48); the B7/0 message where the reput is set goes to
    138."""
    from broker_dledger_inside_bcq_disk_scenarios import BELOW_B7_UNIT, embedded_earlier_batch_held_below_scenario
    held = embedded_earlier_batch_held_below_scenario(sc)
    unit = struct.pack(">qiqqqhii", *BELOW_B7_UNIT)
    size = int(held["config"].get("mapperFileSizeBatchConsumeQueue", 300000 * 46))   # the store's default
    return {**held, "name": held["name"].replace("-held-below", "-held-lower"), "plantFiles": {
        f"batchconsumequeue/B7/0/{0:020d}": base64.b64encode(unit + bytes(size - len(unit))).decode()}}


def embedded_to_entry_past_only_batch_held_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-past-only-batch-held`` (5.5.1, the queues kept): the
    -to-entry-past-only-batch store (the walk, ended by the damaged last message, wrote no unit of
    :data:`broker_dledger_inside_only_past_scenarios.PAST_ONLY_BATCH_TOPIC`/0; the parsed message ending at B9's
    entry and the damaged one go to it) with that queue's file replaced before the restart by one holding
    :data:`broker_dledger_inside_bcq_disk_scenarios.BELOW_B7_UNIT` alone (the first data file's first record, another
    queue's): loaded max 48, write position 46, which ``BatchConsumeQueue.truncateDirtyLogicFiles`` keeps (the unit
    starts below processOffset).  The parsed unit starts past 48 and goes to 46, the damaged record's to 92."""
    from broker_dledger_inside_bcq_disk_scenarios import BELOW_B7_UNIT
    from broker_dledger_inside_only_past_scenarios import (
        PAST_ONLY_BATCH_TOPIC,
        embedded_to_entry_past_only_batch_scenario,
    )
    only = embedded_to_entry_past_only_batch_scenario(sc)
    unit = struct.pack(">qiqqqhii", *BELOW_B7_UNIT)
    size = int(only["config"].get("mapperFileSizeBatchConsumeQueue", 300000 * 46))   # the store's default
    return {**only, "keepQueues": True, "name": f"{only['name']}-held", "plantFiles": {
        f"batchconsumequeue/{PAST_ONLY_BATCH_TOPIC}/0/{0:020d}":
            base64.b64encode(unit + bytes(size - len(unit))).decode()}}


def embedded_earlier_batch_only_held_lower_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-earlier-batch-only-held-lower`` (5.5.1, the queues kept): the
    -earlier-batch-only-kept store (:func:`broker_dledger_inside_disk_batch_scenarios.
    embedded_earlier_batch_only_kept_scenario`: the walk goes over both data files and wrote B7/0 in the first one
    only, message 10) with B7/0's file replaced before the restart by one holding
    :data:`broker_dledger_inside_bcq_disk_scenarios.BELOW_B7_UNIT` alone: loaded max 48, write position 46.  The walk
    appends message 10's unit at 46 (it starts past 48); the cut keeps it (below processOffset): write position 92,
    max its start; the B7/0 message where the reput is set goes to 92."""
    from broker_dledger_inside_bcq_disk_scenarios import BELOW_B7_UNIT
    from broker_dledger_inside_disk_batch_scenarios import embedded_earlier_batch_only_kept_scenario
    kept = embedded_earlier_batch_only_kept_scenario(sc)
    unit = struct.pack(">qiqqqhii", *BELOW_B7_UNIT)
    size = int(kept["config"].get("mapperFileSizeBatchConsumeQueue", 300000 * 46))   # the store's default
    return {**kept, "name": kept["name"].replace("-only-kept", "-only-held-lower"), "plantFiles": {
        f"batchconsumequeue/B7/0/{0:020d}": base64.b64encode(unit + bytes(size - len(unit))).decode()}}

"""DLedger crash scenarios (5.5.1) whose start's reput, NOT set inside an entry, puts back the cut units of a queue
holding a record's own units and light ones (``%LMQ%q1``, queue 0) that was on disk before the walk (``keepQueues``):
the -batch-kept store (:func:`broker_dledger_scenarios.batch_kept_abort_scenario`: T0, the light queue %LMQ%q1, the
BatchCQ topic BT0, the queues kept) with three plain T0/0 puts of its last data file sent to topic ``%LMQ%q1`` itself
instead (:data:`OWN_PUTS`: own queue offsets 0-2), past ``processOffset``:

* ``-mixed-disk-reput`` (``recheckReputOffsetFromCq=true``): the reput starts at the cut queues' largest max, below
  every cut unit, and puts them all back;
* ``-mixed-disk-reput-committed`` (no recheck, DLedger's checkpoint :data:`COMMITTED_BACK` entries behind the log's
  end): the reput starts at the committed position and puts back only the last cut units, from the write position the
  cut left.

:func:`broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios` lists them
(:func:`mixed_disk_reput_scenarios`).
"""
from __future__ import annotations

# the puts (indexes into the layouts store's 400 messages: plain T0/0 ones, i % 3 == 0, i even) sent to %LMQ%q1
# itself, all past processOffset (about the last 35 messages are cut)
OWN_PUTS = (378, 384, 396)
# the committed position: that many entries behind the log's end (the puts from 388 on): 396's own unit and the
# light units of 391, 393, 397 and 399 put back, 378's and 384's not
COMMITTED_BACK = 12


def _retopic(sc: dict) -> dict:
    msgs = list(sc["messages"])
    for i in OWN_PUTS:
        m = msgs[i]
        assert m["topic"] == "T0" and "properties" not in m, (i, m)
        msgs[i] = {**m, "topic": "%LMQ%q1", "queueId": 0}
    return {**sc, "messages": msgs}


def mixed_disk_reput_scenarios(line: str) -> list[dict]:
    """``<line>-dledger-abort-mixed-disk-reput`` and ``-mixed-disk-reput-committed`` (5.5.1; module docstring)."""
    if not line.startswith("5.5"):
        return []
    from broker_dledger_scenarios import batch_kept_abort_scenario
    sc = _retopic(batch_kept_abort_scenario(line))
    name = f"{line}-dledger-abort-mixed-disk-reput"
    return [{**sc, "config": {**sc["config"], "recheckReputOffsetFromCq": "true"}, "name": name},
            {**sc, "dledgerCommittedBack": COMMITTED_BACK, "name": f"{name}-committed"}]

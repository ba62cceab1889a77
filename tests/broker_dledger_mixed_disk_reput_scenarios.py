"""DLedger crash scenarios (5.5.1; the first four on 5.3.3 too) whose start's reput, NOT set inside an entry, puts back
the cut units of a queue holding a record's own units and light ones (``%LMQ%q1``, queue 0) that was on disk before
the walk (``keepQueues``): the -batch-kept store (:func:`broker_dledger_scenarios.batch_kept_abort_scenario`: T0, the
light queue %LMQ%q1, the BatchCQ topic BT0, the queues kept) with three plain T0/0 puts of its last data file sent to
topic ``%LMQ%q1`` itself instead (:data:`OWN_PUTS`: own queue offsets 0-2), past ``processOffset``:

* ``-mixed-disk-reput`` (``recheckReputOffsetFromCq=true``): the reput starts at the cut queues' largest max, below
  every cut unit, and puts them all back;
* ``-mixed-disk-reput-committed`` (no recheck, DLedger's checkpoint :data:`COMMITTED_BACK` entries behind the log's
  end): the reput starts at the committed position and puts back only the last cut units, from the write position the
  cut left;
* ``-mixed-disk-reput-ext``, ``-mixed-disk-reput-committed-ext``: both from the layouts store with its ext files
  (:func:`broker_dledger_scenarios.layouts_abort_scenario`, ``enableConsumeQueueExt``, ext files of 10 units), the
  queues kept;
* ``...-earlier-light-mixed-t7-both-kept-t0`` (:func:`earlier_both_reput_scenarios`): the inside-entry store
  -earlier-light-mixed-t7-both-kept (%LMQ%q1/0 holding units of both kinds in the walk's earlier data file, on disk
  before the walk) with its B9 message sent to T0/0 instead (the same layout): no queue emptied by the cut, so the
  reput starts at the cut queues' largest max, below the host message, not inside an entry, and dispatches the last
  message's own unit (own queue offset 1) again, dropped again (20 below the write position 40); ``-planted``: the
  %LMQ%q1/0 file planted with light unit 1 alone at 0: the walk appends that own unit at 20, the cut takes it (write
  position 20) and the reput puts it back at 20.

:func:`broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios` lists them
(:func:`mixed_disk_reput_scenarios`; it adds
:func:`broker_dledger_mixed_disk_earlier_scenarios.mixed_disk_earlier_scenarios`).
"""
from __future__ import annotations

# the puts (indexes into the layouts store's 400 messages: plain T0/0 ones, i % 3 == 0, i even) sent to %LMQ%q1
# itself, all past processOffset (about the last 35 messages are cut)
OWN_PUTS = (378, 384, 396)
# the committed position: that many entries behind the log's end, past the records of own puts 378 and 384: the
# reput appends the last four light units of %LMQ%q1 from the cut's write position and drops 396's own unit
COMMITTED_BACK = 12


def _retopic(sc: dict) -> dict:
    msgs = list(sc["messages"])
    for i in OWN_PUTS:
        m = msgs[i]
        assert m["topic"] == "T0" and "properties" not in m, (i, m)
        msgs[i] = {**m, "topic": "%LMQ%q1", "queueId": 0}
    return {**sc, "messages": msgs}


def mixed_disk_reput_scenarios(line: str, embedded: dict) -> list[dict]:
    """``<line>-dledger-abort-mixed-disk-reput``, ``-mixed-disk-reput-committed`` and their ``-ext`` (5.5.1, 5.3.3;
    module docstring), and on 5.5.1 :func:`earlier_both_reput_scenarios` from the -emptied-batch-embedded store
    ``embedded``."""
    if not line.startswith(("5.5", "5.3")):
        return []
    from broker_dledger_mixed_disk_earlier_scenarios import mixed_disk_earlier_scenarios
    from broker_dledger_scenarios import batch_kept_abort_scenario, layouts_abort_scenario
    sc = _retopic(batch_kept_abort_scenario(line))
    ext = _retopic(layouts_abort_scenario(line))
    name = f"{line}-dledger-abort-mixed-disk-reput"
    return [{**sc, "config": {**sc["config"], "recheckReputOffsetFromCq": "true"}, "name": name},
            {**sc, "dledgerCommittedBack": COMMITTED_BACK, "name": f"{name}-committed"},
            {**ext, "config": {**ext["config"], "recheckReputOffsetFromCq": "true"}, "keepQueues": True,
             "name": f"{name}-ext"},
            {**ext, "keepQueues": True, "dledgerCommittedBack": COMMITTED_BACK, "name": f"{name}-committed-ext"},
            *(earlier_both_reput_scenarios(embedded) if line.startswith("5.5") else []),
            *mixed_disk_earlier_scenarios(line, embedded)]


def earlier_both_reput_scenarios(sc: dict) -> list[dict]:
    """From the -emptied-batch-embedded store ``sc`` (5.5.1): ``-earlier-light-mixed-t7-both-kept-t0`` and its
    ``-planted`` twin (module docstring)."""
    from broker_dledger_inside_mixed_disk_scenarios import _planted
    from broker_dledger_inside_mixed_earlier_scenarios import PLANTED_BOTH_UNIT, embedded_earlier_both_mixed_scenario
    t7 = embedded_earlier_both_mixed_scenario(sc, light=False)
    *rest, host, b9, tail = t7["messages"]
    assert b9["topic"] == "B9" and tail["topic"] == "%LMQ%q1", (b9, tail)
    kept = {**t7, "messages": [*rest, host, {**b9, "topic": "T0", "queueId": 0}, tail], "keepQueues": True,
            "name": f"{t7['name']}-kept-t0"}
    unit = PLANTED_BOTH_UNIT[0].to_bytes(8, "big") + PLANTED_BOTH_UNIT[1].to_bytes(4, "big") + bytes(8)
    return [kept, _planted(kept, unit)]

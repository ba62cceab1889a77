"""DLedger crash scenarios whose start's reput, NOT set inside an entry, dispatches a queue holding a record's own
units and light ones (``%LMQ%q1``, queue 0) that was on disk before the walk (``keepQueues``), of shapes
``dledger_crash_cut.cut_queues`` refused before:

* ``<line>-dledger-abort-mixed-disk-earlier`` (5.5.1, 5.3.3): the ``-mixed-disk-reput-committed`` store
  (:mod:`broker_dledger_mixed_disk_reput_scenarios`: three plain T0/0 puts of the last data file sent to %LMQ%q1 itself)
  with DLedger's checkpoint :data:`EARLIER_BACK` entries behind the log's end, before the walk's last data file: the
  reput from the committed position dispatches the queue's records of the earlier data file too (light units, each at
  or below the cut's max: dropped), then those of the last one by the same rule; ``-ext``: the same from the layouts
  store with its ext files (``enableConsumeQueueExt``, ext files of 10 units); ``-own-ext``: that one with the
  earlier data file's plain T0/0 puts from the committed position on (:data:`EARLIER_OWN_PUTS`) sent to %LMQ%q1
  itself: the reput puts an ext unit for each first;
* ``<line>-dledger-abort-emptied-batch-embedded-earlier-light-mixed-t7-both-kept-t0-end`` and ``-planted-end``
  (5.5.1): the ``-kept-t0`` stores (%LMQ%q1/0 holding units of both kinds in the walk's earlier data file) without
  ``recheckReputOffsetFromCq``, the committed position the log's end: the reput puts back none of its cut units;
  ``5.3.3-dledger-abort-emptied-kept-embedded-light-mixed-earlier-both-end`` the same from the 5.3.3
  ``-light-mixed-earlier-both`` store (:mod:`broker_dledger_inside_mixed_533_scenarios`): its cut light unit 2 stays
  cut.

:func:`broker_dledger_mixed_disk_below_scenarios.mixed_disk_below_scenarios` adds the ``-mixed-disk-below`` ones.
"""
from __future__ import annotations

# the committed position that many entries behind the log's end: six entries before the last data file's start (154
# entries in it: the earlier data file's last records go to %LMQ%q1 too)
EARLIER_BACK = 160
# -mixed-disk-earlier-own-ext: the plain T0/0 puts of the earlier data file, from the committed position on, sent to
# %LMQ%q1 itself (their bodies shorter by the 5 bytes that topic adds: the same layout)
EARLIER_OWN_PUTS = (240, 244)


def _own_earlier(sc: dict) -> dict:
    import base64
    msgs = list(sc["messages"])
    assert len(msgs) == 400 and all("topic" in m for m in msgs), len(msgs)
    for i in EARLIER_OWN_PUTS:
        m = msgs[i]
        assert m["topic"] == "T0" and "properties" not in m, (i, m)
        msgs[i] = {**m, "topic": "%LMQ%q1", "queueId": 0,
                   "body": base64.b64encode(base64.b64decode(m["body"])[:-5]).decode()}
    return {**sc, "messages": msgs}


def mixed_disk_earlier_scenarios(line: str, embedded: dict) -> list[dict]:
    """The module docstring's scenarios of ``line`` (``embedded``: the -emptied-batch-embedded store, 5.5.1)."""
    if not line.startswith(("5.5", "5.3")):
        return []
    from broker_dledger_mixed_disk_reput_scenarios import _retopic, earlier_both_reput_scenarios
    from broker_dledger_scenarios import batch_kept_abort_scenario, layouts_abort_scenario
    sc = _retopic(batch_kept_abort_scenario(line))
    ext = _retopic(layouts_abort_scenario(line))
    name = f"{line}-dledger-abort-mixed-disk-earlier"
    out = [{**sc, "dledgerCommittedBack": EARLIER_BACK, "name": name},
           {**ext, "keepQueues": True, "dledgerCommittedBack": EARLIER_BACK, "name": f"{name}-ext"},
           {**_own_earlier(ext), "keepQueues": True, "dledgerCommittedBack": EARLIER_BACK, "name": f"{name}-own-ext"}]
    if line.startswith("5.5"):
        both = earlier_both_reput_scenarios(embedded)
    else:
        from broker_dledger_inside_mixed_533_scenarios import kept_earlier_both_scenario
        both = [kept_earlier_both_scenario(embedded)]
    for kept in both:
        conf = {k: v for k, v in kept["config"].items() if k != "recheckReputOffsetFromCq"}
        assert "dledgerCommittedBack" not in kept and kept["keepQueues"], kept["name"]
        out.append({**kept, "config": conf, "name": f"{kept['name']}-end"})
    from broker_dledger_mixed_disk_below_scenarios import mixed_disk_below_scenarios
    return out + mixed_disk_below_scenarios(line)

"""The inside-entry DLedger crash scenarios (:mod:`broker_dledger_inside_scenarios`) whose start's reput, after the
message it parses, goes on past a queue's cut units to records of it past the walk's end (the -past-cut-over and
-past-cut-two-over stores of :mod:`broker_dledger_inside_past_more_scenarios`), with ``enableConsumeQueueExt``
(``-ext``) or the queues kept (``-kept``: T0/0 on disk before the walk)."""
from __future__ import annotations

from broker_dledger_inside_past_more_scenarios import (
    embedded_to_entry_past_cut_over_scenario,
    embedded_to_entry_past_cut_two_over_scenario,
)


def past_rest_scenarios(base: dict) -> list[dict]:
    """On the -emptied-batch-embedded store ``base`` (5.5.1): ``-to-entry-past-cut-over-ext``,
    ``-past-cut-two-over-ext`` (ext files of 10 units, as the other ``-ext`` stores) and ``-past-cut-over-kept``,
    ``-past-cut-two-over-kept`` (``keepQueues``)."""
    out = []
    for sc in (embedded_to_entry_past_cut_over_scenario(base), embedded_to_entry_past_cut_two_over_scenario(base)):
        out += [{**sc, "config": {**sc["config"], "enableConsumeQueueExt": "true",
                                  "mappedFileSizeConsumeQueueExt": "204"}, "name": f"{sc['name']}-ext"},
                {**sc, "keepQueues": True, "name": f"{sc['name']}-kept"}]
    return out

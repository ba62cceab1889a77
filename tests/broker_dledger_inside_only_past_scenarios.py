"""The inside-entry DLedger crash scenarios (:mod:`broker_dledger_inside_scenarios`) whose start's reput parses a
message for a queue only records past the walk's end go to, that queue a batch one (a BatchCQ topic:
``-to-entry-past-only-batch``): the walk wrote no unit of it, the cut leaves it no file, the broker creates it from
the parsed unit and appends the damaged record's after it; and with the queues kept (``keepQueues``), that queue on
disk before the walk, its file holding the damaged record's unit only, which the cut deletes
(``-to-entry-past-only-kept``, ``-to-entry-past-only-batch-kept``)."""
from __future__ import annotations

from broker_dledger_inside_scenarios import BATCH_INNER

# -to-entry-past-only-batch: the BatchCQ topic of the parsed message and of the damaged last one (a queue only they go
# to; as long a name as T0, the same layout)
PAST_ONLY_BATCH_TOPIC = "BZ"


def only_past_scenarios(base: dict) -> list[dict]:
    """On the -emptied-batch-embedded store ``base`` (5.5.1): ``-to-entry-past-only-batch``
    (:func:`embedded_to_entry_past_only_batch_scenario`), and ``-to-entry-past-only-kept`` and
    ``-to-entry-past-only-batch-kept``: the -to-entry-past-only store
    (:func:`broker_dledger_inside_light_scenarios.embedded_to_entry_past_only_scenario`) and that one with the queues
    kept (``keepQueues``)."""
    from broker_dledger_inside_light_scenarios import embedded_to_entry_past_only_scenario
    batch = embedded_to_entry_past_only_batch_scenario(base)
    return [batch] + [{**sc, "keepQueues": True, "name": f"{sc['name']}-kept"}
                      for sc in (embedded_to_entry_past_only_scenario(base), batch)]


def embedded_to_entry_past_only_batch_message() -> tuple[int, bytes]:
    """Where the reput of the -to-entry-past-only-batch store is set (that of -to-entry-past: processOffset - 1) and
    the :data:`PAST_ONLY_BATCH_TOPIC`/0 message there (``INNER_BASE``/``INNER_NUM`` those of
    :data:`broker_dledger_inside_scenarios.BATCH_INNER`'s second), ending at B9's entry (its properties string ends
    with the host record's tail)."""
    from broker_dledger_inside_light_scenarios import to_entry_past_only_message
    base, num = BATCH_INNER[1]
    props = f"INNER_NUM\x01{num}\x02INNER_BASE\x01{base}\x02KEYS\x01E5".encode()
    return to_entry_past_only_message(PAST_ONLY_BATCH_TOPIC, props, base)


def embedded_to_entry_past_only_batch_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-past-only-batch`` (5.5.1): the -to-entry-past store
    (:func:`broker_dledger_inside_scenarios.embedded_to_entry_past_scenario`: its damaged last message ends the walk,
    the parsed message ends at B9's entry) with the parsed and the damaged message for the BatchCQ topic
    :data:`PAST_ONLY_BATCH_TOPIC`, queue 0, which no other message goes to: a batch queue the walk wrote no unit of,
    only a record past its end."""
    from broker_dledger_inside_light_scenarios import to_entry_past_only_scenario
    only = to_entry_past_only_scenario(sc, PAST_ONLY_BATCH_TOPIC, embedded_to_entry_past_only_batch_message()[1])
    return {**only, "batchTopics": [*only["batchTopics"], PAST_ONLY_BATCH_TOPIC], "name": f"{only['name']}-batch"}

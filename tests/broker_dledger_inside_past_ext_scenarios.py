"""Inside-entry DLedger crash scenarios (5.5.1, the queues kept: ``keepQueues``) of a consume queue on disk before the
walk that only records past the walk's end go to, with consume queue ext files (``enableConsumeQueueExt``, ext files
of 204 bytes) holding ext units with filter bitmaps (``CqExtUnit`` of 46 bytes: a broker that ran with
``enableCalcFilterBitMap=true``; the restart's puts, without it, are 20 bytes): the -to-entry-past-only store
(:func:`broker_dledger_inside_light_scenarios.embedded_to_entry_past_only_scenario`) with TZ/0's files planted:

- ``-to-entry-past-only-held-bitmap``: TZ/0's consume queue file holding
  :data:`broker_dledger_inside_only_past_held_scenarios.HELD_UNIT` whose tags code is the address of the planted ext
  unit at :data:`BITMAP_MID` (46), its two ext files planted (:func:`bitmap_ext_files`): ``ConsumeQueueExt.recover``
  ends in the second file, ``truncateByMaxAddress`` with that address moves the end back to 92 (no 20-byte unit's
  boundary), deleting the second file; the reput's 20-byte ext units go at 92 and 112;
- ``-to-entry-past-only-held-bitmap-end``: the same with the address of the unit at :data:`BITMAP_LAST` (138): the
  end at 184, where a 20-byte unit leaves fewer than 4 bytes of the file: ``fullFillToEnd``, the reput's ext units go
  at 204 (the new second file's start) and 224.

And, for the claim that a 5.5.1 queue so on disk whose files the cut deletes is the rebuild's own dispatch's:
``-to-entry-past-only-kept-ext``, the -to-entry-past-only store with the queues kept and ext files (of 204 bytes),
as the broker wrote them (TZ/0's file holding the damaged record's unit, its ext unit at 0).

And, for ``dledger_inside_past.past_no_file``'s gate: ``-light-mixed-emptied-past``
(:func:`light_mixed_emptied_past_scenario`), a queue holding own and light units the cut leaves no file of, records
past the walk's end whose light queue offsets lie below where the walk's units leave it.

:func:`broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios` lists them (:func:`past_ext_scenarios`).
"""
from __future__ import annotations

import base64

# the planted ext units: 46 bytes each (size, tags code, store time, bitmap size 26, a 26-byte bitmap)
BITMAP_UNIT = 46
BITMAP_STORE_TIME = 1_700_000_000_000
# the first ext file's four units (0, 46, 92, 138), then the short -1 at 184 (fullFillToEnd: a fifth did not fit), the
# second file's two (204, 250)
BITMAP_FIRST = (0, 46, 92, 138)
BITMAP_SECOND = (204, 250)
BITMAP_MID = 46
BITMAP_LAST = 138
EXT_SIZE = 204


def bitmap_unit(k: int) -> bytes:
    """A planted ext unit with a filter bitmap (CqExtUnit.write: size 46, tags code ``k``, the store time, bitmap size
    26, the bitmap)."""
    bitmap = bytes((k + i) % 251 + 1 for i in range(BITMAP_UNIT - 20))
    return BITMAP_UNIT.to_bytes(2, "big") + k.to_bytes(8, "big") + BITMAP_STORE_TIME.to_bytes(8, "big") + \
        (BITMAP_UNIT - 20).to_bytes(2, "big") + bitmap


def bitmap_ext_files() -> dict[int, bytes]:
    """TZ/0's planted ext files by start offset: the first holding the units of :data:`BITMAP_FIRST` and the short -1
    after them, the second those of :data:`BITMAP_SECOND`."""
    first = b"".join(bitmap_unit(k) for k in range(len(BITMAP_FIRST))) + (-1).to_bytes(2, "big", signed=True)
    second = b"".join(bitmap_unit(10 + k) for k in range(len(BITMAP_SECOND)))
    return {0: first + bytes(EXT_SIZE - len(first)), EXT_SIZE: second + bytes(EXT_SIZE - len(second))}


def past_ext_scenarios(base: dict) -> list[dict]:
    """On the -emptied-batch-embedded store ``base`` (5.5.1): the module's four stores."""
    from broker_dledger_inside_light_scenarios import PAST_ONLY_TOPIC, embedded_to_entry_past_only_scenario
    from broker_dledger_inside_only_past_held_scenarios import HELD_UNIT
    only = embedded_to_entry_past_only_scenario(base)
    config = {**only["config"], "enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": str(EXT_SIZE)}
    size = int(only["config"]["mappedFileSizeConsumeQueue"])
    out = []
    for suffix, at in (("", BITMAP_MID), ("-end", BITMAP_LAST)):
        address = at - (1 << 63)   # ConsumeQueueExt.decorate
        unit = HELD_UNIT[0].to_bytes(8, "big") + HELD_UNIT[1].to_bytes(4, "big") + \
            address.to_bytes(8, "big", signed=True)
        plant = {f"consumequeue/{PAST_ONLY_TOPIC}/0/{0:020d}": base64.b64encode(unit + bytes(size - 20)).decode()}
        plant.update({f"consumequeue_ext/{PAST_ONLY_TOPIC}/0/{start:020d}": base64.b64encode(data).decode()
                      for start, data in bitmap_ext_files().items()})
        out.append({**only, "config": config, "keepQueues": True, "name": f"{only['name']}-held-bitmap{suffix}",
                    "plantFiles": plant})
    out.append({**only, "config": config, "keepQueues": True, "name": f"{only['name']}-kept-ext"})
    return [*out, light_mixed_emptied_past_scenario(base)]


# -light-mixed-emptied-past: the light queue offsets (in %LMQ%q1) of the two T0/0 messages after the last one, the
# first damaged: 1 lies below the write position the walk's two units leave (40), 10 at the broker's after the reput
# put the parsed unit and the two cut ones (200)
GATE_PAST_LIGHT = (1, 10)


def light_mixed_emptied_past_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-light-mixed-emptied-past`` (5.5.1): the -light-mixed-emptied
    store (:func:`broker_dledger_inside_mixed_replay_scenarios.embedded_light_mixed_emptied_scenario`) with two more
    T0/0 messages after its last one, both also to %LMQ%q1 (light queue offsets :data:`GATE_PAST_LIGHT`, keys ``kD``,
    ``kE``), the first damaged: the walk ends there, both records past its end; their light queue offsets come from
    ``lmqTopicQueueTable``, not the counter of the queue's own units, so the first lies below where the walk's units
    leave the queue (the ``past_no_file`` gate's case, in one broker life)."""
    from broker_dledger_inside_mixed_replay_scenarios import embedded_light_mixed_emptied_scenario
    base = embedded_light_mixed_emptied_scenario(sc)
    tail = base["messages"][-1]
    assert tail["properties"]["INNER_MULTI_DISPATCH"] == "%LMQ%q1", tail
    more = [{**tail, "keys": f"k{k}", "uniqKey": f"7F00000100002A9F00000000099{n}",
             "properties": {**tail["properties"], "INNER_MULTI_QUEUE_OFFSET": str(lo)}}
            for k, n, lo in zip("DE", (3, 4), GATE_PAST_LIGHT)]
    puts = sum(1 for m in base["messages"] if "topic" in m)
    return {**base, "messages": [*base["messages"], *more], "damageMessage": puts, "name": f"{base['name']}-past"}

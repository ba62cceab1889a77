"""Inside-entry DLedger crash scenarios of a consume queue on disk before the walk that only records past the walk's
end go to, a file of it left by the cut (:mod:`broker_dledger_inside_only_past_held_scenarios`), with consume queue
ext files (5.5.1, ``enableConsumeQueueExt``, ext files of 10 units, the queues kept: ``keepQueues``):

- ``-to-entry-past-only-held-ext``: the -to-entry-past-only store
  (:func:`broker_dledger_inside_light_scenarios.embedded_to_entry_past_only_scenario`) with those ext files, TZ/0's
  consume queue file planted holding :data:`broker_dledger_inside_only_past_held_scenarios.HELD_UNIT` whose tags code
  is the ext address of the second ext unit (:data:`HELD_EXT_AT`), its ext file planted holding
  :data:`HELD_EXT_UNITS` units: ``ConsumeQueueExt.recover`` walks them all, ``truncateByMaxAddress`` with that
  address moves the end back to after the second one, where the reput's ext units go.

On 5.3.3 (:func:`kept_past_only_emptied_scenario`): ``-emptied-kept-embedded-to-entry-past-only-emptied``, the
5.3.3 -to-entry-past-only-held store
(:func:`broker_dledger_inside_only_past_held_scenarios.kept_past_only_held_scenario`) whose planted TZ/0 file holds
one unit at ``processOffset`` instead (:func:`deleted_unit`): the cut deletes the file, the 5.3.3 max stays at
``processOffset``; and ``-emptied-kept-embedded-to-entry-past-only-emptied-ext``, that store with ext files, the
planted unit's tags code the address of ext unit 1, its ext file planted as -held-ext's.

:func:`broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios` lists them
(:func:`only_past_more_scenarios`, :func:`kept_past_only_emptied_scenarios`).
"""
from __future__ import annotations

import base64

# ext files of 204 bytes: 10 units each (as the other -ext stores)
EXT_HELD = {"enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": "204"}
# the planted ext file's units (20 bytes each: size, tags code, store time, no bitmap) and the real offset of the one
# the planted consume queue unit's tags code points at (ConsumeQueueExt.decorate)
HELD_EXT_UNITS = 4
HELD_EXT_AT = 20
HELD_EXT_STORE_TIME = 1_700_000_000_000


def ext_unit(k: int) -> bytes:
    """The ``k``-th planted ext unit (CqExtUnit.write: size 20, tags code k, the store time, bitmap size 0)."""
    return (20).to_bytes(2, "big") + k.to_bytes(8, "big") + HELD_EXT_STORE_TIME.to_bytes(8, "big") + bytes(2)


def only_past_more_scenarios(base: dict) -> list[dict]:
    """On the -emptied-batch-embedded store ``base`` (5.5.1): ``-to-entry-past-only-held-ext``."""
    from broker_dledger_inside_light_scenarios import PAST_ONLY_TOPIC, embedded_to_entry_past_only_scenario
    from broker_dledger_inside_only_past_held_scenarios import HELD_UNIT
    only = embedded_to_entry_past_only_scenario(base)
    size = int(only["config"]["mappedFileSizeConsumeQueue"])
    ext_size = int(EXT_HELD["mappedFileSizeConsumeQueueExt"])
    address = HELD_EXT_AT - (1 << 63)   # ConsumeQueueExt.decorate
    unit = HELD_UNIT[0].to_bytes(8, "big") + HELD_UNIT[1].to_bytes(4, "big") + address.to_bytes(8, "big", signed=True)
    ext = b"".join(ext_unit(k) for k in range(HELD_EXT_UNITS))
    return [{**only, "config": {**only["config"], **EXT_HELD}, "keepQueues": True,
             "name": f"{only['name']}-held-ext", "plantFiles": {
                 f"consumequeue/{PAST_ONLY_TOPIC}/0/{0:020d}": base64.b64encode(unit + bytes(size - 20)).decode(),
                 f"consumequeue_ext/{PAST_ONLY_TOPIC}/0/{0:020d}":
                     base64.b64encode(ext + bytes(ext_size - len(ext))).decode()}}]


def deleted_unit() -> tuple[int, int, int]:
    """The unit planted in TZ/0's file on 5.3.3: the message at ``processOffset`` (where the reput is set,
    :func:`broker_dledger_inside_only_past_held_scenarios.kept_past_only_message`), its commitlog offset, size and tags
    code 0, as a queue that had dispatched it would hold it; at ``processOffset``, so the cut deletes the file."""
    from broker_dledger_inside_only_past_held_scenarios import kept_past_only_message
    reput, msg = kept_past_only_message()
    return reput, len(msg), 0


def kept_past_only_emptied_scenarios(sc: dict) -> list[dict]:
    """From the 5.3.3 -emptied-kept-embedded store ``sc``: :func:`kept_past_only_emptied_scenario` and its ``-ext``
    (ext files of 10 units, the planted unit's tags code the address of ext unit 1, TZ/0's ext file planted holding
    :data:`HELD_EXT_UNITS` units)."""
    from broker_dledger_inside_light_scenarios import PAST_ONLY_TOPIC
    emptied = kept_past_only_emptied_scenario(sc)
    size = int(emptied["config"]["mappedFileSizeConsumeQueue"])
    ext_size = int(EXT_HELD["mappedFileSizeConsumeQueueExt"])
    offset, length, _tags = deleted_unit()
    address = HELD_EXT_AT - (1 << 63)   # ConsumeQueueExt.decorate
    unit = offset.to_bytes(8, "big") + length.to_bytes(4, "big") + address.to_bytes(8, "big", signed=True)
    ext = b"".join(ext_unit(k) for k in range(HELD_EXT_UNITS))
    return [emptied, {**emptied, "config": {**emptied["config"], **EXT_HELD}, "name": f"{emptied['name']}-ext",
                      "plantFiles": {
                          f"consumequeue/{PAST_ONLY_TOPIC}/0/{0:020d}":
                              base64.b64encode(unit + bytes(size - 20)).decode(),
                          f"consumequeue_ext/{PAST_ONLY_TOPIC}/0/{0:020d}":
                              base64.b64encode(ext + bytes(ext_size - len(ext))).decode()}}]


def kept_past_only_emptied_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-kept-embedded-to-entry-past-only-emptied`` (5.3.3, the queues kept), from the
    -emptied-kept-embedded store ``sc``: the -to-entry-past-only-held store whose planted TZ/0 file (at 0) holds
    :func:`deleted_unit` alone."""
    from broker_dledger_inside_light_scenarios import PAST_ONLY_TOPIC
    from broker_dledger_inside_only_past_held_scenarios import kept_past_only_held_scenario
    held = kept_past_only_held_scenario(sc)
    size = int(held["config"]["mappedFileSizeConsumeQueue"])
    offset, length, tags = deleted_unit()
    unit = offset.to_bytes(8, "big") + length.to_bytes(4, "big") + tags.to_bytes(8, "big")
    return {**held, "name": f"{sc['name']}-to-entry-past-only-emptied", "plantFiles": {
        f"consumequeue/{PAST_ONLY_TOPIC}/0/{0:020d}": base64.b64encode(unit + bytes(size - 20)).decode()}}

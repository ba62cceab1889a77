"""Inside-entry DLedger crash scenarios of a consume queue (not a batch one) on disk before the walk that only records
past the walk's end go to, a file of it left by the cut (5.5.1, the queues kept: ``keepQueues``; the harness's
``plantFiles`` puts its files in): the -to-entry-past-only store
(:func:`broker_dledger_inside_light_scenarios.embedded_to_entry_past_only_scenario`: the walk, ended by the damaged
last message, wrote no unit of :data:`broker_dledger_inside_light_scenarios.PAST_ONLY_TOPIC`/0; the parsed message,
queue offset :data:`broker_dledger_inside_scenarios.TO_ENTRY_QUEUE_OFFSET`, and the damaged one, queue offset 0, go
to it) with that queue's files replaced before the restart by planted ones holding :data:`HELD_UNIT` (another
queue's record, below processOffset), which ``ConsumeQueue.truncateDirtyLogicFiles`` keeps:

- ``-to-entry-past-only-held``: one file at 0 holding that unit alone (write position 20, max its end);
- ``-to-entry-past-only-held-full``: one file at 0 full of it (write position 220, a file's end: the parsed unit goes
  into the file ``getLastMappedFile`` creates at 220);
- ``-to-entry-past-only-held-over``: the 91 files from 0 to 19800 full of it (write position 20020, past the parsed
  unit's queue offset * 20: ``putMessagePositionInfo`` drops it, the damaged record's unit goes to a new file at
  20020; ``ConsumeQueue.recover`` reads the last three).

On 5.3.3 (:func:`kept_past_only_held_scenario`): ``-emptied-kept-embedded-to-entry-past-only-held``, the
-emptied-kept-embedded store with the TZ/0 message where the reput is set (``processOffset``, the max the 5.3.3 cut
keeps for T9/0, which it empties) and a damaged TZ/0 message after the last one, TZ/0's file planted as -held's.

:func:`broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios` lists them (:func:`only_past_held_scenarios`,
:func:`kept_past_only_held_scenario`).
"""
from __future__ import annotations

import base64

# the planted unit (commitlog offset, size, tags code): the first data file's first record, another queue's (the test
# checks it against the log; ConsumeQueue.recover reads no commitlog)
HELD_UNIT = (48, 440, 0)
# -held-over: the last planted file's start (the files from 0 on, full: their units end at queue byte 20020, past
# TO_ENTRY_QUEUE_OFFSET * 20)
OVER_FILE = 19800


def only_past_held_scenarios(base: dict) -> list[dict]:
    """On the -emptied-batch-embedded store ``base`` (5.5.1): the module's three stores."""
    from broker_dledger_inside_light_scenarios import PAST_ONLY_TOPIC, embedded_to_entry_past_only_scenario
    only = embedded_to_entry_past_only_scenario(base)
    size = int(only["config"]["mappedFileSizeConsumeQueue"])
    unit = HELD_UNIT[0].to_bytes(8, "big") + HELD_UNIT[1].to_bytes(4, "big") + HELD_UNIT[2].to_bytes(8, "big")
    full = unit * (size // len(unit))
    assert len(full) == size and (OVER_FILE + size) // 20 > 1000 and OVER_FILE % size == 0
    out = []
    for suffix, files in (("", {0: unit + bytes(size - len(unit))}), ("-full", {0: full}),
                          ("-over", dict.fromkeys(range(0, OVER_FILE + 1, size), full))):
        out.append({**only, "keepQueues": True, "name": f"{only['name']}-held{suffix}", "plantFiles": {
            f"consumequeue/{PAST_ONLY_TOPIC}/0/{start:020d}": base64.b64encode(data).decode()
            for start, data in files.items()}})
    return out


def kept_past_only_message() -> tuple[int, bytes]:
    """Where the reput of the 5.3.3 -own-to-entry store is set (``processOffset``, the max the 5.3.3 cut keeps for
    T9/0, the queue it empties) and a message there for :data:`broker_dledger_inside_light_scenarios.PAST_ONLY_TOPIC`/0
    (queue offset :data:`broker_dledger_inside_scenarios.TO_ENTRY_QUEUE_OFFSET`) whose properties string swallows the
    host record's tail, ending where the last (T9/0) message's entry starts."""
    from broker_dledger_2gib import embedded_message
    from broker_dledger_inside_light_scenarios import PAST_ONLY_TOPIC
    from broker_dledger_inside_scenarios import (
        EMBED_HOST_AT,
        EMBED_HOST_BODY,
        EMBED_PROCESS_OFFSET,
        TO_ENTRY_HOST_TAIL,
        TO_ENTRY_QUEUE_OFFSET,
    )
    reput = EMBED_PROCESS_OFFSET
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    props = b"KEYS\x01E5" + TO_ENTRY_HOST_TAIL
    body = (b"embedded!!" * 200)[:host_end - reput - 88 - 3 - 2 - len(props)]
    msg = embedded_message(reput, body, props, topic=PAST_ONLY_TOPIC.encode(), queue_offset=TO_ENTRY_QUEUE_OFFSET)
    assert reput + len(msg) == host_end, (reput, len(msg), host_end)
    return reput, msg


def kept_past_only_held_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-kept-embedded-to-entry-past-only-held`` (5.3.3, the queues kept), from the
    -emptied-kept-embedded store ``sc``: where the reput is set (``processOffset``) the
    :func:`kept_past_only_message` TZ/0 message, ending at the last (T9/0) message's entry, then one more message
    after that last one, for TZ/0, damaged (the walk ends there: a record past its end); TZ/0's file planted holding
    :data:`HELD_UNIT` alone (below processOffset: the cut keeps it, write position 20)."""
    import base64 as b64

    from broker_dledger_inside_light_scenarios import PAST_ONLY_TOPIC
    from broker_dledger_inside_scenarios import EMBED_HOST_BODY, TO_ENTRY_HOST_TAIL
    _reput, msg = kept_past_only_message()
    *rest, host, last = sc["messages"]
    assert all(m.get("topic") != PAST_ONLY_TOPIC for m in sc["messages"])
    hb = bytearray(b"x" * EMBED_HOST_BODY)
    head = msg[:-len(TO_ENTRY_HOST_TAIL)]
    hb[len(hb) - len(head):] = head
    tail = {**last, "topic": PAST_ONLY_TOPIC, "keys": "kZ", "uniqKey": "7F00000100002A9F00000000099A"}
    msgs = [*rest, {**host, "body": b64.b64encode(bytes(hb)).decode()}, last, tail]
    size = int(sc["config"]["mappedFileSizeConsumeQueue"])
    unit = HELD_UNIT[0].to_bytes(8, "big") + HELD_UNIT[1].to_bytes(4, "big") + HELD_UNIT[2].to_bytes(8, "big")
    return {**sc, "messages": msgs, "damageMessage": sum(1 for m in msgs if "topic" in m) - 1, "keepQueues": True,
            "name": f"{sc['name']}-to-entry-past-only-held", "plantFiles": {
                f"consumequeue/{PAST_ONLY_TOPIC}/0/{0:020d}": b64.b64encode(unit + bytes(size - len(unit))).decode()}}

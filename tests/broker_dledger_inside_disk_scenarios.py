"""The inside-entry DLedger crash scenarios whose parsed message goes to a queue on disk before the walk (5.5.1,
``keepQueues``; the harness's ``plantFiles`` puts queue files of their own into some): ``-own-kept``, ``-own-held``
and its ``-earlier``, ``-shifted`` and ``-disk`` variants, ``-to-entry-shifted(-file)``, ``-to-entry-past(-cut)-kept``.
Built on the stores of :mod:`broker_dledger_inside_scenarios`, whose ``emptied_embedded_abort_scenarios`` lists
them (:func:`disk_scenarios`)."""
from __future__ import annotations

import base64

from broker_dledger_inside_scenarios import (
    EARLIER_RETOPIC,
    EMBED_HOST_AT,
    EMBED_HOST_BODY,
    EMBED_OWN_QUEUE_OFFSET,
    EMBED_PROCESS_OFFSET,
    TO_ENTRY_TAIL_BODY,
    embedded_to_entry_emptied_scenario,
    embedded_to_entry_past_cut_scenario,
    embedded_to_entry_past_scenario,
)


def disk_scenarios(sc: dict) -> list[dict]:
    """This module's stores, built on the -emptied-batch-embedded store ``sc``."""
    return [embedded_own_kept_scenario(sc), embedded_own_held_scenario(sc), *embedded_own_held_earlier_scenarios(sc),
            embedded_own_held_shifted_scenario(sc), *embedded_to_entry_shifted_scenarios(sc),
            *embedded_own_held_disk_scenarios(sc), *embedded_past_kept_scenarios(sc)]


def embedded_own_kept_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-own-kept`` (5.5.1, the queues kept: ``keepQueues``), from the
    -emptied-batch-embedded store ``sc``: a last message after B9's to a topic of its own, T8/0 (the cut empties that
    queue, on disk before the walk: no file left, ``correctMinOffset`` sets its max to -1), and where the reput is
    set (processOffset - 1, moved on by that message's 300 bytes) a well-formed T8/0 message (queue offset
    :data:`EMBED_OWN_QUEUE_OFFSET`), then 'x' bytes."""
    from broker_dledger_2gib import embedded_message
    reput = EMBED_PROCESS_OFFSET + 88 + TO_ENTRY_TAIL_BODY + 3 + 2 + 46 - 1
    msg = embedded_message(reput, topic=b"T8", queue_offset=EMBED_OWN_QUEUE_OFFSET)
    *rest, host, b9 = sc["messages"]
    body = bytearray(b"x" * EMBED_HOST_BODY)
    body[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(msg)] = msg
    tail = {**b9, "topic": "T8", "queueId": 0, "body": base64.b64encode(b"t" * TO_ENTRY_TAIL_BODY).decode(),
            "keys": "kT", "uniqKey": "7F00000100002A9F000000000997"}
    return {**sc, "messages": [*rest, {**host, "body": base64.b64encode(bytes(body)).decode()}, b9, tail],
            "keepQueues": True, "name": f"{sc['name']}-own-kept"}


def embedded_own_held_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-own-held`` (5.5.1, the queues kept): the -own-kept store with the
    last message before the host (in the last data file, below processOffset) sent to T8/0 too, so that the cut
    leaves T8/0, on disk before the walk, its file and that unit (queue offset 0), taking only the last message's;
    the T8/0 message where the reput is set (queue offset :data:`EMBED_OWN_QUEUE_OFFSET`) lands at the write position
    the cut left, over the cut unit."""
    own = embedded_own_kept_scenario(sc)
    *rest, host, b9, tail = own["messages"]
    rest[-1] = {**rest[-1], "topic": "T8", "queueId": 0}
    return {**own, "messages": [*rest, host, b9, tail], "name": f"{sc['name']}-own-held"}


# -emptied-batch-embedded-own-held-earlier: the message of the first data file (not walked) that goes to T8/0 instead
# (as long a topic as T0 or T1: the same layout)
OWN_EARLIER_MESSAGE = 10


def embedded_own_held_earlier_scenarios(sc: dict) -> list[dict]:
    """``<line>-dledger-abort-emptied-batch-embedded-own-held-earlier`` (5.5.1, the queues kept): the -own-kept store
    with message :data:`OWN_EARLIER_MESSAGE` of the first data file (before the walk's start: its checkpoint matches
    the last data file) sent to T8/0 too, so that T8/0, on disk before the walk, has no unit below processOffset in
    the walk's last data file: the cut leaves its file with that earlier unit (queue offset 0) and takes the last
    message's; the T8/0 message where the reput is set (queue offset :data:`EMBED_OWN_QUEUE_OFFSET`) lands at the write
    position the cut left, over the cut unit.  ``-own-held-earlier-walked``: the same with the -earlier store's
    ``messageIndexSafe=true`` and index files of 250 entries (the walk starts at the first data file: it holds that
    earlier unit)."""
    own = embedded_own_kept_scenario(sc)
    msgs = [{**m, "topic": "T8", "queueId": 0} if i == OWN_EARLIER_MESSAGE else m
            for i, m in enumerate(own["messages"])]
    earlier = {**own, "messages": msgs, "name": f"{sc['name']}-own-held-earlier"}
    return [earlier, {**earlier, "config": {**earlier["config"], "messageIndexSafe": "true", "maxIndexNum": "250"},
                      "name": f"{earlier['name']}-walked"}]


# -emptied-batch-embedded-own-held-shifted: the T8/0 units (commitlog offset, size) of the -own-held store's last
# message before the host and of its last message (the test checks them against the log's records), which the planted
# T8/0 file holds at queue bytes 0 and 20, one unit behind those records' queue offsets (1 and 2)
SHIFTED_UNITS = ((78375, 330), (83219, 300))


def embedded_own_held_shifted_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-own-held-shifted`` (5.5.1, the queues kept): the -own-held store
    with message :data:`OWN_EARLIER_MESSAGE` of the first data file sent to T8/0 too (queue offset 0, the other two
    T8/0 messages 1 and 2), and T8/0's file on disk replaced before the restart (``plantFiles``) by one holding only
    the units of those two (:data:`SHIFTED_UNITS`), at 0 and 20: the cut leaves it write position 20 (max the first
    one's end), where the walk's queue offsets put 40; the T8/0 message where the reput is set (queue offset
    :data:`EMBED_OWN_QUEUE_OFFSET`) lands at 20, over the cut unit."""
    held = embedded_own_held_scenario(sc)
    msgs = [{**m, "topic": "T8", "queueId": 0} if i == OWN_EARLIER_MESSAGE else m
            for i, m in enumerate(held["messages"])]
    units = b"".join(o.to_bytes(8, "big") + n.to_bytes(4, "big") + bytes(8) for o, n in SHIFTED_UNITS)
    file = units + bytes(int(held["config"]["mappedFileSizeConsumeQueue"]) - len(units))
    return {**held, "messages": msgs, "name": f"{sc['name']}-own-held-shifted",
            "plantFiles": {f"consumequeue/T8/0/{0:020d}": base64.b64encode(file).decode()}}


# -emptied-batch-embedded-own-held-disk-*: the T8/0 unit (commitlog offset, size) of message OWN_EARLIER_MESSAGE of the
# first data file (queue offset 0; the test checks it against the log's record)
EARLIER_UNIT = (3996, 401)


def embedded_own_held_disk_scenarios(sc: dict) -> list[dict]:
    """``<line>-dledger-abort-emptied-batch-embedded-own-held-disk-appended``, ``-disk-skipped`` and ``-disk-older``
    (5.5.1, the queues kept): the -own-held-shifted store (T8/0's queue offsets 0, in the first data file:
    :data:`EARLIER_UNIT`, 1 below processOffset and 2 past it, :data:`SHIFTED_UNITS`) with T8/0's file planted
    before the restart holding the first unit only (``-appended``: loaded max its end, write position 20), or that
    unit and queue offset 2's (``-skipped``: loaded max past processOffset, write position 40).  The cut on the
    planted file alone leaves both at write position 20, max the first unit's end, below where the walk's unit of
    queue offset 1 ends: the walk appends that unit at 20 in the first (the parsed unit then at 40) and skips it
    below the loaded max in the second (the parsed unit at 20).  ``-disk-older``: T8/0 planted with four files, the
    first holding that first unit only, the next three full of queue offset 2's unit (past processOffset;
    ``ConsumeQueue.recover`` reads the last three): the walk skips its units below that loaded max, the cut deletes
    those three and goes on into the first, older than the files recover read (write position 20, the parsed unit
    there)."""
    shifted = embedded_own_held_shifted_scenario(sc)
    size = int(shifted["config"]["mappedFileSizeConsumeQueue"])
    out = []
    full = (SHIFTED_UNITS[1],) * (size // 20)
    for suffix, planted in (("-appended", ((EARLIER_UNIT,),)), ("-skipped", ((EARLIER_UNIT, SHIFTED_UNITS[1]),)),
                            ("-older", ((EARLIER_UNIT,), full, full, full))):
        files = {}
        for k, held in enumerate(planted):
            units = b"".join(o.to_bytes(8, "big") + n.to_bytes(4, "big") + bytes(8) for o, n in held)
            files[f"consumequeue/T8/0/{k * size:020d}"] = base64.b64encode(units + bytes(size - len(units))).decode()
        out.append({**shifted, "name": f"{sc['name']}-own-held-disk{suffix}", "plantFiles": files})
    return out


# -to-entry-shifted-file: the last ten records before the host (commitlog offset, size; the last one
# SHIFTED_UNITS[0]), which go to T8/0 too (the test checks them against the log's records)
SHIFTED_RUN = ((74816, 312), (75176, 295), (75519, 387), (75954, 363), (76365, 375), (76788, 300), (77136, 284),
               (77468, 437), (77953, 374), (78375, 330))


def embedded_to_entry_shifted_scenarios(sc: dict) -> list[dict]:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-shifted`` (5.5.1, the queues kept): the -to-entry-emptied
    store (its last message and the one where the reput is set, which ends at B9's entry, for T8/0) with messages
    :data:`EARLIER_RETOPIC` of the first data file and the last one before the host sent to T8/0 too (queue offsets
    0, 1, 2; the last message 3), and T8/0's file replaced before the restart (``plantFiles``) by one holding only the
    last two units (:data:`SHIFTED_UNITS`), at 0 and 20: the cut leaves write position 20, the parsed unit goes
    there, and the reput, going on at B9's entry, dispatches the cut unit (queue offset 3) again, at 40, not where
    the walk's queue offsets or the file had it.  ``-to-entry-shifted-file``: the same with message 10 of the first
    data file and the last ten before the host (:data:`SHIFTED_RUN`) for T8/0 (queue offsets 0 to 10, the last
    message 11), the planted file holding the units of those ten and of the last message (a full file, 11 units):
    the cut leaves write position 200, the parsed unit goes there, and the cut unit the reput dispatches again
    (queue offset 11) goes to 220, the first unit of a file ``getLastMappedFile`` creates."""
    out = []
    for suffix, picked, planted in (("-shifted", {*EARLIER_RETOPIC, -1}, SHIFTED_UNITS),
                                    ("-shifted-file", {10, *range(-len(SHIFTED_RUN), 0)},
                                     (*SHIFTED_RUN, SHIFTED_UNITS[1]))):
        sc2 = embedded_to_entry_emptied_scenario(sc, suffix=suffix)
        *rest, host, b9, tail = sc2["messages"]
        rest = [{**m, "topic": "T8", "queueId": 0} if i in picked or i - len(rest) in picked else m
                for i, m in enumerate(rest)]
        units = b"".join(o.to_bytes(8, "big") + n.to_bytes(4, "big") + bytes(8) for o, n in planted)
        file = units + bytes(int(sc2["config"]["mappedFileSizeConsumeQueue"]) - len(units))
        out.append({**sc2, "messages": [*rest, host, b9, tail], "keepQueues": True,
                    "plantFiles": {f"consumequeue/T8/0/{0:020d}": base64.b64encode(file).decode()}})
    return out


def embedded_past_kept_scenarios(sc: dict) -> list[dict]:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-past-kept`` and ``-to-entry-past-cut-kept`` (5.5.1): the
    -to-entry-past and -to-entry-past-cut stores with the queues kept (``keepQueues``): T0/0, the parsed message's
    queue, on disk before the walk, with records past the walk's end the reput dispatches."""
    return [{**s, "keepQueues": True, "name": f"{s['name']}-kept"}
            for s in (embedded_to_entry_past_scenario(sc), embedded_to_entry_past_cut_scenario(sc))]

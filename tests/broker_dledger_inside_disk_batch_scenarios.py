"""More inside-entry DLedger crash scenarios of queues on disk before the walk (5.5.1, ``keepQueues``; the harness's
``plantFiles`` puts queue files of their own into some): an ordinary queue the walk also wrote in an earlier data file
than its last, with a walk unit below processOffset ending past the max the cut leaves its files
(``-own-held-disk-appended-walked``, ``-own-held-disk-skipped-walked``, ``-own-held-disk-below-walked``), and a
batch queue on disk before the walk that the walk wrote in an earlier data file only (``-earlier-batch-only-kept``) or
with files elsewhere than the walk's units (``-batch-held-shifted``; its cut unit dispatched again, and a record past
the walk's end: ``-batch-held-shifted-to-entry``, ``-to-entry-past``), or that the cut leaves no file of: its file
at a later queue position (``-batch-planted-later``), or written by the walk in an earlier data file only
(``-earlier-batch-only-kept-emptied``).
Built on the stores of :mod:`broker_dledger_inside_disk_scenarios` and :mod:`broker_dledger_inside_batch_scenarios`;
:func:`broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios` lists them (:func:`disk_batch_scenarios`)."""
from __future__ import annotations

import base64

from broker_dledger_inside_disk_scenarios import embedded_own_held_disk_scenarios

# -own-held-disk-below-walked: the unit T8/0's planted file holds (commitlog offset, size): the first data file's first
# record (another queue's; ConsumeQueue.recover reads no commitlog), ending below T8/0's unit of queue offset 0
BELOW_UNIT = (48, 440)


def disk_batch_scenarios(sc: dict) -> list[dict]:
    """This module's stores, built on the -emptied-batch-embedded store ``sc``."""
    return [*embedded_own_held_disk_walked_scenarios(sc), embedded_earlier_batch_only_kept_scenario(sc),
            embedded_batch_held_shifted_scenario(sc), embedded_batch_held_shifted_to_entry_scenario(sc),
            embedded_batch_held_shifted_to_entry_scenario(sc, past=True), embedded_batch_planted_later_scenario(sc),
            embedded_earlier_batch_only_kept_emptied_scenario(sc)]


# -batch-held-shifted: B7/0's planted file, its unit of the last message before the host (commitlog offset, size,
# tags code, store time (any: recover reads none), batch base offset, batch size, compacted offset, reserved: as the
# -batch-held store's; the test checks offset and size against the log) and a unit at the host record (below
# processOffset) after it
HELD_B7_UNIT = (78375, 330, 0, 1795975756917, 0, 1, -1, 0)
HELD_B7_HOST_UNIT = (78841, 330, 0, 1795975756917, 1, 1, -1, 0)


def embedded_batch_held_shifted_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-batch-held-shifted`` (5.5.1, the queues kept): the -batch-held
    store with B7/0's file replaced before the restart (``plantFiles``) by one holding :data:`HELD_B7_UNIT` and
    :data:`HELD_B7_HOST_UNIT`: loaded max the host record's start (below processOffset), write position 92; the walk
    skips its first B7/0 unit and appends the last (past processOffset) at 92, which the cut takes: write position
    92, max the host record's start, where the walk's units would leave write position 46."""
    import struct

    from broker_dledger_inside_scenarios import embedded_batch_held_scenario
    held = embedded_batch_held_scenario(sc)
    units = b"".join(struct.pack(">qiqqqhii", *u) for u in (HELD_B7_UNIT, HELD_B7_HOST_UNIT))
    size = int(held["config"].get("mapperFileSizeBatchConsumeQueue", 300000 * 46))   # the store's default
    file = units + bytes(size - len(units))
    return {**held, "name": f"{held['name']}-shifted", "plantFiles": {
        f"batchconsumequeue/B7/0/{0:020d}": base64.b64encode(file).decode()}}


def embedded_earlier_batch_only_kept_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-earlier-batch-only-kept`` (5.5.1): the -earlier-batch-only store
    (:func:`broker_dledger_inside_batch_scenarios.embedded_earlier_batch_only_scenario`: the walk wrote B7/0 in the
    first data file only) with the queues kept (``keepQueues``): B7/0, the parsed message's batch queue, on disk
    before the walk with that one unit."""
    from broker_dledger_inside_batch_scenarios import embedded_earlier_batch_only_scenario
    only = embedded_earlier_batch_only_scenario(sc)
    return {**only, "keepQueues": True, "name": f"{only['name']}-kept"}


def embedded_own_held_disk_walked_scenarios(sc: dict) -> list[dict]:
    """``<line>-dledger-abort-emptied-batch-embedded-own-held-disk-appended-walked`` and ``-disk-skipped-walked``
    (5.5.1, the queues kept): the -own-held-disk-appended and -disk-skipped stores with ``messageIndexSafe=true`` and
    index files of 250 entries (as -own-held-earlier-walked), so that the walk starts at the first data file: it
    dispatches T8/0's unit of queue offset 0 (that data file) onto the planted file before those of the last one.
    ``-own-held-disk-below-walked``: the same with T8/0's planted file holding :data:`BELOW_UNIT` alone (write
    position 20, max its end, below that of queue offset 0's unit, which the walk then appends at 20)."""
    out = [{**s, "config": {**s["config"], "messageIndexSafe": "true", "maxIndexNum": "250"},
            "name": f"{s['name']}-walked"}
           for s in embedded_own_held_disk_scenarios(sc) if s["name"].endswith(("-appended", "-skipped"))]
    appended = out[0]
    (path, file), = appended["plantFiles"].items()
    unit = BELOW_UNIT[0].to_bytes(8, "big") + BELOW_UNIT[1].to_bytes(4, "big") + bytes(8)
    planted = unit + bytes(len(base64.b64decode(file)) - len(unit))
    return [*out, {**appended, "plantFiles": {path: base64.b64encode(planted).decode()},
                   "name": appended["name"].replace("-appended-", "-below-")}]


def embedded_batch_held_to_entry_message() -> tuple[int, bytes]:
    """Where the reput of the -batch-held-shifted-to-entry store is set (processOffset - 1, that of -batch-held) and
    the well-formed B7/0 message there (``INNER_BASE``/``INNER_NUM`` those of :data:`BATCH_INNER`'s second), from
    there to the host's entry's end: its properties string ends with the host record's tail (as -to-entry's T0/0
    message's)."""
    from broker_dledger_2gib import embedded_message
    from broker_dledger_inside_scenarios import (
        BATCH_INNER,
        EMBED_HOST_AT,
        EMBED_HOST_BODY,
        TO_ENTRY_HOST_TAIL,
        embedded_earlier_batch_message,
    )
    reput, _msg = embedded_earlier_batch_message()
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    base, num = BATCH_INNER[1]
    props = f"INNER_NUM\x01{num}\x02INNER_BASE\x01{base}\x02KEYS\x01E5".encode() + TO_ENTRY_HOST_TAIL
    body = (b"embedded!!" * 200)[:host_end - reput - 88 - 3 - 2 - len(props)]
    msg = embedded_message(reput, body, props, topic=b"B7", queue_offset=base)
    assert reput + len(msg) == host_end, (reput, len(msg), host_end)
    return reput, msg


def embedded_batch_held_shifted_to_entry_scenario(sc: dict, past: bool = False) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-batch-held-shifted-to-entry`` (5.5.1, the queues kept): the
    -batch-held-shifted store (B7/0's file planted: write position 92, max the host record's start, where the walk's
    units would leave 46) whose B7/0 message where the reput is set (:func:`embedded_batch_held_to_entry_message`)
    ends at B9's entry: the reput goes on there and dispatches B9's cut unit and the last B7/0 message's (cut) again,
    after the parsed one.  ``past`` (``-to-entry-past``): one more B7/0 message after it (as long), with a body byte
    flipped: the walk ends there (processOffset and the message where the reput is set the same), and the reput then
    reaches it, a record past the walk's end."""
    from broker_dledger_inside_scenarios import EMBED_HOST_AT, EMBED_HOST_BODY, TO_ENTRY_HOST_TAIL
    _reput, msg = embedded_batch_held_to_entry_message()
    shifted = embedded_batch_held_shifted_scenario(sc)
    *rest, host, b9, tail = shifted["messages"]
    hb = bytearray(b"x" * EMBED_HOST_BODY)
    head = msg[:-len(TO_ENTRY_HOST_TAIL)]
    hb[len(hb) - len(head):] = head
    assert EMBED_HOST_AT + len(hb) - len(head) == _reput
    more = [{**tail, "keys": "kD", "uniqKey": "7F00000100002A9F000000000995"}] if past else []
    out = {**shifted, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9, tail, *more],
           "name": f"{shifted['name']}-to-entry"}
    if past:
        out = {**out, "damageMessage": sum(1 for m in out["messages"] if "topic" in m) - 1,
               "name": f"{out['name']}-past"}
    return out


# -batch-planted-later: the size of B9/0's batch consume queue files (10 units) and the one file planted, at queue byte
# 460 (unit 10), holding B9's unit at its start (commitlog offset, size: the test checks them against the log; tags
# code, store time (recover reads none), msgBaseOffset, batchSize, compacted offset, reserved)
PLANTED_BCQ_SIZE = 460
PLANTED_B9_UNIT = (82932, 239, 0, 1795975756917, 0, 1, -1, 0)


def embedded_batch_planted_later_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-batch-planted-later`` (5.5.1): the -batch store (two B9/0
    messages where the reput is set, processOffset - 1) with batch consume queue files of
    :data:`PLANTED_BCQ_SIZE` bytes and, the queue folders deleted, B9/0's one file planted at queue byte 460
    (``plantFiles``) with B9's unit (:data:`PLANTED_B9_UNIT`, past processOffset): the walk finds B9's unit there
    (unit 10, at the loaded max: skipped), the cut deletes that file (its first unit past processOffset), leaving B9/0
    no file and its max processOffset - 1; getLastMappedFile then creates the second parsed unit's file at 0."""
    import struct

    from broker_dledger_inside_scenarios import embedded_batch_scenario
    batch = embedded_batch_scenario(sc)
    unit = struct.pack(">qiqqqhii", *PLANTED_B9_UNIT)
    return {**batch, "config": {**batch["config"], "mapperFileSizeBatchConsumeQueue": str(PLANTED_BCQ_SIZE)},
            "plantFiles": {f"batchconsumequeue/B9/0/{PLANTED_BCQ_SIZE:020d}": base64.b64encode(
                unit + bytes(PLANTED_BCQ_SIZE - len(unit))).decode()},
            "name": f"{batch['name']}-planted-later"}


# -earlier-batch-only-kept-emptied: B7/0's planted unit, that of the last message (B9/0's second, past processOffset:
# commitlog offset and size, the test checks them against the log; the rest as PLANTED_B9_UNIT's)
EMPTIED_B7_UNIT = (83219, 300, 0, 1795975756917, 0, 1, -1, 0)


def embedded_earlier_batch_only_kept_emptied_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-earlier-batch-only-kept-emptied`` (5.5.1, the queues kept): the
    -earlier-batch-only-kept store with B7/0's file replaced before the restart (``plantFiles``) by one holding
    :data:`EMPTIED_B7_UNIT` alone (past processOffset): the walk skips its one B7/0 unit (message 10 of the first data
    file, below the loaded max), the cut deletes the file, leaving B7/0 no file and its max processOffset - 1, so
    the B7/0 message where the reput is set (processOffset - 1) is dropped."""
    import struct
    kept = embedded_earlier_batch_only_kept_scenario(sc)
    unit = struct.pack(">qiqqqhii", *EMPTIED_B7_UNIT)
    size = int(kept["config"].get("mapperFileSizeBatchConsumeQueue", 300000 * 46))   # the store's default
    return {**kept, "name": f"{kept['name']}-emptied", "plantFiles": {
        f"batchconsumequeue/B7/0/{0:020d}": base64.b64encode(unit + bytes(size - len(unit))).decode()}}

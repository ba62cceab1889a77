"""DLedger crash scenarios of the inside-entry family (:mod:`broker_dledger_inside_scenarios`) on the 5.3.3 line (the
queues kept on disk: 5.3.3 cuts only the queues it loads): a queue the 5.3.3 cut emptied (its max kept at
``processOffset``, where ``doRecheckReputOffsetFromCq`` sets the reput) whose first cut unit the reput goes on past,
inside the message it parses there, dispatching only the last one again."""
from __future__ import annotations

import base64
import struct

from broker_dledger_inside_again_scenarios import SOME_T0_PROPS, SOME_T0_SIZE, SOME_T0_TOPIC_AT
from broker_dledger_inside_scenarios import (
    EMBED_HOST_AT,
    EMBED_HOST_BODY,
    EMBED_OWN_QUEUE_OFFSET,
    EMBED_PROCESS_OFFSET,
    TO_ENTRY_HOST_TAIL,
    TO_ENTRY_TAIL_BODY,
)

# -own-to-entry-some: the parsed T9/0 message's queue offset (past the first consume queue file of 11 units: file
# 220, two fillPreBlank units before it); -own-to-entry-some-zero: 0 (file 0, no fillPreBlank unit);
# -own-to-entry-some-low: that of -some, its PHYSICALOFFSET field such that the unit ends at processOffset (KEPT_LOW)
KEPT_SOME_QUEUE_OFFSETS = {"": EMBED_OWN_QUEUE_OFFSET, "-zero": 0, "-low": EMBED_OWN_QUEUE_OFFSET}
KEPT_LOW = "-low"


def kept_some_scenarios(sc: dict) -> list[dict]:
    """From the 5.3.3 -emptied-kept-embedded store ``sc``: ``<line>-dledger-abort-emptied-kept-embedded-own-to-entry-
    some``, ``-some-zero`` and ``-some-low`` (:func:`kept_some_scenario`)."""
    return [kept_some_scenario(sc, suffix) for suffix in KEPT_SOME_QUEUE_OFFSETS]


def kept_some_messages(queue_offset: int, low: bool = False) -> tuple[int, bytes, int]:
    """Where the reput of the -own-to-entry-some store is set (``processOffset``: the -emptied-kept-embedded store's
    moved on by the extra T9/0 record's size), the header and body length field (88 bytes) of the T9/0 message
    parsed there (queue offset ``queue_offset``), whose body runs over the host record's tail, the first T9/0 entry's
    header and its record up to its topic, and that message's size: it ends where the first T9/0 record does, at the
    last message's entry.  ``low``: its PHYSICALOFFSET field ``processOffset`` less its size (its unit ends at
    ``processOffset``, the max the 5.3.3 cut keeps for T9/0), not its own position."""
    from broker_dledger_2gib import embedded_message
    reput = EMBED_PROCESS_OFFSET + SOME_T0_SIZE
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    first_at = host_end + 48
    size = first_at + SOME_T0_SIZE - reput
    head = embedded_message(reput - size if low else reput, bytes(first_at + SOME_T0_TOPIC_AT - reput - 88),
                            SOME_T0_PROPS, topic=b"T9", queue_offset=queue_offset)[:88]
    assert struct.unpack(">i", head[:4])[0] == size
    return reput, head, size


def kept_some_scenario(sc: dict, suffix: str = "") -> dict:
    """``<line>-dledger-abort-emptied-kept-embedded-own-to-entry-some`` (5.3.3, the queues kept): the
    -emptied-kept-embedded store ``sc`` with one more T9/0 message (keys ``kA``, a record as long as
    :data:`SOME_T0_SIZE`) between the host and the last (T9/0) one, so that T9/0, on disk before the walk, has two
    units the cut takes (queue offsets 0 and 1, its file deleted, its max kept at ``processOffset``), and, where the
    reput is set (``processOffset``), a T9/0 message whose body swallows the host record's tail and that first T9/0
    entry up to its record's topic (:func:`kept_some_messages`): its topic and properties are that record's and it
    ends at the last message's entry, so the reput goes on there and dispatches the last T9/0 record's cut unit again,
    not the first one's (inside the parsed message).  ``suffix`` names the parsed message's queue offset
    (:data:`KEPT_SOME_QUEUE_OFFSETS`) and, :data:`KEPT_LOW`, a PHYSICALOFFSET field below ``processOffset``."""
    reput, head, _size = kept_some_messages(KEPT_SOME_QUEUE_OFFSETS[suffix], suffix == KEPT_LOW)
    *rest, host, last = sc["messages"]
    hb = bytearray(b"x" * EMBED_HOST_BODY)
    hb[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(head)] = head
    first = {**last, "body": base64.b64encode(b"t" * TO_ENTRY_TAIL_BODY).decode(), "keys": "kA",
             "uniqKey": SOME_T0_PROPS[-29:-1].decode()}
    return {**sc, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, first, last],
            "name": f"{sc['name']}-own-to-entry-some{suffix}"}

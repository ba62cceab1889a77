"""More DLedger crash scenarios of the inside-entry family (:mod:`broker_dledger_inside_scenarios`) for an ordinary
consume queue the walk wrote whose cut units the reput, going on at an entry's start after the messages it parsed
where it was set (``processOffset - 1``), dispatches again only in part."""
from __future__ import annotations

import base64
import struct

from broker_dledger_inside_scenarios import (
    EMBED_HOST_AT,
    EMBED_HOST_BODY,
    EMBED_PROCESS_OFFSET,
    TO_ENTRY_HOST_TAIL,
    TO_ENTRY_QUEUE_OFFSET,
    TO_ENTRY_TAIL_BODY,
    embedded_to_entry_scenario,
)

# -to-entry-some: a T0/0 record of the -to-entry store's tail message's size (its properties as long), where its
# topic's length byte lies in it, and the B9/0 record between the host and it
SOME_T0_SIZE = 88 + TO_ENTRY_TAIL_BODY + 3 + 2 + 46
SOME_T0_TOPIC_AT = 88 + TO_ENTRY_TAIL_BODY
SOME_B9_SIZE = 239
# -to-entry-some-moved: the parsed T0/0 message's queue offset, below the cut's write position (not 0)
SOME_MOVED_QUEUE_OFFSET = 1
SOME_T0_PROPS = b"KEYS\x01kA\x02UNIQ_KEY\x017F00000100002A9F000000000995\x02"


# -to-entry-some-emptied: the topic of its own both cut messages (and so the parsed one) go to, and the parsed
# message's queue offset (0: at the start of the file getLastMappedFile creates, no fillPreBlank unit)
SOME_EMPTIED_TOPIC = "T8"
SOME_EMPTIED_QUEUE_OFFSET = 0
EXT = {"enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": "204"}


def again_abort_scenarios(sc: dict) -> list[dict]:
    """From the -emptied-batch-embedded store ``sc`` (5.5.1): ``-to-entry-some`` and ``-to-entry-some-moved``
    (:func:`embedded_to_entry_some_scenario`), both with ``enableConsumeQueueExt`` (``-ext``: ext files of 10 units,
    as the other ``-ext`` stores), ``-to-entry-some-kept`` (``keepQueues``: T0/0 on disk before the walk) and
    ``-to-entry-some-emptied`` (and ``-ext``: :func:`embedded_to_entry_some_emptied_scenario`)."""
    some, moved = embedded_to_entry_some_scenario(sc), embedded_to_entry_some_scenario(sc, SOME_MOVED_QUEUE_OFFSET)
    emptied = embedded_to_entry_some_emptied_scenario(sc)
    return [some, moved, *({**x, "config": {**x["config"], **EXT}, "name": f"{x['name']}-ext"}
                           for x in (some, moved, emptied)),
            {**some, "keepQueues": True, "name": f"{some['name']}-kept"}, emptied]


def embedded_to_entry_some_emptied_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-some-emptied`` (5.5.1): the -to-entry-some store with
    its two last messages (the two cut ones) for :data:`SOME_EMPTIED_TOPIC` queue 0, a topic of its own (queue
    offsets 0 and 1), so that the parsed message, whose topic is the first one's, is for it too (queue offset
    :data:`SOME_EMPTIED_QUEUE_OFFSET`): the cut leaves that queue no file (max -1), the parsed unit gets a new
    file, and the reput, going on at the last message's entry, dispatches that cut unit again, not the first one
    (inside the parsed message)."""
    out = embedded_to_entry_some_scenario(sc, SOME_EMPTIED_QUEUE_OFFSET, "-emptied")
    *rest, first, tail = out["messages"]
    return {**out, "messages": [*rest, {**first, "topic": SOME_EMPTIED_TOPIC},
                                {**tail, "topic": SOME_EMPTIED_TOPIC}]}


def embedded_to_entry_some_messages(queue_offset: int = TO_ENTRY_QUEUE_OFFSET) -> tuple[int, bytes, int]:
    """Where the reput of the -to-entry-some store is set (processOffset - 1: the -to-entry store's moved on by the
    extra T0/0 record's size), the header and body length field (88 bytes) of the T0/0 message parsed there (queue
    offset ``queue_offset``), whose body runs over the host record's tail, B9's entry and the first T0/0 entry up to
    its record's topic, and that message's size: it ends where the first T0/0 record does, at the last message's
    entry."""
    from broker_dledger_2gib import embedded_message
    reput = EMBED_PROCESS_OFFSET + 2 * SOME_T0_SIZE - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    t0_at = host_end + 48 + SOME_B9_SIZE + 48
    head = embedded_message(reput, bytes(t0_at + SOME_T0_TOPIC_AT - reput - 88), SOME_T0_PROPS, topic=b"T0",
                            queue_offset=queue_offset)[:88]
    assert struct.unpack(">i", head[:4])[0] == t0_at + SOME_T0_SIZE - reput
    return reput, head, t0_at + SOME_T0_SIZE - reput


def embedded_to_entry_some_scenario(sc: dict, queue_offset: int = TO_ENTRY_QUEUE_OFFSET, suffix: str = "") -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-some`` (5.5.1): the -to-entry store with one more T0/0
    message (as long as its last one, keys ``kA``) between B9's and the last (T0/0 then has two units the cut takes)
    and, where the reput is set (processOffset - 1), a T0/0 message whose body swallows the host record's tail, B9's
    entry and that T0/0 entry up to its record's topic, so that its topic and properties are that record's and it ends
    at the last message's entry: the reput goes on there and dispatches the last T0/0 record's cut unit again, not
    the first one's (inside the parsed message).  ``-to-entry-some-moved``: the parsed message's queue offset
    ``queue_offset`` (:data:`SOME_MOVED_QUEUE_OFFSET`), below the write position the cut leaves (``suffix``: another
    name's)."""
    reput, head, _size = embedded_to_entry_some_messages(queue_offset)
    to_entry = embedded_to_entry_scenario(sc)
    *rest, host, b9, tail = to_entry["messages"]
    hb = bytearray(b"x" * EMBED_HOST_BODY)
    hb[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(head)] = head
    first = {**tail, "keys": "kA", "uniqKey": SOME_T0_PROPS[-29:-1].decode()}
    return {**to_entry, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9, first, tail],
            "name": f"{to_entry['name']}-some{suffix or ('' if queue_offset == TO_ENTRY_QUEUE_OFFSET else '-moved')}"}

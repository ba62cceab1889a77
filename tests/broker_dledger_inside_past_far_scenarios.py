"""The inside-entry DLedger crash scenarios (:mod:`broker_dledger_inside_scenarios`) whose start's reput parses a
message reaching past the walk's end: the parsed unit ends past the queue's last walk unit, so the rebuild's own
dispatch appends it after the walk's units, one unit further than the broker's write position, and the records past
the walk's end after it (``-beyond``; ``-beyond-file``: the broker's write position for them a file's start;
``-beyond-wide``: the rebuild's)."""
from __future__ import annotations

import base64

from broker_dledger_inside_past_more_scenarios import PAST_FILE_CQ_SIZE, PAST_OVER_CUT_END
from broker_dledger_inside_scenarios import (
    EMBED_HOST_AT,
    EMBED_HOST_BODY,
    EMBED_PROCESS_OFFSET,
    TO_ENTRY_HOST_TAIL,
    TO_ENTRY_QUEUE_OFFSET,
    TO_ENTRY_TAIL_BODY,
    embedded_to_entry_past_cut_scenario,
)

# -to-entry-past-cut-beyond: the damaged message's properties string (keys kD, its UNIQ_KEY), which the parsed T0/0
# message's ends with, and where that message ends: the next entry's start (the damaged record's 300 bytes behind its
# 48-byte DLedger header, after the cut T0/0 record)
PAST_BEYOND_PROPS = b"KEYS\x01kD\x02UNIQ_KEY\x017F00000100002A9F000000000995\x02"
PAST_BEYOND_END = PAST_OVER_CUT_END + 48 + 300
# -to-entry-past-cut-beyond-wide: consume queue files of 13 units, so that the rebuild's write position after its
# parsed unit (520) is a file's start and the broker's (500) is not
PAST_WIDE_CQ_SIZE = 260
# -to-entry-past-cut-beyond-ext: ext files of 204 bytes (ConsumeQueueExt units span several files)
PAST_BEYOND_EXT = {"enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": "204"}


def past_far_scenarios(base: dict) -> list[dict]:
    """On the -emptied-batch-embedded store ``base`` (5.5.1): ``-to-entry-past-cut-beyond`` and ``-beyond-file``
    (consume queue files of :data:`PAST_FILE_CQ_SIZE` bytes: the parsed T0/0 unit fills file 400's last place, so
    getLastMappedFile creates file 500 for the last message's unit, where the rebuild's dispatch put its parsed
    unit in a file of its own), and ``-beyond-wide`` (files of :data:`PAST_WIDE_CQ_SIZE` bytes: the rebuild's
    dispatch creates file 520 for the last message, whose unit it drops, the broker none), and ``-beyond-ext``
    (:data:`PAST_BEYOND_EXT`: the last message's unit appended by the broker holds its ext unit's address), and
    ``-beyond-wide-two`` (-wide with one T0/0 message more, ``kF``: the broker appends it at 520, creating file
    520, where the rebuild's dispatch, which created that file for the message before, appends it too)."""
    beyond = embedded_to_entry_past_cut_beyond_scenario(base)
    return [beyond] + [{**beyond, "config": {**beyond["config"], "mappedFileSizeConsumeQueue": str(size)},
                        "name": f"{beyond['name']}-{suffix}"}
                       for suffix, size in (("file", PAST_FILE_CQ_SIZE), ("wide", PAST_WIDE_CQ_SIZE))] \
        + [{**beyond, "config": {**beyond["config"], **PAST_BEYOND_EXT}, "name": f"{beyond['name']}-ext"},
           {**beyond, "config": {**beyond["config"], "mappedFileSizeConsumeQueue": str(PAST_WIDE_CQ_SIZE)},
            "messages": [*beyond["messages"], {**beyond["messages"][-1], "uniqKey": "7F00000100002A9F000000000993",
                                                "keys": "kF"}],
            "name": f"{beyond['name']}-wide-two"}]


def embedded_to_entry_past_cut_beyond_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-past-cut-beyond`` (5.5.1): the -to-entry-past-cut store
    whose damaged message goes to T0/1 (the same layout), so that the last one (``kE``) takes T0/0's next queue
    offset after the cut T0/0 unit, and whose host body ends with the head of a T0/0 message (queue offset
    :data:`TO_ENTRY_QUEUE_OFFSET`) from the reput's start to the damaged record's end (:data:`PAST_BEYOND_END`): its
    body covers the host's tail, B9's entry, the cut T0/0 record and the damaged message's entry, its topic and
    properties are the damaged record's.  The reput goes on at the last message's entry: it dispatches none of the
    cut units again, and the parsed unit, which ends past T0/0's last walk unit, is one the rebuild's own dispatch
    appends after the walk's units, where the broker appends the last message's."""
    from broker_dledger_2gib import embedded_message
    past = embedded_to_entry_past_cut_scenario(sc)
    reput = EMBED_PROCESS_OFFSET + 88 + TO_ENTRY_TAIL_BODY + 3 + 2 + 46 - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    size = PAST_BEYOND_END - reput - 88 - 3 - 2 - len(PAST_BEYOND_PROPS)
    msg = embedded_message(reput, b"o" * size, PAST_BEYOND_PROPS, topic=b"T0", queue_offset=TO_ENTRY_QUEUE_OFFSET)
    assert reput + len(msg) == PAST_BEYOND_END, (reput, len(msg))
    *rest, host, b9, tail, damaged, last = past["messages"]
    assert damaged["keys"] == "kD", damaged
    hb = bytearray(base64.b64decode(host["body"]))
    head = msg[:host_end - reput - len(TO_ENTRY_HOST_TAIL)]
    hb[len(hb) - len(head):] = head
    return {**past, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9, tail,
                                 {**damaged, "queueId": 1}, last], "name": f"{past['name']}-beyond"}

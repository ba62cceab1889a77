"""The inside-entry DLedger crash scenarios (:mod:`broker_dledger_inside_scenarios`) whose start's reput, after the
message it parses, goes on past a queue's cut units to records of it past the walk's end (the -past-cut-over and
-past-cut-two-over stores of :mod:`broker_dledger_inside_past_more_scenarios`), with ``enableConsumeQueueExt``
(``-ext``) or the queues kept (``-kept``: T0/0 on disk before the walk), and the -to-entry-emptied store (a queue the
cut leaves no file) with records of that queue past the walk's end (``-to-entry-emptied-past``, ``-past-zero``)."""
from __future__ import annotations

import base64

from broker_dledger_inside_past_more_scenarios import (
    PAST_OVER_CUT_END,
    PAST_OVER_PROPS,
    embedded_to_entry_past_cut_over_scenario,
    embedded_to_entry_past_cut_two_over_scenario,
)
from broker_dledger_inside_scenarios import (
    EMBED_HOST_AT,
    EMBED_HOST_BODY,
    EMBED_PROCESS_OFFSET,
    TO_ENTRY_HOST_TAIL,
    TO_ENTRY_QUEUE_OFFSET,
    embedded_to_entry_emptied_scenario,
)


def past_rest_scenarios(base: dict) -> list[dict]:
    """On the -emptied-batch-embedded store ``base`` (5.5.1): ``-to-entry-past-cut-over-ext``,
    ``-past-cut-two-over-ext`` (ext files of 10 units, as the other ``-ext`` stores) and ``-past-cut-over-kept``,
    ``-past-cut-two-over-kept`` (``keepQueues``), ``-past-cut-two-some`` (and ``-ext``, ``-kept``), and
    ``-to-entry-emptied-past``, ``-to-entry-emptied-past-zero`` (and ``-ext``):
    :func:`embedded_to_entry_emptied_past_scenario`, ``-past-cut-two-some-earlier`` and
    ``-to-entry-some-moved-file``."""
    out = []
    for sc in (embedded_to_entry_past_cut_over_scenario(base), embedded_to_entry_past_cut_two_over_scenario(base)):
        out += [{**sc, "config": {**sc["config"], "enableConsumeQueueExt": "true",
                                  "mappedFileSizeConsumeQueueExt": "204"}, "name": f"{sc['name']}-ext"},
                {**sc, "keepQueues": True, "name": f"{sc['name']}-kept"}]
    some = embedded_to_entry_past_cut_two_some_scenario(base)
    return [*out, some, {**some, "config": {**some["config"], "enableConsumeQueueExt": "true",
                                           "mappedFileSizeConsumeQueueExt": "204"}, "name": f"{some['name']}-ext"},
            {**some, "keepQueues": True, "name": f"{some['name']}-kept"}, *_emptied_past(base)]


def _emptied_past(base: dict) -> list[dict]:
    zero = embedded_to_entry_emptied_past_scenario(base, zero=True)
    return [embedded_to_entry_emptied_past_scenario(base), zero,
            {**zero, "config": {**zero["config"], "enableConsumeQueueExt": "true",
                                "mappedFileSizeConsumeQueueExt": "204"}, "name": f"{zero['name']}-ext"},
            embedded_to_entry_past_cut_two_some_earlier_scenario(base),
            embedded_to_entry_some_moved_file_scenario(base)]


# -to-entry-some-moved-file: consume queue files of 12 units, so that T0/0's first cut unit (queue offset 24, queue
# byte 480) lies at a file's start
SOME_MOVED_FILE_CQ_SIZE = 240


def embedded_to_entry_some_moved_file_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-some-moved-file`` (5.5.1): the -to-entry-some-moved store
    (two T0/0 units cut, the parsed T0/0 message, queue offset 1, swallowing the first one's record) with consume
    queue files of :data:`SOME_MOVED_FILE_CQ_SIZE` bytes: the cut deletes the file its first cut unit starts (480),
    ``getLastMappedFile`` creates it anew for the parsed unit (then dropped: its queue offset below the write
    position), and the last cut unit, dispatched again, goes to its start, not where it was (500)."""
    from broker_dledger_inside_again_scenarios import SOME_MOVED_QUEUE_OFFSET, embedded_to_entry_some_scenario
    moved = embedded_to_entry_some_scenario(sc, SOME_MOVED_QUEUE_OFFSET)
    return {**moved, "config": {**moved["config"], "mappedFileSizeConsumeQueue": str(SOME_MOVED_FILE_CQ_SIZE)},
            "name": f"{moved['name']}-file"}


def embedded_to_entry_past_cut_two_some_earlier_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-past-cut-two-some-earlier`` (5.5.1): the
    -past-cut-two-some layout over the -earlier walk (``messageIndexSafe=true``, index files of 250 entries: the walk
    covers both data files, the cut still happening) for T6/0, a topic of its own: message 11 of the first data file
    (T6/0's queue offset 0, its only unit below processOffset, in the earlier data file), the four messages after B9's
    (two cut, queue offsets 1 and 2, the damaged one and the last, 3 and 4) and the parsed message (queue offset
    :data:`TO_ENTRY_QUEUE_OFFSET`, ending where the first cut record ends) all for T6/0: the walk keeps no T6/0 unit
    in its last data file; the reput goes on at the second cut record's entry, dispatching only that cut unit again,
    then the damaged message and the last one."""
    some = embedded_to_entry_past_cut_two_some_scenario(sc, b"T6")
    *rest, host, b9, last, c, d, e = some["messages"]
    rest = [{**m, "topic": "T6", "queueId": 0} if i == 11 else m for i, m in enumerate(rest)]
    return {**some, "config": {**some["config"], "messageIndexSafe": "true", "maxIndexNum": "250"},
            "messages": [*rest, host, b9, *({**m, "topic": "T6"} for m in (last, c, d, e))],
            "name": f"{some['name']}-earlier"}


def embedded_to_entry_emptied_past_scenario(sc: dict, zero: bool = False) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-emptied-past`` (5.5.1): the -to-entry-emptied store
    (its last message, cut, and the one parsed where the reput is set, ending at B9's entry, for T8/0, a topic of its
    own: the 5.5.1 cut leaves T8/0 no file) with two more T8/0 messages after it, the first damaged (keys ``kD``,
    ``kE``, queue offsets 1 and 2): the walk ends at the damaged one, processOffset stays the -to-entry-emptied
    store's, and the reput, going on at B9's entry, dispatches the cut T8/0 unit again (queue offset 0) and then the
    two records past the walk's end.  The parsed message's queue offset: :data:`EMBED_OWN_QUEUE_OFFSET` (its unit in
    file 220, the cut one after it); ``zero`` (``-past-zero``): 0 instead (its unit at 0, the cut one
    at 20, the damaged record's queue offset below the write position, the next one's at it)."""
    emptied = embedded_to_entry_emptied_scenario(sc, queue_offset=0) if zero else embedded_to_entry_emptied_scenario(sc)
    tail = emptied["messages"][-1]
    more = [{**tail, "keys": f"k{k}", "uniqKey": f"7F00000100002A9F00000000099{n}"} for k, n in (("D", 5), ("E", 4))]
    puts = sum(1 for m in emptied["messages"] if "topic" in m)
    return {**emptied, "messages": [*emptied["messages"], *more], "damageMessage": puts,
            "name": f"{emptied['name']}-past" + ("-zero" if zero else "")}


def embedded_to_entry_past_cut_two_some_scenario(sc: dict, topic: bytes = b"T0") -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-past-cut-two-some`` (5.5.1): the -past-cut-two-over store
    (two T0/0 units cut, queue offsets 24 and 25) whose parsed T0/0 message (queue offset 1000) ends where the first
    cut T0/0 record ends (:data:`PAST_OVER_CUT_END`, its properties that record's, as -past-cut-over's): the reput
    goes on at the second cut record's entry, dispatching only that cut unit again, then the damaged message and the
    last one (the records past the walk's end); ``topic``: the parsed message's (that of the cut record it ends
    with)."""
    from broker_dledger_2gib import embedded_message
    two = embedded_to_entry_past_cut_two_over_scenario(sc)
    reput = EMBED_PROCESS_OFFSET + 2 * 300 - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    msg = embedded_message(reput, b"o" * (PAST_OVER_CUT_END - reput - 88 - 3 - 2 - len(PAST_OVER_PROPS)),
                           PAST_OVER_PROPS, topic=topic, queue_offset=TO_ENTRY_QUEUE_OFFSET)
    assert reput + len(msg) == PAST_OVER_CUT_END, (reput, len(msg))
    *rest, host, b9, last, c, d, e = two["messages"]
    hb = bytearray(base64.b64decode(host["body"]))
    head = msg[:host_end - reput - len(TO_ENTRY_HOST_TAIL)]
    hb[len(hb) - len(head):] = head
    return {**two, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9, last, c, d, e],
            "name": two["name"].replace("-two-over", "-two-some")}

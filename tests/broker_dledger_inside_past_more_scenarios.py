"""The inside-entry DLedger crash scenarios (:mod:`broker_dledger_inside_scenarios`) whose start's reput, going on
after the messages it parses, reaches records past the walk's end in more layouts: small consume queue files
(``-file``, ``-opened``: the write position a file's start), two parsed units (``-parsed-two``), and a parsed message
ending past the cut units (``-over``, ``-two-over``)."""
from __future__ import annotations

import base64

from broker_dledger_inside_scenarios import (
    EMBED_HOST_AT,
    EMBED_HOST_BODY,
    EMBED_PROCESS_OFFSET,
    TO_ENTRY_HOST_TAIL,
    TO_ENTRY_QUEUE_OFFSET,
    TO_ENTRY_TAIL_BODY,
    embedded_to_entry_past_cut_scenario,
    embedded_to_entry_past_scenario,
    embedded_to_entry_past_two_scenario,
    embedded_to_entry_scenario,
)

# -to-entry-past-file, -past-two-file, -past-cut-file: the -to-entry-past, -past-two and -past-cut stores with consume
# queue files of 5 units, so that the write position the parsed T0/0 unit leaves (queue byte 500) is a file's start:
# the reput dispatching the records past the walk's end there has getLastMappedFile create that file
PAST_FILE_CQ_SIZE = 100
# -to-entry-past-two-opened: the -past-two store with consume queue files of 6 units: the parsed T0/0 unit lands at
# a file's start (queue byte 480, a file getLastMappedFile creates), the record past the walk's end kept after it
PAST_OPENED_CQ_SIZE = 120


def past_more_scenarios(base: dict) -> list[dict]:
    """On the -emptied-batch-embedded store ``base`` (5.5.1): ``-to-entry-past-file``, ``-past-two-file``,
    ``-past-cut-file`` (consume queue files of :data:`PAST_FILE_CQ_SIZE` bytes), ``-to-entry-past-two-opened`` (and
    ``-ext``; files of :data:`PAST_OPENED_CQ_SIZE` bytes), ``-to-entry-past-cut-parsed-two``, ``-past-cut-over`` and
    ``-past-cut-two-over``."""
    out = []
    out += [{**sc, "config": {**sc["config"], "mappedFileSizeConsumeQueue": str(PAST_FILE_CQ_SIZE)},
             "name": f"{sc['name']}-file"}
            for sc in (embedded_to_entry_past_scenario(base), embedded_to_entry_past_two_scenario(base),
                       embedded_to_entry_past_cut_scenario(base))]
    two = embedded_to_entry_past_two_scenario(base)
    opened = {**two, "config": {**two["config"], "mappedFileSizeConsumeQueue": str(PAST_OPENED_CQ_SIZE)},
              "name": f"{two['name']}-opened"}
    out += [opened, {**opened, "config": {**opened["config"], "enableConsumeQueueExt": "true",
                                          "mappedFileSizeConsumeQueueExt": "204"},
                     "name": f"{opened['name']}-ext"},
            embedded_to_entry_past_cut_two_parsed_scenario(base),
            embedded_to_entry_past_cut_over_scenario(base), embedded_to_entry_past_cut_two_over_scenario(base)]
    return out


def embedded_to_entry_past_cut_two_parsed_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-past-cut-parsed-two`` (5.5.1): the -to-entry-past-cut
    store whose host body holds, where the reput is set, two well-formed T0/0 messages (queue offsets
    :data:`TO_ENTRY_QUEUE_OFFSET` and the next, keys ``E5``), the second ending at B9's entry: their units take T0/0's
    write position and the next, so that the reput, going on there, drops the cut T0/0 unit and then the damaged
    message's (their queue offsets below the write position) and appends the last one's."""
    from broker_dledger_2gib import embedded_message
    past = embedded_to_entry_past_cut_scenario(sc)
    reput = EMBED_PROCESS_OFFSET + 88 + TO_ENTRY_TAIL_BODY + 3 + 2 + 46 - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    first = embedded_message(reput, b"parsed!!!!", topic=b"T0", queue_offset=TO_ENTRY_QUEUE_OFFSET)
    props = b"KEYS\x01E5" + TO_ENTRY_HOST_TAIL
    at = reput + len(first)
    body = (b"embedded!!" * 200)[:host_end - at - 88 - 3 - 2 - len(props)]
    second = embedded_message(at, body, props, topic=b"T0", queue_offset=TO_ENTRY_QUEUE_OFFSET + 1)
    assert at + len(second) == host_end, (at, len(second), host_end)
    run = first + second
    *rest, host, b9, tail, damaged, last = past["messages"]
    hb = bytearray(base64.b64decode(host["body"]))
    head = run[:-len(TO_ENTRY_HOST_TAIL)]
    hb[len(hb) - len(head):] = head
    return {**past, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9, tail, damaged,
                                 last], "name": f"{past['name']}-parsed-two"}


# -to-entry-past-cut-over: where the cut T0/0 record of the -past-cut store ends (the damaged message's entry starts
# there; the test checks it), and that record's properties string (keys kT, its UNIQ_KEY)
PAST_OVER_CUT_END = 83519
PAST_OVER_PROPS = b"KEYS\x01kT\x02UNIQ_KEY\x017F00000100002A9F000000000997\x02"


def embedded_to_entry_past_cut_over_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-past-cut-over`` (5.5.1): the -to-entry-past-cut store
    whose host body ends with the head of a T0/0 message (queue offset :data:`TO_ENTRY_QUEUE_OFFSET`) from the reput's
    start to the cut T0/0 record's end (:data:`PAST_OVER_CUT_END`): its body covers the host's tail, B9's entry and
    that record's head, its topic and properties are that record's; the reput goes on at the damaged message's
    entry, so it does not dispatch the cut units (B9's, T0/0's) again, only the records past the walk's end."""
    from broker_dledger_2gib import embedded_message
    past = embedded_to_entry_past_cut_scenario(sc)
    reput = EMBED_PROCESS_OFFSET + 88 + TO_ENTRY_TAIL_BODY + 3 + 2 + 46 - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    size = PAST_OVER_CUT_END - reput - 88 - 3 - 2 - len(PAST_OVER_PROPS)
    msg = embedded_message(reput, b"o" * size, PAST_OVER_PROPS, topic=b"T0", queue_offset=TO_ENTRY_QUEUE_OFFSET)
    assert reput + len(msg) == PAST_OVER_CUT_END, (reput, len(msg))
    *rest, host, b9, tail, damaged, last = past["messages"]
    hb = bytearray(base64.b64decode(host["body"]))
    head = msg[:host_end - reput - len(TO_ENTRY_HOST_TAIL)]
    hb[len(hb) - len(head):] = head
    return {**past, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9, tail, damaged,
                                 last], "name": f"{past['name']}-over"}


def embedded_to_entry_past_cut_two_over_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-past-cut-two-over`` (5.5.1): the -to-entry store with
    three more T0/0 messages after its last one (keys ``kC``, ``kD``, ``kE``), the second damaged, so that two T0/0
    units are cut and processOffset lies 300 bytes further than the -past-cut store's; where the reput is set a T0/0
    message (queue offset :data:`TO_ENTRY_QUEUE_OFFSET`) ends where the second cut T0/0 record ends (as -past-cut-over
    does): the reput goes on at the damaged message's entry, dispatching none of the cut units again, and the one
    parsed unit leaves T0/0's write position one unit short of where the rebuild's own dispatch appends the records
    past the walk's end."""
    from broker_dledger_2gib import embedded_message
    to_entry = embedded_to_entry_scenario(sc)
    tail = to_entry["messages"][-1]
    more = [{**tail, "keys": f"k{k}", "uniqKey": f"7F00000100002A9F00000000099{n}"}
            for k, n in (("C", 3), ("D", 5), ("E", 4))]
    puts = sum(1 for m in to_entry["messages"] if "topic" in m)
    reput = EMBED_PROCESS_OFFSET + 2 * 300 - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    cut_end = PAST_OVER_CUT_END + 48 + 300
    props = b"KEYS\x01kC\x02UNIQ_KEY\x017F00000100002A9F000000000993\x02"
    msg = embedded_message(reput, b"o" * (cut_end - reput - 88 - 3 - 2 - len(props)), props, topic=b"T0",
                           queue_offset=TO_ENTRY_QUEUE_OFFSET)
    assert reput + len(msg) == cut_end, (reput, len(msg))
    *rest, host, b9, last = to_entry["messages"]
    hb = bytearray(base64.b64decode(host["body"]))
    head = msg[:host_end - reput - len(TO_ENTRY_HOST_TAIL)]
    hb[len(hb) - len(head):] = head
    return {**to_entry, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9, last, *more],
            "damageMessage": puts + 1, "name": f"{to_entry['name']}-past-cut-two-over"}

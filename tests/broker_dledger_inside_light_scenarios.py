"""DLedger crash scenarios of the inside-entry family (:mod:`broker_dledger_inside_scenarios`) for a light queue
(multi-dispatch, ``enableMultiDispatch``/``enableLmq``: ``%LMQ%q1``, queue 0) the walk wrote in its earlier data file
(only, or its units below ``processOffset`` there), or one that also holds a record's own units (a message put to
topic ``%LMQ%q1`` itself; ``-light-mixed-to-entry``, ``-light-own-to-entry``: its cut units dispatched again after
the parsed one; ``-light-mixed-ext``, ``-light-own-to-entry-ext``: with ``enableConsumeQueueExt``;
``-light-mixed-to-entry-past``: with records of it past the walk's end): where the start's
reput is set (``processOffset - 1``) a well-formed message that also goes to it; and one whose parsed message goes to
a queue only a record past the walk's end goes to (``-to-entry-past-only``).
:func:`broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios` lists them (:func:`light_scenarios`)."""
from __future__ import annotations

import base64

from broker_dledger_inside_scenarios import (
    EARLIER_QUEUE_OFFSETS,
    EARLIER_RETOPIC,
    EMBED_HOST_AT,
    EMBED_HOST_BODY,
    EMBED_PROCESS_OFFSET,
    LIGHT_PROPS,
    LIGHT_QUEUE_OFFSET,
    LIGHT_TAIL,
    TO_ENTRY_HOST_TAIL,
    TO_ENTRY_QUEUE_OFFSET,
    TO_ENTRY_TAIL_BODY,
    embedded_earlier_scenario,
    embedded_light_scenario,
    embedded_to_entry_earlier_scenario,
    embedded_to_entry_past_scenario,
)

# the properties a message that also goes to %LMQ%q1 carries before its light queue offset's digits
LIGHT_PROPS_HEAD = b"INNER_MULTI_DISPATCH\x01%LMQ%q1\x02INNER_MULTI_QUEUE_OFFSET\x01"

# -earlier-light: the messages of the first data file (those -earlier sends to T7/0 and T6/0) that also go to the
# light queue %LMQ%q1, their light queue offsets 0 and 1 (their bodies shorter by LIGHT_PROPS: the same layout)
EARLIER_LIGHT_PUTS = tuple(sorted(EARLIER_RETOPIC))


def light_scenarios(sc: dict) -> list[dict]:
    """From the -emptied-batch-embedded store ``sc`` (5.5.1): ``-earlier-light``
    (:func:`embedded_earlier_light_scenario`), ``-to-entry-earlier-light``
    (:func:`embedded_to_entry_earlier_light_scenario`), ``-light-mixed`` (:func:`embedded_light_mixed_scenario`) and
    ``-to-entry-past-only`` (:func:`embedded_to_entry_past_only_scenario`), then ``-light-mixed-to-entry`` and
    ``-light-own-to-entry`` and ``-light-mixed-to-entry-t5`` (:func:`embedded_light_mixed_to_entry_scenario`), then
    ``-light-mixed-ext``, ``-light-own-to-entry-ext`` and ``-light-mixed-parsed-own-ext`` (:func:`_ext`), then
    ``-light-mixed-to-entry-past`` (:func:`embedded_light_mixed_to_entry_past_scenario`)."""
    return [embedded_earlier_light_scenario(sc), embedded_to_entry_earlier_light_scenario(sc),
            embedded_light_mixed_scenario(sc), embedded_to_entry_past_only_scenario(sc),
            embedded_light_mixed_to_entry_scenario(sc), embedded_light_mixed_to_entry_scenario(sc, own_tail=True),
            embedded_light_mixed_to_entry_scenario(sc, light=False),
            *(_ext(f(sc)) for f in (embedded_light_mixed_scenario,
                                    lambda sc: embedded_light_mixed_to_entry_scenario(sc, own_tail=True),
                                    embedded_light_mixed_parsed_own_scenario)),
            embedded_light_mixed_to_entry_past_scenario(sc)]


# -light-mixed-parsed-own: the own queue offset of the message parsed where the reput is set, put to %LMQ%q1 itself
PARSED_OWN_QUEUE_OFFSET = 7


def embedded_light_mixed_parsed_own_message() -> tuple[int, bytes]:
    """Where the reput of the -light-mixed-parsed-own store is set (that of -light: processOffset - 1) and the
    message there: to topic %LMQ%q1 itself, queue 0 (own queue offset :data:`PARSED_OWN_QUEUE_OFFSET`), no
    multi-dispatch."""
    from broker_dledger_2gib import embedded_message
    from broker_dledger_inside_scenarios import embedded_light_message
    reput, _light = embedded_light_message()
    return reput, embedded_message(reput, topic=b"%LMQ%q1", queue_offset=PARSED_OWN_QUEUE_OFFSET)


def embedded_light_mixed_parsed_own_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-light-mixed-parsed-own`` (5.5.1): the -light-mixed store
    (:func:`embedded_light_mixed_scenario`) with the message where the reput is set put to topic %LMQ%q1 itself
    (:func:`embedded_light_mixed_parsed_own_message`), then 'x' bytes: a parsed own unit in a queue holding own and
    light units (written with ext files only: ``-ext``)."""
    base = embedded_light_mixed_scenario(sc)
    reput, msg = embedded_light_mixed_parsed_own_message()
    *rest, host, b9, tail = base["messages"]
    body = bytearray(b"x" * EMBED_HOST_BODY)
    body[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(msg)] = msg
    return {**base, "messages": [*rest, {**host, "body": base64.b64encode(bytes(body)).decode()}, b9, tail],
            "name": f"{base['name']}-parsed-own"}


def _ext(sc: dict) -> dict:
    """``sc`` with ``enableConsumeQueueExt`` (``-ext``: ext files of 10 units): -light-mixed-ext and
    -light-own-to-entry-ext, -light-mixed-parsed-own-ext, an own unit beside light ones in %LMQ%q1 (ext units for own
    units only)."""
    return {**sc, "config": {**sc["config"], "enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": "204"},
            "name": f"{sc['name']}-ext"}


def _with_light(m: dict, offset: int) -> dict:
    """Message ``m`` also to %LMQ%q1 (light queue offset ``offset``, one digit), its body shorter by the properties
    that adds (:data:`broker_dledger_inside_scenarios.LIGHT_PROPS`): the same layout."""
    return {**m, "body": base64.b64encode(base64.b64decode(m["body"])[:-LIGHT_PROPS]).decode(),
            "properties": {"INNER_MULTI_DISPATCH": "%LMQ%q1", "INNER_MULTI_QUEUE_OFFSET": str(offset)}}


def embedded_earlier_light_messages() -> tuple[int, bytes, bytes]:
    """Where the reput of the -earlier-light store is set (that of -earlier: processOffset - 1) and the two
    well-formed messages there, one after the other: the T7/0 one (queue offset that of -earlier's) also for %LMQ%q1
    (light queue offset :data:`broker_dledger_inside_scenarios.LIGHT_QUEUE_OFFSET`), then the T6/0 one."""
    from broker_dledger_2gib import embedded_message
    reput = EMBED_PROCESS_OFFSET + 88 + TO_ENTRY_TAIL_BODY + 3 + 2 + 46 - 1
    props = b"KEYS\x01E5\x02" + LIGHT_PROPS_HEAD + str(LIGHT_QUEUE_OFFSET).encode() + b"\x02"
    first = embedded_message(reput, props=props, topic=b"T7", queue_offset=EARLIER_QUEUE_OFFSETS[0])
    second = embedded_message(reput + len(first), topic=b"T6", queue_offset=EARLIER_QUEUE_OFFSETS[1])
    return reput, first, second


def embedded_earlier_light_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-earlier-light`` (5.5.1): the -earlier store
    (:func:`broker_dledger_inside_scenarios.embedded_earlier_scenario`: both data files walked, the cut still
    happening) with ``enableMultiDispatch``/``enableLmq``: its messages 10 and 11 of the first data file (T7/0,
    T6/0) also go to %LMQ%q1 (light queue offsets 0, 1), no other does, so the walk wrote that light queue in its
    earlier data file only; where the reput is set the T7/0 message there also goes to %LMQ%q1
    (:func:`embedded_earlier_light_messages`), then the T6/0 one and 'x' bytes."""
    out = embedded_earlier_scenario(sc)
    reput, first, second = embedded_earlier_light_messages()
    *rest, host, b9, tail = out["messages"]
    body = bytearray(b"x" * EMBED_HOST_BODY)
    body[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(first) + len(second)] = first + second
    for light, i in enumerate(EARLIER_LIGHT_PUTS):
        rest[i] = _with_light(rest[i], light)
    return {**out, "config": {**out["config"], "enableMultiDispatch": "true", "enableLmq": "true"},
            "messages": [*rest, {**host, "body": base64.b64encode(bytes(body)).decode()}, b9, tail],
            "name": f"{out['name']}-light"}


def embedded_to_entry_earlier_light_message() -> tuple[int, bytes]:
    """Where the reput of the -to-entry-earlier-light store is set (that of -to-entry-earlier: processOffset - 1) and
    the T6/0 message there (queue offset :data:`broker_dledger_inside_scenarios.TO_ENTRY_QUEUE_OFFSET`), also for
    %LMQ%q1 (light queue offset :data:`broker_dledger_inside_scenarios.LIGHT_QUEUE_OFFSET`), whose properties string
    ends with the host record's tail, so that it ends at B9's entry."""
    from broker_dledger_2gib import embedded_message
    reput = EMBED_PROCESS_OFFSET + 88 + TO_ENTRY_TAIL_BODY + 3 + 2 + 46 - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    props = b"KEYS\x01E5\x02" + LIGHT_PROPS_HEAD + str(LIGHT_QUEUE_OFFSET).encode() + TO_ENTRY_HOST_TAIL
    body = (b"embedded!!" * 200)[:host_end - reput - 88 - 3 - 2 - len(props)]
    msg = embedded_message(reput, body, props, topic=b"T6", queue_offset=TO_ENTRY_QUEUE_OFFSET)
    assert reput + len(msg) == host_end, (reput, len(msg), host_end)
    return reput, msg


def embedded_to_entry_earlier_light_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-earlier-light`` (5.5.1): the -to-entry-earlier store
    (:func:`broker_dledger_inside_scenarios.embedded_to_entry_earlier_scenario`: the -earlier walk over both data
    files, message 11 of the first and the last message, after B9's, for T6/0) with ``enableMultiDispatch``/
    ``enableLmq`` and those two T6/0 messages also to %LMQ%q1 (light queue offsets 0, 1): its unit below
    processOffset lies in the earlier data file, the cut takes the other; where the reput is set the T6/0 message
    that ends at B9's entry also goes to %LMQ%q1 (:func:`embedded_to_entry_earlier_light_message`), so that the
    reput, going on there, dispatches the cut light unit again after the parsed one."""
    out = embedded_to_entry_earlier_scenario(sc)
    reput, msg = embedded_to_entry_earlier_light_message()
    *rest, host, b9, tail = out["messages"]
    assert rest[11]["topic"] == tail["topic"] == "T6"
    rest[11] = _with_light(rest[11], 0)
    hb = bytearray(base64.b64decode(host["body"]))
    head = msg[:-len(TO_ENTRY_HOST_TAIL)]
    hb[len(hb) - len(head):] = head
    return {**out, "config": {**out["config"], "enableMultiDispatch": "true", "enableLmq": "true"},
            "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9, _with_light(tail, 1)],
            "name": f"{out['name']}-light"}


# -light-mixed: the put of the last data file (below processOffset, after the -light store's light puts) sent to topic
# %LMQ%q1 itself, queue 0 (its body shorter by the 5 bytes that topic adds: the same layout)
MIXED_PUT = 197


def embedded_light_mixed_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-light-mixed`` (5.5.1): the -light store
    (:func:`broker_dledger_inside_scenarios.embedded_light_scenario`) with its put :data:`MIXED_PUT` sent to topic
    %LMQ%q1, queue 0, itself: %LMQ%q1/0 then holds a record's own unit beside the light ones (its queue offset from
    the store's topicQueueTable, the light ones' from its lmqTopicQueueTable: own 0 after light 0-2, appended at 60
    as a queue offset 0 always is, and the last message's light unit, queue offset 3, dropped below that write
    position); the T5/0 message where the reput is set also goes to %LMQ%q1."""
    out = embedded_light_scenario(sc)
    msgs = list(out["messages"])
    m = msgs[MIXED_PUT]
    assert len(m["topic"]) == 2 and "properties" not in m, m
    msgs[MIXED_PUT] = {**m, "topic": "%LMQ%q1", "queueId": 0,
                       "body": base64.b64encode(base64.b64decode(m["body"])[:-5]).decode()}
    return {**out, "messages": msgs, "name": f"{out['name']}-mixed"}


# -to-entry-past-only: the topic of the parsed message and of the damaged last one (a queue only they go to)
PAST_ONLY_TOPIC = "TZ"


def to_entry_past_only_message(topic: str, props: bytes, queue_offset: int) -> tuple[int, bytes]:
    """Where the reput of the -to-entry-past store is set (processOffset - 1) and a message there for ``topic``/0
    (queue offset ``queue_offset``, its properties string ``props`` then the host record's tail), ending at B9's
    entry: the -to-entry-past-only stores' (:func:`embedded_to_entry_past_only_message`,
    :func:`broker_dledger_inside_only_past_scenarios.embedded_to_entry_past_only_batch_message`)."""
    from broker_dledger_2gib import embedded_message
    reput = EMBED_PROCESS_OFFSET - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    props += TO_ENTRY_HOST_TAIL
    body = (b"embedded!!" * 200)[:host_end - reput - 88 - 3 - 2 - len(props)]
    msg = embedded_message(reput, body, props, topic=topic.encode(), queue_offset=queue_offset)
    assert reput + len(msg) == host_end, (reput, len(msg), host_end)
    return reput, msg


def embedded_to_entry_past_only_message() -> tuple[int, bytes]:
    """Where the reput of the -to-entry-past-only store is set (that of -to-entry-past: processOffset - 1) and the
    message there, -to-entry-past's for :data:`PAST_ONLY_TOPIC`/0 (queue offset
    :data:`broker_dledger_inside_scenarios.TO_ENTRY_QUEUE_OFFSET`), ending at B9's entry."""
    return to_entry_past_only_message(PAST_ONLY_TOPIC, b"KEYS\x01E5", TO_ENTRY_QUEUE_OFFSET)


def to_entry_past_only_scenario(sc: dict, topic: str, msg: bytes) -> dict:
    """The -to-entry-past store (:func:`broker_dledger_inside_scenarios.embedded_to_entry_past_scenario`: its damaged
    last message ends the walk) with ``msg`` (:func:`to_entry_past_only_message`) where the reput is set, at the end
    of the host record's body, and the damaged message for ``topic``, which no other message goes to: named
    ``-only``."""
    past = embedded_to_entry_past_scenario(sc)
    *rest, host, b9, tail = past["messages"]
    assert tail["topic"] == "T0" and all(m.get("topic") != topic for m in past["messages"])
    hb = bytearray(base64.b64decode(host["body"]))
    head = msg[:-len(TO_ENTRY_HOST_TAIL)]
    hb[len(hb) - len(head):] = head
    return {**past, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9,
                                 {**tail, "topic": topic}],
            "name": f"{past['name']}-only"}


def embedded_to_entry_past_only_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-past-only`` (5.5.1): the -to-entry-past store
    (:func:`broker_dledger_inside_scenarios.embedded_to_entry_past_scenario`: its damaged last message ends the walk,
    the parsed message ends at B9's entry) with the parsed and the damaged message for :data:`PAST_ONLY_TOPIC`/0,
    which no other message goes to: a queue the walk wrote no unit of, only a record past its end."""
    return to_entry_past_only_scenario(sc, PAST_ONLY_TOPIC, embedded_to_entry_past_only_message()[1])


def embedded_light_to_entry_message(light: bool = True) -> tuple[int, bytes]:
    """Where the reput of the -light-mixed-to-entry and -light-own-to-entry stores is set (that of -light:
    processOffset - 1) and the T5/0 message there, also for %LMQ%q1 (light queue offset
    :data:`broker_dledger_inside_scenarios.LIGHT_QUEUE_OFFSET`; not with ``light`` false: -light-mixed-to-entry-t5),
    whose properties string ends with the host record's tail, so that it ends at B9's entry."""
    from broker_dledger_2gib import embedded_message
    reput = EMBED_PROCESS_OFFSET + LIGHT_TAIL - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    props = (b"KEYS\x01E5\x02" + LIGHT_PROPS_HEAD + str(LIGHT_QUEUE_OFFSET).encode() if light else b"KEYS\x01E5") \
        + TO_ENTRY_HOST_TAIL
    body = (b"embedded!!" * 200)[:host_end - reput - 88 - 3 - 2 - len(props)]
    msg = embedded_message(reput, body, props)
    assert reput + len(msg) == host_end, (reput, len(msg), host_end)
    return reput, msg


def embedded_light_mixed_to_entry_scenario(sc: dict, own_tail: bool = False, light: bool = True) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-light-mixed-to-entry`` (5.5.1): the -light-mixed store
    (:func:`embedded_light_mixed_scenario`) with the message where the reput is set (T5/0, also to %LMQ%q1) ending
    at B9's entry (:func:`embedded_light_to_entry_message`): the reput goes on there and dispatches B9's and the
    last message (T0/0, also to %LMQ%q1: light queue offset 3, which the walk dropped below its write position 80)
    again, after the parsed one.  ``own_tail``: ``-light-own-to-entry``, from the -light store
    (:func:`broker_dledger_inside_scenarios.embedded_light_scenario`, no own unit below processOffset) with that last
    message sent to topic %LMQ%q1 itself (queue 0, no multi-dispatch; its body longer by the light properties it
    drops, shorter by the 5 bytes its topic adds: the same layout): its own unit, queue offset 0, the walk appended
    at 60 after the three light ones (a cut unit not where its queue offset says), which the reput dispatches again
    after the parsed light unit the cut's write position gave 60.  ``light`` false: ``-light-mixed-to-entry-t5``,
    the parsed message for T5/0 alone, so that the reput dispatches every cut unit of %LMQ%q1 again (from before the
    first) with no parsed unit there: that of the last message's light unit, which the walk dropped, among them."""
    base = embedded_light_scenario(sc) if own_tail else embedded_light_mixed_scenario(sc)
    reput, msg = embedded_light_to_entry_message(light)
    *rest, host, b9, tail = base["messages"]
    body = bytearray(b"x" * EMBED_HOST_BODY)
    head = msg[:-len(TO_ENTRY_HOST_TAIL)]
    body[len(body) - len(head):] = head
    if own_tail:
        assert tail["topic"] == "T0" and "INNER_MULTI_DISPATCH" in tail["properties"], tail
        tail = {k: v for k, v in tail.items() if k != "properties"}
        tail = {**tail, "topic": "%LMQ%q1", "queueId": 0,
                "body": base64.b64encode(b"t" * (len(base64.b64decode(tail["body"])) + LIGHT_PROPS - 5)).decode()}
    return {**base, "messages": [*rest, {**host, "body": base64.b64encode(bytes(body)).decode()}, b9, tail],
            "name": f"{base['name']}-own-to-entry" if own_tail else f"{base['name']}-to-entry{'' if light else '-t5'}"}


def embedded_light_mixed_to_entry_past_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-light-mixed-to-entry-past`` (5.5.1): the -light-mixed-to-entry
    store (:func:`embedded_light_mixed_to_entry_scenario`) with two more T0/0 messages after its last one, both also
    to %LMQ%q1 (light queue offsets 4 and 5), the first damaged (keys ``kD``, ``kE``): the walk ends at the damaged
    one, processOffset stays the -light-mixed-to-entry store's, and the reput, going on at B9's entry, dispatches the
    cut units again, then the two records past the walk's end, in %LMQ%q1 by their light queue offsets from the
    state the parsed unit and the cut units left."""
    base = embedded_light_mixed_to_entry_scenario(sc)
    tail = base["messages"][-1]
    assert tail["properties"]["INNER_MULTI_QUEUE_OFFSET"] == "3", tail
    more = [{**tail, "keys": f"k{k}", "uniqKey": f"7F00000100002A9F00000000099{n}",
             "properties": {**tail["properties"], "INNER_MULTI_QUEUE_OFFSET": str(lo)}}
            for k, n, lo in (("D", 5, 4), ("E", 4, 5))]
    puts = sum(1 for m in base["messages"] if "topic" in m)
    return {**base, "messages": [*base["messages"], *more], "damageMessage": puts, "name": f"{base['name']}-past"}

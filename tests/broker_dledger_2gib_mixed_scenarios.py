"""The 5.5.1 DLedger store past 2 GiB whose crash restart's cut leaves a queue holding a record's own units and light
ones (a message put to topic ``%LMQ%q9`` itself, ``enableMultiDispatch``/``enableLmq``) with ``fillPreBlank`` units
only, so that its max 2147483647 sets the start's reput inside an entry, where a message for that queue is parsed:
``-past-2gib-mixed-blank`` (:func:`past_2gib_mixed_blank_scenario`) and ``-past-2gib-mixed-blank-two``, two
messages parsed there (:func:`mixed_parsed_two`), and ``-past-2gib-mixed-blank-back``, no parsed unit for it, its
last cut units put back (:func:`past_2gib_mixed_blank_back_scenario`), checked in
``tests/test_dledger_2gib_mixed_broker.py`` (``DLEDGER_2GIB=1`` only)."""
from __future__ import annotations

from broker_dledger_2gib import (
    BLANK_MAX,
    EMBED_AT_BODY_DATA,
    EMBED_T0_DATA,
    ENTRY_BOUND_BODY,
    T0_TAIL,
    T9_ENTRY,
    TO_T9_ENTRY,
    embedded_message,
    past_2gib_embedded_to_entry_scenario,
    with_embedded_message,
)
from broker_dledger_scenarios import past_2gib_abort_scenario

from store_format.dledger import ENTRY_HEADER_SIZE

MIXED = "%LMQ%q9"
# the light put after the last %LMQ%q9 message: a T8/0 message also to %LMQ%q9 (light queue offset 0)
LIGHT_PROPS = {"INNER_MULTI_DISPATCH": MIXED, "INNER_MULTI_QUEUE_OFFSET": "0"}
MIXED_FIELD = T9_ENTRY + ENTRY_HEADER_SIZE   # the parsed message's PHYSICALOFFSET field: the last %LMQ%q9 record's


def mixed_parsed_message() -> bytes:
    """The %LMQ%q9 message (queue 0, own queue offset 0, keys ``E5``) from 2147483647 to the last T0 record's end,
    where the last %LMQ%q9 message's entry starts (:data:`broker_dledger_2gib.TO_T9_ENTRY` bytes, ending with the T0
    record's own tail), its PHYSICALOFFSET field :data:`MIXED_FIELD`: the ``-embedded-to-entry`` T5 message with
    topic %LMQ%q9, its body 5 bytes shorter."""
    props = b"KEYS\x01E5" + T0_TAIL
    body = ENTRY_BOUND_BODY[:-(len(MIXED) - 2)]
    msg = embedded_message(MIXED_FIELD, body, props, topic=MIXED.encode())
    assert len(msg) == TO_T9_ENTRY and msg.endswith(T0_TAIL), len(msg)
    return msg


# -two: the first parsed message's PHYSICALOFFSET field, its end below 2147483647 (the cut's max: dropped)
TWO_LOW_FIELD = 1000
TWO_LIGHT_QUEUE_OFFSET = 3   # the second one's light queue offset (60, past the write position 20)


def mixed_parsed_two() -> tuple[bytes, bytes]:
    """The two messages of ``-past-2gib-mixed-blank-two`` from 2147483647 to the last T0 record's end: a %LMQ%q9 one
    (own queue offset 0, no properties) whose PHYSICALOFFSET field :data:`TWO_LOW_FIELD` puts its end below
    2147483647, then a T7/0 one (queue offset 0, keys ``E7``, its field its own start) also to %LMQ%q9 (light queue
    offset :data:`TWO_LIGHT_QUEUE_OFFSET`) whose properties string ends with the T0 record's own tail."""
    first = embedded_message(TWO_LOW_FIELD, b"small", b"", topic=MIXED.encode())
    props = (f"INNER_MULTI_DISPATCH\x01{MIXED}\x02INNER_MULTI_QUEUE_OFFSET\x01{TWO_LIGHT_QUEUE_OFFSET}\x02KEYS\x01E7"
             .encode() + T0_TAIL)
    size = TO_T9_ENTRY - len(first)
    body = (b"embedded!!" * 40)[:size - 88 - 1 - 2 - 2 - len(props)]
    second = embedded_message(BLANK_MAX + len(first), body, props, topic=b"T7")
    assert len(second) == size and second.endswith(T0_TAIL), len(second)
    return first, second


def past_2gib_mixed_blank_scenario(line: str, two: bool = False) -> dict:
    """``<line>-dledger-abort-past-2gib-mixed-blank`` (5.5.1, ``DLEDGER_2GIB=1``): :func:`past_2gib_abort_scenario`
    with ``enableMultiDispatch``/``enableLmq`` whose two T9 messages go to topic %LMQ%q9 itself (queue 0, bodies 5
    bytes shorter: the same layout; own queue offsets 0 and 1, the last with keys ``K9``), then a T8/0 message also to
    %LMQ%q9 (light queue offset 0).  The walk (the last data file) appends the last %LMQ%q9 message's own unit at 20
    (``fillPreBlank`` unit before it: no file, the queue offset 1) and the light unit at 40 (queue offset 0: never
    checked), both past processOffset: the cut keeps the ``fillPreBlank`` unit (max 2147483647), write position 20, and
    the reput set at 2147483647, inside the last T0 entry's body, parses a %LMQ%q9 message there
    (:func:`mixed_parsed_message`) that ends where the last %LMQ%q9 message's entry starts.  ``two``:
    ``-past-2gib-mixed-blank-two``, the two messages of :func:`mixed_parsed_two` there instead."""
    msg = b"".join(mixed_parsed_two()) if two else mixed_parsed_message()
    sc = with_embedded_message(past_2gib_abort_scenario(line), EMBED_T0_DATA, EMBED_AT_BODY_DATA,
                               f"{line}-dledger-abort-past-2gib-mixed-blank{'-two' if two else ''}",
                               msg=msg[:-len(T0_TAIL)])
    first, *rest, last = sc["messages"]
    assert first == last == {"topic": "T9", "queueId": 0, "bodySize": 100}, (first, last)
    own = {"topic": MIXED, "queueId": 0, "bodySize": 95}
    light = {"topic": "T8", "queueId": 0, "bodySize": 100, "properties": dict(LIGHT_PROPS)}
    return {**sc, "config": {**sc["config"], "enableMultiDispatch": "true", "enableLmq": "true"},
            "messages": [own, *rest, {**own, "keys": "K9"}, light]}


# -back: the T0 message of this T0 queue offset (past processOffset, below 2147483647) put to %LMQ%q9 itself instead
BACK_T0 = EMBED_T0_DATA - 10


def past_2gib_mixed_blank_back_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-mixed-blank-back`` (5.5.1, ``DLEDGER_2GIB=1``): the ``-embedded-to-entry``
    store (:func:`broker_dledger_2gib.past_2gib_embedded_to_entry_scenario`: a T5 message from 2147483647 to the last
    T9 entry's start) with %LMQ%q9 in place of T9 as in :func:`past_2gib_mixed_blank_scenario` (the T8 light put
    after it too) and the T0 message of queue offset :data:`BACK_T0` put to %LMQ%q9 itself (its body 5 bytes
    shorter; own queue offset 1, the last message's 2).  The walk appends %LMQ%q9's units at 20 (after the
    ``fillPreBlank`` unit), 40 and 60, all past processOffset: the cut leaves write position 20, max 2147483647; no
    parsed unit goes to it, and the reput, going on at the last %LMQ%q9 entry, dispatches its last two cut units
    again (the first lies below 2147483647)."""
    sc = past_2gib_embedded_to_entry_scenario(line, name="mixed-blank-back")
    first, *rest, last = sc["messages"]
    assert first == {"topic": "T9", "queueId": 0, "bodySize": 100} and last["topic"] == "T9", (first, last)
    own = {"topic": MIXED, "queueId": 0, "bodySize": 95}
    light = {"topic": "T8", "queueId": 0, "bodySize": 100, "properties": dict(LIGHT_PROPS)}
    messages: list[dict] = [own]
    k = 0
    for m in rest:
        n = len(m.get("batch", ())) if m.get("topic") == "T0" else 0
        if n and k <= BACK_T0 < k + n:
            batch = m["batch"]
            at = BACK_T0 - k
            assert batch[at] == {"bodySize": 4096}, batch[at]
            messages += [{**m, "batch": batch[:at]}] if at else []
            messages.append({"topic": MIXED, "queueId": 0, "bodySize": 4091})
            messages += [{**m, "batch": batch[at + 1:]}] if at + 1 < n else []
        else:
            messages.append(m)
        k += n
    return {**sc, "config": {**sc["config"], "enableMultiDispatch": "true", "enableLmq": "true"},
            "messages": [*messages, {**own, "keys": "K9"}, light]}

"""More DLedger crash scenarios of the inside-entry family (:mod:`broker_dledger_inside_scenarios`) for a batch queue
(``BatchConsumeQueue``) the walk wrote: where the start's reput is set (``processOffset - 1``) a well-formed message
for it."""
from __future__ import annotations

import base64
import struct

from broker_dledger_inside_scenarios import (
    EMBED_HOST_BODY,
    TO_ENTRY_TAIL_BODY,
    embedded_earlier_batch_message,
    embedded_earlier_batch_scenario,
    emptied_embedded_abort_scenarios,
)


def inside_batch_more_abort_scenarios(line: str) -> list[dict]:
    """On 5.5.1: ``<line>-dledger-abort-emptied-batch-embedded-earlier-batch-only``
    (:func:`embedded_earlier_batch_only_scenario`), ``-to-entry-batch-some`` and ``-to-entry-batch-some-past``
    (:func:`embedded_to_entry_batch_some_scenario`) and ``-to-entry-batch-past-over``
    (:func:`embedded_to_entry_batch_past_over_scenario`)."""
    if not line.startswith("5.5"):
        return []
    sc = emptied_embedded_abort_scenarios(line)[0]
    return [embedded_earlier_batch_only_scenario(sc), embedded_to_entry_batch_some_scenario(sc),
            embedded_to_entry_batch_some_scenario(sc, past=True), embedded_to_entry_batch_past_over_scenario(sc)]


def embedded_earlier_batch_only_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-earlier-batch-only`` (5.5.1): the -earlier-batch store
    (:func:`broker_dledger_inside_scenarios.embedded_earlier_batch_scenario`: both data files walked, the cut still
    happening) with its last message (as long, after B9's) to B9/0 instead of B7/0: B7/0's only unit is that of
    message 10 of the first data file, so the walk wrote B7/0 in an earlier data file only; where the reput is set
    (processOffset - 1, B9/0's max, the cut taking both B9/0 units) the well-formed B7/0 message of
    :func:`broker_dledger_inside_scenarios.embedded_earlier_batch_message`, then 'x' bytes."""
    out = embedded_earlier_batch_scenario(sc)
    *rest, tail = out["messages"]
    assert len(tail["topic"]) == 2 and len(base64.b64decode(tail["body"])) == TO_ENTRY_TAIL_BODY
    assert len(base64.b64decode(rest[-2]["body"])) == EMBED_HOST_BODY and embedded_earlier_batch_message()
    return {**out, "messages": [*rest, {**tail, "topic": "B9"}], "name": f"{out['name']}-only"}


# -to-entry-batch-some: the B9/0 record after the host (the scenario's B9 message: its record's size, and where its
# topic's length byte lies in it) and the queue offset field of the B9/0 message parsed over it
SOME_B9_SIZE = 239
SOME_B9_TOPIC_AT = 188
SOME_B9_PROPS = b"KEYS\x01k9\x02UNIQ_KEY\x017F00000100002A9F000000000999\x02"
SOME_QUEUE_OFFSET = 7


def embedded_to_entry_batch_some_messages(past: bool = False) -> tuple[int, bytes, bytes, int]:
    """Where the reput of the -to-entry-batch-some store is set (processOffset - 1, B9/0's max after the cut), the
    first B9/0 message there (that of -to-entry-batch), the header and body length field of the second (88 bytes),
    whose body runs over the host record's tail and B9's entry up to its record's topic, and that second message's
    size: it ends where B9's record does, at the last message's entry.  ``past``: those of the
    -to-entry-batch-past-over store (the reput set where -to-entry-batch-past's is)."""
    from broker_dledger_2gib import embedded_message
    from broker_dledger_inside_scenarios import (
        EMBED_HOST_AT,
        TO_ENTRY_HOST_TAIL,
        embedded_to_entry_batch_messages,
    )
    reput, first, _second = embedded_to_entry_batch_messages(past)
    b9_at = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL) + 48
    at = reput + len(first)
    body = bytes(b9_at + SOME_B9_TOPIC_AT - at - 88)
    head = embedded_message(at, body, SOME_B9_PROPS, topic=b"B9", queue_offset=SOME_QUEUE_OFFSET)[:88]
    assert struct.unpack(">i", head[:4])[0] == b9_at + SOME_B9_SIZE - at
    return reput, first, head, b9_at + SOME_B9_SIZE - at


def embedded_to_entry_batch_some_scenario(sc: dict, past: bool = False) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-batch-some`` (5.5.1): the -to-entry store with its last
    message to B9/0 too (B9/0 then has two units the cut takes) and, where the reput is set (processOffset - 1), the
    first B9/0 message of -to-entry-batch and a second whose body swallows the host record's tail and B9's entry up to
    its record's topic, so that its topic and properties are B9's record's and it ends at the last message's entry:
    the reput goes on there and dispatches the last B9/0 record's cut unit again, not B9's (inside the parsed one).
    ``past`` (``-to-entry-batch-some-past``): one more B9/0 message after it (as long), with a body byte flipped: the
    walk ends there (``processOffset`` and the messages where the reput is set the same), and the reput then reaches
    it, a record past the walk's end (its check reads no CRC)."""
    from broker_dledger_inside_scenarios import EMBED_HOST_AT, embedded_to_entry_scenario
    reput, first, head, _size = embedded_to_entry_batch_some_messages()
    to_entry = embedded_to_entry_scenario(sc)
    *rest, host, b9, tail = to_entry["messages"]
    hb = bytearray(b"x" * EMBED_HOST_BODY)
    run = first + head
    hb[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(run)] = run
    more = [{**tail, "topic": "B9", "uniqKey": "7F00000100002A9F000000000996"}] if past else []
    out = {**to_entry, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9,
                                    {**tail, "topic": "B9"}, *more], "name": f"{to_entry['name']}-batch-some"}
    if past:
        out = {**out, "damageMessage": sum(1 for m in out["messages"] if "topic" in m) - 1,
               "name": f"{out['name']}-past"}
    return out


def embedded_to_entry_batch_past_over_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-batch-past-over`` (5.5.1): the -to-entry-batch-past
    store (B9's message and the last one, damaged, to B9/0: the walk ends at the damaged one, the cut takes B9's unit)
    whose second B9/0 message where the reput is set is -to-entry-batch-some's (its body running over the host
    record's tail and B9's entry up to its record's topic, :func:`embedded_to_entry_batch_some_messages`): it ends
    where B9's record does, at the damaged message's entry, so the reput goes on there past the cut B9 unit (not
    dispatched again) and dispatches the damaged B9/0 message alone, a record past the walk's end."""
    from broker_dledger_inside_scenarios import EMBED_HOST_AT, embedded_to_entry_batch_scenario
    reput, first, head, _size = embedded_to_entry_batch_some_messages(past=True)
    past = embedded_to_entry_batch_scenario(sc, past=True)
    *rest, host, b9, tail = past["messages"]
    hb = bytearray(b"x" * EMBED_HOST_BODY)
    run = first + head
    hb[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(run)] = run
    return {**past, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9, tail],
            "name": f"{past['name']}-over"}

"""The inside-entry DLedger crash scenarios (:mod:`broker_dledger_inside_scenarios`) whose cases only the replay of an
ordinary queue (:mod:`store_format.dledger_inside_replay`) models: the -past-cut-two-some layout (two cut units, the
parsed message ending where the first cut record ends, so that the reput goes on at the second one's entry, then the
damaged message and the last one past the walk's end) for T6/0, a topic of its own with no unit below processOffset,
so that the 5.5.1 cut leaves it no file (``-past-cut-two-some-emptied``, ``-emptied-zero``), and the same with the
parsed message ending where the second cut record ends, so that the reput dispatches neither cut unit again
(``-past-cut-two-over-emptied``, ``-emptied-zero``)."""
from __future__ import annotations

import base64

from broker_dledger_inside_past_more_scenarios import (
    PAST_OVER_CUT_END,
    PAST_OVER_PROPS,
    embedded_to_entry_past_cut_two_over_scenario,
)
from broker_dledger_inside_scenarios import (
    EMBED_HOST_AT,
    EMBED_HOST_BODY,
    EMBED_PROCESS_OFFSET,
    TO_ENTRY_HOST_TAIL,
    TO_ENTRY_QUEUE_OFFSET,
)

# the properties of the second cut record (-past-cut-two-over's kC message), which the parsed message ending there ends
# with
OVER_TWO_PROPS = b"KEYS\x01kC\x02UNIQ_KEY\x017F00000100002A9F000000000993\x02"

# the topic of the cut records, of the records past the walk's end and of the parsed message: no other message's
EMPTIED_SOME_TOPIC = "T6"


def replay_scenarios(base: dict) -> list[dict]:
    """On the -emptied-batch-embedded store ``base`` (5.5.1):
    :func:`embedded_to_entry_past_cut_two_some_emptied_scenario`, its parsed message at queue offset
    :data:`broker_dledger_inside_scenarios.TO_ENTRY_QUEUE_OFFSET` and at 0."""
    return [embedded_to_entry_past_cut_two_some_emptied_scenario(base, zero, over)
            for over in (False, True) for zero in (False, True)]


def embedded_to_entry_past_cut_two_some_emptied_scenario(sc: dict, zero: bool = False, over: bool = False) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-past-cut-two-some-emptied`` (5.5.1): the
    -past-cut-two-some store
    (:func:`broker_dledger_inside_past_rest_scenarios.embedded_to_entry_past_cut_two_some_scenario`) with its four
    messages after B9's (two cut, the damaged one and the last) and the parsed message for
    :data:`EMPTIED_SOME_TOPIC`/0, which no message below processOffset goes to: the walk's units of it are its queue
    offsets 0 and 1, both cut, the first at a file's start, so the cut leaves it no file (5.5.1: max -1); the reput
    goes on at the second cut record's entry (the first inside the parsed message: not dispatched again), then the
    damaged message and the last one (queue offsets 2 and 3).  The parsed message's queue offset:
    :data:`broker_dledger_inside_scenarios.TO_ENTRY_QUEUE_OFFSET` (its file where that falls, ``fillPreBlank`` units
    before it, every later unit dropped below the write position); ``zero`` (``-emptied-zero``): 0 (its unit at 0,
    the second cut unit at 20, the two records past the walk's end at 40 and 60).  ``over``
    (``-past-cut-two-over-emptied``): the parsed message ends where the second cut record ends (its properties that
    record's, as -past-cut-two-over's), the reput going on at the damaged message's entry: no cut unit dispatched
    again, the records past the walk's end after the parsed unit (with ``zero`` at 20 and 40)."""
    from broker_dledger_2gib import embedded_message
    two = embedded_to_entry_past_cut_two_over_scenario(sc)
    reput = EMBED_PROCESS_OFFSET + 2 * 300 - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    # where the parsed message ends: the first cut record's end, or (over) the second's, its properties that record's
    cut_end, props = (PAST_OVER_CUT_END + 48 + 300, OVER_TWO_PROPS) if over else (PAST_OVER_CUT_END, PAST_OVER_PROPS)
    msg = embedded_message(reput, b"o" * (cut_end - reput - 88 - 3 - 2 - len(props)), props,
                           topic=EMPTIED_SOME_TOPIC.encode(), queue_offset=0 if zero else TO_ENTRY_QUEUE_OFFSET)
    assert reput + len(msg) == cut_end, (reput, len(msg))
    *rest, host, b9, last, c, d, e = two["messages"]
    assert all(m.get("topic") != EMPTIED_SOME_TOPIC for m in two["messages"])
    assert all(m["topic"] == "T0" for m in (last, c, d, e)), (last, c, d, e)
    hb = bytearray(base64.b64decode(host["body"]))
    head = msg[:host_end - reput - len(TO_ENTRY_HOST_TAIL)]
    hb[len(hb) - len(head):] = head
    return {**two, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9,
                                *({**m, "topic": EMPTIED_SOME_TOPIC} for m in (last, c, d, e))],
            "name": (two["name"] if over else two["name"].replace("-two-over", "-two-some")) + "-emptied"
            + ("-zero" if zero else "")}

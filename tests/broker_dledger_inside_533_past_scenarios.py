"""The inside-entry DLedger crash scenarios (:mod:`broker_dledger_inside_scenarios`) on the 5.3.3 line (the queues kept
on disk: 5.3.3 cuts only the queues it loads) whose start's reput reaches records past the walk's end of a queue the
5.3.3 cut left with no file: the 5.3.3 counterparts of the 5.5.1 ``-past-cut-two-some-emptied`` and
``-past-cut-two-over-emptied`` stores (:mod:`broker_dledger_inside_replay_scenarios`).  The 5.3.3 cut keeps that
queue's max at ``processOffset``, where ``doRecheckReputOffsetFromCq`` sets the reput (not one byte before it)."""
from __future__ import annotations

import base64

from broker_dledger_inside_past_more_scenarios import (
    PAST_OVER_CUT_END,
    PAST_OVER_PROPS,
    embedded_to_entry_past_cut_two_over_scenario,
)
from broker_dledger_inside_replay_scenarios import EMPTIED_SOME_TOPIC, OVER_TWO_PROPS
from broker_dledger_inside_scenarios import (
    EMBED_HOST_AT,
    EMBED_HOST_BODY,
    EMBED_PROCESS_OFFSET,
    TO_ENTRY_HOST_TAIL,
    TO_ENTRY_QUEUE_OFFSET,
)

# where the 5.3.3 reput is set in these stores: processOffset (the -past-cut-two stores' processOffset lies two
# 300-byte records past the -emptied-kept-embedded store's)
PAST_533_REPUT = EMBED_PROCESS_OFFSET + 2 * 300


def past_533_scenarios(base: dict) -> list[dict]:
    """On the 5.3.3 -emptied-kept-embedded store ``base``: :func:`past_533_scenario`, ``-some`` and ``-over``, the
    parsed message's queue offset :data:`broker_dledger_inside_scenarios.TO_ENTRY_QUEUE_OFFSET` and 0."""
    return [past_533_scenario(base, zero, over) for over in (False, True) for zero in (False, True)]


def past_533_scenario(sc: dict, zero: bool = False, over: bool = False) -> dict:
    """``<line>-dledger-abort-emptied-kept-embedded-to-entry-past-cut-two-some-emptied`` (5.3.3, the queues kept):
    after the -emptied-kept-embedded store's last message (T9/0, the queue its cut empties) four 300-byte records for
    :data:`broker_dledger_inside_replay_scenarios.EMPTIED_SOME_TOPIC`/0 (keys ``kT``, ``kC``, ``kD``, ``kE``), the
    third damaged: the walk ends there, its units of T6/0 (queue offsets 0 and 1) both at or past processOffset, so
    the 5.3.3 cut deletes T6/0's file (on disk before the walk) and keeps its max at processOffset; where the reput
    is set (processOffset) a T6/0 message whose body covers the host's tail, T9's entry and the first T6/0 entry up
    to its record's properties, ending where that record ends: the reput goes on at the second T6/0 entry (the first
    cut unit inside the parsed message), dispatching that cut unit again, then the damaged message and the last one
    (queue offsets 2 and 3).  The parsed message's queue offset
    :data:`broker_dledger_inside_scenarios.TO_ENTRY_QUEUE_OFFSET`, or 0 (``zero``, ``-emptied-zero``).  ``over``
    (``-past-cut-two-over-emptied``): the parsed message ends where the second cut record ends, the reput going on
    at the damaged message's entry: no cut unit dispatched again."""
    from broker_dledger_2gib import embedded_message
    two = embedded_to_entry_past_cut_two_over_scenario(sc)
    reput = PAST_533_REPUT
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    cut_end, props = (PAST_OVER_CUT_END + 48 + 300, OVER_TWO_PROPS) if over else (PAST_OVER_CUT_END, PAST_OVER_PROPS)
    msg = embedded_message(reput, b"o" * (cut_end - reput - 88 - 3 - 2 - len(props)), props,
                           topic=EMPTIED_SOME_TOPIC.encode(), queue_offset=0 if zero else TO_ENTRY_QUEUE_OFFSET)
    assert reput + len(msg) == cut_end, (reput, len(msg))
    *rest, host, t9, last, c, d, e = two["messages"]
    assert all(m.get("topic") != EMPTIED_SOME_TOPIC for m in two["messages"])
    assert t9["topic"] == "T9" and all(m["topic"] == "T0" for m in (last, c, d, e)), (t9, last, c, d, e)
    hb = bytearray(base64.b64decode(host["body"]))
    head = msg[:host_end - reput - len(TO_ENTRY_HOST_TAIL)]
    hb[len(hb) - len(head):] = head
    return {**two, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, t9,
                                *({**m, "topic": EMPTIED_SOME_TOPIC} for m in (last, c, d, e))],
            "name": (two["name"] if over else two["name"].replace("-two-over", "-two-some")) + "-emptied"
            + ("-zero" if zero else "")}

"""The inside-entry DLedger crash scenarios (:mod:`broker_dledger_inside_scenarios`) whose cases only the replay of an
ordinary queue with consume queue ext files (:mod:`store_format.dledger_inside_replay`, ``enableConsumeQueueExt``)
models: the -past-cut-two-some-emptied and -past-cut-two-over-emptied stores
(:mod:`broker_dledger_inside_replay_scenarios`: T6/0, a topic of its own with no unit below processOffset, left with
no file by the 5.5.1 cut, its first cut unit inside the parsed message, its records past the walk's end after it)
with ext files of 10 units (``-ext``, as the other ``-ext`` stores): each unit the reput dispatches into T6/0 puts its
ext unit first, a cut unit dispatched again a new one; and the -past-cut-two-over-wide and -past-cut-two-beyond
stores (:mod:`broker_dledger_inside_gate_scenarios`: T0/0's records past the walk's end that the rebuild's own
dispatch puts elsewhere than the broker, or into a file it creates where the broker puts units of its own) with
those ext files (``-ext``); and ``-past-cut-two-some-beyond-ext``: the -past-cut-two-some store (two T0/0 units cut,
the parsed T0/0 message ending where the first cut record ends, the reput going on at the second one's entry) whose
parsed message's PHYSICALOFFSET field puts its end past the walk's last T0/0 unit, with those ext files: the second
cut unit, dispatched again, dropped (at or below the max the parsed unit set; its ext unit put), the damaged message's
unit appended by the broker where the rebuild's own dispatch drops it."""
from __future__ import annotations

import base64

from broker_dledger_inside_gate_scenarios import gate_scenarios
from broker_dledger_inside_replay_scenarios import replay_scenarios

# ext files of 204 bytes: 10 units each, the 11th at the next file's start (ConsumeQueueExt.put)
EXT_REPLAY = {"enableConsumeQueueExt": "true", "mappedFileSizeConsumeQueueExt": "204"}


def ext_replay_scenarios(base: dict) -> list[dict]:
    """On the -emptied-batch-embedded store ``base`` (5.5.1): ``-past-cut-two-some-emptied-ext``, its ``-zero-ext``,
    ``-past-cut-two-over-emptied-ext`` and its ``-zero-ext`` (:func:`replay_scenarios` with :data:`EXT_REPLAY`),
    ``-past-cut-two-over-wide-ext`` and ``-past-cut-two-beyond-ext`` (:func:`gate_scenarios` with it), and
    :func:`embedded_to_entry_past_cut_two_some_beyond_scenario` with it."""
    return [{**sc, "config": {**sc["config"], **EXT_REPLAY}, "name": f"{sc['name']}-ext"}
            for sc in replay_scenarios(base) + gate_scenarios(base)
            + [embedded_to_entry_past_cut_two_some_beyond_scenario(base)]]


# -past-cut-two-some-beyond: how far past the second cut T0/0 record's end the parsed message's PHYSICALOFFSET field
# puts its end (below the damaged record's end, so that the broker appends that record's unit)
SOME_BEYOND_PAST = 24


def embedded_to_entry_past_cut_two_some_beyond_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-past-cut-two-some-beyond`` (5.5.1): the -past-cut-two-some
    store (:func:`broker_dledger_inside_past_rest_scenarios.embedded_to_entry_past_cut_two_some_scenario`) whose
    parsed T0/0 message (queue offset :data:`broker_dledger_inside_scenarios.TO_ENTRY_QUEUE_OFFSET`, ending where the
    first cut record ends) holds in its PHYSICALOFFSET field the offset at which its size ends
    :data:`SOME_BEYOND_PAST` bytes past the second cut record's end: ``putMessagePositionInfo`` takes that field, so
    the parsed unit ends past T0/0's last walk unit.  The reput goes on at the second cut record's entry: that cut
    unit, dispatched again, ends below the max the parsed unit set (dropped), then the damaged message (queue offset
    26) and the last one (27); the rebuild's own dispatch appends the parsed unit after every walk unit and drops the
    damaged message's unit, its queue offset below its write position."""
    from broker_dledger_2gib import embedded_message
    from broker_dledger_inside_past_more_scenarios import PAST_OVER_CUT_END, PAST_OVER_PROPS
    from broker_dledger_inside_past_rest_scenarios import embedded_to_entry_past_cut_two_some_scenario
    from broker_dledger_inside_scenarios import (
        EMBED_HOST_AT,
        EMBED_HOST_BODY,
        EMBED_PROCESS_OFFSET,
        TO_ENTRY_HOST_TAIL,
        TO_ENTRY_QUEUE_OFFSET,
    )
    some = embedded_to_entry_past_cut_two_some_scenario(sc)
    reput = EMBED_PROCESS_OFFSET + 2 * 300 - 1
    size = PAST_OVER_CUT_END - reput
    cut_end = PAST_OVER_CUT_END + 48 + 300   # the second cut T0/0 record's end
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    msg = embedded_message(cut_end + SOME_BEYOND_PAST - size, b"o" * (size - 88 - 3 - 2 - len(PAST_OVER_PROPS)),
                           PAST_OVER_PROPS, topic=b"T0", queue_offset=TO_ENTRY_QUEUE_OFFSET)
    assert len(msg) == size, (size, len(msg))
    *rest, host, b9, last, c, d, e = some["messages"]
    hb = bytearray(base64.b64decode(host["body"]))
    head = msg[:host_end - reput - len(TO_ENTRY_HOST_TAIL)]
    hb[len(hb) - len(head):] = head
    return {**some, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9, last, c, d, e],
            "name": f"{some['name']}-beyond"}

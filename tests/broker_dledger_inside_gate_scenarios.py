"""The inside-entry DLedger crash scenarios (:mod:`broker_dledger_inside_scenarios`) that reach a refusal the old
difference model of records past the walk's end (:mod:`store_format.dledger_inside_past`) kept for an ordinary queue
only as a gate, the replay of that queue (:mod:`store_format.dledger_inside_replay`) deciding what the broker writes:
``-past-cut-two-over-wide``, the -past-cut-two-over layout (two T0/0 units cut, the parsed T0/0 message ending where
the second cut record ends, so that the reput goes on at the damaged message's entry without dispatching the cut
units again) with consume queue files of 13 units, so that the rebuild's own dispatch, one unit further than the
broker, creates file 520 for the damaged message's unit, where the broker puts that unit at 500 (file 260's last
place) and creates file 520 for the last message's unit, which the rebuild appends past that file's start; and
``-past-cut-two-beyond``: two T0/0 units cut, the parsed T0/0 message ending where the damaged record (for T0/1) ends,
past the walk's end, so that the rebuild's own dispatch appends it after every walk unit, two units further than the
broker puts it, drops the next T0/0 record's unit, which the broker appends, and puts the last one's a unit further
than the broker."""
from __future__ import annotations

import base64

from broker_dledger_inside_past_far_scenarios import PAST_BEYOND_PROPS, PAST_WIDE_CQ_SIZE
from broker_dledger_inside_past_more_scenarios import PAST_OVER_CUT_END, embedded_to_entry_past_cut_two_over_scenario
from broker_dledger_inside_scenarios import (
    EMBED_HOST_AT,
    EMBED_HOST_BODY,
    EMBED_PROCESS_OFFSET,
    TO_ENTRY_HOST_TAIL,
    TO_ENTRY_QUEUE_OFFSET,
)

# -past-cut-two-beyond: where the damaged record (the second of the three T0 messages after the -to-entry store's last
# one, behind its 48-byte DLedger header) ends, which the parsed T0/0 message ends at
TWO_BEYOND_END = PAST_OVER_CUT_END + 48 + 300 + 48 + 300


def gate_scenarios(base: dict) -> list[dict]:
    """On the -emptied-batch-embedded store ``base`` (5.5.1): ``-to-entry-past-cut-two-over-wide`` (consume queue
    files of :data:`PAST_WIDE_CQ_SIZE` bytes: 520, where the rebuild's dispatch appends the damaged message's unit
    and the broker the last one's, a file's start) and :func:`embedded_to_entry_past_cut_two_beyond_scenario`."""
    over = embedded_to_entry_past_cut_two_over_scenario(base)
    return [{**over, "config": {**over["config"], "mappedFileSizeConsumeQueue": str(PAST_WIDE_CQ_SIZE)},
             "name": f"{over['name']}-wide"}, embedded_to_entry_past_cut_two_beyond_scenario(base)]


def embedded_to_entry_past_cut_two_beyond_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-past-cut-two-beyond`` (5.5.1): the -past-cut-two-over
    store (two T0/0 units cut, ``kC`` and the one before it; the damaged message ``kD``) whose damaged message goes
    to T0/1 and with one T0/0 message more after the last one (``kF``), and whose host body ends with the head of a
    T0/0 message (queue offset :data:`TO_ENTRY_QUEUE_OFFSET`) from the reput's start to the damaged record's end
    (:data:`TWO_BEYOND_END`), its topic and properties the damaged record's: the reput goes on at ``kE``'s entry,
    dispatching none of the cut units again, then ``kE`` and ``kF`` (queue offsets 26, 27)."""
    from broker_dledger_2gib import embedded_message
    over = embedded_to_entry_past_cut_two_over_scenario(sc)
    reput = EMBED_PROCESS_OFFSET + 2 * 300 - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    size = TWO_BEYOND_END - reput - 88 - 3 - 2 - len(PAST_BEYOND_PROPS)
    msg = embedded_message(reput, b"o" * size, PAST_BEYOND_PROPS, topic=b"T0", queue_offset=TO_ENTRY_QUEUE_OFFSET)
    assert reput + len(msg) == TWO_BEYOND_END, (reput, len(msg))
    *rest, host, b9, last, c, damaged, e = over["messages"]
    assert (c["keys"], damaged["keys"], e["keys"]) == ("kC", "kD", "kE"), over["messages"][-3:]
    hb = bytearray(base64.b64decode(host["body"]))
    head = msg[:host_end - reput - len(TO_ENTRY_HOST_TAIL)]
    hb[len(hb) - len(head):] = head
    f = {**e, "keys": "kF", "uniqKey": "7F00000100002A9F000000000992"}
    return {**over, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9, last, c,
                                 {**damaged, "queueId": 1}, e, f],
            "name": over["name"].replace("-two-over", "-two-beyond")}

"""DLedger crash scenarios of the inside-entry family (:mod:`broker_dledger_inside_scenarios`) for a queue holding a
record's own units and light ones (``%LMQ%q1``, queue 0: multi-dispatch beside messages put to that topic itself)
that the reput, set inside an entry, replays: ``-light-mixed-skip-dropped``
(:func:`embedded_light_mixed_skip_dropped_scenario`), a cut light unit the walk's dispatch dropped that the reput
appends, and ``-light-mixed-skip-dropped-past`` (:func:`embedded_light_mixed_skip_dropped_past_scenario`): records
past the walk's end after a cut unit the reput goes on past, and ``-light-mixed-skip-t0``
(:func:`embedded_light_mixed_skip_t0_scenario`): no parsed unit there, the reput putting back only the last cut unit
(``-light-mixed-skip-t0-past``: then records past the walk's end),
``-light-mixed-emptied`` (:func:`embedded_light_mixed_emptied_scenario`): a queue the cut left with no file, and
``-earlier-light-mixed`` (:func:`embedded_earlier_light_mixed_scenario`): light units in the walk's earlier data file
(``-earlier-light-mixed-t7``: no parsed unit there).
:func:`broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios` lists them (:func:`mixed_replay_scenarios`)."""
from __future__ import annotations

import base64
import struct

from broker_dledger_inside_again_scenarios import SOME_B9_SIZE
from broker_dledger_inside_scenarios import (
    EMBED_HOST_AT,
    EMBED_HOST_BODY,
    EMBED_PROCESS_OFFSET,
    LIGHT_PROPS,
    LIGHT_TAIL,
    LIGHT_TAIL_BODY,
    TO_ENTRY_HOST_TAIL,
    embedded_light_scenario,
)

# -light-mixed-skip-dropped: the message put to %LMQ%q1 itself between B9's and the last one (keys kA), its body's
# length (as long a record as the last one's: LIGHT_TAIL), its properties string, and the own queue offset of the
# message parsed where the reput is set (not 0, below the write position the cut leaves: dropped)
SKIP_OWN_BODY = LIGHT_TAIL_BODY + LIGHT_PROPS - 5
SKIP_OWN_UNIQ = "7F00000100002A9F000000000995"
SKIP_OWN_PROPS = b"KEYS\x01kA\x02UNIQ_KEY\x01" + SKIP_OWN_UNIQ.encode() + b"\x02"
SKIP_PARSED_QUEUE_OFFSET = 1


def mixed_replay_scenarios(sc: dict) -> list[dict]:
    """From the -emptied-batch-embedded store ``sc`` (5.5.1): ``-light-mixed-skip-dropped``
    (:func:`embedded_light_mixed_skip_dropped_scenario`) and ``-light-mixed-skip-dropped-past``
    (:func:`embedded_light_mixed_skip_dropped_past_scenario`), ``-light-mixed-skip-t0``
    (:func:`embedded_light_mixed_skip_t0_scenario`), ``-light-mixed-skip-all-past``
    (:func:`embedded_light_mixed_skip_all_past_scenario`), ``-light-mixed-emptied``
    (:func:`embedded_light_mixed_emptied_scenario`) and ``-earlier-light-mixed``
    (:func:`embedded_earlier_light_mixed_scenario`)."""
    return [embedded_light_mixed_skip_dropped_scenario(sc), embedded_light_mixed_skip_dropped_past_scenario(sc),
            embedded_light_mixed_skip_t0_scenario(sc), embedded_light_mixed_skip_all_past_scenario(sc),
            embedded_light_mixed_emptied_scenario(sc), embedded_earlier_light_mixed_scenario(sc),
            embedded_earlier_light_mixed_scenario(sc, light=False), embedded_light_mixed_skip_t0_past_scenario(sc)]


def embedded_light_mixed_skip_dropped_message() -> tuple[int, bytes, int]:
    """Where the reput of the -light-mixed-skip-dropped store is set (processOffset - 1: the -light store's moved on
    by the extra record's size), the header and body length field (88 bytes) of the message parsed there (topic
    %LMQ%q1, queue 0, own queue offset :data:`SKIP_PARSED_QUEUE_OFFSET`), whose body runs over the host record's
    tail, B9's entry and the %LMQ%q1 entry up to its record's topic, and that message's size: it ends where that
    record does, at the last message's entry."""
    from broker_dledger_2gib import embedded_message
    reput = EMBED_PROCESS_OFFSET + 2 * LIGHT_TAIL - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    own_at = host_end + 48 + SOME_B9_SIZE + 48
    head = embedded_message(reput, bytes(own_at + 88 + SKIP_OWN_BODY - reput - 88), SKIP_OWN_PROPS,
                            topic=b"%LMQ%q1", queue_offset=SKIP_PARSED_QUEUE_OFFSET)[:88]
    assert struct.unpack(">i", head[:4])[0] == own_at + LIGHT_TAIL - reput
    return reput, head, own_at + LIGHT_TAIL - reput


def embedded_light_mixed_skip_dropped_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-light-mixed-skip-dropped`` (5.5.1): the -light store
    (:func:`broker_dledger_inside_scenarios.embedded_light_scenario`: light units of %LMQ%q1 at 0-40, below
    processOffset; its last message, T0/0, also to %LMQ%q1, light queue offset 3) with one more message between B9's
    and the last, put to topic %LMQ%q1 itself (queue 0, own queue offset 0, keys ``kA``; as long a record as the
    last one): the walk's ``putMessagePositionInfo`` appends its own unit at 60 and drops the last message's light
    unit (queue offset 3 below write position 80).  Where the reput is set (processOffset - 1) a message whose body
    swallows the host record's tail, B9's entry and that %LMQ%q1 entry up to its record's topic
    (:func:`embedded_light_mixed_skip_dropped_message`): its topic and properties are that record's, its own queue
    offset :data:`SKIP_PARSED_QUEUE_OFFSET` (below the write position 60 the cut leaves: dropped), and it ends at the
    last message's entry, so the reput goes on there and dispatches the last message again, not the %LMQ%q1 one
    (inside the parsed message): its light unit, queue offset 3, appended at 60, where the walk's queue holds none."""
    reput, head, _size = embedded_light_mixed_skip_dropped_message()
    base = embedded_light_scenario(sc)
    *rest, host, b9, tail = base["messages"]
    assert tail["topic"] == "T0" and tail["properties"]["INNER_MULTI_QUEUE_OFFSET"] == "3", tail
    hb = bytearray(b"x" * EMBED_HOST_BODY)
    hb[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(head)] = head
    own = {k: v for k, v in tail.items() if k != "properties"}
    own = {**own, "topic": "%LMQ%q1", "queueId": 0, "keys": "kA", "uniqKey": SKIP_OWN_UNIQ,
           "body": base64.b64encode(b"t" * SKIP_OWN_BODY).decode()}
    return {**base, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9, own, tail],
            "name": f"{base['name']}-mixed-skip-dropped"}


def embedded_light_mixed_skip_dropped_past_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-light-mixed-skip-dropped-past`` (5.5.1): the
    -light-mixed-skip-dropped store (:func:`embedded_light_mixed_skip_dropped_scenario`) with two more T0/0 messages
    after its last one, both also to %LMQ%q1 (light queue offsets 4 and 5), the first damaged (keys ``kD``, ``kE``):
    the walk ends at the damaged one, processOffset stays the -light-mixed-skip-dropped store's, and the reput,
    having gone on past the %LMQ%q1 record (inside the parsed message) and dispatched the last message again (its
    light unit, which the walk dropped, at 60), dispatches the two records past the walk's end into %LMQ%q1 by their
    light queue offsets from the state those left (80, 100)."""
    return _two_past(embedded_light_mixed_skip_dropped_scenario(sc))



# -light-mixed-skip-t0: the T0/0 message between the %LMQ%q1 one and the last (keys kB, as long a record), its body's
# length, and the queue offset of the T0/0 message parsed where the reput is set (past every T0/0 unit)
SKIP_T0_BODY = LIGHT_TAIL_BODY + LIGHT_PROPS
SKIP_T0_UNIQ = "7F00000100002A9F000000000992"
SKIP_T0_QUEUE_OFFSET = 1000


def embedded_light_mixed_skip_t0_message() -> tuple[int, bytes, int]:
    """Where the reput of the -light-mixed-skip-t0 store is set (processOffset - 1: the -light store's moved on by
    the two extra records' sizes), the header and body length field (88 bytes) of the T0/0 message parsed there
    (queue offset :data:`SKIP_T0_QUEUE_OFFSET`), whose body runs over the host record's tail, B9's entry, the %LMQ%q1
    entry and the T0/0 entry after it up to that record's topic, and that message's size: it ends where that T0/0
    record does, at the last message's entry; its topic and properties are that record's (T0/0 alone)."""
    from broker_dledger_2gib import embedded_message
    reput = EMBED_PROCESS_OFFSET + 3 * LIGHT_TAIL - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    t0_at = host_end + 48 + SOME_B9_SIZE + 48 + LIGHT_TAIL + 48
    head = embedded_message(reput, bytes(t0_at + SKIP_T0_BODY - reput), b"p" * len(SKIP_OWN_PROPS), topic=b"T0",
                            queue_offset=SKIP_T0_QUEUE_OFFSET)[:88]
    assert struct.unpack(">i", head[:4])[0] == t0_at + LIGHT_TAIL - reput
    return reput, head, t0_at + LIGHT_TAIL - reput


def embedded_light_mixed_skip_t0_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-light-mixed-skip-t0`` (5.5.1): the -light-mixed-skip-dropped
    store (:func:`embedded_light_mixed_skip_dropped_scenario`: the %LMQ%q1 own unit the walk appends at 60, the last
    message's light unit it drops below 80) with a T0/0 message (keys ``kB``) between the %LMQ%q1 one and the last,
    and the message where the reput is set swallowing the host record's tail, B9's, the %LMQ%q1 and that T0/0 entry
    (:func:`embedded_light_mixed_skip_t0_message`): for T0/0 alone, so that no parsed unit goes to %LMQ%q1, and the
    reput, going on at the last message's entry past the %LMQ%q1 record, puts back only the last cut unit of
    %LMQ%q1: its light unit (queue offset 3), which the walk dropped, appended at the write position 60 the cut
    left."""
    reput, head, _size = embedded_light_mixed_skip_t0_message()
    base = embedded_light_mixed_skip_dropped_scenario(sc)
    *rest, host, b9, own, tail = base["messages"]
    hb = bytearray(b"x" * EMBED_HOST_BODY)
    hb[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(head)] = head
    t0 = {k: v for k, v in tail.items() if k != "properties"}
    t0 = {**t0, "keys": "kB", "uniqKey": SKIP_T0_UNIQ, "body": base64.b64encode(b"t" * SKIP_T0_BODY).decode()}
    return {**base, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9, own, t0, tail],
            "name": base["name"].replace("-skip-dropped", "-skip-t0")}


# -light-mixed-skip-all-past: the queue offset of the T0/0 message parsed where the reput is set (past every T0/0 unit)
SKIP_ALL_QUEUE_OFFSET = 1000
# the properties string of a record also to %LMQ%q1 (KEYS, UNIQ_KEY and the two multi-dispatch pairs): its length
LIGHT_RECORD_PROPS = LIGHT_TAIL - 88 - LIGHT_TAIL_BODY - 3 - 2


def embedded_light_mixed_skip_all_past_message() -> tuple[int, bytes, int]:
    """Where the reput of the -light-mixed-skip-all-past store is set (that of -light-mixed-skip-dropped) and the
    header and body length field (88 bytes) of the T0/0 message parsed there (queue offset
    :data:`SKIP_ALL_QUEUE_OFFSET`), whose body runs over the host record's tail, B9's entry, the %LMQ%q1 entry, the
    last walked message's entry and the damaged record's entry up to its topic, and that message's size: it ends
    where the damaged record does, at the next record's entry; its topic and properties are the damaged record's
    (T0, also to %LMQ%q1 with light queue offset 4)."""
    from broker_dledger_2gib import embedded_message
    reput, _head, size = embedded_light_mixed_skip_dropped_message()
    damaged_at = reput + size + 48 + LIGHT_TAIL + 48
    head = embedded_message(reput, bytes(damaged_at + LIGHT_TAIL_BODY - reput), b"p" * LIGHT_RECORD_PROPS,
                            topic=b"T0", queue_offset=SKIP_ALL_QUEUE_OFFSET)[:88]
    assert struct.unpack(">i", head[:4])[0] == damaged_at + LIGHT_TAIL - reput
    return reput, head, damaged_at + LIGHT_TAIL - reput


def embedded_light_mixed_skip_all_past_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-light-mixed-skip-all-past`` (5.5.1): the
    -light-mixed-skip-dropped-past store (:func:`embedded_light_mixed_skip_dropped_past_scenario`) with the message
    where the reput is set swallowing every cut record and the damaged one
    (:func:`embedded_light_mixed_skip_all_past_message`): its topic and properties the damaged record's (T0/0, queue
    offset :data:`SKIP_ALL_QUEUE_OFFSET`, and %LMQ%q1 light queue offset 4), so that the reput dispatches its units
    (%LMQ%q1: at the write position 60 the cut left), goes on past both cut %LMQ%q1 units (not dispatched again),
    then dispatches the last record (light queue offset 5) from there."""
    base = embedded_light_mixed_skip_dropped_past_scenario(sc)
    reput, head, _size = embedded_light_mixed_skip_all_past_message()
    *rest, host, b9, own, tail, d, e = base["messages"]
    hb = bytearray(b"x" * EMBED_HOST_BODY)
    hb[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(head)] = head
    return {**base, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9, own, tail, d, e],
            "name": base["name"].replace("-skip-dropped-past", "-skip-all-past")}


# -light-mixed-emptied: the light queue offset of the T5/0 message parsed where the reput is set (also to %LMQ%q1)
EMPTIED_LIGHT_QUEUE_OFFSET = 7


def embedded_light_mixed_emptied_message() -> tuple[int, bytes]:
    """Where the reput of the -light-mixed-emptied store is set (processOffset - 1: the -emptied-batch-embedded
    store's moved on by the two extra records' sizes) and the T5/0 message there, also for %LMQ%q1 (light queue
    offset :data:`EMPTIED_LIGHT_QUEUE_OFFSET`), whose properties string ends with the host record's tail, so that it
    ends at B9's entry."""
    from broker_dledger_2gib import embedded_message
    reput = EMBED_PROCESS_OFFSET + 2 * LIGHT_TAIL - 1
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    props = b"KEYS\x01E5\x02INNER_MULTI_DISPATCH\x01%LMQ%q1\x02INNER_MULTI_QUEUE_OFFSET\x01" + \
        str(EMPTIED_LIGHT_QUEUE_OFFSET).encode() + TO_ENTRY_HOST_TAIL
    body = (b"embedded!!" * 200)[:host_end - reput - 88 - 3 - 2 - len(props)]
    msg = embedded_message(reput, body, props)
    assert reput + len(msg) == host_end, (reput, len(msg), host_end)
    return reput, msg


def embedded_light_mixed_emptied_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-light-mixed-emptied`` (5.5.1), from the -emptied-batch-embedded
    store ``sc`` with ``enableMultiDispatch``/``enableLmq``: after B9's message one put to topic %LMQ%q1 itself
    (queue 0, own queue offset 0, keys ``kA``) and a last T0/0 message also to %LMQ%q1 (light queue offset 0): the
    walk appends them at 0 and 20 (queue offset 0 is never checked), both past processOffset, so the cut leaves
    %LMQ%q1 no file (max -1); where the reput is set the T5/0 message also to %LMQ%q1
    (:func:`embedded_light_mixed_emptied_message`) ends at B9's entry: its light unit gets a new file where queue
    offset 7 falls (``fillPreBlank`` units before it), and the reput, going on at B9's entry, appends both cut units
    after it (queue offsets 0)."""
    return light_mixed_emptied(sc, embedded_light_mixed_emptied_message()[1])


def light_mixed_emptied(sc: dict, msg: bytes) -> dict:
    """Store ``sc`` (its last message the one the cut empties: B9's or T9's) with ``enableMultiDispatch``/``enableLmq``,
    the host record before it carrying ``msg`` (the record the reput parses) at its body's end, and after that last
    message one put to topic %LMQ%q1 itself (queue 0, own queue offset 0, keys ``kA``) and a last T0/0 message also to
    %LMQ%q1 (light queue offset 0); named ``<sc>-light-mixed-emptied``."""
    *rest, host, last = sc["messages"]
    body = bytearray(b"x" * EMBED_HOST_BODY)
    head = msg[:-len(TO_ENTRY_HOST_TAIL)]
    body[len(body) - len(head):] = head
    own = {**last, "topic": "%LMQ%q1", "queueId": 0, "body": base64.b64encode(b"t" * SKIP_OWN_BODY).decode(),
           "keys": "kA", "uniqKey": SKIP_OWN_UNIQ}
    tail = {**last, "topic": "T0", "queueId": 0, "body": base64.b64encode(b"t" * LIGHT_TAIL_BODY).decode(),
            "keys": "kT", "uniqKey": "7F00000100002A9F000000000997",
            "properties": {"INNER_MULTI_DISPATCH": "%LMQ%q1", "INNER_MULTI_QUEUE_OFFSET": "0"}}
    return {**sc, "config": {**sc["config"], "enableMultiDispatch": "true", "enableLmq": "true"},
            "messages": [*rest, {**host, "body": base64.b64encode(bytes(body)).decode()}, last, own, tail],
            "name": f"{sc['name']}-light-mixed-emptied"}


def embedded_earlier_light_mixed_scenario(sc: dict, light: bool = True) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-earlier-light-mixed`` (5.5.1): the -earlier-light store
    (:func:`broker_dledger_inside_light_scenarios.embedded_earlier_light_scenario`: light units 0 and 1 of %LMQ%q1 in
    the walk's earlier data file, the T7/0 message where the reput is set also to %LMQ%q1) with its last message,
    after B9's, put to topic %LMQ%q1 itself (queue 0, own queue offset 0; its body shorter by the 5 bytes its topic
    adds: the same layout): the walk's last data file holds an own unit of %LMQ%q1, which its
    ``putMessagePositionInfo`` appends at 40 after the earlier file's light units, past processOffset (cut).
    ``light`` false: ``-earlier-light-mixed-t7``, the messages where the reput is set those of the -earlier store
    (:func:`broker_dledger_inside_scenarios.embedded_earlier_messages`: T7/0 and T6/0 alone), no parsed unit going
    to %LMQ%q1."""
    from broker_dledger_inside_light_scenarios import embedded_earlier_light_scenario
    from broker_dledger_inside_scenarios import embedded_earlier_messages
    base = embedded_earlier_light_scenario(sc)
    *rest, host, b9, tail = base["messages"]
    if not light:
        reput, run = embedded_earlier_messages()
        body = bytearray(b"x" * EMBED_HOST_BODY)
        body[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(run)] = run
        host = {**host, "body": base64.b64encode(bytes(body)).decode()}
    assert tail["topic"] == "T6" and "properties" not in tail, tail
    body = base64.b64decode(tail["body"])
    tail = {**tail, "topic": "%LMQ%q1", "queueId": 0, "body": base64.b64encode(body[:-5]).decode()}
    return {**base, "messages": [*rest, host, b9, tail], "name": f"{base['name']}-mixed{'' if light else '-t7'}"}


def embedded_light_mixed_skip_t0_past_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-light-mixed-skip-t0-past`` (5.5.1): the -light-mixed-skip-t0
    store (:func:`embedded_light_mixed_skip_t0_scenario`) with two more T0/0 messages after its last one, both also
    to %LMQ%q1 (light queue offsets 4 and 5), the first damaged (keys ``kD``, ``kE``): the walk ends there, and the
    reput, having put back the last cut unit of %LMQ%q1 (the light unit the walk dropped, at 60), dispatches the two
    records past the walk's end from there (80, 100)."""
    return _two_past(embedded_light_mixed_skip_t0_scenario(sc))


def _two_past(base: dict) -> dict:
    """``base`` with two more messages like its last one (T0/0, also to %LMQ%q1: light queue offsets 4 and 5, keys
    ``kD``, ``kE``), the first damaged: the walk ends there, both records past its end."""
    tail = base["messages"][-1]
    more = [{**tail, "keys": f"k{k}", "uniqKey": f"7F00000100002A9F00000000099{n}",
             "properties": {**tail["properties"], "INNER_MULTI_QUEUE_OFFSET": str(lo)}}
            for k, n, lo in (("D", 3, 4), ("E", 4, 5))]
    puts = sum(1 for m in base["messages"] if "topic" in m)
    return {**base, "messages": [*base["messages"], *more], "damageMessage": puts, "name": f"{base['name']}-past"}

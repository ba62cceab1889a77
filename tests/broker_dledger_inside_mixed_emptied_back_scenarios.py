"""DLedger crash scenarios of the inside-entry family (:mod:`broker_dledger_inside_scenarios`) for a queue holding a
record's own units and light ones (``%LMQ%q1``, queue 0) every unit of which the cut took (its files deleted) and
that the reput, set inside an entry, with no parsed unit there, puts back only in part: ``-light-mixed-emptied-back``
(:func:`embedded_light_mixed_emptied_back_scenario`), with ext files ``-ext`` and ``-own-ext``
(:func:`emptied_back_ext_scenario`).
:func:`broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios` lists them
(:func:`mixed_emptied_back_scenarios`)."""
from __future__ import annotations

import base64

from broker_dledger_inside_mixed_replay_scenarios import (
    SKIP_T0_BODY,
    SKIP_T0_UNIQ,
    embedded_light_mixed_emptied_message,
    embedded_light_mixed_skip_t0_message,
    light_mixed_emptied,
)
from broker_dledger_inside_scenarios import EMBED_HOST_AT, EMBED_HOST_BODY

# -light-mixed-emptied-back: the light queue offset of the last message (also to %LMQ%q1), the only cut unit of
# %LMQ%q1 the reput puts back: not 0, so the new file gets fillPreBlank units before it
EMPTIED_BACK_LIGHT_QUEUE_OFFSET = 1


def mixed_emptied_back_scenarios(sc: dict) -> list[dict]:
    """From the -emptied-batch-embedded store ``sc`` (5.5.1): ``-light-mixed-emptied-back``
    (:func:`embedded_light_mixed_emptied_back_scenario`), its ext variants ``-light-mixed-emptied-back-ext`` and
    ``-light-mixed-emptied-back-own-ext`` (:func:`emptied_back_ext_scenario`, 5.5.1 only)."""
    back = embedded_light_mixed_emptied_back_scenario(sc)
    if not sc["name"].startswith("5.5"):   # the ext variants: 5.5.1 only (5.3.3 reads the same, no broker case)
        return [back]
    return [back, emptied_back_ext_scenario(back), emptied_back_ext_scenario(back, own=True)]


def emptied_back_ext_scenario(back: dict, own: bool = False) -> dict:
    """``-light-mixed-emptied-back-ext`` (5.5.1): the -light-mixed-emptied-back store ``back`` with
    ``enableConsumeQueueExt`` (ext files of 10 units): the walk puts ext unit 0 for the %LMQ%q1 own unit (a light
    unit none); the cut deletes the queue's file, its ext file stays; the light unit put back holds its tags code.
    ``own`` (``-light-mixed-emptied-back-own-ext``): the %LMQ%q1 record and the last one swapped (records of one
    size: the same layout, the same parsed message), the last one's light queue offset 0: the walk appends the light
    unit at 0 and the own unit at 20 (queue offset 0: no check), both cut (no file left); the reput, going on at the
    own record's entry, puts ext unit 1 for it and appends it in a new file at 0 holding that address."""
    msgs = back["messages"]
    name = back["name"]
    if own:
        *rest, lmq, t0, tail = msgs
        assert lmq["topic"] == "%LMQ%q1" and tail["properties"]["INNER_MULTI_QUEUE_OFFSET"] == \
            str(EMPTIED_BACK_LIGHT_QUEUE_OFFSET), (lmq, tail)
        tail = {**tail, "properties": {**tail["properties"], "INNER_MULTI_QUEUE_OFFSET": "0"}}
        msgs = [*rest, tail, t0, lmq]
        name = f"{name}-own"
    return {**back, "messages": msgs, "config": {**back["config"], "enableConsumeQueueExt": "true",
                                                 "mappedFileSizeConsumeQueueExt": "204"}, "name": f"{name}-ext"}


def embedded_light_mixed_emptied_back_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-light-mixed-emptied-back`` (5.5.1): the -light-mixed-emptied
    store's messages after B9's (one put to topic %LMQ%q1 itself, own queue offset 0, keys ``kA``, and a last T0/0
    message also to %LMQ%q1, here light queue offset :data:`EMPTIED_BACK_LIGHT_QUEUE_OFFSET`) with a T0/0 message
    (keys ``kB``) between them: the walk appends the own unit at 0 and the light unit at 20, both past
    processOffset, so the cut deletes %LMQ%q1's file (max -1, ``recoverTopicQueueTable``).  Where the reput is set
    (processOffset - 1) the T0/0 message of the -light-mixed-skip-t0 store
    (:func:`broker_dledger_inside_mixed_replay_scenarios.embedded_light_mixed_skip_t0_message`) swallows the host
    record's tail, B9's, the %LMQ%q1 and the kB entry: no parsed unit goes to %LMQ%q1, and the reput, going on at
    the last message's entry, puts back only its light unit: a new file, ``fillPreBlank`` units before 20, the unit
    at 20; the own unit stays cut."""
    reput, head, _size = embedded_light_mixed_skip_t0_message()
    base = light_mixed_emptied(sc, embedded_light_mixed_emptied_message()[1])
    *rest, host, b9, own, tail = base["messages"]
    assert own["topic"] == "%LMQ%q1" and tail["topic"] == "T0", (own, tail)
    hb = bytearray(b"x" * EMBED_HOST_BODY)
    hb[reput - EMBED_HOST_AT:reput - EMBED_HOST_AT + len(head)] = head
    t0 = {k: v for k, v in tail.items() if k != "properties"}
    t0 = {**t0, "keys": "kB", "uniqKey": SKIP_T0_UNIQ, "body": base64.b64encode(b"t" * SKIP_T0_BODY).decode()}
    tail = {**tail, "properties": {**tail["properties"],
                                   "INNER_MULTI_QUEUE_OFFSET": str(EMPTIED_BACK_LIGHT_QUEUE_OFFSET)}}
    return {**base, "messages": [*rest, {**host, "body": base64.b64encode(bytes(hb)).decode()}, b9, own, t0, tail],
            "name": f"{base['name']}-back"}

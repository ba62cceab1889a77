"""DLedger crash scenarios of the inside-entry family (:mod:`broker_dledger_inside_scenarios`) for a queue holding a
record's own units and light ones (``%LMQ%q1``, queue 0: multi-dispatch beside messages put to that topic itself)
that the reput, set inside an entry, replays, beyond :mod:`broker_dledger_inside_mixed_replay_scenarios`:
``-light-mixed-mid`` (:func:`embedded_light_mixed_mid_scenario`, 5.5.1): a light unit below processOffset the walk's
dispatch dropped; ``-light-mixed-skip-t0-ext`` and ``-light-mixed-skip-t0-own-ext`` (:func:`light_mixed_skip_t0_ext`,
5.5.1): the -light-mixed-skip-t0 store with ext files, the reput putting back only the last cut unit, a light one or
an own one; and ``-emptied-kept-embedded-light-mixed-emptied``
(:func:`kept_light_mixed_emptied_scenario`, 5.3.3): a queue the 5.3.3 cut left with no file, its max kept at
processOffset.  :func:`broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios` lists them
(:func:`mixed_more_scenarios`, :func:`mixed_more_533_scenarios`)."""
from __future__ import annotations

import base64

from broker_dledger_inside_mixed_replay_scenarios import light_mixed_emptied
from broker_dledger_inside_scenarios import (
    EMBED_HOST_AT,
    EMBED_HOST_BODY,
    EMBED_PROCESS_OFFSET,
    LIGHT_PUTS,
    LIGHT_TAIL,
    TO_ENTRY_HOST_TAIL,
    embedded_light_scenario,
)

# -light-mixed-mid: the put between the -light store's second and third light puts (below processOffset) sent to
# topic %LMQ%q1 itself, queue 0 (its body shorter by the 5 bytes that topic adds: the same layout)
MID_PUT = 192
# -emptied-kept-embedded-light-mixed-emptied: the light queue offset of the T5/0 message parsed where the reput is set
KEPT_LIGHT_QUEUE_OFFSET = 7


def mixed_more_scenarios(sc: dict) -> list[dict]:
    """From the -emptied-batch-embedded store ``sc`` (5.5.1): ``-light-mixed-mid``
    (:func:`embedded_light_mixed_mid_scenario`), ``-light-mixed-skip-t0-ext`` and ``-light-mixed-skip-t0-own-ext``
    (:func:`light_mixed_skip_t0_ext`)."""
    return [embedded_light_mixed_mid_scenario(sc), light_mixed_skip_t0_ext(sc), light_mixed_skip_t0_ext(sc, own=True)]


def mixed_more_533_scenarios(sc: dict) -> list[dict]:
    """From the -emptied-kept-embedded store ``sc`` (5.3.3): ``-light-mixed-emptied``
    (:func:`kept_light_mixed_emptied_scenario`)."""
    return [kept_light_mixed_emptied_scenario(sc)]


def embedded_light_mixed_mid_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-light-mixed-mid`` (5.5.1): the -light store
    (:func:`broker_dledger_inside_scenarios.embedded_light_scenario`: light units of %LMQ%q1, queue offsets 0-2, from
    puts below processOffset; its last message, T0/0, also to %LMQ%q1, light queue offset 3; the T5/0 message where
    the reput is set also to %LMQ%q1, light queue offset 7) with its put :data:`MID_PUT`, between the second and the
    third light put, sent to topic %LMQ%q1 itself (own queue offset 0): the walk's ``putMessagePositionInfo`` appends
    light 0 and 1 at 0 and 20, the own unit at 40 (queue offset 0: never checked) and drops the third light unit
    (queue offset 2 below write position 60), a unit below processOffset; the last message's light unit (queue offset
    3) goes at 60, cut.  The cut leaves write position 60, its max the own unit's end (the file's last unit below
    processOffset), and the parsed light unit is appended there."""
    out = embedded_light_scenario(sc)
    msgs = list(out["messages"])
    assert LIGHT_PUTS[1] < MID_PUT < LIGHT_PUTS[2]
    m = msgs[MID_PUT]
    assert len(m["topic"]) == 2 and "properties" not in m, m
    msgs[MID_PUT] = {**m, "topic": "%LMQ%q1", "queueId": 0,
                     "body": base64.b64encode(base64.b64decode(m["body"])[:-5]).decode()}
    return {**out, "messages": msgs, "name": f"{out['name']}-mixed-mid"}


def light_mixed_skip_t0_ext(sc: dict, own: bool = False) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-light-mixed-skip-t0-ext`` (5.5.1): the -light-mixed-skip-t0
    store (:func:`broker_dledger_inside_mixed_replay_scenarios.embedded_light_mixed_skip_t0_scenario`: no parsed unit
    in %LMQ%q1, the reput going on past its cut own unit and putting back only its last cut unit, the light unit the
    walk dropped) with ``enableConsumeQueueExt`` (ext files of 10 units): the walk put one ext unit in %LMQ%q1, for
    its own unit (a light unit gets none), which the cut leaves (a file of the queue stays); the light unit put back
    holds its tags code, and no ext unit is put for it.  ``own`` (``-light-mixed-skip-t0-own-ext``): the %LMQ%q1
    record and the last one swapped (as long records: the same layout, the same parsed message), the walk's light unit
    of queue offset 3 at 60, the own unit of queue offset 0 at 80, both cut; the reput, going on at the own record's
    entry past the light one, puts ext unit 1 for it (after the walk's) and appends the own unit at 60 holding that
    address."""
    from broker_dledger_inside_mixed_replay_scenarios import embedded_light_mixed_skip_t0_scenario
    base = embedded_light_mixed_skip_t0_scenario(sc)
    name = base["name"]
    if own:
        *rest, kind, t0, tail = base["messages"]
        assert kind["topic"] == "%LMQ%q1" and tail["properties"]["INNER_MULTI_QUEUE_OFFSET"] == "3", (kind, tail)
        base = {**base, "messages": [*rest, tail, t0, kind]}
        name = f"{name}-own"
    return {**base, "config": {**base["config"], "enableConsumeQueueExt": "true",
                               "mappedFileSizeConsumeQueueExt": "204"}, "name": f"{name}-ext"}


def kept_light_mixed_emptied_message() -> tuple[int, bytes]:
    """Where the reput of the 5.3.3 -light-mixed-emptied store is set (processOffset: the -emptied-kept-embedded
    store's moved on by the two extra records' sizes) and the T5/0 message there, also for %LMQ%q1 (light queue
    offset :data:`KEPT_LIGHT_QUEUE_OFFSET`), whose properties string ends with the host record's tail, so that it
    ends at T9's entry."""
    from broker_dledger_2gib import embedded_message
    reput = EMBED_PROCESS_OFFSET + 2 * LIGHT_TAIL
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    props = b"KEYS\x01E5\x02INNER_MULTI_DISPATCH\x01%LMQ%q1\x02INNER_MULTI_QUEUE_OFFSET\x01" + \
        str(KEPT_LIGHT_QUEUE_OFFSET).encode() + TO_ENTRY_HOST_TAIL
    body = (b"embedded!!" * 200)[:host_end - reput - 88 - 3 - 2 - len(props)]
    msg = embedded_message(reput, body, props)
    assert reput + len(msg) == host_end, (reput, len(msg), host_end)
    return reput, msg


def kept_light_mixed_emptied_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-kept-embedded-light-mixed-emptied`` (5.3.3, the queues kept on disk), from the
    -emptied-kept-embedded store ``sc`` with ``enableMultiDispatch``/``enableLmq``: after T9's message (the queue the
    cut empties) one put to topic %LMQ%q1 itself (queue 0, own queue offset 0, keys ``kA``) and a last T0/0 message
    also to %LMQ%q1 (light queue offset 0): the walk's units of %LMQ%q1 at 0 and 20, both past processOffset, so the
    5.3.3 cut deletes its file (on disk before the walk) and keeps its max at processOffset (5.3.3's
    ``correctMinOffset`` does not reset it); where the reput is set (processOffset) the T5/0 message also to %LMQ%q1
    (:func:`kept_light_mixed_emptied_message`) ends at T9's entry: its light unit gets a new file where queue offset
    7 falls (``fillPreBlank`` units before it), and the reput, going on at T9's entry, appends both cut units after
    it (queue offsets 0)."""
    assert sc["messages"][-1]["topic"] == "T9", sc["messages"][-1]
    return light_mixed_emptied(sc, kept_light_mixed_emptied_message()[1])

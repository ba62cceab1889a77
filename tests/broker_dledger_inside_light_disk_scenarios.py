"""DLedger crash scenarios of the inside-entry family (:mod:`broker_dledger_inside_scenarios`) whose light queue
(multi-dispatch: ``%LMQ%q1``, queue 0) is on disk before the walk (``keepQueues``) with its file replaced before the
restart (``plantFiles``) by one whose units end below where the walk's light units of the earlier data file end: the
walk's ``ConsumeQueue.multiDispatchLmqQueue`` puts those onto that file by ``putMessagePositionInfo`` (appended or
skipped from the max and write position ``ConsumeQueue.recover`` loaded it with) before ``truncateDirtyLogicFiles``
cuts it.  ``-earlier-light-held-disk-appended`` and ``-skipped`` (:func:`earlier_light_held_disk_scenarios`, from
the -earlier-light store), ``-to-entry-earlier-light-held-disk-below`` (:func:`to_entry_earlier_light_below_scenario`,
from the -to-entry-earlier-light store), and one holding a record's own units and light ones, all in the walk's
earlier data file: ``-earlier-light-both-held-disk-below`` (:func:`earlier_light_both_below_scenario`).
:func:`broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios` lists them (:func:`light_disk_scenarios`);
on 5.3.3 ``-emptied-kept-embedded-light-earlier-held-disk`` (:func:`kept_light_earlier_held_disk_scenario`,
:func:`light_disk_533_scenarios`)."""
from __future__ import annotations

import base64

# the units (commitlog offset, size) the planted %LMQ%q1 files hold (the tests check them against the log's records):
# message 10 of the first data file (the -earlier-light store's light queue offset 0; at the same place in the 5.3.3
# -light-earlier-held-disk store), the last message (past processOffset; a T6/0 record: ConsumeQueue.recover reads no
# commitlog), the first data file's first record (another queue's, ending below message 11's light unit,
# -to-entry-earlier-light's light queue offset 0)
LIGHT_EARLIER_UNIT = (3996, 401)
LIGHT_PAST_UNIT = (83219, 300)
LIGHT_BELOW_UNIT = (48, 440)


def light_disk_scenarios(sc: dict) -> list[dict]:
    """This module's stores, built on the -emptied-batch-embedded store ``sc``."""
    return [*earlier_light_held_disk_scenarios(sc), to_entry_earlier_light_below_scenario(sc),
            earlier_light_both_below_scenario(sc)]


def _planted(size: int, units: tuple[tuple[int, int], ...]) -> dict:
    """``plantFiles`` for %LMQ%q1/0: one file of ``size`` bytes holding ``units`` (tags code 0) from its start."""
    data = b"".join(o.to_bytes(8, "big") + n.to_bytes(4, "big") + bytes(8) for o, n in units)
    return {f"consumequeue/%LMQ%q1/0/{0:020d}": base64.b64encode(data + bytes(size - len(data))).decode()}


def earlier_light_held_disk_scenarios(sc: dict) -> list[dict]:
    """``<line>-dledger-abort-emptied-batch-embedded-earlier-light-held-disk-appended`` and ``-skipped`` (5.5.1, the
    queues kept): the -earlier-light store (the walk over both data files; messages 10 and 11 of the first data file
    also to %LMQ%q1, light queue offsets 0 and 1; where the reput is set, processOffset - 1, a T7/0 message also to
    %LMQ%q1, light queue offset 7) with %LMQ%q1's file planted holding message 10's unit alone (``-appended``: loaded
    max its end, write position 20: the walk skips message 10's unit at or below that max and appends message 11's at
    20, the cut keeps both, the parsed unit goes to 40) or with the last message's unit (past processOffset) after it
    (``-skipped``: the walk skips both below that loaded max, the cut takes the planted unit past processOffset, write
    position 20, the parsed unit there).  The planted file alone leaves both at write position 20, max message 10's
    end, below where the walk's light unit of message 11 ends."""
    from broker_dledger_inside_light_scenarios import embedded_earlier_light_scenario
    base = embedded_earlier_light_scenario(sc)
    size = int(base["config"]["mappedFileSizeConsumeQueue"])
    return [{**base, "keepQueues": True, "name": f"{base['name']}-held-disk{suffix}",
             "plantFiles": _planted(size, units)}
            for suffix, units in (("-appended", (LIGHT_EARLIER_UNIT,)),
                                  ("-skipped", (LIGHT_EARLIER_UNIT, LIGHT_PAST_UNIT)))]


def to_entry_earlier_light_below_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-earlier-light-held-disk-below`` (5.5.1, the queues kept):
    the -to-entry-earlier-light store (message 11 of the first data file and the last message, past processOffset,
    also to %LMQ%q1, light queue offsets 0 and 1; the T6/0 message where the reput is set, processOffset - 1, also to
    %LMQ%q1, light queue offset 7, ending at B9's entry) with %LMQ%q1's file planted holding the first data file's
    first record's unit alone (another queue's, ending below message 11's): the walk appends message 11's light unit
    at 20 (queue offset 0: no order check) and drops the last message's (queue offset 1: 20 below the write position
    40); the cut takes nothing of the file (write position 40, max message 11's end), the parsed unit goes to 40, and
    the reput, going on at B9's entry, drops the last message's light unit again.  The planted file alone leaves write
    position 20, max that record's end, below where message 11's light unit ends."""
    from broker_dledger_inside_light_scenarios import embedded_to_entry_earlier_light_scenario
    base = embedded_to_entry_earlier_light_scenario(sc)
    size = int(base["config"]["mappedFileSizeConsumeQueue"])
    return {**base, "keepQueues": True, "name": f"{base['name']}-held-disk-below",
            "plantFiles": _planted(size, (LIGHT_BELOW_UNIT,))}



def earlier_light_both_below_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-earlier-light-both-held-disk-below`` (5.5.1, the queues kept): the
    -earlier-light store with message :data:`broker_dledger_inside_mixed_earlier_scenarios.BOTH_OWN_PUT` of the first
    data file put to topic %LMQ%q1 itself (own queue offset 0; ``_both``), so that %LMQ%q1 holds own and light units,
    all in the walk's earlier data file (messages 9, 10, 11: own 0, light 0, light 1), none in its last; its file
    planted holding the first data file's first record's unit alone (ending below message 9's): the walk appends the
    own unit at 20 and light unit 0 at 40 (queue offsets 0: no order check), drops light unit 1 (20 below the write
    position 60); the cut takes nothing (write position 60, max message 10's end), the parsed light unit (light queue
    offset 7) goes to 60.  Without the walk's units dispatched onto the file it was refused."""
    from broker_dledger_inside_light_scenarios import embedded_earlier_light_scenario
    from broker_dledger_inside_mixed_earlier_scenarios import _both
    base = _both(embedded_earlier_light_scenario(sc))
    size = int(base["config"]["mappedFileSizeConsumeQueue"])
    return {**base, "keepQueues": True, "name": f"{base['name']}-held-disk-below",
            "plantFiles": _planted(size, (LIGHT_BELOW_UNIT,))}


def light_disk_533_scenarios(sc: dict) -> list[dict]:
    """From the -emptied-kept-embedded store ``sc`` (5.3.3): ``-light-earlier-held-disk``
    (:func:`kept_light_earlier_held_disk_scenario`)."""
    return [kept_light_earlier_held_disk_scenario(sc)]


def kept_light_earlier_held_disk_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-kept-embedded-light-earlier-held-disk`` (5.3.3, the queues kept on disk): the
    -light-mixed-emptied store (:func:`broker_dledger_inside_mixed_replay_scenarios.light_mixed_emptied` with the
    T5/0 message also to %LMQ%q1, light queue offset 7, where the reput is set, processOffset, ending at T9's entry)
    with its put to topic %LMQ%q1 itself sent to T0/0 instead (its body 5 bytes longer: the same layout), so that
    %LMQ%q1 holds light units only: messages 10 and 11 of the first data file (light queue offsets 0 and 1) and the
    last message (2, past processOffset); ``messageIndexSafe=true`` and index files of 250 entries (the walk starts
    at the first data file).  %LMQ%q1's file is planted holding message 10's unit alone: the walk skips it (at the
    loaded max), appends message 11's at 20 and the last message's at 40; the 5.3.3 cut (the other queues' loaded
    max past processOffset) takes the last (write position 40, max message 11's end), the parsed light unit goes to
    40, and the reput, going on at T9's entry, drops the last message's light unit (queue offset 2 below 60).  The
    planted file alone leaves write position 20, max message 10's end, below where message 11's light unit ends."""
    from broker_dledger_inside_light_scenarios import EARLIER_LIGHT_PUTS, _with_light
    from broker_dledger_inside_mixed_more_scenarios import kept_light_mixed_emptied_message
    from broker_dledger_inside_mixed_replay_scenarios import light_mixed_emptied
    out = light_mixed_emptied(sc, kept_light_mixed_emptied_message()[1])
    msgs = list(out["messages"])
    own, tail = msgs[-2], msgs[-1]
    assert own["topic"] == "%LMQ%q1" and tail["properties"]["INNER_MULTI_QUEUE_OFFSET"] == "0", (own, tail)
    msgs[-2] = {**own, "topic": "T0", "body": base64.b64encode(base64.b64decode(own["body"]) + b"t" * 5).decode()}
    for light, i in enumerate(EARLIER_LIGHT_PUTS):
        msgs[i] = _with_light(msgs[i], light)
    msgs[-1] = {**tail, "properties": {**tail["properties"], "INNER_MULTI_QUEUE_OFFSET": str(len(EARLIER_LIGHT_PUTS))}}
    size = int(out["config"]["mappedFileSizeConsumeQueue"])
    return {**out, "config": {**out["config"], "messageIndexSafe": "true", "maxIndexNum": "250"}, "messages": msgs,
            "keepQueues": True, "name": f"{sc['name']}-light-earlier-held-disk",
            "plantFiles": _planted(size, (LIGHT_EARLIER_UNIT,))}

"""DLedger crash scenarios of the inside-entry family (:mod:`broker_dledger_inside_scenarios`) for a queue holding a
record's own units and light ones (``%LMQ%q1``, queue 0) with units of both kinds in the walk's earlier data file:
``-earlier-light-mixed-both`` (:func:`embedded_earlier_both_mixed_scenario`), where ``putMessagePositionInfo``, fed
own and light queue offsets from two counters in commitlog order, drops one of that file's light units, so that the
write position and max the cut leaves the queue at are neither kind's queue offsets
(``-earlier-light-mixed-t7-both``: no parsed unit going to it); and one on disk before the walk, a file of it left by
the cut: ``-light-mixed-kept`` and ``-light-mixed-kept-planted`` (:func:`embedded_light_mixed_kept_scenarios`).
:func:`broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios` lists them
(:func:`mixed_earlier_scenarios`)."""
from __future__ import annotations

import base64

# -earlier-light-mixed-both: the message of the first data file (a T1/0 one, before the two that also go to
# %LMQ%q1) put to topic %LMQ%q1 itself instead (queue 0, own queue offset 0; its body shorter by the 5 bytes the
# topic adds: the same layout)
BOTH_OWN_PUT = 9

# -light-mixed-kept-planted: the %LMQ%q1/0 units (commitlog offset, size) of the -light-mixed store's light puts 1 and
# 2 (light queue offsets 1, 2; the test checks them against the log's records), planted alone in its file
PLANTED_UNITS = ((74816, 312), (76788, 300))
# -earlier-light-mixed-both-kept-planted: the %LMQ%q1/0 unit (commitlog offset, size) of message 11 of the first data
# file (light queue offset 1; the test checks it against the log's record), planted alone in its file
PLANTED_BOTH_UNIT = (4445, 340)


def mixed_earlier_scenarios(sc: dict) -> list[dict]:
    """From the -emptied-batch-embedded store ``sc`` (5.5.1): ``-earlier-light-mixed-both`` and
    ``-earlier-light-mixed-t7-both`` (:func:`embedded_earlier_both_mixed_scenario`), ``-to-entry-earlier-light-both``
    (:func:`embedded_to_entry_earlier_both_scenario`), ``-light-mixed-kept`` and
    ``-light-mixed-kept-planted`` (:func:`embedded_light_mixed_kept_scenarios`); ``-earlier-light-mixed-both-kept``:
    the -earlier-light-mixed-both store with the queues kept (``keepQueues``: %LMQ%q1/0 on disk before the walk, its
    units of both kinds in the walk's earlier data file), and ``-earlier-light-mixed-both-kept-planted``: its
    %LMQ%q1/0 file replaced before the restart (``plantFiles``) by one holding only light unit 1
    (:data:`PLANTED_BOTH_UNIT`) at 0: the walk's ``putMessagePositionInfo`` drops the own unit and light units 0 and 1
    (at or below the loaded max, light unit 1's end) and appends the last message's own unit (own queue offset 1) at
    20, past processOffset: the cut leaves write position 20, where the parsed light unit goes (the walk's units alone
    leave 40)."""
    both = embedded_earlier_both_mixed_scenario(sc)
    kept = {**both, "keepQueues": True, "name": f"{both['name']}-kept"}
    unit = PLANTED_BOTH_UNIT[0].to_bytes(8, "big") + PLANTED_BOTH_UNIT[1].to_bytes(4, "big") + bytes(8)
    file = unit + bytes(int(both["config"]["mappedFileSizeConsumeQueue"]) - len(unit))
    return [both, embedded_earlier_both_mixed_scenario(sc, light=False), embedded_to_entry_earlier_both_scenario(sc),
            *embedded_light_mixed_kept_scenarios(sc),
            kept, {**kept, "name": f"{kept['name']}-planted",
                   "plantFiles": {f"consumequeue/%LMQ%q1/0/{0:020d}": base64.b64encode(file).decode()}}]


def embedded_earlier_both_mixed_scenario(sc: dict, light: bool = True) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-earlier-light-mixed-both`` (5.5.1): the -earlier-light-mixed
    store (:func:`broker_dledger_inside_mixed_replay_scenarios.embedded_earlier_light_mixed_scenario`: messages 10
    and 11 of the first data file also to %LMQ%q1, light queue offsets 0 and 1; its last message, after B9's, put to
    %LMQ%q1 itself; the T7/0 message where the reput is set also to %LMQ%q1, light queue offset 7) with message
    :data:`BOTH_OWN_PUT` of the first data file put to topic %LMQ%q1 itself (own queue offset 0): the walk's
    ``putMessagePositionInfo`` appends that own unit at 0 and message 10's light unit at 20 (queue offset 0: never
    checked), drops message 11's (queue offset 1, 20 below write position 40) and the last message's own unit (own
    queue offset 1, past processOffset: cut); the cut leaves write position 40 and the max message 10's end, where
    the parsed light unit goes.  ``light`` false: ``-earlier-light-mixed-t7-both``, the messages where the reput is
    set those of the -earlier store (T7/0 and T6/0 alone), no parsed unit going to %LMQ%q1: the cut alone."""
    from broker_dledger_inside_mixed_replay_scenarios import embedded_earlier_light_mixed_scenario
    base = embedded_earlier_light_mixed_scenario(sc, light=light)
    return _both(base)


def embedded_light_mixed_kept_scenarios(sc: dict) -> list[dict]:
    """``<line>-dledger-abort-emptied-batch-embedded-light-mixed-kept`` (5.5.1): the -light-mixed store
    (:func:`broker_dledger_inside_light_scenarios.embedded_light_mixed_scenario`: %LMQ%q1/0's light units 0-2 at
    0-40, the own unit of the put to %LMQ%q1 itself, own queue offset 0, at 60, the last message's light unit, queue
    offset 3, dropped; the T5/0 message where the reput is set also to %LMQ%q1) with the queues kept
    (``keepQueues``): %LMQ%q1/0 on disk before the walk, as the crashed broker's dispatch wrote it; ``-planted``: its
    file replaced before the restart (``plantFiles``) by one holding only light units 1 and 2
    (:data:`PLANTED_UNITS`) at 0 and 20: the walk's ``putMessagePositionInfo`` drops light units 0-2 (at or below
    the loaded max, light unit 2's end), appends the own unit (own queue offset 0) at 40 and the last message's
    light unit (queue offset 3) at 60, past processOffset: the cut leaves write position 60, where the walk's
    queue without those files holds the own unit at 60 and would leave 80."""
    from broker_dledger_inside_light_scenarios import embedded_light_mixed_scenario
    base = embedded_light_mixed_scenario(sc)
    kept = {**base, "keepQueues": True, "name": f"{base['name']}-kept"}
    units = b"".join(o.to_bytes(8, "big") + n.to_bytes(4, "big") + bytes(8) for o, n in PLANTED_UNITS)
    file = units + bytes(int(base["config"]["mappedFileSizeConsumeQueue"]) - len(units))
    return [kept, {**kept, "name": f"{kept['name']}-planted",
                   "plantFiles": {f"consumequeue/%LMQ%q1/0/{0:020d}": base64.b64encode(file).decode()}}]


def embedded_to_entry_earlier_both_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-to-entry-earlier-light-both`` (5.5.1): the -to-entry-earlier-light
    store (:func:`broker_dledger_inside_light_scenarios.embedded_to_entry_earlier_light_scenario`: message 11 of the
    first data file and the last message, T6/0, also to %LMQ%q1, light queue offsets 0 and 1; the T6/0 message where
    the reput is set, also to %LMQ%q1 with light queue offset 7, ends at B9's entry, so that the reput dispatches B9's
    and the last message again) with message :data:`BOTH_OWN_PUT` of the first data file put to topic %LMQ%q1 itself
    (own queue offset 0): the walk appends that own unit at 0 and light unit 0 at 20, drops the last message's light
    unit (queue offset 1, 20 below 40; past processOffset: cut); the parsed light unit goes to 40, and the last
    message's light unit, dispatched again, is dropped again."""
    from broker_dledger_inside_light_scenarios import embedded_to_entry_earlier_light_scenario
    base = embedded_to_entry_earlier_light_scenario(sc)
    return _both(base)


def _both(base: dict) -> dict:
    """Store ``base`` with its T1 message at :data:`BOTH_OWN_PUT` (no properties) put to topic %LMQ%q1 itself (queue 0,
    its body 5 bytes shorter so the records after it keep their offsets), named ``<base>-both``."""
    msgs = list(base["messages"])
    m = msgs[BOTH_OWN_PUT]
    assert m["topic"] == "T1" and "properties" not in m, m
    body = base64.b64decode(m["body"])
    msgs[BOTH_OWN_PUT] = {**m, "topic": "%LMQ%q1", "queueId": 0, "body": base64.b64encode(body[:-5]).decode()}
    return {**base, "messages": msgs, "name": f"{base['name']}-both"}

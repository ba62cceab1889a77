"""DLedger crash scenarios of the inside-entry family (:mod:`broker_dledger_inside_scenarios`) on the 5.3.3 line (the
queues kept on disk) for a queue holding a record's own units and light ones (``%LMQ%q1``, queue 0) on disk before
the walk, a file of it left by the cut: ``-emptied-kept-embedded-light-mixed-held`` (a parsed unit going to it) and
``-light-mixed-held-t5`` (none: :func:`kept_light_mixed_held_scenario`); with units of both kinds in the walk's
earlier data file, ``-light-mixed-earlier-both`` (:func:`kept_earlier_both_scenario`).
:func:`broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios` lists them (:func:`mixed_533_scenarios`)."""
from __future__ import annotations

import base64

from broker_dledger_inside_mixed_more_scenarios import MID_PUT, kept_light_mixed_emptied_scenario
from broker_dledger_inside_mixed_replay_scenarios import light_mixed_emptied
from broker_dledger_inside_scenarios import EMBED_HOST_AT, EMBED_HOST_BODY, TO_ENTRY_HOST_TAIL


def mixed_533_scenarios(sc: dict) -> list[dict]:
    """From the -emptied-kept-embedded store ``sc`` (5.3.3): ``-light-mixed-held`` and ``-light-mixed-held-t5``
    (:func:`kept_light_mixed_held_scenario`)."""
    return [kept_light_mixed_held_scenario(sc), kept_light_mixed_held_scenario(sc, parsed_light=False),
            kept_earlier_both_scenario(sc)]


def kept_earlier_both_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-kept-embedded-light-mixed-earlier-both`` (5.3.3, the queues kept on disk): the
    -light-mixed-emptied store built on the T5/0-only message where the reput is set (:func:`kept_t5_message`: no
    parsed unit going to %LMQ%q1), with ``messageIndexSafe=true`` and index files of 250 entries (as the 5.5.1
    -earlier store: the walk starts at the first data file), message
    :data:`broker_dledger_inside_mixed_earlier_scenarios.BOTH_OWN_PUT` of the first data file put to topic %LMQ%q1
    itself (own queue offset 0), its messages 10 and 11 also to %LMQ%q1 (light queue offsets 0 and 1), and the last
    message's light queue offset 2.  The crashed broker's dispatch holds the own unit at 0, light unit 0 at 20 (queue
    offset 0: never checked), drops light unit 1 (20 below 40) and the own unit of queue offset 1 after T9's (20
    below 40), and appends light unit 2 at 40.  The walk drops every unit onto that file; the cut takes light unit 2
    (past processOffset): write position 40, max light unit 0's end; the reput, going on at T9's entry, drops the own
    unit of queue offset 1 again and appends light unit 2 at 40 again."""
    from broker_dledger_inside_light_scenarios import EARLIER_LIGHT_PUTS, _with_light
    from broker_dledger_inside_mixed_earlier_scenarios import BOTH_OWN_PUT
    out = light_mixed_emptied(sc, kept_t5_message()[1])
    msgs = list(out["messages"])
    m = msgs[BOTH_OWN_PUT]
    assert m["topic"] == "T1" and "properties" not in m, m
    msgs[BOTH_OWN_PUT] = {**m, "topic": "%LMQ%q1", "queueId": 0,
                          "body": base64.b64encode(base64.b64decode(m["body"])[:-5]).decode()}
    for light, i in enumerate(EARLIER_LIGHT_PUTS):
        msgs[i] = _with_light(msgs[i], light)
    tail = msgs[-1]
    assert tail["properties"]["INNER_MULTI_QUEUE_OFFSET"] == "0", tail
    msgs[-1] = {**tail, "properties": {**tail["properties"], "INNER_MULTI_QUEUE_OFFSET": str(len(EARLIER_LIGHT_PUTS))}}
    return {**out, "config": {**out["config"], "messageIndexSafe": "true", "maxIndexNum": "250"}, "messages": msgs,
            "name": f"{sc['name']}-light-mixed-earlier-both"}


def kept_t5_message() -> tuple[int, bytes]:
    """Where the reput of the 5.3.3 -light-mixed-held-t5 store is set (processOffset, as
    :func:`broker_dledger_inside_mixed_more_scenarios.kept_light_mixed_emptied_message`) and the T5/0 message there,
    for T5/0 alone, whose properties string ends with the host record's tail, so that it ends at T9's entry."""
    from broker_dledger_2gib import embedded_message
    from broker_dledger_inside_mixed_more_scenarios import kept_light_mixed_emptied_message
    reput = kept_light_mixed_emptied_message()[0]
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    props = b"KEYS\x01E5" + TO_ENTRY_HOST_TAIL
    body = (b"embedded!!" * 200)[:host_end - reput - 88 - 3 - 2 - len(props)]
    msg = embedded_message(reput, body, props)
    assert reput + len(msg) == host_end, (reput, len(msg), host_end)
    return reput, msg


def kept_light_mixed_held_scenario(sc: dict, parsed_light: bool = True) -> dict:
    """``<line>-dledger-abort-emptied-kept-embedded-light-mixed-held`` (5.3.3, the queues kept on disk): the
    -light-mixed-emptied store
    (:func:`broker_dledger_inside_mixed_more_scenarios.kept_light_mixed_emptied_scenario`) with its put
    :data:`broker_dledger_inside_mixed_more_scenarios.MID_PUT` (below processOffset) sent to topic %LMQ%q1 itself,
    queue 0 (own queue offset 0; its body 5 bytes shorter: the same layout), so that the message put to %LMQ%q1 after
    T9's takes own queue offset 1.  %LMQ%q1/0 on disk before the walk as the crashed broker's dispatch wrote it: the
    own units at 0 and 20, the last message's light unit (queue offset 0: never checked) at 40.  The walk's
    ``putMessagePositionInfo`` drops all three onto those files (at or below the loaded max); the cut keeps the
    file, write position 20 (the first own unit's end its max); the T5/0 message parsed where the reput is set
    (processOffset) goes to 20 (light queue offset 7: 140 not below 20), and the reput, going on at T9's entry,
    drops the own unit of queue offset 1 (20 below 40) and appends the light unit of queue offset 0 at 40.
    ``parsed_light`` false (``-light-mixed-held-t5``): the message there for T5/0 alone (:func:`kept_t5_message`), no
    parsed unit going to %LMQ%q1: the reput appends both cut units again, at 20 and 40 (own queue offset 1: 20 not
    below 20)."""
    out = kept_light_mixed_emptied_scenario(sc) if parsed_light else {
        **light_mixed_emptied(sc, kept_t5_message()[1]), "name": f"{sc['name']}-light-mixed-emptied-t5"}
    msgs = list(out["messages"])
    m = msgs[MID_PUT]
    assert len(m["topic"]) == 2 and "properties" not in m, m
    msgs[MID_PUT] = {**m, "topic": "%LMQ%q1", "queueId": 0,
                     "body": base64.b64encode(base64.b64decode(m["body"])[:-5]).decode()}
    return {**out, "messages": msgs, "name": out["name"].replace("-light-mixed-emptied", "-light-mixed-held")}

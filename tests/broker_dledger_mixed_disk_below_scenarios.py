"""DLedger crash scenarios (5.5.1, 5.3.3) whose start's reput, NOT set inside an entry, starts before the walk's last
data file (DLedger's committed position, no ``recheckReputOffsetFromCq``) and dispatches a queue holding a record's
own units and light ones (``%LMQ%q1``, queue 0) that was on disk before the walk (``keepQueues``), whose max after
``truncateDirtyLogicFiles`` lies BELOW that file's start: no unit of it in the last data file below
``processOffset``.

* ``<line>-dledger-abort-mixed-disk-below``: the ``-mixed-disk-earlier`` store
  (:mod:`broker_dledger_mixed_disk_earlier_scenarios`: the -batch-kept store, three plain T0/0 puts of the last data
  file sent to %LMQ%q1 itself, DLedger's checkpoint :data:`EARLIER_BACK` entries behind the log's end) with the
  earlier data file's plain T0/0 puts 240 and 244 sent to %LMQ%q1 itself too (own queue offsets 0 and
  1) and no light unit of %LMQ%q1 in the last data file before message :data:`BELOW_FROM` (the light queue offsets
  after it counted on from there; each body longer by the bytes the properties lose: the same layout).  The crashed
  broker's dispatch appends own unit 0 (queue offset 0: no queue offset check), drops the light unit after it and
  own unit 1 (their queue offsets * 20 below the write position), so the cut leaves %LMQ%q1's max at the end of the
  earlier data file's last light unit; the reput from the committed position drops the earlier records ending at
  or below it and own unit 1, ending above it, by the queue offset test again;
* ``-ext``: the same from the layouts store with its ext files (``enableConsumeQueueExt``, ext files of 10 units):
  an ext unit for each own record first.
"""
from __future__ import annotations

import base64

# the first message of the last data file whose light unit still goes to %LMQ%q1: past processOffset (about the last
# 35 messages are cut), before the own puts of broker_dledger_mixed_disk_reput_scenarios.OWN_PUTS
BELOW_FROM = 376
# the earlier data file holds messages 0-245 (154 entries in the last one)
LAST_FIRST = 246


def _props_len(props: dict) -> int:
    """The bytes ``MessageDecoder.messageProperties2String`` gives ``props`` (name, 1, value, 2 each)."""
    return sum(len(k) + len(v) + 2 for k, v in props.items())


def _below(sc: dict) -> dict:
    """``sc`` (the -own-ext messages) with %LMQ%q1's light units of messages ``LAST_FIRST`` to ``BELOW_FROM`` - 1
    removed and those after renumbered, every record the same size (the body longer by what the properties lose)."""
    msgs = list(sc["messages"])
    removed = 0
    for i in range(LAST_FIRST, len(msgs)):
        m = msgs[i]
        props = m.get("properties", {})
        if props.get("INNER_MULTI_DISPATCH") != "%LMQ%q1":
            continue
        if i < BELOW_FROM:
            new = {k: v for k, v in props.items() if not k.startswith("INNER_MULTI_")}
            removed += 1
        else:
            new = {**props, "INNER_MULTI_QUEUE_OFFSET": str(int(props["INNER_MULTI_QUEUE_OFFSET"]) - removed)}
        grow = _props_len(props) - _props_len(new)
        body = base64.b64decode(m["body"]) + b"z" * grow
        m = {**m, "body": base64.b64encode(body).decode()}
        if new:
            m["properties"] = new
        else:
            del m["properties"]
        msgs[i] = m
    assert removed, "light units removed"
    return {**sc, "messages": msgs}


def mixed_disk_below_scenarios(line: str) -> list[dict]:
    """The module docstring's scenarios of ``line`` (5.5.1 and 5.3.3)."""
    if not line.startswith(("5.5", "5.3")):
        return []
    from broker_dledger_mixed_disk_earlier_scenarios import EARLIER_BACK, _own_earlier
    from broker_dledger_mixed_disk_reput_scenarios import _retopic
    from broker_dledger_scenarios import batch_kept_abort_scenario, layouts_abort_scenario
    sc = _below(_own_earlier(_retopic(batch_kept_abort_scenario(line))))
    ext = _below(_own_earlier(_retopic(layouts_abort_scenario(line))))
    name = f"{line}-dledger-abort-mixed-disk-below"
    return [{**sc, "dledgerCommittedBack": EARLIER_BACK, "name": name},
            {**ext, "keepQueues": True, "dledgerCommittedBack": EARLIER_BACK, "name": f"{name}-ext"}]

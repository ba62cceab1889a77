"""More DLedger crash scenarios of the inside-entry family (:mod:`broker_dledger_inside_scenarios`) for a batch queue
(``BatchConsumeQueue``) the walk wrote: where the start's reput is set (``processOffset - 1``) a well-formed message
for it."""
from __future__ import annotations

import base64

from broker_dledger_inside_scenarios import (
    EMBED_HOST_BODY,
    TO_ENTRY_TAIL_BODY,
    embedded_earlier_batch_message,
    embedded_earlier_batch_scenario,
    emptied_embedded_abort_scenarios,
)


def inside_batch_more_abort_scenarios(line: str) -> list[dict]:
    """On 5.5.1: ``<line>-dledger-abort-emptied-batch-embedded-earlier-batch-only``
    (:func:`embedded_earlier_batch_only_scenario`)."""
    if not line.startswith("5.5"):
        return []
    return [embedded_earlier_batch_only_scenario(emptied_embedded_abort_scenarios(line)[0])]


def embedded_earlier_batch_only_scenario(sc: dict) -> dict:
    """``<line>-dledger-abort-emptied-batch-embedded-earlier-batch-only`` (5.5.1): the -earlier-batch store
    (:func:`broker_dledger_inside_scenarios.embedded_earlier_batch_scenario`: both data files walked, the cut still
    happening) with its last message (as long, after B9's) to B9/0 instead of B7/0: B7/0's only unit is that of
    message 10 of the first data file, so the walk wrote B7/0 in an earlier data file only; where the reput is set
    (processOffset - 1, B9/0's max, the cut taking both B9/0 units) the well-formed B7/0 message of
    :func:`broker_dledger_inside_scenarios.embedded_earlier_batch_message`, then 'x' bytes."""
    out = embedded_earlier_batch_scenario(sc)
    *rest, tail = out["messages"]
    assert len(tail["topic"]) == 2 and len(base64.b64decode(tail["body"])) == TO_ENTRY_TAIL_BODY
    assert len(base64.b64decode(rest[-2]["body"])) == EMBED_HOST_BODY and embedded_earlier_batch_message()
    return {**out, "messages": [*rest, {**tail, "topic": "B9"}], "name": f"{out['name']}-only"}

"""Inside-entry stores (5.5.1 DLedger crash restarts whose start's reput, set inside an entry, parses a message for a
queue the walk wrote, goes on at an entry's start before that queue's cut units, dispatching them again, and then
reaches its records past the walk's end, a walk ended by a damaged message) of a queue that kept no walk unit below
``processOffset`` in the walk's last data file:

* :func:`blank_scenarios` (registered from ``broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios``): its
  only unit below ``processOffset`` in the walk's earlier data file, only its last cut unit dispatched again, with
  ext files (``-past-cut-two-some-earlier-ext``) or on disk before the walk (``-past-cut-two-some-earlier-kept``);
* :func:`t9_to_entry_past_scenario`: one the cut left with ``fillPreBlank`` units only below ``processOffset`` (its
  max 2147483647: the reput set there, inside an entry of a log past 2 GiB), every cut unit dispatched again; written
  per test (``DLEDGER_2GIB=1``), not with the default suite's stores."""
from __future__ import annotations

from broker_dledger_2gib import BLANK_MAX


def blank_scenarios(base: dict) -> list[dict]:
    """On the -emptied-batch-embedded store ``base`` (5.5.1): the -past-cut-two-some-earlier store
    (``broker_dledger_inside_past_rest_scenarios.embedded_to_entry_past_cut_two_some_earlier_scenario``: T6/0's only
    unit below processOffset in the walk's earlier data file, two cut, the parsed T6/0 message ending where the first
    cut record ends, then a damaged T6/0 message and one more) with ``enableConsumeQueueExt=true`` (ext files of 10
    units, as the other ``-ext`` stores): ``-ext``; and with the queues kept (``keepQueues``: T6/0 on disk before the
    walk, its units of the records past the walk's end written before the damage): ``-kept``."""
    from broker_dledger_inside_past_rest_scenarios import embedded_to_entry_past_cut_two_some_earlier_scenario
    some = embedded_to_entry_past_cut_two_some_earlier_scenario(base)
    return [{**some, "config": {**some["config"], "enableConsumeQueueExt": "true",
                                "mappedFileSizeConsumeQueueExt": "204"}, "name": f"{some['name']}-ext"},
            {**some, "keepQueues": True, "name": f"{some['name']}-kept"}]


def t9_to_entry_past_scenario(line: str, ext: bool = False) -> dict:
    """``<line>-dledger-abort-past-2gib-t9-to-entry-past`` (``ext``: ``-ext``): the ``-past-2gib-t9-to-entry`` store
    (``test_dledger_2gib_again_broker.past_2gib_t9_to_entry_scenario``: the reput set at 2147483647 parses a T9/0
    message of queue offset 1 up to the last T9 entry's start, where it goes on) with
    ``test_dledger_2gib_damaged_broker.AFTER_T9`` after its last T9 message: a T8 message whose body byte is
    flipped (the walk ends there), a T8 message and a T9 message (keys ``K9b``, queue offset 2): T9/0's record past
    the walk's end."""
    from test_dledger_2gib_again_broker import past_2gib_t9_to_entry_scenario
    from test_dledger_2gib_damaged_broker import AFTER_T9
    sc = past_2gib_t9_to_entry_scenario(line, ext)
    assert sc["messages"][-1]["topic"] == "T9" and BLANK_MAX == 2**31 - 1
    return {**sc, "messages": [*sc["messages"], *AFTER_T9], "damageMessage": len(sc["messages"]),
            "name": f"{line}-dledger-abort-past-2gib-t9-to-entry-past{'-ext' if ext else ''}"}


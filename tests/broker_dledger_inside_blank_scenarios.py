"""Inside-entry stores of a queue the 5.5.1 DLedger crash cut left with ``fillPreBlank`` units only below
``processOffset`` (its max 2147483647: the start's reput set there, inside an entry of a log past 2 GiB), whose cut
units the reput going on at an entry's start dispatches again, then reaches that queue's records past the walk's end
(a walk ended by a damaged message).  Stores past 2 GiB are written per test (``DLEDGER_2GIB=1``), not with the
default suite's ``emptied_embedded_abort_scenarios``."""
from __future__ import annotations

from broker_dledger_2gib import BLANK_MAX


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

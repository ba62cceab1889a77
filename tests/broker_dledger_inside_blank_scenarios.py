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


# t9_to_entry_some_past_scenario: T9/0's first cut record (keys K9a), 202 bytes, and its properties string
T9_SOME_SIZE = 202
T9_SOME_PROPS = b"KEYS\x01K9a\x02"


def t9_some_message(queue_offset: int = 1) -> bytes:
    """The T9/0 message (``queue_offset``, its PHYSICALOFFSET field 2147483647) from 2147483647 to the end of the
    first cut T9 record of :func:`t9_to_entry_some_past_scenario`: its body covers the T0 record's tail, the K9a entry's
    header and that record's head, its topic and properties are K9a's (the record's last bytes)."""
    from broker_dledger_2gib import TO_T9_ENTRY, embedded_message
    size = TO_T9_ENTRY + 48 + T9_SOME_SIZE
    msg = embedded_message(BLANK_MAX, b"o" * (size - 88 - 3 - 2 - len(T9_SOME_PROPS)), T9_SOME_PROPS, topic=b"T9",
                           queue_offset=queue_offset)
    assert len(msg) == size, (len(msg), size)
    return msg


def t9_to_entry_some_past_scenario(line: str, ext: bool = False) -> dict:
    """``<line>-dledger-abort-past-2gib-t9-to-entry-some-past`` (``ext``: ``-ext``, ``enableConsumeQueueExt=true`` with
    ext files of ``test_dledger_2gib_again_broker.EXT_FILE_SIZE`` bytes):
    ``broker_dledger_scenarios.past_2gib_abort_scenario``
    with two T9/0 messages at its end (keys ``K9a`` and ``K9``, queue offsets 1 and 2, both cut), then
    ``test_dledger_2gib_damaged_broker.AFTER_T9`` (a damaged T8 message, where the walk ends, a T8 message and a T9
    message, ``K9b``, queue offset 3); the last T0 body holds from 2147483647 to its end the head of
    :func:`t9_some_message` (T9/0, queue offset 1), which ends where K9a's record ends: the reput set at 2147483647
    parses it, then goes on at K9's entry, dispatching only that cut unit again, then the records past the walk's
    end."""
    from broker_dledger_2gib import EMBED_AT_BODY_DATA, EMBED_T0_DATA, TO_T9_ENTRY, with_embedded_message
    from broker_dledger_scenarios import past_2gib_abort_scenario
    from test_dledger_2gib_again_broker import EXT_FILE_SIZE
    from test_dledger_2gib_damaged_broker import AFTER_T9
    sc = past_2gib_abort_scenario(line)
    if ext:
        sc = {**sc, "config": {**sc["config"], "enableConsumeQueueExt": "true",
                               "mappedFileSizeConsumeQueueExt": str(EXT_FILE_SIZE)}}
    sc = with_embedded_message(sc, EMBED_T0_DATA, EMBED_AT_BODY_DATA,
                               f"{line}-dledger-abort-past-2gib-t9-to-entry-some-past{'-ext' if ext else ''}",
                               msg=t9_some_message()[:TO_T9_ENTRY - 5])
    *rest, t9 = sc["messages"]
    assert t9["topic"] == "T9" and t9["bodySize"] == 100, t9
    msgs = [*rest, {**t9, "keys": "K9a"}, {**t9, "keys": "K9"}]
    return {**sc, "messages": [*msgs, *AFTER_T9], "damageMessage": len(msgs)}

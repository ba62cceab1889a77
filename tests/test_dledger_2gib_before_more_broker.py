"""More 5.5.1 DLedger crash restarts whose start's reput, set at 2147483647 inside an entry of a data file before the
walk's, goes on before the walk's data file (``DLEDGER_2GIB=1`` only: some 2.3 GB of data files, its ``before/`` copy
as much), checked against the broker.

``-past-2gib-before-t9-first`` (:func:`past_2gib_before_t9_first_scenario`): ``-past-2gib-before``
(:func:`broker_dledger_2gib.past_2gib_before_abort_scenario`) whose first message is a T8 one, so the 23rd data file's
T9 message has queue offset 0 and the walk's T9 message 1.  The cut leaves T9's queue one ``fillPreBlank`` unit (its
max 2147483647); the reput goes on at the 23rd data file, and ``ConsumeQueue.putMessagePositionInfo`` makes no queue
offset check for a unit of queue offset 0: the 23rd file's T9 unit, its end past the max, is appended at the write
position, and the walk's T9 unit then drops ("Build consume queue repeatedly": queue offset 1 below the write
position).  ``rebuild --as-restart`` replays ``putMessagePositionInfo`` over T9's queue from the state the cut left
(:func:`store_format.dledger_crash_before.appended_before`) and writes it byte for byte.
``-past-2gib-before-t9-first-more``: with a second T9 message in the walk (queue offset 2), which the broker appends
at 40 after dropping the first.

``-past-2gib-before-no-file`` (:func:`past_2gib_before_no_file_scenario`): ``-past-2gib-before`` with a T7 message
(queue offset 0) in the walk past the short ``processOffset`` (the cut leaves T7's queue no file: max -1) and a
well-formed T7 message of queue offset 3 at 2147483647: the broker writes T7's queue anew from the parsed unit (three
``fillPreBlank`` units, then it) and appends the walk's T7 unit after it (queue offset 0); ``rebuild --as-restart``
writes it so (its own dispatch, T7's queue reset at the parsed record: ``StoreLocation.queue_reset``).
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    EMBED_AT_BODY_DATA,
    EMBED_T0_DATA,
    FILL_PRE_BLANK_UNIT,
    LINE,
    NEEDS_2GIB,
    as_restart_matches_broker,
    past_2gib_before_abort_scenario,
    retargeted,
    with_embedded_message,
    written,
)
from broker_dledger_scenarios import PAST_2GIB_FILE

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()

OFF_QUEUE_OFFSET = 20   # a message record's QUEUEOFFSET field


def past_2gib_before_t9_first_scenario(line: str, more: int = 0) -> dict:
    """``<line>-dledger-abort-past-2gib-before-t9-first`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`broker_dledger_2gib.past_2gib_before_abort_scenario` whose first message is a T8 one (same size), so
    T9's first message, queue offset 0, is the 23rd data file's first, and the walk's T9 message has queue offset 1
    (after one ``fillPreBlank`` unit); ``more``: that many more T9 messages at the log's end (``-more``)."""
    sc = past_2gib_before_abort_scenario(line)
    assert sc["messages"][0]["topic"] == "T9"
    return {**sc, "messages": [{**sc["messages"][0], "topic": "T8"}, *sc["messages"][1:],
                               *[{"topic": "T9", "queueId": 0, "bodySize": 100}] * more],
            "name": f"{line}-dledger-abort-past-2gib-before-t9-first" + ("-more" if more else "")}


def _units(src, topic: str) -> list[bytes]:  # noqa: ANN001
    files = sorted((src / "expected" / "consumequeue" / topic / "0").iterdir())
    return [b[i:i + 20] for f in files for b in (f.read_bytes(),) for i in range(0, len(b) - 19, 20)]


def test_crash_restart_whose_reput_before_the_walk_appends_a_queue_offset_0_record(tmp_path):
    """The 5.5.1 broker appends the 23rd data file's T9 unit (queue offset 0: no order check) after T9's
    ``fillPreBlank`` unit and drops the walk's T9 unit (queue offset 1, below the write position then);
    ``rebuild --as-restart`` writes ``consumequeue/`` and ``index/`` byte for byte
    (:func:`store_format.dledger_crash_before.appended_before`) and ``verify``'s units lost are those the broker's
    queues do not hold."""
    sc = past_2gib_before_t9_first_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and all(int(f.name) == k * PAST_2GIB_FILE for k, f in enumerate(data)), data
    assert int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    with data[22].open("rb") as f:
        record = f.read(ENTRY_HEADER_SIZE + 200)[ENTRY_HEADER_SIZE:]
    assert int.from_bytes(record[OFF_QUEUE_OFFSET:OFF_QUEUE_OFFSET + 8], "big") == 0, "T9's queue offset 0 there"
    assert b"\x02T9" in record[:200]
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left fillPreBlank units only
    t9 = _units(src, "T9")
    first = int(data[22].name) + ENTRY_HEADER_SIZE
    assert t9[0] == FILL_PRE_BLANK_UNIT and int.from_bytes(t9[1][:8], "big") == first and \
        not any(b"".join(t9[2:])), ("the 23rd file's T9 unit appended, the walk's dropped", [u.hex() for u in t9[:3]])
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    assert "appends a record of queue offset 0 before the walk's data file" in text and \
        "then the walk's units by the same rule: T9/0 at 20" in text, text[-3000:]


def test_crash_restart_whose_reput_before_the_walk_appends_a_queue_offset_0_record_then_a_walk_unit(tmp_path):
    """``-past-2gib-before-t9-first`` with a second T9 message in the walk (queue offset 2), also cut: the 5.5.1
    broker appends the 23rd data file's T9 unit at 20, drops the walk's first (queue offset 1, below the write position
    40) and appends its second at 40 (its queue offset's own position: no longer below it); ``rebuild --as-restart``
    byte for byte and ``verify``'s units lost."""
    sc = past_2gib_before_t9_first_scenario(LINE, more=1)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left fillPreBlank units only
    t9 = _units(src, "T9")
    assert t9[0] == FILL_PRE_BLANK_UNIT and int.from_bytes(t9[1][:8], "big") == int(data[22].name) + ENTRY_HEADER_SIZE
    last = int.from_bytes(t9[2][:8], "big")
    assert last > int(data[23].name) and not any(b"".join(t9[3:])), [u.hex() for u in t9[:4]]
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    assert "then the walk's units by the same rule: T9/0 at 20" in text and "T9/0 at 40" not in text, text[-3000:]


def past_2gib_before_no_file_scenario(line: str, queue_offset: int = 3) -> dict:
    """``<line>-dledger-abort-past-2gib-before-no-file`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`broker_dledger_2gib.past_2gib_before_abort_scenario` with a T7 message (queue offset 0) before the last
    T9 one, past the short ``processOffset`` (the cut leaves T7's queue no file: its max -1), and a well-formed T7
    message of queue offset ``queue_offset`` at 2147483647 inside the T0 body there."""
    sc = past_2gib_before_abort_scenario(line)
    messages = [*sc["messages"][:-1], {"topic": "T7", "queueId": 0, "bodySize": 100}, sc["messages"][-1]]
    return with_embedded_message({**sc, "messages": messages}, EMBED_T0_DATA, EMBED_AT_BODY_DATA,
                                 f"{line}-dledger-abort-past-2gib-before-no-file",
                                 msg=retargeted(BLANK_MAX, b"T7", queue_offset))


def test_crash_restart_whose_reput_before_the_walk_parses_a_message_of_a_queue_the_cut_left_no_file(tmp_path):
    """The cut leaves T7's queue no file (max -1); the 5.5.1 broker's reput set at 2147483647 parses the T7 message
    there (queue offset 3): a new file, three ``fillPreBlank`` units, its unit; then goes on at the 23rd data file
    and appends the walk's T7 unit (queue offset 0: no order check) after it.  ``rebuild --as-restart`` writes
    ``consumequeue/`` and ``index/`` byte for byte (its own dispatch writes T7's queue anew from the parsed unit:
    :func:`store_format.dledger_crash_before.without_queues`) and ``verify``'s units lost are those the broker's
    queues do not hold (the parsed T7 unit no message of the log's)."""
    sc = past_2gib_before_no_file_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    load = w["queuesAfterLoad"]
    assert int(load["T7/0"]["maxPhysicOffset"]) == -1 and not load["T7/0"]["files"], load["T7/0"]
    assert int(load["T9/0"]["maxPhysicOffset"]) == BLANK_MAX, load["T9/0"]
    msg = retargeted(BLANK_MAX, b"T7", 3)
    t7 = _units(src, "T7")
    assert t7[:3] == [FILL_PRE_BLANK_UNIT] * 3 and t7[3] == struct.pack(">qiq", BLANK_MAX, len(msg), 0), t7[:4]
    walk_t7 = int.from_bytes(t7[4][:8], "big")
    assert walk_t7 > int(data[23].name) and not any(b"".join(t7[5:])), "the walk's T7 unit appended after it"
    text = as_restart_matches_broker(src, tmp_path, sc, w, parsed=1)
    assert "the cut left T7/0 with no file (max -1: ConsumeQueue.correctMinOffset), which it writes anew" in text and \
        "T7/0 at 60" not in text, text[-3000:]

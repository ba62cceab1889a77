"""A 5.5.1 DLedger crash restart whose start's reput, set at 2147483647 inside an entry of a data file before the
walk's, goes on before the walk's data file and walks there a record holding its own and light unit both in a queue
(a message put to %LMQ%q1 itself whose multi-dispatch request names %LMQ%q1 again) that the cut left
``fillPreBlank`` units only, checked against the broker (``DLEDGER_2GIB=1`` only: some 2.3 GB of data files, its
``before/`` copy as much).

``-past-2gib-before-t9-first-light-mixed-ext-earlier-both`` (:func:`past_2gib_before_mixed_earlier_both_scenario`):
``-past-2gib-before-t9-first-light-mixed-ext``
(:func:`test_dledger_2gib_before_mixed_ext_broker.past_2gib_before_t9_first_mixed_ext_scenario`, ext files) whose
23rd data file's T9 record goes to T9 only and is followed by a %LMQ%q1 message (own queue offset 0, keys ``KB``)
also going to %LMQ%q1 itself (light queue offset 0); the walk's T9 record's light unit has light queue offset 1 and
the log's last message (%LMQ%q1 itself, keys ``KL``) own queue offset 1.  The walk puts %LMQ%q1's light unit 1 at 20
after a ``fillPreBlank`` unit and drops its own unit 1 (below the write position); the cut leaves the
``fillPreBlank`` unit only (max 2147483647, write position 20).

``ConsumeQueue.putMessagePositionInfoWrapper`` puts a record's ext unit, then its own unit
(``putMessagePositionInfo``), then ``multiDispatchLmqQueue`` its light units, each by ``putMessagePositionInfo``'s
rule: at or below the max dropped, a queue offset not 0 below the write position dropped, any other appended at the
write position.  So the earlier record's own unit (queue offset 0) is appended at 20 holding its ext unit's address
and its light unit (queue offset 0 too: no order check) drops, its end at the max its own unit set; the other way
round its light unit would sit at 20 holding the request's tags code.  The walk's units then drop (queue offset 1,
below the write position 40).  ``rebuild --as-restart`` replays the queue so, the earlier record's units in dispatch
order (:func:`store_format.dledger_crash_before.appended_before`).
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    FILL_PRE_BLANK_UNIT,
    LINE,
    NEEDS_2GIB,
    as_restart_matches_broker,
    verify_restart,
    written,
)
from broker_dledger_files import ext_figures_as_the_broker
from test_dledger_2gib_again_broker import ext_units
from test_dledger_2gib_before_mixed_ext_broker import past_2gib_before_t9_first_mixed_ext_scenario
from test_dledger_2gib_before_queues_broker import LIGHT_PROPS as LIGHT_PROPS_SIZE
from test_dledger_2gib_before_queues_broker import LMQ

from store_format.dledger import ENTRY_HEADER_SIZE
from store_format.layout import OFF_QUEUE_OFFSET

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()

LONG_MIN = -2**63
T9_ENTRY_SIZE = 241   # the 23rd data file's first entry: a T9 message of a 100-byte body, no properties


def past_2gib_before_mixed_earlier_both_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-t9-first-light-mixed-ext-earlier-both`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`test_dledger_2gib_before_mixed_ext_broker.past_2gib_before_t9_first_mixed_ext_scenario` whose first T9
    message (the 23rd data file's first) goes to T9 only, followed by a %LMQ%q1 message (keys ``KB``) also going to
    %LMQ%q1 itself (light queue offset 0), its body shorter by
    :data:`test_dledger_2gib_before_queues_broker.LIGHT_PROPS` and the topic's 5 more bytes; the walk's T9
    message's light queue offset 1 (as before: after that record's light unit)."""
    sc = past_2gib_before_t9_first_mixed_ext_scenario(line)
    messages = list(sc["messages"])
    first, walk = [k for k, m in enumerate(messages) if m.get("topic") == "T9"]
    assert messages[first]["properties"]["INNER_MULTI_QUEUE_OFFSET"] == "0", messages[first]
    assert messages[walk]["properties"]["INNER_MULTI_QUEUE_OFFSET"] == "1", messages[walk]
    messages[first] = {"topic": "T9", "queueId": 0, "bodySize": 100}
    both = {"topic": LMQ, "queueId": 0, "bodySize": 100 - LIGHT_PROPS_SIZE - (len(LMQ) - 2), "keys": "KB",
            "properties": {"INNER_MULTI_DISPATCH": LMQ, "INNER_MULTI_QUEUE_OFFSET": "0"}}
    messages.insert(first + 1, both)
    return {**sc, "messages": messages, "name": f"{sc['name']}-earlier-both"}


def _units(src, topic: str) -> list[tuple[int, int, int]]:  # noqa: ANN001
    files = sorted((src / "expected" / "consumequeue" / topic / "0").iterdir())
    return [struct.unpack(">qiq", b[i:i + 20]) for f in files for b in (f.read_bytes(),)
            for i in range(0, len(b) - 19, 20)]


def _record(src, at: int, n: int = 200) -> bytes:  # noqa: ANN001
    """``n`` bytes of the DLedger log of ``src/before`` at ``at`` (in the 23rd data file)."""
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    with data[22].open("rb") as f:
        f.seek(at - int(data[22].name))
        return f.read(n)


def test_crash_restart_with_ext_whose_reput_before_the_walk_puts_an_earlier_records_own_and_light_unit(tmp_path):
    """The cut leaves %LMQ%q1 one ``fillPreBlank`` unit (max 2147483647); the 5.5.1 broker's reput goes on at the 23rd
    data file, appends T9's record there (queue offset 0) to T9's queue at 20, then puts the %LMQ%q1 record's ext unit
    (the second, after the walk's own record's the cut kept) and appends its own unit (queue offset 0) at 20 holding
    that address, drops its light unit (queue offset 0, its end at the max its own unit set), then drops the walk's
    light and own units (queue offset 1, below the write position 40), putting the walk's own record's ext unit again.
    ``rebuild --as-restart`` writes ``consumequeue/``, ``consumequeue_ext/`` and ``index/`` byte for byte;
    ``verify``'s units lost are those the broker's queues do not hold, its index keys put again the broker's and its
    ext figures the broker's."""
    sc = past_2gib_before_mixed_earlier_both_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    load = w["queuesAfterLoad"]
    assert int(load["T9/0"]["maxPhysicOffset"]) == BLANK_MAX == int(load[f"{LMQ}/0"]["maxPhysicOffset"]), load
    assert load[f"{LMQ}/0"]["extFiles"], load[f"{LMQ}/0"]   # the cut kept the walk's own record's ext unit
    # the 23rd data file: T9's record (queue offset 0), then the %LMQ%q1 record (own queue offset 0, light 0)
    t9_at = int(data[22].name) + ENTRY_HEADER_SIZE
    both_at = t9_at + T9_ENTRY_SIZE
    t9, both = _record(src, t9_at), _record(src, both_at)
    assert LMQ.encode() not in t9 and struct.unpack(">q", t9[OFF_QUEUE_OFFSET:OFF_QUEUE_OFFSET + 8])[0] == 0, t9
    assert struct.unpack(">q", both[OFF_QUEUE_OFFSET:OFF_QUEUE_OFFSET + 8])[0] == 0 and LMQ.encode() in both, both
    assert b"INNER_MULTI_QUEUE_OFFSET\x010" in both, both
    size = struct.unpack(">i", both[:4])[0]   # its keys KB make it 8 bytes longer than T9's
    units = _units(src, LMQ)
    assert struct.pack(">qiq", *units[0]) == FILL_PRE_BLANK_UNIT, units[:4]
    assert units[1] == (both_at, size, LONG_MIN + 20), \
        ("the earlier record's own unit at 20, holding the second ext unit's address, not its light one", units[:4])
    assert not any(any(u) for u in units[2:]), ("its light unit and the walk's dropped", units[:5])
    t9_units = _units(src, "T9")
    assert struct.pack(">qiq", *t9_units[0]) == FILL_PRE_BLANK_UNIT and t9_units[1][0] == t9_at, t9_units[:3]
    assert not any(any(u) for u in t9_units[2:]), ("the walk's T9 unit dropped", t9_units[:4])
    ext = ext_units(src, LMQ)
    assert len(ext) == 3 and ext[0] == ext[2] != ext[1], ("the walk's own record's, the earlier one's, again", ext)
    # verify's reference (a rebuild: putMessagePositionInfo from an empty %LMQ%q1) holds two of the log's four %LMQ%q1
    # units, as many as its own messages: the earlier record's own unit at 0 (its light one dropped at the max), the
    # walk's T9 record's light unit (1) at 20, not the last message's own unit (1, below 40); so no light units more
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="", light=0, ext=True)
    assert f"then the walk's units by the same rule: {LMQ}/0 at 20, T9/0 at 20" in text, text[-3000:]
    p = verify_restart(src, tmp_path / "again")
    assert p is not None
    lost = {q["queue"]: q["units_lost"] for q in p["queues"]}
    assert lost[f"{LMQ}/0"] == 1 and lost["T9/0"] == 1, lost   # the walk's light and T9 units: the broker's hold none
    figs = ext_figures_as_the_broker(p, w, src)   # every ext queue's appended and orphaned: the broker's
    assert figs[f"{LMQ}/0"][:2] == (3, 3), figs

"""5.5.1 DLedger crash restarts whose start's reput, set at 2147483647 inside an entry of a data file before the walk's,
goes on before the walk's data file and appends a record of queue offset 0 there to a queue the cut left with
``fillPreBlank`` units only, whose replay opens another queue file than the walk's (``DLEDGER_2GIB=1`` only: some
2.3 GB of data files, its ``before/`` copy as much).

``-past-2gib-before-t9-full`` (:func:`past_2gib_before_t9_full_scenario`): ``-past-2gib-before-t9-first``
(:func:`test_dledger_2gib_before_more_broker.past_2gib_before_t9_first_scenario`) with consume queue files of
:data:`UNITS_PER_FILE` units and that many T9 messages less one in the 23rd data file (queue offsets 0 to
``UNITS_PER_FILE - 2``; 286 T0 messages fewer there: the same layout otherwise), so the walk's T9 message has queue
offset ``UNITS_PER_FILE - 1``: the walk puts its unit in the last slot of T9's first file after ``fillPreBlank``
units, and the cut leaves those only (max 2147483647).  The reput goes on at the 23rd data file and appends its first
T9 unit (queue offset 0: no order check) in that last slot; the next T9 record's ``getLastMappedFile`` finds the file
full and creates the next one before the queue offset check drops the unit ("Build consume queue repeatedly"), and
every later T9 unit, the walk's too, drops there: the broker's queue holds a second, empty file the walk never opened.
``rebuild --as-restart`` replays T9's queue (:func:`store_format.dledger_crash_before.appended_before`), writes that
file too (zeros) and ``consumequeue/`` and ``index/`` byte for byte.
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
    as_restart,
    as_restart_matches_broker,
    held_units,
    queued_messages,
    same_files_as_the_broker,
    verify_restart,
    written,
)
from broker_dledger_scenarios import PAST_2GIB_BATCH, PAST_2GIB_FILE
from test_dledger_2gib_before_more_broker import past_2gib_before_t9_first_scenario
from test_dledger_2gib_before_queues_broker import LMQ, past_2gib_before_t9_first_light_scenario

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()

UNITS_PER_FILE = 5000   # a consume queue file's units (mappedFileSizeConsumeQueue 100,000 bytes)
T9_ENTRY = 241          # a T9 entry (100-byte body)
T0_FEWER = 286          # T0 entries (4237 bytes) the 23rd data file gives up for the T9 ones: eleven T1 entries fit


def past_2gib_before_t9_full_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-t9-full`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`test_dledger_2gib_before_more_broker.past_2gib_before_t9_first_scenario` with
    ``mappedFileSizeConsumeQueue`` of :data:`UNITS_PER_FILE` units, ``UNITS_PER_FILE - 2`` more T9 messages after the
    23rd data file's first one and :data:`T0_FEWER` T0 messages fewer there."""
    sc = past_2gib_before_t9_first_scenario(line)
    messages = list(sc["messages"])
    k = next(n for n, m in enumerate(messages) if n and m.get("topic") == "T9")   # the 23rd data file's first
    more = UNITS_PER_FILE - 2
    t9 = [{"topic": "T9", "queueId": 0, "batch": [{"bodySize": 100}] * min(PAST_2GIB_BATCH, more - n)}
          for n in range(0, more, PAST_2GIB_BATCH)]
    rest = messages[k + 1:]
    fewer = T0_FEWER
    while fewer:   # T0 batches right after it, the last ones shortened
        j = max(n for n, m in enumerate(rest) if m.get("topic") == "T0")
        cut = min(fewer, len(rest[j]["batch"]))
        rest[j] = {**rest[j], "batch": rest[j]["batch"][cut:]}
        if not rest[j]["batch"]:
            del rest[j]
        fewer -= cut
    return {**sc, "messages": [*messages[:k + 1], *t9, *rest],
            "config": {**sc["config"], "mappedFileSizeConsumeQueue": str(20 * UNITS_PER_FILE)},
            "name": f"{line}-dledger-abort-past-2gib-before-t9-full"}


def _units(src, topic: str) -> list[tuple[str, list[bytes]]]:  # noqa: ANN001
    files = sorted((src / "expected" / "consumequeue" / topic / "0").iterdir())
    return [(f.name, [b[i:i + 20] for i in range(0, len(b) - 19, 20)]) for f in files for b in (f.read_bytes(),)]


def test_crash_restart_whose_reput_before_the_walk_fills_the_queue_file_and_opens_the_next(tmp_path):
    """The cut leaves T9 ``UNITS_PER_FILE - 1`` ``fillPreBlank`` units (max 2147483647); the 5.5.1 broker's reput goes
    on at the 23rd data file, appends its first T9 unit (queue offset 0) in the file's last slot, and the next T9
    record's ``getLastMappedFile`` creates the next file before its unit drops: T9's second file, all zeros.
    ``rebuild --as-restart`` writes ``consumequeue/`` and ``index/`` byte for byte and ``verify``'s units lost are
    those the broker's queues do not hold."""
    sc = past_2gib_before_t9_full_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and all(int(f.name) == k * PAST_2GIB_FILE for k, f in enumerate(data)), data
    assert int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    assert int(w["queuesAfterLoad"]["T9/0"]["maxPhysicOffset"]) == BLANK_MAX   # the cut left fillPreBlank units only
    size = 20 * UNITS_PER_FILE
    t9 = _units(src, "T9")
    assert [name for name, _u in t9] == [f"{0:020d}", f"{size:020d}"], [name for name, _u in t9]
    first, second = t9[0][1], t9[1][1]
    assert len(first) == UNITS_PER_FILE and first[:-1] == [FILL_PRE_BLANK_UNIT] * (UNITS_PER_FILE - 1), first[-2:]
    assert int.from_bytes(first[-1][:8], "big") == int(data[22].name) + ENTRY_HEADER_SIZE, first[-1].hex()
    assert len(second) == UNITS_PER_FILE and not any(b"".join(second)), "T9's second file: created, no unit"
    text = as_restart_matches_broker(src, tmp_path, sc, w)
    assert f"then the walk's units by the same rule: T9/0 at {size - 20}" in text, text[-3000:]


def past_2gib_before_t9_first_mixed_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-t9-first-light-mixed`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`test_dledger_2gib_before_queues_broker.past_2gib_before_t9_first_light_scenario` with a last message sent
    to topic %LMQ%q1, queue 0, itself (keys ``KL``): %LMQ%q1/0's own unit, queue offset 0 (the store's
    topicQueueTable; its light units' from lmqTopicQueueTable), after the walk's light unit (light queue offset 1)."""
    sc = past_2gib_before_t9_first_light_scenario(line)
    return {**sc, "messages": [*sc["messages"], {"topic": LMQ, "queueId": 0, "bodySize": 100, "keys": "KL"}],
            "name": f"{sc['name']}-mixed"}


def test_crash_restart_whose_reput_before_the_walk_appends_a_light_unit_of_queue_offset_0_to_a_mixed_queue(tmp_path):
    """The cut leaves %LMQ%q1 one ``fillPreBlank`` unit (the walk's light unit, light queue offset 1, then its own
    unit, queue offset 0, both past ``processOffset``; max 2147483647); the 5.5.1 broker's reput goes on at the 23rd
    data file and appends its T9 record's light unit (light queue offset 0: no order check) at 20, drops the walk's
    light unit (1, below the write position 40) and appends the walk's own unit (queue offset 0: no order check) at
    40.  ``rebuild --as-restart`` replays %LMQ%q1's queue with both counters' queue offsets and writes
    ``consumequeue/`` and ``index/`` byte for byte; ``verify``'s units lost are those the broker's queues do not hold
    (the light units counted too)."""
    sc = past_2gib_before_t9_first_mixed_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    load = w["queuesAfterLoad"]
    assert int(load["T9/0"]["maxPhysicOffset"]) == BLANK_MAX == int(load[f"{LMQ}/0"]["maxPhysicOffset"]), load
    units = [u for _name, us in _units(src, LMQ) for u in us]
    light = int(data[22].name) + ENTRY_HEADER_SIZE
    own = int(w["queuesAfterDispatch"][f"{LMQ}/0"]["maxPhysicOffset"])   # the log's last record, its own unit
    assert units[0] == FILL_PRE_BLANK_UNIT and struct.unpack(">qiq", units[1])[0] == light, [u.hex() for u in units]
    at, size, _tags = struct.unpack(">qiq", units[2])
    assert at + size == own and at > int(data[23].name) and not any(b"".join(units[3:])), [u.hex() for u in units]
    text = as_restart(src, tmp_path / "ours")
    same_files_as_the_broker(src, tmp_path / "ours")
    assert f"then the walk's units by the same rule: {LMQ}/0 at 20, T9/0 at 20" in text, text[-3000:]
    p = verify_restart(src, tmp_path)
    held = held_units(src, ends=w["queuesAfterDispatch"], leave_out="")
    assert p is not None and p["units_lost"] == queued_messages(sc) + 2 - held, (held, p and p["notes"])

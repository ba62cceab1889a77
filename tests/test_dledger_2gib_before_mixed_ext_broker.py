"""A 5.5.1 DLedger crash restart whose start's reput, set at 2147483647 inside an entry of a data file before the
walk's, goes on before the walk's data file and appends a record of queue offset 0 there to a queue holding own and
light units both that the cut left ``fillPreBlank`` units only, with ext files, checked against the broker
(``DLEDGER_2GIB=1`` only: some 2.3 GB of data files, its ``before/`` copy as much).

``-past-2gib-before-t9-first-light-mixed-ext`` (:func:`past_2gib_before_t9_first_mixed_ext_scenario`):
``-past-2gib-before-t9-first-light-mixed``
(:func:`test_dledger_2gib_before_other_broker.past_2gib_before_t9_first_mixed_scenario`: %LMQ%q1/0 holds the T9
records' light units and the log's last message's own unit) with ``enableConsumeQueueExt=true``.
``ConsumeQueue.putMessagePositionInfoWrapper`` puts an ext unit (``ConsumeQueueExt.put``) only for a record's own unit
before ``putMessagePositionInfo``; ``multiDispatchLmqQueue`` calls ``putMessagePositionInfo`` for a light unit with
the request's tags code and puts no ext unit.  So %LMQ%q1's ext units are the walk's own record's (the cut keeps the ext
file) and that record's again in the reput; the reput appends the 23rd data file's T9 record's light unit (light
queue offset 0) at 20 holding its tags code, drops the walk's light unit (1, below the write position 40) and appends
the walk's own unit (queue offset 0) at 40 holding the second ext unit's address.  ``rebuild --as-restart`` replays
the queue with both counters' queue offsets, own units only counting ext units
(:func:`store_format.dledger_crash_before.appended_before`).
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
    held_units,
    queued_messages,
    same_ext_files_as_the_broker,
    same_files_as_the_broker,
    verify_restart,
    written,
)
from broker_dledger_files import ext_figures_as_the_broker
from test_dledger_2gib_again_broker import EXT_FILE_SIZE, ext_units
from test_dledger_2gib_before_other_broker import past_2gib_before_t9_first_mixed_scenario
from test_dledger_2gib_before_queues_broker import LMQ

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store, NEEDS_2GIB]

bh.skip_without_tools()


def past_2gib_before_t9_first_mixed_ext_scenario(line: str) -> dict:
    """``<line>-dledger-abort-past-2gib-before-t9-first-light-mixed-ext`` (5.5.1, ``DLEDGER_2GIB=1``):
    :func:`test_dledger_2gib_before_other_broker.past_2gib_before_t9_first_mixed_scenario` with
    ``enableConsumeQueueExt=true`` (ext files of :data:`test_dledger_2gib_again_broker.EXT_FILE_SIZE` bytes)."""
    sc = past_2gib_before_t9_first_mixed_scenario(line)
    return {**sc, "name": f"{sc['name']}-ext",
            "config": {**sc["config"], "enableConsumeQueueExt": "true",
                       "mappedFileSizeConsumeQueueExt": str(EXT_FILE_SIZE)}}


LONG_MIN = -2**63


def _units(src, topic: str) -> list[tuple[int, int, int]]:  # noqa: ANN001
    files = sorted((src / "expected" / "consumequeue" / topic / "0").iterdir())
    return [struct.unpack(">qiq", b[i:i + 20]) for f in files for b in (f.read_bytes(),)
            for i in range(0, len(b) - 19, 20)]


def test_crash_restart_with_ext_whose_reput_before_the_walk_appends_a_light_unit_to_a_mixed_queue(tmp_path):
    """The cut leaves %LMQ%q1 one ``fillPreBlank`` unit (max 2147483647) and the walk's own record's ext unit; the
    5.5.1 broker's reput goes on at the 23rd data file, appends its T9 record's light unit (light queue offset 0) at 20
    with the request's tags code (0: no tags; no ext unit), drops the walk's light unit and appends the walk's own unit
    (queue offset 0) at 40 holding the address of the second ext unit, that record's again.  ``rebuild --as-restart``
    writes ``consumequeue/``, ``consumequeue_ext/`` and ``index/`` byte for byte; ``verify``'s units lost are those
    the broker's queues do not hold (the light units counted too) and its ext figures the broker's."""
    sc = past_2gib_before_t9_first_mixed_ext_scenario(LINE)
    w, src = written(sc, tmp_path)
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 24 and int(data[21].name) <= BLANK_MAX < int(data[22].name), data[21:23]
    load = w["queuesAfterLoad"]
    assert int(load["T9/0"]["maxPhysicOffset"]) == BLANK_MAX == int(load[f"{LMQ}/0"]["maxPhysicOffset"]), load
    assert load[f"{LMQ}/0"]["extFiles"], load[f"{LMQ}/0"]   # the cut kept the ext file
    units = _units(src, LMQ)
    light = int(data[22].name) + ENTRY_HEADER_SIZE   # the 23rd data file's first record
    own = int(w["queuesAfterDispatch"][f"{LMQ}/0"]["maxPhysicOffset"])   # the log's last record, its own unit
    assert struct.pack(">qiq", *units[0]) == FILL_PRE_BLANK_UNIT, units[:4]
    assert units[1][0] == light and units[1][2] == 0, ("the light unit at 20: the request's tags code", units[:4])
    assert units[2][0] + units[2][1] == own and units[2][2] == LONG_MIN + 20, \
        ("the walk's own unit at 40, holding the second ext unit's address", units[:4])
    assert not any(any(u) for u in units[3:]), units[:5]
    ext = ext_units(src, LMQ)
    assert len(ext) == 2 and ext[0] == ext[1], ("the own record's ext unit twice, none for a light unit", ext)
    text = as_restart(src, tmp_path / "ours")
    same_files_as_the_broker(src, tmp_path / "ours")
    same_ext_files_as_the_broker(src, tmp_path / "ours")
    assert f"then the walk's units by the same rule: {LMQ}/0 at 20, {LMQ}/0 at 40, T9/0 at 20" in text, text[-3000:]
    p = verify_restart(src, tmp_path)
    held = held_units(src, ends=w["queuesAfterDispatch"], leave_out="")
    assert p is not None and p["units_lost"] == queued_messages(sc) + 2 - held, (held, p and p["notes"])
    figs = ext_figures_as_the_broker(p, w, src)   # every ext queue's appended and orphaned: the broker's
    assert figs[f"{LMQ}/0"][:2] == (2, 2), figs

"""A 5.5.1 DLedger crash restart whose start's reput, set at 2147483647 inside the last T0 entry of a log past 2 GiB
(a queue the cut left with ``fillPreBlank`` units only below ``processOffset``), parses a message there for that very
queue, goes on at an entry's start before its cut unit, dispatching it again, and then reaches that queue's record
past the walk's end (a walk ended by a damaged message), checked against the broker (``DLEDGER_2GIB=1`` only: the
store holds some 2.15 GB of data, its ``before/`` copy as much).

The ``-t9-to-entry-past`` store (:func:`broker_dledger_inside_blank_scenarios.t9_to_entry_past_scenario`): the
``-t9-to-entry`` store with a damaged T8 message, a T8 message and a T9 message (``K9b``, queue offset 2) after its last
T9 message.  ``ConsumeQueue.truncateDirtyLogicFiles`` (rocketmq-store 5.5.1) keeps T9's ``fillPreBlank`` unit (offset
0, size 2147483647: ``offset >= 0 && size > 0`` and below ``processOffset``) and returns at the cut unit: write
position 20, max 2147483647.  ``putMessagePositionInfo`` appends the parsed unit at 20 (its end past that max), the
max becoming its end; drops T9's cut unit dispatched again (queue offset 1, below the write position 40: "build
consume queue repeatedly"), which changes nothing; then appends K9b's unit at 40 (its end past the parsed unit's, its
queue offset 2 not below the write position).  The rebuild's own dispatch drops the parsed unit (it ends at the T9
record's start, below that queue's last walk unit's end) and appends K9b's after the walk's cut unit, at 40 too.
``-ext``: the same with ``enableConsumeQueueExt=true``, T9's ext units the walk's, the parsed message's, the cut
record's again and K9b's.

``rebuild --as-restart`` on the store as the restart found it must write the broker's ``consumequeue/`` (with ext
files ``consumequeue_ext/``) and ``index/`` byte for byte, and ``verify``'s units lost count from the broker's queues.
"""
from __future__ import annotations

import os
import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    ENTRY_BOUND_BODY,
    LINE,
    T9_ENTRY,
    as_restart_matches_broker,
    first_units,
    written,
)
from broker_dledger_inside_blank_scenarios import t9_to_entry_past_scenario
from test_dledger_2gib_again_broker import ext_units, t9_entry_bound_message

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.big_store]

bh.skip_without_tools()

BLANK = (0, BLANK_MAX, 0)


def check_t9_to_entry_past(w: dict, src, tmp_path, sc: dict, ext: bool = False) -> str:  # noqa: ANN001
    """The ``-t9-to-entry-past`` store (``ext``: ``-ext``) as the broker wrote and restarted it, then ``rebuild
    --as-restart`` and ``verify`` on it (:func:`test_crash_restart_whose_reput_parses_a_message_for_a_queue_left_with_
    fillpreblank_units_only_then_reaches_its_records_past_the_walk`)."""
    msg = t9_entry_bound_message(1)
    assert len(msg) == T9_ENTRY - BLANK_MAX and ENTRY_BOUND_BODY in msg
    t9_at = T9_ENTRY + ENTRY_HEADER_SIZE   # the last T9 record the walk dispatched (K9), cut
    damaged = int(w["damagedRecord"])
    assert damaged == t9_at + 201 + ENTRY_HEADER_SIZE, w["damagedRecord"]   # the walk ends right after K9's entry
    assert int(w["truncateDirtyLogicFilesAt"]) < BLANK_MAX, w["truncateDirtyLogicFilesAt"]
    assert int(w["maxPhyOffset"]) == int(w["dledgerCommittedPos"]) > damaged, w   # DLedger kept the log
    k8b = damaged + 201 + ENTRY_HEADER_SIZE
    k9b = k8b + 202 + ENTRY_HEADER_SIZE
    assert int(w["maxPhyOffset"]) == k9b + 202
    # the cut: T9/0's fillPreBlank unit kept (write position 20, max 2147483647), K9's unit cut; T8's not written
    loaded = w["queuesAfterLoad"]
    assert "T8/0" not in loaded, loaded
    assert (int(loaded["T9/0"]["maxOffset"]), int(loaded["T9/0"]["maxPhysicOffset"])) == (20, BLANK_MAX), loaded
    # what the broker's reput did: the parsed unit at 20 (over K9's), K9's dispatched again dropped (queue offset 1,
    # below the write position 40), K9b's (queue offset 2, past the walk's end) appended at 40; with ext files T9's
    # ext units the walk's, the parsed message's (the parsed unit holding address 20), K9's again (ConsumeQueueExt.put
    # runs before its unit is dropped) and K9b's (its unit holding address 60)
    tags = (20 - 2**63, 60 - 2**63) if ext else (0, 0)
    assert first_units(src, "T9", 4) == [BLANK, (BLANK_MAX, len(msg), tags[0]), (k9b, 202, tags[1]), (0, 0, 0)]
    t9 = w["queuesAfterDispatch"]["T9/0"]
    assert (int(t9["maxOffset"]), int(t9["maxPhysicOffset"])) == (60, k9b + 202), t9
    assert [u[:2] for u in first_units(src, "T8", 3)] == [(damaged, 201), (k8b, 202), (0, 0)]   # the reput's
    if ext:
        units = ext_units(src, "T9")
        assert len(units) == 4 and units[0] == units[2] != units[1] and units[3] != units[0], units
        assert units[1] == struct.pack(">hqqh", 20, 0, 1_700_000_000_001, 0), "the parsed message's ext unit"
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="", parsed=1, ext=ext)
    assert f"parses 1 message(s) ({BLANK_MAX} to {T9_ENTRY})" in text and f"sends it on to {T9_ENTRY} " in text, \
        text[-3000:]
    assert "T9/0 at 20" in text and f"ends its walk at {damaged - ENTRY_HEADER_SIZE} " in text, text[-3000:]
    return text


@pytest.mark.skipif(os.environ.get("DLEDGER_2GIB") != "1", reason="a 2 GiB store: DLEDGER_2GIB=1")
@pytest.mark.parametrize("ext", [False, True], ids=["plain", "ext"])
def test_crash_restart_whose_reput_parses_a_message_for_a_queue_left_with_fillpreblank_units_only_then_reaches_its_records_past_the_walk(  # noqa: E501
        tmp_path, ext):
    """The ``-t9-to-entry-past`` store: the reput set at 2147483647 parses a T9 message (queue offset 1) up to the
    last T9 entry's start, where it goes on, then walks on past the damaged T8 message where the walk ended.  The
    cut left T9/0 its ``fillPreBlank`` unit only (write position 20, max 2147483647); the 5.5.1 broker appends the
    parsed unit at 20, over the cut unit, drops T9's cut unit dispatched again (queue offset 1, below the write
    position), then appends T9's record past the walk's end (queue offset 2) at 40, after the parsed unit, as the
    rebuild's own dispatch puts it after the walk's units.  ``rebuild --as-restart``: the broker's ``consumequeue/``
    (with ext files ``consumequeue_ext/``) and ``index/`` byte for byte, and verify's units lost."""
    sc = t9_to_entry_past_scenario(LINE, ext)
    w, src = written(sc, tmp_path)
    check_t9_to_entry_past(w, src, tmp_path, sc, ext)

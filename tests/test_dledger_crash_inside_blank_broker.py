"""5.5.1 DLedger crash restarts whose start's reput, set inside an entry, parses a message for a queue the walk wrote
that kept no walk unit below ``processOffset`` in the walk's last data file, goes on at an entry's start before that
queue's cut units, dispatching them again, and then reaches its records past the walk's end (a walk ended by a
damaged message), checked against the broker: its files, ``rebuild --as-restart`` byte for byte and ``verify``'s units
lost.

The -past-cut-two-some-earlier stores with ext files or with the queues kept
(:func:`broker_dledger_inside_blank_scenarios.blank_scenarios`, written with the others of
:mod:`broker_dledger_runs`): T6/0's only unit below ``processOffset`` lies in the walk's earlier data file, the cut
leaves its write position at its first cut unit (20), its max that earlier unit's end; the parsed T6/0 message ends
where the first cut record ends, so the reput dispatches only the last cut unit again, then the damaged message and
the last one.  With ``enableConsumeQueueExt=true`` ``ConsumeQueueExt.put`` runs for each record the reput walks:
the parsed message's ext unit after the walk's three, then the last cut record's again, the damaged one's and the
last one's (none again for the first cut record, inside the parsed message), each unit holding its address.  On
disk before the walk, ``truncateDirtyLogicFiles`` on T6/0's files leaves the same write position and max.

The ``-t9-to-entry-past`` store (:func:`broker_dledger_inside_blank_scenarios.t9_to_entry_past_scenario`,
``DLEDGER_2GIB=1`` only: the store holds some 2.15 GB of data, its ``before/`` copy as much): the reput set at
2147483647 inside the last T0 entry of a log past 2 GiB (a queue the cut left with ``fillPreBlank`` units only below
``processOffset``) parses a message there for that very queue (T9/0).  The ``-t9-to-entry`` store with a damaged T8
message, a T8 message and a T9 message (``K9b``, queue offset 2) after its last T9 message.
``ConsumeQueue.truncateDirtyLogicFiles`` (rocketmq-store 5.5.1) keeps T9's ``fillPreBlank`` unit (offset 0, size
2147483647: ``offset >= 0 && size > 0`` and below ``processOffset``) and returns at the cut unit: write position 20,
max 2147483647.  ``putMessagePositionInfo`` appends the parsed unit at 20 (its end past that max), the max becoming
its end; drops T9's cut unit dispatched again (queue offset 1, below the write position 40: "build consume queue
repeatedly"), which changes nothing; then appends K9b's unit at 40 (its end past the parsed unit's, its queue offset
2 not below the write position).  The rebuild's own dispatch drops the parsed unit (it ends at the T9 record's start,
below that queue's last walk unit's end) and appends K9b's after the walk's cut unit, at 40 too.  ``-ext``: the same
with ``enableConsumeQueueExt=true``, T9's ext units the walk's, the parsed message's, the cut record's again and
K9b's.
"""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_2gib import (
    BLANK_MAX,
    ENTRY_BOUND_BODY,
    LINE,
    NEEDS_2GIB,
    T0_TAIL,
    T9_ENTRY,
    as_restart_matches_broker,
    first_units,
    written,
)
from broker_dledger_files import cq_unit
from broker_dledger_files import ext_units as ext_file_units
from broker_dledger_inside_blank_scenarios import (
    T9_SOME_PROPS,
    T9_SOME_SIZE,
    t9_some_message,
    t9_to_entry_past_scenario,
    t9_to_entry_some_past_scenario,
)
from broker_dledger_runs import (
    LINES,
    _loses_as_the_broker,
    _restart_as_the_broker,
    _verify_loses_as_the_broker,
    _verify_with_plan,
)
from test_dledger_2gib_again_broker import ext_units, t9_entry_bound_message
from test_dledger_crash_inside_past_last_broker import SOME_EARLIER, some_earlier_written

from store_format.dledger import ENTRY_HEADER_SIZE

pytestmark = [pytest.mark.broker, pytest.mark.slow]

bh.skip_without_tools()

BLANK = (0, BLANK_MAX, 0)
# the T6/0 messages after B9's: 300-byte records, each behind a 48-byte DLedger header
_TAIL, _ENTRY_HEADER = 300, 48


@pytest.mark.spark
@pytest.mark.usefixtures("dledger_written")
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_dispatches_the_last_cut_unit_then_records_past_the_walk_ext_earlier(
        line, tmp_path):
    """-past-cut-two-some-earlier-ext: as -past-cut-two-some-earlier (T6/0's only unit below processOffset in the
    walk's earlier data file; the parsed unit at 20, the second cut unit back at 40, the damaged message's unit and
    the last one's at 60 and 80) with ``enableConsumeQueueExt=true``: T6/0's ext units the walk's three (the earlier
    data file's record and the two cut ones: the cut leaves the ext file as the walk wrote it), the parsed
    message's, the second cut record's again, the damaged one's and the last one's, the units from 20 on holding the
    addresses of the last four (none again for the first cut record, inside the parsed message).  --as-restart
    writes the broker's files byte for byte (``consumequeue_ext/`` too), and verify's units lost are the units the
    broker's queues lack."""
    r, _w, src, reput, _second, _damaged, _last, units = some_earlier_written(line, "-ext")
    assert [u[2] + 2**63 for u in units[:5]] == [0, 60, 80, 100, 120], units   # their ext units' addresses
    cq_ext = ext_file_units((src / "expected" / "consumequeue_ext" / "T6" / "0" / f"{0:020d}").read_bytes())
    # the second cut record's again (an ext unit holds a store time: records of one millisecond give the same bytes)
    assert len(cq_ext) == 7 and cq_ext[4] == cq_ext[2], cq_ext
    assert cq_ext[3] == struct.pack(">hqqh", 20, 0, 1_700_000_000_001, 0), "the parsed message's ext unit"
    _restart_as_the_broker(src, f"{line}-{SOME_EARLIER}-ext", line, tmp_path, ext=True)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))


@pytest.mark.spark
@pytest.mark.usefixtures("dledger_written")
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_dispatches_the_last_cut_unit_of_a_kept_queue_held_earlier(
        line, tmp_path, monkeypatch):
    """-past-cut-two-some-earlier-kept: as -past-cut-two-some-earlier with the queues kept (T6/0 on disk before the
    walk, its units of the cut records and of the records past the walk's end written before the damage):
    ``truncateDirtyLogicFiles`` on its file leaves write position 20 and the earlier data file's unit's end as the
    max, as the walk's units do, and the broker's T6/0 is as with the queues deleted.  verify's plan puts the parsed
    unit at 20 (the first cut unit counted dropped, the second back, the records past the walk's end after it) and
    its units lost are those the broker's queues lack."""
    from store_format.dledger_inside_units import InsideUnit
    r, w, src, reput, second, damaged, last, units = some_earlier_written(line, "-kept")
    disk = (src / "before" / "consumequeue" / "T6" / "0" / f"{0:020d}").read_bytes()
    assert [cq_unit(disk, k)[0] for k in range(0, 100, 20)] == [units[0][0], second - _TAIL - _ENTRY_HEADER, second,
                                                                damaged, last], disk[:100].hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / "kept"), src, line)
    placed = crash.cut.inside_placed
    (q,) = [w for w in placed.whole if (w.topic, w.queue_id) == ("T6", 0)]   # replayed whole
    # the first cut unit dispatched again dropped, the other back where it was, the records past the walk's end after it
    assert (placed.units, len(q.lost), q.copies, [u[0] for u in q.units[1:]]) == (
        (InsideUnit("T6", 0, 20, reput, units[1][1], 0),), 1, ((40, 40),), [60, 80]), placed
    _loses_as_the_broker(p, r, src, (reput,))   # neither fillPreBlank nor the parsed unit held


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
        assert len(units) == 4 and units[0] == units[2] != units[1], units
        assert units[1] == struct.pack(">hqqh", 20, 0, 1_700_000_000_001, 0), "the parsed message's ext unit"
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="", parsed=1, ext=ext)
    assert f"parses 1 message(s) ({BLANK_MAX} to {T9_ENTRY})" in text and f"sends it on to {T9_ENTRY} " in text, \
        text[-3000:]
    assert "T9/0 at 20" in text and f"ends its walk at {damaged - ENTRY_HEADER_SIZE} " in text, text[-3000:]
    return text


@pytest.mark.big_store
@NEEDS_2GIB
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


def check_t9_to_entry_some_past(w: dict, src, tmp_path, sc: dict, ext: bool = False) -> str:  # noqa: ANN001
    """The ``-t9-to-entry-some-past`` store (``ext``: ``-ext``) as the broker wrote and restarted it, then ``rebuild
    --as-restart`` and ``verify`` on it (:func:`test_crash_restart_whose_reput_parses_a_message_over_the_first_cut_
    unit_of_a_queue_left_with_fillpreblank_units_only_then_reaches_its_records_past_the_walk`)."""
    from broker_dledger_2gib import log_bytes
    msg = t9_some_message()
    assert log_bytes(src, BLANK_MAX, len(msg) - T9_SOME_SIZE - ENTRY_HEADER_SIZE - len(T0_TAIL)) == \
        msg[:len(msg) - T9_SOME_SIZE - ENTRY_HEADER_SIZE - len(T0_TAIL)], "the T9 message's head in the T0 body"
    k9a = T9_ENTRY + ENTRY_HEADER_SIZE   # the first cut T9 record, inside the parsed message
    assert BLANK_MAX + len(msg) == k9a + T9_SOME_SIZE
    assert log_bytes(src, k9a + T9_SOME_SIZE - len(T9_SOME_PROPS) - 5, len(T9_SOME_PROPS) + 5) == \
        msg[-len(T9_SOME_PROPS) - 5:], "the parsed message's tail: K9a's topic and properties"
    k9 = k9a + T9_SOME_SIZE + ENTRY_HEADER_SIZE   # the last cut T9 record, where the reput goes on
    damaged = int(w["damagedRecord"])
    assert damaged == k9 + 201 + ENTRY_HEADER_SIZE, w["damagedRecord"]   # the walk ends right after K9's entry
    assert int(w["truncateDirtyLogicFilesAt"]) < BLANK_MAX, w["truncateDirtyLogicFilesAt"]
    k8b = damaged + 201 + ENTRY_HEADER_SIZE
    k9b = k8b + 202 + ENTRY_HEADER_SIZE
    assert int(w["maxPhyOffset"]) == int(w["dledgerCommittedPos"]) == k9b + 202, w   # DLedger kept the log
    loaded = w["queuesAfterLoad"]   # the cut: T9/0's fillPreBlank unit kept, K9a's and K9's units cut
    assert (int(loaded["T9/0"]["maxOffset"]), int(loaded["T9/0"]["maxPhysicOffset"])) == (20, BLANK_MAX), loaded
    # what the broker's reput did: the parsed unit at 20 (over K9a's, lost: the reput goes on past its record), K9's
    # dispatched again back at 40 (queue offset 2, the write position), K9b's (queue offset 3) at 60; with ext files
    # T9's ext units the walk's two, the parsed message's, K9's again and K9b's
    tags = (40 - 2**63, 60 - 2**63, 80 - 2**63) if ext else (0, 0, 0)
    assert first_units(src, "T9", 5) == [BLANK, (BLANK_MAX, len(msg), tags[0]), (k9, 201, tags[1]),
                                         (k9b, 202, tags[2]), (0, 0, 0)]
    t9 = w["queuesAfterDispatch"]["T9/0"]
    assert (int(t9["maxOffset"]), int(t9["maxPhysicOffset"])) == (80, k9b + 202), t9
    assert [u[:2] for u in first_units(src, "T8", 3)] == [(damaged, 201), (k8b, 202), (0, 0)]   # the reput's
    if ext:
        units = ext_units(src, "T9")
        assert len(units) == 5 and units[1] == units[3] != units[2], units
        assert units[2] == struct.pack(">hqqh", 20, 0, 1_700_000_000_001, 0), "the parsed message's ext unit"
    text = as_restart_matches_broker(src, tmp_path, sc, w, leave_out="", parsed=1, ext=ext)
    assert f"parses 1 message(s) ({BLANK_MAX} to {k9 - ENTRY_HEADER_SIZE})" in text and \
        f"sends it on to {k9 - ENTRY_HEADER_SIZE} " in text, text[-3000:]
    assert "T9/0 at 20" in text and f"ends its walk at {damaged - ENTRY_HEADER_SIZE} " in text, text[-3000:]
    return text


@pytest.mark.big_store
@NEEDS_2GIB
@pytest.mark.parametrize("ext", [False, True], ids=["plain", "ext"])
def test_crash_restart_whose_reput_parses_a_message_over_the_first_cut_unit_of_a_queue_left_with_fillpreblank_units_only_then_reaches_its_records_past_the_walk(  # noqa: E501
        tmp_path, ext):
    """The ``-t9-to-entry-some-past`` store: two T9 records cut (K9a, K9: queue offsets 1 and 2), the walk ending at
    the damaged T8 message after them; the reput set at 2147483647 parses a T9 message (queue offset 1) that ends
    where K9a's record ends, so it goes on at K9's entry and dispatches only K9's cut unit again, then the records
    past the walk's end.  The cut left T9/0 its ``fillPreBlank`` unit only (write position 20, max 2147483647); the
    5.5.1 broker appends the parsed unit at 20, over K9a's (lost), puts K9's back at 40 (its queue offset, the write
    position), then appends K9b's (queue offset 3) at 60, where the rebuild's own dispatch puts it.  ``rebuild
    --as-restart``: the broker's ``consumequeue/`` (with ext files ``consumequeue_ext/``) and ``index/`` byte for
    byte, and verify's units lost."""
    sc = t9_to_entry_some_past_scenario(LINE, ext)
    w, src = written(sc, tmp_path)
    check_t9_to_entry_some_past(w, src, tmp_path, sc, ext)

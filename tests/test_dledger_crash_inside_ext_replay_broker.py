"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside an
entry, parses a message for an ordinary queue with consume queue ext files (``enableConsumeQueueExt=true``) the walk
wrote, in a case only the replay of that queue (:mod:`store_format.dledger_inside_replay`) models
(:mod:`broker_dledger_inside_ext_replay_scenarios`): T6/0, left with no file by the cut, whose first cut unit lies
inside the parsed message, then its records past the walk's end, with or without its second cut unit dispatched again;
and T0/0 whose records past the walk's end the rebuild's own dispatch puts elsewhere than the broker
(-past-cut-two-beyond-ext; -past-cut-two-some-beyond-ext after a cut unit dispatched again) or into a file it creates
where the broker puts a later record's unit (-past-cut-two-over-wide-ext). Each unit the reput dispatches into the queue
puts its ext unit first (``ConsumeQueue.putMessagePositionInfoWrapper``, whatever ``putMessagePositionInfo`` then does
with the unit), and a unit appended holds that ext unit's address. Written by the published RocketMQ store through the
JVM harness in ``tests/broker/``: what the broker's restart wrote, ``rebuild --as-restart`` on the store as that restart
found it (consume queue and ext files byte for byte) and ``verify``'s units lost, counted from the broker's files. The
stores are written with the others of :mod:`broker_dledger_runs` (one pytest session)."""
from __future__ import annotations

import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_files import ext_appended_as_the_broker, ext_units
from broker_dledger_runs import (
    LINES,
    _inside_run,
    _loses_as_the_broker,
    _restart_as_the_broker,
    _verify_loses_as_the_broker,
    _verify_with_plan,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()

# the messages after B9's in the -to-entry-past stores: 300-byte records, each behind a 48-byte DLedger header
_TAIL, _ENTRY_HEADER = 300, 48
# ext files of 204 bytes (broker_dledger_inside_ext_replay_scenarios.EXT_REPLAY): 10 units of 20 bytes each
_EXT_FILE, _EXT_PER_FILE = 204, 10


def _units(src: Path, queue: str) -> dict[str, list[tuple[int, int, int]]]:
    """The broker's files of ``queue`` (``topic/queue id``) after its restart and each file's units."""
    folder = src / "expected" / "consumequeue" / queue
    return {f.name: [struct.unpack(">qiq", f.read_bytes()[i:i + 20]) for i in range(0, f.stat().st_size, 20)]
            for f in sorted(folder.iterdir())}


def _address(ordinal: int) -> int:
    """``ConsumeQueueExt.decorate`` of the queue's ``ordinal``-th ext unit (its real offset plus Long.MIN_VALUE)."""
    return ordinal // _EXT_PER_FILE * _EXT_FILE + ordinal % _EXT_PER_FILE * 20 - 2**63


@pytest.mark.parametrize("over", [False, True], ids=["some", "over"])
@pytest.mark.parametrize("zero", [False, True], ids=["", "zero"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_with_ext_files_whose_reput_goes_on_past_cut_units_of_a_queue_left_no_file(
        line, zero, over, tmp_path, monkeypatch):
    """-past-cut-two-some-emptied-ext: T6/0's two cut units (queue offsets 0 and 1, ext units 0 and 1 the walk put:
    the 5.5.1 cut leaves it no consume queue file, max -1, its ext file as the walk wrote it), the parsed T6/0 message
    ending where the first cut record ends, so the reput goes on at the second cut record's entry: the parsed unit's
    ext unit 2, its unit where its queue offset falls (1000: fillPreBlank units before it) holding that address, the
    second cut record's new ext unit 3, then the damaged message's and the last one's (4, 5), whose units the queue
    offset check drops; at queue offset 0 (``zero``) the second cut unit at 20, the records past the walk's end at 40
    and 60, each holding its ext unit's address.  ``over`` (-past-cut-two-over-emptied-ext): the parsed message ends
    where the second cut record ends, no cut unit dispatched again (no ext unit for it), the records past the walk's
    end ext units 3 and 4 (with ``zero`` their units at 20 and 40).  --as-restart writes the broker's consume queue
    and ext files byte for byte, and verify's units lost are the units the broker's queues lack."""
    from broker_dledger_inside_past_more_scenarios import PAST_OVER_CUT_END
    from broker_dledger_inside_scenarios import EMBED_PROCESS_OFFSET, TO_ENTRY_QUEUE_OFFSET

    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut-two-{'over' if over else 'some'}-emptied" \
        + ("-zero" if zero else "") + "-ext"
    reput = EMBED_PROCESS_OFFSET + 2 * _TAIL - 1
    second = PAST_OVER_CUT_END + _ENTRY_HEADER   # the second cut T6/0 record
    parsed_end = second + _TAIL if over else PAST_OVER_CUT_END
    # the parsed message at processOffset - 1: its TOTALSIZE field
    r, w, src = _inside_run(name, reput, struct.pack(">i", parsed_end - reput), damaged=True)
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    assert int(w["truncateDirtyLogicFilesAt"]) == EMBED_PROCESS_OFFSET + 2 * _TAIL, w["truncateDirtyLogicFilesAt"]
    end = int(w["maxPhyOffset"])
    damaged, last = end - _TAIL - _ENTRY_HEADER - _TAIL, end - _TAIL
    assert int(w["damagedRecord"]) == damaged == second + _TAIL + _ENTRY_HEADER, w["damagedRecord"]
    # what the broker wrote: T6/0's ext units, the walk's two, the parsed message's, the second cut record's again
    # (not over), the damaged one's and the last one's
    folder = src / "expected" / "consumequeue_ext" / "T6" / "0"
    cq_ext = [u for f in sorted(folder.iterdir()) for u in ext_units(f.read_bytes()) if len(u) == 20]
    walked, again = 2, 0 if over else 1
    assert len(cq_ext) == walked + 1 + again + 2, len(cq_ext)
    # T6/0's consume queue file from the parsed unit on (queue offset 1000 with files of 11 units: the next file
    # getLastMappedFile creates for the second cut unit, which the queue offset check then drops, zeros)
    at = 0 if zero else TO_ENTRY_QUEUE_OFFSET * 20
    opened = (at - at % size, *((at + 20,) if (at + 20) % size == 0 else ()))
    files = _units(src, "T6/0")
    assert list(files) == [f"{f:020d}" for f in opened], list(files)
    units, *empty = files.values()
    assert not any(any(u) for f in empty for u in f), empty
    blank = (0, 2**31 - 1, 0)
    parsed = (reput, parsed_end - reput, _address(walked))
    appended = ((damaged, last) if over else (second, damaged, last)) if zero else ()
    rest = [(o, _TAIL, _address(walked + 1 + k)) for k, o in enumerate(appended)]
    k = at % size // 20
    assert units[:k] == [blank] * k and units[k:k + 1 + len(rest)] == [parsed, *rest], units
    assert not any(any(u) for u in units[k + 1 + len(rest):]), units
    _restart_as_the_broker(src, name, line, tmp_path, ext=True)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / "plan"), src, line)
    _loses_as_the_broker(p, r, src, (reput,))   # neither fillPreBlank nor the parsed unit held
    ext_appended_as_the_broker(p, w, src)
    (q,) = [q for q in crash.cut.inside_placed.whole if (q.topic, q.queue_id) == ("T6", 0)]
    assert (q.cut_from, q.opened, q.put_back) == (0, opened, appended), q
    assert [u[3] for u in q.units] == [parsed[2], *(u[2] for u in rest)], q.units


def _t0(w: dict, src: Path) -> tuple[dict[str, list[tuple[int, int, int]]], list[bytes]]:
    """The broker's T0/0 consume queue after the restart (each file's units) and its ext units, in order."""
    folder = src / "expected" / "consumequeue_ext" / "T0" / "0"
    return _units(src, "T0/0"), [u for f in sorted(folder.iterdir()) for u in ext_units(f.read_bytes())
                                  if len(u) == 20]


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_with_ext_files_whose_broker_creates_for_a_later_record_the_file_the_rebuild_creates(
        line, tmp_path):
    """-to-entry-past-cut-two-over-wide-ext: -past-cut-two-over-wide (two T0/0 units cut at 480, 500; the parsed T0/0
    message ending where the second cut record ends, the reput going on at the damaged message's entry, dispatching
    no cut unit again; consume queue files of 13 units) with ext files: after the walk's seven T0/0 ext units (the
    cut ones' too), the parsed message's (7), the damaged one's (8) and the last one's (9), the units at 480, 500
    (file 260's last place) and 520 (the file getLastMappedFile creates, where the rebuild's own dispatch put the
    damaged message's unit) holding their addresses.  --as-restart writes the broker's consume queue and ext files
    byte for byte, and verify's units lost are the units the broker's queues lack."""
    from broker_dledger_inside_past_far_scenarios import PAST_WIDE_CQ_SIZE
    from broker_dledger_inside_past_more_scenarios import PAST_OVER_CUT_END
    from broker_dledger_inside_scenarios import EMBED_PROCESS_OFFSET
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut-two-over-wide-ext"
    reput, cut_end = EMBED_PROCESS_OFFSET + 2 * _TAIL - 1, PAST_OVER_CUT_END + _ENTRY_HEADER + _TAIL
    r, w, src = _inside_run(name, reput, struct.pack(">i", cut_end - reput), damaged=True)
    end = int(w["maxPhyOffset"])
    damaged, last = end - _TAIL - _ENTRY_HEADER - _TAIL, end - _TAIL
    assert int(w["damagedRecord"]) == damaged == cut_end + _ENTRY_HEADER, w["damagedRecord"]
    units, cq_ext = _t0(w, src)
    walked = 7
    assert len(cq_ext) == walked + 3, len(cq_ext)
    assert list(units)[-2:] == [f"{260:020d}", f"{520:020d}"], list(units)
    assert units[f"{260:020d}"][-2:] == [(reput, cut_end - reput, _address(walked)),
                                         (damaged, _TAIL, _address(walked + 1))], units
    assert units[f"{520:020d}"] == [(last, _TAIL, _address(walked + 2))] + [(0, 0, 0)] * (PAST_WIDE_CQ_SIZE // 20 - 1)
    assert int(w["queuesAfterDispatch"]["T0/0"]["maxOffset"]) == 540, w["queuesAfterDispatch"]["T0/0"]
    _restart_as_the_broker(src, name, line, tmp_path, ext=True)
    ext_appended_as_the_broker(_verify_loses_as_the_broker(r, src, line, tmp_path, (reput,)), w, src)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_with_ext_files_whose_rebuild_drops_then_shifts_records_past_the_walk(line, tmp_path):
    """-to-entry-past-cut-two-beyond-ext: -past-cut-two-beyond (two T0/0 units cut at 480, 500, the damaged message
    for T0/1, two T0/0 messages after it; the parsed T0/0 message ending where the damaged record ends, past the
    walk's end, so the reput dispatches neither cut unit again nor the damaged message) with ext files: after the
    walk's seven T0/0 ext units, the parsed message's (7) and the next two's (8, 9), the units at 480, 500 and 520
    holding their addresses (the rebuild's own dispatch drops the first of those two, below its write position).
    --as-restart writes the broker's consume queue and ext files byte for byte, and verify's units lost are the
    units the broker's queues lack."""
    from broker_dledger_inside_gate_scenarios import TWO_BEYOND_END
    from broker_dledger_inside_scenarios import EMBED_PROCESS_OFFSET
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut-two-beyond-ext"
    reput = EMBED_PROCESS_OFFSET + 2 * _TAIL - 1
    r, w, src = _inside_run(name, reput, struct.pack(">i", TWO_BEYOND_END - reput), damaged=True)
    end = int(w["maxPhyOffset"])
    first, second = end - 2 * _TAIL - _ENTRY_HEADER, end - _TAIL
    assert first - _ENTRY_HEADER == TWO_BEYOND_END == int(w["damagedRecord"]) + _TAIL, (first, w["damagedRecord"])
    units, cq_ext = _t0(w, src)
    walked = 7
    assert len(cq_ext) == walked + 3, len(cq_ext)
    assert units[f"{440:020d}"][2:6] == [(reput, TWO_BEYOND_END - reput, _address(walked)),
                                         (first, _TAIL, _address(walked + 1)), (second, _TAIL, _address(walked + 2)),
                                         (0, 0, 0)], units
    assert int(w["queuesAfterDispatch"]["T0/0"]["maxOffset"]) == 540, w["queuesAfterDispatch"]["T0/0"]
    _restart_as_the_broker(src, name, line, tmp_path, ext=True)
    ext_appended_as_the_broker(_verify_loses_as_the_broker(r, src, line, tmp_path, (reput,)), w, src)


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_with_ext_files_whose_reput_drops_a_cut_unit_then_appends_one_the_rebuild_drops(line, tmp_path):
    """-to-entry-past-cut-two-some-beyond-ext: two T0/0 units cut (queue offsets 24, 25 at 480, 500), the parsed T0/0
    message (queue offset 1000) ending where the first cut record ends, its PHYSICALOFFSET field putting its end 24
    bytes past the second cut record's end, so the reput goes on at the second cut record's entry, dispatching that
    cut unit again, then the damaged message and the last one (queue offsets 26, 27).  With ext files: after the
    walk's seven T0/0 ext units, the parsed message's (7) and its unit at 480; the second cut record's new ext unit
    (8), its unit dropped (it ends below the max the parsed unit set); the damaged message's (9), its unit at 500
    (where the rebuild's own dispatch, which appended the parsed unit after every walk unit at 520, drops it), the
    last one's (10, the first of the next ext file) at 520, zeros after.  --as-restart writes the broker's consume
    queue and ext files byte for byte, and verify's units lost are the units the broker's queues lack."""
    from broker_dledger_inside_ext_replay_scenarios import SOME_BEYOND_PAST
    from broker_dledger_inside_past_more_scenarios import PAST_OVER_CUT_END
    from broker_dledger_inside_scenarios import EMBED_PROCESS_OFFSET
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-cut-two-some-beyond-ext"
    reput = EMBED_PROCESS_OFFSET + 2 * _TAIL - 1
    size = PAST_OVER_CUT_END - reput
    cut_end = PAST_OVER_CUT_END + _ENTRY_HEADER + _TAIL   # the second cut T0/0 record's end
    field = cut_end + SOME_BEYOND_PAST - size   # the parsed message's PHYSICALOFFSET field
    r, w, src = _inside_run(name, reput, struct.pack(">i", size), damaged=True)
    end = int(w["maxPhyOffset"])
    damaged, last = end - _TAIL - _ENTRY_HEADER - _TAIL, end - _TAIL
    assert int(w["damagedRecord"]) == damaged == cut_end + _ENTRY_HEADER, w["damagedRecord"]
    units, cq_ext = _t0(w, src)
    walked = 7
    assert len(cq_ext) == walked + 4, len(cq_ext)
    assert units[f"{440:020d}"][2:6] == [(field, size, _address(walked)), (damaged, _TAIL, _address(walked + 2)),
                                         (last, _TAIL, _address(walked + 3)), (0, 0, 0)], units
    _restart_as_the_broker(src, name, line, tmp_path, ext=True)
    ext_appended_as_the_broker(_verify_loses_as_the_broker(r, src, line, tmp_path, (field,)), w, src)

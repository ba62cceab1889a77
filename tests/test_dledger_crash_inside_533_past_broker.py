"""DLedger crash restarts on the 5.3.3 line (an abort file, ``recheckReputOffsetFromCq=true``, the queues kept on
disk) whose start's reput, set at ``processOffset`` (the max the 5.3.3 cut keeps for a queue it left with no file),
parses a message there for such a queue, T6/0, and then reaches that queue's records past the walk's end (a walk
ended by a damaged message): the stores of :mod:`broker_dledger_inside_533_past_scenarios`, the 5.3.3 counterparts
of :mod:`test_dledger_crash_inside_replay_broker`'s.  Written by the published RocketMQ 5.3.3 store through the JVM
harness in ``tests/broker/`` (``DLEDGER_LINES=5.3.3``, or ``4.9.8,5.3.3,5.5.1``): what the broker's restart wrote,
``verify``'s plan (the replayed queue's files, byte for byte) and units lost on the store as that restart found it
(its queues kept on disk, which the 5.3.3 cut needs: ``--as-restart`` writes what a restart makes of a store whose
queue folders are deleted, so ``verify`` is the prediction here, as in :mod:`test_dledger_crash_inside_533_broker`);
or, where the reput leaves T6/0's last file empty, the 5.3.3 store's start failing and ``verify`` refusing."""
from __future__ import annotations

import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_files import cq_unit
from broker_dledger_runs import (
    _RUNS,
    LINES,
    _queued,
    _units_below_write,
    _verify,
    _verify_with_plan,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()

_LINES_533 = bh.params_or_skip([ln for ln in LINES if ln.startswith("5.3")],
                               "5.3.3 only: DLEDGER_LINES=5.3.3 (or 4.9.8,5.3.3,5.5.1)")

# the messages after T9's in these stores: 300-byte records, each behind a 48-byte DLedger header
_TAIL, _ENTRY_HEADER = 300, 48


def _units(src: Path, queue: str) -> dict[str, list[tuple[int, int, int]]]:
    """The broker's files of ``queue`` (``topic/queue id``) after its restart and each file's units."""
    folder = src / "expected" / "consumequeue" / queue
    return {f.name: [struct.unpack(">qiq", f.read_bytes()[i:i + 20]) for i in range(0, f.stat().st_size, 20)]
            for f in sorted(folder.iterdir())}


def _store(name: str) -> tuple[dict, Path, int, int, int, int]:
    """The store ``name`` as the 5.3.3 broker wrote it, asserted to be the case: processOffset where the reput is set,
    the damaged record, T6/0 on disk before the walk with both cut records' units first; the run, its folder, the
    first and second cut records, the damaged and the last record."""
    from broker_dledger_inside_533_past_scenarios import PAST_533_REPUT
    from broker_dledger_inside_past_more_scenarios import PAST_OVER_CUT_END
    r = _RUNS[name]
    w, src = r["written"], Path(r["scenario"]["dir"])
    assert int(w["truncateDirtyLogicFilesAt"]) == PAST_533_REPUT, w["truncateDirtyLogicFilesAt"]
    first, second = PAST_OVER_CUT_END - _TAIL, PAST_OVER_CUT_END + _ENTRY_HEADER   # the two cut T6/0 records
    damaged, last = second + _TAIL + _ENTRY_HEADER, second + 2 * (_TAIL + _ENTRY_HEADER)
    assert int(w["damagedRecord"]) == damaged, w["damagedRecord"]
    assert int(w.get("maxPhyOffset", last + _TAIL)) == last + _TAIL, w["maxPhyOffset"]   # (none: the start failed)
    # T6/0 on disk before the walk, its first unit at or past processOffset: the 5.3.3 cut deletes its file and keeps
    # its max at processOffset (no correctMinOffset reset), the largest, where doRecheckReputOffsetFromCq sets the
    # reput
    before = (src / "before" / "consumequeue" / "T6" / "0" / f"{0:020d}").read_bytes()
    assert [cq_unit(before, k)[:2] for k in (0, 20, 40, 60)] == [(o, _TAIL) for o in (first, second, damaged, last)]
    loaded = w["queuesAfterLoad"]["T6/0"]
    assert loaded["files"] == [] and int(loaded["maxPhysicOffset"]) == PAST_533_REPUT, loaded
    return r, src, first, second, damaged, last


def _replayed_files(q: object, src: Path, size: int) -> dict[str, bytes]:
    """The files of the replayed queue ``q`` (``QueueFiles`` of a queue the cut left with no file): those
    ``getLastMappedFile`` created, ``fillPreBlank`` units, the units appended, and the cut units' bytes read where
    the walk's queue holds them (T6/0's units on disk before the walk: the walk's queue offsets)."""
    walk = (src / "before" / "consumequeue" / "T6" / "0" / f"{0:020d}").read_bytes()
    files = {f: bytearray(size) for f in q.opened}
    if q.blank_until >= 0:
        f = q.blank_until - q.blank_until % size
        files[f][:q.blank_until - f] = struct.pack(">qiq", 0, 2**31 - 1, 0) * ((q.blank_until - f) // 20)
    for pos, offset, n, tags in q.units:
        files[pos - pos % size][pos % size:pos % size + 20] = struct.pack(">qiq", offset, n, tags)
    for pos, source in q.copies:
        files[pos - pos % size][pos % size:pos % size + 20] = walk[source:source + 20]
    return {f"{f:020d}": bytes(d) for f, d in sorted(files.items())}


@pytest.mark.parametrize("over", [False, True], ids=["some", "over"])
@pytest.mark.parametrize("line", _LINES_533)
def test_verify_predicts_a_crash_restart_whose_reput_reaches_records_past_the_walk_of_a_queue_the_533_cut_left_no_file(
        line, over, tmp_path, monkeypatch):
    """-past-cut-two-some-emptied-zero on 5.3.3: T6/0's two walk units (queue offsets 0 and 1) at or past
    processOffset, so the 5.3.3 cut deletes its file and keeps its max at processOffset, where the reput is set (the
    largest max); the parsed T6/0 message there (queue offset 0) ends where the first cut record ends, past that
    max: getLastMappedFile on no file creates file 0 and the unit goes at 0; the reput goes on at the second cut
    record's entry and appends its unit at 20 (queue offset 1, the write position), then the damaged record's and the
    last one's at 40 and 60 (queue offsets 2 and 3); the first cut unit, inside the parsed message, is lost.  ``over``
    (-past-cut-two-over-emptied-zero): the parsed message ends where the second cut record ends, no cut unit
    dispatched again, the records past the walk's end at 20 and 40.  The same as the 5.5.1 broker (max -1 there):
    every unit the reput dispatches ends past processOffset.  verify's plan replays T6/0 into the broker's files byte
    for byte, and its units lost are the units the broker's queues lack."""
    from broker_dledger_inside_533_past_scenarios import PAST_533_REPUT

    name = f"{line}-dledger-abort-emptied-kept-embedded-to-entry-past-cut-two-{'over' if over else 'some'}-emptied-zero"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    r, src, first, second, damaged, last = _store(name)
    w = r["written"]
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    reput = PAST_533_REPUT
    files = _units(src, "T6/0")
    assert list(files) == [f"{0:020d}"], list(files)
    (units,) = files.values()
    appended = (damaged, last) if over else (second, damaged, last)
    parsed = (reput, (second if over else first) + _TAIL - reput, 0)
    assert units[:1 + len(appended)] == [parsed, *((o, _TAIL, 0) for o in appended)], units
    assert not any(any(u) for u in units[1 + len(appended):]), units
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / "plan"), src, line)
    (q,) = [q for q in crash.cut.inside_placed.whole if (q.topic, q.queue_id) == ("T6", 0)]
    assert (q.cut_from, q.opened, q.put_back, q.lost) == (0, (0,), appended, () if over else (first,)), q
    broker = {f.name: f.read_bytes() for f in (src / "expected" / "consumequeue" / "T6" / "0").iterdir()}
    assert _replayed_files(q, src, size) == broker
    held = _units_below_write(w, src, (reput,))   # not the parsed unit
    assert p["units_lost"] == _queued(r["scenario"]) - held > 0, (held, p["units_lost"], p["notes"])
    (t6,) = [x for x in p["queues"] if x["queue"] == "T6/0"]
    assert t6["units_lost"] == (2 if over else 1), t6


@pytest.mark.parametrize("over", [False, True], ids=["some", "over"])
@pytest.mark.parametrize("line", _LINES_533)
def test_verify_refuses_a_crash_restart_whose_reput_leaves_an_empty_last_file_the_533_start_fails_on(
        line, over, tmp_path):
    """-past-cut-two-some-emptied (and -over-emptied) on 5.3.3: the parsed T6/0 unit (queue offset 1000, files of 11
    units) goes at 20000, filling file 19800 after fillPreBlank units; the next unit the reput dispatches (the second
    cut record's, or the damaged record's) ends past the max, so getLastMappedFile creates file 20020, and the queue
    offset check drops it and every later one: file 20020 stays empty.  After the reput doRecheckReputOffsetFromCq
    calls recoverTopicQueueTable, whose 5.3.3 ConsumeQueue.correctMinOffset selects the 20 bytes before that empty
    last file's write position (minLogicOffset 20000 below its max offset 20020): IllegalArgumentException, the
    store's start fails (5.5.1, which guards that read, starts: test_dledger_crash_inside_replay_broker).  verify
    refuses it in one line (no prediction)."""
    from broker_dledger_inside_533_past_scenarios import PAST_533_REPUT
    from broker_dledger_inside_scenarios import TO_ENTRY_QUEUE_OFFSET

    name = f"{line}-dledger-abort-emptied-kept-embedded-to-entry-past-cut-two-{'over' if over else 'some'}-emptied"
    r = _RUNS[name]
    w, src = r["written"], Path(r["scenario"]["dir"])
    assert not w.get("ok") and "IllegalArgumentException: newPosition < 0: (-20 < 0)" in w.get("error", ""), w
    r, src, first, second, _damaged, _last = _store(name)
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    at = TO_ENTRY_QUEUE_OFFSET * 20
    folder = src / "store" / "consumequeue" / "T6" / "0"   # as the failed start left it
    assert sorted(f.name for f in folder.iterdir()) == [f"{at - at % size:020d}", f"{at + 20:020d}"]
    held = (folder / f"{at - at % size:020d}").read_bytes()
    blank = struct.pack(">qiq", 0, 2**31 - 1, 0)
    end = second + _TAIL if over else first + _TAIL
    assert held == blank * (at % size // 20) + struct.pack(">qiq", PAST_533_REPUT, end - PAST_533_REPUT, 0), held.hex()
    assert (at + 20) % size == 0 and (folder / f"{at + 20:020d}").read_bytes() == bytes(size)
    # the failed start left no broker.conf: the -zero store's (the same settings; DLedger's peer as the harness ran it)
    zero = _RUNS[f"{name}-zero"]
    assert zero["scenario"]["config"] == r["scenario"]["config"]
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "broker.conf").write_bytes((Path(zero["scenario"]["dir"]) / "broker.conf").read_bytes())
    code, report = _verify(bh.copy_store(src / "before", tmp_path / "verify"), conf, line)
    assert report["restart"] is None \
        and "the reput leaves empty: then the 5.3.3 store's start fails" in report["restart_note"], report
    assert "\n" not in report["restart_note"]

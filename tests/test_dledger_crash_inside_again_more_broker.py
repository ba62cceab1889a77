"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``) whose start's reput, set inside
an entry, parses a well-formed message for an ordinary consume queue the walk wrote and then goes on at an entry's
start past that queue's first cut unit (inside the parsed message), dispatching only its last one again, with no
record past the walk's end after it: the -to-entry-some stores of :mod:`test_dledger_crash_inside_again_broker` with
``enableConsumeQueueExt=true`` (``-ext``), with the queues kept (``-kept``: T0/0 on disk before the walk), and for a
queue the cut leaves no file of (``-emptied``).  Written by the published RocketMQ store through the JVM harness in
``tests/broker/``: what the broker's restart wrote, ``rebuild --as-restart`` on the store as that restart found it
(byte for byte; ``-kept``: ``verify``'s plan) and ``verify``'s units lost.  The scenarios:
:mod:`broker_dledger_inside_again_scenarios`.
"""
from __future__ import annotations

import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_files import cq_unit, ext_units, last_data_bytes
from broker_dledger_runs import (
    LINES,
    _queued,
    _restart_as_the_broker,
    _units_below_write,
    _verify_loses_as_the_broker,
    _verify_with_plan,
    _written,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()

_EXT_FILE_UNITS = 10   # mappedFileSizeConsumeQueueExt=204: ten 20-byte units a file (the 4 bytes left: its end)


def _ext_address(k: int) -> int:
    """The decorated address (a unit's tags code, ``ConsumeQueueExt.decorate``) of a queue's ``k``-th ext unit."""
    return -2**63 + k // _EXT_FILE_UNITS * 204 + k % _EXT_FILE_UNITS * 20


def _ext_file_units(src: Path, queue: str) -> list[bytes]:
    """The broker's ext units of ``queue`` (``T/q``) after the restart, over its ext files in order."""
    folder = src / "expected" / "consumequeue_ext" / queue
    return [u for f in sorted(folder.iterdir()) for u in ext_units(f.read_bytes())]


def _some_store(name: str, queue_offset: int) -> tuple[dict, Path, int, int, int]:
    """The -to-entry-some store ``name`` as the broker wrote it, asserted to be the case: the reput set at
    processOffset - 1, where the parsed message's head (queue offset ``queue_offset``) lies, that message ending
    where the last record's entry starts, the first cut record inside it and the last one past it; the run, its
    folder, the reput, the parsed message's size and the last record's offset."""
    from broker_dledger_inside_again_scenarios import SOME_T0_SIZE, SOME_T0_TOPIC_AT, embedded_to_entry_some_messages
    r, w, src = _written(name)
    reput, head, size = embedded_to_entry_some_messages(queue_offset)
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    assert last_data_bytes(src, reput, len(head)) == head, "the message at processOffset - 1"
    first = last_data_bytes(src, reput + size - SOME_T0_SIZE, SOME_T0_SIZE)   # inside the parsed message
    assert struct.unpack(">i", first[:4])[0] == SOME_T0_SIZE and first[SOME_T0_TOPIC_AT] == 2, first
    last_at = reput + size + 48   # the last record, after its entry's header
    last = last_data_bytes(src, last_at, SOME_T0_SIZE)
    assert struct.unpack(">i", last[:4])[0] == SOME_T0_SIZE and last[SOME_T0_TOPIC_AT:SOME_T0_TOPIC_AT + 3] == \
        first[SOME_T0_TOPIC_AT:SOME_T0_TOPIC_AT + 3], last
    assert struct.unpack(">q", last[20:28])[0] == struct.unpack(">q", first[20:28])[0] + 1
    assert int(w["maxPhyOffset"]) == last_at + SOME_T0_SIZE, w["maxPhyOffset"]
    return r, src, reput, size, last_at


@pytest.mark.parametrize("moved", [False, True], ids=["some", "moved"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_with_ext_files_after_a_crash_whose_reput_puts_back_only_the_last_cut_unit_of_a_queue(
        line, moved, tmp_path):
    """-to-entry-some-ext (and -moved-ext), enableConsumeQueueExt with ext files of 10 units: the cut leaves T0/0's
    ext file as the walk wrote it (ConsumeQueueExt.truncateByMaxAddress is reached only once every file of the
    queue went, with the address 1: nothing cut), seven ext units (five kept T0/0 records, the two cut ones);
    putMessagePositionInfoWrapper puts the parsed message's ext unit (ordinal 7) before its unit is appended at the
    write position K * 20 (-moved: dropped, queue offset 1 below it), and the reput, going on at the last entry,
    puts the last record's ext unit again (ordinal 8, the walk's bytes) and its unit at (K + 1) * 20, where it was
    (-moved: at K * 20, the walk's unit staying at (K + 1) * 20), each holding its ext unit's address; the first
    cut record, inside the parsed message, gets no ext unit again.  --as-restart writes the broker's files byte for
    byte (consumequeue_ext/ too), verify predicts the units lost."""
    from broker_dledger_inside_again_scenarios import (
        SOME_MOVED_QUEUE_OFFSET,
        SOME_T0_SIZE,
        TO_ENTRY_QUEUE_OFFSET,
    )
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-some{'-moved' if moved else ''}-ext"
    r, src, reput, size, last_at = _some_store(name, SOME_MOVED_QUEUE_OFFSET if moved else TO_ENTRY_QUEUE_OFFSET)
    w = r["written"]
    loaded, state = w["queuesAfterLoad"]["T0/0"], w["queuesAfterDispatch"]["T0/0"]
    walked = 7
    assert int(loaded["maxOffset"]) == 480 and int(loaded["extMaxOffset"]) == walked * 20, loaded
    assert int(state["extMaxOffset"]) == (walked + 2) * 20, state
    assert int(state["maxOffset"]) == (500 if moved else 520), state
    held = (src / "expected" / "consumequeue" / "T0" / "0" / f"{440:020d}").read_bytes()
    parsed = (reput, size, _ext_address(walked))
    again = (last_at, SOME_T0_SIZE, _ext_address(walked + 1))
    walk_last = (last_at, SOME_T0_SIZE, _ext_address(walked - 1))   # the walk's unit of the last record
    assert [cq_unit(held, k) for k in (40, 60)] == ([again, walk_last] if moved else [parsed, again]), held.hex()
    assert cq_unit(held, 20)[:2] != (0, 0) and sum(cq_unit(held, 20)[:2]) < reput + 1   # below processOffset
    ext = _ext_file_units(src, "T0/0")
    parsed_stored = struct.unpack(">q", last_data_bytes(src, reput, 64)[56:64])[0]
    assert len(ext) == walked + 2 and ext[walked + 1] == ext[walked - 1], ext
    assert ext[walked] == struct.pack(">hqqh", 20, 0, parsed_stored, 0), ext[walked]
    _restart_as_the_broker(src, name, line, tmp_path, ext=True)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_puts_back_only_the_last_cut_unit_of_a_kept_queue(
        line, tmp_path, monkeypatch):
    """-to-entry-some-kept: the -to-entry-some store with the queues kept (T0/0 on disk before the walk, its two
    cut units at 480 and 500 of file 440).  ConsumeQueue.truncateDirtyLogicFiles leaves its files at write position
    480; the parsed unit goes there, and the reput, going on at the last entry, puts the last cut unit back at 500
    (its queue offset the write position); the first, inside the parsed message, is not dispatched again (lost).
    verify on the store as that restart found it places them there (the first cut unit counted dropped) and its
    units lost are those the broker's queues lack."""
    from broker_dledger_inside_again_scenarios import SOME_T0_SIZE, TO_ENTRY_QUEUE_OFFSET

    from store_format.dledger_inside_units import InsideUnit
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-some-kept"
    r, src, reput, size, last_at = _some_store(name, TO_ENTRY_QUEUE_OFFSET)
    w = r["written"]
    first_at = reput + size - SOME_T0_SIZE
    before = (src / "before" / "consumequeue" / "T0" / "0" / f"{440:020d}").read_bytes()
    after = (src / "expected" / "consumequeue" / "T0" / "0" / f"{440:020d}").read_bytes()
    assert [cq_unit(before, k)[:2] for k in (40, 60)] == [(first_at, SOME_T0_SIZE), (last_at, SOME_T0_SIZE)]
    assert [cq_unit(after, k)[:2] for k in (40, 60)] == [(reput, size), (last_at, SOME_T0_SIZE)], after.hex()
    assert after[:40] == before[:40] and after[80:] == before[80:]
    assert int(w["queuesAfterLoad"]["T0/0"]["maxPhysicOffset"]) < reput + 1 < last_at   # before the walk
    assert int(w["queuesAfterDispatch"]["T0/0"]["maxOffset"]) == 520, w["queuesAfterDispatch"]["T0/0"]
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    (q,) = [w for w in placed.whole if (w.topic, w.queue_id) == ("T0", 0)]   # replayed whole
    # the first cut unit dispatched again dropped (the parsed unit took its position), the other back where it was
    assert (placed.units, placed.opened, q.lost, q.copies) == (
        (InsideUnit("T0", 0, 480, reput, size, 0),), (), (first_at,), ((500, 500),)), placed
    held = _units_below_write(w, src, (reput,))   # neither fillPreBlank nor the parsed unit
    assert p["units_lost"] == _queued(r["scenario"]) - held > 0, (held, p["units_lost"], p["notes"])


@pytest.mark.parametrize("ext", [False, True], ids=["plain", "ext"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_reput_puts_back_only_the_last_cut_unit_of_a_queue_left_no_file(
        line, ext, tmp_path):
    """-to-entry-some-emptied (and -ext): the two cut messages for T8/0, a topic of its own (queue offsets 0 and 1),
    the parsed message for it too (queue offset 0): the 5.5.1 cut leaves T8/0 no file (max -1), so
    getLastMappedFile creates file 0 for the parsed unit (queue offset 0: no fillPreBlank unit), appended at 0; the
    reput, going on at the last entry, appends the last cut unit at 20; the first, inside the parsed message, is
    not dispatched again (lost).  -ext: the cut leaves T8/0's two ext units; the parsed message's ext unit follows
    them, then the last record's again (the walk's bytes), the units holding their addresses (the first cut
    record gets none again).  --as-restart writes the broker's files byte for byte, verify predicts the units
    lost."""
    from broker_dledger_inside_again_scenarios import (
        SOME_EMPTIED_QUEUE_OFFSET,
        SOME_EMPTIED_TOPIC,
        SOME_T0_SIZE,
        SOME_T0_TOPIC_AT,
    )
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-some-emptied{'-ext' if ext else ''}"
    r, src, reput, size, last_at = _some_store(name, SOME_EMPTIED_QUEUE_OFFSET)
    w = r["written"]
    queue = f"{SOME_EMPTIED_TOPIC}/0"
    assert last_data_bytes(src, last_at + SOME_T0_TOPIC_AT, 3) == b"\x02" + SOME_EMPTIED_TOPIC.encode()
    loaded, state = w["queuesAfterLoad"][queue], w["queuesAfterDispatch"][queue]
    assert loaded["files"] == [] and int(loaded["maxPhysicOffset"]) == -1, loaded
    assert state["files"] == [f"{0:020d}"] and int(state["maxOffset"]) == 40, state
    held = (src / "expected" / "consumequeue" / SOME_EMPTIED_TOPIC / "0" / state["files"][0]).read_bytes()
    tags = (_ext_address(2), _ext_address(3)) if ext else (0, 0)
    assert [cq_unit(held, k) for k in (0, 20)] == [(reput, size, tags[0]), (last_at, SOME_T0_SIZE, tags[1])], \
        held.hex()
    assert held[40:] == bytes(len(held) - 40)
    if ext:
        assert loaded["extFiles"] == [f"{0:020d}"] and int(loaded["extMaxOffset"]) == 40, loaded
        assert int(state["extMaxOffset"]) == 80, state
        units = _ext_file_units(src, queue)
        parsed_stored = struct.unpack(">q", last_data_bytes(src, reput, 64)[56:64])[0]
        assert len(units) == 4 and units[3] == units[1], units
        assert units[2] == struct.pack(">hqqh", 20, 0, parsed_stored, 0), units[2]
    _restart_as_the_broker(src, name, line, tmp_path, ext=ext)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))

"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``, the queues kept: ``keepQueues``)
whose start's reput, set inside an entry, parses a well-formed message there for a queue on disk before the walk that
the cut leaves a file of, written by the published RocketMQ store through the JVM harness in ``tests/broker/``: a
queue with none of its units below processOffset in the walk's last data file (``-own-held-earlier``): what the broker
wrote, and ``verify``'s prediction on the store as its restart found it (units lost, where its plan puts the parsed
unit), the walk starting at the last data file or at the first (``-walked``: the earlier unit is the walk's); and a
queue whose files on disk hold its units a unit behind its records' queue offsets (``-own-held-shifted``, a file
planted before the restart: the cut leaves them elsewhere than the walk's units end), also with the reput going on
after the parsed message (``-to-entry-shifted``: the cut unit it dispatches again goes where the rule puts it from
the files' state, neither where the file had it nor where its queue offset says).

The modelled case this one grows from (a unit below processOffset in the walk's last data file, ``-own-held``) is in
:mod:`test_dledger_crash_inside_queues_broker`; the broker writes every store once a pytest session
(:mod:`broker_dledger_runs`).
"""
from __future__ import annotations

import broker_harness as bh
import pytest
from broker_dledger_files import cq_unit
from broker_dledger_runs import LINES, _queued, _units_below_write, _verify_with_plan, _written

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


@pytest.mark.parametrize("suffix", ["", "-walked"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_message_for_a_kept_queue_with_no_unit_in_the_walk(
        line, suffix, tmp_path, monkeypatch):
    """The -own-held store with T8/0's first message in the first data file instead (before the walk's start: the
    walk writes T8/0 only the last message's unit, past processOffset): the cut leaves T8/0, on disk before the
    walk, its file with the earlier unit (write position 20, max that unit's end, which no unit of the walk gives)
    and takes the last one; the T8/0 message where the reput is set (processOffset - 1, queue offset 13) ends past
    that max and its queue offset lies past the write position, so the broker appends it at 20, over the cut unit;
    the 'x' bytes after it send the reput past the rest. verify on the store as that restart found it predicts the
    units lost, and its plan puts the parsed unit where the broker did.  ``-walked``: the walk starts at the first
    data file (``messageIndexSafe``), so that it holds T8/0's earlier unit, below processOffset: the same queue."""
    from broker_dledger_2gib import embedded_message
    from broker_dledger_inside_scenarios import EMBED_OWN_QUEUE_OFFSET, EMBED_PROCESS_OFFSET, TO_ENTRY_TAIL_BODY

    from store_format.dledger_inside_units import InsideUnit
    from store_format.layout import CQ_UNIT_SIZE
    name = f"{line}-dledger-abort-emptied-batch-embedded-own-held-earlier{suffix}"
    r, w, src = _written(name)
    reput = EMBED_PROCESS_OFFSET + 88 + TO_ENTRY_TAIL_BODY + 3 + 2 + 46 - 1
    msg = embedded_message(reput, topic=b"T8", queue_offset=EMBED_OWN_QUEUE_OFFSET)
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2, data
    with data[-1].open("rb") as f:
        f.seek(reput - int(data[-1].name))
        assert f.read(len(msg) + 8) == msg + b"x" * 8, "the T8 message at processOffset - 1, 'x' bytes after it"
    # T8/0 on disk before the restart: two units, the first in the first data file, the second (the last
    # message's) past processOffset
    (held_file,) = sorted((src / "before" / "consumequeue" / "T8" / "0").iterdir())
    before = held_file.read_bytes()
    first, cut = cq_unit(before, 0), cq_unit(before, CQ_UNIT_SIZE)
    assert first[0] + first[1] <= int(data[-1].name) and reput + 1 <= cut[0], (first, cut)
    assert before[2 * CQ_UNIT_SIZE:] == bytes(len(before) - 2 * CQ_UNIT_SIZE), "T8/0 holds two units"
    assert w["queuesAfterLoad"]["T8/0"]["files"] == [held_file.name], w["queuesAfterLoad"].get("T8/0")
    state = w["queuesAfterDispatch"]["T8/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 2 * CQ_UNIT_SIZE, state
    held = (src / "expected" / "consumequeue" / "T8" / "0" / held_file.name).read_bytes()
    assert cq_unit(held, 0) == first and cq_unit(held, CQ_UNIT_SIZE) == (reput, len(msg), 0), held[:60].hex()
    assert held[2 * CQ_UNIT_SIZE:] == bytes(len(held) - 2 * CQ_UNIT_SIZE), held.hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert crash.start_offset == (0 if suffix else int(data[-1].name)), crash.start_offset
    placed = crash.cut.inside_placed
    assert (placed.units, placed.opened, placed.blank_until) == (
        (InsideUnit("T8", 0, CQ_UNIT_SIZE, reput, len(msg), 0),), (), ()), placed
    held_units = _units_below_write(w, src, (reput,))   # neither fillPreBlank nor the parsed one
    assert p["units_lost"] == _queued(r["scenario"]) - held_units > 0, (held_units, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_message_for_a_kept_queue_its_files_left_elsewhere(
        line, tmp_path, monkeypatch):
    """The -own-held store with a first T8/0 message in the first data file (queue offset 0; the other two 1 and 2)
    and T8/0's file replaced before the restart by one holding only the other two units, at 0 and 20: the cut leaves
    it write position 20 (max the first unit's end: no unit of the walk below processOffset ends past it, so the walk
    appended none), where the walk's queue offsets say 40; the T8/0 message where the reput is set (processOffset - 1,
    queue offset 13) goes to 20, over the cut unit. verify on the store as that restart found it puts it there and
    predicts the units lost (the first T8/0 message's unit, missing from the planted file, lost too)."""
    from broker_dledger_2gib import embedded_message
    from broker_dledger_inside_disk_scenarios import SHIFTED_UNITS
    from broker_dledger_inside_scenarios import EMBED_OWN_QUEUE_OFFSET, EMBED_PROCESS_OFFSET, TO_ENTRY_TAIL_BODY

    from store_format.dledger_inside_units import InsideUnit
    from store_format.layout import CQ_UNIT_SIZE
    name = f"{line}-dledger-abort-emptied-batch-embedded-own-held-shifted"
    r, w, src = _written(name)
    reput = EMBED_PROCESS_OFFSET + 88 + TO_ENTRY_TAIL_BODY + 3 + 2 + 46 - 1
    msg = embedded_message(reput, topic=b"T8", queue_offset=EMBED_OWN_QUEUE_OFFSET)
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    log = data[-1].read_bytes()
    base = int(data[-1].name)
    assert log[reput - base:reput - base + len(msg) + 8] == msg + b"x" * 8, "the T8 message at processOffset - 1"
    # the planted units: the records of T8/0's queue offsets 1 (below processOffset) and 2 (past it)
    for k, (offset, size) in enumerate(SHIFTED_UNITS):
        rec = log[offset - base:offset - base + size]
        assert (int.from_bytes(rec[:4], "big"), int.from_bytes(rec[20:28], "big"),
                int.from_bytes(rec[28:36], "big")) == (size, k + 1, offset), rec[:40].hex()
        assert b"\x02T8" in rec, rec.hex()
    assert SHIFTED_UNITS[0][0] + SHIFTED_UNITS[0][1] < reput + 1 <= SHIFTED_UNITS[1][0]
    (held_file,) = sorted((src / "before" / "consumequeue" / "T8" / "0").iterdir())
    before = held_file.read_bytes()
    assert [cq_unit(before, k * CQ_UNIT_SIZE)[:2] for k in range(2)] == list(SHIFTED_UNITS), before[:60].hex()
    assert before[2 * CQ_UNIT_SIZE:] == bytes(len(before) - 2 * CQ_UNIT_SIZE), "T8/0 holds two units"
    state = w["queuesAfterDispatch"]["T8/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 2 * CQ_UNIT_SIZE, state
    held = (src / "expected" / "consumequeue" / "T8" / "0" / held_file.name).read_bytes()
    assert cq_unit(held, 0) == (*SHIFTED_UNITS[0], 0) and cq_unit(held, CQ_UNIT_SIZE) == (reput, len(msg), 0), \
        held[:60].hex()
    assert held[2 * CQ_UNIT_SIZE:] == bytes(len(held) - 2 * CQ_UNIT_SIZE), held.hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    assert (placed.units, placed.opened, placed.blank_until) == (
        (InsideUnit("T8", 0, CQ_UNIT_SIZE, reput, len(msg), 0),), (), ()), placed
    held_units = _units_below_write(w, src, (reput,))   # neither fillPreBlank nor the parsed one
    assert p["units_lost"] == _queued(r["scenario"]) - held_units > 0, (held_units, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_puts_a_cut_unit_back_elsewhere_in_a_kept_queue(
        line, tmp_path, monkeypatch):
    """The -to-entry-emptied store (the last message and the one where the reput is set, ending at B9's entry, for
    T8/0) with two messages of the first data file and the last one before the host sent to T8/0 too (queue offsets
    0 to 2, the last message 3), and T8/0's file planted before the restart with only the last two units, at 0 and
    20: the cut leaves write position 20 (max the first unit's end), the parsed T8/0 unit goes there, and the reput,
    going on at B9's entry, dispatches the cut unit (queue offset 3: 60 lies past the write position) again and
    appends it at 40, neither where the file had it (20) nor where its queue offset says (60). verify on the store as
    that restart found it puts both where the broker did and predicts the units lost (the two T8/0 units missing from
    the planted file; the cut unit is not lost)."""
    from broker_dledger_inside_disk_scenarios import SHIFTED_UNITS
    from broker_dledger_inside_scenarios import (
        EMBED_HOST_AT,
        EMBED_HOST_BODY,
        EMBED_OWN_QUEUE_OFFSET,
        TO_ENTRY_HOST_TAIL,
    )

    from store_format.dledger_inside_units import InsideUnit
    from store_format.layout import CQ_UNIT_SIZE
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-shifted"
    r, w, src = _written(name)
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    reput = int(w["truncateDirtyLogicFilesAt"]) - 1
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    log, base = data[-1].read_bytes(), int(data[-1].name)
    # the parsed T8/0 message (queue offset 13) from processOffset - 1 to the host's entry's end
    at = reput - base
    assert (int.from_bytes(log[at:at + 4], "big"), int.from_bytes(log[at + 20:at + 28], "big")) == (
        host_end - reput, EMBED_OWN_QUEUE_OFFSET), log[at:at + 40].hex()
    # the planted units: the records of T8/0's queue offsets 2 (below processOffset) and 3 (the last, past it)
    for k, (offset, size) in enumerate(SHIFTED_UNITS):
        rec = log[offset - base:offset - base + size]
        assert (int.from_bytes(rec[:4], "big"), int.from_bytes(rec[20:28], "big"),
                int.from_bytes(rec[28:36], "big")) == (size, k + 2, offset), rec[:40].hex()
        assert b"\x02T8" in rec, rec.hex()
    assert SHIFTED_UNITS[0][0] + SHIFTED_UNITS[0][1] < reput + 1 < host_end <= SHIFTED_UNITS[1][0]
    (held_file,) = sorted((src / "before" / "consumequeue" / "T8" / "0").iterdir())
    before = held_file.read_bytes()
    assert [cq_unit(before, k * CQ_UNIT_SIZE)[:2] for k in range(2)] == list(SHIFTED_UNITS), before[:60].hex()
    assert before[2 * CQ_UNIT_SIZE:] == bytes(len(before) - 2 * CQ_UNIT_SIZE), "T8/0 holds two units"
    assert int(w["queuesAfterLoad"]["T8/0"]["maxOffset"]) == CQ_UNIT_SIZE, w["queuesAfterLoad"]["T8/0"]
    state = w["queuesAfterDispatch"]["T8/0"]
    assert state["files"] == [held_file.name] and int(state["maxOffset"]) == 3 * CQ_UNIT_SIZE, state
    held = (src / "expected" / "consumequeue" / "T8" / "0" / held_file.name).read_bytes()
    assert [cq_unit(held, k * CQ_UNIT_SIZE) for k in range(3)] == [
        (*SHIFTED_UNITS[0], 0), (reput, host_end - reput, 0), (*SHIFTED_UNITS[1], 0)], held[:80].hex()
    assert held[3 * CQ_UNIT_SIZE:] == bytes(len(held) - 3 * CQ_UNIT_SIZE), held.hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    (q,) = [w for w in placed.whole if (w.topic, w.queue_id) == ("T8", 0)]   # replayed whole
    # the cut unit dispatched again after the parsed one, from where the walk's queue holds it
    assert (placed.units, placed.opened, q.copies) == (
        (InsideUnit("T8", 0, CQ_UNIT_SIZE, reput, host_end - reput, 0),), (),
        ((2 * CQ_UNIT_SIZE, 3 * CQ_UNIT_SIZE),)), placed
    assert not [f for f in crash.cut.dropped if f[:2] == ("T8", 0)], crash.cut.dropped   # its file stays
    held_units = _units_below_write(w, src, (reput,))   # neither fillPreBlank nor the parsed one
    assert p["units_lost"] == _queued(r["scenario"]) - held_units == 2, (held_units, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_puts_a_cut_unit_back_in_a_new_file_of_a_kept_queue(
        line, tmp_path, monkeypatch):
    """The -to-entry-shifted store with message 10 of the first data file and the last ten before the host for T8/0
    (queue offsets 0 to 10, the last message 11) and T8/0's first file planted with the units of those ten and of the
    last message (11 units: a full file; the broker's second file, the last message's unit at its start, stays): the
    cut deletes that second file and leaves write position 200 (max the tenth's end), the parsed T8/0 unit goes
    there, over the cut unit, and the reput, going on at B9's entry, dispatches the cut unit (queue offset 11) again:
    ``getLastMappedFile`` creates file 220 anew (the last one full) and the unit goes to its start. verify on the
    store as that restart found it puts both where the broker did and predicts the units lost (the first T8/0
    message's unit, missing from the planted file)."""
    from broker_dledger_inside_disk_scenarios import SHIFTED_RUN, SHIFTED_UNITS
    from broker_dledger_inside_scenarios import (
        EMBED_HOST_AT,
        EMBED_HOST_BODY,
        EMBED_OWN_QUEUE_OFFSET,
        TO_ENTRY_HOST_TAIL,
    )

    from store_format.dledger_inside_units import InsideUnit
    from store_format.layout import CQ_UNIT_SIZE
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-shifted-file"
    r, w, src = _written(name)
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    reput = int(w["truncateDirtyLogicFilesAt"]) - 1
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    log, base = data[-1].read_bytes(), int(data[-1].name)
    at = reput - base
    assert (int.from_bytes(log[at:at + 4], "big"), int.from_bytes(log[at + 20:at + 28], "big")) == (
        host_end - reput, EMBED_OWN_QUEUE_OFFSET), log[at:at + 40].hex()
    planted = (*SHIFTED_RUN, SHIFTED_UNITS[1])
    assert len(planted) * CQ_UNIT_SIZE == size and SHIFTED_RUN[-1] == SHIFTED_UNITS[0]
    for k, (offset, n) in enumerate(planted):   # T8/0's records of queue offsets 1 to 11
        rec = log[offset - base:offset - base + n]
        assert (int.from_bytes(rec[:4], "big"), int.from_bytes(rec[20:28], "big"),
                int.from_bytes(rec[28:36], "big")) == (n, k + 1, offset), rec[:40].hex()
        assert b"\x02T8" in rec, rec.hex()
    assert SHIFTED_RUN[-1][0] + SHIFTED_RUN[-1][1] < reput + 1 < host_end <= SHIFTED_UNITS[1][0]
    # T8/0 on disk before the restart: the planted file, and the broker's second one (the last message's unit at
    # its start, queue offset 11), which the cut deletes
    held_file, second = sorted((src / "before" / "consumequeue" / "T8" / "0").iterdir())
    assert [cq_unit(held_file.read_bytes(), k)[:2] for k in range(0, size, CQ_UNIT_SIZE)] == list(planted)
    assert second.name == f"{size:020d}" and second.read_bytes() == _pack(*SHIFTED_UNITS[1]) + bytes(
        size - CQ_UNIT_SIZE), second.read_bytes().hex()
    assert w["queuesAfterLoad"]["T8/0"]["files"] == [held_file.name], w["queuesAfterLoad"]["T8/0"]
    state = w["queuesAfterDispatch"]["T8/0"]
    assert state["files"] == [held_file.name, f"{size:020d}"] and int(state["maxOffset"]) == size + CQ_UNIT_SIZE, \
        state
    first = (src / "expected" / "consumequeue" / "T8" / "0" / held_file.name).read_bytes()
    assert [cq_unit(first, k)[:2] for k in range(0, size, CQ_UNIT_SIZE)] == [*SHIFTED_RUN, (reput, host_end - reput)]
    new = (src / "expected" / "consumequeue" / "T8" / "0" / f"{size:020d}").read_bytes()
    assert new == _pack(*SHIFTED_UNITS[1]) + bytes(size - CQ_UNIT_SIZE), new.hex()
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed = crash.cut.inside_placed
    (q,) = [w for w in placed.whole if (w.topic, w.queue_id) == ("T8", 0)]   # replayed whole
    assert (placed.units, placed.opened, q.copies) == (
        (InsideUnit("T8", 0, size - CQ_UNIT_SIZE, reput, host_end - reput, 0),), (("T8", 0, size),),
        ((size, size),)), placed
    assert not [f for f in crash.cut.dropped if f[:2] == ("T8", 0)], crash.cut.dropped   # file 220 written again
    held_units = _units_below_write(w, src, (reput,))   # neither fillPreBlank nor the parsed one
    assert p["units_lost"] == _queued(r["scenario"]) - held_units == 1, (held_units, p["units_lost"], p["notes"])


def _pack(offset: int, size: int, tags_code: int = 0) -> bytes:
    """A consume queue unit's 20 bytes."""
    return offset.to_bytes(8, "big") + size.to_bytes(4, "big") + tags_code.to_bytes(8, "big", signed=True)

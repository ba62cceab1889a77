"""DLedger crash restarts (5.5.1, an abort file, ``recheckReputOffsetFromCq=true``, the first three with the queues
kept: ``keepQueues``) whose start's reput, set inside an entry, parses a message for a consume queue on disk before
the walk that the walk
wrote no unit of, only a record past its end (the damaged last message), with consume queue ext files
(:mod:`broker_dledger_inside_past_ext_scenarios`): ``-to-entry-past-only-held-bitmap`` and ``-held-bitmap-end`` (ext
units with filter bitmaps before the end ``ConsumeQueue.recover`` leaves: the reput's ext units go on from that byte
end, ``ConsumeQueueExt.put``'s end-of-file rule included), and ``-to-entry-past-only-kept-ext`` (the cut deleting the
queue's file); and ``-light-mixed-emptied-past``, the store that reaches the old ``past_no_file`` gate (a record
past the walk's end whose queue offset lies below where the walk's units leave a queue the cut empties).  Written by
the published RocketMQ store through the JVM harness in ``tests/broker/``: what the broker's restart wrote (its
consume queue and ext files), ``verify``'s prediction on the store as that restart found it (its plan and units
lost), and for -kept-ext and -light-mixed-emptied-past ``rebuild --as-restart`` too."""
from __future__ import annotations

import struct

import broker_harness as bh
import pytest
from broker_dledger_files import cq_unit, ext_orphans, last_data_bytes, replayed_files
from broker_dledger_runs import (
    LINES,
    _capture_cuts,
    _inside_run,
    _loses_as_the_broker,
    _restart_as_the_broker,
    _verify_with_plan,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()

_LINES_55 = [ln for ln in LINES if ln.startswith("5.5")]


def _address(real: int) -> int:
    """``ConsumeQueueExt.decorate``: an ext unit's real offset as a consume queue unit's tags code."""
    return real - (1 << 63)


def _new_ext_unit(data: bytes, at: int) -> tuple[int, int, int, int]:
    """A 20-byte ext unit the restart put at byte ``at`` of an ext file: size, tags code, store time, bitmap size."""
    return struct.unpack(">hqqh", data[at:at + 20])


@pytest.mark.parametrize("end", [False, True], ids=["", "end"])
@pytest.mark.parametrize("line", _LINES_55)
def test_verify_predicts_a_crash_restart_whose_reput_puts_ext_units_after_bitmap_ones(line, end, tmp_path,
                                                                                      monkeypatch):
    """TZ/0 on disk before the walk, its planted consume queue file holding one unit of
    :data:`broker_dledger_inside_only_past_held_scenarios.HELD_UNIT`'s record (below processOffset) whose tags code
    is the address of a planted 46-byte ext unit (a filter bitmap's): at 46, or (``end``) at 138; its two planted ext
    files (:func:`broker_dledger_inside_past_ext_scenarios.bitmap_ext_files`) hold units at 0, 46, 92, 138 and a short
    -1 at 184, then at 204 and 250.  ``ConsumeQueue.recover``: ``ConsumeQueueExt.recover`` ends at 296 (the second
    file's units), ``truncateByMaxAddress`` with that address at the unit's end, 92 (``end``: 184), deleting the
    second file.  The cut keeps the planted unit (write position 20) and returns inside its loop.  The reput's
    ``ConsumeQueueExt.put`` (20-byte units now) puts the parsed message's ext unit at 92 and the damaged record's at
    112; ``end``: at 184 a 20-byte unit leaves fewer than ``END_BLANK_DATA_LENGTH`` bytes of the file, so
    ``fullFillToEnd`` and the unit at 204 (the new second file's start), the next at 224.  The broker's files, byte
    for byte; verify (no longer refused: "... with ext files whose end after ConsumeQueueExt.recover and
    truncateByMaxAddress is no 20-byte ext unit's boundary") replays TZ/0 with those addresses and predicts the
    units lost."""
    from broker_dledger_inside_light_scenarios import PAST_ONLY_TOPIC, embedded_to_entry_past_only_message
    from broker_dledger_inside_only_past_held_scenarios import HELD_UNIT
    from broker_dledger_inside_past_ext_scenarios import (
        BITMAP_LAST,
        BITMAP_MID,
        BITMAP_UNIT,
        EXT_SIZE,
        bitmap_ext_files,
    )
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-only-held-bitmap" + ("-end" if end else "")
    reput, msg = embedded_to_entry_past_only_message()
    r, w, src = _inside_run(name, reput, msg, damaged=True)
    damaged = int(w["damagedRecord"])
    queue = f"{PAST_ONLY_TOPIC}/0"
    at = BITMAP_LAST if end else BITMAP_MID
    planted = (HELD_UNIT[0], HELD_UNIT[1], _address(at))
    (held_file,) = sorted((src / "before" / "consumequeue" / PAST_ONLY_TOPIC / "0").iterdir())
    held = held_file.read_bytes()
    assert held_file.name == f"{0:020d}" and cq_unit(held, 0) == planted and not any(held[20:])
    ext_dir = src / "before" / "consumequeue_ext" / PAST_ONLY_TOPIC / "0"
    assert {int(f.name): f.read_bytes() for f in ext_dir.iterdir()} == bitmap_ext_files()
    loaded = w["queuesAfterLoad"][queue]   # after the cut: the planted unit kept
    assert int(loaded["maxOffset"]) == 20 and int(loaded["maxPhysicOffset"]) == sum(HELD_UNIT[:2]), loaded
    assert int(w["queuesAfterDispatch"][queue]["maxOffset"]) == 60, w["queuesAfterDispatch"][queue]
    size = struct.unpack(">i", last_data_bytes(src, damaged, 4))[0]
    (got_file,) = sorted((src / "expected" / "consumequeue" / PAST_ONLY_TOPIC / "0").iterdir())
    got = got_file.read_bytes()
    first = EXT_SIZE if end else at + BITMAP_UNIT   # where the reput's first ext unit went
    assert [cq_unit(got, k) for k in (0, 20, 40)] == \
        [planted, (reput, len(msg), _address(first)), (damaged, size, _address(first + 20))] and not any(got[60:]), \
        got[:60].hex()
    # the broker's ext files: truncateByMaxAddress deleted the second planted file; the restart's 20-byte units
    planted_ext = bitmap_ext_files()
    got_ext = {int(f.name): f.read_bytes()
               for f in (src / "expected" / "consumequeue_ext" / PAST_ONLY_TOPIC / "0").iterdir()}
    assert sorted(got_ext) == ([0, EXT_SIZE] if end else [0]), sorted(got_ext)
    new = [_new_ext_unit(got_ext[first // EXT_SIZE * EXT_SIZE], first % EXT_SIZE + k) for k in (0, 20)]
    assert [(u[0], u[3]) for u in new] == [(20, 0), (20, 0)], new
    if end:   # the first file as planted (its short -1 at 184 written again), the second new: two units, zeros
        assert got_ext[0] == planted_ext[0] and not any(got_ext[EXT_SIZE][40:]), got_ext[EXT_SIZE][:60].hex()
    else:   # the first file's bytes past the two new units are the planted ones still
        assert got_ext[0][:92] == planted_ext[0][:92] and got_ext[0][132:] == planted_ext[0][132:]
    cuts = _capture_cuts(monkeypatch)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    assert cuts[0][(PAST_ONLY_TOPIC, 0)][:3] == (sum(HELD_UNIT[:2]), True, 20), cuts
    placed = crash.cut.inside_placed
    (q,) = [q for q in placed.whole if (q.topic, q.queue_id) == (PAST_ONLY_TOPIC, 0)]
    assert (q.parsed_at, q.opened, q.put_back, q.copies) == ((20,), (), (damaged,), ()), q
    assert list(q.units) == [(20, reput, len(msg), _address(first)), (40, damaged, size, _address(first + 20))], q
    # the planted unit is no message's own (another queue's record, whose own unit the broker's queue holds too)
    _loses_as_the_broker(p, r, src, (reput,), extra=1, some=False)



@pytest.mark.parametrize("line", _LINES_55)
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_message_for_a_kept_ext_queue_the_cut_empties(
        line, tmp_path, monkeypatch):
    """The -to-entry-past-only store with the queues kept and ext files (-kept-ext): TZ/0 on disk before the walk as
    the broker wrote it, its file holding the damaged record's unit (past processOffset) whose tags code is the
    address of its ext unit at 0.  ``ConsumeQueue.recover``: ``ConsumeQueueExt.recover`` and ``truncateByMaxAddress``
    leave the ext end at 20; ``truncateDirtyLogicFiles`` deletes the file (its unit at or past processOffset) and its
    ``truncateByMaxAddress`` gets no address (nothing); the 5.5.1 start (``correctMinOffset`` with no file) leaves
    the max -1.  The reput puts the parsed unit at 20000 after fillPreBlank units, the damaged record's at 20020,
    their ext units at 20 and 40 (after the one at 0, which no unit points at any more).  verify replays TZ/0 whole
    from that state (``dledger_inside_walked.emptied_past_only``): its plan is the broker's files byte for byte,
    tags codes (ext addresses 20 and 40) included; its TZ/0 figures are the broker's: 2 ext units appended (the
    parsed message's, ``Placed.ext_put``, and the damaged record's), 1 orphaned (the cut kept no unit); it predicts
    the units lost.  ``--as-restart`` on that store (which holds queue files: its warning) writes what a restart
    makes of it with ``consumequeue/``, ``consumequeue_ext/`` and ``index/`` deleted (it reads no queue file of the
    store, so not the ext unit at 0 the broker's go on after): TZ/0's units where the broker put them, their tags
    codes the addresses 0 and 20."""
    from broker_dledger_inside_light_scenarios import PAST_ONLY_TOPIC, embedded_to_entry_past_only_message
    from broker_dledger_inside_scenarios import TO_ENTRY_QUEUE_OFFSET
    from broker_dledger_runs import _as_restart
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry-past-only-kept-ext"
    reput, msg = embedded_to_entry_past_only_message()
    r, w, src = _inside_run(name, reput, msg, damaged=True)
    damaged = int(w["damagedRecord"])
    size = struct.unpack(">i", last_data_bytes(src, damaged, 4))[0]
    queue = f"{PAST_ONLY_TOPIC}/0"
    (held_file,) = sorted((src / "before" / "consumequeue" / PAST_ONLY_TOPIC / "0").iterdir())
    held = held_file.read_bytes()
    assert cq_unit(held, 0) == (damaged, size, _address(0)) and not any(held[20:])
    (ext_file,) = sorted((src / "before" / "consumequeue_ext" / PAST_ONLY_TOPIC / "0").iterdir())
    before_ext = ext_file.read_bytes()
    assert _new_ext_unit(before_ext, 0)[0] == 20 and not any(before_ext[20:])
    loaded = w["queuesAfterLoad"][queue]
    assert (loaded["files"], int(loaded["maxPhysicOffset"]), int(loaded["extMaxOffset"])) == ([], -1, 20), loaded
    at = TO_ENTRY_QUEUE_OFFSET * 20
    cq_size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    first = at - at % cq_size
    state = w["queuesAfterDispatch"][queue]
    assert state["files"] == [f"{first:020d}", f"{first + cq_size:020d}"] and int(state["extMaxOffset"]) == 60, state
    folder = src / "expected" / "consumequeue" / PAST_ONLY_TOPIC / "0"
    got = [(folder / f"{f:020d}").read_bytes() for f in (first, first + cq_size)]
    assert [cq_unit(got[0], k) for k in range(0, at - first, 20)] == [(0, 2**31 - 1, 0)] * ((at - first) // 20)
    assert cq_unit(got[0], at - first) == (reput, len(msg), _address(20)) and not any(got[0][at - first + 20:])
    assert cq_unit(got[1], 0) == (damaged, size, _address(40)) and not any(got[1][20:])
    (got_ext,) = sorted((src / "expected" / "consumequeue_ext" / PAST_ONLY_TOPIC / "0").iterdir())
    ext = got_ext.read_bytes()
    assert ext[:20] == before_ext[:20] and [_new_ext_unit(ext, k)[0] for k in (20, 40)] == [20, 20] and \
        not any(ext[60:])
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    (q,) = [q for q in crash.cut.inside_placed.whole if (q.topic, q.queue_id) == (PAST_ONLY_TOPIC, 0)]
    assert (q.parsed_at, q.put_back, q.lost, q.blank_until) == ((at,), (damaged,), (), at), q
    assert replayed_files(q, cq_size) == {first: got[0], first + cq_size: got[1]}   # the broker's, byte for byte
    # the broker's ext figures for TZ/0: the ext units its restart put, and those before the loaded end that no unit
    # of its queue points at
    loaded_end, pointed = int(loaded["extMaxOffset"]), {cq_unit(got[0], at - first)[2], cq_unit(got[1], 0)[2]}
    appended = (int(state["extMaxOffset"]) - loaded_end) // 20
    orphans = ext_orphans({0: before_ext}, loaded_end, pointed)
    assert (appended, orphans) == (2, 1)
    (figures,) = [f for f in p["queues"] if f["queue"] == queue]
    assert (figures["ext_units_appended"], figures["ext_units_orphaned"]) == (appended, orphans), figures
    _loses_as_the_broker(p, r, src, (reput,), some=False)
    code, err = _as_restart(src / "before", tmp_path / "as-restart", src, line)
    assert code == 0 and "the store holds" in err, err[-2000:]
    ours = tmp_path / "as-restart" / "consumequeue" / PAST_ONLY_TOPIC / "0"
    mine = [(ours / f"{f:020d}").read_bytes() for f in (first, first + cq_size)]
    tags_at = at - first + 12   # the parsed unit's tags code: all else the broker's bytes
    assert mine[0][:tags_at] == got[0][:tags_at] and mine[0][tags_at + 8:] == got[0][tags_at + 8:]
    assert (cq_unit(mine[0], at - first)[2], cq_unit(mine[1], 0)) == (_address(0), (damaged, size, _address(20)))



@pytest.mark.parametrize("line", _LINES_55)
def test_as_restart_after_a_crash_whose_reput_drops_a_record_past_the_walk_in_a_mixed_queue_the_cut_empties(
        line, tmp_path, monkeypatch):
    """The -light-mixed-emptied-past store: %LMQ%q1's walk units (the own unit of the message put to it, queue offset
    0, at 0; the last T0/0 message's light unit, light queue offset 0, at 20) both past processOffset, so the cut
    leaves it no file (max -1); then two T0/0 messages also to %LMQ%q1, light queue offsets 1 (damaged: the walk ends
    there) and 10, records past the walk's end.  The reput: the parsed T5/0 message's light unit (light queue offset
    7) in a new file at 140 after fillPreBlank units, the two cut units again at 160 and 180 (queue offsets 0), then
    the damaged record's light unit dropped (1 * 20 below the write position 200) and the next one's at 200.  The
    rebuild's own dispatch, after the walk's two units (write position 40), drops the damaged record's too: the gate
    ``dledger_inside_past.past_no_file`` refused this store ("... whose record past the walk's end ... the rebuild's
    dispatch does not append right after the walk's units"), reached in one broker life (own and light queue
    offsets come from two counters).  The queue is replayed whole: --as-restart writes the broker's files byte for
    byte, verify's plan loses the damaged record's unit there and predicts the units lost."""
    from broker_dledger_inside_mixed_replay_scenarios import (
        EMPTIED_LIGHT_QUEUE_OFFSET,
        embedded_light_mixed_emptied_message,
    )
    from broker_dledger_inside_past_ext_scenarios import GATE_PAST_LIGHT
    from broker_dledger_inside_scenarios import LIGHT_TAIL
    name = f"{line}-dledger-abort-emptied-batch-embedded-light-mixed-emptied-past"
    reput, msg = embedded_light_mixed_emptied_message()
    r, w, src = _inside_run(name, reput, msg, damaged=True)
    damaged = int(w["damagedRecord"])
    sent = r["scenario"]["messages"]
    assert [m["properties"]["INNER_MULTI_QUEUE_OFFSET"] for m in sent[-2:]] == [str(n) for n in GATE_PAST_LIGHT]
    assert w["queuesAfterLoad"]["%LMQ%q1/0"] == {"type": "ConsumeQueue", "maxOffset": 0, "files": [],
                                                 "maxPhysicOffset": -1}
    at = EMPTIED_LIGHT_QUEUE_OFFSET * 20
    held = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f"{0:020d}").read_bytes()
    blank = (0, 2**31 - 1, 0)
    assert [cq_unit(held, k) for k in range(0, at, 20)] == [blank] * EMPTIED_LIGHT_QUEUE_OFFSET, held.hex()
    units = [cq_unit(held, k) for k in range(at, at + 80, 20)]
    tail = units[2][0]   # the last message before the damaged one, its light unit
    assert units[0] == (reput, len(msg), 0) and units[1][1:] == units[2][1:] == (LIGHT_TAIL, 0), units
    assert units[1][0] < tail < damaged < units[3][0] and not any(held[at + 80:]), units   # the damaged one dropped
    assert int(w["queuesAfterDispatch"]["%LMQ%q1/0"]["maxOffset"]) == at + 80
    _restart_as_the_broker(src, name, line, tmp_path)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / "verify"), src, line)
    (q,) = [q for q in crash.cut.inside_placed.whole if (q.topic, q.queue_id) == ("%LMQ%q1", 0)]
    assert (q.parsed_at, q.lost, q.put_back) == ((at,), (damaged,), (units[1][0], tail, units[3][0])), q
    # a unit each, a light one more for the last three messages but the damaged one's: no dispatch appends that (the
    # live broker's and the reference rebuild's put it after the walk's two units too, 1 * 20 below 40)
    _loses_as_the_broker(p, r, src, (reput,), extra=2)

"""DLedger crash restarts whose dledgerRecoverAbnormally walk ends at a damaged message, written by the published
RocketMQ store through the JVM harness in ``tests/broker/``: ``rebuild --as-restart`` (and ``verify``'s prediction)
on the store as the broker's restart found it, compared with what that restart wrote: the queues cut, the start's
reput from past the damaged message (the gap) or from before it (the walk again), a bad magic code met by the reput
(in the last data file or an earlier one), the reput from before the walk's data file, and converted stores whose
walk dispatches or queues nothing or whose reput begins in the old files.

The other crash restarts are in :mod:`test_dledger_crash_broker`; the broker writes every store once a pytest
session (:mod:`broker_dledger_runs`).
"""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_runs import (
    _RUNS,
    BROKER_LINE,
    LINES,
    _as_restart,
    _committed_pos,
    _damaged_walk_restart,
    _dledger_prediction,
    _emptied_layouts_as_the_broker,
    _entries_from,
    _held,
    _held_offsets,
    _lost_as_the_broker,
    _lost_per_queue,
    _queued,
    _ran_or_skip,
    _same_files,
    _same_tree,
    _units,
    _verify,
    _written,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_walk_ends_at_a_damaged_message(line, tmp_path):
    """The plain store with a body byte of a message in its last data file flipped, restarted after a crash:
    dledgerRecoverAbnormally's message check (body CRC) ends its walk at that message, DLedger's recovery (no CRC)
    keeps the log, and no queue is cut (the checkpoint's logicsPhysicalOffset below processOffset): with
    recheckReputOffsetFromCq the start's reput from the walk's last unit dispatches the rest, the damaged message
    too; without it, from the committed position, the log's end: nothing after the damage. --as-restart on the
    store as the restart found it writes the broker's files byte for byte, and verify predicts the units lost."""
    for name, rest in ((f"{line}-dledger-abort-damaged", True), (f"{line}-dledger-abort-damaged-norecheck", False)):
        if name not in _RUNS:
            continue   # -norecheck: 5.3.3 only (DLEDGER_LINES)
        r, src, damaged, err = _damaged_walk_restart(name, line, tmp_path)
        _same_tree(src / "expected", tmp_path / name)
        put = [u for u in _units(src / "expected" / "consumequeue") if u[2] != 2**31 - 1]
        assert any(u[1] == damaged for u in put) == rest, (name, damaged)
        assert len(put) == (_queued(r["scenario"]) if rest else 55), (name, len(put))
        p = _dledger_prediction(src, name, line, tmp_path)
        assert (p["units_dispatched_again"], p["units_lost"]) == (len(put), _queued(r["scenario"]) - len(put)), p


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_walk_ends_at_a_damaged_message_and_the_queues_are_cut(line,
                                                                                              tmp_path):
    """The partial store (one queue) with a body byte of its 399th message flipped and DLedger's checkpoint two
    entries behind the log's end, restarted after a crash: dledgerRecoverAbnormally's message check ends its walk
    at the damaged message, DLedger's recovery keeps the log, and on 5.5.1 truncateDirtyLogicFiles cuts the queue
    at the walk's short processOffset.  The start's reput from the committed position (the damaged entry) reaches
    no cut unit and appends the damaged message and the last one at the queue's write position, over the cut
    units; with recheckReputOffsetFromCq (DLEDGER_MORE_LAYOUTS, the index off) it puts back every cut unit, then
    the rest; from the log's end (the whole log committed) nothing past the damage.  5.3.3 (the queues deleted: no
    cut) dispatches the rest from the committed position.  --as-restart on the store as the restart found it
    writes the broker's files byte for byte, and verify predicts the units the broker's queue lacks."""
    names = [f"{line}-dledger-abort-damaged-cut{s}" for s in ("", "-recheck", "-end")]
    ran = [n for n in names if n in _RUNS]
    if not ran:
        pytest.skip("no damaged-cut scenario on this line")
    for name in ran:
        r, src, damaged, err = _damaged_walk_restart(name, line, tmp_path)
        end = int(r["written"]["maxPhyOffset"])
        assert ("truncateDirtyLogicFiles cuts the queues" in err) == line.startswith("5.5"), err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        held, sent = _held(r, src), _queued(r["scenario"])
        if name.endswith("-end"):
            assert damaged not in held and len(held) < sent - 2, (name, len(held), sent)
        elif name.endswith("-recheck") or line.startswith("5.3"):   # every message from the walk's start on
            assert held == _entries_from(src, held[0], end) and damaged in held, (name, len(held), sent)
        else:   # no cut unit put back, the damaged message and the last one appended at the write position
            assert held[-2] == damaged and len(held) < sent - 2 and held[-1] < end, (name, len(held), sent)
        p = _dledger_prediction(src, name, line, tmp_path)
        assert p["units_lost"] == sent - len(held), (name, p["units_lost"], sent - len(held), p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_reput_begins_past_the_damaged_message(line, tmp_path):
    """The partial store (one queue) with a body byte of its 398th message flipped and DLedger's checkpoint two
    entries behind the log's end, restarted after a crash: dledgerRecoverAbnormally's message check ends its walk
    at the damaged message, and the start's reput from the committed position, the entry after it, dispatches the
    last two messages only: the damaged one gets no unit and no key, and the queue appends the last two at its write
    position (one below their own queue offsets).  5.5.1 cuts the queue at the walk's short processOffset first
    (-damaged-gap: the last two go over the cut units), or not with the checkpoint behind it (-damaged-gap-nocut);
    5.3.3 with its queues deleted cuts nothing.  On 5.5.1 the layouts store (ext files, a light queue, a BatchCQ
    topic), cut, with the reput from past the damaged message (-damaged-gap-layouts) or from it
    (-damaged-cut-layouts): the cut queues get the units of the records from the reput's start at their write
    positions, a batch queue's too, each pointing at the ext unit its own dispatch put; and the partial store
    followed by three T9 messages, the second damaged (-damaged-gap-emptied): the cut empties T9's queue, whose
    last message the reput puts in a new file at its own queue offset.  --as-restart on the store
    as the restart found it writes the broker's files byte for byte, and verify predicts the units the broker's
    queues lack."""
    ran = _ran_or_skip(f"{line}-dledger-abort-damaged-", ("gap", "gap-nocut", "gap-layouts", "cut-layouts",
                                                          "gap-emptied"), "damaged-gap")
    for name in ran:
        r, src, damaged, err = _damaged_walk_restart(name, line, tmp_path)
        end = int(r["written"]["maxPhyOffset"])
        assert ("are never dispatched" in err) == ("-gap" in name), err[-2000:]
        cut = line.startswith("5.5") and not name.endswith("-nocut")
        assert ("truncateDirtyLogicFiles cuts the queues" in err) == cut, err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        if name.endswith(("-layouts", "-emptied")):
            if name.endswith("-layouts"):
                _same_files(src / "expected", tmp_path / name, "consumequeue_ext", written=True)
                _same_files(src / "expected", tmp_path / name, "batchconsumequeue", written=True)
            code, report = _verify(bh.copy_store(src / "before", tmp_path / f"verify-{name}"), src, line)
            p, lost = report["restart"], _lost_per_queue(r, src)
            assert p is not None and p["dledger"], report.get("no_prediction")
            assert {q["queue"]: q["units_lost"] for q in p["queues"] if q["units_lost"]} == lost, (name, lost, p)
            continue
        held, sent = _held(r, src), _queued(r["scenario"])
        assert damaged not in held and held[-1] < end and held[-2] > damaged, (name, held[-3:], damaged)
        assert len(held) < sent - 2 if cut else len(held) == sent - 1, (name, len(held), sent)
        p = _dledger_prediction(src, name, line, tmp_path)
        assert p["units_lost"] == sent - len(held), (name, p["units_lost"], sent - len(held), p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_reput_meets_a_bad_magic_code(line, tmp_path):
    """The partial store with a body byte of its 397th message flipped and the magic code of its 399th, DLedger's
    checkpoint four entries behind (the committed position at the first damage): the walk ends at the bad body CRC,
    DLedger's recovery keeps the log, and the start's reput (no CRC) dispatches the damaged message and the next,
    then fails at the bad magic code and skips to the end of getData's buffer, the log's end: the last two messages
    get no unit (5.5.1 cuts the queue first, 5.3.3 with its queues deleted does not; -kept, 5.3.3 with its queues
    kept, is checked through verify).  --as-restart on the store as the restart found it writes the broker's files
    byte for byte, and verify predicts the units the broker's queue lacks of the records before the bad magic code
    (its reference, the rebuild, skips the rest of that data file as the reput does)."""
    ran = _ran_or_skip(f"{line}-dledger-abort-damaged-twice", ("", "-kept"), "damaged-twice")
    for name in ran:
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        src = Path(r["scenario"]["dir"])
        damaged, bad = int(r["written"]["damagedRecord"]), int(r["written"]["damagedMagicRecord"])
        held, sent = _held(r, src), _queued(r["scenario"])
        # the broker's own outcome: the reput dispatched up to the bad magic code and nothing from there on
        assert damaged in held and held[-1] < bad and len(held) < sent - 1, (name, held[-3:], damaged, bad)
        if not name.endswith("-kept"):
            code, err = _as_restart(src / "before", tmp_path / name, src, line)
            assert code == 0, err[-2000:]
            assert f"check ends its walk at {damaged - 48} " in err, err[-2000:]
            assert ("truncateDirtyLogicFiles cuts the queues" in err) == line.startswith("5.5"), err[-2000:]
            _same_tree(src / "expected", tmp_path / name)
        p = _dledger_prediction(src, name, line, tmp_path)
        # verify's reference, the rebuild, ends at the bad magic code too (the rest of the last data file skipped)
        readable = _queued({"messages": r["scenario"]["messages"][:int(r["scenario"]["damageMagic"])]})
        assert p["units_lost"] == readable - len(held), (name, p["units_lost"], readable - len(held), p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_reput_meets_a_bad_magic_code_in_an_earlier_data_file(line, tmp_path):
    """The partial store with a body byte of its 61st message flipped and the magic code of its 121st, both in the
    first of two data files, DLedger's checkpoint at the first damaged entry: the walk ends at the bad body CRC, and
    the start's reput (no CRC) dispatches the damaged message and the next ones, then fails at the bad magic code,
    skips to the end of getData's buffer, the first data file's end (the group of one commits the whole log at
    once), and goes on at the second data file: the rest of the first file gets no unit, every message of the
    second does (5.5.1 and 5.3.3 with no queue cut; -recheck with recheckReputOffsetFromCq, the reput from the walk's
    end and the committed position in the second file; 5.5.1 -cut with truncateDirtyLogicFiles cutting the queue at
    the walk's short processOffset first).  --as-restart on the store as the restart found it writes the broker's files
    byte for byte, and verify predicts the units the broker's queue lacks of the records its reference (the
    rebuild, which skips the rest of a data file at a record it cannot read) dispatches."""
    ran = _ran_or_skip(f"{line}-dledger-abort-damaged-twice-early", ("", "-recheck", "-cut"), "damaged-twice-early")
    for name in ran:
        r, _w, src = _written(name)
        size = int(bh.read_conf(src / "broker.conf")["mappedFileSizeCommitLog"])
        damaged, bad = int(r["written"]["damagedRecord"]), int(r["written"]["damagedMagicRecord"])
        end = int(r["written"]["maxPhyOffset"])
        second = _entries_from(src, size + 48, end)   # the second data file's messages
        held = _held(r, src)
        # the broker's own outcome: nothing from the bad magic code to the first file's end, the second file's all
        assert bad < size < end and damaged in held and bad not in held, (name, damaged, bad, size)
        assert not [h for h in held if bad <= h < size] and set(second) <= set(held), (name, held[-3:], second[:3])
        if not name.endswith("-cut"):
            assert held == _entries_from(src, held[0], bad - 48) + second, (name, len(held))
        code, err = _as_restart(src / "before", tmp_path / name, src, line)
        assert code == 0, err[-2000:]
        assert f"check ends its walk at {damaged - 48} " in err, err[-2000:]
        assert ("truncateDirtyLogicFiles cuts the queues" in err) == name.endswith("-cut"), err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        p = _dledger_prediction(src, name, line, tmp_path)
        readable = int(r["scenario"]["damageMagic"]) + len(second)
        assert p["units_lost"] == readable - len(held), (name, p["units_lost"], readable - len(held), p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_reput_starts_past_a_bad_magic_code(line, tmp_path):
    """The damaged-twice-early store (a bad body CRC at the 61st message, a bad magic code at the 121st) with
    DLedger's checkpoint 200 entries behind, past the bad magic code: the walk ends at the first damage, and the
    start's reput from the committed position never reads the messages from there to the committed position, the
    bad magic code among them, and dispatches the rest of the log (each queue appending them at its write
    position; 5.5.1 -past-cut with truncateDirtyLogicFiles cutting the queue at the walk's short processOffset
    first, the reput's units then go over the cut ones).  --as-restart on the store as the restart found it writes
    the broker's files byte for byte, and verify predicts the units the broker's queue lacks of the records its
    reference (the rebuild, which skips the rest of the first data file at the bad magic code) dispatches."""
    ran = _ran_or_skip(f"{line}-dledger-abort-damaged-twice-early-past", ("", "-cut"), "damaged-twice-early-past")
    for name in ran:
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        src = Path(r["scenario"]["dir"])
        size = int(bh.read_conf(src / "broker.conf")["mappedFileSizeCommitLog"])
        damaged, bad = int(r["written"]["damagedRecord"]), int(r["written"]["damagedMagicRecord"])
        end = int(r["written"]["maxPhyOffset"])
        held = _held(r, src)
        # the broker's own outcome: the walk's messages (or those the cut left), then the committed entry's on
        committed = _entries_from(src, bad, end)[int(r["scenario"]["dledgerCommittedBack"]) * -1]
        tail = _entries_from(src, committed, end)
        assert bad < committed < size and damaged not in held and bad not in held, (name, damaged, bad, committed)
        assert held[-len(tail):] == tail and max(held[:-len(tail)]) < damaged, (name, len(held), len(tail))
        code, err = _as_restart(src / "before", tmp_path / name, src, line)
        assert code == 0, err[-2000:]
        assert f"check ends its walk at {damaged - 48} " in err, err[-2000:]
        assert ("truncateDirtyLogicFiles cuts the queues" in err) == name.endswith("-cut"), err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        p = _dledger_prediction(src, name, line, tmp_path)
        reference = _entries_from(src, 48, bad - 48) + _entries_from(src, size + 48, end)
        lost = len(set(reference) - set(held))
        assert p["units_lost"] == lost, (name, p["units_lost"], lost, p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_of_a_converted_store_whose_walk_dispatches_nothing(line, tmp_path):
    """The converted store (old commitlog/ files, then DLedger's data files) with forceVerifyPropCRC, restarted
    after a crash with recheckReputOffsetFromCq and DLedger's checkpoint three entries behind: the walk's message
    check fails at the first entry (DLedger writes no CRC property) and dispatches nothing, so the start's reput
    over the empty queues begins at the min offset, the first old file's, dispatches the old records, rolls into
    the data files at the last old file's blank and dispatches the entries to the log's end: every message gets
    its unit, the old ones too.  --as-restart on the store as the restart found it writes the broker's files byte
    for byte, and verify predicts every unit put again, none lost."""
    (name,) = _ran_or_skip(f"{line}-dledger-abort-converted-propcrc", ("",), "converted-propcrc")
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    assert any((src / "before" / "commitlog").iterdir()), "a converted store keeps its ordinary commitlog files"
    # the broker's own outcome: a unit for every message, the old ones too (no queue starts with fillPreBlank units)
    put = [u for u in _units(src / "expected" / "consumequeue") if u[2] != 2**31 - 1]
    assert len(put) == _queued(r["scenario"]), (len(put), _queued(r["scenario"]))
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    assert "fails at the first entry" in err and "so from the min offset" in err, err[-2000:]
    assert "the old commitlog files' records first" in err, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    p = _dledger_prediction(src, name, line, tmp_path)
    # verify's reference, the rebuild, ends at the committed entry: the units of the last entries are not in it
    first = min(int(f.name) for f in (src / "before" / "dledger-n0" / "data").iterdir())
    entries = _entries_from(src, first + 48, int(r["written"]["maxPhyOffset"]))
    committed = entries[-int(r["scenario"]["dledgerCommittedBack"])] - 48
    assert (p["units_dispatched_again"], p["units_lost"]) == (len([u for u in put if u[1] < committed]), 0), p


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_of_a_converted_store_whose_walk_queues_nothing(line, tmp_path):
    """A converted store whose data files hold prepared transaction messages only, restarted after a crash with
    recheckReputOffsetFromCq and DLedger's checkpoint three entries behind: the walk dispatches the prepared
    messages (their keys) but queues none, so the start's reput over the empty queues begins at the min offset, the
    first old file's, puts the old records' units (their keys skipped: below the index's endPhyOffset), rolls into
    the data files at the last old file's blank and walks them again, the walk's last indexed record indexed again.
    --as-restart on the store as the restart found it writes the broker's consumequeue/ and index/ byte for byte;
    verify predicts every unit put again, none lost."""
    (name,) = _ran_or_skip(f"{line}-dledger-abort-converted-prepared", ("",), "converted-prepared")
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    assert any((src / "before" / "commitlog").iterdir()), "a converted store keeps its ordinary commitlog files"
    # the broker's own outcome: a unit for every old message (the prepared ones get none), none fillPreBlank
    put = _units(src / "expected" / "consumequeue")
    assert len(put) == _queued(r["scenario"]) > 0 and all(u[2] != 2**31 - 1 for u in put), (len(put), put[:3])
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    found = re.search(r"the start's reput from (\d+), before data file (\d+)", err)
    assert found and int(found[1]) == 0 and "it begins in the old commitlog files" in err, err[-2000:]
    assert "indexes the record at" in err, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    p = _dledger_prediction(src, name, line, tmp_path)
    assert (p["units_dispatched_again"], p["units_lost"]) == (len(put), 0), p


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_of_a_converted_store_whose_reput_begins_in_the_old_files(line, tmp_path):
    """Converted stores whose start's reput (recheckReputOffsetFromCq, every queue empty) begins at the first old
    commitlog file after a walk that queued nothing and ended at a damaged message (-converted-prepared-damaged,
    5.x), or after a 5.5.1 cut that left the walk's one queue with no file (-converted-cut-emptied: max -1): the
    reput puts the old records' units, walks the data files again, and puts the damaged message's and the later
    ones' units, or writes the cut queue anew.  --as-restart on the store as the restart found it writes the
    broker's consumequeue/ and index/ byte for byte; verify's units lost are those the broker's queues lack (none:
    it holds a unit for every message)."""
    ran = _ran_or_skip(f"{line}-dledger-abort-converted", ("-prepared-damaged", "-cut-emptied", "-cut-emptied-ext"),
                       "converted-old-reput")
    for name in ran:
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        src = Path(r["scenario"]["dir"])
        assert any((src / "before" / "commitlog").iterdir()), "a converted store keeps its ordinary commitlog files"
        # the broker's own outcome: a unit for every message that makes one, none fillPreBlank
        put = _units(src / "expected" / "consumequeue")
        assert len(put) == _queued(r["scenario"]) > 0 and all(u[2] != 2**31 - 1 for u in put), (name, len(put))
        # 5.5.1 calls truncateDirtyLogicFiles after either walk: on the damaged one no queue reaches its offset
        assert int(r["written"]["truncateDirtyLogicFilesAt"]) >= 0 or line.startswith("5.3"), r["written"]
        if name.endswith("-damaged"):
            r, src, _damaged, err = _damaged_walk_restart(name, line, tmp_path)
        else:
            code, err = _as_restart(src / "before", tmp_path / name, src, line)
            assert code == 0, err[-2000:]
            assert "the cut left T7/0 with no file" in err, err[-2000:]
        found = re.search(r"the start's reput from (\d+), before data file (\d+)", err)
        assert found and int(found[1]) == 0 and "it begins in the old commitlog files" in err, err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        if name.endswith("-ext"):   # T7's units put back point at the ext units counted from its old records
            _same_files(src / "expected", tmp_path / name, "consumequeue_ext", written=True)
        p = _dledger_prediction(src, name, line, tmp_path)
        assert p["units_lost"] == 0, (name, p)


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_reput_walks_the_damaged_walk_again(line, tmp_path):
    """Crash restarts whose walk ends at a damaged message and whose start's reput, from the committed position
    before it and before the walk's last indexed record, walks the walk's last records again, then the rest:
    IndexService.buildIndex puts the last indexed record's keys again before those of the records past the
    damage, and on the layouts store (ext files, a light queue, a BatchCQ topic) ConsumeQueueExt.put an ext unit
    again for each T0 record from the reput's start before those of the records past it.  With no queue cut, and
    on 5.5.1 also with truncateDirtyLogicFiles cutting the queues at the walk's short processOffset first (-cut:
    the reput puts back the cut units from its start, then appends the records past the damage, a batch queue's
    too).  --as-restart on the store as the restart found it writes the broker's consumequeue/, index/,
    consumequeue_ext/ and batchconsumequeue/ byte for byte; verify predicts the units the broker's queue
    (partial store) lacks."""
    ran = _ran_or_skip(f"{line}-dledger-abort-damaged-again", ("", "-layouts", "-cut", "-layouts-cut"), "damaged-again")
    for name in ran:
        r, src, damaged, err = _damaged_walk_restart(name, line, tmp_path)
        assert "walks the walk's records from there again" in err and "indexes the record at" in err, err[-2000:]
        cut = name.endswith("-cut")
        assert ("truncateDirtyLogicFiles cuts the queues" in err) == cut, err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        if name == ran[0]:   # the message tables would hold the records read twice: refused in one line
            from pipelines.cli import main
            out = io.StringIO()
            with contextlib.redirect_stderr(out), contextlib.redirect_stdout(io.StringIO()):
                code = main(["rebuild", "--store", str(src / "before"), "--out", str(tmp_path / "tables"), "--config",
                             str(src / "broker.conf"), "--broker-version", BROKER_LINE[line], "--as-restart"])
            last = out.getvalue().strip().splitlines()[-1]
            assert code == 2 and last.startswith("error:") and "--no-tables" in last, out.getvalue()[-2000:]
        p = _dledger_prediction(src, name, line, tmp_path)
        if "-layouts" in name:
            assert "ext unit(s) again" in err, err[-2000:]
            _same_files(src / "expected", tmp_path / name, "consumequeue_ext", written=True)
            _same_files(src / "expected", tmp_path / name, "batchconsumequeue", written=True)
            lost = _lost_per_queue(r, src)
            assert {q["queue"]: q["units_lost"] for q in p["queues"] if q["units_lost"]} == lost, (name, lost, p)
            continue
        held, sent = _held(r, src), _queued(r["scenario"])
        assert damaged in held and (len(held) < sent if cut else len(held) == sent), (name, len(held), sent)
        assert p["units_lost"] == sent - len(held), (name, p["units_lost"], sent - len(held), p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_reput_begins_before_the_walks_data_file(line, tmp_path):
    """Crash restarts whose recovery walks from the last data file and whose start's reput, from the committed
    position in the first, walks that file's records, then the walk's ones again (no queue cut): T0's units there
    are dropped (below the queue's max), T9's put after fillPreBlank units, their keys skipped, the walk's last
    indexed record indexed again, and on the layouts store an ext unit put for each T0 record from the reput's
    start.  --as-restart on the store as the restart found it writes the broker's consumequeue/, index/,
    consumequeue_ext/ and batchconsumequeue/ byte for byte; verify's units lost (the committed records' units, the
    rebuild it compares with) are those the broker's queues lack."""
    ran = _ran_or_skip(f"{line}-dledger-abort-before", ("", "-layouts"), "before")
    for name in ran:
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        assert r["written"]["truncateDirtyLogicFilesAt"] == -1, r["written"]["truncateDirtyLogicFilesAt"]
        src = Path(r["scenario"]["dir"])
        code, err = _as_restart(src / "before", tmp_path / name, src, line)
        assert code == 0, err[-2000:]
        found = re.search(r"the start's reput from (\d+), before data file (\d+)", err)
        assert found and 0 < int(found[1]) < int(found[2]) and "indexes the record at" in err, err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        if name.endswith("-layouts"):
            _same_files(src / "expected", tmp_path / name, "consumequeue_ext", written=True)
            _same_files(src / "expected", tmp_path / name, "batchconsumequeue", written=True)
            continue
        committed = int(found[1])
        held = _held_offsets(r, src)
        assert len(held["T9/0"]) == 10, held["T9/0"]   # the reput put T9's records past the committed position
        _lost_as_the_broker(r, src, name, line, tmp_path, committed, held)


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_reput_begins_before_a_damaged_or_cut_walks_data_file(line, tmp_path):
    """The before crash restarts whose recovery's walk also ends at a damaged message (a body CRC, in the last data
    file) or cuts the queues at its short processOffset (5.5.1; 5.3.3 with the queues kept): the start's reput from
    the committed position in the first data file walks that file's records, the walk's again, then the damaged
    message and the rest, which T0 appends after the walk's units (up to a record whose magic code its own check
    refuses, -twice: the last data file, a group of one); the cut units all lie past its start, so it puts
    every one back (on the layouts stores pointing at the ext units it put for them, counted from its start) but
    in a queue the cut left with fillPreBlank units only (-cut-blank: its max 2147483647, so none, and the queue
    file the cut deleted stays deleted); in a queue the cut left with no file (-cut-emptied: T7, max -1 on 5.5.1)
    it puts the first file's records from its start too, then the walk's ones after them (-cut-emptied-layouts: with
    ext files, whose units the cut left there: the reput's follow them; verify's units lost checked per queue
    there, a batch unit per message).  -cut-magic and
    -cut-magic-layouts: a record of the first file whose magic code the reput's own check refuses sends it on to the
    second (a group of one), the rest of the first dispatched by no one (no unit, no ext unit).
    --as-restart on the store as the restart found it writes the broker's consumequeue/, index/ (and on the
    layouts stores consumequeue_ext/ and batchconsumequeue/) byte for byte, and verify's units lost are those the
    broker's queues lack (on the 5.3.3 stores with the queues kept, verify alone; the cut units lie past the
    committed position, where the rebuild verify compares with ends)."""
    stem = f"{line}-dledger-abort-before"
    ran = _ran_or_skip(stem, ("-damaged", "-damaged-twice", "-damaged-layouts", "-cut", "-damaged-cut",
                              "-damaged-twice-cut", "-cut-blank", "-cut-emptied", "-cut-magic", "-cut-layouts",
                              "-damaged-cut-layouts", "-cut-magic-layouts", "-cut-emptied-layouts", "-cut-kept",
                              "-damaged-cut-kept",
                              "-damaged-twice-cut-kept"),
                       "before-damaged or before-cut")
    for name in ran:
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        src = Path(r["scenario"]["dir"])
        cut = int(r["written"]["truncateDirtyLogicFilesAt"])
        assert (cut > 0) == ("-cut" in name), (name, cut)
        committed = _committed_pos(src / "before")
        if name.endswith("-kept"):   # 5.3.3 cuts the queues it loads: verify's prediction on the store as it is
            _lost_as_the_broker(r, src, name, line, tmp_path, committed, _held_offsets(r, src))
            continue
        if "-damaged" in name:
            r, src, damaged, err = _damaged_walk_restart(name, line, tmp_path)
        else:
            code, err = _as_restart(src / "before", tmp_path / name, src, line)
            assert code == 0, err[-2000:]
        found = re.search(r"the start's reput from (\d+), before data file (\d+)", err)
        assert found and int(found[1]) == committed < int(found[2]), (committed, err[-2000:])
        assert (f"cuts the queues at the recovery's processOffset {cut} " in err) == (cut > 0), err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        if "-magic" in name:   # a record of the first data file the reput's own check refuses: on at the second
            magic = int(r["written"]["damagedMagicRecord"])
            assert committed < magic < int(found[2]), (committed, magic, int(found[2]))
            # T9's puts 250-259, past it in that file, dispatched by no one (the broker's queue: none)
            assert name.endswith("-layouts") or "T9/0" not in r["written"]["queuesAfterDispatch"], r["written"]
        if name.endswith("-layouts"):
            _same_files(src / "expected", tmp_path / name, "consumequeue_ext", written=True)
            _same_files(src / "expected", tmp_path / name, "batchconsumequeue", written=True)
            if name.endswith("-emptied-layouts"):
                _emptied_layouts_as_the_broker(r, src, name, line, tmp_path, committed, int(found[2]), err)
            continue
        held = _held_offsets(r, src)
        if "-damaged" in name:   # the reput dispatched the damaged message, which the walk did not
            assert damaged in held["T0/0"], damaged
        if name.endswith("-blank"):   # the cut left T8 its fillPreBlank units only: the reput put none back
            assert r["written"]["queuesAfterDispatch"]["T8/0"]["maxPhysicOffset"] == 2**31 - 1, r["written"]
        if name.endswith("-emptied"):   # the cut left T7 no file (max -1): the reput put the first file's T7 records
            assert "00000000000000000000" in r["written"]["queuesAfterDispatch"]["T7/0"]["files"], r["written"]
            assert committed < min(held["T7/0"]) < int(found[2]) <= max(held["T7/0"]), (held["T7/0"], committed)
            assert "the cut left T7/0 with no file" in err, err[-2000:]
        if "-twice" in name:     # and ended at the record whose magic code its own check refuses
            magic = int(r["written"]["damagedMagicRecord"])
            assert magic not in held["T0/0"] and f"dispatches the rest to {magic - 48}\n" in err, (magic, err[-2000:])
        _lost_as_the_broker(r, src, name, line, tmp_path, committed, held)


@pytest.mark.parametrize("line", bh.params_or_skip([ln for ln in LINES if ln.startswith("5.3")],
                                                   "the 5.3.3 line: DLEDGER_LINES=4.9.8,5.3.3,5.5.1"))
def test_verify_predicts_a_crash_restart_whose_walk_ends_at_a_damaged_message_and_cuts_the_queues_it_holds(
        line, tmp_path):
    """The damaged-cut store restarted after a crash with its consume queues kept (5.3.3, which cuts the queues
    it loads when they reach processOffset): the walk ends at the damaged message, the cut takes the queue's units
    past processOffset, and the start's reput from the committed position (the damaged entry) appends the damaged
    message and the last one at the write position.  verify on the store as that restart found it predicts the units the
    broker's queue lacks once its reput caught up."""
    name = f"{line}-dledger-abort-damaged-cut-kept"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    held, sent = _held(r, src), _queued(r["scenario"])
    assert int(r["written"]["damagedRecord"]) in held and len(held) < sent - 2, (len(held), sent)
    code, report = _verify(bh.copy_store(src / "before", tmp_path / name), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"], report.get("no_prediction")
    assert p["units_lost"] == sent - len(held) > 0, (p["units_lost"], sent - len(held), p["notes"])
    # the damaged-again and damaged-gap stores kept as well: the reput from before the damaged message (the walk's
    # records again) or from past it (the damaged one never dispatched), after the cut
    for name, dispatched in ((f"{line}-dledger-abort-damaged-again-kept", True),
                             (f"{line}-dledger-abort-damaged-gap-kept", False)):
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        src = Path(r["scenario"]["dir"])
        held, sent = _held(r, src), _queued(r["scenario"])
        assert (int(r["written"]["damagedRecord"]) in held) == dispatched and len(held) < sent - 2, (len(held), sent)
        code, report = _verify(bh.copy_store(src / "before", tmp_path / name), src, line)
        p = report["restart"]
        assert p is not None and p["dledger"], report.get("no_prediction")
        assert p["units_lost"] == sent - len(held) > 0, (name, p["units_lost"], sent - len(held), p["notes"])

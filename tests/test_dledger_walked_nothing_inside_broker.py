"""``verify`` of a 5.x DLedger crash store whose recovery walk dispatches nothing and whose start's reput the cut sets
one byte before ``processOffset``, checked against the broker's own restart
(:mod:`broker_dledger_walked_nothing_inside_scenarios`: the queues kept, ``forceVerifyPropCRC=true``, a BatchCQ
topic's queue in the walk's data file only).

``dledgerRecoverAbnormally``'s message check fails at the first entry of the last data file (no ``__CRC32#``
property): it dispatches nothing, ``processOffset`` is that file's start, and ``truncateDirtyLogicFiles`` there
deletes BT0/0's files (``BatchConsumeQueue``: max ``processOffset - 1``) while T0/0 and T1/1 keep units of the earlier
files (max at least 8 bytes lower: the blank DLedger ends a full file with).  ``doRecheckReputOffsetFromCq`` sets the
reput at ``processOffset - 1``, the last byte of the data file before: ``DLedgerCommitLog.getData`` hands that one
byte, its check fails (a ``BufferUnderflowException``, caught: size -1), and ``doReput`` jumps to the end of the bytes
handed, ``processOffset``, then dispatches every entry from there: every cut unit comes back, BT0/0 in a new file.
The broker's queues after ``load()`` and after the reput are asserted first; then ``verify`` on the store as the
restart found it predicts that restart, and ``rebuild --as-restart`` (which writes what a restart makes with the
queues deleted) writes the broker's queue files byte for byte (every unit back, the kept ones as the crash left
them).  5.5.1 and 5.3.3 by default (``WALKED_NOTHING_LINES``).

``DLEDGER_2GIB=1`` (some 2.15 GB of data, as much again in ``before/``, about a minute): the 5.5.1 store past 2 GiB
whose cut leaves T9 with its ``fillPreBlank`` unit only (max 2147483647; T9's file planted so), the reput set there
inside the last T0 body, its check failing and jumping to the log's end: verify predicts every unit of the walk's
data file lost.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import struct
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_walked_nothing_inside_scenarios import walked_nothing_inside_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINES = bh.lines_from_env("WALKED_NOTHING_LINES", "5.5.1,5.3.3")
SCENARIOS = {line: walked_nothing_inside_scenarios(line) for line in LINES}
NAMES = [pytest.param(line, sc["name"], id=sc["name"]) for line, scs in SCENARIOS.items() for sc in scs]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "DLedger crash store(s) walked nothing, reput inside")


@pytest.fixture
def runs(request) -> dict[str, dict]:
    """Every scenario as the broker wrote and restarted it (once a session)."""
    return bh.written_once(request, _RUNS, STORES, every=True)


def _bcq_units(root: Path) -> list[tuple[int, int]]:
    """BT0/0's units under ``root`` (a ``batchconsumequeue/`` folder): (commitlog offset, size), in order."""
    out = []
    for f in sorted((root / "BT0" / "0").glob("0*")):
        data = f.read_bytes()
        for i in range(0, len(data) - 45, 46):
            off, size = struct.unpack(">qi", data[i:i + 12])
            if size > 0:
                out.append((off, size))
    return out


def _cq_offsets(root: Path, queue: str) -> list[int]:
    """The commitlog offsets of a consume queue's units under ``root`` (a ``consumequeue/`` folder), in order."""
    out = []
    for f in sorted((root / queue).glob("0*")):
        data = f.read_bytes()
        out += [int.from_bytes(data[i:i + 8], "big") for i in range(0, len(data) - 19, 20)
                if int.from_bytes(data[i + 8:i + 12], "big")]
    return out


def _as_the_broker(r: dict) -> tuple[Path, int, int]:
    """Asserts what the broker's restart wrote, so that the store is the case: ``truncateDirtyLogicFilesAt`` the last
    data file's start (``processOffset``; the walk dispatched nothing); the data file before ends with DLedger's blank
    (at least 8 bytes), in which ``processOffset - 1`` lies; after ``load()`` BT0/0 has no file and ``processOffset -
    1`` as its max, the largest (T0/0's and T1/1's at least 8 bytes lower: their units of the earlier files), so
    ``doRecheckReputOffsetFromCq`` sets the reput there; after the reput every queue holds every unit, the cut ones
    put back where they were (BT0/0 in a new file at 0): the reput dispatched every entry from ``processOffset``.
    The scenario's folder, ``processOffset`` and how many units the reput put back."""
    w, src, sc = r["written"], Path(r["scenario"]["dir"]), r["scenario"]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    cut = int(w["truncateDirtyLogicFilesAt"])
    assert len(data) == 3 and cut == int(data[-1].name) == 2 * int(sc["config"]["mappedFileSizeCommitLog"]), cut
    prev = data[-2].read_bytes()
    at = 0
    while int.from_bytes(prev[at:at + 4], "big", signed=True) != -1:   # DLedger's entries, to the blank
        assert int.from_bytes(prev[at:at + 4], "big") == 1, at   # an entry's magic (DLedger's MAGIC_1)
        at += int.from_bytes(prev[at + 4:at + 8], "big")
    blank = int.from_bytes(prev[at + 4:at + 8], "big")
    assert at + blank == len(prev) and blank >= 8, (at, blank)   # processOffset - 1 lies inside the blank
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    assert loaded["BT0/0"]["files"] == [] and int(loaded["BT0/0"]["maxPhysicOffset"]) == cut - 1, loaded["BT0/0"]
    assert all(int(s["maxPhysicOffset"]) <= int(data[-2].name) + at for q, s in loaded.items() if q != "BT0/0"), loaded
    before_bt0 = _bcq_units(src / "before" / "batchconsumequeue")
    assert len(before_bt0) == 10 and min(o for o, _ in before_bt0) >= cut, before_bt0   # all in the walk's file
    assert _bcq_units(src / "expected" / "batchconsumequeue") == before_bt0
    assert after["BT0/0"]["files"] == [f"{0:020d}"] and int(after["BT0/0"]["maxOffset"]) == 10 * 46, after["BT0/0"]
    put = len(before_bt0)
    for q in ("T0/0", "T1/1"):
        units = _cq_offsets(src / "before" / "consumequeue", q)
        assert len(units) == 30 and min(units) < cut <= max(units), q   # units below the cut and past it
        assert _cq_offsets(src / "expected" / "consumequeue", q) == units, q   # every one back where it was
        assert int(after[q]["maxOffset"]) == 30 * 20 and int(loaded[q]["maxOffset"]) == 20 * sum(u < cut for u in units)
        put += sum(u >= cut for u in units)
    return src, cut, put


@pytest.mark.parametrize("line,name", NAMES)
def test_verify_predicts_a_reput_set_one_byte_before_the_walked_files_start(runs, line: str, name: str, tmp_path,
                                                                            monkeypatch) -> None:
    """The restart's cut at the walk's data file start and its reput set one byte before it, as the broker wrote
    them (asserted first); verify on the store as the restart found it predicts that restart (no note): the reput
    set at ``processOffset - 1``, going on at ``processOffset`` with nothing parsed, every cut unit put back (but for
    those of the uncommitted entries, which the rebuild verify compares with leaves out: ``-back``), none lost;
    each queue's write position and max as the broker's load left them (after the cut, before the reput:
    ``queuesAfterLoad``)."""
    from broker_dledger_runs import _verify_with_plan
    r = runs[name]
    src, cut, put = _as_the_broker(r)
    back = int(r["scenario"].get("dledgerCommittedBack", 0))
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    note = next(n for n in p["notes"] if n.startswith("DLedger store after a crash"))
    # the broker's figures first: nothing lost, every cut unit put back
    assert p["units_lost"] == 0, (p["units_lost"], note)
    assert p["units_dispatched_again"] == put - back, (p["units_dispatched_again"], put, note)
    assert "fails at the first entry of data file" in note and f"cut the queues it loaded at {cut}," in note, note
    assert f"sets it at {cut - 1} (processOffset - 1" in note, note
    assert crash.walked_nothing and crash.process_offset == cut == crash.reput_from == crash.start_offset, crash
    assert crash.cut is not None and crash.cut.inside_from == cut - 1 and not crash.cut.inside_records, crash.cut
    assert crash.gap is None and crash.cut.held_emptied == frozenset({("BT0", 0)}), crash
    # each queue as the broker's load left it, after the cut and before the reput (queuesAfterLoad: BT0/0 with no
    # file, T0/0 and T1/1 their units below the cut), not as ConsumeQueue.recover read it before the walk
    loaded = r["written"]["queuesAfterLoad"]
    assert {q["queue"]: (q["write_position"], q["max_physic_offset"]) for q in p["queues"]} == {
        q: (int(s["maxOffset"]), int(s["maxPhysicOffset"])) for q, s in loaded.items()}, (p["queues"], loaded)


@pytest.mark.parametrize("line,name", NAMES)
def test_as_restart_writes_the_broker_queues(runs, line: str, name: str, tmp_path) -> None:
    """Every unit back after the reput (asserted first), so the broker's ``consumequeue/`` and ``batchconsumequeue/``
    are what ``rebuild --as-restart`` writes (a restart with the queues deleted) byte for byte."""
    from broker_dledger_runs import _as_restart, _same_files
    r = runs[name]
    src, _cut, _put = _as_the_broker(r)
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    _same_files(src / "expected", tmp_path / name, "consumequeue", written=True)
    _same_files(src / "expected", tmp_path / name, "batchconsumequeue", written=True)


@pytest.mark.big_store
@pytest.mark.skipif(os.environ.get("DLEDGER_2GIB") != "1", reason="a 2 GiB store: DLEDGER_2GIB=1")
def test_verify_predicts_a_reput_set_at_2147483647_after_a_walk_that_dispatched_nothing(tmp_path, monkeypatch) -> None:
    """``5.5.1-dledger-abort-propcrc-kept-past-2gib``: what the broker wrote first (the cut at the 22nd data file's
    start, T9 left with its ``fillPreBlank`` unit only, max 2147483647, the largest; after the reput no queue got a
    unit back: its check at 2147483647, inside the last T0 body, fails and it jumps to the log's end); then verify on
    the store as the restart found it predicts the reput set there, going on at the log's end, every unit of the 22nd
    data file lost (T0's, and T9's planted one) and none put again."""
    from broker_dledger_2gib import BLANK_MAX, LINE, held_units, queued_messages, written
    from broker_dledger_walked_nothing_inside_scenarios import PAST_2GIB_T9_LAST, walked_nothing_past_2gib_scenario

    from pipelines.cli import main
    from pipelines.verify import compare_store
    sc = walked_nothing_past_2gib_scenario(LINE)
    w, src = written(sc, tmp_path)
    end = int(w["maxPhyOffset"])
    cut = int(w["truncateDirtyLogicFilesAt"])
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 22 and cut == int(data[-1].name) < BLANK_MAX < PAST_2GIB_T9_LAST < end, (cut, end)
    loaded, after = w["queuesAfterLoad"], w["queuesAfterDispatch"]
    assert int(loaded["T9/0"]["maxPhysicOffset"]) == BLANK_MAX and int(loaded["T9/0"]["maxOffset"]) == 20, loaded
    assert int(loaded["T0/0"]["maxPhysicOffset"]) < cut, loaded["T0/0"]
    # the reput from 2147483647 put nothing: every queue's write position as load() left it
    assert {q: int(s["maxOffset"]) for q, s in after.items()} == {q: int(s["maxOffset"]) for q, s in loaded.items()}
    t0 = [int.from_bytes(b[i:i + 8], "big") for f in sorted((src / "before" / "consumequeue" / "T0" / "0").iterdir())
          for b in (f.read_bytes(),) for i in range(0, len(b) - 19, 20) if int.from_bytes(b[i + 8:i + 12], "big")]
    cut_t0 = sum(o >= cut for o in t0)
    assert cut_t0 == 11207 and int(loaded["T0/0"]["maxOffset"]) == 20 * (len(t0) - cut_t0), (cut_t0, loaded["T0/0"])
    plans = []
    real = compare_store.dledger_crash_on_disk

    def capture(*args):  # noqa: ANN002, ANN202
        plans.append(real(*args))
        return plans[-1]
    monkeypatch.setattr(compare_store, "dledger_crash_on_disk", capture)
    out = io.StringIO()
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(out):
        main(["verify", "--store", str(src / "before"), "--config", str(src / "broker.conf"), "--broker-version",
              bh.BROKER_VERSION_ARG[LINE], "--engine", "local", "--work", str(tmp_path / "verify"), "--json"])
    report = json.loads(out.getvalue())
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    note = next(n for n in p["notes"] if n.startswith("DLedger store after a crash"))
    # every sent message's unit the broker's queues lack below their write positions: T0's cut ones, T9's both (the
    # planted file holds none of the first: a fillPreBlank unit there)
    lost = queued_messages(sc) - held_units(src, after)
    assert p["units_lost"] == lost == cut_t0 + 2 and p["units_dispatched_again"] == 0, (p["units_lost"], lost, note)
    assert f"sets it at {BLANK_MAX} (where a queue the cut left with fillPreBlank units only" in note, note
    (crash, _why), = plans
    assert crash.walked_nothing and crash.process_offset == cut and crash.reput_from == end, crash
    assert crash.cut is not None and crash.cut.inside_from == BLANK_MAX and crash.gap == (cut, end), crash

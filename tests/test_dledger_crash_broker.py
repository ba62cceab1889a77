"""DLedger crash restarts (an abort file, consumequeue/ and index/ deleted) written by the published RocketMQ store
through the JVM harness in ``tests/broker/``: ``rebuild --as-restart`` and ``verify``'s prediction on the store as the
broker's restart found it, compared with what that restart wrote, where dledgerRecoverAbnormally's walk ends at the
log's end: a crash before the first start with DLedger, the queues cut (ext, light and batch queue units, a queue
emptied), the reput starting inside an entry.

The damaged walks (a damaged message ending the walk) are in :mod:`test_dledger_crash_damaged_broker`; the broker
writes every store once a pytest session (:mod:`broker_dledger_runs`).
"""
from __future__ import annotations

import re
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_runs import (
    _RUNS,
    LINES,
    MORE_LAYOUTS,
    _as_restart,
    _files,
    _lost_per_queue,
    _parsed_unit_in_a_new_file,
    _queued,
    _restart_as_the_broker,
    _same_files,
    _same_tree,
    _units,
    _units_below_write,
    _verify,
    _verify_loses_as_the_broker,
    _verify_with_plan,
    _written,
)

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark, pytest.mark.usefixtures("dledger_written")]

bh.skip_without_tools()


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_with_many_entries_in_the_last_file(line, tmp_path):
    """A crash restart whose last data file holds more entry headers than its last message is long:
    dledgerRecoverAbnormally's processOffset (without the headers) is then below the checkpoint's
    logicsPhysicalOffset. 5.3.3 compares it with the deleted queues' max offset (-1) and cuts nothing. 5.5.1
    compares it with the checkpoint's offset and truncateDirtyLogicFiles cuts the queues the walk wrote
    there; the start's reput then puts the cut units back from the cut queues' largest offset
    (recheckReputOffsetFromCq=true: the broker's index holds the last message's keys twice) or leaves them
    cut (without it). --as-restart on the store as the restart found it writes the broker's files byte for
    byte, with recheckReputOffsetFromCq=true and without."""
    for name in (f"{line}-dledger-abort-small", f"{line}-dledger-abort-small-norecheck"):
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        src = Path(r["scenario"]["dir"])
        code, err = _as_restart(src / "before", tmp_path / name, src, line)
        assert code == 0, err[-2000:]
        assert ("truncateDirtyLogicFiles cuts the queues" in err) == (line != "5.3.3"), err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        if line == "5.3.3" or name.endswith("-norecheck"):
            continue
        (index,) = (src / "expected" / "index").iterdir()
        data = index.read_bytes()
        slots, count = int.from_bytes(data[32:36], "big"), int.from_bytes(data[36:40], "big")
        at = 40 + 4 * int(r["scenario"]["config"]["maxHashSlotNum"])
        entries = [data[at + 20 * i:at + 20 * i + 12] for i in range(1, count)]   # (key hash, offset)
        assert slots > 0 and len(set(entries)) < len(entries), "the broker's index holds no key twice"


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_verify_predicts_a_crash_restart_that_cuts_the_queues(line, tmp_path):
    """On the stores of the tests above as the crash restart found them, verify's prediction agrees with
    what the broker's restart left: the units below each queue's write position once its reput caught up
    (queuesAfterDispatch: maxOffset and the files it maps) are the units put, every other unit of the
    scenario is lost, and the keys put are those in the broker's index (the last message's twice with
    recheckReputOffsetFromCq=true on 5.5.1). The report counts up to DLedger's committed entry, where the
    rebuild it compares with ends: the units and keys of the entries past it (the partial store's last two
    messages, one unit each), which the broker's start puts too, are left out of its figures."""
    for name in (f"{line}-dledger-abort-small", f"{line}-dledger-abort-small-norecheck",
                 f"{line}-dledger-abort-partial"):
        r = _RUNS[name]
        src = Path(r["scenario"]["dir"])
        code, report = _verify(bh.copy_store(src / "before", tmp_path / name), src, line)
        p = report["restart"]
        assert p is not None and p["dledger"], report.get("no_prediction")
        size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
        put: list[int] = []   # the commitlog offsets of the units the broker's queues hold
        for queue, state in r["written"]["queuesAfterDispatch"].items():
            for f in state["files"]:
                data = (src / "expected" / "consumequeue" / queue / f).read_bytes()
                valid = min(size, int(state["maxOffset"]) - int(f))
                put += [int.from_bytes(data[i:i + 8], "big") for i in range(0, valid, 20)
                        if int.from_bytes(data[i + 8:i + 12], "big") != 2**31 - 1]
        queued = _queued(r["scenario"])
        cp = bh.read_conf(src / "before" / "dledger-n0" / "checkpoint")
        uncommitted = int(cp["endIndex"]) - int(cp["committedIndex"])
        committed_end = sorted(put)[-uncommitted] if uncommitted else 1 << 62   # the first uncommitted message
        assert (p["units_dispatched_again"], p["units_lost"]) == (len(put) - uncommitted, queued - len(put)), (name, p)
        keys = 0   # the broker's index entries (indexCount - 1 a file) of messages below the committed end
        slots = int(r["scenario"]["config"]["maxHashSlotNum"])
        for f in (src / "expected" / "index").iterdir():
            data = f.read_bytes()
            at = 40 + 4 * slots
            keys += sum(int.from_bytes(data[at + 20 * i + 4:at + 20 * i + 12], "big") < committed_end
                        for i in range(1, int.from_bytes(data[36:40], "big")))
        assert p["index_keys_put_again"] == keys > 0, (name, p)


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_reput_puts_back_part_of_a_cut_queue(line, tmp_path):
    """One queue, DLedger's checkpoint two entries behind the log's end, no recheckReputOffsetFromCq: on
    5.5.1 truncateDirtyLogicFiles cuts the queue's last units at the recovery's short processOffset and the
    start's reput, from the committed position, puts back only the last two, which
    putMessagePositionInfo appends at the queue's write position, over the units it leaves out (the queue
    then ends with the log's last message but holds fewer units than messages were sent). --as-restart on
    the store as the restart found it writes the broker's files byte for byte (5.3.3 cuts nothing)."""
    name = f"{line}-dledger-abort-partial"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    if line == "5.3.3":
        return
    assert "truncateDirtyLogicFiles cuts the queues" in err, err[-2000:]
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    (state,) = r["written"]["queuesAfterDispatch"].values()
    units = []
    for f in state["files"]:
        data = (src / "expected" / "consumequeue" / "T0" / "0" / f).read_bytes()
        valid = min(size, int(state["maxOffset"]) - int(f))
        units += [(int.from_bytes(data[i:i + 8], "big"), int.from_bytes(data[i + 8:i + 12], "big"))
                  for i in range(0, valid, 20)]
    sent = _queued(r["scenario"])
    last_offset, last_size = units[-1]
    assert len(units) < sent and last_offset + last_size == int(r["written"]["maxPhyOffset"]), \
        f"not a queue put back in part: {len(units)} of {sent} units, the last ending at {last_offset + last_size}"


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_cut_takes_ext_light_and_batch_queue_units(line, tmp_path):
    """The partial crash restart with consume queue ext files, a light queue (%LMQ%q1) and a BatchCQ topic
    (BT0): on 5.5.1 truncateDirtyLogicFiles cuts the last units of every queue (an ext queue's ext files stay
    as they are, a batch queue is cut by BatchConsumeQueue's own rule) and the start's reput from the
    committed position puts back those of the last six messages only, appended at each queue's write
    position: an ext unit for every message it walks (put back or not), the units put back pointing at the
    new ones; the batch queue's units appended after its last kept unit. --as-restart on the store as the
    restart found it writes the broker's consumequeue/, consumequeue_ext/, batchconsumequeue/ and index/
    byte for byte (5.3.3 cuts nothing, but its reput puts the ext units of the last six messages again).
    DLEDGER_MORE_LAYOUTS=1: the same with recheckReputOffsetFromCq=true, whose reput puts every cut unit back."""
    # the recheck store first: the checks after the loop are on the layouts store
    for name in ([f"{line}-dledger-abort-layouts-recheck"] if MORE_LAYOUTS else []) + [f"{line}-dledger-abort-layouts"]:
        r = _RUNS[name]
        assert r["written"].get("ok"), r["written"].get("error")
        src = Path(r["scenario"]["dir"])
        ours = tmp_path / name
        code, err = _as_restart(src / "before", ours, src, line)
        assert code == 0, err[-2000:]
        _same_tree(src / "expected", ours)
        for sub in ("consumequeue_ext", "batchconsumequeue"):
            _same_files(src / "expected", ours, sub, written=True)
        assert ("truncateDirtyLogicFiles cuts the queues" in err) == (line != "5.3.3"), err[-2000:]
    if line == "5.3.3":
        return
    assert "truncateDirtyLogicFiles cuts the queues" in err, err[-2000:]
    states = r["written"]["queuesAfterDispatch"]
    messages = r["scenario"]["messages"]
    for queue, sent in (("T0/0", sum(m["topic"] == "T0" for m in messages)),
                        ("%LMQ%q1/0", sum("properties" in m and m["topic"] == "T0" for m in messages))):
        assert int(states[queue]["maxOffset"]) < 20 * sent, f"{queue}: every cut unit put back (not in part)"
        assert int(states[queue]["maxPhysicOffset"]) == int(r["written"]["maxPhyOffset"]), queue
    state = states["BT0/0"]
    units = b"".join((src / "expected" / "batchconsumequeue" / "BT0" / "0" / f).read_bytes() for f in state["files"])
    first = int(state["files"][0])
    units = units[:int(state["maxOffset"]) - first]
    base = [(int.from_bytes(units[i + 28:i + 36], "big"), int.from_bytes(units[i + 36:i + 38], "big"))
            for i in range(0, len(units), 46)]
    assert any(b + n != b2 for (b, n), (b2, _) in zip(base, base[1:])), "BT0: no batch unit put back in part"
    # verify on the same store predicts the units put (those below each queue's write position once the
    # broker's reput caught up) and lost (every other unit the messages make: one each, one more per light queue)
    code, report = _verify(bh.copy_store(src / "before", tmp_path / "verified"), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"], report.get("no_prediction")
    held = 0
    for queue, state in states.items():
        layout, unit = ("batchconsumequeue", 46) if queue.startswith("BT0/") else ("consumequeue", 20)
        for f in state["files"]:
            data = (src / "expected" / layout / queue / f).read_bytes()[:max(0, int(state["maxOffset"]) - int(f))]
            held += sum(1 for i in range(0, len(data), unit) if int.from_bytes(data[i + 8:i + 12], "big") != 2**31 - 1)
    units = [1 + ("properties" in m and m["topic"] == "T0") for m in messages]
    uncommitted = sum(units[-int(r["scenario"]["dledgerCommittedBack"]):])   # past the rebuild verify compares with
    assert (p["units_dispatched_again"], p["units_lost"]) == (held - uncommitted, sum(units) - held), p


@pytest.mark.parametrize("line", bh.params_or_skip([ln for ln in LINES if ln.startswith("5.5") and MORE_LAYOUTS],
                                                   "5.5.1 with DLEDGER_MORE_LAYOUTS=1"))
def test_as_restart_after_a_crash_whose_reput_puts_ext_units_from_an_earlier_file(line, tmp_path):
    """The layouts store (ext files on T0, a light queue, a BatchCQ topic) with DLedger's checkpoint in the first
    of its two data files and the checkpoint's logicsPhysicalOffset at 100, restarted after a crash: the
    recovery's walk starts at the first data file (isMmapFileMatchedRecover), no queue is cut, and the start's
    reput from the committed position, before the walk's last file, puts an ext unit for every T0 record from
    there, in both files, before dropping its unit. --as-restart on the store as the restart found it writes the
    broker's consumequeue/, consumequeue_ext/, batchconsumequeue/ and index/ byte for byte."""
    name = f"{line}-dledger-abort-layouts-early"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    committed = int(bh.read_conf(src / "before" / "dledger-n0" / "checkpoint")["committedIndex"])
    ours = tmp_path / name
    code, err = _as_restart(src / "before", ours, src, line)
    assert code == 0, err[-2000:]
    assert f"dispatches every entry from data file {data[0].name} " in err, err[-2000:]
    assert "truncateDirtyLogicFiles cuts the queues" not in err, err[-2000:]
    reput = int(err.split("the start's reput begins at ")[1].split()[0].rstrip(";"))
    assert int(data[0].name) < reput < int(data[-1].name) and committed > 0, (reput, committed)
    _same_tree(src / "expected", ours)
    for sub in ("consumequeue_ext", "batchconsumequeue"):
        _same_files(src / "expected", ours, sub, written=True)
    ext_units = 0   # CqExtUnit: a short size (20 without a bitmap) first; the file's unused end is zeros or -1
    for f in sorted((src / "expected" / "consumequeue_ext" / "T0" / "0").iterdir()):
        b = f.read_bytes()
        ext_units += next((i for i in range(0, len(b) // 20) if int.from_bytes(b[20 * i:20 * i + 2], "big") != 20),
                          len(b) // 20)
    t0 = sum(m["topic"] == "T0" for m in r["scenario"]["messages"])
    assert ext_units > t0, f"the reput put no ext unit again: {ext_units} ext units, {t0} T0 messages"


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_verify_predicts_a_crash_restart_that_cuts_the_queues_it_holds(line, tmp_path):
    """The partial store restarted after a crash with its consume queues kept: the recovery's walk finds
    its units in the queues, truncateDirtyLogicFiles cuts the queue's own units past processOffset (5.5.1
    checks the checkpoint's logicsPhysicalOffset; 5.3.3 the loaded queues' max, which reaches it) and the
    start's reput from the committed position puts back only
    the last ones. verify on the store as that restart found it predicts the cut and the units it loses:
    every sent message the broker's queue lacks once its reput caught up."""
    name = f"{line}-dledger-abort-kept"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    code, report = _verify(bh.copy_store(src / "before", tmp_path / name), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    (state,) = r["written"]["queuesAfterDispatch"].values()
    held = 0
    for f in state["files"]:
        data = (src / "expected" / "consumequeue" / "T0" / "0" / f).read_bytes()
        valid = min(size, int(state["maxOffset"]) - int(f))
        held += sum(1 for i in range(0, valid, 20) if int.from_bytes(data[i + 8:i + 12], "big") != 2**31 - 1)
    lost = _queued(r["scenario"]) - held
    assert p["units_lost"] == lost > 0, (lost, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_verify_predicts_a_crash_restart_that_cuts_the_batch_queue_it_holds(line, tmp_path):
    """The layouts store (T0, the light queue %LMQ%q1, the BatchCQ topic BT0) without ext files, restarted after
    a crash with its queues kept, batchconsumequeue/ too: the recovery's walk finds every unit there,
    truncateDirtyLogicFiles cuts each queue's own units past processOffset (BatchConsumeQueue's rule for BT0:
    its max becomes the start of its last unit kept) and the start's reput from the committed position puts back
    only those of the last messages. verify on the store as that restart found it predicts, queue by queue, the
    units lost: every unit of a sent message the broker's queue lacks once its reput caught up."""
    name = f"{line}-dledger-abort-batch-kept"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    assert any((src / "before" / "batchconsumequeue").rglob("0*")), "no batch queue file kept"
    code, report = _verify(bh.copy_store(src / "before", tmp_path / name), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"], report.get("no_prediction")
    lost = _lost_per_queue(r, src)
    predicted = {q["queue"]: q["units_lost"] for q in p["queues"] if q["units_lost"]}
    assert predicted == lost and ("BT0/0" in lost) == (line != "5.3.3" or r["written"]["truncateDirtyLogicFilesAt"]
                                                       >= 0), (predicted, lost, p["notes"])
    # the queue files the cut deleted and nothing wrote again (the batch queue's placed by its units on disk)
    deleted = sum(len(set(_files(src / "before" / sub)) - set(_files(src / "expected" / sub)))
                  for sub in ("consumequeue", "batchconsumequeue"))
    said = [int(m) for n in p["notes"] for m in re.findall(r"(\d+) queue file\(s\) stay deleted", n)]
    assert said == ([deleted] if lost else []), (said, deleted, p["notes"])


@pytest.mark.parametrize("line", LINES)
def test_verify_predicts_a_crash_restart(line, tmp_path):
    """On the store as the broker's crash restart found it (before/: an abort file, consumequeue/ and
    index/ deleted), verify predicts what that restart wrote (expected/): the units it put (on 5.x from the
    data file dledgerRecoverAbnormally starts at; those of uncommitted entries are not in the rebuild verify
    compares with), and every other unit of the store lost (a converted store's old messages too)."""

    names = [f"{line}-dledger-abort"] + ([] if line.startswith("4") else [f"{line}-dledger-abort-norecheck",
                                                                          f"{line}-dledger-abort-converted"])
    for name in names:
        r = _RUNS[name]
        src = Path(r["scenario"]["dir"])
        store = bh.copy_store(src / "before", tmp_path / name)
        code, report = _verify(store, src, line)
        p = report["restart"]
        assert code == 1 and p is not None and p["dledger"], report.get("no_prediction")
        put = [u for u in _units(src / "expected" / "consumequeue") if u[2] != 2**31 - 1]
        queued = _queued(r["scenario"])
        # the rebuild verify compares with ends at the committed entry: the units of the last entries (one
        # message each), which the crash restart puts too, are not in it
        back = int(r["scenario"].get("dledgerCommittedBack", 0))
        assert 0 < len(put) - back and len(put) <= queued
        assert (p["units_dispatched_again"], p["units_lost"]) == (len(put) - back, queued - len(put)), p


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_as_restart_after_a_crash_whose_cut_empties_a_queue(line, tmp_path):
    """The small store and one last message to a queue of its own, restarted after a crash with
    recheckReputOffsetFromCq=true: the cut at dledgerRecoverAbnormally's short processOffset takes that queue's
    only unit and deletes its only file (the broker's queue after load() maps none), and correctMinOffset sets
    its max to -1, so doRecheckReputOffsetFromCq starts the reput at the other queues' largest offset, below the
    message, and the reput puts its unit back. --as-restart on the store as the restart found it writes the
    broker's files byte for byte, and verify predicts the units it holds."""
    name = f"{line}-dledger-abort-emptied"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    assert r["written"]["queuesAfterLoad"]["T9/0"]["files"] == [], r["written"]["queuesAfterLoad"].get("T9/0")
    src = Path(r["scenario"]["dir"])
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    assert "truncateDirtyLogicFiles cuts the queues" in err and "inside an entry" not in err, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    assert any(u[0] == "T9/0" for u in _units(src / "expected" / "consumequeue"))
    code, report = _verify(bh.copy_store(src / "before", tmp_path / "verify"), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"], report.get("no_prediction")
    put = [u for u in _units(src / "expected" / "consumequeue") if u[2] != 2**31 - 1]
    assert (p["units_dispatched_again"], p["units_lost"]) == (len(put), _queued(r["scenario"]) - len(put)), p


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_as_restart_after_a_crash_whose_cut_empties_a_batch_queue(line, tmp_path):
    """The emptied store with its last message to a BatchCQ topic (B9) of its own, restarted after a crash with
    recheckReputOffsetFromCq=true (5.3.3 with its queues kept: it cuts only when the queues it loads reach
    processOffset): the cut deletes B9's only file and BatchConsumeQueue.truncateDirtyLogicFiles leaves its max at
    processOffset - 1, which its correctMinOffset keeps, above the other queues' max: doRecheckReputOffsetFromCq
    sets the reput there, inside the last entry, and DLedgerCommitLog's message check sends it on. --as-restart
    (5.5.1, from the store without queues) writes the broker's consumequeue/, batchconsumequeue/ and index/
    byte for byte, and verify predicts the units lost and put."""
    name = f"{line}-dledger-abort-emptied-batch" + ("-kept" if line.startswith("5.3") else "")
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    w = r["written"]
    assert w["queuesAfterLoad"]["B9/0"]["files"] == [], w["queuesAfterLoad"].get("B9/0")
    src = Path(r["scenario"]["dir"])
    if not line.startswith("5.3"):
        ours = tmp_path / name
        code, err = _as_restart(src / "before", ours, src, line)
        assert code == 0, err[-2000:]
        assert "processOffset - 1, where a batch queue the cut emptied leaves its max" in err, err[-2000:]
        _same_tree(src / "expected", ours)
        _same_files(src / "expected", ours, "batchconsumequeue")
    code, report = _verify(bh.copy_store(src / "before", tmp_path / "verify"), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    held = 0
    for queue, state in w["queuesAfterDispatch"].items():
        layout, unit = ("batchconsumequeue", 46) if queue.startswith("B9/") else ("consumequeue", 20)
        for f in state["files"]:
            data = (src / "expected" / layout / queue / f).read_bytes()[:max(0, int(state["maxOffset"]) - int(f))]
            held += sum(1 for i in range(0, len(data), unit) if int.from_bytes(data[i + 8:i + 12], "big") != 2**31 - 1)
    assert p["units_lost"] == _queued(r["scenario"]) - held, (held, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", bh.params_or_skip([ln for ln in LINES if ln.startswith("5.3")],
                                                   "5.3.3 only: DLEDGER_LINES=4.9.8,5.3.3,5.5.1"))
def test_verify_predicts_a_crash_restart_whose_reput_starts_inside_an_entry(line, tmp_path):
    """The same store on 5.3.3, restarted with its consume queues kept (5.3.3 cuts only when the queues it loads
    reach processOffset): the emptied queue's max stays processOffset (5.3.3's correctMinOffset leaves a queue
    with no file alone), where doRecheckReputOffsetFromCq sets the reput, inside the last entry's header;
    DLedgerCommitLog's message check fails there and doReput jumps to the end of the committed data: the unit
    stays cut. verify on the store as that restart found it predicts it (the units lost: every sent message
    the broker's queues lack once its reput caught up)."""
    name = f"{line}-dledger-abort-emptied-kept"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    w = r["written"]
    assert w["queuesAfterLoad"]["T9/0"]["files"] == [] and w["queuesAfterDispatch"]["T9/0"]["files"] == [], \
        (w["queuesAfterLoad"].get("T9/0"), w["queuesAfterDispatch"].get("T9/0"))
    src = Path(r["scenario"]["dir"])
    code, report = _verify(bh.copy_store(src / "before", tmp_path / name), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    held = 0
    for queue, state in w["queuesAfterDispatch"].items():
        for f in state["files"]:
            data = (src / "expected" / "consumequeue" / queue / f).read_bytes()
            valid = min(size, int(state["maxOffset"]) - int(f))
            held += sum(1 for i in range(0, valid, 20) if int.from_bytes(data[i + 8:i + 12], "big") != 2**31 - 1)
    lost = _queued(r["scenario"]) - held
    assert p["units_lost"] == lost > 0, (lost, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if not ln.startswith("4")])
def test_crash_restart_whose_reput_set_inside_an_entry_parses_a_message_there(line, tmp_path):
    """The emptied-embedded stores (:func:`broker_dledger_inside_scenarios.emptied_embedded_abort_scenarios`):
    processOffset falls inside a prepared message's body of 'x' bytes, which holds, where the start's reput is set
    (5.5.1: processOffset - 1, the max the emptied batch queue B9 keeps; 5.3.3 with its queues kept: processOffset,
    emptied T9's), a well-formed T5 message.  The broker's reput dispatches it (T5/0's unit: its offset, size, no
    tags code), and its next check, on the 'x' bytes after it, fails: doReput jumps past the rest, so the emptied
    queue's unit stays cut.  --as-restart (5.5.1) reads that message after the walk's records and writes the
    broker's files byte for byte (leaving it out loses T5's queue file); verify (both lines) predicts the units
    lost, T5's not being a message of the log."""
    from broker_dledger_2gib import embedded_message
    from broker_dledger_inside_scenarios import EMBED_HOST_AT, EMBED_PROCESS_OFFSET
    v55 = line.startswith("5.5")
    name = f"{line}-dledger-abort-emptied-{'batch' if v55 else 'kept'}-embedded"
    r, w, src = _written(name)
    reput, emptied = EMBED_PROCESS_OFFSET - v55, "B9/0" if v55 else "T9/0"
    msg = embedded_message(reput)
    # the store as laid out: processOffset inside the prepared body, the message where the reput is set
    assert int(w["truncateDirtyLogicFilesAt"]) == EMBED_PROCESS_OFFSET, w["truncateDirtyLogicFilesAt"]
    (data,) = [f for f in (src / "before" / "dledger-n0" / "data").iterdir() if int(f.name) <= EMBED_HOST_AT
               < int(f.name) + f.stat().st_size and int(f.name) + f.stat().st_size > reput + len(msg)]
    with data.open("rb") as f:
        f.seek(EMBED_HOST_AT - int(data.name))
        body = f.read(reput - EMBED_HOST_AT + len(msg) + 8)
    assert body[:reput - EMBED_HOST_AT] == b"x" * (reput - EMBED_HOST_AT) and \
        body[reput - EMBED_HOST_AT:-8] == msg and body[-8:] == b"x" * 8, "the message at the reput's start"
    assert w["queuesAfterLoad"][emptied]["files"] == [] == w["queuesAfterDispatch"][emptied]["files"], \
        (w["queuesAfterLoad"].get(emptied), w["queuesAfterDispatch"].get(emptied))
    assert [u for u in _units(src / "expected" / "consumequeue") if u[0] == "T5/0"] == [("T5/0", reput, len(msg), 0)]
    if v55:
        code, err = _as_restart(src / "before", tmp_path / name, src, line)
        assert code == 0, err[-2000:]
        assert f"parses 1 message(s) ({reput} to {reput + len(msg)})" in err, err[-2000:]
        _same_tree(src / "expected", tmp_path / name)
        _same_files(src / "expected", tmp_path / name, "batchconsumequeue")
    code, report = _verify(bh.copy_store(src / "before", tmp_path / "verify"), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    held = 0   # the broker's units below each queue's write position, neither fillPreBlank nor T5's
    for queue, state in w["queuesAfterDispatch"].items():
        for f in state["files"] if queue.startswith("T") and queue != "T5/0" else ():
            data_ = (src / "expected" / "consumequeue" / queue / f).read_bytes()
            valid = min(size, int(state["maxOffset"]) - int(f))
            held += sum(1 for i in range(0, valid, 20) if int.from_bytes(data_[i + 8:i + 12], "big") != 2**31 - 1)
    assert p["units_lost"] == _queued(r["scenario"]) - held > 0, (held, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", bh.params_or_skip([ln for ln in LINES if ln.startswith("5.3")],
                                                   "5.3.3 only: DLEDGER_LINES=4.9.8,5.3.3,5.5.1"))
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_message_for_the_queue_the_cut_emptied(
        line, tmp_path, monkeypatch):
    """The emptied-kept-embedded store on 5.3.3 with the well-formed message at processOffset for T9/0 itself (queue
    offset 13), the queue the cut emptied (no file left, its max processOffset: 5.3.3's correctMinOffset leaves it
    alone), whose max sets the reput there: putMessagePositionInfo finds the unit past that max and no file, so
    getLastMappedFile creates the file where its queue offset falls (220, 11 units a file), fillPreBlank fills the
    units before it, and the unit goes there; the next check, on the 'x' bytes, fails and the rest stays cut.
    verify on the store as that restart found it predicts the units lost, and its plan puts the parsed unit where
    the broker did (the file created, the fillPreBlank units before the unit)."""
    from broker_dledger_2gib import embedded_message
    from broker_dledger_inside_scenarios import EMBED_HOST_AT, EMBED_OWN_QUEUE_OFFSET, EMBED_PROCESS_OFFSET

    from store_format.dledger_inside_units import InsideUnit
    from store_format.layout import CQ_UNIT_SIZE
    name = f"{line}-dledger-abort-emptied-kept-embedded-own"
    r, w, src = _written(name)
    reput = EMBED_PROCESS_OFFSET
    msg = embedded_message(reput, topic=b"T9", queue_offset=EMBED_OWN_QUEUE_OFFSET)
    assert int(w["truncateDirtyLogicFilesAt"]) == reput, w["truncateDirtyLogicFilesAt"]
    (data,) = [f for f in (src / "before" / "dledger-n0" / "data").iterdir() if int(f.name) <= EMBED_HOST_AT
               < int(f.name) + f.stat().st_size]
    with data.open("rb") as f:
        f.seek(reput - int(data.name))
        assert f.read(len(msg) + 8) == msg + b"x" * 8, "the T9 message at processOffset, 'x' bytes after it"
    assert w["queuesAfterLoad"]["T9/0"]["files"] == [], w["queuesAfterLoad"].get("T9/0")
    # what the broker wrote: T9/0's one file where queue offset 13 falls, fillPreBlank units, the parsed unit
    first = _parsed_unit_in_a_new_file(r, src, "T9/0", reput, len(msg), EMBED_OWN_QUEUE_OFFSET)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed, at = crash.cut.inside_placed, EMBED_OWN_QUEUE_OFFSET * CQ_UNIT_SIZE
    assert (placed.units, placed.opened, placed.blank_until) == (
        (InsideUnit("T9", 0, at, reput, len(msg), 0),), (("T9", 0, first),), (("T9", 0, at),)), placed
    held = _units_below_write(w, src, (reput,))
    assert p["units_lost"] == _queued(r["scenario"]) - held > 0, (held, p["units_lost"], p["notes"])


@pytest.mark.parametrize("ext", [False, True], ids=["plain", "ext"])
@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_reput_parses_a_message_for_a_cut_queue_then_puts_its_cut_unit_back(line, ext,
                                                                                                tmp_path):
    """The -emptied-batch-embedded store with a last T0/0 message after B9's (both cut) and, where the reput is set
    (processOffset - 1), a well-formed T0/0 message (queue offset 1000) that ends where B9's entry starts (its
    properties swallow the host record's tail): the reput dispatches it into T0/0 as the cut left it
    (putMessagePositionInfo: past the max, appended at the write position whatever its queue offset), goes on at
    B9's entry and dispatches B9's and the last T0/0 message again, whose unit, its queue offset now below the
    write position, is dropped ("build consume queue repeatedly"): it stays cut, the parsed unit where it was.
    --as-restart on the store as the restart found it writes the broker's files byte for byte, and verify predicts
    the units lost.  ``ext`` (-to-entry-ext, enableConsumeQueueExt): the parsed unit's ext unit goes after the
    walk's, the one the reput puts for the last T0/0 message (then dropped) after it; consumequeue_ext/ compared
    too."""
    from broker_dledger_inside_scenarios import (
        EMBED_HOST_AT,
        EMBED_HOST_BODY,
        TO_ENTRY_HOST_TAIL,
        embedded_to_entry_message,
    )
    name = f"{line}-dledger-abort-emptied-batch-embedded-to-entry" + ("-ext" if ext else "")
    r, w, src = _written(name)
    msg = embedded_to_entry_message()
    host_end = EMBED_HOST_AT + EMBED_HOST_BODY + len(TO_ENTRY_HOST_TAIL)
    reput = host_end - len(msg)
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    (data,) = [f for f in (src / "before" / "dledger-n0" / "data").iterdir() if int(f.name) <= reput
               < int(f.name) + f.stat().st_size]
    with data.open("rb") as f:
        f.seek(reput - int(data.name))
        assert f.read(len(msg)) == msg, "the T0/0 message from the reput's start to B9's entry"
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    state = w["queuesAfterDispatch"]["T0/0"]
    units = []
    for f in state["files"]:
        b = (src / "expected" / "consumequeue" / "T0" / "0" / f).read_bytes()[:max(0, int(state["maxOffset"]) - int(f))]
        units += [(int.from_bytes(b[i:i + 8], "big"), int.from_bytes(b[i + 8:i + 12], "big"))
                  for i in range(0, min(size, len(b)), 20)]
    tail = int(w["maxPhyOffset"]) - 300   # the last T0/0 message (300 bytes), the log's last
    assert units[-1] == (reput, len(msg)) and all(o != tail for o, _ in units), units[-3:]
    _restart_as_the_broker(src, name, line, tmp_path, ext=ext)
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput,))


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_reput_parses_a_message_for_a_light_queue_the_walk_wrote(line, tmp_path):
    """The -emptied-batch-embedded store with multi-dispatch on, three puts of the last data file below
    processOffset also to the light queue %LMQ%q1 (light queue offsets 0-2), a last T0/0 message after B9's also
    to it (light queue offset 3; both its units cut), and where the reput is set (processOffset - 1) a well-formed
    T5/0 message also for %LMQ%q1 (light queue offset 7), then 'x' bytes: ConsumeQueue.multiDispatchLmqQueue puts
    its light unit by putMessagePositionInfo into %LMQ%q1 as the cut left it: past the max, appended at the write
    position (the fourth unit, over the cut one's bytes) whatever its queue offset; the last message's units stay
    cut. --as-restart writes the broker's files byte for byte, verify predicts the units lost."""
    from broker_dledger_inside_scenarios import LIGHT_PUTS, LIGHT_TAIL, embedded_light_message
    name = f"{line}-dledger-abort-emptied-batch-embedded-light"
    r, w, src = _written(name)
    reput, msg = embedded_light_message()
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    with data[-1].open("rb") as f:
        f.seek(reput - int(data[-1].name))
        assert f.read(len(msg) + 8) == msg + b"x" * 8, "the T5/0 and %LMQ%q1 message at the reput's start"
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    state = w["queuesAfterDispatch"]["%LMQ%q1/0"]
    units = []
    for f in state["files"]:
        b = (src / "expected" / "consumequeue" / "%LMQ%q1" / "0" / f).read_bytes()
        b = b[:max(0, int(state["maxOffset"]) - int(f))]
        units += [(int.from_bytes(b[i:i + 8], "big"), int.from_bytes(b[i + 8:i + 12], "big"))
                  for i in range(0, min(size, len(b)), 20)]
    assert len(units) == len(LIGHT_PUTS) + 1 and units[-1] == (reput, len(msg)) and \
        all(int(data[-1].name) <= o < reput for o, _ in units[:-1]), units
    _restart_as_the_broker(src, name, line, tmp_path)
    code, report = _verify(bh.copy_store(src / "before", tmp_path / "verify"), src, line)
    p = report["restart"]
    assert p is not None and p["dledger"] and not report["restart_note"], report.get("restart_note")
    held = _units_below_write(w, src, (reput,))   # neither fillPreBlank nor the parsed ones
    assert int(w["maxPhyOffset"]) - LIGHT_TAIL not in [o for o, _ in units], "the last message's light unit put back"
    sent = _queued(r["scenario"]) + len(LIGHT_PUTS) + 1   # a unit each, a light one more for four
    assert p["units_lost"] == sent - held > 0, (held, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_verify_predicts_a_crash_restart_whose_reput_parses_a_message_for_a_kept_queue_the_cut_emptied(
        line, tmp_path, monkeypatch):
    """The -emptied-batch-embedded store with a last message to T8/0, a queue of its own, restarted with its
    queues kept: the cut at processOffset empties T8/0 (on disk before the walk; no file left, correctMinOffset
    sets its max to -1), and the well-formed T8/0 message (queue offset 13) where the reput is set (processOffset -
    1, B9's max) gets a file where its queue offset falls (220), two fillPreBlank units before it; the 'x' bytes
    after it send the reput past the rest. verify on the store as that restart found it predicts the units lost,
    and its plan puts the parsed unit where the broker did."""
    from broker_dledger_2gib import embedded_message
    from broker_dledger_inside_scenarios import EMBED_OWN_QUEUE_OFFSET, EMBED_PROCESS_OFFSET, TO_ENTRY_TAIL_BODY

    from store_format.dledger_inside_units import InsideUnit
    from store_format.layout import CQ_UNIT_SIZE
    name = f"{line}-dledger-abort-emptied-batch-embedded-own-kept"
    r, w, src = _written(name)
    reput = EMBED_PROCESS_OFFSET + 88 + TO_ENTRY_TAIL_BODY + 3 + 2 + 46 - 1
    msg = embedded_message(reput, topic=b"T8", queue_offset=EMBED_OWN_QUEUE_OFFSET)
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    with data[-1].open("rb") as f:
        f.seek(reput - int(data[-1].name))
        assert f.read(len(msg) + 8) == msg + b"x" * 8, "the T8 message at processOffset - 1, 'x' bytes after it"
    assert any((src / "before" / "consumequeue" / "T8" / "0").iterdir()), "T8/0 not on disk before the restart"
    assert w["queuesAfterLoad"]["T8/0"]["files"] == [], w["queuesAfterLoad"].get("T8/0")
    first = _parsed_unit_in_a_new_file(r, src, "T8/0", reput, len(msg), EMBED_OWN_QUEUE_OFFSET)
    p, crash = _verify_with_plan(monkeypatch, bh.copy_store(src / "before", tmp_path / name), src, line)
    placed, at = crash.cut.inside_placed, EMBED_OWN_QUEUE_OFFSET * CQ_UNIT_SIZE
    assert (placed.units, placed.opened, placed.blank_until) == (
        (InsideUnit("T8", 0, at, reput, len(msg), 0),), (("T8", 0, first),), (("T8", 0, at),)), placed
    held = _units_below_write(w, src, (reput,))
    assert p["units_lost"] == _queued(r["scenario"]) - held > 0, (held, p["units_lost"], p["notes"])


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.5")])
def test_crash_restart_whose_reput_parses_messages_for_queues_the_walk_wrote_in_its_earlier_data_file(
        line, tmp_path):
    """The -emptied-batch-embedded store with messageIndexSafe=true and the checkpoint's indexMsgTimestamp before
    the last data file's first message, so that the crash recovery's walk starts at the first of its two data files
    while the cut still happens, with two messages of that file sent to T7/0 and T6/0 and a last T6/0 message after
    B9's (cut), and where the reput is set (processOffset - 1) two well-formed messages, for T7/0 (queue offset 3: a
    queue the walk wrote in its earlier data file only, which the cut leaves as it was) and T6/0 (queue offset 7:
    its unit below processOffset in that earlier file, the cut's write position at the last T6/0 unit), then 'x'
    bytes: the broker appends each at its queue's write position (past the max; "logic queue order maybe wrong"),
    over T6/0's cut unit, which stays cut. --as-restart writes the broker's files byte for byte, verify predicts
    the units lost."""
    from broker_dledger_inside_scenarios import embedded_earlier_messages
    name = f"{line}-dledger-abort-emptied-batch-embedded-earlier"
    r, w, src = _written(name)
    reput, run = embedded_earlier_messages()
    half = len(run) // 2
    assert int(w["truncateDirtyLogicFilesAt"]) == reput + 1, w["truncateDirtyLogicFilesAt"]
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert len(data) == 2 and int(data[1].name) <= reput, data
    with data[1].open("rb") as f:
        f.seek(reput - int(data[1].name))
        assert f.read(len(run) + 8) == run + b"x" * 8, "the T7/0 and T6/0 messages at the reput's start"
    size = int(r["scenario"]["config"]["mappedFileSizeConsumeQueue"])
    held: dict[str, list[tuple[int, int]]] = {}
    for queue in ("T7/0", "T6/0"):
        state = w["queuesAfterDispatch"][queue]
        held[queue] = []
        for f in state["files"]:
            b = (src / "expected" / "consumequeue" / queue / f).read_bytes()[:max(0, int(state["maxOffset"]) - int(f))]
            held[queue] += [(int.from_bytes(b[i:i + 8], "big"), int.from_bytes(b[i + 8:i + 12], "big"))
                            for i in range(0, min(size, len(b)), 20)]
    t7, t6 = held["T7/0"], held["T6/0"]
    assert (t7[1:], t6[1:]) == ([(reput, half)], [(reput + half, half)]), (t7, t6)
    assert t7[0][0] < int(data[1].name) and t6[0][0] < int(data[1].name), "not written in the first data file"
    code, err = _as_restart(src / "before", tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    assert f"dispatches every entry from data file {data[0].name} " in err, err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    _same_files(src / "expected", tmp_path / name, "batchconsumequeue")
    _verify_loses_as_the_broker(r, src, line, tmp_path, (reput, reput + half))


@pytest.mark.parametrize("line", LINES)
def test_as_restart_after_a_crash_before_the_first_start_with_dledger(line, tmp_path):
    """A store of an ordinary commitlog whose broker crashed (an abort file), restarted with DLedger on: no
    dledger-n0/ yet, so DLedgerCommitLog recovers the old files with the base CommitLog's recovery (5.x the
    abnormal one, which dispatches from the file the checkpoint matches; 4.9.8 the normal one, whatever the abort
    file says) and creates its first data file after them. --as-restart on the store as the restart found it
    writes the broker's files byte for byte, and verify predicts what it put and lost."""
    name = f"{line}-dledger-abort-first-start"
    r = _RUNS[name]
    assert r["written"].get("ok"), r["written"].get("error")
    src = Path(r["scenario"]["dir"])
    before = src / "before"
    assert (before / "abort").is_file() and not (before / "dledger-n0").exists()
    legacy = sorted((before / "commitlog").iterdir())
    assert r["written"]["dividedCommitlogOffset"] == int(legacy[-1].name) + legacy[-1].stat().st_size
    code, err = _as_restart(before, tmp_path / name, src, line)
    assert code == 0, err[-2000:]
    assert "no DLedger data file yet" in err and ("as a restart: normal recovery" in err) == line.startswith("4"), \
        err[-2000:]
    _same_tree(src / "expected", tmp_path / name)
    code, report = _verify(bh.copy_store(before, tmp_path / "verify"), src, line)
    p = report["restart"]
    assert code == 1 and p is not None, report.get("no_prediction")
    put = [u for u in _units(src / "expected" / "consumequeue") if u[2] != 2**31 - 1]
    again = p["units_dispatched_again"] + p["units_appended_by_recovery"]
    assert 0 < len(put) and (again, p["units_lost"]) == (len(put), _queued(r["scenario"]) - len(put)), p
    assert (p["units_appended_by_recovery"] == 0) == line.startswith("4"), p   # 4.9.8: the normal recovery

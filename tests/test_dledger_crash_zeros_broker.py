"""5.5.1 DLedger crash restarts whose store holds, when it restarts, a consume queue of one file of zeros (units that
never reached the disk: an OS crash) for a queue the recovery's walk writes into, checked against the broker.

The ``-small-zeros`` stores are ``-dledger-abort-small`` (:func:`broker_dledger_scenarios.small_abort_scenarios`: 200
small messages over two data files, the walk from the last one, the cut at its short ``processOffset``, the start's
reput from the cut queues' largest max with ``recheckReputOffsetFromCq=true``), its queue folders deleted before the
restart and one file of zeros planted (``plantFiles``):

* ``-zeros-kept``: ``consumequeue/T0/0/00000000000000000000``.  ``ConsumeQueue.recover`` keeps that file empty (max
  -1, write position 0); ``putMessagePositionInfo`` appends the walk's first T0/0 unit (queue offset past 0) at byte 0:
  the file was not created in this run (``MappedFile.isFirstCreateInQueue`` false), so no ``fillPreBlank`` units
  before it; the others follow it, the cut keeps those below ``processOffset`` and the reput appends the cut ones
  after them.
* ``-zeros-emptied``: the log's last message and one of the first data file sent to T9/0 instead (the same topic
  length, the same layout), ``consumequeue/T9/0/00000000000000000000`` planted.  The walk's only T9/0 unit (queue
  offset 1, past ``processOffset``) goes at 0, the cut deletes the file (every file gone: max -1 after
  ``correctMinOffset``), and the reput from the other queues' largest max puts every cut unit back, T9/0's into a new
  file with one ``fillPreBlank`` unit before it.  Without the file (the walk creating it, ``fillPreBlank`` at 0) the cut
  keeps that unit, max 2147483647, and the reput starts there: nothing is put back.
* ``-zeros-uncut-emptied`` (full suite): ``-zeros-emptied`` with the checkpoint's logicsPhysicalOffset at the last
  data file's first message: the walk from there, no cut; T9/0's unit (queue offset 1) stays at 0.

``verify`` on the store as the restart found it (``QueuesOnDisk.zeros_queues``: such a queue is a queue on disk whose
walk's units ``dispatch_units`` puts from 0) predicts the units lost, queue by queue, and the index keys put again as
the broker's files hold them.  On 5.3.3 (``DLEDGER_LINES=5.3.3,5.5.1``) the same stores' walk starts at the first data
file (the planted queue's first unit, queue offset 0, at byte 0 as its offset says) and nothing is cut; ``verify``
predicts those too.

``-zeros-before`` (:func:`zeros_before_scenario`), the shape of the 2 GiB ``-past-2gib-before-t9-first-on-disk-zeros``
on an ordinary log: the last data file holds prepared transaction messages (no queue unit) and then one T9/0 message
past ``processOffset`` (queue offset 3, its first three in the first data file), ``consumequeue/T9/0/0`` planted all
zeros.  The walk puts that unit at 0, the cut deletes the file, no queue keeps a max, and the reput starts at the
commitlog's min offset, 0, before the walk's data file: it writes every queue from its start, indexing none of the
first data file's records (below the walk's last indexed one).  ``verify`` predicts it (``DLedgerCrash.anew``: the
units from the reput's start, the keys from the walk's).
"""
from __future__ import annotations

import base64
import contextlib
import io
import json
from collections import Counter
from pathlib import Path

import broker_harness as bh
import pytest
from broker_dledger_2gib import BLANK_MAX, FILL_PRE_BLANK_UNIT, held_units, queued_messages
from broker_dledger_files import walk_from_first_data_file
from broker_dledger_scenarios import THOROUGH_CHECKPOINT, Messages, config, small_abort_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
# 5.5.1 by default; DLEDGER_LINES=5.3.3,5.5.1 adds 5.3.3 (its walk starts at the first data file there: each queue's
# first unit, queue offset 0, at byte 0 anyway, and no cut)
LINES = [ln for ln in bh.lines_from_env("DLEDGER_LINES", LINE) if ln.startswith(("5.3", "5.5"))]
# -zeros-emptied: the messages sent to T9/0, one of the first data file and the log's last one
T9_MESSAGES = (10, 199)


def zeros_scenarios(line: str) -> list[dict]:
    """``<line>-dledger-abort-small-zeros-kept`` and ``-zeros-emptied`` (module docstring)."""
    sc = small_abort_scenarios(line)[0]
    zeros = base64.b64encode(bytes(int(sc["config"]["mappedFileSizeConsumeQueue"]))).decode()
    t9 = [{**m, "topic": "T9", "queueId": 0} if i in T9_MESSAGES else m for i, m in enumerate(sc["messages"])]
    return [{**sc, "name": f"{sc['name']}-zeros-kept", "plantFiles": {f"consumequeue/T0/0/{0:020d}": zeros}},
            {**sc, "messages": t9, "name": f"{sc['name']}-zeros-emptied",
             "plantFiles": {f"consumequeue/T9/0/{0:020d}": zeros}}]


def zeros_before_scenario(line: str) -> dict:
    """``<line>-dledger-abort-zeros-before`` (module docstring): 30 messages of 1.2-1.8 KiB to T0/0 (three of them,
    5, 15 and 25, to T9/0) in the first data file, then 40 prepared transaction messages, the last ones in the second
    data file, then a small T9/0 message; consume queue files of 11 units, T9/0's first one planted all zeros."""
    g = Messages(7, ["T0"])
    first = [{**g.one(), "queueId": 0, "body": g.body(1200, 1800), "keys": f"k{i}",
              **({"topic": "T9"} if i in (5, 15, 25) else {})} for i in range(30)]
    prepared = [{**g.one(), "queueId": 0, "body": g.body(500, 700), "keys": f"p{i}", "tranType": "prepared"}
                for i in range(40)]
    last = {**g.one(), "topic": "T9", "queueId": 0, "body": g.body(40, 60), "keys": "last"}
    conf = {**config(line), **THOROUGH_CHECKPOINT, "mappedFileSizeConsumeQueue": "220"}
    return {"config": conf, "messages": [*first, *prepared, last], "abort": True, "reportQueues": True,
            "plantFiles": {f"consumequeue/T9/0/{0:020d}": base64.b64encode(bytes(220)).decode()},
            "name": f"{line}-dledger-abort-zeros-before"}


def _scenarios(line: str) -> list[dict]:
    """The stores of ``line``: the two ``-small-zeros`` ones and ``-zeros-before``; on 5.5.1 also
    ``-small-zeros-uncut-emptied``, ``-zeros-emptied`` with the checkpoint's logicsPhysicalOffset set at the last data
    file's first message (the walk from there, no cut: ``processOffset`` lies past it)."""
    out = [*zeros_scenarios(line), zeros_before_scenario(line)]
    if line.startswith("5.5"):
        emptied = out[1]
        out.append({**emptied, "name": emptied["name"].replace("-zeros-", "-zeros-uncut-"),
                    "checkpointLogicsPhysicalOffset": {"set": 65536 + 48}})
    return out


SCENARIOS = {ln: bh.bounded(_scenarios(ln), full_only=("-zeros-kept", "-zeros-uncut-emptied")) for ln in LINES}
STORES = bh.Stores(SCENARIOS, "DLedger crash restarts with a consume queue file of zeros on disk", threads=1)
_RUNS: dict[str, dict] = {}


@pytest.fixture
def written(request):  # noqa: ANN001, ANN201
    return bh.written_once(request, _RUNS, STORES, every=True)


def _run(written: dict, name: str) -> dict:
    """The run of store ``name``, or a skip saying how to have it written."""
    if name not in written:
        pytest.skip(f"{name}: PIPELINES_FULL_SUITE=1 (the -zeros-kept and -zeros-uncut stores), DLEDGER_LINES (a line)")
    return written[name]


def _units(src, queue: str, end: int) -> list[tuple[int, int]]:  # noqa: ANN001
    """The broker's units of ``queue`` after its restart (commitlog offset, size) below queue byte ``end``."""
    folder = src / "expected" / "consumequeue" / queue
    out = []
    for f in sorted(folder.iterdir()):
        b = f.read_bytes()
        out += [(int.from_bytes(b[i:i + 8], "big"), int.from_bytes(b[i + 8:i + 12], "big"))
                for i in range(0, min(len(b), end - int(f.name)), 20)]
    return out


def _verify(src, tmp_path, line: str = LINE) -> dict:  # noqa: ANN001
    """``verify --json`` of ``src/before``: its report (``restart``: the next-start prediction, None with a
    ``restart_note``)."""
    from pipelines.cli import main
    out = io.StringIO()
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(out):
        main(["verify", "--store", str(src / "before"), "--config", str(src / "broker.conf"), "--broker-version",
              bh.BROKER_VERSION_ARG[line], "--engine", "local", "--work", str(tmp_path / "verify"), "--json"])
    return json.loads(out.getvalue())


def _zeros_planted(src, queue: str) -> None:  # noqa: ANN001
    """The store as the restart found it: ``queue``'s one file of zeros, no other queue file."""
    files = [p.relative_to(src / "before").as_posix() for p in (src / "before" / "consumequeue").rglob("*")
             if p.is_file()]
    assert files == [f"consumequeue/{queue}/{0:020d}"], files
    assert not any((src / "before" / files[0]).read_bytes())


def units_lost_as_the_broker(src, tmp_path, sc: dict, ends: dict, line: str) -> dict:  # noqa: ANN001
    """``verify`` on ``src/before``: its prediction, whose units lost (all queues, and queue by queue) are those the
    broker's restart left out: the scenario's messages less the units its queues hold (``ends``: the broker's
    ``queuesAfterDispatch``)."""
    got = _verify(src, tmp_path, line)
    p = got["restart"]
    assert p is not None, got.get("restart_note")
    held = held_units(src, ends=ends)
    assert p["units_lost"] == queued_messages(sc) - held, (queued_messages(sc), held, p["notes"])
    per = Counter(f"{m['topic']}/{m['queueId']}" for m in sc["messages"] if m.get("tranType") != "prepared")
    lost = {q["queue"]: q["units_lost"] for q in p["queues"]}
    for name, v in ends.items():
        n = sum(s not in (0, BLANK_MAX) for _o, s in _units(src, name, int(v["maxOffset"])))
        assert lost.get(name, 0) == per[name] - n, (name, lost.get(name), per[name], n)
    return p


def _verify_as_the_broker(src, tmp_path, sc: dict, w: dict, queue: str,  # noqa: ANN001
                          line: str = LINE) -> dict:
    """``verify`` on ``src/before``: the units lost (all queues, and ``queue``'s) and the index keys put again as the
    broker's files hold them; its prediction."""
    p = units_lost_as_the_broker(src, tmp_path, sc, w["queuesAfterDispatch"], line)
    lost = {q["queue"]: q["units_lost"] for q in p["queues"]}
    keys = sum(int.from_bytes(f.read_bytes()[36:40], "big") - 1 for f in (src / "expected" / "index").iterdir())
    assert p["index_keys_put_again"] == keys, (keys, p["index_keys_put_again"], p["notes"])
    assert queue in lost
    return p


def test_the_walk_appends_from_byte_0_of_a_file_of_zeros(written, tmp_path):
    """``-zeros-kept`` (full suite): the broker's T0/0 after the load (the walk and the cut) is the planted file holding
    the walk's T0/0 units below ``processOffset`` from byte 0, no ``fillPreBlank`` unit, though the first one's queue
    offset is past 0 (the queue had messages in the first data file, not walked); after the reput the cut ones follow
    them.  ``verify`` predicts the units lost and the index keys put again as the broker's files hold them."""
    r = _run(written, f"{LINE}-dledger-abort-small-zeros-kept")
    sc, w, src = r["scenario"], r["written"], Path(r["scenario"]["dir"])
    _zeros_planted(src, "T0/0")
    po = int(w["truncateDirtyLogicFilesAt"])
    walk_from = int(sorted((src / "before" / "dledger-n0" / "data").iterdir())[-1].name)
    load, after = w["queuesAfterLoad"]["T0/0"], w["queuesAfterDispatch"]["T0/0"]
    units = _units(src, "T0/0", int(after["maxOffset"]))
    assert units and all(s not in (0, BLANK_MAX) and o >= walk_from for o, s in units), units
    assert [o for o, _s in units] == sorted(o for o, _s in units)
    t0 = sum(m["topic"] == "T0" and m["queueId"] == 0 for m in sc["messages"])
    assert len(units) < t0, "the first unit's queue offset is past 0, at byte 0"
    below = [(o, s) for o, s in units if o < po]
    assert below and len(below) < len(units), (po, units)
    assert (load["files"], int(load["maxOffset"]), int(load["maxPhysicOffset"])) == (
        [f"{0:020d}"], 20 * len(below), below[-1][0] + below[-1][1]), (load, below)
    _verify_as_the_broker(src, tmp_path, sc, w, "T0/0")


def test_the_cut_deletes_a_file_of_zeros_the_walk_wrote_at_0(written, tmp_path):
    """``-zeros-emptied``: the broker's walk put T9/0's unit (queue offset 1, past ``processOffset``) at 0 of the
    planted file, the cut deleted it (T9/0 after the load: no file, max -1), and the reput from the other queues'
    largest max put every cut unit back, T9/0's after one ``fillPreBlank`` unit in a new file.  ``verify`` predicts
    the units lost (T9/0's first-file unit, not walked) and the index keys put again as the broker's files hold
    them."""
    r = _run(written, f"{LINE}-dledger-abort-small-zeros-emptied")
    sc, w, src = r["scenario"], r["written"], Path(r["scenario"]["dir"])
    _zeros_planted(src, "T9/0")
    po = int(w["truncateDirtyLogicFilesAt"])
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    load, after = w["queuesAfterLoad"]["T9/0"], w["queuesAfterDispatch"]["T9/0"]
    assert (int(load["maxPhysicOffset"]), load["files"]) == (-1, []), load
    units = _units(src, "T9/0", int(after["maxOffset"]))
    assert after["files"] == [f"{0:020d}"] and len(units) == 2, (after, units)
    (o, s) = units[1]
    assert units[0] == (0, BLANK_MAX) and (src / "expected" / "consumequeue" / "T9" / "0" / f"{0:020d}").read_bytes(
    )[:20] == FILL_PRE_BLANK_UNIT and o >= po and o >= int(data[-1].name) and int(after["maxPhysicOffset"]) == o + s
    _verify_as_the_broker(src, tmp_path, sc, w, "T9/0")


def test_a_reput_from_before_the_walk_after_a_file_of_zeros_writes_every_queue_anew(written, tmp_path):
    """``-zeros-before``: the broker's walk put T9/0's unit (queue offset 3, past ``processOffset``) at 0 of the planted
    file and the cut deleted it (T9/0 after the load: no file, max -1; no other queue written, the walk's data file
    holding prepared messages before it), so the reput started at 0, before the walk's data file, and wrote T0/0 and
    T9/0 from their starts, every unit at its own queue offset: none lost; the index holds the walk's keys (the
    reput's records below its last indexed one skipped by ``buildIndex``).  ``verify`` predicts the units lost (from
    the reput's start, 0) and the index keys put again (from the walk's start) as the broker's files hold them
    (``DLedgerCrash.anew``)."""
    r = _run(written, f"{LINE}-dledger-abort-zeros-before")
    sc, w, src = r["scenario"], r["written"], Path(r["scenario"]["dir"])
    _zeros_planted(src, "T9/0")
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    po = int(w["truncateDirtyLogicFilesAt"])
    assert len(data) == 2 and int(data[1].name) < po, (data, po)
    assert w["queuesAfterLoad"] == {"T9/0": {**w["queuesAfterLoad"]["T9/0"], "maxPhysicOffset": -1, "files": []}}, \
        w["queuesAfterLoad"]
    for queue in ("T0/0", "T9/0"):   # every message's unit, at its queue offset, from byte 0
        mine = [m for m in sc["messages"] if f"{m['topic']}/{m['queueId']}" == queue and "tranType" not in m]
        units = _units(src, queue, int(w["queuesAfterDispatch"][queue]["maxOffset"]))
        assert len(units) == len(mine) and all(s not in (0, BLANK_MAX) for _o, s in units), (queue, units)
        assert [o for o, _s in units] == sorted(o for o, _s in units) and units[0][0] < int(data[1].name)
    t9 = _units(src, "T9/0", int(w["queuesAfterDispatch"]["T9/0"]["maxOffset"]))
    assert t9[-1][0] >= po, (t9, po)
    # the broker's index: keys of the walk's records only (the reput from 0 put none of the first data file's, below
    # the endPhyOffset the walk left)
    from pipelines.verify.compare import IndexView
    offsets = [o for f in (src / "expected" / "index").iterdir() for v in [IndexView.parse(
        f.read_bytes(), int(sc["config"]["maxHashSlotNum"]), int(sc["config"]["maxIndexNum"]))]
        for o in v.entries["commitlogOffset"][1:v.header["index_count"]].tolist()]
    assert offsets and min(offsets) >= int(data[1].name), (min(offsets, default=None), data[1].name)
    _verify_as_the_broker(src, tmp_path, sc, w, "T9/0")


def test_without_the_cut_the_walk_s_units_stay_from_byte_0(written, tmp_path):
    """``-small-zeros-uncut-emptied`` (full suite): the checkpoint behind ``processOffset``, so no cut; the broker's
    T9/0 after the load is the planted file holding the walk's unit (queue offset 1, the log's last message) at 0, no
    ``fillPreBlank`` unit, and the reput adds nothing.  ``verify`` predicts the units lost and the index keys put
    again as the broker's files hold them."""
    r = _run(written, f"{LINE}-dledger-abort-small-zeros-uncut-emptied")
    sc, w, src = r["scenario"], r["written"], Path(r["scenario"]["dir"])
    _zeros_planted(src, "T9/0")
    data = sorted((src / "before" / "dledger-n0" / "data").iterdir())
    assert int(w["truncateDirtyLogicFilesAt"]) == -1, w["truncateDirtyLogicFilesAt"]
    load = w["queuesAfterLoad"]["T9/0"]
    units = _units(src, "T9/0", int(w["queuesAfterDispatch"]["T9/0"]["maxOffset"]))
    assert (load["files"], int(load["maxOffset"])) == ([f"{0:020d}"], 20) and len(units) == 1, (load, units)
    (o, s), = units
    assert o >= int(data[-1].name) and int(load["maxPhysicOffset"]) == o + s == int(w["maxPhyOffset"]), (load, units)
    _verify_as_the_broker(src, tmp_path, sc, w, "T9/0")


@pytest.mark.parametrize("line", [ln for ln in LINES if ln.startswith("5.3")] or [pytest.param(
    "5.3.3", marks=pytest.mark.skip(reason="5.3.3: DLEDGER_LINES=5.3.3,5.5.1"))])
def test_533_walks_from_the_first_data_file_onto_a_file_of_zeros(written, tmp_path, line):
    """5.3.3 (``DLEDGER_LINES``): the broker's walk starts at the first data file (``crashWalkStartFile``), so each
    queue's first unit, queue offset 0, goes at byte 0 of the file of zeros as its own offset says, and nothing is cut
    (the loaded queues' max, -1, is below ``processOffset``); the planted queue holds every unit of its messages.
    ``verify`` predicts the units lost and the index keys put again as the broker's files hold them."""
    for sc in SCENARIOS[line]:
        r = written[sc["name"]]
        w, src = r["written"], Path(r["scenario"]["dir"])
        (planted,) = sc["plantFiles"]
        queue = "/".join(planted.split("/")[1:3])
        _zeros_planted(src, queue)
        walk_from_first_data_file(w, src)
        assert int(w["truncateDirtyLogicFilesAt"]) == -1, w
        mine = [m for m in sc["messages"] if f"{m['topic']}/{m['queueId']}" == queue and "tranType" not in m]
        units = _units(src, queue, int(w["queuesAfterDispatch"][queue]["maxOffset"]))
        assert len(units) == len(mine) and all(s not in (0, BLANK_MAX) for _o, s in units), (queue, units)
        _verify_as_the_broker(src, tmp_path / sc["name"], sc, w, queue, line)

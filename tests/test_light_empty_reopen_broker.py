"""A 5.5.1 start whose recovery dispatches records naming an empty queue again over topic ""'s files on disk
(``consumequeue/<queueId>/<file>``, not loaded by the start: :mod:`store_format.empty_topic_restart`), on the store of
tests/test_rocksdb_light_empty_broker.py's ``-light-empty-files`` scenario:

* ``-later``: the queues kept (``keepQueues``), a clean start, the units of every record from put 5 on zeroed in each
  queue on disk (``zeroQueueTail``) so that the queues' max physical offset is put 4's end and
  ``CommitLog.recoverNormally`` dispatches only the records past it: of the empty names only the later ones, the
  requests asking topic "" queue 1 for 9 (put 6) and queue 0 for 5 (put 10).  Each queue is opened afresh over its
  file, and its first put fills the file from its start with blank units (``fillPreBlank``) over the earlier units
  on disk.  Checked: ``verify`` of the store as the start found it (the prediction's topic "" queues and note).
* ``-planted``: the queue folders deleted as usual, files planted in ``consumequeue/0/`` and ``consumequeue/1/``
  (``plantFiles``; shorter than the queue's file size, and a second file of queue 1 that nothing opens), the record
  of the third request damaged so that the recovery cuts before it: the recovery's dispatch writes the first two
  requests' topic "" units over the planted bytes (queue 0's after ``fillPreBlank`` over them), the rest stays.
  Checked: ``rebuild --as-restart`` of the store as the start found it, byte for byte.

Each test first asserts what the broker wrote.  ``PIPELINES_FULL_SUITE=1`` adds 4.9.8's (its put writes
``INNER_MULTI_QUEUE_OFFSET`` itself: 0, 1 for topic ""'s queues) and a 4.9.8 ``-crash`` (a walk dispatching every such
record again, checked by ``verify``).
"""
from __future__ import annotations

import base64
import os
from pathlib import Path

import broker_harness as bh
import numpy as np
import pytest
from broker_empty_request_held import planted_bytes
from test_rocksdb_light_empty_broker import empty_name_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

FULL = os.environ.get("PIPELINES_FULL_SUITE", "") not in ("", "0")
CQ_SIZE = 300_000 * 20   # mappedFileSizeConsumeQueue's default
FIRST, NEXT = f"{0:020d}", f"{CQ_SIZE:020d}"
PLANTED = {f"consumequeue/0/{FIRST}": planted_bytes(200, 1), f"consumequeue/1/{FIRST}": planted_bytes(60, 2),
           f"consumequeue/1/{NEXT}": planted_bytes(40, 3)}
# puts: message 0, then (plain, request) pairs, then a last plain one; per queue, its units of the records from put 5
# on (the messages' queues as the broker's files show them), on 5.x x/0's six blanks before its unit too (a blank unit
# ends at 2147483647: ConsumeQueue.recover would take that as the queue's max physical offset): the queues' max is put
# 4's end; on 4.9.8 put 4's units too, so that it is put 4's offset, where 4.9.8's reput starts (5.5.1's
# recoverNormally would dispatch only the records past it)
LATER = {"5.5.1": (("T0/0", 3), ("T0/1", 2), ("T1/0", 1), ("T1/1", 1), ("x/0", 7), ("%LMQ%a/1", 1)),
         "5.3.3": (("T0/0", 3), ("T0/1", 2), ("T1/0", 1), ("T1/1", 1), ("x/0", 7), ("%LMQ%a/1", 1)),
         "4.9.8": (("T0/0", 3), ("T0/1", 2), ("T1/0", 2), ("T1/1", 1), ("x/0", 7), ("%LMQ%a/1", 1), ("%LMQ%a/0", 1),
                   ("%LMQ%b/0", 1))}
# -later's topic "" queues 1 and 0 after the start: slot -> the request whose record's unit lies there (blank units
# before the first), each queue's (units put, units on disk overwritten) and the files that differ: 5.5.1 put queue 1
# put 6's request (asking for 9) and queue 0 put 10's (asking for 5); 4.9.8, whose put wrote 0 and 1 into the
# records, also put 4's, at 0 (its reput starts at that record)
LATER_AFTER = {"5.5.1": ({9: 2}, {5: 4}, {0: (1, 1), 1: (1, 1)}, 2),
               "5.3.3": ({9: 2}, {5: 4}, {0: (1, 1), 1: (1, 1)}, 2),
               "4.9.8": ({1: 2}, {0: 1, 1: 4}, {0: (2, 0), 1: (1, 1)}, 1)}
PUT_4_AT = {"5.5.1": 4, "5.3.3": 4, "4.9.8": 0}   # where put 4's unit of topic "" queue 0 lies in the store's file


def reopen_scenarios(line: str) -> list[dict]:
    """``-later`` and ``-planted`` (module docstring); on 4.9.8 also ``-crash`` (as
    tests/test_light_empty_restart_broker.py's: an abort file, the last units of T0/0, T0/1, T1/1 and every unit of
    x/0 zeroed)."""
    files = next(sc for sc in empty_name_scenarios(line) if sc["name"].endswith("-files"))
    out = [{**files, "name": f"{files['name']}-later", "keepQueues": True, "keepBefore": True,
            "zeroQueueTail": [{"path": f"consumequeue/{q}", "units": n, "unitSize": 20} for q, n in LATER[line]]},
           {**files, "name": f"{files['name']}-planted", "damageMessage": 6,
            "plantFiles": {rel: base64.b64encode(b).decode() for rel, b in PLANTED.items()}}]
    if line == "4.9.8":
        out.append({**files, "name": f"{files['name']}-crash", "keepQueues": True, "abort": True,
                    "zeroQueueTail": [{"path": f"consumequeue/{q}", "units": n, "unitSize": 20}
                                      for q, n in (("T0/0", 1), ("T0/1", 1), ("T1/1", 1), ("x/0", 7))]})
    return out


# 4.9.8 (PIPELINES_FULL_SUITE=1): its put writes INNER_MULTI_QUEUE_OFFSET itself (0, 1 for topic ""'s queues)
SCENARIOS = {line: reopen_scenarios(line) for line in (("5.5.1", "4.9.8") if FULL else ("5.5.1",))}
LATER_CASES, PLANTED_CASES, CRASH_CASES = ([pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values()
                                            for sc in scs if sc["name"].endswith(end)]
                                           for end in ("-later", "-planted", "-crash"))
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "file queue store(s) whose start reopens topic \"\" files", threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker's restart found it (``before/``) and left it (``expected/``), with our ``verify``
    (queues kept) or ``rebuild --as-restart`` (queues deleted) of ``before/``."""
    return bh.restart_run(request, _RUNS, STORES)


_UNIT = np.dtype([("commitlogOffset", ">i8"), ("size", ">i4"), ("tagsCode", ">i8")])


def _slots(path: Path) -> list[tuple[int, int]]:
    """A consume queue file's units up to its last non-zero one: (commitlog offset, size) each."""
    data = path.read_bytes()
    u = np.frombuffer(data[:len(data) - len(data) % 20], dtype=_UNIT)
    used = np.flatnonzero((u["commitlogOffset"] != 0) | (u["size"] != 0) | (u["tagsCode"] != 0))
    u = u[:int(used[-1]) + 1] if len(used) else u[:0]
    return list(zip(u["commitlogOffset"].tolist(), u["size"].tolist()))


def _units(path: Path) -> dict[int, int]:
    """A consume queue file's message units: slot -> commitlog offset (blank and zeroed ones left out)."""
    u = np.frombuffer((b := path.read_bytes())[:len(b) - len(b) % 20], dtype=_UNIT)
    at = np.flatnonzero((u["size"] != 0) & (u["size"] != 0x7FFFFFFF))
    return dict(zip(at.tolist(), u["commitlogOffset"][at].tolist()))


def broker_topic_empty(d: Path, written: dict) -> tuple[dict[int, tuple[int, int]], int]:
    """What the broker's start did to topic ""'s files, from its own output: per queue id (a folder
    ``consumequeue/<queueId>/`` holding files before the start) the units it put (message units of ``expected/``
    below the queue's max offset after the reput, ``queuesAfterDispatch["/<queueId>"]``) and the units of ``before/``
    no longer there; and how many of those files differ after the start."""
    before, after = d / "before" / "consumequeue", d / "expected" / "consumequeue"
    out, changed = {}, 0
    for folder in sorted(p for p in before.iterdir() if p.name.isdigit()):
        qid = int(folder.name)
        top = written["queuesAfterDispatch"].get(f"/{qid}", {}).get("maxOffset", 0)
        put = lost = 0
        for f in sorted(folder.iterdir()):
            was, now = _units(f), _units(after / folder.name / f.name)
            put += sum(1 for at in now if int(f.name) + 20 * at < top)
            lost += len(set(was.values()) - set(now.values()))
            changed += f.read_bytes() != (after / folder.name / f.name).read_bytes()
        out[qid] = (put, lost)
    return out, changed


def _requests(d: Path) -> list[int]:
    """The requests' records' offsets (put order: message 0, then (plain, request) pairs), walking the commitlog's
    records by their totalSize (one file)."""
    data = (d / "before" / "commitlog" / FIRST).read_bytes()
    at, puts = 0, []
    while at + 8 <= len(data) and int.from_bytes(data[at + 4:at + 8], "big") == 0xDAA320A7:
        puts.append(at)
        at += int.from_bytes(data[at:at + 4], "big")
    assert len(puts) == 12, puts
    return puts[2:11:2]


def _verify_is_the_broker_s(written: dict) -> None:
    """Our ``verify`` of ``before/`` lists each topic "" queue the broker's start put units to or overwrote units of
    (:func:`broker_topic_empty`) with those figures, and its note line names the queues it reopens and how many files
    then differ from the store's."""
    d = Path(written["scenario"]["dir"])
    truth, changed = broker_topic_empty(d, written["written"])
    v = written["verify"]
    assert v["report"] is not None and v["code"] in (0, 1), v["stderr"]
    restart = v["report"]["restart"]
    ours = {int(q["queue"][1:]): (q["units_dispatched_again"], q["units_lost"]) for q in restart["queues"]
            if q["queue"].startswith("/")}
    assert ours == {q: t for q, t in truth.items() if t != (0, 0)}, restart["queues"]
    notes = [n for n in restart["notes"] if n.startswith('topic "" queues')]
    assert len(notes) == 1 and "reopens queue(s) 0, 1" in notes[0], notes
    assert f"{changed} file(s) then differing" in notes[0], notes


@pytest.mark.parametrize("name", LATER_CASES)
def test_a_start_dispatching_the_later_requests_blanks_the_earlier_units(written, name):
    """``-later``, what the broker wrote: the start put topic "" queue 1 put 6's unit only, queue 0 put 10's (and on
    4.9.8, whose reput starts at put 4's record, put 4's first), each after blank units from the file's start
    (``fillPreBlank``) over the earlier units on disk (queue 1's first request's and, on 5.5.1, put 6's own, asked for
    9; on 5.5.1 queue 0's put 4's): :data:`LATER_AFTER`.  Then ``verify`` of ``before/``:
    :func:`_verify_is_the_broker_s`."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    at = _requests(d)
    q1, q0, truth_is, changed_is = LATER_AFTER[written["line"]]
    cq, was = d / "expected" / "consumequeue", d / "before" / "consumequeue"
    assert set(_units(was / "1" / FIRST).values()) == {at[0], at[2]}, _units(was / "1" / FIRST)
    assert _units(was / "0" / FIRST) == {PUT_4_AT[written["line"]]: at[1], PUT_4_AT[written["line"]] + 1: at[4]}
    for qid, slots in ((1, q1), (0, q0)):
        assert _units(cq / str(qid) / FIRST) == {k: at[r] for k, r in slots.items()}, _slots(cq / str(qid) / FIRST)
        assert [u[1] for u in _slots(cq / str(qid) / FIRST)[:min(slots)]] == [0x7FFFFFFF] * min(slots)
    assert {q: s["maxOffset"] for q, s in w["queuesAfterDispatch"].items() if q.startswith("/")} == \
        {"/0": 20 * (max(q0) + 1), "/1": 20 * (max(q1) + 1)}
    truth, changed = broker_topic_empty(d, w)
    assert truth == truth_is and changed == changed_is, (truth, changed)
    _verify_is_the_broker_s(written)


@pytest.mark.parametrize("name", CRASH_CASES)
def test_a_crash_walk_writes_every_unit_back(written, name):
    """``-crash`` on 4.9.8, what the broker wrote: ``recoverAbnormally``'s walk dispatched every empty-name record
    again, topic "" queues 0 and 1 each two units at 0 and 1, the files as they were.  Then ``verify``:
    :func:`_verify_is_the_broker_s`."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    assert {q: s["maxOffset"] for q, s in w["queuesAfterLoad"].items() if q.startswith("/")} == {"/0": 40, "/1": 40}
    truth, changed = broker_topic_empty(d, w)
    assert truth == {0: (2, 0), 1: (2, 0)} and changed == 0, (truth, changed)
    _verify_is_the_broker_s(written)


@pytest.mark.parametrize("name", PLANTED_CASES)
def test_as_restart_writes_the_start_s_units_over_planted_files(written, name):
    """``-planted``, what the broker wrote: topic "" queue 1's file holds the first request's unit at 0 and the
    planted bytes after it, queue 0's put 4's unit (5.5.1: after four blank units, at 4; 4.9.8: at 0) over the planted
    bytes, the rest of them after; both grown to the queue's file size with zeros; queue 1's second file (nothing
    opened it) as planted.  Then ``rebuild --as-restart`` of ``before/``: every consume queue and index file the
    broker's, byte for byte."""
    d = Path(written["scenario"]["dir"])
    at = _requests(d)
    slot = PUT_4_AT[written["line"]]
    cq = d / "expected" / "consumequeue"
    q0, q1 = (cq / "0" / FIRST).read_bytes(), (cq / "1" / FIRST).read_bytes()
    assert len(q0) == len(q1) == CQ_SIZE
    assert [u[1] for u in _slots(cq / "0" / FIRST)[:slot]] == [0x7FFFFFFF] * slot
    assert int.from_bytes(q0[20 * slot:20 * slot + 8], "big") == at[1], _slots(cq / "0" / FIRST)[:6]
    assert q0[20 * slot + 20:200] == PLANTED[f"consumequeue/0/{FIRST}"][20 * slot + 20:]
    assert not q0[200:].strip(b"\0")
    assert int.from_bytes(q1[:8], "big") == at[0] and q1[20:60] == PLANTED[f"consumequeue/1/{FIRST}"][20:]
    assert not q1[60:].strip(b"\0")
    assert (cq / "1" / NEXT).read_bytes() == PLANTED[f"consumequeue/1/{NEXT}"]
    bh.restart_files_are_the_broker_s(written)

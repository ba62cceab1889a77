"""The 4.9.8 start's reput after a crash walk (``CommitLog.recoverAbnormally``) over topic ""'s consume queue files
(``consumequeue/<queueId>/<file>``: multi-dispatch requests naming an empty queue, ``ConsumeQueue.
multiDispatchLmqQueue``), where the own queues' max physical offset after ``truncateDirtyLogicFiles`` lies before an
empty-name record the walk dispatched.

``-small``: consume queue files of two units (``mappedFileSizeConsumeQueue=40``); puts m0 (T1/0), R0 (T0/0, a request
``",%LMQ%a"``), p1 (T1/1), R (T0/0, the same request), D (T1/1, damaged: the walk stops there) and N (T0/0, the same
request); the files of T0/0 and %LMQ%a/0 holding N's unit (their second, ``00000000000000000040``) planted as zeros.
The queues kept, an abort file.  The walk dispatches m0, R0, p1 and R (the own and light units already there, topic ""
queue 0 opened afresh over its held file, R0 and R put at 0 and 1) and stops at D; the loaded queues' max (D's unit)
is past that, so ``truncateDirtyLogicFiles(D)`` runs over every queue: T0/0 and %LMQ%a/0 read their last file, zeros
(max 0), T1/1 keeps p1 (max: R's offset).  So the own queues' max lies at R, which the walk dispatched.  But
``DefaultMessageStore.start`` takes the max over the whole queue table: topic "" queue 0 the walk opened (max: R's
end), and the queues ``loadConsumeQueue`` made of the held files (topic "0" queues 0 and 40, no file: the truncate
leaves their max at its offset, D): the reput starts at D and dispatches nothing again.

``-small-clean``: the same store without the abort file: ``recoverNormally`` dispatches nothing and truncates at D
too, so the own queues' max is R again, and the reput would dispatch R (a first topic "" unit of queue offset 1:
``fillPreBlank`` over R0's) but for topic "0"'s queues: it starts at D.

What the broker wrote first (its queue table after the load, where it truncated, the topic "" files), then
``verify`` of the store as the start found it: topic "" queue 0 predicted (2 units put, none lost, the files as
they were), no "not predicted" note (:func:`store_format.empty_topic_restart.reput_again_queues`), the reput from D.
``PIPELINES_FULL_SUITE=1`` adds ``-planted-crash``: ``rebuild --as-restart`` after a crash walk over planted topic ""
files, byte for byte.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
import test_light_empty_reopen_broker as reopen
from broker_layout_scenarios import Messages
from test_light_empty_reopen_broker import _units, broker_topic_empty

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "4.9.8"
CQ_SIZE = 40
FIRST, SECOND = f"{0:020d}", f"{CQ_SIZE:020d}"
REQUEST = {"INNER_MULTI_DISPATCH": ",%LMQ%a", "INNER_MULTI_QUEUE_OFFSET": "0,0"}
DAMAGED = 4   # D, the fifth put


def _messages() -> list[dict]:
    """m0, R0, p1, R, D, N (module docstring)."""
    g = Messages(172, ["T0", "T1"], queues=2)
    return [g.one(topic="T1", queueId=0), g.one(topic="T0", queueId=0, properties=REQUEST),
            g.one(topic="T1", queueId=1), g.one(topic="T0", queueId=0, properties=REQUEST),
            g.one(topic="T1", queueId=1), g.one(topic="T0", queueId=0, properties=REQUEST)]


def reput_again_scenarios(line: str = LINE) -> list[dict]:
    """``-small`` and ``-small-clean`` (module docstring)."""
    import base64
    zeros = base64.b64encode(bytes(CQ_SIZE)).decode()
    small = {"name": f"{line}-light-empty-reput-small", "messages": _messages(),
             "config": {"mappedFileSizeCommitLog": str(32 * 1024), "maxHashSlotNum": "101", "maxIndexNum": "400",
                        "mappedFileSizeConsumeQueue": str(CQ_SIZE), "enableLmq": "false",
                        "enableMultiDispatch": "true"},
             "keepQueues": True, "abort": True, "damageMessage": DAMAGED,
             "plantFiles": {f"consumequeue/{q}/{SECOND}": zeros for q in ("T0/0", "%LMQ%a/0")}}
    clean = {k: v for k, v in small.items() if k != "abort"}
    planted = next(sc for sc in reopen.reopen_scenarios(line) if sc["name"].endswith("-planted"))
    return [small, {**clean, "name": f"{small['name']}-clean"},
            {**planted, "name": f"{planted['name']}-crash", "abort": True}]


SCENARIOS = {LINE: bh.bounded(reput_again_scenarios(), full_only=("-planted-crash",))}
CASES = [pytest.param(sc["name"], id=sc["name"]) for sc in SCENARIOS[LINE] if "-small" in sc["name"]]
PLANTED_CASES = bh.params_or_skip([pytest.param(sc["name"], id=sc["name"]) for sc in SCENARIOS[LINE]
                                   if sc["name"].endswith("-planted-crash")],
                                  "PIPELINES_FULL_SUITE=1 writes this store")
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "4.9.8 store(s) whose own queues' max lies before a walked empty-name record",
                   threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker's restart found it (``before/``) and left it (``expected/``), with our ``verify``
    of ``before/``."""
    return bh.restart_run(request, _RUNS, STORES)


def _puts(d: Path) -> list[int]:
    """The records' offsets, walking the commitlog's first file by their totalSize."""
    data = (d / "before" / "commitlog" / FIRST).read_bytes()
    at, puts = 0, []
    while at + 8 <= len(data) and int.from_bytes(data[at + 4:at + 8], "big") == 0xDAA320A7:
        puts.append(at)
        at += int.from_bytes(data[at:at + 4], "big")
    return puts


@pytest.mark.parametrize("name", CASES)
def test_the_reput_starts_past_the_walked_empty_name_records(written, name):
    """What the broker wrote: it truncated at D; after the load T0/0 and %LMQ%a/0 have max physical offset 0, T1/1
    R's offset (the own queues' max: R, a record the walk dispatched), topic "" queue 0 R's end (D), and topic "0"
    queues 0 and 40 (no file) D (``-clean``: no topic "" queue, ``recoverNormally`` dispatching nothing); after the
    reput nothing more: topic "" queue 0's files are the bytes it found (R0 and R at 0 and 1, N at 2), T0/0's and
    %LMQ%a/0's second file still zeros."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    puts = _puts(d)
    m0, r0, p1, r, dmg, n = puts[:6] if len(puts) >= 6 else (puts + [None] * 6)[:6]
    assert w.get("damagedRecord") == dmg and w["truncateDirtyLogicFilesAt"] == dmg, (w.get("damagedRecord"), puts)
    loaded = w["queuesAfterLoad"]
    got = {q: (s["files"], s["maxPhysicOffset"]) for q, s in loaded.items() if not q.startswith("SCHEDULE_TOPIC")}
    walked = {"/0": ([FIRST], dmg)} if written["scenario"].get("abort") else {}   # recoverNormally: no dispatch
    assert got == {"T1/0": ([FIRST], r0), "T0/0": ([FIRST, SECOND], 0), "%LMQ%a/0": ([FIRST, SECOND], 0),
                   "T1/1": ([FIRST], r), "0/0": ([], dmg), "0/40": ([], dmg), **walked}, got
    assert {q: s["maxPhysicOffset"] for q, s in w["queuesAfterDispatch"].items() if q in got} == \
        {q: mx for q, (_f, mx) in got.items()}, w["queuesAfterDispatch"]
    before, after = d / "before" / "consumequeue" / "0", d / "expected" / "consumequeue" / "0"
    assert _units(before / FIRST) == {0: r0, 1: r} and _units(before / SECOND) == {0: n}
    for f in (FIRST, SECOND):
        bh.same_bytes((before / f).read_bytes(), (after / f).read_bytes(), f"consumequeue/0/{f} after the start")
    for q in ("T0/0", "%LMQ%a/0"):   # the reput from D put nothing to them: their second file still zeros
        cq = d / "expected" / "consumequeue" / q
        assert _units(cq / FIRST) == {0: r0, 1: r} and not (cq / SECOND).read_bytes().strip(b"\0"), q


@pytest.mark.parametrize("name", CASES)
def test_verify_predicts_topic_empty_with_the_reput_from_the_whole_table(written, name):
    """``verify`` of ``before/``: topic "" queue 0 as the broker's files give it (2 units put, none lost, 0 files
    differing), one note line reopening it, none saying it is not predicted."""
    d = Path(written["scenario"]["dir"])
    truth, changed = broker_topic_empty(d, written["written"])
    walked = bool(written["scenario"].get("abort"))
    assert truth == {0: (2 if walked else 0, 0)} and changed == 0, (truth, changed)
    v = written["verify"]
    assert v["report"] is not None and v["code"] in (0, 1), v["stderr"]
    restart = v["report"]["restart"]
    ours = {int(q["queue"][1:]): (q["units_dispatched_again"], q["units_lost"]) for q in restart["queues"]
            if q["queue"].startswith("/")}
    notes = [n for n in restart["notes"] if n.startswith('topic "" queues')]
    assert ours == {q: t for q, t in truth.items() if t != (0, 0)}, (restart["queues"], notes)
    assert len(notes) == 1 and "not predicted" not in notes[0] and (
        "reopens queue(s) 0 " in notes[0] and "0 file(s) then differing" in notes[0] if walked
        else "dispatches no such record: they stay byte for byte" in notes[0]), notes
    assert restart["reput_from"] == _puts(d)[DAMAGED], restart["reput_from"]   # the table's max: D
    assert not [q for q in restart["queues"] if q["units_dispatched_again"] and not q["queue"].startswith("/")], \
        restart["queues"]   # the reput from D puts nothing into the own queues (T0/0's file 40 stays zeros)


@pytest.mark.parametrize("name", PLANTED_CASES)
def test_as_restart_after_a_crash_walk_over_planted_files(written, name):
    """``-planted-crash`` (``PIPELINES_FULL_SUITE=1``): tests/test_light_empty_reopen_broker.py's 4.9.8 ``-planted``
    store (the queue folders deleted, topic "" files planted) after a crash: the walk dispatches the first two
    requests' records onto the planted files and the reput starts past them (the walk's queues the whole table, the
    load's file-less topic "0" and "1" queues untruncated); what the broker wrote (the ``-planted`` checks), then our
    ``rebuild --as-restart``: every consume queue and index file the broker's, byte for byte."""
    assert (Path(written["scenario"]["dir"]) / "before" / "abort").is_file()
    reopen.test_as_restart_writes_the_start_s_units_over_planted_files(written, name)

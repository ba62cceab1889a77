"""A broker start over topic ""'s consume queue files (``consumequeue/<queueId>/<file>``: the units of a multi-dispatch
request naming an empty queue, ``ConsumeQueue.multiDispatchLmqQueue``; the store of
tests/test_rocksdb_light_empty_broker.py's ``-light-empty-files`` scenario), restarted by the 5.5.1 broker with the
queues its puts wrote kept (``keepQueues``): ``-cut``, the record of the third request damaged (``damageMessage``),
so that the recovery cuts the commitlog before it and the units of two topic "" requests point past the log's end;
``-crash``, an abort file and the last units of T0/0, T0/1, T1/1 and every unit of x/0 zeroed (``zeroQueueTail``), so
that ``CommitLog.recoverAbnormally``'s walk dispatches records again, the empty-name ones among them; ``-kept``
(``PIPELINES_FULL_SUITE=1``), nothing damaged, a clean start.

``ConsumeQueueStore.loadConsumeQueues`` reads ``consumequeue/<queueId>/`` as topic "<queueId>" and each file name
there as its queue id, so topic "" is not loaded: what the broker wrote first (its topic "" files as the start found
them, untouched; the own queues cut), then what ``verify`` says of the start: per topic "" queue the units its
recovery's dispatch puts again and the units on disk it overwrites (:mod:`pipelines.verify.topic_empty`), as the
broker's own files show them, and one note line, no queue of topic "<queueId>" in the prediction, the topic "" files
compared as files (no queue "0/..." or "1/..." counted).  A start dispatching only the later ones, and
``--as-restart`` over such files: tests/test_light_empty_reopen_broker.py.
"""
from __future__ import annotations

from pathlib import Path

import broker_harness as bh
import pytest
from test_light_empty_reopen_broker import broker_topic_empty
from test_rocksdb_light_empty_broker import _file_units, empty_name_scenarios

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"


def restart_scenarios(line: str) -> list[dict]:
    """``-cut``, ``-kept`` and ``-crash`` (module docstring) of broker line ``line``."""
    files = next(sc for sc in empty_name_scenarios(line) if sc["name"].endswith("-files"))
    # puts: message 0, then (plain, request) pairs, then a last plain one: put 6 is the third request's record
    return [{**files, "name": f"{files['name']}-cut", "keepQueues": True, "damageMessage": 6},
            {**files, "name": f"{files['name']}-kept", "keepQueues": True, "keepBefore": True},
            {**files, "name": f"{files['name']}-crash", "keepQueues": True, "abort": True,
             "zeroQueueTail": [{"path": f"consumequeue/{q}", "units": n, "unitSize": 20}
                               for q, n in (("T0/0", 1), ("T0/1", 1), ("T1/1", 1), ("x/0", 7))]}]


SCENARIOS = {LINE: bh.bounded(restart_scenarios(LINE), full_only=("-kept",))}
CASES = [pytest.param(sc["name"], id=sc["name"]) for sc in SCENARIOS[LINE]]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "file queue store(s) with topic \"\" files, restarted", threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker's restart found it (``before/``) and left it (``expected/``), with our ``verify``
    of ``before/`` (every scenario once)."""
    bh.written_once(request, _RUNS, STORES, every=True, then=lambda r: r.update(verify=bh.verify_json(
        Path(r["scenario"]["dir"]) / "before", Path(r["scenario"]["dir"]) / "broker.conf",
        bh.BROKER_VERSION_ARG[r["line"]])))
    return _RUNS[request.node.callspec.params["name"]]


@pytest.mark.parametrize("name", CASES)
def test_the_start_leaves_topic_empty_files_as_it_found_them(written, name):
    """What the broker wrote: after ``load()`` (its queue table, ``queuesAfterLoad``) it holds a queue of topic "0" and
    one of topic "1", each queue 0 (the file name ``00000000000000000000`` read as a queue id), empty, and no queue of
    topic "" (on ``-crash`` its walk, which ran before, dispatched every empty-name record again: topic "" queues 0
    and 1 opened over the existing files, 6 and 2 units written; none otherwise, after the reput too); on ``-cut``
    the recovery cut the own queues at the damaged record (T0/0, whose first unit lies past it, loses its file) and
    leaves topic ""'s alone; after the start topic ""'s files (``consumequeue/0/``, ``consumequeue/1/``, two units
    each, on ``-cut`` one of each past the cut) are the bytes it found (on ``-crash`` written again with the same
    units at the same places, ``fillPreBlank``'s blanks over blanks), and no folder of a topic "<queueId>" queue was
    created there."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    loaded = w["queuesAfterLoad"]
    # -crash: the recovery walk dispatched every empty-name record again, opening topic "" over the existing files
    reopened = {"/0": (["00000000000000000000"], 120), "/1": (["00000000000000000000"], 40)} \
        if name.endswith("-crash") else {}
    assert {q: (s["files"], s["maxOffset"]) for q, s in loaded.items() if q.split("/")[0] in ("", "0", "1")} == {
        "0/0": ([], 0), "1/0": ([], 0), **reopened}, sorted(loaded)
    assert sorted(q for q in w["queuesAfterDispatch"] if q.startswith("/")) == sorted(reopened), \
        sorted(w["queuesAfterDispatch"])
    before, after = d / "before" / "consumequeue", d / "expected" / "consumequeue"
    own = _file_units(before / "T0" / "1" / "00000000000000000000")   # message 0, the damaged record, a later one
    cut = sorted(own.values())[1]
    for qid in (0, 1):
        found = sorted(p.name for p in (before / str(qid)).iterdir())
        units = _file_units(before / str(qid) / found[0])
        assert found == ["00000000000000000000"] and len(units) == 2 and max(units.values()) >= cut, units
        assert sorted(p.name for p in (after / str(qid)).iterdir()) == found, sorted((after / str(qid)).iterdir())
        bh.same_bytes((before / str(qid) / found[0]).read_bytes(), (after / str(qid) / found[0]).read_bytes(),
                      f"consumequeue/{qid}/{found[0]} after the start")
    if name.endswith("-cut"):
        assert loaded["T0/0"]["files"] == [] and loaded["T0/1"]["maxOffset"] == 20, (loaded["T0/0"], loaded["T0/1"])
    elif name.endswith("-kept"):
        assert loaded["T0/1"]["maxOffset"] == 60, loaded["T0/1"]


@pytest.mark.parametrize("name", CASES)
def test_verify_predicts_topic_empty_as_the_broker_s_start_left_it(written, name):
    """``verify`` of the store as the start found it: per topic "" queue the units the recovery's dispatch puts again
    and the units on disk it overwrites, as the broker's files before and after the start give them (``-crash``: two
    units of each queue put again, the same bytes; else none: no queue listed), one note line naming queues 0 and 1
    and how many of their files then differ (none), no queue of a topic "0" or "1", and the topic "" files compared
    as the two files they are (none of them counted in a queue of topic "<queueId>")."""
    d = Path(written["scenario"]["dir"])
    truth, changed = broker_topic_empty(d, written["written"])
    assert truth == ({0: (2, 0), 1: (2, 0)} if name.endswith("-crash") else {0: (0, 0), 1: (0, 0)}) \
        and changed == 0, (truth, changed)
    v = written["verify"]
    assert v["report"] is not None and v["code"] in (0, 1), v["stderr"]
    report = v["report"]
    restart = report["restart"]
    assert restart is not None, report["restart_note"]
    ours = {int(q["queue"][1:]): (q["units_dispatched_again"], q["units_lost"]) for q in restart["queues"]
            if q["queue"].startswith("/")}
    assert ours == {q: t for q, t in truth.items() if t != (0, 0)}, restart["queues"]
    notes = [n for n in restart["notes"] if n.startswith('topic "" queues')]
    assert len(notes) == 1 and notes[0].startswith('topic "" queues 0, 1 ') and "not predicted" not in notes[0] \
        and ("0 file(s) then differing" if name.endswith("-crash") else "stay byte for byte") in notes[0], notes
    assert not [q["queue"] for q in restart["queues"] if q["queue"].split("/")[0] in ("0", "1")], restart["queues"]
    c = report["counts"]["consume_queue"]
    cq = d / "before" / "consumequeue"
    assert sum(c.values()) == sum(1 for p in cq.rglob("*") if p.is_file()), c
    odd = [r["path"] for r in report["consume_queue"] if r["path"].split("/")[0] in ("0", "1")]
    assert all(len(p.split("/")) == 2 for p in odd), odd

"""Multi-dispatch requests naming an empty queue (``INNER_MULTI_DISPATCH`` ``",%LMQ%a"``, file consume queues,
``enableMultiDispatch=true``) on a DLedger commitlog (``enableDLegerCommitLog=true``), across a clean 5.5.1 restart
with ``recheckReputOffsetFromCq=true`` (5.3.3's too with ``PIPELINES_FULL_SUITE=1``: the same files and figures),
checked against the broker.

The store: 30 plain messages, then tests/test_rocksdb_light_empty_broker.py's :data:`REQUESTS` (each after a plain
one; the client's ``INNER_MULTI_QUEUE_OFFSET`` stands: ``DLedgerCommitLog`` assigns none), then 30 plain ones, over
64 KiB data files (:func:`broker_dledger_scenarios.config`).  ``ConsumeQueue.multiDispatchLmqQueue`` puts each
empty name's unit into topic "" under the record's queue id (``consumequeue/<queueId>/``).

* ``-restart``: the queues (and ``index/``) deleted before the restart: the queue table starts empty, so the reput
  dispatches every record from the log's min offset, each empty-name record to a topic "" queue created afresh.
  ``rebuild --as-restart`` of ``before/`` writes the broker's ``consumequeue/`` and ``index/`` byte for byte
  (:func:`store_format.empty_topic_restart.as_restart_over_dledger_checked`).
* ``-restart-kept``: the queues kept: every record was dispatched, so the reput starts at the log's end and puts
  nothing; topic "" (not loaded, not cut) stays byte for byte, as ``verify`` of ``before/`` predicts
  (:func:`store_format.empty_topic_restart.dledger_start_checked`).  ``--as-restart`` over that store (topic ""
  files held) writes the broker's topic "" files.

Each test first asserts what the broker wrote, then our tool's output.
"""
from __future__ import annotations

from pathlib import Path

import broker_dledger_scenarios as dl
import broker_harness as bh
import pytest
from broker_layout_scenarios import Messages
from test_light_empty_reopen_broker import _units
from test_rocksdb_light_empty_broker import EMPTY_UNITS, REQUESTS

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

LINE = "5.5.1"
PLAIN = 30   # plain messages before the requests (and after them)


def _messages() -> list[dict]:
    g = Messages(188, ["T0", "T1"], queues=2)
    out = [g.one() for _ in range(PLAIN)]
    for n, o, q in REQUESTS:
        out.append(g.one())
        out.append(g.one(queueId=q, properties={"INNER_MULTI_DISPATCH": n, "INNER_MULTI_QUEUE_OFFSET": o}))
    return out + [g.one() for _ in range(PLAIN)]


def scenarios(line: str = LINE) -> list[dict]:
    """``-restart`` and ``-restart-kept`` (module docstring)."""
    base = {"config": {**dl.config(line), "enableMultiDispatch": "true", "enableLmq": "false"},
            "messages": _messages(), "keepBefore": True}
    name = f"{line}-dledger-light-empty"
    return [{**base, "name": f"{name}-restart"}, {**base, "keepQueues": True, "name": f"{name}-restart-kept"}]


SCENARIOS = {LINE: scenarios(), "5.3.3": bh.bounded(scenarios("5.3.3"), full_only=("-restart", "-restart-kept"))}
CASES = [pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs]
DELETED = [c for c in CASES if not c.values[0].endswith("-kept")]
KEPT = [c for c in CASES if c.values[0].endswith("-kept")]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "5.x DLedger store(s) with requests naming an empty queue", threads=1)


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker's restart found it (``before/``) and left it (``expected/``), with our ``verify``
    (queues kept) or ``rebuild --as-restart`` (queues deleted) of ``before/``."""
    return bh.restart_run(request, _RUNS, STORES)


def _requests_at(d: Path) -> list[int]:
    """The requests' records' offsets: every own unit the broker's restart wrote (T0, T1), in commitlog order, is one
    put, in put order."""
    puts = sorted(at for q in ("T0", "T1") for f in (d / "expected" / "consumequeue" / q).rglob("*") if f.is_file()
                  for at in _units(f).values())
    assert len(puts) == 2 * PLAIN + 2 * len(REQUESTS), len(puts)
    return puts[PLAIN + 1:PLAIN + 2 * len(REQUESTS):2]


def _topic_empty(root: Path) -> dict[str, bytes]:
    """Topic ""'s files under ``root/consumequeue`` (``<queueId>/<file>``)."""
    cq = root / "consumequeue"
    return {f"{q.name}/{f.name}": f.read_bytes() for q in cq.iterdir() if q.name.isdigit() for f in q.iterdir()}


def _broker_topic_empty_units(d: Path) -> dict[int, dict[int, int]]:
    """Per topic "" queue id, the broker's units after the restart: logical slot -> commitlog offset."""
    out: dict[int, dict[int, int]] = {}
    for rel in _topic_empty(d / "expected"):
        qid, name = rel.split("/")
        for slot, at in _units(d / "expected" / "consumequeue" / rel).items():
            out.setdefault(int(qid), {})[int(name) // 20 + slot] = at
    return out


@pytest.mark.parametrize("name", CASES)
def test_the_broker_puts_the_empty_names_under_topic_empty(written, name):
    """What the broker wrote: a DLedger store (no ``commitlog/``), a clean restart, and topic "" holding a unit for
    each empty name whose offset pairs up, under the record's queue id: the units each request asks for, put by
    a new queue's rule (queue 1's offset 9 appended after its 0, ``putMessagePositionInfo`` only logging the gap;
    queue 0's 4 and 5 after ``fillPreBlank`` units); with the queues kept, ``before/``'s the same bytes and no
    queue changed by the start (nothing dispatched)."""
    d, w = Path(written["scenario"]["dir"]), written["written"]
    assert (d / "before" / "dledger-n0").is_dir() and not (d / "before" / "commitlog").exists()
    assert not (d / "before" / "abort").exists() and w["dledgerCommittedPos"] == w["maxPhyOffset"]
    at = _requests_at(d)
    asked = {(q, o): at[i] for i, us in EMPTY_UNITS.items() for q, o in us}
    assert _broker_topic_empty_units(d) == {0: {4: asked[(0, 4)], 5: asked[(0, 5)]},
                                            1: {0: asked[(1, 0)], 1: asked[(1, 9)]}}, _broker_topic_empty_units(d)
    if written["scenario"].get("keepQueues"):
        assert _topic_empty(d / "before") == _topic_empty(d / "expected")
        assert w["queuesAfterLoad"] == w["queuesAfterDispatch"], "the start's reput dispatched something"
    else:
        assert not (d / "before" / "consumequeue").exists()


@pytest.mark.parametrize("name", DELETED)
def test_as_restart_writes_the_broker_s_topic_empty_files(written, name):
    """``rebuild --as-restart`` of ``before/`` (no queue held): the broker's ``consumequeue/`` (topic "" too) and
    ``index/``, byte for byte."""
    bh.restart_files_are_the_broker_s(written)


@pytest.mark.parametrize("name", KEPT)
def test_verify_predicts_topic_empty_as_held(written, name):
    """``verify`` of ``before/`` (queues kept): a restart predicted whose reput starts at the log's end, topic ""'s
    files said to stay byte for byte (one note line, no reopened queue), no unit dispatched again or lost."""
    v = written["verify"]
    assert v["report"] is not None and v["code"] in (0, 1), v["stderr"]
    p = v["report"]["restart"]
    assert p is not None and p["dledger"], v["report"]["restart_note"]
    assert p["reput_from"] == written["written"]["maxPhyOffset"] == p["commitlog_end"], p["reput_from"]
    notes = [n for n in p["notes"] if n.startswith('topic "" queues')]
    assert len(notes) == 1 and "not predicted" not in notes[0] \
        and "dispatches no such record: they stay byte for byte" in notes[0], notes
    assert not [q for q in p["queues"] if q["queue"].startswith("/")], p["queues"]
    assert (p["units_dispatched_again"], p["units_lost"]) == (0, 0), p


@pytest.mark.parametrize("name", KEPT)
def test_as_restart_over_held_topic_empty_files(written, name, tmp_path):
    """``rebuild --as-restart`` of the kept store's ``before/`` (topic "" files held; the start over deleted queues
    tests/test_light_empty_dledger_held_broker.py checks writes fresh queues over them): exit 0, topic ""'s files
    the broker's (the same puts over the bytes they wrote first)."""
    d, version = Path(written["scenario"]["dir"]), bh.BROKER_VERSION_ARG[written["line"]]
    code, _, err = bh.cli(["rebuild", "--store", str(d / "before"), "--out", str(tmp_path / "ours"), "--as-restart",
                           "--config", str(d / "broker.conf"), "--broker-version", version,
                           "--split-size", "4k", "--no-tables"])
    assert code == 0, err[-2000:]
    assert _topic_empty(d / "expected") and _topic_empty(tmp_path / "ours") == _topic_empty(d / "expected")

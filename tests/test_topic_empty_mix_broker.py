"""Topic "" queue 0 (``consumequeue/0/``) reached by both a blank's empty request of the 5.x concurrent reput
(``ConcurrentReputMessageService``, ``DispatchRequest(0, true)``) and multi-dispatch requests naming an empty queue
(``",%LMQ%a"`` on records of queue 0), checked against the broker's reput alone writing the files (scenarios:
:mod:`broker_topic_empty_mix_scenarios`).  Both reach the one queue ``findConsumeQueue("", 0)`` through
``ConsumeQueue.putMessagePositionInfo``, in reput order: ``-after`` (the empty request first) has its unit (0, 0,
tagsCode) at 0 and the empty-name units from 20 on (the one naming offset 0 appended at 20, the one naming 4 at 40, the
one naming 2 skipped, the one naming 3 at 60); ``-before`` (an empty-name unit first, naming 2) has two
``fillPreBlank`` units, that unit at 40 and the next at 60, and no unit of the empty request (its max physical offset
0 is below the queue's), whose ext unit is still in ``consumequeue_ext/0/``.  ``rebuild`` writes the broker's files
byte for byte (:mod:`store_format.topic_empty_mix`), its messages table lists the empty-name units where the
broker's files hold them, ``verify`` finds the broker's files identical and ``repair`` mends a damaged one.  5.5.1 by
default; ``PIPELINES_FULL_SUITE=1`` adds 5.3.3, ``-before-plain`` and ``-after-ext``.
"""
from __future__ import annotations

import json
from pathlib import Path

import broker_harness as bh
import pytest
from broker_concurrent_runs import files_under, same_files
from broker_topic_empty_mix_scenarios import SCENARIOS

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.spark]

bh.skip_without_tools()

CASES = [pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs]
VERIFY = [pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs
          if sc["name"].endswith("-after")]
TABLES = [pytest.param(sc["name"], id=sc["name"]) for scs in SCENARIOS.values() for sc in scs if "-after" in sc["name"]]
_RUNS: dict[str, dict] = {}
STORES = bh.Stores(SCENARIOS, "concurrent reput store(s) with topic \"\" queue 0 shared", threads=1)
BLANK = (0, 0x7FFFFFFF)
LONG_MIN = -(1 << 63)
# the broker's queue 0 of topic "" per scenario kind: each slot the empty request's unit, a fillPreBlank unit, or
# the unit of the n-th empty-name request (in put order); the files' other slots zeros
LAYOUT = {"after": ["empty", 0, 1, 3], "before": [BLANK, BLANK, 0, 1]}


@pytest.fixture
def written(request) -> dict:
    """The scenario as the broker's reput left it, and our rebuild of its store (every scenario once)."""
    return bh.written_once(request, _RUNS, STORES, then=_rebuild)


def _rebuild(run: dict) -> None:
    """Our rebuild of the scenario's store, with the messages table where the empty request comes first
    (``-after``: the build's seed of topic "" queue 0) and without it elsewhere (the plain build's queue)."""
    d = Path(run["scenario"]["dir"])
    tables = ("--tables", str(d / "tables")) if "-after" in run["scenario"]["name"] else ()
    run["rebuild"] = bh.rebuild(d, bh.BROKER_VERSION_ARG[run["line"]], *tables)


def _units(path: Path) -> list[tuple[int, int, int]]:
    data = path.read_bytes()
    return [(int.from_bytes(data[i:i + 8], "big"), int.from_bytes(data[i + 8:i + 12], "big", signed=True),
             int.from_bytes(data[i + 12:i + 20], "big", signed=True)) for i in range(0, len(data) - 19, 20)]


@pytest.mark.parametrize("name", CASES)
def test_the_broker_s_queue_zero_then_ours_byte_for_byte(written, name):
    """What the broker wrote first: the reput went on past the damaged record to the end; ``consumequeue/0/`` one
    file whose units are :data:`LAYOUT`'s, the empty-name requests' records read from the broker's ``%LMQ%a`` queue
    (the requests name it at 0, 1, 2, ... in put order), the empty request's unit (0, 0, 0 or with ext files its ext
    unit's address, ``Long.MIN_VALUE``) at 0 where it came first; with ext files ``consumequeue_ext/0/`` holds its ext
    unit either way.  Then ``rebuild``: the broker's ``consumequeue/``, ``consumequeue_ext/`` and ``index/`` byte for
    byte."""
    w, d = written["written"], Path(written["scenario"]["dir"])
    kind = name.split("-empty-mix-")[1].split("-")[0]
    ext = "-ext" in name or name.endswith("-before")
    exp = d / "expected"
    assert not w["reputHung"] and w["reputStoodAt"] == w["maxPhyOffset"], w
    records = [u[:2] for u in _units(exp / "consumequeue" / "%LMQ%a" / "0" / f"{0:020d}") if u[1] > 0]
    assert files_under(exp / "consumequeue" / "0") == [f"{0:020d}"]
    held = _units(exp / "consumequeue" / "0" / f"{0:020d}")
    want = [(0, 0) if s == "empty" else s if isinstance(s, tuple) else records[s] for s in LAYOUT[kind]]
    assert [u[:2] for u in held[:len(want)]] == want and not any(map(any, held[len(want):])), held
    if kind == "after":
        assert held[0][2] == (LONG_MIN if ext else 0), held[0]
    assert (exp / "consumequeue_ext" / "0" / f"{0:020d}").is_file() == ext
    if kind == "before":   # the requests' records around the blank the task read: one before, the others after
        assert records[0][0] < w["damagedRecord"] < records[1][0], (records, w)
    else:
        assert w["damagedRecord"] < records[0][0], (records, w)
    r = written["rebuild"]
    assert r["code"] == 0, r["stderr"][-2000:]
    same_files(exp, d / "ours", w["indexNamesUnique"])
    assert files_under(d / "ours" / "consumequeue_ext") == files_under(exp / "consumequeue_ext")
    for rel in files_under(exp / "consumequeue_ext"):
        bh.same_bytes((exp / "consumequeue_ext" / rel).read_bytes(),
                      (d / "ours" / "consumequeue_ext" / rel).read_bytes(), rel)


@pytest.mark.parametrize("name", TABLES)
def test_messages_table_lists_queue_zero_units_where_the_broker_s_file_holds_them(written, name):
    """Where the empty request came first (``-after``), the messages table's light units of name "" (queue 0):
    (queue offset, record) of each empty-name unit in the broker's ``consumequeue/0/``, its slot there after the
    empty request's unit (the build starts that queue from the state that unit leaves), none for the request the put
    rule skipped (listed without a queue offset); the expiry audit lists the broker's ``consumequeue/0/`` file with
    those three units, first and last."""
    from pipelines.tables.runs import snapshot

    d = bh.rebuilt_dir(written)
    held = _units(d / "expected" / "consumequeue" / "0" / f"{0:020d}")
    broker = {(slot, u[0]) for slot, u in enumerate(held) if 0 < u[1] < BLANK[1]}
    listed, unplaced = set(), []
    for r in snapshot(str(d / "tables")).read_arrow("messages").to_pylist():
        for n, q, u in zip(r["lmq_queues"] or [], r["lmq_queue_ids"] or [], r["lmq_consume_queue_offsets"] or []):
            if n == "" and q == 0:
                (listed.add((u, r["commitlog_offset"])) if u is not None else unplaced.append(r["commitlog_offset"]))
    assert len(broker) == 3 and listed == broker, (listed, broker)
    assert len(unplaced) == 1 and unplaced[0] not in {phy for _, phy in broker}, unplaced
    # the expiry audit's file of topic "" queue 0: the broker's file, with the units it holds after the empty
    # request's unit (0, 0) (the rebuild's row counts the units put, not the recover rule's stop at that unit)
    audit = [r for r in snapshot(str(d / "tables")).read_arrow("expiry_audit").to_pylist()
             if r["kind"] == "consume_queue_file" and (r["topic"], r["queue_id"]) == ("", 0)]
    phys = sorted(phy for _, phy in broker)
    assert [(r["messages"], r["min_offset"], r["max_offset"]) for r in audit] == [(3, phys[0], phys[-1])], audit


@pytest.mark.parametrize("name", VERIFY)
def test_verify_and_repair_queue_zero(written, name, tmp_path):
    """``verify`` on the store with the broker's own ``consumequeue/`` and ``index/``: identical (exit 0); with
    ``consumequeue/0/``'s unit at 20 (the first empty-name unit after the empty request's) zeroed, ``repair``'s own
    verify finds that file alone differing, replaces it, and it holds the broker's bytes again."""
    d, version = Path(written["scenario"]["dir"]), bh.BROKER_VERSION_ARG[written["line"]]
    store = bh.broker_store(d, tmp_path / "store")
    conf = ["--config", str(d / "broker.conf"), "--broker-version", version, "--engine", "local",
            "--split-size", "4096"]
    code, out = bh.cli_ok(["verify", "--store", str(store), *conf, "--json"])
    assert code == 0 and json.loads(out)["identical"], out[-3000:]
    damaged = store / "consumequeue" / "0" / f"{0:020d}"
    data = bytearray(damaged.read_bytes())
    assert int.from_bytes(data[20:28], "big") > 0
    data[20:40] = bytes(20)
    damaged.write_bytes(bytes(data))
    code, out = bh.cli_ok(["repair", "--store", str(store), *conf, "--json"])
    report = json.loads(out)
    assert code == 0 and "consume queue files: " in report["verify_summary"] \
        and ", 1 differs;" in report["verify_summary"], report["verify_summary"]
    assert [(a["action"], a["path"], a["done"]) for a in report["plan"]["actions"]] == [
        ("replace", f"consumequeue/0/{0:020d}", True)], report["plan"]
    bh.same_bytes((d / "expected" / "consumequeue" / "0" / f"{0:020d}").read_bytes(), damaged.read_bytes(),
                  "the repaired consumequeue/0/00000000000000000000")
